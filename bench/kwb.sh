#!/bin/bash
# kwb.sh - what the kernel's write-back page cache (writeback_cache=on)
# buys on writes, against the default (off) and the plain directory.
#
# The default went to off in issue 8 (docs/reliability.md, "The kernel's
# write-back cache"): this is the price, measured side by side. Workloads,
# each timed from the first write to the end of its fsync:
#   seq1m    one 512 MiB file in 1 MiB writes (dd bs=1M conv=fsync)
#   seq4k    one 128 MiB file in 4 KiB writes (dd bs=4k conv=fsync)
#   small    one 4.8 MiB file in 100-byte writes (dd bs=100 conv=fsync):
#            a log or a compiler's output, where write-back helps most
#   untar    /usr/include unpacked (tar x, then sync -f): many small files
# Every round runs native, off and on in turn, each on a fresh folder (and
# a fresh mount, with its own state folder and the default store and
# BOPT); the table gives the median of the rounds.
#
# Usage: bench/kwb.sh [BUILD_DIR] [--dir DIR] [--rounds N] [--out FILE]
# BUILD_DIR: a built tree (default: _build at the top of the source tree).
# --dir: where the temp folder goes (default /var/tmp: a disk, not tmpfs).
set -u
set -o pipefail

NAME=$(basename "$0")
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRCDIR/_build
DIR=/var/tmp
ROUNDS=3
OUT=""

die() {
	printf '%s: %s\n' "$NAME" "$*" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--dir) DIR=${2:?--dir needs a folder}; shift 2 ;;
	--rounds) ROUNDS=${2:?--rounds needs a number}; shift 2 ;;
	--out) OUT=${2:?--out needs a file}; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) die "unknown option \"$1\" (see --help)" ;;
	*) BUILD=$1; shift ;;
	esac
done
case $ROUNDS in '' | *[!0-9]* | 0) die "--rounds: \"$ROUNDS\" is not a positive number" ;; esac
HYBRIDFS=$BUILD/hybridfs
[ -x "$HYBRIDFS" ] || die "no hybridfs at $HYBRIDFS (build first, or name the build folder)"
[ -d /usr/include ] || die "no /usr/include to unpack"
[ -d "$DIR" ] || die "--dir: \"$DIR\" is not a folder"

TMP=$(mktemp -d "$DIR/hybridfs-kwb.XXXXXX") || die "cannot make a temp folder in $DIR"
PID=""
MNT=""
cleanup() {
	if [ -n "$MNT" ]; then fusermount3 -u -z "$MNT" 2>/dev/null; fi
	if [ -n "$PID" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tar -C /usr -cf "$TMP/include.tar" include || die "cannot pack /usr/include"

now() { date +%s.%N; }

# run WORKLOAD FOLDER: prints the seconds it took.
run() {
	local wl=$1 d=$2 t0 t1
	t0=$(now)
	case $wl in
	seq1m) dd if=/dev/zero of="$d/f" bs=1M count=512 conv=fsync status=none ;;
	seq4k) dd if=/dev/zero of="$d/f" bs=4k count=32768 conv=fsync status=none ;;
	small) dd if=/dev/zero of="$d/f" bs=100 count=48000 conv=fsync status=none ;;
	untar) tar -C "$d" -xf "$TMP/include.tar" && sync -f "$d" ;;
	esac || die "$wl in $d failed"
	t1=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }'
}

mount_hy() {
	local b=$1 m=$2 opts=$3 i
	mkdir -p "$b" "$m"
	"$HYBRIDFS" "$b" "$m" -f -o "$opts" 2>>"$TMP/daemon.log" &
	PID=$!
	MNT=$m
	for i in $(seq 1 600); do
		mountpoint -q "$m" && return 0
		kill -0 "$PID" 2>/dev/null || die "hybridfs exited before mounting (see $TMP/daemon.log)"
		sleep 0.05
	done
	die "the mount did not appear in 30 s"
}

umount_hy() {
	fusermount3 -u "$MNT" || die "cannot unmount $MNT"
	wait "$PID" || die "hybridfs exited with status $?"
	PID="" MNT=""
}

WORKLOADS="seq1m seq4k small untar"
SYSTEMS="native off on"
for r in $(seq 1 "$ROUNDS"); do
	for wl in $WORKLOADS; do
		for sys in $SYSTEMS; do
			rm -rf "$TMP/run"
			mkdir -p "$TMP/run"
			if [ "$sys" = native ]; then
				mkdir -p "$TMP/run/data"
				s=$(run "$wl" "$TMP/run/data")
			else
				mount_hy "$TMP/run/b" "$TMP/run/m" "state=$TMP/run/state,writeback_cache=$sys"
				s=$(run "$wl" "$TMP/run/m")
				umount_hy
			fi
			echo "$wl $sys $s" >>"$TMP/results"
			printf '%s: round %d %-6s %-6s %.3f s\n' "$NAME" "$r" "$wl" "$sys" "$s" >&2
		done
	done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
{
	echo "| workload | native s | off (default) s | on s | off / native | on / native | off / on |"
	echo "|---|--:|--:|--:|--:|--:|--:|"
	for wl in $WORKLOADS; do
		n=$(awk -v w="$wl" '$1 == w && $2 == "native" { print $3 }' "$TMP/results" | median)
		f=$(awk -v w="$wl" '$1 == w && $2 == "off" { print $3 }' "$TMP/results" | median)
		o=$(awk -v w="$wl" '$1 == w && $2 == "on" { print $3 }' "$TMP/results" | median)
		awk -v w="$wl" -v n="$n" -v f="$f" -v o="$o" 'BEGIN {
			printf "| %s | %.3f | %.3f | %.3f | %.2f | %.2f | %.2f |\n", w, n, f, o, f / n, o / n, f / o
		}'
	done
} | if [ -n "$OUT" ]; then tee "$OUT"; else cat; fi
