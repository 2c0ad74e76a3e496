/* stack.c - see include/hybridfs/stack.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "hybridfs/cache.h"
#include "hybridfs/engine.h"
#include "hybridfs/indirector.h"
#include "hybridfs/log.h"
#include "hybridfs/stack.h"

int hy_stack_new(const struct hy_stack_config *config, struct hy_engine **out, char *why,
		 size_t why_size)
{
	struct hy_engine *engine;
	int rc;

	*out = NULL;
	rc = hy_engine_new(config->backing, &engine);
	if (rc < 0) {
		snprintf(why, why_size, "cannot make the engine: %s", strerror(-rc));
		return rc;
	}
	if (config->bopt)
		hy_stack_set_bopt(engine, config->bopt);
	if (config->cache) {
		rc = hy_stack_open_cache(engine, config->cache, NULL, why, why_size);
		if (rc < 0) {
			hy_stack_free(engine);
			return rc;
		}
	}
	*out = engine;
	return 0;
}

void hy_stack_set_bopt(struct hy_engine *engine, const struct hy_stack_bopt *bopt)
{
	struct hy_indirector *ind = hy_engine_indirector(engine);

	if (!bopt) {
		hy_indirector_set_bopt(ind, NULL, NULL, 0, NULL);
		hy_indirector_set_bopt_writes(ind, false);
		hy_indirector_set_readahead(ind, 0, 0);
		return;
	}
	hy_indirector_set_bopt(ind, bopt->map, bopt->device, bopt->read_base, bopt->journal);
	hy_indirector_set_bopt_writes(ind, bopt->writes);
	hy_indirector_set_readahead(ind, bopt->readahead, bopt->read_end);
}

int hy_stack_open_cache(struct hy_engine *engine, const struct hy_cache_config *config,
			struct hy_cache **out, char *why, size_t why_size)
{
	struct hy_cache *cache;
	int rc;

	if (out)
		*out = NULL;
	/* below the cache is the indirector, so that its misses and its
	 * write-back go through the map like every other request */
	rc = hy_cache_open(config, hy_engine_indirector(engine), &cache, why, why_size);
	if (rc < 0)
		return rc;
	hy_engine_set_cache(engine, cache);
	if (out)
		*out = cache;
	return 0;
}

int hy_stack_close_cache(struct hy_engine *engine)
{
	int rc;

	if (!engine->cache)
		return 0;
	/* no request is in flight: every dirty block goes home through the
	 * indirector, then the engine reads and writes below the cache */
	rc = hy_cache_close(engine->cache);
	hy_engine_set_cache(engine, NULL);
	return rc;
}

void hy_stack_free(struct hy_engine *engine)
{
	int rc;

	if (!engine)
		return;
	rc = hy_stack_close_cache(engine);
	if (rc < 0)
		hy_log(LOG_ERR, "closing the cache: %s", strerror(-rc));
	hy_stack_set_bopt(engine, NULL);
	hy_engine_free(engine);
}
