/* engine.c - see include/hybridfs/engine.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/log.h"

#include "hybridfs/cache.h"
#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"
#include "hybridfs/reca.h"

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

static void gate_read_lock(struct hy_engine *engine, uint64_t file_id)
{
	pthread_rwlock_rdlock(&gate_of(engine, file_id)->lock);
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

void hy_engine_set_bopt_writes(struct hy_engine *engine, bool on)
{
	engine->bopt_writes_on = on;
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
	file->meta_map = file->meta_cache = false;
}

void hy_engine_file_set_id(struct hy_engine_file *file, uint64_t file_id)
{
	file->file_id = file_id;
}

static bool uses_cache(const struct hy_engine *engine, const struct hy_engine_file *file)
{
	return engine->cache && file->file_id;
}

static struct hy_cache_file cache_file(const struct hy_engine_file *file)
{
	return (struct hy_cache_file){file->file_id, file->backing_fd};
}

static bool uses_map(const struct hy_engine *engine, const struct hy_engine_file *file)
{
	return engine->map && file->file_id;
}

/* The part of @piece that the request [@off, @end) covers: its length,
 * and its first byte in @from. */
static size_t piece_span(const struct hy_map_piece *piece, uint64_t off, uint64_t end,
			 uint64_t *from)
{
	uint64_t pstart = piece->block * BLOCK, pend = pstart + (uint64_t)piece->nblocks * BLOCK;

	*from = pstart > off ? pstart : off;
	return (size_t)((pend < end ? pend : end) - *from);
}

