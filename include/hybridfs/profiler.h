/*
 * profiler.h - BORG's I/O profiler: every read and write that reaches the
 * daemon is logged into SQLite, without a request ever waiting for it.
 *
 * What it records (state.h, table access_log): the time, the process (its
 * own row in processes: pid, comm, exe), hybridfs's file id (identity.h:
 * stable across renames and remounts, keyed by the backing inode and its
 * birth time), the byte range, R or W, the request class and, where the backing
 * filesystem answers FIEMAP, the physical block. The class is ReCA's
 * (reca.h), which the engine asked for when it served the request: the
 * caller hands it over in the ticket (hy_profiler_ticket()); the profiler
 * classifies nothing itself. Processes are ReCA's process table's: the
 * profiler numbers them (from the database's next free id) and writes
 * their rows when ReCA makes one.
 *
 * How it stays off the I/O path:
 *   - a request pushes one 48-byte record into a lock-free ring (ring.h);
 *     when the ring is full the record is dropped and counted, the request
 *     goes on (invariant 5);
 *   - a named writer thread, "hy-profiler", wakes on its own every
 *     HY_PROFILER_FLUSH_MS (or when the ring passes half full), pops records
 *     in batches and inserts them in one transaction with prepared
 *     statements; producers never make a system call to wake it;
 *   - a process's exe is read from /proc once, when ReCA's table makes
 *     the process (its name is ReCA's, read at most once a second);
 *   - file ids are resolved at open, not per request (identity.h; the
 *     writer thread's transactions carry the identity's rows too, so that
 *     a record never names a file whose row a crash could lose before it);
 *   - physical addresses come from a per-handle extent cache filled by
 *     FIEMAP at most once a second per open file.
 *
 * Attribution: reads belong to the process that asks (the FUSE request's
 * pid). With the kernel's write-back cache, writes reach the daemon from
 * kernel threads; they are attributed to the process that opened the file
 * handle, as are requests with no pid.
 *
 * Retention: rows older than max_age_s, and all but the newest max_rows,
 * are pruned by the writer thread every HY_PROFILER_PRUNE_S seconds. So
 * are the rows of files and processes that nothing refers to any more: a
 * file said gone (hy_identity_file_gone) once the log has no row of it
 * left and neither the indirection map, the master graph nor a plan names
 * it (identity.h); a process not running (its pid gone at two prunes in a row) once the
 * log has no row of it left. The row with the highest id always stays, so
 * that no id is ever given twice.
 *
 * Who calls it: fs/ops_files.c (open, create, after a read or write),
 * fs/ops.c (a handle's close; the identity module, hy_profiler_identity(),
 * also from fs/ops_names.c), fs/main.c (new, free; the
 * "sync" control request's hy_profiler_sync; the identity for explain's
 * context), fs/status.c (stats), fs/cache_glue.c (the identity, for the
 * cache's ids made durable); the unit tests and bench/profiler-writer.c.
 *
 * Memory: struct hy_profiler owns its ring, its SQLite connection, the
 * writer thread and the identity module (identity.h), whose statements use
 * that connection; it borrows ReCA's module (config.reca), which must
 * outlive it. struct
 * hy_profile_handle is embedded in the caller's open file and owns nothing
 * but its extent cache.
 *
 * Locks, in order: handle->lock (extent cache) is a leaf; after a read or
 * write the profiler takes no lock but that one (and queue_lock to wake
 * the writer early, once, past half a ring; ReCA's stripe for a short
 * request's bytes); the writer thread calls into ReCA (its stripe and
 * mount locks, leaves) with none of its own held;
 * profiler->queue_lock protects the pending process rows and the sync
 * state; the identity's lock is taken under it (a transaction's begin and
 * end, a sync's look at the file rows), never the other way round.
 */
#ifndef HYBRIDFS_PROFILER_H
#define HYBRIDFS_PROFILER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "hybridfs/reca.h"

#define HY_PROFILER_FLUSH_MS 50
#define HY_PROFILER_PRUNE_S  10
#define HY_PROFILER_EXTENTS  32 /* extents cached per open file */

enum hy_profile_mode {
	HY_PROFILE_READ = 0,
	HY_PROFILE_WRITE = 1,
};

/* One logged request, as it travels through the ring. */
struct hy_profile_record {
	int64_t ts_ns; /* CLOCK_REALTIME */
	uint64_t file_id;
	uint64_t offset;
	int64_t phys_block; /* -1 when unknown */
	uint32_t length;
	uint32_t process_id;
	uint8_t mode;  /* enum hy_profile_mode */
	uint8_t klass; /* request class + 1, 0 when unclassified */
	uint8_t pad[6];
};

