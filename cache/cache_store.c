/* cache_store.c - see include/hybridfs/cache_store.h.
 *
 * Encodings are byte by byte (little-endian whatever the host). libblkid
 * resolves UUID= and LABEL= and names what a file or device holds when it
 * is not a store, as borg/bopt.c does; both use the shared helpers of
 * ondisk.h for that, for the encodings, checksums and whole-buffer I/O.
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
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/cache_store.h"
#include "hybridfs/device.h"
#include "hybridfs/fault.h"
#include "hybridfs/group_commit.h"
#include "hybridfs/log.h"
#include "hybridfs/ondisk.h"

/* superblock */
#define OFF_MAGIC	 0
#define OFF_VERSION	 8
#define OFF_HEADER_SIZE	 12
#define OFF_UUID	 16
#define OFF_LINE_SIZE	 56
#define OFF_FLAGS	 60
#define OFF_CAPACITY	 64
#define OFF_GENERATION	 72
#define OFF_TABLE_OFF	 80
#define OFF_TABLE_SIZE	 88
#define OFF_JOURNAL_OFF	 96
#define OFF_JOURNAL_SIZE 104
#define OFF_DATA_OFF	 112
#define OFF_DATA_SIZE	 120
#define OFF_CHECKSUM	 128
#define UUID_FIELD	 40
#define FLAG_CLEAN	 1u

/* table copy header */
#define TAB_MAGIC      "HYCTAB\0\0"
#define TAB_GENERATION 8
#define TAB_SEQ	       16
#define TAB_CAPACITY   24
#define TAB_CHECKSUM   32

/* line record */
#define LR_FILE_ID  0
#define LR_BLOCK    8
#define LR_VALID    16
#define LR_DIRTY    17
#define LR_FLAGS    18
#define LR_SEQ_V1   20 /* format 1: 8 bytes */
#define LR_TAIL	    20 /* format 2: 2 bytes, then the sequence's low 48 bits */
#define LR_SEQ	    22
#define LR_CHECKSUM 28
#define LR_USED	    1u

/* journal record */
#define JR_TYPE	      4
#define JR_VALID      5
#define JR_DIRTY      6
#define JR_SEQ	      8
#define JR_GENERATION 16
#define JR_LINE	      24
#define JR_FILE_ID    32
#define JR_BLOCK      40
#define JR_TAIL	      48
#define JR_CHECKSUM   60

#define SECTORS	    (HY_CACHE_LINE_SIZE / HY_CACHE_SECTOR_SIZE)
#define CHUNK	    (1024 * 1024) /* bytes read or written at a time */
#define MIN_JOURNAL 1024u	  /* records */
#define MAX_JOURNAL 65536u
/* the largest byte count that still fits an off_t */
#define MAX_BYTES ((uint64_t)INT64_MAX)

static const unsigned char jmagic[4] = {'H', 'Y', 'C', 'J'};

static uint64_t table_copy_blocks(uint64_t capacity)
{
	return 1 +
	       (capacity * HY_CACHE_LINE_RECORD + HY_CACHE_STORE_BLOCK - 1) / HY_CACHE_STORE_BLOCK;
}

void hy_cache_store_encode(const struct hy_cache_store_header *h, unsigned char *buf)
{
	memset(buf, 0, HY_CACHE_STORE_BLOCK);
	memcpy(buf + OFF_MAGIC, HY_CACHE_STORE_MAGIC, 8);
	hy_ondisk_put_le32(buf + OFF_VERSION, h->version);
	hy_ondisk_put_le32(buf + OFF_HEADER_SIZE, HY_CACHE_STORE_HEADER_SIZE);
	memcpy(buf + OFF_UUID, h->uuid, strnlen(h->uuid, UUID_FIELD - 1));
	hy_ondisk_put_le32(buf + OFF_LINE_SIZE, h->line_size);
	hy_ondisk_put_le32(buf + OFF_FLAGS, h->clean_shutdown ? FLAG_CLEAN : 0);
	hy_ondisk_put_le64(buf + OFF_CAPACITY, h->capacity);
	hy_ondisk_put_le64(buf + OFF_GENERATION, h->generation);
	hy_ondisk_put_le64(buf + OFF_TABLE_OFF, h->table_offset);
	hy_ondisk_put_le64(buf + OFF_TABLE_SIZE, h->table_size);
	hy_ondisk_put_le64(buf + OFF_JOURNAL_OFF, h->journal_offset);
	hy_ondisk_put_le64(buf + OFF_JOURNAL_SIZE, h->journal_size);
	hy_ondisk_put_le64(buf + OFF_DATA_OFF, h->data_offset);
	hy_ondisk_put_le64(buf + OFF_DATA_SIZE, h->data_size);
	hy_ondisk_put_le64(buf + OFF_CHECKSUM, hy_ondisk_fnv1a64(buf, OFF_CHECKSUM));
}

