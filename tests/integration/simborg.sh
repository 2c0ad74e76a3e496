#!/bin/bash
# simborg.sh - BORG on a trace through hybridctl simulate (--borg): the
# phases of BORG-C and BORG-P on a synthetic MSR Cambridge CSV trace made
# here (so the test runs without ../shared/traces), the JSON and text
# figures, and bad options refused with a message that names them.
#
# The trace: three phases of 400 reads of 4 KiB, 1 ms apart. Phases 1 and
# 3 read pattern P1 (40 scattered blocks in one order, ten times), phase 2
# pattern P2 (40 others). With --borg-phases 3 and a BOPT of 80 blocks,
# the cumulative plan before phase 3 holds P1 (trained on phases 1-2) and
# phase 3 reads it from the BOPT; the partial plan (phase 2 only) holds P2,
# and phase 3 runs as without a plan. The plans are carried out and the
# phases served through the daemon's map and read path (sim_borg.h).
. "$(dirname "$0")/lib.sh"

HYBRIDCTL=${HYBRIDCTL:-$(cd "$(dirname "$0")/../.." && pwd)/hybridctl}
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"
command -v jq >/dev/null || hy_skip "jq is missing"

HY_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hybridfs-test.XXXXXX") || hy_die "mktemp failed"
trap 'rm -rf "$HY_TMP"' EXIT

# ---- the synthetic trace -------------------------------------------------------
# MSR CSV: Timestamp (100 ns units), Hostname, DiskNumber, Type, Offset,
# Size, ResponseTime. Block numbers 2,000 apart plus a scramble, so no
# two reads of a pattern are near each other on the disk.
awk 'BEGIN {
	t = 128166385295514663
	for (k = 0; k < 3; k++)
		for (rep = 0; rep < 10; rep++)
			for (i = 0; i < 40; i++) {
				p = (k == 1) ? 40 + i : i
				block = p * 2000 + (p * 7919) % 500
				printf "%.0f,syn,0,Read,%.0f,4096,100\n", t, block * 4096
				t += 10000
			}
}' >"$HY_TMP/pattern.csv"
[ "$(wc -l <"$HY_TMP/pattern.csv")" -eq 1200 ] || hy_die "the synthetic trace was not written"

sim() { "$HYBRIDCTL" simulate "$HY_TMP/pattern.csv" --format msr --policy lru --cache-size 4K "$@"; }

# ---- three phases, both modes --------------------------------------------------
if ! out=$(sim --borg --borg-phases 3 --bopt-size 320K --json 2>"$HY_TMP/err"); then
	hy_fail "simulate --borg --borg-phases 3 failed: $(cat "$HY_TMP/err")"
else
	check() { # JQ-EXPRESSION WHAT
		if [ "$(jq -r "$1" <<<"$out")" != true ]; then
			hy_fail "$2 ($1 is not true)"
		fi
	}
	check '.borg.phases | length == 3' "three phases"
	check '[.borg.phases[].requests] == [400, 400, 400]' "400 requests a phase"
	check '.borg.bopt_blocks == 80' "a BOPT of 80 blocks"
	check '.borg.reads == "split"' "reads split as the daemon's read path splits them"
	check '.borg.phases[0].cumulative.planned_blocks == 0' "no plan in phase 1"
	check '.borg.phases[1].cumulative.planned_blocks == 40 and .borg.phases[1].partial.planned_blocks == 40' \
		"phase 2: P1 planned in both modes"
	check '.borg.phases[1].cumulative.bopt_blocks_read == 0' "phase 2 reads nothing planned"
	check '.borg.phases[1].cumulative.reconfiguration_busy_ms > 0' "phase 2's copy costs time"
	check '.borg.phases[2].cumulative.trained_requests == 800 and .borg.phases[2].partial.trained_requests == 400' \
		"cumulative trains on phases 1-2, partial on phase 2"
	check '.borg.phases[2].cumulative.bopt_blocks_read == 400' "phase 3 reads P1 from the BOPT (cumulative)"
	check '.borg.phases[2].cumulative.reduction > 0.5' "phase 3 is faster with the cumulative plan"
	check '.borg.phases[2].cumulative.busy_ms_planned < .borg.phases[2].busy_ms_vanilla' \
		"busy_ms_planned below busy_ms_vanilla"
	check '.borg.phases[2].partial.bopt_blocks_read == 0' "the partial plan does not hold P1"
	check '(.borg.phases[2].partial.reduction | fabs) < 1e-9' "phase 3 runs as vanilla with the partial plan"
	check '.borg.totals.busy_ms_vanilla == (.borg.phases[1].busy_ms_vanilla + .borg.phases[2].busy_ms_vanilla)' \
		"the totals are phases 2..N"
	check '.borg.totals.cumulative.reconfiguration_busy_ms > 0 and .borg.totals.partial.reconfiguration_busy_ms > 0' \
		"reconfiguration busy time in the totals"
	check '.borg.totals.cumulative.reduction > .borg.totals.partial.reduction' \
		"cumulative beats partial on this trace"
