/* test_engine.c - the engine over the device layer: requests reach the
 * device named by the operations table, and every device counts them; reads
 * through the indirection map, stamps that drop the copies of a file
 * changed outside the mount, the gates, BORG's writes into the BOPT
 * (dirty blocks and their way home), and ReCA asked once per request. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/device.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/engine.h"
#include "hybridfs/indirector.h"
#include "hybridfs/reca.h"
#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"
#include "suites.h"

/* The indirector's gates as the reconfigurator's operations use them
 * (indirector.h keeps them private to its functions): the tests hold and
 * count them directly. */
static struct hy_indirector_gate *gate_of(struct hy_engine *engine, uint64_t file_id)
{
	return &hy_engine_indirector(engine)->gates[file_id % HY_INDIRECTOR_GATES];
}

static uint64_t gate_changes(struct hy_engine *engine, uint64_t file_id)
{
	return atomic_load(&gate_of(engine, file_id)->changes);
}

static void gate_lock(struct hy_engine *engine, uint64_t file_id)
{
	pthread_rwlock_wrlock(&gate_of(engine, file_id)->lock);
}

static void gate_unlock(struct hy_engine *engine, uint64_t file_id)
{
	pthread_rwlock_unlock(&gate_of(engine, file_id)->lock);
}

static void gate_quiesce(struct hy_engine *engine)
{
	for (uint64_t i = 0; i < HY_INDIRECTOR_GATES; i++)
		gate_lock(engine, i);
}

static void gate_resume(struct hy_engine *engine)
{
	for (uint64_t i = HY_INDIRECTOR_GATES; i-- > 0;)
		gate_unlock(engine, i);
}

/* A device that keeps one object in memory and returns short transfers,
 * the way a model or a fault injector plugs in. With @watch_map set (a
 * BOPT's), every write notes how many journal records were written, how
 * many blocks the map called dirty and the home object's change stamp
 * (@watch_stamp) when it came, to check what comes before the data. */
struct memory_device {
	char data[1 << 18];
	size_t size;
	int syncs;
	struct hy_map *watch_map;
	struct hy_map_journal *watch_journal;
	const int64_t *watch_stamp;
	int watched_writes;
	uint64_t written_at_write, dirty_at_write;
	int64_t stamp_at_write;
	/* called once, at the next read (then cleared): a race put there */
	void (*read_hook)(void *arg);
	void *hook_arg;
};

static ssize_t mem_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	struct memory_device *m = dev->priv;

	if (m->read_hook) {
		void (*hook)(void *) = m->read_hook;

		m->read_hook = NULL;
		hook(m->hook_arg);
	}
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
	if (m->watch_map) {
		struct hy_map_stats st;

		hy_map_get_stats(m->watch_map, &st);
		m->dirty_at_write = st.dirty_blocks;
		m->written_at_write = 0;
		if (m->watch_journal) {
			pthread_mutex_lock(&m->watch_journal->lock);
			m->written_at_write = m->watch_journal->commit.written;
			pthread_mutex_unlock(&m->watch_journal->lock);
		}
		m->stamp_at_write = m->watch_stamp ? *m->watch_stamp : 0;
		m->watched_writes++;
	}
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

/* ReCA asked once per request made "as" a process: the answer comes back
 * (class, process id, the table's hint); without ReCA, or with no request,
 * the plain path and a zeroed answer. */
static void test_engine_asks_reca(void)
{
	struct memory_device *m = calloc(1, sizeof(*m));
	struct hy_workload_policy_table t;
	struct hy_engine_request req = {.pid = getpid()};
	struct hy_device *dev;
	struct hy_engine *engine;
	struct hy_engine_file file;
	struct hy_reca *reca;
	char buf[4096];

	memset(buf, 'r', sizeof(buf));
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_EQUAL_FATAL(hy_device_new("memory", &memory_ops, m, &dev), 0);
	CU_ASSERT_EQUAL_FATAL(hy_engine_new(dev, &engine), 0);
	hy_engine_file_init(engine, &file, 0);
	hy_engine_file_set_id(&file, 7);
	req.answer.klass = 99;
	CU_ASSERT_EQUAL(hy_engine_write_as(engine, &file, &req, buf, sizeof(buf), 0),
			(ssize_t)sizeof(buf));
	CU_ASSERT_EQUAL(req.answer.klass, 0); /* no ReCA: zeroed */
	CU_ASSERT_EQUAL(hy_engine_read_as(engine, &file, NULL, buf, sizeof(buf), 0),
			(ssize_t)sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(
		hy_reca_new(&(struct hy_reca_config){.keying = HY_RECA_PROCESSES}, &reca), 0);
	hy_reca_set_process_ids(reca, 5, NULL, NULL);
	hy_engine_set_reca(engine, reca);
	CU_ASSERT_EQUAL(hy_engine_read_as(engine, &file, &req, buf, sizeof(buf), 0),
			(ssize_t)sizeof(buf));
	CU_ASSERT_EQUAL(req.answer.process_id, 5);
	CU_ASSERT_EQUAL(req.answer.klass, HY_CLASS_RANDOM + 1);
	CU_ASSERT_FALSE(req.answer.hinted); /* no table in force */
	hy_workload_policy_defaults(&t);
	CU_ASSERT_EQUAL_FATAL(hy_reca_set_policy(reca, &t), 0);
	CU_ASSERT_EQUAL(hy_engine_write_as(engine, &file, &req, buf, sizeof(buf), 4096),
			(ssize_t)sizeof(buf));
	CU_ASSERT_TRUE(req.answer.hinted);
	CU_ASSERT_EQUAL(req.answer.category, HY_CATEGORY_UNKNOWN);
	CU_ASSERT_EQUAL(req.answer.hint.line_size, 4096); /* the unknown row's */
	hy_engine_free(engine);
	hy_reca_free(reca);
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

/* PORE's addresses: a file's blocks on the disk (FIEMAP, or by inode where
 * the filesystem has no map), the same under emulate=, and no
 * answer for a model device. */
static void test_device_addresses(void)
{
	char *tmp = hy_test_tmpdir(), path[4200], why[256];
	static unsigned char data[8 * 4096];
	uint64_t offs[10], addr[10];
	struct hy_devmodel_params params;
	struct hy_device_emulation *emu = NULL;
	struct hy_device *dev, *model;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/f", tmp);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	memset(data, 'a', sizeof(data));
	CU_ASSERT_EQUAL(pwrite(fd, data, sizeof(data), 0), (ssize_t)sizeof(data));
	CU_ASSERT_EQUAL(fsync(fd), 0); /* placed: FIEMAP knows it */
	CU_ASSERT_EQUAL(fstat(fd, &st), 0);
	CU_ASSERT_EQUAL_FATAL(hy_device_file_new("backing", &dev), 0);
	for (int i = 0; i < 10; i++)
		offs[i] = (uint64_t)i * 4096; /* the last two past the end */
	CU_ASSERT_EQUAL(hy_device_addresses(dev, fd, offs, 10, addr), 0);
	/* one extent, written at once: block after block (on a filesystem
	 * without FIEMAP as well, by inode) */
	for (int i = 1; i < 8; i++)
		CU_ASSERT_EQUAL(addr[i] - addr[i - 1], 4096);
	/* past the end: after the last placed byte */
	CU_ASSERT_EQUAL(addr[9] - addr[7], 2 * 4096);
	CU_ASSERT_EQUAL(hy_device_addresses(dev, fd, offs, 0, addr), 0);
	/* emulated: where the emulation prices them, the file's own place */
	{
		uint64_t real[2];

		CU_ASSERT_EQUAL(hy_device_addresses(dev, fd, offs + 3, 2, real), 0);
		hy_devmodel_defaults(HY_DEVMODEL_SMR, &params);
		CU_ASSERT_EQUAL_FATAL(hy_device_emulation_new(&params, &emu, why, sizeof(why)), 0);
		hy_device_set_emulation(dev, emu, -1);
		CU_ASSERT_EQUAL(hy_device_addresses(dev, fd, offs + 3, 2, addr), 0);
		CU_ASSERT_EQUAL(addr[0], real[0]);
		CU_ASSERT_EQUAL(addr[1], addr[0] + 4096);
	}
	hy_device_set_emulation(dev, emu, 1 << 20); /* a region of no file */
	CU_ASSERT_EQUAL(hy_device_addresses(dev, fd, offs + 3, 1, addr), 0);
	CU_ASSERT_EQUAL(addr[0], (1 << 20) + 3 * 4096);
	hy_device_set_emulation(dev, NULL, -1);
	/* a model's objects are not files */
	CU_ASSERT_EQUAL_FATAL(hy_device_new("model", &memory_ops, NULL, &model), 0);
	CU_ASSERT_EQUAL(hy_device_addresses(model, 1, offs, 1, addr), -EOPNOTSUPP);
	hy_device_free(model);
	hy_device_free(dev);
	hy_device_emulation_free(emu);
	close(fd);
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
	hy_indirector_set_bopt(hy_engine_indirector(engine), map, bopt, base, NULL);
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
 * made through it, like a file's ctime, and whose modification time moves
 * with every write, truncation or allocation, like a file's mtime; the test
 * changes an object "from outside" with outside_write(). Writes are short,
 * like memory_device's. Objects ST_RO(k) are read-only handles of object k
 * (writes through them fail with -EBADF); writable() gives for them a new
 * writable handle ST_RW(k), which close_object() counts back. Each sync
 * keeps a snapshot of the object's data, to check what was durable. */
#define STAMPED_OBJECTS 4
#define STAMPED_SIZE	(16 * 4096)
#define ST_RO(k)	((k) + STAMPED_OBJECTS)
#define ST_RW(k)	((k) + 2 * STAMPED_OBJECTS)

struct stamped_device {
	struct stamped_object {
		char data[STAMPED_SIZE];
		size_t size;
		int64_t stamp;
		int64_t mtime_ns;
		int syncs;		   /* sync requests */
		bool last_data_only;	   /* the last sync's data_only */
		char synced[STAMPED_SIZE]; /* the data at the last sync */
		size_t synced_size;
	} obj[STAMPED_OBJECTS];
	int64_t clock; /* the last stamp given */
	int stamp_calls;
	int opened, closed, bad_closes; /* writable handles */
	/* a race made on purpose: with pause_writes, set_mtime (after the
	 * stamp moved) waits until go; getattr calls are counted under hook */
	struct race_hook {
		pthread_mutex_t lock;
		pthread_cond_t cond;
		bool pause_writes, paused, go;
		int getattrs;
	} * hook;
};

static struct stamped_object *object_of(struct hy_device *dev, int64_t object)
{
	struct stamped_device *m = dev->priv;

	return object >= 0 && object < 3 * STAMPED_OBJECTS ? &m->obj[object % STAMPED_OBJECTS]
							   : NULL;
}

static bool read_only(int64_t object)
{
	return object >= ST_RO(0) && object < ST_RW(0);
}

static void touch(struct stamped_device *m, struct stamped_object *o)
{
	o->stamp = ++m->clock;
}

/* A change of the data or size: the change time and the modification time
 * move. */
static void modify(struct stamped_device *m, struct stamped_object *o)
{
	touch(m, o);
	o->mtime_ns = o->stamp * 1000;
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

	if (!o || off < 0 || read_only(object))
		return -EBADF;
	if ((size_t)off + len > STAMPED_SIZE)
		return -ENOSPC;
	if (len > 1000)
		len = 1000;
	memcpy(o->data + off, buf, len);
	if ((size_t)off + len > o->size)
		o->size = (size_t)off + len;
	modify(dev->priv, o);
	return (ssize_t)len;
}

static int st_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	struct stamped_object *o = object_of(dev, object);

	if (!o)
		return -EBADF;
	o->syncs++;
	o->last_data_only = data_only;
	memcpy(o->synced, o->data, o->size);
	o->synced_size = o->size;
	return 0;
}

static int st_truncate(struct hy_device *dev, int64_t object, off_t size)
{
	struct stamped_object *o = object_of(dev, object);

	if (!o || read_only(object))
		return -EBADF;
	if (size < 0 || (size_t)size > STAMPED_SIZE)
		return -EFBIG;
	if ((size_t)size > o->size)
		memset(o->data + o->size, 0, (size_t)size - o->size);
	o->size = (size_t)size;
	modify(dev->priv, o);
	return 0;
}

/* Plain allocation (may grow the object) and hole punching (zeroes, keeps
 * the size). */
static int st_allocate(struct hy_device *dev, int64_t object, int mode, off_t off, off_t len)
{
	struct stamped_object *o = object_of(dev, object);

	if (!o || read_only(object))
		return -EBADF;
	if (off < 0 || len <= 0 || (size_t)(off + len) > STAMPED_SIZE)
		return -EINVAL;
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		size_t end = (size_t)(off + len) < o->size ? (size_t)(off + len) : o->size;

		if (!(mode & FALLOC_FL_KEEP_SIZE))
			return -EOPNOTSUPP;
		if ((size_t)off < end)
			memset(o->data + off, 0, end - (size_t)off);
	} else if ((size_t)(off + len) > o->size) {
		memset(o->data + o->size, 0, (size_t)(off + len) - o->size);
		o->size = (size_t)(off + len);
	}
	modify(dev->priv, o);
	return 0;
}

static int st_getattr(struct hy_device *dev, int64_t object, struct hy_device_attr *out)
{
	struct stamped_object *o = object_of(dev, object);

	struct race_hook *h = ((struct stamped_device *)dev->priv)->hook;

	((struct stamped_device *)dev->priv)->stamp_calls++;
	if (h) {
		pthread_mutex_lock(&h->lock);
		h->getattrs++;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->lock);
	}
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
	o->mtime_ns = mtime_ns >= 0 ? mtime_ns : (o->stamp + 1) * 1000;
	touch(dev->priv, o);
	{
		struct race_hook *h = ((struct stamped_device *)dev->priv)->hook;

		if (h && h->pause_writes) {
			pthread_mutex_lock(&h->lock);
			h->paused = true;
			pthread_cond_broadcast(&h->cond);
			while (!h->go)
				pthread_cond_wait(&h->cond, &h->lock);
			pthread_mutex_unlock(&h->lock);
		}
	}
	return 0;
}

