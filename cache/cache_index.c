/* cache_index.c - the SSD cache's index; see include/hybridfs/cache_index.h.
 *
 * Layout: files are found through a file table (file_table.h) striped
 * over HY_CACHE_INDEX_STRIPES mutexes, as in map.c: the last reference to
 * a file left with no entries frees it. A file's entries are a power-of-two array of
 * 16-byte slots, open addressing with linear probing from hy_keymap_mix(block);
 * a removal shifts the following entries of the cluster back (no
 * tombstones), so a lookup stops at the first empty slot.
 *
 * Memory accounting: idx->bytes counts the index's struct, files and slot
 * arrays, changed atomically where the allocation is made or freed; the
 * file table counts its own (struct and stripe buckets); the stats add
 * both.
 *
 * Lock order: stripe mutex (never held while taking another lock), then a
 * file's rwlock. A file's rwlock is always dropped before file_put() takes
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

#define MIN_SLOTS 8

struct slot {
	uint64_t block;
	uint32_t line;
	uint8_t valid, dirty;
	uint16_t used; /* 0: an empty slot */
};

struct idx_file {
	struct hy_file_table_entry entry; /* file_id, refs, chain: the table's */
	pthread_rwlock_t lock;
	struct slot *slots; /* under lock; NULL while the file has no entries */
	size_t n, cap;	    /* under lock; cap is 0 or a power of two */
};

#define FILE_OF(e) ((struct idx_file *)((char *)(e)-offsetof(struct idx_file, entry)))

struct hy_cache_index {
	uint32_t capacity;
	uint64_t files;	  /* atomic: files with entries */
	uint64_t entries; /* atomic */
	size_t bytes;	  /* atomic */
	struct hy_file_table *table;
};

_Static_assert(sizeof(struct slot) == 16, "a slot is 16 bytes");

static void bytes_add(struct hy_cache_index *idx, size_t n)
{
	__atomic_add_fetch(&idx->bytes, n, __ATOMIC_RELAXED);
}

static void bytes_sub(struct hy_cache_index *idx, size_t n)
{
	__atomic_sub_fetch(&idx->bytes, n, __ATOMIC_RELAXED);
}

static struct hy_cache_entry entry_of(const struct slot *s)
{
	struct hy_cache_entry e = {s->block, s->line, s->valid, s->dirty};

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

static size_t home_of(const struct idx_file *f, uint64_t block)
{
	return (size_t)hy_keymap_mix(block) & (f->cap - 1);
}

/* The slot holding @block, or NULL. */
static struct slot *tab_find(const struct idx_file *f, uint64_t block)
{
	size_t i;

