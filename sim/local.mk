# The trace simulator's library (issue 7): trace readers and replay, driven
# by hybridctl simulate and the tests.
noinst_LIBRARIES += sim/libhysim.a
sim_libhysim_a_SOURCES = sim/trace_reader.c
sim_libhysim_a_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
sim_libhysim_a_SOURCES += sim/replay.c
sim_libhysim_a_SOURCES += sim/layout.c
sim_libhysim_a_SOURCES += sim/full.c
