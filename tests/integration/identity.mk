# identity: the paths that change a file's data know its id after the
# kernel forgot its inode; a deep directory chain with evicted descriptors
# (issue 16, findings 3 and 7).
TESTS += tests/integration/identity.sh
EXTRA_DIST += tests/integration/identity.sh
