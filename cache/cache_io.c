/* cache_io.c - the cache's read and write paths: stale copies dropped,
 * sectors read from and written to the path below, a read from DRAM, the
 * SSD or below, a write by its policy; see include/hybridfs/cache.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hybridfs/log.h"

#include "hybridfs/stamp.h"

#include "cache_internal.h"

/* ---- stale copies ---------------------------------------------------------- */

/* Whether @cf's blocks are current for the home file's attributes @a:
 * its ctime is the stamp, and it is not smaller than then. The size
 * catches a truncation within the ctime's granularity (a clock tick),
 * such as an O_TRUNC open right after a write. */
bool hy_cache_io_fresh_for(const struct cfile *cf, const struct hy_device_attr *a)
{
	return atomic_load(&cf->blocks) == 0 ||
	       (!atomic_load(&cf->unverified) &&
		hy_stamp_check(atomic_load(&cf->stamp), atomic_load(&cf->size), a) ==
			HY_STAMP_FRESH);
}

static void drop_stale(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f);

/* Gate exclusive: drops what a change the cache did not see made stale:
 * everything after a ctime change, the part past the end after a
 * truncation (dirty sectors before the end go home first). */
static void make_fresh(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
		       const struct hy_device_attr *a)
{
	/* lines a mount before kept: adopted or dropped at their first use */
	if (atomic_load(&cf->unverified))
		hy_cache_kept_verify(c, cf, f, a);
	if (hy_cache_io_fresh_for(cf, a))
		return;
	if (hy_stamp_check(atomic_load(&cf->stamp), atomic_load(&cf->size), a) ==
	    HY_STAMP_CHANGED) {
		drop_stale(c, cf, f);
	} else {
		int rc = hy_cache_leave_drop_range(c, cf, f, a->size / LINE, UINT64_MAX, true);

		if (rc < 0)
			hy_log(LOG_ERR,
			       "cache: file %" PRIu64 " was truncated; dropping its "
			       "blocks past the end failed: %s",
			       f->file_id, strerror(-rc));
	}
	hy_cache_io_refresh_stamp(c, cf, f);
}

/* make_fresh() with the home file's attributes now. Gate exclusive. */
int hy_cache_io_ensure_fresh(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f)
{
	struct hy_device_attr a;
	int rc;

	if (atomic_load(&cf->blocks) == 0)
		return 0;
	rc = below_getattr(c, f, &a);
	if (rc == 0)
		make_fresh(c, cf, f, &a);
	return rc;
}

/* The file changed outside the mount: its blocks go (their dirty sectors
 * home first, within its size). Gate exclusive. */
