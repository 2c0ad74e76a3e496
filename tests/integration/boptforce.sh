#!/bin/bash
# boptforce.sh - bopt=DEVICE with a filesystem on it is refused "without
# force": the force exists (-o bopt_force), and the refusal names it
# (issue 16, finding 15). Cases (root):
#   file-refused    bopt=FILE, FILE an ext4 image: refused, the message
#                   says what to do (a file is never written over: remove it
#                   or name another path), the image is untouched
#   file-forced     the same with bopt_force: still refused (force is for
#                   devices: a mistyped path must not cost a user's file),
#                   the image untouched
#   file-removed    the image removed: a BOPT file is made there
#   device-refused  bopt=/dev/loopN over an ext4 image: refused, naming
#                   bopt_force, the filesystem still there
#   device-forced   the same with bopt_force: the mount uses the device,
#                   and the next mount, without bopt_force, too
. "$(dirname "$0")/lib.sh"
hy_setup
hy_need_root
hy_need_iogen
command -v mkfs.ext4 >/dev/null || hy_skip "mkfs.ext4 is missing (package e2fsprogs)"
command -v blkid >/dev/null || hy_skip "blkid is missing (package util-linux)"
LOOP=""
cleanup_all() {
	local rc=$?
	for m in $HY_MOUNTS; do fusermount3 -u -z "$m" 2>/dev/null; done
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

# forced CASE TARGET OPTIONS: mounts, the BOPT in use is TARGET
forced() {
	local what=$1 target=$2 path
	hy_mount_ready "$B" "$M" "$3"
	path=$(hy_status "$M" .bopt.path)
	[ "$path" = "$target" ] || hy_fail "$what: the BOPT in use is \"$path\", not $target"
	cmp -s "$M/f" - <<<data || hy_fail "$what: f reads wrong"
	hy_umount "$M"
	[ "${HY_DAEMON_STATUS:-0}" = 0 ] || hy_fail "$what: the daemon exited with status $HY_DAEMON_STATUS"
	[ "$(blkid -o value -s TYPE "$target" 2>/dev/null)" = ext4 ] &&
		hy_fail "$what: $target still shows ext4 to libblkid"
}

# --- file-refused, file-forced
IMG=$HY_TMP/ext4.img
truncate -s 8M "$IMG" && mkfs.ext4 -q -F "$IMG" >/dev/null 2>&1 || hy_die "mkfs.ext4 failed"
sum=$(md5sum <"$IMG")
refused file-refused "remove it or name another path" "bopt=$IMG,bopt_size=4M"
[ "$(md5sum <"$IMG")" = "$sum" ] || hy_fail "file-refused: the image was changed"
refused file-forced "never written over, even with bopt_force" "bopt=$IMG,bopt_size=4M,bopt_force"
[ "$(md5sum <"$IMG")" = "$sum" ] || hy_fail "file-forced: the image was changed"
rm "$IMG"
forced file-removed "$IMG" "bopt=$IMG,bopt_size=4M"

# --- device-refused, device-forced
DIMG=$HY_TMP/dev.img
truncate -s 8M "$DIMG" && mkfs.ext4 -q -F "$DIMG" >/dev/null 2>&1 || hy_die "mkfs.ext4 failed"
if LOOP=$(losetup -f --show "$DIMG" 2>/dev/null) && [ -b "$LOOP" ]; then
	refused device-refused "bopt_force" "bopt=$LOOP"
	[ "$(blkid -o value -s TYPE "$LOOP" 2>/dev/null)" = ext4 ] ||
		hy_fail "device-refused: the filesystem on $LOOP is gone"
	forced device-forced "$LOOP" "bopt=$LOOP,bopt_force"
	# ours now: no force needed
	forced device-again "$LOOP" "bopt=$LOOP"
	losetup -d "$LOOP" || hy_fail "cannot detach $LOOP"
	LOOP=""
else
	hy_log "no loop device: device-refused and device-forced not run"
fi

hy_pass
