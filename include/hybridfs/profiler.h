/*
 * profiler.h - BORG's I/O profiler: every read and write that reaches the
 * daemon is logged into SQLite, without a request ever waiting for it.
 *
 * What it records (state.h, table access_log): the time, the process (its
 * own row in processes: pid, comm, exe), hybridfs's file id (files: stable
 * across renames and remounts, keyed by the backing inode and its birth
 * time), the byte range, R or W, the request class (ReCA's, against the
 * process's last 64 requests; classify.h) and, where the backing
 * filesystem answers FIEMAP, the physical block. Before a request is
 * served, hy_profiler_begin() also gives the cache the policy of the
 * process's workload category (category.h, workload_policy.h).
 *
 * How it stays off the I/O path:
 *   - a request pushes one 48-byte record into a lock-free ring (ring.h);
 *     when the ring is full the record is dropped and counted, the request
 *     goes on (invariant 5);
 *   - a named writer thread, "hy-profiler", wakes on its own every
 *     HY_PROFILER_FLUSH_MS (or when the ring passes half full), pops records
 *     in batches and inserts them in one transaction with prepared
 *     statements; producers never make a system call to wake it;
 *   - process names are read from /proc once per process (again at most
 *     once a second, to notice exec and pid reuse), not per request; the
 *     process table is 1024 buckets of 4 slots by pid, so that colliding
 *     pids do not push each other out while they run;
 *   - file ids are resolved at open, not per request: from the inode's
 *     cached id, else one indexed SQLite read, else a new id (its row is
 *     written by the writer thread);
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
 * file said gone (hy_profiler_file_gone) once the log has no row of it
 * left and neither the indirection map, the master graph nor a plan names
 * it; a process not running (its pid gone at two prunes in a row) once the
 * log has no row of it left. The row with the highest id always stays, so
 * that no id is ever given twice.
 *
 * Who calls it: fs/ops.c (open, create, read, write, metadata counts, the
 * file id of an inode entry made without one, files gone or renamed),
 * fs/main.c (new, free), fs/control_server.c and fs/status.c (stats, top
 * processes, sync), fs/cache_glue.c (the cache's ids made durable).
 *
 * Memory: struct hy_profiler owns its ring, its two SQLite connections
 * (writer's, and a read connection for file ids), the process table and the
 * writer thread. struct hy_profile_handle is embedded in the caller's open
 * file and owns nothing but its extent cache.
 *
 * Locks, in order: handle->lock (extent cache) is a leaf; the process
 * table is striped (one of HY_PROFILER_STRIPES mutexes per slot), a leaf;
 * profiler->queue_lock protects the pending process and file rows and the
 * sync state; profiler->read_lock serializes the read connection and the
 * making of file ids (so that one file never gets two), and is held across
 * one indexed SQLite read at open, never in read or write;
 * profiler->durable_lock (a leaf, never with queue_lock) serializes the
 * syncs of the WAL in hy_profiler_sync_ids(). Order: read_lock before
 * queue_lock.
 */
#ifndef HYBRIDFS_PROFILER_H
#define HYBRIDFS_PROFILER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "hybridfs/cache.h" /* struct hy_cache_hint */
#include "hybridfs/category.h"
#include "hybridfs/classify.h"
#include "hybridfs/workload_policy.h"

#define HY_PROFILER_FLUSH_MS  50
#define HY_PROFILER_PRUNE_S   10
#define HY_PROFILER_PROCESSES 1024 /* process table buckets, by pid */
#define HY_PROFILER_WAYS      4	   /* slots per bucket */
#define HY_PROFILER_STRIPES   64
#define HY_PROFILER_EXTENTS   32 /* extents cached per open file */

enum hy_profile_mode {
	HY_PROFILE_READ = 0,
	HY_PROFILE_WRITE = 1,
};

/* Metadata operations counted per process (ReCA: they matter more than
 * user data; a metadata-heavy process gets the policy table's metadata
 * timeout, see hy_profiler_count_meta()). */
