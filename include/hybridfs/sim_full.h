/*
 * sim_full.h - a block trace replayed through hybridfs's whole cache
 * (cache.h: the DRAM front buffer with FusionCache's heat filter, the SSD
 * store with LRU3 and its two-step eviction, and, with @reca, ReCA's
 * classes, categories and per-process hints), the same code the daemon
 * runs, built by the daemon's stack builder (stack.h: engine, cache,
 * indirector without a BOPT) over a device that models home and keeps no
 * data; each request enters through the engine (hy_engine_read_hinted /
 * _write_hinted), as FUSE's do (issue 7: "the engine is the same code").
 *
 * Each request of the trace is one read or write of the cache covering its
 * 4 KiB blocks (BASELINES.md's block accesses: the cache counts a hit or
 * a miss for each; a block that the request's own miss read in is a
 * miss, only later requests profit from a larger line), device d's blocks
 * being file d + 1. The cache's
 * total size is @capacity blocks: @front_permille of it in the front
 * buffer, the rest lines of a store file made in @store_dir (removed when
 * the replay ends). Writes go through, or with @write_back stay dirty
 * until the cleaner's pass, which runs every @clean_every blocks written
 * (as its thread runs every few seconds), with PORE's zones when asked
 * (the daemon's backend=smr: the same cleaner code). With a @backing
 * model every read and write the cache sends home is served by it (busy
 * time, and an SMR model's write amplification). Without threads: the
 * front buffer's eviction runs every 64 accesses, as its thread would
 * when the buffer runs low. With @reca, each request is classified in its
 * device's history and its process (its pid, else its device) gets a
 * category; the default policy table turns them into the request's hint.
 *
 * Figures: hits (DRAM and SSD), the blocks the front buffer sent to the
 * SSD or kept off it, SSD bytes written.
 *
 * Who calls it: ctl/simulate_cmd.c (--policy full) and ctl/tune_cmd.c, the
 * unit tests.
 * Memory: hy_sim_full_new allocates the cache and its store file; free
 * removes both. Threads: none.
 */
#ifndef HYBRIDFS_SIM_FULL_H
#define HYBRIDFS_SIM_FULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/devmodel.h"
#include "hybridfs/policy.h"
#include "hybridfs/pore.h"

struct hy_trace_record;
struct hy_sim_full;
struct hy_workload_policy_table;

struct hy_sim_full_config {
	uint64_t capacity;	 /* blocks, front buffer and store together (>= 16) */
	unsigned front_permille; /* 0: 125 (an eighth in DRAM) */
	bool no_front;		 /* no front buffer: every block enters the store */
	double heat_threshold;	 /* < 0: the mount's default (1.5) */
	bool reca;
	bool reads_only;
	uint64_t max_accesses;
	const char *store_dir; /* NULL: $TMPDIR or /tmp */
	/* with @reca: the policy table to follow (copied; NULL: the defaults) */
	const struct hy_workload_policy_table *table;
	/* timing: a model of home (NULL: none); every read and write the
	 * cache sends home is served by it */
	const struct hy_devmodel_params *backing;
	bool write_back;	    /* the cache in write-back (else write-through) */
	enum hy_policy_kind policy; /* the store's replacement (0: LRU3, the mount's default) */
	uint64_t clean_every;	    /* write-back: blocks written between cleaner
				     * passes; 0: an eighth of the capacity */
	struct hy_pore_config pore; /* write-back: PORE's zones (rule OFF: none);
				     * period 0: the model's buffer_bytes */
};

struct hy_sim_full_stats {
	uint64_t accesses, reads, writes;
	uint64_t read_hits, write_hits; /* DRAM and SSD */
	uint64_t dram_hits, ssd_hits;
	uint64_t ssd_lines, front_blocks; /* as made */
	uint64_t ssd_bytes_written, heat_admitted, heat_refused;
	uint64_t requests, dropped;
	bool capped;
	/* write-back and timing */
	uint64_t cleaned_blocks; /* dirty blocks the cleaner (and a flush) wrote home */
	struct hy_pore_stats pore;
	uint64_t pore_held, pore_forced;
	double backing_busy_ms;
	struct hy_devmodel_stats backing; /* zeros when untimed */
};

/* 0, or a negative errno with the reason in @why. */
int hy_sim_full_new(const struct hy_sim_full_config *cfg, struct hy_sim_full **out, char *why,
		    size_t why_size);
void hy_sim_full_free(struct hy_sim_full *full);

/* One trace request: 1 replayed or dropped, 0 the cap was reached, or a
 * negative errno. */
int hy_sim_full_request(struct hy_sim_full *full, const struct hy_trace_record *rec);

void hy_sim_full_get_stats(struct hy_sim_full *full, struct hy_sim_full_stats *out);

/* At the end of the trace: every dirty block home (counted on the model).
 * The blocks written, or a negative errno. */
int64_t hy_sim_full_finish(struct hy_sim_full *full);

#endif
