#!/bin/bash
# top.sh - `hybridctl top` (issue 21, item 3). On a terminal (a detached
# tmux session of a known size): the alternate screen, the header with the
# sort, a table whose columns fit the window and fit again after the window
# is made narrower (whole column names, no line past the width), the sort
# keys, and on 'q' (and SIGTERM) the shell's screen and terminal modes back
# with the right exit status. In batch mode: a process that exited is gone
# from the samples after the one interval it may still show in, while an
# idle one that runs stays listed.
#
# No sleeps that wait for something: every wait polls the pane or the batch
# output for what must come, and its bound only turns a hang into a failure.
. "$(dirname "$0")/lib.sh"

hy_need_iogen
command -v tmux >/dev/null || hy_skip "tmux is missing (package tmux)"

hy_setup

B=$HY_TMP/backing M=$HY_TMP/mnt
hy_mount_ready "$B" "$M" "state=$HY_TMP/state"

# Two processes that did I/O on the mount and stay, each until a byte comes
# down its fifo: top-zz started first, so that the pid order and the name
# order differ (unless pids wrapped in between: the checks use the real pids)
mkfifo "$HY_TMP/hold-zz" "$HY_TMP/hold-aa" || hy_die "mkfifo failed"
"$IOGEN" top-zz "$M/zz" w:0:65536 wait:"$HY_TMP/hold-zz" &
ZZ=$!
HY_PIDS="$HY_PIDS $ZZ"
"$IOGEN" top-aa "$M/aa" w:0:262144 r:0:65536 wait:"$HY_TMP/hold-aa" &
AA=$!
HY_PIDS="$HY_PIDS $AA"
hy_wait_status "$M" "([.processes[] | select(.pid == $ZZ and .bytes_written >= 65536)] | length) == 1 and
	([.processes[] | select(.pid == $AA and .bytes_read >= 65536)] | length) == 1" ||
	hy_die "the daemon does not list the two processes"

# release NAME PID: lets a holder end and waits for it (its exit status 0)
release() {
	timeout 60 sh -c "echo x >'$HY_TMP/hold-$1'" || hy_fail "$1 did not take its byte"
	wait "$2" || hy_fail "$1 (pid $2) failed"
	hy_forget_pid "$2"
}

# ---- on a terminal ---------------------------------------------------------
SOCK=$HY_TMP/tmux.sock
unset TMUX # a run from inside another tmux: this server is the test's own
tm() { tmux -S "$SOCK" -f /dev/null "$@"; }
tm new-session -d -s top -x 120 -y 30 "bash --norc --noprofile" \; set -g status off ||
	hy_die "tmux could not start a session"
TMUX_PID=$(tm display-message -p '#{pid}') || hy_die "tmux does not say its pid"
HY_PIDS="$HY_PIDS $TMUX_PID"
SHELL_PID=$(tm display-message -p -t top '#{pane_pid}')

pane() { tm capture-pane -p -J -t top; }
# ... and with its history: the shell's screen, given back, may have
# scrolled its first lines off (the command line wraps at 50 columns, and
# the longer the build's path the more lines it takes)
pane_all() { tm capture-pane -p -J -S - -t top; }

# wait_pane WHAT CHECK [ARGS...]: polls the pane until CHECK (reading it on
# stdin) holds. The bound (60 s) is never reached when top works.
wait_pane() {
	local what=$1 i
	shift
	for i in $(seq 1 600); do
		pane >"$HY_TMP/pane" 2>/dev/null && "$@" <"$HY_TMP/pane" && return 0
		sleep 0.1
	done
	hy_fail "$what; the pane shows:"
	cat "$HY_TMP/pane" >&2
	return 1
}

# table WIDTH SORT ALL: the title first with "sorted by SORT", a table
# header of whole column names (all of them with ALL=all, else some left
# out), rows for both holders, and no line longer than WIDTH (-J joins a
# line that ran past the edge onto the next).
table() {
	awk -v w="$1" -v sort="$2" -v all="$3" -v zz="$ZZ" -v aa="$AA" '
		BEGIN {
			n = split("PID NAME READ/s WRITE/s CATEGORY CLASS MIX WRITE LINE EVICT META", t, " ")
			for (i = 1; i <= n; i++)
				known[t[i]] = 1
		}
		length($0) > w { long++ }
		NR == 1 && index($0, "hybridctl top - ") == 1 && index($0, "sorted by " sort " ") { title = 1 }
		$1 == "PID" && $2 == "NAME" && !header {
			header = 1
			for (i = 1; i <= NF; i++)
				if (!($i in known))
					bad++
			words = NF
			next
		}
		header && $1 == zz { z = 1 }
		header && $1 == aa { a = 1 }
		END {
			whole = all == "all" ? words == n : words < n
			exit !(title && header && !bad && !long && z && a && whole)
		}'
}

# order FIRST SECOND: the row of pid FIRST above the row of pid SECOND
order() {
	awk -v first="$1" -v second="$2" '
		$1 == "PID" && $2 == "NAME" { header = 1; next }
		header && $1 == first && !s { f = NR }
		header && $1 == second { s = NR }
		END { exit !(f && s && f < s) }'
}

has() { grep -q -- "$1"; }
has_line() { grep -qx -- "$1"; }

# the shell's screen: what top must give back when it ends
tm send-keys -t top -l 'echo SHELL-$((6 * 7))' && tm send-keys -t top Enter
wait_pane "the shell in tmux does not answer" has_line SHELL-42

