/* test_engine.c - the engine over the device layer: requests reach the
 * device named by the operations table, and every device counts them; reads
 * through the indirection map, stamps that drop the copies of a file
 * changed outside the mount, and the gates. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"
#include "suites.h"

/* A device that keeps one object in memory and returns short transfers,
 * the way a model or a fault injector plugs in. */
struct memory_device {
	char data[1 << 18];
	size_t size;
	int syncs;
};

static ssize_t mem_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	struct memory_device *m = dev->priv;

	if ((size_t)off >= m->size)
		return 0;
	if (len > m->size - (size_t)off)
		len = m->size - (size_t)off;
	if (len > 1000)
		len = 1000; /* short transfers: the device layer must loop */
	memcpy(buf, m->data + off, len);
	return (ssize_t)len;
}

static ssize_t mem_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			 off_t off)
{
	struct memory_device *m = dev->priv;

	if ((size_t)off + len > sizeof(m->data))
		return -ENOSPC;
	if (len > 1000)
		len = 1000;
	memcpy(m->data + off, buf, len);
	if ((size_t)off + len > m->size)
		m->size = (size_t)off + len;
	return (ssize_t)len;
}

static int mem_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	((struct memory_device *)dev->priv)->syncs++;
	return 0;
}

static int mem_truncate(struct hy_device *dev, int64_t object, off_t size)
{
	struct memory_device *m = dev->priv;

	if ((size_t)size > sizeof(m->data))
		return -EFBIG;
	if ((size_t)size > m->size)
		memset(m->data + m->size, 0, (size_t)size - m->size);
	m->size = (size_t)size;
	return 0;
}

static void mem_destroy(struct hy_device *dev)
{
	free(dev->priv);
}

static const struct hy_device_ops memory_ops = {
	.read = mem_read,
	.write = mem_write,
	.sync = mem_sync,
	.truncate = mem_truncate,
	.destroy = mem_destroy,
};

