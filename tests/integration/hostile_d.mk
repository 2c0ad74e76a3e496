# Issue 16 (hostile review), the state folder, ACLs and a new user's data:
# the state folder cannot be swapped for a symbolic link (hy-swapper is the
# backing owner who tries).
check_PROGRAMS += tests/integration/hy-swapper
tests_integration_hy_swapper_SOURCES = tests/integration/hy-swapper.c
TESTS += tests/integration/statefolder.sh
EXTRA_DIST += tests/integration/statefolder.sh
# POSIX ACLs on an allow_other mount, against the plain folder (setfacl,
# getfacl: package acl).
TESTS += tests/integration/acl.sh
EXTRA_DIST += tests/integration/acl.sh
# Where a store or BOPT that does not exist may be made: never in /dev,
# never on a RAM filesystem; write-back never on RAM.
TESTS += tests/integration/storeplace.sh
EXTRA_DIST += tests/integration/storeplace.sh
# bopt_force: the way past "refusing to overwrite it without force".
TESTS += tests/integration/boptforce.sh
EXTRA_DIST += tests/integration/boptforce.sh
# A mount that fails removes what it made (and only that).
TESTS += tests/integration/mountfail.sh
EXTRA_DIST += tests/integration/mountfail.sh
TESTS += tests/integration/rotational.sh
EXTRA_DIST += tests/integration/rotational.sh
# A mount in place over a directory with a shell's cwd and open file in it
# (issue 19, item 4).
TESTS += tests/integration/inplace.sh
EXTRA_DIST += tests/integration/inplace.sh
# The default state folder out of the tree follows its directory's
# identity: found again after a rename, never taken by another directory
# (issue 19, item 3).
TESTS += tests/integration/statemove.sh
EXTRA_DIST += tests/integration/statemove.sh
