/*
 * cache_internal.h - what the parts of the cache share: struct hy_cache in
 * full, its per-file state (struct cfile), line state and front buffer,
 * the small helpers they all use, and the functions one part calls in
 * another (hy_cache_<part>_<verb>). Only the cache's own .c files
 * (cache/) include it; the API is include/hybridfs/cache.h.
 *
 * The parts: cache.c (open, close, stats, check), front.c (the front
 * buffer and its evictor), lines.c (SSD lines and the journal), cache_io.c
 * (read, write, stale copies, sectors from below), cache_fsync.c (leaving
 * the cache, fsync, files closed and forgotten), cache_reconfig.c (ReCA's
 * reconfiguration), cleaner.c (the cleaner, PORE), where.c (which tier
 * holds each block, for explain: read-only), pin.c (pinned and excluded
 * files, pin.h).
 *
 * Locks: HY_CACHE_GATES rwlocks striped by file id (the cache's gates):
 * a read holds its file's gate shared across its I/O, a write, truncation,
 * sync or eviction of a file's blocks exclusive; an eviction that takes a
 * victim of another file only try-locks that file's gate (a busy file's
 * line is skipped), so no request waits for another file. Below the gates:
 * the front buffer's mutex (its table, lists and heat; never held across
 * I/O), the lines' mutex (policy, line state, free lines; never across
 * I/O; a line's key is read from the index, line_key(), only under it,
 * and lines leave the index and are marked used only under it: issue 19,
 * the key is no longer copied into the line state), the journal's rwlock
 * (appends shared, a checkpoint exclusive), then the index's and the
 * store's own. The indirector is called with the file's gate held and
 * nothing else: it takes its own gates (order: cache gate, then the
 * indirector's). The cleaner's mutex is taken before any
 * gate; it also serializes PORE's zones (the cleaner's pass asks the
 * indirector where blocks lie with a file's gate shared), whose figures for the
 * stats are copied under the lines' mutex.
 */
#ifndef HYBRIDFS_CACHE_INTERNAL_H
#define HYBRIDFS_CACHE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "hybridfs/cache.h"
#include "hybridfs/cache_index.h"
#include "hybridfs/cache_store.h"
#include "hybridfs/file_table.h"
#include "hybridfs/heat.h"
#include "hybridfs/indirector.h"
#include "hybridfs/keymap.h"
#include "hybridfs/pin.h"
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

/* What a file being written keeps beside its struct cfile (issue 19:
 * these 400 bytes in every cfile were most of the DRAM a cached tree of
 * small files, read and never written, paid a file). Under the file's
 * gate, exclusive; cfile_writes() makes it, hy_cache_close_file() frees it
 * (a close turns a pending list into pending_overflow). */
struct cfile_writes {
	/* sequential write streams (bcache's cutoff), several at once: the
	 * kernel sends a stream's writes from parallel requests, out of order */
	struct stream {
		uint64_t start, end, run; /* run: bytes written into [start, end) */
	} streams[STREAMS];
	/* blocks written since the file's last fsync, so that an fsync looks
	 * at those and not at every block the file has cached; past
	 * PENDING_MAX an fsync looks at them all (pending_overflow) */
	uint64_t *pending;
	uint32_t npending, pending_cap;
};

