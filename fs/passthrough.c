/* passthrough.c - the open files the kernel reads and writes itself; see
 * include/hybridfs/passthrough.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "fs_internal.h"
#include "hybridfs/cache.h"
#include "hybridfs/engine.h"
#include "hybridfs/fuse_channel.h"
#include "hybridfs/inode.h"
#include "hybridfs/log.h"
#include "hybridfs/passthrough.h"

struct hy_fs_passthrough {
	pthread_mutex_t stripes[HY_PASSTHROUGH_STRIPES];
	_Atomic uint64_t opened;   /* opens that registered a backing file */
	_Atomic uint64_t joined;   /* opens that took an inode's id already there */
	_Atomic uint64_t open_now; /* inodes with a backing id */
	_Atomic uint64_t refused[HY_PASSTHROUGH_REFUSAL_COUNT];
	pthread_mutex_t last_lock; /* a leaf, over last */
	char last[256];		   /* the last refusal, for status */
};

static const char *const refusal_names[HY_PASSTHROUGH_REFUSAL_COUNT] = {
	[HY_PASSTHROUGH_OTHER_HANDLES] = "other_handles",
	[HY_PASSTHROUGH_BOPT_COPIES] = "bopt_copies",
	[HY_PASSTHROUGH_CACHE_ERROR] = "cache_error",
	[HY_PASSTHROUGH_IOCTL] = "ioctl",
};

int hy_fs_open_passthrough(struct hy_fs *fs)
{
	struct hy_fs_passthrough *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return -ENOMEM;
	for (int i = 0; i < HY_PASSTHROUGH_STRIPES; i++)
		pthread_mutex_init(&pt->stripes[i], NULL);
	pthread_mutex_init(&pt->last_lock, NULL);
	fs->passthrough = pt;
	return 0;
}

void hy_fs_close_passthrough(struct hy_fs *fs)
{
	struct hy_fs_passthrough *pt = fs->passthrough;

	if (!pt)
		return;
	for (int i = 0; i < HY_PASSTHROUGH_STRIPES; i++)
		pthread_mutex_destroy(&pt->stripes[i]);
	pthread_mutex_destroy(&pt->last_lock);
	free(pt);
	fs->passthrough = NULL;
}

static pthread_mutex_t *stripe(struct hy_fs_passthrough *pt, const struct hy_inode *inode)
{
	uintptr_t h = (uintptr_t)inode;

	/* inodes are heap blocks: the low bits say little */
	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	return &pt->stripes[(h >> 32) % HY_PASSTHROUGH_STRIPES];
}

/* Counted; the first of each reason logged at notice, the others at
 * debug; the text kept for status. */
