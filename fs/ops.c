/* ops.c - the FUSE low-level operations: the pieces the handlers share (open-file and directory
 * handles, file ids, the metadata gate, counting, credentials), the session (init, the operations
 * table) and the filesystem's setup and teardown; see include/hybridfs/fs.h and fs/ops_internal.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "hybridfs/borg.h"
#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "fs_internal.h"
#include "hybridfs/fuse_channel.h"
#include "hybridfs/inode.h"
#include "hybridfs/log.h"
#include "hybridfs/options.h"
#include "hybridfs/passthrough.h"
#include "hybridfs/identity.h"
#include "hybridfs/profiler.h"
#include "hybridfs/reca.h"
#include "hybridfs/stack.h"

#include "ops_internal.h"

void hy_ops_handle_track(struct hy_fs *fs, struct hy_fs_handle *h, bool is_dir)
{
	h->is_dir = is_dir;
	pthread_mutex_lock(&fs->handles_lock);
	h->next = fs->handles.next;
	h->prev = &fs->handles;
	fs->handles.next->prev = h;
	fs->handles.next = h;
	pthread_mutex_unlock(&fs->handles_lock);
}

static void handle_untrack(struct hy_fs *fs, struct hy_fs_handle *h)
{
	pthread_mutex_lock(&fs->handles_lock);
	h->prev->next = h->next;
	h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->handles_lock);
}

/* The file id of @inode, for a path that changes the file's data or
 * metadata without a handle of it (truncate or chmod by name, an O_TRUNC
 * open, the removal of its last name). The entry learns the id at open;
 * one made by a lookup after the kernel forgot the inode (FORGET frees
 * the entry that knew it) knows none, so the file table is asked, by the
 * file's identity: every file the cache or the BOPT holds blocks of has
 * its row there, since only files with an id enter them. Asked here and
 * not at every lookup, which would cost a statx and a SQLite read for
 * each name listed. @fd: a descriptor of the file (O_PATH too). */
uint64_t hy_ops_file_id_of(struct hy_fs *fs, struct hy_inode *inode, int fd)
{
	uint64_t id = atomic_load(&inode->file_id), none = 0;
	struct stat st;

	if (id || !fs->profiler || inode->type != S_IFREG || fd < 0)
		return id;
	if (fstat(fd, &st) < 0) {
		hy_log(LOG_WARNING, "fs: inode %llu: cannot stat it for its file id: %s",
		       (unsigned long long)inode->ino, strerror(errno));
		return 0;
	}
	if (st.st_ino != inode->ino || st.st_dev != inode->dev)
		return 0;
	id = hy_identity_find_file(hy_profiler_identity(fs->profiler), fd, &st);
	/* a request that learned it meanwhile learned the same id */
	if (id && !atomic_compare_exchange_strong(&inode->file_id, &none, id))
		id = none;
	return id;
}

/* A file whose last name went while no handle was open, or whose last
 * handle closed after that: nobody can read it again, so the cache drops
 * its blocks unwritten and lets go of it, and its room goes back to the
 * disk now, as on the plain directory (issue 8, full disks); BORG frees
 * its relocated blocks (hy_borg_forget_file). @fd: a descriptor of it,
 * for its link count. */
