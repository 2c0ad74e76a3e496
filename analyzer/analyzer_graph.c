/*
 * analyzer_graph.c - BORG's master access graph in memory: the files'
 * treaps and lists, capacity, vertices and edges, the cold-tail cut and
 * locality (renumbering). See include/hybridfs/analyzer.h, the design
 * notes at the top of analyzer.c, and analyzer_internal.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/analyzer.h"
#include "hybridfs/keymap.h"

#include "analyzer_internal.h"

#define RENUMBER_WALKS 8  /* file lists renumber() walks side by side */
#define EH_AHEAD       16 /* edges eh_rebuild() fetches ahead */

/* ---- small helpers ----------------------------------------------------- */

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

uint32_t hy_analyzer_graph_t_insert(struct hy_analyzer *a, uint32_t t, uint32_t n)
{
	if (t == NIL)
		return n;
	if (prio(a, n) > prio(a, t)) {
		t_split(a, t, a->v[n].block, &a->v[n].left, &a->v[n].right);
		return n;
	}
	if (a->v[n].block < a->v[t].block)
		a->v[t].left = hy_analyzer_graph_t_insert(a, a->v[t].left, n);
	else
		a->v[t].right = hy_analyzer_graph_t_insert(a, a->v[t].right, n);
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

/* File @id's entry, made if missing (capacity reserved); a new entry counts
 * as a free slot until its first vertex is linked in, which the caller does
 * right away. */
struct file *hy_analyzer_graph_file_get(struct hy_analyzer *a, uint64_t id)
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
uint32_t hy_analyzer_graph_find_holder(const struct hy_analyzer *a, uint64_t f, uint64_t b)
{
	const struct file *fe = file_find(a, f);
	uint32_t x = fe ? t_floor(a, fe->root, b) : NIL;

	if (x != NIL && vend(a, x) > b)
		return x;
	return NIL;
}

/* Links @x in between @prev and @next, neighbours in @fe's list (NIL: its
 * ends). */
void hy_analyzer_graph_list_link(struct hy_analyzer *a, struct file *fe, uint32_t prev,
				 uint32_t next, uint32_t x)
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

int hy_analyzer_graph_grow_vertices(struct hy_analyzer *a, size_t more)
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

int hy_analyzer_graph_grow_edges(struct hy_analyzer *a, size_t more)
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

int hy_analyzer_graph_grow_hash(struct hy_analyzer *a, size_t more)
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

struct proc *hy_analyzer_graph_proc_slot(struct hy_analyzer *a, uint32_t pid)
{
	size_t i = (size_t)hy_keymap_mix(pid) & (a->pcap - 1);

	while (a->p[i].used && a->p[i].pid != pid)
		i = (i + 1) & (a->pcap - 1);
	return &a->p[i];
}

/* Sets a process's last request (capacity reserved). */
void hy_analyzer_graph_proc_set(struct hy_analyzer *a, uint32_t pid, int64_t ts, uint64_t file,
				uint64_t last_block, uint32_t hint)
{
	struct proc *p = hy_analyzer_graph_proc_slot(a, pid);

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

int hy_analyzer_graph_grow_procs(struct hy_analyzer *a)
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
			*hy_analyzer_graph_proc_slot(a, old[i].pid) = old[i];
	a->pcap = cap;
	free(old);
	return 0;
}

int hy_analyzer_graph_grow_files(struct hy_analyzer *a, size_t more)
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

uint32_t hy_analyzer_graph_vertex_alloc(struct hy_analyzer *a, uint64_t file, uint64_t block,
					uint32_t nblocks, double weight, uint64_t lru)
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

uint32_t *hy_analyzer_graph_eh_find(const struct hy_analyzer *a, uint32_t from, uint32_t to)
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
void hy_analyzer_graph_edge_add(struct hy_analyzer *a, uint32_t from, uint32_t to, double w)
{
	uint32_t *slot, ei = a->v[from].hot_out;
	struct edge *ed;

	if (ei < a->eused && a->e[ei].from == from && a->e[ei].to == to) {
		a->e[ei].weight += w;
		return;
	}
	slot = a->v[from].out_head != NIL && a->v[to].in_head != NIL
		       ? hy_analyzer_graph_eh_find(a, from, to)
		       : NULL;
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

void hy_analyzer_graph_edge_remove(struct hy_analyzer *a, uint32_t ei)
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
uint64_t hy_analyzer_graph_vertex_remove(struct hy_analyzer *a, uint32_t x)
{
	struct file *fe;
	uint64_t gone = 0;

	while (a->v[x].out_head != NIL) {
		hy_analyzer_graph_edge_remove(a, a->v[x].out_head);
		gone++;
	}
	while (a->v[x].in_head != NIL) {
		hy_analyzer_graph_edge_remove(a, a->v[x].in_head);
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
uint32_t hy_analyzer_graph_split_left(struct hy_analyzer *a, struct file *fe, uint32_t x,
				      uint64_t b)
{
	uint64_t first = a->v[x].block;
	uint32_t l = hy_analyzer_graph_vertex_alloc(a, a->v[x].file, first, (uint32_t)(b - first),
						    a->v[x].weight, a->v[x].lru);

	a->v[x].nblocks -= (uint32_t)(b - first);
	a->v[x].block = b;
	for (uint32_t ei = a->v[x].in_head; ei != NIL; ei = a->e[ei].next_in) {
		eh_delete(a, eh_slot_of_edge(a, ei));
		a->e[ei].to = l;
		eh_put(a, ei);
	}
	a->v[l].in_head = a->v[x].in_head;
	a->v[x].in_head = NIL;
	hy_analyzer_graph_list_link(a, fe, a->v[x].prev, x, l);
	fe->root = hy_analyzer_graph_t_insert(a, fe->root, l);
	hy_analyzer_graph_edge_add(a, l, x, a->v[x].weight);
	return l;
}

/* Makes a new vertex for a gap of @fe, in order between @prev and @next. */
uint32_t hy_analyzer_graph_gap_vertex(struct hy_analyzer *a, struct file *fe, uint32_t prev,
				      uint32_t next, uint64_t b, uint64_t n)
{
	uint32_t x = hy_analyzer_graph_vertex_alloc(a, fe->id, b, (uint32_t)n, 0.0, 0);

	hy_analyzer_graph_list_link(a, fe, prev, next, x);
	fe->root = hy_analyzer_graph_t_insert(a, fe->root, x);
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

void hy_analyzer_graph_cut_cold(struct hy_analyzer *a)
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
		a->cut_edges += hy_analyzer_graph_vertex_remove(a, a->scratch[i]);
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
void hy_analyzer_graph_renumber(struct hy_analyzer *a)
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

/* ---- an empty graph ---------------------------------------------------- */

void hy_analyzer_graph_reset(struct hy_analyzer *a)
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
