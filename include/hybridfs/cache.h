/*
 * cache.h - the cache below the engine: a DRAM front buffer with
 * FusionCache's heat filter in front of an SSD cache store (issue 5).
 *
 * What it is for: the engine (engine/engine.c) hands it every read and write
 * of a file with a file id; it answers from DRAM or from the SSD store's
 * lines, and sends what it cannot answer (a miss) and what must reach home
 * (write policies, the cleaner) to the path below it, the indirector
 * (indirector.h): BORG's indirection map, then the BOPT or the backing file,
 * then the device. It calls nothing above it. No FUSE here: the simulator
 * drives the same code over a model device.
 *
 * The tiers, as the papers describe them:
 *   - DRAM front buffer (FusionCache): a block missed or written enters it
 *     first; each buffered block counts its accesses per period (heat.h).
 *     A thread ("hy-front") evicts when it is nearly full, least recently
 *     used first: a block whose predicted heat reaches the threshold goes to
 *     the SSD store (into the hot, warm or cold queue by its heat); a cold
 *     clean block is dropped, a cold dirty one written home. Requests never
 *     wait for it: when no buffer slot is free a write goes straight to the
 *     SSD store (OmniCache's concurrent eviction) and a read miss is not
 *     buffered. front_buffer=0: no DRAM tier, every block enters the store.
 *   - SSD store (cache_store.h for the format, cache_index.h for the
 *     index, policy.h for the replacement): lines of 4 KiB with per-sector
 *     valid and dirty masks. A write smaller than a line covers whole
 *     sectors without reading anything; only a sector it touches in part
 *     and that is not valid is read from below first (at most two per
 *     request). A read takes the valid sectors from the line and the rest
 *     from below. Victims are clean lines only, found by the policy's
 *     two-step search (with LRU3; the baselines LRU, LARC and FREQ stay
 *     plain): lines of closed or inactive files first (no request for as
 *     many requests as the store has lines), then the least recently
 *     used; dirty lines are the cleaner's. A pinned file's lines are held
 *     out of the policy (pin.h), at most half of the store.
 *   - Write policies (cache_write=): back (writes stay in the cache, dirty,
 *     until the cleaner, an fsync's journal, a close or a flush), through
 *     (home first, then the cached copy) and around (home; only blocks
 *     already cached are updated, nothing is allocated). A file written
 *     sequentially past seq_cutoff bytes goes around, whatever the policy
 *     (bcache's sequential cutoff: a large file written once would push
 *     hotter blocks out and be written twice).
 *
 * Durability (DESIGN.md invariants 1-5):
 *   - fsync of a write-back file moves its dirty DRAM blocks into store
 *     lines, syncs the line data, then journals a record per dirty line
 *     (file, block, masks) and waits (home is synced only if the cache
 *     changed it since its last sync): after a kill -9 the journal brings
 *     every fsync'd dirty line back, and mount writes them home
 *     (hy_cache_open with a recover callback) before the store is used
 *     again, and drops those files' lines.
 *   - The store keeps its clean lines across mounts (cache/cache.c's
 *     header: each checkpoint keeps per file the stamp its lines are
 *     current for, a file's kept lines are served only once its first
 *     request finds the home file with that stamp again, and a clean
 *     close sums every line's data for the next mount to check).
 *   - A store cut short in its data lines (its superblock, table and
 *     journal whole) is salvaged: the dirty lines that remain go home,
 *     those past its end are logged as lost, and it is made again. A
 *     store damaged otherwise, another mount's or newer is refused.
 *   - A line is journaled dirty only after its data is in the store, and a
 *     line whose last durable record is dirty is never reused before a
 *     clean or free record for it is durable: a crash never lets one file's
 *     line be read back as another's.
 *   - A write that ends past the home file's end goes home at once with
 *     its data, whatever the policy (then it is cached clean): the home
 *     size is what stat shows and what a kill -9 leaves, so it grows only
 *     over data that is home, never over dirty blocks a crash may lose
 *     (they would read as zeros). Other write-back writes set the home
 *     file's modification time and first reserve their bytes at home
 *     (fallocate, keeping the size): a disk that cannot hold them fails
 *     the write with ENOSPC, as a plain directory would, instead of
 *     leaving dirty blocks that can never go home.
 *   - A file changed outside the mount: the cache keeps, per file, the home
 *     ctime its blocks were cached under (its stamp); a request that finds
 *     the ctime moved drops the file's blocks (dirty sectors home first);
 *     one that finds the file smaller than it knew (an O_TRUNC open in the
 *     same clock tick) drops what lies past the end.
 *   - The cleaner ("hy-cache-clean") writes dirty blocks home in order of
 *     file and block, rate-limited (cache_clean_rate=), keeping the home
 *     file's modification time; files closed for the last time first
 *     (FusionCache's session write-back: hy_cache_close queues them).
 *     hy_cache_flush and close write everything home.
 *   - PORE (backend=smr, pore.h): home is a shingled disk, where dirty
 *     blocks written home all over it cost a band rewrite each. The
 *     cleaner then writes home only the dirty blocks of open zones (their
 *     addresses from hy_indirector_addresses()), re-dividing the zones
 *     into open and forbidden once a period of blocks written into the
 *     cache, by the configured rule (a line's hits since the last division
 *     are its popularity); the others stay cached, dirty. Victims are clean
 *     lines anyway, so "clean ones anywhere dropped" holds as it is; a cold
 *     dirty block leaving the front buffer enters the store's cold queue
 *     instead of going home. When half of the cache is dirty the cleaner
 *     writes every zone (a victim must stay findable); a flush, an fsync
 *     that sends blocks home and a close are not held back (durability
 *     first).
 *
 * ReCA's per-process configuration: a request may come with a hint (what
 * its process's workload category says for its class: write policy,
 * admission, eviction preference, line size, cutoff), which this module
 * follows for that request; see hy_cache_read_hinted().
 *
 * Who calls it: engine/engine.c (read, write, truncate, fallocate, copy,
 * fsync, close, metadata changes, O_TRUNC opens); the stack builder
 * (stack.h: open over the engine's indirector and close, for
 * fs/cache_glue.c); fs/cache_glue.c (stats); fs/borg_handlers.c (flush);
 * the simulator's whole cache (sim/full.c, hence hybridctl simulate
 * --policy full and tune) over an indirector over a model of home; the
 * unit tests over an indirector on a memory device of their own.
 *
 * Memory: hy_cache_open() allocates everything: the front buffer's slots
 * (front_buffer bytes of data plus 88 bytes a slot: its state, hash and
 * ghost history), the index (cache_index.h: 10 bytes a line of the store,
 * its keys and masks, and about 5 a line in use, its tables, plus about
 * 110 bytes a file), the policy (8 bytes a line with LRU3), a byte a line
 * of flags and a bit of free map; with a full store of files of 128 blocks
 * or more, at most 25 bytes a cached 4 KiB line, plus about 27 KiB
 * whatever the store's size (issue 19; 58 bytes before; test_cache.c
 * checks it). The index's entries are also the store's line table
 * (cache_store.h, external table: its checkpoints ask this module, which
 * gives the 64-bit file id of a line's handle), and a queue of up to 64
 * line migrations (each holding an object of its file from
 * hy_indirector_hold_object until it has run); with PORE, its zones
 * (pore.h) and a byte a line of hits; hy_cache_close() frees it.
 * hy_cache_stats reports the DRAM per SSD line.
 *
 * Locks: HY_CACHE_GATES rwlocks striped by file id (the cache's gates):
 * a read holds its file's gate shared across its I/O, a write, truncation,
 * sync or eviction of a file's blocks exclusive; an eviction that takes a
 * victim of another file only try-locks that file's gate (a busy file's
 * line is skipped), so no request waits for another file. Below the gates:
 * the front buffer's mutex (its table, lists and heat; never held across
 * I/O), the lines' mutex (policy, line state, free lines; never across
 * I/O), the journal's rwlock (appends shared, a checkpoint exclusive), then
 * the index's and the store's own. The indirector is called with the
 * file's gate held and nothing else: it takes its own gates (order: cache
 * gate, then the indirector's). The cleaner's mutex is taken before any
 * gate; it also serializes PORE's zones (the cleaner's pass asks the
 * indirector where blocks lie with a file's gate shared), whose figures for the
 * stats are copied under the lines' mutex. The pins' map of file ids
 * (pin.h) has a mutex of its own, a leaf.
 */
