#!/bin/bash
# remount.sh - mounting where a mount already is (issue 21, item 7).
#
#   a. the mount a killed daemon left (every request: ENOTCONN): a new
#      mount there is refused with the command that clears it, umount M
#      (or fusermount3 -u M); after it, the mount goes ahead
#   b. over a live hybridfs mount: refused, naming it (it would hide the
#      mount below, which hybridctl would still report); in place over
#      it; a backing directory that lies on one (two caches); with stack,
#      the mount over it goes ahead
#   c. another mount's cache store and BOPT, refused: the message names
#      both mounts by their directories (running: backing and mountpoint;
#      not: backing and state folder), not by uuids alone
# Without the checks a. says only "Transport endpoint is not connected",
# b. mounts without a word, and c. gives two uuids.
. "$(dirname "$0")/lib.sh"

hy_setup

# mounts_at M: how many mounts are stacked on M
mounts_at() {
	awk -v m="$1" '$5 == m' /proc/self/mountinfo | wc -l
}

# refused CASE WANT BACKING MOUNTPOINT OPTIONS: the daemon, in the
# foreground, exits failing and saying WANT, and the mounts on MOUNTPOINT
# are as they were (hy_mount_refused wants none there). A daemon that
# mounts instead is failed and unmounted at once; the bound is reached
# only by one that hangs.
refused() {
	local before pid _ rc
	before=$(mounts_at "$4")
	"$HYBRIDFS" "$3" "$4" -f -o "$5" >"$HY_TMP/refused.out" 2>&1 &
	pid=$!
	HY_PIDS="$HY_PIDS $pid"
	for _ in $(seq 1 600); do
		hy_exited "$pid" && break
		[ "$(mounts_at "$4")" = "$before" ] || break
		sleep 0.05
	done
	if ! hy_exited "$pid"; then
		hy_fail "$1: the mount went ahead"
		fusermount3 -u "$4" 2>/dev/null || kill "$pid"
	fi
	wait "$pid"
	rc=$?
	hy_forget_pid "$pid"
	[ $rc != 0 ] || hy_fail "$1: the daemon exited 0"
	grep -qF -- "$2" "$HY_TMP/refused.out" ||
		hy_fail "$1: the refusal does not say \"$2\": $(cat "$HY_TMP/refused.out")"
	[ "$(mounts_at "$4")" = "$before" ] || hy_fail "$1: the mounts on $4 changed"
}

# ---- a. a dead mount ---------------------------------------------------------
b=$HY_TMP/a/b m=$HY_TMP/a/m
hy_mount "$b" "$m" -o "state=$HY_TMP/a/s"
kill -9 "$HY_PID"
wait "$HY_PID" 2>/dev/null
hy_forget_pid "$HY_PID"
HY_PID=
df "$m" >/dev/null 2>&1 && hy_die "a: $m still answers a statfs after kill -9 of its daemon"
refused dead "mountpoint \"$m\": the mount at \"$m\" is left from a daemon that died (Transport endpoint is not connected); run umount $m (or fusermount3 -u $m) first" \
	"$b" "$m" "state=$HY_TMP/a/s"
# a folder below it names the mount, not itself
refused dead-below "the mount at \"$m\" is left from a daemon that died" \
	"$b" "$m/sub" "state=$HY_TMP/a/s"
# a name that a shell would not take as one word is quoted in the command
m2="$HY_TMP/a/m(2)"
hy_mount "$HY_TMP/a/b2" "$m2" -o "state=$HY_TMP/a/s2"
kill -9 "$HY_PID"
wait "$HY_PID" 2>/dev/null
hy_forget_pid "$HY_PID"
HY_PID=
refused dead-quoted "run umount '$m2' (or fusermount3 -u '$m2') first" \
	"$HY_TMP/a/b2" "$m2" "state=$HY_TMP/a/s2"
