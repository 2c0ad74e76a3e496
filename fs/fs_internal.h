/*
 * fs_internal.h - what the files of fs/ share and nobody outside sees:
 * struct hy_fs, the daemon's filesystem, and the pieces of "status" that
 * one handler file builds for another.
 *
 * What it is for: fs/ops.c serves FUSE requests over a struct hy_fs (the
 * backing root's inode table, the engine, the open handles, the counters);
 * fs/main.c fills one in at mount; fs/status.c reads all of it for
 * "status", the one request about the whole mount. The other control
 * handlers (fs/borg_handlers.c, fs/policy_glue.c, fs/cache_glue.c) get
 * narrow contexts instead (include/hybridfs/fs.h), and never see this.
 *
 * Who calls it: the files of fs/ only: ops.c, main.c, status.c, cache_glue.c and
 * policy_glue.c (their mount-time halves), borg_handlers.c (for the
 * status prototypes; its handlers take narrow contexts).
 *
 * Memory: struct hy_fs owns its inode table, device and engine; the
 * profiler, BORG, the cache and the emulation are main's (see their
 * members). Open files and directories are owned by their FUSE handle
 * (fi->fh) from open to release, and the files the kernel opened itself
 * (open=kernel) by their inode's kernel_file (fs/kfile.c); all are also
 * listed in fs->handles so hy_fs_destroy() closes those left open. Locks: see
 * inode.h; handles_lock protects the handles' list; the counters are
 * atomics; nothing here is held across a reply.
 */
#ifndef HYBRIDFS_FS_INTERNAL_H
#define HYBRIDFS_FS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hybridfs/fs.h"
#include "hybridfs/rules.h" /* enum hy_rule */

/* The read-ahead window main.c gives the mount (raise_readahead): one
 * request as large as the kernel sends (max_pages, 256 pages). */
#define HY_FS_READAHEAD (1024u * 1024u)

struct hy_inode_table;
struct hy_engine;
struct hy_device;
struct hy_device_emulation;
struct hy_profiler;
struct hy_borg;
struct hy_cache;
struct hy_fs_pins;
struct hy_fs_passthrough;
struct hy_fuse_channel;
struct json_object;

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
struct fuse_session;
struct hy_fs_kcache_sweeper;

/* What fs/kcache.c counts of its work with the kernel's caches. */
struct hy_fs_kcache_stats {
	_Atomic uint64_t invalidations;	      /* notices sent to the kernel */
	_Atomic uint64_t invalidation_errors; /* ... refused (other than "not cached") */
	_Atomic uint64_t home_changes;	      /* files the daemon wrote home behind it */
	_Atomic uint64_t listings_kept;	      /* opendirs told to keep the kernel's listing */
	_Atomic uint64_t listings_renewed;    /* ... told to drop it and list again */
	_Atomic uint64_t listings_dropped;    /* opendir=kernel: dropped as entries expired */
};

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
	uint32_t readahead; /* bytes the INIT reply offers (0: libfuse's, the kernel's 128 KiB) */
	bool posix_acl;	    /* allow_other: the kernel checks ACLs (FUSE_CAP_POSIX_ACL) */
	bool switch_creds;  /* the daemon is root: create as the caller */

	pthread_mutex_t handles_lock; /* protects handles */
	struct hy_fs_handle handles;  /* sentinel of the open handles' list */

	struct hy_profiler *profiler; /* NULL with profile=off; owned by main */
	struct hy_borg *borg;	      /* NULL without a BOPT; owned by main */
	struct hy_cache *cache;	      /* NULL with cache=none; hy_fs_open_cache() */
	struct hy_fs_pins *pins;      /* pins and excludes; hy_fs_open_pins() (fs/pin_glue.c) */
	int cache_write;	      /* the cache's write policy (enum hy_cache_write_policy) */
	/* emulate=: the disk model the backing files and the BOPT are delayed
	 * by (NULL: none; owned by main), and the option's text */
	struct hy_device_emulation *emulation;
	const char *emulate;
	uint64_t emulation_buffer; /* emulate=smr's persistent buffer, bytes (0: none) */
	uint64_t cache_seq_cutoff; /* ... and its sequential cutoff, for "status" */
	_Atomic uint64_t ops[HY_OP_COUNT];
	_Atomic uint64_t bytes_read, bytes_written;
	/* splice=: asked; whether reads of home blocks get spliced replies
	 * (set at INIT, fs/ops.c; turned off for good if the backing
	 * filesystem cannot splice, fs/ops_files.c), why not when asked and
	 * not taken (for status), and the replies and bytes sent so */
	bool splice;
	uint32_t splice_max_read; /* the largest READ spliced (main.c; 0: none) */
	_Atomic bool splice_reads;
	char splice_why[200];
	_Atomic uint64_t spliced_reads, spliced_bytes;

	/* The session the kernel's caches are told through (fs/kcache.c):
	 * set once the session exists, NULL again before it is destroyed. */
	struct fuse_session *_Atomic session;
	struct hy_fs_kcache_stats kcache;
	/* opendir=: asked (enum in options.h), and whether the kernel opens
	 * folders itself (set at INIT, fs/ops.c); the thread that drops the
	 * listings it keeps once their entries expire (fs/kcache.c; NULL:
	 * none, and the daemon opens them) */
	int opendir;
	bool kernel_opens_dirs;
	bool readdirplus_always; /* readdirplus=always: no READDIRPLUS_AUTO */
	struct hy_fs_kcache_sweeper *kcache_sweeper;
	/* open=: asked (enum in options.h), whether the kernel opens files
	 * itself (set at INIT, fs/ops.c), and the files the daemon opened
	 * for it (fs/kfile.c; made by hy_fs_init) */
	int open_mode;
	bool open_files_unchecked_ok; /* the kernel checks opens, or need not */
	bool kernel_opens_files;
	struct hy_fs_kfiles *kfiles;

	/* for status; borrowed from main's options and state */
	const char *mountpoint, *backing_path, *state_dir, *db_path, *uuid;
	const char *backing_disk; /* the backing directory's disk (sda1), or NULL: not known */
	/* the counters kept across mounts and metrics=FILE (fs/metrics_glue.c);
	 * NULL until hy_fs_open_metrics() */
	struct hy_fs_metrics *metrics;
	/* How the daemon reaches the backing directory by path after the
	 * mount: "/proc/self/fd/N" of the root's descriptor, which is not the
	 * mount even when it covers the directory itself (a mount in place);
	 * and the hidden folder in it (BACKING/.hybridfs) the same way */
	const char *backing_at, *hidden_at;
	/* which disks the database, the cache store and the BOPT are on, and
	 * why (fs/main.c; owned by main; NULL: not known) */
	struct json_object *disks;
	int64_t started; /* seconds since the epoch */
	/* /dev/fuse through the daemon (fuse_channel.h): the request counts,
	 * and whether the daemon clears setuid, setgid and security.capability
	 * (hy_ops_kill_privs); NULL: libfuse's own reads. Owned by main; set
	 * before the session loop. */
	struct hy_fuse_channel *channel;
	/* passthrough=excluded (passthrough.h): the open files the kernel
	 * reads and writes itself; NULL with passthrough=off. Owned here:
	 * hy_fs_open_passthrough(), before the session loop. */
	struct hy_fs_passthrough *passthrough;
};

