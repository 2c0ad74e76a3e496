#!/bin/bash
# cache.sh - the SSD cache on real mounts:
#   a. a full store (1M, no front buffer, write-back): 8 MiB of writes all
#      succeed and read back equal; the status shows blocks bypassed or
#      evicted; after unmount the backing directory equals the reference;
#   b. `hybridctl flush` sends every dirty block home while mounted: the
#      backing files are complete and the status shows 0 dirty bytes;
#   c. a store from `hybridctl format-cache` is claimed by a mount that
#      names it (cache=PATH), and the status names it;
#   d. an ext4 image as cache= is refused, saying ext4, the image unchanged;
#   e. a copy of another mount's store is refused, saying whose it is;
#   f. a damaged store is refused with a message; cache=none then mounts;
#   g. a file changed in the backing directory while mounted is never read
#      from a stale cached copy;
#   h. session write-back: after the last close, the cleaner sends the
#      file's dirty blocks home with no flush (polled, never slept for).
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"
export LC_ALL=C

# refused NAME BACKING MOUNTPOINT OPTIONS: the daemon must exit with a
# nonzero status; what it said is in $HY_TMP/NAME.err. (It mounts before
# it opens its state and stores, so the mount may show for a moment before
# the refusal takes it away.) A daemon still serving after 60 s is a
# failure, unmounted then.
refused() {
	local name=$1 b=$2 mnt=$3 pid i rc
	mkdir -p "$b" "$mnt"
	"$HYBRIDFS" "$b" "$mnt" -f -o "$4" >"$HY_TMP/$name.err" 2>&1 &
	pid=$!
	HY_PIDS="$HY_PIDS $pid"
	HY_MOUNTS="$HY_MOUNTS $mnt"
	for i in $(seq 1 1200); do
		hy_exited "$pid" && break
		sleep 0.05
	done
	if ! hy_exited "$pid"; then
		hy_fail "$name: the mount with -o $4 was not refused; it said: $(cat "$HY_TMP/$name.err")"
		fusermount3 -u "$mnt"
	fi
	wait "$pid"
	rc=$?
	hy_forget_pid "$pid"
	hy_is_mounted "$mnt" && hy_fail "$name: the refused mount is still there"
	if [ "$rc" = 0 ]; then
		hy_fail "$name: the daemon exited with status 0 for -o $4"
		return 1
	fi
	return 0
}

# said NAME PATTERN WHAT: the refusal's message matches PATTERN (grep -E -i)
said() {
	grep -qEi -e "$2" "$HY_TMP/$1.err" ||
		hy_fail "$1: the refusal does not say $3: $(cat "$HY_TMP/$1.err")"
}

# ---- a. a full store: every write succeeds, nothing is lost -----------
b=$HY_TMP/ba m=$HY_TMP/ma ref=$HY_TMP/refa
mkdir -p "$ref"
for i in 0 1 2 3 4 5 6 7; do
	head -c 1M /dev/urandom >"$ref/f$i"
done
# one file written in odd pieces (sub-4K, unaligned)
head -c 300000 /dev/urandom >"$ref/odd"
hy_mount_ready "$b" "$m" "state=$HY_TMP/sa,cache_size=1M,front_buffer=0,cache_write=back"
for i in 0 1 2 3 4 5 6 7; do
	dd if="$ref/f$i" of="$m/f$i" bs=64K status=none || hy_fail "a: writing f$i failed"
done
dd if="$ref/odd" of="$m/odd" bs=1000 status=none || hy_fail "a: writing odd failed"
for f in f0 f1 f2 f3 f4 f5 f6 f7 odd; do
	cmp -s "$ref/$f" "$m/$f" || hy_fail "a: $f reads back different through the full cache"
	dd if="$m/$f" bs=4K iflag=direct status=none | cmp -s - "$ref/$f" ||
		hy_fail "a: $f reads back different with O_DIRECT"
done
st=$(hy_status "$m" '.cache | "bypassed \(.bypassed), ssd_evictions \(.ssd_evictions), ssd_lines \(.ssd_lines)"')
hy_log "a: $st"
hy_status "$m" '.cache.bypassed + .cache.ssd_evictions > 0' | grep -qx true ||
	hy_fail "a: 9 MiB through a 1M store, yet nothing was bypassed or evicted ($st)"
# the DRAM the store's metadata holds, per line in use and per line of the
# store (issue 19): both shown, equal once every line is used
dm=$(hy_status "$m" '.cache | "\(.ssd_meta_bytes) \(.dram_bytes_per_line) \(.dram_bytes_per_store_line) \(.ssd_used) \(.ssd_lines)"')
hy_log "a: ssd_meta_bytes, per line used, per store line, used, lines: $dm"
hy_status "$m" '.cache | .ssd_meta_bytes > 0 and .dram_bytes_per_store_line > 0 and
	.dram_bytes_per_line >= .dram_bytes_per_store_line and
	(.ssd_used < .ssd_lines or .dram_bytes_per_line == .dram_bytes_per_store_line)' |
	grep -qx true || hy_fail "a: the status's DRAM per line is inconsistent: $dm"
