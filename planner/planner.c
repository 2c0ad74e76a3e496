/* planner.c - see include/hybridfs/planner.h.
 *
 * The steps, all over plain arrays:
 *   1. check the arguments and every edge (the first bad one is named);
 *   2. sort the edges by (from, to) with two stable counting passes (by to,
 *      then by from: O(E + V)) and merge duplicates, adding their weights;
 *   3. build the adjacency in CSR form: for each vertex its out-edges (to,
 *      weight) and its in-edges (from, weight);
 *   4. connectivity = sum of in and out weights; an array of all vertices by
 *      (connectivity descending, index ascending) picks the start of each
 *      component;
 *   5. a binary max-heap keyed by (connection to the placed set descending,
 *      index ascending) with lazy updates: when a vertex's key grows a new
 *      entry is pushed, and entries whose key is no longer the vertex's key
 *      (or whose vertex is no longer unplaced) are dropped when popped. A key
 *      only grows, once per merged edge, so the heap never holds more than E
 *      entries and the whole run costs O(E log V);
 *   6. placed vertices go into a deque per component (front or back by the
 *      direction of their connection); when a component is exhausted it is
 *      closed and the next one starts after it;
 *   7. the final order gets its bopt_block offsets from prefix sums.
 *
 * Weights that add up past UINT64_MAX saturate (connectivities too): the
 * interface has no error for it and the order stays deterministic.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/planner.h"

enum vertex_state {
	V_UNPLACED = 0,
	V_PLACED,
	V_SKIPPED,
};

struct adj {
	uint64_t w;
	uint32_t v;
};

struct heap_item {
	uint64_t key;
	uint32_t v;
};

struct rank {
	uint64_t conn;
	uint32_t v;
};

/* Everything one run allocates, so that one function frees it all. */
struct work {
	struct hy_plan_edge *sorted; /* edges by (from, to), then merged */
	struct hy_plan_edge *tmp;
	size_t *out_off, *in_off; /* nv + 1 each */
	struct adj *out_adj, *in_adj;
	uint64_t *conn, *in_w, *out_w;
	unsigned char *state;
	struct rank *ranks;
	struct heap_item *heap;
	size_t heap_len;	/* capacity: the merged edge count, never exceeded */
	uint32_t *front, *back; /* the open component's deque */
	size_t nfront, nback;
	uint32_t *order; /* the closed components, in BOPT order */
	size_t norder;
};

static void set_why(char *why, size_t why_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;

	if (!why || why_size == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_size, fmt, ap);
	va_end(ap);
}

/* calloc with the n * size overflow checked; never returns NULL for n == 0
 * so that "NULL" always means out of memory. */
