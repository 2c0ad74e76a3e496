/* ops_dirs.c - FUSE operations on directories and extended attributes: opendir, readdir(plus),
 * releasedir, fsyncdir, statfs, and the xattr calls; see include/hybridfs/fs.h and
 * fs/ops_internal.h. */
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

#include "ops_internal.h"

/* ---- directories ------------------------------------------------------- */

/* A stream on @inode's backing folder, at its start, in *@out; 0 only
 * with *@out set. */
static int dir_open(struct hy_fs *fs, struct hy_inode *inode, struct hy_dir **out)
{
	struct hy_inode_ref ref;
	struct hy_dir *dir;
	int fd = -1, rc = hy_inode_pin(fs->inodes, inode, true, &ref);

	*out = NULL;
	if (rc)
		return rc;
	for (int attempt = 0; attempt < 2; attempt++) {
		fd = openat(ref.dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = fd < 0 ? -errno : 0;
		if (!hy_ops_out_of_descriptors(fs, rc))
			break;
	}
	hy_inode_unpin(fs->inodes, &ref);
	if (fd < 0)
		return rc ? rc : -EIO;
	dir = calloc(1, sizeof(*dir));
	if (!dir) {
		close(fd);
		return -ENOMEM;
	}
	dir->dp = fdopendir(fd);
	if (!dir->dp) {
		rc = errno ? -errno : -EIO;
		close(fd);
		free(dir);
		return rc;
	}
	*out = dir;
	return 0;
}

static int do_opendir(struct hy_fs *fs, struct hy_inode *inode, struct fuse_file_info *fi)
{
	struct hy_dir *dir;
	int rc = dir_open(fs, inode, &dir);

	if (rc)
		return rc;
	hy_ops_handle_track(fs, &dir->link, true);
	fi->fh = (uint64_t)(uintptr_t)dir;
	/* The kernel keeps the listing it reads (its own changes through the
	 * mount drop it, and so does a new modification time of the folder
	 * once its attributes are asked again); kept across opens while its
	 * entries are fresh (fs/kcache.c). With entry_timeout=0 nothing is
	 * kept: two changes behind the mount in one tick of the clock leave
	 * the folder's time as it was. */
	if (fs->entry_timeout > 0) {
		fi->cache_readdir = 1;
		fi->keep_cache = hy_fs_kcache_keep_listing(fs, inode);
	}
	return 0;
}

void hy_ops_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	int rc;

	hy_ops_count_op(fs, HY_OP_OTHER);
	/* opendir=kernel: the kernel opens this folder and every later one
	 * itself, with no handle (fs/kcache.c) */
	if (fs->kernel_opens_dirs) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	rc = do_opendir(fs, hy_ops_inode_of(fs, ino), fi);
	if (rc) {
		fuse_reply_err(req, -rc);
	} else if (fuse_reply_open(req, fi) == -ENOENT) {
		hy_ops_dir_free(fs, hy_ops_dir_of(fi));
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
	/* a listing from its start, which the kernel keeps once it reads to
	 * the end (fs/kcache.c: how long) */
	if (offset == 0) {
		dir->listing_began = hy_fs_kcache_listing_begins();
		dir->listing_plus = plus;
		/* a folder the kernel opened: the next request has a new stream */
		atomic_store_explicit(&inode->listing_began, dir->listing_began,
				      memory_order_relaxed);
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
		if (hy_ops_is_state_entry(fs, inode, name)) {
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
				rc = hy_ops_do_lookup_at(fs, inode, ref.dirfd, name, &e);
				if (rc == -ENOENT) { /* removed since readdir saw it */
					rc = 0;
					dir->entry = NULL;
					dir->offset = next;
					continue;
				}
				if (rc)
					break;
				hy_ops_entry_priority(&e, timeout);
			}
			len = fuse_add_direntry_plus(req, buf + pos, size - pos, name, &e, next);
			if (len > size - pos) {
				if (e.ino)
					hy_inode_forget(fs->inodes, hy_ops_inode_of(fs, e.ino), 1);
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
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct hy_inode *inode = hy_ops_inode_of(fs, ino);
	/* no handle: a folder the kernel opened itself (opendir=kernel) is
	 * read with a stream of this request's own, from @offset, which is
	 * a telldir() value as with a handle */
	struct hy_dir *dir = fi->fh ? hy_ops_dir_of(fi) : NULL;
	char *buf = malloc(size);
	size_t filled = 0;
	double timeout;
	bool kept = true;
	int rc = buf ? 0 : -ENOMEM;

	if (rc == 0 && !dir)
		rc = dir_open(fs, inode, &dir);
	if (rc || !dir) { /* (dir_open gives a stream whenever it returns 0) */
		fuse_reply_err(req, rc ? -rc : EIO);
		free(buf);
		return;
	}
	/* a listing from its start begun by an earlier request (its stream) */
	if (!fi->fh && offset != 0)
		dir->listing_began =
			atomic_load_explicit(&inode->listing_began, memory_order_relaxed);
	timeout = hy_ops_count_meta(fs, req, HY_OP_READDIR, HY_META_READDIR, fs->entry_timeout);
	rc = do_readdir(fs, inode, req, dir, buf, size, offset, plus, timeout, &filled);
	if (rc == 0 && filled == 0 && dir->listing_began) {
		/* the end: the kernel's listing is whole, its entries as fresh
		 * as the shorter of their timeouts */
		double entry = fs->entry_timeout > timeout ? fs->entry_timeout : timeout;
		double attr = fs->attr_timeout > timeout ? fs->attr_timeout : timeout;

		kept = hy_fs_kcache_listed(fs, inode, dir->listing_began, dir->listing_plus,
					   entry < attr ? entry : attr);
		dir->listing_began = 0;
	}
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, filled);
	if (!kept) /* after the reply (fs/kcache.c) */
		hy_fs_kcache_inval_dir(fs, ino);
	free(buf);
	if (!fi->fh) {
		closedir(dir->dp);
		free(dir);
	}
}

void hy_ops_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
		    struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, offset, fi, false);
}