/* Where byte @from of relocated @piece lies on the BOPT device. */
static off_t bopt_offset(const struct hy_engine *engine, const struct hy_map_piece *piece,
			 uint64_t from)
{
	return (off_t)(engine->bopt_read_base + piece->bopt_block * BLOCK +
		       (from - piece->block * BLOCK));
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

static int64_t sync_dirty(struct hy_engine *engine, struct hy_engine_file *file, uint64_t block,
			  uint64_t nblocks);

/* Drops every copy of @file: it changed outside the mount. Blocks written
 * through the mount and not yet home go home first (within the file's
 * size now), so no acknowledged write is lost. Gate held exclusive. */
static void drop_stale(struct hy_engine *engine, struct hy_engine_file *file)
{
	int64_t synced = sync_dirty(engine, file, 0, UINT64_MAX);
	int rc = synced < 0 ? (int)synced : release(engine, file, 0, UINT64_MAX);

	if (rc < 0) {
		hy_log(LOG_ERR,
		       "file %" PRIu64 " changed outside the mount, and its BOPT copies "
		       "cannot be dropped: %s",
		       file->file_id, strerror(-rc));
		return;
	}
	atomic_fetch_add(&engine->stale_files, 1);
	hy_log(LOG_INFO,
	       "file %" PRIu64 ": its ctime moved since its blocks were copied to the BOPT (a "
	       "change outside the mount): its copies are dropped (%" PRId64
	       " blocks written through the mount went home first)",
	       file->file_id, synced);
}

/* Before a read uses the BOPT: true when @file's copies are current.
 * A mismatch may be a change through the mount between its home change and
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

/* A change of @file's data begins: copies made stale by an outside change
 * dropped, then its gate held, shared for writes (they only add dirty
 * marks, which commute) or exclusive for what releases or syncs blocks
 * (truncation, allocation, copies, sync home). Returns whether it is held. */
static bool change_begin(struct hy_engine *engine, struct hy_engine_file *file, bool exclusive)
{
	struct hy_engine_gate *gate;

	if (!uses_map(engine, file))
		return false;
	copies_fresh(engine, file);
	gate = gate_of(engine, file->file_id);
	if (exclusive)
		pthread_rwlock_wrlock(&gate->lock);
	else
		pthread_rwlock_rdlock(&gate->lock);
	atomic_fetch_add(&gate->changes, 1);
	return true;
}

/* After a change through the mount: the copies left are current, so the
 * stamp follows the home file's new ctime. The gate is held. */
static void refresh_stamp(struct hy_engine *engine, struct hy_engine_file *file)
{
	int64_t stamp, now;

	/* only forward: two writers of the file may refresh in either order,
	 * and the older ctime would make the file look changed outside */
	if (hy_map_get_stamp(engine->map, file->file_id, &stamp) == 0 &&
	    hy_device_stamp(engine->backing, file->backing_fd, &now) == 0 && now > stamp)
		hy_map_set_stamp(engine->map, file->file_id, now);
}

/* ... and ends. */
static void change_end(struct hy_engine *engine, struct hy_engine_file *file, bool held)
{
	if (!held)
		return;
	refresh_stamp(engine, file);
	pthread_rwlock_unlock(&gate_of(engine, file->file_id)->lock);
}

/* Reads the pieces of [@off, @end) into @buf, each from where it lives;
 * the file's gate is held. The count (short only at the end of the file)
 * or a negative errno. */
static ssize_t read_pieces(struct hy_engine *engine, struct hy_engine_file *file, void *buf,
			   off_t off, uint64_t end, const struct hy_map_piece *pieces, int n)
{
	size_t done = 0;

	for (int i = 0; i < n; i++) {
		uint64_t from;
		size_t len = piece_span(&pieces[i], (uint64_t)off, end, &from);
		ssize_t r;

		if (pieces[i].bopt_block == HY_MAP_HOME) {
			r = hy_device_read(engine->backing, file->backing_fd, (char *)buf + done,
					   len, (off_t)from);
		} else {
			atomic_fetch_add(&engine->bopt_reads, 1);
			r = hy_device_read(engine->bopt, 0, (char *)buf + done, len,
					   bopt_offset(engine, &pieces[i], from));
		}
		if (r < 0)
			return done ? (ssize_t)done : r;
		done += (size_t)r;
		if ((size_t)r < len)
			break; /* the end of the file, at home */
	}
	return (ssize_t)done;
}

/* The path below the cache: the indirection map, then the BOPT or home. */
static ssize_t lower_read(struct hy_engine *engine, struct hy_engine_file *file, void *buf,
			  size_t size, off_t off)
{
	struct hy_map_piece stack[PIECES_ON_STACK], *pieces, *heap;
	uint64_t first, last, end;
	uint32_t nblocks;
	ssize_t rc;
	int n;

	if (!uses_map(engine, file) || size == 0 || off < 0)
		return hy_device_read(engine->backing, file->backing_fd, buf, size, off);
	first = (uint64_t)off / BLOCK;
	end = (uint64_t)off + size;
	last = (end - 1) / BLOCK;
	if (last - first >= UINT32_MAX)
		return hy_device_read(engine->backing, file->backing_fd, buf, size, off);
	nblocks = (uint32_t)(last - first + 1);
	n = lookup(engine, file, first, nblocks, stack, &pieces, &heap);
	if (n < 0)
		return n;
	free(heap);
	/* the common case: nothing relocated, one request home (a block that
	 * becomes relocated meanwhile is a clean copy of home) */
	if (n == 1 && pieces[0].bopt_block == HY_MAP_HOME)
		return hy_device_read(engine->backing, file->backing_fd, buf, size, off);
	/* BOPT blocks are read under the file's gate, held shared, and looked
	 * up again under it: the reconfigurator takes every gate once after
	 * it drops extents, before it writes over their BOPT blocks, so no
	 * read still uses an old place when a new copy goes there */
	gate_read_lock(engine, file->file_id);
	n = lookup(engine, file, first, nblocks, stack, &pieces, &heap);
	if (n >= 0 && !stamp_matches(engine, file)) {
		/* the home file's ctime moved: a write through the mount between
		 * its home change and its stamp refresh, or a change outside the
		 * mount. With the gate exclusive the first has ended; if the
		 * stamp still differs the copies are stale (dropped, their newer
		 * blocks home first), else the read goes on with them */
		free(heap);
		hy_engine_gate_unlock(engine, file->file_id);
		hy_engine_gate_lock(engine, file->file_id);
		if (!stamp_matches(engine, file))
			drop_stale(engine, file);
		n = lookup(engine, file, first, nblocks, stack, &pieces, &heap);
	}
	rc = n < 0 ? n : read_pieces(engine, file, buf, off, end, pieces, n);
	hy_engine_gate_unlock(engine, file->file_id);
	free(heap);
	return rc;
}

/* Before relocated blocks of [@block, @block + @nblocks) change at home:
 * the release is journaled, then the map drops them, so that from now on
 * their one current copy is home. Nothing to do, and no
 * journal write, when none of the range is relocated. Dirty blocks must
 * have gone home first (settle()). */
static int release(struct hy_engine *engine, struct hy_engine_file *file, uint64_t block,
		   uint64_t nblocks)
{
	struct hy_map_piece piece;
	uint32_t probe = nblocks > UINT32_MAX ? UINT32_MAX : (uint32_t)nblocks;
	int64_t gone;
	int n;

	if (!uses_map(engine, file) || nblocks == 0)
		return 0;
	n = hy_map_lookup(engine->map, file->file_id, block, probe, &piece, 1);
	if (n < 0)
		return n;
	if (n == 1 && piece.bopt_block == HY_MAP_HOME && nblocks <= UINT32_MAX)
		return 0;
	/* not waited for: the change that follows moves the home file's
	 * ctime, so after a crash that lost this record the stamp check drops
	 * the copies before any read could use them */
	gone = hy_map_journal_release(engine->journal, engine->map, file->file_id, block, nblocks,
				      false);
	if (gone < 0)
		return (int)gone;
	atomic_fetch_add(&engine->released_blocks, (uint64_t)gone);
	return 0;
}

static uint64_t blocks_of(uint64_t off, uint64_t len, uint64_t *first)
{
	*first = off / BLOCK;
	return len ? (off + len - 1) / BLOCK - *first + 1 : 0;
}

/* Copies the dirty relocated pieces of [@block, @block + @nblocks) home
 * (within the home file's size: a dirty block past it was cut off), makes
 * them durable there, keeps the home file's modification time (the copy is
 * not a change the user made now), and marks them clean: journaled, then
 * in the map. The gate is held exclusive, so no write dirties them again
 * meanwhile. Returns the blocks made clean, or a negative errno. */
#define SYNC_CHUNK (1u << 20)

static int64_t sync_dirty(struct hy_engine *engine, struct hy_engine_file *file, uint64_t block,
			  uint64_t nblocks)
{
	struct hy_map_piece stack[PIECES_ON_STACK], *pieces, *heap;
	uint32_t probe = nblocks > UINT32_MAX ? UINT32_MAX : (uint32_t)nblocks;
	struct hy_device_attr attr = {0, -1, UINT64_MAX};
	uint64_t ticket = 0, cleaned = 0, dirty = 0;
	unsigned char *buf = NULL;
	int64_t rc = 0, home = file->backing_fd;
	bool opened = false;
	int n;

	if (!uses_map(engine, file) || nblocks == 0)
		return 0;
	if (block > UINT64_MAX - probe)
		probe = (uint32_t)(UINT64_MAX - block);
	n = lookup(engine, file, block, probe, stack, &pieces, &heap);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		if (pieces[i].bopt_block != HY_MAP_HOME && pieces[i].dirty)
			dirty += pieces[i].nblocks;
	if (!dirty)
		goto out;
	rc = hy_device_getattr(engine->backing, file->backing_fd, &attr);
	if (rc < 0 && rc != -EOPNOTSUPP) /* without it: no size to clip to */
		goto out;
	buf = malloc(SYNC_CHUNK);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	/* the descriptor may be a reader's */
	rc = hy_device_writable(engine->backing, file->backing_fd, &home, &opened);
	if (rc < 0)
		goto out;
	for (int i = 0; i < n && rc == 0; i++) {
		uint64_t at = pieces[i].block * BLOCK,
			 end = at + (uint64_t)pieces[i].nblocks * BLOCK;

		if (pieces[i].bopt_block == HY_MAP_HOME || !pieces[i].dirty)
			continue;
		if (end > attr.size)
			end = attr.size;
		while (at < end && rc == 0) {
			size_t len = end - at < SYNC_CHUNK ? (size_t)(end - at) : SYNC_CHUNK;
			ssize_t r = hy_device_read(engine->bopt, 0, buf, len,
						   bopt_offset(engine, &pieces[i], at));

			if (r == (ssize_t)len)
				r = hy_device_write(engine->backing, home, buf, len, (off_t)at);
			if (r != (ssize_t)len)
				rc = r < 0 ? r : -EIO;
			at += len;
		}
	}
	if (rc == 0)
		rc = hy_device_sync(engine->backing, home, true);
	/* the BOPT's copies stay in use, clean: they must be durable before
	 * the map says they equal home (a checkpoint may save that) */
	if (rc == 0)
		rc = hy_device_sync(engine->bopt, 0, true);
	if (rc == 0 && attr.mtime_ns >= 0) {
		int t = hy_device_set_mtime(engine->backing, home, attr.mtime_ns);

		if (t < 0 && t != -EOPNOTSUPP)
			hy_log(LOG_WARNING,
			       "file %" PRIu64 ": cannot keep its modification time after its "
			       "blocks went home: %s",
			       file->file_id, strerror(-t));
	}
	for (int i = 0; i < n && rc == 0; i++) {
		struct hy_map_journal_record r = {
			.type = HY_MJ_CLEAN,
			.file_id = file->file_id,
			.block = pieces[i].block,
			.nblocks = pieces[i].nblocks,
		};

		if (pieces[i].bopt_block == HY_MAP_HOME || !pieces[i].dirty)
			continue;
		if (engine->journal)
			rc = hy_map_journal_write(engine->journal, &r, &ticket);
	}
	if (rc == 0 && ticket)
		rc = hy_map_journal_wait(engine->journal, ticket);
	for (int i = 0; i < n && rc == 0; i++) {
		int64_t k;

		if (pieces[i].bopt_block == HY_MAP_HOME || !pieces[i].dirty)
			continue;
		k = hy_map_set_dirty(engine->map, file->file_id, pieces[i].block, pieces[i].nblocks,
				     false);
		if (k < 0)
			rc = k;
		else
			cleaned += (uint64_t)k;
	}
	if (rc == 0)
		atomic_fetch_add(&engine->synced_blocks, cleaned);
out:
	if (opened)
		hy_device_close_object(engine->backing, home);
	free(buf);
	free(heap);
	return rc < 0 ? rc : (int64_t)cleaned;
}

/* What changes home data that relocated blocks may hold: their newer
 * (dirty) copies go home first, then the range is released. Gate held
 * exclusive. */
static int settle(struct hy_engine *engine, struct hy_engine_file *file, uint64_t block,
		  uint64_t nblocks)
{
	int64_t rc = sync_dirty(engine, file, block, nblocks);

	return rc < 0 ? (int)rc : release(engine, file, block, nblocks);
}

/* BORG's write: relocated pieces are written into the BOPT and marked
 * dirty, the rest home. The gate is held shared. Crash consistency comes
 * from the order: first the home file's modification time is set (so its
 * ctime moves: after a crash the stamp check drops copies the journal did
 * not keep dirty, before any read), then the dirty marks are journaled
 * (not waited for: fsync and close make them durable with the data's way
 * home), then the data goes to the BOPT. Unsynced writes may be lost in a
 * crash, as with any filesystem; they never come back half. */
static ssize_t write_mapped(struct hy_engine *engine, struct hy_engine_file *file, const void *buf,
			    size_t size, off_t off, struct hy_map_piece *pieces, int n)
{
	uint64_t end = (uint64_t)off + size, ticket;
	bool into_bopt = false;
	size_t done = 0;
	int t;

	for (int i = 0; i < n; i++)
		if (pieces[i].bopt_block != HY_MAP_HOME)
			into_bopt = true;
	/* the home file was written, though its blocks did not change: its
	 * time says so, as a plain write's would */
	t = into_bopt ? hy_device_set_mtime(engine->backing, file->backing_fd, -1) : 0;
	if (t < 0 && t != -EOPNOTSUPP)
		hy_log(LOG_WARNING, "file %" PRIu64 ": cannot set its modification time: %s",
		       file->file_id, strerror(-t));
	for (int i = 0; i < n; i++) {
		struct hy_map_journal_record r = {
			.type = HY_MJ_DIRTY,
			.file_id = file->file_id,
			.block = pieces[i].block,
			.nblocks = pieces[i].nblocks,
		};
		int rc;

		if (pieces[i].bopt_block == HY_MAP_HOME || pieces[i].dirty)
			continue;
		if (engine->journal &&
		    (rc = hy_map_journal_write(engine->journal, &r, &ticket)) < 0)
			return rc;
		if (hy_map_set_dirty(engine->map, file->file_id, pieces[i].block, pieces[i].nblocks,
				     true) < 0)
			return -EIO;
	}
	for (int i = 0; i < n; i++) {
		uint64_t from;
		size_t len = piece_span(&pieces[i], (uint64_t)off, end, &from);
		ssize_t r;

		if (pieces[i].bopt_block == HY_MAP_HOME) {
			r = hy_device_write(engine->backing, file->backing_fd,
					    (const char *)buf + done, len, (off_t)from);
		} else {
			atomic_fetch_add(&engine->bopt_writes, 1);
			r = hy_device_write(engine->bopt, 0, (const char *)buf + done, len,
					    bopt_offset(engine, &pieces[i], from));
		}
		if (r < 0) {
			if (done)
				break;
			return r;
		}
		done += (size_t)r;
		if ((size_t)r < len)
			break;
	}
	return (ssize_t)done;
}

static ssize_t lower_write(struct hy_engine *engine, struct hy_engine_file *file, const void *buf,
			   size_t size, off_t off)
{
	struct hy_map_piece stack[PIECES_ON_STACK], *pieces = stack, *heap = NULL;
	uint64_t first, nblocks;
	bool held;
	ssize_t rc;
	int n;

	if (!uses_map(engine, file) || off < 0 || size == 0)
		return hy_device_write(engine->backing, file->backing_fd, buf, size, off);
	nblocks = blocks_of((uint64_t)off, size, &first);
	held = change_begin(engine, file, false);
	n = nblocks <= UINT32_MAX
		    ? lookup(engine, file, first, (uint32_t)nblocks, stack, &pieces, &heap)
		    : -EFBIG;
	if (n < 0) {
		rc = n;
	} else if (n == 1 && pieces[0].bopt_block == HY_MAP_HOME) {
		rc = hy_device_write(engine->backing, file->backing_fd, buf, size, off);
	} else if (engine->bopt_writes_on) {
		rc = write_mapped(engine, file, buf, size, off, pieces, n);
	} else {
		/* home only: the relocated blocks go home first, then away */
		change_end(engine, file, held);
		held = change_begin(engine, file, true);
		rc = settle(engine, file, first, nblocks);
		if (rc >= 0)
			rc = hy_device_write(engine->backing, file->backing_fd, buf, size, off);
	}
	free(heap);
	change_end(engine, file, held);
	return rc;
}

static int map_truncate(struct hy_engine *engine, struct hy_engine_file *file, off_t size)
{
	bool held = change_begin(engine, file, true);
	/* from the block holding the new end on: its tail, or all of it, changes */
	int rc = size >= 0 ? settle(engine, file, (uint64_t)size / BLOCK,
				    UINT64_MAX - (uint64_t)size / BLOCK)
			   : 0;

	if (rc >= 0)
		rc = hy_device_truncate(engine->backing, file->backing_fd, size);
	change_end(engine, file, held);
	return rc;
}

static int64_t sync_home(struct hy_engine *engine, struct hy_engine_file *file)
{
	int64_t rc;

	if (!uses_map(engine, file))
		return 0;
	/* not a change of the file's data (the home copies catch up with the
	 * BOPT's), so the gate's count stays: a copy in progress is still good */
	copies_fresh(engine, file);
	hy_engine_gate_lock(engine, file->file_id);
	rc = sync_dirty(engine, file, 0, UINT64_MAX);
	if (rc > 0)
		refresh_stamp(engine, file);
	hy_engine_gate_unlock(engine, file->file_id);
	return rc;
}

/* sync_home() from outside the cache: the writes home move the ctime,
 * which the cache's stamp must follow (they are the mount's own), so the
 * file's cache gate is held across them as for a metadata change (cache
 * gate, then engine gate). */
static int64_t sync_home_gated(struct hy_engine *engine, struct hy_engine_file *file)
{
	struct hy_cache_file f = cache_file(file);
	bool fresh;
	int64_t rc;

	if (!uses_map(engine, file) || !uses_cache(engine, file))
		return sync_home(engine, file);
	fresh = hy_cache_meta_begin(engine->cache, &f);
	rc = sync_home(engine, file);
	hy_cache_meta_end(engine->cache, &f, fresh);
	return rc;
}

int64_t hy_engine_sync_home(struct hy_engine *engine, struct hy_engine_file *file)
{
	return sync_home_gated(engine, file);
}

/* @in_cache: called by the cache, with the file's cache gate held */
static int lower_fsync(struct hy_engine *engine, struct hy_engine_file *file, bool data_only,
		       bool in_cache)
{
	int64_t rc = 0;
	int64_t stamp;

	/* BOPT copies written through the mount go home: fsync'd data is
	 * where a plain directory would have it (DESIGN.md invariant 1) */
	if (uses_map(engine, file) && hy_map_get_stamp(engine->map, file->file_id, &stamp) == 0)
		rc = in_cache ? sync_home(engine, file) : sync_home_gated(engine, file);
	/* releases are journaled without waiting (a moved ctime covers a
	 * crash); fdatasync need not make the ctime durable, so the records
	 * must be */
	if (rc == 0 && uses_map(engine, file) && engine->journal)
		rc = hy_map_journal_sync(engine->journal);
	if (rc < 0)
		return (int)rc;
	return hy_device_sync(engine->backing, file->backing_fd, data_only);
}

static bool map_has_copies(struct hy_engine *engine, uint64_t file_id)
{
	int64_t stamp;

	return engine->map && file_id && hy_map_get_stamp(engine->map, file_id, &stamp) == 0;
}

static bool map_meta_begin(struct hy_engine *engine, struct hy_engine_file *file)
{
	int64_t stamp;

	return uses_map(engine, file) &&
	       hy_map_get_stamp(engine->map, file->file_id, &stamp) == 0 &&
	       stamp_matches(engine, file);
}

static int map_close(struct hy_engine *engine, struct hy_engine_file *file)
{
	int64_t stamp, rc = 0;

	/* FusionCache's session write-back: a closed file's BOPT writes go home */
	if (uses_map(engine, file) && hy_map_get_stamp(engine->map, file->file_id, &stamp) == 0)
		rc = sync_home_gated(engine, file);
	return rc < 0 ? (int)rc : 0;
}

static int map_fallocate(struct hy_engine *engine, struct hy_engine_file *file, int mode, off_t off,
			 off_t len)
{
	bool held = change_begin(engine, file, true);
	uint64_t first, n;
	int rc = 0;

	/* punching a hole or zeroing changes the data, collapsing or inserting
	 * a range moves everything after it, and plain allocation may grow the
	 * file: what relocated blocks there hold goes home, then the range (to
	 * the end, for a move) is released */
	if (off >= 0 && len > 0) {
		n = blocks_of((uint64_t)off, (uint64_t)len, &first);
		if (mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE))
			n = UINT64_MAX - first;
		rc = settle(engine, file, first, n);
	}
	if (rc >= 0)
		rc = hy_device_allocate(engine->backing, file->backing_fd, mode, off, len);
	change_end(engine, file, held);
	return rc;
}

