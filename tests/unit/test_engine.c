/* test_engine.c - the engine over the device layer: requests reach the
 * device named by the operations table, and every device counts them. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "suites.h"

/* A device that keeps one object in memory and returns short transfers,
 * the way a model or a fault injector plugs in. */
struct memory_device {
	char data[1 << 16];
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

int hy_test_add_engine(void)
{
	CU_pSuite s = CU_add_suite("engine", NULL, NULL);

	if (!s || !CU_add_test(s, "engine over a device model", test_engine_over_model) ||
	    !CU_add_test(s, "engine over backing files", test_engine_over_file))
		return -1;
	return 0;
}
