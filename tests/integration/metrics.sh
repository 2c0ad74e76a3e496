#!/bin/bash
# metrics.sh - metrics a monitoring system can take (issue 21, item 1):
#   a. metrics=FILE: the daemon writes node_exporter's textfile; it passes
#      promtool check metrics, has HELP and TYPE lines, the mount's labels,
#      the pass-through counters by reason (cutoff here), and the windows
#      (5m, 1h, 1d); each rewrite is a rename (a new inode, no temporary
#      file left), and a reader copying it while the daemon rewrites it
#      every second only ever sees a whole file;
#   b. hybridctl status --format prometheus: the same checks on stdout,
#      --output FILE written whole; bad options refused;
#   c. a clean unmount: the file says hybridfs_up 0; a remount: every
#      counter is at least what it was before (the totals are in the state
#      database), the windows follow the totals (1d = the total, the
#      history being younger than a day; 5m <= 1h <= 1d);
#   d. kill -9 after a snapshot: what was counted up to it survives;
#   e. bad metrics= and metrics_interval= refused at mount, naming the
#      problem.
# No waiting on time: every wait polls status until a condition holds.
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
command -v promtool >/dev/null || hy_skip "promtool is missing (package prometheus; scripts/test installs it)"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"
export LC_ALL=C

b=$HY_TMP/b m=$HY_TMP/m p=$HY_TMP/prom
mkdir -p "$b" "$m" "$p"
prom=$p/hybridfs.prom
opts="state=$HY_TMP/s,cache=$HY_TMP/store,cache_size=4M,cache_seq_cutoff=64K"
opts="$opts,metrics=$prom,metrics_interval=1"

# check_prom WHAT FILE: promtool passes it, and it has what a scraper needs
check_prom() {
	local what=$1 f=$2 fam
	promtool check metrics <"$f" >"$HY_TMP/promtool.out" 2>&1 ||
		hy_fail "$what: promtool check metrics: $(cat "$HY_TMP/promtool.out")"
	for fam in hybridfs_up hybridfs_operations_total hybridfs_read_bytes_total \
		hybridfs_cache_passthrough_blocks_total hybridfs_window_operations \
		hybridfs_window_covered_seconds; do
		grep -q "^# HELP $fam " "$f" || hy_fail "$what: no HELP line for $fam"
		grep -q "^# TYPE $fam " "$f" || hy_fail "$what: no TYPE line for $fam"
	done
	grep -q '^# TYPE hybridfs_operations_total counter$' "$f" ||
		hy_fail "$what: hybridfs_operations_total is not a counter"
	grep -q "^hybridfs_operations_total{mountpoint=\"$m\",device=\"[^\"]*\",op=\"write\"} [0-9]" "$f" ||
		hy_fail "$what: no write counter labelled with the mountpoint"
	for w in 5m 1h 1d; do
		grep -q "^hybridfs_window_operations{.*op=\"write\",window=\"$w\"} [0-9]" "$f" ||
			hy_fail "$what: no $w window of the write counter"
	done
}
# sample FILE METRIC LABEL=\"VALUE\": that sample's value for this mount
sample() {
	awk -v k="$2{mountpoint=\"$m\"" -v l="$3" 'index($0, k) == 1 && index($0, l) { print $NF; exit }' "$1"
}
total() { hy_status "$m" ".metrics.totals[\"$1\"]"; }

# ---- a. the textfile ---------------------------------------------------------
hy_mount_ready "$b" "$m" "$opts"
# a sequential write past the cutoff (pass-through "cutoff"), reads
head -c 1M /dev/urandom >"$m/seq" || hy_fail "a: cannot write through the mount"
for i in 1 2 3; do cat "$m/seq" >/dev/null; done
s0=$(hy_status "$m" '.metrics.snapshots')
hy_wait_status "$m" ".metrics.snapshots >= $s0 + 2"
[ -f "$prom" ] || hy_fail "a: no textfile at $prom"
check_prom "a: textfile" "$prom"
grep -q "^hybridfs_up{mountpoint=\"$m\",device=\"[^\"]*\"} 1$" "$prom" ||
	hy_fail "a: the textfile does not say hybridfs_up 1: $(grep '^hybridfs_up' "$prom")"
cut=$(sample "$prom" hybridfs_cache_passthrough_blocks_total 'reason="cutoff"')
[ -n "$cut" ] && [ "$cut" -gt 0 ] ||
	hy_fail "a: 1 MiB written sequentially past a 64K cutoff, yet passthrough cutoff is \"$cut\""
[ "$(hy_status "$m" '.cache.passthrough.cutoff')" -gt 0 ] ||
	hy_fail "a: status has no cutoff pass-through: $(hy_status "$m" '.cache.passthrough')"
# a rewrite is a rename over the file: a new inode, nothing left beside it
ino=$(stat -c %i "$prom")
s0=$(hy_status "$m" '.metrics.snapshots')
hy_wait_status "$m" ".metrics.snapshots >= $s0 + 2"
[ "$(stat -c %i "$prom")" != "$ino" ] || hy_fail "a: the textfile was rewritten in place (same inode)"
# whole files only, however the copies fall between the rewrites
last=$(tail -n 1 "$prom" | sed 's/{.*//')
for i in $(seq 1 200); do
	cp "$prom" "$HY_TMP/copy" 2>/dev/null || continue
	if [ "$(head -c 19 "$HY_TMP/copy")" != "# HELP hybridfs_up " ] ||
		[ "$(tail -c 1 "$HY_TMP/copy" | od -An -c | tr -d ' ')" != '\n' ] ||
		[ "$(tail -n 1 "$HY_TMP/copy" | sed 's/{.*//')" != "$last" ]; then
		hy_fail "a: copy $i of the textfile is not whole: $(tail -n 2 "$HY_TMP/copy")"
		break
	fi
