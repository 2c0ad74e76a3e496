# identity: issue 16, part a (file identity and the state database).
#
# identity.sh: fsync'd data with the state folder's disk full (the rows
# cannot be committed: the data goes home), the durability of a new
# file's row at fsync (strace), the pruning of gone files' and processes'
# rows, recovery after the backing disk is renumbered, BORG's flush
# finding files by their remembered paths. Uses hy-crash (local.mk).
TESTS += tests/integration/identity.sh
EXTRA_DIST += tests/integration/identity.sh
