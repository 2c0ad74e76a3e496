/* front.c - the cache's DRAM front buffer (its table, LRU list, heat and
 * ghosts), the move of a buffered block into an SSD line, and the front
 * buffer's evictor thread ("hy-front"); see include/hybridfs/cache.h. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "hybridfs/log.h"

#include "cache_internal.h"

/* ---- the front buffer -------------------------------------------------------- */

static uint32_t key_hash(uint64_t file_id, uint64_t block)
{
	uint64_t h = file_id * 0x9e3779b97f4a7c15ull ^ (block + 0x632be59bd9b4e019ull);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h;
}

uint32_t hy_cache_front_find(const struct front *fr, uint64_t file_id, uint64_t block)
{
	if (!fr->nslots)
		return NONE;
	for (uint32_t i = key_hash(file_id, block) & fr->table_mask;;
	     i = (i + 1) & fr->table_mask) {
		uint32_t s = fr->table[i];

		if (s == NONE)
			return NONE;
		if (fr->slots[s].file_id == file_id && fr->slots[s].block == block)
			return s;
	}
}

static void front_table_add(struct front *fr, uint32_t s)
{
	uint32_t i = key_hash(fr->slots[s].file_id, fr->slots[s].block) & fr->table_mask;

	while (fr->table[i] != NONE)
		i = (i + 1) & fr->table_mask;
	fr->table[i] = s;
}

/* Backward-shift deletion: no tombstones. */
static void front_table_del(struct front *fr, uint32_t s)
{
	uint32_t i = key_hash(fr->slots[s].file_id, fr->slots[s].block) & fr->table_mask;

	while (fr->table[i] != s)
		i = (i + 1) & fr->table_mask;
	for (uint32_t j = i;;) {
		uint32_t home;

		fr->table[i] = NONE;
		for (;;) {
			j = (j + 1) & fr->table_mask;
			if (fr->table[j] == NONE)
				return;
			home = key_hash(fr->slots[fr->table[j]].file_id,
					fr->slots[fr->table[j]].block) &
			       fr->table_mask;
			/* may the entry at j move to i? only if its home is not in (i, j] */
			if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j))
				break;
		}
		fr->table[i] = fr->table[j];
		i = j;
	}
}

static void lru_unlink(struct front *fr, uint32_t s)
{
	struct slot *x = &fr->slots[s];

	if (x->prev != NONE)
		fr->slots[x->prev].next = x->next;
	else
		fr->mru = x->next;
	if (x->next != NONE)
		fr->slots[x->next].prev = x->prev;
	else
		fr->lru = x->prev;
	x->prev = x->next = NONE;
}

static void lru_push_mru(struct front *fr, uint32_t s)
{
	struct slot *x = &fr->slots[s];

	x->prev = NONE;
	x->next = fr->mru;
	if (fr->mru != NONE)
		fr->slots[fr->mru].prev = s;
	fr->mru = s;
	if (fr->lru == NONE)
		fr->lru = s;
}

static uint64_t front_period(const struct front *fr)
{
	return fr->touches / fr->period_len;
}

/* An access to slot @s: counted in its heat, moved to the MRU end. */
void hy_cache_front_touch(struct front *fr, uint32_t s)
{
	fr->touches++;
	hy_heat_touch(&fr->slots[s].heat, front_period(fr));
	lru_unlink(fr, s);
	lru_push_mru(fr, s);
}

/* The evictor starts below an eighth free and stops at a quarter. */
static bool front_low(const struct front *fr)
{
	return fr->nslots && fr->nslots - fr->used < (fr->nslots + 7) / 8;
}

/* A new slot for (@file_id, @block), touched once, or NONE when none is
 * free or the key is there already. front.lock held. */
