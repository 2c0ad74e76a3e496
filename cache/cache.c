/* cache.c - the DRAM front buffer and the SSD store in the I/O path; see
 * include/hybridfs/cache.h. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/cache.h"
#include "hybridfs/cache_index.h"
#include "hybridfs/cache_store.h"
#include "hybridfs/fault.h"
#include "hybridfs/file_table.h"
#include "hybridfs/heat.h"
#include "hybridfs/keymap.h"
#include "hybridfs/log.h"
#include "hybridfs/pore.h"

#define LINE		  HY_CACHE_LINE_SIZE
#define SECTOR		  HY_CACHE_SECTOR_SIZE
#define NONE		  UINT32_MAX
#define VICTIM_TRIES	  8
#define CLEAN_CHUNK	  256		/* blocks of one file cleaned under one hold of its gate */
#define FSYNC_JOURNAL_MAX 256		/* dirty blocks an fsync journals; more go home */
#define STREAMS		  16		/* sequential write streams followed per file */
#define PENDING_MAX	  1024u		/* blocks an fsync is told of; more: it looks at all */
#define STREAM_GAP	  (32ULL << 20) /* bytes a piece may run ahead of its stream */
#define MIGRATE_QUEUE	  64		/* files waiting for their lines to grow */

/* ---- per-file state ---------------------------------------------------- */

struct cfile {
	struct hy_file_table_entry entry;
	_Atomic int64_t stamp;	    /* home ctime the cached blocks are current for */
	_Atomic uint64_t size;	    /* home size then: a smaller one is a truncation
				     * the cache did not see (an O_TRUNC open) */
	_Atomic bool closed;	    /* no handle open (hy_cache_close_file) */
	_Atomic uint64_t last_used; /* the cache's request count at its last request */
	_Atomic uint64_t blocks;    /* cached blocks, DRAM and SSD */
	_Atomic uint64_t dirty;	    /* of those, with a dirty sector */
	_Atomic uint64_t in_front;  /* of the cached, in DRAM */
	int64_t home;		    /* the cache's own object for writing home; -1 */
	/* sequential write streams (bcache's cutoff), several at once: the
	 * kernel sends a stream's writes from parallel requests, out of order */
	struct stream {
		uint64_t start, end, run; /* run: bytes written into [start, end) */
	} streams[STREAMS];
	bool id_durable; /* the driver confirmed the id names the file after a crash */
	/* changes the cache made to the home file (writes, size, truncation)
	 * and how many of them the last home sync covered: an fsync whose
	 * dirty blocks are all durable in the store needs no home sync when
	 * they are equal (a new file state starts unequal) */
	_Atomic uint64_t home_changes, home_synced_at;
	/* blocks written since the file's last fsync, so that an fsync looks
	 * at those and not at every block the file has cached (under the
	 * gate, exclusive); past PENDING_MAX an fsync looks at them all */
	uint64_t *pending;
	uint32_t npending, pending_cap;
	bool pending_overflow;
	/* ReCA's reconfiguration: the line size its lines were last grown
	 * to (0: one block), the write policy of its last write (-1: none
	 * yet), whether its process left write-back (its dirty blocks go
	 * home first), and a count of the changes to its data (writes,
	 * truncations), by which a migration that read without the gate
	 * knows that what it read is still current */
	_Atomic uint32_t line_size;
	_Atomic int last_write;
	_Atomic bool leave_back;
	_Atomic uint64_t generation;
};

/* ---- line state (SSD), under lines_lock -------------------------------- */

/* LS_JOURNALED: the journal has the line's masks as they are (an fsync
 * need not write its record again); a write to the line clears it. */
enum { LS_USED = 1, LS_DIRTY = 2, LS_DISK_DIRTY = 4, LS_JOURNALED = 8 };

/* Packed: 17 bytes a line instead of 24 (DRAM per line is a goal). A free
 * line's block field links the free list (FREE_END ends it): no array of
 * its own. */
struct line_state {
	uint64_t file_id, block;
	uint8_t flags;
} __attribute__((packed));

/* ---- the front buffer (DRAM), under front.lock ------------------------- */

struct slot {
	uint64_t file_id, block;
	struct hy_heat_history heat;
	uint32_t prev, next; /* LRU list (used) or free list (next) */
	uint8_t valid, dirty;
	bool used;
	uint8_t admit, evict; /* the hint it entered with (workload_policy.h) */
};

struct front {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	uint32_t nslots, used, dirty;
	struct slot *slots;
	unsigned char *data; /* nslots * LINE */
	uint32_t *table;     /* open addressing: slot index or NONE */
	uint32_t table_mask;
	uint32_t mru, lru, free_head;
	uint64_t touches, period_len;
	struct hy_heat_config heat;
	/* the histories of blocks evicted as cold, direct-mapped by key (a
	 * newer one takes the place of an older): a block read again soon
	 * after it left keeps counting, so blocks re-read at a distance of
	 * about a buffer's worth of accesses become hot too */
	struct ghost {
		uint64_t file_id, block;
		struct hy_heat_history heat;
	} * ghosts; /* nslots entries */
};

struct hy_cache {
	struct hy_cache_config cfg;
	struct hy_cache_lower lower;
	char *store_path, *uuid;
	struct hy_cache_store *store;
	struct hy_cache_index *index;
	struct hy_policy *policy;
	struct hy_file_table *files;
	uint32_t capacity;
	atomic_bool ids_failing; /* ids_durable failed last: said once, not per fsync */

	pthread_rwlock_t gates[HY_CACHE_GATES];

	pthread_mutex_t lines_lock; /* policy, lines, free list, ssd counters */
	struct line_state *lines;
	/* The tail (cache_store.h) each line was last journaled dirty with,
	 * for the lines that held a file's end then (few: a map, not 2 bytes
	 * in every line's state); checkpoints write it. */
	struct hy_keymap tails;
	/* Free lines, a bit each, handed out next-fit: the lowest free line at
	 * or after the last one given (free_cursor), so that lines freed in
	 * any order (a tree removed in its folders' hash order) are filled
	 * again in the store's order, and what is cached together lies
	 * together on the store's disk. A LIFO list gave them back in the
	 * reverse order of their freeing: reads of a tree untarred after an
	 * rm -rf went 20% slower from a store on the backing disk.
	 * free_summary has bit w set iff free_map[w] != 0 (a pop scans at most
	 * one word of it per 4,096 lines). */
	uint64_t *free_map, *free_summary;
	uint32_t free_cursor, nfree;
	uint32_t ssd_used, ssd_dirty;
	uint64_t ssd_accesses; /* for ageing the policy once a period */

	pthread_rwlock_t journal_gate; /* appends shared, checkpoint exclusive */
	_Atomic uint64_t requests;     /* reads and writes served: the clock of idleness */
	/* The largest fsync token handed out, of any file. A file's entry made
	 * again (its blocks gone, no way home held) starts its home changes
	 * above it: a token of the entry before, arriving late at
	 * hy_cache_home_synced, can never equal one of the new entry's. */
	_Atomic uint64_t tokens_issued;

	struct front front;

	pthread_mutex_t clean_lock; /* one cleaning pass at a time; PORE's state */
	/* PORE (backend=smr): the zones, and per line its hits since the last
	 * division (saturating; under lines_lock): NULL without PORE */
	struct hy_pore *pore;
	uint8_t *line_hits;
	uint64_t pore_writes_seen; /* write blocks counted into PORE's period */
	/* its figures as of the last pass, for the stats (under lines_lock: a
	 * paced pass holds clean_lock for long) */
	struct hy_pore_stats pore_snapshot;
	_Atomic int flush_waiting;  /* a flush wants clean_lock: a paced pass yields */
	_Atomic bool stop_now;	    /* close began: a paced pass stops */
	_Atomic bool store_refused; /* a line write failed (logged once) */
	pthread_mutex_t thread_lock;
	pthread_cond_t thread_wake;
	bool stopping, clean_kick;
	pthread_t cleaner, evictor;
	bool cleaner_started, evictor_started;
	/* line migrations waiting (a FIFO, under thread_lock); each holds an
	 * object of its file from hold_object() */
	struct migration {
		uint64_t file_id;
		int64_t object;
		uint32_t line_size;
	} migrate_queue[MIGRATE_QUEUE];
	unsigned migrate_len;

	_Atomic uint64_t dirty_sectors;
	struct {
		_Atomic uint64_t read_hits_dram, read_hits_ssd, read_misses;
		_Atomic uint64_t write_hits_dram, write_hits_ssd, write_misses;
		_Atomic uint64_t ssd_bytes_written, heat_admitted, heat_refused, policy_refused;
		_Atomic uint64_t dram_evictions, ssd_evictions, cold_dirty_home, cleaned_blocks;
		_Atomic uint64_t bypassed, stale_files, journal_records, checkpoints;
		_Atomic uint64_t forgotten_files;
		_Atomic uint64_t seq_bypassed;
		_Atomic uint64_t admit_bypassed, line_prefetched, migrations, migrate_filled;
		_Atomic uint64_t migrate_dropped, migrate_home;
		_Atomic uint64_t pore_held, pore_forced, pore_kept;
		uint64_t recovered_blocks, lost_blocks;
	} st;
};

static uint8_t popcount8(uint8_t m)
{
	return (uint8_t)__builtin_popcount(m);
}

/* ---- files ------------------------------------------------------------- */

static struct hy_file_table_entry *cfile_alloc(void *arg, uint64_t file_id)
{
	struct hy_cache *c = arg;
	struct cfile *cf = calloc(1, sizeof(*cf));

	(void)file_id;
	if (!cf)
		return NULL;
	cf->home = -1;
	cf->home_changes = atomic_load(&c->tokens_issued) + 1;
	cf->last_write = -1;
	return &cf->entry;
}

static bool cfile_empty(const struct hy_file_table_entry *e)
{
	const struct cfile *cf = (const struct cfile *)e;

	/* closed or not: with no block cached the flag matters to nobody */
	return atomic_load(&cf->blocks) == 0 && cf->home < 0;
}

static void cfile_destroy(void *arg, struct hy_file_table_entry *e)
{
	struct hy_cache *c = arg;
	struct cfile *cf = (struct cfile *)e;

	if (cf->home >= 0)
		c->lower.put_object(c->lower.arg, cf->home);
	free(cf->pending);
	free(cf);
}

static const struct hy_file_table_ops cfile_ops = {cfile_alloc, cfile_empty, cfile_destroy};

static struct cfile *cfile_get(struct hy_cache *c, uint64_t file_id, bool create)
{
	int err;

	return (struct cfile *)hy_file_table_get(c->files, file_id, create, &err);
}

static void cfile_put(struct hy_cache *c, struct cfile *cf)
{
	if (cf)
		hy_file_table_put(c->files, &cf->entry);
}

/* A block of the file was dirtied: the next fsync looks at it. Gate
 * held exclusive. */
static void pending_add(struct cfile *cf, uint64_t block)
{
	if (cf->pending_overflow)
		return;
	if (cf->npending == cf->pending_cap) {
		uint32_t cap = cf->pending_cap ? cf->pending_cap * 2 : 8;
		uint64_t *p = cap <= PENDING_MAX ? realloc(cf->pending, cap * sizeof(*p)) : NULL;

		if (!p) {
			cf->pending_overflow = true; /* the fsync looks at everything */
			free(cf->pending);
			cf->pending = NULL;
			cf->npending = cf->pending_cap = 0;
			return;
		}
		cf->pending = p;
		cf->pending_cap = cap;
	}
	cf->pending[cf->npending++] = block;
}

static void pending_clear(struct cfile *cf)
{
	free(cf->pending);
	cf->pending = NULL;
	cf->npending = cf->pending_cap = 0;
	cf->pending_overflow = false;
}

static void home_changed(struct cfile *cf)
{
	atomic_fetch_add(&cf->generation, 1);
	atomic_fetch_add(&cf->home_changes, 1);
}

/* ---- gates --------------------------------------------------------------- */

static pthread_rwlock_t *gate(struct hy_cache *c, uint64_t file_id)
{
	return &c->gates[file_id % HY_CACHE_GATES];
}

/* ---- dirty bookkeeping --------------------------------------------------- */

/* A block's dirty mask went from @before to @after. */
static void note_dirty(struct hy_cache *c, struct cfile *cf, uint8_t before, uint8_t after)
{
	if (before == after)
		return;
	if (!before && after)
		atomic_fetch_add(&cf->dirty, 1);
	else if (before && !after)
		atomic_fetch_sub(&cf->dirty, 1);
	if (popcount8(after) > popcount8(before))
		atomic_fetch_add(&c->dirty_sectors,
				 (uint64_t)(popcount8(after) - popcount8(before)));
	else
		atomic_fetch_sub(&c->dirty_sectors,
				 (uint64_t)(popcount8(before) - popcount8(after)));
}

/* ---- the front buffer -------------------------------------------------------- */

static uint32_t key_hash(uint64_t file_id, uint64_t block)
{
	uint64_t h = file_id * 0x9e3779b97f4a7c15ull ^ (block + 0x632be59bd9b4e019ull);

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h;
}

static uint32_t front_find(const struct front *fr, uint64_t file_id, uint64_t block)
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
static void front_touch(struct front *fr, uint32_t s)
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
static uint32_t front_add(struct hy_cache *c, uint64_t file_id, uint64_t block)
{
	struct front *fr = &c->front;
	uint32_t s = fr->free_head;

	if (s == NONE || front_find(fr, file_id, block) != NONE)
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
	front_touch(fr, s);
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

static void front_remove(struct front *fr, uint32_t s)
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

static unsigned char *slot_data(struct front *fr, uint32_t s)
{
	return fr->data + (size_t)s * LINE;
}

/* ---- SSD lines --------------------------------------------------------------- */

/* Whether line @line's last journal record may say dirty: its data must
 * be durable at home before a record saying otherwise is written. */
static bool line_disk_dirty(struct hy_cache *c, uint32_t line)
{
	bool d;

	pthread_mutex_lock(&c->lines_lock);
	d = c->lines[line].flags & LS_DISK_DIRTY;
	pthread_mutex_unlock(&c->lines_lock);
	return d;
}

/* lines_lock held */
static void free_push(struct hy_cache *c, uint32_t line)
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

	if (ls->flags & (LS_DIRTY | LS_DISK_DIRTY))
		return false;
	/* a line under the caller's own gate: evictable only when that gate
	 * is held exclusive (no reader of it can be in its line) */
	if (ls->file_id % HY_CACHE_GATES == v->own_stripe && !v->own_held)
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
	struct cfile *cf = cfile_get(v->c, v->c->lines[line].file_id, false);
	bool first = !cf || atomic_load(&cf->closed) ||
		     atomic_load(&v->c->requests) - atomic_load(&cf->last_used) > v->c->capacity;

	cfile_put(v->c, cf);
	return first;
}

static void note_use(struct hy_cache *c, struct cfile *cf)
{
	atomic_store(&cf->last_used, atomic_fetch_add(&c->requests, 1) + 1);
	if (atomic_load(&cf->closed))
		atomic_store(&cf->closed, false); /* open again */
}

static void set_tail(struct hy_cache *c, uint64_t line, uint16_t tail);

/* Drops a line's block from the index and the policy: lines_lock held,
 * the block's file gate exclusive. The line is then free, not on the
 * free list. */
static void line_forget(struct hy_cache *c, uint32_t line)
{
	struct line_state *ls = &c->lines[line];
	struct cfile *cf = cfile_get(c, ls->file_id, false);
	struct hy_cache_entry e;

	set_tail(c, line, 0);
	if (hy_cache_index_remove(c->index, ls->file_id, ls->block, &e) == 0 && cf) {
		note_dirty(c, cf, e.dirty, 0);
		atomic_fetch_sub(&cf->blocks, 1);
	}
	cfile_put(c, cf);
	if (hy_policy_remove(c->policy, line) == 0)
		c->ssd_used--;
	if (ls->flags & LS_DIRTY)
		c->ssd_dirty--;
	memset(ls, 0, sizeof(*ls));
}

/* A line to fill for a block of @file_id (whose gate the caller holds,
 * @exclusive or shared): a free one, or a clean victim whose gate is free
 * now, or that is the caller's own gate held exclusive. The line is off
 * the policy and the index until line_commit(). Returns the line or
 * -ENOSPC. */
