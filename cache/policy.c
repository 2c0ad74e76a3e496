/* policy.c - replacement policies of the SSD store; see include/hybridfs/policy.h.
 *
 * Every list here is an intrusive doubly linked list over arrays of uint32
 * indexes (prev[x], next[x]; HY_POLICY_NONE ends a list), with head = LRU
 * end and tail = MRU end. The lines' lists use p->prev/p->next; LARC's
 * ghost queue uses its own arrays over ghost slots.
 *
 * LRU3's ageing without a per-line flag: in warm and hot the lines not
 * touched since the last age call ("idle") are always a prefix from the LRU
 * end, and mark[q] is the last of them (NONE: none idle). Between two age
 * calls a line enters warm or hot only by a touch, at the MRU end, after
 * the mark; a line that leaves (touched, removed, or taken by a victim
 * refill from the LRU end) and was the mark hands the mark to its LRU-side
 * neighbour, which is idle, or NONE. So age walks only the lines it
 * demotes. Cold needs no mark: nothing is demoted out of it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/log.h"
#include "hybridfs/policy.h"
#include "hybridfs/keymap.h"

#define NONE HY_POLICY_NONE
#define FREE 0 /* where(x) for a free line; else queue + 1 */
/* A line's prev link holds its queue in the top two bits (FREE or queue +
 * 1) and the index in the low 30, where LINK_NONE ends a list: 8 bytes a
 * line, not 9, for the queue kinds (FREQ leaves the bits 0). */
#define LINK_BITS 30
#define LINK_MASK ((1u << LINK_BITS) - 1)
#define LINK_NONE LINK_MASK

struct queue {
	uint32_t head; /* LRU end */
	uint32_t tail; /* MRU end */
	uint32_t len;
};

struct hy_policy {
	enum hy_policy_kind kind;
	uint32_t capacity;
	uint32_t window;
	uint32_t in_use;

	uint32_t *prev, *next; /* per line; prev packed with the queue (LINK_*) */
	uint16_t *count;       /* per line, FREQ: accesses, 0 for a free line */
	struct queue q[HY_POLICY_QUEUES];
	uint32_t mark[HY_POLICY_QUEUES]; /* LRU3: last idle line of warm, hot */

	uint32_t *group_tail; /* FREQ: [count] -> last line with that count */

	/* LARC */
	double cr, cr_min, cr_max; /* Cr and its bounds 0.1 C, 0.9 C */
	uint32_t ghost_cap;	   /* ghost slots: floor(0.9 C) + 1 */
	uint64_t *gkey;
	uint32_t *gprev, *gnext; /* free slots are chained through gnext */
	struct queue ghost;
	uint32_t gfree;
	uint32_t *slot; /* open addressing, linear probing: ghost slot or NONE */
	size_t slot_mask;

	size_t bytes;
	struct hy_policy_stats st; /* the counters; the rest is filled on demand */
};

static const char *const kind_names[HY_POLICY_KINDS] = {
	[HY_POLICY_LRU3] = "lru3",
	[HY_POLICY_LRU] = "lru",
	[HY_POLICY_LARC] = "larc",
	[HY_POLICY_FREQ] = "freq",
};

/* ---- lists over index arrays ---- */

static void q_unlink(uint32_t *prev, uint32_t *next, struct queue *q, uint32_t x)
{
	uint32_t a = prev[x], b = next[x];

	if (a != NONE)
		next[a] = b;
	else
		q->head = b;
	if (b != NONE)
		prev[b] = a;
	else
		q->tail = a;
	prev[x] = NONE;
	next[x] = NONE;
	q->len--;
}

/* Puts @x right after @at (NONE: at the head). */
static void q_insert_after(uint32_t *prev, uint32_t *next, struct queue *q, uint32_t at, uint32_t x)
{
	uint32_t b = at == NONE ? q->head : next[at];

	prev[x] = at;
	next[x] = b;
	if (at != NONE)
		next[at] = x;
	else
		q->head = x;
	if (b != NONE)
		prev[b] = x;
	else
		q->tail = x;
	q->len++;
}

static void q_init(struct queue *q)
{
	q->head = NONE;
	q->tail = NONE;
	q->len = 0;
}

/* ---- the lines' packed links ---- */

static uint32_t lprev(const struct hy_policy *p, uint32_t x)
{
	uint32_t v = p->prev[x] & LINK_MASK;

	return v == LINK_NONE ? NONE : v;
}

