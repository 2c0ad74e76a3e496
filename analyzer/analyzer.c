/*
 * analyzer.c - see include/hybridfs/analyzer.h.
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
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "hybridfs/analyzer.h"
#include "hybridfs/state.h"
#include "hybridfs/keymap.h"

#define NIL	    UINT32_MAX
#define MAX_SLOTS   (UINT32_MAX - 1u)
#define BLOCK_SHIFT 12
#define BLOCK_SIZE  4096
/* renumber() only past this many new vertices: a smaller graph stays in
 * the caches (4 MiB of vertices) whatever its order */
#define RENUMBER_MIN   65536
#define RENUMBER_WALKS 8  /* file lists renumber() walks side by side */
#define EH_AHEAD       16 /* edges eh_rebuild() fetches ahead */

struct vertex {
	uint64_t file;
	uint64_t block;
	double weight;
	uint64_t lru;	  /* request counter of the last touch */
	uint32_t nblocks; /* 0: a free slot */
	uint32_t left, right;
	uint32_t prev, next; /* the file's list; next also threads the free list */
	uint32_t out_head, in_head;
	uint32_t hot_out; /* the out-edge touched last (a cache, checked before use) */
};

struct edge {
	uint32_t from, to; /* from == NIL: a free edge (next_out threads the free list) */
	uint32_t next_out, prev_out;
	uint32_t next_in, prev_in;
	double weight;
};

struct proc {
	uint32_t pid;
	uint32_t used;
	int64_t ts;
	uint64_t file;
	uint64_t last_block;
	uint32_t hint; /* the slot that held last_block; checked before use */
};

/* A file with vertices: its treap and the head of its ordered list. */
struct file {
	uint64_t id;
	uint32_t root; /* NIL: a free slot of the file hash */
	uint32_t head;
};

struct hy_analyzer {
	int64_t gap_ns;
	size_t max_vertices;

	struct vertex *v;
	uint32_t *scratch; /* as many as v: the cut's selection, renumber()'s map */
	uint32_t vcap, vused, vfree, nv;
	uint32_t fresh; /* vertices made since the last renumber() */

	struct file *f;
	size_t fcap, nf; /* fcap a power of two (or 0) */

	struct edge *e;
	uint32_t ecap, eused, efree, ne;
	uint32_t *eh; /* slots hold edge indexes, NIL when empty */
	size_t ehcap; /* a power of two */

	struct proc *p;
	size_t pcap, np; /* pcap a power of two (or 0) */

	uint64_t clock;
	uint64_t requests, splits, cut_vertices, cut_edges;
};

/* ---- small helpers ----------------------------------------------------- */

static int key_cmp(uint64_t fa, uint64_t ba, uint64_t fb, uint64_t bb)
{
	if (fa != fb)
		return fa < fb ? -1 : 1;
	if (ba != bb)
		return ba < bb ? -1 : 1;
	return 0;
}

static uint64_t vend(const struct hy_analyzer *a, uint32_t x)
{
	return a->v[x].block + a->v[x].nblocks;
}

/* A vertex's treap priority: a hash of where it ends, which nothing
 * changes (split_left() keeps the end on the old vertex and gives the new
 * piece its own), so the priority costs no memory and stays the same when
 * renumber() moves the vertex. A bijection of the end: no two vertices of
 * a file (one treap) tie. */
static uint64_t prio(const struct hy_analyzer *a, uint32_t x)
{
	return hy_keymap_mix(vend(a, x));
}

/* ---- the files: their treaps and lists --------------------------------- */

/* Splits @t (one file's treap) into blocks < @b and blocks >= @b. */
static void t_split(struct hy_analyzer *a, uint32_t t, uint64_t b, uint32_t *l, uint32_t *r)
{
	if (t == NIL) {
		*l = *r = NIL;
		return;
	}
	if (a->v[t].block < b) {
		t_split(a, a->v[t].right, b, &a->v[t].right, r);
		*l = t;
	} else {
		t_split(a, a->v[t].left, b, l, &a->v[t].left);
		*r = t;
	}
}

static uint32_t t_insert(struct hy_analyzer *a, uint32_t t, uint32_t n)
{
	if (t == NIL)
		return n;
	if (prio(a, n) > prio(a, t)) {
		t_split(a, t, a->v[n].block, &a->v[n].left, &a->v[n].right);
		return n;
	}
	if (a->v[n].block < a->v[t].block)
		a->v[t].left = t_insert(a, a->v[t].left, n);
	else
		a->v[t].right = t_insert(a, a->v[t].right, n);
	return t;
}

static uint32_t t_merge(struct hy_analyzer *a, uint32_t l, uint32_t r)
{
	if (l == NIL)
		return r;
	if (r == NIL)
		return l;
	if (prio(a, l) > prio(a, r)) {
		a->v[l].right = t_merge(a, a->v[l].right, r);
		return l;
	}
	a->v[r].left = t_merge(a, l, a->v[r].left);
	return r;
}

static uint32_t t_erase(struct hy_analyzer *a, uint32_t t, uint32_t n)
{
	if (t == NIL)
		return NIL;
	if (t == n)
		return t_merge(a, a->v[t].left, a->v[t].right);
	if (a->v[n].block < a->v[t].block)
		a->v[t].left = t_erase(a, a->v[t].left, n);
	else
		a->v[t].right = t_erase(a, a->v[t].right, n);
	return t;
}

/* The vertex of treap @t with the greatest block <= @b, or NIL. */
static uint32_t t_floor(const struct hy_analyzer *a, uint32_t t, uint64_t b)
{
	uint32_t best = NIL;

	while (t != NIL) {
		if (a->v[t].block <= b) {
			best = t;
			t = a->v[t].right;
		} else {
			t = a->v[t].left;
		}
	}
	return best;
}