static void *alloc_array(size_t n, size_t size)
{
	if (n == 0)
		n = 1;
	if (n > SIZE_MAX / size)
		return NULL;
	return calloc(n, size);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void work_free(struct work *w)
{
	free(w->sorted);
	free(w->tmp);
	free(w->out_off);
	free(w->in_off);
	free(w->out_adj);
	free(w->in_adj);
	free(w->conn);
	free(w->in_w);
	free(w->out_w);
	free(w->state);
	free(w->ranks);
	free(w->heap);
	free(w->front);
	free(w->back);
	free(w->order);
}

/* Stable counting sort of @n edges from @src into @dst by their from
 * (@by_from) or to vertex; @count has nv + 1 zeroed slots. */
static void counting_pass(const struct hy_plan_edge *src, struct hy_plan_edge *dst, size_t n,
			  size_t *count, size_t nv, int by_from)
{
	size_t i, sum = 0;

	for (i = 0; i < n; i++)
		count[by_from ? src[i].from : src[i].to]++;
	for (i = 0; i < nv; i++) {
		size_t c = count[i];

		count[i] = sum;
		sum += c;
	}
	for (i = 0; i < n; i++)
		dst[count[by_from ? src[i].from : src[i].to]++] = src[i];
}

/* Sorts and merges the edges into w->sorted; returns the merged count. */
static size_t sort_and_merge(struct work *w, const struct hy_plan_edge *edges, size_t ne, size_t nv)
{
	size_t i, m = 0;

	memset(w->out_off, 0, (nv + 1) * sizeof(*w->out_off));
	counting_pass(edges, w->tmp, ne, w->out_off, nv, 0);
	memset(w->out_off, 0, (nv + 1) * sizeof(*w->out_off));
	counting_pass(w->tmp, w->sorted, ne, w->out_off, nv, 1);
	for (i = 0; i < ne; i++) {
		if (m > 0 && w->sorted[m - 1].from == w->sorted[i].from &&
		    w->sorted[m - 1].to == w->sorted[i].to)
			w->sorted[m - 1].weight =
				sat_add(w->sorted[m - 1].weight, w->sorted[i].weight);
		else
			w->sorted[m++] = w->sorted[i];
	}
	return m;
}

/* CSR out of the merged, sorted edges; in-lists come out sorted by from. */
static void build_csr(struct work *w, size_t m, size_t nv)
{
	size_t i;

	memset(w->out_off, 0, (nv + 1) * sizeof(*w->out_off));
	memset(w->in_off, 0, (nv + 1) * sizeof(*w->in_off));
	for (i = 0; i < m; i++) {
		w->out_off[w->sorted[i].from + 1]++;
		w->in_off[w->sorted[i].to + 1]++;
	}
	for (i = 0; i < nv; i++) {
		w->out_off[i + 1] += w->out_off[i];
		w->in_off[i + 1] += w->in_off[i];
	}
	/* sorted is ordered by from, so the out-lists are it, in place. */
	for (i = 0; i < m; i++) {
		const struct hy_plan_edge *e = &w->sorted[i];

		w->out_adj[i].v = e->to;
		w->out_adj[i].w = e->weight;
		w->conn[e->from] = sat_add(w->conn[e->from], e->weight);
		w->conn[e->to] = sat_add(w->conn[e->to], e->weight);
	}
	/* The in-lists: in_off[to] serves as the fill cursor, which leaves
	 * in_off[v] at the start of v + 1; shifting by one restores it. */
	for (i = 0; i < m; i++) {
		const struct hy_plan_edge *e = &w->sorted[i];
		size_t pos = w->in_off[e->to]++;

		w->in_adj[pos].v = e->from;
		w->in_adj[pos].w = e->weight;
	}
	for (i = nv; i > 0; i--)
		w->in_off[i] = w->in_off[i - 1];
	w->in_off[0] = 0;
}

static int rank_cmp(const void *pa, const void *pb)
{
	const struct rank *a = pa, *b = pb;

	if (a->conn != b->conn)
		return a->conn > b->conn ? -1 : 1;
	return a->v < b->v ? -1 : (a->v > b->v);
}

/* Heap order: larger key first, then lower vertex index. */
static int heap_before(const struct heap_item *a, const struct heap_item *b)
{
	if (a->key != b->key)
		return a->key > b->key;
	return a->v < b->v;
}

static void heap_push(struct work *w, uint64_t key, uint32_t v)
{
	size_t i = w->heap_len++;
	struct heap_item it = {.key = key, .v = v};

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!heap_before(&it, &w->heap[parent]))
			break;
		w->heap[i] = w->heap[parent];
		i = parent;
	}
	w->heap[i] = it;
}

static struct heap_item heap_pop(struct work *w)
{
	struct heap_item top = w->heap[0], last = w->heap[--w->heap_len];
	size_t i = 0, n = w->heap_len;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && heap_before(&w->heap[c + 1], &w->heap[c]))
			c++;
		if (!heap_before(&w->heap[c], &last))
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (n > 0)
		w->heap[i] = last;
	return top;
}

/* The unplaced vertex most connected to the placed set, or UINT32_MAX. */
static uint32_t next_connected(struct work *w)
{
	while (w->heap_len > 0) {
		struct heap_item it = heap_pop(w);

		if (w->state[it.v] == V_UNPLACED &&
		    it.key == sat_add(w->in_w[it.v], w->out_w[it.v]))
			return it.v;
	}
	return UINT32_MAX;
}

