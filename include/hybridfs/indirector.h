/*
 * indirector.h - BORG's indirection below the cache: where a file's block
 * lives now, at home (the backing file) or relocated into the BOPT, and the
 * protocol that keeps the indirection map, the BOPT and home consistent
 * while requests and the reconfigurator run at once.
 *
 * What it is for: the path below the cache (DESIGN.md: FUSE glue -> engine
 * -> cache -> indirector -> device). A read of a file's range looks its
 * blocks up in the indirection map (map.h) and reads each piece where it
 * lives, adjacent relocated blocks in one BOPT request; a write goes home,
 * or with bopt_writes into the BOPT copies (marked dirty, journaled, sent
 * home at fsync, close or flush). Without a BOPT in use (no map set, or a
 * file without an id) every call goes straight to the backing device, so
 * the cache and the engine always have the same one path below them.
 *
 * Who calls it: the cache (cache/: misses, write-back, write-through, the
 * cleaner, fsync, hold/put of objects, PORE's addresses); the engine
 * (engine/engine.c) for files the cache does not hold, and for truncation,
 * allocation, copies, O_TRUNC opens and metadata changes, around the cache's
 * own steps; the reconfigurator (reconfig/borg.c at mount, borg_reconfig.c for
 * a plan, borg_cleaner.c) through its operations
 * (copy begin/read/commit, drop, barrier, checkpoint), so it never takes a
 * gate or holds a journal ticket itself; `status` through
 * hy_indirector_get_stats() (fs/borg_handlers.c); the stack builder
 * (stack.h), which makes it for the engine; the simulator's whole cache
 * (sim/full.c) over a model of home, and its BORG (sim/borg.c), which
 * serves a trace and carries its plans out through the same operations;
 * the unit tests. It calls only the map, its journal and the devices:
 * never up.
 *
 * Memory: hy_indirector_new() allocates it; it borrows the backing device,
 * and, from hy_indirector_set_bopt(), the map, the BOPT device and the
 * journal, which must outlive it (BORG, reconfig/borg.c, owns them). A held
 * object (hy_indirector_hold_object) is the holder's until put back.
 *
 * Locks: HY_INDIRECTOR_GATES rwlocks striped by file id order changes of a
 * file's data against the reconfigurator. A write holds its file's gate
 * shared across its I/O (writers of a file run in parallel: they only add
 * dirty marks, which commute); a truncation, allocation, copy or sync home
 * holds it exclusive (they send dirty blocks home and release ranges); a
 * read that uses the BOPT holds it shared (reads of home only take none);
 * the reconfigurator's commit and drop hold it exclusive, and its barrier
 * takes every gate once. Each gate counts the data changes begun under it,
 * which is how a copy learns that a change raced it. Order: the cache's
 * gate (when the caller is the cache or the engine around it), then this
 * gate, then the journal's lock, then the map's locks. No lock here is held
 * across a call up, since there is none.
 *
 * Stale copies: a relocated file's map entry keeps the home file's ctime
 * from when it was copied (its stamp). A read that would use the BOPT
 * compares it with the home file's ctime first; when they differ the file
 * was changed outside the mount (deleted and replaced, truncated,
 * rewritten, or written while hybridfs was not mounted), and all its
 * copies are dropped (their dirty blocks home first) before the read goes
 * home. Changes through the mount refresh the stamp after they change the
 * home file (only forward).
 */
#ifndef HYBRIDFS_INDIRECTOR_H
#define HYBRIDFS_INDIRECTOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hybridfs/device.h"

#define HY_INDIRECTOR_GATES 256

/* Objects the cache may hold at once to write files home later, when the
 * device opens one for each (descriptors: hy_device_hold); past it,
 * hy_indirector_hold_object() fails with EMFILE (the cache then writes
 * that file through). A model's objects are not counted. */
#define HY_INDIRECTOR_HELD_OBJECTS 256

struct hy_map;
struct hy_map_journal;
struct sqlite3;

struct hy_indirector {
	struct hy_device *backing; /* borrowed */

