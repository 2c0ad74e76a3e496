#!/usr/bin/env bash
# passthrough.sh - FUSE passthrough for excluded files (issue 20, item 3;
# fs/passthrough.c, fs/fuse_channel.c): with passthrough=excluded the
# kernel reads and writes an excluded file's backing file itself.
#   a. exclude=*.bin: writes and reads of a .bin file add no READ or WRITE
#      request (hybridctl status --json, .fuse.requests) and give the
#      backing file's data; a .txt file beside it still goes through the
#      daemon;
#   b. cache_write=back: a file with dirty blocks in the cache, excluded
#      later (hybridctl exclude), is opened through the kernel with its
#      dirty blocks written home first: no stale read, at home either;
#   c. a file read through the daemon (cached), then written through the
#      kernel, then opened through the daemon again reads the new data
#      (the cache's and the kernel's old copies are gone);
#   d. an excluded file with a handle open through the daemon is served by
#      the daemon (refused, counted, said why), with the right data;
#   e. writeback_cache=on: no passthrough, status says why, the data goes
#      through the daemon.
# Skips where the kernel does not offer FUSE_PASSTHROUGH (before 6.9).
# Needs root (the kernel takes backing files from CAP_SYS_ADMIN only).
. "$(dirname "$0")/lib.sh"

hy_need_root
HYBRIDCTL=${HYBRIDCTL:-$(cd "$(dirname "$0")/../.." && pwd)/hybridctl}
[ -x "$HYBRIDCTL" ] || hy_die "no hybridctl at $HYBRIDCTL (run make first)"
command -v jq >/dev/null || hy_skip "jq is missing"
hy_setup

# req MOUNT OPCODE: requests of OPCODE the daemon has read
req() { hy_status "$1" ".fuse.requests.$2 // 0"; }
# io MOUNT: READ and WRITE requests so far, as "R W"
io() { echo "$(req "$1" read) $(req "$1" write)"; }
# pt MOUNT FIELD: a field of .fuse.passthrough_files
pt() { hy_status "$1" ".fuse.passthrough_files.$2"; }
# all_cached MOUNT: every category in write-back, sequential reads and
# writes admitted, so that dd's writes stay dirty and reads are cached (as
# cachestamp.sh does)
all_cached() {
	local args="" c
	for c in unknown random-consumer random-producer-consumer sequential-producer-consumer \
		archival-consumer large-file-generator; do
		args="$args $c.write=back $c.admit.write.sequential=normal $c.admit.read.sequential=normal"
		args="$args $c.seq_cutoff=mount"
	done
	# shellcheck disable=SC2086
	"$HYBRIDCTL" policy set "$1" $args >/dev/null
}

# ---- a. excluded files do not reach the daemon --------------------------

b=$HY_TMP/ba m=$HY_TMP/ma
hy_mount_ready "$b" "$m" "state=$HY_TMP/sa,passthrough=excluded,exclude=*.bin"
if [ "$(hy_status "$m" .fuse.passthrough)" != true ]; then
	why=$(hy_status "$m" .fuse.passthrough_why)
	case $why in
	*"does not offer"*) hy_skip "the kernel does not offer FUSE_PASSTHROUGH: $why" ;;
	esac
	hy_die "passthrough=excluded as root: not in force: $why"
fi
head -c 3M /dev/urandom >"$HY_TMP/ref" || hy_die "cannot make the reference data"
before=$(io "$m")
dd if="$HY_TMP/ref" of="$m/x.bin" bs=1M status=none || hy_fail "a: writing x.bin failed"
cmp -s "$HY_TMP/ref" "$b/x.bin" || hy_fail "a: the backing x.bin differs from what was written"
cmp -s "$HY_TMP/ref" "$m/x.bin" || hy_fail "a: x.bin read through the mount differs"
dd if="$m/x.bin" of=/dev/null bs=4K iflag=direct status=none || hy_fail "a: O_DIRECT read failed"
# a write in the middle, then read back through the mount and at home
printf 'MIDDLE' | dd of="$m/x.bin" bs=1 seek=100000 conv=notrunc status=none ||
	hy_fail "a: the write in the middle failed"
printf 'MIDDLE' | dd of="$HY_TMP/ref" bs=1 seek=100000 conv=notrunc status=none
cmp -s "$HY_TMP/ref" "$m/x.bin" || hy_fail "a: x.bin differs after the write in the middle"
cmp -s "$HY_TMP/ref" "$b/x.bin" || hy_fail "a: the backing x.bin differs after the write in the middle"
after=$(io "$m")
[ "$after" = "$before" ] ||
	hy_fail "a: x.bin reached the daemon: READ WRITE before $before, after $after"