/* The regions follow each other as the header says, and fit an off_t. */
static bool layout_ok(const struct hy_cache_store_header *h)
{
	uint64_t max_lines = MAX_BYTES / (2 * HY_CACHE_LINE_SIZE);

	if (h->capacity < 1 || h->capacity > max_lines)
		return false;
	if (h->table_offset != HY_CACHE_STORE_BLOCK ||
	    h->table_size != 2 * table_copy_blocks(h->capacity) * HY_CACHE_STORE_BLOCK)
		return false;
	if (h->journal_offset != h->table_offset + h->table_size ||
	    h->journal_size < HY_CACHE_STORE_BLOCK || h->journal_size % HY_CACHE_STORE_BLOCK ||
	    h->journal_size > MAX_BYTES / 4)
		return false;
	if (h->data_offset != h->journal_offset + h->journal_size ||
	    h->data_size != h->capacity * HY_CACHE_LINE_SIZE ||
	    h->data_size > MAX_BYTES - h->data_offset)
		return false;
	return true;
}

int hy_cache_store_decode(const unsigned char *buf, struct hy_cache_store_header *h, char *why,
			  size_t why_size)
{
	uint64_t sum, want;
	uint32_t version, header_size, flags;
	size_t uuid_len;

	memset(h, 0, sizeof(*h));
	if (memcmp(buf + OFF_MAGIC, HY_CACHE_STORE_MAGIC, 8) != 0) {
		hy_ondisk_say(why, why_size, "not a hybridfs cache store (no cache store magic)");
		return -EUCLEAN;
	}
	/* before the checksum: a newer format may checksum differently */
	version = hy_ondisk_get_le32(buf + OFF_VERSION);
	if (version > HY_CACHE_STORE_VERSION) {
		hy_ondisk_say(why, why_size,
			      "cache store format version %" PRIu32
			      " is newer than this hybridfs reads (%d)",
			      version, HY_CACHE_STORE_VERSION);
		return -EPROTO;
	}
	sum = hy_ondisk_get_le64(buf + OFF_CHECKSUM);
	want = hy_ondisk_fnv1a64(buf, OFF_CHECKSUM);
	if (sum != want) {
		hy_ondisk_say(why, why_size,
			      "cache store superblock damaged (checksum %016" PRIx64
			      ", expected %016" PRIx64 ")",
			      sum, want);
		return -EUCLEAN;
	}
	if (version == 0) {
		hy_ondisk_say(why, why_size, "cache store superblock damaged (format version 0)");
		return -EUCLEAN;
	}
	header_size = hy_ondisk_get_le32(buf + OFF_HEADER_SIZE);
	if (header_size != HY_CACHE_STORE_HEADER_SIZE) {
		hy_ondisk_say(why, why_size,
			      "cache store superblock damaged (header size %" PRIu32
			      ", expected %d)",
			      header_size, HY_CACHE_STORE_HEADER_SIZE);
		return -EUCLEAN;
	}
	/* empty: an unclaimed store (made by `hybridctl format-cache`) */
	uuid_len = strnlen((const char *)buf + OFF_UUID, UUID_FIELD);
	if (uuid_len >= UUID_FIELD) {
		hy_ondisk_say(why, why_size,
			      "cache store superblock damaged (mount uuid not terminated)");
		return -EUCLEAN;
	}
	for (size_t i = uuid_len; i < UUID_FIELD; i++) {
		if (buf[OFF_UUID + i] != 0) {
			hy_ondisk_say(
				why, why_size,
				"cache store superblock damaged (mount uuid padding not zero)");
			return -EUCLEAN;
		}
	}
	flags = hy_ondisk_get_le32(buf + OFF_FLAGS);
	if (flags & ~FLAG_CLEAN) {
		hy_ondisk_say(why, why_size,
			      "cache store superblock damaged (unknown flags %#" PRIx32 ")", flags);
		return -EUCLEAN;
	}
	h->version = version;
	memcpy(h->uuid, buf + OFF_UUID, uuid_len);
	h->uuid[uuid_len] = '\0';
	h->line_size = hy_ondisk_get_le32(buf + OFF_LINE_SIZE);
	h->clean_shutdown = flags & FLAG_CLEAN;
	h->capacity = hy_ondisk_get_le64(buf + OFF_CAPACITY);
	h->generation = hy_ondisk_get_le64(buf + OFF_GENERATION);
	h->table_offset = hy_ondisk_get_le64(buf + OFF_TABLE_OFF);
	h->table_size = hy_ondisk_get_le64(buf + OFF_TABLE_SIZE);
	h->journal_offset = hy_ondisk_get_le64(buf + OFF_JOURNAL_OFF);
	h->journal_size = hy_ondisk_get_le64(buf + OFF_JOURNAL_SIZE);
	h->data_offset = hy_ondisk_get_le64(buf + OFF_DATA_OFF);
	h->data_size = hy_ondisk_get_le64(buf + OFF_DATA_SIZE);
	if (h->line_size != HY_CACHE_LINE_SIZE) {
		hy_ondisk_say(why, why_size,
			      "cache store superblock damaged (line size %" PRIu32 ", not %d)",
			      h->line_size, HY_CACHE_LINE_SIZE);
		return -EUCLEAN;
	}
	if (!layout_ok(h)) {
		hy_ondisk_say(why, why_size,
			      "cache store regions do not add up (%" PRIu64 " lines, table %" PRIu64
			      "+%" PRIu64 ", journal %" PRIu64 "+%" PRIu64 ", data %" PRIu64
			      "+%" PRIu64 ")",
			      h->capacity, h->table_offset, h->table_size, h->journal_offset,
			      h->journal_size, h->data_offset, h->data_size);
		return -EUCLEAN;
	}
	return 0;
}

