/* ops.c - the FUSE low-level operations; see include/hybridfs/fs.h. */
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

#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "fs_internal.h"
#include "hybridfs/inode.h"
#include "hybridfs/log.h"
#include "hybridfs/identity.h"
#include "hybridfs/profiler.h"
#include "hybridfs/reca.h"

/* An open file: owned by fi->fh from open/create to release. */
struct hy_file {
	struct hy_fs_handle link;     /* first: a handle is found from its link */
	struct hy_engine_file engine; /* engine.backing_fd is fd */
	struct hy_inode *inode;	      /* held by the kernel while the file is open */
	int fd;
	bool profiled; /* prof is set up */
	struct hy_profile_handle prof;
};

/* An open directory: owned by fi->fh from opendir to releasedir. */
struct hy_dir {
	struct hy_fs_handle link; /* first */
	DIR *dp;
	off_t offset;	      /* where dp is, as telldir() values */
	struct dirent *entry; /* read but not yet returned, or NULL */
};

static void handle_track(struct hy_fs *fs, struct hy_fs_handle *h, bool is_dir)
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
static uint64_t file_id_of(struct hy_fs *fs, struct hy_inode *inode, int fd)
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
 * disk now, as on the plain directory (issue 8, full disks). @fd: a
 * descriptor of it, for its link count. */
static void forget_if_gone(struct hy_fs *fs, struct hy_inode *inode, int fd)
{
	uint64_t file_id;
	struct stat st;
	int rc;

	if (fd < 0 || atomic_load(&inode->opens) != 0 || (!fs->engine->cache && !fs->profiler))
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0)
		return;
	/* Only the cache holds blocks that would go home into a removed file:
	 * it must know the id however the entry was made. Without a cache the
	 * id serves the profiler's pruning alone, and the entry's own (a file
	 * made or opened through the mount) is enough: no database read per
	 * unlink. */
	file_id = fs->engine->cache ? file_id_of(fs, inode, fd) : atomic_load(&inode->file_id);
	if (!file_id)
		return;
	rc = fs->engine->cache ? hy_engine_forget_file(fs->engine, file_id) : 0;
	if (rc < 0)
		hy_log(LOG_WARNING, "file %llu, removed: the cache could not let go of it: %s",
		       (unsigned long long)file_id, strerror(-rc));
	else if (fs->profiler)
		hy_identity_file_gone(hy_profiler_identity(fs->profiler), file_id); /* its row can go */
}

/*
 * A change through the mount that moves a file's ctime without touching
 * its data (rename, link, unlink of another of its names, xattrs): the
 * cache's and the BOPT's stamps follow it, as they do for setattr, so the
 * file keeps its cached and relocated blocks instead of having them taken
 * for changed behind the mount (issue 16.18's class: the cache's own
 * changes are not outside changes). One file at a time: the gates are
 * striped, and two held at once could be the same lock or taken in the
 * other order by another request; end the gate before anything else takes
 * a gate (forget_if_gone).
 */
struct meta_gate {
	struct hy_engine_file file;
	bool gated, fresh;
};

static void meta_gate_begin(struct hy_fs *fs, struct hy_inode *inode, int fd,
			    struct meta_gate *gate)
{
	uint64_t file_id;

	gate->gated = gate->fresh = false;
	if (!inode || fd < 0 || !S_ISREG(inode->type))
		return;
	file_id = file_id_of(fs, inode, fd);
	if (!hy_engine_has_copies(fs->engine, file_id))
		return;
	hy_engine_file_init(fs->engine, &gate->file, fd);
	hy_engine_file_set_id(&gate->file, file_id);
	gate->fresh = hy_engine_meta_begin(fs->engine, &gate->file);
	gate->gated = true;
}

static void meta_gate_end(struct hy_fs *fs, struct meta_gate *gate, bool changed)
{
	if (gate->gated)
		hy_engine_meta_end(fs->engine, &gate->file, gate->fresh && changed);
	gate->gated = false;
}

/* Closes an open file handle; 0 or the negative errno of close(2) or of
 * sending the file's BOPT writes home. */
static int file_free(struct hy_fs *fs, struct hy_file *file)
{
	int rc, home = 0;

	/* when the last handle goes, the session's writes into the BOPT go
	 * home, while the descriptor is still open (FusionCache's session
	 * write-back) */
	if (atomic_fetch_sub(&file->inode->opens, 1) == 1) {
		home = hy_engine_close(fs->engine, &file->engine);
		forget_if_gone(fs, file->inode, file->fd);
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

static void dir_free(struct hy_fs *fs, struct hy_dir *dir)
{
	handle_untrack(fs, &dir->link);
	closedir(dir->dp);
	free(dir);
}

static void count_op(struct hy_fs *fs, enum hy_fs_op op)
{
	atomic_fetch_add_explicit(&fs->ops[op], 1, memory_order_relaxed);
}

/* A metadata operation: counted for the mount and for the process. */
/* Counts a metadata operation; returns how long the kernel may keep what
 * it answers: the mount's timeout, or for a metadata-heavy process the
 * policy table's metadata timeout when that is longer (ReCA's metadata
 * priority; reca.h). */
static double count_meta(struct hy_fs *fs, fuse_req_t req, enum hy_fs_op op,
			 enum hy_profile_meta kind, double mount_timeout)
{
	double t = 0;

	count_op(fs, op);
	if (fs->profiler)
		t = hy_reca_count_meta(fs->engine->reca, fuse_req_ctx(req)->pid, kind);
	return t > mount_timeout ? t : mount_timeout;
}

/* An entry's timeouts for a metadata-heavy process. */
static void entry_priority(struct fuse_entry_param *e, double timeout)
{
	if (timeout > e->entry_timeout)
		e->entry_timeout = timeout;
	if (timeout > e->attr_timeout)
		e->attr_timeout = timeout;
}

static struct hy_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct hy_inode *inode_of(struct hy_fs *fs, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return fs->inodes->root;
	return (struct hy_inode *)(uintptr_t)ino;
}

static fuse_ino_t ino_of(struct hy_fs *fs, struct hy_inode *inode)
{
	return inode == fs->inodes->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)inode;
}

static struct hy_file *file_of(struct fuse_file_info *fi)
{
	return (struct hy_file *)(uintptr_t)fi->fh;
}

static struct hy_dir *dir_of(struct fuse_file_info *fi)
{
	return (struct hy_dir *)(uintptr_t)fi->fh;
}

static bool is_state_entry(struct hy_fs *fs, struct hy_inode *parent, const char *name)
{
	return parent->ino == fs->state_parent_ino && parent->dev == fs->state_parent_dev &&
	       strcmp(name, fs->state_name) == 0;
}

/* ---- credentials for creating calls ---------------------------------- */

/* The caller's identity, taken on by this thread for one creating call,
 * so that new nodes are the caller's (and a setgid directory's group
 * rule, with the caller's groups, is applied by the backing filesystem).
 * Raw syscalls: glibc's setgroups() would change every thread. */
struct creds_saved {
	bool switched;
};

static int creds_enter(struct hy_fs *fs, fuse_req_t req, struct creds_saved *saved)
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

static void creds_leave(struct creds_saved *saved)
{
	if (!saved->switched)
		return;
	setfsuid(0);
	setfsgid(0);
	if (syscall(SYS_setgroups, (size_t)0, NULL) < 0)
		hy_log(LOG_ERR, "fs: cannot restore the daemon's groups: %s", strerror(errno));
}

/* ---- lookup ------------------------------------------------------------ */

/* The hidden state folder's ".." is a link of its parent that the mount
 * does not show, so the parent's link count must not count it either. */
static void hide_state_link(struct hy_fs *fs, struct stat *st)
{
	if (st->st_ino == fs->state_parent_ino && st->st_dev == fs->state_parent_dev &&
	    S_ISDIR(st->st_mode) && st->st_nlink > 2 && fs->state_is_child)
		st->st_nlink--;
}

static void entry_fill(struct hy_fs *fs, struct fuse_entry_param *e, struct hy_inode *inode,
		       const struct stat *st)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino_of(fs, inode);
	e->attr = *st;
	hide_state_link(fs, &e->attr);
	e->attr_timeout = fs->attr_timeout;
	e->entry_timeout = fs->entry_timeout;
}

