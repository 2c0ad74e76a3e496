#!/usr/bin/env bash
# cli.sh - hybridctl is one program (issue 21, items 2 and 4): every
# command's --help prints its usage on standard output and exits 0; every
# command that reports takes --json (parsed here with jq); --opt=value,
# --opt value and "--" work for every command; a mistyped command or
# option gets "did you mean" and a short usage, not the whole list; exit
# statuses a script can trust: 2 for a bad command line, 1 for a mount
# whose daemon does not answer (a registry entry whose pid lives but whose
# state folder no daemon serves: the folder of a mount made and unmounted
# here, its database whole); no progress output through a pipe; the trace
# CSV's class column by name.
. "$(dirname "$0")/lib.sh"
hy_need_iogen
hy_setup

b=$HY_TMP/b m=$HY_TMP/m
OUT=$HY_TMP/out ERR=$HY_TMP/err

# ctl ARGS...: hybridctl ARGS, stdout in $OUT, stderr in $ERR, status in RC
ctl() {
	RC=0
	"$HYBRIDCTL" "$@" >"$OUT" 2>"$ERR" || RC=$?
}
# expect STATUS ARGS...: hybridctl ARGS exits with STATUS
expect() {
	local want=$1
	shift
	ctl "$@"
	[ "$RC" = "$want" ] || hy_fail "hybridctl $*: exit status $RC, expected $want: $(cat "$ERR")"
}
# says FILE TEXT WHAT: FILE holds TEXT (fixed)
says() {
	grep -qF -- "$2" "$1" || hy_fail "$3: does not say '$2': $(cat "$1")"
}
# json WHAT JQ-CONDITION: $OUT is one JSON document for which it holds
json() {
	jq -e "$2" "$OUT" >/dev/null 2>&1 || hy_fail "$1: not JSON, or not $2: $(head -c 600 "$OUT")"
}

# ---------------------------------------------------------------- --help
for cmd in status trace "trace export" reorganize explain flush format-cache policy \
	"policy get" "policy set" "policy reset" top simulate tune pin unpin exclude; do
	# shellcheck disable=SC2086 # the words of the command
	for h in --help -h; do
		expect 0 $cmd $h
		head -n 1 "$OUT" | grep -q "^usage: hybridctl ${cmd%% *}" ||
			hy_fail "$cmd $h: no usage on standard output: $(head -n 2 "$OUT")"
		[ ! -s "$ERR" ] || hy_fail "$cmd $h wrote on standard error: $(cat "$ERR")"
	done
	# help COMMAND says the same
	# shellcheck disable=SC2086
	"$HYBRIDCTL" help $cmd >"$HY_TMP/help2" 2>&1 || hy_fail "help $cmd failed"
	"$HYBRIDCTL" $cmd --help | cmp -s - "$HY_TMP/help2" || hy_fail "help $cmd is not $cmd --help"
done
expect 0 --help
says "$OUT" "commands:" "--help"
for cmd in status trace reorganize explain flush format-cache policy top simulate tune pin unpin exclude; do
	grep -q "^  $cmd " "$OUT" || hy_fail "--help does not list $cmd"
done