void hy_cache_journal_encode(const struct hy_cache_journal_record *r, unsigned char *buf)
{
	memset(buf, 0, HY_CACHE_JOURNAL_RECORD);
	memcpy(buf, jmagic, sizeof(jmagic));
	buf[JR_TYPE] = (unsigned char)r->type;
	buf[JR_VALID] = r->valid;
	buf[JR_DIRTY] = r->dirty;
	hy_ondisk_put_le64(buf + JR_SEQ, r->sequence);
	hy_ondisk_put_le64(buf + JR_GENERATION, r->generation);
	hy_ondisk_put_le64(buf + JR_LINE, r->line);
	hy_ondisk_put_le64(buf + JR_FILE_ID, r->file_id);
	hy_ondisk_put_le64(buf + JR_BLOCK, r->block);
	buf[JR_TAIL] = (unsigned char)(r->tail & 0xff);
	buf[JR_TAIL + 1] = (unsigned char)(r->tail >> 8);
	hy_ondisk_put_le32(buf + JR_CHECKSUM, hy_ondisk_fnv1a32(buf, JR_CHECKSUM));
}

int hy_cache_journal_decode(const unsigned char *buf, struct hy_cache_journal_record *r)
{
	if (memcmp(buf, jmagic, sizeof(jmagic)) != 0)
		return -EUCLEAN;
	if (buf[JR_TYPE] < HY_CJ_FILL || buf[JR_TYPE] > HY_CJ_MASKS)
		return -EUCLEAN;
	if (hy_ondisk_get_le32(buf + JR_CHECKSUM) != hy_ondisk_fnv1a32(buf, JR_CHECKSUM))
		return -EUCLEAN;
	r->type = (enum hy_cache_journal_type)buf[JR_TYPE];
	r->valid = buf[JR_VALID];
	r->dirty = buf[JR_DIRTY];
	r->sequence = hy_ondisk_get_le64(buf + JR_SEQ);
	r->generation = hy_ondisk_get_le64(buf + JR_GENERATION);
	r->line = hy_ondisk_get_le64(buf + JR_LINE);
	r->file_id = hy_ondisk_get_le64(buf + JR_FILE_ID);
	r->block = hy_ondisk_get_le64(buf + JR_BLOCK);
	r->tail = (uint16_t)(buf[JR_TAIL] | buf[JR_TAIL + 1] << 8);
	return 0;
}

static uint32_t line_record_sum(const unsigned char *p, uint64_t line, uint64_t generation)
{
	unsigned char extra[16];

	hy_ondisk_put_le64(extra, line);
	hy_ondisk_put_le64(extra + 8, generation);
	return hy_ondisk_fnv1a32_more(hy_ondisk_fnv1a32(p, LR_CHECKSUM), extra, sizeof(extra));
}

/* @version: the store's format (a format 1 store, read for its recovery,
 * keeps its layout when load() checkpoints it). */
static void encode_line(const struct hy_cache_line *l, uint64_t line, uint64_t generation,
			uint64_t seq, uint32_t version, unsigned char *p)
{
	memset(p, 0, HY_CACHE_LINE_RECORD);
	if (!l->used)
		return; /* all zero: free */
	hy_ondisk_put_le64(p + LR_FILE_ID, l->file_id);
	hy_ondisk_put_le64(p + LR_BLOCK, l->block);
	p[LR_VALID] = l->valid;
	p[LR_DIRTY] = l->dirty;
	p[LR_FLAGS] = LR_USED;
	if (version < 2) {
		hy_ondisk_put_le64(p + LR_SEQ_V1, seq);
	} else {
		unsigned char seq8[8];

		p[LR_TAIL] = (unsigned char)(l->tail & 0xff);
		p[LR_TAIL + 1] = (unsigned char)(l->tail >> 8);
		hy_ondisk_put_le64(seq8, seq);
		memcpy(p + LR_SEQ, seq8, LR_CHECKSUM - LR_SEQ); /* the low 48 bits */
	}
	hy_ondisk_put_le32(p + LR_CHECKSUM, line_record_sum(p, line, generation));
}

