/* test_reorganize.c - plans from a log, plan records, plan diffs, sizes. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hybridfs/devmodel.h"
#include "hybridfs/gain.h"
#include "hybridfs/map.h"
#include "hybridfs/reorganize.h"
#include "hybridfs/state.h"
#include "hybridfs/units.h"
#include "suites.h"

static struct hy_reorganize_range rg(uint64_t file, uint64_t block, uint32_t n, uint64_t bopt)
{
	return (struct hy_reorganize_range){file, block, n, bopt, 0.0};
}

static struct hy_map_extent ext(uint64_t file, uint64_t block, uint32_t n, uint64_t bopt)
{
	return (struct hy_map_extent){file, block, n, false, bopt, 0};
}

static bool same(const struct hy_reorganize_range *r, uint64_t file, uint64_t block, uint32_t n,
		 uint64_t bopt)
{
	return r->file_id == file && r->block == block && r->nblocks == n && r->bopt_block == bopt;
}

static void test_diff_empty_map(void)
{
	struct hy_reorganize_range plan[] = {rg(2, 0, 4, 6), rg(1, 10, 2, 0), rg(1, 3, 4, 2)};
	struct hy_reorganize_diff d;

	CU_ASSERT_EQUAL_FATAL(hy_reorganize_diff(NULL, 0, plan, 3, &d), 0);
	CU_ASSERT_EQUAL(d.nkeep, 0);
	CU_ASSERT_EQUAL(d.ndrop, 0);
	CU_ASSERT_EQUAL_FATAL(d.ncopy, 3);
	/* in BOPT order: the plan's order */
	CU_ASSERT_TRUE(same(&d.copy[0], 1, 10, 2, 0));
	CU_ASSERT_TRUE(same(&d.copy[1], 1, 3, 4, 2));
	CU_ASSERT_TRUE(same(&d.copy[2], 2, 0, 4, 6));
	CU_ASSERT_EQUAL(d.copy_blocks, 10);
	hy_reorganize_diff_free(&d);
}

static void test_diff_same_plan(void)
{
	struct hy_map_extent cur[] = {ext(1, 3, 4, 2), ext(1, 10, 2, 0), ext(2, 0, 4, 6)};
	struct hy_reorganize_range plan[] = {rg(1, 10, 2, 0), rg(1, 3, 4, 2), rg(2, 0, 4, 6)};
	struct hy_reorganize_diff d;

	CU_ASSERT_EQUAL_FATAL(hy_reorganize_diff(cur, 3, plan, 3, &d), 0);
	CU_ASSERT_EQUAL(d.nkeep, 3);
	CU_ASSERT_EQUAL(d.keep_blocks, 10);
	CU_ASSERT_EQUAL(d.ndrop, 0);
	CU_ASSERT_EQUAL(d.ncopy, 0);
	hy_reorganize_diff_free(&d);
}

/* Partly in place, partly elsewhere, partly new, partly leaving. */
static void test_diff_mixed(void)
{
	struct hy_map_extent cur[] = {
		ext(1, 0, 10, 100), /* 5..9 stay at 105..109; 0..4 left where they are */
		ext(2, 0, 4, 0),    /* moves to 50 */
		ext(3, 7, 1, 200),  /* not in the plan, in nobody's way: left */
	};
	struct hy_reorganize_range plan[] = {
		rg(1, 5, 10, 105), /* 5..9 kept, 10..14 come in at 110 */
		rg(2, 0, 4, 50),
		rg(4, 0, 1, 1),
	};
	struct hy_reorganize_diff d;

	CU_ASSERT_EQUAL_FATAL(hy_reorganize_diff(cur, 3, plan, 3, &d), 0);
	CU_ASSERT_EQUAL_FATAL(d.nkeep, 1);
	CU_ASSERT_TRUE(same(&d.keep[0], 1, 5, 5, 105));
	CU_ASSERT_EQUAL_FATAL(d.ndrop, 1);
	CU_ASSERT_TRUE(same(&d.drop[0], 2, 0, 4, 0));
	CU_ASSERT_EQUAL(d.drop_blocks, 4);
	CU_ASSERT_EQUAL_FATAL(d.nleft, 2);
	CU_ASSERT_TRUE(same(&d.left[0], 1, 0, 5, 100));
	CU_ASSERT_TRUE(same(&d.left[1], 3, 7, 1, 200));
	CU_ASSERT_EQUAL(d.left_blocks, 6);
	CU_ASSERT_EQUAL_FATAL(d.ncopy, 3);
	CU_ASSERT_TRUE(same(&d.copy[0], 4, 0, 1, 1));
	CU_ASSERT_TRUE(same(&d.copy[1], 2, 0, 4, 50));
	CU_ASSERT_TRUE(same(&d.copy[2], 1, 10, 5, 110));
	CU_ASSERT_EQUAL(d.copy_blocks, 10);
	CU_ASSERT_EQUAL(d.keep_blocks + d.copy_blocks, 15); /* the plan's blocks */
	hy_reorganize_diff_free(&d);
}

