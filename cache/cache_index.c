/* cache_index.c - the SSD cache's index; see include/hybridfs/cache_index.h.
 *
 * Layout: files are found through a file table (file_table.h) striped
 * over HY_CACHE_INDEX_STRIPES mutexes, as in map.c: the last reference to
 * a file left with no entries frees it. A file's entries are an array of
 * 4-byte slots (a tagged line number), open addressing with linear probing
 * from hy_keymap_mix(block) scaled to the table's size; the key and masks
 * are the line's own entry (struct line_rec); a removal shifts the
 * following entries of the cluster back (no tombstones), so a lookup stops
 * at the first empty slot.
 *
 * Memory accounting: idx->bytes counts the index's struct, the lines'
 * entries, the handle table, files and slot arrays, changed atomically where the allocation is made
 * or freed; the file table counts its own (struct and stripe buckets); the stats add both.
 *
 * Lock order: stripe mutex (never held while taking another lock but the
 * handle table's mutex, a leaf), then a file's rwlock (locks[fh % N]). A
 * file's rwlock is always dropped before file_put() takes
 * the stripe's mutex.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/log.h"
#include "hybridfs/cache_index.h"
#include "hybridfs/file_table.h"
#include "hybridfs/keymap.h"

#define MIN_SLOTS 4
#define EMPTY	  UINT32_MAX /* a free slot of a file's table */
#define NO_FILE	  UINT32_MAX /* fh[line] of a line not in the index */
#define TAG_BITS  4	     /* of a slot: its block's hash (below) */
#define LINE_MASK ((1u << (32 - TAG_BITS)) - 1)

/* One line's entry, packed: 10 bytes (HY_CACHE_INDEX_LINE_BYTES), read in
 * one cache line by a hit (separate arrays cost a miss each). */
struct line_rec {
	uint32_t fh;	/* the file's handle, NO_FILE: not in the index */
	uint32_t block; /* blocks from 2^32 on are never indexed */
	uint8_t valid;	/* sectors holding data */
	uint8_t dirty;	/* sectors newer than home */
} __attribute__((packed));

_Static_assert(sizeof(struct line_rec) == HY_CACHE_INDEX_LINE_BYTES, "10 bytes a line");

/* A table of INLINE_SLOTS slots (3 entries) lives in the file's struct,
 * in the place of the pointer to a larger one and its size (issue 19: most
 * files of a source tree have a few blocks, and their table's own
 * allocation cost them 32 bytes, malloc's overhead included). The two are
 * told apart by the last word: HEAP_MARK there is never a slot (the
 * line it would name, 2^28 - 1, is past HY_CACHE_INDEX_MAX_LINES) nor
 * EMPTY. A file with no entries has the inline table, empty. */
#define INLINE_SLOTS MIN_SLOTS
#define HEAP_MARK    LINE_MASK

struct idx_file {
	struct hy_file_table_entry entry; /* file_id, refs, chain: the table's */
	union {				  /* lines (tagged), EMPTY; under its lock */
		uint32_t in_file[INLINE_SLOTS];
		struct {
			uint32_t *slots;
			uint32_t cap;  /* above INLINE_SLOTS */
			uint32_t mark; /* HEAP_MARK: in_file[] is not used */
		} heap;
	} tab;
	uint32_t n;  /* entries; under its lock */
	uint32_t fh; /* its handle: rec[line].fh of its lines; its lock is locks[fh % N] */
};

_Static_assert(sizeof(struct idx_file) == 48, "a file's struct: 48 bytes, a malloc of 64");
_Static_assert(offsetof(struct idx_file, tab.heap.mark) ==
		       offsetof(struct idx_file, tab.in_file[INLINE_SLOTS - 1]),
	       "the mark is the inline table's last slot");

static bool on_heap(const struct idx_file *f)
{
	return f->tab.heap.mark == HEAP_MARK;
}

/* The file's table: its size and its slots, wherever they are. */
#define CAP(f)	 (on_heap(f) ? (f)->tab.heap.cap : (uint32_t)INLINE_SLOTS)
#define SLOTS(f) (on_heap(f) ? (f)->tab.heap.slots : (f)->tab.in_file)

#define FLOCK(idx, f) (&(idx)->locks[(f)->fh % HY_CACHE_INDEX_LOCKS])
#define FILE_OF(e)    ((struct idx_file *)((char *)(e)-offsetof(struct idx_file, entry)))