static void set_lprev(struct hy_policy *p, uint32_t x, uint32_t v)
{
	p->prev[x] = (p->prev[x] & ~LINK_MASK) | (v == NONE ? LINK_NONE : v);
}

static unsigned where(const struct hy_policy *p, uint32_t x)
{
	return p->prev[x] >> LINK_BITS;
}

static void set_where(struct hy_policy *p, uint32_t x, unsigned w)
{
	p->prev[x] = (p->prev[x] & LINK_MASK) | ((uint32_t)w << LINK_BITS);
}

/* q_unlink and q_insert_after over the lines' packed links */
static void l_unlink(struct hy_policy *p, struct queue *q, uint32_t x)
{
	uint32_t a = lprev(p, x), b = p->next[x];

	if (a != NONE)
		p->next[a] = b;
	else
		q->head = b;
	if (b != NONE)
		set_lprev(p, b, a);
	else
		q->tail = a;
	set_lprev(p, x, NONE);
	p->next[x] = NONE;
	q->len--;
}

static void l_insert_after(struct hy_policy *p, struct queue *q, uint32_t at, uint32_t x)
{
	uint32_t b = at == NONE ? q->head : p->next[at];

	set_lprev(p, x, at);
	p->next[x] = b;
	if (at != NONE)
		p->next[at] = x;
	else
		q->head = x;
	if (b != NONE)
		set_lprev(p, b, x);
	else
		q->tail = x;
	q->len++;
}

/* ---- lines of the queue kinds (LRU, LRU3, LARC) ---- */

static void line_unlink(struct hy_policy *p, uint32_t x)
{
	unsigned q = where(p, x) - 1u;

	if (p->mark[q] == x)
		p->mark[q] = lprev(p, x);
	l_unlink(p, &p->q[q], x);
	set_where(p, x, FREE);
}

static void line_push(struct hy_policy *p, uint32_t x, unsigned q)
{
	l_insert_after(p, &p->q[q], p->q[q].tail, x);
	set_where(p, x, q + 1);
}

static bool line_in_use(const struct hy_policy *p, uint32_t x)
{
	if (p->kind == HY_POLICY_FREQ)
		return p->count[x] != 0;
	return where(p, x) != FREE;
}

/* ---- FREQ: one list sorted by (count, recency); group_tail[c] ---- */

/* The line before @x if it has the same count, else NONE. */
static uint32_t freq_same_before(const struct hy_policy *p, uint32_t x)
{
	uint32_t a = lprev(p, x);

	return a != NONE && p->count[a] == p->count[x] ? a : NONE;
}

/* Takes @x out of its count's group (the group's tail steps back). */
static void freq_leave_group(struct hy_policy *p, uint32_t x)
{
	uint16_t c = p->count[x];

	if (p->group_tail[c] == x)
		p->group_tail[c] = freq_same_before(p, x);
}

static void freq_insert(struct hy_policy *p, uint32_t x)
{
	/* 1 is the lowest count: without a group 1, x goes first. */
	l_insert_after(p, &p->q[HY_POLICY_COLD], p->group_tail[1], x);
	p->group_tail[1] = x;
	p->count[x] = 1;
}

static void freq_hit(struct hy_policy *p, uint32_t x)
{
	struct queue *q = &p->q[HY_POLICY_COLD];
	uint16_t c = p->count[x];
	uint16_t nc = c == HY_POLICY_FREQ_MAX ? c : (uint16_t)(c + 1);
	uint32_t at;

	if (p->group_tail[nc] != NONE && p->group_tail[nc] != x) {
		/* Join group nc at its MRU end (for a saturated line, nc == c). */
		freq_leave_group(p, x);
		at = p->group_tail[nc];
		l_unlink(p, q, x);
		l_insert_after(p, q, at, x);
	} else if (p->group_tail[nc] != x) {
		/* No group nc yet: x starts it right after group c. */
		if (p->group_tail[c] == x) {
			p->group_tail[c] = freq_same_before(p, x); /* x stays put */
		} else {
			at = p->group_tail[c];
			l_unlink(p, q, x);
			l_insert_after(p, q, at, x);
		}
	}
	/* else: saturated and already the MRU of its group */
	p->group_tail[nc] = x;
	p->count[x] = nc;
}

