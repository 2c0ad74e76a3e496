/* ops_files.c - FUSE operations on open files: open and create, read and write through the engine,
 * release, fsync, fallocate, lseek and copy_file_range; see include/hybridfs/fs.h and
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

#include "hybridfs/borg.h"
#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "hybridfs/fuse_channel.h"
#include "fs_internal.h"
#include "hybridfs/inode.h"
#include "hybridfs/log.h"
#include "hybridfs/identity.h"
#include "hybridfs/passthrough.h"
#include "hybridfs/profiler.h"
#include "hybridfs/reca.h"

#include "ops_internal.h"

/* ---- files ------------------------------------------------------------- */

/* On EMFILE or ENFILE, gives back half of the cached directory
 * descriptors, so that the open the user asked for can go ahead; true when
 * the caller should try once more. */
bool hy_ops_out_of_descriptors(struct hy_fs *fs, int rc)
{
	if (rc != -EMFILE && rc != -ENFILE)
		return false;
	/* the folders' descriptors first: reopened by name at no cost */
	return hy_inode_shed(fs->inodes, fs->inodes->fds_cached / 2 + 1) > 0 ||
	       hy_fs_kfiles_shed(fs, 64) > 0;
}

/* What the backing file is opened with, and what FUSE is told. */
static int backing_flags(struct hy_fs *fs, struct fuse_file_info *fi)
{
	int flags = fi->flags & ~(O_NOFOLLOW | O_DIRECT);

	if (fi->flags & O_DIRECT)
		fi->direct_io = 1; /* FUSE bypasses the page cache for us */
	else
		fi->keep_cache = 1; /* changes are noticed by auto_inval_data */
	/* The kernel gives every write its offset, O_APPEND ones at the size
	 * it knows; pwrite(2) on an O_APPEND descriptor would ignore that
	 * offset, and page writeback of a shared mapping would land at the
	 * end of the file. */
	flags &= ~O_APPEND;
	/* With the write-back cache the kernel reads pages to fill partial
	 * writes, even through a write-only handle. */
	if (fs->writeback_cache && (flags & O_ACCMODE) == O_WRONLY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	return flags | O_CLOEXEC;
}

int hy_ops_file_new(struct hy_fs *fs, fuse_req_t req, struct hy_inode *inode, int fd,
		    const struct stat *st, struct fuse_file_info *fi)
{
	struct hy_file *file = calloc(1, sizeof(*file));
	enum hy_rule rule = HY_RULE_NONE;
	bool drop_pages;

	if (!file)
		return -ENOMEM;
	file->fd = fd;
	file->inode = inode;
	atomic_fetch_add(&inode->opens, 1);
	hy_engine_file_init(fs->engine, &file->engine, fd);
	if (fs->profiler) {
		char name[NAME_MAX + 1];
		uint64_t known = atomic_load(&inode->file_id);

		if (!known)
			hy_inode_get_name(fs->inodes, inode, name, sizeof(name));
		/* a file without an id is still served; its requests log id 0 */
		if (hy_profiler_open(fs->profiler, &file->prof, fd, st, known, known ? NULL : name,
				     fuse_req_ctx(req)->pid) < 0)
			hy_log(LOG_WARNING, "profiler: no file id for inode %llu",
			       (unsigned long long)inode->ino);
		file->profiled = true;
		if (!known && file->prof.file_id)
			atomic_store(&inode->file_id, file->prof.file_id);
		/* the indirection map knows files by this id */
		hy_engine_file_set_id(&file->engine, file->prof.file_id);
		/* its pin or exclude, once per id and rules (fs/pin_glue.c) */
		rule = hy_fs_pins_opened(fs, fd, file->prof.file_id);
	}
	/* through the kernel or the daemon (passthrough.h); the flags the
	 * user opened with, which the kernel's backing file gets too */
	file->passthrough_id =
		hy_fs_passthrough_open(fs, inode, fd, fi->flags,
				       file->profiled ? file->prof.file_id : 0, rule, &drop_pages);
	/* The kernel takes FOPEN_PASSTHROUGH with no flag beside it but
	 * DIRECT_IO, PARALLEL_DIRECT_WRITES and NOFLUSH (else EIO:
	 * FOPEN_PASSTHROUGH_MASK, fs/fuse/iomode.c), and DIRECT_IO would
	 * send reads and writes to the daemon after all. */
	if (file->passthrough_id) {
		fi->direct_io = 0;
		fi->keep_cache = 0;
		fi->cache_readdir = 0;
		fi->nonseekable = 0;
	} else if (drop_pages)
		fi->keep_cache = 0; /* written through the kernel since it kept them */
	hy_ops_handle_track(fs, &file->link, false);
	fi->fh = (uint64_t)(uintptr_t)file;
	return 0;
}

/* hy_ops_file_id_of() for an open with O_TRUNC, before it truncates: through
 * the inode's own descriptor, or one opened by its name and checked. */
static uint64_t trunc_file_id(struct hy_fs *fs, struct hy_inode *inode,
			      const struct hy_inode_ref *ref)
{
	uint64_t id = atomic_load(&inode->file_id);
	int fd;

	if (id || !fs->profiler || inode->type != S_IFREG)
		return id;
	if (ref->self)
		return hy_ops_file_id_of(fs, inode, ref->dirfd);
	fd = openat(ref->dirfd, ref->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0; /* the open that follows fails the same way */
	id = hy_ops_file_id_of(fs, inode, fd);
	close(fd);
	return id;
}

static int do_open(struct hy_fs *fs, fuse_req_t req, struct hy_inode *inode,
		   struct fuse_file_info *fi)
{
	struct creds_saved saved = {.switched = false};
	struct hy_inode_ref ref;
	struct stat st, was;
	mode_t before = 0;
	uint64_t trunc_id;
	bool gated, watch;
	int fd, rc, flags = backing_flags(fs, fi);

	rc = hy_inode_pin(fs->inodes, inode, false, &ref);
	if (rc)
		return rc;
	/* An O_TRUNC open that drops setuid or setgid (here, or in the backing
	 * filesystem for a caller without CAP_FSETID) must make the kernel
	 * forget the mode it keeps: with FUSE_HANDLE_KILLPRIV_V2 it neither
	 * drops the bits itself nor refreshes them after OPEN. So the mode
	 * before is taken, unless the file is known to have none. */
	watch = (flags & O_TRUNC) && hy_fuse_channel_killpriv_v2(fs->channel) &&
		!(atomic_load_explicit(&inode->privs, memory_order_acquire) & 1);
	if (watch)
		before = (ref.self ? fstat(ref.dirfd, &was)
				   : fstatat(ref.dirfd, ref.name, &was, AT_SYMLINK_NOFOLLOW)) < 0
				 ? S_ISUID | S_ISGID /* unknown: the kernel forgets it anyway */
				 : was.st_mode;
	/* With FUSE_CAP_ATOMIC_O_TRUNC the kernel sends no setattr for
	 * O_TRUNC, so clearing setuid/setgid on a truncate by a non-owner is
	 * left to the backing filesystem: open as the caller, who (unlike the
	 * daemon) has no CAP_FSETID. */
	if (flags & O_TRUNC)
		rc = hy_ops_creds_enter(fs, req, &saved);
	/* the cache must not write old blocks home across the truncation */
	trunc_id = flags & O_TRUNC ? trunc_file_id(fs, inode, &ref) : 0;
	gated = rc == 0 && hy_engine_truncate_open_begin(fs->engine, trunc_id);
	fd = -1;
	if (rc == 0) {
		for (int attempt = 0; attempt < 2; attempt++) {
			if (ref.self)
				fd = open(ref.path, flags);
			else
				fd = openat(ref.dirfd, ref.name, flags | O_NOFOLLOW);
			rc = fd < 0 ? -errno : 0;
			if (!hy_ops_out_of_descriptors(fs, rc))
				break;
		}
		hy_ops_creds_leave(&saved);
	}
	if (gated)
		hy_engine_truncate_open_end(fs->engine, trunc_id, fd);
	hy_inode_unpin(fs->inodes, &ref);
	if (rc)
		return rc;
	if (fstat(fd, &st) < 0 || st.st_ino != inode->ino || st.st_dev != inode->dev) {
		close(fd);
		return -ESTALE;
	}
	/* a bit or capability set behind the mount is noticed here */
	hy_ops_privs_changed(inode);
	/* what the truncation takes away, beyond what the backing filesystem
	 * took as the caller (fuse_channel.h) */
	rc = (flags & O_TRUNC) ? hy_ops_kill_privs(fs, req, inode, fd, NULL, &st,
						   hy_ops_kill_of_request(), false)
			       : 0;
	if (rc >= 0 && (before & (S_ISUID | S_ISGID)) &&
	    (rc > 0 || (st.st_mode & 07777) != (before & 07777)))
		hy_ops_privs_shown(fs, inode);
	if (rc >= 0)
		rc = hy_ops_file_new(fs, req, inode, fd, &st, fi);
	if (rc)
		close(fd);
	return rc;
}

void hy_ops_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	int rc;

	hy_ops_count_op(fs, HY_OP_OPEN);
	/* open=kernel: the kernel opens this file and every later one itself
	 * (fs/kfile.c) */
	if (fs->kernel_opens_files) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	rc = do_open(fs, req, hy_ops_inode_of(fs, ino), fi);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* the reply's writev, on this thread, names the backing id; once it
	 * is out the handle may be released (and freed) on another thread */
	hy_fuse_channel_reply_passthrough(hy_ops_file_of(fi)->passthrough_id);
	if (fuse_reply_open(req, fi) == -ENOENT)
		hy_ops_file_free(fs, hy_ops_file_of(fi)); /* the caller was interrupted */
}

static int do_create(struct hy_fs *fs, fuse_req_t req, struct hy_inode *parent, const char *name,
		     mode_t mode, struct fuse_file_info *fi, struct fuse_entry_param *e)
{
	struct creds_saved saved;
	struct hy_inode_ref pref;
	struct hy_inode *inode;
	struct stat st;
	int fd = -1, rc, flags;

	if (hy_ops_is_state_entry(fs, parent, name))
		return -EEXIST;
	rc = hy_inode_pin(fs->inodes, parent, true, &pref);
	if (rc)
		return rc;
	rc = hy_ops_creds_enter(fs, req, &saved);
	if (rc)
		goto out;
	flags = backing_flags(fs, fi) | O_CREAT | O_NOFOLLOW;
	/* open=kernel: the inode's kernel file, read-write whatever the
	 * caller asked (a new file may be opened so whatever its mode) */
	if (fs->kernel_opens_files)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	for (int attempt = 0; attempt < 2; attempt++) {
		fd = openat(pref.dirfd, name, flags, mode);
		rc = fd < 0 ? -errno : 0;
		/* a file made meanwhile behind the mount, which the caller
		 * may write but not read: as asked, then (no kernel file) */
		if (rc == -EACCES && fs->kernel_opens_files &&
		    (flags & O_ACCMODE) != (fi->flags & O_ACCMODE)) {
			flags = (flags & ~O_ACCMODE) | (fi->flags & O_ACCMODE);
			attempt--;
			continue;
		}
		if (!hy_ops_out_of_descriptors(fs, rc))
			break;
	}
	hy_ops_creds_leave(&saved);
	if (rc)
		goto out;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	rc = hy_inode_add_lookup(fs->inodes, parent, name, &st, -1, &inode);
	if (rc)
		goto out;
	hy_ops_privs_changed(inode);
	/* an O_TRUNC create that met a file made meanwhile truncated it */
	rc = (fi->flags & O_TRUNC) ? hy_ops_kill_privs(fs, req, inode, fd, NULL, &st,
						       hy_ops_kill_of_request(), false)
				   : 0;
	/* the reply's attributes are the ones after it */
	if (rc > 0)
		rc = fstat(fd, &st) < 0 ? -errno : 0;
	if (rc) {
		hy_inode_forget(fs->inodes, inode, 1);
		goto out;
	}
	hy_ops_entry_fill(fs, e, inode, &st);
	if (fs->kernel_opens_files) {
		/* no handle in the reply: the kernel sends no RELEASE */
		fi->fh = 0;
		fi->keep_cache = 1;
		if ((flags & O_ACCMODE) != O_RDWR || hy_fs_kfiles_adopt(fs, req, inode, fd, &st))
			goto out; /* closed: opened again at its first use */
	} else {
		rc = hy_ops_file_new(fs, req, inode, fd, &st, fi);
		if (rc) {
			hy_inode_forget(fs->inodes, inode, 1);
			goto out;
		}
	}
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	hy_inode_unpin(fs->inodes, &pref);
	return rc;
}

void hy_ops_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		   struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct fuse_entry_param e;
	int rc;

	/* With the kernel's write-back cache, FUSE's atomic create races a
	 * lookup of the same new name: Linux 6.18 can end up with two inodes
	 * for the node, the name leading to the one made from the lookup's
	 * reply, whose size (0) the kernel then keeps (docs/reliability.md,
	 * "The kernel's write-back cache"). Refused, the kernel stops sending
	 * CREATE and makes files with MKNOD and OPEN, which showed no such
	 * inode in any run: one request more per new file. */
	if (fs->writeback_cache) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	rc = do_create(fs, req, hy_ops_inode_of(fs, parent), name, mode, fi, &e);
	hy_ops_count_op(fs, HY_OP_CREATE);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	hy_fuse_channel_reply_passthrough(fi->fh ? hy_ops_file_of(fi)->passthrough_id : 0);
	if (fuse_reply_create(req, &e, fi) == -ENOENT && fi->fh)
		hy_ops_file_free(fs, hy_ops_file_of(fi));
	if (rc == 0) /* after the reply (fs/kcache.c) */
		hy_fs_kcache_inval_dir(fs, parent);
}

