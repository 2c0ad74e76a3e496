/*
 * cache_index.h - the SSD cache's index: which blocks of which files are
 * cached, in which line of the cache store, and which 512-byte sectors of
 * each line hold data (valid) and are newer than home (dirty).
 *
 * What it is for: the store asks it, on every read and write, whether
 * (file id, 4 KiB block) has a line, and copies the answer out; a write
 * smaller than a line marks only the sectors it covers valid and dirty
 * (near-cache I/O: the rest of the line is never read from the disk), a
 * read merges the valid sectors with the backing data, the cleaner clears
 * dirty bits once a line is home, truncate and punch drop a file's range.
 *
 * Lines: a line is HY_CACHE_LINE_SIZE bytes, HY_CACHE_SECTORS sectors of
 * HY_CACHE_SECTOR_SIZE; bit i of a mask is sector i (bytes 512 i .. 512 i +
 * 511 of the line). dirty is always a subset of valid. A write must cover
 * a sector whole to mark it valid without reading it first:
 * hy_cache_sectors() gives the sectors a byte range covers whole (these may
 * be set valid and dirty) and the ones it touches (a touched sector that is
 * not covered and not already valid must be read, or the write must go
 * around the cache for it).
 *
 * Structure (issue 19: the cache's DRAM per cached line cut from 58 bytes
 * to 25 at most, everything included, for files of 128 blocks and more;
 * see cache.h): intrusive. The index keeps, per line of the store, the key
 * and masks of the block it holds (HY_CACHE_INDEX_LINE_BYTES, packed: a
 * 32-bit file handle, a 32-bit block, valid, dirty), allocated once at
 * hy_cache_index_new(); files are found through a hash striped over
 * HY_CACHE_INDEX_STRIPES mutexes, held only to find or add a file (as in
 * map.h); each file's entries are an open-addressing table (linear probing
 * from a multiply-scaled hash, backward-shift deletion, no tombstones) of
 * 4-byte slots that hold a line number (28 bits) and 4 bits of its block's
 * hash: a probe compares the block with the line's own only when the bits
 * match. A file's handle is its slot in the index's handle table (the line
 * -> file reverse lookup, hy_cache_index_line_key()). A point lookup is
 * one hash probe under the file's read lock; a range of n blocks is n
 * probes, or one scan of the table when the range is larger than the table
 * (truncate to 0). Tables grow by an eighth at a load of 9/10 (doubling
 * below 16 slots) and halve below 1/8, so a table that only grew holds 4.4
 * to 5 bytes per entry; a file adds its struct (48 bytes), its handle (12
 * to 18) and, from its fourth entry on, a table of 8 slots or more: up to
 * 3 entries live in a table of 4 slots inside the struct (most files of a
 * source tree have a few blocks). A hit reads two places (the slot,
 * then the line's entry) where the 16-byte slots of before read one: the
 * price of the memory, measured in BENCHMARKS.md (issue 19).
 * Limits: blocks from 2^32 on (files of 16 TiB and more) are never indexed:
 * insert answers -EFBIG (the cache then keeps the block out), lookups
 * -ENOENT; a store has at most HY_CACHE_INDEX_MAX_LINES lines (1 TiB).
 * Before (issue 5): 16-byte slots holding the key and masks, tables that
 * doubled, a rwlock per file: 32.9 bytes an entry at 1,000,000 entries.
 * Measured (tests/unit/test_cache_index.c, "memory per entry"): 1,000,000
 * entries over 1,000 files, 1,000 random blocks each, every line used: 14.8
 * bytes per entry, everything included (per-line entries, stripes, locks,
 * files, handles, tables); the test checks the bound
 * HY_CACHE_INDEX_LINE_BYTES x capacity + 5 x entries +
 * HY_CACHE_INDEX_FILE_BYTES x files over the empty index.
 *
 * Who calls it: the cache (cache/cache_io.c, lines.c, cache_fsync.c,
 * cleaner.c, cache.c), in the daemon and in the simulator's whole cache;
 * the unit tests.
 *
 * Memory: hy_cache_index_new() allocates the index, hy_cache_index_free()
 * releases it and every entry (NULL is fine). Lookups copy entries into the
 * caller's struct or array; nothing returned points into the index.
 *
 * Locks: the index takes its own and none is held when a call returns: the
 * caller never holds an index lock across I/O. Order: a stripe mutex (held
 * only to find, add or free a file, never while taking another lock), then
 * one file's rwlock (read for lookups, write for changes; one of
 * HY_CACHE_INDEX_LOCKS, striped by the file's handle: issue 19, a rwlock
 * in each file cost 56 bytes a file); the handle
 * table's mutex is a leaf (taken under a stripe mutex to give or take back
 * a handle, alone by hy_cache_index_line_key()). The callback of
 * hy_cache_index_remove_file_range() is called after every lock is dropped.
 * Every call is thread-safe; calls on different files wait for each other
 * only for the short stripe lookup, or when their handles share a lock
 * (one in 64) and one of them changes the index. A file's rwlock prefers
 * writers (on glibc): with the default, four threads of lookups starved
 * one writer of the same files (the concurrency test took 5 times longer).
 *
 * Lines: the store owns line allocation (its replacement policy,
 * policy.h); a line must be free in the index to be inserted (-EBUSY
 * otherwise), and the line's key is the index's, so the store keeps no copy
 * of it (cache_internal.h, struct line_state). hy_cache_index_line_key()
 * reads a line's key without the file's lock: the caller must keep the
 * line from being removed or inserted meanwhile (the cache: its lines'
 * mutex, under which it removes lines and marks them used).
 */
