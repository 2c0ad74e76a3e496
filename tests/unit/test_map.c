/* test_map.c - BORG's indirection map: lookups worked out by hand, the
 * split and merge rules, refused relocations, release and dirty marks,
 * stats and walks, save and load (with a stale and a damaged table), file
 * stamps and the checkpoint epoch, many threads at once, and a million
 * blocks kept in few extents.
 *
 * Notation in the comments: [b, n -> p] is a piece of n blocks from file
 * block b, relocated to BOPT block p; [b, n HOME] is one at home; a "d"
 * after it marks it dirty.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hybridfs/map.h"
#include "hybridfs/state.h"
#include "suites.h"

/* the epoch of the last checkpoint hy_map_load() read */
static uint32_t loaded_epoch;

static struct hy_map_extent mk(uint64_t file_id, uint64_t block, uint32_t nblocks,
			       uint64_t bopt_block, bool dirty)
{
	struct hy_map_extent e = {file_id, block, nblocks, dirty, bopt_block, 0};

	return e;
}

static struct hy_map_piece pc(uint64_t block, uint32_t nblocks, uint64_t bopt_block, bool dirty)
{
	struct hy_map_piece p = {block, nblocks, dirty, bopt_block};

	return p;
}

static struct hy_map *new_map(void)
{
	struct hy_map *map = NULL;

	CU_ASSERT_EQUAL_FATAL(hy_map_new(&map), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(map);
	return map;
}

static void relocate_ok(struct hy_map *map, uint64_t file_id, uint64_t block, uint32_t nblocks,
			uint64_t bopt_block, bool dirty)
{
	struct hy_map_extent e = mk(file_id, block, nblocks, bopt_block, dirty);

	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), 0);
}

/* Looks up the range and compares with @want, piece by piece. */
static void check_lookup(struct hy_map *map, uint64_t file_id, uint64_t block, uint32_t nblocks,
			 const struct hy_map_piece *want, int nwant)
{
	struct hy_map_piece got[16];
	int n, i;

	n = hy_map_lookup(map, file_id, block, nblocks, got, 16);
	CU_ASSERT_EQUAL(n, nwant);
	if (n != nwant)
		return;
	for (i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(got[i].block, want[i].block);
		CU_ASSERT_EQUAL(got[i].nblocks, want[i].nblocks);
		CU_ASSERT_EQUAL(got[i].bopt_block, want[i].bopt_block);
		CU_ASSERT_EQUAL(got[i].dirty, want[i].dirty);
	}
}

struct extents {
	struct hy_map_extent e[64];
	size_t n;
	size_t stop_after; /* 0: never stop */
};

static int collect(const struct hy_map_extent *e, void *arg)
{
	struct extents *x = arg;

	if (x->n < 64)
		x->e[x->n] = *e;
	x->n++;
	return x->stop_after && x->n == x->stop_after ? 42 : 0;
}

/* Walks the map and compares with @want, extent by extent. */
static void check_walk(struct hy_map *map, const struct hy_map_extent *want, size_t nwant)
{
	struct extents got;
	size_t i;

	memset(&got, 0, sizeof(got));
	CU_ASSERT_EQUAL(hy_map_walk(map, collect, &got), 0);
	CU_ASSERT_EQUAL(got.n, nwant);
	if (got.n != nwant)
		return;
	for (i = 0; i < nwant; i++) {
		CU_ASSERT_EQUAL(got.e[i].file_id, want[i].file_id);
		CU_ASSERT_EQUAL(got.e[i].block, want[i].block);
		CU_ASSERT_EQUAL(got.e[i].nblocks, want[i].nblocks);
		CU_ASSERT_EQUAL(got.e[i].bopt_block, want[i].bopt_block);
		CU_ASSERT_EQUAL(got.e[i].dirty, want[i].dirty);
	}
}

static struct hy_map_stats stats_of(struct hy_map *map)
{
	struct hy_map_stats st;

	hy_map_get_stats(map, &st);
	return st;
}

static void test_empty(void)
{
	struct hy_map *map = new_map();
	struct hy_map_piece p[2];
	/* Nothing is relocated: the whole range is one piece at home. */
	const struct hy_map_piece home[] = {pc(5, 10, HY_MAP_HOME, false)};

	check_lookup(map, 1, 5, 10, home, 1);
	CU_ASSERT_EQUAL(hy_map_lookup(map, 1, 5, 0, p, 2), -EINVAL);
	CU_ASSERT_EQUAL(hy_map_lookup(map, 1, UINT64_MAX - 2, 3, p, 2), -EINVAL);
	CU_ASSERT_EQUAL(hy_map_lookup(map, 1, 0, 1, NULL, 0), 1); /* count only */
	CU_ASSERT_EQUAL(hy_map_release(map, 1, 0, 100), 0);
	CU_ASSERT_EQUAL(hy_map_set_dirty(map, 1, 0, 100, true), 0);
	CU_ASSERT_EQUAL(stats_of(map).files, 0);
	CU_ASSERT_EQUAL(stats_of(map).extents, 0);
	hy_map_free(map);
}

