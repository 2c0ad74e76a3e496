#!/bin/bash
# tests/fuzz/run.sh - builds every libFuzzer target of tests/fuzz with clang
# (ASan + UBSan, leaks checked) and runs each for a bounded time from its
# seed corpus in tests/fuzz/corpus/TARGET/; a crash, a sanitizer report, a
# leak, a hang (over 10 s for one input) or a broken check fails it.
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS [TARGET...]]
#                        SECONDS per target (default 10); all targets
#                        unless some are named (fuzz_options, ...)
#   tests/fuzz/run.sh --make-seeds BUILD_DIR
#                        remakes the binary seeds of the cache store and
#                        BOPT targets (tests/fuzz/make_seeds.c) in the
#                        source tree, after a format change
#
# BUILD_DIR: a configured build (config.h, and its Makefile for the
# compiler flags of the libraries). Exit status: 0, 1 (a target failed to
# build or found something: the input, the target and its output are kept
# in the work folder, named), 77 (no clang with libFuzzer).
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
make_seeds=0
if [ "${1:-}" = --make-seeds ]; then
	make_seeds=1
	shift
fi
BUILD=${1:?usage: tests/fuzz/run.sh BUILD_DIR [SECONDS [TARGET...]]}
SECONDS_MAX=${2:-10}
shift $(($# < 2 ? $# : 2))
BUILD=$(cd "$BUILD" && pwd) || exit 1
if [ ! -f "$BUILD/config.h" ] || [ ! -f "$BUILD/Makefile" ]; then
	echo "fuzz: $BUILD is not a configured build"
	exit 1
fi

command -v clang >/dev/null || { echo "fuzz: no clang: skipped"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hybridfs-fuzz.XXXXXX") || exit 1
# the targets' own files (stores, BOPTs, traces) go to tmpfs when there is
# one: the stores fsync, and a disk would make them ten times slower
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	SCRATCH=$(mktemp -d /dev/shm/hybridfs-fuzz.XXXXXX) || exit 1
else
	SCRATCH=$WORK/scratch
	mkdir -p "$SCRATCH"
fi
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	rm -rf "$SCRATCH"
	[ "${keep:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

# A variable of the build's Makefile, as configure set it.
mkvar() { sed -n "s/^$1 = *//p" "$BUILD/Makefile" | head -n 1; }
fuse_version=$(sed -n 's/.*-DFUSE_USE_VERSION=\([0-9]*\).*/\1/p' "$SRC/Makefile.am" | head -n 1)
# the project's warnings, not as errors: a newer clang must not stop the run
warn=$(mkvar WARN_CFLAGS | sed 's/-Werror//g')
CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
	-std=gnu11 $warn -I$SRC/include -I$SRC/tests/fuzz -include $BUILD/config.h
	-DFUSE_USE_VERSION=${fuse_version:-312}"

if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
	clang -fsanitize=fuzzer -x c - -o "$WORK/probe" >/dev/null 2>&1; then
	echo "fuzz: clang has no libFuzzer: skipped"
	exit 77
fi

# The sources each target needs besides its own, then its libraries. A
# source that is not there (an optional module) is left out.
# the cache store and its parts
store="cache/cache_store.c cache/cache_store_format.c cache/cache_store_journal.c"
shared_disk="lib/ondisk.c lib/group_commit.c device/device.c device/fault.c device/devmodel.c lib/units.c lib/log.c"
sources() {
	case $1 in
	fuzz_trace_reader) echo "sim/trace_reader.c sim/trace_formats.c lib/log.c" ;;
	fuzz_options) echo "lib/options.c lib/rules.c lib/units.c lib/pore.c lib/keymap.c device/devmodel.c lib/log.c lib/runtime.c" ;;
	fuzz_control)
		echo "lib/control.c engine/workload_policy.c engine/category.c engine/classify.c" \
			"lib/ondisk.c lib/state.c lib/log.c" ;;
	fuzz_cache_store) echo "$store $shared_disk" ;;
	fuzz_bopt) echo "borg/bopt.c $shared_disk" ;;
	make_seeds) echo "$store borg/bopt.c $shared_disk" ;;
	esac
}
libs() {
	case $1 in
	fuzz_trace_reader) mkvar ZLIB_LIBS ;;
	fuzz_options) echo "$(mkvar FUSE_LIBS) -lm" ;;
	fuzz_control) echo "$(mkvar JSONC_LIBS) $(mkvar SQLITE_LIBS) $(mkvar BLKID_LIBS)" ;;
	*) echo "$(mkvar BLKID_LIBS) -lm -lpthread" ;;
	esac
}
cflags() {
	case $1 in
	fuzz_options) mkvar FUSE_CFLAGS ;;
	fuzz_control) echo "$(mkvar JSONC_CFLAGS) $(mkvar SQLITE_CFLAGS) $(mkvar BLKID_CFLAGS)" ;;
	*) mkvar BLKID_CFLAGS ;;
	esac
}
# Inputs longer than any seed need be, per target.
max_len() {
	case $1 in
	fuzz_options) echo 4096 ;;
	fuzz_cache_store) echo 32768 ;;
	fuzz_bopt) echo 16384 ;;
	*) echo 8192 ;;
	esac
}

