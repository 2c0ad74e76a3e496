#!/bin/bash
# reorg.sh - what a BORG reorganization costs and what it buys, on a real
# mount on this machine's disk.
#
#   1. Copy rate: every block of a DATA-MiB set of files is read once, in
#      1 MiB requests in a shuffled order (so the plan holds all of it), and
#      `hybridctl reorganize` carries the plan out: with no rate limit
#      (reorg_rate=0), then with reorg_rate=RATE to show the limiter. The
#      figures are the daemon's own (hybridctl status: copied blocks and the
#      reorganization's seconds, analysis and planning included).
#   2. The hot set: HOT scattered 4 KiB blocks of one DATA-MiB file are read
#      by one process in a fixed random order (O_DIRECT, through FUSE's
#      direct_io, so the kernel's page cache of the mount plays no part),
#      three times, and the mount is reorganized. Then, in ROUNDS rounds,
#      one pass is timed from home (a mount of the same folder with
#      bopt=none) and one from the BOPT (the reorganized mount), each
#      after dropping the page cache when root (the backing file's pages
#      would otherwise serve home reads from memory). The device layer
#      counts each pass's requests and seeks (a request that does not start
#      where the previous one on that device ended).
#   3. Writes to the hot set: one pass of HOT 4 KiB O_DIRECT writes in the
#      same order, timed, home (bopt=none), into the BOPT (bopt_writes=on:
#      each first write to a clean extent makes its dirty mark durable, one
#      journal fdatasync) and home with the copies dropped (bopt_writes=off),
#      each BOPT case on a state trained and reorganized afresh (a write
#      moves the home file's ctime, which makes older copies stale); then
#      the unmount, which sends the dirty blocks home, is timed too.
#
# Usage (root for dropping caches; else the home passes may be cached):
#   bench/reorg.sh [BUILD_DIR] [--dir DIR] [--data MIB] [--hot N]
#                  [--rate SIZE] [--rounds N] [--out FILE]
# BUILD_DIR is a built tree with tests/integration/hy-iogen (make check
# builds it; default: _build at the top of the source tree). --dir: where
# the temp folder goes (default /var/tmp; a real disk, not tmpfs).
set -u
set -o pipefail

NAME=$(basename "$0")
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD=""
DIR=/var/tmp
DATA=256
HOT=4096
RATE=64M
ROUNDS=3
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
	--hot) HOT=$2 && shift ;;
	--rate) RATE=$2 && shift ;;
	--rounds) ROUNDS=$2 && shift ;;
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
BUILD=${BUILD:-$SRCDIR/_build}
HYBRIDFS=$BUILD/hybridfs
HYBRIDCTL=$BUILD/hybridctl
IOGEN=$BUILD/tests/integration/hy-iogen
[ -x "$HYBRIDFS" ] && [ -x "$HYBRIDCTL" ] || die "no hybridfs/hybridctl in $BUILD (build first)"
[ -x "$IOGEN" ] || die "no $IOGEN: run 'make -C $BUILD tests/integration/hy-iogen'"
command -v jq >/dev/null || die "jq is needed"
case $DATA$HOT$ROUNDS in *[!0-9]*) die "--data, --hot and --rounds take whole numbers" ;; esac
[ "$HOT" -le $((DATA * 256)) ] || die "--hot $HOT is more than the file's $((DATA * 256)) blocks"

TMP=$(mktemp -d "$DIR/hybridfs-reorg.XXXXXX") || die "mktemp in $DIR failed"
MOUNTS=""
PIDS=""
cleanup() {
	local m p
	for m in $MOUNTS; do
		mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -u -z "$m"; }
	done
	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CAN_DROP=0
[ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/drop_caches ] && CAN_DROP=1
drop_caches() { [ $CAN_DROP = 1 ] && sync && echo 3 >/proc/sys/vm/drop_caches; }

