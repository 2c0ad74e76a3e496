/*
 * test_analyzer.c - BORG's analyzer (analyzer.h) on hand-made logs whose
 * graphs are worked out by hand below, the time gap, splitting, processes
 * kept apart, incremental runs equal to a full run, decay, the memory bound
 * and the invariants of a large random log.
 *
 * Notation: a vertex is (file, first block, blocks), weight in brackets;
 * an edge X -> Y [w]. "Within the gap" means less than one second apart
 * (HY_ANALYZER_DEFAULT_GAP_NS) unless a test sets its own gap.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hybridfs/analyzer.h"
#include "hybridfs/state.h"
#include "suites.h"

#define MS  1000000LL
#define SEC 1000000000LL

static char why[1024];

struct graph {
	struct hy_plan_vertex *v;
	size_t nv;
	uint64_t *w;
	struct hy_plan_edge *e;
	size_t ne;
};

static void graph_get(const struct hy_analyzer *a, struct graph *g)
{
	memset(g, 0, sizeof(*g));
	CU_ASSERT_EQUAL_FATAL(hy_analyzer_export(a, &g->v, &g->nv, &g->w, &g->e, &g->ne), 0);
}

static void graph_free(struct graph *g)
{
	free(g->v);
	free(g->w);
	free(g->e);
	memset(g, 0, sizeof(*g));
}

static long vfind(const struct graph *g, uint64_t f, uint64_t b, uint32_t n)
{
	for (size_t i = 0; i < g->nv; i++)
		if (g->v[i].file_id == f && g->v[i].block == b && g->v[i].nblocks == n)
			return (long)i;
	return -1;
}

/* The weight of vertex (f, b, n), 0 when there is none. */
static uint64_t vw(const struct graph *g, uint64_t f, uint64_t b, uint32_t n)
{
	long i = vfind(g, f, b, n);

	return i < 0 ? 0 : g->w[i];
}

/* The weight of edge (f1, b1, n1) -> (f2, b2, n2), 0 when there is none. */
static uint64_t ew(const struct graph *g, uint64_t f1, uint64_t b1, uint32_t n1, uint64_t f2,
		   uint64_t b2, uint32_t n2)
{
	long x = vfind(g, f1, b1, n1), y = vfind(g, f2, b2, n2);

	if (x < 0 || y < 0)
		return 0;
	for (size_t i = 0; i < g->ne; i++)
		if (g->e[i].from == (uint32_t)x && g->e[i].to == (uint32_t)y)
			return g->e[i].weight;
	return 0;
}

static bool graphs_equal(const struct graph *x, const struct graph *y)
{
	if (x->nv != y->nv || x->ne != y->ne)
		return false;
	for (size_t i = 0; i < x->nv; i++)
		if (x->v[i].file_id != y->v[i].file_id || x->v[i].block != y->v[i].block ||
		    x->v[i].nblocks != y->v[i].nblocks || x->w[i] != y->w[i])
			return false;
	for (size_t i = 0; i < x->ne; i++)
		if (x->e[i].from != y->e[i].from || x->e[i].to != y->e[i].to ||
		    x->e[i].weight != y->e[i].weight)
			return false;
	return true;
}

/* Sorted by (file, block), non-overlapping, edges between existing distinct
 * vertices, every weight >= 1. */
static bool graph_sane(const struct graph *g)
{
	for (size_t i = 0; i < g->nv; i++) {
		if (g->v[i].nblocks == 0 || g->w[i] < 1)
			return false;
		if (i > 0 && (g->v[i - 1].file_id > g->v[i].file_id ||
			      (g->v[i - 1].file_id == g->v[i].file_id &&
			       g->v[i - 1].block + g->v[i - 1].nblocks > g->v[i].block)))
			return false;
	}
	for (size_t i = 0; i < g->ne; i++) {
		if (g->e[i].from >= g->nv || g->e[i].to >= g->nv || g->e[i].from == g->e[i].to ||
		    g->e[i].weight < 1)
			return false;
		if (i > 0 && g->e[i - 1].from == g->e[i].from && g->e[i - 1].to == g->e[i].to)
			return false; /* one edge per pair */
	}
	return true;
}

static struct hy_analyzer *make(int64_t gap, size_t max_vertices)
{
	struct hy_analyzer_config cfg = {.gap_ns = gap, .max_vertices = max_vertices};
	struct hy_analyzer *a = NULL;

	CU_ASSERT_EQUAL(hy_analyzer_new(&cfg, &a), 0);
	return a;
}

/*
 * (1) One process reads (f,0,3), (f,4,2), (f,8,1) within the gap.
 *   Each range is a gap in the empty graph: three vertices of weight 1.
 *   One vertex per request, so no chain edges; the temporal edges:
 *     (1,0,3) -> (1,4,2) [1],  (1,4,2) -> (1,8,1) [1].
 *   The same three again after a pause longer than the gap: every weight
 *   doubles, and the first request of the repeat starts no edge.
 *   A third time right after (within the gap): weights 3, and now the
 *   step from (1,8,1) back to (1,0,3) is an edge too, (1,8,1) -> (1,0,3) [1].
 */
