# The cache (issue 5): no FUSE dependency here (DESIGN.md, one engine two
# drivers): the DRAM front buffer and its heat predictor, the SSD store's
# replacement policies, its index and its on-disk format (cache_store.c
# and its parts, cache_store_internal.h), and cache.c and its parts
# (cache_internal.h) which put them in the engine's I/O path.
noinst_LIBRARIES += cache/libhycache.a
cache_libhycache_a_SOURCES = cache/heat.c cache/policy.c cache/cache_index.c cache/cache_store.c \
	cache/cache_store_format.c cache/cache_store_journal.c cache/cache_store_internal.h \
	cache/cache.c cache/front.c cache/lines.c cache/cache_io.c cache/cache_fsync.c \
	cache/cache_reconfig.c cache/cleaner.c cache/where.c cache/pin.c cache/cache_internal.h
cache_libhycache_a_CFLAGS = $(AM_CFLAGS) $(BLKID_CFLAGS)