done

# ---- b. hybridctl status --format prometheus ----------------------------------
"$HYBRIDCTL" status "$m" --format prometheus >"$HY_TMP/ctl.prom" ||
	hy_fail "b: hybridctl status --format prometheus failed"
check_prom "b: hybridctl" "$HY_TMP/ctl.prom"
"$HYBRIDCTL" status --format prometheus --output "$p/all.prom" ||
	hy_fail "b: --output failed"
check_prom "b: --output" "$p/all.prom"
[ "$(stat -c %a "$p/all.prom")" = 644 ] || hy_fail "b: --output's file is not mode 644"
"$HYBRIDCTL" status "$m" --format xml >"$HY_TMP/bad.out" 2>&1
[ $? = 2 ] && grep -qF -- '--format "xml": use text, json or prometheus' "$HY_TMP/bad.out" ||
	hy_fail "b: --format xml: $(cat "$HY_TMP/bad.out")"
"$HYBRIDCTL" status "$m" --output "$p/x.prom" >"$HY_TMP/bad.out" 2>&1
[ $? = 2 ] && grep -q 'goes with --format prometheus' "$HY_TMP/bad.out" ||
	hy_fail "b: --output alone: $(cat "$HY_TMP/bad.out")"
"$HYBRIDCTL" status "$m" --format prometheus --output "$p/none/x.prom" >"$HY_TMP/bad.out" 2>&1
[ $? = 1 ] && grep -q "$p/none/x.prom" "$HY_TMP/bad.out" ||
	hy_fail "b: --output into a missing folder: $(cat "$HY_TMP/bad.out")"

# ---- c. a clean remount --------------------------------------------------------
head -c 256K /dev/urandom >"$m/more" || hy_fail "c: cannot write"
w1=$(total operations.write)
wb1=$(total bytes.written)
hy_umount "$m"
grep -q "^hybridfs_up{mountpoint=\"$m\",device=\"[^\"]*\"} 0$" "$prom" ||
	hy_fail "c: after the unmount the textfile does not say hybridfs_up 0"
check_prom "c: the last textfile" "$prom"
before=$(sample "$prom" hybridfs_operations_total 'op="write"')
[ -n "$before" ] && [ "$before" -ge "$w1" ] ||
	hy_fail "c: the last textfile has $before writes, status had $w1 before the unmount"
ls -A "$p" | grep -v '^\(hybridfs\|all\)\.prom$' >"$HY_TMP/left" &&
	hy_fail "c: files left beside the textfile: $(cat "$HY_TMP/left")"
hy_mount_ready "$b" "$m" "$opts"
w2=$(total operations.write)
[ "$w2" -ge "$before" ] || hy_fail "c: after a remount the write counter is $w2, was $before"
[ "$(total bytes.written)" -ge "$wb1" ] ||
	hy_fail "c: after a remount bytes.written is $(total bytes.written), was $wb1"
"$HYBRIDCTL" status "$m" --format prometheus >"$HY_TMP/ctl2.prom"
check_prom "c: after the remount" "$HY_TMP/ctl2.prom"
after=$(sample "$HY_TMP/ctl2.prom" hybridfs_operations_total 'op="write"')
[ "$after" -ge "$before" ] || hy_fail "c: hybridfs_operations_total write went from $before to $after"
wins=$(hy_status "$m" '.metrics | [.windows["5m"].counters["operations.write"],
	.windows["1h"].counters["operations.write"], .windows["1d"].counters["operations.write"],
	.totals["operations.write"]] | map(tostring) | join(" ")')
read -r w5 wh wd wt <<<"$wins"
[ "$w5" -le "$wh" ] && [ "$wh" -le "$wd" ] || hy_fail "c: windows not nested: 5m $w5, 1h $wh, 1d $wd"
[ "$wd" = "$wt" ] || hy_fail "c: the day window ($wd) is not the total ($wt) of a history younger than a day"
[ "$(hy_status "$m" '.metrics.persistent')" = true ] || hy_fail "c: the counters are not persistent"
# the schema holds them
n=$(sqlite3 "$HY_TMP/s/hybridfs.db" "SELECT count(*) FROM metric_totals" 2>/dev/null)
[ "${n:-0}" -gt 40 ] || hy_fail "c: metric_totals has \"$n\" rows"

# ---- d. kill -9 after a snapshot ------------------------------------------------
head -c 256K /dev/urandom >"$m/crash" || hy_fail "d: cannot write"
w3=$(total operations.write)
s0=$(hy_status "$m" '.metrics.snapshots')
hy_wait_status "$m" ".metrics.snapshots >= $s0 + 2"
hy_kill9 "$m"
hy_mount_ready "$b" "$m" "$opts"
w4=$(total operations.write)
[ "$w4" -ge "$w3" ] || hy_fail "d: after kill -9 the write counter is $w4, a snapshot had $w3"
hy_log "writes counted: $w1 before the unmount, $w2 after the remount, $w3 before kill -9, $w4 after"
hy_umount "$m"

# ---- e. bad options --------------------------------------------------------------
hy_mount_refused relative 'give an absolute path' "$b" "$m" "metrics=x.prom"
hy_mount_refused nofolder "$p/none" "$b" "$m" "metrics=$p/none/x.prom"
hy_mount_refused folder 'a folder; name a file' "$b" "$m" "metrics=$p"
hy_mount_refused inside 'inside the mountpoint' "$b" "$m" "metrics=$m/x.prom"
hy_mount_refused interval 'metrics_interval=0' "$b" "$m" "metrics_interval=0"
hy_mount_refused interval_big 'from 1 to 300' "$b" "$m" "metrics_interval=301"
hy_pass