struct cfile {
	struct hy_file_table_entry entry;
	_Atomic int64_t stamp;	    /* home ctime the cached blocks are current for */
	_Atomic uint64_t size;	    /* home size then: a smaller one is a truncation
				     * the cache did not see (an O_TRUNC open) */
	_Atomic int64_t mtime;	    /* home mtime then: kept in the store's stamps */
	_Atomic uint64_t last_used; /* the cache's request count at its last request */
	_Atomic uint64_t blocks;    /* cached blocks, DRAM and SSD */
	_Atomic uint64_t dirty;	    /* of those, with a dirty sector */
	_Atomic uint64_t in_front;  /* of the cached, in DRAM */
	int64_t home;		    /* the cache's own object for writing home; -1 */
	/* what a file being written keeps (streams, blocks for its next
	 * fsync): made at its first write, let go when it is closed */
	struct cfile_writes *writes;
	/* changes the cache made to the home file (writes, size, truncation)
	 * and how many of them the last home sync covered: an fsync whose
	 * dirty blocks are all durable in the store needs no home sync when
	 * they are equal (a new file state starts unequal) */
	_Atomic uint64_t home_changes, home_synced_at;
	/* ReCA's reconfiguration: the line size its lines were last grown
	 * to (0: one block), the write policy of its last write (-1: none
	 * yet), whether its process left write-back (its dirty blocks go
	 * home first), and a count of the changes to its data (writes,
	 * truncations), by which a migration that read without the gate
	 * knows that what it read is still current */
	_Atomic uint64_t generation;
	_Atomic uint32_t line_size;
	_Atomic int last_write;
	_Atomic bool leave_back;
	/* the small ones together (issue 19: their padding cost 24 bytes a
	 * file). Its blocks are lines a mount before kept (cache.c): served
	 * only once the home file is seen to match the stamp they were kept
	 * with. */
	_Atomic bool unverified;
	_Atomic bool closed; /* no handle open (hy_cache_close_file) */
	bool id_durable;     /* the driver confirmed the id names the file after a crash */
	/* the next fsync looks at every block the file has cached, not at
	 * its writes' pending list (too many, lost to a failure, or let go at
	 * a close); under the gate, exclusive */
	bool pending_overflow;
	/* enum hy_rule (pin.h): pinned or excluded, from the cache's rules
	 * map when the state is made, and when hy_pin_set_files changes it */
	_Atomic uint8_t rule;
};

/* ---- line state (SSD), under lines_lock -------------------------------- */

/* LS_JOURNALED: the journal has the line's masks as they are (an fsync
 * need not write its record again); a write to the line clears it. */
/* LS_PINNED: a pinned file's line, held out of the policy (pin.h): no
 * victim search can find it. */
enum { LS_USED = 1, LS_DIRTY = 2, LS_DISK_DIRTY = 4, LS_JOURNALED = 8, LS_PINNED = 16 };

/* One byte a line (issue 19; 17 before): a line's key, file and block,
 * and its masks are the index's (cache_index.h keeps them per line, and
 * hy_cache_index_line_key() maps a line back to its key), its queue is
 * the policy's, and free lines are a bit map (free_map). */
struct line_state {
	uint8_t flags;
};

/* The file and block line @line holds: true, or false when the index has
 * no entry in it. lines_lock held (it keeps the line from being removed). */
