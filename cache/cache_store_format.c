/* cache_store_format.c - the SSD cache store's on-disk encodings (the
 * superblock, line records, table copy headers, journal records) and the
 * making of a new store; see include/hybridfs/cache_store.h, which has the
 * format. The open store is in cache_store.c; what the parts share, in
 * cache_store_internal.h.
 *
 * Encodings are byte by byte (little-endian whatever the host). libblkid
 * resolves UUID= and LABEL= and names what a file or device holds when it
 * is not a store, as borg/bopt.c does; both use the shared helpers of
 * ondisk.h for that, for the encodings, checksums and whole-buffer I/O.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/cache_store.h"
#include "hybridfs/ondisk.h"

#include "cache_store_internal.h"

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
#define FLAG_CLEAN	 1u

/* table copy header */
#define TAB_MAGIC      "HYCTAB\0\0"
#define TAB_GENERATION 8
#define TAB_SEQ	       16
#define TAB_CAPACITY   24
#define TAB_CHECKSUM   32
#define TAB_STAMPS     40 /* format 3: the count of file stamps */
#define TAB_CHECKSUM3  48 /* format 3: FNV-1a 64 of bytes 0..47 */

/* file stamp record (format 3) */
#define SR_FILE_ID  0
#define SR_CTIME    8
#define SR_MTIME    16
#define SR_SIZE	    24
#define SR_CHECKSUM 44

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
#define LR_SUMMED   2u /* format 3 */
#define LR_SUM	    22 /* format 3: 4 bytes */

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

#define MIN_JOURNAL 1024u /* records */
#define MAX_JOURNAL 65536u
/* the largest byte count that still fits an off_t */
#define MAX_BYTES ((uint64_t)INT64_MAX)