static void drop_stale(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f)
{
	int rc = hy_cache_leave_drop_range(c, cf, f, 0, UINT64_MAX, true);

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
void hy_cache_io_refresh_stamp(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f)
{
	struct hy_device_attr a;

	if (below_getattr(c, f, &a) == 0) {
		atomic_store(&cf->stamp, a.stamp);
		atomic_store(&cf->size, a.size);
		atomic_store(&cf->mtime, a.mtime_ns);
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
		r = below_read(c, f, buf + s * SECTOR, (size_t)(e - s + 1) * SECTOR,
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
void hy_cache_io_keep_mtime(struct hy_cache *c, const struct hy_cache_file *f,
			    const struct hy_device_attr *before)
{
	int rc;

	if (before->mtime_ns < 0)
		return;
	rc = below_set_mtime(c, f, before->mtime_ns);
	if (rc < 0 && rc != -EOPNOTSUPP)
		hy_log(LOG_WARNING,
		       "cache: file %" PRIu64 ": cannot keep its modification time after its "
		       "blocks went home: %s",
		       f->file_id, strerror(-rc));
}

/* Writes the sectors of @mask of @buf (block @block's line) home, clipped
 * to @size. 0 or a negative errno. */
int hy_cache_io_write_home(struct hy_cache *c, const struct hy_cache_file *f, uint64_t block,
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
			r = below_write(c, f, buf + s * SECTOR, (size_t)(end - at), (off_t)at);
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

/* Finds @block of @file_id, counting an access (@touch). */
void hy_cache_io_find_block(struct hy_cache *c, uint64_t file_id, uint64_t block, bool touch,
			    struct held *h)
{
	struct front *fr = &c->front;
	struct hy_cache_entry e;
	uint32_t s;

	memset(h, 0, sizeof(*h));
	if (fr->nslots) {
		pthread_mutex_lock(&fr->lock);
		s = hy_cache_front_find(fr, file_id, block);
		if (s != NONE) {
			h->where = 1;
			h->slot_or_line = s;
			h->valid = fr->slots[s].valid;
			h->dirty = fr->slots[s].dirty;
			if (touch)
				hy_cache_front_touch(fr, s);
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
int hy_cache_io_copy_held(struct hy_cache *c, const struct held *h, uint8_t mask,
			  unsigned char *line)
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
enum hy_policy_queue hy_cache_io_queue_for_hint(uint8_t admit, uint8_t evict, double heat,
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
void hy_cache_io_fill_block(struct hy_cache *c, struct cfile *cf, uint64_t block, uint8_t valid,
			    const unsigned char *line, const struct hy_cache_hint *hint)
{
	struct front *fr = &c->front;
	uint64_t file_id = cf->entry.file_id;

	if (!valid)
		return;
	/* a pinned file's blocks go to the store at once: not through the
	 * front buffer, whose heat filter would keep a block read once out */
	if (fr->nslots && atomic_load(&cf->rule) != HY_RULE_PIN) {
		uint32_t s;

		bool full;

		pthread_mutex_lock(&fr->lock);
		s = hy_cache_front_add(c, file_id, block);
		if (s != NONE) {
			memcpy(slot_data(fr, s), line, LINE);
			fr->slots[s].valid = valid;
			slot_set_hint(&fr->slots[s], hint);
			atomic_fetch_add(&cf->blocks, 1);
			atomic_fetch_add(&cf->in_front, 1);
		}
		/* not another reader's copy already there: no slot was free */
		full = s == NONE && fr->free_head == NONE &&
		       hy_cache_front_find(fr, file_id, block) == NONE;
		pthread_mutex_unlock(&fr->lock);
		if (full)
			hy_cache_pass(c, HY_CACHE_PASS_NO_ROOM, 1);
		return;
	}
	{
		bool admit;
		int64_t l;

		pthread_mutex_lock(&c->lines_lock);
		admit = atomic_load(&cf->rule) == HY_RULE_PIN ||
			hy_policy_admit(c->policy, file_id * 0x9e3779b97f4a7c15ull ^ block);
		hy_cache_lines_accessed(c);
		pthread_mutex_unlock(&c->lines_lock);
		if (!admit) {
			hy_cache_pass(c, HY_CACHE_PASS_POLICY, 1);
			return;
		}
		l = hy_cache_lines_alloc(c, file_id, false);
		if (l < 0) {
			hy_cache_pass(c, HY_CACHE_PASS_NO_ROOM, 1);
			return;
		}
		if (hy_cache_lines_store_write(c, (uint32_t)l, valid, line) < 0) {
			hy_cache_lines_give_back(c, (uint32_t)l);
			hy_cache_pass(c, HY_CACHE_PASS_NO_ROOM, 1);
			return;
		}
		hy_cache_lines_commit(
			c, cf, (uint32_t)l, block, valid, 0,
			hint ? hy_cache_io_queue_for_hint(hint->admit, hint->evict, -1, 0)
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
	r = below_read(c, f, run, len, (off_t)(b0 * LINE));
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

		hy_cache_io_find_block(c, f->file_id, b, asked, &h);
		if (h.where && !asked)
			continue; /* read ahead for its line, but cached already */
		if (h.where) {
			rc = hy_cache_io_copy_held(c, &h, HY_CACHE_ALL_SECTORS, line);
			if (rc < 0) {
				free(run);
				return rc;
			}
			if (h.where == 2)
				hy_cache_lines_hit(c, h.slot_or_line);
		} else {
			uint8_t valid = 0;

			atomic_fetch_add(asked ? &c->st.read_misses : &c->st.line_prefetched, 1);
			if (have > LINE)
				have = LINE;
			for (int s = 0; s < HY_CACHE_SECTORS && (uint64_t)s * SECTOR < have; s++)
				valid |= (uint8_t)(1u << s);
			if (hint && hint->admit == HY_ADMIT_BYPASS)
				hy_cache_pass(c,
					      atomic_load(&cf->rule) == HY_RULE_EXCLUDE
						      ? HY_CACHE_PASS_EXCLUDED
						      : HY_CACHE_PASS_CLASS,
					      1);
			else
				hy_cache_io_fill_block(c, cf, b, valid, line, hint);
		}
		if (asked)
			memcpy(out + (from - off), line + (from - b * LINE), (size_t)(to - from));
	}
	free(run);
	return 0;
}

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
	struct hy_cache_hint pinned_hint; /* a pinned or excluded file's admission */
	struct cfile *cf;
	ssize_t rc = 0;

	if (size == 0 || off < 0 || !f->file_id)
		return below_read(c, f, buf, size, off);
	cf = cfile_get(c, f->file_id, true);
	if (!cf)
		return below_read(c, f, buf, size, off);
	hint = hy_cache_pin_hint(c, cf, hint, &pinned_hint);
	hy_cache_lines_note_use(c, cf);
	if (hint)
		hy_cache_reconfig_file(c, cf, f, hint, -1);
	pthread_rwlock_rdlock(gate(c, f->file_id));
	rc = below_getattr(c, f, &a);
	if (rc == 0 && !hy_cache_io_fresh_for(cf, &a)) {
		pthread_rwlock_unlock(gate(c, f->file_id));
		pthread_rwlock_wrlock(gate(c, f->file_id));
		rc = below_getattr(c, f, &a);
		if (rc == 0)
			make_fresh(c, cf, f, &a);
		pthread_rwlock_unlock(gate(c, f->file_id));
		pthread_rwlock_rdlock(gate(c, f->file_id));
		rc = below_getattr(c, f, &a);
	}
	if (rc < 0)
		goto out;
	if (atomic_load(&cf->blocks) == 0) {
		atomic_store(&cf->unverified, false); /* its kept lines all left */
		atomic_store(&cf->stamp, a.stamp);
		atomic_store(&cf->size, a.size);
		atomic_store(&cf->mtime, a.mtime_ns);
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
		hy_cache_io_find_block(c, f->file_id, b, false, &h);
		if (h.where && (h.valid & touched) == touched) {
			if (run != UINT64_MAX) {
				uint64_t r0 = run, r1 = b;

				line_extend(hint, first, last, nblocks, &r0, &r1);
				rc = read_run(c, cf, f, r0, r1, buf, (uint64_t)off, end, hint);
				run = UINT64_MAX;
				if (rc < 0)
					break;
			}
			hy_cache_io_find_block(c, f->file_id, b, true, &h);
			rc = hy_cache_io_copy_held(c, &h, touched, line);
			if (rc < 0)
				break;
			if (h.where == 1) {
				atomic_fetch_add(&c->st.read_hits_dram, 1);
			} else {
				atomic_fetch_add(&c->st.read_hits_ssd, 1);
				hy_cache_lines_hit(c, h.slot_or_line);
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
	hy_cache_io_find_block(c, f->file_id, block, true, &h);
	if (!h.where && !allocate)
		return 1; /* write-around: nothing cached to keep current */
	/* the sectors touched in part: their old bytes from the cache or below */
	if (partial) {
		uint8_t cached = h.where ? (uint8_t)(partial & h.valid) : 0;
		/* the request's descriptor may be write-only: the cache's own
		 * object of the file reads */
		struct hy_cache_file below = {f->file_id, cf->home >= 0 ? cf->home : f->object};

		rc = hy_cache_io_copy_held(c, &h, cached, line);
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
			pending_add(c, cf, block);
		note_dirty(c, cf, before, (uint8_t)(before | (dirty ? touched : 0)));
		atomic_fetch_add(&c->st.write_hits_dram, 1);
		return 1;
	}
	if (h.where == 2) {
		struct hy_cache_entry e = {0};

		rc = hy_cache_lines_store_write(c, h.slot_or_line, touched, line);
		if (rc < 0) {
			/* the store refused the line's new data (the sectors there
			 * may be old or new now): its dirty sectors go home and it
			 * leaves the cache; then this request goes home over them
			 * (again, for write-through: the settling may have put
			 * older sectors over what it wrote first). Found by
			 * faults.sh (enospc-some): the write failed with the
			 * store's error, and a first fix that left the request to
			 * the caller lost write-through data under older sectors. */
			int settled = hy_cache_leave_settle_range(c, cf, f, block, 1, true, true);
			ssize_t r;

			hy_cache_lines_store_refused(c, NONE, rc);
			if (settled < 0)
				return settled;
			home_changed(cf);
			r = below_write(c, f, seg, len, (off_t)(block * LINE + at));
			if (r < 0)
				return (int)r;
			if ((size_t)r != len)
				return -EIO;
			atomic_fetch_add(&c->st.bypassed, 1);
			hy_cache_pass(c, HY_CACHE_PASS_NO_ROOM, 1);
			return 1;
		}
		rc = hy_cache_index_update_masks(c->index, f->file_id, block, touched,
						 dirty ? touched : 0, 0, &e);
		if (rc < 0)
			return rc;
		note_dirty(c, cf, h.dirty, e.dirty);
		if (e.dirty && (hy_cache_lines_set_dirty(c, h.slot_or_line, true) || !h.dirty))
			pending_add(c, cf, block); /* its record (if any) is old now */
		hy_cache_lines_hit(c, h.slot_or_line);
		atomic_fetch_add(&c->st.write_hits_ssd, 1);
		return 1;
	}
	atomic_fetch_add(&c->st.write_misses, 1);
	if (fr->nslots) {
		uint32_t s;

		pthread_mutex_lock(&fr->lock);
		s = hy_cache_front_add(c, f->file_id, block);
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
				pending_add(c, cf, block);
			return 1;
		}
	}
	/* no front buffer, or it is full: straight to the store */
	{
		int64_t l = hy_cache_lines_alloc(c, f->file_id, true);

		if (l < 0)
			return 0;
		rc = hy_cache_lines_store_write(c, (uint32_t)l, touched, line);
		if (rc < 0) {
			hy_cache_lines_store_refused(c, (uint32_t)l, rc);
			return 0; /* home instead */
		}
		rc = hy_cache_lines_commit(
			c, cf, (uint32_t)l, block, touched, dirty ? touched : 0,
			hint ? hy_cache_io_queue_for_hint(hint->admit, hint->evict, -1, 0)
			     : HY_POLICY_COLD);
		if (rc == 0 && dirty)
			pending_add(c, cf, block);
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
static uint64_t stream_run(struct hy_cache *c, struct cfile *cf, uint64_t off, uint64_t size)
{
	struct cfile_writes *w = cfile_writes(c, cf);
	struct stream *st, *s = NULL;
	uint64_t end = off + size;

	if (!w)
		return size; /* no memory to follow it: a stream of this write */
	st = w->streams;

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
	struct hy_cache_hint pinned_hint; /* a pinned or excluded file's admission */
	struct hy_device_attr a;
	struct cfile *cf;
	uint64_t end;
	bool bypassed = false; /* counted as passed by its class already */
	ssize_t rc;

	if (size == 0 || off < 0 || !f->file_id)
		return below_write(c, f, buf, size, off);
	cf = cfile_get(c, f->file_id, true);
	if (!cf)
		return below_write(c, f, buf, size, off);
	hint = hy_cache_pin_hint(c, cf, hint, &pinned_hint);
	hy_cache_lines_note_use(c, cf);
	if (hint) {
		if (hint->write >= HY_CACHE_WRITE_BACK && hint->write <= HY_CACHE_WRITE_AROUND)
			wp = (enum hy_cache_write_policy)hint->write;
		if (hint->seq_cutoff != HY_WORKLOAD_CUTOFF_MOUNT)
			cutoff = hint->seq_cutoff;
		hy_cache_reconfig_file(c, cf, f, hint, (int)wp);
		if (hint->admit == HY_ADMIT_BYPASS && wp != HY_CACHE_WRITE_AROUND) {
			wp = HY_CACHE_WRITE_AROUND;
			hy_cache_pass(c,
				      atomic_load(&cf->rule) == HY_RULE_EXCLUDE
					      ? HY_CACHE_PASS_EXCLUDED
					      : HY_CACHE_PASS_CLASS,
				      hy_cache_blocks_of((uint64_t)off, size));
			bypassed = true;
		}
	}
	if (wp == HY_CACHE_WRITE_AROUND && !bypassed)
		hy_cache_pass(c, HY_CACHE_PASS_WRITE_AROUND,
			      hy_cache_blocks_of((uint64_t)off, size));
	pthread_rwlock_wrlock(gate(c, f->file_id));
	atomic_fetch_add(&cf->generation, 1);
	rc = below_getattr(c, f, &a);
	if (rc < 0)
		goto out;
	make_fresh(c, cf, f, &a);
	if (atomic_load(&cf->blocks) == 0) {
		atomic_store(&cf->unverified, false); /* its kept lines all left */
		atomic_store(&cf->stamp, a.stamp);
		atomic_store(&cf->size, a.size);
		atomic_store(&cf->mtime, a.mtime_ns);
	}
	/* bcache's sequential cutoff, per file (the gate orders its writes) */
	if (cutoff && stream_run(c, cf, (uint64_t)off, size) > cutoff &&
	    wp != HY_CACHE_WRITE_AROUND) {
		wp = HY_CACHE_WRITE_AROUND;
		hy_cache_pass(c, HY_CACHE_PASS_CUTOFF, hy_cache_blocks_of((uint64_t)off, size));
	}
	end = (uint64_t)off + size;
	/* a write past the home file's end goes home now, with its data: the
	 * size at home is what every stat sees and what a kill -9 leaves, so
	 * it may only grow over bytes that are there (an extension with the
	 * data only in the cache reads as zeros after a crash); it is
	 * written once, as write-through writes, and cached clean. Decided
	 * before a way home is held: the indirector holds few objects
	 * (HY_INDIRECTOR_HELD_OBJECTS), and a file that never has a dirty
	 * block must not take one */
	if (wp == HY_CACHE_WRITE_BACK && end > a.size)
		wp = HY_CACHE_WRITE_THROUGH;
	if (wp == HY_CACHE_WRITE_BACK && cf->home < 0 && below_hold(c, f, &cf->home) < 0) {
		cf->home = -1;
		wp = HY_CACHE_WRITE_THROUGH; /* no way home later: write through now */
	}
	if (wp != HY_CACHE_WRITE_BACK) {
		home_changed(cf);
		rc = below_write(c, f, buf, size, off);
		if (rc <= 0)
			goto out;
		size = (size_t)rc;
		end = (uint64_t)off + size;
	} else {
		/* room at home first: a plain directory fails a write its disk
		 * cannot hold, and a dirty block home cannot take would be stuck
		 * (the cleaner, the unmount and the next mount would all fail) */
		rc = below_reserve(c, f, (uint64_t)off, size);
		if (rc == -ENOSPC || rc == -EDQUOT || rc == -EFBIG)
			goto out;
		/* the home file has the time a plain write gives it */
		rc = below_set_mtime(c, f, -1);
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
		    (hy_cache_io_find_block(c, f->file_id, b, false, &h), !h.dirty)) {
			/* home has the write; a clean copy the cache could not
			 * update must not be read again (a dirty one, of a
			 * write-back file past its cutoff, fails the write) */
			if (hy_cache_leave_drop_range(c, cf, f, b, 1, false) < 0)
				rc = w;
		} else if (w < 0) {
			rc = w;
		} else if (w == 0 && wp == HY_CACHE_WRITE_BACK) {
			/* no room anywhere: this block goes home now */
			ssize_t r;

			home_changed(cf);
			r = below_write(c, f, seg, (size_t)(to - from), (off_t)from);

			atomic_fetch_add(&c->st.bypassed, 1);
			hy_cache_pass(c, HY_CACHE_PASS_NO_ROOM, 1);
			if (r < 0)
				rc = r;
			else if ((uint64_t)r != to - from)
				rc = -EIO;
		} else if (w == 0 && wp == HY_CACHE_WRITE_THROUGH) {
			/* home has it; no room to keep a copy */
			hy_cache_pass(c, HY_CACHE_PASS_NO_ROOM, 1);
		}
	}
	if (rc == 0)
		rc = (ssize_t)size;
	hy_cache_io_refresh_stamp(c, cf, f);
out:
	pthread_rwlock_unlock(gate(c, f->file_id));
	cfile_put(c, cf);
	return rc;
}