/* Both files are in the backing directory, so the kernel can copy (or
 * share extents) without the data passing through the daemon: the
 * source's BOPT writes go home first, and the destination's relocated
 * blocks in the range are settled. */
static ssize_t map_copy_range(struct hy_engine *engine, struct hy_engine_file *in, off_t off_in,
			      struct hy_engine_file *out, off_t off_out, size_t len, int flags)
{
	uint64_t first, n;
	ssize_t copied;
	int64_t rc = 0;
	bool held;

	if (off_in >= 0 && len > 0) {
		held = change_begin(engine, in, true);
		n = blocks_of((uint64_t)off_in, len, &first);
		if (held)
			rc = sync_dirty(engine, in, first, n);
		change_end(engine, in, held);
		if (rc < 0)
			return rc;
	}
	held = change_begin(engine, out, true);
	if (off_out >= 0) {
		n = blocks_of((uint64_t)off_out, len, &first);
		rc = settle(engine, out, first, n);
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

/* ---- the cache over the lower path ------------------------------------ */

static void as_engine_file(const struct hy_cache_file *f, struct hy_engine_file *out)
{
	out->backing_fd = (int)f->object;
	out->file_id = f->file_id;
	out->meta_map = out->meta_cache = false;
}

static ssize_t cache_lower_read(void *arg, const struct hy_cache_file *f, void *buf, size_t len,
				off_t off)
{
	struct hy_engine_file file;

	as_engine_file(f, &file);
	return lower_read(arg, &file, buf, len, off);
}

static ssize_t cache_lower_write(void *arg, const struct hy_cache_file *f, const void *buf,
				 size_t len, off_t off)
{
	struct hy_engine_file file;

	as_engine_file(f, &file);
	return lower_write(arg, &file, buf, len, off);
}

static int cache_lower_getattr(void *arg, const struct hy_cache_file *f, struct hy_device_attr *out)
{
	struct hy_engine *engine = arg;

	return hy_device_getattr(engine->backing, f->object, out);
}

/* The cache's changes of a home file's room and time: under the
 * engine's gate, so that BORG's stamp follows them (they are changes
 * through the mount, and each moves the ctime). */
enum home_change { HOME_RESERVE, HOME_SET_MTIME };

static int change_home(struct hy_engine *engine, const struct hy_cache_file *f,
		       enum home_change what, int64_t a, int64_t b)
{
	struct hy_engine_file file;
	bool held;
	int rc = -EINVAL;

	as_engine_file(f, &file);
	held = change_begin(engine, &file, false);
	switch (what) {
	case HOME_RESERVE: /* room for a write-back write, the size kept */
		rc = hy_device_allocate(engine->backing, f->object, FALLOC_FL_KEEP_SIZE, (off_t)a,
					(off_t)b);
		break;
	case HOME_SET_MTIME:
		rc = hy_device_set_mtime(engine->backing, f->object, a);
		break;
	}
	change_end(engine, &file, held);
	return rc;
}

static int cache_lower_reserve(void *arg, const struct hy_cache_file *f, uint64_t off, uint64_t len)
{
	return change_home(arg, f, HOME_RESERVE, (int64_t)off, (int64_t)len);
}

static int cache_lower_set_mtime(void *arg, const struct hy_cache_file *f, int64_t mtime_ns)
{
	return change_home(arg, f, HOME_SET_MTIME, mtime_ns, 0);
}

static int lower_fsync(struct hy_engine *engine, struct hy_engine_file *file, bool data_only,
		       bool in_cache);

static int cache_lower_sync(void *arg, const struct hy_cache_file *f)
{
	struct hy_engine_file file;

	as_engine_file(f, &file);
	return lower_fsync(arg, &file, true, true);
}

static int cache_lower_hold(void *arg, const struct hy_cache_file *f, int64_t *object)
{
	struct hy_engine *engine = arg;
	bool opened = false;
	int64_t w;
	int rc;

	(void)opened;
	if (atomic_load(&engine->cache_objects) >= HY_ENGINE_CACHE_OBJECTS)
		return -EMFILE; /* the cache writes this file through meanwhile */
	if (fcntl((int)f->object, F_GETFD) >= 0) {
		/* a descriptor of its own that reads and writes: the request's
		 * may be either only, and is the caller's to close */
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)f->object);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		w = fd;
	} else {
		/* a model device's objects are not descriptors */
		rc = hy_device_writable(engine->backing, f->object, &w, &opened);
		if (rc < 0)
			return rc;
	}
	atomic_fetch_add(&engine->cache_objects, 1);
	*object = w;
	return 0;
}

