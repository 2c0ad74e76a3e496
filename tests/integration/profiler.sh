#!/bin/bash
# profiler.sh - the I/O profiler and the control socket, end to end.
#
#   1. known processes (hy-iogen, named alpha and beta), in sequence and then
#      concurrently, on a mount with writeback_cache=off and O_DIRECT (FUSE
#      direct I/O: each request reaches the daemon as issued): the csv
#      export holds exactly their requests (pid, name, exe, file id, offset,
#      length, blocks, mode) and nothing else; a file renamed while open
#      keeps its id; fiu and msr say the same, row for row;
#   2. hybridctl status --json: operation counts, profiler figures, the
#      processes with their byte counts;
#   3. after a remount, file ids are the same (also for the renamed file);
#   4. hostile control requests (hy-ctlpeer) get "ok":false, and the daemon
#      and the mount go on working;
#   5. another uid gets no answer (socket 0600 in a 0700 folder; and with
#      the modes opened up, the daemon's own uid check);
#   6. the state database holds no file contents;
#   7. profile=off logs nothing and says so;
#   8. with the write-back cache, pages written back on another process's
#      sync belong to the process that opened the handle.
# No sleeps: `hybridctl trace export` has the daemon sync its log first.
. "$(dirname "$0")/lib.sh"

HYBRIDCTL=${HYBRIDCTL:-$(cd "$(dirname "$0")/../.." && pwd)/hybridctl}
HY_TESTBIN=${HY_TESTBIN:-$(cd "$(dirname "$0")" && pwd)}
IOGEN=$HY_TESTBIN/hy-iogen
CTLPEER=$HY_TESTBIN/hy-ctlpeer

hy_setup
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"
[ -x "$IOGEN" ] || hy_die "no hy-iogen at $IOGEN (run make check)"
[ -x "$CTLPEER" ] || hy_die "no hy-ctlpeer at $CTLPEER (run make check)"
HAVE_JQ=false
if command -v jq >/dev/null 2>&1; then
	HAVE_JQ=true
else
	hy_log "jq is missing: the status checks that need it are skipped"
fi

B=$HY_TMP/backing
M=$HY_TMP/mnt
S=$HY_TMP/state
export LC_ALL=C

# export_trace MOUNTPOINT FORMAT FILE: the trace (synced first) into FILE.
export_trace() {
	local err=$HY_TMP/export.err
	if ! "$HYBRIDCTL" trace export "$1" --format "$2" >"$3" 2>"$err"; then
		hy_fail "trace export $2 of $1 failed: $(cat "$err")"
		return 1
	fi
	if [ -s "$err" ]; then
		hy_fail "trace export $2 of $1 complained: $(cat "$err")"
	fi
	return 0
}

# status_json MOUNTPOINT FILE: the daemon's report (.mounts[0].daemon).
status_json() {
	local out=$HY_TMP/status.out
	if ! "$HYBRIDCTL" status "$1" --json >"$out" 2>"$HY_TMP/status.err"; then
		hy_fail "hybridctl status $1 --json failed: $(cat "$HY_TMP/status.err")"
		return 1
	fi
	if $HAVE_JQ; then
		if ! jq -e '.mounts | length == 1' "$out" >/dev/null; then
			hy_fail "status --json is not one mount: $(cat "$out")"
			return 1
		fi
		jq '.mounts[0].daemon' "$out" >"$2"
		if [ "$(cat "$2")" = null ]; then
			hy_fail "status --json has no daemon report: $(jq -c '.mounts[0]' "$out")"
			return 1
		fi
	else
		cp "$out" "$2"
	fi
	return 0
}

now_ns() { date +%s%N; }

# ------------------------------------------------------- 1. the workload
hy_mount "$B" "$M" -o "writeback_cache=off,state=$S"
DAEMON=$HY_PID

