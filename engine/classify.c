/* classify.c - see include/hybridfs/classify.h.
 *
 * Each direction's slots form a ring (eviction order) and carry two
 * intrusive indexes:
 *
 * - a hash of (file_id, end) with doubly linked chains, for sequential:
 *   O(1) expected lookup, insert and unlink, even when many slots share
 *   one key (a block read again and again);
 * - a treap of byte intervals [first, last] ordered by (file_id, first,
 *   slot) and augmented with the largest (file_id, last) of each subtree:
 *   an interval tree, for overlapped and strided. The slot number breaks
 *   ties, so every key is unique and a slot is removed by its key.
 *   Insertion is split + merge, removal replaces the node with the merge
 *   of its children; each walks one path, O(log depth) expected.
 *
 * One interval tree answers both other classes, with one walk: the
 * latest ending slot L among the file's slots that start at or before the
 * last byte of the request's last page (hi). Overlapped: some slot meets
 * the request's page-rounded range [lo, hi] (a slot touches a page of the
 * request exactly when its bytes meet that page); a slot starting after
 * hi cannot, and among those starting at or before it one meets the
 * range exactly when L ends at or after lo. Strided, when neither
 * sequential nor overlapped: some slot meets [offset - gap - 1, offset -
 * 1]. Every slot starting at or before hi now ends before lo <= offset,
 * and one starting after hi cannot meet a range below offset; so some
 * slot meets it exactly when L's last byte >= offset - gap - 1, that is
 * its end in [offset - gap, offset) (end != offset: not sequential), the
 * definition.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/classify.h"

#define NIL	  UINT32_MAX
#define PAGE_MASK ((UINT64_C(1) << HY_CLASSIFY_PAGE_SHIFT) - 1)

struct hy_classify_node {
	uint64_t file_id;
	uint64_t first, last;	     /* bytes, inclusive */
	uint64_t end;		     /* last + 1, saturated: the hash key */
	uint64_t max_file, max_last; /* largest (file_id, last) in the subtree */
	uint32_t prio;
	uint32_t kid[2];       /* treap: left, right */
	uint32_t hnext, hprev; /* hash chain; hprev NIL: first in its bucket */
};

/* (a1, a2) vs (b1, b2) lexicographically: <0, 0, >0. Without branches:
 * the tree walks compare random keys, and mispredicted branches were a
 * third of the time. */
static inline int cmp2(uint64_t a1, uint64_t a2, uint64_t b1, uint64_t b2)
{
	int c = (a1 > b1) - (a1 < b1), d = (a2 > b2) - (a2 < b2);

	return 2 * c + d;
}

static inline int key_cmp(const struct hy_classify_node *n, uint32_t a, uint32_t b)
{
	int c = cmp2(n[a].file_id, n[a].first, n[b].file_id, n[b].first);

	if (c)
		return c;
	return a < b ? -1 : a > b;
}

/* Recomputes x's augmentation from its own interval and its children. */
static inline void pull(struct hy_classify_node *n, uint32_t x)
{
	n[x].max_file = n[x].file_id;
	n[x].max_last = n[x].last;
	for (int s = 0; s < 2; s++) {
		uint32_t k = n[x].kid[s];

		if (k != NIL &&
		    cmp2(n[k].max_file, n[k].max_last, n[x].max_file, n[x].max_last) > 0) {
			n[x].max_file = n[k].max_file;
			n[x].max_last = n[k].max_last;
		}
	}
}

/* Splits @x into the keys below @key's (*l) and the rest (*r). */
static void split(struct hy_classify_node *n, uint32_t x, uint32_t key, uint32_t *l, uint32_t *r)
{
	if (x == NIL) {
		*l = *r = NIL;
		return;
	}
	if (key_cmp(n, x, key) < 0) {
		split(n, n[x].kid[1], key, &n[x].kid[1], r);
		*l = x;
	} else {
		split(n, n[x].kid[0], key, l, &n[x].kid[0]);
		*r = x;
	}
	pull(n, x);
}

/* Every key of @a is below every key of @b. */
static uint32_t merge(struct hy_classify_node *n, uint32_t a, uint32_t b)
{
	if (a == NIL)
		return b;
	if (b == NIL)
		return a;
	if (n[a].prio >= n[b].prio) {
		n[a].kid[1] = merge(n, n[a].kid[1], b);
		pull(n, a);
		return a;
	}
	n[b].kid[0] = merge(n, a, n[b].kid[0]);
	pull(n, b);
	return b;
}

