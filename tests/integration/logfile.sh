#!/bin/bash
# logfile.sh - where a daemon's messages go (issue 21, item 5).
#
#   a. log=FILE, a daemon in the background: timestamped lines with the
#      daemon's pid and level; logrotate's default (the file renamed) and
#      a removed file: the next line makes the file again
#   b. logrotate's copytruncate: written on from the new end (O_APPEND),
#      no hole of zeros
#   c. no syslog to take the lines (HYBRIDFS_SYSLOG_SOCKET names a socket
#      that is not there, as a machine without /dev/log is): the mount says
#      so, and the lines go to the state folder's hybridfs.log, not nowhere
#   d. log=FILE in the foreground: the file and stderr
#   e. refusals: a file inside the mountpoint, a symbolic link, a folder,
#      no file at all
# Each check fails without log= and the fallback (an unknown option, or
# lines lost).
. "$(dirname "$0")/lib.sh"

hy_setup
command -v jq >/dev/null || hy_skip "jq is missing"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
STAMP='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{4}'

# bg_mount NAME OPTIONS: a daemon started as mount(8) starts one, in the
# background; it returns once the mount is ready. BG_PID: its pid (the
# daemon's, not the parent's that returned); what it said before it let go
# of its stderr: $HY_TMP/NAME.err.
bg_mount() {
	local name=$1 b=$HY_TMP/$1/b m=$HY_TMP/$1/m
	mkdir -p "$b" "$m"
	HY_MOUNTS="$HY_MOUNTS $m"
	BG_PID=
	if ! "$HYBRIDFS" "$b" "$m" -o "state=$HY_TMP/$name/s${2:+,$2}" 2>"$HY_TMP/$name.err"; then
		hy_fail "$name: the mount failed: $(cat "$HY_TMP/$name.err")"
		return 1
	fi
	BG_PID=$("$HYBRIDCTL" status "$m" --json | jq -r '.mounts[0].daemon.pid')
	case $BG_PID in
	'' | *[!0-9]*) hy_die "$name: no daemon pid in the status of $m" ;;
	esac
	HY_PIDS="$HY_PIDS $BG_PID"
}

# bg_umount NAME: unmounts and waits for the daemon (bounded: only a hang
# reaches the bound).
bg_umount() {
	local m=$HY_TMP/$1/m i
	fusermount3 -u "$m" || hy_fail "$1: fusermount3 -u $m failed"
	for i in $(seq 1 1200); do
		hy_exited "$BG_PID" && break
		sleep 0.05
	done
	hy_exited "$BG_PID" || hy_fail "$1: the daemon (pid $BG_PID) still runs after the unmount"
	hy_forget_pid "$BG_PID"
}

# ---- a. log=FILE, renamed and removed ----------------------------------
log=$HY_TMP/a.log
if bg_mount a "log=$log"; then
	grep -qE "^$STAMP hybridfs\[$BG_PID\]: notice: mounted \"$HY_TMP/a/b\" on \"$HY_TMP/a/m\"" "$log" ||
		hy_fail "a: no timestamped \"mounted\" line of pid $BG_PID in $log: $(cat "$log" 2>&1)"
	mv "$log" "$log.1"
	# a line after the rotation: a flush's, or the unmount's
	bg_umount a
	grep -qE "^$STAMP hybridfs\[$BG_PID\]: notice: unmounting \"$HY_TMP/a/m\"" "$log" 2>/dev/null ||
		hy_fail "a: the line after the rotation is not in a new $log: $(cat "$log" 2>&1)"
	grep -q 'unmounting' "$log.1" && hy_fail "a: the line after the rotation went to the renamed file"
fi
rm -f "$log"
if bg_mount a "log=$log"; then
	rm -f "$log"
	bg_umount a
	grep -q 'notice: unmounting' "$log" 2>/dev/null ||
		hy_fail "a: a removed log file was not made again for the next line"
fi

# ---- b. copytruncate -----------------------------------------------------
log=$HY_TMP/b.log
if bg_mount b "log=$log"; then
	cp "$log" "$log.1"
	: >"$log"
	bg_umount b
	[ "$(tr -d '\000' <"$log" | wc -c)" = "$(wc -c <"$log")" ] ||
		hy_fail "b: zeros in the truncated log: the daemon wrote at its old offset"
	grep -qE "^$STAMP hybridfs\[[0-9]+\]: notice: unmounting" "$log" ||
		hy_fail "b: the unmount's line is not at the start of the truncated log: $(od -c "$log" | head -3)"
fi

# ---- c. no syslog: the state folder's hybridfs.log ---------------------
# a socket path where nothing listens: the daemon's probe and its sends
# fail as they do on a machine without /dev/log
if HYBRIDFS_SYSLOG_SOCKET=$HY_TMP/no-syslog bg_mount c ""; then
	grep -q "no syslog here (\"$HY_TMP/no-syslog\": .*\"$HY_TMP/c/s/hybridfs.log\"" "$HY_TMP/c.err" ||
		hy_fail "c: the mount does not say where its messages go: $(cat "$HY_TMP/c.err")"
	bg_umount c
	f=$HY_TMP/c/s/hybridfs.log
	if [ ! -f "$f" ]; then
		hy_fail "c: no $f: the daemon's lines were lost"
	else
		grep -qE "^$STAMP hybridfs\[[0-9]+\]: notice: syslog: \"$HY_TMP/no-syslog\": " "$f" ||
			hy_fail "c: $f does not say why its lines are there: $(cat "$f")"
		grep -q 'notice: mounted' "$f" && grep -q 'notice: unmounting' "$f" ||
			hy_fail "c: the mount's lines are not in $f: $(cat "$f")"
		[ "$(stat -c %a "$f")" = 600 ] || hy_fail "c: $f has mode $(stat -c %a "$f"), not 600"
	fi
fi

# ---- d. the foreground: the file and stderr ------------------------------
log=$HY_TMP/d.log
: >"$HY_TMP/daemon.log"
hy_mount_ready "$HY_TMP/d/b" "$HY_TMP/d/m" "state=$HY_TMP/d/s,log=$log"
hy_umount "$HY_TMP/d/m"
grep -q 'notice: mounted' "$log" || hy_fail "d: no \"mounted\" line in $log"
grep -q '^hybridfs: mounted' "$HY_TMP/daemon.log" || hy_fail "d: no \"mounted\" line on stderr"

# ---- e. refusals -----------------------------------------------------------
mkdir -p "$HY_TMP/e/b" "$HY_TMP/e/m"
hy_mount_refused inside "inside the mountpoint" "$HY_TMP/e/b" "$HY_TMP/e/m" \
	"state=$HY_TMP/e/s,log=$HY_TMP/e/m/x.log"
ln -s "$HY_TMP/e/target.log" "$HY_TMP/e/link.log"
hy_mount_refused symlink "log file \"$HY_TMP/e/link.log\" is a symbolic link" "$HY_TMP/e/b" \
	"$HY_TMP/e/m" "state=$HY_TMP/e/s,log=$HY_TMP/e/link.log"
[ -e "$HY_TMP/e/target.log" ] && hy_fail "symlink: the link was followed"
hy_mount_refused folder "log file \"$HY_TMP/e\": Is a directory" "$HY_TMP/e/b" "$HY_TMP/e/m" \
	"state=$HY_TMP/e/s,log=$HY_TMP/e"
hy_mount_refused empty 'option "log" needs a file' "$HY_TMP/e/b" "$HY_TMP/e/m" "state=$HY_TMP/e/s,log="

hy_pass
