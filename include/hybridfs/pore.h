/*
 * pore.h - PORE's Partially Open Region for Eviction (Wang et al., "PORE:
 * SMR-oriented SSD cache eviction", papers.md): which dirty cached blocks
 * may be written to a shingled (SMR) backing disk now, and which must wait.
 *
 * What it is for: on an SMR disk every write to a band rewrites the band
 * (through the disk's persistent buffer, which it cleans band by band), so
 * dirty blocks written home in LBA order scattered over the whole disk cost
 * a band rewrite each. PORE cuts the disk's address space into zones (10-20
 * MB are best) and, once a period (best: one persistent buffer's worth of
 * writes), divides the zones that hold dirty blocks into open ones, which
 * may receive dirty blocks, and forbidden ones, which may not (their dirty
 * blocks stay cached; clean blocks anywhere may be dropped). The open
 * zones are a share of those holding dirty blocks (10%), and no more than
 * hold one period's worth of dirty blocks (what the persistent buffer
 * takes in before it cleans its bands: a larger open region spreads a
 * buffer's writes over more bands), the best first by one of three rules:
 *   Coverage First:   the zones with the most dirty blocks (a band rewrite
 *                     carries the most blocks: least write amplification);
 *   Popularity First: the zones accessed least in the last period (the
 *                     popular ones keep their dirty blocks cached: best
 *                     hit ratio);
 *   Balancing:        dirty blocks over accesses (both; PORE's fastest).
 * A zone with no dirty block is open (there is nothing to forbid).
 *
 * Who calls it: the SSD cache's cleaner (cache/cleaner.c: with
 * backend=smr it writes home only the dirty blocks of open zones, unless
 * the cache is under pressure; cache/cache.c makes, reports and frees the
 * zones), the trace simulator's replay (sim/replay.c: a victim search
 * skips dirty lines of forbidden zones), the unit tests. The caller
 * tells it the zone of each block it counts (hy_pore_zone), each dirty
 * block gained or lost, each access, and the blocks written into the cache
 * (the period's clock).
 *
 * Costs: hy_pore_zone is O(1) expected (a hash of zone numbers); dirty,
 * access, open are O(1); a division sorts the zones holding dirty blocks,
 * O(z log z), once a period.
 *
 * Memory: hy_pore_new allocates; the zone table grows with the zones seen
 * (24 bytes a zone plus the hash), hy_pore_free releases it.
 *
 * Locks: none; the caller serializes every call on one object (the cache:
 * its cleaner's mutex; the replay: one thread).
 */
#ifndef HYBRIDFS_PORE_H
#define HYBRIDFS_PORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_PORE_DEFAULT_ZONE (UINT64_C(16) << 20) /* PORE: 10-20 MB zones are best */
#define HY_PORE_DEFAULT_OPEN 100		  /* per mille of the dirty zones open */
#define HY_PORE_MIN_ZONE     (UINT64_C(1) << 20)
#define HY_PORE_MAX_ZONE     (UINT64_C(1) << 40)

enum hy_pore_rule {
	HY_PORE_OFF = 0,
	HY_PORE_COVERAGE,   /* "coverage" */
	HY_PORE_POPULARITY, /* "popularity" */
	HY_PORE_BALANCE,    /* "balance": the default */
	HY_PORE_RULES
};

struct hy_pore_config {
	enum hy_pore_rule rule; /* not HY_PORE_OFF */
	uint64_t zone_bytes;	/* HY_PORE_MIN_ZONE..HY_PORE_MAX_ZONE; 0: the default */
	unsigned open_permille; /* 1..1000 of the zones holding dirty blocks; 0: default */
	uint64_t period_blocks; /* 4 KiB blocks written into the cache between
				 * divisions, >= 1 */
};

struct hy_pore_stats {
	enum hy_pore_rule rule;
	uint64_t zone_bytes, period_blocks;
	unsigned open_permille;
	uint64_t zones;	      /* zones seen */
	uint64_t dirty_zones; /* holding dirty blocks at the last division */
	uint64_t open_zones;  /* of those, open */
	uint64_t divisions;
};

struct hy_pore;

/* 0, or -EINVAL (with the setting named in @why) or -ENOMEM. */
int hy_pore_new(const struct hy_pore_config *cfg, struct hy_pore **out, char *why, size_t why_size);
void hy_pore_free(struct hy_pore *pore);

/* The zone holding byte @address of the backing disk (made open when new):
 * its index, or -ENOMEM. */
int64_t hy_pore_zone(struct hy_pore *pore, uint64_t address);

/* @zone gained (@delta > 0) or lost dirty blocks. */
void hy_pore_dirty(struct hy_pore *pore, uint32_t zone, int64_t delta);
/* Every zone's dirty count back to 0 (a caller that recounts them). */
void hy_pore_clear_dirty(struct hy_pore *pore);
/* @n accesses to blocks of @zone this period (its popularity). */
void hy_pore_access(struct hy_pore *pore, uint32_t zone, uint64_t n);
/* Whether dirty blocks of @zone may go to the disk now. */
bool hy_pore_open(const struct hy_pore *pore, uint32_t zone);

/* @blocks more were written into the cache; when a period's worth has
 * been, the zones are divided again (returns true). */
bool hy_pore_written(struct hy_pore *pore, uint64_t blocks);
/* Divides now: the best-scoring share of the zones holding dirty blocks
 * open, the rest forbidden; the accesses start again from 0. */
void hy_pore_divide(struct hy_pore *pore);

void hy_pore_get_stats(const struct hy_pore *pore, struct hy_pore_stats *out);

/* "off", "coverage", "popularity", "balance". */
const char *hy_pore_rule_name(enum hy_pore_rule rule);
/* 0 and *@out, or -EINVAL for a name not in the list above. */
int hy_pore_rule_parse(const char *name, enum hy_pore_rule *out);

#endif
