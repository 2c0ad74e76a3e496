/* file_table.c - see include/hybridfs/file_table.h.
 *
 * Layout: a power-of-two number of stripes, each a small chained hash
 * table of entries under its own mutex; a file's stripe is the low bits of
 * hy_keymap_mix(id), its bucket the bits above them. A stripe's buckets double
 * when it holds as many files as buckets.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "hybridfs/file_table.h"
#include "hybridfs/keymap.h"

struct stripe {
	pthread_mutex_t lock;
	struct hy_file_table_entry **buckets; /* under lock */
	size_t nbuckets, count;		      /* under lock */
};

struct hy_file_table {
	const struct hy_file_table_ops *ops;
	void *arg;
	size_t mask;	/* stripes - 1 */
	unsigned shift; /* log2(stripes) */
	size_t bytes;	/* atomic */
	struct stripe stripes[];
};

int hy_file_table_new(size_t stripes, const struct hy_file_table_ops *ops, void *arg,
		      struct hy_file_table **out)
{
	struct hy_file_table *t;
	size_t i, size;

	*out = NULL;
	if (stripes == 0 || (stripes & (stripes - 1)) || stripes > 65536)
		return -EINVAL;
	size = sizeof(*t) + stripes * sizeof(t->stripes[0]);
	t = calloc(1, size);
	if (!t)
		return -ENOMEM;
	t->ops = ops;
	t->arg = arg;
	t->mask = stripes - 1;
	while ((size_t)1 << t->shift < stripes)
		t->shift++;
	t->bytes = size;
	for (i = 0; i < stripes; i++)
		pthread_mutex_init(&t->stripes[i].lock, NULL);
	*out = t;
	return 0;
}

void hy_file_table_free(struct hy_file_table *t)
{
	size_t i, b;

	if (!t)
		return;
	for (i = 0; i <= t->mask; i++) {
		struct stripe *s = &t->stripes[i];

		for (b = 0; b < s->nbuckets; b++) {
			struct hy_file_table_entry *e = s->buckets[b], *next;

			for (; e; e = next) {
				next = e->next;
				t->ops->destroy(t->arg, e);
			}
		}
		free(s->buckets);
		pthread_mutex_destroy(&s->lock);
	}
	free(t);
}

static struct stripe *stripe_of(struct hy_file_table *t, uint64_t file_id, uint64_t *h)
{
	*h = hy_keymap_mix(file_id);
	return &t->stripes[*h & t->mask];
}

static size_t bucket_of(const struct hy_file_table *t, const struct stripe *s, uint64_t h)
{
	return (size_t)((h >> t->shift) & (s->nbuckets - 1));
}

/* Doubles a stripe's buckets; a failure only makes chains longer. */
static void stripe_grow(struct hy_file_table *t, struct stripe *s)
{
	size_t nb = s->nbuckets ? s->nbuckets * 2 : 16, b, old = s->nbuckets;
	struct hy_file_table_entry **nbk = calloc(nb, sizeof(*nbk)), **obk = s->buckets;

	if (!nbk)
		return;
	s->buckets = nbk;
	s->nbuckets = nb;
	for (b = 0; b < old; b++) {
		struct hy_file_table_entry *e = obk[b], *next;

		for (; e; e = next) {
			size_t nbi = bucket_of(t, s, hy_keymap_mix(e->file_id));

			next = e->next;
			e->next = nbk[nbi];
			nbk[nbi] = e;
		}
	}
	free(obk);
	__atomic_sub_fetch(&t->bytes, old * sizeof(*nbk), __ATOMIC_RELAXED);
	__atomic_add_fetch(&t->bytes, nb * sizeof(*nbk), __ATOMIC_RELAXED);
}

