/*
 * inode.h - the daemon's table of backing inodes the kernel knows about.
 *
 * What it is for: the FUSE kernel module names files by node id; this table
 * maps each node id to a backing inode, keyed by (st_dev, st_ino) so that
 * every hard link of a file is one node and a rename never changes it.
 * An entry lives while the kernel's lookup count is above zero (FUSE's
 * forget protocol) or while a child entry or a running request holds it.
 *
 * Reaching the backing inode without a descriptor per inode: this machine's
 * open-file limit is 20,000, and a home directory has far more files, so an
 * entry does not keep a file descriptor for its life, as libfuse's
 * passthrough_ll does. Each entry records its parent entry and its name
 * there; a request reaches the inode as (parent descriptor, name), with
 * the *at system calls, so paths never grow towards PATH_MAX. Directories
 * keep an O_PATH descriptor in a cache bounded by `fd_cap` and evicted in
 * least-recently-used order; an evicted directory is reopened from its own
 * parent on the next use, and its identity checked: level by level down
 * from the nearest ancestor that still has a descriptor, in a loop, since a
 * chain of directories can be far deeper than a path or a thread's stack. An entry whose name is
 * gone while the kernel still knows it (unlinked while open, or the name
 * moved away by rename) keeps a pinned descriptor instead, taken before
 * the unlink or rename.
 *
 * Who calls it: fs/ops*.c, on every FUSE request that names a node; the
 * unit tests (it has no FUSE dependency).
 *
 * Memory: the table owns its entries, their names and their descriptors.
 * hy_inode_pin() gives a struct hy_inode_ref that holds a descriptor open
 * until hy_inode_unpin().
 *
 * Locks: one mutex, table->lock, protects the hash, the lookup counts,
 * names, parent links, descriptors and the LRU. It is never held across a
 * system call that can block on a disk: openat(2) and fstat(2) run with it
 * released, and a descriptor is closed only after the lock is dropped.
 */
#ifndef HYBRIDFS_INODE_H
#define HYBRIDFS_INODE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct hy_file; /* fs/ops_internal.h */

struct hy_inode {
	dev_t dev; /* with ino: the key; never change */
	ino_t ino;
	mode_t type;		  /* S_IFMT bits; never change */
	_Atomic uint64_t file_id; /* its file id (identity.h) once known, else 0 */
	_Atomic unsigned opens;	  /* open file handles (the kernel keeps the inode) */
	/* Bit 0: no setuid or setgid bit and no security.capability at the
	 * last look, so a write has nothing to clear; the other bits count the
	 * changes that may have added one since (fs/ops.c, hy_ops_kill_privs) */
	_Atomic uint64_t privs;
	/* A directory: until when (CLOCK_MONOTONIC, ns) the listing the
	 * kernel keeps, and the entries that came with it, are fresh; 0:
	 * never listed whole (fs/kcache.c) */
	_Atomic int64_t listed_until;
	/* ... and when the listing being read from its start began (a folder
	 * the kernel opened itself has no handle to keep it in) */
	_Atomic int64_t listing_began;
	/* Passthrough (passthrough.h), under that module's lock stripe of the
	 * inode: the kernel's backing id while handles are open through it
	 * (0: none), how many, and whether one could write since the last
	 * open without it (that open then drops the kernel's page cache). */
	int passthrough_id;
	unsigned passthrough_opens;
	bool passthrough_wrote;
	/* open=kernel (fs/kfile.c, under its lock): the backing file the
	 * daemon opened for the kernel's fh-less reads and writes, or NULL */
	struct hy_file *kernel_file;

	/* protected by table->lock: */
	uint64_t nlookup;	 /* the kernel's lookup count */
	uint64_t refs;		 /* children naming this as parent, running requests */
	struct hy_inode *parent; /* holds a reference; NULL for the root */
	char *name;		 /* name in parent; NULL once unlinked or replaced */
	int fd;			 /* O_PATH descriptor, or -1 */
	unsigned fd_users;	 /* requests using fd now: it may not be closed */
	struct hy_inode *hash_next;
	struct hy_inode *lru_prev, *lru_next; /* in the LRU iff fd is evictable */
	bool in_lru;
};

struct hy_inode_table {
	pthread_mutex_t lock;
	struct hy_inode **buckets; /* protected by lock */
	size_t nbuckets, count;	   /* protected by lock */
	struct hy_inode *root;	   /* never freed before the table */
	struct hy_inode lru;	   /* sentinel: lru.lru_next is the most recent */
	size_t fds_cached;	   /* entries with fd >= 0, root excluded */
	size_t fd_cap;		   /* the most descriptors kept for the cache */
	uint64_t fd_evictions;	   /* statistics */
	uint64_t fd_reopens;
};

