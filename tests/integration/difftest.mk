# Differential random testing (hy-difftest: a mount against a plain
# directory) and concurrent processes on one mount (hy-concurrent).
check_PROGRAMS += tests/integration/hy-difftest tests/integration/hy-concurrent
tests_integration_hy_difftest_SOURCES = tests/integration/hy-difftest.c
tests_integration_hy_concurrent_SOURCES = tests/integration/hy-concurrent.c tests/integration/rng.h
TESTS += tests/integration/difftest.sh tests/integration/concurrency.sh
EXTRA_DIST += tests/integration/difftest.sh tests/integration/concurrency.sh
