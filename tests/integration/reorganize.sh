#!/usr/bin/env bash
# BORG end to end on real mounts: `hybridctl reorganize` copies the blocks
# one process reads again and again into the BOPT, in the order it reads
# them, and later reads of them are served from there, sequentially; data
# never changes on the way:
#   1. checksums unchanged; `hybridctl explain` shows the planned blocks in
#      the BOPT and the rest home; after a remount the hot set is read from
#      the BOPT with far fewer seeks than from home (device counters);
#   2. a file changed outside the mount (while mounted, or while not:
#      rewritten, truncated, deleted and made again) is never served from a
#      stale BOPT copy;
#   3. writers racing a (slow) reorganization lose nothing;
#   4. kill -9 of the daemon in the middle of a reorganization, remount:
#      every file intact, the map consistent, and a new reorganization runs;
#   5. BORG's writes: a write to a relocated block goes into the BOPT, marked
#      dirty, home unchanged until `hybridctl flush` (or close, or
#      unmount); after kill -9 the journal brings the dirty block back and
#      unmount sends it home;
#   6. a reorganization sends blocks written through the mount home before
#      they leave the BOPT, and never copies over one still held there;
#   7. --all reorganizes every mount of the user and passes over one
#      without a BOPT; bad requests are refused by name.
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
bin=${HY_TESTBIN:-$(dirname "$0")}
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}

