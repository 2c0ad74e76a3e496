#!/bin/sh
# install.sh - `make install DESTDIR=...` puts each file where the system
# reads it, whatever the prefix (issue 21, item 6):
#   - the nightly job's cron file in /etc/cron.d (cron reads no other
#     folder; PREFIX/etc/cron.d, the old place, never ran), or in
#     --with-crondir's folder when configure was given one (distcheck
#     points it inside its prefix); nowhere else
#   - the systemd units, the mount helper, the man pages
#   - the README and the documents it names, in docdir, as laid out in
#     the source (its links hold there)
# and `make uninstall DESTDIR=...` takes every file away again.
# No mount: it needs only the build (HY_BUILDDIR and the folders, from
# make check's environment).
build=${HY_BUILDDIR:-}
if [ -z "$build" ] || [ ! -f "$build/Makefile" ]; then
	echo "install.sh: no build folder: run it from make check (HY_BUILDDIR)"
	exit 99
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hybridfs-install.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
status=0
fail() {
	echo "FAIL: $*"
	status=1
}

# the make that runs this test must not lend its jobserver or its command
# line (TESTS=...) to this one
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$build" install DESTDIR="$root" \
	>"$tmp/install.out" 2>&1; then
	cat "$tmp/install.out"
	echo "install.sh: make install DESTDIR=$root failed"
	exit 1
fi

# ---- the cron file ------------------------------------------------------------
if [ "$HY_CRONDIR_GIVEN" = yes ]; then
	want=$HY_CRONDIR
else
	want=/etc/cron.d
	[ "$HY_CRONDIR" = "$want" ] ||
		fail "configure's default cron.d folder is \"$HY_CRONDIR\", not $want (the one cron reads)"
fi
if [ -n "$want" ]; then
	cron=$root$want/hybridfs-reorganize
	if [ ! -f "$cron" ]; then
		fail "no cron file at $want/hybridfs-reorganize after make install"
	else
		grep -q '^30 3 \* \* \* root .*hybridctl reorganize --all --quiet$' "$cron" ||
			fail "$want/hybridfs-reorganize has no nightly job line"
	fi
fi
found=$(cd "$root" && find . -name 'hybridfs-reorganize*' -path '*cron*' | sed 's,^\.,,')
[ "$found" = "${want:+$want/hybridfs-reorganize}" ] ||
	fail "cron files installed at: ${found:-nowhere} (want only ${want:-none})"

# ---- units, helper, pages -------------------------------------------------
if [ -n "$HY_UNITDIR" ]; then
	for unit in hybridfs-reorganize.service hybridfs-reorganize.timer; do
		[ -f "$root$HY_UNITDIR/$unit" ] || fail "no $HY_UNITDIR/$unit"
	done
fi
# a link to the installed daemon, by its path once installed (not in DESTDIR)
helper=$root$HY_MOUNTHELPERDIR/mount.hybridfs
if [ -L "$helper" ]; then
	[ "$(readlink "$helper")" = "$HY_BINDIR/hybridfs" ] ||
		fail "$HY_MOUNTHELPERDIR/mount.hybridfs points to $(readlink "$helper"), not $HY_BINDIR/hybridfs"
else
	[ -x "$helper" ] || fail "no $HY_MOUNTHELPERDIR/mount.hybridfs"
fi
[ -x "$root$HY_BINDIR/hybridfs" ] && [ -x "$root$HY_BINDIR/hybridctl" ] ||
	fail "no hybridfs and hybridctl in $HY_BINDIR"
for page in hybridfs.8 mount.hybridfs.8 hybridctl.8; do
	[ -f "$root$HY_MANDIR/man8/$page" ] || fail "no $HY_MANDIR/man8/$page"
done

# ---- the documents --------------------------------------------------------------
for doc in README.md BENCHMARKS.md docs/architecture.md docs/reliability.md; do
	[ -s "$root$HY_DOCDIR/$doc" ] || fail "no $HY_DOCDIR/$doc"
done
# every docs/ file the README links to is there
for doc in $(grep -o 'docs/[a-z_-]*\.md' "$root$HY_DOCDIR/README.md" 2>/dev/null | sort -u); do
	[ -f "$root$HY_DOCDIR/$doc" ] || fail "the README names $doc, which is not installed"
done

# ---- uninstall ------------------------------------------------------------------
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$build" uninstall DESTDIR="$root" \
	>"$tmp/uninstall.out" 2>&1; then
	cat "$tmp/uninstall.out"
	fail "make uninstall DESTDIR=$root failed"
fi
left=$(cd "$root" && find . ! -type d | head -20)
[ -z "$left" ] || fail "make uninstall left: $left"

[ $status = 0 ] && echo "install.sh: all checks passed"
exit $status
