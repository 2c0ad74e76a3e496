/*
 * gain.h - what a plan would save: the period's reads priced on a model of
 * the disk, as the disk lies now, with the plan carried out, and with
 * nothing relocated (issue 18, item 5: a plan that can lose must know
 * when it would, and hold back).
 *
 * What it is for: BORG's planner lays blocks out in access order, but on a
 * disk where the files already lie in that order (a tree written the way
 * it is read) the BOPT only adds the seeks between it and home. Before the
 * reconfigurator moves anything it asks here: the reads of the log rows
 * the plan was made from (access_log, rowid in (@after, @last], mode 0),
 * in their order, each cut into its pieces by the layout, each piece
 * served by a model of the disk (devmodel.h) at its physical place:
 *   home   the block's own place, from the log's phys_block (FIEMAP when
 *          it was logged; the request's blocks taken as contiguous from
 *          there);
 *   BOPT   the place the BOPT's read region has on the disk, asked once
 *          per extent of the layout through the caller's bopt_address().
 * Three layouts are priced, each on a fresh model: "home" (nothing
 * relocated), "current" (the map's extents) and "planned" (what the map
 * holds after the diff: keep, left and copy). What is not in the log is
 * not priced: metadata (directories, inodes) and reads the page cache
 * served; so the estimate favours the BOPT a little when a chain's reads
 * are interleaved with lookups, and hy_gain_decide() asks for a margin.
 *
 * A log row without a physical block (tmpfs, a file FIEMAP could not map)
 * cannot be priced: with fewer than half the reads priced the estimate is
 * not known and the caller goes ahead as without it.
 *
 * Who calls it: reconfig/borg_reconfig.c (the daemon's reconfigurator,
 * before it drops or copies), the unit tests.
 * Memory: nothing is kept; the caller owns every array. Locks: none; the
 * caller's SQLite connection is used by one thread.
 */
#ifndef HYBRIDFS_GAIN_H
#define HYBRIDFS_GAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/devmodel.h"

struct sqlite3;
struct hy_map_extent;
struct hy_reorganize_diff;

struct hy_gain_place {
	struct hy_devmodel_params disk; /* the home disk's model */
	/* The BOPT's read region on a disk of its own (a device, or a file on
	 * another filesystem): its pieces go to a second model of the same
	 * kind, so a switch between them is no seek. */
	bool bopt_separate;
	/* The disk byte address of BOPT read-region block @bopt_block; 0 or
	 * a negative errno (then nothing is known). */
	int (*bopt_address)(void *ctx, uint64_t bopt_block, uint64_t *out);
	void *ctx;
};

struct hy_gain_estimate {
	bool known;	   /* enough reads priced to judge */
	uint64_t reads;	   /* log rows read */
	uint64_t priced;   /* ... of them with a physical place */
	double home_ms;	   /* nothing relocated */
	double current_ms; /* the map as it is */
	double planned_ms; /* the map after the plan */
	uint64_t home_seeks, current_seeks, planned_seeks;
	/* the requests the model served: a read over pieces in several
	 * places is one for each */
	uint64_t home_requests, current_requests, planned_requests;
};

/* Prices the reads of log rows (@after, @last] under the three layouts:
 * @current is the map (sorted by file id and block, as hy_map_snapshot()
 * gives it), @diff the plan's difference from it. 0, or a negative errno
 * with @why naming the cause (SQLite, the model, memory). */
int hy_gain_estimate(struct sqlite3 *db, int64_t after, int64_t last,
		     const struct hy_map_extent *current, size_t ncurrent,
		     const struct hy_reorganize_diff *diff, const struct hy_gain_place *place,
		     struct hy_gain_estimate *out, char *why, size_t why_size);

/* What to do with a plan, by its estimate. */
enum hy_gain_decision {
	HY_GAIN_GO,	  /* the plan saves at least the margin (or nothing is known) */
	HY_GAIN_HOLD,	  /* it does not: move nothing */
	HY_GAIN_ALL_HOME, /* the disk is faster with nothing relocated: drop all */
};

/* The margin a plan must save (of the current layout's time): a plan that
 * saves less may lose what the model does not see. */
#define HY_GAIN_MARGIN 0.02

enum hy_gain_decision hy_gain_decide(const struct hy_gain_estimate *e);

#endif
