/* replay.c - see include/hybridfs/replay.h.
 *
 * The keys of the cached blocks map to their lines in an open-addressing
 * table (linear probing, deletion by backward shift, so no tombstones pile
 * up over millions of evictions), sized at four times the capacity; the
 * footprint counter is the same table with no values, grown by doubling.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/replay.h"
#include "hybridfs/trace_reader.h"

#define EMPTY UINT64_MAX /* no key is: the device index is below 2^16 */

struct keymap {
	uint64_t *keys;
	uint32_t *values; /* NULL: a set */
	uint64_t mask, count;
};

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	return k ^ (k >> 33);
}

static int keymap_init(struct keymap *m, uint64_t slots, bool with_values)
{
	uint64_t n = 16;

	while (n < slots)
		n <<= 1;
	m->keys = malloc(n * sizeof(*m->keys));
	m->values = with_values ? malloc(n * sizeof(*m->values)) : NULL;
	if (!m->keys || (with_values && !m->values)) {
		free(m->keys);
		free(m->values);
		return -ENOMEM;
	}
	memset(m->keys, 0xff, n * sizeof(*m->keys));
	m->mask = n - 1;
	m->count = 0;
	return 0;
}

static void keymap_free(struct keymap *m)
{
	free(m->keys);
	free(m->values);
}

/* The slot of @key, or of the empty slot where it would go. */
static uint64_t keymap_slot(const struct keymap *m, uint64_t key)
{
	uint64_t i = mix(key) & m->mask;

	while (m->keys[i] != EMPTY && m->keys[i] != key)
		i = (i + 1) & m->mask;
	return i;
}

static int keymap_grow(struct keymap *m)
{
	struct keymap bigger;
	int rc = keymap_init(&bigger, (m->mask + 1) * 2, m->values != NULL);

	if (rc < 0)
		return rc;
	for (uint64_t i = 0; i <= m->mask; i++) {
		uint64_t j;

		if (m->keys[i] == EMPTY)
			continue;
		j = keymap_slot(&bigger, m->keys[i]);
		bigger.keys[j] = m->keys[i];
		if (m->values)
			bigger.values[j] = m->values[i];
	}
	bigger.count = m->count;
	keymap_free(m);
	*m = bigger;
	return 0;
}

/* Adds @key (its value @value): 1 added, 0 there already, -ENOMEM. */
static int keymap_put(struct keymap *m, uint64_t key, uint32_t value)
{
	uint64_t i;

	if ((m->count + 1) * 2 > m->mask + 1) {
		int rc = keymap_grow(m);

		if (rc < 0)
			return rc;
	}
	i = keymap_slot(m, key);
	if (m->keys[i] == key)
		return 0;
	m->keys[i] = key;
	if (m->values)
		m->values[i] = value;
	m->count++;
	return 1;
}

/* Removes the key at slot @i, shifting back the keys that probed past it. */
static void keymap_delete_at(struct keymap *m, uint64_t i)
{
	uint64_t j = i;

	for (;;) {
		uint64_t home;

		j = (j + 1) & m->mask;
		if (m->keys[j] == EMPTY)
			break;
		home = mix(m->keys[j]) & m->mask;
		/* the key at j may move to i when i lies on its probe path,
		 * cyclically between its home and j */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			m->keys[i] = m->keys[j];
			if (m->values)
				m->values[i] = m->values[j];
			i = j;
		}
	}
	m->keys[i] = EMPTY;
	m->count--;
}

/* ---- the replay ---------------------------------------------------------- */

struct hy_replay {
	struct hy_replay_config cfg;
	struct hy_policy *policy;
	struct keymap map;  /* key -> line */
	uint64_t *line_key; /* line -> key (EMPTY: free) */
	uint32_t next_free; /* lines are used in order until the cache is full */
	uint32_t capacity;
	uint64_t since_age;
	struct hy_replay_stats st;
};

