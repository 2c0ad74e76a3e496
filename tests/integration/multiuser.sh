#!/bin/sh
# multiuser.sh - multi-user semantics of an allow_other mount, compared with
# a plain directory.
#
# Every scenario is a shell function that works in its current directory
# and prints a transcript: one line per step (who, what, exit status,
# messages) and one line per node it looks at (owner uid:gid, mode bits,
# type). It runs once in a plain directory ($HY_TMP/plain/NAME) and once
# in the mount ($HY_TMP/m/t/NAME); the two transcripts must be identical,
# and a few lines of each must be what POSIX/Linux says (so that a test
# environment that breaks both sides alike is noticed too).
#
# Other users are taken on with setpriv(1) by numeric ids (no /etc/passwd
# entries are made): uid/gid 1001..1004, groups 2000, 3000, 4000.
# Needs root; skips (77) otherwise.

. "$(dirname "$0")/lib.sh"

hy_need_root
command -v setpriv >/dev/null || hy_skip "setpriv (util-linux) is missing"
hy_setup

# The daemon and the root steps run with the usual umask; the users' steps
# set their own.
umask 022
export LC_ALL=C TZ=UTC

# ---- helpers -------------------------------------------------------------

# as WHO CMD...: runs CMD as WHO, which is "root" or "UID:GID:GROUPS"
# (GROUPS comma-separated supplementary groups, may be empty). The current
# directory is kept; no capabilities are left to the user.
as() {
	local who=$1 u g gs
	shift
	if [ "$who" = root ]; then
		"$@"
		return
	fi
	u=${who%%:*}
	g=${who#*:}
	gs=${g#*:}
	g=${g%%:*}
	if [ -n "$gs" ]; then
		HYBRIDFS_RUNTIME_DIR=$(hy_runtime_for "$u") setpriv --reuid="$u" --regid="$g" --groups="$gs" --inh-caps=-all "$@"
	else
		HYBRIDFS_RUNTIME_DIR=$(hy_runtime_for "$u") setpriv --reuid="$u" --regid="$g" --clear-groups --inh-caps=-all "$@"
	fi
}

# try WHO 'shell command': runs the command as WHO (umask 022 unless the
# command sets another) and prints "WHO$ command => STATUS messages".
# Names are relative, so messages are the same on both sides.
try() {
	local who=$1 cmd=$2 out rc
	out=$(as "$who" sh -c "umask 022; $cmd" 2>&1)
	rc=$?
	printf '%s$ %s => %s %s\n' "$who" "$cmd" "$rc" "$(printf '%s' "$out" | tr '\n' '|')"
}

# st NAME...: "NAME uid:gid octal-mode type" (not following symlinks).
st() {
	stat -c '%n %u:%g %a %F' "$@" 2>&1
}

# run_scenario NAME: runs sc_NAME in $HY_TMP/plain/NAME and in
# $HY_TMP/m/t/NAME, compares the transcripts, and checks that each line of
# exp_NAME (if defined) is in both.
run_scenario() {
	local name=$1 plain mnt line side text
	mkdir "$HY_TMP/plain/$name" || hy_die "mkdir plain/$name"
	mkdir "$HY_TMP/m/t/$name" || { hy_fail "$name: mkdir in the mount failed"; return; }
	plain=$(cd "$HY_TMP/plain/$name" && "sc_$name")
	mnt=$(cd "$HY_TMP/m/t/$name" && "sc_$name")
	printf '%s\n' "$plain" >"$HY_TMP/$name.plain"
	printf '%s\n' "$mnt" >"$HY_TMP/$name.mount"
	if [ "$plain" != "$mnt" ]; then
		hy_fail "$name: the mount differs from the plain directory (- plain, + mount):"
		diff -u "$HY_TMP/$name.plain" "$HY_TMP/$name.mount" | sed '1,2d; s/^/    /' >&2
	fi
	if command -v "exp_$name" >/dev/null; then
		"exp_$name" | while IFS= read -r line; do
			for side in plain mount; do
				grep -qxF -- "$line" "$HY_TMP/$name.$side" ||
					{ hy_log "FAIL: $name ($side): expected line missing: $line"; echo x; }
			done
		done >"$HY_TMP/$name.missing"
		if [ -s "$HY_TMP/$name.missing" ]; then
			hy_fail "$name: $(grep -c x "$HY_TMP/$name.missing") expected line(s) missing"
			hy_log "  $name transcript (mount):"
			sed 's/^/    /' "$HY_TMP/$name.mount" >&2
		fi
	fi
}

U1=1001:1001:
U1G=1001:1001:1001,2000
U1X=1001:1001:1001,3000
U2=1002:1002:
U3=1003:1004:

# ---- (a) new nodes belong to the caller ---------------------------------

sc_create() {
	chmod 1777 .
	try "$U1" ': > f; mkdir d; mkfifo p; ln -s f l; ln f h'
	try "$U1" 'mknod c c 1 3'
	try "$U3" ': > f3; mkdir d3; mkfifo p3; ln -s f3 l3'
	try root ': > fr; mkdir dr'
	st f d p l h f3 d3 p3 l3 fr dr
	# creating over and in nodes of others
	try "$U2" 'mkdir d/x'
	try "$U2" ': > f'
	try "$U2" 'ln -s f3 l3'
}
exp_create() {
	cat <<'EOF'
1001:1001:$ : > f; mkdir d; mkfifo p; ln -s f l; ln f h => 0 
1001:1001:$ mknod c c 1 3 => 1 mknod: c: Operation not permitted
f 1001:1001 644 regular empty file
d 1001:1001 755 directory
p 1001:1001 644 fifo
l 1001:1001 777 symbolic link
h 1001:1001 644 regular empty file
f3 1003:1004 644 regular empty file
d3 1003:1004 755 directory
p3 1003:1004 644 fifo
l3 1003:1004 777 symbolic link
fr 0:0 644 regular empty file
dr 0:0 755 directory
1002:1002:$ mkdir d/x => 1 mkdir: cannot create directory 'd/x': Permission denied
EOF
}

# ---- (b) setgid directory ----------------------------------------------

sc_setgid() {
	chown 0:2000 .
	chmod 2777 .
	st .
	# not a member of 2000
	try "$U1" ': > f1; mkdir d1; mkfifo p1; ln -s f1 l1; mkdir d1/sub; : > d1/g'
	st f1 d1 p1 l1 d1/sub d1/g
	try "$U1" 'chmod 2755 f1'
	try "$U1" 'chmod 2755 d1'
	st f1 d1
	# a member of 2000 (supplementary)
	try "$U1G" ': > f2; mkdir d2; mkdir d2/sub; chmod 2755 f2'
	st f2 d2 d2/sub
	# mkdir with an explicit mode: coreutils mkdir(2)s then chmod(2)s
	try "$U1" 'mkdir -m 0700 d3'
	st d3
	# root, and a user whose primary group is another one
	try root ': > fr; mkdir dr'
	try "$U3" ': > f3; mkdir d4'
	st fr dr f3 d4
}
exp_setgid() {
	cat <<'EOF'
. 0:2000 2777 directory
f1 1001:2000 644 regular empty file
d1 1001:2000 2755 directory
p1 1001:2000 644 fifo
l1 1001:2000 777 symbolic link
d1/sub 1001:2000 2755 directory
d1/g 1001:2000 644 regular empty file
f1 1001:2000 755 regular empty file
f2 1001:2000 2755 regular empty file
d2 1001:2000 2755 directory
d2/sub 1001:2000 2755 directory
fr 0:2000 644 regular empty file
dr 0:2000 2755 directory
f3 1003:2000 644 regular empty file
d4 1003:2000 2755 directory
EOF
}

# ---- (c) permission checks by the kernel --------------------------------

sc_perm() {
	chmod 1777 .
	try "$U1" 'echo secret > secret; chmod 600 secret; mkdir own; chmod 755 own; echo v > victim; mkdir vdir; echo r > ro; chmod 644 ro; echo g > grp; chmod 640 grp; mkdir priv; chmod 700 priv; : > priv/in'
	st secret own victim vdir ro grp priv
	try "$U2" 'cat secret'
	try "$U2" '[ -r secret ] && echo readable || echo not readable'
	try "$U2" 'echo x >> ro'
	try "$U2" 'cat ro'
	try "$U2" ': > own/x'
	try "$U2" 'mkdir own/y'
	try "$U2" 'ls own'
	try "$U2" 'ls priv'
	try "$U2" 'cat priv/in'
	try "$U2" 'rm -f victim'
	try "$U2" 'rmdir vdir'
	try "$U2" 'mv victim stolen'
	try "$U2" 'ln secret hard'
	try "$U2" 'chmod 666 secret'
	try "$U2" 'cat grp'
	try 1002:1002:1001 'cat grp'
	try "$U1" 'cat secret'
	try root 'cat secret; : > own/x; ls own; cat priv/in; rm victim; rmdir vdir'
	st victim vdir own/x
	try "$U1" 'rm -f own/x'
	try "$U1" 'rm -f secret ro grp'
	st secret
}
exp_perm() {
	cat <<'EOF'
secret 1001:1001 600 regular file
1002:1002:$ cat secret => 1 cat: secret: Permission denied
1002:1002:$ [ -r secret ] && echo readable || echo not readable => 0 not readable
1002:1002:$ : > own/x => 2 sh: 1: cannot create own/x: Permission denied
1002:1002:$ rm -f victim => 1 rm: cannot remove 'victim': Operation not permitted
1002:1002:$ rmdir vdir => 1 rmdir: failed to remove 'vdir': Operation not permitted
1002:1002:$ chmod 666 secret => 1 chmod: changing permissions of 'secret': Operation not permitted
1002:1002:$ cat grp => 1 cat: grp: Permission denied
1002:1002:1001$ cat grp => 0 g
root$ cat secret; : > own/x; ls own; cat priv/in; rm victim; rmdir vdir => 0 secret|x
own/x 0:0 644 regular empty file
1001:1001:$ rm -f own/x => 0 
EOF
}

# ---- (d) chown and chgrp ------------------------------------------------

sc_chown() {
	chmod 1777 .
	try "$U1X" ': > f; : > s; chmod 6755 s; : > k; chmod 6755 k; mkdir d; chmod 2755 d'
	try "$U1X" 'chgrp 3000 f'
	st f
	try "$U1X" 'chgrp 4000 f'
	try "$U1X" 'chown 1002 f'
	try "$U1X" 'chown 1001:1001 f'
	try "$U1X" 'chown 1001 f'
	st f
	# chgrp of a setuid/setgid file by its owner clears both bits
	try "$U1X" 'chgrp 3000 s'
	try "$U1X" 'chgrp 3000 d'
	st s d
	# chown of others' files
	try "$U2" 'chgrp 1002 f'
	try root 'chown 1002:4000 f'
	try root 'chown 1003 k'
	try root 'chown -h 1004:1004 .'
	st f k .
}
exp_chown() {
	cat <<'EOF'
f 1001:3000 644 regular empty file
1001:1001:1001,3000$ chgrp 4000 f => 1 chgrp: changing group of 'f': Operation not permitted
1001:1001:1001,3000$ chown 1002 f => 1 chown: changing ownership of 'f': Operation not permitted
s 1001:3000 755 regular empty file
d 1001:3000 2755 directory
1002:1002:$ chgrp 1002 f => 1 chgrp: changing group of 'f': Operation not permitted
f 1002:4000 644 regular empty file
k 1003:1001 755 regular empty file
. 1004:1004 1777 directory
EOF
}

# ---- (e) setuid/setgid cleared by writes --------------------------------

sc_killpriv() {
	chmod 1777 .
	try "$U1" 'for f in w a t o n c r x rt; do : > $f; chmod 6777 $f; done; for f in m g mt; do : > $f; chmod 6766 $f; done'
	st w a t o n c g mt r x rt
	try "$U2" 'echo data 1<> w'
	try "$U2" 'echo data >> a'
	try "$U2" 'truncate -s 0 t'
	try "$U2" 'truncate -s 100 o'
	try "$U2" ': > n'
	try "$U2" 'echo data > c'
	# setgid without group-exec: cleared unless the writer is in the group
	# (the writer outside the group, file m, is checked apart below: the
	# FUSE kernel module still applies the rule from before Linux 6.2)
	try 1002:1002:1001 'echo data >> g'
	try "$U2" ': > mt'
	# the owner has no CAP_FSETID either; root keeps the bits
	try "$U1" 'echo data >> x'
	try root 'echo data >> r'
	try root ': > rt'
	st w a t o n c g mt r x rt
}
exp_killpriv() {
	cat <<'EOF'
w 1001:1001 6777 regular empty file
w 1001:1001 777 regular file
a 1001:1001 777 regular file
t 1001:1001 777 regular empty file
o 1001:1001 777 regular file
n 1001:1001 777 regular empty file
c 1001:1001 777 regular file
g 1001:1001 2766 regular file
mt 1001:1001 766 regular empty file
r 1001:1001 6777 regular file
x 1001:1001 777 regular file
rt 1001:1001 6777 regular empty file
EOF
}

# ---- (f) the caller's umask --------------------------------------------

sc_umask() {
	chmod 1777 .
	try "$U1" 'umask 027; : > f027; mkdir d027; mkfifo p027'
	try "$U1" 'umask 077; : > f077; mkdir d077'
	try "$U1" 'umask 002; : > f002; mkdir d002; mkfifo p002'
	try "$U1" 'umask 000; : > f000; mkdir d000; mkfifo p000'
	try root 'umask 000; : > fr000; mkdir dr000'
	try root 'umask 007; : > fr007; mkdir dr007'
	st f027 d027 p027 f077 d077 f002 d002 p002 f000 d000 p000 fr000 dr000 fr007 dr007
}
exp_umask() {
	cat <<'EOF'
f027 1001:1001 640 regular empty file
d027 1001:1001 750 directory
p027 1001:1001 640 fifo
f077 1001:1001 600 regular empty file
d077 1001:1001 700 directory
f002 1001:1001 664 regular empty file
d002 1001:1001 775 directory
p002 1001:1001 664 fifo
f000 1001:1001 666 regular empty file
d000 1001:1001 777 directory
p000 1001:1001 666 fifo
fr000 0:0 666 regular empty file
dr000 0:0 777 directory
fr007 0:0 660 regular empty file
dr007 0:0 770 directory
EOF
}

# ---- (h) explicit times need ownership, "now" needs write access ----------

sc_utimes() {
	chmod 1777 .
	try "$U2" ': > w; chmod 666 w; : > r; chmod 644 r'
	try "$U1" ': > mine'
	try "$U1" "touch -d '2001-01-01 00:00:00' w"
	try "$U1" "touch -m -d '2001-01-01 00:00:00' w"
	try "$U1" 'touch w'
	try "$U1" "touch -c -d '2001-01-01 00:00:00' w"
	try "$U1" 'touch -c w'
	try "$U1" "touch -c -d '2001-01-01 00:00:00' r"
	try "$U1" 'touch -c r'
	try "$U1" 'touch r'
	try "$U1" "touch -d '2001-01-01 00:00:00' mine"
	try root "touch -d '2002-02-02 00:00:00' r"
	stat -c '%n %Y' mine r
	# "now" really moved w's mtime away from the epoch it got
	try root "touch -d '1999-01-01 00:00:00' w"
	try "$U1" 'touch w'
	if [ "$(stat -c %Y w)" -gt 915148800 ]; then echo "w: touched"; else echo "w: not touched"; fi
}
exp_utimes() {
	cat <<'EOF'
1001:1001:$ touch -d '2001-01-01 00:00:00' w => 1 touch: setting times of 'w': Operation not permitted
1001:1001:$ touch -m -d '2001-01-01 00:00:00' w => 1 touch: setting times of 'w': Operation not permitted
1001:1001:$ touch w => 0 
1001:1001:$ touch -c -d '2001-01-01 00:00:00' w => 1 touch: setting times of 'w': Operation not permitted
1001:1001:$ touch -c w => 0 
1001:1001:$ touch -c -d '2001-01-01 00:00:00' r => 1 touch: setting times of 'r': Operation not permitted
1001:1001:$ touch -c r => 1 touch: setting times of 'r': Permission denied
1001:1001:$ touch r => 1 touch: cannot touch 'r': Permission denied
1001:1001:$ touch -d '2001-01-01 00:00:00' mine => 0 
mine 978307200
r 1012608000
w: touched
EOF
}

# ---- run ----------------------------------------------------------------

mkdir "$HY_TMP/plain" && chmod 1777 "$HY_TMP/plain" || hy_die "cannot make the plain directory"
hy_mount "$HY_TMP/b" "$HY_TMP/m" -o allow_other
MAIN_PID=$HY_PID
mkdir "$HY_TMP/m/t" && chmod 1777 "$HY_TMP/m/t" || hy_die "cannot mkdir in the mount"

# The users can reach both places (the test directory is 755).
for d in "$HY_TMP/plain" "$HY_TMP/m/t"; do
	as "$U1" test -w "$d" || hy_die "uid 1001 cannot write to $d"
done

for s in create setgid perm chown killpriv umask utimes; do
	run_scenario "$s"
done

# A write by a user outside the file's group to a setgid file without
# group-exec. Since Linux 6.2 the VFS drops setgid there
# (setattr_should_drop_sgid). With FUSE_HANDLE_KILLPRIV_V2 (the default,
# fs/fuse_channel.c) the daemon drops the bits itself, by that rule; where
# the kernel does not offer it, the FUSE module computes them with the
# older rule and keeps setgid, a known difference. Setuid must go anyway.
for side in "$HY_TMP/plain/killpriv" "$HY_TMP/m/t/killpriv"; do
	(cd "$side" && as "$U1" sh -c ': > m2766; chmod 6766 m2766' &&
		as "$U2" sh -c 'echo data >> m2766') || hy_fail "setgid write setup in $side"
done
plain_mode=$(stat -c %a "$HY_TMP/plain/killpriv/m2766")
mount_mode=$(stat -c %a "$HY_TMP/m/t/killpriv/m2766")
killpriv_v2=$("${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}" status "$HY_TMP/m" --json |
	sed -n 's/.*"killpriv_v2": *\(true\|false\).*/\1/p')
[ "$plain_mode" = 766 ] || [ "$plain_mode" = 2766 ] || hy_fail "plain setgid write: mode $plain_mode"
case $killpriv_v2:$mount_mode in
true:"$plain_mode") ;;
true:*) hy_fail "setgid write by a non-member on the mount: mode $mount_mode, plain $plain_mode" ;;
false:766) ;;
false:2766) hy_log "known kernel difference: setgid kept on the mount ($mount_mode), plain $plain_mode" ;;
*) hy_fail "setgid write by a non-member on the mount: mode $mount_mode (setuid must be cleared; killpriv_v2 \"$killpriv_v2\")" ;;
esac