static int64_t line_alloc(struct hy_cache *c, uint64_t file_id, bool exclusive)
{
	struct victim_ctx v = {
		.c = c, .own_stripe = file_id % HY_CACHE_GATES, .own_held = exclusive};
	int64_t got = -ENOSPC;

	pthread_mutex_lock(&c->lines_lock);
	if (c->nfree) {
		got = free_pop(c);
		goto out;
	}
	while (v.nskip < VICTIM_TRIES) {
		uint32_t line;
		uint64_t vfile;

		/* the baselines stay plain, for the simulator to compare
		 * against: the two-step search is hybridfs's own (with LRU3) */
		if (hy_policy_victim(c->policy,
				     c->cfg.policy == HY_POLICY_LRU3 ? line_first_choice : NULL,
				     line_evictable, &v, &line) != 0)
			break;
		vfile = c->lines[line].file_id;
		if (vfile % HY_CACHE_GATES == v.own_stripe) {
			line_forget(c, line); /* under the gate the caller holds */
		} else if (pthread_rwlock_trywrlock(gate(c, vfile)) != 0) {
			v.skip[v.nskip++] = line; /* a busy file: the next one */
			continue;
		} else {
			line_forget(c, line);
			pthread_rwlock_unlock(gate(c, vfile));
		}
		atomic_fetch_add(&c->st.ssd_evictions, 1);
		got = line;
		break;
	}
out:
	pthread_mutex_unlock(&c->lines_lock);
	return got;
}

static void line_give_back(struct hy_cache *c, uint32_t line)
{
	pthread_mutex_lock(&c->lines_lock);
	free_push(c, line);
	pthread_mutex_unlock(&c->lines_lock);
}

/* The line holds @block of @cf now, in the index with its masks, and in
 * the policy's queue @q. 0, or -EEXIST / -ENOMEM (the line is given back). */
static int line_commit(struct hy_cache *c, struct cfile *cf, uint32_t line, uint64_t block,
		       uint8_t valid, uint8_t dirty, enum hy_policy_queue q)
{
	int rc = hy_cache_index_insert(c->index, cf->entry.file_id, block, line, valid, dirty);

	if (rc < 0) {
		line_give_back(c, line);
		return rc;
	}
	atomic_fetch_add(&cf->blocks, 1);
	note_dirty(c, cf, 0, dirty);
	pthread_mutex_lock(&c->lines_lock);
	c->lines[line].file_id = cf->entry.file_id;
	c->lines[line].block = block;
	c->lines[line].flags = (uint8_t)(LS_USED | (dirty ? LS_DIRTY : 0));
	if (c->line_hits)
		c->line_hits[line] = 0;
	if (dirty)
		c->ssd_dirty++;
	if (hy_policy_insert_at(c->policy, line, q) == 0)
		c->ssd_used++;
	pthread_mutex_unlock(&c->lines_lock);
	return 0;
}

/* Ages the policy once every half capacity of accesses. lines_lock held. */
static void line_accessed(struct hy_cache *c)
{
	if (++c->ssd_accesses % (c->capacity / 2 + 1) == 0)
		hy_policy_age(c->policy);
}

static void line_hit(struct hy_cache *c, uint32_t line)
{
	pthread_mutex_lock(&c->lines_lock);
	if (hy_policy_hit(c->policy, line) < 0)
		hy_log(LOG_ERR, "cache: line %" PRIu32 " hit but not in the policy", line);
	if (c->line_hits && c->line_hits[line] < UINT8_MAX)
		c->line_hits[line]++;
	line_accessed(c);
	pthread_mutex_unlock(&c->lines_lock);
}

/* Returns whether the journal had the line as it was (now it has not). */
static bool line_set_dirty(struct hy_cache *c, uint32_t line, bool dirty)
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

static int store_write(struct hy_cache *c, uint32_t line, uint8_t mask, const void *buf)
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
static void store_refused(struct hy_cache *c, uint32_t line, int rc)
{
	if (line != NONE)
		line_give_back(c, line);
	if (!atomic_exchange(&c->store_refused, true))
		hy_log(LOG_WARNING,
		       "cache: writing a line into the store failed (%s): blocks go home instead",
		       strerror(-rc));
}

/* Records @line's tail (0: the whole line). lines_lock held. A map that
 * cannot grow keeps the tail out: the line is then recovered whole, as
 * before tails existed (up to 511 bytes past the end of the file). */
static void set_tail(struct hy_cache *c, uint64_t line, uint16_t tail)
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
static void table_record(void *arg, uint64_t line, struct hy_cache_line *out)
{
	struct hy_cache *c = arg;
	const struct line_state *ls = &c->lines[line];
	struct hy_cache_entry e;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->lines_lock);
	if ((ls->flags & LS_USED) &&
	    hy_cache_index_lookup(c->index, ls->file_id, ls->block, &e) == 0 && e.line == line) {
		out->used = true;
		out->file_id = ls->file_id;
		out->block = ls->block;
		out->valid = e.valid;
		out->dirty = (ls->flags & LS_DISK_DIRTY) ? e.dirty : 0;
		if (out->dirty) {
			uint32_t tail;

			if (hy_keymap_get(&c->tails, line, &tail))
				out->tail = (uint16_t)tail;
		}
	}
	pthread_mutex_unlock(&c->lines_lock);
}

/* ---- the journal ----------------------------------------------------------- */

/* Appends @n records (no wait) and waits for the last: a checkpoint when
 * the journal is full. 0 or a negative errno. */
static int journal_records(struct hy_cache *c, const struct hy_cache_journal_record *r, size_t n)
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
		if (rc == 0)
			atomic_fetch_add(&c->st.journal_records, 1);
	}
	if (rc == 0 && seq)
		rc = hy_cache_store_journal_wait(c->store, seq);
	return rc;
}

/* Journals the clean or free records @r of lines whose LS_DISK_DIRTY flag
 * the caller cleared first: a line the journal says is dirty is reused only
 * once a record saying otherwise is durable, so when they cannot be made
 * durable the flags come back. 0 or a negative errno. */
static int journal_clean_records(struct hy_cache *c, const struct hy_cache_journal_record *r,
				 size_t n)
{
	int rc = n ? journal_records(c, r, n) : 0;

	if (rc < 0) {
		pthread_mutex_lock(&c->lines_lock);
		for (size_t i = 0; i < n; i++)
			c->lines[r[i].line].flags |= LS_DISK_DIRTY;
		pthread_mutex_unlock(&c->lines_lock);
	}
	return rc;
}

/* ---- stale copies ---------------------------------------------------------- */

static int drop_range(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
		      uint64_t first, uint64_t nblocks, bool home_first);

/* Whether @cf's blocks are current for the home file's attributes @a:
 * its ctime is the stamp, and it is not smaller than then. The size
 * catches a truncation within the ctime's granularity (a clock tick),
 * such as an O_TRUNC open right after a write. */
static bool fresh_for(const struct cfile *cf, const struct hy_device_attr *a)
{
	return atomic_load(&cf->blocks) == 0 ||
	       (atomic_load(&cf->stamp) == a->stamp && a->size >= atomic_load(&cf->size));
}

static void drop_stale(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f);
static void refresh_stamp(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f);

/* Gate exclusive: drops what a change the cache did not see made stale:
 * everything after a ctime change, the part past the end after a
 * truncation (dirty sectors before the end go home first). */
static void make_fresh(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
		       const struct hy_device_attr *a)
{
	if (fresh_for(cf, a))
		return;
	if (atomic_load(&cf->stamp) != a->stamp) {
		drop_stale(c, cf, f);
	} else {
		int rc = drop_range(c, cf, f, a->size / LINE, UINT64_MAX, true);

		if (rc < 0)
			hy_log(LOG_ERR,
			       "cache: file %" PRIu64 " was truncated; dropping its "
			       "blocks past the end failed: %s",
			       f->file_id, strerror(-rc));
	}
	refresh_stamp(c, cf, f);
}

/* make_fresh() with the home file's attributes now. Gate exclusive. */
static int ensure_fresh(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f)
{
	struct hy_device_attr a;
	int rc;

	if (atomic_load(&cf->blocks) == 0)
		return 0;
	rc = c->lower.getattr(c->lower.arg, f, &a);
	if (rc == 0)
		make_fresh(c, cf, f, &a);
	return rc;
}

/* The file changed outside the mount: its blocks go (their dirty sectors
 * home first, within its size). Gate exclusive. */
static void drop_stale(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f)
{
	int rc = drop_range(c, cf, f, 0, UINT64_MAX, true);

	atomic_fetch_add(&c->st.stale_files, 1);
	if (rc < 0)
		hy_log(LOG_ERR,
		       "cache: file %" PRIu64 " changed outside the mount; dropping its "
		       "cached blocks failed: %s",
		       f->file_id, strerror(-rc));
	else
		hy_log(LOG_INFO,
		       "cache: file %" PRIu64 ": its ctime moved since its blocks were cached (a "
		       "change outside the mount): they are dropped",
		       f->file_id);
}

/* Refreshes the stamp after a change through the mount: gate exclusive. */
static void refresh_stamp(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f)
{
	struct hy_device_attr a;

	if (c->lower.getattr(c->lower.arg, f, &a) == 0) {
		atomic_store(&cf->stamp, a.stamp);
		atomic_store(&cf->size, a.size);
	}
}

/* ---- reading sectors from below ------------------------------------------ */

/* Reads block @block's sectors in @mask from below into @buf (a whole
 * line; bytes past the end of the file read as zero). */
static int read_below(struct hy_cache *c, const struct hy_cache_file *f, uint64_t block,
		      uint8_t mask, unsigned char *buf)
{
	for (int s = 0; s < HY_CACHE_SECTORS; s++) {
		int e = s;
		ssize_t r;

		if (!(mask & (1u << s)))
			continue;
		while (e + 1 < HY_CACHE_SECTORS && (mask & (1u << (e + 1))))
			e++;
		memset(buf + s * SECTOR, 0, (size_t)(e - s + 1) * SECTOR);
		r = c->lower.read(c->lower.arg, f, buf + s * SECTOR, (size_t)(e - s + 1) * SECTOR,
				  (off_t)(block * LINE + (uint64_t)s * SECTOR));
		if (r < 0)
			return (int)r;
		s = e;
	}
	return 0;
}

/* After dirty blocks went home: the home file gets back the modification
 * time @before (read before the writes) had. The data is the mount's
 * writes of earlier, which set the time then, and a utimes(2) since
 * (rsync -t, cp -p, make's touch) must not be undone by the writing. */
static void keep_mtime(struct hy_cache *c, const struct hy_cache_file *f,
		       const struct hy_device_attr *before)
{
	int rc;

	if (before->mtime_ns < 0)
		return;
	rc = c->lower.set_mtime(c->lower.arg, f, before->mtime_ns);
	if (rc < 0 && rc != -EOPNOTSUPP)
		hy_log(LOG_WARNING,
		       "cache: file %" PRIu64 ": cannot keep its modification time after its "
		       "blocks went home: %s",
		       f->file_id, strerror(-rc));
}

/* Writes the sectors of @mask of @buf (block @block's line) home, clipped
 * to @size. 0 or a negative errno. */
static int write_home(struct hy_cache *c, const struct hy_cache_file *f, uint64_t block,
		      uint8_t mask, const unsigned char *buf, uint64_t size)
{
	for (int s = 0; s < HY_CACHE_SECTORS; s++) {
		uint64_t at, end;
		int e = s;
		ssize_t r;

		if (!(mask & (1u << s)))
			continue;
		while (e + 1 < HY_CACHE_SECTORS && (mask & (1u << (e + 1))))
			e++;
		at = block * LINE + (uint64_t)s * SECTOR;
		end = block * LINE + (uint64_t)(e + 1) * SECTOR;
		if (end > size)
			end = size;
		if (at < end) {
			r = c->lower.write(c->lower.arg, f, buf + s * SECTOR, (size_t)(end - at),
					   (off_t)at);
			if (r < 0)
				return (int)r;
			if ((uint64_t)r != end - at)
				return -EIO;
		}
		s = e;
	}
	return 0;
}

/* ---- read ------------------------------------------------------------------- */

/* What the cache holds of one block: copied out under the locks. */
struct held {
	int where; /* 0 nothing, 1 DRAM slot, 2 SSD line */
	uint32_t slot_or_line;
	uint8_t valid, dirty;
};

/* Finds @block of @file_id, counting an access (@touch). */
static void find_block(struct hy_cache *c, uint64_t file_id, uint64_t block, bool touch,
		       struct held *h)
{
	struct front *fr = &c->front;
	struct hy_cache_entry e;
	uint32_t s;

	memset(h, 0, sizeof(*h));
	if (fr->nslots) {
		pthread_mutex_lock(&fr->lock);
		s = front_find(fr, file_id, block);
		if (s != NONE) {
			h->where = 1;
			h->slot_or_line = s;
			h->valid = fr->slots[s].valid;
			h->dirty = fr->slots[s].dirty;
			if (touch)
				front_touch(fr, s);
		}
		pthread_mutex_unlock(&fr->lock);
		if (h->where)
			return;
	}
	if (hy_cache_index_lookup(c->index, file_id, block, &e) == 0) {
		h->where = 2;
		h->slot_or_line = e.line;
		h->valid = e.valid;
		h->dirty = e.dirty;
	}
}

/* Copies the sectors of @mask that @h holds into @line. */
static int copy_held(struct hy_cache *c, const struct held *h, uint8_t mask, unsigned char *line)
{
	mask &= h->valid;
	if (!mask)
		return 0;
	if (h->where == 1) {
		const unsigned char *d = slot_data(&c->front, h->slot_or_line);

		for (int s = 0; s < HY_CACHE_SECTORS; s++)
			if (mask & (1u << s))
				memcpy(line + s * SECTOR, d + s * SECTOR, SECTOR);
		return 0;
	}
	return hy_cache_store_read_line(c->store, h->slot_or_line, mask, line);
}

/* The LRU3 queue a line enters from a request with @hint, or from the
 * front buffer with @heat (negative: no heat known, the cold queue): the
 * eviction preference first, then a low admission, then the heat. */
static enum hy_policy_queue queue_for_hint(uint8_t admit, uint8_t evict, double heat,
					   double threshold)
{
	double t = threshold > 0 ? threshold : 1.0;

	if (evict == HY_EVICT_LATE)
		return HY_POLICY_HOT;
	if (evict == HY_EVICT_EARLY || admit == HY_ADMIT_LOW || heat < 0)
		return HY_POLICY_COLD;
	/* FusionCache's queues by predicted heat: at twice the threshold
	 * warm, at four times hot */
	return heat >= 4 * t ? HY_POLICY_HOT : heat >= 2 * t ? HY_POLICY_WARM : HY_POLICY_COLD;
}

static void slot_set_hint(struct slot *x, const struct hy_cache_hint *hint)
{
	x->admit = hint ? hint->admit : HY_ADMIT_NORMAL;
	x->evict = hint ? hint->evict : HY_EVICT_NORMAL;
}

/* A block read from below with no cached copy enters the cache: the front
 * buffer when it has a free slot; without a front buffer, the store if
 * the policy admits it. Gate held (shared: another reader may have put it
 * in meanwhile, then this copy is not kept). */
static void fill_block(struct hy_cache *c, struct cfile *cf, uint64_t block, uint8_t valid,
		       const unsigned char *line, const struct hy_cache_hint *hint)
{
	struct front *fr = &c->front;
	uint64_t file_id = cf->entry.file_id;

	if (!valid)
		return;
	if (fr->nslots) {
		uint32_t s;

		pthread_mutex_lock(&fr->lock);
		s = front_add(c, file_id, block);
		if (s != NONE) {
			memcpy(slot_data(fr, s), line, LINE);
			fr->slots[s].valid = valid;
			slot_set_hint(&fr->slots[s], hint);
			atomic_fetch_add(&cf->blocks, 1);
			atomic_fetch_add(&cf->in_front, 1);
		}
		pthread_mutex_unlock(&fr->lock);
		return;
	}
	{
		bool admit;
		int64_t l;

		pthread_mutex_lock(&c->lines_lock);
		admit = hy_policy_admit(c->policy, file_id * 0x9e3779b97f4a7c15ull ^ block);
		line_accessed(c);
		pthread_mutex_unlock(&c->lines_lock);
		if (!admit) {
			atomic_fetch_add(&c->st.policy_refused, 1);
			return;
		}
		l = line_alloc(c, file_id, false);
		if (l < 0)
			return;
		if (store_write(c, (uint32_t)l, valid, line) < 0) {
			line_give_back(c, (uint32_t)l);
			return;
		}
		line_commit(c, cf, (uint32_t)l, block, valid, 0,
			    hint ? queue_for_hint(hint->admit, hint->evict, -1, 0)
				 : HY_POLICY_COLD);
	}
}

