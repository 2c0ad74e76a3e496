#!/bin/bash
# acl.sh - POSIX ACLs on an allow_other mount are the plain directory's
# (issue 16, finding 12). Root mounts with allow_other; every check is
# made once on the backing folder and once through the mount, and the two
# must agree.
#   named-user     a file readable by all but whose ACL denies user 65534
#                  (u:65534:---): that user cannot read it
#   named-group    the same with a group entry (g:4242:---) and a member of
#                  group 4242
#   set-through    setfacl through the mount: the backing file gets the
#                  ACL, its mode follows the ACL's mask, and getfacl through
#                  the mount shows what getfacl on the backing file shows
#   default-acl    a default ACL on a folder: files and folders made in it
#                  through the mount get the same ACLs as ones made in it
#                  in the plain folder (umask 022, as a user's shell has)
. "$(dirname "$0")/lib.sh"
hy_setup
hy_need_root
command -v setpriv >/dev/null || hy_skip "setpriv is missing (package util-linux)"
command -v setfacl >/dev/null || hy_skip "setfacl is missing (package acl)"
B=$HY_TMP/b
M=$HY_TMP/m
mkdir -p "$B" "$M"
chmod 755 "$B"
setfacl -m u:65534:r "$B" 2>/dev/null || hy_skip "the backing filesystem takes no ACLs"
setfacl -b "$B"
hy_mount "$B" "$M" -o allow_other

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
as_member() { setpriv --reuid=65534 --regid=65534 --groups=4242 -- "$@"; }

# same_result WHAT CMD... (with @ for the folder): the exit status on the
# plain folder and through the mount
same_result() {
	local what=$1 plain mnt
	shift
	"${@//@/$B}" >/dev/null 2>&1
	plain=$?
	"${@//@/$M}" >/dev/null 2>&1
	mnt=$?
	if [ "$plain" != "$mnt" ]; then
		hy_fail "$what: status $plain on the plain folder, $mnt through the mount"
	fi
	return "$plain"
}

# --- named-user
echo secret >"$B/user-denied"
chmod 644 "$B/user-denied"
setfacl -m u:65534:--- "$B/user-denied"
same_result "named-user" as_nobody cat @/user-denied &&
	hy_fail "named-user: the ACL did not deny even the plain folder (test broken?)"

# --- named-group
echo secret >"$B/group-denied"
chmod 644 "$B/group-denied"
setfacl -m g:4242:--- "$B/group-denied"
same_result "named-group" as_member cat @/group-denied &&
	hy_fail "named-group: the ACL did not deny even the plain folder (test broken?)"
# and one the ACL lets in while the mode does not
echo open >"$B/user-allowed"
chmod 600 "$B/user-allowed"
setfacl -m u:65534:r "$B/user-allowed"
same_result "named-user-allowed" as_nobody cat @/user-allowed ||
	hy_fail "named-user-allowed: the ACL did not let user 65534 read (test broken?)"

# --- set-through
echo data >"$B/set"
chmod 640 "$B/set"
if ! setfacl -m u:65534:rw "$M/set" 2>"$HY_TMP/setfacl.err"; then
	hy_fail "set-through: setfacl through the mount failed: $(cat "$HY_TMP/setfacl.err")"
else
	getfacl -cpn "$B/set" >"$HY_TMP/set.plain" 2>/dev/null
	getfacl -cpn "$M/set" >"$HY_TMP/set.mnt" 2>/dev/null
	grep -q '^user:65534:rw-' "$HY_TMP/set.plain" ||
		hy_fail "set-through: the backing file did not get the entry: $(cat "$HY_TMP/set.plain")"
	cmp -s "$HY_TMP/set.plain" "$HY_TMP/set.mnt" ||
		hy_fail "set-through: getfacl differs: plain $(tr '\n' ' ' <"$HY_TMP/set.plain"), mount $(tr '\n' ' ' <"$HY_TMP/set.mnt")"
	[ "$(stat -c %a "$B/set")" = 660 ] ||
		hy_fail "set-through: mode $(stat -c %a "$B/set") on the backing file, 660 (the mask) wanted"
	[ "$(stat -c %a "$M/set")" = "$(stat -c %a "$B/set")" ] ||
		hy_fail "set-through: mode $(stat -c %a "$M/set") through the mount, $(stat -c %a "$B/set") on the backing file"
	same_result "set-through read" as_nobody cat @/set ||
		hy_fail "set-through: user 65534 cannot read what the ACL grants"
