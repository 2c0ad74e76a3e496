#!/bin/bash
# dramline.sh - DRAM per cached line on a real mount (issue 19): the
# status's ssd_meta_bytes, dram_bytes_per_line and dram_bytes_per_store_line
# with the store 66% full and full, for two kinds of data:
#   big    one file read once in random order (fio randread 4 KiB,
#          O_DIRECT) to fill two thirds of the store, then a second one to
#          fill the rest;
#   tree   copies of a source tree (default /usr/include: about 10,000
#          files, most of them a few blocks) read file by file, until 66%,
#          then until full: the per-file cost shows here.
# Each on a fresh mount and a fresh store (cache_size=--store,
# heat_threshold=0: every block the 16 MiB front buffer lets go enters the
# store, as in bench/cache.sh; the front buffer's own are not lines),
# the daemon's VmRSS beside. Not root: no page cache is dropped, so each
# file is read once through the mount (FUSE sees every block once).
#
# Usage: bench/dramline.sh [BUILD_DIR] [--store SIZE] [--tree DIR]
#                          [--dir DIR] [--keep]
# BUILD_DIR: a built tree with hybridfs and hybridctl (default _build at the
# top of the source tree). --dir: where the backing data, mounts and stores
# go (default a new folder under /tmp). Prints one Markdown table.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$HERE/../_build
STORE=768M
TREE=/usr/include
DIR=
KEEP=0
while [ $# -gt 0 ]; do
	case $1 in
	--store) STORE=$2 && shift ;;
	--tree) TREE=$2 && shift ;;
	--dir) DIR=$2 && shift ;;
	--keep) KEEP=1 ;;
	-*) echo "dramline.sh: unknown option $1" >&2 && exit 2 ;;
	*) BUILD=$1 ;;
	esac
	shift
done
HYBRIDFS=$BUILD/hybridfs
HYBRIDCTL=$BUILD/hybridctl
[ -x "$HYBRIDFS" ] && [ -x "$HYBRIDCTL" ] || {
	echo "dramline.sh: no hybridfs and hybridctl in $BUILD" >&2
	exit 1
}
command -v jq >/dev/null || { echo "dramline.sh: jq is missing" >&2 && exit 1; }
command -v fio >/dev/null || { echo "dramline.sh: fio is missing" >&2 && exit 1; }
[ -n "$DIR" ] || DIR=$(mktemp -d /tmp/dramline.XXXXXX)
mkdir -p "$DIR"
MNT=
cleanup() {
	[ -n "$MNT" ] && mountpoint -q "$MNT" && fusermount3 -u "$MNT"
	[ "$KEEP" = 1 ] || rm -rf "$DIR"
}
trap cleanup EXIT

status() { "$HYBRIDCTL" status "$MNT" --json | jq -r ".mounts[0].daemon | $1"; }

# mount NAME: a fresh mount of $DIR/NAME.back with a fresh store
mount_fresh() {
	local i
	MNT=$DIR/$1.mnt
	rm -rf "$DIR/$1.state"
	mkdir -p "$MNT" "$DIR/$1.back"
	"$HYBRIDFS" "$DIR/$1.back" "$MNT" -f -o \
		"state=$DIR/$1.state,cache=$DIR/$1.state/store,cache_size=$STORE,heat_threshold=0" \
		2>>"$DIR/daemon.log" &
	PID=$!
	for i in $(seq 1 1200); do
		[ "$(status .pid 2>/dev/null)" = "$PID" ] && return 0
		sleep 0.05
	done
	echo "dramline.sh: the mount of $1 did not come up (see $DIR/daemon.log)" >&2
	exit 1
}

row() { # WHAT
	local rss
	rss=$(awk '/VmRSS/ {print $2}' "/proc/$PID/status")
	echo "| $1 | $(status .cache.ssd_used) / $(status .cache.ssd_lines) | $(status '.cache.ssd_meta_bytes // "-"') | $(status .cache.dram_bytes_per_line) | $(status '.cache.dram_bytes_per_store_line // "-"') | $(status '.cache.file_meta_bytes // "-"') | $((rss / 1024)) MiB |"
}

used() { status .cache.ssd_used; }
lines() { status .cache.ssd_lines; }

unmount() {
	fusermount3 -u "$MNT"
	wait "$PID"
	MNT=
}

echo "| data, fill | lines used / store | ssd_meta_bytes | dram_bytes_per_line | dram_bytes_per_store_line | file_meta_bytes | VmRSS |"
echo "|---|--:|--:|--:|--:|--:|--:|"

# ---- big: one file to 66%, another to full ----
mount_fresh big
n=$(lines)
mib66=$((n * 2 / 3 * 4096 / 1048576))
mibfull=$(((n - n * 2 / 3) * 4096 / 1048576 + 16))
head -c "${mib66}M" /dev/zero | tr '\0' 'a' >"$DIR/big.back/a"
head -c "${mibfull}M" /dev/zero | tr '\0' 'b' >"$DIR/big.back/b"
# every block once in random order, 4 KiB, O_DIRECT (fio's random map):
# a sequential read is mostly kept out of the store (the read side's
# admission), random reads are what a cache is for
rd() { fio --name=fill --filename="$1" --rw=randread --bs=4k --direct=1 --ioengine=psync \
	--randrepeat=1 --output=/dev/null >/dev/null 2>&1; }
rd "$MNT/a"
row "one file, 66%"
rd "$MNT/b"
row "one file, full"
unmount
rm -rf "$DIR/big.back" "$DIR/big.state"

# ---- tree: copies of $TREE, file by file ----
mount_fresh tree
n=$(lines)
k=0
done66=0
while [ "$(used)" -lt "$n" ] && [ $k -lt 64 ]; do
	cp -a "$TREE" "$DIR/tree.back/c$k" 2>/dev/null
	find "$MNT/c$k" -type f -exec cat {} + >/dev/null 2>&1
	k=$((k + 1))
	if [ $done66 = 0 ] && [ "$(used)" -ge $((n * 2 / 3)) ]; then
		row "$(basename "$TREE") x $k, 66% or more"
		done66=1
	fi
done
row "$(basename "$TREE") x $k, full"
unmount