/* 0 (a free line is all zero) or -EUCLEAN */
static int decode_line(const unsigned char *p, uint64_t line, uint64_t generation, uint32_t version,
		       struct hy_cache_line *l)
{
	static const unsigned char zero[HY_CACHE_LINE_RECORD];

	memset(l, 0, sizeof(*l));
	if (memcmp(p, zero, sizeof(zero)) == 0)
		return 0;
	if (hy_ondisk_get_le32(p + LR_CHECKSUM) != line_record_sum(p, line, generation))
		return -EUCLEAN;
	if (p[LR_FLAGS] != LR_USED || p[19] != 0 || (p[LR_DIRTY] & ~p[LR_VALID]))
		return -EUCLEAN;
	if (version >= 2 && (p[LR_TAIL] | p[LR_TAIL + 1] << 8) >= HY_CACHE_LINE_SIZE)
		return -EUCLEAN; /* before l is filled: a damaged record leaves a free line */
	l->used = true;
	l->file_id = hy_ondisk_get_le64(p + LR_FILE_ID);
	l->block = hy_ondisk_get_le64(p + LR_BLOCK);
	l->valid = p[LR_VALID];
	l->dirty = p[LR_DIRTY];
	if (version >= 2)
		l->tail = (uint16_t)(p[LR_TAIL] | p[LR_TAIL + 1] << 8);
	return 0;
}

static void encode_copy_header(uint64_t generation, uint64_t seq, uint64_t capacity,
			       unsigned char *buf)
{
	memset(buf, 0, HY_CACHE_STORE_BLOCK);
	memcpy(buf, TAB_MAGIC, 8);
	hy_ondisk_put_le64(buf + TAB_GENERATION, generation);
	hy_ondisk_put_le64(buf + TAB_SEQ, seq);
	hy_ondisk_put_le64(buf + TAB_CAPACITY, capacity);
	hy_ondisk_put_le64(buf + TAB_CHECKSUM, hy_ondisk_fnv1a64(buf, TAB_CHECKSUM));
}

/* 0 with the copy's sequence, or -EUCLEAN */
static int decode_copy_header(const unsigned char *buf, uint64_t generation, uint64_t capacity,
			      uint64_t *seq)
{
	if (memcmp(buf, TAB_MAGIC, 8) != 0 ||
	    hy_ondisk_get_le64(buf + TAB_CHECKSUM) != hy_ondisk_fnv1a64(buf, TAB_CHECKSUM) ||
	    hy_ondisk_get_le64(buf + TAB_GENERATION) != generation ||
	    hy_ondisk_get_le64(buf + TAB_CAPACITY) != capacity)
		return -EUCLEAN;
	*seq = hy_ondisk_get_le64(buf + TAB_SEQ);
	return 0;
}

/* ---- I/O ---- */

/* Reads @len bytes at @off; zeros past the end of the file. 0 or -errno. */
static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = hy_ondisk_read_full(fd, buf, len, off);

	return n < 0 ? (int)n : 0;
}

int hy_cache_store_resolve(const char *spec, char *buf, size_t size, char *why, size_t why_size)
{
	return hy_ondisk_resolve(spec, "cache", buf, size, why, why_size);
}

/* ---- creation ---- */

static uint64_t new_generation(void)
{
	uint64_t g = 0;

	if (getrandom(&g, sizeof(g), 0) != (ssize_t)sizeof(g)) {
		struct timespec ts;

		/* not secret, only new: the clock and the pid will do */
		clock_gettime(CLOCK_REALTIME, &ts);
		g = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		g ^= (uint64_t)getpid() << 40;
	}
	return g ? g : 1;
}

#define RECORDS_PER_BLOCK (HY_CACHE_STORE_BLOCK / HY_CACHE_JOURNAL_RECORD)

static uint64_t layout_bytes(uint64_t capacity, uint64_t journal_size)
{
	return HY_CACHE_STORE_BLOCK + 2 * table_copy_blocks(capacity) * HY_CACHE_STORE_BLOCK +
	       journal_size + capacity * HY_CACHE_LINE_SIZE;
}

