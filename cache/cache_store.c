/* cache_store.c - the open SSD cache store: open, the line table's two
 * copies (load, checkpoint), line I/O by sector mask, claim, close, and
 * what a crash left; see include/hybridfs/cache_store.h. The encodings and
 * the making of a store are in cache_store_format.c, the journal in
 * cache_store_journal.c; what the parts share, in cache_store_internal.h.
 *
 * The store's device (device.h) ignores the object and uses the store's
 * descriptor: its private data is the struct hy_cache_store.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hybridfs/cache_store.h"
#include "hybridfs/device.h"
#include "hybridfs/group_commit.h"
#include "hybridfs/log.h"
#include "hybridfs/ondisk.h"

#include "cache_store_internal.h"

#define SECTORS (HY_CACHE_LINE_SIZE / HY_CACHE_SECTOR_SIZE)

/* ---- the open store ---- */

int hy_cache_store_resolve(const char *spec, char *buf, size_t size, char *why, size_t why_size)
{
	return hy_ondisk_resolve(spec, "cache", buf, size, why, why_size);
}

static ssize_t store_dev_read(struct hy_device *dev, int64_t object, void *buf, size_t len,
			      off_t off)
{
	const struct hy_cache_store *s = dev->priv;
	ssize_t n = pread(s->fd, buf, len, off);

	return n < 0 ? -errno : n;
}

static ssize_t store_dev_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			       off_t off)
{
	const struct hy_cache_store *s = dev->priv;
	ssize_t n = pwrite(s->fd, buf, len, off);

	return n < 0 ? -errno : n;
}

static int store_dev_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	const struct hy_cache_store *s = dev->priv;
	int rc = data_only ? fdatasync(s->fd) : fsync(s->fd);

	return rc < 0 ? -errno : 0;
}

/* A store has the size it was made with. */
static int store_dev_truncate(struct hy_device *dev, int64_t object, off_t size)
{
	return -EOPNOTSUPP;
}

static const struct hy_device_ops store_dev_ops = {
	.read = store_dev_read,
	.write = store_dev_write,
	.sync = store_dev_sync,
	.truncate = store_dev_truncate,
	.destroy = NULL, /* the store owns the descriptor */
};

static int store_open(const char *path, const char *uuid, bool salvage, struct hy_cache_store **out,
		      char *why, size_t why_size);

int hy_cache_store_open(const char *path, const char *uuid, struct hy_cache_store **out, char *why,
			size_t why_size)
{
	return store_open(path, uuid, false, out, why, why_size);
}

int hy_cache_store_open_truncated(const char *path, const char *uuid, struct hy_cache_store **out,
				  char *why, size_t why_size)
{
	return store_open(path, uuid, true, out, why, why_size);
}