tm send-keys -t top -l "\"$HYBRIDCTL\" top \"$M\" -d 1; echo top-rc=\$?" && tm send-keys -t top Enter
wait_pane "top at 120 columns: no title sorted by total, or not the whole table" table 120 total all
pane | has_line SHELL-42 && hy_fail "the shell's lines are still on the screen: not the alternate screen"

tm resize-window -t top -x 50 -y 20 || hy_fail "tmux resize-window failed"
wait_pane "top at 50 columns: the table does not fit in whole columns" table 50 total some

if [ "$ZZ" -lt "$AA" ]; then by_pid="$ZZ $AA"; else by_pid="$AA $ZZ"; fi
tm send-keys -t top p
wait_pane "p: not sorted by pid" table 50 pid some
wait_pane "p: the rows are not in pid order" order $by_pid
tm send-keys -t top c
wait_pane "c: not sorted by command" table 50 command some
wait_pane "c: top-aa is not above top-zz" order "$AA" "$ZZ"
tm send-keys -t top r
wait_pane "r: not sorted by reads" table 50 reads some
tm send-keys -t top w
wait_pane "w: not sorted by writes" table 50 writes some

tm send-keys -t top q
wait_pane "q: top did not end" grep -q '^top-rc='
pane | has_line top-rc=0 || hy_fail "q: top's exit status is not 0: $(pane | grep '^top-rc=')"
pane_all | has_line SHELL-42 || hy_fail "q: the shell's screen did not come back"
pane | has "sorted by" && hy_fail "q: top's screen is still there"
# the terminal's modes back: bash runs the next command in the modes it finds
tm send-keys -t top -l 'case $(stty -a) in *-icanon* | *" -echo "*) echo TTY-RAW ;; *) echo TTY-COOKED ;; esac' &&
	tm send-keys -t top Enter
wait_pane "q: the terminal's modes are not back (or the shell did not answer)" has_line TTY-COOKED

# SIGTERM: the same, and the exit status of a death by the signal
tm send-keys -t top -l "clear; echo SHELL-\$((6 * 8)); \"$HYBRIDCTL\" top \"$M\" -d 1; echo top-rc=\$?" &&
	tm send-keys -t top Enter
wait_pane "top did not start again" table 50 total some
TOP_PID=$(pgrep -P "$SHELL_PID" -x hybridctl)
if [ -z "$TOP_PID" ]; then
	hy_fail "no hybridctl under the shell of the pane (pid $SHELL_PID)"
else
	kill -TERM "$TOP_PID"
	wait_pane "SIGTERM: top did not end" grep -q '^top-rc='
	pane | has_line top-rc=143 || hy_fail "SIGTERM: exit status $(pane | grep '^top-rc='), expected 143"
	pane_all | has_line SHELL-48 || hy_fail "SIGTERM: the shell's screen did not come back"
fi

tm kill-server
hy_forget_pid "$TMUX_PID"

# ---- batch mode: a process that exits ----------------------------------------
BATCH=$HY_TMP/batch
samples() { grep -c '^hybridctl top - ' "$BATCH"; }
# listed K PID: sample K has a row of PID
listed() {
	awk -v k="$1" -v pid="$2" '
		/^hybridctl top - / { s++; table = 0; next }
		s == k && $1 == "PID" { table = 1; next }
		s == k && table && $1 == pid { found = 1 }
		END { exit !found }' "$BATCH"
}
# wait_samples N: polls until the batch output has N samples
wait_samples() {
	local i
	for i in $(seq 1 600); do
		[ "$(samples)" -ge "$1" ] && return 0
		hy_exited "$TOP" && break
		sleep 0.1
	done
	hy_fail "batch top did not show $1 samples"
	cat "$HY_TMP/batch.err" >&2
	return 1
}

"$HYBRIDCTL" top "$M" -b -d 1 -n 600 >"$BATCH" 2>"$HY_TMP/batch.err" &
TOP=$!
HY_PIDS="$HY_PIDS $TOP"
wait_samples 1
listed 1 "$AA" || hy_fail "the first sample does not list top-aa, which runs"
release aa "$AA"
# the sample being taken now may have asked the daemon before the exit
after=$(($(samples) + 2))
wait_samples $((after + 1))
for k in $after $((after + 1)); do
	listed $k "$AA" && hy_fail "sample $k lists top-aa (pid $AA), which exited before it"
	listed $k "$ZZ" || hy_fail "sample $k does not list top-zz (pid $ZZ), idle but running"
done
kill "$TOP" && wait "$TOP"
hy_forget_pid "$TOP"

# a top started after the exit: no sample lists it (the daemon may still)
gone=$("$HYBRIDCTL" status "$M" --json | jq "[.mounts[0].daemon.processes[] | select(.pid == $AA)] | length")
"$HYBRIDCTL" top "$M" -b -d 1 -n 3 >"$BATCH" 2>"$HY_TMP/batch.err" || hy_fail "top -b -n 3 failed"
[ "$(samples)" = 3 ] || hy_fail "top -b -n 3 showed $(samples) samples"
for k in 1 2 3; do
	listed $k "$AA" && hy_fail "top -b -n 3: sample $k lists top-aa (pid $AA), which had exited"
	listed $k "$ZZ" || hy_fail "top -b -n 3: sample $k does not list top-zz (pid $ZZ)"
done
[ "$gone" = 1 ] || hy_log "(the daemon had already dropped top-aa: the last check proved less)"

release zz "$ZZ"
hy_umount "$M"
hy_pass