/* Looks @name up in @parent (already pinned as @pref) and adds a lookup. */
static int do_lookup_at(struct hy_fs *fs, struct hy_inode *parent, int parent_fd, const char *name,
			struct fuse_entry_param *e)
{
	struct hy_inode *inode;
	struct stat st;
	int rc;

	if (is_state_entry(fs, parent, name))
		return -ENOENT;
	if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	rc = hy_inode_add_lookup(fs->inodes, parent, name, &st, -1, &inode);
	if (rc)
		return rc;
	entry_fill(fs, e, inode, &st);
	return 0;
}

static int do_lookup(struct hy_fs *fs, struct hy_inode *parent, const char *name,
		     struct fuse_entry_param *e)
{
	struct hy_inode_ref pref;
	int rc = hy_inode_pin(fs->inodes, parent, true, &pref);

	if (rc)
		return rc;
	rc = do_lookup_at(fs, parent, pref.dirfd, name, e);
	hy_inode_unpin(fs->inodes, &pref);
	return rc;
}

static void hy_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct hy_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	int rc = do_lookup(fs, inode_of(fs, parent), name, &e);
	double timeout = count_meta(fs, req, HY_OP_LOOKUP, HY_META_LOOKUP, fs->entry_timeout);

	if (rc == 0)
		entry_priority(&e, timeout);
	if (rc == -ENOENT && fs->negative_timeout > 0) {
		memset(&e, 0, sizeof(e));
		e.entry_timeout = fs->negative_timeout;
		fuse_reply_entry(req, &e);
	} else if (rc) {
		fuse_reply_err(req, -rc);
	} else {
		fuse_reply_entry(req, &e);
	}
}

static void hy_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct hy_fs *fs = fs_of(req);

	hy_inode_forget(fs->inodes, inode_of(fs, ino), nlookup);
	fuse_reply_none(req);
}

