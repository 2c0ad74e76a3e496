#!/bin/bash
# cachestamp.sh - the cache's own changes of a home file are not changes
# outside the mount (issue 16.18). The cache keeps, per file, the home
# ctime (and size) its blocks are current for; a request that finds them
# moved drops the file's blocks as stale (status: cache.stale_files).
# Changes made through the mount must move that stamp instead:
#   a. fallocate(2) through the mount, plain (the file grows) and with
#      FALLOC_FL_KEEP_SIZE: the file's cached blocks stay, no stale file;
#   b. the cleaner writing dirty blocks home (hybridctl flush): no stale
#      file, the blocks stay cached; the ctime it moves is logged (a
#      utimensat(2) cannot set a ctime back: see docs/reliability.md);
#   c. a change in the backing folder is still seen: a truncation there
#      drops the blocks, and reads give the new content;
#   d. BORG's write-back: blocks relocated into the BOPT, written through
#      the cache (dirty), flushed: the cache writes them into the BOPT and
#      BORG writes them home, which moves the ctime: neither the cache nor
#      BORG takes that for a change outside the mount;
#   e. rename, link, unlink of another name, setxattr and removexattr
#      through the mount: the file keeps its cached and relocated blocks.
# Reads use O_DIRECT so that each reaches the daemon.
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
command -v fallocate >/dev/null || hy_skip "fallocate(1) is missing (util-linux)"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"

b=$HY_TMP/b m=$HY_TMP/m
mkdir -p "$b" "$m"
head -c 256K /dev/urandom >"$HY_TMP/ref"
cp "$HY_TMP/ref" "$b/f"
head -c 1M /dev/urandom >"$HY_TMP/href"
cp "$HY_TMP/href" "$b/h"
bin=${HY_TESTBIN:-$(dirname "$0")}
opts="state=$HY_TMP/state,cache_write=back,cache_size=4M,cache_clean_rate=4K,bopt_size=8M"
hy_mount_ready "$b" "$m" "$opts,reorg_rate=0,attr_timeout=0,entry_timeout=0"

# rd: reads f through the mount with O_DIRECT; compares with $HY_TMP/ref
rd() {
	dd if="$m/f" iflag=direct bs=64K status=none >"$HY_TMP/got" ||
		hy_fail "$1: cannot read f through the mount"
	cmp -s "$HY_TMP/got" "$HY_TMP/ref" || hy_fail "$1: f reads differently through the mount"
}
st() { hy_status "$m" ".cache.$1"; }

# every category in write-back, so that dd's writes stay dirty
args=""
for c in unknown random-consumer random-producer-consumer sequential-producer-consumer \
	archival-consumer large-file-generator; do
	args="$args $c.write=back $c.admit.write.sequential=normal $c.admit.read.sequential=normal"
	args="$args $c.seq_cutoff=mount"
done
# shellcheck disable=SC2086
"$HYBRIDCTL" policy set "$m" $args >/dev/null || hy_fail "hybridctl policy set failed"

rd "first read" # the blocks enter the cache
rd "second read"
misses=$(st read_misses)
hits=$(st read_hits_dram)+$(st read_hits_ssd)
[ "$(st stale_files)" = 0 ] || hy_fail "stale files before any change: $(st stale_files)"

# a. fallocate through the mount
fallocate -n -o 0 -l 512K "$m/f" || hy_fail "fallocate --keep-size through the mount failed"
rd "after fallocate --keep-size"
[ "$(st stale_files)" = 0 ] ||
	hy_fail "fallocate --keep-size through the mount was taken for a change outside it:" \
		"cache.stale_files $(st stale_files)"
[ "$(st read_misses)" = "$misses" ] ||
	hy_fail "fallocate --keep-size through the mount dropped the file's cached blocks:" \
		"read misses $misses -> $(st read_misses)"
fallocate -o 128K -l 512K "$m/f" || hy_fail "fallocate through the mount failed"
head -c $((640 * 1024 - 256 * 1024)) /dev/zero >>"$HY_TMP/ref" # it grew to 640K
rd "after fallocate"
[ "$(st stale_files)" = 0 ] ||
	hy_fail "fallocate through the mount (the file grew) was taken for a change outside it:" \
		"cache.stale_files $(st stale_files)"
# the 256K cached before are still hits; what the allocation added is new
[ "$(st read_misses)" -le $((misses + 96)) ] ||
	hy_fail "fallocate through the mount dropped the file's cached blocks:" \
		"read misses $misses -> $(st read_misses)"
hy_log "fallocate: stale files $(st stale_files), read misses $misses -> $(st read_misses)," \
	"hits $((hits)) -> $(($(st read_hits_dram) + $(st read_hits_ssd)))"

# b. the cleaner writes home
# a handle held open: dd's close is not the last one, which would queue
# the blocks for the cleaner at once (session write-back); the cleaner's
# own pace (4 KiB/s) leaves them dirty until the flush
exec 3<"$m/f"
dd if=/dev/urandom of="$HY_TMP/blk" bs=4K count=8 status=none
dd if="$HY_TMP/blk" of="$m/f" bs=4K seek=4 conv=notrunc status=none ||
	hy_fail "cannot write f through the mount"
dd if="$HY_TMP/blk" of="$HY_TMP/ref" bs=4K seek=4 conv=notrunc status=none
[ "$(st dirty_bytes)" -gt 0 ] || hy_fail "the write left nothing dirty (cache_write=back)"
ctime0=$(stat -c %z "$b/f")
misses=$(st read_misses) stale=$(st stale_files)
"$HYBRIDCTL" flush "$m" >/dev/null || hy_fail "hybridctl flush failed"
[ "$(st dirty_bytes)" = 0 ] || hy_fail "dirty bytes after flush: $(st dirty_bytes)"
ctime1=$(stat -c %z "$b/f")
rd "after the cleaner wrote home"
[ "$(st stale_files)" = "$stale" ] ||
	hy_fail "the cleaner's writes home were taken for a change outside the mount:" \
		"cache.stale_files $(st stale_files)"