static struct file *file_find(const struct hy_analyzer *a, uint64_t id)
{
	size_t i;

	if (!a->fcap)
		return NULL;
	i = (size_t)hy_keymap_mix(id) & (a->fcap - 1);
	while (a->f[i].root != NIL) {
		if (a->f[i].id == id)
			return &a->f[i];
		i = (i + 1) & (a->fcap - 1);
	}
	return NULL;
}

/* File @id's entry, made if missing (capacity reserved); a new entry counts
 * as a free slot until its first vertex is linked in, which the caller does
 * right away. */
static struct file *file_get(struct hy_analyzer *a, uint64_t id)
{
	size_t i = (size_t)hy_keymap_mix(id) & (a->fcap - 1);

	while (a->f[i].root != NIL && a->f[i].id != id)
		i = (i + 1) & (a->fcap - 1);
	if (a->f[i].root == NIL) {
		a->f[i].id = id;
		a->f[i].head = NIL;
		a->nf++;
	}
	return &a->f[i];
}

/* Backward-shift deletion, as for the edge hash; moves other entries. */
static void file_delete(struct hy_analyzer *a, const struct file *fe)
{
	size_t mask = a->fcap - 1, i = (size_t)(fe - a->f), j = i;

	for (;;) {
		size_t k;

		j = (j + 1) & mask;
		if (a->f[j].root == NIL)
			break;
		k = (size_t)hy_keymap_mix(a->f[j].id) & mask;
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		a->f[i] = a->f[j];
		i = j;
	}
	a->f[i].root = NIL;
	a->nf--;
}

/* The vertex holding block @b of file @f, or NIL. */
static uint32_t find_holder(const struct hy_analyzer *a, uint64_t f, uint64_t b)
{
	const struct file *fe = file_find(a, f);
	uint32_t x = fe ? t_floor(a, fe->root, b) : NIL;

	if (x != NIL && vend(a, x) > b)
		return x;
	return NIL;
}

/* Links @x in between @prev and @next, neighbours in @fe's list (NIL: its
 * ends). */
static void list_link(struct hy_analyzer *a, struct file *fe, uint32_t prev, uint32_t next,
		      uint32_t x)
{
	a->v[x].prev = prev;
	a->v[x].next = next;
	if (prev == NIL)
		fe->head = x;
	else
		a->v[prev].next = x;
	if (next != NIL)
		a->v[next].prev = x;
}

static void list_unlink(struct hy_analyzer *a, struct file *fe, uint32_t x)
{
	uint32_t prev = a->v[x].prev, next = a->v[x].next;

	if (prev == NIL)
		fe->head = next;
	else
		a->v[prev].next = next;
	if (next != NIL)
		a->v[next].prev = prev;
}

/* ---- capacity ------------------------------------------------------------ */

static int grow_vertices(struct hy_analyzer *a, size_t more)
{
	size_t want = (size_t)a->vused + more, cap;
	struct vertex *nvtx;
	uint32_t *nscr;

	if (want <= a->vcap)
		return 0;
	if (want > MAX_SLOTS)
		return -ENOMEM;
	cap = a->vcap ? (size_t)a->vcap * 2 : 64;
	if (cap < want)
		cap = want;
	if (cap > MAX_SLOTS)
		cap = MAX_SLOTS;
	nvtx = realloc(a->v, cap * sizeof(*nvtx));
	if (!nvtx)
		return -ENOMEM;
	a->v = nvtx;
	nscr = realloc(a->scratch, cap * sizeof(*nscr));
	if (!nscr)
		return -ENOMEM; /* a->v is only bigger than needed */
	a->scratch = nscr;
	a->vcap = (uint32_t)cap;
	return 0;
}