static void test_one_process(void)
{
	struct hy_analyzer *a = make(0, 0);
	struct hy_analyzer_stats st;
	struct graph g;
	int64_t t = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	for (int round = 0; round < 3; round++) {
		if (round == 1)
			t += 5 * SEC;
		CU_ASSERT_EQUAL(hy_analyzer_feed(a, t, 1, 1, 0, 3), 0);
		CU_ASSERT_EQUAL(hy_analyzer_feed(a, t + 10 * MS, 1, 1, 4, 2), 0);
		CU_ASSERT_EQUAL(hy_analyzer_feed(a, t + 20 * MS, 1, 1, 8, 1), 0);
		t += 30 * MS;
		graph_get(a, &g);
		CU_ASSERT_TRUE(graph_sane(&g));
		CU_ASSERT_EQUAL(g.nv, 3);
		CU_ASSERT_EQUAL(vw(&g, 1, 0, 3), (uint64_t)round + 1);
		CU_ASSERT_EQUAL(vw(&g, 1, 4, 2), (uint64_t)round + 1);
		CU_ASSERT_EQUAL(vw(&g, 1, 8, 1), (uint64_t)round + 1);
		CU_ASSERT_EQUAL(ew(&g, 1, 0, 3, 1, 4, 2), (uint64_t)round + 1);
		CU_ASSERT_EQUAL(ew(&g, 1, 4, 2, 1, 8, 1), (uint64_t)round + 1);
		CU_ASSERT_EQUAL(ew(&g, 1, 8, 1, 1, 0, 3), round == 2 ? 1u : 0u);
		CU_ASSERT_EQUAL(g.ne, round == 2 ? 3u : 2u);
		graph_free(&g);
	}
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_EQUAL(st.requests, 9);
	CU_ASSERT_EQUAL(st.vertices, 3);
	CU_ASSERT_EQUAL(st.edges, 3);
	CU_ASSERT_EQUAL(st.splits, 0);
	CU_ASSERT_EQUAL(st.cut_vertices, 0);
	/* nblocks 0 is refused and changes nothing */
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, t, 1, 1, 0, 0), -EINVAL);
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_EQUAL(st.requests, 9);
	hy_analyzer_free(a);
}

/* The master graph of BORG's slide 14, as analyzer.h builds it. */
static void check_slide_graph(const struct hy_analyzer *a)
{
	struct graph g;

	graph_get(a, &g);
	CU_ASSERT_TRUE(graph_sane(&g));
	CU_ASSERT_EQUAL(g.nv, 7);
	CU_ASSERT_EQUAL(vw(&g, 1, 0, 1), 1);
	CU_ASSERT_EQUAL(vw(&g, 1, 1, 2), 2);
	CU_ASSERT_EQUAL(vw(&g, 1, 3, 1), 1);
	CU_ASSERT_EQUAL(vw(&g, 1, 4, 2), 2);
	CU_ASSERT_EQUAL(vw(&g, 1, 6, 1), 1);
	CU_ASSERT_EQUAL(vw(&g, 1, 8, 1), 1);
	CU_ASSERT_EQUAL(vw(&g, 1, 9, 1), 1);
	CU_ASSERT_EQUAL(g.ne, 7);
	CU_ASSERT_EQUAL(ew(&g, 1, 0, 1, 1, 1, 2), 1); /* r1 split: chain */
	CU_ASSERT_EQUAL(ew(&g, 1, 1, 2, 1, 4, 2), 1); /* r1 -> r2, from r1's last piece */
	CU_ASSERT_EQUAL(ew(&g, 1, 4, 2, 1, 8, 1), 1); /* r2 -> r3 */
	CU_ASSERT_EQUAL(ew(&g, 1, 1, 2, 1, 3, 1), 1); /* s1's run */
	CU_ASSERT_EQUAL(ew(&g, 1, 3, 1, 1, 4, 2), 1); /* s1's run */
	CU_ASSERT_EQUAL(ew(&g, 1, 4, 2, 1, 6, 1), 1); /* s1's run */
	CU_ASSERT_EQUAL(ew(&g, 1, 6, 1, 1, 9, 1), 1); /* s1 -> s2 */
	graph_free(&g);
}

/*
 * (2) BORG's slide 14 (papers/borg.txt): process r reads r1 (0,3), r2 (4,2),
 * r3 (8,1); process s reads s1 (1,6), s2 (9,1); all in one file, within the
 * gap. The slide's master graph has the ranges (0,1) r1, (1,2) r1+s1,
 * (3,1) s1, (4,2) r2+s1, (6,1) s1, (8,..) r3, (9,1) s2.
 *
 * Order r1 r2 r3 s1 s2:
 *   r1, r2, r3 give A=(0,3) [1] -> B=(4,2) [1] -> C=(8,1) [1] (as in (1)).
 *   s1 covers blocks 1..6: A is cut at 1 into (0,1) [1] and (1,2) [1],
 *   joined (0,1) -> (1,2) [1]; A's out-edge A -> B now starts at its last
 *   piece: (1,2) -> (4,2) [1]. The gap 3 becomes (3,1), B is covered
 *   whole, the gap 6 becomes (6,1). s1's run (1,2) (3,1) (4,2) (6,1): +1
 *   each, so (1,2) [2], (3,1) [1], (4,2) [2], (6,1) [1], and the chain
 *   (1,2) -> (3,1) -> (4,2) -> (6,1) [1 each]. s has no earlier request.
 *   s2: (9,1) [1] and (6,1) -> (9,1) [1].
 *   Seven vertices, seven edges; one vertex split.
 *
 * Order r1 s1 r2 s2 r3 (interleaved):
 *   r1: A=(0,3) [1]. s1: A cut at 1 into (0,1) [1] -> (1,2) [1]; the gap
 *   3..6 is ONE new vertex G=(3,4) (r2 has not been read yet); run (1,2) G:
 *   (1,2) [2], G [1], (1,2) -> G [1].
 *   r2 (4,2) cuts G at both ends: (3,1) [1], (4,2) [1+1], (6,1) [1];
 *   G's in-edge goes to its first piece, (1,2) -> (3,1) [1], the pieces
 *   are chained (3,1) -> (4,2) -> (6,1) [1 each]; r's previous request
 *   ended at block 2, held by (1,2): (1,2) -> (4,2) [1].
 *   s2: (9,1) [1]; s1 ended at block 6, now held by (6,1): (6,1) -> (9,1).
 *   r3: (8,1) [1]; r2 ended at block 5, held by (4,2): (4,2) -> (8,1).
 *   The very same graph; two vertices split.
 *
 * Where the slide and analyzer.h differ: the slide draws only the
 * per-process edges carried over (it has no chain edges inside a request
 * or between the pieces of a split, which analyzer.h adds), labels r3's
 * vertex "(8,2)" although r3 reads (8,1) (with s2 at (9,1) the ranges
 * cannot be (8,2) and (9,1) at once), and its edge weights (one is 2) are
 * not recoverable from the text. The ranges agree with analyzer.h's.
 */
