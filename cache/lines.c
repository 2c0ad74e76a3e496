/* lines.c - the cache's SSD lines: free lines, victims, line state and
 * dirty marks under the lines' mutex, the store's writes, and the journal's
 * records of them; see include/hybridfs/cache.h. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "hybridfs/log.h"

#include "cache_internal.h"

/* ---- SSD lines --------------------------------------------------------------- */

/* Whether line @line's last journal record may say dirty: its data must
 * be durable at home before a record saying otherwise is written. */
bool hy_cache_lines_disk_dirty(struct hy_cache *c, uint32_t line)
{
	bool d;

	pthread_mutex_lock(&c->lines_lock);
	d = c->lines[line].flags & LS_DISK_DIRTY;
	pthread_mutex_unlock(&c->lines_lock);
	return d;
}

/* lines_lock held */
void hy_cache_lines_free_push(struct hy_cache *c, uint32_t line)
{
	size_t w = line / 64;

	assert(!(c->free_map[w] & (1ULL << (line % 64))));
	c->free_map[w] |= 1ULL << (line % 64);
	c->free_summary[w / 64] |= 1ULL << (w % 64);
	c->nfree++;
}

/* The first word of free_map at or after @w that has a free line, or
 * @words when none does. */
static size_t free_word_from(const struct hy_cache *c, size_t w, size_t words)
{
	size_t s = w / 64;
	uint64_t bits;

	if (w >= words)
		return words;
	bits = c->free_summary[s] & (~0ULL << (w % 64));
	while (!bits) {
		if (++s >= (words + 63) / 64)
			return words;
		bits = c->free_summary[s];
	}
	w = s * 64 + (size_t)__builtin_ctzll(bits);
	return w < words ? w : words;
}

/* lines_lock held; nfree > 0 */
static uint32_t free_pop(struct hy_cache *c)
{
	size_t words = (c->capacity + 63) / 64, w = c->free_cursor / 64;
	uint64_t bits;
	uint32_t line;

	/* the cursor's own word from the cursor on, then the words after
	 * it, then from the start */
	bits = w < words ? c->free_map[w] & (~0ULL << (c->free_cursor % 64)) : 0;
	if (!bits) {
		w = free_word_from(c, w + 1, words);
		if (w == words)
			w = free_word_from(c, 0, words);
		assert(w < words);
		bits = c->free_map[w];
	}
	line = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
	c->free_map[w] &= ~(1ULL << (line % 64));
	if (!c->free_map[w])
		c->free_summary[w / 64] &= ~(1ULL << (w % 64));
	c->free_cursor = line + 1 < c->capacity ? line + 1 : 0;
	c->nfree--;
	return line;
}

struct victim_ctx {
	struct hy_cache *c;
	uint64_t own_stripe;
	bool own_held; /* the caller holds its stripe's gate exclusive */
	uint32_t skip[VICTIM_TRIES];
	unsigned nskip;
};

static bool line_evictable(uint32_t line, void *arg)
{
	struct victim_ctx *v = arg;
	const struct line_state *ls = &v->c->lines[line];
	uint64_t file_id, block;

	if (ls->flags & (LS_DIRTY | LS_DISK_DIRTY))
		return false;
	if (!line_key(v->c, line, &file_id, &block))
		return false; /* cannot be: a line in the policy is in the index */
	/* a line under the caller's own gate: evictable only when that gate
	 * is held exclusive (no reader of it can be in its line) */
	if (file_id % HY_CACHE_GATES == v->own_stripe && !v->own_held)
		return false;
	for (unsigned i = 0; i < v->nskip; i++)
		if (v->skip[i] == line)
			return false;
	return true;
}

/* OmniCache's first step: lines of files no handle holds open, or that no
 * request touched for as many requests as the store has lines (inactive). */
static bool line_first_choice(uint32_t line, void *arg)
{
	struct victim_ctx *v = arg;
	uint64_t file_id = 0, block;
	struct cfile *cf =
		line_key(v->c, line, &file_id, &block) ? cfile_get(v->c, file_id, false) : NULL;
	bool first = !cf || atomic_load(&cf->closed) ||
		     atomic_load(&v->c->requests) - atomic_load(&cf->last_used) > v->c->capacity;

	cfile_put(v->c, cf);
	return first;
}

void hy_cache_lines_note_use(struct hy_cache *c, struct cfile *cf)
{
	atomic_store(&cf->last_used, atomic_fetch_add(&c->requests, 1) + 1);
	if (atomic_load(&cf->closed))
		atomic_store(&cf->closed, false); /* open again */
}

/* Drops a line's block from the index and the policy: lines_lock held,
 * the block's file gate exclusive. The line is then free, not on the
 * free list. */
