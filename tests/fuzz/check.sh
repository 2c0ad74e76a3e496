#!/bin/bash
# tests/fuzz/check.sh - make check's bounded fuzzing run (issue 8): every
# parser's libFuzzer target (mount options, control protocol, trace
# readers, cache store superblock/table/journal, BOPT header) runs for
# HY_FUZZ_SECONDS seconds (default 60) from its seeds in tests/fuzz/corpus,
# built with clang, ASan and UBSan by tests/fuzz/run.sh. Anything found
# fails the test, the input kept and named in the log.
#
# Skipped (77) when clang has no libFuzzer, and when HY_FUZZ_SECONDS=0
# leaves the fuzzers out of this build's make check (scripts/test runs
# them in its first pass only: the second would repeat the same run).
set -u
SRC=${HY_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${HY_TESTBIN:+$HY_TESTBIN/../..}
BUILD=${BUILD:-$PWD}
SECONDS_EACH=${HY_FUZZ_SECONDS:-60}
case $SECONDS_EACH in
'' | *[!0-9]*)
	echo "fuzz: HY_FUZZ_SECONDS=\"$SECONDS_EACH\" is not a number of seconds"
	exit 99
	;;
0)
	echo "fuzz: HY_FUZZ_SECONDS=0: the fuzzers are not run in this build"
	exit 77
	;;
esac
exec "$SRC/tests/fuzz/run.sh" "$BUILD" "$SECONDS_EACH"