#ifndef HYBRIDFS_CACHE_H
#define HYBRIDFS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hybridfs/device.h"
#include "hybridfs/options.h" /* enum hy_cache_write_policy */
#include "hybridfs/policy.h"
#include "hybridfs/pore.h"
#include "hybridfs/workload_policy.h"

#define HY_CACHE_GATES 256

/* A file as a request names it: its id (never 0) and its backing object
 * (a descriptor in the daemon), which the indirector reads and writes. */
struct hy_cache_file {
	uint64_t file_id;
	int64_t object;
};

/* At mount: opens, for writing, the home files of @ids (sorted, unique)
 * whose dirty lines a crash left in the store; objects[i] = -1 for a file
 * that is gone. Returns 0 or a negative errno (then the mount fails and
 * the store is left as it is). */
typedef int (*hy_cache_open_homes_fn)(void *arg, const uint64_t *ids, size_t n, int64_t *objects);

/* What the policy table (workload_policy.h) says for one request of a
 * process in its category (ReCA's per-process configuration); a NULL hint
 * is the mount's own settings. ReCA (reca.h) fills it from the request's
 * class and the process's category: hy_reca_hint_from(). */
struct hy_cache_hint {
	int write;	     /* enum hy_cache_write_policy, or -1: the mount's */
	uint8_t admit;	     /* enum hy_workload_admit for the request's class */
	uint8_t evict;	     /* enum hy_workload_evict */
	uint32_t line_size;  /* bytes, 4 KiB..64 KiB: a read miss reads and caches
			      * the whole aligned line around it */
	uint64_t seq_cutoff; /* bytes (0: never); HY_WORKLOAD_CUTOFF_MOUNT: the mount's */
};