/* One buffer per worker thread, grown to the largest request seen: a read
 * costs no allocation once the thread has warmed up. libfuse ends idle
 * workers, so the buffer hangs on a thread key whose destructor frees it.
 * The thread's pipe for spliced replies hangs there too. */
struct read_buffer {
	char *data;
	size_t size;
	int pipe[2]; /* -1: none yet (made at the thread's first spliced read) */
};

/* created by hy_fs_init(), before any worker thread */
pthread_key_t hy_ops_read_buffer_key;

static void reply_pipe_close(struct read_buffer *rb)
{
	for (int i = 0; i < 2; i++) {
		if (rb->pipe[i] >= 0 && close(rb->pipe[i]) != 0)
			hy_log(LOG_WARNING, "fs: closing a reply pipe: %s", strerror(errno));
		rb->pipe[i] = -1;
	}
}

void hy_ops_read_buffer_free(void *p)
{
	struct read_buffer *rb = p;

	reply_pipe_close(rb);
	free(rb->data);
	free(rb);
}

static struct read_buffer *thread_read_buffer(void)
{
	struct read_buffer *rb = pthread_getspecific(hy_ops_read_buffer_key);

	if (rb)
		return rb;
	rb = calloc(1, sizeof(*rb));
	if (!rb)
		return NULL;
	rb->pipe[0] = rb->pipe[1] = -1;
	if (pthread_setspecific(hy_ops_read_buffer_key, rb) != 0) {
		free(rb);
		return NULL;
	}
	return rb;
}