hy_umount "$m"
for f in f0 f1 f2 f3 f4 f5 f6 f7 odd; do
	cmp -s "$ref/$f" "$b/$f" || hy_fail "a: after unmount the backing $f differs"
done

# ---- b. hybridctl flush completes the backing directory --------------
b=$HY_TMP/bb m=$HY_TMP/mb
# a slow cleaner, so that the blocks are still dirty when flush comes
hy_mount_ready "$b" "$m" "state=$HY_TMP/sb,cache_write=back,cache_clean_rate=4K"
for i in 0 1 2 3; do
	dd if="$ref/f$i" of="$m/f$i" bs=4K status=none || hy_fail "b: writing f$i failed"
done
dd if="$ref/odd" of="$m/odd" bs=1000 status=none || hy_fail "b: writing odd failed"
hy_log "b: before flush $(hy_status "$m" .cache.dirty_bytes) bytes dirty"
# flush is not rate-limited: the bound (30 s for 4 MiB) only turns a hang
# into a failure
rc=0
out=$(timeout 30 "$HYBRIDCTL" flush "$m" 2>&1) || rc=$?
if [ "$rc" = 124 ]; then
	hy_fail "b: hybridctl flush still runs after 30 s (4 MiB dirty, cache_clean_rate=4K: does flush wait for the rate-limited cleaner's pass?)"
	# the unmount's own flush would wait the same way
	hy_kill9 "$m"
else
	[ "$rc" = 0 ] || hy_fail "b: hybridctl flush failed (exit status $rc): $out"
	hy_log "b: flush said: $out"
	for f in f0 f1 f2 f3 odd; do
		cmp -s "$ref/$f" "$b/$f" ||
			hy_fail "b: after hybridctl flush the backing $f differs (still mounted)"
	done
	d=$(hy_status "$m" .cache.dirty_bytes)
	[ "$d" = 0 ] || hy_fail "b: after hybridctl flush the status shows $d dirty bytes"
	hy_umount "$m"
fi

# ---- c. a formatted store, claimed by the mount that names it --------
b=$HY_TMP/bc m=$HY_TMP/mc store=$HY_TMP/store.img
"$HYBRIDCTL" format-cache "$store" --size 4M >"$HY_TMP/format.out" 2>&1 ||
	hy_fail "c: format-cache failed: $(cat "$HY_TMP/format.out")"
hy_mount_ready "$b" "$m" "state=$HY_TMP/sc,cache=$store"
[ "$(hy_status "$m" '.cache != null')" = true ] || hy_fail "c: the mount on $store has no cache"
"$HYBRIDCTL" status "$m" --json >"$HY_TMP/c.json"
grep -qF "\"$store\"" "$HY_TMP/c.json" ||
	hy_fail "c: hybridctl status --json does not name the store \"$store\" (.mounts[0].daemon.cache: $(jq -c '.mounts[0].daemon.cache | {write_policy, policy, ssd_lines}' "$HY_TMP/c.json"))"
if ! cp "$ref/f0" "$m/f0" || ! cmp -s "$ref/f0" "$m/f0"; then
	hy_fail "c: f0 did not go through the mount"
fi
hy_umount "$m"
cmp -s "$ref/f0" "$b/f0" || hy_fail "c: after unmount the backing f0 differs"
# the store is now this mount's: it mounts again
hy_mount_ready "$b" "$m" "state=$HY_TMP/sc,cache=$store"
hy_umount "$m"

# ---- d. an ext4 image is not a store ---------------------------------
mkfs=$(command -v mkfs.ext4 || true)
for dir in /usr/sbin /sbin; do
	[ -n "$mkfs" ] || { [ -x "$dir/mkfs.ext4" ] && mkfs=$dir/mkfs.ext4; }
done
if [ -n "$mkfs" ]; then
	img=$HY_TMP/ext4.img
	truncate -s 4M "$img"
	"$mkfs" -q -F "$img" >/dev/null 2>&1 || hy_die "mkfs.ext4 failed on $img"
	cp "$img" "$HY_TMP/ext4.copy"
	refused ext4 "$HY_TMP/bd" "$HY_TMP/md" "state=$HY_TMP/sd,cache=$img" && said ext4 ext4 "ext4"
	cmp -s "$img" "$HY_TMP/ext4.copy" || hy_fail "d: the refused mount changed the ext4 image"
else
	hy_log "d: mkfs.ext4 is missing (package e2fsprogs): the ext4 check is left out"
fi

# ---- e. another mount's store ----------------------------------------
# $store is claimed by the mount of $HY_TMP/bc (c.); a copy given to a
# mount of another backing directory with its own state
cp "$store" "$HY_TMP/claimed.copy"
cp "$store" "$HY_TMP/claimed.orig"
refused other "$HY_TMP/be" "$HY_TMP/me" "state=$HY_TMP/se,cache=$HY_TMP/claimed.copy" &&
	said other "(store of|another|other) mount|not of mount|claimed" "whose store it is"
