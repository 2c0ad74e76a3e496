# The cache (issue 5): no FUSE dependency here (DESIGN.md, one engine two
# drivers): the heat predictor of the DRAM front buffer and the replacement
# policies of the SSD store.
noinst_LIBRARIES += cache/libhycache.a
cache_libhycache_a_SOURCES = cache/heat.c cache/policy.c
