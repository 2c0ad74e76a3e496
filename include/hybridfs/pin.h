/*
 * pin.h - the cache's side of pins and excludes (rules.h): which file ids
 * are pinned or excluded, and the pinned lines of the SSD cache store.
 *
 * What it is for: the daemon (fs/pin_glue.c) matches a file's path against
 * the mount's rules once, at its first open with those rules (not per
 * request), and tells the cache the answer for the file's id here. Each
 * request then finds it in its file's state (one byte, set when the state
 * is made): O(1) per request.
 *   - An excluded file's requests go around the cache (ReCA's bypass
 *     admission, whatever the request's hint): a read miss is not kept,
 *     a write goes home (the blocks already cached are kept current and
 *     leave by the replacement policy as others do).
 *   - A pinned file's blocks enter the SSD store on their first read,
 *     without the front buffer and its heat filter, and its store lines
 *     leave the replacement policy (policy.h's remove; insert on unpin),
 *     so that no victim search can ever find them, however much else is
 *     read. A write of a pinned block keeps it pinned (a line moving from
 *     DRAM to the store is pinned as it is committed); a truncation or
 *     removal drops the lines, which frees their share.
 * Bound: pinned lines may fill at most half of the store (pin_cap); past
 * it a pinned file's blocks are cached as any other's (counted in
 * over_cap), so the cache always has lines to evict and never deadlocks.
 * The daemon refuses a pin whose files alone would pass the cap.
 *
 * Who calls it: fs/pin_glue.c (set, stats), cache/cache.c (a new file's
 * rule), cache/lines.c (pinned lines), cache/cache_io.c (admission),
 * cache/cache_fsync.c (a removed file forgets its rule); the unit tests.
 *
 * Memory: the map of file ids is the cache's (freed by hy_cache_close).
 * Locks: the rules map under the cache's pin_lock, a leaf (taken under a
 * file table stripe when a file's state is made, and never held while
 * calling anything); pinned lines under the lines' mutex.
 */
#ifndef HYBRIDFS_PIN_H
#define HYBRIDFS_PIN_H

#include <stddef.h>
#include <stdint.h>

#include "hybridfs/rules.h"

struct hy_cache;

struct hy_pin_stats {
	uint64_t files_pinned, files_excluded; /* ids with that rule */
	uint64_t pinned_lines;		       /* store lines held out of the policy */
	uint64_t pin_cap;		       /* lines they may hold at most */
	uint64_t over_cap;		       /* pinned blocks cached normally: the cap was full */
	uint64_t excluded_requests;	       /* requests that went around the cache */
};

/* Files @ids[0..n) now follow @rule (HY_RULE_NONE: no rule). Their lines
 * already in the store are pinned (while the cap allows) or given back to
 * the policy (its cold queue). 0 or -ENOMEM (the rules that were set
 * stay). */
int hy_pin_set_files(struct hy_cache *cache, const uint64_t *ids, size_t n, enum hy_rule rule);

/* The rule of @file_id. */
enum hy_rule hy_pin_file_rule(struct hy_cache *cache, uint64_t file_id);

void hy_pin_get_stats(struct hy_cache *cache, struct hy_pin_stats *out);

#endif