static int st_writable(struct hy_device *dev, int64_t object, int64_t *out, bool *opened)
{
	struct stamped_device *m = dev->priv;

	if (!object_of(dev, object))
		return -EBADF;
	*out = object;
	*opened = false;
	if (read_only(object)) {
		*out = ST_RW(object - ST_RO(0));
		*opened = true;
		m->opened++;
	}
	return 0;
}

static void st_close_object(struct hy_device *dev, int64_t object)
{
	struct stamped_device *m = dev->priv;

	if (object >= ST_RW(0) && object < ST_RW(STAMPED_OBJECTS))
		m->closed++;
	else
		m->bad_closes++;
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
	.writable = st_writable,
	.close_object = st_close_object,
	.destroy = st_destroy,
};

/* A change made behind the mount's back: the data and the stamp move. */
static void outside_write(struct stamped_device *m, int object, size_t off, size_t len, char c)
{
	struct stamped_object *o = &m->obj[object];

	memset(o->data + off, c, len);
	if (off + len > o->size)
		o->size = off + len;
	modify(m, o);
}

/* ... and a truncation behind its back. */
static void outside_truncate(struct stamped_device *m, int object, size_t size)
{
	struct stamped_object *o = &m->obj[object];

	if (size > o->size)
		memset(o->data + o->size, 0, size - o->size);
	o->size = size;
	modify(m, o);
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
	hy_indirector_set_bopt(hy_engine_indirector(fx->engine), fx->map, fx->bopt, FX_BASE,
			       fx->journal);
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

/* Whether the @len bytes at @p are all @c. */
static bool all_bytes(const char *p, size_t len, char c)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] != c)
			return false;
	}
	return true;
}

/* Block @blk of the fixture's home object, and BOPT block @bopt_blk. */
static const char *home_block(struct fixture *fx, uint64_t blk)
{
	return fx->home->obj[FX_OBJECT].data + blk * BLK;
}

static const char *bopt_block(struct fixture *fx, uint64_t bopt_blk)
{
	return fx->bm->data + FX_BASE + bopt_blk * BLK;
}

/* The map's piece for block @blk of the fixture's file. */
static struct hy_map_piece piece_at(struct hy_map *map, uint64_t blk)
{
	struct hy_map_piece p = {0, 0, false, 0};

	CU_ASSERT_EQUAL(hy_map_lookup(map, FX_FILE, blk, 1, &p, 1), 1);
	return p;
}

/* The records of the journal file at @path, decoded into @r (up to @max):
 * their count, or -1 when one does not decode or there are more. */
static int journal_records(const char *path, struct hy_map_journal_record *r, int max)
{
	unsigned char raw[HY_MAP_JOURNAL_RECORD];
	int fd = open(path, O_RDONLY), n = 0;

	if (fd < 0)
		return -1;
	while (pread(fd, raw, sizeof(raw), (off_t)n * HY_MAP_JOURNAL_RECORD) ==
	       (ssize_t)sizeof(raw)) {
		if (n >= max || hy_map_journal_decode(raw, &r[n]) != 0) {
			close(fd);
			return -1;
		}
		n++;
	}
	close(fd);
	return n;
}

struct want_record {
	enum hy_map_journal_type type;
	uint64_t block;
	uint32_t nblocks;
};

/* The fixture's journal holds exactly @n records for file 7 in generation
 * 1, with @want's types and ranges, in order. (Written: whether they are
 * durable yet is asserted where that is promised.) */
static void check_journal(struct fixture *fx, const struct want_record *want, int n)
{
	struct hy_map_journal_record r[16];
	int got = journal_records(fx->journal_path, r, 16);

	CU_ASSERT_EQUAL(got, n);
	CU_ASSERT_EQUAL(fx->journal->commit.written, (uint64_t)n);
	for (int i = 0; i < n && i < got; i++) {
		CU_ASSERT_EQUAL(r[i].type, want[i].type);
		CU_ASSERT_EQUAL(r[i].generation, 1);
		CU_ASSERT_EQUAL(r[i].file_id, FX_FILE);
		CU_ASSERT_EQUAL(r[i].block, want[i].block);
		CU_ASSERT_EQUAL(r[i].nblocks, want[i].nblocks);
		CU_ASSERT_EQUAL(r[i].bopt_block, 0);
	}
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
	CU_ASSERT_EQUAL(fx.engine->indirector->bopt_reads, 2);
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);
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
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 1);
	/* every copy of the file is gone, not just block 3's */
	CU_ASSERT_EQUAL(fx_map(&fx).files, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).extents, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 0);
	CU_ASSERT_EQUAL(hy_map_lookup(fx.map, FX_FILE, 0, FX_BLOCKS, p, 4), 1);
	CU_ASSERT_EQUAL(p[0].bopt_block, HY_MAP_HOME);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), -ENOENT);

	/* The drop was journaled first, one release per relocated extent (not
	 * waited for: the outside change already moved the ctime, so a crash
	 * that loses them drops the copies again). */
	CU_ASSERT_EQUAL(fx.journal->commit.written, 2);
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
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 1);
	CU_ASSERT_EQUAL(bopt_reads(&fx), 2);
	CU_ASSERT_EQUAL(fx.journal->commit.written, 2);
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
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 1);
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
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 1);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 4);
	/* journaled, not waited for: the home write moved the ctime, which
	 * drops the copies after a crash that loses the record */
	CU_ASSERT_EQUAL(fx.journal->commit.written, 1);
	/* BORG's writes are off (the default): nothing went to the BOPT, and
	 * the one record is the release, not a dirty mark */
	CU_ASSERT_FALSE(fx.engine->indirector->bopt_writes_on);
	CU_ASSERT_EQUAL(fx.engine->indirector->bopt_writes, 0);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 0);
	{
		const struct want_record want[] = {{HY_MJ_RELEASE, 3, 1}};
		struct hy_device_stats bs;

		check_journal(&fx, want, 1);
		hy_device_get_stats(fx.bopt, &bs);
		CU_ASSERT_EQUAL(bs.writes, 0);
	}
	CU_ASSERT(all_bytes(home_block(&fx, 3), BLK, 'W'));
	CU_ASSERT(all_bytes(bopt_block(&fx, 11), BLK, 'd'));
	CU_ASSERT_EQUAL(piece_at(fx.map, 3).bopt_block, HY_MAP_HOME);
	CU_ASSERT_EQUAL(fx_map(&fx).dirty_blocks, 0);
	/* the other copies are still current: read from the BOPT (2, 4-5, 8) */
	fx_read_all(&fx, "ABcWefGHiJKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 3);
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);

	/* A write to a home block of the file moves the stamp too. */
	memset(buf, 'V', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, BLK, 10 * BLK), BLK);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, fx.home->obj[FX_OBJECT].stamp);
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 1);
	CU_ASSERT_EQUAL(fx.journal->commit.written, 1); /* nothing relocated: no record */
	fx_read_all(&fx, "ABcWefGHiJVL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 6);

	/* So does a truncation, which releases blocks 5 and 8. */
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &fx.file, 5 * BLK), 0);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, fx.home->obj[FX_OBJECT].stamp);
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 3);
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
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);
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
	gate_quiesce(engine);
}

static void resume(struct hy_engine *engine, uint64_t file_id)
{
	gate_resume(engine);
}

static void test_gates(void)
{
	struct fixture fx;
	struct hy_engine_file anon;
	uint64_t c0;
	char buf[BLK];

	fx_setup(&fx, &stamped_ops, false, -1);
	c0 = gate_changes(fx.engine, FX_FILE);
	CU_ASSERT_EQUAL(c0, 0);
	memset(buf, 'W', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, 10, 0), 10);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, FX_FILE), 1);
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &fx.file, 11 * BLK), 0);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, FX_FILE), 2);
	CU_ASSERT_EQUAL(hy_engine_fallocate(fx.engine, &fx.file, 0, 11 * BLK, BLK), 0);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, FX_FILE), 3);
	/* reads and syncs change nothing */
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, BLK, 0), BLK);
	CU_ASSERT_EQUAL(hy_engine_fsync(fx.engine, &fx.file, true), 0);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, FX_FILE), 3);
	/* a file with no id takes no gate: gate 0 stays still */
	hy_engine_file_init(fx.engine, &anon, 2);
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &anon, buf, 10, 0), 10);
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &anon, 5), 0);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, 0), 0);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, FX_FILE), 3);
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5);

	/* The reconfigurator's side: the gate held exclusive. */
	gate_lock(fx.engine, FX_FILE);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, FX_FILE), 3);
	gate_unlock(fx.engine, FX_FILE);

	/* Quiesce and resume, then a write works; writers wait meanwhile. */
	gate_quiesce(fx.engine);
	gate_resume(fx.engine);
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, 10, 0), 10);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, FX_FILE), 4);
	check_blocks(&fx, quiesce, resume);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, FX_FILE), 5);
	check_blocks(&fx, gate_lock, gate_unlock);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, FX_FILE), 6);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, 10, 11 * BLK), 10);
	CU_ASSERT_EQUAL(memcmp(buf, "QQQQQQQQQQ", 10), 0);
	fx_teardown(&fx);

	/* Without a map the gates are not used. */
	fx_setup(&fx, &stamped_ops, false, -1);
	hy_indirector_set_bopt(hy_engine_indirector(fx.engine), NULL, NULL, 0, NULL);
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, 10, 0), 10);
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &fx.file, 5), 0);
	CU_ASSERT_EQUAL(gate_changes(fx.engine, FX_FILE), 0);
	fx_teardown(&fx);
}

