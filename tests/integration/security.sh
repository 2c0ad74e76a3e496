#!/bin/bash
# security.sh - what a mount keeps to its owner (issue 8; design invariant
# 8), with another uid (65534) taken on by setpriv (root):
#   1. the state folder is 0700 and the mounting user's, every file in it
#      (database, WAL, BOPT, store, journal) has no group or other bits,
#      the control socket is 0600, the runtime registry folder 0700;
#   2. uid 65534 cannot list the state folder, read the database, or reach
#      the daemon: the socket's modes keep it out, and with the modes
#      opened up the daemon itself refuses it (SO_PEERCRED); hybridctl
#      run by it does not see the mount;
#   3. allow_other implies default_permissions: the kernel checks modes,
#      so root's 0600 file is not readable by uid 65534 through the mount
#      (its 0644 one is, so the check is not vacuous), and the mount's
#      options say default_permissions;
#   4. a control request naming a path outside the mount is refused with a
#      clear error: hybridctl explain /etc/passwd; raw explain requests
#      with an absolute path, "..", or a symlink in the mount leading out;
#   5. the log stores no file contents: a unique marker written through
#      the mount is found neither in the database nor in its WAL, before
#      and after unmounting.
. "$(dirname "$0")/lib.sh"

hy_need_root
hy_need_iogen
command -v setpriv >/dev/null || hy_skip "setpriv (util-linux) is missing"
CTLPEER=$HY_TESTBIN/hy-ctlpeer
[ -x "$CTLPEER" ] || hy_die "no hy-ctlpeer at $CTLPEER (run make check)"
hy_setup
umask 022

