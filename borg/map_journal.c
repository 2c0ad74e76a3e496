/* map_journal.c - see include/hybridfs/map_journal.h.
 *
 * The file is only ever appended to (pwrite at written * 48) and emptied
 * (ftruncate at a checkpoint, or at open to cut a torn tail). written and
 * durable count records; a thread that appended record n waits until
 * durable >= n, running the fdatasync itself when nobody else is.
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

#include "hybridfs/fault.h"
#include "hybridfs/group_commit.h"
#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"
#include "hybridfs/ondisk.h"

#define OFF_MAGIC      0
#define OFF_TYPE       4
#define OFF_EPOCH      5
#define OFF_GENERATION 8
#define OFF_FILE_ID    16
#define OFF_BLOCK      24
#define OFF_BOPT_BLOCK 32
#define OFF_NBLOCKS    40
#define OFF_CHECKSUM   44

#define READ_RECORDS 1024 /* records read at a time during replay */

static const unsigned char magic[4] = {'H', 'Y', 'M', 'J'};

static bool valid_type(int type)
{
	return type >= HY_MJ_RELOCATE && type <= HY_MJ_STAMP;
}

void hy_map_journal_encode(const struct hy_map_journal_record *r, unsigned char *buf)
{
	memcpy(buf + OFF_MAGIC, magic, sizeof(magic));
	buf[OFF_TYPE] = (unsigned char)r->type;
	buf[OFF_EPOCH] = (unsigned char)(r->epoch & 0xff);
	buf[OFF_EPOCH + 1] = (unsigned char)((r->epoch >> 8) & 0xff);
	buf[OFF_EPOCH + 2] = (unsigned char)((r->epoch >> 16) & 0xff);
	hy_ondisk_put_le64(buf + OFF_GENERATION, r->generation);
	hy_ondisk_put_le64(buf + OFF_FILE_ID, r->file_id);
	hy_ondisk_put_le64(buf + OFF_BLOCK, r->block);
	hy_ondisk_put_le64(buf + OFF_BOPT_BLOCK, r->bopt_block);
	hy_ondisk_put_le32(buf + OFF_NBLOCKS, r->nblocks);
	hy_ondisk_put_le32(buf + OFF_CHECKSUM, hy_ondisk_fnv1a32(buf, OFF_CHECKSUM));
}

int hy_map_journal_decode(const unsigned char *buf, struct hy_map_journal_record *r)
{
	if (memcmp(buf + OFF_MAGIC, magic, sizeof(magic)) != 0)
		return -EUCLEAN;
	if (!valid_type(buf[OFF_TYPE]))
		return -EUCLEAN;
	if (hy_ondisk_get_le32(buf + OFF_CHECKSUM) != hy_ondisk_fnv1a32(buf, OFF_CHECKSUM))
		return -EUCLEAN;
	r->type = (enum hy_map_journal_type)buf[OFF_TYPE];
	r->epoch = (uint32_t)buf[OFF_EPOCH] | (uint32_t)buf[OFF_EPOCH + 1] << 8 |
		   (uint32_t)buf[OFF_EPOCH + 2] << 16;
	r->generation = hy_ondisk_get_le64(buf + OFF_GENERATION);
	r->file_id = hy_ondisk_get_le64(buf + OFF_FILE_ID);
	r->block = hy_ondisk_get_le64(buf + OFF_BLOCK);
	r->bopt_block = hy_ondisk_get_le64(buf + OFF_BOPT_BLOCK);
	r->nblocks = hy_ondisk_get_le32(buf + OFF_NBLOCKS);
	return 0;
}

static const char *type_name(enum hy_map_journal_type type)
{
	switch (type) {
	case HY_MJ_RELOCATE:
		return "relocate";
	case HY_MJ_RELEASE:
		return "release";
	case HY_MJ_DIRTY:
		return "dirty";
	case HY_MJ_CLEAN:
		return "clean";
	case HY_MJ_STAMP:
		return "stamp";
	}
	return "?";
}

