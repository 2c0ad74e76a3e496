#!/usr/bin/env bash
# splice.sh - spliced READ replies (issue 20, item 4; fs/ops_files.c): a
# read of blocks that are only home is answered from the backing file's
# pages through a pipe, and nothing else is.
#   1. the default mount: a file read cold is the file's bytes, and every
#      READ of it was spliced (fuse.spliced_reads, spliced_bytes); the
#      backing device counted them (reads, bytes_read) and ReCA saw the
#      reading process's bytes (processes[].bytes_read);
#   2. a file whose length is no multiple of a page, read whole and in
#      O_DIRECT reads of 1 MiB (the kernel's READs then reach max_read and
#      past the end): its bytes, no more;
#   3. blocks relocated into the BOPT (hybridctl reorganize) are read from
#      there, not from home: the relocated file, read cold, is its bytes,
#      after a write through the mount to a relocated block too, and its
#      READs that touch relocated blocks were not spliced (BOPT reads
#      counted); another file beside it, all home, still is;
#   4. splice=off: nothing spliced, the status says why, the bytes right.
# Counts, not times. Root: dropping the page cache needs it.
. "$(dirname "$0")/lib.sh"

hy_need_root
hy_need_iogen
command -v jq >/dev/null || hy_skip "jq is missing"
hy_setup
bin=${HY_TESTBIN:-$(dirname "$0")}
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
b=$HY_TMP/b m=$HY_TMP/m
st() { hy_status "$m" "$1"; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches || hy_skip "cannot drop the page cache"; }

# ---- 1. a cold read, spliced whole ----------------------------------------
mkdir -p "$b"
head -c $((6 * 1048576)) /dev/urandom >"$b/six" || hy_die "cannot write the file"
hy_mount_ready "$b" "$m" "state=$HY_TMP/state"
[ "$(st .fuse.splice)" = true ] || hy_fail "the default mount does not splice: $(st .fuse.splice_why)"
drop
r0=$(st '.fuse.requests.read // 0') s0=$(st .fuse.spliced_reads) y0=$(st .fuse.spliced_bytes)
d0=$(st .backing_device.reads) db0=$(st .backing_device.bytes_read)
dd if="$m/six" of="$HY_TMP/copy" bs=1M status=none || hy_fail "reading the file failed"
cmp -s "$b/six" "$HY_TMP/copy" || hy_fail "the bytes read are not the file's"
reads=$(($(st '.fuse.requests.read // 0') - r0)) spliced=$(($(st .fuse.spliced_reads) - s0))
bytes=$(($(st .fuse.spliced_bytes) - y0))
hy_log "6 MiB read cold: $reads READs, $spliced spliced, $bytes bytes"
[ "$reads" -ge 1 ] || hy_fail "no READ request counted (page cache not dropped?)"
[ "$spliced" = "$reads" ] || hy_fail "$spliced of $reads READs spliced, not all"
[ "$bytes" = $((6 * 1048576)) ] || hy_fail "spliced $bytes bytes of a 6 MiB file"
[ $(($(st .backing_device.reads) - d0)) = "$reads" ] ||
	hy_fail "the backing device counted $(($(st .backing_device.reads) - d0)) reads for $reads READs"
[ $(($(st .backing_device.bytes_read) - db0)) = "$bytes" ] ||
	hy_fail "the backing device counted $(($(st .backing_device.bytes_read) - db0)) bytes, not $bytes"
seen=$(st '[.processes[] | select(.name == "dd") | .bytes_read] | add // 0')
[ "$seen" -ge $((6 * 1048576)) ] || hy_fail "ReCA saw $seen bytes read by dd, not 6 MiB"

# ---- 2. an odd length, read whole and in O_DIRECT reads --------------------
head -c $((3 * 1048576 + 5000)) /dev/urandom >"$b/odd" || hy_die "cannot write odd"
drop
y0=$(st .fuse.spliced_bytes)
cat "$m/odd" >"$HY_TMP/copy" || hy_fail "reading odd failed"
cmp -s "$b/odd" "$HY_TMP/copy" || hy_fail "odd read whole is not its bytes"
[ $(($(st .fuse.spliced_bytes) - y0)) -ge $((3 * 1048576)) ] ||
	hy_fail "odd: only $(($(st .fuse.spliced_bytes) - y0)) bytes spliced"
dd if="$m/odd" of="$HY_TMP/copy" bs=1M iflag=direct status=none || hy_fail "O_DIRECT read of odd failed"
cmp -s "$b/odd" "$HY_TMP/copy" || hy_fail "odd read with O_DIRECT is not its bytes"

