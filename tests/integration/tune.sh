#!/bin/bash
# tune.sh - hybridctl tune on a real mount: the mount's log replayed under
# candidate policy tables, store policies and BOPT sizes, rankings printed,
# a remount advised only for a gain of at least --min-gain (2%), --apply
# putting the best table in force (policy get shows it); a mount without a
# cache is refused, named.
. "$(dirname "$0")/lib.sh"

hy_need_iogen
hy_setup

B=$HY_TMP/backing M=$HY_TMP/mnt
mkdir -p "$B" "$M"
head -c 8M /dev/zero >"$B/data"
# emulate=ssd: the BOPT sizes are timed on the mount's own disk model
hy_mount_ready "$B" "$M" "state=$HY_TMP/state,cache_size=2M,writeback_cache=off,bopt_size=8M,emulate=ssd"
RANDOM=3
specs=()
for i in $(seq 1 600); do specs+=("r:$(((RANDOM % 512) * 4096)):4096"); done
"$IOGEN" tuner "$M/data" "${specs[@]}" || hy_fail "the workload failed"

out=$("$HYBRIDCTL" tune "$M" --json) || hy_fail "tune failed: $out"
n=$(jq '.ranking | length' <<<"$out")
reqs=$(jq .requests <<<"$out")
[ "$n" = 6 ] || hy_fail "tune ranked $n candidates: $out"
[ "$reqs" -ge 600 ] || hy_fail "tune replayed $reqs requests"
# the ranking is in order of hit ratio
jq -e '[.ranking[].hit_ratio] | . == (sort | reverse)' <<<"$out" >/dev/null ||
	hy_fail "the ranking is not by hit ratio: $out"
# the store's replacement policies, the mount's marked; the BOPT sizes
# (half to four times the mount's), by busy time over the same second half
jq -e '[.store_policies[].policy] | sort == ["freq", "larc", "lru", "lru3"]' <<<"$out" >/dev/null ||
	hy_fail "not the four store policies: $(jq -c .store_policies <<<"$out")"
jq -e '[.store_policies[] | select(.current)] | length == 1 and .[0].policy == "lru3"' \
	<<<"$out" >/dev/null || hy_fail "the mount's store policy is not marked"
jq -e '[.store_policies[].hit_ratio] | . == (sort | reverse)' <<<"$out" >/dev/null ||
	hy_fail "the store policies are not ranked by hit ratio"
jq -e '.bopt_sizes | length == 4 and ([.[] | select(.current)] | length == 1)' <<<"$out" \
	>/dev/null || hy_fail "not four BOPT sizes with the mount's: $(jq -c .bopt_sizes <<<"$out")"
[ "$(jq -r .bopt_device <<<"$out")" = ssd ] || hy_fail "the BOPT sizes were not timed on emulate=ssd"
jq -e '[.bopt_sizes[].busy_ms_planned] | . == sort' <<<"$out" >/dev/null ||
	hy_fail "the BOPT sizes are not ranked by busy time"
jq -e '[.bopt_sizes[].busy_ms_vanilla] | unique | length == 1' <<<"$out" >/dev/null ||
	hy_fail "the BOPT sizes were not timed over the same requests"
jq -e '.recommended_options.cache_policy == .store_policies[0].policy and
	(.recommended_options.bopt_size | test("^[0-9]+M$"))' <<<"$out" >/dev/null ||
	hy_fail "no recommended options: $(jq -c .recommended_options <<<"$out")"
