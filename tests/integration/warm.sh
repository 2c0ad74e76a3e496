#!/usr/bin/env bash
# warm.sh - BORG's metadata warm-up (issue 18, item 6): the first read
# served from the BOPT after a reorganization, or after a mount with a
# layout, reads the directories that hold relocated files and looks the
# files up, in inode order, once; a read of a file that is not relocated
# starts nothing.
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
b=$HY_TMP/b m=$HY_TMP/m
mkdir -p "$b/one" "$b/two"
for i in 1 2 3; do
	head -c 5000 /dev/urandom >"$b/one/f$i"
	head -c 9000 /dev/urandom >"$b/two/g$i"
done
head -c 5000 /dev/urandom >"$b/cold"
opts="writeback_cache=off,cache=none,state=$HY_TMP/state,bopt_size=8M,reorg_rate=0"
hy_mount_ready "$b" "$m" "$opts"
read_hot() {
	local f
	for f in one/f1 one/f2 one/f3 two/g1 two/g2 two/g3; do
		dd if="$m/$f" of=/dev/null bs=64k iflag=direct status=none || hy_fail "reading $f failed"
	done
}
warm() { hy_status "$m" ".bopt.warm.$1"; }
read_hot
read_hot
# nothing relocated yet: nothing armed
[ "$(warm armed)" = false ] || hy_fail "armed before any layout"
out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 --always 2>&1) || hy_fail "reorganize failed: $out"
[ "$(hy_status "$m" '.bopt.map_files')" = 6 ] ||
	hy_fail "the layout holds $(hy_status "$m" '.bopt.map_files') files, not 6"
[ "$(warm armed)" = true ] || hy_fail "not armed after the reorganization"
# a file that is not relocated starts nothing
dd if="$m/cold" of=/dev/null bs=64k iflag=direct status=none
[ "$(warm runs)" = 0 ] && [ "$(warm armed)" = true ] ||
	hy_fail "a read of a file home started a warm-up"
# the first read from the BOPT: one warm-up, two directories, six files
dd if="$m/two/g2" of=/dev/null bs=64k iflag=direct status=none
hy_wait_status "$m" '.bopt.warm.runs == 1'
[ "$(warm files)" = 6 ] || hy_fail "the warm-up read $(warm files) files, not 6"
[ "$(warm directories)" = 2 ] || hy_fail "the warm-up read $(warm directories) directories, not 2"
[ "$(warm missing)" = 0 ] || hy_fail "$(warm missing) files missing"
"$HYBRIDCTL" status "$m" | grep -q "^warm-up .*1 runs: 2 directories, 6 files" ||
	hy_fail "the status table has no warm-up line: $("$HYBRIDCTL" status "$m" | grep -i warm)"
# ... and only once
read_hot
[ "$(warm runs)" = 1 ] || hy_fail "more reads started $(warm runs) warm-ups"
hy_umount "$m"

# after a remount with the layout: armed, and the first chain read warms
mv "$b/one/f3" "$b/one/f3.moved" # renamed while unmounted: missing, not an error
hy_mount_ready "$b" "$m" "$opts"
[ "$(warm armed)" = true ] || hy_fail "not armed after a mount with a layout"
dd if="$m/one/f1" of=/dev/null bs=64k iflag=direct status=none
hy_wait_status "$m" '.bopt.warm.runs == 1'
[ "$(warm missing)" = 1 ] || hy_fail "the renamed file is not counted missing: $(warm missing)"
hy_umount "$m"
hy_pass