T_START=$(now_ns)
# In sequence...
"$IOGEN" alpha "$M/f" w:0:8192 r:0:4096 w:16384:4096 &
P1=$!
wait "$P1" || hy_fail "hy-iogen alpha (pid $P1) failed"
"$IOGEN" beta "$M/g" w:0:4096 r:0:4096 "rename:$M/g2" r:0:4096 w:4096:4096 &
P2=$!
wait "$P2" || hy_fail "hy-iogen beta (pid $P2) failed"
# ... then at the same time (alpha on the same f, beta on a new h).
"$IOGEN" alpha "$M/f" r:16384:4096 w:8192:8192 r:0:8192 &
P3=$!
"$IOGEN" beta "$M/h" w:0:12288 "rename:$M/h2" r:4096:8192 w:12288:4096 &
P4=$!
wait "$P3" || hy_fail "hy-iogen alpha (pid $P3, concurrent) failed"
wait "$P4" || hy_fail "hy-iogen beta (pid $P4, concurrent) failed"
# Metadata only: these must add no rows.
ls -l "$M" >/dev/null || hy_fail "ls -l on the mount failed"
stat "$M/f" "$M/g2" "$M/h2" >/dev/null || hy_fail "stat on the mount failed"
if [ -e "$M/g" ] || [ -e "$M/h" ]; then
	hy_fail "renamed files are still under their old names"
fi
T_END=$(now_ns)

# What each process did: process,mode,offset,length,block_first,block_count
# (in its own order: its requests were issued one after another).
EXP_P1="alpha,W,0,8192,0,2
alpha,R,0,4096,0,1
alpha,W,16384,4096,4,1"
EXP_P2="beta,W,0,4096,0,1
beta,R,0,4096,0,1
beta,R,0,4096,0,1
beta,W,4096,4096,1,1"
EXP_P3="alpha,R,16384,4096,4,1
alpha,W,8192,8192,2,2
alpha,R,0,8192,0,2"
EXP_P4="beta,W,0,12288,0,3
beta,R,4096,8192,1,2
beta,W,12288,4096,3,1"
EXP_ROWS=13
CSV_HEADER="ts_ns,pid,process,exe,file_id,offset,length,block_first,block_count,mode,class,phys_block"

CSV=$HY_TMP/trace.csv
FIU=$HY_TMP/trace.fiu
MSR=$HY_TMP/trace.msr
export_trace "$M" csv "$CSV"
export_trace "$M" fiu "$FIU"
export_trace "$M" msr "$MSR"

[ "$(head -n 1 "$CSV")" = "$CSV_HEADER" ] || hy_fail "csv header is \"$(head -n 1 "$CSV")\""
# Every row: 12 fields (no quoting expected here), R or W, numbers where
# numbers go, class one of ReCA's request classes by name, phys_block empty or a
# block number, the time within the test.
bad=$(tail -n +2 "$CSV" | awk -F, '
	NF != 12 || $1 !~ /^[0-9]+$/ || $2 !~ /^[0-9]+$/ || $5 !~ /^[0-9]+$/ ||
	$6 !~ /^[0-9]+$/ || $7 !~ /^[0-9]+$/ || $8 !~ /^[0-9]+$/ || $9 !~ /^[0-9]+$/ ||
	($10 != "R" && $10 != "W") || $11 !~ /^(sequential|strided|overlapped|random)$/ ||
	$12 !~ /^[0-9]*$/ { print }')
[ -z "$bad" ] || hy_fail "malformed csv rows:
$bad"
while IFS=, read -r ts _; do
	if [ "$ts" -lt "$T_START" ] || [ "$ts" -gt "$T_END" ]; then
		hy_fail "csv row time $ts is outside the test's [$T_START, $T_END]"
		break
	fi
done < <(tail -n +2 "$CSV")

# rows_of PID: that pid's rows as process,mode,offset,length,blocks.
rows_of() {
	awk -F, -v p="$1" 'NR > 1 && $2 == p { print $3 "," $10 "," $6 "," $7 "," $8 "," $9 }' "$CSV"
}
# ids_of PID: the distinct file ids of that pid's rows.
ids_of() {
	awk -F, -v p="$1" 'NR > 1 && $2 == p { print $5 }' "$CSV" | sort -u
}

PIDS=("$P1" "$P2" "$P3" "$P4")
EXPS=("$EXP_P1" "$EXP_P2" "$EXP_P3" "$EXP_P4")
IDS=()
for n in 0 1 2 3; do
	pid=${PIDS[n]}
	want=${EXPS[n]}
	got=$(rows_of "$pid")
	[ "$got" = "$want" ] || hy_fail "requests of pid $pid are not what it issued:
--- expected
$want
--- logged
$got"
	# the exe is the program that ran
	exe=$(awk -F, -v p="$pid" 'NR > 1 && $2 == p { print $4 }' "$CSV" | sort -u)
	case $exe in
	*/hy-iogen) ;;
	*) hy_fail "exe of pid $pid is \"$exe\", expected .../hy-iogen" ;;
	esac
	ids=$(ids_of "$pid")
	if [ -z "$ids" ] || [ "$(printf '%s\n' "$ids" | wc -l)" != 1 ]; then
		hy_fail "requests of pid $pid carry file ids \"$(printf '%s ' $ids)\", expected one"
	fi
	IDS[n]=$(printf '%s\n' "$ids" | head -n 1)