struct hy_cache_index {
	uint32_t capacity;
	uint64_t files;	  /* atomic: files with entries */
	uint64_t entries; /* atomic */
	size_t bytes;	  /* atomic */
	struct hy_file_table *table;
	/* the files' rwlocks, striped by handle (a file's own lock cost 56
	 * bytes a file: a cached tree of small files paid it per few lines) */
	pthread_rwlock_t locks[HY_CACHE_INDEX_LOCKS];
	/* per line: the key and masks of the block it holds, written under
	 * its file's lock (a reverse lookup reads fh and block without it:
	 * the caller keeps the line from changing, cache_index.h) */
	struct line_rec *rec;
	/* the files' handles: handle -> file, and the handles free for reuse
	 * (a stack); under handle_lock, a leaf lock */
	unsigned nlocks; /* of locks[], initialized */
	pthread_mutex_t handle_lock;
	struct idx_file **by_handle;
	uint32_t *free_handles;
	uint32_t handles, handle_cap, nfree_handles;
};

static void bytes_add(struct hy_cache_index *idx, size_t n)
{
	__atomic_add_fetch(&idx->bytes, n, __ATOMIC_RELAXED);
}

static void bytes_sub(struct hy_cache_index *idx, size_t n)
{
	__atomic_sub_fetch(&idx->bytes, n, __ATOMIC_RELAXED);
}

static struct hy_cache_entry entry_of(const struct hy_cache_index *idx, uint32_t line)
{
	struct hy_cache_entry e = {idx->rec[line].block, line, idx->rec[line].valid,
				   idx->rec[line].dirty};

	return e;
}

/* ---- sectors --------------------------------------------------------- */

int hy_cache_sectors(uint32_t offset, uint32_t length, uint8_t *covered, uint8_t *touched)
{
	uint32_t end = offset + length, first, last, s;

	*covered = 0;
	*touched = 0;
	if (offset > HY_CACHE_LINE_SIZE || length > HY_CACHE_LINE_SIZE - offset)
		return -EINVAL;
	if (length == 0)
		return 0;
	for (s = offset / HY_CACHE_SECTOR_SIZE; s * HY_CACHE_SECTOR_SIZE < end; s++)
		*touched |= (uint8_t)(1u << s);
	first = (offset + HY_CACHE_SECTOR_SIZE - 1) / HY_CACHE_SECTOR_SIZE;
	last = end / HY_CACHE_SECTOR_SIZE; /* first sector not wholly covered */
	for (s = first; s < last; s++)
		*covered |= (uint8_t)(1u << s);
	return 0;
}

/* ---- one file's table (its lock held) -------------------------------- */

/* A slot holds a line number (below 2^28, HY_CACHE_INDEX_MAX_LINES) and,
 * in its top four bits, four bits of its block's hash: a probe reads the
 * line's block (elsewhere in memory, a cache miss) only when they match,
 * a sixteenth of the time. EMPTY is no line. */

static uint32_t line_at(const struct idx_file *f, uint32_t i)
{
	return SLOTS(f)[i] & LINE_MASK;
}

static uint32_t tag_of(uint64_t hash)
{
	return (uint32_t)(hash & ((1u << TAG_BITS) - 1)) << (32 - TAG_BITS);
}

/* The home slot of a block of hash @hash in a table of @cap slots: the
 * hash's top half scaled to [0, cap) by a multiply (Lemire's reduction),
 * so a table needs not be a power of two and grows by an eighth. */
static uint32_t home_in(uint32_t cap, uint64_t hash)
{
	return (uint32_t)(((hash >> 32) * cap) >> 32);
}

static uint32_t next_slot(uint32_t cap, uint32_t i)
{
	return i + 1 == cap ? 0 : i + 1;
}

/* Cyclic distance from slot @a forward to slot @b. */
static uint32_t dist(uint32_t cap, uint32_t a, uint32_t b)
{
	return b >= a ? b - a : b + cap - a;
}

/* The slot holding @block, or EMPTY. The key is the line's own block:
 * every line in a file's table is one of that file's. */
static uint32_t tab_find(const struct hy_cache_index *idx, const struct idx_file *f, uint64_t block)
{
	uint64_t h = hy_keymap_mix(block);
	uint32_t i, tag = tag_of(h);

	if (block > UINT32_MAX)
		return EMPTY;
	for (i = home_in(CAP(f), h); SLOTS(f)[i] != EMPTY; i = next_slot(CAP(f), i))
		if ((SLOTS(f)[i] & ~LINE_MASK) == tag && idx->rec[line_at(f, i)].block == block)
			return i;
	return EMPTY;
}

/* Puts @line (its block recorded) into the table (which has room and does
 * not hold its block). */
static void tab_put(const struct hy_cache_index *idx, uint32_t *slots, uint32_t cap, uint32_t line)
{
	uint64_t h = hy_keymap_mix(idx->rec[line].block);
	uint32_t i = home_in(cap, h);

	while (slots[i] != EMPTY)
		i = next_slot(cap, i);
	slots[i] = line | tag_of(h);
}

static uint32_t *slots_new(uint32_t cap)
{
	uint32_t *s = malloc((size_t)cap * sizeof(*s));

	if (s)
		memset(s, 0xff, (size_t)cap * sizeof(*s));
	return s;
}

