#!/bin/bash
# simborg.sh - BORG on every trace of ../shared/traces (issue 7): the disk
# busy time of the trace served with the plans of BORG's analyzer and
# planner against the same trace without a plan (vanilla), on the HDD
# model, through the daemon's map, reconfiguration and read path
# (sim_borg.h: a read partly relocated is split between home and the
# BOPT, as the daemon reads it), in three set-ups:
#   - train/test: the plan from the first half, the second half served
#     (--split 0.5), with the daemon's greedy planner (the figures before
#     issue 7's phases), and with the chains planner;
#   - phases: the trace cut into N phases (--borg-phases N), BORG-C
#     (cumulative) and BORG-P (partial) side by side, with the chains
#     planner: per phase the busy time vanilla, with each plan, the
#     reduction, the blocks planned and read from the BOPT, and the
#     reconfiguration's copy (its own busy time, apart).
# The BOPT is --bopt of the footprint (10%). Markdown on standard output
# (and --out FILE).
#
# Usage: bench/simborg.sh [BUILD_DIR] [--traces DIR] [--phases N]
#                         [--bopt P%] [--out FILE]
# Defaults: BUILD_DIR /work/build (else _build), --traces ../shared/traces
# beside the source tree, 5 phases (4 reconfigurations, as in BORG's
# evaluation). About ten seconds.
set -u
set -o pipefail

. "$(dirname "$0")/script.sh"
PHASES=5
BOPT=10%
bench_option() {
	case $1 in
	--phases) PHASES=$2 ;;
	--bopt) BOPT=$2 ;;
	*) return 1 ;;
	esac
}
bench_trace_args "$@"
TMP=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$TMP"' EXIT

# The trace files: every file of the folder but its notes.
mapfile -t FILES < <(find "$TRACES" -maxdepth 1 -type f ! -name '*.md' ! -name 'LICENSE*' | sort)
[ "${#FILES[@]}" -gt 0 ] || die "no trace files in $TRACES"

# simulate TRACE ARGS...: the BORG figures as JSON (the cache replay
# --borg comes with is cut to one 4K LRU pass).
borg() {
	local t=$1
	shift
	"$HYBRIDCTL" simulate "$t" --policy lru --cache-size 4K --borg --bopt-size "$BOPT" \
		--json "$@" | jq '.borg'
}

pct() { awk -v x="$1" 'BEGIN { printf "%.1f%%", 100 * x }'; }
secs() { awk -v x="$1" 'BEGIN { printf "%.1f s", x / 1000 }'; }

t0=$(date +%s.%N)
for f in "${FILES[@]}"; do
	n=$(basename "$f")
	borg "$f" --split 0.5 --borg-planner greedy >"$TMP/$n.greedy" ||
		die "simulate $n (greedy) failed"
	borg "$f" --split 0.5 >"$TMP/$n.split" || die "simulate $n (split) failed"
	borg "$f" --borg-phases "$PHASES" >"$TMP/$n.phases" || die "simulate $n (phases) failed"
done
t1=$(date +%s.%N)

{
	echo "#### Train on the first half, serve the second (\`--split 0.5\`), BOPT $BOPT of the footprint"
	echo
	echo "| trace | busy vanilla | greedy | chains | planned (greedy / chains) | from the BOPT (greedy / chains) | reconfiguration (chains) |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	for f in "${FILES[@]}"; do
		n=$(basename "$f")
		g=$TMP/$n.greedy s=$TMP/$n.split
		printf '| %s | %s | %s | %s | %s / %s | %s / %s | %s |\n' "$n" \
			"$(secs "$(jq '.totals.busy_ms_vanilla' "$g")")" \
			"$(pct "$(jq '.totals.cumulative.reduction' "$g")")" \
			"$(pct "$(jq '.totals.cumulative.reduction' "$s")")" \
			"$(jq '.totals.cumulative.planned_blocks' "$g")" \
			"$(jq '.totals.cumulative.planned_blocks' "$s")" \
			"$(jq '.totals.cumulative.bopt_blocks_read' "$g")" \
			"$(jq '.totals.cumulative.bopt_blocks_read' "$s")" \
			"$(secs "$(jq '.totals.cumulative.reconfiguration_busy_ms' "$s")")"
	done
	echo
	echo "#### $PHASES phases, BORG-C and BORG-P (chains planner), totals over phases 2..$PHASES"
	echo
	echo "| trace | busy vanilla | BORG-C | BORG-P | reconfiguration C / P | blocks from the BOPT C / P |"
	echo "|---|---:|---:|---:|---:|---:|"
	for f in "${FILES[@]}"; do
		n=$(basename "$f")
		p=$TMP/$n.phases
		printf '| %s | %s | %s | %s | %s / %s | %s / %s |\n' "$n" \
			"$(secs "$(jq '.totals.busy_ms_vanilla' "$p")")" \
			"$(pct "$(jq '.totals.cumulative.reduction' "$p")")" \
			"$(pct "$(jq '.totals.partial.reduction' "$p")")" \
			"$(secs "$(jq '.totals.cumulative.reconfiguration_busy_ms' "$p")")" \
			"$(secs "$(jq '.totals.partial.reconfiguration_busy_ms' "$p")")" \
			"$(jq '.totals.cumulative.bopt_blocks_read' "$p")" \
			"$(jq '.totals.partial.bopt_blocks_read' "$p")"
	done
	echo
	echo "#### Per phase: vanilla, BORG-C, BORG-P (busy, reduction; planned blocks; blocks from the BOPT; reconfiguration)"
	echo
	echo "| trace | phase | requests | vanilla | BORG-C | BORG-P | planned C / P | from the BOPT C / P | reconfiguration C / P |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for f in "${FILES[@]}"; do
		n=$(basename "$f")
		jq -r --arg n "$n" '.phases[] | [$n, .phase, .requests, .busy_ms_vanilla,
			.cumulative.busy_ms_planned, .cumulative.reduction,
			.partial.busy_ms_planned, .partial.reduction,
			.cumulative.planned_blocks, .partial.planned_blocks,
			.cumulative.bopt_blocks_read, .partial.bopt_blocks_read,
			.cumulative.reconfiguration_busy_ms, .partial.reconfiguration_busy_ms] | @tsv' \
			"$TMP/$n.phases" |
			awk -F'\t' '{
				printf "| %s | %d | %d | %.1f s | %.1f s (%.1f%%) | %.1f s (%.1f%%) | %d / %d | %d / %d | %.1f / %.1f s |\n",
					$1, $2, $3, $4 / 1000, $5 / 1000, 100 * $6, $7 / 1000, 100 * $8,
					$9, $10, $11, $12, $13 / 1000, $14 / 1000
			}'
	done
	echo
	awk -v a="$t0" -v b="$t1" -v n="${#FILES[@]}" 'BEGIN {
		printf "%d traces, 3 runs each, %.1f s in all.\n", n, b - a }'
} | bench_output
