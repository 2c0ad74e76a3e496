#!/bin/bash
# faults.sh - fault injection (fault.h, HYBRIDFS_FAULTS): crash points and
# device errors on real mounts.
#
# Crash points: each case mounts with the cache in write-back (a small
# store, a slow cleaner, so dirty lines stay in the store) and the spec
# "point=NAME:nth=N": hy-crash writes random ranges of a few files and
# fsyncs them, keeping outside the mount what each fsync promised (see
# crash.sh); a trigger makes the daemon reach the point (a flush for the
# cleaner, a policy change for a line migration, a reorganization for the
# BOPT's copy and the map's journal) and the daemon kills itself there
# (SIGKILL, its exit status checked, as kill -9 leaves it). Then:
#   1. remount: the status shows the recovery (blocks recovered from the
#      store's journal; for BORG, a BOPT not closed cleanly and its map
#      journal replayed);
#   2. kill -9 at once and remount: the second recovery finds nothing to
#      do (0 blocks recovered; no map record from before the first
#      crash replayed: the first recovery checkpointed them); `hy-crash check`
#      finds every fsync'd byte and no byte that is garbage or another
#      file's; the reorganized files read as they were and `hybridctl
#      explain` adds up;
#   3. a clean unmount leaves the same bytes in the backing directory.
# The moment is exact (the Nth time the point is reached), not a timing.
#
# Device faults (dev=...:op=...:err=...):
#   e. EIO on the 3rd backing write, no cache: that write(2) fails with
#      EIO, the blocks fsync'd before and after it read back, the failed
#      one reads as a hole (never garbage), before and after a remount;
#   f. EIO on every backing write, cache in write-back: fsync'd data is
#      journaled in the store; `hybridctl flush` reports the error;
#      unmount cannot write home and leaves it journaled; the next mount
#      (no faults) writes it home: nothing lost;
#   g. ENOSPC on every cache store write (with and without a front
#      buffer): writes and fsyncs succeed, going home instead (DESIGN.md
#      invariant 4), the data right at home after unmount; ENOSPC on every
#      3rd store write (lines already cached among them, dirty or not,
#      under write-back and the write-through of some categories), then
#      kill -9: hy-crash's fsync'd bytes all there (enospc-some);
#   h. every read and write of the backing files and the store short:
#      the device layer completes them; hy-crash's writes, fsyncs, a kill
#      -9 and a remount lose nothing.
#   i. a bad spec refuses to start, naming the bad part.
. "$(dirname "$0")/lib.sh"

TESTBIN=${HY_TESTBIN:-$(dirname "$0")}
CRASH=$TESTBIN/hy-crash
IOGEN=$TESTBIN/hy-iogen
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
[ -x "$CRASH" ] || hy_die "no $CRASH (run make check)"
[ -x "$IOGEN" ] || hy_die "no $IOGEN (run make check)"
NFILES=3

hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"

# mount_faults SPEC BACKING MOUNTPOINT OPTIONS: the daemon gets SPEC in
# its environment (only it reads the variable)
mount_faults() {
	local spec=$1
	shift
	HYBRIDFS_FAULTS=$spec hy_mount_ready "$@"
}

# bounded PID WHAT: waits until PID has exited; the bound (60 s) only
# turns a hang into a failure
bounded() {
	local i
	for i in $(seq 1 1200); do
		hy_exited "$1" && return 0
		sleep 0.05
	done
	hy_fail "$2 still runs after 60 s"
	kill -9 "$1" 2>/dev/null
	return 1
}

# wait_fsyncs REFDIR N DAEMON-PID: hy-crash has done N fsyncs (it counts
# them there), or the daemon has died already (a point reached early:
# hy-crash then ends on the dead mount, maybe before the daemon's exit
# shows, which the caller waits for anyway)
wait_fsyncs() {
	local i
	for i in $(seq 1 1200); do
		[ "$(cat "$1/fsyncs" 2>/dev/null || echo 0)" -ge "$2" ] 2>/dev/null && return 0
		hy_exited "$3" && return 0
		hy_exited "$cpid" && return 0
		sleep 0.05
	done
	hy_fail "$case: hy-crash did not reach $2 fsyncs: $(cat "$HY_TMP/crash.out")"
	return 1
}

# HY_FAULT_CASES="name ...": only those cases (for debugging); all by default
want() {
	[ -z "${HY_FAULT_CASES:-}" ] && return 0
	case " $HY_FAULT_CASES " in *" $1 "*) return 0 ;; esac
	return 1
}

