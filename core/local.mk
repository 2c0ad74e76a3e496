# The engine: no FUSE dependency here (DESIGN.md, one engine two drivers).
noinst_LIBRARIES += core/libhycore.a
core_libhycore_a_SOURCES = core/device.c core/engine.c
