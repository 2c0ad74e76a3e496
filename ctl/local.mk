bin_PROGRAMS += hybridctl
hybridctl_SOURCES = ctl/hybridctl.c ctl/ctl.h ctl/trace_cmd.c
hybridctl_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) $(JSONC_CFLAGS)
hybridctl_LDADD = lib/libhycommon.a $(SQLITE_LIBS) $(JSONC_LIBS)
