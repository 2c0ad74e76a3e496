/* test_emulation.c - emulate= prices requests where the filesystem put the
 * bytes (FIEMAP), not at 64 MiB per inode number: two small files written
 * one after the other lie side by side, and a read of the first one's last
 * block then the second one's first costs what the HDD model says for
 * those physical addresses; a read the page cache serves is not charged;
 * on tmpfs (no map, no disk) the old placement and every read charged; the
 * SQLite shim charges the databases' reads and writes. */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sqlite3.h>

#include "hybridfs/device.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/emuvfs.h"
#include "suites.h"

#define BLOCK 4096
#define SMALL (8 * BLOCK) /* below ext4's stream threshold: packed together */

static bool on_tmpfs(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

/* A temporary folder on a filesystem with a map and a disk under its page
 * cache, or NULL where the tests' folder is tmpfs (test_emulation_tmpfs
 * covers that: no map to read, every read charged). */
static char *disk_tmpdir(void)
{
	char *tmp = hy_test_tmpdir();

	if (tmp && on_tmpfs(tmp)) {
		hy_test_rmtree(tmp);
		free(tmp);
		return NULL;
	}
	return tmp;
}

/* A file of @len bytes, written back and out of the page cache. */
static int make_file(const char *dir, const char *name, size_t len)
{
	static unsigned char data[SMALL];
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	memset(data, name[0], sizeof(data));
	CU_ASSERT_FATAL(len <= sizeof(data));
	CU_ASSERT_EQUAL(pwrite(fd, data, len, 0), (ssize_t)len);
	CU_ASSERT_EQUAL(fsync(fd), 0);
	return fd;
}

/* Where byte @off of @fd lies on the disk, from the filesystem's own map
 * (not through the device layer under test). */
static uint64_t physical(int fd, uint64_t off)
{
	union {
		struct fiemap map;
		unsigned char bytes[sizeof(struct fiemap) + sizeof(struct fiemap_extent)];
	} req;

	memset(&req, 0, sizeof(req));
	req.map.fm_start = off;
	req.map.fm_length = 1;
	req.map.fm_flags = FIEMAP_FLAG_SYNC;
	req.map.fm_extent_count = 1;
	CU_ASSERT_EQUAL_FATAL(ioctl(fd, FS_IOC_FIEMAP, &req.map), 0);
	CU_ASSERT_EQUAL_FATAL(req.map.fm_mapped_extents, 1);
	return req.map.fm_extents[0].fe_physical + (off - req.map.fm_extents[0].fe_logical);
}

/* Whether any page of @fd's file is in the page cache (mincore of a
 * mapping, which faults nothing in). */
static bool any_cached(int fd)
{
	struct stat st;
	unsigned char *vec;
	size_t pages;
	bool cached = false;
	void *map;

	if (fstat(fd, &st) != 0 || st.st_size == 0)
		return false;
	pages = ((size_t)st.st_size + 4095) / 4096;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	vec = malloc(pages);
	if (map != MAP_FAILED && vec && mincore(map, (size_t)st.st_size, vec) == 0) {
		for (size_t i = 0; i < pages && !cached; i++)
			cached = vec[i] & 1;
	} else {
		cached = true; /* cannot tell: try again */
	}
	free(vec);
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	return cached;
}

/* Out of the page cache. POSIX_FADV_DONTNEED is best effort: a page still
 * under write-back, or in another CPU's LRU batch, stays; under load (CI's
 * tests beside each other) that happened, and the reads that followed
 * were served by the page cache. So it is asked again until mincore()
 * finds no page of the file (a bounded wait on the kernel, not a timing). */
static void uncache(int fd)
{
	for (int tries = 0; tries < 1000; tries++) {
		CU_ASSERT_EQUAL(fdatasync(fd), 0);
		CU_ASSERT_EQUAL(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		if (!any_cached(fd))
			return;
		usleep(10000);
	}
	CU_FAIL("the page cache keeps the file after 1,000 requests to drop it");
}

static struct hy_device_emulation *hdd_emulation(struct hy_devmodel_params *p)
{
	struct hy_device_emulation *e = NULL;
	char why[256];

	hy_devmodel_defaults(HY_DEVMODEL_HDD, p);
	CU_ASSERT_EQUAL_FATAL(hy_device_emulation_new(p, &e, why, sizeof(why)), 0);
	return e;
}

/* What a fresh model charges for 4 KiB reads at @addr[0..n). */
static double model_ms(const struct hy_devmodel_params *p, const uint64_t *addr, size_t n)
{
	struct hy_devmodel *m = NULL;
	char why[256];
	double ms = 0;

	CU_ASSERT_EQUAL_FATAL(hy_devmodel_new(p, &m, why, sizeof(why)), 0);
	for (size_t i = 0; i < n; i++)
		ms += hy_devmodel_serve(m, addr[i], BLOCK, false);
	hy_devmodel_free(m);
	return ms;
}

static void test_emulation_real_places(void)
{
	char *tmp = disk_tmpdir();
	struct hy_devmodel_params p;
	struct hy_device_emulation *e;
	struct hy_device_emulation_stats st;
	struct hy_device *dev;
	unsigned char buf[BLOCK];
	uint64_t off_a = SMALL - BLOCK, off_b = 0, real[2], inode[2];
	struct stat sa, sb;
	int a, b;

	if (!tmp)
		return;
	/* written back one after the other from one CPU: ext4 gives small
	 * files blocks from that CPU's group preallocation, side by side */
	{
		cpu_set_t one, was;
		bool pinned = sched_getaffinity(0, sizeof(was), &was) == 0;

		CPU_ZERO(&one);
		CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
		pinned = pinned && sched_setaffinity(0, sizeof(one), &one) == 0;
		a = make_file(tmp, "a", SMALL);
		b = make_file(tmp, "b", SMALL);
		if (pinned)
			sched_setaffinity(0, sizeof(was), &was);
	}
	CU_ASSERT_EQUAL_FATAL(hy_device_file_new("backing", &dev), 0);
	real[0] = physical(a, off_a);
	real[1] = physical(b, off_b);
	CU_ASSERT_EQUAL(fstat(a, &sa), 0);
	CU_ASSERT_EQUAL(fstat(b, &sb), 0);
	inode[0] = (uint64_t)sa.st_ino * HY_DEVICE_EMULATION_FILE_SPAN + off_a;
	inode[1] = (uint64_t)sb.st_ino * HY_DEVICE_EMULATION_FILE_SPAN + off_b;
	e = hdd_emulation(&p);
	hy_device_set_emulation(dev, e, -1);
	uncache(a);
	uncache(b);
	CU_ASSERT_EQUAL(hy_device_read(dev, a, buf, BLOCK, (off_t)off_a), BLOCK);
	CU_ASSERT_EQUAL(buf[0], 'a');
	CU_ASSERT_EQUAL(hy_device_read(dev, b, buf, BLOCK, (off_t)off_b), BLOCK);
	CU_ASSERT_EQUAL(buf[0], 'b');
	hy_device_emulation_get_stats(e, &st);
	CU_ASSERT_EQUAL(st.requests, 2);
	CU_ASSERT_EQUAL(st.cached, 0);
	/* priced at the physical addresses, and those are not the inodes'
	 * places (the check would not tell them apart otherwise) */
	CU_ASSERT_DOUBLE_EQUAL(st.modeled_ms, model_ms(&p, real, 2), 1e-6);
	CU_ASSERT(fabs(model_ms(&p, inode, 2) - model_ms(&p, real, 2)) > 0.1);
	/* side by side (ext4 packs small files written in a row): the second
	 * read continues the first, one seek for both */
	if (real[1] == real[0] + BLOCK) {
		CU_ASSERT_EQUAL(st.seeks, 1);
	} else {
		fprintf(stderr, "test_emulation: the two files are not side by side (%llu, %llu)\n",
			(unsigned long long)real[0], (unsigned long long)real[1]);
	}
	/* the addresses PORE is given are the ones the emulation prices */
	{
		uint64_t again;

		CU_ASSERT_EQUAL(hy_device_addresses(dev, a, &off_a, 1, &again), 0);
		CU_ASSERT_EQUAL(again, real[0]);
	}
	hy_device_free(dev);
	hy_device_emulation_free(e);
	close(a);
	close(b);
	hy_test_rmtree(tmp);
	free(tmp);
}

static void test_emulation_page_cache(void)
{
	char *tmp = disk_tmpdir();
	struct hy_devmodel_params p;
	struct hy_device_emulation *e;
	struct hy_device_emulation_stats st, st2;
	struct hy_device *dev;
	unsigned char buf[2 * BLOCK];
	int a;

	if (!tmp)
		return;
	a = make_file(tmp, "a", SMALL);
	CU_ASSERT_EQUAL_FATAL(hy_device_file_new("backing", &dev), 0);
	e = hdd_emulation(&p);
	hy_device_set_emulation(dev, e, -1);
	uncache(a);
	CU_ASSERT_EQUAL(hy_device_read(dev, a, buf, BLOCK, 0), BLOCK);
	hy_device_emulation_get_stats(e, &st);
	CU_ASSERT_EQUAL(st.requests, 1);
	CU_ASSERT(st.modeled_ms > 0);
	/* the same block again: the page cache has it, no disk sees the read */
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(hy_device_read(dev, a, buf, BLOCK, 0), BLOCK);
	CU_ASSERT_EQUAL(buf[BLOCK - 1], 'a');
	hy_device_emulation_get_stats(e, &st2);
	CU_ASSERT_EQUAL(st2.requests, 1);
	CU_ASSERT_EQUAL(st2.cached, 1);
	CU_ASSERT_DOUBLE_EQUAL(st2.modeled_ms, st.modeled_ms, 1e-9);
	/* a read past the end of the file, cached (read once before): short,
	 * and free */
	CU_ASSERT_EQUAL(hy_device_read(dev, a, buf, sizeof(buf), SMALL - BLOCK), BLOCK);
	hy_device_emulation_get_stats(e, &st);
	CU_ASSERT_EQUAL(hy_device_read(dev, a, buf, sizeof(buf), SMALL - BLOCK), BLOCK);
	hy_device_emulation_get_stats(e, &st2);
	CU_ASSERT_EQUAL(st2.requests, st.requests);
	CU_ASSERT_EQUAL(st2.cached, st.cached + 1);
	/* out of the cache again: charged again */
	uncache(a);
	CU_ASSERT_EQUAL(hy_device_read(dev, a, buf, BLOCK, 0), BLOCK);
	hy_device_emulation_get_stats(e, &st2);
	CU_ASSERT_EQUAL(st2.requests, st.requests + 1);
	hy_device_free(dev);
	hy_device_emulation_free(e);
	close(a);
	hy_test_rmtree(tmp);
	free(tmp);
}

/* The page-cache probe neither reads nor starts a read: over and over,
 * out of the cache, the probe finds nothing and leaves nothing. Before,
 * preadv2(RWF_NOWAIT) started the read-ahead it could not wait for, and
 * about 1 in 10 times returned the bytes it had just read from the disk as
 * cached. */
static void test_emulation_probe_reads_nothing(void)
{
	char *tmp = disk_tmpdir();
	unsigned char buf[BLOCK];
	int a, bad = 0;

	if (!tmp)
		return;
	a = make_file(tmp, "a", SMALL);
	for (int i = 0; i < 200 && !bad; i++) {
		uncache(a);
		if (hy_device_emulation_probe(a, buf, BLOCK, 0) != -EAGAIN || any_cached(a))
			bad = i + 1;
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* a cached block is found and read */
	CU_ASSERT_EQUAL(pread(a, buf, BLOCK, 0), BLOCK);
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(hy_device_emulation_probe(a, buf, BLOCK, 0), BLOCK);
	CU_ASSERT_EQUAL(buf[BLOCK - 1], 'a');
	close(a);
	hy_test_rmtree(tmp);
	free(tmp);
}

/* BORG's read-ahead (hy_device_prefetch): the disk reads what the page
 * cache lacks, so the emulated disk is charged for it, as one read; the
 * device counts it apart from its reads. A table without a prefetch has
 * none. */
static ssize_t no_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	(void)dev;
	(void)object;
	(void)buf;
	(void)len;
	(void)off;
	return 0;
}

static void test_emulation_prefetch(void)
{
	static const struct hy_device_ops bare = {.read = no_read};
	char *tmp = disk_tmpdir();
	struct hy_devmodel_params p;
	struct hy_device_emulation *e;
	struct hy_device_emulation_stats st;
	struct hy_device_stats ds;
	struct hy_device *dev, *model;
	int a;

	CU_ASSERT_EQUAL_FATAL(hy_device_new("model", &bare, NULL, &model), 0);
	CU_ASSERT_EQUAL(hy_device_prefetch(model, 0, 0, BLOCK), -EOPNOTSUPP);
	hy_device_free(model);
	if (!tmp)
		return;
	a = make_file(tmp, "a", SMALL);
	CU_ASSERT_EQUAL_FATAL(hy_device_file_new("backing", &dev), 0);
	e = hdd_emulation(&p);
	hy_device_set_emulation(dev, e, -1);
	CU_ASSERT_EQUAL(hy_device_prefetch(dev, a, 0, 0), -EINVAL);
	uncache(a);
	CU_ASSERT_EQUAL(hy_device_prefetch(dev, a, 0, SMALL), 0);
	hy_device_emulation_get_stats(e, &st);
	CU_ASSERT_EQUAL(st.requests, 1);
	CU_ASSERT_EQUAL(st.reads, 1);
	CU_ASSERT_EQUAL(st.bytes_read, SMALL);
	hy_device_get_stats(dev, &ds);
	CU_ASSERT_EQUAL(ds.reads, 0);
	CU_ASSERT_EQUAL(ds.prefetches, 1);
	CU_ASSERT_EQUAL(ds.bytes_prefetched, SMALL);
	hy_device_free(dev);
	hy_device_emulation_free(e);
	close(a);
	hy_test_rmtree(tmp);
	free(tmp);
}

/* tmpfs: no map and no disk under the page cache: every read is charged,
 * at 64 MiB per inode number (the fallback). */
static void test_emulation_tmpfs(void)
{
	char dir[] = "/dev/shm/hytest-emu.XXXXXX";
	struct hy_devmodel_params p;
	struct hy_device_emulation *e;
	struct hy_device_emulation_stats st;
	struct hy_device *dev;
	unsigned char buf[BLOCK];
	uint64_t place;
	struct stat sa;
	int a;

	if (!on_tmpfs("/dev/shm") || !mkdtemp(dir))
		return; /* no tmpfs here */
	a = make_file(dir, "a", SMALL);
	CU_ASSERT_EQUAL(fstat(a, &sa), 0);
	place = (uint64_t)sa.st_ino * HY_DEVICE_EMULATION_FILE_SPAN + BLOCK;
	CU_ASSERT_EQUAL_FATAL(hy_device_file_new("backing", &dev), 0);
	e = hdd_emulation(&p);
	hy_device_set_emulation(dev, e, -1);
	CU_ASSERT_EQUAL(hy_device_read(dev, a, buf, BLOCK, BLOCK), BLOCK);
	hy_device_emulation_get_stats(e, &st);
	CU_ASSERT_EQUAL(st.requests, 1);
	CU_ASSERT_EQUAL(st.cached, 0);
	CU_ASSERT_DOUBLE_EQUAL(st.modeled_ms, model_ms(&p, &place, 1), 1e-6);
	hy_device_free(dev);
	hy_device_emulation_free(e);
	close(a);
	hy_test_rmtree(dir);
}

static int exec_sql(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* The databases' I/O goes to the same disk. */
static void test_emulation_sqlite(void)
{
	char *tmp = hy_test_tmpdir(), path[4200], why[256];
	struct hy_devmodel_params p;
	struct hy_device_emulation *e = hdd_emulation(&p);
	struct hy_device_emulation_stats st, st2;
	sqlite3 *db = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/t.db", tmp);
	CU_ASSERT_EQUAL_FATAL(hy_emuvfs_install(e, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
					      "hybridfs-emulate"),
			      SQLITE_OK);
	CU_ASSERT_EQUAL(exec_sql(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(x);"
				     "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
				     "FROM n WHERE i < 2000) INSERT INTO t SELECT randomblob(100) "
				     "FROM n;"),
			SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_close(db), SQLITE_OK);
	hy_device_emulation_get_stats(e, &st);
	CU_ASSERT(st.state_requests > 0);
	CU_ASSERT_EQUAL(st.state_requests, st.requests);
	CU_ASSERT(st.writes > 0);
	/* out of the page cache: a new connection's reads reach the disk */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	uncache(fd);
	CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, "hybridfs-emulate"),
			      SQLITE_OK);
	CU_ASSERT_EQUAL(exec_sql(db, "SELECT count(*) FROM t;"), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_close(db), SQLITE_OK);
	hy_device_emulation_get_stats(e, &st2);
	CU_ASSERT(st2.reads > st.reads);
	/* and again, from the page cache: not charged */
	st = st2;
	CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, "hybridfs-emulate"),
			      SQLITE_OK);
	CU_ASSERT_EQUAL(exec_sql(db, "SELECT count(*) FROM t;"), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_close(db), SQLITE_OK);
	hy_device_emulation_get_stats(e, &st2);
	CU_ASSERT_EQUAL(st2.reads, st.reads);
	CU_ASSERT(st2.cached > st.cached);
	hy_emuvfs_detach();
	/* the other suites' databases open through the system's again */
	CU_ASSERT_EQUAL(sqlite3_vfs_register(sqlite3_vfs_find("unix"), 1), SQLITE_OK);
	close(fd);
	hy_device_emulation_free(e);
	hy_test_rmtree(tmp);
	free(tmp);
}

int hy_test_add_emulation(void)
{
	CU_pSuite s = CU_add_suite("emulation", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "requests priced at the files' physical places",
			 test_emulation_real_places) ||
	    !CU_add_test(s, "reads the page cache served are not charged",
			 test_emulation_page_cache) ||
	    !CU_add_test(s, "tmpfs: placed by inode, every read charged", test_emulation_tmpfs) ||
	    !CU_add_test(s, "a read-ahead is charged as one read", test_emulation_prefetch) ||
	    !CU_add_test(s, "the page-cache probe starts no read",
			 test_emulation_probe_reads_nothing) ||
	    !CU_add_test(s, "the SQLite databases' I/O is charged", test_emulation_sqlite))
		return -1;
	return 0;
}
