# lib.sh - shared helpers for the integration tests (sourced, not run).
#
# Each test script:
#   . "$(dirname "$0")/lib.sh"
#   hy_setup                     # temp dir in $HY_TMP, cleanup trap
#   hy_mount "$HY_TMP/b" "$HY_TMP/m" [-o OPTIONS]
#   ... checks, calling hy_fail "what went wrong" ...
#   hy_umount "$HY_TMP/m"        # optional: the trap unmounts what is left
#   hy_pass
#
# Exit status follows automake: 0 pass, 1 fail, 77 skip, 99 hard error.
# The trap unmounts every mount this script made (also on failure) and
# kills only the daemons it started, by pid.

set -u

HYBRIDFS=${HYBRIDFS:-$(cd "$(dirname "$0")/../.." && pwd)/hybridfs}
HY_MOUNTS=""
HY_PIDS=""
HY_TMP=""
HY_FAILS=0

hy_log() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }

hy_skip() {
	hy_log "SKIP: $*"
	exit 77
}

# Records a failure and goes on, so one run shows every broken case.
hy_fail() {
	hy_log "FAIL: $*"
	HY_FAILS=$((HY_FAILS + 1))
}

# Stops the script at once (setup that cannot go on).
hy_die() {
	hy_log "ERROR: $*"
	exit 99
}

hy_pass() {
	if [ "$HY_FAILS" -gt 0 ]; then
		hy_log "$HY_FAILS check(s) failed"
		exit 1
	fi
	hy_log "all checks passed"
	exit 0
}

hy_cleanup() {
	local rc=$? mnt pid
	for mnt in $HY_MOUNTS; do
		if hy_is_mounted "$mnt"; then
			fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
		fi
	done
	for pid in $HY_PIDS; do
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	# A failed run shows what the daemons said before their logs go.
	if { [ "$rc" != 0 ] || [ "$HY_FAILS" -gt 0 ]; } && [ -s "$HY_TMP/daemon.log" ]; then
		echo "---- daemon log" >&2
		tail -n 100 "$HY_TMP/daemon.log" >&2
	fi
	if [ -n "$HY_TMP" ] && [ -d "$HY_TMP" ]; then
		chmod -R u+rwX "$HY_TMP" 2>/dev/null
		rm -rf "$HY_TMP"
	fi
	exit "$rc"
}

hy_setup() {
	[ -x "$HYBRIDFS" ] || hy_die "no daemon at $HYBRIDFS (run make first)"
	[ -c /dev/fuse ] || hy_skip "/dev/fuse is missing"
	command -v fusermount3 >/dev/null || hy_skip "fusermount3 is missing (package fuse3)"
	HY_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hybridfs-test.XXXXXX") || hy_die "mktemp failed"
	chmod 755 "$HY_TMP"
	# A registry of the test's own: a root `hybridctl reorganize --all` or
	# `status` run elsewhere on the machine (another test, a user) must
	# never reach this test's mounts, nor this test theirs (issue 16.4).
	export HYBRIDFS_RUNTIME_DIR=$HY_TMP/run
	# The default state folders (a user's and root's) inside the test's
	# own folder: a test never writes into ~/.local/state or /var/lib.
	export XDG_STATE_HOME=$HY_TMP/xdg-state
	export HYBRIDFS_STATE_ROOT=$HY_TMP/var-lib-hybridfs
	# and the faster disk's folder for default stores (/var/tmp): on the
	# test's own disk, where the daemon never chooses it
	export HYBRIDFS_FAST_ROOT=$HY_TMP/var-tmp
	mkdir -p "$HYBRIDFS_FAST_ROOT"
	trap hy_cleanup EXIT
	trap 'exit 130' INT TERM
}

# hy_state_of BACKING: the default state folder of a backing folder (an
# absolute, resolved path): HYBRIDFS_STATE_ROOT (root) or
# $XDG_STATE_HOME/hybridfs, and the path escaped as systemd-escape --path
# does it (POSIX sh: some tests run under dash).
hy_state_of() {
	_hy_name=$(printf '%s' "$1" | sed 's,^/*,,; s,/*$,,' | od -An -v -tu1 | tr -s ' \n' '\n\n' |
		awk 'NF { c = $1 + 0
			if (c == 47) s = s "-"
			else if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) ||
			    c == 58 || c == 95 || (c == 46 && n > 0)) s = s sprintf("%c", c)
			else s = s sprintf("\\x%02x", c)
			n++ }
			END { print (s == "" ? "-" : s) }')
	if [ "$(id -u)" = 0 ]; then
		printf '%s/%s' "$HYBRIDFS_STATE_ROOT" "$_hy_name"
	else
		printf '%s/hybridfs/%s' "$XDG_STATE_HOME" "$_hy_name"
	fi
}