/* Serves blocks [@b0, @b1) from below: one read of the whole run, cached
 * sectors laid over it, then what lies in the request [@off, @end) copied
 * out, and the blocks not cached cached (unless the hint bypasses). The
 * run may reach past the request on either side: the rest of the lines
 * the hint's line size makes it read. */
static ssize_t read_run(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
			uint64_t b0, uint64_t b1, unsigned char *out, uint64_t off, uint64_t end,
			const struct hy_cache_hint *hint)
{
	size_t len = (size_t)(b1 - b0) * LINE;
	unsigned char *run = malloc(len);
	ssize_t r;

	if (!run)
		return -ENOMEM;
	r = c->lower.read(c->lower.arg, f, run, len, (off_t)(b0 * LINE));
	if (r < 0) {
		free(run);
		return r;
	}
	memset(run + r, 0, len - (size_t)r);
	for (uint64_t b = b0; b < b1; b++) {
		unsigned char *line = run + (b - b0) * LINE;
		uint64_t from = b * LINE > off ? b * LINE : off;
		uint64_t to = (b + 1) * LINE < end ? (b + 1) * LINE : end;
		uint64_t have = (uint64_t)r > (b - b0) * LINE ? (uint64_t)r - (b - b0) * LINE : 0;
		bool asked = b * LINE < end && (b + 1) * LINE > off;
		struct held h;
		int rc;

		find_block(c, f->file_id, b, asked, &h);
		if (h.where && !asked)
			continue; /* read ahead for its line, but cached already */
		if (h.where) {
			rc = copy_held(c, &h, HY_CACHE_ALL_SECTORS, line);
			if (rc < 0) {
				free(run);
				return rc;
			}
			if (h.where == 2)
				line_hit(c, h.slot_or_line);
		} else {
			uint8_t valid = 0;

			atomic_fetch_add(asked ? &c->st.read_misses : &c->st.line_prefetched, 1);
			if (have > LINE)
				have = LINE;
			for (int s = 0; s < HY_CACHE_SECTORS && (uint64_t)s * SECTOR < have; s++)
				valid |= (uint8_t)(1u << s);
			if (hint && hint->admit == HY_ADMIT_BYPASS)
				atomic_fetch_add(&c->st.admit_bypassed, 1);
			else
				fill_block(c, cf, b, valid, line, hint);
		}
		if (asked)
			memcpy(out + (from - off), line + (from - b * LINE), (size_t)(to - from));
	}
	free(run);
	return 0;
}

static void reconfigure_file(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
			     const struct hy_cache_hint *hint, int write_policy);

/* The blocks a run of misses [@r0, @r1) of a request for blocks [@first,
 * @last] reads: at the request's edges, out to the hint's line size
 * (within the file's @nblocks); in its middle, the run as it is (the
 * cached blocks around it are the line's). */
static void line_extend(const struct hy_cache_hint *hint, uint64_t first, uint64_t last,
			uint64_t nblocks, uint64_t *r0, uint64_t *r1)
{
	uint64_t per;

	if (!hint || hint->line_size <= LINE || hint->admit == HY_ADMIT_BYPASS)
		return;
	per = hint->line_size / LINE;
	if (*r0 == first)
		*r0 -= *r0 % per;
	if (*r1 == last + 1) {
		uint64_t up = (*r1 + per - 1) / per * per;

		*r1 = up < nblocks ? up : nblocks > *r1 ? nblocks : *r1;
	}
}

void hy_cache_hint_from(const struct hy_workload_policy_table *t, enum hy_category category,
			bool write, int cls, struct hy_cache_hint *hint)
{
	static const int write_policy[] = {
		[HY_WORKLOAD_WRITE_MOUNT] = -1,
		[HY_WORKLOAD_WRITE_BACK] = HY_CACHE_WRITE_BACK,
		[HY_WORKLOAD_WRITE_THROUGH] = HY_CACHE_WRITE_THROUGH,
		[HY_WORKLOAD_WRITE_AROUND] = HY_CACHE_WRITE_AROUND,
	};
	const struct hy_workload_policy *row = hy_workload_policy_row(t, category);

	if (cls < 0 || cls >= HY_CLASS_COUNT)
		cls = HY_CLASS_RANDOM;
	hint->write = (unsigned)row->write < 4 ? write_policy[row->write] : -1;
	hint->admit = row->admit[write][cls];
	hint->evict = (uint8_t)row->evict;
	hint->line_size = row->line_size;
	hint->seq_cutoff = row->seq_cutoff;
}

ssize_t hy_cache_read(struct hy_cache *c, const struct hy_cache_file *f, void *buf, size_t size,
		      off_t off)
{
	return hy_cache_read_hinted(c, f, NULL, buf, size, off);
}

ssize_t hy_cache_read_hinted(struct hy_cache *c, const struct hy_cache_file *f,
			     const struct hy_cache_hint *hint, void *buf, size_t size, off_t off)
{
	struct hy_device_attr a;
	uint64_t end, first, last, nblocks, run = UINT64_MAX;
	unsigned char line[LINE];
	struct cfile *cf;
	ssize_t rc = 0;

	if (size == 0 || off < 0 || !f->file_id)
		return c->lower.read(c->lower.arg, f, buf, size, off);
	cf = cfile_get(c, f->file_id, true);
	if (!cf)
		return c->lower.read(c->lower.arg, f, buf, size, off);
	note_use(c, cf);
	if (hint)
		reconfigure_file(c, cf, f, hint, -1);
	pthread_rwlock_rdlock(gate(c, f->file_id));
	rc = c->lower.getattr(c->lower.arg, f, &a);
	if (rc == 0 && !fresh_for(cf, &a)) {
		pthread_rwlock_unlock(gate(c, f->file_id));
		pthread_rwlock_wrlock(gate(c, f->file_id));
		rc = c->lower.getattr(c->lower.arg, f, &a);
		if (rc == 0)
			make_fresh(c, cf, f, &a);
		pthread_rwlock_unlock(gate(c, f->file_id));
		pthread_rwlock_rdlock(gate(c, f->file_id));
		rc = c->lower.getattr(c->lower.arg, f, &a);
	}
	if (rc < 0)
		goto out;
	if (atomic_load(&cf->blocks) == 0) {
		atomic_store(&cf->stamp, a.stamp);
		atomic_store(&cf->size, a.size);
	}
	if ((uint64_t)off >= a.size)
		goto out;
	end = (uint64_t)off + size < a.size ? (uint64_t)off + size : a.size;
	first = (uint64_t)off / LINE;
	last = (end - 1) / LINE;
	nblocks = (a.size + LINE - 1) / LINE;
	for (uint64_t b = first; b <= last && rc == 0; b++) {
		uint64_t from = b * LINE > (uint64_t)off ? b * LINE : (uint64_t)off;
		uint64_t to = (b + 1) * LINE < end ? (b + 1) * LINE : end;
		uint8_t covered, touched;
		struct held h;

		hy_cache_sectors((uint32_t)(from - b * LINE), (uint32_t)(to - from), &covered,
				 &touched);
		find_block(c, f->file_id, b, false, &h);
		if (h.where && (h.valid & touched) == touched) {
			if (run != UINT64_MAX) {
				uint64_t r0 = run, r1 = b;

				line_extend(hint, first, last, nblocks, &r0, &r1);
				rc = read_run(c, cf, f, r0, r1, buf, (uint64_t)off, end, hint);
				run = UINT64_MAX;
				if (rc < 0)
					break;
			}
			find_block(c, f->file_id, b, true, &h);
			rc = copy_held(c, &h, touched, line);
			if (rc < 0)
				break;
			if (h.where == 1) {
				atomic_fetch_add(&c->st.read_hits_dram, 1);
			} else {
				atomic_fetch_add(&c->st.read_hits_ssd, 1);
				line_hit(c, h.slot_or_line);
			}
			memcpy((char *)buf + (from - (uint64_t)off), line + (from - b * LINE),
			       (size_t)(to - from));
		} else if (run == UINT64_MAX) {
			run = b;
		}
	}
	if (rc == 0 && run != UINT64_MAX) {
		uint64_t r0 = run, r1 = last + 1;

		line_extend(hint, first, last, nblocks, &r0, &r1);
		rc = read_run(c, cf, f, r0, r1, buf, (uint64_t)off, end, hint);
	}
	if (rc == 0)
		rc = (ssize_t)(end - (uint64_t)off);
out:
	pthread_rwlock_unlock(gate(c, f->file_id));
	cfile_put(c, cf);
	return rc;
}

/* ---- write ---------------------------------------------------------------- */

/* Writes @seg (bytes [@at, @at + @len) of block @block) into what holds
 * the block, or a new DRAM slot or SSD line. Returns 1 when cached, 0 when
 * the cache had no room (the caller sends it home), or a negative errno.
 * Gate exclusive. */
static int settle_range(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *req,
			uint64_t first, uint64_t nblocks, bool home_first, bool drop);

static int write_block(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
		       uint64_t block, uint32_t at, uint32_t len, const unsigned char *seg,
		       bool dirty, bool allocate, const struct hy_cache_hint *hint)
{
	struct front *fr = &c->front;
	unsigned char line[LINE];
	uint8_t covered, touched, partial;
	struct held h;
	int rc;

	hy_cache_sectors(at, len, &covered, &touched);
	partial = (uint8_t)(touched & ~covered);
	find_block(c, f->file_id, block, true, &h);
	if (!h.where && !allocate)
		return 1; /* write-around: nothing cached to keep current */
	/* the sectors touched in part: their old bytes from the cache or below */
	if (partial) {
		uint8_t cached = h.where ? (uint8_t)(partial & h.valid) : 0;
		/* the request's descriptor may be write-only: the cache's own
		 * object of the file reads */
		struct hy_cache_file below = {f->file_id, cf->home >= 0 ? cf->home : f->object};

		rc = copy_held(c, &h, cached, line);
		if (rc == 0)
			rc = read_below(c, &below, block, (uint8_t)(partial & ~cached), line);
		if (rc == -EBADF && !dirty) {
			/* home has the write already: the sectors it touches in
			 * part are left out of the cache instead */
			touched = (uint8_t)(covered | cached);
			rc = 0;
			if (!touched)
				return 1;
		}
		if (rc < 0)
			return rc;
	}
	memcpy(line + at, seg, len);
	if (h.where == 1) {
		/* the slot is the gate's (exclusive): its data needs no lock,
		 * its masks need the front buffer's */
		for (int s = 0; s < HY_CACHE_SECTORS; s++)
			if (touched & (1u << s))
				memcpy(slot_data(fr, h.slot_or_line) + s * SECTOR,
				       line + s * SECTOR, SECTOR);
		pthread_mutex_lock(&fr->lock);
		struct slot *x = &fr->slots[h.slot_or_line];
		uint8_t before = x->dirty;

		x->valid |= touched;
		if (dirty)
			x->dirty |= touched;
		if (!before && x->dirty)
			fr->dirty++;
		pthread_mutex_unlock(&fr->lock);
		if (!before && dirty)
			pending_add(cf, block);
		note_dirty(c, cf, before, (uint8_t)(before | (dirty ? touched : 0)));
		atomic_fetch_add(&c->st.write_hits_dram, 1);
		return 1;
	}
	if (h.where == 2) {
		struct hy_cache_entry e = {0};

		rc = store_write(c, h.slot_or_line, touched, line);
		if (rc < 0) {
			/* the store refused the line's new data (the sectors there
			 * may be old or new now): its dirty sectors go home and it
			 * leaves the cache; then this request goes home over them
			 * (again, for write-through: the settling may have put
			 * older sectors over what it wrote first). Found by
			 * faults.sh (enospc-some): the write failed with the
			 * store's error, and a first fix that left the request to
			 * the caller lost write-through data under older sectors. */
			int settled = settle_range(c, cf, f, block, 1, true, true);
			ssize_t r;

			store_refused(c, NONE, rc);
			if (settled < 0)
				return settled;
			home_changed(cf);
			r = c->lower.write(c->lower.arg, f, seg, len, (off_t)(block * LINE + at));
			if (r < 0)
				return (int)r;
			if ((size_t)r != len)
				return -EIO;
			atomic_fetch_add(&c->st.bypassed, 1);
			return 1;
		}
		rc = hy_cache_index_update_masks(c->index, f->file_id, block, touched,
						 dirty ? touched : 0, 0, &e);
		if (rc < 0)
			return rc;
		note_dirty(c, cf, h.dirty, e.dirty);
		if (e.dirty && (line_set_dirty(c, h.slot_or_line, true) || !h.dirty))
			pending_add(cf, block); /* its record (if any) is old now */
		line_hit(c, h.slot_or_line);
		atomic_fetch_add(&c->st.write_hits_ssd, 1);
		return 1;
	}
	atomic_fetch_add(&c->st.write_misses, 1);
	if (fr->nslots) {
		uint32_t s;

		pthread_mutex_lock(&fr->lock);
		s = front_add(c, f->file_id, block);
		if (s != NONE) {
			for (int k = 0; k < HY_CACHE_SECTORS; k++)
				if (touched & (1u << k))
					memcpy(slot_data(fr, s) + k * SECTOR, line + k * SECTOR,
					       SECTOR);
			fr->slots[s].valid = touched;
			fr->slots[s].dirty = dirty ? touched : 0;
			slot_set_hint(&fr->slots[s], hint);
			if (dirty)
				fr->dirty++;
			atomic_fetch_add(&cf->blocks, 1);
			atomic_fetch_add(&cf->in_front, 1);
		}
		pthread_mutex_unlock(&fr->lock);
		if (s != NONE) {
			note_dirty(c, cf, 0, dirty ? touched : 0);
			if (dirty)
				pending_add(cf, block);
			return 1;
		}
	}
	/* no front buffer, or it is full: straight to the store */
	{
		int64_t l = line_alloc(c, f->file_id, true);

		if (l < 0)
			return 0;
		rc = store_write(c, (uint32_t)l, touched, line);
		if (rc < 0) {
			store_refused(c, (uint32_t)l, rc);
			return 0; /* home instead */
		}
		rc = line_commit(c, cf, (uint32_t)l, block, touched, dirty ? touched : 0,
				 hint ? queue_for_hint(hint->admit, hint->evict, -1, 0)
				      : HY_POLICY_COLD);
		if (rc == 0 && dirty)
			pending_add(cf, block);
		return rc < 0 ? 0 : 1;
	}
}

/* Adds the write [@off, @off + @size) to the file's streams and returns
 * the bytes of the stream it belongs to: it continues one (starts where
 * it ends), or leads one (ends where it starts), or starts a new one in
 * the place of the shortest; streams that meet are joined. The kernel
 * flushes a file's pages from parallel requests, up to about 16 MiB out
 * of order (seen here): a piece up to STREAM_GAP past a longer stream
 * counts as that stream's. Gate held. */