static void test_lookup(void)
{
	struct hy_map *map = new_map();
	struct hy_map_piece small[3];
	/* File 1: blocks 10-19 at BOPT 100 (clean), 30-34 at BOPT 200 (dirty). */
	const struct hy_map_piece exact[] = {pc(10, 10, 100, false)};
	/* 12-14 lie inside the first extent, 2 blocks in: BOPT 102. */
	const struct hy_map_piece partial[] = {pc(12, 3, 102, false)};
	/* 5-39: home 5-9, BOPT 100-109, home 20-29, BOPT 200-204 dirty,
	 * home 35-39. */
	const struct hy_map_piece spanning[] = {
		pc(5, 5, HY_MAP_HOME, false), pc(10, 10, 100, false),
		pc(20, 10, HY_MAP_HOME, false), pc(30, 5, 200, true),
		pc(35, 5, HY_MAP_HOME, false)};
	/* 18-31: the end of the first (BOPT 108-109), the gap 20-29, the
	 * start of the second (BOPT 200-201, dirty). */
	const struct hy_map_piece both_ends[] = {
		pc(18, 2, 108, false), pc(20, 10, HY_MAP_HOME, false), pc(30, 2, 200, true)};
	/* 20-29 is exactly the gap. */
	const struct hy_map_piece gap[] = {pc(20, 10, HY_MAP_HOME, false)};
	/* File 2 has nothing relocated. */
	const struct hy_map_piece other[] = {pc(10, 10, HY_MAP_HOME, false)};

	relocate_ok(map, 1, 10, 10, 100, false);
	relocate_ok(map, 1, 30, 5, 200, true);
	check_lookup(map, 1, 10, 10, exact, 1);
	check_lookup(map, 1, 12, 3, partial, 1);
	check_lookup(map, 1, 5, 35, spanning, 5);
	check_lookup(map, 1, 18, 14, both_ends, 3);
	check_lookup(map, 1, 20, 10, gap, 1);
	check_lookup(map, 2, 10, 10, other, 1);

	/* Too little room: the count is still the whole range's, only @max
	 * pieces are written. */
	memset(small, 0xa5, sizeof(small));
	CU_ASSERT_EQUAL(hy_map_lookup(map, 1, 5, 35, small, 2), 5);
	CU_ASSERT_EQUAL(small[0].block, 5);
	CU_ASSERT_EQUAL(small[1].bopt_block, 100);
	CU_ASSERT_EQUAL(small[2].block, 0xa5a5a5a5a5a5a5a5ULL); /* untouched */
	hy_map_free(map);
}

static void test_merge(void)
{
	struct hy_map *map = new_map();
	/* 0-3 -> 10 then 4-7 -> 14: contiguous in the file and the BOPT. */
	const struct hy_map_extent one[] = {mk(1, 0, 8, 10, false)};
	/* 0-3 -> 10 then 4-7 -> 20: not contiguous in the BOPT. */
	const struct hy_map_extent two[] = {mk(1, 0, 4, 10, false), mk(1, 4, 4, 20, false)};
	/* 0-3 -> 10 clean, 4-7 -> 14 dirty: contiguous, but not alike. */
	const struct hy_map_extent mixed[] = {mk(1, 0, 4, 10, false), mk(1, 4, 4, 14, true)};
	/* 0-3 -> 10, 8-11 -> 18, then 4-7 -> 14 fills the hole: one extent. */
	const struct hy_map_extent filled[] = {mk(1, 0, 12, 10, false)};
	/* Prepending: 4-7 -> 14 then 0-3 -> 10. */
	const struct hy_map_piece prepended[] = {pc(0, 8, 10, false)};

	relocate_ok(map, 1, 0, 4, 10, false);
	relocate_ok(map, 1, 4, 4, 14, false);
	check_walk(map, one, 1);
	CU_ASSERT_EQUAL(stats_of(map).extents, 1);
	hy_map_free(map);

	map = new_map();
	relocate_ok(map, 1, 0, 4, 10, false);
	relocate_ok(map, 1, 4, 4, 20, false);
	check_walk(map, two, 2);
	CU_ASSERT_EQUAL(stats_of(map).extents, 2);
	hy_map_free(map);

	map = new_map();
	relocate_ok(map, 1, 0, 4, 10, false);
	relocate_ok(map, 1, 4, 4, 14, true);
	check_walk(map, mixed, 2);
	hy_map_free(map);

	map = new_map();
	relocate_ok(map, 1, 0, 4, 10, false);
	relocate_ok(map, 1, 8, 4, 18, false);
	CU_ASSERT_EQUAL(stats_of(map).extents, 2);
	relocate_ok(map, 1, 4, 4, 14, false);
	check_walk(map, filled, 1);
	hy_map_free(map);

	map = new_map();
	relocate_ok(map, 1, 4, 4, 14, false);
	relocate_ok(map, 1, 0, 4, 10, false);
	check_lookup(map, 1, 0, 8, prepended, 1);
	CU_ASSERT_EQUAL(stats_of(map).extents, 1);
	hy_map_free(map);
}