[ "$(pt "$m" opened)" -ge 1 ] || hy_fail "a: no open counted as passthrough"
[ "$(stat -c %s "$m/x.bin")" = "$(stat -c %s "$HY_TMP/ref")" ] ||
	hy_fail "a: the mount shows size $(stat -c %s "$m/x.bin") for x.bin"
# a file that is not excluded still goes through the daemon
dd if="$HY_TMP/ref" of="$m/y.txt" bs=1M status=none && cat "$m/y.txt" >/dev/null ||
	hy_fail "a: y.txt failed"
read -r r0 w0 <<<"$after"
read -r r1 w1 <<<"$(io "$m")"
[ $((w1 - w0)) -ge 3 ] || hy_fail "a: y.txt: $((w1 - w0)) WRITE requests for 3 MiB"
cmp -s "$HY_TMP/ref" "$b/y.txt" || hy_fail "a: the backing y.txt differs"
hy_log "a: x.bin: READ WRITE $before -> $after; y.txt: $((w1 - w0)) WRITE, $((r1 - r0)) READ"
[ "$(pt "$m" open_now)" = 0 ] || hy_fail "a: $(pt "$m" open_now) backing ids still open after close"
hy_umount "$m"

# ---- b. dirty cache blocks go home before the kernel reads home ---------
# The cleaner would send them home soon after their file's close; it is
# held instead at a fault point (fault.h, stall=FIFO) on another file,
# s.dat, with its lock, so d.dat's blocks stay dirty for as long as the
# test needs, with no timing in it.

b=$HY_TMP/bb m=$HY_TMP/mb stall=$HY_TMP/stall held=0
release() {
	if [ "$held" = 1 ]; then
		exec 4>&-
		held=0
	fi
}
trap 'rc=$?; release; (exit $rc); hy_cleanup' EXIT
mkdir -p "$b" && mkfifo "$stall" || hy_die "cannot make b's folder and FIFO"
head -c 1M /dev/urandom >"$HY_TMP/old" && head -c 1M /dev/urandom >"$HY_TMP/new" ||
	hy_die "cannot make b's data"
cp "$HY_TMP/old" "$b/d.dat" && cp "$HY_TMP/old" "$b/s.dat" || hy_die "cannot make d.dat"
HYBRIDFS_FAULTS="point=cache.clean.mid:nth=1:stall=$stall" hy_mount_ready "$b" "$m" \
	"state=$HY_TMP/sb,passthrough=excluded,cache_write=back"
all_cached "$m" || hy_fail "b: hybridctl policy set failed"
# within the files' sizes: kept dirty in the cache (an extending write
# goes home at once); s.dat's close wakes the cleaner, which stops at its
# second block; the open of the FIFO returns once it is there
dd if="$HY_TMP/new" of="$m/s.dat" bs=64K conv=notrunc status=none || hy_fail "b: writing s.dat failed"
exec 4>"$stall"
held=1
dd if="$HY_TMP/new" of="$m/d.dat" bs=64K conv=notrunc status=none 4>&- ||
	hy_fail "b: writing d.dat failed"
dirty=$(hy_status "$m" .cache.dirty_bytes 4>&-)
[ "$dirty" -gt $((1024 * 1024)) ] || hy_fail "b: only $dirty bytes dirty: d.dat's writes are not in the cache"
cmp -s "$HY_TMP/old" "$b/d.dat" || hy_fail "b: d.dat's writes went home with the cleaner held"
"$HYBRIDCTL" exclude "$m" '*.dat' >/dev/null 4>&- || hy_fail "b: hybridctl exclude failed"
opened=$(pt "$m" opened 4>&-)
r0=$(req "$m" read 4>&-)
cmp -s "$HY_TMP/new" "$m/d.dat" ||
	hy_fail "b: d.dat read through the kernel is not what was written (its dirty blocks did not go home first)"
[ "$(req "$m" read 4>&-)" = "$r0" ] || hy_fail "b: d.dat's read reached the daemon"
[ "$(pt "$m" opened 4>&-)" -gt "$opened" ] || hy_fail "b: d.dat was not opened through the kernel"
cmp -s "$HY_TMP/new" "$b/d.dat" || hy_fail "b: the backing d.dat lacks the written data"
hy_log "b: $dirty bytes dirty, d.dat's went home before its passthrough open"
release
hy_umount "$m"
cmp -s "$HY_TMP/new" "$b/s.dat" || hy_fail "b: s.dat's writes did not reach home by the unmount"