/* A planned range with several extents inside, some in place. */
static void test_diff_holes(void)
{
	struct hy_map_extent cur[] = {ext(1, 0, 2, 0), ext(1, 4, 2, 4), ext(1, 8, 2, 99)};
	struct hy_reorganize_range plan[] = {rg(1, 0, 10, 0)};
	struct hy_reorganize_diff d;

	CU_ASSERT_EQUAL_FATAL(hy_reorganize_diff(cur, 3, plan, 1, &d), 0);
	CU_ASSERT_EQUAL_FATAL(d.nkeep, 2);
	CU_ASSERT_TRUE(same(&d.keep[0], 1, 0, 2, 0));
	CU_ASSERT_TRUE(same(&d.keep[1], 1, 4, 2, 4));
	CU_ASSERT_EQUAL_FATAL(d.ndrop, 1);
	CU_ASSERT_TRUE(same(&d.drop[0], 1, 8, 2, 99));
	CU_ASSERT_EQUAL_FATAL(d.ncopy, 2);
	CU_ASSERT_TRUE(same(&d.copy[0], 1, 2, 2, 2));
	CU_ASSERT_TRUE(same(&d.copy[1], 1, 6, 4, 6));
	hy_reorganize_diff_free(&d);
}

/* What the plan leaves out stays, except where it is in the way: planned
 * elsewhere (it moves), or lying where a copy goes. Every relocated block
 * ends in exactly one of keep, drop and left. */
static void test_diff_left_until_wanted(void)
{
	struct hy_map_extent cur[] = {ext(1, 0, 4, 0), ext(2, 0, 4, 10), ext(3, 5, 6, 20)};
	struct hy_reorganize_range plan[] = {
		rg(9, 0, 2, 2),	  /* onto file 1's blocks 2..3 */
		rg(8, 0, 2, 22),  /* onto file 3's blocks 7..8 */
		rg(3, 10, 1, 30), /* file 3's block 10 moves */
	};
	struct hy_reorganize_diff d;

	CU_ASSERT_EQUAL_FATAL(hy_reorganize_diff(cur, 3, plan, 3, &d), 0);
	CU_ASSERT_EQUAL(d.nkeep, 0);
	CU_ASSERT_EQUAL_FATAL(d.ndrop, 3);
	CU_ASSERT_TRUE(same(&d.drop[0], 1, 2, 2, 2));
	CU_ASSERT_TRUE(same(&d.drop[1], 3, 7, 2, 22));
	CU_ASSERT_TRUE(same(&d.drop[2], 3, 10, 1, 25));
	CU_ASSERT_EQUAL_FATAL(d.nleft, 4);
	CU_ASSERT_TRUE(same(&d.left[0], 1, 0, 2, 0));
	CU_ASSERT_TRUE(same(&d.left[1], 2, 0, 4, 10));
	CU_ASSERT_TRUE(same(&d.left[2], 3, 5, 2, 20));
	CU_ASSERT_TRUE(same(&d.left[3], 3, 9, 1, 24));
	CU_ASSERT_EQUAL(d.drop_blocks + d.left_blocks + d.keep_blocks, 14);
	CU_ASSERT_EQUAL(d.ncopy, 3);
	CU_ASSERT_EQUAL(d.copy_blocks, 5);
	hy_reorganize_diff_free(&d);
}

