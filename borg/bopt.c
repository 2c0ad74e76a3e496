/* bopt.c - see include/hybridfs/bopt.h.
 *
 * The header is encoded byte by byte (little-endian whatever the host)
 * with the shared helpers of ondisk.h. libblkid is used twice, through
 * ondisk.h: to resolve UUID= and LABEL= to a device, and to name what a
 * file or device holds when it is not a BOPT (a filesystem, a partition
 * table) so that refusals say what would have been overwritten.
 *
 * The BOPT's device (device.h) ignores the object it is given and always
 * uses the BOPT's descriptor: its private data is the struct hy_bopt.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hybridfs/bopt.h"
#include "hybridfs/device.h"
#include "hybridfs/log.h"
#include "hybridfs/ondisk.h"

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

void hy_bopt_encode(const struct hy_bopt_header *h, unsigned char *buf)
{
	memset(buf, 0, HY_BOPT_BLOCK);
	memcpy(buf + OFF_MAGIC, HY_BOPT_MAGIC, 8);
	hy_ondisk_put_le32(buf + OFF_VERSION, h->version);
	hy_ondisk_put_le32(buf + OFF_HEADER_SIZE, HY_BOPT_HEADER_SIZE);
	/* NUL-padded; the struct keeps a terminating NUL, so at most 39 bytes */
	memcpy(buf + OFF_UUID, h->uuid, strnlen(h->uuid, UUID_FIELD - 1));
	hy_ondisk_put_le64(buf + OFF_GENERATION, h->generation);
	hy_ondisk_put_le64(buf + OFF_TOTAL, h->total_blocks);
	hy_ondisk_put_le64(buf + OFF_READ, h->read_blocks);
	hy_ondisk_put_le64(buf + OFF_WRITE, h->write_blocks);
	hy_ondisk_put_le32(buf + OFF_FLAGS, h->clean_shutdown ? FLAG_CLEAN : 0);
	hy_ondisk_put_le32(buf + OFF_RESERVED, 0);
	hy_ondisk_put_le64(buf + OFF_CHECKSUM, hy_ondisk_fnv1a64(buf, OFF_CHECKSUM));
}

