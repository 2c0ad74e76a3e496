#!/bin/bash
# mounthelper.sh - mounting and unmounting the ways a system does it.
#
# Part 1 (any user with FUSE): a foreground daemon is stopped by SIGTERM,
# by SIGINT and by `fusermount3 -u`; each time the mount goes away and the
# daemon exits 0.
#
# Part 2 (root, needs unshare): mount(8) runs /sbin/mount.hybridfs.
# mount(8) looks for helpers only in /sbin, /sbin/fs.d and /sbin/fs, so
# this part runs in a private mount namespace, where a folder holding the
# system's /sbin entries plus a mount.hybridfs symlink is bind-mounted over
# the real /sbin (on Debian 12 /sbin -> usr/sbin). Nothing of it is seen
# outside the namespace. Checked there: `mount -t hybridfs`, an fstab line
# through `mount --fstab`, `umount`, mount -f (fake) and -s (sloppy), and a
# bad option refused with the daemon's own message.
. "$(dirname "$0")/lib.sh"

hy_setup
export LC_ALL=C
CHECKED=0

# ---------------------------------------------------------------- part 1
# A shell starts a background command with SIGINT ignored (POSIX, when
# job control is off), and libfuse keeps an ignored SIGINT ignored. So the
# daemon is started through env --default-signal=INT, as from a terminal.
SIGDFL=$HY_TMP/sigdfl
if env --default-signal=INT true 2>/dev/null; then
	printf '#!/bin/sh\nexec env --default-signal=INT,QUIT "%s" "$@"\n' "$HYBRIDFS" >"$SIGDFL"
else
	# Old coreutils: job control gives the job the default SIGINT.
	printf '#!/bin/bash\nset -m\n"%s" "$@" &\nwait $!\n' "$HYBRIDFS" >"$SIGDFL"
	hy_log "note: env --default-signal missing, SIGINT goes through a job-control shell"
fi
chmod 755 "$SIGDFL"