hy_umount "$m"

# ---- 3. relocated blocks come from the BOPT --------------------------------
# a new state folder: the access log holds the hot set's reads alone
head -c $((4 * 1048576)) /dev/urandom >"$b/hot" || hy_die "cannot write hot"
hy_mount_ready "$b" "$m" "state=$HY_TMP/state3,bopt_size=8M,reorg_rate=0"
# one block in each READ of the file, the last (past 4 x 1008 KiB) too
hot=(700 13 402 77 950 5 333 621 144 888 260 511 39 1003 456 190 1020)
specs() { local blk; for blk in "$@"; do printf 'r:%d:4096 ' $((blk * 4096)); done; }
for pass in 1 2 3; do
	# shellcheck disable=SC2046
	"$bin/hy-iogen" reader "$m/hot" $(specs "${hot[@]}") || hy_die "reading the hot set failed ($pass)"
done
"$HYBRIDCTL" reorganize "$m" --gap 3600 --always --quiet || hy_fail "reorganize failed"
ex=$("$HYBRIDCTL" explain "$m/hot" --json) || hy_fail "explain hot failed"
for blk in "${hot[@]}"; do
	jq -e --argjson b "$blk" \
		'any(.ranges[]; .where == "bopt" and .first <= $b and $b < .first + .count)' \
		<<<"$ex" >/dev/null || hy_fail "hot block $blk was not relocated"
done
# a relocated block written through the mount: its new bytes are in the BOPT
head -c 4096 /dev/urandom >"$HY_TMP/block"
dd if="$HY_TMP/block" of="$m/hot" bs=4096 seek=402 conv=notrunc status=none || hy_fail "writing block 402 failed"
cp "$b/hot" "$HY_TMP/hot.want"
dd if="$HY_TMP/block" of="$HY_TMP/hot.want" bs=4096 seek=402 conv=notrunc status=none
# home has the old block until the session's write-back: the new one is
# what a read must give either way
drop
r0=$(st '.fuse.requests.read // 0') s0=$(st .fuse.spliced_reads) p0=$(st .bopt.bopt_reads)
dd if="$m/hot" of="$HY_TMP/copy" bs=1M status=none || hy_fail "reading hot failed"
cmp -s "$HY_TMP/hot.want" "$HY_TMP/copy" || hy_fail "the relocated file read cold is not its bytes"
reads=$(($(st '.fuse.requests.read // 0') - r0)) spliced=$(($(st .fuse.spliced_reads) - s0))
hy_log "relocated file read cold: $reads READs, $spliced spliced"
[ "$reads" -ge 1 ] || hy_fail "no READ of the relocated file counted"
[ "$spliced" = 0 ] || hy_fail "$spliced READs of the relocated file were spliced from home"
[ $(($(st .bopt.bopt_reads) - p0)) -ge 1 ] || hy_fail "the relocated blocks were not read from the BOPT"
head -c $((2 * 1048576)) /dev/urandom >"$b/fresh" || hy_die "cannot write fresh"
drop
r0=$(st '.fuse.requests.read // 0') s0=$(st .fuse.spliced_reads)
cat "$m/fresh" >"$HY_TMP/copy" || hy_fail "reading fresh failed"
cmp -s "$b/fresh" "$HY_TMP/copy" || hy_fail "fresh is not its bytes"
reads=$(($(st '.fuse.requests.read // 0') - r0)) spliced=$(($(st .fuse.spliced_reads) - s0))
[ "$reads" -ge 1 ] && [ "$spliced" = "$reads" ] ||
	hy_fail "a home-only file beside it: $spliced of $reads READs spliced"
hy_umount "$m"

# ---- 4. splice=off -----------------------------------------------------------
hy_mount_ready "$b" "$m" "state=$HY_TMP/state2,bopt=none,splice=off"
[ "$(st .fuse.splice)" = false ] || hy_fail "splice=off splices"
[ "$(st .fuse.splice_why)" = "splice=off" ] || hy_fail "splice=off: the status says $(st .fuse.splice_why)"
drop
dd if="$m/six" of="$HY_TMP/copy" bs=1M status=none || hy_fail "reading with splice=off failed"
cmp -s "$b/six" "$HY_TMP/copy" || hy_fail "splice=off: the bytes read are not the file's"
[ "$(st .fuse.spliced_reads)" = 0 ] || hy_fail "splice=off spliced $(st .fuse.spliced_reads) READs"
hy_umount "$m"
hy_pass
