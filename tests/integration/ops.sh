#!/bin/sh
# ops.sh - every single-user POSIX operation through the mount behaves as on
# a plain directory, errno included.
#
# hy-optest runs a fixed list of operations inside a directory and prints
# one line per step (result or errno name, plus the attributes that must
# match). It runs once on a plain directory and once inside each mount (with
# and without the kernel's write-back cache); the outputs must be identical.
# Then the tree left in the mount is compared with the plain one, and, after
# unmount, with what the backing directory holds.

. "$(dirname "$0")/lib.sh"

hy_setup
export LC_ALL=C # sort order and messages must not depend on the locale

optest=${HY_TESTBIN:-$(dirname "$0")}/hy-optest
[ -x "$optest" ] || hy_die "no test program at $optest (run make check)"

# hy-optest sets its own umask; the daemon inherits this one, and a run
# must not depend on the caller's.
umask 022

# Bounds a run that hangs (a deadlocked daemon) instead of hanging make
# check; a normal run takes a few seconds.
run_bounded() {
	if command -v timeout >/dev/null; then
		timeout 300 "$@"
	else
		"$@"
	fi
}

# One line per node: type, mode, link count, size (not for directories,
# whose size is their block history), path and symlink target; then the
# checksum of every regular file.
tree_of() {
	(
		cd "$1" || exit 1
		find . \( -type d -printf 'd %m %n - %p\n' \) -o \
			-printf '%y %m %n %s %p -> %l\n' | sort
		find . -type f -exec md5sum {} + | sort -k 2
	)
}

# The reference: the same steps on a plain directory of the same filesystem.
mkdir "$HY_TMP/plain" || hy_die "mkdir plain"
run_bounded "$optest" "$HY_TMP/plain" >"$HY_TMP/plain.out" 2>"$HY_TMP/plain.err" ||
	hy_die "hy-optest failed on the plain directory: $(cat "$HY_TMP/plain.err")"
tree_of "$HY_TMP/plain" >"$HY_TMP/plain.tree" || hy_die "listing the plain tree failed"

# check_mount NAME BACKING MOUNTPOINT [daemon arguments...]: mounts, runs
# the steps in a subdirectory of the mount, compares, unmounts.
check_mount() {
	local name="$1" b="$2" m="$3"
	shift 3
	hy_mount "$b" "$m" "$@"
	mkdir "$m/work" || hy_die "$name: mkdir inside the mount failed"

	if ! run_bounded "$optest" "$m/work" >"$HY_TMP/$name.out" 2>"$HY_TMP/$name.err"; then
		hy_fail "$name: hy-optest did not finish on the mount: $(cat "$HY_TMP/$name.err")"
	fi
	if ! diff -u "$HY_TMP/${REF:-plain}.out" "$HY_TMP/$name.out" >"$HY_TMP/$name.diff"; then
		hy_fail "$name: the mount differs from the plain directory (- plain, + mount):"
		cat "$HY_TMP/$name.diff" >&2
	fi

	# The BOPT's hidden folder lives in the backing root but is not part of
	# the mount (made with a BOPT: on a disk that does not spin there is
	# none, and nothing to hide).
	[ -d "$b/.hybridfs" ] || [ "$("${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}" status "$m" --json |
		jq -r '.mounts[0].daemon.bopt == null')" = true ] ||
		hy_fail "$name: a BOPT, and no hidden folder for it in the backing directory"
	if [ -n "$(find "$m" -mindepth 1 -maxdepth 1 -name .hybridfs)" ]; then
		hy_fail "$name: readdir of the mount root lists .hybridfs"
	fi
	got=$("$optest" --lstat "$m/.hybridfs")
	[ "$got" = "lstat errno=ENOENT" ] ||
		hy_fail "$name: lstat of the hidden state folder gave: $got"

	# O_TMPFILE: works on the plain directory, refused with EOPNOTSUPP
	# (never anything worse) on the mount until libfuse has tmpfile.
	got=$("$optest" --tmpfile "$m/work" | head -n 1)
	[ "$got" = "tmpfile.open errno=EOPNOTSUPP" ] ||
		hy_fail "$name: O_TMPFILE on the mount gave: $got"

	tree_of "$m/work" >"$HY_TMP/$name.tree" || hy_fail "$name: listing the mount failed"
	if ! diff -u "$HY_TMP/plain.tree" "$HY_TMP/$name.tree" >"$HY_TMP/$name.tdiff"; then
		hy_fail "$name: the tree in the mount differs from the plain one (- plain, + mount):"
		cat "$HY_TMP/$name.tdiff" >&2
	fi

	hy_umount "$m"
	[ "${HY_DAEMON_STATUS:-0}" = 0 ] ||
		hy_fail "$name: the daemon exited with status $HY_DAEMON_STATUS:" \
			"$(cat "$HY_TMP/daemon.log")"

	# What the mount showed is what the backing directory holds.
	tree_of "$b/work" >"$HY_TMP/$name.btree" || hy_fail "$name: listing the backing failed"
	if ! diff -u "$HY_TMP/$name.tree" "$HY_TMP/$name.btree" >"$HY_TMP/$name.bdiff"; then
		hy_fail "$name: the backing directory differs from what the mount showed" \
			"(- mount, + backing):"
		cat "$HY_TMP/$name.bdiff" >&2
	fi
}

