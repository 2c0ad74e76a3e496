/*
 * engine.h - the engine: where every read, write, truncate and fsync of file
 * data goes, whatever drives it.
 *
 * What it is for: DESIGN.md's "one engine, two drivers". The FUSE glue in
 * fs/ hands file data requests here, and so will the trace simulator. The
 * engine decides where the bytes live and asks the device layer
 * (device.h) for them. In order: the cache (cache.h: DRAM front buffer and
 * SSD store), when the mount has one; below it the "lower" path, BORG's
 * indirection map, then the BOPT or the backing file. ReCA's
 * characterization is the engine's: fs/ops.c hands hy_engine_read_as()/
 * _write_as() the request's process (struct hy_engine_request); the engine
 * asks ReCA (reca.h, once per request) for its class, its process's
 * category and the cache hint of the policy table in force, gives the hint
 * to the cache and the answer back to the caller (the profiler logs the
 * class).
 *
 * Who calls it: fs/ops.c (read, write, setattr size, fallocate, fsync,
 * release, the metadata gate around setattr, rename, link, unlink and
 * xattrs), fs/cache_glue.c (the cache's lower path), reconfig/borg.c (the
 * reconfigurator's gates, copies and write-back home) and the unit tests.
 * The simulator drives the cache (sim/full.c), not yet the engine.
 *
 * Memory: struct hy_engine is owned by its creator; it borrows the backing
 * device, which must outlive it, and ReCA's module (hy_engine_set_reca).
 * struct hy_engine_file is embedded in the caller's open-file state and set
 * up by hy_engine_file_init(); the engine does not own the file descriptor
 * in it.
 *
 * Locks: the cache takes its own gates first (cache.h), then calls the
 * lower path, which takes the engine's. With a BOPT in use, HY_ENGINE_GATES gates (rwlocks) striped
 * by file id order the changes of a file's data against the reconfigurator: a write holds its
 * file's gate shared across its I/O (writers of a file run in parallel: they only add dirty marks,
 * which commute); a truncation, allocation, copy or sync home holds it exclusive (they send dirty
 * blocks home and release ranges); a read that uses the BOPT holds it shared (reads of home only
 * take none); the reconfigurator holds it exclusive to drop extents and to check and commit a copy
 * (hy_engine_gate_*), and takes every gate once as a barrier and for a
 * checkpoint (hy_engine_quiesce). Order: gate, then the journal's lock,
 * then the map's locks. Requests on different files, and on different
 * ranges of one file, run in parallel; the map (map.h) takes its per-file
 * rwlock for a lookup.
 *
 * Stale copies: a relocated file's map entry keeps the home file's ctime
 * from when it was copied (its stamp). A read that would use the BOPT
 * compares it with the home file's ctime first; when they differ the file
 * was changed outside the mount (deleted and replaced, truncated,
 * rewritten, or written while hybridfs was not mounted), and all its
 * copies are dropped before the read goes home. Writes through the mount
 * refresh the stamp after they change the home file.
 */
#ifndef HYBRIDFS_ENGINE_H
#define HYBRIDFS_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hybridfs/reca.h" /* struct hy_reca_answer */

#define HY_ENGINE_GATES 256

struct hy_cache;
struct hy_cache_lower;
struct hy_device;
struct hy_map;
struct hy_map_journal;

struct hy_engine {
	struct hy_device *backing; /* borrowed */

	/* BORG, once a BOPT is in use (hy_engine_set_bopt); all borrowed,
	 * NULL otherwise. Set before requests flow, never changed during. */
	struct hy_map *map;
	struct hy_device *bopt;
	uint64_t bopt_read_base;	/* byte offset of read-region block 0 */
	struct hy_map_journal *journal; /* where map changes are made durable */

	struct hy_engine_gate {
		pthread_rwlock_t lock;
		_Atomic uint64_t changes; /* data changes begun under this gate */
	} gates[HY_ENGINE_GATES];
	_Atomic uint64_t stale_files;	  /* files whose copies were dropped as stale */
	_Atomic uint64_t bopt_reads;	  /* read requests sent to the BOPT */
	_Atomic uint64_t released_blocks; /* relocated blocks released by changes */
	_Atomic uint64_t bopt_writes;	  /* write requests sent to the BOPT */
	_Atomic uint64_t synced_blocks;	  /* dirty BOPT blocks written home */
	bool bopt_writes_on;		  /* hy_engine_set_bopt_writes() */

