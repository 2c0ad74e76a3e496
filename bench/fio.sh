#!/bin/bash
# shellcheck disable=SC2034 # BN_LABEL_*, BN_UNIT_*, BN_DIR_* are read by bn_report (eval)
# fio.sh - data-path benchmark: native folder vs hybridfs vs mergerfs.
#
# Workloads (ioengine=psync, buffered I/O), per round and system:
#   seq write   1 MiB blocks, --size bytes to a new file, end_fsync=1
#   seq read    1 MiB blocks of that file: cold (page cache dropped) and
#               warm (read again at once, cache kept: invalidate=0)
#   rand read   4 KiB, iodepth 1, numjobs 2, on a prepared file of
#               --rand-size, cache dropped first, time_based --runtime
#   rand write  4 KiB, fsync=1 (fsync after every write), numjobs 2, same
#               file, time_based --runtime
#
# See bench/README.md. Run as root (dropping the page cache needs it).

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

SEQ_SIZE=1G
RAND_SIZE=256M
RUNTIME=10
# --quick defaults; an explicit option wins over them.
QUICK_SEQ_SIZE=32M
QUICK_RAND_SIZE=16M
QUICK_RUNTIME=2
RAND_SIZE_SET=""
RUNTIME_SET=""

bn_usage_extra() {
	cat <<EOF
fio.sh options:
  --size SIZE       sequential file size (default $SEQ_SIZE, --quick $QUICK_SEQ_SIZE)
  --rand-size SIZE  random I/O file size (default $RAND_SIZE, --quick $QUICK_RAND_SIZE)
  --runtime SEC     seconds per random workload (default $RUNTIME, --quick $QUICK_RUNTIME)
EOF
}

# Our own options first; the rest goes to bn_init.
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--rand-size) RAND_SIZE_SET=${2:?--rand-size needs a size}; shift ;;
	--rand-size=*) RAND_SIZE_SET=${1#*=} ;;
	--runtime) RUNTIME_SET=${2:?--runtime needs seconds}; shift ;;
	--runtime=*) RUNTIME_SET=${1#*=} ;;
	*) args+=("$1") ;;
	esac
	shift
done
bn_init "${args[@]+"${args[@]}"}"

bn_need fio "apt-get install fio"
bn_need jq "apt-get install jq (fio.sh reads fio's JSON output with it)"

if [ "$BN_QUICK" = 1 ]; then
	SEQ_SIZE=$QUICK_SEQ_SIZE
	RAND_SIZE=$QUICK_RAND_SIZE
	RUNTIME=$QUICK_RUNTIME
fi
[ -n "$BN_SIZE" ] && SEQ_SIZE=$BN_SIZE
[ -n "$RAND_SIZE_SET" ] && RAND_SIZE=$RAND_SIZE_SET
[ -n "$RUNTIME_SET" ] && RUNTIME=$RUNTIME_SET
SEQ_BYTES=$(bn_bytes "$SEQ_SIZE") || exit 1
RAND_BYTES=$(bn_bytes "$RAND_SIZE") || exit 1
case $RUNTIME in '' | *[!0-9]* | 0) bn_die "--runtime wants whole seconds > 0" ;; esac

# Room for one sequential and one random file per system at a time.
need=$(((SEQ_BYTES + RAND_BYTES) * 3 / 1024 + 1048576))
avail=$(df -Pk "$BN_TMP" | awk 'NR == 2 { print $4 }')
[ "$avail" -gt "$need" ] || bn_die "$BN_TMP: $((avail / 1024)) MiB free, need about $((need / 1024)) MiB"

BN_LABEL_seqwrite="seq write 1 MiB, $SEQ_SIZE, end_fsync"
BN_UNIT_seqwrite="MiB/s"
BN_DIR_seqwrite=up
BN_LABEL_seqread_cold="seq read 1 MiB, $SEQ_SIZE, cold cache"
BN_UNIT_seqread_cold="MiB/s"
BN_DIR_seqread_cold=up
BN_LABEL_seqread_warm="seq read 1 MiB, $SEQ_SIZE, warm cache"
BN_UNIT_seqread_warm="MiB/s"
BN_DIR_seqread_warm=up
BN_LABEL_randread="rand read 4 KiB, QD1 x 2 jobs, $RAND_SIZE, ${RUNTIME}s"
BN_UNIT_randread="IOPS"
BN_DIR_randread=up
BN_LABEL_randwrite="rand write 4 KiB + fsync, 2 jobs, $RAND_SIZE, ${RUNTIME}s"
BN_UNIT_randwrite="IOPS"
BN_DIR_randwrite=up

