#!/bin/bash
# kcache.sh - the kernel's metadata caches (issue 20.2): metadata-heavy
# programs on a real repository, warm, through a default hybridfs mount
# against the same folder without FUSE, and how many FUSE requests each
# run sent to the daemon (status "fuse.requests", by opcode).
#
#   bench/kcache.sh [--rounds N] [--pause S] [--dir DIR] [--repo REPO]
#                   [--extra DIR] [--opts O] BUILD [BUILD...]
#
# The tree: a clone of REPO (default: the source tree this script is in)
# with a copy of DIR (--extra, default /usr/include) committed into it,
# so that `git status` walks thousands of real files. Workloads, each run
# once to warm, then ROUNDS times (default 5) alternating native and the
# mount, the median taken:
#   git-status  git status (no optional locks: the index is not rewritten)
#   grep        grep -rn for a string that is nowhere in the tree
#   ls-lR       ls -lR
# --pause S sleeps S seconds before each run on the mount (and its
# native twin): past the kernel's timeouts, what a run costs once the
# names and attributes it keeps have expired.
# Each BUILD (a build folder with a hybridfs) is mounted in turn over the
# same backing folder, with the defaults (state folder outside the tree)
# or --opts; BUILD:OPTS adds OPTS for that mount alone (the same build
# twice, say: _build _build:opendir=daemon). Requests: the sum over one warm run, and the three opcodes
# that sent most, from the daemon's -d output on a mount of its own (any
# build prints them; nothing is timed there). Run as root: the mount, and
# the page cache is kept warm (nothing is dropped: this measures warm runs).
set -u
rounds=5 dir=/var/tmp repo="" extra=/usr/include opts="" pause=0
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
	--dir) dir=${2:?--dir needs a folder}; shift 2 ;;
	--repo) repo=${2:?--repo needs a git repository}; shift 2 ;;
	--extra) extra=${2:?--extra needs a folder}; shift 2 ;;
	--opts) opts=${2:?--opts needs mount options}; shift 2 ;;
	--pause) pause=${2:?--pause needs seconds}; shift 2 ;;
	-h | --help) sed -n '2,29p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--rounds N] [--dir DIR] [--repo REPO] [--extra DIR] [--opts O] BUILD [BUILD...]" >&2; exit 2; }
[ -n "$repo" ] || repo=$(cd "$(dirname "$0")/.." && pwd)
for spec in "$@"; do
	b=${spec%%:*}
	[ -x "$b/hybridfs" ] && [ -x "$b/hybridctl" ] || { echo "kcache: no hybridfs or hybridctl in $b" >&2; exit 2; }
done
for t in git jq grep; do
	command -v $t >/dev/null || { echo "kcache: needs $t" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "kcache: run as root (it mounts)" >&2; exit 2; }

T=$(mktemp -d "$dir/kcache.XXXXXX") || exit 2
pid=""
cleanup() {
	[ -n "$pid" ] && { fusermount3 -u -z "$T/m" 2>/dev/null; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	rm -rf "$T"
}
trap cleanup EXIT
export HYBRIDFS_RUNTIME_DIR=$T/run GIT_OPTIONAL_LOCKS=0

git clone -q "$repo" "$T/b/repo" || exit 1
cp -a "$extra" "$T/b/repo/extra" || exit 1
git -C "$T/b/repo" add -A >/dev/null && git -C "$T/b/repo" -c user.name=bench -c user.email=bench@localhost \
	commit -qm extra >/dev/null || exit 1
files=$(git -C "$T/b/repo" ls-files | wc -l)

ms_of() { # command...: its wall time in ms
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}
w_git() { git -C "$1" status; }
w_grep() { (cd "$1" && grep -rn "no-such-string-kcache-0x5f3759df" .); }
w_ls() { ls -lR "$1"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "# kcache: $(uname -r), $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
echo "# tree: clone of $repo + $extra, $files files; rounds $rounds, pause ${pause}s; opts '${opts:-defaults}'"
echo "| build | workload | native ms | hybridfs ms | ratio | requests (warm run) | most |"
echo "|---|---|---:|---:|---:|---:|---|"
mount_build() { # BUILD [-d]: mounts it over the tree, waits for its control socket
	mkdir -p "$T/m"
	"$1/hybridfs" "$T/b" "$T/m" -f ${2:-} -o "state=$T/s${opts:+,$opts}${bopts:+,$bopts}" 2>"$T/daemon.log" &
	pid=$!
	for _ in $(seq 1 600); do
		"$1/hybridctl" status "$T/m" --json >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || { echo "kcache: the daemon of $1 exited" >&2; cat "$T/daemon.log" >&2; exit 1; }
		sleep 0.05
	done
	echo "kcache: the daemon of $1 did not come up" >&2
	exit 1
}
umount_build() {
	fusermount3 -u "$T/m" || fusermount3 -u -z "$T/m"
	wait "$pid"
	pid=""
}

for spec in "$@"; do
	build=${spec%%:*} bopts=""
	[ "$build" = "$spec" ] || bopts=${spec#*:}
	label=$spec
	# the requests: a mount with -d, which prints every request it gets
	# (slower, so nothing is timed on it); a warm run, then the counted one
	mount_build "$build" -d
	declare -A sum most
	for w in git grep ls; do
		# twice: the first run's reads and listings leave the kernel to
		# ask the atime of what they read once more
		"w_$w" "$T/m/repo" >/dev/null 2>&1
		"w_$w" "$T/m/repo" >/dev/null 2>&1
		from=$(wc -l <"$T/daemon.log")
		sleep "$pause"
		"w_$w" "$T/m/repo" >/dev/null 2>&1
		counts=$(tail -n +"$((from + 1))" "$T/daemon.log" | sed -n 's/.*opcode: \([A-Z_]*\).*/\1/p' |
			sort | uniq -c | sort -rn)
		sum[$w]=$(awk '{ s += $1 } END { print s + 0 }' <<<"$counts")
		most[$w]=$(head -3 <<<"$counts" | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')
	done
	umount_build
	mount_build "$build"
	for w in git grep ls; do
		name=$w
		[ $w = git ] && name=git-status
		[ $w = ls ] && name=ls-lR
		"w_$w" "$T/b/repo" >/dev/null 2>&1
		"w_$w" "$T/m/repo" >/dev/null 2>&1
		nat="" hyb=""
		for _ in $(seq 1 "$rounds"); do
			sleep "$pause"
			nat="$nat $(ms_of "w_$w" "$T/b/repo")"
			sleep "$pause"
			hyb="$hyb $(ms_of "w_$w" "$T/m/repo")"
		done
		n=$(tr ' ' '\n' <<<"$nat" | grep . | median)
		h=$(tr ' ' '\n' <<<"$hyb" | grep . | median)
		ratio=$(awk -v n="$n" -v h="$h" 'BEGIN { printf "%.2f", (n > 0 ? h / n : 0) }')
		echo "| $label | $name | $n | $h | $ratio | ${sum[$w]} | ${most[$w]} |"
	done
	umount_build
done
