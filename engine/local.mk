# The engine: no FUSE dependency here (DESIGN.md, one engine two drivers).
noinst_LIBRARIES += engine/libhyengine.a
engine_libhyengine_a_SOURCES = engine/device.c engine/engine.c engine/map.c engine/map_journal.c engine/bopt.c \
	engine/ondisk.c engine/file_table.c engine/classify.c engine/category.c \
	engine/workload_policy.c engine/devmodel.c engine/fault.c
engine_libhyengine_a_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) $(BLKID_CFLAGS)
