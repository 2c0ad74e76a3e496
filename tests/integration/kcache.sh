#!/usr/bin/env bash
# The kernel's caches of names, attributes and listings (issue 20.2), by
# the requests that reach the daemon (status "fuse.requests", by opcode):
#   1. a second stat of a file, of a missing name, and a second listing
#      of a folder reach the daemon zero times (the kernel opens folders
#      itself: no OPENDIR, no RELEASEDIR); `ls -l` after a listing asks
#      no attributes (they came with readdirplus);
#   2. changes through the mount are seen at once by another user's
#      processes, whatever the kernel keeps: a new name, a rename, an
#      unlink, chmod, chown and an ACL (permissions enforced at once), a
#      hard link's count, a rename over a name whose file has another,
#      an unlinked open file, a name made where a missing one was kept;
#   3. what the daemon changes behind the kernel does not leave it stale
#      attributes: the cache's flush of a written file home, and a
#      reorganization that sends a block written into the BOPT home, each
#      move the home file's ctime, and a stat through the mount then
#      shows the home file's;
#   4. folders the kernel opens itself (opendir=kernel): a folder of
#      3,000 names, many requests long, listed plain and with attributes
#      as the backing folder has it, kept, and right after changes; each
#      listing dropped once its entries expire, and then read again, so
#      a name made behind the mount is seen; opendir=daemon still opens
#      and releases a handle per opendir(3), and so does the default
#      with entry_timeout=0;
#   5. readdirplus=always: a folder of 1,000 names listed whole and then
#      stat'ed costs no LOOKUP (the default, READDIRPLUS_AUTO, one per
#      name past the listing's first request);
#   6. files the kernel opens itself (open=kernel, the default for root):
#      200 files read twice, the second time with no request at all (no
#      OPEN, no RELEASE, no READ); an O_TRUNC open through the shell
#      truncates (it comes as a SETATTR); files made through the mount
#      are written and read back, and the backing folder has them after
#      the unmount; a removed file's backing file is closed once the
#      kernel forgets it; with few descriptors (ulimit -n 256) the least
#      recently used backing files are closed and reopened, and every
#      file still reads right; open=daemon opens and releases per open.
# Every mount keeps names and attributes for an hour, so nothing here
# depends on how fast it runs: what the kernel would keep, it keeps for
# the whole test.
. "$(dirname "$0")/lib.sh"
hy_setup
hy_need_root
command -v jq >/dev/null || hy_skip "jq is missing (scripts/test installs it)"
command -v setpriv >/dev/null || hy_skip "setpriv (util-linux) is missing"
command -v setfacl >/dev/null || hy_skip "setfacl (acl) is missing"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
bin=${HY_TESTBIN:-$(dirname "$0")}
[ -x "$bin/hy-iogen" ] || hy_die "no hy-iogen at $bin (run make check)"
long="attr_timeout=3600,entry_timeout=3600,negative_timeout=3600"

