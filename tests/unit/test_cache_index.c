/* test_cache_index.c - the SSD cache's index: insert, lookup and remove;
 * ranges (probed block by block and scanned); sector masks on partial
 * writes; remove_file_range's callbacks; memory per entry with a million
 * entries; readers against a writer on the same files; a randomized run
 * against a simple model. Every test that changes the index checks its
 * consistency (hy_cache_index_check) afterwards. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hybridfs/cache_index.h"
#include "suites.h"

static struct hy_cache_index *make(uint32_t capacity)
{
	struct hy_cache_index *idx = NULL;

	CU_ASSERT_EQUAL_FATAL(hy_cache_index_new(capacity, &idx), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(idx);
	return idx;
}

static void expect_consistent(struct hy_cache_index *idx)
{
	char why[256] = "";
	int err = hy_cache_index_check(idx, why, sizeof(why));

	CU_ASSERT_EQUAL(err, 0);
	if (err)
		fprintf(stderr, "\n  %s\n", why);
}

static uint64_t entries_of(struct hy_cache_index *idx)
{
	struct hy_cache_index_stats st;

	hy_cache_index_get_stats(idx, &st);
	return st.entries;
}

static int same(const struct hy_cache_entry *a, const struct hy_cache_entry *b)
{
	return a->block == b->block && a->line == b->line && a->valid == b->valid &&
	       a->dirty == b->dirty;
}

/* xorshift64*, fixed seeds: every run sees the same sequence. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static void test_ci_basic(void)
{
	struct hy_cache_index *idx = NULL;
	struct hy_cache_entry e;
	struct hy_cache_index_stats st;

	CU_ASSERT_EQUAL(hy_cache_index_new(0, &idx), -EINVAL);
	CU_ASSERT_PTR_NULL(idx);
	CU_ASSERT_EQUAL(hy_cache_index_new(HY_CACHE_INDEX_MAX_LINES + 1, &idx), -EINVAL);
	hy_cache_index_free(NULL);
	idx = make(100);

	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 1, 0, &e), -ENOENT);
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 1, 0, 7, 0xff, 0x0f), 0);
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 1, 5, 8, 0x01, 0x00), 0);
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 2, 0, 9, 0xff, 0xff), 0);
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 1, 0, 10, 0xff, 0), -EEXIST);
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 1, 1, 100, 0xff, 0), -EINVAL);
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 1, 1, 11, 0x01, 0x03), -EINVAL);
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 3, 1, 11, 0x01, 0x03), -EINVAL);
	/* a line holds one entry; blocks from 2^32 on are never indexed */
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 3, 1, 7, 0xff, 0), -EBUSY);
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 1, 1ULL << 32, 12, 0xff, 0), -EFBIG);
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 1, 1ULL << 32, &e), -ENOENT);
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 1, UINT32_MAX, 12, 0xff, 0), 0);
	CU_ASSERT_EQUAL(hy_cache_index_remove(idx, 1, UINT32_MAX, NULL), 0);
	expect_consistent(idx);
	{
		uint64_t kf = 0, kb = 0;

		CU_ASSERT_EQUAL(hy_cache_index_line_key(idx, 9, &kf, &kb), 0);
		CU_ASSERT_EQUAL(kf, 2);
		CU_ASSERT_EQUAL(kb, 0);
		CU_ASSERT_EQUAL(hy_cache_index_line_key(idx, 8, &kf, &kb), 0);
		CU_ASSERT_EQUAL(kf, 1);
		CU_ASSERT_EQUAL(kb, 5);
		CU_ASSERT_EQUAL(hy_cache_index_line_key(idx, 12, &kf, &kb), -ENOENT);
		CU_ASSERT_EQUAL(hy_cache_index_line_key(idx, 100, &kf, &kb), -EINVAL);
	}

	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 1, 0, &e), 0);
	CU_ASSERT_EQUAL(e.block, 0);
	CU_ASSERT_EQUAL(e.line, 7);
	CU_ASSERT_EQUAL(e.valid, 0xff);
	CU_ASSERT_EQUAL(e.dirty, 0x0f);
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 1, 5, &e), 0);
	CU_ASSERT_EQUAL(e.line, 8);
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 2, 0, &e), 0);
	CU_ASSERT_EQUAL(e.line, 9);
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 1, 1, &e), -ENOENT);
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 3, 1, &e), -ENOENT);

	hy_cache_index_get_stats(idx, &st);
	CU_ASSERT_EQUAL(st.capacity, 100);
	CU_ASSERT_EQUAL(st.files, 2);
	CU_ASSERT_EQUAL(st.entries, 3);
	CU_ASSERT(st.bytes > 0);
	CU_ASSERT(st.bytes_per_entry > 0);

	memset(&e, 0, sizeof(e));
	CU_ASSERT_EQUAL(hy_cache_index_remove(idx, 1, 0, &e), 0);
	CU_ASSERT_EQUAL(e.line, 7);
	CU_ASSERT_EQUAL(e.dirty, 0x0f);
	CU_ASSERT_EQUAL(hy_cache_index_remove(idx, 1, 0, &e), -ENOENT);
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 1, 0, &e), -ENOENT);
	CU_ASSERT_EQUAL(hy_cache_index_remove(idx, 1, 5, NULL), 0);
	CU_ASSERT_EQUAL(hy_cache_index_remove(idx, 4, 5, NULL), -ENOENT);
	expect_consistent(idx);
	hy_cache_index_get_stats(idx, &st);
	CU_ASSERT_EQUAL(st.files, 1);
	CU_ASSERT_EQUAL(st.entries, 1);
	/* the line is free again: it may be used by another block */
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 1, 0, 8, 0xff, 0), 0);
	expect_consistent(idx);
	hy_cache_index_free(idx);
}

