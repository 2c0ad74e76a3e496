# damaged: issue 8 (reliability); see the scripts it lists.
# Damaged state (the database, the cache store, the BOPT, the state folder)
# and files changed behind the mount's back, each on a real mount's state.
TESTS += tests/integration/damaged.sh
EXTRA_DIST += tests/integration/damaged.sh
