/*
 * ops_internal.h - what the FUSE operations in fs/ops*.c share: the open-file
 * and directory handles, the checked objects a change acts on, the metadata
 * gate, the caller's credentials for creating calls, and the small helpers
 * every handler uses.
 *
 * Who includes it: fs/ops.c (the shared pieces, the session and the
 * operations table), fs/ops_names.c, fs/ops_files.c, fs/ops_dirs.c; nothing
 * outside fs/. Memory and locks: as fs.h and inode.h say; an open file is
 * owned by its FUSE handle (fi->fh) from open to release, a directory from
 * opendir to releasedir, and both are also on the mount's handle list
 * (hy_ops_handle_track) under fs->handles_lock.
 */
#ifndef HYBRIDFS_FS_OPS_INTERNAL_H
#define HYBRIDFS_FS_OPS_INTERNAL_H

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <fuse_lowlevel.h>

#include "hybridfs/engine.h"
#include "hybridfs/fuse_channel.h"
#include "hybridfs/inode.h"
#include "hybridfs/profiler.h"

#include "fs_internal.h"

/* An open file: owned by fi->fh from open/create to release; or, opened
 * for a file the kernel opened itself (open=kernel, fs/kfile.c), owned by
 * the inode's kernel_file until that module closes it. */
struct hy_file {
	struct hy_fs_handle link;     /* first: a handle is found from its link */
	struct hy_engine_file engine; /* engine.backing_fd is fd */
	struct hy_inode *inode;	      /* held by the kernel while the file is open */
	int fd;
	/* the kernel's backing id this handle was opened with (passthrough.h;
	 * 0: served by the daemon) */
	int passthrough_id;
	bool profiled; /* prof is set up */
	struct hy_profile_handle prof;
	/* open=kernel: opened by fs/kfile.c; fd is read-write once a write
	 * needed it (until then read-only); under that module's lock, the
	 * requests using it now and its place in the least recently used
	 * order */
	bool kernel_opened;
	_Atomic bool writable;
	unsigned users;
	struct hy_file *older, *newer;
};

/* An open directory: owned by fi->fh from opendir to releasedir. */
struct hy_dir {
	struct hy_fs_handle link; /* first */
	DIR *dp;
	off_t offset;	       /* where dp is, as telldir() values */
	struct dirent *entry;  /* read but not yet returned, or NULL */
	int64_t listing_began; /* when the listing read from offset 0 began, or 0 */
	bool listing_plus;     /* ... with readdirplus */
};

/*
 * A change through the mount that moves a file's ctime without touching
 * its data (rename, link, unlink of another of its names, xattrs): the
 * cache's and the BOPT's stamps follow it, as they do for setattr, so the
 * file keeps its cached and relocated blocks instead of having them taken
 * for changed behind the mount (issue 16.18's class: the cache's own
 * changes are not outside changes). One file at a time: the gates are
 * striped, and two held at once could be the same lock or taken in the
 * other order by another request; end the gate before anything else takes
 * a gate (hy_ops_forget_if_gone).
 */
struct meta_gate {
	struct hy_engine_file file;
	bool gated, fresh;
};

/* The caller's identity, taken on by this thread for one creating call,
 * so that new nodes are the caller's (and a setgid directory's group
 * rule, with the caller's groups, is applied by the backing filesystem).
 * Raw syscalls: glibc's setgroups() would change every thread. */
struct creds_saved {
	bool switched;
};

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

/* the read buffers' thread key (fs/ops_files.c), made by hy_fs_init() */
extern pthread_key_t hy_ops_read_buffer_key;

static inline void hy_ops_count_op(struct hy_fs *fs, enum hy_fs_op op)
{
	atomic_fetch_add_explicit(&fs->ops[op], 1, memory_order_relaxed);
}

static inline struct hy_dir *hy_ops_dir_of(struct fuse_file_info *fi)
{
	return (struct hy_dir *)(uintptr_t)fi->fh;
}