/* The superblock of a new store that fits in @size bytes. */
static int plan(const char *path, const char *uuid, uint64_t size, struct hy_cache_store_header *h,
		char *why, size_t why_size)
{
	uint64_t cap, jrec, jsize;

	memset(h, 0, sizeof(*h));
	if (size > MAX_BYTES / 2)
		size = MAX_BYTES / 2;
	cap = size / HY_CACHE_LINE_SIZE;
	jrec = cap < MIN_JOURNAL ? MIN_JOURNAL : cap > MAX_JOURNAL ? MAX_JOURNAL : cap;
	/* whole blocks: the data region must start on one (a size whose line
	 * count is not a multiple of 64 made a store that its own open refused) */
	jrec = (jrec + RECORDS_PER_BLOCK - 1) / RECORDS_PER_BLOCK * RECORDS_PER_BLOCK;
	jsize = jrec * HY_CACHE_JOURNAL_RECORD;
	/* a line costs its data and two 32-byte records: start close, step down */
	cap = size / (HY_CACHE_LINE_SIZE + 2 * HY_CACHE_LINE_RECORD);
	while (cap > 0 && layout_bytes(cap, jsize) > size)
		cap--;
	if (cap < 1) {
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\": %" PRIu64
			      " bytes do not hold a superblock, a line table, a "
			      "%" PRIu64 "-byte journal and one line",
			      path, size, jsize);
		return -EINVAL;
	}
	h->version = HY_CACHE_STORE_VERSION;
	snprintf(h->uuid, sizeof(h->uuid), "%s", uuid); /* "": unclaimed */
	h->line_size = HY_CACHE_LINE_SIZE;
	h->capacity = cap;
	h->generation = new_generation();
	h->table_offset = HY_CACHE_STORE_BLOCK;
	h->table_size = 2 * table_copy_blocks(cap) * HY_CACHE_STORE_BLOCK;
	h->journal_offset = h->table_offset + h->table_size;
	h->journal_size = jsize;
	h->data_offset = h->journal_offset + jsize;
	h->data_size = cap * HY_CACHE_LINE_SIZE;
	h->clean_shutdown = true; /* nothing dirty yet */
	return 0;
}

/* Writes the table and the first journal block (zeros; copy A's header
 * with sequence 0), then the superblock last, each synced. */
static int write_new_store(int fd, const struct hy_cache_store_header *h)
{
	unsigned char *buf = calloc(1, CHUNK);
	uint64_t off, end = h->journal_offset + HY_CACHE_STORE_BLOCK;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (off = h->table_offset; off < end && rc == 0; off += CHUNK) {
		uint64_t len = end - off < CHUNK ? end - off : CHUNK;

		rc = hy_ondisk_write_full(fd, buf, (size_t)len, off);
	}
	if (rc == 0) {
		encode_copy_header(h->generation, 0, h->capacity, buf);
		rc = hy_ondisk_write_full(fd, buf, HY_CACHE_STORE_BLOCK, h->table_offset);
	}
	if (rc == 0 && fdatasync(fd) < 0)
		rc = -errno;
	if (rc == 0) {
		hy_cache_store_encode(h, buf);
		rc = hy_ondisk_write_full(fd, buf, HY_CACHE_STORE_BLOCK, 0);
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	free(buf);
	return rc;
}

/* Block 0 as hy_ondisk_check_overwrite() sees it. An unclaimed store
 * holds nothing yet: a mount may format it again as its own. (A new
 * unclaimed format never gets here over a good store: see
 * refuse_existing_store().) */
static enum hy_ondisk_kind classify_block0(const unsigned char *block0, const char *uuid,
					   char *other, size_t other_size, char *msg,
					   size_t msg_size)
{
	struct hy_cache_store_header old;

	if (memcmp(block0, HY_CACHE_STORE_MAGIC, 8) != 0)
		return HY_ONDISK_FOREIGN;
	if (hy_cache_store_decode(block0, &old, msg, msg_size) != 0)
		return HY_ONDISK_DAMAGED;
	if (old.uuid[0] && strcmp(old.uuid, uuid) != 0) {
		snprintf(other, other_size, "%s", old.uuid);
		return HY_ONDISK_OTHER_MOUNT;
	}
	return HY_ONDISK_OURS;
}

static int write_new_layout(int fd, const void *arg)
{
	return write_new_store(fd, arg);
}

static const struct hy_ondisk_format store_format = {
	.what = "cache",
	.noun = "cache store",
	.written = "the new store",
	.sparse = "the store is a sparse file",
	.block0_size = HY_CACHE_STORE_BLOCK,
	.classify = classify_block0,
	.write = write_new_layout,
};

/* An unclaimed format has no mount to call a store its own: any good
 * store already at @path, claimed or not, is refused (-EEXIST) rather than
 * silently made new. 0 when there is none; a block 0 that cannot be read
 * is left to hy_ondisk_check_overwrite() to report. */
static int refuse_existing_store(const char *path, char *why, size_t why_size)
{
	unsigned char buf[HY_CACHE_STORE_BLOCK];
	struct hy_cache_store_header old;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return 0;
	rc = read_full(fd, buf, sizeof(buf), 0);
	close(fd);
	if (rc < 0 || hy_cache_store_decode(buf, &old, NULL, 0) < 0)
		return 0;
	if (old.uuid[0])
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\" already holds a cache store (%" PRIu64
			      " lines, of mount %s); refusing to overwrite it without force",
			      path, old.capacity, old.uuid);
	else
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\" already holds a cache store (%" PRIu64
			      " lines, unclaimed); refusing to overwrite it without force",
			      path, old.capacity);
	return -EEXIST;
}

