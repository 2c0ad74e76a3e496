#!/bin/bash
# identity.sh - file identity and the state database (issue 16, part a).
# Each case is a function; HY_IDENTITY_CASES picks some (default: all).
#   statefull  the state folder's disk full while mounted, the SSD cache in
#              write-back on a named store: new files written and fsync'd
#              (fsync must say 0), kill -9, remount with room: the files
#              hold what was fsync'd (their rows never reached the
#              database, so the data went home); the control socket's
#              sync reports the failed commit; a row queued while the disk was full is
#              in the files table once there is room again (retried)
#   durable    a new file's row is durable when its fsync returns: the
#              daemon syncs the WAL (strace) before the kill that follows
#              the fsync, and the row is in the database after the kill
. "$(dirname "$0")/lib.sh"

hy_need_root
TESTBIN=${HY_TESTBIN:-$(dirname "$0")}
CRASH=$TESTBIN/hy-crash
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
CTLPEER=$TESTBIN/hy-ctlpeer
IOGEN=$TESTBIN/hy-iogen
[ -x "$CRASH" ] || hy_die "no $CRASH (run make check)"
[ -x "$CTLPEER" ] || hy_die "no $CTLPEER (run make check)"
command -v jq >/dev/null || hy_skip "jq is missing"
command -v sqlite3 >/dev/null || hy_skip "sqlite3 is missing"
CASES=${HY_IDENTITY_CASES:-"statefull durable prune renumber findfiles"}
hy_setup

