/* engine.c - see include/hybridfs/engine.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/log.h"

#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"

#define BLOCK		4096
#define PIECES_ON_STACK 16

int hy_engine_new(struct hy_device *backing, struct hy_engine **out)
{
	struct hy_engine *engine = calloc(1, sizeof(*engine));

	*out = NULL;
	if (!engine)
		return -ENOMEM;
	engine->backing = backing;
	for (int i = 0; i < HY_ENGINE_GATES; i++) {
		if (pthread_rwlock_init(&engine->gates[i].lock, NULL) != 0) {
			while (i-- > 0)
				pthread_rwlock_destroy(&engine->gates[i].lock);
			free(engine);
			return -ENOMEM;
		}
	}
	*out = engine;
	return 0;
}

void hy_engine_free(struct hy_engine *engine)
{
	if (!engine)
		return;
	for (int i = 0; i < HY_ENGINE_GATES; i++)
		pthread_rwlock_destroy(&engine->gates[i].lock);
	free(engine);
}

static struct hy_engine_gate *gate_of(struct hy_engine *engine, uint64_t file_id)
{
	return &engine->gates[file_id % HY_ENGINE_GATES];
}

void hy_engine_gate_lock(struct hy_engine *engine, uint64_t file_id)
{
	pthread_rwlock_wrlock(&gate_of(engine, file_id)->lock);
}

void hy_engine_gate_unlock(struct hy_engine *engine, uint64_t file_id)
{
	pthread_rwlock_unlock(&gate_of(engine, file_id)->lock);
}

uint64_t hy_engine_gate_changes(struct hy_engine *engine, uint64_t file_id)
{
	return atomic_load(&gate_of(engine, file_id)->changes);
}

void hy_engine_quiesce(struct hy_engine *engine)
{
	for (int i = 0; i < HY_ENGINE_GATES; i++)
		pthread_rwlock_wrlock(&engine->gates[i].lock);
}

void hy_engine_resume(struct hy_engine *engine)
{
	for (int i = HY_ENGINE_GATES - 1; i >= 0; i--)
		pthread_rwlock_unlock(&engine->gates[i].lock);
}

void hy_engine_set_bopt(struct hy_engine *engine, struct hy_map *map, struct hy_device *bopt,
			uint64_t read_base, struct hy_map_journal *journal)
{
	engine->map = map;
	engine->bopt = bopt;
	engine->bopt_read_base = read_base;
	engine->journal = journal;
}

void hy_engine_file_init(struct hy_engine *engine, struct hy_engine_file *file, int backing_fd)
{
	file->backing_fd = backing_fd;
	file->file_id = 0;
}

void hy_engine_file_set_id(struct hy_engine_file *file, uint64_t file_id)
{
	file->file_id = file_id;
}

static bool uses_map(const struct hy_engine *engine, const struct hy_engine_file *file)
{
	return engine->map && file->file_id;
}

/* The pieces of [@first, @first + @nblocks): on the stack when they fit,
 * else in *@heap (freed by the caller). Returns the count or -errno. */
static int lookup(struct hy_engine *engine, const struct hy_engine_file *file, uint64_t first,
		  uint32_t nblocks, struct hy_map_piece *stack, struct hy_map_piece **pieces,
		  struct hy_map_piece **heap)
{
	int n = hy_map_lookup(engine->map, file->file_id, first, nblocks, stack, PIECES_ON_STACK);

	*pieces = stack;
	*heap = NULL;
	while (n > PIECES_ON_STACK) {
		/* the map may change between the calls: ask until it fits */
		struct hy_map_piece *more = realloc(*heap, (size_t)n * sizeof(*more));
		int again;

		if (!more) {
			free(*heap);
			*heap = NULL;
			return -ENOMEM;
		}
		*heap = more;
		again = hy_map_lookup(engine->map, file->file_id, first, nblocks, more, (size_t)n);
		if (again <= n) {
			*pieces = more;
			return again;
		}
		n = again;
	}
	return n;
}

