/* indirector.c - see include/hybridfs/indirector.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/log.h"

#include "hybridfs/device.h"
#include "hybridfs/indirector.h"
#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"
#include "hybridfs/stamp.h"

#define BLOCK		4096
#define PIECES_ON_STACK 16

/* A file as the path below the cache names it. */
struct home_file {
	uint64_t file_id;
	int64_t object;
};

int hy_indirector_new(struct hy_device *backing, struct hy_indirector **out)
{
	struct hy_indirector *ind = calloc(1, sizeof(*ind));

	*out = NULL;
	if (!ind)
		return -ENOMEM;
	ind->backing = backing;
	if (pthread_mutex_init(&ind->ahead_lock, NULL) != 0) {
		free(ind);
		return -ENOMEM;
	}
	for (int i = 0; i < HY_INDIRECTOR_GATES; i++) {
		if (pthread_rwlock_init(&ind->gates[i].lock, NULL) != 0) {
			while (i-- > 0)
				pthread_rwlock_destroy(&ind->gates[i].lock);
			pthread_mutex_destroy(&ind->ahead_lock);
			free(ind);
			return -ENOMEM;
		}
	}
	*out = ind;
	return 0;
}

void hy_indirector_free(struct hy_indirector *ind)
{
	if (!ind)
		return;
	for (int i = 0; i < HY_INDIRECTOR_GATES; i++)
		pthread_rwlock_destroy(&ind->gates[i].lock);
	pthread_mutex_destroy(&ind->ahead_lock);
	free(ind);
}

static struct hy_indirector_gate *gate_of(struct hy_indirector *ind, uint64_t file_id)
{
	return &ind->gates[file_id % HY_INDIRECTOR_GATES];
}

static void gate_lock(struct hy_indirector *ind, uint64_t file_id)
{
	pthread_rwlock_wrlock(&gate_of(ind, file_id)->lock);
}

static void gate_read_lock(struct hy_indirector *ind, uint64_t file_id)
{
	pthread_rwlock_rdlock(&gate_of(ind, file_id)->lock);
}

static void gate_unlock(struct hy_indirector *ind, uint64_t file_id)
{
	pthread_rwlock_unlock(&gate_of(ind, file_id)->lock);
}

/* A record of @file_id's was written without waiting: its fsync must
 * wait for it (the journal's count now covers it). Under the file's gate,
 * which a checkpoint's quiesce excludes. */
static void note_unwaited(struct hy_indirector *ind, uint64_t file_id)
{
	struct hy_indirector_gate *gate = gate_of(ind, file_id);
	uint64_t written = ind->journal ? hy_map_journal_records(ind->journal) : 0;
	uint64_t at = atomic_load(&gate->journal_ticket);

	while (at < written && !atomic_compare_exchange_weak(&gate->journal_ticket, &at, written))
		;
}

static void quiesce(struct hy_indirector *ind)
{
	for (int i = 0; i < HY_INDIRECTOR_GATES; i++)
		pthread_rwlock_wrlock(&ind->gates[i].lock);
}

static void resume(struct hy_indirector *ind)
{
	for (int i = HY_INDIRECTOR_GATES - 1; i >= 0; i--)
		pthread_rwlock_unlock(&ind->gates[i].lock);
}

void hy_indirector_set_bopt_writes(struct hy_indirector *ind, bool on)
{
	ind->bopt_writes_on = on;
}

void hy_indirector_set_bopt(struct hy_indirector *ind, struct hy_map *map, struct hy_device *bopt,
			    uint64_t read_base, struct hy_map_journal *journal)
{
	ind->map = map;
	ind->bopt = bopt;
	ind->bopt_read_base = read_base;
	ind->journal = journal;
}

void hy_indirector_set_readahead(struct hy_indirector *ind, uint64_t bytes, uint64_t read_end)
{
	ind->readahead_bytes = bytes;
	ind->bopt_read_end = read_end;
}

void hy_indirector_get_stats(struct hy_indirector *ind, struct hy_indirector_stats *out)
{
	out->readahead_bytes = ind->readahead_bytes;
	out->readaheads = atomic_load(&ind->readaheads);
	out->readahead_bytes_asked = atomic_load(&ind->readahead_bytes_asked);
	out->stale_files = atomic_load(&ind->stale_files);
	out->bopt_reads = atomic_load(&ind->bopt_reads);
	out->released_blocks = atomic_load(&ind->released_blocks);
	out->bopt_writes = atomic_load(&ind->bopt_writes);
	out->synced_blocks = atomic_load(&ind->synced_blocks);
	out->bopt_writes_on = ind->bopt_writes_on;
	out->bopt = ind->bopt;
}

uint64_t hy_indirector_bopt_reads(struct hy_indirector *ind)
{
	return atomic_load_explicit(&ind->bopt_reads, memory_order_relaxed);
}