void hy_cache_lines_forget(struct hy_cache *c, uint32_t line)
{
	struct line_state *ls = &c->lines[line];
	uint64_t file_id = 0, block = 0;
	bool keyed = line_key(c, line, &file_id, &block);
	struct cfile *cf = keyed ? cfile_get(c, file_id, false) : NULL;
	struct hy_cache_entry e;

	hy_cache_lines_set_tail(c, line, 0);
	if (keyed && hy_cache_index_remove(c->index, file_id, block, &e) == 0 && cf) {
		note_dirty(c, cf, e.dirty, 0);
		atomic_fetch_sub(&cf->blocks, 1);
	}
	cfile_put(c, cf);
	if (hy_cache_pin_line_release(c, line) || hy_policy_remove(c->policy, line) == 0)
		c->ssd_used--;
	if (ls->flags & LS_DIRTY)
		c->ssd_dirty--;
	memset(ls, 0, sizeof(*ls));
	map_set(c->kept_map, line, false);
}

/* The next victim, off the index and the policy (lines_lock held), or
 * -ENOSPC: a clean line whose gate is free now, or is the caller's own
 * held exclusive. */
static int64_t victim_take(struct hy_cache *c, struct victim_ctx *v)
{
	while (v->nskip < VICTIM_TRIES) {
		uint32_t line;
		uint64_t vfile, vblock;

		/* the baselines stay plain, for the simulator to compare
		 * against: the two-step search is hybridfs's own (with LRU3) */
		if (hy_policy_victim(c->policy,
				     c->cfg.policy == HY_POLICY_LRU3 ? line_first_choice : NULL,
				     line_evictable, v, &line) != 0)
			break;
		if (!line_key(c, line, &vfile, &vblock))
			break; /* line_evictable said no to such a line */
		if (vfile % HY_CACHE_GATES == v->own_stripe) {
			hy_cache_lines_forget(c, line); /* under the gate the caller holds */
		} else if (pthread_rwlock_trywrlock(gate(c, vfile)) != 0) {
			v->skip[v->nskip++] = line; /* a busy file: the next one */
			continue;
		} else {
			hy_cache_lines_forget(c, line);
			pthread_rwlock_unlock(gate(c, vfile));
		}
		atomic_fetch_add(&c->st.ssd_evictions, 1);
		return line;
	}
	return -ENOSPC;
}

/* Victims journaled free at once when a line the durable table names is
 * reused (one fdatasync for all): the next ones to go, freed a little
 * early (at most an eighth of the store), instead of a sync per eviction
 * once a checkpoint named every line. 40,000 random 4 KiB reads over 48
 * MiB through a full 8 MiB store after a remount (every line named):
 * 5.4 s one at a time, 3 s by 64, 1.3-2.2 s by 256, as without the free
 * records (1.3-1.7 s), the hits the same. */
#define FREE_BATCH 256

/* A line to fill for a block of @file_id (whose gate the caller holds,
 * @exclusive or shared): a free one, or a clean victim whose gate is free
 * now, or that is the caller's own gate held exclusive. The line is off
 * the policy and the index until hy_cache_lines_commit(). A line the
 * durable table or journal names in use is journaled free first: it must
 * say free before other data goes in, or a crash would leave it naming
 * the old block over the new data (the persistent cache keeps clean lines
 * after a crash). Returns the line or -ENOSPC. */
int64_t hy_cache_lines_alloc(struct hy_cache *c, uint64_t file_id, bool exclusive)
{
	struct victim_ctx v = {
		.c = c, .own_stripe = file_id % HY_CACHE_GATES, .own_held = exclusive};
	struct hy_cache_journal_record r[FREE_BATCH];
	uint32_t extra[FREE_BATCH];
	size_t nr = 0, nextra = 0;
	bool victim = false;
	int64_t got;

	pthread_mutex_lock(&c->lines_lock);
	if (c->nfree) {
		got = free_pop(c);
	} else {
		got = victim_take(c, &v);
		victim = true;
	}
	if (got >= 0 && map_test(c->durable_map, (uint32_t)got)) {
		r[nr++] =
			(struct hy_cache_journal_record){.type = HY_CJ_FREE, .line = (uint64_t)got};
		/* the victims after it, named ones journaled with it */
		while (victim && nextra < FREE_BATCH - 1 && nextra < c->capacity / 8) {
			int64_t e = victim_take(c, &v);

			if (e < 0)
				break;
			extra[nextra++] = (uint32_t)e;
			if (map_test(c->durable_map, (uint32_t)e))
				r[nr++] = (struct hy_cache_journal_record){.type = HY_CJ_FREE,
									   .line = (uint64_t)e};
		}
	}
	pthread_mutex_unlock(&c->lines_lock);
	if (nr && hy_cache_journal_records(c, r, nr) < 0) {
		/* they stay named: the next use journals them again */
		pthread_mutex_lock(&c->lines_lock);
		for (size_t i = 0; i < nextra; i++)
			hy_cache_lines_free_push(c, extra[i]);
		hy_cache_lines_free_push(c, (uint32_t)got);
		pthread_mutex_unlock(&c->lines_lock);
		return -ENOSPC;
	}
	if (nextra) {
		pthread_mutex_lock(&c->lines_lock);
		for (size_t i = 0; i < nextra; i++)
			hy_cache_lines_free_push(c, extra[i]);
		pthread_mutex_unlock(&c->lines_lock);
	}
	return got;
}