static void test_engine_over_model(void)
{
	struct memory_device *m = calloc(1, sizeof(*m));
	struct hy_device *dev;
	struct hy_engine *engine;
	struct hy_engine_file file;
	struct hy_device_stats stats;
	char in[5000], out[6000];

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_EQUAL_FATAL(hy_device_new("memory", &memory_ops, m, &dev), 0);
	CU_ASSERT_EQUAL_FATAL(hy_engine_new(dev, &engine), 0);
	hy_engine_file_init(engine, &file, 0);
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (char)(i % 251);
	CU_ASSERT_EQUAL(hy_engine_write(engine, &file, in, sizeof(in), 100), (ssize_t)sizeof(in));
	CU_ASSERT_EQUAL(hy_engine_read(engine, &file, out, sizeof(out), 100), (ssize_t)sizeof(in));
	CU_ASSERT_EQUAL(memcmp(in, out, sizeof(in)), 0);
	CU_ASSERT_EQUAL(hy_engine_truncate(engine, &file, 50), 0);
	CU_ASSERT_EQUAL(hy_engine_read(engine, &file, out, sizeof(out), 0), 50);
	CU_ASSERT_EQUAL(hy_engine_fsync(engine, &file, true), 0);
	CU_ASSERT_EQUAL(m->syncs, 1);
	CU_ASSERT_EQUAL(hy_engine_fallocate(engine, &file, 0, 0, 10), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(hy_engine_write(engine, &file, in, 10, sizeof(m->data)), -ENOSPC);
	hy_device_get_stats(dev, &stats);
	CU_ASSERT_EQUAL(stats.reads, 2);
	CU_ASSERT_EQUAL(stats.writes, 2);
	CU_ASSERT_EQUAL(stats.bytes_written, sizeof(in));
	CU_ASSERT_EQUAL(stats.bytes_read, sizeof(in) + 50);
	CU_ASSERT_EQUAL(stats.syncs, 1);
	CU_ASSERT_EQUAL(stats.errors, 1);
	hy_engine_free(engine);
	hy_device_free(dev);
}

static void test_engine_over_file(void)
{
	char *tmp = hy_test_tmpdir(), path[512], buf[64];
	struct hy_device *dev;
	struct hy_engine *engine;
	struct hy_engine_file file, copy;
	int fd, fd2;

	snprintf(path, sizeof(path), "%s/f", tmp);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	snprintf(path, sizeof(path), "%s/g", tmp);
	fd2 = open(path, O_CREAT | O_RDWR, 0600);
	CU_ASSERT_FATAL(fd >= 0 && fd2 >= 0);
	CU_ASSERT_EQUAL_FATAL(hy_device_file_new("backing", &dev), 0);
	CU_ASSERT_EQUAL_FATAL(hy_engine_new(dev, &engine), 0);
	hy_engine_file_init(engine, &file, fd);
	hy_engine_file_init(engine, &copy, fd2);
	CU_ASSERT_EQUAL(hy_engine_write(engine, &file, "hello world", 11, 4096), 11);
	CU_ASSERT_EQUAL(hy_engine_read(engine, &file, buf, sizeof(buf), 4090), 17);
	CU_ASSERT_EQUAL(memcmp(buf, "\0\0\0\0\0\0hello world", 17), 0);
	CU_ASSERT_EQUAL(hy_engine_fallocate(engine, &file, 0, 0, 1 << 20), 0);
	CU_ASSERT_EQUAL(lseek(fd, 0, SEEK_END), 1 << 20);
	CU_ASSERT_EQUAL(hy_engine_copy_range(engine, &file, 4096, &copy, 0, 11, 0), 11);
	CU_ASSERT_EQUAL(pread(fd2, buf, sizeof(buf), 0), 11);
	CU_ASSERT_EQUAL(memcmp(buf, "hello world", 11), 0);
	CU_ASSERT_EQUAL(hy_engine_truncate(engine, &file, 4097), 0);
	CU_ASSERT_EQUAL(hy_engine_read(engine, &file, buf, sizeof(buf), 4096), 1);
	CU_ASSERT_EQUAL(hy_engine_fsync(engine, &file, false), 0);
	CU_ASSERT_EQUAL(hy_engine_read(engine, &file, buf, 1, -1), -EINVAL);
	hy_engine_free(engine);
	hy_device_free(dev);
	close(fd);
	close(fd2);
	hy_test_rmtree(tmp);
	free(tmp);
}

/* BORG's indirection map in the read path: relocated blocks come from the
 * BOPT device, adjacent ones in one request; the rest from home. */
static void fill(struct memory_device *m, size_t off, size_t len, char c)
{
	memset(m->data + off, c, len);
	if (off + len > m->size)
		m->size = off + len;
}

static void test_engine_reads_through_map(void)
{
	struct memory_device *home = calloc(1, sizeof(*home)), *bm = calloc(1, sizeof(*bm));
	struct hy_device *backing, *bopt;
	struct hy_engine *engine;
	struct hy_engine_file file;
	struct hy_device_stats hs, bs;
	struct hy_map *map;
	struct hy_map_stats ms;
	struct hy_map_extent e1 = {.file_id = 7, .block = 2, .nblocks = 4, .bopt_block = 10};
	struct hy_map_extent e2 = {.file_id = 7, .block = 8, .nblocks = 1, .bopt_block = 20};
	const size_t B = 4096, base = 4096; /* read region starts after the header */
	static char out[12 * 4096];

	CU_ASSERT_PTR_NOT_NULL_FATAL(home);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bm);
	fill(home, 0, 12 * B, 'h');
	fill(bm, 0, base + 24 * B, '?');
	fill(bm, base + 10 * B, 4 * B, 'b'); /* the copies of blocks 2-5 */
	fill(bm, base + 20 * B, B, 'c');     /* the copy of block 8 */
	CU_ASSERT_EQUAL_FATAL(hy_device_new("home", &memory_ops, home, &backing), 0);
	CU_ASSERT_EQUAL_FATAL(hy_device_new("bopt", &memory_ops, bm, &bopt), 0);
	CU_ASSERT_EQUAL_FATAL(hy_engine_new(backing, &engine), 0);
	CU_ASSERT_EQUAL_FATAL(hy_map_new(&map), 0);
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e1), 0);
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e2), 0);
	hy_engine_set_bopt(engine, map, bopt, base, NULL);
	hy_engine_file_init(engine, &file, 0);

	/* a file without an id is never relocated: all from home */
	CU_ASSERT_EQUAL(hy_engine_read(engine, &file, out, 12 * B, 0), (ssize_t)(12 * B));
	CU_ASSERT_EQUAL(out[3 * B], 'h');
	hy_device_get_stats(bopt, &bs);
	CU_ASSERT_EQUAL(bs.reads, 0);

	/* blocks 0-1 home, 2-5 BOPT (one request), 6-7 home, 8 BOPT, 9-11 home */
	hy_engine_file_set_id(&file, 7);
	hy_device_get_stats(backing, &hs);
	CU_ASSERT_EQUAL(hy_engine_read(engine, &file, out, 12 * B, 0), (ssize_t)(12 * B));
	for (size_t blk = 0; blk < 12; blk++) {
		char want = blk >= 2 && blk <= 5 ? 'b' : blk == 8 ? 'c' : 'h';

		CU_ASSERT_EQUAL(out[blk * B], want);
		CU_ASSERT_EQUAL(out[blk * B + B - 1], want);
	}
	hy_device_get_stats(bopt, &bs);
	CU_ASSERT_EQUAL(bs.reads, 2);
	CU_ASSERT_EQUAL(bs.bytes_read, 5 * B);
	{
		struct hy_device_stats after;

		hy_device_get_stats(backing, &after);
		CU_ASSERT_EQUAL(after.reads - hs.reads, 3);
	}

	/* an unaligned read inside a relocated block */
	fill(bm, base + 11 * B + 100, 50, 'x');
	CU_ASSERT_EQUAL(hy_engine_read(engine, &file, out, 50, (off_t)(3 * B + 100)), 50);
	CU_ASSERT_EQUAL(memcmp(out, "xxxxx", 5), 0);

	/* a write to block 3 sends it home for good: written there, released */
	memset(out, 'w', B);
	CU_ASSERT_EQUAL(hy_engine_write(engine, &file, out, B, (off_t)(3 * B)), (ssize_t)B);
	CU_ASSERT_EQUAL(hy_engine_read(engine, &file, out, 3 * B, (off_t)(2 * B)),
			(ssize_t)(3 * B));
	CU_ASSERT_EQUAL(out[0], 'b');
	CU_ASSERT_EQUAL(out[B], 'w');
	CU_ASSERT_EQUAL(out[2 * B], 'b');
	hy_map_get_stats(map, &ms);
	CU_ASSERT_EQUAL(ms.blocks, 4); /* 2, 4, 5 and 8 */

	/* truncating to the middle of block 4 releases 4 and everything after */
	CU_ASSERT_EQUAL(hy_engine_truncate(engine, &file, (off_t)(4 * B + 10)), 0);
	hy_map_get_stats(map, &ms);
	CU_ASSERT_EQUAL(ms.blocks, 1); /* block 2 */
	CU_ASSERT_EQUAL(hy_engine_read(engine, &file, out, 2 * B, (off_t)(4 * B)), 10);

	hy_map_free(map);
	hy_engine_free(engine);
	hy_device_free(bopt);
	hy_device_free(backing);
}

