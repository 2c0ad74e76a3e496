/* map.c - see include/hybridfs/map.h.
 *
 * Layout: files are found through a file table (file_table.h) striped
 * over HY_MAP_STRIPES mutexes. A file holds its extents in a sorted array
 * (by block; extents never overlap) under its own rwlock, and the table's
 * reference count, so that a file left with no extents is freed only when
 * nobody holds it. Inside the array an extent is 24 bytes (block,
 * bopt_block, nblocks, dirty); the file id is the file's.
 *
 * The BOPT blocks in use are a second sorted array of ranges (start,
 * length, file) under its own mutex, touched only by relocate and release
 * (never by lookups), to refuse a relocation onto BOPT blocks already in
 * use. Ranges of one file that are contiguous in the BOPT are merged, so
 * the index is no larger than the extents.
 *
 * Lock order: stripe mutex (never held while taking another lock), then a
 * file's rwlock, then the BOPT index mutex. Every change reserves the
 * memory it needs before it changes anything, so a failure leaves the map
 * as it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "hybridfs/file_table.h"
#include "hybridfs/map.h"
#include "hybridfs/state.h"

struct ext {
	uint64_t block;
	uint64_t bopt_block;
	uint32_t nblocks;
	bool dirty;
};

struct map_file {
	struct hy_file_table_entry entry; /* file_id, refs, chain: the table's */
	pthread_rwlock_t lock;
	int64_t stamp;	 /* the home file's ctime when copied; under lock */
	struct ext *ext; /* sorted by block, under lock */
	size_t n, cap;
};

#define FILE_OF(e) ((struct map_file *)((char *)(e)-offsetof(struct map_file, entry)))

struct bopt_range {
	uint64_t start;
	uint64_t nblocks;
	uint64_t file_id;
};

struct hy_map {
	struct hy_file_table *files;
	pthread_mutex_t bopt_lock;
	struct bopt_range *used; /* sorted by start, never overlapping */
	size_t nused, capused;
};

static inline uint64_t ext_end(const struct ext *e)
{
	return e->block + e->nblocks;
}