/* An entry's timeouts for a metadata-heavy process. */
static inline void hy_ops_entry_priority(struct fuse_entry_param *e, double timeout)
{
	if (timeout > e->entry_timeout)
		e->entry_timeout = timeout;
	if (timeout > e->attr_timeout)
		e->attr_timeout = timeout;
}

static inline struct hy_file *hy_ops_file_of(struct fuse_file_info *fi)
{
	return (struct hy_file *)(uintptr_t)fi->fh;
}

static inline struct hy_fs *hy_ops_fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline fuse_ino_t hy_ops_ino_of(struct hy_fs *fs, struct hy_inode *inode)
{
	return inode == fs->inodes->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)inode;
}

static inline struct hy_inode *hy_ops_inode_of(struct hy_fs *fs, fuse_ino_t ino)
{
	if (ino == FUSE_ROOT_ID)
		return fs->inodes->root;
	return (struct hy_inode *)(uintptr_t)ino;
}

/* fs/ops.c: the pieces every handler shares (comments at their definitions) */
double hy_ops_count_meta(struct hy_fs *fs, fuse_req_t req, enum hy_fs_op op,
			 enum hy_profile_meta kind, double mount_timeout);
int hy_ops_creds_enter(struct hy_fs *fs, fuse_req_t req, struct creds_saved *saved);
void hy_ops_creds_leave(struct creds_saved *saved);
void hy_ops_dir_free(struct hy_fs *fs, struct hy_dir *dir);
int hy_ops_file_free(struct hy_fs *fs, struct hy_file *file);
uint64_t hy_ops_file_id_of(struct hy_fs *fs, struct hy_inode *inode, int fd);
void hy_ops_forget_if_gone(struct hy_fs *fs, struct hy_inode *inode, int fd);
void hy_ops_handle_track(struct hy_fs *fs, struct hy_fs_handle *h, bool is_dir);
/* What hy_ops_kill_privs() takes away besides security.capability. */
enum hy_ops_kill {
	HY_KILL_CAPS,	 /* nothing more */
	HY_KILL_SUIDGID, /* the caller lacks CAP_FSETID (the request's kill flag):
			  * setuid; setgid when group-executable or the caller
			  * is outside the file's group */
};
int hy_ops_kill_privs(struct hy_fs *fs, fuse_req_t req, struct hy_inode *inode, int fd,
		      const char *path, const struct stat *known, enum hy_ops_kill what,
		      bool tell_kernel);
/* The request's kill flag as a hy_ops_kill_privs() argument. */
static inline enum hy_ops_kill hy_ops_kill_of_request(void)
{
	return hy_fuse_channel_kill_suidgid() ? HY_KILL_SUIDGID : HY_KILL_CAPS;
}
void hy_ops_privs_changed(struct hy_inode *inode);
/* The kernel forgets the attributes it keeps of @inode, whose mode the
 * daemon changed while answering a request whose reply carries none. */
void hy_ops_privs_shown(struct hy_fs *fs, struct hy_inode *inode);
bool hy_ops_is_state_entry(struct hy_fs *fs, struct hy_inode *parent, const char *name);
void hy_ops_meta_gate_begin(struct hy_fs *fs, struct hy_inode *inode, int fd,
			    struct meta_gate *gate);
void hy_ops_meta_gate_end(struct hy_fs *fs, struct meta_gate *gate, bool changed);
/* fs/kcache.c: the kernel's caches (comments there). inval_attr drops a
 * node's attributes (safe inside a request); inval_dir a directory's
 * attributes and listing (after the reply). Both take a node id as a
 * number only, never reading the entry, which may be gone once the reply
 * is out. keep_listing: whether an
 * opendir keeps the kernel's listing; listing_begins and listed bracket a
 * listing read to its end (@plus: with readdirplus, its entries given for
 * @timeout seconds; false: the caller drops the listing after its reply,
 * with inval_dir). can_keep_listings: whether the kernel may open
 * folders itself (opendir=kernel: the sweeper runs). */
