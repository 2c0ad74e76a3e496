/*
 * analyzer.c - BORG's analyzer: its public calls (new, free, feed, decay,
 * stats, export); see include/hybridfs/analyzer.h. The graph in memory is
 * in analyzer_graph.c, the database in analyzer_db.c; what they share, in
 * analyzer_internal.h. The notes below are the design of all three.
 *
 * Data structures (all indexes are uint32_t, NIL = UINT32_MAX, which keeps
 * a vertex at 64 bytes and an edge at 32):
 *
 *   vertices  one growable array; a vertex's slot is its id; a cut or
 *             decayed slot goes on a free list (threaded through .next) and
 *             is reused first. renumber() (see Locality) moves vertices to
 *             other slots now and then: nothing observable depends on slot
 *             numbers.
 *   files     an open-addressing hash by file id (linear probing,
 *             backward-shift deletion, load <= 1/2) of the files that have
 *             vertices. Each has a treap of its vertices keyed by block,
 *             intrusive in the vertex (left/right; the priority is a hash
 *             of the vertex's end, which never changes, so it costs no
 *             memory), and a doubly linked list of them in block order
 *             (prev/next, from .head) that walks a request's run in O(1)
 *             per vertex. Per file rather than one (file_id, block) treap
 *             for the whole graph: a request that jumps to another file
 *             (a third of them in bench/borg's log) costs one probe and
 *             a short walk or a descent of that file's small treap, where
 *             a global treap cost O(log V) dependent cache misses. Export
 *             sorts the files; an entry goes with its file's last vertex.
 *   edges     a pool of 32-byte edges on a free list, each on two doubly
 *             linked lists (its source's out-list and its target's
 *             in-list), plus an open-addressing hash (linear probing,
 *             backward-shift deletion, load <= 1/2) keyed by (from, to)
 *             to find an edge in O(1). Removing a vertex removes its edges
 *             in time proportional to its degree. Each vertex also keeps
 *             the out-edge it touched last (.hot_out): runs and recurring
 *             sequences add to the same edges again and again (about 90%
 *             of the additions in bench/borg's log), which the vertex then
 *             finds with no hash probe (a cache miss once the hash is
 *             large). The cache is checked against the edge itself, so it
 *             needs no upkeep when edges go or move.
 *   processes an open-addressing hash by process id: the time of the last
 *             request and where it ended (file, last block).
 *
 * Splitting. A vertex V split at block b becomes a NEW vertex L (the part
 * before b) and V itself (the part from b on): V's id stays with the LAST
 * piece. So V's out-edges stay where analyzer.h wants them (on the last
 * piece) without being touched, and only V's in-edges move to L (one
 * rehash each: proportional to V's in-degree); L -> V gets V's weight.
 * Shortening V from the left keeps the treap ordered (no other key lies
 * between V's old and new first block) and V's priority (its end), so V
 * keeps its place in it and only L is inserted. A split at both ends of a
 * request is two such splits (the result is the k-way split of analyzer.h)
 * and counts as one vertex split.
 *
 * The process's "last vertex". Every vertex of a request's run lies inside
 * the request, so the last one ends at the request's last block e-1, and
 * any later split of it (at a point inside it) leaves e-1 in its last piece.
 * So "the last vertex of the previous run, or the last piece of it if it was
 * split" is exactly "the vertex holding the previous request's last block",
 * which is what a process remembers (file, block), with the slot that held
 * it as a hint: the hint stays right through splits (the slot stays on the
 * last piece) and is checked in O(1); only when its slot was cut is the
 * holder looked up in its file's treap, after mapping the new request.
 * This needs no fix-up on splits or cuts (renumber() moves hints with their
 * vertices), and hy_analyzer_load() can rebuild it from the log (see
 * there).
 *
 * Cold-tail cut. When a feed leaves more than max_vertices, the coldest
 * vertices are cut in one batch down to 90% of the bound (so the O(V)
 * selection runs once per max_vertices/10 new vertices: O(1) amortized per
 * vertex). Coldness orders by weight, then last use (a request counter),
 * then (file_id, block), which makes the order total and independent of
 * slot numbers, so an incremental run cuts the same vertices as a full run.
 * The selection is a quickselect over a scratch array of slots that grows
 * with the vertex array, so a cut never allocates.
 *
 * Locality. Once the graph outgrows the CPU's caches, a request costs its
 * cache misses, most of them dependent loads: the file's entry, the first
 * vertex of the run, each next one. Slots are handed out in creation order,
 * which scatters a file's vertices over the array; renumber() gathers them
 * again (file by file, in block order) whenever the vertices made since the
 * last time reach half the graph, so that a run's vertices share cache
 * lines: O(V + E) each time, O(1) amortized per vertex made. Misses that do
 * not depend on each other are started early (prefetched) to overlap: each
 * run vertex's cached out-edge during the walk that counts the run, the
 * temporal edge's while the request is mapped.
 *
 * Failure atomicity: a feed first counts what the request can add (k
 * overlapped vertices: at most k + 3 new vertices and 2k + 3 new edges) and
 * reserves it; after that nothing can fail.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/analyzer.h"

#include "analyzer_internal.h"

/* renumber() only past this many new vertices: a smaller graph stays in
 * the caches (4 MiB of vertices) whatever its order */
