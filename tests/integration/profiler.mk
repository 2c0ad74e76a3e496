# profiler: the I/O profiler and the control socket end to end. hy-iogen
# issues known reads and writes under a known process name; hy-ctlpeer is
# a raw (and hostile) client of the control socket; profiler.sh checks the
# exported trace, `hybridctl status` and the socket's defences.
check_PROGRAMS += tests/integration/hy-iogen tests/integration/hy-ctlpeer
tests_integration_hy_iogen_SOURCES = tests/integration/hy-iogen.c
tests_integration_hy_ctlpeer_SOURCES = tests/integration/hy-ctlpeer.c
tests_integration_hy_ctlpeer_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_integration_hy_ctlpeer_LDADD = lib/libhycommon.a $(JSONC_LIBS) $(SQLITE_LIBS)
TESTS += tests/integration/profiler.sh
EXTRA_DIST += tests/integration/profiler.sh

# BORG's analyzer and planner on a real mount (hybridctl reorganize --dry-run)
TESTS += tests/integration/borg.sh
EXTRA_DIST += tests/integration/borg.sh

# BORG end to end: reorganize, explain, stale copies, racing writers, kill -9
TESTS += tests/integration/reorganize.sh
EXTRA_DIST += tests/integration/reorganize.sh

# explain per run of blocks (DRAM, SSD, BOPT, home; dirty or clean) and
# the database's full paths (issue 19)
TESTS += tests/integration/explainranges.sh
EXTRA_DIST += tests/integration/explainranges.sh

# BORG moves files whole: tails and small files in the BOPT (issue 18)
TESTS += tests/integration/wholefile.sh
EXTRA_DIST += tests/integration/wholefile.sh

# BORG's metadata warm-up when a chain of relocated files starts (issue 18)
TESTS += tests/integration/warm.sh
EXTRA_DIST += tests/integration/warm.sh

# a plan weighed on a model of the disk, held back where it saves nothing
TESTS += tests/integration/weigh.sh
EXTRA_DIST += tests/integration/weigh.sh

# plans that cannot lose: removed files' BOPT room freed, written-once files
# left out, explain's reasons
TESTS += tests/integration/gonefiles.sh
EXTRA_DIST += tests/integration/gonefiles.sh