static int store_open(const char *path, const char *uuid, bool salvage, struct hy_cache_store **out,
		      char *why, size_t why_size)
{
	unsigned char buf[HY_CACHE_STORE_BLOCK];
	struct hy_cache_store *s = NULL;
	struct hy_cache_store_header h;
	char msg[256], type[64];
	uint64_t size;
	struct stat st;
	int fd, rc;

	*out = NULL;
	if (!path || !*path) {
		hy_ondisk_say(why, why_size, "cache: no path");
		return -EINVAL;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		hy_ondisk_say(why, why_size, "cache: cannot open \"%s\": %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		hy_ondisk_say(why, why_size, "cache: cannot stat \"%s\": %s", path, strerror(-rc));
		goto fail;
	}
	rc = hy_ondisk_size(fd, &st, &size);
	if (rc < 0) {
		hy_ondisk_say(why, why_size, "cache: \"%s\" %s", path,
			      rc == -EINVAL ? "is neither a regular file nor a block device"
					    : "has a size that cannot be read");
		goto fail;
	}
	/* "no magic" would send the user looking for another program's data
	 * (damaged.sh: cache-empty) */
	if (size < HY_CACHE_STORE_BLOCK) {
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\" is %" PRIu64
			      " bytes, too short for a store's superblock (truncated?)",
			      path, size);
		rc = -EUCLEAN;
		goto fail;
	}
	rc = read_full(fd, buf, sizeof(buf), 0);
	if (rc < 0) {
		hy_ondisk_say(why, why_size, "cache: cannot read \"%s\": %s", path, strerror(-rc));
		goto fail;
	}
	rc = hy_cache_store_decode(buf, &h, msg, sizeof(msg));
	if (rc < 0) {
		if (memcmp(buf, HY_CACHE_STORE_MAGIC, 8) != 0 &&
		    hy_ondisk_probe_signature(path, type, sizeof(type)) == 1)
			hy_ondisk_say(why, why_size, "cache: \"%s\": %s, libblkid finds %s there",
				      path, msg, type);
		else
			hy_ondisk_say(why, why_size, "cache: \"%s\": %s", path, msg);
		goto fail;
	}
	if (uuid && h.uuid[0] && strcmp(h.uuid, uuid) != 0) {
		char owner[1024], self[1024];

		hy_ondisk_name_mount(h.uuid, path, owner, sizeof(owner));
		hy_ondisk_name_mount(uuid, path, self, sizeof(self));
		hy_ondisk_say(why, why_size, "cache: \"%s\" is the cache store of %s, not of %s",
			      path, owner, self);
		rc = -EEXIST;
		goto fail;
	}
	/* truncated: refused, unless salvaging what its table, journal and
	 * remaining lines still hold */
	if (h.data_offset + h.data_size > size && (!salvage || h.data_offset > size)) {
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\" is %" PRIu64 " bytes but its superblock says %" PRIu64
			      " (truncated%s)",
			      path, size, h.data_offset + h.data_size,
			      h.data_offset > size ? ", into its line table or journal" : "?");
		rc = -EUCLEAN;
		goto fail;
	}

	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path))) {
		rc = -ENOMEM;
		hy_ondisk_say(why, why_size, "cache: out of memory opening \"%s\"", path);
		goto fail;
	}
	s->fd = fd;
	s->header = h;
	s->copy_blocks = table_copy_blocks(h.capacity, h.version);
	s->journal_capacity = h.journal_size / HY_CACHE_JOURNAL_RECORD;
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		rc = -ENOMEM;
		hy_ondisk_say(why, why_size, "cache: cannot make a mutex for \"%s\"", path);
		goto fail;
	}
	if (hy_group_commit_init(&s->commit, 0) != 0) {
		pthread_mutex_destroy(&s->lock);
		rc = -ENOMEM;
		hy_ondisk_say(why, why_size, "cache: cannot make a condition variable for \"%s\"",
			      path);
		goto fail;
	}
	rc = hy_device_new("cache", &store_dev_ops, s, &s->device);
	if (rc < 0) {
		hy_group_commit_destroy(&s->commit);
		pthread_mutex_destroy(&s->lock);
		hy_ondisk_say(why, why_size, "cache: out of memory opening \"%s\"", path);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (s)
		free(s->path);
	free(s);
	close(fd);
	return rc;
}

/* ---- the line table: its two copies, load and checkpoint ---- */

static uint64_t copy_offset(const struct hy_cache_store *s, int copy)
{
	return s->header.table_offset + (uint64_t)copy * s->copy_blocks * HY_CACHE_STORE_BLOCK;
}

