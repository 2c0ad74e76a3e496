/* device.c - see include/hybridfs/device.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
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

static int file_prefetch(struct hy_device *dev, int64_t object, off_t off, off_t len)
{
	int rc;

	(void)dev;
	rc = posix_fadvise((int)object, off, len, POSIX_FADV_WILLNEED);
	return -rc; /* posix_fadvise returns the error number itself */
}

static const struct hy_device_ops file_ops = {
	.writable = file_writable,
	.prefetch = file_prefetch,
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
	dev->emulation_fd = -1;
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

/* ---- where a file's bytes lie: its map (FIEMAP) ------------------------------ */

#define FIEMAP_EXTENTS 32 /* extents asked for per ioctl */

struct place_extent {
	uint64_t logical, physical, length; /* bytes */
};

/* A file's placed extents, ascending and merged where they continue each
 * other on the disk. */
struct place_map {
	struct place_extent *x;
	size_t n;
	bool delayed; /* some bytes were not placed yet (delayed allocation) */
};

/* Reads @fd's whole map into @out (freed by the caller): 0, -EOPNOTSUPP
 * (no map: tmpfs and the like), -ENOMEM or the ioctl's -errno. */
static int map_read(int fd, struct place_map *out)
{
	/* the map and room for its extents after it (a struct with a
	 * flexible array may not be followed by more members in ISO C) */
	union {
		struct fiemap map;
		unsigned char bytes[sizeof(struct fiemap) +
				    FIEMAP_EXTENTS * sizeof(struct fiemap_extent)];
	} req;
	uint64_t start = 0;
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	for (;;) {
		memset(&req, 0, sizeof(req));
		req.map.fm_start = start;
		req.map.fm_length = FIEMAP_MAX_OFFSET - start;
		req.map.fm_extent_count = FIEMAP_EXTENTS;
		if (ioctl(fd, FS_IOC_FIEMAP, &req.map) < 0) {
			int rc = errno == ENOTTY || errno == EOPNOTSUPP ? -EOPNOTSUPP : -errno;

			free(out->x);
			memset(out, 0, sizeof(*out));
			return rc;
		}
		if (!req.map.fm_mapped_extents)
			return 0;
		for (uint32_t i = 0; i < req.map.fm_mapped_extents; i++) {
			const struct fiemap_extent *x = &req.map.fm_extents[i];
			struct place_extent *last = out->n ? &out->x[out->n - 1] : NULL;

			start = x->fe_logical + x->fe_length;
			if (x->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
					   FIEMAP_EXTENT_DATA_INLINE)) {
				out->delayed = true;
			} else if (last && last->logical + last->length == x->fe_logical &&
				   last->physical + last->length == x->fe_physical) {
				last->length += x->fe_length;
			} else {
				if (out->n == cap) {
					size_t ncap = cap ? 2 * cap : 8;
					struct place_extent *g = realloc(out->x, ncap * sizeof(*g));

					if (!g) {
						free(out->x);
						memset(out, 0, sizeof(*out));
						return -ENOMEM;
					}
					out->x = g;
					cap = ncap;
				}
				out->x[out->n++] = (struct place_extent){
					x->fe_logical, x->fe_physical, x->fe_length};
			}
			if (x->fe_flags & FIEMAP_EXTENT_LAST)
				return 0;
		}
	}
}

/* Where byte @off of the file mapped by @m lies, and in *@run how many
 * bytes from it on lie contiguously. A byte the filesystem has not placed
 * (delayed allocation, a hole, past the last extent) lies right after the
 * last placed byte before it, where an allocator that fills forward puts
 * it; before the first extent, right before that one; in a file with no
 * placed byte at @fallback + @off. *@placed says whether it was placed. */
