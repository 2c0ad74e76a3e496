/*
 * device.h - the device layer: every byte hybridfs stores goes through one.
 *
 * What it is for: the layers above never call pread(2) themselves; they
 * ask a struct hy_device, whose operations table is real (the backing
 * directory's files, the BOPT, the SSD cache store) or a model that keeps
 * no data (the simulator's, the unit tests' memory devices). With
 * emulate= a disk model (devmodel.h) delays every request of the backing
 * files and the BOPT (below). The same table is where fault injection
 * (fault.h) plugs in. Each device counts the requests and bytes it
 * served.
 *
 * Addresses: a request names an @object and a byte offset in it. For the
 * backing device the object is the file descriptor of an open backing file;
 * for single-region devices (a BOPT file, a cache store) it is 0.
 *
 * Who calls it: the indirector (borg/indirector.c: every request of a
 * home file or the BOPT, getattr, hold), the BOPT (borg/bopt.c) and the
 * cache store (cache/cache_store*.c) for their own regions, the
 * reconfigurator (reconfig/borg_reconfig.c: copies written to the BOPT, its sync);
 * fs/main.c creates the backing device at mount (and emulate='s
 * emulation, the BOPT's emulation file), fs/status.c reads the counters for
 * `hybridctl status`; device/emuvfs.c charges the databases' I/O to the
 * emulation; sim/full.c over models; the unit tests.
 *
 * Memory: hy_device_*_new() allocate; hy_device_free() calls the table's
 * destroy and frees the device. The emulation owns its files' maps (freed
 * with it). Locks: none on a device; the counters are atomics and the
 * operations are as thread-safe as pread(2) and pwrite(2). An emulation
 * has two mutexes, one for the model and one for the maps, never held
 * together, neither across an ioctl or the sleep.
 */
#ifndef HYBRIDFS_DEVICE_H
#define HYBRIDFS_DEVICE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct hy_device;

struct hy_device_attr {
	int64_t stamp;	  /* ctime, ns */
	int64_t mtime_ns; /* modification time, ns */
	uint64_t size;	  /* bytes */
};

struct hy_device_ops {
	/* Reads up to @len bytes at @off; returns the count (short only at the
	 * end of the object) or a negative errno. */
	ssize_t (*read)(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off);
	/* Writes up to @len bytes; returns the count or a negative errno. */
	ssize_t (*write)(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			 off_t off);
	/* Makes what was written to @object durable; 0 or a negative errno. */
	int (*sync)(struct hy_device *dev, int64_t object, bool data_only);
	/* Sets @object's size; 0 or a negative errno. */
	int (*truncate)(struct hy_device *dev, int64_t object, off_t size);
	/* fallocate(2) on @object, any mode the medium takes; may be NULL
	 * (then -EOPNOTSUPP). */
	int (*allocate)(struct hy_device *dev, int64_t object, int mode, off_t off, off_t len);
	/* @object's change stamp (its ctime in ns: it changes whenever the
	 * data or size does), modification time and size; may be NULL
	 * (-EOPNOTSUPP: a medium nobody else writes). */
	int (*getattr)(struct hy_device *dev, int64_t object, struct hy_device_attr *out);
	/* Sets @object's modification time (@mtime_ns, or now when < 0); may
	 * be NULL (-EOPNOTSUPP). */
	int (*set_mtime)(struct hy_device *dev, int64_t object, int64_t mtime_ns);
	/* A writable object for the same data as @object (which may have been
	 * opened read-only): @object itself (*@opened false) or a new one
	 * (*@opened true) that close_object() gives back. May be NULL: then
	 * every object is writable. */
	int (*writable)(struct hy_device *dev, int64_t object, int64_t *out, bool *opened);
	/* An object of the caller's own that reads and writes @object's data
	 * and stays valid after @object is closed (the cache keeps one to
	 * write a file home later), given back by close_object(). May be
	 * NULL: then writable() answers, and the holder still gives the
	 * object back through close_object(), which such a device makes
	 * harmless for an object it did not open (a model's are numbers). */
	int (*hold)(struct hy_device *dev, int64_t object, int64_t *out);
	void (*close_object)(struct hy_device *dev, int64_t object);
	/* Where @object's bytes at @offsets[0..n) lie on the disk (a model's
	 * own placement); may be NULL: hy_device_addresses() asks the
	 * filesystem. */
	int (*addresses)(struct hy_device *dev, int64_t object, const uint64_t *offsets, size_t n,
			 uint64_t *out);
	/* Starts reading @object's bytes [@off, @off + @len) into the page
	 * cache and returns without waiting (posix_fadvise WILLNEED): BORG's
	 * read-ahead along the BOPT. May be NULL (-EOPNOTSUPP: a medium with
	 * no page cache under it, a model). */
	int (*prefetch)(struct hy_device *dev, int64_t object, off_t off, off_t len);
	/* Releases the device's private data (may be NULL). */
	void (*destroy)(struct hy_device *dev);
};

