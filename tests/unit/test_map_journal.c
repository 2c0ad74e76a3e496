/* test_map_journal.c - the indirection map's journal: the record's bytes,
 * decode's refusals, replay into a map (equal to the map the operations
 * build directly), the torn tail cut, other generations skipped, a record
 * the map refuses, checkpoint into SQLite, a crash inside a checkpoint
 * (the epochs), write and wait by ticket, the epoch's 24-bit wrap, stamp
 * records, and group commit with 8 threads appending at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"
#include "hybridfs/state.h"
#include "suites.h"

/* the epoch of the last checkpoint hy_map_load() read */
static uint32_t loaded_epoch;

#define REC HY_MAP_JOURNAL_RECORD

static struct hy_map_journal_record rec(enum hy_map_journal_type type, uint64_t file_id,
					uint64_t block, uint32_t nblocks, uint64_t bopt_block)
{
	struct hy_map_journal_record r;

	memset(&r, 0, sizeof(r));
	r.type = type;
	r.file_id = file_id;
	r.block = block;
	r.nblocks = nblocks;
	r.bopt_block = bopt_block;
	return r;
}

static struct hy_map *new_map(void)
{
	struct hy_map *map = NULL;

	CU_ASSERT_EQUAL_FATAL(hy_map_new(&map), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(map);
	return map;
}

/* What replay does with a record, done directly on a map. */
static int apply_direct(struct hy_map *map, const struct hy_map_journal_record *r)
{
	struct hy_map_extent e = {r->file_id, r->block, r->nblocks, false, r->bopt_block, 0};
	int64_t n;

	switch (r->type) {
	case HY_MJ_RELOCATE:
		return hy_map_relocate(map, &e);
	case HY_MJ_STAMP:
		/* a stamp for a file with no extents is moot */
		n = hy_map_set_stamp(map, r->file_id, (int64_t)r->block);
		return n == -ENOENT ? 0 : (int)n;
	case HY_MJ_RELEASE:
		n = hy_map_release(map, r->file_id, r->block, r->nblocks);
		break;
	default:
		n = hy_map_set_dirty(map, r->file_id, r->block, r->nblocks, r->type == HY_MJ_DIRTY);
		break;
	}
	return n < 0 ? (int)n : 0;
}

struct extent_list {
	struct hy_map_extent *e;
	size_t n, cap;
};

static int collect(const struct hy_map_extent *e, void *arg)
{
	struct extent_list *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct hy_map_extent *p = realloc(l->e, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		l->e = p;
		l->cap = cap;
	}
	l->e[l->n++] = *e;
	return 0;
}

/* The two maps have the same extents, in the same order. */
static void check_same(struct hy_map *a, struct hy_map *b)
{
	struct extent_list la = {NULL, 0, 0}, lb = {NULL, 0, 0};
	size_t i, bad = 0;

	CU_ASSERT_EQUAL_FATAL(hy_map_walk(a, collect, &la), 0);
	CU_ASSERT_EQUAL_FATAL(hy_map_walk(b, collect, &lb), 0);
	CU_ASSERT_EQUAL(la.n, lb.n);
	for (i = 0; i < la.n && i < lb.n; i++) {
		const struct hy_map_extent *x = &la.e[i], *y = &lb.e[i];

		if (x->file_id != y->file_id || x->block != y->block || x->nblocks != y->nblocks ||
		    x->bopt_block != y->bopt_block || x->dirty != y->dirty || x->stamp != y->stamp)
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
	free(la.e);
	free(lb.e);
}

static uint64_t map_extents(struct hy_map *map)
{
	struct hy_map_stats st;

	hy_map_get_stats(map, &st);
	return st.extents;
}

static off_t file_size(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return -1;
	return st.st_size;
}

static char *journal_path(const char *dir)
{
	char *path = NULL;

	CU_ASSERT_FATAL(asprintf(&path, "%s/%s", dir, HY_MAP_JOURNAL_NAME) > 0);
	return path;
}

/* Opens @path for @generation after the checkpoint of @epoch into @map;
 * fatal unless it succeeds. */
static struct hy_map_journal *open_at(const char *path, uint64_t generation, uint32_t epoch,
				      struct hy_map *map, uint64_t *replayed)
{
	struct hy_map_journal *j = NULL;
	char why[512] = "";
	int rc;

	rc = hy_map_journal_open(path, generation, epoch, map, &j, replayed, why, sizeof(why));
	if (rc)
		fprintf(stderr, "\n  map journal: %s\n", why);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	return j;
}

/* The same, after the checkpoint hy_map_load() read last. */
static struct hy_map_journal *open_ok(const char *path, uint64_t generation, struct hy_map *map,
				      uint64_t *replayed)
{
	return open_at(path, generation, loaded_epoch, map, replayed);
}

static uint32_t fnv(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--) {
		h ^= *p++;
		h *= 16777619u;
	}
	return h;
}

static uint64_t le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	while (bytes--)
		v = (v << 8) | p[bytes];
	return v;
}