#define RENUMBER_MIN 65536

/* ---- the public calls ------------------------------------------------------ */

int hy_analyzer_new(const struct hy_analyzer_config *config, struct hy_analyzer **out)
{
	struct hy_analyzer *a;

	*out = NULL;
	if (config && config->gap_ns < 0)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->gap_ns = config && config->gap_ns ? config->gap_ns : HY_ANALYZER_DEFAULT_GAP_NS;
	a->max_vertices = config && config->max_vertices ? config->max_vertices
							 : HY_ANALYZER_DEFAULT_MAX_VERTICES;
	if (a->max_vertices > MAX_SLOTS / 2)
		a->max_vertices = MAX_SLOTS / 2;
	a->write_once_ns = config && config->write_once_ns ? config->write_once_ns
							   : HY_ANALYZER_DEFAULT_WRITE_ONCE_NS;
	hy_analyzer_graph_reset(a);
	*out = a;
	return 0;
}

void hy_analyzer_free(struct hy_analyzer *analyzer)
{
	if (!analyzer)
		return;
	free(analyzer->v);
	free(analyzer->scratch);
	free(analyzer->f);
	free(analyzer->e);
	free(analyzer->eh);
	free(analyzer->p);
	free(analyzer->left);
	free(analyzer);
}

bool hy_analyzer_written_once(const struct hy_analyzer_file_window *w, int64_t window_ns)
{
	if (window_ns <= 0 || w->last_write_ns <= 0 || w->born_ns <= 0)
		return false;
	/* made in the log's window: born shortly before it was first used */
	if (w->first_ns > w->born_ns && w->first_ns - w->born_ns > window_ns)
		return false;
	/* and never read again once the window after its last write ended */
	return w->last_read_ns <= 0 || w->last_read_ns <= w->last_write_ns ||
	       w->last_read_ns - w->last_write_ns <= window_ns;
}

void hy_analyzer_left_out(const struct hy_analyzer *a, const struct hy_analyzer_left **out,
			  size_t *n)
{
	*out = a->left;
	*n = a->nleft;
}

const char *hy_analyzer_left_name(enum hy_analyzer_left_reason reason)
{
	switch (reason) {
	case HY_ANALYZER_LEFT_REMOVED:
		return "removed";
	case HY_ANALYZER_LEFT_WRITTEN_ONCE:
		return "written-once";
	case HY_ANALYZER_LEFT_EXCLUDED:
		return "excluded";
	}
	return "?";
}

/* True when a request at @ts follows one at @prev within the gap. A
 * request logged later with an earlier time (threads, a stepped clock)
 * counts as within it: it was logged right after. */
static bool within_gap(const struct hy_analyzer *a, int64_t prev, int64_t ts)
{
	int64_t d;

	if (__builtin_sub_overflow(ts, prev, &d))
		return ts < prev;
	return d <= a->gap_ns;
}

/* The vertex of @fe with the greatest block <= @b (NIL: none), found
 * without descending the treap when it can be: a treap descent is a chain
 * of dependent loads that miss the cache once the graph is large. Most
 * requests continue their process's previous range or land a step or two
 * after it, so the walk starts from where @p's previous request ended
 * (@p may be NULL); a request that jumps to another file usually starts at
 * or near the file's first block (whole-file reads, recurring sequences),
 * so the walk starts from the file's head otherwise. Any vertex of the file
 * with a block <= @b is a correct place to start; the walk stops at the
 * first vertex past @b, or gives up after a few steps and descends. */
static uint32_t find_floor(const struct hy_analyzer *a, const struct proc *p, const struct file *fe,
			   uint64_t b)
{
	uint32_t x = NIL;

	if (p && p->file == fe->id) {
		x = p->hint;
		if (x >= a->vused || !a->v[x].nblocks || a->v[x].file != fe->id ||
		    a->v[x].block > b)
			x = NIL;
	}
	if (x == NIL) {
		x = fe->head;
		if (a->v[x].block > b)
			return NIL;
	}
	for (int step = 0; step < 4; step++) {
		uint32_t nx = a->v[x].next;

		if (nx == NIL || a->v[nx].block > b)
			return x;
		x = nx;
	}
	return t_floor(a, fe->root, b);
}

