# script.sh - what bench/reca.sh, bench/simulate.sh and bench/devday.sh
# share (sourced): their name, the source tree, die(), --help from the
# script's header comment, and the build tree (BUILD_DIR, else /work/build
# when it has the programs, else _build at the top of the source tree).
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