/* How a request reaches an inode: `dirfd` and `name` for the *at calls,
 * or `name` "" with `dirfd` the inode itself (AT_EMPTY_PATH). `path` is
 * a /proc/self/fd path to the same inode for calls without an *at form.
 * Without `self`, the name (and a path through it) is resolved again by
 * every call: whoever can write the backing directory may have swapped
 * it by then, so a change is made through a descriptor opened from it and
 * checked (fs/ops_names.c, struct hy_object), never through the name. Valid
 * until hy_inode_unpin(). */
struct hy_inode_ref {
	int dirfd;
	const char *name;
	char name_buf[NAME_MAX + 1];
	char path[64 + NAME_MAX];
	struct hy_inode *holder; /* whose descriptor is pinned */
	bool self;		 /* dirfd is the inode's own descriptor */
};

/* Takes ownership of @root_fd, an O_PATH or directory descriptor of the
 * backing root (closed here on failure). @fd_cap bounds the cached
 * descriptors (at least 16). */
int hy_inode_table_new(int root_fd, size_t fd_cap, struct hy_inode_table **out);
void hy_inode_table_free(struct hy_inode_table *table);

/* Records that the kernel learned of (@parent, @name) with attributes @st:
 * finds or adds the entry, adds one to its lookup count, and makes
 * (@parent, @name) its name. @fd (or -1) is an O_PATH descriptor of it that
 * the table takes over. Returns 0 or -ENOMEM. */
int hy_inode_add_lookup(struct hy_inode_table *table, struct hy_inode *parent, const char *name,
			const struct stat *st, int fd, struct hy_inode **out);

/* The kernel forgets @n lookups; the entry may be freed. */
void hy_inode_forget(struct hy_inode_table *table, struct hy_inode *inode, uint64_t n);

/* A reference that keeps @inode (and its parents) alive after the kernel
 * forgets it, until hy_inode_release(), which may free it; and whether
 * the kernel has forgotten it (lookup count 0). For fs/kfile.c, whose
 * open files outlive the kernel's lookups. */
void hy_inode_hold(struct hy_inode_table *table, struct hy_inode *inode);
void hy_inode_release(struct hy_inode_table *table, struct hy_inode *inode);
bool hy_inode_forgotten(struct hy_inode_table *table, struct hy_inode *inode);

/* Finds an entry by identity, or NULL. No reference is taken: for tests. */
struct hy_inode *hy_inode_find(struct hy_inode_table *table, dev_t dev, ino_t ino);

/* The directory (@dev, @ino) if the kernel knows it and its listed_until
 * is still @until, which is then cleared to 0 (fs/kcache.c: a listing
 * whose entries expired, not one made since); NULL otherwise. As with
 * hy_inode_find(), the pointer is good for its node id only. */
struct hy_inode *hy_inode_find_listed(struct hy_inode_table *table, dev_t dev, ino_t ino,
				      int64_t until);

/* Gives the way to reach @inode (see struct hy_inode_ref). With @want_fd
 * the inode's own descriptor is opened (O_PATH) when it has none, as
 * directories need for use as a dirfd. Returns 0, -ESTALE when the name
 * now leads to another inode, or the error of reopening. */
int hy_inode_pin(struct hy_inode_table *table, struct hy_inode *inode, bool want_fd,
		 struct hy_inode_ref *ref);
void hy_inode_unpin(struct hy_inode_table *table, struct hy_inode_ref *ref);

/* Unlink and rename support. hy_inode_pin_child() finds the entry that
 * (@parent, @name) names, if the table has it and records that very name,
 * and makes sure it holds its own descriptor, so that it stays reachable
 * once the name is gone. Returns the entry (to hand to
 * hy_inode_unpin_child()) or NULL. */
struct hy_inode *hy_inode_pin_child(struct hy_inode_table *table, struct hy_inode *parent,
				    const char *name);
/* After the operation: @gone says the name no longer leads to the entry
 * (unlink or rename succeeded). Accepts NULL. */
void hy_inode_unpin_child(struct hy_inode_table *table, struct hy_inode *child, bool gone);

/* Closes up to @count cached descriptors that no request is using, least
 * recently used first (when the process runs out of descriptors). Returns
 * how many were closed. */
size_t hy_inode_shed(struct hy_inode_table *table, size_t count);

/* Copies @inode's current name (or "" once it has none) into @buf. */
void hy_inode_get_name(struct hy_inode_table *table, struct hy_inode *inode, char *buf,
		       size_t size);

/* A rename of @child succeeded: it is now (@new_parent, @new_name). */
int hy_inode_moved(struct hy_inode_table *table, struct hy_inode *child,
		   struct hy_inode *new_parent, const char *new_name);

#endif
