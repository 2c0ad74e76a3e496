/* ops_names.c - FUSE operations on names and attributes: lookup and forget, getattr and setattr,
 * access and readlink, and creating and removing names (mknod, mkdir, symlink, link, unlink, rmdir,
 * rename); see include/hybridfs/fs.h and fs/ops_internal.h. */
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
#include "hybridfs/fuse_channel.h"
#include "fs_internal.h"
#include "hybridfs/inode.h"
#include "hybridfs/log.h"
#include "hybridfs/identity.h"
#include "hybridfs/profiler.h"
#include "hybridfs/reca.h"

#include "ops_internal.h"

/* ---- lookup ------------------------------------------------------------ */

/* The hidden state folder's ".." is a link of its parent that the mount
 * does not show, so the parent's link count must not count it either. */
static void hide_state_link(struct hy_fs *fs, struct stat *st)
{
	if (st->st_ino == fs->state_parent_ino && st->st_dev == fs->state_parent_dev &&
	    S_ISDIR(st->st_mode) && st->st_nlink > 2 && fs->state_is_child)
		st->st_nlink--;
}

void hy_ops_entry_fill(struct hy_fs *fs, struct fuse_entry_param *e, struct hy_inode *inode,
		       const struct stat *st)
{
	memset(e, 0, sizeof(*e));
	e->ino = hy_ops_ino_of(fs, inode);
	e->attr = *st;
	hide_state_link(fs, &e->attr);
	e->attr_timeout = fs->attr_timeout;
	e->entry_timeout = fs->entry_timeout;
}

/* Looks @name up in @parent (already pinned as @pref) and adds a lookup. */
int hy_ops_do_lookup_at(struct hy_fs *fs, struct hy_inode *parent, int parent_fd, const char *name,
			struct fuse_entry_param *e)
{
	struct hy_inode *inode;
	struct stat st;
	int rc;

	if (hy_ops_is_state_entry(fs, parent, name))
		return -ENOENT;
	if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	rc = hy_inode_add_lookup(fs->inodes, parent, name, &st, -1, &inode);
	if (rc)
		return rc;
	hy_ops_entry_fill(fs, e, inode, &st);
	return 0;
}

static int do_lookup(struct hy_fs *fs, struct hy_inode *parent, const char *name,
		     struct fuse_entry_param *e)
{
	struct hy_inode_ref pref;
	int rc = hy_inode_pin(fs->inodes, parent, true, &pref);

	if (rc)
		return rc;
	rc = hy_ops_do_lookup_at(fs, parent, pref.dirfd, name, e);
	hy_inode_unpin(fs->inodes, &pref);
	return rc;
}

void hy_ops_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct fuse_entry_param e;
	int rc = do_lookup(fs, hy_ops_inode_of(fs, parent), name, &e);
	double timeout =
		hy_ops_count_meta(fs, req, HY_OP_LOOKUP, HY_META_LOOKUP, fs->entry_timeout);

	if (rc == 0)
		hy_ops_entry_priority(&e, timeout);
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

void hy_ops_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct hy_fs *fs = hy_ops_fs_of(req);

	hy_fs_kfiles_forget(fs, hy_ops_inode_of(fs, ino), nlookup);
	fuse_reply_none(req);
}

void hy_ops_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct hy_fs *fs = hy_ops_fs_of(req);

	for (size_t i = 0; i < count; i++)
		hy_fs_kfiles_forget(fs, hy_ops_inode_of(fs, forgets[i].ino), forgets[i].nlookup);
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
		return fstat(hy_ops_file_of(fi)->fd, st) < 0 ? -errno : 0;
	rc = hy_inode_pin(fs->inodes, inode, false, &ref);
	if (rc)
		return rc;
	rc = stat_ref(&ref, inode, st);
	hy_inode_unpin(fs->inodes, &ref);
	return rc;
}