/* Makes @ns, a table of @ncap slots, the file's: a heap table (@ncap
 * above INLINE_SLOTS) is taken over, an inline one copied into the file's
 * struct; the old table is freed. @ns NULL: the inline table, empty. */
static void tab_set(struct hy_cache_index *idx, struct idx_file *f, uint32_t *ns, uint32_t ncap)
{
	if (on_heap(f)) {
		free(f->tab.heap.slots);
		bytes_sub(idx, (size_t)f->tab.heap.cap * sizeof(*ns));
	}
	if (ncap > INLINE_SLOTS) {
		f->tab.heap.slots = ns;
		f->tab.heap.cap = ncap;
		f->tab.heap.mark = HEAP_MARK;
		bytes_add(idx, (size_t)ncap * sizeof(*ns));
	} else if (ns) {
		memcpy(f->tab.in_file, ns, sizeof(f->tab.in_file));
	} else {
		memset(f->tab.in_file, 0xff, sizeof(f->tab.in_file));
	}
}

/* Moves the file's entries into a table of @ncap slots (more than f->n);
 * on failure the table stays as it was. */
static int tab_resize(struct hy_cache_index *idx, struct idx_file *f, uint32_t ncap)
{
	uint32_t small[INLINE_SLOTS];
	uint32_t *ns = ncap > INLINE_SLOTS ? slots_new(ncap) : small;

	if (!ns)
		return -ENOMEM;
	if (ns == small)
		memset(small, 0xff, sizeof(small));
	for (uint32_t i = 0; i < CAP(f); i++)
		if (SLOTS(f)[i] != EMPTY)
			tab_put(idx, ns, ncap, line_at(f, i));
	tab_set(idx, f, ns, ncap);
	return 0;
}

/* Whether a table of @cap slots may hold @n entries: load at most 0.9
 * (the tags keep the longer probes cheap: most slots are passed over
 * without reading their line's block). */
static bool fits(uint64_t n, uint64_t cap)
{
	return n * 10 <= cap * 9;
}

/* The next size of a table of @cap slots: an eighth more (doubling while
 * small), so that a table that only grew keeps a load between 0.8 and 0.9
 * (4.4 to 5 bytes an entry) where doubling left it between 0.4 and 0.8. A resize moves every entry,
 * so an insert moves 9 entries amortized (O(1)); the line numbers are moved, the blocks read to
 * hash them. */
static uint32_t grown(uint32_t cap)
{
	return cap < MIN_SLOTS ? MIN_SLOTS : cap < 16 ? cap * 2 : cap + cap / 8;
}

/* Removes the entry in slot @i, shifting the rest of its cluster back. */
static void tab_delete(const struct hy_cache_index *idx, struct idx_file *f, uint32_t i)
{
	uint32_t j = i;

	for (;;) {
		uint32_t h;

		j = next_slot(CAP(f), j);
		if (SLOTS(f)[j] == EMPTY)
			break;
		h = home_in(CAP(f), hy_keymap_mix(idx->rec[line_at(f, j)].block));
		/* j's entry may move to i when i lies cyclically in [h, j) */
		if (dist(CAP(f), h, j) >= dist(CAP(f), i, j)) {
			SLOTS(f)[i] = SLOTS(f)[j];
			i = j;
		}
	}
	SLOTS(f)[i] = EMPTY;
	f->n--;
}

/* The size a table of @cap slots shrinks to for @n entries: halved while
 * below a load of 1/8. */
static uint32_t shrunk(uint32_t n, uint32_t cap)
{
	while (cap > MIN_SLOTS && (uint64_t)n * 8 < cap)
		cap = cap / 2 > MIN_SLOTS ? cap / 2 : MIN_SLOTS;
	/* halving can stop a little above the smallest table (5 slots, from
	 * 46): the entries go back into the file's struct when they fit */
	if (cap < 2 * MIN_SLOTS && fits(n, MIN_SLOTS))
		cap = MIN_SLOTS;
	return cap;
}

/* After removals: a file with no entries goes back to its empty inline
 * table; one below a load of 1/8 halves it (a failure keeps the larger
 * table). */
static void tab_shrink(struct hy_cache_index *idx, struct idx_file *f)
{
	uint32_t ncap;

	if (f->n == 0) {
		tab_set(idx, f, NULL, 0);
		__atomic_sub_fetch(&idx->files, 1, __ATOMIC_RELAXED);
		return;
	}
	ncap = shrunk(f->n, CAP(f));
	if (ncap != CAP(f))
		tab_resize(idx, f, ncap);
}

