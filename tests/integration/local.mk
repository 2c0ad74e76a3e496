# Integration tests: each mounts a real hybridfs in a temporary directory.
# Exit status 77 means skipped (no /dev/fuse, not root, tool missing).
AM_TESTS_ENVIRONMENT = HYBRIDFS=$(abs_top_builddir)/hybridfs \
	HYBRIDCTL=$(abs_top_builddir)/hybridctl \
	HY_TESTBIN=$(abs_top_builddir)/tests/integration \
	HY_SRCDIR=$(abs_top_srcdir); export HYBRIDFS HYBRIDCTL HY_TESTBIN HY_SRCDIR;
EXTRA_DIST += tests/integration/lib.sh

# The parsers' fuzz targets, a minute each (HY_FUZZ_SECONDS), listed
# early: the longest test, it runs beside the others under make -j.
TESTS += tests/fuzz/check.sh
EXTRA_DIST += tests/fuzz/check.sh

# One fragment per test family, so they can grow independently.
include tests/integration/ops.mk
include tests/integration/difftest.mk
include tests/integration/programs.mk
include tests/integration/multiuser.mk
include tests/integration/profiler.mk
include tests/integration/faults.mk
include tests/integration/damaged.mk
include tests/integration/soak.mk
include tests/integration/forgotten.mk
include tests/integration/setattr.mk
include tests/integration/identity.mk
include tests/integration/hostile_d.mk
include tests/integration/hostile_c.mk

# `hybridctl format-cache`: files only, no mount.
TESTS += tests/integration/formatcache.sh
EXTRA_DIST += tests/integration/formatcache.sh

# The SSD cache: crash consistency of write-back under kill -9 (hy-crash
# writes, fsyncs and checks), and the cache's mount options, flush, stale
# files, and store refusals (cache.sh).
check_PROGRAMS += tests/integration/hy-crash
tests_integration_hy_crash_SOURCES = tests/integration/hy-crash.c
TESTS += tests/integration/crash.sh tests/integration/cache.sh
EXTRA_DIST += tests/integration/crash.sh tests/integration/cache.sh

# Pins and excludes (issue 19, item 5): a pin holds under cache pressure
# and across remounts, exclude= keeps files out, bad input is refused.
TESTS += tests/integration/pin.sh
EXTRA_DIST += tests/integration/pin.sh
# The persistent cache: lines kept across a clean remount and a kill -9,
# files changed while unmounted read fresh (cachekeep.sh).
TESTS += tests/integration/cachekeep.sh
EXTRA_DIST += tests/integration/cachekeep.sh
# Metrics (issue 21, item 1): the Prometheus textfile (metrics=) and
# hybridctl status --format prometheus pass promtool, counters survive a
# clean remount and a kill -9 after a snapshot, windows, bad options.
TESTS += tests/integration/metrics.sh
EXTRA_DIST += tests/integration/metrics.sh

# FUSE_HANDLE_KILLPRIV_V2 (issue 20): no GETXATTR per write, and setuid,
# setgid and security.capability cleared by the daemon as the kernel would
# (killpriv.sh; a user's mount through fusermount3 too).
TESTS += tests/integration/killpriv.sh
EXTRA_DIST += tests/integration/killpriv.sh
# FUSE passthrough for excluded files (issue 20, item 3): no READ or WRITE
# request for them, dirty cache blocks home first, no stale copies after,
# refusals and the write-back cache fallback said why (passthrough.sh).
TESTS += tests/integration/passthrough.sh
EXTRA_DIST += tests/integration/passthrough.sh

# ReCA: categories of real programs, the policy table, metadata priority.
TESTS += tests/integration/reca.sh
EXTRA_DIST += tests/integration/reca.sh

# hybridctl top (issue 21, item 3): its ncurses screen in a tmux pane
# (resize, sort keys, the terminal given back on q and SIGTERM) and exited
# processes gone from batch mode's samples after one interval.
TESTS += tests/integration/top.sh
EXTRA_DIST += tests/integration/top.sh

