/* device.c - see include/hybridfs/device.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/device.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/fault.h"
#include "hybridfs/log.h"

static ssize_t file_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	ssize_t n = pread((int)object, buf, len, off);

	return n < 0 ? -errno : n;
}

static ssize_t file_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			  off_t off)
{
	ssize_t n = pwrite((int)object, buf, len, off);

	return n < 0 ? -errno : n;
}

static int file_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	int rc = data_only ? fdatasync((int)object) : fsync((int)object);

	return rc < 0 ? -errno : 0;
}

static int file_truncate(struct hy_device *dev, int64_t object, off_t size)
{
	return ftruncate((int)object, size) < 0 ? -errno : 0;
}

static int file_allocate(struct hy_device *dev, int64_t object, int mode, off_t off, off_t len)
{
	return fallocate((int)object, mode, off, len) < 0 ? -errno : 0;
}

static int file_getattr(struct hy_device *dev, int64_t object, struct hy_device_attr *out)
{
	struct stat st;

	(void)dev;
	if (fstat((int)object, &st) != 0)
		return -errno;
	out->stamp = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	out->size = (uint64_t)st.st_size;
	return 0;
}

static int file_set_mtime(struct hy_device *dev, int64_t object, int64_t mtime_ns)
{
	struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};

	(void)dev;
	if (mtime_ns >= 0) {
		times[1].tv_sec = (time_t)(mtime_ns / 1000000000);
		times[1].tv_nsec = (long)(mtime_ns % 1000000000);
	}
	return futimens((int)object, times) == 0 ? 0 : -errno;
}

/* The indirector writes home through descriptors the mount's users opened,
 * some read-only; the same file opened again through /proc gives one it
 * may write (the daemon may: it opened it). */
static int file_writable(struct hy_device *dev, int64_t object, int64_t *out, bool *opened)
{
	char path[64];
	int flags = fcntl((int)object, F_GETFL), fd;

	(void)dev;
	*opened = false;
	*out = object;
	if (flags < 0)
		return -errno;
	if ((flags & O_ACCMODE) != O_RDONLY)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)object);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*out = fd;
	*opened = true;
	return 0;
}

/* A descriptor of the daemon's own that reads and writes: the request's
 * may be either only, and is the caller's to close. */
static int file_hold(struct hy_device *dev, int64_t object, int64_t *out)
{
	char path[64];
	int fd;

	(void)dev;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)object);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*out = fd;
	return 0;
}

static void file_close_object(struct hy_device *dev, int64_t object)
{
	(void)dev;
	if (close((int)object) != 0)
		hy_log(LOG_WARNING, "closing descriptor %d: %s", (int)object, strerror(errno));
}

static const struct hy_device_ops file_ops = {
	.writable = file_writable,
	.hold = file_hold,
	.close_object = file_close_object,
	.getattr = file_getattr,
	.set_mtime = file_set_mtime,
	.allocate = file_allocate,
	.read = file_read,
	.write = file_write,
	.sync = file_sync,
	.truncate = file_truncate,
};

int hy_device_new(const char *name, const struct hy_device_ops *ops, void *priv,
		  struct hy_device **out)
{
	struct hy_device *dev = calloc(1, sizeof(*dev));

	*out = NULL;
	if (!dev)
		return -ENOMEM;
	atomic_store(&dev->last_object, -1);
	dev->emulation_region = -1;
	dev->ops = ops;
	dev->priv = priv;
	snprintf(dev->name, sizeof(dev->name), "%s", name);
	/* off (no spec): no wrapper, the plain table serves every request */
	if (hy_fault_enabled) {
		int rc = hy_fault_attach(dev);

		if (rc < 0) {
			free(dev);
			return rc;
		}
	}
	*out = dev;
	return 0;
}

int hy_device_file_new(const char *name, struct hy_device **out)
{
	return hy_device_new(name, &file_ops, NULL, out);
}

void hy_device_free(struct hy_device *dev)
{
	if (!dev)
		return;
	if (dev->ops->destroy)
		dev->ops->destroy(dev);
	free(dev);
}

