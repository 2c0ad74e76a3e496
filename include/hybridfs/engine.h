/*
 * engine.h - the engine: where every read, write, truncate and fsync of file
 * data goes, whatever drives it.
 *
 * What it is for: DESIGN.md's "one engine, two drivers". The FUSE glue in
 * fs/ hands file data requests here. The data path runs one way, each
 * layer calling only the one below it:
 *
 *	engine (this)  ->  cache (cache.h)  ->  indirector (indirector.h)  ->  device (device.h)
 *
 * The engine sends a file's reads and writes to the cache when the mount
 * has one and the file has an id, else straight to the indirector (BORG's
 * indirection map, then the BOPT or the backing file). What changes a
 * file's data outside reads and writes (truncation, allocation, copies,
 * O_TRUNC opens, metadata changes, fsync, close) it orders across the two:
 * the cache's gate and its dirty blocks first, then the indirector's
 * change. ReCA's characterization is the engine's: fs/ops_files.c hands
 * hy_engine_read_as()/_write_as() the request's process (struct
 * hy_engine_request); the engine asks ReCA (reca.h, once per request) for
 * its class, its process's category and the cache hint of the policy table
 * in force, gives the hint to the cache and the answer back to the caller
 * (the profiler logs the class).
 *
 * Who calls it: the stack builder (engine/stack.c: it makes the engine for
 * the daemon and the simulator, and puts the cache in it); the FUSE
 * operations: fs/ops.c (the last release, files forgotten, the metadata
 * gate), fs/ops_files.c (read, write, fallocate, copy_file_range, lseek's
 * SEEK_DATA/SEEK_HOLE, fsync, O_TRUNC opens), fs/ops_names.c (setattr
 * size, and the metadata gate around setattr, rename, link and unlink),
 * fs/ops_dirs.c (xattrs through the gate; a changed home); fs/main.c (ReCA
 * put in the path), fs/borg_handlers.c (the indirector's stats for status),
 * fs/status.c and fs/policy_glue.c (its ReCA), reconfig/borg*.c (the
 * indirector; borg_cleaner.c a flush's write-back home), sim/borg.c, and
 * the unit tests.
 *
 * Memory: struct hy_engine is owned by its creator and owns its
 * indirector; it borrows the backing device, which must outlive it, the
 * cache and ReCA's module (hy_engine_set_reca). struct hy_engine_file is
 * embedded in the caller's open-file state and set up by
 * hy_engine_file_init(); the engine does not own the file descriptor in it.
 *
 * Locks: none of its own. Order, as every path takes them: the cache's
 * gate of the file (cache.h), then the indirector's gate (indirector.h),
 * then the map journal's and the map's. Requests on different files run
 * in parallel.
 */
#ifndef HYBRIDFS_ENGINE_H
#define HYBRIDFS_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hybridfs/reca.h" /* struct hy_reca_answer */

struct hy_cache;
struct hy_device;
struct hy_indirector;

struct hy_engine {
	struct hy_device *backing;	  /* borrowed */
	struct hy_indirector *indirector; /* owned: the path below the cache */
	/* The cache (cache.h), once hy_engine_set_cache() put it in the path;
	 * borrowed. */
	struct hy_cache *cache;
	/* ReCA (reca.h), once hy_engine_set_reca() gave it; borrowed. NULL:
	 * requests carry no hint (profile=off). */
	struct hy_reca *reca;
};

/* One open backing file, as the engine sees it. */
struct hy_engine_file {
	int backing_fd;	  /* the backing device's object; owned by the caller */
	uint64_t file_id; /* hybridfs's file id (identity.h); 0: unknown, never relocated */
	bool meta_map, meta_cache; /* hy_engine_meta_begin()'s answers, for meta_end() */
};

int hy_engine_new(struct hy_device *backing, struct hy_engine **out);

/* The path below the cache (indirector.h), which the engine owns: the
 * cache is opened over it (hy_cache_open), BORG puts its map and BOPT in it
 * (hy_indirector_set_bopt) and the reconfigurator works through it. */
struct hy_indirector *hy_engine_indirector(struct hy_engine *engine);
void hy_engine_free(struct hy_engine *engine);

/* Puts the opened cache in front of the indirector for every file with an
 * id (before requests flow; NULL takes it out, after they stopped). Then
 * reads and writes go through the cache; truncation, allocation and copies
 * hold the file's cache gate across their change after its dirty blocks in
 * the range went home; fsync journals the file's dirty blocks; the last
 * close queues them for the cleaner. */
void hy_engine_set_cache(struct hy_engine *engine, struct hy_cache *cache);

/* Writes @file's dirty BOPT blocks home (durably, keeping the home file's
 * modification time) and marks them clean, under the file's gate held
 * exclusive. Returns the blocks made clean or a negative errno. */
int64_t hy_engine_sync_home(struct hy_engine *engine, struct hy_engine_file *file);

/* Around a change of a file's metadata through the mount (chmod, chown,
 * utimes), which moves its ctime without touching its data:
 * has_copies() says whether the file has relocated blocks at all;
 * meta_begin() whether they are current now (read through @file's
 * descriptor, which may be O_PATH); meta_end(), if they were, moves the
 * stamp to the new ctime, so the copies are not taken for stale. An
 * outside change at that very moment may go unseen, as for writes. */
bool hy_engine_has_copies(struct hy_engine *engine, uint64_t file_id);
bool hy_engine_meta_begin(struct hy_engine *engine, struct hy_engine_file *file);
void hy_engine_meta_end(struct hy_engine *engine, struct hy_engine_file *file, bool fresh);

/* After a change of the home file's metadata through the mount (chmod,
 * chown, utimes, xattrs): the next fsync of @file_id syncs the home file,
 * so the change is durable too, even when the cache holds its data
 * durably already (hy_cache_home_changed). */
