/* test_cache_store.c - the SSD cache store's format: create and open,
 * every refusal with its message, line I/O by sector mask, journal append
 * and replay (a torn last record cut), a crash in the middle of a
 * checkpoint, and a new generation at every format. Only regular files in
 * a temporary directory are used: no block device is ever opened. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hybridfs/cache_store.h"
#include "suites.h"

#define UUID_A "0f6b1a52-8a3e-4c7e-9d51-2b7c4e1d9a01"
#define UUID_B "7d2e9c40-1b5f-4e8a-a3c6-5f0d8e2b7c12"
#define MIB    (1024 * 1024)

static char why[1024];

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static void put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t fnv(const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/* What load() reported, line by line. */
struct seen {
	int n;
	uint64_t line[64], file_id[64], block[64];
	uint8_t valid[64], dirty[64];
	uint16_t tail[64];
};

static int collect(void *arg, uint64_t line, const struct hy_cache_line *l)
{
	struct seen *s = arg;

	if (s->n >= 64)
		return -1;
	s->line[s->n] = line;
	s->file_id[s->n] = l->file_id;
	s->block[s->n] = l->block;
	s->valid[s->n] = l->valid;
	s->dirty[s->n] = l->dirty;
	s->tail[s->n] = l->tail;
	s->n++;
	return 0;
}

static int find(const struct seen *s, uint64_t line)
{
	for (int i = 0; i < s->n; i++)
		if (s->line[i] == line)
			return i;
	return -1;
}

static int fill(struct hy_cache_store *st, uint64_t line, uint64_t file_id, uint64_t block,
		uint8_t valid, uint8_t dirty)
{
	struct hy_cache_journal_record r = {.type = HY_CJ_FILL,
					    .line = line,
					    .file_id = file_id,
					    .block = block,
					    .valid = valid,
					    .dirty = dirty};

	return hy_cache_store_journal_append(st, &r);
}

/* Opens and loads @path into @seen; 0 or the failing step's errno. */
static int reload(const char *path, struct seen *seen, struct hy_cache_store_load_stats *stats)
{
	struct hy_cache_store *st = NULL;
	int rc;

	memset(seen, 0, sizeof(*seen));
	rc = hy_cache_store_open(path, UUID_A, &st, why, sizeof(why));
	if (rc == 0)
		rc = hy_cache_store_load(st, collect, seen, stats, why, sizeof(why));
	hy_cache_store_close(st);
	return rc;
}

/* The tail (format 2): through a journal record and its replay, through a
 * checkpoint's table (bytes 20-21 of the line record), refused past a
 * line; a format 1 store (rewritten so) loads with tail 0 and keeps its
 * layout (the sequence at byte 20) when load() checkpoints it. */