/* Moves the open component's deque to the end of the order. */
static void close_component(struct work *w)
{
	while (w->nfront > 0)
		w->order[w->norder++] = w->front[--w->nfront];
	memcpy(w->order + w->norder, w->back, w->nback * sizeof(*w->back));
	w->norder += w->nback;
	w->nback = 0;
}

static void place(struct work *w, uint32_t v)
{
	size_t i;

	/* in_w: v -> placed; it is read before them, so it goes in front. */
	if (w->in_w[v] > w->out_w[v])
		w->front[w->nfront++] = v;
	else
		w->back[w->nback++] = v;
	w->state[v] = V_PLACED;
	for (i = w->out_off[v]; i < w->out_off[v + 1]; i++) {
		uint32_t u = w->out_adj[i].v; /* v -> u: u is read after the placed set */

		if (w->state[u] != V_UNPLACED)
			continue;
		w->out_w[u] = sat_add(w->out_w[u], w->out_adj[i].w);
		heap_push(w, sat_add(w->in_w[u], w->out_w[u]), u);
	}
	for (i = w->in_off[v]; i < w->in_off[v + 1]; i++) {
		uint32_t u = w->in_adj[i].v; /* u -> v: u is read before the placed set */

		if (w->state[u] != V_UNPLACED)
			continue;
		w->in_w[u] = sat_add(w->in_w[u], w->in_adj[i].w);
		heap_push(w, sat_add(w->in_w[u], w->out_w[u]), u);
	}
}

static int check_input(const struct hy_plan_vertex *vertices, size_t nv,
		       const struct hy_plan_edge *edges, size_t ne, struct hy_plan *out, char *why,
		       size_t why_size)
{
	size_t i;

	if (!out) {
		set_why(why, why_size, "no plan to fill");
		return -EINVAL;
	}
	if ((nv > 0 && !vertices) || (ne > 0 && !edges)) {
		set_why(why, why_size, "%s array missing", nv > 0 && !vertices ? "vertex" : "edge");
		return -EINVAL;
	}
	/* Indexes are uint32_t; UINT32_MAX is kept as "no vertex". */
	if (nv >= UINT32_MAX) {
		set_why(why, why_size, "%zu vertices: too many (at most %" PRIu32 ")", nv,
			UINT32_MAX - 1);
		return -EINVAL;
	}
	for (i = 0; i < nv; i++) {
		if (vertices[i].nblocks == 0) {
			set_why(why, why_size, "vertex %zu: empty range (nblocks 0)", i);
			return -EINVAL;
		}
	}
	for (i = 0; i < ne; i++) {
		const struct hy_plan_edge *e = &edges[i];

		if (e->from >= nv || e->to >= nv) {
			set_why(why, why_size,
				"edge %zu: vertex %" PRIu32 " out of range (%zu vertices)", i,
				e->from >= nv ? e->from : e->to, nv);
			return -EINVAL;
		}
		if (e->from == e->to) {
			set_why(why, why_size, "edge %zu: self edge on vertex %" PRIu32, i,
				e->from);
			return -EINVAL;
		}
		if (e->weight == 0) {
			set_why(why, why_size, "edge %zu: zero weight (%" PRIu32 " -> %" PRIu32 ")",
				i, e->from, e->to);
			return -EINVAL;
		}
	}
	return 0;
}