void hy_ops_forget_if_gone(struct hy_fs *fs, struct hy_inode *inode, int fd)
{
	uint64_t file_id;
	struct stat st;
	int rc;

	if (fd < 0 || atomic_load(&inode->opens) != 0 ||
	    (!fs->engine->cache && !fs->profiler && !fs->borg))
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0)
		return;
	/* The cache holds blocks that would go home into a removed file, and
	 * BORG relocated blocks that would keep the BOPT's room: they must
	 * know the id however the entry was made (one indexed database read
	 * when the entry does not know it). Without either the id serves the
	 * profiler's pruning alone, and the entry's own (a file made or opened
	 * through the mount) is enough: no database read per unlink. */
	file_id = fs->engine->cache || fs->borg ? hy_ops_file_id_of(fs, inode, fd)
						: atomic_load(&inode->file_id);
	if (!file_id)
		return;
	rc = fs->engine->cache ? hy_engine_forget_file(fs->engine, file_id) : 0;
	if (rc < 0)
		hy_log(LOG_WARNING, "file %llu, removed: the cache could not let go of it: %s",
		       (unsigned long long)file_id, strerror(-rc));
	else if (fs->profiler)
		hy_identity_file_gone(hy_profiler_identity(fs->profiler),
				      file_id); /* its row can go */
	/* BORG's relocated blocks of it are freed now, not at the next
	 * reorganization (issue 18: removed build outputs held most of a
	 * day's plan); after the cache, which sends nothing more down */
	if (fs->borg)
		hy_borg_forget_file(fs->borg, file_id, NULL);
}

void hy_ops_meta_gate_begin(struct hy_fs *fs, struct hy_inode *inode, int fd,
			    struct meta_gate *gate)
{
	uint64_t file_id;

	gate->gated = gate->fresh = false;
	if (!inode || fd < 0 || !S_ISREG(inode->type))
		return;
	file_id = hy_ops_file_id_of(fs, inode, fd);
	if (!hy_engine_has_copies(fs->engine, file_id))
		return;
	hy_engine_file_init(fs->engine, &gate->file, fd);
	hy_engine_file_set_id(&gate->file, file_id);
	gate->fresh = hy_engine_meta_begin(fs->engine, &gate->file);
	gate->gated = true;
}

void hy_ops_meta_gate_end(struct hy_fs *fs, struct meta_gate *gate, bool changed)
{
	if (gate->gated)
		hy_engine_meta_end(fs->engine, &gate->file, gate->fresh && changed);
	gate->gated = false;
}

/* Closes an open file handle; 0 or the negative errno of close(2) or of
 * sending the file's BOPT writes home. */
int hy_ops_file_free(struct hy_fs *fs, struct hy_file *file)
{
	int rc, home = 0;

	/* its share of the inode's backing id first: the kernel left
	 * passthrough for this handle before it sent RELEASE */
	if (file->passthrough_id)
		hy_fs_passthrough_release(fs, file->inode);
	/* when the last handle goes, the session's writes into the BOPT go
	 * home, while the descriptor is still open (FusionCache's session
	 * write-back) */
	if (atomic_fetch_sub(&file->inode->opens, 1) == 1) {
		home = hy_engine_close(fs->engine, &file->engine);
		hy_ops_forget_if_gone(fs, file->inode, file->fd);
	}
	if (home < 0)
		hy_log(LOG_ERR,
		       "file %llu: its BOPT writes cannot go home at close: %s (they stay "
		       "in the BOPT, journaled, and go home at the next flush)",
		       (unsigned long long)file->engine.file_id, strerror(-home));
	handle_untrack(fs, &file->link);
	if (file->profiled)
		hy_profiler_close(&file->prof);
	rc = close(file->fd) < 0 ? -errno : 0;
	free(file);
	return rc ? rc : home;
}

void hy_ops_dir_free(struct hy_fs *fs, struct hy_dir *dir)
{
	handle_untrack(fs, &dir->link);
	closedir(dir->dp);
	free(dir);
}

/* A metadata operation: counted for the mount and for the process. */
/* Counts a metadata operation; returns how long the kernel may keep what
 * it answers: the mount's timeout, or for a metadata-heavy process the
 * policy table's metadata timeout when that is longer (ReCA's metadata
 * priority; reca.h). */
double hy_ops_count_meta(struct hy_fs *fs, fuse_req_t req, enum hy_fs_op op,
			 enum hy_profile_meta kind, double mount_timeout)
{
	double t = 0;

	hy_ops_count_op(fs, op);
	if (fs->profiler)
		t = hy_reca_count_meta(fs->engine->reca, fuse_req_ctx(req)->pid, kind);
	return t > mount_timeout ? t : mount_timeout;
}

