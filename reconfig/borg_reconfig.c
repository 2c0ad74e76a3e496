/* borg_reconfig.c - BORG's reconfigurator: the copier (ranges read home,
 * written to the BOPT, committed in durable batches), the drop of extents
 * a plan does not keep, and the run of a reorganization in its thread; see
 * include/hybridfs/borg.h (hy_borg_reorganize) and borg_internal.h. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/bopt.h"
#include "hybridfs/borg.h"
#include "hybridfs/device.h"
#include "hybridfs/fault.h"
#include "hybridfs/engine.h"
#include "hybridfs/gain.h"
#include "hybridfs/indirector.h"
#include "hybridfs/log.h"
#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"
#include "hybridfs/ondisk.h"

#include "borg_internal.h"

/* A copy unit: at most this many blocks are read and written at once. */
#define CHUNK_BLOCKS 256
/* Copies made durable with one fdatasync of the BOPT, then committed: a
 * batch ends at this many bytes, or this long after it began (so a slow,
 * rate-limited copy still commits as it goes). */
#define BATCH_BYTES   (4u << 20)
#define BATCH_SECONDS 0.5
/* How long the copy sleeps when the mount was busy during the last chunk. */
#define YIELD_NS 2000000

/* ---- the reconfigurator --------------------------------------------- */

/* A range read and written to the BOPT, waiting for its commit. */
struct copier {
	struct hy_borg *b;
	struct search files;
	size_t open; /* home files open now (their wanted.fd) */
	/* copies in the BOPT waiting for their commit; each one's object is
	 * its home file's descriptor, borrowed from the open-file cache */
	struct hy_indirector_copy *pending;
	bool *committed; /* as many as pending */
	size_t npending, cap;
	uint64_t batch_bytes;
	struct timespec batch_started;
	unsigned char *buf;
	/* pacing */
	struct timespec t0;
	uint64_t bytes;
	uint64_t activity;
};

static void progress_add(struct hy_borg *b, uint64_t done, uint64_t copied, uint64_t skipped_ranges,
			 uint64_t skipped_blocks)
{
	pthread_mutex_lock(&b->lock);
	b->progress.done_blocks += done;
	b->progress.copied_blocks += copied;
	b->progress.skipped_ranges += skipped_ranges;
	b->progress.skipped_blocks += skipped_blocks;
	pthread_mutex_unlock(&b->lock);
}

/* Commits the batch: the BOPT made durable once, then the indirector puts
 * each range in the map if nothing changed its file since it was read. */
static int commit_batch(struct copier *c, char *why, size_t why_size)
{
	struct hy_borg *b = c->b;
	int rc;

	if (c->npending == 0)
		return 0;
	rc = hy_device_sync(b->bopt->device, 0, true);
	if (rc) {
		snprintf(why, why_size, "bopt: \"%s\": cannot make the copies durable: %s",
			 b->bopt->path, strerror(-rc));
		return rc;
	}
	rc = hy_indirector_copy_commit(hy_engine_indirector(b->config.engine), c->pending,
				       c->npending, c->committed);
	if (rc) {
		snprintf(why, why_size, "the map journal failed: %s", strerror(-rc));
		return rc;
	}
	for (size_t i = 0; i < c->npending; i++) {
		if (c->committed[i])
			progress_add(b, 0, c->pending[i].nblocks, 0, 0);
		else
			progress_add(b, 0, 0, 1, c->pending[i].nblocks);
	}
	c->npending = 0;
	c->batch_bytes = 0;
	return 0;
}