static void test_layout(void)
{
	struct hy_map_journal_record r = rec(HY_MJ_RELOCATE, 0x1122334455667788ull,
					     0x0102030405060708ull, 0xa1b2c3d4u,
					     0x8877665544332211ull),
				     back;
	unsigned char buf[REC];
	int t;

	r.generation = 0xdeadbeefcafef00dull;
	memset(buf, 0xee, sizeof(buf));
	hy_map_journal_encode(&r, buf);
	CU_ASSERT_EQUAL(memcmp(buf, "HYMJ", 4), 0);
	CU_ASSERT_EQUAL(buf[4], 1);
	CU_ASSERT_EQUAL(buf[5], 0);
	CU_ASSERT_EQUAL(buf[6], 0);
	CU_ASSERT_EQUAL(buf[7], 0);
	CU_ASSERT_EQUAL(le(buf + 8, 8), 0xdeadbeefcafef00dull);
	CU_ASSERT_EQUAL(buf[8], 0x0d); /* little-endian: low byte first */
	CU_ASSERT_EQUAL(le(buf + 16, 8), 0x1122334455667788ull);
	CU_ASSERT_EQUAL(buf[16], 0x88);
	CU_ASSERT_EQUAL(le(buf + 24, 8), 0x0102030405060708ull);
	CU_ASSERT_EQUAL(le(buf + 32, 8), 0x8877665544332211ull);
	CU_ASSERT_EQUAL(le(buf + 40, 4), 0xa1b2c3d4u);
	CU_ASSERT_EQUAL(buf[40], 0xd4);
	CU_ASSERT_EQUAL(le(buf + 44, 4), fnv(buf, 44));
	/* FNV-1a 32 itself, on a known input. */
	CU_ASSERT_EQUAL(fnv((const unsigned char *)"a", 1), 0xe40c292cu);

	memset(&back, 0x55, sizeof(back));
	CU_ASSERT_EQUAL(hy_map_journal_decode(buf, &back), 0);
	CU_ASSERT_EQUAL(back.type, r.type);
	CU_ASSERT_EQUAL(back.generation, r.generation);
	CU_ASSERT_EQUAL(back.file_id, r.file_id);
	CU_ASSERT_EQUAL(back.block, r.block);
	CU_ASSERT_EQUAL(back.bopt_block, r.bopt_block);
	CU_ASSERT_EQUAL(back.nblocks, r.nblocks);

	for (t = HY_MJ_RELOCATE; t <= HY_MJ_STAMP; t++) {
		r = rec((enum hy_map_journal_type)t, 7, 8, 9, t == HY_MJ_RELOCATE ? 10 : 0);
		r.generation = 3;
		hy_map_journal_encode(&r, buf);
		CU_ASSERT_EQUAL(buf[4], t);
		CU_ASSERT_EQUAL(hy_map_journal_decode(buf, &back), 0);
		CU_ASSERT_EQUAL(back.type, t);
		CU_ASSERT_EQUAL(back.nblocks, 9);
	}
}

/* Re-seals @buf's checksum after a deliberate change, so that only the
 * change itself can be what decode refuses. */
static void reseal(unsigned char *buf)
{
	uint32_t h = fnv(buf, 44);
	int i;

	for (i = 0; i < 4; i++)
		buf[44 + i] = (unsigned char)(h >> (8 * i));
}

static void test_decode_refuses(void)
{
	struct hy_map_journal_record r = rec(HY_MJ_DIRTY, 5, 6, 7, 0), back;
	unsigned char good[REC], buf[REC];
	int bit, refused = 0, i;

	r.generation = 2;
	hy_map_journal_encode(&r, good);

	memcpy(buf, good, REC);
	buf[0] = 'X';
	reseal(buf);
	CU_ASSERT_EQUAL(hy_map_journal_decode(buf, &back), -EUCLEAN);

	for (i = 0; i < 256; i++) {
		if (i >= HY_MJ_RELOCATE && i <= HY_MJ_STAMP)
			continue;
		memcpy(buf, good, REC);
		buf[4] = (unsigned char)i;
		reseal(buf);
		if (hy_map_journal_decode(buf, &back) == -EUCLEAN)
			refused++;
	}
	CU_ASSERT_EQUAL(refused, 256 - 5);

	/* bytes 5..7 are the epoch, little-endian, 24 bits */
	memcpy(buf, good, REC);
	buf[5] = 0x56;
	buf[6] = 0x34;
	buf[7] = 0x12;
	reseal(buf);
	CU_ASSERT_EQUAL(hy_map_journal_decode(buf, &back), 0);
	CU_ASSERT_EQUAL(back.epoch, 0x123456);

	refused = 0;
	for (bit = 0; bit < REC * 8; bit++) {
		memcpy(buf, good, REC);
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		if (hy_map_journal_decode(buf, &back) == -EUCLEAN)
			refused++;
	}
	CU_ASSERT_EQUAL(refused, REC * 8);
	CU_ASSERT_EQUAL(hy_map_journal_decode(good, &back), 0);
}

/* A mix of every type: relocations over three files, then dirty marks,
 * clean marks and releases that split and merge them. */
#define N_EACH 50

static size_t make_ops(struct hy_map_journal_record *ops)
{
	size_t n = 0;
	uint64_t i;

	for (i = 0; i < N_EACH; i++)
		ops[n++] = rec(HY_MJ_RELOCATE, 1 + i % 3, i * 8, 6, 1000 + i * 8);
	for (i = 0; i < N_EACH; i++)
		ops[n++] = rec(HY_MJ_DIRTY, 1 + i % 3, i * 8 + 1, (uint32_t)(1 + i % 4), 0);
	for (i = 0; i < N_EACH; i++)
		ops[n++] = rec(HY_MJ_CLEAN, 1 + i % 3, i * 8 + 2, 1, 0);
	for (i = 0; i < N_EACH; i++)
		ops[n++] = rec(HY_MJ_RELEASE, 1 + i % 3, i * 8 + 4, (uint32_t)(1 + i % 3), 0);
	return n;
}