static void freq_remove(struct hy_policy *p, uint32_t x)
{
	freq_leave_group(p, x);
	l_unlink(p, &p->q[HY_POLICY_COLD], x);
	p->count[x] = 0;
}

/* Halves every count (never below 1). Halving keeps the order sorted, so
 * only the group tails change: clear the old ones, then walking in order
 * the last line seen with a count is that count's tail. */
static void freq_age(struct hy_policy *p)
{
	uint32_t x;

	for (x = p->q[HY_POLICY_COLD].head; x != NONE; x = p->next[x])
		p->group_tail[p->count[x]] = NONE;
	for (x = p->q[HY_POLICY_COLD].head; x != NONE; x = p->next[x]) {
		uint16_t c = p->count[x] / 2;

		p->count[x] = c ? c : 1;
		p->group_tail[p->count[x]] = x;
	}
}

/* ---- LRU3 ageing and refill ---- */

/* Moves the idle prefix of @from to the MRU end of @to, in LRU order. */
static void lru3_demote_idle(struct hy_policy *p, unsigned from, unsigned to)
{
	while (p->mark[from] != NONE) {
		uint32_t x = p->q[from].head;

		line_unlink(p, x); /* the mark steps back, to NONE at the last one */
		line_push(p, x, to);
		p->st.demotions++;
	}
}

static void lru3_age(struct hy_policy *p)
{
	/* Lines demoted from hot land after warm's mark, so they are not
	 * demoted twice whichever queue goes first. */
	lru3_demote_idle(p, HY_POLICY_WARM, HY_POLICY_COLD);
	lru3_demote_idle(p, HY_POLICY_HOT, HY_POLICY_WARM);
	p->mark[HY_POLICY_WARM] = p->q[HY_POLICY_WARM].tail; /* all idle from now */
	p->mark[HY_POLICY_HOT] = p->q[HY_POLICY_HOT].tail;
}

/* Cold is empty: demote up to window lines into it from the LRU end of
 * warm, or of hot when warm is empty too. */
static void lru3_refill(struct hy_policy *p)
{
	unsigned from = p->q[HY_POLICY_WARM].len ? HY_POLICY_WARM : HY_POLICY_HOT;

	for (uint32_t n = 0; n < p->window && p->q[from].head != NONE; n++) {
		uint32_t x = p->q[from].head;

		line_unlink(p, x);
		line_push(p, x, HY_POLICY_COLD);
		p->st.demotions++;
	}
}

/* ---- LARC's ghost queue and its hash ---- */

static size_t home_slot(const struct hy_policy *p, uint64_t key)
{
	return (size_t)hy_keymap_mix(key) & p->slot_mask;
}

/* The slot holding @key, or the empty slot where its probe ends. The table
 * is at most half full, so an empty slot always exists. */
static size_t ghost_slot(const struct hy_policy *p, uint64_t key)
{
	size_t i = home_slot(p, key);

	while (p->slot[i] != NONE && p->gkey[p->slot[i]] != key)
		i = (i + 1) & p->slot_mask;
	return i;
}

/* Empties slot @i, shifting later entries of its cluster back (no
 * tombstones). */
static void slot_delete(struct hy_policy *p, size_t i)
{
	size_t j = i;

	for (;;) {
		size_t k;

		j = (j + 1) & p->slot_mask;
		if (p->slot[j] == NONE)
			break;
		k = home_slot(p, p->gkey[p->slot[j]]);
		/* The entry at j may fill i if i is not before its home. */
		if (((j - k) & p->slot_mask) >= ((j - i) & p->slot_mask)) {
			p->slot[i] = p->slot[j];
			i = j;
		}
	}
	p->slot[i] = NONE;
}

static void ghost_drop(struct hy_policy *p, uint32_t g)
{
	slot_delete(p, ghost_slot(p, p->gkey[g]));
	q_unlink(p->gprev, p->gnext, &p->ghost, g);
	p->gnext[g] = p->gfree;
	p->gfree = g;
}

static void ghost_push(struct hy_policy *p, uint64_t key, size_t i)
{
	uint32_t g = p->gfree;

	p->gfree = p->gnext[g];
	p->gkey[g] = key;
	q_insert_after(p->gprev, p->gnext, &p->ghost, p->ghost.tail, g);
	p->slot[i] = g;
}

/* ---- the API ---- */

void hy_policy_config_init(struct hy_policy_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->window = HY_POLICY_DEFAULT_WINDOW;
}