void hy_cache_lines_give_back(struct hy_cache *c, uint32_t line)
{
	pthread_mutex_lock(&c->lines_lock);
	hy_cache_lines_free_push(c, line);
	pthread_mutex_unlock(&c->lines_lock);
}

/* The line holds @block of @cf now, in the index with its masks, and in
 * the policy's queue @q. 0, or -EEXIST / -ENOMEM (the line is given back). */
int hy_cache_lines_commit(struct hy_cache *c, struct cfile *cf, uint32_t line, uint64_t block,
			  uint8_t valid, uint8_t dirty, enum hy_policy_queue q)
{
	int rc = hy_cache_index_insert(c->index, cf->entry.file_id, block, line, valid, dirty);

	if (rc < 0) {
		hy_cache_lines_give_back(c, line);
		return rc;
	}
	atomic_fetch_add(&cf->blocks, 1);
	note_dirty(c, cf, 0, dirty);
	pthread_mutex_lock(&c->lines_lock);
	c->lines[line].flags = (uint8_t)(LS_USED | (dirty ? LS_DIRTY : 0));
	if (c->line_hits)
		c->line_hits[line] = 0;
	if (dirty)
		c->ssd_dirty++;
	/* a pinned file's line stays out of the policy: never a victim */
	if (hy_cache_pin_line_take(c, cf, line) || hy_policy_insert_at(c->policy, line, q) == 0)
		c->ssd_used++;
	pthread_mutex_unlock(&c->lines_lock);
	return 0;
}

/* Ages the policy once every half capacity of accesses. lines_lock held. */
void hy_cache_lines_accessed(struct hy_cache *c)
{
	if (++c->ssd_accesses % (c->capacity / 2 + 1) == 0)
		hy_policy_age(c->policy);
}

void hy_cache_lines_hit(struct hy_cache *c, uint32_t line)
{
	pthread_mutex_lock(&c->lines_lock);
	if (!(c->lines[line].flags & LS_PINNED) && hy_policy_hit(c->policy, line) < 0)
		hy_log(LOG_ERR, "cache: line %" PRIu32 " hit but not in the policy", line);
	if (c->line_hits && c->line_hits[line] < UINT8_MAX)
		c->line_hits[line]++;
	if (map_test(c->kept_map, line))
		atomic_fetch_add(&c->keep.warm_hits, 1);
	hy_cache_lines_accessed(c);
	pthread_mutex_unlock(&c->lines_lock);
}

/* Returns whether the journal had the line as it was (now it has not). */
bool hy_cache_lines_set_dirty(struct hy_cache *c, uint32_t line, bool dirty)
{
	bool journaled;

	pthread_mutex_lock(&c->lines_lock);
	journaled = c->lines[line].flags & LS_JOURNALED;
	c->lines[line].flags &= (uint8_t)~LS_JOURNALED; /* its masks change */
	if (dirty && !(c->lines[line].flags & LS_DIRTY)) {
		c->lines[line].flags |= LS_DIRTY;
		c->ssd_dirty++;
	} else if (!dirty && (c->lines[line].flags & LS_DIRTY)) {
		c->lines[line].flags &= (uint8_t)~LS_DIRTY;
		c->ssd_dirty--;
	}
	pthread_mutex_unlock(&c->lines_lock);
	return journaled;
}

int hy_cache_lines_store_write(struct hy_cache *c, uint32_t line, uint8_t mask, const void *buf)
{
	int rc = hy_cache_store_write_line(c->store, line, mask, buf);

	if (rc == 0)
		atomic_fetch_add(&c->st.ssd_bytes_written, (uint64_t)popcount8(mask) * SECTOR);
	return rc;
}

/* A line's data could not be written into the store (ENOSPC from a thin
 * store, EIO): a new @line goes back (NONE: the caller settles an old
 * one), and the caller treats it as no room, so the block goes home
 * (DESIGN.md invariant 4: a cache that cannot take a write never fails it;
 * faults.sh's ENOSPC cases found fsync failing instead). Said once, not
 * once a block. */
void hy_cache_lines_store_refused(struct hy_cache *c, uint32_t line, int rc)
{
	if (line != NONE)
		hy_cache_lines_give_back(c, line);
	if (!atomic_exchange(&c->store_refused, true))
		hy_log(LOG_WARNING,
		       "cache: writing a line into \"%s\" failed (%s): blocks go home instead",
		       c->store_path, strerror(-rc));
}

