#!/bin/bash
# passthrough.sh - FUSE passthrough for excluded files (issue 20, item 3):
# fio on an excluded file (exclude=*.bin) through a mount with
# passthrough=excluded (the kernel reads and writes the backing file
# itself), through one with passthrough=off (the default: every read and
# write is a request to the daemon), and on the plain backing folder
# (native).
#
# Jobs, each --runtime seconds on one file of --size bytes, buffered
# (a file that fits in the page cache, laid out and read once before the
# first round: what is measured is the path through FUSE, not the disk):
#   seqread    sequential read, 1 MiB requests
#   seqwrite   sequential overwrite, 1 MiB requests
#   randread   random read, 4 KiB requests
#   randwrite  random overwrite, 4 KiB requests, fsync after each write
# Rounds alternate the three systems (the order turns each round); the
# table has the median of the rounds for MiB/s and, for the two mounts, the
# FUSE requests the daemon read during the job (hybridctl status --json,
# .fuse.requests): counts are the robust figure on a loaded machine.
# Timed runs hold `flock /work/agedisk.lock` (--lock) when it exists, so
# that other benchmarks on the machine do not overlap them.
# Needs root (passthrough) and fio, jq.
set -u
set -o pipefail

NAME=$(basename "$0")
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
HYBRIDFS=${HYBRIDFS:-}
HYBRIDCTL=${HYBRIDCTL:-}
SIZE=256M
RUNTIME=10
ROUNDS=3
LOCK=/work/agedisk.lock
OUT=""
DIR=${TMPDIR:-/tmp}
TMP=""
PIDS=""
MOUNTS=""

log() { printf '%s: %s\n' "$NAME" "$*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}
usage() {
	cat <<EOF
usage: $NAME [--hybridfs PATH] [--hybridctl PATH] [--size SIZE] [--runtime SEC]
                      [--rounds N] [--lock FILE|none] [--dir DIR] [--out FILE]

fio on an excluded file: passthrough=excluded against passthrough=off (the
default) and the plain folder; medians of MiB/s and the FUSE requests per
job, a markdown table.

  --hybridfs PATH   the daemon (default \$HYBRIDFS, else ./hybridfs in the
                    build tree at the top of the sources)
  --hybridctl PATH  (default \$HYBRIDCTL, else hybridctl beside the daemon)
  --size SIZE       the file (fio's size=; default $SIZE)
  --runtime SEC     seconds per job (default $RUNTIME)
  --rounds N        rounds over the three systems (default $ROUNDS)
  --lock FILE|none  held (flock) around each timed job (default $LOCK, if it
                    exists)
  --dir DIR         where the temporary folder goes (default \$TMPDIR or /tmp)
  --out FILE        also write the table to FILE
EOF
}

while [ $# -gt 0 ]; do
	case $1 in
	--hybridfs) HYBRIDFS=${2:?}; shift ;;
	--hybridctl) HYBRIDCTL=${2:?}; shift ;;
	--size) SIZE=${2:?}; shift ;;
	--runtime) RUNTIME=${2:?}; shift ;;
	--rounds) ROUNDS=${2:?}; shift ;;
	--lock) LOCK=${2:?}; shift ;;
	--dir) DIR=${2:?}; shift ;;
	--out) OUT=${2:?}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown option: $1" ;;
	esac
	shift
done
case $RUNTIME$ROUNDS in *[!0-9]*) die "--runtime and --rounds want numbers" ;; esac
if [ "$RUNTIME" -le 0 ] || [ "$ROUNDS" -le 0 ]; then
	die "--runtime and --rounds want positive numbers"
fi
[ "$(id -u)" = 0 ] || die "passthrough needs root (the kernel takes backing files from CAP_SYS_ADMIN)"
[ -n "$HYBRIDFS" ] || HYBRIDFS=$SRCDIR/hybridfs
[ -x "$HYBRIDFS" ] || die "no daemon at $HYBRIDFS (--hybridfs)"
[ -n "$HYBRIDCTL" ] || HYBRIDCTL=$(dirname "$HYBRIDFS")/hybridctl
[ -x "$HYBRIDCTL" ] || die "no hybridctl at $HYBRIDCTL (--hybridctl)"
command -v fio >/dev/null || die "fio is missing (apt-get install fio)"
command -v jq >/dev/null || die "jq is missing (apt-get install jq)"
command -v fusermount3 >/dev/null || die "fusermount3 is missing (apt-get install fuse3)"
if [ "$LOCK" = none ] || [ ! -e "$LOCK" ]; then
	LOCK=""
fi

cleanup() {
	local rc=$? m p
	for m in $MOUNTS; do
		grep -q " $m " /proc/mounts && fusermount3 -u -z "$m" 2>/dev/null
	done
	for p in $PIDS; do
		kill -0 "$p" 2>/dev/null && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ -n "$TMP" ] && rm -rf "$TMP"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
TMP=$(mktemp -d "$DIR/hybridfs-passthrough.XXXXXX") || die "mktemp failed"
export HYBRIDFS_RUNTIME_DIR=$TMP/run XDG_STATE_HOME=$TMP/xdg-state
export HYBRIDFS_STATE_ROOT=$TMP/var-lib HYBRIDFS_FAST_ROOT=$TMP/var-tmp
mkdir -p "$HYBRIDFS_FAST_ROOT"

