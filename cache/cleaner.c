/* cleaner.c - the cache's cleaner ("hy-cache-clean"): dirty blocks home
 * in file and block order, paced, PORE's choice of zones with
 * backend=smr, flush; see include/hybridfs/cache.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hybridfs/fault.h"
#include "hybridfs/log.h"

#include "cache_internal.h"

/* ---- pacing (the cleaner's passes, ReCA's migrations) ------------------ */

/* Background I/O paced at @rate bytes/s: sleeps until @blocks blocks since
 * @start are due, in short naps, so that a flush or a close does not wait
 * for the pace but takes over (at full speed). */
void hy_cache_clean_pace(struct hy_cache *c, int64_t blocks, uint64_t rate, int64_t start)
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

void hy_cache_clean_kick(struct hy_cache *c)
{
	pthread_mutex_lock(&c->thread_lock);
	c->clean_kick = true;
	pthread_cond_broadcast(&c->thread_wake);
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
		uint64_t block;
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
	rc = hy_cache_io_ensure_fresh(c, cf, &home);
	if (rc == 0)
		rc = below_getattr(c, &home, &a);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct held h;

		hy_cache_io_find_block(c, home.file_id, k[i].block, false, &h);
		if (!h.where || !h.dirty)
			continue;
		if (ndone)
			hy_fault_point("cache.clean.mid"); /* fault.h: one block home, not this */
		home_changed(cf);
		rc = hy_cache_io_copy_held(c, &h, h.dirty, line);
		if (rc == 0)
			rc = hy_cache_io_write_home(c, &home, k[i].block, h.dirty, line, a.size);
		done[ndone].where = h.where;
		done[ndone].at = h.slot_or_line;
		done[ndone].block = k[i].block;
		done[ndone].valid = h.valid;
		done[ndone].dirty = h.dirty;
		ndone++;
	}
	/* home durably only where the journal says dirty (a clean record
	 * follows); other blocks are as safe in home's page cache as any
	 * write not yet fsync'd */
	for (size_t i = 0; i < ndone && rc == 0; i++)
		if (done[i].where == 2 && hy_cache_lines_disk_dirty(c, done[i].at)) {
			rc = below_sync(c, &home);
			break;
		}
	if (rc == 0 && ndone)
		hy_cache_io_keep_mtime(c, &home, &a);
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
	rc = hy_cache_journal_clean_records(c, recs, nrecs);
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
			uint64_t block = done[i].block;

			if (hy_cache_index_update_masks(c->index, home.file_id, block, 0, 0,
							HY_CACHE_ALL_SECTORS, &e) == 0)
				note_dirty(c, cf, done[i].dirty, 0);
			pthread_mutex_lock(&c->lines_lock);
			c->lines[done[i].at].flags &= (uint8_t)~LS_DISK_DIRTY;
			pthread_mutex_unlock(&c->lines_lock);
			hy_cache_lines_set_dirty(c, done[i].at, false);
		}
	}
	if (rc == 0) {
		atomic_fetch_add(&c->st.cleaned_blocks, ndone);
		hy_cache_io_refresh_stamp(c, cf, &home);
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
		if (cf) {
			/* the gate keeps the file's way home as it is */
			pthread_rwlock_rdlock(gate(c, keys[i].file_id));
			if (cf->home >= 0) {
				struct hy_cache_file home = {keys[i].file_id, cf->home};

				rc = below_addresses(c, &home, blocks, j - i, addrs + i);
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
	for (uint32_t l = 0; l < c->capacity && n < cap; l++) {
		uint64_t file_id, block;

		if ((c->lines[l].flags & LS_DIRTY) && line_key(c, l, &file_id, &block))
			keys[n++] = (struct dirty_key){file_id, block, false,
						       c->line_hits ? c->line_hits[l] : 0};
	}
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
					below_put(c, cf->home);
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
			hy_cache_clean_pace(c, cleaned, rate, start);
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

void *hy_cache_clean_main(void *arg)
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
		if (hy_cache_reconfig_migrate_pass(c, c->cfg.migrate_rate) < 0)
			hy_log_debug("cache: a line migration pass ended on an error (logged)");
		pthread_mutex_lock(&c->thread_lock);
	}
	pthread_mutex_unlock(&c->thread_lock);
	return NULL;
}