static char *read_buffer_get(size_t size)
{
	struct read_buffer *rb = thread_read_buffer();
	char *grown;

	if (!rb)
		return NULL;
	if (size > rb->size) {
		grown = realloc(rb->data, size);
		if (!grown)
			return NULL;
		rb->data = grown;
		rb->size = size;
	}
	return rb->data;
}

/* The process a read or write is for: the request's, else (a write from
 * the write-back cache, or no pid) the one that opened the handle. */
static pid_t request_pid(const struct hy_file *file, pid_t pid)
{
	return pid > 0 ? pid : file->prof.opener_pid;
}

/* Into the access log, with the class the engine's ReCA gave it. */
static void log_request(struct hy_fs *fs, struct hy_file *file, const struct hy_engine_request *er,
			enum hy_profile_mode mode, off_t off, size_t size, ssize_t done)
{
	struct hy_profile_ticket t;

	hy_profiler_ticket(&file->prof, er->pid, mode, (uint64_t)off, (uint32_t)size, &er->answer,
			   &t);
	hy_profiler_end(fs->profiler, &file->prof, file->fd, &t, done);
}

/* ---- spliced replies -------------------------------------------------------
 *
 * A read of blocks that are home only (no cache in the file's path, none
 * relocated: hy_engine_read_direct_as) is answered from the backing file's
 * pages: splice(2) puts references to them in the thread's pipe, and
 * fuse_reply_data() has the kernel copy them once into the request's pages,
 * where a buffered reply copies each byte twice (pread into the daemon's
 * buffer, writev out of it). BENCHMARKS.md, "Spliced reads". The count is
 * known before the reply, so the profiler logs what was read, as for a
 * buffered one. libfuse moves the pipe's pages into its own pipe, behind
 * the reply's header, and from there to /dev/fuse; where it cannot it
 * reads them back and writes them (correct, the old cost). A request
 * larger than the pipe holds, or one of fewer than two pages (libfuse
 * would write it anyway), goes the buffered way. */