struct hy_cache_config {
	const char *store_path; /* resolved: a file or a block device */
	const char *uuid;	/* the mount's */
	uint64_t store_size; /* of a store file made or remade here; 0: an existing file keeps its
				size */
	enum hy_cache_write_policy write_policy;
	enum hy_policy_kind policy;
	uint64_t front_bytes;	    /* DRAM front buffer; 0: none */
	unsigned heat_periods;	    /* L */
	double heat_threshold;	    /* 0: every block is hot */
	uint64_t clean_rate;	    /* bytes/s for the cleaner; 0: no limit */
	unsigned clean_interval_ms; /* the cleaner's pass period (0: 5000) */
	uint64_t seq_cutoff;	    /* bytes of a file's sequential write stream past
				     * which it goes home (0: never) */
	uint64_t migrate_rate;	    /* bytes/s of line migrations (0: no limit) */
	struct hy_pore_config pore; /* backend=smr: PORE's zones (rule OFF: none) */
	bool no_threads;	    /* tests: no hy-front/hy-cache-clean threads */
	bool no_keep;		    /* lines are not kept across mounts (cache_keep=, options.h) */
	hy_cache_open_homes_fn open_homes; /* NULL: dirty lines left by a crash refuse the mount */
	void *open_homes_arg;
	/* Makes @file_id durable (so that open_homes finds the file after a
	 * crash); called before a file's first dirty lines are journaled, and
	 * cheap when the id is durable already. NULL: ids are durable. */
	int (*ids_durable)(void *arg, uint64_t file_id);
	void *ids_durable_arg;
};

/* Why a block of a request passed the cache by (its data went home, or
 * was read from below, and no copy was kept): counted in 4 KiB blocks, one
 * reason a block (hy_cache_stats.passthrough; "passthrough" in status,
 * hybridfs_cache_passthrough_blocks_total in the metrics, hybridctl(8)). */
enum hy_cache_pass_reason {
	HY_CACHE_PASS_CLASS,	    /* its request's class bypasses the cache (ReCA's hint) */
	HY_CACHE_PASS_EXCLUDED,	    /* its file matches an exclude rule (pin.h) */
	HY_CACHE_PASS_CUTOFF,	    /* a sequential write stream past the cutoff */
	HY_CACHE_PASS_NO_ROOM,	    /* no DRAM slot and no SSD line could be had */
	HY_CACHE_PASS_HEAT,	    /* predicted cold: kept off the SSD by the heat filter */
	HY_CACHE_PASS_POLICY,	    /* the replacement policy refused it (LARC) */
	HY_CACHE_PASS_WRITE_AROUND, /* a write under write-around (the mount's or ReCA's) */
	HY_CACHE_PASS_COUNT
};

/* "class", "excluded", "cutoff", "no_room", "heat", "policy", "write_around";
 * NULL past the last. */
const char *hy_cache_pass_name(enum hy_cache_pass_reason reason);