static int release(struct hy_engine *engine, struct hy_engine_file *file, uint64_t block,
		   uint64_t nblocks);

/* Whether @file's home ctime is still the stamp its copies were made
 * under (0: unknown, never fresh). */
static bool stamp_matches(struct hy_engine *engine, struct hy_engine_file *file)
{
	int64_t stamp, now;
	int rc;

	if (hy_map_get_stamp(engine->map, file->file_id, &stamp) != 0)
		return true; /* nothing relocated (any more) */
	rc = hy_device_stamp(engine->backing, file->backing_fd, &now);
	if (rc == -EOPNOTSUPP)
		return true; /* a medium nobody else writes (the simulator's) */
	return rc == 0 && stamp != 0 && stamp == now;
}

/* Drops every copy of @file: it changed outside the mount. */
static void drop_stale(struct hy_engine *engine, struct hy_engine_file *file)
{
	int rc = release(engine, file, 0, UINT64_MAX);

	if (rc < 0) {
		hy_log(LOG_ERR, "file %" PRIu64 " changed outside the mount, and its BOPT copies "
				"cannot be dropped: %s", file->file_id, strerror(-rc));
		return;
	}
	atomic_fetch_add(&engine->stale_files, 1);
	hy_log(LOG_NOTICE, "file %" PRIu64 " changed outside the mount since its blocks were "
			   "copied to the BOPT: its copies are dropped", file->file_id);
}

/* Before a read uses the BOPT: true when @file's copies are current.
 * A mismatch may be a write through the mount between its home write and
 * its stamp refresh; holding the gate exclusive waits those out before the
 * copies are judged stale. */
static bool copies_fresh(struct hy_engine *engine, struct hy_engine_file *file)
{
	bool fresh;

	if (stamp_matches(engine, file))
		return true;
	hy_engine_gate_lock(engine, file->file_id);
	fresh = stamp_matches(engine, file);
	if (!fresh)
		drop_stale(engine, file);
	hy_engine_gate_unlock(engine, file->file_id);
	return fresh;
}

/* A change of @file's data begins: its gate held shared (so that the
 * reconfigurator never commits a copy the change races), copies made stale
 * by an outside change dropped. Returns whether the gate is held. */
static bool change_begin(struct hy_engine *engine, struct hy_engine_file *file)
{
	struct hy_engine_gate *gate;

	if (!uses_map(engine, file))
		return false;
	gate = gate_of(engine, file->file_id);
	pthread_rwlock_rdlock(&gate->lock);
	atomic_fetch_add(&gate->changes, 1);
	if (!stamp_matches(engine, file))
		drop_stale(engine, file);
	return true;
}

/* ... and ends: the copies left are current, so the stamp follows the
 * home file's new ctime. */
static void change_end(struct hy_engine *engine, struct hy_engine_file *file, bool held)
{
	int64_t stamp, now;

	if (!held)
		return;
	if (hy_map_get_stamp(engine->map, file->file_id, &stamp) == 0 &&
	    hy_device_stamp(engine->backing, file->backing_fd, &now) == 0 && now != stamp)
		hy_map_set_stamp(engine->map, file->file_id, now);
	pthread_rwlock_unlock(&gate_of(engine, file->file_id)->lock);
}

