/* test_planner.c - BORG's greedy planner: the order of small graphs worked
 * out by hand, capacity, duplicates, refused edges, and a large random graph
 * checked for shape (each vertex at most once, offsets contiguous).
 *
 * Notation in the comments: conn(v) = sum of all of v's edge weights;
 * key(v) = weight of v's edges to and from the placed set; in_w(v) = weight
 * of v -> placed, out_w(v) = placed -> v. A vertex goes in front of its
 * component when in_w > out_w, else at the back.
 *
 * The BORG slide's example (F -> H -> J -> A -> G -> C -> B -> E -> D) is
 * not reproduced: the text of the slide keeps the vertex letters and the 21
 * weights, but not which vertices each edge joins nor its direction, so the
 * graph cannot be recovered without guessing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/planner.h"
#include "suites.h"

/* Vertices 0..n-1 with the given lengths (1 block when @nblocks is NULL). */
static void make_vertices(struct hy_plan_vertex *v, size_t n, const uint32_t *nblocks)
{
	size_t i;

	for (i = 0; i < n; i++) {
		v[i].file_id = 1;
		v[i].block = 100 * i;
		v[i].nblocks = nblocks ? nblocks[i] : 1;
	}
}

/* Checks that @plan places exactly @order, contiguously from block 0. */
static void check_order(const struct hy_plan *plan, const struct hy_plan_vertex *v,
			const uint32_t *order, size_t n)
{
	uint64_t at = 0;
	size_t i;

	CU_ASSERT_EQUAL_FATAL(plan->count, n);
	for (i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(plan->entries[i].vertex, order[i]);
		CU_ASSERT_EQUAL(plan->entries[i].bopt_block, at);
		at += v[plan->entries[i].vertex].nblocks;
	}
	CU_ASSERT_EQUAL(plan->blocks_used, at);
}

static void plan_and_check(const struct hy_plan_vertex *v, size_t nv, const struct hy_plan_edge *e,
			   size_t ne, const uint32_t *order, size_t n)
{
	struct hy_plan plan;
	char why[128];

	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(v, nv, e, ne, UINT64_MAX, &plan, why, sizeof(why)),
			      0);
	check_order(&plan, v, order, n);
	CU_ASSERT_EQUAL(plan.skipped, nv - n);
	hy_plan_free(&plan);
}

/*
 * Chain a(0) -> b(1) -> c(2), weights 5 and 5; lengths 1, 2, 3.
 * conn: a 5, b 10, c 5 -> b first: [b].
 * Then key(a) = 5 (in_w: a -> b), key(c) = 5 (out_w: b -> c); tie, a is the
 * lower index: in_w 5 > out_w 0, in front: [a b]. Then c, out_w 5: back:
 * [a b c]. Offsets 0, 1, 3; 6 blocks.
 */
static void test_chain(void)
{
	static const uint32_t len[] = {1, 2, 3}, order[] = {0, 1, 2};
	const struct hy_plan_edge e[] = {{0, 1, 5}, {1, 2, 5}};
	struct hy_plan_vertex v[3];
	struct hy_plan plan;

	make_vertices(v, 3, len);
	plan_and_check(v, 3, e, 2, order, 3);
	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(v, 3, e, 2, 100, &plan, NULL, 0), 0);
	CU_ASSERT_EQUAL(plan.entries[1].bopt_block, 1);
	CU_ASSERT_EQUAL(plan.entries[2].bopt_block, 3);
	CU_ASSERT_EQUAL(plan.blocks_used, 6);
	CU_ASSERT_EQUAL(plan.skipped, 0);
	hy_plan_free(&plan);
	CU_ASSERT_PTR_NULL(plan.entries);
}

/*
 * Star around 0: 0 -> 1 (4), 0 -> 2 (3), 3 -> 0 (2), 4 -> 0 (1).
 * conn: 0 10, 1 4, 2 3, 3 2, 4 1 -> 0 first: [0].
 * keys: 1 4 (out), 2 3 (out), 3 2 (in), 4 1 (in); none changes later (the
 * leaves do not touch each other).
 * 1: back [0 1]; 2: back [0 1 2]; 3: front [3 0 1 2]; 4: front [4 3 0 1 2].
 */
