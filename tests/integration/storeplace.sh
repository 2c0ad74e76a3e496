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

umount "$R" || hy_fail "cannot unmount the tmpfs $R"
hy_pass