static uint64_t stream_run(struct cfile *cf, uint64_t off, uint64_t size)
{
	struct stream *st = cf->streams, *s = NULL;
	uint64_t end = off + size;

	for (int i = 0; i < STREAMS && !s; i++)
		if (st[i].run && st[i].end == off) {
			s = &st[i];
			s->end = end;
		}
	for (int i = 0; i < STREAMS && !s; i++)
		if (st[i].run && st[i].start == end) {
			s = &st[i];
			s->start = off;
		}
	if (s) {
		s->run += size;
	} else {
		s = &st[0];
		for (int i = 1; i < STREAMS; i++)
			if (st[i].run < s->run)
				s = &st[i];
		*s = (struct stream){off, end, size};
	}
	for (int i = 0; i < STREAMS; i++) {
		struct stream *u = &st[i];

		if (u == s || !u->run)
			continue;
		if (u->start == s->end) {
			s->end = u->end;
		} else if (u->end == s->start) {
			s->start = u->start;
		} else {
			continue;
		}
		s->run += u->run;
		memset(u, 0, sizeof(*u));
	}
	/* a piece that arrived ahead of its turn, just past a long stream's
	 * end, belongs to it (it joins once the gap is written) */
	for (int i = 0; i < STREAMS; i++)
		if (&st[i] != s && st[i].run > s->run && s->start > st[i].end &&
		    s->start - st[i].end <= STREAM_GAP)
			return st[i].run;
	return s->run;
}

ssize_t hy_cache_write(struct hy_cache *c, const struct hy_cache_file *f, const void *buf,
		       size_t size, off_t off)
{
	return hy_cache_write_hinted(c, f, NULL, buf, size, off);
}

ssize_t hy_cache_write_hinted(struct hy_cache *c, const struct hy_cache_file *f,
			      const struct hy_cache_hint *hint, const void *buf, size_t size,
			      off_t off)
{
	enum hy_cache_write_policy wp = c->cfg.write_policy;
	uint64_t cutoff = c->cfg.seq_cutoff;
	struct hy_device_attr a;
	struct cfile *cf;
	uint64_t end;
	ssize_t rc;

	if (size == 0 || off < 0 || !f->file_id)
		return c->lower.write(c->lower.arg, f, buf, size, off);
	cf = cfile_get(c, f->file_id, true);
	if (!cf)
		return c->lower.write(c->lower.arg, f, buf, size, off);
	note_use(c, cf);
	if (hint) {
		if (hint->write >= HY_CACHE_WRITE_BACK && hint->write <= HY_CACHE_WRITE_AROUND)
			wp = (enum hy_cache_write_policy)hint->write;
		if (hint->seq_cutoff != HY_WORKLOAD_CUTOFF_MOUNT)
			cutoff = hint->seq_cutoff;
		reconfigure_file(c, cf, f, hint, (int)wp);
		if (hint->admit == HY_ADMIT_BYPASS && wp != HY_CACHE_WRITE_AROUND) {
			wp = HY_CACHE_WRITE_AROUND;
			atomic_fetch_add(&c->st.admit_bypassed, ((uint64_t)off + size - 1) / LINE -
									(uint64_t)off / LINE + 1);
		}
	}
	pthread_rwlock_wrlock(gate(c, f->file_id));
	atomic_fetch_add(&cf->generation, 1);
	rc = c->lower.getattr(c->lower.arg, f, &a);
	if (rc < 0)
		goto out;
	make_fresh(c, cf, f, &a);
	if (atomic_load(&cf->blocks) == 0) {
		atomic_store(&cf->stamp, a.stamp);
		atomic_store(&cf->size, a.size);
	}
	/* bcache's sequential cutoff, per file (the gate orders its writes) */
	if (cutoff && stream_run(cf, (uint64_t)off, size) > cutoff && wp != HY_CACHE_WRITE_AROUND) {
		wp = HY_CACHE_WRITE_AROUND;
		atomic_fetch_add(&c->st.seq_bypassed,
				 ((uint64_t)off + size - 1) / LINE - (uint64_t)off / LINE + 1);
	}
	end = (uint64_t)off + size;
	/* a write past the home file's end goes home now, with its data: the
	 * size at home is what every stat sees and what a kill -9 leaves, so
	 * it may only grow over bytes that are there (an extension with the
	 * data only in the cache reads as zeros after a crash); it is
	 * written once, as write-through writes, and cached clean. Decided
	 * before a way home is held: the engine's objects are few, and a
	 * file that never has a dirty block must not take one */
	if (wp == HY_CACHE_WRITE_BACK && end > a.size)
		wp = HY_CACHE_WRITE_THROUGH;
	if (wp == HY_CACHE_WRITE_BACK && cf->home < 0 &&
	    c->lower.hold_object(c->lower.arg, f, &cf->home) < 0) {
		cf->home = -1;
		wp = HY_CACHE_WRITE_THROUGH; /* no way home later: write through now */
	}
	if (wp != HY_CACHE_WRITE_BACK) {
		home_changed(cf);
		rc = c->lower.write(c->lower.arg, f, buf, size, off);
		if (rc <= 0)
			goto out;
		size = (size_t)rc;
		end = (uint64_t)off + size;
	} else {
		/* room at home first: a plain directory fails a write its disk
		 * cannot hold, and a dirty block home cannot take would be stuck
		 * (the cleaner, the unmount and the next mount would all fail) */
		if (c->lower.reserve) {
			rc = c->lower.reserve(c->lower.arg, f, (uint64_t)off, size);
			if (rc == -ENOSPC || rc == -EDQUOT || rc == -EFBIG)
				goto out;
		}
		/* the home file has the time a plain write gives it */
		rc = c->lower.set_mtime(c->lower.arg, f, -1);
		if (rc < 0 && rc != -EOPNOTSUPP)
			goto out;
	}
	rc = 0;
	for (uint64_t b = (uint64_t)off / LINE; b <= (end - 1) / LINE && rc == 0; b++) {
		uint64_t from = b * LINE > (uint64_t)off ? b * LINE : (uint64_t)off;
		uint64_t to = (b + 1) * LINE < end ? (b + 1) * LINE : end;
		const unsigned char *seg = (const unsigned char *)buf + (from - (uint64_t)off);
		int w = write_block(c, cf, f, b, (uint32_t)(from - b * LINE), (uint32_t)(to - from),
				    seg, wp == HY_CACHE_WRITE_BACK, wp != HY_CACHE_WRITE_AROUND,
				    hint);

		struct held h;

		if (w < 0 && wp != HY_CACHE_WRITE_BACK &&
		    (find_block(c, f->file_id, b, false, &h), !h.dirty)) {
			/* home has the write; a clean copy the cache could not
			 * update must not be read again (a dirty one, of a
			 * write-back file past its cutoff, fails the write) */
			if (drop_range(c, cf, f, b, 1, false) < 0)
				rc = w;
		} else if (w < 0) {
			rc = w;
		} else if (w == 0 && wp == HY_CACHE_WRITE_BACK) {
			/* no room anywhere: this block goes home now */
			ssize_t r;

			home_changed(cf);
			r = c->lower.write(c->lower.arg, f, seg, (size_t)(to - from), (off_t)from);

			atomic_fetch_add(&c->st.bypassed, 1);
			if (r < 0)
				rc = r;
			else if ((uint64_t)r != to - from)
				rc = -EIO;
		}
	}
	if (rc == 0)
		rc = (ssize_t)size;
	refresh_stamp(c, cf, f);
out:
	pthread_rwlock_unlock(gate(c, f->file_id));
	cfile_put(c, cf);
	return rc;
}

/* ---- leaving the cache ---------------------------------------------------- */

/* The DRAM slots of @file_id in [@first, @first + @nblocks), as slot
 * numbers: by key when the range is small, else by a scan. */
static int64_t front_slots_of(struct hy_cache *c, uint64_t file_id, uint64_t first,
			      uint64_t nblocks, uint32_t **out)
{
	struct front *fr = &c->front;
	/* room for every answer there can be, so nothing is cut short */
	size_t n = 0, cap = nblocks < fr->nslots ? (size_t)nblocks : fr->nslots;
	uint32_t *v = malloc((cap ? cap : 1) * sizeof(*v));

	*out = NULL;
	if (!v)
		return -ENOMEM;
	pthread_mutex_lock(&fr->lock);
	if (nblocks <= fr->nslots) {
		for (uint64_t b = first; b < first + nblocks && n < cap; b++) {
			uint32_t s = front_find(fr, file_id, b);

			if (s != NONE)
				v[n++] = s;
		}
	} else {
		for (uint32_t s = 0; s < fr->nslots && n < cap; s++)
			if (fr->slots[s].used && fr->slots[s].file_id == file_id &&
			    fr->slots[s].block >= first && fr->slots[s].block - first < nblocks)
				v[n++] = s;
	}
	pthread_mutex_unlock(&fr->lock);
	*out = v;
	return (int64_t)n;
}

/* Writes the dirty sectors of @file's blocks in [@first, +@nblocks) home,
 * and (@drop) removes the range from the cache. Gate exclusive. */
static int settle_range(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *req,
			uint64_t first, uint64_t nblocks, bool home_first, bool drop)
{
	/* the request's descriptor may be read-only (a copy's source): dirty
	 * blocks go home through the cache's own object of the file */
	struct hy_cache_file below = {req->file_id, cf->home >= 0 ? cf->home : req->object};
	const struct hy_cache_file *f = &below;
	struct front *fr = &c->front;
	struct hy_cache_entry *ents = NULL;
	struct hy_cache_journal_record *frees = NULL;
	struct hy_device_attr a = {0, -1, UINT64_MAX};
	unsigned char line[LINE];
	bool wrote = false;
	uint32_t *slots = NULL;
	size_t nslots = 0, nfrees = 0;
	int64_t n;
	int rc = 0;

	if (nblocks == 0 || atomic_load(&cf->blocks) == 0)
		return 0;
	if (first + nblocks < first)
		nblocks = UINT64_MAX - first;
	if (home_first && atomic_load(&cf->dirty)) {
		rc = c->lower.getattr(c->lower.arg, f, &a);
		if (rc < 0)
			return rc;
	}
	/* DRAM */
	if (atomic_load(&cf->in_front)) {
		n = front_slots_of(c, f->file_id, first, nblocks, &slots);
		if (n < 0)
			return (int)n;
		nslots = (size_t)n;
	}
	for (size_t i = 0; i < nslots && rc == 0; i++) {
		struct slot *x = &fr->slots[slots[i]];

		if (home_first && x->dirty) {
			home_changed(cf);
			rc = write_home(c, f, x->block, x->dirty, slot_data(fr, slots[i]), a.size);
			wrote = true;
			if (rc < 0)
				break;
		}
		pthread_mutex_lock(&fr->lock);
		note_dirty(c, cf, x->dirty, drop ? 0 : (home_first ? 0 : x->dirty));
		if (drop) {
			front_remove(fr, slots[i]);
			atomic_fetch_sub(&cf->blocks, 1);
			atomic_fetch_sub(&cf->in_front, 1);
		} else if (home_first && x->dirty) {
			x->dirty = 0;
			fr->dirty--;
		}
		pthread_mutex_unlock(&fr->lock);
	}
	free(slots);
	if (rc < 0)
		return rc;
	/* SSD */
	n = hy_cache_index_lookup_range(c->index, f->file_id, first, nblocks, NULL, 0);
	if (n > 0) {
		ents = malloc((size_t)n * sizeof(*ents));
		frees = malloc((size_t)n * sizeof(*frees));
		if (!ents || !frees) {
			rc = -ENOMEM;
			goto out;
		}
		n = hy_cache_index_lookup_range(c->index, f->file_id, first, nblocks, ents,
						(size_t)n);
	}
	for (int64_t i = 0; i < n && rc == 0; i++) {
		struct hy_cache_entry *e = &ents[i];

		if (home_first && e->dirty) {
			home_changed(cf);
			rc = hy_cache_store_read_line(c->store, e->line, e->dirty, line);
			if (rc == 0)
				rc = write_home(c, f, e->block, e->dirty, line, a.size);
			wrote = true;
		}
	}
	for (int64_t i = 0; i < n && rc == 0 && wrote; i++)
		if (ents[i].dirty && line_disk_dirty(c, ents[i].line)) {
			rc = c->lower.sync(c->lower.arg, f); /* as the cleaner: above */
			break;
		}
	if (rc == 0 && wrote)
		keep_mtime(c, f, &a);
	/* the home file's ctime moved by the cache's own hand */
	if (rc == 0 && wrote)
		refresh_stamp(c, cf, f);
	for (int64_t i = 0; i < n && rc == 0; i++) {
		struct hy_cache_entry *e = &ents[i];

		/* the flag goes first: a checkpoint taken once the record is
		 * written (journal_records may take one itself) must not save
		 * the line as dirty again; home is durable already */
		pthread_mutex_lock(&c->lines_lock);
		if (c->lines[e->line].flags & LS_DISK_DIRTY) {
			c->lines[e->line].flags &= (uint8_t)~LS_DISK_DIRTY;
			frees[nfrees++] = (struct hy_cache_journal_record){
				.type = drop ? HY_CJ_FREE : HY_CJ_MASKS,
				.line = e->line,
				.valid = e->valid,
			};
		}
		pthread_mutex_unlock(&c->lines_lock);
	}
	if (rc == 0)
		rc = journal_clean_records(c, frees, nfrees);
	for (int64_t i = 0; i < n && rc == 0; i++) {
		struct hy_cache_entry *e = &ents[i];

		pthread_mutex_lock(&c->lines_lock);
		c->lines[e->line].flags &= (uint8_t)~LS_DISK_DIRTY;
		if (drop) {
			line_forget(c, e->line);
			free_push(c, e->line);
		}
		pthread_mutex_unlock(&c->lines_lock);
		if (!drop && e->dirty) {
			struct hy_cache_entry now;

			if (hy_cache_index_update_masks(c->index, f->file_id, e->block, 0, 0,
							HY_CACHE_ALL_SECTORS, &now) == 0)
				note_dirty(c, cf, e->dirty, now.dirty);
			line_set_dirty(c, e->line, false);
		}
	}
out:
	free(ents);
	free(frees);
	return rc;
}

static int drop_range(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
		      uint64_t first, uint64_t nblocks, bool home_first)
{
	return settle_range(c, cf, f, first, nblocks, home_first, true);
}

static uint64_t blocks_in(uint64_t off, uint64_t len, uint64_t *first)
{
	*first = off / LINE;
	if (len == UINT64_MAX || off + len < off)
		return UINT64_MAX - *first;
	return (off + len - 1) / LINE - *first + 1;
}

int hy_cache_change_begin(struct hy_cache *c, const struct hy_cache_file *f, uint64_t off,
			  uint64_t len)
{
	struct cfile *cf;
	uint64_t first, n = blocks_in(off, len, &first);
	int rc = 0;

	if (!f->file_id)
		return 0;
	pthread_rwlock_wrlock(gate(c, f->file_id));
	cf = cfile_get(c, f->file_id, false);
	if (cf)
		home_changed(cf); /* the change that follows is home's */
	/* an outside change before this one is judged first (end moves the
	 * stamp past both); the blocks at the edges keep bytes outside the
	 * range: their dirty sectors go home before they leave */
	if (cf)
		rc = ensure_fresh(c, cf, f);
	if (cf && len && rc == 0)
		rc = drop_range(c, cf, f, first, n, true);
	cfile_put(c, cf);
	return rc;
}

void hy_cache_change_end(struct hy_cache *c, const struct hy_cache_file *f)
{
	struct cfile *cf;

	if (!f->file_id)
		return;
	cf = cfile_get(c, f->file_id, false);
	if (cf && atomic_load(&cf->blocks))
		refresh_stamp(c, cf, f);
	cfile_put(c, cf);
	pthread_rwlock_unlock(gate(c, f->file_id));
}

bool hy_cache_has_blocks(struct hy_cache *c, uint64_t file_id)
{
	struct cfile *cf = cfile_get(c, file_id, false);
	bool has = cf && atomic_load(&cf->blocks);

	cfile_put(c, cf);
	return has;
}

int hy_cache_write_home(struct hy_cache *c, const struct hy_cache_file *f, uint64_t off,
			uint64_t len)
{
	struct cfile *cf;
	uint64_t first, n;
	int rc;

	if (!f->file_id || len == 0)
		return 0;
	cf = cfile_get(c, f->file_id, false);
	if (!cf)
		return 0;
	n = blocks_in(off, len, &first);
	pthread_rwlock_wrlock(gate(c, f->file_id));
	rc = ensure_fresh(c, cf, f);
	if (rc == 0 && atomic_load(&cf->dirty))
		rc = settle_range(c, cf, f, first, n, true, false);
	pthread_rwlock_unlock(gate(c, f->file_id));
	cfile_put(c, cf);
	return rc;
}