bool hy_ops_is_state_entry(struct hy_fs *fs, struct hy_inode *parent, const char *name)
{
	return parent->ino == fs->state_parent_ino && parent->dev == fs->state_parent_dev &&
	       strcmp(name, fs->state_name) == 0;
}

/* ---- credentials for creating calls ---------------------------------- */

int hy_ops_creds_enter(struct hy_fs *fs, fuse_req_t req, struct creds_saved *saved)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[64];
	int n;

	saved->switched = false;
	if (!fs->switch_creds || (ctx->uid == 0 && ctx->gid == 0))
		return 0;
	n = fuse_req_getgroups(req, 64, groups);
	if (n < 0)
		n = 0; /* groups unknown: the primary group still applies */
	if (n > 64)
		n = 64;
	if (syscall(SYS_setgroups, (size_t)n, groups) < 0)
		return -errno;
	setfsgid(ctx->gid);
	setfsuid(ctx->uid);
	saved->switched = true;
	return 0;
}

void hy_ops_creds_leave(struct creds_saved *saved)
{
	if (!saved->switched)
		return;
	setfsuid(0);
	setfsgid(0);
	if (syscall(SYS_setgroups, (size_t)0, NULL) < 0)
		hy_log(LOG_ERR, "fs: cannot restore the daemon's groups: %s", strerror(errno));
}

/* ---- setuid, setgid and security.capability ------------------------- */

/* The attribute file capabilities live in (<linux/xattr.h> XATTR_NAME_CAPS) */
#define CAPS_XATTR "security.capability"

void hy_ops_privs_changed(struct hy_inode *inode)
{
	uint64_t seen = atomic_load_explicit(&inode->privs, memory_order_relaxed);

	/* even, and above what any check running now has read: that check
	 * cannot mark the inode clear any more (its compare-and-swap fails) */
	while (!atomic_compare_exchange_weak_explicit(&inode->privs, &seen, (seen | 1) + 1,
						      memory_order_acq_rel, memory_order_relaxed))
		;
}

/* Whether the caller is in group @gid (its fsgid or a supplementary group),
 * for the setgid rule; false when its groups cannot be read, the side on
 * which the bit goes. */
static bool caller_in_group(fuse_req_t req, gid_t gid)
{
	gid_t some[64], *groups = some;
	int n, i;
	bool in = false;

	if (fuse_req_ctx(req)->gid == gid)
		return true;
	n = fuse_req_getgroups(req, 64, some);
	if (n > 64) {
		groups = malloc((size_t)n * sizeof(*groups));
		n = groups ? fuse_req_getgroups(req, n, groups) : -ENOMEM;
	}
	if (n < 0)
		hy_log(LOG_WARNING,
		       "fs: the groups of pid %d cannot be read (%s): taken as outside the "
		       "file's group",
		       (int)fuse_req_ctx(req)->pid, strerror(-n));
	for (i = 0; i < n && !in; i++)
		in = groups[i] == gid;
	if (groups != some)
		free(groups);
	return in;
}

/*
 * What a change of a file's data takes away on Linux, done here once the
 * kernel leaves it to the daemon (FUSE_HANDLE_KILLPRIV_V2; fuse_channel.h):
 * security.capability always; setuid and setgid as @what says (the VFS's
 * rules since Linux 6.2: should_remove_suid, setattr_should_drop_sgid;
 * CAP_FSETID is the kernel's to know, and it says so by the request's
 * kill flag). An inode found with
 * none of them is marked clear and not looked at again until a change
 * through the mount that may add one (hy_ops_privs_changed: setattr,
 * setxattr, and every open, which is where changes made behind the mount
 * are noticed, as the kernel notices them at its next attribute refresh).
 *
 * @fd: a descriptor of the file; @path: NULL when @fd is open for reading
 * or writing, else a path to it (the /proc/self/fd link of an O_PATH @fd,
 * on which fchmod and fgetxattr do not work). @known: the file's fresh
 * attributes, or NULL to take them here. @tell_kernel: the reply carries
 * no attributes (WRITE, OPEN), so a mode changed here is made known by
 * invalidating the kernel's copy, which it would otherwise keep for
 * attr_timeout (and exec would honour a setuid bit already gone).
 *
 * Returns 1 when the mode changed, 0 when it did not, or the negative
 * errno of the change: the request then fails, as it did when the kernel's
 * own SETATTR or REMOVEXATTR failed.
 */