# hot BACKING: files made outside the mount, for a reorganization
hot_files() {
	mkdir -p "$1/hot"
	head -c 2M /dev/urandom >"$1/hot/a"
	head -c 1M /dev/urandom >"$1/hot/c"
	(cd "$1/hot" && md5sum a c) >"$case_dir/hot.md5"
}
# read_hot MOUNTPOINT: each hot file read backwards in 64 KiB pieces,
# twice: many vertices to copy, in an order the plan keeps
read_hot() {
	local pass f n
	for pass in 1 2; do
		for f in a c; do
			n=$(($(stat -c %s "$1/hot/$f") / 65536))
			# shellcheck disable=SC2046
			"$IOGEN" reader "$1/hot/$f" $(for o in $(seq $((n - 1)) -1 0); do
				printf 'r:%d:65536 ' $((o * 65536))
			done) || hy_fail "reading hot/$f failed"
		done
	done
}
check_hot() {
	[ -f "$case_dir/hot.md5" ] || return 0
	(cd "$1/hot" && md5sum -c --quiet "$case_dir/hot.md5") ||
		hy_fail "$case: $2: a reorganized file reads differently"
	local f
	for f in a c; do
		"$HYBRIDCTL" explain "$1/hot/$f" --json |
			jq -e '([.ranges[].count] | add) == .blocks' >/dev/null ||
			hy_fail "$case: $2: explain of hot/$f does not add up"
	done
}

# The triggers: run in the background while hy-crash writes; each makes
# the daemon reach its point.
trigger_none() { :; }
trigger_flush() { "$HYBRIDCTL" flush "$1" >/dev/null 2>&1; }
trigger_lines() {
	local c args=""
	for c in unknown random-consumer random-producer-consumer sequential-producer-consumer \
		archival-consumer large-file-generator; do
		args="$args $c.line_size=64K $c.write=back"
	done
	# shellcheck disable=SC2086
	"$HYBRIDCTL" policy set "$1" $args >/dev/null
}
trigger_reorganize() { "$HYBRIDCTL" reorganize "$1" --gap 3600 --always --quiet >/dev/null 2>&1; }