/* ---- emulation ------------------------------------------------------------- */

struct hy_device_emulation {
	pthread_mutex_t lock; /* the model, busy_until and the stats */
	struct hy_devmodel *model;
	int64_t busy_until_ns; /* CLOCK_MONOTONIC: the emulated disk is free then */
	struct hy_device_emulation_stats st;
};

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int hy_device_emulation_new(const struct hy_devmodel_params *params,
			    struct hy_device_emulation **out, char *why, size_t why_size)
{
	struct hy_device_emulation *e = calloc(1, sizeof(*e));
	int rc;

	*out = NULL;
	if (!e) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	rc = hy_devmodel_new(params, &e->model, why, why_size);
	if (rc < 0) {
		free(e);
		return rc;
	}
	pthread_mutex_init(&e->lock, NULL);
	*out = e;
	return 0;
}

void hy_device_emulation_free(struct hy_device_emulation *e)
{
	if (!e)
		return;
	hy_devmodel_free(e->model);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

void hy_device_set_emulation(struct hy_device *dev, struct hy_device_emulation *e, int64_t region)
{
	dev->emulation = e;
	dev->emulation_region = region;
}

void hy_device_emulation_get_stats(struct hy_device_emulation *e,
				   struct hy_device_emulation_stats *out)
{
	pthread_mutex_lock(&e->lock);
	*out = e->st;
	pthread_mutex_unlock(&e->lock);
}

/* Delays a request served at @off of @object by the emulated disk's time. */
static void emulate(struct hy_device *dev, int64_t object, off_t off, size_t len, bool write)
{
	struct hy_device_emulation *e = dev->emulation;
	uint64_t addr = (uint64_t)off;
	int64_t now, start, until;
	struct timespec ts;
	double ms;

	if (dev->emulation_region >= 0) {
		addr += (uint64_t)dev->emulation_region;
	} else {
		struct stat st;

		/* no inode (the descriptor went away): the file's place is 0 */
		if (fstat((int)object, &st) == 0)
			addr += (uint64_t)st.st_ino * HY_DEVICE_EMULATION_FILE_SPAN;
	}
	now = monotonic_ns();
	pthread_mutex_lock(&e->lock);
	ms = hy_devmodel_serve(e->model, addr, len, write);
	start = e->busy_until_ns > now ? e->busy_until_ns : now;
	until = start + (int64_t)(ms * 1e6);
	e->busy_until_ns = until;
	e->st.requests++;
	e->st.modeled_ms += ms;
	e->st.waited_ms += (double)(until - now) / 1e6;
	pthread_mutex_unlock(&e->lock);
	ts.tv_sec = until / 1000000000;
	ts.tv_nsec = until % 1000000000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* A request that does not continue the last one is a seek on a disk. */
static void count_position(struct hy_device *dev, int64_t object, off_t off, size_t len)
{
	if (atomic_load_explicit(&dev->last_object, memory_order_relaxed) != object ||
	    atomic_load_explicit(&dev->next_offset, memory_order_relaxed) != (uint64_t)off)
		atomic_fetch_add_explicit(&dev->seeks, 1, memory_order_relaxed);
	atomic_store_explicit(&dev->last_object, object, memory_order_relaxed);
	atomic_store_explicit(&dev->next_offset, (uint64_t)off + len, memory_order_relaxed);
}

ssize_t hy_device_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	atomic_fetch_add_explicit(&dev->reads, 1, memory_order_relaxed);
	while (done < len) {
		ssize_t n = dev->ops->read(dev, object, (char *)buf + done, len - done,
					   off + (off_t)done);

		if (n == -EINTR)
			continue;
		if (n < 0) {
			atomic_fetch_add_explicit(&dev->errors, 1, memory_order_relaxed);
			if (done)
				break;
			return n;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	atomic_fetch_add_explicit(&dev->bytes_read, done, memory_order_relaxed);
	count_position(dev, object, off, done);
	if (dev->emulation && done)
		emulate(dev, object, off, done, false);
	return (ssize_t)done;
}

ssize_t hy_device_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			off_t off)
{
	size_t done = 0;

	atomic_fetch_add_explicit(&dev->writes, 1, memory_order_relaxed);
	while (done < len) {
		ssize_t n = dev->ops->write(dev, object, (const char *)buf + done, len - done,
					    off + (off_t)done);

		if (n == -EINTR)
			continue;
		if (n <= 0) {
			atomic_fetch_add_explicit(&dev->errors, 1, memory_order_relaxed);
			if (done)
				break;
			return n < 0 ? n : -EIO;
		}
		done += (size_t)n;
	}
	atomic_fetch_add_explicit(&dev->bytes_written, done, memory_order_relaxed);
	count_position(dev, object, off, done);
	if (dev->emulation && done)
		emulate(dev, object, off, done, true);
	return (ssize_t)done;
}

int hy_device_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	int rc = dev->ops->sync(dev, object, data_only);

	atomic_fetch_add_explicit(&dev->syncs, 1, memory_order_relaxed);
	if (rc < 0)
		atomic_fetch_add_explicit(&dev->errors, 1, memory_order_relaxed);
	return rc;
}

int hy_device_truncate(struct hy_device *dev, int64_t object, off_t size)
{
	int rc = dev->ops->truncate(dev, object, size);

	if (rc < 0)
		atomic_fetch_add_explicit(&dev->errors, 1, memory_order_relaxed);
	return rc;
}

int hy_device_allocate(struct hy_device *dev, int64_t object, int mode, off_t off, off_t len)
{
	int rc = dev->ops->allocate ? dev->ops->allocate(dev, object, mode, off, len) : -EOPNOTSUPP;

	if (rc < 0 && rc != -EOPNOTSUPP)
		atomic_fetch_add_explicit(&dev->errors, 1, memory_order_relaxed);
	return rc;
}

/* ---- where data lies (PORE's zones) ---------------------------------------- */

#define FIEMAP_EXTENTS 32 /* extents asked for per ioctl */

/* @object's bytes at their emulated place: a region's, or 64 MiB per
 * inode number (as emulate() lays them). */
static void addresses_by_inode(struct hy_device *dev, int64_t object, const uint64_t *offsets,
			       size_t n, uint64_t *out)
{
	uint64_t base = 0;
	struct stat st;

	if (dev->emulation_region >= 0)
		base = (uint64_t)dev->emulation_region;
	else if (fstat((int)object, &st) == 0)
		base = (uint64_t)st.st_ino * HY_DEVICE_EMULATION_FILE_SPAN;
	for (size_t i = 0; i < n; i++)
		out[i] = base + offsets[i];
}

int hy_device_addresses(struct hy_device *dev, int64_t object, const uint64_t *offsets, size_t n,
			uint64_t *out)
{
	/* the map and room for its extents after it (a struct with a
	 * flexible array may not be followed by more members in ISO C) */
	union {
		struct fiemap map;
		unsigned char bytes[sizeof(struct fiemap) +
				    FIEMAP_EXTENTS * sizeof(struct fiemap_extent)];
	} req;
	uint64_t start, end, known_logical = 0, known_physical = 0;
	bool known = false;
	size_t i = 0;
	struct stat st;

	if (!n)
		return 0;
	if (dev->ops->addresses)
		return dev->ops->addresses(dev, object, offsets, n, out);
	if (dev->emulation) {
		addresses_by_inode(dev, object, offsets, n, out);
		return 0;
	}
	if (dev->ops->read != file_read || fstat((int)object, &st) < 0)
		return -EOPNOTSUPP; /* a model's objects are not files */
	start = offsets[0];
	end = offsets[n - 1] + 1;
	/* the filesystem's own map of the range; blocks it has not placed yet
	 * (delayed allocation) lie after the last placed one before them */
	while (i < n) {
		memset(&req, 0, sizeof(req));
		req.map.fm_start = start;
		req.map.fm_length = end - start;
		req.map.fm_extent_count = FIEMAP_EXTENTS;
		if (ioctl((int)object, FS_IOC_FIEMAP, &req.map) < 0) {
			if (errno != EOPNOTSUPP && errno != ENOTTY)
				return -errno;
			/* tmpfs and the like: no map; the file's place */
			addresses_by_inode(dev, object, offsets + i, n - i, out + i);
			return 0;
		}
		for (uint32_t e = 0; e < req.map.fm_mapped_extents && i < n; e++) {
			const struct fiemap_extent *x = &req.map.fm_extents[e];
			bool placed =
				!(x->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
						 FIEMAP_EXTENT_DATA_INLINE));

			for (; i < n && offsets[i] < x->fe_logical + x->fe_length; i++) {
				if (placed && offsets[i] >= x->fe_logical) {
					out[i] = x->fe_physical + (offsets[i] - x->fe_logical);
				} else if (known) {
					out[i] = known_physical + (offsets[i] - known_logical);
				} else {
					out[i] = (uint64_t)st.st_ino *
							 HY_DEVICE_EMULATION_FILE_SPAN +
						 offsets[i];
				}
			}
			if (placed) {
				known = true;
				known_logical = x->fe_logical + x->fe_length;
				known_physical = x->fe_physical + x->fe_length;
			}
			start = x->fe_logical + x->fe_length;
			if (x->fe_flags & FIEMAP_EXTENT_LAST) {
				start = end;
				break;
			}
		}
		if (req.map.fm_mapped_extents == 0 || start >= end)
			break;
	}
	/* past the last extent (a hole, or not written out yet) */
	for (; i < n; i++)
		out[i] = known ? known_physical + (offsets[i] - known_logical)
			       : (uint64_t)st.st_ino * HY_DEVICE_EMULATION_FILE_SPAN + offsets[i];
	return 0;
}

