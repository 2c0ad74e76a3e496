#!/bin/bash
# pin.sh - pins and excludes on real mounts (issue 19, item 5):
#   a. a pinned file's blocks stay in a small named store (2M) while four
#      times the store's size of other files is read (twice each): reading
#      it again is SSD hits only (status counters), nothing read home; a
#      reorganization places the pinned file first in the BOPT;
#   b. a remount lists the pin again (the state database's cache_rules)
#      and holds the file's blocks pinned at its first read;
#   c. bad input gets a clear error and changes nothing: a path outside
#      every mount, one that does not exist, a pin past its share of the
#      store (half), an empty, absolute or too long glob, a '[' not closed,
#      an unpin of what is not pinned;
#   d. exclude=*.o: reading a .o file adds nothing to the cache (DRAM or
#      SSD), a .c file beside it is cached, explain says "excluded" after a
#      reorganization; hybridctl exclude adds a glob
#      at run time, --remove takes it away, both kept across a remount.
# Reads use O_DIRECT so that each reaches the daemon (no page cache).
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"
export LC_ALL=C

rd() { dd if="$1" of=/dev/null bs=64K iflag=direct status=none || hy_fail "reading $1 failed"; }
# refuse NAME PATTERN COMMAND...: the command fails saying PATTERN
refuse() {
	local name=$1 pat=$2
	shift 2
	if "$@" >"$HY_TMP/$name.out" 2>&1; then
		hy_fail "$name: \"$*\" was accepted: $(cat "$HY_TMP/$name.out")"
	elif ! grep -qEi -e "$pat" "$HY_TMP/$name.out"; then
		hy_fail "$name: the refusal does not say /$pat/: $(cat "$HY_TMP/$name.out")"
	fi
}

b=$HY_TMP/b m=$HY_TMP/m s=$HY_TMP/s
mkdir -p "$b/keep" "$b/other"
head -c 512K /dev/urandom >"$b/keep/p"
for i in 0 1 2 3 4 5 6 7; do head -c 1M /dev/urandom >"$b/other/o$i"; done
head -c 1536K /dev/urandom >"$b/big"
opts="state=$s,cache=$HY_TMP/store,cache_size=2M,front_buffer=0"

# ---- a. the pin holds under four stores of other reads -----------------------
hy_mount_ready "$b" "$m" "$opts"
"$HYBRIDCTL" pin "$m/keep" >"$HY_TMP/pin.out" 2>&1 || hy_fail "a: pin failed: $(cat "$HY_TMP/pin.out")"
grep -q '^pinned: keep (1 file' "$HY_TMP/pin.out" || hy_fail "a: pin says: $(cat "$HY_TMP/pin.out")"
rd "$m/keep/p"
held=$(hy_status "$m" '.rules.held_bytes')
[ "$held" = 524288 ] || hy_fail "a: $held bytes held pinned after the first read, not 524288"
for round in 1 2; do
	for i in 0 1 2 3 4 5 6 7; do rd "$m/other/o$i"; rd "$m/other/o$i"; done
done
ev=$(hy_status "$m" '.cache.ssd_evictions')
[ "$ev" -gt 0 ] || hy_fail "a: no SSD eviction: the other reads put no pressure on the store"
h0=$(hy_status "$m" '.cache.read_hits_ssd')
m0=$(hy_status "$m" '.cache.read_misses')
rd "$m/keep/p"
h1=$(hy_status "$m" '.cache.read_hits_ssd')
m1=$(hy_status "$m" '.cache.read_misses')
[ $((h1 - h0)) = 128 ] || hy_fail "a: the pinned file's 128 blocks gave $((h1 - h0)) SSD hits"
[ "$m1" = "$m0" ] || hy_fail "a: the pinned file missed $((m1 - m0)) blocks"
hy_log "a: $ev SSD evictions; pinned file: $((h1 - h0)) SSD hits, $((m1 - m0)) misses"
# the plan: the pinned file's blocks first in the BOPT (its read region's
# block 0), though the others were read four times as often
out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 2>&1) || hy_fail "a: reorganize failed: $out"
first=$("$HYBRIDCTL" explain "$m/keep/p" --json |
	jq '[.ranges[] | .bopt_block | numbers] | min // -1')
[ "$first" = 0 ] || hy_fail "a: the pinned file starts at BOPT block $first, not 0: $(
	"$HYBRIDCTL" explain "$m/keep/p" --json)"
"$HYBRIDCTL" status "$m" >"$HY_TMP/status.out" || hy_fail "a: status failed"
grep -qi 'pinned' "$HY_TMP/status.out" || hy_fail "a: status says nothing of the pins"

