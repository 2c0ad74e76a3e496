/*
 * cache_store_internal.h - what the parts of the SSD cache store share:
 * the sizes they all use, two small helpers, and the functions one part
 * calls in another (hy_cache_store_<part>_<verb>). Only the store's own .c
 * files (cache/cache_store*.c) include it; the API, and the format, are in
 * include/hybridfs/cache_store.h.
 *
 * The parts: cache_store_format.c (the encodings of the superblock, line
 * records, table copy headers and journal records; making a new store),
 * cache_store.c (the open store: open, the line table's two copies, load
 * and checkpoint, line I/O, claim, close, what a crash left),
 * cache_store_journal.c (which records may be applied, replay, appends and
 * their group commit).
 *
 * Locks: one, store->lock, a leaf (cache_store.h): it protects the journal
 * state and the in-memory table, is held across an append's one record
 * pwrite, and the group commit (group_commit.h) waits under it, never
 * holding it during fdatasync.
 */
#ifndef HYBRIDFS_CACHE_STORE_INTERNAL_H
#define HYBRIDFS_CACHE_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hybridfs/cache_store.h"
#include "hybridfs/ondisk.h"

#define UUID_FIELD 40		 /* the superblock's mount uuid, NUL-padded */
#define CHUNK	   (1024 * 1024) /* bytes read or written at a time */

/* Blocks of a copy's line records. */
static inline uint64_t line_record_blocks(uint64_t capacity)
{
	return (capacity * HY_CACHE_LINE_RECORD + HY_CACHE_STORE_BLOCK - 1) / HY_CACHE_STORE_BLOCK;
}

/* Blocks of a copy's file stamps (format 3): room for one per line. */
static inline uint64_t stamp_record_blocks(uint64_t capacity)
{
	return (capacity * HY_CACHE_STAMP_RECORD + HY_CACHE_STORE_BLOCK - 1) / HY_CACHE_STORE_BLOCK;
}

/* Blocks of one table copy: its header, its line records and, from
 * format 3 on, its file stamps. */
static inline uint64_t table_copy_blocks(uint64_t capacity, uint32_t version)
{
	return 1 + line_record_blocks(capacity) +
	       (version >= 3 ? stamp_record_blocks(capacity) : 0);
}

/* Reads @len bytes at @off; zeros past the end of the file. 0 or -errno. */
static inline int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = hy_ondisk_read_full(fd, buf, len, off);

	return n < 0 ? (int)n : 0;
}

/* ---- functions one part calls in another, by the file that has them ---- */

/* cache_store_format.c */
void hy_cache_store_format_encode_line(const struct hy_cache_line *l, uint64_t line,
				       uint64_t generation, uint64_t seq, uint32_t version,
				       unsigned char *p);
int hy_cache_store_format_decode_line(const unsigned char *p, uint64_t line, uint64_t generation,
				      uint32_t version, struct hy_cache_line *l);
void hy_cache_store_format_encode_copy_header(uint64_t generation, uint64_t seq, uint64_t capacity,
					      uint32_t version, uint64_t nstamps,
					      unsigned char *buf);
int hy_cache_store_format_decode_copy_header(const unsigned char *buf, uint64_t generation,
					     uint64_t capacity, uint32_t version, uint64_t *seq,
					     uint64_t *nstamps);
void hy_cache_store_format_encode_stamp(const struct hy_cache_stamp *st, uint64_t index,
					uint64_t generation, unsigned char *p);
int hy_cache_store_format_decode_stamp(const unsigned char *p, uint64_t index, uint64_t generation,
				       struct hy_cache_stamp *st);

/* cache_store_journal.c */
int hy_cache_store_journal_replay(struct hy_cache_store *s, struct hy_cache_store_load_stats *st);

#endif
