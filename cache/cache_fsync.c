/* cache_fsync.c - blocks leaving the cache (a range settled or dropped,
 * changes from outside, writes home), fsync and its journal, and the close
 * and forgetting of files; see include/hybridfs/cache.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hybridfs/log.h"

#include "hybridfs/stamp.h"

#include "cache_internal.h"

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
			uint32_t s = hy_cache_front_find(fr, file_id, b);

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
int hy_cache_leave_settle_range(struct hy_cache *c, struct cfile *cf,
				const struct hy_cache_file *req, uint64_t first, uint64_t nblocks,
				bool home_first, bool drop)
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
		rc = below_getattr(c, f, &a);
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
			rc = hy_cache_io_write_home(c, f, x->block, x->dirty,
						    slot_data(fr, slots[i]), a.size);
			wrote = true;
			if (rc < 0)
				break;
		}
		pthread_mutex_lock(&fr->lock);
		note_dirty(c, cf, x->dirty, drop ? 0 : (home_first ? 0 : x->dirty));
		if (drop) {
			hy_cache_front_remove(fr, slots[i]);
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
				rc = hy_cache_io_write_home(c, f, e->block, e->dirty, line, a.size);
			wrote = true;
		}
	}
	for (int64_t i = 0; i < n && rc == 0 && wrote; i++)
		if (ents[i].dirty && hy_cache_lines_disk_dirty(c, ents[i].line)) {
			rc = below_sync(c, f); /* as the cleaner: above */
			break;
		}
	if (rc == 0 && wrote)
		hy_cache_io_keep_mtime(c, f, &a);
	/* the home file's ctime moved by the cache's own hand */
	if (rc == 0 && wrote)
		hy_cache_io_refresh_stamp(c, cf, f);
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
		rc = hy_cache_journal_clean_records(c, frees, nfrees);
	for (int64_t i = 0; i < n && rc == 0; i++) {
		struct hy_cache_entry *e = &ents[i];

		pthread_mutex_lock(&c->lines_lock);
		c->lines[e->line].flags &= (uint8_t)~LS_DISK_DIRTY;
		if (drop) {
			hy_cache_lines_forget(c, e->line);
			hy_cache_lines_free_push(c, e->line);
		}
		pthread_mutex_unlock(&c->lines_lock);
		if (!drop && e->dirty) {
			struct hy_cache_entry now;

			if (hy_cache_index_update_masks(c->index, f->file_id, e->block, 0, 0,
							HY_CACHE_ALL_SECTORS, &now) == 0)
				note_dirty(c, cf, e->dirty, now.dirty);
			hy_cache_lines_set_dirty(c, e->line, false);
		}
	}
out:
	free(ents);
	free(frees);
	return rc;
}

int hy_cache_leave_drop_range(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
			      uint64_t first, uint64_t nblocks, bool home_first)
{
	return hy_cache_leave_settle_range(c, cf, f, first, nblocks, home_first, true);
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
		rc = hy_cache_io_ensure_fresh(c, cf, f);
	if (cf && len && rc == 0)
		rc = hy_cache_leave_drop_range(c, cf, f, first, n, true);
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
		hy_cache_io_refresh_stamp(c, cf, f);
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
	rc = hy_cache_io_ensure_fresh(c, cf, f);
	if (rc == 0 && atomic_load(&cf->dirty))
		rc = hy_cache_leave_settle_range(c, cf, f, first, n, true, false);
	pthread_rwlock_unlock(gate(c, f->file_id));
	cfile_put(c, cf);
	return rc;
}

/* ---- fsync ---------------------------------------------------------------- */

/* Every block @cf has cached, DRAM and SSD (an fsync after more writes
 * than PENDING_MAX, a migration). Gate held: exclusive, every block; shared,
 * at least those cached when it began. 0 or -ENOMEM. */
int hy_cache_fsync_all_blocks(struct hy_cache *c, struct cfile *cf, uint64_t **out, size_t *n)
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

int hy_cache_fsync(struct hy_cache *c, const struct hy_cache_file *f, uint64_t *token)
{
	return hy_cache_fsync_file(c, f, token, false);
}

/* @journal_all: every dirty block is journaled, however many (close, when
 * home cannot take them). */