fusermount3 -u "$m2" || hy_fail "a: fusermount3 -u of the dead mount failed"
# what the message says to do works
fusermount3 -u "$m" || hy_fail "a: fusermount3 -u $m failed on the dead mount"
hy_mount_ready "$b" "$m" "state=$HY_TMP/a/s"
hy_umount "$m"

# ---- b. a live hybridfs mount ----------------------------------------------------
b=$HY_TMP/b/b m=$HY_TMP/b/m
mkdir -p "$b/sub" "$HY_TMP/b/b2" "$HY_TMP/b/m3"
hy_mount_ready "$b" "$m" "state=$HY_TMP/b/s"
lower=$HY_PID
refused over "mountpoint \"$m\" is a live hybridfs mount (of \"$b\")" \
	"$HY_TMP/b/b2" "$m" "state=$HY_TMP/b/s2"
refused in-place "mountpoint \"$m\" is a live hybridfs mount" "$m" "$m" \
	"state=$HY_TMP/b/s3"
refused backing-on "backing directory \"$m/sub\" lies on the live hybridfs mount at \"$m\" (of \"$b\")" \
	"$m/sub" "$HY_TMP/b/m3" "state=$HY_TMP/b/s4"
# with stack: mounted over it, and unmounted first
# (hy_mount would take the mount below for it: started by hand, and
# waited for until a second mount shows)
"$HYBRIDFS" "$HY_TMP/b/b2" "$m" -f -o "state=$HY_TMP/b/s2,stack" 2>>"$HY_TMP/daemon.log" &
upper=$!
HY_PIDS="$HY_PIDS $upper"
for _ in $(seq 1 600); do
	[ "$(mounts_at "$m")" = 2 ] && break
	hy_exited "$upper" && break
	sleep 0.05
done
[ "$(mounts_at "$m")" = 2 ] || hy_die "b: stack did not mount over $m"
HY_PID=$upper
[ -d "$m/sub" ] && hy_fail "b: the lower mount's files show through the upper one"
hy_umount "$m"
hy_exited "$upper" || hy_fail "b: the upper daemon still runs"
HY_PID=$lower
[ -d "$m/sub" ] || hy_fail "b: the lower mount is not back after the upper one went"
hy_umount "$m"

# ---- c. another mount's store and BOPT: named by its directories -------------
# (the store's superblock and the BOPT's header know the owner by its
# uuid only; the message says which directories that is, running or not)
c=$HY_TMP/c
mkdir -p "$c/b1" "$c/m1" "$c/b2" "$c/m2"
hy_mount_ready "$c/b1" "$c/m1" "state=$c/s1,cache=$c/s1/x.cache,cache_size=1M"
live="(\"$c/b1\" on \"$c/m1\"), not of mount "
self="(\"$c/b2\" on \"$c/m2\")"
gone="(\"$c/b1\", not mounted; state in \"$c/s1\"), not of mount "
# the refusals come after the mount shows (the store is opened then): the
# daemon unmounts itself
hy_mount_refused store-live "$live" "$c/b2" "$c/m2" "state=$c/s2,cache=$c/s1/x.cache"
grep -qF -- "$self" "$HY_TMP/refused.out" ||
	hy_fail "store-live: the refusal does not name this mount $self: $(cat "$HY_TMP/refused.out")"
hy_mount_refused bopt-live "$live" "$c/b2" "$c/m2" "state=$c/s2,cache=none,bopt=$c/s1/bopt"
grep -qF -- "$self" "$HY_TMP/refused.out" ||
	hy_fail "bopt-live: the refusal does not name this mount $self: $(cat "$HY_TMP/refused.out")"
hy_umount "$c/m1"
hy_mount_refused store-gone "$gone" "$c/b2" "$c/m2" "state=$c/s2,cache=$c/s1/x.cache"
hy_mount_refused bopt-gone "$gone" "$c/b2" "$c/m2" "state=$c/s2,cache=none,bopt=$c/s1/bopt"

hy_pass