/* Keeps the copy under the rate, and out of the way of the mount's users. */
static void pace(struct copier *c, uint64_t bytes)
{
	struct hy_borg *b = c->b;
	uint64_t activity;

	c->bytes += bytes;
	if (b->config.rate) {
		double due = (double)c->bytes / (double)b->config.rate, now = seconds_since(&c->t0);

		if (due > now) {
			double wait = due - now;
			struct timespec ts = {(time_t)wait,
					      (long)((wait - (double)(time_t)wait) * 1e9)};

			nanosleep(&ts, NULL);
		}
	}
	if (b->config.activity) {
		activity = b->config.activity(b->config.activity_ctx);
		if (activity != c->activity) {
			struct timespec ts = {0, YIELD_NS};

			c->activity = activity;
			nanosleep(&ts, NULL);
		}
	}
}

/* Home files stay open while their copies wait for the commit (which
 * compares their ctime); at most MAX_OPEN at once, then the batch is
 * committed and they are closed. Returns the descriptor, -ENOENT when the
 * file is gone, or the commit's error. */
#define MAX_OPEN 64

static int home_fd(struct copier *c, uint64_t file_id, char *why, size_t why_size)
{
	struct wanted *w = hy_borg_homes_wanted_by_id(&c->files, file_id);
	int fd = -1, rc;

	if (!w)
		return -ENOENT;
	if (w->fd >= 0)
		return w->fd;
	if (c->open == MAX_OPEN) {
		rc = commit_batch(c, why, why_size);
		if (rc)
			return rc;
		for (size_t i = 0; i < c->files.n; i++) {
			if (c->files.w[i].fd >= 0) {
				close(c->files.w[i].fd);
				c->files.w[i].fd = -1;
			}
		}
		c->open = 0;
	}
	rc = hy_borg_homes_open_home(&c->b->place, w, O_RDONLY, &fd);
	if (rc)
		return -ENOENT;
	w->fd = fd;
	c->open++;
	return fd;
}

/* The 4 KiB blocks that hold @st's data, the last partial one counted. */
static uint64_t file_blocks(const struct stat *st)
{
	return ((uint64_t)st->st_size + BLOCK - 1) / BLOCK;
}

/* What a read of @len bytes from block @block gives while the file is
 * @st's size: short in the file's last block. */
static size_t copy_length(const struct stat *st, uint64_t block, size_t len)
{
	uint64_t at = block * BLOCK, size = (uint64_t)st->st_size;

	return at + len <= size ? len : (size_t)(size - at);
}