static void test_ci_ranges(void)
{
	struct hy_cache_index *idx = make(1000);
	struct hy_cache_entry out[300];
	int64_t n;
	uint64_t b;

	/* every third block of [0, 600) of file 1 */
	for (b = 0; b < 600; b += 3)
		CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 1, b, (uint32_t)(b / 3), 0xff, 0), 0);
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 2, 4, 999, 0xff, 0), 0);

	/* a short range: probed block by block */
	n = hy_cache_index_lookup_range(idx, 1, 2, 8, out, 300);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(out[0].block, 3);
	CU_ASSERT_EQUAL(out[1].block, 6);
	CU_ASSERT_EQUAL(out[2].block, 9);
	CU_ASSERT_EQUAL(out[2].line, 3);
	CU_ASSERT_EQUAL(hy_cache_index_lookup_range(idx, 1, 1, 2, out, 300), 0);
	CU_ASSERT_EQUAL(hy_cache_index_lookup_range(idx, 3, 0, 100, out, 300), 0);

	/* less room than entries: the count, and the first ones in order */
	n = hy_cache_index_lookup_range(idx, 1, 0, 30, out, 4);
	CU_ASSERT_EQUAL(n, 10);
	CU_ASSERT_EQUAL(out[3].block, 9);

	/* a range larger than the table: scanned, sorted all the same */
	n = hy_cache_index_lookup_range(idx, 1, 100, UINT64_MAX - 100, out, 300);
	CU_ASSERT_EQUAL(n, 166); /* 102, 105, ..., 597 */
	CU_ASSERT_EQUAL(out[0].block, 102);
	for (int i = 1; i < 166; i++)
		CU_ASSERT_EQUAL(out[i].block, out[i - 1].block + 3);
	n = hy_cache_index_lookup_range(idx, 1, 0, UINT64_MAX, out, 5);
	CU_ASSERT_EQUAL(n, 200);
	CU_ASSERT_EQUAL(out[0].block, 0);
	CU_ASSERT_EQUAL(out[4].block, 12);
	CU_ASSERT_EQUAL(hy_cache_index_lookup_range(idx, 1, 0, UINT64_MAX, NULL, 0), 200);
	/* scanned, nothing there, no room given */
	CU_ASSERT_EQUAL(hy_cache_index_lookup_range(idx, 1, 600, UINT64_MAX - 600, NULL, 0), 0);
	CU_ASSERT_EQUAL(hy_cache_index_lookup_range(idx, 2, 5, UINT64_MAX - 5, NULL, 0), 0);

	CU_ASSERT_EQUAL(hy_cache_index_lookup_range(idx, 1, 0, 0, out, 300), -EINVAL);
	CU_ASSERT_EQUAL(hy_cache_index_lookup_range(idx, 1, 2, UINT64_MAX, out, 300), -EINVAL);
	expect_consistent(idx);
	hy_cache_index_free(idx);
}