# What the mount did reached the backing directory as it shows.
if [ "$(st "$HY_TMP/b/t/create/f" | cut -d' ' -f2-)" != "1001:1001 644 regular empty file" ]; then
	hy_fail "backing file b/t/create/f: $(st "$HY_TMP/b/t/create/f")"
fi

# ---- (g) without allow_other, other users are refused ------------------

hy_mount "$HY_TMP/b2" "$HY_TMP/m2"
mkdir "$HY_TMP/m2/d" && chmod 777 "$HY_TMP/m2/d" && echo hello >"$HY_TMP/m2/f" &&
	chmod 644 "$HY_TMP/m2/f" || hy_fail "root cannot use its own mount m2"
cd "$HY_TMP" || hy_die "cd $HY_TMP"
for cmd in 'ls m2' 'cat m2/f' ': > m2/d/x' 'stat -c %u m2/f' 'stat -c %u m2' 'ls -d m2/.'; do
	line=$(try "$U1" "$cmd")
	case $line in
	*" => 0 "*) hy_fail "without allow_other uid 1001 got in: $line" ;;
	*"Permission denied"*) ;;
	*) hy_fail "without allow_other, not refused with EACCES: $line" ;;
	esac
done
# the same steps work on a plain directory, so it is the mount refusing
mkdir -p "$HY_TMP/p2/d" && chmod 777 "$HY_TMP/p2/d" && echo hello >"$HY_TMP/p2/f"
for cmd in 'ls p2' 'cat p2/f' ': > p2/d/x' 'stat -c %u p2/f' 'stat -c %u p2' 'ls -d p2/.'; do
	line=$(try "$U1" "$cmd")
	case $line in
	*" => 0 "*) ;;
	*) hy_fail "plain directory: $line" ;;
	esac
done
[ "$(cat "$HY_TMP/m2/f" 2>&1)" = hello ] || hy_fail "root cannot read m2/f"
[ -e "$HY_TMP/b2/d/x" ] && hy_fail "uid 1001 created b2/d/x through a mount without allow_other"
cd / || hy_die "cd /"
hy_umount "$HY_TMP/m2"

HY_PID=$MAIN_PID
hy_umount "$HY_TMP/m"
[ "${HY_DAEMON_STATUS:-0}" = 0 ] || hy_fail "the allow_other daemon exited with status $HY_DAEMON_STATUS"
hy_pass
