/*
 * map.h - BORG's indirection map: which blocks of which files live in the
 * BOPT, where, and whether the BOPT copy is newer than the home copy.
 *
 * What it is for: after a reorganization the hot blocks have a copy in the
 * BOPT's read region, laid out in access order. The engine asks the map,
 * for every read, which parts of the requested range are relocated, so
 * that adjacent relocated blocks are read from the BOPT in one request and
 * the rest from home; a write to a relocated block goes to the BOPT and
 * marks it dirty, to be synced home later (DESIGN.md invariant 3).
 *
 * Kept as extents: (file_id, block, nblocks) -> (bopt_block, dirty). An
 * extent is one run that is contiguous in the file and in the BOPT and
 * all dirty or all clean; operations split and merge extents to keep that
 * true (neighbours that become contiguous and alike are merged, so a
 * million relocated blocks in long runs cost a few thousand extents: 32
 * bytes each).
 *
 * Concurrency: files are found through a hash striped over
 * HY_MAP_STRIPES mutexes (held only to find or add the file), and each
 * file's extents are a sorted array under that file's own rwlock: lookups
 * take no global lock, and lookups of one file run in parallel.
 *
 * Persistence: hy_map_save() writes the whole map in one SQLite
 * transaction (table bopt_map, schema 4) with the BOPT generation it
 * belongs to; hy_map_load() reads it back and refuses a map whose
 * generation is not the BOPT's. The rule that keeps a crash safe is the
 * caller's: an extent is added only after its BOPT copy is durable; a
 * dirty mark is journaled before the write's data goes to the BOPT, after
 * the home file's ctime moved (borg/indirector.c says why that is
 * enough).
 *
 * Who calls it: the indirector (borg/indirector.c: every read and write
 * below the cache, the stamps, the reconfigurator's operations), the map
 * journal (borg/map_journal.c: replay, checkpoints), the reconfigurator
 * (reconfig/borg*.c: new, load, free, stats, the extents for a plan's
 * diff through hy_map_walk, hy_map_bopt_in_use before a copy), explain
 * (fs/borg_handlers.c: hy_map_lookup); the unit tests.
 *
 * Memory: the map owns its files and extents; lookups copy pieces into the
 * caller's array. Locks: as above; never held across I/O or SQLite.
 */
#ifndef HYBRIDFS_MAP_H
#define HYBRIDFS_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_MAP_HOME	  UINT64_MAX /* a piece that is not relocated */
#define HY_MAP_EPOCH_MASK 0xffffffu  /* journal epochs are 24 bits */
#define HY_MAP_STRIPES	  64

struct sqlite3;

struct hy_map_extent {
	uint64_t file_id;
	uint64_t block;	     /* first 4 KiB block in the file */
	uint32_t nblocks;    /* >= 1 */
	bool dirty;	     /* the BOPT copy is newer than home */
	uint64_t bopt_block; /* where block lives in the BOPT */
	int64_t stamp;	     /* the file's: its home ctime (ns) when copied; 0: keep */
};

/* One piece of a looked-up range: relocated (bopt_block) or home. */
struct hy_map_piece {
	uint64_t block;
	uint32_t nblocks;
	bool dirty;
	uint64_t bopt_block; /* HY_MAP_HOME when at home */
};

struct hy_map_stats {
	uint64_t files, extents, blocks, dirty_blocks;
};

struct hy_map;

int hy_map_new(struct hy_map **out);
void hy_map_free(struct hy_map *map);

/* Splits [block, block + nblocks) of @file_id into pieces, in order, each
 * wholly relocated (contiguous in the BOPT, one dirty state) or wholly
 * home, and copies up to @max of them into @out. Returns the number of
 * pieces the range has (which may exceed @max: call again with more room),
 * or -EINVAL for an empty or overflowing range. */
int hy_map_lookup(struct hy_map *map, uint64_t file_id, uint64_t block, uint32_t nblocks,
		  struct hy_map_piece *out, size_t max);

/* Records that @e's blocks now live at e->bopt_block (their copy is
 * durable). The range must not be relocated already (-EEXIST), nor overlap
 * BOPT blocks another extent uses (-EBUSY). Returns 0, -ENOMEM, -EINVAL. */
int hy_map_relocate(struct hy_map *map, const struct hy_map_extent *e);

/* The range goes home (its home copy is current): the relocated parts of
 * it are removed. Returns the number of blocks removed, or a negative errno. */
int64_t hy_map_release(struct hy_map *map, uint64_t file_id, uint64_t block, uint64_t nblocks);

/* Marks the relocated parts of the range dirty (or clean, after they were
 * synced home). Returns the number of blocks whose state changed, or a
 * negative errno. */
int64_t hy_map_set_dirty(struct hy_map *map, uint64_t file_id, uint64_t block, uint32_t nblocks,
			 bool dirty);

/* Every extent (file by file, block order) to @fn; a non-zero return stops
 * the walk and is returned. For sync-home and save (e->stamp is the
 * file's stamp). Takes each file's lock
 * for reading while its extents are visited. */
int hy_map_walk(struct hy_map *map, int (*fn)(const struct hy_map_extent *e, void *arg), void *arg);

/* The ids of the files with dirty extents (BOPT blocks written through
 * the mount and not home yet), each once, into a malloc'd array (NULL and
 * 0 when none): what a flush sends home. 0 or -ENOMEM. */
int hy_map_dirty_files(struct hy_map *map, uint64_t **ids, size_t *n);

/* Every extent, as hy_map_walk() gives them, copied into a malloc'd array
 * (NULL and 0 when the map is empty). 0 or -ENOMEM. */
int hy_map_snapshot(struct hy_map *map, struct hy_map_extent **out, size_t *count);

/* Whether any extent uses a BOPT block of [@bopt_block, +@nblocks): the
 * reconfigurator asks before it writes a copy there. */
bool hy_map_bopt_in_use(struct hy_map *map, uint64_t bopt_block, uint64_t nblocks);

/* Copies of @file_id's extents that end after block @from, in block
 * order, into a malloc'd array (NULL and 0 when none). 0 or -ENOMEM. */
int hy_map_file_extents(struct hy_map *map, uint64_t file_id, uint64_t from,
			struct hy_map_extent **out, size_t *count);

/* A file's stamp: the ctime (ns) its home file had when its relocated
 * blocks were copied, so that a change made outside the mount (which moves
 * the ctime) is noticed and the copies are dropped, never served. get
 * returns -ENOENT for a file with no relocated blocks; set too (a stamp is
 * kept only while the file has extents; hy_map_relocate() sets it from
 * e->stamp when that is not 0). */
int hy_map_get_stamp(struct hy_map *map, uint64_t file_id, int64_t *stamp);
int hy_map_set_stamp(struct hy_map *map, uint64_t file_id, int64_t stamp);

void hy_map_get_stats(struct hy_map *map, struct hy_map_stats *out);

/* Persistence in table bopt_map (schema 5: extents with their file's
 * stamp) and, in the same transaction, bopt_checkpoint (the generation and
 * the journal epoch @epoch the saved map includes every record of: see
 * map_journal.h). Return 0 or a negative errno with a message in @why;
 * load refuses (-ESTALE) a saved map of another generation and leaves the
 * map empty; it gives the saved epoch in @epoch (0 when none was saved). */
int hy_map_save(struct hy_map *map, struct sqlite3 *db, uint64_t generation, uint32_t epoch,
		char *why, size_t why_size);
int hy_map_load(struct hy_map *map, struct sqlite3 *db, uint64_t generation, uint32_t *epoch,
		char *why, size_t why_size);

#endif