ssize_t hy_engine_read(struct hy_engine *engine, struct hy_engine_file *file, void *buf,
		       size_t size, off_t off)
{
	struct hy_map_piece stack[PIECES_ON_STACK], *pieces, *heap;
	uint64_t first, last, end;
	pthread_rwlock_t *gate;
	size_t done = 0;
	bool all_home;
	int n;

	if (!uses_map(engine, file) || size == 0 || off < 0)
		return hy_device_read(engine->backing, file->backing_fd, buf, size, off);
	first = (uint64_t)off / BLOCK;
	end = (uint64_t)off + size;
	last = (end - 1) / BLOCK;
	if (last - first >= UINT32_MAX)
		return hy_device_read(engine->backing, file->backing_fd, buf, size, off);
	n = lookup(engine, file, first, (uint32_t)(last - first + 1), stack, &pieces, &heap);
	if (n < 0)
		return n;
	/* the common case: nothing relocated, one request home */
	if (n == 1 && pieces[0].bopt_block == HY_MAP_HOME) {
		free(heap);
		return hy_device_read(engine->backing, file->backing_fd, buf, size, off);
	}
	/* BOPT blocks are read under the file's gate, held shared, and looked
	 * up again under it: the reconfigurator takes every gate once after
	 * it drops extents, before it writes over their BOPT blocks, so no
	 * read still uses an old place when a new copy goes there */
	free(heap);
	gate = &gate_of(engine, file->file_id)->lock;
	pthread_rwlock_rdlock(gate);
	n = lookup(engine, file, first, (uint32_t)(last - first + 1), stack, &pieces, &heap);
	if (n < 0) {
		pthread_rwlock_unlock(gate);
		return n;
	}
	all_home = n == 1 && pieces[0].bopt_block == HY_MAP_HOME;
	if (all_home || !stamp_matches(engine, file)) {
		/* all home now, or the file changed outside the mount since its
		 * blocks were copied: then its copies are dropped first */
		pthread_rwlock_unlock(gate);
		free(heap);
		if (!all_home)
			copies_fresh(engine, file);
		return hy_device_read(engine->backing, file->backing_fd, buf, size, off);
	}
	for (int i = 0; i < n; i++) {
		uint64_t pstart = pieces[i].block * BLOCK,
			 pend = pstart + (uint64_t)pieces[i].nblocks * BLOCK;
		uint64_t from = pstart > (uint64_t)off ? pstart : (uint64_t)off;
		uint64_t to = pend < end ? pend : end;
		size_t len = (size_t)(to - from);
		ssize_t r;

		if (pieces[i].bopt_block == HY_MAP_HOME) {
			r = hy_device_read(engine->backing, file->backing_fd, (char *)buf + done,
					   len, (off_t)from);
		} else {
			atomic_fetch_add(&engine->bopt_reads, 1);
			r = hy_device_read(engine->bopt, 0, (char *)buf + done, len,
					   (off_t)(engine->bopt_read_base +
						   pieces[i].bopt_block * BLOCK + (from - pstart)));
		}
		if (r < 0) {
			pthread_rwlock_unlock(gate);
			free(heap);
			return done ? (ssize_t)done : r;
		}
		done += (size_t)r;
		if ((size_t)r < len)
			break; /* the end of the file, at home */
	}
	pthread_rwlock_unlock(gate);
	free(heap);
	return (ssize_t)done;
}

/* Before relocated blocks of [@block, @block + @nblocks) change at home:
 * the release is made durable in the journal, then the map drops them, so
 * that from now on their one current copy is home. Nothing to do, and no
 * journal write, when none of the range is relocated. */
static int release(struct hy_engine *engine, struct hy_engine_file *file, uint64_t block,
		   uint64_t nblocks)
{
	struct hy_map_piece piece;
	uint32_t probe = nblocks > UINT32_MAX ? UINT32_MAX : (uint32_t)nblocks;
	int n;

	if (!uses_map(engine, file) || nblocks == 0)
		return 0;
	n = hy_map_lookup(engine->map, file->file_id, block, probe, &piece, 1);
	if (n < 0)
		return n;
	if (n == 1 && piece.bopt_block == HY_MAP_HOME && nblocks <= UINT32_MAX)
		return 0;
	if (engine->journal) {
		struct hy_map_journal_record r = {
			.type = HY_MJ_RELEASE,
			.file_id = file->file_id,
			.block = block,
			.nblocks = probe,
		};
		int rc;

		/* a release of more than 2^32 blocks is journaled from the
		 * relocated extents themselves, below */
		if (nblocks <= UINT32_MAX && (rc = hy_map_journal_append(engine->journal, &r)) < 0)
			return rc;
		if (nblocks > UINT32_MAX) {
			struct hy_map_piece all[PIECES_ON_STACK], *pieces = all, *heap = NULL;
			int k = lookup(engine, file, block, UINT32_MAX, all, &pieces, &heap);

			for (int i = 0; i < k; i++) {
				if (pieces[i].bopt_block == HY_MAP_HOME)
					continue;
				r.block = pieces[i].block;
				r.nblocks = pieces[i].nblocks;
				if ((rc = hy_map_journal_append(engine->journal, &r)) < 0) {
					free(heap);
					return rc;
				}
			}
			free(heap);
			if (k < 0)
				return k;
		}
	}
	{
		int64_t gone = hy_map_release(engine->map, file->file_id, block, nblocks);

		if (gone < 0)
			return -EIO;
		atomic_fetch_add(&engine->released_blocks, (uint64_t)gone);
	}
	return 0;
}

