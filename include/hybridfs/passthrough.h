/*
 * passthrough.h - which open files the kernel reads and writes itself
 * (FUSE passthrough, passthrough=excluded), and keeping the daemon's view
 * of their data right around it.
 *
 * What it is for: an excluded file (rules.h: exclude= and hybridctl
 * exclude; the cache learns its rule at open, pin.h) is kept out of the
 * cache and BORG's plans anyway; with passthrough=excluded its reads and
 * writes do not reach the daemon at all: at open the daemon registers the
 * backing descriptor with the kernel (fuse_channel.h) and the OPEN or
 * CREATE reply names it, so the kernel serves read(2), write(2), splice
 * and mmap from the backing file, as the plain directory would. What
 * still reaches the daemon: LOOKUP, GETATTR, SETATTR (truncation through
 * the engine), FLUSH, FSYNC, FALLOCATE, LSEEK, COPY_FILE_RANGE, RELEASE.
 *
 * Correctness: a file goes through the kernel only while the daemon's
 * view of its data is the home file:
 *   - before its first such open, the cache's copies of it (dirty ones
 *     written home first, DRAM and SSD alike) are dropped; while the
 *     kernel serves it no block can enter the cache again (every handle
 *     of the inode is a passthrough one: see below), so a later open
 *     through the daemon reads home, whatever passthrough writes did;
 *   - a file with blocks in the BOPT (BORG's copies, which the daemon
 *     serves from the BOPT) is refused: the kernel would read home's
 *     older bytes;
 *   - the kernel keeps one io mode per inode (fs/fuse/iomode.c): while a
 *     handle of it is open through the daemon, with the page cache, a
 *     passthrough open fails with EIO, and while one is open through the
 *     kernel, every other open must name the same backing id. So an open
 *     is refused passthrough while another handle of the inode is open
 *     without it, and any open of an inode with a backing id joins it,
 *     whatever its rule;
 *   - the kernel's page cache of the inode (kept across opens,
 *     keep_cache) may hold pages older than passthrough writes: the first
 *     open without passthrough after such writes drops it (keep_cache
 *     off).
 * A refusal or a failed ioctl leaves the open as it would be without
 * passthrough (the daemon serves it), counted by reason, the last one
 * logged and shown in status (.fuse.passthrough_files).
 *
 * What is lost (man/hybridfs.8, docs/architecture.md): the profiler sees
 * the file's opens but none of its reads and writes (no access log rows:
 * the master access graph, BORG's plans and the workload classification
 * of its processes never see them); the cache does not count it.
 *
 * Who calls it: fs/main.c opens and closes it (after the pins, before the
 * session loop); fs/ops_files.c at open and create, and after the reply;
 * fs/ops.c at release (hy_ops_file_free); fs/status.c.
 *
 * Memory: struct hy_fs_passthrough is the fs's (fs->passthrough). Locks:
 * HY_PASSTHROUGH_STRIPES mutexes striped by inode, over the inode's three
 * passthrough fields; held across a few atomic loads, a cache look-up
 * (its own locks, leaves) and the ioctl, never across disk I/O (the
 * cache's write-back of a file's dirty blocks runs before it is taken).
 */
#ifndef HYBRIDFS_PASSTHROUGH_H
#define HYBRIDFS_PASSTHROUGH_H

#include <stdbool.h>
#include <stdint.h>

#include "hybridfs/rules.h"

struct hy_fs;
struct hy_inode;
struct json_object;

#define HY_PASSTHROUGH_STRIPES 64

/* Why an open that would have gone through the kernel did not. */
enum hy_passthrough_refusal {
	HY_PASSTHROUGH_OTHER_HANDLES, /* the inode is open through the daemon too */
	HY_PASSTHROUGH_BOPT_COPIES,   /* blocks in the BOPT, or cached again meanwhile */
	HY_PASSTHROUGH_CACHE_ERROR,   /* its dirty blocks could not go home */
	HY_PASSTHROUGH_IOCTL,	      /* the kernel refused the backing file */
	HY_PASSTHROUGH_REFUSAL_COUNT
};

/* At mount, with passthrough=excluded (fs->passthrough stays NULL
 * otherwise). 0 or -ENOMEM. */
int hy_fs_open_passthrough(struct hy_fs *fs);
/* After the session; accepts a mount without it. */
void hy_fs_close_passthrough(struct hy_fs *fs);

/* An open or create of @inode, its backing descriptor @fd open with
 * @flags, its file id and rule (pin.h) known: the backing id its reply is
 * to carry (fuse_channel.h), or 0 to serve it through the daemon. A
 * nonzero answer holds a share of the inode's backing id until
 * hy_fs_passthrough_release(). *@drop_pages: the kernel's page cache of
 * the inode is to be dropped at this open (keep_cache off). */
int hy_fs_passthrough_open(struct hy_fs *fs, struct hy_inode *inode, int fd, int flags,
			   uint64_t file_id, enum hy_rule rule, bool *drop_pages);
/* The handle that got a backing id from hy_fs_passthrough_open() is
 * released, or its reply never reached the kernel (an interrupted open). */
void hy_fs_passthrough_release(struct hy_fs *fs, struct hy_inode *inode);

/* {"mode", "opened", "joined", "open_now", "refused": {reason: n},
 * "last_refusal"}; NULL without passthrough or out of memory. */
struct json_object *hy_fs_passthrough_status(struct hy_fs *fs);

#endif