static inline bool line_key(struct hy_cache *c, uint32_t line, uint64_t *file_id, uint64_t *block);

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
	struct hy_indirector *below; /* borrowed: the path below the cache */
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
	_Atomic size_t writes_bytes;   /* the files' write states (struct cfile_writes, lists) */
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

	/* pins and excludes (pin.h): the rule of each file id that has one
	 * (under rule_lock, a leaf), and the lines pinned out of the policy,
	 * at most cap (under lines_lock) */
	struct {
		pthread_mutex_t rule_lock;
		struct hy_keymap rules;
		uint32_t lines, cap;
		_Atomic uint64_t over_cap, excluded_requests;
	} pin;
	/* The persistent cache (cache.c). kept: the stamps the lines kept at
	 * open are current for, of the files still unverified then (sorted by
	 * file id; read-only after open). kept_map: a bit per line, set for a
	 * kept line until it leaves (its hits are the warm-up). durable_map:
	 * a bit per line whose durable table or journal says it is in use: its
	 * reuse for another block journals it free first (under lines_lock). */
	struct hy_cache_stamp *kept;
	size_t nkept;
	struct recovered *pending_keep; /* the lines to keep, from the store's open */
	size_t npending_keep;
	uint64_t *kept_map, *durable_map;
	struct {
		uint64_t kept_lines, kept_files;
		uint64_t changed_lines, changed_files; /* at open: recovered home */
		uint64_t gone_lines, gone_files;
		uint64_t unverifiable_lines, unverifiable_files;
		uint64_t damaged_lines; /* at open: data not as summed at the close */
		_Atomic uint64_t verified_files, verified_lines;
		_Atomic uint64_t stale_lines, stale_kept_files; /* at first use */
		_Atomic uint64_t gone_later_files, gone_later_lines;
		_Atomic uint64_t warm_hits;
		bool kept_format; /* the store's format keeps lines */
	} keep;

	_Atomic uint64_t dirty_sectors;
	struct {
		_Atomic uint64_t read_hits_dram, read_hits_ssd, read_misses;
		_Atomic uint64_t write_hits_dram, write_hits_ssd, write_misses;
		_Atomic uint64_t ssd_bytes_written, heat_admitted;
		_Atomic uint64_t dram_evictions, ssd_evictions, cold_dirty_home, cleaned_blocks;
		_Atomic uint64_t bypassed, stale_files, journal_records, checkpoints;
		_Atomic uint64_t forgotten_files;
		/* blocks past the cache by reason (hy_cache_pass()) */
		_Atomic uint64_t pass[HY_CACHE_PASS_COUNT];
		_Atomic uint64_t line_prefetched, migrations, migrate_filled;
		_Atomic uint64_t migrate_dropped, migrate_home;
		_Atomic uint64_t pore_held, pore_forced, pore_kept;
		uint64_t recovered_blocks, lost_blocks;
	} st;
};

/* @n blocks passed the cache for @reason (relaxed: a counter, read for
 * status only). */
static inline void hy_cache_pass(struct hy_cache *c, enum hy_cache_pass_reason reason, uint64_t n)
{
	atomic_fetch_add_explicit(&c->st.pass[reason], n, memory_order_relaxed);
}

/* The blocks [off, off + size) touches, size > 0. */
static inline uint64_t hy_cache_blocks_of(uint64_t off, uint64_t size)
{
	return (off + size - 1) / HY_CACHE_LINE_SIZE - off / HY_CACHE_LINE_SIZE + 1;
}

/* ---- the path below: the indirector (indirector.h) -----------------------
 * The cache calls down only, through these: BORG's map, then the BOPT or
 * the home file, then the device. */

static inline ssize_t below_read(struct hy_cache *c, const struct hy_cache_file *f, void *buf,
				 size_t len, off_t off)
{
	return hy_indirector_read(c->below, f->file_id, f->object, buf, len, off);
}

static inline ssize_t below_write(struct hy_cache *c, const struct hy_cache_file *f,
				  const void *buf, size_t len, off_t off)
{
	return hy_indirector_write(c->below, f->file_id, f->object, buf, len, off);
}

static inline int below_getattr(struct hy_cache *c, const struct hy_cache_file *f,
				struct hy_device_attr *out)
{
	return hy_indirector_getattr(c->below, f->object, out);
}

/* @mtime_ns < 0: now */
static inline int below_set_mtime(struct hy_cache *c, const struct hy_cache_file *f,
				  int64_t mtime_ns)
{
	return hy_indirector_set_mtime(c->below, f->file_id, f->object, mtime_ns);
}

/* Reserves room at home for [@off, @off + @len) without changing the
 * file's size (a write-back write takes it before the block is dirty: a
 * block home cannot hold would be stuck in the cache); -EOPNOTSUPP when
 * the home filesystem cannot. */
static inline int below_reserve(struct hy_cache *c, const struct hy_cache_file *f, uint64_t off,
				uint64_t len)
{
	return hy_indirector_reserve(c->below, f->file_id, f->object, off, len);
}