int hy_ops_kill_privs(struct hy_fs *fs, fuse_req_t req, struct hy_inode *inode, int fd,
		      const char *path, const struct stat *known, enum hy_ops_kill what,
		      bool tell_kernel)
{
	struct meta_gate gate;
	struct stat st;
	mode_t kill = 0;
	uint64_t seen;
	ssize_t caps;
	int rc = 0, err;

	if (!hy_fuse_channel_killpriv_v2(fs->channel) || !inode || inode->type != S_IFREG)
		return 0;
	seen = atomic_load_explicit(&inode->privs, memory_order_acquire);
	if (seen & 1)
		return 0;
	if (!known) {
		if (fstat(fd, &st) < 0) {
			rc = -errno;
			hy_log(LOG_ERR, "fs: inode %llu: cannot stat it to clear setuid/setgid: %s",
			       (unsigned long long)inode->ino, strerror(errno));
			return rc;
		}
		known = &st;
	}
	if (what != HY_KILL_CAPS && (known->st_mode & S_ISUID))
		kill |= S_ISUID;
	if (what != HY_KILL_CAPS && (known->st_mode & S_ISGID) &&
	    ((known->st_mode & S_IXGRP) || !caller_in_group(req, known->st_gid)))
		kill |= S_ISGID;
	caps = path ? getxattr(path, CAPS_XATTR, NULL, 0) : fgetxattr(fd, CAPS_XATTR, NULL, 0);
	err = errno;
	if (caps < 0 && !kill) {
		/* a bit a caller with CAP_FSETID keeps still needs the next look;
		 * an xattr that cannot be read is not taken for absent for good */
		if (!(known->st_mode & (S_ISUID | S_ISGID)) && (err == ENODATA || err == ENOTSUP))
			atomic_compare_exchange_strong_explicit(&inode->privs, &seen, seen | 1,
								memory_order_acq_rel,
								memory_order_relaxed);
		return 0;
	}
	/* the change moves the ctime: cached and relocated blocks stay current */
	hy_ops_meta_gate_begin(fs, inode, fd, &gate);
	if (caps >= 0) {
		rc = (path ? removexattr(path, CAPS_XATTR) : fremovexattr(fd, CAPS_XATTR)) < 0
			     ? -errno
			     : 0;
		if (rc == -ENODATA) /* gone meanwhile */
			rc = 0;
	}
	if (rc == 0 && kill) {
		mode_t mode = known->st_mode & 07777 & ~kill;

		rc = (path ? fchmodat(AT_FDCWD, path, mode, 0) : fchmod(fd, mode)) < 0 ? -errno : 0;
	}
	hy_ops_meta_gate_end(fs, &gate, rc == 0);
	if (rc < 0) {
		hy_log(LOG_WARNING,
		       "fs: inode %llu: cannot clear %s%s%s after a change of its data by uid %u: "
		       "%s; the request fails",
		       (unsigned long long)inode->ino, caps >= 0 ? "security.capability" : "",
		       caps >= 0 && kill ? " and " : "", kill ? "setuid/setgid" : "",
		       (unsigned)fuse_req_ctx(req)->uid, strerror(-rc));
		return rc;
	}
	/* the next fsync makes it durable */
	hy_engine_home_changed(fs->engine, hy_ops_file_id_of(fs, inode, fd));
	if (!kill)
		return 0;
	if (tell_kernel)
		hy_ops_privs_shown(fs, inode);
	return 1;
}