static void test_conflicts(void)
{
	struct hy_map *map = new_map();
	struct hy_map_extent e;
	struct hy_map_stats st;

	relocate_ok(map, 1, 0, 10, 100, false); /* file 1 0-9 -> 100-109 */
	e = mk(1, 5, 10, 500, false);		/* file blocks 5-9 already there */
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), -EEXIST);
	e = mk(1, 9, 1, 500, false);
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), -EEXIST);
	e = mk(1, 20, 10, 105, false); /* BOPT 105-109 in use */
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), -EBUSY);
	e = mk(2, 0, 10, 91, false); /* BOPT 100 in use, by another file */
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), -EBUSY);
	e = mk(2, 0, 5, 0, false);
	e.nblocks = 0;
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), -EINVAL);
	e = mk(2, 0, 5, HY_MAP_HOME, false);
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), -EINVAL);
	e = mk(2, UINT64_MAX - 2, 5, 0, false);
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), -EINVAL);
	/* Nothing changed, and the refused file 2 left nothing behind. */
	st = stats_of(map);
	CU_ASSERT_EQUAL(st.files, 1);
	CU_ASSERT_EQUAL(st.extents, 1);
	CU_ASSERT_EQUAL(st.blocks, 10);
	/* Right next to it is fine, for another file too. */
	relocate_ok(map, 2, 0, 10, 110, false);
	relocate_ok(map, 1, 20, 10, 90, false);
	/* Once released, BOPT 100-109 can be used again. */
	CU_ASSERT_EQUAL(hy_map_release(map, 1, 0, 10), 10);
	relocate_ok(map, 3, 0, 10, 100, false);
	CU_ASSERT_EQUAL(stats_of(map).files, 3);
	hy_map_free(map);
}

static void test_dirty(void)
{
	struct hy_map *map = new_map();
	/* 0-15 -> 100, then 4-11 dirty: three extents. */
	const struct hy_map_extent three[] = {mk(1, 0, 4, 100, false), mk(1, 4, 8, 104, true),
					      mk(1, 12, 4, 112, false)};
	const struct hy_map_extent one[] = {mk(1, 0, 16, 100, false)};
	/* Dirtying 14-21 over 0-15 -> 100 and 20-23 -> 300: 14-15 and
	 * 20-21 change (4 blocks); the gap 16-19 has nothing to mark. */
	const struct hy_map_extent over_gap[] = {mk(1, 0, 14, 100, false), mk(1, 14, 2, 114, true),
						 mk(1, 20, 2, 300, true), mk(1, 22, 2, 302, false)};
	const struct hy_map_piece pieces[] = {pc(2, 2, 102, false), pc(4, 8, 104, true),
					      pc(12, 2, 112, false)};

	relocate_ok(map, 1, 0, 16, 100, false);
	CU_ASSERT_EQUAL(hy_map_set_dirty(map, 1, 4, 8, true), 8);
	check_walk(map, three, 3);
	check_lookup(map, 1, 2, 12, pieces, 3);
	CU_ASSERT_EQUAL(stats_of(map).dirty_blocks, 8);
	/* Again: nothing changes. A range that only partly changes counts
	 * only what changed (2-5: 2-3 become dirty). */
	CU_ASSERT_EQUAL(hy_map_set_dirty(map, 1, 4, 8, true), 0);
	CU_ASSERT_EQUAL(hy_map_set_dirty(map, 1, 2, 4, true), 2);
	CU_ASSERT_EQUAL(hy_map_set_dirty(map, 1, 2, 2, false), 2);
	check_walk(map, three, 3);
	/* Clean again: merged back into one. */
	CU_ASSERT_EQUAL(hy_map_set_dirty(map, 1, 4, 8, false), 8);
	check_walk(map, one, 1);
	CU_ASSERT_EQUAL(stats_of(map).dirty_blocks, 0);

	relocate_ok(map, 1, 20, 4, 300, false);
	CU_ASSERT_EQUAL(hy_map_set_dirty(map, 1, 14, 8, true), 4);
	check_walk(map, over_gap, 4);
	CU_ASSERT_EQUAL(stats_of(map).dirty_blocks, 4);
	CU_ASSERT_EQUAL(hy_map_set_dirty(map, 1, 0, 0, true), -EINVAL);
	CU_ASSERT_EQUAL(hy_map_set_dirty(map, 2, 0, 10, true), 0);
	hy_map_free(map);
}

