#!/bin/bash
# emulate.sh - emulate=hdd on a real mount: every backing read that reaches
# the disk is delayed by the HDD model's service time, so random reads cost
# the emulated disk far more than sequential ones, which the kernel's
# read-ahead serves from the page cache (checked on the model's own figures
# in status, not on the clock); the status line and bad emulate= values. Then PORE in
# the daemon (backend=smr over emulate=smr): the cleaner writes home only
# the dirty blocks of the open zones and holds the others, where without
# backend=smr it writes them all; every byte is home after the unmount.
. "$(dirname "$0")/lib.sh"

hy_need_iogen
command -v fallocate >/dev/null || hy_skip "fallocate(1) is missing (util-linux)"
hy_setup

B=$HY_TMP/backing M=$HY_TMP/mnt
mkdir -p "$B" "$M"
head -c 64M /dev/zero >"$B/data"
# written out, then out of the page cache: reads the page cache serves are
# not charged (a disk never sees them)
uncache() {
	sync "$1" && dd if="$1" iflag=nocache count=0 status=none || hy_fail "cannot drop $1 from the page cache"
}

# refused OPTION WANT...: bad values are refused before anything is
# mounted, each message naming what is wrong
refused() {
	local out
	while [ $# -ge 2 ]; do
		if out=$("$HYBRIDFS" "$B" "$M" -f -o "state=$HY_TMP/s0,$1" 2>&1); then
			hy_fail "-o $1 was accepted"
		else
			case $out in *"$2"*) ;; *) hy_fail "-o $1: the message does not name \"$2\": $out" ;; esac
		fi
		shift 2
	done
}
refused emulate=floppy floppy emulate=hdd:rpm=fast rpm emulate=hdd:colour=red colour \
	emulate= emulate

# modeled disk time of N 4 KiB O_DIRECT reads at the offsets given
modeled() {
	local state=$1 name=$2 before after
	shift 2
	uncache "$B/data"
	hy_mount_ready "$B" "$M" "state=$state,emulate=hdd,cache=none"
	"$IOGEN" "$name" "$M/data" "$@" || hy_fail "$name: the reads failed"
	"$HYBRIDCTL" status "$M" | grep -q "^emulation .*hdd: [0-9]* requests delayed" ||
		hy_fail "$name: no emulation line in status"
	after=$("$HYBRIDCTL" status "$M" --json | jq '.mounts[0].daemon.emulation')
	hy_umount "$M"
	echo "$after"
}
seq_specs=() rnd_specs=()
for i in $(seq 0 63); do
	seq_specs+=("r:$((i * 4096)):4096")
	# every 1 MiB apart, backwards: a seek and a turn each
	rnd_specs+=("r:$(((63 - i) * 1048576)):4096")
done
s=$(modeled "$HY_TMP/s1" seqreader "${seq_specs[@]}")
r=$(modeled "$HY_TMP/s2" rndreader "${rnd_specs[@]}")
sreq=$(jq .requests <<<"$s") rreq=$(jq .requests <<<"$r")
sms=$(jq .modeled_ms <<<"$s") rms=$(jq .modeled_ms <<<"$r")
hy_log "sequential: $sreq requests, $sms ms modeled; random: $rreq requests, $rms ms modeled"
# every random read reaches the disk; the sequential ones mostly find the
# kernel's read-ahead in the page cache
[ "$rreq" -ge 64 ] && [ "$sreq" -ge 1 ] && [ "$sreq" -lt "$rreq" ] ||
	hy_fail "random reads: $rreq delayed (want 64), sequential: $sreq (want 1 to $((rreq - 1)))"
# 64 seeks and half turns at 7,200 rpm are at least 64 * 4.17 ms; the
# sequential reads pay one seek, then the drive's read-ahead
awk -v s="$sms" -v r="$rms" 'BEGIN { exit !(r >= 64 * 4.1 && r > 10 * s) }' ||
	hy_fail "random reads were modeled at $rms ms, sequential at $sms ms"