/* ---- what a plan would save (gain.h) ---------------------------------- */

/* The BOPT's read region lies from disk byte 1 GB on, contiguous. */
static int far_bopt(void *ctx, uint64_t bopt_block, uint64_t *out)
{
	(void)ctx;
	*out = 1000000000ull + bopt_block * 4096;
	return 0;
}

/* Logs four one-block files read in order 1..4, five times over, file k's
 * block at physical block @phys[k - 1] (-1: unknown, NULL in the log). */
static void log_reads(sqlite3 *db, const int64_t phys[4])
{
	int row = 0;

	for (int rep = 0; rep < 5; rep++) {
		for (int k = 1; k <= 4; k++) {
			char sql[200], place[32];

			if (phys[k - 1] < 0)
				snprintf(place, sizeof(place), "NULL");
			else
				snprintf(place, sizeof(place), "%lld", (long long)phys[k - 1]);
			snprintf(sql, sizeof(sql),
				 "INSERT INTO access_log VALUES (%d, 1, %d, 0, 4096, 0, NULL, %s)",
				 1000 + row++, k, place);
			CU_ASSERT_EQUAL(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
		}
	}
}

/* Weighs @plan (4 ranges or none) against @current on the log of @phys. */
static enum hy_gain_decision weigh_case(const int64_t phys[4], const struct hy_map_extent *current,
					size_t ncurrent, const struct hy_reorganize_range *plan,
					size_t nplan, struct hy_gain_estimate *e)
{
	struct hy_gain_place place = {.bopt_address = far_bopt};
	struct hy_reorganize_diff d;
	struct hy_state *state = NULL;
	char *dir = hy_test_tmpdir(), why[512] = "";
	enum hy_gain_decision decision = HY_GAIN_GO;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/backing", false, &state, why, sizeof(why)), 0);
	log_reads(state->db, phys);
	hy_devmodel_defaults(HY_DEVMODEL_HDD, &place.disk);
	place.disk.capacity = 2000000000000ull;
	CU_ASSERT_EQUAL_FATAL(hy_reorganize_diff(current, ncurrent, plan, nplan, &d), 0);
	CU_ASSERT_EQUAL(hy_gain_estimate(state->db, 0, 1000, current, ncurrent, &d, &place, e, why,
					 sizeof(why)),
			0);
	decision = hy_gain_decide(e);
	CU_ASSERT_EQUAL(e->reads, 20);
	hy_reorganize_diff_free(&d);
	hy_state_close(state);
	hy_test_rmtree(dir);
	free(dir);
	return decision;
}

static void test_gain(void)
{
	/* the plan: the four files in read order at BOPT blocks 0..3 */
	struct hy_reorganize_range plan[] = {rg(1, 0, 1, 0), rg(2, 0, 1, 1), rg(3, 0, 1, 2),
					     rg(4, 0, 1, 3)};
	/* a layout of the BOPT that scatters them */
	struct hy_map_extent scattered[] = {ext(1, 0, 1, 0), ext(2, 0, 1, 900000), ext(3, 0, 1, 50),
					    ext(4, 0, 1, 400000)};
	static const int64_t in_order[4] = {1000, 1001, 1002, 1003};
	static const int64_t far_apart[4] = {400000000, 1000, 200000000, 30000};
	static const int64_t unknown[4] = {-1, -1, -1, 1000};
	struct hy_gain_estimate e;

	/* files that lie in the order they are read: the BOPT only adds the
	 * seek to it, so the plan is held back */
	CU_ASSERT_EQUAL(weigh_case(in_order, NULL, 0, plan, 4, &e), HY_GAIN_HOLD);
	CU_ASSERT(e.known);
	CU_ASSERT_EQUAL(e.priced, 20);
	CU_ASSERT_DOUBLE_EQUAL(e.current_ms, e.home_ms, 1e-9);
	CU_ASSERT(e.planned_ms >= e.home_ms);
	/* files far apart: the plan reads them in one sweep */
	CU_ASSERT_EQUAL(weigh_case(far_apart, NULL, 0, plan, 4, &e), HY_GAIN_GO);
	CU_ASSERT(e.planned_ms < e.home_ms / 4);
	CU_ASSERT(e.planned_seeks < e.home_seeks);
	/* a layout worse than home, and a plan that keeps it (plans nothing):
	 * everything goes home */
	CU_ASSERT_EQUAL(weigh_case(in_order, scattered, 4, NULL, 0, &e), HY_GAIN_ALL_HOME);
	CU_ASSERT_DOUBLE_EQUAL(e.planned_ms, e.current_ms, 1e-9);
	CU_ASSERT(e.home_ms < e.current_ms);
	/* ... and the same layout when home is worse still: the plan goes */
	CU_ASSERT_EQUAL(weigh_case(far_apart, scattered, 4, plan, 4, &e), HY_GAIN_GO);
	/* no physical places in most of the log: not known, the plan goes */
	CU_ASSERT_EQUAL(weigh_case(unknown, NULL, 0, plan, 4, &e), HY_GAIN_GO);
	CU_ASSERT_FALSE(e.known);
	CU_ASSERT_EQUAL(e.priced, 5);
}

/* Issue 18's test of the effect: a small aged tree, built by hand, where
 * what the plan does to the disk's requests and seeks is exact. Four
 * files, placed as a tree that aged lies (physical 4 KiB blocks, as
 * FIEMAP gave them to the log): a.c (2 blocks at 1000), b.h (1 block at
 * 500000, written a release later), c.c (2 blocks at 2000 and an edit
 * appended later, its third block at 900000) and d.h (1 block at 300000).
 * A morning reads a.c, b.h, c.c and d.h, three times: five requests a
 * time (c.c in two, one an extent), each a seek at home (every next place
 * lies backwards or more than 1 MiB on; the first is 4 MB from the head's
 * rest at 0). The plan lays the 7 blocks out in that order, so the
 * mornings from the BOPT cost one seek to it and requests in a row. */
static void test_aged_tree_exact(void)
{
	static const struct {
		uint64_t file, block, nblocks;
		int64_t phys;
	} morning[] = {{1, 0, 2, 1000},
		       {2, 0, 1, 500000},
		       {3, 0, 2, 2000},
		       {3, 2, 1, 900000},
		       {4, 0, 1, 300000}};
	struct hy_reorganize_params params = {.decay = 1.0, .capacity_blocks = 64};
	struct hy_gain_place place = {.bopt_address = far_bopt};
	struct hy_reorganize_plan plan;
	struct hy_reorganize_diff d;
	struct hy_gain_estimate e;
	struct hy_state *state = NULL;
	char *dir = hy_test_tmpdir(), why[512] = "";
	int row = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/backing", false, &state, why, sizeof(why)), 0);
	for (int rep = 0; rep < 3; rep++) {
		for (size_t i = 0; i < sizeof(morning) / sizeof(morning[0]); i++) {
			char sql[200];

			snprintf(sql, sizeof(sql),
				 "INSERT INTO access_log VALUES (%d, 1, %llu, %llu, %llu, 0, NULL, "
				 "%lld)",
				 1000 + row++, (unsigned long long)morning[i].file,
				 (unsigned long long)(morning[i].block * 4096),
				 (unsigned long long)(morning[i].nblocks * 4096),
				 (long long)morning[i].phys);
			CU_ASSERT_EQUAL(sqlite3_exec(state->db, sql, NULL, NULL, NULL), SQLITE_OK);
		}
	}
	CU_ASSERT_EQUAL_FATAL(hy_reorganize_make_plan(state->db, &params, &plan, why, sizeof(why)),
			      0);
	/* the 7 blocks in the order they were read (c.c's two requests, two
	 * ranges) */
	CU_ASSERT_EQUAL(plan.blocks, 7);
	CU_ASSERT_EQUAL_FATAL(plan.count, 5);
	CU_ASSERT_TRUE(same(&plan.ranges[0], 1, 0, 2, 0));
	CU_ASSERT_TRUE(same(&plan.ranges[1], 2, 0, 1, 2));
	CU_ASSERT_TRUE(same(&plan.ranges[2], 3, 0, 2, 3));
	CU_ASSERT_TRUE(same(&plan.ranges[3], 3, 2, 1, 5));
	CU_ASSERT_TRUE(same(&plan.ranges[4], 4, 0, 1, 6));
	hy_devmodel_defaults(HY_DEVMODEL_HDD, &place.disk);
	place.disk.capacity = 2000000000000ull;
	CU_ASSERT_EQUAL_FATAL(hy_reorganize_diff(NULL, 0, plan.ranges, plan.count, &d), 0);
	CU_ASSERT_EQUAL(hy_gain_estimate(state->db, plan.after, plan.last, NULL, 0, &d, &place, &e,
					 why, sizeof(why)),
			0);
	CU_ASSERT(e.known);
	CU_ASSERT_EQUAL(e.reads, 15);
	CU_ASSERT_EQUAL(e.priced, 15);
	/* at home: 15 requests, 15 seeks; as it is (nothing relocated) the same */
	CU_ASSERT_EQUAL(e.home_requests, 15);
	CU_ASSERT_EQUAL(e.home_seeks, 15);
	CU_ASSERT_EQUAL(e.current_requests, 15);
	CU_ASSERT_EQUAL(e.current_seeks, 15);
	/* with the plan: the same 15 requests and one seek, to the BOPT: the
	 * drive reads 1 MiB ahead of it into its buffer (devmodel.h), which
	 * then holds the 28 KiB of all three mornings */
	CU_ASSERT_EQUAL(e.planned_requests, 15);
	CU_ASSERT_EQUAL(e.planned_seeks, 1);
	CU_ASSERT(e.planned_ms < e.home_ms / 4);
	CU_ASSERT_EQUAL(hy_gain_decide(&e), HY_GAIN_GO);
	hy_reorganize_diff_free(&d);
	hy_reorganize_plan_free(&plan);
	hy_state_close(state);
	hy_test_rmtree(dir);
	free(dir);
}

/* Step 2b: small files read in part are planned whole. The log: file 1
 * (3 blocks) block 0 read, file 2 (20 blocks: not small) block 0, file 3
 * (2 blocks) blocks 0 and 1 in two reads far apart in time, file 4 (size
 * not known), file 5 (1 block: covered already). */
static uint64_t fake_sizes_calls;

static int fake_sizes(void *ctx, const uint64_t *ids, size_t n, uint64_t *sizes, char *why,
		      size_t why_size)
{
	static const uint64_t bytes[] = {0, 3 * 4096 - 10, 20 * 4096, 2 * 4096, UINT64_MAX, 100};

	(void)ctx;
	(void)why;
	(void)why_size;
	fake_sizes_calls++;
	for (size_t i = 0; i < n; i++)
		sizes[i] = ids[i] < 6 ? bytes[ids[i]] : UINT64_MAX;
	return 0;
}

static void test_whole_small_files(void)
{
	/* read order: 1:0, 2:0, 3:0, 4:0, 5:0, 3:1 */
	static const int64_t reads[][2] = {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}, {3, 1}};
	struct hy_reorganize_params params = {
		.decay = 1.0, .capacity_blocks = 64, .file_sizes = fake_sizes};
	struct hy_reorganize_plan plan;
	struct hy_state *state = NULL;
	char *dir = hy_test_tmpdir(), why[512] = "";
	int row = 0;
	bool file3_whole = false;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/backing", false, &state, why, sizeof(why)), 0);
	for (int rep = 0; rep < 3; rep++) {
		for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
			char sql[200];

			snprintf(sql, sizeof(sql),
				 "INSERT INTO access_log VALUES (%d, 1, %lld, %lld, 4096, 0, NULL, "
				 "NULL)",
				 1000 + row++, (long long)reads[i][0],
				 (long long)reads[i][1] * 4096);
			CU_ASSERT_EQUAL(sqlite3_exec(state->db, sql, NULL, NULL, NULL), SQLITE_OK);
		}
	}
	CU_ASSERT_EQUAL_FATAL(hy_reorganize_make_plan(state->db, &params, &plan, why, sizeof(why)),
			      0);
	CU_ASSERT_EQUAL(fake_sizes_calls, 1);
	/* file 1 gains 2 blocks, file 3's two reads become one range */
	CU_ASSERT_EQUAL(plan.whole_files, 2);
	CU_ASSERT_EQUAL(plan.whole_blocks, 2);
	CU_ASSERT_EQUAL(plan.blocks, 6 + 2);
	for (size_t i = 0; i < plan.count; i++) {
		const struct hy_reorganize_range *r = &plan.ranges[i];

		if (r->file_id == 1)
			CU_ASSERT_TRUE(r->block == 0 && r->nblocks == 3);
		if (r->file_id == 2 || r->file_id == 4 || r->file_id == 5)
			CU_ASSERT_TRUE(r->block == 0 && r->nblocks == 1);
		if (r->file_id == 3) {
			CU_ASSERT_FALSE(file3_whole);
			CU_ASSERT_TRUE(r->block == 0 && r->nblocks == 2);
			file3_whole = true;
		}
		/* packed back to back */
		if (i > 0)
			CU_ASSERT_EQUAL(r->bopt_block,
					plan.ranges[i - 1].bopt_block + plan.ranges[i - 1].nblocks);
	}
	CU_ASSERT_TRUE(file3_whole);
	hy_reorganize_plan_free(&plan);

	/* no room for file 1's two more blocks: planned as read */
	params.capacity_blocks = 7;
	CU_ASSERT_EQUAL_FATAL(hy_reorganize_make_plan(state->db, &params, &plan, why, sizeof(why)),
			      0);
	CU_ASSERT_EQUAL(plan.whole_files, 1); /* file 3 needs no room */
	CU_ASSERT(plan.blocks <= 7);
	for (size_t i = 0; i < plan.count; i++)
		if (plan.ranges[i].file_id == 1)
			CU_ASSERT_EQUAL(plan.ranges[i].nblocks, 1);
	hy_reorganize_plan_free(&plan);

	/* without sizes: as the planner made it */
	params.file_sizes = NULL;
	params.capacity_blocks = 64;
	CU_ASSERT_EQUAL_FATAL(hy_reorganize_make_plan(state->db, &params, &plan, why, sizeof(why)),
			      0);
	CU_ASSERT_EQUAL(plan.whole_files, 0);
	CU_ASSERT_EQUAL(plan.blocks, 6);
	hy_reorganize_plan_free(&plan);
	hy_state_close(state);
	hy_test_rmtree(dir);
	free(dir);
}

