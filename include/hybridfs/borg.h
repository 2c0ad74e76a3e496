/*
 * borg.h - BORG in the daemon: the BOPT, the indirection map and its
 * journal opened at mount and closed at unmount, and the reconfigurator
 * that carries a reorganization's plan out while the filesystem is in use.
 *
 * What it is for: fs/main.c opens it after mounting (hy_borg_open), which
 * puts the BOPT, the map and the journal in the indirector (indirector.h,
 * the path below the cache, hy_indirector_set_bopt); `hybridctl
 * reorganize` asks the control server for a reorganization, which runs on
 * a named thread, "hy-reconfig":
 *   1. plan (reorganize.h): analyzer and planner over the access log, for
 *      the BOPT's read region, with the home files' sizes (found as the
 *      copy finds them) so that small files read in part are planned
 *      whole; the graph, the run and the plan are saved; then the plan
 *      is weighed on a model of the disk (gain.h): one that saves less
 *      than HY_GAIN_MARGIN is held back (nothing moves), and where
 *      nothing relocated is faster every extent goes home;
 *   2. drop: dirty blocks go home (a flush), then extents the plan moves
 *      or whose room it needs leave the map (the rest stay: the diff's
 *      "left") (journaled, durable; one dirtied since
 *      stays, and nothing is copied onto it: hy_indirector_drop), then a
 *      barrier (every indirector gate taken once) waits out reads that
 *      may still use their old BOPT blocks, so those blocks can be
 *      written again;
 *   3. copy, in plan order: each range's home file is found (the files
 *      table's dev/ino/birth, searched for in the backing tree), clipped
 *      at the file's end (its last partial block zero-padded), read and
 *      written to the BOPT; once a batch is
 *      durable (fdatasync of the BOPT), each range is committed under its
 *      file's indirector gate, held exclusive (hy_indirector_copy_begin,
 *      _copy_read, _copy_commit): if no write, truncation or copy of the
 *      file began since the range was read, and its ctime is the same,
 *      the relocation and the file's stamp are journaled and the map
 *      changed; otherwise the copy is thrown away (counted as skipped).
 *      So a block's map entry changes only after its new copy is durable,
 *      every block has one current location at every moment (DESIGN.md
 *      invariant 6), and a write that races a copy is never lost;
 *   4. checkpoint: the map saved into the state database with every
 *      indirector gate held, the journal emptied (hy_indirector_checkpoint).
 * The copy is rate-limited (reorg_rate=, bytes per second) and yields
 * (sleeps a little) whenever the mount served requests during the last
 * chunk. A reorganization stopped by unmount or a crash leaves a
 * consistent map: what was committed stays, the rest is home.
 *
 * At open: the BOPT is made when missing (a new generation: a map saved
 * for an earlier BOPT is refused and the map starts empty), made again
 * when bopt_size= asks for another size, and checked; the map is loaded
 * and the journal replayed. A journal that fails replay (damaged in the
 * middle) is set aside as bopt-map.journal.damaged and the map keeps what
 * its records before the damage gave (their dirty marks still send their
 * blocks home); the stamp check covers releases among the lost records.
 *
 * Who calls it: fs/main.c (open, close; the BOPT's device and descriptor
 * for emulate=; hy_borg_left_dirty for a mount that leaves the BOPT out);
 * fs/borg_handlers.c, the control handlers (reorganize, with the sweep of
 * files removed behind the mount's back, hy_borg_sweep_gone; progress,
 * flush, explain: hy_borg_map) and BORG's part of status (info); fs/ops.c
 * for files removed through the mount (hy_borg_forget_file);
 * fs/cache_glue.c (hy_borg_open_homes, the cache's recovery).
 *
 * Writes: with bopt_writes, a write to relocated blocks goes into their
 * BOPT copy, marked dirty (indirector.h); dirty blocks go home at close,
 * fsync, `hybridctl flush` (hy_borg_flush), from the cleaner thread
 * ("hy-cleaner") every HY_BORG_CLEAN_SECONDS, and at unmount (DESIGN.md
 * invariant 3). The cleaner also checkpoints the map now and then
 * (HY_BORG_CHECKPOINT_*), which bounds the journal and saves the stamps
 * writes refreshed. A third thread, "hy-warm", reads the relocated files'
 * directories and inodes when a chain of them starts being read
 * (struct hy_borg_warm, hy_borg_note_read).
 *
 * Memory: struct hy_borg owns the BOPT, the map, the journal, its SQLite
 * connection and its threads; the indirector borrows the first three between
 * open and close. Locks: borg->lock guards the progress, the threads'
 * state, the warm-up's figures and the counts of removed files freed; it
 * is never held across I/O (the read path's hy_borg_note_read uses
 * atomics, and the lock only to wake the warm-up). The reconfigurator takes no gate and
 * holds no journal ticket itself: the indirector's operations do
 * (indirector.h).
 */
