/*
 * planner.h - BORG's planner: from the master access graph to a layout plan
 * of the BOPT's read region.
 *
 * What it is for: the analyzer (analyzer.h) gives a directed, weighted
 * graph whose vertices are non-overlapping block ranges of files and whose
 * edges say "this range was read right after that one", weighted by how
 * often. The planner lays the ranges out in one sequence so that ranges
 * read one after the other sit one after the other in the BOPT, where the
 * indirection map sends later reads (so they become sequential).
 *
 * The greedy placement (BORG, "Planner"):
 *   1. the connectivity of a vertex is the sum of the weights of all its
 *      edges, in and out;
 *   2. the most connected vertex is placed first;
 *   3. then, again and again, the unplaced vertex most connected to the
 *      placed set (the sum of the weights of its edges to and from placed
 *      vertices) is placed: in front of the sequence when its edges into
 *      the placed set weigh more than those out of it (it is read before
 *      them), else at the back;
 *   4. when no unplaced vertex touches the placed set, the most connected
 *      unplaced vertex starts again (a new component, placed at the back);
 *   5. a vertex that does not fit in what is left of the capacity is
 *      skipped; placement goes on with the others until the capacity is
 *      full or no vertex is left.
 *   Ties are broken by the lower vertex index, so a graph always gives the
 *   same plan. With a max-heap with lazy updates the cost is O(E log V).
 *
 * The chains placement (an option, hy_planner_plan_with): ranges read one
 * right after the other sit one right after the other in the BOPT, a
 * request's ranges move together, and only what saves seeks moves:
 *   1. runs: an edge between two ranges of which one continues the other
 *      exactly at home joins them, in home order, heaviest edges first,
 *      while the run stays within max_run_blocks: a request's range that
 *      the analyzer cut into several vertices moves whole or not at all
 *      (a long sequential stream is cut into runs of that size);
 *   2. chains of runs: the edges by weight, heaviest first (ties: lower
 *      from, then lower to); an edge u -> v that is not already sequential
 *      at home (same file, v starting within near_blocks after u's end)
 *      joins u's chain, at its tail, to v's, at its head (Pettis and
 *      Hansen's chaining of code blocks, applied to block ranges);
 *   3. a chain's gain: the weight of its edges u -> v that it makes
 *      sequential (v within near_blocks after u in the chain) and that were
 *      not at home, less the weight of the edges that were sequential at
 *      home and that it breaks (inside it, or to a range outside it); a
 *      chain whose gain is not positive stays home: moving it saves no
 *      seek;
 *   4. the chains that gain, by gain per block, highest first, while they
 *      fit; one that does not fit is cut to its longest prefix of whole
 *      runs that fits (two runs at least: one alone gains nothing);
 *   5. the chosen chains laid out by the greedy placement above, each chain
 *      one vertex of the weight of the edges between chains, its ranges in
 *      chain order.
 *   Costs: O(E log E) for the sorts, O(V + E) for the rest; memory O(V + E).
 *
 * Who calls it: reconfig/reorganize.c (for `hybridctl reorganize` and the
 * daemon's reconfigurator), the trace simulator (sim/borg.c), bench/borg.c, the unit
 * tests.
 *
 * Memory: hy_planner_plan() fills a struct hy_plan whose array it
 * allocates; hy_plan_free() releases it. The input arrays are only read.
 * Locks: none; no shared state.
 */
#ifndef HYBRIDFS_PLANNER_H
#define HYBRIDFS_PLANNER_H

#include <stddef.h>
#include <stdint.h>

struct hy_plan_vertex {
	uint64_t file_id;
	uint64_t block;	  /* first 4 KiB block of the range in the file */
	uint32_t nblocks; /* length of the range, in blocks (>= 1) */
};

struct hy_plan_edge {
	uint32_t from, to; /* indexes into the vertex array; from != to */
	uint64_t weight;   /* > 0 */
};

struct hy_plan_entry {
	uint32_t vertex;     /* index into the input vertex array */
	uint64_t bopt_block; /* where the range starts in the BOPT read region */
};

struct hy_plan {
	struct hy_plan_entry *entries; /* in BOPT order: bopt_block ascending */
	size_t count;
	uint64_t blocks_used; /* sum of the placed ranges' lengths */
	size_t skipped;	      /* vertices that did not fit */
};

enum hy_planner_placement {
	HY_PLANNER_GREEDY = 0, /* BORG's greedy placement of vertices (steps 1-5) */
	HY_PLANNER_CHAINS = 1, /* chains of successors (below) */
};

#define HY_PLANNER_DEFAULT_MAX_RUN_BLOCKS 64 /* 256 KiB: a large request */

struct hy_planner_options {
	enum hy_planner_placement placement;
	/* chains: a run's length at most (0: the default above) */
	uint32_t max_run_blocks;
	/* chains: a range starting at most this many blocks after the end of
	 * the range read before it (same file) counts as sequential at home
	 * (a drive's read-ahead has it); 0: only an exact continuation */
	uint32_t near_blocks;
};

/* Plans @nv vertices and @ne edges into a read region of @capacity
 * blocks. Edges naming a vertex out of range, a self edge or a zero weight
 * are refused (-EINVAL, and @why says which edge); duplicates (same from
 * and to) add up. Returns 0 or -ENOMEM / -EINVAL. */
int hy_planner_plan(const struct hy_plan_vertex *vertices, size_t nv,
		    const struct hy_plan_edge *edges, size_t ne, uint64_t capacity,
		    struct hy_plan *out, char *why, size_t why_size);

/* hy_planner_plan with @options (NULL: the defaults, all fields 0: the
 * greedy placement); a placement out of range is refused (-EINVAL). */
int hy_planner_plan_with(const struct hy_planner_options *options,
			 const struct hy_plan_vertex *vertices, size_t nv,
			 const struct hy_plan_edge *edges, size_t ne, uint64_t capacity,
			 struct hy_plan *out, char *why, size_t why_size);

void hy_plan_free(struct hy_plan *plan);

#endif
