/*
 * borg_internal.h - what the parts of BORG in the daemon share: struct
 * hy_borg in full, where home files are (struct place) and a search for
 * them (struct wanted, struct search), the small helpers they all use, and
 * the functions one part calls in another (hy_borg_<part>_<verb>). Only
 * reconfig/'s BORG files (borg.c, borg_homes.c, borg_reconfig.c,
 * borg_cleaner.c, borg_warm.c) include it; the API is
 * include/hybridfs/borg.h.
 *
 * The parts: borg.c (open and close, progress, what a crash left),
 * borg_homes.c (finding home files in the backing tree), borg_reconfig.c
 * (the reconfigurator: its copier, its run, hy_borg_reorganize),
 * borg_cleaner.c (flushing dirty BOPT blocks home, the cleaner thread),
 * borg_warm.c (the metadata warm-up and its thread).
 *
 * Locks (borg.h): borg->lock guards the progress and the threads' state
 * and is never held across I/O (the cleaner sleeps on cleaner_cond under
 * it, the warm-up thread on warm_cond); search_lock (borg_homes.c), a leaf, lets one search run at
 * a time (nftw's callback takes no argument). The engine's gates are taken as engine.h says: a
 * checkpoint takes every gate, a commit its file's.
 */
#ifndef HYBRIDFS_BORG_INTERNAL_H
#define HYBRIDFS_BORG_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <sqlite3.h>

#include "hybridfs/borg.h"
#include "hybridfs/engine.h"
#include "hybridfs/indirector.h"

#define BLOCK 4096

/* Where home files are: the backing tree, the state folder to skip in it,
 * and a descriptor of its root. */
struct place {
	const char *backing, *state_dir;
	int root_fd;
};

struct hy_borg {
	struct hy_borg_config config;
	struct place place; /* of the strings below and config.root_fd */
	char *state_dir, *db_path, *uuid, *backing, *bopt_dir;
	struct hy_bopt *bopt;
	struct hy_map *map;
	struct hy_map_journal *journal;
	sqlite3 *db; /* the reconfigurator's; used by one thread at a time */
	bool was_clean;
	uint64_t replayed;
	int64_t checkpointed_ns; /* the cleaner's last checkpoint (its thread only) */

	pthread_mutex_t lock; /* guards what follows */
	struct hy_borg_progress progress;
	struct hy_reorganize_params params;
	bool running, stop, joinable;
	uint64_t runs;
	pthread_t thread;
	pthread_t cleaner;
	pthread_cond_t cleaner_cond; /* wakes the cleaner to stop */
	bool cleaner_started;
	/* the metadata warm-up (borg_warm.c): its thread waits on warm_cond
	 * for warm_wanted; the read path arms and fires it through atomics */
	pthread_t warmer;
	pthread_cond_t warm_cond;
	bool warmer_started, warm_wanted;
	struct hy_borg_warm warm;
	atomic_bool warm_armed;
	_Atomic uint64_t warm_armed_at;	  /* the indirector's BOPT reads when armed */
	_Atomic uint64_t warm_seen_reads; /* ... at the last clock tick a read was noted */
	_Atomic int64_t warm_last_read_ns;
	struct timespec started;
	/* relocated blocks of removed files freed since mount (hy_borg_forget_file,
	 * hy_borg_sweep_gone) */
	uint64_t forgotten_files, forgotten_blocks;
};

struct wanted {
	uint64_t file_id;
	uint64_t dev, ino;
	int64_t birth_ns;
	char *path;  /* relative to the backing directory, once found */
	bool walked; /* found by the walk: its row's path is out of date */
	int fd;	     /* open for the copy, or -1 */
};

struct search {
	struct wanted *w; /* sorted by (dev, ino) */
	size_t n, found;
	size_t by_path, walked; /* found by their remembered path; entries a walk visited */
	size_t backing_len;
	dev_t state_dev;
	ino_t state_ino;
	bool have_state;
};

/* ---- small helpers ------------------------------------------------- */

static inline int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Saves the map while nothing changes it. */
static inline int checkpoint_with(struct hy_borg *b, sqlite3 *db, char *why, size_t why_size)
{
	/* every gate: no change of the map or the journal meanwhile; two
	 * checkpoints (the cleaner's, a reorganization's) take turns there */
	return hy_indirector_checkpoint(hy_engine_indirector(b->config.engine), db, why, why_size);
}

static inline int checkpoint(struct hy_borg *b, char *why, size_t why_size)
{
	return checkpoint_with(b, b->db, why, why_size);
}

/* ---- functions one part calls in another, by the file that has them ---- */

/* borg.c */
bool hy_borg_progress_stopping(struct hy_borg *b);
void hy_borg_progress_set_phase(struct hy_borg *b, enum hy_borg_phase phase);

/* borg_homes.c */
int hy_borg_homes_find_files(const struct place *b, sqlite3 *db, const uint64_t *ids, size_t n,
			     struct search *s, char *why, size_t why_size);
void hy_borg_homes_search_free(struct search *s);
struct wanted *hy_borg_homes_wanted_by_id(const struct search *s, uint64_t file_id);
int hy_borg_homes_open_home(const struct place *b, const struct wanted *w, int access, int *fd_out);

/* borg_cleaner.c */
void *hy_borg_cleaner_main(void *arg);
/* borg_warm.c: the warm-up thread, and arming it (after a mount that
 * found a map, after a reorganization). */
void *hy_borg_warm_main(void *arg);
void hy_borg_warm_arm(struct hy_borg *b);

#endif
