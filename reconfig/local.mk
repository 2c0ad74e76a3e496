# BORG's reorganization: plans (shared with hybridctl) and, in the daemon,
# the BOPT, the map and the reconfigurator.
noinst_LIBRARIES += reconfig/libhyreorganize.a reconfig/libhyreconfig.a
reconfig_libhyreorganize_a_SOURCES = reconfig/reorganize.c
reconfig_libhyreorganize_a_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS)
reconfig_libhyreconfig_a_SOURCES = reconfig/borg.c
reconfig_libhyreconfig_a_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS)
