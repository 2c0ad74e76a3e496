#!/usr/bin/env bash
# killpriv.sh - FUSE_HANDLE_KILLPRIV_V2 (issue 20, item 1): the daemon
# takes the flag through its own end of /dev/fuse (fs/fuse_channel.c), so
# the kernel stops asking for security.capability before every write, and
# the daemon clears setuid, setgid and security.capability as the kernel
# would have:
#   1. 100 write(2)s cost 100 WRITE requests and at most one GETXATTR
#      (the request counts of hybridctl status --json); with
#      killpriv_v2=off, the fallback, a GETXATTR each, and the status says
#      why;
#   2. on an allow_other mount, as on a plain directory, right after each
#      step (the kernel must not show a mode the daemon has changed): a
#      write, a truncate(2), an O_TRUNC open and a fallocate by a user
#      without CAP_FSETID clear setuid, and setgid where the file is
#      group-executable or the writer outside its group; root keeps them;
#      the owner's chown(f, -1, -1) clears them;
#      a bit set again after the daemon found the file clear goes at the
#      next write; any write, root's too, removes security.capability;
#      the backing files show what the mount shows;
#   3. a user's own mount, made through fusermount3, takes the flag too.
# Other users are taken on with setpriv(1) by numeric ids. Needs root.
. "$(dirname "$0")/lib.sh"

hy_need_root
HYBRIDCTL=${HYBRIDCTL:-$(cd "$(dirname "$0")/../.." && pwd)/hybridctl}
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"
command -v jq >/dev/null || hy_skip "jq is missing"
command -v setpriv >/dev/null || hy_skip "setpriv (util-linux) is missing"
command -v setcap >/dev/null && command -v getcap >/dev/null ||
	hy_skip "setcap/getcap (libcap2-bin) are missing"
command -v fallocate >/dev/null || hy_skip "fallocate (util-linux) is missing"

# The user's mount (3) goes through the setuid fusermount3, which needs
# /dev/fuse open to the user; where it is not, the test runs in a private
# mount namespace with its own 0666 node for the device (as usermount.sh).
user_can_mount() {
	[ -u "$(command -v fusermount3)" ] &&
		setpriv --reuid=65534 --regid=65534 --clear-groups test -r /dev/fuse -a -w /dev/fuse
}
if [ -z "${HY_KILLPRIV_NS:-}" ] && [ -u "$(command -v fusermount3)" ] && ! user_can_mount &&
	command -v unshare >/dev/null; then
	exec env HY_KILLPRIV_NS=1 unshare -m --propagation private "$0" "$@"
fi
[ -n "${HY_KILLPRIV_NS:-}" ] && hy_drop_foreign_mounts
hy_setup
umask 022
export LC_ALL=C
if [ -n "${HY_KILLPRIV_NS:-}" ]; then
	mknod -m 666 "$HY_TMP/fuse" c 10 229 && mount --bind "$HY_TMP/fuse" /dev/fuse ||
		hy_log "no usable /dev/fuse for users in the private namespace"
fi

# as UID[:GID[:GROUPS]] CMD...: CMD as that user, without capabilities
as() {
	local u=${1%%:*} rest g gs
	rest=${1#*:}
	[ "$rest" = "$1" ] && rest=$u
	g=${rest%%:*}
	gs=${rest#*:}
	[ "$gs" = "$rest" ] && gs=
	shift
	if [ -n "$gs" ]; then
		HYBRIDFS_RUNTIME_DIR=$(hy_runtime_for "$u") setpriv --reuid="$u" --regid="$g" \
			--groups="$gs" --inh-caps=-all "$@"
	else
		HYBRIDFS_RUNTIME_DIR=$(hy_runtime_for "$u") setpriv --reuid="$u" --regid="$g" \
			--clear-groups --inh-caps=-all "$@"
	fi
}

# requests MOUNT OPCODE: how many requests of OPCODE the daemon has read
requests() {
	hy_status "$1" ".fuse.requests.$2 // 0"
}

# hundred_writes FILE: 100 write(2)s of 10 bytes into FILE, one open
hundred_writes() {
	dd if=/dev/zero of="$1" bs=10 count=100 conv=notrunc status=none
}

# ---- 1. requests per write ------------------------------------------------

hy_mount "$HY_TMP/b" "$HY_TMP/m" -o allow_other
MAIN_PID=$HY_PID
# the mount shows before INIT is answered; a request waits for it
stat "$HY_TMP/m" >/dev/null || hy_die "cannot stat the mount"
if [ "$(hy_status "$HY_TMP/m" .fuse.killpriv_v2)" != true ]; then
	why=$(hy_status "$HY_TMP/m" .fuse.killpriv_v2_why)
	case $why in
	*"does not offer"*) hy_skip "the kernel does not offer FUSE_HANDLE_KILLPRIV_V2: $why" ;;
	esac
	hy_fail "the daemon did not take FUSE_HANDLE_KILLPRIV_V2: $why"
fi
: >"$HY_TMP/m/w100" || hy_die "cannot create a file in the mount"
x0=$(requests "$HY_TMP/m" getxattr)
w0=$(requests "$HY_TMP/m" write)
hundred_writes "$HY_TMP/m/w100" || hy_fail "100 writes failed"
x1=$(requests "$HY_TMP/m" getxattr)
w1=$(requests "$HY_TMP/m" write)
[ $((w1 - w0)) -ge 100 ] || hy_fail "100 writes: $((w1 - w0)) WRITE requests counted"
[ $((x1 - x0)) -le 1 ] || hy_fail "100 writes cost $((x1 - x0)) GETXATTR requests (at most 1)"
hy_log "100 writes: $((w1 - w0)) WRITE, $((x1 - x0)) GETXATTR"

# the fallback: the kernel clears the bits itself, a GETXATTR a write
hy_mount "$HY_TMP/b2" "$HY_TMP/m2" -o allow_other,killpriv_v2=off
OFF_PID=$HY_PID
stat "$HY_TMP/m2" >/dev/null || hy_die "cannot stat the second mount"
[ "$(hy_status "$HY_TMP/m2" .fuse.killpriv_v2)" = false ] ||
	hy_fail "killpriv_v2=off: the status says the daemon took the flag"
case $(hy_status "$HY_TMP/m2" .fuse.killpriv_v2_why) in
*"killpriv_v2=off"*) ;;
*) hy_fail "killpriv_v2=off: the status does not say why: $(hy_status "$HY_TMP/m2" .fuse.killpriv_v2_why)" ;;
esac
: >"$HY_TMP/m2/w100"
x0=$(requests "$HY_TMP/m2" getxattr)
hundred_writes "$HY_TMP/m2/w100" || hy_fail "killpriv_v2=off: 100 writes failed"
x1=$(requests "$HY_TMP/m2" getxattr)
[ $((x1 - x0)) -ge 100 ] ||
	hy_fail "killpriv_v2=off: 100 writes cost $((x1 - x0)) GETXATTR requests, not one each"