static uint64_t map_place(const struct place_map *m, uint64_t fallback, uint64_t off, uint64_t *run,
			  bool *placed)
{
	size_t lo = 0, hi = m->n;

	/* the first extent that ends after @off */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->x[mid].logical + m->x[mid].length <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	*placed = lo < m->n && m->x[lo].logical <= off;
	if (*placed) {
		*run = m->x[lo].logical + m->x[lo].length - off;
		return m->x[lo].physical + (off - m->x[lo].logical);
	}
	*run = lo < m->n ? m->x[lo].logical - off : UINT64_MAX;
	if (lo > 0) {
		const struct place_extent *p = &m->x[lo - 1];

		return p->physical + p->length + (off - (p->logical + p->length));
	}
	if (lo < m->n) {
		uint64_t d = m->x[lo].logical - off;

		return m->x[lo].physical >= d ? m->x[lo].physical - d : 0;
	}
	return fallback + off;
}

/* ---- emulation ------------------------------------------------------------- */

#define MAP_BUCKETS 1024
#define MAP_MAX	    16384 /* files whose maps are kept; past it all are read again */
/* A map is read again when the file's allocation may have changed, but not
 * sooner than this after the last reading: a file being appended to would
 * otherwise cost an ioctl a request while its new bytes wait in the page
 * cache. */
#define MAP_REFRESH_NS (100 * 1000000LL)
#define PIECES_MAX     16 /* a request over more extents: the rest in one piece */

/* A file's map as the emulation last read it, with what the file looked
 * like then. */
struct emu_map {
	struct emu_map *next; /* in its bucket */
	dev_t dev;
	ino_t ino;
	uint64_t size;	 /* st_size then */
	uint64_t blocks; /* st_blocks then: what the file has allocated */
	int64_t stamp;	 /* ctime then, ns */
	int64_t read_ns; /* CLOCK_MONOTONIC when read */
	bool stale;	 /* truncated or allocated through a device since */
	bool no_map;	 /* the filesystem has none (tmpfs): placed by inode */
	struct place_map map;
};

struct hy_device_emulation {
	pthread_mutex_t lock; /* the model, busy_until and the stats */
	struct hy_devmodel *model;
	int64_t busy_until_ns; /* CLOCK_MONOTONIC: the emulated disk is free then */
	struct hy_device_emulation_stats st;
	pthread_mutex_t maps_lock; /* maps, nmaps (never held with lock) */
	struct emu_map *maps[MAP_BUCKETS];
	size_t nmaps;
};

/* A contiguous piece of a request on the emulated disk. */
struct piece {
	uint64_t addr, len;
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
	pthread_mutex_init(&e->maps_lock, NULL);
	*out = e;
	return 0;
}

static void maps_clear(struct hy_device_emulation *e)
{
	for (size_t b = 0; b < MAP_BUCKETS; b++) {
		while (e->maps[b]) {
			struct emu_map *m = e->maps[b];

			e->maps[b] = m->next;
			free(m->map.x);
			free(m);
		}
	}
	e->nmaps = 0;
}

void hy_device_emulation_free(struct hy_device_emulation *e)
{
	if (!e)
		return;
	maps_clear(e);
	hy_devmodel_free(e->model);
	pthread_mutex_destroy(&e->maps_lock);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

void hy_device_set_emulation(struct hy_device *dev, struct hy_device_emulation *e, int64_t region)
{
	dev->emulation = e;
	dev->emulation_region = region;
}

void hy_device_set_emulation_fd(struct hy_device *dev, int fd)
{
	dev->emulation_fd = fd;
}

void hy_device_emulation_get_stats(struct hy_device_emulation *e,
				   struct hy_device_emulation_stats *out)
{
	struct hy_devmodel_stats ms;

	pthread_mutex_lock(&e->lock);
	*out = e->st;
	hy_devmodel_get_stats(e->model, &ms);
	pthread_mutex_unlock(&e->lock);
	out->reads = ms.reads;
	out->writes = ms.writes;
	out->bytes_read = ms.bytes_read;
	out->bytes_written = ms.bytes_written;
	out->seeks = ms.seeks;
}

static size_t map_bucket(dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)ino * UINT64_C(0x9e3779b97f4a7c15)) ^ (uint64_t)dev;

	return (size_t)(h >> 32) % MAP_BUCKETS;
}

static struct emu_map *map_find(struct hy_device_emulation *e, dev_t dev, ino_t ino)
{
	for (struct emu_map *m = e->maps[map_bucket(dev, ino)]; m; m = m->next)
		if (m->ino == ino && m->dev == dev)
			return m;
	return NULL;
}