/* Grows *@arr so that it holds at least @need items of @size bytes. */
static int reserve(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 4;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / size)
			return -ENOMEM;
		ncap *= 2;
	}
	p = realloc(*arr, ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static int file_reserve(struct map_file *f, size_t need)
{
	return reserve((void **)&f->ext, &f->cap, need, sizeof(*f->ext));
}

/* ---- files ---------------------------------------------------------- */

static struct hy_file_table_entry *file_alloc(void *arg, uint64_t file_id)
{
	struct map_file *f = calloc(1, sizeof(*f));

	(void)arg;
	(void)file_id;
	if (f && pthread_rwlock_init(&f->lock, NULL) != 0) {
		free(f);
		f = NULL;
	}
	return f ? &f->entry : NULL;
}

/* A file with no extents is freed by its last reference (file_table.c
 * says why f->n is read safely there). */
static bool file_empty(const struct hy_file_table_entry *e)
{
	return FILE_OF(e)->n == 0;
}

static void file_free(void *arg, struct hy_file_table_entry *e)
{
	struct map_file *f = FILE_OF(e);

	(void)arg;
	pthread_rwlock_destroy(&f->lock);
	free(f->ext);
	free(f);
}

static const struct hy_file_table_ops file_ops = {file_alloc, file_empty, file_free};

int hy_map_new(struct hy_map **out)
{
	struct hy_map *map;
	int rc;

	*out = NULL;
	map = calloc(1, sizeof(*map));
	if (!map)
		return -ENOMEM;
	rc = hy_file_table_new(HY_MAP_STRIPES, &file_ops, map, &map->files);
	if (rc) {
		free(map);
		return rc;
	}
	pthread_mutex_init(&map->bopt_lock, NULL);
	*out = map;
	return 0;
}

void hy_map_free(struct hy_map *map)
{
	if (!map)
		return;
	hy_file_table_free(map->files);
	free(map->used);
	pthread_mutex_destroy(&map->bopt_lock);
	free(map);
}

/* Finds @file_id (adding it when @create) and takes a reference. NULL when
 * absent, or when adding it failed (*@err = -ENOMEM). */
static struct map_file *file_get(struct hy_map *map, uint64_t file_id, bool create, int *err)
{
	struct hy_file_table_entry *e = hy_file_table_get(map->files, file_id, create, err);

	return e ? FILE_OF(e) : NULL;
}

/* Drops a reference; the last one frees a file with no extents. */
static void file_put(struct hy_map *map, struct map_file *f)
{
	hy_file_table_put(map->files, &f->entry);
}

/* ---- extents of one file (its lock held) ---------------------------- */

/* The first extent that ends after @block (f->n when none). */
static size_t find_first(const struct map_file *f, uint64_t block)
{
	size_t lo = 0, hi = f->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ext_end(&f->ext[mid]) <= block)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* @b may be appended to @a: contiguous in the file and the BOPT, alike. */
static bool mergeable(const struct ext *a, const struct ext *b)
{
	return ext_end(a) == b->block && a->bopt_block + a->nblocks == b->bopt_block &&
	       a->dirty == b->dirty && (uint64_t)a->nblocks + b->nblocks <= UINT32_MAX;
}

/* Inserts @e at @i; capacity must be there. */
static void ext_insert(struct map_file *f, size_t i, const struct ext *e)
{
	memmove(&f->ext[i + 1], &f->ext[i], (f->n - i) * sizeof(*f->ext));
	f->ext[i] = *e;
	f->n++;
}

/* Splits extent @i at @at (strictly inside it); capacity must be there. */
static void ext_split(struct map_file *f, size_t i, uint64_t at)
{
	struct ext right = f->ext[i];
	uint64_t left_len = at - f->ext[i].block;

	right.block = at;
	right.bopt_block += left_len;
	right.nblocks -= (uint32_t)left_len;
	f->ext[i].nblocks = (uint32_t)left_len;
	ext_insert(f, i + 1, &right);
}

/* Merges the mergeable neighbours among extents [@lo, @hi] (clamped). */
static void merge_range(struct map_file *f, size_t lo, size_t hi)
{
	size_t w, r;

	if (f->n == 0)
		return;
	if (hi >= f->n)
		hi = f->n - 1;
	if (lo >= hi)
		return;
	for (w = lo, r = lo + 1; r <= hi; r++) {
		if (mergeable(&f->ext[w], &f->ext[r]))
			f->ext[w].nblocks += f->ext[r].nblocks;
		else
			f->ext[++w] = f->ext[r];
	}
	if (w < hi) {
		memmove(&f->ext[w + 1], &f->ext[hi + 1], (f->n - hi - 1) * sizeof(*f->ext));
		f->n -= hi - w;
	}
}

/* ---- the BOPT index (bopt_lock held) -------------------------------- */

static size_t used_first(const struct hy_map *map, uint64_t start)
{
	size_t lo = 0, hi = map->nused;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (map->used[mid].start + map->used[mid].nblocks <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool used_overlaps(const struct hy_map *map, uint64_t start, uint64_t nblocks)
{
	size_t i = used_first(map, start);

	return i < map->nused && map->used[i].start < start + nblocks;
}

/* Adds a range known not to overlap; capacity for one more must be there. */
static void used_add(struct hy_map *map, uint64_t start, uint64_t nblocks, uint64_t file_id)
{
	size_t i = used_first(map, start);
	struct bopt_range *u = map->used;
	bool left =
		i > 0 && u[i - 1].file_id == file_id && u[i - 1].start + u[i - 1].nblocks == start;
	bool right = i < map->nused && u[i].file_id == file_id && u[i].start == start + nblocks;

	if (left && right) {
		u[i - 1].nblocks += nblocks + u[i].nblocks;
		memmove(&u[i], &u[i + 1], (map->nused - i - 1) * sizeof(*u));
		map->nused--;
	} else if (left) {
		u[i - 1].nblocks += nblocks;
	} else if (right) {
		u[i].start = start;
		u[i].nblocks += nblocks;
	} else {
		memmove(&u[i + 1], &u[i], (map->nused - i) * sizeof(*u));
		u[i] = (struct bopt_range){start, nblocks, file_id};
		map->nused++;
	}
}

/* Removes [start, start + nblocks); capacity for one more must be there
 * (a range cut in its middle becomes two). */
static void used_remove(struct hy_map *map, uint64_t start, uint64_t nblocks)
{
	uint64_t end = start + nblocks;
	size_t i = used_first(map, start);
	struct bopt_range *u = map->used;

	while (i < map->nused && u[i].start < end) {
		uint64_t s = u[i].start, e = s + u[i].nblocks;

		if (s < start && e > end) {
			u[i].nblocks = start - s;
			memmove(&u[i + 2], &u[i + 1], (map->nused - i - 1) * sizeof(*u));
			u[i + 1] = (struct bopt_range){end, e - end, u[i].file_id};
			map->nused++;
			return;
		}
		if (s < start) {
			u[i].nblocks = start - s;
			i++;
		} else if (e > end) {
			u[i].start = end;
			u[i].nblocks = e - end;
			return;
		} else {
			memmove(&u[i], &u[i + 1], (map->nused - i - 1) * sizeof(*u));
			map->nused--;
		}
	}
}

/* ---- operations ----------------------------------------------------- */

int hy_map_lookup(struct hy_map *map, uint64_t file_id, uint64_t block, uint32_t nblocks,
		  struct hy_map_piece *out, size_t max)
{
	uint64_t end = block + nblocks, pos = block;
	struct map_file *f;
	size_t count = 0, i;
	int err;

	if (nblocks == 0 || block > UINT64_MAX - nblocks)
		return -EINVAL;
	f = file_get(map, file_id, false, &err);
	if (!f) {
		if (max > 0)
			out[0] = (struct hy_map_piece){block, nblocks, false, HY_MAP_HOME};
		return 1;
	}
	pthread_rwlock_rdlock(&f->lock);
	i = find_first(f, block);
	while (pos < end) {
		struct hy_map_piece p;

		if (i < f->n && f->ext[i].block <= pos) {
			const struct ext *e = &f->ext[i++];
			uint64_t stop = ext_end(e) < end ? ext_end(e) : end;

			p.block = pos;
			p.nblocks = (uint32_t)(stop - pos);
			p.dirty = e->dirty;
			p.bopt_block = e->bopt_block + (pos - e->block);
		} else {
			uint64_t stop = i < f->n && f->ext[i].block < end ? f->ext[i].block : end;

			p.block = pos;
			p.nblocks = (uint32_t)(stop - pos);
			p.dirty = false;
			p.bopt_block = HY_MAP_HOME;
		}
		if (count < max)
			out[count] = p;
		count++;
		pos += p.nblocks;
	}
	pthread_rwlock_unlock(&f->lock);
	file_put(map, f);
	return count > INT_MAX ? -EOVERFLOW : (int)count;
}

int hy_map_relocate(struct hy_map *map, const struct hy_map_extent *e)
{
	struct ext x = {e->block, e->bopt_block, e->nblocks, e->dirty};
	struct map_file *f;
	bool left, right;
	size_t i;
	int rc;

	if (e->nblocks == 0 || e->block > UINT64_MAX - e->nblocks ||
	    e->bopt_block >= UINT64_MAX - e->nblocks)
		return -EINVAL;
	f = file_get(map, e->file_id, true, &rc);
	if (!f)
		return rc;
	pthread_rwlock_wrlock(&f->lock);
	i = find_first(f, x.block);
	if (i < f->n && f->ext[i].block < ext_end(&x)) {
		rc = -EEXIST;
		goto out;
	}
	rc = file_reserve(f, f->n + 1);
	if (rc)
		goto out;
	pthread_mutex_lock(&map->bopt_lock);
	if (used_overlaps(map, x.bopt_block, x.nblocks))
		rc = -EBUSY;
	else
		rc = reserve((void **)&map->used, &map->capused, map->nused + 1,
			     sizeof(*map->used));
	if (rc == 0)
		used_add(map, x.bopt_block, x.nblocks, e->file_id);
	pthread_mutex_unlock(&map->bopt_lock);
	if (rc)
		goto out;
	/* nothing can fail from here on: the stamp may change with it */
	if (e->stamp)
		f->stamp = e->stamp;
	/* Into the array, merged with its neighbours without a second move. */
	left = i > 0 && mergeable(&f->ext[i - 1], &x);
	right = i < f->n && mergeable(&x, &f->ext[i]);
	if (left && right &&
	    (uint64_t)f->ext[i - 1].nblocks + x.nblocks + f->ext[i].nblocks > UINT32_MAX)
		right = false;
	if (left) {
		f->ext[i - 1].nblocks += x.nblocks;
		if (right)
			merge_range(f, i - 1, i);
	} else if (right) {
		f->ext[i].block = x.block;
		f->ext[i].bopt_block = x.bopt_block;
		f->ext[i].nblocks += x.nblocks;
	} else {
		ext_insert(f, i, &x);
	}
out:
	pthread_rwlock_unlock(&f->lock);
	file_put(map, f);
	return rc;
}

int64_t hy_map_release(struct hy_map *map, uint64_t file_id, uint64_t block, uint64_t nblocks)
{
	uint64_t end = block + nblocks;
	struct ext keep[2];
	size_t i, j, k, nkeep = 0;
	struct map_file *f;
	int64_t removed = 0;
	int rc;

	if (nblocks == 0 || block > UINT64_MAX - nblocks)
		return -EINVAL;
	f = file_get(map, file_id, false, &rc);
	if (!f)
		return 0;
	pthread_rwlock_wrlock(&f->lock);
	i = find_first(f, block);
	for (j = i; j < f->n && f->ext[j].block < end; j++)
		;
	if (j == i)
		goto out;
	/* Up to two pieces survive: before the range and after it. */
	if (f->ext[i].block < block) {
		keep[nkeep] = f->ext[i];
		keep[nkeep++].nblocks = (uint32_t)(block - f->ext[i].block);
	}
	if (ext_end(&f->ext[j - 1]) > end) {
		const struct ext *last = &f->ext[j - 1];

		keep[nkeep].block = end;
		keep[nkeep].bopt_block = last->bopt_block + (end - last->block);
		keep[nkeep].nblocks = (uint32_t)(ext_end(last) - end);
		keep[nkeep++].dirty = last->dirty;
	}
	rc = file_reserve(f, f->n - (j - i) + nkeep);
	if (rc) {
		removed = rc;
		goto out;
	}
	pthread_mutex_lock(&map->bopt_lock);
	rc = reserve((void **)&map->used, &map->capused, map->nused + (j - i), sizeof(*map->used));
	if (rc == 0) {
		for (k = i; k < j; k++) {
			const struct ext *e = &f->ext[k];
			uint64_t s = e->block > block ? e->block : block;
			uint64_t t = ext_end(e) < end ? ext_end(e) : end;

			used_remove(map, e->bopt_block + (s - e->block), t - s);
			removed += (int64_t)(t - s);
		}
	}
	pthread_mutex_unlock(&map->bopt_lock);
	if (rc) {
		removed = rc;
		goto out;
	}
	memmove(&f->ext[i + nkeep], &f->ext[j], (f->n - j) * sizeof(*f->ext));
	memcpy(&f->ext[i], keep, nkeep * sizeof(*keep));
	f->n = f->n - (j - i) + nkeep;
out:
	pthread_rwlock_unlock(&f->lock);
	file_put(map, f);
	return removed;
}

int64_t hy_map_set_dirty(struct hy_map *map, uint64_t file_id, uint64_t block, uint32_t nblocks,
			 bool dirty)
{
	uint64_t end = block + nblocks;
	struct map_file *f;
	int64_t changed = 0;
	size_t i, j;
	int rc;

	if (nblocks == 0 || block > UINT64_MAX - nblocks)
		return -EINVAL;
	f = file_get(map, file_id, false, &rc);
	if (!f)
		return 0;
	pthread_rwlock_wrlock(&f->lock);
	i = find_first(f, block);
	if (i == f->n || f->ext[i].block >= end)
		goto out;
	rc = file_reserve(f, f->n + 2); /* a split at each end at most */
	if (rc) {
		changed = rc;
		goto out;
	}
	if (f->ext[i].block < block && f->ext[i].dirty != dirty)
		ext_split(f, i++, block);
	for (j = i; j < f->n && f->ext[j].block < end; j++) {
		if (f->ext[j].dirty == dirty)
			continue;
		if (ext_end(&f->ext[j]) > end)
			ext_split(f, j, end);
		f->ext[j].dirty = dirty;
		changed += f->ext[j].nblocks;
	}
	if (changed)
		merge_range(f, i > 0 ? i - 1 : 0, j);
out:
	pthread_rwlock_unlock(&f->lock);
	file_put(map, f);
	return changed;
}

int hy_map_walk(struct hy_map *map, int (*fn)(const struct hy_map_extent *e, void *arg), void *arg)
{
	struct hy_file_table_entry **files;
	size_t nfiles, i, k;
	int rc;

	rc = hy_file_table_snapshot(map->files, &files, &nfiles);
	if (rc)
		return rc;
	for (i = 0; i < nfiles && rc == 0; i++) {
		struct map_file *f = FILE_OF(files[i]);

		pthread_rwlock_rdlock(&f->lock);
		for (k = 0; k < f->n && rc == 0; k++) {
			struct hy_map_extent e = {f->entry.file_id,	f->ext[k].block,
						  f->ext[k].nblocks,	f->ext[k].dirty,
						  f->ext[k].bopt_block, f->stamp};

			rc = fn(&e, arg);
		}
		pthread_rwlock_unlock(&f->lock);
	}
	hy_file_table_release_snapshot(map->files, files, nfiles);
	return rc;
}

/* A file's extents come together in the walk: its id once. */
static int collect_dirty(const struct hy_map_extent *e, void *arg)
{
	struct {
		uint64_t *ids;
		size_t n, cap;
	} *l = arg;

	if (!e->dirty || (l->n && l->ids[l->n - 1] == e->file_id))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		uint64_t *grown = realloc(l->ids, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		l->ids = grown;
		l->cap = cap;
	}
	l->ids[l->n++] = e->file_id;
	return 0;
}

int hy_map_dirty_files(struct hy_map *map, uint64_t **ids, size_t *n)
{
	struct {
		uint64_t *ids;
		size_t n, cap;
	} dirty = {NULL, 0, 0};
	int rc = hy_map_walk(map, collect_dirty, &dirty);

	if (rc) {
		free(dirty.ids);
		dirty.ids = NULL;
		dirty.n = 0;
	}
	*ids = dirty.ids;
	*n = dirty.n;
	return rc;
}

int hy_map_file_extents(struct hy_map *map, uint64_t file_id, uint64_t from,
			struct hy_map_extent **out, size_t *count)
{
	struct map_file *f;
	size_t i, n = 0;
	int rc;

	*out = NULL;
	*count = 0;
	f = file_get(map, file_id, false, &rc);
	if (!f)
		return 0;
	pthread_rwlock_rdlock(&f->lock);
	i = find_first(f, from);
	if (i < f->n) {
		*out = malloc((f->n - i) * sizeof(**out));
		if (!*out) {
			pthread_rwlock_unlock(&f->lock);
			file_put(map, f);
			return -ENOMEM;
		}
		for (; i < f->n; i++)
			(*out)[n++] = (struct hy_map_extent){f->entry.file_id,	   f->ext[i].block,
							     f->ext[i].nblocks,	   f->ext[i].dirty,
							     f->ext[i].bopt_block, f->stamp};
	}
	pthread_rwlock_unlock(&f->lock);
	file_put(map, f);
	*count = n;
	return 0;
}

bool hy_map_bopt_in_use(struct hy_map *map, uint64_t bopt_block, uint64_t nblocks)
{
	bool used;

	pthread_mutex_lock(&map->bopt_lock);
	used = used_overlaps(map, bopt_block, nblocks);
	pthread_mutex_unlock(&map->bopt_lock);
	return used;
}

int hy_map_get_stamp(struct hy_map *map, uint64_t file_id, int64_t *stamp)
{
	struct map_file *f;
	int rc;

	f = file_get(map, file_id, false, &rc);
	if (!f)
		return -ENOENT;
	pthread_rwlock_rdlock(&f->lock);
	*stamp = f->stamp;
	rc = f->n ? 0 : -ENOENT;
	pthread_rwlock_unlock(&f->lock);
	file_put(map, f);
	return rc;
}

int hy_map_set_stamp(struct hy_map *map, uint64_t file_id, int64_t stamp)
{
	struct map_file *f;
	int rc;

	f = file_get(map, file_id, false, &rc);
	if (!f)
		return -ENOENT;
	pthread_rwlock_wrlock(&f->lock);
	rc = f->n ? 0 : -ENOENT;
	if (rc == 0)
		f->stamp = stamp;
	pthread_rwlock_unlock(&f->lock);
	file_put(map, f);
	return rc;
}

void hy_map_get_stats(struct hy_map *map, struct hy_map_stats *out)
{
	struct hy_file_table_entry **files;
	size_t nfiles, i, k;

	memset(out, 0, sizeof(*out));
	if (hy_file_table_snapshot(map->files, &files, &nfiles))
		return;
	for (i = 0; i < nfiles; i++) {
		struct map_file *f = FILE_OF(files[i]);

		pthread_rwlock_rdlock(&f->lock);
		if (f->n)
			out->files++;
		out->extents += f->n;
		for (k = 0; k < f->n; k++) {
			out->blocks += f->ext[k].nblocks;
			if (f->ext[k].dirty)
				out->dirty_blocks += f->ext[k].nblocks;
		}
		pthread_rwlock_unlock(&f->lock);
	}
	hy_file_table_release_snapshot(map->files, files, nfiles);
}

/* ---- persistence ---------------------------------------------------- */

struct extent_list {
	struct hy_map_extent *e;
	size_t n, cap;
};

static int collect(const struct hy_map_extent *e, void *arg)
{
	struct extent_list *l = arg;

	if (reserve((void **)&l->e, &l->cap, l->n + 1, sizeof(*l->e)))
		return -ENOMEM;
	l->e[l->n++] = *e;
	return 0;
}

static int db_fail(sqlite3 *db, const char *doing, char *why, size_t why_size)
{
	int rc = hy_state_errno(sqlite3_errcode(db));

	snprintf(why, why_size, "bopt_map: %s: %s", doing, sqlite3_errmsg(db));
	return rc ? rc : -EIO;
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int hy_map_snapshot(struct hy_map *map, struct hy_map_extent **out, size_t *count)
{
	struct extent_list l = {NULL, 0, 0};
	int rc = hy_map_walk(map, collect, &l);

	if (rc) {
		free(l.e);
		l.e = NULL;
		l.n = 0;
	}
	*out = l.e;
	*count = l.n;
	return rc;
}

int hy_map_save(struct hy_map *map, struct sqlite3 *db, uint64_t generation, uint32_t epoch,
		char *why, size_t why_size)
{
	struct extent_list l = {NULL, 0, 0};
	sqlite3_stmt *stmt = NULL;
	size_t k;
	int rc;

	/* A snapshot first: no lock is held while SQLite works. */
	rc = hy_map_walk(map, collect, &l);
	if (rc) {
		snprintf(why, why_size, "bopt_map: out of memory copying %zu extents", l.n);
		free(l.e);
		return rc;
	}
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot start the transaction", why, why_size);
		free(l.e);
		return rc;
	}
	if (sqlite3_exec(db, "DELETE FROM bopt_map", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot clear the saved map", why, why_size);
		goto fail;
	}
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO bopt_map (file_id, block, nblocks, bopt_block, dirty,"
			       " generation, stamp_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
			       -1, &stmt, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot prepare the insert", why, why_size);
		goto fail;
	}
	for (k = 0; k < l.n; k++) {
		const struct hy_map_extent *e = &l.e[k];

		sqlite3_bind_int64(stmt, 1, (sqlite3_int64)e->file_id);
		sqlite3_bind_int64(stmt, 2, (sqlite3_int64)e->block);
		sqlite3_bind_int64(stmt, 3, e->nblocks);
		sqlite3_bind_int64(stmt, 4, (sqlite3_int64)e->bopt_block);
		sqlite3_bind_int(stmt, 5, e->dirty ? 1 : 0);
		sqlite3_bind_int64(stmt, 6, (sqlite3_int64)generation);
		sqlite3_bind_int64(stmt, 7, e->stamp);
		if (sqlite3_step(stmt) != SQLITE_DONE) {
			char doing[128];

			snprintf(doing, sizeof(doing),
				 "cannot save the extent of file %" PRIu64 " at block %" PRIu64,
				 e->file_id, e->block);
			rc = db_fail(db, doing, why, why_size);
			goto fail;
		}
		sqlite3_reset(stmt);
	}
	sqlite3_finalize(stmt);
	stmt = NULL;
	/* In the same transaction: which journal records this map holds. */
	if (sqlite3_prepare_v2(db,
			       "INSERT OR REPLACE INTO bopt_checkpoint (id, generation, epoch,"
			       " saved_ns) VALUES (1, ?1, ?2, ?3)",
			       -1, &stmt, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot prepare the checkpoint record", why, why_size);
		goto fail;
	}
	sqlite3_bind_int64(stmt, 1, (sqlite3_int64)generation);
	sqlite3_bind_int64(stmt, 2, epoch);
	sqlite3_bind_int64(stmt, 3, now_ns());
	if (sqlite3_step(stmt) != SQLITE_DONE) {
		rc = db_fail(db, "cannot save the checkpoint record", why, why_size);
		goto fail;
	}
	sqlite3_finalize(stmt);
	stmt = NULL;
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot commit", why, why_size);
		goto fail;
	}
	free(l.e);
	return 0;
fail:
	sqlite3_finalize(stmt);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	free(l.e);
	return rc;
}

/* Empties the map (for load). */
static int map_clear(struct hy_map *map)
{
	struct hy_file_table_entry **files;
	size_t nfiles, i;
	int rc;

	rc = hy_file_table_snapshot(map->files, &files, &nfiles);
	if (rc)
		return rc;
	for (i = 0; i < nfiles && rc == 0; i++) {
		int64_t r = hy_map_release(map, files[i]->file_id, 0, UINT64_MAX);

		rc = r < 0 ? (int)r : 0;
	}
	hy_file_table_release_snapshot(map->files, files, nfiles);
	return rc;
}

/* Reads one integer column, refusing NULL, text, reals and blobs. */
static bool column_u64(sqlite3_stmt *stmt, int col, uint64_t *v)
{
	if (sqlite3_column_type(stmt, col) != SQLITE_INTEGER)
		return false;
	*v = (uint64_t)sqlite3_column_int64(stmt, col);
	return true;
}

/* The epoch of the last checkpoint of @generation's map (0 if none). */
static int load_epoch(sqlite3 *db, uint64_t generation, uint32_t *epoch, char *why, size_t why_size)
{
	sqlite3_stmt *stmt;
	int step;

	*epoch = 0;
	if (sqlite3_prepare_v2(db, "SELECT generation, epoch FROM bopt_checkpoint WHERE id = 1", -1,
			       &stmt, NULL) != SQLITE_OK)
		return db_fail(db, "cannot read the checkpoint record", why, why_size);
	step = sqlite3_step(stmt);
	if (step == SQLITE_ROW && sqlite3_column_type(stmt, 0) == SQLITE_INTEGER &&
	    sqlite3_column_type(stmt, 1) == SQLITE_INTEGER &&
	    (uint64_t)sqlite3_column_int64(stmt, 0) == generation) {
		int64_t v = sqlite3_column_int64(stmt, 1);

		if (v < 0 || v > HY_MAP_EPOCH_MASK) {
			sqlite3_finalize(stmt);
			snprintf(why, why_size,
				 "bopt_checkpoint: epoch %" PRId64 " is out of range", v);
			return -EUCLEAN;
		}
		*epoch = (uint32_t)v;
	} else if (step != SQLITE_ROW && step != SQLITE_DONE) {
		sqlite3_finalize(stmt);
		return db_fail(db, "cannot read the checkpoint record", why, why_size);
	}
	sqlite3_finalize(stmt);
	return 0;
}

int hy_map_load(struct hy_map *map, struct sqlite3 *db, uint64_t generation, uint32_t *epoch,
		char *why, size_t why_size)
{
	static const char *const names[] = {"file_id", "block",	     "nblocks", "bopt_block",
					    "dirty",   "generation", "stamp_ns"};
	struct hy_map_extent prev = {0, 0, 0, false, 0, 0};
	bool have_prev = false;
	sqlite3_stmt *stmt;
	uint64_t rows = 0;
	int rc, step;

	rc = map_clear(map);
	if (rc) {
		snprintf(why, why_size, "bopt_map: cannot empty the map before loading: %s",
			 strerror(-rc));
		return rc;
	}
	rc = load_epoch(db, generation, epoch, why, why_size);
	if (rc)
		return rc;
	if (sqlite3_prepare_v2(db,
			       "SELECT file_id, block, nblocks, bopt_block, dirty, generation,"
			       " stamp_ns FROM bopt_map ORDER BY file_id, block",
			       -1, &stmt, NULL) != SQLITE_OK)
		return db_fail(db, "cannot read the saved map", why, why_size);
	/* Rows are gathered one by one; no map lock is held across a step. */
	while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
		uint64_t v[7];
		struct hy_map_extent e;
		int c;

		rows++;
		for (c = 0; c < 7; c++) {
			if (!column_u64(stmt, c, &v[c])) {
				snprintf(why, why_size,
					 "bopt_map: row %" PRIu64 ": %s is not an integer", rows,
					 names[c]);
				rc = -EUCLEAN;
				goto fail;
			}
		}
		if (v[5] != generation) {
			snprintf(why, why_size,
				 "bopt_map: the saved map belongs to BOPT generation %" PRIu64
				 ", not to the current generation %" PRIu64 " (file %" PRIu64
				 ", block %" PRIu64 ")",
				 v[5], generation, v[0], v[1]);
			rc = -ESTALE;
			goto fail;
		}
		e = (struct hy_map_extent){v[0],      v[1], (uint32_t)v[2],
					   v[4] == 1, v[3], (int64_t)v[6]};
		if (v[2] == 0 || v[2] > UINT32_MAX || v[4] > 1 || v[1] > UINT64_MAX - v[2] ||
		    v[3] >= UINT64_MAX - v[2]) {
			snprintf(why, why_size,
				 "bopt_map: malformed row for file %" PRIu64 " block %" PRIu64
				 ": nblocks %" PRIu64 ", bopt_block %" PRIu64 ", dirty %" PRIu64,
				 v[0], v[1], v[2], v[3], v[4]);
			rc = -EUCLEAN;
			goto fail;
		}
		if (have_prev && prev.file_id == e.file_id && prev.block + prev.nblocks > e.block) {
			snprintf(why, why_size,
				 "bopt_map: file %" PRIu64 ": the extent at block %" PRIu64
				 " overlaps the one at block %" PRIu64 " (%" PRIu32 " blocks)",
				 e.file_id, e.block, prev.block, prev.nblocks);
			rc = -EUCLEAN;
			goto fail;
		}
		rc = hy_map_relocate(map, &e);
		if (rc == -EBUSY || rc == -EEXIST) {
			snprintf(why, why_size,
				 "bopt_map: file %" PRIu64 " block %" PRIu64
				 ": its BOPT blocks %" PRIu64 "-%" PRIu64
				 " are used by another extent",
				 e.file_id, e.block, e.bopt_block, e.bopt_block + e.nblocks - 1);
			rc = -EUCLEAN;
			goto fail;
		} else if (rc) {
			snprintf(why, why_size,
				 "bopt_map: cannot load file %" PRIu64 " block %" PRIu64 ": %s",
				 e.file_id, e.block, strerror(-rc));
			goto fail;
		}
		prev = e;
		have_prev = true;
	}
	if (step != SQLITE_DONE) {
		rc = db_fail(db, "cannot read the saved map", why, why_size);
		goto fail;
	}
	sqlite3_finalize(stmt);
	return 0;
fail:
	sqlite3_finalize(stmt);
	map_clear(map);
	return rc;
}