static void refuse(struct hy_fs_passthrough *pt, enum hy_passthrough_refusal why,
		   const struct hy_inode *inode, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void refuse(struct hy_fs_passthrough *pt, enum hy_passthrough_refusal why,
		   const struct hy_inode *inode, const char *fmt, ...)
{
	char text[200];
	va_list ap;
	bool first = atomic_fetch_add(&pt->refused[why], 1) == 0;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	hy_log(first ? LOG_NOTICE : LOG_DEBUG,
	       "passthrough: inode %llu is served by the daemon: %s (later refusals of this "
	       "kind are logged at debug level)",
	       (unsigned long long)inode->ino, text);
	pthread_mutex_lock(&pt->last_lock);
	snprintf(pt->last, sizeof(pt->last), "inode %llu: %s", (unsigned long long)inode->ino,
		 text);
	pthread_mutex_unlock(&pt->last_lock);
}

/* Before a first passthrough open: the cache's copies of the file leave,
 * its dirty blocks home first (a truncation's path, over the whole file,
 * with no change after it). The file's gate is taken, no stripe held. */
static int drop_cached(struct hy_fs *fs, int fd, uint64_t file_id)
{
	struct hy_cache_file f = {.file_id = file_id, .object = fd};
	int rc;

	if (!fs->cache || !hy_cache_has_blocks(fs->cache, file_id))
		return 0;
	rc = hy_cache_change_begin(fs->cache, &f, 0, UINT64_MAX);
	hy_cache_change_end(fs->cache, &f);
	return rc;
}

int hy_fs_passthrough_open(struct hy_fs *fs, struct hy_inode *inode, int fd, int flags,
			   uint64_t file_id, enum hy_rule rule, bool *drop_pages)
{
	struct hy_fs_passthrough *pt = fs->passthrough;
	bool wanted = rule == HY_RULE_EXCLUDE && file_id;
	pthread_mutex_t *lock;
	unsigned others;
	int id = 0, rc = 0;

	*drop_pages = false;
	if (!pt || inode->type != S_IFREG || !hy_fuse_channel_passthrough(fs->channel))
		return 0;
	if (wanted)
		rc = drop_cached(fs, fd, file_id);
	lock = stripe(pt, inode);
	pthread_mutex_lock(lock);
	if (inode->passthrough_id) {
		/* the kernel wants the same id for every open of the inode */
		id = inode->passthrough_id;
		inode->passthrough_opens++;
		atomic_fetch_add(&pt->joined, 1);
	} else if (!wanted) {
		*drop_pages = inode->passthrough_wrote;
		inode->passthrough_wrote = false;
	} else if (rc < 0) {
		refuse(pt, HY_PASSTHROUGH_CACHE_ERROR, inode,
		       "its cached blocks cannot go home first: %s", strerror(-rc));
	} else if ((others = atomic_load(&inode->opens) - 1) > 0) {
		/* this open's own handle is counted already (file_new) */
		refuse(pt, HY_PASSTHROUGH_OTHER_HANDLES, inode,
		       "%u other handle%s of it open through the daemon", others,
		       others == 1 ? " is" : "s are");
	} else if (hy_engine_has_copies(fs->engine, file_id)) {
		refuse(pt, HY_PASSTHROUGH_BOPT_COPIES, inode,
		       "it has blocks in the BOPT (or cached again since they were dropped)");
	} else if ((id = hy_fuse_channel_backing_open(fs->channel, fd)) < 0) {
		refuse(pt, HY_PASSTHROUGH_IOCTL, inode,
		       "the kernel refused its backing file (FUSE_DEV_IOC_BACKING_OPEN): %s%s",
		       strerror(-id),
		       id == -EPERM ? " (the daemon needs CAP_SYS_ADMIN)"
		       : id == -ELOOP
			       ? " (the backing filesystem stacks deeper than max_stack_depth)"
			       : "");
		id = 0;
	} else {
		inode->passthrough_id = id;
		inode->passthrough_opens = 1;
		atomic_fetch_add(&pt->opened, 1);
		atomic_fetch_add(&pt->open_now, 1);
	}
	if (id && ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)))
		inode->passthrough_wrote = true;
	pthread_mutex_unlock(lock);
	return id;
}

void hy_fs_passthrough_release(struct hy_fs *fs, struct hy_inode *inode)
{
	struct hy_fs_passthrough *pt = fs->passthrough;
	pthread_mutex_t *lock;
	int id = 0, rc;

	if (!pt)
		return;
	lock = stripe(pt, inode);
	pthread_mutex_lock(lock);
	if (inode->passthrough_opens && --inode->passthrough_opens == 0) {
		id = inode->passthrough_id;
		inode->passthrough_id = 0;
	}
	pthread_mutex_unlock(lock);
	if (!id)
		return;
	atomic_fetch_sub(&pt->open_now, 1);
	/* after the last release: the kernel left the inode's passthrough
	 * mode before it sent RELEASE (fuse_file_put) */
	rc = hy_fuse_channel_backing_close(fs->channel, id);
	if (rc < 0 && rc != -ENOTCONN)
		hy_log(LOG_WARNING, "passthrough: inode %llu: backing id %d cannot be closed: %s",
		       (unsigned long long)inode->ino, id, strerror(-rc));
}

struct json_object *hy_fs_passthrough_status(struct hy_fs *fs)
{
	struct hy_fs_passthrough *pt = fs->passthrough;
	struct json_object *o, *r;

	if (!pt || !(o = json_object_new_object()))
		return NULL;
	json_object_object_add(o, "mode", json_object_new_string("excluded"));
	json_object_object_add(o, "opened",
			       json_object_new_int64((int64_t)atomic_load(&pt->opened)));
	json_object_object_add(o, "joined",
			       json_object_new_int64((int64_t)atomic_load(&pt->joined)));
	json_object_object_add(o, "open_now",
			       json_object_new_int64((int64_t)atomic_load(&pt->open_now)));
	r = json_object_new_object();
	for (int i = 0; r && i < HY_PASSTHROUGH_REFUSAL_COUNT; i++)
		json_object_object_add(
			r, refusal_names[i],
			json_object_new_int64((int64_t)atomic_load(&pt->refused[i])));
	json_object_object_add(o, "refused", r);
	pthread_mutex_lock(&pt->last_lock);
	json_object_object_add(o, "last_refusal",
			       pt->last[0] ? json_object_new_string(pt->last) : NULL);
	pthread_mutex_unlock(&pt->last_lock);
	return o;
}