static void test_star(void)
{
	static const uint32_t order[] = {4, 3, 0, 1, 2};
	const struct hy_plan_edge e[] = {{0, 1, 4}, {0, 2, 3}, {3, 0, 2}, {4, 0, 1}};
	struct hy_plan_vertex v[5];

	make_vertices(v, 5, NULL);
	plan_and_check(v, 5, e, 4, order, 5);
}

/*
 * Two components. Component X: 2 -> 3 (3), 3 -> 4 (3); component Y: 1 -> 0 (2).
 * conn: 0 2, 1 2, 2 3, 3 6, 4 3 -> 3 first: [3].
 * key(2) 3 (in), key(4) 3 (out); tie, 2 first: front [2 3]; 4: back [2 3 4].
 * Nothing touches {2 3 4}: the most connected unplaced vertex starts Y: 0
 * and 1 both have 2, 0 is the lower index; Y starts after X: [2 3 4 | 0].
 * key(1) 2 (in: 1 -> 0) > out 0: in front of ITS component, so it stays
 * next to 0: [2 3 4 | 1 0] (not [1 2 3 4 0], which would split 1 from 0).
 */
static void test_components(void)
{
	static const uint32_t order[] = {2, 3, 4, 1, 0};
	const struct hy_plan_edge e[] = {{1, 0, 2}, {2, 3, 3}, {3, 4, 3}};
	struct hy_plan_vertex v[5];

	make_vertices(v, 5, NULL);
	plan_and_check(v, 5, e, 3, order, 5);
}

/*
 * Direction: 1 -> 2 (6), 0 -> 1 (5), 1 -> 0 (3), 3 -> 1 (2), 1 -> 3 (2).
 * conn: 0 8, 1 18, 2 6, 3 4 -> 1 first: [1].
 * key(0) = in 5 + out 3 = 8, key(2) = out 6, key(3) = in 2 + out 2 = 4.
 * 0: its heavier edge goes INTO the placed set (5 > 3): front [0 1].
 * 2: out only: back [0 1 2]. 3: in == out, not heavier: back [0 1 2 3].
 */
static void test_direction(void)
{
	static const uint32_t order[] = {0, 1, 2, 3};
	const struct hy_plan_edge e[] = {{1, 2, 6}, {0, 1, 5}, {1, 0, 3}, {3, 1, 2}, {1, 3, 2}};
	struct hy_plan_vertex v[4];

	make_vertices(v, 4, NULL);
	plan_and_check(v, 4, e, 5, order, 4);
}

/*
 * Ties: the cycle 0 -> 1 -> 2 -> 3 -> 0, all weights 1; every conn is 2.
 * 0 first (lower index): [0]. key(1) 1 (out), key(3) 1 (in): 1 first:
 * back [0 1]. Now key(2) 1 (out), key(3) 1: 2 first: back [0 1 2].
 * key(3) = in 1 (3 -> 0) + out 1 (2 -> 3) = 2; in == out: back [0 1 2 3].
 * The same plan twice, and with the edges given in reverse order.
 */