void hy_ops_privs_shown(struct hy_fs *fs, struct hy_inode *inode)
{
	int rc = hy_fuse_channel_invalidate(fs->channel, hy_ops_ino_of(fs, inode));

	if (rc < 0)
		hy_log(LOG_WARNING,
		       "fs: inode %llu: the kernel may show its old mode for up to attr_timeout: "
		       "its attributes cannot be invalidated: %s",
		       (unsigned long long)inode->ino, strerror(-rc));
}

/* ---- session ----------------------------------------------------------- */

static void hy_init(void *userdata, struct fuse_conn_info *conn)
{
	struct hy_fs *fs = userdata;

	/* open=kernel: files opened by the kernel itself, sparing an OPEN
	 * and a RELEASE per open(2) (fs/kfile.c). Not where nobody would
	 * check permissions at open (a user's own mount without
	 * default_permissions), nor with passthrough, which names its
	 * backing file in the OPEN reply. auto leaves them to the daemon
	 * with the write-back cache too: its writes come from kernel
	 * threads, and only an OPEN tells the profiler whose they are. */
	fs->kernel_opens_files = fs->open_mode != HY_OPEN_DAEMON && fs->kfiles &&
				 (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) &&
				 fs->open_files_unchecked_ok && !fs->passthrough &&
				 (fs->open_mode == HY_OPEN_KERNEL || !fs->writeback_cache);
	if (fs->kernel_opens_files)
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
	else if (fs->open_mode == HY_OPEN_KERNEL)
		hy_log(LOG_WARNING, "fs: open=kernel: %s; the daemon opens files",
		       !(conn->capable & FUSE_CAP_NO_OPEN_SUPPORT)
			       ? "the kernel cannot open files without the daemon"
			       : "passthrough needs an OPEN per file");
	/* One request for O_TRUNC instead of open plus setattr; with no OPEN
	 * at all, the truncation must come as a SETATTR. */
	if ((conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) && !fs->kernel_opens_files)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	else
		conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	if (fs->writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		fs->writeback_cache = false;
	/* as far as main.c raised the mount's read-ahead before this reply
	 * (the kernel takes the smaller of the two) */
	if (fs->readahead > conn->max_readahead)
		conn->max_readahead = fs->readahead;
	/* the mount option main.c passed (libfuse refuses INIT unless the
	 * two agree) */
	if (fs->splice_max_read && fs->splice_max_read < HY_FS_READAHEAD)
		conn->max_read = fs->splice_max_read;
	/* Listings with their entries' attributes. READDIRPLUS_AUTO (the
	 * kernel asks for them on a listing's first request, some 190
	 * entries, and on later ones after lookups in the folder) measured
	 * the same as every request with them for ls -lR, git status and a
	 * program that stats as it lists; a folder read for its names alone
	 * costs a third (find -name of 20,000 names: 95 ms against 257),
	 * and one listed whole and then stat'ed (du, rsync, tar, os.walk)
	 * a LOOKUP per name past the first request (the same folder: 501
	 * ms against 255). readdirplus=always takes the second trade
	 * (BENCHMARKS.md, "Kernel metadata caching"). */
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
		if (fs->readdirplus_always)
			conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	}
	/* opendir=kernel: folders opened by the kernel itself, sparing two
	 * requests per opendir(3) and keeping every listing until its folder
	 * changes or its entries expire (fs/kcache.c). Not with
	 * entry_timeout=0 (nothing is to be kept), nor without the sweeper
	 * that bounds how long a listing is kept. */
	fs->kernel_opens_dirs = fs->opendir != HY_OPENDIR_DAEMON && fs->entry_timeout > 0 &&
				(conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) &&
				hy_fs_kcache_can_keep_listings(fs);
	if (fs->kernel_opens_dirs)
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
	else if (fs->opendir == HY_OPENDIR_KERNEL)
		hy_log(LOG_WARNING, "fs: opendir=kernel: %s; the daemon opens folders",
		       (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT)
			       ? "the listings' sweeper is not running"
			       : "the kernel cannot open folders without the daemon");
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* The caller's umask is left to the backing filesystem, which skips
	 * it where a folder's default ACL rules, as on the plain directory
	 * (fs/main.c applies it around the creating requests). */
	if (conn->capable & FUSE_CAP_DONT_MASK)
		conn->want |= FUSE_CAP_DONT_MASK;
	/* POSIX ACLs as the plain directory has them, on an allow_other mount:
	 * the kernel reads a node's ACL (getxattr system.posix_acl_access,
	 * passed through to the backing file) and checks it, and the backing
	 * filesystem keeps the mode in step when one is set. Without it, the
	 * kernel checks the mode bits alone and a group member reads a file
	 * its ACL denies. On another mount only the mounting user reaches the
	 * files, as the daemon does, so the backing filesystem checks the ACLs
	 * itself; there the capability would only cost a GETATTR before every
	 * unlink and rename (it turns on default_permissions: the kernel then
	 * checks with fresh attributes). */
	if (fs->posix_acl && (conn->capable & FUSE_CAP_POSIX_ACL) &&
	    (conn->capable & FUSE_CAP_DONT_MASK))
		conn->want |= FUSE_CAP_POSIX_ACL;
	else if (fs->posix_acl)
		hy_log(LOG_WARNING,
		       "fs: the kernel offers no POSIX ACLs on FUSE: an ACL "
		       "stricter than its file's mode is not enforced for other users");
	/* Locks stay in the kernel, local to this mount (see fs.h). Setuid,
	 * setgid and capabilities are cleared by the kernel, or with
	 * FUSE_HANDLE_KILLPRIV_V2 (which libfuse does not know; the channel
	 * asks for it) here, never by the first protocol's rules. */
	conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS | FUSE_CAP_HANDLE_KILLPRIV);
	/* Every request must pass the channel's read (fuse_channel.h), which
	 * a spliced one would not: no SPLICE_READ. Replies with data
	 * (fuse_reply_data(), which only READ's spliced replies use) may be
	 * spliced: the channel changes none of them (its splice_send
	 * passes them on as they are). No SPLICE_MOVE: the pages are the backing
	 * file's, which the kernel cannot take. */
	conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	atomic_store(&fs->splice_reads, false);
	if (!fs->splice)
		fs->splice_why[0] = '\0';
	else if (!(conn->capable & FUSE_CAP_SPLICE_WRITE) || conn->proto_minor < 14)
		snprintf(fs->splice_why, sizeof(fs->splice_why),
			 "libfuse or the kernel cannot splice replies");
	else if (fs->splice_max_read)
		atomic_store(&fs->splice_reads, true);
	if (atomic_load(&fs->splice_reads))
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	else if (fs->splice)
		hy_log(LOG_INFO, "fs: reads are not spliced: %s", fs->splice_why);
}

