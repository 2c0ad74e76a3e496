# BORG below the cache: the indirection map, its journal and the BOPT.
noinst_LIBRARIES += borg/libhyborg.a
borg_libhyborg_a_SOURCES = borg/indirector.c borg/map.c borg/map_journal.c borg/bopt.c
borg_libhyborg_a_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) $(BLKID_CFLAGS)