done
F_ID=${IDS[0]}
G_ID=${IDS[1]}
H_ID=${IDS[3]}
[ "${IDS[2]}" = "$F_ID" ] || hy_fail "f has id $F_ID for pid $P1 but ${IDS[2]} for pid $P3"
[ "$F_ID" != 0 ] && [ "$G_ID" != 0 ] && [ "$H_ID" != 0 ] ||
	hy_fail "a file was logged with id 0 (no id): f $F_ID, g $G_ID, h $H_ID"
[ "$F_ID" != "$G_ID" ] && [ "$F_ID" != "$H_ID" ] && [ "$G_ID" != "$H_ID" ] ||
	hy_fail "f, g and h share file ids: $F_ID, $G_ID, $H_ID"
# Nothing else touched those files, and nothing else was logged at all
# (ls and stat do metadata only).
others=$(awk -F, -v a="$P1" -v b="$P2" -v c="$P3" -v d="$P4" \
	'NR > 1 && $2 != a && $2 != b && $2 != c && $2 != d' "$CSV")
[ -z "$others" ] || hy_fail "rows of other processes were logged:
$others"
rows=$(($(wc -l <"$CSV") - 1))
[ "$rows" = "$EXP_ROWS" ] || hy_fail "csv has $rows rows, expected $EXP_ROWS"

