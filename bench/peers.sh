#!/bin/bash
# shellcheck disable=SC2034 # BN_LABEL_*, BN_UNIT_*, BN_DIR_* are read through eval
# peers.sh - issue 20's goal table: the plain folder (native), hybridfs
# with its defaults, hybridfs bare (profile=off,cache=none,bopt=none),
# mergerfs and libfuse's passthrough_hp, side by side in one run, on the
# same disk (and, with --before, an older build of hybridfs beside).
#
# Workloads, per round; inside a round every workload runs on each system
# in turn, the systems' order turned by one each round (so no system is
# always first after a cache drop):
#   seqwrite      fio, 1 MiB writes, --size bytes to a new file, end_fsync=1
#   seqread_cold  that file in 1 MiB reads, page cache dropped first
#   seqread_warm  again at once, the cache kept (invalidate=0)
#   randread      4 KiB random reads, 2 jobs at QD1, of a --rand-size file
#                 read whole first (page cache hot: the FUSE mounts'
#                 own page cache, not only the backing file's), time_based
#   randwrite     4 KiB random writes, one job, fsync every 32, same file,
#                 time_based
#   create/stat/unlink  --files files of 1 KiB (bench/metadrv.c), page
#                 cache dropped before each phase (as bench/meta.sh)
#   untar/readtree/rmtree  /usr/include: tar -xf, cat of every file, rm -rf
#   gitstatus     git status in a clone of --repo (made in the backing
#                 folder before the mount), warm: two runs untimed, then
#                 the mean of --repeat timed runs
#   grep          grep -rn over that clone, warm likewise
# Besides the times, the daemon's CPU time (utime + stime of every thread,
# /proc/PID/stat) per workload for each FUSE system: a count that the
# machine's load moves less than a time.
#
# Peers: mergerfs from Debian (installed with apt-get when missing), one
# branch, bench/common.sh's options; passthrough_hp, the example of the
# installed libfuse (3.14), as its authors run it (no options: the kernel's
# write-back cache, entry and attribute timeouts of a day, keep_cache,
# splice), built from Debian's source package of fuse3 (a deb-src entry in
# its own file, /etc/apt/sources.list.d/hybridfs-bench-src.sources, and
# apt-get source; only example/passthrough_hp.cc is compiled, with g++
# against pkg-config fuse3) and kept in /var/tmp/hybridfs-bench/ so that
# reruns do not build it again.
#
# Run as root (page cache drops, mounts, apt-get), on an otherwise quiet
# machine, e.g. `flock /work/agedisk.lock bench/peers.sh --runs 3 ...`.

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

BN_ALL_SYSTEMS="native hybridfs bare mergerfs passthrough_hp"
BN_SYSTEMS=$BN_ALL_SYSTEMS

SEQ_SIZE=1G
RAND_SIZE=256M
RUNTIME=10
NFILES=20000
FILE_SIZE=1024
TREE=/usr/include
REPO=/work/main
REPEAT=5
GREP_WORD=include
BARE_OPTS=profile=off,cache=none,bopt=none
PHP_CACHE=${PHP_CACHE:-/var/tmp/hybridfs-bench}
PASSTHROUGH_HP=${PASSTHROUGH_HP:-}
HYBRIDFS_BEFORE="" BEFORE_OPTS=""
WORKLOADS="seqwrite seqread_cold seqread_warm randread randwrite create stat unlink untar readtree rmtree gitstatus grep"
ONLY_WL=""
SET_RAND="" SET_RUNTIME="" SET_FILES="" SET_TREE="" SET_REPO="" SET_REPEAT=""