/* [@off, @off + @len) of the file mapped by @m as pieces that each lie
 * contiguously; the count. *@unplaced: some byte was not placed. */
static size_t map_pieces(const struct emu_map *m, uint64_t fallback, uint64_t off, uint64_t len,
			 struct piece *out, bool *unplaced)
{
	size_t n = 0;

	*unplaced = false;
	if (m->no_map) {
		out[0] = (struct piece){fallback + off, len};
		return 1;
	}
	while (len) {
		uint64_t run;
		bool placed;
		uint64_t addr = map_place(&m->map, fallback, off, &run, &placed);
		uint64_t take = n + 1 == PIECES_MAX || run > len ? len : run;

		if (!placed)
			*unplaced = true;
		if (n && out[n - 1].addr + out[n - 1].len == addr)
			out[n - 1].len += take;
		else
			out[n++] = (struct piece){addr, take};
		off += take;
		len -= take;
	}
	return n;
}

/* Where @fd's bytes [@off, @off + @len) lie on the emulated disk, into
 * @out (PIECES_MAX): the file's map, read once and kept per file (device,
 * inode), read again when it was truncated or allocated through a device;
 * or, at most every MAP_REFRESH_NS, when the file's size or allocated
 * blocks changed (an inode number used again changes them too), or the
 * request touches bytes the map does not place and the file changed since
 * or had bytes waiting for delayed allocation. A
 * byte the map does not place lies as map_place() says; a file on a
 * filesystem without a map (tmpfs) at @region, or 64 MiB per inode number
 * when @region < 0, plus the offset. *@no_map says so. The count. */
static size_t emu_pieces(struct hy_device_emulation *e, int fd, int64_t region, uint64_t off,
			 uint64_t len, struct piece *out, bool *no_map)
{
	struct stat st;
	uint64_t fallback;
	int64_t stamp, now = 0;
	bool unplaced = false, refreshed = false;
	size_t n = 0;
	int rc;

	*no_map = true;
	if (fstat(fd, &st) != 0) {
		/* no inode (the descriptor went away): the region, or 0 */
		out[0] = (struct piece){(region >= 0 ? (uint64_t)region : 0) + off, len};
		return 1;
	}
	fallback = region >= 0 ? (uint64_t)region
			       : (uint64_t)st.st_ino * HY_DEVICE_EMULATION_FILE_SPAN;
	stamp = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	for (;;) {
		struct emu_map *m, *fresh;
		bool need;

		pthread_mutex_lock(&e->maps_lock);
		m = map_find(e, st.st_dev, st.st_ino);
		if (m) {
			n = map_pieces(m, fallback, off, len, out, &unplaced);
			*no_map = m->no_map;
		}
		need = !m || m->stale;
		/* an overwrite in place changes neither the size nor the blocks
		 * allocated (ext4 counts delayed ones too), and moves nothing */
		if (!need && !m->no_map && !refreshed &&
		    (m->size != (uint64_t)st.st_size || m->blocks != (uint64_t)st.st_blocks ||
		     (unplaced && (m->map.delayed || m->stamp != stamp)))) {
			now = now ? now : monotonic_ns();
			need = now - m->read_ns >= MAP_REFRESH_NS;
		}
		pthread_mutex_unlock(&e->maps_lock);
		if (!need || refreshed)
			return n;
		/* the ioctl outside the lock; a racing reader installs its own */
		fresh = calloc(1, sizeof(*fresh));
		if (!fresh) {
			if (!m)
				out[n++] = (struct piece){fallback + off, len};
			return n;
		}
		fresh->dev = st.st_dev;
		fresh->ino = st.st_ino;
		fresh->size = (uint64_t)st.st_size;
		fresh->blocks = (uint64_t)st.st_blocks;
		fresh->stamp = stamp;
		fresh->read_ns = monotonic_ns();
		rc = map_read(fd, &fresh->map);
		/* no map on this filesystem; another failure is tried again */
		fresh->no_map = rc < 0;
		fresh->stale = rc < 0 && rc != -EOPNOTSUPP;
		pthread_mutex_lock(&e->maps_lock);
		m = map_find(e, st.st_dev, st.st_ino);
		if (m) {
			free(m->map.x);
			fresh->next = m->next;
			*m = *fresh;
			free(fresh);
		} else {
			size_t b = map_bucket(st.st_dev, st.st_ino);

			if (e->nmaps >= MAP_MAX)
				maps_clear(e);
			fresh->next = e->maps[b];
			e->maps[b] = fresh;
			e->nmaps++;
		}
		pthread_mutex_unlock(&e->maps_lock);
		refreshed = true;
	}
}

