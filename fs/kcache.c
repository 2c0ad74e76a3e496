/*
 * kcache.c - the kernel's caches of the mount's names, attributes and
 * directory listings, and what keeps them right.
 *
 * What it is for: every metadata round trip the kernel can answer itself
 * is one the daemon does not serve (issue 20). The kernel keeps a name
 * for its entry timeout, a missing name for the negative timeout, a
 * node's attributes for the attribute timeout (the mount's options,
 * lib/options.c; longer for a metadata-heavy process, ReCA's priority in
 * hy_ops_count_meta), and a directory's listing (FOPEN_CACHE_DIR) until
 * the directory changes. What stays right, and who sees to it:
 *
 * - A change made through the mount: the kernel itself. Its reply
 *   carries the new attributes (setattr, link, the creating calls), and
 *   the kernel drops what the change made stale: the parent's
 *   attributes and listing (its iversion moves), the victim's link count
 *   (unlink, rename over it), the ACLs it keeps (setxattr). One node id
 *   per backing inode (inode.h) means every name, hard links included,
 *   shares those attributes. The daemon also tells the kernel after each
 *   namespace change (hy_fs_kcache_inval_dir, hy_fs_kcache_inval_attr):
 *   the same drops again, made by the one who knows the change happened,
 *   for whatever the kernel's own bookkeeping misses.
 * - A change the daemon makes behind the kernel's back: the cache's
 *   cleaner and BORG's flush write blocks home and put the file's
 *   modification time back, which moves its ctime (and its block count).
 *   The backing device tells home_changed() here (device.h), which finds
 *   the file's node and invalidates its attributes. A reorganization
 *   only reads home files and writes the BOPT; its flush of dirty BOPT
 *   blocks home is such a write.
 * - A change made in the backing directory itself while mounted (by a
 *   process that had it open before a mount in place, or by path):
 *   nobody tells the kernel. The timeouts bound how long it may be
 *   missed; they are options, and 0 turns the caches off. A watch on the
 *   backing tree (inotify, fanotify) was weighed and left out:
 *   inotify needs a watch per directory against a per-user limit that
 *   editors and IDEs share, and reports the daemon's own changes (every
 *   write through the mount) the same as anyone's; fanotify on the whole
 *   filesystem needs root and reports every change on it, far beyond the
 *   tree; neither sees writes through a shared mapping, and both would
 *   only shorten the window, never close it (docs/architecture.md,
 *   "The kernel's caches").
 *
 * Listings: an opendir keeps the kernel's listing while the entries
 * that came with it are fresh (hy_fs_kcache_keep_listing). After that
 * the listing is made again: each readdirplus reply brings some twenty
 * entries with their attributes, where a kept listing would leave every
 * expired name to a LOOKUP of its own once a program stats it (ls -l,
 * git status, make).
 *
 * opendir=kernel (the default where the kernel offers it): the daemon
 * answers the first OPENDIR "not implemented", and from then on the
 * kernel opens every folder itself, with no OPENDIR or RELEASEDIR, and
 * keeps each listing it reads until it sees the folder change (its own
 * changes, or a new modification time once its attributes are asked
 * again). The entries' attributes that came with a readdirplus listing
 * expire with their timeouts, and a kept listing would then leave each
 * name to a LOOKUP of its own; and a change behind the mount in the
 * same tick of the clock as the listing leaves the time as it was. So
 * the sweeper here drops each listing (an invalidation of the folder's
 * pages) once its entries expire: the kernel's listing is never older
 * than the entry timeout, as with opendir=daemon, and the next opendir
 * lists again, some twenty entries with their attributes a request.
 * Its thread sleeps on a heap of (when, folder), one entry per listing
 * read whole; a folder listed again since is skipped (listed_until
 * moved on).
 *
 * Who calls it: fs/ops_names.c and fs/ops_dirs.c (invalidations after
 * their changes, listings), the backing device's changed hook (the
 * cleaner's and the reconfigurator's threads, requests that send blocks
 * home at close or fsync), fs/main.c (attach, detach), fs/status.c.
 *
 * Memory: the sweeper and its heap, from attach to detach; the session
 * is main's. Locks: the sweeper's mutex, over its heap only; the inode
 * table's lock for one hash lookup in home_changed() and the sweeper,
 * never held across a notice. A notice of attributes only never blocks in the
 * kernel, so it may be sent from inside a request; one that drops a
 * listing takes the listing's page locks, and is sent after the reply.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <fuse_lowlevel.h>
#include <json-c/json.h>

#include "hybridfs/device.h"
#include "hybridfs/inode.h"
#include "hybridfs/log.h"
#include "hybridfs/options.h"

#include "fs_internal.h"
#include "ops_internal.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One notice: @off < 0 for the attributes only, 0 for the attributes and
 * every cached page (a directory's listing). */