void hy_fs_kcache_inval_attr(struct hy_fs *fs, fuse_ino_t ino);
void hy_fs_kcache_inval_dir(struct hy_fs *fs, fuse_ino_t ino);
bool hy_fs_kcache_keep_listing(struct hy_fs *fs, struct hy_inode *dir);
int64_t hy_fs_kcache_listing_begins(void);
bool hy_fs_kcache_listed(struct hy_fs *fs, struct hy_inode *dir, int64_t began, bool plus,
			 double timeout);
bool hy_fs_kcache_can_keep_listings(struct hy_fs *fs);
/* fs/ops_dirs.c: handlers of hy_fs_operations */
void hy_ops_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void hy_ops_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void hy_ops_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void hy_ops_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void hy_ops_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
		    struct fuse_file_info *fi);
void hy_ops_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset,
			struct fuse_file_info *fi);
void hy_ops_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void hy_ops_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void hy_ops_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		     size_t size, int flags);
void hy_ops_statfs(fuse_req_t req, fuse_ino_t ino);
/* fs/ops_files.c: handlers of hy_fs_operations; out_of_descriptors (a descriptor
 * shortage the inode table can relieve) and the read buffers' destructor */
void hy_ops_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			    struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			    struct fuse_file_info *fi_out, size_t len, int flags);
void hy_ops_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		   struct fuse_file_info *fi);
void hy_ops_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
		      struct fuse_file_info *fi);
void hy_ops_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void hy_ops_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);
void hy_ops_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void hy_ops_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void hy_ops_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void hy_ops_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi);
bool hy_ops_out_of_descriptors(struct hy_fs *fs, int rc);
int hy_ops_file_new(struct hy_fs *fs, fuse_req_t req, struct hy_inode *inode, int fd,
		    const struct stat *st, struct fuse_file_info *fi);

/* fs/kfile.c: the file a read, write or fsync is for. With a handle
 * (fi->fh), its file; without one (open=kernel), the inode's kernel file,
 * opened at its first use, read-write when @access asks for a write
 * (HY_KFILE_WRITE; HY_KFILE_WRITE_IF_CAN: read-only where the backing file
 * cannot be written, for an fsync). NULL with *@rc set on failure. Give it
 * back with hy_ops_file_put(). */
enum hy_kfile_access { HY_KFILE_READ, HY_KFILE_WRITE, HY_KFILE_WRITE_IF_CAN };
struct hy_file *hy_ops_file_get(struct hy_fs *fs, fuse_req_t req, fuse_ino_t ino,
				struct fuse_file_info *fi, enum hy_kfile_access access, int *rc);
void hy_ops_file_put(struct hy_fs *fs, struct hy_file *file);
void hy_ops_read_buffer_free(void *p);
/* fs/ops_names.c: handlers of hy_fs_operations; an entry looked up and filled
 * (lookup and create share it), and the checked objects a change acts on */
int hy_ops_do_lookup_at(struct hy_fs *fs, struct hy_inode *parent, int parent_fd, const char *name,
			struct fuse_entry_param *e);
void hy_ops_entry_fill(struct hy_fs *fs, struct fuse_entry_param *e, struct hy_inode *inode,
		       const struct stat *st);
void hy_ops_access(fuse_req_t req, fuse_ino_t ino, int mask);
void hy_ops_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void hy_ops_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void hy_ops_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void hy_ops_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char *new_name);
void hy_ops_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void hy_ops_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void hy_ops_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void hy_ops_readlink(fuse_req_t req, fuse_ino_t ino);
void hy_ops_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t new_parent,
		   const char *new_name, unsigned int flags);
void hy_ops_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void hy_ops_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		    struct fuse_file_info *fi);
void hy_ops_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void hy_ops_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void hy_ops_object_close(struct hy_object *obj);
int hy_ops_object_open(struct hy_fs *fs, const struct hy_inode_ref *ref,
		       const struct hy_inode *inode, struct hy_object *obj);

#endif