uint32_t hy_cache_front_add(struct hy_cache *c, uint64_t file_id, uint64_t block)
{
	struct front *fr = &c->front;
	uint32_t s = fr->free_head;

	if (s == NONE || hy_cache_front_find(fr, file_id, block) != NONE)
		return NONE;
	fr->free_head = fr->slots[s].next;
	memset(&fr->slots[s], 0, sizeof(fr->slots[s]));
	fr->slots[s].file_id = file_id;
	fr->slots[s].block = block;
	fr->slots[s].used = true;
	fr->slots[s].prev = fr->slots[s].next = NONE;
	{
		struct ghost *g = &fr->ghosts[key_hash(file_id, block) % fr->nslots];

		if (g->file_id == file_id && g->block == block && file_id) {
			fr->slots[s].heat = g->heat;
			memset(g, 0, sizeof(*g));
		}
	}
	front_table_add(fr, s);
	lru_push_mru(fr, s);
	fr->used++;
	hy_cache_front_touch(fr, s);
	if (front_low(fr))
		pthread_cond_signal(&fr->wake);
	return s;
}

/* Keeps slot @s's history for when its block comes back. front.lock held. */
static void front_remember(struct front *fr, uint32_t s)
{
	struct slot *x = &fr->slots[s];
	struct ghost *g = &fr->ghosts[key_hash(x->file_id, x->block) % fr->nslots];

	g->file_id = x->file_id;
	g->block = x->block;
	g->heat = x->heat;
}

void hy_cache_front_remove(struct front *fr, uint32_t s)
{
	front_table_del(fr, s);
	lru_unlink(fr, s);
	if (fr->slots[s].dirty)
		fr->dirty--;
	fr->slots[s].used = false;
	fr->slots[s].next = fr->free_head;
	fr->free_head = s;
	fr->used--;
}

/* ---- moving a DRAM block to the SSD ------------------------------------ */

/* Moves slot @s (of @cf's file; gate exclusive) into a store line, queue
 * @q. 1 moved, 0 no line free, or a negative errno. */
int hy_cache_front_to_store(struct hy_cache *c, struct cfile *cf, uint32_t s,
			    enum hy_policy_queue q)
{
	struct front *fr = &c->front;
	struct slot x = fr->slots[s];
	int64_t l = hy_cache_lines_alloc(c, cf->entry.file_id, true);
	int rc;

	if (l < 0)
		return 0;
	rc = hy_cache_lines_store_write(c, (uint32_t)l, x.valid, slot_data(fr, s));
	if (rc < 0) {
		hy_cache_lines_store_refused(c, (uint32_t)l, rc);
		return 0; /* as no line free: fsync and eviction send it home */
	}
	/* the line first: if it cannot be entered (out of memory) the block
	 * stays in DRAM, dirty data and all; the gate (exclusive) keeps
	 * everyone from seeing it in both places meanwhile */
	rc = hy_cache_lines_commit(c, cf, (uint32_t)l, x.block, x.valid, x.dirty, q);
	if (rc == -EFBIG)
		return 0; /* a block the index cannot hold (2^32 on): as no line free */
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fr->lock);
	hy_cache_front_remove(fr, s);
	pthread_mutex_unlock(&fr->lock);
	atomic_fetch_sub(&cf->in_front, 1);
	atomic_fetch_sub(&cf->blocks, 1);
	note_dirty(c, cf, x.dirty, 0);
	return 1;
}

/* ---- the front buffer's evictor ---------------------------------------- */

/* Evicts the least recently used block: hot to the store, cold clean
 * dropped, cold dirty home. Returns 1 when a slot was freed, 0 when none
 * could be, or a negative errno. */