int hy_bopt_decode(const unsigned char *buf, struct hy_bopt_header *h, char *why, size_t why_size)
{
	uint64_t sum, want, total, rd, wr;
	uint32_t version, header_size, flags;
	size_t uuid_len;

	memset(h, 0, sizeof(*h));
	if (memcmp(buf + OFF_MAGIC, HY_BOPT_MAGIC, 8) != 0) {
		hy_ondisk_say(why, why_size, "not a hybridfs BOPT (no BOPT magic)");
		return -EUCLEAN;
	}
	/* Before the checksum: a newer format may checksum differently. */
	version = hy_ondisk_get_le32(buf + OFF_VERSION);
	if (version > HY_BOPT_VERSION) {
		hy_ondisk_say(why, why_size,
			      "BOPT format version %" PRIu32
			      " is newer than this hybridfs reads (%d)",
			      version, HY_BOPT_VERSION);
		return -EPROTO;
	}
	sum = hy_ondisk_get_le64(buf + OFF_CHECKSUM);
	want = hy_ondisk_fnv1a64(buf, OFF_CHECKSUM);
	if (sum != want) {
		hy_ondisk_say(why, why_size,
			      "BOPT header damaged (checksum %016" PRIx64 ", expected %016" PRIx64
			      ")",
			      sum, want);
		return -EUCLEAN;
	}
	if (version == 0) {
		hy_ondisk_say(why, why_size, "BOPT header damaged (format version 0)");
		return -EUCLEAN;
	}
	header_size = hy_ondisk_get_le32(buf + OFF_HEADER_SIZE);
	if (header_size != HY_BOPT_HEADER_SIZE) {
		hy_ondisk_say(why, why_size,
			      "BOPT header damaged (header size %" PRIu32 ", expected %d)",
			      header_size, HY_BOPT_HEADER_SIZE);
		return -EUCLEAN;
	}
	uuid_len = strnlen((const char *)buf + OFF_UUID, UUID_FIELD);
	if (uuid_len == 0 || uuid_len >= UUID_FIELD) {
		hy_ondisk_say(why, why_size, "BOPT header damaged (mount uuid %s)",
			      uuid_len ? "not terminated" : "empty");
		return -EUCLEAN;
	}
	for (size_t i = uuid_len; i < UUID_FIELD; i++) {
		if (buf[OFF_UUID + i] != 0) {
			hy_ondisk_say(why, why_size,
				      "BOPT header damaged (mount uuid padding not zero)");
			return -EUCLEAN;
		}
	}
	flags = hy_ondisk_get_le32(buf + OFF_FLAGS);
	if ((flags & ~FLAG_CLEAN) || hy_ondisk_get_le32(buf + OFF_RESERVED)) {
		hy_ondisk_say(why, why_size,
			      "BOPT header damaged (unknown flags %#" PRIx32
			      " or reserved field %#" PRIx32 ")",
			      flags, hy_ondisk_get_le32(buf + OFF_RESERVED));
		return -EUCLEAN;
	}
	total = hy_ondisk_get_le64(buf + OFF_TOTAL);
	rd = hy_ondisk_get_le64(buf + OFF_READ);
	wr = hy_ondisk_get_le64(buf + OFF_WRITE);
	if (rd < 1 || wr < 1 || total > MAX_BLOCKS || rd >= total || wr >= total - rd ||
	    total != 1 + rd + wr) {
		hy_ondisk_say(why, why_size,
			      "BOPT sizes do not add up (%" PRIu64 " blocks in all, %" PRIu64
			      " read region, %" PRIu64 " write buffer, 1 header)",
			      total, rd, wr);
		return -EUCLEAN;
	}
	h->version = version;
	memcpy(h->uuid, buf + OFF_UUID, uuid_len);
	h->uuid[uuid_len] = '\0';
	h->generation = hy_ondisk_get_le64(buf + OFF_GENERATION);
	h->total_blocks = total;
	h->read_blocks = rd;
	h->write_blocks = wr;
	h->clean_shutdown = flags & FLAG_CLEAN;
	return 0;
}

/* ---- libblkid ---- */

/* ", libblkid finds ext4" or "" */
static void blkid_note(const char *path, char *note, size_t size)
{
	char type[64];

	note[0] = '\0';
	if (hy_ondisk_probe_signature(path, type, sizeof(type)) == 1)
		snprintf(note, size, ", libblkid finds %s there", type);
}

int hy_bopt_resolve(const char *spec, char *buf, size_t size, char *why, size_t why_size)
{
	return hy_ondisk_resolve(spec, "bopt", buf, size, why, why_size);
}

/* ---- creation ---- */

