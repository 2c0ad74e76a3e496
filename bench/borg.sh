#!/bin/bash
# borg.sh - what BORG's analyzer and planner cost as the access log grows.
#
# Builds bench/borg.c with cc against BUILD's libraries (analyzer, planner,
# libhycommon; no FUSE, no mount, no root) and runs it. For each log size N
# (default 1e4 1e5 1e6 1e7 requests), in a fresh child process, borg.c
# makes a synthetic home-directory-like access log in memory from a fixed
# seed (Zipf file popularity, 64 interleaved processes, sequential runs,
# random reads and 300 recurring request "scripts"; see bench/borg.c), and
# measures:
#   - hy_analyzer_feed() of all N requests into a fresh analyzer (default
#     config): seconds, records/s, ns per record (log generation not timed);
#   - the graph: vertices, edges, splits, cold-tail cuts; export time;
#   - hy_planner_plan() with an 8 GiB BOPT (2097152 blocks, as in BORG) and
#     with 1% of the graph's blocks: seconds, MiB placed;
#   - peak RSS of that size's process (getrusage ru_maxrss);
#   - for 1e5 and 1e6: hy_analyzer_save() + hy_analyzer_load() through a
#     temp SQLite state database (hy_state_open, current schema).
# Below 1e6 requests the timed steps are repeated and the median kept.
# Prints markdown tables. The BORG paper says analysis and planning grow
# linearly with the cumulative trace: the ns/record column shows whether
# they do here. 1e7 takes about 10-20 s and under 1 GiB of RAM.
#
# Usage (any user; needs cc, pkg-config and the -dev packages of sqlite3
# and json-c):
#   bench/borg.sh [BUILD_DIR] [--sizes "1e4 1e5 1e6 1e7"]
#                 [--roundtrip "1e5 1e6" | --roundtrip none]
#                 [--files F] [--seed S] [--dir DIR] [--out FILE]
# BUILD_DIR is a configured and built tree (default: ../_build relative to
# this script, i.e. _build at the top of the source tree). --files F uses F
# files at every size (default: N/50 within [10000, 200000]), to separate
# the log's length from the number of files it touches. --dir: where the
# temp folder (the binary, the state database) goes (default /var/tmp);
# it is removed on exit. --out FILE also writes the tables to FILE.

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

BUILD=""
SIZES="1e4 1e5 1e6 1e7"
ROUNDTRIP="1e5 1e6"
FILES=""
SEED=42
OUT=""

usage() {
	sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
}

while [ $# -gt 0 ]; do
	case $1 in
	--sizes) SIZES=${2:?--sizes needs a list}; shift ;;
	--roundtrip) ROUNDTRIP=${2:?--roundtrip needs a list or none}; shift ;;
	--files) FILES=${2:?--files needs a number}; shift ;;
	--seed) SEED=${2:?--seed needs a number}; shift ;;
	--dir) BN_DIR=${2:?--dir needs a folder}; shift ;;
	--out) OUT=${2:?--out needs a file}; shift ;;
	-h | --help) usage; exit 0 ;;
	-*) usage >&2; bn_die "unknown option: $1" ;;
	*)
		[ -z "$BUILD" ] || bn_die "one BUILD_DIR only"
		BUILD=$1
		;;
	esac
	shift
done

BUILD=${BUILD:-$BN_SRCDIR/../_build}
[ -d "$BUILD" ] || bn_die "no build tree at $BUILD (give BUILD_DIR)"
BUILD=$(cd "$BUILD" && pwd)
TOP=$(cd "$BN_SRCDIR/.." && pwd)
for f in config.h analyzer/libhyanalyzer.a planner/libhyplanner.a lib/libhycommon.a; do
	[ -f "$BUILD/$f" ] || bn_die "$BUILD/$f is missing: configure and make the build tree first"
done
[ -d "$BN_DIR" ] || bn_die "--dir $BN_DIR is not a folder"

bn_need cc
bn_need pkg-config
pkg-config --exists sqlite3 json-c || bn_die "pkg-config knows no sqlite3 or json-c (install libsqlite3-dev libjson-c-dev)"

# common.sh's cleanup removes BN_TMP (no mounts, no daemons here).
trap bn_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
BN_TMP=$(mktemp -d "$BN_DIR/hybridfs-borgbench.XXXXXX") || bn_die "mktemp under $BN_DIR failed"
BN_TMP=$(cd "$BN_TMP" && pwd -P)

bn_log "building bench/borg.c against $BUILD"
# shellcheck disable=SC2046 # pkg-config's words are meant to split
cc -O2 -g -std=gnu11 -I"$TOP/include" -include "$BUILD/config.h" \
	-o "$BN_TMP/borg" "$TOP/bench/borg.c" \
	"$BUILD/analyzer/libhyanalyzer.a" "$BUILD/planner/libhyplanner.a" \
	"$BUILD/lib/libhycommon.a" $(pkg-config --cflags --libs sqlite3 json-c) -lm ||
	bn_die "cannot build bench/borg.c"

args=(-s "$SEED" -d "$BN_TMP")
for n in $SIZES; do args+=(-n "$n"); done
if [ "$ROUNDTRIP" = none ]; then
	args+=(-r none)
else
	for n in $ROUNDTRIP; do args+=(-r "$n"); done
fi
[ -z "$FILES" ] || args+=(-f "$FILES")

report=$BN_TMP/report.md
{
	echo "# bench/borg.sh, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	bn_machine
	echo "- build: $BUILD"
	echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$report"
bn_log "running: borg ${args[*]}"
"$BN_TMP/borg" "${args[@]}" >>"$report" || {
	cat "$report"
	bn_die "borg failed"
}
{
	echo
	echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$report"
cat "$report"
if [ -n "$OUT" ]; then
	cp "$report" "$OUT" || bn_die "cannot write $OUT"
fi
