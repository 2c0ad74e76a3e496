#!/usr/bin/env bash
# Plans that cannot lose (issue 18 item 5): removed files give their BOPT
# room back at once, and files written once are not planned.
#   1. the relocated blocks of a file removed through the mount (unlink,
#      rename over it) leave the map at once: status and explain count
#      them no more; a file unlinked while open keeps them until its last
#      close (its handle still reads it), then they go;
#   2. a file removed behind the mount's back is found when the next
#      reorganization is asked for, and its blocks freed;
#   3. the freed room is planned again: a new hot file fits into a BOPT
#      the removed ones filled, and explain says why each file is or is
#      not relocated (relocated, cold, removed);
#   4. a file written through the mount and read only right after its
#      write (a build output) is left out of the plan, and explain says
#      "written once"; a file read only is planned;
#   5. a removed file's BOPT block that its last close could not send home
#      (every write home fails) is discarded at the next flush;
#   6. a file renamed over while open keeps its copies for its handle (its
#      ctime moved with the rename, and its stamp follows: not taken for
#      changed behind the mount), and they go at its last close.
. "$(dirname "$0")/lib.sh"
hy_setup
hy_need_iogen

st() { hy_status "$m" "$1"; }
explain() { "$HYBRIDCTL" explain "$m/$1" --json; }
reason() { explain "$1" | jq -r .reason; }
in_bopt() { explain "$1" | jq '[.ranges[] | select(.where == "bopt") | .count] | add // 0'; }
reorganize() {
	local out
	out=$("$HYBRIDCTL" reorganize "$m" --gap 3600 2>&1) || hy_fail "reorganize failed: $out"
	[ "$(st .bopt.reorganization.phase)" = done ] || hy_fail "the reorganization is not done"
}

b=$HY_TMP/b m=$HY_TMP/m
mkdir -p "$b"
# made outside the mount: the log holds only the reads below (1 MiB each:
# 256 blocks, no partial block)
for f in a b c d e; do head -c 1M /dev/urandom >"$b/$f"; done
head -c 1M /dev/urandom >"$b/other"
(cd "$b" && md5sum e) >"$HY_TMP/sums"
# a read region of exactly 1024 blocks: a, b, c and d fill it
opts="writeback_cache=off,cache=none,state=$HY_TMP/state,bopt_size=4202496,reorg_rate=0"
hy_mount_ready "$b" "$m" "$opts"
[ "$(st .bopt.read_region_blocks)" = 1024 ] || hy_die "the read region is $(st .bopt.read_region_blocks) blocks"
# made now, empty (nothing logged), written in part 4: its inode number is
# taken before any file is removed, so it cannot be a removed file's
# number whose inode entry the kernel still holds
: >"$m/out.o"

for pass in 1 2 3; do cat "$m/a" "$m/b" "$m/c" "$m/d" >/dev/null || hy_die "reading failed"; done
reorganize
[ "$(st .bopt.map_blocks)" = 1024 ] || hy_fail "relocated $(st .bopt.map_blocks) blocks, not 1024"
[ "$(reason a)" = relocated ] || hy_fail "explain a: $(explain a)"
[ "$(reason other)" = cold ] || hy_fail "explain other: $(explain other)"

# ---- 1. removed through the mount: freed at once ------------------------
rm "$m/a"
[ "$(st .bopt.map_blocks)" = 768 ] || hy_fail "after rm: $(st .bopt.map_blocks) blocks relocated, not 768"
[ "$(st .bopt.removed_blocks)" = 256 ] || hy_fail "after rm: removed_blocks $(st .bopt.removed_blocks)"
# explain of the removed path: what its row says, no relocated block left
ex=$(explain a 2>&1)
jq -e '.reason == "removed" and .relocated_blocks == 0' <<<"$ex" >/dev/null ||
	hy_fail "explain of the removed a: $ex"
head -c 4096 /dev/urandom >"$m/new"
mv "$m/new" "$m/b"
[ "$(st .bopt.map_blocks)" = 512 ] || hy_fail "after rename over b: $(st .bopt.map_blocks) blocks, not 512"
# unlinked while open: its copies serve its handle until the last close
exec 7<"$m/c"
rm "$m/c"
[ "$(st .bopt.map_blocks)" = 512 ] || hy_fail "an open file lost its blocks at unlink"
r0=$(st .bopt.bopt_reads)
# O_DIRECT past the page cache, through a second handle of the unlinked file
dd if=/proc/self/fd/7 of=/dev/null bs=64K iflag=direct status=none ||
	hy_fail "reading the open, unlinked file failed"
[ "$(st .bopt.bopt_reads)" -gt "$r0" ] || hy_fail "the open, unlinked file was not read from the BOPT"
[ "$(st .bopt.map_blocks)" = 512 ] || hy_fail "reading the open, unlinked file dropped its blocks"
exec 7<&-
# the release follows the close's reply (RELEASE is answered first)
hy_wait_status "$m" '.bopt.removed_files == 3'
[ "$(st .bopt.map_blocks)" = 256 ] || hy_fail "after the last close: $(st .bopt.map_blocks) blocks, not 256"

