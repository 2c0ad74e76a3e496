#!/usr/bin/env bash
# `hybridctl explain PATH [--range OFFSET[:LENGTH]]` per run of blocks, and
# the state database's full paths (issue 19, item 6):
#   1. a file written (write-back, held open) and read through a mount
#      with a named cache store: explain shows runs served from DRAM (the
#      front buffer), SSD (store lines) and home, the written ones dirty,
#      with counts per place that add up to the file's blocks; --range
#      narrows it to the blocks of a byte range; bad ranges, and paths
#      outside the mount, are refused by name;
#   2. after `hybridctl flush` nothing is dirty;
#   3. two files named Makefile in two folders are two rows with two
#      relative paths; a folder renamed through the mount takes its
#      files' paths along (explain finds a removed file by the path it had
#      after the rename);
#   4. the plan of a dry run names a file by its path in the mount; after
#      a reorganization, explain shows the hot blocks' runs in the BOPT.
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
hy_need_iogen

b=$HY_TMP/b m=$HY_TMP/m st=$HY_TMP/state
mkdir -p "$b/src/lib" "$b/doc" "$b/tree" "$b/data"
# made outside the mount: only the requests below are cached and logged
head -c 1M /dev/urandom >"$b/f"
head -c 1M /dev/urandom >"$b/data/hot"
echo 'all: lib' >"$b/src/lib/Makefile"
echo 'all: doc' >"$b/doc/Makefile"
# a small front buffer that lets every block into the store (so that
# both tiers hold some), and a slow cleaner (so that what is written stays
# dirty while the file is open)
opts="state=$st,cache=$HY_TMP/store,cache_size=16M,cache_write=back,front_buffer=64K"
opts+=",heat_threshold=0,cache_clean_rate=4K,writeback_cache=off,bopt_size=8M,reorg_rate=0"
hy_mount_ready "$b" "$m" "$opts"

# explain_json ARGS...: the answer, or null when refused (jq -e takes an
# empty input for a success; every check below fails on null)
explain_json() {
	local out
	out=$("$HYBRIDCTL" explain "$@" --json) && [ -n "$out" ] || out=null
	echo "$out"
}

# ---- 1. DRAM, SSD and home; dirty and clean ----------------------------
mkfifo "$HY_TMP/go"
# blocks 0..63 written within the file (a write past the end goes home at
# once), the file held open
"$IOGEN" holder "$m/f" w:0:262144 wait:"$HY_TMP/go" &
wpid=$!
HY_PIDS="$HY_PIDS $wpid"
hy_wait_status "$m" '.cache.dirty_bytes > 0'
# the front buffer's evictor moves blocks into the store on its own
# thread, and a read finding the front buffer full is not buffered: the
# blocks 128..191 are read until both tiers hold some and some of them
# are cached clean (the bound only turns a hang into a failure)
ok=
for _ in $(seq 1 600); do
	"$IOGEN" reader "$m/f" r:524288:262144 || hy_fail "reading f failed"
	ex=$(explain_json "$m/f")
	if jq -e '(.summary | .dram.blocks > 0 and .ssd.blocks > 0 and .home.blocks > 0
		and .dram.dirty + .ssd.dirty > 0) and
		any(.ranges[]; .where != "home" and .dirty == false)' <<<"$ex" >/dev/null; then
		ok=1
		break
	fi
	sleep 0.05
done
[ "$ok" ] || hy_fail "explain never showed DRAM, SSD, home, dirty and clean cached blocks: $(jq -c . <<<"$ex" | head -c 600)"
# the runs: in order, one after the other, adding up to the file
jq -e '.blocks == 256 and ([.ranges[].count] | add) == 256 and
	([.summary[].blocks] | add) == 256 and
	([range(1; .ranges | length) as $i | .ranges[$i].first ==
		.ranges[$i - 1].first + .ranges[$i - 1].count] | all) and
	.ranges[0].first == 0 and (.truncated | not)' <<<"$ex" >/dev/null ||
	hy_fail "explain's runs do not add up: $(jq -c . <<<"$ex" | head -c 600)"