static void test_ci_masks(void)
{
	struct hy_cache_index *idx = make(16);
	struct hy_cache_entry e;
	uint8_t cov, tch;

	/* the sector helper */
	CU_ASSERT_EQUAL(hy_cache_sectors(512, 1024, &cov, &tch), 0);
	CU_ASSERT_EQUAL(cov, 0x06);
	CU_ASSERT_EQUAL(tch, 0x06);
	CU_ASSERT_EQUAL(hy_cache_sectors(10, 100, &cov, &tch), 0);
	CU_ASSERT_EQUAL(cov, 0x00);
	CU_ASSERT_EQUAL(tch, 0x01);
	CU_ASSERT_EQUAL(hy_cache_sectors(0, 4096, &cov, &tch), 0);
	CU_ASSERT_EQUAL(cov, 0xff);
	CU_ASSERT_EQUAL(tch, 0xff);
	CU_ASSERT_EQUAL(hy_cache_sectors(500, 1100, &cov, &tch), 0); /* 500..1599: 1, 2 whole */
	CU_ASSERT_EQUAL(cov, 0x06);
	CU_ASSERT_EQUAL(tch, 0x0f);
	CU_ASSERT_EQUAL(hy_cache_sectors(4095, 1, &cov, &tch), 0);
	CU_ASSERT_EQUAL(cov, 0x00);
	CU_ASSERT_EQUAL(tch, 0x80);
	CU_ASSERT_EQUAL(hy_cache_sectors(3584, 512, &cov, &tch), 0);
	CU_ASSERT_EQUAL(cov, 0x80);
	CU_ASSERT_EQUAL(tch, 0x80);
	CU_ASSERT_EQUAL(hy_cache_sectors(100, 0, &cov, &tch), 0);
	CU_ASSERT_EQUAL(cov | tch, 0);
	CU_ASSERT_EQUAL(hy_cache_sectors(4096, 0, &cov, &tch), 0);
	CU_ASSERT_EQUAL(hy_cache_sectors(4000, 97, &cov, &tch), -EINVAL);
	CU_ASSERT_EQUAL(cov | tch, 0);
	CU_ASSERT_EQUAL(hy_cache_sectors(UINT32_MAX, 2, &cov, &tch), -EINVAL);

	/* a 1 KiB write at 512 into an empty line: sectors 1-2 valid and dirty */
	CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 1, 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(hy_cache_sectors(512, 1024, &cov, &tch), 0);
	CU_ASSERT_EQUAL(hy_cache_index_update_masks(idx, 1, 0, cov, cov, 0, &e), 0);
	CU_ASSERT_EQUAL(e.valid, 0x06);
	CU_ASSERT_EQUAL(e.dirty, 0x06);
	/* a 100-byte write at 10 touches sector 0 but covers none: no change */
	CU_ASSERT_EQUAL(hy_cache_sectors(10, 100, &cov, &tch), 0);
	CU_ASSERT_EQUAL(hy_cache_index_update_masks(idx, 1, 0, cov, cov, 0, &e), 0);
	CU_ASSERT_EQUAL(e.valid, 0x06);
	CU_ASSERT_EQUAL(e.dirty, 0x06);
	/* once sector 0 was read in (valid, clean), the same write dirties it */
	CU_ASSERT_EQUAL(hy_cache_index_update_masks(idx, 1, 0, 0x01, 0, 0, &e), 0);
	CU_ASSERT_EQUAL(e.valid, 0x07);
	CU_ASSERT_EQUAL(e.dirty, 0x06);
	CU_ASSERT_EQUAL(hy_cache_index_update_masks(idx, 1, 0, 0, tch, 0, &e), 0);
	CU_ASSERT_EQUAL(e.dirty, 0x07);
	/* the cleaner wrote sectors 1-2 home */
	CU_ASSERT_EQUAL(hy_cache_index_update_masks(idx, 1, 0, 0, 0, 0x06, NULL), 0);
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 1, 0, &e), 0);
	CU_ASSERT_EQUAL(e.valid, 0x07);
	CU_ASSERT_EQUAL(e.dirty, 0x01);
	/* dirty outside valid is refused and changes nothing */
	CU_ASSERT_EQUAL(hy_cache_index_update_masks(idx, 1, 0, 0x10, 0x30, 0, &e), -EINVAL);
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 1, 0, &e), 0);
	CU_ASSERT_EQUAL(e.valid, 0x07);
	CU_ASSERT_EQUAL(e.dirty, 0x01);
	/* set and clear in one call: dirty = (dirty & ~clear) | set */
	CU_ASSERT_EQUAL(hy_cache_index_update_masks(idx, 1, 0, 0xf0, 0x80, 0xff, &e), 0);
	CU_ASSERT_EQUAL(e.valid, 0xf7);
	CU_ASSERT_EQUAL(e.dirty, 0x80);
	CU_ASSERT_EQUAL(hy_cache_index_update_masks(idx, 1, 1, 1, 1, 0, &e), -ENOENT);
	CU_ASSERT_EQUAL(hy_cache_index_update_masks(idx, 2, 0, 1, 1, 0, &e), -ENOENT);
	expect_consistent(idx);
	hy_cache_index_free(idx);
}

struct removed {
	uint64_t file_id;
	struct hy_cache_entry e[2000];
	size_t n;
	struct hy_cache_index *idx;
	int reentered; /* lookups made from inside the callback */
};

static void on_removed(uint64_t file_id, const struct hy_cache_entry *e, void *arg)
{
	struct removed *r = arg;
	struct hy_cache_entry x;

	CU_ASSERT_EQUAL(file_id, r->file_id);
	if (r->n < 2000)
		r->e[r->n] = *e;
	r->n++;
	/* no lock is held: the index may be called from here */
	if (hy_cache_index_lookup(r->idx, file_id, e->block, &x) == -ENOENT)
		r->reentered++;
}