# ---- 2. removed behind the mount's back: freed at the next reorganization
rm "$b/d"
[ "$(st .bopt.map_blocks)" = 256 ] || hy_fail "a removal behind the mount was seen at once?"
for pass in 1 2 3; do cat "$m/e" >/dev/null || hy_die "reading e failed"; done
reorganize
# ---- 3. the room is planned again -----------------------------------------
[ "$(in_bopt e)" = 256 ] || hy_fail "e has $(in_bopt e) blocks in the BOPT, not 256: $(explain e)"
[ "$(reason e)" = relocated ] || hy_fail "explain e: $(explain e)"
[ "$(st .bopt.map_blocks)" = 256 ] || hy_fail "after the sweep: $(st .bopt.map_blocks) blocks relocated, not 256"
[ "$(st .bopt.removed_blocks)" = 1024 ] || hy_fail "removed_blocks $(st .bopt.removed_blocks), not 1024"
(cd "$m" && md5sum -c --quiet "$HY_TMP/sums") || hy_fail "e changed"

# ---- 4. written once: not planned -------------------------------------------
# a build output: written, read back at once by its "linker", never again
head -c 512K /dev/urandom >"$m/out.o"
cat "$m/out.o" >/dev/null
cat "$m/other" "$m/other" >/dev/null
reorganize
[ "$(in_bopt out.o)" = 0 ] || hy_fail "the written-once out.o was relocated: $(explain out.o)"
[ "$(reason out.o)" = written-once ] || hy_fail "explain out.o: $(explain out.o)"
[ "$(reason other)" = relocated ] || hy_fail "explain other: $(explain other)"
hy_umount "$m"

# ---- 5. a removed file's blocks that could not go home are discarded -----
# every write home fails: a write into g's BOPT copy stays dirty at close
b=$HY_TMP/b5 m=$HY_TMP/m5
mkdir -p "$b"
head -c 1M /dev/urandom >"$b/g"
opts="writeback_cache=off,cache=none,state=$HY_TMP/state5,bopt_size=4202496,reorg_rate=0"
HYBRIDFS_FAULTS="dev=backing:op=write:err=EIO:after=0" hy_mount_ready "$b" "$m" "$opts"
for pass in 1 2 3; do cat "$m/g" >/dev/null || hy_die "reading g failed"; done
reorganize
[ "$(st .bopt.map_blocks)" = 256 ] || hy_die "g is not relocated: $(explain g)"
mkfifo "$HY_TMP/go5"
"$IOGEN" holder "$m/g" w:0:4096 wait:"$HY_TMP/go5" &
wpid=$!
hy_wait_status "$m" '.bopt.dirty_blocks == 1'
rm "$m/g"
: >"$HY_TMP/go5" # hy-iogen closes g: its dirty block cannot go home
wait "$wpid"
hy_wait_status "$m" '.bopt.removed_files == 1'
[ "$(st .bopt.map_blocks)" = 1 ] || hy_fail "after the close: $(st .bopt.map_blocks) blocks, not the dirty 1"
ex=$(explain g 2>&1) # and the profiler's mark of g is in
jq -e '.reason == "removed" and .relocated_blocks == 1' <<<"$ex" >/dev/null ||
	hy_fail "explain of the removed g: $ex"
"$HYBRIDCTL" flush "$m" >/dev/null || hy_fail "flush failed"
[ "$(st .bopt.dirty_blocks)" = 0 ] || hy_fail "the removed file's dirty block stayed: $(st .bopt.dirty_blocks)"
[ "$(st .bopt.map_blocks)" = 0 ] || hy_fail "the removed file still holds $(st .bopt.map_blocks) blocks"
hy_umount "$m"

# ---- 6. renamed over while open: its copies serve its handle -------------
b=$HY_TMP/b6 m=$HY_TMP/m6
mkdir -p "$b"
head -c 1M /dev/urandom >"$b/h"
opts="writeback_cache=off,cache=none,state=$HY_TMP/state6,bopt_size=4202496,reorg_rate=0"
hy_mount_ready "$b" "$m" "$opts"
for pass in 1 2 3; do cat "$m/h" >/dev/null || hy_die "reading h failed"; done
reorganize
[ "$(st .bopt.map_blocks)" = 256 ] || hy_die "h is not relocated: $(explain h)"
exec 8<"$m/h"
echo new >"$m/h.new"
mv "$m/h.new" "$m/h"
r0=$(st .bopt.bopt_reads)
dd if=/proc/self/fd/8 of=/dev/null bs=64K iflag=direct status=none ||
	hy_fail "reading the renamed-over file failed"
[ "$(st .bopt.bopt_reads)" -gt "$r0" ] || hy_fail "the renamed-over file was not read from the BOPT"
[ "$(st .bopt.stale_files)" = 0 ] ||
	hy_fail "the renamed-over file's copies were taken for changed behind the mount"
exec 8<&-
hy_wait_status "$m" '.bopt.removed_files == 1'
[ "$(st .bopt.map_blocks)" = 0 ] || hy_fail "after its last close h holds $(st .bopt.map_blocks) blocks"
hy_umount "$m"
hy_pass
