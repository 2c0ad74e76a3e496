# forgotten: the paths that change a file's data know its id after the
# kernel forgot its inode (issue 16, finding 3); a directory chain deeper
# than a path, with the daemon's descriptors of it evicted (finding 7).
TESTS += tests/integration/forgotten.sh tests/integration/deepdir.sh
EXTRA_DIST += tests/integration/forgotten.sh tests/integration/deepdir.sh
check_PROGRAMS += tests/integration/hy-deepdir
tests_integration_hy_deepdir_SOURCES = tests/integration/hy-deepdir.c
