# The cache (issue 5): no FUSE dependency here (DESIGN.md, one engine two
# drivers). So far: the DRAM front buffer's heat predictor, the SSD store's
# replacement policies, its index and its on-disk format (not yet in the
# I/O path).
noinst_LIBRARIES += cache/libhycache.a
cache_libhycache_a_SOURCES = cache/heat.c cache/policy.c cache/cache_index.c cache/cache_store.c
cache_libhycache_a_CFLAGS = $(AM_CFLAGS) $(BLKID_CFLAGS)