# wait_gone PID: bounded wait for a child to exit; sets GONE_STATUS.
wait_gone() {
	local pid=$1 i
	GONE_STATUS=
	for i in $(seq 1 600); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null
			GONE_STATUS=$?
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# stop_with HOW NAME [daemon args]: mount, write through it, stop it
# with HOW (a signal name or "fusermount"), check it is gone cleanly.
stop_with() {
	local how=$1 name=$2 b m pid
	shift 2
	b=$HY_TMP/$name/b
	m=$HY_TMP/$name/m
	HYBRIDFS=$SIGDFL hy_mount "$b" "$m" -o "state=$HY_TMP/$name/state" "$@"
	pid=$HY_PID
	printf '%s\n' "$name" >"$m/file" || hy_fail "$name: cannot write through the mount"
	if [ "$how" = fusermount ]; then
		fusermount3 -u "$m" || hy_fail "$name: fusermount3 -u failed"
	else
		kill -s "$how" "$pid" || hy_fail "$name: kill -s $how $pid failed"
	fi
	if ! wait_gone "$pid"; then
		hy_fail "$name: daemon still running 30 s after $how"
		return
	fi
	[ "$GONE_STATUS" = 0 ] || hy_fail "$name: daemon exit status $GONE_STATUS after $how, expected 0"
	hy_is_mounted "$m" && hy_fail "$name: still mounted after $how (daemon exited $GONE_STATUS)"
	[ "$(cat "$b/file" 2>/dev/null)" = "$name" ] ||
		hy_fail "$name: the file written through the mount is not in the backing folder"
	# A clean unmount leaves a mount point that can be mounted again.
	ls "$m" >/dev/null 2>&1 || hy_fail "$name: mount point unusable after $how (stale?)"
	grep -qi 'error\|fail' "$HY_TMP/daemon.log" &&
		hy_fail "$name: daemon log has errors: $(cat "$HY_TMP/daemon.log")"
	: >"$HY_TMP/daemon.log"
	CHECKED=$((CHECKED + 1))
}

stop_with TERM sigterm
stop_with INT sigint
stop_with fusermount fusermount
stop_with TERM sigterm-single -s
stop_with INT sigint-single -s

# ---------------------------------------------------------------- part 2
run_namespace_part() {
	local inner=$HY_TMP/inner.sh rc line
	if [ "$(id -u)" != 0 ]; then
		hy_log "SKIP part 2: mount(8) with a helper needs root"
		return 77
	fi
	if ! command -v unshare >/dev/null || ! command -v mount >/dev/null; then
		hy_log "SKIP part 2: unshare or mount is missing"
		return 77
	fi
	if ! unshare -m --propagation private true 2>/dev/null; then
		hy_log "SKIP part 2: unshare -m is not permitted here"
		return 77
	fi
	cat >"$inner" <<'INNER'
# Runs inside `unshare -m --propagation private`. Reports with lines
# "FAIL: ..." and "NOTE: ..."; exit 77 when the bind mount is refused.
set -u
# Drop this namespace's copies of other tests' hybridfs mounts first (see
# hy_drop_foreign_mounts in lib.sh): a copy would keep their daemons alive.
findmnt -rn -t fuse.hybridfs -o TARGET 2>/dev/null | sort -r | while IFS= read -r mp; do
	umount -l "$mp" 2>/dev/null
done
FAILS=0
FUSEMOUNTS=""
NS=$(readlink /proc/self/ns/mnt)
EXE=$(readlink -f "$HYBRIDFS")
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

mounted() {
	awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo
}
mount_options() {
	# Options, then the type: the field after the " - " separator.
	awk -v m="$1" '$5 == m { for (i = 7; $i != "-"; i++); print $6 "|" $(i + 1) }' \
		/proc/self/mountinfo
}
# The daemons in this namespace: only this test's, nobody else's.
our_daemons() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$NS" ] || continue
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$EXE" ] || continue
		echo "${p#/proc/}"
	done
}
wait_no_daemons() {
	local i
	for i in $(seq 1 600); do
		[ -z "$(our_daemons)" ] && return 0
		sleep 0.05
	done
	return 1
}
cleanup() {
	local m p
	for m in $FUSEMOUNTS; do
		mounted "$m" && { umount "$m" 2>/dev/null || umount -l "$m"; }
	done
	if ! wait_no_daemons; then
		for p in $(our_daemons); do
			fail "daemon $p still running at the end; killing it"
			kill "$p"
		done
	fi
}
trap cleanup EXIT

# /sbin as mount(8) sees it: every entry of the real one, plus ours.
SBIN=$(readlink -f /sbin)
mkdir "$T/sbin-real" "$T/sbin-new"
mount --bind "$SBIN" "$T/sbin-real" || exit 77
for f in "$T/sbin-real"/* "$T/sbin-real"/.[!.]*; do
	[ -e "$f" ] || [ -L "$f" ] || continue
	ln -s "$f" "$T/sbin-new/${f##*/}"