struct hy_device_stats {
	uint64_t reads;
	uint64_t writes;
	uint64_t bytes_read;
	uint64_t bytes_written;
	uint64_t syncs;
	uint64_t errors;
	uint64_t seeks; /* requests that did not start where the last one ended */
	uint64_t prefetches, bytes_prefetched; /* hy_device_prefetch() started */
};

struct hy_device {
	const struct hy_device_ops *ops;
	char name[64]; /* for messages: "backing", "bopt", "cache" */
	void *priv;    /* owned by ops->destroy */
	_Atomic uint64_t reads, writes, bytes_read, bytes_written, syncs, errors;
	_Atomic uint64_t prefetches, bytes_prefetched;
	/* Where the last request ended, to count seeks: a statistic, so racing
	 * requests may each count as one. */
	_Atomic int64_t last_object;
	_Atomic uint64_t next_offset, seeks;
	/* HDD emulation (emulate=): NULL, or the model every request of this
	 * device is delayed by, and where the device lies on its disk */
	struct hy_device_emulation *emulation;
	int64_t emulation_region;
	/* ... and the file a single-region device's bytes lie in (the BOPT's
	 * descriptor, not owned), or -1 */
	int emulation_fd;
	/* Fault injection (fault.h): NULL, or the wrapper whose table is
	 * @ops now (hy_device_new() attaches it when a rule names the
	 * device); owned by that table's destroy. */
	void *fault;
	/* Who is told when the daemon changed an object's attributes behind
	 * the kernel (hy_device_set_changed_hook); NULL: nobody. Set before
	 * any request, never changed after. */
	void (*changed)(void *ctx, int64_t object);
	void *changed_ctx;
};

/* A device over open files: the object is a file descriptor. */
int hy_device_file_new(const char *name, struct hy_device **out);

/* Wraps an operations table (a model, a fault injector). @priv goes to
 * ops->destroy when the device is freed. When a fault rule (fault.h) names
 * @name, the table is wrapped in fault.c's, which sees read, write and sync
 * first. */
int hy_device_new(const char *name, const struct hy_device_ops *ops, void *priv,
		  struct hy_device **out);

void hy_device_free(struct hy_device *dev);

/* The counted entry points. hy_device_read() and hy_device_write() loop
 * until @len bytes are done, the object ends (read) or an error. */
ssize_t hy_device_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off);
ssize_t hy_device_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			off_t off);
int hy_device_sync(struct hy_device *dev, int64_t object, bool data_only);
/* The table's prefetch(): a read the disk serves in the background, so a
 * later hy_device_read() of those bytes finds them in the page cache.
 * Counted apart from the reads (prefetches, bytes_prefetched). Under
 * emulate= the emulated disk is charged for the bytes the page cache does
 * not hold yet, as one read, and the caller waits for it as a disk's next
 * request would (the read that follows is then free). 0, -EOPNOTSUPP
 * (the table has none) or the call's negative errno. */
