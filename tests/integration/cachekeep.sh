#!/bin/bash
# cachekeep.sh - the persistent cache (issue 19.1): the SSD store keeps its
# lines across mounts, and a file changed while unmounted is never served
# stale. A named store (cache=), no front buffer (blocks go to store
# lines), write-back:
#   a. a clean remount serves its first reads from the store: SSD read
#      hits, and no miss, for a file read before the unmount (status:
#      cache.keep: kept lines and files, warm_hits);
#   b. a file grown while unmounted, and one rewritten at the same size
#      with its mtime put back (touch -d: its ctime still moves), are read
#      fresh, byte for byte (cache.keep.dropped.stale_files);
#   c. kill -9 of the daemon with fsync'd dirty blocks in the store, then
#      a remount: the dirty blocks went home (recovered_blocks, the file's
#      bytes), their file's lines were dropped (changed), the clean lines
#      of an untouched file are kept and served, and a file changed after
#      the kill is read fresh.
#   d. cache_keep=auto (the default): the store lies on the backing
#      directory's disk, so it keeps lines only when that disk does not
#      spin (its rotational flag from a sysfs of the test's own,
#      HYBRIDFS_SYSFS): spinning, a remount keeps nothing and the log says
#      why; not spinning, it keeps. (a-c mount with cache_keep=on: their
#      store shares the test's disk too.)
# Reads use O_DIRECT so that each reaches the daemon.
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"

b=$HY_TMP/b m=$HY_TMP/m
mkdir -p "$b" "$m"
for f in a s t e k; do
	head -c 128K /dev/urandom >"$HY_TMP/$f.ref"
	cp "$HY_TMP/$f.ref" "$b/$f"
done
head -c 512K /dev/urandom >"$HY_TMP/d.ref"
cp "$HY_TMP/d.ref" "$b/d"
opts="state=$HY_TMP/state,cache=$HY_TMP/store,cache_size=8M,front_buffer=0,cache_write=back"
opts="$opts,cache_clean_rate=4K,attr_timeout=0,entry_timeout=0"
base_opts=$opts
opts="$opts,cache_keep=on"

st() { hy_status "$m" ".cache.$1"; }
# rd NAME WHAT: reads NAME through the mount (O_DIRECT), compares it with NAME.ref
rd() {
	dd if="$m/$1" iflag=direct bs=64K status=none >"$HY_TMP/got" ||
		hy_fail "$2: cannot read $1 through the mount"
	cmp -s "$HY_TMP/got" "$HY_TMP/$1.ref" ||
		hy_fail "$2: $1 reads differently through the mount (stale?)"
}
# outside NAME: rewrites NAME in the backing folder at the same size and
# puts its modification time back (its ctime moves all the same)
outside() {
	local was
	was=$(stat -c %y "$b/$1")
	head -c "$(stat -c %s "$b/$1")" /dev/urandom >"$HY_TMP/$1.ref"
	dd if="$HY_TMP/$1.ref" of="$b/$1" conv=notrunc status=none
	touch -d "$was" "$b/$1"
	[ "$(stat -c %y "$b/$1")" = "$was" ] || hy_die "touch -d did not put $1's mtime back"
}

# ---- mount 1: the blocks enter the store ----
hy_mount_ready "$b" "$m" "$opts"
# every category in write-back (d's writes in c stay dirty)
args=""
for c in unknown random-consumer random-producer-consumer sequential-producer-consumer \
	archival-consumer large-file-generator; do
	args="$args $c.write=back $c.admit.write.sequential=normal $c.admit.read.sequential=normal"
	args="$args $c.seq_cutoff=mount"
done
# shellcheck disable=SC2086
"$HYBRIDCTL" policy set "$m" $args >/dev/null || hy_fail "hybridctl policy set failed"
for f in a s t e k d; do
	rd "$f" "mount 1"
	rd "$f" "mount 1, again"
done
used=$(st ssd_used)
[ "$used" -gt 0 ] || hy_fail "mount 1: no block entered the store (ssd_used $used)"
# a stamp is kept once the clock has moved past its ctime's tick (50 ms):
# the files' ctimes are older than this by more than the sleep
sleep 0.2
hy_umount "$m"

# ---- changes while unmounted ----
head -c 132K /dev/urandom >"$HY_TMP/s.ref"
cp "$HY_TMP/s.ref" "$b/s" # s: new bytes, 4 KiB more
outside t                 # t: new bytes, the same size and mtime