static int grow_edges(struct hy_analyzer *a, size_t more)
{
	size_t want = (size_t)a->eused + more, cap;
	struct edge *ne;

	if (want <= a->ecap)
		return 0;
	if (want > MAX_SLOTS)
		return -ENOMEM;
	cap = a->ecap ? (size_t)a->ecap * 2 : 64;
	if (cap < want)
		cap = want;
	if (cap > MAX_SLOTS)
		cap = MAX_SLOTS;
	ne = realloc(a->e, cap * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	a->e = ne;
	a->ecap = (uint32_t)cap;
	return 0;
}

static size_t eh_slot_of(const struct hy_analyzer *a, uint32_t from, uint32_t to)
{
	return (size_t)hy_keymap_mix(((uint64_t)from << 32) | to) & (a->ehcap - 1);
}

static void eh_put(struct hy_analyzer *a, uint32_t ei)
{
	size_t i = eh_slot_of(a, a->e[ei].from, a->e[ei].to);

	while (a->eh[i] != NIL)
		i = (i + 1) & (a->ehcap - 1);
	a->eh[i] = ei;
}

/* Refills the edge hash from the edges. The puts are independent cache
 * misses once the table is large: each slot is fetched some edges ahead,
 * so that they overlap instead of coming one after the other. */
static void eh_rebuild(struct hy_analyzer *a)
{
	memset(a->eh, 0xff, a->ehcap * sizeof(*a->eh));
	for (uint32_t i = 0; i < a->eused; i++) {
		uint32_t j = i + EH_AHEAD;

		if (j < a->eused && a->e[j].from != NIL)
			__builtin_prefetch(&a->eh[eh_slot_of(a, a->e[j].from, a->e[j].to)], 1);
		if (a->e[i].from != NIL)
			eh_put(a, i);
	}
}

static int grow_hash(struct hy_analyzer *a, size_t more)
{
	size_t want = ((size_t)a->ne + more) * 2, cap = a->ehcap ? a->ehcap : 128;
	uint32_t *old = a->eh;

	if (want <= a->ehcap)
		return 0;
	while (cap < want)
		cap *= 2;
	a->eh = malloc(cap * sizeof(*a->eh));
	if (!a->eh) {
		a->eh = old;
		return -ENOMEM;
	}
	a->ehcap = cap;
	eh_rebuild(a);
	free(old);
	return 0;
}

static struct proc *proc_find(const struct hy_analyzer *a, uint32_t pid)
{
	size_t i;

	if (!a->pcap)
		return NULL;
	i = (size_t)hy_keymap_mix(pid) & (a->pcap - 1);
	while (a->p[i].used) {
		if (a->p[i].pid == pid)
			return &a->p[i];
		i = (i + 1) & (a->pcap - 1);
	}
	return NULL;
}

static struct proc *proc_slot(struct hy_analyzer *a, uint32_t pid)
{
	size_t i = (size_t)hy_keymap_mix(pid) & (a->pcap - 1);

	while (a->p[i].used && a->p[i].pid != pid)
		i = (i + 1) & (a->pcap - 1);
	return &a->p[i];
}

static int grow_procs(struct hy_analyzer *a)
{
	size_t cap = a->pcap ? a->pcap * 2 : 16;
	struct proc *old = a->p, *np;

	if ((a->np + 1) * 2 <= a->pcap)
		return 0;
	np = calloc(cap, sizeof(*np));
	if (!np)
		return -ENOMEM;
	a->p = np;
	for (size_t i = 0; i < a->pcap; i++)
		if (old[i].used)
			*proc_slot(a, old[i].pid) = old[i];
	a->pcap = cap;
	free(old);
	return 0;
}

static int grow_files(struct hy_analyzer *a, size_t more)
{
	size_t want = (a->nf + more) * 2, cap = a->fcap ? a->fcap : 64;
	struct file *old = a->f;

	if (want <= a->fcap)
		return 0;
	while (cap < want)
		cap *= 2;
	a->f = malloc(cap * sizeof(*a->f));
	if (!a->f) {
		a->f = old;
		return -ENOMEM;
	}
	memset(a->f, 0xff, cap * sizeof(*a->f));
	for (size_t i = 0; i < a->fcap; i++) {
		size_t j;

		if (old[i].root == NIL)
			continue;
		j = (size_t)hy_keymap_mix(old[i].id) & (cap - 1);
		while (a->f[j].root != NIL)
			j = (j + 1) & (cap - 1);
		a->f[j] = old[i];
	}
	a->fcap = cap;
	free(old);
	return 0;
}

/* ---- vertices and edges -------------------------------------------------- */

static uint32_t vertex_alloc(struct hy_analyzer *a, uint64_t file, uint64_t block, uint32_t nblocks,
			     double weight, uint64_t lru)
{
	uint32_t x;

	if (a->vfree != NIL) {
		x = a->vfree;
		a->vfree = a->v[x].next;
	} else {
		x = a->vused++;
	}
	a->v[x] = (struct vertex){.file = file,
				  .block = block,
				  .weight = weight,
				  .lru = lru,
				  .nblocks = nblocks,
				  .left = NIL,
				  .right = NIL,
				  .prev = NIL,
				  .next = NIL,
				  .out_head = NIL,
				  .in_head = NIL,
				  .hot_out = NIL};
	a->nv++;
	a->fresh++;
	return x;
}

static uint32_t *eh_find(const struct hy_analyzer *a, uint32_t from, uint32_t to)
{
	size_t i;

	if (!a->ehcap)
		return NULL;
	i = eh_slot_of(a, from, to);
	while (a->eh[i] != NIL) {
		const struct edge *ed = &a->e[a->eh[i]];

		if (ed->from == from && ed->to == to)
			return &a->eh[i];
		i = (i + 1) & (a->ehcap - 1);
	}
	return NULL;
}

/* The slot holding edge @ei: compares indexes, loading no other edge. */
static uint32_t *eh_slot_of_edge(const struct hy_analyzer *a, uint32_t ei)
{
	size_t i = eh_slot_of(a, a->e[ei].from, a->e[ei].to);

	while (a->eh[i] != ei)
		i = (i + 1) & (a->ehcap - 1);
	return &a->eh[i];
}

/* Backward-shift deletion: no tombstones, probes stay short. */
static void eh_delete(struct hy_analyzer *a, const uint32_t *slot)
{
	size_t mask = a->ehcap - 1, i = (size_t)(slot - a->eh), j = i;

	for (;;) {
		size_t k;

		j = (j + 1) & mask;
		if (a->eh[j] == NIL)
			break;
		k = eh_slot_of(a, a->e[a->eh[j]].from, a->e[a->eh[j]].to);
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		a->eh[i] = a->eh[j];
		i = j;
	}
	a->eh[i] = NIL;
}

/* Adds @w to from -> to, making the edge if needed (capacity reserved). */
static void edge_add(struct hy_analyzer *a, uint32_t from, uint32_t to, double w)
{
	uint32_t *slot, ei = a->v[from].hot_out;
	struct edge *ed;

	if (ei < a->eused && a->e[ei].from == from && a->e[ei].to == to) {
		a->e[ei].weight += w;
		return;
	}
	slot = a->v[from].out_head != NIL && a->v[to].in_head != NIL ? eh_find(a, from, to) : NULL;
	if (slot) {
		a->e[*slot].weight += w;
		a->v[from].hot_out = *slot;
		return;
	}
	if (a->efree != NIL) {
		ei = a->efree;
		a->efree = a->e[ei].next_out;
	} else {
		ei = a->eused++;
	}
	ed = &a->e[ei];
	ed->from = from;
	ed->to = to;
	ed->weight = w;
	ed->prev_out = NIL;
	ed->next_out = a->v[from].out_head;
	if (ed->next_out != NIL)
		a->e[ed->next_out].prev_out = ei;
	a->v[from].out_head = ei;
	ed->prev_in = NIL;
	ed->next_in = a->v[to].in_head;
	if (ed->next_in != NIL)
		a->e[ed->next_in].prev_in = ei;
	a->v[to].in_head = ei;
	a->v[from].hot_out = ei;
	eh_put(a, ei);
	a->ne++;
}

static void edge_remove(struct hy_analyzer *a, uint32_t ei)
{
	struct edge *ed = &a->e[ei];

	eh_delete(a, eh_slot_of_edge(a, ei));
	if (ed->prev_out == NIL)
		a->v[ed->from].out_head = ed->next_out;
	else
		a->e[ed->prev_out].next_out = ed->next_out;
	if (ed->next_out != NIL)
		a->e[ed->next_out].prev_out = ed->prev_out;
	if (ed->prev_in == NIL)
		a->v[ed->to].in_head = ed->next_in;
	else
		a->e[ed->prev_in].next_in = ed->next_in;
	if (ed->next_in != NIL)
		a->e[ed->next_in].prev_in = ed->prev_in;
	ed->from = NIL;
	ed->next_out = a->efree;
	a->efree = ei;
	a->ne--;
}

/* Removes vertex @x and its edges; returns how many edges went. */
static uint64_t vertex_remove(struct hy_analyzer *a, uint32_t x)
{
	struct file *fe;
	uint64_t gone = 0;

	while (a->v[x].out_head != NIL) {
		edge_remove(a, a->v[x].out_head);
		gone++;
	}
	while (a->v[x].in_head != NIL) {
		edge_remove(a, a->v[x].in_head);
		gone++;
	}
	fe = file_find(a, a->v[x].file);
	fe->root = t_erase(a, fe->root, x);
	list_unlink(a, fe, x);
	if (fe->head == NIL)
		file_delete(a, fe);
	a->v[x].nblocks = 0;
	a->v[x].next = a->vfree;
	a->vfree = x;
	a->nv--;
	return gone;
}

/* Splits @x at block @b (inside it): returns the new vertex holding the
 * part before @b; @x keeps the part from @b on, its out-edges and its place
 * in the treap; its in-edges move to the new piece; new -> x gets x's
 * weight. Capacity reserved by the caller. */
static uint32_t split_left(struct hy_analyzer *a, struct file *fe, uint32_t x, uint64_t b)
{
	uint64_t first = a->v[x].block;
	uint32_t l = vertex_alloc(a, a->v[x].file, first, (uint32_t)(b - first), a->v[x].weight,
				  a->v[x].lru);

	a->v[x].nblocks -= (uint32_t)(b - first);
	a->v[x].block = b;
	for (uint32_t ei = a->v[x].in_head; ei != NIL; ei = a->e[ei].next_in) {
		eh_delete(a, eh_slot_of_edge(a, ei));
		a->e[ei].to = l;
		eh_put(a, ei);
	}
	a->v[l].in_head = a->v[x].in_head;
	a->v[x].in_head = NIL;
	list_link(a, fe, a->v[x].prev, x, l);
	fe->root = t_insert(a, fe->root, l);
	edge_add(a, l, x, a->v[x].weight);
	return l;
}

/* Makes a new vertex for a gap of @fe, in order between @prev and @next. */
static uint32_t gap_vertex(struct hy_analyzer *a, struct file *fe, uint32_t prev, uint32_t next,
			   uint64_t b, uint64_t n)
{
	uint32_t x = vertex_alloc(a, fe->id, b, (uint32_t)n, 0.0, 0);

	list_link(a, fe, prev, next, x);
	fe->root = t_insert(a, fe->root, x);
	return x;
}

/* ---- the cold-tail cut ---------------------------------------------------- */

/* Colder first: lower weight, then older last use, then (file, block). */
static bool colder(const struct hy_analyzer *a, uint32_t x, uint32_t y)
{
	const struct vertex *p = &a->v[x], *q = &a->v[y];

	if (p->weight != q->weight)
		return p->weight < q->weight;
	if (p->lru != q->lru)
		return p->lru < q->lru;
	return key_cmp(p->file, p->block, q->file, q->block) < 0;
}

static void swap32(uint32_t *s, size_t i, size_t j)
{
	uint32_t t = s[i];

	s[i] = s[j];
	s[j] = t;
}

/* Quickselect: afterwards s[0..k) are the k coldest of s[0..n). */
static void select_coldest(const struct hy_analyzer *a, uint32_t *s, size_t n, size_t k)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1 && k > lo && k < hi) {
		size_t mid = lo + (hi - lo) / 2, store = lo;
		uint32_t piv;

		/* median of three to the end */
		if (colder(a, s[mid], s[lo]))
			swap32(s, mid, lo);
		if (colder(a, s[hi - 1], s[lo]))
			swap32(s, hi - 1, lo);
		if (colder(a, s[mid], s[hi - 1]))
			swap32(s, mid, hi - 1);
		piv = s[hi - 1];
		for (size_t i = lo; i < hi - 1; i++)
			if (colder(a, s[i], piv))
				swap32(s, i, store++);
		swap32(s, store, hi - 1);
		if (store == k)
			return;
		if (k < store)
			hi = store;
		else
			lo = store + 1;
	}
}