/* Records @line's tail (0: the whole line). lines_lock held. A map that
 * cannot grow keeps the tail out: the line is then recovered whole, as
 * before tails existed (up to 511 bytes past the end of the file). */
void hy_cache_lines_set_tail(struct hy_cache *c, uint64_t line, uint16_t tail)
{
	uint64_t slot = hy_keymap_slot(&c->tails, line);

	if (c->tails.keys[slot] == line) {
		if (tail)
			c->tails.values[slot] = tail;
		else
			hy_keymap_delete_at(&c->tails, slot);
	} else if (tail && hy_keymap_put(&c->tails, line, tail) < 0) {
		hy_log(LOG_WARNING, "cache: out of memory for line %" PRIu64 "'s tail", line);
	}
}

/* The store's line table, kept here (cache_store.h, external table), for
 * a checkpoint: every line in use with its file, block and valid sectors,
 * dirty only where its journal records say so (with its masks now: newer
 * sectors of the same block are as good). A line dirty here but never
 * journaled is saved clean: nothing was promised for it. Lines whose
 * clean or free record is written had LS_DISK_DIRTY cleared first. */
void hy_cache_lines_table_record(void *arg, uint64_t line, struct hy_cache_line *out)
{
	struct hy_cache *c = arg;
	const struct line_state *ls = &c->lines[line];
	struct hy_cache_entry e;
	uint64_t file_id, block;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->lines_lock);
	/* the key from the index: the store's table keeps the 64-bit file id
	 * and block (cache_store.h), memory only a handle and 32 bits */
	if ((ls->flags & LS_USED) && line_key(c, (uint32_t)line, &file_id, &block) &&
	    hy_cache_index_lookup(c->index, file_id, block, &e) == 0 && e.line == line) {
		out->used = true;
		out->file_id = file_id;
		out->block = block;
		out->valid = e.valid;
		out->dirty = (ls->flags & LS_DISK_DIRTY) ? e.dirty : 0;
		if (out->dirty) {
			uint32_t tail;

			if (hy_keymap_get(&c->tails, line, &tail))
				out->tail = (uint16_t)tail;
		}
	}
	map_set(c->durable_map, (uint32_t)line, out->used);
	pthread_mutex_unlock(&c->lines_lock);
}

/* ---- the journal ----------------------------------------------------------- */

/* Appends @n records (no wait) and waits for the last: a checkpoint when
 * the journal is full. 0 or a negative errno. */
int hy_cache_journal_records(struct hy_cache *c, const struct hy_cache_journal_record *r, size_t n)
{
	uint64_t seq = 0;
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		pthread_rwlock_rdlock(&c->journal_gate);
		rc = hy_cache_store_journal_write(c->store, &r[i], &seq);
		pthread_rwlock_unlock(&c->journal_gate);
		if (rc == -ENOSPC) {
			char why[256];

			pthread_rwlock_wrlock(&c->journal_gate);
			rc = hy_cache_store_journal_room(c->store) > 0
				     ? 0
				     : hy_cache_store_checkpoint(c->store, why, sizeof(why));
			pthread_rwlock_unlock(&c->journal_gate);
			if (rc < 0) {
				hy_log(LOG_ERR, "cache: checkpoint failed: %s", why);
				return rc;
			}
			atomic_fetch_add(&c->st.checkpoints, 1);
			i--;
			continue;
		}
		if (rc == 0) {
			atomic_fetch_add(&c->st.journal_records, 1);
			if (r[i].type != HY_CJ_MASKS) {
				pthread_mutex_lock(&c->lines_lock);
				map_set(c->durable_map, (uint32_t)r[i].line,
					r[i].type == HY_CJ_FILL);
				pthread_mutex_unlock(&c->lines_lock);
			}
		}
	}
	if (rc == 0 && seq)
		rc = hy_cache_store_journal_wait(c->store, seq);
	return rc;
}

/* Journals the clean or free records @r of lines whose LS_DISK_DIRTY flag
 * the caller cleared first: a line the journal says is dirty is reused only
 * once a record saying otherwise is durable, so when they cannot be made
 * durable the flags come back. 0 or a negative errno. */
int hy_cache_journal_clean_records(struct hy_cache *c, const struct hy_cache_journal_record *r,
				   size_t n)
{
	int rc = n ? hy_cache_journal_records(c, r, n) : 0;

	if (rc < 0) {
		pthread_mutex_lock(&c->lines_lock);
		for (size_t i = 0; i < n; i++)
			c->lines[r[i].line].flags |= LS_DISK_DIRTY;
		pthread_mutex_unlock(&c->lines_lock);
	}
	return rc;
}