static void test_release(void)
{
	struct hy_map *map = new_map();
	struct hy_map_extent e;
	/* 0-15 -> 100, release 4-7: 0-3 -> 100 and 8-15 -> 108 remain. */
	const struct hy_map_extent split[] = {mk(1, 0, 4, 100, false), mk(1, 8, 8, 108, false)};
	const struct hy_map_piece pieces[] = {pc(0, 4, 100, false), pc(4, 4, HY_MAP_HOME, false),
					      pc(8, 8, 108, false)};
	/* Then release 2-9: 2-3 and 8-9 go (4 blocks), 0-1 and 10-15 stay. */
	const struct hy_map_extent trimmed[] = {mk(1, 0, 2, 100, false), mk(1, 10, 6, 110, false)};

	relocate_ok(map, 1, 0, 16, 100, false);
	CU_ASSERT_EQUAL(hy_map_release(map, 1, 4, 4), 4);
	check_walk(map, split, 2);
	check_lookup(map, 1, 0, 16, pieces, 3);
	CU_ASSERT_EQUAL(hy_map_release(map, 1, 4, 4), 0); /* already home */
	CU_ASSERT_EQUAL(hy_map_release(map, 1, 2, 8), 4);
	check_walk(map, trimmed, 2);
	/* The released BOPT blocks 102-109 are free again, 100-101 and
	 * 110-115 are not. */
	relocate_ok(map, 2, 0, 8, 102, false);
	e = mk(3, 0, 1, 101, false);
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), -EBUSY);
	e = mk(3, 0, 1, 110, false);
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), -EBUSY);
	CU_ASSERT_EQUAL(hy_map_release(map, 1, 0, 0), -EINVAL);
	/* Releasing a whole file removes it. */
	CU_ASSERT_EQUAL(stats_of(map).files, 2);
	CU_ASSERT_EQUAL(hy_map_release(map, 1, 0, UINT64_MAX), 8);
	CU_ASSERT_EQUAL(stats_of(map).files, 1);
	CU_ASSERT_EQUAL(stats_of(map).extents, 1);
	hy_map_free(map);
}

static void test_stats(void)
{
	struct hy_map *map = new_map();
	struct hy_map_stats st;

	relocate_ok(map, 1, 0, 10, 0, false);
	relocate_ok(map, 1, 20, 5, 10, true);
	relocate_ok(map, 2, 0, 3, 15, false);
	relocate_ok(map, 3, 7, 1, 18, true);
	st = stats_of(map);
	CU_ASSERT_EQUAL(st.files, 3);
	CU_ASSERT_EQUAL(st.extents, 4);
	CU_ASSERT_EQUAL(st.blocks, 19);
	CU_ASSERT_EQUAL(st.dirty_blocks, 6);
	hy_map_free(map);
}

static void test_walk(void)
{
	struct hy_map *map = new_map();
	struct extents got;
	/* Relocated out of order; walked file by file, in block order. */
	const struct hy_map_extent order[] = {mk(1, 0, 2, 50, false), mk(1, 5, 1, 40, true),
					      mk(2, 3, 1, 60, false), mk(3, 0, 4, 10, false),
					      mk(3, 9, 1, 20, false)};

	relocate_ok(map, 3, 9, 1, 20, false);
	relocate_ok(map, 1, 5, 1, 40, true);
	relocate_ok(map, 3, 0, 4, 10, false);
	relocate_ok(map, 2, 3, 1, 60, false);
	relocate_ok(map, 1, 0, 2, 50, false);
	check_walk(map, order, 5);

	memset(&got, 0, sizeof(got));
	got.stop_after = 2;
	CU_ASSERT_EQUAL(hy_map_walk(map, collect, &got), 42);
	CU_ASSERT_EQUAL(got.n, 2);
	CU_ASSERT_EQUAL(got.e[1].block, 5);
	hy_map_free(map);
}

static struct hy_state *open_state(char **tmp)
{
	struct hy_state *state = NULL;
	char why[256];

	*tmp = hy_test_tmpdir();
	CU_ASSERT_PTR_NOT_NULL_FATAL(*tmp);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(*tmp, "/backing", false, &state, why, sizeof(why)), 0);
	return state;
}