/* Reads copy @copy's records into s->lines, counting damaged ones. */
static int read_table(struct hy_cache_store *s, int copy, uint64_t *damaged)
{
	size_t per = CHUNK / HY_CACHE_LINE_RECORD;
	unsigned char *buf = malloc(CHUNK);
	uint64_t off = copy_offset(s, copy) + HY_CACHE_STORE_BLOCK, n = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	while (n < s->header.capacity) {
		uint64_t k = s->header.capacity - n < per ? s->header.capacity - n : per;

		rc = read_full(s->fd, buf, (size_t)(k * HY_CACHE_LINE_RECORD), off);
		if (rc < 0)
			break;
		for (uint64_t i = 0; i < k; i++, n++) {
			if (hy_cache_store_format_decode_line(
				    buf + i * HY_CACHE_LINE_RECORD, n, s->header.generation,
				    s->header.version, &s->lines[n]) < 0) {
				(*damaged)++;
				hy_log(LOG_WARNING,
				       "cache: \"%s\": line record %" PRIu64
				       " of table copy %c is damaged; the line is dropped",
				       s->path, n, copy ? 'B' : 'A');
			}
		}
		off += k * HY_CACHE_LINE_RECORD;
	}
	free(buf);
	return rc;
}

static int by_stamp_id(const void *a, const void *b)
{
	const struct hy_cache_stamp *x = a, *y = b;

	return x->file_id < y->file_id ? -1 : x->file_id > y->file_id;
}

static uint64_t stamps_offset(const struct hy_cache_store *s, int copy)
{
	return copy_offset(s, copy) +
	       (1 + line_record_blocks(s->header.capacity)) * HY_CACHE_STORE_BLOCK;
}

/* Reads copy @copy's @n file stamps into s->stamps (sorted), leaving out
 * damaged ones (their files' lines are then dropped: nothing vouches for
 * them) and a second stamp of one file. */
static int read_stamps(struct hy_cache_store *s, int copy, uint64_t n,
		       struct hy_cache_store_load_stats *st)
{
	size_t per = CHUNK / HY_CACHE_STAMP_RECORD, kept = 0;
	unsigned char *buf;
	uint64_t off = stamps_offset(s, copy), i = 0;
	int rc = 0;

	free(s->stamps);
	s->stamps = NULL;
	s->nstamps = 0;
	if (!n)
		return 0;
	buf = malloc(CHUNK);
	s->stamps = malloc(n * sizeof(*s->stamps));
	if (!buf || !s->stamps) {
		free(buf);
		return -ENOMEM;
	}
	while (i < n) {
		uint64_t k = n - i < per ? n - i : per;

		rc = read_full(s->fd, buf, (size_t)(k * HY_CACHE_STAMP_RECORD), off);
		if (rc < 0)
			break;
		for (uint64_t j = 0; j < k; j++, i++) {
			if (hy_cache_store_format_decode_stamp(buf + j * HY_CACHE_STAMP_RECORD, i,
							       s->header.generation,
							       &s->stamps[kept]) == 0)
				kept++;
			else
				st->damaged_stamps++;
		}
		off += k * HY_CACHE_STAMP_RECORD;
	}
	free(buf);
	if (rc < 0)
		return rc;
	if (kept)
		qsort(s->stamps, kept, sizeof(*s->stamps), by_stamp_id);
	s->nstamps = 0;
	for (size_t j = 0; j < kept; j++) {
		/* two stamps of one file: neither is believed */
		if (j + 1 < kept && s->stamps[j + 1].file_id == s->stamps[j].file_id) {
			uint64_t id = s->stamps[j].file_id;

			while (j < kept && s->stamps[j].file_id == id) {
				st->damaged_stamps++;
				j++;
			}
			j--;
			continue;
		}
		s->stamps[s->nstamps++] = s->stamps[j];
	}
	st->stamps = s->nstamps;
	if (st->damaged_stamps)
		hy_log(LOG_WARNING,
		       "cache: \"%s\": %" PRIu64 " file stamps of table copy %c are damaged; "
		       "their files' lines are dropped",
		       s->path, st->damaged_stamps, copy ? 'B' : 'A');
	return 0;
}

/* Writes the file stamps (format 3) of the copy not in use, unsynced (the
 * table's sync covers them); their count in *@n. */