/* ---- stamps: copies of files changed outside the mount --------------- */

/* A device with a few objects whose change stamp moves with every change
 * made through it, like a file's ctime; the test changes an object "from
 * outside" with outside_write(). Writes are short, like memory_device's. */
#define STAMPED_OBJECTS 4
#define STAMPED_SIZE	(16 * 4096)

struct stamped_device {
	struct stamped_object {
		char data[STAMPED_SIZE];
		size_t size;
		int64_t stamp;
		int64_t mtime_ns;
	} obj[STAMPED_OBJECTS];
	int64_t clock; /* the last stamp given */
	int stamp_calls;
};

static struct stamped_object *object_of(struct hy_device *dev, int64_t object)
{
	struct stamped_device *m = dev->priv;

	return object >= 0 && object < STAMPED_OBJECTS ? &m->obj[object] : NULL;
}

static void touch(struct stamped_device *m, struct stamped_object *o)
{
	o->stamp = ++m->clock;
}

static ssize_t st_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	struct stamped_object *o = object_of(dev, object);

	if (!o || off < 0)
		return -EBADF;
	if ((size_t)off >= o->size)
		return 0;
	if (len > o->size - (size_t)off)
		len = o->size - (size_t)off;
	memcpy(buf, o->data + off, len);
	return (ssize_t)len;
}

static ssize_t st_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			off_t off)
{
	struct stamped_object *o = object_of(dev, object);

	if (!o || off < 0)
		return -EBADF;
	if ((size_t)off + len > STAMPED_SIZE)
		return -ENOSPC;
	if (len > 1000)
		len = 1000;
	memcpy(o->data + off, buf, len);
	if ((size_t)off + len > o->size)
		o->size = (size_t)off + len;
	touch(dev->priv, o);
	return (ssize_t)len;
}

static int st_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	return object_of(dev, object) ? 0 : -EBADF;
}

