#!/bin/bash
# setattr.sh - attribute changes through the mount (issue 16, findings 11,
# 6 and 17):
#   1. (11) a user who can write a directory of the backing tree swaps
#      their file's name with a symlink to root's file, at home, and
#      changes their file's mode through the mount: root's file must keep
#      its mode, with the swap made before the chmod (no race: the order
#      is certain) and in a bounded race of 20,000 chmods, as the review
#      ran it;
#   2. (11) every kind of setattr and the xattrs still act on the right
#      object: chmod, chown, utimes, truncate by path, set/get/remove an
#      xattr; chown -h and touch -h of a symlink change the symlink, not
#      its target;
#   3. (6) fsync after chmod, utimes or setxattr of a write-back file
#      fsyncs the home file (strace on the daemon);
#   4. (17) with writeback_cache=on, SEEK_DATA/SEEK_HOLE of writes still
#      in the kernel's page cache answer as on a plain directory (without
#      it, the backing file's holes are still found); chown(f, -1, -1)
#      leaves the home file's ctime alone (the ctime the kernel shows with
#      writeback_cache=on is its own, as on a plain directory: logged).
. "$(dirname "$0")/lib.sh"

hy_need_root
hy_need_iogen
command -v setpriv >/dev/null || hy_skip "setpriv (util-linux) is missing"
command -v setfattr >/dev/null || hy_skip "setfattr (attr) is missing"
RACE=$HY_TESTBIN/hy-setattr-race
[ -x "$RACE" ] || hy_die "no hy-setattr-race at $RACE (run make check)"
hy_setup
umask 022