enum hy_profile_meta { HY_META_LOOKUP, HY_META_GETATTR, HY_META_READDIR, HY_META_COUNT };

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
	bool no_classify;     /* reca=off: no request classes, categories or policies */
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

/* Per-process figures for `hybridctl status`. */
struct hy_profiler_process {
	pid_t pid;
	uint32_t process_id;
	char comm[16];
	uint64_t reads, writes, bytes_read, bytes_written;
	uint64_t meta[HY_META_COUNT];
	uint64_t classes[2][HY_CLASS_COUNT]; /* [mode][class] (classify.h) */
	enum hy_category category;	     /* its workload category (category.h) */
	/* the category whose policy it follows: its own, or while it has
	 * none its group's (grouped: same program, same file) */
	enum hy_category policy_category;
	bool grouped;
	bool metadata_priority; /* metadata heavy: its lookups get the metadata timeout */
};

/* A read or write between hy_profiler_begin() and hy_profiler_end(). */
struct hy_profile_ticket {
	pid_t pid;
	uint32_t process_id;
	enum hy_profile_mode mode;
	uint8_t klass; /* request class + 1, 0 when unclassified */
	uint64_t offset;
	uint32_t length;
	bool hinted;		   /* a policy table is in force: @hint is its word */
	enum hy_category category; /* the one whose row gave @hint */
	struct hy_cache_hint hint;
};

struct hy_profiler;

/* Opens the database, loads the next free ids, starts the writer thread.
 * Returns 0 or a negative errno with a message in @why. */
int hy_profiler_new(const struct hy_profiler_config *config, struct hy_profiler **out, char *why,
		    size_t why_size);

/* Drains the ring into the database, stops the writer, closes. */
void hy_profiler_free(struct hy_profiler *profiler);

/* hybridfs's process id for @pid, reading /proc when it is new or its
 * entry is over a second old. Never fails: an unreadable process gets the
 * name "?". Counts nothing. */
uint32_t hy_profiler_process(struct hy_profiler *profiler, pid_t pid);

/* Sets up @handle for a file opened as @fd whose backing identity is @st,
 * by @pid; @known_id is the inode's cached file id or 0, and the id used is
 * returned in handle->file_id (for the caller to cache). A new id's row
 * keeps the file's path relative to the backing directory (what /proc says
 * of @fd), or @name, the file's name, when that cannot be told; BORG finds
 * the file there first (borg.h). Returns 0 or a negative
 * errno; on error the handle still works, with file id 0. */
int hy_profiler_open(struct hy_profiler *profiler, struct hy_profile_handle *handle, int fd,
		     const struct stat *st, uint64_t known_id, const char *name, pid_t pid);
void hy_profiler_close(struct hy_profile_handle *handle);

/* The id the file table holds for the file @fd (any descriptor, O_PATH
 * too) whose backing identity is @st, or 0 when it has none; never makes
 * one. For the paths that change a file's data without a handle of it
 * (truncate and chmod by name, O_TRUNC, unlink), whose inode entry may
 * have been made after the kernel forgot the one that knew the id. Takes
 * read_lock across one indexed SQLite read. */
uint64_t hy_profiler_find_file(struct hy_profiler *profiler, int fd, const struct stat *st);

/* @file_id's file is gone: its last name went while no handle was open
 * (fs/ops.c, after the cache has let go of it), so that nothing can reach
 * it through the mount again. Its row is marked (by the writer thread) and
 * pruned once nothing refers to it. Never blocks on I/O; 0 is ignored. */
void hy_profiler_file_gone(struct hy_profiler *profiler, uint64_t file_id);

/* @file_id's file was renamed through the mount; @fd is a descriptor of it
 * (O_PATH too) at its new name. Its row's path follows (the writer thread
 * sets it with its next transaction), so that BORG's flush finds the file
 * at one lookup instead of a walk of the tree (an editor's save renames a
 * new file over the old one). Never blocks on I/O: one readlink(2) of
 * /proc; 0 and a negative @fd are ignored. */
void hy_profiler_file_moved(struct hy_profiler *profiler, uint64_t file_id, int fd);

