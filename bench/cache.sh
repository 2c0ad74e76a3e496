#!/bin/bash
# cache.sh - the SSD cache (issue 5) on a real mount: fio random reads over
# a working set larger than the page cache the run is given but smaller
# than the cache store, and the front buffer's heat filter.
#
#   1. Random read, one run, phases in this order, the page cache dropped
#      (echo 3 > /proc/sys/vm/drop_caches) before each:
#        native    fio on the backing folder itself (no FUSE)
#        nocache   hybridfs with cache=none
#        cache     hybridfs with the store on a private tmpfs (the "SSD"),
#                  heat_threshold=0 and the default 16M front buffer: a
#                  warm-up (sequential read of the file, 1 MiB requests,
#                  twice) puts every block into the store, then the caches
#                  are dropped and the same random read is measured.
#      The measured read: fio randread, 4 KiB, psync, iodepth 1, --jobs
#      jobs, buffered, --runtime seconds, over one --data file. The page
#      cache it is given: a memory cgroup limited to --mem (v1
#      memory.limit_in_bytes, or v2 memory.max), holding fio and, in the
#      hybridfs phases, the daemon too (its anonymous memory, the mount's
#      page cache and the backing file's page cache all share --mem). The
#      tmpfs store is formatted (hybridctl format-cache) outside that
#      cgroup, so its pages are not charged to it. Without a memory cgroup
#      the reads are O_DIRECT (FUSE direct_io) and the table says so.
#   2. Heat filter: the same workload on fresh mounts and fresh stores,
#      front_buffer=--front (small, so it evicts), once per --thresholds
#      value: heat_threshold=1.5 (the default), 1.15, and 0 (every block
#      evicted from DRAM goes to the store): fio randread 4 KiB, O_DIRECT (every read reaches
#      the cache), random_distribution=zipf:--zipf, --ios reads, one job,
#      fio's fixed seed (randrepeat=1: both runs read the same blocks).
#      Reported: ssd_bytes_written, the hit ratios, heat_admitted/refused.
#   After each hybridfs phase: `hybridctl status --json` (.daemon.cache),
#   the daemon's VmRSS; dram_bytes_per_line and front_meta_bytes from it.
#
# Usage (as root: drop_caches, tmpfs, memory cgroup):
#   bench/cache.sh [BUILD_DIR] [--dir DIR] [--data SIZE] [--mem SIZE]
#                  [--store SIZE] [--runtime SEC] [--jobs N] [--front SIZE]
#                  [--zipf THETA] [--ios N] [--thresholds "1.5 1.15 0"]
#                  [--keep] [--out FILE]
# BUILD_DIR: a built tree with hybridfs and hybridctl (default $BUILD, else
# /work/build when it exists, else _build at the top of the source tree).
# --dir: where the backing folder goes (default /var/tmp; a real disk).
# Defaults: --data 512M --mem 192M --store 768M --runtime 20 --jobs 2
# --front 8M --zipf 1.1 --ios 200000 --thresholds "1.5 1.15 0" (the last
# must be 0: the ratios are to it). Needs fio and jq (apt-get install
# fio jq; the script installs fio with apt-get when it is missing).
# About 5 minutes with the defaults.
set -u
set -o pipefail

NAME=$(basename "$0")
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-}
DIR=/var/tmp
DATA=512M
MEM=192M
STORE=768M
RUNTIME=20
JOBS=2
FRONT=8M
ZIPF=1.1
IOS=200000
THRESHOLDS="1.5 1.15 0"
KEEP=0
OUT=""

say() { printf '%s: %s\n' "$NAME" "$*" >&2; }
die() {
	say "ERROR: $*"
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--dir) DIR=$2 && shift ;;
	--data) DATA=$2 && shift ;;
	--mem) MEM=$2 && shift ;;
	--store) STORE=$2 && shift ;;
	--runtime) RUNTIME=$2 && shift ;;
	--jobs) JOBS=$2 && shift ;;
	--front) FRONT=$2 && shift ;;
	--zipf) ZIPF=$2 && shift ;;
	--ios) IOS=$2 && shift ;;
	--thresholds) THRESHOLDS=$2 && shift ;;
	--keep) KEEP=1 ;;
	--out) OUT=$2 && shift ;;
	-h | --help)
		sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	-*) die "unknown option $1 (see --help)" ;;
	*) BUILD=$1 ;;
	esac
	shift
done
if [ -z "$BUILD" ]; then
	if [ -x /work/build/hybridfs ]; then BUILD=/work/build; else BUILD=$SRCDIR/_build; fi
