# common.sh - shared helpers for bench/fio.sh and bench/meta.sh (sourced).
# shellcheck shell=bash disable=SC2034 # variables read through eval or by the sourcing script
#
# A benchmark script:
#   . "$(dirname "$0")/common.sh"
#   bn_usage_extra() { ...; }    # optional: extra lines for --help
#   bn_init "$@"                 # options, checks, temp dir, cleanup trap
#   for round in $(seq 1 "$BN_RUNS"); do
#       bn_mount_all             # sets BN_TARGET_<system> for every system
#       ... for system in $BN_SYSTEMS: measure, bn_record WL SYSTEM VALUE ...
#       bn_umount_all            # and wipes the backing folders
#   done
#   bn_report "title" WL1 WL2 ...   # needs BN_LABEL_<WL> and BN_DIR_<WL>
#
# Every system gets its own folder on the same disk:
#   $BN_TMP/native/data          native: the plain folder
#   $BN_TMP/hybridfs/backing     hybridfs BACKING, mounted at .../mnt
#   $BN_TMP/mergerfs/branch      mergerfs branch, mounted at .../mnt
#
# The EXIT trap unmounts every mount this script made (fusermount3 -u -z),
# kills the daemons it started (only those, by pid) and removes $BN_TMP,
# also when a run fails half-way or is interrupted.

set -u
set -o pipefail

BN_NAME=$(basename "$0")
BN_SRCDIR=$(cd "$(dirname "$0")" && pwd)
BN_ALL_SYSTEMS="native hybridfs mergerfs"

# Defaults, changed by the options below.
BN_RUNS=3
BN_DIR=${BN_DIR:-/var/tmp}
BN_SIZE=""
BN_QUICK=0
BN_SYSTEMS=$BN_ALL_SYSTEMS
BN_OUT=""
BN_APPEND=0
BN_KEEP=0
HYBRIDFS=${HYBRIDFS:-}
HYBRIDFS_OPTS=${HYBRIDFS_OPTS:-}
# mergerfs "basic setup" from mergerfs(1) (the mmap-capable variant; mmap is
# what fio/sqlite-style programs may use), minus allow_other, which neither
# the other systems nor a root-run benchmark need. With a single branch the
# create/getattr policies do not matter, but they are the documented ones.
MERGERFS_OPTS=${MERGERFS_OPTS:-use_ino,cache.files=partial,dropcacheonclose=true,category.create=mfs,func.getattr=newest}

BN_TMP=""
BN_MOUNTS=""
BN_PIDS=""
BN_CAN_DROP=0
BN_RESULTS=""

bn_log() { printf '%s: %s\n' "$BN_NAME" "$*" >&2; }
bn_die() {
	bn_log "ERROR: $*"
	exit 1
}

bn_usage() {
	cat <<EOF
usage: $BN_NAME [options]

Measures native (plain folder), hybridfs and mergerfs on the same disk,
systems alternated inside each round; prints the median of the rounds and
its ratio to native as a markdown table.

  --runs N          rounds (median over them; default 3)
  --dir DIR         make the temp folder under DIR (default /var/tmp; must
                    not be tmpfs: it has to be a real disk)
  --size SIZE       workload size (see below)
  --quick           tiny sizes and one-second runs: smoke test only
  --only LIST       comma separated subset of: native,hybridfs,mergerfs
  --hybridfs PATH   the daemon (default \$HYBRIDFS, else ./hybridfs at the
                    top of the build tree, else hybridfs in PATH)
  --out FILE        also write the table to FILE
  --append          append to --out FILE instead of replacing it
  --keep            keep the temp folder (for a look after the run)
  -h, --help        this text

Environment: HYBRIDFS, HYBRIDFS_OPTS (extra -o for hybridfs),
MERGERFS_OPTS (default: $MERGERFS_OPTS).
EOF
	if command -v bn_usage_extra >/dev/null 2>&1; then
		echo
		bn_usage_extra
	fi
}