/* What the cache sent home made durable: BORG's BOPT writes of the file
 * home first (under the cache's gate, which the caller holds), then the
 * map journal and the home file's data. */
static inline int below_sync(struct hy_cache *c, const struct hy_cache_file *f)
{
	int64_t rc = 0;

	if (hy_indirector_has_copies(c->below, f->file_id))
		rc = hy_indirector_sync_home(c->below, f->file_id, f->object);
	return rc < 0 ? (int)rc : hy_indirector_fsync(c->below, f->file_id, f->object, true);
}

/* An object of the cache's own for writing @f's data home later (the
 * request's may be read-only or closed by then); given back by below_put. */
static inline int below_hold(struct hy_cache *c, const struct hy_cache_file *f, int64_t *object)
{
	return hy_indirector_hold_object(c->below, f->object, object);
}

static inline void below_put(struct hy_cache *c, int64_t object)
{
	hy_indirector_put_object(c->below, object);
}

/* PORE: the disk addresses of @f's 4 KiB blocks @blocks[0..n) (ascending);
 * when it fails a block lies at its file id * 64 MiB + its offset. */
static inline int below_addresses(struct hy_cache *c, const struct hy_cache_file *f,
				  const uint64_t *blocks, size_t n, uint64_t *out)
{
	return hy_indirector_addresses(c->below, f->object, blocks, n, out);
}

static inline bool line_key(struct hy_cache *c, uint32_t line, uint64_t *file_id, uint64_t *block)
{
	return hy_cache_index_line_key(c->index, line, file_id, block) == 0;
}

static inline uint8_t popcount8(uint8_t m)
{
	return (uint8_t)__builtin_popcount(m);
}

/* ---- files ------------------------------------------------------------- */

static inline struct cfile *cfile_get(struct hy_cache *c, uint64_t file_id, bool create)
{
	int err;

	return (struct cfile *)hy_file_table_get(c->files, file_id, create, &err);
}

static inline void cfile_put(struct hy_cache *c, struct cfile *cf)
{
	if (cf)
		hy_file_table_put(c->files, &cf->entry);
}

/* A block of the file was dirtied: the next fsync looks at it. Gate
 * held exclusive. */
/* The file's write state, made at need; NULL when there is no memory for
 * it (the caller then does without: no stream, or pending_overflow).
 * Gate held, exclusive. */
static inline struct cfile_writes *cfile_writes(struct hy_cache *c, struct cfile *cf)
{
	if (!cf->writes) {
		cf->writes = calloc(1, sizeof(*cf->writes));
		if (cf->writes)
			atomic_fetch_add(&c->writes_bytes, sizeof(*cf->writes));
	}
	return cf->writes;
}

/* Frees the pending list of @w. */
static inline void pending_free(struct hy_cache *c, struct cfile_writes *w)
{
	atomic_fetch_sub(&c->writes_bytes, (size_t)w->pending_cap * sizeof(*w->pending));
	free(w->pending);
	w->pending = NULL;
	w->npending = w->pending_cap = 0;
}

static inline void pending_add(struct hy_cache *c, struct cfile *cf, uint64_t block)
{
	struct cfile_writes *w;

	if (cf->pending_overflow)
		return;
	w = cfile_writes(c, cf);
	if (!w) {
		cf->pending_overflow = true; /* the fsync looks at everything */
		return;
	}
	if (w->npending == w->pending_cap) {
		uint32_t cap = w->pending_cap ? w->pending_cap * 2 : 8;
		uint64_t *p = cap <= PENDING_MAX ? realloc(w->pending, cap * sizeof(*p)) : NULL;

		if (!p) {
			cf->pending_overflow = true; /* the fsync looks at everything */
			pending_free(c, w);
			return;
		}
		atomic_fetch_add(&c->writes_bytes, (size_t)(cap - w->pending_cap) * sizeof(*p));
		w->pending = p;
		w->pending_cap = cap;
	}
	w->pending[w->npending++] = block;
}

