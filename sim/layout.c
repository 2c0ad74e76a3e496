/* layout.c - see include/hybridfs/sim_layout.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/analyzer.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/keymap.h"
#include "hybridfs/planner.h"
#include "hybridfs/replay.h"
#include "hybridfs/sim_layout.h"
#include "hybridfs/trace_reader.h"

#define BLOCK	     HY_REPLAY_BLOCK
#define DEVICE_SPACE (UINT64_C(1) << 40) /* home bytes of one device on the disk */
#define MIB	     (UINT64_C(1) << 20)
/* the daemon's reconfigurator copies a range in chunks of this many
 * blocks (reconfig/borg.c, CHUNK_BLOCKS): one read, one write each */
#define COPY_CHUNK 256

struct hy_sim_layout {
	struct hy_analyzer *analyzer;
	struct hy_keymap reloc; /* block key -> BOPT block; keys NULL: no plan */
	uint64_t capacity, bopt_address;
	uint64_t bopt_base; /* where the BOPT is, fixed by the first plan */
	uint64_t home_end;  /* past the last home byte training saw */
	struct hy_planner_options planner;
	bool whole;		/* a read only partly relocated, and clean, goes home whole */
	struct hy_keymap dirty; /* relocated blocks written since the plan (a set) */
	struct hy_sim_layout_stats st;
};

int hy_sim_layout_new(uint64_t capacity, uint64_t bopt_address, struct hy_sim_layout **out)
{
	struct hy_sim_layout *l;

	*out = NULL;
	if (capacity == 0)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l || hy_analyzer_new(NULL, &l->analyzer) < 0) {
		free(l);
		return -ENOMEM;
	}
	l->capacity = capacity;
	l->bopt_address = bopt_address;
	l->bopt_base = UINT64_MAX;
	l->st.capacity = capacity;
	if (hy_keymap_init(&l->dirty, 64, false) < 0) {
		hy_analyzer_free(l->analyzer);
		free(l);
		return -ENOMEM;
	}
	*out = l;
	return 0;
}

void hy_sim_layout_free(struct hy_sim_layout *l)
{
	if (!l)
		return;
	hy_analyzer_free(l->analyzer);
	if (l->reloc.keys)
		hy_keymap_free(&l->reloc);
	hy_keymap_free(&l->dirty);
	free(l);
}

void hy_sim_layout_set_whole(struct hy_sim_layout *l, bool whole)
{
	l->whole = whole;
}

void hy_sim_layout_set_planner(struct hy_sim_layout *l, const struct hy_planner_options *options)
{
	if (options)
		l->planner = *options;
	else
		memset(&l->planner, 0, sizeof(l->planner));
}

static uint64_t block_key(uint64_t device, uint64_t block)
{
	return (device << HY_REPLAY_DEVICE_SHIFT) | block;
}

static uint64_t home_address(uint64_t key)
{
	return (key >> HY_REPLAY_DEVICE_SHIFT) * DEVICE_SPACE +
	       (key & ((UINT64_C(1) << HY_REPLAY_DEVICE_SHIFT) - 1)) * BLOCK;
}

int hy_sim_layout_train(struct hy_sim_layout *l, const struct hy_trace_record *rec)
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
	l->st.trained++;
	end = (uint64_t)rec->device * DEVICE_SPACE + (last + 1) * BLOCK;
	if (end > l->home_end)
		l->home_end = end;
	return hy_analyzer_feed(
		l->analyzer, rec->ts_ns > 0 ? rec->ts_ns : 0, process, rec->device, first,
		last - first + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(last - first + 1));
}

int hy_sim_layout_forget(struct hy_sim_layout *l)
{
	struct hy_analyzer *fresh;

	if (hy_analyzer_new(NULL, &fresh) < 0)
		return -ENOMEM;
	hy_analyzer_free(l->analyzer);
	l->analyzer = fresh;
	l->st.trained = 0;
	return 0;
}

/* Where the BOPT's block @to is on the disk. */
static uint64_t bopt_addr(const struct hy_sim_layout *l, uint32_t to)
{
	return l->bopt_base + (uint64_t)to * BLOCK;
}

/* Where block @key is now: the BOPT by the plan in force, else home. */
static uint64_t current_addr(const struct hy_sim_layout *l, uint64_t key)
{
	uint32_t to;

	if (l->reloc.keys && hy_keymap_get(&l->reloc, key, &to))
		return bopt_addr(l, to);
	return home_address(key);
}

/* Serves the runs of contiguous addresses of @addr[0..n) as one request
 * each over @model; their service time. */