/* Parts of "status" (fs/status.c puts them together): BORG's (the
 * engine's BOPT counters with it), the cache's, a device's counters (the
 * backing device, the BOPT), and the policy a process follows (@t: the
 * table in force; fs/policy_glue.c). NULL when out of memory. */
struct json_object *hy_fs_borg_status(struct hy_borg *borg, struct hy_engine *engine);
struct json_object *hy_fs_cache_status(struct hy_cache *cache);
struct json_object *hy_fs_device_status(struct hy_device *device);
struct hy_workload_policy_table;
struct hy_reca_process;
/* fs/pin_glue.c: a file opened with its id (ops_files.c; matched once per
 * id and rules generation), its rule returned (HY_RULE_NONE without the
 * cache unless passthrough asks), and the rules' part of "status". */
enum hy_rule hy_fs_pins_opened(struct hy_fs *fs, int fd, uint64_t file_id);
struct json_object *hy_fs_pins_status(struct hy_fs *fs);
/* fs/metrics_glue.c: "metrics" of status, from the figures of @status
 * (the rest of the answer, built already): the totals kept across mounts,
 * fed this mount's figures first, their windows, the snapshots. */
struct hy_fs_metrics;
struct json_object *hy_fs_metrics_status(struct hy_fs_metrics *m, struct json_object *status);
struct json_object *hy_fs_process_policy(struct hy_fs *fs, const struct hy_workload_policy_table *t,
					 const struct hy_reca_process *p);

/* fs/kcache.c: keeping the kernel's caches right (see there). attach
 * after fuse_session_new(), detach before fuse_session_destroy(), with no
 * thread that writes home running by then (the cache and BORG are closed
 * first); the "kernel_cache" part of "status". */
void hy_fs_kcache_attach(struct hy_fs *fs, struct fuse_session *se);
void hy_fs_kcache_detach(struct hy_fs *fs);
struct json_object *hy_fs_kcache_status(struct hy_fs *fs);

/* fs/kfile.c: the backing files of files the kernel opened itself
 * (open=kernel; see there). new in hy_fs_init() (at most @cap kept open,
 * least recently used closed first); close_all when the session loop has
 * ended, before the cache and BORG close (their last close: BOPT writes go
 * home); free in hy_fs_destroy(). forget wraps hy_inode_forget() for the
 * kernel's FORGET: a forgotten inode's file is closed. shed closes up to
 * @count unused ones (out of descriptors); returns how many. status: the
 * "kernel_files" part of "kernel_cache". */
struct hy_fs_kfiles;
int hy_fs_kfiles_new(struct hy_fs *fs, size_t cap);
void hy_fs_kfiles_close_all(struct hy_fs *fs);
void hy_fs_kfiles_free(struct hy_fs *fs);
struct hy_inode;
void hy_fs_kfiles_forget(struct hy_fs *fs, struct hy_inode *inode, uint64_t n);
/* A file just made by CREATE, whose reply then names no handle (once the
 * kernel opens files itself it sends no RELEASE, not even for a created
 * file): @fd, read-write, becomes @inode's kernel file. 0: @fd is owned
 * here; a negative errno: still the caller's. */
struct stat;
struct fuse_req;
int hy_fs_kfiles_adopt(struct hy_fs *fs, struct fuse_req *req, struct hy_inode *inode, int fd,
		       const struct stat *st);
size_t hy_fs_kfiles_shed(struct hy_fs *fs, size_t count);
struct json_object *hy_fs_kfiles_status(struct hy_fs *fs);

/* The largest READ a spliced reply (fs/ops_files.c) can carry in the pipes
 * this process may make: HY_FS_READAHEAD (the largest the kernel sends),
 * less where pipes are limited (the mount then asks for no larger reads:
 * max_read), or -errno with the reason in @why. */
int64_t hy_fs_splice_read_size(char *why, size_t why_size);

#endif