#ifndef HYBRIDFS_BORG_H
#define HYBRIDFS_BORG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/reorganize.h"

struct hy_engine;
struct hy_map;

#define HY_BORG_DAMAGED_SUFFIX ".damaged"
/* How often the cleaner looks for dirty blocks; it checkpoints the map
 * when the journal holds HY_BORG_CHECKPOINT_RECORDS records, or holds any
 * HY_BORG_CHECKPOINT_SECONDS after the last checkpoint. (-D at build time
 * may shorten them, to watch the cleaner work.) */
#ifndef HY_BORG_CLEAN_SECONDS
#define HY_BORG_CLEAN_SECONDS 30
#endif
#ifndef HY_BORG_CHECKPOINT_RECORDS
#define HY_BORG_CHECKPOINT_RECORDS 16384
#endif
#ifndef HY_BORG_CHECKPOINT_SECONDS
#define HY_BORG_CHECKPOINT_SECONDS 600
#endif

struct hy_borg_config {
	const char *state_dir, *db_path, *uuid;
	const char *backing; /* the backing directory, for messages; the file search
				walks root_fd (a mount in place covers the path) */
	int root_fd;	     /* its descriptor (borrowed) */
	/* the default BOPT's folder, BACKING/.hybridfs (NULL: state_dir); the
	 * walk of the backing tree skips it */
	const char *bopt_dir;
	const char *bopt_spec; /* bopt=: NULL for BOPT_DIR/bopt */
	bool bopt_given;       /* bopt= or bopt_size= was given */
	uint64_t bopt_size;    /* bytes, for a BOPT file */
	uint64_t rate;	       /* bytes per second a copy may take; 0: no limit */
	bool bopt_writes;      /* writes to relocated blocks go to the BOPT */
	uint64_t readahead;    /* bopt_readahead: bytes read ahead of a chain; 0: off */
	struct hy_engine *engine;
	/* a counter of the mount's requests, to yield to them (may be NULL) */
	uint64_t (*activity)(void *ctx);
	void *activity_ctx;
};

enum hy_borg_phase {
	HY_BORG_IDLE,
	HY_BORG_PLANNING,
	HY_BORG_DROPPING,
	HY_BORG_COPYING,
	HY_BORG_CHECKPOINTING,
	HY_BORG_DONE,
	HY_BORG_FAILED,
};

struct hy_borg_progress {
	enum hy_borg_phase phase;
	uint64_t run;					  /* reorganizations started since mount */
	uint64_t generation;				  /* the plan's */
	uint64_t requests, vertices, edges, cut_vertices; /* the analyzer's */
	uint64_t ranges, planned_blocks;		  /* the plan's */
	uint64_t kept_blocks, dropped_blocks;		  /* the diff's */
	uint64_t copy_blocks;				  /* to copy */
	uint64_t done_blocks;	 /* of copy_blocks: copied or skipped so far */
	uint64_t copied_blocks;	 /* committed into the BOPT */
	uint64_t skipped_ranges; /* files gone, changed during the copy, clipped */
	uint64_t skipped_blocks;
	/* the plan weighed on a model of the disk (gain.h): the period's
	 * reads with it, as the disk was, with nothing relocated; and what
	 * was done (enum hy_gain_decision: go, hold, all home) */
	bool gain_known;
	double model_planned_ms, model_current_ms, model_home_ms;
	int decision;
	double seconds;	  /* since the run started */
	char error[1024]; /* HY_BORG_FAILED: why */
};

struct hy_borg_info {
	char path[4096];
	uint64_t generation;
	uint64_t total_blocks, read_blocks, write_blocks;
	bool was_clean;	   /* the last unmount was clean */
	uint64_t replayed; /* journal records applied at open */
	uint64_t map_files, map_extents, map_blocks, dirty_blocks;
	/* removed files whose relocated blocks were freed since mount, and
	 * those blocks (hy_borg_forget_file, hy_borg_sweep_gone) */
	uint64_t removed_files, removed_blocks;
};

/* The metadata warm-up (issue 18, item 6): when a chain of relocated
 * files starts being read (the first read served from the BOPT after a
 * mount, a reorganization, or a minute with no read), the directories that
 * hold files the map holds are read whole, then those files' inodes looked
 * up, each in inode order, by a
 * thread of its own, so that the workload's lookups find them cached
 * instead of reading the inode tables in the order it names files. */
struct hy_borg_warm {
	uint64_t runs;	      /* warm-ups since mount */
	uint64_t files;	      /* files whose metadata they read */
	uint64_t directories; /* directories they read whole */
	uint64_t missing;     /* files not where the state remembered them */
	double last_seconds;  /* the last one's time */
	bool armed;	      /* the next BOPT read starts one */
};

struct hy_borg;

/* Opens (making it when needed) the BOPT, loads the map and replays the
 * journal, and puts them in the engine. Returns 0 or a negative errno with
 * a message; -ENOSPC when a BOPT file cannot be allocated. */