bn_usage_extra() {
	cat <<EOF
peers.sh options (besides --only, which here takes
native,hybridfs,bare,mergerfs,passthrough_hp):
  --rand-size SIZE  random I/O file (default $RAND_SIZE)
  --runtime SEC     seconds per random workload (default $RUNTIME)
  --files N         small files for create/stat/unlink (default $NFILES)
  --tree DIR        folder to untar, read and delete (default $TREE)
  --repo DIR        git repository cloned for git status and grep (default
                    $REPO)
  --repeat N        timed runs of git status and grep per round (default $REPEAT)
  --workloads LIST  comma separated subset of:
                    $(echo "$WORKLOADS" | tr ' ' ',')
  --passthrough-hp PATH  a passthrough_hp binary to use instead of building one
  --before PATH     another hybridfs daemon (an older build) with the same
                    defaults: a column "before" beside hybridfs, alternated
                    with the others in the same rounds
  --before-opts O   extra -o for the "before" mount alone (the same daemon
                    as --hybridfs with one option changed, say)
Environment: HYBRIDFS_OPTS (extra -o for both hybridfs mounts),
MERGERFS_OPTS, PASSTHROUGH_HP, PHP_CACHE (where the built passthrough_hp is
kept, default $PHP_CACHE).
EOF
}

CMDLINE=("$@")
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--rand-size) SET_RAND=${2:?--rand-size needs a size}; shift ;;
	--runtime) SET_RUNTIME=${2:?--runtime needs seconds}; shift ;;
	--files) SET_FILES=${2:?--files needs a number}; shift ;;
	--tree) SET_TREE=${2:?--tree needs a folder}; shift ;;
	--repo) SET_REPO=${2:?--repo needs a git repository}; shift ;;
	--repeat) SET_REPEAT=${2:?--repeat needs a number}; shift ;;
	--workloads) ONLY_WL=$(echo "${2:?--workloads needs a list}" | tr ',' ' '); shift ;;
	--passthrough-hp) PASSTHROUGH_HP=${2:?--passthrough-hp needs a path}; shift ;;
	--before) HYBRIDFS_BEFORE=${2:?--before needs a hybridfs daemon}; shift ;;
	--before-opts) BEFORE_OPTS=${2:?--before-opts needs mount options}; shift ;;
	*) args+=("$1") ;;
	esac
	shift
done

if [ -n "$HYBRIDFS_BEFORE" ]; then
	[ -x "$HYBRIDFS_BEFORE" ] || bn_die "--before: '$HYBRIDFS_BEFORE' is not executable"
	HYBRIDFS_BEFORE=$(cd "$(dirname "$HYBRIDFS_BEFORE")" && pwd)/$(basename "$HYBRIDFS_BEFORE")
	BN_ALL_SYSTEMS="native before hybridfs bare mergerfs passthrough_hp"
	BN_SYSTEMS=$BN_ALL_SYSTEMS
fi

# mergerfs must be there before bn_init checks for it (parsing twice is
# harmless: the options only set variables).
bn_parse_args "${args[@]+"${args[@]}"}"
if bn_has mergerfs && ! command -v mergerfs >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || bn_die "mergerfs is missing and installing it needs root"
	bn_log "installing mergerfs (apt-get)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q mergerfs >/dev/null ||
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mergerfs >/dev/null; } ||
		bn_die "apt-get install mergerfs failed"
fi

bn_init "${args[@]+"${args[@]}"}"
bn_has bare && ! bn_has hybridfs && bn_find_hybridfs
bn_need fio "apt-get install fio"
bn_need jq "apt-get install jq"
bn_need cc "apt-get install gcc"
bn_need tar
bn_need git "apt-get install git"

if [ "$BN_QUICK" = 1 ]; then
	SEQ_SIZE=32M RAND_SIZE=16M RUNTIME=2 NFILES=500 REPEAT=2
	[ -d /usr/include/linux ] && TREE=/usr/include/linux
fi
[ -n "$BN_SIZE" ] && SEQ_SIZE=$BN_SIZE
[ -n "$SET_RAND" ] && RAND_SIZE=$SET_RAND
[ -n "$SET_RUNTIME" ] && RUNTIME=$SET_RUNTIME
[ -n "$SET_FILES" ] && NFILES=$SET_FILES
[ -n "$SET_TREE" ] && TREE=$SET_TREE
[ -n "$SET_REPO" ] && REPO=$SET_REPO
[ -n "$SET_REPEAT" ] && REPEAT=$SET_REPEAT
SEQ_BYTES=$(bn_bytes "$SEQ_SIZE") || exit 1
RAND_BYTES=$(bn_bytes "$RAND_SIZE") || exit 1
for v in "$RUNTIME" "$NFILES" "$REPEAT"; do
	case $v in '' | *[!0-9]* | 0) bn_die "--runtime, --files and --repeat want whole numbers > 0, not '$v'" ;; esac
