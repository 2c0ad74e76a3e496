/*
 * keymap.h - a hash table of 64-bit keys (to 32-bit values, or a set),
 * open addressing with linear probing, for the simulator's per-block
 * tables (sim/: the replay's cached blocks, the footprint, devices,
 * processes, BORG's relocations), ReCA's keyed histories (engine/reca.c:
 * devices, processes), the cache's line tails (cache/cache.c) and PORE's
 * zones (lib/pore.c).
 *
 * Keys are any value but HY_KEYMAP_EMPTY. The table grows by doubling past
 * half full; deletion shifts back the keys that probed past the deleted
 * slot (no tombstones). O(1) expected per operation.
 *
 * Who calls it: sim/replay.c, engine/reca.c, cache/cache.c, lib/pore.c;
 * hy_keymap_mix() also cache/policy.c, cache/cache_index.c,
 * lib/file_table.c and analyzer/analyzer_graph.c for tables of their own
 * (below). Memory: the
 * caller owns the struct; hy_keymap_init allocates its arrays,
 * hy_keymap_free releases them. Threads: none; one user at a time.
 */
#ifndef HYBRIDFS_KEYMAP_H
#define HYBRIDFS_KEYMAP_H

#include <stdbool.h>
#include <stdint.h>

#define HY_KEYMAP_EMPTY UINT64_MAX

struct hy_keymap {
	uint64_t *keys;	  /* HY_KEYMAP_EMPTY: a free slot */
	uint32_t *values; /* NULL: a set */
	uint64_t mask, count;
};

/* A table of at least @slots slots (a power of two, 16 or more). 0 or
 * -ENOMEM. */
int hy_keymap_init(struct hy_keymap *m, uint64_t slots, bool with_values);
void hy_keymap_free(struct hy_keymap *m);

/* The slot of @key, or of the free slot where it would go. */
uint64_t hy_keymap_slot(const struct hy_keymap *m, uint64_t key);
/* Adds @key with @value: 1 added, 0 there already (its value unchanged),
 * -ENOMEM. */
int hy_keymap_put(struct hy_keymap *m, uint64_t key, uint32_t value);
/* Whether @key is there, its value into *@value (may be NULL). */
bool hy_keymap_get(const struct hy_keymap *m, uint64_t key, uint32_t *value);
/* Removes the key at slot @slot (from hy_keymap_slot, holding a key). */
void hy_keymap_delete_at(struct hy_keymap *m, uint64_t slot);

/* The hash every table of 64-bit keys uses: MurmurHash3's 64-bit
 * finalizer (every input bit reaches every output bit; a bijection, so
 * distinct keys never collide before the mask). The tables that keep their
 * own layout around it, each for a reason of its own:
 *   - lib/file_table.c: striped mutexes and references (per-file state
 *     found without a global lock; the cache's and the map's files);
 *   - cache/cache_index.c: a file's blocks in 4-byte tagged slots (its
 *     memory per line is measured: cache.h, Memory);
 *   - cache/policy.c: slots threaded on the policy's queues (8 bytes a
 *     line with LRU3, measured the same way);
 *   - cache's front buffer: chains through its slots, with ghost history;
 *   - fs/inode.c: chained nodes that must not move (the kernel holds their
 *     addresses), keyed by (dev, ino);
 *   - engine/classify.c: an intrusive hash over ReCA's fixed history ring;
 *   - analyzer/analyzer_graph.c: vertices and edges in arrays it exports in
 *     order, with its own growth bound (DESIGN.md's analyzer limits);
 *   - sim/trace_reader.c: string keys (device names). */
static inline uint64_t hy_keymap_mix(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	return k ^ (k >> 33);
}

#endif