# ---- c. no stale copy after writes through the kernel -------------------

b=$HY_TMP/bc m=$HY_TMP/mc
mkdir -p "$b"
cp "$HY_TMP/old" "$b/e.dat" || hy_die "cannot make e.dat"
hy_mount_ready "$b" "$m" "state=$HY_TMP/sc,passthrough=excluded,cache_write=through"
all_cached "$m" || hy_fail "c: hybridctl policy set failed"
# through the daemon, twice: cached (DRAM or SSD) and in the kernel's pages
cat "$m/e.dat" "$m/e.dat" >/dev/null || hy_fail "c: reading e.dat failed"
used=$(hy_status "$m" '.cache.dram_used + .cache.ssd_used')
[ "$used" -gt 0 ] || hy_fail "c: reading e.dat cached nothing: nothing to test"
"$HYBRIDCTL" exclude "$m" '*.dat' >/dev/null || hy_fail "c: hybridctl exclude failed"
w0=$(req "$m" write)
dd if="$HY_TMP/new" of="$m/e.dat" bs=64K conv=notrunc status=none || hy_fail "c: writing e.dat failed"
[ "$(req "$m" write)" = "$w0" ] || hy_fail "c: e.dat's writes reached the daemon"
"$HYBRIDCTL" exclude "$m" --remove '*.dat' >/dev/null || hy_fail "c: exclude --remove failed"
r0=$(req "$m" read)
cmp -s "$HY_TMP/new" "$m/e.dat" ||
	hy_fail "c: e.dat opened through the daemon after writes through the kernel reads old data"
[ "$(req "$m" read)" -gt "$r0" ] || hy_fail "c: e.dat's last read did not go through the daemon"
hy_umount "$m"

# ---- d. another handle open through the daemon: refused, said why -------

b=$HY_TMP/bd m=$HY_TMP/md
mkdir -p "$b"
cp "$HY_TMP/old" "$b/h.dat" || hy_die "cannot make h.dat"
hy_mount_ready "$b" "$m" "state=$HY_TMP/sd,passthrough=excluded"
exec 3<"$m/h.dat" || hy_die "d: cannot open h.dat"
"$HYBRIDCTL" exclude "$m" '*.dat' >/dev/null || hy_fail "d: hybridctl exclude failed"
r0=$(req "$m" read)
cmp -s "$HY_TMP/old" "$m/h.dat" || hy_fail "d: h.dat read wrong while another handle is open"
exec 3<&-
[ "$(req "$m" read)" -gt "$r0" ] || hy_fail "d: h.dat went through the kernel beside a handle through the daemon"
[ "$(pt "$m" refused.other_handles)" -ge 1 ] || hy_fail "d: the refusal was not counted"
case $(pt "$m" last_refusal) in
*"other handle"*) ;;
*) hy_fail "d: the status does not say why: $(pt "$m" last_refusal)" ;;
esac
# once it is closed, the next open goes through the kernel
r0=$(req "$m" read)
cmp -s "$HY_TMP/old" "$m/h.dat" || hy_fail "d: h.dat read wrong"
[ "$(req "$m" read)" = "$r0" ] || hy_fail "d: h.dat's read reached the daemon after the other handle closed"
hy_umount "$m"

# ---- e. the fallback: the kernel's write-back cache ---------------------

b=$HY_TMP/be m=$HY_TMP/me
hy_mount_ready "$b" "$m" "state=$HY_TMP/se,passthrough=excluded,exclude=*.bin,writeback_cache=on"
[ "$(hy_status "$m" .fuse.passthrough)" = false ] ||
	hy_fail "e: passthrough in force with writeback_cache=on"
case $(hy_status "$m" .fuse.passthrough_why) in
*writeback_cache*) ;;
*) hy_fail "e: the status does not say why there is no passthrough: $(hy_status "$m" .fuse.passthrough_why)" ;;
esac
w0=$(req "$m" write)
dd if="$HY_TMP/ref" of="$m/z.bin" bs=1M conv=fsync status=none && cmp -s "$HY_TMP/ref" "$m/z.bin" ||
	hy_fail "e: z.bin through the daemon differs"
[ "$(req "$m" write)" -gt "$w0" ] || hy_fail "e: z.bin's writes did not reach the daemon"
grep -q "no passthrough" "$HY_TMP/daemon.log" || hy_fail "e: the daemon did not log why there is no passthrough"
hy_umount "$m"
hy_pass
