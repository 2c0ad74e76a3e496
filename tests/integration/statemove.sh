#!/bin/bash
# statemove.sh - the default state folder (issue 19, item 3) is out of the
# tree, one per backing directory, named by its path; the database records
# the directory's identity (inode and birth time). Cases:
#   default   a mount with the defaults keeps its database in the state
#             root's folder named by the escaped path (HYBRIDFS_STATE_ROOT
#             or $XDG_STATE_HOME/hybridfs, lib.sh), nothing of it in the
#             tree but the BOPT's hidden folder
#   moved     the directory renamed: its next mount finds its state again
#             (the same mount id), the folder renamed to the new name
#   replaced  another directory put at the old path: its mount does not
#             take the folder made for the first (a new mount id); that
#             folder is set aside, and found again when the first one is
#             mounted from where it went
. "$(dirname "$0")/lib.sh"
hy_setup
hy_need_iogen
M=$HY_TMP/m
A=$HY_TMP/a
B=$HY_TMP/b
mkdir -p "$A" "$M"
echo data >"$A/f"
opts=writeback_cache=off,cache_size=1M,bopt=none

# --- default
hy_mount_ready "$A" "$M" "$opts"
id_a=$(hy_status "$M" .uuid)
state=$(hy_status "$M" .state_dir)
want=$(hy_state_of "$A")
[ "$state" = "$want" ] || hy_fail "default: state folder $state, want $want"
[ -f "$want/hybridfs.db" ] || hy_fail "default: no database in $want"
hy_umount "$M"
[ -z "$(ls -A "$A" | grep -v '^f$')" ] || hy_fail "default: the tree holds $(ls -A "$A" | tr '\n' ' ')"

# --- moved
mv "$A" "$B"
hy_mount_ready "$B" "$M" "$opts"
[ "$(hy_status "$M" .uuid)" = "$id_a" ] ||
	hy_fail "moved: a new mount id $(hy_status "$M" .uuid), not $id_a: the state was not found again"
[ "$(hy_status "$M" .state_dir)" = "$(hy_state_of "$B")" ] ||
	hy_fail "moved: state folder $(hy_status "$M" .state_dir), want $(hy_state_of "$B")"
hy_umount "$M"
[ -e "$want" ] && hy_fail "moved: the old folder $want is still there"
grep -q "its state follows it" "$HY_TMP/daemon.log" || hy_fail "moved: no notice"

# --- replaced: a new directory at B, the first one moved to A again
mv "$B" "$A"
mkdir -p "$B"
echo other >"$B/g"
hy_mount_ready "$B" "$M" "$opts"
id_new=$(hy_status "$M" .uuid)
[ "$id_new" != "$id_a" ] || hy_fail "replaced: the new directory got the first one's state"
hy_umount "$M"
grep -q "was made for another directory" "$HY_TMP/daemon.log" || hy_fail "replaced: no notice"
ls -d "$(hy_state_of "$B")".moved-* >/dev/null 2>&1 || hy_fail "replaced: nothing set aside"
hy_mount_ready "$A" "$M" "$opts"
[ "$(hy_status "$M" .uuid)" = "$id_a" ] ||
	hy_fail "replaced: the first directory, back at $A, did not find its state set aside"
hy_umount "$M"

hy_pass
