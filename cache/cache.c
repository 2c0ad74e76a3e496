/* cache.c - the cache's open and close (recovery of the journaled dirty
 * lines, the store, the lines it keeps across mounts, the front buffer,
 * the threads), its stats and its check; see include/hybridfs/cache.h.
 * The other parts: front.c, lines.c, cache_io.c, cache_fsync.c,
 * cache_reconfig.c, cleaner.c (cache_internal.h).
 *
 * The persistent cache. Every checkpoint writes, with the line table, the
 * stamp (ctime, mtime, size: stamp.h) each file's lines are current for
 * (cache_store.h, format 3), and only stamps that can be believed later:
 * of a file with no dirty block (a dirty line's data is not home, and
 * after a crash its clean record would serve it), whose ctime has settled
 * (hy_stamp_settled), read under its gate (a write that changes home holds
 * it). Open loads the table, writes home what a crash left dirty, then
 * keeps the clean lines of every file that has a stamp and had no dirty
 * line (recovery changed those at home); the rest are free.
 *
 * Kept lines are verified lazily, at the file's first use, not at open:
 * the file ids name files through the state database, so checking them at
 * open would stat every kept file's path on the backing disk before the
 * first request, a seek per file on the disk the cache is there to spare
 * (and for files that may never be read again). Each request already
 * fstat's its home file (the stale-copy check of cache_io.c), so a kept
 * file's cfile starts "unverified" with the kept stamp: the first request
 * that resolves the file (read, write, truncation, fsync) compares the
 * home file with the stamp under the file's exclusive gate and adopts the
 * lines (exact ctime, mtime and size) or drops them all. An unverified
 * file's lines are never served (hy_cache_io_fresh_for is false for it),
 * count no hit before they are adopted, and are clean lines in the policy
 * like any others: evictable. A file gone since is never resolved: its
 * lines age out, or leave when the mount learns of its removal.
 *
 * After a crash: the durable table is the last checkpoint's and the
 * journal replays over it. A clean line the table names may have been
 * reused since for another block (clean fills are not journaled), so a
 * line the durable table or journal names in use is journaled free before
 * it is reused (lines.c, durable_map). A stamp made durable before a later
 * change the cache made at home no longer matches the file (its ctime
 * moved): its lines are dropped, which is safe. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hybridfs/log.h"
#include "hybridfs/stamp.h"

#include "cache_internal.h"

/* ---- files ------------------------------------------------------------- */

static struct hy_file_table_entry *cfile_alloc(void *arg, uint64_t file_id)
{
	struct hy_cache *c = arg;
	struct cfile *cf = calloc(1, sizeof(*cf));

	if (!cf)
		return NULL;
	cf->home = -1;
	cf->home_changes = atomic_load(&c->tokens_issued) + 1;
	cf->last_write = -1;
	cf->rule = hy_cache_pin_rule_of(c, file_id);
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
		below_put(c, cf->home);
	cfile_writes_release(c, cf);
	free(cf);
}

static const struct hy_file_table_ops cfile_ops = {cfile_alloc, cfile_empty, cfile_destroy};

/* ---- open and close ------------------------------------------------------ */

struct recovered {
	uint64_t line, file_id, block;
	uint8_t dirty;
	uint16_t tail;
	bool summed; /* clean lines: their data's checksum, from a clean close */
	uint32_t sum;
};

struct recovery {
	struct recovered *v;
	size_t n, cap;
	struct recovered *clean; /* clean lines (dirty 0, tail: valid mask) */
	size_t nclean, clean_cap;
};

