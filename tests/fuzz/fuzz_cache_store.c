/* fuzz_cache_store.c - libFuzzer target for the SSD cache store's on-disk
 * format (cache/cache_store.c): the superblock, the two line table copies
 * and the metadata journal, as the cache reads them at mount.
 *
 * An input is the start of a store file: superblock, line table, journal
 * (seeds in tests/fuzz/corpus/fuzz_cache_store/ are real stores made by
 * the code, cut after the journal). Each input is
 *
 *   1. decoded as a superblock (hy_cache_store_decode()); a good one must
 *      encode and decode to the same header;
 *   2. written to a file and opened (hy_cache_store_open()), loaded (table
 *      read, journal replayed, checkpoint), then used a little: a fill, a
 *      masks record, a checkpoint, a line read, the clean flag, close;
 *   3. written again and opened for salvage (hy_cache_store_open_truncated(),
 *      the data lines cut off), for a mount's uuid: loaded, claimed, every
 *      line read (a line past the end is -EIO), closed;
 *   4. written again and formatted over (hy_cache_store_create(), for a
 *      mount, then unclaimed, not forced): refused or made by what the
 *      look at the old contents finds.
 *
 * Checksums would stop a fuzzer at the first field it changes, so byte
 * 4095 of the superblock, which the format leaves zero and the decoder
 * does not read, tells this target to recompute some before the file is
 * written: bit 0 the superblock's, bit 1 the table copy headers', bit 2
 * the journal records', bit 3 the line records'; bit 4 extends the file
 * (sparse) to the size its superblock claims when that is at most 16 MiB,
 * so that the strict open gets past the size check.
 *
 * Every file lives in a private folder on tmpfs when there is one
 * (fuzz_common.h) and is removed after each input. Built and run by
 * tests/fuzz/run.sh.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "hybridfs/cache_store.h"
#include "hybridfs/log.h"
#include "hybridfs/ondisk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_UUID     "0f6b1a52-8a3e-4c7e-9d51-2b7c4e1d9a01"
#define CTL	      4095 /* the control byte, in the superblock's zero tail */
#define FIX_SUPER     0x01
#define FIX_COPIES    0x02
#define FIX_JOURNAL   0x04
#define FIX_LINES     0x08
#define EXTEND	      0x10
#define EXTEND_MAX    (16ull << 20)
#define SB_CAPACITY   64
#define SB_GENERATION 72
#define SB_TABLE_OFF  80
#define SB_JOURNAL    96
#define SB_DATA	      112
#define SB_CHECKSUM   128

static char path[300];

/* bytes @off .. @off + @len of an @n-byte buffer, overflow-safe */
static int inside(uint64_t off, uint64_t len, size_t n)
{
	return off <= n && len <= n - off;
}

static void fix_checksums(unsigned char *buf, size_t n)
{
	uint64_t cap, gen, table, jstart, jsize, copy_blocks;
	unsigned char ctl = buf[CTL];

	if (ctl & FIX_SUPER)
		hy_ondisk_put_le64(buf + SB_CHECKSUM, hy_ondisk_fnv1a64(buf, SB_CHECKSUM));
	cap = hy_ondisk_get_le64(buf + SB_CAPACITY);
	gen = hy_ondisk_get_le64(buf + SB_GENERATION);
	table = hy_ondisk_get_le64(buf + SB_TABLE_OFF);
	jstart = hy_ondisk_get_le64(buf + SB_JOURNAL);
	jsize = hy_ondisk_get_le64(buf + SB_JOURNAL + 8);
	if (cap > n)
		return; /* more line records than the input has bytes: nothing to fix */
	copy_blocks =
		1 + (cap * HY_CACHE_LINE_RECORD + HY_CACHE_STORE_BLOCK - 1) / HY_CACHE_STORE_BLOCK;
	for (int c = 0; c < 2; c++) {
		uint64_t off = table + (uint64_t)c * copy_blocks * HY_CACHE_STORE_BLOCK;

		if (table > n || !inside(off, 40, n))
			continue;
		if (ctl & FIX_COPIES)
			hy_ondisk_put_le64(buf + off + 32, hy_ondisk_fnv1a64(buf + off, 32));
		if (!(ctl & FIX_LINES))
			continue;
		for (uint64_t line = 0; line < cap; line++) {
			static const unsigned char zero[HY_CACHE_LINE_RECORD];
			uint64_t rec = off + HY_CACHE_STORE_BLOCK + line * HY_CACHE_LINE_RECORD;
			unsigned char extra[16];
			unsigned char *p;

			if (!inside(rec, HY_CACHE_LINE_RECORD, n))
				break;
			p = buf + rec;
			if (memcmp(p, zero, sizeof(zero)) == 0)
				continue;
			hy_ondisk_put_le64(extra, line);
			hy_ondisk_put_le64(extra + 8, gen);
			hy_ondisk_put_le32(p + 28, hy_ondisk_fnv1a32_more(hy_ondisk_fnv1a32(p, 28),
									  extra, sizeof(extra)));
		}
	}
	if (ctl & FIX_JOURNAL) {
		for (uint64_t off = jstart; off - jstart < jsize; off += HY_CACHE_JOURNAL_RECORD) {
			if (!inside(off, HY_CACHE_JOURNAL_RECORD, n))
				break;
			if (memcmp(buf + off, "HYCJ", 4) == 0)
				hy_ondisk_put_le32(buf + off + 60,
						   hy_ondisk_fnv1a32(buf + off, 60));
		}
	}
}

