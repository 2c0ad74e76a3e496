/* creds.c - the caller's umask for the creating requests; see
 * hy_fs_umask_operations() in fs.h. (The caller's fsuid, fsgid and groups
 * are taken in fs/ops.c, around each creating call.) */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>

#include "fs_internal.h"
#include "hybridfs/log.h"

/*
 * The caller's umask, applied where POSIX applies it. With POSIX ACLs the
 * kernel sends a new node's mode unmasked (hy_init asks for
 * FUSE_CAP_DONT_MASK): in a folder with a default ACL the umask is not
 * applied at all, and elsewhere it is; only the backing filesystem knows
 * which, so each creating request runs with the caller's umask as the
 * thread's own (a worker unshares its umask, cwd and root once). The
 * umask stays the last caller's until the next creating request sets it
 * (umask(2) only when it differs: most requests come from one user with
 * one umask); nothing else a worker does depends on it (the daemon's own
 * files are made by other threads, or are there since the mount). A kernel
 * that refuses the unshare gets the umask applied to the mode, as the
 * kernel would have.
 */
static struct fuse_lowlevel_ops umask_ops;
static __thread int umask_own;	  /* 1: the thread's own umask; -1: cannot be */
static __thread mode_t umask_now; /* the thread's umask, when umask_own is 1 */

static void caller_umask(fuse_req_t req, mode_t *mode)
{
	mode_t mask = fuse_req_ctx(req)->umask;

	if (umask_own == 0) {
		umask_own = unshare(CLONE_FS) == 0 ? 1 : -1;
		if (umask_own < 0)
			hy_log(LOG_WARNING,
			       "fs: a worker cannot have a umask of its own (%s): new nodes get "
			       "the caller's umask even where a default ACL would rule",
			       strerror(errno));
		if (umask_own > 0) {
			umask(mask);
			umask_now = mask;
			return;
		}
	}
	if (umask_own < 0) {
		*mode &= ~mask;
		return;
	}
	if (mask != umask_now) {
		umask(mask);
		umask_now = mask;
	}
}

static void umask_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			dev_t rdev)
{
	caller_umask(req, &mode);
	hy_fs_operations.mknod(req, parent, name, mode, rdev);
}

static void umask_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	caller_umask(req, &mode);
	hy_fs_operations.mkdir(req, parent, name, mode);
}

static void umask_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			 struct fuse_file_info *fi)
{
	caller_umask(req, &mode);
	hy_fs_operations.create(req, parent, name, mode, fi);
}

const struct fuse_lowlevel_ops *hy_fs_umask_operations(void)
{
	umask_ops = hy_fs_operations;
	umask_ops.mknod = umask_mknod;
	umask_ops.mkdir = umask_mkdir;
	if (umask_ops.create)
		umask_ops.create = umask_create;
	return &umask_ops;
}