static void notify_inode(struct hy_fs *fs, fuse_ino_t ino, off_t off)
{
	struct fuse_session *se = atomic_load(&fs->session);
	int rc;

	if (!se)
		return;
	rc = fuse_lowlevel_notify_inval_inode(se, ino, off, 0);
	atomic_fetch_add_explicit(&fs->kcache.invalidations, 1, memory_order_relaxed);
	/* ENOENT: the kernel holds nothing of it, nothing to drop; ENOTCONN,
	 * ENODEV, EBADF: before the session's INIT, once the kernel has let
	 * go of the mount (the cache writes everything home after that),
	 * after the unmount */
	if (rc == 0 || rc == -ENOENT || rc == -ENOTCONN || rc == -ENODEV || rc == -EBADF)
		return;
	atomic_fetch_add_explicit(&fs->kcache.invalidation_errors, 1, memory_order_relaxed);
	hy_log_debug("kcache: node %llu: the kernel refused an invalidation: %s",
		     (unsigned long long)ino, strerror(-rc));
}

void hy_fs_kcache_inval_attr(struct hy_fs *fs, fuse_ino_t ino)
{
	notify_inode(fs, ino, -1);
}

void hy_fs_kcache_inval_dir(struct hy_fs *fs, fuse_ino_t ino)
{
	/* The folder's listed_until stays: it says how fresh the entries
	 * of its last listing are, which this change does not alter, and a
	 * listing dropped here is read again whatever an opendir says. */
	notify_inode(fs, ino, 0);
}

bool hy_fs_kcache_keep_listing(struct hy_fs *fs, struct hy_inode *dir)
{
	int64_t until = atomic_load_explicit(&dir->listed_until, memory_order_relaxed);
	bool keep = until != 0 && now_ns() < until;

	atomic_fetch_add_explicit(keep ? &fs->kcache.listings_kept : &fs->kcache.listings_renewed,
				  1, memory_order_relaxed);
	return keep;
}

int64_t hy_fs_kcache_listing_begins(void)
{
	return now_ns();
}

/* A listing the kernel keeps (opendir=kernel), to drop at @until. */
struct listing_due {
	int64_t until;
	dev_t dev;
	ino_t ino;
};

struct hy_fs_kcache_sweeper {
	struct hy_fs *fs;
	pthread_mutex_t lock;	  /* protects the rest */
	pthread_cond_t wake;	  /* on CLOCK_MONOTONIC */
	struct listing_due *heap; /* a min-heap on until */
	size_t count, capacity;
	bool stopping;
	pthread_t thread;
};

static void heap_swap(struct listing_due *a, struct listing_due *b)
{
	struct listing_due t = *a;

	*a = *b;
	*b = t;
}

static int heap_push(struct hy_fs_kcache_sweeper *sw, const struct listing_due *due)
{
	size_t i;

	if (sw->count == sw->capacity) {
		size_t capacity = sw->capacity ? 2 * sw->capacity : 256;
		struct listing_due *heap = realloc(sw->heap, capacity * sizeof(*heap));

		if (!heap)
			return -ENOMEM;
		sw->heap = heap;
		sw->capacity = capacity;
	}
	i = sw->count++;
	sw->heap[i] = *due;
	while (i > 0 && sw->heap[(i - 1) / 2].until > sw->heap[i].until) {
		heap_swap(&sw->heap[(i - 1) / 2], &sw->heap[i]);
		i = (i - 1) / 2;
	}
	return 0;
}

static struct listing_due heap_pop(struct hy_fs_kcache_sweeper *sw)
{
	struct listing_due top = sw->heap[0];
	size_t i = 0;