# With the kernel's write-back cache the kernel answers SEEK_DATA and
# SEEK_HOLE itself (the daemon cannot see pages not yet written back: issue
# 16.17): the whole file is data, its one hole at its end, as
# generic_file_llseek answers for the 3 MiB sk_file. Every other line is
# the plain directory's.
sed -e 's/^seek\.hole_0 .*/seek.hole_0 3145728/' \
	-e 's/^seek\.data_4k .*/seek.data_4k 4096/' \
	-e 's/^seek\.hole_1m .*/seek.hole_1m 3145728/' \
	-e 's/^seek\.data_after_last .*/seek.data_after_last 1052672/' \
	-e 's/^seek\.hole_2m .*/seek.hole_2m 3145728/' \
	-e 's/^seek\.reopen\.hole_0 .*/seek.reopen.hole_0 3145728/' \
	-e 's/^seek\.reopen\.data_4k .*/seek.reopen.data_4k 4096/' \
	"$HY_TMP/plain.out" >"$HY_TMP/plain-kwb.out" || hy_die "making the kwb reference"
cmp -s "$HY_TMP/plain.out" "$HY_TMP/plain-kwb.out" &&
	hy_fail "the plain directory found no holes in sk_file: the kwb reference means nothing"

# The kernel's write-back cache on (the kernel places O_APPEND writes and
# fills partial pages), then the default, write-through, where the daemon
# does both: two different paths for the same steps.
REF=plain-kwb
check_mount kwb "$HY_TMP/b" "$HY_TMP/m" -o writeback_cache=on
REF=plain
check_mount wt "$HY_TMP/wt.b" "$HY_TMP/wt.m"
# the cache in write-back (the default store makes write-through the default)
check_mount cache-back "$HY_TMP/cb.b" "$HY_TMP/cb.m" -o cache_write=back
REF=plain-kwb
check_mount cache-back-kwb "$HY_TMP/cbw.b" "$HY_TMP/cbw.m" -o cache_write=back,writeback_cache=on
REF=plain

# FUSE's atomic create: answered without the kernel's write-back cache,
# refused with it, so that the kernel makes files with MKNOD and OPEN
# (docs/reliability.md, "The kernel's write-back cache"). Either way the
# file is made, with its mode, and O_EXCL holds.
create_path() {
	local name=$1 kwb=$2 want=$3 b=$HY_TMP/$1.b m=$HY_TMP/$1.m creates
	command -v jq >/dev/null || hy_skip "jq is missing"
	hy_mount_ready "$b" "$m" "state=$HY_TMP/$name.state,writeback_cache=$kwb"
	(umask 022 && printf 'made\n' >"$m/new") || hy_fail "$name: creating a file failed"
	[ "$(stat -c %a "$m/new")" = 644 ] || hy_fail "$name: mode $(stat -c %a "$m/new"), not 644"
	(set -o noclobber && : >"$m/new") 2>/dev/null && hy_fail "$name: O_EXCL over an existing file worked"
	creates=$(hy_status "$m" '.operations.create')
	[ "$want" = none ] && [ "$creates" != 0 ] && hy_fail "$name: $creates CREATE requests answered"
	[ "$want" = some ] && [ "$creates" = 0 ] && hy_fail "$name: no CREATE request answered"
	hy_umount "$m"
	[ "$(cat "$b/new")" = made ] || hy_fail "$name: the file at home is not what was written"
}
create_path create-kwb on none
create_path create-plain off some

# Issue 16.4: a test's mounts are in its own registry, never in the
# machine's, where a root `hybridctl reorganize --all` elsewhere would reach
# them. Without lib.sh's private runtime folder this mount shows up there.
hy_mount_ready "$HY_TMP/reg.b" "$HY_TMP/reg.m" "state=$HY_TMP/reg.state"
regm=$(cd "$HY_TMP/reg.m" && pwd -P)
hy_status "$HY_TMP/reg.m" '.pid' | grep -q '^[0-9]' || hy_fail "registry: the test's own registry does not list its mount"
if env -u HYBRIDFS_RUNTIME_DIR "${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}" status --json 2>/dev/null |
	jq -e --arg m "$regm" '[.mounts[]? | .mountpoint] | index($m) != null' >/dev/null; then
	hy_fail "registry: the mount is listed in the machine's shared runtime folder"
fi
hy_umount "$HY_TMP/reg.m"

hy_pass
