/*
 * file_table.h - finding per-file state by file id without a global lock:
 * a hash of files striped over a power-of-two number of mutexes, each
 * file found with a reference taken, freed by its last reference when it
 * holds nothing.
 *
 * What it is for: the indirection map (borg/map.c: a file's extents) and
 * the SSD cache's index (cache/cache_index.c: a file's cached blocks) keep
 * their state per file, under that file's own lock, and find it here.
 *
 * Intrusive: the caller's per-file struct embeds a struct
 * hy_file_table_entry and gives the table, at creation, callbacks that
 * allocate a new per-file object for an id (returning its embedded entry;
 * the caller's constructor inits its own lock and fields), say whether a
 * file holds nothing (checked only when its last reference drops) and
 * free it. The table sets the entry's fields; the caller never writes
 * them.
 *
 * Who calls it: borg/map.c (the map's files), cache/cache_index.c (the
 * index's files), cache/cache.c (the cache's per-file state, through
 * cfile_get() in cache/cache_internal.h); the unit tests through them.
 *
 * Memory: the table owns its entries from alloc() until it hands them to
 * destroy(): when the last reference to a file that empty() calls empty
 * drops, or in hy_file_table_free() (every file left, whatever its
 * references). A snapshot's array is the caller's, freed (and its
 * references dropped) by hy_file_table_release_snapshot().
 *
 * Lock order: a stripe's mutex is held only to find, add or free a file
 * (alloc(), empty() and destroy() run under it and must take no lock of
 * the caller's), never while the caller takes its own per-file lock; the
 * caller drops its per-file lock before hy_file_table_put().
 */
#ifndef HYBRIDFS_FILE_TABLE_H
#define HYBRIDFS_FILE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Embedded in the caller's per-file struct; the table's fields. */
struct hy_file_table_entry {
	uint64_t file_id;
	unsigned long refs;		  /* atomic; taken under the stripe's mutex */
	struct hy_file_table_entry *next; /* hash chain, under the stripe's mutex */
};

struct hy_file_table_ops {
	/* A new per-file object for @file_id, or NULL (out of memory). */
	struct hy_file_table_entry *(*alloc)(void *arg, uint64_t file_id);
	/* Whether a file whose last reference just dropped holds nothing. */
	bool (*empty)(const struct hy_file_table_entry *e);
	/* Frees a per-file object. */
	void (*destroy)(void *arg, struct hy_file_table_entry *e);
};

struct hy_file_table;

/* A table of @stripes mutexes (a power of two); @ops and @arg (passed to
 * alloc and destroy) must outlive it. Returns 0, -EINVAL or -ENOMEM. */
int hy_file_table_new(size_t stripes, const struct hy_file_table_ops *ops, void *arg,
		      struct hy_file_table **out);

/* Destroys every file left (nobody may hold one) and the table. */
void hy_file_table_free(struct hy_file_table *t);

/* Finds @file_id (adding it when @create) and takes a reference. NULL when
 * absent, or when adding it failed (*@err = -ENOMEM; else *@err = 0). */
struct hy_file_table_entry *hy_file_table_get(struct hy_file_table *t, uint64_t file_id,
					      bool create, int *err);

/* Drops a reference; the last one frees a file that holds nothing. */
void hy_file_table_put(struct hy_file_table *t, struct hy_file_table_entry *e);

/* Every file, sorted by id, with a reference taken. Returns 0 or -ENOMEM
 * (then nothing is held). */
int hy_file_table_snapshot(struct hy_file_table *t, struct hy_file_table_entry ***entries,
			   size_t *count);

/* Drops a snapshot's references and frees its array. */
void hy_file_table_release_snapshot(struct hy_file_table *t, struct hy_file_table_entry **entries,
				    size_t count);

/* How many files the table holds (a moment's count). */
size_t hy_file_table_count(struct hy_file_table *t);

/* DRAM the table itself holds (its struct and buckets, not the files). */
size_t hy_file_table_bytes(struct hy_file_table *t);

#endif
