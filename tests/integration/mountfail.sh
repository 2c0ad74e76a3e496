#!/bin/bash
# mountfail.sh - a mount that fails removes what it made, and only that
# (issue 16, finding 16): a failed mount left the preallocated BOPT and
# store it had made (257 MiB) in the state folder. Cases:
#   late-new       a new state folder; the mount fails after the default
#                  BOPT is made (cache= names a folder): the state folder
#                  is gone again, as it was
#   bopt-new       the same, failing at the BOPT (bopt= names a folder)
#   late-existing  a state folder an earlier mount made (database, BOPT,
#                  store): a mount that fails late keeps every file, each
#                  as it was
#   named-store    a store made by hybridctl format-cache, named by cache=:
#                  a mount that fails keeps it as it was
. "$(dirname "$0")/lib.sh"
hy_setup
hy_need_iogen
B=$HY_TMP/b
M=$HY_TMP/m
S=$B/.hybridfs
mkdir -p "$B" "$M" "$HY_TMP/adir"
echo data >"$B/f"

# fails CASE OPTIONS: the daemon exits, failing, and leaves no mount
fails() { hy_mount_fails "$1" "$B" "$M" "$2"; }

# listing DIR: each file with its size and checksum
listing() { (cd "$1" 2>/dev/null && find . -type f -printf '%p %s\n' | sort && md5sum bopt cache 2>/dev/null); }

# --- late-new
fails late-new "cache=$HY_TMP/adir"
grep -q "adir" "$HY_TMP/refused.out" || hy_fail "late-new: the failure does not name the folder: $(cat "$HY_TMP/refused.out")"
[ -e "$S" ] && hy_fail "late-new: the failed mount left $S: $(ls -la "$S" | tr '\n' ' ')"
rm -rf "$S"

# --- bopt-new
fails bopt-new "bopt=$HY_TMP/adir"
[ -e "$S" ] && hy_fail "bopt-new: the failed mount left $S: $(ls -la "$S" | tr '\n' ' ')"
rm -rf "$S"

# --- late-existing
hy_mount_ready "$B" "$M" ""
cat "$M/f" >/dev/null
hy_umount "$M"
before=$(listing "$S")
[ -n "$before" ] && [ -f "$S/bopt" ] && [ -f "$S/cache" ] || hy_die "late-existing: the first mount made no BOPT or store"
fails late-existing "cache=$HY_TMP/adir"
after=$(listing "$S")
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