static int64_t count(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t n = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -2;
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* One process reads blocks 10, 2, 20 of file 1 three times: the plan is
 * 10, 2, 20 (borg.sh works it out), saved as generation 1; a second run
 * reads nothing new and saves generation 2, replacing the ranges. */
static void test_plan_from_log(void)
{
	struct hy_reorganize_params params = {.decay = 1.0, .capacity_blocks = 3, .save = true};
	struct hy_reorganize_plan plan;
	struct hy_state *state = NULL;
	char *dir = hy_test_tmpdir(), why[512] = "";
	static const int blocks[] = {10, 2, 20};

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/backing", false, &state, why, sizeof(why)), 0);
	for (int rep = 0; rep < 3; rep++) {
		for (int i = 0; i < 3; i++) {
			char sql[200];

			snprintf(
				sql, sizeof(sql),
				"INSERT INTO access_log VALUES (%d, 1, 1, %d, 4096, 0, NULL, NULL)",
				1000 + rep * 10 + i, blocks[i] * 4096);
			CU_ASSERT_EQUAL(sqlite3_exec(state->db, sql, NULL, NULL, NULL), SQLITE_OK);
		}
	}
	CU_ASSERT_EQUAL_FATAL(hy_reorganize_make_plan(state->db, &params, &plan, why, sizeof(why)),
			      0);
	CU_ASSERT_EQUAL(plan.generation, 1);
	CU_ASSERT_EQUAL(plan.analyzer.requests, 9);
	CU_ASSERT_EQUAL(plan.last, 9);
	CU_ASSERT_EQUAL_FATAL(plan.count, 3);
	CU_ASSERT_TRUE(same(&plan.ranges[0], 1, 10, 1, 0));
	CU_ASSERT_TRUE(same(&plan.ranges[1], 1, 2, 1, 1));
	CU_ASSERT_TRUE(same(&plan.ranges[2], 1, 20, 1, 2));
	CU_ASSERT_DOUBLE_EQUAL(plan.ranges[0].heat, 3.0, 1e-9);
	CU_ASSERT_EQUAL(
		count(state->db, "SELECT count(*) FROM bopt_plan_ranges WHERE generation = 1"), 3);
	CU_ASSERT_EQUAL(count(state->db, "SELECT block FROM bopt_plan_ranges WHERE bopt_block = 1"),
			2);
	CU_ASSERT_EQUAL(count(state->db, "SELECT count(*) FROM analyzer_runs"), 1);
	CU_ASSERT_EQUAL(hy_reorganize_record(state->db, 1, "done", 3, 0, 0, 0, why, sizeof(why)),
			0);
	CU_ASSERT_EQUAL(
		count(state->db, "SELECT copied_blocks FROM bopt_plans WHERE generation = 1"), 3);
	CU_ASSERT_EQUAL(count(state->db, "SELECT finished_ns IS NOT NULL FROM bopt_plans"), 1);
	hy_reorganize_plan_free(&plan);

	/* cumulative again: the saved graph, nothing new in the log */
	CU_ASSERT_EQUAL_FATAL(hy_reorganize_make_plan(state->db, &params, &plan, why, sizeof(why)),
			      0);
	CU_ASSERT_EQUAL(plan.generation, 2);
	CU_ASSERT_EQUAL(plan.analyzer.requests, 0);
	CU_ASSERT_EQUAL(plan.count, 3);
	CU_ASSERT_EQUAL(count(state->db, "SELECT count(*) FROM bopt_plan_ranges"), 3);
	CU_ASSERT_EQUAL(count(state->db, "SELECT min(generation) FROM bopt_plan_ranges"), 2);
	hy_reorganize_plan_free(&plan);

	/* a dry run (no save) changes nothing */
	params.save = false;
	CU_ASSERT_EQUAL_FATAL(hy_reorganize_make_plan(state->db, &params, &plan, why, sizeof(why)),
			      0);
	CU_ASSERT_EQUAL(plan.generation, 0);
	CU_ASSERT_EQUAL(count(state->db, "SELECT count(*) FROM bopt_plans"), 2);
	hy_reorganize_plan_free(&plan);

	/* a bad decay is refused by name */
	params.decay = 0;
	CU_ASSERT_EQUAL(hy_reorganize_make_plan(state->db, &params, &plan, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "decay"));
	hy_state_close(state);
	hy_test_rmtree(dir);
	free(dir);
}

/* Pins and excludes in the plan (rules.h): a pinned file's ranges come
 * first in the read region, an excluded one's are not planned at all and
 * plan_files says why. Three files read in turn, three times: src/a.c
 * blocks 0-1, keep/p block 5, build/x.o block 0; keep is pinned, the
 * build folder excluded by the mount option's row. */
static void test_plan_rules(void)
{
	struct hy_reorganize_params params = {.decay = 1.0, .capacity_blocks = 16, .save = true};
	struct hy_reorganize_plan plan;
	struct hy_state *state = NULL;
	char *dir = hy_test_tmpdir(), why[512] = "";
	static const int reads[][2] = {{1, 0}, {1, 1}, {2, 5}, {3, 0}};
	int ts = 1000;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/backing", false, &state, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "INSERT INTO files (id, dev, ino, birth_ns, path, first_seen_ns)"
				     " VALUES (1, 1, 11, 0, 'src/a.c', 0), (2, 1, 12, 0, 'keep/p', 0),"
				     " (3, 1, 13, 0, 'build/x.o', 0);"
				     "INSERT INTO cache_rules VALUES ('pin', 'keep'),"
				     " ('exclude-option', 'build/*');",
				     NULL, NULL, NULL),
			SQLITE_OK);
	for (int rep = 0; rep < 3; rep++)
		for (int i = 0; i < 4; i++) {
			char sql[200];

			snprintf(sql, sizeof(sql),
				 "INSERT INTO access_log VALUES (%d, 1, %d, %d, 4096, 0, NULL, NULL)",
				 ts++, reads[i][0], reads[i][1] * 4096);
			CU_ASSERT_EQUAL(sqlite3_exec(state->db, sql, NULL, NULL, NULL), SQLITE_OK);
		}
	CU_ASSERT_EQUAL_FATAL(hy_reorganize_make_plan(state->db, &params, &plan, why, sizeof(why)),
			      0);
	CU_ASSERT_FATAL(plan.count >= 2);
	CU_ASSERT_EQUAL(plan.ranges[0].file_id, 2);
	CU_ASSERT_EQUAL(plan.ranges[0].block, 5);
	CU_ASSERT_EQUAL(plan.ranges[0].bopt_block, 0);
	for (size_t i = 0; i < plan.count; i++)
		CU_ASSERT_NOT_EQUAL(plan.ranges[i].file_id, 3);
	CU_ASSERT_EQUAL(count(state->db, "SELECT count(*) FROM plan_files WHERE file_id = 3"
					 " AND reason = 'excluded'"),
			1);
	hy_reorganize_plan_free(&plan);
	hy_state_close(state);
	hy_test_rmtree(dir);
	free(dir);
}

