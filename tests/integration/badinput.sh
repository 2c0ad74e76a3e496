#!/bin/bash
# badinput.sh - every bad command line is refused with exit status 2 and a
# message on stderr that names the problem; nothing is left mounted.
# Also --help and --version, and a state folder the daemon must not use
# (garbage database, database from a newer hybridfs, folder owned by
# someone else), which is refused with a non-zero status.
. "$(dirname "$0")/lib.sh"

hy_setup
export LC_ALL=C
B=$HY_TMP/backing
M=$HY_TMP/mnt
mkdir -p "$B" "$M"
printf 'data\n' >"$HY_TMP/afile"
mkdir -p "$M/inner" "$B/inner"
# Should the daemon wrongly mount anywhere, the trap unmounts it.
HY_MOUNTS="$M $M/inner $B/inner $B $HY_TMP/afile"

# Mount table lines (mount points) under our temp folder.
our_mounts() {
	awk -v t="$HY_TMP" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo
}

# run_daemon ARGS...: runs the daemon (not in the foreground, so a daemon
# that wrongly mounts comes back instead of serving), bounded by timeout.
# Sets RC; stdout in $HY_TMP/out, stderr in $HY_TMP/err.
run_daemon() {
	timeout 60 "$HYBRIDFS" "$@" >"$HY_TMP/out" 2>"$HY_TMP/err"
	RC=$?
}

# expect_status WANT WORD WHAT ARGS...: the daemon given ARGS exits with
# WANT ("nonzero" for any failure), stderr contains WORD (fixed string,
# case-insensitive), and no mount appeared.
expect_status() {
	local want=$1 word=$2 what=$3 after
	shift 3
	run_daemon "$@"
	if [ "$want" = nonzero ]; then
		if [ "$RC" = 0 ] || [ "$RC" = 124 ]; then
			hy_fail "$what: exit status $RC, expected a failure (args: $*)"
		fi
	elif [ "$RC" != "$want" ]; then
		hy_fail "$what: exit status $RC, expected $want (args: $*); stderr: $(cat "$HY_TMP/err")"
	fi
	if ! grep -qiF -e "$word" "$HY_TMP/err"; then
		hy_fail "$what: stderr does not mention \"$word\": $(cat "$HY_TMP/err")"
	fi
	after=$(our_mounts)
	if [ -n "$after" ]; then
		hy_fail "$what: left a mount behind: $after"
		for m in $after; do
			fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		done
	fi
}

expect_bad() { expect_status 2 "$@"; }

# ---------------------------------------------------------------- options
expect_bad frobnicate "unknown -o option" "$B" "$M" -o frobnicate
expect_bad frobnicate "unknown -o option after good ones" "$B" "$M" -o ro,frobnicate=3,noatime
expect_bad attr_timeout "attr_timeout=abc" "$B" "$M" -o attr_timeout=abc
expect_bad attr_timeout "attr_timeout=-1" "$B" "$M" -o attr_timeout=-1
expect_bad entry_timeout "entry_timeout=1e9" "$B" "$M" -o entry_timeout=1e9
expect_bad opendir "opendir=sometimes" "$B" "$M" -o opendir=sometimes
expect_bad "entry_timeout=0" "opendir=kernel without timeouts" "$B" "$M" \
	-o opendir=kernel,entry_timeout=0
expect_bad max_threads "max_threads=0" "$B" "$M" -o max_threads=0
expect_bad max_threads "max_threads=ten" "$B" "$M" -o max_threads=ten
expect_bad writeback_cache "writeback_cache=maybe" "$B" "$M" -o writeback_cache=maybe
expect_bad state "state= (empty)" "$B" "$M" -o state=
expect_bad '"-o"' "-o without a list" "$B" "$M" -o
expect_bad --bogus "unknown flag" "$B" "$M" --bogus
expect_bad '"-x"' "unknown short flag" "$B" "$M" -x

# ---------------------------------------------------------------- arguments
expect_bad missing "no arguments at all"
expect_bad MOUNTPOINT "only BACKING" "$B"
expect_bad surplus "an extra argument" "$B" "$M" "$HY_TMP/surplus"

# ---------------------------------------------------------------- paths
expect_bad nosuchbacking "missing backing directory" "$HY_TMP/nosuchbacking" "$M"
expect_bad "not a directory" "backing that is a file" "$HY_TMP/afile" "$M"
expect_bad afile "backing that is a file (names it)" "$HY_TMP/afile" "$M"
expect_bad nosuchmnt "missing mountpoint" "$B" "$HY_TMP/nosuchmnt"
expect_bad "not a directory" "mountpoint that is a file" "$B" "$HY_TMP/afile"
expect_bad afile "mountpoint that is a file (names it)" "$B" "$HY_TMP/afile"
# backing == mountpoint is a mount in place (inplace.sh)
expect_bad inside "backing inside the mountpoint" "$M/inner" "$M"
expect_bad inside "mountpoint inside the backing" "$B" "$B/inner"
expect_bad inside "state folder inside the mountpoint" "$B" "$M" -o "state=$M/inner/st"

# ---------------------------------------------------------------- mount(8) helper name
ln -s "$HYBRIDFS" "$HY_TMP/mount.hybridfs"
timeout 60 "$HY_TMP/mount.hybridfs" "$B" "$M" -o frobnicate >"$HY_TMP/out" 2>"$HY_TMP/err"
RC=$?
[ "$RC" = 2 ] || hy_fail "mount.hybridfs -o frobnicate: exit status $RC, expected 2"
grep -qF frobnicate "$HY_TMP/err" ||
	hy_fail "mount.hybridfs -o frobnicate: stderr does not name it: $(cat "$HY_TMP/err")"