# status FIELD: a field of the mount's status (the daemon's report)
status() { "$HYBRIDCTL" status "$m" --json | jq -r ".mounts[0].daemon.$1"; }
# wait_for JQ-CONDITION: polls the status until it holds; the bound only
# turns a hang into a failure
wait_for() {
	local i
	for i in $(seq 1 1200); do
		"$HYBRIDCTL" status "$m" --json 2>/dev/null |
			jq -e ".mounts[0].daemon | $1" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	hy_fail "waited 60 s for: $1"
	return 1
}
# mount_ready BACKING MOUNTPOINT OPTIONS: mounts and waits for the control
# socket (in the foreground the daemon opens it after the mount shows)
mount_ready() {
	hy_mount "$1" "$2" -o "$3"
	wait_for '.bopt.path != null'
}
# append_refused_record JOURNAL FILE_ID BLOCK: a well-formed relocate
# record (map_journal.h: 48 bytes, FNV-1a 32 checksum) of a block that is
# relocated already, with the generation and epoch of the journal's first
# record: replay refuses it as damage
append_refused_record() {
	local j=$1 hex rec h=2166136261 i byte
	hex=$(od -An -tx1 -v -N 16 "$j" | tr -d ' \n') # magic, type, epoch, generation
	[ ${#hex} = 32 ] || { hy_fail "no record in $j to copy the generation from"; return; }
	le() { local v=$1 n=$2 out=""; for ((i = 0; i < n; i++)); do
		out+=$(printf '%02x' $((v & 255))); v=$((v >> 8)); done; echo "$out"; }
	rec=48594d4a01${hex:10:6}${hex:16:16}$(le "$2" 8)$(le "$3" 8)$(le 999 8)$(le 1 4)
	for ((i = 0; i < ${#rec}; i += 2)); do
		byte=$((16#${rec:i:2}))
		h=$((((h ^ byte) * 16777619) & 0xffffffff))
	done
	rec+=$(le "$h" 4)
	printf "$(sed 's/../\\x&/g' <<<"$rec")" >>"$j"
}
specs() { local blk; for blk in "$@"; do printf 'r:%d:4096 ' $((blk * 4096)); done; }

# ---- 1. the hot set moves to the BOPT, data unchanged -----------------
b=$HY_TMP/b m=$HY_TMP/m
mkdir -p "$b"
# made outside the mount, so the log holds only the reads below
head -c 4M /dev/urandom >"$b/hot"
head -c 1M /dev/urandom >"$b/cold"
head -c 2M /dev/urandom >"$b/gone"
head -c 2M /dev/urandom >"$b/cut"
(cd "$b" && md5sum hot cold gone cut) >"$HY_TMP/sums"
hot=(700 13 402 77 950 5 333 621 144 888 260 511 39 1003 456 190 802 66 299 733 581 120 917 350
	8 644 222 777 410 97 999 533)
# shellcheck disable=SC2046
opts="writeback_cache=off,cache=none,state=$HY_TMP/state,bopt_size=8M,reorg_rate=0"
mount_ready "$b" "$m" "$opts"

r0=$(status backing_device.reads) s0=$(status backing_device.seeks)
# shellcheck disable=SC2046
"$bin/hy-iogen" reader "$m/hot" $(specs "${hot[@]}") || hy_die "reading the hot set failed"
r1=$(status backing_device.reads) s1=$(status backing_device.seeks)
home_reads=$((r1 - r0)) home_seeks=$((s1 - s0))
[ "$home_reads" = ${#hot[@]} ] || hy_fail "the hot set took $home_reads home reads, not ${#hot[@]}"
for pass in 2 3; do
	# shellcheck disable=SC2046
	"$bin/hy-iogen" reader "$m/hot" $(specs "${hot[@]}") || hy_die "pass $pass failed"
done
# shellcheck disable=SC2046
"$bin/hy-iogen" other "$m/gone" $(specs 3 300 100 3 300 100) || hy_die "reading gone failed"
# shellcheck disable=SC2046
"$bin/hy-iogen" other "$m/cut" $(specs 400 20 200 400 20 200) || hy_die "reading cut failed"

out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 --always 2>&1)
rc=$?
echo "$out" >&2
[ $rc = 0 ] || hy_fail "reorganize exited $rc"
grep -q "^reorganized " <<<"$out" || hy_fail "reorganize printed no summary"
[ "$(status bopt.reorganization.phase)" = done ] || hy_fail "the reorganization is not done"
copied=$(status bopt.reorganization.copied_blocks)
[ "$copied" = $((${#hot[@]} + 6)) ] || hy_fail "copied $copied blocks, expected $((${#hot[@]} + 6))"
(cd "$m" && md5sum -c --quiet "$HY_TMP/sums") || hy_fail "a checksum changed after reorganize"

# explain: every hot block is in the BOPT; the cold file is all home
ex=$("$HYBRIDCTL" explain "$m/hot" --json) || hy_fail "explain hot failed"
for blk in "${hot[@]}"; do
	jq -e --argjson b "$blk" \
		'any(.ranges[]; .where == "bopt" and .first <= $b and $b < .first + .count)' \
		<<<"$ex" >/dev/null || hy_fail "explain: hot block $blk is not in the BOPT"
done
jq -e '([.ranges[] | select(.where == "bopt") | .count] | add) == 32 and
	([.ranges[].count] | add) == .blocks' <<<"$ex" >/dev/null ||
	hy_fail "explain: the ranges do not add up: $(jq -c . <<<"$ex" | head -c 400)"
"$HYBRIDCTL" explain "$m/cold" --json | jq -e 'all(.ranges[]; .where == "home")' >/dev/null ||
	hy_fail "explain: the cold file is not all home"
"$HYBRIDCTL" explain "$m/hot" | grep -qE '^ +[0-9]+ +[0-9]+ +[0-9]+  BOPT ' || hy_fail "explain's table shows no BOPT run"
# metadata changed through the mount moves the ctime but keeps the copies
s0=$(status bopt.stale_files)
chmod 600 "$m/hot" && touch -m -d @1600000000 "$m/hot" || hy_fail "chmod or touch failed"
dd if="$m/hot" of=/dev/null bs=4096 skip=700 count=1 iflag=direct status=none
[ "$(status bopt.stale_files)" = "$s0" ] || hy_fail "chmod and touch through the mount dropped the copies"
[ "$(stat -c %Y "$b/hot")" = 1600000000 ] || hy_fail "touch -d did not reach home"
[ "$(status bopt.map_blocks)" = "$copied" ] || hy_fail "the copies are gone after chmod and touch"
msg=$("$HYBRIDCTL" explain "$HY_TMP" 2>&1)
[ $? = 1 ] && grep -q "not in a hybridfs mount" <<<"$msg" ||
	hy_fail "explain of a path outside any mount was not refused: $msg"
# bad requests are refused by name
mkdir -p "$m/dir"
msg=$("$HYBRIDCTL" explain "$m/dir" 2>&1)
[ $? = 1 ] && grep -q "not a regular file" <<<"$msg" || hy_fail "explain of a directory: $msg"
msg=$("$HYBRIDCTL" reorganize "$m" --capacity 1T 2>&1)
[ $? = 2 ] && grep -q "read region" <<<"$msg" || hy_fail "a capacity above the BOPT: $msg"
msg=$("$HYBRIDCTL" reorganize "$m" --state "$HY_TMP/state" 2>&1)
[ $? = 2 ] || hy_fail "reorganize with both a mountpoint and --state: $msg"
msg=$("$HYBRIDCTL" flush "$m" extra 2>&1)
[ $? = 2 ] || hy_fail "flush with two mountpoints: $msg"
rmdir "$m/dir"

# after a remount (no page cache, fresh counters): the hot set comes from
# the BOPT, in one sequential sweep, and nothing from home
hy_umount "$m"
mount_ready "$b" "$m" "$opts"
[ "$(status bopt.clean_at_mount)" = true ] || hy_fail "the BOPT was not closed cleanly"
[ "$(status bopt.map_blocks)" = "$copied" ] || hy_fail "the map did not survive the remount"
r0=$(status backing_device.reads) b0=$(status bopt.device.reads) s0=$(status bopt.device.seeks)
# shellcheck disable=SC2046
"$bin/hy-iogen" reader "$m/hot" $(specs "${hot[@]}") || hy_die "reading the hot set failed"
r1=$(status backing_device.reads) b1=$(status bopt.device.reads) s1=$(status bopt.device.seeks)
[ $((r1 - r0)) = 0 ] || hy_fail "the hot set still took $((r1 - r0)) home reads"
[ $((b1 - b0)) = ${#hot[@]} ] || hy_fail "the hot set took $((b1 - b0)) BOPT reads"
bopt_seeks=$((s1 - s0))
hy_log "hot set: $home_seeks seeks from home before, $bopt_seeks in the BOPT after"
[ $((bopt_seeks * 8)) -le "$home_seeks" ] ||
	hy_fail "the BOPT reads are not sequential: $bopt_seeks seeks against $home_seeks at home"

# the SSD cache in front (the default; BORG's own figures above are taken
# without it): a miss goes through the map to the BOPT, then DRAM serves
hy_umount "$m"
mount_ready "$b" "$m" "${opts/cache=none/cache_write=back}"
b0=$(status bopt.device.reads)
(cd "$m" && md5sum -c --quiet "$HY_TMP/sums") || hy_fail "through the cache: a checksum changed"
# past the kernel's page cache: the second read of each block is the cache's
for pass in 1 2; do
	cmp -s <(dd if="$m/hot" bs=64k iflag=direct status=none) "$b/hot" ||
		hy_fail "pass $pass through the cache: the hot file differs"
done
[ "$(status bopt.device.reads)" -gt "$b0" ] || hy_fail "no cache miss went to the BOPT"
[ "$(status cache.read_hits_dram)" -gt 0 ] || hy_fail "the second pass was not served from DRAM"
hy_umount "$m"
mount_ready "$b" "$m" "$opts"

# ---- 2. outside changes are never served from the BOPT ----------------
# while mounted: a hot block rewritten in the backing directory
head -c 4096 /dev/urandom >"$HY_TMP/new"
dd if="$HY_TMP/new" of="$b/hot" bs=4096 seek=700 conv=notrunc status=none
dd if="$m/hot" of="$HY_TMP/got" bs=4096 skip=700 count=1 iflag=direct status=none
cmp -s "$HY_TMP/new" "$HY_TMP/got" || hy_fail "a block changed outside the mount was read stale"
[ "$(status bopt.stale_files)" = 1 ] || hy_fail "the stale file was not counted"
hy_umount "$m"
# while not mounted: truncated, deleted and made again
truncate -s 4096 "$b/cut"
rm "$b/gone"
head -c 2M /dev/urandom >"$b/gone"
(cd "$b" && md5sum hot cold gone cut) >"$HY_TMP/sums"
mount_ready "$b" "$m" "$opts"
(cd "$m" && md5sum -c --quiet "$HY_TMP/sums") || hy_fail "a file changed outside was read stale"
# shellcheck disable=SC2046
"$bin/hy-iogen" other "$m/gone" $(specs 3 300 100) || hy_fail "the new gone reads badly"
for blk in 3 300 100; do
	cmp -s <(dd if="$m/gone" bs=4096 skip=$blk count=1 iflag=direct status=none) \
		<(dd if="$b/gone" bs=4096 skip=$blk count=1 status=none) ||
		hy_fail "block $blk of the file made again is stale"
done
hy_umount "$m"

# ---- 3. writers racing a reorganization lose nothing --------------------
b=$HY_TMP/b2 m=$HY_TMP/m2
mkdir -p "$b" "$HY_TMP/ref"
for f in w1 w2; do
	head -c 4M /dev/urandom >"$b/$f"
	cp "$b/$f" "$HY_TMP/ref/$f"
done
mount_ready "$b" "$m" "writeback_cache=off,state=$HY_TMP/state2,bopt_size=16M,reorg_rate=2M"
for f in w1 w2; do
	# the files read backwards in 64 KiB pieces: 128 vertices to copy
	# shellcheck disable=SC2046
	"$bin/hy-iogen" reader "$m/$f" $(for o in $(seq 63 -1 0); do printf 'r:%d:65536 ' $((o * 65536)); done) ||
		hy_die "reading $f failed"
done
"$HYBRIDCTL" reorganize "$m" --gap 3600 --always --quiet >"$HY_TMP/reorg.out" 2>&1 &
rpid=$!
for i in $(seq 1 150); do
	f=w$((i % 2 + 1)) blk=$(((i * 7919) % 1024))
	head -c 4096 /dev/urandom >"$HY_TMP/chunk"
	dd if="$HY_TMP/chunk" of="$m/$f" bs=4096 seek=$blk conv=notrunc status=none ||
		hy_fail "write $i failed"
	dd if="$HY_TMP/chunk" of="$HY_TMP/ref/$f" bs=4096 seek=$blk conv=notrunc status=none
done
wait $rpid || hy_fail "the reorganization beside the writers failed: $(cat "$HY_TMP/reorg.out")"
for f in w1 w2; do
	cmp -s "$m/$f" "$HY_TMP/ref/$f" || hy_fail "$f through the mount lost a write"
done
# home has every write once the file's last handle is gone: at close(2)
# with open=daemon, when the kernel file closes with open=kernel (the
# default here: the kernel forgets the inode, or the unmount), so a
# write that landed in a block copied already waits in the BOPT until
# then (docs/architecture.md, "Files")
hy_umount "$m"
for f in w1 w2; do
	cmp -s "$b/$f" "$HY_TMP/ref/$f" || hy_fail "$f at home lost a write"
done
mount_ready "$b" "$m" "writeback_cache=off,state=$HY_TMP/state2,bopt_size=16M"
for f in w1 w2; do
	cmp -s <(dd if="$m/$f" bs=64K iflag=direct status=none) "$HY_TMP/ref/$f" ||
		hy_fail "$f after a remount differs from what was written"
done
hy_umount "$m"

# ---- 4. kill -9 in the middle of a reorganization ----------------------
b=$HY_TMP/b3 m=$HY_TMP/m3
mkdir -p "$b"
head -c 6M /dev/urandom >"$b/big"
(cd "$b" && md5sum big) >"$HY_TMP/sums3"
mount_ready "$b" "$m" "writeback_cache=off,state=$HY_TMP/state3,bopt_size=16M,reorg_rate=1M"
# shellcheck disable=SC2046
"$bin/hy-iogen" reader "$m/big" $(for o in $(seq 95 -1 0); do printf 'r:%d:65536 ' $((o * 65536)); done) ||
	hy_die "reading big failed"
"$HYBRIDCTL" reorganize "$m" --gap 3600 --always --quiet >"$HY_TMP/reorg3.out" 2>&1 &
rpid=$!
wait_for '.bopt.reorganization.copied_blocks > 0'
kill -9 "$HY_PID"
wait "$rpid" && hy_fail "reorganize said it succeeded though its daemon was killed"
fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
mount_ready "$b" "$m" "writeback_cache=off,state=$HY_TMP/state3,bopt_size=16M,reorg_rate=0"
[ "$(status bopt.clean_at_mount)" = false ] || hy_fail "the killed daemon's BOPT reads as clean"
mapped=$(status bopt.map_blocks)
[ "$mapped" -gt 0 ] && [ "$mapped" -lt 1536 ] ||
	hy_fail "after the crash the map holds $mapped blocks (some, not all, were expected)"
(cd "$m" && md5sum -c --quiet "$HY_TMP/sums3") || hy_fail "big is damaged after the crash"
"$HYBRIDCTL" explain "$m/big" --json | jq -e '([.ranges[].count] | add) == .blocks' >/dev/null ||
	hy_fail "explain after the crash does not add up"
"$HYBRIDCTL" reorganize "$m" --gap 3600 --always --quiet || hy_fail "reorganize after the crash failed"
[ "$(status bopt.map_blocks)" = 1536 ] || hy_fail "the second reorganization did not finish the plan"
(cd "$m" && md5sum -c --quiet "$HY_TMP/sums3") || hy_fail "big is damaged after the second run"
hy_umount "$m"

# ---- 5. writes into the BOPT, dirty, then home ------------------------
b=$HY_TMP/b4 m=$HY_TMP/m4
mkdir -p "$b"
head -c 1M /dev/urandom >"$b/f"
cp "$b/f" "$HY_TMP/f.orig"
opts="writeback_cache=off,cache=none,state=$HY_TMP/state4,bopt_size=8M,reorg_rate=0"
mount_ready "$b" "$m" "$opts"
for pass in 1 2 3; do
	# shellcheck disable=SC2046
	"$bin/hy-iogen" reader "$m/f" $(specs 13 200 77) || hy_die "reading f failed"
done
"$HYBRIDCTL" reorganize "$m" --gap 3600 --always --quiet || hy_fail "reorganize of f failed"
# hy-iogen writes a known pattern; it keeps f open until the fifo speaks
mkfifo "$HY_TMP/go"
before=$(stat -c %Y "$b/f")
"$bin/hy-iogen" holder "$m/f" w:$((13 * 4096)):4096 wait:"$HY_TMP/go" &
wpid=$!
wait_for '.bopt.dirty_blocks == 1'
cmp -s <(dd if="$b/f" bs=4096 skip=13 count=1 status=none) \
	<(dd if="$HY_TMP/f.orig" bs=4096 skip=13 count=1 status=none) ||
	hy_fail "a write to a relocated block went home at once"
dd if="$m/f" of="$HY_TMP/w13" bs=4096 skip=13 count=1 iflag=direct status=none
cmp -s "$HY_TMP/w13" <(dd if="$b/f" bs=4096 skip=13 count=1 status=none) &&
	hy_fail "the written block reads as the old one"
[ "$(stat -c %Y "$b/f")" -ge "$before" ] || hy_fail "the home file's time did not move"
[ "$(status bopt.bopt_writes)" -ge 1 ] || hy_fail "no write was counted in the BOPT"
out=$("$HYBRIDCTL" flush "$m") || hy_fail "hybridctl flush failed"
[ "$out" = "1 blocks written into the BOPT went home" ] || hy_fail "flush said: $out"
cmp -s "$HY_TMP/w13" <(dd if="$b/f" bs=4096 skip=13 count=1 status=none) ||
	hy_fail "after flush the home block is not the written one"
[ "$(status bopt.dirty_blocks)" = 0 ] || hy_fail "blocks are still dirty after flush"
echo >"$HY_TMP/go"
wait $wpid || hy_fail "the holder failed"
# the written pattern survives close, a remount, and explain still shows
# the block in the BOPT (it was written there, not moved home)
hy_umount "$m"
mount_ready "$b" "$m" "$opts"
cmp -s "$HY_TMP/w13" <(dd if="$m/f" bs=4096 skip=13 count=1 iflag=direct status=none) ||
	hy_fail "the written block changed after a remount"
"$HYBRIDCTL" explain "$m/f" --json | jq -e 'any(.ranges[]; .where == "bopt" and .first <= 13 and
	13 < .first + .count)' >/dev/null || hy_fail "block 13 is no longer in the BOPT"

# kill -9 with a dirty block: the journal keeps it, unmount sends it home;
# and a journal damaged after that record (one the map refuses: a second
# relocation of block 13) is set aside, keeping what came before
fid=$("$HYBRIDCTL" explain "$m/f" --json | jq -r .file_id)
"$bin/hy-iogen" holder "$m/f" w:$((77 * 4096)):4096 wait:"$HY_TMP/go" &
wpid=$!
wait_for '.bopt.dirty_blocks == 1'
dd if="$m/f" of="$HY_TMP/w77" bs=4096 skip=77 count=1 iflag=direct status=none
kill -9 "$HY_PID"
echo >"$HY_TMP/go"
wait $wpid # its close meets a dead mount; that is fine
fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
append_refused_record "$HY_TMP/state4/bopt-map.journal" "$fid" 13
mount_ready "$b" "$m" "$opts"
[ -f "$HY_TMP/state4/bopt-map.journal.damaged" ] || hy_fail "the damaged journal was not set aside"
[ "$(status bopt.dirty_blocks)" = 1 ] || hy_fail "the dirty block was not replayed"
cmp -s "$HY_TMP/w77" <(dd if="$m/f" bs=4096 skip=77 count=1 iflag=direct status=none) ||
	hy_fail "after kill -9 the written block is lost"
hy_umount "$m"
cmp -s "$HY_TMP/w77" <(dd if="$b/f" bs=4096 skip=77 count=1 status=none) ||
	hy_fail "unmount did not send the dirty block home"

# ---- 6. a new plan does not write over a dirty extent -------------------
b=$HY_TMP/b5 m=$HY_TMP/m5
mkdir -p "$b"
head -c 64K /dev/urandom >"$b/a"
head -c 64K /dev/urandom >"$b/c"
cp "$b/c" "$HY_TMP/c.orig"
opts="writeback_cache=off,cache=none,state=$HY_TMP/state5,bopt_size=8M,reorg_rate=0"
mount_ready "$b" "$m" "$opts"
for pass in 1 2 3; do
	# shellcheck disable=SC2046
	"$bin/hy-iogen" reader "$m/a" $(specs 5 1 9) || hy_die "reading a failed"
done
"$HYBRIDCTL" reorganize "$m" --gap 3600 --always --quiet || hy_fail "the first reorganization failed"
rm -f "$HY_TMP/go" && mkfifo "$HY_TMP/go"
"$bin/hy-iogen" holder "$m/a" w:$((5 * 4096)):4096 wait:"$HY_TMP/go" &
wpid=$!
wait_for '.bopt.dirty_blocks == 1'
dd if="$m/a" of="$HY_TMP/a5" bs=4096 skip=5 count=1 iflag=direct status=none
for pass in 1 2 3; do
	# shellcheck disable=SC2046
	"$bin/hy-iogen" reader "$m/c" $(specs 2 7 4 11) || hy_die "reading c failed"
done
# partial: a plan of c alone, from BOPT block 0, where a's blocks are
"$HYBRIDCTL" reorganize "$m" --gap 3600 --always --mode partial --quiet || hy_fail "the second reorganization failed"
cmp -s "$HY_TMP/a5" <(dd if="$m/a" bs=4096 skip=5 count=1 iflag=direct status=none) ||
	hy_fail "the dirty block of a was written over by the new plan"
[ "$(status bopt.dirty_blocks)" = 0 ] || hy_fail "the reorganization left a dirty block in the BOPT"
cmp -s "$HY_TMP/a5" <(dd if="$b/a" bs=4096 skip=5 count=1 status=none) ||
	hy_fail "the dirty block of a did not go home before it left the BOPT"
cmp -s "$m/c" "$HY_TMP/c.orig" || hy_fail "c reads wrong after the second reorganization"
echo >"$HY_TMP/go"
wait $wpid || hy_fail "the holder of a failed"
hy_umount "$m"
cmp -s "$HY_TMP/a5" <(dd if="$b/a" bs=4096 skip=5 count=1 status=none) ||
	hy_fail "the write to a did not reach home"
cmp -s "$b/c" "$HY_TMP/c.orig" || hy_fail "c changed at home"

# ---- 7. hybridctl reorganize --all ---------------------------------------
# (lib.sh gives every test a registry of its own: --all must not reach
# the mounts of the other tests running beside it)
mount_ready "$b" "$m" "$opts"
# --all: every mount of this user; a mount without a BOPT is passed over
mount_ready_none() {
	hy_mount "$1" "$2" -o "$3"
	wait_for_at "$2" '.mounts[0].daemon != null'
}
wait_for_at() {
	local i
	for i in $(seq 1 1200); do
		"$HYBRIDCTL" status "$1" --json 2>/dev/null | jq -e "$2" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	hy_fail "waited 60 s for $1: $2"
}
pid_m=$HY_PID
mount_ready_none "$HY_TMP/bn" "$HY_TMP/mn" "state=$HY_TMP/staten,bopt=none"
msg=$("$HYBRIDCTL" reorganize "$HY_TMP/mn" 2>&1)
[ $? = 2 ] && grep -q "no BOPT" <<<"$msg" || hy_fail "reorganize of a mount without a BOPT: $msg"
out=$("$HYBRIDCTL" reorganize --all --gap 3600 2>&1)
rc=$?
[ $rc = 0 ] || hy_fail "reorganize --all exited $rc: $out"
grep -q "$HY_TMP/mn: no BOPT" <<<"$out" || hy_fail "--all did not pass over the mount without a BOPT: $out"
grep -q "^reorganized $m " <<<"$out" || hy_fail "--all did not reorganize $m: $out"
[ -z "$("$HYBRIDCTL" reorganize --all --gap 3600 --quiet 2>&1)" ] ||
	hy_fail "reorganize --all --quiet printed something"
[ "$(find "$HY_TMP/run" -name '*.mount' | wc -l)" = 2 ] ||
	hy_fail "the private registry does not hold exactly this part's two mounts"
hy_umount "$HY_TMP/mn"
HY_PID=$pid_m
hy_umount "$m"
hy_pass