void hy_ops_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct stat st;
	int rc = do_getattr(fs, hy_ops_inode_of(fs, ino), fi, &st);
	double timeout =
		hy_ops_count_meta(fs, req, HY_OP_GETATTR, HY_META_GETATTR, fs->attr_timeout);

	if (rc) {
		fuse_reply_err(req, -rc);
	} else {
		hide_state_link(fs, &st);
		fuse_reply_attr(req, &st, timeout);
	}
}

/* ---- acting on a checked object ---------------------------------------- */

int hy_ops_object_open(struct hy_fs *fs, const struct hy_inode_ref *ref,
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
			if (!hy_ops_out_of_descriptors(fs, rc))
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

void hy_ops_object_close(struct hy_object *obj)
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
		return hy_engine_truncate(fs->engine, &hy_ops_file_of(fi)->engine, size);
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
	hy_engine_file_set_id(&file, hy_ops_file_id_of(fs, inode, fd));
	rc = hy_engine_truncate(fs->engine, &file, size);
	close(fd);
	return rc;
}

static int do_setattr(struct hy_fs *fs, fuse_req_t req, struct hy_inode *inode,
		      const struct stat *attr, int to_set, struct fuse_file_info *fi,
		      struct stat *out)
{
	const int meta_bits = FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID |
			      FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
			      FUSE_SET_ATTR_MTIME_NOW;
	uint64_t file_id = 0;
	struct hy_engine_file meta;
	struct hy_object obj = {.fd = -1, .owned = false};
	struct hy_inode_ref ref;
	int rc, fd = fi && fi->fh ? hy_ops_file_of(fi)->fd : -1, meta_fd;
	bool fresh = false, gated = false;
	/* With FUSE_HANDLE_KILLPRIV_V2 the kernel turns what the VFS asks to
	 * take away, with nothing else to set, into a SETATTR with nothing to
	 * set: for a chown(f, -1, -1); before a write or a fallocate by a
	 * caller without CAP_FSETID, when the kernel's copy of the mode has
	 * setuid (file_remove_privs); after it removed security.capability
	 * for any writer, root too. Which one it is does not show, so the
	 * bits go for the file's owner only (all three cases mean that for
	 * the owner; its own chown(f, -1, -1) clears them on Linux): another
	 * user's write clears them with its own kill flag, fallocate and
	 * copy_file_range by its uid (fs/ops_files.c), while root's write to
	 * a file with a capability keeps them, and so, unlike the plain
	 * directory, does root's chown(f, -1, -1); another user's is not
	 * refused, and changes nothing (docs/architecture.md). */
	bool empty = !(to_set & (meta_bits | FUSE_SET_ATTR_SIZE)) && inode->type == S_IFREG &&
		     hy_fuse_channel_killpriv_v2(fs->channel) && fuse_req_ctx(req)->uid != 0;

	rc = hy_inode_pin(fs->inodes, inode, false, &ref);
	if (rc)
		return rc;
	/* every change below goes through the open handle or through this
	 * one checked object, never through the name again */
	if (fd < 0) {
		rc = hy_ops_object_open(fs, &ref, inode, &obj);
		if (rc)
			goto out;
	}
	meta_fd = fd >= 0 ? fd : obj.fd;
	/* The size first: the engine's truncation takes the cache's gate of
	 * the file, which meta_begin holds until meta_end. */
	if (to_set & FUSE_SET_ATTR_SIZE) {
		rc = set_size(fs, inode, &obj, fi, attr->st_size);
		/* what a truncation takes away (fuse_channel.h) */
		if (rc == 0)
			rc = hy_ops_kill_privs(fs, req, inode, meta_fd, fd >= 0 ? NULL : obj.path,
					       NULL, hy_ops_kill_of_request(), false);
		if (rc > 0) /* the reply's attributes are taken after it */
			rc = 0;
		if (rc)
			goto out;
	}
	/* the change moves the ctime: BOPT copies current now stay current */
	if (to_set & meta_bits) {
		file_id = hy_ops_file_id_of(fs, inode, meta_fd);
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
	/* (with no gate held: it takes the file's own) */
	if (empty) {
		struct stat now;

		rc = fstat(meta_fd, &now) < 0 ? -errno : 0;
		if (rc == 0 && now.st_uid == fuse_req_ctx(req)->uid)
			rc = hy_ops_kill_privs(fs, req, inode, meta_fd, fd >= 0 ? NULL : obj.path,
					       &now, HY_KILL_SUIDGID, false);
		if (rc < 0)
			goto out;
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
		      FUSE_SET_ATTR_MTIME_NOW)) {
		rc = set_times(&obj, fd, attr, to_set);
		if (rc)
			goto out;
	}
	/* a new mode may have a setuid or setgid bit */
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		hy_ops_privs_changed(inode);
	rc = fstat(meta_fd, out) < 0 ? -errno : 0;
	/* the next fsync makes the new mode, owner or times durable too */
	if (to_set & meta_bits)
		hy_engine_home_changed(fs->engine, file_id);
out:
	if (gated)
		hy_engine_meta_end(fs->engine, &meta, fresh && rc == 0);
	hy_ops_object_close(&obj);
	hy_inode_unpin(fs->inodes, &ref);
	return rc;
}

