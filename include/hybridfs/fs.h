/*
 * fs.h - the daemon's FUSE low-level filesystem: passthrough over the backing
 * directory, with file data routed through the engine.
 *
 * What it is for: fs/ops.c implements struct fuse_lowlevel_ops. Each
 * operation is a thin handler that makes exactly one fuse_reply_* call over
 * a worker that returns 0 or a negative errno (libfuse's passthrough_ll
 * habit). Names are reached through the inode table (inode.h) with the *at
 * system calls; file data goes through the engine (engine.h); everything
 * else (names, attributes, directories, xattrs) goes to the backing
 * filesystem directly.
 *
 * Semantics kept as the plain directory has them: new nodes belong to the
 * caller (the daemon, when root, takes the caller's fsuid, fsgid and
 * supplementary groups for the creating call, per thread, and the caller's
 * umask, which the backing filesystem skips under a default ACL: fs/main.c);
 * permissions, POSIX ACLs included, are checked by the kernel
 * (FUSE_CAP_POSIX_ACL, which implies default_permissions; a kernel without
 * it checks the mode alone when other users are let in, and otherwise the
 * backing filesystem does, since only the mounting user, as whom the daemon
 * runs, gets in); setuid and setgid
 * bits are cleared by the kernel on a write by a non-owner (we do not claim
 * FUSE_CAP_HANDLE_KILLPRIV); POSIX and flock locks are handled by the FUSE
 * kernel module for the mount, which is correct for everything that goes
 * through the mount; O_DIRECT is honoured by FUSE's direct_io (the backing
 * file is opened without it, since request buffers are not aligned).
 *
 * The state folder, when it lies inside the backing directory, is hidden:
 * lookups of it fail with ENOENT and directory listings skip it.
 *
 * Who calls it: fs/main.c creates a struct hy_fs, hands hy_fs_operations
 * to fuse_session_new() with it as userdata, and frees it after unmount.
 *
 * Memory: struct hy_fs owns its inode table, device and engine. Open files
 * and directories are owned by their FUSE handle (fi->fh) from open to
 * release, and are also listed in fs->handles so hy_fs_destroy() closes
 * those the kernel never released. Locks: see inode.h; nothing here is held across a reply.
 */
#ifndef HYBRIDFS_FS_H
#define HYBRIDFS_FS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct fuse_lowlevel_ops;
struct hy_inode_table;
struct hy_engine;
struct hy_device;
struct hy_device_emulation;

/* The link every open file and directory handle has in its struct hy_fs,
 * so that handles the kernel never released (unmount by a signal while
 * files are open) are closed at teardown. */
struct hy_fs_handle {
	struct hy_fs_handle *prev, *next;
	bool is_dir;
};

/* Operations counted for `hybridctl status`, by kind. */
enum hy_fs_op {
	HY_OP_LOOKUP,
	HY_OP_GETATTR,
	HY_OP_SETATTR,
	HY_OP_READDIR,
	HY_OP_OPEN,
	HY_OP_CREATE,
	HY_OP_READ,
	HY_OP_WRITE,
	HY_OP_FSYNC,
	HY_OP_NAMESPACE, /* mknod, mkdir, symlink, link, unlink, rmdir, rename */
	HY_OP_XATTR,
	HY_OP_OTHER, /* statfs, access, readlink, fallocate, lseek, copy... */
	HY_OP_COUNT
};

struct hy_profiler;
struct hy_borg;
struct hy_cache;
struct json_object;

struct hy_fs {
	struct hy_inode_table *inodes;
	struct hy_device *backing;
	struct hy_engine *engine;

	/* The state folder's place, to hide it: its parent's identity and its
	 * name in that parent. */
	dev_t state_parent_dev;
	ino_t state_parent_ino;
	char state_name[256];
	bool state_is_child; /* the state folder is a directory in that parent */

	double attr_timeout;
	double entry_timeout;
	double negative_timeout;
	bool writeback_cache;
	bool posix_acl;	   /* allow_other: the kernel checks ACLs (FUSE_CAP_POSIX_ACL) */
	bool switch_creds; /* the daemon is root: create as the caller */