/* ---- moving a DRAM block to the SSD ------------------------------------ */

/* Moves slot @s (of @cf's file; gate exclusive) into a store line, queue
 * @q. 1 moved, 0 no line free, or a negative errno. */
static int front_to_store(struct hy_cache *c, struct cfile *cf, uint32_t s, enum hy_policy_queue q)
{
	struct front *fr = &c->front;
	struct slot x = fr->slots[s];
	int64_t l = line_alloc(c, cf->entry.file_id, true);
	int rc;

	if (l < 0)
		return 0;
	rc = store_write(c, (uint32_t)l, x.valid, slot_data(fr, s));
	if (rc < 0) {
		store_refused(c, (uint32_t)l, rc);
		return 0; /* as no line free: fsync and eviction send it home */
	}
	/* the line first: if it cannot be entered (out of memory) the block
	 * stays in DRAM, dirty data and all; the gate (exclusive) keeps
	 * everyone from seeing it in both places meanwhile */
	rc = line_commit(c, cf, (uint32_t)l, x.block, x.valid, x.dirty, q);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fr->lock);
	front_remove(fr, s);
	pthread_mutex_unlock(&fr->lock);
	atomic_fetch_sub(&cf->in_front, 1);
	atomic_fetch_sub(&cf->blocks, 1);
	note_dirty(c, cf, x.dirty, 0);
	return 1;
}

/* ---- fsync ---------------------------------------------------------------- */

/* Every block @cf has cached, DRAM and SSD (an fsync after more writes
 * than PENDING_MAX, a migration). Gate held: exclusive, every block; shared,
 * at least those cached when it began. 0 or -ENOMEM. */
static int all_blocks(struct hy_cache *c, struct cfile *cf, uint64_t **out, size_t *n)
{
	uint32_t *slots = NULL;
	int64_t k = atomic_load(&cf->in_front)
			    ? front_slots_of(c, cf->entry.file_id, 0, UINT64_MAX, &slots)
			    : 0;
	size_t nslots = k > 0 ? (size_t)k : 0;
	int64_t m =
		hy_cache_index_lookup_range(c->index, cf->entry.file_id, 0, UINT64_MAX, NULL, 0);
	struct hy_cache_entry *ents = m > 0 ? malloc((size_t)m * sizeof(*ents)) : NULL;
	uint64_t *v = malloc((nslots + (m > 0 ? (size_t)m : 0) + 1) * sizeof(*v));

	*out = NULL;
	*n = 0;
	if (k < 0 || !v || (m > 0 && !ents)) {
		free(slots);
		free(ents);
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nslots; i++)
		v[(*n)++] = c->front.slots[slots[i]].block;
	if (m > 0) {
		int64_t room = m;

		/* under a shared gate (a migration) readers may cache more
		 * blocks meanwhile: those are left out */
		m = hy_cache_index_lookup_range(c->index, cf->entry.file_id, 0, UINT64_MAX, ents,
						(size_t)room);
		if (m > room)
			m = room;
	}
	for (int64_t i = 0; i < m; i++)
		v[(*n)++] = ents[i].block;
	free(slots);
	free(ents);
	*out = v;
	return 0;
}

static int fsync_file(struct hy_cache *c, const struct hy_cache_file *f, uint64_t *token,
		      bool journal_all);

int hy_cache_fsync(struct hy_cache *c, const struct hy_cache_file *f, uint64_t *token)
{
	return fsync_file(c, f, token, false);
}

/* @journal_all: every dirty block is journaled, however many (close, when
 * home cannot take them). */
static int fsync_file(struct hy_cache *c, const struct hy_cache_file *f, uint64_t *token,
		      bool journal_all)
{
	struct hy_device_attr attr;
	struct hy_cache_journal_record *recs = NULL;
	uint64_t *blocks = NULL;
	size_t nblocks = 0, nrecs = 0;
	struct cfile *cf;
	bool home = false;
	int rc = 0;

	if (!f->file_id)
		return 0;
	cf = cfile_get(c, f->file_id, false);
	if (!cf)
		return 0;
	pthread_rwlock_wrlock(gate(c, f->file_id));
	rc = ensure_fresh(c, cf, f);
	if (rc < 0 || !atomic_load(&cf->dirty))
		goto out;
	/* many dirty blocks (a file written whole, then fsync'd) go home in
	 * order, one sync there (the caller's), cheaper than a journal record
	 * each and the cleaner's writes later; a few are journaled, so an
	 * fsync after small random writes costs one store sync */
	if (atomic_load(&cf->dirty) > FSYNC_JOURNAL_MAX && !journal_all) {
		rc = settle_range(c, cf, f, 0, UINT64_MAX, true, false);
		if (rc == 0)
			pending_clear(cf);
		goto out;
	}
	/* the blocks written since the last fsync (or, when they were too
	 * many to keep, every block the file has cached) */
	if (!cf->pending_overflow) {
		blocks = cf->pending;
		nblocks = cf->npending;
		cf->pending = NULL;
		cf->npending = cf->pending_cap = 0;
	} else {
		nblocks = 0;
		rc = all_blocks(c, cf, &blocks, &nblocks);
		if (rc < 0)
			goto out;
		cf->pending_overflow = false;
	}
	recs = malloc((nblocks ? nblocks : 1) * sizeof(*recs));
	if (!recs) {
		rc = -ENOMEM;
		goto out;
	}
	/* the file's end, for the tail of the line that holds it */
	rc = c->lower.getattr(c->lower.arg, f, &attr);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < nblocks && rc == 0; i++) {
		struct hy_cache_entry e;
		struct held h;

		/* dirty DRAM blocks into the store; those with no line go home */
		find_block(c, f->file_id, blocks[i], false, &h);
		if (h.where == 1 && h.dirty) {
			rc = front_to_store(c, cf, h.slot_or_line, HY_POLICY_COLD);
			if (rc == 0) {
				home = true;
				rc = settle_range(c, cf, f, blocks[i], 1, true, false);
			}
			rc = rc > 0 ? 0 : rc;
		}
		if (rc < 0 || hy_cache_index_lookup(c->index, f->file_id, blocks[i], &e) != 0 ||
		    !e.dirty)
			continue;
		pthread_mutex_lock(&c->lines_lock);
		if (!(c->lines[e.line].flags & LS_JOURNALED)) {
			uint64_t start = e.block * LINE;
			uint16_t tail = attr.size > start && attr.size - start < LINE
						? (uint16_t)(attr.size - start)
						: 0;

			c->lines[e.line].flags |= LS_JOURNALED; /* once, if listed twice */
			set_tail(c, e.line, tail);
			recs[nrecs++] = (struct hy_cache_journal_record){
				.type = HY_CJ_FILL,
				.line = e.line,
				.file_id = f->file_id,
				.block = e.block,
				.valid = e.valid,
				.dirty = e.dirty,
				.tail = tail,
			};
		}
		pthread_mutex_unlock(&c->lines_lock);
	}
	/* recovery finds the file by its id: that must outlive a crash too.
	 * When it cannot (the state database cannot take the file's row: its
	 * disk is full), a journal record would name a file recovery cannot
	 * find: the dirty blocks go home instead, as many blocks do, and the
	 * caller's sync of home makes them durable there */
	if (nrecs && !cf->id_durable && c->cfg.ids_durable) {
		int why = c->cfg.ids_durable(c->cfg.ids_durable_arg);

		if (why < 0) {
			if (!atomic_exchange(&c->ids_failing, true))
				hy_log(LOG_WARNING,
				       "cache: file %" PRIu64 ": its id cannot be made durable "
				       "(%s): fsync sends dirty blocks home instead of "
				       "journaling them until ids can be made durable again",
				       f->file_id, strerror(-why));
			pthread_mutex_lock(&c->lines_lock);
			for (size_t i = 0; i < nrecs; i++)
				c->lines[recs[i].line].flags &= (uint8_t)~LS_JOURNALED;
			pthread_mutex_unlock(&c->lines_lock);
			nrecs = 0;
			rc = settle_range(c, cf, f, 0, UINT64_MAX, true, false);
			if (rc < 0) {
				hy_log(LOG_ERR,
				       "cache: file %" PRIu64 ": its id cannot be made durable "
				       "(%s) and its dirty blocks cannot go home: %s",
				       f->file_id, strerror(-why), strerror(-rc));
				goto out;
			}
			pending_clear(cf);
		} else {
			if (atomic_exchange(&c->ids_failing, false))
				hy_log(LOG_NOTICE, "cache: file ids can be made durable again; "
						   "fsync journals dirty blocks again");
			cf->id_durable = true;
		}
	}
	/* the data first, then the records that name it */
	if (nrecs) {
		rc = hy_cache_store_sync(c->store);
		if (rc == 0) {
			pthread_mutex_lock(&c->lines_lock);
			for (size_t i = 0; i < nrecs; i++)
				c->lines[recs[i].line].flags |= LS_DISK_DIRTY;
			pthread_mutex_unlock(&c->lines_lock);
			rc = journal_records(c, recs, nrecs);
		}
	}
	if (rc == 0 && home)
		rc = c->lower.sync(c->lower.arg, f);
out:
	if (rc < 0) {
		/* nothing of this fsync counts: its records are not all there,
		 * and the next fsync looks at every block the file has */
		pthread_mutex_lock(&c->lines_lock);
		for (size_t i = 0; i < nrecs; i++)
			c->lines[recs[i].line].flags &= (uint8_t)~LS_JOURNALED;
		pthread_mutex_unlock(&c->lines_lock);
		pending_clear(cf);
		cf->pending_overflow = true;
	}
	/* every dirty block is durable in the store now: home needs a sync
	 * only for what the cache changed there since the last one */
	if (rc == 0 && token) {
		uint64_t issued = atomic_load(&c->tokens_issued);

		*token = atomic_load(&cf->home_changes);
		if (*token == atomic_load(&cf->home_synced_at))
			rc = 1;
		/* before cfile_put: the entry cannot be made again before this */
		while (issued < *token &&
		       !atomic_compare_exchange_weak(&c->tokens_issued, &issued, *token))
			;
	}
	pthread_rwlock_unlock(gate(c, f->file_id));
	cfile_put(c, cf);
	free(blocks);
	free(recs);
	return rc;
}

void hy_cache_home_synced(struct hy_cache *c, const struct hy_cache_file *f, uint64_t token)
{
	struct cfile *cf = f->file_id ? cfile_get(c, f->file_id, false) : NULL;
	uint64_t at;

	/* later changes moved home_changes past @token: they stay unsynced */
	if (cf) {
		at = atomic_load(&cf->home_synced_at);
		while (at < token && !atomic_compare_exchange_weak(&cf->home_synced_at, &at, token))
			;
	}
	cfile_put(c, cf);
}

void hy_cache_home_changed(struct hy_cache *c, uint64_t file_id)
{
	struct cfile *cf = file_id ? cfile_get(c, file_id, false) : NULL;

	/* not a change of the data the cache holds (generation stays), but
	 * one the next fsync must sync home */
	if (cf)
		atomic_fetch_add(&cf->home_changes, 1);
	cfile_put(c, cf);
}

void hy_cache_close_file(struct hy_cache *c, const struct hy_cache_file *f)
{
	struct cfile *cf;

	if (!f->file_id)
		return;
	cf = cfile_get(c, f->file_id, false);
	if (!cf)
		return;
	atomic_store(&cf->closed, true);
	if (atomic_load(&cf->dirty)) {
		pthread_mutex_lock(&c->thread_lock);
		c->clean_kick = true;
		pthread_cond_broadcast(&c->thread_wake);
		pthread_mutex_unlock(&c->thread_lock);
	}
	cfile_put(c, cf);
}

int hy_cache_forget_file(struct hy_cache *c, uint64_t file_id)
{
	struct cfile *cf;
	int rc = 0;

	if (!file_id)
		return 0;
	cf = cfile_get(c, file_id, false);
	if (!cf)
		return 0;
	pthread_rwlock_wrlock(gate(c, file_id));
	if (atomic_load(&cf->blocks)) {
		struct hy_cache_file f = {file_id, cf->home};

		rc = settle_range(c, cf, &f, 0, UINT64_MAX, false, true);
		if (rc < 0)
			hy_log(LOG_WARNING,
			       "cache: file %" PRIu64 ", removed: its blocks cannot be dropped: %s",
			       file_id, strerror(-rc));
		else
			atomic_fetch_add(&c->st.forgotten_files, 1);
	}
	if (rc >= 0 && cf->home >= 0) {
		c->lower.put_object(c->lower.arg, cf->home);
		cf->home = -1;
	}
	pthread_rwlock_unlock(gate(c, file_id));
	cfile_put(c, cf);
	return rc < 0 ? rc : 0;
}

bool hy_cache_meta_begin(struct hy_cache *c, const struct hy_cache_file *f)
{
	struct hy_device_attr a;
	struct cfile *cf;
	bool fresh = false;

	if (!f->file_id)
		return false;
	cf = cfile_get(c, f->file_id, false);
	/* Held until meta_end: the cleaner keeps a home file's modification
	 * time across its writes (read before, set after, gate held), and a
	 * utimes(2) between the two would be undone (rsync -t lost its times
	 * that way). An O_TRUNC open holds it too, and a stamp moved past its
	 * truncation would hide it from truncate_open_end. */
	pthread_rwlock_wrlock(gate(c, f->file_id));
	if (cf)
		fresh = atomic_load(&cf->blocks) && c->lower.getattr(c->lower.arg, f, &a) == 0 &&
			atomic_load(&cf->stamp) == a.stamp;
	cfile_put(c, cf);
	return fresh;
}

void hy_cache_meta_end(struct hy_cache *c, const struct hy_cache_file *f, bool fresh)
{
	struct cfile *cf;

	if (!f->file_id)
		return;
	cf = fresh ? cfile_get(c, f->file_id, false) : NULL;
	if (cf)
		refresh_stamp(c, cf, f);
	pthread_rwlock_unlock(gate(c, f->file_id));
	cfile_put(c, cf);
}

/* ---- reconfiguration (ReCA) ---------------------------------------------- */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Background I/O paced at @rate bytes/s: sleeps until @blocks blocks since
 * @start are due, in short naps, so that a flush or a close does not wait
 * for the pace but takes over (at full speed). */
static void pace(struct hy_cache *c, int64_t blocks, uint64_t rate, int64_t start)
{
	int64_t due = (int64_t)((double)blocks * LINE / (double)rate * 1e9);
	int64_t ahead = due - (now_ns() - start);

	while (ahead > 0 && !atomic_load(&c->flush_waiting) && !atomic_load(&c->stop_now)) {
		int64_t nap = ahead < 20000000 ? ahead : 20000000;
		struct timespec ts = {0, nap};

		nanosleep(&ts, NULL);
		ahead -= nap;
	}
}

static void kick_cleaner(struct hy_cache *c)
{
	pthread_mutex_lock(&c->thread_lock);
	c->clean_kick = true;
	pthread_cond_broadcast(&c->thread_wake);
	pthread_mutex_unlock(&c->thread_lock);
}

/* A request of @cf's file under @hint (@write_policy: the policy its write
 * follows; -1 for a read: the hint's). A file whose last request followed
 * write-back and whose dirty blocks now fall under another policy goes to
 * the front of the cleaner's queue; one reached with a larger line size
 * than before is queued for a migration. No gate held; nothing here waits
 * for I/O. */