int hy_replay_new(const struct hy_replay_config *cfg, struct hy_replay **out, char *why,
		  size_t why_size)
{
	struct hy_replay *r;
	int rc;

	*out = NULL;
	if (cfg->capacity == 0 || cfg->capacity > UINT32_MAX - 1) {
		snprintf(why, why_size, "a cache of %llu blocks: it must hold 1 to %u",
			 (unsigned long long)cfg->capacity, UINT32_MAX - 1);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	r->cfg = *cfg;
	r->capacity = (uint32_t)cfg->capacity;
	rc = hy_policy_new(cfg->policy, r->capacity, NULL, &r->policy, why, why_size);
	if (rc == 0) {
		rc = keymap_init(&r->map, (uint64_t)r->capacity * 4, true);
		r->line_key = malloc((size_t)r->capacity * sizeof(*r->line_key));
		if (rc < 0 || !r->line_key) {
			snprintf(why, why_size, "out of memory for a cache of %u blocks",
				 r->capacity);
			rc = -ENOMEM;
		}
	}
	if (rc < 0) {
		hy_replay_free(r);
		return rc;
	}
	memset(r->line_key, 0xff, (size_t)r->capacity * sizeof(*r->line_key));
	*out = r;
	return 0;
}

void hy_replay_free(struct hy_replay *r)
{
	if (!r)
		return;
	hy_policy_free(r->policy);
	if (r->map.keys)
		keymap_free(&r->map);
	free(r->line_key);
	free(r);
}

int hy_replay_access(struct hy_replay *r, uint64_t key, bool write)
{
	uint64_t slot = keymap_slot(&r->map, key);
	uint32_t line;
	int rc;

	r->st.accesses++;
	if (write)
		r->st.writes++;
	else
		r->st.reads++;
	/* aged once every half capacity of accesses, as cache.c does */
	if (++r->since_age >= (r->capacity + 1) / 2) {
		hy_policy_age(r->policy);
		r->since_age = 0;
	}
	if (r->map.keys[slot] == key) {
		hy_policy_hit(r->policy, r->map.values[slot]);
		if (write)
			r->st.write_hits++;
		else
			r->st.read_hits++;
		return 1;
	}
	if (!hy_policy_admit(r->policy, key)) {
		r->st.refused++;
		return 0;
	}
	if (r->next_free < r->capacity) {
		line = r->next_free++;
	} else {
		uint64_t victim;

		if (hy_policy_victim(r->policy, NULL, NULL, NULL, &line) != 0)
			return 0; /* cannot happen: every line is evictable */
		victim = r->line_key[line];
		hy_policy_remove(r->policy, line);
		keymap_delete_at(&r->map, keymap_slot(&r->map, victim));
		r->st.evictions++;
	}
	rc = keymap_put(&r->map, key, line);
	if (rc < 0)
		return rc;
	r->line_key[line] = key;
	hy_policy_insert(r->policy, line);
	r->st.inserts++;
	return 0;
}

/* Calls @fn for each block access of @rec under the rule; 1, 0 at the cap,
 * or @fn's negative errno. */
static int for_each_block(const struct hy_trace_record *rec, bool reads_only, uint64_t max_accesses,
			  uint64_t *done, uint64_t *requests, uint64_t *dropped,
			  int (*fn)(void *arg, uint64_t key, bool write), void *arg)
{
	uint64_t first, last, base;

	if (max_accesses && *done >= max_accesses)
		return 0;
	if (rec->length == 0 || (reads_only && rec->write)) {
		(*dropped)++;
		return 1;
	}
	first = rec->offset / HY_REPLAY_BLOCK;
	last = (rec->offset + rec->length - 1) / HY_REPLAY_BLOCK;
	if (rec->offset + rec->length < rec->offset) /* past 2^64: cut there */
		last = UINT64_MAX / HY_REPLAY_BLOCK;
	base = (uint64_t)rec->device << HY_REPLAY_DEVICE_SHIFT;
	(*requests)++;
	for (uint64_t b = first; b <= last; b++) {
		int rc;

		if (max_accesses && *done >= max_accesses)
			return 0;
		rc = fn(arg, base | (b & ((UINT64_C(1) << HY_REPLAY_DEVICE_SHIFT) - 1)),
			rec->write);
		if (rc < 0)
			return rc;
		(*done)++;
	}
	return 1;
}

static int replay_block(void *arg, uint64_t key, bool write)
{
	int rc = hy_replay_access(arg, key, write);

	return rc < 0 ? rc : 0;
}

int hy_replay_request(struct hy_replay *r, const struct hy_trace_record *rec)
{
	uint64_t done = r->st.accesses;
	int rc = for_each_block(rec, r->cfg.reads_only, r->cfg.max_accesses, &done, &r->st.requests,
				&r->st.dropped, replay_block, r);

	if (rc == 0)
		r->st.capped = true;
	return rc;
}

void hy_replay_get_stats(const struct hy_replay *r, struct hy_replay_stats *out)
{
	*out = r->st;
}

/* ---- footprint ------------------------------------------------------------- */

struct hy_replay_footprint {
	struct keymap set;
	bool reads_only;
	uint64_t max_accesses, accesses, requests, dropped;
};

int hy_replay_footprint_new(bool reads_only, uint64_t max_accesses,
			    struct hy_replay_footprint **out)
{
	struct hy_replay_footprint *fp = calloc(1, sizeof(*fp));

	*out = NULL;
	if (!fp || keymap_init(&fp->set, 1 << 16, false) < 0) {
		free(fp);
		return -ENOMEM;
	}
	fp->reads_only = reads_only;
	fp->max_accesses = max_accesses;
	*out = fp;
	return 0;
}

static int footprint_block(void *arg, uint64_t key, bool write)
{
	struct hy_replay_footprint *fp = arg;
	int rc = keymap_put(&fp->set, key, 0);

	(void)write; /* both directions touch the block */
	return rc < 0 ? rc : 0;
}

int hy_replay_footprint_add(struct hy_replay_footprint *fp, const struct hy_trace_record *rec)
{
	return for_each_block(rec, fp->reads_only, fp->max_accesses, &fp->accesses, &fp->requests,
			      &fp->dropped, footprint_block, fp);
}

uint64_t hy_replay_footprint_blocks(const struct hy_replay_footprint *fp)
{
	return fp->set.count;
}

uint64_t hy_replay_footprint_accesses(const struct hy_replay_footprint *fp)
{
	return fp->accesses;
}

void hy_replay_footprint_free(struct hy_replay_footprint *fp)
{
	if (!fp)
		return;
	keymap_free(&fp->set);
	free(fp);
}