const char *hy_policy_kind_name(enum hy_policy_kind kind)
{
	if ((unsigned)kind >= HY_POLICY_KINDS)
		return NULL;
	return kind_names[kind];
}

int hy_policy_kind_parse(const char *name, enum hy_policy_kind *out, char *why, size_t why_size)
{
	for (unsigned k = 0; k < HY_POLICY_KINDS; k++) {
		if (name && strcmp(name, kind_names[k]) == 0) {
			*out = (enum hy_policy_kind)k;
			return 0;
		}
	}
	return hy_log_why(-EINVAL, why, why_size,
			  "policy: \"%s\" is not a replacement policy (lru3, lru, larc, freq)",
			  name ? name : "");
}

/* calloc that counts what it gave */
static void *alloc(struct hy_policy *p, size_t n, size_t size)
{
	void *m = calloc(n, size);

	if (m)
		p->bytes += n * size;
	return m;
}

static int new_larc(struct hy_policy *p)
{
	size_t slots = 1;

	p->cr_min = 0.1 * p->capacity;
	p->cr_max = 0.9 * p->capacity;
	p->cr = p->cr_min;
	/* |Qr| <= Cr <= 0.9 C after every miss, plus the one being pushed. */
	p->ghost_cap = (uint32_t)p->cr_max + 1;
	while (slots < 2 * (size_t)p->ghost_cap)
		slots *= 2;
	p->slot_mask = slots - 1;
	p->gkey = alloc(p, p->ghost_cap, sizeof(*p->gkey));
	p->gprev = alloc(p, p->ghost_cap, sizeof(*p->gprev));
	p->gnext = alloc(p, p->ghost_cap, sizeof(*p->gnext));
	p->slot = alloc(p, slots, sizeof(*p->slot));
	if (!p->gkey || !p->gprev || !p->gnext || !p->slot)
		return -ENOMEM;
	memset(p->slot, 0xff, slots * sizeof(*p->slot));
	q_init(&p->ghost);
	for (uint32_t g = 0; g < p->ghost_cap; g++) {
		p->gprev[g] = NONE;
		p->gnext[g] = g + 1 < p->ghost_cap ? g + 1 : NONE;
	}
	p->gfree = 0;
	return 0;
}

int hy_policy_new(enum hy_policy_kind kind, uint32_t capacity, const struct hy_policy_config *cfg,
		  struct hy_policy **out, char *why, size_t why_size)
{
	struct hy_policy_config defaults;
	struct hy_policy *p;

	*out = NULL;
	if (!cfg) {
		hy_policy_config_init(&defaults);
		cfg = &defaults;
	}
	if ((unsigned)kind >= HY_POLICY_KINDS)
		return hy_log_why(-EINVAL, why, why_size,
				  "policy: kind %d is not one of lru3, lru, larc, freq", (int)kind);
	if (capacity == 0)
		return hy_log_why(-EINVAL, why, why_size,
				  "policy: capacity 0: a cache needs at least one line");
	if (capacity > HY_POLICY_MAX_LINES)
		return hy_log_why(-EINVAL, why, why_size,
				  "policy: capacity %u is over the limit of %u lines", capacity,
				  HY_POLICY_MAX_LINES);
	if (kind == HY_POLICY_LARC && capacity < 2)
		return hy_log_why(
			-EINVAL, why, why_size,
			"policy: larc needs at least 2 lines (its ghost queue holds 0.9 x %u keys)",
			capacity);
	if (cfg->window < 1 || cfg->window > HY_POLICY_MAX_WINDOW)
		return hy_log_why(-EINVAL, why, why_size, "policy: window %u is out of range 1..%u",
				  cfg->window, HY_POLICY_MAX_WINDOW);

