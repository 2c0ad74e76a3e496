# ops: each single-user POSIX operation through the mount against the same
# operation on a plain directory (hy-optest prints both, ops.sh diffs them).
check_PROGRAMS += tests/integration/hy-optest
tests_integration_hy_optest_SOURCES = tests/integration/hy-optest.c
TESTS += tests/integration/ops.sh
EXTRA_DIST += tests/integration/ops.sh
