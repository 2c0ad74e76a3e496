/* test_stack.c - the stack builder (stack.h): the engine, its indirector
 * with a BOPT and the cache over it built in one call and torn down in
 * order; built in steps as the daemon's mount does; a cache that cannot be
 * opened leaves nothing built. Over a device that keeps nothing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/cache.h"
#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "hybridfs/indirector.h"
#include "hybridfs/map.h"
#include "hybridfs/stack.h"
#include "suites.h"

#define UUID "5b0c1e2a-4d3f-4a6b-8c7d-9e0f1a2b3c4d"

static ssize_t nil_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	(void)dev, (void)object, (void)off;
	memset(buf, 0, len);
	return (ssize_t)len;
}

static ssize_t nil_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			 off_t off)
{
	(void)dev, (void)object, (void)buf, (void)off;
	return (ssize_t)len;
}

static int nil_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	(void)dev, (void)object, (void)data_only;
	return 0;
}

static const struct hy_device_ops nil_ops = {
	.read = nil_read,
	.write = nil_write,
	.sync = nil_sync,
};

static void cache_config(struct hy_cache_config *cc, const char *store)
{
	memset(cc, 0, sizeof(*cc));
	cc->store_path = store;
	cc->uuid = UUID;
	cc->store_size = UINT64_C(1) << 20;
	cc->write_policy = HY_CACHE_WRITE_THROUGH;
	cc->policy = HY_POLICY_LRU3;
	cc->heat_periods = 8;
	cc->no_threads = true;
}

/* All at once: the BOPT in the indirector, the cache in the engine; the
 * teardown takes them out in order. */
static void test_build_all(void)
{
	char *dir = hy_test_tmpdir(), *store = hy_test_path_in(dir, "store"), why[512] = "";
	struct hy_device *home, *bopt;
	struct hy_map *map;
	struct hy_cache_config cc;
	struct hy_stack_bopt sb;
	struct hy_stack_config config;
	struct hy_engine *engine = NULL;
	struct hy_indirector *ind;

	CU_ASSERT_FATAL(dir && store);
	CU_ASSERT_EQUAL_FATAL(hy_device_new("home", &nil_ops, NULL, &home), 0);
	CU_ASSERT_EQUAL_FATAL(hy_device_new("bopt", &nil_ops, NULL, &bopt), 0);
	CU_ASSERT_EQUAL_FATAL(hy_map_new(&map), 0);
	cache_config(&cc, store);
	sb = (struct hy_stack_bopt){map, bopt, 8192, NULL, true, 0, 0};
	config = (struct hy_stack_config){home, &sb, &cc};
	CU_ASSERT_EQUAL_FATAL(hy_stack_new(&config, &engine, why, sizeof(why)), 0);
	ind = hy_engine_indirector(engine);
	CU_ASSERT_PTR_EQUAL(ind->backing, home);
	CU_ASSERT_PTR_EQUAL(ind->map, map);
	CU_ASSERT_PTR_EQUAL(ind->bopt, bopt);
	CU_ASSERT_EQUAL(ind->bopt_read_base, 8192);
	CU_ASSERT_TRUE(ind->bopt_writes_on);
	CU_ASSERT_PTR_NOT_NULL(engine->cache);
	/* the cache's own close, then nothing to close */
	CU_ASSERT_EQUAL(hy_stack_close_cache(engine), 0);
	CU_ASSERT_PTR_NULL(engine->cache);
	CU_ASSERT_EQUAL(hy_stack_close_cache(engine), 0);
	hy_stack_set_bopt(engine, NULL);
	CU_ASSERT_PTR_NULL(ind->map);
	CU_ASSERT_FALSE(ind->bopt_writes_on);
	hy_stack_free(engine);
	hy_stack_free(NULL);
	hy_map_free(map);
	hy_device_free(bopt);
	hy_device_free(home);
	hy_test_rmtree(dir);
	free(store);
	free(dir);
}

/* In steps, as the mount: the engine, then (BORG) the BOPT, then the
 * cache; a cache that cannot be opened says why and leaves the engine
 * without one, and hy_stack_new() with it leaves nothing. */
static void test_build_in_steps(void)
{
	char why[512] = "";
	struct hy_device *home;
	struct hy_cache_config cc;
	struct hy_stack_config config = {0};
	struct hy_engine *engine = NULL, *none = (struct hy_engine *)&config;
	struct hy_cache *cache = (struct hy_cache *)&config;

	CU_ASSERT_EQUAL_FATAL(hy_device_new("home", &nil_ops, NULL, &home), 0);
	config.backing = home;
	CU_ASSERT_EQUAL_FATAL(hy_stack_new(&config, &engine, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NULL(hy_engine_indirector(engine)->map);
	CU_ASSERT_PTR_NULL(engine->cache);
	cache_config(&cc, "/nonexistent-hybridfs-dir/store");
	CU_ASSERT_TRUE(hy_stack_open_cache(engine, &cc, &cache, why, sizeof(why)) < 0);
	CU_ASSERT_PTR_NULL(cache);
	CU_ASSERT_PTR_NULL(engine->cache);
	CU_ASSERT_TRUE(why[0] != 0);
	hy_stack_free(engine);
	config.cache = &cc;
	why[0] = 0;
	CU_ASSERT_TRUE(hy_stack_new(&config, &none, why, sizeof(why)) < 0);
	CU_ASSERT_PTR_NULL(none);
	CU_ASSERT_TRUE(why[0] != 0);
	hy_device_free(home);
}

int hy_test_add_stack(void)
{
	CU_pSuite s = CU_add_suite("stack", NULL, NULL);

	if (!s || !CU_add_test(s, "engine, BOPT and cache in one call", test_build_all) ||
	    !CU_add_test(s, "built in the mount's steps; a cache refused", test_build_in_steps))
		return -1;
	return 0;
}