# ---------------------------------------------------------------- mistakes
expect 2
[ "$(wc -l <"$ERR")" -le 5 ] || hy_fail "no command: more than a short usage: $(cat "$ERR")"
expect 2 stauts
says "$ERR" 'unknown command "stauts"; did you mean "status"?' "a mistyped command"
[ "$(wc -l <"$ERR")" -le 5 ] || hy_fail "a mistyped command printed more than a short usage: $(cat "$ERR")"
[ ! -s "$OUT" ] || hy_fail "a mistyped command wrote on standard output"
expect 2 reorganise
says "$ERR" 'did you mean "reorganize"?' "reorganise"
expect 2 frobnicate
grep -q "did you mean" "$ERR" && hy_fail "frobnicate got a suggestion: $(cat "$ERR")"
expect 2 reorganize --dryrun
says "$ERR" 'unknown option "--dryrun"; did you mean --dry-run?' "reorganize --dryrun"
expect 2 reorganize --dry
says "$ERR" 'did you mean --dry-run?' "an abbreviation"
expect 2 simulate "$HY_TMP/x" --polcy lru
says "$ERR" "did you mean --policy?" "simulate --polcy"
expect 2 trace exprot
says "$ERR" 'unknown action "exprot"; did you mean "export"?' "trace exprot"
expect 2 policy gte
says "$ERR" 'did you mean "get"?' "policy gte"
expect 2 policy
says "$ERR" "name an action" "policy alone"
expect 2 reorganize --mode=partail
says "$ERR" '(did you mean "partial"?)' "--mode partail"
expect 2 status --json=yes
says "$ERR" "takes no value" "--json=yes"
expect 2 status --format=xml
says "$ERR" 'use text, json or prometheus' "--format xml"
expect 2 explain
says "$ERR" "no PATH" "explain without a path"
expect 2 format-cache "$HY_TMP/fc.img" --size
says "$ERR" "--size needs" "--size without a value"
expect 2 top -d
says "$ERR" "-d needs SECONDS" "top -d without a value"
expect 2 tune --min-gain=lots
says "$ERR" '--min-gain "lots"' "--min-gain lots"
expect 2 flush a b
expect 2 pin
expect 2 exclude

# ---------------------------------------------------------------- format-cache
expect 0 format-cache "$HY_TMP/fc.img" --size=4M --json
json "format-cache --json" '.lines > 0 and .line_size == 4096 and .claimed == false and
	.path == "'"$HY_TMP/fc.img"'" and .total_bytes <= 4194304'

# ---------------------------------------------------------------- a mount
# borg.sh's workload: blocks 10, 2, 20 read three times after the file
# was read whole; the plan at a capacity of 12K is those three
mkdir -p "$b"
head -c 131072 /dev/urandom >"$b/f"
hy_mount_ready "$b" "$m" "writeback_cache=off,state=$HY_TMP/state,cache_size=2M"
pid_m=$HY_PID
"$IOGEN" whole "$m/f" r:0:131072 || hy_die "reading the file whole failed"
"$IOGEN" reader "$m/f" r:40960:4096 r:8192:4096 r:81920:4096 \
	r:40960:4096 r:8192:4096 r:81920:4096 r:40960:4096 r:8192:4096 r:81920:4096 ||
	hy_die "the reads failed"

# status: --json, --format json, either order, "--" before the mountpoint
for form in "$m --json" "--json $m" "--format=json $m" "--format json -- $m"; do
	# shellcheck disable=SC2086
	expect 0 status $form
	json "status $form" '.mounts | length == 1 and .[0].daemon.pid != null'
done
expect 0 status --format=text "$m"
says "$OUT" "mount" "status --format=text"

# reorganize: --opt=value (refused before), --json for the dry run and the run
expect 0 reorganize "$m" --dry-run --gap=3600 --capacity=12K --top=2 --json
json "reorganize --dry-run --json" '.mounts[0].dry_run == true and .mounts[0].plan.ranges == 3 and
	(.mounts[0].plan.top | length) == 2 and .mounts[0].plan.requests == 10 and
	.mounts[0].plan.top[0].block == 10'
expect 0 reorganize --dry-run --gap 3600 --capacity 12K --top 5 -- "$m"
says "$OUT" "plan      3 ranges" "reorganize with --"
expect 0 reorganize "$m" --gap=3600 --always --json
json "reorganize --json" '.mounts[0].dry_run == false and .mounts[0].result.phase == "done" and
	.mounts[0].result.copied_blocks > 0'
grep -q $'[\r\033]' "$ERR" && hy_fail "reorganize drew a progress bar into a pipe: $(od -c "$ERR" | head)"

