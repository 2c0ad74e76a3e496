/*
 * kfile.c - backing files for the files the kernel opens itself
 * (open=kernel; FUSE_CAP_NO_OPEN_SUPPORT).
 *
 * Why: every open(2) through FUSE costs a synchronous OPEN and an
 * asynchronous RELEASE, two round trips that a warm grep -rn pays per file
 * while its data and attributes come from the kernel's caches (30 µs a
 * file over the plain directory here: BENCHMARKS.md). Once the daemon
 * answers one OPEN with ENOSYS, the kernel opens every regular file
 * itself, keeps its pages (FOPEN_KEEP_CACHE), and sends READ, WRITE and
 * FSYNC with no handle (fh 0), and no RELEASE. So the daemon opens the
 * backing file at the first such request, read-only, made read-write by
 * the first write (dup3 over the same descriptor: the engine, the profiler
 * and the cache know the file by that number), and keeps it while it is
 * used: the inode's kernel_file.
 *
 * When it is closed: when the kernel forgets the inode; when more than
 * `cap` are open, the least recently used one that no request is using;
 * when the process runs short of descriptors (hy_fs_kfiles_shed); at
 * unmount. A close is the file's last close (hy_ops_file_free): its
 * session writes into the BOPT go home, and a file unlinked meanwhile lets
 * go of its cached blocks. The kernel may still have the file open then; a
 * later request opens it again (by name, or through the O_PATH descriptor
 * that an unlinked entry keeps: inode.h), and gets the data home has.
 *
 * What the rest loses with it (docs/architecture.md): the profiler sees a
 * file's first read or write, not its open, and names the process of that
 * request as the opener; passthrough, which needs an OPEN to name a
 * backing file, is off; the kernel, not the daemon, checks permissions at
 * open (default_permissions), so a mount by a user other than root turns
 * them on; an O_TRUNC open arrives as a SETATTR (no ATOMIC_O_TRUNC).
 *
 * Who calls it: fs/ops_files.c (hy_ops_file_get/put around every request
 * on an open file), fs/ops_names.c (FORGET), fs/ops.c (init, destroy,
 * shedding), fs/main.c (close_all after the session loop), fs/kcache.c
 * (status).
 *
 * Memory: a kernel file is owned by its inode's kernel_file pointer, which
 * holds a reference on the inode (hy_inode_hold) so that the inode outlives
 * the kernel's lookups while the file is open. Locks: kfiles->lock protects
 * every inode's kernel_file, each kernel file's users and the LRU list; it
 * is taken before the inode table's lock, never inside it, and no system
 * call runs under it: files are opened, made writable (dup3) and closed
 * with it released.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hybridfs/inode.h"
#include "hybridfs/log.h"

#include "fs_internal.h"
#include "ops_internal.h"

struct hy_fs_kfiles {
	pthread_mutex_t lock;
	struct hy_file *newest, *oldest; /* every kernel file, by last use */
	size_t count, cap;
	_Atomic uint64_t opened, upgraded, closed, forgotten, evicted, shed;
};

/* Victims are closed a few at a time, with the lock dropped. */
#define KFILE_BATCH 8

int hy_fs_kfiles_new(struct hy_fs *fs, size_t cap)
{
	struct hy_fs_kfiles *kf = calloc(1, sizeof(*kf));

	if (!kf)
		return -ENOMEM;
	pthread_mutex_init(&kf->lock, NULL);
	kf->cap = cap < 16 ? 16 : cap;
	fs->kfiles = kf;
	return 0;
}

/* Under kf->lock. */
static void lru_unlink(struct hy_fs_kfiles *kf, struct hy_file *f)
{
	if (f->newer)
		f->newer->older = f->older;
	else
		kf->newest = f->older;
	if (f->older)
		f->older->newer = f->newer;
	else
		kf->oldest = f->newer;
	f->older = f->newer = NULL;
}

/* Under kf->lock. */
static void lru_push_newest(struct hy_fs_kfiles *kf, struct hy_file *f)
{
	f->newer = NULL;
	f->older = kf->newest;
	if (kf->newest)
		kf->newest->newer = f;
	else
		kf->oldest = f;
	kf->newest = f;
}