hy_is_mounted() {
	local want
	want=$(cd "$1" 2>/dev/null && pwd -P) || want=$1
	awk -v m="$want" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# hy_mount BACKING MOUNTPOINT [daemon arguments...]
# Starts the daemon in the foreground, in the background, and waits until
# the mount is there (or the daemon has died). Sets HY_PID.
hy_mount() {
	local backing=$1 mnt=$2 i
	shift 2
	mkdir -p "$backing" "$mnt"
	"$HYBRIDFS" "$backing" "$mnt" -f "$@" 2>>"$HY_TMP/daemon.log" &
	HY_PID=$!
	HY_PIDS="$HY_PIDS $HY_PID"
	HY_MOUNTS="$HY_MOUNTS $mnt"
	# Not a timing assumption: the loop ends as soon as the mount shows,
	# and the bound only catches a daemon that hangs.
	for i in $(seq 1 600); do
		hy_is_mounted "$mnt" && return 0
		if ! kill -0 "$HY_PID" 2>/dev/null; then
			cat "$HY_TMP/daemon.log" >&2
			hy_die "daemon exited before mounting $mnt"
		fi
		sleep 0.05
	done
	hy_die "mount of $mnt did not appear in 30 s"
}

# hy_exited PID: true once the process has exited (a zombie counts).
hy_exited() {
	local state
	state=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -z "$state" ] || [ "$state" = Z ]
}