struct hy_cache_stats {
	const char *write_policy, *policy;
	const char *path; /* the store; valid while the cache is open */
	/* in 4 KiB blocks of requests */
	uint64_t read_hits_dram, read_hits_ssd, read_misses;
	uint64_t write_hits_dram, write_hits_ssd, write_misses;
	uint64_t dram_slots, dram_used, dram_dirty;
	uint64_t ssd_lines, ssd_used, ssd_dirty;
	uint64_t dirty_bytes;	    /* dirty sectors * 512, DRAM and SSD */
	uint64_t ssd_bytes_written; /* data written into store lines */
	uint64_t heat_admitted;	    /* blocks the front buffer sent to the SSD */
	uint64_t heat_refused;	    /* ... and kept off it as cold */
	uint64_t policy_refused;    /* admissions the policy refused (LARC) */
	uint64_t dram_evictions, ssd_evictions;
	uint64_t cold_dirty_home; /* cold dirty blocks the front buffer wrote home */
	uint64_t cleaned_blocks;  /* dirty blocks written home */
	uint64_t cleaner_backlog; /* dirty blocks now */
	uint64_t bypassed;	  /* blocks written home because no room was free */
	uint64_t seq_bypassed;	  /* blocks of sequential streams past the cutoff, home */
	uint64_t stale_files;
	uint64_t forgotten_files; /* removed files whose blocks left unwritten */
	/* ReCA's per-process configuration (hints) */
	uint64_t admit_bypassed;  /* blocks of requests whose class bypasses the cache
				   * (passthrough class + excluded) */
	uint64_t line_prefetched; /* blocks read with a miss to fill its whole line */
	uint64_t migrations;	  /* files queued to fill their lines to a larger size */
	uint64_t migrate_filled;  /* blocks those migrations read in */
	uint64_t migrate_dropped; /* migrations given up (queue full, file busy or changed) */
	uint64_t migrate_home;	  /* files whose dirty blocks went home early: their
				   * process left write-back */
	/* PORE (backend=smr; rule "off" and zeros without it) */
	struct hy_pore_stats pore;
	uint64_t pore_held;   /* dirty blocks the last cleaner pass kept: forbidden zones */
	uint64_t pore_forced; /* cleaner passes that wrote every zone: half the cache dirty */
	uint64_t pore_kept;   /* cold dirty blocks the front buffer sent to the store, not home */
	uint64_t journal_records, checkpoints;
	/* blocks that passed the cache, by reason: heat_refused,
	 * policy_refused and seq_bypassed are three of them; no_room counts
	 * what bypassed does and the reads and write-through writes that
	 * found no room */
	uint64_t passthrough[HY_CACHE_PASS_COUNT];
	uint64_t recovered_blocks; /* dirty blocks written home at open */
	uint64_t lost_blocks;	   /* ... that lay past the end of a truncated store */
	/* the persistent cache: what open kept of the store's lines and what
	 * it dropped, then what the first use of the kept files found */
	struct hy_cache_keep_stats {
		uint64_t kept_lines, kept_files;       /* at open, unverified */
		uint64_t changed_lines, changed_files; /* dropped: written home after a crash */
		uint64_t unverifiable_lines, unverifiable_files; /* dropped: no stamp */
		uint64_t gone_files;	/* at open: files of dirty lines that are gone */
		uint64_t damaged_lines; /* at open: data not as summed at the clean close */
		uint64_t verified_lines, verified_files;     /* adopted: unchanged */
		uint64_t stale_lines, stale_files;	     /* dropped: changed while unmounted */
		uint64_t gone_later_lines, gone_later_files; /* removed before any use */
		uint64_t pending_files;			     /* kept files not used yet */
		uint64_t warm_hits;			     /* SSD read hits of kept lines */
		bool off; /* the store keeps nothing across mounts (cache_keep) */
	} keep;
	/* DRAM the SSD store's metadata holds, everything included: the
	 * index (per-line keys and masks, files, handles, tables), the
	 * policy, the line flags, the free map, the tails map, PORE's hit
	 * counts, the cache's struct; per line in use (rounded up; 0 when none
	 * is: at a full store, per cached 4 KiB line) and per line of the
	 * store. The cache's per-file state is file_meta_bytes. */
	size_t ssd_meta_bytes;
	size_t dram_bytes_per_line;
	size_t dram_bytes_per_store_line;
	size_t file_meta_bytes;	 /* the cache's per-file state (struct cfile, its lists) */
	size_t front_meta_bytes; /* the front buffer's bookkeeping (not its data) */
};

