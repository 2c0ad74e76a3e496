/*
 * sim_layout.h - BORG on a block trace (issue 7): the analyzer and the
 * planner the daemon runs (analyzer.h, planner.h), trained on one part of
 * a trace, and the next part served over a disk model (devmodel.h) with
 * the plan applied and without it, to see what the layout saves.
 *
 * Training: every request is fed to the analyzer as the daemon feeds its
 * access log (its device is the "file", its pid, or its device when the
 * trace has none, the process; reads and writes); hy_sim_layout_plan()
 * exports the master access graph and plans it into a BOPT read region of
 * the capacity given, then keeps the plan as a per-block relocation table
 * (O(1) lookups). A new plan replaces the table: a relocated block's BOPT
 * address always comes from the newest plan.
 *
 * Serving: a request's blocks that the plan relocated are served from the
 * BOPT (a region at the address given, or with UINT64_MAX right after the
 * last home byte training saw when the first plan was made, 1 MiB
 * aligned, as a BOPT partition next to the data would be; it stays there
 * for later plans), the others from home (device d's byte b at
 * d * 2^40 + b, wrapped into the model's capacity), each maximal run of
 * contiguous addresses one disk request. Writes to relocated blocks go to
 * the BOPT too (BORG writes them there and syncs home later, off the
 * measured path).
 *
 * Reconfiguration (hy_sim_layout_reconfigure): the plan made, then its
 * copy charged on a disk model as the daemon's reconfigurator does it
 * (reconfig/borg.c): range by range in plan order, in chunks of 256
 * blocks, each chunk read from where its blocks are now (home, or the
 * BOPT address the previous plan gave them; contiguous sources one read)
 * and written to its new BOPT place (contiguous places one write). Blocks
 * whose new place is their current one are not copied.
 *
 * Phases (hy_sim_layout_run_*): BORG's evaluation. The trace is cut into
 * N phases by request count (or at a split point, N = 2); before each
 * phase k >= 2 a reconfiguration plans from the trace of phases 1..k-1
 * (cumulative, BORG-C: one analyzer that keeps feeding) or of phase k-1
 * only (partial, BORG-P: a fresh analyzer per phase); phase k is served
 * with that plan, and, on a separate model of the same disk, without any
 * plan (vanilla). Each mode serves over its own model, every phase
 * (phase 1 without a plan, as vanilla); the copy of each reconfiguration
 * is charged on a fresh model of the same disk (head at byte 0), apart
 * from the phases' busy time, as BORG's paper shows its R phases apart.
 * Memory: the cumulative analyzer grows with the trace read so far (the
 * analyzer's bound aside), the partial one with one phase; the relocation
 * tables with the BOPT's capacity.
 *
 * Who calls it: ctl/simulate_cmd.c (--borg), the unit tests.
 *
 * Memory: hy_sim_layout_new allocates the analyzer and, once planned, the
 * relocation table; hy_sim_layout_free frees them. hy_sim_layout_run_new
 * allocates a layout and a disk model per mode and the vanilla model;
 * hy_sim_layout_run_free frees them. Threads: none.
 */
#ifndef HYBRIDFS_SIM_LAYOUT_H
#define HYBRIDFS_SIM_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/planner.h"

struct hy_devmodel;
struct hy_devmodel_params;
struct hy_trace_record;
struct hy_sim_layout;

struct hy_sim_layout_stats {
	uint64_t trained;	  /* requests fed to the analyzer (since the last forget) */
	uint64_t vertices, edges; /* of the graph the last plan was made from */
	uint64_t planned_blocks;  /* blocks the last plan relocated */
	uint64_t capacity;	  /* of the BOPT read region, blocks */
	uint64_t served, relocated_blocks; /* requests served; their blocks from the BOPT */
	uint64_t reconfigurations;	   /* plans made */
	uint64_t copied_blocks;		   /* by the last reconfiguration */
	uint64_t whole_home;		   /* reads partly relocated served whole from home */
};

/* A layout with a BOPT read region of @capacity blocks (>= 1) at byte
 * @bopt_address of the disk model (UINT64_MAX: after the home data).
 * 0 or -ENOMEM / -EINVAL. */
int hy_sim_layout_new(uint64_t capacity, uint64_t bopt_address, struct hy_sim_layout **out);
void hy_sim_layout_free(struct hy_sim_layout *layout);

/* The planner's options for the next plans (planner.h; NULL: the
 * defaults, BORG's greedy placement). Copied. */
void hy_sim_layout_set_planner(struct hy_sim_layout *layout,
			       const struct hy_planner_options *options);

