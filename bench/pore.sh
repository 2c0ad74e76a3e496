#!/bin/bash
# pore.sh - PORE on an SMR backend (issue 7), on the traces of
# ../shared/traces that write: SMR write amplification, SMR busy time,
# hit ratio and the dirty blocks written home, without PORE (LRU's and the
# daemon's cache's plain write-back) and with each of its three rules, for
# two engines side by side in one run:
#   replay  the simulator's replay (policy.h's LRU; a dirty line is written
#           when it is evicted, PORE skipping dirty victims of forbidden
#           zones);
#   daemon  the daemon's own cache (--policy full-noreca: front buffer, heat
#           filter, LRU3 store, its write-back cleaner with the code that
#           backend=smr runs, a pass every eighth of the cache written; what
#           is dirty at the end goes home too).
# Scaled from PORE's setup (a 240 GB SSD cache over a 5 TB SMR disk with a
# 20 GB persistent buffer and bands of 17-36 MB, zones of 10-20 MB: the
# cache far larger than the buffer, a zone about a band) to traces of a
# few GB: cache 20% of the footprint, a 16 MiB buffer, bands of 256 KiB on
# a 2 TiB disk, zones of 1 MiB; 10% of the dirty zones open (no more than
# hold a buffer's worth), a division every buffer's worth of writes.
#
# Usage: bench/pore.sh [BUILD_DIR] [--traces DIR] [--out FILE]
# Defaults: BUILD_DIR /work/build (else _build), --traces ../shared/traces
# beside the source tree. A few minutes.
set -u
set -o pipefail

. "$(dirname "$0")/script.sh"
bench_trace_args "$@"

# the traces with writes, and the cap that keeps each run short
TRACE_LIST=(
	"msr_cut_rw20_80_105.trace none"
	"tencent_cbs_sample.csv.gz none"
	"cloudphysics_vscsi_sample.csv.gz none"
	"apress_hadoop_blkparse_50k.txt.gz none"
	"msr_cambridge_hm_sample1000.csv none"
)
MODEL=(--device smr --device-param capacity=2T --device-param buffer_bytes=16M
	--device-param band_bytes=256K)

run() {
	local file=$1 cap=$2 policy=$3 rule=$4 args
	args=(--policy "$policy" --cache-size 20% "${MODEL[@]}" --write-back --json)
	[ "$rule" != off ] && args+=(--pore "$rule" --pore-zone 1M)
	[ "$cap" != none ] && args+=(--cap "$cap")
	"$HYBRIDCTL" simulate "$TRACES/$file" "${args[@]}" || die "simulate $file $policy $rule failed"
}

{
	echo "### PORE on an SMR backend (bench/pore.sh)"
	echo
	echo "Cache 20% of the footprint, write-back; SMR: 2 TiB, 16 MiB buffer, 256 KiB"
	echo "bands; zones 1 MiB, 10% open (at most a buffer's worth of dirty blocks),"
	echo "a division every 4,096 blocks written."
	echo "WA: bytes the SMR writes to its media over bytes written to it."
	echo
	echo "| trace | engine | PORE | hit ratio | SMR WA | SMR busy | dirty blocks home | forced |"
	echo "|---|---|---|---:|---:|---:|---:|---:|"
	for entry in "${TRACE_LIST[@]}"; do
		read -r file cap <<<"$entry"
		[ -f "$TRACES/$file" ] || continue
		for engine in replay daemon; do
			policy=lru
			[ $engine = daemon ] && policy=full-noreca
			for rule in off coverage popularity balance; do
				out=$(run "$file" "$cap" "$policy" "$rule")
				jq -r --arg t "${file%%.*}" --arg e "$engine" --arg r "$rule" '
					.results[0] | "| \($t) | \($e) | \($r) | \(.hit_ratio * 1000 | round / 1000) | \(.backing_write_amplification * 100 | round / 100) | \(.backing_busy_ms / 100 | round / 10) s | \(.dirty_evictions) | \(.forced_evictions) |"' <<<"$out"
			done
		done
	done
} | bench_output