static void hy_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct hy_fs *fs = fs_of(req);

	for (size_t i = 0; i < count; i++)
		hy_inode_forget(fs->inodes, inode_of(fs, forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

/* ---- attributes -------------------------------------------------------- */

/* fstat of an inode reached by name checks that the name still leads to
 * it: the backing directory may have changed behind the mount. */
static int stat_ref(const struct hy_inode_ref *ref, const struct hy_inode *inode, struct stat *st)
{
	if (fstatat(ref->dirfd, ref->name, st, ref->self ? AT_EMPTY_PATH : AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (st->st_ino != inode->ino || st->st_dev != inode->dev)
		return -ESTALE;
	return 0;
}

static int do_getattr(struct hy_fs *fs, struct hy_inode *inode, struct fuse_file_info *fi,
		      struct stat *st)
{
	struct hy_inode_ref ref;
	int rc;

	if (fi && fi->fh)
		return fstat(file_of(fi)->fd, st) < 0 ? -errno : 0;
	rc = hy_inode_pin(fs->inodes, inode, false, &ref);
	if (rc)
		return rc;
	rc = stat_ref(&ref, inode, st);
	hy_inode_unpin(fs->inodes, &ref);
	return rc;
}

static void hy_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct hy_fs *fs = fs_of(req);
	struct stat st;
	int rc = do_getattr(fs, inode_of(fs, ino), fi, &st);
	double timeout = count_meta(fs, req, HY_OP_GETATTR, HY_META_GETATTR, fs->attr_timeout);

	if (rc) {
		fuse_reply_err(req, -rc);
	} else {
		hide_state_link(fs, &st);
		fuse_reply_attr(req, &st, timeout);
	}
}

/* ---- acting on a checked object ---------------------------------------- */

static bool out_of_descriptors(struct hy_fs *fs, int rc);

/* An inode as a change reaches it: an O_PATH descriptor whose identity
 * was checked against the entry, and its /proc/self/fd link. A name in
 * the backing directory can be swapped at home (renameat2 with
 * RENAME_EXCHANGE, by anyone who can write that directory) between any
 * check and a call that takes the name, and the daemon acts as root: a
 * chmod by name landed on root's file through a swapped-in symlink (issue
 * 16.11). The descriptor stays with the object, and the magic link
 * resolves to the object it was opened on, never to a name, a symlink
 * itself included. */
struct hy_object {
	int fd;
	bool owned; /* opened here (else the inode's own, pinned) */
	char path[32];
};

static int object_open(struct hy_fs *fs, const struct hy_inode_ref *ref,
		       const struct hy_inode *inode, struct hy_object *obj)
{
	struct stat st;
	int rc = 0;

	obj->owned = false;
	obj->fd = -1;
	if (ref->self) {
		obj->fd = ref->dirfd;
	} else {
		for (int attempt = 0; attempt < 2; attempt++) {
			obj->fd = openat(ref->dirfd, ref->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			rc = obj->fd < 0 ? -errno : 0;
			if (!out_of_descriptors(fs, rc))
				break;
		}
		if (rc)
			return rc;
		obj->owned = true;
		if (fstat(obj->fd, &st) < 0)
			rc = -errno;
		else if (st.st_ino != inode->ino || st.st_dev != inode->dev)
			rc = -ESTALE; /* the name leads elsewhere now */
		if (rc) {
			close(obj->fd);
			obj->fd = -1;
			obj->owned = false;
			return rc;
		}
	}
	snprintf(obj->path, sizeof(obj->path), "/proc/self/fd/%d", obj->fd);
	return 0;
}

static void object_close(struct hy_object *obj)
{
	if (obj->owned && obj->fd >= 0)
		close(obj->fd);
	obj->fd = -1;
	obj->owned = false;
}

/* @fd: the open handle's descriptor, or -1 (then @obj's link). */
static int set_times(const struct hy_object *obj, int fd, const struct stat *attr, int to_set)
{
	struct timespec tv[2];

	tv[0].tv_sec = tv[1].tv_sec = 0;
	tv[0].tv_nsec = tv[1].tv_nsec = UTIME_OMIT;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		tv[0].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		tv[0] = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		tv[1].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		tv[1] = attr->st_mtim;
	if (fd >= 0)
		return futimens(fd, tv) < 0 ? -errno : 0;
	/* the link lands on the object, a symlink itself included */
	return utimensat(AT_FDCWD, obj->path, tv, 0) < 0 ? -errno : 0;
}

static int set_size(struct hy_fs *fs, struct hy_inode *inode, const struct hy_object *obj,
		    struct fuse_file_info *fi, off_t size)
{
	struct hy_engine_file file;
	int fd, rc;

	if (fi && fi->fh)
		return hy_engine_truncate(fs->engine, &file_of(fi)->engine, size);
	/* the kernel truncates regular files only; opening anything else for
	 * writing (a FIFO) could block */
	if (inode->type != S_IFREG)
		return inode->type == S_IFDIR ? -EISDIR : -EINVAL;
	fd = open(obj->path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	hy_engine_file_init(fs->engine, &file, fd);
	/* with its id the truncation takes the cache's gate and the map's
	 * path: dirty blocks past the new end are dropped, not written home
	 * over it later */
	hy_engine_file_set_id(&file, file_id_of(fs, inode, fd));
	rc = hy_engine_truncate(fs->engine, &file, size);
	close(fd);
	return rc;
}

static int do_setattr(struct hy_fs *fs, struct hy_inode *inode, const struct stat *attr, int to_set,
		      struct fuse_file_info *fi, struct stat *out)
{
	const int meta_bits = FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID |
			      FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
			      FUSE_SET_ATTR_MTIME_NOW;
	uint64_t file_id = 0;
	struct hy_engine_file meta;
	struct hy_object obj = {.fd = -1, .owned = false};
	struct hy_inode_ref ref;
	int rc, fd = fi && fi->fh ? file_of(fi)->fd : -1, meta_fd;
	bool fresh = false, gated = false;

	rc = hy_inode_pin(fs->inodes, inode, false, &ref);
	if (rc)
		return rc;
	/* every change below goes through the open handle or through this
	 * one checked object, never through the name again */
	if (fd < 0) {
		rc = object_open(fs, &ref, inode, &obj);
		if (rc)
			goto out;
	}
	meta_fd = fd >= 0 ? fd : obj.fd;
	/* The size first: the engine's truncation takes the cache's gate of
	 * the file, which meta_begin holds until meta_end. */
	if (to_set & FUSE_SET_ATTR_SIZE) {
		rc = set_size(fs, inode, &obj, fi, attr->st_size);
		if (rc)
			goto out;
	}
	/* the change moves the ctime: BOPT copies current now stay current */
	if (to_set & meta_bits) {
		file_id = file_id_of(fs, inode, meta_fd);
		gated = hy_engine_has_copies(fs->engine, file_id);
		if (gated) {
			hy_engine_file_init(fs->engine, &meta, meta_fd);
			hy_engine_file_set_id(&meta, file_id);
			fresh = hy_engine_meta_begin(fs->engine, &meta);
		}
	}
	if (to_set & FUSE_SET_ATTR_MODE) {
		if (fd >= 0)
			rc = fchmod(fd, attr->st_mode);
		else
			rc = fchmodat(AT_FDCWD, obj.path, attr->st_mode, 0);
		if (rc < 0) {
			rc = -errno;
			goto out;
		}
	}
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1;
		gid_t gid = (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1;

		/* on the object itself: a symlink's own owner (lchown) */
		if (fd >= 0)
			rc = fchown(fd, uid, gid);
		else
			rc = fchownat(obj.fd, "", uid, gid, AT_EMPTY_PATH);
		if (rc < 0) {
			rc = -errno;
			goto out;
		}
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
		      FUSE_SET_ATTR_MTIME_NOW)) {
		rc = set_times(&obj, fd, attr, to_set);
		if (rc)
			goto out;
	}
	rc = fstat(meta_fd, out) < 0 ? -errno : 0;
	/* the next fsync makes the new mode, owner or times durable too */
	if (to_set & meta_bits)
		hy_engine_home_changed(fs->engine, file_id);
out:
	if (gated)
		hy_engine_meta_end(fs->engine, &meta, fresh && rc == 0);
	object_close(&obj);
	hy_inode_unpin(fs->inodes, &ref);
	return rc;
}

static void hy_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct hy_fs *fs = fs_of(req);
	struct stat st;
	int rc = do_setattr(fs, inode_of(fs, ino), attr, to_set, fi, &st);

	count_op(fs, HY_OP_SETATTR);
	if (rc) {
		fuse_reply_err(req, -rc);
	} else {
		hide_state_link(fs, &st);
		fuse_reply_attr(req, &st, fs->attr_timeout);
	}
}

static int do_access(struct hy_fs *fs, struct hy_inode *inode, int mask)
{
	struct hy_inode_ref ref;
	int rc = hy_inode_pin(fs->inodes, inode, false, &ref);

	if (rc)
		return rc;
	if (ref.self)
		rc = faccessat(AT_FDCWD, ref.path, mask, 0);
	else
		rc = faccessat(ref.dirfd, ref.name, mask, AT_SYMLINK_NOFOLLOW);
	rc = rc < 0 ? -errno : 0;
	hy_inode_unpin(fs->inodes, &ref);
	return rc;
}

static void hy_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct hy_fs *fs = fs_of(req);

	count_op(fs, HY_OP_OTHER);
	fuse_reply_err(req, -do_access(fs, inode_of(fs, ino), mask));
}

static int do_readlink(struct hy_fs *fs, struct hy_inode *inode, char *buf, size_t size)
{
	struct hy_inode_ref ref;
	ssize_t n;
	int rc = hy_inode_pin(fs->inodes, inode, false, &ref);

	if (rc)
		return rc;
	n = readlinkat(ref.dirfd, ref.name, buf, size - 1);
	rc = n < 0 ? -errno : 0;
	hy_inode_unpin(fs->inodes, &ref);
	if (rc)
		return rc;
	if ((size_t)n >= size - 1)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

static void hy_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct hy_fs *fs = fs_of(req);
	char buf[PATH_MAX + 1];
	int rc = do_readlink(fs, inode_of(fs, ino), buf, sizeof(buf));

	count_op(fs, HY_OP_OTHER);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, buf);
}

/* ---- creating and removing names -------------------------------------- */

enum make_kind { MAKE_NODE, MAKE_DIR, MAKE_SYMLINK };

static int do_make(struct hy_fs *fs, fuse_req_t req, struct hy_inode *parent, const char *name,
		   enum make_kind kind, mode_t mode, dev_t rdev, const char *target,
		   struct fuse_entry_param *e)
{
	struct creds_saved saved;
	struct hy_inode_ref pref;
	int rc, made;

	if (is_state_entry(fs, parent, name))
		return -EEXIST;
	rc = hy_inode_pin(fs->inodes, parent, true, &pref);
	if (rc)
		return rc;
	rc = creds_enter(fs, req, &saved);
	if (rc)
		goto out;
	if (kind == MAKE_DIR)
		made = mkdirat(pref.dirfd, name, mode);
	else if (kind == MAKE_SYMLINK)
		made = symlinkat(target, pref.dirfd, name);
	else
		made = mknodat(pref.dirfd, name, mode, rdev);
	rc = made < 0 ? -errno : 0;
	creds_leave(&saved);
	if (rc == 0)
		rc = do_lookup_at(fs, parent, pref.dirfd, name, e);
out:
	hy_inode_unpin(fs->inodes, &pref);
	return rc;
}

static void reply_entry_or_err(fuse_req_t req, int rc, const struct fuse_entry_param *e)
{
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, e);
}