/* Under kf->lock: @f leaves its inode and the list; the caller closes it. */
static void detach(struct hy_fs_kfiles *kf, struct hy_file *f)
{
	lru_unlink(kf, f);
	f->inode->kernel_file = NULL;
	kf->count--;
}

/* The last close of @f, with no lock held. */
static void kfile_close(struct hy_fs *fs, struct hy_file *f)
{
	struct hy_inode *inode = f->inode;
	int rc = hy_ops_file_free(fs, f);

	if (rc < 0)
		hy_log(LOG_WARNING, "fs: inode %llu: closing the file the kernel opened: %s",
		       (unsigned long long)inode->ino, strerror(-rc));
	hy_inode_release(fs->inodes, inode);
	atomic_fetch_add_explicit(&fs->kfiles->closed, 1, memory_order_relaxed);
}

/* Under kf->lock: detaches up to @max unused files, least recently used
 * first, while more than @keep are open; returns how many went to @out. */
static size_t take_unused(struct hy_fs_kfiles *kf, size_t keep, struct hy_file **out, size_t max)
{
	struct hy_file *f = kf->oldest;
	size_t n = 0;

	while (f && n < max && kf->count > keep) {
		struct hy_file *newer = f->newer;

		if (f->users == 0) {
			detach(kf, f);
			out[n++] = f;
		}
		f = newer;
	}
	return n;
}

/* Opens @inode's backing file once, with @flags, by the name or the
 * descriptor the table has for it, and checks that it is that inode. */
