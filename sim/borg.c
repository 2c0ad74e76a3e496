/* borg.c - see include/hybridfs/sim_borg.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/analyzer.h"
#include "hybridfs/device.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/engine.h"
#include "hybridfs/indirector.h"
#include "hybridfs/map.h"
#include "hybridfs/planner.h"
#include "hybridfs/reorganize.h"
#include "hybridfs/replay.h"
#include "hybridfs/sim_borg.h"
#include "hybridfs/sim_home.h"
#include "hybridfs/stack.h"
#include "hybridfs/trace_reader.h"

#define BLOCK HY_REPLAY_BLOCK
#define MIB   (UINT64_C(1) << 20)
/* the daemon's reconfigurator (reconfig/borg.c): a range is copied in
 * chunks of CHUNK_BLOCKS, committed in batches of BATCH_BYTES */
#define CHUNK_BLOCKS 256
#define BATCH_BYTES  (UINT64_C(4) << 20)

struct hy_sim_borg {
	struct hy_analyzer *analyzer;
	struct hy_planner_options planner;
	uint64_t capacity, bopt_address;
	uint64_t bopt_base; /* where the BOPT is on the disk, fixed by the first plan */
	uint64_t home_end;  /* past the last home byte training saw */
	struct hy_map *map;
	struct hy_device *home, *bopt;
	struct hy_engine *stack; /* home and the BOPT through the map */
	struct hy_engine *plain; /* home alone: no BOPT */
	/* the disk the devices' requests are served over now (its model NULL:
	 * untimed) with their service time since it was set, and whether BOPT
	 * bytes count as the served requests' */
	struct hy_sim_disk disk;
	bool serving;
	unsigned char *buf; /* zeros: requests' and copies' data */
	size_t buf_size;
	struct hy_sim_borg_stats st;
};

/* ---- the devices: a disk model that keeps nothing --------------------- */

static void charge(struct hy_sim_borg *b, uint64_t addr, size_t len, bool write)
{
	hy_sim_disk_serve(&b->disk, addr, len, write);
}

/* Syncing a model: nothing to wait for. */
static int model_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	(void)dev;
	(void)object;
	(void)data_only;
	return 0;
}

static void bopt_count(struct hy_sim_borg *b, size_t len)
{
	if (b->serving)
		b->st.relocated_blocks += len / BLOCK;
}

static ssize_t bopt_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	struct hy_sim_borg *b = dev->priv;

	(void)object;
	charge(b, b->bopt_base + (uint64_t)off, len, false);
	bopt_count(b, len);
	memset(buf, 0, len);
	return (ssize_t)len;
}

static ssize_t bopt_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			  off_t off)
{
	struct hy_sim_borg *b = dev->priv;

	(void)object;
	(void)buf;
	charge(b, b->bopt_base + (uint64_t)off, len, true);
	bopt_count(b, len);
	return (ssize_t)len;
}

static const struct hy_device_ops bopt_ops = {
	.read = bopt_read,
	.write = bopt_write,
	.sync = model_sync,
};

/* ---- one BORG ----------------------------------------------------------- */

static int grow_buf(struct hy_sim_borg *b, size_t len)
{
	unsigned char *more;

	if (len <= b->buf_size)
		return 0;
	more = realloc(b->buf, len);
	if (!more)
		return -ENOMEM;
	memset(more, 0, len);
	b->buf = more;
	b->buf_size = len;
	return 0;
}