static void test_persist(void)
{
	struct hy_map *map = new_map(), *back = new_map();
	struct extents a, b;
	struct hy_state *state;
	char why[256], *tmp;
	size_t i;

	state = open_state(&tmp);
	relocate_ok(map, 1, 0, 10, 100, false);
	relocate_ok(map, 1, 20, 5, 110, true);
	relocate_ok(map, 7, 3, 2, 200, false);
	relocate_ok(map, 1ULL << 40, 1ULL << 50, 1000, 1ULL << 45, true);
	relocate_ok(back, 9, 0, 1, 5000, false); /* replaced by the load */

	/* An empty table loads as an empty map. */
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &loaded_epoch, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(stats_of(back).extents, 0);

	CU_ASSERT_EQUAL(hy_map_save(map, state->db, 7, 0, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_map_save(map, state->db, 7, 0, why, sizeof(why)), 0); /* replaces */
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &loaded_epoch, why, sizeof(why)), 0);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CU_ASSERT_EQUAL(hy_map_walk(map, collect, &a), 0);
	CU_ASSERT_EQUAL(hy_map_walk(back, collect, &b), 0);
	CU_ASSERT_EQUAL(a.n, 4);
	CU_ASSERT_EQUAL_FATAL(a.n, b.n);
	for (i = 0; i < a.n; i++)
		CU_ASSERT_EQUAL(memcmp(&a.e[i], &b.e[i], sizeof(a.e[i])), 0);
	/* The loaded map refuses what the saved one would. */
	{
		struct hy_map_extent e = mk(2, 0, 1, 101, false);

		CU_ASSERT_EQUAL(hy_map_relocate(back, &e), -EBUSY);
	}

	/* Another generation: refused, and the map is left empty. */
	why[0] = '\0';
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 8, &loaded_epoch, why, sizeof(why)), -ESTALE);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "generation"));
	CU_ASSERT_EQUAL(stats_of(back).extents, 0);
	CU_ASSERT_EQUAL(stats_of(back).files, 0);

	/* A row that overlaps another of its file, written behind our back. */
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "INSERT INTO bopt_map (file_id, block, nblocks, bopt_block, "
				     "dirty, generation) VALUES (1, 5, 3, 900, 0, 7)",
				     NULL, NULL, NULL),
			SQLITE_OK);
	why[0] = '\0';
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &loaded_epoch, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "overlaps"));
	CU_ASSERT_EQUAL(stats_of(back).extents, 0);

	/* A row whose BOPT blocks another uses. */
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "DELETE FROM bopt_map WHERE block = 5;"
				     "INSERT INTO bopt_map (file_id, block, nblocks, bopt_block, "
				     "dirty, generation) VALUES (2, 0, 3, 108, 0, 7)",
				     NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &loaded_epoch, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "BOPT"));
	CU_ASSERT_EQUAL(stats_of(back).extents, 0);

	/* Malformed rows: no blocks, a dirty flag of 2, text for a number. */
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "DELETE FROM bopt_map WHERE file_id = 2;"
				     "INSERT INTO bopt_map (file_id, block, nblocks, bopt_block, "
				     "dirty, generation) VALUES (3, 0, 0, 5000, 0, 7)",
				     NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &loaded_epoch, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "malformed"));
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "UPDATE bopt_map SET nblocks = 1, dirty = 2 WHERE file_id = 3",
				     NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &loaded_epoch, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "UPDATE bopt_map SET dirty = 0, bopt_block = 'x'"
				     " WHERE file_id = 3",
				     NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &loaded_epoch, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "bopt_block"));
	CU_ASSERT_EQUAL(stats_of(back).extents, 0);

	/* Saving again replaces the damaged table. */
	CU_ASSERT_EQUAL(hy_map_save(map, state->db, 7, 0, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &loaded_epoch, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(stats_of(back).extents, 4);

	hy_map_free(map);
	hy_map_free(back);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp);
}

/* ---- stamps --------------------------------------------------------- */

static int64_t stamp_of(struct hy_map *map, uint64_t file_id)
{
	int64_t stamp = 0x5a5a5a5a;

	CU_ASSERT_EQUAL(hy_map_get_stamp(map, file_id, &stamp), 0);
	return stamp;
}

/* Every extent the walk reports carries its file's stamp. */
struct stamp_walk {
	uint64_t file_id;
	int64_t want;
	size_t seen, bad;
};

static int check_stamp(const struct hy_map_extent *e, void *arg)
{
	struct stamp_walk *w = arg;

	if (e->file_id == w->file_id) {
		w->seen++;
		if (e->stamp != w->want)
			w->bad++;
	}
	return 0;
}

static void check_walk_stamp(struct hy_map *map, uint64_t file_id, int64_t want, size_t extents)
{
	struct stamp_walk w = {file_id, want, 0, 0};

	CU_ASSERT_EQUAL(hy_map_walk(map, check_stamp, &w), 0);
	CU_ASSERT_EQUAL(w.seen, extents);
	CU_ASSERT_EQUAL(w.bad, 0);
}

