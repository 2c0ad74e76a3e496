# The engine: where every file data request goes (engine.c), the stack
# builder that puts the engine, the cache and the indirector together
# (stack.c), and ReCA's request classifier, workload categories and policy
# table.
noinst_LIBRARIES += engine/libhyengine.a
engine_libhyengine_a_SOURCES = engine/engine.c engine/stack.c engine/classify.c engine/category.c \
	engine/workload_policy.c engine/reca.c
engine_libhyengine_a_CFLAGS = $(AM_CFLAGS) $(SQLITE_CFLAGS) $(BLKID_CFLAGS)