static void test_replay_equals_direct(void)
{
	struct hy_map_journal_record ops[4 * N_EACH];
	struct hy_map *direct = new_map(), *replayed_map = new_map(), *empty = new_map();
	struct hy_map_journal *j;
	char *dir = hy_test_tmpdir(), *path;
	uint64_t replayed = 99;
	size_t n, i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);
	n = make_ops(ops);

	j = open_ok(path, 5, empty, &replayed);
	CU_ASSERT_EQUAL(replayed, 0);
	CU_ASSERT_EQUAL(file_size(path), 0);
	for (i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(apply_direct(direct, &ops[i]), 0);
		CU_ASSERT_EQUAL(hy_map_journal_append(j, &ops[i]), 0);
	}
	CU_ASSERT_EQUAL(j->commit.written, n);
	CU_ASSERT_EQUAL(j->commit.durable, n);
	hy_map_journal_close(j);
	CU_ASSERT_EQUAL(file_size(path), (off_t)(n * REC));
	CU_ASSERT(map_extents(direct) > N_EACH); /* the marks did split extents */

	j = open_ok(path, 5, replayed_map, &replayed);
	CU_ASSERT_EQUAL(replayed, n);
	CU_ASSERT_EQUAL(j->commit.written, n);
	check_same(direct, replayed_map);
	hy_map_journal_close(j);
	CU_ASSERT_EQUAL(file_size(path), (off_t)(n * REC));

	/* A bad type is refused before it reaches the file. */
	j = open_ok(path, 5, empty, NULL);
	ops[0].type = (enum hy_map_journal_type)9;
	CU_ASSERT_EQUAL(hy_map_journal_append(j, &ops[0]), -EINVAL);
	CU_ASSERT_EQUAL(j->commit.written, n);
	hy_map_journal_close(j);
	hy_map_journal_close(NULL);

	hy_map_free(direct);
	hy_map_free(replayed_map);
	hy_map_free(empty);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

/* Writes 5 relocations of file 1 (blocks 0, 10, .. 40), generation 1. */
static void write_five(const char *path)
{
	struct hy_map *map = new_map();
	struct hy_map_journal *j = open_ok(path, 1, map, NULL);
	uint64_t i;

	for (i = 0; i < 5; i++) {
		struct hy_map_journal_record r = rec(HY_MJ_RELOCATE, 1, i * 10, 2, 100 + i * 10);

		CU_ASSERT_EQUAL(hy_map_journal_append(j, &r), 0);
	}
	hy_map_journal_close(j);
	hy_map_free(map);
	CU_ASSERT_EQUAL(file_size(path), 5 * REC);
}

/* Opens @path into a fresh map: @want records replayed, the file cut to
 * them, and the map holds exactly relocations 0 .. want - 1 of write_five
 * (plus, when @extra, block 500 -> 900 appended after the cut). */
static void check_cut(const char *path, uint64_t want, bool extra)
{
	struct hy_map *map = new_map(), *expect = new_map();
	struct hy_map_journal *j;
	uint64_t replayed = 0, i;

	for (i = 0; i < want; i++) {
		struct hy_map_journal_record r = rec(HY_MJ_RELOCATE, 1, i * 10, 2, 100 + i * 10);

		if (extra && i == want - 1)
			r = rec(HY_MJ_RELOCATE, 1, 500, 3, 900);
		CU_ASSERT_EQUAL(apply_direct(expect, &r), 0);
	}
	j = open_ok(path, 1, map, &replayed);
	CU_ASSERT_EQUAL(replayed, want);
	CU_ASSERT_EQUAL(j->commit.written, want);
	CU_ASSERT_EQUAL(file_size(path), (off_t)(want * REC));
	check_same(expect, map);
	hy_map_journal_close(j);
	hy_map_free(map);
	hy_map_free(expect);
}

/* After the cut, a new append lands right after the last good record. */
static void append_after_cut(const char *path)
{
	struct hy_map *map = new_map();
	struct hy_map_journal *j = open_ok(path, 1, map, NULL);
	struct hy_map_journal_record r = rec(HY_MJ_RELOCATE, 1, 500, 3, 900);

	CU_ASSERT_EQUAL(j->commit.written, 4);
	CU_ASSERT_EQUAL(hy_map_journal_append(j, &r), 0);
	hy_map_journal_close(j);
	hy_map_free(map);
	CU_ASSERT_EQUAL(file_size(path), 5 * REC);
	check_cut(path, 5, true);
}

static void test_torn_tail(void)
{
	char *dir = hy_test_tmpdir(), *path;
	unsigned char junk[REC];
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);

	/* The last record cut short in its middle. */
	write_five(path);
	CU_ASSERT_EQUAL(truncate(path, 4 * REC + REC / 2), 0);
	check_cut(path, 4, false);
	append_after_cut(path);

	/* The last record whole but garbage. */
	CU_ASSERT_EQUAL(unlink(path), 0);
	write_five(path);
	memset(junk, 0xa5, sizeof(junk));
	fd = open(path, O_WRONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pwrite(fd, junk, sizeof(junk), 4 * REC), REC);
	close(fd);
	check_cut(path, 4, false);
	append_after_cut(path);

	/* A bad record in the middle ends the journal there, the rest too. */
	CU_ASSERT_EQUAL(unlink(path), 0);
	write_five(path);
	fd = open(path, O_WRONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pwrite(fd, junk, 1, 2 * REC + 20), 1);
	close(fd);
	check_cut(path, 2, false);

	/* Only a fragment: everything goes. */
	CU_ASSERT_EQUAL(truncate(path, 10), 0);
	check_cut(path, 0, false);

	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