static void hy_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct hy_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	int rc = do_make(fs, req, inode_of(fs, parent), name, MAKE_NODE, mode, rdev, NULL, &e);

	count_op(fs, HY_OP_NAMESPACE);
	reply_entry_or_err(req, rc, &e);
}

static void hy_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct hy_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	int rc = do_make(fs, req, inode_of(fs, parent), name, MAKE_DIR, mode, 0, NULL, &e);

	count_op(fs, HY_OP_NAMESPACE);
	reply_entry_or_err(req, rc, &e);
}

static void hy_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct hy_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	int rc = do_make(fs, req, inode_of(fs, parent), name, MAKE_SYMLINK, 0, 0, link, &e);

	count_op(fs, HY_OP_NAMESPACE);
	reply_entry_or_err(req, rc, &e);
}

static int do_link(struct hy_fs *fs, struct hy_inode *inode, struct hy_inode *new_parent,
		   const char *new_name, struct fuse_entry_param *e)
{
	struct hy_inode_ref ref, pref;
	struct hy_object obj;
	struct meta_gate gate;
	int rc;

	if (is_state_entry(fs, new_parent, new_name))
		return -EEXIST;
	rc = hy_inode_pin(fs->inodes, inode, false, &ref);
	if (rc)
		return rc;
	rc = hy_inode_pin(fs->inodes, new_parent, true, &pref);
	if (rc)
		goto out;
	rc = object_open(fs, &ref, inode, &obj);
	if (rc)
		goto unpin;
	/* linkat(fd, "", AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the
	 * /proc link with AT_SYMLINK_FOLLOW does the same without it, and
	 * links the checked object, not what its name leads to by now */
	meta_gate_begin(fs, inode, obj.fd, &gate);
	rc = linkat(AT_FDCWD, obj.path, pref.dirfd, new_name, AT_SYMLINK_FOLLOW);
	rc = rc < 0 ? -errno : 0;
	meta_gate_end(fs, &gate, rc == 0);
	object_close(&obj);
	if (rc == 0)
		rc = do_lookup_at(fs, new_parent, pref.dirfd, new_name, e);
unpin:
	hy_inode_unpin(fs->inodes, &pref);
out:
	hy_inode_unpin(fs->inodes, &ref);
	return rc;
}

static void hy_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char *new_name)
{
	struct hy_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	int rc = do_link(fs, inode_of(fs, ino), inode_of(fs, new_parent), new_name, &e);

	count_op(fs, HY_OP_NAMESPACE);
	reply_entry_or_err(req, rc, &e);
}

static int do_unlink(struct hy_fs *fs, struct hy_inode *parent, const char *name, int flags)
{
	struct hy_inode_ref pref;
	struct hy_inode *victim;
	struct meta_gate gate;
	struct stat st;
	int rc;

	if (is_state_entry(fs, parent, name))
		return -ENOENT;
	rc = hy_inode_pin(fs->inodes, parent, true, &pref);
	if (rc)
		return rc;
	victim = hy_inode_pin_child(fs->inodes, parent, name);
	/* a file that keeps another name: its ctime moves, its data stays */
	gate.gated = false;
	if (victim && !flags && fstat(victim->fd, &st) == 0 && st.st_nlink > 1)
		meta_gate_begin(fs, victim, victim->fd, &gate);
	rc = unlinkat(pref.dirfd, name, flags) < 0 ? -errno : 0;
	meta_gate_end(fs, &gate, rc == 0);
	if (rc == 0 && victim && !flags)
		forget_if_gone(fs, victim, victim->fd);
	hy_inode_unpin_child(fs->inodes, victim, rc == 0);
	hy_inode_unpin(fs->inodes, &pref);
	return rc;
}

static void hy_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct hy_fs *fs = fs_of(req);

	count_op(fs, HY_OP_NAMESPACE);
	fuse_reply_err(req, -do_unlink(fs, inode_of(fs, parent), name, 0));
}

static void hy_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct hy_fs *fs = fs_of(req);

	count_op(fs, HY_OP_NAMESPACE);
	fuse_reply_err(req, -do_unlink(fs, inode_of(fs, parent), name, AT_REMOVEDIR));
}

static int do_rename(struct hy_fs *fs, struct hy_inode *parent, const char *name,
		     struct hy_inode *new_parent, const char *new_name, unsigned flags)
{
	struct hy_inode_ref pref, npref;
	struct hy_inode *moved, *victim;
	struct meta_gate gate;
	int rc;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if (is_state_entry(fs, parent, name))
		return -ENOENT;
	if (is_state_entry(fs, new_parent, new_name))
		return -EEXIST;
	rc = hy_inode_pin(fs->inodes, parent, true, &pref);
	if (rc)
		return rc;
	rc = hy_inode_pin(fs->inodes, new_parent, true, &npref);
	if (rc) {
		hy_inode_unpin(fs->inodes, &pref);
		return rc;
	}
	moved = hy_inode_pin_child(fs->inodes, parent, name);
	victim = hy_inode_pin_child(fs->inodes, new_parent, new_name);
	if (victim == moved) {
		/* two names of one inode: rename(2) does nothing */
		hy_inode_unpin_child(fs->inodes, victim, false);
		victim = NULL;
	}
	/* the moved file's ctime moves (an exchanged one's too: left to its
	 * stamp, one gate at a time) */
	meta_gate_begin(fs, moved, moved ? moved->fd : -1, &gate);
	rc = syscall(SYS_renameat2, pref.dirfd, name, npref.dirfd, new_name, flags) < 0 ? -errno
											: 0;
	meta_gate_end(fs, &gate, rc == 0);
	if (rc == 0 && moved && moved->name)
		rc = hy_inode_moved(fs->inodes, moved, new_parent, new_name);
	if (rc == 0 && victim && (flags & RENAME_EXCHANGE))
		rc = hy_inode_moved(fs->inodes, victim, parent, name);
	if (rc == 0 && victim && !(flags & RENAME_EXCHANGE))
		forget_if_gone(fs, victim, victim->fd);
	/* the rows' paths follow, for BORG's flush (pin_child gave each its
	 * own descriptor, which now names the new place) */
	if (rc == 0 && fs->profiler) {
		if (moved && S_ISREG(moved->type))
			hy_identity_file_moved(hy_profiler_identity(fs->profiler), atomic_load(&moved->file_id),
					       moved->fd);
		if (victim && (flags & RENAME_EXCHANGE) && S_ISREG(victim->type))
			hy_identity_file_moved(hy_profiler_identity(fs->profiler), atomic_load(&victim->file_id),
					       victim->fd);
	}
	hy_inode_unpin_child(fs->inodes, moved, false);
	hy_inode_unpin_child(fs->inodes, victim, rc == 0 && !(flags & RENAME_EXCHANGE));
	hy_inode_unpin(fs->inodes, &npref);
	hy_inode_unpin(fs->inodes, &pref);
	return rc;
}

