/*
 * sim_layout.h - BORG on a block trace (issue 7): the analyzer and the
 * planner the daemon runs (analyzer.h, planner.h), trained on one part of
 * a trace, and the other part served over a disk model (devmodel.h) with
 * the plan applied and without it, to see what the layout saves.
 *
 * Training: every request of the training part is fed to the analyzer as
 * the daemon feeds its access log (its device is the "file", its pid, or
 * its device when the trace has none, the process; reads and writes);
 * hy_sim_layout_plan() exports the master access graph and plans it into
 * a BOPT read region of the capacity given, then keeps the plan as a
 * per-block relocation table (O(1) lookups).
 *
 * Serving: a request's blocks that the plan relocated are served from the
 * BOPT (a region at the address given, or with UINT64_MAX right after the
 * last home byte training saw, 1 MiB aligned, as a BOPT partition next to
 * the data would be; where the planner's
 * order lays them one after the other), the others from home (device d's
 * byte b at d * 2^40 + b, wrapped into the model's capacity), each
 * maximal run of contiguous addresses one disk request. Writes to
 * relocated blocks go to the BOPT too (BORG writes them there and syncs
 * home later, off the measured path).
 *
 * Who calls it: ctl/simulate_cmd.c (--borg), the unit tests.
 *
 * Memory: hy_sim_layout_new allocates the analyzer and, once planned, the
 * relocation table; hy_sim_layout_free frees them. Threads: none.
 */
#ifndef HYBRIDFS_SIM_LAYOUT_H
#define HYBRIDFS_SIM_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hy_devmodel;
struct hy_trace_record;
struct hy_sim_layout;

struct hy_sim_layout_stats {
	uint64_t trained; /* requests fed to the analyzer */
	uint64_t vertices, edges;
	uint64_t planned_blocks;	   /* blocks the plan relocated */
	uint64_t capacity;		   /* of the BOPT read region, blocks */
	uint64_t served, relocated_blocks; /* requests served; their blocks from the BOPT */
};

/* A layout with a BOPT read region of @capacity blocks (>= 1) at byte
 * @bopt_address of the disk model (UINT64_MAX: after the home data).
 * 0 or -ENOMEM / -EINVAL. */
int hy_sim_layout_new(uint64_t capacity, uint64_t bopt_address, struct hy_sim_layout **out);
void hy_sim_layout_free(struct hy_sim_layout *layout);

/* One request of the training part. 0 or -ENOMEM. */
int hy_sim_layout_train(struct hy_sim_layout *layout, const struct hy_trace_record *rec);

/* The plan from what was trained. 0, or a negative errno with @why. */
int hy_sim_layout_plan(struct hy_sim_layout *layout, char *why, size_t why_size);

/* Serves @rec over @model, with the plan (@apply) or without; returns the
 * request's service time in ms. */
double hy_sim_layout_serve(struct hy_sim_layout *layout, struct hy_devmodel *model,
			   const struct hy_trace_record *rec, bool apply);

void hy_sim_layout_get_stats(const struct hy_sim_layout *layout, struct hy_sim_layout_stats *out);

#endif
