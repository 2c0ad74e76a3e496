#!/bin/bash
# agedisk.sh - BORG on an aged disk, measured at the block layer (issue 18).
#
# Builds an ext4 image on a loop device and ages it the way a home
# directory ages, deterministic from --seed: a real repository (this
# project's own history, from the checkout the script is in) fetched and
# checked out release by release into it, other files written in between,
# some of those deleted, edits appended to sources. Then, for each set,
# from a copy of that image: a developer's morning over the tree (git
# status, git log -20 --stat, grep -rn over the sources, reading every
# header, preprocessing the .c files one by one), page cache dropped first,
# with every request that reaches the loop device recorded from the
# tracepoint block:block_rq_issue (a private tracefs instance, no blktrace)
# and priced with device/devmodel.c's HDD model (bench/blkprice.c) fed the
# real sectors.
#
# Sets (each from a fresh copy of the aged image; --sets picks some):
#   ext4              the tree on the image, no hybridfs
#   none              hybridfs cache=none over it, never reorganized
#   none-reorg        ... the morning once, hybridctl reorganize, the morning traced
#   none-reorg2       ... a second morning and a second reorganization first
#   none-remount      ... none-reorg, then unmounted and mounted again
#   defaults, defaults-reorg, defaults-reorg2, defaults-remount
#                     the same with hybridfs's defaults (the database and
#                     the BOPT in the state folder on the image: a machine
#                     with one disk, where the default has no SSD store
#                     since issue 19; --options cache_size=256M asks for
#                     the store there)
#   none-emulate-reorg
#                     the same after the morning and a reorganization:
#                     the wall time (column "wall s": the traced part,
#                     page cache dropped) against none-emulate's
#   none-emulate      hybridfs cache=none,emulate=hdd (the model sized as
#                     the image): the morning traced, and beside the
#                     trace's price a row "none-emulate:model" with what
#                     the daemon's emulation charged for the same morning
#                     (hybridctl status --json, before and after): the
#                     check that emulate=hdd agrees with the real disk;
#                     and a row "none-emulate:data": the trace's requests
#                     that touch file data only (the tree's extents and
#                     the state files', taken before the unmount), the
#                     part the emulation sees (it sees no inode table,
#                     directory or journal block)
#   store-cold        hybridfs with a named cache store (cache=, a file in
#                     the work folder: not on the traced loop device, so it
#                     stands for an SSD) and no front buffer (front_buffer=0:
#                     a block read once goes to the store; the heat filter
#                     would keep a single morning's blocks off it), made
#                     new: the morning traced
#   store-warm        the same store after a morning and an unmount: the
#                     mount keeps its lines (issue 19), the morning traced
#                     (page cache dropped, as after a reboot)
#   ext4-other, none-other, none-reorg-other
#                     a workload that does not repeat the morning (every
#                     file of the tree in reverse name order, then the
#                     other files), traced instead of the morning: on ext4,
#                     on hybridfs cache=none, and after the morning and a
#                     reorganization planned from it (a plan must not lose)
#   store             hybridfs with a cache store on another disk (a file
#                     in the run's folder, not the traced image; cache_size
#                     512M) made new: the morning traced, a cold cache
#   store-again       ... the morning once, then the morning traced in the
#                     same mount (page cache dropped): the cache warm
#   store-remount     ... the morning once, unmounted, mounted again, the
#                     morning traced: what the store kept across the mount
# For every set that reorganizes, the reorganization itself is traced too
# (page cache dropped first, as a night's run would find it) and priced on
# its own line, SET:copy: what the layout costs to make.
#
#   bench/agedisk.sh [--size SIZE] [--seed S] [--releases N] [--dir DIR]
#                    [--sets "ext4 none none-reorg ..."] [--out FILE] [--keep]
#                    [--options OPTS] [BUILD_DIR]
#
# Run as root (loop devices, mounts, tracefs, drop_caches). BUILD_DIR: a
# built tree with hybridfs and hybridctl (default _build at the top).
# Prints a markdown table: requests, seeks, MiB read, model disk time, and
# the ratio to the first set; and, when the ext4 set ran, the ideal bound
# from its trace: every 4 KiB of file data it read laid out contiguously in
# first-access order, metadata left where it is (bench/blkprice.c -i, with
# every file's extents from filefrag).
# --options OPTS: added to every hybridfs mount's -o (to weigh one
# option, e.g. bopt_readahead=0, against the defaults in alternate runs).
# --keep: the work folder stays (the traces in traces/, each set's state
# files' extents in places/SET, the tree's in extents) and is named at
# the end, for a closer look.
set -u
set -o pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
size=3G seed=17 releases=24 dir=/var/tmp out="" keep=""
sets="ext4 none none-reorg none-reorg2 none-remount defaults defaults-reorg defaults-reorg2 defaults-remount"
all_sets=" $sets ext4-other none-other none-reorg-other none-emulate none-emulate-reorg store store-again store-remount store-cold store-warm "
build=$TOP/_build
extra=""
while [ $# -gt 0 ]; do
	case $1 in
	--size) size=${2:?--size needs a size}; shift 2 ;;
	--seed) seed=${2:?--seed needs a number}; shift 2 ;;
	--releases) releases=${2:?--releases needs a number}; shift 2 ;;
	--dir) dir=${2:?--dir needs a folder}; shift 2 ;;
	--sets) sets=${2:?--sets needs a list}; shift 2 ;;
	--out) out=${2:?--out needs a file}; shift 2 ;;
	--keep) keep=1; shift ;;
	--options) extra=${2:?--options needs mount options}; shift 2 ;;
	-h | --help) sed -n '2,66p' "$0"; exit 0 ;;
	-*) echo "agedisk: unknown option $1" >&2; exit 2 ;;
	*) build=$1; shift ;;
	esac
