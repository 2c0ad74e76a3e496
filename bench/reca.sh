#!/bin/bash
# reca.sh - what ReCA's classification costs on the I/O path (issue 6):
# fio 4 KiB random reads through a mount with reca=on against reca=off,
# side by side, in alternating rounds (on, off, on, off, ...), so that
# drift of the machine falls on both alike.
#
#   Each round mounts a fresh daemon over the same backing folder, whose
#   one file (--data) is read once first so that the backing file is in
#   the page cache: every read then costs FUSE and the daemon, not the
#   disk, which is where a per-request cost shows most. fio: randread,
#   bs=4k, direct=1 (FUSE direct_io: every read reaches the daemon),
#   psync, --jobs jobs, --runtime seconds, fixed seed.
#   Three configurations, each with reca=on and reca=off:
#     cache=none   the classification and the policy lookup alone (the
#                  hint goes nowhere): ReCA's CPU cost, CPU-bound (the
#                  worst case: a request costs only FUSE and the daemon);
#     cache        the default cache (store in the state folder): the cost
#                  with the cache following the hints (random consumer:
#                  line 8K, writes around);
#     disk         cache=none over a --disk-data file, the page cache
#                  dropped before each run: reads that reach the disk, as
#                  ReCA's were.
#   Reported per configuration: the median IOPS of each side, the loss
#   (1 - on/off), and the daemon's CPU time per request (utime + stime
#   from /proc/PID/stat over the run, divided by the reads fio did): the
#   difference is what ReCA costs per request, wherever it runs (the
#   request path, or the profiler's writer thread for the mount's own
#   classes). The goal (ReCA): under 2%.
#
# Usage (as root): bench/reca.sh [BUILD_DIR] [--dir DIR] [--data SIZE]
#                  [--disk-data SIZE] [--runtime SEC] [--jobs N]
#                  [--rounds N] [--out FILE]
# Defaults: --dir /var/tmp --data 256M --disk-data 4G --runtime 10 --jobs 2
# --rounds 3 (about 6 minutes). Needs fio and jq.
set -u
set -o pipefail

. "$(dirname "$0")/script.sh"
DIR=/var/tmp
DATA=256M
DISK_DATA=4G
RUNTIME=10
JOBS=2
ROUNDS=3
OUT=""

say() { printf '%s: %s\n' "$NAME" "$*" >&2; }

while [ $# -gt 0 ]; do
	case $1 in
	--dir) DIR=$2 && shift ;;
	--data) DATA=$2 && shift ;;
	--disk-data) DISK_DATA=$2 && shift ;;
	--runtime) RUNTIME=$2 && shift ;;
	--jobs) JOBS=$2 && shift ;;
	--rounds) ROUNDS=$2 && shift ;;
	--out) OUT=$2 && shift ;;
	-h | --help) bench_help ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) BUILD=$1 ;;
	esac
	shift
done
bench_build hybridfs
HYBRIDFS=$BUILD/hybridfs
[ "$(id -u)" = 0 ] || die "run as root (mounts)"
command -v fio >/dev/null || die "fio is needed (apt-get install fio)"
command -v jq >/dev/null || die "jq is needed (apt-get install jq)"
case $RUNTIME$JOBS$ROUNDS in *[!0-9]*) die "--runtime, --jobs and --rounds take whole numbers" ;; esac