/* Reads one chunk home and writes it to the BOPT; queues its commit. */
static int copy_chunk(struct copier *c, uint64_t file_id, uint64_t block, uint32_t nblocks,
		      uint64_t bopt_block, char *why, size_t why_size)
{
	struct hy_borg *b = c->b;
	struct hy_indirector *ind = hy_engine_indirector(b->config.engine);
	struct hy_indirector_copy p = {.file_id = file_id,
				       .object = -1,
				       .block = block,
				       .nblocks = nblocks,
				       .bopt_block = bopt_block};
	size_t len = (size_t)nblocks * BLOCK;
	struct stat st;
	ssize_t n;
	int fd, rc;

	/* BOPT blocks still held (an extent written through the mount and not
	 * home yet stays where it is) are never written over: the data there
	 * is that file's only current copy */
	if (hy_map_bopt_in_use(b->map, bopt_block, nblocks)) {
		progress_add(b, nblocks, 0, 1, nblocks);
		return 0;
	}
	fd = home_fd(c, file_id, why, why_size);
	if (fd < 0 && fd != -ENOENT)
		return fd;
	if (fd < 0) {
		progress_add(b, nblocks, 0, 1, nblocks);
		return 0; /* gone, or another file now */
	}
	/* the file's blocks up to its end, the last partial one included (its
	 * BOPT block holds zeros after the end); none past it */
	if (fstat(fd, &st) != 0 || file_blocks(&st) <= block) {
		progress_add(b, nblocks, 0, 1, nblocks);
		return 0;
	}
	if (file_blocks(&st) < block + nblocks) {
		uint32_t keep = (uint32_t)(file_blocks(&st) - block);

		progress_add(b, nblocks - keep, 0, 1, nblocks - keep);
		nblocks = keep;
		p.nblocks = keep;
		len = (size_t)nblocks * BLOCK;
	}
	/* what the commit will compare with, taken before the read */
	p.object = fd;
	rc = hy_indirector_copy_begin(ind, &p);
	if (rc) {
		progress_add(b, nblocks, 0, 1, nblocks);
		return 0;
	}
	n = hy_indirector_copy_read(ind, &p, c->buf);
	if (n != (ssize_t)copy_length(&st, block, len)) {
		progress_add(b, nblocks, 0, 1, nblocks); /* shrank meanwhile */
		return 0;
	}
	n = hy_device_write(b->bopt->device, 0, c->buf, len,
			    (off_t)hy_bopt_read_offset(b->bopt, bopt_block));
	if (n != (ssize_t)len) {
		rc = n < 0 ? (int)n : -EIO;
		snprintf(why, why_size, "bopt: \"%s\": cannot write block %" PRIu64 ": %s",
			 b->bopt->path, bopt_block, strerror(-rc));
		return rc;
	}
	if (c->npending == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct hy_indirector_copy *grown = realloc(c->pending, cap * sizeof(*grown));
		bool *flags;

		if (!grown) {
			snprintf(why, why_size, "out of memory");
			return -ENOMEM;
		}
		c->pending = grown;
		flags = realloc(c->committed, cap * sizeof(*flags));
		if (!flags) {
			snprintf(why, why_size, "out of memory");
			return -ENOMEM;
		}
		c->committed = flags;
		c->cap = cap;
	}
	/* fault.h: the chunk is in the BOPT, not yet in the map */
	hy_fault_point("reorg.copy.mid");
	if (c->npending == 0)
		clock_gettime(CLOCK_MONOTONIC, &c->batch_started);
	c->pending[c->npending++] = p;
	c->batch_bytes += len;
	progress_add(b, nblocks, 0, 0, 0);
	pace(c, len);
	if (c->batch_bytes >= BATCH_BYTES || seconds_since(&c->batch_started) >= BATCH_SECONDS)
		return commit_batch(c, why, why_size);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int copy_all(struct hy_borg *b, const struct hy_reorganize_diff *diff, char *why,
		    size_t why_size)
{
	struct copier c = {.b = b};
	uint64_t *ids = malloc((diff->ncopy ? diff->ncopy : 1) * sizeof(*ids));
	size_t nids = 0;
	int rc = 0;

	c.buf = malloc((size_t)CHUNK_BLOCKS * BLOCK);
	if (!ids || !c.buf) {
		free(ids);
		free(c.buf);
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < diff->ncopy; i++)
		ids[nids++] = diff->copy[i].file_id;
	qsort(ids, nids, sizeof(*ids), cmp_u64);
	{
		size_t u = 0;

		for (size_t i = 0; i < nids; i++)
			if (u == 0 || ids[u - 1] != ids[i])
				ids[u++] = ids[i];
		nids = u;
	}
	rc = hy_borg_homes_find_files(&b->place, b->db, ids, nids, &c.files, why, why_size);
	free(ids);
	clock_gettime(CLOCK_MONOTONIC, &c.t0);
	if (b->config.activity)
		c.activity = b->config.activity(b->config.activity_ctx);
	for (size_t i = 0; i < diff->ncopy && rc == 0; i++) {
		const struct hy_reorganize_range *r = &diff->copy[i];

		for (uint64_t at = 0; at < r->nblocks && rc == 0; at += CHUNK_BLOCKS) {
			uint64_t n =
				r->nblocks - at < CHUNK_BLOCKS ? r->nblocks - at : CHUNK_BLOCKS;

			if (hy_borg_progress_stopping(b)) {
				rc = -ECANCELED;
				snprintf(why, why_size,
					 "stopped: the filesystem is being unmounted");
				break;
			}
			rc = copy_chunk(&c, r->file_id, r->block + at, (uint32_t)n,
					r->bopt_block + at, why, why_size);
		}
	}
	/* what was copied is committed even when stopped */
	if (rc == 0 || rc == -ECANCELED) {
		char more[256];
		int crc = commit_batch(&c, more, sizeof(more));

		if (crc && rc == 0) {
			rc = crc;
			snprintf(why, why_size, "%s", more);
		}
	}
	hy_borg_homes_search_free(&c.files);
	free(c.pending);
	free(c.committed);
	free(c.buf);
	return rc;
}

/* Extents leaving the BOPT (or moving in it) are released, a gate stripe
 * at a time: under the stripe's gate, held exclusive, each clean piece is
 * journaled and released, and the records are made durable before the
 * gate is let go, so no change of those files can slip in between. Dirty
 * pieces (written through the mount, not home yet) stay where they are;
 * copies planned onto their BOPT blocks are then refused and skipped.
 * Then a barrier (every gate taken once) waits out reads that may still
 * use the old places. */
static int drop_all(struct hy_borg *b, const struct hy_reorganize_diff *diff, char *why,
		    size_t why_size)
{
	struct hy_indirector_range *ranges =
		malloc((diff->ndrop ? diff->ndrop : 1) * sizeof(*ranges));
	uint64_t kept_dirty = 0;
	int rc;

	if (!ranges) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < diff->ndrop; i++)
		ranges[i] = (struct hy_indirector_range){diff->drop[i].file_id, diff->drop[i].block,
							 diff->drop[i].nblocks};
	rc = hy_indirector_drop(hy_engine_indirector(b->config.engine), ranges, diff->ndrop,
				&kept_dirty);
	free(ranges);
	if (rc) {
		snprintf(why, why_size, "dropping extents from the map failed: %s", strerror(-rc));
		return rc;
	}
	if (kept_dirty) {
		hy_log(LOG_NOTICE,
		       "reorganize: %" PRIu64 " blocks written through the mount and not home yet "
		       "stay in the BOPT",
		       kept_dirty);
		pthread_mutex_lock(&b->lock);
		b->progress.dropped_blocks -= kept_dirty;
		b->progress.kept_blocks += kept_dirty;
		pthread_mutex_unlock(&b->lock);
	}
	return 0;
}