static void test_generations(void)
{
	char *dir = hy_test_tmpdir(), *path;
	struct hy_map *map = new_map(), *expect = new_map();
	struct hy_map_journal *j;
	struct hy_map_journal_record r;
	uint64_t replayed = 0, i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);

	/* Generation 7 and 8 records interleaved (by reopening). */
	for (i = 0; i < 6; i++) {
		uint64_t gen = i % 2 ? 8 : 7;
		struct hy_map *scratch = new_map();

		j = open_ok(path, gen, scratch, NULL);
		hy_map_free(scratch);
		/* The same blocks in both generations: they would collide. */
		r = rec(HY_MJ_RELOCATE, 3, (i / 2) * 10, 4, 50 + (i / 2) * 10);
		r.generation = 12345; /* ignored: the journal's generation wins */
		CU_ASSERT_EQUAL(hy_map_journal_append(j, &r), 0);
		hy_map_journal_close(j);
		if (gen == 7)
			CU_ASSERT_EQUAL(apply_direct(expect, &r), 0);
	}
	CU_ASSERT_EQUAL(file_size(path), 6 * REC);

	j = open_ok(path, 7, map, &replayed);
	CU_ASSERT_EQUAL(replayed, 3);
	CU_ASSERT_EQUAL(j->commit.written, 6); /* skipped, not cut */
	check_same(expect, map);
	hy_map_journal_close(j);
	CU_ASSERT_EQUAL(file_size(path), 6 * REC);
	hy_map_free(map);

	map = new_map();
	j = open_ok(path, 9, map, &replayed);
	CU_ASSERT_EQUAL(replayed, 0);
	CU_ASSERT_EQUAL(map_extents(map), 0);
	hy_map_journal_close(j);

	hy_map_free(map);
	hy_map_free(expect);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

static void test_refused(void)
{
	char *dir = hy_test_tmpdir(), *path;
	struct hy_map *map = new_map();
	struct hy_map_journal *j;
	struct hy_map_journal_record r = rec(HY_MJ_RELOCATE, 4, 0, 4, 100);
	struct hy_map_journal_record other = rec(HY_MJ_RELOCATE, 5, 0, 4, 102);
	struct hy_map_journal dummy;
	char why[512] = "";
	uint64_t replayed = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);

	/* The same relocation twice: the map says it is relocated already. */
	j = open_ok(path, 1, map, NULL);
	CU_ASSERT_EQUAL(hy_map_journal_append(j, &r), 0);
	CU_ASSERT_EQUAL(hy_map_journal_append(j, &r), 0);
	hy_map_journal_close(j);
	j = &dummy; /* must be reset */
	CU_ASSERT_EQUAL(
		hy_map_journal_open(path, 1, loaded_epoch, map, &j, &replayed, why, sizeof(why)),
		-EUCLEAN);
	CU_ASSERT_PTR_NULL(j);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, path));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "record 2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, strerror(EEXIST)));
	CU_ASSERT_EQUAL(file_size(path), 2 * REC); /* nothing cut */
	hy_map_free(map);

	/* Another file onto BOPT blocks in use. */
	CU_ASSERT_EQUAL(unlink(path), 0);
	map = new_map();
	j = open_ok(path, 1, map, NULL);
	CU_ASSERT_EQUAL(hy_map_journal_append(j, &r), 0);
	CU_ASSERT_EQUAL(hy_map_journal_append(j, &other), 0);
	hy_map_journal_close(j);
	why[0] = '\0';
	CU_ASSERT_EQUAL(hy_map_journal_open(path, 1, loaded_epoch, map, &j, NULL, why, sizeof(why)),
			-EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "record 2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, strerror(EBUSY)));

	hy_map_free(map);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

static void test_checkpoint(void)
{
	struct hy_map_journal_record ops[4 * N_EACH], more[3];
	char *dir = hy_test_tmpdir(), *path, *state_dir = NULL;
	struct hy_map *map = new_map(), *loaded = new_map(), *later;
	struct hy_state *state = NULL;
	struct hy_map_journal *j;
	uint64_t replayed = 99;
	char why[512] = "";
	size_t n, i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);
	CU_ASSERT_FATAL(asprintf(&state_dir, "%s/state", dir) > 0);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(state_dir, "/backing", false, &state, why, sizeof(why)),
			      0);

	n = make_ops(ops);
	j = open_ok(path, 11, map, NULL);
	for (i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(hy_map_journal_append(j, &ops[i]), 0);
		CU_ASSERT_EQUAL(apply_direct(map, &ops[i]), 0);
	}
	CU_ASSERT_EQUAL(file_size(path), (off_t)(n * REC));
	CU_ASSERT_EQUAL(hy_map_journal_checkpoint(j, map, state->db, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(file_size(path), 0);
	CU_ASSERT_EQUAL(j->commit.written, 0);
	CU_ASSERT_EQUAL(j->commit.durable, 0);
	hy_map_journal_close(j);

	/* Checkpoint plus the (empty) journal give the same map. */
	CU_ASSERT_EQUAL(hy_map_load(loaded, state->db, 11, &loaded_epoch, why, sizeof(why)), 0);
	j = open_ok(path, 11, loaded, &replayed);
	CU_ASSERT_EQUAL(replayed, 0);
	check_same(map, loaded);

	/* Changes after the checkpoint go to the journal, from its start. */
	more[0] = rec(HY_MJ_RELOCATE, 9, 0, 8, 5000);
	more[1] = rec(HY_MJ_DIRTY, 9, 2, 2, 0);
	more[2] = rec(HY_MJ_RELEASE, 1, 0, 3, 0);
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(hy_map_journal_append(j, &more[i]), 0);
		CU_ASSERT_EQUAL(apply_direct(map, &more[i]), 0);
	}
	hy_map_journal_close(j);
	CU_ASSERT_EQUAL(file_size(path), 3 * REC);
	later = new_map();
	CU_ASSERT_EQUAL(hy_map_load(later, state->db, 11, &loaded_epoch, why, sizeof(why)), 0);
	j = open_ok(path, 11, later, &replayed);
	CU_ASSERT_EQUAL(replayed, 3);
	check_same(map, later);
	hy_map_journal_close(j);

	hy_map_free(map);
	hy_map_free(loaded);
	hy_map_free(later);
	hy_state_close(state);
	free(state_dir);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

/* Record @k of the journal at @path, as its bytes. */
static void read_raw(const char *path, uint64_t k, unsigned char *buf)
{
	int fd = open(path, O_RDONLY);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, buf, REC, (off_t)(k * REC)), REC);
	close(fd);
}