void hy_engine_home_changed(struct hy_engine *engine, uint64_t file_id);

/* A handle of @file is closed: its dirty blocks go home. 0 or -errno. */
int hy_engine_close(struct hy_engine *engine, struct hy_engine_file *file);

/* The file @file_id is gone (no name, no handle): the cache drops its
 * blocks unwritten and lets go of it (hy_cache_forget_file). Its BOPT
 * copies stay until the map drops them as stale. 0 or -errno. */
int hy_engine_forget_file(struct hy_engine *engine, uint64_t file_id);

void hy_engine_file_init(struct hy_engine *engine, struct hy_engine_file *file, int backing_fd);

/* Tells the engine @file's id, so that its relocated blocks are found. */
void hy_engine_file_set_id(struct hy_engine_file *file, uint64_t file_id);

/* Reads up to @size bytes at @off into @buf: the count (short only at end
 * of file) or a negative errno. */
ssize_t hy_engine_read(struct hy_engine *engine, struct hy_engine_file *file, void *buf,
		       size_t size, off_t off);

/* Writes @size bytes at @off: the count or a negative errno. */
ssize_t hy_engine_write(struct hy_engine *engine, struct hy_engine_file *file, const void *buf,
			size_t size, off_t off);

/* The same, with what the process's workload policy says for the request
 * (cache.h, struct hy_cache_hint; NULL: the mount's settings). Without a
 * cache the hint is ignored. */
struct hy_cache_hint;
ssize_t hy_engine_read_hinted(struct hy_engine *engine, struct hy_engine_file *file,
			      const struct hy_cache_hint *hint, void *buf, size_t size, off_t off);
ssize_t hy_engine_write_hinted(struct hy_engine *engine, struct hy_engine_file *file,
			       const struct hy_cache_hint *hint, const void *buf, size_t size,
			       off_t off);

/* ReCA's module asked for every request made through _read_as/_write_as
 * (reca.h, HY_RECA_PROCESSES); borrowed, it must outlive the engine's
 * requests. Set before requests flow. */
struct hy_reca;
void hy_engine_set_reca(struct hy_engine *engine, struct hy_reca *reca);

/* One read or write as the daemon makes it: @req->pid is the process it is
 * for; the engine fills @req->answer (reca.h: its class, its process's
 * category and id, the hint the cache was given) from ReCA, once, and
 * serves the request with the hint. Without ReCA, or with a NULL @req, as
 * the plain calls (the answer, if any, zeroed). */
struct hy_engine_request {
	pid_t pid;
	struct hy_reca_answer answer;
};
ssize_t hy_engine_read_as(struct hy_engine *engine, struct hy_engine_file *file,
			  struct hy_engine_request *req, void *buf, size_t size, off_t off);
ssize_t hy_engine_write_as(struct hy_engine *engine, struct hy_engine_file *file,
			   struct hy_engine_request *req, const void *buf, size_t size, off_t off);

/* A read the caller may have the kernel copy from the home file's pages
 * (a spliced READ reply, fs/ops_files.c): when no cache is in @file's
 * path and the indirector finds the range home on a plain backing device
 * (hy_indirector_home_fd), returns the descriptor to read from at @off,
 * with @req's answer filled as hy_engine_read_as() fills it; else -1, ReCA
 * not asked, and the caller reads through hy_engine_read_as(). After the
 * read, _direct_done() counts it on the backing device (@done: the bytes
 * read, or a negative errno). */
int hy_engine_read_direct_as(struct hy_engine *engine, struct hy_engine_file *file,
			     struct hy_engine_request *req, size_t size, off_t off);
void hy_engine_read_direct_done(struct hy_engine *engine, struct hy_engine_file *file, off_t off,
				ssize_t done);

/* Sets the file's size; data past it is forgotten everywhere it is kept. */
int hy_engine_truncate(struct hy_engine *engine, struct hy_engine_file *file, off_t size);

/* fallocate(2) modes as the backing filesystem takes them (keep size,
 * punch hole, zero range...). */
int hy_engine_fallocate(struct hy_engine *engine, struct hy_engine_file *file, int mode, off_t off,
			off_t len);

/* copy_file_range(2) between two files: the count copied or a negative
 * errno. The backing filesystem may share extents instead of copying. */
ssize_t hy_engine_copy_range(struct hy_engine *engine, struct hy_engine_file *in, off_t off_in,
			     struct hy_engine_file *out, off_t off_out, size_t len, int flags);

/* Around an open(O_TRUNC) of a file whose id is known: begin takes the
 * file's cache gate and, with a BOPT, its indirector gate, both exclusive
 * (no cleaner or BORG write-back writes old blocks home across the
 * truncation); end releases the relocated blocks the truncation cut off
 * and refreshes the stamp, drops what the cache held past the end, and
 * lets go. begin returns whether end must be called (with the new
 * descriptor, or -1). */
bool hy_engine_truncate_open_begin(struct hy_engine *engine, uint64_t file_id);
void hy_engine_truncate_open_end(struct hy_engine *engine, uint64_t file_id, int fd);

/* Before lseek(SEEK_DATA / SEEK_HOLE) on the home file: the file's
 * blocks written into the cache go home, so holes are where a plain
 * directory has them. 0 or a negative errno. */
int hy_engine_prepare_seek(struct hy_engine *engine, struct hy_engine_file *file);

/* Makes the file's data (and with !data_only its metadata) durable: after
 * it returns 0 the data survives a crash of the daemon (invariant 1). */
int hy_engine_fsync(struct hy_engine *engine, struct hy_engine_file *file, bool data_only);

#endif