/* A device that opens an object of its own for each hold (as the file
 * device does: descriptors). */
static int opening_hold(struct hy_device *dev, int64_t object, int64_t *out)
{
	(void)dev;
	*out = object + 1000;
	return 0;
}

static const struct hy_device_ops opening_ops = {
	.read = mem_read,
	.write = mem_write,
	.sync = mem_sync,
	.truncate = mem_truncate,
	.hold = opening_hold,
};

/* The bound on held objects is about descriptors: a device that opens one
 * per hold stops at HY_INDIRECTOR_HELD_OBJECTS (the cache then writes the
 * file through) and takes holds again once one is given back; a model's
 * objects (no hold op: the object itself, nothing opened) are never
 * bounded, or the simulator's figures would depend on the daemon's
 * descriptor budget. */
static void test_indirector_hold_bound(void)
{
	struct hy_device *opening, *model;
	struct hy_indirector *a, *b;
	int64_t held = -1;
	int i;

	CU_ASSERT_EQUAL_FATAL(hy_device_new("home", &opening_ops, NULL, &opening), 0);
	CU_ASSERT_EQUAL_FATAL(hy_device_new("home", &memory_ops, NULL, &model), 0);
	CU_ASSERT_EQUAL_FATAL(hy_indirector_new(opening, &a), 0);
	CU_ASSERT_EQUAL_FATAL(hy_indirector_new(model, &b), 0);
	for (i = 0; i < HY_INDIRECTOR_HELD_OBJECTS; i++)
		CU_ASSERT_EQUAL(hy_indirector_hold_object(a, i, &held), 0);
	CU_ASSERT_EQUAL(held, HY_INDIRECTOR_HELD_OBJECTS - 1 + 1000);
	CU_ASSERT_EQUAL(hy_indirector_hold_object(a, i, &held), -EMFILE);
	hy_indirector_put_object(a, 1000);
	CU_ASSERT_EQUAL(hy_indirector_hold_object(a, i, &held), 0);
	for (i = 0; i < 2 * HY_INDIRECTOR_HELD_OBJECTS; i++) {
		CU_ASSERT_EQUAL(hy_indirector_hold_object(b, i, &held), 0);
		CU_ASSERT_EQUAL(held, i);
	}
	hy_indirector_free(a);
	hy_indirector_free(b);
	hy_device_free(opening);
	hy_device_free(model);
}

/* The reconfigurator's side of the indirector: a copy committed when
 * nothing changed the file since its begin, refused when a write through
 * the mount came between; a drop releases it again; all journaled. */
static void test_indirector_copies(void)
{
	struct fixture fx;
	struct hy_indirector *ind;
	struct hy_indirector_copy copy = {.file_id = FX_FILE,
					  .object = FX_OBJECT,
					  .block = 0,
					  .nblocks = 1,
					  .bopt_block = 30};
	struct hy_indirector_copy raced = {.file_id = FX_FILE,
					   .object = FX_OBJECT,
					   .block = 1,
					   .nblocks = 1,
					   .bopt_block = 31};
	struct hy_indirector_range drop = {FX_FILE, 0, 1};
	uint64_t kept = 7, records;
	char buf[BLK];
	bool ok = false;

	fx_setup(&fx, &stamped_ops, true, -1);
	ind = hy_engine_indirector(fx.engine);
	fill(fx.bm, FX_BASE + 30 * BLK, 2 * BLK, '?');
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5);

	/* begin, read home, write the BOPT (here another byte, to see where a
	 * read comes from), commit */
	CU_ASSERT_EQUAL(hy_indirector_copy_begin(ind, &copy), 0);
	CU_ASSERT_EQUAL(hy_indirector_copy_read(ind, &copy, buf), BLK);
	CU_ASSERT(all_bytes(buf, BLK, 'A'));
	fill(fx.bm, FX_BASE + 30 * BLK, BLK, 'z');
	records = fx.journal->commit.written;
	CU_ASSERT_EQUAL(hy_indirector_copy_commit(ind, &copy, 1, &ok), 0);
	CU_ASSERT(ok);
	CU_ASSERT_EQUAL(fx.journal->commit.written, records + 2); /* relocation, stamp */
	CU_ASSERT_EQUAL(fx.journal->commit.durable, fx.journal->commit.written);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 6);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, BLK, 0), BLK);
	CU_ASSERT(all_bytes(buf, BLK, 'z'));

	/* a write through the mount between begin and commit: refused */
	CU_ASSERT_EQUAL(hy_indirector_copy_begin(ind, &raced), 0);
	memset(buf, 'W', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, 10, BLK), 10);
	ok = true;
	CU_ASSERT_EQUAL(hy_indirector_copy_commit(ind, &raced, 1, &ok), 0);
	CU_ASSERT_FALSE(ok);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 6);
	/* ... and a change that left the ctime as it was (within one clock
	 * tick on a real disk; here an O_TRUNC open's gate, truncating
	 * nothing): the gate's count alone tells, and the copy is refused */
	raced.block = 6;
	raced.bopt_block = 32;
	CU_ASSERT_EQUAL(hy_indirector_copy_begin(ind, &raced), 0);
	CU_ASSERT(hy_engine_truncate_open_begin(fx.engine, FX_FILE));
	hy_engine_truncate_open_end(fx.engine, FX_FILE, -1);
	ok = true;
	CU_ASSERT_EQUAL(hy_indirector_copy_commit(ind, &raced, 1, &ok), 0);
	CU_ASSERT_FALSE(ok);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 6);

	/* the new plan drops block 0: home again, journaled */
	records = fx.journal->commit.written;
	CU_ASSERT_EQUAL(hy_indirector_drop(ind, &drop, 1, &kept), 0);
	CU_ASSERT_EQUAL(kept, 0);
	CU_ASSERT_EQUAL(fx.journal->commit.written, records + 1);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, BLK, 0), BLK);
	CU_ASSERT(all_bytes(buf, BLK, 'A'));
	fx_teardown(&fx);
}

/* Issue 18: a file goes to the BOPT whole, its last partial block
 * included. File 8 (home object 2) is 5,000 bytes of 'P'; its blocks 0-1
 * are copied to BOPT blocks 40-41 as 'p' (zeros after the end, as
 * copy_read leaves them). What the BOPT serves stops at the home file's
 * size; a write inside the size goes to the BOPT; a truncation up keeps
 * the tail relocated (zeros after the old end on both sides); a write
 * that makes the file longer goes home, its relocated block settled
 * first, so the home file's size stays the file's. */
#define TAIL_FILE   8
#define TAIL_OBJECT 2

static void tail_copy(struct fixture *fx, uint64_t block, uint32_t nblocks, uint64_t bopt_block,
		      size_t want)
{
	struct hy_indirector *ind = hy_engine_indirector(fx->engine);
	struct hy_indirector_copy copy = {.file_id = TAIL_FILE,
					  .object = TAIL_OBJECT,
					  .block = block,
					  .nblocks = nblocks,
					  .bopt_block = bopt_block};
	static char buf[2 * BLK];
	bool ok = false;

	memset(buf, '?', sizeof(buf));
	CU_ASSERT_EQUAL(hy_indirector_copy_begin(ind, &copy), 0);
	CU_ASSERT_EQUAL(hy_indirector_copy_read(ind, &copy, buf), (ssize_t)want);
	CU_ASSERT(all_bytes(buf + want, nblocks * BLK - want, 0));
	/* a lower-case copy, to see where a read comes from */
	for (size_t i = 0; i < want; i++)
		buf[i] = (char)(buf[i] - 'A' + 'a');
	memcpy(fx->bm->data + FX_BASE + bopt_block * BLK, buf, nblocks * BLK);
	if (fx->bm->size < FX_BASE + (bopt_block + nblocks) * BLK)
		fx->bm->size = FX_BASE + (bopt_block + nblocks) * BLK;
	CU_ASSERT_EQUAL(hy_indirector_copy_commit(ind, &copy, 1, &ok), 0);
	CU_ASSERT(ok);
}

static void test_indirector_tail_block(void)
{
	struct fixture fx;
	struct hy_engine_file tail;
	struct hy_indirector_stats st;
	struct stamped_object *home;
	static char buf[3 * BLK];

	fx_setup(&fx, &stamped_ops, true, -1);
	home = &fx.home->obj[TAIL_OBJECT];
	outside_write(fx.home, TAIL_OBJECT, 0, 5000, 'P');
	hy_engine_file_init(fx.engine, &tail, TAIL_OBJECT);
	hy_engine_file_set_id(&tail, TAIL_FILE);
	hy_indirector_set_bopt_writes(hy_engine_indirector(fx.engine), true);
	tail_copy(&fx, 0, 2, 40, 5000);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5 + 2);

	/* the BOPT serves up to the end, no further */
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &tail, buf, 2 * BLK, 0), 5000);
	CU_ASSERT(all_bytes(buf, 5000, 'p'));
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &tail, buf, BLK, BLK), 5000 - BLK);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &tail, buf, BLK, 5000), 0);

	/* a write inside the size: into the BOPT, home as it was */
	memset(buf, 'W', 10);
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &tail, buf, 10, 4200), 10);
	CU_ASSERT_EQUAL(home->data[4200], 'P');
	CU_ASSERT_EQUAL(home->size, 5000);

	/* a truncation up: the tail stays relocated, zeros after the old end */
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &tail, 9000), 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5 + 2);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &tail, buf, BLK, BLK), BLK);
	CU_ASSERT(all_bytes(buf, 4200 - BLK, 'p'));
	CU_ASSERT(all_bytes(buf + 4200 - BLK, 10, 'W'));
	CU_ASSERT(all_bytes(buf + 4210 - BLK, 5000 - 4210, 'p'));
	CU_ASSERT(all_bytes(buf + 5000 - BLK, 2 * BLK - 5000, 0));

	/* a truncation down into the tail: its newer bytes home, released */
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &tail, 6000), 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5 + 1);
	CU_ASSERT_EQUAL(home->data[4200], 'W');
	CU_ASSERT(all_bytes(home->data + 5000, 1000, 0));

	/* the tail copied again (1,904 bytes), then a write past the end:
	 * home, the block released, the size the file's */
	tail_copy(&fx, 1, 1, 41, 6000 - BLK);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5 + 2);
	hy_indirector_get_stats(hy_engine_indirector(fx.engine), &st);
	memset(buf, 'E', 20);
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &tail, buf, 20, 5990), 20);
	CU_ASSERT_EQUAL(home->size, 6010);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5 + 1);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &tail, buf, BLK, BLK), 6010 - BLK);
	CU_ASSERT_EQUAL(buf[4200 - BLK], 'W');
	CU_ASSERT(all_bytes(buf + 5000 - BLK, 990, 0));
	CU_ASSERT(all_bytes(buf + 5990 - BLK, 20, 'E'));
	{
		struct hy_indirector_stats after;

		hy_indirector_get_stats(hy_engine_indirector(fx.engine), &after);
		CU_ASSERT_EQUAL(after.released_blocks, st.released_blocks + 1);
		CU_ASSERT_EQUAL(after.bopt_writes, st.bopt_writes);
	}
	fx_teardown(&fx);
}

