#!/bin/bash
# profiler.sh - what the access profiler costs.
#
# Part 1, writer capacity (bench/profiler-writer.c, compiled here with cc
# against BUILD's libraries; no FUSE): records per second the profiler
# commits from its ring into SQLite (N records logged in chunks of 500,000,
# each followed by hy_profiler_sync; goal >= 500,000/s), database bytes per
# million records (db + wal after a TRUNCATE checkpoint), and the push rate
# of two producer threads (accepted + dropped per second; a full ring drops,
# producers never wait: their voluntary context switches are shown).
#
# Part 2, overhead on the I/O path: fio 4 KiB random read and random write
# (ioengine psync, iodepth 1, numjobs 2, direct=1 so that every request
# reaches the daemon, --size 256M, --runtime 10 s) on a hybridfs mount over
# a temp folder under --dir, mounted with -o profile=on and -o profile=off
# alternately (the order flips every round), --rounds 3. Prints IOPS on and
# off (median of the rounds), the loss in %, and the profiler's dropped
# count from `hybridctl status MNT --json` after every profile=on run.
#
# Usage (root, for the mount; needs cc, pkg-config, the -dev packages of
# sqlite3 fuse3 json-c libevent, fio, jq, fusermount3):
#   bench/profiler.sh [BUILD_DIR] [--records N] [--rounds N] [--runtime SEC]
#                     [--size SIZE] [--dir DIR] [--writer-only | --fio-only]
# BUILD_DIR is a configured and built tree (default: ../_build relative to
# this script, i.e. _build at the top of the source tree); the daemon and
# hybridctl are taken from it unless HYBRIDFS / HYBRIDCTL say otherwise.
# Cleans up on any exit: unmounts its mounts, kills only the daemons it
# started (by pid), removes its temp folder. Does not drop the page cache.

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

BUILD=""
RECORDS=5000000
ROUNDS=3
RUNTIME=10
SIZE=256M
PART_WRITER=1
PART_FIO=1
HYBRIDCTL=${HYBRIDCTL:-}

usage() {
	sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
}

while [ $# -gt 0 ]; do
	case $1 in
	--records) RECORDS=${2:?--records needs a number}; shift ;;
	--rounds) ROUNDS=${2:?--rounds needs a number}; shift ;;
	--runtime) RUNTIME=${2:?--runtime needs seconds}; shift ;;
	--size) SIZE=${2:?--size needs a size}; shift ;;
	--dir) BN_DIR=${2:?--dir needs a folder}; shift ;;
	--writer-only) PART_FIO=0 ;;
	--fio-only) PART_WRITER=0 ;;
	-h | --help) usage; exit 0 ;;
	-*) usage >&2; bn_die "unknown option: $1" ;;
	*)
		[ -z "$BUILD" ] || bn_die "one BUILD_DIR only"
		BUILD=$1
		;;
	esac
	shift
done
for v in "$RECORDS" "$ROUNDS" "$RUNTIME"; do
	case $v in '' | *[!0-9]* | 0) bn_die "--records, --rounds, --runtime want positive numbers" ;; esac
done
SIZE_BYTES=$(bn_bytes "$SIZE") || exit 1

BUILD=${BUILD:-$BN_SRCDIR/../_build}
[ -d "$BUILD" ] || bn_die "no build tree at $BUILD (give BUILD_DIR)"
BUILD=$(cd "$BUILD" && pwd)
TOP=$(cd "$BN_SRCDIR/.." && pwd)
HYBRIDFS=${HYBRIDFS:-$BUILD/hybridfs}
HYBRIDCTL=${HYBRIDCTL:-$BUILD/hybridctl}

bn_need cc
bn_need pkg-config
bn_need awk
if [ "$PART_FIO" = 1 ]; then
	bn_need fio "apt-get install fio"
	bn_need jq "apt-get install jq"
	bn_need fusermount3 "apt-get install fuse3"
	[ -x "$HYBRIDFS" ] || bn_die "no daemon at $HYBRIDFS"
	[ -x "$HYBRIDCTL" ] || bn_die "no hybridctl at $HYBRIDCTL"
	[ -c /dev/fuse ] || bn_die "/dev/fuse is missing"
fi
[ -d "$BN_DIR" ] || bn_die "--dir $BN_DIR is not a folder"
case $(stat -f -c %T "$BN_DIR") in
tmpfs | ramfs) bn_die "--dir $BN_DIR is on $(stat -f -c %T "$BN_DIR"); give a folder on a real disk" ;;
esac

# common.sh's cleanup: unmounts BN_MOUNTS, kills BN_PIDS, removes BN_TMP.
trap bn_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
BN_TMP=$(mktemp -d "$BN_DIR/hybridfs-profbench.XXXXXX") || bn_die "mktemp under $BN_DIR failed"
BN_TMP=$(cd "$BN_TMP" && pwd -P)
mkdir -p "$BN_TMP/logs"
BN_RESULTS=$BN_TMP/results.tsv
: >"$BN_RESULTS"

echo "# bench/profiler.sh, $(date -u '+%Y-%m-%d %H:%M UTC')"
bn_machine
echo "- build: $BUILD"
echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine shows here)"