/* Applies one record to @map: 0 or a negative errno from the map. */
static int apply(struct hy_map *map, const struct hy_map_journal_record *r)
{
	struct hy_map_extent e;
	int64_t n;

	switch (r->type) {
	case HY_MJ_RELOCATE:
		e.file_id = r->file_id;
		e.block = r->block;
		e.nblocks = r->nblocks;
		e.dirty = false;
		e.bopt_block = r->bopt_block;
		e.stamp = 0;
		return hy_map_relocate(map, &e);
	case HY_MJ_STAMP:
		/* a stamp for a file released since is moot */
		n = hy_map_set_stamp(map, r->file_id, (int64_t)r->block);
		return n == -ENOENT ? 0 : (int)n;
	case HY_MJ_RELEASE:
		n = hy_map_release(map, r->file_id, r->block, r->nblocks);
		return n < 0 ? (int)n : 0;
	case HY_MJ_DIRTY:
	case HY_MJ_CLEAN:
		n = hy_map_set_dirty(map, r->file_id, r->block, r->nblocks, r->type == HY_MJ_DIRTY);
		return n < 0 ? (int)n : 0;
	}
	return -EINVAL;
}

/* Reads the records, applies those of the journal's generation, and
 * leaves in *good the number of good records before the first bad one. */
static int replay(struct hy_map_journal *j, struct hy_map *map, uint64_t *good, uint64_t *applied,
		  char *why, size_t why_size)
{
	size_t size = (size_t)READ_RECORDS * HY_MAP_JOURNAL_RECORD;
	unsigned char *buf = malloc(size);
	uint64_t rec = 0;
	int rc = 0;

	*good = *applied = 0;
	if (!buf) {
		snprintf(why, why_size, "%s: out of memory", j->path);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t got = hy_ondisk_read_full(j->fd, buf, size, rec * HY_MAP_JOURNAL_RECORD);
		size_t k, whole;

		if (got < 0) {
			rc = (int)got;
			snprintf(why, why_size, "%s: cannot read record %" PRIu64 ": %s", j->path,
				 rec + 1, strerror(-rc));
			goto out;
		}
		whole = (size_t)got / HY_MAP_JOURNAL_RECORD;
		for (k = 0; k < whole; k++, rec++) {
			struct hy_map_journal_record r;

			if (hy_map_journal_decode(buf + k * HY_MAP_JOURNAL_RECORD, &r) != 0)
				goto out; /* the torn tail starts here */
			if (r.generation != j->generation || r.epoch != j->epoch)
				continue; /* an older BOPT's, or already in the checkpoint */
			rc = apply(map, &r);
			if (rc) {
				snprintf(why, why_size,
					 "%s: record %" PRIu64 " (byte %" PRIu64
					 ", %s of file %" PRIu64 " block %" PRIu64
					 " nblocks %" PRIu32 " bopt_block %" PRIu64
					 "): the map refused it: %s",
					 j->path, rec + 1, rec * HY_MAP_JOURNAL_RECORD,
					 type_name(r.type), r.file_id, r.block, r.nblocks,
					 r.bopt_block, strerror(-rc));
				if (rc != -ENOMEM)
					rc = -EUCLEAN;
				goto out;
			}
			(*applied)++;
		}
		if ((size_t)got < size)
			goto out; /* end of file, maybe with a short record */
	}
out:
	*good = rec;
	free(buf);
	return rc;
}

int hy_map_journal_open(const char *path, uint64_t generation, uint32_t epoch, struct hy_map *map,
			struct hy_map_journal **out, uint64_t *replayed, char *why, size_t why_size)
{
	struct hy_map_journal *j;
	uint64_t good, applied;
	struct stat st;
	int rc;