static int evict_one(struct hy_cache *c)
{
	struct front *fr = &c->front;
	uint64_t file_id, block;
	struct cfile *cf;
	uint32_t s;
	uint8_t admit = HY_ADMIT_NORMAL, evict = HY_EVICT_NORMAL;
	double heat;
	int rc = 0;

	pthread_mutex_lock(&fr->lock);
	if (fr->lru == NONE) {
		pthread_mutex_unlock(&fr->lock);
		return 0;
	}
	file_id = fr->slots[fr->lru].file_id;
	block = fr->slots[fr->lru].block;
	pthread_mutex_unlock(&fr->lock);
	cf = cfile_get(c, file_id, false);
	if (!cf)
		return 0;
	pthread_rwlock_wrlock(gate(c, file_id));
	pthread_mutex_lock(&fr->lock);
	s = hy_cache_front_find(fr, file_id, block);
	/* the heat as of the block's last active period (a question about a
	 * period older than its newest is answered as of the newest): the
	 * least recently used block is by definition idle now, and judged as
	 * of now every block would look cold; recency is the LRU order's
	 * business, re-reference the heat's */
	heat = s == NONE ? 0 : hy_heat_predict(&fr->slots[s].heat, 0, &fr->heat);
	if (s != NONE) {
		admit = fr->slots[s].admit;
		evict = fr->slots[s].evict;
	}
	pthread_mutex_unlock(&fr->lock);
	if (s == NONE)
		goto out; /* gone meanwhile: try again */
	if (cf->home >= 0) {
		struct hy_cache_file home = {file_id, cf->home};

		rc = hy_cache_io_ensure_fresh(c, cf, &home);
		if (rc < 0)
			goto out;
		pthread_mutex_lock(&fr->lock);
		s = hy_cache_front_find(fr, file_id, block);
		pthread_mutex_unlock(&fr->lock);
		if (s == NONE)
			goto out; /* dropped as stale */
	}
	/* ReCA's priority by class: a high one enters the store whatever its
	 * heat (in the queue its heat and preference give) */
	if (heat >= fr->heat.threshold || admit == HY_ADMIT_HIGH) {
		rc = hy_cache_front_to_store(
			c, cf, s,
			hy_cache_io_queue_for_hint(admit, evict, heat, fr->heat.threshold));
		if (rc != 0) {
			if (rc > 0) {
				atomic_fetch_add(&c->st.heat_admitted, 1);
				atomic_fetch_add(&c->st.dram_evictions, 1);
			}
			goto out;
		}
		/* no line free: handled as cold */
		hy_cache_pass(c, HY_CACHE_PASS_NO_ROOM, 1);
	} else {
		hy_cache_pass(c, HY_CACHE_PASS_HEAT, 1);
		pthread_mutex_lock(&fr->lock);
		front_remember(fr, s);
		pthread_mutex_unlock(&fr->lock);
		/* PORE: a dirty block is written home only when its zone is
		 * open, which the cleaner decides: a cold one waits in the
		 * store's cold queue instead of going home now */
		if (c->pore && fr->slots[s].dirty) {
			rc = hy_cache_front_to_store(c, cf, s, HY_POLICY_COLD);
			if (rc > 0) {
				atomic_fetch_add(&c->st.pore_kept, 1);
				atomic_fetch_add(&c->st.dram_evictions, 1);
			}
			if (rc != 0)
				goto out;
		}
	}
	if (fr->slots[s].dirty) {
		struct hy_cache_file home = {file_id, cf->home};

		rc = hy_cache_leave_settle_range(c, cf, &home, block, 1, true, true);
		if (rc == 0)
			atomic_fetch_add(&c->st.cold_dirty_home, 1);
	} else {
		pthread_mutex_lock(&fr->lock);
		hy_cache_front_remove(fr, s);
		pthread_mutex_unlock(&fr->lock);
		atomic_fetch_sub(&cf->in_front, 1);
		atomic_fetch_sub(&cf->blocks, 1);
	}
	if (rc == 0) {
		atomic_fetch_add(&c->st.dram_evictions, 1);
		rc = 1;
	}
out:
	pthread_rwlock_unlock(gate(c, file_id));
	cfile_put(c, cf);
	return rc;
}

/* At a clean close: the front buffer's clean blocks go into the store, so
 * that the persistent cache keeps them for the next mount (a day's working
 * set fits in the front buffer, and DRAM is lost at the unmount). A block
 * the heat filter admits goes as an eviction would send it; the others
 * (read once) only into free lines, in the cold queue, from the most
 * recently used down: no line the store holds is given up for a block read
 * once. No request runs any more; dirty blocks (a flush that failed) stay
 * where they are. Returns the blocks moved. */
