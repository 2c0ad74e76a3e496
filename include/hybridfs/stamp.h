/*
 * stamp.h - stale-copy stamps: how a copy of home data learns that the home
 * file changed behind its back.
 *
 * What it is for: hybridfs keeps two kinds of copies of home data, the
 * cache's blocks (cache.h) and BORG's BOPT copies (indirector.h). Anyone
 * may change the backing directory while it is mounted, or while it is
 * not, so each copy keeps the home file's stamp from when it was made: its
 * ctime in nanoseconds (struct hy_device_attr's stamp, which moves with
 * every change of data or size), with the file's size then. Before a copy
 * is used the stamp is checked against the home file now; a change through
 * the mount moves the stamp forward after it changed the home file, so
 * only a change outside the mount leaves them apart. What a mismatch costs
 * is the keeper's to decide (the cache drops the file's blocks, or with a
 * shorter file only those past its end; the indirector sends the file's
 * dirty BOPT blocks home and drops its copies), always with the gate that
 * orders the file's changes held exclusive, and after a second check under
 * it, since a change through the mount may be between its home change and
 * its stamp's.
 *
 * Across mounts (the persistent cache, cache/cache.c): the cache store
 * keeps per file the ctime, mtime and size its kept lines are current for,
 * and the next mount serves them only when the home file has all three
 * again (hy_stamp_same). A ctime is only worth keeping once the clock has
 * moved past its tick (hy_stamp_settled): a change made within the same
 * tick would leave the ctime as it was, and the kept lines stale. The
 * tick: the kernel stamps with its coarse clock (a jiffy, at most 10 ms);
 * a ctime of whole seconds comes from a filesystem that keeps seconds (or
 * two, FAT), so it needs two seconds. What no stamp can tell: a change outside the
 * mount within the same tick as the mount's own last change of the file
 * (the ctime stays); the running cache misses it as well.
 *
 * Who calls it: cache/cache.c, cache/cache_io.c and cache/cache_fsync.c,
 * borg/indirector.c.
 * Memory and locks: none; the keepers hold the stamps and their locks.
 */
#ifndef HYBRIDFS_STAMP_H
#define HYBRIDFS_STAMP_H

#include <stdbool.h>
#include <stdint.h>

#include "hybridfs/device.h"

enum hy_stamp_verdict {
	HY_STAMP_FRESH,	  /* the copies are current */
	HY_STAMP_CHANGED, /* the ctime moved (or was never known): all stale */
	HY_STAMP_SHRUNK,  /* same ctime, a smaller file: truncated within one
			   * clock tick (an O_TRUNC open right after a write);
			   * what lies past the end is stale */
};

/* @stamp (0: unknown, never fresh) and @size (0 when the keeper does not
 * follow sizes) as kept, against the home file's attributes @now. */
static inline enum hy_stamp_verdict hy_stamp_check(int64_t stamp, uint64_t size,
						   const struct hy_device_attr *now)
{
	if (stamp == 0 || stamp != now->stamp)
		return HY_STAMP_CHANGED;
	return now->size >= size ? HY_STAMP_FRESH : HY_STAMP_SHRUNK;
}

/* After a change through the mount by one of several writers that may
 * finish in either order: whether the home file's new ctime @now should
 * replace the kept @stamp (only forward: the older ctime would make the
 * file look changed outside). */
static inline bool hy_stamp_moves(int64_t stamp, int64_t now)
{
	return now > stamp;
}

#define HY_STAMP_TICK_NS	50000000LL   /* 5 jiffies at HZ=100 */
#define HY_STAMP_COARSE_TICK_NS 2000000000LL /* whole-second timestamps */

/* Whether a ctime @stamp read at wall-clock time @now (CLOCK_REALTIME, ns)
 * can be kept: any change after @now gets a later ctime. */
static inline bool hy_stamp_settled(int64_t stamp, int64_t now)
{
	int64_t tick = stamp % 1000000000 == 0 ? HY_STAMP_COARSE_TICK_NS : HY_STAMP_TICK_NS;

	return stamp > 0 && now - stamp > tick;
}

/* Whether the home file @now is as a kept stamp says: ctime, mtime, size. */
static inline bool hy_stamp_same(int64_t ctime_ns, int64_t mtime_ns, uint64_t size,
				 const struct hy_device_attr *now)
{
	return ctime_ns != 0 && ctime_ns == now->stamp && mtime_ns == now->mtime_ns &&
	       size == now->size;
}

#endif