mkdir "$HY_TMP/m2/t" && chmod 1777 "$HY_TMP/m2/t" &&
	(cd "$HY_TMP/m2/t" && as 1001 sh -c 'echo a > s; chmod 6777 s' && as 1002 sh -c 'echo b >> s') ||
	hy_fail "killpriv_v2=off: the setuid write failed"
[ "$(stat -c %a "$HY_TMP/m2/t/s")" = 777 ] ||
	hy_fail "killpriv_v2=off: a write by another user left mode $(stat -c %a "$HY_TMP/m2/t/s")"

# ---- 2. what the daemon clears ----------------------------------------------

# st NAME: its mode as the kernel shows it now; caps NAME: its capabilities
st() { stat -c '%n %a' "$1"; }
caps() {
	local c
	c=$(getcap "$1" 2>&1 | sed "s|^$1 *||")
	printf '%s caps: %s\n' "$1" "${c:-none}"
}

# Works in the current directory; prints one line per step and node.
scenario() {
	chmod 1777 .
	as 1001 sh -c 'for f in w g gm x r t tr o fa re cw co; do echo hello > $f; done
		chmod 6777 w x r t tr o fa re cw co; chmod 2766 g gm' || echo "setup failed"
	echo root >cr && chmod 644 cr
	as 1002 sh -c 'echo data 1<> w'
	st w
	# setgid without group-exec: dropped for a writer outside the group
	# (the VFS rule since Linux 6.2), kept for one inside
	as 1002 sh -c 'echo data >> g'
	st g
	as 1002:1002:1001 sh -c 'echo data >> gm'
	st gm
	# the owner has no CAP_FSETID either; root keeps the bits
	as 1001 sh -c 'echo data >> x'
	st x
	echo data >>r
	st r
	as 1002 truncate -s 1 t
	st t
	truncate -s 1 tr
	st tr
	as 1002 sh -c ': > o'
	st o
	as 1002 fallocate -l 8192 fa
	st fa
	# chown(f, -1, -1) (what `chown :` does): the owner's drops the bits
	# (root's and another user's differ from the plain directory: see
	# docs/architecture.md)
	as 1001 chown : co
	st co
	# found clear by a write, made setuid again, written again
	as 1002 sh -c 'echo a >> re'
	st re
	as 1001 chmod 6777 re
	st re
	as 1002 sh -c 'echo b >> re'
	st re
	# a capability goes with any write, root's too
	setcap cap_net_raw+ep cw && setcap cap_net_raw+ep cr || echo "setcap failed"
	caps cw
	as 1001 sh -c 'echo data >> cw'
	caps cw
	st cw
	echo data >>cr
	caps cr
}
expected() {
	cat <<'EOF'
w 777
g 766
gm 2766
x 777
r 6777
t 777
tr 6777
o 777
fa 777
co 777
re 777
re 6777
re 777
cw caps: cap_net_raw=ep
cw caps: none
cw 777
cr caps: none
EOF
}