static int st_truncate(struct hy_device *dev, int64_t object, off_t size)
{
	struct stamped_object *o = object_of(dev, object);

	if (!o)
		return -EBADF;
	if (size < 0 || (size_t)size > STAMPED_SIZE)
		return -EFBIG;
	if ((size_t)size > o->size)
		memset(o->data + o->size, 0, (size_t)size - o->size);
	o->size = (size_t)size;
	touch(dev->priv, o);
	return 0;
}

static int st_allocate(struct hy_device *dev, int64_t object, int mode, off_t off, off_t len)
{
	struct stamped_object *o = object_of(dev, object);

	if (!o)
		return -EBADF;
	if (off < 0 || len <= 0 || (size_t)(off + len) > STAMPED_SIZE)
		return -EINVAL;
	if ((size_t)(off + len) > o->size) {
		memset(o->data + o->size, 0, (size_t)(off + len) - o->size);
		o->size = (size_t)(off + len);
	}
	touch(dev->priv, o);
	return 0;
}

static int st_getattr(struct hy_device *dev, int64_t object, struct hy_device_attr *out)
{
	struct stamped_object *o = object_of(dev, object);

	((struct stamped_device *)dev->priv)->stamp_calls++;
	if (!o)
		return -EBADF;
	out->stamp = o->stamp;
	out->mtime_ns = o->mtime_ns;
	out->size = o->size;
	return 0;
}

static int st_set_mtime(struct hy_device *dev, int64_t object, int64_t mtime_ns)
{
	struct stamped_object *o = object_of(dev, object);

	if (!o)
		return -EBADF;
	/* like a file's: the change time moves too */
	o->mtime_ns = mtime_ns >= 0 ? mtime_ns : o->stamp + 1;
	touch(dev->priv, o);
	return 0;
}

static void st_destroy(struct hy_device *dev)
{
	free(dev->priv);
}

static const struct hy_device_ops stamped_ops = {
	.read = st_read,
	.write = st_write,
	.sync = st_sync,
	.truncate = st_truncate,
	.allocate = st_allocate,
	.getattr = st_getattr,
	.set_mtime = st_set_mtime,
	.destroy = st_destroy,
};

/* A change made behind the mount's back: the data and the stamp move. */
static void outside_write(struct stamped_device *m, int object, size_t off, size_t len, char c)
{
	struct stamped_object *o = &m->obj[object];

	memset(o->data + off, c, len);
	if (off + len > o->size)
		o->size = off + len;
	touch(m, o);
}

/* The fixture: file 7 is object 1 of the home device, 12 blocks, block i
 * filled with 'A' + i; its blocks 2-5 are copied to BOPT blocks 10-13 and
 * block 8 to BOPT block 20, the copies filled with 'a' + i (so that a read
 * shows where each block came from), under the home object's stamp. */
#define FX_FILE	  7
#define FX_OBJECT 1
#define FX_BLOCKS 12
#define FX_BASE	  4096 /* read region after the BOPT's header */
#define BLK	  4096

struct fixture {
	struct stamped_device *home;
	struct memory_device *bm;
	struct hy_device *backing, *bopt;
	struct hy_engine *engine;
	struct hy_map *map;
	struct hy_engine_file file;
	char *dir, *journal_path;
	struct hy_map_journal *journal;
};

static const struct {
	uint64_t block;
	uint32_t nblocks;
	uint64_t bopt_block;
} fx_extents[] = {{2, 4, 10}, {8, 1, 20}};

/* Sets up the fixture; @ops is the home device's table, @with_journal
 * gives the engine a map journal, @stamp is the stamp the copies are made
 * under (the home object's when @stamp is -1). */