static int write_stamps(struct hy_cache_store *s, int copy, uint64_t *n)
{
	struct hy_cache_stamp *v = s->stamps;
	size_t nv = s->nstamps, per = CHUNK / HY_CACHE_STAMP_RECORD;
	unsigned char *buf;
	uint64_t off = stamps_offset(s, copy);
	int rc = 0;

	*n = 0;
	if (s->header.version < 3)
		return 0;
	if (s->stamps_fn) {
		v = NULL;
		nv = 0;
		rc = s->stamps_fn(s->stamps_arg, &v, &nv);
		if (rc < 0)
			return rc;
	}
	if (nv > s->header.capacity)
		nv = (size_t)s->header.capacity; /* more than lines: never, but bounded */
	buf = nv ? malloc(CHUNK) : NULL;
	if (nv && !buf)
		rc = -ENOMEM;
	for (size_t i = 0; i < nv && rc == 0;) {
		size_t k = nv - i < per ? nv - i : per;

		for (size_t j = 0; j < k; j++)
			hy_cache_store_format_encode_stamp(&v[i + j], i + j, s->header.generation,
							   buf + j * HY_CACHE_STAMP_RECORD);
		rc = hy_ondisk_write_full(s->fd, buf, k * HY_CACHE_STAMP_RECORD, off);
		off += k * HY_CACHE_STAMP_RECORD;
		i += k;
	}
	free(buf);
	if (s->stamps_fn)
		free(v);
	if (rc == 0)
		*n = nv;
	return rc;
}

/* Writes every line record of the copy not in use, synced. Caller holds
 * nothing; appends are quiesced. */
static int write_table(struct hy_cache_store *s, int copy, uint64_t seq)
{
	size_t per = CHUNK / HY_CACHE_LINE_RECORD;
	unsigned char *buf = malloc(CHUNK);
	unsigned char line[HY_CACHE_LINE_SIZE];
	uint64_t off = copy_offset(s, copy) + HY_CACHE_STORE_BLOCK, n = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	while (n < s->header.capacity && rc == 0) {
		uint64_t k = s->header.capacity - n < per ? s->header.capacity - n : per;

		for (uint64_t i = 0; i < k && rc == 0; i++) {
			struct hy_cache_line ext;
			const struct hy_cache_line *l = &ext;

			if (s->lines)
				l = &s->lines[n + i];
			else
				s->external(s->external_arg, n + i, &ext);
			if (s->summing && l->used && s->header.version >= 3) {
				/* read back: the sum is of what the store holds */
				if (l != &ext) {
					ext = *l;
					l = &ext;
				}
				memset(line, 0, HY_CACHE_LINE_SIZE);
				rc = hy_cache_store_read_line(s, n + i, ext.valid, line);
				ext.summed = rc == 0;
				ext.sum = rc == 0 ? hy_cache_store_line_sum(line, ext.valid) : 0;
				rc = 0; /* a line that cannot be read is kept unsummed */
			}
			hy_cache_store_format_encode_line(l, n + i, s->header.generation, seq,
							  s->header.version,
							  buf + i * HY_CACHE_LINE_RECORD);
		}
		rc = hy_ondisk_write_full(s->fd, buf, (size_t)(k * HY_CACHE_LINE_RECORD), off);
		off += k * HY_CACHE_LINE_RECORD;
		n += k;
	}
	if (rc == 0 && fdatasync(s->fd) < 0)
		rc = -errno;
	free(buf);
	return rc;
}

int hy_cache_store_checkpoint_first_half(struct hy_cache_store *s)
{
	if (!s->loaded)
		return -EINVAL;
	return write_table(s, 1 - s->active_copy, s->commit.written);
}