done
rm -f "$T/sbin-new/mount.hybridfs"
ln -s "$HYBRIDFS" "$T/sbin-new/mount.hybridfs"
mount --bind "$T/sbin-new" "$SBIN" || exit 77
[ "$(readlink -f /sbin/mount.hybridfs)" = "$EXE" ] || fail "/sbin/mount.hybridfs is not the daemon"
for tool in mount umount fusermount3; do
	p=$(command -v "$tool") || { fail "$tool missing"; continue; }
	p=$(readlink -f "$p")
	case $p in "$T"/*) fail "$tool resolves into the replaced /sbin: $p" ;; esac
	[ -x "$p" ] || fail "$tool ($p) not runnable in the namespace"
done

# 1. mount -t hybridfs, with options.
B=$T/ns1/b M=$T/ns1/m S=$T/ns1/state
mkdir -p "$B" "$M"
FUSEMOUNTS="$FUSEMOUNTS $M"
if timeout 60 mount -t hybridfs "$B" "$M" -o "state=$S,nodev" 2>"$T/err"; then
	mounted "$M" || fail "mount -t hybridfs returned 0 but nothing is mounted on $M"
	opts=$(mount_options "$M")
	case $opts in *"|fuse.hybridfs") ;; *) fail "mount -t hybridfs: type is not fuse.hybridfs: $opts" ;; esac
	case $opts in *nodev*) ;; *) fail "mount -t hybridfs -o nodev: not in the mount options: $opts" ;; esac
	[ -n "$(our_daemons)" ] || fail "mount -t hybridfs: no daemon running"
	echo one >"$M/via-mount" || fail "mount -t hybridfs: cannot write"
	[ "$(cat "$B/via-mount" 2>/dev/null)" = one ] ||
		fail "mount -t hybridfs: a file written via the mount is not in the backing folder"
	[ -f "$S/hybridfs.db" ] || fail "mount -t hybridfs -o state=$S: no database in the state folder"
	[ -e "$B/.hybridfs" ] && fail "mount -t hybridfs -o state=...: a state folder appeared in the backing folder"
	if umount "$M" 2>"$T/err"; then
		mounted "$M" && fail "umount returned 0 but $M is still mounted"
		wait_no_daemons || fail "umount: the daemon did not exit within 30 s"
	else
		fail "umount $M failed: $(cat "$T/err")"
	fi
else
	fail "mount -t hybridfs failed ($?): $(cat "$T/err")"
fi

# 2. An fstab line.
B=$T/ns2/b M=$T/ns2/m
mkdir -p "$B" "$M"
FUSEMOUNTS="$FUSEMOUNTS $M"
printf '# test fstab\n%s %s hybridfs defaults,noatime 0 0\n' "$B" "$M" >"$T/fstab"
if timeout 60 mount --fstab "$T/fstab" "$M" 2>"$T/err"; then
	mounted "$M" || fail "mount --fstab returned 0 but nothing is mounted on $M"
	case $(mount_options "$M") in *noatime*) ;; *) fail "fstab noatime not applied: $(mount_options "$M")" ;; esac
	echo two >"$M/via-fstab" || fail "fstab mount: cannot write"
	[ "$(cat "$B/via-fstab" 2>/dev/null)" = two ] ||
		fail "fstab mount: a file written via the mount is not in the backing folder"
	# the default state folder: out of the tree, in the test's own root
	# folder (HYBRIDFS_STATE_ROOT, lib.sh), named by the backing path
	# (lib.sh is not sourced in here: the one folder named for ns2/b)
	DEFSTATE=$(ls -d "$HYBRIDFS_STATE_ROOT"/*ns2-b 2>/dev/null | head -n 1)
	[ -f "$DEFSTATE/hybridfs.db" ] || fail "fstab mount: no default state folder $DEFSTATE"
	[ -e "$B/.hybridfs/hybridfs.db" ] && fail "fstab mount: a database appeared in $B/.hybridfs"
	[ -e "$M/.hybridfs" ] && fail "fstab mount: the BOPT's folder shows through the mount"
	if umount "$M" 2>"$T/err"; then
		mounted "$M" && fail "umount (fstab) returned 0 but $M is still mounted"
		wait_no_daemons || fail "umount (fstab): the daemon did not exit within 30 s"
	else
		fail "umount (fstab) $M failed: $(cat "$T/err")"
	fi
else
	fail "mount --fstab failed ($?): $(cat "$T/err")"
fi
# The same line found by the backing folder's name too.
if timeout 60 mount --fstab "$T/fstab" "$B" 2>"$T/err"; then
	mounted "$M" || fail "mount --fstab FILE BACKING: nothing mounted on $M"
	umount "$M" || fail "umount after mount --fstab FILE BACKING failed"
	wait_no_daemons || fail "umount (fstab by source): the daemon did not exit within 30 s"
else
	fail "mount --fstab FILE BACKING failed: $(cat "$T/err")"
fi

# 2b. An fstab line with the same path twice: a mount in place.
D=$T/ns2/inplace
mkdir -p "$D"
echo before >"$D/f"
FUSEMOUNTS="$FUSEMOUNTS $D"
printf '# test fstab\n%s %s hybridfs defaults 0 0\n' "$D" "$D" >"$T/fstab2"
if timeout 60 mount --fstab "$T/fstab2" "$D" 2>"$T/err"; then
	mounted "$D" || fail "mount --fstab (in place) returned 0 but nothing is mounted on $D"
	[ "$(cat "$D/f" 2>/dev/null)" = before ] || fail "fstab mount in place: cannot read $D/f"
	echo after >"$D/g" || fail "fstab mount in place: cannot write"
	umount "$D" || fail "umount (fstab, in place) $D failed"
	wait_no_daemons || fail "umount (fstab, in place): the daemon did not exit within 30 s"
	[ "$(cat "$D/g" 2>/dev/null)" = after ] ||
		fail "fstab mount in place: a file written through the mount is not in $D"
else
	fail "mount --fstab (in place) failed: $(cat "$T/err")"
fi

# 3. A bad option: mount fails with the daemon's message.
B=$T/ns3/b M=$T/ns3/m
mkdir -p "$B" "$M"
FUSEMOUNTS="$FUSEMOUNTS $M"
timeout 60 mount -t hybridfs "$B" "$M" -o frobnicate 2>"$T/err"
rc=$?
[ "$rc" != 0 ] || fail "mount -t hybridfs -o frobnicate succeeded"
echo "NOTE: mount -t hybridfs -o frobnicate: status $rc: $(tr '\n' ' ' <"$T/err")"
grep -qF frobnicate "$T/err" || fail "mount -o frobnicate: message does not name it: $(cat "$T/err")"
mounted "$M" && fail "mount -o frobnicate: something got mounted"
[ -z "$(our_daemons)" ] || fail "mount -o frobnicate: a daemon is left running"

# 4. mount -f (fake) mounts nothing; mount -s (sloppy) ignores frobnicate.
timeout 60 mount -f -t hybridfs "$B" "$M" 2>"$T/err" || fail "mount -f -t hybridfs failed: $(cat "$T/err")"
mounted "$M" && fail "mount -f (fake) mounted $M"
[ -z "$(our_daemons)" ] || fail "mount -f: a daemon is running"
if timeout 60 mount -s -t hybridfs "$B" "$M" -o frobnicate 2>"$T/err"; then
	mounted "$M" || fail "mount -s -o frobnicate: returned 0, nothing mounted"
	umount "$M" || fail "umount after mount -s failed"
	wait_no_daemons || fail "umount (sloppy): the daemon did not exit within 30 s"
else
	fail "mount -s -t hybridfs -o frobnicate (sloppy) failed: $(cat "$T/err")"
fi

# 5. A mount point that is busy.
B=$T/ns5/b M=$T/ns5/m
mkdir -p "$B" "$M"
FUSEMOUNTS="$FUSEMOUNTS $M"
if timeout 60 mount -t hybridfs "$B" "$M" 2>"$T/err"; then
	( cd "$M" && umount "$M" 2>/dev/null ) && fail "umount of a busy mount succeeded"
	mounted "$M" || fail "a failed umount of a busy mount unmounted it anyway"
	umount "$M" || fail "umount once no longer busy failed"
	wait_no_daemons || fail "umount (busy case): the daemon did not exit within 30 s"
else
	fail "mount -t hybridfs (busy case) failed: $(cat "$T/err")"
fi

[ "$FAILS" = 0 ]
INNER
	mkdir -p "$HY_TMP/ns"
	T=$HY_TMP/ns HYBRIDFS=$(readlink -f "$HYBRIDFS") \
		timeout 300 unshare -m --propagation private bash "$inner" >"$HY_TMP/inner.out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		FAIL:*) hy_fail "mount(8): ${line#FAIL: }" ;;
		*) hy_log "mount(8): $line" ;;
		esac
	done <"$HY_TMP/inner.out"
	if [ "$rc" = 77 ]; then
		hy_log "SKIP part 2: bind mounts are not permitted in a mount namespace"
		return 77
	fi
	if [ "$rc" != 0 ] && ! grep -q '^FAIL:' "$HY_TMP/inner.out"; then
		hy_fail "mount(8): the namespace script ended with status $rc"
	fi
	# Nothing of the namespace leaked out.
	[ -e /sbin/mount.hybridfs ] && [ ! -e "$HY_TMP/ns/sbin-new" ] &&
		hy_log "note: /sbin/mount.hybridfs exists on this system (installed)"
	awk -v t="$HY_TMP" 'index($5, t) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo &&
		hy_fail "mount(8): namespace mounts are visible outside it"
	CHECKED=$((CHECKED + 1))
	return 0
}

run_namespace_part
[ "$CHECKED" -gt 0 ] || hy_skip "nothing could be checked"
hy_pass