void hy_ops_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		    struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct stat st;
	int rc = do_setattr(fs, req, hy_ops_inode_of(fs, ino), attr, to_set, fi, &st);

	hy_ops_count_op(fs, HY_OP_SETATTR);
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

void hy_ops_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct hy_fs *fs = hy_ops_fs_of(req);

	hy_ops_count_op(fs, HY_OP_OTHER);
	fuse_reply_err(req, -do_access(fs, hy_ops_inode_of(fs, ino), mask));
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

void hy_ops_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	char buf[PATH_MAX + 1];
	int rc = do_readlink(fs, hy_ops_inode_of(fs, ino), buf, sizeof(buf));

	hy_ops_count_op(fs, HY_OP_OTHER);
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

	if (hy_ops_is_state_entry(fs, parent, name))
		return -EEXIST;
	rc = hy_inode_pin(fs->inodes, parent, true, &pref);
	if (rc)
		return rc;
	rc = hy_ops_creds_enter(fs, req, &saved);
	if (rc)
		goto out;
	if (kind == MAKE_DIR)
		made = mkdirat(pref.dirfd, name, mode);
	else if (kind == MAKE_SYMLINK)
		made = symlinkat(target, pref.dirfd, name);
	else
		made = mknodat(pref.dirfd, name, mode, rdev);
	rc = made < 0 ? -errno : 0;
	hy_ops_creds_leave(&saved);
	if (rc == 0)
		rc = hy_ops_do_lookup_at(fs, parent, pref.dirfd, name, e);
out:
	hy_inode_unpin(fs->inodes, &pref);
	return rc;
}

/* The reply of a call that made a name in @parent; then the kernel drops
 * @parent's attributes and listing (fs/kcache.c), after the reply, since
 * dropping a listing takes the locks of its pages. */
static void reply_made(struct hy_fs *fs, fuse_req_t req, int rc, const struct fuse_entry_param *e,
		       fuse_ino_t parent)
{
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fuse_reply_entry(req, e);
	hy_fs_kcache_inval_dir(fs, parent);
}

void hy_ops_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct fuse_entry_param e;
	int rc = do_make(fs, req, hy_ops_inode_of(fs, parent), name, MAKE_NODE, mode, rdev, NULL,
			 &e);

	hy_ops_count_op(fs, HY_OP_NAMESPACE);
	reply_made(fs, req, rc, &e, parent);
}

void hy_ops_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct fuse_entry_param e;
	int rc = do_make(fs, req, hy_ops_inode_of(fs, parent), name, MAKE_DIR, mode, 0, NULL, &e);

	hy_ops_count_op(fs, HY_OP_NAMESPACE);
	reply_made(fs, req, rc, &e, parent);
}

