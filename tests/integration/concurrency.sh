#!/bin/bash
# concurrency.sh - eight processes at once on one hybridfs mount: private
# files, disjoint unaligned stripes of one shared file, and creates,
# renames, links and unlinks in a shared folder (hy-concurrent). The
# processes are synchronized only by waiting for them all; then every
# file is checked byte by byte, through the mount and, once unmounted, in
# the backing directory.
. "$(dirname "$0")/lib.sh"

TESTBIN=${HY_TESTBIN:-$(dirname "$0")}
CONCURRENT=$TESTBIN/hy-concurrent
[ -x "$CONCURRENT" ] || hy_die "no $CONCURRENT (run make check)"

hy_setup

# run NAME SEED [daemon arguments...]
run() {
	local name=$1 seed=$2 dir
	shift 2
	dir=$HY_TMP/$name
	mkdir -p "$dir/backing" "$dir/mnt"
	hy_mount "$dir/backing" "$dir/mnt" -o "state=$HY_TMP/state-$name" "$@"
	if ! "$CONCURRENT" --procs 8 --seed "$seed" "$dir/mnt"; then
		hy_fail "$name: seed $seed ($*): wrong data or names on the mount"
		hy_umount "$dir/mnt"
		return
	fi
	hy_umount "$dir/mnt"
	if ! "$CONCURRENT" --procs 8 --seed "$seed" --verify-only "$dir/backing"; then
		hy_fail "$name: seed $seed ($*): wrong data or names in the backing directory"
	fi
	rm -rf "$dir"
}

run writeback 1 -o writeback_cache=on
run writeback2 2 -o writeback_cache=on,cache_write=back
run no-writeback 3 -o cache_write=back
run no-cache 4 -o attr_timeout=0,entry_timeout=0

hy_pass