static void test_sizes(void)
{
	uint64_t v = 7;

	CU_ASSERT_EQUAL(hy_units_parse_size("1G", false, &v), 0);
	CU_ASSERT_EQUAL(v, 1ULL << 30);
	CU_ASSERT_EQUAL(hy_units_parse_size("512m", false, &v), 0);
	CU_ASSERT_EQUAL(v, 512ULL << 20);
	CU_ASSERT_EQUAL(hy_units_parse_size("4096", false, &v), 0);
	CU_ASSERT_EQUAL(v, 4096);
	CU_ASSERT_EQUAL(hy_units_parse_size("0", true, &v), 0);
	CU_ASSERT_EQUAL(v, 0);
	v = 7;
	CU_ASSERT_EQUAL(hy_units_parse_size("0", false, &v), -EINVAL);
	CU_ASSERT_EQUAL(hy_units_parse_size("-1", true, &v), -EINVAL);
	CU_ASSERT_EQUAL(hy_units_parse_size("+1", true, &v), -EINVAL);
	CU_ASSERT_EQUAL(hy_units_parse_size(" 1", true, &v), -EINVAL);
	CU_ASSERT_EQUAL(hy_units_parse_size("1X", true, &v), -EINVAL);
	CU_ASSERT_EQUAL(hy_units_parse_size("1GB", true, &v), -EINVAL);
	CU_ASSERT_EQUAL(hy_units_parse_size("", true, &v), -EINVAL);
	CU_ASSERT_EQUAL(hy_units_parse_size(NULL, true, &v), -EINVAL);
	CU_ASSERT_EQUAL(hy_units_parse_size("16777216T", true, &v), -EINVAL); /* 2^64 */
	CU_ASSERT_EQUAL(hy_units_parse_size("99999999999999999999", true, &v), -EINVAL);
	CU_ASSERT_EQUAL(v, 7); /* untouched by refusals */
}

int hy_test_add_reorganize(void)
{
	CU_pSuite suite = CU_add_suite("reorganize", NULL, NULL);

	if (!suite || !CU_add_test(suite, "diff: nothing relocated yet", test_diff_empty_map) ||
	    !CU_add_test(suite, "pins first, excludes left out", test_plan_rules) ||
	    !CU_add_test(suite, "diff: the same plan again", test_diff_same_plan) ||
	    !CU_add_test(suite, "diff: kept, leaving, moving, new", test_diff_mixed) ||
	    !CU_add_test(suite, "diff: holes in a planned range", test_diff_holes) ||
	    !CU_add_test(suite, "diff: what the plan leaves out stays until wanted",
			 test_diff_left_until_wanted) ||
	    !CU_add_test(suite, "plans from a log, saved and recorded", test_plan_from_log) ||
	    !CU_add_test(suite, "gain: a plan weighed on a model of the disk", test_gain) ||
	    !CU_add_test(suite, "small files read in part are planned whole",
			 test_whole_small_files) ||
	    !CU_add_test(suite, "gain: an aged tree, requests and seeks exact",
			 test_aged_tree_exact) ||
	    !CU_add_test(suite, "sizes", test_sizes))
		return -1;
	return 0;
}