static void hy_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t new_parent,
		      const char *new_name, unsigned int flags)
{
	struct hy_fs *fs = fs_of(req);

	count_op(fs, HY_OP_NAMESPACE);
	fuse_reply_err(req, -do_rename(fs, inode_of(fs, parent), name, inode_of(fs, new_parent),
				       new_name, flags));
}

/* ---- files ------------------------------------------------------------- */

/* On EMFILE or ENFILE, gives back half of the cached directory
 * descriptors, so that the open the user asked for can go ahead; true when
 * the caller should try once more. */
static bool out_of_descriptors(struct hy_fs *fs, int rc)
{
	if (rc != -EMFILE && rc != -ENFILE)
		return false;
	return hy_inode_shed(fs->inodes, fs->inodes->fds_cached / 2 + 1) > 0;
}

/* What the backing file is opened with, and what FUSE is told. */
static int backing_flags(struct hy_fs *fs, struct fuse_file_info *fi)
{
	int flags = fi->flags & ~(O_NOFOLLOW | O_DIRECT);

	if (fi->flags & O_DIRECT)
		fi->direct_io = 1; /* FUSE bypasses the page cache for us */
	else
		fi->keep_cache = 1; /* changes are noticed by auto_inval_data */
	/* The kernel gives every write its offset, O_APPEND ones at the size
	 * it knows; pwrite(2) on an O_APPEND descriptor would ignore that
	 * offset, and page writeback of a shared mapping would land at the
	 * end of the file. */
	flags &= ~O_APPEND;
	/* With the write-back cache the kernel reads pages to fill partial
	 * writes, even through a write-only handle. */
	if (fs->writeback_cache && (flags & O_ACCMODE) == O_WRONLY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	return flags | O_CLOEXEC;
}

static int file_new(struct hy_fs *fs, fuse_req_t req, struct hy_inode *inode, int fd,
		    const struct stat *st, struct fuse_file_info *fi)
{
	struct hy_file *file = calloc(1, sizeof(*file));

	if (!file)
		return -ENOMEM;
	file->fd = fd;
	file->inode = inode;
	atomic_fetch_add(&inode->opens, 1);
	hy_engine_file_init(fs->engine, &file->engine, fd);
	if (fs->profiler) {
		char name[NAME_MAX + 1];
		uint64_t known = atomic_load(&inode->file_id);

		if (!known)
			hy_inode_get_name(fs->inodes, inode, name, sizeof(name));
		/* a file without an id is still served; its requests log id 0 */
		if (hy_profiler_open(fs->profiler, &file->prof, fd, st, known, known ? NULL : name,
				     fuse_req_ctx(req)->pid) < 0)
			hy_log(LOG_WARNING, "profiler: no file id for inode %llu",
			       (unsigned long long)inode->ino);
		file->profiled = true;
		if (!known && file->prof.file_id)
			atomic_store(&inode->file_id, file->prof.file_id);
		/* the indirection map knows files by this id */
		hy_engine_file_set_id(&file->engine, file->prof.file_id);
	}
	handle_track(fs, &file->link, false);
	fi->fh = (uint64_t)(uintptr_t)file;
	return 0;
}

/* file_id_of() for an open with O_TRUNC, before it truncates: through
 * the inode's own descriptor, or one opened by its name and checked. */
static uint64_t trunc_file_id(struct hy_fs *fs, struct hy_inode *inode,
			      const struct hy_inode_ref *ref)
{
	uint64_t id = atomic_load(&inode->file_id);
	int fd;

	if (id || !fs->profiler || inode->type != S_IFREG)
		return id;
	if (ref->self)
		return file_id_of(fs, inode, ref->dirfd);
	fd = openat(ref->dirfd, ref->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0; /* the open that follows fails the same way */
	id = file_id_of(fs, inode, fd);
	close(fd);
	return id;
}

static int do_open(struct hy_fs *fs, fuse_req_t req, struct hy_inode *inode,
		   struct fuse_file_info *fi)
{
	struct creds_saved saved = {.switched = false};
	struct hy_inode_ref ref;
	struct stat st;
	uint64_t trunc_id;
	bool gated;
	int fd, rc, flags = backing_flags(fs, fi);

	rc = hy_inode_pin(fs->inodes, inode, false, &ref);
	if (rc)
		return rc;
	/* With FUSE_CAP_ATOMIC_O_TRUNC the kernel sends no setattr for
	 * O_TRUNC, so clearing setuid/setgid on a truncate by a non-owner is
	 * left to the backing filesystem: open as the caller, who (unlike the
	 * daemon) has no CAP_FSETID. */
	if (flags & O_TRUNC)
		rc = creds_enter(fs, req, &saved);
	/* the cache must not write old blocks home across the truncation */
	trunc_id = flags & O_TRUNC ? trunc_file_id(fs, inode, &ref) : 0;
	gated = rc == 0 && hy_engine_truncate_open_begin(fs->engine, trunc_id);
	fd = -1;
	if (rc == 0) {
		for (int attempt = 0; attempt < 2; attempt++) {
			if (ref.self)
				fd = open(ref.path, flags);
			else
				fd = openat(ref.dirfd, ref.name, flags | O_NOFOLLOW);
			rc = fd < 0 ? -errno : 0;
			if (!out_of_descriptors(fs, rc))
				break;
		}
		creds_leave(&saved);
	}
	if (gated)
		hy_engine_truncate_open_end(fs->engine, trunc_id, fd);
	hy_inode_unpin(fs->inodes, &ref);
	if (rc)
		return rc;
	if (fstat(fd, &st) < 0 || st.st_ino != inode->ino || st.st_dev != inode->dev) {
		close(fd);
		return -ESTALE;
	}
	rc = file_new(fs, req, inode, fd, &st, fi);
	if (rc)
		close(fd);
	return rc;
}

static void hy_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct hy_fs *fs = fs_of(req);
	int rc = do_open(fs, req, inode_of(fs, ino), fi);

	count_op(fs, HY_OP_OPEN);
	if (rc)
		fuse_reply_err(req, -rc);
	else if (fuse_reply_open(req, fi) == -ENOENT)
		file_free(fs, file_of(fi)); /* the caller was interrupted */
}

static int do_create(struct hy_fs *fs, fuse_req_t req, struct hy_inode *parent, const char *name,
		     mode_t mode, struct fuse_file_info *fi, struct fuse_entry_param *e)
{
	struct creds_saved saved;
	struct hy_inode_ref pref;
	struct hy_inode *inode;
	struct stat st;
	int fd = -1, rc;

	if (is_state_entry(fs, parent, name))
		return -EEXIST;
	rc = hy_inode_pin(fs->inodes, parent, true, &pref);
	if (rc)
		return rc;
	rc = creds_enter(fs, req, &saved);
	if (rc)
		goto out;
	for (int attempt = 0; attempt < 2; attempt++) {
		fd = openat(pref.dirfd, name, backing_flags(fs, fi) | O_CREAT | O_NOFOLLOW, mode);
		rc = fd < 0 ? -errno : 0;
		if (!out_of_descriptors(fs, rc))
			break;
	}
	creds_leave(&saved);
	if (rc)
		goto out;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	rc = hy_inode_add_lookup(fs->inodes, parent, name, &st, -1, &inode);
	if (rc)
		goto out;
	entry_fill(fs, e, inode, &st);
	rc = file_new(fs, req, inode, fd, &st, fi);
	if (rc) {
		hy_inode_forget(fs->inodes, inode, 1);
		goto out;
	}
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	hy_inode_unpin(fs->inodes, &pref);
	return rc;
}

static void hy_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct hy_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	int rc;

	/* With the kernel's write-back cache, FUSE's atomic create races a
	 * lookup of the same new name: Linux 6.18 can end up with two inodes
	 * for the node, the name leading to the one made from the lookup's
	 * reply, whose size (0) the kernel then keeps (docs/reliability.md,
	 * "The kernel's write-back cache"). Refused, the kernel stops sending
	 * CREATE and makes files with MKNOD and OPEN, which showed no such
	 * inode in any run: one request more per new file. */
	if (fs->writeback_cache) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	rc = do_create(fs, req, inode_of(fs, parent), name, mode, fi, &e);
	count_op(fs, HY_OP_CREATE);
	if (rc)
		fuse_reply_err(req, -rc);
	else if (fuse_reply_create(req, &e, fi) == -ENOENT)
		file_free(fs, file_of(fi));
}