# hy_umount MOUNTPOINT: unmounts and waits for the daemon that served it.
# The wait ends as soon as the daemon does; its bound only turns a daemon
# that never exits into a failure with a message instead of a hung run.
# Who holds @1 open (for a failed unmount's message): processes with a
# descriptor or working folder in it.
hy_mount_users() {
	local mnt=$1 p l
	for p in /proc/[0-9]*; do
		for l in "$p"/cwd "$p"/fd/*; do
			case $(readlink "$l" 2>/dev/null) in
			"$mnt" | "$mnt"/*) echo "${p#/proc/} ($(tr '\0' ' ' <"$p"/cmdline 2>/dev/null)): $l" ;;
			esac
		done
	done 2>/dev/null | sort -u | head -20
}

hy_umount() {
	local mnt=$1 i
	# EBUSY while the last closes of the test's own descriptors are still
	# being released (a loaded machine): asked again a few times, and if it
	# stays busy the holders are named
	for i in 1 2 3 4 5; do
		fusermount3 -u "$mnt" 2>>"$HY_TMP/umount.err" && break
		[ "$i" = 5 ] && {
			cat "$HY_TMP/umount.err" >&2
			hy_log "holders of $mnt: $(hy_mount_users "$mnt")"
			hy_fail "fusermount3 -u $mnt failed"
			return 1
		}
		sleep 1
	done
	if [ -n "${HY_PID:-}" ]; then
		for i in $(seq 1 1200); do
			hy_exited "$HY_PID" && break
			sleep 0.05
		done
		if ! hy_exited "$HY_PID"; then
			hy_fail "the daemon (pid $HY_PID) still runs 60 s after $mnt was unmounted"
			kill "$HY_PID" 2>/dev/null
		fi
		wait "$HY_PID" 2>/dev/null
		HY_DAEMON_STATUS=$?
	fi
	return 0
}

# hy_drop_foreign_mounts: for a test that has just entered a private mount
# namespace (unshare -m). The new namespace holds a copy of every mount
# that existed, other tests' hybridfs mounts included (make check runs
# tests in parallel). Such a copy keeps the other mount's FUSE connection
# alive after that test unmounts it, so its daemon never exits and the test
# waits forever. In a private namespace, unmounting the copies touches
# nothing outside.
hy_drop_foreign_mounts() {
	local mp
	findmnt -rn -t fuse.hybridfs -o TARGET 2>/dev/null | sort -r | while IFS= read -r mp; do
		umount -l "$mp" 2>/dev/null
	done
}

# hy_mount_fails CASE BACKING MOUNTPOINT OPTIONS: starts the daemon in the
# foreground expecting it to refuse: it must exit, failing, and leave no
# mount (some refusals come after the mount shows: the daemon unmounts
# then). Its output goes to $HY_TMP/refused.out. One that still runs at the
# bound has mounted for good; the bound is never reached when the daemon
# refuses.
hy_mount_fails() {
	local what=$1 backing=$2 mnt=$3 pid i
	"$HYBRIDFS" "$backing" "$mnt" -f -o "$4" >"$HY_TMP/refused.out" 2>&1 &
	pid=$!
	HY_PIDS="$HY_PIDS $pid"
	HY_MOUNTS="$HY_MOUNTS $mnt"
	for i in $(seq 1 600); do
		hy_exited "$pid" && break
		sleep 0.05
	done
	if ! hy_exited "$pid"; then
		hy_fail "$what: the mount went ahead"
		fusermount3 -u "$mnt" 2>/dev/null || kill "$pid"
	fi
	wait "$pid"
	[ $? != 0 ] || hy_fail "$what: the daemon exited with status 0"
	hy_forget_pid "$pid"
	! hy_is_mounted "$mnt" || hy_fail "$what: a mount is left"
}

# hy_mount_refused CASE WANT BACKING MOUNTPOINT OPTIONS: hy_mount_fails,
# and the refusal says WANT.
hy_mount_refused() {
	hy_mount_fails "$1" "$3" "$4" "$5"
	grep -qF -- "$2" "$HY_TMP/refused.out" ||
		hy_fail "$1: the refusal does not say \"$2\": $(cat "$HY_TMP/refused.out")"
}

# hy_runtime_for UID: the private runtime folder for daemons and hybridctl
# run as another user (the test's own folder is root's, mode 0700).
hy_runtime_for() {
	local d=$HY_TMP/run-$1
	mkdir -p "$d" && chown "$1" "$d" && chmod 700 "$d" || hy_die "cannot make $d"
	printf '%s' "$d"
}

# hy_need_root: some checks switch users or mount by mount(8).
hy_need_root() {
	[ "$(id -u)" = 0 ] || hy_skip "needs root"
}

# hy_forget_pid PID: a daemon or helper this script has killed and waited
# for; the trap must not signal the pid again (it may be reused).
hy_forget_pid() {
	local p out=""
	for p in $HY_PIDS; do
		[ "$p" = "$1" ] || out="$out $p"
	done
	HY_PIDS=$out
}

# hy_status MOUNTPOINT JQ-FILTER: a field of the mount's status report
# (hybridctl status --json), from .mounts[0].daemon.
hy_status() {
	"${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}" status "$1" --json |
		jq -r ".mounts[0].daemon | $2"
}

# hy_wait_status MOUNTPOINT JQ-CONDITION: polls the status until the
# condition holds. Not a timing assumption: the loop ends as soon as it
# holds, and the bound (120 s) only turns a hang into a failure.
hy_wait_status() {
	local _
	for _ in $(seq 1 2400); do
		"${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}" status "$1" --json 2>/dev/null |
			jq -e ".mounts[0].daemon | $2" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	hy_fail "waited 120 s on $1 for: $2"
	return 1
}

# hy_mount_ready BACKING MOUNTPOINT OPTIONS: hy_mount, then waits for the
# control socket (in the foreground the daemon opens it after the mount
# shows).
hy_mount_ready() {
	hy_mount "$1" "$2" -o "$3"
	hy_wait_status "$2" '.pid != null'
}

# hy_kill9 MOUNTPOINT: kill -9 of the daemon this script started last
# (HY_PID) and a lazy unmount of the dead mount it leaves.
hy_kill9() {
	kill -9 "$HY_PID" 2>/dev/null
	wait "$HY_PID" 2>/dev/null
	hy_forget_pid "$HY_PID"
	fusermount3 -u -z "$1" 2>/dev/null || umount -l "$1" 2>/dev/null
	return 0
}

# hy_need_iogen: HYBRIDCTL and IOGEN (the hy-iogen request generator) set
# and checked, and jq there (status --json is read with it), for the tests
# that drive a mount with hy-iogen and read its status.
hy_need_iogen() {
	HYBRIDCTL=${HYBRIDCTL:-$(cd "$(dirname "$0")/../.." && pwd)/hybridctl}
	HY_TESTBIN=${HY_TESTBIN:-$(cd "$(dirname "$0")" && pwd)}
	IOGEN=$HY_TESTBIN/hy-iogen
	[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"
	[ -x "$IOGEN" ] || hy_die "no hy-iogen at $IOGEN (run make check)"
	command -v jq >/dev/null || hy_skip "jq is missing"
}