# ---- c. bad input -------------------------------------------------------------
refuse outside 'outside every hybridfs mount' "$HYBRIDCTL" pin /etc/hostname
refuse missing 'no such file' "$HYBRIDCTL" pin "$m/nothing-here"
refuse cap 'passes the .* pins may hold' "$HYBRIDCTL" pin "$m/big"
refuse empty 'empty' "$HYBRIDCTL" exclude "$m" ""
refuse absolute 'absolute' "$HYBRIDCTL" exclude "$m" "/etc/*"
refuse long 'at most 1024' "$HYBRIDCTL" exclude "$m" "$(head -c 2000 /dev/zero | tr '\0' a)"
refuse bracket "never closed" "$HYBRIDCTL" exclude "$m" "*.[ch"
refuse unpinned 'not pinned' "$HYBRIDCTL" unpin "$m/other"
n=$("$HYBRIDCTL" pin --list "$m" --json | jq '.pins | length')
[ "$n" = 1 ] || hy_fail "c: $n pins after the refusals, not 1"
n=$("$HYBRIDCTL" pin --list "$m" --json | jq '.excludes | length')
[ "$n" = 0 ] || hy_fail "c: $n excludes after the refusals, not 0"
hy_umount "$m"

# ---- b. the pin after a remount ----------------------------------------------
hy_mount_ready "$b" "$m" "$opts"
p=$("$HYBRIDCTL" pin --list "$m" --json | jq -r '.pins[0].path')
[ "$p" = keep ] || hy_fail "b: after a remount the pins are: $p"
rd "$m/keep/p"
held=$(hy_status "$m" '.rules.held_bytes')
[ "$held" = 524288 ] || hy_fail "b: $held bytes held pinned after the remount's first read"
"$HYBRIDCTL" unpin "$m/keep" >/dev/null || hy_fail "b: unpin failed"
held=$(hy_status "$m" '.rules.held_bytes')
[ "$held" = 0 ] || hy_fail "b: $held bytes still held pinned after unpin"
hy_umount "$m"

# ---- d. exclude=*.o ---------------------------------------------------------------
b=$HY_TMP/bd m=$HY_TMP/md
mkdir -p "$b/src"
head -c 256K /dev/urandom >"$b/src/x.o"
head -c 256K /dev/urandom >"$b/src/x.c"
head -c 256K /dev/urandom >"$b/src/y.tmp"
hy_mount_ready "$b" "$m" "state=$HY_TMP/sd,cache=$HY_TMP/stored,cache_size=2M,front_buffer=0,exclude=*.o,build/*"
n=$(hy_status "$m" '.rules.excludes | length')
[ "$n" = 2 ] || hy_fail "d: exclude=*.o,build/* gave $n patterns"
rd "$m/src/x.o"
rd "$m/src/x.o"
used=$(hy_status "$m" '.cache.ssd_used + .cache.dram_used')
[ "$used" = 0 ] || hy_fail "d: reading x.o put $used blocks in the cache"
ex=$(hy_status "$m" '.rules.excluded_requests')
[ "$ex" -gt 0 ] || hy_fail "d: no request counted excluded"
rd "$m/src/x.c"
used=$(hy_status "$m" '.cache.ssd_used + .cache.dram_used')
[ "$used" -gt 0 ] || hy_fail "d: reading x.c cached nothing"
# and out of the plans: explain says why
out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 2>&1) || hy_fail "d: reorganize failed: $out"
why=$("$HYBRIDCTL" explain "$m/src/x.o" --json | jq -r .reason)
[ "$why" = excluded ] || hy_fail "d: explain src/x.o says $why, not excluded"
# at run time, kept across a remount
"$HYBRIDCTL" exclude "$m" '*.tmp' >/dev/null || hy_fail "d: hybridctl exclude failed"
before=$(hy_status "$m" '.cache.ssd_used + .cache.dram_used')
rd "$m/src/y.tmp"
after=$(hy_status "$m" '.cache.ssd_used + .cache.dram_used')
[ "$after" = "$before" ] || hy_fail "d: y.tmp was cached after hybridctl exclude '*.tmp'"
hy_umount "$m"
hy_mount_ready "$b" "$m" "state=$HY_TMP/sd,cache=$HY_TMP/stored,cache_size=2M,front_buffer=0"
pats=$("$HYBRIDCTL" exclude "$m" --list --json | jq -r '[.excludes[].pattern] | join(" ")')
[ "$pats" = '*.tmp' ] || hy_fail "d: after a remount without exclude= the patterns are: $pats"
# (the store keeps what the mount before cached: count what the read adds)
before=$(hy_status "$m" '.cache.ssd_used + .cache.dram_used')
rd "$m/src/y.tmp"
used=$(hy_status "$m" '.cache.ssd_used + .cache.dram_used')
[ "$used" = "$before" ] || hy_fail "d: y.tmp was cached after the remount"
"$HYBRIDCTL" exclude "$m" --remove '*.tmp' >/dev/null || hy_fail "d: exclude --remove failed"
pats=$("$HYBRIDCTL" exclude "$m" --list --json | jq -r '.excludes | length')
[ "$pats" = 0 ] || hy_fail "d: $pats patterns left after --remove"
hy_umount "$m"

hy_pass