void hy_device_get_stats(struct hy_device *dev, struct hy_device_stats *out)
{
	out->reads = atomic_load_explicit(&dev->reads, memory_order_relaxed);
	out->writes = atomic_load_explicit(&dev->writes, memory_order_relaxed);
	out->bytes_read = atomic_load_explicit(&dev->bytes_read, memory_order_relaxed);
	out->bytes_written = atomic_load_explicit(&dev->bytes_written, memory_order_relaxed);
	out->syncs = atomic_load_explicit(&dev->syncs, memory_order_relaxed);
	out->errors = atomic_load_explicit(&dev->errors, memory_order_relaxed);
	out->seeks = atomic_load_explicit(&dev->seeks, memory_order_relaxed);
}

int hy_device_getattr(struct hy_device *dev, int64_t object, struct hy_device_attr *out)
{
	return dev->ops->getattr ? dev->ops->getattr(dev, object, out) : -EOPNOTSUPP;
}

int hy_device_stamp(struct hy_device *dev, int64_t object, int64_t *stamp)
{
	struct hy_device_attr attr;
	int rc = hy_device_getattr(dev, object, &attr);

	if (rc == 0)
		*stamp = attr.stamp;
	return rc;
}

int hy_device_set_mtime(struct hy_device *dev, int64_t object, int64_t mtime_ns)
{
	return dev->ops->set_mtime ? dev->ops->set_mtime(dev, object, mtime_ns) : -EOPNOTSUPP;
}

int hy_device_writable(struct hy_device *dev, int64_t object, int64_t *out, bool *opened)
{
	*opened = false;
	*out = object;
	return dev->ops->writable ? dev->ops->writable(dev, object, out, opened) : 0;
}

int hy_device_hold(struct hy_device *dev, int64_t object, int64_t *out, bool *opened)
{
	int rc;

	if (!dev->ops->hold)
		return hy_device_writable(dev, object, out, opened);
	*out = object;
	rc = dev->ops->hold(dev, object, out);
	*opened = rc == 0;
	return rc;
}

void hy_device_close_object(struct hy_device *dev, int64_t object)
{
	if (dev->ops->close_object)
		dev->ops->close_object(dev, object);
}