static void test_tail(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "cache.store");
	struct hy_cache_journal_record r = {.type = HY_CJ_FILL,
					    .line = 3,
					    .file_id = 7,
					    .block = 2,
					    .valid = 0x03,
					    .dirty = 0x03,
					    .tail = 1000};
	struct hy_cache_store_header h;
	struct hy_cache_store *st = NULL;
	unsigned char rec[HY_CACHE_JOURNAL_RECORD], sb[4096], lr[32];
	int active;
	struct hy_cache_journal_record back;
	struct seen seen;
	int i;

	/* the record's bytes */
	hy_cache_journal_encode(&r, rec);
	CU_ASSERT_EQUAL(le(rec + 48, 2), 1000);
	CU_ASSERT_EQUAL(hy_cache_journal_decode(rec, &back), 0);
	CU_ASSERT_EQUAL(back.tail, 1000);

	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, UUID_A, 8 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_load(st, NULL, NULL, NULL, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_cache_store_journal_append(st, &r), 0);
	r.tail = 4096; /* past the line */
	r.line = 4;
	CU_ASSERT_EQUAL(hy_cache_store_journal_append(st, &r), -EINVAL);
	hy_cache_store_close(st);
	st = NULL;
	/* replayed from the journal (and checkpointed by load) */
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, NULL), 0);
	i = find(&seen, 3);
	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(seen.tail[i], 1000);
	/* from the table copy now: its line record holds it at byte 20 */
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, NULL), 0);
	i = find(&seen, 3);
	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(seen.tail[i], 1000);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	{
		uint64_t copy = st->active_copy ? st->copy_blocks : 0;

		active = st->active_copy;

		CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, lr, sizeof(lr),
						    (off_t)(st->header.table_offset +
							    (copy + 1) * 4096 + 3 * 32)),
				      0);
	}
	hy_cache_store_close(st);
	st = NULL;
	CU_ASSERT_EQUAL(le(lr + 0, 8), 7);
	CU_ASSERT_EQUAL(le(lr + 20, 2), 1000);

	/* format 1: the same store, its superblock saying 1, with format 1's
	 * layout (no file stamps: a smaller table, then the journal and the
	 * data); copy A, which sits where it did, in use. Its table's record
	 * has 1000 in what format 1 reads as the sequence's low bytes
	 * (informational): the line loads, tail 0 */
	if (active)
		CU_ASSERT_EQUAL_FATAL(reload(path, &seen, NULL), 0); /* copy A now */
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, sb, sizeof(sb), 0), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_decode(sb, &h, why, sizeof(why)), 0);
	h.version = 1;
	h.table_size = 2 * (1 + (h.capacity * 32 + 4095) / 4096) * 4096;
	h.journal_offset = h.table_offset + h.table_size;
	h.data_offset = h.journal_offset + h.journal_size;
	hy_cache_store_encode(&h, sb);
	CU_ASSERT_EQUAL_FATAL(hy_test_pwrite(path, sb, sizeof(sb), 0), 0);
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, NULL), 0);
	i = find(&seen, 3);
	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(seen.file_id[i], 7);
	CU_ASSERT_EQUAL(seen.tail[i], 0);
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, sb, sizeof(sb), 0), 0);
	CU_ASSERT_EQUAL(le(sb + 8, 4), 1);
	hy_test_rmtree(tmp);
	free(tmp);
	free(path);
}

static void test_create_open(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "cache.store");
	unsigned char sb[4096];
	struct hy_cache_store *st = NULL;
	struct hy_cache_store_load_stats stats;
	struct seen seen;
	struct stat sbuf;

	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, UUID_A, 8 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, sb, sizeof(sb), 0), 0);
	/* the byte layout of the header's table */
	CU_ASSERT_EQUAL(memcmp(sb, "HYCACHE\0", 8), 0);
	CU_ASSERT_EQUAL(le(sb + 8, 4), HY_CACHE_STORE_VERSION);
	CU_ASSERT_EQUAL(le(sb + 12, 4), HY_CACHE_STORE_HEADER_SIZE);
	CU_ASSERT_STRING_EQUAL((char *)sb + 16, UUID_A);
	CU_ASSERT_EQUAL(le(sb + 56, 4), 4096);
	CU_ASSERT_EQUAL(le(sb + 60, 4), 1); /* clean */
	CU_ASSERT_EQUAL(le(sb + 80, 8), 4096);
	CU_ASSERT_EQUAL(le(sb + 96, 8), le(sb + 80, 8) + le(sb + 88, 8));
	CU_ASSERT_EQUAL(le(sb + 112, 8), le(sb + 96, 8) + le(sb + 104, 8));
	CU_ASSERT_EQUAL(le(sb + 120, 8), le(sb + 64, 8) * 4096);
	CU_ASSERT_EQUAL(le(sb + 128, 8), fnv(sb, 128));
	CU_ASSERT_EQUAL_FATAL(stat(path, &sbuf), 0);
	CU_ASSERT((uint64_t)sbuf.st_size <= 8 * MIB);
	CU_ASSERT_EQUAL((uint64_t)sbuf.st_size, le(sb + 112, 8) + le(sb + 120, 8));

	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT(st->header.capacity > 1000 && st->header.capacity < 2048);
	CU_ASSERT(st->header.clean_shutdown);
	CU_ASSERT_NOT_EQUAL(st->header.generation, 0);
	CU_ASSERT_EQUAL(hy_cache_store_set_clean(st, false), 0);
	memset(&seen, 0, sizeof(seen));
	CU_ASSERT_EQUAL(hy_cache_store_load(st, collect, &seen, &stats, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(seen.n, 0);
	CU_ASSERT_EQUAL(stats.damaged_records, 0);
	CU_ASSERT_FALSE(stats.journal_cut);
	hy_cache_store_close(st);
	st = NULL;
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, NULL, &st, why, sizeof(why)), 0);
	CU_ASSERT_FALSE(st->header.clean_shutdown);
	hy_cache_store_close(st);
	/* made again by the same mount: fine */
	CU_ASSERT_EQUAL(hy_cache_store_create(path, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)),
			0);
	CU_ASSERT_EQUAL(hy_cache_store_create(path, UUID_A, 4 * MIB, 512, false, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_EQUAL(hy_cache_store_create(path, UUID_A, 8192, 4096, false, why, sizeof(why)),
			-EINVAL);
	hy_cache_store_close(NULL);
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void expect_open(const char *path, const char *uuid, int err, const char *text)
{
	struct hy_cache_store *st = NULL;

	why[0] = '\0';
	CU_ASSERT_EQUAL(hy_cache_store_open(path, uuid, &st, why, sizeof(why)), err);
	CU_ASSERT_PTR_NULL(st);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, text));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, path));
	if (!strstr(why, text))
		fprintf(stderr, "\n  message: %s ", why);
	hy_cache_store_close(st);
}