	if (!f->cap)
		return NULL;
	for (i = home_of(f, block); f->slots[i].used; i = (i + 1) & (f->cap - 1))
		if (f->slots[i].block == block)
			return &f->slots[i];
	return NULL;
}

/* Puts @s into the table (which has room and does not hold its block). */
static void tab_put(struct slot *slots, size_t cap, const struct slot *s)
{
	size_t i = (size_t)hy_keymap_mix(s->block) & (cap - 1);

	while (slots[i].used)
		i = (i + 1) & (cap - 1);
	slots[i] = *s;
}

/* Moves the file's entries into a table of @ncap slots (a power of two,
 * more than f->n); on failure the table stays as it was. */
static int tab_resize(struct hy_cache_index *idx, struct idx_file *f, size_t ncap)
{
	struct slot *ns;
	size_t i;

	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (i = 0; i < f->cap; i++)
		if (f->slots[i].used)
			tab_put(ns, ncap, &f->slots[i]);
	free(f->slots);
	bytes_sub(idx, f->cap * sizeof(*ns));
	bytes_add(idx, ncap * sizeof(*ns));
	f->slots = ns;
	f->cap = ncap;
	return 0;
}

/* Whether a table of @cap slots may hold @n entries: load at most 4/5. */
static bool fits(size_t n, size_t cap)
{
	return n * 5 <= cap * 4;
}

/* Removes the entry in slot @i, shifting the rest of its cluster back. */
static void tab_delete(struct idx_file *f, size_t i)
{
	size_t mask = f->cap - 1, j = i;

	for (;;) {
		size_t h;

		j = (j + 1) & mask;
		if (!f->slots[j].used)
			break;
		h = home_of(f, f->slots[j].block);
		/* j's entry may move to i when i lies cyclically in [h, j) */
		if (((j - h) & mask) >= ((j - i) & mask)) {
			f->slots[i] = f->slots[j];
			i = j;
		}
	}
	memset(&f->slots[i], 0, sizeof(f->slots[i]));
	f->n--;
}

/* After removals: a file with no entries frees its table; one below a load
 * of 1/8 halves it (a failure keeps the larger table). */
static void tab_shrink(struct hy_cache_index *idx, struct idx_file *f)
{
	size_t ncap = f->cap;

	if (f->n == 0) {
		free(f->slots);
		bytes_sub(idx, f->cap * sizeof(*f->slots));
		f->slots = NULL;
		f->cap = 0;
		__atomic_sub_fetch(&idx->files, 1, __ATOMIC_RELAXED);
		return;
	}
	while (ncap > MIN_SLOTS && f->n * 8 < ncap)
		ncap /= 2;
	if (ncap != f->cap)
		tab_resize(idx, f, ncap);
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

static struct hy_file_table_entry *file_alloc(void *arg, uint64_t file_id)
{
	struct idx_file *f = calloc(1, sizeof(*f));

	(void)file_id;
	if (f && rwlock_init(&f->lock) != 0) {
		free(f);
		f = NULL;
	}
	if (!f)
		return NULL;
	bytes_add(arg, sizeof(*f));
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
	struct idx_file *f = FILE_OF(e);

	bytes_sub(arg, sizeof(*f) + f->cap * sizeof(*f->slots));
	pthread_rwlock_destroy(&f->lock);
	free(f->slots);
	free(f);
}

static const struct hy_file_table_ops file_ops = {file_alloc, file_empty, file_free};

int hy_cache_index_new(uint32_t capacity_lines, struct hy_cache_index **out)
{
	struct hy_cache_index *idx;
	int rc;

	*out = NULL;
	if (capacity_lines == 0 || capacity_lines > HY_CACHE_INDEX_MAX_LINES)
		return -EINVAL;
	idx = calloc(1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	idx->capacity = capacity_lines;
	idx->bytes = sizeof(*idx);
	rc = hy_file_table_new(HY_CACHE_INDEX_STRIPES, &file_ops, idx, &idx->table);
	if (rc) {
		free(idx);
		return rc;
	}
	*out = idx;
	return 0;
}

void hy_cache_index_free(struct hy_cache_index *idx)
{
	if (!idx)
		return;
	hy_file_table_free(idx->table);
	free(idx);
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
	const struct slot *sl;
	struct idx_file *f;
	int rc;

	f = file_get(idx, file_id, false, &rc);
	if (!f)
		return -ENOENT;
	pthread_rwlock_rdlock(&f->lock);
	sl = tab_find(f, block);
	if (sl)
		*out = entry_of(sl);
	pthread_rwlock_unlock(&f->lock);
	file_put(idx, f);
	return sl ? 0 : -ENOENT;
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

/* lookup_range's scan of the whole table (f->lock held). */
static int64_t range_scan(const struct idx_file *f, uint64_t first, uint64_t end,
			  struct hy_cache_entry *out, size_t max)
{
	struct hy_cache_entry *all;
	size_t i, n = 0;

	for (i = 0; i < f->cap; i++)
		if (f->slots[i].used && f->slots[i].block >= first && f->slots[i].block < end)
			n++;
	if (n == 0)
		return 0;
	/* All of them fit: sort in place; else sort a copy and take the first. */
	all = n <= max ? out : malloc(n * sizeof(*all));
	if (!all)
		return -ENOMEM;
	n = 0;
	for (i = 0; i < f->cap; i++)
		if (f->slots[i].used && f->slots[i].block >= first && f->slots[i].block < end)
			all[n++] = entry_of(&f->slots[i]);
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
	f = file_get(idx, file_id, false, &rc);
	if (!f)
		return 0;
	pthread_rwlock_rdlock(&f->lock);
	if (probe_each(nblocks, f->cap)) {
		for (uint64_t b = first_block; b < end; b++) {
			const struct slot *sl = tab_find(f, b);

			if (!sl)
				continue;
			if ((size_t)n < max)
				out[n] = entry_of(sl);
			n++;
		}
	} else {
		n = range_scan(f, first_block, end, out, max);
	}
	pthread_rwlock_unlock(&f->lock);
	file_put(idx, f);
	return n;
}

/* ---- changes ---------------------------------------------------------- */

int hy_cache_index_insert(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
			  uint32_t line, uint8_t valid, uint8_t dirty)
{
	struct slot s = {block, line, valid, dirty, 1};
	struct idx_file *f;
	int rc;

	if (line >= idx->capacity || (dirty & ~valid))
		return -EINVAL;
	f = file_get(idx, file_id, true, &rc);
	if (!f)
		return rc;
	pthread_rwlock_wrlock(&f->lock);
	if (tab_find(f, block)) {
		rc = -EEXIST;
		goto out;
	}
	if (!f->cap || !fits(f->n + 1, f->cap)) {
		rc = tab_resize(idx, f, f->cap ? f->cap * 2 : MIN_SLOTS);
		if (rc)
			goto out;
	}
	tab_put(f->slots, f->cap, &s);
	if (f->n++ == 0)
		__atomic_add_fetch(&idx->files, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&idx->entries, 1, __ATOMIC_RELAXED);
out:
	pthread_rwlock_unlock(&f->lock);
	file_put(idx, f); /* frees a file created here when the insert failed */
	return rc;
}

int hy_cache_index_update_masks(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
				uint8_t set_valid, uint8_t set_dirty, uint8_t clear_dirty,
				struct hy_cache_entry *out)
{
	struct slot *sl;
	struct idx_file *f;
	int rc;

	f = file_get(idx, file_id, false, &rc);
	if (!f)
		return -ENOENT;
	pthread_rwlock_wrlock(&f->lock);
	sl = tab_find(f, block);
	if (!sl) {
		rc = -ENOENT;
	} else {
		uint8_t valid = sl->valid | set_valid;
		uint8_t dirty = (uint8_t)((sl->dirty & ~clear_dirty) | set_dirty);

		if (dirty & ~valid) {
			rc = -EINVAL;
		} else {
			sl->valid = valid;
			sl->dirty = dirty;
			if (out)
				*out = entry_of(sl);
		}
	}
	pthread_rwlock_unlock(&f->lock);
	file_put(idx, f);
	return rc;
}

int hy_cache_index_remove(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
			  struct hy_cache_entry *out)
{
	struct slot *sl;
	struct idx_file *f;
	int rc;

	f = file_get(idx, file_id, false, &rc);
	if (!f)
		return -ENOENT;
	pthread_rwlock_wrlock(&f->lock);
	sl = tab_find(f, block);
	if (!sl) {
		rc = -ENOENT;
	} else {
		if (out)
			*out = entry_of(sl);
		tab_delete(f, (size_t)(sl - f->slots));
		__atomic_sub_fetch(&idx->entries, 1, __ATOMIC_RELAXED);
		tab_shrink(idx, f);
	}
	pthread_rwlock_unlock(&f->lock);
	file_put(idx, f);
	return rc;
}

int64_t hy_cache_index_remove_file_range(
	struct hy_cache_index *idx, uint64_t file_id, uint64_t first_block, uint64_t nblocks,
	void (*fn)(uint64_t file_id, const struct hy_cache_entry *e, void *arg), void *arg)
{
	uint64_t end = first_block + nblocks, b;
	struct hy_cache_entry *gone = NULL;
	struct slot *ns = NULL;
	size_t n = 0, i, ncap = 0;
	struct idx_file *f;
	bool scan;
	int rc;

	if (nblocks == 0 || first_block > UINT64_MAX - nblocks)
		return -EINVAL;
	f = file_get(idx, file_id, false, &rc);
	if (!f)
		return 0;
	pthread_rwlock_wrlock(&f->lock);
	/* Everything that can fail first, so that a failure changes nothing:
	 * room for the removed entries and, for a scan, the new table. */
	scan = !probe_each(nblocks, f->cap);
	if (!scan) {
		for (b = first_block; b < end; b++)
			n += tab_find(f, b) != NULL;
	} else {
		for (i = 0; i < f->cap; i++)
			n += f->slots[i].used && f->slots[i].block >= first_block &&
			     f->slots[i].block < end;
	}
	if (n && fn) {
		gone = malloc(n * sizeof(*gone));
		if (!gone)
			goto nomem;
	}
	if (scan && n && n < f->n) {
		/* Deleting while scanning would shift entries back past the
		 * scan: the survivors go into a new table instead. */
		ncap = f->cap;
		while (ncap > MIN_SLOTS && (f->n - n) * 8 < ncap)
			ncap /= 2;
		ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			goto nomem;
	}
	n = 0;
	if (!scan) {
		for (b = first_block; b < end; b++) {
			struct slot *sl = tab_find(f, b);

			if (!sl)
				continue;
			if (gone)
				gone[n] = entry_of(sl);
			n++;
			tab_delete(f, (size_t)(sl - f->slots));
		}
	} else {
		for (i = 0; i < f->cap; i++) {
			const struct slot *sl = &f->slots[i];

			if (!sl->used)
				continue;
			if (sl->block >= first_block && sl->block < end) {
				if (gone)
					gone[n] = entry_of(sl);
				n++;
			} else if (ns) {
				tab_put(ns, ncap, sl);
			}
		}
		if (ns) {
			free(f->slots);
			bytes_sub(idx, f->cap * sizeof(*ns));
			bytes_add(idx, ncap * sizeof(*ns));
			f->slots = ns;
			f->cap = ncap;
		}
		f->n -= n; /* 0 when there was no new table: tab_shrink frees */
	}
	if (n) {
		__atomic_sub_fetch(&idx->entries, n, __ATOMIC_RELAXED);
		tab_shrink(idx, f);
	}
	pthread_rwlock_unlock(&f->lock);
	file_put(idx, f);
	if (gone) {
		if (scan && n > 1)
			qsort(gone, n, sizeof(*gone), cmp_entry);
		for (i = 0; i < n; i++)
			fn(file_id, &gone[i], arg);
		free(gone);
	}
	return (int64_t)n;
nomem:
	pthread_rwlock_unlock(&f->lock);
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
	out->bytes_per_entry = out->entries ? (double)out->bytes / (double)out->entries : 0.0;
}

/* One file's table (its lock held); marks its lines in @seen. */
static int check_file(const struct hy_cache_index *idx, const struct idx_file *f, uint8_t *seen,
		      uint64_t *entries, uint64_t *files, char *why, size_t why_size)
{
	size_t i, n = 0, mask = f->cap - 1;

	if (f->cap == 0)
		return f->n || f->slots ? hy_log_why(-EUCLEAN, why, why_size,
						     "file %" PRIu64 ": no table, %zu entries",
						     f->entry.file_id, f->n)
					: 0;
	if (f->cap & mask || !fits(f->n, f->cap))
		return hy_log_why(-EUCLEAN, why, why_size,
				  "file %" PRIu64 ": %zu entries in %zu slots", f->entry.file_id,
				  f->n, f->cap);
	for (i = 0; i < f->cap; i++) {
		const struct slot *s = &f->slots[i];
		size_t j;

		if (!s->used)
			continue;
		n++;
		for (j = home_of(f, s->block); j != i; j = (j + 1) & mask)
			if (!f->slots[j].used)
				return hy_log_why(-EUCLEAN, why, why_size,
						  "file %" PRIu64 " block %" PRIu64
						  ": slot %zu is not reachable from its home",
						  f->entry.file_id, s->block, i);
		if (tab_find(f, s->block) != s)
			return hy_log_why(-EUCLEAN, why, why_size,
					  "file %" PRIu64 ": block %" PRIu64 " twice",
					  f->entry.file_id, s->block);
		if (s->dirty & ~s->valid)
			return hy_log_why(-EUCLEAN, why, why_size,
					  "file %" PRIu64 " block %" PRIu64
					  ": dirty 0x%02x is not within valid 0x%02x",
					  f->entry.file_id, s->block, s->dirty, s->valid);
		if (s->line >= idx->capacity)
			return hy_log_why(-EUCLEAN, why, why_size,
					  "file %" PRIu64 " block %" PRIu64 ": line %" PRIu32
					  " is past the capacity %" PRIu32,
					  f->entry.file_id, s->block, s->line, idx->capacity);
		if (seen[s->line / 8] & (1u << (s->line % 8)))
			return hy_log_why(-EUCLEAN, why, why_size,
					  "line %" PRIu32 " is used twice (file %" PRIu64
					  " block %" PRIu64 ")",
					  s->line, f->entry.file_id, s->block);
		seen[s->line / 8] |= (uint8_t)(1u << (s->line % 8));
	}
	if (n != f->n)
		return hy_log_why(-EUCLEAN, why, why_size,
				  "file %" PRIu64 ": counts %zu entries, holds %zu",
				  f->entry.file_id, f->n, n);
	*entries += n;
	*files += n > 0;
	return 0;
}

int hy_cache_index_check(struct hy_cache_index *idx, char *why, size_t why_size)
{
	uint64_t entries = 0, files_held = 0, want_entries, want_files;
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

		pthread_rwlock_rdlock(&f->lock);
		rc = check_file(idx, f, seen, &entries, &files_held, why, why_size);
		pthread_rwlock_unlock(&f->lock);
	}
	hy_file_table_release_snapshot(idx->table, files, nfiles);
	free(seen);
	if (rc)
		return rc;
	want_entries = __atomic_load_n(&idx->entries, __ATOMIC_RELAXED);
	want_files = __atomic_load_n(&idx->files, __ATOMIC_RELAXED);
	if (entries != want_entries || files_held != want_files)
		return hy_log_why(-EUCLEAN, why, why_size,
				  "counters say %" PRIu64 " entries in %" PRIu64
				  " files, the tables hold %" PRIu64 " in %" PRIu64,
				  want_entries, want_files, entries, files_held);
	return 0;
}
