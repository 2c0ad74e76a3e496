/*
 * identity.h - hybridfs's file ids: one id per backing file, stable across
 * renames and remounts, keyed by the backing inode's (dev, ino, birth
 * time) in the state database's files table (state.h). The cache, the
 * indirection map, the master access graph and the access log all know
 * files by these ids.
 *
 * What it does:
 *   - finds a file's id at open (from the inode's cached id, else one
 *     indexed SQLite read of its own read connection, else a new id:
 *     the database's highest + 1 onwards), never per request; a row found
 *     with a base name only (schema 9 and before) takes its full path then;
 *   - keeps a new id's row pending (findable here) until the transaction
 *     that carries it commits, so that an open in between finds the id
 *     instead of making a second one; the row keeps the file's path
 *     relative to the backing directory, which follows renames through
 *     the mount, of the file (hy_identity_file_moved) and of a folder
 *     above it (hy_identity_dir_moved), so that BORG finds the file at
 *     one lookup and plans, traces and explain name it unambiguously;
 *   - marks the rows of files whose last name went (hy_identity_file_gone)
 *     and prunes them once nothing refers to them (no access log row left,
 *     no indirection map entry, no master graph vertex, no plan range);
 *     the row with the highest id always stays: no id is given twice;
 *   - makes a file's row durable on demand for the cache's fsync
 *     (hy_identity_sync_file: once per new file, one sync of the WAL for
 *     every row committed so far; nothing for a row already durable).
 *
 * Its rows are written by the profiler's writer thread (profiler.h), in
 * the same transaction as the access log's records and process rows, with
 * the same retry rule: a transaction that fails leaves every row pending
 * for the next one (the hy_identity_batch_* calls below, the writer's
 * alone). The volumes table (the backing filesystem's UUID for st_dev)
 * is state.c's, at mount.
 *
 * Who calls it: fs/profiler.c (new and free with the profiler, which owns
 * it; a handle's file id at open; the writer's batches and prunes); fs/ops.c
 * and fs/ops_names.c (ids without a handle, files gone or renamed; through
 * hy_profiler_identity()); fs/cache_glue.c (the cache's ids made durable);
 * fs/borg_handlers.c (explain: a path's file id, or a removed path's,
 * from the context fs/main.c fills in); the unit tests.
 *
 * Memory: struct hy_identity owns its read connection, its statements
 * (prepared on the writer's connection, which it borrows and which must
 * outlive it) and its pending rows.
 *
 * Locks: read_lock serializes the read connection and the making of ids
 * (so that one file never gets two), held across one indexed SQLite read
 * at open, never in read or write; lock (a leaf but for read_lock before
 * it; the profiler's queue_lock may be held when it is taken, never the
 * other way round) protects the pending rows and the counts of the
 * writer's batches; durable_lock (a leaf) is held across one fdatasync in
 * hy_identity_sync_file().
 */
#ifndef HYBRIDFS_IDENTITY_H
#define HYBRIDFS_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct sqlite3;
struct hy_identity;

struct hy_identity_config {
	const char *db_path;	   /* the state database (schema 2 or later) */
	struct sqlite3 *writer_db; /* the connection whose transactions carry the rows */
	/* Asks the writer for a transaction soon (hy_identity_sync_file); called
	 * with no lock of the identity's held. */
	void (*kick)(void *arg);
	void *arg;
};

/* Loads the next free id, opens the read connection, prepares the
 * statements. 0 or a negative errno with a message in @why. */
int hy_identity_new(const struct hy_identity_config *config, struct hy_identity **out, char *why,
		    size_t why_size);
/* The pending rows not yet written are lost (logged by the writer). */
void hy_identity_free(struct hy_identity *identity);

/* The id of the file @fd (any descriptor, O_PATH too) whose backing
 * identity is @st: found, or made when it has none (@name, the file's name,
 * kept as its path when /proc cannot tell where @fd is). 0, -EIO (the
 * database cannot say: no id may be made, the file may have one) or
 * -ENOMEM; *@id is 0 on error. */
int hy_identity_file_id(struct hy_identity *identity, int fd, const struct stat *st,
			const char *name, uint64_t *id);

/* The id the file table holds for @fd / @st, or 0 when it has none; never
 * makes one. For the paths that change a file's data without a handle of
 * it (truncate and chmod by name, O_TRUNC, unlink), whose inode entry may
 * have been made after the kernel forgot the one that knew the id. Takes
 * read_lock across one indexed SQLite read. */