static void reconfigure_file(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
			     const struct hy_cache_hint *hint, int write_policy)
{
	uint32_t want = hint->line_size > LINE ? hint->line_size : 0;
	uint32_t had = atomic_load(&cf->line_size);
	int64_t object;
	int last;

	if (write_policy < 0)
		write_policy = hint->write >= 0 ? hint->write : (int)c->cfg.write_policy;
	/* read first: requests of one file mostly keep their policy, and a
	 * load does not bounce the cache line between threads */
	last = atomic_load(&cf->last_write);
	if (last != write_policy)
		last = atomic_exchange(&cf->last_write, write_policy);
	if (last == HY_CACHE_WRITE_BACK && write_policy != HY_CACHE_WRITE_BACK &&
	    atomic_load(&cf->dirty) && !atomic_exchange(&cf->leave_back, true)) {
		atomic_fetch_add(&c->st.migrate_home, 1);
		kick_cleaner(c);
	}
	if (want == had || !atomic_compare_exchange_strong(&cf->line_size, &had, want))
		return; /* as it was, or another request of the file changed it */
	/* smaller lines need no copy (ReCA's split: each page keeps its own
	 * place in LRU3, the line's priority divided among them); larger ones
	 * are filled in the background, if there is anything to fill */
	if (want < had || !atomic_load(&cf->blocks) || !f->file_id || f->object < 0)
		return;
	if (c->lower.hold_object(c->lower.arg, f, &object) < 0) {
		atomic_fetch_add(&c->st.migrate_dropped, 1);
		return;
	}
	pthread_mutex_lock(&c->thread_lock);
	if (c->migrate_len < MIGRATE_QUEUE && !c->stopping) {
		c->migrate_queue[c->migrate_len++] = (struct migration){f->file_id, object, want};
		object = -1;
		c->clean_kick = true;
		pthread_cond_broadcast(&c->thread_wake);
	}
	pthread_mutex_unlock(&c->thread_lock);
	if (object >= 0) {
		c->lower.put_object(c->lower.arg, object);
		atomic_fetch_add(&c->st.migrate_dropped, 1);
	} else {
		atomic_fetch_add(&c->st.migrations, 1);
	}
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ReCA's merge of @m's file into lines of m->line_size: the missing blocks
 * of each line that has some cached are read from below without the
 * file's gate (no request waits for the read) and cached, unless the file
 * changed meanwhile (its generation moved: that line is left as it is).
 * Paced at @rate bytes/s from @start (0: no pacing). Returns the blocks
 * read in or a negative errno. */
static int64_t migrate_file(struct hy_cache *c, const struct migration *m, uint64_t rate,
			    int64_t start, int64_t *paced)
{
	struct hy_cache_file f = {m->file_id, m->object};
	uint64_t per = m->line_size / LINE, *blocks = NULL;
	struct cfile *cf = cfile_get(c, m->file_id, false);
	unsigned char *buf = NULL;
	int64_t filled = 0;
	size_t n = 0;
	int rc;

	if (!cf)
		return 0; /* nothing cached any more */
	buf = malloc(m->line_size);
	pthread_rwlock_rdlock(gate(c, m->file_id));
	rc = buf ? all_blocks(c, cf, &blocks, &n) : -ENOMEM;
	pthread_rwlock_unlock(gate(c, m->file_id));
	if (rc == 0)
		qsort(blocks, n, sizeof(*blocks), by_u64);
	for (size_t i = 0; rc == 0 && i < n && !atomic_load(&c->stop_now);) {
		uint64_t g = blocks[i] / per, b0 = g * per, b1 = b0 + per, gen;
		uint32_t missing = 0;
		struct hy_device_attr a;
		bool fresh = false;
		ssize_t r;

		while (i < n && blocks[i] / per == g)
			i++;
		if (atomic_load(&cf->line_size) != m->line_size)
			break; /* reconfigured again meanwhile: the newer size rules */
		pthread_rwlock_rdlock(gate(c, m->file_id));
		gen = atomic_load(&cf->generation);
		rc = c->lower.getattr(c->lower.arg, &f, &a);
		if (rc == 0 && (fresh = fresh_for(cf, &a))) {
			uint64_t end = (a.size + LINE - 1) / LINE;

			b1 = b1 < end ? b1 : end;
			for (uint64_t b = b0; b < b1; b++) {
				struct held h;

				find_block(c, m->file_id, b, false, &h);
				if (!h.where)
					missing |= 1u << (b - b0);
			}
		}
		pthread_rwlock_unlock(gate(c, m->file_id));
		if (rc < 0 || !fresh)
			break; /* changed outside: its next request drops what is stale */
		if (!missing)
			continue;
		r = c->lower.read(c->lower.arg, &f, buf, (size_t)(b1 - b0) * LINE,
				  (off_t)(b0 * LINE));
		if (r < 0) {
			rc = (int)r;
			break;
		}
		memset(buf + r, 0, (size_t)(b1 - b0) * LINE - (size_t)r);
		pthread_rwlock_rdlock(gate(c, m->file_id));
		if (atomic_load(&cf->generation) == gen) {
			for (uint64_t b = b0; b < b1; b++) {
				uint64_t have = (uint64_t)r > (b - b0) * LINE
							? (uint64_t)r - (b - b0) * LINE
							: 0;
				uint8_t valid = 0;

				if (!(missing & (1u << (b - b0))))
					continue;
				for (int k = 0; k < HY_CACHE_SECTORS && (uint64_t)k * SECTOR < have;
				     k++)
					valid |= (uint8_t)(1u << k);
				fill_block(c, cf, b, valid, buf + (b - b0) * LINE, NULL);
				filled++;
			}
		}
		pthread_rwlock_unlock(gate(c, m->file_id));
		hy_fault_point("cache.migrate.mid"); /* fault.h: a line filled, maybe more to go */
		*paced += (int64_t)(b1 - b0);
		if (rate)
			pace(c, *paced, rate, start);
	}
	atomic_fetch_add(&c->st.migrate_filled, (uint64_t)filled);
	free(blocks);
	free(buf);
	cfile_put(c, cf);
	return rc < 0 ? rc : filled;
}

/* Runs the queued migrations, oldest first, at @rate bytes/s (0: no
 * pacing). Returns the blocks read in or the first error. */
static int64_t migrate_pass(struct hy_cache *c, uint64_t rate)
{
	int64_t total = 0, err = 0, start = now_ns(), paced = 0;

	for (;;) {
		struct migration m;
		int64_t r;

		pthread_mutex_lock(&c->thread_lock);
		if (!c->migrate_len || atomic_load(&c->stop_now)) {
			pthread_mutex_unlock(&c->thread_lock);
			break;
		}
		m = c->migrate_queue[0];
		memmove(c->migrate_queue, c->migrate_queue + 1,
			--c->migrate_len * sizeof(c->migrate_queue[0]));
		pthread_mutex_unlock(&c->thread_lock);
		r = migrate_file(c, &m, rate, start, &paced);
		c->lower.put_object(c->lower.arg, m.object);
		if (r < 0) {
			hy_log(LOG_WARNING,
			       "cache: file %" PRIu64 ": filling its lines to %u bytes failed: %s",
			       m.file_id, m.line_size, strerror((int)-r));
			atomic_fetch_add(&c->st.migrate_dropped, 1);
			if (!err)
				err = r;
		} else {
			total += r;
		}
	}
	return err ? err : total;
}

int64_t hy_cache_run_migrations(struct hy_cache *c)
{
	return migrate_pass(c, 0);
}

/* Close: the migrations not run are given up, their objects put back. */
static void migrations_drop(struct hy_cache *c)
{
	pthread_mutex_lock(&c->thread_lock);
	for (unsigned i = 0; i < c->migrate_len; i++)
		c->lower.put_object(c->lower.arg, c->migrate_queue[i].object);
	c->migrate_len = 0;
	pthread_mutex_unlock(&c->thread_lock);
}

/* ---- the cleaner --------------------------------------------------------- */

struct dirty_key {
	uint64_t file_id, block;
	bool closed;
	uint8_t hits; /* PORE: the line's hits since the last division */
};

static int by_closed_file_block(const void *a, const void *b)
{
	const struct dirty_key *x = a, *y = b;

	if (x->closed != y->closed)
		return x->closed ? -1 : 1;
	if (x->file_id != y->file_id)
		return x->file_id < y->file_id ? -1 : 1;
	return x->block < y->block ? -1 : x->block > y->block;
}

/* Cleans the dirty blocks @k[0..n) of one file (gate exclusive): home in
 * block order, synced, the home file's modification time kept. Returns
 * the blocks cleaned or a negative errno. */
static int64_t clean_blocks(struct hy_cache *c, struct cfile *cf, const struct dirty_key *k,
			    size_t n)
{
	struct hy_cache_file home = {cf->entry.file_id, cf->home};
	struct hy_device_attr a;
	struct front *fr = &c->front;
	struct hy_cache_journal_record *recs = malloc(n * sizeof(*recs));
	struct {
		int where;
		uint32_t at;
		uint8_t valid, dirty;
	} *done = malloc(n * sizeof(*done));
	unsigned char line[LINE];
	size_t nrecs = 0, ndone = 0;
	int64_t rc = 0;

	if (!recs || !done) {
		rc = -ENOMEM;
		goto out;
	}
	if (!atomic_load(&cf->dirty))
		goto out; /* dropped meanwhile (a removed file: forget_file) */
	if (cf->home < 0) {
		hy_log(LOG_ERR, "cache: file %" PRIu64 " has dirty blocks but no way home",
		       cf->entry.file_id);
		rc = -EIO;
		goto out;
	}
	/* a change the cache did not see (a truncation) first: no stale
	 * dirty block may go home over it */
	rc = ensure_fresh(c, cf, &home);
	if (rc == 0)
		rc = c->lower.getattr(c->lower.arg, &home, &a);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct held h;

		find_block(c, home.file_id, k[i].block, false, &h);
		if (!h.where || !h.dirty)
			continue;
		if (ndone)
			hy_fault_point("cache.clean.mid"); /* fault.h: one block home, not this */
		home_changed(cf);
		rc = copy_held(c, &h, h.dirty, line);
		if (rc == 0)
			rc = write_home(c, &home, k[i].block, h.dirty, line, a.size);
		done[ndone].where = h.where;
		done[ndone].at = h.slot_or_line;
		done[ndone].valid = h.valid;
		done[ndone].dirty = h.dirty;
		ndone++;
	}
	/* home durably only where the journal says dirty (a clean record
	 * follows); other blocks are as safe in home's page cache as any
	 * write not yet fsync'd */
	for (size_t i = 0; i < ndone && rc == 0; i++)
		if (done[i].where == 2 && line_disk_dirty(c, done[i].at)) {
			rc = c->lower.sync(c->lower.arg, &home);
			break;
		}
	if (rc == 0 && ndone)
		keep_mtime(c, &home, &a);
	if (rc < 0)
		goto out;
	/* the flag goes before the record (see settle_range): home is durable */
	pthread_mutex_lock(&c->lines_lock);
	for (size_t i = 0; i < ndone; i++)
		if (done[i].where == 2 && (c->lines[done[i].at].flags & LS_DISK_DIRTY)) {
			c->lines[done[i].at].flags &= (uint8_t)~LS_DISK_DIRTY;
			recs[nrecs++] = (struct hy_cache_journal_record){
				.type = HY_CJ_MASKS,
				.line = done[i].at,
				.valid = done[i].valid,
				.dirty = 0,
			};
		}
	pthread_mutex_unlock(&c->lines_lock);
	rc = journal_clean_records(c, recs, nrecs);
	for (size_t i = 0; i < ndone && rc == 0; i++) {
		if (done[i].where == 1) {
			pthread_mutex_lock(&fr->lock);
			if (fr->slots[done[i].at].dirty) {
				note_dirty(c, cf, fr->slots[done[i].at].dirty, 0);
				fr->slots[done[i].at].dirty = 0;
				fr->dirty--;
			}
			pthread_mutex_unlock(&fr->lock);
		} else {
			struct hy_cache_entry e;
			uint64_t block = c->lines[done[i].at].block;

			if (hy_cache_index_update_masks(c->index, home.file_id, block, 0, 0,
							HY_CACHE_ALL_SECTORS, &e) == 0)
				note_dirty(c, cf, done[i].dirty, 0);
			pthread_mutex_lock(&c->lines_lock);
			c->lines[done[i].at].flags &= (uint8_t)~LS_DISK_DIRTY;
			pthread_mutex_unlock(&c->lines_lock);
			line_set_dirty(c, done[i].at, false);
		}
	}
	if (rc == 0) {
		atomic_fetch_add(&c->st.cleaned_blocks, ndone);
		refresh_stamp(c, cf, &home);
		rc = (int64_t)ndone;
	}
out:
	free(recs);
	free(done);
	return rc;
}

/* One pass: every dirty block home, closed files first, in file and block
 * order; @rate bytes/s (0: no limit). Returns the blocks cleaned, or the
 * first error. */
/* A dirty block's byte address on the backing disk when the driver cannot
 * say (no addresses callback, or it failed): its file's place, 64 MiB a
 * file id, as the emulation lays files out. */
static uint64_t fallback_address(uint64_t file_id, uint64_t block)
{
	return file_id * (UINT64_C(64) << 20) + block * LINE;
}

/* PORE (backend=smr): keeps in @keys[0..*n) only the dirty blocks that may
 * go home now: those of open zones, and those of files whose process left
 * write-back (their blocks go home whatever the zone). The zones' dirty
 * counts are recounted from @keys (sorted by file and block), the lines'
 * hits are their popularity, and the zones are divided again once a
 * period's worth of blocks was written into the cache. Under pressure (half
 * of the cache dirty: a victim must stay findable) every block goes.
 * clean_lock held. */
static void pore_filter(struct hy_cache *c, struct dirty_key *keys, size_t *n)
{
	struct front *fr = &c->front;
	uint32_t *zones = malloc((*n ? *n : 1) * sizeof(*zones));
	uint64_t *blocks = malloc((*n ? *n : 1) * sizeof(*blocks));
	uint64_t *addrs = malloc((*n ? *n : 1) * sizeof(*addrs));
	uint64_t written, dirty, room;
	size_t kept = 0;

	if (!*n)
		goto out;
	if (!zones || !blocks || !addrs) {
		hy_log(LOG_WARNING, "cache: PORE: out of memory; every dirty block may go home");
		goto out;
	}
	hy_pore_clear_dirty(c->pore);
	for (size_t i = 0; i < *n;) {
		size_t j = i;
		struct cfile *cf = cfile_get(c, keys[i].file_id, false);
		int rc = -ENOSYS;

		while (j < *n && keys[j].file_id == keys[i].file_id) {
			blocks[j - i] = keys[j].block;
			j++;
		}
		if (cf && c->lower.addresses) {
			/* the gate keeps the file's way home as it is */
			pthread_rwlock_rdlock(gate(c, keys[i].file_id));
			if (cf->home >= 0) {
				struct hy_cache_file home = {keys[i].file_id, cf->home};

				rc = c->lower.addresses(c->lower.arg, &home, blocks, j - i,
							addrs + i);
			}
			pthread_rwlock_unlock(gate(c, keys[i].file_id));
		}
		cfile_put(c, cf);
		for (size_t k = i; k < j; k++) {
			int64_t z =
				hy_pore_zone(c->pore, rc == 0 ? addrs[k]
							      : fallback_address(keys[k].file_id,
										 keys[k].block));

			if (z < 0) {
				hy_log(LOG_WARNING, "cache: PORE: out of memory for its zones");
				goto out;
			}
			zones[k] = (uint32_t)z;
			hy_pore_dirty(c->pore, (uint32_t)z, 1);
			hy_pore_access(c->pore, (uint32_t)z, keys[k].hits);
		}
		i = j;
	}
	/* the period's clock: blocks written into the cache */
	written = atomic_load(&c->st.write_hits_dram) + atomic_load(&c->st.write_hits_ssd) +
		  atomic_load(&c->st.write_misses);
	{
		struct hy_pore_stats ps;
		bool divided;

		/* the first pass with dirty blocks divides at once: a new zone
		 * is open, and before any division all would be */
		hy_pore_get_stats(c->pore, &ps);
		if (ps.divisions == 0) {
			hy_pore_divide(c->pore);
			divided = true;
		} else {
			divided = hy_pore_written(c->pore, written - c->pore_writes_seen);
		}
		c->pore_writes_seen = written;
		if (divided) {
			pthread_mutex_lock(&c->lines_lock);
			memset(c->line_hits, 0, c->capacity);
			pthread_mutex_unlock(&c->lines_lock);
		}
	}
	pthread_mutex_lock(&fr->lock);
	dirty = fr->dirty;
	room = fr->nslots;
	pthread_mutex_unlock(&fr->lock);
	pthread_mutex_lock(&c->lines_lock);
	dirty += c->ssd_dirty;
	room += c->capacity;
	hy_pore_get_stats(c->pore, &c->pore_snapshot);
	pthread_mutex_unlock(&c->lines_lock);
	if (2 * dirty >= room) {
		atomic_fetch_add(&c->st.pore_forced, 1);
		goto out;
	}
	for (size_t i = 0; i < *n; i++) {
		bool leave = false;

		if (!hy_pore_open(c->pore, zones[i])) {
			struct cfile *cf = cfile_get(c, keys[i].file_id, false);

			leave = cf && atomic_load(&cf->leave_back);
			cfile_put(c, cf);
		}
		if (leave || hy_pore_open(c->pore, zones[i]))
			keys[kept++] = keys[i];
	}
	atomic_store(&c->st.pore_held, *n - kept);
	*n = kept;
out:
	free(zones);
	free(blocks);
	free(addrs);
}

