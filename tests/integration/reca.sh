#!/bin/bash
# reca.sh - ReCA on a real mount (issue 6): real programs get the workload
# category a user would expect, and the policy the cache follows for them
# changes with it (status --json, processes[].policy); the policy table is
# changed with hybridctl policy set, refuses bad settings, and survives a
# remount; a metadata-heavy process gets its entries and attributes kept
# by the kernel for the table's metadata timeout.
#
# No sleeps: every check reads status after the programs have exited.
. "$(dirname "$0")/lib.sh"

hy_need_iogen
for tool in sqlite3 tar; do
	command -v "$tool" >/dev/null || hy_skip "$tool is missing"
done

hy_setup

B=$HY_TMP/backing M=$HY_TMP/mnt S=$HY_TMP/state
mkdir -p "$B/tree" "$M"
# ReCA names a process once it has 32 requests in its window, and reads
# reach the daemon in 1 MiB requests (the mount's read-ahead, issue 20):
# the files read whole hold more than 32 of them
head -c 48M /dev/urandom >"$B/big"
head -c 40M /dev/urandom >"$B/big2"
for i in 1 2 3 4; do head -c 4M /dev/urandom >"$B/tree/f$i"; done
# the database is made before the mount: none of its pages is in the
# kernel's page cache, so the workload's reads reach the daemon
sqlite3 "$B/db" "PRAGMA page_size=4096; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000)
INSERT INTO t SELECT x, randomblob(300) FROM c;" || hy_die "sqlite3 could not make the database"

# writeback_cache=off: writes reach the daemon as the programs make them
hy_mount_ready "$B" "$M" "state=$S,cache_size=256M,writeback_cache=off"

status_json() { "$HYBRIDCTL" status "$M" --json; }

# process NAME FIELD: FIELD (a jq path) of the process NAME's entry
process() {
	status_json | jq -r --arg n "$1" "[.mounts[0].daemon.processes[] | select(.name == \$n)] | .[0] | $2"
}

# expect NAME CATEGORY WRITE LINE: the category, and the write policy and
# line size of the policy it follows
expect() {
	local got
	got=$(process "$1" '"\(.category) \(.policy.write) \(.policy.line_size)"')
	[ "$got" = "$2 $3 $4" ] ||
		hy_fail "$1: category and policy are \"$got\", expected \"$2 $3 $4\""
}

# ---- categories and the policy that follows -------------------------------
cat "$M/big" >/dev/null || hy_fail "cat failed"
tar cf - -C "$M" tree | cat >/dev/null || hy_fail "tar c failed"
dd if=/dev/zero of="$M/out" bs=128K count=256 oflag=direct status=none || hy_fail "dd failed"
# sqlite3: 2000 single-row updates at random rows (each its own transaction)
{
	echo "PRAGMA synchronous=OFF;"
	for i in $(seq 1 2000); do
		echo "UPDATE t SET v = randomblob(300) WHERE id = $(((RANDOM * 32768 + RANDOM) % 20000 + 1));"
	done
} | sqlite3 "$M/db" >/dev/null || hy_fail "sqlite3 updates failed"
# random 4 KiB reads of the large file (O_DIRECT: each one reaches the daemon)
specs=()
for i in $(seq 1 300); do specs+=("r:$(((RANDOM % 4096) * 4096)):4096"); done
"$IOGEN" randreader "$M/big" "${specs[@]}" || hy_fail "random reads failed"

# the default store shares home's disk: the mount writes through
expect cat archival-consumer around 65536
expect tar archival-consumer around 65536
expect dd large-file-generator around 65536
expect sqlite3 random-producer-consumer through 4096
expect randreader random-consumer around 8192
[ "$(process dd .policy.seq_cutoff)" = 1048576 ] ||
	hy_fail "dd: seq_cutoff is $(process dd .policy.seq_cutoff), expected 1048576"
[ "$(process cat .policy.evict)" = early ] || hy_fail "cat: eviction is not early"
# the cache did what the policies say: archival reads bypassed it, random
# consumers' misses read whole 8 KiB lines
[ "$(status_json | jq '.mounts[0].daemon.cache.admit_bypassed')" -gt 0 ] ||
	hy_fail "no block was kept out of the cache by its class"
[ "$(status_json | jq '.mounts[0].daemon.cache.line_prefetched')" -gt 0 ] ||
	hy_fail "no block was read ahead to fill a line"
# the text status has the class mix and the policy
"$HYBRIDCTL" status "$M" | grep -q "archival-consumer .* around 64K early" ||
	hy_fail "status does not show cat's policy: $("$HYBRIDCTL" status "$M")"