B=$HY_TMP/backing M=$HY_TMP/mnt S=$HY_TMP/state
# copies uid 65534 can run (the build tree may be closed to it)
mkdir -p "$HY_TMP/bin"
cp "$CTLPEER" "$HYBRIDCTL" "$HY_TMP/bin/" && chmod 755 "$HY_TMP/bin"/* || hy_die "cannot copy the tools"
nobody() { HYBRIDFS_RUNTIME_DIR=$(hy_runtime_for 65534) setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"; }

hy_mount_ready "$B" "$M" "state=$S,allow_other,bopt_size=4M,cache_size=4M"
DAEMON=$HY_PID

# ---- 1. modes --------------------------------------------------------------
[ "$(stat -c '%a %u' "$S")" = "700 0" ] || hy_fail "state folder: $(stat -c '%a %U' "$S"), expected 700 root"
[ "$(stat -c %a "$S/control.sock")" = 600 ] || hy_fail "control socket mode $(stat -c %a "$S/control.sock"), expected 600"
printf 'secret one\n' >"$M/a" && "$HYBRIDCTL" flush "$M" >/dev/null # so the database, WAL and store are written
for f in "$S"/* "$S"/.[!.]*; do
	[ -e "$f" ] || continue
	[ "$(stat -c %u "$f")" = 0 ] || hy_fail "$f belongs to uid $(stat -c %u "$f")"
	mode=$(stat -c %a "$f")
	[ $((0$mode & 077)) = 0 ] || hy_fail "$f has mode $mode: group or others have access"
done
ls "$S"/hybridfs.db >/dev/null || hy_fail "no database in the state folder (the check above is vacuous)"
run=${XDG_RUNTIME_DIR:-/run}/hybridfs
if [ -d "$run" ]; then
	[ "$(stat -c %a "$run")" = 700 ] || hy_fail "runtime registry $run: mode $(stat -c %a "$run"), expected 700"
fi

# ---- 2. another uid --------------------------------------------------------
out=$(nobody ls "$S" 2>&1) && hy_fail "uid 65534 listed the state folder: $out"
out=$(nobody cat "$S/hybridfs.db" 2>&1 >/dev/null) && hy_fail "uid 65534 read the database"
out=$(nobody "$HY_TMP/bin/hy-ctlpeer" "$S" line '{"v":1,"cmd":"status"}' 2>&1)
rc=$?
if grep -Eq '"ok": ?true' <<<"$out"; then
	hy_fail "uid 65534 was answered by the daemon: $(head -c 200 <<<"$out")"
elif ! { [ "$rc" = 3 ] && grep -q 'Permission denied' <<<"$out"; }; then
	hy_fail "uid 65534: not kept out by the socket's modes (status $rc): $out"
fi
# with the modes opened up, the daemon itself turns it away
chmod 711 "$S" && chmod 666 "$S/control.sock"
out=$(nobody "$HY_TMP/bin/hy-ctlpeer" "$S" line '{"v":1,"cmd":"status"}' 2>&1)
rc=$?
chmod 600 "$S/control.sock" && chmod 700 "$S"
if grep -Eq '"ok": ?true' <<<"$out"; then
	hy_fail "uid 65534 on an open socket was answered: $(head -c 200 <<<"$out")"
elif ! grep -Eq '"ok": ?false.*refused' <<<"$out"; then
	hy_fail "uid 65534 on an open socket was not refused by the daemon (status $rc): $out"
fi
grep -q "refused uid 65534" "$HY_TMP/daemon.log" || hy_fail "the daemon did not log the refused uid"
out=$(cd / && nobody "$HY_TMP/bin/hybridctl" status "$M" 2>&1)
rc=$?
[ "$rc" != 0 ] || hy_fail "hybridctl status as uid 65534 succeeded: $out"
grep -q "$DAEMON" <<<"$out" && hy_fail "hybridctl as uid 65534 shows the daemon's pid: $out"
kill -0 "$DAEMON" 2>/dev/null || hy_die "the daemon died refusing another uid"

# ---- 3. allow_other implies default_permissions ----------------------------
findmnt -rn -o OPTIONS --target "$M" | grep -q default_permissions ||
	hy_fail "the allow_other mount lacks default_permissions: $(findmnt -rn -o OPTIONS --target "$M")"
printf 'root only\n' >"$M/private" && chmod 600 "$M/private"
printf 'for all\n' >"$M/public" && chmod 644 "$M/public"
out=$(nobody cat "$M/private" 2>&1) && hy_fail "uid 65534 read root's 0600 file through the mount: $out"
grep -q "Permission denied" <<<"$out" || hy_fail "uid 65534 on root's 0600 file: $out"
[ "$(nobody cat "$M/public" 2>&1)" = "for all" ] || hy_fail "uid 65534 cannot read a 0644 file (the check above is vacuous)"
out=$(nobody sh -c "echo x >> '$M/public'" 2>&1) && hy_fail "uid 65534 wrote root's 0644 file"
out=$(nobody sh -c ": > '$M/new'" 2>&1) && hy_fail "uid 65534 created a file in root's 0755 folder"

# ---- 4. control requests naming paths outside the mount ---------------------
out=$("$HYBRIDCTL" explain /etc/passwd 2>&1)
rc=$?
[ "$rc" = 1 ] && grep -q "not in a hybridfs mount" <<<"$out" || hy_fail "hybridctl explain /etc/passwd: status $rc: $out"
ln -s /etc "$M/out" && ln -s ../.. "$M/up" && mkdir "$M/d" || hy_fail "cannot make the symlinks"
printf 'inside\n' >"$M/d/f"
for p in /etc/passwd ../../../../etc/passwd d/../../etc/passwd out/passwd up/etc/passwd; do
	out=$("$CTLPEER" "$S" line "{\"v\":1,\"cmd\":\"explain\",\"path\":\"$p\"}" 2>&1)
	grep -Eq '"ok": ?false.*not a path inside the mount' <<<"$out" ||
		hy_fail "explain \"$p\" (outside the mount) was not refused: $out"
done
out=$("$CTLPEER" "$S" line '{"v":1,"cmd":"explain","path":"d/f"}' 2>&1)
grep -Eq '"ok": ?true' <<<"$out" || hy_fail "explain of a file inside the mount failed: $out"

# ---- 5. no file contents in the log -------------------------------------------
MARK="hySECRET$$x$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')q"
for i in $(seq 1 50); do printf '%s %d\n' "$MARK" "$i"; done >"$M/marked" || hy_fail "cannot write the marker"
cat "$M/marked" >/dev/null
"$HYBRIDCTL" flush "$M" >/dev/null || hy_fail "flush failed"
grep -qF "$MARK" "$B/marked" || hy_fail "the marker is not at home (the check below is vacuous)"
[ "$(hy_status "$M" .profiler.written)" -gt 0 ] || hy_fail "nothing was logged (the check below is vacuous)"
for f in "$S"/hybridfs.db "$S"/hybridfs.db-wal "$S"/hybridfs.db-shm; do
	[ -e "$f" ] || continue
	grep -qaF "$MARK" "$f" && hy_fail "$(basename "$f") holds file contents (the marker)"
done
hy_umount "$M"
[ "${HY_DAEMON_STATUS:-0}" = 0 ] || hy_fail "the daemon exited with status $HY_DAEMON_STATUS"
for f in "$S"/hybridfs.db "$S"/hybridfs.db-wal; do
	[ -e "$f" ] || continue
	grep -qaF "$MARK" "$f" && hy_fail "after unmount $(basename "$f") holds file contents (the marker)"
done
[ ! -e "$S/control.sock" ] || hy_fail "the control socket is left after unmount"

hy_pass