#ifndef HYBRIDFS_CACHE_INDEX_H
#define HYBRIDFS_CACHE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#define HY_CACHE_LINE_SIZE	  4096
#define HY_CACHE_SECTOR_SIZE	  512
#define HY_CACHE_SECTORS	  8 /* sectors per line: one bit each in a mask */
#define HY_CACHE_ALL_SECTORS	  0xffu
#define HY_CACHE_INDEX_STRIPES	  64
#define HY_CACHE_INDEX_LOCKS	  64		   /* the files' rwlocks, striped by file handle */
#define HY_CACHE_INDEX_MAX_LINES  ((1u << 28) - 1) /* capacity: 1 TiB; a slot's tag above */
#define HY_CACHE_INDEX_LINE_BYTES 10		   /* per line of the store: handle, block, masks */
#define HY_CACHE_INDEX_FILE_BYTES 160		   /* at most, per file: struct, handle, 16 slots */

/* One cached block, as the index copies it out. */
struct hy_cache_entry {
	uint64_t block; /* 4 KiB block in the file */
	uint32_t line;	/* line of the cache store, < capacity */
	uint8_t valid;	/* sectors holding data */
	uint8_t dirty;	/* sectors newer than home; a subset of valid */
};

struct hy_cache_index_stats {
	uint32_t capacity;	/* lines of the store (hy_cache_index_new) */
	uint64_t files;		/* files with at least one entry */
	uint64_t entries;	/* cached blocks */
	size_t bytes;		/* DRAM the index itself holds, all included */
	size_t line_bytes;	/* of which the per-line arrays (capacity x 10) */
	double bytes_per_entry; /* bytes / entries (0 when empty) */
};

struct hy_cache_index;

/* A new empty index for a store of @capacity_lines lines (1 ..
 * HY_CACHE_INDEX_MAX_LINES). 0, -EINVAL, -ENOMEM. */
int hy_cache_index_new(uint32_t capacity_lines, struct hy_cache_index **out);
void hy_cache_index_free(struct hy_cache_index *idx);

/* Copies the entry of (@file_id, @block) into @out. 0 or -ENOENT. */
int hy_cache_index_lookup(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
			  struct hy_cache_entry *out);