fi

# one mode only: the other is absent
if out=$(sim --borg --borg-phases 3 --borg-mode partial --bopt-size 320K --json 2>"$HY_TMP/err"); then
	[ "$(jq -r '.borg.phases[2] | has("cumulative")' <<<"$out")" = false ] ||
		hy_fail "--borg-mode partial still reports the cumulative mode"
	[ "$(jq -r '.borg.phases[2].partial.planned_blocks' <<<"$out")" = 40 ] ||
		hy_fail "--borg-mode partial: phase 3 did not plan P2 alone"
else
	hy_fail "simulate --borg-mode partial failed: $(cat "$HY_TMP/err")"
fi

# the split: two phases, the second from the split point
if out=$(sim --borg --split 0.75 --json 2>"$HY_TMP/err"); then
	[ "$(jq -r '[.borg.phases[].requests] == [900, 300]' <<<"$out")" = true ] ||
		hy_fail "--split 0.75: phases are not 900 and 300 requests"
else
	hy_fail "simulate --borg --split 0.75 failed: $(cat "$HY_TMP/err")"
fi

# the text form: a row per phase and the totals
if out=$(sim --borg --borg-phases 3 --bopt-size 320K 2>"$HY_TMP/err"); then
	for want in "CUMULATIVE" "PARTIAL" "VANILLA" "RECONF-MS"; do
		case $out in *"$want"*) ;; *) hy_fail "the text output has no \"$want\"" ;; esac
	done
	[ "$(grep -cE '^(1|2|3|2\.\.3) ' <<<"$out")" -eq 4 ] || hy_fail "the text output lacks phase rows: $out"
else
	hy_fail "simulate --borg (text) failed: $(cat "$HY_TMP/err")"
fi

# ---- bad input ---------------------------------------------------------------------
expect_refused() { # EXPECTED-TEXT ARGS...
	local want=$1 out
	shift
	if out=$(sim "$@" 2>&1); then
		hy_fail "simulate $* was accepted"
	else
		case $out in *"$want"*) ;; *) hy_fail "simulate $*: the message does not name \"$want\": $out" ;; esac
	fi
}
expect_refused '--borg-phases "1"' --borg --borg-phases 1
expect_refused '--borg-phases "65"' --borg --borg-phases 65
expect_refused '--borg-phases "three"' --borg --borg-phases three
expect_refused '--borg-phases "-3"' --borg --borg-phases -3
expect_refused '--borg-mode "sideways"' --borg --borg-mode sideways
expect_refused '--borg-planner "random"' --borg --borg-planner random
expect_refused '--borg-reads "half"' --borg --borg-reads half
# the daemon's read path splits a read partly relocated: nothing else is simulated
expect_refused '--borg-reads "whole": split' --borg --borg-reads whole
expect_refused '--split and --borg-phases' --borg --split 0.5 --borg-phases 3
expect_refused '--split and --borg-phases' --borg --borg-phases 3 --split 0.5
expect_refused '--borg-phases needs --borg' --borg-phases 3
expect_refused '--split needs --borg' --split 0.5
expect_refused '--split "1.5"' --borg --split 1.5
expect_refused '--bopt-size "5%,10%"' --borg --bopt-size 5%,10%
expect_refused '--bopt-size "0%"' --borg --bopt-size 0%
printf '128166385295514663,syn,0,Read,4096,4096,100\n128166385295524663,syn,0,Read,8192,4096,100\n' \
	>"$HY_TMP/two.csv"
if out=$("$HYBRIDCTL" simulate "$HY_TMP/two.csv" --policy lru --cache-size 4K --borg --borg-phases 5 2>&1); then
	hy_fail "5 phases of a 2-request trace were accepted"
else
	case $out in *"5 phases of a trace of 2 requests"*) ;; *) hy_fail "5 phases of 2 requests: $out" ;; esac
fi
hy_pass