# a remount is advised only for a gain of at least --min-gain (2% by
# default) over the mount's own figure: the store policy's hit ratio, the
# BOPT size's busy time, each as a share of the mount's
jq -e '.remount.min_gain == 0.02 and
	([.store_policies[] | select(.current)][0].hit_ratio as $mine |
	 .store_policies[0].hit_ratio as $best |
	 (if $mine > 0 then ($best - $mine) / $mine else (if $best > 0 then 1 else 0 end) end) as $g |
	 (.remount.cache_policy_gain - $g | fabs) < 1e-9 and
	 ((.remount.options // "" | test("cache_policy=")) ==
	  ((.store_policies[0].current | not) and $g >= 0.02 and $g > 0))) and
	([.bopt_sizes[] | select(.current)][0].busy_ms_planned as $mine |
	 .bopt_sizes[0].busy_ms_planned as $best |
	 (if $mine > 0 and $best < $mine then ($mine - $best) / $mine else 0 end) as $g |
	 (.remount.bopt_size_gain - $g | fabs) < 1e-9 and
	 ((.remount.options // "" | test("bopt_size=")) ==
	  ((.bopt_sizes[0].current | not) and $g >= 0.02 and $g > 0))) and
	.remount.advised == (.remount.options != null)' <<<"$out" >/dev/null ||
	hy_fail "the remount advice does not follow the 2% rule: $(jq -c '{remount, store_policies, bopt_sizes}' <<<"$out")"
# above any gain: nothing advised, in JSON and in text; at 0 every better
# option is
out2=$("$HYBRIDCTL" tune "$M" --json --min-gain=1000) || hy_fail "tune --min-gain=1000 failed"
jq -e '.remount.advised == false and .remount.options == null and .remount.min_gain == 10' \
	<<<"$out2" >/dev/null || hy_fail "--min-gain 1000 advised: $(jq -c .remount <<<"$out2")"
txt=$("$HYBRIDCTL" tune "$M" --min-gain 1000) || hy_fail "tune --min-gain 1000 failed"
grep -q "^remount with" <<<"$txt" && hy_fail "--min-gain 1000 advised a remount: $txt"
out2=$("$HYBRIDCTL" tune "$M" --json --min-gain 0) || hy_fail "tune --min-gain 0 failed"
jq -e '.remount.advised == ((.remount.cache_policy_gain > 0 and (.store_policies[0].current | not)) or
	(.remount.bopt_size_gain > 0 and (.bopt_sizes[0].current | not)))' <<<"$out2" >/dev/null ||
	hy_fail "--min-gain 0: $(jq -c .remount <<<"$out2")"
best=$(jq -r '.ranking[0].candidate' <<<"$out")
"$HYBRIDCTL" tune "$M" --apply >"$HY_TMP/apply.out" || hy_fail "tune --apply failed"
grep -q "is in force now" "$HY_TMP/apply.out" || hy_fail "tune --apply said: $(cat "$HY_TMP/apply.out")"
case $best in
"lines 64K") want=64K ;;
"lines 16K") want=16K ;;
"lines 4K") want=4K ;;
*) want="" ;;
esac
if [ -n "$want" ]; then
	got=$("$HYBRIDCTL" policy get "$M" random-consumer.line_size)
	[ "$got" = "random-consumer.line_size=$want" ] || hy_fail "after --apply ($best): $got"
fi
hy_umount "$M"

# no cache: refused, named
hy_mount_ready "$B" "$M" "state=$HY_TMP/state2,cache=none"
if out=$("$HYBRIDCTL" tune "$M" 2>&1); then
	hy_fail "tune on a mount without a cache succeeded: $out"
else
	case $out in *"no cache"*) ;; *) hy_fail "tune without a cache said: $out" ;; esac
fi
hy_umount "$M"

# the threshold on a gain there is: a BOPT of 4M cannot hold the ~1400
# blocks read twice over a 32M file, one of 8M can (on the default 7,200
# rpm model): tune finds bopt_size=8M better by some gain G; a remount is
# advised at --min-gain below G, not above it
head -c 32M /dev/zero >"$B/big"
hy_mount_ready "$B" "$M" "state=$HY_TMP/state3,cache_size=2M,writeback_cache=off,bopt_size=4M"
RANDOM=5
offs=()
for i in $(seq 1 1500); do offs+=($(((RANDOM * 32768 + RANDOM) % 8192))); done
specs=()
for _ in 1 2; do
	for o in "${offs[@]}"; do specs+=("r:$((o * 4096)):4096"); done
done
"$IOGEN" tuner "$M/big" "${specs[@]}" || hy_fail "the second workload failed"
out=$("$HYBRIDCTL" tune "$M" --json --min-gain 0) || hy_fail "tune --min-gain 0 failed: $out"
g=$(jq '.remount.bopt_size_gain' <<<"$out")
if [ -z "$g" ] || ! jq -e '.remount.bopt_size_gain > 0.02 and (.bopt_sizes[0].current | not)' <<<"$out" >/dev/null; then
	hy_fail "no BOPT size better than 4M: $(jq -c '{remount, bopt_sizes}' <<<"$out")"
else
	below=$(jq -n "$g * 50") above=$(jq -n "[$g * 200, 1000] | min")
	txt=$("$HYBRIDCTL" tune "$M" --min-gain "$below") || hy_fail "tune --min-gain $below failed"
	grep -q "^remount with -o .*bopt_size=" <<<"$txt" ||
		hy_fail "a gain of $g was not advised at --min-gain $below%: $txt"
	txt=$("$HYBRIDCTL" tune "$M" --min-gain="$above") || hy_fail "tune --min-gain $above failed"
	grep -q "^remount with" <<<"$txt" && hy_fail "a gain of $g was advised at --min-gain $above%: $txt"
	grep -q "^no remount advised" <<<"$txt" || hy_fail "--min-gain $above% does not say why: $txt"
	out=$("$HYBRIDCTL" tune "$M" --json --min-gain="$above") || hy_fail "tune --json failed"
	jq -e '.remount.advised == false and .remount.options == null' <<<"$out" >/dev/null ||
		hy_fail "--min-gain $above% advised: $(jq -c .remount <<<"$out")"
fi
hy_umount "$M"
hy_pass