int hy_analyzer_feed(struct hy_analyzer *a, int64_t ts_ns, uint32_t process, uint64_t file_id,
		     uint64_t block, uint32_t nblocks)
{
	uint64_t e = block + nblocks, pos = block, now, k = 0;
	uint32_t u, cur, pred, prev_run = NIL, first = NIL;
	struct file *fe;
	struct proc *p;
	bool split_first = false;
	int rc;

	if (nblocks == 0 || e < block)
		return -EINVAL;

	/* reserve: k overlapped vertices make at most k + 3 new vertices
	 * (k + 1 gaps, 2 split pieces) and 2k + 3 new edges; a file not yet
	 * in the graph needs an entry */
	p = proc_find(a, process);
	/* the temporal edge (below) is most likely the process's last vertex's
	 * last out-edge: fetched now, while the request is mapped */
	if (p && p->hint < a->vused && a->v[p->hint].hot_out < a->eused)
		__builtin_prefetch(&a->e[a->v[p->hint].hot_out]);
	fe = file_find(a, file_id);
	u = fe ? find_floor(a, p, fe, block) : NIL;
	if (u == NIL)
		cur = fe ? fe->head : NIL;
	else
		cur = vend(a, u) > block ? u : a->v[u].next;
	/* ... or else in the edge hash, if the run starts on a vertex already
	 * there */
	if (p && cur != NIL && a->v[cur].block == block && a->ehcap)
		__builtin_prefetch(&a->eh[eh_slot_of(a, p->hint, cur)]);
	for (; cur != NIL && a->v[cur].block < e; cur = a->v[cur].next) {
		/* the walk is a chain of cache misses; the edges the run will
		 * most likely add to (each vertex's last out-edge) can be
		 * fetched alongside it instead of one by one later */
		if (a->v[cur].hot_out < a->eused)
			__builtin_prefetch(&a->e[a->v[cur].hot_out]);
		k++;
	}
	if ((rc = hy_analyzer_graph_grow_vertices(a, k + 3)) ||
	    (rc = hy_analyzer_graph_grow_edges(a, 2 * k + 3)) ||
	    (rc = hy_analyzer_graph_grow_hash(a, 2 * k + 3)) ||
	    (rc = hy_analyzer_graph_grow_procs(a)) ||
	    (rc = hy_analyzer_graph_grow_files(a, fe ? 0 : 1)))
		return rc;

	/* from here on nothing fails; growing may have moved the file and
	 * process tables, so both are looked up again */
	fe = hy_analyzer_graph_file_get(a, file_id);
	now = ++a->clock;
	if (u != NIL && a->v[u].block < block && vend(a, u) > block) {
		hy_analyzer_graph_split_left(a, fe, u, block);
		a->splits++;
		split_first = true;
	}
	if (u != NIL && a->v[u].block == block)
		cur = u;
	else
		cur = u == NIL ? fe->head : a->v[u].next;
	/* the vertex before cur in the file's list (cur NIL: the file's last
	 * vertex, which is u, the floor, or none) */
	pred = cur != NIL ? a->v[cur].prev : u;

	while (pos < e) {
		uint32_t x;

		if (cur != NIL && a->v[cur].block < e) {
			if (a->v[cur].block > pos) {
				x = hy_analyzer_graph_gap_vertex(a, fe, pred, cur, pos,
								 a->v[cur].block - pos);
				pos = a->v[cur].block;
			} else if (vend(a, cur) > e) {
				x = hy_analyzer_graph_split_left(a, fe, cur, e);
				if (!(split_first && cur == u))
					a->splits++;
				pos = e;
			} else {
				x = cur;
				pos = vend(a, cur);
				cur = a->v[cur].next;
			}
		} else {
			x = hy_analyzer_graph_gap_vertex(a, fe, pred, cur, pos, e - pos);
			pos = e;
		}
		pred = x;
		a->v[x].weight += 1.0;
		a->v[x].lru = now;
		if (prev_run != NIL)
			hy_analyzer_graph_edge_add(a, prev_run, x, 1.0);
		else
			first = x;
		prev_run = x;
	}

	/* the temporal edge, from where the process's previous request ended */
	p = proc_find(a, process);
	if (p && within_gap(a, p->ts, ts_ns)) {
		uint32_t from = p->hint;

		/* the hint is right unless its slot was cut (a split leaves the
		 * slot on the last piece, which still holds last_block) */
		if (from >= a->vused || !a->v[from].nblocks || a->v[from].file != p->file ||
		    a->v[from].block > p->last_block || vend(a, from) <= p->last_block)
			from = hy_analyzer_graph_find_holder(a, p->file, p->last_block);

		if (from != NIL && from != first)
			hy_analyzer_graph_edge_add(a, from, first, 1.0);
	}
	hy_analyzer_graph_proc_set(a, process, ts_ns, file_id, e - 1, prev_run);
	a->requests++;
	hy_analyzer_graph_cut_cold(a);
	if (a->fresh >= RENUMBER_MIN && a->fresh >= a->nv / 2)
		hy_analyzer_graph_renumber(a);
	return 0;
}