static void test_ci_remove_range(void)
{
	struct hy_cache_index *idx = make(4096);
	static struct removed r;
	struct hy_cache_entry e;
	uint64_t b;

	for (b = 0; b < 1000; b++)
		CU_ASSERT_EQUAL(
			hy_cache_index_insert(idx, 7, b * 2, (uint32_t)b, 0xff, b % 2 ? 0x0f : 0),
			0);
	for (b = 0; b < 10; b++)
		CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 8, b, (uint32_t)(2000 + b), 0xff, 0), 0);

	/* a punch of blocks [10, 20): probed; 10, 12, ..., 18 go */
	memset(&r, 0, sizeof(r));
	r.file_id = 7;
	r.idx = idx;
	CU_ASSERT_EQUAL(hy_cache_index_remove_file_range(idx, 7, 10, 10, on_removed, &r), 5);
	CU_ASSERT_EQUAL(r.n, 5);
	CU_ASSERT_EQUAL(r.reentered, 5);
	for (size_t i = 0; i < 5 && i < r.n; i++) {
		CU_ASSERT_EQUAL(r.e[i].block, 10 + 2 * i);
		CU_ASSERT_EQUAL(r.e[i].line, 5 + i);
		CU_ASSERT_EQUAL(r.e[i].dirty, (5 + i) % 2 ? 0x0f : 0);
	}
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 7, 8, &e), 0);
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 7, 10, &e), -ENOENT);
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 7, 20, &e), 0);
	CU_ASSERT_EQUAL(entries_of(idx), 1005);
	expect_consistent(idx);

	/* nothing there: no call */
	memset(&r, 0, sizeof(r));
	r.file_id = 7;
	r.idx = idx;
	CU_ASSERT_EQUAL(hy_cache_index_remove_file_range(idx, 7, 11, 1, on_removed, &r), 0);
	CU_ASSERT_EQUAL(hy_cache_index_remove_file_range(idx, 9, 0, 100, on_removed, &r), 0);
	CU_ASSERT_EQUAL(r.n, 0);
	CU_ASSERT_EQUAL(hy_cache_index_remove_file_range(idx, 7, 0, 0, on_removed, &r), -EINVAL);
	CU_ASSERT_EQUAL(hy_cache_index_remove_file_range(idx, 7, 1, UINT64_MAX, on_removed, &r),
			-EINVAL);

	/* truncate to block 1500: scanned (the range is larger than the table) */
	CU_ASSERT_EQUAL(
		hy_cache_index_remove_file_range(idx, 7, 1500, UINT64_MAX - 1500, on_removed, &r),
		250);
	CU_ASSERT_EQUAL(r.n, 250);
	for (size_t i = 0; i < 250 && i < r.n; i++) {
		CU_ASSERT_EQUAL(r.e[i].block, 1500 + 2 * i);
		CU_ASSERT_EQUAL(r.e[i].line, 750 + i);
	}
	CU_ASSERT_EQUAL(hy_cache_index_lookup(idx, 7, 1498, &e), 0);
	CU_ASSERT_EQUAL(hy_cache_index_lookup_range(idx, 7, 0, UINT64_MAX, NULL, 0), 745);
	expect_consistent(idx);

	/* without a callback; then truncate to 0, which frees the file */
	CU_ASSERT_EQUAL(hy_cache_index_remove_file_range(idx, 7, 0, 100, NULL, NULL), 45);
	memset(&r, 0, sizeof(r));
	r.file_id = 7;
	r.idx = idx;
	CU_ASSERT_EQUAL(hy_cache_index_remove_file_range(idx, 7, 0, UINT64_MAX, on_removed, &r),
			700);
	CU_ASSERT_EQUAL(r.n, 700);
	CU_ASSERT_EQUAL(r.e[0].block, 100);
	CU_ASSERT_EQUAL(r.e[699].block, 1498);
	CU_ASSERT_EQUAL(entries_of(idx), 10); /* file 8 untouched */
	expect_consistent(idx);
	{
		struct hy_cache_index_stats st;

		hy_cache_index_get_stats(idx, &st);
		CU_ASSERT_EQUAL(st.files, 1);
	}
	hy_cache_index_free(idx);
}

#define MEM_FILES    1000
#define MEM_PER_FILE 1000