int hy_cache_store_create(const char *path, const char *uuid, uint64_t size, uint32_t line_size,
			  bool force, char *why, size_t why_size)
{
	struct hy_cache_store_header h;
	bool exists = true, block = false;
	struct stat st;
	int fd, rc;

	if (!uuid)
		uuid = ""; /* unclaimed */
	if (!path || !*path || strlen(uuid) >= UUID_FIELD) {
		hy_ondisk_say(why, why_size,
			      "cache: a path and a mount uuid of at most %d characters are needed",
			      UUID_FIELD - 1);
		return -EINVAL;
	}
	if (line_size != HY_CACHE_LINE_SIZE) {
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\": line size %" PRIu32 " is not supported (only %d)",
			      path, line_size, HY_CACHE_LINE_SIZE);
		return -EINVAL;
	}
	if (stat(path, &st) < 0) {
		if (errno != ENOENT) {
			rc = -errno;
			hy_ondisk_say(why, why_size, "cache: cannot look at \"%s\": %s", path,
				      strerror(-rc));
			return rc;
		}
		exists = false;
	} else if (S_ISBLK(st.st_mode)) {
		block = true;
	} else if (!S_ISREG(st.st_mode)) {
		hy_ondisk_say(
			why, why_size,
			"cache: \"%s\" exists and is neither a regular file nor a block device",
			path);
		return -EEXIST;
	}
	if (exists && !force && !*uuid) {
		rc = refuse_existing_store(path, why, why_size);
		if (rc < 0)
			return rc;
	}
	if (exists && !force) {
		rc = hy_ondisk_check_overwrite(&store_format, path, uuid, false, why, why_size);
		if (rc < 0)
			return rc;
	}
	if (!block) {
		rc = plan(path, uuid, size, &h, why, why_size);
		if (rc < 0)
			return rc;
		return hy_ondisk_make_file(&store_format, &h, path, exists,
					   layout_bytes(h.capacity, h.journal_size), why, why_size);
	}
	fd = open(path, O_RDWR | O_CLOEXEC | O_EXCL); /* not while in use */
	if (fd < 0) {
		rc = -errno;
		hy_ondisk_say(why, why_size, "cache: cannot open \"%s\": %s", path, strerror(-rc));
		return rc;
	}
	rc = fstat(fd, &st) < 0 ? -errno : hy_ondisk_size(fd, &st, &size);
	if (rc < 0) {
		hy_ondisk_say(why, why_size,
			      "cache: cannot find the size of the block device \"%s\"", path);
		goto out;
	}
	rc = plan(path, uuid, size, &h, why, why_size);
	if (rc < 0)
		goto out;
	rc = write_new_store(fd, &h);
	if (rc < 0)
		hy_ondisk_say(why, why_size, "cache: cannot write the new store \"%s\": %s", path,
			      strerror(-rc));
out:
	close(fd);
	return rc;
}

