/* where.c - hy_cache_where(): which tier holds each block of a range, for
 * hybridctl explain (see include/hybridfs/cache.h). Read-only: it looks
 * at the front buffer's table under front.lock and at the index (which
 * takes its own locks), a chunk of blocks at a time, and calls back with
 * no lock held; no I/O. */
#include <errno.h>
#include <stdlib.h>

#include "cache_internal.h"

/* Blocks looked at under one hold of front.lock (and one index range). */
#define WHERE_CHUNK 1024

int hy_cache_where(struct hy_cache *c, uint64_t file_id, uint64_t first_block, uint64_t nblocks,
		   hy_cache_where_fn fn, void *arg)
{
	struct hy_cache_entry *entries;
	uint8_t *state; /* per block of the chunk: place | dirty << 2 */
	uint64_t run_first = first_block, run_count = 0;
	uint8_t run_state = 0;
	int rc = 0;

	if (!c || !fn || nblocks == 0 || first_block + nblocks < first_block)
		return -EINVAL;
	entries = malloc(WHERE_CHUNK * sizeof(*entries));
	state = malloc(WHERE_CHUNK);
	if (!entries || !state) {
		free(entries);
		free(state);
		return -ENOMEM;
	}
	for (uint64_t at = first_block; at < first_block + nblocks && rc == 0;) {
		uint64_t n = first_block + nblocks - at;
		int64_t got = 0;

		if (n > WHERE_CHUNK)
			n = WHERE_CHUNK;
		for (uint64_t i = 0; i < n; i++)
			state[i] = HY_CACHE_NOT_CACHED;
		/* SSD lines first; a block also in the front buffer is served
		 * from DRAM (a read looks there first) */
		if (c->index && file_id)
			got = hy_cache_index_lookup_range(c->index, file_id, at, n, entries,
							  WHERE_CHUNK);
		if (got < 0) {
			rc = (int)got;
			break;
		}
		for (int64_t i = 0; i < got && i < WHERE_CHUNK; i++)
			state[entries[i].block - at] = HY_CACHE_IN_SSD | (entries[i].dirty ? 4 : 0);
		if (c->front.nslots && file_id) {
			pthread_mutex_lock(&c->front.lock);
			for (uint64_t i = 0; i < n; i++) {
				uint32_t s = hy_cache_front_find(&c->front, file_id, at + i);

				if (s != NONE)
					state[i] =
						HY_CACHE_IN_DRAM |
						(c->front.slots[s].dirty || (state[i] & 4) ? 4 : 0);
			}
			pthread_mutex_unlock(&c->front.lock);
		}
		for (uint64_t i = 0; i < n && rc == 0; i++) {
			if (run_count && state[i] == run_state) {
				run_count++;
				continue;
			}
			if (run_count)
				rc = fn(arg, run_first, run_count, run_state & 3, run_state & 4);
			run_first = at + i;
			run_count = 1;
			run_state = state[i];
		}
		at += n;
	}
	if (rc == 0 && run_count)
		rc = fn(arg, run_first, run_count, run_state & 3, run_state & 4);
	free(entries);
	free(state);
	return rc > 0 ? 0 : rc;
}