void hy_ops_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct fuse_entry_param e;
	int rc = do_make(fs, req, hy_ops_inode_of(fs, parent), name, MAKE_SYMLINK, 0, 0, link, &e);

	hy_ops_count_op(fs, HY_OP_NAMESPACE);
	reply_made(fs, req, rc, &e, parent);
}

static int do_link(struct hy_fs *fs, struct hy_inode *inode, struct hy_inode *new_parent,
		   const char *new_name, struct fuse_entry_param *e)
{
	struct hy_inode_ref ref, pref;
	struct hy_object obj;
	struct meta_gate gate;
	int rc;

	if (hy_ops_is_state_entry(fs, new_parent, new_name))
		return -EEXIST;
	rc = hy_inode_pin(fs->inodes, inode, false, &ref);
	if (rc)
		return rc;
	rc = hy_inode_pin(fs->inodes, new_parent, true, &pref);
	if (rc)
		goto out;
	rc = hy_ops_object_open(fs, &ref, inode, &obj);
	if (rc)
		goto unpin;
	/* linkat(fd, "", AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the
	 * /proc link with AT_SYMLINK_FOLLOW does the same without it, and
	 * links the checked object, not what its name leads to by now */
	hy_ops_meta_gate_begin(fs, inode, obj.fd, &gate);
	rc = linkat(AT_FDCWD, obj.path, pref.dirfd, new_name, AT_SYMLINK_FOLLOW);
	rc = rc < 0 ? -errno : 0;
	hy_ops_meta_gate_end(fs, &gate, rc == 0);
	hy_ops_object_close(&obj);
	if (rc == 0)
		rc = hy_ops_do_lookup_at(fs, new_parent, pref.dirfd, new_name, e);
unpin:
	hy_inode_unpin(fs->inodes, &pref);
out:
	hy_inode_unpin(fs->inodes, &ref);
	return rc;
}

void hy_ops_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char *new_name)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct fuse_entry_param e;
	int rc = do_link(fs, hy_ops_inode_of(fs, ino), hy_ops_inode_of(fs, new_parent), new_name,
			 &e);

	hy_ops_count_op(fs, HY_OP_NAMESPACE);
	reply_made(fs, req, rc, &e, new_parent);
}

/* @victim_ino: the node the name led to, when the table knew it (else 0) */
static int do_unlink(struct hy_fs *fs, struct hy_inode *parent, const char *name, int flags,
		     fuse_ino_t *victim_ino)
{
	struct hy_inode_ref pref;
	struct hy_inode *victim;
	struct meta_gate gate;
	struct stat st;
	int rc;

	if (hy_ops_is_state_entry(fs, parent, name))
		return -ENOENT;
	rc = hy_inode_pin(fs->inodes, parent, true, &pref);
	if (rc)
		return rc;
	victim = hy_inode_pin_child(fs->inodes, parent, name);
	*victim_ino = victim ? hy_ops_ino_of(fs, victim) : 0;
	/* a file that keeps another name, or a handle: its ctime moves, its
	 * data stays. An open file's handles still read it, from its BOPT
	 * copies too (the stamp follows the unlink, so they are not taken
	 * for stale); they are freed at its last close (hy_ops_file_free ->
	 * hy_ops_forget_if_gone), after its dirty blocks went home, since
	 * until then a handle may write and read them. */
	gate.gated = false;
	if (victim && !flags && fstat(victim->fd, &st) == 0 &&
	    (st.st_nlink > 1 || atomic_load(&victim->opens) > 0))
		hy_ops_meta_gate_begin(fs, victim, victim->fd, &gate);
	rc = unlinkat(pref.dirfd, name, flags) < 0 ? -errno : 0;
	hy_ops_meta_gate_end(fs, &gate, rc == 0);
	if (rc == 0 && victim && !flags)
		hy_ops_forget_if_gone(fs, victim, victim->fd);
	hy_inode_unpin_child(fs->inodes, victim, rc == 0);
	hy_inode_unpin(fs->inodes, &pref);
	return rc;
}