static void cut_cold(struct hy_analyzer *a)
{
	size_t target, n = 0, k;

	if (a->nv <= a->max_vertices)
		return;
	target = a->max_vertices - a->max_vertices / 10;
	for (uint32_t x = 0; x < a->vused; x++)
		if (a->v[x].nblocks)
			a->scratch[n++] = x;
	k = n - target;
	select_coldest(a, a->scratch, n, k);
	for (size_t i = 0; i < k; i++) {
		a->cut_edges += vertex_remove(a, a->scratch[i]);
		a->cut_vertices++;
	}
}

/* ---- locality -------------------------------------------------------------- */

static uint32_t remap(const uint32_t *map, uint32_t i)
{
	return i == NIL ? NIL : map[i];
}

/* Moves vertex i to slot map[i] (a permutation of the slots in use),
 * following the permutation's cycles; leaves map[i] = i. */
static void permute_vertices(struct hy_analyzer *a, uint32_t *map)
{
	for (uint32_t i = 0; i < a->vused; i++) {
		uint32_t j = map[i];
		struct vertex t;

		if (j == i)
			continue;
		t = a->v[i];
		map[i] = i;
		while (j != i) {
			struct vertex u = a->v[j];
			uint32_t nj = map[j];

			a->v[j] = t;
			t = u;
			map[j] = j;
			j = nj;
		}
		a->v[i] = t;
	}
}