static uint64_t raw_epoch(const char *path, uint64_t k)
{
	unsigned char buf[REC];

	memset(buf, 0xee, sizeof(buf));
	read_raw(path, k, buf);
	return le(buf + 5, 3);
}

static struct hy_state *open_state_in(const char *dir, char **state_dir)
{
	struct hy_state *state = NULL;
	char why[512] = "";

	CU_ASSERT_FATAL(asprintf(state_dir, "%s/state", dir) > 0);
	CU_ASSERT_EQUAL_FATAL(
		hy_state_open(*state_dir, "/backing", false, &state, why, sizeof(why)), 0);
	return state;
}

/* A checkpoint's save commits, and the daemon dies before the journal is
 * emptied: the journal's records (of the old epoch) are in the saved map
 * already, and replaying them onto it would relocate blocks twice. */
static void test_checkpoint_crash(void)
{
	struct hy_map_journal_record ops[4 * N_EACH + 2], more[4];
	char *dir = hy_test_tmpdir(), *path, *state_dir = NULL;
	struct hy_map *map = new_map(), *scratch = new_map(), *old = new_map();
	struct hy_map *loaded = new_map(), *later = new_map(), *last = new_map();
	struct hy_state *state;
	struct hy_map_journal *j;
	uint64_t replayed = 99;
	uint32_t epoch = 99;
	int64_t stamp = 0;
	char why[512] = "";
	size_t n, i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);
	state = open_state_in(dir, &state_dir);

	n = make_ops(ops);
	ops[n++] = rec(HY_MJ_STAMP, 1, 111, 0, 0);
	ops[n++] = rec(HY_MJ_STAMP, 2, 222, 0, 0);
	j = open_at(path, 11, 0, scratch, &replayed);
	CU_ASSERT_EQUAL(replayed, 0);
	CU_ASSERT_EQUAL(j->epoch, 0);
	for (i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(hy_map_journal_append(j, &ops[i]), 0);
		CU_ASSERT_EQUAL(apply_direct(map, &ops[i]), 0);
	}
	/* The checkpoint's save, with the next epoch... */
	CU_ASSERT_EQUAL(hy_map_save(map, state->db, 11, j->epoch + 1, why, sizeof(why)), 0);
	/* ... and the crash: the journal is never emptied. */
	hy_map_journal_close(j);
	CU_ASSERT_EQUAL(file_size(path), (off_t)(n * REC));
	CU_ASSERT_EQUAL(raw_epoch(path, 0), 0);
	CU_ASSERT_EQUAL(raw_epoch(path, n - 1), 0);

	/* The records are all there: after the previous checkpoint (epoch
	 * 0) they replay to the same map. */
	j = open_at(path, 11, 0, old, &replayed);
	CU_ASSERT_EQUAL(replayed, n);
	check_same(map, old);
	hy_map_journal_close(j);

	/* After the new one, none of them replays: the saved map has them. */
	CU_ASSERT_EQUAL(hy_map_load(loaded, state->db, 11, &epoch, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(epoch, 1);
	j = open_at(path, 11, epoch, loaded, &replayed);
	CU_ASSERT_EQUAL(replayed, 0);
	CU_ASSERT_EQUAL(j->epoch, 1);
	CU_ASSERT_EQUAL(j->commit.written, n); /* skipped, not cut */
	CU_ASSERT_EQUAL(file_size(path), (off_t)(n * REC));
	check_same(map, loaded);
	CU_ASSERT_EQUAL(hy_map_get_stamp(loaded, 2, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, 222);

	/* Changes from now on carry the new epoch, after the old records. */
	more[0] = rec(HY_MJ_RELOCATE, 9, 0, 8, 5000);
	more[1] = rec(HY_MJ_STAMP, 9, 999, 0, 0);
	more[2] = rec(HY_MJ_DIRTY, 9, 2, 2, 0);
	more[3] = rec(HY_MJ_RELEASE, 1, 0, 3, 0);
	for (i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(hy_map_journal_append(j, &more[i]), 0);
		CU_ASSERT_EQUAL(apply_direct(map, &more[i]), 0);
	}
	CU_ASSERT_EQUAL(j->commit.written, n + 4);
	hy_map_journal_close(j);
	CU_ASSERT_EQUAL(file_size(path), (off_t)((n + 4) * REC));
	CU_ASSERT_EQUAL(raw_epoch(path, n - 1), 0);
	CU_ASSERT_EQUAL(raw_epoch(path, n), 1);
	CU_ASSERT_EQUAL(raw_epoch(path, n + 3), 1);

	/* Exactly those replay onto the saved map. */
	epoch = 99;
	CU_ASSERT_EQUAL(hy_map_load(later, state->db, 11, &epoch, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(epoch, 1);
	j = open_at(path, 11, epoch, later, &replayed);
	CU_ASSERT_EQUAL(replayed, 4);
	CU_ASSERT_EQUAL(j->commit.written, n + 4);
	check_same(map, later);
	CU_ASSERT_EQUAL(hy_map_get_stamp(later, 9, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, 999);

	/* A checkpoint that completes: epoch 2, and the journal empty. */
	CU_ASSERT_EQUAL(hy_map_journal_checkpoint(j, later, state->db, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(j->epoch, 2);
	CU_ASSERT_EQUAL(j->commit.written, 0);
	CU_ASSERT_EQUAL(file_size(path), 0);
	hy_map_journal_close(j);
	CU_ASSERT_EQUAL(hy_map_load(last, state->db, 11, &epoch, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(epoch, 2);
	j = open_at(path, 11, epoch, last, &replayed);
	CU_ASSERT_EQUAL(replayed, 0);
	check_same(map, last);
	hy_map_journal_close(j);

	hy_map_free(map);
	hy_map_free(scratch);
	hy_map_free(old);
	hy_map_free(loaded);
	hy_map_free(later);
	hy_map_free(last);
	hy_state_close(state);
	free(state_dir);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

/* write() without waiting, then one wait for the last ticket. */
static void test_write_wait(void)
{
	char *dir = hy_test_tmpdir(), *path;
	struct hy_map *map = new_map(), *direct = new_map(), *back = new_map(), *other = new_map();
	struct hy_map_journal_record r[3], bad = rec((enum hy_map_journal_type)0, 3, 0, 1, 0);
	struct hy_map_journal *j;
	unsigned char raw[REC];
	uint64_t t[3] = {0, 0, 0}, tb = 77, replayed = 99;
	int64_t stamp = 0;
	int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);
	r[0] = rec(HY_MJ_RELOCATE, 3, 0, 4, 100);
	r[1] = rec(HY_MJ_DIRTY, 3, 1, 2, 0);
	r[2] = rec(HY_MJ_STAMP, 3, 4242, 0, 0);

	j = open_at(path, 6, 0x123456, map, &replayed);
	CU_ASSERT_EQUAL(replayed, 0);
	for (i = 0; i < 3; i++) {
		r[i].epoch = 7; /* the journal's epoch wins */
		CU_ASSERT_EQUAL(hy_map_journal_write(j, &r[i], &t[i]), 0);
		CU_ASSERT_EQUAL(apply_direct(direct, &r[i]), 0);
	}
	CU_ASSERT_EQUAL(t[0], 1);
	CU_ASSERT_EQUAL(t[1], 2);
	CU_ASSERT_EQUAL(t[2], 3);
	CU_ASSERT_EQUAL(j->commit.written, 3);
	CU_ASSERT_EQUAL(j->commit.durable, 0); /* nobody waited: not synced yet */
	CU_ASSERT_EQUAL(file_size(path), 3 * REC);
	CU_ASSERT_EQUAL(hy_map_journal_wait(j, t[2]), 0);
	CU_ASSERT(j->commit.durable >= j->commit.written);
	CU_ASSERT_EQUAL(j->commit.durable, 3);
	CU_ASSERT_EQUAL(j->commit.syncing, false);
	CU_ASSERT_EQUAL(j->error, 0);
	/* Earlier tickets are durable already. */
	CU_ASSERT_EQUAL(hy_map_journal_wait(j, t[0]), 0);
	CU_ASSERT_EQUAL(hy_map_journal_wait(j, 0), 0);
	/* A bad type takes no ticket and writes nothing. */
	CU_ASSERT_EQUAL(hy_map_journal_write(j, &bad, &tb), -EINVAL);
	CU_ASSERT_EQUAL(tb, 77);
	CU_ASSERT_EQUAL(j->commit.written, 3);
	hy_map_journal_close(j);
	CU_ASSERT_EQUAL(file_size(path), 3 * REC);

	/* The bytes: the journal's generation and epoch (little-endian). */
	for (i = 0; i < 3; i++) {
		read_raw(path, (uint64_t)i, raw);
		CU_ASSERT_EQUAL(raw[4], r[i].type);
		CU_ASSERT_EQUAL(raw[5], 0x56);
		CU_ASSERT_EQUAL(raw[6], 0x34);
		CU_ASSERT_EQUAL(raw[7], 0x12);
		CU_ASSERT_EQUAL(le(raw + 8, 8), 6);
		CU_ASSERT_EQUAL(le(raw + 16, 8), 3);
	}
	CU_ASSERT_EQUAL(le(raw + 24, 8), 4242); /* the stamp is in the block field */

	j = open_at(path, 6, 0x123456, back, &replayed);
	CU_ASSERT_EQUAL(replayed, 3);
	check_same(direct, back);
	CU_ASSERT_EQUAL(hy_map_get_stamp(back, 3, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, 4242);
	CU_ASSERT_EQUAL(map_extents(back), 3); /* 0, 1-2 dirty, 3 */
	hy_map_journal_close(j);

	/* After another checkpoint (epoch) none of them replays. */
	j = open_at(path, 6, 0x123457, other, &replayed);
	CU_ASSERT_EQUAL(replayed, 0);
	CU_ASSERT_EQUAL(map_extents(other), 0);
	hy_map_journal_close(j);

	hy_map_free(map);
	hy_map_free(direct);
	hy_map_free(back);
	hy_map_free(other);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

/* Epochs are 24 bits: the checkpoint after 0xffffff is 0. */
static void test_epoch_wrap(void)
{
	char *dir = hy_test_tmpdir(), *path, *state_dir = NULL;
	struct hy_map *map = new_map(), *back = new_map(), *fresh = new_map();
	struct hy_map_journal_record r1 = rec(HY_MJ_RELOCATE, 1, 0, 2, 10);
	struct hy_map_journal_record r2 = rec(HY_MJ_RELOCATE, 1, 2, 2, 12);
	struct hy_state *state;
	struct hy_map_journal *j;
	unsigned char raw[REC];
	uint64_t replayed = 99;
	uint32_t epoch = 99;
	char why[512] = "";

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);
	state = open_state_in(dir, &state_dir);

	j = open_at(path, 3, HY_MAP_EPOCH_MASK, map, &replayed);
	CU_ASSERT_EQUAL(j->epoch, 0xffffff);
	CU_ASSERT_EQUAL(hy_map_journal_append(j, &r1), 0);
	CU_ASSERT_EQUAL(apply_direct(map, &r1), 0);
	read_raw(path, 0, raw);
	CU_ASSERT_EQUAL(raw[5], 0xff);
	CU_ASSERT_EQUAL(raw[6], 0xff);
	CU_ASSERT_EQUAL(raw[7], 0xff);
	CU_ASSERT_EQUAL(raw[8], 3); /* the generation starts after the epoch */

	CU_ASSERT_EQUAL(hy_map_journal_checkpoint(j, map, state->db, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(j->epoch, 0);
	CU_ASSERT_EQUAL(file_size(path), 0);
	CU_ASSERT_EQUAL(hy_map_journal_append(j, &r2), 0);
	CU_ASSERT_EQUAL(apply_direct(map, &r2), 0);
	CU_ASSERT_EQUAL(raw_epoch(path, 0), 0);
	hy_map_journal_close(j);

	CU_ASSERT_EQUAL(hy_map_load(back, state->db, 3, &epoch, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(epoch, 0);
	CU_ASSERT_EQUAL(map_extents(back), 1); /* blocks 0-1, from the checkpoint */
	j = open_at(path, 3, epoch, back, &replayed);
	CU_ASSERT_EQUAL(replayed, 1);
	check_same(map, back);
	hy_map_journal_close(j);

	/* An epoch of more than 24 bits is taken modulo 2^24. */
	j = open_at(path, 3, 0x1000000, fresh, &replayed);
	CU_ASSERT_EQUAL(j->epoch, 0);
	CU_ASSERT_EQUAL(replayed, 1);
	hy_map_journal_close(j);

	hy_map_free(map);
	hy_map_free(back);
	hy_map_free(fresh);
	hy_state_close(state);
	free(state_dir);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

/* Stamp records set a file's stamp, or do nothing when it has no extents
 * (released since, or never relocated). */
static void test_stamp_records(void)
{
	const int64_t big = 0x1122334455667788LL, negative = -1000;
	struct hy_map_journal_record ops[] = {
		rec(HY_MJ_RELOCATE, 4, 0, 4, 100),
		rec(HY_MJ_STAMP, 4, (uint64_t)big, 0, 0),
		rec(HY_MJ_STAMP, 5, 77, 0, 0), /* file 5 has no extents */
		rec(HY_MJ_RELOCATE, 6, 0, 2, 200),
		rec(HY_MJ_STAMP, 6, 50, 0, 0),
		rec(HY_MJ_RELEASE, 6, 0, 2, 0),
		rec(HY_MJ_STAMP, 6, 60, 0, 0), /* file 6 has none any more */
		rec(HY_MJ_RELOCATE, 8, 0, 1, 300),
		rec(HY_MJ_STAMP, 8, (uint64_t)negative, 0, 0),
	};
	const size_t n = sizeof(ops) / sizeof(ops[0]);
	char *dir = hy_test_tmpdir(), *path;
	struct hy_map *scratch = new_map(), *direct = new_map(), *map = new_map();
	struct hy_map_journal *j;
	struct hy_map_stats st;
	unsigned char raw[REC];
	uint64_t replayed = 99;
	int64_t stamp = 0;
	size_t i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);
	j = open_at(path, 1, 0, scratch, NULL);
	for (i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(hy_map_journal_append(j, &ops[i]), 0);
		CU_ASSERT_EQUAL(apply_direct(direct, &ops[i]), 0);
	}
	hy_map_journal_close(j);
	read_raw(path, 1, raw);
	CU_ASSERT_EQUAL(raw[4], HY_MJ_STAMP);
	CU_ASSERT_EQUAL(le(raw + 16, 8), 4);
	CU_ASSERT_EQUAL(le(raw + 24, 8), (uint64_t)big);
	CU_ASSERT_EQUAL(le(raw + 32, 8), 0);
	CU_ASSERT_EQUAL(le(raw + 40, 4), 0);

	j = open_at(path, 1, 0, map, &replayed);
	CU_ASSERT_EQUAL(replayed, n); /* the moot ones were replayed too */
	CU_ASSERT_EQUAL(j->commit.written, n);
	CU_ASSERT_EQUAL(hy_map_get_stamp(map, 4, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, big);
	CU_ASSERT_EQUAL(hy_map_get_stamp(map, 8, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, negative);
	CU_ASSERT_EQUAL(hy_map_get_stamp(map, 5, &stamp), -ENOENT);
	CU_ASSERT_EQUAL(hy_map_get_stamp(map, 6, &stamp), -ENOENT);
	hy_map_get_stats(map, &st);
	CU_ASSERT_EQUAL(st.files, 2);
	CU_ASSERT_EQUAL(st.blocks, 5);
	check_same(direct, map);
	hy_map_journal_close(j);

	hy_map_free(scratch);
	hy_map_free(direct);
	hy_map_free(map);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

#define THREADS	   8
#define PER_THREAD 2000

struct appender {
	struct hy_map_journal *j;
	uint64_t t;
	int failures;
};

static void *append_many(void *arg)
{
	struct appender *a = arg;
	uint64_t i;

	for (i = 0; i < PER_THREAD; i++) {
		/* Blocks 2i apart: no two records' extents merge. */
		struct hy_map_journal_record r =
			rec(HY_MJ_RELOCATE, 100 + a->t, 2 * i, 1, a->t * 2 * PER_THREAD + 2 * i);

		if (hy_map_journal_append(a->j, &r) != 0)
			a->failures++;
	}
	return NULL;
}

/* A ticket taken before a checkpoint and waited for after it (fsync of a
 * file while the cleaner checkpoints): the checkpoint holds its record, so
 * the wait returns at once. It used to sync for ever, the count having
 * restarted below the ticket, and the next checkpoint's reset waited on
 * that sync (the soak test's hang). */
static void test_ticket_before_checkpoint(void)
{
	char *dir = hy_test_tmpdir(), *path, *state_dir = NULL;
	struct hy_map *map = new_map();
	struct hy_state *state;
	struct hy_map_journal *j;
	struct hy_map_journal_record r = rec(HY_MJ_RELOCATE, 3, 0, 4, 100);
	uint64_t ticket = 0;
	char why[512] = "";

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);
	state = open_state_in(dir, &state_dir);
	j = open_ok(path, 11, map, NULL);
	for (int i = 0; i < 5; i++) {
		r.block = (uint64_t)i * 4;
		r.bopt_block = 100 + (uint64_t)i * 4;
		CU_ASSERT_EQUAL(hy_map_journal_write(j, &r, &ticket), 0);
		CU_ASSERT_EQUAL(apply_direct(map, &r), 0);
	}
	CU_ASSERT_EQUAL(ticket, 5);
	CU_ASSERT_EQUAL(hy_map_journal_checkpoint(j, map, state->db, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(j->commit.written, 0);
	CU_ASSERT_EQUAL(hy_map_journal_wait(j, ticket), 0);
	/* ... and after new records the count is one of the new file */
	r.type = HY_MJ_DIRTY;
	r.block = 0;
	r.nblocks = 1;
	CU_ASSERT_EQUAL(hy_map_journal_write(j, &r, &ticket), 0);
	CU_ASSERT_EQUAL(ticket, 1);
	CU_ASSERT_EQUAL(hy_map_journal_wait(j, ticket), 0);
	CU_ASSERT_EQUAL(j->commit.durable, 1);
	hy_map_journal_close(j);
	hy_map_free(map);
	hy_state_close(state);
	hy_test_rmtree(dir);
	free(dir);
	free(path);
	free(state_dir);
}

static void test_group_commit(void)
{
	char *dir = hy_test_tmpdir(), *path;
	struct hy_map *map = new_map();
	struct hy_map_journal *j;
	struct appender a[THREADS];
	pthread_t tid[THREADS];
	struct hy_map_stats st;
	uint64_t replayed = 0;
	int t, failures = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = journal_path(dir);
	j = open_ok(path, 2, map, NULL);
	for (t = 0; t < THREADS; t++) {
		a[t].j = j;
		a[t].t = (uint64_t)t;
		a[t].failures = 0;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[t], NULL, append_many, &a[t]), 0);
	}
	for (t = 0; t < THREADS; t++) {
		pthread_join(tid[t], NULL);
		failures += a[t].failures;
	}
	CU_ASSERT_EQUAL(failures, 0);
	CU_ASSERT_EQUAL(j->commit.written, THREADS * PER_THREAD);
	CU_ASSERT_EQUAL(j->commit.durable, THREADS * PER_THREAD);
	CU_ASSERT_EQUAL(j->commit.syncing, false);
	CU_ASSERT_EQUAL(j->error, 0);
	hy_map_journal_close(j);
	CU_ASSERT_EQUAL(file_size(path), (off_t)THREADS * PER_THREAD * REC);

	j = open_ok(path, 2, map, &replayed);
	CU_ASSERT_EQUAL(replayed, THREADS * PER_THREAD);
	hy_map_get_stats(map, &st);
	CU_ASSERT_EQUAL(st.files, THREADS);
	CU_ASSERT_EQUAL(st.extents, THREADS * PER_THREAD);
	CU_ASSERT_EQUAL(st.blocks, THREADS * PER_THREAD);
	hy_map_journal_close(j);

	hy_map_free(map);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

int hy_test_add_map_journal(void)
{
	CU_pSuite s = CU_add_suite("map_journal", NULL, NULL);

	if (!s)
		return -1;
	if (!CU_add_test(s, "record layout and round trip", test_layout) ||
	    !CU_add_test(s, "decode refuses damage", test_decode_refuses) ||
	    !CU_add_test(s, "replay equals the direct map", test_replay_equals_direct) ||
	    !CU_add_test(s, "torn tail cut", test_torn_tail) ||
	    !CU_add_test(s, "other generations skipped", test_generations) ||
	    !CU_add_test(s, "a refused record is EUCLEAN", test_refused) ||
	    !CU_add_test(s, "checkpoint into SQLite", test_checkpoint) ||
	    !CU_add_test(s, "crash inside a checkpoint", test_checkpoint_crash) ||
	    !CU_add_test(s, "write, then wait for the ticket", test_write_wait) ||
	    !CU_add_test(s, "epochs wrap at 24 bits", test_epoch_wrap) ||
	    !CU_add_test(s, "stamp records", test_stamp_records) ||
	    !CU_add_test(s, "a ticket from before a checkpoint", test_ticket_before_checkpoint) ||
	    !CU_add_test(s, "group commit, 8 threads", test_group_commit))
		return -1;
	return 0;
}
