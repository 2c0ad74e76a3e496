/*
 * engine.h - the engine: where every read, write, truncate and fsync of file
 * data goes, whatever drives it.
 *
 * What it is for: DESIGN.md's "one engine, two drivers". The FUSE glue in
 * fs/ hands file data requests here, and so will the trace simulator. The
 * engine decides where the bytes live and asks the device layer
 * (device.h) for them. Today every block lives in its backing file; the
 * profiler hook, the classifier, the cache (DRAM front buffer and SSD
 * store) and the indirection map to the BOPT slot in between, in that order,
 * without the drivers changing.
 *
 * Who calls it: fs/ops.c (read, write, setattr size, fsync, release), the
 * unit tests, and later the simulator.
 *
 * Memory: struct hy_engine is owned by its creator; it borrows the backing
 * device, which must outlive it. struct hy_engine_file is embedded in the
 * caller's open-file state and set up by hy_engine_file_init(); the engine
 * does not own the file descriptor in it.
 *
 * Locks: none of its own. Requests on different files, and on different
 * ranges of one file, run in parallel; the map (map.h) takes its per-file
 * rwlock for a lookup, and the journal its own lock for an append.
 */
#ifndef HYBRIDFS_ENGINE_H
#define HYBRIDFS_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

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
};

/* One open backing file, as the engine sees it. */
struct hy_engine_file {
	int backing_fd;	  /* the backing device's object; owned by the caller */
	uint64_t file_id; /* hybridfs's file id (profiler.h); 0: unknown, never relocated */
};

int hy_engine_new(struct hy_device *backing, struct hy_engine **out);

/* Puts BORG's indirection map in the path: reads of relocated blocks go to
 * the BOPT device at @read_base + bopt_block * 4096, adjacent relocated
 * blocks in one request; a write, truncation, hole punch or copy that
 * changes relocated blocks first releases them (journaled in @journal when
 * it is not NULL, before the map changes), so their one current copy is
 * home. (BORG's writes into the BOPT, marked dirty and synced home later,
 * come with the reconfigurator.) A plan must never relocate a file's last
 * partial block, so relocated blocks are always whole blocks of data. */
void hy_engine_set_bopt(struct hy_engine *engine, struct hy_map *map, struct hy_device *bopt,
			uint64_t read_base, struct hy_map_journal *journal);
void hy_engine_free(struct hy_engine *engine);

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

/* Makes the file's data (and with !data_only its metadata) durable: after
 * it returns 0 the data survives a crash of the daemon (invariant 1). */
int hy_engine_fsync(struct hy_engine *engine, struct hy_engine_file *file, bool data_only);

#endif
