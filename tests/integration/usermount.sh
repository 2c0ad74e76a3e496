#!/usr/bin/env bash
# An ordinary user's own mount (no allow_other): the kernel lets only that
# user in and does no permission checks of its own (no default_permissions),
# so the daemon, running as that user, leaves them to the backing
# filesystem. Every denial must still be the plain directory's; and the
# same with open=kernel, where the kernel opens files without asking the
# daemon and so checks permissions itself (default_permissions, which the
# option turns on for a user's mount): an open of a mode-000 file that
# reads nothing is refused at the open.
#
# The user mounts through the setuid fusermount3, which needs /dev/fuse
# open to all as on a normal Debian system. Where it is not (a VM without
# udev), the test runs in a private mount namespace with its own 0666 node
# for the same device bound over /dev/fuse, so nothing outside changes.
. "$(dirname "$0")/lib.sh"
hy_need_root
command -v setpriv >/dev/null || hy_skip "setpriv is missing (package util-linux)"
[ -u "$(command -v fusermount3)" ] || hy_skip "fusermount3 is not setuid root"



as_user() {
	HYBRIDFS_RUNTIME_DIR=$(hy_runtime_for 65534) setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"
}

if [ -z "${HY_USERMOUNT_NS:-}" ] && ! as_user test -r /dev/fuse -a -w /dev/fuse; then
	command -v unshare >/dev/null || hy_skip "/dev/fuse is not open to users and unshare is missing"
	exec env HY_USERMOUNT_NS=1 unshare -m --propagation private "$0" "$@"
fi

[ -n "${HY_USERMOUNT_NS:-}" ] && hy_drop_foreign_mounts
hy_setup
if [ -n "${HY_USERMOUNT_NS:-}" ]; then
	mknod -m 666 "$HY_TMP/fuse" c 10 229 && mount --bind "$HY_TMP/fuse" /dev/fuse ||
		hy_skip "cannot give the private namespace a usable /dev/fuse"
fi

# try CMD: runs CMD as nobody (uid 65534), prints "CMD => STATUS MESSAGES".
try() {
	local out rc
	out=$(as_user sh -c "$1" 2>&1)
	rc=$?
	printf '%s => %s %s\n' "$1" "$rc" "$(printf '%s' "$out" | tr '\n' '|')"
}

user_tree() {
	mkdir -p "$1/sticky" "$1/ro_dir" &&
		chmod 1777 "$1/sticky" &&
		echo secret >"$1/rootonly" && chmod 600 "$1/rootonly" &&
		echo root >"$1/sticky/rootfile" && chmod 644 "$1/sticky/rootfile" &&
		echo mine >"$1/nope" && chown 65534:65534 "$1/nope" && chmod 000 "$1/nope" &&
		echo ro >"$1/readonly" && chown 65534:65534 "$1/readonly" && chmod 444 "$1/readonly" &&
		chown 65534:65534 "$1/ro_dir" "$1" && chmod 555 "$1/ro_dir" && chmod 755 "$1"
}

# The same steps, relative to DIR, on both sides.
user_steps() {
	local d=$1 cmd
	for cmd in 'cat nope' ': < nope' 'echo x > readonly' 'cat rootonly' 'echo x >> rootonly' \
		'rm sticky/rootfile' 'mv sticky/rootfile sticky/moved' 'touch ro_dir/x' \
		'mkdir ro_dir/d' 'chmod 777 rootonly' 'chgrp 65534 rootonly' \
		'touch -c -d 2001-01-01 rootonly' 'ls ro_dir' 'echo ok > sticky/mine' \
		'cat sticky/mine' 'rm sticky/mine' 'chmod 600 nope' 'cat nope' 'test -r rootonly' \
		'test -w readonly' 'test -x readonly' 'ln rootonly hard' 'mkdir own && rmdir own'; do
		try "cd '$d' && $cmd"
	done
}

mkdir -p "$HY_TMP/plain" "$HY_TMP/b" "$HY_TMP/m" &&
	chown 65534:65534 "$HY_TMP/m" &&
	user_tree "$HY_TMP/plain" && user_tree "$HY_TMP/b" || hy_die "cannot set up the trees"
# (the steps' hard link needs the kernel's protected_hardlinks off or
# ownership: both sides see the same rule)

