/* bopt.c - see include/hybridfs/bopt.h.
 *
 * The header is encoded byte by byte (little-endian whatever the host).
 * libblkid is used twice: to resolve UUID= and LABEL= to a device, and to
 * name what a file or device holds when it is not a BOPT (a filesystem, a
 * partition table) so that refusals say what would have been overwritten.
 *
 * The BOPT's device (device.h) ignores the object it is given and always
 * uses the BOPT's descriptor: its private data is the struct hy_bopt.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blkid/blkid.h>
#include <linux/fs.h>

#include "hybridfs/bopt.h"
#include "hybridfs/device.h"
#include "hybridfs/log.h"

#define OFF_MAGIC	0
#define OFF_VERSION	8
#define OFF_HEADER_SIZE 12
#define OFF_UUID	16
#define OFF_GENERATION	56
#define OFF_TOTAL	64
#define OFF_READ	72
#define OFF_WRITE	80
#define OFF_FLAGS	88
#define OFF_RESERVED	92
#define OFF_CHECKSUM	96
#define UUID_FIELD	40
#define FLAG_CLEAN	1u

/* The largest block count whose byte size still fits an off_t. */
#define MAX_BLOCKS ((uint64_t)INT64_MAX / HY_BOPT_BLOCK)

static void say(char *why, size_t why_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_size)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_size, fmt, ap);
	va_end(ap);
}