static int open_backing_once(struct hy_fs *fs, struct hy_inode *inode, int flags, struct stat *st)
{
	struct hy_inode_ref ref;
	int fd = -1, rc;

	rc = hy_inode_pin(fs->inodes, inode, false, &ref);
	if (rc)
		return rc;
	for (int attempt = 0; attempt < 2; attempt++) {
		fd = ref.self ? open(ref.path, flags | O_CLOEXEC)
			      : openat(ref.dirfd, ref.name, flags | O_CLOEXEC | O_NOFOLLOW);
		rc = fd < 0 ? -errno : 0;
		if (!hy_ops_out_of_descriptors(fs, rc))
			break;
	}
	hy_inode_unpin(fs->inodes, &ref);
	if (rc)
		return rc;
	if (fstat(fd, st) < 0 || st->st_ino != inode->ino || st->st_dev != inode->dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* A descriptor of @inode's backing file. The kernel opened the file long
 * ago, perhaps, and a rename through the mount may be between its
 * renameat2(2) and the table's new name for the file right now (the
 * request that asks has the file open, so it is there): the name taken
 * then is gone, or another file's, and the next look finds the new one,
 * or the file's own descriptor that the rename pinned. A few looks; what
 * still fails was changed behind the mount. */
#define OPEN_LOOKS 8

static int open_backing(struct hy_fs *fs, struct hy_inode *inode, int flags, struct stat *st)
{
	int fd = -ENOENT;

	for (int look = 0; look < OPEN_LOOKS; look++) {
		fd = open_backing_once(fs, inode, flags, st);
		if (fd != -ENOENT && fd != -ESTALE)
			break;
		sched_yield();
	}
	return fd;
}

/* A new kernel file for @inode, read-write with @writable. */
static struct hy_file *kfile_open(struct hy_fs *fs, fuse_req_t req, struct hy_inode *inode,
				  bool writable, int *rc)
{
	struct fuse_file_info fi = {.flags = writable ? O_RDWR : O_RDONLY};
	struct hy_file *f;
	struct stat st;
	int fd;

	if (inode->type != S_IFREG) {
		*rc = inode->type == S_IFDIR ? -EISDIR : -EINVAL;
		return NULL;
	}
	fd = open_backing(fs, inode, fi.flags, &st);
	if (fd < 0) {
		*rc = fd;
		return NULL;
	}
	hy_inode_hold(fs->inodes, inode);
	*rc = hy_ops_file_new(fs, req, inode, fd, &st, &fi);
	if (*rc) {
		close(fd);
		hy_inode_release(fs->inodes, inode);
		return NULL;
	}
	f = hy_ops_file_of(&fi);
	f->kernel_opened = true;
	atomic_store(&f->writable, writable);
	return f;
}

/* Makes @f's descriptor read-write: the same number, so that the engine,
 * the cache and the profiler, which know it, go on with it; a request
 * reading through the old description meanwhile finishes on it. */
static int upgrade(struct hy_fs *fs, struct hy_file *f)
{
	struct stat st;
	int fd = open_backing(fs, f->inode, O_RDWR, &st);

	if (fd < 0)
		return fd;
	if (dup3(fd, f->fd, O_CLOEXEC) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	close(fd);
	atomic_store(&f->writable, true);
	atomic_fetch_add_explicit(&fs->kfiles->upgraded, 1, memory_order_relaxed);
	return 0;
}

/* Makes @fresh @inode's kernel file with @users requests on it, unless
 * another request made one meanwhile: that one gets them, and @fresh is
 * the caller's to close. Returns the kernel file. Closes what the cap
 * then leaves over. */
static struct hy_file *install(struct hy_fs *fs, struct hy_inode *inode, struct hy_file *fresh,
			       unsigned users)
{
	struct hy_fs_kfiles *kf = fs->kfiles;
	struct hy_file *f, *victims[KFILE_BATCH];
	size_t n = 0;

	pthread_mutex_lock(&kf->lock);
	f = inode->kernel_file;
	if (f) {
		f->users += users;
	} else {
		f = fresh;
		inode->kernel_file = f;
		f->users = users;
		lru_push_newest(kf, f);
		kf->count++;
		n = take_unused(kf, kf->cap, victims, KFILE_BATCH);
	}
	pthread_mutex_unlock(&kf->lock);
	if (f == fresh)
		atomic_fetch_add_explicit(&kf->opened, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&kf->evicted, n, memory_order_relaxed);
	for (size_t i = 0; i < n; i++)
		kfile_close(fs, victims[i]);
	return f;
}

int hy_fs_kfiles_adopt(struct hy_fs *fs, fuse_req_t req, struct hy_inode *inode, int fd,
		       const struct stat *st)
{
	struct fuse_file_info fi = {.flags = O_RDWR};
	struct hy_file *f;
	int rc;

	hy_inode_hold(fs->inodes, inode);
	rc = hy_ops_file_new(fs, req, inode, fd, st, &fi);
	if (rc) {
		hy_inode_release(fs->inodes, inode);
		return rc;
	}
	f = hy_ops_file_of(&fi);
	f->kernel_opened = true;
	atomic_store(&f->writable, true);
	if (install(fs, inode, f, 0) != f)
		kfile_close(fs, f);
	return 0;
}

struct hy_file *hy_ops_file_get(struct hy_fs *fs, fuse_req_t req, fuse_ino_t ino,
				struct fuse_file_info *fi, enum hy_kfile_access access, int *rc)
{
	struct hy_fs_kfiles *kf = fs->kfiles;
	struct hy_inode *inode;
	struct hy_file *f;
	bool write = access != HY_KFILE_READ;

	*rc = 0;
	if (fi && fi->fh)
		return hy_ops_file_of(fi);
	/* no handle: only a kernel that opens files itself sends that */
	if (!fs->kernel_opens_files || !kf) {
		*rc = -EBADF;
		return NULL;
	}
	inode = hy_ops_inode_of(fs, ino);
	pthread_mutex_lock(&kf->lock);
	f = inode->kernel_file;
	if (f) {
		f->users++;
		lru_unlink(kf, f);
		lru_push_newest(kf, f);
	}
	pthread_mutex_unlock(&kf->lock);
	if (!f) {
		struct hy_file *fresh = kfile_open(fs, req, inode, write, rc);

		if (!fresh && write && access == HY_KFILE_WRITE_IF_CAN)
			fresh = kfile_open(fs, req, inode, false, rc);
		if (!fresh)
			return NULL;
		f = install(fs, inode, fresh, 1);
		if (f != fresh)
			kfile_close(fs, fresh);
	}
	if (write && !atomic_load(&f->writable)) {
		int up = upgrade(fs, f);

		if (up < 0 && access == HY_KFILE_WRITE) {
			hy_ops_file_put(fs, f);
			*rc = up;
			return NULL;
		}
	}
	return f;
}

void hy_ops_file_put(struct hy_fs *fs, struct hy_file *file)
{
	struct hy_fs_kfiles *kf = fs->kfiles;

	if (!file || !file->kernel_opened)
		return;
	pthread_mutex_lock(&kf->lock);
	file->users--;
	pthread_mutex_unlock(&kf->lock);
}

void hy_fs_kfiles_forget(struct hy_fs *fs, struct hy_inode *inode, uint64_t n)
{
	struct hy_fs_kfiles *kf = fs->kfiles;
	struct hy_file *f = NULL;
	bool close_now = false;

	/* held across the forget, the file keeps the inode alive to look at */
	if (kf) {
		pthread_mutex_lock(&kf->lock);
		f = inode->kernel_file;
		if (f)
			f->users++;
		pthread_mutex_unlock(&kf->lock);
	}
	hy_inode_forget(fs->inodes, inode, n);
	if (!f)
		return;
	pthread_mutex_lock(&kf->lock);
	f->users--;
	if (f->users == 0 && inode->kernel_file == f && hy_inode_forgotten(fs->inodes, inode)) {
		detach(kf, f);
		close_now = true;
	}
	pthread_mutex_unlock(&kf->lock);
	if (close_now) {
		atomic_fetch_add_explicit(&kf->forgotten, 1, memory_order_relaxed);
		kfile_close(fs, f);
	}
}

size_t hy_fs_kfiles_shed(struct hy_fs *fs, size_t count)
{
	struct hy_fs_kfiles *kf = fs->kfiles;
	struct hy_file *victims[KFILE_BATCH];
	size_t done = 0, n;

	if (!kf)
		return 0;
	do {
		pthread_mutex_lock(&kf->lock);
		n = take_unused(kf, 0, victims,
				count - done < KFILE_BATCH ? count - done : KFILE_BATCH);
		pthread_mutex_unlock(&kf->lock);
		for (size_t i = 0; i < n; i++)
			kfile_close(fs, victims[i]);
		done += n;
	} while (n > 0 && done < count);
	atomic_fetch_add_explicit(&kf->shed, done, memory_order_relaxed);
	return done;
}

void hy_fs_kfiles_close_all(struct hy_fs *fs)
{
	struct hy_fs_kfiles *kf = fs->kfiles;
	struct hy_file *victims[KFILE_BATCH];
	size_t n;

	if (!kf)
		return;
	/* no request is in flight: every file is unused */
	do {
		pthread_mutex_lock(&kf->lock);
		n = take_unused(kf, 0, victims, KFILE_BATCH);
		pthread_mutex_unlock(&kf->lock);
		for (size_t i = 0; i < n; i++)
			kfile_close(fs, victims[i]);
	} while (n > 0);
}

void hy_fs_kfiles_free(struct hy_fs *fs)
{
	struct hy_fs_kfiles *kf = fs->kfiles;

	if (!kf)
		return;
	/* files still here are on fs->handles, closed by hy_fs_destroy() */
	pthread_mutex_destroy(&kf->lock);
	free(kf);
	fs->kfiles = NULL;
}

static void add_u64(struct json_object *o, const char *key, _Atomic uint64_t *v)
{
	json_object_object_add(
		o, key, json_object_new_uint64(atomic_load_explicit(v, memory_order_relaxed)));
}

struct json_object *hy_fs_kfiles_status(struct hy_fs *fs)
{
	struct hy_fs_kfiles *kf = fs->kfiles;
	struct json_object *o = json_object_new_object();
	size_t count;

	if (!o || !kf)
		return o;
	pthread_mutex_lock(&kf->lock);
	count = kf->count;
	pthread_mutex_unlock(&kf->lock);
	json_object_object_add(o, "open_now", json_object_new_uint64(count));
	json_object_object_add(o, "cap", json_object_new_uint64(kf->cap));
	add_u64(o, "opened", &kf->opened);
	add_u64(o, "made_writable", &kf->upgraded);
	add_u64(o, "closed", &kf->closed);
	add_u64(o, "closed_forgotten", &kf->forgotten);
	add_u64(o, "closed_least_used", &kf->evicted);
	add_u64(o, "closed_short_of_descriptors", &kf->shed);
	return o;
}