static void fx_setup(struct fixture *fx, const struct hy_device_ops *ops, bool with_journal,
		     int64_t stamp)
{
	size_t i;

	memset(fx, 0, sizeof(*fx));
	fx->home = calloc(1, sizeof(*fx->home));
	fx->bm = calloc(1, sizeof(*fx->bm));
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx->home);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fx->bm);
	for (i = 0; i < FX_BLOCKS; i++)
		outside_write(fx->home, FX_OBJECT, i * BLK, BLK, (char)('A' + i));
	fill(fx->bm, 0, FX_BASE + 24 * BLK, '?');
	for (i = 0; i < sizeof(fx_extents) / sizeof(fx_extents[0]); i++) {
		for (uint32_t k = 0; k < fx_extents[i].nblocks; k++)
			fill(fx->bm, FX_BASE + (fx_extents[i].bopt_block + k) * BLK, BLK,
			     (char)('a' + fx_extents[i].block + k));
	}
	CU_ASSERT_EQUAL_FATAL(hy_device_new("home", ops, fx->home, &fx->backing), 0);
	CU_ASSERT_EQUAL_FATAL(hy_device_new("bopt", &memory_ops, fx->bm, &fx->bopt), 0);
	CU_ASSERT_EQUAL_FATAL(hy_engine_new(fx->backing, &fx->engine), 0);
	CU_ASSERT_EQUAL_FATAL(hy_map_new(&fx->map), 0);
	for (i = 0; i < sizeof(fx_extents) / sizeof(fx_extents[0]); i++) {
		struct hy_map_extent e = {.file_id = FX_FILE,
					  .block = fx_extents[i].block,
					  .nblocks = fx_extents[i].nblocks,
					  .bopt_block = fx_extents[i].bopt_block,
					  .stamp = stamp == -1 ? fx->home->obj[FX_OBJECT].stamp
							       : stamp};

		CU_ASSERT_EQUAL(hy_map_relocate(fx->map, &e), 0);
	}
	if (with_journal) {
		char why[512] = "";

		fx->dir = hy_test_tmpdir();
		CU_ASSERT_PTR_NOT_NULL_FATAL(fx->dir);
		CU_ASSERT_FATAL(asprintf(&fx->journal_path, "%s/%s", fx->dir, HY_MAP_JOURNAL_NAME) >
				0);
		CU_ASSERT_EQUAL_FATAL(hy_map_journal_open(fx->journal_path, 1, 0, fx->map,
							  &fx->journal, NULL, why, sizeof(why)),
				      0);
	}
	hy_engine_set_bopt(fx->engine, fx->map, fx->bopt, FX_BASE, fx->journal);
	hy_engine_file_init(fx->engine, &fx->file, FX_OBJECT);
	hy_engine_file_set_id(&fx->file, FX_FILE);
}

static void fx_teardown(struct fixture *fx)
{
	hy_map_journal_close(fx->journal);
	hy_map_free(fx->map);
	hy_engine_free(fx->engine);
	hy_device_free(fx->bopt);
	hy_device_free(fx->backing);
	if (fx->dir)
		hy_test_rmtree(fx->dir);
	free(fx->dir);
	free(fx->journal_path);
}

static uint64_t bopt_reads(struct fixture *fx)
{
	struct hy_device_stats st;

	hy_device_get_stats(fx->bopt, &st);
	return st.reads;
}

static struct hy_map_stats fx_map(struct fixture *fx)
{
	struct hy_map_stats st;

	hy_map_get_stats(fx->map, &st);
	return st;
}

/* Reads the whole file and checks block by block against @want (one
 * character a block, both ends of it). */
static void fx_read_all(struct fixture *fx, const char *want)
{
	static char out[FX_BLOCKS * BLK];
	size_t blk, bad = 0;

	memset(out, 0, sizeof(out));
	CU_ASSERT_EQUAL(hy_engine_read(fx->engine, &fx->file, out, sizeof(out), 0),
			(ssize_t)sizeof(out));
	for (blk = 0; blk < FX_BLOCKS; blk++) {
		if (out[blk * BLK] != want[blk] || out[blk * BLK + BLK - 1] != want[blk])
			bad++;
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_stamp_fresh_copies(void)
{
	struct fixture fx;
	int64_t stamp = 0;

	fx_setup(&fx, &stamped_ops, false, -1);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, fx.home->obj[FX_OBJECT].stamp);
	CU_ASSERT_NOT_EQUAL(stamp, 0);
	/* blocks 2-5 (one request) and 8 from the BOPT, the rest home */
	fx_read_all(&fx, "ABcdefGHiJKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 2);
	CU_ASSERT_EQUAL(fx.engine->bopt_reads, 2);
	CU_ASSERT_EQUAL(fx.engine->stale_files, 0);
	CU_ASSERT(fx.home->stamp_calls >= 1); /* the stamp was looked at */
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5);
	/* a read of home blocks only never asks for the stamp */
	fx.home->stamp_calls = 0;
	{
		char buf[BLK];

		CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, BLK, 6 * BLK), BLK);
		CU_ASSERT_EQUAL(buf[0], 'G');
	}
	CU_ASSERT_EQUAL(fx.home->stamp_calls, 0);
	CU_ASSERT_EQUAL(bopt_reads(&fx), 2);
	fx_teardown(&fx);
}