static void cache_lower_put(void *arg, int64_t object)
{
	struct hy_engine *engine = arg;

	atomic_fetch_sub(&engine->cache_objects, 1);
	hy_device_close_object(engine->backing, object);
}

/* PORE's zones: where the home file's blocks lie (its BOPT copies are
 * not asked about: the cleaner writes home). */
static int cache_lower_addresses(void *arg, const struct hy_cache_file *f, const uint64_t *blocks,
				 size_t n, uint64_t *out)
{
	struct hy_engine *engine = arg;
	uint64_t *offsets = malloc((n ? n : 1) * sizeof(*offsets));
	int rc;

	if (!offsets)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		offsets[i] = blocks[i] * BLOCK;
	rc = hy_device_addresses(engine->backing, f->object, offsets, n, out);
	free(offsets);
	return rc;
}

void hy_engine_cache_lower(struct hy_engine *engine, struct hy_cache_lower *out)
{
	*out = (struct hy_cache_lower){
		.arg = engine,
		.read = cache_lower_read,
		.write = cache_lower_write,
		.getattr = cache_lower_getattr,
		.set_mtime = cache_lower_set_mtime,
		.sync = cache_lower_sync,
		.hold_object = cache_lower_hold,
		.put_object = cache_lower_put,
		.addresses = cache_lower_addresses,
		.reserve = cache_lower_reserve,
	};
}

