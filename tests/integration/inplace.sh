#!/bin/bash
# inplace.sh - a mount in place (issue 19, item 4): `hybridfs D D` mounts
# over the directory itself. The daemon opens D before the mount and
# serves it through that descriptor; a shell that had its working
# directory and a file open in D before the mount keeps them (the plain
# directory's); unmounting leaves D as the mount left it. Cases:
#   mount       a directory with files, a background shell (started by
#               the test, killed by pid) with its cwd in D/sub and
#               D/sub/held open for appending, then `hybridfs D D`: D is
#               a mount, reads and writes go through it
#   held        the shell appends to its open file and lists its cwd: the
#               mount reads what it appended, the shell sees a file made
#               through the mount (one directory, two ways in)
#   status      hybridctl status finds the mount, names its disks
#   reorganize  when BORG is on (a BOPT), a reorganization copies, and
#               the files read the same through the mount afterwards
#   unmount     D is exactly a plain copy that went through the same
#               changes (content, types, sizes, modes compared), and of
#               hybridfs only the BOPT's hidden folder is left in it, when
#               a BOPT was made (with its .gitignore and CACHEDIR.TAG)
#   fake        mount.hybridfs D D -f (mount(8)'s check of an fstab line
#               with the same path twice) is accepted
#   legacy      a D whose .hybridfs holds an older mount's database is
#               refused in place, with a message that says to move it
. "$(dirname "$0")/lib.sh"
hy_setup
hy_need_iogen
D=$HY_TMP/d
E=$HY_TMP/plain # the same changes, made without hybridfs
mkdir -p "$D/sub/deep" "$D/empty"
printf 'alpha\n' >"$D/a"
printf 'before\n' >"$D/sub/held"
printf 'bee\n' >"$D/sub/b"
printf 'gone\n' >"$D/gone"
head -c 300000 /dev/urandom >"$D/sub/deep/big"
ln -s a "$D/link"
chmod 640 "$D/sub/b"
cp -a "$D" "$E"

# --- mount: the shell goes in first
mkfifo "$HY_TMP/cmd"
(
	cd "$D/sub" || exit 1
	exec 3>>held
	echo ready >"$HY_TMP/ready"
	while :; do
		# each read opens the fifo anew; one that opened it while the
		# last writer had not closed it yet meets that writer's end and
		# gets no line: it opens the fifo again (it is killed by pid)
		read -r cmd <"$HY_TMP/cmd" || continue
		case $cmd in
		append) echo appended >&3 ;;
		list) ls -a >"$HY_TMP/ls.out" ;;
		esac
		echo "$cmd" >>"$HY_TMP/acks"
	done
) &
HOLDER=$!
HY_PIDS="$HY_PIDS $HOLDER"
# ask CMD: the shell does CMD; returns once it has said so
ask() {
	local n i
	n=$(($(cat "$HY_TMP/acks" 2>/dev/null | wc -l) + 1))
	echo "$1" >"$HY_TMP/cmd"
	for i in $(seq 1 600); do
		[ "$(cat "$HY_TMP/acks" 2>/dev/null | wc -l)" -ge "$n" ] && return 0
		sleep 0.05
	done
	hy_fail "the shell did not do $1"
}
for i in $(seq 1 600); do [ -e "$HY_TMP/ready" ] && break; sleep 0.05; done
[ -e "$HY_TMP/ready" ] || hy_die "the shell did not start"

# attr_timeout=0: the append made beside the mount is seen at once
hy_mount_ready "$D" "$D" "writeback_cache=off,attr_timeout=0,entry_timeout=0"
hy_is_mounted "$D" || hy_fail "mount: $D is not a mount"
[ "$(cat "$D/a")" = alpha ] || hy_fail "mount: $D/a reads '$(cat "$D/a")'"
cmp -s "$D/sub/deep/big" "$E/sub/deep/big" || hy_fail "mount: $D/sub/deep/big reads otherwise"
[ "$(readlink "$D/link")" = a ] || hy_fail "mount: the link reads '$(readlink "$D/link")'"
[ -e "$D/.hybridfs" ] && hy_fail "mount: .hybridfs shows through the mount"
for t in "$D" "$E"; do
	printf 'new\n' >"$t/new"
	printf 'more\n' >>"$t/sub/b"
	mkdir "$t/newdir"
	printf 'made\n' >"$t/sub/made"
	rm "$t/gone"
	mv "$t/empty" "$t/renamed"
	chmod 600 "$t/a"
done

# --- held
ask append
printf 'appended\n' >>"$E/sub/held"
[ "$(cat "$D/sub/held")" = "$(printf 'before\nappended')" ] ||
	hy_fail "held: the mount reads '$(cat "$D/sub/held")' after the shell's append"