/* A line leaves the index (its file's lock held). */
static void line_clear(struct hy_cache_index *idx, uint32_t line)
{
	idx->rec[line].fh = NO_FILE;
	idx->rec[line].valid = 0;
	idx->rec[line].dirty = 0;
}

/* ---- files ------------------------------------------------------------ */

/* A file's lock prefers writers: glibc's default lets a steady stream of
 * lookups starve an insert or a truncate on the same file. */
static int rwlock_init(pthread_rwlock_t *lock)
{
#ifdef __GLIBC__
	pthread_rwlockattr_t attr;
	int rc;

	if (pthread_rwlockattr_init(&attr) != 0)
		return -1;
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	rc = pthread_rwlock_init(lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	return rc;
#else
	return pthread_rwlock_init(lock, NULL);
#endif
}

/* A handle for @f: a free one, or the next (the arrays grow by half).
 * Called under a stripe's mutex; takes handle_lock (a leaf). */
static int handle_take(struct hy_cache_index *idx, struct idx_file *f)
{
	int rc = 0;

	pthread_mutex_lock(&idx->handle_lock);
	if (idx->nfree_handles) {
		f->fh = idx->free_handles[--idx->nfree_handles];
	} else if (idx->handles == NO_FILE) {
		rc = -ENOMEM; /* 2^32 - 1 files with entries at once */
	} else {
		if (idx->handles == idx->handle_cap) {
			uint32_t cap =
				idx->handle_cap < 64 ? 64 : idx->handle_cap + idx->handle_cap / 2;
			struct idx_file **by = realloc(idx->by_handle, (size_t)cap * sizeof(*by));
			uint32_t *fr =
				by ? realloc(idx->free_handles, (size_t)cap * sizeof(*fr)) : NULL;

			if (by)
				idx->by_handle = by;
			if (!fr) {
				pthread_mutex_unlock(&idx->handle_lock);
				return -ENOMEM;
			}
			idx->free_handles = fr;
			bytes_add(idx,
				  (size_t)(cap - idx->handle_cap) * (sizeof(*by) + sizeof(*fr)));
			idx->handle_cap = cap;
		}
		f->fh = idx->handles++;
	}
	if (rc == 0)
		idx->by_handle[f->fh] = f;
	pthread_mutex_unlock(&idx->handle_lock);
	return rc;
}

static struct hy_file_table_entry *file_alloc(void *arg, uint64_t file_id)
{
	struct hy_cache_index *idx = arg;
	struct idx_file *f = calloc(1, sizeof(*f));

	(void)file_id;
	if (f && handle_take(idx, f) != 0) {
		free(f);
		f = NULL;
	}
	if (!f)
		return NULL;
	memset(f->tab.in_file, 0xff, sizeof(f->tab.in_file)); /* empty, inline */
	bytes_add(idx, sizeof(*f));
	return &f->entry;
}

/* A file with no entries is freed by its last reference (file_table.c
 * says why f->n is read safely there). */
static bool file_empty(const struct hy_file_table_entry *e)
{
	return FILE_OF(e)->n == 0;
}

static void file_free(void *arg, struct hy_file_table_entry *e)
{
	struct hy_cache_index *idx = arg;
	struct idx_file *f = FILE_OF(e);

	pthread_mutex_lock(&idx->handle_lock);
	idx->by_handle[f->fh] = NULL;
	idx->free_handles[idx->nfree_handles++] = f->fh;
	pthread_mutex_unlock(&idx->handle_lock);
	tab_set(idx, f, NULL, 0);
	bytes_sub(idx, sizeof(*f));
	free(f);
}

static const struct hy_file_table_ops file_ops = {file_alloc, file_empty, file_free};

static void index_free(struct hy_cache_index *idx)
{
	hy_file_table_free(idx->table);
	for (unsigned i = 0; i < idx->nlocks; i++)
		pthread_rwlock_destroy(&idx->locks[i]);
	pthread_mutex_destroy(&idx->handle_lock);
	free(idx->by_handle);
	free(idx->free_handles);
	free(idx->rec);
	free(idx);
}

int hy_cache_index_new(uint32_t capacity_lines, struct hy_cache_index **out)
{
	struct hy_cache_index *idx;
	size_t n = capacity_lines;
	int rc;

	*out = NULL;
	if (capacity_lines == 0 || capacity_lines > HY_CACHE_INDEX_MAX_LINES)
		return -EINVAL;
	idx = calloc(1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	pthread_mutex_init(&idx->handle_lock, NULL);
	for (; idx->nlocks < HY_CACHE_INDEX_LOCKS; idx->nlocks++)
		if (rwlock_init(&idx->locks[idx->nlocks]) != 0) {
			index_free(idx);
			return -ENOMEM;
		}
	idx->capacity = capacity_lines;
	idx->rec = malloc(n * sizeof(*idx->rec));
	if (!idx->rec) {
		index_free(idx);
		return -ENOMEM;
	}
	for (size_t l = 0; l < n; l++)
		idx->rec[l] = (struct line_rec){NO_FILE, 0, 0, 0};
	idx->bytes = sizeof(*idx) + n * HY_CACHE_INDEX_LINE_BYTES;
	rc = hy_file_table_new(HY_CACHE_INDEX_STRIPES, &file_ops, idx, &idx->table);
	if (rc) {
		index_free(idx);
		return rc;
	}
	*out = idx;
	return 0;
}

void hy_cache_index_free(struct hy_cache_index *idx)
{
	if (idx)
		index_free(idx);
}

/* Finds @file_id (adding it when @create) and takes a reference. NULL when
 * absent, or when adding it failed (*@err = -ENOMEM). */
static struct idx_file *file_get(struct hy_cache_index *idx, uint64_t file_id, bool create,
				 int *err)
{
	struct hy_file_table_entry *e = hy_file_table_get(idx->table, file_id, create, err);

	return e ? FILE_OF(e) : NULL;
}

/* Drops a reference; the last one frees a file with no entries. The caller
 * holds no lock. */
static void file_put(struct hy_cache_index *idx, struct idx_file *f)
{
	hy_file_table_put(idx->table, &f->entry);
}

/* ---- lookups ---------------------------------------------------------- */

int hy_cache_index_lookup(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
			  struct hy_cache_entry *out)
{
	struct idx_file *f;
	uint32_t i;
	int rc;

	if (block > UINT32_MAX)
		return -ENOENT;
	f = file_get(idx, file_id, false, &rc);
	if (!f)
		return -ENOENT;
	pthread_rwlock_rdlock(FLOCK(idx, f));
	i = tab_find(idx, f, block);
	if (i != EMPTY)
		*out = entry_of(idx, line_at(f, i));
	pthread_rwlock_unlock(FLOCK(idx, f));
	file_put(idx, f);
	return i != EMPTY ? 0 : -ENOENT;
}

int hy_cache_index_line_key(struct hy_cache_index *idx, uint32_t line, uint64_t *file_id,
			    uint64_t *block)
{
	uint32_t fh;
	int rc = -ENOENT;

	if (line >= idx->capacity)
		return -EINVAL;
	fh = idx->rec[line].fh;
	if (fh == NO_FILE)
		return -ENOENT;
	pthread_mutex_lock(&idx->handle_lock);
	if (fh < idx->handles && idx->by_handle[fh]) {
		*file_id = idx->by_handle[fh]->entry.file_id;
		*block = idx->rec[line].block;
		rc = 0;
	}
	pthread_mutex_unlock(&idx->handle_lock);
	return rc;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct hy_cache_entry *x = a, *y = b;

	return x->block < y->block ? -1 : x->block > y->block;
}

/* Whether a range of @nblocks is better walked by probing each block than
 * by scanning the table's @cap slots. */
static bool probe_each(uint64_t nblocks, size_t cap)
{
	return nblocks <= cap;
}

/* Whether slot @i holds a block of [@first, @end). */
static bool slot_in(const struct hy_cache_index *idx, const struct idx_file *f, uint32_t i,
		    uint64_t first, uint64_t end)
{
	return SLOTS(f)[i] != EMPTY && idx->rec[line_at(f, i)].block >= first &&
	       idx->rec[line_at(f, i)].block < end;
}

/* lookup_range's scan of the whole table (f->lock held). */
static int64_t range_scan(const struct hy_cache_index *idx, const struct idx_file *f,
			  uint64_t first, uint64_t end, struct hy_cache_entry *out, size_t max)
{
	struct hy_cache_entry *all;
	size_t n = 0;

	for (uint32_t i = 0; i < CAP(f); i++)
		n += slot_in(idx, f, i, first, end);
	if (n == 0)
		return 0;
	/* All of them fit: sort in place; else sort a copy and take the first. */
	all = n <= max ? out : malloc(n * sizeof(*all));
	if (!all)
		return -ENOMEM;
	n = 0;
	for (uint32_t i = 0; i < CAP(f); i++)
		if (slot_in(idx, f, i, first, end))
			all[n++] = entry_of(idx, line_at(f, i));
	if (n > 1)
		qsort(all, n, sizeof(*all), cmp_entry);
	if (all != out) {
		if (max)
			memcpy(out, all, max * sizeof(*out));
		free(all);
	}
	return (int64_t)n;
}

int64_t hy_cache_index_lookup_range(struct hy_cache_index *idx, uint64_t file_id,
				    uint64_t first_block, uint64_t nblocks,
				    struct hy_cache_entry *out, size_t max)
{
	uint64_t end = first_block + nblocks;
	struct idx_file *f;
	int64_t n = 0;
	int rc;

	if (nblocks == 0 || first_block > UINT64_MAX - nblocks)
		return -EINVAL;
	if (end > (uint64_t)UINT32_MAX + 1)
		end = (uint64_t)UINT32_MAX + 1; /* no block from 2^32 on is indexed */
	if (first_block >= end)
		return 0;
	f = file_get(idx, file_id, false, &rc);
	if (!f)
		return 0;
	pthread_rwlock_rdlock(FLOCK(idx, f));
	if (probe_each(end - first_block, CAP(f))) {
		for (uint64_t b = first_block; b < end; b++) {
			uint32_t i = tab_find(idx, f, b);

			if (i == EMPTY)
				continue;
			if ((size_t)n < max)
				out[n] = entry_of(idx, line_at(f, i));
			n++;
		}
	} else {
		n = range_scan(idx, f, first_block, end, out, max);
	}
	pthread_rwlock_unlock(FLOCK(idx, f));
	file_put(idx, f);
	return n;
}

/* ---- changes ---------------------------------------------------------- */

int hy_cache_index_insert(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
			  uint32_t line, uint8_t valid, uint8_t dirty)
{
	struct idx_file *f;
	int rc;

	if (line >= idx->capacity || (dirty & ~valid))
		return -EINVAL;
	if (block > UINT32_MAX)
		return -EFBIG;
	f = file_get(idx, file_id, true, &rc);
	if (!f)
		return rc;
	pthread_rwlock_wrlock(FLOCK(idx, f));
	if (tab_find(idx, f, block) != EMPTY) {
		rc = -EEXIST;
		goto out;
	}
	if (idx->rec[line].fh != NO_FILE) {
		rc = -EBUSY; /* another file's (or block's) line: the caller's bug */
		goto out;
	}
	if (!fits((uint64_t)f->n + 1, CAP(f))) {
		rc = tab_resize(idx, f, grown(CAP(f)));
		if (rc)
			goto out;
	}
	idx->rec[line].block = (uint32_t)block;
	idx->rec[line].valid = valid;
	idx->rec[line].dirty = dirty;
	idx->rec[line].fh = f->fh;
	tab_put(idx, SLOTS(f), CAP(f), line);
	if (f->n++ == 0)
		__atomic_add_fetch(&idx->files, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&idx->entries, 1, __ATOMIC_RELAXED);
out:
	pthread_rwlock_unlock(FLOCK(idx, f));
	file_put(idx, f); /* frees a file created here when the insert failed */
	return rc;
}

int hy_cache_index_update_masks(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
				uint8_t set_valid, uint8_t set_dirty, uint8_t clear_dirty,
				struct hy_cache_entry *out)
{
	struct idx_file *f;
	uint32_t i;
	int rc;

	if (block > UINT32_MAX)
		return -ENOENT;
	f = file_get(idx, file_id, false, &rc);
	if (!f)
		return -ENOENT;
	pthread_rwlock_wrlock(FLOCK(idx, f));
	i = tab_find(idx, f, block);
	if (i == EMPTY) {
		rc = -ENOENT;
	} else {
		uint32_t line = line_at(f, i);
		uint8_t valid = idx->rec[line].valid | set_valid;
		uint8_t dirty = (uint8_t)((idx->rec[line].dirty & ~clear_dirty) | set_dirty);

		if (dirty & ~valid) {
			rc = -EINVAL;
		} else {
			idx->rec[line].valid = valid;
			idx->rec[line].dirty = dirty;
			if (out)
				*out = entry_of(idx, line);
		}
	}
	pthread_rwlock_unlock(FLOCK(idx, f));
	file_put(idx, f);
	return rc;
}

int hy_cache_index_remove(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
			  struct hy_cache_entry *out)
{
	struct idx_file *f;
	uint32_t i;
	int rc;

	if (block > UINT32_MAX)
		return -ENOENT;
	f = file_get(idx, file_id, false, &rc);
	if (!f)
		return -ENOENT;
	pthread_rwlock_wrlock(FLOCK(idx, f));
	i = tab_find(idx, f, block);
	if (i == EMPTY) {
		rc = -ENOENT;
	} else {
		uint32_t line = line_at(f, i);

		if (out)
			*out = entry_of(idx, line);
		tab_delete(idx, f, i);
		line_clear(idx, line);
		__atomic_sub_fetch(&idx->entries, 1, __ATOMIC_RELAXED);
		tab_shrink(idx, f);
	}
	pthread_rwlock_unlock(FLOCK(idx, f));
	file_put(idx, f);
	return rc;
}

int64_t hy_cache_index_remove_file_range(
	struct hy_cache_index *idx, uint64_t file_id, uint64_t first_block, uint64_t nblocks,
	void (*fn)(uint64_t file_id, const struct hy_cache_entry *e, void *arg), void *arg)
{
	uint64_t end = first_block + nblocks, b;
	struct hy_cache_entry *gone = NULL;
	uint32_t small[INLINE_SLOTS], *ns = NULL, ncap = 0;
	size_t n = 0, k;
	struct idx_file *f;
	bool scan;
	int rc;

	if (nblocks == 0 || first_block > UINT64_MAX - nblocks)
		return -EINVAL;
	if (end > (uint64_t)UINT32_MAX + 1)
		end = (uint64_t)UINT32_MAX + 1;
	if (first_block >= end)
		return 0;
	f = file_get(idx, file_id, false, &rc);
	if (!f)
		return 0;
	pthread_rwlock_wrlock(FLOCK(idx, f));
	/* Everything that can fail first, so that a failure changes nothing:
	 * room for the removed entries and, for a scan, the new table. */
	scan = !probe_each(end - first_block, CAP(f));
	if (!scan) {
		for (b = first_block; b < end; b++)
			n += tab_find(idx, f, b) != EMPTY;
	} else {
		for (uint32_t i = 0; i < CAP(f); i++)
			n += slot_in(idx, f, i, first_block, end);
	}
	if (n && fn) {
		gone = malloc(n * sizeof(*gone));
		if (!gone)
			goto nomem;
	}
	if (scan && n && n < f->n) {
		/* Deleting while scanning would shift entries back past the
		 * scan: the survivors go into a new table instead. */
		ncap = shrunk((uint32_t)(f->n - n), CAP(f));
		ns = ncap > INLINE_SLOTS ? slots_new(ncap) : small;
		if (!ns)
			goto nomem;
		if (ns == small)
			memset(small, 0xff, sizeof(small));
	}
	n = 0;
	if (!scan) {
		for (b = first_block; b < end; b++) {
			uint32_t i = tab_find(idx, f, b), line;

			if (i == EMPTY)
				continue;
			line = line_at(f, i);
			if (gone)
				gone[n] = entry_of(idx, line);
			n++;
			tab_delete(idx, f, i);
			line_clear(idx, line);
		}
	} else {
		for (uint32_t i = 0; i < CAP(f); i++) {
			uint32_t line = line_at(f, i);

			if (SLOTS(f)[i] == EMPTY)
				continue;
			if (slot_in(idx, f, i, first_block, end)) {
				if (gone)
					gone[n] = entry_of(idx, line);
				n++;
				line_clear(idx, line);
			} else if (ns) {
				tab_put(idx, ns, ncap, line);
			}
		}
		if (ns)
			tab_set(idx, f, ns, ncap);
		f->n -= (uint32_t)n; /* 0 when there was no new table: tab_shrink frees */
	}
	if (n) {
		__atomic_sub_fetch(&idx->entries, n, __ATOMIC_RELAXED);
		tab_shrink(idx, f);
	}
	pthread_rwlock_unlock(FLOCK(idx, f));
	file_put(idx, f);
	if (gone) {
		if (scan && n > 1)
			qsort(gone, n, sizeof(*gone), cmp_entry);
		for (k = 0; k < n; k++)
			fn(file_id, &gone[k], arg);
		free(gone);
	}
	return (int64_t)n;
nomem:
	pthread_rwlock_unlock(FLOCK(idx, f));
	file_put(idx, f);
	free(gone);
	return -ENOMEM;
}

/* ---- stats and check -------------------------------------------------- */

void hy_cache_index_get_stats(struct hy_cache_index *idx, struct hy_cache_index_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->capacity = idx->capacity;
	out->files = __atomic_load_n(&idx->files, __ATOMIC_RELAXED);
	out->entries = __atomic_load_n(&idx->entries, __ATOMIC_RELAXED);
	out->bytes =
		__atomic_load_n(&idx->bytes, __ATOMIC_RELAXED) + hy_file_table_bytes(idx->table);
	out->line_bytes = (size_t)idx->capacity * HY_CACHE_INDEX_LINE_BYTES;
	out->bytes_per_entry = out->entries ? (double)out->bytes / (double)out->entries : 0.0;
}

/* One file's table (its lock held); marks its lines in @seen. */
static int check_file(const struct hy_cache_index *idx, const struct idx_file *f, uint8_t *seen,
		      uint64_t *entries, uint64_t *files, char *why, size_t why_size)
{
	uint32_t n = 0;

	if (on_heap(f) && (f->tab.heap.cap <= INLINE_SLOTS || !f->n))
		return hy_log_why(-EUCLEAN, why, why_size,
				  "file %" PRIu64 ": a table of %" PRIu32 " slots for %" PRIu32
				  " entries outside the file",
				  f->entry.file_id, f->tab.heap.cap, f->n);
	if (!fits(f->n, CAP(f)))
		return hy_log_why(-EUCLEAN, why, why_size,
				  "file %" PRIu64 ": %" PRIu32 " entries in %" PRIu32 " slots",
				  f->entry.file_id, f->n, CAP(f));
	for (uint32_t i = 0; i < CAP(f); i++) {
		uint32_t line = line_at(f, i), block;

		if (SLOTS(f)[i] == EMPTY)
			continue;
		n++;
		if (line >= idx->capacity)
			return hy_log_why(-EUCLEAN, why, why_size,
					  "file %" PRIu64 ": slot %" PRIu32 " holds line %" PRIu32
					  ", past the capacity %" PRIu32,
					  f->entry.file_id, i, line, idx->capacity);
		block = idx->rec[line].block;
		if (idx->rec[line].fh != f->fh)
			return hy_log_why(-EUCLEAN, why, why_size,
					  "file %" PRIu64 " block %" PRIu32 ": line %" PRIu32
					  " says handle %" PRIu32 ", not %" PRIu32,
					  f->entry.file_id, block, line, idx->rec[line].fh, f->fh);
		for (uint32_t j = home_in(CAP(f), hy_keymap_mix(block)); j != i;
		     j = next_slot(CAP(f), j))
			if (SLOTS(f)[j] == EMPTY)
				return hy_log_why(-EUCLEAN, why, why_size,
						  "file %" PRIu64 " block %" PRIu32
						  ": slot %" PRIu32
						  " is not reachable from its home",
						  f->entry.file_id, block, i);
		if (tab_find(idx, f, block) != i)
			return hy_log_why(-EUCLEAN, why, why_size,
					  "file %" PRIu64 ": block %" PRIu32 " twice",
					  f->entry.file_id, block);
		if (idx->rec[line].dirty & ~idx->rec[line].valid)
			return hy_log_why(-EUCLEAN, why, why_size,
					  "file %" PRIu64 " block %" PRIu32
					  ": dirty 0x%02x is not within valid 0x%02x",
					  f->entry.file_id, block, idx->rec[line].dirty,
					  idx->rec[line].valid);
		if (seen[line / 8] & (1u << (line % 8)))
			return hy_log_why(-EUCLEAN, why, why_size,
					  "line %" PRIu32 " is used twice (file %" PRIu64
					  " block %" PRIu32 ")",
					  line, f->entry.file_id, block);
		seen[line / 8] |= (uint8_t)(1u << (line % 8));
	}
	if (n != f->n)
		return hy_log_why(-EUCLEAN, why, why_size,
				  "file %" PRIu64 ": counts %" PRIu32 " entries, holds %" PRIu32,
				  f->entry.file_id, f->n, n);
	*entries += n;
	*files += n > 0;
	return 0;
}

int hy_cache_index_check(struct hy_cache_index *idx, char *why, size_t why_size)
{
	uint64_t entries = 0, files_held = 0, want_entries, want_files, marked = 0;
	struct hy_file_table_entry **files;
	size_t nfiles, i;
	uint8_t *seen;
	int rc;

	seen = calloc(idx->capacity / 8 + 1, 1);
	if (!seen)
		return -ENOMEM;
	/* Every file, visited under its lock with a reference held (no stripe
	 * mutex is held while a file's lock is taken). */
	rc = hy_file_table_snapshot(idx->table, &files, &nfiles);
	for (i = 0; i < nfiles && rc == 0; i++) {
		struct idx_file *f = FILE_OF(files[i]);

		pthread_rwlock_rdlock(FLOCK(idx, f));
		rc = check_file(idx, f, seen, &entries, &files_held, why, why_size);
		pthread_rwlock_unlock(FLOCK(idx, f));
	}
	hy_file_table_release_snapshot(idx->table, files, nfiles);
	/* a line that says it has a file is in that file's table (a moment's
	 * view: exact when no change runs at the same time) */
	for (uint32_t l = 0; l < idx->capacity && rc == 0; l++) {
		if (idx->rec[l].fh == NO_FILE)
			continue;
		marked++;
		if (!(seen[l / 8] & (1u << (l % 8))))
			rc = hy_log_why(-EUCLEAN, why, why_size,
					"line %" PRIu32 " says handle %" PRIu32
					" but is in no file's table",
					l, idx->rec[l].fh);
	}
	free(seen);
	if (rc)
		return rc;
	want_entries = __atomic_load_n(&idx->entries, __ATOMIC_RELAXED);
	want_files = __atomic_load_n(&idx->files, __ATOMIC_RELAXED);
	if (entries != want_entries || files_held != want_files || marked != entries)
		return hy_log_why(-EUCLEAN, why, why_size,
				  "counters say %" PRIu64 " entries in %" PRIu64
				  " files, the tables hold %" PRIu64 " in %" PRIu64 ", %" PRIu64
				  " lines are marked",
				  want_entries, want_files, entries, files_held, marked);
	return 0;
}