static bool uses_map(const struct hy_indirector *ind, const struct home_file *file)
{
	return ind->map && file->file_id;
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
static off_t bopt_offset(const struct hy_indirector *ind, const struct hy_map_piece *piece,
			 uint64_t from)
{
	return (off_t)(ind->bopt_read_base + piece->bopt_block * BLOCK +
		       (from - piece->block * BLOCK));
}

/* The pieces of [@first, @first + @nblocks): on the stack when they fit,
 * else in *@heap (freed by the caller). Returns the count or -errno. */
static int lookup(struct hy_indirector *ind, const struct home_file *file, uint64_t first,
		  uint32_t nblocks, struct hy_map_piece *stack, struct hy_map_piece **pieces,
		  struct hy_map_piece **heap)
{
	int n = hy_map_lookup(ind->map, file->file_id, first, nblocks, stack, PIECES_ON_STACK);

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
		again = hy_map_lookup(ind->map, file->file_id, first, nblocks, more, (size_t)n);
		if (again <= n) {
			*pieces = more;
			return again;
		}
		n = again;
	}
	return n;
}

static int release(struct hy_indirector *ind, struct home_file *file, uint64_t block,
		   uint64_t nblocks);

/* The home file's size, which bounds what its BOPT copies may serve:
 * UINT64_MAX where the medium cannot tell (the simulator's). */
#define SIZE_UNKNOWN UINT64_MAX

/* Whether @file's home ctime is still the stamp its copies were made
 * under (0: unknown, never fresh); *@size (when not NULL) the home file's
 * size as read with it. */
static bool stamp_matches_sized(struct hy_indirector *ind, struct home_file *file, uint64_t *size)
{
	struct hy_device_attr now;
	int64_t stamp;
	int rc;

	if (size)
		*size = SIZE_UNKNOWN;
	if (hy_map_get_stamp(ind->map, file->file_id, &stamp) != 0)
		return true; /* nothing relocated (any more) */
	rc = hy_device_getattr(ind->backing, file->object, &now);
	if (rc == -EOPNOTSUPP)
		return true; /* a medium nobody else writes (the simulator's) */
	if (rc == 0 && size)
		*size = now.size;
	/* a truncation through the mount releases what it cuts and a write
	 * past the end goes home, so only an outside change can make the
	 * copies disagree with home, and it moves the ctime */
	return rc == 0 && hy_stamp_check(stamp, 0, &now) == HY_STAMP_FRESH;
}

static bool stamp_matches(struct hy_indirector *ind, struct home_file *file)
{
	return stamp_matches_sized(ind, file, NULL);
}

static int64_t sync_dirty(struct hy_indirector *ind, struct home_file *file, uint64_t block,
			  uint64_t nblocks);

/* Drops every copy of @file: it changed outside the mount. Blocks written
 * through the mount and not yet home go home first (within the file's
 * size now), so no acknowledged write is lost. Gate held exclusive. */
