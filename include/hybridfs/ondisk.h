/*
 * ondisk.h - the low-level helpers every on-disk format of hybridfs shares:
 * the BOPT (bopt.h), the map journal (map_journal.h) and the SSD cache
 * store (cache_store.h).
 *
 * What is here: little-endian encoding of 32- and 64-bit integers (byte by
 * byte, whatever the host), the FNV-1a 32 and 64 checksums, whole-buffer
 * pread/pwrite loops, the size of a regular file or block device, the
 * libblkid signature probe, the resolution of UUID=, LABEL=, PARTUUID= and
 * PARTLABEL= locations, making a new directory entry durable, and the
 * helper that formats a refusal into a caller's message buffer; and the
 * sequence that makes a region on a path (the look at what is there, the
 * new or re-made file) behind a small per-format callback interface
 * (struct hy_ondisk_format).
 *
 * Who calls it: borg/bopt.c, borg/map_journal.c, cache/cache_store*.c;
 * fs/main.c and fs/cache_glue.c (where a BOPT or store may be made:
 * hy_ondisk_check_new, hy_ondisk_on_ram; fs/main.c also whether the
 * backing disk spins, hy_ondisk_rotational), reconfig/borg_reconfig.c
 * (where the BOPT lies on the disk, hy_ondisk_physical),
 * ctl/format_cache_cmd.c (the
 * same checks), engine/workload_policy.c (hy_ondisk_say for its
 * messages); the fuzz targets and the unit tests.
 *
 * Memory: nothing is kept; hy_ondisk_resolve() and hy_ondisk_sync_parent()
 * free what they allocate before returning. Locks: none; every function is
 * safe to call from any thread on its own arguments.
 */