static double serve_runs(struct hy_devmodel *model, const uint64_t *addr, size_t n, bool write)
{
	uint64_t run_addr = 0, run_len = 0;
	double t = 0;

	for (size_t i = 0; i < n; i++) {
		if (run_len && addr[i] == run_addr + run_len) {
			run_len += BLOCK;
			continue;
		}
		if (run_len)
			t += hy_devmodel_serve(model, run_addr, run_len, write);
		run_addr = addr[i];
		run_len = BLOCK;
	}
	if (run_len)
		t += hy_devmodel_serve(model, run_addr, run_len, write);
	return t;
}

/* The copy that carries @plan (of @v) out, over @model, from where the
 * blocks are by the table in force (@l->reloc, the previous plan) to
 * @next: chunk by chunk, reads then writes. Counts the blocks moved. */
static double copy_cost(const struct hy_sim_layout *l, struct hy_devmodel *model,
			const struct hy_plan *plan, const struct hy_plan_vertex *v,
			uint64_t *copied)
{
	uint64_t src[COPY_CHUNK], dst[COPY_CHUNK];
	double t = 0;

	*copied = 0;
	for (size_t i = 0; i < plan->count; i++) {
		const struct hy_plan_vertex *x = &v[plan->entries[i].vertex];

		for (uint32_t at = 0; at < x->nblocks; at += COPY_CHUNK) {
			uint32_t n = x->nblocks - at < COPY_CHUNK ? x->nblocks - at : COPY_CHUNK;
			size_t k = 0;

			for (uint32_t b = 0; b < n; b++) {
				uint64_t key = block_key(x->file_id, x->block + at + b);
				uint64_t from = current_addr(l, key);
				uint64_t to = bopt_addr(
					l, (uint32_t)(plan->entries[i].bopt_block + at + b));

				if (from == to)
					continue; /* already in its place */
				src[k] = from;
				dst[k++] = to;
			}
			t += serve_runs(model, src, k, false);
			t += serve_runs(model, dst, k, true);
			*copied += k;
		}
	}
	return t;
}

int hy_sim_layout_reconfigure(struct hy_sim_layout *l, struct hy_devmodel *model, double *copy_ms,
			      char *why, size_t why_size)
{
	struct hy_plan_vertex *v = NULL;
	struct hy_plan_edge *e = NULL;
	struct hy_plan plan = {0};
	struct hy_keymap next = {0};
	uint64_t copied = 0;
	size_t nv = 0, ne = 0;
	int rc;

	if (copy_ms)
		*copy_ms = 0;
	rc = hy_analyzer_export(l->analyzer, &v, &nv, NULL, &e, &ne);
	if (rc < 0) {
		snprintf(why, why_size, "out of memory exporting the master access graph");
		return rc;
	}
	rc = hy_planner_plan_with(&l->planner, v, nv, e, ne, l->capacity, &plan, why, why_size);
	if (rc == 0 && plan.blocks_used > UINT32_MAX) {
		snprintf(why, why_size, "a BOPT of more than 2^32 blocks");
		rc = -EINVAL;
	}
	if (rc == 0 && hy_keymap_init(&next, 2 * plan.blocks_used, true) < 0) {
		snprintf(why, why_size, "out of memory for the relocation table");
		rc = -ENOMEM;
	}
	for (size_t i = 0; rc == 0 && i < plan.count; i++) {
		const struct hy_plan_vertex *x = &v[plan.entries[i].vertex];

		for (uint32_t b = 0; b < x->nblocks; b++) {
			uint64_t to = plan.entries[i].bopt_block + b;

			/* ranges of the plan never overlap: each key comes once */
			if (hy_keymap_put(&next, block_key(x->file_id, x->block + b),
					  (uint32_t)to) < 0) {
				snprintf(why, why_size, "out of memory for the relocation table");
				rc = -ENOMEM;
				break;
			}
		}
	}
	if (rc == 0) {
		if (l->bopt_base == UINT64_MAX)
			l->bopt_base = l->bopt_address != UINT64_MAX
					       ? l->bopt_address
					       : (l->home_end + MIB) & ~(MIB - 1);
		if (model) {
			double t = copy_cost(l, model, &plan, v, &copied);

			if (copy_ms)
				*copy_ms = t;
		}
		if (l->reloc.keys)
			hy_keymap_free(&l->reloc);
		l->reloc = next;
		/* the copy wrote the current data; what left the BOPT was
		 * synced home */
		memset(l->dirty.keys, 0xff, (l->dirty.mask + 1) * sizeof(*l->dirty.keys));
		l->dirty.count = 0;
		l->st.vertices = nv;
		l->st.edges = ne;
		l->st.planned_blocks = next.count;
		l->st.copied_blocks = copied;
		l->st.reconfigurations++;
	} else if (next.keys) {
		hy_keymap_free(&next);
	}
	hy_plan_free(&plan);
	free(v);
	free(e);
	return rc;
}