# mount NAME OPTIONS: BACKING $TMP/b, mountpoint $TMP/NAME
mount_one() {
	local m=$TMP/$1 pid
	mkdir -p "$m"
	"$HYBRIDFS" "$TMP/b" "$m" -f -o "state=$TMP/state-$1,$2" 2>>"$TMP/daemon.log" &
	pid=$!
	PIDS="$PIDS $pid"
	MOUNTS="$MOUNTS $m"
	for _ in $(seq 1 600); do
		grep -q " $m " /proc/mounts && break
		kill -0 "$pid" 2>/dev/null || die "the daemon exited: $(tail -n 3 "$TMP/daemon.log")"
		sleep 0.05
	done
	stat "$m" >/dev/null || die "the mount of $m does not answer"
}
mkdir -p "$TMP/b"
# one backing folder for both mounts and native: the same file, the same
# page cache; each mount is used only while the others are idle
mount_one off "exclude=*.bin"
mount_one excluded "exclude=*.bin,passthrough=excluded"
pt=$("$HYBRIDCTL" status "$TMP/excluded" --json | jq -r '.mounts[0].daemon.fuse |
	if .passthrough then "on" else "off: \(.passthrough_why)" end')
[ "$pt" = on ] || die "passthrough=excluded is not in force: ${pt#off: }"

dir_of() {
	case $1 in
	native) echo "$TMP/b" ;;
	*) echo "$TMP/$1" ;;
	esac
}
# requests MOUNT: the daemon's request counts (one JSON object)
requests() { "$HYBRIDCTL" status "$1" --json | jq -c '.mounts[0].daemon.fuse.requests // {}'; }

# lay the file out and read it once: in the page cache from here on
fio --name=layout --filename="$TMP/b/bench.bin" --size="$SIZE" --rw=write --bs=1M \
	--end_fsync=1 --output=/dev/null || die "fio could not lay out the file"
cat "$TMP/b/bench.bin" >/dev/null

JOBS="seqread seqwrite randread randwrite"
job_args() {
	case $1 in
	seqread) echo "--rw=read --bs=1M" ;;
	seqwrite) echo "--rw=write --bs=1M" ;;
	randread) echo "--rw=randread --bs=4k" ;;
	randwrite) echo "--rw=randwrite --bs=4k --fsync=1" ;;
	esac
}

# run SYSTEM JOB ROUND: one fio job; appends "SYSTEM JOB ROUND MIBS READS
# WRITES FSYNCS OTHERS" to $TMP/results
run() {
	local sys=$1 job=$2 round=$3 d before after out mibs
	d=$(dir_of "$sys")
	[ "$sys" = native ] || before=$(requests "$d")
	# shellcheck disable=SC2046
	out=$(${LOCK:+flock "$LOCK"} fio --name="$job" --filename="$d/bench.bin" --size="$SIZE" \
		$(job_args "$job") --time_based --runtime="$RUNTIME" --overwrite=1 --invalidate=0 \
		--output-format=json) || die "fio $job on $sys failed"
	mibs=$(jq -r '.jobs[0] | (.read.bw_bytes + .write.bw_bytes) / 1048576' <<<"$out")
	if [ "$sys" = native ]; then
		echo "$sys $job $round $mibs - - - -" >>"$TMP/results"
		return
	fi
	after=$(requests "$d")
	jq -rn --argjson a "$after" --argjson b "$before" --arg head "$sys $job $round $mibs" '
		def d(k): ($a[k] // 0) - ($b[k] // 0);
		($a | keys) as $k
		| ([$k[] | select(. != "read" and . != "write" and . != "fsync") | d(.)] | add // 0) as $o
		| "\($head) \(d("read")) \(d("write")) \(d("fsync")) \($o)"' >>"$TMP/results"
}

: >"$TMP/results"
systems=(native off excluded)
for r in $(seq 1 "$ROUNDS"); do
	for job in $JOBS; do
		for i in 0 1 2; do
			sys=${systems[$(((i + r) % 3))]}
			log "round $r: $job on $sys"
			run "$sys" "$job" "$r"
		done
	done
done

# median COLUMN SYSTEM JOB
median() {
	awk -v s="$2" -v j="$3" -v c="$1" '$1 == s && $2 == j { print $c }' "$TMP/results" |
		sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (v[1] == "-") print "-";
			else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
{
	echo "| job | native MiB/s | passthrough=off MiB/s | passthrough=excluded MiB/s | off: READ / WRITE / FSYNC / other requests | excluded: READ / WRITE / FSYNC / other requests |"
	echo "|---|---|---|---|---|---|"
	for job in $JOBS; do
		printf '| %s | %.0f | %.0f | %.0f | %s / %s / %s / %s | %s / %s / %s / %s |\n' "$job" \
			"$(median 4 native "$job")" "$(median 4 off "$job")" "$(median 4 excluded "$job")" \
			"$(median 5 off "$job")" "$(median 6 off "$job")" "$(median 7 off "$job")" \
			"$(median 8 off "$job")" "$(median 5 excluded "$job")" "$(median 6 excluded "$job")" \
			"$(median 7 excluded "$job")" "$(median 8 excluded "$job")"
	done
	echo
	echo "size $SIZE, ${RUNTIME} s a job, $ROUNDS rounds (medians); $(uname -r), $(nproc) CPUs;" \
		"lock ${LOCK:-none}"
} | tee "$TMP/table.md"
[ -z "$OUT" ] || cp "$TMP/table.md" "$OUT"
cp "$TMP/results" "${OUT:-$TMP/table.md}.raw" 2>/dev/null || true