static int64_t clean_pass(struct hy_cache *c, uint64_t rate, bool all)
{
	struct front *fr = &c->front;
	struct dirty_key *keys = NULL;
	size_t n = 0, cap;
	int64_t cleaned = 0, start = now_ns(), err = 0;

	pthread_mutex_lock(&c->clean_lock);
	cap = (size_t)c->ssd_dirty + fr->dirty + 16;
	keys = malloc(cap * sizeof(*keys));
	if (!keys) {
		pthread_mutex_unlock(&c->clean_lock);
		return -ENOMEM;
	}
	pthread_mutex_lock(&c->lines_lock);
	for (uint32_t l = 0; l < c->capacity && n < cap; l++)
		if (c->lines[l].flags & LS_DIRTY)
			keys[n++] = (struct dirty_key){c->lines[l].file_id, c->lines[l].block,
						       false, c->line_hits ? c->line_hits[l] : 0};
	pthread_mutex_unlock(&c->lines_lock);
	pthread_mutex_lock(&fr->lock);
	for (uint32_t s = 0; s < fr->nslots && n < cap; s++)
		if (fr->slots[s].used && fr->slots[s].dirty)
			keys[n++] = (struct dirty_key){fr->slots[s].file_id, fr->slots[s].block,
						       false, 1};
	pthread_mutex_unlock(&fr->lock);
	for (size_t i = 0; i < n; i++) {
		if (i && keys[i].file_id == keys[i - 1].file_id) {
			keys[i].closed = keys[i - 1].closed;
			continue;
		}
		struct cfile *cf = cfile_get(c, keys[i].file_id, false);

		/* closed files first (session write-back), and those whose
		 * process left write-back */
		keys[i].closed = cf && (atomic_load(&cf->closed) || atomic_load(&cf->leave_back));
		cfile_put(c, cf);
	}
	qsort(keys, n, sizeof(*keys), by_closed_file_block);
	if (c->pore && !all)
		pore_filter(c, keys, &n);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		struct cfile *cf;
		int64_t r;

		while (j < n && j - i < CLEAN_CHUNK && keys[j].file_id == keys[i].file_id)
			j++;
		cf = cfile_get(c, keys[i].file_id, false);
		if (cf) {
			pthread_rwlock_wrlock(gate(c, keys[i].file_id));
			r = clean_blocks(c, cf, keys + i, j - i);
			if (r >= 0) {
				cleaned += r;
				if (!atomic_load(&cf->dirty))
					atomic_store(&cf->leave_back, false);
				/* a closed file with nothing dirty needs no way home */
				if (!atomic_load(&cf->dirty) && atomic_load(&cf->closed) &&
				    cf->home >= 0) {
					c->lower.put_object(c->lower.arg, cf->home);
					cf->home = -1;
				}
			} else if (!err) {
				err = r;
			}
			pthread_rwlock_unlock(gate(c, keys[i].file_id));
			cfile_put(c, cf);
		}
		i = j;
		if (rate) {
			pace(c, cleaned, rate, start);
			if (atomic_load(&c->flush_waiting) || atomic_load(&c->stop_now))
				break;
		}
	}
	free(keys);
	pthread_mutex_unlock(&c->clean_lock);
	return err ? err : cleaned;
}

int64_t hy_cache_run_cleaner(struct hy_cache *c)
{
	return clean_pass(c, c->cfg.clean_rate, false);
}

int64_t hy_cache_flush(struct hy_cache *c)
{
	int64_t total = 0;

	atomic_fetch_add(&c->flush_waiting, 1);
	for (int pass = 0; pass < 4; pass++) {
		int64_t r = clean_pass(c, 0, true);

		if (r < 0) {
			total = r;
			break;
		}
		total += r;
		if (r == 0 || atomic_load(&c->dirty_sectors) == 0)
			break;
	}
	atomic_fetch_sub(&c->flush_waiting, 1);
	return total;
}