# run_fio TAG [fio options...]: runs one fio job with JSON output into
# $BN_TMP/logs/TAG.json; dies with fio's messages when fio fails.
run_fio() {
	local tag=$1 json
	shift
	json=$BN_TMP/logs/$tag.json
	if ! fio --output-format=json --output="$json" --name="$tag" \
		--ioengine=psync --fallocate=none --group_reporting "$@" \
		2>"$BN_TMP/logs/$tag.err"; then
		cat "$BN_TMP/logs/$tag.err" >&2
		bn_die "fio $tag failed (options: $*)"
	fi
	LAST_JSON=$json
}

# fio_value DIRECTION(read|write) FIELD(bw_bytes|iops) -> number
fio_value() {
	local v
	v=$(jq -r ".jobs[0].$1.$2" "$LAST_JSON") || bn_die "cannot parse $LAST_JSON"
	case $v in '' | null) bn_die "no .jobs[0].$1.$2 in $LAST_JSON" ;; esac
	echo "$v"
}

mibs() { awk -v b="$1" 'BEGIN { printf "%.2f\n", b / 1048576 }'; }

bn_log "systems: $BN_SYSTEMS; $BN_RUNS round(s); seq $SEQ_SIZE, random $RAND_SIZE for ${RUNTIME}s; temp $BN_TMP"

for round in $(seq 1 "$BN_RUNS"); do
	bn_log "round $round/$BN_RUNS"
	bn_mount_all

	for s in $BN_SYSTEMS; do
		t=$(bn_target "$s")
		rm -f "$t/seq.dat"
		bn_drop_caches
		run_fio "seqwrite-$s-$round" --filename="$t/seq.dat" --rw=write \
			--bs=1M --size="$SEQ_BYTES" --end_fsync=1
		v=$(mibs "$(fio_value write bw_bytes)") || exit 1
		bn_record seqwrite "$s" "$v"
		bn_log "  $s seq write: $v MiB/s"
	done

	for s in $BN_SYSTEMS; do
		t=$(bn_target "$s")
		bn_drop_caches
		run_fio "seqread-cold-$s-$round" --filename="$t/seq.dat" --rw=read \
			--bs=1M --size="$SEQ_BYTES"
		v=$(mibs "$(fio_value read bw_bytes)") || exit 1
		bn_record seqread_cold "$s" "$v"
		bn_log "  $s seq read cold: $v MiB/s"
		# Straight after the cold read, cache kept (fio's default
		# invalidate=1 would drop this file's pages first).
		run_fio "seqread-warm-$s-$round" --filename="$t/seq.dat" --rw=read \
			--bs=1M --size="$SEQ_BYTES" --invalidate=0
		v=$(mibs "$(fio_value read bw_bytes)") || exit 1
		bn_record seqread_warm "$s" "$v"
		bn_log "  $s seq read warm: $v MiB/s"
	done

	# Not measured: the file the random workloads use, written through
	# the system under test.
	for s in $BN_SYSTEMS; do
		t=$(bn_target "$s")
		rm -f "$t/seq.dat"
		run_fio "prepare-$s-$round" --filename="$t/rand.dat" --rw=write \
			--bs=1M --size="$RAND_BYTES" --end_fsync=1
	done

	for s in $BN_SYSTEMS; do
		t=$(bn_target "$s")
		bn_drop_caches
		run_fio "randread-$s-$round" --filename="$t/rand.dat" --rw=randread \
			--bs=4k --iodepth=1 --numjobs=2 --size="$RAND_BYTES" \
			--time_based --runtime="$RUNTIME"
		v=$(fio_value read iops) || exit 1
		v=$(awk -v v="$v" 'BEGIN { printf "%.0f\n", v }')
		bn_record randread "$s" "$v"
		bn_log "  $s rand read: $v IOPS"
	done

	for s in $BN_SYSTEMS; do
		t=$(bn_target "$s")
		bn_drop_caches
		run_fio "randwrite-$s-$round" --filename="$t/rand.dat" --rw=randwrite \
			--bs=4k --iodepth=1 --numjobs=2 --size="$RAND_BYTES" --fsync=1 \
			--time_based --runtime="$RUNTIME"
		v=$(fio_value write iops) || exit 1
		v=$(awk -v v="$v" 'BEGIN { printf "%.0f\n", v }')
		bn_record randwrite "$s" "$v"
		bn_log "  $s rand write: $v IOPS"
	done

	bn_umount_all
done

bn_report "fio: data path (bench/fio.sh)" \
	seqwrite seqread_cold seqread_warm randread randwrite