void hy_engine_set_cache(struct hy_engine *engine, struct hy_cache *cache)
{
	engine->cache = cache;
}

ssize_t hy_engine_read(struct hy_engine *engine, struct hy_engine_file *file, void *buf,
		       size_t size, off_t off)
{
	return hy_engine_read_hinted(engine, file, NULL, buf, size, off);
}

ssize_t hy_engine_read_hinted(struct hy_engine *engine, struct hy_engine_file *file,
			      const struct hy_cache_hint *hint, void *buf, size_t size, off_t off)
{
	struct hy_cache_file f = cache_file(file);

	if (uses_cache(engine, file))
		return hy_cache_read_hinted(engine->cache, &f, hint, buf, size, off);
	return lower_read(engine, file, buf, size, off);
}

ssize_t hy_engine_write(struct hy_engine *engine, struct hy_engine_file *file, const void *buf,
			size_t size, off_t off)
{
	return hy_engine_write_hinted(engine, file, NULL, buf, size, off);
}

ssize_t hy_engine_write_hinted(struct hy_engine *engine, struct hy_engine_file *file,
			       const struct hy_cache_hint *hint, const void *buf, size_t size,
			       off_t off)
{
	struct hy_cache_file f = cache_file(file);

	if (uses_cache(engine, file))
		return hy_cache_write_hinted(engine->cache, &f, hint, buf, size, off);
	return lower_write(engine, file, buf, size, off);
}