static void test_slide_example(void)
{
	struct hy_analyzer *a = make(0, 0);
	struct hy_analyzer_stats st;
	enum { R = 10, S = 20 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 0 * MS, R, 1, 0, 3), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 1 * MS, R, 1, 4, 2), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 2 * MS, R, 1, 8, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 3 * MS, S, 1, 1, 6), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 4 * MS, S, 1, 9, 1), 0);
	check_slide_graph(a);
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_EQUAL(st.splits, 1);
	hy_analyzer_free(a);

	a = make(0, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 0 * MS, R, 1, 0, 3), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 1 * MS, S, 1, 1, 6), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 2 * MS, R, 1, 4, 2), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 3 * MS, S, 1, 9, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 4 * MS, R, 1, 8, 1), 0);
	check_slide_graph(a);
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_EQUAL(st.splits, 2);
	hy_analyzer_free(a);
}

/*
 * (3) The gap, here 1000 ns. One process: A=(1,0,1) at 0, B=(1,2,1) at
 * 1000 (exactly the gap: "no more than" it, so A -> B [1]), C=(1,4,1) at
 * 2001 (1001 after B: no edge), D=(1,6,1) at 1500, logged after C but
 * earlier (threads, a stepped clock): counted as within the gap, C -> D.
 * Another process's requests never shorten or lengthen this one's gap.
 */
static void test_gap(void)
{
	struct hy_analyzer *a = make(1000, 0);
	struct graph g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 0, 1, 1, 0, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 500, 2, 2, 0, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 1000, 1, 1, 2, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 2001, 1, 1, 4, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 1500, 1, 1, 6, 1), 0);
	graph_get(a, &g);
	CU_ASSERT_TRUE(graph_sane(&g));
	CU_ASSERT_EQUAL(g.nv, 5);
	CU_ASSERT_EQUAL(g.ne, 2);
	CU_ASSERT_EQUAL(ew(&g, 1, 0, 1, 1, 2, 1), 1);
	CU_ASSERT_EQUAL(ew(&g, 1, 2, 1, 1, 4, 1), 0);
	CU_ASSERT_EQUAL(ew(&g, 1, 4, 1, 1, 6, 1), 1);
	graph_free(&g);
	hy_analyzer_free(a);

	/* a process re-reading the range it just read adds weight, no self edge */
	a = make(0, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 0, 1, 1, 0, 4), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 1, 1, 1, 0, 4), 0);
	graph_get(a, &g);
	CU_ASSERT_EQUAL(g.nv, 1);
	CU_ASSERT_EQUAL(g.ne, 0);
	CU_ASSERT_EQUAL(vw(&g, 1, 0, 4), 2);
	graph_free(&g);
	hy_analyzer_free(a);
}

/*
 * (4) Splitting.
 * Process p reads X=(2,0,1), V=(1,0,10), Y=(3,0,1) within the gap, three
 * times with pauses between the rounds: X [3], V [3], Y [3], X -> V [3],
 * V -> Y [3] (no Y -> X: the pauses).
 * Process q then reads (1,3,2), strictly inside V: V becomes
 *   (1,0,3) [3], (1,3,2) [3+1], (1,5,5) [3]
 * with V's in-edge on the first piece, X -> (1,0,3) [3], its out-edge on
 * the last, (1,5,5) -> Y [3], and the chain (1,0,3) -> (1,3,2) -> (1,5,5)
 * [3 each]; one vertex split (at both ends).
 * Process r reads (1,5,2): (1,5,5) is cut at one end into (1,5,2) [3+1]
 * and (1,7,3) [3]; its in-edge moves, (1,3,2) -> (1,5,2) [3], its out-edge
 * stays on the last piece, (1,7,3) -> Y [3], chain (1,5,2) -> (1,7,3) [3].
 * A process's last vertex split: p reads W=(4,0,8); q, 1 ms later, reads
 * (4,2,2), cutting W into (4,0,2) [1] -> (4,2,2) [2] -> (4,4,4) [1]; p reads
 * Z=(5,0,1) within the gap: its edge starts at W's LAST piece,
 * (4,4,4) -> Z [1] (q's previous request was seconds ago: no edge for q).
 */