done
die() { echo "agedisk: $*" >&2; exit 1; }
log() { echo "agedisk: $*" >&2; }
[ "$(id -u)" = 0 ] || die "run as root (loop devices, mounts, tracefs, drop_caches)"
for t in losetup mkfs.ext4 git cc; do command -v $t >/dev/null || die "needs $t"; done
[ -x "$build/hybridfs" ] && [ -x "$build/hybridctl" ] || die "no hybridfs/hybridctl in $build (build first)"
case $seed in '' | *[!0-9]*) die "--seed wants a number" ;; esac
case $releases in '' | *[!0-9]* | 0) die "--releases wants a number > 0" ;; esac
for s in $sets; do
	case $all_sets in
	*" $s "*) ;;
	*) die "--sets: unknown set \"$s\"" ;;
	esac
	[ "$s" = none-emulate ] && { command -v jq >/dev/null || die "the set none-emulate needs jq"; }
done

T=$(mktemp -d "$dir/agedisk.XXXXXX") || die "mktemp in $dir failed"
loop="" pid="" tracing="" inst=""
cleanup() {
	[ -n "$pid" ] && { fusermount3 -u -z "$T/mnt" 2>/dev/null; kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	[ -n "$inst" ] && { echo 0 >"$inst/tracing_on" 2>/dev/null; rmdir "$inst" 2>/dev/null; }
	mountpoint -q "$T/disk" && umount "$T/disk"
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	[ -n "$tracing" ] && umount "$tracing" 2>/dev/null
	if [ -n "$keep" ]; then log "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
mkdir -p "$T/disk" "$T/mnt" "$T/traces" "$T/places"
export HYBRIDFS_RUNTIME_DIR=$T/run

# the pricing tool, against this build's libraries
cc -O2 -std=gnu11 -I"$TOP/include" -include "$build/config.h" -o "$T/blkprice" \
	"$TOP/bench/blkprice.c" "$build/device/libhydevice.a" "$build/lib/libhycommon.a" -lm ||
	die "cannot build bench/blkprice.c"

# tracefs: a mount of our own, always (another run's mount, found in
# /proc/mounts, may be unmounted under us when that run ends)
tracing=$T/tracefs
mkdir -p "$tracing"
mount -t tracefs nodev "$tracing" || die "cannot mount tracefs"
tr=$tracing
[ -d "$tr/events/block/block_rq_issue" ] || die "no block:block_rq_issue tracepoint in $tr"

attach() { # image: the loop device over it, mounted at $T/disk
	loop=$(losetup --find --show "$1") || die "losetup failed"
	mount -o noatime "$loop" "$T/disk" || die "cannot mount $loop"
}
detach() {
	umount "$T/disk" || die "cannot unmount $T/disk"
	losetup -d "$loop"
	loop=""
}

# ---- the aged image -----------------------------------------------------
RANDOM=$seed
rnd() { echo $((RANDOM % $1)); } # 0..$1-1, from the seeded sequence
log "making a $size image, aged from $releases releases of $(git -C "$TOP" rev-parse --short HEAD)'s history (seed $seed)"
truncate -s "$size" "$T/aged.img"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$T/aged.img" || die "mkfs.ext4 failed"
attach "$T/aged.img"
git clone -q --bare "$TOP" "$T/origin.git" || die "cannot clone $TOP"
mapfile -t commits < <(git -C "$T/origin.git" rev-list --reverse HEAD)
n=${#commits[@]}
[ "$n" -ge "$releases" ] || releases=$n
tree=$T/disk/src
git init -q "$tree"
filler=0
for r in $(seq 1 "$releases"); do
	c=${commits[$(((r * n) / releases - 1))]}
	# a fetch over time: a pack of its own each release
	git -C "$tree" fetch -q "$T/origin.git" "$c" || die "fetch $c failed"
	git -C "$tree" -c advice.detachedHead=false checkout -q -f "$c" || die "checkout $c failed"
	# other files written in between (a download, a build, mail)
	for _ in $(seq 1 $((4 + $(rnd 8)))); do
		filler=$((filler + 1))
		mkdir -p "$T/disk/other/$((filler % 13))"
		head -c $(((1 + $(rnd 512)) * 1024)) /dev/urandom >"$T/disk/other/$((filler % 13))/f$filler"
	done
	# some of them deleted again
	for _ in $(seq 1 $(rnd 4)); do
		k=$((1 + $(rnd filler)))
		rm -f "$T/disk/other/$((k % 13))/f$k"
	done
	# edits appended to sources, not committed
	mapfile -t srcs < <(git -C "$tree" ls-files '*.c' '*.h')
	for _ in $(seq 1 $((1 + $(rnd 6)))); do
		[ ${#srcs[@]} -gt 0 ] || break
		echo "/* edit $r */" >>"$tree/${srcs[$(rnd ${#srcs[@]})]}"
	done
	sync
done
log "aged: $(du -sh "$T/disk" | cut -f1) used, $filler other files written"
# where every file's data lies (sectors), for the ideal bound
find "$T/disk" -type f -print0 | xargs -0 filefrag -e -b512 2>/dev/null |
	awk -F: '/^ *[0-9]+:/ { split($3, p, "[.]+"); n = $4 + 0; if (n > 0) print p[1] + 0, n }' \
		>"$T/extents"
detach

# ---- one traced morning ------------------------------------------------
morning() { # $1: the tree to work in
	local w=$1
	(
		cd "$w" || exit 1
		git status --short >/dev/null
		git log -20 --stat >/dev/null
		grep -rn "hy_" --include=*.c . >/dev/null
		find . -name '*.h' -not -path './.git/*' -exec cat {} + >/dev/null
		find . -name '*.c' -not -path './.git/*' | sort | while read -r f; do
			cc -E -w -Iinclude "$f" >/dev/null 2>&1
		done
	)
	return 0
}

# a workload that does not repeat the morning: every file of the tree in
# reverse name order (sources the plan moved among files it did not), then
# the other files
other_work() { # $1: the tree to work in
	(
		cd "$1" || exit 1
		find . -path ./.git -prune -o -type f -print | sort -r | tr '\n' '\0' |
			xargs -0 -r cat >/dev/null
		find ../other -type f | sort | tr '\n' '\0' | xargs -0 -r cat >/dev/null
	)
	return 0
}

# traced WORK ARG TRACE: runs "WORK ARG" with the page cache dropped first
# and every request that reaches the loop device recorded into TRACE
traced() {
	local dev work=$1 arg=$2 out=$3
	sync
	echo 3 >/proc/sys/vm/drop_caches
	dev=$(stat -c '%t %T' "$loop")
	inst=$tr/instances/hyagedisk.$$
	mkdir "$inst" || die "cannot make a tracefs instance"
	echo 65536 >"$inst/buffer_size_kb"
	set -- $dev
	echo "dev == $(((0x$1 << 20) | 0x$2))" >"$inst/events/block/block_rq_issue/filter"
	echo 1 >"$inst/events/block/block_rq_issue/enable"
	echo 1 >"$inst/tracing_on"
	t0=$(date +%s.%N)
	"$work" "$arg"
	sync
	echo "$t0 $(date +%s.%N)" | awk '{ printf "%.2f\n", $2 - $1 }' >"$out.wall"
	echo 0 >"$inst/tracing_on"
	cat "$inst/trace" >"$out"
	rmdir "$inst"
	inst=""
	grep -q "LOST\|lost" "$out" && log "warning: the trace buffer overflowed for $out"
	return 0
}
traced_morning() { traced morning "$1" "$2"; }
traced_other() { traced other_work "$1" "$2"; }

# The state folder on the image, named: the default one is out of the tree
# (/var/lib/hybridfs for root, issue 19), which would put the database and
# the store on another disk than the one traced. On the image, with the
# BOPT, as a machine with one disk has them (state= keeps the BOPT in it).
mount_hybridfs() { # $1: extra options
	"$build/hybridfs" "$T/disk" "$T/mnt" -f -o "writeback_cache=off,state=$T/disk/.hybridfs${1:+,$1}${extra:+,$extra}" 2>>"$T/daemon.log" &
	pid=$!
	for _ in $(seq 1 600); do
		awk -v m="$T/mnt" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo && return 0
		kill -0 "$pid" 2>/dev/null || { cat "$T/daemon.log" >&2; die "the daemon exited"; }
		sleep 0.1
	done
	die "the mount did not come up"
}
umount_hybridfs() {
	fusermount3 -u "$T/mnt" || die "cannot unmount $T/mnt"
	wait "$pid"
	pid=""
}
# where the daemon's state lies on the disk (sectors): the BOPT, the
# databases; "START LENGTH FILE" lines into $1
state_places() {
	find "$T/disk" -path "$T/disk/src" -prune -o -path "$T/disk/other" -prune -o \
		-type f -print0 | xargs -0 -r filefrag -e -b512 2>/dev/null |
		awk -F: '/^Filesystem type/ { next } /^File size/ { f = $0; sub(/^File size of /, "", f); sub(/ is .*/, "", f); next }
			/^ *[0-9]+:/ { split($3, p, "[.]+"); n = $4 + 0; if (n > 0) print p[1] + 0, n, f }' \
			>"$1"
}
# the trace on stdin, only its requests that touch a sector of the
# extents in the files named ("START LENGTH ..." lines)
data_requests() {
	sort -n -k1,1 "$@" >"$T/data.extents"
	awk 'NR == FNR { s[n] = $1; e[n] = $1 + $2; n++; next }
		/block_rq_issue:/ && match($0, /\) [0-9]+ \+ [0-9]+/) {
			split(substr($0, RSTART + 2, RLENGTH - 2), a, " ")
			lo = 0; hi = n; last = a[1] + a[3] - 1
			while (lo < hi) { m = int((lo + hi) / 2); if (s[m] <= last) lo = m + 1; else hi = m }
			# the extents starting at or before the request end; any reaching into it
			for (i = lo - 1; i >= 0 && i >= lo - 64; i--) if (e[i] > a[1] + 0) { print; break }
		}' "$T/data.extents" -
}
# daemon_part PART: the daemon's status part PART (emulation, cache) as
# JSON, once the control socket is up (it comes up after the mount does);
# fails when it never shows
daemon_part() {
	local j
	for _ in $(seq 1 100); do
		j=$("$build/hybridctl" status "$T/mnt" --json 2>/dev/null) &&
			jq -e ".mounts[0].daemon.$1 | objects" <<<"$j" >/dev/null &&
			{ jq -c ".mounts[0].daemon.$1" <<<"$j"; return 0; }
		sleep 0.1
	done
	return 1
}
# the emulation's counts, as "key=value" figures like blkprice's
emulation_figures() {
	local j
	j=$(daemon_part emulation) || return 1
	jq -r '"requests=\(.requests) reads=\(.reads) writes=\(.writes) bytes_read=\(.bytes_read) bytes_written=\(.bytes_written) seeks=\(.seeks) busy_ms=\(.modeled_ms)"' <<<"$j"
}
# the cache's read figures (SSD hits and misses, blocks kept at mount) as
# "key=value" words, or nothing when jq or the figures are missing
cache_figures() {
	local j
	command -v jq >/dev/null || return 0
	j=$(daemon_part cache) || return 0
	jq -r 'to_entries[] | select(.value | numbers) | "\(.key)=\(.value)"' <<<"$j" | tr '\n' ' '
}
reorganize_now() {
	"$build/hybridctl" reorganize "$T/mnt" --quiet >>"$T/reorg.log" 2>&1 ||
		{ cat "$T/reorg.log" >&2; die "hybridctl reorganize failed"; }
}
# reorganize SET: the reorganization, traced into SET:copy (the last one
# of the set: a second overwrites the first's)
reorganize() { traced reorganize_now "" "$T/traces/$1:copy"; }

# ---- the sets -------------------------------------------------------------
results=$T/results
# (kept in $T/traces: one trace file a set)
: >"$results"
for s in $sets; do
	log "set $s"
	cp --sparse=always "$T/aged.img" "$T/run.img"
	attach "$T/run.img"
	rm -f "$T/store"
	case $s in
	none*) opt=cache=none ;;
	store*) opt="cache=$T/store,cache_size=512M" ;;
	*) opt="" ;;
	esac
	work=traced_morning
	case $s in *-other) work=traced_other ;; esac
	case $s in
	ext4 | ext4-other) $work "$T/disk/src" "$T/traces/$s" ;;
	none | defaults | none-other | store)
		mount_hybridfs "$opt"
		$work "$T/mnt/src" "$T/traces/$s"
		umount_hybridfs
		;;
	store-again | store-remount)
		mount_hybridfs "$opt"
		morning "$T/mnt/src"
		if [ "$s" = store-remount ]; then
			umount_hybridfs
			mount_hybridfs "$opt"
		fi
		cache_figures >"$T/cache.before"
		$work "$T/mnt/src" "$T/traces/$s"
		cache_figures >"$T/cache.after"
		umount_hybridfs
		;;
	store-cold | store-warm)
		rm -f "$T/store.cache"
		# no front buffer: one morning's blocks go to the store (with
		# one, the heat filter keeps blocks read once off the SSD, and a
		# single morning leaves the store empty)
		mount_hybridfs "cache=$T/store.cache,front_buffer=0"
		if [ "$s" = store-warm ]; then
			morning "$T/mnt/src"
			umount_hybridfs
			mount_hybridfs "cache=$T/store.cache,front_buffer=0"
		fi
		traced_morning "$T/mnt/src" "$T/traces/$s"
		daemon_part cache 2>/dev/null |
			jq -c '{read_hits_dram, read_hits_ssd, read_misses, ssd_used, keep: (.keep | {kept_lines, kept_files, verified_files, warm_hits})}' \
				>"$T/traces/$s.cache" 2>/dev/null || :
		umount_hybridfs
		log "$s: cache $(cat "$T/traces/$s.cache" 2>/dev/null)"
		;;
	none-emulate-reorg)
		# the wall time of a morning on the emulated disk, after a
		# reorganization (against none-emulate's, before one)
		mount_hybridfs "$opt,emulate=hdd:capacity=$(stat -c %s "$T/aged.img")"
		morning "$T/mnt/src"
		reorganize "$s"
		traced_morning "$T/mnt/src" "$T/traces/$s"
		umount_hybridfs
		;;
	none-emulate)
		mount_hybridfs "$opt,emulate=hdd:capacity=$(stat -c %s "$T/aged.img")"
		before=$(emulation_figures) || die "cannot read the emulation's figures"
		traced_morning "$T/mnt/src" "$T/traces/$s"
		after=$(emulation_figures) || die "cannot read the emulation's figures"
		state_places "$T/places/$s.live" # the write-ahead logs exist now
		umount_hybridfs
		# the morning's share: after minus before
		echo "$before" "$after" | awk '{
			n = NF / 2
			for (i = 1; i <= n; i++) {
				split($i, a, "="); split($(i + n), b, "=")
				printf "%s%s=%s", (i > 1 ? " " : ""), a[1], b[2] - a[2]
			}
			print ""
		}' >"$T/emulation"
		;;
	*)
		mount_hybridfs "$opt"
		morning "$T/mnt/src"
		reorganize "$s"
		case $s in
		*-reorg2)
			morning "$T/mnt/src"
			reorganize "$s"
			;;
		*-remount)
			umount_hybridfs
			mount_hybridfs "$opt"
			;;
		esac
		$work "$T/mnt/src" "$T/traces/$s"
		umount_hybridfs
		;;
	esac
	state_places "$T/places/$s"
	detach
	rm -f "$T/run.img"
	echo "$s $("$T/blkprice" -c "$(stat -c %s "$T/aged.img")" <"$T/traces/$s") wall_s=$(cat "$T/traces/$s.wall")" >>"$results"
	[ -f "$T/traces/$s:copy" ] &&
		echo "$s:copy $("$T/blkprice" -c "$(stat -c %s "$T/aged.img")" <"$T/traces/$s:copy")" >>"$results"
	if [ -s "$T/cache.after" ]; then
		# the traced morning's share of the cache's reads: after minus before
		echo "$s:cache $(awk 'NR == FNR { for (i = 1; i <= NF; i++) { split($i, kv, "="); b[kv[1]] = kv[2] }; next }
			{ for (i = 1; i <= NF; i++) { split($i, kv, "="); a[kv[1]] = kv[2] } }
			END { printf "ssd_used=%d read_hits_ssd=%d read_hits_dram=%d read_misses=%d", a["ssd_used"],
				a["read_hits_ssd"] - b["read_hits_ssd"], a["read_hits_dram"] - b["read_hits_dram"],
				a["read_misses"] - b["read_misses"] }' "$T/cache.before" "$T/cache.after")" >>"$results"
	fi
	rm -f "$T/cache.before" "$T/cache.after"
	if [ "$s" = none-emulate ]; then
		echo "$s:data $(data_requests "$T/extents" "$T/places/$s.live" <"$T/traces/$s" |
			"$T/blkprice" -c "$(stat -c %s "$T/aged.img")")" >>"$results"
		echo "$s:model $(cat "$T/emulation")" >>"$results"
	fi
