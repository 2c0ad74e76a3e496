noinst_LIBRARIES += lib/libhycommon.a
lib_libhycommon_a_SOURCES = lib/log.c lib/options.c lib/state.c lib/runtime.c
lib_libhycommon_a_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(SQLITE_CFLAGS)
EXTRA_DIST += include/hybridfs