/* ---- the open store ---- */

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
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\" is the cache store of mount %s, not of mount %s", path,
			      h.uuid, uuid);
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
	s->copy_blocks = table_copy_blocks(h.capacity);
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
			if (decode_line(buf + i * HY_CACHE_LINE_RECORD, n, s->header.generation,
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

/* A record that may be applied to the table: 0 or -EINVAL. */
static int check_record(const struct hy_cache_store *s, const struct hy_cache_journal_record *r)
{
	if (r->line >= s->header.capacity || (r->dirty & ~r->valid) ||
	    r->tail >= HY_CACHE_LINE_SIZE)
		return -EINVAL;
	switch (r->type) {
	case HY_CJ_FILL:
		return 0;
	case HY_CJ_FREE:
		return 0;
	case HY_CJ_MASKS:
		return s->lines && !s->lines[r->line].used ? -EINVAL
							   : 0; /* unknowable when external */
	}
	return -EINVAL;
}

static void apply(struct hy_cache_store *s, const struct hy_cache_journal_record *r)
{
	struct hy_cache_line *l;

	if (!s->lines)
		return; /* an external table: its owner keeps it */
	l = &s->lines[r->line];

	switch (r->type) {
	case HY_CJ_FILL:
		l->used = true;
		l->file_id = r->file_id;
		l->block = r->block;
		l->valid = r->valid;
		l->dirty = r->dirty;
		l->tail = r->tail;
		break;
	case HY_CJ_FREE:
		memset(l, 0, sizeof(*l));
		return;
	case HY_CJ_MASKS:
		l->valid = r->valid;
		l->dirty = r->dirty;
		l->tail = r->tail;
		break;
	}
}

/* Applies the journal's records after the checkpoint (see the header). */
static int replay(struct hy_cache_store *s, struct hy_cache_store_load_stats *st)
{
	size_t per = CHUNK / HY_CACHE_JOURNAL_RECORD;
	unsigned char *buf = malloc(CHUNK);
	uint64_t n = 0, expect = s->checkpoint_seq + 1;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	while (n < s->journal_capacity) {
		uint64_t k = s->journal_capacity - n < per ? s->journal_capacity - n : per;

		rc = read_full(s->fd, buf, (size_t)(k * HY_CACHE_JOURNAL_RECORD),
			       s->header.journal_offset + n * HY_CACHE_JOURNAL_RECORD);
		if (rc < 0)
			goto out;
		for (uint64_t i = 0; i < k; i++, n++) {
			static const unsigned char zero[HY_CACHE_JOURNAL_RECORD];
			const unsigned char *p = buf + i * HY_CACHE_JOURNAL_RECORD;
			struct hy_cache_journal_record r;

			if (hy_cache_journal_decode(p, &r) < 0) {
				/* zeros: a fresh journal's end; anything else is torn */
				if (memcmp(p, zero, sizeof(zero)) != 0) {
					st->journal_cut = true;
					st->cut_at = n;
				}
				goto out;
			}
			if (r.generation != s->header.generation)
				goto out; /* an older format's: the end */
			if (r.sequence != expect)
				goto out; /* from before the checkpoint: the end */
			if (check_record(s, &r) < 0) {
				st->journal_cut = true;
				st->cut_at = n;
				goto out;
			}
			apply(s, &r);
			expect++;
			st->replayed++;
		}
	}
out:
	/* A good record of this format after the bad one, newer than any
	 * applied: a power failure can leave that (neither was acknowledged),
	 * and so can damage from outside, which loses the dirty lines those
	 * records name; the two cannot be told apart, so the cut stands (as
	 * for a torn tail), but the loss is said plainly (damaged.sh:
	 * dirty-cache-journal). */
	if (st->journal_cut) {
		bool later = false;

		for (uint64_t m = st->cut_at + 1; rc == 0 && m < s->journal_capacity && !later;
		     m++) {
			unsigned char p[HY_CACHE_JOURNAL_RECORD];
			struct hy_cache_journal_record r;

			if (read_full(s->fd, p, sizeof(p),
				      s->header.journal_offset + m * HY_CACHE_JOURNAL_RECORD) < 0 ||
			    hy_cache_journal_decode(p, &r) < 0)
				break;
			later = r.generation == s->header.generation && r.sequence > expect;
		}
		if (later)
			hy_log(LOG_ERR,
			       "cache: \"%s\": journal record %" PRIu64
			       " is damaged and good records follow it: unless a power failure "
			       "tore it, the journal was damaged, and dirty lines the records "
			       "after "
			       "it name are lost",
			       s->path, st->cut_at);
		else
			hy_log(LOG_WARNING,
			       "cache: \"%s\": journal record %" PRIu64
			       " is torn or damaged; replay stops there",
			       s->path, st->cut_at);
	}
	s->journal_used = n;
	s->commit.written = s->commit.durable = expect - 1;
	free(buf);
	return rc;
}

/* Writes every line record of the copy not in use, synced. Caller holds
 * nothing; appends are quiesced. */
static int write_table(struct hy_cache_store *s, int copy, uint64_t seq)
{
	size_t per = CHUNK / HY_CACHE_LINE_RECORD;
	unsigned char *buf = malloc(CHUNK);
	uint64_t off = copy_offset(s, copy) + HY_CACHE_STORE_BLOCK, n = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	while (n < s->header.capacity && rc == 0) {
		uint64_t k = s->header.capacity - n < per ? s->header.capacity - n : per;

		for (uint64_t i = 0; i < k; i++) {
			struct hy_cache_line ext;
			const struct hy_cache_line *l = &ext;

			if (s->lines)
				l = &s->lines[n + i];
			else
				s->external(s->external_arg, n + i, &ext);
			encode_line(l, n + i, s->header.generation, seq, s->header.version,
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

	if (!s->loaded) {
		hy_ondisk_say(why, why_size, "cache: \"%s\": checkpoint before load", s->path);
		return -EINVAL;
	}
	if (s->error) {
		hy_ondisk_say(why, why_size, "cache: \"%s\": the journal failed earlier: %s",
			      s->path, strerror(-s->error));
		return s->error;
	}
	rc = write_table(s, copy, seq);
	if (rc == 0) {
		unsigned char buf[HY_CACHE_STORE_BLOCK];

		encode_copy_header(s->header.generation, seq, s->header.capacity, buf);
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

	pthread_mutex_lock(&s->lock);
	seq = s->commit.written;
	pthread_mutex_unlock(&s->lock);
	return checkpoint_at(s, seq, why, why_size);
}

int hy_cache_store_load(struct hy_cache_store *s, hy_cache_store_line_cb cb, void *arg,
			struct hy_cache_store_load_stats *stats, char *why, size_t why_size)
{
	struct hy_cache_store_load_stats local;
	unsigned char buf[HY_CACHE_STORE_BLOCK];
	uint64_t seq[2];
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
		good[c] = decode_copy_header(buf, s->header.generation, s->header.capacity,
					     &seq[c]) == 0;
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
		rc = replay(s, stats);
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
	return rc;
}

uint64_t hy_cache_store_journal_room(struct hy_cache_store *s)
{
	uint64_t room;

	pthread_mutex_lock(&s->lock);
	room = s->journal_capacity - s->journal_used;
	pthread_mutex_unlock(&s->lock);
	return room;
}

/* Waits until @seq is durable (the group commit). s->lock held. */
static int wait_durable(struct hy_cache_store *s, uint64_t seq)
{
	return hy_group_commit_wait(&s->commit, &s->lock, s->fd, &s->error, seq);
}

int hy_cache_store_journal_write(struct hy_cache_store *s, const struct hy_cache_journal_record *r,
				 uint64_t *seq)
{
	unsigned char buf[HY_CACHE_JOURNAL_RECORD];
	struct hy_cache_journal_record rec = *r;
	int rc;

	pthread_mutex_lock(&s->lock);
	if (!s->loaded || check_record(s, r) < 0) {
		rc = -EINVAL;
		goto out;
	}
	if (s->error) {
		rc = s->error;
		goto out;
	}
	if (s->journal_used >= s->journal_capacity) {
		rc = -ENOSPC;
		goto out;
	}
	/* fault.h: the record never reaches the file */
	hy_fault_point("cache.journal.before");
	rec.sequence = s->commit.written + 1;
	rec.generation = s->header.generation;
	hy_cache_journal_encode(&rec, buf);
	rc = hy_ondisk_write_full(s->fd, buf, sizeof(buf),
				  s->header.journal_offset +
					  s->journal_used * HY_CACHE_JOURNAL_RECORD);
	if (rc < 0) {
		s->error = rc;
		goto out;
	}
	s->journal_used++;
	s->commit.written = rec.sequence;
	/* the table copy follows at once: a checkpoint (which syncs the whole
	 * store before its header) may save it before the record is durable,
	 * and that is as good as the record */
	apply(s, &rec);
	*seq = rec.sequence;
out:
	pthread_mutex_unlock(&s->lock);
	if (rc < 0 && rc != -EINVAL && rc != -ENOSPC)
		hy_log(LOG_ERR, "cache: \"%s\": journal write failed: %s", s->path, strerror(-rc));
	return rc;
}

int hy_cache_store_journal_wait(struct hy_cache_store *s, uint64_t seq)
{
	bool waited;
	int rc;

	pthread_mutex_lock(&s->lock);
	waited = s->commit.durable < seq; /* for the crash point: records became durable */
	rc = wait_durable(s, seq);
	pthread_mutex_unlock(&s->lock);
	if (rc < 0)
		hy_log(LOG_ERR, "cache: \"%s\": journal sync failed: %s", s->path, strerror(-rc));
	else if (waited)
		hy_fault_point("cache.journal.after"); /* durable; the caller not told yet */
	return rc;
}

int hy_cache_store_journal_append(struct hy_cache_store *s, const struct hy_cache_journal_record *r)
{
	uint64_t seq;
	int rc = hy_cache_store_journal_write(s, r, &seq);

	return rc < 0 ? rc : hy_cache_store_journal_wait(s, seq);
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
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\" is the cache store of mount %s, not of mount %s",
			      s->path, h.uuid, uuid);
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
	hy_log(LOG_INFO, "cache: \"%s\" was unclaimed; it is now the cache store of mount %s",
	       s->path, uuid);
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