void hy_ops_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
			struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, offset, fi, true);
}

void hy_ops_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (fi->fh) /* the kernel sends none for a folder it opened itself */
		hy_ops_dir_free(hy_ops_fs_of(req), hy_ops_dir_of(fi));
	fuse_reply_err(req, 0);
}

void hy_ops_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	/* opened by the kernel: through a stream of its own */
	bool own = !fi->fh;
	struct hy_dir *dir = own ? NULL : hy_ops_dir_of(fi);
	int fd, rc = own ? dir_open(fs, hy_ops_inode_of(fs, ino), &dir) : 0;

	if (rc == 0 && dir) {
		fd = dirfd(dir->dp);
		if ((datasync ? fdatasync(fd) : fsync(fd)) < 0)
			rc = -errno;
	}
	if (own && dir) {
		closedir(dir->dp);
		free(dir);
	}
	fuse_reply_err(req, -rc);
}

void hy_ops_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct hy_inode_ref ref;
	struct statvfs sv;
	int rc = hy_inode_pin(fs->inodes, fs->inodes->root, true, &ref);

	hy_ops_count_op(fs, HY_OP_OTHER);
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
	rc = hy_ops_object_open(fs, ref, inode, obj);
	if (rc)
		hy_inode_unpin(fs->inodes, ref);
	return rc;
}

static void xattr_unref(struct hy_fs *fs, struct hy_inode_ref *ref, struct hy_object *obj)
{
	hy_ops_object_close(obj);
	hy_inode_unpin(fs->inodes, ref);
}

void hy_ops_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct hy_inode_ref ref;
	struct hy_object obj;
	char *buf = NULL;
	ssize_t n;
	int rc = xattr_ref(fs, hy_ops_inode_of(fs, ino), &ref, &obj);

	hy_ops_count_op(fs, HY_OP_XATTR);
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

void hy_ops_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct hy_inode_ref ref;
	struct hy_object obj;
	char *buf = NULL;
	ssize_t n;
	int rc = xattr_ref(fs, hy_ops_inode_of(fs, ino), &ref, &obj);

	hy_ops_count_op(fs, HY_OP_XATTR);
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

void hy_ops_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		     size_t size, int flags)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct hy_inode_ref ref;
	struct hy_object obj;
	struct meta_gate gate;
	int rc = xattr_ref(fs, hy_ops_inode_of(fs, ino), &ref, &obj);

	hy_ops_count_op(fs, HY_OP_XATTR);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	hy_ops_meta_gate_begin(fs, hy_ops_inode_of(fs, ino), obj.fd, &gate);
	rc = setxattr(obj.path, name, value, size, flags) < 0 ? errno : 0;
	hy_ops_meta_gate_end(fs, &gate, rc == 0);
	/* security.capability, say: the next write looks again */
	hy_ops_privs_changed(hy_ops_inode_of(fs, ino));
	if (rc == 0) /* the next fsync makes it durable */
		hy_engine_home_changed(fs->engine,
				       hy_ops_file_id_of(fs, hy_ops_inode_of(fs, ino), obj.fd));
	xattr_unref(fs, &ref, &obj);
	fuse_reply_err(req, rc);
}

void hy_ops_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct hy_inode_ref ref;
	struct hy_object obj;
	struct meta_gate gate;
	int rc = xattr_ref(fs, hy_ops_inode_of(fs, ino), &ref, &obj);

	hy_ops_count_op(fs, HY_OP_XATTR);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	hy_ops_meta_gate_begin(fs, hy_ops_inode_of(fs, ino), obj.fd, &gate);
	rc = removexattr(obj.path, name) < 0 ? errno : 0;
	hy_ops_meta_gate_end(fs, &gate, rc == 0);
	if (rc == 0)
		hy_engine_home_changed(fs->engine,
				       hy_ops_file_id_of(fs, hy_ops_inode_of(fs, ino), obj.fd));
	xattr_unref(fs, &ref, &obj);
	fuse_reply_err(req, rc);
}