/* The kernel's page: what a pipe's slots hold, and what libfuse reckons
 * its pipe in. */
static unsigned page_bytes(void)
{
	long page = sysconf(_SC_PAGESIZE);

	return page > 0 ? (unsigned)page : 4096u;
}

/* Reads smaller than two pages are not worth a splice (fuse_reply_data()
 * would write them). A pipe holds the READ with a page on either side of
 * an unaligned one; libfuse's, behind the header, up to three pages more:
 * four spare pages. */
#define SPLICE_MIN   (2u * page_bytes())
#define SPLICE_SPARE (4u * page_bytes())

/* Whether a pipe of @bytes can be had: 0 or -errno. */
static int try_pipe(unsigned bytes)
{
	int p[2], rc = 0;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	if (fcntl(p[0], F_SETPIPE_SZ, (int)bytes) < 0)
		rc = -errno;
	for (int i = 0; i < 2; i++)
		if (close(p[i]) != 0)
			hy_log(LOG_WARNING, "fs: closing the splice probe's pipe: %s",
			       strerror(errno));
	return rc;
}

int64_t hy_fs_splice_read_size(char *why, size_t why_size)
{
	unsigned pages = 0, max_bytes = 0, page = page_bytes();
	int rc = try_pipe(HY_FS_READAHEAD + SPLICE_SPARE);
	FILE *f;

	if (rc == 0)
		return HY_FS_READAHEAD;
	if (rc != -EPERM)
		return hy_log_why(rc, why, why_size, "no pipe for a spliced reply: %s",
				  strerror(-rc));
	/* past /proc/sys/fs/pipe-max-size only with CAP_SYS_RESOURCE, which
	 * a container's root may lack: reads then as large as the largest
	 * pipe holds, with room for the spare pages (a size the kernel
	 * rounds up to a power of two pages) */
	f = fopen("/proc/sys/fs/pipe-max-size", "re");
	if (!f || fscanf(f, "%u", &max_bytes) != 1)
		max_bytes = 0;
	if (f)
		fclose(f);
	for (pages = 1; pages * 2u <= max_bytes / page && pages < HY_FS_READAHEAD / page;
	     pages *= 2)
		;
	if (pages * page < 4u * SPLICE_SPARE)
		return hy_log_why(-EPERM, why, why_size,
				  "pipes are limited to %u bytes (/proc/sys/fs/pipe-max-size)",
				  max_bytes);
	rc = try_pipe(pages * page);
	if (rc < 0)
		return hy_log_why(rc, why, why_size, "no pipe of %u KiB for a spliced reply: %s",
				  pages * page / 1024u, strerror(-rc));
	return pages * page - SPLICE_SPARE;
}