bn_parse_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--runs) BN_RUNS=${2:?--runs needs a number}; shift ;;
		--runs=*) BN_RUNS=${1#*=} ;;
		--dir) BN_DIR=${2:?--dir needs a folder}; shift ;;
		--dir=*) BN_DIR=${1#*=} ;;
		--size) BN_SIZE=${2:?--size needs a size}; shift ;;
		--size=*) BN_SIZE=${1#*=} ;;
		--quick) BN_QUICK=1 ;;
		--only) BN_SYSTEMS=$(echo "${2:?--only needs a list}" | tr ',' ' '); shift ;;
		--only=*) BN_SYSTEMS=$(echo "${1#*=}" | tr ',' ' ') ;;
		--hybridfs) HYBRIDFS=${2:?--hybridfs needs a path}; shift ;;
		--hybridfs=*) HYBRIDFS=${1#*=} ;;
		--out) BN_OUT=${2:?--out needs a file}; shift ;;
		--out=*) BN_OUT=${1#*=} ;;
		--append) BN_APPEND=1 ;;
		--keep) BN_KEEP=1 ;;
		-h | --help) bn_usage; exit 0 ;;
		*) bn_usage >&2; bn_die "unknown option: $1" ;;
		esac
		shift
	done
	case $BN_RUNS in
	'' | *[!0-9]* | 0) bn_die "--runs wants a positive number, not '$BN_RUNS'" ;;
	esac
	local s ok
	for s in $BN_SYSTEMS; do
		ok=0
		case " $BN_ALL_SYSTEMS " in *" $s "*) ok=1 ;; esac
		[ $ok = 1 ] || bn_die "--only: unknown system '$s' (native, hybridfs, mergerfs)"
	done
	[ -n "$BN_SYSTEMS" ] || bn_die "--only: no system left"
	# Keep the canonical order native, hybridfs, mergerfs whatever --only says.
	local order=""
	for s in $BN_ALL_SYSTEMS; do
		case " $BN_SYSTEMS " in *" $s "*) order="$order $s" ;; esac
	done
	BN_SYSTEMS=${order# }
}

bn_has() { case " $BN_SYSTEMS " in *" $1 "*) return 0 ;; esac; return 1; }

bn_need() {
	command -v "$1" >/dev/null 2>&1 || bn_die "$1 is missing${2:+ (install: $2)}"
}

bn_find_hybridfs() {
	if [ -z "$HYBRIDFS" ]; then
		if [ -x "$BN_SRCDIR/../hybridfs" ]; then
			HYBRIDFS=$BN_SRCDIR/../hybridfs
		elif [ -x "$PWD/hybridfs" ]; then
			HYBRIDFS=$PWD/hybridfs
		else
			HYBRIDFS=$(command -v hybridfs 2>/dev/null) ||
				bn_die "no hybridfs daemon: build it and pass --hybridfs PATH (or HYBRIDFS=PATH)"
		fi
	fi
	[ -x "$HYBRIDFS" ] || bn_die "hybridfs daemon '$HYBRIDFS' is not executable"
	HYBRIDFS=$(cd "$(dirname "$HYBRIDFS")" && pwd)/$(basename "$HYBRIDFS")
}

# Size with an optional K/M/G/T suffix (powers of 1024) -> bytes.
bn_bytes() {
	local v=$1 n unit
	n=${v%[kKmMgGtT]*}
	n=${n%[iI][bB]}
	unit=${v#"$n"}
	case $n in '' | *[!0-9]*) bn_die "bad size '$v' (e.g. 512M, 1G)" ;; esac
	case $unit in
	'' | [bB]) echo "$n" ;;
	[kK]*) echo $((n * 1024)) ;;
	[mM]*) echo $((n * 1024 * 1024)) ;;
	[gG]*) echo $((n * 1024 * 1024 * 1024)) ;;
	[tT]*) echo $((n * 1024 * 1024 * 1024 * 1024)) ;;
	*) bn_die "bad size '$v' (e.g. 512M, 1G)" ;;
	esac
}

bn_cleanup() {
	local rc=$? mnt pid
	trap - EXIT INT TERM HUP
	for mnt in $BN_MOUNTS; do
		if bn_is_mounted "$mnt"; then
			fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
		fi
	done
	for pid in $BN_PIDS; do
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	if [ -n "$BN_TMP" ] && [ -d "$BN_TMP" ]; then
		if [ "$BN_KEEP" = 1 ]; then
			bn_log "kept $BN_TMP"
		else
			chmod -R u+rwX "$BN_TMP" 2>/dev/null
			rm -rf "$BN_TMP"
		fi
	fi
	[ "$rc" = 0 ] || bn_log "failed (exit $rc); mounts, daemons and temp data cleaned up"
	exit "$rc"
}