int hy_device_prefetch(struct hy_device *dev, int64_t object, off_t off, off_t len);
int hy_device_truncate(struct hy_device *dev, int64_t object, off_t size);
int hy_device_allocate(struct hy_device *dev, int64_t object, int mode, off_t off, off_t len);
/* Not counted as requests: metadata. stamp() is getattr()'s stamp. */
int hy_device_getattr(struct hy_device *dev, int64_t object, struct hy_device_attr *out);
int hy_device_stamp(struct hy_device *dev, int64_t object, int64_t *stamp);
/* With @mtime_ns >= 0 the caller puts back the time a file had before
 * the daemon wrote its blocks home (the cache's cleaner, BORG's flush):
 * the file's ctime moved and perhaps its block count, while whoever
 * caches its attributes (the kernel) still holds the old ones, so the
 * changed hook is told once the time is set. A time of now (< 0) is a
 * request's own write, which the kernel accounts for itself. */
int hy_device_set_mtime(struct hy_device *dev, int64_t object, int64_t mtime_ns);
/* Sets the hook hy_device_set_mtime() calls (see above): @changed(@ctx,
 * object), from whatever thread wrote the file home, with no lock of the
 * device's held. Before the device serves anything. */
void hy_device_set_changed_hook(struct hy_device *dev, void (*changed)(void *ctx, int64_t object),
				void *ctx);
int hy_device_writable(struct hy_device *dev, int64_t object, int64_t *out, bool *opened);
/* The table's hold(), else writable(); *@opened says whether *@out must
 * go back through hy_device_close_object(). */
int hy_device_hold(struct hy_device *dev, int64_t object, int64_t *out, bool *opened);
void hy_device_close_object(struct hy_device *dev, int64_t object);

/* A read the kernel copies straight from a backing file's pages
 * (splice(2), for fs/ops_files.c's READ replies), which no table serves:
 * the descriptor to read @object through when @dev is the plain device
 * over open files, else -1 (under emulate=, which must price every
 * request, or a fault rule, which must see it). The caller then counts
 * the read with hy_device_count_read() (@done: the bytes, or a negative
 * errno), as hy_device_read() would have. */
int hy_device_direct_fd(const struct hy_device *dev, int64_t object);
void hy_device_count_read(struct hy_device *dev, int64_t object, off_t off, ssize_t done);

void hy_device_get_stats(struct hy_device *dev, struct hy_device_stats *out);

/* Where @object's bytes at @offsets[0..n) (ascending) lie on the disk, into
 * @out (PORE's zones, for the cache's cleaner: a few calls a pass, not on
 * the request path). A file on a real filesystem: its physical address
 * from FIEMAP (a byte the filesystem has not placed yet lies right after
 * the last placed one before it, before the first extent right before it);
 * a filesystem without FIEMAP (tmpfs) or a file with no placed byte: 64 MiB
 * per inode number plus the offset. Under emulate= the same places the
 * emulation prices (the BOPT's fallback and a region of no file: its
 * region). 0, or -EOPNOTSUPP for a device whose objects are not files, or
 * the ioctl's negative errno. */
int hy_device_addresses(struct hy_device *dev, int64_t object, const uint64_t *offsets, size_t n,
			uint64_t *out);