/* ---- what the plan would save ----------------------------------------- */

struct bopt_place {
	struct hy_borg *b;
	bool raw; /* a block device: its offsets are its addresses */
};

static int bopt_address(void *ctx, uint64_t bopt_block, uint64_t *out)
{
	struct bopt_place *bp = ctx;
	uint64_t offset = hy_bopt_read_offset(bp->b->bopt, bopt_block);

	if (bp->raw) {
		*out = offset;
		return 0;
	}
	/* an unwritten (preallocated) extent is placed: FIEMAP says where */
	return hy_ondisk_physical(bp->b->bopt->fd, offset, out);
}

/* The diff for a plan held back (every relocated block stays: kept, none
 * copied) or for "all home" (every one dropped). 0 or -ENOMEM. */
static int rewrite_diff(struct hy_reorganize_diff *diff, const struct hy_map_extent *current,
			size_t ncurrent, enum hy_gain_decision d)
{
	struct hy_reorganize_range *all = malloc((ncurrent ? ncurrent : 1) * sizeof(*all));
	uint64_t blocks = 0;

	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < ncurrent; i++) {
		all[i] = (struct hy_reorganize_range){current[i].file_id, current[i].block,
						      current[i].nblocks, current[i].bopt_block,
						      0.0};
		blocks += current[i].nblocks;
	}
	hy_reorganize_diff_free(diff);
	if (d == HY_GAIN_HOLD) {
		diff->keep = all, diff->nkeep = ncurrent, diff->keep_blocks = blocks;
	} else {
		diff->drop = all, diff->ndrop = ncurrent, diff->drop_blocks = blocks;
	}
	return 0;
}

