#!/bin/bash
# rotational.sh - a backing directory on a disk that does not spin gets no
# BOPT by default: BORG's layout saves seeks, and an SSD has none to save
# (issue 18, item 7: never make a user's disk slower). The disk is asked
# through sysfs (queue/rotational, a partition's from its disk); the tests
# stand a sysfs of their own in for /sys (HYBRIDFS_SYSFS) so that the
# backing folder's device reads as they say. Cases:
#   ssd        rotational 0: no BOPT (status bopt null, no STATE/bopt made),
#              a notice that names bopt_on_ssd
#   ssd-on     the same with -o bopt_on_ssd: a BOPT
#   hdd        rotational 1: a BOPT, as without the check
#   partition  the device is a partition: its disk's queue says 0: no BOPT
#   unknown    no sysfs entry for the device: a BOPT (the disk cannot be
#              asked; the behaviour before the check)
#   kept       a default BOPT made while the disk read as rotational is
#              kept when it reads 0 later: it may hold blocks written
#              through the mount that are not home yet
. "$(dirname "$0")/lib.sh"
hy_setup
B=$HY_TMP/b
M=$HY_TMP/m
mkdir -p "$B" "$M"
echo data >"$B/f"
read -r MAJ MIN < <(stat -c '%Hd %Ld' "$B")
S=$HY_TMP/sys
export HYBRIDFS_SYSFS=$S

# fake_disk VALUE [partition]: the backing folder's device reads VALUE
fake_disk() {
	rm -rf "$S"
	mkdir -p "$S/dev/block" "$S/devices/disk/part"
	if [ "${2:-}" = partition ]; then
		mkdir -p "$S/devices/disk/queue"
		echo "$1" >"$S/devices/disk/queue/rotational"
		ln -s ../../devices/disk/part "$S/dev/block/$MAJ:$MIN"
	elif [ -n "$1" ]; then
		mkdir -p "$S/devices/disk/queue"
		echo "$1" >"$S/devices/disk/queue/rotational"
		ln -s ../../devices/disk "$S/dev/block/$MAJ:$MIN"
	fi
}

# case NAME WANT [OPTIONS]: WANT "bopt" or "none"
case_() {
	local name=$1 want=$2 state=$HY_TMP/s.$1 got
	shift 2
	# ready: the control socket opens after the mount shows, and a status
	# asked before it has no daemon part (a .bopt of null)
	hy_mount_ready "$B" "$M" "state=$state${1:+,$1}"
	got=$(hy_status "$M" '.bopt | if . == null then "none" else "bopt" end')
	[ "$got" = "$want" ] || hy_fail "$name: the mount has $got, want $want"
	if [ "$want" = none ]; then
		[ ! -e "$state/bopt" ] || hy_fail "$name: $state/bopt was made"
	else
		[ -e "$state/bopt" ] || hy_fail "$name: no $state/bopt"
	fi
	hy_umount "$M"
}

fake_disk 0
: >"$HY_TMP/daemon.log"
case_ ssd none
grep -q "does not spin.*bopt_on_ssd" "$HY_TMP/daemon.log" ||
	hy_fail "ssd: no notice naming bopt_on_ssd"
case_ ssd-on bopt bopt_on_ssd
fake_disk 1
case_ hdd bopt
fake_disk 0 partition
case_ partition none
fake_disk ""
case_ unknown bopt
# kept: made on a spinning disk, then the disk reads as an SSD
fake_disk 1
hy_mount "$B" "$M" -o "state=$HY_TMP/s.kept"
hy_umount "$M"
fake_disk 0
hy_mount_ready "$B" "$M" "state=$HY_TMP/s.kept"
[ "$(hy_status "$M" '.bopt != null')" = true ] || hy_fail "kept: the existing BOPT was left out"
hy_umount "$M"
hy_pass
