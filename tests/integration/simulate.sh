#!/bin/bash
# simulate.sh - the simulator against an independent one: for every trace
# in ../shared/traces, hybridctl simulate's LRU must give the miss ratios of
# libCacheSim's LRU in BASELINES.md, to the fourth decimal, at 1%, 5%, 10%
# and 20% of the footprint, for all accesses and for reads only (the
# conversion rule of BASELINES.md: 4 KiB block accesses, cold start, every
# miss admitted, the first 2,000,000 accesses unless the section says "no
# cap"). Also: bad input to simulate is refused with a message.
#
# The traces are not part of the repository: HY_TRACES names their folder
# (default: ../shared/traces beside the source tree, else
# /work/shared/traces); without them only the bad-input checks run.
. "$(dirname "$0")/lib.sh"

HYBRIDCTL=${HYBRIDCTL:-$(cd "$(dirname "$0")/../.." && pwd)/hybridctl}
SRCDIR=${HY_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TRACES=${HY_TRACES:-$SRCDIR/../shared/traces}
# the project's machines keep them in /work/shared beside the checkout
[ -f "$TRACES/BASELINES.md" ] || [ -n "${HY_TRACES:-}" ] || TRACES=/work/shared/traces
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"
command -v jq >/dev/null || hy_skip "jq is missing"

HY_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hybridfs-test.XXXXXX") || hy_die "mktemp failed"
trap 'rm -rf "$HY_TMP"' EXIT

# ---- bad input ---------------------------------------------------------------
printf '0 0 4096 4096 1\n' >"$HY_TMP/one.trace"
expect_refused() { # EXPECTED-TEXT ARGS...
	local want=$1 out
	shift
	if out=$("$HYBRIDCTL" simulate "$@" 2>&1); then
		hy_fail "simulate $* was accepted"
	else
		case $out in *"$want"*) ;; *) hy_fail "simulate $*: the message does not name \"$want\": $out" ;; esac
	fi
}
expect_refused "$HY_TMP/missing" "$HY_TMP/missing"
expect_refused "150%" "$HY_TMP/one.trace" --cache-size 150%
expect_refused "lots" "$HY_TMP/one.trace" --cache-size lots
expect_refused "mru" "$HY_TMP/one.trace" --policy mru
expect_refused "parquet" "$HY_TMP/one.trace" --format parquet
expect_refused "--frobnicate" "$HY_TMP/one.trace" --frobnicate
printf 'this is not a trace\n\x01\x02garbage\n' >"$HY_TMP/junk.trace"
expect_refused "format" "$HY_TMP/junk.trace"

# ---- open loop -----------------------------------------------------------------
# MSR CSV, 100 ns ticks: three 4 KiB reads far apart on the disk at the
# same instant, then one a second later. In open loop the second and third
# wait for those before them, the fourth finds the disk idle; closed loop
# has no waits. --speed 1000 brings the fourth within the others' time.
{
	t=128166385295514663
	for i in 0 1 2; do printf '%s,syn,0,Read,%s,4096,100\n' "$t" $((i * 1073741824)); done
	printf '%s,syn,0,Read,%s,4096,100\n' $((t + 10000000)) $((3 * 1073741824))
} >"$HY_TMP/burst.csv"
sim_loop() { "$HYBRIDCTL" simulate "$HY_TMP/burst.csv" --policy lru --cache-size 4K --device hdd --json "$@"; }
if out=$(sim_loop --open-loop 2>&1); then
	[ "$(jq -r '.results[0].loop' <<<"$out")" = open ] || hy_fail "--open-loop: loop is not open"
	[ "$(jq -r '.results[0].requests_waited' <<<"$out")" = 2 ] ||
		hy_fail "--open-loop: not two requests waited: $(jq -c .results[0] <<<"$out")"
	jq -e '.results[0].response.mean_ms > .results[0].wait_mean_ms and .results[0].wait_mean_ms > 0' \
		<<<"$out" >/dev/null || hy_fail "--open-loop: the waits are not in the responses"