const struct fuse_lowlevel_ops hy_fs_operations = {
	.init = hy_init,
	.lookup = hy_ops_lookup,
	.forget = hy_ops_forget,
	.forget_multi = hy_ops_forget_multi,
	.getattr = hy_ops_getattr,
	.setattr = hy_ops_setattr,
	.access = hy_ops_access,
	.readlink = hy_ops_readlink,
	.mknod = hy_ops_mknod,
	.mkdir = hy_ops_mkdir,
	.symlink = hy_ops_symlink,
	.link = hy_ops_link,
	.unlink = hy_ops_unlink,
	.rmdir = hy_ops_rmdir,
	.rename = hy_ops_rename,
	.open = hy_ops_open,
	.create = hy_ops_create,
	.read = hy_ops_read,
	.write = hy_ops_write,
	/* No flush: data is in the backing file once written, nothing is held
	 * back for close(2) to report, and without the operation the kernel
	 * stops sending FLUSH, one round trip less per close. (The cache
	 * issue's session write-back belongs in release, not flush.) */
	.release = hy_ops_release,
	.fsync = hy_ops_fsync,
	.fallocate = hy_ops_fallocate,
	.lseek = hy_ops_lseek,
	.copy_file_range = hy_ops_copy_file_range,
	.opendir = hy_ops_opendir,
	.readdir = hy_ops_readdir,
	.readdirplus = hy_ops_readdirplus,
	.releasedir = hy_ops_releasedir,
	.fsyncdir = hy_ops_fsyncdir,
	.statfs = hy_ops_statfs,
	.getxattr = hy_ops_getxattr,
	.listxattr = hy_ops_listxattr,
	.setxattr = hy_ops_setxattr,
	.removexattr = hy_ops_removexattr,
};

