#!/bin/bash
# tune.sh - hybridctl tune on a real mount: the mount's log replayed under
# candidate policy tables, store policies and BOPT sizes, rankings printed,
# --apply putting the best table in force (policy get shows it); a mount
# without a cache is refused, named.
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
hy_pass