	p = calloc(1, sizeof(*p));
	if (!p)
		goto nomem;
	p->bytes = sizeof(*p);
	p->kind = kind;
	p->capacity = capacity;
	p->window = cfg->window;
	for (unsigned q = 0; q < HY_POLICY_QUEUES; q++) {
		q_init(&p->q[q]);
		p->mark[q] = NONE;
	}
	p->prev = alloc(p, capacity, sizeof(*p->prev));
	p->next = alloc(p, capacity, sizeof(*p->next));
	if (!p->prev || !p->next)
		goto nomem;
	for (uint32_t x = 0; x < capacity; x++)
		p->prev[x] = LINK_NONE; /* free, unlinked */
	memset(p->next, 0xff, (size_t)capacity * sizeof(*p->next));
	if (kind == HY_POLICY_FREQ) {
		p->count = alloc(p, capacity, sizeof(*p->count));
		p->group_tail = alloc(p, (size_t)HY_POLICY_FREQ_MAX + 1, sizeof(*p->group_tail));
		if (!p->count || !p->group_tail)
			goto nomem;
		memset(p->group_tail, 0xff,
		       ((size_t)HY_POLICY_FREQ_MAX + 1) * sizeof(*p->group_tail));
	}
	if (kind == HY_POLICY_LARC && new_larc(p) != 0)
		goto nomem;
	*out = p;
	return 0;

nomem:
	hy_policy_free(p);
	return hy_log_why(-ENOMEM, why, why_size, "policy: out of memory for %u lines of %s",
			  capacity, kind_names[kind]);
}

void hy_policy_free(struct hy_policy *p)
{
	if (!p)
		return;
	free(p->slot);
	free(p->gnext);
	free(p->gprev);
	free(p->gkey);
	free(p->group_tail);
	free(p->count);
	free(p->next);
	free(p->prev);
	free(p);
}

int hy_policy_insert_at(struct hy_policy *p, uint32_t line, enum hy_policy_queue q)
{
	if (line >= p->capacity)
		return -ERANGE;
	if ((unsigned)q >= HY_POLICY_QUEUES)
		return -EINVAL;
	if (line_in_use(p, line))
		return -EEXIST;
	if (p->kind == HY_POLICY_FREQ)
		freq_insert(p, line);
	else
		line_push(p, line, p->kind == HY_POLICY_LRU3 ? (unsigned)q : HY_POLICY_COLD);
	p->in_use++;
	p->st.inserts++;
	return 0;
}

int hy_policy_insert(struct hy_policy *p, uint32_t line)
{
	return hy_policy_insert_at(p, line, HY_POLICY_COLD);
}

int hy_policy_hit(struct hy_policy *p, uint32_t line)
{
	unsigned q, nq;

	if (line >= p->capacity)
		return -ERANGE;
	if (!line_in_use(p, line))
		return -ENOENT;
	p->st.hits++;
	switch (p->kind) {
	case HY_POLICY_FREQ:
		freq_hit(p, line);
		return 0;
	case HY_POLICY_LARC: {
		double d = p->capacity / (p->capacity - p->cr);

		p->cr = p->cr - d > p->cr_min ? p->cr - d : p->cr_min;
		break;
	}
	default:
		break;
	}
	q = where(p, line) - 1u;
	nq = p->kind == HY_POLICY_LRU3 && q < HY_POLICY_HOT ? q + 1 : q;
	if (nq != q)
		p->st.promotions++;
	line_unlink(p, line);
	line_push(p, line, nq);
	return 0;
}

int hy_policy_remove(struct hy_policy *p, uint32_t line)
{
	if (line >= p->capacity)
		return -ERANGE;
	if (!line_in_use(p, line))
		return -ENOENT;
	if (p->kind == HY_POLICY_FREQ)
		freq_remove(p, line);
	else
		line_unlink(p, line);
	p->in_use--;
	p->st.removes++;
	return 0;
}

int hy_policy_victim(struct hy_policy *p, hy_policy_pred first_choice, hy_policy_pred evictable,
		     void *arg, uint32_t *line)
{
	uint32_t x, fallback = NONE, n;

	if (p->in_use == 0)
		return -ENOENT;
	if (p->kind == HY_POLICY_LRU3 && p->q[HY_POLICY_COLD].len == 0)
		lru3_refill(p);
	for (n = 0, x = p->q[HY_POLICY_COLD].head; n < p->window && x != NONE;
	     n++, x = p->next[x]) {
		if (evictable && !evictable(x, arg)) {
			p->st.skipped++;
			continue;
		}
		if (!first_choice) {
			fallback = x; /* one step only: the LRU evictable line */
			break;
		}
		if (first_choice(x, arg)) {
			p->st.victims_first++;
			*line = x;
			return 0;
		}
		if (fallback == NONE)
			fallback = x;
	}
	if (fallback == NONE) {
		p->st.victims_again++;
		return -EAGAIN;
	}
	p->st.victims_lru++;
	*line = fallback;
	return 0;
}

