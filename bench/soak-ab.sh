#!/bin/bash
# soak-ab.sh - two builds of the daemon side by side under hy-soak's load:
# soak.sh's mount (write-back, a small store and front buffer, a BOPT, the
# cleaner unthrottled), 32 processes for SECONDS, no hooks, rounds
# alternated A, B, A, B, ...; prints each round's operations per second and
# fsyncs, and the medians. Counts of what hy-soak did are in its output:
# a round that found a wrong byte fails the run.
#
#   bench/soak-ab.sh [--rounds N] [--seconds S] [--seed S] [--dir DIR] BUILD_A BUILD_B
#
# BUILD_A/BUILD_B: build folders with a hybridfs; hy-soak (which make check
# builds) is taken from BUILD_B, else BUILD_A, and drives both. Run as root or as a user who may mount FUSE.
set -u
rounds=3 seconds=30 seed=11 dir=/var/tmp
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--seed) seed=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	-h | --help) sed -n '2,13p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
[ $# = 2 ] || { echo "usage: $0 [--rounds N] [--seconds S] [--seed S] [--dir DIR] BUILD_A BUILD_B" >&2; exit 2; }
# the same driver for both: B's (the newer build, usually), else A's
soak=$2/tests/integration/hy-soak
[ -x "$soak" ] || soak=$1/tests/integration/hy-soak
for b in "$1" "$2"; do
	[ -x "$b/hybridfs" ] || { echo "soak-ab: no daemon at $b/hybridfs" >&2; exit 2; }
done
[ -x "$soak" ] || { echo "soak-ab: no tests/integration/hy-soak in $2 or $1 (make check builds it)" >&2; exit 2; }

T=$(mktemp -d "$dir/soak-ab.XXXXXX") || exit 2
pid=""
cleanup() {
	[ -n "$pid" ] && { fusermount3 -u -z "$T/m" 2>/dev/null; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	rm -rf "$T"
}
trap cleanup EXIT
export HYBRIDFS_RUNTIME_DIR=$T/run

# one round: prints "OPS FSYNCS"
round() {
	local build=$1 out rc i
	rm -rf "$T/b" "$T/m" "$T/s"
	mkdir -p "$T/b" "$T/m"
	"$build/hybridfs" "$T/b" "$T/m" -f -o "state=$T/s,writeback_cache=off,cache_write=back,cache_size=8M,front_buffer=1M,bopt_size=16M,cache_clean_rate=0" 2>>"$T/daemon.log" &
	pid=$!
	for i in $(seq 1 600); do
		awk -v m="$T/m" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo && break
		kill -0 "$pid" 2>/dev/null || { echo "soak-ab: the daemon of $build exited" >&2; cat "$T/daemon.log" >&2; exit 1; }
		sleep 0.05
	done
	out=$("$soak" --procs 32 --seconds "$seconds" --seed "$seed" --stall 60 "$T/m" 2>&1)
	rc=$?
	fusermount3 -u "$T/m"
	wait "$pid"
	pid=""
	[ $rc = 0 ] || { printf '%s\n' "$out" >&2; echo "soak-ab: hy-soak failed on $build" >&2; exit 1; }
	printf '%s %s\n' "$(grep -o 'ops_per_s=[0-9]*' <<<"$out" | cut -d= -f2)" \
		"$(grep -o ' fsync=[0-9]*' <<<"$out" | cut -d= -f2)"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: >"$T/a" && : >"$T/b.txt"
echo "| round | A ops/s | A fsyncs | B ops/s | B fsyncs |"
echo "|---|--:|--:|--:|--:|"
for r in $(seq 1 "$rounds"); do
	a=$(round "$1") || exit 1
	b=$(round "$2") || exit 1
	echo "${a%% *}" >>"$T/a"
	echo "${b%% *}" >>"$T/b.txt"
	echo "| $r | ${a%% *} | ${a##* } | ${b%% *} | ${b##* } |"
done
echo "| median | $(median <"$T/a") | | $(median <"$T/b.txt") | |"
echo "A: $1; B: $2; $seconds s, seed $seed"
