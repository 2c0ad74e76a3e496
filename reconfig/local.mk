# BORG's reorganization: plans (shared with hybridctl) and, in the daemon,
# the BOPT, the map and the reconfigurator (borg.c and its parts,
# borg_internal.h).
noinst_LIBRARIES += reconfig/libhyreorganize.a reconfig/libhyreconfig.a
reconfig_libhyreorganize_a_SOURCES = reconfig/reorganize.c reconfig/gain.c
reconfig_libhyreorganize_a_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS)
reconfig_libhyreconfig_a_SOURCES = reconfig/borg.c reconfig/borg_homes.c reconfig/borg_reconfig.c \
	reconfig/borg_cleaner.c reconfig/borg_warm.c reconfig/borg_internal.h
reconfig_libhyreconfig_a_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS)