int hy_fs_init(struct hy_fs *fs, int root_fd, size_t fd_cap, const char *state_dir)
{
	char *copy, *parent;
	struct stat st;
	int rc;

	pthread_mutex_init(&fs->handles_lock, NULL);
	fs->handles.next = fs->handles.prev = &fs->handles;
	rc = pthread_key_create(&hy_ops_read_buffer_key, hy_ops_read_buffer_free);
	if (rc) {
		close(root_fd);
		return -rc;
	}
	rc = hy_inode_table_new(root_fd, fd_cap, &fs->inodes);
	if (rc)
		return rc;
	/* a quarter of the descriptors the folders may keep, and no more
	 * than a few thousand: each one's close is a file's last close */
	rc = hy_fs_kfiles_new(fs, fd_cap / 4 < 4096 ? fd_cap / 4 : 4096);
	if (rc) {
		hy_fs_destroy(fs);
		return rc;
	}
	rc = hy_device_file_new("backing", &fs->backing);
	if (rc == 0) {
		/* the stack's engine and indirector; BORG's BOPT and the cache
		 * join it later in the mount (fs/main.c) */
		struct hy_stack_config stack = {.backing = fs->backing};
		char why[256];

		rc = hy_stack_new(&stack, &fs->engine, why, sizeof(why));
		if (rc < 0)
			hy_log(LOG_ERR, "fs: %s", why);
	}
	if (rc) {
		hy_fs_destroy(fs);
		return rc;
	}
	fs->switch_creds = geteuid() == 0;
	copy = strdup(state_dir);
	if (!copy) {
		hy_fs_destroy(fs);
		return -ENOMEM;
	}
	snprintf(fs->state_name, sizeof(fs->state_name), "%s", basename(copy));
	strcpy(copy, state_dir);
	parent = dirname(copy);
	if (stat(parent, &st) == 0) {
		fs->state_parent_dev = st.st_dev;
		fs->state_parent_ino = st.st_ino;
	}
	fs->state_is_child = stat(state_dir, &st) == 0 && S_ISDIR(st.st_mode);
	free(copy);
	return 0;
}

void hy_fs_destroy(struct hy_fs *fs)
{
	/* handles the kernel never released: unmounted by a signal */
	while (fs->handles.next && fs->handles.next != &fs->handles) {
		struct hy_fs_handle *h = fs->handles.next;

		int rc = 0;

		if (h->is_dir)
			hy_ops_dir_free(fs, (struct hy_dir *)h);
		else
			rc = hy_ops_file_free(fs, (struct hy_file *)h);
		if (rc < 0)
			hy_log(LOG_WARNING, "fs: closing a backing file at unmount: %s",
			       strerror(-rc));
	}
	hy_fs_kfiles_free(fs);
	hy_stack_free(fs->engine);
	hy_device_free(fs->backing);
	hy_inode_table_free(fs->inodes);
	fs->engine = NULL;
	fs->backing = NULL;
	fs->inodes = NULL;
}