static void test_stamps(void)
{
	struct hy_map *map = new_map();
	struct hy_map_extent e;
	int64_t stamp = 77;

	/* No extents: no stamp, and setting one does not make the file. */
	CU_ASSERT_EQUAL(hy_map_get_stamp(map, 1, &stamp), -ENOENT);
	CU_ASSERT_EQUAL(hy_map_set_stamp(map, 1, 5), -ENOENT);
	CU_ASSERT_EQUAL(hy_map_get_stamp(map, 1, &stamp), -ENOENT);
	CU_ASSERT_EQUAL(stats_of(map).files, 0);

	/* A relocation with stamp 0 leaves a new file's stamp 0; a non-zero
	 * one sets it; a later 0 keeps it. */
	relocate_ok(map, 1, 0, 4, 100, false);
	CU_ASSERT_EQUAL(stamp_of(map, 1), 0);
	e = mk(1, 10, 2, 200, false);
	e.stamp = 1000;
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), 0);
	CU_ASSERT_EQUAL(stamp_of(map, 1), 1000);
	relocate_ok(map, 1, 20, 1, 300, false);
	CU_ASSERT_EQUAL(stamp_of(map, 1), 1000);
	CU_ASSERT_EQUAL(hy_map_set_stamp(map, 1, 2000), 0);
	CU_ASSERT_EQUAL(stamp_of(map, 1), 2000);

	/* Stamps are per file. */
	e = mk(2, 0, 3, 400, false);
	e.stamp = 3000;
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), 0);
	CU_ASSERT_EQUAL(stamp_of(map, 2), 3000);
	CU_ASSERT_EQUAL(stamp_of(map, 1), 2000);
	check_walk_stamp(map, 1, 2000, 3);
	check_walk_stamp(map, 2, 3000, 1);

	/* A relocation refused as already there leaves the stamp alone. */
	e = mk(2, 1, 1, 900, false);
	e.stamp = 9999;
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), -EEXIST);
	CU_ASSERT_EQUAL(stamp_of(map, 2), 3000);

	/* A partial release keeps the stamp; releasing the last extent
	 * forgets it. */
	CU_ASSERT_EQUAL(hy_map_release(map, 1, 0, 4), 4);
	CU_ASSERT_EQUAL(stamp_of(map, 1), 2000);
	CU_ASSERT_EQUAL(hy_map_release(map, 1, 0, UINT64_MAX), 3);
	CU_ASSERT_EQUAL(hy_map_get_stamp(map, 1, &stamp), -ENOENT);
	CU_ASSERT_EQUAL(hy_map_set_stamp(map, 1, 4000), -ENOENT);
	CU_ASSERT_EQUAL(stats_of(map).files, 1);
	/* ... so a new copy of the file starts with no stamp, not the old. */
	relocate_ok(map, 1, 0, 1, 100, false);
	CU_ASSERT_EQUAL(stamp_of(map, 1), 0);
	CU_ASSERT_EQUAL(stamp_of(map, 2), 3000);
	hy_map_free(map);
}

static int64_t db_int(struct hy_state *state, const char *sql)
{
	sqlite3_stmt *stmt = NULL;
	int64_t v = -1;

	CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(state->db, sql, -1, &stmt, NULL), SQLITE_OK);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