/* Inserts @x: down from the root while the nodes outrank it (each gains
 * x's interval below it), then x takes the place reached, with the
 * subtree there split around it. */
static uint32_t tree_insert(struct hy_classify_node *n, uint32_t root, uint32_t x)
{
	uint32_t *link = &root;

	while (*link != NIL && n[*link].prio >= n[x].prio) {
		uint32_t y = *link;

		if (cmp2(n[x].file_id, n[x].last, n[y].max_file, n[y].max_last) > 0) {
			n[y].max_file = n[x].file_id;
			n[y].max_last = n[x].last;
		}
		link = &n[y].kid[key_cmp(n, x, y) > 0];
	}
	split(n, *link, x, &n[x].kid[0], &n[x].kid[1]);
	pull(n, x);
	*link = x;
	return root;
}

/* Removes @x, which is in the tree at @root. */
static uint32_t tree_erase(struct hy_classify_node *n, uint32_t root, uint32_t x)
{
	int side;

	if (root == x)
		return merge(n, n[x].kid[0], n[x].kid[1]);
	side = key_cmp(n, x, root) > 0;
	n[root].kid[side] = tree_erase(n, n[root].kid[side], x);
	pull(n, root);
	return root;
}

/* The latest ending slot of @file_id among those that start at or before
 * byte @hi: its last byte in *@last, false when there is none. One walk
 * down: a node whose key is at most (file_id, hi) qualifies with its whole
 * left subtree (whose largest (file, last) the node keeps), and the walk
 * goes right; otherwise left. In the lexicographic order of (file_id,
 * byte) a larger file's slots all come after, a smaller file's maximum
 * is below any of @file_id's, so the file is tested once, at the end. */
static bool tree_latest(const struct hy_classify_dir *d, uint64_t file_id, uint64_t hi,
			uint64_t *last)
{
	const struct hy_classify_node *n = d->nodes;
	uint64_t best_file = 0, best_last = 0;
	bool any = false;
	uint32_t x = d->root;

	while (x != NIL) {
		if (cmp2(n[x].file_id, n[x].first, file_id, hi) <= 0) {
			uint32_t l = n[x].kid[0];
			uint64_t f = n[x].file_id, b = n[x].last;

			if (l != NIL && cmp2(n[l].max_file, n[l].max_last, f, b) > 0) {
				f = n[l].max_file;
				b = n[l].max_last;
			}
			if (!any || cmp2(f, b, best_file, best_last) > 0) {
				best_file = f;
				best_last = b;
				any = true;
			}
			x = n[x].kid[1];
		} else {
			x = n[x].kid[0];
		}
	}
	*last = best_last;
	return any && best_file == file_id;
}

static inline uint32_t bucket_of(const struct hy_classify_dir *d, uint64_t file_id, uint64_t end)
{
	uint64_t k = (file_id * UINT64_C(0x9e3779b97f4a7c15)) ^ end;

	k ^= k >> 29;
	k *= UINT64_C(0xbf58476d1ce4e5b9);
	k ^= k >> 32;
	return (uint32_t)k & d->mask;
}

static bool hash_has(const struct hy_classify_dir *d, uint64_t file_id, uint64_t end)
{
	const struct hy_classify_node *n = d->nodes;

	for (uint32_t x = d->buckets[bucket_of(d, file_id, end)]; x != NIL; x = n[x].hnext)
		if (n[x].file_id == file_id && n[x].end == end)
			return true;
	return false;
}

static void hash_insert(struct hy_classify_dir *d, uint32_t x)
{
	struct hy_classify_node *n = d->nodes;
	uint32_t *b = &d->buckets[bucket_of(d, n[x].file_id, n[x].end)];

	n[x].hprev = NIL;
	n[x].hnext = *b;
	if (*b != NIL)
		n[*b].hprev = x;
	*b = x;
}