int hy_cache_fsync_file(struct hy_cache *c, const struct hy_cache_file *f, uint64_t *token,
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
	rc = hy_cache_io_ensure_fresh(c, cf, f);
	if (rc < 0 || !atomic_load(&cf->dirty))
		goto out;
	/* many dirty blocks (a file written whole, then fsync'd) go home in
	 * order, one sync there (the caller's), cheaper than a journal record
	 * each and the cleaner's writes later; a few are journaled, so an
	 * fsync after small random writes costs one store sync */
	if (atomic_load(&cf->dirty) > FSYNC_JOURNAL_MAX && !journal_all) {
		rc = hy_cache_leave_settle_range(c, cf, f, 0, UINT64_MAX, true, false);
		if (rc == 0)
			pending_clear(c, cf);
		goto out;
	}
	/* the blocks written since the last fsync (or, when they were too
	 * many to keep, every block the file has cached) */
	if (!cf->pending_overflow) {
		if (cf->writes) {
			blocks = cf->writes->pending;
			nblocks = cf->writes->npending;
			cf->writes->pending = NULL;
			cf->writes->npending = cf->writes->pending_cap = 0;
		}
	} else {
		nblocks = 0;
		rc = hy_cache_fsync_all_blocks(c, cf, &blocks, &nblocks);
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
	rc = below_getattr(c, f, &attr);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < nblocks && rc == 0; i++) {
		struct hy_cache_entry e;
		struct held h;

		/* dirty DRAM blocks into the store; those with no line go home */
		hy_cache_io_find_block(c, f->file_id, blocks[i], false, &h);
		if (h.where == 1 && h.dirty) {
			rc = hy_cache_front_to_store(c, cf, h.slot_or_line, HY_POLICY_COLD);
			if (rc == 0) {
				home = true;
				rc = hy_cache_leave_settle_range(c, cf, f, blocks[i], 1, true,
								 false);
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
			hy_cache_lines_set_tail(c, e.line, tail);
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
		int why = c->cfg.ids_durable(c->cfg.ids_durable_arg, f->file_id);

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
			rc = hy_cache_leave_settle_range(c, cf, f, 0, UINT64_MAX, true, false);
			if (rc < 0) {
				hy_log(LOG_ERR,
				       "cache: file %" PRIu64 ": its id cannot be made durable "
				       "(%s) and its dirty blocks cannot go home: %s",
				       f->file_id, strerror(-why), strerror(-rc));
				goto out;
			}
			pending_clear(c, cf);
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
			rc = hy_cache_journal_records(c, recs, nrecs);
		}
	}
	if (rc == 0 && home)
		rc = below_sync(c, f);
out:
	if (rc < 0) {
		/* nothing of this fsync counts: its records are not all there,
		 * and the next fsync looks at every block the file has */
		pthread_mutex_lock(&c->lines_lock);
		for (size_t i = 0; i < nrecs; i++)
			c->lines[recs[i].line].flags &= (uint8_t)~LS_JOURNALED;
		pthread_mutex_unlock(&c->lines_lock);
		pending_clear(c, cf);
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
	/* a closed file's write state is 400 bytes that a tree of files
	 * written once would keep for nothing (issue 19) */
	pthread_rwlock_wrlock(gate(c, f->file_id));
	cfile_writes_release(c, cf);
	pthread_rwlock_unlock(gate(c, f->file_id));
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
	hy_cache_pin_forget(c, file_id); /* the rule was the file's, not its id's next owner's */
	cf = cfile_get(c, file_id, false);
	if (!cf)
		return 0;
	pthread_rwlock_wrlock(gate(c, file_id));
	hy_cache_kept_gone(c, cf);
	if (atomic_load(&cf->blocks)) {
		struct hy_cache_file f = {file_id, cf->home};

		rc = hy_cache_leave_settle_range(c, cf, &f, 0, UINT64_MAX, false, true);
		if (rc < 0)
			hy_log(LOG_WARNING,
			       "cache: file %" PRIu64 ", removed: its blocks cannot be dropped: %s",
			       file_id, strerror(-rc));
		else
			atomic_fetch_add(&c->st.forgotten_files, 1);
	}
	if (rc >= 0 && cf->home >= 0) {
		below_put(c, cf->home);
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
	/* kept lines are checked before the change moves the ctime they were
	 * kept with */
	if (cf && atomic_load(&cf->unverified) && below_getattr(c, f, &a) == 0)
		hy_cache_kept_verify(c, cf, f, &a);
	if (cf)
		fresh = atomic_load(&cf->blocks) && !atomic_load(&cf->unverified) &&
			below_getattr(c, f, &a) == 0 &&
			hy_stamp_check(atomic_load(&cf->stamp), 0, &a) == HY_STAMP_FRESH;
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
		hy_cache_io_refresh_stamp(c, cf, f);
	pthread_rwlock_unlock(gate(c, f->file_id));
	cfile_put(c, cf);
}
