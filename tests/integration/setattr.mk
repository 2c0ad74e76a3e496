# setattr: attribute changes act on the object whose identity was checked,
# not on a name (a bounded rename race as another user), every kind of
# them and the xattrs still land right (issue 16, finding 11); fsync after
# a metadata change (finding 6); lseek and chown -1 -1 with the kernel's
# write-back cache (finding 17).
TESTS += tests/integration/setattr.sh
EXTRA_DIST += tests/integration/setattr.sh
check_PROGRAMS += tests/integration/hy-setattr-race
tests_integration_hy_setattr_race_SOURCES = tests/integration/hy-setattr-race.c