void hy_policy_age(struct hy_policy *p)
{
	p->st.ages++;
	if (p->kind == HY_POLICY_LRU3)
		lru3_age(p);
	else if (p->kind == HY_POLICY_FREQ)
		freq_age(p);
}

bool hy_policy_admit(struct hy_policy *p, uint64_t key)
{
	size_t i;
	bool admit;

	if (p->kind != HY_POLICY_LARC) {
		p->st.admitted++;
		return true;
	}
	p->cr = p->cr + p->capacity / p->cr < p->cr_max ? p->cr + p->capacity / p->cr : p->cr_max;
	i = ghost_slot(p, key);
	if (p->slot[i] != NONE) {
		ghost_drop(p, p->slot[i]);
		p->st.ghost_hits++;
		p->st.admitted++;
		admit = true;
	} else {
		ghost_push(p, key, i);
		p->st.refused++;
		admit = false;
	}
	while (p->ghost.len > p->cr)
		ghost_drop(p, p->ghost.head);
	return admit;
}

void hy_policy_get_stats(const struct hy_policy *p, struct hy_policy_stats *out)
{
	*out = p->st;
	out->kind = p->kind;
	out->capacity = p->capacity;
	out->window = p->window;
	out->in_use = p->in_use;
	for (unsigned q = 0; q < HY_POLICY_QUEUES; q++)
		out->queue_len[q] = p->q[q].len;
	out->ghost_len = p->ghost.len;
	out->ghost_size = p->kind == HY_POLICY_LARC ? p->cr : 0;
	out->bytes = p->bytes;
}

int hy_policy_queue_of(const struct hy_policy *p, uint32_t line)
{
	if (line >= p->capacity)
		return -ERANGE;
	if (!line_in_use(p, line))
		return -ENOENT;
	return p->kind == HY_POLICY_FREQ ? HY_POLICY_COLD : (int)where(p, line) - 1;
}

size_t hy_policy_order(const struct hy_policy *p, enum hy_policy_queue q, uint32_t *out, size_t max)
{
	size_t n = 0;

	if ((unsigned)q >= HY_POLICY_QUEUES)
		return 0;
	for (uint32_t x = p->q[q].head; x != NONE; x = p->next[x], n++)
		if (n < max)
			out[n] = x;
	return n;
}

/* ---- the invariant checker ---- */

#define BROKEN(...) hy_log_why(-EUCLEAN, why, why_size, "policy: " __VA_ARGS__)

/* @p given: the lines' packed prev links (@prev is p->prev) */
static int check_list(const struct hy_policy *p, const uint32_t *prev, const uint32_t *next,
		      const struct queue *q, uint32_t limit, const char *name, char *why,
		      size_t why_size)
{
	uint32_t x, before = NONE, n = 0;

	for (x = q->head; x != NONE; before = x, x = next[x]) {
		uint32_t px;

		if (x >= limit)
			return BROKEN("%s holds index %u of %u", name, x, limit);
		px = p ? lprev(p, x) : prev[x];
		if (px != before)
			return BROKEN("%s: prev of %u is %u, not %u", name, x, px, before);
		if (++n > q->len)
			return BROKEN("%s is longer than its length %u (a cycle?)", name, q->len);
	}
	if (n != q->len)
		return BROKEN("%s has %u entries, its length says %u", name, n, q->len);
	if (q->tail != before)
		return BROKEN("%s: tail %u, last entry %u", name, q->tail, before);
	return 0;
}

static int check_queues(const struct hy_policy *p, char *why, size_t why_size)
{
	static const char *const names[HY_POLICY_QUEUES] = {"cold", "warm", "hot"};
	uint32_t total = 0;

	for (unsigned q = 0; q < HY_POLICY_QUEUES; q++) {
		bool seen = p->mark[q] == NONE;
		int err = check_list(p, p->prev, p->next, &p->q[q], p->capacity, names[q], why,
				     why_size);

		if (err)
			return err;
		for (uint32_t x = p->q[q].head; x != NONE; x = p->next[x]) {
			if (where(p, x) != q + 1)
				return BROKEN("line %u is in %s but marked %u", x, names[q],
					      where(p, x));
			seen |= x == p->mark[q];
		}
		if (!seen)
			return BROKEN("the idle mark %u of %s is not in it", p->mark[q], names[q]);
		if (q == HY_POLICY_COLD && p->mark[q] != NONE)
			return BROKEN("cold has an idle mark");
		if (p->kind != HY_POLICY_LRU3 && q != HY_POLICY_COLD && p->q[q].len)
			return BROKEN("%s holds lines under %s", names[q], kind_names[p->kind]);
		total += p->q[q].len;
	}
	for (uint32_t x = 0; x < p->capacity; x++) {
		if (where(p, x) > HY_POLICY_QUEUES)
			return BROKEN("line %u has queue bits %u", x, where(p, x));
		if (where(p, x) == FREE && (lprev(p, x) != NONE || p->next[x] != NONE))
			return BROKEN("free line %u is linked", x);
	}
	if (total != p->in_use)
		return BROKEN("%u lines in the queues, %u in use", total, p->in_use);
	return 0;
}