/* A checkpoint at sequence @seq (>= the last written). */
static int checkpoint_at(struct hy_cache_store *s, uint64_t seq, char *why, size_t why_size)
{
	int copy = 1 - s->active_copy, rc;
	uint64_t nstamps = 0;

	if (!s->loaded) {
		hy_ondisk_say(why, why_size, "cache: \"%s\": checkpoint before load", s->path);
		return -EINVAL;
	}
	if (s->error) {
		hy_ondisk_say(why, why_size, "cache: \"%s\": the journal failed earlier: %s",
			      s->path, strerror(-s->error));
		return s->error;
	}
	/* the stamps first: write_table's sync covers them */
	rc = write_stamps(s, copy, &nstamps);
	if (rc == 0)
		rc = write_table(s, copy, seq);
	if (rc == 0) {
		unsigned char buf[HY_CACHE_STORE_BLOCK];

		hy_cache_store_format_encode_copy_header(s->header.generation, seq,
							 s->header.capacity, s->header.version,
							 nstamps, buf);
		rc = hy_ondisk_write_full(s->fd, buf, sizeof(buf), copy_offset(s, copy));
	}
	if (rc == 0 && fdatasync(s->fd) < 0)
		rc = -errno;
	if (rc < 0) {
		hy_ondisk_say(why, why_size, "cache: \"%s\": cannot write line table copy %c: %s",
			      s->path, copy ? 'B' : 'A', strerror(-rc));
		return rc;
	}
	pthread_mutex_lock(&s->lock);
	s->active_copy = copy;
	s->checkpoint_seq = seq;
	s->journal_used = 0;
	s->commit.written = s->commit.durable = seq;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int hy_cache_store_checkpoint(struct hy_cache_store *s, char *why, size_t why_size)
{
	uint64_t seq;

	/* a sequence of its own: a checkpoint with no record since the last
	 * one must still be the newer copy (the clean lines it keeps, and
	 * their stamps, are only in it) */
	pthread_mutex_lock(&s->lock);
	seq = s->commit.written + 1;
	pthread_mutex_unlock(&s->lock);
	return checkpoint_at(s, seq, why, why_size);
}

int hy_cache_store_checkpoint_summed(struct hy_cache_store *s, char *why, size_t why_size)
{
	int rc;

	s->summing = true;
	rc = hy_cache_store_checkpoint(s, why, why_size);
	s->summing = false;
	return rc;
}

uint32_t hy_cache_store_line_sum(const void *buf, uint8_t valid)
{
	unsigned char line[HY_CACHE_LINE_SIZE];

	memset(line, 0, sizeof(line));
	for (int i = 0; i < SECTORS; i++)
		if (valid & (1u << i))
			memcpy(line + i * HY_CACHE_SECTOR_SIZE,
			       (const unsigned char *)buf + i * HY_CACHE_SECTOR_SIZE,
			       HY_CACHE_SECTOR_SIZE);
	return hy_ondisk_fnv1a32(line, sizeof(line));
}

int hy_cache_store_load(struct hy_cache_store *s, hy_cache_store_line_cb cb, void *arg,
			struct hy_cache_store_load_stats *stats, char *why, size_t why_size)
{
	struct hy_cache_store_load_stats local;
	unsigned char buf[HY_CACHE_STORE_BLOCK];
	uint64_t seq[2], nst[2];
	bool good[2];
	int rc, copy;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	for (int c = 0; c < 2; c++) {
		rc = read_full(s->fd, buf, sizeof(buf), copy_offset(s, c));
		if (rc < 0) {
			hy_ondisk_say(why, why_size,
				      "cache: \"%s\": cannot read line table copy %c: %s", s->path,
				      c ? 'B' : 'A', strerror(-rc));
			return rc;
		}
		good[c] = hy_cache_store_format_decode_copy_header(
				  buf, s->header.generation, s->header.capacity, s->header.version,
				  &seq[c], &nst[c]) == 0;
	}
	if (!good[0] && !good[1]) {
		hy_ondisk_say(why, why_size, "cache: \"%s\": both line table copies are damaged",
			      s->path);
		return -EUCLEAN;
	}
	copy = !good[0] || (good[1] && seq[1] > seq[0]) ? 1 : 0;
	free(s->lines);
	s->lines = calloc(s->header.capacity, sizeof(*s->lines));
	if (!s->lines) {
		hy_ondisk_say(why, why_size, "cache: \"%s\": out of memory for %" PRIu64 " lines",
			      s->path, s->header.capacity);
		return -ENOMEM;
	}
	s->active_copy = copy;
	s->checkpoint_seq = seq[copy];
	rc = read_table(s, copy, &stats->damaged_records);
	if (rc == 0)
		rc = read_stamps(s, copy, nst[copy], stats);
	if (rc == 0)
		rc = hy_cache_store_journal_replay(s, stats);
	if (rc < 0) {
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\": cannot read the line table or journal: %s", s->path,
			      strerror(-rc));
		goto fail;
	}
	for (uint64_t n = 0; n < s->header.capacity; n++) {
		const struct hy_cache_line *l = &s->lines[n];

		if (!l->used)
			continue;
		stats->lines++;
		if (cb) {
			rc = cb(arg, n, l);
			if (rc) {
				hy_ondisk_say(why, why_size,
					      "cache: \"%s\": loading line %" PRIu64 " stopped",
					      s->path, n);
				goto fail;
			}
		}
	}
	/* Skip a journal's worth of sequences: see the header. */
	s->loaded = true;
	rc = checkpoint_at(s, s->commit.written + s->journal_capacity, why, why_size);
	if (rc < 0)
		goto fail;
	return 0;
fail:
	s->loaded = false;
	free(s->lines);
	s->lines = NULL;
	free(s->stamps);
	s->stamps = NULL;
	s->nstamps = 0;
	return rc;
}