# mount BACKING MOUNTPOINT OPTIONS: in the foreground, in the background;
# waits until its control socket answers
mount_fs() {
	local i
	mkdir -p "$1" "$2"
	"$HYBRIDFS" "$1" "$2" -f -o "$3" 2>>"$TMP/daemon.log" &
	PIDS="$PIDS $!"
	MOUNTS="$MOUNTS $2"
	for i in $(seq 1 600); do
		"$HYBRIDCTL" status "$2" --json 2>/dev/null | jq -e '.mounts[0].daemon != null' \
			>/dev/null 2>&1 && return 0
		sleep 0.05
	done
	die "the mount of $2 did not come up (see $TMP/daemon.log)"
}
umount_fs() {
	fusermount3 -u "$1" || die "cannot unmount $1"
	while mountpoint -q "$1"; do sleep 0.05; done
	wait 2>/dev/null # the daemon, once it has checkpointed
}
st() { "$HYBRIDCTL" status "$1" --json | jq -r ".mounts[0].daemon.$2"; }
now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# ---- 1. copy rate ------------------------------------------------------
say "making ${DATA} MiB of files"
NFILES=8
per=$((DATA / NFILES))
[ "$per" -ge 1 ] || die "--data must be at least $NFILES"
mkdir -p "$TMP/b1"
for f in $(seq 1 $NFILES); do
	head -c "${per}M" /dev/urandom >"$TMP/b1/f$f"
done
# pick K N SEED SIZE: K distinct units of SIZE bytes out of N, in a random
# order fixed by SEED, as hy-iogen read specs
pick() {
	awk -v k="$1" -v n="$2" -v seed="$3" -v size="$4" 'BEGIN {
		srand(seed)
		for (i = 0; i < n; i++) p[i] = i
		for (i = 0; i < k; i++) {
			j = i + int(rand() * (n - i)); t = p[i]; p[i] = p[j]; p[j] = t
			printf "r:%d:%d ", p[i] * size, size
		}
	}'
}
copy_run() { # OPTIONS -> COPY_MIB, COPY_SEC
	local m=$TMP/m1 f spec
	rm -rf "$TMP/s1"
	mount_fs "$TMP/b1" "$m" "state=$TMP/s1,writeback_cache=off,bopt_size=$((DATA + 64))M,$1"
	for f in $(seq 1 $NFILES); do
		spec=$(pick "$per" "$per" "$f" 1048576)
		# shellcheck disable=SC2086
		"$IOGEN" reader "$m/f$f" $spec || die "reading f$f failed"
	done
	drop_caches
	"$HYBRIDCTL" reorganize "$m" --gap 3600 --quiet || die "reorganize failed"
	COPY_MIB=$(($(st "$m" bopt.reorganization.copied_blocks) * 4096 / 1048576))
	COPY_SEC=$(st "$m" bopt.reorganization.seconds)
	umount_fs "$m"
}
say "copy rate: reorg_rate=0"
copy_run "reorg_rate=0"
mib0=$COPY_MIB sec0=$COPY_SEC
say "copy rate: reorg_rate=$RATE"
copy_run "reorg_rate=$RATE"
mib1=$COPY_MIB sec1=$COPY_SEC

# ---- 2. the hot set ----------------------------------------------------
say "the hot set: $HOT blocks of a ${DATA} MiB file"
mkdir -p "$TMP/b2"
head -c "${DATA}M" /dev/urandom >"$TMP/b2/big"
spec=$(pick "$HOT" $((DATA * 256)) 42 4096)
m=$TMP/m2
mount_fs "$TMP/b2" "$m" "state=$TMP/s2,writeback_cache=off,bopt_size=$((HOT / 256 + 16))M,reorg_rate=0"
for pass in 1 2 3; do
	# shellcheck disable=SC2086
	"$IOGEN" reader "$m/big" $spec || die "training pass $pass failed"
done
"$HYBRIDCTL" reorganize "$m" --gap 3600 --quiet || die "reorganize failed"
umount_fs "$m"

calc() { awk "BEGIN { print $* }"; }
pass() { # STATE OPTIONS DEVICE >>FILE: "seconds requests seeks"
	local r0 s0 t0 t1
	mount_fs "$TMP/b2" "$m" "state=$1,writeback_cache=off,$2"
	r0=$(st "$m" "$3.reads") s0=$(st "$m" "$3.seeks")
	drop_caches
	t0=$(now)
	# shellcheck disable=SC2086
	"$IOGEN" reader "$m/big" $spec || die "timed pass failed"
	t1=$(now)
	echo "$(calc "$t1 - $t0") $(($(st "$m" "$3.reads") - r0)) $(($(st "$m" "$3.seeks") - s0))" >>"$4"
	umount_fs "$m"
}
: >"$TMP/home" && : >"$TMP/bopt"
for round in $(seq 1 "$ROUNDS"); do
	say "round $round of $ROUNDS"
	pass "$TMP/s3" "bopt=none" backing_device "$TMP/home"
	pass "$TMP/s2" "bopt_size=$((HOT / 256 + 16))M" bopt.device "$TMP/bopt"
