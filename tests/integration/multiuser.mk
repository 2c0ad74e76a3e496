# Multi-user semantics of an allow_other mount, compared with a plain
# directory (needs root and setpriv; skipped otherwise).
TESTS += tests/integration/multiuser.sh tests/integration/usermount.sh
EXTRA_DIST += tests/integration/multiuser.sh tests/integration/usermount.sh
