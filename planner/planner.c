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
 * The chains placement (planner.h) shares steps 1-2, then builds runs and
 * chains over the merged edges sorted by weight, and lays the chosen
 * chains out by calling the greedy placement on a graph of chains.
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

static int plan_greedy(const struct hy_plan_vertex *vertices, size_t nv,
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

/* ---- the chains placement ------------------------------------------------ */

#define NONE UINT32_MAX

struct wedge {
	uint32_t from, to;
	uint64_t w;
};

static int wedge_cmp(const void *pa, const void *pb)
{
	const struct wedge *a = pa, *b = pb;

	if (a->w != b->w)
		return a->w > b->w ? -1 : 1;
	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	return a->to < b->to ? -1 : (a->to > b->to);
}

struct chain {
	uint32_t head;	 /* its first run's first vertex */
	size_t start, n; /* its vertices: order[start .. start + n) */
	uint64_t blocks; /* all of them */
	int64_t gain;	 /* weight of the reads it makes sequential, less what it breaks */
	size_t taken;	 /* vertices selected (a prefix: whole runs) */
	uint64_t taken_blocks;
};

/* Gain per block, highest first; ties by the lower head. */
static int chain_cmp(const void *pa, const void *pb)
{
	const struct chain *a = pa, *b = pb;
	/* a.gain / a.blocks > b.gain / b.blocks, without division */
	double da = (double)a->gain * (double)b->blocks, db = (double)b->gain * (double)a->blocks;

	if (da != db)
		return da > db ? -1 : 1;
	return a->head < b->head ? -1 : (a->head > b->head);
}

/* Whether @v starts at most @near blocks after @u's end in the same file. */
static int home_sequential(const struct hy_plan_vertex *u, const struct hy_plan_vertex *v,
			   uint32_t near)
{
	uint64_t end = u->block + u->nblocks;

	return u->file_id == v->file_id && v->block >= end && v->block - end <= near;
}

/* Whether @v continues @u exactly at home. */
static int home_next(const struct hy_plan_vertex *u, const struct hy_plan_vertex *v)
{
	return u->file_id == v->file_id && v->block == u->block + u->nblocks;
}

struct chain_work {
	struct hy_plan_edge *merged; /* the merged edges */
	struct wedge *by_weight;
	uint32_t *hnext, *hprev; /* runs: ranges that continue each other at home */
	uint32_t *run_of;	 /* vertex -> its run's first vertex */
	uint32_t *next, *prev;	 /* chains of runs, by their first vertices */
	uint32_t *head_of, *tail_of;
	uint32_t *chain_of; /* vertex -> its chain; then its selected chain or NONE */
	uint64_t *pos;	    /* vertex -> its block offset in its chain */
	uint32_t *order;    /* the vertices, chain after chain */
	struct chain *chains;
	struct hy_plan_vertex *cv; /* the selected chains as vertices */
	struct hy_plan_edge *ce;
	struct chain **selected;
	struct hy_plan inner;
};

static void chain_work_free(struct chain_work *c)
{
	free(c->merged);
	free(c->by_weight);
	free(c->hnext);
	free(c->hprev);
	free(c->run_of);
	free(c->next);
	free(c->prev);
	free(c->head_of);
	free(c->tail_of);
	free(c->chain_of);
	free(c->pos);
	free(c->order);
	free(c->chains);
	free(c->cv);
	free(c->ce);
	free(c->selected);
	hy_plan_free(&c->inner);
}

/* Runs: an edge between two ranges of which one continues the other
 * exactly at home joins them (in home order), so that a request's range,
 * which the analyzer may have cut into several vertices, and a stream
 * read sequentially at home move whole or not at all. */
static void build_runs(struct chain_work *c, const struct hy_plan_vertex *v, size_t nv, size_t m,
		       uint64_t max_blocks)
{
	uint32_t *rhead = c->head_of, *rtail = c->tail_of; /* of tails; of heads */
	uint64_t *rblocks = c->pos;			   /* of heads */
	size_t i;

	for (i = 0; i < nv; i++) {
		c->hnext[i] = c->hprev[i] = NONE;
		rhead[i] = rtail[i] = (uint32_t)i;
		rblocks[i] = v[i].nblocks;
	}
	for (i = 0; i < m; i++) {
		uint32_t a = c->by_weight[i].from, b = c->by_weight[i].to;

		if (home_next(&v[b], &v[a])) {
			uint32_t t = a;

			a = b;
			b = t;
		} else if (!home_next(&v[a], &v[b])) {
			continue;
		}
		if (c->hnext[a] != NONE || c->hprev[b] != NONE ||
		    rblocks[rhead[a]] + rblocks[b] > max_blocks)
			continue;
		c->hnext[a] = b;
		c->hprev[b] = a;
		rblocks[rhead[a]] += rblocks[b];
		rtail[rhead[a]] = rtail[b];
		rhead[rtail[b]] = rhead[a];
	}
	/* home order only climbs: no cycles */
	for (i = 0; i < nv; i++) {
		if (c->hprev[i] != NONE)
			continue;
		for (uint32_t x = (uint32_t)i; x != NONE; x = c->hnext[x])
			c->run_of[x] = (uint32_t)i;
	}
}

/* Chains of runs: the edges by weight, heaviest first; an edge u -> x that
 * is not already sequential at home joins u's chain (at its tail) to x's
 * (at its head): Pettis and Hansen's chaining. */
static void build_chains(struct chain_work *c, const struct hy_plan_vertex *v, size_t nv, size_t m,
			 uint32_t near)
{
	uint32_t *head_of = c->head_of, *tail_of = c->tail_of; /* of tails; of heads */
	size_t i;

	for (i = 0; i < nv; i++) {
		c->next[i] = c->prev[i] = NONE;
		head_of[i] = tail_of[i] = (uint32_t)i;
	}
	for (i = 0; i < m; i++) {
		uint32_t u = c->by_weight[i].from, x = c->by_weight[i].to;
		uint32_t U = c->run_of[u], X = c->run_of[x], h, t;

		if (U == X || home_sequential(&v[u], &v[x], near))
			continue;
		if (c->next[U] != NONE || c->prev[X] != NONE || tail_of[X] == U)
			continue; /* not tail to head, or the same chain */
		h = head_of[U];
		t = tail_of[X];
		c->next[U] = X;
		c->prev[X] = U;
		tail_of[h] = t;
		head_of[t] = h;
	}
}

/* The chains (each run's child, c->next, is its successor) into order[],
 * their vertices' positions, and each chain's gain; returns their count. */
static size_t measure_chains(struct chain_work *c, const struct hy_plan_vertex *v, size_t nv,
			     size_t m, uint32_t near)
{
	size_t i, nchains = 0, at = 0;

	for (i = 0; i < nv; i++) {
		struct chain *ch;
		uint64_t off = 0;
		uint32_t r = (uint32_t)i;

		if (c->run_of[i] != i || c->prev[i] != NONE)
			continue; /* not the first vertex of a run that starts a chain */
		ch = &c->chains[nchains];
		ch->head = (uint32_t)i;
		ch->start = at;
		for (; r != NONE; r = c->next[r])
			for (uint32_t x = r; x != NONE; x = c->hnext[x]) {
				c->chain_of[x] = (uint32_t)nchains;
				c->pos[x] = off;
				off += v[x].nblocks;
				c->order[at++] = x;
			}
		ch->n = at - ch->start;
		ch->blocks = off;
		nchains++;
	}
	for (i = 0; i < m; i++) {
		uint32_t u = c->merged[i].from, x = c->merged[i].to;
		int64_t wt = c->merged[i].weight > INT64_MAX / 4 ? INT64_MAX / 4
								 : (int64_t)c->merged[i].weight;
		int before = home_sequential(&v[u], &v[x], near);

		if (c->chain_of[u] == c->chain_of[x]) {
			uint64_t end = c->pos[u] + v[u].nblocks;
			int after = c->pos[x] >= end && c->pos[x] - end <= near;

			c->chains[c->chain_of[u]].gain += wt * (after - before);
		} else if (before) {
			c->chains[c->chain_of[u]].gain -= wt;
			c->chains[c->chain_of[x]].gain -= wt;
		}
	}
	return nchains;
}

/* The longest prefix of whole runs of @ch that fits in @room blocks. */
static void take_prefix(struct chain_work *c, const struct hy_plan_vertex *v, struct chain *ch,
			uint64_t room)
{
	uint64_t blocks = 0;

	ch->taken = 0;
	ch->taken_blocks = 0;
	for (size_t k = 0; k < ch->n; k++) {
		uint32_t x = c->order[ch->start + k];

		blocks += v[x].nblocks;
		if (blocks > room)
			break;
		if (c->hnext[x] == NONE) { /* the end of a run */
			ch->taken = k + 1;
			ch->taken_blocks = blocks;
		}
	}
}

static int plan_chains(const struct hy_planner_options *o, const struct hy_plan_vertex *vertices,
		       size_t nv, const struct hy_plan_edge *edges, size_t ne, uint64_t capacity,
		       struct hy_plan *out, char *why, size_t why_size)
{
	struct chain_work c = {0};
	struct work w = {0};
	size_t m, nchains, nsel = 0, nce = 0, i;
	uint64_t remaining = capacity, offset = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	if (nv == 0)
		return 0;
	/* the merged edges, by the greedy placement's own sort */
	w.sorted = alloc_array(ne, sizeof(*w.sorted));
	w.tmp = alloc_array(ne, sizeof(*w.tmp));
	w.out_off = alloc_array(nv + 1, sizeof(*w.out_off));
	if (!w.sorted || !w.tmp || !w.out_off)
		goto fail_nomem;
	m = sort_and_merge(&w, edges, ne, nv);
	c.merged = w.sorted;
	w.sorted = NULL;
	work_free(&w);
	memset(&w, 0, sizeof(w));

	c.by_weight = alloc_array(m, sizeof(*c.by_weight));
	c.hnext = alloc_array(nv, sizeof(*c.hnext));
	c.hprev = alloc_array(nv, sizeof(*c.hprev));
	c.run_of = alloc_array(nv, sizeof(*c.run_of));
	c.next = alloc_array(nv, sizeof(*c.next));
	c.prev = alloc_array(nv, sizeof(*c.prev));
	c.head_of = alloc_array(nv, sizeof(*c.head_of));
	c.tail_of = alloc_array(nv, sizeof(*c.tail_of));
	c.chain_of = alloc_array(nv, sizeof(*c.chain_of));
	c.pos = alloc_array(nv, sizeof(*c.pos));
	c.order = alloc_array(nv, sizeof(*c.order));
	c.chains = alloc_array(nv, sizeof(*c.chains));
	c.selected = alloc_array(nv, sizeof(*c.selected));
	c.cv = alloc_array(nv, sizeof(*c.cv));
	c.ce = alloc_array(m, sizeof(*c.ce));
	if (!c.by_weight || !c.hnext || !c.hprev || !c.run_of || !c.next || !c.prev || !c.head_of ||
	    !c.tail_of || !c.chain_of || !c.pos || !c.order || !c.chains || !c.selected || !c.cv ||
	    !c.ce)
		goto fail_nomem;

	/* 1. runs, chains of runs, and what each chain gains */
	for (i = 0; i < m; i++) {
		c.by_weight[i].from = c.merged[i].from;
		c.by_weight[i].to = c.merged[i].to;
		c.by_weight[i].w = c.merged[i].weight;
	}
	qsort(c.by_weight, m, sizeof(*c.by_weight), wedge_cmp);
	build_runs(&c, vertices, nv, m,
		   o->max_run_blocks ? o->max_run_blocks : HY_PLANNER_DEFAULT_MAX_RUN_BLOCKS);
	build_chains(&c, vertices, nv, m, o->near_blocks);
	nchains = measure_chains(&c, vertices, nv, m, o->near_blocks);

	/* 2. the chains that gain, best first, while they fit (the last ones
	 * cut to a prefix of whole runs that fits) */
	qsort(c.chains, nchains, sizeof(*c.chains), chain_cmp);
	for (i = 0; i < nv; i++)
		c.chain_of[i] = NONE;
	for (i = 0; i < nchains && remaining > 0; i++) {
		struct chain *ch = &c.chains[i];

		if (ch->gain <= 0)
			break; /* sorted: no later chain gains */
		take_prefix(&c, vertices, ch, remaining < UINT32_MAX ? remaining : UINT32_MAX);
		/* one run alone makes no read sequential */
		if (ch->taken == 0 ||
		    (ch->taken < ch->n && c.run_of[c.order[ch->start + ch->taken - 1]] == ch->head))
			continue;
		remaining -= ch->taken_blocks;
		for (size_t k = 0; k < ch->taken; k++)
			c.chain_of[c.order[ch->start + k]] = (uint32_t)nsel;
		c.cv[nsel].file_id = 0;
		c.cv[nsel].block = nsel;
		c.cv[nsel].nblocks = (uint32_t)ch->taken_blocks;
		c.selected[nsel++] = ch;
	}
	for (i = 0; i < m; i++) {
		uint32_t a = c.chain_of[c.merged[i].from], b = c.chain_of[c.merged[i].to];

		if (a == NONE || b == NONE || a == b)
			continue;
		c.ce[nce].from = a;
		c.ce[nce].to = b;
		c.ce[nce++].weight = c.merged[i].weight;
	}
	/* 3. the selected chains laid out by the greedy placement */
	ret = plan_greedy(c.cv, nsel, c.ce, nce, UINT64_MAX, &c.inner, why, why_size);
	if (ret < 0) {
		chain_work_free(&c);
		return ret;
	}
	out->entries = alloc_array(nv, sizeof(*out->entries));
	if (!out->entries)
		goto fail_nomem;
	for (i = 0; i < c.inner.count; i++) {
		const struct chain *ch = c.selected[c.inner.entries[i].vertex];

		for (size_t k = 0; k < ch->taken; k++) {
			uint32_t x = c.order[ch->start + k];

			out->entries[out->count].vertex = x;
			out->entries[out->count++].bopt_block = offset;
			offset += vertices[x].nblocks;
		}
	}
	out->blocks_used = offset;
	out->skipped = nv - out->count;
	chain_work_free(&c);
	return 0;

fail_nomem:
	work_free(&w);
	chain_work_free(&c);
	hy_plan_free(out);
	set_why(why, why_size, "out of memory planning %zu vertices and %zu edges", nv, ne);
	return -ENOMEM;
}

int hy_planner_plan_with(const struct hy_planner_options *options,
			 const struct hy_plan_vertex *vertices, size_t nv,
			 const struct hy_plan_edge *edges, size_t ne, uint64_t capacity,
			 struct hy_plan *out, char *why, size_t why_size)
{
	int ret;

	if (!options || options->placement == HY_PLANNER_GREEDY)
		return plan_greedy(vertices, nv, edges, ne, capacity, out, why, why_size);
	if (why && why_size > 0)
		why[0] = '\0';
	if (options->placement != HY_PLANNER_CHAINS) {
		set_why(why, why_size, "placement %d: not greedy (0) nor chains (1)",
			(int)options->placement);
		if (out)
			memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	ret = check_input(vertices, nv, edges, ne, out, why, why_size);
	if (ret < 0) {
		if (out)
			memset(out, 0, sizeof(*out));
		return ret;
	}
	return plan_chains(options, vertices, nv, edges, ne, capacity, out, why, why_size);
}

int hy_planner_plan(const struct hy_plan_vertex *vertices, size_t nv,
		    const struct hy_plan_edge *edges, size_t ne, uint64_t capacity,
		    struct hy_plan *out, char *why, size_t why_size)
{
	return plan_greedy(vertices, nv, edges, ne, capacity, out, why, why_size);
}

void hy_plan_free(struct hy_plan *plan)
{
	if (!plan)
		return;
	free(plan->entries);
	memset(plan, 0, sizeof(*plan));
}
