#!/bin/bash
# datapath-ab.sh - two builds of the daemon side by side on the data path:
# the same fixed fio jobs through a mount of each, rounds alternated A, B,
# A, B, ...; per job the throughput and the daemon's CPU time per MiB moved
# (utime + stime from /proc, a count that the disk's noise does not move
# as much as a time), and the medians. For a change that must not cost
# anything on the data path (issue 17's restructuring).
#
#   bench/datapath-ab.sh [--rounds N] [--dir DIR] [--opts O] BUILD_A BUILD_B
#
# The mount: the defaults (cache on, write-back) with the state folder
# outside the tree and the kernel's write-back cache off (writes reach the
# daemon as the application made them), unless --opts gives others. Jobs
# (fio, psync, one process, nothing time-based, so both builds do exactly
# the same requests):
#   seqwrite   1 GiB in 1 MiB writes to a new file, fsync at the end
#   seqread    that file again in 1 MiB reads, page cache dropped first
#   randread   32,768 4 KiB O_DIRECT reads at random offsets of a 64 MiB file
#   randwrite  16,384 4 KiB writes at random offsets of it, fsync every 32
# (sizes large enough that the daemon's CPU time, counted in clock ticks of
# 10 ms, is hundreds of ticks a job)
# Run as root (dropping the page cache needs it). BUILD_A/BUILD_B: build
# folders with a hybridfs.
set -u
rounds=5 dir=/var/tmp opts="writeback_cache=off"
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
	--dir) dir=${2:?--dir needs a folder}; shift 2 ;;
	--opts) opts=${2:?--opts needs mount options}; shift 2 ;;
	-h | --help) sed -n '2,21p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
[ $# = 2 ] || { echo "usage: $0 [--rounds N] [--dir DIR] [--opts O] BUILD_A BUILD_B" >&2; exit 2; }
for b in "$1" "$2"; do
	[ -x "$b/hybridfs" ] || { echo "datapath-ab: no daemon at $b/hybridfs" >&2; exit 2; }
done
command -v fio >/dev/null || { echo "datapath-ab: needs fio (apt-get install fio)" >&2; exit 2; }
command -v jq >/dev/null || { echo "datapath-ab: needs jq (apt-get install jq)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "datapath-ab: run as root (it drops the page cache)" >&2; exit 2; }

T=$(mktemp -d "$dir/datapath-ab.XXXXXX") || exit 2
pid=""
cleanup() {
	[ -n "$pid" ] && { fusermount3 -u -z "$T/m" 2>/dev/null; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	rm -rf "$T"
}
trap cleanup EXIT
export HYBRIDFS_RUNTIME_DIR=$T/run
tick=$(getconf CLK_TCK)

# The daemon's CPU time so far, in ms.
cpu_ms() { awk -v t="$tick" '{ print ($14 + $15) * 1000 / t }' "/proc/$pid/stat"; }

# One job: fio's MiB/s, and the daemon's CPU ms per MiB moved.
job() {
	local name=$1 bytes c0 c1 out bw
	shift
	c0=$(cpu_ms)
	out=$(fio --output-format=json --name="$name" --directory="$T/m" --ioengine=psync "$@") ||
		{ echo "datapath-ab: fio $name failed" >&2; return 1; }
	c1=$(cpu_ms)
	bytes=$(jq '[.jobs[0].read.io_bytes, .jobs[0].write.io_bytes] | add' <<<"$out")
	bw=$(jq '[.jobs[0].read.bw_bytes, .jobs[0].write.bw_bytes] | add / 1048576' <<<"$out")
	awk -v b="$bytes" -v bw="$bw" -v c0="$c0" -v c1="$c1" \
		'BEGIN { printf "%.1f %.3f\n", bw, (c1 - c0) / (b / 1048576) }'
}

# One round of build $1: prints "JOB MIBS CPUMSPERMIB" lines.
round() {
	local build=$1 i r
	rm -rf "$T/b" "$T/m" "$T/s"
	mkdir -p "$T/b" "$T/m"
	"$build/hybridfs" "$T/b" "$T/m" -f -o "state=$T/s,$opts" 2>>"$T/daemon.log" &
	pid=$!
	for i in $(seq 1 600); do
		awk -v m="$T/m" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo && break
		kill -0 "$pid" 2>/dev/null || { echo "datapath-ab: the daemon of $build exited" >&2; cat "$T/daemon.log" >&2; return 1; }
		sleep 0.05
	done
	r=$(job seqwrite --filename=seq --rw=write --bs=1M --size=1G --end_fsync=1) || return 1
	echo "seqwrite $r"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	r=$(job seqread --filename=seq --rw=read --bs=1M --size=1G) || return 1
	echo "seqread $r"
	fio --name=prep --directory="$T/m" --filename=rand --rw=write --bs=1M --size=64M \
		--end_fsync=1 --output=/dev/null || return 1
	echo 3 >/proc/sys/vm/drop_caches
	r=$(job randread --filename=rand --rw=randread --bs=4k --size=64M --io_size=128M \
		--direct=1 --randseed=17) || return 1
	echo "randread $r"
	r=$(job randwrite --filename=rand --rw=randwrite --bs=4k --size=64M --io_size=64M \
		--fsync=32 --randseed=19) || return 1
	echo "randwrite $r"
	fusermount3 -u "$T/m"
	wait "$pid"
	pid=""
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for r in $(seq 1 "$rounds"); do
	round "$1" >"$T/a.$r" || exit 1
	round "$2" >"$T/b.$r" || exit 1
	echo "round $r: A $(tr '\n' ' ' <"$T/a.$r")" >&2
	echo "round $r: B $(tr '\n' ' ' <"$T/b.$r")" >&2
done
echo "| job | A MiB/s | B MiB/s | B/A | A daemon CPU ms/MiB | B daemon CPU ms/MiB | B/A |"
echo "|---|--:|--:|--:|--:|--:|--:|"
for j in seqwrite seqread randread randwrite; do
	ab=$(cat "$T"/a.* | awk -v j=$j '$1 == j { print $2 }' | median)
	bb=$(cat "$T"/b.* | awk -v j=$j '$1 == j { print $2 }' | median)
	ac=$(cat "$T"/a.* | awk -v j=$j '$1 == j { print $3 }' | median)
	bc_=$(cat "$T"/b.* | awk -v j=$j '$1 == j { print $3 }' | median)
	awk -v j=$j -v ab="$ab" -v bb="$bb" -v ac="$ac" -v bc="$bc_" 'BEGIN {
		printf "| %s | %.1f | %.1f | %.2f | %.3f | %.3f | %.2f |\n", j, ab, bb, bb / ab, ac, bc, (ac > 0 ? bc / ac : 0) }'
done
echo
echo "A: $1; B: $2; $rounds rounds alternated, medians; mount options: $opts"