static int check_freq(const struct hy_policy *p, char *why, size_t why_size)
{
	const struct queue *q = &p->q[HY_POLICY_COLD];
	uint32_t groups = 0, tails = 0;
	int err = check_list(p, p->prev, p->next, q, p->capacity, "freq list", why, why_size);

	if (err)
		return err;
	if (q->len != p->in_use)
		return BROKEN("%u lines in the list, %u in use", q->len, p->in_use);
	for (uint32_t x = q->head; x != NONE; x = p->next[x]) {
		uint32_t y = p->next[x];

		if (p->count[x] == 0)
			return BROKEN("line %u is listed with count 0", x);
		if (y != NONE && p->count[y] < p->count[x])
			return BROKEN("line %u (count %u) before line %u (count %u)", x,
				      p->count[x], y, p->count[y]);
		if (y == NONE || p->count[y] != p->count[x]) {
			groups++;
			if (p->group_tail[p->count[x]] != x)
				return BROKEN("the tail of count %u is %u, not %u", p->count[x],
					      p->group_tail[p->count[x]], x);
		}
	}
	for (size_t c = 0; c <= HY_POLICY_FREQ_MAX; c++)
		tails += p->group_tail[c] != NONE;
	if (tails != groups)
		return BROKEN("%u group tails for %u groups", tails, groups);
	for (uint32_t x = 0; x < p->capacity; x++) {
		if (where(p, x) != FREE)
			return BROKEN("freq line %u has queue bits %u", x, where(p, x));
		if (p->count[x] == 0 && (lprev(p, x) != NONE || p->next[x] != NONE))
			return BROKEN("free line %u is linked", x);
	}
	return 0;
}

static int check_ghost(const struct hy_policy *p, char *why, size_t why_size)
{
	uint32_t used = 0, free_slots = 0;
	int err;

	if (p->cr < p->cr_min || p->cr > p->cr_max)
		return BROKEN("ghost size %g is outside %g..%g", p->cr, p->cr_min, p->cr_max);
	err = check_list(NULL, p->gprev, p->gnext, &p->ghost, p->ghost_cap, "ghost queue", why,
			 why_size);
	if (err)
		return err;
	/* |Qr| <= Cr holds right after a miss; hits may lower Cr below |Qr|
	 * until the next miss trims it. */
	if (p->ghost.len >= p->ghost_cap)
		return BROKEN("ghost queue of %u keys is over 0.9 x capacity", p->ghost.len);
	for (uint32_t g = p->ghost.head; g != NONE; g = p->gnext[g]) {
		size_t i = ghost_slot(p, p->gkey[g]);

		if (p->slot[i] != g)
			return BROKEN("ghost key %llu is not found in the hash",
				      (unsigned long long)p->gkey[g]);
	}
	for (size_t i = 0; i <= p->slot_mask; i++)
		used += p->slot[i] != NONE;
	if (used != p->ghost.len)
		return BROKEN("%u hash slots used for %u ghost keys", used, p->ghost.len);
	for (uint32_t g = p->gfree; g != NONE; g = p->gnext[g])
		if (++free_slots > p->ghost_cap)
			return BROKEN("the ghost free list loops");
	if (free_slots + p->ghost.len != p->ghost_cap)
		return BROKEN("%u free + %u used ghost slots, not %u", free_slots, p->ghost.len,
			      p->ghost_cap);
	return 0;
}

int hy_policy_check(const struct hy_policy *p, char *why, size_t why_size)
{
	int err;

	if (p->kind == HY_POLICY_FREQ)
		return check_freq(p, why, why_size);
	err = check_queues(p, why, why_size);
	if (!err && p->kind == HY_POLICY_LARC)
		err = check_ghost(p, why, why_size);
	return err;
}