static void test_ci_memory(void)
{
	struct hy_cache_index *idx = make(MEM_FILES * MEM_PER_FILE);
	struct hy_cache_index_stats st, empty;
	uint64_t seed = 0x1dec0de, f;
	uint32_t line = 0;
	int failed = 0;

	hy_cache_index_get_stats(idx, &empty);
	/* random blocks of a 1 GiB range of each file, as a cache fills */
	for (f = 0; f < MEM_FILES; f++) {
		uint32_t k = 0;

		while (k < MEM_PER_FILE) {
			int rc = hy_cache_index_insert(idx, 1000 + f, rnd(&seed) % 262144, line,
						       0xff, 0);

			if (rc == -EEXIST)
				continue;
			failed += rc != 0;
			k++;
			line++;
		}
	}
	CU_ASSERT_EQUAL(failed, 0);
	hy_cache_index_get_stats(idx, &st);
	CU_ASSERT_EQUAL(st.files, MEM_FILES);
	CU_ASSERT_EQUAL(st.entries, (uint64_t)MEM_FILES * MEM_PER_FILE);
	printf("\n    cache index: %" PRIu64 " entries in %" PRIu64
	       " files: %zu bytes, %.1f bytes per entry ",
	       st.entries, st.files, st.bytes, st.bytes_per_entry);
	/* the bound the structure promises (cache_index.h): per line of the
	 * store, per entry of a table that only grew, per file */
	CU_ASSERT_EQUAL(st.line_bytes,
			(size_t)MEM_FILES * MEM_PER_FILE * HY_CACHE_INDEX_LINE_BYTES);
	CU_ASSERT(st.bytes <= empty.bytes + st.entries * 5 + st.files * HY_CACHE_INDEX_FILE_BYTES);
	CU_ASSERT(st.bytes_per_entry <= 15.0);
	CU_ASSERT(st.bytes_per_entry >= HY_CACHE_INDEX_LINE_BYTES + 4);
	expect_consistent(idx);

	/* everything removed: back to the empty index's memory */
	for (f = 0; f < MEM_FILES; f++)
		CU_ASSERT_EQUAL(
			hy_cache_index_remove_file_range(idx, 1000 + f, 0, UINT64_MAX, NULL, NULL),
			MEM_PER_FILE);
	hy_cache_index_get_stats(idx, &st);
	CU_ASSERT_EQUAL(st.entries, 0);
	CU_ASSERT_EQUAL(st.files, 0);
	CU_ASSERT(st.bytes >= empty.bytes);
	/* the file table's buckets and the handle table stay as they grew */
	CU_ASSERT(st.bytes <= empty.bytes + HY_CACHE_INDEX_STRIPES * 64 * sizeof(void *) +
				      MEM_FILES * 3 / 2 * (sizeof(void *) + 4));
	expect_consistent(idx);
	hy_cache_index_free(idx);
}

/* Files of a few blocks, as a source tree has them (issue 19): a file of
 * up to 3 entries keeps its table in its own struct, so that it costs its
 * struct (48 bytes), its handle (12) and its share of the file table's
 * buckets, and no slot array (it took 16 bytes more, 32 in malloc's
 * chunks); a fourth entry moves the table out, and removals bring it back. */
#define SMALL_FILES 10000

static void test_ci_small_files(void)
{
	struct hy_cache_index *idx = make(SMALL_FILES * 4);
	struct hy_cache_index_stats st, empty;
	uint32_t line = 0;
	int failed = 0;
	double per_file;

	hy_cache_index_get_stats(idx, &empty);
	for (uint64_t f = 0; f < SMALL_FILES; f++)
		for (uint64_t b = 0; b < 1 + f % 3; b++)
			failed += hy_cache_index_insert(idx, 1 + f, b * 7, line++, 0xff, 0) != 0;
	CU_ASSERT_EQUAL(failed, 0);
	hy_cache_index_get_stats(idx, &st);
	CU_ASSERT_EQUAL(st.files, SMALL_FILES);
	per_file =
		(double)(st.bytes - empty.bytes - st.line_bytes + empty.line_bytes) / SMALL_FILES;
	printf("\n    %d files of 1 to 3 entries: %.1f bytes a file besides the lines' ",
	       SMALL_FILES, per_file);
	CU_ASSERT(per_file <= 80); /* 92 before: a table of 16 bytes more */
	expect_consistent(idx);
	/* out to a table of its own and back */
	for (uint64_t b = 3; b < 40; b++)
		CU_ASSERT_EQUAL(hy_cache_index_insert(idx, 3, b * 7, line++, 0xff, 0), 0);
	CU_ASSERT_EQUAL(hy_cache_index_lookup_range(idx, 3, 0, UINT64_MAX, NULL, 0), 40);
	expect_consistent(idx);
	CU_ASSERT_EQUAL(hy_cache_index_remove_file_range(idx, 3, 7, UINT64_MAX - 7, NULL, NULL),
			39);
	CU_ASSERT_EQUAL(hy_cache_index_lookup_range(idx, 3, 0, UINT64_MAX, NULL, 0), 1);
	expect_consistent(idx);
	hy_cache_index_get_stats(idx, &empty);
	CU_ASSERT_EQUAL(empty.bytes, st.bytes);
	hy_cache_index_free(idx);
}

/* ---- readers against a writer ---- */

