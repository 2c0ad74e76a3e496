/*
 * replay.h - block traces replayed through the cache's replacement
 * policies (issue 7's simulator, its first part).
 *
 * What it is for: `hybridctl simulate` reads a trace (trace_reader.h) and
 * feeds it here, by the rule of ../shared/traces/BASELINES.md so that its
 * figures compare with an independent simulator's: a request of bytes
 * [offset, offset + length) is the 4 KiB block accesses offset / 4096 ..
 * (offset + length - 1) / 4096 in ascending order (a zero-length request
 * is dropped); a block's key is (device << 48) | block; the cache starts
 * empty; reads and writes are both accesses that allocate on a miss, unless
 * the policy refuses it (LARC's lazy admission), or, with reads_only,
 * writes are dropped (a read cache with write-around). The cache holds
 * @capacity blocks and its replacement is policy.h's, the same code the
 * SSD store uses: LRU, LARC, FREQ, or LRU3 (blocks enter its cold queue).
 * The policy is aged once every half capacity of accesses, as the cache
 * does (cache.c).
 *
 * Timing (optional: @backing and @ssd models, devmodel.h): each request is
 * served in closed loop, one after the other, its response time its
 * service time; or, with @open_loop, at the time the trace gives it
 * (timestamps from the first request's, divided by @speed): the storage
 * serves requests in arrival order, one at a time, a request starting when
 * it arrives or when the one before it is done, whichever is later; its
 * response is its wait plus its service (a trace without timestamps is
 * refused; a request stamped before the one before it arrives with it). A read: its runs of cached
 * blocks are SSD reads, its runs of missed blocks backing reads, one
 * request each; the blocks a read miss admits are then written into the
 * SSD (busy time, not response time: the cache fills behind the answer).
 * A write goes through: one backing write of the request, and the SSD
 * write of the blocks the cache keeps (hits and admitted misses), both in
 * the response. Each request is classified (classify.h, per device) and
 * its process (the trace's pid, else its device) given a workload category
 * (category.h); response times are kept per class and per category, with
 * their mean and 99th percentile (log-scale histograms, 4% wide buckets).
 *
 * Write-back and PORE (timed): with write_back, a write only dirties its
 * cached block; the block is written to the backing device when its line
 * is evicted (the eviction's write is part of the response of the request
 * that needed the line). With PORE (an SMR backing device), the disk's
 * address space is cut into zones; every period (a number of writes) the
 * zones holding dirty blocks are re-divided into open and forbidden ones
 * by the chosen rule, and a victim search skips dirty lines of forbidden
 * zones (clean lines anywhere go); when the search window holds no
 * evictable line, the least recently used line goes anyway (counted).
 *
 * Footprint: hy_replay_footprint_* counts the distinct blocks of a trace
 * (the first pass, so that a cache size can be a share of it).
 *
 * Costs: O(1) expected per access (a hash of keys to lines, the policy's
 * O(1) operations, LRU3's amortized demotions); memory linear in the
 * capacity (and in the footprint for the footprint counter).
 *
 * Who calls it: ctl/simulate_cmd.c, the unit tests.
 *
 * Memory: hy_replay_new allocates everything, hy_replay_free frees it.
 * Threads: none; one replay, one thread.
 */
#ifndef HYBRIDFS_REPLAY_H
#define HYBRIDFS_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/category.h"
#include "hybridfs/classify.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/policy.h"
#include "hybridfs/pore.h"

#define HY_REPLAY_BLOCK	       4096u
#define HY_REPLAY_DEVICE_SHIFT 48

struct hy_trace_record;

