# The command line's machinery (cli.h: the command table, the option
# parser, suggestions) and the progress line (progress.h): a library, so
# that the unit tests link them too.
noinst_LIBRARIES += ctl/libhyctl.a
ctl_libhyctl_a_SOURCES = ctl/cli.c ctl/progress.c

bin_PROGRAMS += hybridctl
hybridctl_SOURCES = ctl/hybridctl.c ctl/ctl.h ctl/trace_cmd.c ctl/mounts.c ctl/reorganize_cmd.c ctl/explain_cmd.c ctl/pin_cmd.c \
	ctl/flush_cmd.c ctl/format_cache_cmd.c ctl/simulate_cmd.c ctl/tune_cmd.c ctl/policy_cmd.c ctl/top_cmd.c \
	ctl/metrics_cmd.c
hybridctl_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) $(JSONC_CFLAGS) $(ZLIB_CFLAGS) $(NCURSES_CFLAGS)
# top: its screen is ncurses' (ncursesw, only hybridctl links it)
# format-cache: the cache store's format, over lib/ondisk.c and
# device/device.c (and libblkid)
hybridctl_LDADD = ctl/libhyctl.a sim/libhysim.a reconfig/libhyreorganize.a analyzer/libhyanalyzer.a planner/libhyplanner.a \
	engine/libhyengine.a cache/libhycache.a borg/libhyborg.a device/libhydevice.a lib/libhycommon.a $(SQLITE_LIBS) $(JSONC_LIBS) \
	$(BLKID_LIBS) $(ZLIB_LIBS) $(NCURSES_LIBS) -lm
