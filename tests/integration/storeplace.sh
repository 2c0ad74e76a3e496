#!/bin/bash
# storeplace.sh - where a store or BOPT that does not exist may be made
# (issue 16, finding 14): `-o cache=/dev/nonexist` made a 256 MiB file in
# /dev (RAM) and used it as a write-back cache. Cases (root):
#   dev-cache       cache=/dev/NAME that does not exist: refused, "no such
#                   device", nothing made in /dev
#   dev-bopt        the same for bopt=/dev/NAME
#   ram-new-cache   cache=FILE on a tmpfs, FILE missing: refused, not made
#   ram-new-bopt    bopt=FILE on a tmpfs, FILE missing: refused, not made
#   ram-store-back  a store made on a tmpfs by hybridctl format-cache (as
#                   plainly meant as it gets) is used, but write-through:
#                   write-back (the default for a named store) never lands
#                   on RAM, and cache_write=back there is refused
#   disk-new-cache  cache=FILE on a disk folder, FILE missing: made, and
#                   write-back as before (the rule is about RAM only)
#   device-back     a store on a loop device (its node in /dev, which is
#                   devtmpfs): write-back as before
#   default-ssd     (issue 19) the default state folder on another disk,
#                   one that does not spin (an ext4 on a loop device; the
#                   disks' rotational flags from a sysfs of the test's own,
#                   HYBRIDFS_SYSFS): the default store is made there, and
#                   status says so and why; the BOPT stays in the backing
#                   folder's hidden .hybridfs
#   default-same    the default state folder on the backing disk: the store
#                   stays with it, status says it is the backing disk
#   default-fast    the default state folder on the backing disk, which
#                   spins, and /var/tmp (HYBRIDFS_FAST_ROOT) on a disk that
#                   does not: the default store goes to /var/tmp/hybridfs-UID,
#                   write-through, status says why; a failed mount leaves
#                   nothing there
. "$(dirname "$0")/lib.sh"
hy_setup
hy_need_root
hy_need_iogen
DEVNAME=hy-nonexist-$$
R=$HY_TMP/ram
# whatever a broken daemon makes in /dev goes with the test, and the tmpfs
LOOP=""
cleanup_all() {
	local rc=$?
	rm -f "/dev/$DEVNAME" "/dev/$DEVNAME-bopt"
	for m in $HY_MOUNTS; do fusermount3 -u -z "$m" 2>/dev/null; done
	umount -l "$R" 2>/dev/null
	umount -l "$HY_TMP/ssd" 2>/dev/null
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	(exit "$rc")
	hy_cleanup
}
trap cleanup_all EXIT
B=$HY_TMP/b
M=$HY_TMP/m
mkdir -p "$B" "$M"
echo data >"$B/f"

# refused CASE WANT OPTIONS: the daemon refuses, saying WANT (lib.sh)
refused() { hy_mount_refused "$1" "$2" "$B" "$M" "$3"; }

# --- dev-cache, dev-bopt
refused dev-cache "cache=/dev/$DEVNAME: no such device" "cache=/dev/$DEVNAME,cache_size=1M"
[ -e "/dev/$DEVNAME" ] && hy_fail "dev-cache: made /dev/$DEVNAME ($(stat -c %s "/dev/$DEVNAME") bytes)"
rm -f "/dev/$DEVNAME"
refused dev-bopt "bopt=/dev/$DEVNAME-bopt: no such device" "bopt=/dev/$DEVNAME-bopt,bopt_size=1M"
[ -e "/dev/$DEVNAME-bopt" ] && hy_fail "dev-bopt: made /dev/$DEVNAME-bopt"
rm -f "/dev/$DEVNAME-bopt"

# --- ram-new-cache, ram-new-bopt
mkdir -p "$R"
mount -t tmpfs -o size=16M tmpfs "$R" || hy_die "cannot mount a tmpfs on $R"
refused ram-new-cache "RAM filesystem" "cache=$R/store,cache_size=1M"
[ -e "$R/store" ] && hy_fail "ram-new-cache: made $R/store"
refused ram-new-bopt "RAM filesystem" "bopt=$R/bopt,bopt_size=1M"
[ -e "$R/bopt" ] && hy_fail "ram-new-bopt: made $R/bopt"