/* The thread's pipe, made at its first spliced read: 0, or -errno (then
 * this read goes the buffered way and the next tries again). */
static int reply_pipe(struct read_buffer *rb, uint32_t pipe_bytes)
{
	if (rb->pipe[0] >= 0)
		return 0;
	if (pipe2(rb->pipe, O_CLOEXEC) != 0) {
		rb->pipe[0] = rb->pipe[1] = -1;
		return -errno;
	}
	if (fcntl(rb->pipe[0], F_SETPIPE_SZ, (int)pipe_bytes) < 0) {
		int rc = -errno;

		reply_pipe_close(rb);
		return rc;
	}
	return 0;
}

/* Up to @size bytes at @off of @fd into the (empty) pipe: the count (short
 * only at the end of the file, or at an error after some bytes) or a
 * negative errno. */
static ssize_t splice_in(int fd, int pipe_in, size_t size, off_t off)
{
	loff_t at = off;
	size_t done = 0;

	while (done < size) {
		ssize_t r = splice(fd, &at, pipe_in, NULL, size - done, SPLICE_F_NONBLOCK);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return done ? (ssize_t)done : -errno;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* Counts and logs a read that was served (@n >= 0) or failed. */
static void read_done(struct hy_fs *fs, struct hy_file *file, struct hy_engine_request *er,
		      bool logged, size_t size, off_t off, ssize_t n)
{
	if (logged)
		log_request(fs, file, er, HY_PROFILE_READ, off, size, n);
	if (n < 0)
		return;
	hy_ops_count_op(fs, HY_OP_READ);
	atomic_fetch_add_explicit(&fs->bytes_read, (uint64_t)n, memory_order_relaxed);
	if (fs->borg)
		hy_borg_note_read(fs->borg); /* a chain starting warms its metadata */
}

/* Answers the read with a spliced reply when its blocks are home only;
 * false (nothing asked, nothing sent) when it must go the buffered way.
 * Puts @file back when it answered. */
static bool read_spliced(struct hy_fs *fs, fuse_req_t req, struct hy_file *file,
			 struct hy_engine_request *er, bool logged, size_t size, off_t off)
{
	struct read_buffer *rb = thread_read_buffer();
	struct fuse_bufvec data = FUSE_BUFVEC_INIT(0);
	ssize_t n;
	int fd;

	if (!rb || reply_pipe(rb, fs->splice_max_read + SPLICE_SPARE) < 0)
		return false;
	fd = hy_engine_read_direct_as(fs->engine, &file->engine, logged ? er : NULL, size, off);
	if (fd < 0)
		return false;
	n = splice_in(fd, rb->pipe[1], size, off);
	if (n == -EINVAL || n == -EOPNOTSUPP || n == -ENOSYS) {
		/* a backing filesystem that cannot splice: none of its files
		 * can, so the mount stops trying (ReCA sees this request
		 * twice, once in the mount's life: the buffered read asks too) */
		if (atomic_exchange(&fs->splice_reads, false))
			hy_log(LOG_WARNING,
			       "fs: the backing filesystem cannot splice (%s): reads "
			       "are copied through the daemon",
			       strerror((int)-n));
		return false;
	}
	hy_engine_read_direct_done(fs->engine, &file->engine, off, n);
	read_done(fs, file, er, logged, size, off, n);
	hy_ops_file_put(fs, file); /* the pipe holds the pages */
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return true;
	}
	if (n == 0) {
		fuse_reply_buf(req, NULL, 0);
		return true;
	}
	atomic_fetch_add_explicit(&fs->spliced_reads, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&fs->spliced_bytes, (uint64_t)n, memory_order_relaxed);
	data.buf[0].size = (size_t)n;
	data.buf[0].flags = FUSE_BUF_IS_FD;
	data.buf[0].fd = rb->pipe[0];
	/* an error may leave bytes in the pipe, which the next reply must not
	 * carry: the thread makes a new one */
	if (fuse_reply_data(req, &data, 0) != 0)
		reply_pipe_close(rb);
	return true;
}

void hy_ops_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	int rc;
	struct hy_file *file = hy_ops_file_get(fs, req, ino, fi, HY_KFILE_READ, &rc);
	char *buf;
	bool logged = fs->profiler && size > 0;
	struct hy_engine_request er;
	ssize_t n;

	if (file && size >= SPLICE_MIN && size <= fs->splice_max_read &&
	    atomic_load_explicit(&fs->splice_reads, memory_order_relaxed)) {
		er = (struct hy_engine_request){.pid = request_pid(file, fuse_req_ctx(req)->pid)};
		if (read_spliced(fs, req, file, &er, logged, size, off))
			return;
	}
	buf = read_buffer_get(size);
	if (!file || !buf) {
		hy_ops_file_put(fs, file);
		fuse_reply_err(req, file ? ENOMEM : -rc);
		return;
	}
	er = (struct hy_engine_request){.pid = request_pid(file, fuse_req_ctx(req)->pid)};
	/* the engine classifies it before serving it: the policy of the
	 * process's category applies to it (ReCA), and the log has its class */
	n = hy_engine_read_as(fs->engine, &file->engine, logged ? &er : NULL, buf, size, off);
	read_done(fs, file, &er, logged, size, off, n);
	hy_ops_file_put(fs, file);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	fuse_reply_buf(req, buf, (size_t)n);
}