static int collect_clean(struct recovery *r, uint64_t line, const struct hy_cache_line *l)
{
	if (r->nclean == r->clean_cap) {
		size_t cap = r->clean_cap ? r->clean_cap * 2 : 256;
		struct recovered *v = realloc(r->clean, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->clean = v;
		r->clean_cap = cap;
	}
	r->clean[r->nclean++] =
		(struct recovered){line, l->file_id, l->block, 0, l->valid, l->summed, l->sum};
	return 0;
}

static int collect_dirty(void *arg, uint64_t line, const struct hy_cache_line *l)
{
	struct recovery *r = arg;

	if (!l->dirty)
		return collect_clean(r, line, l);
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct recovered *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct recovered){line, l->file_id, l->block, l->dirty, l->tail, false, 0};
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
			c->keep.gone_files++;
			while (i < r->n && r->v[i].file_id == ids[k])
				i++;
			continue;
		}
		rc = below_getattr(c, &home, &a);
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
				rc = hy_cache_io_write_home(c, &home, r->v[i].block, r->v[i].dirty,
							    line, end);
			}
			wrote++;
		}
		if (rc == 0 && wrote)
			rc = below_sync(c, &home);
		if (rc < 0)
			snprintf(why, why_size,
				 "cannot write the dirty lines of file %" PRIu64
				 " from \"%s\" home: %s; the store is left as it is",
				 ids[k], c->store_path, strerror(-rc));
		c->st.recovered_blocks += wrote;
	}
	for (size_t k = 0; k < nids; k++)
		if (objects[k] >= 0)
			below_put(c, objects[k]);
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

static int by_line(const void *a, const void *b)
{
	const struct recovered *x = a, *y = b;

	return x->line < y->line ? -1 : x->line > y->line;
}