void hy_engine_set_reca(struct hy_engine *engine, struct hy_reca *reca)
{
	engine->reca = reca;
}

/* ReCA's word on one request, asked once: the hint for the cache, or NULL. */
static const struct hy_cache_hint *reca_hint(struct hy_engine *engine,
					     const struct hy_engine_file *file,
					     struct hy_engine_request *req, bool write, size_t size,
					     off_t off)
{
	struct hy_reca_request rr;

	if (!req)
		return NULL;
	memset(&req->answer, 0, sizeof(req->answer));
	if (!engine->reca || size == 0 || off < 0)
		return NULL;
	rr = (struct hy_reca_request){
		.pid = req->pid,
		.file_id = file->file_id,
		.offset = (uint64_t)off,
		.length = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size,
		.write = write,
	};
	rr.file_size = rr.offset + rr.length;
	hy_reca_request(engine->reca, &rr, &req->answer);
	return req->answer.hinted ? &req->answer.hint : NULL;
}

ssize_t hy_engine_read_as(struct hy_engine *engine, struct hy_engine_file *file,
			  struct hy_engine_request *req, void *buf, size_t size, off_t off)
{
	return hy_engine_read_hinted(engine, file, reca_hint(engine, file, req, false, size, off),
				     buf, size, off);
}