void hy_ops_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	int rc;
	struct hy_file *file = hy_ops_file_get(fs, req, ino, fi, HY_KFILE_WRITE, &rc);
	bool logged = fs->profiler && size > 0;
	struct hy_engine_request er;
	ssize_t n;

	if (!file) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* A write from the kernel's write-back cache comes from a kernel
	 * thread: it belongs to the process that opened the handle (pid 0). */
	er = (struct hy_engine_request){
		.pid = request_pid(file, fi->writepage ? 0 : fuse_req_ctx(req)->pid)};

	/* what a write takes away, before it, as the VFS does (fuse_channel.h);
	 * nothing but two atomic loads once the file is known clear */
	n = hy_ops_kill_privs(fs, req, file->inode, file->fd, NULL, NULL, hy_ops_kill_of_request(),
			      true);
	if (n < 0) {
		hy_ops_file_put(fs, file);
		fuse_reply_err(req, (int)-n);
		return;
	}
	n = hy_engine_write_as(fs->engine, &file->engine, logged ? &er : NULL, buf, size, off);
	/* A write from the kernel's write-back cache (fi->writepage) that
	 * comes back short is not resent: the kernel takes its pages as
	 * written (fuse_writepage_end looks at no size). So the rest is
	 * written here, and what the backing filesystem cannot take (ENOSPC
	 * on a full disk) fails the request, reaching fsync and close as on
	 * the plain directory, instead of being lost in silence (issue 8). */
	while (fi->writepage && n > 0 && (size_t)n < size) {
		ssize_t more = hy_engine_write_hinted(fs->engine, &file->engine,
						      er.answer.hinted ? &er.answer.hint : NULL,
						      buf + n, size - (size_t)n, off + n);

		if (more <= 0) {
			n = more < 0 ? more : -EIO;
			break;
		}
		n += more;
	}
	if (logged)
		log_request(fs, file, &er, HY_PROFILE_WRITE, off, size, n);
	hy_ops_file_put(fs, file);
	if (n < 0) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	hy_ops_count_op(fs, HY_OP_WRITE);
	atomic_fetch_add_explicit(&fs->bytes_written, (uint64_t)n, memory_order_relaxed);
	fuse_reply_write(req, (size_t)n);
}

