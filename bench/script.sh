# script.sh - what bench/reca.sh, bench/devday.sh and the trace scripts
# (simulate.sh, simborg.sh, pore.sh, openloop.sh) share (sourced): their
# name, the source tree, die(), --help from the script's header comment,
# the build tree (BUILD_DIR, else /work/build when it has the programs,
# else _build at the top of the source tree), the trace scripts' options
# and the output to --out.
# shellcheck shell=bash

NAME=$(basename "$0")
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD=""

die() {
	printf '%s: ERROR: %s\n' "$NAME" "$*" >&2
	exit 1
}

# Prints the header comment of the script (up to `set -u`) as its help.
bench_help() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
}

# bench_build PROGRAM...: BUILD made absolute and checked to hold them.
bench_build() {
	local p given
	if [ -z "$BUILD" ]; then
		if [ -x "/work/build/$1" ]; then BUILD=/work/build; else BUILD=$SRCDIR/_build; fi
	fi
	given=$BUILD
	BUILD=$(cd "$given" 2>/dev/null && pwd) || die "no build tree at $given"
	for p in "$@"; do
		[ -x "$BUILD/$p" ] || die "no $p in $BUILD (build first)"
	done
}

# bench_trace_args ARGS...: the options of the scripts that replay the
# shared traces (simulate, simborg, pore, openloop): BUILD_DIR, --traces
# DIR (default ../shared/traces beside the source tree, else
# /work/shared/traces), --out FILE, -h. An option of the script's own goes
# to its bench_option function (OPTION VALUE; returns 0 when it took the
# value). Sets TRACES, OUT, BUILD and HYBRIDCTL, and checks for jq.
bench_trace_args() {
	TRACES=$SRCDIR/../shared/traces
	[ -d "$TRACES" ] || TRACES=/work/shared/traces
	OUT=""
	while [ $# -gt 0 ]; do
		case $1 in
		--traces) TRACES=$2 && shift ;;
		--out) OUT=$2 && shift ;;
		-h | --help) bench_help ;;
		-*)
			if declare -F bench_option >/dev/null && [ $# -ge 2 ] && bench_option "$1" "$2"; then
				shift
			else
				die "unknown option $1 (see --help)"
			fi
			;;
		*) BUILD=$1 ;;
		esac
		shift
	done
	bench_build hybridctl
	HYBRIDCTL=$BUILD/hybridctl
	[ -d "$TRACES" ] || die "no traces in $TRACES (--traces DIR)"
	command -v jq >/dev/null || die "jq is needed (apt-get install jq)"
}

# ... | bench_output: standard output, and the file --out names.
bench_output() {
	if [ -n "$OUT" ]; then tee "$OUT"; else cat; fi
}