bn_init() {
	bn_parse_args "$@"
	bn_need awk
	bn_need fusermount3 "apt-get install fuse3"
	if bn_has hybridfs; then
		bn_find_hybridfs
	fi
	if bn_has mergerfs; then
		bn_need mergerfs "apt-get install mergerfs"
	fi
	if bn_has hybridfs || bn_has mergerfs; then
		[ -c /dev/fuse ] || bn_die "/dev/fuse is missing"
	fi
	[ -d "$BN_DIR" ] || bn_die "--dir $BN_DIR is not a folder"
	case $(stat -f -c %T "$BN_DIR") in
	tmpfs | ramfs) bn_die "--dir $BN_DIR is on $(stat -f -c %T "$BN_DIR"); give a folder on a real disk" ;;
	esac

	trap bn_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
	BN_TMP=$(mktemp -d "$BN_DIR/hybridfs-bench.XXXXXX") || bn_die "mktemp under $BN_DIR failed"
	chmod 755 "$BN_TMP"
	BN_TMP=$(cd "$BN_TMP" && pwd -P)
	mkdir -p "$BN_TMP/logs"
	BN_RESULTS=$BN_TMP/results.tsv
	: >"$BN_RESULTS"

	if [ "$(id -u)" = 0 ] && sync && (echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then
		BN_CAN_DROP=1
	else
		bn_log "WARNING: cannot write /proc/sys/vm/drop_caches (run as root):"
		bn_log "WARNING: 'cold' figures will be warm and not comparable"
	fi
}

bn_drop_caches() {
	sync
	if [ "$BN_CAN_DROP" = 1 ]; then
		echo 3 >/proc/sys/vm/drop_caches
	fi
}

# mountinfo escapes blanks, tabs, newlines and backslashes as \ooo.
bn_is_mounted() {
	local want
	want=$(cd "$1" 2>/dev/null && pwd -P) || want=$1
	want=$(printf '%s' "$want" | sed 's/\\/\\134/g; s/ /\\040/g; s/	/\\011/g')
	awk -v m="$want" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# bn_start_fuse NAME MOUNTPOINT COMMAND... : starts a FUSE daemon that stays
# in the foreground (in the background here), waits for the mount to show
# in /proc/self/mountinfo. Records mount and pid for the trap.
bn_start_fuse() {
	local name=$1 mnt=$2 pid i log
	shift 2
	log=$BN_TMP/logs/$name.log
	"$@" >>"$log" 2>&1 &
	pid=$!
	BN_PIDS="$BN_PIDS $pid"
	BN_MOUNTS="$BN_MOUNTS $mnt"
	eval "BN_PID_$name=$pid"
	# The bound only catches a daemon that hangs; the loop ends as soon as
	# the mount shows.
	for i in $(seq 1 600); do
		bn_is_mounted "$mnt" && return 0
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$log" >&2
			bn_die "$name exited before mounting $mnt (command: $*)"
		fi
		sleep 0.05
	done
	bn_die "$name: mount of $mnt did not appear in 30 s"
}

# bn_stop_fuse NAME MOUNTPOINT: unmounts and waits for that daemon.
bn_stop_fuse() {
	local name=$1 mnt=$2 pid i
	eval "pid=\${BN_PID_$name:-}"
	sync
	if bn_is_mounted "$mnt"; then
		fusermount3 -u "$mnt" || bn_die "fusermount3 -u $mnt failed"
	fi
	[ -n "$pid" ] || return 0
	for i in $(seq 1 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		bn_log "WARNING: $name (pid $pid) still running 10 s after unmount; killing it"
		kill "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	eval "BN_PID_$name="
}

# Mounts every selected system with a fresh, empty backing folder and sets
# BN_TARGET_native, BN_TARGET_hybridfs, BN_TARGET_mergerfs: the folder in
# which the workloads run.
bn_mount_all() {
	local s base
	for s in $BN_SYSTEMS; do
		base=$BN_TMP/$s
		rm -rf "$base"
		case $s in
		native)
			mkdir -p "$base/data"
			BN_TARGET_native=$base/data
			;;
		hybridfs)
			mkdir -p "$base/backing" "$base/mnt"
			# shellcheck disable=SC2086
			bn_start_fuse hybridfs "$base/mnt" "$HYBRIDFS" "$base/backing" "$base/mnt" -f \
				${HYBRIDFS_OPTS:+-o "$HYBRIDFS_OPTS"}
			BN_TARGET_hybridfs=$base/mnt
			;;
		mergerfs)
			mkdir -p "$base/branch" "$base/mnt"
			bn_start_fuse mergerfs "$base/mnt" mergerfs -f -o "$MERGERFS_OPTS" \
				"$base/branch" "$base/mnt"
			BN_TARGET_mergerfs=$base/mnt
			;;
		esac
	done
}

bn_umount_all() {
	local s
	for s in $BN_SYSTEMS; do
		case $s in
		hybridfs | mergerfs) bn_stop_fuse "$s" "$BN_TMP/$s/mnt" ;;
		esac
		rm -rf "${BN_TMP:?}/$s"
	done
}

bn_target() { eval "echo \"\$BN_TARGET_$1\""; }

# bn_record WORKLOAD SYSTEM VALUE
bn_record() {
	printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$BN_RESULTS"
}

bn_now() { date +%s.%N; }
bn_elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", b - a }'; }