static void drop_stale(struct hy_indirector *ind, struct home_file *file)
{
	int64_t synced = sync_dirty(ind, file, 0, UINT64_MAX);
	int rc = synced < 0 ? (int)synced : release(ind, file, 0, UINT64_MAX);

	if (rc < 0) {
		hy_log(LOG_ERR,
		       "file %" PRIu64 " changed outside the mount, and its BOPT copies "
		       "cannot be dropped: %s",
		       file->file_id, strerror(-rc));
		return;
	}
	atomic_fetch_add(&ind->stale_files, 1);
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
static bool copies_fresh(struct hy_indirector *ind, struct home_file *file)
{
	bool fresh;

	if (stamp_matches(ind, file))
		return true;
	gate_lock(ind, file->file_id);
	fresh = stamp_matches(ind, file);
	if (!fresh)
		drop_stale(ind, file);
	gate_unlock(ind, file->file_id);
	return fresh;
}

/* A change of @file's data begins: copies made stale by an outside change
 * dropped, then its gate held, shared for writes (they only add dirty
 * marks, which commute) or exclusive for what releases or syncs blocks
 * (truncation, allocation, copies, sync home). Returns whether it is held. */
static bool change_begin(struct hy_indirector *ind, struct home_file *file, bool exclusive)
{
	struct hy_indirector_gate *gate;

	if (!uses_map(ind, file))
		return false;
	copies_fresh(ind, file);
	gate = gate_of(ind, file->file_id);
	if (exclusive)
		pthread_rwlock_wrlock(&gate->lock);
	else
		pthread_rwlock_rdlock(&gate->lock);
	atomic_fetch_add(&gate->changes, 1);
	return true;
}

/* After a change through the mount: the copies left are current, so the
 * stamp follows the home file's new ctime. The gate is held. */
static void refresh_stamp(struct hy_indirector *ind, struct home_file *file)
{
	int64_t stamp, now;

	/* only forward: two writers of the file may refresh in either order,
	 * and the older ctime would make the file look changed outside */
	if (hy_map_get_stamp(ind->map, file->file_id, &stamp) == 0 &&
	    hy_device_stamp(ind->backing, file->object, &now) == 0 && hy_stamp_moves(stamp, now))
		hy_map_set_stamp(ind->map, file->file_id, now);
}

/* ... and ends. */
static void change_end(struct hy_indirector *ind, struct home_file *file, bool held)
{
	if (!held)
		return;
	refresh_stamp(ind, file);
	pthread_rwlock_unlock(&gate_of(ind, file->file_id)->lock);
}

/* After a BOPT read of @file_id's bytes at device offsets [@from, @to):
 * the read-ahead along the plan (hy_indirector_set_readahead). A chain
 * starts when a read of another file begins within a block of where the
 * last one ended (the planner packs files back to back; a block of slack
 * for a tail not read, and for requests of parallel threads that arrive
 * a little out of order); once started, reads inside what was asked for
 * keep it going. */
static void read_ahead(struct hy_indirector *ind, uint64_t file_id, uint64_t from, uint64_t to)
{
	uint64_t window = ind->readahead_bytes, start = 0, end = 0;
	bool chain, inside;
	int rc;

	if (!window)
		return;
	pthread_mutex_lock(&ind->ahead_lock);
	chain = file_id != ind->ahead_file && from + BLOCK >= ind->ahead_next &&
		from <= ind->ahead_next + BLOCK;
	inside = from + BLOCK >= ind->ahead_next && to <= ind->ahead_end;
	if (chain || inside) {
		start = to > ind->ahead_end ? to : ind->ahead_end;
		end = to + window < ind->bopt_read_end ? to + window : ind->bopt_read_end;
		/* ask again once half of what is ahead has been read */
		if (ind->ahead_end >= to + window / 2 || end <= start)
			end = start = 0;
		else
			ind->ahead_end = end;
	} else {
		ind->ahead_end = 0; /* a jump: no chain until one starts here */
	}
	ind->ahead_next = to;
	ind->ahead_file = file_id;
	pthread_mutex_unlock(&ind->ahead_lock);
	if (end <= start)
		return;
	rc = hy_device_prefetch(ind->bopt, 0, (off_t)start, (off_t)(end - start));
	if (rc == 0) {
		atomic_fetch_add(&ind->readaheads, 1);
		atomic_fetch_add(&ind->readahead_bytes_asked, end - start);
	} else if (rc != -EOPNOTSUPP) {
		hy_log(LOG_DEBUG, "bopt: read-ahead of %" PRIu64 " bytes at %" PRIu64 ": %s",
		       end - start, start, strerror(-rc));
	}
}

/* Reads the pieces of [@off, @end) into @buf, each from where it lives;
 * the file's gate is held. A BOPT block may hold a file's last partial
 * block (zeros after it), so what the BOPT serves stops at @size, the home
 * file's: nothing past the end is ever read from there. The count (short
 * only at the end of the file) or a negative errno. */
static ssize_t read_pieces(struct hy_indirector *ind, struct home_file *file, void *buf, off_t off,
			   uint64_t end, uint64_t size, const struct hy_map_piece *pieces, int n)
{
	size_t done = 0;

	for (int i = 0; i < n; i++) {
		uint64_t from;
		size_t len = piece_span(&pieces[i], (uint64_t)off, end, &from);
		ssize_t r;

		if (from >= size)
			break; /* the end of the file: no request home for nothing */
		if (pieces[i].bopt_block == HY_MAP_HOME) {
			r = hy_device_read(ind->backing, file->object, (char *)buf + done, len,
					   (off_t)from);
		} else {
			if (len > size - from)
				len = (size_t)(size - from);
			off_t at = bopt_offset(ind, &pieces[i], from);

			atomic_fetch_add(&ind->bopt_reads, 1);
			r = hy_device_read(ind->bopt, 0, (char *)buf + done, len, at);
			if (r > 0)
				read_ahead(ind, file->file_id, (uint64_t)at,
					   (uint64_t)at + (uint64_t)r);
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
static ssize_t lower_read(struct hy_indirector *ind, struct home_file *file, void *buf, size_t size,
			  off_t off)
{
	struct hy_map_piece stack[PIECES_ON_STACK], *pieces, *heap;
	uint64_t first, last, end, home_size = SIZE_UNKNOWN;
	uint32_t nblocks;
	ssize_t rc;
	int n;

	if (!uses_map(ind, file) || size == 0 || off < 0)
		return hy_device_read(ind->backing, file->object, buf, size, off);
	first = (uint64_t)off / BLOCK;
	end = (uint64_t)off + size;
	last = (end - 1) / BLOCK;
	if (last - first >= UINT32_MAX)
		return hy_device_read(ind->backing, file->object, buf, size, off);
	nblocks = (uint32_t)(last - first + 1);
	n = lookup(ind, file, first, nblocks, stack, &pieces, &heap);
	if (n < 0)
		return n;
	free(heap);
	/* the common case: nothing relocated, one request home (a block that
	 * becomes relocated meanwhile is a clean copy of home) */
	if (n == 1 && pieces[0].bopt_block == HY_MAP_HOME)
		return hy_device_read(ind->backing, file->object, buf, size, off);
	/* BOPT blocks are read under the file's gate, held shared, and looked
	 * up again under it: the reconfigurator takes every gate once after
	 * it drops extents, before it writes over their BOPT blocks, so no
	 * read still uses an old place when a new copy goes there */
	gate_read_lock(ind, file->file_id);
	n = lookup(ind, file, first, nblocks, stack, &pieces, &heap);
	if (n >= 0 && !stamp_matches_sized(ind, file, &home_size)) {
		/* the home file's ctime moved: a write through the mount between
		 * its home change and its stamp refresh, or a change outside the
		 * mount. With the gate exclusive the first has ended; if the
		 * stamp still differs the copies are stale (dropped, their newer
		 * blocks home first), else the read goes on with them */
		free(heap);
		gate_unlock(ind, file->file_id);
		gate_lock(ind, file->file_id);
		if (!stamp_matches_sized(ind, file, &home_size))
			drop_stale(ind, file);
		n = lookup(ind, file, first, nblocks, stack, &pieces, &heap);
	}
	rc = n < 0 ? n : read_pieces(ind, file, buf, off, end, home_size, pieces, n);
	gate_unlock(ind, file->file_id);
	free(heap);
	return rc;
}

/* Before relocated blocks of [@block, @block + @nblocks) change at home:
 * the release is journaled, then the map drops them, so that from now on
 * their one current copy is home. Nothing to do, and no
 * journal write, when none of the range is relocated. Dirty blocks must
 * have gone home first (settle()). */
static int release(struct hy_indirector *ind, struct home_file *file, uint64_t block,
		   uint64_t nblocks)
{
	struct hy_map_piece piece;
	uint32_t probe = nblocks > UINT32_MAX ? UINT32_MAX : (uint32_t)nblocks;
	int64_t gone;
	int n;

	if (!uses_map(ind, file) || nblocks == 0)
		return 0;
	n = hy_map_lookup(ind->map, file->file_id, block, probe, &piece, 1);
	if (n < 0)
		return n;
	if (n == 1 && piece.bopt_block == HY_MAP_HOME && nblocks <= UINT32_MAX)
		return 0;
	/* not waited for: the change that follows moves the home file's
	 * ctime, so after a crash that lost this record the stamp check drops
	 * the copies before any read could use them */
	gone = hy_map_journal_release(ind->journal, ind->map, file->file_id, block, nblocks, false);
	note_unwaited(ind, file->file_id);
	if (gone < 0)
		return (int)gone;
	atomic_fetch_add(&ind->released_blocks, (uint64_t)gone);
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

static int64_t sync_dirty(struct hy_indirector *ind, struct home_file *file, uint64_t block,
			  uint64_t nblocks)
{
	struct hy_map_piece stack[PIECES_ON_STACK], *pieces, *heap;
	uint32_t probe = nblocks > UINT32_MAX ? UINT32_MAX : (uint32_t)nblocks;
	struct hy_device_attr attr = {0, -1, UINT64_MAX};
	uint64_t ticket = 0, cleaned = 0, dirty = 0;
	unsigned char *buf = NULL;
	int64_t rc = 0, home = file->object;
	bool opened = false;
	int n;

	if (!uses_map(ind, file) || nblocks == 0)
		return 0;
	if (block > UINT64_MAX - probe)
		probe = (uint32_t)(UINT64_MAX - block);
	n = lookup(ind, file, block, probe, stack, &pieces, &heap);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		if (pieces[i].bopt_block != HY_MAP_HOME && pieces[i].dirty)
			dirty += pieces[i].nblocks;
	if (!dirty)
		goto out;
	rc = hy_device_getattr(ind->backing, file->object, &attr);
	if (rc < 0 && rc != -EOPNOTSUPP) /* without it: no size to clip to */
		goto out;
	buf = malloc(SYNC_CHUNK);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	/* the descriptor may be a reader's */
	rc = hy_device_writable(ind->backing, file->object, &home, &opened);
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
			ssize_t r = hy_device_read(ind->bopt, 0, buf, len,
						   bopt_offset(ind, &pieces[i], at));

			if (r == (ssize_t)len)
				r = hy_device_write(ind->backing, home, buf, len, (off_t)at);
			if (r != (ssize_t)len)
				rc = r < 0 ? r : -EIO;
			at += len;
		}
	}
	if (rc == 0)
		rc = hy_device_sync(ind->backing, home, true);
	/* the BOPT's copies stay in use, clean: they must be durable before
	 * the map says they equal home (a checkpoint may save that) */
	if (rc == 0)
		rc = hy_device_sync(ind->bopt, 0, true);
	if (rc == 0 && attr.mtime_ns >= 0) {
		int t = hy_device_set_mtime(ind->backing, home, attr.mtime_ns);

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
		if (ind->journal)
			rc = hy_map_journal_write(ind->journal, &r, &ticket);
	}
	if (rc == 0 && ticket)
		rc = hy_map_journal_wait(ind->journal, ticket);
	for (int i = 0; i < n && rc == 0; i++) {
		int64_t k;

		if (pieces[i].bopt_block == HY_MAP_HOME || !pieces[i].dirty)
			continue;
		k = hy_map_set_dirty(ind->map, file->file_id, pieces[i].block, pieces[i].nblocks,
				     false);
		if (k < 0)
			rc = k;
		else
			cleaned += (uint64_t)k;
	}
	if (rc == 0)
		atomic_fetch_add(&ind->synced_blocks, cleaned);
out:
	if (opened)
		hy_device_close_object(ind->backing, home);
	free(buf);
	free(heap);
	return rc < 0 ? rc : (int64_t)cleaned;
}

/* What changes home data that relocated blocks may hold: their newer
 * (dirty) copies go home first, then the range is released. Gate held
 * exclusive. */
static int settle(struct hy_indirector *ind, struct home_file *file, uint64_t block,
		  uint64_t nblocks)
{
	int64_t rc = sync_dirty(ind, file, block, nblocks);

	return rc < 0 ? (int)rc : release(ind, file, block, nblocks);
}

/* BORG's write: relocated pieces are written into the BOPT and marked
 * dirty, the rest home. The gate is held shared. Crash consistency comes
 * from the order: first the home file's modification time is set (so its
 * ctime moves: after a crash the stamp check drops copies the journal did
 * not keep dirty, before any read), then the dirty marks are journaled
 * (not waited for: fsync and close make them durable with the data's way
 * home), then the data goes to the BOPT. Unsynced writes may be lost in a
 * crash, as with any filesystem; they never come back half. */
static ssize_t write_mapped(struct hy_indirector *ind, struct home_file *file, const void *buf,
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
	t = into_bopt ? hy_device_set_mtime(ind->backing, file->object, -1) : 0;
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
		if (ind->journal && (rc = hy_map_journal_write(ind->journal, &r, &ticket)) < 0)
			return rc;
		note_unwaited(ind, file->file_id);
		if (hy_map_set_dirty(ind->map, file->file_id, pieces[i].block, pieces[i].nblocks,
				     true) < 0)
			return -EIO;
	}
	for (int i = 0; i < n; i++) {
		uint64_t from;
		size_t len = piece_span(&pieces[i], (uint64_t)off, end, &from);
		ssize_t r;

		if (pieces[i].bopt_block == HY_MAP_HOME) {
			r = hy_device_write(ind->backing, file->object, (const char *)buf + done,
					    len, (off_t)from);
		} else {
			atomic_fetch_add(&ind->bopt_writes, 1);
			r = hy_device_write(ind->bopt, 0, (const char *)buf + done, len,
					    bopt_offset(ind, &pieces[i], from));
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

/* Whether a write that ends at @end makes the home file longer. Where the
 * medium cannot tell (the simulator's) it never does: its model keeps no
 * bytes. */
static bool grows_file(struct hy_indirector *ind, struct home_file *file, uint64_t end)
{
	struct hy_device_attr attr;
	int rc = hy_device_getattr(ind->backing, file->object, &attr);

	return rc == 0 ? end > attr.size : rc != -EOPNOTSUPP;
}

static ssize_t lower_write(struct hy_indirector *ind, struct home_file *file, const void *buf,
			   size_t size, off_t off)
{
	struct hy_map_piece stack[PIECES_ON_STACK], *pieces = stack, *heap = NULL;
	uint64_t first, nblocks;
	bool held;
	ssize_t rc;
	int n;

	if (!uses_map(ind, file) || off < 0 || size == 0)
		return hy_device_write(ind->backing, file->object, buf, size, off);
	nblocks = blocks_of((uint64_t)off, size, &first);
	held = change_begin(ind, file, false);
	n = nblocks <= UINT32_MAX
		    ? lookup(ind, file, first, (uint32_t)nblocks, stack, &pieces, &heap)
		    : -EFBIG;
	if (n < 0) {
		rc = n;
	} else if (n == 1 && pieces[0].bopt_block == HY_MAP_HOME) {
		rc = hy_device_write(ind->backing, file->object, buf, size, off);
	} else if (ind->bopt_writes_on && !grows_file(ind, file, (uint64_t)off + size)) {
		rc = write_mapped(ind, file, buf, size, off, pieces, n);
	} else {
		/* home only: the relocated blocks go home first, then away. A
		 * write past the end always comes here: the home file's size is
		 * the file's, and a BOPT write would not move it */
		change_end(ind, file, held);
		held = change_begin(ind, file, true);
		rc = settle(ind, file, first, nblocks);
		if (rc >= 0)
			rc = hy_device_write(ind->backing, file->object, buf, size, off);
	}
	free(heap);
	change_end(ind, file, held);
	return rc;
}

static int map_truncate(struct hy_indirector *ind, struct home_file *file, off_t size)
{
	bool held = change_begin(ind, file, true);
	/* from the block holding the new end on: its tail, or all of it, changes */
	int rc = size >= 0 ? settle(ind, file, (uint64_t)size / BLOCK,
				    UINT64_MAX - (uint64_t)size / BLOCK)
			   : 0;

	if (rc >= 0)
		rc = hy_device_truncate(ind->backing, file->object, size);
	change_end(ind, file, held);
	return rc;
}

static int64_t sync_home(struct hy_indirector *ind, struct home_file *file)
{
	int64_t rc;

	if (!uses_map(ind, file))
		return 0;
	/* not a change of the file's data (the home copies catch up with the
	 * BOPT's), so the gate's count stays: a copy in progress is still good */
	copies_fresh(ind, file);
	gate_lock(ind, file->file_id);
	rc = sync_dirty(ind, file, 0, UINT64_MAX);
	if (rc > 0)
		refresh_stamp(ind, file);
	gate_unlock(ind, file->file_id);
	return rc;
}

static bool has_stamp(struct hy_indirector *ind, uint64_t file_id)
{
	int64_t stamp;

	return ind->map && file_id && hy_map_get_stamp(ind->map, file_id, &stamp) == 0;
}

static int map_fallocate(struct hy_indirector *ind, struct home_file *file, int mode, off_t off,
			 off_t len)
{
	bool held = change_begin(ind, file, true);
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
		rc = settle(ind, file, first, n);
	}
	if (rc >= 0)
		rc = hy_device_allocate(ind->backing, file->object, mode, off, len);
	change_end(ind, file, held);
	return rc;
}

/* Both files are in the backing directory, so the kernel can copy (or
 * share extents) without the data passing through the daemon: the
 * source's BOPT writes go home first, and the destination's relocated
 * blocks in the range are settled. */
static ssize_t map_copy_range(struct hy_indirector *ind, struct home_file *in, off_t off_in,
			      struct home_file *out, off_t off_out, size_t len, int flags)
{
	uint64_t first, n;
	ssize_t copied;
	int64_t rc = 0;
	bool held;

	if (off_in >= 0 && len > 0) {
		held = change_begin(ind, in, true);
		n = blocks_of((uint64_t)off_in, len, &first);
		if (held)
			rc = sync_dirty(ind, in, first, n);
		change_end(ind, in, held);
		if (rc < 0)
			return rc;
	}
	held = change_begin(ind, out, true);
	if (off_out >= 0) {
		n = blocks_of((uint64_t)off_out, len, &first);
		rc = settle(ind, out, first, n);
	}
	if (rc < 0) {
		change_end(ind, out, held);
		return rc;
	}
	copied = copy_file_range((int)in->object, &off_in, (int)out->object, &off_out, len,
				 (unsigned)flags);
	if (copied < 0)
		copied = -errno;
	change_end(ind, out, held);
	return copied;
}

/* ---- the data path ------------------------------------------------------ */

ssize_t hy_indirector_read(struct hy_indirector *ind, uint64_t file_id, int64_t object, void *buf,
			   size_t len, off_t off)
{
	struct home_file file = {file_id, object};

	return lower_read(ind, &file, buf, len, off);
}

int hy_indirector_home_fd(struct hy_indirector *ind, uint64_t file_id, int64_t object, size_t len,
			  off_t off)
{
	struct home_file file = {file_id, object};
	struct hy_map_piece stack[PIECES_ON_STACK], *pieces, *heap;
	uint64_t first, last;
	int fd = hy_device_direct_fd(ind->backing, object), n;

	if (fd < 0 || !uses_map(ind, &file) || len == 0 || off < 0)
		return fd;
	/* lower_read()'s common case: one piece, home (a block relocated
	 * meanwhile is a clean copy of home) */
	first = (uint64_t)off / BLOCK;
	last = ((uint64_t)off + len - 1) / BLOCK;
	if (last - first >= UINT32_MAX)
		return -1;
	n = lookup(ind, &file, first, (uint32_t)(last - first + 1), stack, &pieces, &heap);
	free(heap);
	return n == 1 && pieces[0].bopt_block == HY_MAP_HOME ? fd : -1;
}

void hy_indirector_home_read_done(struct hy_indirector *ind, int64_t object, off_t off,
				  ssize_t done)
{
	hy_device_count_read(ind->backing, object, off, done);
}

ssize_t hy_indirector_write(struct hy_indirector *ind, uint64_t file_id, int64_t object,
			    const void *buf, size_t len, off_t off)
{
	struct home_file file = {file_id, object};

	return lower_write(ind, &file, buf, len, off);
}

int hy_indirector_getattr(struct hy_indirector *ind, int64_t object, struct hy_device_attr *out)
{
	return hy_device_getattr(ind->backing, object, out);
}

/* The cache's changes of a home file's room and time: under the gate, so
 * that the stamp follows them (they are changes through the mount, and
 * each moves the ctime). */
int hy_indirector_reserve(struct hy_indirector *ind, uint64_t file_id, int64_t object, uint64_t off,
			  uint64_t len)
{
	struct home_file file = {file_id, object};
	bool held = change_begin(ind, &file, false);
	/* room for a write-back write, the size kept */
	int rc = hy_device_allocate(ind->backing, object, FALLOC_FL_KEEP_SIZE, (off_t)off,
				    (off_t)len);

	change_end(ind, &file, held);
	return rc;
}

int hy_indirector_set_mtime(struct hy_indirector *ind, uint64_t file_id, int64_t object,
			    int64_t mtime_ns)
{
	struct home_file file = {file_id, object};
	bool held = change_begin(ind, &file, false);
	int rc = hy_device_set_mtime(ind->backing, object, mtime_ns);

	change_end(ind, &file, held);
	return rc;
}

int64_t hy_indirector_sync_home(struct hy_indirector *ind, uint64_t file_id, int64_t object)
{
	struct home_file file = {file_id, object};

	return sync_home(ind, &file);
}

int hy_indirector_fsync(struct hy_indirector *ind, uint64_t file_id, int64_t object, bool data_only)
{
	struct home_file file = {file_id, object};

	/* releases are journaled without waiting (a moved ctime covers a
	 * crash); fdatasync need not make the ctime durable, so the records
	 * must be: those of this file's gate, not every file's (a file
	 * whose gate wrote none since the last sync waits for nothing) */
	if (uses_map(ind, &file) && ind->journal) {
		uint64_t ticket = atomic_load(&gate_of(ind, file_id)->journal_ticket);
		int rc = ticket ? hy_map_journal_wait(ind->journal, ticket) : 0;

		if (rc < 0)
			return rc;
	}
	return hy_device_sync(ind->backing, object, data_only);
}

/* Only objects the device opens for the holder count against the bound:
 * they are descriptors. A model's objects are numbers, held for free. */
static bool holds_open(const struct hy_indirector *ind)
{
	return ind->backing->ops->hold != NULL;
}

int hy_indirector_hold_object(struct hy_indirector *ind, int64_t object, int64_t *out)
{
	bool opened = false;
	int rc;

	if (holds_open(ind) && atomic_load(&ind->held_objects) >= HY_INDIRECTOR_HELD_OBJECTS)
		return -EMFILE; /* the cache writes this file through meanwhile */
	rc = hy_device_hold(ind->backing, object, out, &opened);
	if (rc < 0)
		return rc;
	if (holds_open(ind))
		atomic_fetch_add(&ind->held_objects, 1);
	return 0;
}

void hy_indirector_put_object(struct hy_indirector *ind, int64_t object)
{
	if (holds_open(ind))
		atomic_fetch_sub(&ind->held_objects, 1);
	hy_device_close_object(ind->backing, object);
}

/* PORE's zones: where the home file's blocks lie (its BOPT copies are not
 * asked about: the cleaner writes home). */
int hy_indirector_addresses(struct hy_indirector *ind, int64_t object, const uint64_t *blocks,
			    size_t n, uint64_t *out)
{
	uint64_t *offsets = malloc((n ? n : 1) * sizeof(*offsets));
	int rc;

	if (!offsets)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		offsets[i] = blocks[i] * BLOCK;
	rc = hy_device_addresses(ind->backing, object, offsets, n, out);
	free(offsets);
	return rc;
}

/* ---- changes made around the cache -------------------------------------- */

int hy_indirector_truncate(struct hy_indirector *ind, uint64_t file_id, int64_t object, off_t size)
{
	struct home_file file = {file_id, object};

	return map_truncate(ind, &file, size);
}

int hy_indirector_fallocate(struct hy_indirector *ind, uint64_t file_id, int64_t object, int mode,
			    off_t off, off_t len)
{
	struct home_file file = {file_id, object};

	return map_fallocate(ind, &file, mode, off, len);
}

ssize_t hy_indirector_copy_range(struct hy_indirector *ind, uint64_t in_id, int64_t in_object,
				 off_t off_in, uint64_t out_id, int64_t out_object, off_t off_out,
				 size_t len, int flags)
{
	struct home_file in = {in_id, in_object}, out = {out_id, out_object};

	return map_copy_range(ind, &in, off_in, &out, off_out, len, flags);
}

bool hy_indirector_uses_map(const struct hy_indirector *ind, uint64_t file_id)
{
	return ind->map && file_id;
}

bool hy_indirector_has_copies(struct hy_indirector *ind, uint64_t file_id)
{
	return has_stamp(ind, file_id);
}

bool hy_indirector_meta_begin(struct hy_indirector *ind, uint64_t file_id, int64_t object)
{
	struct home_file file = {file_id, object};

	return has_stamp(ind, file_id) && stamp_matches(ind, &file);
}

void hy_indirector_meta_end(struct hy_indirector *ind, uint64_t file_id, int64_t object)
{
	struct home_file file = {file_id, object};

	if (uses_map(ind, &file))
		refresh_stamp(ind, &file);
}

bool hy_indirector_truncate_open_begin(struct hy_indirector *ind, uint64_t file_id)
{
	struct hy_indirector_gate *gate;

	if (!ind->map || !file_id)
		return false;
	gate = gate_of(ind, file_id);
	pthread_rwlock_wrlock(&gate->lock);
	atomic_fetch_add(&gate->changes, 1);
	return true;
}

void hy_indirector_truncate_open_end(struct hy_indirector *ind, uint64_t file_id, int64_t object)
{
	struct home_file file = {file_id, object};

	/* the truncation went through the mount: its relocated blocks lie past
	 * the end now (their dirty ones with them) and are released, and the
	 * stamp follows the new ctime, instead of the next read taking the
	 * file for one changed outside */
	if (object >= 0 && uses_map(ind, &file)) {
		int rc = settle(ind, &file, 0, UINT64_MAX);

		if (rc < 0)
			hy_log(LOG_WARNING,
			       "file %" PRIu64 ": cannot release its BOPT copies after "
			       "O_TRUNC (the stamp check drops them): %s",
			       file_id, strerror(-rc));
		else
			refresh_stamp(ind, &file);
	}
	gate_unlock(ind, file_id);
}

/* ---- the reconfigurator's operations ------------------------------------- */

int hy_indirector_copy_begin(struct hy_indirector *ind, struct hy_indirector_copy *copy)
{
	int rc;

	/* what the commit will compare with: no change may begin between this
	 * and the read of the range without moving the count */
	gate_lock(ind, copy->file_id);
	copy->changes = atomic_load(&gate_of(ind, copy->file_id)->changes);
	rc = hy_device_stamp(ind->backing, copy->object, &copy->stamp);
	gate_unlock(ind, copy->file_id);
	return rc;
}

ssize_t hy_indirector_copy_read(struct hy_indirector *ind, const struct hy_indirector_copy *copy,
				void *buf)
{
	size_t len = (size_t)copy->nblocks * BLOCK;
	ssize_t n =
		hy_device_read(ind->backing, copy->object, buf, len, (off_t)(copy->block * BLOCK));

	/* a file's last partial block: its BOPT copy holds zeros after the
	 * end, as the home file reads when it grows past it later */
	if (n >= 0 && (size_t)n < len)
		memset((char *)buf + n, 0, len - (size_t)n);
	return n;
}

int hy_indirector_copy_commit(struct hy_indirector *ind, const struct hy_indirector_copy *copies,
			      size_t n, bool *committed)
{
	uint64_t ticket = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		committed[i] = false;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct hy_indirector_copy *p = &copies[i];
		struct hy_map_journal_record rec = {.file_id = p->file_id};
		struct hy_map_extent e = {p->file_id, p->block,	     p->nblocks,
					  false,      p->bopt_block, p->stamp};
		int64_t stamp = 0, old;
		bool ok;

		gate_lock(ind, p->file_id);
		ok = atomic_load(&gate_of(ind, p->file_id)->changes) == p->changes &&
		     hy_device_stamp(ind->backing, p->object, &stamp) == 0 && stamp == p->stamp;
		/* the file's earlier copies were made under another ctime: it
		 * changed outside the mount, and the read path settles that
		 * (their newer blocks home, then dropped) before this copy can
		 * join them */
		if (ok && hy_map_get_stamp(ind->map, p->file_id, &old) == 0 && old != p->stamp)
			ok = false;
		/* the map first: a relocation it refuses (the diff keeps that
		 * from happening) must never reach the journal, whose replay
		 * would refuse it too. Under the gate no change of the file can
		 * come between the two, so the records keep their order. */
		if (ok) {
			int r = hy_map_relocate(ind->map, &e);

			if (r) {
				hy_log(LOG_ERR,
				       "reorganize: file %" PRIu64 " block %" PRIu64
				       ": the map refused the relocation: %s",
				       p->file_id, p->block, strerror(-r));
				ok = false;
			}
		}
		if (ok) {
			rec.type = HY_MJ_RELOCATE;
			rec.block = p->block;
			rec.nblocks = p->nblocks;
			rec.bopt_block = p->bopt_block;
			/* without a journal (the simulator's map lives in memory
			 * only) the map is all there is */
			if (ind->journal)
				rc = hy_map_journal_write(ind->journal, &rec, &ticket);
			if (rc == 0 && ind->journal) {
				rec.type = HY_MJ_STAMP;
				rec.block = (uint64_t)p->stamp;
				rec.nblocks = 0;
				rec.bopt_block = 0;
				rc = hy_map_journal_write(ind->journal, &rec, &ticket);
			}
		}
		gate_unlock(ind, p->file_id);
		committed[i] = ok && rc == 0;
	}
	if (rc == 0 && ticket)
		rc = hy_map_journal_wait(ind->journal, ticket);
	return rc;
}

static int cmp_stripe(const void *a, const void *b, void *arg)
{
	const struct hy_indirector_range *r = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	uint64_t si = r[i].file_id % HY_INDIRECTOR_GATES, sj = r[j].file_id % HY_INDIRECTOR_GATES;

	if (si != sj)
		return si < sj ? -1 : 1;
	return i < j ? -1 : i > j;
}

int hy_indirector_drop(struct hy_indirector *ind, const struct hy_indirector_range *ranges,
		       size_t n, uint64_t *kept_dirty)
{
	size_t *order = malloc((n ? n : 1) * sizeof(*order));
	int rc = 0;

	*kept_dirty = 0;
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	/* a stripe's ranges together: its gate once, the journal waited once */
	qsort_r(order, n, sizeof(*order), cmp_stripe, (void *)ranges);
	for (size_t i = 0; i < n && rc == 0;) {
		uint64_t stripe = ranges[order[i]].file_id % HY_INDIRECTOR_GATES, ticket = 0;
		uint64_t locked = ranges[order[i]].file_id;

		gate_lock(ind, locked);
		for (; i < n && rc == 0 && ranges[order[i]].file_id % HY_INDIRECTOR_GATES == stripe;
		     i++) {
			const struct hy_indirector_range *d = &ranges[order[i]];
			struct hy_map_piece piece;
			uint64_t at = d->block, end = d->block + d->nblocks;

			while (at < end && rc == 0) {
				struct hy_map_journal_record rec = {.type = HY_MJ_RELEASE,
								    .file_id = d->file_id};
				int k = hy_map_lookup(ind->map, d->file_id, at,
						      (uint32_t)(end - at), &piece, 1);

				if (k < 0) {
					rc = k;
					break;
				}
				if (piece.bopt_block != HY_MAP_HOME && piece.dirty) {
					*kept_dirty += piece.nblocks;
				} else if (piece.bopt_block != HY_MAP_HOME) {
					rec.block = piece.block;
					rec.nblocks = piece.nblocks;
					if (ind->journal)
						rc = hy_map_journal_write(ind->journal, &rec,
									  &ticket);
					if (rc == 0 &&
					    hy_map_release(ind->map, d->file_id, piece.block,
							   piece.nblocks) < 0)
						rc = -ENOMEM;
				}
				at = piece.block + piece.nblocks;
			}
		}
		if (rc == 0 && ticket)
			rc = hy_map_journal_wait(ind->journal, ticket);
		gate_unlock(ind, locked);
	}
	free(order);
	if (rc == 0)
		hy_indirector_barrier(ind);
	return rc;
}

void hy_indirector_barrier(struct hy_indirector *ind)
{
	quiesce(ind);
	resume(ind);
}

int hy_indirector_checkpoint(struct hy_indirector *ind, struct sqlite3 *db, char *why,
			     size_t why_size)
{
	int rc;

	quiesce(ind);
	rc = hy_map_journal_checkpoint(ind->journal, ind->map, db, why, why_size);
	/* the journal's count starts again: the checkpoint holds every
	 * record an fsync waited for (kept when the journal could not be
	 * emptied: its records are still to be made durable) */
	if (rc == 0)
		for (int i = 0; i < HY_INDIRECTOR_GATES; i++)
			atomic_store(&ind->gates[i].journal_ticket, 0);
	resume(ind);
	return rc;
}