# ---- tmpfs mounts, undone by the trap (after the FUSE mounts) ----------
ID_TMPFS=""
id_cleanup() {
	local rc=$? mnt
	for mnt in $HY_MOUNTS; do
		hy_is_mounted "$mnt" && { fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"; }
	done
	for mnt in $ID_TMPFS; do
		mountpoint -q "$mnt" && umount -l "$mnt"
	done
	(exit "$rc")
	hy_cleanup
}
trap id_cleanup EXIT
tmpfs() {
	mkdir -p "$1"
	mount -t tmpfs -o "size=$2,mode=0755" tmpfs "$1" || hy_die "cannot mount a tmpfs on $1"
	ID_TMPFS="$1 $ID_TMPFS"
}

# wait_log PATTERN: polls the daemon log (bound 60 s, not a timing
# assumption: it ends as soon as the line is there)
wait_log() {
	local _
	for _ in $(seq 1 1200); do
		grep -q "$1" "$HY_TMP/daemon.log" && return 0
		sleep 0.05
	done
	return 1
}

# ctl_sync STATE_DIR: the control socket's sync (the profiler's rows and
# records committed); prints the answer, true when it says "ok":true
ctl_sync() {
	local out
	out=$("$CTLPEER" "$1" line '{"v":1,"cmd":"sync"}' 2>&1)
	printf '%s\n' "$out"
	jq -e '.ok == true' <<<"$out" >/dev/null 2>&1
}

# sql DB QUERY
sql() {
	sqlite3 -batch -noheader "$1" "$2"
}

statefull() {
	local t=$HY_TMP/t1 b=$HY_TMP/b1 m=$HY_TMP/m1 i
	local opts="state=$HY_TMP/t1/s,cache=$HY_TMP/store1,cache_size=8M,cache_write=back"
	tmpfs "$t" 3M
	mkdir -p "$HY_TMP/once1"
	hy_mount_ready "$b" "$m" "$opts"
	# fill the state folder's disk; new files' rows (and their records)
	# then cannot be committed
	head -c 8M /dev/zero >"$t/fill" 2>/dev/null
	for i in $(seq 1 200); do
		printf 'pre %d\n' "$i" >"$m/pre$i" || hy_fail "statefull: writing pre$i failed"
		grep -q "profiler: commit:" "$HY_TMP/daemon.log" && break
	done
	wait_log "profiler: commit:" || hy_die "statefull: the state folder filled, but no commit failed"
	# the line names the database it concerns (issue 21, item 5)
	grep -qF "profiler: commit: \"$(cd "$t/s" && pwd -P)/hybridfs.db\": " "$HY_TMP/daemon.log" ||
		hy_fail "statefull: the failed commit's line does not name the database: $(grep 'profiler: commit:' "$HY_TMP/daemon.log")"
	# the sync tells the truth: rows are not in the database
	ctl_sync "$t/s" >"$HY_TMP/sync1.out" &&
		hy_fail "statefull: the control socket's sync succeeded while the profiler's commits fail: $(cat "$HY_TMP/sync1.out")"
	# new files, written and fsync'd (fsync must succeed: home can take
	# them), and kill -9 at once
	"$CRASH" once --seed 11 --files 3 --kill "$HY_PID" "$m" "$HY_TMP/once1" >"$HY_TMP/once1.out" 2>&1 ||
		hy_fail "statefull: hy-crash once failed (an fsync failed?): $(cat "$HY_TMP/once1.out")"
	hy_kill9 "$m"
	rm -f "$t/fill"
	: >>"$HY_TMP/daemon.log"
	local before
	before=$(wc -l <"$HY_TMP/daemon.log")
	hy_mount_ready "$b" "$m" "$opts"
	for i in 0 1 2; do
		cmp -s "$HY_TMP/once1/n$i.synced" "$m/n$i" ||
			hy_fail "statefull: new file n$i, fsync'd while the state disk was full, lost its data after kill -9" \
				"(the daemon said: $(tail -n +"$before" "$HY_TMP/daemon.log" | grep -E 'gone|crash left|dirty' | head -n 4 | tr '\n' ' '))"
	done
	tail -n +"$before" "$HY_TMP/daemon.log" | grep -q "is gone" &&
		hy_fail "statefull: recovery found dirty lines of a file it cannot find: $(tail -n +"$before" "$HY_TMP/daemon.log" | grep 'is gone' | head -n 2)"

	hy_umount "$m"
	[ "${HY_DAEMON_STATUS:-0}" = 0 ] || hy_fail "statefull: the daemon exited with status $HY_DAEMON_STATUS"
	for i in 0 1 2; do
		cmp -s "$HY_TMP/once1/n$i.synced" "$b/n$i" || hy_fail "statefull: n$i differs at home after unmount"
	done
	umount "$t" || hy_fail "statefull: cannot unmount the tmpfs"

	# retried rows: a file opened while the disk is full has its row in
	# the files table once there is room (and the sync says so). On a
	# state of its own, as new as the first: a database that has lived
	# (a remount, pruned rows) takes many rows into room it has already
	# (its WAL's pages, free pages), so a full disk fails no commit for a
	# while, and how long depends on that history
	local t2=$HY_TMP/t1b
	tmpfs "$t2" 3M
	hy_mount_ready "$b" "$m" "state=$t2/s,cache=$HY_TMP/store1b,cache_size=8M,cache_write=back"
	before=$(grep -c "profiler: commit:" "$HY_TMP/daemon.log")
	head -c 8M /dev/zero >"$t2/fill" 2>/dev/null
	for i in $(seq 1 200); do
		printf 'late %d\n' "$i" >"$m/late$i" || hy_fail "statefull: writing late$i failed"
		[ "$(grep -c "profiler: commit:" "$HY_TMP/daemon.log")" -gt "$before" ] && break
	done
	for i in $(seq 1 1200); do
		[ "$(grep -c "profiler: commit:" "$HY_TMP/daemon.log")" -gt "$before" ] && break
		sleep 0.05
	done
	[ "$(grep -c "profiler: commit:" "$HY_TMP/daemon.log")" -gt "$before" ] ||
		hy_die "statefull: the new state folder filled, but no commit failed"
	dd if=/dev/urandom of="$m/late" bs=4k count=4 conv=fsync status=none ||
		hy_fail "statefull: fsync of a new file with the state disk full failed"
	rm -f "$t2/fill"
	ctl_sync "$t2/s" >"$HY_TMP/sync2.out" ||
		hy_fail "statefull: the control socket's sync failed with room again: $(cat "$HY_TMP/sync2.out")"
	n=$(sql "$t2/s/hybridfs.db" "SELECT count(*) FROM files WHERE path = 'late'")
	[ "$n" = 1 ] || hy_fail "statefull: the row of 'late', queued while the state disk was full, is not in the files table after room was made ($n rows)"
	hy_umount "$m"
	[ "${HY_DAEMON_STATUS:-0}" = 0 ] || hy_fail "statefull: the daemon exited with status $HY_DAEMON_STATUS"
	umount "$t2" || hy_fail "statefull: cannot unmount the second tmpfs"
}

# all_traced PID: every thread of PID has a tracer
all_traced() {
	local s
	for s in /proc/"$1"/task/*/status; do
		awk '/^TracerPid:/ { exit $2 == 0 }' "$s" || return 1
	done
	return 0
}

durable() {
	local b=$HY_TMP/b2 m=$HY_TMP/m2 db=$HY_TMP/state2/hybridfs.db i st
	command -v strace >/dev/null || { hy_log "durable: skipped: no strace"; return 0; }
	mkdir -p "$HY_TMP/once2"
	hy_mount_ready "$b" "$m" "state=$HY_TMP/state2,cache=$HY_TMP/store2,cache_size=8M,cache_write=back"
	strace -f -qq -p "$HY_PID" -e trace=fsync,fdatasync -y -o "$HY_TMP/strace2.out" 2>"$HY_TMP/strace2.err" &
	st=$!
	HY_PIDS="$HY_PIDS $st"
	for i in $(seq 1 1200); do
		all_traced "$HY_PID" && break
		sleep 0.05
	done
	all_traced "$HY_PID" || hy_die "durable: strace did not attach: $(cat "$HY_TMP/strace2.err")"
	"$CRASH" once --seed 12 --files 3 --kill "$HY_PID" "$m" "$HY_TMP/once2" >"$HY_TMP/once2.out" 2>&1 ||
		hy_fail "durable: hy-crash once failed: $(cat "$HY_TMP/once2.out")"
	hy_kill9 "$m"
	wait "$st" 2>/dev/null
	hy_forget_pid "$st"
	# the daemon's syncs up to its death: the WAL (where the file rows are
	# committed) among them, before the kill that came right after fsync
	grep -Eq '^[0-9]+ +f(data)?sync\([0-9]+<[^>]*hybridfs\.db-wal>\) += 0' "$HY_TMP/strace2.out" ||
		hy_fail "durable: no sync of the state database's WAL before the kill right after fsync" \
			"(the daemon's syncs: $(sed -E 's/^[0-9]+ +//' "$HY_TMP/strace2.out" | sort | uniq -c | tr -s ' \n' ' '))"
	for i in 0 1 2; do
		n=$(sql "$db" "SELECT count(*) FROM files WHERE path = 'n$i'")
		[ "$n" = 1 ] || hy_fail "durable: n$i's row is not in the database after kill -9 ($n rows)"
	done
	hy_mount_ready "$b" "$m" "state=$HY_TMP/state2,cache=$HY_TMP/store2,cache_size=8M,cache_write=back"
	for i in 0 1 2; do
		cmp -s "$HY_TMP/once2/n$i.synced" "$m/n$i" || hy_fail "durable: n$i lost its data after kill -9"
	done
	hy_umount "$m"
}

# count DB TABLE
count() {
	sql "$1" "SELECT count(*) FROM $2"
}

prune() {
	local b=$HY_TMP/b3 m=$HY_TMP/m3 db=$HY_TMP/state3/hybridfs.db i nf np ids
	local opts="state=$HY_TMP/state3,profile_max_rows=20"
	head -c 20K /dev/urandom >"$HY_TMP/src3"
	hy_mount_ready "$b" "$m" "$opts"
	for i in 1 2 3; do cp "$HY_TMP/src3" "$m/keep$i" || hy_fail "prune: cp keep$i failed"; done
	for i in $(seq 1 300); do
		cp "$HY_TMP/src3" "$m/c$i" && rm "$m/c$i" || { hy_fail "prune: cycle $i failed"; break; }
	done
	for i in 1 2 3; do cat "$m/keep$i" >/dev/null; done
	ctl_sync "$HY_TMP/state3" >/dev/null || hy_fail "prune: sync failed"
	ids=$(sql "$db" "SELECT group_concat(id) FROM (SELECT id FROM files WHERE path LIKE 'keep%' ORDER BY path)")
	# the writer prunes every 10 s; polled, the bound only catches a hang.
	# The log moves on meanwhile (a row a round, by this shell), so that
	# the rows of the cycles' processes that read or wrote leave it.
	for i in $(seq 1 1800); do
		nf=$(count "$db" files) np=$(count "$db" processes)
		[ "$nf" -le 30 ] && [ "$np" -le 30 ] && break
		printf '%d\n' "$i" >"$m/tick"
		sleep 0.05
	done
	[ "$nf" -le 30 ] || hy_fail "prune: after 300 create/delete cycles the files table still has $nf rows (3 files left)"
	[ "$np" -le 30 ] || hy_fail "prune: after 300 create/delete cycles the processes table still has $np rows"
	hy_log "prune: files $nf rows, processes $np rows after 300 cycles"
	[ "$(sql "$db" "SELECT group_concat(id) FROM (SELECT id FROM files WHERE path LIKE 'keep%' ORDER BY path)")" = "$ids" ] ||
		hy_fail "prune: the kept files' rows changed: $ids before"
	hy_umount "$m"
	# and across a remount: the same ids, the data intact
	hy_mount_ready "$b" "$m" "$opts"
	for i in 1 2 3; do cmp -s "$HY_TMP/src3" "$m/keep$i" || hy_fail "prune: keep$i differs"; done
	ctl_sync "$HY_TMP/state3" >/dev/null || hy_fail "prune: sync failed"
	[ "$(count "$db" files)" -le 30 ] || hy_fail "prune: the remount made rows again: $(count "$db" files)"
	[ "$(sql "$db" "SELECT group_concat(id) FROM (SELECT id FROM files WHERE path LIKE 'keep%' ORDER BY path)")" = "$ids" ] ||
		hy_fail "prune: the kept files' ids changed across the remount"
	hy_umount "$m"
}

renumber() {
	local b=$HY_TMP/b4 m=$HY_TMP/m4 db=$HY_TMP/state4/hybridfs.db i before ids
	local opts="state=$HY_TMP/state4,cache=$HY_TMP/store4,cache_size=8M,cache_write=back"
	tmpfs "$b" 32M
	mkdir -p "$HY_TMP/once4"
	hy_mount_ready "$b" "$m" "$opts"
	"$CRASH" once --seed 14 --files 3 --kill "$HY_PID" "$m" "$HY_TMP/once4" >"$HY_TMP/once4.out" 2>&1 ||
		hy_fail "renumber: hy-crash once failed: $(cat "$HY_TMP/once4.out")"
	hy_kill9 "$m"
	ids=$(sql "$db" "SELECT group_concat(id) FROM (SELECT id FROM files WHERE path LIKE 'n%' ORDER BY path)")
	# the disk had another number when the rows were written (a reboot
	# gave it a new one since): every device number the database holds
	# moves by 7
	sql "$db" "UPDATE files SET dev = dev + 7" || hy_die "renumber: cannot edit the files table"
	sql "$db" "UPDATE volumes SET dev = dev + 7" 2>/dev/null
	before=$(wc -l <"$HY_TMP/daemon.log")
	hy_mount_ready "$b" "$m" "$opts"
	for i in 0 1 2; do
		cmp -s "$HY_TMP/once4/n$i.synced" "$m/n$i" ||
			hy_fail "renumber: n$i, fsync'd before kill -9, lost its data after the disk was renumbered" \
				"(the daemon said: $(tail -n +"$before" "$HY_TMP/daemon.log" | grep -E 'gone|crash left|follow' | head -n 4 | tr '\n' ' '))"
	done
	tail -n +"$before" "$HY_TMP/daemon.log" | grep -q "is gone" &&
		hy_fail "renumber: recovery took the renumbered disk's files for gone"
	ctl_sync "$HY_TMP/state4" >/dev/null || hy_fail "renumber: sync failed"
	[ "$(sql "$db" "SELECT group_concat(id) FROM (SELECT id FROM files WHERE path LIKE 'n%' ORDER BY path)")" = "$ids" ] ||
		hy_fail "renumber: the files got new ids: $ids before, $(sql "$db" "SELECT group_concat(id) FROM files WHERE path LIKE 'n%'") now"
	hy_umount "$m"
	for i in 0 1 2; do
		cmp -s "$HY_TMP/once4/n$i.synced" "$b/n$i" || hy_fail "renumber: n$i differs at home after unmount"
	done
	umount "$b" || hy_fail "renumber: cannot unmount the tmpfs"
}

# getdents_during PID FILE COMMAND...: runs COMMAND with strace counting
# the getdents64 calls of PID's threads; prints the count
getdents_during() {
	local pid=$1 out=$2 st i
	shift 2
	strace -f -qq -p "$pid" -e trace=getdents64 -o "$out" 2>"$out.err" &
	st=$!
	HY_PIDS="$HY_PIDS $st"
	for i in $(seq 1 1200); do
		all_traced "$pid" && break
		sleep 0.05
	done
	all_traced "$pid" || hy_die "strace did not attach: $(cat "$out.err")"
	"$@" >"$out.cmd" 2>&1 || hy_fail "$* failed: $(cat "$out.cmd")"
	kill -INT "$st" 2>/dev/null
	wait "$st" 2>/dev/null
	hy_forget_pid "$st"
	grep -c 'getdents64(' "$out"
}

findfiles() {
	local b=$HY_TMP/b5 m=$HY_TMP/m5 i k n specs before after
	local opts="writeback_cache=off,cache=none,state=$HY_TMP/state5,bopt_size=4M,reorg_rate=0"
	command -v strace >/dev/null || { hy_log "findfiles: skipped: no strace"; return 0; }
	[ -x "$IOGEN" ] || hy_die "no $IOGEN (run make check)"
	local dirs=${HY_FINDFILES_DIRS:-400} t0 t1
	mkdir -p "$b/deep/er" "$b/t"
	(cd "$b/t" && seq -f 'd%g' 1 "$dirs" | xargs mkdir && seq -f 'd%g/x' 1 "$dirs" | xargs touch &&
		seq -f 'd%g/y' 1 "$dirs" | xargs touch) || hy_die "findfiles: cannot make the tree"
	mkdir -p "$b/t/d7"
	head -c 1M /dev/urandom >"$b/deep/er/hot"
	head -c 1M /dev/urandom >"$b/deep/er/moved"
	cp "$b/deep/er/hot" "$HY_TMP/hot5.ref"
	cp "$b/deep/er/moved" "$HY_TMP/moved5.ref"
	hy_mount_ready "$b" "$m" "$opts"
	specs=$(for k in $(seq 0 255); do printf 'r:%d:4096 ' $(((k * 97) % 256 * 4096)); done)
	for _ in 1 2 3; do
		# shellcheck disable=SC2086
		"$IOGEN" reader "$m/deep/er/hot" $specs || hy_die "findfiles: reading hot failed"
		# shellcheck disable=SC2086
		"$IOGEN" reader "$m/deep/er/moved" $specs || hy_die "findfiles: reading moved failed"
	done
	"$HYBRIDCTL" reorganize "$m" --gap 3600 --always >"$HY_TMP/reorg5.out" 2>&1 ||
		hy_fail "findfiles: reorganize failed: $(cat "$HY_TMP/reorg5.out")"
	[ "$(hy_status "$m" .bopt.map_blocks)" -gt 0 ] || hy_die "findfiles: nothing was relocated"
	# writes over relocated blocks: they go into the BOPT, dirty, and stay
	# there while a handle of the file is open (the last close sends a
	# session's BOPT writes home)
	exec 7<"$m/deep/er/hot" 8<"$m/deep/er/moved"
	for k in $(seq 0 17 255); do
		head -c 4096 /dev/urandom >"$HY_TMP/chunk5"
		for f in hot moved; do
			dd if="$HY_TMP/chunk5" of="$m/deep/er/$f" bs=4096 seek=$(((k * 97) % 256)) conv=notrunc status=none ||
				hy_fail "findfiles: write to $f failed"
			dd if="$HY_TMP/chunk5" of="$HY_TMP/${f}5.ref" bs=4096 seek=$(((k * 97) % 256)) conv=notrunc status=none
		done
	done
	[ "$(hy_status "$m" .bopt.dirty_blocks)" -gt 0 ] || hy_die "findfiles: no block is dirty in the BOPT"
	# the flush of hot alone: moved is renamed away and back after, so
	# here both are where their rows say
	t0=$(date +%s%N)
	n=$(getdents_during "$HY_PID" "$HY_TMP/strace5a" "$HYBRIDCTL" flush "$m")
	t1=$(date +%s%N)
	hy_log "findfiles: the flush read folders $n times (getdents64), a tree of $dirs folders ($(((t1 - t0) / 1000000)) ms under strace)"
	[ "$n" -le 4 ] || hy_fail "findfiles: the flush walked the tree: $n getdents64 calls for files the files table knows the paths of"
	[ "$(hy_status "$m" .bopt.dirty_blocks)" = 0 ] || hy_fail "findfiles: blocks are still dirty in the BOPT after the flush"
	cmp -s "$b/deep/er/hot" "$HY_TMP/hot5.ref" || hy_fail "findfiles: hot at home differs after the flush"
	cmp -s "$b/deep/er/moved" "$HY_TMP/moved5.ref" || hy_fail "findfiles: moved at home differs after the flush"
	# a file renamed behind the mount: its remembered path is wrong, the
	# walk finds it
	for k in $(seq 3 17 255); do
		head -c 4096 /dev/urandom >"$HY_TMP/chunk5"
		dd if="$HY_TMP/chunk5" of="$m/deep/er/moved" bs=4096 seek=$(((k * 97) % 256)) conv=notrunc status=none ||
			hy_fail "findfiles: write to moved failed"
		dd if="$HY_TMP/chunk5" of="$HY_TMP/moved5.ref" bs=4096 seek=$(((k * 97) % 256)) conv=notrunc status=none
	done
	if [ "$(hy_status "$m" .bopt.dirty_blocks)" -gt 0 ]; then
		mv "$b/deep/er/moved" "$b/t/d7/moved"
		t0=$(date +%s%N)
		"$HYBRIDCTL" flush "$m" >"$HY_TMP/flush5.out" 2>&1 || hy_fail "findfiles: flush after a rename failed: $(cat "$HY_TMP/flush5.out")"
		t1=$(date +%s%N)
		hy_log "findfiles: a flush that must walk (a renamed file): $(((t1 - t0) / 1000000)) ms"
		[ "$(hy_status "$m" .bopt.dirty_blocks)" = 0 ] || hy_fail "findfiles: the renamed file's blocks are still dirty"
		cmp -s "$b/t/d7/moved" "$HY_TMP/moved5.ref" || hy_fail "findfiles: the renamed file at home differs"
		# the walk taught its row the new path: no walk the next time
		p=$(sql "$HY_TMP/state5/hybridfs.db" "SELECT path FROM files WHERE path LIKE '%moved'")
		[ "$p" = t/d7/moved ] || hy_fail "findfiles: the renamed file's row did not learn its new path: '$p'"
		# renamed through the mount (an editor's save): the row follows at
		# once, and the flush finds the file without a walk
		head -c 4096 /dev/urandom >"$HY_TMP/chunk5"
		dd if="$HY_TMP/chunk5" of="$m/deep/er/hot" bs=4096 seek=1 conv=notrunc status=none ||
			hy_fail "findfiles: write to hot failed"
		dd if="$HY_TMP/chunk5" of="$HY_TMP/hot5.ref" bs=4096 seek=1 conv=notrunc status=none
		[ "$(hy_status "$m" .bopt.dirty_blocks)" -gt 0 ] || hy_fail "findfiles: the write to hot left nothing dirty"
		mv "$m/deep/er/hot" "$m/deep/hot2" || hy_fail "findfiles: mv through the mount failed"
		ctl_sync "$HY_TMP/state5" >/dev/null || hy_fail "findfiles: sync failed"
		p=$(sql "$HY_TMP/state5/hybridfs.db" "SELECT path FROM files WHERE path LIKE '%hot%'")
		[ "$p" = deep/hot2 ] || hy_fail "findfiles: a rename through the mount left the row's path at '$p'"
		n=$(getdents_during "$HY_PID" "$HY_TMP/strace5b" "$HYBRIDCTL" flush "$m")
		hy_log "findfiles: the flush after a rename through the mount read folders $n times"
		[ "$n" -le 4 ] || hy_fail "findfiles: the flush walked the tree for a file renamed through the mount: $n getdents64 calls"
		[ "$(hy_status "$m" .bopt.dirty_blocks)" = 0 ] || hy_fail "findfiles: hot2's blocks are still dirty after the flush"
		cmp -s "$b/deep/hot2" "$HY_TMP/hot5.ref" || hy_fail "findfiles: hot2 at home differs after the flush"
	else
		hy_fail "findfiles: the second writes left nothing dirty in the BOPT"
	fi
	exec 7<&- 8<&-
	hy_umount "$m"
}

for c in $CASES; do
	hy_log "case $c"
	"$c"
done
hy_pass
