#!/usr/bin/env bash
# weigh.sh - a plan is weighed on a model of the disk before anything moves
# (issue 18, item 5): files written one after the other and read in that
# same order already lie in the order they are read, so a BOPT can only add
# the seeks to it: the plan is held back, nothing is copied, and the
# summary and the status say so with the model's figures. The same plan
# with --always is carried out.
#
# The backing folder's filesystem must map files (FIEMAP: ext4, xfs,
# btrfs...) and place them in writing order, as filesystems do for small
# files written one after another from one CPU: where the log has no
# physical places, or the files were not placed so, the test is skipped.
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
b=$HY_TMP/b m=$HY_TMP/m
mkdir -p "$b"
# written from one CPU (ext4 places small files from per-CPU groups) and
# each made durable before the next, so that they lie one after another
pin=""
command -v taskset >/dev/null && pin="taskset -c 0"
for i in $(seq -w 1 24); do
	$pin dd if=/dev/urandom of="$b/f$i" bs=12288 count=1 conv=fsync status=none
done
opts="writeback_cache=off,cache=none,state=$HY_TMP/state,bopt_size=8M,reorg_rate=0"
hy_mount_ready "$b" "$m" "$opts"
for _ in 1 2 3; do
	for i in $(seq -w 1 24); do
		dd if="$m/f$i" of=/dev/null bs=64k iflag=direct status=none || hy_fail "reading f$i failed"
	done
done
out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 2>&1) || hy_fail "reorganize failed: $out"
echo "$out" >&2
model=$(hy_status "$m" '.bopt.reorganization.model')
[ "$model" != null ] || hy_skip "no physical places in the log (the filesystem has no FIEMAP)"
decision=$(jq -r .decision <<<"$model")
planned=$(jq -r .planned_ms <<<"$model") current=$(jq -r .current_ms <<<"$model")
# the decision follows the figures: held back unless the plan saves 2%
if awk -v p="$planned" -v c="$current" 'BEGIN { exit !(p < c * 0.98) }'; then
	hy_skip "this filesystem did not place the files in writing order (model: $model)"
fi
[ "$decision" = "held back" ] || hy_fail "the plan saves nothing ($model) but was $decision"
[ "$(hy_status "$m" '.bopt.reorganization.copied_blocks')" = 0 ] ||
	hy_fail "a plan held back copied blocks"
[ "$(hy_status "$m" '.bopt.map_files')" = 0 ] || hy_fail "a plan held back relocated files"
grep -q "weighed .* held back" <<<"$out" || hy_fail "the summary does not say it was held back"
# --always carries the same plan out, unweighed
out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 --always 2>&1) || hy_fail "reorganize --always failed"
[ "$(hy_status "$m" '.bopt.reorganization.model')" = null ] || hy_fail "--always weighed the plan"
[ "$(hy_status "$m" '.bopt.map_files')" = 24 ] ||
	hy_fail "--always relocated $(hy_status "$m" '.bopt.map_files') files, not 24"
hy_umount "$m"
hy_pass