# crash_case NAME SPEC OPTIONS TRIGGER RECOVERY-CONDITION [SETUP]
crash_case() {
	want "$1" || return 0
	local point=${2#point=}
	local b m ref opts rc n again t0=$SECONDS
	case=$1 case_dir=$HY_TMP/$1
	point=${point%%:*}
	b=$case_dir/b m=$case_dir/m ref=$case_dir/ref
	mkdir -p "$b" "$m" "$ref"
	opts="state=$case_dir/state,cache_write=back,cache_size=4M,front_buffer=256K,$3"
	[ -n "${6:-}" ] && $6 "$b"
	mount_faults "$2" "$b" "$m" "$opts"
	local pid=$HY_PID
	[ -n "${6:-}" ] && read_hot "$m"
	"$CRASH" run --seed "$((${#case} * 7 + 3))" --files $NFILES "$m" "$ref" \
		>"$HY_TMP/crash.out" 2>&1 &
	cpid=$!
	HY_PIDS="$HY_PIDS $cpid"
	wait_fsyncs "$ref" 3 "$pid"
	"$4" "$m" &
	local tpid=$!
	HY_PIDS="$HY_PIDS $tpid"
	# the point kills the daemon: SIGKILL, as kill -9 does
	bounded "$pid" "$case: the daemon (the point was never reached?)"
	wait "$pid"
	rc=$?
	hy_forget_pid "$pid"
	[ "$rc" = 137 ] || hy_fail "$case: the daemon exited with status $rc, not by SIGKILL"
	grep -q "crash point \"$point\" reached" "$HY_TMP/daemon.log" ||
		hy_fail "$case: the daemon did not say it reached $point"
	fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	# the writer and the trigger meet a dead mount and end
	bounded "$cpid" "$case: hy-crash"
	wait "$cpid"
	hy_forget_pid "$cpid"
	bounded "$tpid" "$case: the trigger"
	wait "$tpid"
	hy_forget_pid "$tpid"

	# the epoch of the map records the crash left (map_journal.h: bytes
	# 5..7 of each 48-byte record), to tell them from later ones
	local journal=$case_dir/state/bopt-map.journal epoch0=""
	[ -s "$journal" ] && epoch0=$(od -An -tx1 -j5 -N3 "$journal" | tr -d ' \n')
	# 1. recovery
	hy_mount_ready "$b" "$m" "$opts"
	n=$("$HYBRIDCTL" status "$m" --json | jq -c '.mounts[0].daemon |
		{recovered: .cache.recovered_blocks, clean: .bopt.clean_at_mount,
		 replayed: .bopt.journal_replayed}')
	"$HYBRIDCTL" status "$m" --json | jq -e ".mounts[0].daemon | $5" >/dev/null ||
		hy_fail "$case: the status does not show the recovery ($5): $n"
	# 2. a second recovery finds nothing to do: killed right after the
	# first (before the reads below, whose own work, such as dropping BOPT
	# copies older than what the recovery wrote home, is no recovery).
	# The map's journal was emptied by the first recovery's checkpoint;
	# what it holds now is that mount's own (the store's dirty blocks
	# written home through the map: into the BOPT where relocated), and
	# exactly that, nothing from before the first crash, is replayed.
	local left=0 k
	[ -f "$journal" ] && left=$(($(stat -c %s "$journal") / 48))
	for ((k = 0; k < left; k++)); do
		[ -n "$epoch0" ] &&
			[ "$(od -An -tx1 -j$((k * 48 + 5)) -N3 "$journal" | tr -d ' \n')" = "$epoch0" ] &&
			{ hy_fail "$case: record $k of the map journal is from before the crash" \
				"(epoch $epoch0): a second crash would replay it again"; break; }
	done
	hy_kill9 "$m"
	hy_mount_ready "$b" "$m" "$opts"
	again=$("$HYBRIDCTL" status "$m" --json | jq -c '.mounts[0].daemon |
		{recovered: .cache.recovered_blocks, replayed: .bopt.journal_replayed}')
	"$HYBRIDCTL" status "$m" --json | jq -e --argjson left "$left" '.mounts[0].daemon |
		.cache.recovered_blocks == 0 and (.bopt == null or .bopt.journal_replayed == $left)' \
		>/dev/null ||
		hy_fail "$case: the second recovery found work to do: $again (the recovered mount" \
			"wrote $left map records itself)"
	"$CRASH" check --files $NFILES "$m" "$ref" >"$HY_TMP/check.out" 2>&1 ||
		hy_fail "$case: after the crash and two remounts:"$'\n'"$(cat "$HY_TMP/check.out")"
	check_hot "$m" "after the crash and two remounts"
	# 3. a clean unmount: home holds what the mount showed
	mkdir -p "$case_dir/final"
	for i in $(seq 0 $((NFILES - 1))); do
		cp "$m/f$i" "$case_dir/final/f$i" || hy_fail "$case: cannot read f$i"
	done
	hy_umount "$m"
	for i in $(seq 0 $((NFILES - 1))); do
		cmp -s "$case_dir/final/f$i" "$b/f$i" ||
			hy_fail "$case: after a clean unmount the backing f$i differs from the mount"
	done
	[ -f "$case_dir/hot.md5" ] && { (cd "$b/hot" && md5sum -c --quiet "$case_dir/hot.md5") ||
		hy_fail "$case: a reorganized file changed at home"; }
	hy_log "$case: killed at $point; recovery $n; second $again ($left written by the" \
		"recovered mount); $(tail -n 1 \
		"$HY_TMP/check.out" | sed 's/^hy-crash: //') ($((SECONDS - t0)) s)"
}

RECOVERED='.cache.recovered_blocks > 0'
BORG_RECOVERED='.bopt.clean_at_mount == false and .bopt.journal_replayed > 0'
# a slow cleaner: dirty lines stay in the store until the point
SLOW=cache_clean_rate=4K
BOPT="$SLOW,bopt_size=8M,reorg_rate=0"

crash_case journal-before "point=cache.journal.before:nth=40" "$SLOW" trigger_none "$RECOVERED"
# after the 12th group commit, not the 3rd: since a write past a file's
# end goes home with its data (issue 16.5), hy-crash's first writes leave
# no dirty line, and the first commits may carry only clean and free
# records (1 run in 6 recovered nothing under the sanitizers); by the 12th
# its fsync'd dirty lines are among them (238-255 recovered in 8 runs)
crash_case journal-after "point=cache.journal.after:nth=12" "$SLOW" trigger_none "$RECOVERED"
crash_case clean-mid "point=cache.clean.mid:nth=2" "$SLOW" trigger_flush "$RECOVERED"
# migrations run after the cleaner's pass: a quick one here
crash_case migrate-mid "point=cache.migrate.mid:nth=1" "cache_clean_rate=1M" trigger_lines \
	"$RECOVERED"
crash_case copy-mid "point=reorg.copy.mid:nth=3" "$BOPT" trigger_reorganize \
	"$RECOVERED and .bopt.clean_at_mount == false" hot_files
crash_case map-before "point=map.journal.before:nth=3" "$BOPT" trigger_reorganize \
	"$BORG_RECOVERED" hot_files
crash_case map-after "point=map.journal.after:nth=1" "$BOPT" trigger_reorganize \
	"$BORG_RECOVERED" hot_files

# ---- e. EIO on the 3rd backing write surfaces to the writer ------------------
case=eio case_dir=$HY_TMP/eio
b=$case_dir/b m=$case_dir/m
mkdir -p "$b" "$m"
head -c 24K /dev/urandom >"$case_dir/src"
opts="state=$case_dir/state,cache=none,writeback_cache=off"
mount_faults "dev=backing:op=write:err=EIO:nth=3" "$b" "$m" "$opts"
failed=""
for i in 0 1 2 3 4 5; do
	if ! dd if="$case_dir/src" of="$m/e" bs=4096 skip=$i seek=$i count=1 conv=notrunc,fsync \
		status=none 2>"$case_dir/dd.err"; then
		failed="$failed $i"
		grep -q "Input/output error" "$case_dir/dd.err" ||
			hy_fail "eio: write $i failed, not with EIO: $(cat "$case_dir/dd.err")"
	fi
done
[ "$failed" = " 2" ] || hy_fail "eio: the writes that failed were [$failed ], not [ 2 ]"
# what reads back: the fsync'd blocks, and a hole where the write failed
cp "$case_dir/src" "$case_dir/want"
dd if=/dev/zero of="$case_dir/want" bs=4096 seek=2 count=1 conv=notrunc status=none
cmp -s "$m/e" "$case_dir/want" || hy_fail "eio: the file does not read as the writes that succeeded"
hy_umount "$m"
cmp -s "$b/e" "$case_dir/want" || hy_fail "eio: home does not hold the writes that succeeded"
mount_faults "" "$b" "$m" "$opts"
cmp -s "$m/e" "$case_dir/want" || hy_fail "eio: after a remount the file reads differently"
hy_umount "$m"

# ---- f. every backing write fails; the store keeps what fsync promised ------
case=eio-back case_dir=$HY_TMP/eio-back
b=$case_dir/b m=$case_dir/m
mkdir -p "$b" "$m"
head -c 12K /dev/urandom >"$case_dir/src"
# the file is there already: a write past a file's end goes home at once
# (its size may only grow over data that is home), so only writes within
# it stay in the cache while home refuses every write
head -c 12K /dev/zero >"$b/k"
opts="state=$case_dir/state,cache_write=back,cache_size=4M,cache_clean_rate=4K"
mount_faults "dev=backing:op=write:err=EIO:after=0" "$b" "$m" "$opts"
dd if="$case_dir/src" of="$m/k" bs=12K conv=notrunc,fsync status=none 2>"$case_dir/dd.err" ||
	hy_fail "eio-back: write and fsync into the write-back cache failed: $(cat "$case_dir/dd.err")"
if "$HYBRIDCTL" flush "$m" >"$case_dir/flush.out" 2>&1; then
	hy_fail "eio-back: flush said it wrote home while every home write fails: $(cat "$case_dir/flush.out")"
fi
hy_umount "$m"
[ "${HY_DAEMON_STATUS:-0}" != 0 ] || hy_log "eio-back: the daemon exited 0 though its store is not clean"
mount_faults "" "$b" "$m" "$opts"
n=$(hy_status "$m" .cache.recovered_blocks)
[ "${n:-0}" -gt 0 ] || hy_fail "eio-back: the next mount recovered no blocks ($n)"
cmp -s "$m/k" "$case_dir/src" || hy_fail "eio-back: the fsync'd file was lost"
hy_umount "$m"
cmp -s "$b/k" "$case_dir/src" || hy_fail "eio-back: home does not hold the fsync'd file"

# ---- g. ENOSPC on the store: writes go home --------------------------------
for fb in 0 256K; do
	case=enospc-$fb case_dir=$HY_TMP/enospc-$fb
	b=$case_dir/b m=$case_dir/m
	mkdir -p "$b" "$m"
	head -c 1M /dev/urandom >"$case_dir/src"
	opts="state=$case_dir/state,cache_write=back,cache_size=4M,front_buffer=$fb"
	mount_faults "dev=cache:op=write:err=ENOSPC:after=0" "$b" "$m" "$opts"
	dd if="$case_dir/src" of="$m/s" bs=4K conv=fsync status=none 2>"$case_dir/dd.err" ||
		hy_fail "$case: a write or fsync failed with the store refusing: $(cat "$case_dir/dd.err")"
	# small random writes too, each fsync'd
	for i in 3 77 140 9; do
		dd if=/dev/urandom of="$case_dir/blk" bs=1000 count=1 status=none
		dd if="$case_dir/blk" of="$m/s" bs=1000 seek=$i conv=notrunc,fsync status=none \
			2>"$case_dir/dd.err" || hy_fail "$case: small write $i failed: $(cat "$case_dir/dd.err")"
		dd if="$case_dir/blk" of="$case_dir/src" bs=1000 seek=$i conv=notrunc status=none
	done
	cmp -s "$m/s" "$case_dir/src" || hy_fail "$case: the file reads differently"
	hy_umount "$m"
	cmp -s "$b/s" "$case_dir/src" || hy_fail "$case: home does not hold the file"
done

# some store writes refused (every 3rd): lines already cached among them,
# whose dirty sectors must go home before the request does; then a kill -9
case=enospc-some case_dir=$HY_TMP/enospc-some
b=$case_dir/b m=$case_dir/m ref=$case_dir/ref
mkdir -p "$b" "$m" "$ref"
opts="state=$case_dir/state,cache_write=back,cache_size=4M,front_buffer=0,cache_clean_rate=4K"
opts="$opts,writeback_cache=off"
mount_faults "dev=cache:op=write:err=ENOSPC:every=3" "$b" "$m" "$opts"
"$CRASH" run --seed 9 --files $NFILES --kill "$HY_PID" --after 12 "$m" "$ref" \
	>"$HY_TMP/crash.out" 2>&1 || hy_fail "$case: hy-crash failed: $(cat "$HY_TMP/crash.out")"
hy_kill9 "$m"
mount_faults "" "$b" "$m" "$opts"
"$CRASH" check --files $NFILES "$m" "$ref" >"$HY_TMP/check.out" 2>&1 ||
	hy_fail "$case: after kill -9 and remount:"$'\n'"$(cat "$HY_TMP/check.out")"
hy_umount "$m"

# ---- h. short reads and writes everywhere, and a kill -9 ---------------------
case=short case_dir=$HY_TMP/short
b=$case_dir/b m=$case_dir/m ref=$case_dir/ref
mkdir -p "$b" "$m" "$ref"
opts="state=$case_dir/state,cache_write=back,cache_size=4M,front_buffer=256K,cache_clean_rate=64K"
mount_faults "dev=backing:op=write:err=short:after=0;dev=backing:op=read:err=short:every=2;\
dev=cache:op=write:err=short:after=0;dev=cache:op=read:err=short:after=0" "$b" "$m" "$opts"
"$CRASH" run --seed 5 --files $NFILES --kill "$HY_PID" --after 12 "$m" "$ref" \
	>"$HY_TMP/crash.out" 2>&1 || hy_fail "short: hy-crash failed: $(cat "$HY_TMP/crash.out")"
hy_kill9 "$m"
mount_faults "dev=backing:op=read:err=short:after=0;dev=cache:op=read:err=short:after=0" \
	"$b" "$m" "$opts"
"$CRASH" check --files $NFILES "$m" "$ref" >"$HY_TMP/check.out" 2>&1 ||
	hy_fail "short: after kill -9 and remount:"$'\n'"$(cat "$HY_TMP/check.out")"
hy_umount "$m"

# ---- i. a bad spec refuses to start, naming the bad part ---------------------
mkdir -p "$HY_TMP/bad/b" "$HY_TMP/bad/m"
msg=$(HYBRIDFS_FAULTS="dev=backing:op=write:err=EIO:nth=1;point=cache.clean.midd:nth=1" \
	"$HYBRIDFS" "$HY_TMP/bad/b" "$HY_TMP/bad/m" -f -o state="$HY_TMP/bad/state" 2>&1)
rc=$?
[ "$rc" = 2 ] && grep -q '"cache.clean.midd"' <<<"$msg" ||
	hy_fail "a bad spec was not refused by name (status $rc): $msg"
hy_is_mounted "$HY_TMP/bad/m" && hy_fail "a bad spec mounted anyway"

hy_pass