int hy_sim_borg_new(uint64_t capacity, uint64_t bopt_address, struct hy_sim_borg **out)
{
	struct hy_sim_borg *b;
	struct hy_stack_bopt bopt = {0};
	struct hy_stack_config stack = {0};
	char why[256];
	int rc;

	*out = NULL;
	if (capacity == 0)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->capacity = capacity;
	b->bopt_address = bopt_address;
	b->bopt_base = bopt_address != UINT64_MAX ? bopt_address : 0;
	b->st.capacity = capacity;
	rc = hy_analyzer_new(NULL, &b->analyzer) < 0 ? -ENOMEM : 0;
	if (rc == 0)
		rc = hy_map_new(&b->map);
	if (rc == 0)
		rc = hy_sim_home_new(&b->disk, &b->home);
	if (rc == 0)
		rc = hy_device_new("sim-bopt", &bopt_ops, b, &b->bopt);
	if (rc == 0)
		rc = grow_buf(b, (size_t)CHUNK_BLOCKS * BLOCK);
	/* the daemon's stack, without a cache: BORG's layout is what is
	 * measured; writes to relocated blocks go into the BOPT, as with the
	 * daemon's default bopt_writes=on */
	/* no read-ahead: a model's BOPT has no page cache to read into */
	bopt = (struct hy_stack_bopt){b->map, b->bopt, 0, NULL, true, 0, 0};
	stack.backing = b->home;
	stack.bopt = &bopt;
	if (rc == 0)
		rc = hy_stack_new(&stack, &b->stack, why, sizeof(why));
	stack.bopt = NULL;
	if (rc == 0)
		rc = hy_stack_new(&stack, &b->plain, why, sizeof(why));
	if (rc < 0) {
		hy_sim_borg_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

void hy_sim_borg_free(struct hy_sim_borg *b)
{
	if (!b)
		return;
	/* the stacks first: they borrow the devices and the map */
	hy_stack_free(b->stack);
	hy_stack_free(b->plain);
	hy_device_free(b->home);
	hy_device_free(b->bopt);
	hy_map_free(b->map);
	hy_analyzer_free(b->analyzer);
	free(b->buf);
	free(b);
}

void hy_sim_borg_set_planner(struct hy_sim_borg *b, const struct hy_planner_options *options)
{
	if (options)
		b->planner = *options;
	else
		memset(&b->planner, 0, sizeof(b->planner));
}

int hy_sim_borg_train(struct hy_sim_borg *b, const struct hy_trace_record *rec)
{
	uint64_t first, last, end;
	uint32_t process;

	if (!rec->length)
		return 0;
	first = rec->offset / BLOCK;
	last = (rec->offset + rec->length - 1) / BLOCK;
	/* the daemon numbers processes itself; the trace's pid, or its
	 * device, serves the same purpose: whose requests follow whose */
	process = rec->pid >= 0 ? (uint32_t)rec->pid : rec->device;
	b->st.trained++;
	end = hy_sim_home_address((int64_t)rec->device + 1, (last + 1) * BLOCK);
	if (end > b->home_end)
		b->home_end = end;
	return hy_analyzer_feed(
		b->analyzer, rec->ts_ns > 0 ? rec->ts_ns : 0, process, rec->device, first,
		last - first + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(last - first + 1));
}

int hy_sim_borg_forget(struct hy_sim_borg *b)
{
	struct hy_analyzer *fresh;

	if (hy_analyzer_new(NULL, &fresh) < 0)
		return -ENOMEM;
	hy_analyzer_free(b->analyzer);
	b->analyzer = fresh;
	b->st.trained = 0;
	return 0;
}

/* The plan from the trained graph, as reorganize.c turns the planner's
 * entries into ranges; the analyzer's "file" is the trace's device, the
 * map's file id that + 1 (0 is no file). */
static int make_plan(struct hy_sim_borg *b, struct hy_reorganize_range **out, size_t *count,
		     char *why, size_t why_size)
{
	struct hy_plan_vertex *v = NULL;
	struct hy_plan_edge *e = NULL;
	struct hy_plan plan = {0};
	size_t nv = 0, ne = 0;
	uint64_t blocks = 0;
	int rc;

	*out = NULL;
	*count = 0;
	rc = hy_analyzer_export(b->analyzer, &v, &nv, NULL, &e, &ne);
	if (rc < 0) {
		snprintf(why, why_size, "out of memory exporting the master access graph");
		return rc;
	}
	rc = hy_planner_plan_with(&b->planner, v, nv, e, ne, b->capacity, &plan, why, why_size);
	if (rc == 0) {
		*out = calloc(plan.count ? plan.count : 1, sizeof(**out));
		if (!*out) {
			snprintf(why, why_size, "out of memory for the plan");
			rc = -ENOMEM;
		}
	}
	for (size_t i = 0; rc == 0 && i < plan.count; i++) {
		const struct hy_plan_vertex *x = &v[plan.entries[i].vertex];

		(*out)[i] = (struct hy_reorganize_range){x->file_id + 1, x->block, x->nblocks,
							 plan.entries[i].bopt_block, 0.0};
		blocks += x->nblocks;
	}
	if (rc == 0) {
		*count = plan.count;
		b->st.planned_blocks = blocks;
		b->st.vertices = nv;
		b->st.edges = ne;
	}
	hy_plan_free(&plan);
	free(v);
	free(e);
	return rc;
}

/* The daemon's flush before a run: every file's BOPT writes home. */
static int flush_dirty(struct hy_sim_borg *b, struct hy_indirector *ind)
{
	struct {
		uint64_t *ids;
		size_t n;
	} dirty;
	int rc = hy_map_dirty_files(b->map, &dirty.ids, &dirty.n);

	for (size_t i = 0; rc == 0 && i < dirty.n; i++) {
		int64_t n = hy_indirector_sync_home(ind, dirty.ids[i], (int64_t)dirty.ids[i]);

		if (n < 0)
			rc = (int)n;
		else
			b->st.synced_blocks += (uint64_t)n;
	}
	free(dirty.ids);
	return rc;
}

struct copier {
	struct hy_indirector_copy *pending;
	bool *committed;
	size_t n, cap;
	uint64_t bytes;
};

/* The batch into the map: the BOPT made durable once, then each copy
 * committed if nothing changed its file since it was read. */
static int commit_batch(struct hy_sim_borg *b, struct hy_indirector *ind, struct copier *c)
{
	int rc;

	if (!c->n)
		return 0;
	rc = hy_device_sync(b->bopt, 0, true);
	if (rc == 0)
		rc = hy_indirector_copy_commit(ind, c->pending, c->n, c->committed);
	for (size_t i = 0; rc == 0 && i < c->n; i++)
		if (c->committed[i])
			b->st.copied_blocks += c->pending[i].nblocks;
	c->n = 0;
	c->bytes = 0;
	return rc;
}

/* One chunk, as reconfig/borg.c's copy_chunk: read home, written to the
 * BOPT, queued for the commit. */
static int copy_chunk(struct hy_sim_borg *b, struct hy_indirector *ind, struct copier *c,
		      uint64_t file_id, uint64_t block, uint32_t nblocks, uint64_t bopt_block)
{
	struct hy_indirector_copy p = {.file_id = file_id,
				       .object = (int64_t)file_id,
				       .block = block,
				       .nblocks = nblocks,
				       .bopt_block = bopt_block};
	size_t len = (size_t)nblocks * BLOCK;
	ssize_t n;

	/* BOPT blocks still held by an extent written and not home are
	 * never written over (none after the flush: nothing writes meanwhile) */
	if (hy_map_bopt_in_use(b->map, bopt_block, nblocks))
		return 0;
	if (hy_indirector_copy_begin(ind, &p) < 0)
		return 0;
	n = hy_indirector_copy_read(ind, &p, b->buf);
	if (n != (ssize_t)len)
		return 0;
	n = hy_device_write(b->bopt, 0, b->buf, len, (off_t)(bopt_block * BLOCK));
	if (n != (ssize_t)len)
		return n < 0 ? (int)n : -EIO;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct hy_indirector_copy *grown = realloc(c->pending, cap * sizeof(*grown));
		bool *flags;

		if (!grown)
			return -ENOMEM;
		c->pending = grown;
		flags = realloc(c->committed, cap * sizeof(*flags));
		if (!flags)
			return -ENOMEM;
		c->committed = flags;
		c->cap = cap;
	}
	c->pending[c->n++] = p;
	c->bytes += len;
	return c->bytes >= BATCH_BYTES ? commit_batch(b, ind, c) : 0;
}

static int carry_out(struct hy_sim_borg *b, const struct hy_reorganize_range *ranges, size_t count,
		     char *why, size_t why_size)
{
	struct hy_indirector *ind = hy_engine_indirector(b->stack);
	struct hy_reorganize_diff diff = {0};
	struct hy_indirector_range *drop = NULL;
	struct hy_map_extent *current = NULL;
	struct copier c = {0};
	size_t ncurrent = 0;
	uint64_t kept_dirty = 0;
	int rc;

	rc = flush_dirty(b, ind);
	if (rc < 0) {
		snprintf(why, why_size, "the BOPT's writes cannot go home: %s", strerror(-rc));
		return rc;
	}
	rc = hy_map_snapshot(b->map, &current, &ncurrent);
	if (rc == 0)
		rc = hy_reorganize_diff(current, ncurrent, ranges, count, &diff);
	free(current);
	if (rc == 0) {
		drop = malloc((diff.ndrop ? diff.ndrop : 1) * sizeof(*drop));
		if (!drop)
			rc = -ENOMEM;
	}
	if (rc < 0) {
		snprintf(why, why_size, "out of memory comparing the plan with the map");
		hy_reorganize_diff_free(&diff);
		return rc;
	}
	for (size_t i = 0; i < diff.ndrop; i++)
		drop[i] = (struct hy_indirector_range){diff.drop[i].file_id, diff.drop[i].block,
						       diff.drop[i].nblocks};
	rc = hy_indirector_drop(ind, drop, diff.ndrop, &kept_dirty);
	free(drop);
	if (rc < 0) {
		snprintf(why, why_size, "dropping extents from the map failed: %s", strerror(-rc));
		hy_reorganize_diff_free(&diff);
		return rc;
	}
	b->st.dropped_blocks = diff.drop_blocks - kept_dirty;
	b->st.kept_blocks = diff.keep_blocks + diff.left_blocks + kept_dirty;
	for (size_t i = 0; rc == 0 && i < diff.ncopy; i++) {
		const struct hy_reorganize_range *r = &diff.copy[i];

		for (uint64_t at = 0; rc == 0 && at < r->nblocks; at += CHUNK_BLOCKS) {
			uint64_t n =
				r->nblocks - at < CHUNK_BLOCKS ? r->nblocks - at : CHUNK_BLOCKS;

			rc = copy_chunk(b, ind, &c, r->file_id, r->block + at, (uint32_t)n,
					r->bopt_block + at);
		}
	}
	if (rc == 0)
		rc = commit_batch(b, ind, &c);
	if (rc < 0)
		snprintf(why, why_size, "copying into the BOPT failed: %s", strerror(-rc));
	free(c.pending);
	free(c.committed);
	hy_reorganize_diff_free(&diff);
	return rc;
}

int hy_sim_borg_reconfigure(struct hy_sim_borg *b, struct hy_devmodel *model, double *copy_ms,
			    char *why, size_t why_size)
{
	struct hy_reorganize_range *ranges = NULL;
	size_t count = 0;
	int rc;

	if (copy_ms)
		*copy_ms = 0;
	rc = make_plan(b, &ranges, &count, why, why_size);
	if (rc < 0)
		return rc; /* the map and the figures of the plan before stay */
	b->st.copied_blocks = b->st.dropped_blocks = b->st.kept_blocks = 0;
	b->st.synced_blocks = 0;
	if (b->bopt_address == UINT64_MAX && b->st.reconfigurations == 0)
		b->bopt_base = (b->home_end + MIB) & ~(MIB - 1);
	b->disk.model = model;
	b->disk.busy_ms = 0;
	rc = carry_out(b, ranges, count, why, why_size);
	if (copy_ms)
		*copy_ms = b->disk.busy_ms;
	b->disk.model = NULL;
	free(ranges);
	if (rc == 0)
		b->st.reconfigurations++;
	return rc;
}

double hy_sim_borg_serve(struct hy_sim_borg *b, struct hy_devmodel *model,
			 const struct hy_trace_record *rec, bool apply)
{
	/* whole blocks, as the cache above the indirector asks for them */
	uint64_t first, last, file_id = (uint64_t)rec->device + 1;
	struct hy_indirector *ind = hy_engine_indirector(apply ? b->stack : b->plain);
	size_t len;
	ssize_t n;

	if (!rec->length)
		return 0;
	first = rec->offset / BLOCK;
	last = (rec->offset + rec->length - 1) / BLOCK;
	len = (size_t)(last - first + 1) * BLOCK;
	if (grow_buf(b, len) < 0)
		return -ENOMEM;
	if (apply)
		b->st.served++;
	b->disk.model = model;
	b->disk.busy_ms = 0;
	b->serving = apply;
	if (rec->write)
		n = hy_indirector_write(ind, file_id, (int64_t)file_id, b->buf, len,
					(off_t)(first * BLOCK));
	else
		n = hy_indirector_read(ind, file_id, (int64_t)file_id, b->buf, len,
				       (off_t)(first * BLOCK));
	b->serving = false;
	b->disk.model = NULL;
	if (n < 0)
		return (double)n;
	return b->disk.busy_ms;
}

void hy_sim_borg_get_stats(const struct hy_sim_borg *b, struct hy_sim_borg_stats *out)
{
	*out = b->st;
}

/* ---- phases ----------------------------------------------------------------- */

struct hy_sim_borg_run {
	struct hy_sim_borg_run_config cfg;
	struct hy_devmodel_params device;
	struct hy_planner_options planner;
	uint64_t bounds[HY_SIM_BORG_MAX_PHASES + 1]; /* phase k: [bounds[k], bounds[k+1]) */
	unsigned phase;				     /* the phase in progress */
	uint64_t seen;				     /* records so far */
	struct hy_devmodel *vanilla;
	struct hy_sim_borg *borg[HY_SIM_BORG_MODES];
	struct hy_devmodel *model[HY_SIM_BORG_MODES];
	uint64_t bopt_read_before[HY_SIM_BORG_MODES]; /* at the phase's start */
	struct hy_sim_borg_phase phases[HY_SIM_BORG_MAX_PHASES];
};

static int run_check(const struct hy_sim_borg_run_config *c, char *why, size_t why_size)
{
	if (c->phases < 2 || c->phases > HY_SIM_BORG_MAX_PHASES) {
		snprintf(why, why_size, "%u phases: from 2 to %d", c->phases,
			 HY_SIM_BORG_MAX_PHASES);
		return -EINVAL;
	}
	if (c->requests < c->phases) {
		snprintf(why, why_size,
			 "%u phases of a trace of %llu requests: each phase needs one at least",
			 c->phases, (unsigned long long)c->requests);
		return -EINVAL;
	}
	if (c->split && c->phases != 2) {
		snprintf(why, why_size, "a split point with %u phases: a split makes 2", c->phases);
		return -EINVAL;
	}
	if (c->split && c->split >= c->requests) {
		snprintf(why, why_size, "a split at request %llu of %llu: nothing left to test",
			 (unsigned long long)c->split, (unsigned long long)c->requests);
		return -EINVAL;
	}
	if (!c->modes[HY_SIM_BORG_CUMULATIVE] && !c->modes[HY_SIM_BORG_PARTIAL]) {
		snprintf(why, why_size, "no mode: cumulative, partial or both");
		return -EINVAL;
	}
	if (c->capacity == 0) {
		snprintf(why, why_size, "a BOPT of 0 blocks");
		return -EINVAL;
	}
	if (!c->device) {
		snprintf(why, why_size, "no disk model");
		return -EINVAL;
	}
	return 0;
}

int hy_sim_borg_run_new(const struct hy_sim_borg_run_config *config, struct hy_sim_borg_run **out,
			char *why, size_t why_size)
{
	struct hy_sim_borg_run *r;
	int rc;

	*out = NULL;
	rc = run_check(config, why, why_size);
	if (rc < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	r->cfg = *config;
	r->device = *config->device;
	r->cfg.device = &r->device;
	if (config->planner)
		r->planner = *config->planner;
	r->cfg.planner = &r->planner;
	for (unsigned k = 0; k <= config->phases; k++)
		r->bounds[k] = config->requests / config->phases * k +
			       config->requests % config->phases * k / config->phases;
	if (config->split)
		r->bounds[1] = config->split;
	rc = hy_devmodel_new(&r->device, &r->vanilla, why, why_size);
	for (int m = 0; rc == 0 && m < HY_SIM_BORG_MODES; m++) {
		if (!config->modes[m])
			continue;
		rc = hy_devmodel_new(&r->device, &r->model[m], why, why_size);
		if (rc == 0 &&
		    hy_sim_borg_new(config->capacity, config->bopt_address, &r->borg[m]) < 0) {
			snprintf(why, why_size, "out of memory");
			rc = -ENOMEM;
		}
		if (rc == 0)
			hy_sim_borg_set_planner(r->borg[m], &r->planner);
	}
	if (rc < 0) {
		hy_sim_borg_run_free(r);
		return rc;
	}
	r->phases[0].first = 0;
	*out = r;
	return 0;
}

void hy_sim_borg_run_free(struct hy_sim_borg_run *r)
{
	if (!r)
		return;
	hy_devmodel_free(r->vanilla);
	for (int m = 0; m < HY_SIM_BORG_MODES; m++) {
		hy_sim_borg_free(r->borg[m]);
		hy_devmodel_free(r->model[m]);
	}
	free(r);
}

/* Before phase r->phase + 1: each mode's reconfiguration. */
static int run_reconfigure(struct hy_sim_borg_run *r, char *why, size_t why_size)
{
	struct hy_sim_borg_phase *p = &r->phases[r->phase + 1];

	p->first = r->seen;
	for (int m = 0; m < HY_SIM_BORG_MODES; m++) {
		struct hy_sim_borg_phase_mode *pm = &p->mode[m];
		struct hy_sim_borg_stats st;
		struct hy_devmodel *copy;
		int rc;

		if (!r->borg[m])
			continue;
		/* a fresh disk for the copy: its time is reported apart */
		rc = hy_devmodel_new(&r->device, &copy, why, why_size);
		if (rc < 0)
			return rc;
		hy_sim_borg_get_stats(r->borg[m], &st);
		pm->trained = st.trained;
		rc = hy_sim_borg_reconfigure(r->borg[m], copy, &pm->reconfiguration_busy_ms, why,
					     why_size);
		hy_devmodel_free(copy);
		if (rc < 0)
			return rc;
		hy_sim_borg_get_stats(r->borg[m], &st);
		pm->vertices = st.vertices;
		pm->edges = st.edges;
		pm->planned_blocks = st.planned_blocks;
		pm->copied_blocks = st.copied_blocks;
		r->bopt_read_before[m] = st.relocated_blocks;
		/* BORG-P plans the next phase from this one alone */
		if (m == HY_SIM_BORG_PARTIAL && hy_sim_borg_forget(r->borg[m]) < 0) {
			snprintf(why, why_size, "out of memory for a fresh analyzer");
			return -ENOMEM;
		}
	}
	r->phase++;
	return 0;
}

int hy_sim_borg_run_request(struct hy_sim_borg_run *r, const struct hy_trace_record *rec, char *why,
			    size_t why_size)
{
	struct hy_sim_borg_phase *p;
	double t;
	int rc, first_mode = r->borg[HY_SIM_BORG_CUMULATIVE] ? HY_SIM_BORG_CUMULATIVE
							     : HY_SIM_BORG_PARTIAL;

	if (r->phase + 1 < r->cfg.phases && r->seen == r->bounds[r->phase + 1]) {
		rc = run_reconfigure(r, why, why_size);
		if (rc < 0)
			return rc;
	}
	p = &r->phases[r->phase];
	r->seen++;
	p->requests++;
	if (!rec->length)
		return 0;
	/* vanilla: the same home through a stack without a BOPT */
	t = hy_sim_borg_serve(r->borg[first_mode], r->vanilla, rec, false);
	if (t < 0) {
		snprintf(why, why_size, "serving a request: %s", strerror((int)-t));
		return (int)t;
	}
	p->busy_ms_vanilla += t;
	for (int m = 0; m < HY_SIM_BORG_MODES; m++) {
		struct hy_sim_borg_stats st;

		if (!r->borg[m])
			continue;
		t = hy_sim_borg_serve(r->borg[m], r->model[m], rec, true);
		if (t < 0) {
			snprintf(why, why_size, "serving a request: %s", strerror((int)-t));
			return (int)t;
		}
		p->mode[m].busy_ms += t;
		hy_sim_borg_get_stats(r->borg[m], &st);
		p->mode[m].bopt_blocks_read = st.relocated_blocks - r->bopt_read_before[m];
		if (hy_sim_borg_train(r->borg[m], rec) < 0) {
			snprintf(why, why_size, "out of memory training the analyzer");
			return -ENOMEM;
		}
	}
	return 0;
}

const struct hy_sim_borg_phase *hy_sim_borg_run_phases(const struct hy_sim_borg_run *r,
						       unsigned *count)
{
	*count = r->phase + 1;
	return r->phases;
}