# ---- the policy table ------------------------------------------------------
[ "$("$HYBRIDCTL" policy get "$M" archival-consumer.line_size)" = "archival-consumer.line_size=64K" ] ||
	hy_fail "policy get: $("$HYBRIDCTL" policy get "$M" archival-consumer.line_size)"
out=$("$HYBRIDCTL" policy set "$M" archival-consumer.line_size=16K archival-consumer.write=through 2>&1) ||
	hy_fail "policy set failed: $out"
case $out in *"2 settings changed"*) ;; *) hy_fail "policy set said: $out" ;; esac
# a new archival consumer follows the new row at once
head -c 40M "$M/big2" >/dev/null || hy_fail "head failed"
expect head archival-consumer through 16384
# bad settings are refused, naming the bad part, and change nothing
# (each bad setting, then the part its message must name)
while read -r bad token; do
	if out=$("$HYBRIDCTL" policy set "$M" "$bad" 2>&1); then
		hy_fail "policy set $bad was accepted"
	else
		case $out in *"$token"*) ;; *) hy_fail "policy set $bad: the message does not name \"$token\": $out" ;; esac
	fi
done <<'EOF'
archival-consumer.line_size=12K 12K
nosuch.write=back nosuch
archival-consumer.colour=red colour
random-consumer.admit.read.random=always always
random-consumer.admit.read.sideways=high sideways
metadata.timeout=-1 -1
justtext justtext
EOF
[ "$("$HYBRIDCTL" policy get "$M" archival-consumer.line_size)" = "archival-consumer.line_size=16K" ] ||
	hy_fail "a refused setting changed the table"
hy_umount "$M"

# survives a remount (the state database keeps the changes)
hy_mount_ready "$B" "$M" "state=$S,cache_size=256M,writeback_cache=off"
[ "$("$HYBRIDCTL" policy get "$M" archival-consumer.write)" = "archival-consumer.write=through" ] ||
	hy_fail "after a remount: $("$HYBRIDCTL" policy get "$M" archival-consumer.write)"
out=$("$HYBRIDCTL" policy reset "$M") || hy_fail "policy reset failed: $out"
[ "$("$HYBRIDCTL" policy get "$M" archival-consumer.write)" = "archival-consumer.write=around" ] ||
	hy_fail "policy reset: $("$HYBRIDCTL" policy get "$M" archival-consumer.write)"
hy_umount "$M"

# ---- metadata priority -------------------------------------------------------
# With entry and attribute timeouts of 0 every lookup and getattr reaches
# the daemon, unless the process is metadata heavy: then the replies carry
# the table's metadata timeout (an hour here, longer than any test run), and
# a second listing finds them in the kernel's caches.
for d in meta1 meta2; do
	mkdir -p "$B/$d"
	for i in $(seq 1 100); do : >"$B/$d/f$i"; done
done
hy_mount_ready "$B" "$M" "state=$S,cache_size=256M,attr_timeout=0,entry_timeout=0"
meta_ops() { status_json | jq '.mounts[0].daemon.operations | .lookup + .getattr'; }
# listing DIR twice: how many lookups and getattrs each listing sent
listings() {
	local a b c
	a=$(meta_ops)
	ls -lR "$M/$1" >/dev/null || hy_fail "ls -lR $1 failed"
	b=$(meta_ops)
	ls -lR "$M/$1" >/dev/null || hy_fail "ls -lR $1 failed"
	c=$(meta_ops)
	echo "$((b - a)) $((c - b))"
}
"$HYBRIDCTL" policy set "$M" metadata.timeout=3600 >/dev/null || hy_fail "policy set metadata.timeout"
read -r first second <<<"$(listings meta1)"
[ "$first" -ge 100 ] || hy_fail "metadata: the first listing sent only $first lookups and getattrs"
[ "$second" -lt $((first / 4)) ] ||
	hy_fail "metadata: with priority the second listing sent $second (the first $first)"
[ "$(process ls .policy.metadata_priority)" = true ] || hy_fail "ls is not metadata heavy in status"
"$HYBRIDCTL" policy set "$M" metadata.timeout=0 >/dev/null || hy_fail "policy set metadata.timeout=0"
read -r first second <<<"$(listings meta2)"
[ "$second" -ge $((first * 3 / 4)) ] ||
	hy_fail "metadata: without priority the second listing sent $second (the first $first)"
"$HYBRIDCTL" policy reset "$M" >/dev/null || hy_fail "policy reset failed"
hy_umount "$M"

hy_pass