# --- ram-store-back
"$HYBRIDCTL" format-cache "$R/store" --size 4M >"$HY_TMP/format.out" 2>&1 ||
	hy_fail "ram-store-back: format-cache failed: $(cat "$HY_TMP/format.out")"
hy_mount_ready "$B" "$M" "cache=$R/store"
policy=$(hy_status "$M" .cache.write_policy)
[ "$policy" = through ] || hy_fail "ram-store-back: a store on tmpfs is used write-$policy"
cat "$M/f" >/dev/null
hy_umount "$M"
refused ram-store-back "RAM filesystem" "cache=$R/store,cache_write=back"

# --- disk-new-cache
hy_mount_ready "$B" "$M" "cache=$HY_TMP/disk-store,cache_size=1M"
[ -f "$HY_TMP/disk-store" ] || hy_fail "disk-new-cache: the store was not made"
policy=$(hy_status "$M" .cache.write_policy)
[ "$policy" = back ] || hy_fail "disk-new-cache: a named store on a disk is used write-$policy"
hy_umount "$M"

# --- device-back: a store on a block device, whose node lies in /dev
# (devtmpfs), is on the device, not on RAM: write-back as named
truncate -s 8M "$HY_TMP/dev.img"
if LOOP=$(losetup -f --show "$HY_TMP/dev.img" 2>/dev/null) && [ -b "$LOOP" ]; then
	"$HYBRIDCTL" format-cache "$LOOP" >"$HY_TMP/format.out" 2>&1 ||
		hy_fail "device-back: format-cache $LOOP failed: $(cat "$HY_TMP/format.out")"
	hy_mount_ready "$B" "$M" "cache=$LOOP"
	policy=$(hy_status "$M" .cache.write_policy)
	[ "$policy" = back ] || hy_fail "device-back: a store on $LOOP is used write-$policy"
	hy_umount "$M"
	losetup -d "$LOOP" || hy_fail "cannot detach $LOOP"
	LOOP=""
else
	hy_log "no loop device: device-back not run"
fi