	/* BORG, once a BOPT is in use (hy_indirector_set_bopt); all
	 * borrowed, NULL otherwise. Set before requests flow. */
	struct hy_map *map;
	struct hy_device *bopt;
	uint64_t bopt_read_base;	/* byte offset of read-region block 0 */
	struct hy_map_journal *journal; /* where map changes are made durable */
	bool bopt_writes_on;		/* hy_indirector_set_bopt_writes() */

	struct hy_indirector_gate {
		pthread_rwlock_t lock;
		_Atomic uint64_t changes; /* data changes begun under this gate */
		/* the journal's count after the last record of this gate's
		 * files that was not waited for (a release, a dirty mark): what
		 * an fsync of one of them waits for, not every file's records
		 * (0 at a checkpoint, which holds them all) */
		_Atomic uint64_t journal_ticket;
	} gates[HY_INDIRECTOR_GATES];
	_Atomic uint64_t held_objects;

	_Atomic uint64_t stale_files;	  /* files whose copies were dropped as stale */
	_Atomic uint64_t bopt_reads;	  /* read requests sent to the BOPT */
	_Atomic uint64_t released_blocks; /* relocated blocks released by changes */
	_Atomic uint64_t bopt_writes;	  /* write requests sent to the BOPT */
	_Atomic uint64_t synced_blocks;	  /* dirty BOPT blocks written home */

	/* Read-ahead along the plan (hy_indirector_set_readahead): where the
	 * last BOPT read ended and of which file, and how far ahead of it the
	 * BOPT has been asked for; under @ahead_lock, which is never held
	 * across a request. */
	uint64_t readahead_bytes, bopt_read_end;
	pthread_mutex_t ahead_lock;
	uint64_t ahead_next, ahead_end, ahead_file;
	_Atomic uint64_t readaheads, readahead_bytes_asked;
};

struct hy_indirector_stats {
	uint64_t stale_files, bopt_reads, released_blocks, bopt_writes, synced_blocks;
	uint64_t readahead_bytes;		    /* the setting; 0: off */
	uint64_t readaheads, readahead_bytes_asked; /* read-aheads started */
	bool bopt_writes_on;
	struct hy_device *bopt; /* NULL without a BOPT; for its device counters */
};

int hy_indirector_new(struct hy_device *backing, struct hy_indirector **out);
void hy_indirector_free(struct hy_indirector *ind);

/* Puts BORG's indirection map in the path: reads of relocated blocks go to
 * @bopt at @read_base + bopt_block * 4096; writes to them go there too with
 * bopt writes on, else release them; a truncation, hole punch or copy that
 * changes relocated blocks first sends their dirty blocks home and
 * releases them (journaled in @journal when not NULL, before the map
 * changes), so their one current copy is home. Without a journal (the
 * simulator's map, in memory only) no change is journaled anywhere. A plan
 * may relocate a file whole, its last partial block included (issue 18:
 * a tail left home costs a seek per file): that BOPT block holds zeros
 * after the end, reads from the BOPT stop at the home file's size, and a
 * write that would make the file longer goes home (the relocated blocks
 * it covers settled first), so the home file's size stays the file's.
 * NULL @map takes BORG out (after requests stopped). */
void hy_indirector_set_bopt(struct hy_indirector *ind, struct hy_map *map, struct hy_device *bopt,
			    uint64_t read_base, struct hy_map_journal *journal);
void hy_indirector_set_bopt_writes(struct hy_indirector *ind, bool on);
/* Read-ahead along the plan (issue 18, item 4): the BOPT holds relocated
 * blocks in the order they were read, so a read of one file that starts
 * where the last BOPT read (of another file) ended is a chain being
 * followed, and the BOPT is asked for the next @bytes after it at once (one
 * hy_device_prefetch(), into the BOPT file's page cache), and again each
 * time the reads come within half of that of its end. The files of the
 * chain then cost one seek, not one after each metadata read between them
 * (the kernel's own read-ahead of the BOPT file stops at its read_ahead_kb,
 * 128 KiB by default). Reads within one file, and reads that jump, ask for
 * nothing: only a chain, which the plan made, is worth reading ahead.
 * Nothing is read past @read_end (the read region's end on the BOPT
 * device). The page cache, not the front cache: the front cache sits
 * above (cache=none has none), and the page cache serves both. 0 @bytes:
 * off. Set before requests flow. */
