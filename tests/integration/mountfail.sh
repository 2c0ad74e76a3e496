#!/bin/bash
# mountfail.sh - a mount that fails removes what it made, and only that
# (issue 16, finding 16): a failed mount left the preallocated BOPT and
# store it had made (257 MiB) in the state folder. The default state
# folder is out of the tree (issue 19: HYBRIDFS_STATE_ROOT for root,
# $XDG_STATE_HOME/hybridfs for a user, lib.sh), and the default BOPT in the
# hidden folder BACKING/.hybridfs. Cases:
#   late-new       a new state folder; the mount fails after the default
#                  BOPT is made (cache= names a folder): the state folder,
#                  the folders above it that the mount made, and the BOPT's
#                  hidden folder are gone again, as they were
#   bopt-new       the same, failing at the BOPT (bopt= names a folder)
#   late-existing  a state folder an earlier mount made (database, store)
#                  and its BOPT: a mount that fails late keeps every file,
#                  each as it was
#   named-store    a store made by hybridctl format-cache, named by cache=:
#                  a mount that fails keeps it as it was
. "$(dirname "$0")/lib.sh"
hy_setup
hy_need_iogen
B=$HY_TMP/b
M=$HY_TMP/m
mkdir -p "$B" "$M" "$HY_TMP/adir"
S=$(hy_state_of "$(cd "$B" && pwd -P)")
H=$B/.hybridfs
ROOT=$(dirname "$S")
echo data >"$B/f"

# fails CASE OPTIONS: the daemon exits, failing, and leaves no mount
fails() { hy_mount_fails "$1" "$B" "$M" "$2"; }

# listing DIR: each file with its size and checksum
listing() { (cd "$1" 2>/dev/null && find . -type f -printf '%p %s\n' | sort && md5sum bopt cache 2>/dev/null); }
# the default state folder and the BOPT's
listing2() { listing "$S"; listing "$H"; }

# --- late-new
fails late-new "cache=$HY_TMP/adir"
grep -q "adir" "$HY_TMP/refused.out" || hy_fail "late-new: the failure does not name the folder: $(cat "$HY_TMP/refused.out")"
[ -e "$S" ] && hy_fail "late-new: the failed mount left $S: $(ls -la "$S" | tr '\n' ' ')"
[ -e "$ROOT" ] && hy_fail "late-new: the failed mount left the folder $ROOT it made"
[ -e "$H" ] && hy_fail "late-new: the failed mount left $H: $(ls -la "$H" | tr '\n' ' ')"
rm -rf "$S" "$H"

# --- bopt-new
fails bopt-new "bopt=$HY_TMP/adir"
[ -e "$S" ] && hy_fail "bopt-new: the failed mount left $S: $(ls -la "$S" | tr '\n' ' ')"
[ -e "$H" ] && hy_fail "bopt-new: the failed mount made $H"
rm -rf "$S" "$H"

# --- late-existing
hy_mount_ready "$B" "$M" "cache_size=4M" # the default store: asked for, as the backing disk is the state folder's
cat "$M/f" >/dev/null
hy_umount "$M"
before=$(listing2)
[ -n "$before" ] && [ -f "$H/bopt" ] && [ -f "$S/cache" ] || hy_die "late-existing: the first mount made no BOPT or store"
fails late-existing "cache=$HY_TMP/adir"
after=$(listing2)
[ "$before" = "$after" ] || hy_fail "late-existing: the failed mount changed the state folder: before [$before] after [$after]"

# --- named-store
"$HYBRIDCTL" format-cache "$HY_TMP/store" --size 4M >"$HY_TMP/format.out" 2>&1 ||
	hy_fail "named-store: format-cache failed: $(cat "$HY_TMP/format.out")"
sum=$(md5sum <"$HY_TMP/store")
# the mount fails at the BOPT (bopt= names a folder); the store it was
# given, which was there before, must be left as it was
fails named-store "cache=$HY_TMP/store,bopt=$HY_TMP/adir"
[ -f "$HY_TMP/store" ] || hy_fail "named-store: the failed mount removed the store"
[ "$(md5sum <"$HY_TMP/store")" = "$sum" ] || hy_fail "named-store: the failed mount changed the store"

hy_pass
