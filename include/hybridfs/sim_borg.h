/*
 * sim_borg.h - BORG on a block trace (issue 7) through the daemon's code:
 * the analyzer and the planner the daemon runs (analyzer.h, planner.h),
 * trained on one part of a trace, its plans carried out into an
 * indirection map (map.h) as the reconfigurator does it, and the next part
 * served through the daemon's path below the cache (indirector.h) over a
 * disk model (devmodel.h), with the plans and without, to see what the
 * layout saves.
 *
 * The stack: the one stack builder's (stack.h), with no cache: an engine
 * whose indirector has a map in memory (no journal) and two devices over
 * one disk model, home and the BOPT. Home's objects are the trace's
 * devices (file id and object: device + 1); device d's byte b lies at
 * d * 2^40 + b of the disk, wrapped into the model's capacity. The BOPT's
 * read region lies at the address given, or with UINT64_MAX right after
 * the last home byte training saw when the first plan was made, 1 MiB
 * aligned, as a BOPT partition next to the data would be (it stays there
 * for later plans). Without a plan (vanilla) a request goes through a
 * second stack of the builder's over the same home, without a BOPT.
 *
 * Training: every request is fed to the analyzer as the daemon feeds its
 * access log (its device is the "file", its pid, or its device when the
 * trace has none, the process; reads and writes).
 *
 * Reconfiguration (hy_sim_borg_reconfigure), as reconfig/borg.c's run:
 * the master access graph exported and planned into a BOPT read region of
 * the capacity given; the map's dirty blocks sent home
 * (hy_indirector_sync_home, the daemon's flush); the difference between
 * plan and map (reorganize.h, hy_reorganize_diff); the ranges it drops
 * released (hy_indirector_drop); each range to copy, in plan order, in
 * chunks of 256 blocks: hy_indirector_copy_begin, the home range read
 * (hy_indirector_copy_read), written to its BOPT place, and committed
 * into the map in batches of 4 MiB (hy_indirector_copy_commit). Every
 * device request of it is served over the model given, apart from the
 * phases' busy time.
 *
 * Serving (hy_sim_borg_serve): a request, widened to whole 4 KiB blocks,
 * is read or written through hy_indirector_read/write, which split it
 * where the map says: relocated pieces from (or, with BORG's bopt_writes,
 * into) the BOPT, the rest home, one device request a piece.
 *
 * Phases (hy_sim_borg_run_*): BORG's evaluation. The trace is cut into N
 * phases by request count (or at a split point, N = 2); before each phase
 * k >= 2 a reconfiguration plans from the trace of phases 1..k-1
 * (cumulative, BORG-C: one analyzer that keeps feeding) or of phase k-1
 * only (partial, BORG-P: a fresh analyzer per phase); phase k is served
 * with that plan, and, on a separate model of the same disk, without any
 * plan (vanilla). Each mode serves over its own model, every phase (phase
 * 1 without a plan, as vanilla); the copy of each reconfiguration is
 * charged on a fresh model of the same disk (head at byte 0), apart from
 * the phases' busy time, as BORG's paper shows its R phases apart.
 *
 * Who calls it: ctl/simulate_cmd.c (--borg), ctl/tune_cmd.c (BOPT sizes),
 * the unit tests.
 *
 * Memory: hy_sim_borg_new allocates the analyzer, the map, the devices
 * and the stacks; hy_sim_borg_free frees them. The cumulative analyzer
 * grows with the trace read so far (the analyzer's bound aside), the
 * partial one with one phase; the map with the plan's extents.
 * hy_sim_borg_run_new allocates one BORG and one disk model per mode and
 * the vanilla model; hy_sim_borg_run_free frees them. Threads: none (the
 * indirector's gates are taken, never contended).
 */
#ifndef HYBRIDFS_SIM_BORG_H
#define HYBRIDFS_SIM_BORG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/planner.h"

struct hy_devmodel;
struct hy_devmodel_params;
struct hy_trace_record;
struct hy_sim_borg;

struct hy_sim_borg_stats {
	uint64_t trained;	   /* requests fed to the analyzer (since the last forget) */
	uint64_t vertices, edges;  /* of the graph the last plan was made from */
	uint64_t planned_blocks;   /* blocks the last plan relocated */
	uint64_t capacity;	   /* of the BOPT read region, blocks */
	uint64_t served;	   /* requests served with the plan */
	uint64_t relocated_blocks; /* blocks they read or wrote in the BOPT */
	uint64_t reconfigurations; /* plans carried out */
	uint64_t copied_blocks;	   /* committed into the map by the last one */
	uint64_t kept_blocks;	   /* left in place by the last one */
	uint64_t dropped_blocks;   /* released from the map by the last one */
	uint64_t synced_blocks;	   /* dirty blocks it sent home first */
};

