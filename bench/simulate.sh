#!/bin/bash
# simulate.sh - the simulator on every trace of ../shared/traces (issue 7):
# miss ratios of LRU, LARC, FREQ and LRU3 (the SSD store's own policies) at
# 1%, 5%, 10% and 20% of each trace's footprint, all accesses and reads
# only, by the rule of BASELINES.md, beside that file's LRU (libCacheSim)
# and the best of its nine policies (Belady left out); SSD fills against
# LRU's; and the simulator's speed (block accesses a second).
#
# Usage: bench/simulate.sh [BUILD_DIR] [--traces DIR] [--out FILE]
# Defaults: BUILD_DIR /work/build (else _build), --traces ../shared/traces
# beside the source tree. About a minute.
set -u
set -o pipefail

. "$(dirname "$0")/script.sh"
bench_trace_args "$@"
[ -f "$TRACES/BASELINES.md" ] || die "no BASELINES.md in $TRACES (--traces DIR)"
TMP=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$TMP"' EXIT

# Each table of BASELINES.md: NAME FILE CAP MODE, then per policy row the
# four miss ratios.
awk '
/^### / { name = $2; file = ""; cap = ""; n = 0 }
/^source `traces\// { file = $2; gsub(/`|traces\//, "", file); cap = ($0 ~ /no cap/) ? "none" : "2000000" }
/^all accesses|^reads only/ && file != "" { mode = ($0 ~ /^all/) ? "all" : "reads" }
/^\| [a-z0-9]+ \| [0-9]/ && file != "" {
	split($0, f, "|"); p = f[2]; gsub(/ /, "", p)
	printf "%s %s %s %s %s", name, file, cap, mode, p
	for (i = 3; i <= 6; i++) { split(f[i], m, "/"); gsub(/ /, "", m[1]); printf " %s", m[1] }
	printf "\n"
}' "$TRACES/BASELINES.md" >"$TMP/baselines"

{
	echo "### Miss ratios against BASELINES.md (all policies demand-fill; ours: same rule)"
	echo
	echo "Cell: miss ratio. \"lru (ref)\" is libCacheSim's LRU from BASELINES.md; \"best of 9\""
	echo "is the lowest miss ratio of its nine policies (Belady left out), with its name."
	echo "Fills: SSD fills (misses admitted) relative to our LRU's."
	echo
	echo "| trace | mode | size | lru (ref) | lru | larc | freq | lru3 | best of 9 | fills larc / lru3 |"
	echo "|---|---|---|---:|---:|---:|---:|---:|---|---|"
	awk '{ print $1, $2, $3, $4 }' "$TMP/baselines" | uniq | while read -r name file cap mode; do
		args=(--policy lru,larc,freq,lru3 --cache-size 1%,5%,10%,20% --json)
		[ "$cap" != none ] && args+=(--cap "$cap")
		[ "$mode" = reads ] && args+=(--reads-only)
		out=$("$HYBRIDCTL" simulate "$TRACES/$file" "${args[@]}") || die "simulate $file failed"
		echo "$out" >"$TMP/$name.$mode.json"
		for z in 0 1 2 3; do
			size=$(jq -r ".results[$z].cache_size" <<<"$out")
			row=$(jq -r --argjson z "$z" '
				[.results[] | select(.cache_size == .cache_size)] as $r
				| ($r | map(select(.policy == "lru"))[$z]) as $lru
				| ($r | map(select(.policy == "larc"))[$z]) as $larc
				| ($r | map(select(.policy == "freq"))[$z]) as $freq
				| ($r | map(select(.policy == "lru3"))[$z]) as $lru3
				| "\($lru.miss_ratio) \($larc.miss_ratio) \($freq.miss_ratio) \($lru3.miss_ratio) \($lru.ssd_fills) \($larc.ssd_fills) \($lru3.ssd_fills)"' <<<"$out")
			read -r lru larc freq lru3 flru flarc flru3 <<<"$row"
			ref=$(awk -v n="$name" -v m="$mode" -v c=$((z + 6)) '$1 == n && $4 == m && $5 == "lru" { print $c }' "$TMP/baselines")
			best=$(awk -v n="$name" -v m="$mode" -v c=$((z + 6)) '
				$1 == n && $4 == m && $5 != "belady" && (b == "" || $c < b) { b = $c; p = $5 }
				END { printf "%s %s", p, b }' "$TMP/baselines")
			awk -v t="$name" -v m="$mode" -v s="$size" -v r="$ref" -v a="$lru" -v b="$larc" \
				-v c="$freq" -v d="$lru3" -v best="$best" -v fl="$flru" -v fa="$flarc" -v f3="$flru3" '
				BEGIN {
					printf "| %s | %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %s | %.2f / %.2f |\n",
						t, m, s, r, a, b, c, d, best, (fl ? fa / fl : 0), (fl ? f3 / fl : 0)
				}'
		done
	done
	echo
	speed=$(jq -r '[.results[] | .accesses_per_second] | add / length | floor' "$TMP/arc_P6_full.all.json")
	accesses=$(jq -r '.results[0].accesses' "$TMP/arc_P6_full.all.json")
	echo "Speed: arc_P6 whole ($accesses block accesses, 519,711 requests read from gzip each"
	echo "pass): $speed block accesses a second per replay, on average over the 16 replays."
} | bench_output
