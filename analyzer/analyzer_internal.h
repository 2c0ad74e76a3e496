/*
 * analyzer_internal.h - what the parts of BORG's analyzer share: the
 * master access graph in memory (vertices, edges, files, processes; the
 * design notes are at the top of analyzer.c), the small lookups they all
 * use, and the functions of analyzer_graph.c the other parts call
 * (hy_analyzer_graph_<verb>; the notes and comments name them without
 * the prefix: renumber(), split_left()). Only the analyzer's own .c files
 * (analyzer/) include it; the API is include/hybridfs/analyzer.h.
 *
 * The parts: analyzer_graph.c (the graph in memory: the files' treaps and
 * lists, capacity, vertices and edges, the cold-tail cut, locality),
 * analyzer.c (the public calls: new, free, feed, decay, stats, export),
 * analyzer_db.c (the database: feed from the log, save, load, one file's
 * heat).
 *
 * Locks: none; one thread at a time uses an analyzer (analyzer.h).
 */
#ifndef HYBRIDFS_ANALYZER_INTERNAL_H
#define HYBRIDFS_ANALYZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/analyzer.h"
#include "hybridfs/keymap.h"

#define NIL	  UINT32_MAX
#define MAX_SLOTS (UINT32_MAX - 1u)

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

	/* the files the last feed_log left out, by id (analyzer.h) */
	int64_t write_once_ns; /* <= 0: none is written once */
	struct hy_analyzer_left *left;
	size_t nleft, leftcap;
};

/* ---- small helpers ----------------------------------------------------- */

static inline int key_cmp(uint64_t fa, uint64_t ba, uint64_t fb, uint64_t bb)
{
	if (fa != fb)
		return fa < fb ? -1 : 1;
	if (ba != bb)
		return ba < bb ? -1 : 1;
	return 0;
}

static inline uint64_t vend(const struct hy_analyzer *a, uint32_t x)
{
	return a->v[x].block + a->v[x].nblocks;
}

/* The vertex of treap @t with the greatest block <= @b, or NIL. */
static inline uint32_t t_floor(const struct hy_analyzer *a, uint32_t t, uint64_t b)
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

static inline struct file *file_find(const struct hy_analyzer *a, uint64_t id)
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

static inline struct proc *proc_find(const struct hy_analyzer *a, uint32_t pid)
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

static inline size_t eh_slot_of(const struct hy_analyzer *a, uint32_t from, uint32_t to)
{
	return (size_t)hy_keymap_mix(((uint64_t)from << 32) | to) & (a->ehcap - 1);
}

/* ---- functions the other parts call in analyzer_graph.c ---------------- */

uint32_t hy_analyzer_graph_t_insert(struct hy_analyzer *a, uint32_t t, uint32_t n);
struct file *hy_analyzer_graph_file_get(struct hy_analyzer *a, uint64_t id);
uint32_t hy_analyzer_graph_find_holder(const struct hy_analyzer *a, uint64_t f, uint64_t b);
void hy_analyzer_graph_list_link(struct hy_analyzer *a, struct file *fe, uint32_t prev,
				 uint32_t next, uint32_t x);
int hy_analyzer_graph_grow_vertices(struct hy_analyzer *a, size_t more);
int hy_analyzer_graph_grow_edges(struct hy_analyzer *a, size_t more);
int hy_analyzer_graph_grow_hash(struct hy_analyzer *a, size_t more);
struct proc *hy_analyzer_graph_proc_slot(struct hy_analyzer *a, uint32_t pid);
void hy_analyzer_graph_proc_set(struct hy_analyzer *a, uint32_t pid, int64_t ts, uint64_t file,
				uint64_t last_block, uint32_t hint);
int hy_analyzer_graph_grow_procs(struct hy_analyzer *a);
int hy_analyzer_graph_grow_files(struct hy_analyzer *a, size_t more);
uint32_t hy_analyzer_graph_vertex_alloc(struct hy_analyzer *a, uint64_t file, uint64_t block,
					uint32_t nblocks, double weight, uint64_t lru);
uint32_t *hy_analyzer_graph_eh_find(const struct hy_analyzer *a, uint32_t from, uint32_t to);
void hy_analyzer_graph_edge_add(struct hy_analyzer *a, uint32_t from, uint32_t to, double w);
void hy_analyzer_graph_edge_remove(struct hy_analyzer *a, uint32_t ei);
uint64_t hy_analyzer_graph_vertex_remove(struct hy_analyzer *a, uint32_t x);
uint32_t hy_analyzer_graph_split_left(struct hy_analyzer *a, struct file *fe, uint32_t x,
				      uint64_t b);
uint32_t hy_analyzer_graph_gap_vertex(struct hy_analyzer *a, struct file *fe, uint32_t prev,
				      uint32_t next, uint64_t b, uint64_t n);
void hy_analyzer_graph_cut_cold(struct hy_analyzer *a);
void hy_analyzer_graph_renumber(struct hy_analyzer *a);
void hy_analyzer_graph_reset(struct hy_analyzer *a);

#endif