/* Weighs the plan on a model of the disk (gain.h) and says what to carry
 * out: the diff as it is, nothing (held back), or every relocated block
 * home. Where the disk cannot be modelled (no size, the BOPT's place
 * unknown) the plan goes ahead, as before the estimate. */
static enum hy_gain_decision weigh(struct hy_borg *b, const struct hy_reorganize_plan *plan,
				   const struct hy_map_extent *current, size_t ncurrent,
				   const struct hy_reorganize_diff *diff,
				   struct hy_gain_estimate *e)
{
	struct bopt_place bp = {.b = b};
	struct hy_gain_place place = {.bopt_address = bopt_address, .ctx = &bp};
	struct stat home, bst;
	struct statvfs vfs;
	char why[512] = "";
	int rc;

	memset(e, 0, sizeof(*e));
	if (b->params.always)
		return HY_GAIN_GO; /* hybridctl reorganize --always */
	if (fstat(b->config.root_fd, &home) < 0 || fstat(b->bopt->fd, &bst) < 0 ||
	    fstatvfs(b->config.root_fd, &vfs) < 0)
		return HY_GAIN_GO;
	bp.raw = S_ISBLK(bst.st_mode);
	place.bopt_separate = bp.raw || bst.st_dev != home.st_dev;
	hy_devmodel_defaults(HY_DEVMODEL_HDD, &place.disk);
	place.disk.capacity = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	if (!place.disk.capacity)
		return HY_GAIN_GO;
	rc = hy_gain_estimate(b->db, plan->after, plan->last, current, ncurrent, diff, &place, e,
			      why, sizeof(why));
	if (rc < 0) {
		hy_log(LOG_WARNING,
		       "reorganize: the plan's gain cannot be weighed (%s): it goes ahead", why);
		return HY_GAIN_GO;
	}
	return hy_gain_decide(e);
}

/* ---- a reorganization's run ---------------------------------------- */

/* reorganize.h's step 2b asks the home files' sizes: found as the copy
 * finds them (their remembered paths, else a walk), each checked to be
 * the file the log saw. */
static int home_sizes(void *ctx, const uint64_t *ids, size_t n, uint64_t *sizes, char *why,
		      size_t why_size)
{
	struct hy_borg *b = ctx;
	struct search found = {0};
	int rc = hy_borg_homes_find_files(&b->place, b->db, ids, n, &found, why, why_size);

	for (size_t i = 0; i < n && rc == 0; i++) {
		struct wanted *w = hy_borg_homes_wanted_by_id(&found, ids[i]);
		struct stat st;
		int fd;

		if (hy_borg_homes_open_home(&b->place, w, O_RDONLY, &fd) != 0)
			continue; /* gone or not found: not known */
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			sizes[i] = (uint64_t)st.st_size;
		close(fd);
	}
	hy_borg_homes_search_free(&found);
	if (rc < 0) {
		/* the plan goes on as the planner made it */
		hy_log(LOG_WARNING,
		       "reorganize: the home files' sizes are not known (%s): "
		       "small files are planned as they were read",
		       why);
		for (size_t i = 0; i < n; i++)
			sizes[i] = UINT64_MAX;
	}
	return 0;
}