static const unsigned char jmagic[4] = {'H', 'Y', 'C', 'J'};

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
	    h->table_size != 2 * table_copy_blocks(h->capacity, h->version) * HY_CACHE_STORE_BLOCK)
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
void hy_cache_store_format_encode_line(const struct hy_cache_line *l, uint64_t line,
				       uint64_t generation, uint64_t seq, uint32_t version,
				       unsigned char *p)
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
	} else if (version >= 3) {
		p[LR_TAIL] = (unsigned char)(l->tail & 0xff);
		p[LR_TAIL + 1] = (unsigned char)(l->tail >> 8);
		if (l->summed) {
			p[LR_FLAGS] |= LR_SUMMED;
			hy_ondisk_put_le32(p + LR_SUM, l->sum);
		}
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
int hy_cache_store_format_decode_line(const unsigned char *p, uint64_t line, uint64_t generation,
				      uint32_t version, struct hy_cache_line *l)
{
	static const unsigned char zero[HY_CACHE_LINE_RECORD];

	memset(l, 0, sizeof(*l));
	if (memcmp(p, zero, sizeof(zero)) == 0)
		return 0;
	if (hy_ondisk_get_le32(p + LR_CHECKSUM) != line_record_sum(p, line, generation))
		return -EUCLEAN;
	if ((p[LR_FLAGS] & ~(version >= 3 ? LR_SUMMED : 0u)) != LR_USED || p[19] != 0 ||
	    (p[LR_DIRTY] & ~p[LR_VALID]))
		return -EUCLEAN;
	if (version >= 3 &&
	    (p[26] | p[27] || (!(p[LR_FLAGS] & LR_SUMMED) && hy_ondisk_get_le32(p + LR_SUM) != 0)))
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
	if (version >= 3 && (p[LR_FLAGS] & LR_SUMMED)) {
		l->summed = true;
		l->sum = hy_ondisk_get_le32(p + LR_SUM);
	}
	return 0;
}

void hy_cache_store_format_encode_copy_header(uint64_t generation, uint64_t seq, uint64_t capacity,
					      uint32_t version, uint64_t nstamps,
					      unsigned char *buf)
{
	memset(buf, 0, HY_CACHE_STORE_BLOCK);
	memcpy(buf, TAB_MAGIC, 8);
	hy_ondisk_put_le64(buf + TAB_GENERATION, generation);
	hy_ondisk_put_le64(buf + TAB_SEQ, seq);
	hy_ondisk_put_le64(buf + TAB_CAPACITY, capacity);
	hy_ondisk_put_le64(buf + TAB_CHECKSUM, hy_ondisk_fnv1a64(buf, TAB_CHECKSUM));
	if (version >= 3) {
		hy_ondisk_put_le64(buf + TAB_STAMPS, nstamps);
		hy_ondisk_put_le64(buf + TAB_CHECKSUM3, hy_ondisk_fnv1a64(buf, TAB_CHECKSUM3));
	}
}

/* 0 with the copy's sequence and (format 3; else 0) its count of file
 * stamps, or -EUCLEAN */
int hy_cache_store_format_decode_copy_header(const unsigned char *buf, uint64_t generation,
					     uint64_t capacity, uint32_t version, uint64_t *seq,
					     uint64_t *nstamps)
{
	if (memcmp(buf, TAB_MAGIC, 8) != 0 ||
	    hy_ondisk_get_le64(buf + TAB_CHECKSUM) != hy_ondisk_fnv1a64(buf, TAB_CHECKSUM) ||
	    hy_ondisk_get_le64(buf + TAB_GENERATION) != generation ||
	    hy_ondisk_get_le64(buf + TAB_CAPACITY) != capacity)
		return -EUCLEAN;
	*nstamps = 0;
	if (version >= 3) {
		if (hy_ondisk_get_le64(buf + TAB_CHECKSUM3) !=
			    hy_ondisk_fnv1a64(buf, TAB_CHECKSUM3) ||
		    hy_ondisk_get_le64(buf + TAB_STAMPS) > capacity)
			return -EUCLEAN;
		*nstamps = hy_ondisk_get_le64(buf + TAB_STAMPS);
	}
	*seq = hy_ondisk_get_le64(buf + TAB_SEQ);
	return 0;
}

static uint32_t stamp_record_sum(const unsigned char *p, uint64_t index, uint64_t generation)
{
	unsigned char extra[16];

	hy_ondisk_put_le64(extra, index);
	hy_ondisk_put_le64(extra + 8, generation);
	return hy_ondisk_fnv1a32_more(hy_ondisk_fnv1a32(p, SR_CHECKSUM), extra, sizeof(extra));
}

void hy_cache_store_format_encode_stamp(const struct hy_cache_stamp *st, uint64_t index,
					uint64_t generation, unsigned char *p)
{
	memset(p, 0, HY_CACHE_STAMP_RECORD);
	hy_ondisk_put_le64(p + SR_FILE_ID, st->file_id);
	hy_ondisk_put_le64(p + SR_CTIME, (uint64_t)st->ctime_ns);
	hy_ondisk_put_le64(p + SR_MTIME, (uint64_t)st->mtime_ns);
	hy_ondisk_put_le64(p + SR_SIZE, st->size);
	hy_ondisk_put_le32(p + SR_CHECKSUM, stamp_record_sum(p, index, generation));
}

/* 0 or -EUCLEAN (a damaged record, or one of another slot or format) */
int hy_cache_store_format_decode_stamp(const unsigned char *p, uint64_t index, uint64_t generation,
				       struct hy_cache_stamp *st)
{
	memset(st, 0, sizeof(*st));
	if (hy_ondisk_get_le32(p + SR_CHECKSUM) != stamp_record_sum(p, index, generation))
		return -EUCLEAN;
	for (int i = SR_SIZE + 8; i < SR_CHECKSUM; i++)
		if (p[i])
			return -EUCLEAN;
	st->file_id = hy_ondisk_get_le64(p + SR_FILE_ID);
	st->ctime_ns = (int64_t)hy_ondisk_get_le64(p + SR_CTIME);
	st->mtime_ns = (int64_t)hy_ondisk_get_le64(p + SR_MTIME);
	st->size = hy_ondisk_get_le64(p + SR_SIZE);
	return st->file_id && st->ctime_ns ? 0 : -EUCLEAN;
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
	return HY_CACHE_STORE_BLOCK +
	       2 * table_copy_blocks(capacity, HY_CACHE_STORE_VERSION) * HY_CACHE_STORE_BLOCK +
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
	/* a line costs its data, two 32-byte records and room for two file
	 * stamps: start close, step down */
	cap = size / (HY_CACHE_LINE_SIZE + 2 * HY_CACHE_LINE_RECORD + 2 * HY_CACHE_STAMP_RECORD);
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
	h->table_size = 2 * table_copy_blocks(cap, h->version) * HY_CACHE_STORE_BLOCK;
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
		hy_cache_store_format_encode_copy_header(h->generation, 0, h->capacity, h->version,
							 0, buf);
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
	if (old.uuid[0]) {
		char owner[1024];

		hy_ondisk_name_mount(old.uuid, path, owner, sizeof(owner));
		hy_ondisk_say(why, why_size,
			      "cache: \"%s\" already holds a cache store (%" PRIu64
			      " lines, of %s); refusing to overwrite it without force",
			      path, old.capacity, owner);
	} else
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