/* Before a read or write of @handle by @pid (0, or a write from the
 * write-back cache: the opener) is served: counts it, classifies it in
 * its process's history (ReCA's request class), and, when a policy table
 * is in force, puts in @ticket what the row of the process's category
 * says for it (the hint the cache follows). Never blocks on I/O, never
 * fails; O(log n) in the history. */
void hy_profiler_begin(struct hy_profiler *profiler, struct hy_profile_handle *handle, pid_t pid,
		       enum hy_profile_mode mode, uint64_t offset, uint32_t length,
		       struct hy_profile_ticket *ticket);
/* ... after: logs it with the @done bytes it moved (<= 0: nothing logged). */
void hy_profiler_end(struct hy_profiler *profiler, struct hy_profile_handle *handle, int fd,
		     const struct hy_profile_ticket *ticket, ssize_t done);
/* Both at once, for a request already served (tests). */
void hy_profiler_log(struct hy_profiler *profiler, struct hy_profile_handle *handle, int fd,
		     pid_t pid, enum hy_profile_mode mode, uint64_t offset, uint32_t length);

/* Counts one metadata operation of @pid. Returns the policy table's
 * metadata timeout (seconds) when the process is metadata heavy (at least
 * 16 metadata operations lately and at least the table's share of its
 * operations), else 0: the caller replies with the longer of it and the
 * mount's timeouts (ReCA's metadata priority: the kernel's dentry and
 * attribute caches are a FUSE mount's metadata cache). */
double hy_profiler_count_meta(struct hy_profiler *profiler, pid_t pid, enum hy_profile_meta kind);

/* Puts @table in force (a copy); requests see the old table or the new
 * one, whole. 0 or -ENOMEM. Callers serialize (the control loop). */
int hy_profiler_set_policy(struct hy_profiler *profiler,
			   const struct hy_workload_policy_table *table);
/* The table in force, copied; false when none was set. */
bool hy_profiler_get_policy(struct hy_profiler *profiler, struct hy_workload_policy_table *out);

/* Waits until every record pushed before the call is committed (or was
 * dropped), and every process and file row queued before it. Returns 0;
 * or the negative errno (-ENOSPC: the state folder's disk is full) of
 * the first transaction begun after the call when it failed (its rows
 * stay queued and are retried by the next one; its records are lost and
 * counted as errors); -EIO when the writer has failed. Not a promise of
 * durability: commits do not wait for the disk. */
int hy_profiler_sync(struct hy_profiler *profiler);

/* For the cache's fsync (cache.h, ids_durable): waits until every file row
 * queued before the call is committed and durable (the WAL synced once
 * for every row committed so far; nothing is synced when they were made
 * durable already), so that after a crash the rows name the files that
 * recovery finds in the store's journal. Does not wait for the access
 * log's records. Returns 0, a negative errno as hy_profiler_sync() (the
 * rows stay queued), or the errno of the sync. Takes queue_lock (not
 * across I/O) and durable_lock, a leaf, across one fdatasync. */
int hy_profiler_sync_ids(struct hy_profiler *profiler);

/* Runs the retention rules now, after a sync (they also run on their own
 * every HY_PROFILER_PRUNE_S seconds). Returns 0 or -EIO. */
int hy_profiler_prune(struct hy_profiler *profiler);

void hy_profiler_get_stats(struct hy_profiler *profiler, struct hy_profiler_stats *out);

/* The request classes of everything the mount served, by mode (the mount's
 * own history of the last 64 requests of each direction; classify.h),
 * as far as the log has them: the writer thread classifies the records it
 * takes from the ring, so no request takes a mount-wide lock for it. */
void hy_profiler_get_classes(struct hy_profiler *profiler, uint64_t out[2][HY_CLASS_COUNT]);

/* Fills @out with up to @max processes, busiest (by bytes, then requests)
 * first; returns how many. */
size_t hy_profiler_top(struct hy_profiler *profiler, struct hy_profiler_process *out, size_t max);

#endif