/* Renumbers the vertices in block order, file by file, dropping the free
 * slots (see Locality at the top): afterwards a run's vertices are
 * neighbours in memory. Edges keep their slots (their keys in the edge
 * hash change, so it is rebuilt): renumbering them too (by source) was
 * tried and did not pay, as it doubles the cost and the edges a run adds
 * to are prefetched during its walk anyway. In place (nothing to allocate,
 * nothing to fail), O(V + E): about 0.13 s at a million vertices
 * (bench/borg, 1e7 records), in the hy_analyzer_feed() call that runs it. */
static void renumber(struct hy_analyzer *a)
{
	struct {
		uint32_t x, rank;
		size_t k;
	} w[RENUMBER_WALKS];
	uint32_t *vmap = a->scratch, nx = 0;
	size_t k = 0, nw = 0;

	a->fresh = 0;
	if (a->fcap > UINT32_MAX) /* file slots do not fit in .prev */
		return;
	/* each vertex's rank in its file's list into vmap, its file's slot
	 * into .prev (the new numbers make .prev redundant: rebuilt below),
	 * each file's first number into its .head; a walk is a chain of cache
	 * misses, so several files are walked side by side for their misses
	 * to overlap */
	for (;;) {
		while (nw < RENUMBER_WALKS && k < a->fcap) {
			if (a->f[k].root != NIL)
				w[nw].x = a->f[k].head, w[nw].rank = 0, w[nw++].k = k;
			k++;
		}
		if (!nw)
			break;
		for (size_t i = 0; i < nw;) {
			uint32_t x = w[i].x;

			vmap[x] = w[i].rank++;
			a->v[x].prev = (uint32_t)w[i].k;
			w[i].x = a->v[x].next;
			if (w[i].x == NIL) {
				a->f[w[i].k].head = nx;
				nx += w[i].rank;
				w[i] = w[--nw];
			} else {
				i++;
			}
		}
	}
	for (uint32_t x = 0; x < a->vused; x++)
		vmap[x] = a->v[x].nblocks ? a->f[a->v[x].prev].head + vmap[x] : nx++;

	/* the links to the new numbers; within a file the numbers follow the
	 * list, so .prev is the number before (none for the file's head) */
	for (uint32_t x = 0; x < a->vused; x++) {
		if (!a->v[x].nblocks)
			continue;
		a->v[x].left = remap(vmap, a->v[x].left);
		a->v[x].right = remap(vmap, a->v[x].right);
		a->v[x].prev = vmap[x] == a->f[a->v[x].prev].head ? NIL : vmap[x] - 1;
		a->v[x].next = remap(vmap, a->v[x].next);
	}
	for (uint32_t ei = 0; ei < a->eused; ei++) {
		if (a->e[ei].from == NIL)
			continue;
		a->e[ei].from = vmap[a->e[ei].from];
		a->e[ei].to = vmap[a->e[ei].to];
	}
	for (size_t i = 0; i < a->pcap; i++) {
		struct proc *p = &a->p[i];

		/* a hint to a free slot would be checked and refused anyway */
		if (p->used)
			p->hint = p->hint < a->vused && a->v[p->hint].nblocks ? vmap[p->hint] : NIL;
	}
	for (k = 0; k < a->fcap; k++)
		if (a->f[k].root != NIL)
			a->f[k].root = vmap[a->f[k].root];
	permute_vertices(a, vmap);
	a->vused = a->nv;
	a->vfree = NIL;
	if (a->ehcap)
		eh_rebuild(a);
}

/* ---- the public calls ------------------------------------------------------ */

static void graph_reset(struct hy_analyzer *a)
{
	a->vused = a->nv = a->fresh = 0;
	a->vfree = NIL;
	if (a->fcap)
		memset(a->f, 0xff, a->fcap * sizeof(*a->f));
	a->nf = 0;
	a->eused = a->ne = 0;
	a->efree = NIL;
	if (a->ehcap)
		memset(a->eh, 0xff, a->ehcap * sizeof(*a->eh));
	if (a->pcap)
		memset(a->p, 0, a->pcap * sizeof(*a->p));
	a->np = 0;
	a->clock = 0;
}

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
	graph_reset(a);
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
	free(analyzer);
}