/* Issue 18, item 4: read-ahead along the plan. File 7's blocks 2-5 lie at
 * BOPT blocks 10-13 (the fixture); file 8 (home object 2) is made 2 blocks
 * and copied to BOPT blocks 14-15, right after them: a chain. The BOPT
 * device records what it is asked to prefetch. */
static struct {
	int calls;
	off_t off[8], len[8];
} prefetched;

static int rec_prefetch(struct hy_device *dev, int64_t object, off_t off, off_t len)
{
	(void)dev;
	(void)object;
	if (prefetched.calls < 8) {
		prefetched.off[prefetched.calls] = off;
		prefetched.len[prefetched.calls] = len;
	}
	prefetched.calls++;
	return 0;
}

static void read_blocks(struct fixture *fx, struct hy_engine_file *f, uint64_t block,
			uint32_t nblocks)
{
	static char buf[4 * BLK];

	CU_ASSERT_EQUAL(hy_engine_read(fx->engine, f, buf, nblocks * BLK, (off_t)(block * BLK)),
			(ssize_t)(nblocks * BLK));
}

#define RA_AT(b) ((off_t)(FX_BASE + (b)*BLK))

static void test_indirector_readahead(void)
{
	static struct hy_device_ops prefetching;
	struct hy_indirector *ind;
	struct hy_indirector_stats st;
	struct hy_engine_file next;
	struct fixture fx;

	fx_setup(&fx, &stamped_ops, true, -1);
	ind = hy_engine_indirector(fx.engine);
	outside_write(fx.home, TAIL_OBJECT, 0, 2 * BLK, 'Q');
	hy_engine_file_init(fx.engine, &next, TAIL_OBJECT);
	hy_engine_file_set_id(&next, TAIL_FILE);
	tail_copy(&fx, 0, 2, 14, 2 * BLK);
	/* the BOPT device, now with a prefetch */
	prefetching = *fx.bopt->ops;
	prefetching.prefetch = rec_prefetch;
	fx.bopt->ops = &prefetching;
	memset(&prefetched, 0, sizeof(prefetched));
	hy_indirector_set_readahead(ind, 8 * BLK, (uint64_t)RA_AT(40));

	/* the first BOPT read, and one that goes on in the same file: no
	 * chain yet (the kernel's read-ahead of the BOPT file does that) */
	read_blocks(&fx, &fx.file, 2, 2);
	read_blocks(&fx, &fx.file, 4, 2);
	CU_ASSERT_EQUAL(prefetched.calls, 0);
	/* the next file starts where the last one ended: the next 8 blocks
	 * are asked for, in one request */
	read_blocks(&fx, &next, 0, 2);
	CU_ASSERT_EQUAL_FATAL(prefetched.calls, 1);
	CU_ASSERT_EQUAL(prefetched.off[0], RA_AT(16));
	CU_ASSERT_EQUAL(prefetched.len[0], 8 * BLK);
	/* a read inside what was asked for, past half of it: the window
	 * moves on from where it ended (blocks 24-28) */
	read_blocks(&fx, &fx.file, 8, 1); /* BOPT block 20 */
	CU_ASSERT_EQUAL_FATAL(prefetched.calls, 2);
	CU_ASSERT_EQUAL(prefetched.off[1], RA_AT(24));
	CU_ASSERT_EQUAL(prefetched.len[1], 5 * BLK);
	hy_indirector_get_stats(ind, &st);
	CU_ASSERT_EQUAL(st.readaheads, 2);
	CU_ASSERT_EQUAL(st.readahead_bytes_asked, 13 * BLK);
	CU_ASSERT_EQUAL(st.readahead_bytes, 8 * BLK);
	/* a jump back: nothing, until a chain starts again; then the window
	 * stops at the read region's end */
	hy_indirector_set_readahead(ind, 8 * BLK, (uint64_t)RA_AT(20));
	read_blocks(&fx, &fx.file, 2, 4);
	CU_ASSERT_EQUAL(prefetched.calls, 2);
	read_blocks(&fx, &next, 0, 2);
	CU_ASSERT_EQUAL_FATAL(prefetched.calls, 3);
	CU_ASSERT_EQUAL(prefetched.off[2], RA_AT(16));
	CU_ASSERT_EQUAL(prefetched.len[2], 4 * BLK);
	/* off: nothing at all */
	hy_indirector_set_readahead(ind, 0, (uint64_t)RA_AT(40));
	read_blocks(&fx, &fx.file, 2, 4);
	read_blocks(&fx, &next, 0, 2);
	CU_ASSERT_EQUAL(prefetched.calls, 3);
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
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);
	/* a write elsewhere in the file leaves the copies and the stamp */
	memset(buf, 'W', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, BLK, 0), BLK);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, 0);
	fx_read_all(&fx, "WBcdefGHiJKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 4);
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5);
	fx_teardown(&fx);

	/* With a stamp op, stamp 0 means unknown: the copies are not used. */
	fx_setup(&fx, &stamped_ops, false, 0);
	fx_read_all(&fx, "ABCDEFGHIJKL");
	CU_ASSERT_EQUAL(bopt_reads(&fx), 0);
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 1);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 0);
	fx_teardown(&fx);
}

/* ---- BORG's writes into the BOPT --------------------------------------- */

struct race_io {
	struct fixture *fx;
	uint64_t block;
	char c;	       /* the write's byte */
	char got[BLK]; /* the read's bytes */
	ssize_t rc;
};

static void *race_write(void *arg)
{
	struct race_io *io = arg;
	char buf[BLK];

	memset(buf, io->c, sizeof(buf));
	io->rc = hy_engine_write(io->fx->engine, &io->fx->file, buf, BLK, (off_t)(io->block * BLK));
	return NULL;
}

static void *race_read(void *arg)
{
	struct race_io *io = arg;

	io->rc = hy_engine_read(io->fx->engine, &io->fx->file, io->got, BLK,
				(off_t)(io->block * BLK));
	return NULL;
}

/* The fixture with a journal and BORG's writes on; the BOPT device notes
 * the journal and the map at each write. */
static void fx_setup_writes(struct fixture *fx)
{
	fx_setup(fx, &stamped_ops, true, -1);
	hy_indirector_set_bopt_writes(hy_engine_indirector(fx->engine), true);
	fx->bm->watch_map = fx->map;
	fx->bm->watch_journal = fx->journal;
	fx->bm->watch_stamp = &fx->home->obj[FX_OBJECT].stamp;
}

static void write_block(struct fixture *fx, uint64_t blk, char c)
{
	char buf[BLK];

	memset(buf, c, sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx->engine, &fx->file, buf, BLK, (off_t)(blk * BLK)), BLK);
}

/* A read that meets a write in flight: the writer has moved the home
 * file's ctime (its mtime is set first) and not yet its stamp. The read
 * must wait it out and read block 3's newer copy from the BOPT, not the
 * older one at home (it did read home once). No sleeps: the writer waits
 * in set_mtime until the reader has looked at the stamp. */
static void test_read_meets_write_in_flight(void)
{
	struct race_hook hook = {.pause_writes = false};
	struct race_io w = {.block = 5, .c = 'W'}, r = {.block = 3};
	pthread_t wt, rt;
	struct fixture fx;
	int seen;

	fx_setup_writes(&fx);
	w.fx = r.fx = &fx;
	write_block(&fx, 3, 'N'); /* dirty: the newer copy is in the BOPT */
	CU_ASSERT(all_bytes(bopt_block(&fx, 11), BLK, 'N'));
	CU_ASSERT_FALSE(all_bytes(home_block(&fx, 3), BLK, 'N'));
	pthread_mutex_init(&hook.lock, NULL);
	pthread_cond_init(&hook.cond, NULL);
	hook.pause_writes = true;
	fx.home->hook = &hook;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&wt, NULL, race_write, &w), 0);
	pthread_mutex_lock(&hook.lock);
	while (!hook.paused)
		pthread_cond_wait(&hook.cond, &hook.lock);
	seen = hook.getattrs;
	pthread_mutex_unlock(&hook.lock);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&rt, NULL, race_read, &r), 0);
	/* the reader has compared the stamp (and found it moved) */
	pthread_mutex_lock(&hook.lock);
	while (hook.getattrs == seen)
		pthread_cond_wait(&hook.cond, &hook.lock);
	hook.go = true;
	pthread_cond_broadcast(&hook.cond);
	pthread_mutex_unlock(&hook.lock);
	pthread_join(wt, NULL);
	pthread_join(rt, NULL);

	CU_ASSERT_EQUAL(w.rc, BLK);
	CU_ASSERT_EQUAL(r.rc, BLK);
	CU_ASSERT(all_bytes(r.got, BLK, 'N'));
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);
	fx.home->hook = NULL;
	pthread_cond_destroy(&hook.cond);
	pthread_mutex_destroy(&hook.lock);
	fx_teardown(&fx);
}

/* A write to relocated blocks goes into their BOPT copies, marked dirty:
 * before the data goes there the home file's modification time (and so its
 * ctime) moved, the mark was journaled (not waited for) and is in the map.
 * Its home pieces go home; the home file's data stays; reads see the new
 * bytes; a block already dirty gets no second mark. */