const struct hy_cache_stamp *hy_cache_store_loaded_stamps(struct hy_cache_store *s, size_t *n)
{
	*n = s->stamps_fn ? 0 : s->nstamps;
	return s->stamps_fn ? NULL : s->stamps;
}

void hy_cache_store_external_stamps(struct hy_cache_store *s, hy_cache_store_stamps_fn fn,
				    void *arg)
{
	pthread_mutex_lock(&s->lock);
	s->stamps_fn = fn;
	s->stamps_arg = arg;
	free(s->stamps);
	s->stamps = NULL;
	s->nstamps = 0;
	pthread_mutex_unlock(&s->lock);
}

void hy_cache_store_external_table(struct hy_cache_store *s, hy_cache_store_table_fn fn, void *arg)
{
	pthread_mutex_lock(&s->lock);
	s->external = fn;
	s->external_arg = arg;
	free(s->lines);
	s->lines = NULL;
	pthread_mutex_unlock(&s->lock);
}

const struct hy_cache_line *hy_cache_store_line(struct hy_cache_store *s, uint64_t line)
{
	if (!s->lines || line >= s->header.capacity)
		return NULL;
	return &s->lines[line];
}

/* ---- lines ---- */

/* Reads (@write false) or writes the runs of sectors in @mask. */
static int line_io(struct hy_cache_store *s, uint64_t line, uint8_t mask, unsigned char *rbuf,
		   const unsigned char *wbuf)
{
	uint64_t base;
	int i = 0;

	if (line >= s->header.capacity)
		return -EINVAL;
	base = s->header.data_offset + line * HY_CACHE_LINE_SIZE;
	while (i < SECTORS) {
		int j = i;
		size_t off, len;
		ssize_t n;

		if (!(mask & (1u << i))) {
			i++;
			continue;
		}
		while (j < SECTORS && (mask & (1u << j)))
			j++;
		off = (size_t)i * HY_CACHE_SECTOR_SIZE;
		len = (size_t)(j - i) * HY_CACHE_SECTOR_SIZE;
		if (rbuf)
			n = hy_device_read(s->device, 0, rbuf + off, len, (off_t)(base + off));
		else
			n = hy_device_write(s->device, 0, wbuf + off, len, (off_t)(base + off));
		if (n < 0)
			return (int)n;
		if ((size_t)n != len)
			return -EIO;
		i = j;
	}
	return 0;
}

int hy_cache_store_read_line(struct hy_cache_store *s, uint64_t line, uint8_t mask, void *buf)
{
	return line_io(s, line, mask, buf, NULL);
}

int hy_cache_store_write_line(struct hy_cache_store *s, uint64_t line, uint8_t mask,
			      const void *buf)
{
	return line_io(s, line, mask, NULL, buf);
}

