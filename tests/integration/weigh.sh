#!/usr/bin/env bash
# weigh.sh - a plan is weighed on a model of the disk before anything moves
# (issue 18, item 5): files that lie one after another in the order they
# are read gain nothing from a BOPT, which can only add the seeks to it:
# the plan is held back, nothing is copied, and the summary and the status
# say so with the model's figures. The same plan with --always is carried
# out; the next weighed reorganization finds home faster than that layout
# and sends every relocated block home ("all home").
#
# Where the files lie is set, not left to the filesystem: the access log's
# physical blocks (phys_block, FIEMAP's when logged) are rewritten so that
# file k's block lies right after file k-1's, as a tree written in the
# order it is read would lie; other tests writing at the same time would
# otherwise interleave the files' blocks with theirs. The BOPT's place is
# its file's own (FIEMAP), so the backing filesystem must map files
# (ext4, xfs, btrfs...); without that the model is not known and the test
# is skipped.
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
b=$HY_TMP/b m=$HY_TMP/m
mkdir -p "$b"
command -v sqlite3 >/dev/null || hy_skip "sqlite3 is missing (scripts/test installs it)"
for i in $(seq -w 1 24); do
	head -c 12288 /dev/urandom >"$b/f$i"
done
opts="writeback_cache=off,cache=none,state=$HY_TMP/state,bopt_size=8M,reorg_rate=0"
db=$HY_TMP/state/hybridfs.db
# the morning: every file in order, three times; then the log's rows, all
# of them in the database (a dry run syncs the log)
morning() {
	local i
	for _ in 1 2 3; do
		for i in $(seq -w 1 24); do
			dd if="$m/f$i" of=/dev/null bs=64k iflag=direct status=none ||
				hy_fail "reading f$i failed"
		done
	done
	"$HYBRIDCTL" reorganize "$m" --dry-run --gap 3600 >/dev/null 2>&1 || hy_fail "the dry run failed"
}
# the files in reading order on the disk: f01 at block 1,000, each next
# one 3 blocks (12 KiB) on
in_reading_order() {
	sqlite3 -cmd ".timeout 10000" "$db" "UPDATE access_log SET phys_block = 1000 + 3 *
		(SELECT CAST(substr(path, -2) AS INTEGER) - 1 FROM files WHERE files.id = access_log.file_id)" ||
		hy_fail "rewriting the log's places failed"
}
hy_mount_ready "$b" "$m" "$opts"
morning
rows=$(sqlite3 "$db" "SELECT count(*) FROM access_log WHERE mode = 0")
[ "$rows" = 72 ] || hy_fail "the log holds $rows reads, not 72"
in_reading_order
out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 2>&1) || hy_fail "reorganize failed: $out"
echo "$out" >&2
model=$(hy_status "$m" '.bopt.reorganization.model')
[ "$model" != null ] || hy_skip "no physical places in the log (the filesystem has no FIEMAP)"
decision=$(jq -r .decision <<<"$model")
planned=$(jq -r .planned_ms <<<"$model") current=$(jq -r .current_ms <<<"$model")
# the decision follows the figures: held back, the plan saving nothing
awk -v p="$planned" -v c="$current" 'BEGIN { exit !(p >= c * 0.98) }' ||
	hy_fail "the model says the plan saves time on files in reading order: $model"
[ "$decision" = "held back" ] || hy_fail "the plan saves nothing ($model) but was $decision"
[ "$(hy_status "$m" '.bopt.reorganization.copied_blocks')" = 0 ] ||
	hy_fail "a plan held back copied blocks"
[ "$(hy_status "$m" '.bopt.map_files')" = 0 ] || hy_fail "a plan held back relocated files"
grep -q "weighed .* held back" <<<"$out" || hy_fail "the summary does not say it was held back"
"$HYBRIDCTL" status "$m" | grep -q "^reorganized .*weighed .* held back" ||
	hy_fail "the status table does not say the plan was held back"
# --always carries the same plan out, unweighed
out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 --always 2>&1) || hy_fail "reorganize --always failed"
[ "$(hy_status "$m" '.bopt.reorganization.model')" = null ] || hy_fail "--always weighed the plan"
[ "$(hy_status "$m" '.bopt.map_files')" = 24 ] ||
	hy_fail "--always relocated $(hy_status "$m" '.bopt.map_files') files, not 24"

# the same morning again, now from the BOPT: home, where the files lie in
# reading order, is faster than the layout (no seek out to the BOPT), so
# the weighed reorganization sends every relocated block home
morning
in_reading_order
out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 2>&1) || hy_fail "reorganize failed: $out"
echo "$out" >&2
model=$(hy_status "$m" '.bopt.reorganization.model')
[ "$(jq -r .decision <<<"$model")" = "all home" ] ||
	hy_fail "home is faster than the layout ($model) but the plan was not all home"
[ "$(hy_status "$m" '.bopt.map_files')" = 0 ] ||
	hy_fail "all home left $(hy_status "$m" '.bopt.map_files') files relocated"
for i in $(seq -w 1 24); do
	cmp -s "$m/f$i" "$b/f$i" || hy_fail "f$i reads differently after all went home"
done
hy_umount "$m"
hy_pass