/* ---- encoding ---- */

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t fnv1a64(const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

void hy_bopt_encode(const struct hy_bopt_header *h, unsigned char *buf)
{
	memset(buf, 0, HY_BOPT_BLOCK);
	memcpy(buf + OFF_MAGIC, HY_BOPT_MAGIC, 8);
	put_le32(buf + OFF_VERSION, h->version);
	put_le32(buf + OFF_HEADER_SIZE, HY_BOPT_HEADER_SIZE);
	/* NUL-padded; the struct keeps a terminating NUL, so at most 39 bytes */
	memcpy(buf + OFF_UUID, h->uuid, strnlen(h->uuid, UUID_FIELD - 1));
	put_le64(buf + OFF_GENERATION, h->generation);
	put_le64(buf + OFF_TOTAL, h->total_blocks);
	put_le64(buf + OFF_READ, h->read_blocks);
	put_le64(buf + OFF_WRITE, h->write_blocks);
	put_le32(buf + OFF_FLAGS, h->clean_shutdown ? FLAG_CLEAN : 0);
	put_le32(buf + OFF_RESERVED, 0);
	put_le64(buf + OFF_CHECKSUM, fnv1a64(buf, OFF_CHECKSUM));
}

int hy_bopt_decode(const unsigned char *buf, struct hy_bopt_header *h, char *why, size_t why_size)
{
	uint64_t sum, want, total, rd, wr;
	uint32_t version, header_size, flags;
	size_t uuid_len;

	memset(h, 0, sizeof(*h));
	if (memcmp(buf + OFF_MAGIC, HY_BOPT_MAGIC, 8) != 0) {
		say(why, why_size, "not a hybridfs BOPT (no BOPT magic)");
		return -EUCLEAN;
	}
	/* Before the checksum: a newer format may checksum differently. */
	version = get_le32(buf + OFF_VERSION);
	if (version > HY_BOPT_VERSION) {
		say(why, why_size,
		    "BOPT format version %" PRIu32 " is newer than this hybridfs reads (%d)",
		    version, HY_BOPT_VERSION);
		return -EPROTO;
	}
	sum = get_le64(buf + OFF_CHECKSUM);
	want = fnv1a64(buf, OFF_CHECKSUM);
	if (sum != want) {
		say(why, why_size,
		    "BOPT header damaged (checksum %016" PRIx64 ", expected %016" PRIx64 ")", sum,
		    want);
		return -EUCLEAN;
	}
	if (version == 0) {
		say(why, why_size, "BOPT header damaged (format version 0)");
		return -EUCLEAN;
	}
	header_size = get_le32(buf + OFF_HEADER_SIZE);
	if (header_size != HY_BOPT_HEADER_SIZE) {
		say(why, why_size, "BOPT header damaged (header size %" PRIu32 ", expected %d)",
		    header_size, HY_BOPT_HEADER_SIZE);
		return -EUCLEAN;
	}
	uuid_len = strnlen((const char *)buf + OFF_UUID, UUID_FIELD);
	if (uuid_len == 0 || uuid_len >= UUID_FIELD) {
		say(why, why_size, "BOPT header damaged (mount uuid %s)",
		    uuid_len ? "not terminated" : "empty");
		return -EUCLEAN;
	}
	for (size_t i = uuid_len; i < UUID_FIELD; i++) {
		if (buf[OFF_UUID + i] != 0) {
			say(why, why_size, "BOPT header damaged (mount uuid padding not zero)");
			return -EUCLEAN;
		}
	}
	flags = get_le32(buf + OFF_FLAGS);
	if ((flags & ~FLAG_CLEAN) || get_le32(buf + OFF_RESERVED)) {
		say(why, why_size,
		    "BOPT header damaged (unknown flags %#" PRIx32 " or reserved field %#" PRIx32
		    ")",
		    flags, get_le32(buf + OFF_RESERVED));
		return -EUCLEAN;
	}
	total = get_le64(buf + OFF_TOTAL);
	rd = get_le64(buf + OFF_READ);
	wr = get_le64(buf + OFF_WRITE);
	if (rd < 1 || wr < 1 || total > MAX_BLOCKS || rd >= total || wr >= total - rd ||
	    total != 1 + rd + wr) {
		say(why, why_size,
		    "BOPT sizes do not add up (%" PRIu64 " blocks in all, %" PRIu64
		    " read region, %" PRIu64 " write buffer, 1 header)",
		    total, rd, wr);
		return -EUCLEAN;
	}
	h->version = version;
	memcpy(h->uuid, buf + OFF_UUID, uuid_len);
	h->uuid[uuid_len] = '\0';
	h->generation = get_le64(buf + OFF_GENERATION);
	h->total_blocks = total;
	h->read_blocks = rd;
	h->write_blocks = wr;
	h->clean_shutdown = flags & FLAG_CLEAN;
	return 0;
}

/* ---- libblkid ---- */

/* What libblkid finds on @path: 1 with its name in @type, 0 for nothing,
 * a negative errno if it cannot look. Opens @path read-only. */
static int probe_signature(const char *path, char *type, size_t size)
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

/* ", libblkid finds ext4" or "" */
static void blkid_note(const char *path, char *note, size_t size)
{
	char type[64];

	note[0] = '\0';
	if (probe_signature(path, type, sizeof(type)) == 1)
		snprintf(note, size, ", libblkid finds %s there", type);
}

int hy_bopt_resolve(const char *spec, char *buf, size_t size, char *why, size_t why_size)
{
	char *dev;
	int n;

	if (!spec || !*spec) {
		say(why, why_size, "bopt: empty location");
		return -EINVAL;
	}
	if (strncmp(spec, "UUID=", 5) != 0 && strncmp(spec, "LABEL=", 6) != 0 &&
	    strncmp(spec, "PARTUUID=", 9) != 0 && strncmp(spec, "PARTLABEL=", 10) != 0) {
		if (spec[0] != '/') {
			say(why, why_size,
			    "bopt: \"%s\" is neither an absolute path nor UUID=, LABEL=, "
			    "PARTUUID= or PARTLABEL=",
			    spec);
			return -EINVAL;
		}
		n = snprintf(buf, size, "%s", spec);
		if (n < 0 || (size_t)n >= size) {
			say(why, why_size, "bopt: \"%s\" is too long a path", spec);
			return -ENAMETOOLONG;
		}
		return 0;
	}
	dev = blkid_evaluate_tag(spec, NULL, NULL);
	if (!dev) {
		say(why, why_size, "bopt: no device has %s (libblkid finds none)", spec);
		return -ENOENT;
	}
	n = snprintf(buf, size, "%s", dev);
	if (n < 0 || (size_t)n >= size) {
		say(why, why_size, "bopt: %s is \"%s\", too long a path", spec, dev);
		free(dev);
		return -ENAMETOOLONG;
	}
	free(dev);
	return 0;
}

/* ---- creation ---- */

/* Reads block 0 of @fd (zeros past the end of a short file). */
static int read_block0(int fd, unsigned char *buf)
{
	size_t done = 0;

	memset(buf, 0, HY_BOPT_BLOCK);
	while (done < HY_BOPT_BLOCK) {
		ssize_t n = pread(fd, buf + done, HY_BOPT_BLOCK - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return 0;
}

static int write_block0(int fd, const unsigned char *buf)
{
	size_t done = 0;

	while (done < HY_BOPT_BLOCK) {
		ssize_t n = pwrite(fd, buf + done, HY_BOPT_BLOCK - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static int device_size(int fd, const struct stat *st, uint64_t *size)
{
	if (S_ISREG(st->st_mode)) {
		*size = (uint64_t)st->st_size;
		return 0;
	}
	if (S_ISBLK(st->st_mode))
		return ioctl(fd, BLKGETSIZE64, size) < 0 ? -errno : 0;
	return -EINVAL;
}

/* The header of a new BOPT of @size bytes, or -EINVAL naming the sizes. */
static int plan_sizes(const char *path, const char *uuid, uint64_t size, uint64_t read_bytes,
		      struct hy_bopt_header *h, char *why, size_t why_size)
{
	uint64_t total = size / HY_BOPT_BLOCK, rd = read_bytes / HY_BOPT_BLOCK;

	memset(h, 0, sizeof(*h));
	if (total > MAX_BLOCKS)
		total = MAX_BLOCKS;
	if (rd < 1 || total < 3 || rd > total - 2) {
		say(why, why_size,
		    "bopt: \"%s\": %" PRIu64
		    " bytes do not hold a %d-byte header, a read region of %" PRIu64
		    " bytes and a write buffer (each of the two at least %d bytes)",
		    path, size, HY_BOPT_BLOCK, read_bytes, HY_BOPT_BLOCK);
		return -EINVAL;
	}
	h->version = HY_BOPT_VERSION;
	snprintf(h->uuid, sizeof(h->uuid), "%s", uuid);
	h->generation = 0;
	h->total_blocks = total;
	h->read_blocks = rd;
	h->write_blocks = total - 1 - rd;
	h->clean_shutdown = true; /* nothing in the write buffer yet */
	return 0;
}

static int write_header_durably(int fd, const struct hy_bopt_header *h)
{
	unsigned char buf[HY_BOPT_BLOCK];
	int rc;

	hy_bopt_encode(h, buf);
	rc = write_block0(fd, buf);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	return rc;
}

/* Makes a new directory entry durable; failure is only logged. */
static void sync_parent(const char *path)
{
	char *copy = strdup(path);
	int fd;

	if (!copy)
		return;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		hy_log(LOG_WARNING, "bopt: cannot sync the directory of \"%s\": %s", path,
		       strerror(errno));
	if (fd >= 0)
		close(fd);
	free(copy);
}

static int create_block(const char *path, const char *uuid, uint64_t read_bytes, bool force,
			char *why, size_t why_size)
{
	unsigned char buf[HY_BOPT_BLOCK];
	struct hy_bopt_header h, old;
	char type[64], msg[256];
	uint64_t size;
	struct stat st;
	int fd, rc;

	/* Look before opening for writing: read-only, no side effects. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		say(why, why_size, "bopt: cannot open \"%s\": %s", path, strerror(-rc));
		return rc;
	}
	rc = read_block0(fd, buf);
	close(fd);
	if (rc < 0) {
		say(why, why_size, "bopt: cannot read \"%s\": %s", path, strerror(-rc));
		return rc;
	}
	if (!force && memcmp(buf, HY_BOPT_MAGIC, 8) == 0) {
		if (hy_bopt_decode(buf, &old, msg, sizeof(msg)) == 0) {
			if (strcmp(old.uuid, uuid) != 0) {
				say(why, why_size,
				    "bopt: \"%s\" is the BOPT of mount %s, not of %s; refusing to "
				    "overwrite it without force",
				    path, old.uuid, uuid);
				return -EEXIST;
			}
		} else {
			say(why, why_size,
			    "bopt: \"%s\" holds a BOPT that cannot be read (%s); "
			    "refusing to overwrite it without force",
			    path, msg);
			return -EEXIST;
		}
	} else if (!force) {
		rc = probe_signature(path, type, sizeof(type));
		if (rc < 0) {
			say(why, why_size, "bopt: libblkid cannot probe \"%s\": %s", path,
			    strerror(-rc));
			return rc;
		}
		if (rc == 1) {
			say(why, why_size,
			    "bopt: \"%s\" holds %s (libblkid); refusing to overwrite it without "
			    "force",
			    path, type);
			return -EEXIST;
		}
	}
	/* O_EXCL on a block device: not while it is mounted or in use. */
	fd = open(path, O_RDWR | O_CLOEXEC | O_EXCL);
	if (fd < 0) {
		rc = -errno;
		say(why, why_size, "bopt: cannot open \"%s\" for writing: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0 || !S_ISBLK(st.st_mode) || device_size(fd, &st, &size) < 0) {
		rc = -EINVAL;
		say(why, why_size, "bopt: cannot find the size of the block device \"%s\"", path);
		goto out;
	}
	/* 0: all of the device but the header and one write-buffer block */
	if (read_bytes == 0 && size >= 3 * HY_BOPT_BLOCK)
		read_bytes = size / HY_BOPT_BLOCK * HY_BOPT_BLOCK - 2 * HY_BOPT_BLOCK;
	rc = plan_sizes(path, uuid, size, read_bytes, &h, why, why_size);
	if (rc < 0)
		goto out;
	rc = write_header_durably(fd, &h);
	if (rc < 0)
		say(why, why_size, "bopt: cannot write the header of \"%s\": %s", path,
		    strerror(-rc));
out:
	close(fd);
	return rc;
}

/* An existing regular file: only this mount's BOPT may be made again. */
static int check_existing_file(const char *path, const char *uuid, char *why, size_t why_size)
{
	unsigned char buf[HY_BOPT_BLOCK];
	struct hy_bopt_header old;
	char msg[256], note[128];
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		say(why, why_size, "bopt: \"%s\" exists and cannot be read: %s", path,
		    strerror(-rc));
		return rc;
	}
	rc = read_block0(fd, buf);
	close(fd);
	if (rc < 0) {
		say(why, why_size, "bopt: \"%s\" exists and cannot be read: %s", path,
		    strerror(-rc));
		return rc;
	}
	rc = hy_bopt_decode(buf, &old, msg, sizeof(msg));
	if (rc == 0 && strcmp(old.uuid, uuid) == 0)
		return 0;
	if (rc == 0) {
		say(why, why_size,
		    "bopt: \"%s\" exists and is the BOPT of mount %s, not of %s; refusing to "
		    "replace it",
		    path, old.uuid, uuid);
	} else {
		blkid_note(path, note, sizeof(note));
		say(why, why_size,
		    "bopt: \"%s\" exists and is not this mount's BOPT: %s%s; "
		    "refusing to replace it",
		    path, msg, note);
	}
	return -EEXIST;
}

static int create_file(const char *path, const char *uuid, uint64_t size, uint64_t read_bytes,
		       bool exists, char *why, size_t why_size)
{
	struct hy_bopt_header h;
	off_t bytes;
	int fd, rc;

	rc = plan_sizes(path, uuid, size, read_bytes, &h, why, why_size);
	if (rc < 0)
		return rc;
	bytes = (off_t)(h.total_blocks * HY_BOPT_BLOCK);
	if (exists) {
		rc = check_existing_file(path, uuid, why, why_size);
		if (rc < 0)
			return rc;
		fd = open(path, O_RDWR | O_CLOEXEC);
	} else {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		rc = -errno;
		say(why, why_size, "bopt: cannot %s \"%s\": %s", exists ? "open" : "create", path,
		    strerror(-rc));
		return rc;
	}
	/* A BOPT made again may shrink; then its tail goes. */
	if (exists && ftruncate(fd, bytes) < 0) {
		rc = -errno;
		say(why, why_size, "bopt: cannot resize \"%s\": %s", path, strerror(-rc));
		goto fail;
	}
	if (fallocate(fd, 0, 0, bytes) < 0) {
		rc = -errno;
		if (rc != -EOPNOTSUPP) {
			say(why, why_size, "bopt: cannot allocate %lld bytes for \"%s\": %s",
			    (long long)bytes, path, strerror(-rc));
			goto fail;
		}
		hy_log(LOG_WARNING,
		       "bopt: \"%s\": the filesystem does not support fallocate, the BOPT is a "
		       "sparse file made with ftruncate",
		       path);
		if (ftruncate(fd, bytes) < 0) {
			rc = -errno;
			say(why, why_size, "bopt: cannot size \"%s\": %s", path, strerror(-rc));
			goto fail;
		}
	}
	rc = write_header_durably(fd, &h);
	if (rc < 0) {
		say(why, why_size, "bopt: cannot write the header of \"%s\": %s", path,
		    strerror(-rc));
		goto fail;
	}
	close(fd);
	if (!exists)
		sync_parent(path);
	return 0;
fail:
	close(fd);
	if (!exists)
		unlink(path);
	return rc;
}

int hy_bopt_create(const char *path, const char *uuid, uint64_t size, uint64_t read_bytes,
		   bool force, char *why, size_t why_size)
{
	struct stat st;

	if (!path || !*path || !uuid || !*uuid || strlen(uuid) >= UUID_FIELD) {
		say(why, why_size, "bopt: a path and a mount uuid of 1 to %d characters are needed",
		    UUID_FIELD - 1);
		return -EINVAL;
	}
	if (stat(path, &st) < 0) {
		if (errno != ENOENT) {
			int rc = -errno;

			say(why, why_size, "bopt: cannot look at \"%s\": %s", path, strerror(-rc));
			return rc;
		}
		return create_file(path, uuid, size, read_bytes, false, why, why_size);
	}
	if (S_ISBLK(st.st_mode))
		return create_block(path, uuid, read_bytes, force, why, why_size);
	if (S_ISREG(st.st_mode))
		return create_file(path, uuid, size, read_bytes, true, why, why_size);
	say(why, why_size, "bopt: \"%s\" exists and is neither a regular file nor a block device",
	    path);
	return -EEXIST;
}

/* ---- the open BOPT ---- */

static ssize_t bopt_dev_read(struct hy_device *dev, int64_t object, void *buf, size_t len,
			     off_t off)
{
	const struct hy_bopt *bopt = dev->priv;
	ssize_t n = pread(bopt->fd, buf, len, off);

	return n < 0 ? -errno : n;
}

static ssize_t bopt_dev_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			      off_t off)
{
	const struct hy_bopt *bopt = dev->priv;
	ssize_t n = pwrite(bopt->fd, buf, len, off);

	return n < 0 ? -errno : n;
}

static int bopt_dev_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	const struct hy_bopt *bopt = dev->priv;
	int rc = data_only ? fdatasync(bopt->fd) : fsync(bopt->fd);

	return rc < 0 ? -errno : 0;
}

/* A BOPT has the size it was made with. */
static int bopt_dev_truncate(struct hy_device *dev, int64_t object, off_t size)
{
	return -EOPNOTSUPP;
}

static const struct hy_device_ops bopt_dev_ops = {
	.read = bopt_dev_read,
	.write = bopt_dev_write,
	.sync = bopt_dev_sync,
	.truncate = bopt_dev_truncate,
	.allocate = NULL,
	.destroy = NULL, /* the hy_bopt owns the descriptor */
};

int hy_bopt_open(const char *path, const char *uuid, struct hy_bopt **out, char *why,
		 size_t why_size)
{
	unsigned char buf[HY_BOPT_BLOCK];
	struct hy_bopt *bopt = NULL;
	struct hy_bopt_header h;
	char msg[256], note[128];
	uint64_t size;
	struct stat st;
	int fd, rc;

	*out = NULL;
	if (!path || !*path) {
		say(why, why_size, "bopt: no path");
		return -EINVAL;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		say(why, why_size, "bopt: cannot open \"%s\": %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		say(why, why_size, "bopt: cannot stat \"%s\": %s", path, strerror(-rc));
		goto fail;
	}
	rc = device_size(fd, &st, &size);
	if (rc < 0) {
		say(why, why_size, "bopt: \"%s\" %s", path,
		    rc == -EINVAL ? "is neither a regular file nor a block device"
				  : "has a size that cannot be read");
		goto fail;
	}
	rc = read_block0(fd, buf);
	if (rc < 0) {
		say(why, why_size, "bopt: cannot read \"%s\": %s", path, strerror(-rc));
		goto fail;
	}
	rc = hy_bopt_decode(buf, &h, msg, sizeof(msg));
	if (rc < 0) {
		note[0] = '\0';
		if (memcmp(buf, HY_BOPT_MAGIC, 8) != 0)
			blkid_note(path, note, sizeof(note));
		say(why, why_size, "bopt: \"%s\": %s%s", path, msg, note);
		goto fail;
	}
	if (uuid && strcmp(h.uuid, uuid) != 0) {
		say(why, why_size, "bopt: \"%s\" is the BOPT of mount %s, not of mount %s", path,
		    h.uuid, uuid);
		rc = -EEXIST;
		goto fail;
	}
	if (h.total_blocks > size / HY_BOPT_BLOCK) {
		say(why, why_size,
		    "bopt: \"%s\" is %" PRIu64 " bytes but its header says %" PRIu64
		    " blocks of %d (truncated?)",
		    path, size, h.total_blocks, HY_BOPT_BLOCK);
		rc = -EUCLEAN;
		goto fail;
	}
	bopt = calloc(1, sizeof(*bopt));
	if (!bopt || !(bopt->path = strdup(path))) {
		rc = -ENOMEM;
		say(why, why_size, "bopt: out of memory opening \"%s\"", path);
		goto fail;
	}
	bopt->fd = fd;
	bopt->header = h;
	rc = hy_device_new("bopt", &bopt_dev_ops, bopt, &bopt->device);
	if (rc < 0) {
		say(why, why_size, "bopt: out of memory opening \"%s\"", path);
		goto fail;
	}
	*out = bopt;
	return 0;
fail:
	if (bopt)
		free(bopt->path);
	free(bopt);
	close(fd);
	return rc;
}

static int update_header(struct hy_bopt *bopt, const struct hy_bopt_header *h)
{
	unsigned char buf[HY_BOPT_BLOCK];
	int rc;

	hy_bopt_encode(h, buf);
	rc = write_block0(bopt->fd, buf);
	if (rc == 0 && fdatasync(bopt->fd) < 0)
		rc = -errno;
	if (rc < 0) {
		hy_log(LOG_ERR, "bopt: cannot update the header of \"%s\": %s", bopt->path,
		       strerror(-rc));
		return rc;
	}
	bopt->header = *h;
	return 0;
}

int hy_bopt_set_generation(struct hy_bopt *bopt, uint64_t generation)
{
	struct hy_bopt_header h = bopt->header;

	h.generation = generation;
	return update_header(bopt, &h);
}

int hy_bopt_set_clean(struct hy_bopt *bopt, bool clean)
{
	struct hy_bopt_header h = bopt->header;

	h.clean_shutdown = clean;
	return update_header(bopt, &h);
}

uint64_t hy_bopt_read_offset(const struct hy_bopt *bopt, uint64_t n)
{
	return (1 + n) * HY_BOPT_BLOCK;
}

uint64_t hy_bopt_write_offset(const struct hy_bopt *bopt, uint64_t n)
{
	return (1 + bopt->header.read_blocks + n) * HY_BOPT_BLOCK;
}

void hy_bopt_close(struct hy_bopt *bopt)
{
	if (!bopt)
		return;
	hy_device_free(bopt->device);
	if (bopt->fd >= 0)
		close(bopt->fd);
	free(bopt->path);
	free(bopt);
}
