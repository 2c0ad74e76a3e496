/* test_engine.c - the engine over the device layer: requests reach the
 * device named by the operations table, and every device counts them. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "hybridfs/map.h"
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

int hy_test_add_engine(void)
{
	CU_pSuite s = CU_add_suite("engine", NULL, NULL);

	if (!s || !CU_add_test(s, "engine over a device model", test_engine_over_model) ||
	    !CU_add_test(s, "engine over backing files", test_engine_over_file) ||
	    !CU_add_test(s, "reads through the indirection map", test_engine_reads_through_map))
		return -1;
	return 0;
}