static void test_bopt_write_dirty(void)
{
	const struct want_record want[] = {
		{HY_MJ_DIRTY, 5, 1}, {HY_MJ_DIRTY, 3, 1}, {HY_MJ_DIRTY, 2, 1}, {HY_MJ_DIRTY, 4, 1}};
	static char snap[STAMPED_SIZE];
	struct stamped_object *home;
	struct hy_device_stats bs;
	struct hy_map_piece p;
	struct fixture fx;
	int64_t stamp = 0, stamp0, mtime;
	char buf[3 * BLK];

	fx_setup_writes(&fx);
	home = &fx.home->obj[FX_OBJECT];
	CU_ASSERT(fx.engine->indirector->bopt_writes_on);
	stamp0 = home->stamp;

	/* Two blocks: relocated, clean block 5 (BOPT block 13) and home block
	 * 6. (Relocated blocks 3 and 6 are not adjacent: block 3 comes next.) */
	memset(buf, 'W', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, 2 * BLK, 5 * BLK), 2 * BLK);
	CU_ASSERT(all_bytes(bopt_block(&fx, 13), BLK, 'W'));
	CU_ASSERT(all_bytes(home_block(&fx, 5), BLK, 'F')); /* home copy not yet */
	CU_ASSERT(all_bytes(home_block(&fx, 6), BLK, 'W'));
	CU_ASSERT(all_bytes(bopt_block(&fx, 12), BLK, 'e')); /* the neighbours untouched */
	CU_ASSERT(all_bytes(bopt_block(&fx, 14), BLK, '?'));
	CU_ASSERT(all_bytes(home_block(&fx, 7), BLK, 'H'));
	p = piece_at(fx.map, 5);
	CU_ASSERT_EQUAL(p.bopt_block, 13);
	CU_ASSERT(p.dirty);
	CU_ASSERT_FALSE(piece_at(fx.map, 4).dirty);
	CU_ASSERT_EQUAL(fx_map(&fx).dirty_blocks, 1);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5);
	check_journal(&fx, want, 1);
	/* not waited for: fsync and close make it durable */
	CU_ASSERT_EQUAL(fx.journal->commit.durable, 0);
	CU_ASSERT(fx.bm->watched_writes >= 1);
	CU_ASSERT_EQUAL(fx.bm->written_at_write, 1);
	CU_ASSERT_EQUAL(fx.bm->dirty_at_write, 1);
	CU_ASSERT(fx.bm->stamp_at_write > stamp0);
	CU_ASSERT_EQUAL(fx.engine->indirector->bopt_writes, 1);
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 0);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 0);

	/* One relocated block only: block 3 into BOPT block 11. The home data
	 * stays byte for byte, but its modification time moves. */
	memcpy(snap, home->data, sizeof(snap));
	mtime = home->mtime_ns;
	stamp0 = home->stamp;
	fx.bm->watched_writes = 0;
	write_block(&fx, 3, 'V');
	CU_ASSERT(all_bytes(bopt_block(&fx, 11), BLK, 'V'));
	CU_ASSERT_EQUAL(memcmp(snap, home->data, sizeof(snap)), 0);
	CU_ASSERT_EQUAL(home->size, FX_BLOCKS * BLK);
	CU_ASSERT(home->mtime_ns > mtime);
	p = piece_at(fx.map, 3);
	CU_ASSERT_EQUAL(p.bopt_block, 11);
	CU_ASSERT(p.dirty);
	CU_ASSERT_EQUAL(fx_map(&fx).dirty_blocks, 2);
	check_journal(&fx, want, 2);
	CU_ASSERT(fx.bm->watched_writes >= 1);
	CU_ASSERT_EQUAL(fx.bm->written_at_write, 2);
	CU_ASSERT_EQUAL(fx.bm->dirty_at_write, 2);
	CU_ASSERT(fx.bm->stamp_at_write > stamp0);	     /* the ctime moved first */
	CU_ASSERT_EQUAL(home->stamp, fx.bm->stamp_at_write); /* and not after */
	CU_ASSERT_EQUAL(fx.engine->indirector->bopt_writes, 2);
	/* the stamp follows the home's new change time: the copies stay fresh */
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, home->stamp);

	/* Reads see the new bytes: the relocated blocks (5 of them) from the
	 * BOPT, new or not. */
	hy_device_get_stats(fx.bopt, &bs);
	fx_read_all(&fx, "ABcVeWWHiJKL");
	{
		struct hy_device_stats after;

		hy_device_get_stats(fx.bopt, &after);
		CU_ASSERT_EQUAL(after.bytes_read - bs.bytes_read, 5 * BLK);
	}
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);

	/* A second write to dirty block 3: no new mark, straight to the BOPT. */
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, "UUUUUUUUUU", 10, 3 * BLK + 100), 10);
	check_journal(&fx, want, 2);
	CU_ASSERT_EQUAL(fx.engine->indirector->bopt_writes, 3);
	CU_ASSERT(all_bytes(bopt_block(&fx, 11), 100, 'V'));
	CU_ASSERT(all_bytes(bopt_block(&fx, 11) + 100, 10, 'U'));
	CU_ASSERT(all_bytes(bopt_block(&fx, 11) + 110, BLK - 110, 'V'));
	CU_ASSERT(all_bytes(home_block(&fx, 3), BLK, 'D'));
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, 20, 3 * BLK + 95), 20);
	CU_ASSERT_EQUAL(memcmp(buf, "VVVVVUUUUUUUUUUVVVVV", 20), 0);

	/* Blocks 2-4 (clean, dirty, clean): one mark each for the clean ones,
	 * after which 2-5 are one dirty extent. */
	memset(buf, 'X', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, 3 * BLK, 2 * BLK), 3 * BLK);
	check_journal(&fx, want, 4);
	CU_ASSERT_EQUAL(fx_map(&fx).dirty_blocks, 4);
	CU_ASSERT_EQUAL(fx_map(&fx).extents, 2);
	CU_ASSERT_EQUAL(memcmp(snap, home->data, sizeof(snap)), 0);
	fx_read_all(&fx, "ABXXXWWHiJKL");
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 0);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 0);
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);
	fx_teardown(&fx);
}

/* hy_engine_sync_home: the dirty block goes home, durably, with the home
 * file's modification time kept, then is marked clean (journaled first);
 * its BOPT copy stays in use. */
static void test_bopt_write_sync_home(void)
{
	const struct want_record want[] = {{HY_MJ_DIRTY, 3, 1}, {HY_MJ_CLEAN, 3, 1}};
	struct stamped_object *home;
	struct hy_map_piece p;
	struct fixture fx;
	int64_t stamp = 0, mtime;

	fx_setup_writes(&fx);
	home = &fx.home->obj[FX_OBJECT];
	write_block(&fx, 3, 'W');
	CU_ASSERT(all_bytes(home_block(&fx, 3), BLK, 'D'));
	CU_ASSERT_EQUAL(home->syncs, 0);
	mtime = home->mtime_ns;

	CU_ASSERT_EQUAL(hy_engine_sync_home(fx.engine, &fx.file), 1);
	for (uint64_t blk = 0; blk < FX_BLOCKS; blk++)
		CU_ASSERT(all_bytes(home_block(&fx, blk), BLK, blk == 3 ? 'W' : (char)('A' + blk)));
	CU_ASSERT_EQUAL(home->size, FX_BLOCKS * BLK);
	/* durable: synced after the copy (the snapshot has it) */
	CU_ASSERT_EQUAL(home->syncs, 1);
	CU_ASSERT(home->last_data_only);
	CU_ASSERT_EQUAL(home->synced_size, FX_BLOCKS * BLK);
	CU_ASSERT(all_bytes(home->synced + 3 * BLK, BLK, 'W'));
	/* the copy home is not a change of the user's: the time is as before */
	CU_ASSERT_EQUAL(home->mtime_ns, mtime);
	check_journal(&fx, want, 2);
	CU_ASSERT_EQUAL(fx.journal->commit.durable, 2); /* the dirty mark with the clean one */
	p = piece_at(fx.map, 3);
	CU_ASSERT_EQUAL(p.bopt_block, 11);
	CU_ASSERT_FALSE(p.dirty);
	CU_ASSERT_EQUAL(fx_map(&fx).dirty_blocks, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 5);
	CU_ASSERT_EQUAL(fx_map(&fx).extents, 2); /* 2-5 one extent again */
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 1);
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 0);
	CU_ASSERT(all_bytes(bopt_block(&fx, 11), BLK, 'W'));
	/* the stamp follows the home's change time: the copies stay in use */
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, home->stamp);
	fx_read_all(&fx, "ABcWefGHiJKL");
	CU_ASSERT_EQUAL(fx.engine->indirector->bopt_reads, 2);
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);

	/* Nothing dirty: nothing to do. */
	CU_ASSERT_EQUAL(hy_engine_sync_home(fx.engine, &fx.file), 0);
	CU_ASSERT_EQUAL(home->syncs, 1);
	CU_ASSERT_EQUAL(home->mtime_ns, mtime);
	check_journal(&fx, want, 2);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 1);
	fx_teardown(&fx);

	/* A home device with no getattr, set_mtime or writable op: the whole
	 * block goes home through the object itself. */
	fx_setup(&fx, &unstamped_ops, true, 0);
	hy_indirector_set_bopt_writes(hy_engine_indirector(fx.engine), true);
	write_block(&fx, 8, 'W');
	CU_ASSERT(all_bytes(home_block(&fx, 8), BLK, 'I'));
	CU_ASSERT(piece_at(fx.map, 8).dirty);
	CU_ASSERT_EQUAL(hy_engine_sync_home(fx.engine, &fx.file), 1);
	CU_ASSERT(all_bytes(home_block(&fx, 8), BLK, 'W'));
	CU_ASSERT_EQUAL(fx.home->obj[FX_OBJECT].syncs, 1);
	CU_ASSERT_EQUAL(fx.home->obj[FX_OBJECT].size, FX_BLOCKS * BLK);
	CU_ASSERT_FALSE(piece_at(fx.map, 8).dirty);
	{
		const struct want_record want8[] = {{HY_MJ_DIRTY, 8, 1}, {HY_MJ_CLEAN, 8, 1}};

		check_journal(&fx, want8, 2);
	}
	fx_teardown(&fx);
}

/* fsync and close send dirty blocks home too; fsync then syncs the home
 * file as asked. A read-only handle's close writes home through a writable
 * handle the device gives (and takes back). */
static void test_bopt_write_fsync_close(void)
{
	const struct want_record want[] = {{HY_MJ_DIRTY, 4, 1}, {HY_MJ_CLEAN, 4, 1},
					   {HY_MJ_DIRTY, 8, 1}, {HY_MJ_CLEAN, 8, 1},
					   {HY_MJ_DIRTY, 2, 1}, {HY_MJ_CLEAN, 2, 1}};
	struct stamped_object *home;
	struct hy_engine_file ro;
	struct fixture fx;
	int64_t mtime;

	fx_setup_writes(&fx);
	home = &fx.home->obj[FX_OBJECT];

	/* fsync: home (data only, with the copy), then the file as asked */
	write_block(&fx, 4, 'W');
	mtime = home->mtime_ns;
	CU_ASSERT_EQUAL(hy_engine_fsync(fx.engine, &fx.file, false), 0);
	CU_ASSERT(all_bytes(home_block(&fx, 4), BLK, 'W'));
	CU_ASSERT_EQUAL(home->syncs, 2);
	CU_ASSERT_FALSE(home->last_data_only);
	CU_ASSERT(all_bytes(home->synced + 4 * BLK, BLK, 'W'));
	CU_ASSERT_EQUAL(home->mtime_ns, mtime);
	CU_ASSERT_FALSE(piece_at(fx.map, 4).dirty);
	CU_ASSERT_EQUAL(fx_map(&fx).dirty_blocks, 0);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 1);
	check_journal(&fx, want, 2);
	CU_ASSERT_EQUAL(fx.journal->commit.durable, 2);
	/* the BOPT copy, clean and still in use, is durable too */
	CU_ASSERT(fx.bm->syncs >= 1);
	/* nothing dirty: one sync of the file */
	CU_ASSERT_EQUAL(hy_engine_fsync(fx.engine, &fx.file, true), 0);
	CU_ASSERT_EQUAL(home->syncs, 3);
	CU_ASSERT(home->last_data_only);
	check_journal(&fx, want, 2);

	/* close */
	write_block(&fx, 8, 'V');
	CU_ASSERT(all_bytes(home_block(&fx, 8), BLK, 'I'));
	mtime = home->mtime_ns;
	CU_ASSERT_EQUAL(hy_engine_close(fx.engine, &fx.file), 0);
	CU_ASSERT(all_bytes(home_block(&fx, 8), BLK, 'V'));
	CU_ASSERT_EQUAL(home->syncs, 4);
	CU_ASSERT(all_bytes(home->synced + 8 * BLK, BLK, 'V'));
	CU_ASSERT_EQUAL(home->mtime_ns, mtime);
	CU_ASSERT_FALSE(piece_at(fx.map, 8).dirty);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 2);
	check_journal(&fx, want, 4);
	CU_ASSERT_EQUAL(fx.journal->commit.durable, 4);
	CU_ASSERT_EQUAL(hy_engine_close(fx.engine, &fx.file), 0);
	CU_ASSERT_EQUAL(home->syncs, 4);
	check_journal(&fx, want, 4);

	/* The close of a read-only handle of the file: its descriptor cannot
	 * write, the one writable() gives can, and is given back. */
	write_block(&fx, 2, 'U');
	CU_ASSERT_EQUAL(hy_device_write(fx.backing, ST_RO(FX_OBJECT), "x", 1, 0), -EBADF);
	hy_engine_file_init(fx.engine, &ro, ST_RO(FX_OBJECT));
	hy_engine_file_set_id(&ro, FX_FILE);
	CU_ASSERT_EQUAL(hy_engine_close(fx.engine, &ro), 0);
	CU_ASSERT(all_bytes(home_block(&fx, 2), BLK, 'U'));
	CU_ASSERT_EQUAL(fx.home->opened, 1);
	CU_ASSERT_EQUAL(fx.home->closed, 1);
	CU_ASSERT_EQUAL(fx.home->bad_closes, 0);
	CU_ASSERT_FALSE(piece_at(fx.map, 2).dirty);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 3);
	check_journal(&fx, want, 6);
	CU_ASSERT_EQUAL(fx.journal->commit.durable, 6);
	/* a writable handle is asked for only when there is something to write */
	CU_ASSERT_EQUAL(hy_engine_close(fx.engine, &ro), 0);
	CU_ASSERT_EQUAL(fx.home->opened, 1);
	fx_read_all(&fx, "ABUdWfGHVJKL");
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);
	fx_teardown(&fx);
}