static void test_stamp_outside_change(void)
{
	struct hy_map_journal_record r[2];
	unsigned char raw[2 * HY_MAP_JOURNAL_RECORD];
	struct hy_map_piece p[4];
	struct hy_map *replay;
	struct hy_map_journal *j;
	struct fixture fx;
	uint64_t replayed = 0;
	int64_t stamp = 0;
	char why[512] = "";
	int fd;

	fx_setup(&fx, &stamped_ops, true, -1);
	fx_read_all(&fx, "ABcdefGHiJKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 2);

	/* Block 3 rewritten behind the mount: its copy is stale. */
	outside_write(fx.home, FX_OBJECT, 3 * BLK, BLK, 'X');
	fx_read_all(&fx, "ABCXEFGHIJKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 2); /* none more */
	CU_ASSERT_EQUAL(fx.engine->stale_files, 1);
	/* every copy of the file is gone, not just block 3's */
	CU_ASSERT_EQUAL(fx_map(&fx).files, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).extents, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 0);
	CU_ASSERT_EQUAL(hy_map_lookup(fx.map, FX_FILE, 0, FX_BLOCKS, p, 4), 1);
	CU_ASSERT_EQUAL(p[0].bopt_block, HY_MAP_HOME);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), -ENOENT);

	/* The drop was journaled first: one release per relocated extent. */
	CU_ASSERT_EQUAL(fx.journal->written, 2);
	CU_ASSERT_EQUAL(fx.journal->durable, 2);
	fd = open(fx.journal_path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(pread(fd, raw, sizeof(raw), 0), (ssize_t)sizeof(raw));
	close(fd);
	CU_ASSERT_EQUAL(hy_map_journal_decode(raw, &r[0]), 0);
	CU_ASSERT_EQUAL(hy_map_journal_decode(raw + HY_MAP_JOURNAL_RECORD, &r[1]), 0);
	for (int i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(r[i].type, HY_MJ_RELEASE);
		CU_ASSERT_EQUAL(r[i].file_id, FX_FILE);
		CU_ASSERT_EQUAL(r[i].generation, 1);
		CU_ASSERT_EQUAL(r[i].block, fx_extents[i].block);
		CU_ASSERT_EQUAL(r[i].nblocks, fx_extents[i].nblocks);
	}
	/* ... so that the map before the drop plus the journal is empty. */
	CU_ASSERT_EQUAL_FATAL(hy_map_new(&replay), 0);
	for (size_t i = 0; i < 2; i++) {
		struct hy_map_extent e = {.file_id = FX_FILE,
					  .block = fx_extents[i].block,
					  .nblocks = fx_extents[i].nblocks,
					  .bopt_block = fx_extents[i].bopt_block};

		CU_ASSERT_EQUAL(hy_map_relocate(replay, &e), 0);
	}
	CU_ASSERT_EQUAL(
		hy_map_journal_open(fx.journal_path, 1, 0, replay, &j, &replayed, why, sizeof(why)),
		0);
	CU_ASSERT_EQUAL(replayed, 2);
	{
		struct hy_map_stats st;

		hy_map_get_stats(replay, &st);
		CU_ASSERT_EQUAL(st.blocks, 0);
	}
	hy_map_journal_close(j);
	hy_map_free(replay);

	/* Later reads go home without counting the file again. */
	fx_read_all(&fx, "ABCXEFGHIJKL");
	CU_ASSERT_EQUAL(fx.engine->stale_files, 1);
	CU_ASSERT_EQUAL(bopt_reads(&fx), 2);
	CU_ASSERT_EQUAL(fx.journal->written, 2);
	fx_teardown(&fx);
}

/* A change through the engine of a file changed outside first: its copies
 * are dropped before the change, and the change itself is made at home. */
static void test_stamp_outside_then_write(void)
{
	struct fixture fx;
	char buf[BLK];

	fx_setup(&fx, &stamped_ops, false, -1);
	outside_write(fx.home, FX_OBJECT, 9 * BLK, BLK, 'Y'); /* not even a copied block */
	memset(buf, 'W', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, BLK, 0), BLK);
	CU_ASSERT_EQUAL(fx.engine->stale_files, 1);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 0);
	fx_read_all(&fx, "WBCDEFGHIYKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 0);
	fx_teardown(&fx);
}