done
# writes: each BOPT case on a state trained and reorganized afresh
wspec=${spec//r:/w:}
train() { # STATE
	local pass
	rm -rf "$1"
	mount_fs "$TMP/b2" "$m" "state=$1,writeback_cache=off,bopt_size=$((HOT / 256 + 16))M,reorg_rate=0"
	for pass in 1 2 3; do
		# shellcheck disable=SC2086
		"$IOGEN" reader "$m/big" $spec || die "training pass $pass failed"
	done
	"$HYBRIDCTL" reorganize "$m" --gap 3600 --quiet || die "reorganize failed"
	umount_fs "$m"
}
wpass() { # STATE OPTIONS FILE: "write-seconds unmount-seconds"
	local t0 t1 t2
	mount_fs "$TMP/b2" "$m" "state=$1,writeback_cache=off,$2"
	drop_caches
	t0=$(now)
	# shellcheck disable=SC2086
	"$IOGEN" writer "$m/big" $wspec || die "write pass failed"
	t1=$(now)
	w=$(st "$m" "bopt.bopt_writes // 0")
	umount_fs "$m"
	t2=$(now)
	echo "$(calc "$t1 - $t0") $(calc "$t2 - $t1") $w" >>"$3"
}
: >"$TMP/w-home" && : >"$TMP/w-on" && : >"$TMP/w-off"
for round in $(seq 1 "$ROUNDS"); do
	say "writes, round $round of $ROUNDS"
	wpass "$TMP/s3" "bopt=none" "$TMP/w-home"
	train "$TMP/s4"
	wpass "$TMP/s4" "bopt_size=$((HOT / 256 + 16))M,bopt_writes=on" "$TMP/w-on"
	train "$TMP/s5"
	wpass "$TMP/s5" "bopt_size=$((HOT / 256 + 16))M,bopt_writes=off" "$TMP/w-off"
done

home_s=$(cut -d' ' -f1 "$TMP/home" | median) bopt_s=$(cut -d' ' -f1 "$TMP/bopt" | median)
home_r=$(cut -d' ' -f2 "$TMP/home" | median) bopt_r=$(cut -d' ' -f2 "$TMP/bopt" | median)
home_k=$(cut -d' ' -f3 "$TMP/home" | median) bopt_k=$(cut -d' ' -f3 "$TMP/bopt" | median)

{
	echo "Machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -r); temp folder on $(df --output=source "$TMP" | tail -1) ($(stat -f -c %T "$TMP")); page cache dropped before each timed step: $([ $CAN_DROP = 1 ] && echo yes || echo no)"
	echo
	echo "| copy (${DATA} MiB planned) | copied | seconds | MiB/s |"
	echo "|---|--:|--:|--:|"
	printf '| reorg_rate=0 | %s MiB | %.2f | %.0f |\n' "$mib0" "$sec0" "$(calc "$mib0 / $sec0")"
	printf '| reorg_rate=%s | %s MiB | %.2f | %.0f |\n' "$RATE" "$mib1" "$sec1" "$(calc "$mib1 / $sec1")"
	echo
	echo "| hot set, $HOT x 4 KiB, one pass (median of $ROUNDS) | seconds | device requests | seeks |"
	echo "|---|--:|--:|--:|"
	printf '| home (bopt=none) | %.3f | %s | %s |\n' "$home_s" "$home_r" "$home_k"
	printf '| BOPT after reorganize | %.3f | %s | %s |\n' "$bopt_s" "$bopt_r" "$bopt_k"
	printf '| ratio BOPT / home | %.2f | %.2f | %.3f |\n' "$(calc "$bopt_s / $home_s")" \
		"$(calc "$bopt_r / $home_r")" "$(calc "$bopt_k / $home_k")"
	echo
	echo "| hot set, $HOT x 4 KiB writes, one pass (median of $ROUNDS) | write seconds | unmount seconds | writes into the BOPT |"
	echo "|---|--:|--:|--:|"
	for c in home on off; do
		printf '| %s | %.3f | %.3f | %s |\n' \
			"$(case $c in home) echo "home (bopt=none)" ;; on) echo "into the BOPT (bopt_writes=on)" ;; off) echo "home, copies dropped (bopt_writes=off)" ;; esac)" \
			"$(cut -d' ' -f1 "$TMP/w-$c" | median)" "$(cut -d' ' -f2 "$TMP/w-$c" | median)" \
			"$(cut -d' ' -f3 "$TMP/w-$c" | median)"
	done
} | tee "${OUT:-/dev/null}"