/* @fd's map is read again at its next request (it was truncated, or
 * space allocated). */
static void emu_forget(struct hy_device_emulation *e, int fd)
{
	struct stat st;
	struct emu_map *m;

	if (fstat(fd, &st) != 0)
		return;
	pthread_mutex_lock(&e->maps_lock);
	m = map_find(e, st.st_dev, st.st_ino);
	if (m)
		m->stale = true;
	pthread_mutex_unlock(&e->maps_lock);
}

/* Serves @pieces on the model and sleeps until the emulated disk is done
 * with them: one request. */
static void emu_serve(struct hy_device_emulation *e, const struct piece *p, size_t n, bool write,
		      bool state)
{
	int64_t now = monotonic_ns(), start, until;
	struct timespec ts;
	double ms = 0;

	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < n; i++)
		ms += hy_devmodel_serve(e->model, p[i].addr, p[i].len, write);
	start = e->busy_until_ns > now ? e->busy_until_ns : now;
	until = start + (int64_t)(ms * 1e6);
	e->busy_until_ns = until;
	e->st.requests++;
	if (state)
		e->st.state_requests++;
	e->st.modeled_ms += ms;
	e->st.waited_ms += (double)(until - now) / 1e6;
	pthread_mutex_unlock(&e->lock);
	ts.tv_sec = until / 1000000000;
	ts.tv_nsec = until % 1000000000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* A request of @fd's bytes [@off, @off + @len), the first @cached of them
 * (a read's) served by the page cache: the disk never saw those, and a read
 * it served whole costs nothing. On a filesystem without a map (tmpfs)
 * the page cache is all there is: every byte is charged, as if no cache
 * were there (the emulation stands for a disk). @fd < 0: a device without
 * a file, at @region. */
static void emu_request(struct hy_device_emulation *e, int fd, int64_t region, uint64_t off,
			uint64_t len, uint64_t cached, bool write, bool state)
{
	struct piece p[PIECES_MAX];
	bool no_map = true;
	size_t n;

	if (fd < 0) {
		p[0] = (struct piece){(uint64_t)(region >= 0 ? region : 0) + off, len};
		emu_serve(e, p, 1, write, state);
		return;
	}
	if (cached >= len) {
		/* served whole by the page cache: free where a disk is under it */
		n = emu_pieces(e, fd, region, off, len, p, &no_map);
		if (!no_map) {
			pthread_mutex_lock(&e->lock);
			e->st.cached++;
			pthread_mutex_unlock(&e->lock);
			return;
		}
	} else {
		n = emu_pieces(e, fd, region, off + cached, len - cached, p, &no_map);
		if (no_map && cached)
			n = emu_pieces(e, fd, region, off, len, p, &no_map);
	}
	emu_serve(e, p, n, write, state);
}

/* The descriptor whose file holds @dev's @object, or -1 (a region of no
 * file). */
static int emulation_fd(const struct hy_device *dev, int64_t object)
{
	if (dev->emulation_fd >= 0)
		return dev->emulation_fd;
	return dev->emulation_region < 0 ? (int)object : -1;
}

/* How many bytes from @off on the page cache holds, page by page from the
 * first: mincore() of a mapping of the range, which neither faults a page
 * in nor starts a read. Not preadv2(RWF_NOWAIT): that starts the
 * kernel's read-ahead for a page it does not find, and when the disk
 * answers at once (a fast virtual disk) it returns the bytes it just read,
 * which were then counted as cached (1 in 10 uncached reads here). */
static ssize_t cached_prefix(int fd, size_t len, off_t off)
{
	static long page;
	unsigned char stack[64], *vec = stack;
	size_t span, pages, whole = 0;
	off_t start;
	void *map;

	if (!page)
		page = sysconf(_SC_PAGESIZE);
	start = off - off % page;
	span = (size_t)(off - start) + len;
	pages = (span + (size_t)page - 1) / (size_t)page;
	map = mmap(NULL, span, PROT_READ, MAP_SHARED, fd, start);
	if (map == MAP_FAILED)
		return -errno;
	if (pages > sizeof(stack))
		vec = malloc(pages);
	if (!vec || mincore(map, span, vec) != 0) {
		int rc = vec ? -errno : -ENOMEM;

		if (vec != stack)
			free(vec);
		munmap(map, span);
		return rc;
	}
	while (whole < pages && (vec[whole] & 1))
		whole++;
	if (vec != stack)
		free(vec);
	munmap(map, span);
	if (whole * (size_t)page <= (size_t)(off - start))
		return 0;
	whole = whole * (size_t)page - (size_t)(off - start);
	return (ssize_t)(whole < len ? whole : len);
}

ssize_t hy_device_emulation_probe(int fd, void *buf, size_t len, off_t off)
{
	ssize_t cached = len ? cached_prefix(fd, len, off) : 0, n;

	if (cached < 0)
		return cached;
	if (cached == 0)
		return -EAGAIN;
	/* the cached bytes, read: no disk under them (a page evicted in
	 * between is read from the disk uncharged, a rare small error) */
	do
		n = pread(fd, buf, (size_t)cached, off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

void hy_device_emulation_charge(struct hy_device_emulation *e, int fd, uint64_t off, uint64_t len,
				uint64_t cached, bool write)
{
	if (e && len)
		emu_request(e, fd, -1, off, len, cached, write, true);
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
	size_t done = 0, cached = 0;

	atomic_fetch_add_explicit(&dev->reads, 1, memory_order_relaxed);
	/* under emulate=, what the page cache holds is read from it first: the
	 * disk never sees those bytes. The probe reads the file the table's
	 * read would (file_ops: the descriptor; a device with an emulation
	 * file: that file, whose reads are pread(2) on it), so its bytes are
	 * the answer; not through a fault injector, which must see every
	 * read. */
	if (dev->emulation && !dev->fault && len) {
		int fd = emulation_fd(dev, object);

		if (fd >= 0 && (dev->ops->read == file_read || dev->emulation_fd >= 0)) {
			ssize_t n = hy_device_emulation_probe(fd, buf, len, off);

			if (n > 0)
				cached = done = (size_t)n;
		}
	}
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
		emu_request(dev->emulation, emulation_fd(dev, object), dev->emulation_region,
			    (uint64_t)off, done, cached, false, false);
	return (ssize_t)done;
}

int hy_device_direct_fd(const struct hy_device *dev, int64_t object)
{
	/* emulate= must price every request and a fault rule must see it: a
	 * read they do not see would make both lie */
	if (dev->ops != &file_ops || dev->fault || dev->emulation || object < 0 || object > INT_MAX)
		return -1;
	return (int)object;
}

void hy_device_count_read(struct hy_device *dev, int64_t object, off_t off, ssize_t done)
{
	atomic_fetch_add_explicit(&dev->reads, 1, memory_order_relaxed);
	if (done < 0) {
		atomic_fetch_add_explicit(&dev->errors, 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&dev->bytes_read, (uint64_t)done, memory_order_relaxed);
	count_position(dev, object, off, (size_t)done);
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
		emu_request(dev->emulation, emulation_fd(dev, object), dev->emulation_region,
			    (uint64_t)off, done, 0, true, false);
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

int hy_device_prefetch(struct hy_device *dev, int64_t object, off_t off, off_t len)
{
	int rc;

	if (!dev->ops->prefetch)
		return -EOPNOTSUPP;
	if (off < 0 || len <= 0)
		return -EINVAL;
	if (dev->emulation && !dev->fault) {
		int fd = emulation_fd(dev, object);

		if (fd >= 0 && (dev->ops->read == file_read || dev->emulation_fd >= 0)) {
			/* the disk reads what the page cache lacks, from the
			 * end of the cached prefix on (nothing is read here) */
			ssize_t cached = cached_prefix(fd, (size_t)len, off);

			if (cached < 0)
				cached = 0;
			emu_request(dev->emulation, fd, dev->emulation_region, (uint64_t)off,
				    (uint64_t)len, (uint64_t)cached, false, false);
		}
	}
	rc = dev->ops->prefetch(dev, object, off, len);
	if (rc < 0) {
		atomic_fetch_add_explicit(&dev->errors, 1, memory_order_relaxed);
		return rc;
	}
	atomic_fetch_add_explicit(&dev->prefetches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&dev->bytes_prefetched, (uint64_t)len, memory_order_relaxed);
	return 0;
}

int hy_device_truncate(struct hy_device *dev, int64_t object, off_t size)
{
	int rc = dev->ops->truncate(dev, object, size);

	if (rc < 0)
		atomic_fetch_add_explicit(&dev->errors, 1, memory_order_relaxed);
	else if (dev->emulation && emulation_fd(dev, object) >= 0)
		emu_forget(dev->emulation, emulation_fd(dev, object));
	return rc;
}

int hy_device_allocate(struct hy_device *dev, int64_t object, int mode, off_t off, off_t len)
{
	int rc = dev->ops->allocate ? dev->ops->allocate(dev, object, mode, off, len) : -EOPNOTSUPP;

	if (rc < 0 && rc != -EOPNOTSUPP)
		atomic_fetch_add_explicit(&dev->errors, 1, memory_order_relaxed);
	else if (rc == 0 && dev->emulation && emulation_fd(dev, object) >= 0)
		emu_forget(dev->emulation, emulation_fd(dev, object));
	return rc;
}

/* ---- where data lies (PORE's zones) ---------------------------------------- */

int hy_device_addresses(struct hy_device *dev, int64_t object, const uint64_t *offsets, size_t n,
			uint64_t *out)
{
	struct place_map map;
	uint64_t fallback;
	struct stat st;
	int rc;

	if (!n)
		return 0;
	if (dev->ops->addresses)
		return dev->ops->addresses(dev, object, offsets, n, out);
	/* under emulate=, where the emulation prices the bytes: a region of no
	 * file at its address, else the file's own place as below */
	if (dev->emulation && emulation_fd(dev, object) < 0) {
		for (size_t i = 0; i < n; i++)
			out[i] = (uint64_t)dev->emulation_region + offsets[i];
		return 0;
	}
	if (dev->emulation)
		object = emulation_fd(dev, object);
	else if (dev->ops->read != file_read)
		return -EOPNOTSUPP; /* a model's objects are not files */
	if (fstat((int)object, &st) < 0)
		return -EOPNOTSUPP;
	fallback = dev->emulation && dev->emulation_region >= 0
			   ? (uint64_t)dev->emulation_region
			   : (uint64_t)st.st_ino * HY_DEVICE_EMULATION_FILE_SPAN;
	rc = map_read((int)object, &map);
	if (rc == -EOPNOTSUPP) {
		/* tmpfs and the like: no map; the file's place */
		for (size_t i = 0; i < n; i++)
			out[i] = fallback + offsets[i];
		return 0;
	}
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		uint64_t run;
		bool placed;

		out[i] = map_place(&map, fallback, offsets[i], &run, &placed);
	}
	free(map.x);
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
	out->prefetches = atomic_load_explicit(&dev->prefetches, memory_order_relaxed);
	out->bytes_prefetched = atomic_load_explicit(&dev->bytes_prefetched, memory_order_relaxed);
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
	int rc = dev->ops->set_mtime ? dev->ops->set_mtime(dev, object, mtime_ns) : -EOPNOTSUPP;

	/* told even when the time could not be put back: the blocks went
	 * home all the same */
	if (mtime_ns >= 0 && dev->changed)
		dev->changed(dev->changed_ctx, object);
	return rc;
}

void hy_device_set_changed_hook(struct hy_device *dev, void (*changed)(void *ctx, int64_t object),
				void *ctx)
{
	dev->changed = changed;
	dev->changed_ctx = ctx;
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