/* Sets a process's last request (capacity reserved). */
static void proc_set(struct hy_analyzer *a, uint32_t pid, int64_t ts, uint64_t file,
		     uint64_t last_block, uint32_t hint)
{
	struct proc *p = proc_slot(a, pid);

	if (!p->used) {
		p->used = 1;
		p->pid = pid;
		a->np++;
	}
	p->ts = ts;
	p->file = file;
	p->last_block = last_block;
	p->hint = hint;
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
	if ((rc = grow_vertices(a, k + 3)) || (rc = grow_edges(a, 2 * k + 3)) ||
	    (rc = grow_hash(a, 2 * k + 3)) || (rc = grow_procs(a)) ||
	    (rc = grow_files(a, fe ? 0 : 1)))
		return rc;

	/* from here on nothing fails; growing may have moved the file and
	 * process tables, so both are looked up again */
	fe = file_get(a, file_id);
	now = ++a->clock;
	if (u != NIL && a->v[u].block < block && vend(a, u) > block) {
		split_left(a, fe, u, block);
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
				x = gap_vertex(a, fe, pred, cur, pos, a->v[cur].block - pos);
				pos = a->v[cur].block;
			} else if (vend(a, cur) > e) {
				x = split_left(a, fe, cur, e);
				if (!(split_first && cur == u))
					a->splits++;
				pos = e;
			} else {
				x = cur;
				pos = vend(a, cur);
				cur = a->v[cur].next;
			}
		} else {
			x = gap_vertex(a, fe, pred, cur, pos, e - pos);
			pos = e;
		}
		pred = x;
		a->v[x].weight += 1.0;
		a->v[x].lru = now;
		if (prev_run != NIL)
			edge_add(a, prev_run, x, 1.0);
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
			from = find_holder(a, p->file, p->last_block);

		if (from != NIL && from != first)
			edge_add(a, from, first, 1.0);
	}
	proc_set(a, process, ts_ns, file_id, e - 1, prev_run);
	a->requests++;
	cut_cold(a);
	if (a->fresh >= RENUMBER_MIN && a->fresh >= a->nv / 2)
		renumber(a);
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
				edge_remove(a, i);
		}
		for (uint32_t x = 0; x < a->vused; x++) {
			if (!a->v[x].nblocks)
				continue;
			a->v[x].weight *= factor;
			if (!(a->v[x].weight >= 1.0))
				vertex_remove(a, x);
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

/* ---- the database ----------------------------------------------------------- */

static int db_fail(struct sqlite3 *db, const char *doing, char *why, size_t why_size)
{
	snprintf(why, why_size, "analyzer: %s: %s", doing, sqlite3_errmsg(db));
	return hy_state_errno(sqlite3_errcode(db));
}

/* The 4 KiB block range of a logged request; false when it reads nothing. */
static bool log_range(int64_t offset, int64_t length, uint64_t *block, uint32_t *nblocks)
{
	uint64_t first, last;

	if (offset < 0 || length <= 0 || length > INT64_MAX - offset)
		return false;
	first = (uint64_t)offset >> BLOCK_SHIFT;
	last = ((uint64_t)offset + (uint64_t)length + BLOCK_SIZE - 1) >> BLOCK_SHIFT;
	*block = first;
	*nblocks = last - first > UINT32_MAX ? UINT32_MAX : (uint32_t)(last - first);
	return true;
}

int hy_analyzer_feed_log(struct hy_analyzer *a, struct sqlite3 *db, int64_t after, int64_t *last,
			 char *why, size_t why_size)
{
	sqlite3_stmt *st;
	int rc;

	*last = after;
	if (sqlite3_prepare_v2(db,
			       "SELECT rowid, ts_ns, process_id, file_id, offset, length"
			       " FROM access_log WHERE rowid > ?1 ORDER BY rowid",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(db, "cannot read the access log", why, why_size);
	sqlite3_bind_int64(st, 1, after);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t rowid = sqlite3_column_int64(st, 0);
		uint64_t block;
		uint32_t nblocks;

		if (log_range(sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5), &block,
			      &nblocks)) {
			int err = hy_analyzer_feed(a, sqlite3_column_int64(st, 1),
						   (uint32_t)sqlite3_column_int64(st, 2),
						   (uint64_t)sqlite3_column_int64(st, 3), block,
						   nblocks);

			if (err) {
				snprintf(why, why_size, "analyzer: access log row %" PRId64 ": %s",
					 rowid, strerror(-err));
				sqlite3_finalize(st);
				return err;
			}
		}
		*last = rowid;
	}
	if (rc != SQLITE_DONE) {
		rc = db_fail(db, "reading the access log", why, why_size);
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	return 0;
}

/* Saved ids: by last use, so that a load restores the recency order the
 * cold-tail cut needs (the schema has no column for it). */
static int save_order(const void *pa, const void *pb, void *arg)
{
	const struct hy_analyzer *a = arg;
	uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;

	if (a->v[x].lru != a->v[y].lru)
		return a->v[x].lru < a->v[y].lru ? -1 : 1;
	return key_cmp(a->v[x].file, a->v[x].block, a->v[y].file, a->v[y].block);
}

int hy_analyzer_save(const struct hy_analyzer *a, struct sqlite3 *db, const char *mode,
		     int64_t last_rowid, char *why, size_t why_size)
{
	sqlite3_stmt *vst = NULL, *est = NULL, *rst = NULL;
	uint32_t *order = NULL, *id = NULL;
	struct timespec now;
	size_t n = 0;
	int rc = 0;

	if (!mode || (strcmp(mode, "cumulative") && strcmp(mode, "partial"))) {
		snprintf(why, why_size, "analyzer: mode \"%s\" is neither cumulative nor partial",
			 mode ? mode : "(null)");
		return -EINVAL;
	}
	order = malloc((a->nv ? a->nv : 1) * sizeof(*order));
	id = malloc((a->vused ? a->vused : 1) * sizeof(*id));
	if (!order || !id) {
		free(order), free(id);
		snprintf(why, why_size, "analyzer: saving the graph: out of memory");
		return -ENOMEM;
	}
	for (uint32_t x = 0; x < a->vused; x++)
		if (a->v[x].nblocks)
			order[n++] = x;
	qsort_r(order, n, sizeof(*order), save_order, (void *)a);
	for (size_t i = 0; i < n; i++)
		id[order[i]] = (uint32_t)(i + 1);

	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot start saving the graph", why, why_size);
		goto out;
	}
	if (sqlite3_exec(db, "DELETE FROM graph_edges; DELETE FROM graph_vertices;", NULL, NULL,
			 NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT INTO graph_vertices (id, file_id, block, nblocks, weight)"
			       " VALUES (?1, ?2, ?3, ?4, ?5)",
			       -1, &vst, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO graph_edges (src, dst, weight) VALUES (?1, ?2, ?3)",
			       -1, &est, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT INTO analyzer_runs (finished_ns, mode, last_log_rowid,"
			       " requests, vertices, edges, cut_vertices)"
			       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
			       -1, &rst, NULL) != SQLITE_OK)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct vertex *vx = &a->v[order[i]];

		sqlite3_bind_int64(vst, 1, (int64_t)(i + 1));
		sqlite3_bind_int64(vst, 2, (int64_t)vx->file);
		sqlite3_bind_int64(vst, 3, (int64_t)vx->block);
		sqlite3_bind_int64(vst, 4, vx->nblocks);
		sqlite3_bind_double(vst, 5, vx->weight);
		if (sqlite3_step(vst) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(vst);
	}
	for (uint32_t i = 0; i < a->eused; i++) {
		const struct edge *ed = &a->e[i];

		if (ed->from == NIL)
			continue;
		sqlite3_bind_int64(est, 1, id[ed->from]);
		sqlite3_bind_int64(est, 2, id[ed->to]);
		sqlite3_bind_double(est, 3, ed->weight);
		if (sqlite3_step(est) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(est);
	}
	clock_gettime(CLOCK_REALTIME, &now);
	sqlite3_bind_int64(rst, 1, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
	sqlite3_bind_text(rst, 2, mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(rst, 3, last_rowid);
	sqlite3_bind_int64(rst, 4, (int64_t)a->requests);
	sqlite3_bind_int64(rst, 5, a->nv);
	sqlite3_bind_int64(rst, 6, a->ne);
	sqlite3_bind_int64(rst, 7, (int64_t)a->cut_vertices);
	if (sqlite3_step(rst) != SQLITE_DONE)
		goto fail;
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	goto out;
fail:
	rc = db_fail(db, "saving the graph", why, why_size);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
	sqlite3_finalize(vst);
	sqlite3_finalize(est);
	sqlite3_finalize(rst);
	free(order);
	free(id);
	return rc;
}

static int64_t query_int(struct sqlite3 *db, const char *sql, int64_t arg, int64_t dflt, int *rc)
{
	sqlite3_stmt *st;
	int64_t val = dflt;
	int step;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		*rc = -1;
		return dflt;
	}
	if (sqlite3_bind_parameter_count(st) > 0)
		sqlite3_bind_int64(st, 1, arg);
	step = sqlite3_step(st);
	if (step == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		val = sqlite3_column_int64(st, 0);
	else if (step != SQLITE_ROW && step != SQLITE_DONE)
		*rc = -1;
	sqlite3_finalize(st);
	return val;
}

static int id_cmp(const void *pa, const void *pb)
{
	int64_t x = *(const int64_t *)pa, y = *(const int64_t *)pb;

	return x < y ? -1 : x > y;
}

/* Reads the saved vertices (ids ascending, so ids[i] is slot i's id) and
 * edges into the empty graph. */
static int load_graph(struct hy_analyzer *a, struct sqlite3 *db, char *why, size_t why_size)
{
	sqlite3_stmt *st = NULL;
	int64_t *ids = NULL, nvx, ned;
	int q = 0, rc = 0, step;
	size_t n = 0;

	nvx = query_int(db, "SELECT count(*) FROM graph_vertices", 0, 0, &q);
	ned = query_int(db, "SELECT count(*) FROM graph_edges", 0, 0, &q);
	if (q)
		return db_fail(db, "reading the saved graph", why, why_size);
	if (nvx < 0 || nvx > (int64_t)MAX_SLOTS - 8 || ned < 0 || ned > (int64_t)MAX_SLOTS - 8 ||
	    grow_vertices(a, (size_t)nvx) || grow_edges(a, (size_t)ned) ||
	    grow_hash(a, (size_t)ned) || !(ids = malloc((size_t)(nvx ? nvx : 1) * sizeof(*ids))))
		goto nomem;
	if (sqlite3_prepare_v2(db,
			       "SELECT id, file_id, block, nblocks, weight FROM graph_vertices"
			       " ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		goto dbfail;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t f = (uint64_t)sqlite3_column_int64(st, 1);
		uint64_t b = (uint64_t)sqlite3_column_int64(st, 2);
		int64_t nb = sqlite3_column_int64(st, 3);
		double w = sqlite3_column_double(st, 4);
		struct file *fe;
		uint32_t pred, next, x;

		if (n >= (size_t)nvx || nb <= 0 || nb > UINT32_MAX || b + (uint64_t)nb < b ||
		    !(w > 0.0) || !isfinite(w))
			goto damaged;
		fe = file_find(a, f);
		pred = fe ? t_floor(a, fe->root, b) : NIL;
		next = pred != NIL ? a->v[pred].next : fe ? fe->head : NIL;
		if ((pred != NIL && vend(a, pred) > b) ||
		    (next != NIL && a->v[next].block < b + (uint64_t)nb))
			goto damaged;
		if (!fe && grow_files(a, 1))
			goto nomem;
		/* the rank by id is the recency order (see save_order) */
		fe = file_get(a, f);
		x = vertex_alloc(a, f, b, (uint32_t)nb, w, n + 1);
		list_link(a, fe, pred, next, x);
		fe->root = t_insert(a, fe->root, x);
		ids[n++] = sqlite3_column_int64(st, 0);
	}
	if (step != SQLITE_DONE)
		goto dbfail;
	sqlite3_finalize(st);
	st = NULL;
	a->clock = n;

	if (sqlite3_prepare_v2(db, "SELECT src, dst, weight FROM graph_edges", -1, &st, NULL) !=
	    SQLITE_OK)
		goto dbfail;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t src = sqlite3_column_int64(st, 0), dst = sqlite3_column_int64(st, 1);
		int64_t *ps = bsearch(&src, ids, n, sizeof(*ids), id_cmp);
		int64_t *pd = bsearch(&dst, ids, n, sizeof(*ids), id_cmp);
		double w = sqlite3_column_double(st, 2);

		if (!ps || !pd || ps == pd || !(w > 0.0) || !isfinite(w) || a->eused >= a->ecap ||
		    (size_t)a->ne * 2 >= a->ehcap ||
		    eh_find(a, (uint32_t)(ps - ids), (uint32_t)(pd - ids)))
			goto damaged;
		edge_add(a, (uint32_t)(ps - ids), (uint32_t)(pd - ids), w);
	}
	if (step != SQLITE_DONE)
		goto dbfail;
	goto out;
nomem:
	snprintf(why, why_size, "analyzer: loading %" PRId64 " vertices: out of memory", nvx);
	rc = -ENOMEM;
	goto out;
damaged:
	snprintf(why, why_size,
		 "analyzer: the saved graph is damaged (overlapping ranges, a bad length, "
		 "weight or edge)");
	rc = -EUCLEAN;
	goto out;
dbfail:
	rc = db_fail(db, "reading the saved graph", why, why_size);
out:
	sqlite3_finalize(st);
	free(ids);
	return rc;
}

/* Rebuilds each process's last request from the log read so far, as a full
 * run would have it: only requests within the gap of the last one read can
 * still start a temporal edge, and the ts_ns index finds those. */
static int load_processes(struct hy_analyzer *a, struct sqlite3 *db, int64_t last_rowid, char *why,
			  size_t why_size)
{
	sqlite3_stmt *st;
	int64_t tlast, from;
	int q = 0, step;

	tlast = query_int(db, "SELECT ts_ns FROM access_log WHERE rowid = ?1", last_rowid,
			  INT64_MIN, &q);
	if (q)
		return db_fail(db, "reading the access log", why, why_size);
	if (tlast == INT64_MIN)
		return 0; /* that part of the log is gone: nothing to go on from */
	if (__builtin_sub_overflow(tlast, a->gap_ns, &from))
		from = INT64_MIN;
	if (sqlite3_prepare_v2(db,
			       "SELECT ts_ns, process_id, file_id, offset, length FROM access_log"
			       " WHERE ts_ns >= ?1 AND rowid <= ?2 ORDER BY rowid",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(db, "reading the access log", why, why_size);
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, last_rowid);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t block;
		uint32_t nblocks;

		if (!log_range(sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4), &block,
			       &nblocks))
			continue;
		if (grow_procs(a)) {
			sqlite3_finalize(st);
			snprintf(why, why_size, "analyzer: loading the processes: out of memory");
			return -ENOMEM;
		}
		proc_set(a, (uint32_t)sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 0),
			 (uint64_t)sqlite3_column_int64(st, 2), block + nblocks - 1, NIL);
	}
	sqlite3_finalize(st);
	if (step != SQLITE_DONE)
		return db_fail(db, "reading the access log", why, why_size);
	return 0;
}

int hy_analyzer_load(struct hy_analyzer *a, struct sqlite3 *db, int64_t *last_rowid, char *why,
		     size_t why_size)
{
	int q = 0, rc;

	*last_rowid = 0;
	graph_reset(a);
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(db, "cannot start loading the graph", why, why_size);
	*last_rowid = query_int(
		db, "SELECT last_log_rowid FROM analyzer_runs ORDER BY id DESC LIMIT 1", 0, 0, &q);
	if (q) {
		rc = db_fail(db, "reading the analyzer's runs", why, why_size);
		goto fail;
	}
	rc = load_graph(a, db, why, why_size);
	if (!rc && *last_rowid > 0)
		rc = load_processes(a, db, *last_rowid, why, why_size);
	if (rc)
		goto fail;
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	cut_cold(a); /* a graph saved under a larger bound */
	return 0;
fail:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	graph_reset(a);
	*last_rowid = 0;
	return rc;
}

/* ---- one file's heat, for explain ------------------------------------ */

int hy_analyzer_file_heat(const char *db_path, uint64_t file_id, struct hy_analyzer_heat **out,
			  size_t *n, char *why, size_t why_size)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;
	size_t cap = 0;
	int step, rc = 0;

	*out = NULL;
	*n = 0;
	/* its own read-only connection: the reconfigurator's may be busy on
	 * its thread, and the graph is read as the last run saved it */
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(why, why_size, "state database \"%s\": %s", db_path,
			 db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return -EIO;
	}
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(
		    db,
		    "SELECT block, nblocks, weight FROM graph_vertices WHERE file_id = ?1"
		    " ORDER BY block",
		    -1, &q, NULL) != SQLITE_OK) {
		rc = -EIO;
		goto out;
	}
	sqlite3_bind_int64(q, 1, (sqlite3_int64)file_id);
	while ((step = sqlite3_step(q)) == SQLITE_ROW) {
		if (*n == cap) {
			struct hy_analyzer_heat *grown;

			cap = cap ? 2 * cap : 64;
			grown = realloc(*out, cap * sizeof(*grown));
			if (!grown) {
				rc = -ENOMEM;
				goto out;
			}
			*out = grown;
		}
		(*out)[(*n)++] = (struct hy_analyzer_heat){(uint64_t)sqlite3_column_int64(q, 0),
							   (uint64_t)sqlite3_column_int64(q, 1),
							   sqlite3_column_double(q, 2)};
	}
	if (step != SQLITE_DONE)
		rc = -EIO;
out:
	if (rc == -EIO)
		snprintf(why, why_size, "state database \"%s\": cannot read the graph", db_path);
	else if (rc == -ENOMEM)
		snprintf(why, why_size, "out of memory");
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	sqlite3_finalize(q);
	sqlite3_close(db);
	return rc;
}
