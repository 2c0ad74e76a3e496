# faults: issue 8 (reliability); see the scripts it lists.
#
# faults.sh: fault injection through HYBRIDFS_FAULTS (fault.h). Crash
# points (the cache journal before and after a record, the cleaner's
# write-back, a line migration, a reorganization's copy, the map journal
# before and after a record): the daemon kills itself there under
# hy-crash's writes and fsyncs; the remount recovers every fsync'd byte,
# a second one finds nothing to do, a clean unmount leaves home whole.
# Device faults: EIO on backing writes, ENOSPC on the cache store, short
# reads and writes everywhere; a bad spec refused by name. Uses hy-crash
# (local.mk) and hy-iogen (profiler.mk).
TESTS += tests/integration/faults.sh
EXTRA_DIST += tests/integration/faults.sh