static inline void pending_clear(struct hy_cache *c, struct cfile *cf)
{
	if (cf->writes)
		pending_free(c, cf->writes);
	cf->pending_overflow = false;
}

/* Lets the write state go (a close, the file's end): a pending list the
 * next fsync would have used becomes pending_overflow. Gate held,
 * exclusive, or the file unreachable. */
static inline void cfile_writes_release(struct hy_cache *c, struct cfile *cf)
{
	if (!cf->writes)
		return;
	if (cf->writes->npending)
		cf->pending_overflow = true;
	pending_free(c, cf->writes);
	atomic_fetch_sub(&c->writes_bytes, sizeof(*cf->writes));
	free(cf->writes);
	cf->writes = NULL;
}

static inline void home_changed(struct cfile *cf)
{
	atomic_fetch_add(&cf->generation, 1);
	atomic_fetch_add(&cf->home_changes, 1);
}

/* ---- gates --------------------------------------------------------------- */

static inline pthread_rwlock_t *gate(struct hy_cache *c, uint64_t file_id)
{
	return &c->gates[file_id % HY_CACHE_GATES];
}

/* ---- dirty bookkeeping --------------------------------------------------- */

/* A block's dirty mask went from @before to @after. */
static inline void note_dirty(struct hy_cache *c, struct cfile *cf, uint8_t before, uint8_t after)
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

/* ---- the front buffer, the clock ------------------------------------------ */

static inline unsigned char *slot_data(struct front *fr, uint32_t s)
{
	return fr->data + (size_t)s * LINE;
}

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- read ---------------------------------------------------------------- */

/* What the cache holds of one block: copied out under the locks. */
struct held {
	int where; /* 0 nothing, 1 DRAM slot, 2 SSD line */
	uint32_t slot_or_line;
	uint8_t valid, dirty;
};

/* ---- functions one part calls in another, by the file that has them ---- */

/* front.c */
uint32_t hy_cache_front_find(const struct front *fr, uint64_t file_id, uint64_t block);
void hy_cache_front_touch(struct front *fr, uint32_t s);
uint32_t hy_cache_front_add(struct hy_cache *c, uint64_t file_id, uint64_t block);
void hy_cache_front_remove(struct front *fr, uint32_t s);
int hy_cache_front_to_store(struct hy_cache *c, struct cfile *cf, uint32_t s,
			    enum hy_policy_queue q);
void *hy_cache_front_evictor_main(void *arg);
uint64_t hy_cache_front_keep(struct hy_cache *c);

/* lines.c */
bool hy_cache_lines_disk_dirty(struct hy_cache *c, uint32_t line);
void hy_cache_lines_free_push(struct hy_cache *c, uint32_t line);
void hy_cache_lines_note_use(struct hy_cache *c, struct cfile *cf);
void hy_cache_lines_forget(struct hy_cache *c, uint32_t line);
int64_t hy_cache_lines_alloc(struct hy_cache *c, uint64_t file_id, bool exclusive);
void hy_cache_lines_give_back(struct hy_cache *c, uint32_t line);
int hy_cache_lines_commit(struct hy_cache *c, struct cfile *cf, uint32_t line, uint64_t block,
			  uint8_t valid, uint8_t dirty, enum hy_policy_queue q);
void hy_cache_lines_accessed(struct hy_cache *c);
void hy_cache_lines_hit(struct hy_cache *c, uint32_t line);
bool hy_cache_lines_set_dirty(struct hy_cache *c, uint32_t line, bool dirty);
int hy_cache_lines_store_write(struct hy_cache *c, uint32_t line, uint8_t mask, const void *buf);
void hy_cache_lines_store_refused(struct hy_cache *c, uint32_t line, int rc);
void hy_cache_lines_set_tail(struct hy_cache *c, uint64_t line, uint16_t tail);
void hy_cache_lines_table_record(void *arg, uint64_t line, struct hy_cache_line *out);
int hy_cache_journal_records(struct hy_cache *c, const struct hy_cache_journal_record *r, size_t n);
int hy_cache_journal_clean_records(struct hy_cache *c, const struct hy_cache_journal_record *r,
				   size_t n);

