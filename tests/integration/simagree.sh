#!/bin/bash
# simagree.sh - the simulator and the daemon agree (issue 7): a workload of
# O_DIRECT reads and writes on a mount whose cache has no front buffer and
# no ReCA (so nothing depends on a thread's timing), its access log
# exported, and the export replayed by hybridctl simulate through the same
# cache code at the same store size: the same read and write hits.
. "$(dirname "$0")/lib.sh"

hy_need_iogen
hy_setup

B=$HY_TMP/backing M=$HY_TMP/mnt
mkdir -p "$B" "$M"
head -c 4M /dev/zero >"$B/data"
hy_mount_ready "$B" "$M" \
	"state=$HY_TMP/state,cache_size=1M,front_buffer=0,reca=off,cache_write=through,writeback_cache=off"

# 1,500 requests over 1,024 blocks, a hot quarter read most, some writes
RANDOM=7
specs=()
for i in $(seq 1 1500); do
	if [ $((RANDOM % 4)) = 0 ]; then b=$((RANDOM % 1024)); else b=$((RANDOM % 256)); fi
	if [ $((RANDOM % 5)) = 0 ]; then op=w; else op=r; fi
	specs+=("$op:$((b * 4096)):4096")
done
"$IOGEN" agree "$M/data" "${specs[@]}" || hy_fail "the workload failed"

cache=$("$HYBRIDCTL" status "$M" --json | jq -c '.mounts[0].daemon.cache')
lines=$(jq .ssd_lines <<<"$cache")
daemon="$(jq '.read_hits_ssd + .read_hits_dram' <<<"$cache") $(jq '.write_hits_ssd + .write_hits_dram' <<<"$cache")"
"$HYBRIDCTL" trace export "$M" --format csv --output "$HY_TMP/trace.csv" ||
	hy_fail "trace export failed"
hy_umount "$M"

out=$("$HYBRIDCTL" simulate "$HY_TMP/trace.csv" --format hybridfs --policy full-noreca --no-front \
	--cache-size $((lines * 4096)) --json) || hy_fail "simulate failed"
sim="$(jq '.results[0].read_hits' <<<"$out") $(jq '.results[0].write_hits' <<<"$out")"
reqs=$(jq .requests <<<"$out")
hy_log "store of $lines lines; $reqs requests; read and write hits: daemon $daemon, simulator $sim"
[ "$reqs" = 1500 ] || hy_fail "the export holds $reqs requests, not 1500"
[ "$daemon" = "$sim" ] || hy_fail "the daemon's hits ($daemon) and the simulator's ($sim) differ"
case $daemon in "0 "*) hy_fail "no read hit at all: the workload does not exercise the cache" ;; esac
hy_pass