/* The cached blocks of [@first_block, @first_block + @nblocks), in block
 * order: copies up to @max of them into @out and returns how many there
 * are (which may exceed @max: call again with more room, or from the block
 * after the last one copied). -EINVAL for an empty or overflowing range,
 * -ENOMEM (only when the range is larger than the file's table and holds
 * more than @max entries). */
int64_t hy_cache_index_lookup_range(struct hy_cache_index *idx, uint64_t file_id,
				    uint64_t first_block, uint64_t nblocks,
				    struct hy_cache_entry *out, size_t max);

/* Records that (@file_id, @block) is cached in @line with masks @valid and
 * @dirty. 0; -EEXIST when the block has an entry already; -EINVAL when
 * @line is not below the capacity or @dirty is not a subset of @valid;
 * -EBUSY when @line holds another entry; -EFBIG for a block from 2^32 on;
 * -ENOMEM (the index is unchanged). */
int hy_cache_index_insert(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
			  uint32_t line, uint8_t valid, uint8_t dirty);

/* The key of the entry in @line: 0, -ENOENT (the line is free), -EINVAL
 * (past the capacity). The caller keeps the line from changing meanwhile
 * (top comment, Lines); takes only the handle table's mutex. */
int hy_cache_index_line_key(struct hy_cache_index *idx, uint32_t line, uint64_t *file_id,
			    uint64_t *block);

/* Changes the masks of an entry: valid |= @set_valid, then dirty = (dirty &
 * ~@clear_dirty) | @set_dirty. A partial write passes the sectors it covers
 * as @set_valid and @set_dirty; the cleaner, once a line is home, passes
 * the sectors it wrote as @clear_dirty. The new entry is copied into @out
 * (NULL: not wanted). 0; -ENOENT; -EINVAL when the new dirty mask would
 * not be a subset of the new valid mask (nothing changes). */
int hy_cache_index_update_masks(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
				uint8_t set_valid, uint8_t set_dirty, uint8_t clear_dirty,
				struct hy_cache_entry *out);

/* Removes the entry of (@file_id, @block) and copies it into @out (NULL:
 * not wanted): the caller frees its line (and writes its dirty sectors
 * home first, if it wants them). 0 or -ENOENT. */
int hy_cache_index_remove(struct hy_cache_index *idx, uint64_t file_id, uint64_t block,
			  struct hy_cache_entry *out);

/* Truncate and punch: removes every entry of [@first_block, @first_block +
 * @nblocks) of @file_id (UINT64_MAX - @first_block blocks: to the end),
 * then calls @fn once per removed entry, in block order, with no index lock
 * held (@fn may call the index). @fn may be NULL. Returns the number of
 * entries removed, or -EINVAL (empty or overflowing range) or -ENOMEM (the
 * index is unchanged). */
int64_t hy_cache_index_remove_file_range(
	struct hy_cache_index *idx, uint64_t file_id, uint64_t first_block, uint64_t nblocks,
	void (*fn)(uint64_t file_id, const struct hy_cache_entry *e, void *arg), void *arg);

/* Sectors of a line that the byte range [@offset, @offset + @length) of
 * the line covers whole (*@covered) and touches at all (*@touched; a
 * superset). A 1 KiB write at 512 covers and touches 0x06; a 100-byte
 * write at 10 covers nothing and touches 0x01. 0, or -EINVAL when the range
 * does not fit in a line (both masks 0). A length of 0 gives two 0 masks. */
int hy_cache_sectors(uint32_t offset, uint32_t length, uint8_t *covered, uint8_t *touched);

/* Counters and memory; O(1), no lock taken (each figure is exact when no
 * change runs at the same time). */
void hy_cache_index_get_stats(struct hy_cache_index *idx, struct hy_cache_index_stats *out);

/* Invariant check, for the tests and for asserts: every file's table
 * (count, every entry reachable from its home slot, dirty within valid,
 * line below the capacity), no line used twice, the counters. Takes every
 * lock in turn. 0, -EUCLEAN with the first problem in @why, -ENOMEM. */
int hy_cache_index_check(struct hy_cache_index *idx, char *why, size_t why_size);

#endif