B=$HY_TMP/b M=$HY_TMP/m
mkdir -p "$HY_TMP/bin" "$B/u"
cp "$RACE" "$HY_TMP/bin/" && chmod 755 "$HY_TMP/bin"/* || hy_die "cannot copy the helper"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"; }

# ---- 1. the rename race -------------------------------------------------
echo secret >"$B/victim" && chmod 600 "$B/victim"
chown 65534:65534 "$B/u"
nobody sh -c "echo mine >'$B/u/mine' && ln -s '$B/victim' '$B/u/other'" || hy_die "cannot set up u/"
hy_mount_ready "$B" "$M" "state=$HY_TMP/s,allow_other"
# first without a race: the names swapped at home, then the chmod
out=$(nobody "$HY_TMP/bin/hy-setattr-race" "$M/u/mine" "$B/u" mine other "$B/victim" once 2>&1)
rc=$?
hy_log "1: $out"
case $rc in
0) ;;
1) hy_fail "1: after a swap of the names at home, a chmod through the mount landed on root's file: $out" ;;
*) hy_fail "1: the swap could not run (status $rc): $out" ;;
esac
chmod 600 "$B/victim"
# then the race, as the review ran it
out=$(nobody "$HY_TMP/bin/hy-setattr-race" "$M/u/mine" "$B/u" mine other "$B/victim" 20000 2>&1)
rc=$?
hy_log "1: $out"
case $rc in
0) ;;
1) hy_fail "1: a chmod through the mount landed on root's file through a swapped name: $out" ;;
*) hy_fail "1: the race could not run (status $rc): $out" ;;
esac
[ "$(stat -c %a "$B/victim")" = 600 ] || hy_fail "1: root's file is now mode $(stat -c %a "$B/victim")"

# ---- 2. every kind still acts on its object -----------------------------
f=$M/f
echo data >"$f" || hy_fail "2: cannot make $f"
chmod 640 "$f" && [ "$(stat -c %a "$B/f")" = 640 ] || hy_fail "2: chmod: the backing file is $(stat -c %a "$B/f")"
chown 65534:65534 "$f" && [ "$(stat -c %u:%g "$B/f")" = 65534:65534 ] ||
	hy_fail "2: chown: the backing file is $(stat -c %u:%g "$B/f")"
touch -m -d @1000000000 "$f" && [ "$(stat -c %Y "$B/f")" = 1000000000 ] ||
	hy_fail "2: utimes: the backing mtime is $(stat -c %Y "$B/f")"
perl -e 'truncate($ARGV[0], 3) or die "truncate: $!"' "$f" && [ "$(stat -c %s "$B/f")" = 3 ] ||
	hy_fail "2: truncate by path: the backing size is $(stat -c %s "$B/f")"
setfattr -n user.hy -v one "$f" && [ "$(getfattr --only-values -n user.hy "$B/f" 2>/dev/null)" = one ] ||
	hy_fail "2: setxattr did not reach the backing file"
[ "$(getfattr --only-values -n user.hy "$f" 2>/dev/null)" = one ] || hy_fail "2: getxattr through the mount"
getfattr -d "$f" 2>/dev/null | grep -q user.hy || hy_fail "2: listxattr through the mount"
setfattr -x user.hy "$f" && ! getfattr -n user.hy "$B/f" >/dev/null 2>&1 ||
	hy_fail "2: removexattr did not reach the backing file"
ln -s f "$M/l" || hy_fail "2: symlink failed"
before=$(stat -c %u:%Y "$B/f")
chown -h 65534:65534 "$M/l" && [ "$(stat -c %u "$B/l")" = 65534 ] ||
	hy_fail "2: chown -h: the symlink is owned by $(stat -c %u "$B/l")"
touch -h -m -d @1100000000 "$M/l" && [ "$(stat -c %Y "$B/l")" = 1100000000 ] ||
	hy_fail "2: touch -h: the symlink's mtime is $(stat -c %Y "$B/l")"
[ "$(stat -c %u:%Y "$B/f")" = "$before" ] ||
	hy_fail "2: chown -h / touch -h of the symlink changed its target ($before -> $(stat -c %u:%Y "$B/f"))"
chown root:root "$f"
# a directory too
mkdir "$M/d" && chmod 700 "$M/d" && touch -m -d @1200000000 "$M/d" &&
	[ "$(stat -c %a:%Y "$B/d")" = 700:1200000000 ] || hy_fail "2: chmod/utimes of a directory: $(stat -c %a:%Y "$B/d")"

hy_umount "$M"
[ "$HY_DAEMON_STATUS" = 0 ] || hy_fail "the daemon exited with status $HY_DAEMON_STATUS"

# ---- 3. (6) fsync after chmod / utimes of a write-back file --------------
# The daemon must fsync the home file: the cache's "home needs no sync"
# answer must count metadata changes through the mount as home changes.
# strace on the daemon counts the fsync calls on the home file within the
# window of one chmod (or utimes) and one fsync, once the cleaner has
# written the block home and an fsync has caught home up (no other sync
# of it is due then).
if command -v strace >/dev/null; then
	fsync_of() { perl -e 'use IO::Handle; open(my $f, "+<", $ARGV[0]) or die "$ARGV[0]: $!"; $f->sync or die "fsync: $!"' "$1"; }
	hy_mount_ready "$B" "$M" "state=$HY_TMP/s3,cache_write=back"
	g=$M/g
	head -c 4096 /dev/urandom >"$g" || hy_fail "3: cannot write $g"
	fsync_of "$g" || hy_fail "3: fsync failed"
	hy_wait_status "$M" '.cache.dirty_bytes == 0'
	for kind in chmod utimes xattr; do
		fsync_of "$g" || hy_fail "3: fsync failed"
		strace -f -qq -y -e trace=fsync,fdatasync -p "$HY_PID" -o "$HY_TMP/strace.$kind" 2>"$HY_TMP/strace.err" &
		spid=$!
		HY_PIDS="$HY_PIDS $spid"
		# attached once every thread is traced (strace reports none with -qq: poll
		# the tracer's status in /proc)
		for _ in $(seq 1 200); do
			n=$(grep -l "TracerPid:[[:space:]]*$spid\b" /proc/"$HY_PID"/task/*/status 2>/dev/null | wc -l)
			[ "$n" -gt 0 ] && [ "$n" = "$(ls /proc/"$HY_PID"/task | wc -l)" ] && break
			sleep 0.05
		done
		case $kind in
		chmod) chmod 604 "$g" ;;
		utimes) touch -m -d @1300000000 "$g" ;;
		xattr) setfattr -n user.hy3 -v x "$g" ;;
		esac || hy_fail "3: $kind failed"
		fsync_of "$g" || hy_fail "3: fsync after $kind failed"
		kill "$spid"
		wait "$spid" 2>/dev/null
		hy_forget_pid "$spid"
		n=$(grep -c "/b/g>" "$HY_TMP/strace.$kind")
		hy_log "3: $kind then fsync: $n fsync/fdatasync calls of the home file"
		[ "$n" -gt 0 ] ||
			hy_fail "3: fsync after $kind of a write-back file did not fsync the home file (strace: $(tr '\n' ' ' <"$HY_TMP/strace.$kind"))"
	done
	hy_umount "$M"