# round NAME [OPTS]: the user's mount (with OPTS), its steps compared with
# the plain directory's
round() {
	local status
	mkdir -p "$HY_TMP/state-$1" && chown 65534:65534 "$HY_TMP/state-$1" ||
		hy_die "cannot make the state folder $HY_TMP/state-$1"
	as_user "$HYBRIDFS" "$HY_TMP/b" "$HY_TMP/m" -f -o "state=$HY_TMP/state-$1${2:+,$2}" \
		2>>"$HY_TMP/daemon.log" &
	HY_PID=$!
	HY_PIDS="$HY_PIDS $HY_PID"
	HY_MOUNTS="$HY_MOUNTS $HY_TMP/m"
	for _ in $(seq 1 600); do
		hy_is_mounted "$HY_TMP/m" && break
		kill -0 "$HY_PID" 2>/dev/null || break
		sleep 0.05
	done
	hy_is_mounted "$HY_TMP/m" || hy_die "nobody (uid 65534) could not mount hybridfs ($1): $(tail -n 5 "$HY_TMP/daemon.log")"
	if [ "${2:-}" = open=kernel ] && command -v jq >/dev/null; then
		local ctl=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl} who=""
		# until the daemon's control socket answers (a hang is caught)
		for _ in $(seq 1 600); do
			who=$(as_user "$ctl" status "$HY_TMP/m" --json 2>/dev/null |
				jq -r '.mounts[0].daemon.kernel_cache.open // empty')
			[ -n "$who" ] && break
			sleep 0.05
		done
		[ "$who" = kernel ] || hy_fail "open=kernel on a user's mount: the kernel does not open files (${who:-no status})"
	fi

	user_steps "$HY_TMP/m" | sed "s|$HY_TMP/m|DIR|" >"$HY_TMP/mount.out"
	if ! diff -u "$HY_TMP/plain.out" "$HY_TMP/mount.out" >"$HY_TMP/diff"; then
		hy_fail "permission checks differ ($1; - plain, + mount):"
		cat "$HY_TMP/diff" >&2
	fi
	# the comparison is only worth something if there were refusals to compare
	grep -q "^cd .* && cat nope => 1 .*Permission denied" "$HY_TMP/mount.out" ||
		hy_fail "reading a mode-000 file was not refused ($1)"
	grep -q "^cd .* && : < nope => 2 .*Permission denied" "$HY_TMP/mount.out" ||
		hy_fail "opening a mode-000 file was not refused ($1)"
	grep -q "rm sticky/rootfile => 1 .*Operation not permitted" "$HY_TMP/mount.out" ||
		hy_fail "the sticky bit did not protect root's file ($1)"
	grep -q "touch ro_dir/x => 1 .*Permission denied" "$HY_TMP/mount.out" ||
		hy_fail "creating in a read-only directory was not refused ($1)"

	# a user's pipes are limited to pipe-max-size: reads are still
	# spliced, as large as those pipes carry (splice.sh has root's)
	if [ "$1" = default ] && command -v jq >/dev/null; then
		local ctl=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl} spliced
		head -c 2097152 /dev/urandom >"$HY_TMP/b/big" && chown 65534:65534 "$HY_TMP/b/big" ||
			hy_die "cannot make the big file"
		as_user cat "$HY_TMP/m/big" | cmp -s - "$HY_TMP/b/big" ||
			hy_fail "a file read through a user's mount is not its bytes"
		spliced=$(as_user "$ctl" status "$HY_TMP/m" --json |
			jq -r '.mounts[0].daemon.fuse | "\(.splice) \(.spliced_reads) \(.splice_why)"')
		case $spliced in
		"true "[1-9]*) ;;
		*) hy_fail "a user's mount did not splice its reads: $spliced" ;;
		esac
	fi

	# root is not the mounting user: FUSE refuses it without allow_other
	if ls "$HY_TMP/m" >/dev/null 2>&1; then
		hy_fail "root got into a user's mount without allow_other ($1)"
	fi

	as_user fusermount3 -u "$HY_TMP/m" || hy_fail "nobody (uid 65534) cannot unmount its own mount"
	wait "$HY_PID"
	status=$?
	hy_forget_pid "$HY_PID"
	[ "$status" = 0 ] || hy_fail "the user's daemon exited with status $status ($1)"
	# the steps change the backing tree: back as it was for the next round
	rm -rf "$HY_TMP/b"
	mkdir -p "$HY_TMP/b" && user_tree "$HY_TMP/b" || hy_die "cannot set up the backing tree again"
}

user_steps "$HY_TMP/plain" | sed "s|$HY_TMP/plain|DIR|" >"$HY_TMP/plain.out"
round default
round open-kernel open=kernel
hy_pass