int hy_cache_store_sync(struct hy_cache_store *s)
{
	return hy_device_sync(s->device, 0, true);
}

int hy_cache_store_set_clean(struct hy_cache_store *s, bool clean)
{
	struct hy_cache_store_header h = s->header;
	unsigned char buf[HY_CACHE_STORE_BLOCK];
	int rc;

	h.clean_shutdown = clean;
	hy_cache_store_encode(&h, buf);
	rc = hy_ondisk_write_full(s->fd, buf, sizeof(buf), 0);
	if (rc == 0 && fdatasync(s->fd) < 0)
		rc = -errno;
	if (rc < 0) {
		hy_log(LOG_ERR, "cache: cannot update the superblock of \"%s\": %s", s->path,
		       strerror(-rc));
		return rc;
	}
	s->header = h;
	return 0;
}

int hy_cache_store_claim(struct hy_cache_store *s, const char *uuid, char *why, size_t why_size)
{
	struct hy_cache_store_header h = s->header;
	unsigned char buf[HY_CACHE_STORE_BLOCK];
	int rc;

	if (!uuid || !*uuid || strlen(uuid) >= UUID_FIELD) {
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\": a mount uuid of 1 to %d characters is needed to "
			      "claim it",
			      s->path, UUID_FIELD - 1);
		return -EINVAL;
	}
	if (strcmp(h.uuid, uuid) == 0)
		return 0;
	if (h.uuid[0]) {
		char owner[1024], self[1024];

		hy_ondisk_name_mount(h.uuid, s->path, owner, sizeof(owner));
		hy_ondisk_name_mount(uuid, s->path, self, sizeof(self));
		hy_ondisk_say(why, why_size, "cache: \"%s\" is the cache store of %s, not of %s",
			      s->path, owner, self);
		return -EINVAL;
	}
	snprintf(h.uuid, sizeof(h.uuid), "%s", uuid);
	hy_cache_store_encode(&h, buf);
	rc = hy_ondisk_write_full(s->fd, buf, sizeof(buf), 0);
	if (rc == 0 && fdatasync(s->fd) < 0)
		rc = -errno;
	if (rc < 0) {
		hy_ondisk_say(why, why_size,
			      "cache: cannot write the superblock of \"%s\" to claim it: %s",
			      s->path, strerror(-rc));
		return rc;
	}
	s->header = h;
	{
		char self[1024];

		hy_ondisk_name_mount(uuid, s->path, self, sizeof(self));
		hy_log(LOG_INFO, "cache: \"%s\" was unclaimed; it is now the cache store of %s",
		       s->path, self);
	}
	return 0;
}

void hy_cache_store_close(struct hy_cache_store *s)
{
	if (!s)
		return;
	hy_device_free(s->device);
	hy_group_commit_destroy(&s->commit);
	pthread_mutex_destroy(&s->lock);
	if (s->fd >= 0)
		close(s->fd);
	free(s->lines);
	free(s->stamps);
	free(s->path);
	free(s);
}

/* ---- what a crash left, for a mount that leaves the store out -------- */

static int count_dirty_line(void *arg, uint64_t line, const struct hy_cache_line *l)
{
	(void)line;
	*(uint64_t *)arg += l->dirty != 0;
	return 0;
}

uint64_t hy_cache_store_left_dirty(const char *path, const char *uuid)
{
	struct hy_cache_store *s = NULL;
	uint64_t dirty = 0;
	char msg[1024];

	/* a store that cannot be opened is not looked into: leaving a damaged
	 * store out is the way its refusal offers */
	if (hy_cache_store_open(path, uuid, &s, msg, sizeof(msg)) == 0 &&
	    !s->header.clean_shutdown &&
	    hy_cache_store_load(s, count_dirty_line, &dirty, NULL, msg, sizeof(msg)) < 0)
		dirty = 0;
	hy_cache_store_close(s);
	return dirty;
}