static void test_stamp_refreshed_by_write(void)
{
	struct fixture fx;
	int64_t stamp = 0, before;
	char buf[BLK];

	fx_setup(&fx, &stamped_ops, true, -1);
	before = fx.home->obj[FX_OBJECT].stamp;

	/* A write to relocated block 3: released (journaled), written home,
	 * and the stamp follows the home object's new one. */
	memset(buf, 'W', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, BLK, 3 * BLK), BLK);
	CU_ASSERT_NOT_EQUAL(fx.home->obj[FX_OBJECT].stamp, before);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, fx.home->obj[FX_OBJECT].stamp);
	CU_ASSERT_EQUAL(fx.engine->released_blocks, 1);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 4);
	CU_ASSERT_EQUAL(fx.journal->written, 1);
	CU_ASSERT_EQUAL(fx.journal->durable, 1);
	/* the other copies are still current: read from the BOPT (2, 4-5, 8) */
	fx_read_all(&fx, "ABcWefGHiJKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 3);
	CU_ASSERT_EQUAL(fx.engine->stale_files, 0);

	/* A write to a home block of the file moves the stamp too. */
	memset(buf, 'V', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, BLK, 10 * BLK), BLK);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, fx.home->obj[FX_OBJECT].stamp);
	CU_ASSERT_EQUAL(fx.engine->released_blocks, 1);
	CU_ASSERT_EQUAL(fx.journal->written, 1); /* nothing relocated: no record */
	fx_read_all(&fx, "ABcWefGHiJVL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 6);

	/* So does a truncation, which releases blocks 5 and 8. */
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &fx.file, 5 * BLK), 0);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, fx.home->obj[FX_OBJECT].stamp);
	CU_ASSERT_EQUAL(fx.engine->released_blocks, 3);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 2); /* 2 and 4 */
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, BLK, 4 * BLK), BLK);
	CU_ASSERT_EQUAL(buf[0], 'e');
	CU_ASSERT_EQUAL(buf[BLK - 1], 'e');
	CU_ASSERT_EQUAL(bopt_reads(&fx), 7);

	/* And an allocation that grows it. */
	CU_ASSERT_EQUAL(hy_engine_fallocate(fx.engine, &fx.file, 0, 5 * BLK, 2 * BLK), 0);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, fx.home->obj[FX_OBJECT].stamp);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, BLK, 2 * BLK), BLK);
	CU_ASSERT_EQUAL(buf[0], 'c');
	CU_ASSERT_EQUAL(bopt_reads(&fx), 8);
	CU_ASSERT_EQUAL(fx.engine->stale_files, 0);
	fx_teardown(&fx);
}

struct blocked_write {
	struct fixture *fx;
	_Atomic int done;
	ssize_t rc;
};

static void *write_one(void *arg)
{
	struct blocked_write *w = arg;
	char buf[10];

	memset(buf, 'Q', sizeof(buf));
	w->rc = hy_engine_write(w->fx->engine, &w->fx->file, buf, sizeof(buf), 11 * BLK);
	atomic_store(&w->done, 1);
	return NULL;
}

/* A writer blocked by @hold (quiesce or one gate) until @release. */
static void check_blocks(struct fixture *fx, void (*hold)(struct hy_engine *, uint64_t),
			 void (*unhold)(struct hy_engine *, uint64_t))
{
	struct blocked_write w = {fx, 0, 0};
	struct timespec pause = {0, 50 * 1000 * 1000};
	pthread_t t;

	hold(fx->engine, FX_FILE);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, write_one, &w), 0);
	nanosleep(&pause, NULL);
	CU_ASSERT_EQUAL(atomic_load(&w.done), 0);
	unhold(fx->engine, FX_FILE);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(atomic_load(&w.done), 1);
	CU_ASSERT_EQUAL(w.rc, 10);
}

static void quiesce(struct hy_engine *engine, uint64_t file_id)
{
	hy_engine_quiesce(engine);
}

static void resume(struct hy_engine *engine, uint64_t file_id)
{
	hy_engine_resume(engine);
}