/* Reads block 0 of @fd (zeros past the end of a short file). */
static int read_block0(int fd, unsigned char *buf)
{
	ssize_t n = hy_ondisk_read_full(fd, buf, HY_BOPT_BLOCK, 0);

	return n < 0 ? (int)n : 0;
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
		hy_ondisk_say(why, why_size,
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
	rc = hy_ondisk_write_full(fd, buf, HY_BOPT_BLOCK, 0);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	return rc;
}

/* Block 0 as hy_ondisk_check_overwrite() sees it. */
static enum hy_ondisk_kind classify_block0(const unsigned char *block0, const char *uuid,
					   char *other, size_t other_size, char *msg,
					   size_t msg_size)
{
	struct hy_bopt_header old;

	if (memcmp(block0, HY_BOPT_MAGIC, 8) != 0)
		return HY_ONDISK_FOREIGN;
	if (hy_bopt_decode(block0, &old, msg, msg_size) != 0)
		return HY_ONDISK_DAMAGED;
	if (strcmp(old.uuid, uuid) != 0) {
		snprintf(other, other_size, "%s", old.uuid);
		return HY_ONDISK_OTHER_MOUNT;
	}
	return HY_ONDISK_OURS;
}

static int write_new_header(int fd, const void *arg)
{
	return write_header_durably(fd, arg);
}

static const struct hy_ondisk_format bopt_format = {
	.what = "bopt",
	.noun = "BOPT",
	.written = "the header of",
	.sparse = "the BOPT is a sparse file made with ftruncate",
	.block0_size = HY_BOPT_BLOCK,
	.classify = classify_block0,
	.write = write_new_header,
};

static int create_block(const char *path, const char *uuid, uint64_t read_bytes, bool force,
			char *why, size_t why_size)
{
	struct hy_bopt_header h;
	uint64_t size;
	struct stat st;
	int fd, rc;

	rc = hy_ondisk_check_overwrite(&bopt_format, path, uuid, force, why, why_size);
	if (rc < 0)
		return rc;
	/* O_EXCL on a block device: not while it is mounted or in use. */
	fd = open(path, O_RDWR | O_CLOEXEC | O_EXCL);
	if (fd < 0) {
		rc = -errno;
		hy_ondisk_say(why, why_size, "bopt: cannot open \"%s\" for writing: %s", path,
			      strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0 || !S_ISBLK(st.st_mode) || hy_ondisk_size(fd, &st, &size) < 0) {
		rc = -EINVAL;
		hy_ondisk_say(why, why_size,
			      "bopt: cannot find the size of the block device \"%s\"", path);
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
		hy_ondisk_say(why, why_size, "bopt: cannot write the header of \"%s\": %s", path,
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
	char msg[256];
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		hy_ondisk_say(why, why_size, "bopt: \"%s\" exists and cannot be read: %s", path,
			      strerror(-rc));
		return rc;
	}
	rc = read_block0(fd, buf);
	close(fd);
	if (rc < 0) {
		hy_ondisk_say(why, why_size, "bopt: \"%s\" exists and cannot be read: %s", path,
			      strerror(-rc));
		return rc;
	}
	rc = hy_bopt_decode(buf, &old, msg, sizeof(msg));
	if (rc == 0 && strcmp(old.uuid, uuid) == 0)
		return 0;
	if (rc == 0) {
		char owner[1024], self[1024];

		hy_ondisk_name_mount(old.uuid, path, owner, sizeof(owner));
		hy_ondisk_name_mount(uuid, path, self, sizeof(self));
		hy_ondisk_say(why, why_size,
			      "bopt: \"%s\" exists and is the BOPT of %s, not of %s; refusing to "
			      "replace it",
			      path, owner, self);
	} else {
		char note[128];

		blkid_note(path, note, sizeof(note));
		hy_ondisk_say(why, why_size,
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
	int rc;

	rc = plan_sizes(path, uuid, size, read_bytes, &h, why, why_size);
	if (rc < 0)
		return rc;
	if (exists) {
		rc = check_existing_file(path, uuid, why, why_size);
		if (rc < 0)
			return rc;
	}
	return hy_ondisk_make_file(&bopt_format, &h, path, exists, h.total_blocks * HY_BOPT_BLOCK,
				   why, why_size);
}

int hy_bopt_create(const char *path, const char *uuid, uint64_t size, uint64_t read_bytes,
		   bool force, char *why, size_t why_size)
{
	struct stat st;

	if (!path || !*path || !uuid || !*uuid || strlen(uuid) >= UUID_FIELD) {
		hy_ondisk_say(why, why_size,
			      "bopt: a path and a mount uuid of 1 to %d characters are needed",
			      UUID_FIELD - 1);
		return -EINVAL;
	}
	if (stat(path, &st) < 0) {
		if (errno != ENOENT) {
			int rc = -errno;

			hy_ondisk_say(why, why_size, "bopt: cannot look at \"%s\": %s", path,
				      strerror(-rc));
			return rc;
		}
		return create_file(path, uuid, size, read_bytes, false, why, why_size);
	}
	if (S_ISBLK(st.st_mode))
		return create_block(path, uuid, read_bytes, force, why, why_size);
	if (S_ISREG(st.st_mode))
		return create_file(path, uuid, size, read_bytes, true, why, why_size);
	hy_ondisk_say(why, why_size,
		      "bopt: \"%s\" exists and is neither a regular file nor a block device", path);
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

/* BORG's read-ahead along the BOPT (indirector.h): the kernel reads the
 * run into the BOPT file's page cache, where the reads that follow it find
 * it. */
static int bopt_dev_prefetch(struct hy_device *dev, int64_t object, off_t off, off_t len)
{
	const struct hy_bopt *bopt = dev->priv;

	return -posix_fadvise(bopt->fd, off, len, POSIX_FADV_WILLNEED);
}

static const struct hy_device_ops bopt_dev_ops = {
	.read = bopt_dev_read,
	.prefetch = bopt_dev_prefetch,
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
		hy_ondisk_say(why, why_size, "bopt: no path");
		return -EINVAL;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		hy_ondisk_say(why, why_size, "bopt: cannot open \"%s\": %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		hy_ondisk_say(why, why_size, "bopt: cannot stat \"%s\": %s", path, strerror(-rc));
		goto fail;
	}
	rc = hy_ondisk_size(fd, &st, &size);
	if (rc < 0) {
		hy_ondisk_say(why, why_size, "bopt: \"%s\" %s", path,
			      rc == -EINVAL ? "is neither a regular file nor a block device"
					    : "has a size that cannot be read");
		goto fail;
	}
	rc = read_block0(fd, buf);
	if (rc < 0) {
		hy_ondisk_say(why, why_size, "bopt: cannot read \"%s\": %s", path, strerror(-rc));
		goto fail;
	}
	rc = hy_bopt_decode(buf, &h, msg, sizeof(msg));
	if (rc < 0) {
		note[0] = '\0';
		if (memcmp(buf, HY_BOPT_MAGIC, 8) != 0)
			blkid_note(path, note, sizeof(note));
		hy_ondisk_say(why, why_size, "bopt: \"%s\": %s%s", path, msg, note);
		goto fail;
	}
	if (uuid && strcmp(h.uuid, uuid) != 0) {
		char owner[1024], self[1024];

		hy_ondisk_name_mount(h.uuid, path, owner, sizeof(owner));
		hy_ondisk_name_mount(uuid, path, self, sizeof(self));
		hy_ondisk_say(why, why_size, "bopt: \"%s\" is the BOPT of %s, not of %s", path,
			      owner, self);
		rc = -EEXIST;
		goto fail;
	}
	if (h.total_blocks > size / HY_BOPT_BLOCK) {
		hy_ondisk_say(why, why_size,
			      "bopt: \"%s\" is %" PRIu64 " bytes but its header says %" PRIu64
			      " blocks of %d (truncated?)",
			      path, size, h.total_blocks, HY_BOPT_BLOCK);
		rc = -EUCLEAN;
		goto fail;
	}
	bopt = calloc(1, sizeof(*bopt));
	if (!bopt || !(bopt->path = strdup(path))) {
		rc = -ENOMEM;
		hy_ondisk_say(why, why_size, "bopt: out of memory opening \"%s\"", path);
		goto fail;
	}
	bopt->fd = fd;
	bopt->header = h;
	rc = hy_device_new("bopt", &bopt_dev_ops, bopt, &bopt->device);
	if (rc < 0) {
		hy_ondisk_say(why, why_size, "bopt: out of memory opening \"%s\"", path);
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
	rc = hy_ondisk_write_full(bopt->fd, buf, HY_BOPT_BLOCK, 0);
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