/* With @whole, a read whose blocks the plan relocated only in part, none
 * of them written since the plan, is served whole from home (one disk
 * request where the split would make two or more); off by default. */
void hy_sim_layout_set_whole(struct hy_sim_layout *layout, bool whole);

/* One request of the training part. 0 or -ENOMEM. */
int hy_sim_layout_train(struct hy_sim_layout *layout, const struct hy_trace_record *rec);

/* Forgets what was trained (a fresh, empty graph), keeping the plan: the
 * partial mode's next period. 0 or -ENOMEM (the layout is unchanged). */
int hy_sim_layout_forget(struct hy_sim_layout *layout);

/* The plan from what was trained, replacing the previous one. 0, or a
 * negative errno with @why. */
int hy_sim_layout_plan(struct hy_sim_layout *layout, char *why, size_t why_size);

/* hy_sim_layout_plan, then the copy that carries the new plan out served
 * over @model (see the top comment); its service time in *@copy_ms.
 * 0, or a negative errno with @why (the previous plan is kept then). */
int hy_sim_layout_reconfigure(struct hy_sim_layout *layout, struct hy_devmodel *model,
			      double *copy_ms, char *why, size_t why_size);

/* Serves @rec over @model, with the plan (@apply) or without; returns the
 * request's service time in ms. */
double hy_sim_layout_serve(struct hy_sim_layout *layout, struct hy_devmodel *model,
			   const struct hy_trace_record *rec, bool apply);

void hy_sim_layout_get_stats(const struct hy_sim_layout *layout, struct hy_sim_layout_stats *out);

/* ---- phases: BORG-C and BORG-P over a trace -------------------------------- */

#define HY_SIM_LAYOUT_MAX_PHASES 64

enum hy_sim_layout_mode {
	HY_SIM_LAYOUT_CUMULATIVE = 0,
	HY_SIM_LAYOUT_PARTIAL = 1,
	HY_SIM_LAYOUT_MODES = 2,
};

struct hy_sim_layout_run_config {
	uint64_t requests; /* the trace's records (zero-length ones too) */
	unsigned phases;   /* 2 .. HY_SIM_LAYOUT_MAX_PHASES */
	uint64_t split;	   /* phases == 2 only: phase 2's first record; 0: cut evenly */
	bool modes[HY_SIM_LAYOUT_MODES]; /* which modes run (at least one) */
	uint64_t capacity;		 /* BOPT read region, blocks (>= 1) */
	uint64_t bopt_address;		 /* as hy_sim_layout_new */
	const struct hy_devmodel_params *device;
	const struct hy_planner_options *planner; /* NULL: the defaults */
	bool whole_reads;			  /* hy_sim_layout_set_whole */
};

/* One phase's figures in one mode. Phase 1 has no plan: its busy_ms is
 * vanilla's. */
struct hy_sim_layout_phase_mode {
	double busy_ms;			/* served with the plan made before it */
	double reconfiguration_busy_ms; /* that plan's copy, on its own model */
	uint64_t trained;		/* requests the plan was made from */
	uint64_t vertices, edges;	/* of the graph it was made from */
	uint64_t planned_blocks;	/* blocks the plan relocated */
	uint64_t copied_blocks;		/* blocks its copy moved */
	uint64_t bopt_blocks_read;	/* blocks the phase read (or wrote) in the BOPT */
};

struct hy_sim_layout_phase {
	uint64_t first, requests; /* its first record (from 0), its records */
	double busy_ms_vanilla;
	struct hy_sim_layout_phase_mode mode[HY_SIM_LAYOUT_MODES];
};

struct hy_sim_layout_run;

/* Checks @config (the first bad value named in @why, -EINVAL) and sets
 * the run up: 0, or -EINVAL / -ENOMEM with @why. */
int hy_sim_layout_run_new(const struct hy_sim_layout_run_config *config,
			  struct hy_sim_layout_run **out, char *why, size_t why_size);
void hy_sim_layout_run_free(struct hy_sim_layout_run *run);

/* The trace's next record, in order: reconfigures first when it starts a
 * phase, then serves it (vanilla and each mode) and trains each mode's
 * analyzer on it. 0, or a negative errno with @why. */
int hy_sim_layout_run_request(struct hy_sim_layout_run *run, const struct hy_trace_record *rec,
			      char *why, size_t why_size);

/* The phases so far (the one in progress included) in *@count; the array
 * belongs to the run. */
const struct hy_sim_layout_phase *hy_sim_layout_run_phases(const struct hy_sim_layout_run *run,
							   unsigned *count);

#endif