static void test_gates(void)
{
	struct fixture fx;
	struct hy_engine_file anon;
	uint64_t c0;
	char buf[BLK];

	fx_setup(&fx, &stamped_ops, false, -1);
	c0 = hy_engine_gate_changes(fx.engine, FX_FILE);
	CU_ASSERT_EQUAL(c0, 0);
	memset(buf, 'W', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, 10, 0), 10);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, FX_FILE), 1);
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &fx.file, 11 * BLK), 0);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, FX_FILE), 2);
	CU_ASSERT_EQUAL(hy_engine_fallocate(fx.engine, &fx.file, 0, 11 * BLK, BLK), 0);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, FX_FILE), 3);
	/* reads and syncs change nothing */
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, BLK, 0), BLK);
	CU_ASSERT_EQUAL(hy_engine_fsync(fx.engine, &fx.file, true), 0);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, FX_FILE), 3);
	/* a file with no id takes no gate: gate 0 stays still */
	hy_engine_file_init(fx.engine, &anon, 2);
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &anon, buf, 10, 0), 10);
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &anon, 5), 0);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, 0), 0);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, FX_FILE), 3);
	CU_ASSERT_EQUAL(fx.engine->stale_files, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5);

	/* The reconfigurator's side: the gate held exclusive. */
	hy_engine_gate_lock(fx.engine, FX_FILE);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, FX_FILE), 3);
	hy_engine_gate_unlock(fx.engine, FX_FILE);

	/* Quiesce and resume, then a write works; writers wait meanwhile. */
	hy_engine_quiesce(fx.engine);
	hy_engine_resume(fx.engine);
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, 10, 0), 10);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, FX_FILE), 4);
	check_blocks(&fx, quiesce, resume);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, FX_FILE), 5);
	check_blocks(&fx, hy_engine_gate_lock, hy_engine_gate_unlock);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, FX_FILE), 6);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, 10, 11 * BLK), 10);
	CU_ASSERT_EQUAL(memcmp(buf, "QQQQQQQQQQ", 10), 0);
	fx_teardown(&fx);

	/* Without a map the gates are not used. */
	fx_setup(&fx, &stamped_ops, false, -1);
	hy_engine_set_bopt(fx.engine, NULL, NULL, 0, NULL);
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, 10, 0), 10);
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &fx.file, 5), 0);
	CU_ASSERT_EQUAL(hy_engine_gate_changes(fx.engine, FX_FILE), 0);
	fx_teardown(&fx);
}

/* A home device with no stamp op (the simulator's) is never written by
 * anyone else: copies are fresh, stamp 0 or not. */
static const struct hy_device_ops unstamped_ops = {
	.read = st_read,
	.write = st_write,
	.sync = st_sync,
	.truncate = st_truncate,
	.destroy = st_destroy,
};

static void test_stamp_unsupported(void)
{
	struct fixture fx;
	int64_t stamp = 99;
	char buf[BLK];

	fx_setup(&fx, &unstamped_ops, false, 0);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, 0);
	fx_read_all(&fx, "ABcdefGHiJKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 2);
	CU_ASSERT_EQUAL(fx.engine->stale_files, 0);
	/* a write elsewhere in the file leaves the copies and the stamp */
	memset(buf, 'W', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, BLK, 0), BLK);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, 0);
	fx_read_all(&fx, "WBcdefGHiJKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 4);
	CU_ASSERT_EQUAL(fx.engine->stale_files, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5);
	fx_teardown(&fx);

	/* With a stamp op, stamp 0 means unknown: the copies are not used. */
	fx_setup(&fx, &stamped_ops, false, 0);
	fx_read_all(&fx, "ABCDEFGHIJKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 0);
	CU_ASSERT_EQUAL(fx.engine->stale_files, 1);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 0);
	fx_teardown(&fx);
}

int hy_test_add_engine(void)
{
	CU_pSuite s = CU_add_suite("engine", NULL, NULL);

	if (!s || !CU_add_test(s, "engine over a device model", test_engine_over_model) ||
	    !CU_add_test(s, "engine over backing files", test_engine_over_file) ||
	    !CU_add_test(s, "reads through the indirection map", test_engine_reads_through_map) ||
	    !CU_add_test(s, "copies with a matching stamp are read from the BOPT",
			 test_stamp_fresh_copies) ||
	    !CU_add_test(s, "a file changed outside loses its copies", test_stamp_outside_change) ||
	    !CU_add_test(s, "a change after an outside change", test_stamp_outside_then_write) ||
	    !CU_add_test(s, "writes through the engine refresh the stamp",
			 test_stamp_refreshed_by_write) ||
	    !CU_add_test(s, "gates count changes; quiesce and resume", test_gates) ||
	    !CU_add_test(s, "a home device without stamps", test_stamp_unsupported))
		return -1;
	return 0;
}