fi

# --- default-acl
mkdir "$B/shared"
chmod 750 "$B/shared"
setfacl -d -m u:65534:rwx,g::r-x,o::--- "$B/shared"
setfacl -m u:65534:rwx "$B/shared"
(
	umask 022
	touch "$B/shared/plain-file" "$M/shared/mount-file"
	mkdir "$B/shared/plain-dir" "$M/shared/mount-dir"
)
for kind in file dir; do
	getfacl -cpn "$B/shared/plain-$kind" >"$HY_TMP/def.plain" 2>/dev/null
	getfacl -cpn "$B/shared/mount-$kind" >"$HY_TMP/def.mnt" 2>/dev/null
	grep -q '^user:65534:' "$HY_TMP/def.mnt" ||
		hy_fail "default-acl: a $kind made through the mount did not inherit the default ACL: $(tr '\n' ' ' <"$HY_TMP/def.mnt")"
	cmp -s "$HY_TMP/def.plain" "$HY_TMP/def.mnt" ||
		hy_fail "default-acl: a $kind made through the mount got $(tr '\n' ' ' <"$HY_TMP/def.mnt"), one made in the plain folder $(tr '\n' ' ' <"$HY_TMP/def.plain")"
	[ "$(stat -c %a "$B/shared/plain-$kind")" = "$(stat -c %a "$B/shared/mount-$kind")" ] ||
		hy_fail "default-acl: a $kind made through the mount has mode $(stat -c %a "$B/shared/mount-$kind"), one made in the plain folder $(stat -c %a "$B/shared/plain-$kind")"
done
same_result "default-acl write" as_nobody sh -c 'echo x >@/shared/plain-file' ||
	hy_fail "default-acl: user 65534 cannot write the file its inherited ACL grants"

hy_umount "$M"

# --- own-mount: without allow_other only the mounting user reaches the
# files, as the daemon does, so the backing filesystem checks the ACLs and
# the kernel's own checks stay off: no GETATTR before every unlink (with
# FUSE_CAP_POSIX_ACL the kernel turns on default_permissions and refreshes
# the victim's attributes first). A default ACL still gives the plain
# folder's modes (the umask is left to the backing filesystem).
M2=$HY_TMP/m2
hy_mount_ready "$B" "$M2" "state=$HY_TMP/state2"
mkdir "$M2/own"
(cd "$M2/own" && seq 1 200 | xargs touch) || hy_fail "own-mount: cannot make files"
sync
echo 2 >/proc/sys/vm/drop_caches
before=$(hy_status "$M2" '.operations.getattr')
rm -rf "$M2/own" || hy_fail "own-mount: rm -rf failed"
after=$(hy_status "$M2" '.operations.getattr')
[ $((after - before)) -lt 20 ] ||
	hy_fail "own-mount: rm of 200 files cost $((after - before)) GETATTR requests (the kernel's ACL checks are on without allow_other)"
(
	umask 022
	touch "$B/shared/plain-file2" "$M2/shared/mount-file2"
)
[ "$(stat -c %a "$B/shared/plain-file2")" = "$(stat -c %a "$B/shared/mount-file2")" ] ||
	hy_fail "own-mount: a file made in a default-ACL folder through the mount has mode $(stat -c %a "$B/shared/mount-file2"), the plain folder's $(stat -c %a "$B/shared/plain-file2")"
# callers with other umasks one after another: each gets its own (a
# worker keeps the last caller's umask and sets it only when it differs)
for u in 077 022 027 000 077; do
	(
		umask "$u"
		touch "$M2/um-f$u-$RANDOM"
		mkdir "$M2/um-d$u-$RANDOM"
	) || hy_fail "umask $u: cannot make nodes"
done
for p in "$B"/um-*; do
	u=${p##*/um-?}
	u=${u%%-*}
	case $p in */um-f*) want=$(printf '%o' $((0666 & ~8#$u))) ;; *) want=$(printf '%o' $((0777 & ~8#$u))) ;; esac
	[ "$(stat -c %a "$p")" = "$want" ] || hy_fail "umask $u: ${p##*/} has mode $(stat -c %a "$p"), not $want"
done
hy_umount "$M2"
hy_pass
