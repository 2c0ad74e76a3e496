# Issue 16, the cache's own changes (fallocate through the mount, the
# cleaner writing home) are not taken for changes outside the mount.
TESTS += tests/integration/cachestamp.sh
EXTRA_DIST += tests/integration/cachestamp.sh