/* After the reply of a call that removed or replaced names: the kernel
 * drops the folders' attributes and listings, and the attributes of the
 * node that lost a name (its link count; it may have other names, or be
 * open). The victim's entry may be gone by now: its node id is only a
 * number here (an id the kernel no longer has is refused, harmlessly). */
static void names_gone(struct hy_fs *fs, fuse_ino_t parent, fuse_ino_t new_parent,
		       fuse_ino_t victim)
{
	hy_fs_kcache_inval_dir(fs, parent);
	if (new_parent && new_parent != parent)
		hy_fs_kcache_inval_dir(fs, new_parent);
	if (victim)
		hy_fs_kcache_inval_attr(fs, victim);
}

static void unlink_common(fuse_req_t req, fuse_ino_t parent, const char *name, int flags)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	fuse_ino_t victim;
	int rc = do_unlink(fs, hy_ops_inode_of(fs, parent), name, flags, &victim);

	hy_ops_count_op(fs, HY_OP_NAMESPACE);
	fuse_reply_err(req, -rc);
	if (rc == 0)
		names_gone(fs, parent, 0, victim);
}

void hy_ops_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	unlink_common(req, parent, name, 0);
}

void hy_ops_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	unlink_common(req, parent, name, AT_REMOVEDIR);
}

/* @name in the folder @dir (pinned as @dirfd), relative to the backing
 * directory, for a folder's rename: NULL when /proc cannot tell. */
static char *path_in(struct hy_fs *fs, struct hy_identity *idt, struct hy_inode *dir, int dirfd,
		     const char *name)
{
	char *dp, *out;

	if (dir == fs->inodes->root)
		return strdup(name);
	dp = hy_identity_path_of(idt, dirfd);
	if (!dp || asprintf(&out, "%s/%s", dp, name) < 0)
		out = NULL;
	free(dp);
	return out;
}