fi
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || die "no build tree at $BUILD"
HYBRIDFS=$BUILD/hybridfs
HYBRIDCTL=$BUILD/hybridctl
[ -x "$HYBRIDFS" ] && [ -x "$HYBRIDCTL" ] || die "no hybridfs/hybridctl in $BUILD (build first)"
[ "$(id -u)" = 0 ] || die "run as root (drop_caches, tmpfs mount, memory cgroup)"
if ! command -v fio >/dev/null; then
	say "fio is missing: apt-get install -y fio"
	apt-get install -y fio >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y fio >/dev/null; } ||
		die "cannot install fio (apt-get install fio)"
fi
command -v jq >/dev/null || die "jq is needed (apt-get install jq)"
command -v fusermount3 >/dev/null || die "fusermount3 is needed (apt-get install fuse3)"
case " $THRESHOLDS " in *" 0 "*) ;; *) die "--thresholds must include 0" ;; esac
case $RUNTIME$JOBS$IOS in *[!0-9]*) die "--runtime, --jobs and --ios take whole numbers" ;; esac
case $(stat -f -c %T "$DIR") in
tmpfs | ramfs) die "--dir $DIR is on tmpfs; give a folder on a real disk" ;;
esac

bytes() { # SIZE with K/M/G suffix -> bytes
	local n=${1%[kKmMgG]} u=${1#"${1%[kKmMgG]}"}
	case $n in '' | *[!0-9]*) die "bad size '$1' (e.g. 512M)" ;; esac
	case $u in
	'') echo "$n" ;;
	[kK]) echo $((n << 10)) ;;
	[mM]) echo $((n << 20)) ;;
	[gG]) echo $((n << 30)) ;;
	esac
}
DATA_B=$(bytes "$DATA") MEM_B=$(bytes "$MEM") STORE_B=$(bytes "$STORE") || exit 1
[ "$DATA_B" -gt "$MEM_B" ] || die "--data ($DATA) must be larger than --mem ($MEM)"
[ "$STORE_B" -gt $((DATA_B + DATA_B / 16)) ] || die "--store ($STORE) must be larger than --data ($DATA) plus its journal"
avail=$(df -Pk "$DIR" | awk 'NR == 2 { print $4 }')
[ "$avail" -gt $((DATA_B / 1024 + 1048576)) ] || die "$DIR: not enough free space for $DATA"
memfree=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
[ "$memfree" -gt $(((STORE_B + 2 * DATA_B) / 1024)) ] || die "not enough RAM for a $STORE tmpfs store"