cmp -s "$HY_TMP/claimed.copy" "$HY_TMP/claimed.orig" ||
	hy_fail "e: the refused mount changed the other mount's store"

# ---- f. a damaged store ----------------------------------------------
head -c 4096 /dev/urandom | dd of="$store" conv=notrunc status=none
refused damaged "$HY_TMP/bc" "$HY_TMP/mc" "state=$HY_TMP/sc,cache=$store" &&
	said damaged "store|damaged|magic|corrupt" "what is wrong with the store"
hy_mount_ready "$HY_TMP/bc" "$HY_TMP/mc" "state=$HY_TMP/sc,cache=none"
[ "$(hy_status "$HY_TMP/mc" '.cache == null')" = true ] || hy_fail "f: cache=none mounted with a cache"
cmp -s "$ref/f0" "$HY_TMP/mc/f0" || hy_fail "f: f0 differs on the cache=none mount"
hy_umount "$HY_TMP/mc"

# ---- g. a file changed outside the mount is not read stale -----------
b=$HY_TMP/bg m=$HY_TMP/mg
mkdir -p "$b"
cp "$ref/f1" "$b/x"
head -c 1M /dev/urandom >"$HY_TMP/x.new"
for pol in back through around; do
	cp "$ref/f1" "$b/x"
	hy_mount_ready "$b" "$m" "state=$HY_TMP/sg,cache_write=$pol,front_buffer=0,writeback_cache=off"
	# twice: the second read is served from the cache
	for pass in 1 2; do
		dd if="$m/x" bs=64K iflag=direct status=none | cmp -s - "$ref/f1" ||
			hy_fail "g ($pol): x reads wrong before the change (pass $pass)"
	done
	hits=$(hy_status "$m" '.cache.read_hits_ssd + .cache.read_hits_dram')
	[ "$hits" -gt 0 ] || hy_log "g ($pol): the second read was not a cache hit"
	# the same size, so only the data tells the versions apart
	dd if="$HY_TMP/x.new" of="$b/x" bs=64K conv=notrunc status=none
	dd if="$m/x" bs=64K iflag=direct status=none | cmp -s - "$HY_TMP/x.new" ||
		hy_fail "g ($pol): after x changed in the backing directory the mount reads old data (stale cache)"
	# a partial change: one block in the middle
	head -c 4096 /dev/urandom >"$HY_TMP/blk"
	dd if="$HY_TMP/blk" of="$b/x" bs=4096 seek=100 conv=notrunc status=none
	dd if="$HY_TMP/blk" of="$HY_TMP/x.new" bs=4096 seek=100 conv=notrunc status=none
	dd if="$m/x" bs=64K iflag=direct status=none | cmp -s - "$HY_TMP/x.new" ||
		hy_fail "g ($pol): after one block of x changed in the backing directory the mount reads old data"
	hy_log "g ($pol): stale_files $(hy_status "$m" .cache.stale_files)"
	hy_umount "$m"
	cmp -s "$b/x" "$HY_TMP/x.new" || hy_fail "g ($pol): the unmount wrote old cached data over x"
done

# ---- h. session write-back: the cleaner empties the file after close -
# hy-iogen writes 1 MiB and holds the file open until the fifo speaks:
# the blocks stay dirty while it is open; after the last close, with no
# flush, the status must come to 0 dirty bytes and the home file be whole.
# The file is there already (1 MiB of zeros): a write past a file's end
# goes home at once with its data, so only writes within it stay dirty.
b=$HY_TMP/bh m=$HY_TMP/mh
bin=${HY_TESTBIN:-$(dirname "$0")}
mkdir -p "$b"
head -c 1M /dev/zero >"$b/s"
hy_mount_ready "$b" "$m" "state=$HY_TMP/sh,cache_write=back,writeback_cache=off"
mkfifo "$HY_TMP/go"
"$bin/hy-iogen" holder "$m/s" w:0:1048576 wait:"$HY_TMP/go" &
wpid=$!
HY_PIDS="$HY_PIDS $wpid"
hy_wait_status "$m" '.cache.dirty_bytes > 0'
dd if="$m/s" of="$HY_TMP/s.ref" bs=64K iflag=direct status=none
[ "$(stat -c %s "$HY_TMP/s.ref")" = 1048576 ] || hy_fail "h: s does not read back 1 MiB"
echo >"$HY_TMP/go"
wait $wpid || hy_fail "h: the holder failed"
hy_forget_pid "$wpid"
if hy_wait_status "$m" '.cache.dirty_bytes == 0'; then
	cmp -s "$HY_TMP/s.ref" "$b/s" ||
		hy_fail "h: the status shows nothing dirty but the backing s differs (still mounted)"
else
	hy_fail "h: the cleaner did not write home the closed file's dirty blocks: $(hy_status "$m" '.cache | {dirty_bytes, cleaner_backlog, cleaned_blocks}')"
fi
hy_log "h: $(hy_status "$m" '.cache | "cleaned_blocks \(.cleaned_blocks)"')"
hy_umount "$m"
cmp -s "$HY_TMP/s.ref" "$b/s" || hy_fail "h: after unmount the backing s differs"

hy_pass
