#!/bin/bash
# crash.sh - what fsync promised survives kill -9 of the daemon, with the
# SSD cache in write-back (a small store and a small front buffer, so
# blocks move from DRAM to the store and are evicted, and a slow cleaner,
# so dirty lines are still in the store at the kill).
#
# Each iteration: hy-crash (a fixed seed) writes random ranges to a few
# files and fsyncs them, keeping outside the mount a copy of each file as
# of its last fsync and a log of the writes since; once it has done a
# number of fsyncs drawn from the seed, it sends the daemon kill -9
# itself (an exact moment, not a polled one); the dead mount is unmounted
# lazily and mounted again (recovery writes the journaled dirty blocks
# home), and
# `hy-crash check` compares: a file not written since its last fsync must
# equal its copy; the file being written may mix synced and later bytes,
# never others. Summed over the iterations the status must show recovered
# blocks. At the end a clean unmount leaves the same files in the backing
# directory.
#
# The first iteration kills the daemon right after the first fsync of the
# new files (their data only in the store and its journal); at the end,
# `hy-crash once` makes new files, fsyncs them and kills the daemon at once;
# `hy-crash append` appends to a synced file with no fsync and kills it.
#
# HY_CRASH_SEEDS overrides the seeds (one iteration each).
. "$(dirname "$0")/lib.sh"

TESTBIN=${HY_TESTBIN:-$(dirname "$0")}
CRASH=$TESTBIN/hy-crash
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
[ -x "$CRASH" ] || hy_die "no $CRASH (run make check)"
SEEDS=${HY_CRASH_SEEDS:-"$(seq -s " " 101 124)"}
NFILES=4

hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"

b=$HY_TMP/b m=$HY_TMP/m ref=$HY_TMP/ref
mkdir -p "$b" "$m" "$ref" "$HY_TMP/once"
base="state=$HY_TMP/state,cache_write=back,cache_size=4M,front_buffer=256K,cache_clean_rate=4K"

# opts ITERATION: every other mount lets the kernel gather writes
opts() {
	if [ $(($1 % 2)) = 0 ]; then echo "$base"; else echo "$base,writeback_cache=off"; fi
}

hy_mount_ready "$b" "$m" "$(opts 0)"
it=0 recovered=0 per_it=""
for seed in $SEEDS; do
	it=$((it + 1))
	RANDOM=$seed
	want=$((1 + RANDOM % 30))
	# the first kill comes right after the first fsync of new files on a
	# new mount: nothing of the daemon's own state has had time to settle
	[ "$it" = 1 ] && want=1
	rm -f "$ref/fsyncs"
	# hy-crash itself sends the kill -9 to this script's daemon once it
	# has done $want fsyncs (right then or after some more writes)
	"$CRASH" run --seed "$seed" --files "$NFILES" --kill "$HY_PID" --after "$want" \
		"$m" "$ref" >"$HY_TMP/crash.out" 2>&1 &
	cpid=$!
	HY_PIDS="$HY_PIDS $cpid"
	# the bound only turns a hang into a failure
	for i in $(seq 1 2400); do
		hy_exited "$cpid" && break
		sleep 0.05
	done
	hy_exited "$cpid" || kill -9 "$cpid" 2>/dev/null
	wait "$cpid"
	rc=$?
	hy_forget_pid "$cpid"
	if [ "$rc" != 0 ]; then
		hy_fail "seed $seed: hy-crash failed or hung (exit status $rc) before $want fsyncs: \
$(cat "$HY_TMP/crash.out")"
		break
	fi
	hy_kill9 "$m"
	# recovery: the journaled dirty blocks go home before the mount shows
	hy_mount_ready "$b" "$m" "$(opts "$it")"
	n=$(hy_status "$m" .cache.recovered_blocks)
	per_it="$per_it $n"
	recovered=$((recovered + ${n:-0}))
	if ! "$CRASH" check --files "$NFILES" "$m" "$ref" >"$HY_TMP/check.out" 2>&1; then
		hy_fail "seed $seed ($(tail -n 1 "$HY_TMP/crash.out" | sed 's/^hy-crash: //')," \
			"mount options $(opts $((it - 1))); $n blocks recovered):" \
			"data lost or wrong after kill -9 and remount:"$'\n'"$(cat "$HY_TMP/check.out")"
	else
		hy_log "seed $seed: $(tail -n 1 "$HY_TMP/crash.out" | sed 's/^hy-crash: //');" \
			"$n blocks recovered; $(tail -n 1 "$HY_TMP/check.out")"
	fi
