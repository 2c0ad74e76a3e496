#!/bin/bash
# ctlbusy.sh - long control requests run off the control loop: while a
# "flush" is held inside the daemon (fault point control.flush with
# stall=, fault.h), "status" and "progress" answer, and a second long
# request ("sync") waits its turn and is answered once the flush is.
# No timing: the test knows the flush is held when its open of the FIFO
# returns, and lets it go by closing the FIFO.
. "$(dirname "$0")/lib.sh"

hy_need_iogen
hy_setup

B=$HY_TMP/backing M=$HY_TMP/mnt F=$HY_TMP/hold
mkdir -p "$B" "$M"
mkfifo "$F"
held=0
# the daemon must never be left waiting on the FIFO: its unmount would
# wait for the held request
release() {
	if [ "$held" = 1 ]; then
		exec 3>&-
		held=0
	fi
}
trap 'rc=$?; release; (exit $rc); hy_cleanup' EXIT

HYBRIDFS_FAULTS="point=control.flush:nth=1:stall=$F" \
	hy_mount_ready "$B" "$M" "state=$HY_TMP/state,cache_size=2M,bopt_size=8M"
echo data >"$M/file"

"$HYBRIDCTL" flush "$M" >"$HY_TMP/flush.out" 2>&1 &
flush=$!
# returns once the flush is inside the daemon, at the point
exec 3>"$F"
held=1

PEER=$HY_TESTBIN/hy-ctlpeer S=$HY_TMP/state
# not holding the FIFO itself: only this shell does
"$PEER" "$S" line '{"v":1,"cmd":"sync"}' >"$HY_TMP/sync.out" 2>&1 3>&- &
sync=$!

# bounded only so that a daemon that does not answer fails the test
# instead of hanging it (hybridctl status waits 5 s itself)
out=$(timeout 60 "$HYBRIDCTL" status "$M" --json 2>&1 3>&-)
pid=$(jq -r '.mounts[0].daemon.pid // empty' <<<"$out" 2>/dev/null)
[ -n "$pid" ] || hy_fail "status did not answer while a flush ran: $out"
out=$(timeout 60 "$PEER" "$S" line '{"v":1,"cmd":"progress"}' 2>&1 3>&-)
jq -e '.ok' <<<"$out" >/dev/null 2>&1 || hy_fail "progress did not answer while a flush ran: $out"
# the flush is held: neither it nor the sync queued behind it can have
# been answered
hy_exited "$flush" && hy_fail "the flush was answered while held: $(cat "$HY_TMP/flush.out")"
hy_exited "$sync" && hy_fail "the sync was answered before the flush: $(cat "$HY_TMP/sync.out")"

release
wait "$flush" || hy_fail "the flush failed once let go: $(cat "$HY_TMP/flush.out")"
wait "$sync" && jq -e '.ok' "$HY_TMP/sync.out" >/dev/null ||
	hy_fail "the sync queued behind the flush failed: $(cat "$HY_TMP/sync.out")"
# the point is passed once; a second flush runs straight through
timeout 60 "$HYBRIDCTL" flush "$M" >/dev/null || hy_fail "a second flush failed"
hy_umount "$M"
hy_pass