uint64_t hy_identity_find_file(struct hy_identity *identity, int fd, const struct stat *st);

/* The id of the file last removed through the mount from @path (relative
 * to the backing directory) whose row is marked gone and not pruned yet,
 * or 0: for explain of a path that no longer exists. Takes read_lock
 * across one SQLite read (a scan of files: explain only). */
uint64_t hy_identity_find_removed(struct hy_identity *identity, const char *path);

/* @file_id's file is gone: its last name went while no handle was open
 * (fs/ops.c, after the cache has let go of it). Its row is marked by the
 * writer once the access log has every record of it, and pruned once
 * nothing refers to it. Never blocks on I/O; 0 is ignored. */
void hy_identity_file_gone(struct hy_identity *identity, uint64_t file_id);

/* @file_id's file was renamed through the mount; @fd is a descriptor of it
 * (O_PATH too) at its new name. Its row's path follows with the writer's
 * next transaction. Never blocks on I/O: one readlink(2) of /proc; 0 and a
 * negative @fd are ignored. */
void hy_identity_file_moved(struct hy_identity *identity, uint64_t file_id, int fd);

/* A folder was renamed through the mount from @from to @to (both
 * relative to the backing directory): the rows of the files below it
 * follow with the writer's next transaction (one range of the path index,
 * no walk of the tree); files first seen after the call are not moved.
 * RENAME_EXCHANGE of two folders is three calls through a name no path
 * has (fs/ops_names.c). Never blocks on I/O. */
void hy_identity_dir_moved(struct hy_identity *identity, const char *from, const char *to);

/* Where @fd is now, relative to the backing directory (one readlink(2) of
 * /proc), malloc'd; NULL when it cannot be told (or is the root). */
char *hy_identity_path_of(struct hy_identity *identity, int fd);

/* For the cache's fsync (cache.h, ids_durable): makes @file_id's row
 * durable, so that after a crash it names the file that recovery finds in
 * the store's journal. Once per new file: a row known to be on the disk
 * (every row of before the mount, synced once when it began; every row
 * an earlier call covered) costs an atomic load, no lock, no statement
 * and no system call. Otherwise it waits until the writer has committed
 * the row (asking it for a transaction now), then syncs the WAL once for
 * every row committed so far. Returns 0, the negative errno of the first
 * transaction begun after the call when it failed (-ENOSPC: the state
 * folder's disk is full; the rows stay pending), -EIO when the writer
 * has failed, or the errno of the sync. */
int hy_identity_sync_file(struct hy_identity *identity, uint64_t file_id);

/* The syncs of the WAL made for hy_identity_sync_file(), the one at the
 * start included (for the tests and the status). */
uint64_t hy_identity_wal_syncs(struct hy_identity *identity);

/* ---- the writer's side (fs/profiler.c's writer thread) ------------------ */

/* A transaction begins: every pending row is in it. */
void hy_identity_batch_begin(struct hy_identity *identity);
/* Inserts the new files' rows; returns how many failed, *@carried counts
 * the rows inserted (tried). */
unsigned hy_identity_batch_insert(struct hy_identity *identity, size_t *carried);
/* Sets the paths of the files renamed; returns how many failed. */
unsigned hy_identity_batch_paths(struct hy_identity *identity);
/* Marks the gone files (once the access log has all their records: the
 * ring was drained in this transaction); false when one could not be. */
bool hy_identity_batch_marks(struct hy_identity *identity);
/* The transaction ended: @committed (its file rows and paths are in),
 * else failed with @error (a negative errno); @marked: its marks are in
 * (it committed, with the ring drained). What is not in stays pending for
 * the next one. */
void hy_identity_batch_end(struct hy_identity *identity, bool committed, bool marked, int error);
/* The writer stopped for good: syncs waiting for it fail. */
void hy_identity_writer_failed(struct hy_identity *identity);

/* Rows queued (new files and renames) and of those written, ever. */
void hy_identity_rows(struct hy_identity *identity, uint64_t *queued, uint64_t *written);
/* File rows pending (not yet committed). */
size_t hy_identity_pending(struct hy_identity *identity);
/* Files given a new id since the start. */
uint64_t hy_identity_files_seen(struct hy_identity *identity);
/* Prunes the rows of gone files nothing refers to any more, the access
 * log's oldest rowid being @oldest_rowid; returns how many went (writer
 * thread, outside a transaction). */
uint64_t hy_identity_prune(struct hy_identity *identity, int64_t oldest_rowid);

#endif
