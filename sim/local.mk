# The trace simulator's library (issue 7): trace readers (trace_reader.c and
# its parsers, trace_formats.c, trace_reader_internal.h) and replay, BORG
# over the daemon's stack (borg.c) and the whole cache (full.c), driven
# by hybridctl simulate and the tests.
noinst_LIBRARIES += sim/libhysim.a
sim_libhysim_a_SOURCES = sim/trace_reader.c sim/trace_formats.c sim/trace_reader_internal.h
sim_libhysim_a_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
sim_libhysim_a_SOURCES += sim/replay.c
sim_libhysim_a_SOURCES += sim/home.c
sim_libhysim_a_SOURCES += sim/borg.c
sim_libhysim_a_SOURCES += sim/full.c
