#!/bin/bash
# statefolder.sh - the state folder cannot be swapped for a symbolic link
# while root mounts (issue 16, finding 13).
#
# The backing folder belongs to an ordinary user (nobody), who may rename
# what is in it. Root mounts it; a state folder named inside it
# (state=BACKING/.hybridfs, as the default was before issue 19), or by
# default the BOPT's hidden folder BACKING/.hybridfs, is made by root in
# the user's folder. Cases:
#   symlink-at-mount  .hybridfs is a symbolic link to a root-only folder,
#                     named by state=: the mount is refused, naming it, and
#                     nothing is made in the folder it points to.
#   swap-race         the user exchanges .hybridfs with such a link in a
#                     loop (hy-swapper) while root mounts several times:
#                     nothing is ever made in the root-only folder.
#   bopt-symlink      the same link where the default BOPT's hidden folder
#                     goes (the state folder out of the tree): the mount
#                     goes ahead without a BOPT, status says why, and
#                     nothing is made in the link's target.
#   bopt-swap-race    swap-race with the defaults: the BOPT's folder is
#                     made and used through its descriptor only.
. "$(dirname "$0")/lib.sh"
hy_setup
hy_need_root
command -v setpriv >/dev/null || hy_skip "setpriv is missing (package util-linux)"
SWAPPER=${HY_TESTBIN:-$(dirname "$0")}/hy-swapper
[ -x "$SWAPPER" ] || hy_die "no hy-swapper at $SWAPPER (run make check)"
mkdir -p "$HY_TMP/bin" && cp "$SWAPPER" "$HY_TMP/bin/" && chmod 755 "$HY_TMP/bin/hy-swapper"

B=$HY_TMP/b
M=$HY_TMP/m
SECRET=$HY_TMP/secret
mkdir -p "$B" "$M" "$SECRET"
chmod 700 "$SECRET"
chown 65534:65534 "$B"
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

# what the root-only folder holds (it must stay empty)
secret_files() { ls -A "$SECRET"; }

# try_mount [OPTIONS]: starts the daemon in the foreground; 0 once the
# mount shows, 1 when the daemon exited without mounting.
try_mount() {
	local i
	"$HYBRIDFS" "$B" "$M" -f "$@" >>"$HY_TMP/daemon.log" 2>&1 &
	HY_PID=$!
	HY_PIDS="$HY_PIDS $HY_PID"
	HY_MOUNTS="$HY_MOUNTS $M"
	for i in $(seq 1 600); do
		hy_is_mounted "$M" && return 0
		hy_exited "$HY_PID" && { wait "$HY_PID"; return 1; }
		sleep 0.05
	done
	hy_die "the daemon neither mounted nor exited in 30 s"
}

# --- symlink-at-mount
as_user ln -s "$SECRET" "$B/.hybridfs"
out=$("$HYBRIDFS" "$B" "$M" -f -o "state=$B/.hybridfs" 2>&1)
rc=$?
if [ "$rc" = 0 ] || hy_is_mounted "$M"; then
	hy_fail "symlink-at-mount: the mount went ahead with .hybridfs a symbolic link"
	hy_is_mounted "$M" && fusermount3 -u "$M"
fi
case $out in
*"$B/.hybridfs"*"symbolic link"*) ;;
*) hy_fail "symlink-at-mount: the refusal does not name the link as one: $out" ;;
esac
[ -z "$(secret_files)" ] || hy_fail "symlink-at-mount: made in the link's target: $(secret_files)"
rm -f "$B/.hybridfs"

# --- swap-race
as_user ln -s "$SECRET" "$B/.hybridfs-other"
# setpriv itself in the background (not the function as_user, whose
# subshell would be the pid killed below, leaving the swapper running)
setpriv --reuid=65534 --regid=65534 --clear-groups -- \
	"$HY_TMP/bin/hy-swapper" "$B" .hybridfs .hybridfs-other 300 >"$HY_TMP/swaps" &
swapper=$!
HY_PIDS="$HY_PIDS $swapper"
mounted=0 refused=0
for round in 1 2 3 4 5 6 7 8 9 10 11 12; do
	# state= in the user's folder, and (from round 7) the defaults: the
	# BOPT's hidden folder there
	if [ "$round" -le 6 ]; then opts=state=$B/.hybridfs,cache_size=4M,bopt_size=4M; else opts=cache_size=4M,bopt_size=4M; fi
	if try_mount -o "$opts"; then
		if fusermount3 -u "$M" 2>/dev/null; then
			wait "$HY_PID" 2>/dev/null
			mounted=$((mounted + 1))
		elif hy_is_mounted "$M"; then
			hy_umount "$M" # busy: asked again, holders named
			mounted=$((mounted + 1))
		else
			# the daemon failed after the mount came up (the folder
			# swapped under it: a late refusal) and unmounted itself
			wait "$HY_PID" 2>/dev/null
			refused=$((refused + 1))
		fi
	else
		refused=$((refused + 1))
	fi
	if [ -n "$(secret_files)" ]; then
		hy_fail "swap-race: round $round made in the root-only folder: $(secret_files)"
		break
	fi
done
kill "$swapper" 2>/dev/null
wait "$swapper" 2>/dev/null
hy_forget_pid "$swapper"
hy_log "swap-race: $mounted mounts, $refused refused"
[ -z "$(secret_files)" ] || hy_fail "swap-race: the root-only folder holds: $(secret_files)"

# --- bopt-symlink
rm -rf "$B/.hybridfs" "$B/.hybridfs-other"
as_user ln -s "$SECRET" "$B/.hybridfs"
[ -L "$B/.hybridfs" ] || hy_die "bopt-symlink: cannot make the link: $(ls -la "$B")"
HYBRIDCTL=${HYBRIDCTL:-$(dirname "$HYBRIDFS")/hybridctl}
if try_mount -o cache_size=4M,bopt_size=4M; then
	hy_wait_status "$M" '.pid != null'
	[ "$(hy_status "$M" '.bopt == null')" = true ] ||
		hy_fail "bopt-symlink: a BOPT was made through the link"
	case $(hy_status "$M" '.disks[2].why') in
	*"symbolic link"*) ;;
	*) hy_fail "bopt-symlink: status does not say why there is no BOPT: $(hy_status "$M" '.disks[2].why')" ;;
	esac
	hy_umount "$M"
else
	hy_fail "bopt-symlink: the mount was refused: $(tail -3 "$HY_TMP/daemon.log")"
fi
[ -z "$(secret_files)" ] || hy_fail "bopt-symlink: made in the link's target: $(secret_files)"
[ -L "$B/.hybridfs" ] || hy_fail "bopt-symlink: the link was replaced"

hy_pass