#define CC_FILES  4
#define CC_BLOCKS 2048
#define CC_OPS	  200000

struct cc {
	struct hy_cache_index *idx;
	int stop;   /* atomic */
	int ready;  /* atomic: readers in their loop */
	int errors; /* atomic */
	uint64_t lookups;
};

static uint32_t cc_line(uint64_t file, uint64_t block)
{
	return (uint32_t)(file * CC_BLOCKS + block);
}

static void *cc_reader(void *arg)
{
	struct cc *c = arg;
	uint64_t seed = 0xfeed + (uint64_t)(uintptr_t)&seed % 997, n = 0;
	struct hy_cache_entry out[32];

	__atomic_add_fetch(&c->ready, 1, __ATOMIC_RELEASE);
	/* at least one round, however late the thread was scheduled */
	do {
		uint64_t f = rnd(&seed) % CC_FILES, b = rnd(&seed) % CC_BLOCKS;
		struct hy_cache_entry e;
		int64_t k;

		if (hy_cache_index_lookup(c->idx, f, b, &e) == 0 &&
		    (e.block != b || e.line != cc_line(f, b) || (e.dirty & ~e.valid)))
			__atomic_add_fetch(&c->errors, 1, __ATOMIC_RELAXED);
		k = hy_cache_index_lookup_range(c->idx, f, b, 32, out, 32);
		if (k < 0 || k > 32)
			__atomic_add_fetch(&c->errors, 1, __ATOMIC_RELAXED);
		for (int64_t i = 0; i < k && i < 32; i++)
			if (out[i].block < b || out[i].block >= b + 32 ||
			    (i > 0 && out[i].block <= out[i - 1].block) ||
			    out[i].line != cc_line(f, out[i].block))
				__atomic_add_fetch(&c->errors, 1, __ATOMIC_RELAXED);
		n += 2;
	} while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE));
	__atomic_add_fetch(&c->lookups, n, __ATOMIC_RELAXED);
	return NULL;
}

static void test_ci_concurrency(void)
{
	static uint8_t present[CC_FILES][CC_BLOCKS];
	struct cc c = {make(CC_FILES * CC_BLOCKS), 0, 0, 0, 0};
	pthread_t readers[4];
	uint64_t seed = 0xc0ffee, count = 0, i;
	int writer_errors = 0;
	int started = 0;

	memset(present, 0, sizeof(present));
	for (i = 0; i < 4; i++)
		if (pthread_create(&readers[i], NULL, cc_reader, &c) == 0)
			started++;
	CU_ASSERT_EQUAL(started, 4);
	/* the writes begin once every reader runs (a loaded machine may start
	 * them late; they would then read nothing while it writes) */
	while (__atomic_load_n(&c.ready, __ATOMIC_ACQUIRE) < started)
		sched_yield();
	for (i = 0; i < CC_OPS; i++) {
		uint64_t f = rnd(&seed) % CC_FILES, b = rnd(&seed) % CC_BLOCKS;
		unsigned op = (unsigned)(rnd(&seed) % 100);

		if (op < 50) {
			int rc = hy_cache_index_insert(c.idx, f, b, cc_line(f, b), 0x0f, 0x03);

			writer_errors += rc != (present[f][b] ? -EEXIST : 0);
			count += !present[f][b];
			present[f][b] = 1;
		} else if (op < 85) {
			int rc = hy_cache_index_remove(c.idx, f, b, NULL);

			writer_errors += rc != (present[f][b] ? 0 : -ENOENT);
			count -= present[f][b];
			present[f][b] = 0;
		} else if (op < 99) {
			int rc = hy_cache_index_update_masks(c.idx, f, b, 0xff, 0x10, 0x03, NULL);

			writer_errors += rc != (present[f][b] ? 0 : -ENOENT);
		} else {
			/* a punch (probed) or a truncate (scanned) */
			uint64_t n = op % 2 ? 64 : UINT64_MAX - b;
			uint64_t want = 0, end = op % 2 ? b + 64 : CC_BLOCKS;
			int64_t got = hy_cache_index_remove_file_range(c.idx, f, b, n, NULL, NULL);

			for (uint64_t k = b; k < end && k < CC_BLOCKS; k++) {
				want += present[f][k];
				present[f][k] = 0;
			}
			writer_errors += got != (int64_t)want;
			count -= want;
		}
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < (uint64_t)started; i++)
		pthread_join(readers[i], NULL);
	CU_ASSERT_EQUAL(writer_errors, 0);
	CU_ASSERT_EQUAL(c.errors, 0);
	CU_ASSERT(c.lookups >= 2 * (uint64_t)started);
	CU_ASSERT_EQUAL(entries_of(c.idx), count);
	expect_consistent(c.idx);
	for (uint64_t f = 0; f < CC_FILES; f++)
		for (uint64_t b = 0; b < CC_BLOCKS; b++) {
			struct hy_cache_entry e;
			int rc = hy_cache_index_lookup(c.idx, f, b, &e);

			if (rc != (present[f][b] ? 0 : -ENOENT))
				writer_errors++;
		}
	CU_ASSERT_EQUAL(writer_errors, 0);
	hy_cache_index_free(c.idx);
}