done

if [ -f "$T/traces/ext4" ]; then
	echo "ideal $("$T/blkprice" -c "$(stat -c %s "$T/aged.img")" -i "$T/extents" <"$T/traces/ext4")" >>"$results"
fi
{
	echo "| set | requests | seeks | MiB read | MiB written | model disk time s | vs first | wall s |"
	echo "|---|--:|--:|--:|--:|--:|--:|--:|"
	awk '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		if (NR == 1) first = v["busy_ms"]
		if ($1 ~ /:cache$/) { caches[++nc] = $0; next }
		if ($1 ~ /:copy$/) {
			printf "| %s | %d | %d | %.1f | %.1f | %.2f | | |\n", $1, v["requests"], v["seeks"],
				v["bytes_read"] / 1048576, v["bytes_written"] / 1048576, v["busy_ms"] / 1000
			next
		}
		printf "| %s | %d | %d | %.1f | %.1f | %.2f | %.2f | %s |\n", $1, v["requests"], v["seeks"],
			v["bytes_read"] / 1048576, v["bytes_written"] / 1048576, v["busy_ms"] / 1000,
			(first > 0 ? v["busy_ms"] / first : 0), ("wall_s" in v ? v["wall_s"] : "")
		delete v
	}
	END { for (i = 1; i <= nc; i++) print "\n" caches[i] }' "$results"
	echo
	echo "Image $size, seed $seed, $releases releases of $(git -C "$TOP" rev-parse --short HEAD)'s history; HDD model defaults (devmodel.h); build $build${extra:+, options $extra}."
} | if [ -n "$out" ]; then tee "$out"; else cat; fi