/* An fsync waits only for the map journal's records of its own file's
 * gate: a write home over another file's relocated block journals a
 * release without waiting, and the fsync of a file with nothing
 * relocated syncs no journal (before, every fsync synced every record
 * written so far); the fsync of the file whose block was released makes
 * the record durable, as fdatasync must (its ctime need not be). */
static void test_fsync_waits_for_its_records(void)
{
	struct hy_engine_file other;
	struct fixture fx;
	char buf[BLK];

	fx_setup(&fx, &stamped_ops, true, -1);
	CU_ASSERT_NOT_EQUAL_FATAL(FX_FILE % HY_INDIRECTOR_GATES,
				  (FX_FILE + 1) % HY_INDIRECTOR_GATES);
	memset(buf, 'w', sizeof(buf));
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, buf, BLK, 3 * BLK), BLK);
	CU_ASSERT_EQUAL(fx.journal->commit.written, 1);
	CU_ASSERT_EQUAL(fx.journal->commit.durable, 0);
	CU_ASSERT_EQUAL(piece_at(fx.map, 3).bopt_block, HY_MAP_HOME);

	hy_engine_file_init(fx.engine, &other, FX_OBJECT + 1);
	hy_engine_file_set_id(&other, FX_FILE + 1);
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &other, buf, BLK, 0), BLK);
	CU_ASSERT_EQUAL(hy_engine_fsync(fx.engine, &other, true), 0);
	CU_ASSERT_EQUAL(fx.home->obj[FX_OBJECT + 1].syncs, 1);
	CU_ASSERT_EQUAL(fx.journal->commit.durable, 0);

	CU_ASSERT_EQUAL(hy_engine_fsync(fx.engine, &fx.file, true), 0);
	CU_ASSERT_EQUAL(fx.journal->commit.durable, 1);
	CU_ASSERT_EQUAL(fx.home->obj[FX_OBJECT].syncs, 1);
	/* nothing new in its gate: no wait, and still one sync of the file */
	CU_ASSERT_EQUAL(hy_engine_fsync(fx.engine, &fx.file, true), 0);
	CU_ASSERT_EQUAL(fx.journal->commit.durable, 1);
	CU_ASSERT_EQUAL(fx.home->obj[FX_OBJECT].syncs, 2);
	fx_teardown(&fx);
}

/* A truncation inside a dirty block: the block goes home before the
 * relocations from it on are released, so its bytes below the new size
 * are home; a truncation to 0 leaves nothing relocated. */
static void test_bopt_write_truncate(void)
{
	const struct want_record want[] = {{HY_MJ_DIRTY, 3, 1},
					   {HY_MJ_CLEAN, 3, 1},
					   {HY_MJ_RELEASE, 3, 3},
					   {HY_MJ_RELEASE, 8, 1}};
	const struct want_record want0[] = {{HY_MJ_DIRTY, 2, 1},   {HY_MJ_DIRTY, 8, 1},
					    {HY_MJ_CLEAN, 2, 1},   {HY_MJ_CLEAN, 8, 1},
					    {HY_MJ_RELEASE, 2, 4}, {HY_MJ_RELEASE, 8, 1}};
	static char out[FX_BLOCKS * BLK];
	struct stamped_object *home;
	struct fixture fx;
	int64_t stamp;

	fx_setup_writes(&fx);
	home = &fx.home->obj[FX_OBJECT];
	write_block(&fx, 3, 'W');
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &fx.file, 3 * BLK + 100), 0);
	CU_ASSERT_EQUAL(home->size, 3 * BLK + 100);
	CU_ASSERT(all_bytes(home_block(&fx, 3), 100, 'W'));
	CU_ASSERT(all_bytes(home_block(&fx, 2), BLK, 'C'));
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 1); /* block 2 */
	CU_ASSERT_EQUAL(fx_map(&fx).dirty_blocks, 0);
	CU_ASSERT_EQUAL(piece_at(fx.map, 2).bopt_block, 10);
	CU_ASSERT_EQUAL(piece_at(fx.map, 3).bopt_block, HY_MAP_HOME);
	CU_ASSERT_EQUAL(piece_at(fx.map, 8).bopt_block, HY_MAP_HOME);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 1);
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 4);
	check_journal(&fx, want, 4);
	CU_ASSERT(fx.journal->commit.durable >= 2); /* the block was home, durably, first */
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), 0);
	CU_ASSERT_EQUAL(stamp, home->stamp);
	memset(out, 0, sizeof(out));
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, out, sizeof(out), 0), 3 * BLK + 100);
	CU_ASSERT(all_bytes(out, BLK, 'A'));
	CU_ASSERT(all_bytes(out + 2 * BLK, BLK, 'c')); /* still from the BOPT */
	CU_ASSERT(all_bytes(out + 3 * BLK, 100, 'W'));
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);
	fx_teardown(&fx);

	/* to 0, with two dirty blocks */
	fx_setup_writes(&fx);
	home = &fx.home->obj[FX_OBJECT];
	write_block(&fx, 2, 'X');
	write_block(&fx, 8, 'Y');
	CU_ASSERT_EQUAL(fx_map(&fx).dirty_blocks, 2);
	CU_ASSERT_EQUAL(hy_engine_truncate(fx.engine, &fx.file, 0), 0);
	CU_ASSERT_EQUAL(home->size, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).files, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).extents, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 0);
	CU_ASSERT_EQUAL(hy_map_get_stamp(fx.map, FX_FILE, &stamp), -ENOENT);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 2);
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 5);
	check_journal(&fx, want0, 6);
	CU_ASSERT(fx.journal->commit.durable >= 4);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, out, sizeof(out), 0), 0);
	fx_teardown(&fx);
}

/* A hole punched in a dirty block: the block goes home first, so the bytes
 * around the hole are the new ones; a clean block is released with no
 * clean mark. */
static void test_bopt_write_punch_hole(void)
{
	const struct want_record want[] = {{HY_MJ_DIRTY, 3, 1},
					   {HY_MJ_CLEAN, 3, 1},
					   {HY_MJ_RELEASE, 3, 1},
					   {HY_MJ_RELEASE, 8, 1}};
	const int punch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	struct stamped_object *home;
	struct fixture fx;
	char buf[BLK];

	fx_setup_writes(&fx);
	home = &fx.home->obj[FX_OBJECT];
	write_block(&fx, 3, 'W');
	CU_ASSERT_EQUAL(hy_engine_fallocate(fx.engine, &fx.file, punch, 3 * BLK + 100, 200), 0);
	CU_ASSERT_EQUAL(home->size, FX_BLOCKS * BLK);
	CU_ASSERT(all_bytes(home_block(&fx, 3), 100, 'W'));
	CU_ASSERT(all_bytes(home_block(&fx, 3) + 100, 200, '\0'));
	CU_ASSERT(all_bytes(home_block(&fx, 3) + 300, BLK - 300, 'W'));
	CU_ASSERT_EQUAL(piece_at(fx.map, 3).bopt_block, HY_MAP_HOME);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 4);
	CU_ASSERT_EQUAL(fx_map(&fx).dirty_blocks, 0);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 1);
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 1);
	check_journal(&fx, want, 3);
	CU_ASSERT(fx.journal->commit.durable >= 2);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, buf, BLK, 3 * BLK), BLK);
	CU_ASSERT_EQUAL(memcmp(buf, home_block(&fx, 3), BLK), 0);
	fx_read_all(&fx, "ABcWefGHiJKL");
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);

	/* clean block 8: released, nothing synced */
	CU_ASSERT_EQUAL(hy_engine_fallocate(fx.engine, &fx.file, punch, 8 * BLK, BLK), 0);
	CU_ASSERT(all_bytes(home_block(&fx, 8), BLK, '\0'));
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 1);
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 2);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 3);
	check_journal(&fx, want, 4);
	fx_teardown(&fx);
}

/* A change made outside to a file with a dirty block: the read that finds
 * it drops the copies, and the dirty block went home first, within the
 * home file's size now. */
static void test_bopt_write_outside_change(void)
{
	const struct want_record want[] = {{HY_MJ_DIRTY, 3, 1},
					   {HY_MJ_CLEAN, 3, 1},
					   {HY_MJ_RELEASE, 2, 4},
					   {HY_MJ_RELEASE, 8, 1}};
	static char out[FX_BLOCKS * BLK];
	struct stamped_object *home;
	struct fixture fx;

	/* written elsewhere: the whole dirty block goes home */
	fx_setup_writes(&fx);
	home = &fx.home->obj[FX_OBJECT];
	write_block(&fx, 3, 'W');
	outside_write(fx.home, FX_OBJECT, 9 * BLK, BLK, 'Y');
	fx_read_all(&fx, "ABCWEFGHIYKL");
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 1);
	CU_ASSERT_EQUAL(fx.engine->indirector->bopt_reads, 0);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 1);
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 5);
	CU_ASSERT_EQUAL(fx_map(&fx).files, 0);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 0);
	CU_ASSERT(all_bytes(home_block(&fx, 3), BLK, 'W'));
	CU_ASSERT_EQUAL(home->size, FX_BLOCKS * BLK);
	check_journal(&fx, want, 4);
	CU_ASSERT(fx.journal->commit.durable >= 2);
	fx_teardown(&fx);

	/* cut outside inside the dirty block: what is left of it goes home,
	 * and the file does not grow back */
	fx_setup_writes(&fx);
	home = &fx.home->obj[FX_OBJECT];
	write_block(&fx, 3, 'W');
	outside_truncate(fx.home, FX_OBJECT, 3 * BLK + 100);
	memset(out, 0, sizeof(out));
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, out, sizeof(out), 0), 3 * BLK + 100);
	CU_ASSERT(all_bytes(out + 2 * BLK, BLK, 'C'));
	CU_ASSERT(all_bytes(out + 3 * BLK, 100, 'W'));
	CU_ASSERT_EQUAL(home->size, 3 * BLK + 100);
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 1);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 1);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 0);
	check_journal(&fx, want, 4);
	fx_teardown(&fx);

	/* cut below it: none of it goes home */
	fx_setup_writes(&fx);
	home = &fx.home->obj[FX_OBJECT];
	write_block(&fx, 3, 'W');
	outside_truncate(fx.home, FX_OBJECT, 2 * BLK);
	CU_ASSERT_EQUAL(hy_engine_read(fx.engine, &fx.file, out, sizeof(out), 0), 2 * BLK);
	CU_ASSERT_EQUAL(home->size, 2 * BLK);
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 1);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 0);
	fx_teardown(&fx);
}