static void test_stamp_persist(void)
{
	struct hy_map *map = new_map(), *back = new_map(), *other = new_map();
	const int64_t s1 = 1700000000123456789LL, s2 = -42; /* ns; before 1970 too */
	struct hy_map_extent e;
	struct hy_state *state;
	uint32_t epoch = 99;
	char why[256], *tmp;

	state = open_state(&tmp);
	e = mk(1, 0, 4, 100, false);
	e.stamp = s1;
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), 0);
	relocate_ok(map, 1, 10, 2, 200, true); /* the file's stamp, not its own */
	e = mk(2, 5, 1, 300, false);
	e.stamp = s2;
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), 0);
	relocate_ok(map, 3, 0, 1, 400, false); /* never stamped: 0 */

	/* Nothing saved yet: epoch 0. */
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &epoch, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(epoch, 0);

	CU_ASSERT_EQUAL(hy_map_save(map, state->db, 7, 17, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(db_int(state, "SELECT generation FROM bopt_checkpoint WHERE id = 1"), 7);
	CU_ASSERT_EQUAL(db_int(state, "SELECT epoch FROM bopt_checkpoint WHERE id = 1"), 17);
	CU_ASSERT_EQUAL(db_int(state, "SELECT count(*) FROM bopt_checkpoint"), 1);
	CU_ASSERT_EQUAL(
		db_int(state, "SELECT stamp_ns FROM bopt_map WHERE file_id = 1 AND block = 10"),
		s1);
	CU_ASSERT_EQUAL(db_int(state, "SELECT stamp_ns FROM bopt_map WHERE file_id = 2"), s2);

	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &epoch, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(epoch, 17);
	CU_ASSERT_EQUAL(stats_of(back).extents, 4);
	CU_ASSERT_EQUAL(stamp_of(back, 1), s1);
	CU_ASSERT_EQUAL(stamp_of(back, 2), s2);
	CU_ASSERT_EQUAL(stamp_of(back, 3), 0);
	check_walk_stamp(back, 1, s1, 2);
	check_walk_stamp(back, 2, s2, 1);
	check_walk_stamp(back, 3, 0, 1);

	/* The checkpoint record is in the map's transaction: a save whose
	 * checkpoint record fails leaves the previous map and epoch. */
	relocate_ok(other, 5, 0, 1, 500, false);
	CU_ASSERT_EQUAL(
		sqlite3_exec(state->db,
			     "CREATE TEMP TRIGGER no_checkpoint BEFORE INSERT ON"
			     " main.bopt_checkpoint BEGIN SELECT RAISE(ABORT, 'refused'); END",
			     NULL, NULL, NULL),
		SQLITE_OK);
	why[0] = '\0';
	CU_ASSERT(hy_map_save(other, state->db, 7, 18, why, sizeof(why)) < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "checkpoint"));
	CU_ASSERT_EQUAL(sqlite3_exec(state->db, "DROP TRIGGER no_checkpoint", NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(db_int(state, "SELECT epoch FROM bopt_checkpoint WHERE id = 1"), 17);
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &epoch, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(epoch, 17);
	CU_ASSERT_EQUAL(stats_of(back).extents, 4);
	CU_ASSERT_EQUAL(stats_of(back).files, 3);
	CU_ASSERT_EQUAL(stamp_of(back, 1), s1);

	/* The largest epoch round-trips; one beyond 24 bits is refused. */
	CU_ASSERT_EQUAL(hy_map_save(map, state->db, 7, HY_MAP_EPOCH_MASK, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &epoch, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(epoch, 0xffffff);
	CU_ASSERT_EQUAL(sqlite3_exec(state->db, "UPDATE bopt_checkpoint SET epoch = 16777216", NULL,
				     NULL, NULL),
			SQLITE_OK);
	why[0] = '\0';
	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 7, &epoch, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "epoch"));

	hy_map_free(map);
	hy_map_free(back);
	hy_map_free(other);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp);
}

/* ---- many threads --------------------------------------------------- */

#define CONC_READERS 4
#define CONC_LOOKUPS 40000
#define CONC_WRITES  40000
#define CONC_STABLE  100  /* file 1 blocks 0-99 -> BOPT 0-99, never changed */
#define CONC_LIMIT   1000 /* the writer works on file 1 blocks 100-999 */
#define CONC_BOPT1   1000000ULL

struct conc {
	struct hy_map *map;
	unsigned seed;
	unsigned long bad, lookups;
};

/* Every piece in order, no overlap, the range covered exactly, and each
 * relocated piece where the writer's rule puts it. */
static void *conc_reader(void *arg)
{
	struct conc *c = arg;
	struct hy_map_piece p[512];
	int k;

	for (k = 0; k < CONC_LOOKUPS; k++) {
		uint64_t block = (uint64_t)(rand_r(&c->seed) % CONC_LIMIT);
		uint32_t nblocks = 1 + (uint32_t)(rand_r(&c->seed) % 300), i;
		uint64_t pos = block;
		int n = hy_map_lookup(c->map, 1, block, nblocks, p, 512);

		c->lookups++;
		if (n < 1 || n > (int)nblocks) {
			c->bad++;
			continue;
		}
		for (i = 0; i < (uint32_t)n; i++) {
			if (p[i].block != pos || p[i].nblocks == 0)
				c->bad++;
			else if (p[i].block < CONC_STABLE &&
				 (p[i].bopt_block != p[i].block || p[i].dirty ||
				  p[i].block + p[i].nblocks > CONC_STABLE))
				c->bad++;
			else if (p[i].block >= CONC_STABLE && p[i].bopt_block != HY_MAP_HOME &&
				 p[i].bopt_block != CONC_BOPT1 + p[i].block)
				c->bad++;
			else if (i > 0 && p[i].bopt_block == HY_MAP_HOME &&
				 p[i - 1].bopt_block == HY_MAP_HOME)
				c->bad++; /* two home pieces in a row */
			pos += p[i].nblocks;
		}
		if (pos != block + nblocks)
			c->bad++;
	}
	return NULL;
}

static void *conc_writer(void *arg)
{
	struct conc *c = arg;
	int k;

	for (k = 0; k < CONC_WRITES; k++) {
		uint64_t file = 1 + (uint64_t)(rand_r(&c->seed) % 8);
		uint64_t lo = file == 1 ? CONC_STABLE : 0;
		uint64_t block = lo + (uint64_t)(rand_r(&c->seed) % (CONC_LIMIT - lo));
		uint32_t nblocks = 1 + (uint32_t)(rand_r(&c->seed) % 32);
		int op = rand_r(&c->seed) % 4;
		struct hy_map_extent e;
		int64_t r = 0;

		if (block + nblocks > CONC_LIMIT)
			nblocks = (uint32_t)(CONC_LIMIT - block);
		e = mk(file, block, nblocks,
		       file == 1 ? CONC_BOPT1 + block : file * 10000000 + block, op == 1);
		if (op <= 1) {
			r = hy_map_relocate(c->map, &e);
			if (r == -EEXIST)
				r = 0;
		} else if (op == 2) {
			r = hy_map_release(c->map, file, block, nblocks);
		} else {
			r = hy_map_set_dirty(c->map, file, block, nblocks, rand_r(&c->seed) % 2);
		}
		if (r < 0)
			c->bad++;
	}
	return NULL;
}

static void test_concurrency(void)
{
	struct hy_map *map = new_map();
	struct conc c[CONC_READERS + 1];
	pthread_t t[CONC_READERS + 1];
	const struct hy_map_piece stable[] = {pc(0, CONC_STABLE, 0, false)};
	int i;

	relocate_ok(map, 1, 0, CONC_STABLE, 0, false);
	for (i = 0; i <= CONC_READERS; i++) {
		c[i] = (struct conc){map, 12345u + (unsigned)i, 0, 0};
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL,
						     i < CONC_READERS ? conc_reader : conc_writer,
						     &c[i]),
				      0);
	}
	for (i = 0; i <= CONC_READERS; i++) {
		pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(c[i].bad, 0);
	}
	for (i = 0; i < CONC_READERS; i++)
		CU_ASSERT_EQUAL(c[i].lookups, CONC_LOOKUPS);
	check_lookup(map, 1, 0, CONC_STABLE, stable, 1);
	hy_map_free(map);
}