done
[ -d "$TREE" ] || bn_die "--tree $TREE is not a folder"
TREE=$(cd "$TREE" && pwd -P)
git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1 || bn_die "--repo $REPO is not a git repository"
if [ -n "$ONLY_WL" ]; then
	for w in $ONLY_WL; do
		case " $WORKLOADS " in *" $w "*) ;; *) bn_die "--workloads: unknown workload '$w'" ;; esac
	done
	WORKLOADS=$ONLY_WL
fi
wl_on() { case " $WORKLOADS " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- passthrough_hp: the example of the installed libfuse ----------------

build_passthrough_hp() {
	local ver bin src list work
	ver=$(pkg-config --modversion fuse3 2>/dev/null) ||
		bn_die "pkg-config knows no fuse3 (apt-get install libfuse3-dev pkg-config)"
	bin=$PHP_CACHE/passthrough_hp-$ver
	if [ -x "$bin" ]; then
		PASSTHROUGH_HP=$bin
		return 0
	fi
	bn_need g++ "apt-get install g++"
	bn_need dpkg-source "apt-get install dpkg-dev"
	[ "$(id -u)" = 0 ] || bn_die "building passthrough_hp needs root (apt-get source)"
	mkdir -p "$PHP_CACHE" || bn_die "cannot make $PHP_CACHE"
	work=$(mktemp -d "$PHP_CACHE/build.XXXXXX") || bn_die "mktemp under $PHP_CACHE failed"
	list=/etc/apt/sources.list.d/hybridfs-bench-src.sources
	if [ ! -f "$list" ]; then
		bn_log "adding $list (deb-src of Debian $(. /etc/os-release && echo "$VERSION_CODENAME"), for fuse3's source)"
		cat >"$list" <<EOF
# Added by hybridfs bench/peers.sh: Debian's sources, for the source package
# of fuse3 (libfuse's passthrough_hp example). Remove it to drop them.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $(. /etc/os-release && echo "$VERSION_CODENAME")
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	fi
	# only this list, so that no other source's failure stops it
	apt-get update -q -o Dir::Etc::sourcelist="$list" -o Dir::Etc::sourceparts=- \
		-o APT::Get::List-Cleanup=0 >"$work/update.log" 2>&1 ||
		{ cat "$work/update.log" >&2; bn_die "apt-get update of $list failed"; }
	(cd "$work" && apt-get source -q --download-only "fuse3=$(dpkg-query -W -f '${Version}' libfuse3-dev)" \
		>"$work/source.log" 2>&1) ||
		(cd "$work" && apt-get source -q --download-only fuse3 >>"$work/source.log" 2>&1) ||
		{ cat "$work/source.log" >&2; bn_die "apt-get source fuse3 failed"; }
	src=$(find "$work" -maxdepth 1 -name 'fuse3_*.orig.tar.*' ! -name '*.asc' | head -n 1)
	[ -n "$src" ] || bn_die "no fuse3 orig tarball in $work"
	tar -C "$work" -xf "$src" --wildcards '*/example/passthrough_hp.cc' '*/example/cxxopts.hpp' ||
		bn_die "cannot unpack passthrough_hp.cc from $src"
	bn_log "building passthrough_hp of fuse3 $ver"
	# the HAVE_ macros are those libfuse's own build (meson) finds on Linux:
	# without them utimes, fallocate and the xattr calls answer EOPNOTSUPP
	# shellcheck disable=SC2046 # pkg-config's words are meant to split
	g++ -O2 -std=c++17 -DHAVE_UTIMENSAT -DHAVE_POSIX_FALLOCATE -DHAVE_SETXATTR \
		-o "$bin.tmp" "$work"/*/example/passthrough_hp.cc \
		$(pkg-config --cflags --libs fuse3) -lpthread 2>"$work/build.log" ||
		{ cat "$work/build.log" >&2; bn_die "g++ of passthrough_hp.cc failed"; }
	mv "$bin.tmp" "$bin"
	rm -rf "$work"
	PASSTHROUGH_HP=$bin
}

if bn_has passthrough_hp; then
	if [ -n "$PASSTHROUGH_HP" ]; then
		[ -x "$PASSTHROUGH_HP" ] || bn_die "passthrough_hp '$PASSTHROUGH_HP' is not executable"
	else
		build_passthrough_hp
	fi
fi

# ---- the rest of the set-up -------------------------------------------------

need=$(((SEQ_BYTES + RAND_BYTES) * 2 / 1024 + 2097152))
avail=$(df -Pk "$BN_TMP" | awk 'NR == 2 { print $4 }')
[ "$avail" -gt "$need" ] || bn_die "$BN_TMP: $((avail / 1024)) MiB free, need about $((need / 1024)) MiB"

cc -O2 -Wall -o "$BN_TMP/metadrv" "$BN_SRCDIR/metadrv.c" || bn_die "cannot compile bench/metadrv.c"
METADRV=$BN_TMP/metadrv
tar -C "$(dirname "$TREE")" -cf "$BN_TMP/tree.tar" "$(basename "$TREE")" 2>"$BN_TMP/logs/tar-c.err" ||
	{ cat "$BN_TMP/logs/tar-c.err" >&2; bn_die "tar of $TREE failed"; }
TREE_FILES=$(tar -tf "$BN_TMP/tree.tar" | grep -vc '/$')
TREE_MB=$(du -m "$BN_TMP/tree.tar" | awk '{ print $1 }')
TREE_NAME=$(basename "$TREE")
REPO_FILES=$(git -C "$REPO" ls-files | wc -l)
REPO_NAME=$(basename "$(cd "$REPO" && pwd -P)")

BN_LABEL_seqwrite="seq write 1 MiB, $SEQ_SIZE, end_fsync" BN_UNIT_seqwrite=MiB/s BN_DIR_seqwrite=up
BN_LABEL_seqread_cold="seq read 1 MiB, $SEQ_SIZE, cold" BN_UNIT_seqread_cold=MiB/s BN_DIR_seqread_cold=up
BN_LABEL_seqread_warm="seq read 1 MiB, $SEQ_SIZE, warm" BN_UNIT_seqread_warm=MiB/s BN_DIR_seqread_warm=up
BN_LABEL_randread="rand read 4 KiB, page cache hot, 2 jobs, $RAND_SIZE, ${RUNTIME}s" BN_UNIT_randread=IOPS BN_DIR_randread=up
BN_LABEL_randwrite="rand write 4 KiB, fsync every 32, $RAND_SIZE, ${RUNTIME}s" BN_UNIT_randwrite=IOPS BN_DIR_randwrite=up
BN_LABEL_create="create $NFILES files of $FILE_SIZE B" BN_UNIT_create=s BN_DIR_create=down
BN_LABEL_stat="stat $NFILES files, cold" BN_UNIT_stat=s BN_DIR_stat=down
BN_LABEL_unlink="unlink $NFILES files" BN_UNIT_unlink=s BN_DIR_unlink=down
BN_LABEL_untar="untar $TREE ($TREE_FILES files, $TREE_MB MiB)" BN_UNIT_untar=s BN_DIR_untar=down
BN_LABEL_readtree="read every file of it, cold" BN_UNIT_readtree=s BN_DIR_readtree=down
BN_LABEL_rmtree="rm -rf it" BN_UNIT_rmtree=s BN_DIR_rmtree=down
BN_LABEL_gitstatus="git status, $REPO_NAME ($REPO_FILES files), warm" BN_UNIT_gitstatus=s BN_DIR_gitstatus=down
BN_LABEL_grep="grep -rn $GREP_WORD, $REPO_NAME, warm" BN_UNIT_grep=s BN_DIR_grep=down

# ---- mounts -------------------------------------------------------------------

# pm_under SYSTEM: the folder the system serves (the backing folder).
pm_under() {
	case $1 in
	native) echo "$BN_TMP/native/data" ;;
	*) echo "$BN_TMP/$1/under" ;;
	esac
}

pm_prepare_and_mount() {
	local s base under
	for s in $BN_SYSTEMS; do
		base=$BN_TMP/$s
		rm -rf "$base"
		under=$(pm_under "$s")
		mkdir -p "$under"
		if wl_on gitstatus || wl_on grep; then
			git clone -q --no-hardlinks "$REPO" "$under/repo" ||
				bn_die "git clone $REPO into $under failed"
		fi
		case $s in
		native)
			eval "BN_TARGET_$s=\$under"
			continue
			;;
		esac
		mkdir -p "$base/mnt"
		case $s in
		hybridfs)
			bn_start_fuse "$s" "$base/mnt" "$HYBRIDFS" "$under" "$base/mnt" -f \
				-o "state=$base/state${HYBRIDFS_OPTS:+,$HYBRIDFS_OPTS}"
			;;
		before)
			bn_start_fuse "$s" "$base/mnt" "$HYBRIDFS_BEFORE" "$under" "$base/mnt" -f \
				-o "state=$base/state${HYBRIDFS_OPTS:+,$HYBRIDFS_OPTS}${BEFORE_OPTS:+,$BEFORE_OPTS}"
			;;
		bare)
			bn_start_fuse "$s" "$base/mnt" "$HYBRIDFS" "$under" "$base/mnt" -f \
				-o "state=$base/state,$BARE_OPTS${HYBRIDFS_OPTS:+,$HYBRIDFS_OPTS}"
			;;
		mergerfs)
			bn_start_fuse "$s" "$base/mnt" mergerfs -f -o "$MERGERFS_OPTS" "$under" "$base/mnt"
			;;
		passthrough_hp)
			bn_start_fuse "$s" "$base/mnt" "$PASSTHROUGH_HP" --foreground "$under" "$base/mnt"
			;;
		esac
		eval "BN_TARGET_$s=\$base/mnt"
	done
}

pm_umount_all() {
	local s
	for s in $BN_SYSTEMS; do
		[ "$s" = native ] || bn_stop_fuse "$s" "$BN_TMP/$s/mnt"
		rm -rf "${BN_TMP:?}/$s"
	done
}

# pm_cpu SYSTEM: the daemon's CPU ms so far (all its threads, those ended
# too), or nothing for native.
pm_cpu() {
	local pid tick
	eval "pid=\${BN_PID_$1:-}"
	[ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 0
	tick=$(getconf CLK_TCK)
	# the fields after the command's ")" (the name may hold blanks)
	sed 's/.*) //' "/proc/$pid/stat" | awk -v t="$tick" '{ print ($12 + $13) * 1000 / t }'
}

# pm_measure WORKLOAD SYSTEM COMMAND...: runs COMMAND, which prints the
# value; records it and the daemon's CPU ms for the workload.
pm_measure() {
	local wl=$1 s=$2 c0 c1 v
	shift 2
	c0=$(pm_cpu "$s")
	if ! v=$("$@" 2>"$BN_TMP/logs/last.err"); then
		cat "$BN_TMP/logs/last.err" >&2
		case $s in
		mergerfs | passthrough_hp)
			# a peer's failure is its own: noted under the table, the run goes on
			bn_log "WARNING: $wl failed on $s"
			printf -- '- %s failed on %s: %s\n' "$wl" "$s" \
				"$(tail -n 1 "$BN_TMP/logs/last.err")" >>"$BN_TMP/notes.md"
			return 0
			;;
		esac
		bn_die "$wl on $s failed"
	fi
	c1=$(pm_cpu "$s")
	bn_record "$wl" "$s" "$v"
	if [ -n "$c0" ] && [ -n "$c1" ]; then
		printf '%s\t%s\t%s\n' "$wl" "$s" "$(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')" \
			>>"$BN_TMP/cpu.tsv"
	fi
	bn_log "  $s $wl: $v"
}

# ---- the workloads ------------------------------------------------------------

# fio_run TAG DIRECTION FIELD [fio options]: prints .jobs[0].DIRECTION.FIELD
fio_run() {
	local tag=$1 dir=$2 field=$3 json v
	shift 3
	json=$BN_TMP/logs/$tag.json
	fio --output-format=json --output="$json" --name="$tag" --ioengine=psync \
		--fallocate=none --group_reporting "$@" 2>"$BN_TMP/logs/$tag.err" ||
		{ cat "$BN_TMP/logs/$tag.err" >&2; return 1; }
	v=$(jq -r ".jobs[0].$dir.$field" "$json") || return 1
	case $v in '' | null) return 1 ;; esac
	echo "$v"
}
mibs() { awk -v b="$1" 'BEGIN { printf "%.1f\n", b / 1048576 }'; }
whole() { awk -v b="$1" 'BEGIN { printf "%.0f\n", b }'; }

wl_seqwrite() {
	local v
	bn_drop_caches
	v=$(fio_run "seqwrite-$1-$ROUND" write bw_bytes --filename="$2/seq.dat" --rw=write \
		--bs=1M --size="$SEQ_BYTES" --end_fsync=1) || return 1
	mibs "$v"
}
wl_seqread_cold() {
	local v
	bn_drop_caches
	v=$(fio_run "seqread-cold-$1-$ROUND" read bw_bytes --filename="$2/seq.dat" --rw=read \
		--bs=1M --size="$SEQ_BYTES") || return 1
	mibs "$v"
}
wl_seqread_warm() {
	local v
	v=$(fio_run "seqread-warm-$1-$ROUND" read bw_bytes --filename="$2/seq.dat" --rw=read \
		--bs=1M --size="$SEQ_BYTES" --invalidate=0) || return 1
	mibs "$v"
}
wl_randread() {
	local v
	v=$(fio_run "randread-$1-$ROUND" read iops --filename="$2/rand.dat" --rw=randread \
		--bs=4k --iodepth=1 --numjobs=2 --size="$RAND_BYTES" --invalidate=0 \
		--time_based --runtime="$RUNTIME") || return 1
	whole "$v"
}
wl_randwrite() {
	local v
	v=$(fio_run "randwrite-$1-$ROUND" write iops --filename="$2/rand.dat" --rw=randwrite \
		--bs=4k --iodepth=1 --numjobs=1 --size="$RAND_BYTES" --fsync=32 --invalidate=0 \
		--time_based --runtime="$RUNTIME") || return 1
	whole "$v"
}
wl_drv() {
	bn_drop_caches
	"$METADRV" "$1" "$2/small" "$NFILES" "$FILE_SIZE"
}
wl_timed() {
	local t0 t1
	t0=$(bn_now)
	"$@" >/dev/null || return 1
	t1=$(bn_now)
	bn_elapsed "$t0" "$t1"
}
wl_untar() {
	bn_drop_caches
	cat "$BN_TMP/tree.tar" >/dev/null # the source comes from memory
	wl_timed tar -C "$1" -xf "$BN_TMP/tree.tar"
}
read_tree() { find "$1" -type f -exec cat {} + >/dev/null; }
wl_readtree() {
	bn_drop_caches
	wl_timed read_tree "$1/$TREE_NAME"
}
wl_rmtree() {
	bn_drop_caches
	wl_timed rm -rf "$1/$TREE_NAME"
}
# wl_repeat COMMAND...: two warm-up runs, then the mean of $REPEAT
wl_repeat() {
	local i t0 t1
	"$@" >/dev/null 2>&1
	"$@" >/dev/null 2>&1
	t0=$(bn_now)
	for i in $(seq 1 "$REPEAT"); do
		"$@" >/dev/null 2>&1
	done
	t1=$(bn_now)
	awk -v a="$t0" -v b="$t1" -v n="$REPEAT" 'BEGIN { printf "%.4f\n", (b - a) / n }'
}
git_status() { git -C "$1/repo" status --porcelain; }
grep_repo() {
	grep -rn "$GREP_WORD" "$1/repo" >/dev/null
	[ $? -le 1 ]
}

# ---- the run ------------------------------------------------------------------

: >"$BN_TMP/cpu.tsv"
: >"$BN_TMP/notes.md"
bn_log "systems: $BN_SYSTEMS; $BN_RUNS round(s); workloads: $WORKLOADS; temp $BN_TMP"
read -r -a SYS <<<"$BN_SYSTEMS"

for ROUND in $(seq 1 "$BN_RUNS"); do
	bn_log "round $ROUND/$BN_RUNS"
	pm_prepare_and_mount
	# this round's order: turned by one every round
	order=()
	for i in "${!SYS[@]}"; do
		order+=("${SYS[$(((i + ROUND - 1) % ${#SYS[@]}))]}")
	done
	if wl_on seqwrite; then
		for s in "${order[@]}"; do
			pm_measure seqwrite "$s" wl_seqwrite "$s" "$(bn_target "$s")"
		done
	fi
	# the warm read straight after the same system's cold one: the next
	# system's cold read drops the page cache
	if wl_on seqread_cold || wl_on seqread_warm; then
		for s in "${order[@]}"; do
			t=$(bn_target "$s")
			if [ ! -f "$t/seq.dat" ]; then
				wl_seqwrite "$s" "$t" >/dev/null || bn_die "writing $t/seq.dat failed"
			fi
			if wl_on seqread_cold; then
				pm_measure seqread_cold "$s" wl_seqread_cold "$s" "$t"
			else
				wl_seqread_cold "$s" "$t" >/dev/null || bn_die "reading $t/seq.dat failed"
			fi
			wl_on seqread_warm && pm_measure seqread_warm "$s" wl_seqread_warm "$s" "$t"
		done
	fi
	for s in "${order[@]}"; do rm -f "$(bn_target "$s")/seq.dat"; done
	if wl_on randread || wl_on randwrite; then
		for s in "${order[@]}"; do
			t=$(bn_target "$s")
			fio_run "prepare-$s-$ROUND" write bw_bytes --filename="$t/rand.dat" --rw=write \
				--bs=1M --size="$RAND_BYTES" --end_fsync=1 >/dev/null ||
				bn_die "preparing $t/rand.dat failed"
		done
	fi
	# hot: the file read whole through the system just before (no cache
	# drop between systems here, but the page cache may not hold them all)
	for wl in randread randwrite; do
		wl_on "$wl" || continue
		for s in "${order[@]}"; do
			t=$(bn_target "$s")
			[ "$wl" = randread ] && cat "$t/rand.dat" >/dev/null
			pm_measure "$wl" "$s" "wl_$wl" "$s" "$t"
		done
	done
	for s in "${order[@]}"; do rm -f "$(bn_target "$s")/rand.dat"; done
	for wl in create stat unlink; do
		wl_on "$wl" || continue
		for s in "${order[@]}"; do
			t=$(bn_target "$s")
			if [ "$wl" != create ] && [ ! -d "$t/small" ]; then
				"$METADRV" create "$t/small" "$NFILES" "$FILE_SIZE" >/dev/null ||
					bn_log "WARNING: making $t/small failed"
			fi
			pm_measure "$wl" "$s" wl_drv "$wl" "$t"
		done
	done
	for wl in untar readtree rmtree; do
		wl_on "$wl" || continue
		for s in "${order[@]}"; do
			t=$(bn_target "$s")
			if [ "$wl" != untar ] && [ ! -d "$t/$TREE_NAME" ]; then
				tar -C "$t" -xf "$BN_TMP/tree.tar" || bn_die "untar into $t failed"
			fi
			pm_measure "$wl" "$s" "wl_$wl" "$t"
		done
	done
	if wl_on gitstatus; then
		for s in "${order[@]}"; do
			pm_measure gitstatus "$s" wl_repeat git_status "$(bn_target "$s")"
		done
	fi
	if wl_on grep; then
		for s in "${order[@]}"; do
			pm_measure grep "$s" wl_repeat grep_repo "$(bn_target "$s")"
		done
	fi
	pm_umount_all
done

# ---- the tables ---------------------------------------------------------------

cpu_median() {
	awk -F'\t' -v w="$1" -v s="$2" '$1 == w && $2 == s { print $3 }' "$BN_TMP/cpu.tsv" |
		sort -g | awk '{ v[NR] = $1 } END {
			if (NR == 0) exit
			print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

table=$BN_TMP/table.md
{
	echo "- command: \`bench/$BN_NAME${CMDLINE[*]+ ${CMDLINE[*]}}\`"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), $BN_RUNS round(s), median per cell, systems' order turned each round$([ "$BN_QUICK" = 1 ] && echo ', --quick (smoke test, not a measurement)')"
	bn_machine
	if bn_has hybridfs || bn_has bare; then
		echo "- hybridfs: $HYBRIDFS ($("$HYBRIDFS" --version 2>&1 | head -n 1)); defaults${HYBRIDFS_OPTS:+ + $HYBRIDFS_OPTS}, state folder beside the backing one; bare: $BARE_OPTS"
	fi
	bn_has before && echo "- before: $HYBRIDFS_BEFORE, the same defaults${BEFORE_OPTS:+ + $BEFORE_OPTS}"
	bn_has mergerfs && echo "- mergerfs: $(mergerfs --version 2>&1 | head -n 1 | sed 's/^mergerfs version: //'), -o $MERGERFS_OPTS"
	bn_has passthrough_hp && echo "- passthrough_hp: libfuse $(pkg-config --modversion fuse3) example, its defaults ($PASSTHROUGH_HP)"
	echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	[ "$BN_CAN_DROP" = 1 ] || echo "- WARNING: page cache could not be dropped; cold figures are warm"
	echo "- ratio: speed relative to native, higher is better (system/native for rates, native/system for times)"
	echo
	head="| workload | unit | native"
	rule="|---|---|--:"
	for s in $BN_SYSTEMS; do
		[ "$s" = native ] && continue
		head="$head | $s | ratio"
		rule="$rule|--:|--:"
	done
	echo "$head |"
	echo "$rule|"
	for wl in $WORKLOADS; do
		eval "label=\${BN_LABEL_$wl}; dir=\${BN_DIR_$wl}; unit=\${BN_UNIT_$wl}"
		nat=$(bn_median "$wl" native)
		line="| $label | $unit | $(bn_fmt "$nat")"
		for s in $BN_SYSTEMS; do
			[ "$s" = native ] && continue
			v=$(bn_median "$wl" "$s")
			r=-
			[ -n "$v" ] && r=$(bn_ratio "$v" "$nat" "$dir")
			line="$line | $(bn_fmt "$v") | $r"
		done
		echo "$line |"
	done
	echo
	if [ -s "$BN_TMP/notes.md" ]; then
		echo "Failures (a dash in the table; open-file limit here: $(ulimit -n)):"
		echo
		sort -u "$BN_TMP/notes.md"
		echo
	fi
	echo "Daemon CPU time per workload (ms, utime + stime of all its threads, median):"
	echo
	head="| workload"
	rule="|---"
	for s in $BN_SYSTEMS; do
		[ "$s" = native ] && continue
		head="$head | $s"
		rule="$rule|--:"
	done
	echo "$head |"
	echo "$rule|"
	for wl in $WORKLOADS; do
		line="| $wl"
		for s in $BN_SYSTEMS; do
			[ "$s" = native ] && continue
			v=$(cpu_median "$wl" "$s")
			line="$line | ${v:+$(printf '%.0f' "$v")}"
		done
		echo "$line |"
	done
	echo
	echo "Rounds (value per round, in round order):"
	echo
	for wl in $WORKLOADS; do
		line="- $wl:"
		for s in $BN_SYSTEMS; do
			line="$line $s $(awk -F'\t' -v w="$wl" -v s="$s" '$1 == w && $2 == s { printf "%s%s", sep, $3; sep = "," }' "$BN_RESULTS");"
		done
		echo "${line%;}"
	done
	echo
} >"$table"
cat "$table"
if [ -n "$BN_OUT" ]; then
	if [ "$BN_APPEND" = 1 ]; then cat "$table" >>"$BN_OUT"; else cp "$table" "$BN_OUT"; fi
	bn_log "table written to $BN_OUT"
fi