mkdir "$HY_TMP/plain" "$HY_TMP/m/t" && chmod 1777 "$HY_TMP/plain" "$HY_TMP/m/t" ||
	hy_die "cannot make the scenario's folders"
(cd "$HY_TMP/plain" && scenario) >"$HY_TMP/plain.out" 2>&1
(cd "$HY_TMP/m/t" && scenario) >"$HY_TMP/mount.out" 2>&1
if ! diff -u "$HY_TMP/plain.out" "$HY_TMP/mount.out" >"$HY_TMP/diff"; then
	hy_fail "the mount differs from the plain directory (- plain, + mount):"
	sed '1,2d; s/^/    /' "$HY_TMP/diff" >&2
fi
# Each expected line in order in both transcripts: a host where both sides
# go wrong alike is noticed too.
for side in plain mount; do
	expected | awk -v f="$HY_TMP/$side.out" '
		BEGIN { while ((getline l < f) > 0) got[++n] = l }
		{ want = $0; while (i < n && got[++i] != want) ; if (got[i] != want) { print want; bad = 1 } }
		END { exit bad }' >"$HY_TMP/$side.missing" ||
		hy_fail "$side: expected, in order, but missing: $(tr '\n' '|' <"$HY_TMP/$side.missing")"
done
[ "$HY_FAILS" = 0 ] || sed 's/^/    mount: /' "$HY_TMP/mount.out" >&2
# the daemon cleared the bits at home, not only in the kernel's copy
for f in w g x t o fa co re cw; do
	[ "$(stat -c %a "$HY_TMP/b/t/$f")" = "$(stat -c %a "$HY_TMP/m/t/$f")" ] ||
		hy_fail "backing $f: mode $(stat -c %a "$HY_TMP/b/t/$f"), the mount shows $(stat -c %a "$HY_TMP/m/t/$f")"
done

HY_PID=$OFF_PID
hy_umount "$HY_TMP/m2"
HY_PID=$MAIN_PID
hy_umount "$HY_TMP/m"

# ---- 3. a user's own mount, through fusermount3 -----------------------------
# (nobody, 65534: fusermount3 wants a user with a name)

if ! user_can_mount; then
	hy_log "no user mount: fusermount3 is not setuid or /dev/fuse is closed to users"
	hy_pass
fi
mkdir -p "$HY_TMP/bin" "$HY_TMP/ub" "$HY_TMP/um" "$HY_TMP/ustate" &&
	cp "$HYBRIDFS" "$HYBRIDCTL" "$HY_TMP/bin/" && chmod 755 "$HY_TMP/bin"/* &&
	chown 65534:65534 "$HY_TMP/ub" "$HY_TMP/um" "$HY_TMP/ustate" || hy_die "cannot set up the user's mount"
as 65534 "$HY_TMP/bin/hybridfs" "$HY_TMP/ub" "$HY_TMP/um" -f -o state="$HY_TMP/ustate" \
	2>>"$HY_TMP/daemon.log" &
HY_PID=$!
HY_PIDS="$HY_PIDS $HY_PID"
HY_MOUNTS="$HY_MOUNTS $HY_TMP/um"
for _ in $(seq 1 600); do
	hy_is_mounted "$HY_TMP/um" && break
	kill -0 "$HY_PID" 2>/dev/null || break
	sleep 0.05
done
hy_is_mounted "$HY_TMP/um" || hy_die "uid 65534 could not mount: $(tail -n 5 "$HY_TMP/daemon.log")"
as 65534 stat "$HY_TMP/um" >/dev/null || hy_fail "uid 65534 cannot stat its mount"
ustatus() {
	as 65534 "$HY_TMP/bin/hybridctl" status "$HY_TMP/um" --json | jq -r ".mounts[0].daemon | $1"
}
[ "$(ustatus .fuse.killpriv_v2)" = true ] ||
	hy_fail "user mount: the daemon did not take FUSE_HANDLE_KILLPRIV_V2: $(ustatus .fuse.killpriv_v2_why)"
as 65534 sh -c ": > '$HY_TMP/um/w100'" || hy_fail "user mount: cannot create a file"
x0=$(ustatus '.fuse.requests.getxattr // 0')
as 65534 dd if=/dev/zero of="$HY_TMP/um/w100" bs=10 count=100 conv=notrunc status=none ||
	hy_fail "user mount: 100 writes failed"
x1=$(ustatus '.fuse.requests.getxattr // 0')
[ $((x1 - x0)) -le 1 ] || hy_fail "user mount: 100 writes cost $((x1 - x0)) GETXATTR requests"
hy_log "user mount: 100 writes, $((x1 - x0)) GETXATTR"
mode=$(as 65534 sh -c "cd '$HY_TMP/um' && echo a > s && chmod 6777 s && echo b >> s && stat -c %a s")
[ "$mode" = 777 ] || hy_fail "user mount: the owner's write left mode $mode"
as 65534 fusermount3 -u "$HY_TMP/um" || hy_fail "uid 65534 cannot unmount its mount"
wait "$HY_PID" || hy_fail "the user's daemon exited with status $?"
hy_pass