void hy_ops_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc;

	/* the file opened when the daemon answered its OPEN with ENOSYS
	 * (open=kernel): nothing was opened for it here */
	if (!fi->fh) {
		fuse_reply_err(req, 0);
		return;
	}
	rc = hy_ops_file_free(hy_ops_fs_of(req), hy_ops_file_of(fi));

	if (rc < 0)
		hy_log(LOG_WARNING, "fs: closing a backing file: %s", strerror(-rc));
	fuse_reply_err(req, 0);
}

void hy_ops_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	int rc;
	/* read-only where it cannot be written: fsync(2) of a file opened
	 * read-only is allowed, and has no cached writes of its own */
	struct hy_file *file = hy_ops_file_get(fs, req, ino, fi, HY_KFILE_WRITE_IF_CAN, &rc);

	hy_ops_count_op(fs, HY_OP_FSYNC);
	if (file)
		rc = hy_engine_fsync(fs->engine, &file->engine, datasync != 0);
	hy_ops_file_put(fs, file);
	fuse_reply_err(req, -rc);
}

void hy_ops_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
		      struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	int rc;
	struct hy_file *file = hy_ops_file_get(fs, req, ino, fi, HY_KFILE_WRITE, &rc);

	hy_ops_count_op(fs, HY_OP_OTHER);
	if (!file) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* FALLOCATE has no kill flag, and the empty SETATTR the kernel may
	 * send first clears the bits for the owner only (fs/ops_names.c,
	 * do_setattr): the caller's uid stands in for its lack of CAP_FSETID */
	rc = hy_ops_kill_privs(fs, req, file->inode, file->fd, NULL, NULL,
			       fuse_req_ctx(req)->uid != 0 ? HY_KILL_SUIDGID : HY_KILL_CAPS, true);
	if (rc >= 0)
		rc = hy_engine_fallocate(fs->engine, &file->engine, mode, offset, length);
	hy_ops_file_put(fs, file);
	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