# --- default-ssd, default-same
S=$HY_TMP/sys
SSD=$HY_TMP/ssd
truncate -s 400M "$HY_TMP/ssd.img"
if command -v mkfs.ext4 >/dev/null && mkfs.ext4 -q -F "$HY_TMP/ssd.img" >/dev/null 2>&1 &&
	LOOP=$(losetup -f --show "$HY_TMP/ssd.img" 2>/dev/null) && [ -b "$LOOP" ] &&
	mkdir -p "$SSD" && mount "$LOOP" "$SSD"; then
	# the backing folder's disk spins, the loop device does not
	read -r BMAJ BMIN < <(stat -c '%Hd %Ld' "$B")
	read -r SMAJ SMIN < <(stat -c '%Hd %Ld' "$SSD")
	mkdir -p "$S/dev/block" "$S/devices/hdd/queue" "$S/devices/ssd/queue"
	echo 1 >"$S/devices/hdd/queue/rotational"
	echo 0 >"$S/devices/ssd/queue/rotational"
	ln -s ../../devices/hdd "$S/dev/block/$BMAJ:$BMIN"
	ln -s ../../devices/ssd "$S/dev/block/$SMAJ:$SMIN"
	B2=$HY_TMP/b2
	mkdir -p "$B2"
	echo data >"$B2/f"
	HYBRIDFS_SYSFS=$S HYBRIDFS_STATE_ROOT=$SSD/state hy_mount_ready "$B2" "$M" ""
	store=$(hy_status "$M" '.disks[] | select(.what == "store") | .path')
	why=$(hy_status "$M" '.disks[] | select(.what == "store") | .why')
	case $store in "$SSD"/state/*/cache) ;; *) hy_fail "default-ssd: the store is at '$store', not in $SSD/state" ;; esac
	case $why in *"does not spin"*) ;; *) hy_fail "default-ssd: status does not say why: $why" ;; esac
	[ "$(hy_status "$M" '.disks[] | select(.what == "store") | .disk')" = ssd ] ||
		hy_fail "default-ssd: the store's disk is not named ssd: $(hy_status "$M" .disks)"
	[ "$(hy_status "$M" '.disks[] | select(.what == "bopt") | .path')" = "$B2/.hybridfs/bopt" ] ||
		hy_fail "default-ssd: the BOPT is not in the hidden folder: $(hy_status "$M" .disks)"
	"$HYBRIDCTL" status "$M" | grep -q "^disks .*database" ||
		hy_fail "default-ssd: hybridctl status prints no disks line"
	hy_umount "$M"
	[ -f "$store" ] || hy_fail "default-ssd: no store left at $store"
	B3=$HY_TMP/b3
	mkdir -p "$B3"
	HYBRIDFS_SYSFS=$S hy_mount_ready "$B3" "$M" ""
	why=$(hy_status "$M" '.disks[] | select(.what == "store") | .why')
	case $why in *"backing disk"*) ;; *) hy_fail "default-same: status does not say it is the backing disk: $why" ;; esac
	hy_umount "$M"
	# default-fast (default-ssd's store out of the way: the disk is small)
	rm -rf "$SSD/state"
	B4=$HY_TMP/b4
	mkdir -p "$B4" "$SSD/fast"
	echo data >"$B4/f"
	HYBRIDFS_SYSFS=$S HYBRIDFS_FAST_ROOT=$SSD/fast hy_mount_ready "$B4" "$M" ""
	store=$(hy_status "$M" '.disks[] | select(.what == "store") | .path')
	why=$(hy_status "$M" '.disks[] | select(.what == "store") | .why')
	case $store in "$SSD/fast/hybridfs-$(id -u)/"*.cache) ;; *) hy_fail "default-fast: the store is at '$store', not in $SSD/fast/hybridfs-$(id -u)" ;; esac
	case $why in *"does not spin"*"backing disk"*) ;; *) hy_fail "default-fast: status does not say why: $why" ;; esac
	[ "$(hy_status "$M" '.cache.write_policy')" = through ] ||
		hy_fail "default-fast: the store is not write-through: $(hy_status "$M" '.cache.write_policy')"
	[ "$(stat -c %a "$SSD/fast/hybridfs-$(id -u)")" = 700 ] ||
		hy_fail "default-fast: the store's folder is not of mode 0700"
	cat "$M/f" >/dev/null
	hy_umount "$M"
	[ -f "$store" ] || hy_fail "default-fast: no store left at $store"
	# a folder at the name that is not the user's own is not used
	rm -rf "$SSD/fast/hybridfs-$(id -u)"
	mkdir -m 777 "$SSD/fast/hybridfs-$(id -u)"
	B5=$HY_TMP/b5
	mkdir -p "$B5"
	HYBRIDFS_SYSFS=$S HYBRIDFS_FAST_ROOT=$SSD/fast hy_mount_ready "$B5" "$M" ""
	why=$(hy_status "$M" '.disks[] | select(.what == "store") | .why')
	case $why in *"backing disk"*) case $why in "in $SSD"*) hy_fail "default-fast: a folder of mode 0777 was used: $why" ;; esac ;;
	*) hy_fail "default-fast: with a foreign folder, status says: $why" ;; esac
	hy_umount "$M"
	rm -rf "$SSD/fast/hybridfs-$(id -u)"
	# a mount that fails after the places are chosen (a bopt= file that
	# holds no BOPT) leaves no folder there
	head -c 1M /dev/urandom >"$HY_TMP/junk"
	HYBRIDFS_SYSFS=$S HYBRIDFS_FAST_ROOT=$SSD/fast "$HYBRIDFS" "$B5" "$M" -f \
		-o "bopt=$HY_TMP/junk" 2>"$HY_TMP/fail.log" &&
		hy_fail "default-fast: a mount with a junk bopt= came up"
	mountpoint -q "$M" && hy_fail "default-fast: the failed mount is mounted"
	[ ! -e "$SSD/fast/hybridfs-$(id -u)" ] || hy_fail "default-fast: a failed mount left $(ls -R "$SSD/fast")"
	umount "$SSD" || hy_fail "cannot unmount $SSD"
	losetup -d "$LOOP" || hy_fail "cannot detach $LOOP"
	LOOP=""
else
	hy_log "no loop device or mkfs.ext4: default-ssd not run"
	[ -n "$LOOP" ] && losetup -d "$LOOP"
	LOOP=""
fi

umount "$R" || hy_fail "cannot unmount the tmpfs $R"
hy_pass
