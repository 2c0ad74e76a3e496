/* pore.c - PORE's open and forbidden zones; see include/hybridfs/pore.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/keymap.h"
#include "hybridfs/pore.h"

struct zone {
	uint64_t dirty;	   /* dirty cached blocks */
	uint64_t accesses; /* this period */
	bool open;
};

struct hy_pore {
	struct hy_pore_config cfg;
	struct hy_keymap numbers; /* zone number -> index in zones */
	struct zone *zones;
	size_t nzones, cap;
	uint64_t written; /* blocks written into the cache this period */
	uint64_t dirty_zones, open_zones, divisions;
};

static const char *const rule_names[HY_PORE_RULES] = {"off", "coverage", "popularity", "balance"};

const char *hy_pore_rule_name(enum hy_pore_rule rule)
{
	return (unsigned)rule < HY_PORE_RULES ? rule_names[rule] : "?";
}

int hy_pore_rule_parse(const char *name, enum hy_pore_rule *out)
{
	for (int i = 0; i < HY_PORE_RULES; i++)
		if (strcmp(name, rule_names[i]) == 0) {
			*out = (enum hy_pore_rule)i;
			return 0;
		}
	return -EINVAL;
}

int hy_pore_new(const struct hy_pore_config *cfg, struct hy_pore **out, char *why, size_t why_size)
{
	struct hy_pore *p;

	*out = NULL;
	if (cfg->rule == HY_PORE_OFF || (unsigned)cfg->rule >= HY_PORE_RULES) {
		snprintf(why, why_size, "PORE: no zone choice rule");
		return -EINVAL;
	}
	if (cfg->zone_bytes &&
	    (cfg->zone_bytes < HY_PORE_MIN_ZONE || cfg->zone_bytes > HY_PORE_MAX_ZONE)) {
		snprintf(why, why_size, "PORE: zones of %" PRIu64 " bytes: 1 MiB to 1 TiB",
			 cfg->zone_bytes);
		return -EINVAL;
	}
	if (cfg->open_permille > 1000) {
		snprintf(why, why_size, "PORE: %u per mille of the zones open: at most 1000",
			 cfg->open_permille);
		return -EINVAL;
	}
	if (cfg->period_blocks == 0) {
		snprintf(why, why_size, "PORE: a period of 0 blocks");
		return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p || hy_keymap_init(&p->numbers, 64, true) < 0) {
		free(p);
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	p->cfg = *cfg;
	if (!p->cfg.zone_bytes)
		p->cfg.zone_bytes = HY_PORE_DEFAULT_ZONE;
	if (!p->cfg.open_permille)
		p->cfg.open_permille = HY_PORE_DEFAULT_OPEN;
	*out = p;
	return 0;
}

void hy_pore_free(struct hy_pore *p)
{
	if (!p)
		return;
	hy_keymap_free(&p->numbers);
	free(p->zones);
	free(p);
}

int64_t hy_pore_zone(struct hy_pore *p, uint64_t address)
{
	uint64_t number = address / p->cfg.zone_bytes;
	uint32_t z;

	if (hy_keymap_get(&p->numbers, number, &z))
		return z;
	if (p->nzones == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		struct zone *zs = cap > UINT32_MAX ? NULL : realloc(p->zones, cap * sizeof(*zs));

		if (!zs)
			return -ENOMEM;
		p->zones = zs;
		p->cap = cap;
	}
	if (hy_keymap_put(&p->numbers, number, (uint32_t)p->nzones) < 0)
		return -ENOMEM;
	p->zones[p->nzones] = (struct zone){.open = true};
	return (int64_t)p->nzones++;
}

void hy_pore_dirty(struct hy_pore *p, uint32_t zone, int64_t delta)
{
	struct zone *z = &p->zones[zone];

	if (delta < 0 && (uint64_t)-delta > z->dirty)
		z->dirty = 0;
	else
		z->dirty += (uint64_t)delta;
}

void hy_pore_clear_dirty(struct hy_pore *p)
{
	for (size_t z = 0; z < p->nzones; z++)
		p->zones[z].dirty = 0;
}

void hy_pore_access(struct hy_pore *p, uint32_t zone, uint64_t n)
{
	p->zones[zone].accesses += n;
}

bool hy_pore_open(const struct hy_pore *p, uint32_t zone)
{
	return p->zones[zone].open;
}

bool hy_pore_written(struct hy_pore *p, uint64_t blocks)
{
	p->written += blocks;
	if (p->written < p->cfg.period_blocks)
		return false;
	hy_pore_divide(p);
	return true;
}

struct scored {
	double score;
	uint32_t zone;
};

/* Best score first; equal scores in zone order, so a division is the same
 * on every run. */
static int by_score(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return (x->zone > y->zone) - (x->zone < y->zone);
}

void hy_pore_divide(struct hy_pore *p)
{
	struct scored *s = malloc((p->nzones ? p->nzones : 1) * sizeof(*s));
	size_t n = 0, open;

	p->written = 0;
	p->divisions++;
	if (!s) /* the last division stays: the cache is still right, only less fit */
		return;
	for (size_t i = 0; i < p->nzones; i++) {
		struct zone *z = &p->zones[i];
		double score;

		z->open = z->dirty == 0;
		if (!z->dirty)
			continue;
		switch (p->cfg.rule) {
		case HY_PORE_COVERAGE:
			score = (double)z->dirty;
			break;
		case HY_PORE_POPULARITY:
			score = -(double)z->accesses;
			break;
		default:
			score = (double)z->dirty / (1.0 + (double)z->accesses);
			break;
		}
		s[n++] = (struct scored){score, (uint32_t)i};
	}
	qsort(s, n, sizeof(*s), by_score);
	/* the share of the zones, and no more of them than hold a period's
	 * worth of dirty blocks: what the disk's persistent buffer takes in
	 * before it cleans its bands (a larger open region spreads one
	 * buffer's writes over more bands); at least one zone opens while
	 * any holds dirty blocks, so a period never forbids every write */
	{
		size_t share = (n * p->cfg.open_permille + 999) / 1000;
		uint64_t sum = 0;

		for (open = 0; open < share && (open == 0 || sum < p->cfg.period_blocks); open++)
			sum += p->zones[s[open].zone].dirty;
	}
	for (size_t i = 0; i < open && i < n; i++)
		p->zones[s[i].zone].open = true;
	for (size_t i = 0; i < p->nzones; i++)
		p->zones[i].accesses = 0;
	p->dirty_zones = n;
	p->open_zones = open < n ? open : n;
	free(s);
}

void hy_pore_get_stats(const struct hy_pore *p, struct hy_pore_stats *out)
{
	*out = (struct hy_pore_stats){
		.rule = p->cfg.rule,
		.zone_bytes = p->cfg.zone_bytes,
		.period_blocks = p->cfg.period_blocks,
		.open_permille = p->cfg.open_permille,
		.zones = p->nzones,
		.dirty_zones = p->dirty_zones,
		.open_zones = p->open_zones,
		.divisions = p->divisions,
	};
}