/* A BORG with a BOPT read region of @capacity blocks (>= 1) at byte
 * @bopt_address of the disk model (UINT64_MAX: after the home data).
 * 0 or -ENOMEM / -EINVAL. */
int hy_sim_borg_new(uint64_t capacity, uint64_t bopt_address, struct hy_sim_borg **out);
void hy_sim_borg_free(struct hy_sim_borg *borg);

/* The planner's options for the next plans (planner.h; NULL: the
 * defaults, BORG's greedy placement). Copied. */
void hy_sim_borg_set_planner(struct hy_sim_borg *borg, const struct hy_planner_options *options);

/* One request of the training part. 0 or -ENOMEM. */
int hy_sim_borg_train(struct hy_sim_borg *borg, const struct hy_trace_record *rec);

/* Forgets what was trained (a fresh, empty graph), keeping the map: the
 * partial mode's next period. 0 or -ENOMEM (nothing changed). */
int hy_sim_borg_forget(struct hy_sim_borg *borg);

/* A plan from what was trained, carried out into the map (see the top
 * comment), its device requests served over @model (NULL: not timed);
 * their service time in *@copy_ms (may be NULL). 0, or a negative errno
 * with @why (a map left part-way, as the daemon's after a failed run). */
int hy_sim_borg_reconfigure(struct hy_sim_borg *borg, struct hy_devmodel *model, double *copy_ms,
			    char *why, size_t why_size);

/* Serves @rec over @model, through the map (@apply) or without a BOPT;
 * returns the request's service time in ms, or a negative errno. */
double hy_sim_borg_serve(struct hy_sim_borg *borg, struct hy_devmodel *model,
			 const struct hy_trace_record *rec, bool apply);

void hy_sim_borg_get_stats(const struct hy_sim_borg *borg, struct hy_sim_borg_stats *out);

/* ---- phases: BORG-C and BORG-P over a trace -------------------------------- */

#define HY_SIM_BORG_MAX_PHASES 64

enum hy_sim_borg_mode {
	HY_SIM_BORG_CUMULATIVE = 0,
	HY_SIM_BORG_PARTIAL = 1,
	HY_SIM_BORG_MODES = 2,
};

struct hy_sim_borg_run_config {
	uint64_t requests;	       /* the trace's records (zero-length ones too) */
	unsigned phases;	       /* 2 .. HY_SIM_BORG_MAX_PHASES */
	uint64_t split;		       /* phases == 2 only: phase 2's first record; 0: cut evenly */
	bool modes[HY_SIM_BORG_MODES]; /* which modes run (at least one) */
	uint64_t capacity;	       /* BOPT read region, blocks (>= 1) */
	uint64_t bopt_address;	       /* as hy_sim_borg_new */
	const struct hy_devmodel_params *device;
	const struct hy_planner_options *planner; /* NULL: the defaults */
};

/* One phase's figures in one mode. Phase 1 has no plan: its busy_ms is
 * vanilla's. */
struct hy_sim_borg_phase_mode {
	double busy_ms;			/* served with the plan made before it */
	double reconfiguration_busy_ms; /* that plan's carrying out, on its own model */
	uint64_t trained;		/* requests the plan was made from */
	uint64_t vertices, edges;	/* of the graph it was made from */
	uint64_t planned_blocks;	/* blocks the plan relocated */
	uint64_t copied_blocks;		/* blocks its copy committed */
	uint64_t bopt_blocks_read;	/* blocks the phase read (or wrote) in the BOPT */
};

struct hy_sim_borg_phase {
	uint64_t first, requests; /* its first record (from 0), its records */
	double busy_ms_vanilla;
	struct hy_sim_borg_phase_mode mode[HY_SIM_BORG_MODES];
};

struct hy_sim_borg_run;

/* Checks @config (the first bad value named in @why, -EINVAL) and sets
 * the run up: 0, or -EINVAL / -ENOMEM with @why. */
int hy_sim_borg_run_new(const struct hy_sim_borg_run_config *config, struct hy_sim_borg_run **out,
			char *why, size_t why_size);
void hy_sim_borg_run_free(struct hy_sim_borg_run *run);

/* The trace's next record, in order: reconfigures first when it starts a
 * phase, then serves it (vanilla and each mode) and trains each mode's
 * analyzer on it. 0, or a negative errno with @why. */
int hy_sim_borg_run_request(struct hy_sim_borg_run *run, const struct hy_trace_record *rec,
			    char *why, size_t why_size);

/* The phases so far (the one in progress included) in *@count; the array
 * belongs to the run. */
const struct hy_sim_borg_phase *hy_sim_borg_run_phases(const struct hy_sim_borg_run *run,
						       unsigned *count);

#endif