static void *cleaner_main(void *arg)
{
	struct hy_cache *c = arg;
	unsigned ms = c->cfg.clean_interval_ms ? c->cfg.clean_interval_ms : 5000;

	pthread_setname_np(pthread_self(), "hy-cache-clean");
	pthread_mutex_lock(&c->thread_lock);
	while (!c->stopping) {
		struct timespec ts;

		if (!c->clean_kick) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += ms / 1000;
			ts.tv_nsec += (long)(ms % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&c->thread_wake, &c->thread_lock, &ts);
		}
		if (c->stopping)
			break;
		c->clean_kick = false;
		pthread_mutex_unlock(&c->thread_lock);
		if (atomic_load(&c->dirty_sectors)) {
			int64_t r = clean_pass(c, c->cfg.clean_rate, false);

			if (r < 0)
				hy_log(LOG_ERR,
				       "cache: the cleaner could not write blocks home: %s",
				       strerror((int)-r));
		}
		/* then the line migrations, paced, after the dirty blocks */
		if (migrate_pass(c, c->cfg.migrate_rate) < 0)
			hy_log_debug("cache: a line migration pass ended on an error (logged)");
		pthread_mutex_lock(&c->thread_lock);
	}
	pthread_mutex_unlock(&c->thread_lock);
	return NULL;
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
	s = front_find(fr, file_id, block);
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

		rc = ensure_fresh(c, cf, &home);
		if (rc < 0)
			goto out;
		pthread_mutex_lock(&fr->lock);
		s = front_find(fr, file_id, block);
		pthread_mutex_unlock(&fr->lock);
		if (s == NONE)
			goto out; /* dropped as stale */
	}
	/* ReCA's priority by class: a high one enters the store whatever its
	 * heat (in the queue its heat and preference give) */
	if (heat >= fr->heat.threshold || admit == HY_ADMIT_HIGH) {
		rc = front_to_store(c, cf, s,
				    queue_for_hint(admit, evict, heat, fr->heat.threshold));
		if (rc != 0) {
			if (rc > 0) {
				atomic_fetch_add(&c->st.heat_admitted, 1);
				atomic_fetch_add(&c->st.dram_evictions, 1);
			}
			goto out;
		}
		/* no line free: handled as cold */
	} else {
		atomic_fetch_add(&c->st.heat_refused, 1);
		pthread_mutex_lock(&fr->lock);
		front_remember(fr, s);
		pthread_mutex_unlock(&fr->lock);
		/* PORE: a dirty block is written home only when its zone is
		 * open, which the cleaner decides: a cold one waits in the
		 * store's cold queue instead of going home now */
		if (c->pore && fr->slots[s].dirty) {
			rc = front_to_store(c, cf, s, HY_POLICY_COLD);
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

		rc = settle_range(c, cf, &home, block, 1, true, true);
		if (rc == 0)
			atomic_fetch_add(&c->st.cold_dirty_home, 1);
	} else {
		pthread_mutex_lock(&fr->lock);
		front_remove(fr, s);
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

static void *evictor_main(void *arg)
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

/* ---- open and close ------------------------------------------------------ */

struct recovered {
	uint64_t line, file_id, block;
	uint8_t dirty;
	uint16_t tail;
};

struct recovery {
	struct recovered *v;
	size_t n, cap;
};

static int collect_dirty(void *arg, uint64_t line, const struct hy_cache_line *l)
{
	struct recovery *r = arg;

	if (!l->dirty)
		return 0;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct recovered *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct recovered){line, l->file_id, l->block, l->dirty, l->tail};
	return 0;
}

static int by_file_block(const void *a, const void *b)
{
	const struct recovered *x = a, *y = b;

	if (x->file_id != y->file_id)
		return x->file_id < y->file_id ? -1 : 1;
	return x->block < y->block ? -1 : x->block > y->block;
}

/* The dirty lines a crash left: home, before anything else. */
static int recover(struct hy_cache *c, struct hy_cache_store *store, struct recovery *r,
		   bool salvage, char *why, size_t why_size)
{
	uint64_t *ids = malloc(r->n * sizeof(*ids));
	int64_t *objects = malloc(r->n * sizeof(*objects));
	unsigned char line[LINE];
	size_t nids = 0;
	uint64_t lost = 0;
	int rc = 0;

	if (!ids || !objects) {
		free(ids);
		free(objects);
		snprintf(why, why_size, "out of memory recovering %zu dirty lines", r->n);
		return -ENOMEM;
	}
	qsort(r->v, r->n, sizeof(*r->v), by_file_block);
	for (size_t i = 0; i < r->n; i++)
		if (!nids || ids[nids - 1] != r->v[i].file_id)
			ids[nids++] = r->v[i].file_id;
	if (!c->cfg.open_homes) {
		snprintf(why, why_size,
			 "cache store \"%s\" holds %zu dirty lines from a crash, and "
			 "nothing here "
			 "can write them home",
			 c->store_path, r->n);
		rc = -EUCLEAN;
		goto out;
	}
	rc = c->cfg.open_homes(c->cfg.open_homes_arg, ids, nids, objects);
	if (rc < 0) {
		snprintf(why, why_size, "cannot find the files of the dirty lines in \"%s\": %s",
			 c->store_path, strerror(-rc));
		goto out;
	}
	for (size_t k = 0, i = 0; k < nids && rc == 0; k++) {
		struct hy_cache_file home = {ids[k], objects[k]};
		struct hy_device_attr a;
		size_t wrote = 0;

		if (objects[k] < 0) {
			hy_log(LOG_WARNING,
			       "cache: file %" PRIu64 " had dirty lines in the store but is gone",
			       ids[k]);
			while (i < r->n && r->v[i].file_id == ids[k])
				i++;
			continue;
		}
		rc = c->lower.getattr(c->lower.arg, &home, &a);
		for (; rc == 0 && i < r->n && r->v[i].file_id == ids[k]; i++) {
			rc = hy_cache_store_read_line(store, r->v[i].line, r->v[i].dirty, line);
			if (rc == -EIO && salvage) {
				/* past the end of a truncated store: gone */
				hy_log(LOG_WARNING,
				       "cache: block %" PRIu64 " of file %" PRIu64
				       " was dirty in line %" PRIu64
				       " of \"%s\", which the file no longer holds: lost",
				       r->v[i].block, ids[k], r->v[i].line, c->store_path);
				lost++;
				rc = 0;
				continue;
			}
			/* within the size the file has (a truncation may have cut
			 * it since), and no further than the file's end when the
			 * line was journaled: past it the sector holds zeros, and
			 * the file may have been appended to outside since the
			 * crash */
			if (rc == 0) {
				uint64_t end = a.size;

				if (r->v[i].tail && r->v[i].block * LINE + r->v[i].tail < end)
					end = r->v[i].block * LINE + r->v[i].tail;
				rc = write_home(c, &home, r->v[i].block, r->v[i].dirty, line, end);
			}
			wrote++;
		}
		if (rc == 0 && wrote)
			rc = c->lower.sync(c->lower.arg, &home);
		if (rc < 0)
			snprintf(why, why_size,
				 "cannot write the dirty lines of file %" PRIu64
				 " from \"%s\" home: %s; the store is left as it is",
				 ids[k], c->store_path, strerror(-rc));
		c->st.recovered_blocks += wrote;
	}
	for (size_t k = 0; k < nids; k++)
		if (objects[k] >= 0)
			c->lower.put_object(c->lower.arg, objects[k]);
	if (rc == 0)
		hy_log(LOG_NOTICE,
		       "cache: %" PRIu64 " dirty blocks of %zu files that a crash left in \"%s\" "
		       "were written home%s",
		       c->st.recovered_blocks, nids, c->store_path,
		       lost ? "; some lay past its end and are lost (above)" : "");
	c->st.lost_blocks = lost;
out:
	free(ids);
	free(objects);
	return rc;
}

/* Opens the store, recovers it, and remakes it empty. */
static int open_store(struct hy_cache *c, char *why, size_t why_size)
{
	struct hy_cache_store_load_stats ls;
	struct recovery r = {0};
	bool salvage = false;
	struct stat st;
	int rc;

	if (stat(c->store_path, &st) != 0) {
		if (errno != ENOENT) {
			rc = -errno;
			snprintf(why, why_size, "cache store \"%s\": %s", c->store_path,
				 strerror(errno));
			return rc;
		}
		if (!c->cfg.store_size)
			c->cfg.store_size = HY_OPTIONS_CACHE_SIZE;
		rc = hy_cache_store_create(c->store_path, c->uuid, c->cfg.store_size, LINE, false,
					   why, why_size);
		if (rc < 0)
			return rc;
	} else if (!c->cfg.store_size && S_ISREG(st.st_mode)) {
		c->cfg.store_size = (uint64_t)st.st_size; /* as it was made */
	}
	rc = hy_cache_store_open(c->store_path, c->uuid, &c->store, why, why_size);
	if (rc == -EUCLEAN &&
	    hy_cache_store_open_truncated(c->store_path, c->uuid, &c->store, NULL, 0) == 0) {
		/* cut short in its lines only: what remains of its dirty lines
		 * goes home, then it is made again at its size */
		salvage = true;
		hy_log(LOG_WARNING,
		       "%s; writing home the dirty lines it still holds, then "
		       "making it again",
		       why);
		if (S_ISREG(st.st_mode))
			c->cfg.store_size =
				c->store->header.data_offset + c->store->header.data_size;
		rc = 0;
	}
	if (rc < 0)
		return rc;
	rc = hy_cache_store_load(c->store, collect_dirty, &r, &ls, why, why_size);
	if (rc == 0 && r.n)
		rc = recover(c, c->store, &r, salvage, why, why_size);
	free(r.v);
	hy_cache_store_close(c->store);
	c->store = NULL;
	if (rc < 0)
		return rc;
	/* everything it held is home: it starts empty, at the size asked
	 * (a store that is ours, so no signature check is needed) */
	rc = hy_cache_store_create(c->store_path, c->uuid, c->cfg.store_size, LINE, true, why,
				   why_size);
	if (rc == 0)
		rc = hy_cache_store_open(c->store_path, c->uuid, &c->store, why, why_size);
	if (rc == 0)
		rc = hy_cache_store_load(c->store, NULL, NULL, NULL, why, why_size);
	if (rc == 0)
		rc = hy_cache_store_set_clean(c->store, false);
	return rc;
}

static int front_init(struct hy_cache *c, char *why, size_t why_size)
{
	struct front *fr = &c->front;
	uint32_t tsize = 1;
	int rc;

	rc = hy_heat_config_init(&fr->heat, c->cfg.heat_periods, c->cfg.heat_threshold, why,
				 why_size);
	if (rc < 0)
		return rc;
	pthread_mutex_init(&fr->lock, NULL);
	pthread_cond_init(&fr->wake, NULL);
	fr->mru = fr->lru = fr->free_head = NONE;
	if (c->cfg.front_bytes / LINE > UINT32_MAX / 4) {
		snprintf(why, why_size, "front buffer of %" PRIu64 " bytes is too large",
			 c->cfg.front_bytes);
		return -EINVAL;
	}
	fr->nslots = (uint32_t)(c->cfg.front_bytes / LINE);
	if (!fr->nslots)
		return 0;
	while (tsize < fr->nslots * 2)
		tsize <<= 1;
	fr->table_mask = tsize - 1;
	fr->slots = calloc(fr->nslots, sizeof(*fr->slots));
	fr->ghosts = calloc(fr->nslots, sizeof(*fr->ghosts));
	fr->table = malloc((size_t)tsize * sizeof(*fr->table));
	if (posix_memalign((void **)&fr->data, 4096, (size_t)fr->nslots * LINE) != 0)
		fr->data = NULL;
	if (!fr->slots || !fr->ghosts || !fr->table || !fr->data) {
		snprintf(why, why_size, "out of memory for a front buffer of %" PRIu32 " blocks",
			 fr->nslots);
		return -ENOMEM;
	}
	memset(fr->table, 0xff, (size_t)tsize * sizeof(*fr->table));
	for (uint32_t s = fr->nslots; s-- > 0;) {
		fr->slots[s].next = fr->free_head;
		fr->free_head = s;
	}
	/* FusionCache counts accesses per period: a buffer's worth of
	 * accesses, so a block read again while it is still buffered (or soon
	 * after it left: its ghost history) counts in the same period or the
	 * one before, and L periods span L turnovers of the buffer */
	fr->period_len = fr->nslots > 16 ? fr->nslots : 16;
	return 0;
}

static void cache_free(struct hy_cache *c)
{
	if (!c)
		return;
	hy_file_table_free(c->files);
	hy_policy_free(c->policy);
	hy_cache_index_free(c->index);
	hy_cache_store_close(c->store);
	free(c->lines);
	free(c->free_map);
	free(c->free_summary);
	hy_keymap_free(&c->tails);
	free(c->line_hits);
	hy_pore_free(c->pore);
	free(c->front.slots);
	free(c->front.ghosts);
	free(c->front.table);
	free(c->front.data);
	for (int i = 0; i < HY_CACHE_GATES; i++)
		pthread_rwlock_destroy(&c->gates[i]);
	free(c->store_path);
	free(c->uuid);
	free(c);
}

int hy_cache_open(const struct hy_cache_config *cfg, const struct hy_cache_lower *lower,
		  struct hy_cache **out, char *why, size_t why_size)
{
	struct hy_cache *c = calloc(1, sizeof(*c));
	struct hy_policy_config pc;
	uint64_t capacity;
	int rc;

	*out = NULL;
	if (!c) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	c->cfg = *cfg;
	c->lower = *lower;
	c->store_path = strdup(cfg->store_path);
	c->uuid = strdup(cfg->uuid ? cfg->uuid : "");
	for (int i = 0; i < HY_CACHE_GATES; i++)
		pthread_rwlock_init(&c->gates[i], NULL);
	pthread_mutex_init(&c->lines_lock, NULL);
	pthread_rwlock_init(&c->journal_gate, NULL);
	pthread_mutex_init(&c->clean_lock, NULL);
	pthread_mutex_init(&c->thread_lock, NULL);
	pthread_cond_init(&c->thread_wake, NULL);
	if (!c->store_path || !c->uuid) {
		snprintf(why, why_size, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	c->cfg.store_path = c->store_path;
	c->cfg.uuid = c->uuid;
	rc = front_init(c, why, why_size);
	if (rc < 0)
		goto fail;
	rc = hy_file_table_new(64, &cfile_ops, c, &c->files);
	if (rc < 0) {
		snprintf(why, why_size, "out of memory");
		goto fail;
	}
	rc = open_store(c, why, why_size);
	if (rc < 0)
		goto fail;
	capacity = c->store->header.capacity;
	if (capacity > HY_CACHE_INDEX_MAX_LINES) {
		snprintf(why, why_size, "cache store \"%s\" has %" PRIu64 " lines, more than %u",
			 c->store_path, capacity, HY_CACHE_INDEX_MAX_LINES);
		rc = -EFBIG;
		goto fail;
	}
	c->capacity = (uint32_t)capacity;
	hy_policy_config_init(&pc);
	pc.window = 16;
	rc = hy_policy_new(cfg->policy, c->capacity, &pc, &c->policy, why, why_size);
	if (rc < 0)
		goto fail;
	rc = hy_cache_index_new(c->capacity, &c->index);
	c->lines = calloc(c->capacity, sizeof(*c->lines));
	c->free_map = calloc((c->capacity + 63) / 64 ? (c->capacity + 63) / 64 : 1, 8);
	c->free_summary = calloc((c->capacity + 4095) / 4096 ? (c->capacity + 4095) / 4096 : 1, 8);
	if (rc == 0 && (!c->free_map || !c->free_summary))
		rc = -ENOMEM;
	if (rc == 0 && c->lines)
		rc = hy_keymap_init(&c->tails, 64, true);
	if (rc < 0 || !c->lines) {
		snprintf(why, why_size, "out of memory for %" PRIu32 " cache lines", c->capacity);
		rc = -ENOMEM;
		goto fail;
	}
	for (uint32_t l = 0; l < c->capacity; l++)
		free_push(c, l);
	if (cfg->pore.rule != HY_PORE_OFF) {
		rc = hy_pore_new(&cfg->pore, &c->pore, why, why_size);
		if (rc == 0 && !(c->line_hits = calloc(c->capacity, 1))) {
			snprintf(why, why_size, "out of memory for PORE's hit counts");
			rc = -ENOMEM;
		}
		if (rc < 0)
			goto fail;
		hy_pore_get_stats(c->pore, &c->pore_snapshot);
	}
	hy_cache_store_external_table(c->store, table_record, c);
	if (!cfg->no_threads) {
		if (pthread_create(&c->cleaner, NULL, cleaner_main, c) != 0) {
			snprintf(why, why_size, "cannot start the cache's cleaner thread");
			rc = -EAGAIN;
			goto fail;
		}
		c->cleaner_started = true;
		if (c->front.nslots) {
			if (pthread_create(&c->evictor, NULL, evictor_main, c) != 0) {
				snprintf(why, why_size, "cannot start the front buffer's thread");
				rc = -EAGAIN;
				hy_cache_close(c);
				return rc;
			}
			c->evictor_started = true;
		}
	}
	*out = c;
	return 0;
fail:
	cache_free(c);
	return rc;
}

/* At close, after a flush that failed: every dirty block, DRAM ones moved
 * into lines first, is journaled as an fsync would, so the next mount's
 * recovery writes it home. No request runs any more. */
static void keep_dirty(struct hy_cache *c)
{
	struct hy_file_table_entry **files = NULL;
	size_t nfiles = 0, kept = 0;

	if (hy_file_table_snapshot(c->files, &files, &nfiles) < 0) {
		hy_log(LOG_ERR, "cache: out of memory keeping the dirty blocks in the store");
		return;
	}
	for (size_t i = 0; i < nfiles; i++) {
		struct cfile *cf = (struct cfile *)files[i];
		struct hy_cache_file f = {cf->entry.file_id, cf->home};
		uint64_t token;
		int k;

		if (!atomic_load(&cf->dirty) || cf->home < 0)
			continue;
		/* every block of the file, not only those since its last fsync */
		pending_clear(cf);
		cf->pending_overflow = true;
		k = fsync_file(c, &f, &token, true);
		if (k < 0)
			hy_log(LOG_ERR,
			       "cache: file %" PRIu64 ": its dirty blocks cannot be kept in the "
			       "store either: %s",
			       f.file_id, strerror(-k));
		else
			kept++;
	}
	hy_file_table_release_snapshot(c->files, files, nfiles);
	hy_log(LOG_WARNING,
	       "cache: the dirty blocks of %zu files stay journaled in \"%s\"; the next "
	       "mount writes them home",
	       kept, c->store_path);
}

int hy_cache_close(struct hy_cache *c)
{
	char why[256];
	int64_t r;
	int rc = 0;

	if (!c)
		return 0;
	atomic_store(&c->stop_now, true);
	pthread_mutex_lock(&c->thread_lock);
	c->stopping = true;
	pthread_cond_broadcast(&c->thread_wake);
	pthread_mutex_unlock(&c->thread_lock);
	pthread_mutex_lock(&c->front.lock);
	pthread_cond_broadcast(&c->front.wake);
	pthread_mutex_unlock(&c->front.lock);
	if (c->cleaner_started)
		pthread_join(c->cleaner, NULL);
	if (c->evictor_started)
		pthread_join(c->evictor, NULL);
	migrations_drop(c);
	r = hy_cache_flush(c);
	if (r < 0) {
		rc = (int)r;
		hy_log(LOG_ERR, "cache: dirty blocks could not all be written home at close: %s",
		       strerror(-rc));
	}
	/* what could not go home stays in the store, journaled, so that the
	 * next mount tries again instead of dropping it */
	if (atomic_load(&c->dirty_sectors) && c->store)
		keep_dirty(c);
	if (c->store) {
		int k = hy_cache_store_checkpoint(c->store, why, sizeof(why));

		if (k < 0)
			hy_log(LOG_ERR, "cache: final checkpoint failed: %s", why);
		if (k == 0 && rc == 0 && atomic_load(&c->dirty_sectors) == 0)
			k = hy_cache_store_set_clean(c->store, true);
		if (k < 0 && rc == 0)
			rc = k;
	}
	cache_free(c);
	return rc;
}

/* ---- stats and check ----------------------------------------------------- */

void hy_cache_get_stats(struct hy_cache *c, struct hy_cache_stats *o)
{
	struct hy_cache_index_stats is;
	struct hy_policy_stats ps;
	static const char *const wp[] = {"back", "through", "around"};

	memset(o, 0, sizeof(*o));
	o->write_policy = wp[c->cfg.write_policy];
	o->path = c->store_path;
	o->policy = hy_policy_kind_name(c->cfg.policy);
	o->read_hits_dram = atomic_load(&c->st.read_hits_dram);
	o->read_hits_ssd = atomic_load(&c->st.read_hits_ssd);
	o->read_misses = atomic_load(&c->st.read_misses);
	o->write_hits_dram = atomic_load(&c->st.write_hits_dram);
	o->write_hits_ssd = atomic_load(&c->st.write_hits_ssd);
	o->write_misses = atomic_load(&c->st.write_misses);
	pthread_mutex_lock(&c->front.lock);
	o->dram_slots = c->front.nslots;
	o->dram_used = c->front.used;
	o->dram_dirty = c->front.dirty;
	pthread_mutex_unlock(&c->front.lock);
	pthread_mutex_lock(&c->lines_lock);
	o->ssd_lines = c->capacity;
	o->ssd_used = c->ssd_used;
	o->ssd_dirty = c->ssd_dirty;
	hy_policy_get_stats(c->policy, &ps);
	pthread_mutex_unlock(&c->lines_lock);
	hy_cache_index_get_stats(c->index, &is);
	o->dirty_bytes = atomic_load(&c->dirty_sectors) * SECTOR;
	o->ssd_bytes_written = atomic_load(&c->st.ssd_bytes_written);
	o->heat_admitted = atomic_load(&c->st.heat_admitted);
	o->heat_refused = atomic_load(&c->st.heat_refused);
	o->policy_refused = atomic_load(&c->st.policy_refused);
	o->dram_evictions = atomic_load(&c->st.dram_evictions);
	o->ssd_evictions = atomic_load(&c->st.ssd_evictions);
	o->cold_dirty_home = atomic_load(&c->st.cold_dirty_home);
	o->cleaned_blocks = atomic_load(&c->st.cleaned_blocks);
	o->cleaner_backlog = o->dram_dirty + o->ssd_dirty;
	o->bypassed = atomic_load(&c->st.bypassed);
	o->seq_bypassed = atomic_load(&c->st.seq_bypassed);
	o->admit_bypassed = atomic_load(&c->st.admit_bypassed);
	o->line_prefetched = atomic_load(&c->st.line_prefetched);
	o->migrations = atomic_load(&c->st.migrations);
	o->migrate_filled = atomic_load(&c->st.migrate_filled);
	o->migrate_dropped = atomic_load(&c->st.migrate_dropped);
	o->migrate_home = atomic_load(&c->st.migrate_home);
	o->pore_held = atomic_load(&c->st.pore_held);
	o->pore_forced = atomic_load(&c->st.pore_forced);
	o->pore_kept = atomic_load(&c->st.pore_kept);
	pthread_mutex_lock(&c->lines_lock);
	o->pore = c->pore_snapshot;
	pthread_mutex_unlock(&c->lines_lock);
	o->stale_files = atomic_load(&c->st.stale_files);
	o->forgotten_files = atomic_load(&c->st.forgotten_files);
	o->journal_records = atomic_load(&c->st.journal_records);
	o->checkpoints = atomic_load(&c->st.checkpoints);
	o->recovered_blocks = c->st.recovered_blocks;
	o->lost_blocks = c->st.lost_blocks;
	/* the index's average over the lines in use (its own figure), the
	 * rest per line of the store */
	o->dram_bytes_per_line = (size_t)(is.entries ? is.bytes_per_entry : 0) +
				 (c->capacity ? ps.bytes / c->capacity : 0) +
				 sizeof(struct line_state);
	o->front_meta_bytes =
		(size_t)c->front.nslots * (sizeof(struct slot) + sizeof(struct ghost)) +
		(c->front.nslots ? ((size_t)c->front.table_mask + 1) * 4 : 0);
}

int hy_cache_check(struct hy_cache *c, char *why, size_t why_size)
{
	struct front *fr = &c->front;
	uint32_t used = 0, dirty = 0, fdirty = 0;
	int rc = hy_cache_index_check(c->index, why, why_size);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&c->lines_lock);
	rc = hy_policy_check(c->policy, why, why_size);
	for (uint32_t l = 0; l < c->capacity && rc == 0; l++) {
		struct hy_cache_entry e;
		const struct line_state *ls = &c->lines[l];

		if (!(ls->flags & LS_USED))
			continue;
		used++;
		if (ls->flags & LS_DIRTY)
			dirty++;
		if (hy_cache_index_lookup(c->index, ls->file_id, ls->block, &e) != 0 ||
		    e.line != l || !!e.dirty != !!(ls->flags & LS_DIRTY)) {
			snprintf(why, why_size, "line %" PRIu32 " disagrees with the index", l);
			rc = -EUCLEAN;
		} else if (front_find(fr, ls->file_id, ls->block) != NONE) {
			snprintf(why, why_size, "line %" PRIu32 "'s block is also in DRAM", l);
			rc = -EUCLEAN;
		}
	}
	if (rc == 0 &&
	    (used != c->ssd_used || dirty != c->ssd_dirty || used + c->nfree != c->capacity)) {
		snprintf(why, why_size, "line counts: %u used, %u dirty, %u free of %u", used,
			 dirty, c->nfree, c->capacity);
		rc = -EUCLEAN;
	}
	pthread_mutex_unlock(&c->lines_lock);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fr->lock);
	used = 0;
	for (uint32_t s = 0; s < fr->nslots; s++) {
		if (!fr->slots[s].used)
			continue;
		used++;
		if (fr->slots[s].dirty)
			fdirty++;
		if ((fr->slots[s].dirty & ~fr->slots[s].valid) ||
		    front_find(fr, fr->slots[s].file_id, fr->slots[s].block) != s) {
			snprintf(why, why_size, "front buffer slot %" PRIu32 " is inconsistent", s);
			rc = -EUCLEAN;
			break;
		}
	}
	if (rc == 0 && (used != fr->used || fdirty != fr->dirty)) {
		snprintf(why, why_size, "front buffer counts: %u used (%u counted), %u dirty (%u)",
			 used, fr->used, fdirty, fr->dirty);
		rc = -EUCLEAN;
	}
	pthread_mutex_unlock(&fr->lock);
	return rc;
}

void hy_cache_truncate_open_begin(struct hy_cache *c, uint64_t file_id)
{
	pthread_rwlock_wrlock(gate(c, file_id));
}

void hy_cache_truncate_open_end(struct hy_cache *c, const struct hy_cache_file *f)
{
	struct cfile *cf = f->object >= 0 ? cfile_get(c, f->file_id, false) : NULL;

	if (cf)
		home_changed(cf);
	/* the size it has now is smaller than the cache knew: what lies past
	 * it leaves, nothing goes home over the truncation */
	if (cf && ensure_fresh(c, cf, f) < 0)
		hy_log(LOG_WARNING, "cache: file %" PRIu64 ": cannot check it after O_TRUNC",
		       f->file_id);
	cfile_put(c, cf);
	pthread_rwlock_unlock(gate(c, f->file_id));
}