static void test_open_refusals(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "cache.store"),
	     *junk = hy_test_path_in(tmp, "random.bin");
	unsigned char sb[4096], bad[4096], rnd[65536];
	uint64_t end;

	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, sb, sizeof(sb), 0), 0);

	/* random bytes */
	srand(7);
	for (size_t i = 0; i < sizeof(rnd); i++)
		rnd[i] = (unsigned char)rand();
	{
		FILE *f = fopen(junk, "wb");

		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		CU_ASSERT_EQUAL(fwrite(rnd, 1, sizeof(rnd), f), sizeof(rnd));
		fclose(f);
	}
	expect_open(junk, UUID_A, -EUCLEAN, "not a hybridfs cache store");

	/* damaged checksum: one byte of the uuid */
	memcpy(bad, sb, sizeof(bad));
	bad[20] ^= 1;
	CU_ASSERT_EQUAL(hy_test_pwrite(path, bad, sizeof(bad), 0), 0);
	expect_open(path, UUID_A, -EUCLEAN, "superblock damaged (checksum");

	/* damaged fields under a good checksum */
	memcpy(bad, sb, sizeof(bad));
	put_le(bad + 88, le(bad + 88, 8) + 4096, 8);
	put_le(bad + 128, fnv(bad, 128), 8);
	CU_ASSERT_EQUAL(hy_test_pwrite(path, bad, sizeof(bad), 0), 0);
	expect_open(path, UUID_A, -EUCLEAN, "regions do not add up");

	/* newer version */
	memcpy(bad, sb, sizeof(bad));
	put_le(bad + 8, HY_CACHE_STORE_VERSION + 1, 4);
	put_le(bad + 128, fnv(bad, 128), 8);
	CU_ASSERT_EQUAL(hy_test_pwrite(path, bad, sizeof(bad), 0), 0);
	expect_open(path, UUID_A, -EPROTO, "is newer than this hybridfs reads");

	/* foreign uuid */
	CU_ASSERT_EQUAL(hy_test_pwrite(path, sb, sizeof(sb), 0), 0);
	expect_open(path, UUID_B, -EEXIST, "is the cache store of mount " UUID_A);

	/* truncated */
	end = le(sb + 112, 8) + le(sb + 120, 8);
	CU_ASSERT_EQUAL(truncate(path, (off_t)(end - 4096)), 0);
	expect_open(path, UUID_A, -EUCLEAN, "truncated");

	/* create refuses another mount's store and a damaged one */
	CU_ASSERT_EQUAL(truncate(path, (off_t)end), 0);
	CU_ASSERT_EQUAL(hy_cache_store_create(path, UUID_B, 4 * MIB, 4096, false, why, sizeof(why)),
			-EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "is the cache store of mount " UUID_A));
	memcpy(bad, sb, sizeof(bad));
	bad[20] ^= 1;
	CU_ASSERT_EQUAL(hy_test_pwrite(path, bad, sizeof(bad), 0), 0);
	CU_ASSERT_EQUAL(hy_cache_store_create(path, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)),
			-EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "cannot be read"));
	/* ... unless forced */
	CU_ASSERT_EQUAL(hy_cache_store_create(path, UUID_B, 4 * MIB, 4096, true, why, sizeof(why)),
			0);
	expect_open(path, UUID_A, -EEXIST, "is the cache store of mount " UUID_B);

	hy_test_rmtree(tmp);
	free(junk);
	free(path);
	free(tmp);
}