TMP=$(mktemp -d "$DIR/hybridfs-cache.XXXXXX") || die "mktemp in $DIR failed"
TMP=$(cd "$TMP" && pwd -P)
LOGS=$TMP/logs
mkdir -p "$LOGS" "$TMP/backing" "$TMP/mnt" "$TMP/ssd"
MOUNTS=""
DPID=""
CG=""
TMPFS=""
cleanup() {
	local rc=$? m
	trap - EXIT INT TERM HUP
	for m in $MOUNTS; do
		mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -u -z "$m"; }
	done
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
		kill "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	[ -n "$TMPFS" ] && mountpoint -q "$TMPFS" && umount "$TMPFS"
	[ -n "$CG" ] && [ -d "$CG" ] && rmdir "$CG" 2>/dev/null
	if [ "$KEEP" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
	[ "$rc" = 0 ] || say "failed (exit $rc); cleaned up"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

drop_caches() { sync && echo 3 >/proc/sys/vm/drop_caches; }

# ---- the memory cgroup ---------------------------------------------------
DIRECT=0
CGFILE=""
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
	CG=/sys/fs/cgroup/hybridfs-bench.$$
	CGFILE=memory.max
elif [ -d /sys/fs/cgroup/memory ]; then
	CG=/sys/fs/cgroup/memory/hybridfs-bench.$$
	CGFILE=memory.limit_in_bytes
fi
if [ -n "$CG" ] && mkdir "$CG" 2>/dev/null && echo "$MEM_B" >"$CG/$CGFILE" 2>/dev/null; then
	say "memory cgroup $CG: $CGFILE=$MEM_B"
else
	[ -n "$CG" ] && rmdir "$CG" 2>/dev/null
	CG=""
	DIRECT=1
	say "WARNING: no memory cgroup here; the random reads use O_DIRECT instead"
fi
# in_cg COMMAND...: runs COMMAND inside the memory cgroup (exec: same pid)
in_cg() {
	if [ -n "$CG" ]; then
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"
	else
		"$@"
	fi
}

# ---- mounts --------------------------------------------------------------
# store_fresh: a fresh tmpfs with a freshly formatted store of --store bytes
store_fresh() {
	[ -n "$TMPFS" ] && mountpoint -q "$TMPFS" && umount "$TMPFS"
	TMPFS=$TMP/ssd
	mount -t tmpfs -o size=$((STORE_B / 1048576 + 16))M,mode=700 hybridfs-bench-ssd "$TMPFS" ||
		die "cannot mount a tmpfs on $TMPFS"
	"$HYBRIDCTL" format-cache "$TMPFS/store" --size "$STORE" >>"$LOGS/format.log" 2>&1 ||
		die "format-cache failed (see $LOGS/format.log)"
}
# mount_fs TAG OPTIONS: fresh state folder, daemon in the cgroup
mount_fs() {
	local i
	rm -rf "$TMP/state"
	# not through in_cg (a function: $! would be a subshell's pid)
	if [ -n "$CG" ]; then
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" \
			"$HYBRIDFS" "$TMP/backing" "$TMP/mnt" -f -o "state=$TMP/state,$2" \
			>>"$LOGS/daemon-$1.log" 2>&1 &
	else
		"$HYBRIDFS" "$TMP/backing" "$TMP/mnt" -f -o "state=$TMP/state,$2" \
			>>"$LOGS/daemon-$1.log" 2>&1 &
	fi
	DPID=$!
	MOUNTS="$TMP/mnt"
	for i in $(seq 1 600); do
		"$HYBRIDCTL" status "$TMP/mnt" --json 2>/dev/null | jq -e '.mounts[0].daemon != null' \
			>/dev/null 2>&1 && return 0
		kill -0 "$DPID" 2>/dev/null || die "the daemon exited (see $LOGS/daemon-$1.log)"
		sleep 0.05
	done
	die "the mount of $TMP/mnt did not come up (see $LOGS/daemon-$1.log)"
}
umount_fs() {
	local i
	sync
	fusermount3 -u "$TMP/mnt" || die "cannot unmount $TMP/mnt"
	for i in $(seq 1 1200); do
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$DPID" 2>/dev/null && die "daemon $DPID still running 60 s after unmount"
	wait "$DPID"
	local rc=$?
	[ "$rc" = 0 ] || die "daemon exited with $rc (see $LOGS)"
	DPID=""
}
# snap TAG: the cache's counters and the daemon's RSS
snap() {
	"$HYBRIDCTL" status --json "$TMP/mnt" | jq '.mounts[0].daemon.cache' >"$LOGS/$1.cache.json" ||
		die "hybridctl status failed"
	awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status" >"$LOGS/$1.rss"
}
cv() { jq -r ".$2" "$LOGS/$1.cache.json"; }

# ---- fio -----------------------------------------------------------------
# run_fio TAG [options]: fio in the cgroup, JSON into $LOGS/TAG.json
run_fio() {
	local tag=$1
	shift
	in_cg fio --output-format=json --output="$LOGS/$tag.json" --name="$tag" \
		--ioengine=psync --group_reporting "$@" 2>"$LOGS/$tag.err" || {
		cat "$LOGS/$tag.err" >&2
		die "fio $tag failed"
	}
}
# fr TAG -> "iops mean_us p99_us"
fr() {
	jq -r '.jobs[0].read | "\(.iops) \(.clat_ns.mean / 1000) \(.clat_ns.percentile["99.000000"] / 1000)"' \
		"$LOGS/$1.json"
}
randread() { # TAG DIR
	drop_caches
	run_fio "$1" --filename="$2/data" --rw=randread --bs=4k --iodepth=1 \
		--numjobs="$JOBS" --size="$DATA_B" --time_based --runtime="$RUNTIME" \
		--invalidate=1 --direct="$DIRECT"
	say "  $1: $(fr "$1") (IOPS, mean us, p99 us)"
}

# ---- 1. random read: native, no cache, cache ----------------------------
say "making the $DATA file in $TMP/backing"
head -c "$DATA_B" /dev/urandom >"$TMP/backing/data" || die "cannot write the data file"
sync

say "phase native"
randread native "$TMP/backing"

say "phase nocache (cache=none)"
mount_fs nocache "cache=none"
randread nocache "$TMP/mnt"
snap nocache
umount_fs

say "phase cache (store $STORE on tmpfs, heat_threshold=0)"
store_fresh
mount_fs cache "cache=$TMPFS/store,cache_size=$STORE,heat_threshold=0"
for pass in 1 2; do
	drop_caches
	run_fio "warmup$pass" --filename="$TMP/mnt/data" --rw=read --bs=1M --size="$DATA_B" \
		--invalidate=1
done
snap warmup
say "  after warm-up: $(cv warmup ssd_used) store lines used of $(cv warmup ssd_lines)"
randread cache "$TMP/mnt"
snap cache
umount_fs

# ---- 2. heat filter ------------------------------------------------------
heat_run() { # TAG THRESHOLD
	store_fresh
	mount_fs "$1" "cache=$TMPFS/store,cache_size=$STORE,front_buffer=$FRONT,heat_threshold=$2"
	drop_caches
	run_fio "$1" --filename="$TMP/mnt/data" --rw=randread --bs=4k --iodepth=1 \
		--numjobs=1 --size="$DATA_B" --number_ios="$IOS" --direct=1 \
		--random_distribution=zipf:"$ZIPF" --randrepeat=1
	snap "$1"
	say "  $1: ssd_bytes_written $(cv "$1" ssd_bytes_written), hits dram/ssd/miss" \
		"$(cv "$1" read_hits_dram)/$(cv "$1" read_hits_ssd)/$(cv "$1" read_misses)"
	umount_fs
}
say "heat filter: zipf:$ZIPF, $IOS reads, front_buffer=$FRONT, thresholds $THRESHOLDS"
for th in $THRESHOLDS; do
	heat_run "heat$th" "$th"
done

# ---- report --------------------------------------------------------------
calc() { awk "BEGIN { $* }"; }
f1() { calc "printf \"%.${2:-0}f\", $1"; }
read -r n_iops _ _ <<<"$(fr native)"
mem_note="page cache: memory cgroup of $MEM (fio; fio + daemon for hybridfs)"
[ "$DIRECT" = 1 ] && mem_note="no memory cgroup: O_DIRECT reads (FUSE direct_io), no page cache"
hit() { # TAG FIELD -> share of reads
	calc "d = $(cv "$1" read_hits_dram) + $(cv "$1" read_hits_ssd) + $(cv "$1" read_misses); printf \"%.3f\", d ? $(cv "$1" "$2") / d : 0"
}
table=$TMP/table.md
{
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), one run"
	echo "- machine: $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), $(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) RAM, kernel $(uname -r)"
	echo "- backing: $(df -PT "$TMP" | awk 'NR == 2 { print $1 " (" $2 ")" }'), rotational=$(cat "/sys/block/$(basename "$(df -P "$TMP" | awk 'NR == 2 { print $1 }')")/queue/rotational" 2>/dev/null || echo '?'); store: tmpfs"
	echo "- hybridfs: $HYBRIDFS ($("$HYBRIDFS" --version 2>&1 | head -n 1)); fio $(fio --version)"
	echo "- $mem_note; working set $DATA, store $STORE"
	echo
	echo "| randread 4 KiB, QD1 x $JOBS jobs, ${RUNTIME}s | IOPS | ratio | mean us | p99 us | read hits DRAM / SSD / miss |"
	echo "|---|--:|--:|--:|--:|--:|"
	for t in native nocache cache; do
		read -r i m p <<<"$(fr $t)"
		hits="-"
		[ $t = cache ] && hits="$(hit cache read_hits_dram) / $(hit cache read_hits_ssd) / $(hit cache read_misses)"
		echo "| $t | $(f1 "$i") | $(f1 "$i / $n_iops" 2) | $(f1 "$m" 1) | $(f1 "$p" 0) | $hits |"
	done
	echo
	echo "Store after the warm-up: $(cv warmup ssd_used) of $(cv warmup ssd_lines) lines;" \
		"dram_bytes_per_line $(cv cache dram_bytes_per_line), front_meta_bytes $(cv cache front_meta_bytes)" \
		"(front buffer $(cv cache dram_blocks) blocks); daemon VmRSS: nocache $(cat "$LOGS/nocache.rss") KiB," \
		"cache $(cat "$LOGS/cache.rss") KiB."
	echo
	echo "| heat filter: zipf:$ZIPF, $IOS reads, O_DIRECT, front_buffer=$FRONT | IOPS | ssd_bytes_written | admitted / refused | hit DRAM | hit SSD | miss | dram_bytes_per_line | front_meta_bytes |"
	echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|"
	for th in $THRESHOLDS; do
		t=heat$th
		read -r i m p <<<"$(fr $t)"
		echo "| heat_threshold=$th | $(f1 "$i") | $(cv $t ssd_bytes_written) | $(cv $t heat_admitted) / $(cv $t heat_refused) | $(hit $t read_hits_dram) | $(hit $t read_hits_ssd) | $(hit $t read_misses) | $(cv $t dram_bytes_per_line) | $(cv $t front_meta_bytes) |"
	done
	echo
	w0=$(cv heat0 ssd_bytes_written)
	for th in $THRESHOLDS; do
		[ "$th" = 0 ] && continue
		w=$(cv "heat$th" ssd_bytes_written)
		echo "SSD writes, heat_threshold=$th / heat_threshold=0: $(calc "printf \"%.3f\", $w0 ? $w / $w0 : 0")" \
			"($(calc "printf \"%.1f\", $w0 ? 100 * (1 - $w / $w0) : 0")% fewer)."
	done
} >"$table"
cat "$table"
[ -n "$OUT" ] && cp "$table" "$OUT" && say "table written to $OUT"
say "logs (fio JSON, cache counters, daemon logs) in $LOGS$([ "$KEEP" = 1 ] || echo ', removed at exit; --keep keeps them')"
