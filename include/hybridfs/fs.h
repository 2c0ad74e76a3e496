/*
 * fs.h - the daemon's FUSE low-level filesystem: passthrough over the backing
 * directory, with file data routed through the engine; and the control
 * handlers fs/ gives the control server.
 *
 * What it is for: fs/ops*.c implement struct fuse_lowlevel_ops (the table
 * in fs/ops.c, the handlers in ops_names.c, ops_files.c, ops_dirs.c). Each
 * operation is a thin handler that makes exactly one fuse_reply_* call over
 * a worker that returns 0 or a negative errno (libfuse's passthrough_ll
 * habit). Names are reached through the inode table (inode.h) with the *at
 * system calls; file data goes through the engine (engine.h), and a READ
 * whose blocks the engine finds home only is answered from the backing
 * file's pages by splice (splice=, fs/ops_files.c); everything else
 * (names, attributes, directories, xattrs) goes to the backing filesystem
 * directly.
 *
 * Semantics kept as the plain directory has them: new nodes belong to the
 * caller (the daemon, when root, takes the caller's fsuid, fsgid and
 * supplementary groups for the creating call, per thread: fs/ops.c,
 * hy_ops_creds_enter; and the caller's umask, which the backing filesystem
 * skips under a default ACL: fs/creds.c, hy_fs_umask_operations());
 * permissions, POSIX ACLs included, are checked by the kernel
 * (FUSE_CAP_POSIX_ACL, which implies default_permissions; a kernel without
 * it checks the mode alone when other users are let in, and otherwise the
 * backing filesystem does, since only the mounting user, as whom the daemon
 * runs, gets in); setuid, setgid and security.capability are cleared by the
 * daemon on a write, truncation or O_TRUNC open, as Linux clears them
 * (FUSE_HANDLE_KILLPRIV_V2, taken through fuse_channel.h; hy_ops_kill_privs
 * in fs/ops.c), or by the kernel where it does not offer the flag; POSIX and
 * flock locks are handled by the FUSE kernel module for the mount, which is
 * correct for everything that goes through the mount; O_DIRECT is honoured
 * by FUSE's direct_io (the backing file is opened without it, since request
 * buffers are not aligned).
 *
 * The state folder, when it lies inside the backing directory, is hidden:
 * lookups of it fail with ENOENT and directory listings skip it.
 *
 * Control handlers (control_server.h has the contract): each sees only
 * what it needs, a narrow context below that fs/main.c fills in once BORG,
 * the cache and the profiler are open (and that lives as long as the
 * control server); "status" alone, being about the whole mount, sees the
 * struct hy_fs.
 *
 * Who calls it: fs/main.c creates a struct hy_fs (its definition is
 * fs/fs_internal.h, private to fs/), hands hy_fs_umask_operations() to
 * fuse_session_new() with it as userdata, gives the handlers to the
 * control server, and frees it after unmount.
 *
 * Memory: see fs/fs_internal.h; the contexts borrow what they point at.
 * Locks: see inode.h; nothing here is held across a reply.
 */
#ifndef HYBRIDFS_FS_H
#define HYBRIDFS_FS_H

#include <stddef.h>

struct fuse_lowlevel_ops;
struct hy_fs;
struct hy_profiler;
struct hy_borg;
struct hy_cache;
struct hy_options;
struct json_object;
struct sqlite3;

extern const struct fuse_lowlevel_ops hy_fs_operations;

/* hy_fs_operations with mknod, mkdir and create run under the caller's
 * umask (fs/creds.c): the table for fuse_session_new(). Call before the
 * session starts (it fills a static table). */
const struct fuse_lowlevel_ops *hy_fs_umask_operations(void);

/* Sets up @fs over the backing root @root_fd (taken over) with at most
 * @fd_cap cached descriptors; @state_dir is hidden if it is inside. */
int hy_fs_init(struct hy_fs *fs, int root_fd, size_t fd_cap, const char *state_dir);
void hy_fs_destroy(struct hy_fs *fs);

/* The cache (fs/cache_glue.c): opened at mount from the options (NULL
 * with cache=none or without the profiler), put in the engine's path;
 * closed (everything dirty home) at unmount, before BORG. open returns 0
 * or a negative errno (logged: the mount fails). */