static void hash_unlink(struct hy_classify_dir *d, uint32_t x)
{
	struct hy_classify_node *n = d->nodes;

	if (n[x].hprev == NIL)
		d->buckets[bucket_of(d, n[x].file_id, n[x].end)] = n[x].hnext;
	else
		n[n[x].hprev].hnext = n[x].hnext;
	if (n[x].hnext != NIL)
		n[n[x].hnext].hprev = n[x].hprev;
}

static uint32_t next_prio(struct hy_classify_history *h)
{
	uint32_t x = h->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	h->rng = x;
	return x;
}

void hy_classify_config_init(struct hy_classify_config *cfg)
{
	cfg->depth = HY_CLASSIFY_DEFAULT_DEPTH;
	cfg->stride_gap = HY_CLASSIFY_DEFAULT_GAP;
}

int hy_classify_init(struct hy_classify_history *h, const struct hy_classify_config *cfg)
{
	struct hy_classify_config def;
	uint32_t nb = 1;

	memset(h, 0, sizeof(*h));
	if (!cfg) {
		hy_classify_config_init(&def);
		cfg = &def;
	}
	if (cfg->depth < HY_CLASSIFY_MIN_DEPTH || cfg->depth > HY_CLASSIFY_MAX_DEPTH)
		return -EINVAL;
	while (nb < 2 * cfg->depth) /* load at most 1/2 */
		nb <<= 1;
	for (int i = 0; i < 2; i++) {
		struct hy_classify_dir *d = &h->dir[i];

		d->nodes = calloc(cfg->depth, sizeof(*d->nodes));
		d->buckets = malloc(nb * sizeof(*d->buckets));
		if (!d->nodes || !d->buckets) {
			hy_classify_free(h);
			return -ENOMEM;
		}
		memset(d->buckets, 0xff, nb * sizeof(*d->buckets)); /* NIL */
		d->mask = nb - 1;
		d->root = NIL;
	}
	h->depth = cfg->depth;
	h->stride_gap = cfg->stride_gap;
	h->rng = 0x9e3779b9u; /* any nonzero seed: the shape only affects speed */
	return 0;
}

void hy_classify_free(struct hy_classify_history *h)
{
	if (!h)
		return;
	for (int i = 0; i < 2; i++) {
		free(h->dir[i].nodes);
		free(h->dir[i].buckets);
	}
	memset(h, 0, sizeof(*h));
}

enum hy_request_class hy_classify(struct hy_classify_history *h, uint64_t file_id, uint64_t offset,
				  uint32_t length, bool write)
{
	struct hy_classify_dir *d = &h->dir[write ? 1 : 0];
	struct hy_classify_node *n = d->nodes;
	uint64_t span = length ? length - 1 : 0; /* zero length: as one byte */
	uint64_t last = offset > UINT64_MAX - span ? UINT64_MAX : offset + span;
	uint64_t end = last == UINT64_MAX ? UINT64_MAX : last + 1;
	uint64_t gap = h->stride_gap;
	enum hy_request_class cls = HY_CLASS_RANDOM;
	uint64_t latest;
	uint32_t x;

	if (hash_has(d, file_id, offset)) {
		cls = HY_CLASS_SEQUENTIAL;
	} else if (tree_latest(d, file_id, last | PAGE_MASK, &latest)) {
		if (latest >= (offset & ~PAGE_MASK))
			cls = HY_CLASS_OVERLAPPED;
		else if (gap && offset && latest >= (offset > gap ? offset - gap - 1 : 0))
			cls = HY_CLASS_STRIDED;
	}

	x = d->head;
	if (d->count == h->depth) {
		d->root = tree_erase(n, d->root, x);
		hash_unlink(d, x);
	} else {
		d->count++;
	}
	d->head = x + 1 == h->depth ? 0 : x + 1;
	n[x].file_id = file_id;
	n[x].first = offset;
	n[x].last = last;
	n[x].end = end;
	n[x].prio = next_prio(h);
	d->root = tree_insert(n, d->root, x);
	hash_insert(d, x);
	return cls;
}

const char *hy_classify_name(enum hy_request_class cls)
{
	switch (cls) {
	case HY_CLASS_SEQUENTIAL:
		return "sequential";
	case HY_CLASS_STRIDED:
		return "strided";
	case HY_CLASS_OVERLAPPED:
		return "overlapped";
	case HY_CLASS_RANDOM:
		return "random";
	}
	return "unknown";
}