TMP=$(mktemp -d "$DIR/hybridfs-reca.XXXXXX") || die "mktemp in $DIR failed"
MNT=$TMP/mnt
DPID=""
cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	mountpoint -q "$MNT" && { fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT"; }
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
		kill "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT INT TERM HUP
mkdir -p "$TMP/backing" "$MNT"
say "writing the $DATA and $DISK_DATA data files"
fio --name=fill --filename="$TMP/backing/data" --size="$DATA" --rw=write --bs=1M \
	--output=/dev/null || die "fio could not write the data file"
fio --name=fill --filename="$TMP/backing/disk" --size="$DISK_DATA" --rw=write --bs=1M \
	--output=/dev/null || die "fio could not write the disk data file"

mount_with() { # OPTIONS: a fresh daemon and state folder
	rm -rf "$TMP/state"
	"$HYBRIDFS" "$TMP/backing" "$MNT" -f -o "state=$TMP/state,$1" 2>>"$TMP/daemon.log" &
	DPID=$!
	for _ in $(seq 1 600); do
		mountpoint -q "$MNT" && return 0
		kill -0 "$DPID" 2>/dev/null || die "the daemon exited: $(tail -5 "$TMP/daemon.log")"
		sleep 0.05
	done
	die "the mount did not appear"
}
umount_it() {
	fusermount3 -u "$MNT" || die "fusermount3 -u failed"
	wait "$DPID" 2>/dev/null
	DPID=""
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$DPID/stat"; }
run_fio() { # FILE SIZE: one fio run on the mount: "IOPS CPU-us-per-read"
	local t0 t1 out
	t0=$(cpu_ticks)
	out=$(fio --name=randread --filename="$MNT/$1" --size="$2" --rw=randread --bs=4k \
		--direct=1 --ioengine=psync --numjobs="$JOBS" --group_reporting --time_based \
		--runtime="$RUNTIME" --randrepeat=1 --output-format=json |
		jq -r '.jobs[0].read | "\(.iops | floor) \(.total_ios)"') || return 1
	t1=$(cpu_ticks)
	set -- $out
	awk -v i="$1" -v n="$2" -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%d %.2f\n", i, (b - a) * 1e6 / hz / n }'
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A RESULTS CPU
CONFIGS="cache=none cache disk"
for config in $CONFIGS; do
	opts_base="cache=none" file=data size=$DATA
	[ "$config" = cache ] && opts_base=""
	[ "$config" = disk ] && file=disk size=$DISK_DATA
	for round in $(seq 1 "$ROUNDS"); do
		for reca in on off; do
			if [ "$config" = disk ]; then
				sync
				echo 3 >/proc/sys/vm/drop_caches
			else
				cat "$TMP/backing/data" >/dev/null
			fi
			mount_with "${opts_base:+$opts_base,}reca=$reca"
			read -r v c <<<"$(run_fio "$file" "$size")" || die "fio failed"
			umount_it
			say "$config reca=$reca round $round: $v IOPS, daemon $c us CPU per read"
			RESULTS[$config,$reca]="${RESULTS[$config,$reca]:-} $v"
			CPU[$config,$reca]="${CPU[$config,$reca]:-} $c"
		done
	done
done

{
	echo "### ReCA classification: 4 KiB random read IOPS, reca=on vs reca=off"
	echo
	echo "fio randread bs=4k direct=1 psync numjobs=$JOBS runtime=${RUNTIME}s; $DATA file in"
	echo "the page cache (cache=none, cache), $DISK_DATA file read from the disk (disk);"
	echo "$ROUNDS alternating rounds; medians. CPU: the daemon's, per read."
	echo "Machine: $(nproc) vCPU, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r)."
	echo
	echo "| configuration | reca=off IOPS | reca=on IOPS | loss | CPU off | CPU on | rounds (on / off) |"
	echo "|---|---:|---:|---:|---:|---:|---|"
	for config in $CONFIGS; do
		on=$(echo "${RESULTS[$config,on]}" | median)
		off=$(echo "${RESULTS[$config,off]}" | median)
		con=$(echo "${CPU[$config,on]}" | median)
		coff=$(echo "${CPU[$config,off]}" | median)
		loss=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.1f%%", 100 * (1 - a / b) }')
		echo "| $config | $off | $on | $loss | $coff us | $con us | ${RESULTS[$config,on]# } / ${RESULTS[$config,off]# } |"
	done
} | bench_output
