/*
 * map_journal.h - the indirection map's journal: what makes the map
 * crash-consistent without a SQLite write on the I/O path.
 *
 * What it is for: the map (map.h) is saved whole into SQLite only now and
 * then (a checkpoint, hy_map_save). Every change in between - an extent
 * relocated once its copy is durable, a range released home, a range
 * marked dirty by a write, or clean once synced home - is first appended
 * to this journal and made durable (fdatasync), then applied to the map in
 * memory. After a crash, the checkpoint plus the journal's records give
 * exactly the map that was in force (DESIGN.md invariants 2 and 6).
 *
 * Format: a file (STATE/bopt-map.journal) of fixed 48-byte records,
 * little-endian:
 *   offset  size  field
 *   0       4     magic "HYMJ"
 *   4       1     type: 1 relocate, 2 release, 3 dirty, 4 clean, 5 stamp
 *   5       3     epoch: the checkpoint epoch the record follows (24 bits)
 *   8       8     generation: the BOPT generation the change belongs to
 *   16      8     file_id
 *   24      8     block (stamp: the file's stamp, map.h)
 *   32      8     bopt_block (relocate; zero otherwise)
 *   40      4     nblocks
 *   44      4     FNV-1a 32 of bytes 0..43
 * Replay stops at the first record that is short (torn by the crash), has
 * a bad magic, type or checksum; the file is cut there, so the next append
 * follows the last good record. Records of another generation are skipped
 * (the BOPT was rebuilt since), and so are records of another epoch.
 *
 * Epochs make a checkpoint atomic: it saves the map with the next epoch in
 * one SQLite transaction (bopt_checkpoint), then empties the file. A crash
 * between the two leaves records of the old epoch, which the saved map
 * already holds: replay skips them, and records written after the
 * checkpoint carry the new epoch.
 *
 * Group commit: appends from many threads are serialized by journal->lock;
 * one fdatasync makes durable every record written before it started, so a
 * thread waits only until a sync that began after its write has finished.
 *
 * Who calls it: the indirector (borg/indirector.c: dirty and release records
 * of the write path, the reconfigurator's commits and drops, the
 * checkpoint), reconfig/borg*.c (open and replay at mount, with a checkpoint
 * of what replay found before anything runs; the records the cleaner counts,
 * the sync before a copy, close), fs/main.c (the journal's file name, for a
 * mount that leaves the BOPT out); the tests.
 *
 * Memory: struct hy_map_journal owns its descriptor and path.
 * Locks: journal->lock, a leaf; never held during fdatasync (a thread
 * marks itself the syncer, drops the lock, syncs, retakes it).
 */
#ifndef HYBRIDFS_MAP_JOURNAL_H
#define HYBRIDFS_MAP_JOURNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/group_commit.h"
#include "hybridfs/map.h"

#define HY_MAP_JOURNAL_RECORD 48
#define HY_MAP_JOURNAL_NAME   "bopt-map.journal"

enum hy_map_journal_type {
	HY_MJ_RELOCATE = 1,
	HY_MJ_RELEASE = 2,
	HY_MJ_DIRTY = 3,
	HY_MJ_CLEAN = 4,
	HY_MJ_STAMP = 5,
};

struct hy_map_journal_record {
	enum hy_map_journal_type type;
	uint64_t generation;
	uint32_t epoch; /* set by the journal on write */
	uint64_t file_id;
	uint64_t block;
	uint64_t bopt_block; /* relocate only */
	uint32_t nblocks;
};

struct hy_map;
struct sqlite3;

struct hy_map_journal {
	int fd;
	char *path;
	uint64_t generation;
	pthread_mutex_t lock; /* protects the fields below */
	uint32_t epoch;	      /* of the records written now */
	/* tickets: records written to the file, and known synced */
	struct hy_group_commit commit;
	int error; /* a failed write or sync: 0 or -errno, sticky */
};

/* Encoding, for the tests and the fuzzer: @buf is HY_MAP_JOURNAL_RECORD
 * bytes. decode returns 0, or -EUCLEAN (bad magic, type, zero bytes or
 * checksum). */
void hy_map_journal_encode(const struct hy_map_journal_record *r, unsigned char *buf);
int hy_map_journal_decode(const unsigned char *buf, struct hy_map_journal_record *r);

/* Opens (creating, mode 0600) the journal at @path for BOPT @generation
 * after the checkpoint of @epoch (hy_map_load's), and replays it into
 * @map: every good record of this generation and epoch applied in order
 * (relocate -> hy_map_relocate, release -> hy_map_release, dirty and clean
 * -> hy_map_set_dirty, stamp -> hy_map_set_stamp), the torn tail cut off. @replayed (may be
 * NULL) gets the number of records applied. Returns 0 or a negative errno
 * with a message naming the file and the record; a record the map refuses
 * (-EEXIST, -EBUSY: the journal and the checkpoint disagree) is -EUCLEAN. */
int hy_map_journal_open(const char *path, uint64_t generation, uint32_t epoch, struct hy_map *map,
			struct hy_map_journal **out, uint64_t *replayed, char *why,
			size_t why_size);

/* Writes @r (its generation and epoch set to the journal's) without
 * waiting for it to be durable, and gives its @ticket; wait() returns once
 * every record up to @ticket is. For changes that may be lost in a crash
 * but must keep their order (a relocate: its BOPT copy is durable, and the
 * home copy equally current). 0 or a negative errno, as for append. */
int hy_map_journal_write(struct hy_map_journal *journal, const struct hy_map_journal_record *r,
			 uint64_t *ticket);
int hy_map_journal_wait(struct hy_map_journal *journal, uint64_t ticket);

/* Appends @r (its generation is set to the journal's) and returns once it
 * is durable. Returns 0 or the negative errno of the write or sync (and
 * every later append fails too: the journal is then unusable, and so is
 * the BOPT until remount). */
int hy_map_journal_append(struct hy_map_journal *journal, const struct hy_map_journal_record *r);

/* Releases [@block, @block + @nblocks) of @file_id (any length: past
 * 2^32 blocks one record per relocated extent is written) in @journal
 * (which may be NULL; made durable first when @durable) and then in @map.
 * Returns the blocks released or a negative errno. */
int64_t hy_map_journal_release(struct hy_map_journal *journal, struct hy_map *map, uint64_t file_id,
			       uint64_t block, uint64_t nblocks, bool durable);

/* Records in the journal now (since its last checkpoint). */
uint64_t hy_map_journal_records(struct hy_map_journal *journal);

/* Waits until every record written so far is durable. 0 or -errno. */
int hy_map_journal_sync(struct hy_map_journal *journal);

/* Checkpoint: saves @map whole into @db (hy_map_save with the journal's
 * generation and the next epoch), then empties the journal. The caller
 * keeps the map and the journal from changing meanwhile
 * (hy_indirector_checkpoint() holds every gate; at mount nothing runs
 * yet). Returns 0 or a negative errno with a message. */
int hy_map_journal_checkpoint(struct hy_map_journal *journal, struct hy_map *map,
			      struct sqlite3 *db, char *why, size_t why_size);

void hy_map_journal_close(struct hy_map_journal *journal);

#endif