void hy_analyzer_decay(struct hy_analyzer *a, double factor)
{
	if (factor > 1.0)
		factor = 1.0;
	if (factor == factor) { /* NaN: weights unchanged */
		for (uint32_t i = 0; i < a->eused; i++) {
			if (a->e[i].from == NIL)
				continue;
			a->e[i].weight *= factor;
			if (!(a->e[i].weight >= 1.0))
				hy_analyzer_graph_edge_remove(a, i);
		}
		for (uint32_t x = 0; x < a->vused; x++) {
			if (!a->v[x].nblocks)
				continue;
			a->v[x].weight *= factor;
			if (!(a->v[x].weight >= 1.0))
				hy_analyzer_graph_vertex_remove(a, x);
		}
	}
	if (a->pcap)
		memset(a->p, 0, a->pcap * sizeof(*a->p));
	a->np = 0;
}

void hy_analyzer_get_stats(const struct hy_analyzer *a, struct hy_analyzer_stats *out)
{
	out->requests = a->requests;
	out->vertices = a->nv;
	out->edges = a->ne;
	out->splits = a->splits;
	out->cut_vertices = a->cut_vertices;
	out->cut_edges = a->cut_edges;
}

static uint64_t export_weight(double w)
{
	/* weights are >= 1 (decay drops the rest); round to nearest */
	return w < 1.0 ? 1 : (uint64_t)(w + 0.5);
}

static int edge_order(const void *pa, const void *pb)
{
	const struct hy_plan_edge *x = pa, *y = pb;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return 0;
}

static int file_order(const void *pa, const void *pb)
{
	const struct file *x = pa, *y = pb;

	return x->id < y->id ? -1 : x->id > y->id;
}

int hy_analyzer_export(const struct hy_analyzer *a, struct hy_plan_vertex **vertices, size_t *nv,
		       uint64_t **weights, struct hy_plan_edge **edges, size_t *ne)
{
	struct hy_plan_vertex *vs = malloc((a->nv ? a->nv : 1) * sizeof(*vs));
	struct hy_plan_edge *es = malloc((a->ne ? a->ne : 1) * sizeof(*es));
	uint64_t *ws = weights ? malloc((a->nv ? a->nv : 1) * sizeof(*ws)) : NULL;
	uint32_t *map = malloc((a->vused ? a->vused : 1) * sizeof(*map));
	struct file *files = malloc((a->nf ? a->nf : 1) * sizeof(*files));
	size_t i = 0, j = 0, nf = 0;

	*vertices = NULL;
	*edges = NULL;
	*nv = *ne = 0;
	if (weights)
		*weights = NULL;
	if (!vs || !es || !map || !files || (weights && !ws)) {
		free(vs), free(es), free(ws), free(map), free(files);
		return -ENOMEM;
	}
	/* (file, block) order: the files sorted, each file's list in order */
	for (size_t k = 0; k < a->fcap; k++)
		if (a->f[k].root != NIL)
			files[nf++] = a->f[k];
	qsort(files, nf, sizeof(*files), file_order);
	for (size_t k = 0; k < nf; k++)
		for (uint32_t x = files[k].head; x != NIL; x = a->v[x].next, i++) {
			map[x] = (uint32_t)i;
			vs[i].file_id = a->v[x].file;
			vs[i].block = a->v[x].block;
			vs[i].nblocks = a->v[x].nblocks;
			if (ws)
				ws[i] = export_weight(a->v[x].weight);
		}
	for (uint32_t x = 0; x < a->vused; x++)
		if (a->v[x].nblocks)
			for (uint32_t ei = a->v[x].out_head; ei != NIL; ei = a->e[ei].next_out) {
				es[j].from = map[x];
				es[j].to = map[a->e[ei].to];
				es[j].weight = export_weight(a->e[ei].weight);
				j++;
			}
	free(map);
	free(files);
	qsort(es, j, sizeof(*es), edge_order);
	*vertices = vs;
	*nv = i;
	*edges = es;
	*ne = j;
	if (weights)
		*weights = ws;
	return 0;
}
