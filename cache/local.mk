# The cache (issue 5): no FUSE dependency here (DESIGN.md, one engine two
# drivers). So far: the heat predictor of the DRAM front buffer.
noinst_LIBRARIES += cache/libhycache.a
cache_libhycache_a_SOURCES = cache/heat.c
