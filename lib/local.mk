noinst_LIBRARIES += lib/libhycommon.a
lib_libhycommon_a_SOURCES = lib/log.c lib/options.c lib/units.c lib/state.c lib/runtime.c \
	lib/ring.c lib/control.c lib/trace.c lib/keymap.c lib/pore.c \
	lib/ondisk.c lib/mount_name.c lib/file_table.c lib/group_commit.c lib/rules.c lib/rules_db.c \
	lib/metrics.c lib/counters.c
lib_libhycommon_a_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS) $(SQLITE_CFLAGS) $(JSONC_CFLAGS)
EXTRA_DIST += include/hybridfs