done
hy_log "recovered blocks per iteration:$per_it (total $recovered)"

# new files, each written and fsync'd, and the kill right after the last
# fsync: recovery must find the files of the dirty lines it journaled
"$CRASH" once --seed 7 --files 3 --kill "$HY_PID" "$m" "$HY_TMP/once" >"$HY_TMP/once.out" 2>&1 ||
	hy_fail "hy-crash once failed: $(cat "$HY_TMP/once.out")"
hy_kill9 "$m"
hy_mount_ready "$b" "$m" "$(opts 0)"
n=$(hy_status "$m" .cache.recovered_blocks)
for i in 0 1 2; do
	cmp -s "$HY_TMP/once/n$i.synced" "$m/n$i" ||
		hy_fail "new file n$i, written and fsync'd right before kill -9, lost its data" \
			"($n blocks recovered; the daemon said: $(grep -E 'gone|crash left' \
			"$HY_TMP/daemon.log" | tail -n 4 | tr '\n' ' '))"
done
# appends with no fsync, and the kill right after the last: the file is
# at its synced size or holds the appended bytes, never a size that grew
# at home ahead of data that was only in the cache (zeros)
# (once as mounted, once with the kernel's write-back cache, which sends
# the pages later and in its own requests)
# every category in write-back (appends are sequential: by default some
# categories send them around or through, which would hide the case)
args=""
for c in unknown random-consumer random-producer-consumer sequential-producer-consumer \
	archival-consumer large-file-generator; do
	args="$args $c.write=back $c.admit.write.sequential=normal $c.seq_cutoff=mount"
done
for kwb in "" ",writeback_cache=on"; do
	if [ -n "$kwb" ]; then
		hy_umount "$m"
		hy_mount_ready "$b" "$m" "$base$kwb"
	fi
	mkdir -p "$m/app$kwb" "$HY_TMP/app$kwb"
	# shellcheck disable=SC2086
	"$HYBRIDCTL" policy set "$m" $args >/dev/null || hy_fail "hybridctl policy set failed"
	"$CRASH" append --seed 11 --kill "$HY_PID" "$m/app$kwb" "$HY_TMP/app$kwb" \
		>"$HY_TMP/append.out" 2>&1 || hy_fail "hy-crash append failed: $(cat "$HY_TMP/append.out")"
	hy_kill9 "$m"
	hy_mount_ready "$b" "$m" "$(opts 0)"
	"$CRASH" check --files 1 "$m/app$kwb" "$HY_TMP/app$kwb" >"$HY_TMP/check.out" 2>&1 ||
		hy_fail "appends with no fsync, then kill -9 (mounted with $base$kwb;" \
			"$(sed 's/^hy-crash: //' "$HY_TMP/append.out")): the file is past its synced" \
			"size with data missing:"$'\n'"$(cat "$HY_TMP/check.out")"
	hy_log "appends, kill -9 ($base$kwb): $(tail -n 1 "$HY_TMP/check.out")"
done

[ "$recovered" -gt 0 ] ||
	hy_fail "no iteration recovered a dirty block: the kills never found a journaled dirty line"

# a clean unmount writes everything home: the backing files alone equal
# what the mount showed
mkdir -p "$HY_TMP/final"
for i in $(seq 0 $((NFILES - 1))); do
	cp "$m/f$i" "$HY_TMP/final/f$i" || hy_fail "cannot read f$i through the mount"
done
hy_umount "$m"
for i in $(seq 0 $((NFILES - 1))); do
	cmp "$HY_TMP/final/f$i" "$b/f$i" ||
		hy_fail "after a clean unmount the backing f$i differs from what the mount showed"
done
hy_pass