	*out = NULL;
	if (replayed)
		*replayed = 0;
	j = calloc(1, sizeof(*j));
	if (!j || !(j->path = strdup(path))) {
		free(j);
		snprintf(why, why_size, "%s: out of memory", path);
		return -ENOMEM;
	}
	j->generation = generation;
	j->epoch = epoch & HY_MAP_EPOCH_MASK;
	j->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (j->fd < 0) {
		rc = -errno;
		snprintf(why, why_size, "%s: cannot open the map journal: %s", path, strerror(-rc));
		free(j->path);
		free(j);
		return rc;
	}
	if (pthread_mutex_init(&j->lock, NULL) != 0) {
		close(j->fd);
		free(j->path);
		free(j);
		snprintf(why, why_size, "%s: cannot make a mutex", path);
		return -ENOMEM;
	}
	if (hy_group_commit_init(&j->commit, 0) != 0) {
		pthread_mutex_destroy(&j->lock);
		close(j->fd);
		free(j->path);
		free(j);
		snprintf(why, why_size, "%s: cannot make a condition variable", path);
		return -ENOMEM;
	}
	if (fstat(j->fd, &st) != 0) {
		rc = -errno;
		snprintf(why, why_size, "%s: cannot stat the map journal: %s", path, strerror(-rc));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		snprintf(why, why_size, "%s: the map journal is not a regular file", path);
		goto fail;
	}
	rc = replay(j, map, &good, &applied, why, why_size);
	if (rc)
		goto fail;
	if ((uint64_t)st.st_size != good * HY_MAP_JOURNAL_RECORD &&
	    ftruncate(j->fd, (off_t)(good * HY_MAP_JOURNAL_RECORD)) != 0) {
		rc = -errno;
		snprintf(why, why_size, "%s: cannot cut the torn tail after record %" PRIu64 ": %s",
			 path, good, strerror(-rc));
		goto fail;
	}
	/* Whatever is in the file now is what the map was given: make it
	 * durable (a previous run may have died before its sync), and the
	 * directory entry too, in case this open made the file. */
	if (fdatasync(j->fd) != 0) {
		rc = -errno;
		snprintf(why, why_size, "%s: cannot sync the map journal: %s", path, strerror(-rc));
		goto fail;
	}
	rc = hy_ondisk_sync_parent(path, NULL);
	if (rc) {
		snprintf(why, why_size, "%s: cannot sync the journal's directory: %s", path,
			 strerror(-rc));
		goto fail;
	}
	j->commit.written = j->commit.durable = good;
	if (replayed)
		*replayed = applied;
	*out = j;
	return 0;
fail:
	hy_map_journal_close(j);
	return rc;
}

int hy_map_journal_write(struct hy_map_journal *j, const struct hy_map_journal_record *r,
			 uint64_t *ticket)
{
	unsigned char buf[HY_MAP_JOURNAL_RECORD];
	struct hy_map_journal_record rec = *r;
	int rc;

	if (!valid_type(rec.type))
		return -EINVAL; /* it would read back as a torn tail */
	rec.generation = j->generation;
	pthread_mutex_lock(&j->lock);
	rec.epoch = j->epoch;
	hy_map_journal_encode(&rec, buf);
	if (j->error) {
		rc = j->error;
		pthread_mutex_unlock(&j->lock);
		return rc;
	}
	hy_fault_point("map.journal.before"); /* fault.h: the record never reaches the file */
	rc = hy_ondisk_write_full(j->fd, buf, sizeof(buf),
				  j->commit.written * HY_MAP_JOURNAL_RECORD);
	if (rc) {
		j->error = rc;
		pthread_mutex_unlock(&j->lock);
		return rc;
	}
	*ticket = hy_group_commit_issue(&j->commit);
	pthread_mutex_unlock(&j->lock);
	return 0;
}

int hy_map_journal_wait(struct hy_map_journal *j, uint64_t ticket)
{
	bool waited;
	int rc;

	pthread_mutex_lock(&j->lock);
	waited = j->commit.durable < ticket; /* for the crash point: records became durable */
	rc = hy_group_commit_wait(&j->commit, &j->lock, j->fd, &j->error, ticket);
	pthread_mutex_unlock(&j->lock);
	if (rc == 0 && waited)
		hy_fault_point("map.journal.after"); /* durable; the caller not told yet */
	return rc;
}

