#!/bin/bash
# bigdir.sh - the first listing of a large folder through a fresh mount,
# each on a mount of its own (nothing kept from an earlier listing),
# native alternated with each hybridfs configuration round by round;
# medians, and the requests and daemon CPU of one listing (status
# "fuse.requests"; /proc/PID/stat). Listings:
#   ls -f      names alone (plain READDIR under READDIRPLUS_AUTO)
#   ls -l      a stat of each name as it is listed
#   walk       the names listed whole, then each stat'ed (ls -U | xargs
#              stat: what du, tar and rsync do)
#   find       find -name, names alone
# What they measure: with opendir=kernel each READDIR reads through a
# stream of its own moved to the request's offset, with opendir=daemon
# through the handle's one stream; readdirplus=always against auto.
#
#   bench/bigdir.sh [--rounds N] [--files N] [--dir DIR] BUILD[:OPTS]...
#
# BUILD is a build folder with hybridfs and hybridctl; :OPTS adds mount
# options (the same build twice: _build _build:opendir=daemon). Run as
# root (mounts, page cache drops before each listing).
set -u
rounds=5 files=20000 dir=/var/tmp
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
	--files) files=${2:?--files needs a number}; shift 2 ;;
	--dir) dir=${2:?--dir needs a folder}; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0"; exit 0 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--rounds N] [--files N] [--dir DIR] BUILD[:OPTS]..." >&2; exit 2; }
for spec in "$@"; do
	b=${spec%%:*}
	[ -x "$b/hybridfs" ] && [ -x "$b/hybridctl" ] || { echo "bigdir: no hybridfs or hybridctl in $b" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "bigdir: needs jq" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bigdir: run as root (it mounts and drops caches)" >&2; exit 2; }

T=$(mktemp -d "$dir/bigdir.XXXXXX") || exit 2
pid=""
cleanup() {
	[ -n "$pid" ] && { fusermount3 -u -z "$T/m" 2>/dev/null; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	rm -rf "$T"
}
trap cleanup EXIT
export HYBRIDFS_RUNTIME_DIR=$T/run
mkdir -p "$T/b/big" "$T/m"
(cd "$T/b/big" && seq -f 'a-file-with-a-name-of-some-length-%g' 1 "$files" | xargs touch) || exit 1

ms_of() { # command...: its wall time in ms
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
cpu_ms() { awk '{ print int(($14 + $15) * 1000 / '"$(getconf CLK_TCK)"') }' "/proc/$1/stat"; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
w_plain() { ls -f "$1/big"; }
w_long() { ls -l "$1/big"; }
w_walk() { (cd "$1/big" && ls -AU | xargs stat -c %s); }
w_find() { find "$1/big" -name no-such-name; }
label() { case $1 in plain) echo "ls -f" ;; long) echo "ls -l" ;; walk) echo "ls -U, stat each" ;; find) echo "find -name" ;; esac; }
workloads="plain long walk find"
mount_spec() { # SPEC: mounts it, waits for its control socket
	local b=${1%%:*} o=""
	[ "$b" = "$1" ] || o=${1#*:}
	rm -rf "$T/s"
	"$b/hybridfs" "$T/b" "$T/m" -f -o "state=$T/s${o:+,$o}" 2>"$T/daemon.log" &
	pid=$!
	for _ in $(seq 1 600); do
		"$b/hybridctl" status "$T/m" --json >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || { echo "bigdir: the daemon of $1 exited" >&2; cat "$T/daemon.log" >&2; exit 1; }
		sleep 0.05
	done
	echo "bigdir: the daemon of $1 did not come up" >&2
	exit 1
}
umount_spec() {
	fusermount3 -u "$T/m" || fusermount3 -u -z "$T/m"
	wait "$pid"
	pid=""
}
requests() { "${1%%:*}/hybridctl" status "$T/m" --json | jq -c '.mounts[0].daemon.fuse.requests'; }

echo "# bigdir: $(uname -r), $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
echo "# a folder of $files empty files; rounds $rounds, each listing on a fresh mount after a cache drop"
echo "| mount | listing | native ms | hybridfs ms | ratio | daemon CPU ms | requests |"
echo "|---|---|---:|---:|---:|---:|---|"
declare -A nat hyb cpu req
for round in $(seq 1 "$rounds"); do
	for w in $workloads; do
		for spec in "$@"; do
			drop
			nat[$w]="${nat[$w]:-} $(ms_of "w_$w" "$T/b")"
			mount_spec "$spec"
			drop
			c0=$(cpu_ms "$pid")
			hyb[$spec/$w]="${hyb[$spec/$w]:-} $(ms_of "w_$w" "$T/m")"
			cpu[$spec/$w]="${cpu[$spec/$w]:-} $(($(cpu_ms "$pid") - c0))"
			[ "$round" = 1 ] && req[$spec/$w]=$(requests "$spec")
			umount_spec
		done
	done
done
for w in $workloads; do
	n=$(tr ' ' '\n' <<<"${nat[$w]}" | grep . | median)
	for spec in "$@"; do
		h=$(tr ' ' '\n' <<<"${hyb[$spec/$w]}" | grep . | median)
		c=$(tr ' ' '\n' <<<"${cpu[$spec/$w]}" | grep . | median)
		ratio=$(awk -v n="$n" -v h="$h" 'BEGIN { printf "%.2f", (n > 0 ? h / n : 0) }')
		echo "| $spec | $(label $w) | $n | $h | $ratio | $c | ${req[$spec/$w]} |"
	done
done
for w in $workloads; do
	echo "- native $(label $w):${nat[$w]}"
	for spec in "$@"; do
		echo "- $spec $(label $w):${hyb[$spec/$w]} (daemon CPU${cpu[$spec/$w]})"
	done
done