# Long control requests off the control loop: status answers while a
# flush is held at a fault point (ctlbusy.sh; uses hy-ctlpeer).
TESTS += tests/integration/ctlbusy.sh
EXTRA_DIST += tests/integration/ctlbusy.sh

# The simulator: LRU against libCacheSim's figures in ../shared/traces
# (skipped without the traces), and bad input.
TESTS += tests/integration/simulate.sh tests/integration/simagree.sh tests/integration/tune.sh
EXTRA_DIST += tests/integration/simulate.sh tests/integration/simagree.sh \
	tests/integration/tune.sh

# BORG on a trace (hybridctl simulate --borg): phases of BORG-C and
# BORG-P on a synthetic trace made by the test, and bad options.
TESTS += tests/integration/simborg.sh
EXTRA_DIST += tests/integration/simborg.sh

# emulate=hdd: backing reads delayed by the HDD model, bad values refused.
TESTS += tests/integration/emulate.sh
EXTRA_DIST += tests/integration/emulate.sh
EXTRA_DIST += tests/fuzz/fuzz_trace_reader.c
EXTRA_DIST += tests/fuzz/run.sh
EXTRA_DIST += tests/fuzz/fuzz_options.c tests/fuzz/fuzz_control.c tests/fuzz/fuzz_cache_store.c \
	tests/fuzz/fuzz_bopt.c tests/fuzz/fuzz_common.h tests/fuzz/make_seeds.c
EXTRA_DIST += tests/fuzz/corpus

# hybridctl as one program (issue 21): --help, --json, --opt=value and --
# for every command, did you mean, exit statuses (1 for a mount whose
# daemon does not answer), the trace's class names.
TESTS += tests/integration/cli.sh
EXTRA_DIST += tests/integration/cli.sh
# The kernel's caches (issue 20.2): a second stat and a second listing
# reach the daemon zero times (status "requests"); changes through the
# mount are seen at once by another user; the cache's flush and a
# reorganization leave the kernel no stale attributes.
TESTS += tests/integration/kcache.sh
EXTRA_DIST += tests/integration/kcache.sh
# Where the daemon's messages go: log=FILE (timestamps, logrotate's rename
# and copytruncate), the state folder's hybridfs.log when no syslog takes
# them, and log= refusals (logfile.sh; issue 21, item 5).
TESTS += tests/integration/logfile.sh
EXTRA_DIST += tests/integration/logfile.sh

# A mount where a mount is: the one a killed daemon left (refused with the
# umount that clears it), a live hybridfs mount (refused without stack),
# a backing directory on one (remount.sh; issue 21, item 7).
TESTS += tests/integration/remount.sh
EXTRA_DIST += tests/integration/remount.sh

# make install DESTDIR=... puts the cron file in /etc/cron.d whatever the
# prefix (or --with-crondir's folder), the units, the helper, the pages and
# the documents where they belong, and make uninstall takes them away
# (install.sh; no mount; issue 21, item 6).
TESTS += tests/integration/install.sh
EXTRA_DIST += tests/integration/install.sh
AM_TESTS_ENVIRONMENT += HY_CRONDIR='$(crondir)' HY_CRONDIR_GIVEN='$(crondir_given)' \
	HY_UNITDIR='$(systemdsystemunitdir)' HY_MOUNTHELPERDIR='$(mounthelperdir)' \
	HY_MANDIR='$(mandir)' HY_DOCDIR='$(docdir)'; \
	export HY_CRONDIR HY_CRONDIR_GIVEN HY_UNITDIR HY_MOUNTHELPERDIR HY_MANDIR HY_DOCDIR;

# The mount's read-ahead window raised to a full request (issue 20): a
# sequential read cold in READs of 1 MiB, not 128 KiB (readahead.sh).
TESTS += tests/integration/readahead.sh
EXTRA_DIST += tests/integration/readahead.sh

# READ replies spliced from the backing file's pages where its blocks are
# home only, never where they are relocated; splice=off (splice.sh).
TESTS += tests/integration/splice.sh
EXTRA_DIST += tests/integration/splice.sh