else
	hy_fail "simulate --open-loop failed: $out"
fi
if out=$(sim_loop --open-loop --speed 1000 2>&1); then
	[ "$(jq -r '.results[0].requests_waited' <<<"$out")" = 3 ] ||
		hy_fail "--speed 1000: the fourth request did not wait"
else
	hy_fail "simulate --open-loop --speed 1000 failed: $out"
fi
out=$(sim_loop 2>&1) && [ "$(jq -r '.results[0].loop' <<<"$out")" = closed ] ||
	hy_fail "closed loop by default: $out"
expect_refused "--speed" "$HY_TMP/burst.csv" --device hdd --open-loop --speed 0
expect_refused "--speed needs --open-loop" "$HY_TMP/burst.csv" --device hdd --speed 2
expect_refused "need a --device" "$HY_TMP/burst.csv" --open-loop
expect_refused "not --policy full" "$HY_TMP/burst.csv" --device hdd --open-loop --policy full
printf '100 8 0 1\n' >"$HY_TMP/arc.lis" # ARC: start, blocks, 0, request number
expect_refused "line 1 has no timestamp" "$HY_TMP/arc.lis" --format arc --policy lru \
	--cache-size 4K --device hdd --open-loop

if [ ! -f "$TRACES/BASELINES.md" ]; then
	# not a skip: the bad-input checks ran (CI fails on skipped tests)
	hy_log "no traces at $TRACES (set HY_TRACES): the comparison with BASELINES.md is left out"
	hy_pass
fi

# ---- LRU against BASELINES.md --------------------------------------------------
# Each section: "### NAME", a source line naming the file and the cap, then
# the lru rows of the all-accesses table and of the reads-only table.
awk '
/^### / { name = $2; file = ""; cap = ""; n = 0 }
/^source `traces\// {
	file = $2; gsub(/`|traces\//, "", file)
	cap = ($0 ~ /no cap/) ? "none" : "2000000"
}
/^\| lru \|/ && file != "" {
	n++
	split($0, f, "|")
	printf "%s %s %s %s", name, file, cap, (n == 1 ? "all" : "reads")
	for (i = 3; i <= 6; i++) { split(f[i], m, "/"); gsub(/ /, "", m[1]); printf " %s", m[1] }
	printf "\n"
}' "$TRACES/BASELINES.md" >"$HY_TMP/expected"
[ -s "$HY_TMP/expected" ] || hy_die "no lru rows found in $TRACES/BASELINES.md"

checked=0
while read -r name file cap mode m1 m5 m10 m20; do
	args=(--policy lru --cache-size 1%,5%,10%,20% --json)
	[ "$cap" != none ] && args+=(--cap "$cap")
	[ "$mode" = reads ] && args+=(--reads-only)
	if ! out=$("$HYBRIDCTL" simulate "$TRACES/$file" "${args[@]}" 2>"$HY_TMP/err"); then
		hy_fail "$name ($mode): simulate failed: $(cat "$HY_TMP/err")"
		continue
	fi
	got=$(jq -r '[.results[].miss_ratio | . * 10000 | round / 10000 | tostring] | join(" ")' <<<"$out")
	want=$(awk '{ for (i = 1; i <= NF; i++) printf "%s%.4f", (i > 1 ? " " : ""), $i }' <<<"$m1 $m5 $m10 $m20")
	got=$(awk '{ for (i = 1; i <= NF; i++) printf "%s%.4f", (i > 1 ? " " : ""), $i }' <<<"$got")
	if [ "$got" != "$want" ]; then
		hy_fail "$name ($mode): LRU miss ratios $got, BASELINES.md has $want"
	else
		hy_log "$name ($mode): LRU miss ratios $got, as BASELINES.md"
	fi
	checked=$((checked + 1))
done <"$HY_TMP/expected"
[ "$checked" -ge 16 ] || hy_fail "only $checked trace sections checked"
hy_pass