static bool is_dir_at(struct hy_inode *inode, int dirfd, const char *name)
{
	struct stat st;

	if (inode)
		return S_ISDIR(inode->type);
	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* After a rename of folders: the paths of the files below them follow
 * (identity.h); an exchange of two goes through a name no path has. */
static void dirs_moved(struct hy_fs *fs, struct hy_inode *parent, struct hy_inode_ref *pref,
		       const char *name, struct hy_inode *moved, struct hy_inode *new_parent,
		       struct hy_inode_ref *npref, const char *new_name, struct hy_inode *victim,
		       unsigned flags)
{
	struct hy_identity *idt = hy_profiler_identity(fs->profiler);
	bool exchange = flags & RENAME_EXCHANGE;
	/* after the rename, the moved one is at the new name */
	bool a_dir = is_dir_at(moved, npref->dirfd, new_name);
	bool b_dir = exchange && is_dir_at(victim, pref->dirfd, name);
	char *a, *b;

	if (!a_dir && !b_dir)
		return;
	a = path_in(fs, idt, parent, pref->dirfd, name);
	b = path_in(fs, idt, new_parent, npref->dirfd, new_name);
	if (a && b) {
		if (a_dir && b_dir) {
			hy_identity_dir_moved(idt, a, "\001exchange");
			hy_identity_dir_moved(idt, b, a);
			hy_identity_dir_moved(idt, "\001exchange", b);
		} else if (a_dir) {
			hy_identity_dir_moved(idt, a, b);
		} else {
			hy_identity_dir_moved(idt, b, a);
		}
	}
	free(a);
	free(b);
}

/* @victim_ino: the node @new_name led to before, when the table knew it */
static int do_rename(struct hy_fs *fs, struct hy_inode *parent, const char *name,
		     struct hy_inode *new_parent, const char *new_name, unsigned flags,
		     fuse_ino_t *victim_ino)
{
	struct hy_inode_ref pref, npref;
	struct hy_inode *moved, *victim;
	struct meta_gate gate, vgate;
	bool victim_fresh, victim_map = false, victim_cache = false;
	struct stat vst;
	int rc;

	*victim_ino = 0;
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if (hy_ops_is_state_entry(fs, parent, name))
		return -ENOENT;
	if (hy_ops_is_state_entry(fs, new_parent, new_name))
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
	*victim_ino = victim ? hy_ops_ino_of(fs, victim) : 0;
	/* A victim that keeps a handle (with open=kernel, any file read
	 * since the kernel last forgot it) or another name loses a link, so
	 * its ctime moves too, and its stamps must follow, as at an unlink,
	 * or its copies are taken for changed behind the mount. One gate at
	 * a time: whether they are current is asked before the moved file's
	 * gate, and the stamps move after it. */
	victim_fresh = false;
	if (victim && !(flags & RENAME_EXCHANGE) && fstat(victim->fd, &vst) == 0 &&
	    (vst.st_nlink > 1 || atomic_load(&victim->opens) > 0)) {
		hy_ops_meta_gate_begin(fs, victim, victim->fd, &vgate);
		if (vgate.gated) {
			victim_fresh = vgate.fresh;
			victim_map = vgate.file.meta_map;
			victim_cache = vgate.file.meta_cache;
		}
		hy_ops_meta_gate_end(fs, &vgate, false);
	}
	/* the moved file's ctime moves (an exchanged one's too: left to its
	 * stamp, one gate at a time) */
	hy_ops_meta_gate_begin(fs, moved, moved ? moved->fd : -1, &gate);
	rc = syscall(SYS_renameat2, pref.dirfd, name, npref.dirfd, new_name, flags) < 0 ? -errno
											: 0;
	hy_ops_meta_gate_end(fs, &gate, rc == 0);
	if (rc == 0 && victim_fresh) {
		hy_ops_meta_gate_begin(fs, victim, victim->fd, &vgate);
		if (vgate.gated) {
			vgate.fresh = true;
			vgate.file.meta_map = victim_map;
			vgate.file.meta_cache = victim_cache;
		}
		hy_ops_meta_gate_end(fs, &vgate, true);
	}
	if (rc == 0 && moved && moved->name)
		rc = hy_inode_moved(fs->inodes, moved, new_parent, new_name);
	if (rc == 0 && victim && (flags & RENAME_EXCHANGE))
		rc = hy_inode_moved(fs->inodes, victim, parent, name);
	if (rc == 0 && victim && !(flags & RENAME_EXCHANGE))
		hy_ops_forget_if_gone(fs, victim, victim->fd);
	/* the rows' paths follow, for BORG's flush (pin_child gave each its
	 * own descriptor, which now names the new place) */
	if (rc == 0 && fs->profiler) {
		if (moved && S_ISREG(moved->type))
			hy_identity_file_moved(hy_profiler_identity(fs->profiler),
					       atomic_load(&moved->file_id), moved->fd);
		if (victim && (flags & RENAME_EXCHANGE) && S_ISREG(victim->type))
			hy_identity_file_moved(hy_profiler_identity(fs->profiler),
					       atomic_load(&victim->file_id), victim->fd);
		dirs_moved(fs, parent, &pref, name, moved, new_parent, &npref, new_name, victim,
			   flags);
	}
	hy_inode_unpin_child(fs->inodes, moved, false);
	hy_inode_unpin_child(fs->inodes, victim, rc == 0 && !(flags & RENAME_EXCHANGE));
	hy_inode_unpin(fs->inodes, &npref);
	hy_inode_unpin(fs->inodes, &pref);
	return rc;
}

void hy_ops_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t new_parent,
		   const char *new_name, unsigned int flags)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	fuse_ino_t victim;
	int rc = do_rename(fs, hy_ops_inode_of(fs, parent), name, hy_ops_inode_of(fs, new_parent),
			   new_name, flags, &victim);

	hy_ops_count_op(fs, HY_OP_NAMESPACE);
	fuse_reply_err(req, -rc);
	if (rc == 0)
		names_gone(fs, parent, new_parent, victim);
}
