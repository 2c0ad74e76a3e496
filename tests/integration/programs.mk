TESTS += tests/integration/programs.sh tests/integration/badinput.sh tests/integration/mounthelper.sh
EXTRA_DIST += tests/integration/programs.sh tests/integration/badinput.sh tests/integration/mounthelper.sh