/* An unclaimed store (`hybridctl format-cache`): any mount opens it, the
 * first claims it, and from then on it is that mount's only. */
static void test_unclaimed(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "cache.store");
	struct hy_cache_store *st = NULL;
	struct hy_cache_store_header h;
	unsigned char sb[4096];
	uint64_t generation;

	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, "", 4 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, sb, sizeof(sb), 0), 0);
	for (int i = 16; i < 56; i++)
		CU_ASSERT_EQUAL(sb[i], 0);
	CU_ASSERT_EQUAL(hy_cache_store_decode(sb, &h, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(h.uuid, "");
	/* NULL is unclaimed too; and an unclaimed format refuses any store */
	why[0] = '\0';
	CU_ASSERT_EQUAL(hy_cache_store_create(path, NULL, 4 * MIB, 4096, false, why, sizeof(why)),
			-EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "already holds a cache store"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "unclaimed"));
	CU_ASSERT_EQUAL(hy_cache_store_create(path, NULL, 4 * MIB, 4096, true, why, sizeof(why)),
			0);

	/* any mount opens it; open does not claim */
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_B, &st, why, sizeof(why)), 0);
	hy_cache_store_close(st);
	st = NULL;
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(st->header.uuid, "");
	generation = st->header.generation;
	CU_ASSERT_EQUAL(hy_cache_store_claim(st, "", why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(hy_cache_store_claim(st, UUID_A, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(st->header.uuid, UUID_A);
	/* again: nothing to do; another uuid: refused */
	CU_ASSERT_EQUAL(hy_cache_store_claim(st, UUID_A, why, sizeof(why)), 0);
	why[0] = '\0';
	CU_ASSERT_EQUAL(hy_cache_store_claim(st, UUID_B, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "is the cache store of mount " UUID_A));
	CU_ASSERT_STRING_EQUAL(st->header.uuid, UUID_A);
	hy_cache_store_close(st);
	st = NULL;

	/* on disk: the same store, now UUID_A's */
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, sb, sizeof(sb), 0), 0);
	CU_ASSERT_STRING_EQUAL((char *)sb + 16, UUID_A);
	CU_ASSERT_EQUAL(le(sb + 128, 8), fnv(sb, 128));
	CU_ASSERT_EQUAL(le(sb + 72, 8), generation);
	expect_open(path, UUID_B, -EEXIST, "is the cache store of mount " UUID_A);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_cache_store_load(st, NULL, NULL, NULL, why, sizeof(why)), 0);
	hy_cache_store_close(st);
	st = NULL;
	/* a claimed store: an unclaimed format names its mount */
	CU_ASSERT_EQUAL(hy_cache_store_create(path, "", 4 * MIB, 4096, false, why, sizeof(why)),
			-EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "of mount " UUID_A));

	/* a mount's format may take an unclaimed store as its own */
	CU_ASSERT_EQUAL(hy_cache_store_create(path, "", 4 * MIB, 4096, true, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_cache_store_create(path, UUID_B, 4 * MIB, 4096, false, why, sizeof(why)),
			0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_B, &st, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(st->header.uuid, UUID_B);
	hy_cache_store_close(st);

	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_refuses_ext4(void)
{
	char *tmp = hy_test_tmpdir(), *image = hy_test_path_in(tmp, "ext4.img"),
	     *log = hy_test_path_in(tmp, "mkfs.log");
	const char *mkfs = hy_test_find_mkfs_ext4();
	static unsigned char before[8192], after[8192];
	struct hy_cache_store *st = NULL;

	if (!mkfs) {
		fprintf(stderr,
			"\n  (mkfs.ext4 is not installed: the ext4 refusal is not tested) ");
		goto out;
	}
	CU_ASSERT_EQUAL_FATAL(hy_test_make_ext4(mkfs, image, log), 0);
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(image, before, sizeof(before), 0), 0);
	CU_ASSERT_EQUAL(
		hy_cache_store_create(image, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)),
		-EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "holds ext4"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "without force"));
	CU_ASSERT_EQUAL(hy_cache_store_open(image, UUID_A, &st, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a hybridfs cache store"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "libblkid finds ext4"));
	CU_ASSERT_EQUAL(hy_test_pread(image, after, sizeof(after), 0), 0);
	CU_ASSERT_EQUAL(memcmp(before, after, sizeof(before)), 0);
	/* forced: it becomes a store */
	CU_ASSERT_EQUAL(hy_cache_store_create(image, UUID_A, 4 * MIB, 4096, true, why, sizeof(why)),
			0);
	CU_ASSERT_EQUAL(hy_cache_store_open(image, UUID_A, &st, why, sizeof(why)), 0);
	hy_cache_store_close(st);
out:
	hy_test_rmtree(tmp);
	free(image);
	free(log);
	free(tmp);
}

static void test_line_io(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "cache.store");
	static unsigned char a[4096], b[4096], got[4096];
	struct hy_cache_store *st = NULL;
	uint64_t last;

	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	last = st->header.capacity - 1;
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	CU_ASSERT_EQUAL(hy_cache_store_write_line(st, 3, 0xff, a), 0);
	/* sectors 1, 2 and 7 only: two runs */
	CU_ASSERT_EQUAL(hy_cache_store_write_line(st, 3, 0x86, b), 0);
	CU_ASSERT_EQUAL(hy_cache_store_write_line(st, last, 0x01, b), 0);
	CU_ASSERT_EQUAL(hy_cache_store_write_line(st, last + 1, 0x01, b), -EINVAL);
	CU_ASSERT_EQUAL(hy_cache_store_sync(st), 0);
	hy_cache_store_close(st);
	st = NULL;

	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	memset(got, 0, sizeof(got));
	CU_ASSERT_EQUAL(hy_cache_store_read_line(st, 3, 0xff, got), 0);
	for (int s = 0; s < 8; s++) {
		unsigned char want = (0x86 >> s) & 1 ? 'b' : 'a';

		CU_ASSERT_EQUAL(got[s * 512], want);
		CU_ASSERT_EQUAL(got[s * 512 + 511], want);
	}
	/* a read by mask leaves the other sectors of the buffer alone */
	memset(got, 'z', sizeof(got));
	CU_ASSERT_EQUAL(hy_cache_store_read_line(st, 3, 0x02, got), 0);
	CU_ASSERT_EQUAL(got[0], 'z');
	CU_ASSERT_EQUAL(got[512], 'b');
	CU_ASSERT_EQUAL(got[1024], 'z');
	CU_ASSERT_EQUAL(hy_cache_store_read_line(st, last, 0x01, got), 0);
	CU_ASSERT_EQUAL(got[0], 'b');
	CU_ASSERT_EQUAL(hy_cache_store_read_line(st, last + 1, 0x01, got), -EINVAL);
	/* the line's data is where the header says: past the journal */
	CU_ASSERT_EQUAL(hy_test_pread(path, got, 512, (off_t)(st->header.data_offset + 3 * 4096)),
			0);
	CU_ASSERT_EQUAL(got[0], 'a');
	hy_cache_store_close(st);
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_journal_replay(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "cache.store");
	struct hy_cache_store *st = NULL;
	struct hy_cache_store_load_stats stats;
	struct hy_cache_journal_record r;
	struct seen seen;
	int i;

	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	/* before load: refused */
	CU_ASSERT_EQUAL(fill(st, 1, 10, 100, 0xff, 0), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_load(st, NULL, NULL, NULL, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(fill(st, 1, 10, 100, 0xff, 0x0f), 0);
	CU_ASSERT_EQUAL(fill(st, 2, 10, 101, 0x03, 0x01), 0);
	CU_ASSERT_EQUAL(fill(st, 5, 11, 7, 0xff, 0), 0);
	memset(&r, 0, sizeof(r));
	r.type = HY_CJ_MASKS;
	r.line = 2;
	r.valid = 0xff;
	r.dirty = 0xf0;
	CU_ASSERT_EQUAL(hy_cache_store_journal_append(st, &r), 0);
	r.type = HY_CJ_FREE;
	r.line = 5;
	r.valid = r.dirty = 0;
	CU_ASSERT_EQUAL(hy_cache_store_journal_append(st, &r), 0);
	/* bad records: refused */
	CU_ASSERT_EQUAL(fill(st, st->header.capacity, 1, 1, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(fill(st, 7, 1, 1, 0x01, 0x02), -EINVAL);
	r.type = HY_CJ_MASKS;
	r.line = 9; /* not in use */
	CU_ASSERT_EQUAL(hy_cache_store_journal_append(st, &r), -EINVAL);
	hy_cache_store_close(st); /* no checkpoint: the journal holds it all */
	st = NULL;

	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_EQUAL(stats.replayed, 5);
	CU_ASSERT_FALSE(stats.journal_cut);
	CU_ASSERT_EQUAL_FATAL(seen.n, 2);
	i = find(&seen, 1);
	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(seen.file_id[i], 10);
	CU_ASSERT_EQUAL(seen.block[i], 100);
	CU_ASSERT_EQUAL(seen.valid[i], 0xff);
	CU_ASSERT_EQUAL(seen.dirty[i], 0x0f);
	i = find(&seen, 2);
	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(seen.block[i], 101);
	CU_ASSERT_EQUAL(seen.valid[i], 0xff);
	CU_ASSERT_EQUAL(seen.dirty[i], 0xf0);
	CU_ASSERT_EQUAL(find(&seen, 5), -1);

	/* that load checkpointed: the same lines from the table alone, and
	 * again (a second load has nothing new to do) */
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_EQUAL(stats.replayed, 0);
	CU_ASSERT_EQUAL(seen.n, 2);
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_EQUAL(stats.replayed, 0);
	CU_ASSERT_EQUAL(stats.damaged_records, 0);
	CU_ASSERT_EQUAL(seen.n, 2);

	/* the journal fills: -ENOSPC, then a checkpoint makes room */
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_load(st, NULL, NULL, NULL, why, sizeof(why)), 0);
	{
		uint64_t room = hy_cache_store_journal_room(st), n;

		for (n = 0; n < room; n++)
			if (fill(st, 3, 12, n, 0x01, 0x01) != 0)
				break;
		CU_ASSERT_EQUAL(n, room);
		CU_ASSERT_EQUAL(fill(st, 3, 12, 0, 0x01, 0x01), -ENOSPC);
		CU_ASSERT_EQUAL(hy_cache_store_checkpoint(st, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(hy_cache_store_journal_room(st), room);
		CU_ASSERT_EQUAL(fill(st, 4, 13, 1, 0x01, 0x00), 0);
		hy_cache_store_close(st);
		st = NULL;
		CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
		CU_ASSERT_EQUAL(stats.replayed, 1);
		CU_ASSERT_EQUAL(seen.n, 4);
		i = find(&seen, 3);
		CU_ASSERT_FATAL(i >= 0);
		CU_ASSERT_EQUAL(seen.block[i], room - 1);
	}
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_torn_record(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "cache.store");
	struct hy_cache_store *st = NULL;
	struct hy_cache_store_load_stats stats;
	unsigned char rec[HY_CACHE_JOURNAL_RECORD];
	uint64_t joff;
	struct seen seen;

	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_load(st, NULL, NULL, NULL, why, sizeof(why)), 0);
	joff = st->header.journal_offset;
	CU_ASSERT_EQUAL(fill(st, 1, 10, 100, 0xff, 0xff), 0);
	CU_ASSERT_EQUAL(fill(st, 2, 10, 101, 0xff, 0xff), 0);
	CU_ASSERT_EQUAL(fill(st, 3, 10, 102, 0xff, 0xff), 0);
	hy_cache_store_close(st);
	st = NULL;
	/* the last record torn: its second half never reached the disk */
	CU_ASSERT_EQUAL_FATAL(
		hy_test_pread(path, rec, sizeof(rec), (off_t)(joff + 2 * sizeof(rec))), 0);
	memset(rec + 32, 0, 32);
	CU_ASSERT_EQUAL(hy_test_pwrite(path, rec, sizeof(rec), (off_t)(joff + 2 * sizeof(rec))), 0);

	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_TRUE(stats.journal_cut);
	CU_ASSERT_EQUAL(stats.cut_at, 2);
	CU_ASSERT_EQUAL(stats.replayed, 2);
	CU_ASSERT_EQUAL(seen.n, 2);
	CU_ASSERT(find(&seen, 1) >= 0);
	CU_ASSERT(find(&seen, 2) >= 0);
	CU_ASSERT_EQUAL(find(&seen, 3), -1);

	/* records written after the cut are not confused with what lay past
	 * it: a good record beyond a torn one never comes back */
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_load(st, NULL, NULL, NULL, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(fill(st, 7, 20, 1, 0x01, 0x01), 0);
	CU_ASSERT_EQUAL(fill(st, 8, 20, 2, 0x01, 0x01), 0);
	hy_cache_store_close(st);
	st = NULL;
	/* tear the first of the two: the second, good, must not be applied */
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, rec, sizeof(rec), (off_t)joff), 0);
	rec[40] ^= 0xff;
	CU_ASSERT_EQUAL(hy_test_pwrite(path, rec, sizeof(rec), (off_t)joff), 0);
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_TRUE(stats.journal_cut);
	CU_ASSERT_EQUAL(stats.cut_at, 0);
	CU_ASSERT_EQUAL(seen.n, 2);
	CU_ASSERT_EQUAL(find(&seen, 8), -1);
	/* and after that cut, a new record lands at 0 and the stale good
	 * record at 1 (sequence from before) is never taken */
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_load(st, NULL, NULL, NULL, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(fill(st, 9, 21, 1, 0x01, 0x01), 0);
	hy_cache_store_close(st);
	st = NULL;
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_FALSE(stats.journal_cut);
	CU_ASSERT_EQUAL(stats.replayed, 1);
	CU_ASSERT_EQUAL(seen.n, 3);
	CU_ASSERT(find(&seen, 9) >= 0);
	CU_ASSERT_EQUAL(find(&seen, 8), -1);
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_checkpoint_crash(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "cache.store");
	struct hy_cache_store *st = NULL;
	struct hy_cache_store_load_stats stats;
	unsigned char rec[HY_CACHE_LINE_RECORD];
	struct seen seen;
	uint64_t table, copy_blocks;
	int i;

	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_load(st, NULL, NULL, NULL, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(fill(st, 1, 10, 100, 0xff, 0x0f), 0);
	CU_ASSERT_EQUAL(hy_cache_store_checkpoint(st, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(fill(st, 2, 10, 101, 0xff, 0xff), 0);
	CU_ASSERT_EQUAL(fill(st, 1, 10, 100, 0xff, 0x00), 0);
	/* the crash: the table copy written, its header not */
	CU_ASSERT_EQUAL(hy_cache_store_checkpoint_first_half(st), 0);
	hy_cache_store_close(st);
	st = NULL;
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_EQUAL(stats.replayed, 2);
	CU_ASSERT_EQUAL_FATAL(seen.n, 2);
	i = find(&seen, 1);
	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(seen.dirty[i], 0x00);
	i = find(&seen, 2);
	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(seen.dirty[i], 0xff);

	/* a damaged line record in the table in use is skipped and counted */
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	table = st->header.table_offset;
	copy_blocks = st->copy_blocks;
	hy_cache_store_close(st);
	st = NULL;
	for (int copy = 0; copy < 2; copy++) {
		off_t off = (off_t)(table + (uint64_t)copy * copy_blocks * 4096 + 4096 + 2 * 32);

		CU_ASSERT_EQUAL(hy_test_pread(path, rec, sizeof(rec), off), 0);
		if (rec[18] == 1) {
			rec[8] ^= 1;
			CU_ASSERT_EQUAL(hy_test_pwrite(path, rec, sizeof(rec), off), 0);
		}
	}
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_EQUAL(stats.damaged_records, 1);
	CU_ASSERT_EQUAL(seen.n, 1);
	CU_ASSERT_EQUAL(find(&seen, 2), -1);
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_generation(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "cache.store");
	struct hy_cache_store *st = NULL;
	struct hy_cache_store_load_stats stats;
	struct seen seen;
	uint64_t gen;

	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	gen = st->header.generation;
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_load(st, NULL, NULL, NULL, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(fill(st, 1, 10, 100, 0xff, 0xff), 0);
	CU_ASSERT_EQUAL(hy_cache_store_checkpoint(st, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(fill(st, 2, 10, 101, 0xff, 0xff), 0);
	hy_cache_store_close(st);
	st = NULL;
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_EQUAL(seen.n, 2);

	/* formatted again at the same size: nothing of before is believed */
	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT_NOT_EQUAL(st->header.generation, gen);
	hy_cache_store_close(st);
	st = NULL;
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_EQUAL(seen.n, 0);
	CU_ASSERT_EQUAL(stats.replayed, 0);
	CU_ASSERT_EQUAL(stats.damaged_records, 0);
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

struct appender {
	struct hy_cache_store *st;
	int first, count, failed;
};

static void *append_lines(void *arg)
{
	struct appender *a = arg;

	for (int i = 0; i < a->count; i++)
		if (fill(a->st, (uint64_t)(a->first + i), 30, (uint64_t)(a->first + i), 0xff,
			 0x01) != 0)
			a->failed++;
	return NULL;
}

/* Group commit: appends from several threads, each durable on return. */
static void test_concurrent_appends(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "cache.store");
	struct hy_cache_store *st = NULL;
	struct hy_cache_store_load_stats stats;
	struct appender a[4];
	pthread_t t[4];
	static struct seen seen;
	int lines = 0;

	CU_ASSERT_EQUAL_FATAL(
		hy_cache_store_create(path, UUID_A, 4 * MIB, 4096, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, UUID_A, &st, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_load(st, NULL, NULL, NULL, why, sizeof(why)), 0);
	for (int i = 0; i < 4; i++) {
		a[i].st = st;
		a[i].first = i * 16;
		a[i].count = 16;
		a[i].failed = 0;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, append_lines, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(a[i].failed, 0);
	}
	hy_cache_store_close(st);
	CU_ASSERT_EQUAL_FATAL(reload(path, &seen, &stats), 0);
	CU_ASSERT_EQUAL(stats.replayed, 64);
	CU_ASSERT_FALSE(stats.journal_cut);
	for (uint64_t l = 0; l < 64; l++)
		lines += find(&seen, l) >= 0;
	CU_ASSERT_EQUAL(lines, 64);
	hy_test_rmtree(tmp);
	free(path);
	free(tmp);
}

static void test_resolve(void)
{
	char buf[256];

	CU_ASSERT_EQUAL(hy_cache_store_resolve("/dev/sdz9", buf, sizeof(buf), why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "/dev/sdz9");
	CU_ASSERT_EQUAL(hy_cache_store_resolve("sdz9", buf, sizeof(buf), why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "neither an absolute path"));
	CU_ASSERT_EQUAL(hy_cache_store_resolve("", buf, sizeof(buf), why, sizeof(why)), -EINVAL);
}

/* Regression: a size whose line count is not a multiple of 64 planned a
 * journal that did not end on a block, and the store's own open refused
 * what it had just made ("regions do not add up"). Every size opens. */
static void test_any_size(void)
{
	char *dir = hy_test_tmpdir(), *path = hy_test_path_in(dir, "store");
	unsigned bad = 0;

	for (uint64_t size = MIB; size < 9 * MIB; size += 4096 * 13 + 512) {
		struct hy_cache_store *s = NULL;

		if (unlink(path) < 0 && errno != ENOENT)
			bad++;
		if (hy_cache_store_create(path, UUID_A, size, 4096, true, why, sizeof(why)) < 0 ||
		    hy_cache_store_open(path, UUID_A, &s, why, sizeof(why)) < 0) {
			if (!bad++)
				fprintf(stderr, "\nsize %llu: %s\n", (unsigned long long)size, why);
			continue;
		}
		if (s->header.data_offset % 4096 || s->header.journal_size % 4096)
			bad++;
		hy_cache_store_close(s);
	}
	CU_ASSERT_EQUAL(bad, 0);
	hy_test_rmtree(dir);
	free(dir);
	free(path);
}

int hy_test_add_cache_store(void)
{
	CU_pSuite s = CU_add_suite("cache_store", NULL, NULL);

	if (!s)
		return -1;
	if (!CU_add_test(s, "create and open, byte layout", test_create_open) ||
	    !CU_add_test(s, "open and create refusals", test_open_refusals) ||
	    !CU_add_test(s, "unclaimed store, claimed by a mount", test_unclaimed) ||
	    !CU_add_test(s, "create and open refuse an ext4 image", test_refuses_ext4) ||
	    !CU_add_test(s, "lines by sector mask", test_line_io) ||
	    !CU_add_test(s, "journal append, reopen, load", test_journal_replay) ||
	    !CU_add_test(s, "a line's tail, and format 1", test_tail) ||
	    !CU_add_test(s, "torn journal record cut", test_torn_record) ||
	    !CU_add_test(s, "crash in the middle of a checkpoint", test_checkpoint_crash) ||
	    !CU_add_test(s, "a new format forgets the old lines", test_generation) ||
	    !CU_add_test(s, "appends from several threads", test_concurrent_appends) ||
	    !CU_add_test(s, "cache= resolution", test_resolve) ||
	    !CU_add_test(s, "regression: every size makes a store that opens", test_any_size))
		return -1;
	return 0;
}
