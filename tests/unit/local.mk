# CUnit: one suite per module, all in one runner that exits 0 or 1.
check_PROGRAMS += tests/unit/hytest
TESTS += tests/unit/hytest
tests_unit_hytest_SOURCES = tests/unit/hytest.c tests/unit/suites.h \
	tests/unit/test_options.c tests/unit/test_state.c tests/unit/test_inode.c \
	tests/unit/test_engine.c tests/unit/test_ring.c tests/unit/test_control.c \
	tests/unit/test_trace.c tests/unit/test_analyzer.c tests/unit/test_planner.c tests/unit/test_profiler.c tests/unit/test_map.c tests/unit/test_map_journal.c tests/unit/test_bopt.c \
	tests/unit/test_reorganize.c tests/unit/test_heat.c tests/unit/test_policy.c tests/unit/test_cache_index.c tests/unit/test_cache_store.c \
	tests/unit/test_cache.c tests/unit/test_classify.c tests/unit/test_category.c \
	tests/unit/test_workload_policy.c tests/unit/test_trace_reader.c tests/unit/test_replay.c tests/unit/test_devmodel.c \
	tests/unit/test_sim_borg.c tests/unit/test_stack.c tests/unit/test_fuzz_regress.c \
	tests/unit/test_fault.c tests/unit/test_reca.c tests/unit/test_identity.c \
	tests/unit/test_emulation.c tests/unit/test_rules.c tests/unit/test_metrics.c \
	tests/unit/test_cli.c tests/unit/test_progress.c tests/unit/test_fuse_channel.c \
	tests/unit/test_log.c \
	tests/unit/profiler_fixture.h
tests_unit_hytest_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS) $(FUSE_CFLAGS) $(SQLITE_CFLAGS) $(JSONC_CFLAGS) $(BLKID_CFLAGS) $(ZLIB_CFLAGS)
tests_unit_hytest_LDADD = ctl/libhyctl.a sim/libhysim.a fs/libhyfs.a reconfig/libhyreconfig.a reconfig/libhyreorganize.a analyzer/libhyanalyzer.a planner/libhyplanner.a \
	engine/libhyengine.a cache/libhycache.a borg/libhyborg.a device/libhydevice.a lib/libhycommon.a \
	$(CUNIT_LIBS) $(FUSE_LIBS) $(SQLITE_LIBS) $(JSONC_LIBS) $(BLKID_LIBS) $(LIBEVENT_LIBS) $(ZLIB_LIBS) -lm