/* One buffer per worker thread, grown to the largest request seen: a read
 * costs no allocation once the thread has warmed up. libfuse ends idle
 * workers, so the buffer hangs on a thread key whose destructor frees it. */
struct read_buffer {
	char *data;
	size_t size;
};

/* created by hy_fs_init(), before any worker thread */
static pthread_key_t read_buffer_key;

static void read_buffer_free(void *p)
{
	struct read_buffer *rb = p;

	free(rb->data);
	free(rb);
}

static char *read_buffer_get(size_t size)
{
	struct read_buffer *rb;
	char *grown;

	rb = pthread_getspecific(read_buffer_key);
	if (!rb) {
		rb = calloc(1, sizeof(*rb));
		if (!rb)
			return NULL;
		if (pthread_setspecific(read_buffer_key, rb) != 0) {
			free(rb);
			return NULL;
		}
	}
	if (size > rb->size) {
		grown = realloc(rb->data, size);
		if (!grown)
			return NULL;
		rb->data = grown;
		rb->size = size;
	}
	return rb->data;
}

/* The process a read or write is for: the request's, else (a write from
 * the write-back cache, or no pid) the one that opened the handle. */
static pid_t request_pid(const struct hy_file *file, pid_t pid)
{
	return pid > 0 ? pid : file->prof.opener_pid;
}

/* Into the access log, with the class the engine's ReCA gave it. */
static void log_request(struct hy_fs *fs, struct hy_file *file, const struct hy_engine_request *er,
			enum hy_profile_mode mode, off_t off, size_t size, ssize_t done)
{
	struct hy_profile_ticket t;

	hy_profiler_ticket(&file->prof, er->pid, mode, (uint64_t)off, (uint32_t)size, &er->answer,
			   &t);
	hy_profiler_end(fs->profiler, &file->prof, file->fd, &t, done);
}

static void hy_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct hy_fs *fs = fs_of(req);
	struct hy_file *file = file_of(fi);
	char *buf = read_buffer_get(size);
	bool logged = fs->profiler && size > 0;
	struct hy_engine_request er = {.pid = request_pid(file, fuse_req_ctx(req)->pid)};
	ssize_t n;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* the engine classifies it before serving it: the policy of the
	 * process's category applies to it (ReCA), and the log has its class */
	n = hy_engine_read_as(fs->engine, &file->engine, logged ? &er : NULL, buf, size, off);
	if (logged)
		log_request(fs, file, &er, HY_PROFILE_READ, off, size, n);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	count_op(fs, HY_OP_READ);
	atomic_fetch_add_explicit(&fs->bytes_read, (uint64_t)n, memory_order_relaxed);
	fuse_reply_buf(req, buf, (size_t)n);
}

static void hy_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct hy_fs *fs = fs_of(req);
	struct hy_file *file = file_of(fi);
	bool logged = fs->profiler && size > 0;
	/* A write from the kernel's write-back cache comes from a kernel
	 * thread: it belongs to the process that opened the handle (pid 0). */
	struct hy_engine_request er = {
		.pid = request_pid(file, fi->writepage ? 0 : fuse_req_ctx(req)->pid)};
	ssize_t n;

	n = hy_engine_write_as(fs->engine, &file->engine, logged ? &er : NULL, buf, size, off);
	/* A write from the kernel's write-back cache (fi->writepage) that
	 * comes back short is not resent: the kernel takes its pages as
	 * written (fuse_writepage_end looks at no size). So the rest is
	 * written here, and what the backing filesystem cannot take (ENOSPC
	 * on a full disk) fails the request, reaching fsync and close as on
	 * the plain directory, instead of being lost in silence (issue 8). */
	while (fi->writepage && n > 0 && (size_t)n < size) {
		ssize_t more = hy_engine_write_hinted(fs->engine, &file->engine,
						      er.answer.hinted ? &er.answer.hint : NULL,
						      buf + n, size - (size_t)n, off + n);

		if (more <= 0) {
			n = more < 0 ? more : -EIO;
			break;
		}
		n += more;
	}
	if (logged)
		log_request(fs, file, &er, HY_PROFILE_WRITE, off, size, n);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	count_op(fs, HY_OP_WRITE);
	atomic_fetch_add_explicit(&fs->bytes_written, (uint64_t)n, memory_order_relaxed);
	fuse_reply_write(req, (size_t)n);
}

static void hy_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = file_free(fs_of(req), file_of(fi));

	if (rc < 0)
		hy_log(LOG_WARNING, "fs: closing a backing file: %s", strerror(-rc));
	fuse_reply_err(req, 0);
}

static void hy_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct hy_fs *fs = fs_of(req);

	count_op(fs, HY_OP_FSYNC);
	fuse_reply_err(req, -hy_engine_fsync(fs->engine, &file_of(fi)->engine, datasync != 0));
}