/* ---- a million blocks ----------------------------------------------- */

#define RUN  64
#define RUNS (1000000 / RUN) /* 15,625 */

static uint32_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(*s >> 33);
}

static void shuffle(uint32_t *v, uint32_t n, uint64_t seed)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		v[i] = i;
	for (i = n - 1; i > 0; i--) {
		uint32_t j = lcg(&seed) % (i + 1), t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

/* Offset in its run of the @k-th block relocated, by the run's pattern:
 * ascending, descending, or the two ends first and the middle last (two
 * pieces that the middle joins). */
static uint32_t run_offset(uint32_t pattern, uint32_t k)
{
	switch (pattern) {
	case 0:
		return k;
	case 1:
		return RUN - 1 - k;
	default:
		if (k < 16)
			return k;
		if (k < 32)
			return k + 32; /* 48-63 */
		return k - 16;	       /* 16-47 */
	}
}

static void test_million(void)
{
	struct hy_map *map = new_map();
	uint32_t *order = malloc(RUNS * sizeof(*order));
	struct hy_map_piece p[4];
	struct hy_map_stats st;
	uint32_t k, b;
	int bad = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(order);
	/* Run r is file 1 blocks r*128 .. r*128+63 (a hole after each, so
	 * runs never touch in the file). Runs go in a shuffled order, the
	 * k-th to BOPT k*64: adjacent in the BOPT to the one before, yet not
	 * contiguous in the file, so each run is exactly one extent once
	 * its 64 blocks, relocated one at a time, have merged. */
	shuffle(order, RUNS, 42);
	for (k = 0; k < RUNS; k++) {
		uint32_t r = order[k];

		for (b = 0; b < RUN; b++) {
			uint32_t off = run_offset(r % 3, b);
			struct hy_map_extent e =
				mk(1, (uint64_t)r * 128 + off, 1, (uint64_t)k * RUN + off, false);

			if (hy_map_relocate(map, &e) != 0)
				bad++;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	st = stats_of(map);
	CU_ASSERT_EQUAL(st.files, 1);
	CU_ASSERT_EQUAL(st.extents, RUNS);
	CU_ASSERT_EQUAL(st.blocks, 1000000);
	/* A run is one piece: run order[7] sits at BOPT 7*64. */
	CU_ASSERT_EQUAL(hy_map_lookup(map, 1, (uint64_t)order[7] * 128, RUN, p, 4), 1);
	CU_ASSERT_EQUAL(p[0].bopt_block, 7 * RUN);
	/* Two runs and the hole between: three pieces. */
	CU_ASSERT_EQUAL(hy_map_lookup(map, 1, 0, 128 + RUN, p, 4), 3);
	hy_map_free(map);

	/* The same runs, now adjacent in the file and laid out in the BOPT
	 * as in the file (run r at r*64), still relocated in a shuffled
	 * order: all of them merge into one extent. */
	map = new_map();
	for (k = 0; k < RUNS; k++) {
		struct hy_map_extent e =
			mk(1, (uint64_t)order[k] * RUN, RUN, (uint64_t)order[k] * RUN, false);

		if (hy_map_relocate(map, &e) != 0)
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
	st = stats_of(map);
	CU_ASSERT_EQUAL(st.extents, 1);
	CU_ASSERT_EQUAL(st.blocks, 1000000);
	free(order);
	hy_map_free(map);
}

int hy_test_add_map(void)
{
	CU_pSuite s = CU_add_suite("map", NULL, NULL);

	if (!s)
		return -1;
	if (!CU_add_test(s, "lookup on an empty map", test_empty) ||
	    !CU_add_test(s, "lookups worked out by hand", test_lookup) ||
	    !CU_add_test(s, "neighbours merge", test_merge) ||
	    !CU_add_test(s, "refused relocations", test_conflicts) ||
	    !CU_add_test(s, "dirty marks split and merge", test_dirty) ||
	    !CU_add_test(s, "release splits", test_release) ||
	    !CU_add_test(s, "stats", test_stats) ||
	    !CU_add_test(s, "walk order and early stop", test_walk) ||
	    !CU_add_test(s, "save and load", test_persist) ||
	    !CU_add_test(s, "stamps kept per file while it has extents", test_stamps) ||
	    !CU_add_test(s, "stamps and the checkpoint epoch saved and loaded",
			 test_stamp_persist) ||
	    !CU_add_test(s, "lookups during changes", test_concurrency) ||
	    !CU_add_test(s, "a million blocks, few extents", test_million))
		return -1;
	return 0;
}