struct hy_replay_config {
	enum hy_policy_kind policy;
	uint64_t capacity;     /* blocks, at least 1 */
	bool reads_only;       /* writes are dropped */
	uint64_t max_accesses; /* block accesses replayed at most (0: all) */
	/* timing: both or neither (NULL: hit ratios only) */
	const struct hy_devmodel_params *backing, *ssd;
	/* timed only: writes stay in the cache, dirty, until their line is
	 * evicted, and are written to the backing device then (write-back);
	 * else they go through */
	bool write_back;
	/* PORE (write-back): dirty victims only from open zones */
	enum hy_pore_rule pore;	     /* pore.h's zone choice; HY_PORE_OFF: none */
	uint64_t pore_zone_bytes;    /* 0: 16 MiB */
	unsigned pore_open_permille; /* share of the zones holding dirty blocks
				      * that are open; 0: 100 (10%) */
	uint64_t pore_period;	     /* writes between re-divisions; 0: the
				      * backing model's buffer_bytes / 4 KiB */
	/* timed only: requests arrive at their timestamps (open loop) */
	bool open_loop;
	double speed; /* open loop: the trace's time divided by this; 0: 1 */
};

/* Response times of one group of requests (a class, a category). */
struct hy_replay_latency {
	uint64_t requests;
	double mean_ms, p99_ms;
};

struct hy_replay_stats {
	uint64_t accesses; /* block accesses replayed */
	uint64_t reads, writes;
	uint64_t read_hits, write_hits;
	uint64_t inserts; /* misses that entered the cache (SSD fills) */
	uint64_t refused; /* misses the policy kept out (LARC) */
	uint64_t evictions;
	uint64_t requests; /* trace requests that gave at least one access */
	uint64_t dropped;  /* requests dropped: zero length, or writes with reads_only */
	bool capped;	   /* max_accesses was reached */
	/* timing (with device models) */
	bool timed;
	double backing_busy_ms, ssd_busy_ms;
	uint64_t dirty_evictions;  /* write-back: dirty blocks written to the backing device */
	uint64_t forced_evictions; /* PORE: no victim in an open zone, one taken anyway */
	uint64_t pore_divisions;   /* PORE: open/forbidden re-divisions */
	/* open loop */
	bool open_loop;
	double span_ms;	     /* from the first arrival to the last completion */
	double wait_mean_ms; /* time a request waited for the one before it */
	uint64_t waited;     /* requests that waited at all */
	uint64_t reordered;  /* requests stamped before the one before them */
	struct hy_devmodel_stats backing, ssd;
	struct hy_replay_latency all;
	struct hy_replay_latency by_class[HY_CLASS_COUNT];
	struct hy_replay_latency by_category[HY_CATEGORY_COUNT];
};

struct hy_replay;
struct hy_reca_request;

/* How the simulators key a trace request for ReCA (reca.h): its device's
 * history, its process (its pid, else its device) for the category, the
 * device as the file, its furthest byte as the file's size. Used by the
 * replay (--reca) and the whole cache (sim/full.c). */
void hy_replay_reca_request(const struct hy_trace_record *rec, struct hy_reca_request *out);

/* 0, or -EINVAL (a capacity of 0 or above UINT32_MAX lines, a bad policy)
 * or -ENOMEM, with the reason in @why. */
int hy_replay_new(const struct hy_replay_config *cfg, struct hy_replay **out, char *why,
		  size_t why_size);
void hy_replay_free(struct hy_replay *replay);

/* One 4 KiB block access: 1 a hit, 0 a miss, -ENOMEM. */
int hy_replay_access(struct hy_replay *replay, uint64_t key, bool write);

/* One trace request, as the rule says: 1 replayed (or dropped), 0 when the
 * cap was reached (the request is cut at it; stop reading), -ENOMEM, or
 * in open loop -EINVAL for a request without a timestamp. */
int hy_replay_request(struct hy_replay *replay, const struct hy_trace_record *rec);

void hy_replay_get_stats(const struct hy_replay *replay, struct hy_replay_stats *out);

/* The distinct blocks of a trace, counted request by request under the
 * same rule (reads only, cap). */
struct hy_replay_footprint;
int hy_replay_footprint_new(bool reads_only, uint64_t max_accesses,
			    struct hy_replay_footprint **out);
/* 1 counted, 0 the cap was reached, -ENOMEM. */
int hy_replay_footprint_add(struct hy_replay_footprint *fp, const struct hy_trace_record *rec);
uint64_t hy_replay_footprint_blocks(const struct hy_replay_footprint *fp);
uint64_t hy_replay_footprint_accesses(const struct hy_replay_footprint *fp);
void hy_replay_footprint_free(struct hy_replay_footprint *fp);

#endif