void hy_ops_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	struct hy_file *file;
	off_t res;
	int rc = 0;

	/* With the kernel's write-back cache, written pages may still be in
	 * the kernel only: the home file has a hole, or no byte, where they
	 * are (SEEK_DATA answered ENXIO on data just written), and the kernel
	 * sends no flush before LSEEK, nor can the daemon fetch its dirty
	 * pages. ENOSYS makes the kernel answer every later lseek itself, as
	 * generic_file_llseek does, from the size it keeps: the whole file is
	 * data and the one hole is at its end, which POSIX allows and which
	 * never hides data. Without that cache every write has reached the
	 * daemon, and the home file's holes are the truth. */
	if (hy_ops_fs_of(req)->writeback_cache) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	/* holes are looked for in the home file: cached writes go there first */
	file = hy_ops_file_get(fs, req, ino, fi, HY_KFILE_READ, &rc);
	if (!file) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (whence == SEEK_DATA || whence == SEEK_HOLE)
		rc = hy_engine_prepare_seek(fs->engine, &file->engine);
	if (rc < 0) {
		hy_ops_file_put(fs, file);
		fuse_reply_err(req, -rc);
		return;
	}
	res = lseek(file->fd, off, whence);
	if (res < 0)
		rc = errno;
	hy_ops_file_put(fs, file);
	if (res < 0)
		fuse_reply_err(req, rc);
	else
		fuse_reply_lseek(req, res);
}

void hy_ops_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			    struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			    struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct hy_fs *fs = hy_ops_fs_of(req);
	int rc_in, rc_out;
	struct hy_file *in = hy_ops_file_get(fs, req, ino_in, fi_in, HY_KFILE_READ, &rc_in);
	struct hy_file *out = hy_ops_file_get(fs, req, ino_out, fi_out, HY_KFILE_WRITE, &rc_out);
	ssize_t n = !in ? rc_in : !out ? rc_out : 0;

	/* as fallocate: no kill flag on COPY_FILE_RANGE */
	if (in && out)
		n = hy_ops_kill_privs(fs, req, out->inode, out->fd, NULL, NULL,
				      fuse_req_ctx(req)->uid != 0 ? HY_KILL_SUIDGID : HY_KILL_CAPS,
				      true);
	if (in && out && n >= 0)
		n = hy_engine_copy_range(fs->engine, &in->engine, off_in, &out->engine, off_out,
					 len, flags);
	hy_ops_file_put(fs, in);
	hy_ops_file_put(fs, out);
	hy_ops_count_op(fs, HY_OP_OTHER);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}