/* ---- a randomized run against a model ---- */

#define RM_FILES  6
#define RM_BLOCKS 600
#define RM_LINES  (RM_FILES * RM_BLOCKS)
#define RM_OPS	  100000

struct rm_slot {
	int present;
	struct hy_cache_entry e;
};

static struct rm_slot model[RM_FILES][RM_BLOCKS];
static uint32_t free_lines[RM_LINES];
static uint32_t nfree;

static void rm_collect(uint64_t file_id, const struct hy_cache_entry *e, void *arg)
{
	struct removed *r = arg;

	CU_ASSERT_EQUAL(file_id, r->file_id);
	if (r->n < 2000)
		r->e[r->n] = *e;
	r->n++;
}

static void test_ci_random(void)
{
	struct hy_cache_index *idx = make(RM_LINES);
	static struct removed r;
	struct hy_cache_entry out[64], e;
	uint64_t seed = 0x5eed0005, entries = 0;
	int mismatches = 0;
	uint32_t i;

	memset(model, 0, sizeof(model));
	for (i = 0; i < RM_LINES; i++)
		free_lines[i] = RM_LINES - 1 - i;
	nfree = RM_LINES;
	for (i = 0; i < RM_OPS; i++) {
		uint64_t f = rnd(&seed) % RM_FILES, b = rnd(&seed) % RM_BLOCKS;
		struct rm_slot *m = &model[f][b];
		unsigned op = (unsigned)(rnd(&seed) % 100);

		if (op < 35) { /* insert */
			uint8_t v = (uint8_t)rnd(&seed), d = (uint8_t)(rnd(&seed) & v);
			uint32_t line = nfree ? free_lines[nfree - 1] : 0;
			int rc = hy_cache_index_insert(idx, f, b, line, v, d);

			if (m->present) {
				mismatches += rc != -EEXIST;
			} else {
				mismatches += rc != 0;
				nfree--;
				m->present = 1;
				m->e = (struct hy_cache_entry){b, line, v, d};
				entries++;
			}
		} else if (op < 55) { /* lookup */
			int rc = hy_cache_index_lookup(idx, f, b, &e);

			if (m->present)
				mismatches += rc != 0 || !same(&e, &m->e);
			else
				mismatches += rc != -ENOENT;
		} else if (op < 65) { /* lookup_range, short or long */
			uint64_t n = op % 2 ? rnd(&seed) % 40 + 1 : UINT64_MAX - b;
			uint64_t want = 0;
			int64_t got = hy_cache_index_lookup_range(idx, f, b, n, out, 64);

			for (uint64_t k = b; k < RM_BLOCKS && k - b < n; k++) {
				if (!model[f][k].present)
					continue;
				if (want < 64)
					mismatches += !same(&out[want], &model[f][k].e);
				want++;
			}
			mismatches += got != (int64_t)want;
		} else if (op < 80) { /* update masks */
			uint8_t sv = (uint8_t)rnd(&seed), sd = (uint8_t)rnd(&seed);
			uint8_t cd = (uint8_t)rnd(&seed);
			int rc = hy_cache_index_update_masks(idx, f, b, sv, sd, cd, &e);

			if (!m->present) {
				mismatches += rc != -ENOENT;
			} else {
				uint8_t v = m->e.valid | sv;
				uint8_t d = (uint8_t)((m->e.dirty & ~cd) | sd);

				if (d & ~v) {
					mismatches += rc != -EINVAL;
				} else {
					m->e.valid = v;
					m->e.dirty = d;
					mismatches += rc != 0 || !same(&e, &m->e);
				}
			}
		} else if (op < 96) { /* remove */
			int rc = hy_cache_index_remove(idx, f, b, &e);

			if (m->present) {
				mismatches += rc != 0 || !same(&e, &m->e);
				free_lines[nfree++] = m->e.line;
				m->present = 0;
				entries--;
			} else {
				mismatches += rc != -ENOENT;
			}
		} else { /* remove_file_range, punch or truncate */
			uint64_t n = op % 2 ? rnd(&seed) % 50 + 1 : UINT64_MAX - b;
			uint64_t want = 0;
			int64_t got;

			memset(&r, 0, sizeof(r));
			r.file_id = f;
			got = hy_cache_index_remove_file_range(idx, f, b, n, rm_collect, &r);
			for (uint64_t k = b; k < RM_BLOCKS && k - b < n; k++) {
				struct rm_slot *mk = &model[f][k];

				if (!mk->present)
					continue;
				if (want < r.n)
					mismatches += !same(&r.e[want], &mk->e);
				free_lines[nfree++] = mk->e.line;
				mk->present = 0;
				want++;
				entries--;
			}
			mismatches += got != (int64_t)want || r.n != want;
		}
		if (i % 5000 == 0) {
			expect_consistent(idx);
			mismatches += entries_of(idx) != entries;
		}
	}
	CU_ASSERT_EQUAL(mismatches, 0);
	CU_ASSERT_EQUAL(entries_of(idx), entries);
	expect_consistent(idx);
	hy_cache_index_free(idx);
}