# the blocks written are dirty in the cache; none was ever home dirty
jq -e '[.ranges[] | select(.first < 64) | .where] | all(. == "dram" or . == "ssd")' \
	<<<"$ex" >/dev/null || hy_fail "explain: a written block is not cached: $(jq -c .ranges <<<"$ex")"
jq -e 'all(.ranges[]; .dirty == false or .where == "dram" or .where == "ssd") and
	any(.ranges[]; .first >= 64 and .where == "home")' <<<"$ex" >/dev/null ||
	hy_fail "explain: dirty or home runs wrong: $(jq -c .ranges <<<"$ex")"
out=$("$HYBRIDCTL" explain "$m/f") || hy_fail "explain's table failed"
echo "$out" >&2
# a row: FIRST LAST BLOCKS WHERE STATE BOPT-BLOCK HEAT
for row in "DRAM +dirty" "SSD +dirty" "home +clean" "(DRAM|SSD) +clean"; do
	grep -qE "^ +[0-9]+ +[0-9]+ +[0-9]+  $row " <<<"$out" ||
		hy_fail "explain's table shows no run of $row"
done
grep -qE "^served from: .*DRAM [0-9]+ blocks \([0-9]+ dirty\)" <<<"$out" ||
	hy_fail "explain shows no count of the blocks served from DRAM"

# --range: the blocks of bytes 512 KiB .. 768 KiB only
ex=$(explain_json "$m/f" --range 512K:256K)
jq -e '.range == {"first": 128, "count": 64} and ([.ranges[].count] | add) == 64 and
	([.summary[].blocks] | add) == 64 and .ranges[0].first == 128 and
	all(.ranges[]; .first >= 128 and .first + .count <= 192)' <<<"$ex" >/dev/null ||
	hy_fail "explain --range 512K:256K: $(jq -c . <<<"$ex" | head -c 600)"
ex=$(explain_json "$m/f" --range 4097:1)
jq -e '.range == {"first": 1, "count": 1}' <<<"$ex" >/dev/null ||
	hy_fail "explain --range 4097:1: $(jq -c .range <<<"$ex")"
# from an offset to the end; a length past the end stops at the end
ex=$(explain_json "$m/f" --range 1020K)
jq -e '.range == {"first": 255, "count": 1}' <<<"$ex" >/dev/null ||
	hy_fail "explain --range 1020K: $(jq -c .range <<<"$ex")"
ex=$(explain_json "$m/f" --range 1020K:1G)
jq -e '.range == {"first": 255, "count": 1}' <<<"$ex" >/dev/null ||
	hy_fail "explain --range 1020K:1G: $(jq -c .range <<<"$ex")"
# bad input, refused by name
msg=$("$HYBRIDCTL" explain "$m/f" --range 1M 2>&1)
[ $? = 1 ] && grep -q "past the end of the file (1048576 bytes)" <<<"$msg" ||
	hy_fail "a range past the end: $msg"
msg=$("$HYBRIDCTL" explain "$m/f" --range 12Q 2>&1)
[ $? = 2 ] && grep -q 'offset "12Q" is not a size' <<<"$msg" || hy_fail "a malformed range: $msg"
msg=$("$HYBRIDCTL" explain "$m/f" --range=1M-4K:1G 2>&1)
[ $? = 2 ] && grep -q 'offset "1M-4K" is not a size' <<<"$msg" || hy_fail "a malformed offset: $msg"
msg=$("$HYBRIDCTL" explain "$m/f" --range 0:0 2>&1)
[ $? = 2 ] && grep -q 'length "0" is not a size above 0' <<<"$msg" ||
	hy_fail "a range of no length: $msg"