# ---- part 1: writer capacity ------------------------------------------------
if [ "$PART_WRITER" = 1 ]; then
	bn_log "building profiler-writer against $BUILD"
	# shellcheck disable=SC2046 # pkg-config's words are meant to split
	cc -O2 -g -std=gnu11 -pthread -I"$TOP/include" -include "$BUILD/config.h" \
		-o "$BN_TMP/profiler-writer" "$TOP/bench/profiler-writer.c" \
		"$BUILD/fs/libhyfs.a" "$BUILD/engine/libhyengine.a" "$BUILD/lib/libhycommon.a" \
		$(pkg-config --cflags --libs sqlite3 fuse3 json-c libevent libevent_pthreads) ||
		bn_die "cannot build bench/profiler-writer.c"
	bn_log "writer capacity: $RECORDS records"
	out=$BN_TMP/logs/writer.txt
	"$BN_TMP/profiler-writer" -n "$RECORDS" -c 500000 -p 4000000 -d "$BN_TMP" >"$out" ||
		bn_die "profiler-writer failed"
	echo
	echo "## writer capacity (bench/profiler-writer.c)"
	echo
	grep -v '^dir ' "$out" | sed 's/^/    /'
	rate=$(awk '$1 == "writer_records_per_s" { print $2 }' "$out")
	per=$(awk '$1 == "db_bytes_per_million" { printf "%.1f", $2 / 1048576 }' "$out")
	push=$(awk '$1 == "push_records_per_s" { print $2 }' "$out")
	echo
	echo "- writer: $rate records/s committed (goal >= 500000)"
	echo "- database: $per MiB per million records"
	echo "- push, 2 producers: $push records/s offered (accepted + dropped)"
fi

# ---- part 2: fio overhead, profile=on vs off --------------------------------
if [ "$PART_FIO" = 1 ]; then
	backing=$BN_TMP/backing
	mnt=$BN_TMP/mnt
	mkdir -p "$backing" "$mnt"
	bn_log "preparing a $SIZE file in the backing folder (not measured)"
	fio --name=prepare --filename="$backing/rand.dat" --rw=write --bs=1M \
		--size="$SIZE_BYTES" --end_fsync=1 --ioengine=psync \
		--output="$BN_TMP/logs/prepare.txt" || bn_die "fio prepare failed"
	DROPPED=""

	run_fio() { # TAG RW -> IOPS on stdout
		local tag=$1 rw=$2 json dir=read
		json=$BN_TMP/logs/$tag.json
		[ "$rw" = randwrite ] && dir="write"
		fio --output-format=json --output="$json" --name="$tag" \
			--filename="$mnt/rand.dat" --ioengine=psync --rw="$rw" --bs=4k \
			--iodepth=1 --numjobs=2 --size="$SIZE_BYTES" --direct=1 \
			--time_based --runtime="$RUNTIME" --group_reporting \
			2>"$BN_TMP/logs/$tag.err" || {
			cat "$BN_TMP/logs/$tag.err" >&2
			bn_die "fio $tag failed"
		}
		jq -r ".jobs[0].$dir.iops" "$json" | awk '{ printf "%.0f\n", $1 }'
	}

	for round in $(seq 1 "$ROUNDS"); do
		if [ $((round % 2)) = 1 ]; then order="on off"; else order="off on"; fi
		for mode in $order; do
			bn_start_fuse hybridfs "$mnt" "$HYBRIDFS" "$backing" "$mnt" -f -o "profile=$mode"
			for rw in randread randwrite; do
				v=$(run_fio "$rw-$mode-$round" "$rw") || exit 1
				bn_record "$rw" "$mode" "$v"
				bn_log "round $round profile=$mode $rw: $v IOPS"
			done
			if [ "$mode" = on ]; then
				"$HYBRIDCTL" status "$mnt" --json >"$BN_TMP/logs/status-$round.json" ||
					bn_die "hybridctl status failed"
				d=$(jq -r '.mounts[0].daemon.profiler.dropped' "$BN_TMP/logs/status-$round.json")
				w=$(jq -r '.mounts[0].daemon.profiler.written' "$BN_TMP/logs/status-$round.json")
				case $d in '' | null) bn_die "no .profiler.dropped in hybridctl status --json" ;; esac
				[ "$d" = 0 ] || bn_log "WARNING: the profiler dropped $d records"
				DROPPED="$DROPPED $d"
				bn_log "round $round profile=on: profiler written $w, dropped $d"
			fi
			bn_stop_fuse hybridfs "$mnt"
		done
	done

	echo
	echo "## profiler overhead, 4 KiB random I/O through hybridfs (fio)"
	echo
	echo "- fio: ioengine=psync bs=4k iodepth=1 numjobs=2 direct=1 size=$SIZE runtime=${RUNTIME}s;"
	echo "  $ROUNDS round(s), profile=on/off alternated (order flipped each round), median"
	echo "- daemon: $HYBRIDFS ($("$HYBRIDFS" --version 2>&1 | head -n 1))"
	echo
	echo "| workload | profile=on IOPS | profile=off IOPS | loss | rounds on / off |"
	echo "|---|--:|--:|--:|---|"
	for rw in randread randwrite; do
		on=$(bn_median "$rw" on)
		off=$(bn_median "$rw" off)
		loss=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.1f %%", (b - a) * 100 / b }')
		rounds_on=$(awk -F'\t' -v w="$rw" '$1 == w && $2 == "on" { printf "%s ", $3 }' "$BN_RESULTS")
		rounds_off=$(awk -F'\t' -v w="$rw" '$1 == w && $2 == "off" { printf "%s ", $3 }' "$BN_RESULTS")
		echo "| $rw | $on | $off | $loss | ${rounds_on% } / ${rounds_off% } |"
	done
	echo
	echo "- profiler dropped (hybridctl status --json, after each profile=on run):$DROPPED"
fi
echo
echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
