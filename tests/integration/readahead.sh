#!/usr/bin/env bash
# readahead.sh - the mount's read-ahead window (issue 20, item 4): a
# sequential read of a file with a cold page cache reaches the daemon in
# requests of 1 MiB, not of the kernel's default 128 KiB window:
#   1. the mount's bdi (/sys/class/bdi/MAJ:MIN, the mount's device number)
#      has read_ahead_kb 1024, or the mount's max_read where it has one
#      (1008 KiB where pipes are limited: spliced replies, splice.sh);
#   2. reading 8 MiB in 1 MiB reads, page cache dropped first, costs at
#      most 8 READ requests and a few more (the kernel's first window may
#      be split) where 128 KiB windows cost 64;
#   3. the bytes are the file's.
# Counts, not times (hybridctl status --json, .fuse.requests.read). Root:
# dropping the page cache and writing sysfs need it.
. "$(dirname "$0")/lib.sh"

hy_need_root
command -v jq >/dev/null || hy_skip "jq is missing"
command -v mountpoint >/dev/null || hy_skip "mountpoint (util-linux) is missing"
hy_setup

hy_mount "$HY_TMP/b" "$HY_TMP/m" -o profile=off,cache=none
# the mount shows before INIT is answered; a request waits for it
stat "$HY_TMP/m" >/dev/null || hy_die "cannot stat the mount"

dev=$(mountpoint -d "$HY_TMP/m") || hy_die "no device number for the mount"
ra=$(cat "/sys/class/bdi/$dev/read_ahead_kb" 2>/dev/null) || hy_die "no bdi $dev in sysfs"
want=1024
max_read=$(awk -v m="$HY_TMP/m" '$2 == m { print $4 }' /proc/mounts | tr , '\n' | sed -n 's/^max_read=//p')
[ -n "$max_read" ] && want=$((max_read / 1024))
[ "$want" -ge 512 ] || hy_fail "the mount's max_read is $max_read: reads smaller than half a MiB"
[ "$ra" -ge "$want" ] || hy_fail "the mount's read_ahead_kb is $ra, not $want"

head -c $((8 * 1048576)) /dev/urandom >"$HY_TMP/b/eight" || hy_die "cannot write the file"
sync
echo 3 >/proc/sys/vm/drop_caches || hy_skip "cannot drop the page cache"
r0=$(hy_status "$HY_TMP/m" ".fuse.requests.read // 0")
dd if="$HY_TMP/m/eight" of="$HY_TMP/copy" bs=1M status=none || hy_fail "reading the file failed"
r1=$(hy_status "$HY_TMP/m" ".fuse.requests.read // 0")
reads=$((r1 - r0))
hy_log "8 MiB read cold: $reads READ requests, read_ahead_kb $ra"
[ "$reads" -ge 1 ] || hy_fail "8 MiB read: no READ request counted (cache not dropped?)"
[ "$reads" -le 12 ] || hy_fail "8 MiB read cold took $reads READ requests (1 MiB each: about 8)"
cmp -s "$HY_TMP/b/eight" "$HY_TMP/copy" || hy_fail "the bytes read are not the file's"

hy_umount "$HY_TMP/m"
hy_pass