struct hy_profiler_config {
	const char *db_path;  /* the state database (schema 2 or later) */
	size_t ring_capacity; /* records; rounded up to a power of two */
	int64_t max_age_s;    /* prune rows older than this; 0 keeps all */
	int64_t max_rows;     /* keep at most this many rows; 0 keeps all */
	struct hy_reca *reca; /* ReCA's process table (HY_RECA_PROCESSES); borrowed */
};

/* One open file's profiling state; in the daemon's struct hy_file. */
struct hy_profile_handle {
	uint64_t file_id;
	uint32_t opener;      /* process id of the process that opened it */
	pid_t opener_pid;     /* its pid, for requests that carry none */
	pthread_mutex_t lock; /* protects the extent cache below */
	int64_t fiemap_at_ns; /* last FIEMAP, to do it at most once a second */
	unsigned extents;
	struct {
		uint64_t logical, physical, length; /* bytes; physical 0: unknown */
	} extent[HY_PROFILER_EXTENTS];
};

struct hy_profiler_stats {
	uint64_t written; /* records committed to the database */
	uint64_t dropped; /* records lost to a full ring */
	uint64_t queued;  /* records in the ring now */
	uint64_t pruned;  /* rows removed by retention */
	uint64_t batches; /* transactions committed */
	uint64_t errors;  /* failed inserts (logged) */
	uint64_t processes_seen;
	uint64_t files_seen;
};

/* A read or write the engine served, for hy_profiler_end(). */
struct hy_profile_ticket {
	pid_t pid; /* the process it was for (0 given: the opener) */
	uint32_t process_id;
	enum hy_profile_mode mode;
	uint8_t klass; /* request class + 1, 0 when unclassified */
	uint64_t offset;
	uint32_t length;
};

struct hy_profiler;

/* Opens the database, loads the next free ids, starts the writer thread.
 * Returns 0 or a negative errno with a message in @why. */
int hy_profiler_new(const struct hy_profiler_config *config, struct hy_profiler **out, char *why,
		    size_t why_size);

/* Drains the ring into the database, stops the writer, closes. */
void hy_profiler_free(struct hy_profiler *profiler);

/* Sets up @handle for a file opened as @fd whose backing identity is @st,
 * by @pid; @known_id is the inode's cached file id or 0, and the id used is
 * returned in handle->file_id (for the caller to cache). A new id's row
 * keeps the file's path relative to the backing directory (what /proc says
 * of @fd), or @name, the file's name, when that cannot be told; BORG finds
 * the file there first (borg.h). Returns 0 or a negative
 * errno; on error the handle still works, with file id 0. The id is the
 * identity module's (hy_identity_file_id()). */
int hy_profiler_open(struct hy_profiler *profiler, struct hy_profile_handle *handle, int fd,
		     const struct stat *st, uint64_t known_id, const char *name, pid_t pid);
void hy_profiler_close(struct hy_profile_handle *handle);

/* The file ids (identity.h), owned by the profiler; NULL for NULL. */
struct hy_identity *hy_profiler_identity(struct hy_profiler *profiler);

/* The ticket of a read or write of @handle by @pid (0, or a write from
 * the write-back cache: the process that opened the handle) served with
 * ReCA's @answer (the engine's, hy_engine_read_as(); NULL: none). */
void hy_profiler_ticket(const struct hy_profile_handle *handle, pid_t pid,
			enum hy_profile_mode mode, uint64_t offset, uint32_t length,
			const struct hy_reca_answer *answer, struct hy_profile_ticket *ticket);
/* Logs it with the @done bytes it moved (<= 0: nothing logged), and tells
 * ReCA's counts of the bytes it did not move. Never blocks on I/O. */
void hy_profiler_end(struct hy_profiler *profiler, struct hy_profile_handle *handle, int fd,
		     const struct hy_profile_ticket *ticket, ssize_t done);
/* A request already served, classified by ReCA here and logged (tests). */
void hy_profiler_log(struct hy_profiler *profiler, struct hy_profile_handle *handle, int fd,
		     pid_t pid, enum hy_profile_mode mode, uint64_t offset, uint32_t length);

/* Waits until every record pushed before the call is committed (or was
 * dropped), and every process and file row queued before it. Returns 0;
 * or the negative errno (-ENOSPC: the state folder's disk is full) of
 * the first transaction begun after the call when it failed (its rows
 * stay queued and are retried by the next one; its records are lost and
 * counted as errors); -EIO when the writer has failed. Not a promise of
 * durability: commits do not wait for the disk. */
int hy_profiler_sync(struct hy_profiler *profiler);

/* Runs the retention rules now, after a sync (they also run on their own
 * every HY_PROFILER_PRUNE_S seconds). Returns 0 or -EIO. */
int hy_profiler_prune(struct hy_profiler *profiler);

void hy_profiler_get_stats(struct hy_profiler *profiler, struct hy_profiler_stats *out);

#endif