int hy_borg_open(const struct hy_borg_config *config, struct hy_borg **out, char *why,
		 size_t why_size);

/* Starts a reorganization with @params (capacity_blocks 0: the whole read
 * region; more is refused; save is forced on). -EBUSY when one is running,
 * with a message. */
int hy_borg_reorganize(struct hy_borg *borg, const struct hy_reorganize_params *params, char *why,
		       size_t why_size);

void hy_borg_get_progress(struct hy_borg *borg, struct hy_borg_progress *out);
void hy_borg_get_info(struct hy_borg *borg, struct hy_borg_info *out);
/* The read path, after each read through the mount (fs/ops_files.c):
 * lock-free unless it starts a warm-up. */
void hy_borg_note_read(struct hy_borg *borg);
void hy_borg_get_warm(struct hy_borg *borg, struct hy_borg_warm *out);
const char *hy_borg_phase_name(enum hy_borg_phase phase);

/* Writes every dirty BOPT block home (the files are found as the
 * reconfigurator finds them) and marks them clean: `hybridctl flush`, the
 * cleaner thread (every HY_BORG_CLEAN_SECONDS while there are any), and
 * unmount. Returns 0 with the blocks made clean in @synced, or a negative
 * errno with a message. Files not found keep their blocks in the BOPT,
 * but for files removed through the mount (their rows marked gone): their
 * blocks are data nobody can read again, and leave the map. */
int hy_borg_flush(struct hy_borg *borg, uint64_t *synced, char *why, size_t why_size);

/* The file @file_id is gone for good: its last name went through the
 * mount and no handle of it is open (fs/ops.c, hy_ops_forget_if_gone, at
 * unlink, rename over it, or its last close). Its relocated extents leave
 * the map now (hy_indirector_drop: journaled, under its gate, then a
 * barrier), so their BOPT room is free for the next plan and status no
 * longer counts them. Blocks written into the BOPT and not home (the last
 * close failed to send them) stay until a flush. Called with no gate of
 * the caller's held. 0 or a negative errno (logged); *@freed (may be NULL)
 * gets the blocks freed. A file still open is not gone: while a handle
 * can read it its copies serve it, and at its last close its dirty blocks
 * go home first (hy_engine_close), then this frees the rest. */
int hy_borg_forget_file(struct hy_borg *borg, uint64_t file_id, uint64_t *freed);

/* Files removed behind the mount's back: every file with relocated
 * extents is looked for at home (as the reconfigurator finds files: its
 * row's path, else one walk); the extents of those not found leave the
 * map as above. fs/borg_handlers.c runs it when a reorganization is
 * asked for, before the plan. 0 with the files and blocks freed, or a
 * negative errno with a message. */
int hy_borg_sweep_gone(struct hy_borg *borg, uint64_t *files, uint64_t *freed, char *why,
		       size_t why_size);

/* The map, for explain (lookups only). */
struct hy_map *hy_borg_map(struct hy_borg *borg);

/* The BOPT's device (the daemon's HDD emulation wraps it), and its open
 * file (-1 without a BOPT), for where the emulation places it. */
struct hy_device *hy_borg_bopt_device(struct hy_borg *borg);
int hy_borg_bopt_fd(struct hy_borg *borg);

/* Stops a running reorganization (between chunks), checkpoints the map,
 * marks the BOPT clean, takes the map out of the engine and frees it all.
 * Call with no request in flight. */
void hy_borg_close(struct hy_borg *borg);

/* Opens for writing the home files of @ids (sorted, unique), found
 * through the state database's files table (device, inode, birth time):
 * at the path their rows keep, else by one walk of the backing tree
 * through @root_fd (skipping the folder @state_dir, the BOPT's or the state
 * folder, when it is inside; @backing names the tree in messages; the rows
 * of files it finds learn their paths), each checked
 * to be that very file: fds[i] is its descriptor, or -1 when it is gone. For the
 * cache's recovery at mount, which runs whether or not a BOPT is in use.
 * Returns 0 or a negative errno with a message in @why (then every fds[i]
 * is -1 or open: the caller closes those). */
int hy_borg_open_homes(const char *db_path, const char *backing, const char *state_dir, int root_fd,
		       const uint64_t *ids, size_t n, int *fds, char *why, size_t why_size);

/* For a mount that leaves the default BOPT in @bopt_dir out (fs/main.c;
 * the map journal is in @state_dir):
 * the blocks written through an earlier mount and not home yet, as the
 * map saved in @db and its journal say (opened for @uuid, read, closed),
 * which only a mount that uses the BOPT writes home; 0 when the BOPT, the
 * map or the journal cannot be opened. */
uint64_t hy_borg_left_dirty(const char *state_dir, const char *bopt_dir, const char *uuid,
			    struct sqlite3 *db);

#endif