int hy_sim_layout_plan(struct hy_sim_layout *l, char *why, size_t why_size)
{
	return hy_sim_layout_reconfigure(l, NULL, NULL, why, why_size);
}

/* Serves the request as it is: one disk request at home (whole blocks,
 * as the relocated path serves them). */
static double serve_home(struct hy_devmodel *model, const struct hy_trace_record *rec)
{
	uint64_t first = rec->offset / BLOCK, last = (rec->offset + rec->length - 1) / BLOCK;

	return hy_devmodel_serve(model, (uint64_t)rec->device * DEVICE_SPACE + first * BLOCK,
				 (last - first + 1) * BLOCK, rec->write);
}

double hy_sim_layout_serve(struct hy_sim_layout *l, struct hy_devmodel *model,
			   const struct hy_trace_record *rec, bool apply)
{
	uint64_t first, last, run_addr = 0, run_len = 0, relocated = 0;
	bool dirty = false;
	double t = 0;

	if (!rec->length)
		return 0;
	if (apply)
		l->st.served++;
	if (!apply || !l->reloc.keys || !l->reloc.count)
		return serve_home(model, rec);
	first = rec->offset / BLOCK;
	last = (rec->offset + rec->length - 1) / BLOCK;
	if (l->whole && !rec->write) {
		for (uint64_t b = first; b <= last; b++) {
			uint64_t key = block_key(rec->device, b);

			if (hy_keymap_get(&l->reloc, key, NULL)) {
				relocated++;
				dirty = dirty || hy_keymap_get(&l->dirty, key, NULL);
			}
		}
		/* home holds every block's current data: one request there
		 * beats a request split between home and the BOPT */
		if (relocated && relocated < last - first + 1 && !dirty) {
			l->st.whole_home++;
			return serve_home(model, rec);
		}
	}
	for (uint64_t b = first; b <= last; b++) {
		uint64_t key = block_key(rec->device, b);
		uint32_t to;
		uint64_t addr;

		if (hy_keymap_get(&l->reloc, key, &to)) {
			addr = bopt_addr(l, to);
			l->st.relocated_blocks++;
			/* BORG writes a relocated block in the BOPT: home is
			 * stale until the next reconfiguration syncs it */
			if (rec->write && hy_keymap_put(&l->dirty, key, 0) < 0)
				l->whole = false; /* no room to track: stop going home */
		} else {
			addr = home_address(key);
		}
		if (run_len && addr == run_addr + run_len) {
			run_len += BLOCK;
			continue;
		}
		if (run_len)
			t += hy_devmodel_serve(model, run_addr, run_len, rec->write);
		run_addr = addr;
		run_len = BLOCK;
	}
	if (run_len)
		t += hy_devmodel_serve(model, run_addr, run_len, rec->write);
	return t;
}

void hy_sim_layout_get_stats(const struct hy_sim_layout *l, struct hy_sim_layout_stats *out)
{
	*out = l->st;
}

/* ---- phases ----------------------------------------------------------------- */

struct hy_sim_layout_run {
	struct hy_sim_layout_run_config cfg;
	struct hy_devmodel_params device;
	struct hy_planner_options planner;
	uint64_t bounds[HY_SIM_LAYOUT_MAX_PHASES + 1]; /* phase k: [bounds[k], bounds[k+1]) */
	unsigned phase;				       /* the phase in progress */
	uint64_t seen;				       /* records so far */
	struct hy_devmodel *vanilla;
	struct hy_sim_layout *layout[HY_SIM_LAYOUT_MODES];
	struct hy_devmodel *model[HY_SIM_LAYOUT_MODES];
	uint64_t bopt_read_before[HY_SIM_LAYOUT_MODES]; /* at the phase's start */
	struct hy_sim_layout_phase phases[HY_SIM_LAYOUT_MAX_PHASES];
};