	sw->heap[0] = sw->heap[--sw->count];
	for (;;) {
		size_t least = i, left = 2 * i + 1, right = left + 1;

		if (left < sw->count && sw->heap[left].until < sw->heap[least].until)
			least = left;
		if (right < sw->count && sw->heap[right].until < sw->heap[least].until)
			least = right;
		if (least == i)
			return top;
		heap_swap(&sw->heap[i], &sw->heap[least]);
		i = least;
	}
}

static void drop_listing(struct hy_fs *fs, const struct listing_due *due)
{
	struct hy_inode *dir = hy_inode_find_listed(fs->inodes, due->dev, due->ino, due->until);

	if (!dir)
		return; /* forgotten, or listed again since */
	atomic_fetch_add_explicit(&fs->kcache.listings_dropped, 1, memory_order_relaxed);
	notify_inode(fs, hy_ops_ino_of(fs, dir), 0);
}

static void *sweeper_main(void *arg)
{
	struct hy_fs_kcache_sweeper *sw = arg;

	pthread_mutex_lock(&sw->lock);
	while (!sw->stopping) {
		struct listing_due due;
		struct timespec at;

		if (sw->count == 0) {
			pthread_cond_wait(&sw->wake, &sw->lock);
			continue;
		}
		if (sw->heap[0].until > now_ns()) {
			at.tv_sec = (time_t)(sw->heap[0].until / 1000000000);
			at.tv_nsec = (long)(sw->heap[0].until % 1000000000);
			pthread_cond_timedwait(&sw->wake, &sw->lock, &at);
			continue;
		}
		due = heap_pop(sw);
		pthread_mutex_unlock(&sw->lock);
		drop_listing(sw->fs, &due);
		pthread_mutex_lock(&sw->lock);
	}
	pthread_mutex_unlock(&sw->lock);
	return NULL;
}

static int sweeper_start(struct hy_fs *fs)
{
	struct hy_fs_kcache_sweeper *sw = calloc(1, sizeof(*sw));
	pthread_condattr_t attr;
	int rc;

	if (!sw)
		return -ENOMEM;
	sw->fs = fs;
	rc = pthread_condattr_init(&attr);
	if (rc == 0) {
		rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		if (rc == 0)
			rc = pthread_cond_init(&sw->wake, &attr);
		pthread_condattr_destroy(&attr);
	}
	if (rc) {
		free(sw);
		return -rc;
	}
	pthread_mutex_init(&sw->lock, NULL);
	rc = pthread_create(&sw->thread, NULL, sweeper_main, sw);
	if (rc) {
		pthread_cond_destroy(&sw->wake);
		pthread_mutex_destroy(&sw->lock);
		free(sw);
		return -rc;
	}
	fs->kcache_sweeper = sw;
	return 0;
}

static void sweeper_stop(struct hy_fs *fs)
{
	struct hy_fs_kcache_sweeper *sw = fs->kcache_sweeper;
	int rc;

	if (!sw)
		return;
	pthread_mutex_lock(&sw->lock);
	sw->stopping = true;
	pthread_cond_signal(&sw->wake);
	pthread_mutex_unlock(&sw->lock);
	rc = pthread_join(sw->thread, NULL);
	if (rc)
		hy_log(LOG_ERR, "kcache: cannot join the listings' sweeper: %s", strerror(rc));
	pthread_cond_destroy(&sw->wake);
	pthread_mutex_destroy(&sw->lock);
	free(sw->heap);
	free(sw);
	fs->kcache_sweeper = NULL;
}

bool hy_fs_kcache_can_keep_listings(struct hy_fs *fs)
{
	return fs->kcache_sweeper != NULL;
}

/* opendir=kernel: @dir's listing is dropped once its entries expire;
 * false when it cannot wait (no memory), and the caller drops it. */
static bool listed_by_kernel(struct hy_fs *fs, struct hy_inode *dir, int64_t began, double timeout)
{
	struct hy_fs_kcache_sweeper *sw = fs->kcache_sweeper;
	struct listing_due due = {
		.until = began + (timeout > 0 ? (int64_t)(timeout * 1e9) : 0),
		.dev = dir->dev,
		.ino = dir->ino,
	};
	int rc;

	atomic_store_explicit(&dir->listed_until, due.until, memory_order_relaxed);
	pthread_mutex_lock(&sw->lock);
	rc = heap_push(sw, &due);
	if (rc == 0 && sw->heap[0].until == due.until)
		pthread_cond_signal(&sw->wake);
	pthread_mutex_unlock(&sw->lock);
	if (rc == 0)
		return true;
	hy_log_debug("kcache: node %llu: no memory to keep its listing",
		     (unsigned long long)hy_ops_ino_of(fs, dir));
	atomic_store_explicit(&dir->listed_until, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&fs->kcache.listings_dropped, 1, memory_order_relaxed);
	return false;
}

