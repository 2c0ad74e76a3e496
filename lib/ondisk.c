/* ondisk.c - see include/hybridfs/ondisk.h.
 *
 * What it is for: the helpers every on-disk format of hybridfs shares (the
 * BOPT, the map journal, the cache store), kept once here instead of a copy
 * in each format's module.
 *
 * Who calls it: borg/bopt.c, borg/map_journal.c, cache/cache_store*.c.
 *
 * Memory: resolve and sync_parent allocate (a libblkid string, a copy of a
 * path) and free before returning; nothing else allocates. Locks: none.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <blkid/blkid.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>

#include "hybridfs/log.h"
#include "hybridfs/ondisk.h"

void hy_ondisk_say(char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hy_log_vwhy(0, why, why_size, fmt, ap);
	va_end(ap);
}

/* ---- little-endian integers ---- */

void hy_ondisk_put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

void hy_ondisk_put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t hy_ondisk_get_le32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t hy_ondisk_get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* ---- FNV-1a checksums ---- */

uint32_t hy_ondisk_fnv1a32_more(uint32_t h, const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

uint32_t hy_ondisk_fnv1a32(const unsigned char *p, size_t len)
{
	return hy_ondisk_fnv1a32_more(HY_ONDISK_FNV1A32_INIT, p, len);
}

uint64_t hy_ondisk_fnv1a64(const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* ---- whole-buffer I/O ---- */

ssize_t hy_ondisk_read_full(int fd, void *buf, size_t len, uint64_t off)
{
	unsigned char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {
			memset(p + done, 0, len - done);
			break;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int hy_ondisk_write_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const unsigned char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, p + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

int hy_ondisk_size(int fd, const struct stat *st, uint64_t *size)
{
	if (S_ISREG(st->st_mode)) {
		*size = (uint64_t)st->st_size;
		return 0;
	}
	if (S_ISBLK(st->st_mode))
		return ioctl(fd, BLKGETSIZE64, size) < 0 ? -errno : 0;
	return -EINVAL;
}

/* ---- libblkid ---- */

int hy_ondisk_probe_signature(const char *path, char *type, size_t size)
{
	blkid_probe pr = blkid_new_probe_from_filename(path);
	const char *value = NULL;
	int rc, found = 0;

	if (!pr)
		return errno ? -errno : -EIO;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	rc = blkid_do_safeprobe(pr);
	if (rc == 0) {
		if (blkid_probe_lookup_value(pr, "TYPE", &value, NULL) == 0 ||
		    blkid_probe_lookup_value(pr, "PTTYPE", &value, NULL) == 0)
			snprintf(type, size, "%s", value);
		else
			snprintf(type, size, "an unnamed signature");
		found = 1;
	} else if (rc == -2) {
		snprintf(type, size, "several conflicting signatures");
		found = 1;
	} else if (rc < 0) {
		found = -EIO;
	}
	blkid_free_probe(pr);
	return found;
}

int hy_ondisk_resolve(const char *spec, const char *what, char *buf, size_t size, char *why,
		      size_t why_size)
{
	char *dev;
	int n;

	if (!spec || !*spec) {
		hy_ondisk_say(why, why_size, "%s: empty location", what);
		return -EINVAL;
	}
	if (strncmp(spec, "UUID=", 5) != 0 && strncmp(spec, "LABEL=", 6) != 0 &&
	    strncmp(spec, "PARTUUID=", 9) != 0 && strncmp(spec, "PARTLABEL=", 10) != 0) {
		if (spec[0] != '/') {
			hy_ondisk_say(why, why_size,
				      "%s: \"%s\" is neither an absolute path nor UUID=, LABEL=, "
				      "PARTUUID= or PARTLABEL=",
				      what, spec);
			return -EINVAL;
		}
		n = snprintf(buf, size, "%s", spec);
		if (n < 0 || (size_t)n >= size) {
			hy_ondisk_say(why, why_size, "%s: \"%s\" is too long a path", what, spec);
			return -ENAMETOOLONG;
		}
		return 0;
	}
	dev = blkid_evaluate_tag(spec, NULL, NULL);
	if (!dev) {
		hy_ondisk_say(why, why_size, "%s: no device has %s (libblkid finds none)", what,
			      spec);
		return -ENOENT;
	}
	n = snprintf(buf, size, "%s", dev);
	if (n < 0 || (size_t)n >= size) {
		hy_ondisk_say(why, why_size, "%s: %s is \"%s\", too long a path", what, spec, dev);
		free(dev);
		return -ENAMETOOLONG;
	}
	free(dev);
	return 0;
}

/* ---- where a region may live ---- */

int hy_ondisk_on_ram(const char *path, char *type, size_t size)
{
	struct statfs sf;
	struct stat st;
	char *copy;
	int rc;

	/* a device's node lies in /dev (devtmpfs), its data on the device */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return 0;
	rc = statfs(path, &sf);
	if (rc < 0 && errno == ENOENT) {
		copy = strdup(path);
		if (!copy)
			return 0;
		rc = statfs(dirname(copy), &sf);
		free(copy);
	}
	if (rc < 0)
		return 0;
	/* devtmpfs (/dev) reports itself as tmpfs */
	if (sf.f_type == TMPFS_MAGIC) {
		snprintf(type, size, "tmpfs");
		return 1;
	}
	if (sf.f_type == RAMFS_MAGIC) {
		snprintf(type, size, "ramfs");
		return 1;
	}
	return 0;
}

int hy_ondisk_check_new(const char *path, char *why, size_t why_size)
{
	struct stat st;
	char type[16];

	if (lstat(path, &st) == 0 || errno != ENOENT)
		return 0;
	if (strncmp(path, "/dev/", 5) == 0) {
		hy_ondisk_say(why, why_size,
			      "no such device (a path under /dev names a device; nothing is made "
			      "there)");
		return -ENODEV;
	}
	if (hy_ondisk_on_ram(path, type, sizeof(type))) {
		hy_ondisk_say(why, why_size,
			      "\"%s\" does not exist, and none is made on a RAM filesystem (%s), "
			      "which a reboot empties: name a file on a disk or a device",
			      path, type);
		return -EMEDIUMTYPE;
	}
	return 0;
}

int hy_ondisk_rotational(const char *path)
{
	const char *root = getenv("HYBRIDFS_SYSFS");
	char sys[PATH_MAX];
	struct stat st;

	if (!root || !*root)
		root = "/sys";
	if (stat(path, &st) < 0)
		return -errno;
	/* the device's own queue, else its disk's: a partition's sysfs folder
	 * lies inside its disk's */
	for (int up = 0; up < 2; up++) {
		FILE *f;
		int c;

		snprintf(sys, sizeof(sys), "%s/dev/block/%u:%u/%squeue/rotational", root,
			 major(st.st_dev), minor(st.st_dev), up ? "../" : "");
		f = fopen(sys, "r");
		if (!f)
			continue;
		c = fgetc(f);
		fclose(f);
		if (c == '0' || c == '1')
			return c - '0';
	}
	return -ENODEV;
}

/* ---- durability ---- */

int hy_ondisk_sync_parent(const char *path, const char *what)
{
	char *copy = strdup(path);
	int fd, rc = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		rc = -errno;
		if (what)
			hy_log(LOG_WARNING, "%s: cannot sync the directory of \"%s\": %s", what,
			       path, strerror(-rc));
	}
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

static hy_ondisk_mount_namer *mount_namer;

void hy_ondisk_set_mount_namer(hy_ondisk_mount_namer *namer)
{
	mount_namer = namer;
}

void hy_ondisk_name_mount(const char *uuid, const char *near, char *out, size_t size)
{
	if (mount_namer)
		mount_namer(uuid, near, out, size);
	else
		snprintf(out, size, "mount %s", uuid ? uuid : "");
}

/* ---- making a region on a path ---- */

int hy_ondisk_check_overwrite(const struct hy_ondisk_format *fmt, const char *path,
			      const char *uuid, bool force, char *why, size_t why_size)
{
	unsigned char buf[HY_ONDISK_BLOCK0_MAX];
	char type[64], other[64], msg[256];
	size_t len = fmt->block0_size < sizeof(buf) ? fmt->block0_size : sizeof(buf);
	ssize_t n;
	int fd, rc;

	/* Look before opening for writing: read-only, no side effects. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		hy_ondisk_say(why, why_size, "%s: cannot open \"%s\": %s", fmt->what, path,
			      strerror(-rc));
		return rc;
	}
	n = hy_ondisk_read_full(fd, buf, len, 0);
	close(fd);
	if (n < 0) {
		hy_ondisk_say(why, why_size, "%s: cannot read \"%s\": %s", fmt->what, path,
			      strerror((int)-n));
		return (int)n;
	}
	if (force)
		return 0;
	switch (fmt->classify(buf, uuid, other, sizeof(other), msg, sizeof(msg))) {
	case HY_ONDISK_OURS:
		return 0;
	case HY_ONDISK_OTHER_MOUNT: {
		char owner[1024], self[1024];

		hy_ondisk_name_mount(other, path, owner, sizeof(owner));
		hy_ondisk_name_mount(uuid, path, self, sizeof(self));
		hy_ondisk_say(why, why_size,
			      "%s: \"%s\" is the %s of %s, not of %s; refusing to overwrite it "
			      "without force",
			      fmt->what, path, fmt->noun, owner, self);
		return -EEXIST;
	}
	case HY_ONDISK_DAMAGED:
		hy_ondisk_say(why, why_size,
			      "%s: \"%s\" holds a %s that cannot be read (%s); refusing to "
			      "overwrite it without force",
			      fmt->what, path, fmt->noun, msg);
		return -EEXIST;
	case HY_ONDISK_FOREIGN:
		break;
	}
	rc = hy_ondisk_probe_signature(path, type, sizeof(type));
	if (rc < 0) {
		hy_ondisk_say(why, why_size, "%s: libblkid cannot probe \"%s\": %s", fmt->what,
			      path, strerror(-rc));
		return rc;
	}
	if (rc == 1) {
		hy_ondisk_say(why, why_size,
			      "%s: \"%s\" holds %s (libblkid); refusing to overwrite it without "
			      "force",
			      fmt->what, path, type);
		return -EEXIST;
	}
	return 0;
}

int hy_ondisk_make_file(const struct hy_ondisk_format *fmt, const void *arg, const char *path,
			bool exists, uint64_t bytes, char *why, size_t why_size)
{
	int fd, rc;

	if (exists)
		fd = open(path, O_RDWR | O_CLOEXEC);
	else
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		hy_ondisk_say(why, why_size, "%s: cannot %s \"%s\": %s", fmt->what,
			      exists ? "open" : "create", path, strerror(-rc));
		return rc;
	}
	/* A region made again may shrink; then its tail goes. */
	if (exists && ftruncate(fd, (off_t)bytes) < 0) {
		rc = -errno;
		hy_ondisk_say(why, why_size, "%s: cannot resize \"%s\": %s", fmt->what, path,
			      strerror(-rc));
		goto fail;
	}
	if (fallocate(fd, 0, 0, (off_t)bytes) < 0) {
		rc = -errno;
		if (rc != -EOPNOTSUPP) {
			hy_ondisk_say(why, why_size,
				      "%s: cannot allocate %lld bytes for \"%s\": %s", fmt->what,
				      (long long)bytes, path, strerror(-rc));
			goto fail;
		}
		hy_log(LOG_WARNING, "%s: \"%s\": the filesystem does not support fallocate, %s",
		       fmt->what, path, fmt->sparse);
		if (ftruncate(fd, (off_t)bytes) < 0) {
			rc = -errno;
			hy_ondisk_say(why, why_size, "%s: cannot size \"%s\": %s", fmt->what, path,
				      strerror(-rc));
			goto fail;
		}
	}
	rc = fmt->write(fd, arg);
	if (rc < 0) {
		hy_ondisk_say(why, why_size, "%s: cannot write %s \"%s\": %s", fmt->what,
			      fmt->written, path, strerror(-rc));
		goto fail;
	}
	close(fd);
	if (!exists)
		(void)hy_ondisk_sync_parent(path, fmt->what); /* only logged */
	return 0;
fail:
	close(fd);
	if (!exists)
		unlink(path);
	return rc;
}

int hy_ondisk_physical(int fd, uint64_t offset, uint64_t *out)
{
	/* room for one extent after the map (a struct with a flexible array
	 * may not be followed by more members in ISO C) */
	union {
		struct fiemap map;
		unsigned char bytes[sizeof(struct fiemap) + sizeof(struct fiemap_extent)];
	} req;
	const struct fiemap_extent *x = &req.map.fm_extents[0];

	memset(&req, 0, sizeof(req));
	req.map.fm_start = offset;
	req.map.fm_length = 1;
	req.map.fm_extent_count = 1;
	if (ioctl(fd, FS_IOC_FIEMAP, &req.map) < 0)
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	if (req.map.fm_mapped_extents == 0 || offset < x->fe_logical ||
	    offset >= x->fe_logical + x->fe_length ||
	    (x->fe_flags &
	     (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_DATA_INLINE)))
		return -ENODATA;
	*out = x->fe_physical + (offset - x->fe_logical);
	return 0;
}