static const struct hy_cache_stamp *stamp_find(const struct hy_cache_stamp *v, size_t n,
					       uint64_t file_id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].file_id == file_id)
			return &v[mid];
		if (v[mid].file_id < file_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool recovered_file(const struct recovery *r, uint64_t file_id)
{
	size_t lo = 0, hi = r->n; /* r->v is sorted by file (recover) */

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].file_id == file_id)
			return true;
		if (r->v[mid].file_id < file_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* After load and recovery: which clean lines stay (in r->clean, sorted by
 * line, for keep_lines()), with the stamps of their files (c->kept). A
 * file without a stamp is unverifiable; one that had dirty lines was just
 * written home by recovery, which changed it. */
static int choose_kept(struct hy_cache *c, struct recovery *r)
{
	size_t nst, keep = 0, files = 0;
	const struct hy_cache_stamp *st = hy_cache_store_loaded_stamps(c->store, &nst);

	/* the files recovery wrote home: all their lines go */
	for (size_t i = 0; i < r->n; i++) {
		c->keep.changed_lines++;
		if (i == 0 || r->v[i].file_id != r->v[i - 1].file_id)
			c->keep.changed_files++;
	}
	if (r->nclean) /* qsort of NULL is undefined, even of nothing */
		qsort(r->clean, r->nclean, sizeof(*r->clean), by_file_block);
	if (nst) {
		c->kept = malloc(nst * sizeof(*c->kept));
		if (!c->kept) {
			free(r->clean);
			r->clean = NULL;
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < r->nclean;) {
		uint64_t id = r->clean[i].file_id;
		const struct hy_cache_stamp *k = stamp_find(st, nst, id);
		bool changed = recovered_file(r, id);
		size_t j = i;

		while (j < r->nclean && r->clean[j].file_id == id)
			j++;
		if (k && !changed) {
			c->kept[c->nkept++] = *k;
			for (; i < j; i++)
				r->clean[keep++] = r->clean[i];
			files++;
			continue;
		}
		if (changed) {
			c->keep.changed_lines += j - i; /* its file is counted above */
		} else {
			c->keep.unverifiable_files++;
			c->keep.unverifiable_lines += j - i;
		}
		i = j;
	}
	r->nclean = keep;
	if (r->nclean)
		qsort(r->clean, r->nclean, sizeof(*r->clean), by_line);
	c->keep.kept_lines = keep;
	c->keep.kept_files = files;
	c->pending_keep = r->clean;
	c->npending_keep = r->nclean;
	r->clean = NULL;
	return 0;
}

/* Whether kept line @r's data is what the clean close summed: damage from
 * outside while unmounted is not served. A line without a sum (a crash
 * left it) is taken as it is. */
static bool line_intact(struct hy_cache *c, const struct recovered *r)
{
	unsigned char buf[LINE];

	if (!r->summed)
		return true;
	memset(buf, 0, sizeof(buf));
	return hy_cache_store_read_line(c->store, r->line, (uint8_t)r->tail, buf) == 0 &&
	       hy_cache_store_line_sum(buf, (uint8_t)r->tail) == r->sum;
}

/* At open, once the index, policy and lines exist: the kept lines enter
 * them as clean lines of files unverified yet (each read back against its
 * sum first, in line order: the store's disk reads them in one pass);
 * every other line is free. */
static int keep_lines(struct hy_cache *c)
{
	const struct recovered *v = c->pending_keep;
	size_t k = 0;

	for (uint32_t l = 0; l < c->capacity; l++) {
		struct cfile *cf;
		const struct hy_cache_stamp *st;

		if (k < c->npending_keep && v[k].line == l && !line_intact(c, &v[k])) {
			if (c->keep.damaged_lines < 3) /* the rest: a count, below */
				hy_log(LOG_WARNING,
				       "cache: \"%s\": line %" PRIu32 " (block %" PRIu64
				       " of file %" PRIu64
				       ") does not hold what it held at the unmount; dropped",
				       c->store_path, l, v[k].block, v[k].file_id);
			c->keep.damaged_lines++;
			c->keep.kept_lines--;
			k++;
		}
		if (k >= c->npending_keep || v[k].line != l) {
			hy_cache_lines_free_push(c, l);
			continue;
		}
		cf = cfile_get(c, v[k].file_id, true);
		st = stamp_find(c->kept, c->nkept, v[k].file_id);
		if (!cf || !st) {
			cfile_put(c, cf);
			return -ENOMEM;
		}
		if (!atomic_load(&cf->unverified)) {
			atomic_store(&cf->unverified, true);
			atomic_store(&cf->stamp, st->ctime_ns);
			atomic_store(&cf->mtime, st->mtime_ns);
			atomic_store(&cf->size, st->size);
		}
		if (hy_cache_lines_commit(c, cf, l, v[k].block, (uint8_t)v[k].tail, 0,
					  HY_POLICY_COLD) < 0) {
			cfile_put(c, cf);
			return -ENOMEM; /* the line was given back: free */
		}
		map_set(c->kept_map, l, true);
		cfile_put(c, cf);
		k++;
	}
	free(c->pending_keep);
	c->pending_keep = NULL;
	c->npending_keep = 0;
	return 0;
}

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The store's checkpoint asks for the stamps (cache_store.h): those of
 * every file with lines that can be believed after this checkpoint (see
 * the top of this file). Appends are quiesced; requests are not. */
static int stamps_record(void *arg, struct hy_cache_stamp **out, size_t *n)
{
	struct hy_cache *c = arg;
	struct hy_file_table_entry **files = NULL;
	struct hy_cache_stamp *v;
	size_t nfiles = 0, k = 0;
	/* before the stamps are read: a change after it gets a later ctime */
	int64_t now = wall_ns();

	*out = NULL;
	*n = 0;
	if (hy_file_table_snapshot(c->files, &files, &nfiles) < 0)
		return -ENOMEM;
	v = malloc((nfiles ? nfiles : 1) * sizeof(*v));
	if (!v) {
		hy_file_table_release_snapshot(c->files, files, nfiles);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nfiles; i++) {
		struct cfile *cf = (struct cfile *)files[i];
		uint64_t id = cf->entry.file_id;
		struct hy_cache_stamp st = {id, 0, 0, 0};
		bool dirty;

		if (!atomic_load(&cf->blocks))
			continue;
		/* a busy file (or the caller's own, whose gate it holds) has
		 * no stamp this time: after a crash its lines go */
		if (pthread_rwlock_tryrdlock(gate(c, id)) != 0)
			continue;
		if (atomic_load(&cf->unverified)) {
			const struct hy_cache_stamp *kept = stamp_find(c->kept, c->nkept, id);

			if (kept)
				st = *kept; /* its lines are still those it covers */
		} else {
			st.ctime_ns = atomic_load(&cf->stamp);
			st.mtime_ns = atomic_load(&cf->mtime);
			st.size = atomic_load(&cf->size);
			dirty = atomic_load(&cf->dirty) != 0;
			if (dirty || !hy_stamp_settled(st.ctime_ns, now))
				st.ctime_ns = 0;
		}
		pthread_rwlock_unlock(gate(c, id));
		if (st.ctime_ns)
			v[k++] = st;
	}
	hy_file_table_release_snapshot(c->files, files, nfiles);
	*out = v;
	*n = k;
	return 0;
}

void hy_cache_kept_verify(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
			  const struct hy_device_attr *a)
{
	const struct hy_cache_stamp *st = stamp_find(c->kept, c->nkept, f->file_id);
	uint64_t blocks = atomic_load(&cf->blocks);
	int rc;

	atomic_store(&cf->unverified, false);
	if (!blocks)
		return; /* its kept lines all left before its first use */
	if (st && hy_stamp_same(st->ctime_ns, st->mtime_ns, st->size, a)) {
		atomic_store(&cf->stamp, a->stamp);
		atomic_store(&cf->mtime, a->mtime_ns);
		atomic_store(&cf->size, a->size);
		atomic_fetch_add(&c->keep.verified_files, 1);
		atomic_fetch_add(&c->keep.verified_lines, blocks);
		return;
	}
	/* changed while unmounted: nothing kept is served (all clean) */
	rc = hy_cache_leave_drop_range(c, cf, f, 0, UINT64_MAX, true);
	atomic_fetch_add(&c->keep.stale_kept_files, 1);
	atomic_fetch_add(&c->keep.stale_lines, blocks);
	if (rc < 0)
		hy_log(LOG_ERR,
		       "cache: file %" PRIu64 " changed while unmounted; dropping its kept "
		       "lines failed: %s",
		       f->file_id, strerror(-rc));
	else
		hy_log(LOG_INFO,
		       "cache: file %" PRIu64 " changed while unmounted: its %" PRIu64
		       " kept lines are dropped",
		       f->file_id, blocks);
	atomic_store(&cf->stamp, a->stamp);
	atomic_store(&cf->mtime, a->mtime_ns);
	atomic_store(&cf->size, a->size);
}

/* A file removed through the mount before its kept lines were used. */
void hy_cache_kept_gone(struct hy_cache *c, struct cfile *cf)
{
	if (!atomic_exchange(&cf->unverified, false))
		return;
	atomic_fetch_add(&c->keep.gone_later_files, 1);
	atomic_fetch_add(&c->keep.gone_later_lines, atomic_load(&cf->blocks));
}

/* Opens the store, recovers it, and keeps its clean lines (a format that
 * keeps them) or remakes it empty. */
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
	if (rc == 0 && !salvage && !c->cfg.no_keep && c->store->header.version >= 3) {
		/* a format that keeps lines: the clean ones stay for keep_lines();
		 * an unclaimed store (format-cache) becomes this mount's, as a
		 * store made again would */
		c->keep.kept_format = true;
		if (!c->store->header.uuid[0] && c->uuid[0])
			rc = hy_cache_store_claim(c->store, c->uuid, why, why_size);
		if (rc == 0)
			rc = choose_kept(c, &r);
		else
			free(r.clean);
		free(r.v);
		return rc;
	}
	if (rc == 0 && r.nclean) {
		size_t files = 0;

		for (size_t i = 0; i < r.nclean; i++)
			files += i == 0 || r.clean[i].file_id != r.clean[i - 1].file_id;
		c->keep.unverifiable_lines = r.nclean;
		c->keep.unverifiable_files = files;
		hy_log(LOG_NOTICE, "cache: \"%s\" %s: its %zu clean lines are dropped",
		       c->store_path,
		       salvage		? "was cut short"
		       : c->cfg.no_keep ? "keeps no lines across mounts (cache_keep)"
					: "is of a format that keeps no stamps",
		       r.nclean);
	}
	free(r.v);
	free(r.clean);
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
	hy_cache_pin_free(c);
	free(c->line_hits);
	hy_pore_free(c->pore);
	free(c->front.slots);
	free(c->front.ghosts);
	free(c->front.table);
	free(c->front.data);
	for (int i = 0; i < HY_CACHE_GATES; i++)
		pthread_rwlock_destroy(&c->gates[i]);
	free(c->kept);
	free(c->kept_map);
	free(c->durable_map);
	free(c->pending_keep);
	free(c->store_path);
	free(c->uuid);
	free(c);
}

int hy_cache_open(const struct hy_cache_config *cfg, struct hy_indirector *below,
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
	c->below = below;
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
	if (rc == 0 && c->lines)
		rc = hy_cache_pin_init(c);
	if (rc < 0 || !c->lines) {
		snprintf(why, why_size, "out of memory for %" PRIu32 " cache lines", c->capacity);
		rc = -ENOMEM;
		goto fail;
	}
	c->kept_map = calloc((c->capacity + 63) / 64 + 1, 8);
	c->durable_map = calloc((c->capacity + 63) / 64 + 1, 8);
	if (!c->kept_map || !c->durable_map) {
		snprintf(why, why_size, "out of memory for %" PRIu32 " cache lines", c->capacity);
		rc = -ENOMEM;
		goto fail;
	}
	if (c->keep.kept_format) {
		rc = keep_lines(c);
		if (rc < 0) {
			snprintf(why, why_size, "out of memory keeping the lines of \"%s\"",
				 c->store_path);
			goto fail;
		}
	} else {
		for (uint32_t l = 0; l < c->capacity; l++)
			hy_cache_lines_free_push(c, l);
	}
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
	hy_cache_store_external_table(c->store, hy_cache_lines_table_record, c);
	hy_cache_store_external_stamps(c->store, stamps_record, c);
	/* the durable table says what the cache holds now (what recovery
	 * wrote home and what was dropped, free), and names the lines it
	 * holds (durable_map), before anything is served */
	rc = hy_cache_store_checkpoint(c->store, why, why_size);
	if (rc == 0)
		rc = hy_cache_store_set_clean(c->store, false);
	if (rc < 0)
		goto fail;
	if (c->keep.kept_files || c->keep.unverifiable_files || c->keep.changed_files)
		hy_log(LOG_NOTICE,
		       "cache: \"%s\": kept %" PRIu64 " lines of %" PRIu64
		       " files (each checked at its first use); dropped %" PRIu64
		       " lines of %" PRIu64 " files without a stamp to check, %" PRIu64
		       " lines of %" PRIu64 " files written home after a crash and %" PRIu64
		       " lines whose data was damaged",
		       c->store_path, c->keep.kept_lines, c->keep.kept_files,
		       c->keep.unverifiable_lines, c->keep.unverifiable_files,
		       c->keep.changed_lines, c->keep.changed_files, c->keep.damaged_lines);
	if (!cfg->no_threads) {
		if (pthread_create(&c->cleaner, NULL, hy_cache_clean_main, c) != 0) {
			snprintf(why, why_size, "cannot start the cache's cleaner thread");
			rc = -EAGAIN;
			goto fail;
		}
		c->cleaner_started = true;
		if (c->front.nslots) {
			if (pthread_create(&c->evictor, NULL, hy_cache_front_evictor_main, c) !=
			    0) {
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
		hy_log(LOG_ERR,
		       "cache: \"%s\": out of memory keeping the dirty blocks in the store",
		       c->store_path);
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
		pending_clear(c, cf);
		cf->pending_overflow = true;
		k = hy_cache_fsync_file(c, &f, &token, true);
		if (k < 0)
			hy_log(LOG_ERR,
			       "cache: file %" PRIu64 ": its dirty blocks cannot be kept in \"%s\" "
			       "either: %s",
			       f.file_id, c->store_path, strerror(-k));
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
	hy_cache_reconfig_migrations_drop(c);
	r = hy_cache_flush(c);
	if (r < 0) {
		rc = (int)r;
		hy_log(LOG_ERR,
		       "cache: \"%s\": dirty blocks could not all be written home at close: %s",
		       c->store_path, strerror(-rc));
	}
	/* what could not go home stays in the store, journaled, so that the
	 * next mount tries again instead of dropping it */
	if (atomic_load(&c->dirty_sectors) && c->store)
		keep_dirty(c);
	if (c->store && rc == 0 && !c->cfg.no_keep) {
		uint64_t kept = hy_cache_front_keep(c);

		if (kept)
			hy_log(LOG_INFO,
			       "cache: %" PRIu64 " blocks of the front buffer kept in \"%s\"", kept,
			       c->store_path);
	}
	if (c->store) {
		/* the lines' data summed: the next mount checks what it keeps */
		int k = c->cfg.no_keep
				? hy_cache_store_checkpoint(c->store, why, sizeof(why))
				: hy_cache_store_checkpoint_summed(c->store, why, sizeof(why));

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

/* Everything the SSD store's metadata holds in DRAM (cache.h says what). */
static size_t ssd_meta_bytes(const struct hy_cache *c, const struct hy_cache_index_stats *is,
			     const struct hy_policy_stats *ps, size_t tails)
{
	size_t words = (c->capacity + 63) / 64 ? (c->capacity + 63) / 64 : 1;
	size_t summary = (c->capacity + 4095) / 4096 ? (c->capacity + 4095) / 4096 : 1;

	/* the persistent cache's bit per line (kept, durable) and the stamps
	 * of the files kept at open */
	size_t keep =
		((c->kept_map ? words : 0) + (c->durable_map ? words : 0)) * sizeof(uint64_t) +
		c->nkept * sizeof(*c->kept);

	return sizeof(*c) + is->bytes + ps->bytes + (size_t)c->capacity * sizeof(*c->lines) +
	       (words + summary) * sizeof(uint64_t) + tails +
	       (c->line_hits ? (size_t)c->capacity : 0) + keep;
}

const char *hy_cache_pass_name(enum hy_cache_pass_reason reason)
{
	static const char *const names[HY_CACHE_PASS_COUNT] = {
		[HY_CACHE_PASS_CLASS] = "class",
		[HY_CACHE_PASS_EXCLUDED] = "excluded",
		[HY_CACHE_PASS_CUTOFF] = "cutoff",
		[HY_CACHE_PASS_NO_ROOM] = "no_room",
		[HY_CACHE_PASS_HEAT] = "heat",
		[HY_CACHE_PASS_POLICY] = "policy",
		[HY_CACHE_PASS_WRITE_AROUND] = "write_around",
	};

	return (unsigned)reason < HY_CACHE_PASS_COUNT ? names[reason] : NULL;
}

void hy_cache_get_stats(struct hy_cache *c, struct hy_cache_stats *o)
{
	struct hy_cache_index_stats is;
	struct hy_policy_stats ps;
	static const char *const wp[] = {"back", "through", "around"};
	size_t tails;

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
	tails = c->tails.keys ? (size_t)(c->tails.mask + 1) *
					(sizeof(*c->tails.keys) + sizeof(*c->tails.values))
			      : 0;
	pthread_mutex_unlock(&c->lines_lock);
	hy_cache_index_get_stats(c->index, &is);
	o->dirty_bytes = atomic_load(&c->dirty_sectors) * SECTOR;
	o->ssd_bytes_written = atomic_load(&c->st.ssd_bytes_written);
	o->heat_admitted = atomic_load(&c->st.heat_admitted);
	for (int r = 0; r < HY_CACHE_PASS_COUNT; r++)
		o->passthrough[r] = atomic_load_explicit(&c->st.pass[r], memory_order_relaxed);
	o->heat_refused = o->passthrough[HY_CACHE_PASS_HEAT];
	o->policy_refused = o->passthrough[HY_CACHE_PASS_POLICY];
	o->dram_evictions = atomic_load(&c->st.dram_evictions);
	o->ssd_evictions = atomic_load(&c->st.ssd_evictions);
	o->cold_dirty_home = atomic_load(&c->st.cold_dirty_home);
	o->cleaned_blocks = atomic_load(&c->st.cleaned_blocks);
	o->cleaner_backlog = o->dram_dirty + o->ssd_dirty;
	o->bypassed = atomic_load(&c->st.bypassed);
	o->seq_bypassed = o->passthrough[HY_CACHE_PASS_CUTOFF];
	o->admit_bypassed =
		o->passthrough[HY_CACHE_PASS_CLASS] + o->passthrough[HY_CACHE_PASS_EXCLUDED];
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
	o->keep.kept_lines = c->keep.kept_lines;
	o->keep.kept_files = c->keep.kept_files;
	o->keep.changed_lines = c->keep.changed_lines;
	o->keep.changed_files = c->keep.changed_files;
	o->keep.unverifiable_lines = c->keep.unverifiable_lines;
	o->keep.unverifiable_files = c->keep.unverifiable_files;
	o->keep.gone_files = c->keep.gone_files;
	o->keep.damaged_lines = c->keep.damaged_lines;
	o->keep.verified_lines = atomic_load(&c->keep.verified_lines);
	o->keep.verified_files = atomic_load(&c->keep.verified_files);
	o->keep.stale_lines = atomic_load(&c->keep.stale_lines);
	o->keep.stale_files = atomic_load(&c->keep.stale_kept_files);
	o->keep.gone_later_lines = atomic_load(&c->keep.gone_later_lines);
	o->keep.gone_later_files = atomic_load(&c->keep.gone_later_files);
	{
		uint64_t used =
			o->keep.verified_files + o->keep.stale_files + o->keep.gone_later_files;

		o->keep.pending_files = o->keep.kept_files > used ? o->keep.kept_files - used : 0;
	}
	o->keep.warm_hits = atomic_load(&c->keep.warm_hits);
	o->keep.off = c->cfg.no_keep;
	o->ssd_meta_bytes = ssd_meta_bytes(c, &is, &ps, tails);
	o->dram_bytes_per_line =
		o->ssd_used ? (o->ssd_meta_bytes + o->ssd_used - 1) / o->ssd_used : 0;
	o->dram_bytes_per_store_line =
		c->capacity ? (o->ssd_meta_bytes + c->capacity - 1) / c->capacity : 0;
	o->file_meta_bytes = hy_file_table_bytes(c->files) +
			     hy_file_table_count(c->files) * sizeof(struct cfile) +
			     atomic_load(&c->writes_bytes);
	o->front_meta_bytes =
		(size_t)c->front.nslots * (sizeof(struct slot) + sizeof(struct ghost)) +
		(c->front.nslots ? ((size_t)c->front.table_mask + 1) * 4 : 0);
}

int hy_cache_check(struct hy_cache *c, char *why, size_t why_size)
{
	struct front *fr = &c->front;
	uint32_t used = 0, dirty = 0, fdirty = 0, pinned = 0;
	int rc = hy_cache_index_check(c->index, why, why_size);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&c->lines_lock);
	rc = hy_policy_check(c->policy, why, why_size);
	for (uint32_t l = 0; l < c->capacity && rc == 0; l++) {
		struct hy_cache_entry e;
		const struct line_state *ls = &c->lines[l];
		uint64_t file_id = 0, block = 0;

		if (!(ls->flags & LS_USED))
			continue;
		used++;
		if (ls->flags & LS_PINNED)
			pinned++;
		if (!!(ls->flags & LS_PINNED) == (hy_policy_queue_of(c->policy, l) >= 0)) {
			snprintf(why, why_size, "line %" PRIu32 " is %s", l,
				 ls->flags & LS_PINNED ? "pinned but in the policy"
						       : "in use but not in the policy");
			rc = -EUCLEAN;
			break;
		}
		if (ls->flags & LS_DIRTY)
			dirty++;
		if (!line_key(c, l, &file_id, &block) ||
		    hy_cache_index_lookup(c->index, file_id, block, &e) != 0 || e.line != l ||
		    !!e.dirty != !!(ls->flags & LS_DIRTY)) {
			snprintf(why, why_size, "line %" PRIu32 " disagrees with the index", l);
			rc = -EUCLEAN;
		} else if (hy_cache_front_find(fr, file_id, block) != NONE) {
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
	if (rc == 0 && (pinned != c->pin.lines || pinned > c->pin.cap)) {
		snprintf(why, why_size, "pinned lines: %u, counted %u, cap %u", pinned,
			 c->pin.lines, c->pin.cap);
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
		    hy_cache_front_find(fr, fr->slots[s].file_id, fr->slots[s].block) != s) {
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
	if (cf && hy_cache_io_ensure_fresh(c, cf, f) < 0)
		hy_log(LOG_WARNING, "cache: file %" PRIu64 ": cannot check it after O_TRUNC",
		       f->file_id);
	cfile_put(c, cf);
	pthread_rwlock_unlock(gate(c, f->file_id));
}