# ---- PORE: backend=smr ----------------------------------------------------
refused backend=tape backend=tape pore=lru pore=lru pore_zone=4K pore_zone=4K \
	pore_open=0 pore_open=0
head -c $((16 * 4096)) /dev/urandom >"$HY_TMP/ref"
# sixteen files with dirty blocks, each its own zone on the emulated disk,
# which prices a file where the filesystem put it: each file is given 2 MiB
# of its own first (fallocate --keep-size: placed, the size left at 0), so
# with zones of 1 MiB no two share one; with 5% open one zone opens at a
# division (every pass with new writes: pore_period=4K), so however the
# cleaner's passes fall among the writes, most zones are forbidden at the
# end, and their blocks stay in the cache
# A handle of each file stays open (pore_close ends them): a last close
# sends the file's dirty blocks to the cleaner at once (session
# write-back), whose pass then divides with that one zone dirty and opens
# it, so on a slow run (the sanitizers' build beside other tests) every
# zone was cleaned in turn and none held.
pore_fds=()
pore_run() {
	local state=$1 opts=$2 i fd
	for i in $(seq 1 16); do
		: >"$B/p$i" && fallocate -n -l 2M "$B/p$i" || hy_fail "allocating p$i"
	done
	hy_mount_ready "$B" "$M" "state=$state,emulate=smr,cache_write=back,pore_zone=1M$opts"
	# each file sized first: a write past a file's end goes home at once
	# with its data, so only writes within it stay dirty in the cache
	for i in $(seq 1 16); do
		truncate -s $((i * 4096)) "$M/p$i" || hy_fail "sizing p$i"
		exec {fd}<"$M/p$i" || hy_fail "opening p$i"
		pore_fds+=("$fd")
		dd if="$HY_TMP/ref" of="$M/p$i" bs=4096 count="$i" conv=notrunc,fsync \
			status=none || hy_fail "writing p$i"
	done
}
pore_close() {
	local fd
	for fd in "${pore_fds[@]}"; do
		exec {fd}<&-
	done
	pore_fds=()
}
pore_run "$HY_TMP/s3" ",backend=smr,pore_open=5%,pore_period=4K"
[ "$(hy_status "$M" '.cache.pore.rule')" = balance ] || hy_fail "backend=smr: PORE is not on"
"$HYBRIDCTL" status "$M" | grep -q "^cache pore .*balance: " || hy_fail "no cache pore line"
# the cleaner's next pass (every 5 s) divides and holds blocks back
hy_wait_status "$M" '.cache.pore.divisions >= 1 and .cache.pore.held_blocks >= 1'
held=$(hy_status "$M" '.cache.pore.held_blocks')
backlog=$(hy_status "$M" '.cache.cleaner_backlog')
hy_log "PORE: $held blocks held back, $backlog dirty, $(hy_status "$M" '.cache.pore.dirty_zones') zones dirty"
[ "$backlog" -ge "$held" ] || hy_fail "held $held but only $backlog dirty"
for i in $(seq 1 16); do
	cmp -s <(head -c $((i * 4096)) "$HY_TMP/ref") "$M/p$i" || hy_fail "p$i reads wrong with PORE"
done
pore_close
hy_umount "$M"
for i in $(seq 1 16); do
	cmp -s <(head -c $((i * 4096)) "$HY_TMP/ref") "$B/p$i" || hy_fail "p$i is not home after unmount"
	rm -f "$B/p$i"
done
# without it the cleaner writes every block home
pore_run "$HY_TMP/s4" ""
[ "$(hy_status "$M" '.cache.pore')" = null ] || hy_fail "PORE on without backend=smr"
hy_wait_status "$M" '.cache.cleaned_blocks >= 136 and .cache.cleaner_backlog == 0'
pore_close
hy_umount "$M"
hy_pass
