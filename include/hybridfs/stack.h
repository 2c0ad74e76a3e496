/*
 * stack.h - the one stack builder: the I/O stack below the FUSE glue,
 * assembled the same way whatever drives it.
 *
 * What it is for: DESIGN.md's "one engine, two drivers". The daemon and
 * the simulator both run file data through
 *
 *	engine (engine.h) -> cache (cache.h) -> indirector (indirector.h) -> device (device.h)
 *
 * and both build it here, with their devices: the daemon with the backing
 * directory's device, BORG's BOPT and map (reconfig/borg.c owns them) and
 * the SSD store; the simulator (sim/borg.c) with device models of home and
 * of the BOPT, a map in memory and no journal. hy_stack_new() makes the
 * engine (which owns the indirector over the backing device), puts the
 * BOPT in the indirector and opens the cache over it, each when given;
 * a driver whose parts come in the order of its mount (the daemon: BORG
 * opens after the engine, the cache after BORG, so that its misses go
 * through the map) adds them later with hy_stack_set_bopt() and
 * hy_stack_open_cache(). Teardown runs the other way: the cache first
 * (its dirty blocks go home through the indirector, the BOPT still in
 * it), then the BOPT out, then the engine.
 *
 * Who calls it: fs/ops.c (the engine at hy_fs_init, freed at
 * hy_fs_destroy), fs/cache_glue.c (the cache opened and closed), the
 * simulator's BORG (sim/borg.c) and whole cache (sim/full.c),
 * reconfig/borg.c (hy_stack_set_bopt at hy_borg_open: it owns the map, the
 * journal and the BOPT, and takes them out at hy_borg_close), the unit
 * tests.
 *
 * Memory: the engine returned is the stack's handle and owns its
 * indirector; the backing device, the BOPT device, the map and the
 * journal are borrowed and must outlive the stack (or be taken out with
 * hy_stack_set_bopt(NULL) first); the cache opened by the stack is the
 * stack's: hy_stack_close_cache() or hy_stack_free() closes it.
 *
 * Locks: none of its own; the builder runs before requests flow and the
 * teardown after they stopped.
 */
#ifndef HYBRIDFS_STACK_H
#define HYBRIDFS_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hy_cache;
struct hy_cache_config;
struct hy_device;
struct hy_engine;
struct hy_map;
struct hy_map_journal;

/* BORG's part of the stack (indirector.h, hy_indirector_set_bopt). */
struct hy_stack_bopt {
	struct hy_map *map;		/* the indirection map */
	struct hy_device *device;	/* the BOPT */
	uint64_t read_base;		/* byte offset of read-region block 0 on @device */
	struct hy_map_journal *journal; /* NULL: changes are not journaled (in memory) */
	bool writes;			/* bopt_writes: writes to relocated blocks go there */
	uint64_t readahead;		/* bopt_readahead: bytes (indirector.h); 0: off */
	uint64_t read_end;		/* byte offset of the read region's end on @device */
};

struct hy_stack_config {
	struct hy_device *backing;	     /* home: the backing files, or a model of them */
	const struct hy_stack_bopt *bopt;    /* NULL: no BOPT (yet) */
	const struct hy_cache_config *cache; /* NULL: no cache (yet) */
};

/* Builds the stack of @config: the engine and its indirector over
 * config->backing, the BOPT in it, the cache opened over it and set in
 * the engine. 0 and the engine in *@out, or a negative errno with @why
 * (nothing is left built). */
int hy_stack_new(const struct hy_stack_config *config, struct hy_engine **out, char *why,
		 size_t why_size);

/* Puts BORG's map and BOPT in the engine's indirector, and its bopt_writes
 * setting (before requests flow); NULL takes them out (after they
 * stopped). */
void hy_stack_set_bopt(struct hy_engine *engine, const struct hy_stack_bopt *bopt);

/* Opens the cache of @config over the engine's indirector and puts it in
 * front of it (hy_engine_set_cache): the stack's, until closed. 0 and the
 * cache in *@out (may be NULL), or a negative errno with @why (the engine
 * is left without a cache). */
int hy_stack_open_cache(struct hy_engine *engine, const struct hy_cache_config *config,
			struct hy_cache **out, char *why, size_t why_size);

/* Takes the cache out of the engine and closes it (every dirty block
 * home): 0 without one, else hy_cache_close()'s result. */
int hy_stack_close_cache(struct hy_engine *engine);

/* The teardown, in order: the cache closed (a failure is logged), the BOPT
 * taken out, the engine and its indirector freed. NULL is fine. */
void hy_stack_free(struct hy_engine *engine);

#endif