ask list
grep -qx made "$HY_TMP/ls.out" ||
	hy_fail "held: the shell's cwd does not show the file made through the mount: $(tr '\n' ' ' <"$HY_TMP/ls.out")"

# --- status
[ "$(hy_status "$D" .mountpoint)" = "$D" ] || hy_fail "status: mountpoint $(hy_status "$D" .mountpoint)"
[ "$(hy_status "$D" .backing)" = "$D" ] || hy_fail "status: backing $(hy_status "$D" .backing)"
[ "$(hy_status "$D" '.disks | length')" = 3 ] || hy_fail "status: no disks"
state=$(hy_status "$D" .state_dir)
case $state in "$D" | "$D"/*) hy_fail "status: the state folder $state is inside the mount" ;; esac

# --- reorganize
bopt=$(hy_status "$D" '.bopt | if . == null then "none" else "bopt" end')
if [ "$bopt" = bopt ]; then
	# named as a person knows it, not by the daemon's descriptor
	[ "$(hy_status "$D" .bopt.path)" = "$D/.hybridfs/bopt" ] ||
		hy_fail "status: the BOPT is shown as $(hy_status "$D" .bopt.path)"
	cat "$D/sub/deep/big" "$D/a" "$D/sub/b" >/dev/null
	"$HYBRIDCTL" reorganize "$D" --gap 3600 --always >"$HY_TMP/reorg.out" 2>&1 ||
		hy_fail "reorganize: $(cat "$HY_TMP/reorg.out")"
	grep -q "^reorganized " "$HY_TMP/reorg.out" ||
		hy_fail "reorganize: no summary: $(cat "$HY_TMP/reorg.out")"
	cmp -s "$D/sub/deep/big" "$E/sub/deep/big" || hy_fail "reorganize: big reads otherwise"
	[ "$(cat "$D/sub/b")" = "$(cat "$E/sub/b")" ] || hy_fail "reorganize: b reads otherwise"
else
	hy_log "reorganize: no BOPT on this disk ($(hy_status "$D" '.disks[2].why')): skipped"
fi

# --- unmount
hy_umount "$D"
hy_is_mounted "$D" && hy_fail "unmount: $D is still a mount"
kill "$HOLDER" 2>/dev/null
wait "$HOLDER" 2>/dev/null
listing() {
	(cd "$1" && find . -mindepth 1 -path ./.hybridfs -prune -o \
		-printf '%P|%y|%m|%s|%l\n' | sort)
	(cd "$1" && find . -path ./.hybridfs -prune -o -type f -print0 | sort -z |
		xargs -0 md5sum)
}
diff <(listing "$E") <(listing "$D") >"$HY_TMP/diff" ||
	hy_fail "unmount: $D differs from the plain copy: $(cat "$HY_TMP/diff")"
if [ -e "$D/.hybridfs" ]; then
	[ "$bopt" = bopt ] || hy_fail "unmount: a .hybridfs was left without a BOPT"
	left=$(cd "$D/.hybridfs" && ls -A | tr '\n' ' ')
	[ "$left" = ".gitignore CACHEDIR.TAG bopt " ] ||
		hy_fail "unmount: .hybridfs holds '$left', want the BOPT and its tags"
	grep -qx '\*' "$D/.hybridfs/.gitignore" || hy_fail "unmount: .gitignore is not '*'"
	head -1 "$D/.hybridfs/CACHEDIR.TAG" | grep -qx 'Signature: 8a477f597d28d172789f06886806bc55' ||
		hy_fail "unmount: CACHEDIR.TAG lacks the signature line"
fi
others=$(find "$D" -path "$D/.hybridfs" -prune -o -name '*hybridfs*' -print -o -name 'control.sock' -print)
[ -z "$others" ] || hy_fail "unmount: hybridfs files left in $D: $others"

# --- fake: mount(8)'s helper checks an fstab line with the same path twice
ln -s "$HYBRIDFS" "$HY_TMP/mount.hybridfs"
"$HY_TMP/mount.hybridfs" "$D" "$D" -f -o writeback_cache=off >"$HY_TMP/fake.out" 2>&1 ||
	hy_fail "fake: mount.hybridfs D D -f: $(cat "$HY_TMP/fake.out")"
hy_is_mounted "$D" && hy_fail "fake: mounted something"

# --- legacy: an older mount's state folder inside D
L=$HY_TMP/legacy
mkdir -p "$L" "$HY_TMP/lm"
echo x >"$L/f"
hy_mount_ready "$L" "$HY_TMP/lm" "state=$L/.hybridfs"
hy_umount "$HY_TMP/lm"
[ -f "$L/.hybridfs/hybridfs.db" ] || hy_die "legacy: no database made in $L/.hybridfs"
hy_mount_refused legacy "Move it out" "$L" "$L" "writeback_cache=off"
hy_is_mounted "$L" && hy_fail "legacy: mounted in place over its state folder"

hy_pass
