/*
 * reorganize.h - one BORG reorganization's plan: the access log through the
 * analyzer and the planner into ranges with their BOPT places, and the
 * difference between that plan and what the BOPT holds now.
 *
 * What it is for: `hybridctl reorganize --dry-run` (read-only, in
 * hybridctl's own process) and the daemon's reconfigurator (borg.h) make a
 * plan the same way, here:
 *   1. cumulative mode (BORG-C): the saved master access graph, every
 *      weight decayed by @decay, plus the log since its run; partial mode
 *      (BORG-P): a fresh graph of the log since the last run (or --since);
 *   2. the greedy placement (planner.h) into @capacity_blocks;
 *   2b. with @file_sizes, small files whole (issue 18, item 3): a file of
 *      at most HY_REORGANIZE_WHOLE_BLOCKS blocks that the plan holds only
 *      in part (a header read up to its first definition, a source whose
 *      first block alone was read) or in pieces apart (blocks read at
 *      different times of a chain) is planned whole and in one piece, at
 *      its first range's place, the plan packed again behind it, while
 *      the room lasts: the rest of it would cost a seek home when it is
 *      read, a piece apart a seek within the BOPT, for a few blocks of
 *      room;
 *   3. with @save, the graph and the run are saved (so the next run reads
 *      only newer log rows) and the plan is stored under a new generation
 *      in bopt_plans and bopt_plan_ranges (state.h).
 *
 * The difference (hy_reorganize_diff) splits the work of carrying a plan
 * out into four lists of block ranges:
 *   keep: relocated now at exactly the place the plan gives them;
 *   drop: relocated now and planned elsewhere (a block that moves is
 *         dropped and copied again), or lying where a copy will go: they
 *         leave the BOPT;
 *   left: relocated now, not in the plan, and in nobody's way: they stay
 *         until a later plan wants their room (issue 18: a period whose
 *         reads the page cache served logs little, and dropping the
 *         layout for it made the next cold morning slower);
 *   copy: in the plan but not in place: they come in.
 * A clean block's home copy is current, so a block that moves inside the
 * BOPT is copied from home like one that comes in; the reconfigurator
 * sends dirty ones home before it drops (borg.h), and one dirtied after
 * that is not dropped: it stays where it is, and a copy planned onto its
 * place is skipped.
 *
 * Who calls it: ctl/reorganize_cmd.c, reconfig/borg_reconfig.c, the unit tests.
 *
 * Memory: a struct hy_reorganize_plan and a struct hy_reorganize_diff own
 * their arrays; free them with the matching _free(). Locks: none; the
 * caller's SQLite connection is used by one thread.
 */
#ifndef HYBRIDFS_REORGANIZE_H
#define HYBRIDFS_REORGANIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/analyzer.h"

struct sqlite3;
struct hy_map_extent;

struct hy_reorganize_params {
	bool partial;		  /* BORG-P; else BORG-C */
	int64_t since_ns;	  /* > 0: the log from this time on (CLOCK_REALTIME) */
	int64_t gap_ns;		  /* 0: the analyzer's default */
	double decay;		  /* cumulative mode's factor, 0 < f <= 1 */
	uint64_t capacity_blocks; /* the read region to plan for */
	bool save;		  /* save the graph, the run and the plan */
	bool always;		  /* carry the plan out unweighed (gain.h) */
	/* The home files' sizes in bytes, for step 2b (NULL: no step 2b):
	 * @sizes[i] for @ids[i], UINT64_MAX when not known (gone, not
	 * found). 0, or a negative errno that fails the plan. */
	int (*file_sizes)(void *ctx, const uint64_t *ids, size_t n, uint64_t *sizes, char *why,
			  size_t why_size);
	void *file_sizes_ctx;
};

/* Files up to this many 4 KiB blocks (64 KiB) are planned whole. */
#define HY_REORGANIZE_WHOLE_BLOCKS 16

/* One range of a plan, or of a diff's list. */
struct hy_reorganize_range {
	uint64_t file_id;
	uint64_t block; /* first 4 KiB block in the file */
	uint32_t nblocks;
	uint64_t bopt_block; /* where it starts in the read region */
	double heat;	     /* its vertex's weight (plans only) */
};

struct hy_reorganize_plan {
	uint64_t generation;		    /* with @save: its number in bopt_plans; else 0 */
	struct hy_reorganize_range *ranges; /* in BOPT order */
	size_t count;
	uint64_t blocks;       /* the ranges' blocks */
	size_t skipped;	       /* vertices that did not fit */
	size_t whole_files;    /* files step 2b made whole or one piece */
	uint64_t whole_blocks; /* ... and the blocks it added */
	struct hy_analyzer_stats analyzer;
	int64_t after, last; /* log rows read: after < rowid <= last */
	double analyze_seconds, plan_seconds;
};

struct hy_reorganize_diff {
	struct hy_reorganize_range *keep, *drop, *copy, *left;
	size_t nkeep, ndrop, ncopy, nleft;
	uint64_t keep_blocks, drop_blocks, copy_blocks, left_blocks;
};

/* Makes a plan from @db's log (see above). Returns 0, or a negative errno
 * with a message in @why. */
int hy_reorganize_make_plan(struct sqlite3 *db, const struct hy_reorganize_params *params,
			    struct hy_reorganize_plan *out, char *why, size_t why_size);
void hy_reorganize_plan_free(struct hy_reorganize_plan *plan);

/* Records how carrying plan @generation out went (state "copying", "done"
 * or "failed", and the figures). 0 or a negative errno with a message. */
int hy_reorganize_record(struct sqlite3 *db, uint64_t generation, const char *state,
			 uint64_t copied_blocks, uint64_t dropped_blocks, uint64_t kept_blocks,
			 uint64_t skipped_ranges, char *why, size_t why_size);

/* The difference between the relocated extents @current (sorted by file
 * id, then block, as hy_map_walk() gives them) and the plan's @ranges (in
 * any order). Returns 0 or -ENOMEM. Lists are sorted by (file id, block),
 * except copy, which is in BOPT order (the plan's order). Every current
 * block is in exactly one of keep, drop and left. */
int hy_reorganize_diff(const struct hy_map_extent *current, size_t ncurrent,
		       const struct hy_reorganize_range *ranges, size_t nranges,
		       struct hy_reorganize_diff *out);
void hy_reorganize_diff_free(struct hy_reorganize_diff *diff);

#endif