void hy_indirector_set_readahead(struct hy_indirector *ind, uint64_t bytes, uint64_t read_end);
void hy_indirector_get_stats(struct hy_indirector *ind, struct hy_indirector_stats *out);
/* The read requests sent to the BOPT so far: one atomic load, for the
 * read path (BORG's warm-up watches it move). */
uint64_t hy_indirector_bopt_reads(struct hy_indirector *ind);

/* ---- the data path: a file is its id (0: unknown, never relocated) and
 * its backing object (a descriptor in the daemon) ---------------------- */

/* The count (short only at the end of the file) or a negative errno. */
ssize_t hy_indirector_read(struct hy_indirector *ind, uint64_t file_id, int64_t object, void *buf,
			   size_t len, off_t off);
/* Where a read of [@off, @off + @len) may be copied by the kernel from
 * the home file's pages itself (splice): the home file's descriptor when
 * no block of the range is relocated and the backing device serves plain
 * files (hy_device_direct_fd), else -1. The check is the one
 * hy_indirector_read() makes before it reads home without a gate. The
 * caller counts the read with hy_indirector_home_read_done() (@done: the
 * bytes, or a negative errno). */
int hy_indirector_home_fd(struct hy_indirector *ind, uint64_t file_id, int64_t object, size_t len,
			  off_t off);
void hy_indirector_home_read_done(struct hy_indirector *ind, int64_t object, off_t off,
				  ssize_t done);
ssize_t hy_indirector_write(struct hy_indirector *ind, uint64_t file_id, int64_t object,
			    const void *buf, size_t len, off_t off);
/* The home file's stamp, modification time and size. */
int hy_indirector_getattr(struct hy_indirector *ind, int64_t object, struct hy_device_attr *out);
/* A change of the home file's time (@mtime_ns < 0: now) or room (@off,
 * @len reserved, the size kept: -EOPNOTSUPP when the medium cannot), made
 * under the file's gate so that the stamp follows it. */
int hy_indirector_set_mtime(struct hy_indirector *ind, uint64_t file_id, int64_t object,
			    int64_t mtime_ns);
int hy_indirector_reserve(struct hy_indirector *ind, uint64_t file_id, int64_t object, uint64_t off,
			  uint64_t len);
/* Makes what went home durable: the map journal's records (releases are
 * journaled without waiting), then the home file (@data_only:
 * fdatasync). The file's BOPT writes go home first, by
 * hy_indirector_sync_home() when it has copies: the caller decides under
 * which of its own gates (DESIGN.md invariant 1). */
int hy_indirector_fsync(struct hy_indirector *ind, uint64_t file_id, int64_t object,
			bool data_only);
/* An object of the holder's own that reads and writes @object's file
 * (the request's may be read-only, or closed before the holder writes),
 * given back by put_object(); -EMFILE past HY_INDIRECTOR_HELD_OBJECTS. */
int hy_indirector_hold_object(struct hy_indirector *ind, int64_t object, int64_t *out);
void hy_indirector_put_object(struct hy_indirector *ind, int64_t object);
/* PORE: the disk byte addresses of @object's 4 KiB blocks @blocks[0..n)
 * (ascending) into @out; -EOPNOTSUPP where the device cannot tell. */
int hy_indirector_addresses(struct hy_indirector *ind, int64_t object, const uint64_t *blocks,
			    size_t n, uint64_t *out);

/* ---- changes made around the cache by the engine ---------------------- */

int hy_indirector_truncate(struct hy_indirector *ind, uint64_t file_id, int64_t object, off_t size);
int hy_indirector_fallocate(struct hy_indirector *ind, uint64_t file_id, int64_t object, int mode,
			    off_t off, off_t len);
/* copy_file_range(2) home to home: the source's BOPT writes go home first,
 * the destination's relocated blocks in the range are settled. */
ssize_t hy_indirector_copy_range(struct hy_indirector *ind, uint64_t in_id, int64_t in_object,
				 off_t off_in, uint64_t out_id, int64_t out_object, off_t off_out,
				 size_t len, int flags);