static uint64_t blocks_of(uint64_t off, uint64_t len, uint64_t *first)
{
	*first = off / BLOCK;
	return len ? (off + len - 1) / BLOCK - *first + 1 : 0;
}

ssize_t hy_engine_write(struct hy_engine *engine, struct hy_engine_file *file, const void *buf,
			size_t size, off_t off)
{
	bool held = change_begin(engine, file);
	uint64_t first, n;
	ssize_t rc = 0;

	if (off >= 0) {
		n = blocks_of((uint64_t)off, size, &first);
		rc = release(engine, file, first, n);
	}
	if (rc >= 0)
		rc = hy_device_write(engine->backing, file->backing_fd, buf, size, off);
	change_end(engine, file, held);
	return rc;
}

int hy_engine_truncate(struct hy_engine *engine, struct hy_engine_file *file, off_t size)
{
	bool held = change_begin(engine, file);
	/* from the block holding the new end on: its tail, or all of it, changes */
	int rc = size >= 0 ? release(engine, file, (uint64_t)size / BLOCK,
				     UINT64_MAX - (uint64_t)size / BLOCK)
			   : 0;

	if (rc >= 0)
		rc = hy_device_truncate(engine->backing, file->backing_fd, size);
	change_end(engine, file, held);
	return rc;
}

int hy_engine_fsync(struct hy_engine *engine, struct hy_engine_file *file, bool data_only)
{
	return hy_device_sync(engine->backing, file->backing_fd, data_only);
}

int hy_engine_fallocate(struct hy_engine *engine, struct hy_engine_file *file, int mode, off_t off,
			off_t len)
{
	bool held = change_begin(engine, file);
	uint64_t first, n;
	int rc = 0;

	/* punching a hole or zeroing changes the data; plain allocation too
	 * when it grows a file whose last block is relocated: release the
	 * whole range either way */
	if (off >= 0 && len > 0) {
		n = blocks_of((uint64_t)off, (uint64_t)len, &first);
		rc = release(engine, file, first, n);
	}
	if (rc >= 0)
		rc = hy_device_allocate(engine->backing, file->backing_fd, mode, off, len);
	change_end(engine, file, held);
	return rc;
}

/* Both files are in the backing directory, so the kernel can copy (or
 * share extents) without the data passing through the daemon. The source's
 * relocated blocks are clean copies of home, so home is current to copy
 * from; the destination's are released first. */
ssize_t hy_engine_copy_range(struct hy_engine *engine, struct hy_engine_file *in, off_t off_in,
			     struct hy_engine_file *out, off_t off_out, size_t len, int flags)
{
	bool held = change_begin(engine, out);
	uint64_t first, n;
	ssize_t copied;
	int rc = 0;

	if (off_out >= 0) {
		n = blocks_of((uint64_t)off_out, len, &first);
		rc = release(engine, out, first, n);
	}
	if (rc < 0) {
		change_end(engine, out, held);
		return rc;
	}
	copied = copy_file_range(in->backing_fd, &off_in, out->backing_fd, &off_out, len,
				 (unsigned)flags);
	if (copied < 0)
		copied = -errno;
	change_end(engine, out, held);
	return copied;
}
