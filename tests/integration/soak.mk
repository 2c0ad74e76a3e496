# soak: issue 8 (reliability); see the scripts it lists.
#
# soak.sh: 32 processes of hy-soak on a write-back mount with a small cache,
# a reorganization and a line size change in the middle, a watchdog and the
# daemon's RSS sampled; then every file checked against the reference
# (HY_SOAK_SECONDS, default 30, makes it longer).
# fulldisk.sh: a full backing tmpfs, a full cache store, a full BOPT, a
# full state folder (root: tmpfs mounts).
# security.sh: socket and state folder modes, another uid refused,
# allow_other with default_permissions, control paths outside the mount,
# no file contents in the log (root for the other uid).
check_PROGRAMS += tests/integration/hy-soak
tests_integration_hy_soak_SOURCES = tests/integration/hy-soak.c tests/integration/rng.h
TESTS += tests/integration/soak.sh tests/integration/fulldisk.sh tests/integration/security.sh
EXTRA_DIST += tests/integration/soak.sh tests/integration/fulldisk.sh \
	tests/integration/security.sh