# Builds target $1 (fuzzer $2: "fuzzer," or ""), its log in $WORK/$1.build.log.
build() {
	local t=$1 srcs="" s
	for s in $(sources "$t"); do
		[ -f "$SRC/$s" ] && srcs="$srcs $SRC/$s"
	done
	# shellcheck disable=SC2046,SC2086 # word lists on purpose
	clang $CFLAGS ${2:+-fsanitize=fuzzer} $(cflags "$t") "$SRC/tests/fuzz/$t.c" $srcs \
		$(libs "$t") -o "$WORK/$t" >"$WORK/$t.build.log" 2>&1
}

if [ $make_seeds = 1 ]; then
	build make_seeds "" || { cat "$WORK/make_seeds.build.log"; exit 1; }
	for t in fuzz_cache_store fuzz_bopt; do
		rm -f "$SRC/tests/fuzz/corpus/$t"/*
		mkdir -p "$SRC/tests/fuzz/corpus/$t"
	done
	HY_FUZZ_TMPDIR=$SCRATCH "$WORK/make_seeds" "$SRC/tests/fuzz/corpus" || exit 1
	chmod 644 "$SRC/tests/fuzz/corpus"/fuzz_cache_store/* "$SRC/tests/fuzz/corpus"/fuzz_bopt/*
	exit 0
fi

targets=${*:-fuzz_options fuzz_control fuzz_trace_reader fuzz_cache_store fuzz_bopt}
# build them all at once (a few seconds each), then run one at a time
for t in $targets; do
	build "$t" fuzzer &
	eval "pid_$t=$!"
done
status=0
for t in $targets; do
	eval "wait \$pid_$t" && continue
	echo "fuzz: $t: the build failed:"
	tail -n 30 "$WORK/$t.build.log"
	status=1
done
[ $status = 0 ] || { keep=1; echo "fuzz: FAILED; the build logs are in $WORK"; exit 1; }

for t in $targets; do
	mkdir -p "$WORK/$t.corpus" "$SCRATCH/$t"
	cp "$SRC/tests/fuzz/corpus/$t"/* "$WORK/$t.corpus/" 2>/dev/null
	# -timeout: a hang is one input over 10 s; -rss_limit_mb: a runaway
	# allocation from a size field fails (ASan's own limit is 2 GiB too)
	if ! (cd "$WORK" && HY_FUZZ_TMPDIR=$SCRATCH/$t "./$t" -max_len="$(max_len "$t")" \
		-max_total_time="$SECONDS_MAX" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$WORK/$t." "$t.corpus" >"$t.log" 2>&1); then
		keep=1
		status=1
		grep -v '^#[0-9]' "$WORK/$t.log" | tail -n 40
		echo "fuzz: $t: FAILED; the input is $(ls "$WORK/$t".crash-* "$WORK/$t".leak-* \
			"$WORK/$t".timeout-* "$WORK/$t".oom-* 2>/dev/null | tr '\n' ' ')"
		echo "fuzz: $t: its output is $WORK/$t.log; the target is $WORK/$t"
		continue
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/$t.log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$WORK/$t.log")
	cov=$(grep -o 'cov: [0-9]*' "$WORK/$t.log" | tail -n 1)
	echo "fuzz: $t: ${runs:-?} inputs in ${SECONDS_MAX}s (${rate:-?}/s, $cov), nothing found"
done
[ $status = 0 ] || echo "fuzz: FAILED; reproduce with: TARGET INPUT (in $WORK)"
exit $status