static int run_check(const struct hy_sim_layout_run_config *c, char *why, size_t why_size)
{
	if (c->phases < 2 || c->phases > HY_SIM_LAYOUT_MAX_PHASES) {
		snprintf(why, why_size, "%u phases: from 2 to %d", c->phases,
			 HY_SIM_LAYOUT_MAX_PHASES);
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
	if (!c->modes[HY_SIM_LAYOUT_CUMULATIVE] && !c->modes[HY_SIM_LAYOUT_PARTIAL]) {
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

int hy_sim_layout_run_new(const struct hy_sim_layout_run_config *config,
			  struct hy_sim_layout_run **out, char *why, size_t why_size)
{
	struct hy_sim_layout_run *r;
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
	for (int m = 0; rc == 0 && m < HY_SIM_LAYOUT_MODES; m++) {
		if (!config->modes[m])
			continue;
		rc = hy_devmodel_new(&r->device, &r->model[m], why, why_size);
		if (rc == 0 &&
		    hy_sim_layout_new(config->capacity, config->bopt_address, &r->layout[m]) < 0) {
			snprintf(why, why_size, "out of memory");
			rc = -ENOMEM;
		}
		if (rc == 0)
			hy_sim_layout_set_planner(r->layout[m], &r->planner);
		if (rc == 0)
			hy_sim_layout_set_whole(r->layout[m], config->whole_reads);
	}
	if (rc < 0) {
		hy_sim_layout_run_free(r);
		return rc;
	}
	r->phases[0].first = 0;
	*out = r;
	return 0;
}

void hy_sim_layout_run_free(struct hy_sim_layout_run *r)
{
	if (!r)
		return;
	hy_devmodel_free(r->vanilla);
	for (int m = 0; m < HY_SIM_LAYOUT_MODES; m++) {
		hy_sim_layout_free(r->layout[m]);
		hy_devmodel_free(r->model[m]);
	}
	free(r);
}

/* Before phase r->phase + 1: each mode's reconfiguration. */
static int run_reconfigure(struct hy_sim_layout_run *r, char *why, size_t why_size)
{
	struct hy_sim_layout_phase *p = &r->phases[r->phase + 1];

	p->first = r->seen;
	for (int m = 0; m < HY_SIM_LAYOUT_MODES; m++) {
		struct hy_sim_layout_phase_mode *pm = &p->mode[m];
		struct hy_sim_layout_stats st;
		struct hy_devmodel *copy;
		int rc;

		if (!r->layout[m])
			continue;
		/* a fresh disk for the copy: its time is reported apart */
		rc = hy_devmodel_new(&r->device, &copy, why, why_size);
		if (rc < 0)
			return rc;
		hy_sim_layout_get_stats(r->layout[m], &st);
		pm->trained = st.trained;
		rc = hy_sim_layout_reconfigure(r->layout[m], copy, &pm->reconfiguration_busy_ms,
					       why, why_size);
		hy_devmodel_free(copy);
		if (rc < 0)
			return rc;
		hy_sim_layout_get_stats(r->layout[m], &st);
		pm->vertices = st.vertices;
		pm->edges = st.edges;
		pm->planned_blocks = st.planned_blocks;
		pm->copied_blocks = st.copied_blocks;
		r->bopt_read_before[m] = st.relocated_blocks;
		/* BORG-P plans the next phase from this one alone */
		if (m == HY_SIM_LAYOUT_PARTIAL && hy_sim_layout_forget(r->layout[m]) < 0) {
			snprintf(why, why_size, "out of memory for a fresh analyzer");
			return -ENOMEM;
		}
	}
	r->phase++;
	return 0;
}

int hy_sim_layout_run_request(struct hy_sim_layout_run *r, const struct hy_trace_record *rec,
			      char *why, size_t why_size)
{
	struct hy_sim_layout_phase *p;
	double vanilla;
	int rc;

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
	vanilla = serve_home(r->vanilla, rec);
	p->busy_ms_vanilla += vanilla;
	for (int m = 0; m < HY_SIM_LAYOUT_MODES; m++) {
		struct hy_sim_layout_stats st;

		if (!r->layout[m])
			continue;
		p->mode[m].busy_ms += hy_sim_layout_serve(r->layout[m], r->model[m], rec, true);
		hy_sim_layout_get_stats(r->layout[m], &st);
		p->mode[m].bopt_blocks_read = st.relocated_blocks - r->bopt_read_before[m];
		if (hy_sim_layout_train(r->layout[m], rec) < 0) {
			snprintf(why, why_size, "out of memory training the analyzer");
			return -ENOMEM;
		}
	}
	return 0;
}

const struct hy_sim_layout_phase *hy_sim_layout_run_phases(const struct hy_sim_layout_run *r,
							   unsigned *count)
{
	*count = r->phase + 1;
	return r->phases;
}