# snap: the requests so far; since OPCODE...: how many of those came after
snap() { before=$(hy_status "$m" '.fuse.requests'); }
since() {
	local now
	now=$(hy_status "$m" '.fuse.requests')
	jq -n --argjson a "$before" --argjson b "$now" "[$(printf '"%s",' "$@" | sed 's/,$//')] |
		map((\$b[.] // 0) - (\$a[.] // 0)) | add"
}
# as_nobody COMMAND...: another user, with no capabilities
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"; }

# ---- 1. what the kernel answers itself ------------------------------------
b=$HY_TMP/b m=$HY_TMP/m
mkdir -p "$b/d/sub"
echo data >"$b/f"
touch "$b/d/a" "$b/d/b" "$b/d/c"
hy_mount_ready "$b" "$m" "state=$HY_TMP/s1,allow_other,$long"
[ "$(hy_status "$m" '.fuse.requests | type')" = object ] || hy_fail "status has no requests by opcode"

stat "$m/f" >/dev/null || hy_fail "stat of f failed"
snap
stat "$m/f" >/dev/null
n=$(since lookup getattr)
[ "$n" = 0 ] || hy_fail "a second stat of f reached the daemon ($n lookups and getattrs)"

stat "$m/nothere" >/dev/null 2>&1 && hy_fail "a missing name was found"
snap
stat "$m/nothere" >/dev/null 2>&1
n=$(since lookup)
[ "$n" = 0 ] || hy_fail "a second stat of a missing name reached the daemon ($n lookups)"

ls "$m/d" >/dev/null || hy_fail "ls of d failed"
# the listing left the folder's atime to be asked again: asked here once
stat "$m/d" >/dev/null
snap
out=$(ls "$m/d")
n=$(since lookup getattr readdir readdirplus)
[ "$n" = 0 ] || hy_fail "a second listing of d reached the daemon ($n lookups, getattrs, readdirs)"
n=$(since opendir releasedir)
[ "$n" = 0 ] || hy_fail "the second listing of d sent $n OPENDIR and RELEASEDIR requests"
[ "$(hy_status "$m" '.kernel_cache.opendir')" = kernel ] ||
	hy_fail "the default mount does not let the kernel open folders"
[ "$out" = $'a\nb\nc\nsub' ] || hy_fail "the kept listing of d is wrong: $out"
snap
ls -l "$m/d" >/dev/null
n=$(since lookup getattr)
[ "$n" = 0 ] || hy_fail "ls -l after the listing asked $n entries' attributes"

# ---- 2. changes through the mount, seen at once by another user ------------
as_nobody ls "$m/d" >/dev/null || hy_fail "nobody cannot list d"
touch "$m/d/new"
out=$(as_nobody ls "$m/d" | tr '\n' ' ')
[ "$out" = "a b c new sub " ] || hy_fail "a new name is not in the kept listing: $out"
mv "$m/d/a" "$m/d/a2"
out=$(as_nobody ls "$m/d" | tr '\n' ' ')
[ "$out" = "a2 b c new sub " ] || hy_fail "after a rename the listing shows: $out"
as_nobody stat "$m/d/a" >/dev/null 2>&1 && hy_fail "the renamed name is still there"
rm "$m/d/b"
out=$(as_nobody ls "$m/d" | tr '\n' ' ')
[ "$out" = "a2 c new sub " ] || hy_fail "after an unlink the listing shows: $out"
as_nobody stat "$m/d/b" >/dev/null 2>&1 && hy_fail "the removed name is still there"

chmod 644 "$m/f"
as_nobody cat "$m/f" >/dev/null || hy_fail "nobody cannot read f (644)"
chmod 600 "$m/f"
as_nobody cat "$m/f" >/dev/null 2>&1 && hy_fail "nobody still reads f after chmod 600"
[ "$(as_nobody stat -c %a "$m/f")" = 600 ] || hy_fail "nobody sees f's old mode"
chown 65534 "$m/f"
[ "$(as_nobody stat -c %u "$m/f")" = 65534 ] || hy_fail "nobody does not see f's new owner"
as_nobody cat "$m/f" >/dev/null || hy_fail "nobody cannot read the f it now owns"
chown 0 "$m/f"
chmod 644 "$m/f"
as_nobody cat "$m/f" >/dev/null || hy_fail "nobody cannot read f (644 again)"
setfacl -m u:65534:--- "$m/f" || hy_fail "setfacl failed"
as_nobody cat "$m/f" >/dev/null 2>&1 && hy_fail "nobody still reads f after an ACL denied it"
setfacl -b "$m/f" || hy_fail "setfacl -b failed"
as_nobody cat "$m/f" >/dev/null || hy_fail "nobody cannot read f after its ACL went"

ln "$m/f" "$m/f2"
[ "$(as_nobody stat -c %h "$m/f")" = 2 ] || hy_fail "f's link count is not 2 after ln"
rm "$m/f2"
[ "$(as_nobody stat -c %h "$m/f")" = 1 ] || hy_fail "f's link count is not 1 after rm of its link"
echo x >"$m/x"
echo y >"$m/y"
ln "$m/y" "$m/z"
stat "$m/z" >/dev/null
mv "$m/x" "$m/y"
[ "$(as_nobody stat -c %h "$m/z")" = 1 ] || hy_fail "z's link count is not 1 after mv x y"
[ "$(as_nobody cat "$m/y")" = x ] || hy_fail "y is not x's file after mv x y"
[ "$(as_nobody cat "$m/z")" = y ] || hy_fail "z lost y's data"

echo open >"$m/u"
exec 3<"$m/u"
rm "$m/u"
[ "$(stat -L -c %h /proc/$$/fd/3)" = 0 ] || hy_fail "an unlinked open file still counts a link"
[ "$(cat <&3)" = open ] || hy_fail "the unlinked open file cannot be read"
exec 3<&-
as_nobody stat "$m/u" >/dev/null 2>&1 && hy_fail "the unlinked file's name is still there"

stat "$m/later" >/dev/null 2>&1 && hy_fail "later exists before it was made"
echo now >"$m/later"
[ "$(as_nobody cat "$m/later")" = now ] || hy_fail "a name made where a missing one was kept is not seen"
mkdir "$m/d/sub/deeper"
[ "$(as_nobody stat -c %h "$m/d/sub")" = 3 ] || hy_fail "a folder's link count did not follow mkdir"
rmdir "$m/d/sub/deeper"
[ "$(as_nobody stat -c %h "$m/d/sub")" = 2 ] || hy_fail "a folder's link count did not follow rmdir"
hy_umount "$m"

# ---- 3. what the daemon changes behind the kernel ------------------------
# same_ctime NAME: the mount's ctime of NAME is the home file's
same_ctime() {
	local mine home
	mine=$(stat -c %z "$m/$1") home=$(stat -c %z "$b/$1")
	[ "$mine" = "$home" ] || hy_fail "$2: the mount shows ctime $mine for $1, home has $home"
}
# the cache's flush: a write kept dirty in the store (the holder keeps the
# file open, so the cleaner leaves it), then flush sends it home and puts
# the file's time back, which moves its ctime
b=$HY_TMP/b2 m=$HY_TMP/m2
mkdir -p "$b"
head -c 64K /dev/urandom >"$b/w"
hy_mount_ready "$b" "$m" "state=$HY_TMP/s2,cache=$HY_TMP/store,cache_size=16M,cache_write=back,bopt=none,writeback_cache=off,$long"
mkfifo "$HY_TMP/go"
"$bin/hy-iogen" holder "$m/w" w:8192:4096 wait:"$HY_TMP/go" &
wpid=$!
hy_wait_status "$m" '.cache.dirty_bytes > 0'
stat "$m/w" >/dev/null
same_ctime w "before the flush"
"$HYBRIDCTL" flush "$m" >/dev/null || hy_fail "hybridctl flush failed"
[ "$(hy_status "$m" '.cache.dirty_bytes')" = 0 ] || hy_fail "the flush left dirty bytes"
same_ctime w "after the cache's flush"
echo >"$HY_TMP/go"
wait $wpid || hy_fail "the holder of w failed"
[ "$(hy_status "$m" '.kernel_cache.home_changes')" -ge 1 ] || hy_fail "no file written home was told"
hy_umount "$m"

# a reorganization: a's blocks are relocated, one of them written into
# the BOPT (dirty); a plan of c alone takes a's room, so that block goes
# home first (reorganize.sh, part 6)
specs() { local blk; for blk in "$@"; do printf 'r:%d:4096 ' $((blk * 4096)); done; }
b=$HY_TMP/b3 m=$HY_TMP/m3
mkdir -p "$b"
head -c 64K /dev/urandom >"$b/a"
head -c 64K /dev/urandom >"$b/c"
hy_mount_ready "$b" "$m" "state=$HY_TMP/s3,cache=none,bopt_size=8M,bopt_on_ssd,reorg_rate=0,writeback_cache=off,$long"
for pass in 1 2 3; do
	# shellcheck disable=SC2046
	"$bin/hy-iogen" reader "$m/a" $(specs 5 1 9) || hy_die "reading a failed"
done
"$HYBRIDCTL" reorganize "$m" --gap 3600 --always --quiet || hy_fail "the first reorganization failed"
rm -f "$HY_TMP/go" && mkfifo "$HY_TMP/go"
"$bin/hy-iogen" holder "$m/a" w:$((5 * 4096)):4096 wait:"$HY_TMP/go" &
wpid=$!
hy_wait_status "$m" '.bopt.dirty_blocks == 1'
stat "$m/a" >/dev/null
same_ctime a "before the reorganization"
for pass in 1 2 3; do
	# shellcheck disable=SC2046
	"$bin/hy-iogen" reader "$m/c" $(specs 2 7 4 11) || hy_die "reading c failed"
done
"$HYBRIDCTL" reorganize "$m" --gap 3600 --always --mode partial --quiet ||
	hy_fail "the second reorganization failed"
[ "$(hy_status "$m" '.bopt.dirty_blocks')" = 0 ] || hy_fail "the reorganization left a dirty block"
same_ctime a "after the reorganization"
echo >"$HY_TMP/go"
wait $wpid || hy_fail "the holder of a failed"
hy_umount "$m"

# ---- 4. folders the kernel opens itself ------------------------------------
# names: a folder's names, sorted; with_sizes: each name and its size
names() { ls -AU "$1" | sort; }
with_sizes() { find "$1" -mindepth 1 -maxdepth 1 -printf '%f %s %y\n' | sort; }
b=$HY_TMP/b4 m=$HY_TMP/m4
mkdir -p "$b/big"
for i in $(seq 1 3000); do printf '%*d' $((i % 97)) "$i" >"$b/big/name-number-$i"; done
hy_mount_ready "$b" "$m" "state=$HY_TMP/s4,$long"
snap
[ "$(names "$m/big")" = "$(names "$b/big")" ] || hy_fail "the plain listing of big differs from the backing's"
[ "$(since readdir readdirplus)" -ge 2 ] || hy_fail "big was listed in fewer than two requests"
[ "$(with_sizes "$m/big")" = "$(with_sizes "$b/big")" ] ||
	hy_fail "the listing of big with sizes differs from the backing's"
snap
[ "$(names "$m/big")" = "$(names "$b/big")" ] || hy_fail "the kept listing of big is wrong"
n=$(since opendir readdir readdirplus releasedir)
[ "$n" = 0 ] || hy_fail "a second listing of big sent $n requests"
for i in $(seq 1 50); do rm "$m/big/name-number-$i"; done
mkdir "$m/big/a-folder"
mv "$m/big/name-number-51" "$m/big/renamed"
[ "$(with_sizes "$m/big")" = "$(with_sizes "$b/big")" ] ||
	hy_fail "after changes through the mount the listing of big differs"
hy_umount "$m"

# each listing is dropped once its entries expire: a name made behind
# the mount right after a listing is seen once the listing is dropped
b=$HY_TMP/b5 m=$HY_TMP/m5
mkdir -p "$b/d" "$b/many"
touch "$b/d/one"
for i in $(seq 1 40); do mkdir "$b/many/s$i"; done
hy_mount_ready "$b" "$m" "state=$HY_TMP/s5,entry_timeout=1,attr_timeout=1,negative_timeout=1"
[ "$(names "$m/d")" = one ] || hy_fail "the first listing of d is wrong"
touch "$b/d/two"
hy_wait_status "$m" '.kernel_cache.listings_dropped >= 1'
# forty folders listed in turn: each listing is dropped once (the
# sweeper's heap gives every one back, in its time)
for i in $(seq 1 40); do ls "$m/many/s$i" >/dev/null || hy_fail "ls of many/s$i failed"; done
hy_wait_status "$m" '.kernel_cache.listings_dropped >= 41'
# a folder nothing changed: only the drop makes the kernel read it again
snap
ls "$m/many/s1" >/dev/null || hy_fail "ls of many/s1 failed"
[ "$(since readdir readdirplus)" -ge 1 ] || hy_fail "the dropped listing of many/s1 was kept"
snap
[ "$(names "$m/d" | tr '\n' ' ')" = "one two " ] ||
	hy_fail "a name made behind the mount is missing once the listing was dropped"
[ "$(since readdir readdirplus)" -ge 1 ] || hy_fail "the dropped listing was not read again"
hy_umount "$m"

# opendir=daemon: a handle per opendir(3), the listing still kept
b=$HY_TMP/b6 m=$HY_TMP/m6
mkdir -p "$b/d"
touch "$b/d/one"
hy_mount_ready "$b" "$m" "state=$HY_TMP/s6,opendir=daemon,$long"
[ "$(hy_status "$m" '.kernel_cache.opendir')" = daemon ] || hy_fail "opendir=daemon is not in status"
names "$m/d" >/dev/null
snap
[ "$(names "$m/d")" = one ] || hy_fail "opendir=daemon: the listing of d is wrong"
[ "$(since opendir)" = 1 ] || hy_fail "opendir=daemon: a listing did not open d once"
[ "$(since releasedir)" = 1 ] || hy_fail "opendir=daemon: a listing did not release d once"
[ "$(since readdir readdirplus)" = 0 ] || hy_fail "opendir=daemon: the listing of d was not kept"
hy_umount "$m"
# auto with entry_timeout=0, where nothing is to be kept: the daemon
hy_mount_ready "$b" "$m" "state=$HY_TMP/s7,entry_timeout=0"
[ "$(hy_status "$m" '.kernel_cache.opendir')" = daemon ] ||
	hy_fail "entry_timeout=0 left the kernel to open folders"
[ "$(names "$m/d")" = one ] || hy_fail "entry_timeout=0: the listing of d is wrong"
hy_umount "$m"

# ---- 5. readdirplus=always: a folder listed whole, then stat'ed ------------
# (every name is read before the first stat: ls ends before xargs starts)
list_then_stat() {
	(cd "$1" && ls -AU >"$HY_TMP/names" && xargs stat -c %s <"$HY_TMP/names" >/dev/null) ||
		hy_fail "stat after ls in $1 failed"
}
b=$HY_TMP/b8 m=$HY_TMP/m8
mkdir -p "$b/many"
(cd "$b/many" && seq -f 'name-%g' 1 1000 | xargs touch)
hy_mount_ready "$b" "$m" "state=$HY_TMP/s8,$long"
snap
list_then_stat "$m/many"
n=$(since lookup)
[ "$n" -ge 500 ] || hy_fail "readdirplus=auto: only $n LOOKUPs after a listing of 1,000 names (READDIRPLUS_AUTO gives the first request's attributes alone)"
hy_umount "$m"
hy_mount_ready "$b" "$m" "state=$HY_TMP/s9,readdirplus=always,$long"
[ "$(hy_status "$m" '.kernel_cache.readdirplus')" = always ] || hy_fail "readdirplus=always is not in status"
snap
list_then_stat "$m/many"
n=$(since lookup)
[ "$n" -le 1 ] || hy_fail "readdirplus=always: $n LOOKUPs after the listing of 1,000 names"
[ "$(names "$m/many" | wc -l)" = 1000 ] || hy_fail "readdirplus=always: the listing of many is not 1,000 names"
hy_umount "$m"

# ---- 6. files the kernel opens itself ----------------------------------------
b=$HY_TMP/b10 m=$HY_TMP/m10
mkdir -p "$b/src"
for i in $(seq 1 200); do echo "file $i" >"$b/src/f$i"; done
(cd "$b/src" && md5sum f*) >"$HY_TMP/sums10"
echo "old contents, longer than the new" >"$b/trunc"
echo base >"$b/grow"
hy_mount_ready "$b" "$m" "state=$HY_TMP/s10,$long"
[ "$(hy_status "$m" '.kernel_cache.open')" = kernel ] ||
	hy_fail "the default mount (root) does not let the kernel open files"
snap
cat "$m"/src/f* >/dev/null || hy_fail "reading src failed"
[ "$(since open)" -le 1 ] || hy_fail "open=kernel: reading 200 files sent $(since open) OPENs"
[ "$(since read)" = 200 ] || hy_fail "open=kernel: the first reading of 200 files sent $(since read) READs"
# (a read that reached the daemon leaves the file's atime to be asked
# again: md5sum's fstat asks it, once)
(cd "$m/src" && md5sum -c --quiet "$HY_TMP/sums10") || hy_fail "open=kernel: src reads wrong"
snap
cat "$m"/src/f* >/dev/null || hy_fail "reading src again failed"
n=$(since open release flush read lookup getattr)
[ "$n" = 0 ] || hy_fail "open=kernel: reading 200 files again sent $n requests"
echo new >"$m/trunc" || hy_fail "writing trunc through the shell failed"
[ "$(cat "$m/trunc")" = new ] || hy_fail "an O_TRUNC open did not truncate: $(cat "$m/trunc")"
[ "$(cat "$b/trunc")" = new ] || hy_fail "an O_TRUNC open did not truncate the backing file"
# read first (its backing file opened read-only), then written: made
# read-write, and the write reaches home
[ "$(cat "$m/grow")" = base ] || hy_fail "grow reads wrong"
echo appended >>"$m/grow" || hy_fail "appending to grow failed"
[ "$(cat "$m/grow")" = $'base\nappended' ] || hy_fail "grow reads wrong after the append"
[ "$(hy_status "$m" '.kernel_cache.kernel_files.made_writable')" -ge 1 ] ||
	hy_fail "no kernel file was made writable: $(hy_status "$m" '.kernel_cache.kernel_files')"
for i in 1 2 3; do echo "made $i" >"$m/made$i" || hy_fail "making made$i failed"; done
echo more >>"$m/made2"
[ "$(cat "$m/made2")" = $'made 2\nmore' ] || hy_fail "made2 reads wrong: $(cat "$m/made2")"
[ "$(hy_status "$m" '.kernel_cache.kernel_files.opened')" -ge 203 ] ||
	hy_fail "made files did not become kernel files: $(hy_status "$m" '.kernel_cache.kernel_files')"
rm "$m/made3"
hy_wait_status "$m" '.kernel_cache.kernel_files.closed_forgotten >= 1'
hy_umount "$m"
[ "$(cat "$b/made1")" = "made 1" ] && [ "$(cat "$b/made2")" = $'made 2\nmore' ] ||
	hy_fail "the backing folder lacks what was written through the mount"
[ ! -e "$b/made3" ] || hy_fail "made3 was removed through the mount, and is back"
[ "$(cat "$b/grow")" = $'base\nappended' ] || hy_fail "the append to grow did not reach home: $(cat "$b/grow")"

# few descriptors: a cap of 29 kernel files (a quarter of the 116 the
# folders may keep), so reading 200 files closes the least used ones
printf '#!/bin/sh\nexec prlimit --nofile=256:256 "%s" "$@"\n' "$HYBRIDFS" >"$HY_TMP/few-fds"
chmod +x "$HY_TMP/few-fds"
HYBRIDFS=$HY_TMP/few-fds hy_mount_ready "$b" "$m" "state=$HY_TMP/s11,$long"
cap=$(hy_status "$m" '.kernel_cache.kernel_files.cap')
[ "$cap" -lt 200 ] || hy_fail "with ulimit -n 256 the kernel files' cap is $cap"
(cd "$m/src" && md5sum -c --quiet "$HY_TMP/sums10") || hy_fail "with few descriptors src reads wrong"
[ "$(hy_status "$m" '.kernel_cache.kernel_files.closed_least_used')" -ge $((200 - cap)) ] ||
	hy_fail "the least used kernel files were not closed: $(hy_status "$m" '.kernel_cache.kernel_files')"
[ "$(hy_status "$m" '.kernel_cache.kernel_files.open_now')" -le "$cap" ] ||
	hy_fail "more kernel files open than the cap: $(hy_status "$m" '.kernel_cache.kernel_files')"
# their pages dropped, read again through reopened backing files
for f in "$m"/src/f*; do dd if="$f" iflag=nocache count=0 status=none || hy_fail "dd of $f failed"; done
(cd "$m/src" && md5sum -c --quiet "$HY_TMP/sums10") || hy_fail "reopened kernel files read wrong"
hy_umount "$m"

# open=daemon: an OPEN and a RELEASE per open(2)
hy_mount_ready "$b" "$m" "state=$HY_TMP/s12,open=daemon,$long"
[ "$(hy_status "$m" '.kernel_cache.open')" = daemon ] || hy_fail "open=daemon is not in status"
cat "$m/src/f1" >/dev/null
snap
cat "$m/src/f1" >/dev/null
[ "$(since open)" = 1 ] || hy_fail "open=daemon: a cat did not open f1 once"
hy_wait_status "$m" '.fuse.requests.release >= 2'
hy_umount "$m"
hy_pass