# ---- mount 2: a. warm; b. fresh ----
hy_mount_ready "$b" "$m" "$opts"
kl=$(st keep.kept_lines) kf=$(st keep.kept_files)
hy_log "mount 2: kept $kl lines of $kf files (of $used lines in use at unmount)"
[ "$kf" -ge 6 ] || hy_fail "mount 2: $kf files kept, 6 were cached at the clean unmount"
[ "$kl" -ge 6 ] || hy_fail "mount 2: only $kl lines kept"
[ "$(st read_misses)" = 0 ] || hy_fail "mount 2: misses before any read: $(st read_misses)"
rd a "mount 2, first read of a"
hits=$(st read_hits_ssd) misses=$(st read_misses) warm=$(st keep.warm_hits)
hy_log "mount 2, a: $hits SSD hits ($warm from kept lines), $misses misses"
[ "$hits" -gt 0 ] || hy_fail "mount 2: a's first read had no SSD hit"
[ "$misses" = 0 ] || hy_fail "mount 2: a's first read missed $misses blocks"
[ "$warm" -gt 0 ] || hy_fail "mount 2: no hit counted from kept lines"
rd s "mount 2, s grown outside"
rd t "mount 2, t rewritten outside with its mtime put back"
stale=$(st keep.dropped.stale_files)
[ "$stale" = 2 ] || hy_fail "mount 2: $stale kept files found changed, expected 2 (s, t)"
[ "$(st keep.verified_files)" -ge 1 ] || hy_fail "mount 2: a was not adopted"

# ---- c. kill -9 with dirty blocks journaled ----
# d stays open until the kill: closing a file with dirty blocks sends the
# cleaner to it first (a closed file's blocks go home soonest)
head -c 512K /dev/urandom >"$HY_TMP/d.ref"
exec 9<>"$m/d"
dd if="$HY_TMP/d.ref" bs=64K conv=notrunc,fsync status=none >&9 ||
	hy_fail "writing d through the mount failed"
dirty=$(st ssd_dirty)
hy_log "before kill -9: $dirty dirty lines"
[ "$dirty" -gt 0 ] || hy_fail "no dirty line before the kill (write-back expected)"
hy_kill9 "$m"
exec 9>&-
outside e # changed after the kill
hy_mount_ready "$b" "$m" "$opts"
rec=$(st recovered_blocks)
hy_log "mount 3: $rec blocks recovered; kept $(st keep.kept_lines) lines of" \
	"$(st keep.kept_files) files; dropped $(st keep.dropped.changed_lines) lines of" \
	"$(st keep.dropped.changed_files) files written home," \
	"$(st keep.dropped.unverifiable_lines) unverifiable"
[ "$rec" -gt 0 ] || hy_fail "mount 3: no dirty block was written home"
[ "$(st keep.dropped.changed_files)" -ge 1 ] ||
	hy_fail "mount 3: d's lines were not dropped after its recovery"
[ "$(st keep.kept_files)" -ge 2 ] || hy_fail "mount 3: fewer than 2 files kept (a, k, e)"
rd k "mount 3, k (unchanged, not used on mount 2)"
rd a "mount 3, a (unchanged)"
[ "$(st read_misses)" = 0 ] || hy_fail "mount 3: a and k missed $(st read_misses) blocks"
[ "$(st keep.warm_hits)" -gt 0 ] || hy_fail "mount 3: no hit from kept lines"
rd d "mount 3, d after recovery"
rd e "mount 3, e changed after the kill"
[ "$(st keep.dropped.stale_files)" -ge 1 ] || hy_fail "mount 3: e was not found changed"
hy_umount "$m"

# ---- d: cache_keep=auto on the backing disk, spinning or not
sys=$HY_TMP/sys
read -r maj min < <(stat -c '%Hd %Ld' "$b")
mkdir -p "$sys/dev/block" "$sys/devices/disk/queue"
ln -s ../../devices/disk "$sys/dev/block/$maj:$min"
for spins in 1 0; do
	echo "$spins" >"$sys/devices/disk/queue/rotational"
	before=$(grep -c "not kept across mounts" "$HY_TMP/daemon.log")
	HYBRIDFS_SYSFS=$sys hy_mount_ready "$b" "$m" "$base_opts"
	rd a "mount d$spins, a"
	hy_umount "$m"
	HYBRIDFS_SYSFS=$sys hy_mount_ready "$b" "$m" "$base_opts"
	kept=$(st keep.kept_lines)
	if [ "$spins" = 1 ]; then
		[ "$kept" = 0 ] || hy_fail "d: $kept lines kept from a store on the spinning backing disk"
		[ "$(st keep.across_mounts)" = false ] ||
			hy_fail "d: status does not say the store keeps nothing across mounts"
		[ "$(grep -c "not kept across mounts" "$HY_TMP/daemon.log")" -gt "$before" ] ||
			hy_fail "d: the log does not say why nothing is kept"
		grep "not kept across mounts" "$HY_TMP/daemon.log" | tail -n 1 |
			grep -qF "\"$HY_TMP/store\" lies on" ||
			hy_fail "d: the notice does not name the store cache= names: $(grep "not kept across" "$HY_TMP/daemon.log" | tail -n 1)"
	else
		[ "$kept" -gt 0 ] || hy_fail "d: nothing kept on a backing disk that does not spin"
	fi
	hy_umount "$m"
done
hy_log "d: auto keeps nothing on a spinning backing disk, and keeps on one that does not spin"
hy_pass