msg=$("$HYBRIDCTL" explain "$m/f" --range :4K 2>&1)
[ $? = 2 ] && grep -q "no offset" <<<"$msg" || hy_fail "a range without an offset: $msg"
msg=$("$HYBRIDCTL" explain "$m/f" --range 2>&1)
[ $? = 2 ] && grep -q "needs OFFSET" <<<"$msg" || hy_fail "--range without a value: $msg"
msg=$("$HYBRIDCTL" explain "$b/f" 2>&1)
[ $? = 1 ] && grep -q "not in a hybridfs mount" <<<"$msg" || hy_fail "a path outside the mount: $msg"

# bounded: a file of 10 million blocks is counted whole, in one run; one
# of more runs than an answer lists (every other block cached) is cut
# with a note and the block to go on from, and counted whole
truncate -s 40G "$b/big" || hy_die "making a sparse file failed"
# one block read: the file has an id, and the cache is asked of them all
dd if="$m/big" of=/dev/null bs=4K skip=5000000 count=1 iflag=direct status=none ||
	hy_fail "reading big failed"
ex=$(explain_json "$m/big")
jq -e '.blocks == 10485760 and .summary.home.blocks == 10485759 and (.ranges | length) == 3 and
	.ranges[1].first == 5000000 and .ranges[1].count == 1 and .ranges[1].where != "home"' \
	<<<"$ex" >/dev/null || hy_fail "explain of 10 million blocks: $(jq -c . <<<"$ex" | head -c 600)"
head -c 4M /dev/urandom >"$b/odd"
specs=()
# written, every other block: a write is always cached (into the store
# when the front buffer is full), and a read would fill its neighbours
for ((blk = 0; blk < 1024; blk += 2)); do specs+=("w:$((blk * 4096)):4096"); done
"$IOGEN" writer "$m/odd" "${specs[@]}" || hy_fail "writing odd failed"
ex=$(explain_json "$m/odd")
jq -e '.truncated and .summary.home.blocks == 512' <<<"$ex" >/dev/null ||
	hy_fail "explain of 512 cached blocks between uncached ones was not cut: $(jq -c '{summary, truncated}' <<<"$ex")"
next=$(jq -r .next_block <<<"$ex")
jq -e --argjson next "$next" '(.ranges | length) == 400 and ([.summary[].blocks] | add) == 1024 and
	(.ranges[-1].first + .ranges[-1].count) == $next' <<<"$ex" >/dev/null ||
	hy_fail "explain's cut answer: $(jq -c '{summary, next_block, n: (.ranges | length)}' <<<"$ex")"
"$HYBRIDCTL" explain "$m/odd" | grep -q "^(the list stops at 400 runs; .* --range $((next * 4096)) goes on" ||
	hy_fail "explain's table does not say where it was cut"
ex=$(explain_json "$m/odd" --range $((next * 4096)))
jq -e --argjson next "$next" '.range.first == $next and .ranges[0].first == $next' <<<"$ex" >/dev/null ||
	hy_fail "explain --range from the cut: $(jq -c .range <<<"$ex")"

# ---- 2. after a flush nothing is dirty -------------------------------
echo go >"$HY_TMP/go"
wait "$wpid" || hy_fail "the writer failed"
hy_forget_pid "$wpid"
"$HYBRIDCTL" flush "$m" >/dev/null || hy_fail "flush failed"
ex=$(explain_json "$m/f")
jq -e '([.summary[].dirty] | add) == 0 and all(.ranges[]; .dirty == false) and
	.summary.dram.blocks + .summary.ssd.blocks > 0' <<<"$ex" >/dev/null ||
	hy_fail "after flush: $(jq -c .summary <<<"$ex")"
cmp -s <(head -c 262144 "$b/f") <(head -c 262144 "$m/f") || hy_fail "home differs after flush"

# ---- 3. full paths -----------------------------------------------------
cat "$m/src/lib/Makefile" "$m/doc/Makefile" >/dev/null || hy_fail "reading the Makefiles failed"
lib_id=$(explain_json "$m/src/lib/Makefile" | jq -r .file_id)
doc_id=$(explain_json "$m/doc/Makefile" | jq -r .file_id)
[ "$lib_id" -gt 0 ] && [ "$doc_id" -gt 0 ] && [ "$lib_id" != "$doc_id" ] ||
	hy_fail "the Makefiles' ids: $lib_id and $doc_id"
