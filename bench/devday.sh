#!/bin/bash
# devday.sh - a scripted developer day on an emulated HDD (issue 7): git
# status, log, diff, grep and a read of every header of a real repository
# (a clone of this one), run three times on a mount with emulate=hdd, with
# `hybridctl reorganize` between the runs, against the same three runs on
# a second mount (a second copy) without reorganization. The page cache is
# dropped before each run, so every read reaches the daemon and the
# emulated disk; cache=none, so that what changes is the layout alone.
#
# Usage (as root: drop_caches): bench/devday.sh [BUILD_DIR] [--dir DIR]
#        [--out FILE]
# Reported: wall seconds per run, each mount, and the emulated disk's
# modeled time. A few minutes.
set -u
set -o pipefail

. "$(dirname "$0")/script.sh"
DIR=/var/tmp
OUT=""
while [ $# -gt 0 ]; do
	case $1 in
	--dir) DIR=$2 && shift ;;
	--out) OUT=$2 && shift ;;
	-h | --help) bench_help ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) BUILD=$1 ;;
	esac
	shift
done
bench_build hybridfs hybridctl
HYBRIDFS=$BUILD/hybridfs HYBRIDCTL=$BUILD/hybridctl
[ "$(id -u)" = 0 ] || die "run as root (drop_caches)"
command -v git >/dev/null || die "git is needed"
command -v jq >/dev/null || die "jq is needed"

TMP=$(mktemp -d "$DIR/hybridfs-devday.XXXXXX") || die "mktemp failed"
PIDS=""
cleanup() {
	local m p
	for m in "$TMP"/m*; do mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m"; done
	for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM HUP

for side in a b; do
	mkdir -p "$TMP/b$side" "$TMP/m$side"
	git clone -q --no-hardlinks "$SRCDIR" "$TMP/b$side/repo" || die "git clone failed"
done

mount_side() { # SIDE
	"$HYBRIDFS" "$TMP/b$1" "$TMP/m$1" -f -o "state=$TMP/s$1,emulate=hdd,cache=none" \
		2>>"$TMP/daemon.log" &
	PIDS="$PIDS $!"
	for _ in $(seq 1 600); do
		"$HYBRIDCTL" status "$TMP/m$1" --json 2>/dev/null | jq -e '.mounts[0].daemon.pid' \
			>/dev/null 2>&1 && return 0
		sleep 0.05
	done
	die "mount $1 did not come up"
}

day() { # MOUNTPOINT: the developer's day, timed
	local t0 t1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(date +%s.%N)
	(
		cd "$1/repo" || exit 1
		git status >/dev/null
		git log --stat -30 >/dev/null
		git diff HEAD~10 >/dev/null
		grep -rn "hy_cache" --include='*.c' . >/dev/null
		find . -name '*.h' -not -path './.git/*' -exec cat {} + >/dev/null
	) || die "the day failed on $1"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }'
}

modeled() { "$HYBRIDCTL" status "$1" --json | jq '.mounts[0].daemon.emulation.modeled_ms / 1000 | floor'; }

mount_side a
mount_side b
results=()
for run in 1 2 3; do
	ta=$(day "$TMP/ma")
	tb=$(day "$TMP/mb")
	results+=("| $run | $ta s | $tb s |")
	printf '%s: run %d: %s s with reorganization, %s s without\n' "$NAME" "$run" "$ta" "$tb" >&2
	if [ "$run" -lt 3 ]; then
		"$HYBRIDCTL" reorganize "$TMP/ma" --quiet >/dev/null || die "reorganize failed"
		"$HYBRIDCTL" status "$TMP/ma" --json | jq -e '.mounts[0].daemon.bopt' >/dev/null ||
			die "no BOPT status"
	fi
done
{
	echo "### A developer day on emulate=hdd (bench/devday.sh)"
	echo
	echo "git status, git log --stat -30, git diff HEAD~10, grep -rn over the C files and a"
	echo "read of every header of a clone of this repository; page cache dropped before each"
	echo "run; cache=none; the left mount reorganized (hybridctl reorganize) after runs 1 and 2."
	echo
	echo "| run | with reorganization | without |"
	echo "|---|---:|---:|"
	printf '%s\n' "${results[@]}"
	echo
	echo "Modeled disk time over the three runs: $(modeled "$TMP/ma") s with, $(modeled "$TMP/mb") s without."
	echo "BOPT after the reorganizations: $("$HYBRIDCTL" status "$TMP/ma" | grep '^bopt' || echo none)"
} | bench_output