static int run(struct hy_borg *b, char *why, size_t why_size)
{
	struct hy_reorganize_plan plan;
	struct hy_reorganize_diff diff = {0};
	struct hy_map_extent *current = NULL;
	size_t ncurrent = 0;
	int rc;

	{
		struct hy_reorganize_params params = b->params;

		params.file_sizes = home_sizes;
		params.file_sizes_ctx = b;
		rc = hy_reorganize_make_plan(b->db, &params, &plan, why, why_size);
	}
	if (rc)
		return rc;
	if (plan.whole_files)
		hy_log(LOG_NOTICE,
		       "reorganize: plan %" PRIu64 ": %zu small files planned whole, each in "
		       "one piece (%" PRIu64 " blocks more)",
		       plan.generation, plan.whole_files, plan.whole_blocks);
	pthread_mutex_lock(&b->lock);
	b->progress.generation = plan.generation;
	b->progress.requests = plan.analyzer.requests;
	b->progress.vertices = plan.analyzer.vertices;
	b->progress.edges = plan.analyzer.edges;
	b->progress.cut_vertices = plan.analyzer.cut_vertices;
	b->progress.ranges = plan.count;
	b->progress.planned_blocks = plan.blocks;
	b->progress.phase = HY_BORG_DROPPING;
	pthread_mutex_unlock(&b->lock);

	/* blocks leaving the BOPT go home first if they are dirty: a flush
	 * now sends every dirty block home, so the drops below find clean
	 * ones (but for writes that come meanwhile: those stay in place) */
	{
		struct hy_map_stats stats;
		uint64_t synced;

		hy_map_get_stats(b->map, &stats);
		rc = stats.dirty_blocks ? hy_borg_flush(b, &synced, why, why_size) : 0;
		if (rc < 0)
			goto out;
	}
	rc = hy_map_snapshot(b->map, &current, &ncurrent);
	if (rc == 0)
		rc = hy_reorganize_diff(current, ncurrent, plan.ranges, plan.count, &diff);
	if (rc == 0) {
		struct hy_gain_estimate e;
		enum hy_gain_decision d = weigh(b, &plan, current, ncurrent, &diff, &e);

		pthread_mutex_lock(&b->lock);
		b->progress.gain_known = e.known;
		b->progress.model_home_ms = e.home_ms;
		b->progress.model_current_ms = e.current_ms;
		b->progress.model_planned_ms = e.planned_ms;
		b->progress.decision = e.known ? d : HY_GAIN_GO;
		pthread_mutex_unlock(&b->lock);
		if (e.known)
			hy_log(LOG_NOTICE,
			       "reorganize: plan %" PRIu64 ": the period's %" PRIu64
			       " reads on a model of the disk: %.0f ms with the plan, %.0f ms as "
			       "the disk is, %.0f ms with nothing relocated: %s",
			       plan.generation, e.priced, e.planned_ms, e.current_ms, e.home_ms,
			       d == HY_GAIN_GO	   ? "it goes ahead"
			       : d == HY_GAIN_HOLD ? "held back, nothing moves"
						   : "every relocated block goes home");
		if (d != HY_GAIN_GO)
			rc = rewrite_diff(&diff, current, ncurrent, d);
	}
	free(current);
	if (rc) {
		snprintf(why, why_size, "out of memory comparing the plan with the map");
		goto out;
	}
	pthread_mutex_lock(&b->lock);
	b->progress.kept_blocks =
		diff.keep_blocks + diff.left_blocks; /* both stay where they are */
	b->progress.dropped_blocks = diff.drop_blocks;
	b->progress.copy_blocks = diff.copy_blocks;
	pthread_mutex_unlock(&b->lock);
	rc = hy_reorganize_record(b->db, plan.generation, "copying", 0, diff.drop_blocks,
				  diff.keep_blocks + diff.left_blocks, 0, why, why_size);
	if (rc == 0)
		rc = drop_all(b, &diff, why, why_size);
	if (rc)
		goto out;
	/* releases journaled by writers and truncations are not waited for
	 * (their stamps cover a crash); BOPT blocks they freed may be copied
	 * over now, so their records must be durable first */
	rc = hy_map_journal_sync(b->journal);
	if (rc) {
		snprintf(why, why_size, "the map journal failed: %s", strerror(-rc));
		goto out;
	}
	hy_borg_progress_set_phase(b, HY_BORG_COPYING);
	rc = copy_all(b, &diff, why, why_size);
	if (rc && rc != -ECANCELED)
		goto out;
	hy_borg_progress_set_phase(b, HY_BORG_CHECKPOINTING);
	{
		char cwhy[1024];
		int crc = checkpoint(b, cwhy, sizeof(cwhy));

		if (crc && rc == 0) {
			rc = crc;
			snprintf(why, why_size, "%s", cwhy);
		}
	}
out : {
	struct hy_borg_progress p;
	char rwhy[512];

	hy_borg_get_progress(b, &p);
	if (plan.generation &&
	    hy_reorganize_record(b->db, plan.generation, rc ? "failed" : "done", p.copied_blocks,
				 p.dropped_blocks, p.kept_blocks, p.skipped_ranges, rwhy,
				 sizeof(rwhy)) < 0)
		hy_log(LOG_WARNING, "%s", rwhy);
}
	hy_reorganize_diff_free(&diff);
	hy_reorganize_plan_free(&plan);
	return rc;
}