uint64_t hy_cache_front_keep(struct hy_cache *c)
{
	struct front *fr = &c->front;
	struct key {
		uint64_t file_id, block;
	} * keys;
	uint32_t n = 0;
	uint64_t moved = 0;

	if (!c->store || !fr->nslots)
		return 0;
	keys = calloc(fr->nslots, sizeof(*keys));
	if (!keys) {
		hy_log(LOG_WARNING,
		       "cache: out of memory keeping the front buffer's blocks in \"%s\"; the "
		       "next mount starts without them",
		       c->store_path);
		return 0;
	}
	pthread_mutex_lock(&fr->lock);
	for (uint32_t s = fr->mru; s != NONE && n < fr->nslots; s = fr->slots[s].next)
		if (!fr->slots[s].dirty)
			keys[n++] = (struct key){fr->slots[s].file_id, fr->slots[s].block};
	pthread_mutex_unlock(&fr->lock);
	for (uint32_t i = 0; i < n; i++) {
		struct cfile *cf = cfile_get(c, keys[i].file_id, false);
		enum hy_policy_queue q = HY_POLICY_COLD;
		bool hot = false, room;
		uint32_t s;

		if (!cf)
			continue;
		pthread_rwlock_wrlock(gate(c, keys[i].file_id));
		if (cf->home >= 0) {
			struct hy_cache_file home = {keys[i].file_id, cf->home};

			/* changed outside meanwhile: dropped as stale, not kept */
			if (hy_cache_io_ensure_fresh(c, cf, &home) < 0)
				goto next;
		}
		pthread_mutex_lock(&fr->lock);
		s = hy_cache_front_find(fr, keys[i].file_id, keys[i].block);
		if (s != NONE && !fr->slots[s].dirty) {
			double heat = hy_heat_predict(&fr->slots[s].heat, 0, &fr->heat);

			hot = fr->slots[s].admit == HY_ADMIT_HIGH || heat >= fr->heat.threshold;
			if (hot)
				q = hy_cache_io_queue_for_hint(fr->slots[s].admit,
							       fr->slots[s].evict, heat,
							       fr->heat.threshold);
		}
		pthread_mutex_unlock(&fr->lock);
		if (s == NONE || fr->slots[s].dirty)
			goto next;
		pthread_mutex_lock(&c->lines_lock);
		room = c->nfree > 0;
		pthread_mutex_unlock(&c->lines_lock);
		if ((hot || room) && hy_cache_front_to_store(c, cf, s, q) > 0)
			moved++;
	next:
		pthread_rwlock_unlock(gate(c, keys[i].file_id));
		cfile_put(c, cf);
	}
	free(keys);
	return moved;
}

void hy_cache_run_front_eviction(struct hy_cache *c)
{
	struct front *fr = &c->front;

	for (uint32_t tries = 0; tries < fr->nslots; tries++) {
		bool enough;
		int rc;

		pthread_mutex_lock(&fr->lock);
		enough = fr->nslots - fr->used >= fr->nslots / 4;
		pthread_mutex_unlock(&fr->lock);
		if (enough)
			break;
		rc = evict_one(c);
		if (rc < 0) {
			hy_log(LOG_ERR, "cache: the front buffer could not evict: %s",
			       strerror(-rc));
			break;
		}
	}
}

void *hy_cache_front_evictor_main(void *arg)
{
	struct hy_cache *c = arg;
	struct front *fr = &c->front;

	pthread_setname_np(pthread_self(), "hy-front");
	pthread_mutex_lock(&fr->lock);
	while (!c->stopping) {
		if (!front_low(fr)) {
			pthread_cond_wait(&fr->wake, &fr->lock);
			continue;
		}
		pthread_mutex_unlock(&fr->lock);
		hy_cache_run_front_eviction(c);
		pthread_mutex_lock(&fr->lock);
		if (front_low(fr) && !c->stopping) {
			/* nothing could go: wait for a change rather than spin */
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 10000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&fr->wake, &fr->lock, &ts);
		}
	}
	pthread_mutex_unlock(&fr->lock);
	return NULL;
}
