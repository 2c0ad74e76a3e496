dist_man_MANS += man/hybridfs.8 man/mount.hybridfs.8 man/hybridctl.8

# Man pages are tested: mandoc -Tlint must find nothing to say.
TESTS += tests/man-lint.sh
EXTRA_DIST += tests/man-lint.sh
