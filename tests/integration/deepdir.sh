#!/bin/bash
# deepdir.sh - any user can make a directory chain deeper than a path can
# name; the daemon reaches an inode whose descriptor it gave up from the
# nearest level it still holds, and must not need stack for each level
# between (issue 16, finding 7: a 15,000-deep chain overflowed the stack of
# the recursive hy_inode_pin and killed the daemon). The daemon runs with a
# small open-file limit, so its descriptor cache is small (about 240) and
# the walk down and the siblings' lookups evict the chain's descriptors.
. "$(dirname "$0")/lib.sh"

DEEPDIR=${HY_TESTBIN:-$(cd "$(dirname "$0")" && pwd)}/hy-deepdir
[ -x "$DEEPDIR" ] || hy_die "no hy-deepdir at $DEEPDIR (run make check)"
hy_setup

B=$HY_TMP/b M=$HY_TMP/m DEPTH=20000 SIBLINGS=300
mkdir -p "$B"
"$DEEPDIR" make "$B" $DEPTH $SIBLINGS || hy_die "cannot make the chain"
# the daemon's descriptor cache is about half its limit (this shell and
# hy-deepdir need a few descriptors only)
ulimit -n 512 || hy_die "cannot lower the open-file limit"
hy_mount "$B" "$M" -o "state=$HY_TMP/s"

out=$("$DEEPDIR" probe "$M" $DEPTH $SIBLINGS 2>&1)
rc=$?
[ "$rc" = 0 ] || hy_fail "a lookup at depth $DEPTH answered: $out (status $rc)"
stat "$M/." >/dev/null 2>&1 || hy_fail "the mount no longer answers after the deep lookup"
if hy_exited "$HY_PID"; then
	hy_fail "the daemon died at depth $DEPTH"
else
	hy_umount "$M"
	[ "$HY_DAEMON_STATUS" = 0 ] || hy_fail "the daemon exited with status $HY_DAEMON_STATUS"
fi
rm -rf "$B/deep" || hy_fail "cannot remove the chain"
hy_pass