/* BORG's writes off, with a dirty block from before (a mount with them on,
 * its journal replayed): a write there sends the dirty block home first,
 * then releases it and writes home, so the rest of the block is kept. */
static void test_home_write_settles_dirty(void)
{
	const struct want_record want[] = {{HY_MJ_CLEAN, 3, 1}, {HY_MJ_RELEASE, 3, 1}};
	struct hy_device_stats bs;
	struct fixture fx;

	fx_setup(&fx, &stamped_ops, true, -1);
	CU_ASSERT_FALSE(fx.engine->indirector->bopt_writes_on);
	CU_ASSERT_EQUAL(hy_map_set_dirty(fx.map, FX_FILE, 3, 1, true), 1);
	fill(fx.bm, FX_BASE + 11 * BLK, BLK, 'W');
	CU_ASSERT_EQUAL(hy_engine_write(fx.engine, &fx.file, "QQQQQQQQQQ", 10, 3 * BLK + 50), 10);
	CU_ASSERT(all_bytes(home_block(&fx, 3), 50, 'W'));
	CU_ASSERT(all_bytes(home_block(&fx, 3) + 50, 10, 'Q'));
	CU_ASSERT(all_bytes(home_block(&fx, 3) + 60, BLK - 60, 'W'));
	CU_ASSERT_EQUAL(piece_at(fx.map, 3).bopt_block, HY_MAP_HOME);
	CU_ASSERT_EQUAL(fx_map(&fx).blocks, 4);
	CU_ASSERT_EQUAL(fx_map(&fx).dirty_blocks, 0);
	CU_ASSERT_EQUAL(fx.engine->indirector->synced_blocks, 1);
	CU_ASSERT_EQUAL(fx.engine->indirector->released_blocks, 1);
	CU_ASSERT_EQUAL(fx.engine->indirector->bopt_writes, 0);
	hy_device_get_stats(fx.bopt, &bs);
	CU_ASSERT_EQUAL(bs.writes, 0);
	check_journal(&fx, want, 2);
	CU_ASSERT(fx.journal->commit.durable >= 1);
	fx_read_all(&fx, "ABcWefGHiJKL");
	CU_ASSERT_EQUAL(fx.engine->indirector->stale_files, 0);
	fx_teardown(&fx);
}

/* Copies @len bytes (all when < 0) of the file at @from to a new file @to. */
static void copy_file(const char *from, const char *to, ssize_t len)
{
	char buf[4096];
	int in = open(from, O_RDONLY), out = open(to, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	ssize_t n;

	CU_ASSERT_FATAL(in >= 0 && out >= 0);
	n = pread(in, buf, sizeof(buf), 0);
	CU_ASSERT_FATAL(n >= 0 && n < (ssize_t)sizeof(buf));
	if (len >= 0 && len < n)
		n = len;
	CU_ASSERT_EQUAL(pwrite(out, buf, (size_t)n, 0), n);
	close(in);
	close(out);
}

/* The fixture's map as a restart would rebuild it: the relocations (the
 * checkpoint), then the journal at @path replayed. */
static struct hy_map *replayed_map(const char *path, uint64_t *replayed)
{
	struct hy_map_journal *j = NULL;
	struct hy_map *m;
	char why[512] = "";

	*replayed = 0;
	CU_ASSERT_EQUAL_FATAL(hy_map_new(&m), 0);
	for (size_t i = 0; i < sizeof(fx_extents) / sizeof(fx_extents[0]); i++) {
		struct hy_map_extent e = {.file_id = FX_FILE,
					  .block = fx_extents[i].block,
					  .nblocks = fx_extents[i].nblocks,
					  .bopt_block = fx_extents[i].bopt_block};

		CU_ASSERT_EQUAL(hy_map_relocate(m, &e), 0);
	}
	CU_ASSERT_EQUAL(hy_map_journal_open(path, 1, 0, m, &j, replayed, why, sizeof(why)), 0);
	hy_map_journal_close(j);
	return m;
}

/* A crash after a dirty write (the daemon killed: the journal file holds
 * what was written to it, durable or not): the journal replayed into a
 * fresh map marks the block dirty (so it is read from the BOPT and goes
 * home later); after the sync home it is clean; a clean record torn by a
 * crash leaves it dirty, which is safe. */
static void test_bopt_write_journal_replay(void)
{
	const struct hy_map_piece want[] = {{0, 2, false, HY_MAP_HOME}, {2, 1, false, 10},
					    {3, 1, true, 11},		{4, 2, false, 12},
					    {6, 2, false, HY_MAP_HOME}, {8, 1, false, 20},
					    {9, 3, false, HY_MAP_HOME}};
	struct hy_map_piece p[16];
	struct hy_map_stats st;
	struct hy_map *m;
	struct fixture fx;
	uint64_t replayed;
	char *copy;
	int n;

	fx_setup_writes(&fx);
	CU_ASSERT_FATAL(asprintf(&copy, "%s/crash.journal", fx.dir) > 0);
	write_block(&fx, 3, 'W');

	copy_file(fx.journal_path, copy, -1);
	m = replayed_map(copy, &replayed);
	CU_ASSERT_EQUAL(replayed, 1);
	n = hy_map_lookup(m, FX_FILE, 0, FX_BLOCKS, p, 16);
	CU_ASSERT_EQUAL(n, 7);
	for (int i = 0; i < n && i < 7; i++) {
		CU_ASSERT_EQUAL(p[i].block, want[i].block);
		CU_ASSERT_EQUAL(p[i].nblocks, want[i].nblocks);
		CU_ASSERT_EQUAL(p[i].dirty, want[i].dirty);
		CU_ASSERT_EQUAL(p[i].bopt_block, want[i].bopt_block);
	}
	hy_map_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.dirty_blocks, 1);
	CU_ASSERT_EQUAL(st.blocks, 5);
	hy_map_free(m);

	/* after the sync home */
	CU_ASSERT_EQUAL(hy_engine_sync_home(fx.engine, &fx.file), 1);
	copy_file(fx.journal_path, copy, -1);
	m = replayed_map(copy, &replayed);
	CU_ASSERT_EQUAL(replayed, 2);
	hy_map_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.dirty_blocks, 0);
	CU_ASSERT_EQUAL(st.blocks, 5);
	CU_ASSERT_EQUAL(st.extents, 2);
	CU_ASSERT_EQUAL(piece_at(m, 3).bopt_block, 11);
	hy_map_free(m);

	/* the clean record torn */
	copy_file(fx.journal_path, copy, HY_MAP_JOURNAL_RECORD + 20);
	m = replayed_map(copy, &replayed);
	CU_ASSERT_EQUAL(replayed, 1);
	CU_ASSERT(piece_at(m, 3).dirty);
	hy_map_free(m);
	free(copy);
	fx_teardown(&fx);
}

/* The number of descriptors open in this process. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int64_t mtime_of(int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -1;
	return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

/* Over real files (copy_file_range(2) needs real descriptors, so the copy
 * is tested here and not over the model): a copy from a file with a dirty
 * block copies the new bytes, and the source's modification time is kept;
 * a read-only handle's close writes home through a descriptor opened for
 * it, and closed again. */
static void test_bopt_write_real_files(void)
{
	char *tmp = hy_test_tmpdir(), src[512], dst[512], jpath[512], why[512] = "";
	struct memory_device *bm = calloc(1, sizeof(*bm));
	struct hy_map_extent e = {.file_id = FX_FILE, .block = 2, .nblocks = 4, .bopt_block = 10};
	static char buf[FX_BLOCKS * BLK];
	struct hy_engine_file in, out, ro;
	struct hy_map_journal *journal;
	struct hy_device *backing, *bopt;
	struct hy_engine *engine;
	struct hy_map *map;
	int fd, fd_out, fd_ro, fds;
	int64_t mtime;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bm);
	snprintf(src, sizeof(src), "%s/src", tmp);
	snprintf(dst, sizeof(dst), "%s/dst", tmp);
	snprintf(jpath, sizeof(jpath), "%s/%s", tmp, HY_MAP_JOURNAL_NAME);
	fd = open(src, O_CREAT | O_RDWR, 0600);
	fd_out = open(dst, O_CREAT | O_RDWR, 0600);
	CU_ASSERT_FATAL(fd >= 0 && fd_out >= 0);
	for (size_t blk = 0; blk < FX_BLOCKS; blk++)
		memset(buf + blk * BLK, (char)('A' + blk), BLK);
	CU_ASSERT_EQUAL_FATAL(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	fill(bm, 0, FX_BASE + 24 * BLK, '?');
	for (size_t k = 0; k < 4; k++)
		fill(bm, FX_BASE + (10 + k) * BLK, BLK, (char)('c' + k));
	CU_ASSERT_EQUAL_FATAL(hy_device_file_new("backing", &backing), 0);
	CU_ASSERT_EQUAL_FATAL(hy_device_new("bopt", &memory_ops, bm, &bopt), 0);
	CU_ASSERT_EQUAL_FATAL(hy_engine_new(backing, &engine), 0);
	CU_ASSERT_EQUAL_FATAL(hy_map_new(&map), 0);
	CU_ASSERT_EQUAL(hy_device_stamp(backing, fd, &e.stamp), 0);
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), 0);
	CU_ASSERT_EQUAL_FATAL(
		hy_map_journal_open(jpath, 1, 0, map, &journal, NULL, why, sizeof(why)), 0);
	hy_indirector_set_bopt(hy_engine_indirector(engine), map, bopt, FX_BASE, journal);
	hy_indirector_set_bopt_writes(hy_engine_indirector(engine), true);
	hy_engine_file_init(engine, &in, fd);
	hy_engine_file_set_id(&in, FX_FILE);
	hy_engine_file_init(engine, &out, fd_out);
	hy_engine_file_set_id(&out, FX_FILE + 2);

	/* block 3 dirty: new in the BOPT, old at home */
	memset(buf, 'W', BLK);
	CU_ASSERT_EQUAL(hy_engine_write(engine, &in, buf, BLK, 3 * BLK), BLK);
	CU_ASSERT_EQUAL(pread(fd, buf, BLK, 3 * BLK), BLK);
	CU_ASSERT(all_bytes(buf, BLK, 'D'));
	CU_ASSERT(all_bytes(bm->data + FX_BASE + 11 * BLK, BLK, 'W'));
	mtime = mtime_of(fd);

	/* from inside block 3 into block 4: the new bytes, then block 4's */
	CU_ASSERT_EQUAL(hy_engine_copy_range(engine, &in, 3 * BLK + 10, &out, 0, BLK, 0), BLK);
	CU_ASSERT_EQUAL(pread(fd_out, buf, 2 * BLK, 0), BLK);
	CU_ASSERT(all_bytes(buf, BLK - 10, 'W'));
	CU_ASSERT(all_bytes(buf + BLK - 10, 10, 'E'));
	CU_ASSERT_EQUAL(pread(fd, buf, BLK, 3 * BLK), BLK);
	CU_ASSERT(all_bytes(buf, BLK, 'W'));
	CU_ASSERT_EQUAL(mtime_of(fd), mtime);
	CU_ASSERT_FALSE(piece_at(map, 3).dirty);
	CU_ASSERT_EQUAL(piece_at(map, 3).bopt_block, 11);
	CU_ASSERT_EQUAL(engine->indirector->synced_blocks, 1);
	CU_ASSERT_EQUAL(engine->indirector->released_blocks, 0);
	CU_ASSERT_EQUAL(journal->commit.written, 2);
	CU_ASSERT_EQUAL(journal->commit.durable, 2);
	/* the source's copies are still good */
	CU_ASSERT_EQUAL(hy_engine_read(engine, &in, buf, BLK, 3 * BLK), BLK);
	CU_ASSERT(all_bytes(buf, BLK, 'W'));
	CU_ASSERT_EQUAL(engine->indirector->bopt_reads, 1);
	CU_ASSERT_EQUAL(engine->indirector->stale_files, 0);

	/* a read-only handle's close */
	fd_ro = open(src, O_RDONLY);
	CU_ASSERT_FATAL(fd_ro >= 0);
	hy_engine_file_init(engine, &ro, fd_ro);
	hy_engine_file_set_id(&ro, FX_FILE);
	memset(buf, 'V', BLK);
	CU_ASSERT_EQUAL(hy_engine_write(engine, &in, buf, BLK, 4 * BLK), BLK);
	CU_ASSERT(piece_at(map, 4).dirty);
	mtime = mtime_of(fd);
	fds = count_fds();
	CU_ASSERT_EQUAL(hy_engine_close(engine, &ro), 0);
	CU_ASSERT_EQUAL(count_fds(), fds);
	CU_ASSERT_EQUAL(pread(fd, buf, BLK, 4 * BLK), BLK);
	CU_ASSERT(all_bytes(buf, BLK, 'V'));
	CU_ASSERT_EQUAL(mtime_of(fd), mtime);
	CU_ASSERT_FALSE(piece_at(map, 4).dirty);
	CU_ASSERT_EQUAL(engine->indirector->synced_blocks, 2);
	CU_ASSERT_EQUAL(journal->commit.written, 4);

	hy_map_journal_close(journal);
	hy_map_free(map);
	hy_engine_free(engine);
	hy_device_free(bopt);
	hy_device_free(backing);
	close(fd);
	close(fd_out);
	close(fd_ro);
	hy_test_rmtree(tmp);
	free(tmp);
}