bool hy_fs_kcache_listed(struct hy_fs *fs, struct hy_inode *dir, int64_t began, bool plus,
			 double timeout)
{
	int64_t until;

	if (fs->kernel_opens_dirs)
		return listed_by_kernel(fs, dir, began, timeout);

	/* A timeout of 0 keeps nothing: the next opendir lists again. A
	 * plain listing's entries bring no attributes to go stale: it stays
	 * as long as the folder does not change, which the kernel checks. */
	if (timeout <= 0)
		until = 0;
	else if (!plus)
		until = INT64_MAX;
	else
		until = began + (int64_t)(timeout * 1e9);
	atomic_store_explicit(&dir->listed_until, until, memory_order_relaxed);
	return true;
}

/* The backing device's hook (device.h: hy_device_set_mtime): @object, a
 * descriptor of a home file, was written home behind the kernel. The
 * entry found is used only for its node id, never read: if the kernel
 * forgot it meanwhile and its memory went to another file, that file's
 * attributes are asked again once, which is harmless. */
static void home_changed(void *ctx, int64_t object)
{
	struct hy_fs *fs = ctx;
	struct hy_inode *inode;
	struct stat st;

	atomic_fetch_add_explicit(&fs->kcache.home_changes, 1, memory_order_relaxed);
	if (!atomic_load(&fs->session))
		return;
	if (fstat((int)object, &st) < 0) {
		hy_log_debug("kcache: a file written home: cannot stat it: %s", strerror(errno));
		return;
	}
	inode = hy_inode_find(fs->inodes, st.st_dev, st.st_ino);
	if (inode)
		hy_fs_kcache_inval_attr(fs, hy_ops_ino_of(fs, inode));
}

void hy_fs_kcache_attach(struct hy_fs *fs, struct fuse_session *se)
{
	int rc = fs->entry_timeout > 0 && fs->opendir != HY_OPENDIR_DAEMON ? sweeper_start(fs) : 0;

	if (rc)
		hy_log(LOG_WARNING,
		       "kcache: cannot start the listings' sweeper (%s): the daemon opens "
		       "folders (opendir=daemon)",
		       strerror(-rc));
	hy_device_set_changed_hook(fs->backing, home_changed, fs);
	atomic_store(&fs->session, se);
}

void hy_fs_kcache_detach(struct hy_fs *fs)
{
	atomic_store(&fs->session, NULL);
	sweeper_stop(fs);
}

static void add_u64(struct json_object *obj, const char *key, _Atomic uint64_t *v)
{
	json_object_object_add(
		obj, key, json_object_new_uint64(atomic_load_explicit(v, memory_order_relaxed)));
}

struct json_object *hy_fs_kcache_status(struct hy_fs *fs)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "attr_timeout", json_object_new_double(fs->attr_timeout));
	json_object_object_add(o, "entry_timeout", json_object_new_double(fs->entry_timeout));
	json_object_object_add(o, "negative_timeout", json_object_new_double(fs->negative_timeout));
	json_object_object_add(o, "opendir",
			       json_object_new_string(fs->kernel_opens_dirs ? "kernel" : "daemon"));
	json_object_object_add(
		o, "open", json_object_new_string(fs->kernel_opens_files ? "kernel" : "daemon"));
	if (fs->kernel_opens_files)
		json_object_object_add(o, "kernel_files", hy_fs_kfiles_status(fs));
	json_object_object_add(o, "readdirplus",
			       json_object_new_string(fs->readdirplus_always ? "always" : "auto"));
	add_u64(o, "invalidations", &fs->kcache.invalidations);
	add_u64(o, "invalidation_errors", &fs->kcache.invalidation_errors);
	add_u64(o, "home_changes", &fs->kcache.home_changes);
	add_u64(o, "listings_kept", &fs->kcache.listings_kept);
	add_u64(o, "listings_renewed", &fs->kcache.listings_renewed);
	add_u64(o, "listings_dropped", &fs->kcache.listings_dropped);
	return o;
}