static void hy_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	struct hy_fs *fs = fs_of(req);

	count_op(fs, HY_OP_OTHER);
	fuse_reply_err(
		req, -hy_engine_fallocate(fs->engine, &file_of(fi)->engine, mode, offset, length));
}

static void hy_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	off_t res;
	int rc = 0;

	/* With the kernel's write-back cache, written pages may still be in
	 * the kernel only: the home file has a hole, or no byte, where they
	 * are (SEEK_DATA answered ENXIO on data just written), and the kernel
	 * sends no flush before LSEEK, nor can the daemon fetch its dirty
	 * pages. ENOSYS makes the kernel answer every later lseek itself, as
	 * generic_file_llseek does, from the size it keeps: the whole file is
	 * data and the one hole is at its end, which POSIX allows and which
	 * never hides data. Without that cache every write has reached the
	 * daemon, and the home file's holes are the truth. */
	if (fs_of(req)->writeback_cache) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	/* holes are looked for in the home file: cached writes go there first */
	if (whence == SEEK_DATA || whence == SEEK_HOLE)
		rc = hy_engine_prepare_seek(fs_of(req)->engine, &file_of(fi)->engine);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	res = lseek(file_of(fi)->fd, off, whence);
	if (res < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_lseek(req, res);
}

static void hy_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct hy_fs *fs = fs_of(req);
	ssize_t n = hy_engine_copy_range(fs->engine, &file_of(fi_in)->engine, off_in,
					 &file_of(fi_out)->engine, off_out, len, flags);

	count_op(fs, HY_OP_OTHER);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* ---- directories ------------------------------------------------------- */

static int do_opendir(struct hy_fs *fs, struct hy_inode *inode, struct fuse_file_info *fi)
{
	struct hy_inode_ref ref;
	struct hy_dir *dir;
	int fd, rc = hy_inode_pin(fs->inodes, inode, true, &ref);

	if (rc)
		return rc;
	for (int attempt = 0; attempt < 2; attempt++) {
		fd = openat(ref.dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = fd < 0 ? -errno : 0;
		if (!out_of_descriptors(fs, rc))
			break;
	}
	hy_inode_unpin(fs->inodes, &ref);
	if (rc)
		return rc;
	dir = calloc(1, sizeof(*dir));
	if (!dir) {
		close(fd);
		return -ENOMEM;
	}
	dir->dp = fdopendir(fd);
	if (!dir->dp) {
		rc = -errno;
		close(fd);
		free(dir);
		return rc;
	}
	handle_track(fs, &dir->link, true);
	fi->fh = (uint64_t)(uintptr_t)dir;
	return 0;
}

static void hy_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct hy_fs *fs = fs_of(req);
	int rc = do_opendir(fs, inode_of(fs, ino), fi);

	count_op(fs, HY_OP_OTHER);
	if (rc) {
		fuse_reply_err(req, -rc);
	} else if (fuse_reply_open(req, fi) == -ENOENT) {
		dir_free(fs, dir_of(fi));
	}
}

static bool is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Fills @buf with entries from @offset; with @plus, each entry is also
 * looked up (readdirplus), and a lookup whose entry does not fit is undone. */
static int do_readdir(struct hy_fs *fs, struct hy_inode *inode, fuse_req_t req, struct hy_dir *dir,
		      char *buf, size_t size, off_t offset, bool plus, double timeout,
		      size_t *filled)
{
	struct hy_inode_ref ref = {.holder = NULL};
	size_t pos = 0;
	int rc = 0;

	if (offset != dir->offset) {
		seekdir(dir->dp, offset);
		dir->entry = NULL;
		dir->offset = offset;
	}
	if (plus) {
		rc = hy_inode_pin(fs->inodes, inode, true, &ref);
		if (rc)
			return rc;
	}
	for (;;) {
		struct fuse_entry_param e;
		struct stat st;
		size_t len;
		off_t next;
		const char *name;

		if (!dir->entry) {
			errno = 0;
			dir->entry = readdir(dir->dp);
			if (!dir->entry) {
				if (errno && pos == 0)
					rc = -errno;
				break;
			}
		}
		name = dir->entry->d_name;
		next = dir->entry->d_off;
		if (is_state_entry(fs, inode, name)) {
			dir->entry = NULL;
			dir->offset = next;
			continue;
		}
		if (plus) {
			if (is_dot_or_dotdot(name)) {
				memset(&e, 0, sizeof(e));
				e.attr.st_ino = dir->entry->d_ino;
				e.attr.st_mode = (mode_t)dir->entry->d_type << 12;
			} else {
				rc = do_lookup_at(fs, inode, ref.dirfd, name, &e);
				if (rc == -ENOENT) { /* removed since readdir saw it */
					rc = 0;
					dir->entry = NULL;
					dir->offset = next;
					continue;
				}
				if (rc)
					break;
				entry_priority(&e, timeout);
			}
			len = fuse_add_direntry_plus(req, buf + pos, size - pos, name, &e, next);
			if (len > size - pos) {
				if (e.ino)
					hy_inode_forget(fs->inodes, inode_of(fs, e.ino), 1);
				break;
			}
		} else {
			memset(&st, 0, sizeof(st));
			st.st_ino = dir->entry->d_ino;
			st.st_mode = (mode_t)dir->entry->d_type << 12;
			len = fuse_add_direntry(req, buf + pos, size - pos, name, &st, next);
			if (len > size - pos)
				break;
		}
		pos += len;
		dir->entry = NULL;
		dir->offset = next;
	}
	if (plus)
		hy_inode_unpin(fs->inodes, &ref);
	*filled = pos;
	/* entries already in the buffer are returned; the error comes next time */
	return pos ? 0 : rc;
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
			   struct fuse_file_info *fi, bool plus)
{
	struct hy_fs *fs = fs_of(req);
	char *buf = malloc(size);
	size_t filled = 0;
	double timeout;
	int rc;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	timeout = count_meta(fs, req, HY_OP_READDIR, HY_META_READDIR, fs->entry_timeout);
	rc = do_readdir(fs, inode_of(fs, ino), req, dir_of(fi), buf, size, offset, plus, timeout,
			&filled);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, filled);
	free(buf);
}

static void hy_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
		       struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, offset, fi, false);
}

static void hy_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
			   struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, offset, fi, true);
}

static void hy_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	dir_free(fs_of(req), dir_of(fi));
	fuse_reply_err(req, 0);
}

static void hy_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	int fd = dirfd(dir_of(fi)->dp);
	int rc = datasync ? fdatasync(fd) : fsync(fd);

	fuse_reply_err(req, rc < 0 ? errno : 0);
}

static void hy_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct hy_fs *fs = fs_of(req);
	struct hy_inode_ref ref;
	struct statvfs sv;
	int rc = hy_inode_pin(fs->inodes, fs->inodes->root, true, &ref);

	count_op(fs, HY_OP_OTHER);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	rc = fstatvfs(ref.dirfd, &sv) < 0 ? errno : 0;
	hy_inode_unpin(fs->inodes, &ref);
	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_statfs(req, &sv);
}