/* ---- HYTEST_BENCH=1: ns per lookup, full store -------------------------- */

static double ns_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e9 + (double)(b->tv_nsec - a->tv_nsec);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#define BENCH_ROUNDS  7
#define BENCH_LOOKUPS 1000000

/* The memory test's index (1,000 files x 1,000 random blocks, every line
 * used), then rounds of 1,000,000 lookups of present keys and of absent
 * ones in random order: the median of the rounds, in ns per lookup. Only
 * with HYTEST_BENCH=1 (a timing, never an assertion). */
static void test_ci_bench(void)
{
	const char *env = getenv("HYTEST_BENCH");
	struct hy_cache_index *idx;
	double hit[BENCH_ROUNDS], miss[BENCH_ROUNDS];
	uint64_t seed = 0x1dec0de, *keys, sink = 0;
	uint32_t line = 0;

	if (!env || strcmp(env, "1") != 0)
		return;
	idx = make(MEM_FILES * MEM_PER_FILE);
	keys = malloc((size_t)MEM_FILES * MEM_PER_FILE * sizeof(*keys));
	CU_ASSERT_PTR_NOT_NULL_FATAL(keys);
	for (uint64_t f = 0; f < MEM_FILES; f++) {
		uint32_t k = 0;

		while (k < MEM_PER_FILE) {
			uint64_t b = rnd(&seed) % 262144;

			if (hy_cache_index_insert(idx, 1000 + f, b, line, 0xff, 0) != 0)
				continue;
			keys[line] = f << 32 | b;
			k++;
			line++;
		}
	}
	for (int r = 0; r < BENCH_ROUNDS; r++) {
		struct timespec t0, t1, t2;
		struct hy_cache_entry e;
		uint64_t s = 0xbe9c + (uint64_t)r;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < BENCH_LOOKUPS; i++) {
			uint64_t k = keys[rnd(&s) % line];

			if (hy_cache_index_lookup(idx, 1000 + (k >> 32), k & 0xffffffffu, &e) == 0)
				sink += e.line;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		for (int i = 0; i < BENCH_LOOKUPS; i++) {
			uint64_t k = rnd(&s);

			/* blocks past the filled range: absent, in present files */
			if (hy_cache_index_lookup(idx, 1000 + k % MEM_FILES, 262144 + (k >> 40),
						  &e) == 0)
				sink++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t2);
		hit[r] = ns_between(&t0, &t1) / BENCH_LOOKUPS;
		miss[r] = ns_between(&t1, &t2) / BENCH_LOOKUPS;
	}
	qsort(hit, BENCH_ROUNDS, sizeof(double), cmp_double);
	qsort(miss, BENCH_ROUNDS, sizeof(double), cmp_double);
	printf("\n    cache index: lookup %.1f ns (hit), %.1f ns (miss), median of %d rounds of "
	       "%d over %u entries (sink %" PRIu64 ") ",
	       hit[BENCH_ROUNDS / 2], miss[BENCH_ROUNDS / 2], BENCH_ROUNDS, BENCH_LOOKUPS, line,
	       sink);
	free(keys);
	hy_cache_index_free(idx);
}

int hy_test_add_cache_index(void)
{
	CU_pSuite s = CU_add_suite("cache_index", NULL, NULL);

	if (!s || !CU_add_test(s, "insert, lookup, remove, refused arguments", test_ci_basic) ||
	    !CU_add_test(s, "ranges: probed, scanned, less room than entries", test_ci_ranges) ||
	    !CU_add_test(s, "sector masks on partial writes and clean-ups", test_ci_masks) ||
	    !CU_add_test(s, "remove_file_range calls back exactly the removed lines",
			 test_ci_remove_range) ||
	    !CU_add_test(s, "memory per entry with 1,000,000 entries in 1,000 files",
			 test_ci_memory) ||
	    !CU_add_test(s, "memory of small files: tables in the file's struct",
			 test_ci_small_files) ||
	    !CU_add_test(s, "4 readers against 1 writer on the same files", test_ci_concurrency) ||
	    !CU_add_test(s, "100,000 random operations against a model", test_ci_random) ||
	    !CU_add_test(s, "ns per lookup, full store (HYTEST_BENCH=1)", test_ci_bench))
		return -1;
	return 0;
}