	pthread_mutex_t handles_lock; /* protects handles */
	struct hy_fs_handle handles;  /* sentinel of the open handles' list */

	struct hy_profiler *profiler; /* NULL with profile=off; owned by main */
	struct hy_borg *borg;	      /* NULL without a BOPT; owned by main */
	struct hy_cache *cache;	      /* NULL with cache=none; hy_fs_open_cache() */
	int cache_write;	      /* the cache's write policy (enum hy_cache_write_policy) */
	/* emulate=: the disk model the backing files and the BOPT are delayed
	 * by (NULL: none; owned by main), and the option's text */
	struct hy_device_emulation *emulation;
	const char *emulate;
	uint64_t emulation_buffer; /* emulate=smr's persistent buffer, bytes (0: none) */
	uint64_t cache_seq_cutoff; /* ... and its sequential cutoff, for "status" */
	_Atomic uint64_t ops[HY_OP_COUNT];
	_Atomic uint64_t bytes_read, bytes_written;

	/* for status; borrowed from main's options and state */
	const char *mountpoint, *backing_path, *state_dir, *db_path, *uuid;
	int64_t started; /* seconds since the epoch */
};

/* The "status" result of the control protocol (see hybridctl(8)): the
 * mount, operations and bytes by kind, the profiler's figures, the
 * database's size and the busiest processes. NULL when out of memory. */
struct json_object *hy_fs_status(struct hy_fs *fs);

/* BORG's control requests (fs/borg_handlers.c; control_server.h has the
 * handler contract; @ctx is the struct hy_fs, whose borg is set) and its
 * part of "status". */
struct json_object *hy_fs_reorganize(void *ctx, struct json_object *request, char *why,
				     size_t why_size);
struct json_object *hy_fs_progress(void *ctx, struct json_object *request, char *why,
				   size_t why_size);
struct json_object *hy_fs_explain(void *ctx, struct json_object *request, char *why,
				  size_t why_size);
struct json_object *hy_fs_flush(void *ctx, struct json_object *request, char *why, size_t why_size);
struct json_object *hy_fs_borg_status(struct hy_fs *fs);
/* The cache (fs/cache_glue.c): opened at mount from the options (NULL
 * with cache=none or without the profiler), put in the engine's path;
 * closed (everything dirty home) at unmount, before BORG. open returns 0
 * or a negative errno (logged: the mount fails). Its part of "status". */
struct hy_options;
int hy_fs_open_cache(struct hy_fs *fs, const struct hy_options *opts);
int hy_fs_close_cache(struct hy_fs *fs);
struct json_object *hy_fs_cache_status(struct hy_fs *fs);
/* ReCA's policy table (fs/policy_glue.c): loaded from @db (the state
 * database, at mount, before the session loop) into ReCA (reca.h); the
 * "policy" control request (control.h); the policy a process follows, for
 * "status" (@t: the table in force). */
struct sqlite3;
struct hy_workload_policy_table;
struct hy_reca_process;
int hy_fs_open_policy(struct hy_fs *fs, struct sqlite3 *db);
struct json_object *hy_fs_policy(void *ctx, struct json_object *request, char *why,
				 size_t why_size);
struct json_object *hy_fs_process_policy(struct hy_fs *fs, const struct hy_workload_policy_table *t,
					 const struct hy_reca_process *p);
/* A device's counters for "status" (the backing device, the BOPT). */
struct json_object *hy_fs_device_status(struct hy_device *device);

extern const struct fuse_lowlevel_ops hy_fs_operations;

/* Sets up @fs over the backing root @root_fd (taken over) with at most
 * @fd_cap cached descriptors; @state_dir is hidden if it is inside. */
int hy_fs_init(struct hy_fs *fs, int root_fd, size_t fd_cap, const char *state_dir);
void hy_fs_destroy(struct hy_fs *fs);

#endif