int hy_fs_open_cache(struct hy_fs *fs, const struct hy_options *opts);
int hy_fs_close_cache(struct hy_fs *fs);

/* Pins and excludes (fs/pin_glue.c, rules.h): at mount, after the cache,
 * @opts' exclude= and @db's cache_rules put in force (0 or -ENOMEM: the
 * mount fails); closed after the session. "rules" (control.h): @ctx is the
 * struct hy_fs (a pin walks the backing tree, changes go to the state
 * database first). */
int hy_fs_open_pins(struct hy_fs *fs, const struct hy_options *opts, struct sqlite3 *db);
void hy_fs_close_pins(struct hy_fs *fs);
struct json_object *hy_fs_rules(void *ctx, struct json_object *request, char *why,
				size_t why_size);
/* ReCA's policy table (fs/policy_glue.c): loaded from @db (the state
 * database, at mount, before the session loop) into ReCA (reca.h). */
int hy_fs_open_policy(struct hy_fs *fs, struct sqlite3 *db);

/* The counters kept across mounts and the Prometheus textfile
 * (fs/metrics_glue.c; counters.h, metrics.h): at mount, after the cache
 * and the pins (what status reports), the totals earlier mounts left are
 * read from the state database and a thread "hy-metrics" starts that,
 * every @opts->metrics_interval seconds, feeds this mount's figures in,
 * saves the totals and a sample of them (one transaction), and rewrites
 * @opts->metrics (when given). Closed after the control server stops and
 * before the cache closes: a last snapshot, and the file with hybridfs_up
 * 0. Open returns 0 or -ENOMEM (the mount fails); a database that cannot
 * be read is logged, and the counters are then this mount's alone (the
 * totals in it are left as they are). */
int hy_fs_open_metrics(struct hy_fs *fs, const struct hy_options *opts);
void hy_fs_close_metrics(struct hy_fs *fs);

/* The "status" result of the control protocol (see hybridctl(8)): the
 * mount, operations and bytes by kind, the profiler's figures, the
 * database's size and the busiest processes. NULL when out of memory. */
struct json_object *hy_fs_status(struct hy_fs *fs);

/* "reorganize" and "progress" (fs/borg_handlers.c): @ctx is the struct
 * hy_borg. */
struct json_object *hy_fs_reorganize(void *ctx, struct json_object *request, char *why,
				     size_t why_size);
struct json_object *hy_fs_progress(void *ctx, struct json_object *request, char *why,
				   size_t why_size);

/* "flush" (fs/borg_handlers.c): the cache's dirty blocks home, then the
 * BOPT's; either may be NULL, not both. */
struct hy_fs_flush_ctx {
	struct hy_cache *cache;
	struct hy_borg *borg;
};
struct json_object *hy_fs_flush(void *ctx, struct json_object *request, char *why, size_t why_size);

/* "explain" (fs/borg_handlers.c): where the blocks of a file named
 * beneath @root_fd (the backing root) are served from, per run of blocks
 * (the request's "offset" and "length" in bytes, optional, narrow it):
 * the cache's tiers (hy_cache_where; @cache NULL without one), else the
 * map's pieces (@borg NULL without BORG: all home); its id from file
 * identity (identity.h; NULL without the profiler) and its heat from the
 * graph saved in @db_path. */
struct hy_identity;
struct hy_fs_explain_ctx {
	struct hy_borg *borg;
	struct hy_identity *identity;
	int root_fd;
	const char *db_path;
	struct hy_cache *cache;
};
struct json_object *hy_fs_explain(void *ctx, struct json_object *request, char *why,
				  size_t why_size);

/* "policy" (fs/policy_glue.c, control.h): the table in force in ReCA
 * (@reca, reca.h), changed settings stored in @db_path first. */
struct hy_reca;
struct hy_fs_policy_ctx {
	struct hy_reca *reca;
	const char *db_path;
};
struct json_object *hy_fs_policy(void *ctx, struct json_object *request, char *why,
				 size_t why_size);

#endif
