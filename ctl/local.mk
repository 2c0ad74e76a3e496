bin_PROGRAMS += hybridctl
hybridctl_SOURCES = ctl/hybridctl.c
hybridctl_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS)
hybridctl_LDADD = lib/libhycommon.a $(SQLITE_LIBS)