[ -z "$(our_mounts)" ] || hy_fail "mount.hybridfs -o frobnicate: left a mount"
# -f is "fake" for mount(8): everything checked, nothing mounted.
timeout 60 "$HY_TMP/mount.hybridfs" "$B" "$M" -f -o "state=$HY_TMP/fakestate" \
	>"$HY_TMP/out" 2>"$HY_TMP/err"
RC=$?
[ "$RC" = 0 ] || hy_fail "mount.hybridfs -f (fake): exit status $RC: $(cat "$HY_TMP/err")"
[ -z "$(our_mounts)" ] || hy_fail "mount.hybridfs -f (fake) mounted something: $(our_mounts)"
# -s is sloppy: an unknown option is ignored (checked with -f: no mount).
timeout 60 "$HY_TMP/mount.hybridfs" "$B" "$M" -f -s -o "frobnicate,state=$HY_TMP/fakestate" \
	>"$HY_TMP/out" 2>"$HY_TMP/err"
RC=$?
[ "$RC" = 0 ] || hy_fail "mount.hybridfs -s -f -o frobnicate: exit status $RC: $(cat "$HY_TMP/err")"
# Fake mode still checks the paths: a mountpoint inside the backing
# folder is refused (the same folder twice is a mount in place, inplace.sh).
mkdir -p "$B/inner"
timeout 60 "$HY_TMP/mount.hybridfs" "$B" "$B/inner" -f >"$HY_TMP/out" 2>"$HY_TMP/err"
RC=$?
[ "$RC" = 2 ] || hy_fail "mount.hybridfs -f BACKING BACKING/inner: exit status $RC, expected 2"
rmdir "$B/inner"

# ---------------------------------------------------------------- --help, --version
run_daemon --help
[ "$RC" = 0 ] || hy_fail "--help: exit status $RC"
grep -qF 'state=' "$HY_TMP/out" || hy_fail "--help does not list state= on stdout"
[ -s "$HY_TMP/err" ] && hy_fail "--help wrote to stderr: $(cat "$HY_TMP/err")"
run_daemon -h
[ "$RC" = 0 ] || hy_fail "-h: exit status $RC"
run_daemon --version
[ "$RC" = 0 ] || hy_fail "--version: exit status $RC"
grep -qi hybridfs "$HY_TMP/out" || hy_fail "--version does not say hybridfs: $(cat "$HY_TMP/out")"
run_daemon -V
[ "$RC" = 0 ] || hy_fail "-V: exit status $RC"

# ---------------------------------------------------------------- state database
# Garbage in place of the database: refused, named, and left as it was.
G=$HY_TMP/state-garbage
mkdir -m 700 "$G"
head -c 65536 /dev/urandom >"$G/hybridfs.db"
cp "$G/hybridfs.db" "$HY_TMP/garbage.copy"
expect_status nonzero hybridfs.db "garbage state database" "$B" "$M" -o "state=$G"
expect_status nonzero "$G/hybridfs.db" "garbage state database (full path)" "$B" "$M" -o "state=$G"
cmp -s "$G/hybridfs.db" "$HY_TMP/garbage.copy" ||
	hy_fail "garbage state database: the daemon changed the file"
[ "$RC" = 2 ] && hy_log "note: garbage database gives status 2 (documented: 1)"

# A database from a newer hybridfs: made by a real mount, then bumped.
N=$HY_TMP/state-newer
hy_mount "$B" "$M" -o "state=$N"
hy_umount "$M"
if [ ! -f "$N/hybridfs.db" ]; then
	hy_fail "state=$N: no hybridfs.db created by a mount"
elif ! command -v sqlite3 >/dev/null; then
	hy_log "SKIP sub-check: newer schema (sqlite3 is missing)"
else
	sqlite3 "$N/hybridfs.db" 'PRAGMA user_version=99;' ||
		hy_die "cannot set user_version in $N/hybridfs.db"
	cp "$N/hybridfs.db" "$HY_TMP/newer.copy"
	expect_status nonzero newer "state database from a newer hybridfs" "$B" "$M" -o "state=$N"
	grep -qF "hybridfs.db" "$HY_TMP/err" ||
		hy_fail "newer database: stderr does not name the file: $(cat "$HY_TMP/err")"
	v=$(sqlite3 "$N/hybridfs.db" 'PRAGMA user_version;')
	[ "$v" = 99 ] || hy_fail "newer database: schema version changed to $v"
fi

# A state folder that belongs to someone else.
if [ "$(id -u)" = 0 ]; then
	O=$HY_TMP/state-other
	mkdir -m 700 "$O"
	chown 65534 "$O"
	expect_status nonzero "$O" "state folder owned by uid 65534" "$B" "$M" -o "state=$O"
	[ -e "$O/hybridfs.db" ] && hy_fail "state folder owned by uid 65534: a database was created in it"
	[ "$(stat -c %u "$O")" = 65534 ] || hy_fail "state folder owned by uid 65534: owner changed"
else
	hy_log "SKIP sub-check: state folder owned by another uid (needs root)"
fi

# The daemon refused all of the above before touching the backing folder.
[ -z "$(our_mounts)" ] || hy_fail "mounts left at the end: $(our_mounts)"
hy_pass