static void test_split(void)
{
	struct hy_analyzer *a = make(0, 0);
	struct hy_analyzer_stats st;
	struct graph g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	for (int round = 0; round < 3; round++) {
		int64_t t = round * 10 * SEC;

		CU_ASSERT_EQUAL(hy_analyzer_feed(a, t, 1, 2, 0, 1), 0);
		CU_ASSERT_EQUAL(hy_analyzer_feed(a, t + 1, 1, 1, 0, 10), 0);
		CU_ASSERT_EQUAL(hy_analyzer_feed(a, t + 2, 1, 3, 0, 1), 0);
	}
	graph_get(a, &g);
	CU_ASSERT_EQUAL(g.nv, 3);
	CU_ASSERT_EQUAL(g.ne, 2);
	CU_ASSERT_EQUAL(ew(&g, 2, 0, 1, 1, 0, 10), 3);
	CU_ASSERT_EQUAL(ew(&g, 1, 0, 10, 3, 0, 1), 3);
	graph_free(&g);

	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 30 * SEC, 2, 1, 3, 2), 0);
	graph_get(a, &g);
	CU_ASSERT_TRUE(graph_sane(&g));
	CU_ASSERT_EQUAL(g.nv, 5);
	CU_ASSERT_EQUAL(g.ne, 4);
	CU_ASSERT_EQUAL(vw(&g, 1, 0, 3), 3);
	CU_ASSERT_EQUAL(vw(&g, 1, 3, 2), 4);
	CU_ASSERT_EQUAL(vw(&g, 1, 5, 5), 3);
	CU_ASSERT_EQUAL(ew(&g, 2, 0, 1, 1, 0, 3), 3);
	CU_ASSERT_EQUAL(ew(&g, 1, 0, 3, 1, 3, 2), 3);
	CU_ASSERT_EQUAL(ew(&g, 1, 3, 2, 1, 5, 5), 3);
	CU_ASSERT_EQUAL(ew(&g, 1, 5, 5, 3, 0, 1), 3);
	graph_free(&g);
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_EQUAL(st.splits, 1);

	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 40 * SEC, 3, 1, 5, 2), 0);
	graph_get(a, &g);
	CU_ASSERT_TRUE(graph_sane(&g));
	CU_ASSERT_EQUAL(g.nv, 6);
	CU_ASSERT_EQUAL(g.ne, 5);
	CU_ASSERT_EQUAL(vw(&g, 1, 5, 2), 4);
	CU_ASSERT_EQUAL(vw(&g, 1, 7, 3), 3);
	CU_ASSERT_EQUAL(ew(&g, 1, 3, 2, 1, 5, 2), 3);
	CU_ASSERT_EQUAL(ew(&g, 1, 5, 2, 1, 7, 3), 3);
	CU_ASSERT_EQUAL(ew(&g, 1, 7, 3, 3, 0, 1), 3);
	CU_ASSERT_EQUAL(ew(&g, 2, 0, 1, 1, 0, 3), 3);
	graph_free(&g);

	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 50 * SEC, 1, 4, 0, 8), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 50 * SEC + MS, 2, 4, 2, 2), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 50 * SEC + 2 * MS, 1, 5, 0, 1), 0);
	graph_get(a, &g);
	CU_ASSERT_TRUE(graph_sane(&g));
	CU_ASSERT_EQUAL(g.nv, 10);
	CU_ASSERT_EQUAL(g.ne, 8);
	CU_ASSERT_EQUAL(vw(&g, 4, 0, 2), 1);
	CU_ASSERT_EQUAL(vw(&g, 4, 2, 2), 2);
	CU_ASSERT_EQUAL(vw(&g, 4, 4, 4), 1);
	CU_ASSERT_EQUAL(ew(&g, 4, 0, 2, 4, 2, 2), 1);
	CU_ASSERT_EQUAL(ew(&g, 4, 2, 2, 4, 4, 4), 1);
	CU_ASSERT_EQUAL(ew(&g, 4, 4, 4, 5, 0, 1), 1);
	graph_free(&g);
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_EQUAL(st.splits, 3);
	hy_analyzer_free(a);
}

/*
 * (5) Two processes interleaved within the gap: p reads A=(1,0,1), q reads
 * B=(2,0,1), p reads C=(3,0,1), q reads D=(4,0,1). Edges only within a
 * process: A -> C [1], B -> D [1]; nothing between p's and q's requests.
 */
static void test_processes_apart(void)
{
	struct hy_analyzer *a = make(0, 0);
	struct graph g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 0, 1, 1, 0, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 1, 2, 2, 0, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 2, 1, 3, 0, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 3, 2, 4, 0, 1), 0);
	graph_get(a, &g);
	CU_ASSERT_EQUAL(g.nv, 4);
	CU_ASSERT_EQUAL(g.ne, 2);
	CU_ASSERT_EQUAL(ew(&g, 1, 0, 1, 3, 0, 1), 1);
	CU_ASSERT_EQUAL(ew(&g, 2, 0, 1, 4, 0, 1), 1);
	graph_free(&g);
	hy_analyzer_free(a);
}

/* ---- the database ---------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: fixed seed, same log on every run */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

struct rec {
	int64_t ts;
	uint32_t pid;
	uint64_t file;
	int64_t offset, length;
};

/* A log where processes come and go around any cut point: 5 processes,
 * 12 files of 64 blocks, byte ranges not aligned to blocks, some empty,
 * steps of up to 300 ms and now and then a pause of 3 s. */
static void make_log(struct rec *r, size_t n, uint64_t seed)
{
	int64_t t = 1764460800000000000LL;

	rng_state = seed;
	for (size_t i = 0; i < n; i++) {
		t += (int64_t)(rnd() % (300 * MS));
		if (rnd() % 50 == 0)
			t += 3 * SEC;
		r[i].ts = t;
		r[i].pid = 1 + (uint32_t)(rnd() % 5);
		r[i].file = 1 + rnd() % 12;
		r[i].offset = (int64_t)(rnd() % (60 * 4096));
		r[i].length = rnd() % 40 == 0 ? 0 : 1 + (int64_t)(rnd() % (5 * 4096));
	}
}