# fiu and msr: the same requests, row for row.
[ "$(wc -l <"$FIU")" = "$rows" ] || hy_fail "fiu has $(wc -l <"$FIU") rows, csv $rows"
[ "$(wc -l <"$MSR")" = "$rows" ] || hy_fail "msr has $(wc -l <"$MSR") rows, csv $rows"
bad=$(awk '
	NF != 9 || $1 !~ /^[0-9]+$/ || $2 !~ /^[0-9]+$/ || $4 !~ /^[0-9]+$/ || $5 !~ /^[0-9]+$/ ||
	($6 != "R" && $6 != "W") || $7 != "0" || $8 !~ /^[0-9]+$/ || $9 != "0" { print }' "$FIU")
[ -z "$bad" ] || hy_fail "malformed fiu rows:
$bad"
bad=$(awk -F, '
	NF != 7 || $1 !~ /^[0-9]+$/ || $2 != "hybridfs" || $3 != "0" ||
	($4 != "Read" && $4 != "Write") || $5 !~ /^[0-9]+$/ || $6 !~ /^[0-9]+$/ || $7 != "0" { print }' "$MSR")
[ -z "$bad" ] || hy_fail "malformed msr rows:
$bad"
WINDOWS_EPOCH_TICKS=116444736000000000
line=1
exec 3<"$FIU" 4<"$MSR"
while IFS=, read -r ts pid proc _exe fid off len _bf _bc mode _class phys; do
	line=$((line + 1))
	read -r fts fpid fproc flba fsec fop fmaj fmin fmd5 <&3 || break
	IFS=, read -r mticks mhost mdisk mtype moff msize mresp <&4 || break
	if [ -n "$phys" ]; then
		addr=$((phys * 4096 + off % 4096))
	else
		addr=$(((fid << 40) + off))
	fi
	want="$ts ${pid:-0} ${proc:--} $((addr / 512)) $(((addr % 512 + len + 511) / 512)) $mode 0 $fid 0"
	got="$fts $fpid $fproc $flba $fsec $fop $fmaj $fmin $fmd5"
	[ "$got" = "$want" ] || hy_fail "fiu row $((line - 1)) is \"$got\", csv says \"$want\""
	[ "$mode" = R ] && mword=Read || mword=Write
	want="$((ts / 100 + WINDOWS_EPOCH_TICKS)),hybridfs,0,$mword,$addr,$len,0"
	got="$mticks,$mhost,$mdisk,$mtype,$moff,$msize,$mresp"
	[ "$got" = "$want" ] || hy_fail "msr row $((line - 1)) is \"$got\", csv says \"$want\""
done < <(tail -n +2 "$CSV")
exec 3<&- 4<&-

# --------------------------------------------------------- 2. status --json
ST=$HY_TMP/status.json
if status_json "$M" "$ST" && $HAVE_JQ; then
	# reads issued: 1 + 2 + 2 + 1; writes: 2 + 2 + 1 + 2
	jq -e '.operations.read >= 6 and .operations.write >= 7' "$ST" >/dev/null ||
		hy_fail "status operations read/write below what was issued (6/7): $(jq -c .operations "$ST")"
	jq -e '.bytes.read >= 32768 and .bytes.written >= 45056' "$ST" >/dev/null ||
		hy_fail "status bytes below what was issued: $(jq -c .bytes "$ST")"
	jq -e '.profiler.enabled == true and .profiler.dropped == 0 and .profiler.errors == 0' \
		"$ST" >/dev/null || hy_fail "status profiler figures are off: $(jq -c .profiler "$ST")"
	jq -e ".profiler.written >= $EXP_ROWS and .profiler.queued == 0" "$ST" >/dev/null ||
		hy_fail "status profiler did not write the $EXP_ROWS rows: $(jq -c .profiler "$ST")"
	[ "$(jq -r .pid "$ST")" = "$DAEMON" ] ||
		hy_fail "status names daemon pid $(jq -r .pid "$ST"), it is $DAEMON"
	# pid name reads writes bytes_read bytes_written
	for want in "$P1 alpha 1 2 4096 12288" "$P2 beta 2 2 8192 8192" \
		"$P3 alpha 2 1 12288 8192" "$P4 beta 1 2 8192 16384"; do
		pid=${want%% *}
		got=$(jq -r --argjson p "$pid" '.processes[] | select(.pid == $p) |
			"\(.pid) \(.name) \(.reads) \(.writes) \(.bytes_read) \(.bytes_written)"' "$ST")
		[ "$got" = "$want" ] ||
			hy_fail "status process $pid is \"$got\", expected \"$want\": $(jq -c .processes "$ST")"
	done
fi

# ------------------------------------------- 3. ids stable across remounts
hy_umount "$M"
[ "${HY_DAEMON_STATUS:-0}" = 0 ] || hy_fail "daemon exited with status $HY_DAEMON_STATUS"
hy_mount "$B" "$M" -o "writeback_cache=off,state=$S"
DAEMON=$HY_PID
"$IOGEN" gamma "$M/f" r:4096:4096 &
P5=$!
wait "$P5" || hy_fail "hy-iogen gamma (pid $P5) failed"
"$IOGEN" delta "$M/g2" r:0:4096 &
P6=$!
wait "$P6" || hy_fail "hy-iogen delta (pid $P6) failed"
export_trace "$M" csv "$CSV"
rows=$(($(wc -l <"$CSV") - 1))
[ "$rows" = $((EXP_ROWS + 2)) ] || hy_fail "after the remount csv has $rows rows, expected $((EXP_ROWS + 2))"
got=$(awk -F, -v p="$P5" 'NR > 1 && $2 == p { print $3 "," $5 "," $10 "," $6 "," $7 }' "$CSV")
[ "$got" = "gamma,$F_ID,R,4096,4096" ] ||
	hy_fail "after the remount f's read is \"$got\", expected \"gamma,$F_ID,R,4096,4096\""
got=$(awk -F, -v p="$P6" 'NR > 1 && $2 == p { print $3 "," $5 "," $10 "," $6 "," $7 }' "$CSV")
[ "$got" = "delta,$G_ID,R,0,4096" ] ||
	hy_fail "after the remount g2's read is \"$got\", expected \"delta,$G_ID,R,0,4096\""

# --------------------------------------------- 4. hostile control requests
# expect_error WHAT KEYWORD MODE...: an error line that says which.
expect_error() {
	local what=$1 key=$2 out rc
	shift 2
	out=$("$CTLPEER" "$S" "$@" 2>&1)
	rc=$?
	if [ "$rc" != 0 ]; then
		hy_fail "control: $what: hy-ctlpeer failed ($rc): $out"
	elif ! printf '%s\n' "$out" | grep -Eq '"ok": ?false'; then
		hy_fail "control: $what: no \"ok\":false response: $out"
	elif ! printf '%s\n' "$out" | grep -Eiq "\"error\": ?\".*($key)"; then
		hy_fail "control: $what: the error does not say which (/$key/): $out"
	fi
}
# survives WHAT MODE...: anything but ok:true, and no crash (checked below).
survives() {
	local what=$1 out rc
	shift
	out=$("$CTLPEER" "$S" "$@" 2>&1)
	rc=$?
	if [ "$rc" != 0 ]; then
		hy_fail "control: $what: hy-ctlpeer failed ($rc): $out"
	elif printf '%s\n' "$out" | grep -Eq '"ok": ?true'; then
		hy_fail "control: $what: was answered \"ok\":true: $out"
	fi
}

out=$("$CTLPEER" "$S" line '{"v":1,"cmd":"ping"}' 2>&1)
printf '%s\n' "$out" | grep -Eq '"ok": ?true' ||
	hy_fail "control: a well-formed ping got \"$out\" (hy-ctlpeer itself is broken?)"
expect_error "garbage json" 'json' line '{"v":'
expect_error "wrong version" 'version' line '{"v":2,"cmd":"status"}'
expect_error "unknown command" 'unknown command' line '{"v":1,"cmd":"frob"}'
expect_error "not an object" 'object' line '[1,2]'
expect_error "empty line" 'empty' line ''
expect_error "no cmd" 'cmd' line '{"v":1}'
expect_error "cmd not a string" 'cmd' line '{"v":1,"cmd":7}'
expect_error "v not a number" 'integer|number' line '{"v":"1","cmd":"ping"}'
expect_error "trailing garbage" 'trailing' line '{"v":1,"cmd":"ping"} x'
expect_error "invalid utf-8" 'utf' line "$(printf '{"v":1,"cmd":"\xc0\xaf"}')"
expect_error "oversized line" 'longer|limit|over' oversized
expect_error "embedded nul" 'nul' nul
survives "random bytes" raw-random 5000
survives "random bytes (large)" raw-random 200000
survives "half a line" half
for i in 1 2 3 4 5 6 7 8; do
	survives "half a line ($i)" half
done
kill -0 "$DAEMON" 2>/dev/null || hy_fail "the daemon (pid $DAEMON) died after hostile requests"
if status_json "$M" "$ST" && $HAVE_JQ; then
	[ "$(jq -r .pid "$ST")" = "$DAEMON" ] ||
		hy_fail "after hostile requests status names pid $(jq -r .pid "$ST"), not $DAEMON"
fi
out=$("$CTLPEER" "$S" line '{"v":1,"cmd":"ping"}' 2>&1)
printf '%s\n' "$out" | grep -Eq '"ok": ?true' ||
	hy_fail "control: ping after hostile requests got \"$out\""
printf 'still here\n' >"$M/after" || hy_fail "cannot write through the mount after hostile requests"
[ "$(cat "$M/after" 2>/dev/null)" = "still here" ] ||
	hy_fail "cannot read back through the mount after hostile requests"
"$IOGEN" epsilon "$M/after2" w:0:4096 r:0:4096 ||
	hy_fail "hy-iogen on the mount failed after hostile requests"

# ------------------------------------------------- 5. another uid refused
mode=$(stat -c %a "$S")
[ "$mode" = 700 ] || hy_fail "state folder mode is $mode, expected 700"
mode=$(stat -c %a "$S/control.sock")
# control.h promises 0600; what protects it is that group and others have
# nothing (checked apart, so a failure says which rule broke)
[ $((0$mode & 077)) = 0 ] || hy_fail "control socket mode is $mode: group or others have access"
[ "$mode" = 600 ] || hy_fail "control socket mode is $mode, expected 600 (control.h)"
[ -S "$S/control.sock" ] || hy_fail "$S/control.sock is not a socket"
if [ "$(id -u)" != 0 ]; then
	hy_log "SKIP sub-check: another uid (needs root)"
elif ! command -v setpriv >/dev/null 2>&1; then
	hy_log "SKIP sub-check: another uid (setpriv is missing)"
else
	# a copy that uid 65534 can surely run
	mkdir -p "$HY_TMP/bin" && cp "$CTLPEER" "$HY_TMP/bin/" && chmod 755 "$HY_TMP/bin/hy-ctlpeer"
	nobody() {
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$HY_TMP/bin/hy-ctlpeer" "$S" line '{"v":1,"cmd":"ping"}' 2>&1
	}
	out=$(nobody)
	rc=$?
	if printf '%s\n' "$out" | grep -Eq '"ok": ?true'; then
		hy_fail "uid 65534 was answered by the daemon: $out"
	elif ! { [ "$rc" = 3 ] && printf '%s\n' "$out" | grep -q 'Permission denied'; } &&
		! printf '%s\n' "$out" | grep -Eq '"ok": ?false'; then
		hy_fail "uid 65534: neither EACCES nor a refusal (status $rc): $out"
	fi
	# With the modes opened up, the daemon's own check (SO_PEERCRED)
	# must still turn it away.
	chmod 711 "$S" && chmod 666 "$S/control.sock"
	out=$(nobody)
	rc=$?
	chmod 600 "$S/control.sock"
	chmod 700 "$S"
	if printf '%s\n' "$out" | grep -Eq '"ok": ?true'; then
		hy_fail "uid 65534 on an open socket was answered by the daemon: $out"
	elif ! printf '%s\n' "$out" | grep -Eq '"ok": ?false.*refused|refused.*"ok": ?false'; then
		hy_fail "uid 65534 on an open socket was not refused by the daemon (status $rc): $out"
	fi
	kill -0 "$DAEMON" 2>/dev/null || hy_fail "the daemon died after refusing another uid"
fi

# ------------------------------------------------- 6. no contents stored
MARK="hyMARK$$x$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')zq"
printf '%s\n' "$MARK" >"$M/secret" || hy_fail "cannot write the marker file"
for i in $(seq 1 200); do printf '%s-%s\n' "$MARK" "$i"; done >"$M/secret2" ||
	hy_fail "cannot write the second marker file"
[ "$(head -n 1 "$M/secret")" = "$MARK" ] || hy_fail "the marker file reads back wrong"
grep -qF "$MARK" "$B/secret" || hy_fail "the marker is not in the backing file (test is broken)"
export_trace "$M" csv "$CSV"
# the marker's write was logged (so the check below is not vacuous)
awk -F, -v n=$((${#MARK} + 1)) 'NR > 1 && $10 == "W" && $6 == 0 && $7 == n { f = 1 } END { exit !f }' \
	"$CSV" || hy_fail "the marker file's write was not logged"
found=$(grep -rlaF "$MARK" "$S" 2>/dev/null)
[ -z "$found" ] || hy_fail "file contents are stored in the state folder: $found"
for f in "$S"/hybridfs.db "$S"/hybridfs.db-wal; do
	[ -e "$f" ] || continue
	n=$(grep -caF "$MARK" "$f")
	[ "$n" = 0 ] || hy_fail "$f holds the marker $n times"
done
hy_umount "$M"
[ "${HY_DAEMON_STATUS:-0}" = 0 ] || hy_fail "daemon exited with status $HY_DAEMON_STATUS"
# and after the daemon's last checkpoint (the cache store, "cache", is
# the one file there meant to hold file data: a clean unmount keeps the
# front buffer's blocks in it for the next mount)
found=$(grep -rlaF --exclude=cache "$MARK" "$S" 2>/dev/null)
[ -z "$found" ] || hy_fail "file contents are stored in the state folder after unmount: $found"
[ ! -e "$S/control.sock" ] || hy_fail "control socket left behind after unmount"

# ---------------------------------------------------- 7. profile=off
B2=$HY_TMP/backing2
M2=$HY_TMP/mnt2
S2=$HY_TMP/state2
hy_mount "$B2" "$M2" -o "writeback_cache=off,state=$S2,profile=off"
"$IOGEN" alpha "$M2/f" w:0:8192 r:0:4096 w:16384:4096 || hy_fail "hy-iogen alpha (profile=off) failed"
"$IOGEN" beta "$M2/g" w:0:4096 r:0:4096 "rename:$M2/g2" r:0:4096 w:4096:4096 ||
	hy_fail "hy-iogen beta (profile=off) failed"
if "$HYBRIDCTL" trace export "$M2" --format csv >"$CSV" 2>"$HY_TMP/export.err"; then
	[ "$(cat "$CSV")" = "$CSV_HEADER" ] || hy_fail "profile=off logged requests:
$(cat "$CSV")"
else
	hy_fail "trace export of a profile=off mount failed: $(cat "$HY_TMP/export.err")"
fi
if status_json "$M2" "$ST" && $HAVE_JQ; then
	jq -e '.profiler.enabled == false' "$ST" >/dev/null ||
		hy_fail "profile=off: status says $(jq -c .profiler "$ST")"
	jq -e '.processes | length == 0' "$ST" >/dev/null ||
		hy_fail "profile=off: status lists processes: $(jq -c .processes "$ST")"
	jq -e '.operations.read >= 3 and .operations.write >= 4' "$ST" >/dev/null ||
		hy_fail "profile=off: operations not counted: $(jq -c .operations "$ST")"
elif ! $HAVE_JQ; then
	grep -Eq '"enabled": ?false' "$ST" || hy_fail "profile=off: status does not say enabled false"
fi
hy_umount "$M2"

# ------------------------------------- 8. write-back cache: the opener's
# Process A writes into the page cache and keeps its handle open; another
# process (sync) makes the kernel write the pages back. Those writes reach
# the daemon from the write-back path and belong to A, which opened the
# handle. Fifos order the steps, no sleeps.
B3=$HY_TMP/backing3
M3=$HY_TMP/mnt3
S3=$HY_TMP/state3
hy_mount "$B3" "$M3" -o "writeback_cache=on,state=$S3"
mkfifo "$HY_TMP/written" "$HY_TMP/go" || hy_die "mkfifo failed"
WB_LEN=10000
(
	exec 3>"$M3/wb" || exit 1
	printf '%*s' "$WB_LEN" '' | tr ' ' w >&3 || exit 1
	echo written >"$HY_TMP/written"
	read -r _ <"$HY_TMP/go"
	exec 3>&-
) &
PA=$!
read -r _ <"$HY_TMP/written"
sync "$M3/wb" || hy_fail "write-back: sync $M3/wb failed"
echo go >"$HY_TMP/go"
wait "$PA" || hy_fail "write-back: the writer (pid $PA) failed"
[ "$(wc -c <"$B3/wb")" = "$WB_LEN" ] || hy_fail "write-back: backing file has $(wc -c <"$B3/wb") bytes"
export_trace "$M3" csv "$CSV"
got=$(awk -F, 'NR > 1 && $10 == "W" { n++; b += $7; if ($2 != p) o = o " " $2 "(" $3 ")" }
	END { print n + 0, b + 0, o }' p="$PA" "$CSV")
case $got in
"0 "*) hy_fail "write-back: no write was logged: $(cat "$CSV")" ;;
*" $WB_LEN ") ;;
*) hy_fail "write-back: writes (count, bytes, other pids) are \"$got\", expected all $WB_LEN bytes by pid $PA:
$(cat "$CSV")" ;;
esac
hy_umount "$M3"

# ---- ReCA's workload categories: what a user would call them -------------
B4=$HY_TMP/backing4 M4=$HY_TMP/mnt4
mkdir -p "$B4" "$M4"
# ReCA names a process once it has 32 requests in its window: cat's reads
# reach the daemon in 1 MiB requests (the mount's read-ahead, issue 20),
# so the file holds more than 32 of them
head -c 48M /dev/urandom >"$B4/big"
hy_mount "$B4" "$M4" -o "writeback_cache=off,state=$HY_TMP/state4"
cat "$M4/big" >/dev/null || hy_fail "categories: cat failed"
dd if=/dev/zero of="$M4/out" bs=128K count=256 oflag=direct status=none ||
	hy_fail "categories: dd failed"
cats=$("$HYBRIDCTL" status "$M4" --json |
	jq -r '.mounts[0].daemon.processes[] | "\(.name)=\(.category)"' | sort | tr '\n' ' ')
case " $cats" in *" cat=archival-consumer "*) ;; *) hy_fail "categories: cat is not an archival consumer: $cats" ;; esac
case " $cats" in *" dd=large-file-generator "*) ;; *) hy_fail "categories: dd is not a large file generator: $cats" ;; esac
hy_umount "$M4"

hy_pass