/* Writes the file's dirty BOPT blocks home (durably, keeping the home
 * file's modification time) and marks them clean, under its gate held
 * exclusive. The blocks made clean, or a negative errno. */
int64_t hy_indirector_sync_home(struct hy_indirector *ind, uint64_t file_id, int64_t object);
/* Whether the file's requests go through the map at all (a BOPT is in
 * use and the file has an id) / whether it has relocated blocks. */
bool hy_indirector_uses_map(const struct hy_indirector *ind, uint64_t file_id);
bool hy_indirector_has_copies(struct hy_indirector *ind, uint64_t file_id);
/* Around a change of the file's metadata (its ctime moves, its data does
 * not): begin says whether its copies are current now; end, when they
 * were, moves the stamp to the new ctime. */
bool hy_indirector_meta_begin(struct hy_indirector *ind, uint64_t file_id, int64_t object);
void hy_indirector_meta_end(struct hy_indirector *ind, uint64_t file_id, int64_t object);
/* Around an open(O_TRUNC): begin holds the file's gate exclusive and
 * counts a change (returns whether end must be called); end releases
 * what the truncation cut off (@object the new descriptor, or -1) and
 * lets go. */
bool hy_indirector_truncate_open_begin(struct hy_indirector *ind, uint64_t file_id);
void hy_indirector_truncate_open_end(struct hy_indirector *ind, uint64_t file_id, int64_t object);

/* ---- the reconfigurator's operations ---------------------------------- */

/* One range being copied into the BOPT: the caller sets file_id, object
 * (a descriptor of the home file), block, nblocks and bopt_block; begin()
 * records what the commit compares with. */
struct hy_indirector_copy {
	uint64_t file_id;
	int64_t object;
	uint64_t block;
	uint32_t nblocks;
	uint64_t bopt_block;
	int64_t stamp;	  /* the home file's ctime when the copy began */
	uint64_t changes; /* the gate's count then */
};

/* Before the home range is read: 0, or a negative errno (the file cannot
 * be asked: skip the range). */
int hy_indirector_copy_begin(struct hy_indirector *ind, struct hy_indirector_copy *copy);
/* Reads the copy's home range into @buf (nblocks * 4096 bytes): the
 * count, short at the end of the file (the range may end with the file's
 * last partial block: the rest of @buf is zeroed, so the BOPT block holds
 * zeros after the end), or a negative errno. */
ssize_t hy_indirector_copy_read(struct hy_indirector *ind, const struct hy_indirector_copy *copy,
				void *buf);
/* After the copies' data is durable in the BOPT: each copy whose file did
 * not change since its begin() (same gate count, same ctime, earlier
 * copies made under the same stamp) goes into the map and the journal
 * (relocation, then its stamp); the journal is waited for once.
 * @committed[i] says which did. 0, or a negative errno of the journal
 * (nothing after the failing copy is committed). */
int hy_indirector_copy_commit(struct hy_indirector *ind, const struct hy_indirector_copy *copies,
			      size_t n, bool *committed);

/* A relocated range the new plan drops. */
struct hy_indirector_range {
	uint64_t file_id;
	uint64_t block;
	uint64_t nblocks;
};

/* Releases the clean relocated blocks of @ranges (journaled, then out of
 * the map), file gates held exclusive a stripe at a time; dirty ones stay
 * (their count into *@kept_dirty) until they went home. Then a barrier:
 * no read still uses a dropped place when the call returns, so the BOPT
 * blocks may be written over. 0 or a negative errno. */
int hy_indirector_drop(struct hy_indirector *ind, const struct hy_indirector_range *ranges,
		       size_t n, uint64_t *kept_dirty);
/* Every gate once: requests begun before it have ended. */
void hy_indirector_barrier(struct hy_indirector *ind);
/* The map saved whole into @db and the journal emptied, with every gate
 * held (so no change is half-made); -errno with @why. */
int hy_indirector_checkpoint(struct hy_indirector *ind, struct sqlite3 *db, char *why,
			     size_t why_size);

#endif