struct hy_file_table_entry *hy_file_table_get(struct hy_file_table *t, uint64_t file_id,
					      bool create, int *err)
{
	uint64_t h;
	struct stripe *s = stripe_of(t, file_id, &h);
	struct hy_file_table_entry *e = NULL;

	*err = 0;
	pthread_mutex_lock(&s->lock);
	if (s->nbuckets) {
		for (e = s->buckets[bucket_of(t, s, h)]; e; e = e->next)
			if (e->file_id == file_id)
				break;
	}
	if (!e && create) {
		if (s->count + 1 > s->nbuckets)
			stripe_grow(t, s);
		e = s->nbuckets ? t->ops->alloc(t->arg, file_id) : NULL;
		if (e) {
			size_t b = bucket_of(t, s, h);

			e->file_id = file_id;
			e->refs = 0;
			e->next = s->buckets[b];
			s->buckets[b] = e;
			s->count++;
		} else {
			*err = -ENOMEM;
		}
	}
	if (e)
		__atomic_add_fetch(&e->refs, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&s->lock);
	return e;
}

/* A count above one is decremented without the stripe's mutex; the last
 * reference is dropped under it, and references are only taken under it,
 * so nobody can find the file while it is freed. Whoever changed what
 * empty() reads (under their own per-file lock) did so before dropping
 * their reference (an atomic read-modify-write that the last drop reads
 * from), so empty() reads it safely here without the per-file lock. */
void hy_file_table_put(struct hy_file_table *t, struct hy_file_table_entry *e)
{
	unsigned long r = __atomic_load_n(&e->refs, __ATOMIC_SEQ_CST);
	struct stripe *s;
	uint64_t h;

	while (r > 1) {
		if (__atomic_compare_exchange_n(&e->refs, &r, r - 1, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return;
	}
	s = stripe_of(t, e->file_id, &h);
	pthread_mutex_lock(&s->lock);
	if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_SEQ_CST) == 0 && t->ops->empty(e)) {
		struct hy_file_table_entry **pp = &s->buckets[bucket_of(t, s, h)];

		while (*pp != e)
			pp = &(*pp)->next;
		*pp = e->next;
		s->count--;
		t->ops->destroy(t->arg, e);
	}
	pthread_mutex_unlock(&s->lock);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct hy_file_table_entry *ea = *(struct hy_file_table_entry *const *)a;
	const struct hy_file_table_entry *eb = *(struct hy_file_table_entry *const *)b;

	return ea->file_id < eb->file_id ? -1 : ea->file_id > eb->file_id;
}

void hy_file_table_release_snapshot(struct hy_file_table *t, struct hy_file_table_entry **entries,
				    size_t count)
{
	size_t i;

	for (i = 0; i < count; i++)
		hy_file_table_put(t, entries[i]);
	free(entries);
}

/* Grows *@arr to hold at least @need entries. */
static int reserve(struct hy_file_table_entry ***arr, size_t *cap, size_t need)
{
	struct hy_file_table_entry **p;
	size_t ncap;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 4;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / sizeof(*p))
			return -ENOMEM;
		ncap *= 2;
	}
	p = realloc(*arr, ncap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int hy_file_table_snapshot(struct hy_file_table *t, struct hy_file_table_entry ***entries,
			   size_t *count)
{
	struct hy_file_table_entry **all = NULL;
	size_t n = 0, cap = 0, i, b;

	*entries = NULL;
	*count = 0;
	for (i = 0; i <= t->mask; i++) {
		struct stripe *s = &t->stripes[i];

		pthread_mutex_lock(&s->lock);
		if (reserve(&all, &cap, n + s->count)) {
			pthread_mutex_unlock(&s->lock);
			hy_file_table_release_snapshot(t, all, n);
			return -ENOMEM;
		}
		for (b = 0; b < s->nbuckets; b++) {
			struct hy_file_table_entry *e;

			for (e = s->buckets[b]; e; e = e->next) {
				__atomic_add_fetch(&e->refs, 1, __ATOMIC_SEQ_CST);
				all[n++] = e;
			}
		}
		pthread_mutex_unlock(&s->lock);
	}
	if (n > 1)
		qsort(all, n, sizeof(*all), cmp_entry);
	*entries = all;
	*count = n;
	return 0;
}

size_t hy_file_table_count(struct hy_file_table *t)
{
	size_t i, n = 0;

	for (i = 0; i <= t->mask; i++) {
		pthread_mutex_lock(&t->stripes[i].lock);
		n += t->stripes[i].count;
		pthread_mutex_unlock(&t->stripes[i].lock);
	}
	return n;
}

size_t hy_file_table_bytes(struct hy_file_table *t)
{
	return __atomic_load_n(&t->bytes, __ATOMIC_RELAXED);
}