[ "$(st read_misses)" = "$misses" ] ||
	hy_fail "the cleaner's writes home dropped the file's cached blocks:" \
		"read misses $misses -> $(st read_misses)"
hy_log "the cleaner's write home: ctime $ctime0 -> $ctime1 (a ctime cannot be set back)"
exec 3<&-

# c. a change outside is still seen
stale=$(st stale_files)
truncate -s 100K "$b/f"
truncate -s 100K "$HY_TMP/ref"
rd "after a truncation in the backing folder"
[ "$(st stale_files)" -gt "$stale" ] ||
	hy_fail "a truncation in the backing folder was not counted as a change outside the mount"
# d. BORG's write-back of blocks the cache wrote into the BOPT
hot="r:53248:4096 r:8192:4096 r:401408:4096 r:131072:4096 r:774144:4096"
for pass in 1 2 3; do
	# shellcheck disable=SC2086
	"$bin/hy-iogen" reader "$m/h" $hot || hy_fail "reading h's hot blocks failed (pass $pass)"
done
"$HYBRIDCTL" reorganize "$m" --gap 3600 --always --quiet >"$HY_TMP/reorg.out" 2>&1 ||
	hy_fail "reorganize failed: $(cat "$HY_TMP/reorg.out")"
[ "$(hy_status "$m" .bopt.map_blocks)" -gt 0 ] || hy_fail "the reorganization relocated nothing"
exec 4<"$m/h"
dd if=/dev/urandom of="$HY_TMP/blk" bs=4K count=1 status=none
for blk in 13 2 98; do
	dd if="$HY_TMP/blk" of="$m/h" bs=4K seek=$blk conv=notrunc status=none ||
		hy_fail "cannot write h through the mount"
	dd if="$HY_TMP/blk" of="$HY_TMP/href" bs=4K seek=$blk conv=notrunc status=none
done
stale=$(st stale_files) bstale=$(hy_status "$m" .bopt.stale_files)
synced=$(hy_status "$m" .bopt.synced_blocks)
"$HYBRIDCTL" flush "$m" >/dev/null || hy_fail "hybridctl flush failed"
[ "$(hy_status "$m" .bopt.synced_blocks)" -gt "${synced:-0}" ] ||
	hy_fail "no BOPT block went home at the flush: the case did not happen"
dd if="$m/h" iflag=direct bs=64K status=none >"$HY_TMP/got" || hy_fail "cannot read h"
cmp -s "$HY_TMP/got" "$HY_TMP/href" || hy_fail "h reads differently through the mount"
[ "$(st stale_files)" = "$stale" ] ||
	hy_fail "BORG's write-back home was taken by the cache for a change outside the mount:" \
		"cache.stale_files $stale -> $(st stale_files)"
[ "$(hy_status "$m" .bopt.stale_files)" = "$bstale" ] ||
	hy_fail "BORG's write-back home was taken by BORG for a change outside the mount:" \
		"bopt.stale_files $bstale -> $(hy_status "$m" .bopt.stale_files)"
exec 4<&-

# e. rename, link, unlink of another name and xattrs through the mount move
# h's ctime, not its data: the cache and BORG keep its blocks
rdh() {
	dd if="$m/$2" iflag=direct bs=64K status=none >"$HY_TMP/got" || hy_fail "$1: cannot read $2"
	cmp -s "$HY_TMP/got" "$HY_TMP/href" || hy_fail "$1: $2 reads differently through the mount"
}
rdh "before the name changes" h
stale=$(st stale_files) bstale=$(hy_status "$m" .bopt.stale_files) misses=$(st read_misses)
mv "$m/h" "$m/h2" || hy_fail "rename through the mount failed"
rdh "after a rename" h2
ln "$m/h2" "$m/h3" || hy_fail "link through the mount failed"
rdh "after a link" h2
rm "$m/h3" || hy_fail "unlink of the second name failed"
rdh "after an unlink of another name" h2
if command -v setfattr >/dev/null && setfattr -n user.hy -v 1 "$m/h2" 2>/dev/null; then
	rdh "after setxattr" h2
	setfattr -x user.hy "$m/h2" || hy_fail "removexattr through the mount failed"
	rdh "after removexattr" h2
else
	hy_log "e: xattrs left out (no setfattr, or the backing filesystem takes no user xattrs)"
fi
[ "$(st stale_files)" = "$stale" ] ||
	hy_fail "a name or xattr change through the mount was taken by the cache for a change" 		"outside it: cache.stale_files $stale -> $(st stale_files)"
[ "$(hy_status "$m" .bopt.stale_files)" = "$bstale" ] ||
	hy_fail "a name or xattr change through the mount was taken by BORG for a change outside" 		"it: bopt.stale_files $bstale -> $(hy_status "$m" .bopt.stale_files)"
[ "$(st read_misses)" = "$misses" ] ||
	hy_fail "a name or xattr change through the mount dropped h's cached blocks:" 		"read misses $misses -> $(st read_misses)"

hy_umount "$m"
cmp -s "$b/f" "$HY_TMP/ref" || hy_fail "after unmount the backing f differs from the reference"
cmp -s "$b/h2" "$HY_TMP/href" || hy_fail "after unmount the backing h2 differs from the reference"
hy_pass