ssize_t hy_engine_write_as(struct hy_engine *engine, struct hy_engine_file *file,
			   struct hy_engine_request *req, const void *buf, size_t size, off_t off)
{
	return hy_engine_write_hinted(engine, file, reca_hint(engine, file, req, true, size, off),
				      buf, size, off);
}

int hy_engine_truncate(struct hy_engine *engine, struct hy_engine_file *file, off_t size)
{
	struct hy_cache_file f = cache_file(file);
	bool cached = uses_cache(engine, file) && size >= 0;
	/* the cache's gate is held across the change, so no read caches the
	 * old bytes past the new end meanwhile */
	int rc = cached ? hy_cache_change_begin(engine->cache, &f, (uint64_t)size, UINT64_MAX) : 0;

	if (rc == 0)
		rc = map_truncate(engine, file, size);
	if (cached)
		hy_cache_change_end(engine->cache, &f);
	return rc;
}

int hy_engine_fallocate(struct hy_engine *engine, struct hy_engine_file *file, int mode, off_t off,
			off_t len)
{
	struct hy_cache_file f = cache_file(file);
	bool cached = uses_cache(engine, file) && off >= 0 && len > 0;
	/* plain allocation (which may grow the file) changes no data: nothing
	 * leaves the cache, but it moves the ctime (and maybe the size), so
	 * it goes under the gate all the same and the stamp follows it */
	uint64_t n = (mode & ~FALLOC_FL_KEEP_SIZE) == 0				    ? 0
		     : (mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)) ? UINT64_MAX
										    : (uint64_t)len;
	int rc = cached ? hy_cache_change_begin(engine->cache, &f, (uint64_t)off, n) : 0;

	if (rc == 0)
		rc = map_fallocate(engine, file, mode, off, len);
	if (cached)
		hy_cache_change_end(engine->cache, &f);
	return rc;
}

ssize_t hy_engine_copy_range(struct hy_engine *engine, struct hy_engine_file *in, off_t off_in,
			     struct hy_engine_file *out, off_t off_out, size_t len, int flags)
{
	struct hy_cache_file fi = cache_file(in), fo = cache_file(out);
	bool cached = uses_cache(engine, out) && off_out >= 0 && len > 0;
	ssize_t rc = 0;

