#!/usr/bin/env bash
# wholefile.sh - BORG moves a file whole (issue 18, item 3): its last
# partial block and files smaller than a block go to the BOPT too, and
# nothing past a file's end is ever served from there.
#   1. a 100-byte file, a 3,000-byte file and a 10,000-byte file (two whole
#      blocks and a tail) read again and again, and the first block only
#      of a 30,000-byte file: after `hybridctl reorganize` every block of
#      each, tails and the small file's unread blocks included, is in the
#      BOPT (explain), the data is unchanged, and after a remount a read of
#      them all is served from the BOPT (device counters), the BOPT read
#      ahead along them (item 4), not with bopt_readahead=0;
#   2. a write inside a relocated tail goes into the BOPT and comes home
#      at unmount; an append past the end goes home and leaves the size
#      right; a truncation up reads zeros after the old end; a truncation
#      down into a tail keeps what was written there.
. "$(dirname "$0")/lib.sh"
hy_setup
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
b=$HY_TMP/b m=$HY_TMP/m
mkdir -p "$b"
# made outside the mount, so the log holds only the reads below
head -c 100 /dev/urandom >"$b/tiny"
head -c 3000 /dev/urandom >"$b/small"
head -c 10000 /dev/urandom >"$b/tail"
head -c 30000 /dev/urandom >"$b/part"
cp "$b/part" "$HY_TMP/part.want"
cp "$b/tiny" "$HY_TMP/tiny.want"
cp "$b/small" "$HY_TMP/small.want"
cp "$b/tail" "$HY_TMP/tail.want"
opts="writeback_cache=off,cache=none,state=$HY_TMP/state,bopt_size=8M,reorg_rate=0"
hy_mount_ready "$b" "$m" "$opts"

# direct reads: every pass reaches the daemon (no page cache between)
read_all() {
	local f
	for f in tiny small tail; do
		dd if="$m/$f" of=/dev/null bs=64k iflag=direct status=none ||
			hy_fail "reading $f failed"
	done
	# a small file of which only the first block is read (a header read
	# up to what the reader wanted)
	dd if="$m/part" of=/dev/null bs=4096 count=1 iflag=direct status=none ||
		hy_fail "reading part failed"
}
for _ in 1 2 3; do read_all; done
out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 --always 2>&1) || hy_fail "reorganize failed: $out"
[ "$(hy_status "$m" '.bopt.reorganization.phase')" = done ] ||
	hy_fail "the reorganization is not done"

# where: every block of each file, its last partial one included
where() { # FILE: "bopt" when every block is in the BOPT, else the ranges
	"$HYBRIDCTL" explain "$m/$1" --json |
		jq -r 'if ([.ranges[] | select(.where == "bopt") | .count] | add) == .blocks
			then "bopt" else (.ranges | tostring) end'
}
for f in tiny small tail part; do
	got=$(where "$f")
	[ "$got" = bopt ] || hy_fail "$f is not in the BOPT whole: $got"
	cmp -s "$m/$f" "$HY_TMP/$f.want" || hy_fail "$f reads differently after reorganize"
done
# nothing past the end: sizes and a read at the end
[ "$(stat -c %s "$m/tiny")" = 100 ] || hy_fail "tiny's size changed"
[ "$(dd if="$m/tail" bs=4096 skip=2 iflag=direct status=none | wc -c)" = $((10000 - 8192)) ] ||
	hy_fail "a read of tail's last block is not 1808 bytes"
hy_umount "$m"

# after a remount, reads of all three come from the BOPT
hy_mount_ready "$b" "$m" "$opts"
r0=$(hy_status "$m" '.bopt.bopt_reads')
h0=$(hy_status "$m" '.backing_device.reads')
read_all
r1=$(hy_status "$m" '.bopt.bopt_reads')
h1=$(hy_status "$m" '.backing_device.reads')
[ $((r1 - r0)) -ge 3 ] || hy_fail "the three files took $((r1 - r0)) BOPT reads, not 3 or more"
[ "$h1" = "$h0" ] || hy_fail "reading them went home $((h1 - h0)) times"
for f in tiny small tail; do
	cmp -s "$m/$f" "$HY_TMP/$f.want" || hy_fail "$f reads differently after the remount"
done
# the plan packed them in the order they are read, so small's read starts
# where tiny's ended: a chain, and the BOPT is read ahead (item 4)
ra=$(hy_status "$m" '.bopt.readahead.requests')
[ "$ra" -ge 1 ] || hy_fail "no read-ahead along the chain: $(hy_status "$m" '.bopt.readahead')"
[ "$(hy_status "$m" '.bopt.device.prefetches')" = "$ra" ] ||
	hy_fail "the BOPT device started $(hy_status "$m" '.bopt.device.prefetches') read-aheads, not $ra"
"$HYBRIDCTL" status "$m" | grep -q "^read-ahead   1.0 MiB ahead of a chain: $ra requests" ||
	hy_fail "no read-ahead line in status: $("$HYBRIDCTL" status "$m" | grep -i ahead)"
hy_umount "$m"
# ... and with bopt_readahead=0, none
hy_mount_ready "$b" "$m" "$opts,bopt_readahead=0"
read_all
[ "$(hy_status "$m" '.bopt.readahead.requests')" = 0 ] || hy_fail "bopt_readahead=0 read ahead"
"$HYBRIDCTL" status "$m" | grep -q "^read-ahead" && hy_fail "a read-ahead line with bopt_readahead=0"

# ---- 2. changes of relocated tails ------------------------------------
# a write inside tail's last block: into the BOPT, home as it was
w0=$(hy_status "$m" '.bopt.bopt_writes')
printf 'WRITTEN' | dd of="$m/tail" bs=1 seek=9000 conv=notrunc status=none ||
	hy_fail "the write into the tail failed"
printf 'WRITTEN' | dd of="$HY_TMP/tail.want" bs=1 seek=9000 conv=notrunc status=none
[ "$(hy_status "$m" '.bopt.bopt_writes')" -gt "$w0" ] || hy_fail "the write did not go to the BOPT"
cmp -s "$m/tail" "$HY_TMP/tail.want" || hy_fail "tail reads differently after the write"
# an append: home, the size right, the last block home now
echo appended >>"$m/tail"
echo appended >>"$HY_TMP/tail.want"
[ "$(stat -c %s "$m/tail")" = "$(stat -c %s "$HY_TMP/tail.want")" ] ||
	hy_fail "tail's size after the append is $(stat -c %s "$m/tail")"
cmp -s "$m/tail" "$HY_TMP/tail.want" || hy_fail "tail reads differently after the append"
"$HYBRIDCTL" explain "$m/tail" --json | jq -e '.ranges[-1].where == "home"' >/dev/null ||
	hy_fail "tail's last block is still in the BOPT after the append"
# a truncation up: zeros after the old end (the BOPT's tail block too)
truncate -s 9000 "$m/small" && truncate -s 9000 "$HY_TMP/small.want" ||
	hy_fail "truncate up failed"
cmp -s "$m/small" "$HY_TMP/small.want" || hy_fail "small reads differently after truncate up"
# a truncation down into tiny: what is left is what was there
truncate -s 50 "$m/tiny" && truncate -s 50 "$HY_TMP/tiny.want" || hy_fail "truncate down failed"
cmp -s "$m/tiny" "$HY_TMP/tiny.want" || hy_fail "tiny reads differently after truncate down"
hy_umount "$m"
# home has it all after the unmount
for f in tiny small tail; do
	cmp -s "$b/$f" "$HY_TMP/$f.want" || hy_fail "$f at home differs after the unmount"
done
hy_pass