int hy_map_journal_append(struct hy_map_journal *j, const struct hy_map_journal_record *r)
{
	uint64_t ticket;
	int rc = hy_map_journal_write(j, r, &ticket);

	return rc ? rc : hy_map_journal_wait(j, ticket);
}

uint64_t hy_map_journal_records(struct hy_map_journal *j)
{
	uint64_t written;

	pthread_mutex_lock(&j->lock);
	written = j->commit.written;
	pthread_mutex_unlock(&j->lock);
	return written;
}

int hy_map_journal_sync(struct hy_map_journal *j)
{
	uint64_t written;

	pthread_mutex_lock(&j->lock);
	written = j->commit.written;
	pthread_mutex_unlock(&j->lock);
	return hy_map_journal_wait(j, written);
}

int64_t hy_map_journal_release(struct hy_map_journal *j, struct hy_map *map, uint64_t file_id,
			       uint64_t block, uint64_t nblocks, bool durable)
{
	struct hy_map_journal_record r = {.type = HY_MJ_RELEASE, .file_id = file_id};
	uint64_t ticket = 0, end;
	int rc = 0;

	if (nblocks == 0)
		return 0;
	end = block > UINT64_MAX - nblocks ? UINT64_MAX : block + nblocks;
	if (j && nblocks <= UINT32_MAX) {
		r.block = block;
		r.nblocks = (uint32_t)nblocks;
		rc = hy_map_journal_write(j, &r, &ticket);
	} else if (j) {
		/* a record holds 2^32 blocks at most: one per extent there */
		struct hy_map_extent *e;
		size_t n;

		rc = hy_map_file_extents(map, file_id, block, &e, &n);
		for (size_t i = 0; i < n && rc == 0 && e[i].block < end; i++) {
			uint64_t lo = e[i].block > block ? e[i].block : block;
			uint64_t hi =
				e[i].block + e[i].nblocks < end ? e[i].block + e[i].nblocks : end;

			r.block = lo;
			r.nblocks = (uint32_t)(hi - lo);
			rc = hy_map_journal_write(j, &r, &ticket);
		}
		free(e);
	}
	if (rc == 0 && ticket && durable)
		rc = hy_map_journal_wait(j, ticket);
	if (rc)
		return rc;
	return hy_map_release(map, file_id, block, end - block);
}

int hy_map_journal_checkpoint(struct hy_map_journal *j, struct hy_map *map, struct sqlite3 *db,
			      char *why, size_t why_size)
{
	uint32_t next;
	int rc;

	pthread_mutex_lock(&j->lock);
	next = (j->epoch + 1) & HY_MAP_EPOCH_MASK;
	pthread_mutex_unlock(&j->lock);
	/* Once this commits, the journal's records (of the old epoch) are
	 * skipped at replay, whether or not the file is emptied below. */
	rc = hy_map_save(map, db, j->generation, next, why, why_size);
	if (rc)
		return rc;
	pthread_mutex_lock(&j->lock);
	j->epoch = next;
	/* A sync still running would set durable from the old file's count. */
	hy_group_commit_reset(&j->commit, &j->lock, 0);
	if (ftruncate(j->fd, 0) != 0) {
		rc = -errno;
		j->error = rc; /* its records would replay onto the checkpoint */
		snprintf(why, why_size, "%s: cannot empty the map journal: %s", j->path,
			 strerror(-rc));
		goto out;
	}
	if (fdatasync(j->fd) != 0) {
		rc = -errno;
		j->error = rc;
		snprintf(why, why_size, "%s: cannot sync the emptied map journal: %s", j->path,
			 strerror(-rc));
	}
out:
	pthread_mutex_unlock(&j->lock);
	return rc;
}

void hy_map_journal_close(struct hy_map_journal *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	hy_group_commit_destroy(&j->commit);
	pthread_mutex_destroy(&j->lock);
	free(j->path);
	free(j);
}