# explain, flush, policy, pin, exclude: --json
expect 0 explain "$m/f" --range=0:8K --json
json "explain --json" '.range.count == 2 and .file_id > 0'
expect 0 flush "$m" --json
json "flush --json" '(.cache_blocks | type) == "number" and (.synced_blocks | type) == "number"'
grep -q $'[\r\033]' "$ERR" && hy_fail "flush drew a progress bar into a pipe"
expect 0 policy get "$m" --json random-consumer.line_size
json "policy get --json" '.settings | length == 1'
expect 0 policy set --json "$m" random-consumer.line_size=16K
json "policy set --json" '.settings["random-consumer.line_size"] == "16K"'
expect 0 policy reset "$m" --json
json "policy reset --json" '.settings | length > 1'
expect 0 pin --list "$m" --json
json "pin --list --json" '(.pins | type) == "array" and (.excludes | type) == "array"'
expect 0 exclude "$m" --list --json
json "exclude --list --json" '(.excludes | type) == "array"'

# trace export: --since=-1h (a value with a dash), --output=; the class
# column by name
expect 0 trace export "$m" --format=csv --since=-1h --output="$HY_TMP/t.csv"
bad=$(awk -F, 'NR > 1 && $11 != "" && $11 !~ /^(sequential|strided|overlapped|random)$/' "$HY_TMP/t.csv")
[ -z "$bad" ] || hy_fail "class values that are not names: $bad"
awk -F, 'NR > 1 && $11 ~ /^(sequential|strided|overlapped|random)$/ { n++ } END { exit !n }' \
	"$HY_TMP/t.csv" || hy_fail "no classified request in the trace: $(head -n 3 "$HY_TMP/t.csv")"

# simulate and tune: --json, --opt=value, no progress through a pipe
expect 0 simulate "$HY_TMP/t.csv" --format=hybridfs --policy=lru,lru3 --cache-size=4K --json
json "simulate --json" '(.results | length) == 2 and .requests > 0'
grep -q $'[\r\033]' "$ERR" && hy_fail "simulate drew a progress bar into a pipe"
expect 0 tune "$m" --json --min-gain=2
json "tune --json" '(.ranking | length) == 6 and .remount.min_gain == 0.02 and
	(.remount.advised | type) == "boolean"'
grep -q $'[\r\033]' "$ERR" && hy_fail "tune drew a progress bar into a pipe"

# ---------------------------------------------------------------- no answer
# a second mount, made and unmounted: its state folder has a whole
# database and no daemon; a registry entry names it with a live pid
b2=$HY_TMP/b2 m2=$HY_TMP/m2
mkdir -p "$b2"
hy_mount_ready "$b2" "$m2" "state=$HY_TMP/state2"
hy_umount "$m2"
sleep 600 &
sleeper=$!
HY_PIDS="$HY_PIDS $sleeper"
real_m2=$(cd "$m2" && pwd -P)
printf 'uuid=00000000-0000-4000-8000-0000000c1100\nmountpoint=%s\nbacking=%s\nstate_dir=%s\npid=%s\nstarted=%s\n' \
	"$real_m2" "$b2" "$HY_TMP/state2" "$sleeper" "$(date +%s)" \
	>"$HYBRIDFS_RUNTIME_DIR/00000000-0000-4000-8000-0000000c1100.mount"
expect 1 status "$m2"
says "$OUT" "no answer" "status of a mount whose daemon does not answer"
grep -q "unreadable" "$OUT" && hy_fail "the silent mount's database was not readable: $(cat "$OUT")"
expect 1 status "$m2" --json
json "status --json, no answer" '.mounts[0].daemon == null and (.mounts[0].daemon_error | length) > 0
	and .mounts[0].error == null'
expect 1 status --json
json "status --json of both" '.mounts | length == 2'
expect 1 flush "$m2"
expect 1 policy get "$m2"
expect 1 reorganize "$m2"
expect 1 pin --list "$m2"
expect 1 tune "$m2"
# the other mount still answers: 0
expect 0 status "$m"

kill "$sleeper" 2>/dev/null
wait "$sleeper" 2>/dev/null
hy_forget_pid "$sleeper"
HY_PID=$pid_m
hy_umount "$m"
hy_pass