static void *reconfig_main(void *arg)
{
	struct hy_borg *b = arg;
	char why[1024] = "";
	int rc;

	pthread_setname_np(pthread_self(), "hy-reconfig");
	rc = run(b, why, sizeof(why));
	pthread_mutex_lock(&b->lock);
	b->progress.seconds = seconds_since(&b->started);
	b->progress.phase = rc ? HY_BORG_FAILED : HY_BORG_DONE;
	if (rc)
		snprintf(b->progress.error, sizeof(b->progress.error), "%s", why);
	b->running = false;
	pthread_mutex_unlock(&b->lock);
	if (rc)
		hy_log(LOG_ERR, "reorganization failed: %s", why);
	if (rc == 0 && b->progress.copied_blocks)
		hy_borg_warm_arm(b); /* the new layout's first chain */
	if (rc == 0)
		hy_log(LOG_NOTICE,
		       "reorganization %" PRIu64 " done: %" PRIu64 " blocks copied, %" PRIu64
		       " dropped, %" PRIu64 " kept, %" PRIu64 " ranges skipped, %.1f s",
		       b->progress.generation, b->progress.copied_blocks,
		       b->progress.dropped_blocks, b->progress.kept_blocks,
		       b->progress.skipped_ranges, b->progress.seconds);
	return NULL;
}

int hy_borg_reorganize(struct hy_borg *b, const struct hy_reorganize_params *params, char *why,
		       size_t why_size)
{
	uint64_t region = b->bopt->header.read_blocks;
	int rc;

	if (params->capacity_blocks > region) {
		snprintf(why, why_size,
			 "the capacity asked for (%" PRIu64 " blocks) is more than the BOPT's read "
			 "region (%" PRIu64 " blocks of 4 KiB)",
			 params->capacity_blocks, region);
		return -EINVAL;
	}
	pthread_mutex_lock(&b->lock);
	if (b->running) {
		pthread_mutex_unlock(&b->lock);
		snprintf(why, why_size, "a reorganization is running already (run %" PRIu64 ")",
			 b->progress.run);
		return -EBUSY;
	}
	if (b->stop) {
		pthread_mutex_unlock(&b->lock);
		snprintf(why, why_size, "the filesystem is being unmounted");
		return -ESHUTDOWN;
	}
	if (b->joinable) {
		pthread_join(b->thread, NULL); /* the previous run, finished */
		b->joinable = false;
	}
	b->params = *params;
	b->params.save = true;
	if (!b->params.capacity_blocks)
		b->params.capacity_blocks = region;
	memset(&b->progress, 0, sizeof(b->progress));
	b->progress.run = ++b->runs;
	b->progress.phase = HY_BORG_PLANNING;
	clock_gettime(CLOCK_MONOTONIC, &b->started);
	b->running = true;
	rc = pthread_create(&b->thread, NULL, reconfig_main, b);
	if (rc) {
		b->running = false;
		b->progress.phase = HY_BORG_IDLE;
		pthread_mutex_unlock(&b->lock);
		snprintf(why, why_size, "cannot start the reconfigurator thread: %s", strerror(rc));
		return -rc;
	}
	b->joinable = true;
	pthread_mutex_unlock(&b->lock);
	return 0;
}