struct hy_cache;

/* Opens (or makes) the store, writes home what a crash left dirty in it,
 * keeps the clean lines whose files have a stamp (unverified until their
 * first use), and starts the threads. 0 or a negative errno with a
 * message in @why. */
struct hy_indirector;
int hy_cache_open(const struct hy_cache_config *cfg, struct hy_indirector *below,
		  struct hy_cache **out, char *why, size_t why_size);

/* Writes every dirty block home, moves the front buffer's clean blocks
 * into the store (unless cfg.no_keep: they are kept for the next mount,
 * the heat filter's hot ones as an eviction would, the others only into
 * free lines), checkpoints, marks the store clean, stops the threads,
 * frees. 0 or the first error (logged); frees anyway.
 * Dirty blocks home refused (a failing disk) stay journaled in the store,
 * which is left not clean: the next open writes them home. */
int hy_cache_close(struct hy_cache *cache);

ssize_t hy_cache_read(struct hy_cache *cache, const struct hy_cache_file *f, void *buf, size_t size,
		      off_t off);
ssize_t hy_cache_write(struct hy_cache *cache, const struct hy_cache_file *f, const void *buf,
		       size_t size, off_t off);

/* The same, following @hint (NULL: the mount's settings):
 *   - write policy: the hint's, for this request (bcache's cutoff still
 *     applies, at the hint's seq_cutoff);
 *   - admission: a class that bypasses is not cached (a read miss is not
 *     kept, a write goes around); low enters the cold queue; high is
 *     admitted from the front buffer to the store whatever its heat;
 *   - eviction preference: the LRU3 queue the file's new lines enter;
 *   - line size: a read miss reads the whole aligned line of line_size
 *     bytes around it (within the file) in one request below, and caches
 *     every block of it that was not cached.
 * Reconfiguration, with no request waiting for it: a file first reached
 * with a larger line size than before is queued for migration, and a
 * background pass (the cleaner's thread, at migrate_rate) reads in the
 * missing blocks of every line that has some cached (ReCA's merge; the
 * blocks already there are its per-page valid bits); a smaller one needs
 * no copy (each 4 KiB page keeps its own place in LRU3: ReCA's split with
 * the priority divided). A file with dirty blocks first reached with a
 * policy other than write-back is moved to the front of the cleaner's
 * queue: its dirty blocks go home at once. */
ssize_t hy_cache_read_hinted(struct hy_cache *cache, const struct hy_cache_file *f,
			     const struct hy_cache_hint *hint, void *buf, size_t size, off_t off);
ssize_t hy_cache_write_hinted(struct hy_cache *cache, const struct hy_cache_file *f,
			      const struct hy_cache_hint *hint, const void *buf, size_t size,
			      off_t off);

/* Around a change of the file's data at home that is not a write through
 * the cache (truncate, punch, collapse, a copy into it, a plain
 * fallocate): begin takes the file's gate exclusive, drops the blocks if
 * an outside change made them stale, sends the dirty blocks of
 * [@off, @off + @len) home and drops the range (@len UINT64_MAX: to the
 * end; 0: nothing, for a change of no data that still moves the ctime);
 * end moves the stamp past the change and releases the gate. end is called whatever
 * begin returned (0 or a negative errno: then the change must not run). */
int hy_cache_change_begin(struct hy_cache *cache, const struct hy_cache_file *f, uint64_t off,
			  uint64_t len);
void hy_cache_change_end(struct hy_cache *cache, const struct hy_cache_file *f);

/* Around an open with O_TRUNC, which truncates the home file itself: the
 * file's gate is held across it (no cleaner writes home meanwhile), and
 * end drops what the truncation left past the end (@f->object: the new
 * descriptor, or -1 when the open failed). */
void hy_cache_truncate_open_begin(struct hy_cache *cache, uint64_t file_id);
void hy_cache_truncate_open_end(struct hy_cache *cache, const struct hy_cache_file *f);

/* Whether the file has cached blocks (for hy_engine_has_copies). */
bool hy_cache_has_blocks(struct hy_cache *cache, uint64_t file_id);
/* Before the file is read at home other than through the cache (a copy
 * from it): its dirty blocks of the range go home. */
int hy_cache_write_home(struct hy_cache *cache, const struct hy_cache_file *f, uint64_t off,
			uint64_t len);