# bn_median WORKLOAD SYSTEM -> median of the recorded values, or nothing.
bn_median() {
	awk -F'\t' -v w="$1" -v s="$2" '$1 == w && $2 == s { print $3 }' "$BN_RESULTS" |
		sort -g | awk '{ v[NR] = $1 }
		END {
			if (NR == 0) exit
			if (NR % 2) m = v[(NR + 1) / 2]
			else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
			print m
		}'
}

bn_fmt() {
	awk -v v="$1" 'BEGIN {
		if (v == "") { print "-"; exit }
		a = v < 0 ? -v : v
		if (a >= 1000) printf "%.0f\n", v
		else if (a >= 100) printf "%.1f\n", v
		else if (a >= 1) printf "%.2f\n", v
		else printf "%.3f\n", v
	}'
}

# bn_ratio VALUE NATIVE DIR: speed relative to native, so 1.00 is native
# speed and higher is always better (the issue's targets are written so):
# VALUE/NATIVE for throughput, NATIVE/VALUE for times.
bn_ratio() {
	awk -v a="$1" -v n="$2" -v d="$3" 'BEGIN {
		if (a == "" || n == "" || n + 0 == 0 || a + 0 == 0) { print "-"; exit }
		printf "%.2f\n", d == "up" ? a / n : n / a
	}'
}

bn_machine() {
	local mem cpu disk
	mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	disk=$(df -hT "$BN_TMP" | awk 'NR == 2 { printf "%s (%s, %s, %s free)", $1, $2, $3, $5 }')
	echo "- machine: $(nproc) CPUs${cpu:+ ($cpu)}, $mem RAM, kernel $(uname -r)"
	echo "- disk: $disk, temp folder $BN_TMP"
}

bn_versions() {
	local v
	if bn_has hybridfs; then
		v=$("$HYBRIDFS" --version 2>&1 | head -n 1)
		echo "- hybridfs: $HYBRIDFS ($v)${HYBRIDFS_OPTS:+, -o $HYBRIDFS_OPTS}"
	fi
	if bn_has mergerfs; then
		v=$(mergerfs --version 2>&1 | head -n 1 | sed 's/^mergerfs version: //')
		echo "- mergerfs: $v, -o $MERGERFS_OPTS"
	fi
}

# bn_report TITLE WORKLOAD... : markdown table to stdout and --out.
# Every workload needs BN_LABEL_<wl> (text) and BN_DIR_<wl> (up: higher is
# better, down: lower is better).
bn_report() {
	local title=$1 wl s label dir unit nat v r line table
	shift
	table=$BN_TMP/table.md
	{
		echo "## $title"
		echo
		echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), $BN_RUNS round(s), median per cell$([ "$BN_QUICK" = 1 ] && echo ', --quick (smoke test, not a measurement)')"
		bn_machine
		bn_versions
		[ "$BN_CAN_DROP" = 1 ] || echo "- WARNING: page cache could not be dropped; cold figures are warm"
		echo "- ratio = speed relative to native (1.00 = native speed; higher is better):"
		echo "  system/native for rates, native/system for times"
		echo
		echo "| workload | unit | native | hybridfs | ratio | mergerfs | ratio |"
		echo "|---|---|--:|--:|--:|--:|--:|"
		for wl in "$@"; do
			eval "label=\${BN_LABEL_$wl}; dir=\${BN_DIR_$wl}; unit=\${BN_UNIT_$wl}"
			case $dir in
			up) unit="$unit, higher is better" ;;
			*) unit="$unit, lower is better" ;;
			esac
			nat=$(bn_median "$wl" native)
			line="| $label | $unit | $(bn_fmt "$nat")"
			for s in hybridfs mergerfs; do
				v=$(bn_median "$wl" "$s")
				if [ -n "$v" ]; then
					r=$(bn_ratio "$v" "$nat" "$dir")
				else
					r="-"
				fi
				line="$line | $(bn_fmt "$v") | $r"
			done
			echo "$line |"
		done
		echo
	} >"$table"
	cat "$table"
	if [ -n "$BN_OUT" ]; then
		if [ "$BN_APPEND" = 1 ]; then
			cat "$table" >>"$BN_OUT"
		else
			cp "$table" "$BN_OUT"
		fi
		bn_log "table written to $BN_OUT"
	fi
	# Raw per-round figures, for whoever wants to check the spread.
	bn_log "raw figures (workload, system, value per round):"
	for wl in "$@"; do
		for s in $BN_SYSTEMS; do
			printf '  %-16s %-9s %s\n' "$wl" "$s" \
				"$(awk -F'\t' -v w="$wl" -v s="$s" '$1 == w && $2 == s { printf "%s ", $3 }' "$BN_RESULTS")" >&2
		done
	done
}
