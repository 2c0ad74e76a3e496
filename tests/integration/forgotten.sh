#!/bin/bash
# forgotten.sh - every path that changes a file's data knows the file's id,
# however its inode entry was made (issue 16, finding 3). The kernel forgets
# an inode it no longer uses (drop_caches here), and the daemon frees the
# entry that held the id; the next request on the file makes a new entry
# from a lookup, which knows no id. Then, with write-back blocks still
# dirty in the cache (cache_clean_rate=4K keeps them there):
#   a. truncate(2) by path to 0 and back to 300 blocks must read zeros,
#      not the cache's old dirty blocks written home over the truncation;
#   b. an O_TRUNC open, then the old size again: zeros too;
#   c. rm of the file lets the cache drop its blocks (forgotten_files),
#      instead of writing them home into the removed inode;
#   d. chmod through the mount takes the cache's metadata gate: the
#      blocks stay current (stale_files stays 0) and read back right.
. "$(dirname "$0")/lib.sh"

hy_need_root
hy_need_iogen
command -v perl >/dev/null || hy_skip "perl is missing (truncate(2) by path)"
hy_setup

B=$HY_TMP/b M=$HY_TMP/m
OPTS="state=$HY_TMP/s,cache_write=back,cache_clean_rate=4K,cache_size=8M,reca=off"
hy_mount_ready "$B" "$M" "$OPTS"

# forget_inodes: the kernel drops its unused dentries and inodes and sends
# FORGET for them
forget_inodes() {
	sync -f "$M" 2>/dev/null
	echo 2 >/proc/sys/vm/drop_caches
}

# nonzero_blocks FILE: how many of its 4 KiB blocks are not all zeros
nonzero_blocks() {
	perl -e 'open(F, "<", $ARGV[0]) or die "$ARGV[0]: $!"; my ($n, $b) = (0);
		while (read(F, $b, 4096)) { $n++ if $b =~ /[^\0]/ } print "$n\n"' "$1"
}

write_file() {
	head -c $((300 * 4096)) /dev/urandom >"$HY_TMP/ref" || hy_die "no random data"
	dd if="$HY_TMP/ref" of="$1" bs=64K status=none || hy_fail "$2: writing $1 failed"
}

# ---- a. truncate(2) by path after the kernel forgot the inode ----------
write_file "$M/a" a
forget_inodes
perl -e 'truncate($ARGV[0], 0) or die "truncate: $!"; truncate($ARGV[0], 300 * 4096) or die "truncate: $!"' "$M/a" ||
	hy_fail "a: truncate(2) failed"
n=$(nonzero_blocks "$M/a")
[ "$n" = 0 ] || hy_fail "a: after truncate(2) to 0 and to 300 blocks, $n blocks read back with old data"
hy_log "a: $n blocks with old data after truncate(2)"

# ---- b. open(O_TRUNC) after the kernel forgot the inode ----------------
write_file "$M/b" b
forget_inodes
perl -e 'open(F, ">", $ARGV[0]) or die "open: $!"; close(F); truncate($ARGV[0], 300 * 4096) or die "truncate: $!"' "$M/b" ||
	hy_fail "b: open(O_TRUNC) failed"
n=$(nonzero_blocks "$M/b")
[ "$n" = 0 ] || hy_fail "b: after open(O_TRUNC) and truncate(2) to 300 blocks, $n blocks read back with old data"

# ---- c. rm after the kernel forgot the inode ---------------------------
before=$(hy_status "$M" .cache.forgotten_files)
write_file "$M/c" c
forget_inodes
rm "$M/c" || hy_fail "c: rm failed"
after=$(hy_status "$M" .cache.forgotten_files)
[ "$after" -gt "$before" ] ||
	hy_fail "c: a removed file's dirty blocks stayed in the cache (forgotten_files $before -> $after, dirty_bytes $(hy_status "$M" .cache.dirty_bytes))"

# ---- d. chmod after the kernel forgot the inode ------------------------
write_file "$M/d" d
before=$(hy_status "$M" .cache.stale_files)
forget_inodes
chmod 600 "$M/d" || hy_fail "d: chmod failed"
cmp -s "$HY_TMP/ref" "$M/d" || hy_fail "d: the file reads back different after chmod"
after=$(hy_status "$M" .cache.stale_files)
[ "$after" = "$before" ] ||
	hy_fail "d: chmod through the mount made the cached blocks stale (stale_files $before -> $after): it passed the metadata gate"

hy_umount "$M"
[ "$HY_DAEMON_STATUS" = 0 ] || hy_fail "the daemon exited with status $HY_DAEMON_STATUS"
n=$(nonzero_blocks "$B/a")
[ "$n" = 0 ] || hy_fail "a: after unmount the backing file has $n blocks of old data"
n=$(nonzero_blocks "$B/b")
[ "$n" = 0 ] || hy_fail "b: after unmount the backing file has $n blocks of old data"
hy_pass