/* fsync: the file's dirty blocks durable (in the store's journal, or
 * home). Returns 1 when home needs no sync for them either (nothing the
 * cache changed there since the last home sync, and no change counted by
 * hy_cache_home_changed), 0 when it does (then the caller syncs home and,
 * if that succeeded, passes *@token, set here, to hy_cache_home_synced),
 * or a negative errno. A token that arrives after the file's entry was
 * freed and made again counts for nothing there: a new entry's changes
 * start above every token handed out. The home file's times are not
 * synced when 1 is returned: fsync then promises data and size. */
int hy_cache_fsync(struct hy_cache *cache, const struct hy_cache_file *f, uint64_t *token);
void hy_cache_home_synced(struct hy_cache *cache, const struct hy_cache_file *f, uint64_t token);

/* The home file changed other than through the cache (chmod, chown,
 * utimes, xattrs through the mount): the next fsync syncs home, which
 * hy_cache_fsync would otherwise find needs no sync. */
void hy_cache_home_changed(struct hy_cache *cache, uint64_t file_id);

/* The last handle of the file was closed: its dirty blocks are queued for
 * the cleaner, and its lines become first choices for eviction. */
void hy_cache_close_file(struct hy_cache *cache, const struct hy_cache_file *f);

/* The file is gone: its last name was removed and no handle is open, so
 * nobody can read its blocks again. They leave the cache without going
 * home (their journal records freed: a recovery does not send them to a
 * file that is gone), and the cache lets go of its way home, which gives
 * the file's room back to the disk at once, as on the plain directory,
 * instead of when the cleaner has written it all. 0 or a negative errno
 * (the journal's: the blocks are dropped from memory all the same). */
int hy_cache_forget_file(struct hy_cache *cache, uint64_t file_id);

/* A metadata change through the mount (chmod, utimes...) moves the home
 * ctime: begin says whether the cached blocks are current, end with that
 * answer moves the stamp after the change. Between the two the file's
 * gate is held exclusive (writes, the cleaner and truncations of the file
 * wait), so the change may not call into the cache for the same file; a
 * file id of 0 takes nothing. */
bool hy_cache_meta_begin(struct hy_cache *cache, const struct hy_cache_file *f);
void hy_cache_meta_end(struct hy_cache *cache, const struct hy_cache_file *f, bool fresh);

/* Every dirty block home, now (hybridctl flush, unmount). Returns the
 * blocks written or a negative errno. */
int64_t hy_cache_flush(struct hy_cache *cache);

/* Where the cache holds a block (hy_cache_where). */
enum hy_cache_place {
	HY_CACHE_NOT_CACHED = 0, /* below the cache: the BOPT or home */
	HY_CACHE_IN_DRAM = 1,	 /* the front buffer */
	HY_CACHE_IN_SSD = 2,	 /* a line of the cache store */
};
/* A run of @count blocks from @first with one answer; @dirty: newer than
 * below. A positive return stops the walk (hy_cache_where returns 0), a
 * negative one stops it with that error. */
typedef int (*hy_cache_where_fn)(void *arg, uint64_t first, uint64_t count,
				 enum hy_cache_place place, bool dirty);
/* For explain (fs/borg_handlers.c): the blocks [@first_block, +@nblocks)
 * of @file_id, as runs of consecutive blocks in one place with one dirty
 * state, in order, every block of the range in exactly one run. Read-only
 * and without I/O: a chunk of blocks at a time under front.lock and the
 * index's own locks, @fn called with no lock held (a snapshot per chunk,
 * not of the whole range). 0, -EINVAL, -ENOMEM, or what @fn returned. */
int hy_cache_where(struct hy_cache *cache, uint64_t file_id, uint64_t first_block, uint64_t nblocks,
		   hy_cache_where_fn fn, void *arg);

/* One pass of each thread's work, for tests without threads. */
void hy_cache_run_front_eviction(struct hy_cache *cache);
int64_t hy_cache_run_cleaner(struct hy_cache *cache);
/* Every queued line migration, with no pacing; the blocks read in. */
int64_t hy_cache_run_migrations(struct hy_cache *cache);

void hy_cache_get_stats(struct hy_cache *cache, struct hy_cache_stats *out);

/* Invariant check for tests: index, policy, line state and front buffer
 * agree. 0 or -EUCLEAN with the problem in @why. */
int hy_cache_check(struct hy_cache *cache, char *why, size_t why_size);

#endif