static void insert_log(sqlite3 *db, const struct rec *r, size_t from, size_t to)
{
	sqlite3_stmt *st;

	CU_ASSERT_EQUAL_FATAL(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(
		sqlite3_prepare_v2(db,
				   "INSERT INTO access_log (ts_ns, process_id, file_id,"
				   " offset, length, mode) VALUES (?1, ?2, ?3, ?4, ?5, 0)",
				   -1, &st, NULL),
		SQLITE_OK);
	for (size_t i = from; i < to; i++) {
		sqlite3_bind_int64(st, 1, r[i].ts);
		sqlite3_bind_int64(st, 2, r[i].pid);
		sqlite3_bind_int64(st, 3, (int64_t)r[i].file);
		sqlite3_bind_int64(st, 4, r[i].offset);
		sqlite3_bind_int64(st, 5, r[i].length);
		CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_DONE);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	CU_ASSERT_EQUAL_FATAL(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
}

static struct hy_state *open_state(char **tmp)
{
	struct hy_state *state = NULL;

	*tmp = hy_test_tmpdir();
	CU_ASSERT_PTR_NOT_NULL_FATAL(*tmp);
	CU_ASSERT_EQUAL(hy_state_open(*tmp, "/backing", false, &state, why, sizeof(why)), 0);
	return state;
}

/*
 * feed_log's block arithmetic on rows worked out by hand, in one file:
 *   offset 0, length 4096      -> blocks 0..0   (0,1)
 *   offset 4095, length 2      -> blocks 0..1   (0,2): covers (0,1) whole
 *                                 and adds the gap (1,1)
 *   offset 8192, length 0      -> skipped (reads nothing)
 *   offset 12288, length 4097  -> blocks 3..4   (3,2)
 * All process 1 within the gap: (1,0,1) [2], (1,1,1) [1], (1,3,2) [1];
 * (1,0,1) -> (1,1,1) [1] (the second request's run), (1,1,1) -> (1,3,2)
 * [1] (from where the second request ended); the first request's vertex
 * (0,1) -> the second's first vertex (0,1) would be a self edge: none.
 */
static void test_feed_log(void)
{
	char *tmp;
	struct hy_state *state = open_state(&tmp);
	struct hy_analyzer *a = make(0, 0);
	struct graph g;
	int64_t last = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(
		sqlite3_exec(state->db,
			     "INSERT INTO access_log VALUES (100, 1, 1, 0, 4096, 0, NULL, NULL);"
			     "INSERT INTO access_log VALUES (200, 1, 1, 4095, 2, 0, NULL, NULL);"
			     "INSERT INTO access_log VALUES (300, 1, 1, 8192, 0, 0, NULL, NULL);"
			     "INSERT INTO access_log VALUES (400, 1, 1, 12288, 4097, 0, NULL, "
			     "NULL);",
			     NULL, NULL, NULL),
		SQLITE_OK);
	CU_ASSERT_EQUAL(hy_analyzer_feed_log(a, state->db, 0, &last, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(last, 4);
	graph_get(a, &g);
	CU_ASSERT_EQUAL(g.nv, 3);
	CU_ASSERT_EQUAL(vw(&g, 1, 0, 1), 2);
	CU_ASSERT_EQUAL(vw(&g, 1, 1, 1), 1);
	CU_ASSERT_EQUAL(vw(&g, 1, 3, 2), 1);
	CU_ASSERT_EQUAL(g.ne, 2);
	CU_ASSERT_EQUAL(ew(&g, 1, 0, 1, 1, 1, 1), 1);
	CU_ASSERT_EQUAL(ew(&g, 1, 1, 1, 1, 3, 2), 1);
	graph_free(&g);
	/* nothing new: last stays */
	CU_ASSERT_EQUAL(hy_analyzer_feed_log(a, state->db, 4, &last, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(last, 4);

	/* an empty database loads as an empty graph, rowid 0 */
	hy_analyzer_free(a);
	a = make(0, 0);
	CU_ASSERT_EQUAL(hy_analyzer_load(a, state->db, &last, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(last, 0);
	graph_get(a, &g);
	CU_ASSERT_EQUAL(g.nv, 0);
	CU_ASSERT_EQUAL(g.ne, 0);
	graph_free(&g);
	/* a bad mode is refused */
	CU_ASSERT_EQUAL(hy_analyzer_save(a, state->db, "sometimes", 0, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "sometimes"));
	hy_analyzer_free(a);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp);
}

/* The written-once rule (analyzer.h), case by case; window 10. */
static void test_written_once_rule(void)
{
	const struct {
		struct hy_analyzer_file_window w;
		bool once;
	} cases[] = {
		/* born, first, last write, last read */
		{{100, 100, 105, 0}, true},    /* written, never read */
		{{100, 101, 105, 115}, true},  /* read back within the window */
		{{100, 101, 105, 116}, false}, /* read again after it */
		{{100, 101, 0, 150}, false},   /* only read */
		{{50, 101, 105, 0}, false},    /* born long before its first use */
		{{91, 101, 105, 0}, true},     /* born just before */
		{{0, 101, 105, 0}, false},     /* birth unknown */
		{{100, 101, 120, 110}, true},  /* read before its last write */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CU_ASSERT_EQUAL(hy_analyzer_written_once(&cases[i].w, 10), cases[i].once);
	CU_ASSERT_FALSE(hy_analyzer_written_once(&cases[0].w, 0));
	CU_ASSERT_FALSE(hy_analyzer_written_once(&cases[0].w, -1));
}

static const struct hy_analyzer_left *left_of(const struct hy_analyzer *a, uint64_t id)
{
	const struct hy_analyzer_left *l;
	size_t n;

	hy_analyzer_left_out(a, &l, &n);
	for (size_t i = 0; i < n; i++)
		if (l[i].file_id == id)
			return &l[i];
	return NULL;
}

/*
 * Files left out of the graph (window 10 s): file 1 only read; file 2
 * born at 1000 s, written then read at once (a build output); file 3
 * removed through the mount; file 4 born and written at 2000 s and read
 * again 100 s later. The graph has vertices of 1 and 4 only; the saved
 * run lists 2 and 3 in plan_files. Then file 1 is removed: a run that
 * loads the saved graph cuts its vertices though the log has nothing new.
 */
static void test_left_out(void)
{
	char *tmp;
	struct hy_state *state = open_state(&tmp);
	struct hy_analyzer_config config = {.gap_ns = 1, .write_once_ns = 10000000000LL};
	struct hy_analyzer *a = NULL;
	const struct hy_analyzer_left *l;
	struct graph g;
	int64_t last = -1, after = -1;
	sqlite3_stmt *st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	CU_ASSERT_EQUAL_FATAL(hy_analyzer_new(&config, &a), 0);
	CU_ASSERT_EQUAL_FATAL(
		sqlite3_exec(
			state->db,
			"INSERT INTO files (id, dev, ino, birth_ns, path, first_seen_ns) VALUES"
			" (1, 1, 1, 10, 'src.c', 10), (2, 1, 2, 1000000000000, 'out.o', "
			"1000000000000),"
			" (3, 1, 3, 10, 'gone', 10), (4, 1, 4, 2000000000000, 'gen.h', "
			"2000000000000);"
			"UPDATE files SET gone_ns = 3000000000000, gone_rowid = 9 WHERE id = 3;"
			"INSERT INTO access_log VALUES (1000000000000, 1, 1, 0, 4096, 0, NULL, "
			"NULL);"
			"INSERT INTO access_log VALUES (1000000000001, 1, 2, 0, 8192, 1, NULL, "
			"NULL);"
			"INSERT INTO access_log VALUES (1002000000000, 2, 2, 0, 8192, 0, NULL, "
			"NULL);"
			"INSERT INTO access_log VALUES (1003000000000, 1, 3, 0, 4096, 0, NULL, "
			"NULL);"
			"INSERT INTO access_log VALUES (2000000000001, 1, 4, 0, 4096, 1, NULL, "
			"NULL);"
			"INSERT INTO access_log VALUES (2100000000000, 3, 4, 0, 4096, 0, NULL, "
			"NULL);"
			"INSERT INTO access_log VALUES (2100000000001, 3, 1, 0, 4096, 0, NULL, "
			"NULL);",
			NULL, NULL, NULL),
		SQLITE_OK);
	CU_ASSERT_EQUAL(hy_analyzer_feed_log(a, state->db, 0, &last, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(last, 7);
	graph_get(a, &g);
	CU_ASSERT_EQUAL(g.nv, 2);
	CU_ASSERT_EQUAL(vw(&g, 1, 0, 1), 2);
	CU_ASSERT_EQUAL(vw(&g, 4, 0, 1), 2);
	graph_free(&g);
	CU_ASSERT_PTR_NULL(left_of(a, 1));
	CU_ASSERT_PTR_NULL(left_of(a, 4));
	l = left_of(a, 2);
	CU_ASSERT(l && l->reason == HY_ANALYZER_LEFT_WRITTEN_ONCE && l->requests == 2);
	l = left_of(a, 3);
	CU_ASSERT(l && l->reason == HY_ANALYZER_LEFT_REMOVED && l->requests == 1);
	CU_ASSERT_EQUAL(hy_analyzer_save(a, state->db, "cumulative", last, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(
		sqlite3_prepare_v2(state->db,
				   "SELECT group_concat(file_id || ':' || reason, ' ')"
				   " FROM (SELECT * FROM plan_files ORDER BY file_id)",
				   -1, &st, NULL),
		SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_ROW);
	{
		const char *listed = (const char *)sqlite3_column_text(st, 0);

		CU_ASSERT_STRING_EQUAL(listed ? listed : "(none)", "2:written-once 3:removed");
	}
	sqlite3_finalize(st);
	hy_analyzer_free(a);

	/* file 1 removed since: the loaded graph loses it */
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "UPDATE files SET gone_ns = 4000000000000, gone_rowid = 7"
				     " WHERE id = 1",
				     NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(hy_analyzer_new(&config, &a), 0);
	CU_ASSERT_EQUAL(hy_analyzer_load(a, state->db, &after, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(after, 7);
	CU_ASSERT_EQUAL(hy_analyzer_feed_log(a, state->db, after, &last, why, sizeof(why)), 0);
	graph_get(a, &g);
	CU_ASSERT_EQUAL(g.nv, 1);
	CU_ASSERT_EQUAL(vw(&g, 4, 0, 1), 2);
	CU_ASSERT_EQUAL(g.ne, 0);
	graph_free(&g);
	l = left_of(a, 1);
	CU_ASSERT(l && l->reason == HY_ANALYZER_LEFT_REMOVED && l->requests == 0);
	CU_ASSERT_PTR_NULL(left_of(a, 3)); /* no vertex, no row read: nothing to leave */
	hy_analyzer_free(a);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp);
}

/* Runs the log in one analyzer, and in runs over segments (load, feed the
 * new rows, save, forget); the final graphs must be the same. */
static void incremental_vs_full(size_t max_vertices)
{
	enum { N = 3000 };
	static const size_t cuts[] = {0, 700, 701, 1900, N};
	struct rec *r = calloc(N, sizeof(*r));
	char *tmp;
	struct hy_state *state = open_state(&tmp);
	struct hy_analyzer *full, *a;
	struct hy_analyzer_stats st;
	struct graph gf, gi;
	int64_t last = 0, after;
	sqlite3_stmt *q;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	make_log(r, N, 0x5eed1234abcdULL);
	for (size_t s = 1; s < sizeof(cuts) / sizeof(cuts[0]); s++) {
		insert_log(state->db, r, cuts[s - 1], cuts[s]);
		a = make(0, max_vertices);
		CU_ASSERT_EQUAL(hy_analyzer_load(a, state->db, &after, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(after, (int64_t)cuts[s - 1]);
		CU_ASSERT_EQUAL(hy_analyzer_feed_log(a, state->db, after, &last, why, sizeof(why)),
				0);
		CU_ASSERT_EQUAL(last, (int64_t)cuts[s]);
		CU_ASSERT_EQUAL(
			hy_analyzer_save(a, state->db, "cumulative", last, why, sizeof(why)), 0);
		hy_analyzer_free(a);
	}
	/* the last run's row */
	CU_ASSERT_EQUAL(sqlite3_prepare_v2(state->db,
					   "SELECT mode, last_log_rowid, vertices, edges FROM"
					   " analyzer_runs ORDER BY id DESC LIMIT 1",
					   -1, &q, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(q), SQLITE_ROW);
	CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(q, 0), "cumulative");
	CU_ASSERT_EQUAL(sqlite3_column_int64(q, 1), N);

	full = make(0, max_vertices);
	CU_ASSERT_EQUAL(hy_analyzer_feed_log(full, state->db, 0, &last, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(last, N);
	hy_analyzer_get_stats(full, &st);
	CU_ASSERT_EQUAL(sqlite3_column_int64(q, 2), (int64_t)st.vertices);
	CU_ASSERT_EQUAL(sqlite3_column_int64(q, 3), (int64_t)st.edges);
	sqlite3_finalize(q);
	if (max_vertices)
		CU_ASSERT_TRUE(st.cut_vertices > 0);
	CU_ASSERT_TRUE(st.splits > 0);
	graph_get(full, &gf);
	CU_ASSERT_TRUE(graph_sane(&gf));

	a = make(0, max_vertices);
	CU_ASSERT_EQUAL(hy_analyzer_load(a, state->db, &after, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(after, N);
	graph_get(a, &gi);
	CU_ASSERT_TRUE(graphs_equal(&gf, &gi));
	graph_free(&gi);
	hy_analyzer_free(a);

	graph_free(&gf);
	hy_analyzer_free(full);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp);
	free(r);
}

/*
 * (6) Incremental equals full: 3,000 logged requests (5 processes active
 * across every cut point, so temporal edges cross runs), fed in runs of
 * 700, 1, 1,199 and 1,100 rows with a save and a fresh analyzer between
 * runs, give the graph of one run over all 3,000; once without the memory
 * bound, once with a bound of 150 vertices (cuts in every run).
 */
static void test_incremental(void)
{
	incremental_vs_full(0);
	incremental_vs_full(150);
}

/* A damaged saved graph (overlapping ranges) is refused; the analyzer is
 * left empty. */
static void test_load_damaged(void)
{
	char *tmp;
	struct hy_state *state = open_state(&tmp);
	struct hy_analyzer *a = make(0, 0);
	struct hy_analyzer_stats st;
	int64_t last;

	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "INSERT INTO graph_vertices VALUES (1, 1, 0, 4, 1.0);"
				     "INSERT INTO graph_vertices VALUES (2, 1, 3, 4, 1.0);",
				     NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 0, 1, 9, 0, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_load(a, state->db, &last, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "damaged"));
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_EQUAL(st.vertices, 0);
	hy_analyzer_free(a);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp);
}

/*
 * (7) Decay. Process p reads A=(1,0,1), B=(1,2,1), C=(1,4,1) within the
 * gap; after a pause B, C; after another pause C:
 *   A [1], B [2], C [3], A -> B [1], B -> C [2].
 * Decay 0.5: A 0.5 goes (and A -> B with it, itself 0.5), B 1 stays,
 * C 1.5 stays (exported rounded to 2), B -> C 1 stays. p's last request
 * is forgotten: D=(1,6,1) read right after makes no C -> D edge.
 * Decay 0.5 again: B 0.5, C 0.75, D 0.5, B -> C 0.5: all go.
 */
static void test_decay(void)
{
	struct hy_analyzer *a = make(0, 0);
	struct hy_analyzer_stats st;
	struct graph g;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 0, 1, 1, 0, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 1, 1, 1, 2, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 2, 1, 1, 4, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 10 * SEC, 1, 1, 2, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 10 * SEC + 1, 1, 1, 4, 1), 0);
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 20 * SEC, 1, 1, 4, 1), 0);
	graph_get(a, &g);
	CU_ASSERT_EQUAL(vw(&g, 1, 0, 1), 1);
	CU_ASSERT_EQUAL(vw(&g, 1, 2, 1), 2);
	CU_ASSERT_EQUAL(vw(&g, 1, 4, 1), 3);
	CU_ASSERT_EQUAL(ew(&g, 1, 0, 1, 1, 2, 1), 1);
	CU_ASSERT_EQUAL(ew(&g, 1, 2, 1, 1, 4, 1), 2);
	CU_ASSERT_EQUAL(g.ne, 2);
	graph_free(&g);

	hy_analyzer_decay(a, 0.5);
	graph_get(a, &g);
	CU_ASSERT_TRUE(graph_sane(&g));
	CU_ASSERT_EQUAL(g.nv, 2);
	CU_ASSERT_EQUAL(vw(&g, 1, 0, 1), 0);
	CU_ASSERT_EQUAL(vw(&g, 1, 2, 1), 1);
	CU_ASSERT_EQUAL(vw(&g, 1, 4, 1), 2);
	CU_ASSERT_EQUAL(g.ne, 1);
	CU_ASSERT_EQUAL(ew(&g, 1, 2, 1, 1, 4, 1), 1);
	graph_free(&g);

	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 20 * SEC + 1, 1, 1, 6, 1), 0);
	graph_get(a, &g);
	CU_ASSERT_EQUAL(g.nv, 3);
	CU_ASSERT_EQUAL(g.ne, 1);
	graph_free(&g);

	hy_analyzer_decay(a, 0.5);
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_EQUAL(st.vertices, 0);
	CU_ASSERT_EQUAL(st.edges, 0);
	CU_ASSERT_EQUAL(st.cut_vertices, 0); /* decay is not a cut */

	/* factor 1 keeps everything */
	CU_ASSERT_EQUAL(hy_analyzer_feed(a, 30 * SEC, 1, 1, 0, 1), 0);
	hy_analyzer_decay(a, 1.0);
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_EQUAL(st.vertices, 1);
	hy_analyzer_free(a);
}

/*
 * (8) The memory bound: at most 100 vertices. One process reads 10,000
 * distinct one-block ranges of file 2, from the end of the file down (each
 * a new vertex of weight 1; the newest has the lowest key, so only the
 * recency order, not the key order, keeps it),
 * and after every tenth of them the five hot ranges (1,0,1), (1,10,1), ...
 * (1,40,1). After every feed the graph holds no more than 100 vertices;
 * vertices (and their edges) are cut; the hot ranges, read 1,000 times
 * each, survive with their weight, and so does the last cold range read,
 * (2,0,1) (the most recently used of the weight-1 vertices), while the
 * first, (2,19998,1), was cut long ago.
 */
static void test_memory_bound(void)
{
	struct hy_analyzer *a = make(0, 100);
	struct hy_analyzer_stats st;
	struct graph g;
	bool within = true;
	int64_t t = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	for (uint64_t i = 0; i < 10000; i++) {
		CU_ASSERT_EQUAL(hy_analyzer_feed(a, t += MS, 1, 2, (9999 - i) * 2, 1), 0);
		hy_analyzer_get_stats(a, &st);
		within = within && st.vertices <= 100;
		if (i % 10 == 9)
			for (uint64_t h = 0; h < 5; h++) {
				CU_ASSERT_EQUAL(hy_analyzer_feed(a, t += MS, 1, 1, h * 10, 1), 0);
				hy_analyzer_get_stats(a, &st);
				within = within && st.vertices <= 100;
			}
	}
	CU_ASSERT_TRUE(within);
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_TRUE(st.cut_vertices >= 10000 - 100);
	CU_ASSERT_TRUE(st.cut_edges > 0);
	graph_get(a, &g);
	CU_ASSERT_TRUE(graph_sane(&g));
	for (uint64_t h = 0; h < 5; h++)
		CU_ASSERT_EQUAL(vw(&g, 1, h * 10, 1), 1000);
	CU_ASSERT_EQUAL(vw(&g, 2, 0, 1), 1);
	CU_ASSERT_EQUAL(vw(&g, 2, 9999 * 2, 1), 0);
	/* the hot loop's edges survive too: (1,0,1) -> (1,10,1) each round */
	CU_ASSERT_EQUAL(ew(&g, 1, 0, 1, 1, 10, 1), 1000);
	graph_free(&g);
	hy_analyzer_free(a);
}

/*
 * (9) 200,000 requests (fixed seed) by 32 processes on 1,000 files of 512
 * blocks, 1..16 blocks each. Checked, not timed:
 *   - vertices sorted by (file, block) and non-overlapping, every edge
 *     between two existing, distinct vertices, weights >= 1;
 *   - with no bound, the vertices cover exactly the blocks read, and a
 *     vertex's weight is the number of requests that covered it (every
 *     request covers whole vertices, and pieces inherit the count);
 *   - with a bound of 20,000 the bound holds after every feed.
 */
enum { RF = 1000, RB = 512, RN = 200000 };

static void random_log(size_t max_vertices)
{
	struct hy_analyzer *a = make(0, max_vertices);
	uint32_t *cover = calloc((size_t)RF * (RB + 1), sizeof(*cover));
	struct hy_analyzer_stats st;
	struct graph g;
	int64_t t = 0;
	bool within = true, ok = true;

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cover);
	rng_state = 0x0123456789abcdefULL;
	for (size_t i = 0; i < RN; i++) {
		uint32_t pid = (uint32_t)(rnd() % 32), n = 1 + (uint32_t)(rnd() % 16);
		uint64_t f = rnd() % RF, b = rnd() % (RB - n + 1);

		t += (int64_t)(rnd() % (2 * MS));
		if (rnd() % 1000 == 0)
			t += 2 * SEC;
		if (hy_analyzer_feed(a, t, pid, f, b, n) != 0)
			ok = false;
		for (uint64_t k = b; k < b + n; k++)
			cover[f * (RB + 1) + k]++;
		if (max_vertices) {
			hy_analyzer_get_stats(a, &st);
			within = within && st.vertices <= max_vertices;
		}
	}
	CU_ASSERT_TRUE(ok);
	CU_ASSERT_TRUE(within);
	graph_get(a, &g);
	CU_ASSERT_TRUE(graph_sane(&g));
	hy_analyzer_get_stats(a, &st);
	CU_ASSERT_EQUAL(st.requests, RN);
	CU_ASSERT_EQUAL(st.vertices, g.nv);
	CU_ASSERT_EQUAL(st.edges, g.ne);
	if (!max_vertices) {
		size_t covered = 0, in_vertices = 0;

		CU_ASSERT_EQUAL(st.cut_vertices, 0);
		for (size_t i = 0; i < g.nv; i++) {
			const struct hy_plan_vertex *v = &g.v[i];

			for (uint64_t k = v->block; k < v->block + v->nblocks; k++)
				if (cover[v->file_id * (RB + 1) + k] != g.w[i])
					ok = false;
			in_vertices += v->nblocks;
		}
		for (size_t k = 0; k < (size_t)RF * (RB + 1); k++)
			covered += cover[k] > 0;
		CU_ASSERT_TRUE(ok);
		CU_ASSERT_EQUAL(covered, in_vertices);
		CU_ASSERT_TRUE(st.splits > 0);
	} else {
		CU_ASSERT_TRUE(st.cut_vertices > 0);
	}
	graph_free(&g);
	hy_analyzer_free(a);
	free(cover);
}

static void test_random_log(void)
{
	random_log(0);
	random_log(20000);
}

int hy_test_add_analyzer(void)
{
	CU_pSuite s = CU_add_suite("analyzer", NULL, NULL);

	if (!s || !CU_add_test(s, "one process, repeated", test_one_process) ||
	    !CU_add_test(s, "BORG's slide example", test_slide_example) ||
	    !CU_add_test(s, "the time gap", test_gap) ||
	    !CU_add_test(s, "splitting keeps weights and edges", test_split) ||
	    !CU_add_test(s, "processes kept apart", test_processes_apart) ||
	    !CU_add_test(s, "feed from the access log", test_feed_log) ||
	    !CU_add_test(s, "the written-once rule", test_written_once_rule) ||
	    !CU_add_test(s, "removed and written-once files left out", test_left_out) ||
	    !CU_add_test(s, "incremental equals full", test_incremental) ||
	    !CU_add_test(s, "damaged saved graph refused", test_load_damaged) ||
	    !CU_add_test(s, "decay", test_decay) ||
	    !CU_add_test(s, "memory bound", test_memory_bound) ||
	    !CU_add_test(s, "random log invariants", test_random_log))
		return -1;
	return 0;
}
