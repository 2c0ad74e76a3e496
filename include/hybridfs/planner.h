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
 * Who calls it: reconfig/reorganize.c (for `hybridctl reorganize` and the
 * daemon's reconfigurator), the trace simulator (sim/layout.c), the unit
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

/* Plans @nv vertices and @ne edges into a read region of @capacity
 * blocks. Edges naming a vertex out of range, a self edge or a zero weight
 * are refused (-EINVAL, and @why says which edge); duplicates (same from
 * and to) add up. Returns 0 or -ENOMEM / -EINVAL. */
int hy_planner_plan(const struct hy_plan_vertex *vertices, size_t nv,
		    const struct hy_plan_edge *edges, size_t ne, uint64_t capacity,
		    struct hy_plan *out, char *why, size_t why_size);

void hy_plan_free(struct hy_plan *plan);

#endif
