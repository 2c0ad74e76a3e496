# The cache (issue 5): no FUSE dependency here (DESIGN.md, one engine two
# drivers): the DRAM front buffer and its heat predictor, the SSD store's
# replacement policies, its index and its on-disk format, and cache.c which
# puts them in the engine's I/O path.
noinst_LIBRARIES += cache/libhycache.a
cache_libhycache_a_SOURCES = cache/heat.c cache/policy.c cache/cache_index.c cache/cache_store.c \
	cache/cache.c
cache_libhycache_a_CFLAGS = $(AM_CFLAGS) $(BLKID_CFLAGS)