static void test_ties(void)
{
	static const uint32_t order[] = {0, 1, 2, 3};
	const struct hy_plan_edge e[] = {{0, 1, 1}, {1, 2, 1}, {2, 3, 1}, {3, 0, 1}};
	const struct hy_plan_edge rev[] = {{3, 0, 1}, {2, 3, 1}, {1, 2, 1}, {0, 1, 1}};
	struct hy_plan_vertex v[4];
	struct hy_plan a, b;

	make_vertices(v, 4, NULL);
	plan_and_check(v, 4, e, 4, order, 4);
	plan_and_check(v, 4, rev, 4, order, 4);
	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(v, 4, e, 4, 1000, &a, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(v, 4, e, 4, 1000, &b, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(a.count, b.count);
	CU_ASSERT_EQUAL(memcmp(a.entries, b.entries, a.count * sizeof(*a.entries)), 0);
	hy_plan_free(&a);
	hy_plan_free(&b);
}

/*
 * Capacity 10 blocks. Lengths: 0 4, 1 3, 2 5, 3 1, 4 2, 5 20.
 * Edges 0 -> 1 (10), 1 -> 2 (9), 2 -> 3 (8), 3 -> 4 (1), 5 -> 3 (7).
 * conn: 0 10, 1 19, 2 17, 3 16, 4 1, 5 7.
 * 1 first (3 blocks, 7 left): [1]. key(0) 10 (in), key(2) 9 (out).
 * 0 fits (4, 3 left), in 10 > 0: front [0 1]. 2 needs 5 > 3: skipped.
 * Nothing placed touches an unplaced vertex: new component, most connected
 * unplaced is 3 (1 block, 2 left): [0 1 | 3]. key(4) 1 (out), key(5) 7 (in).
 * 5 needs 20: skipped. 4 (2 blocks, 0 left): back [0 1 | 3 4].
 * Entries 0@0, 1@4, 3@7, 4@8; 10 blocks used; 2 skipped (2 and 5).
 */
static void test_capacity(void)
{
	static const uint32_t len[] = {4, 3, 5, 1, 2, 20}, order[] = {0, 1, 3, 4};
	const struct hy_plan_edge e[] = {{0, 1, 10}, {1, 2, 9}, {2, 3, 8}, {3, 4, 1}, {5, 3, 7}};
	struct hy_plan_vertex v[6];
	struct hy_plan plan;

	make_vertices(v, 6, len);
	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(v, 6, e, 5, 10, &plan, NULL, 0), 0);
	check_order(&plan, v, order, 4);
	CU_ASSERT_EQUAL(plan.entries[0].bopt_block, 0);
	CU_ASSERT_EQUAL(plan.entries[1].bopt_block, 4);
	CU_ASSERT_EQUAL(plan.entries[2].bopt_block, 7);
	CU_ASSERT_EQUAL(plan.entries[3].bopt_block, 8);
	CU_ASSERT_EQUAL(plan.blocks_used, 10);
	CU_ASSERT_EQUAL(plan.skipped, 2);
	hy_plan_free(&plan);

	/* Capacity 0: nothing placed, everything counted as not fitting. */
	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(v, 6, e, 5, 0, &plan, NULL, 0), 0);
	CU_ASSERT_EQUAL(plan.count, 0);
	CU_ASSERT_EQUAL(plan.blocks_used, 0);
	CU_ASSERT_EQUAL(plan.skipped, 6);
	hy_plan_free(&plan);

	/* Capacity 3: 1 (3 blocks) fills it; the others never fit. */
	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(v, 6, e, 5, 3, &plan, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(plan.count, 1);
	CU_ASSERT_EQUAL(plan.entries[0].vertex, 1);
	CU_ASSERT_EQUAL(plan.blocks_used, 3);
	CU_ASSERT_EQUAL(plan.skipped, 5);
	hy_plan_free(&plan);
}

/*
 * Duplicates: 0 -> 1 given three times with weight 1, 2 -> 1 once with 2.
 * Summed: 0 -> 1 (3), 2 -> 1 (2). conn: 0 3, 1 5, 2 2 -> 1 first: [1].
 * key(0) 3 (in) > key(2) 2 (in): front [0 1], then front [2 0 1].
 * Had the duplicates not added up, key(0) would be 1 and 2 would come
 * first: [0 2 1].
 */
static void test_duplicates(void)
{
	static const uint32_t order[] = {2, 0, 1};
	const struct hy_plan_edge e[] = {{0, 1, 1}, {2, 1, 2}, {0, 1, 1}, {0, 1, 1}};
	const struct hy_plan_edge huge[] = {{0, 1, UINT64_MAX}, {0, 1, UINT64_MAX}, {2, 1, 1}};
	static const uint32_t huge_order[] = {2, 0, 1};
	struct hy_plan_vertex v[3];

	make_vertices(v, 3, NULL);
	plan_and_check(v, 3, e, 4, order, 3);
	/* Sums past UINT64_MAX saturate: conn(0) = conn(1) = UINT64_MAX, 0 is
	 * the lower index: [0]; key(1) = out UINT64_MAX: back [0 1]; 2 -> 1,
	 * in 1: front [2 0 1]. */
	plan_and_check(v, 3, huge, 3, huge_order, 3);
}

static void expect_refused(const struct hy_plan_vertex *v, size_t nv, const struct hy_plan_edge *e,
			   size_t ne, const char *needle)
{
	struct hy_plan plan = {.count = 42};
	char why[160] = "";

	CU_ASSERT_EQUAL(hy_planner_plan(v, nv, e, ne, 100, &plan, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NULL(plan.entries);
	CU_ASSERT_EQUAL(plan.count, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, needle));
	hy_plan_free(&plan);
}

static void test_invalid(void)
{
	struct hy_plan_vertex v[3];
	const struct hy_plan_edge from_out[] = {{0, 1, 1}, {1, 2, 1}, {3, 0, 1}};
	const struct hy_plan_edge to_out[] = {{0, 1, 1}, {1, 7, 1}};
	const struct hy_plan_edge self[] = {{0, 1, 1}, {1, 2, 1}, {2, 0, 1}, {2, 2, 4}};
	const struct hy_plan_edge zero[] = {{0, 1, 0}};
	struct hy_plan plan;

	make_vertices(v, 3, NULL);
	expect_refused(v, 3, from_out, 3, "edge 2");
	expect_refused(v, 3, from_out, 3, "out of range");
	expect_refused(v, 3, to_out, 2, "edge 1");
	expect_refused(v, 3, self, 4, "edge 3");
	expect_refused(v, 3, self, 4, "self");
	expect_refused(v, 3, zero, 1, "edge 0");
	expect_refused(v, 3, zero, 1, "zero weight");
	expect_refused(NULL, 0, zero, 1, "edge 0"); /* no vertex at all */
	expect_refused(NULL, 3, NULL, 0, "vertex array");
	expect_refused(v, 3, NULL, 2, "edge array");
	v[1].nblocks = 0;
	expect_refused(v, 3, NULL, 0, "vertex 1");
	v[1].nblocks = 1;
	CU_ASSERT_EQUAL(hy_planner_plan(v, 3, NULL, 0, 10, NULL, NULL, 0), -EINVAL);
	/* A NULL why is fine. */
	CU_ASSERT_EQUAL(hy_planner_plan(v, 3, zero, 1, 10, &plan, NULL, 0), -EINVAL);
	hy_plan_free(NULL);
}

/*
 * Empty graph: no vertices gives an empty plan; vertices with no edges all
 * have conn 0 and each starts its own component in index order: [0 1 2].
 */
static void test_empty(void)
{
	static const uint32_t order[] = {0, 1, 2};
	static const uint32_t len[] = {2, 2, 2};
	struct hy_plan_vertex v[3];
	struct hy_plan plan;
	char why[64];

	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(NULL, 0, NULL, 0, 100, &plan, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(plan.count, 0);
	CU_ASSERT_EQUAL(plan.blocks_used, 0);
	CU_ASSERT_EQUAL(plan.skipped, 0);
	hy_plan_free(&plan);

	make_vertices(v, 3, len);
	plan_and_check(v, 3, NULL, 0, order, 3);
	/* Capacity 5: 0 and 1 fit (4 blocks), 2 does not. */
	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(v, 3, NULL, 0, 5, &plan, NULL, 0), 0);
	check_order(&plan, v, order, 2);
	CU_ASSERT_EQUAL(plan.skipped, 1);
	hy_plan_free(&plan);
}

/* xorshift64*: a fixed seed gives the same graph on every run. */
static uint64_t prng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* The shape every plan must have: each vertex at most once, offsets
 * strictly increasing and contiguous (so no two ranges overlap), within
 * the capacity, and count + skipped == nv. */
static void check_shape(const struct hy_plan *plan, const struct hy_plan_vertex *v, size_t nv,
			uint64_t capacity)
{
	unsigned char *seen = calloc(nv, 1);
	uint64_t at = 0;
	size_t i, bad_seen = 0, bad_offset = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
	CU_ASSERT_EQUAL(plan->count + plan->skipped, nv);
	for (i = 0; i < plan->count; i++) {
		uint32_t x = plan->entries[i].vertex;

		if (x >= nv || seen[x]) {
			bad_seen++;
			continue;
		}
		seen[x] = 1;
		if (plan->entries[i].bopt_block != at ||
		    (i > 0 && plan->entries[i].bopt_block <= plan->entries[i - 1].bopt_block))
			bad_offset++;
		at = plan->entries[i].bopt_block + v[x].nblocks;
	}
	CU_ASSERT_EQUAL(bad_seen, 0);
	CU_ASSERT_EQUAL(bad_offset, 0);
	CU_ASSERT_EQUAL(plan->blocks_used, at);
	CU_ASSERT(plan->blocks_used <= capacity);
	free(seen);
}

static void test_large(void)
{
	enum { NV = 100000, NE = 1000000 };
	struct hy_plan_vertex *v = calloc(NV, sizeof(*v));
	struct hy_plan_edge *e = calloc(NE, sizeof(*e));
	uint64_t seed = 0x5eed5eed12345678ULL, total = 0;
	struct hy_plan plan;
	size_t i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	for (i = 0; i < NV; i++) {
		v[i].file_id = i / 100;
		v[i].block = (i % 100) * 16;
		v[i].nblocks = 1 + (uint32_t)(prng(&seed) % 8);
		total += v[i].nblocks;
	}
	for (i = 0; i < NE; i++) {
		do {
			e[i].from = (uint32_t)(prng(&seed) % NV);
			e[i].to = (uint32_t)(prng(&seed) % NV);
		} while (e[i].from == e[i].to);
		e[i].weight = 1 + prng(&seed) % 100;
	}
	/* Room for everything: every vertex exactly once. */
	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(v, NV, e, NE, UINT64_MAX, &plan, NULL, 0), 0);
	CU_ASSERT_EQUAL(plan.count, NV);
	CU_ASSERT_EQUAL(plan.blocks_used, total);
	check_shape(&plan, v, NV, UINT64_MAX);
	hy_plan_free(&plan);
	/* Room for about a third: some skipped, the rest still well formed. */
	CU_ASSERT_EQUAL_FATAL(hy_planner_plan(v, NV, e, NE, total / 3, &plan, NULL, 0), 0);
	CU_ASSERT(plan.count > 0 && plan.count < NV);
	CU_ASSERT(plan.skipped > 0);
	check_shape(&plan, v, NV, total / 3);
	hy_plan_free(&plan);
	free(v);
	free(e);
}

/* ---- the chains placement ------------------------------------------------ */

static void plan_chains_and_check(const struct hy_plan_vertex *v, size_t nv,
				  const struct hy_plan_edge *e, size_t ne, uint64_t capacity,
				  uint32_t near, const uint32_t *order, size_t n)
{
	struct hy_planner_options o = {.placement = HY_PLANNER_CHAINS, .near_blocks = near};
	struct hy_plan plan;
	char why[128];

	CU_ASSERT_EQUAL_FATAL(
		hy_planner_plan_with(&o, v, nv, e, ne, capacity, &plan, why, sizeof(why)), 0);
	check_order(&plan, v, order, n);
	CU_ASSERT_EQUAL(plan.skipped, nv - n);
	hy_plan_free(&plan);
}

/*
 * Scattered ranges 0..4 (blocks 0, 100, ...), read 0 1 2 3 4 five times,
 * with a weaker 0 -> 2 (3) and 4 -> 0 (2). Chains, heaviest first: 0 -> 1,
 * 1 -> 2, 2 -> 3, 3 -> 4 link; 0 -> 2 does not (0 has its successor), nor
 * 4 -> 0 (one chain already). Gain: four edges made sequential, 20 > 0:
 * [0 1 2 3 4] at blocks 0..4.
 */
static void test_chains_order(void)
{
	static const uint32_t order[] = {0, 1, 2, 3, 4};
	const struct hy_plan_edge e[] = {{0, 1, 5}, {1, 2, 5}, {2, 3, 5},
					 {3, 4, 5}, {0, 2, 3}, {4, 0, 2}};
	struct hy_plan_vertex v[5];

	make_vertices(v, 5, NULL);
	plan_chains_and_check(v, 5, e, 6, 100, 0, order, 5);
}

/*
 * What is sequential at home stays home. Blocks 0, 1, 2 of one file read
 * in that order: one run, one chain whose edges were sequential already:
 * gain 0, nothing moves. Blocks 0 and 10 read one after the other: with a
 * read-ahead of 16 blocks they are near enough at home (nothing moves);
 * with none, the chain [0 10] gains the edge's 4.
 */
static void test_chains_home_sequential(void)
{
	const struct hy_plan_edge e[] = {{0, 1, 4}, {1, 2, 4}};
	static const uint32_t pair[] = {0, 1};
	struct hy_plan_vertex v[3];

	make_vertices(v, 3, NULL);
	for (int i = 0; i < 3; i++)
		v[i].block = (uint64_t)i;
	plan_chains_and_check(v, 3, e, 2, 100, 0, NULL, 0);
	v[1].block = 10;
	plan_chains_and_check(v, 2, e, 1, 100, 16, NULL, 0);
	plan_chains_and_check(v, 2, e, 1, 100, 0, pair, 2);
}

/*
 * A request's range moves whole. A = [100, 2 blocks] and B = [102, 1] are
 * one request's range cut in two (A -> B, 10), then C = [500] and D = [900]
 * are read (B -> C 6, C -> D 6, D -> A 5). Runs: A B. Chain: A B C D
 * (D -> A would close a cycle). Gain 12. Capacity 5: all; 4: A B C (a
 * prefix of whole runs); 3: A B alone is one run, which gains nothing, and
 * A without B would split the request: nothing.
 */
static void test_chains_whole_runs(void)
{
	static const uint32_t len[] = {2, 1, 1, 1}, all[] = {0, 1, 2, 3}, three[] = {0, 1, 2};
	const struct hy_plan_edge e[] = {{0, 1, 10}, {1, 2, 6}, {2, 3, 6}, {3, 0, 5}};
	struct hy_plan_vertex v[4];

	make_vertices(v, 4, len);
	v[0].block = 100;
	v[1].block = 102;
	v[2].block = 500;
	v[3].block = 900;
	plan_chains_and_check(v, 4, e, 4, 5, 0, all, 4);
	plan_chains_and_check(v, 4, e, 4, 4, 0, three, 3);
	plan_chains_and_check(v, 4, e, 4, 3, 0, NULL, 0);
	plan_chains_and_check(v, 4, e, 4, 2, 0, NULL, 0);
}

static void test_chains_refused(void)
{
	struct hy_planner_options o = {.placement = (enum hy_planner_placement)7};
	const struct hy_plan_edge self[] = {{1, 1, 1}};
	struct hy_plan_vertex v[2];
	struct hy_plan plan;
	char why[128];

	make_vertices(v, 2, NULL);
	CU_ASSERT_EQUAL(hy_planner_plan_with(&o, v, 2, NULL, 0, 10, &plan, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "placement 7"));
	o.placement = HY_PLANNER_CHAINS;
	CU_ASSERT_EQUAL(hy_planner_plan_with(&o, v, 2, self, 1, 10, &plan, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "self edge"));
	/* NULL options: the greedy placement */
	CU_ASSERT_EQUAL(hy_planner_plan_with(NULL, v, 2, NULL, 0, 10, &plan, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(plan.count, 2);
	hy_plan_free(&plan);
}

int hy_test_add_planner(void)
{
	CU_pSuite s = CU_add_suite("planner", NULL, NULL);

	if (!s || !CU_add_test(s, "chain a->b->c", test_chain) ||
	    !CU_add_test(s, "star", test_star) ||
	    !CU_add_test(s, "disconnected components", test_components) ||
	    !CU_add_test(s, "direction of the connection", test_direction) ||
	    !CU_add_test(s, "ties by lower index, deterministic", test_ties) ||
	    !CU_add_test(s, "capacity and skipped ranges", test_capacity) ||
	    !CU_add_test(s, "duplicate edges add up", test_duplicates) ||
	    !CU_add_test(s, "invalid input refused", test_invalid) ||
	    !CU_add_test(s, "empty graph", test_empty) ||
	    !CU_add_test(s, "100k vertices, 1M random edges", test_large) ||
	    !CU_add_test(s, "chains: successors adjacent", test_chains_order) ||
	    !CU_add_test(s, "chains: sequential at home stays home", test_chains_home_sequential) ||
	    !CU_add_test(s, "chains: a request's range moves whole", test_chains_whole_runs) ||
	    !CU_add_test(s, "chains: bad placement and edges refused", test_chains_refused))
		return -1;
	return 0;
}