	/* The cache (cache.h), once hy_engine_set_cache() put it in the path;
	 * borrowed. Objects it holds to write files home, bounded. */
	struct hy_cache *cache;
	_Atomic uint64_t cache_objects;

	/* ReCA (reca.h), once hy_engine_set_reca() gave it; borrowed. NULL:
	 * requests carry no hint (profile=off). */
	struct hy_reca *reca;
};

/* Files with cached writes the cache may hold a descriptor of at once;
 * past it, writes to further files go through. */
#define HY_ENGINE_CACHE_OBJECTS 256

/* One open backing file, as the engine sees it. */
struct hy_engine_file {
	int backing_fd;	  /* the backing device's object; owned by the caller */
	uint64_t file_id; /* hybridfs's file id (profiler.h); 0: unknown, never relocated */
	bool meta_map, meta_cache; /* hy_engine_meta_begin()'s answers, for meta_end() */
};

int hy_engine_new(struct hy_device *backing, struct hy_engine **out);

/* The reconfigurator's side of a file's gate. lock/unlock take it
 * exclusive: no write, truncation or copy of the file is in progress while
 * it is held. changes() is the number of data changes begun under the
 * gate so far: read it with the gate held before copying a range, and
 * again before committing the copy; if it moved, a change may have raced
 * the copy. */
void hy_engine_gate_lock(struct hy_engine *engine, uint64_t file_id);
void hy_engine_gate_unlock(struct hy_engine *engine, uint64_t file_id);
uint64_t hy_engine_gate_changes(struct hy_engine *engine, uint64_t file_id);

/* Every gate exclusive (in order) / released: for a checkpoint of the map
 * while the filesystem is in use. */
void hy_engine_quiesce(struct hy_engine *engine);
void hy_engine_resume(struct hy_engine *engine);

/* Puts BORG's indirection map in the path: reads of relocated blocks go to
 * the BOPT device at @read_base + bopt_block * 4096, adjacent relocated
 * blocks in one request; writes to them go there too with bopt_writes
 * (hy_engine_set_bopt_writes), else release them; a truncation, hole
 * punch or copy that changes relocated blocks first sends their dirty
 * blocks home and releases them (journaled in @journal when it is not
 * NULL, before the map changes), so their one current copy is home. A
 * plan must never relocate a file's last partial block, so relocated
 * blocks are always whole blocks of data. */
void hy_engine_set_bopt(struct hy_engine *engine, struct hy_map *map, struct hy_device *bopt,
			uint64_t read_base, struct hy_map_journal *journal);
void hy_engine_free(struct hy_engine *engine);

/* The cache's side: hy_engine_cache_lower() fills the path below the cache
 * (the map, then the BOPT or home) for hy_cache_open(); set_cache() puts
 * the opened cache in front of it for every file with an id (before
 * requests flow; NULL takes it out, after they stopped). Then reads and
 * writes go through the cache; truncation, allocation and copies hold the
 * file's cache gate across their change after its dirty blocks in the
 * range went home; fsync journals the file's dirty blocks; the last close
 * queues them for the cleaner. */
void hy_engine_cache_lower(struct hy_engine *engine, struct hy_cache_lower *out);
void hy_engine_set_cache(struct hy_engine *engine, struct hy_cache *cache);

/* BORG's writes into the BOPT (bopt_writes=on): a write to relocated
 * blocks goes to their BOPT copy, marked dirty (journaled before the data
 * goes there), and the home file's modification time is set; dirty blocks
 * go home (hy_engine_sync_home) at fsync, at close (FusionCache's session
 * write-back), before anything releases them, and when the daemon flushes.
 * Off: a write to relocated blocks releases them and goes home. Set before
 * requests flow. */
void hy_engine_set_bopt_writes(struct hy_engine *engine, bool on);

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
 * file's cache gate and, with a BOPT, its engine gate, both exclusive
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