/* An O_TRUNC open of a file racing BORG's write-back of its dirty BOPT
 * blocks: the truncation comes between the write-back's look at the
 * size and its writes home (the BOPT read between them is the hook). */
struct trunc_race {
	struct hy_engine *engine;
	const char *path;
	pthread_t thread;
	atomic_bool done;
	int fd;
};

static void *trunc_open(void *arg)
{
	struct trunc_race *t = arg;
	bool gated = hy_engine_truncate_open_begin(t->engine, FX_FILE);

	t->fd = open(t->path, O_RDWR | O_TRUNC);
	if (gated)
		hy_engine_truncate_open_end(t->engine, FX_FILE, t->fd);
	atomic_store(&t->done, true);
	return NULL;
}

static void trunc_in_sync(void *arg)
{
	struct trunc_race *t = arg;

	CU_ASSERT_EQUAL_FATAL(pthread_create(&t->thread, NULL, trunc_open, t), 0);
	/* the bound only says when to stop waiting for an open that the
	 * file's gate holds back, as it must: then the write-back goes on
	 * first, and the truncation after it */
	for (int i = 0; i < 2000 && !atomic_load(&t->done); i++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
}

static void test_bopt_write_back_meets_o_trunc(void)
{
	char *tmp = hy_test_tmpdir(), src[512], jpath[512], why[512] = "";
	struct memory_device *bm = calloc(1, sizeof(*bm));
	struct hy_map_extent e = {.file_id = FX_FILE, .block = 2, .nblocks = 4, .bopt_block = 10};
	static char buf[FX_BLOCKS * BLK];
	struct trunc_race t = {.fd = -1};
	struct hy_map_journal *journal;
	struct hy_device *backing, *bopt;
	struct hy_engine_file in, after;
	struct hy_engine *engine;
	struct hy_map *map;
	struct stat st;
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bm);
	snprintf(src, sizeof(src), "%s/src", tmp);
	snprintf(jpath, sizeof(jpath), "%s/%s", tmp, HY_MAP_JOURNAL_NAME);
	fd = open(src, O_CREAT | O_RDWR, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	for (size_t blk = 0; blk < FX_BLOCKS; blk++)
		memset(buf + blk * BLK, (char)('A' + blk), BLK);
	CU_ASSERT_EQUAL_FATAL(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	fill(bm, 0, FX_BASE + 24 * BLK, '?');
	for (size_t k = 0; k < 4; k++)
		fill(bm, FX_BASE + (10 + k) * BLK, BLK, (char)('c' + k));
	CU_ASSERT_EQUAL_FATAL(hy_device_file_new("backing", &backing), 0);
	CU_ASSERT_EQUAL_FATAL(hy_device_new("bopt", &memory_ops, bm, &bopt), 0);
	CU_ASSERT_EQUAL_FATAL(hy_engine_new(backing, &engine), 0);
	CU_ASSERT_EQUAL_FATAL(hy_map_new(&map), 0);
	CU_ASSERT_EQUAL(hy_device_stamp(backing, fd, &e.stamp), 0);
	CU_ASSERT_EQUAL(hy_map_relocate(map, &e), 0);
	CU_ASSERT_EQUAL_FATAL(
		hy_map_journal_open(jpath, 1, 0, map, &journal, NULL, why, sizeof(why)), 0);
	hy_indirector_set_bopt(hy_engine_indirector(engine), map, bopt, FX_BASE, journal);
	hy_indirector_set_bopt_writes(hy_engine_indirector(engine), true);
	hy_engine_file_init(engine, &in, fd);
	hy_engine_file_set_id(&in, FX_FILE);

	/* block 3 dirty in the BOPT; then its write-back, with the O_TRUNC
	 * open arriving once it has read the size */
	memset(buf, 'W', BLK);
	CU_ASSERT_EQUAL(hy_engine_write(engine, &in, buf, BLK, 3 * BLK), BLK);
	CU_ASSERT(piece_at(map, 3).dirty);
	t.engine = engine;
	t.path = src;
	bm->hook_arg = &t;
	bm->read_hook = trunc_in_sync;
	CU_ASSERT(hy_engine_sync_home(engine, &in) >= 0);
	CU_ASSERT_EQUAL_FATAL(pthread_join(t.thread, NULL), 0);
	CU_ASSERT_FATAL(t.fd >= 0);

	/* the truncation stands: no old block went home past the new end */
	CU_ASSERT_EQUAL(fstat(fd, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 0);
	if (st.st_size != 0)
		fprintf(stderr, "\nO_TRUNC then BORG's write-back: size %lld, want 0\n",
			(long long)st.st_size);
	/* a change through the mount: its copies released, not found stale */
	hy_engine_file_init(engine, &after, t.fd);
	hy_engine_file_set_id(&after, FX_FILE);
	CU_ASSERT_EQUAL(hy_engine_read(engine, &after, buf, BLK, 3 * BLK), 0);
	CU_ASSERT_EQUAL(engine->indirector->stale_files, 0);
	CU_ASSERT_EQUAL(piece_at(map, 3).bopt_block, HY_MAP_HOME);

	hy_map_journal_close(journal);
	hy_map_free(map);
	hy_engine_free(engine);
	hy_device_free(bopt);
	hy_device_free(backing);
	close(fd);
	close(t.fd);
	hy_test_rmtree(tmp);
	free(tmp);
}

int hy_test_add_engine(void)
{
	CU_pSuite s = CU_add_suite("engine", NULL, NULL);

	if (!s || !CU_add_test(s, "engine over a device model", test_engine_over_model) ||
	    !CU_add_test(s, "engine over backing files", test_engine_over_file) ||
	    !CU_add_test(s, "ReCA asked once per request", test_engine_asks_reca) ||
	    !CU_add_test(s, "where a file's blocks lie (PORE's zones)", test_device_addresses) ||
	    !CU_add_test(s, "reads through the indirection map", test_engine_reads_through_map) ||
	    !CU_add_test(s, "copies with a matching stamp are read from the BOPT",
			 test_stamp_fresh_copies) ||
	    !CU_add_test(s, "a file changed outside loses its copies", test_stamp_outside_change) ||
	    !CU_add_test(s, "a change after an outside change", test_stamp_outside_then_write) ||
	    !CU_add_test(s, "writes through the engine refresh the stamp",
			 test_stamp_refreshed_by_write) ||
	    !CU_add_test(s, "gates count changes; quiesce and resume", test_gates) ||
	    !CU_add_test(s, "indirector: copies committed, raced, dropped",
			 test_indirector_copies) ||
	    !CU_add_test(s, "indirector: a file's last partial block in the BOPT",
			 test_indirector_tail_block) ||
	    !CU_add_test(s, "indirector: read-ahead along a chain in the BOPT",
			 test_indirector_readahead) ||
	    !CU_add_test(s, "indirector: only opened objects count against the hold bound",
			 test_indirector_hold_bound) ||
	    !CU_add_test(s, "a home device without stamps", test_stamp_unsupported) ||
	    !CU_add_test(s, "BORG's writes: into the BOPT, marked dirty first",
			 test_bopt_write_dirty) ||
	    !CU_add_test(s, "BORG's writes: sync home", test_bopt_write_sync_home) ||
	    !CU_add_test(s, "a read meets a write in flight", test_read_meets_write_in_flight) ||
	    !CU_add_test(s, "BORG's writes: fsync and close send them home",
			 test_bopt_write_fsync_close) ||
	    !CU_add_test(s, "an fsync waits for its own file's journal records only",
			 test_fsync_waits_for_its_records) ||
	    !CU_add_test(s, "BORG's writes: truncation", test_bopt_write_truncate) ||
	    !CU_add_test(s, "BORG's writes: a hole punched", test_bopt_write_punch_hole) ||
	    !CU_add_test(s, "BORG's writes: an outside change", test_bopt_write_outside_change) ||
	    !CU_add_test(s, "BORG's writes off: a dirty block goes home first",
			 test_home_write_settles_dirty) ||
	    !CU_add_test(s, "BORG's writes: the journal after a crash",
			 test_bopt_write_journal_replay) ||
	    !CU_add_test(s, "BORG's write-back meets an O_TRUNC open",
			 test_bopt_write_back_meets_o_trunc) ||
	    !CU_add_test(s, "BORG's writes over real files: copy range, read-only close",
			 test_bopt_write_real_files))
		return -1;
	return 0;
}