static int alloc_work(struct work *w, size_t nv, size_t ne)
{
	w->sorted = alloc_array(ne, sizeof(*w->sorted));
	w->tmp = alloc_array(ne, sizeof(*w->tmp));
	w->out_off = alloc_array(nv + 1, sizeof(*w->out_off));
	w->in_off = alloc_array(nv + 1, sizeof(*w->in_off));
	w->conn = alloc_array(nv, sizeof(*w->conn));
	w->in_w = alloc_array(nv, sizeof(*w->in_w));
	w->out_w = alloc_array(nv, sizeof(*w->out_w));
	w->state = alloc_array(nv, sizeof(*w->state));
	w->ranks = alloc_array(nv, sizeof(*w->ranks));
	w->front = alloc_array(nv, sizeof(*w->front));
	w->back = alloc_array(nv, sizeof(*w->back));
	w->order = alloc_array(nv, sizeof(*w->order));
	if (!w->sorted || !w->tmp || !w->out_off || !w->in_off || !w->conn || !w->in_w ||
	    !w->out_w || !w->state || !w->ranks || !w->front || !w->back || !w->order)
		return -ENOMEM;
	return 0;
}

int hy_planner_plan(const struct hy_plan_vertex *vertices, size_t nv,
		    const struct hy_plan_edge *edges, size_t ne, uint64_t capacity,
		    struct hy_plan *out, char *why, size_t why_size)
{
	struct work w = {0};
	uint64_t remaining = capacity, offset = 0;
	size_t m, i, next_rank = 0;
	int ret;

	if (why && why_size > 0)
		why[0] = '\0';
	ret = check_input(vertices, nv, edges, ne, out, why, why_size);
	if (ret < 0) {
		if (out)
			memset(out, 0, sizeof(*out));
		return ret;
	}
	memset(out, 0, sizeof(*out));
	if (nv == 0)
		return 0;

	ret = alloc_work(&w, nv, ne);
	if (ret < 0)
		goto fail_nomem;
	m = sort_and_merge(&w, edges, ne, nv);
	free(w.tmp);
	w.tmp = NULL;
	w.out_adj = alloc_array(m, sizeof(*w.out_adj));
	w.in_adj = alloc_array(m, sizeof(*w.in_adj));
	/* One push per merged edge at most: each edge raises the key of its
	 * other end once, when its first end is placed. */
	w.heap = alloc_array(m, sizeof(*w.heap));
	if (!w.out_adj || !w.in_adj || !w.heap)
		goto fail_nomem;
	build_csr(&w, m, nv);
	free(w.sorted);
	w.sorted = NULL;

	for (i = 0; i < nv; i++) {
		w.ranks[i].conn = w.conn[i];
		w.ranks[i].v = (uint32_t)i;
	}
	qsort(w.ranks, nv, sizeof(*w.ranks), rank_cmp);

	while (remaining > 0) {
		uint32_t v = next_connected(&w);

		if (v == UINT32_MAX) {
			/* Nothing touches the placed set: a new component,
			 * after every closed one. */
			while (next_rank < nv && w.state[w.ranks[next_rank].v] != V_UNPLACED)
				next_rank++;
			if (next_rank == nv)
				break;
			v = w.ranks[next_rank++].v;
			close_component(&w);
		}
		if (vertices[v].nblocks > remaining) {
			w.state[v] = V_SKIPPED;
			continue;
		}
		remaining -= vertices[v].nblocks;
		place(&w, v);
	}
	close_component(&w);

	out->entries = alloc_array(w.norder, sizeof(*out->entries));
	if (!out->entries)
		goto fail_nomem;
	for (i = 0; i < w.norder; i++) {
		out->entries[i].vertex = w.order[i];
		out->entries[i].bopt_block = offset;
		offset += vertices[w.order[i]].nblocks; /* <= capacity: no overflow */
	}
	out->count = w.norder;
	out->blocks_used = offset;
	/* Every vertex not placed did not fit: either it was skipped, or the
	 * capacity ran out before it came up. */
	out->skipped = nv - w.norder;
	work_free(&w);
	return 0;

fail_nomem:
	work_free(&w);
	set_why(why, why_size, "out of memory planning %zu vertices and %zu edges", nv, ne);
	return -ENOMEM;
}

void hy_plan_free(struct hy_plan *plan)
{
	if (!plan)
		return;
	free(plan->entries);
	memset(plan, 0, sizeof(*plan));
}