/* ---- extended attributes ----------------------------------------------- */

/* The xattr calls have no *at form: they go through the /proc/self/fd
 * link of a checked object (see struct hy_object), with the plain
 * variants, which land on the inode it was opened on, a symlink included;
 * a path through the parent and the name would reach whatever the name
 * leads to by then. */
static int xattr_ref(struct hy_fs *fs, struct hy_inode *inode, struct hy_inode_ref *ref,
		     struct hy_object *obj)
{
	int rc = hy_inode_pin(fs->inodes, inode, false, ref);

	if (rc)
		return rc;
	rc = object_open(fs, ref, inode, obj);
	if (rc)
		hy_inode_unpin(fs->inodes, ref);
	return rc;
}

static void xattr_unref(struct hy_fs *fs, struct hy_inode_ref *ref, struct hy_object *obj)
{
	object_close(obj);
	hy_inode_unpin(fs->inodes, ref);
}

static void hy_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct hy_fs *fs = fs_of(req);
	struct hy_inode_ref ref;
	struct hy_object obj;
	char *buf = NULL;
	ssize_t n;
	int rc = xattr_ref(fs, inode_of(fs, ino), &ref, &obj);

	count_op(fs, HY_OP_XATTR);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (size) {
		buf = malloc(size);
		if (!buf) {
			xattr_unref(fs, &ref, &obj);
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	n = getxattr(obj.path, name, buf, size);
	rc = n < 0 ? errno : 0;
	xattr_unref(fs, &ref, &obj);
	if (rc)
		fuse_reply_err(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void hy_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct hy_fs *fs = fs_of(req);
	struct hy_inode_ref ref;
	struct hy_object obj;
	char *buf = NULL;
	ssize_t n;
	int rc = xattr_ref(fs, inode_of(fs, ino), &ref, &obj);

	count_op(fs, HY_OP_XATTR);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (size) {
		buf = malloc(size);
		if (!buf) {
			xattr_unref(fs, &ref, &obj);
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	n = listxattr(obj.path, buf, size);
	rc = n < 0 ? errno : 0;
	xattr_unref(fs, &ref, &obj);
	if (rc)
		fuse_reply_err(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void hy_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct hy_fs *fs = fs_of(req);
	struct hy_inode_ref ref;
	struct hy_object obj;
	struct meta_gate gate;
	int rc = xattr_ref(fs, inode_of(fs, ino), &ref, &obj);

	count_op(fs, HY_OP_XATTR);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	meta_gate_begin(fs, inode_of(fs, ino), obj.fd, &gate);
	rc = setxattr(obj.path, name, value, size, flags) < 0 ? errno : 0;
	meta_gate_end(fs, &gate, rc == 0);
	if (rc == 0) /* the next fsync makes it durable */
		hy_engine_home_changed(fs->engine, file_id_of(fs, inode_of(fs, ino), obj.fd));
	xattr_unref(fs, &ref, &obj);
	fuse_reply_err(req, rc);
}

static void hy_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct hy_fs *fs = fs_of(req);
	struct hy_inode_ref ref;
	struct hy_object obj;
	struct meta_gate gate;
	int rc = xattr_ref(fs, inode_of(fs, ino), &ref, &obj);

	count_op(fs, HY_OP_XATTR);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	meta_gate_begin(fs, inode_of(fs, ino), obj.fd, &gate);
	rc = removexattr(obj.path, name) < 0 ? errno : 0;
	meta_gate_end(fs, &gate, rc == 0);
	if (rc == 0)
		hy_engine_home_changed(fs->engine, file_id_of(fs, inode_of(fs, ino), obj.fd));
	xattr_unref(fs, &ref, &obj);
	fuse_reply_err(req, rc);
}

/* ---- session ----------------------------------------------------------- */

static void hy_init(void *userdata, struct fuse_conn_info *conn)
{
	struct hy_fs *fs = userdata;

	/* One request for O_TRUNC instead of open plus setattr. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (fs->writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		fs->writeback_cache = false;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
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
	/* Locks stay in the kernel, local to this mount (see fs.h). */
	conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS | FUSE_CAP_HANDLE_KILLPRIV);
}

const struct fuse_lowlevel_ops hy_fs_operations = {
	.init = hy_init,
	.lookup = hy_lookup,
	.forget = hy_forget,
	.forget_multi = hy_forget_multi,
	.getattr = hy_getattr,
	.setattr = hy_setattr,
	.access = hy_access,
	.readlink = hy_readlink,
	.mknod = hy_mknod,
	.mkdir = hy_mkdir,
	.symlink = hy_symlink,
	.link = hy_link,
	.unlink = hy_unlink,
	.rmdir = hy_rmdir,
	.rename = hy_rename,
	.open = hy_open,
	.create = hy_create,
	.read = hy_read,
	.write = hy_write,
	/* No flush: data is in the backing file once written, nothing is held
	 * back for close(2) to report, and without the operation the kernel
	 * stops sending FLUSH, one round trip less per close. (The cache
	 * issue's session write-back belongs in release, not flush.) */
	.release = hy_release,
	.fsync = hy_fsync,
	.fallocate = hy_fallocate,
	.lseek = hy_lseek,
	.copy_file_range = hy_copy_file_range,
	.opendir = hy_opendir,
	.readdir = hy_readdir,
	.readdirplus = hy_readdirplus,
	.releasedir = hy_releasedir,
	.fsyncdir = hy_fsyncdir,
	.statfs = hy_statfs,
	.getxattr = hy_getxattr,
	.listxattr = hy_listxattr,
	.setxattr = hy_setxattr,
	.removexattr = hy_removexattr,
};

int hy_fs_init(struct hy_fs *fs, int root_fd, size_t fd_cap, const char *state_dir)
{
	char *copy, *parent;
	struct stat st;
	int rc;

	pthread_mutex_init(&fs->handles_lock, NULL);
	fs->handles.next = fs->handles.prev = &fs->handles;
	rc = pthread_key_create(&read_buffer_key, read_buffer_free);
	if (rc) {
		close(root_fd);
		return -rc;
	}
	rc = hy_inode_table_new(root_fd, fd_cap, &fs->inodes);
	if (rc)
		return rc;
	rc = hy_device_file_new("backing", &fs->backing);
	if (rc == 0)
		rc = hy_engine_new(fs->backing, &fs->engine);
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
			dir_free(fs, (struct hy_dir *)h);
		else
			rc = file_free(fs, (struct hy_file *)h);
		if (rc < 0)
			hy_log(LOG_WARNING, "fs: closing a backing file at unmount: %s",
			       strerror(-rc));
	}
	hy_engine_free(fs->engine);
	hy_device_free(fs->backing);
	hy_inode_table_free(fs->inodes);
	fs->engine = NULL;
	fs->backing = NULL;
	fs->inodes = NULL;
}