/* pin.c */
int hy_cache_pin_init(struct hy_cache *c);
void hy_cache_pin_free(struct hy_cache *c);
uint8_t hy_cache_pin_rule_of(struct hy_cache *c, uint64_t file_id);
bool hy_cache_pin_line_take(struct hy_cache *c, const struct cfile *cf, uint32_t line);
bool hy_cache_pin_line_release(struct hy_cache *c, uint32_t line);
const struct hy_cache_hint *hy_cache_pin_hint(struct hy_cache *c, const struct cfile *cf,
					      const struct hy_cache_hint *hint,
					      struct hy_cache_hint *local);
void hy_cache_pin_forget(struct hy_cache *c, uint64_t file_id);
/* cache.c */
void hy_cache_kept_verify(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
			  const struct hy_device_attr *a);
void hy_cache_kept_gone(struct hy_cache *c, struct cfile *cf);

static inline bool map_test(const uint64_t *map, uint32_t line)
{
	return map && (map[line / 64] >> (line % 64)) & 1;
}

static inline void map_set(uint64_t *map, uint32_t line, bool on)
{
	if (!map)
		return;
	if (on)
		map[line / 64] |= 1ULL << (line % 64);
	else
		map[line / 64] &= ~(1ULL << (line % 64));
}

/* cache_io.c */
bool hy_cache_io_fresh_for(const struct cfile *cf, const struct hy_device_attr *a);
int hy_cache_io_ensure_fresh(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f);
void hy_cache_io_refresh_stamp(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f);
void hy_cache_io_keep_mtime(struct hy_cache *c, const struct hy_cache_file *f,
			    const struct hy_device_attr *before);
int hy_cache_io_write_home(struct hy_cache *c, const struct hy_cache_file *f, uint64_t block,
			   uint8_t mask, const unsigned char *buf, uint64_t size);
void hy_cache_io_find_block(struct hy_cache *c, uint64_t file_id, uint64_t block, bool touch,
			    struct held *h);
int hy_cache_io_copy_held(struct hy_cache *c, const struct held *h, uint8_t mask,
			  unsigned char *line);
enum hy_policy_queue hy_cache_io_queue_for_hint(uint8_t admit, uint8_t evict, double heat,
						double threshold);
void hy_cache_io_fill_block(struct hy_cache *c, struct cfile *cf, uint64_t block, uint8_t valid,
			    const unsigned char *line, const struct hy_cache_hint *hint);

/* cache_fsync.c */
int hy_cache_leave_settle_range(struct hy_cache *c, struct cfile *cf,
				const struct hy_cache_file *req, uint64_t first, uint64_t nblocks,
				bool home_first, bool drop);
int hy_cache_leave_drop_range(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
			      uint64_t first, uint64_t nblocks, bool home_first);
int hy_cache_fsync_all_blocks(struct hy_cache *c, struct cfile *cf, uint64_t **out, size_t *n);
int hy_cache_fsync_file(struct hy_cache *c, const struct hy_cache_file *f, uint64_t *token,
			bool journal_all);

/* cache_reconfig.c */
void hy_cache_reconfig_file(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
			    const struct hy_cache_hint *hint, int write_policy);
int64_t hy_cache_reconfig_migrate_pass(struct hy_cache *c, uint64_t rate);
void hy_cache_reconfig_migrations_drop(struct hy_cache *c);

/* cleaner.c */
void hy_cache_clean_pace(struct hy_cache *c, int64_t blocks, uint64_t rate, int64_t start);
void hy_cache_clean_kick(struct hy_cache *c);
void *hy_cache_clean_main(void *arg);

#endif