	/* the kernel copies home to home: the source's cached writes go home
	 * first, and the destination's range leaves the cache */
	if (uses_cache(engine, in) && off_in >= 0 && len > 0)
		rc = hy_cache_write_home(engine->cache, &fi, (uint64_t)off_in, len);
	if (rc < 0)
		return rc;
	if (cached)
		rc = hy_cache_change_begin(engine->cache, &fo, (uint64_t)off_out, len);
	if (rc == 0)
		rc = map_copy_range(engine, in, off_in, out, off_out, len, flags);
	if (cached)
		hy_cache_change_end(engine->cache, &fo);
	return rc;
}

int hy_engine_fsync(struct hy_engine *engine, struct hy_engine_file *file, bool data_only)
{
	struct hy_cache_file f = cache_file(file);
	uint64_t token = 0;
	int rc = uses_cache(engine, file) ? hy_cache_fsync(engine->cache, &f, &token) : 0;

	if (rc < 0)
		return rc;
	/* the cache made the writes durable in its store, and home has
	 * nothing of the cache's to sync (nor BORG's copies): done, as an
	 * SSD write-back cache is meant to */
	if (rc == 1 && !map_has_copies(engine, file->file_id))
		return 0;
	rc = lower_fsync(engine, file, data_only, false);
	if (rc == 0 && uses_cache(engine, file))
		hy_cache_home_synced(engine->cache, &f, token);
	return rc;
}

int hy_engine_close(struct hy_engine *engine, struct hy_engine_file *file)
{
	struct hy_cache_file f = cache_file(file);

	if (uses_cache(engine, file))
		hy_cache_close_file(engine->cache, &f);
	return map_close(engine, file);
}

int hy_engine_forget_file(struct hy_engine *engine, uint64_t file_id)
{
	return engine->cache && file_id ? hy_cache_forget_file(engine->cache, file_id) : 0;
}

void hy_engine_home_changed(struct hy_engine *engine, uint64_t file_id)
{
	if (engine->cache && file_id)
		hy_cache_home_changed(engine->cache, file_id);
}

bool hy_engine_has_copies(struct hy_engine *engine, uint64_t file_id)
{
	return map_has_copies(engine, file_id) ||
	       (engine->cache && file_id && hy_cache_has_blocks(engine->cache, file_id));
}

bool hy_engine_meta_begin(struct hy_engine *engine, struct hy_engine_file *file)
{
	struct hy_cache_file f = cache_file(file);

	file->meta_map = map_meta_begin(engine, file);
	file->meta_cache = uses_cache(engine, file) && hy_cache_meta_begin(engine->cache, &f);
	return file->meta_map || file->meta_cache;
}

void hy_engine_meta_end(struct hy_engine *engine, struct hy_engine_file *file, bool fresh)
{
	struct hy_cache_file f = cache_file(file);

	if (fresh && file->meta_map)
		refresh_stamp(engine, file);
	if (uses_cache(engine, file))
		hy_cache_meta_end(engine->cache, &f, fresh && file->meta_cache);
}

int hy_engine_prepare_seek(struct hy_engine *engine, struct hy_engine_file *file)
{
	struct hy_cache_file f = cache_file(file);

	return uses_cache(engine, file) ? hy_cache_write_home(engine->cache, &f, 0, UINT64_MAX) : 0;
}

/* The open truncates the home file itself, outside every write path: both
 * gates are held across it (cache first, as everywhere), so that neither
 * the cache's cleaner nor BORG's write-back of dirty BOPT blocks, each
 * clipping to a size it read before, writes old blocks home past the new
 * end; and the engine's gate counts it as a change, so that a copy of the
 * file into the BOPT in progress is not committed. */
bool hy_engine_truncate_open_begin(struct hy_engine *engine, uint64_t file_id)
{
	if ((!engine->cache && !engine->map) || !file_id)
		return false;
	if (engine->cache)
		hy_cache_truncate_open_begin(engine->cache, file_id);
	if (engine->map) {
		struct hy_engine_gate *gate = gate_of(engine, file_id);

		pthread_rwlock_wrlock(&gate->lock);
		atomic_fetch_add(&gate->changes, 1);
	}
	return true;
}

void hy_engine_truncate_open_end(struct hy_engine *engine, uint64_t file_id, int fd)
{
	struct hy_cache_file f = {file_id, fd};

	if (engine->map) {
		struct hy_engine_file file;

		/* the truncation went through the mount: its relocated blocks
		 * lie past the end now (their dirty ones with them) and are
		 * released, and the stamp follows the new ctime, instead of the
		 * next read taking the file for one changed outside */
		as_engine_file(&f, &file);
		if (fd >= 0 && uses_map(engine, &file)) {
			int rc = settle(engine, &file, 0, UINT64_MAX);

			if (rc < 0)
				hy_log(LOG_WARNING,
				       "file %" PRIu64 ": cannot release its BOPT copies after "
				       "O_TRUNC (the stamp check drops them): %s",
				       file_id, strerror(-rc));
			else
				refresh_stamp(engine, &file);
		}
		pthread_rwlock_unlock(&gate_of(engine, file_id)->lock);
	}
	if (engine->cache)
		hy_cache_truncate_open_end(engine->cache, &f);
}