/* ---- emulation (emulate=hdd) ----------------------------------------------
 * A disk model (devmodel.h) that the devices of a mount share, as they
 * would share one disk: every read and write is delayed by the model's
 * service time for it, in one queue (a request starts when the emulated
 * disk is free, so concurrent requests wait for each other as on a real
 * disk), so that the layout's and the cache's effects show on a machine
 * whose disk is fast. The model's lock is held only to compute the service
 * time, never across the sleep.
 *
 * Where a request lies: where the filesystem put it. A file's bytes (a
 * backing file: the object; the BOPT: its emulation file) are priced at
 * their physical addresses from the file's FIEMAP map, read once and kept
 * per file (device, inode), and read again when the file was truncated or
 * allocated through a device, or (at most every 100 ms: no ioctl a
 * request) when its size or allocated blocks changed or a request touches
 * bytes the map does not place (a hole, delayed allocation) and the file
 * changed since; an overwrite in place moves nothing. A byte the
 * filesystem has not placed yet lies right after the last placed byte
 * before it (hy_device_addresses()'s rule). A request over several extents
 * is as many pieces on the model. Copy-on-write filesystems move
 * overwritten blocks; those are priced at the old place until the map is
 * read again. Fallback, where the filesystem has no map (tmpfs) or the file
 * no placed byte: a single-region device at its @region's byte address
 * plus the offset, a device over files at 64 MiB per inode number plus the
 * offset (files apart, a file's bytes contiguous). A region of no file (a
 * model BOPT) at @region plus the offset.
 *
 * What a disk never saw costs nothing: a read the page cache serves whole
 * is not charged (counted as cached), one it serves in part is charged for
 * the rest (hy_device_emulation_probe()). Where the page cache is all there
 * is (tmpfs) every read is charged, as on a disk with no cache; through a
 * fault injector (fault.h), which must see every read, too. Writes are
 * charged when made, at the place they go. The filesystem's own metadata
 * (inode tables, directories, its journal) is never seen: a device gets
 * file data only.
 *
 * The daemon's own state (its SQLite databases) lies on the same disk:
 * emuvfs.h charges their reads and writes through
 * hy_device_emulation_charge(), counted in state_requests too. */
struct hy_devmodel_params;
struct hy_device_emulation;

/* Emulated bytes per inode number of a device over files. */
#define HY_DEVICE_EMULATION_FILE_SPAN (UINT64_C(64) << 20)

struct hy_device_emulation_stats {
	uint64_t requests;	 /* delayed */
	double modeled_ms;	 /* sum of the model's service times */
	double waited_ms;	 /* sum of the delays (service plus queueing) */
	uint64_t state_requests; /* ... of them the daemon's state databases' */
	uint64_t cached;	 /* reads the page cache served whole: not charged */
	/* the model's own counts (devmodel.h): reads and writes served (a
	 * request over several extents is as many), the bytes, and those
	 * that moved the emulated head */
	uint64_t reads, writes, bytes_read, bytes_written, seeks;
};

/* 0, or -EINVAL (a bad model, named in @why) or -ENOMEM. */
int hy_device_emulation_new(const struct hy_devmodel_params *params,
			    struct hy_device_emulation **out, char *why, size_t why_size);
void hy_device_emulation_free(struct hy_device_emulation *emulation);
/* @dev's requests go through @emulation (NULL: no more); @region: its byte
 * address on the emulated disk, or -1 for a device over files. Set before
 * the device serves requests. */
void hy_device_set_emulation(struct hy_device *dev, struct hy_device_emulation *emulation,
			     int64_t region);
/* A single-region device's bytes lie in the file open as @fd (the BOPT's;
 * the caller keeps it open while the device serves, and the device's reads
 * must be pread(2) on it at the request's offset: the page-cache probe
 * answers for them): they are priced at that file's place, @region the
 * fallback. -1: none. */
void hy_device_set_emulation_fd(struct hy_device *dev, int fd);
/* The bytes of @fd from @off that the page cache holds (mincore() of a
 * mapping: no read started, no page faulted in), read into @buf: the
 * count, 0 at the end, or -EAGAIN (the first page is not cached), or
 * another -errno (a file that cannot be mapped: opened write-only, or a
 * filesystem without mmap). */
ssize_t hy_device_emulation_probe(int fd, void *buf, size_t len, off_t off);
/* Charges the daemon's own request of @fd's bytes [@off, @off + @len)
 * (read, or @write) to @emulation (NULL: nothing), its first @cached bytes
 * (a read's) served by the page cache, at the file's place, as a device's
 * request is; it waits for the emulated disk like one. */
void hy_device_emulation_charge(struct hy_device_emulation *emulation, int fd, uint64_t off,
				uint64_t len, uint64_t cached, bool write);
void hy_device_emulation_get_stats(struct hy_device_emulation *emulation,
				   struct hy_device_emulation_stats *out);

#endif