#ifndef HYBRIDFS_ONDISK_H
#define HYBRIDFS_ONDISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* How a refusal names the mount @uuid (a store or BOPT's owner, or the
 * mount asking), into @out: "mount UUID", unless the program installed a
 * namer (the daemon: hy_mount_name_describe of mount_name.h, which adds
 * the mount's directories). @near is the file's path. The namer is set
 * once at start, before any thread; NULL puts the plain name back. */
typedef void hy_ondisk_mount_namer(const char *uuid, const char *near, char *out, size_t size);
void hy_ondisk_set_mount_namer(hy_ondisk_mount_namer *namer);
void hy_ondisk_name_mount(const char *uuid, const char *near, char *out, size_t size);

/* Formats a message into @why (nothing if @why is NULL or @why_size 0). */
void hy_ondisk_say(char *why, size_t why_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- little-endian integers ---- */

void hy_ondisk_put_le32(unsigned char *p, uint32_t v);
void hy_ondisk_put_le64(unsigned char *p, uint64_t v);
uint32_t hy_ondisk_get_le32(const unsigned char *p);
uint64_t hy_ondisk_get_le64(const unsigned char *p);

/* ---- FNV-1a checksums ---- */

#define HY_ONDISK_FNV1A32_INIT 2166136261u

uint32_t hy_ondisk_fnv1a32(const unsigned char *p, size_t len);
/* Continues a running FNV-1a 32 hash @h (start from HY_ONDISK_FNV1A32_INIT):
 * hashing a then b this way equals hashing a and b concatenated. */
uint32_t hy_ondisk_fnv1a32_more(uint32_t h, const unsigned char *p, size_t len);
uint64_t hy_ondisk_fnv1a64(const unsigned char *p, size_t len);

/* ---- whole-buffer I/O ---- */

/* Reads @len bytes at @off, retrying on EINTR and after short reads. Returns
 * the number of bytes read, less than @len only at end of file, with the
 * rest of @buf zeroed; or -errno (the contents of @buf are then undefined). */
ssize_t hy_ondisk_read_full(int fd, void *buf, size_t len, uint64_t off);

/* Writes @len bytes at @off, retrying on EINTR and after short writes.
 * 0, -errno, or -EIO if pwrite wrote nothing. */
int hy_ondisk_write_full(int fd, const void *buf, size_t len, uint64_t off);

/* The size in bytes of the regular file or block device @fd (@st its fstat):
 * 0, -errno if the device cannot be asked, -EINVAL for anything else. */
int hy_ondisk_size(int fd, const struct stat *st, uint64_t *size);

/* ---- libblkid ---- */

/* What libblkid finds on @path (opened read-only): 1 with its name (a
 * filesystem, a partition table, "several conflicting signatures") in
 * @type, 0 for nothing, a negative errno if it cannot look. */
int hy_ondisk_probe_signature(const char *path, char *type, size_t size);

/* Resolves a location: an absolute path is copied, UUID=, LABEL=, PARTUUID=
 * and PARTLABEL= are evaluated by libblkid. @what ("bopt", "cache") prefixes
 * the messages. 0, -EINVAL (empty, or neither a path nor a tag), -ENOENT (no
 * device has the tag) or -ENAMETOOLONG (@buf too small), with a message. */
int hy_ondisk_resolve(const char *spec, const char *what, char *buf, size_t size, char *why,
		      size_t why_size);

/* ---- where a region may live ---- */

/* 1 when the regular file @path, or the folder that would hold it when it
 * does not exist, lies on a RAM filesystem (tmpfs, ramfs: statfs), whose
 * contents a reboot loses; its name in @type ("tmpfs"). 0 when not, for a
 * block device (its node is in /dev, its data on the device), or when it
 * cannot tell. */
int hy_ondisk_on_ram(const char *path, char *type, size_t size);

/* Whether the block device that holds the filesystem of @path spins (its
 * sysfs queue/rotational; a partition asks its disk): 1 rotational, 0 not
 * (an SSD, NVMe, zram), or -ENODEV when it cannot tell (no block device
 * behind it: tmpfs, FUSE, a btrfs of several devices, no sysfs). The sysfs
 * root is /sys, or $HYBRIDFS_SYSFS when set (the tests' stand-in). */
int hy_ondisk_rotational(const char *path);

/* The disk byte address of byte @offset of the file @fd (FIEMAP): 0 and
 * *@out, -ENODATA for a hole or a block not placed yet (delayed
 * allocation, inline data), -EOPNOTSUPP where the filesystem has no map
 * (tmpfs), or another negative errno. One ioctl: not for a hot path. */
int hy_ondisk_physical(int fd, uint64_t offset, uint64_t *out);

/* For a store or BOPT the user named at a resolved @path: when nothing is
 * there, whether one may be made there. Never under /dev (a device's name
 * that no device has is a mistake, and /dev is RAM): -ENODEV, "no such
 * device". Never on a RAM filesystem: -EMEDIUMTYPE. 0 when @path exists
 * (what is there is looked at when it is opened) or may be made. The
 * message in @why does not name @path: callers prefix what the user wrote
 * ("cache=/dev/x: no such device ..."). */
int hy_ondisk_check_new(const char *path, char *why, size_t why_size);

/* ---- durability ---- */

/* fsyncs the directory that holds @path, to make a new entry durable.
 * 0 or -errno (-ENOMEM if @path cannot be copied). If @what is not NULL a
 * failure to open or sync the directory is also logged as a warning
 * prefixed with @what; callers for which it is not fatal ignore the result. */
int hy_ondisk_sync_parent(const char *path, const char *what);

/* ---- making a region (a BOPT, a cache store) on a path ---- */

/* The largest block 0 hy_ondisk_check_overwrite() reads. */
#define HY_ONDISK_BLOCK0_MAX 4096

/* What a format's block 0 holds, as its classify callback sees it. */
enum hy_ondisk_kind {
	HY_ONDISK_FOREIGN,     /* not this format's magic: someone else's, or nothing */
	HY_ONDISK_OURS,	       /* this format, for this mount's uuid */
	HY_ONDISK_OTHER_MOUNT, /* this format, for another mount (its uuid in @other) */
	HY_ONDISK_DAMAGED,     /* this format's magic, but it does not decode (@msg says why) */
};

/* The callbacks and wording of one on-disk format. Every message is
 * prefixed with "@what: " and names the format with @noun. */
struct hy_ondisk_format {
	const char *what;    /* message prefix: "bopt", "cache" */
	const char *noun;    /* the region in messages: "BOPT", "cache store" */
	const char *written; /* what write() writes, in "cannot write @written \"path\"" */
	const char *sparse;  /* the warning's tail when fallocate is not supported */
	size_t block0_size;  /* bytes of block 0 classify() needs, at most HY_ONDISK_BLOCK0_MAX */
	/* Classifies @block0 for mount @uuid; fills @other (OTHER_MOUNT) or
	 * @msg (DAMAGED). Must not fail otherwise. */
	enum hy_ondisk_kind (*classify)(const unsigned char *block0, const char *uuid, char *other,
					size_t other_size, char *msg, size_t msg_size);
	/* Writes the new header/layout on @fd and syncs it: 0 or -errno.
	 * @arg is the caller's (the planned header). */
	int (*write)(int fd, const void *arg);
};

/* The read-only look at an existing @path (a block device, or a file the
 * format lets be overwritten) before it is opened for writing: block 0 is
 * read (even with @force: a device that cannot be read fails here), and
 * unless @force another mount's region ("is the @noun of mount X,
 * not of Y"), a damaged one ("holds a @noun that cannot be read") or a
 * signature libblkid finds ("holds ext4 (libblkid)") is refused with
 * -EEXIST, all "...; refusing to overwrite it without force". 0 when it may
 * be overwritten, -EEXIST, or -errno if it cannot be opened, read or probed;
 * with a message in @why. */
int hy_ondisk_check_overwrite(const struct hy_ondisk_format *fmt, const char *path,
			      const char *uuid, bool force, char *why, size_t why_size);

/* Makes the region in the regular file @path: a new one (@exists false:
 * O_CREAT|O_EXCL, mode 0600) or this mount's existing one (the caller has
 * checked it; it is truncated to @bytes, a region made again may shrink).
 * The file is preallocated to @bytes with fallocate (where the filesystem
 * does not support it: a warning, and ftruncate), fmt->write(fd, @arg)
 * writes the header, and a new file's directory is synced (a failure there
 * is only logged). On failure a new file is unlinked. 0 or -errno, with a
 * message in @why. */
int hy_ondisk_make_file(const struct hy_ondisk_format *fmt, const void *arg, const char *path,
			bool exists, uint64_t bytes, char *why, size_t why_size);

#endif
