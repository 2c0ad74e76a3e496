#!/bin/bash
# gonefiles.sh - relocated blocks held by removed build outputs (issue 18
# item 5), on a small scripted tree, for one or more builds side by side.
#
# The tree: this project's own sources (git ls-files *.c *.h), copied to a
# backing folder. A developer's day on hybridfs cache=none: grep over the
# sources, each .c compiled to an object (cc -c) in obj/, the objects
# archived at once (ar: they are read back right after their write), the
# sources grepped again; `hybridctl reorganize`; then the build outputs
# removed (rm -rf obj: what `git clean -fdx` does). For each build, the
# relocated blocks, those of object files, and what removed files still
# hold in the BOPT after the clean (status map_blocks before and after).
#
#   bench/gonefiles.sh [--bopt SIZE] [--dir DIR] BUILD_DIR...
#
# Not root. BUILD_DIR: a built tree with hybridfs and hybridctl (default
# _build at the top). Prints a markdown table, one row per build.
set -u
set -o pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
bopt=32M dir=${TMPDIR:-/tmp} builds=()
while [ $# -gt 0 ]; do
	case $1 in
	--bopt) bopt=${2:?--bopt needs a size}; shift 2 ;;
	--dir) dir=${2:?--dir needs a folder}; shift 2 ;;
	-h | --help) sed -n '2,17p' "$0"; exit 0 ;;
	-*) echo "gonefiles: unknown option $1" >&2; exit 2 ;;
	*) builds+=("$1"); shift ;;
	esac
done
[ ${#builds[@]} -gt 0 ] || builds=("$TOP/_build")
die() { echo "gonefiles: $*" >&2; exit 1; }
for t in cc ar jq git; do command -v $t >/dev/null || die "needs $t"; done
T=$(mktemp -d "$dir/gonefiles.XXXXXX") || die "mktemp in $dir failed"
pid=""
cleanup() {
	[ -n "$pid" ] && { fusermount3 -u -z "$T/m" 2>/dev/null; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$T/src"
(cd "$TOP" && git ls-files '*.c' '*.h' | tar -cf - -T -) | tar -xf - -C "$T/src" ||
	die "cannot copy the sources"

printf '| build | relocated blocks | of object files | held by removed files after the clean | relocated after the clean |\n'
printf '|---|---|---|---|---|\n'
for build in "${builds[@]}"; do
	[ -x "$build/hybridfs" ] && [ -x "$build/hybridctl" ] || die "no hybridfs/hybridctl in $build"
	ctl=$build/hybridctl
	rm -rf "$T/b" "$T/state" "$T/m"
	mkdir -p "$T/b" "$T/m"
	cp -a "$T/src" "$T/b/src"
	"$build/hybridfs" "$T/b" "$T/m" -f -o \
		"writeback_cache=off,cache=none,state=$T/state,bopt_size=$bopt,reorg_rate=0" \
		2>>"$T/daemon.log" &
	pid=$!
	for _ in $(seq 1 600); do
		"$ctl" status "$T/m" --json 2>/dev/null | jq -e '.mounts[0].daemon.bopt.path' >/dev/null && break
		sleep 0.05
	done
	st() { "$ctl" status "$T/m" --json | jq -r ".mounts[0].daemon.bopt.$1"; }
	(
		cd "$T/m" || exit 1
		mkdir -p obj
		grep -rn hy_log src >/dev/null
		find src -name '*.c' | sort | while read -r c; do
			o=obj/$(echo "$c" | tr / _).o
			cc -c -w -O0 -Isrc/include -Isrc -o "$o" "$c" 2>/dev/null || rm -f "$o"
		done
		ar rcs obj/all.a obj/*.o
		grep -rn hy_log src >/dev/null
		cat src/include/hybridfs/*.h >/dev/null
	) || die "the day failed"
	"$ctl" reorganize "$T/m" --quiet || die "reorganize failed ($build)"
	before=$(st map_blocks)
	objs=0
	for f in "$T"/m/obj/*; do
		n=$("$ctl" explain "$f" --json | jq '[.ranges[] | select(.where == "bopt") | .count] | add // 0')
		objs=$((objs + n))
	done
	rm -rf "$T/m/obj"
	after=$(st map_blocks)
	held=$((after - (before - objs)))
	printf '| %s | %s | %s | %s | %s |\n' "$build" "$before" "$objs" "$held" "$after"
	fusermount3 -u "$T/m"
	wait "$pid"
	pid=""
done