/* Writes the store file; extends it when asked. 0 or -1. */
static int write_store(const unsigned char *buf, size_t n)
{
	uint64_t end;

	if (fuzz_write_file(path, buf, n) < 0)
		return -1;
	if (n > CTL && (buf[CTL] & EXTEND)) {
		end = hy_ondisk_get_le64(buf + SB_DATA) + hy_ondisk_get_le64(buf + SB_DATA + 8);
		if (end > n && end <= EXTEND_MAX && truncate(path, (off_t)end) < 0)
			return -1;
	}
	return 0;
}

static void check_decode(const unsigned char *buf, size_t n)
{
	unsigned char block[HY_CACHE_STORE_BLOCK], again[HY_CACHE_STORE_BLOCK];
	struct hy_cache_store_header h, h2;
	char why[256];

	memset(block, 0, sizeof(block));
	memcpy(block, buf, n < sizeof(block) ? n : sizeof(block));
	why[0] = '\0';
	if (hy_cache_store_decode(block, &h, why, sizeof(why)) < 0) {
		if (!why[0])
			abort();
		return;
	}
	hy_cache_store_encode(&h, again);
	if (hy_cache_store_decode(again, &h2, why, sizeof(why)) < 0 ||
	    memcmp(&h, &h2, sizeof(h)) != 0)
		abort();
}

struct seen {
	uint64_t capacity, lines, last;
};

static int on_line(void *arg, uint64_t line, const struct hy_cache_line *l)
{
	struct seen *s = arg;

	/* in line order, inside the store, dirty only where valid, a tail
	 * inside the line */
	if (line >= s->capacity || (s->lines && line <= s->last) || (l->dirty & ~l->valid) ||
	    l->tail >= HY_CACHE_LINE_SIZE)
		abort();
	s->last = line;
	s->lines++;
	return 0;
}

/* The strict open, as a mount opens its store, then a little use. */
static void use_store(void)
{
	struct hy_cache_store *st;
	struct hy_cache_store_load_stats stats;
	struct hy_cache_journal_record r;
	struct seen seen = {0};
	unsigned char line[HY_CACHE_LINE_SIZE];
	char why[512];

	why[0] = '\0';
	if (hy_cache_store_open(path, NULL, &st, why, sizeof(why)) < 0) {
		if (!why[0])
			abort();
		return;
	}
	seen.capacity = st->header.capacity;
	if (hy_cache_store_load(st, on_line, &seen, &stats, why, sizeof(why)) == 0) {
		if (stats.lines != seen.lines || stats.lines > st->header.capacity)
			abort();
		memset(&r, 0, sizeof(r));
		r.type = HY_CJ_FILL;
		r.line = st->header.capacity - 1;
		r.file_id = 7;
		r.block = 9;
		r.valid = 0xff;
		r.dirty = 0x0f;
		if (hy_cache_store_journal_append(st, &r) == 0) {
			r.type = HY_CJ_MASKS;
			r.dirty = 0;
			hy_cache_store_journal_append(st, &r);
		}
		hy_cache_store_checkpoint(st, why, sizeof(why));
		hy_cache_store_read_line(st, r.line, 0xff, line);
		hy_cache_store_set_clean(st, true);
	}
	hy_cache_store_close(st);
}

/* The salvage open of a store cut in its data lines, for a mount. */
static void salvage_store(void)
{
	struct hy_cache_store *st;
	struct seen seen = {0};
	unsigned char line[HY_CACHE_LINE_SIZE];
	char why[512];

	why[0] = '\0';
	if (hy_cache_store_open_truncated(path, FUZZ_UUID, &st, why, sizeof(why)) < 0) {
		if (!why[0])
			abort();
		return;
	}
	seen.capacity = st->header.capacity;
	if (hy_cache_store_load(st, on_line, &seen, NULL, why, sizeof(why)) == 0) {
		int rc = hy_cache_store_claim(st, FUZZ_UUID, why, sizeof(why));

		if (rc < 0 && rc != -EINVAL)
			abort();
		/* the lines a small store has; a cut one reads -EIO, never crashes */
		for (uint64_t n = 0; n < st->header.capacity && n < 64; n++)
			hy_cache_store_read_line(st, n, 0xff, line);
	}
	hy_cache_store_close(st);
}

/* hy_cache_store_create() over the file for @uuid ("": unclaimed), not
 * forced: the look at what is there decides, refused with a message or
 * made. */
static void create_over(const char *uuid)
{
	char why[512];

	why[0] = '\0';
	if (hy_cache_store_create(path, uuid, 128 * 1024, HY_CACHE_LINE_SIZE, false, why,
				  sizeof(why)) < 0 &&
	    !why[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *buf;

	if (!path[0]) {
		hy_log_init(HY_LOG_STDERR, LOG_CRIT, "fuzz_cache_store");
		snprintf(path, sizeof(path), "%s/store", fuzz_tmpdir());
	}
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (size > CTL)
		fix_checksums(buf, size);
	check_decode(buf, size);
	if (write_store(buf, size) == 0)
		use_store();
	if (write_store(buf, size) == 0)
		salvage_store();
	if (write_store(buf, size) == 0)
		create_over(FUZZ_UUID);
	if (write_store(buf, size) == 0)
		create_over("");
	unlink(path);
	free(buf);
	return 0;
}