else
	hy_log "3: skipped: no strace"
fi

# ---- 4. (17) lseek and chown -1 -1, with the kernel's write-back cache ---
# seek FILE: writes 8 KiB through one descriptor (with writeback_cache=on
# they stay in the kernel's page cache), then prints SEEK_DATA and
# SEEK_HOLE from 0 and from 4096 (or the error)
seek() {
	perl -e 'open(my $f, "+>", $ARGV[0]) or die "$ARGV[0]: $!";
		syswrite($f, "a" x 8192) == 8192 or die "write: $!";
		for my $w ([3, 0], [4, 0], [3, 4096], [4, 4096]) {
			my $r = sysseek($f, $w->[1], $w->[0]);
			print defined $r ? ($r eq "0 but true" ? 0 : $r) : "error:$!", " ";
		}
		print "\n"' "$1"
}
# chown_nn FILE: ctime before and after chown(FILE, -1, -1), a second apart
chown_nn() {
	perl -e 'my @s = stat($ARGV[0]) or die "$ARGV[0]: $!"; select(undef, undef, undef, 1.1);
		chown(-1, -1, $ARGV[0]) or die "chown: $!"; my @t = stat($ARGV[0]); print "$s[10] $t[10]\n"' "$1"
}
mkdir -p "$HY_TMP/native"
want=$(seek "$HY_TMP/native/s")
for wb in on off; do
	hy_mount_ready "$B" "$M" "state=$HY_TMP/s4$wb,writeback_cache=$wb,cache_write=back"
	got=$(seek "$M/s$wb")
	[ "$got" = "$want" ] ||
		hy_fail "4: writeback_cache=$wb: SEEK_DATA/SEEK_HOLE of fresh writes: $got, on a plain directory $want"
	# holes the backing filesystem has are still found without the
	# kernel's write-back cache
	if [ "$wb" = off ]; then
		perl -e 'open(my $f, "+>", $ARGV[0]) or die; syswrite($f, "b" x 4096);
			sysseek($f, 1 << 20, 0); syswrite($f, "b" x 4096); my $h = sysseek($f, 0, 4);
			print "$h\n"' "$M/holes" >"$HY_TMP/hole"
		[ "$(cat "$HY_TMP/hole")" = 4096 ] ||
			hy_fail "4: writeback_cache=off: SEEK_HOLE of a sparse file is $(cat "$HY_TMP/hole"), not 4096"
	fi
	# chown -1 -1 changes nothing at home: the daemon is asked for no
	# owner change and makes none
	echo x >"$M/c$wb"
	read -r home_before _ < <(stat -c '%Z x' "$B/c$wb")
	read -r c1 c2 < <(chown_nn "$M/c$wb")
	home_after=$(stat -c %Z "$B/c$wb")
	hy_log "4: writeback_cache=$wb: chown(-1, -1): ctime through the mount $c1 -> $c2, at home $home_before -> $home_after"
	[ "$home_after" = "$home_before" ] ||
		hy_fail "4: writeback_cache=$wb: chown(-1, -1) moved the home file's ctime ($home_before -> $home_after)"
	[ "$wb" = on ] || [ "$c1" = "$c2" ] ||
		hy_fail "4: writeback_cache=$wb: chown(-1, -1) moved the ctime through the mount ($c1 -> $c2)"
	hy_umount "$M"
done
read -r c1 c2 < <(echo x >"$HY_TMP/native/c" && chown_nn "$HY_TMP/native/c")
hy_log "4: on a plain directory chown(-1, -1) moves the ctime $c1 -> $c2 (Linux)"
hy_pass
