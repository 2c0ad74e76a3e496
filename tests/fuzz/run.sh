#!/bin/bash
# tests/fuzz/run.sh - builds the trace reader's libFuzzer target with clang
# (ASan + UBSan) and runs it for a bounded time from a seed corpus of a few
# lines of each format; a crash, a sanitizer report or a leak fails it.
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS]     (default 30 s)
#
# BUILD_DIR: a configured build (for config.h). Exit status: 0, 1 (the
# fuzzer found something: its output and the input are kept in the work
# folder, named), 77 (no clang with libFuzzer).
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:?usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]}
SECONDS_MAX=${2:-30}
command -v clang >/dev/null || { echo "fuzz: no clang: skipped"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hybridfs-fuzz.XXXXXX") || exit 1
cleanup() { [ "${keep:-0}" = 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT
if ! clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-std=gnu11 -I"$SRC/include" -include "$BUILD/config.h" \
	"$SRC/tests/fuzz/fuzz_trace_reader.c" "$SRC/sim/trace_reader.c" "$SRC/lib/log.c" \
	-lz -o "$WORK/fuzz_trace_reader" 2>"$WORK/build.log"; then
	if grep -q "fuzzer" "$WORK/build.log"; then
		echo "fuzz: clang has no libFuzzer: skipped"
		exit 77
	fi
	cat "$WORK/build.log"
	exit 1
fi
mkdir -p "$WORK/corpus"
printf '128166372003061629,hm,0,Read,3221225472,4096,1234\n' >"$WORK/corpus/msr"
printf '0.0 0 4096 512 1\n1.5 0 8192 4096 0\n' >"$WORK/corpus/heimdall"
printf '89966811921625 4831 gzip 31390296 8 R 8 0 3a5e0f\n' >"$WORK/corpus/fiu"
printf '  8,16   1        1     0.000000000  4162  Q   W 2048 + 8 [flush-8:16]\n' >"$WORK/corpus/blkparse"
printf '0 0 1234 16 1\n500 1 99 8 0\n' >"$WORK/corpus/disksim"
printf '0,20941264,8192,W,0.551706\n' >"$WORK/corpus/spc"
printf 'version,time,op,size,lbn\n1,0,28,4096,100\n' >"$WORK/corpus/vscsi"
printf '1538323199,1234,8,0,1063\n' >"$WORK/corpus/tencent"
printf '3 8 0 1\n11 8 0 2\n' >"$WORK/corpus/arc"
printf 'ts_ns,pid,process,exe,file_id,offset,length,block_first,block_count,mode,class,phys_block\n1,2,"a,b",,3,0,4096,0,1,R,0,\n' >"$WORK/corpus/hybridfs"
echo "fuzz: the trace reader for ${SECONDS_MAX}s"
if ! (cd "$WORK" && ./fuzz_trace_reader -max_len=8192 -max_total_time="$SECONDS_MAX" \
	-print_final_stats=1 corpus >fuzz.log 2>&1); then
	keep=1
	tail -n 40 "$WORK/fuzz.log"
	echo "fuzz: FAILED; the crashing input and the log are in $WORK"
	exit 1
fi
grep -E "stat::number_of_executed_units|Done" "$WORK/fuzz.log" | tail -2
echo "fuzz: no crash"
