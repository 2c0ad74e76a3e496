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

struct hy_sim_layout {
	struct hy_analyzer *analyzer;
	struct hy_keymap reloc; /* block key -> BOPT block */
	uint64_t capacity, bopt_address;
	uint64_t home_end; /* past the last home byte training saw */
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
	l->st.capacity = capacity;
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
	free(l);
}

int hy_sim_layout_train(struct hy_sim_layout *l, const struct hy_trace_record *rec)
{
	uint64_t first, last;
	uint32_t process;

	if (!rec->length)
		return 0;
	first = rec->offset / BLOCK;
	last = (rec->offset + rec->length - 1) / BLOCK;
	/* the daemon numbers processes itself; the trace's pid, or its
	 * device, serves the same purpose: whose requests follow whose */
	process = rec->pid >= 0 ? (uint32_t)rec->pid : rec->device;
	l->st.trained++;
	{
		uint64_t end = (uint64_t)rec->device * DEVICE_SPACE + (last + 1) * BLOCK;

		if (end > l->home_end)
			l->home_end = end;
	}
	return hy_analyzer_feed(
		l->analyzer, rec->ts_ns > 0 ? rec->ts_ns : 0, process, rec->device, first,
		last - first + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(last - first + 1));
}

int hy_sim_layout_plan(struct hy_sim_layout *l, char *why, size_t why_size)
{
	struct hy_plan_vertex *v = NULL;
	struct hy_plan_edge *e = NULL;
	struct hy_plan plan = {0};
	size_t nv = 0, ne = 0;
	int rc;

	rc = hy_analyzer_export(l->analyzer, &v, &nv, NULL, &e, &ne);
	if (rc < 0) {
		snprintf(why, why_size, "out of memory exporting the master access graph");
		return rc;
	}
	l->st.vertices = nv;
	l->st.edges = ne;
	rc = hy_planner_plan(v, nv, e, ne, l->capacity, &plan, why, why_size);
	if (rc == 0 && plan.blocks_used > UINT32_MAX) {
		snprintf(why, why_size, "a BOPT of more than 2^32 blocks");
		rc = -EINVAL;
	}
	if (rc == 0 && hy_keymap_init(&l->reloc, 2 * plan.blocks_used, true) < 0) {
		snprintf(why, why_size, "out of memory for the relocation table");
		rc = -ENOMEM;
	}
	for (size_t i = 0; rc == 0 && i < plan.count; i++) {
		const struct hy_plan_vertex *x = &v[plan.entries[i].vertex];

		for (uint32_t b = 0; b < x->nblocks; b++) {
			uint64_t key = (x->file_id << HY_REPLAY_DEVICE_SHIFT) | (x->block + b);
			uint64_t to = plan.entries[i].bopt_block + b;

			/* ranges of the plan never overlap: each key comes once */
			if (hy_keymap_put(&l->reloc, key, (uint32_t)to) < 0) {
				snprintf(why, why_size, "out of memory for the relocation table");
				rc = -ENOMEM;
				break;
			}
		}
	}
	l->st.planned_blocks = l->reloc.count;
	hy_plan_free(&plan);
	free(v);
	free(e);
	return rc;
}

double hy_sim_layout_serve(struct hy_sim_layout *l, struct hy_devmodel *model,
			   const struct hy_trace_record *rec, bool apply)
{
	uint64_t first, last, run_addr = 0, run_len = 0, home_base;
	double t = 0;

	if (!rec->length)
		return 0;
	first = rec->offset / BLOCK;
	last = (rec->offset + rec->length - 1) / BLOCK;
	home_base = (uint64_t)rec->device * DEVICE_SPACE;
	if (apply)
		l->st.served++;
	if (!apply || !l->reloc.count) {
		/* its blocks as they are: one disk request at home (whole blocks,
		 * as the relocated path serves them) */
		return hy_devmodel_serve(model, home_base + first * BLOCK,
					 (last - first + 1) * BLOCK, rec->write);
	}
	for (uint64_t b = first; b <= last; b++) {
		uint64_t key = ((uint64_t)rec->device << HY_REPLAY_DEVICE_SHIFT) | b;
		uint32_t to;
		uint64_t addr;

		if (hy_keymap_get(&l->reloc, key, &to)) {
			addr = (l->bopt_address != UINT64_MAX
					? l->bopt_address
					: (l->home_end + (UINT64_C(1) << 20)) &
						  ~((UINT64_C(1) << 20) - 1)) +
			       (uint64_t)to * BLOCK;
			l->st.relocated_blocks++;
		} else {
			addr = home_base + b * BLOCK;
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