# a folder renamed through the mount, after its file was seen
mv "$m/src" "$m/tree/src2" || hy_fail "renaming src failed"
if command -v sqlite3 >/dev/null; then
	"$HYBRIDCTL" explain "$m/tree/src2/lib/Makefile" >/dev/null # syncs the log
	paths=$(sqlite3 "$st/hybridfs.db" "SELECT path FROM files WHERE id IN ($lib_id, $doc_id) ORDER BY id")
	[ "$paths" = "$(printf 'tree/src2/lib/Makefile\ndoc/Makefile')" ] ||
		hy_fail "the database names the Makefiles: $(tr '\n' ' ' <<<"$paths")"
else
	hy_log "SKIP sub-check: the paths in the database (sqlite3 is missing)"
fi
# removed, each is found by its own full path (the one after the rename)
rm "$m/tree/src2/lib/Makefile" "$m/doc/Makefile" || hy_fail "removing the Makefiles failed"
ex=$(explain_json "$m/tree/src2/lib/Makefile")
jq -e --argjson id "$lib_id" '.reason == "removed" and .file_id == $id' <<<"$ex" >/dev/null ||
	hy_fail "explain of the removed tree/src2/lib/Makefile: $(jq -c . <<<"$ex")"
ex=$(explain_json "$m/doc/Makefile")
jq -e --argjson id "$doc_id" '.reason == "removed" and .file_id == $id' <<<"$ex" >/dev/null ||
	hy_fail "explain of the removed doc/Makefile: $(jq -c . <<<"$ex")"

# ---- 4. BOPT runs after a reorganization ------------------------------
hot=(200 13 102 77 150 5 33 61 144 188 26 51 39 103 45 19)
specs=()
for blk in "${hot[@]}"; do specs+=("r:$((blk * 4096)):4096"); done
for pass in 1 2 3; do
	"$IOGEN" reader "$m/data/hot" "${specs[@]}" || hy_die "reading the hot set failed (pass $pass)"
done
# the plan names the file by its path in the mount
out=$("$HYBRIDCTL" reorganize "$m" --dry-run --gap 3600 --always 2>&1) || hy_fail "the dry run failed: $out"
grep -qE "^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+  data/hot$" <<<"$out" ||
	hy_fail "the dry run's plan does not name data/hot: $out"
out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 --always 2>&1) || hy_fail "reorganize failed: $out"
hy_umount "$m"
# again without a cache, so that what the BOPT serves shows
hy_mount_ready "$b" "$m" "state=$st,cache=none,bopt_size=8M,reorg_rate=0"
ex=$(explain_json "$m/data/hot")
jq -e '.summary.bopt.blocks == 16 and .summary.home.blocks == 240 and
	.summary.dram.blocks + .summary.ssd.blocks == 0 and
	([.ranges[] | select(.where == "bopt") | .count] | add) == 16 and
	all(.ranges[] | select(.where == "bopt"); .bopt_block != null and .dirty == false)' \
	<<<"$ex" >/dev/null || hy_fail "explain after reorganize: $(jq -c . <<<"$ex" | head -c 800)"
for blk in "${hot[@]}"; do
	jq -e --argjson b "$blk" \
		'any(.ranges[]; .where == "bopt" and .first <= $b and $b < .first + .count)' \
		<<<"$ex" >/dev/null || hy_fail "explain: hot block $blk is not in the BOPT"
done
"$HYBRIDCTL" explain "$m/data/hot" | grep -qE '^ +[0-9]+ +[0-9]+ +[0-9]+  BOPT +clean +[0-9]+ ' ||
	hy_fail "explain's table shows no BOPT run"
hy_umount "$m"
hy_pass
