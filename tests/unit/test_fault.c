/* test_fault.c - fault injection (fault.h): the spec parser's accepted
 * forms and its refusals (each naming the bad part), the device wrapper
 * (EIO and ENOSPC on the Nth, every Nth and after N calls; short reads
 * and writes, which the device layer completes; sync; tables without an
 * operation; devices no rule names are not wrapped), the cache store's
 * line I/O through it, crash points counted through the test hook, and the
 * device's changed hook (the kernel's caches are told of writes home).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/cache_store.h"
#include "hybridfs/device.h"
#include "hybridfs/fault.h"
#include "suites.h"

/* ---- the parser -------------------------------------------------------- */

static void test_parse_accepts(void)
{
	static const char *const good[] = {
		"dev=backing:op=write:err=EIO:nth=5",
		"dev=bopt:op=read:err=ENOSPC:every=3",
		"dev=cache:op=sync:err=EIO:after=0",
		"dev=cache:op=write:err=short:after=2",
		"op=read:nth=1:err=short:dev=backing", /* any order */
		"point=cache.clean.mid:nth=2",
		"dev=backing:op=write:err=EIO:nth=5;point=cache.clean.mid:nth=2",
		"point=cache.journal.before:nth=1;point=cache.journal.after:nth=1;"
		"point=cache.migrate.mid:nth=1;point=reorg.copy.mid:nth=1;"
		"point=map.journal.before:nth=1;point=map.journal.after:nth=1",
	};
	char why[512];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		why[0] = '\0';
		CU_ASSERT_EQUAL(hy_fault_init(good[i], why, sizeof(why)), 0);
		CU_ASSERT_TRUE(hy_fault_enabled);
		CU_ASSERT_STRING_EQUAL(hy_fault_spec(), good[i]);
		if (!hy_fault_enabled)
			fprintf(stderr, "refused \"%s\": %s\n", good[i], why);
	}
	/* off: NULL and "" */
	CU_ASSERT_EQUAL(hy_fault_init(NULL, why, sizeof(why)), 0);
	CU_ASSERT_FALSE(hy_fault_enabled);
	CU_ASSERT_EQUAL(hy_fault_init("", why, sizeof(why)), 0);
	CU_ASSERT_FALSE(hy_fault_enabled);
	CU_ASSERT_STRING_EQUAL(hy_fault_spec(), "");
	hy_fault_reset();
}

static void test_parse_refuses(void)
{
	/* the spec, and a piece the message must quote */
	static const struct {
		const char *spec, *named;
	} bad[] = {
		{"dev=backng:op=write:err=EIO:nth=1", "\"backng\""},
		{"dev=backing:op=wirte:err=EIO:nth=1", "\"wirte\""},
		{"dev=backing:op=write:err=EPERM:nth=1", "\"EPERM\""},
		{"dev=backing:op=sync:err=short:nth=1", "cannot be short"},
		{"dev=backing:op=write:err=EIO:nth=x", "\"x\""},
		{"dev=backing:op=write:err=EIO:nth=-1", "\"-1\""},
		{"dev=backing:op=write:err=EIO:nth=0", "nth=0"},
		{"dev=backing:op=write:err=EIO:every=0", "every=0"},
		{"dev=backing:op=write:err=EIO", "says not when"},
		{"dev=backing:op=write:err=EIO:nth=1:after=2", "given twice"},
		{"dev=backing:dev=bopt:op=write:err=EIO:nth=1", "\"dev\" given twice"},
		{"dev=backing:err=EIO:nth=1", "needs op= and err="},
		{"dev=backing:op=write:err=EIO:nth=1:size=3", "unknown key \"size\""},
		{"dev=backing:op=write:err=EIO:nth=99999999999999999999999", "is not a count"},
		{"point=cache.clean.middle:nth=1", "\"cache.clean.middle\""},
		{"point=cache.clean.mid:every=2", "nth=N"},
		{"point=cache.clean.mid:op=write:nth=1", "no op= or err="},
		{"point=cache.clean.mid:dev=backing:nth=1", "one dev= or one point="},
		{"op=write:nth=1", "one dev= or one point="},
		{"point=cache.clean.mid:nth=1;", "empty rule"},
		{";point=cache.clean.mid:nth=1", "empty rule"},
		{"point=cache.clean.mid:nth=1;garbage", "\"garbage\" is not KEY=VALUE"},
		{"point=cache.clean.mid::nth=1", "is not KEY=VALUE"},
		{"point=:nth=1", "is not KEY=VALUE"},
	};
	char why[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		CU_ASSERT_EQUAL(hy_fault_init(bad[i].spec, why, sizeof(why)), -EINVAL);
		CU_ASSERT_FALSE(hy_fault_enabled);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, bad[i].named));
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "HYBRIDFS_FAULTS"));
		if (!strstr(why, bad[i].named))
			fprintf(stderr, "\"%s\": message \"%s\" does not name %s\n", bad[i].spec,
				why, bad[i].named);
	}
	/* too many rules */
	{
		char spec[2048] = "";

		for (int i = 0; i <= HY_FAULT_MAX_RULES; i++)
			strcat(spec,
			       i ? ";point=cache.clean.mid:nth=1" : "point=cache.clean.mid:nth=1");
		CU_ASSERT_EQUAL(hy_fault_init(spec, why, sizeof(why)), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "more than"));
	}
	/* a refused spec leaves nothing in force, even after a good one */
	CU_ASSERT_EQUAL(hy_fault_init("point=cache.clean.mid:nth=1", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_fault_init("point=nowhere:nth=1", why, sizeof(why)), -EINVAL);
	CU_ASSERT_FALSE(hy_fault_enabled);
	hy_fault_reset();
}

/* ---- the device wrapper -------------------------------------------------- */

#define MEM_SIZE 65536

struct mem {
	unsigned char data[MEM_SIZE];
	int reads, writes, syncs, destroyed;
};

static ssize_t mem_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	struct mem *m = dev->priv;

	(void)object;
	m->reads++;
	if ((size_t)off >= MEM_SIZE)
		return 0;
	if (len > MEM_SIZE - (size_t)off)
		len = MEM_SIZE - (size_t)off;
	memcpy(buf, m->data + off, len);
	return (ssize_t)len;
}

static ssize_t mem_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			 off_t off)
{
	struct mem *m = dev->priv;

	(void)object;
	m->writes++;
	if ((size_t)off + len > MEM_SIZE)
		return -ENOSPC;
	memcpy(m->data + off, buf, len);
	return (ssize_t)len;
}

static int mem_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	struct mem *m = dev->priv;

	(void)object, (void)data_only;
	m->syncs++;
	return 0;
}

static void mem_destroy(struct hy_device *dev)
{
	struct mem *m = dev->priv;

	m->destroyed++;
}

static const struct hy_device_ops mem_ops = {
	.read = mem_read,
	.write = mem_write,
	.sync = mem_sync,
	.destroy = mem_destroy,
};

static struct hy_device *mem_device(const char *name, struct mem *m)
{
	struct hy_device *dev = NULL;

	memset(m, 0, sizeof(*m));
	CU_ASSERT_EQUAL(hy_device_new(name, &mem_ops, m, &dev), 0);
	return dev;
}

static void test_not_wrapped(void)
{
	struct hy_device *dev;
	struct mem m;
	char why[256];

	/* off: the plain table */
	hy_fault_reset();
	dev = mem_device("backing", &m);
	CU_ASSERT_PTR_EQUAL(dev->ops, &mem_ops);
	CU_ASSERT_PTR_NULL(dev->fault);
	hy_device_free(dev);
	CU_ASSERT_EQUAL(m.destroyed, 1);
	/* on, but for another device */
	CU_ASSERT_EQUAL(hy_fault_init("dev=bopt:op=write:err=EIO:after=0", why, sizeof(why)), 0);
	dev = mem_device("backing", &m);
	CU_ASSERT_PTR_EQUAL(dev->ops, &mem_ops);
	CU_ASSERT_EQUAL(hy_device_write(dev, 0, "x", 1, 0), 1);
	hy_device_free(dev);
	hy_fault_reset();
}

static void test_eio_nth(void)
{
	unsigned char buf[4096] = {0};
	struct hy_device *dev;
	struct hy_device_stats st;
	struct mem m;
	char why[256];

	CU_ASSERT_EQUAL_FATAL(hy_fault_init("dev=backing:op=write:err=EIO:nth=3", why, sizeof(why)),
			      0);
	dev = mem_device("backing", &m);
	CU_ASSERT_PTR_NOT_EQUAL(dev->ops, &mem_ops);
	CU_ASSERT_PTR_NOT_NULL(dev->fault);
	for (int i = 1; i <= 6; i++) {
		memset(buf, i, sizeof(buf));
		ssize_t n = hy_device_write(dev, 0, buf, sizeof(buf), (off_t)(i - 1) * 4096);

		CU_ASSERT_EQUAL(n, i == 3 ? -EIO : 4096);
	}
	/* the failed call never reached the medium; the others did */
	CU_ASSERT_EQUAL(m.writes, 5);
	CU_ASSERT_EQUAL(m.data[2 * 4096], 0);
	CU_ASSERT_EQUAL(m.data[3 * 4096], 4);
	CU_ASSERT_EQUAL(hy_fault_injected(), 1);
	hy_device_get_stats(dev, &st);
	CU_ASSERT_EQUAL(st.errors, 1);
	/* reads and syncs are not touched by a write rule */
	CU_ASSERT_EQUAL(hy_device_read(dev, 0, buf, 4096, 0), 4096);
	CU_ASSERT_EQUAL(hy_device_sync(dev, 0, true), 0);
	hy_device_free(dev);
	CU_ASSERT_EQUAL(m.destroyed, 1);
	hy_fault_reset();
}

static void test_every_after(void)
{
	unsigned char buf[512];
	struct hy_device *dev;
	struct mem m;
	char why[256];
	int failed = 0;

	CU_ASSERT_EQUAL_FATAL(
		hy_fault_init(
			"dev=bopt:op=read:err=ENOSPC:every=2;dev=bopt:op=sync:err=EIO:after=1", why,
			sizeof(why)),
		0);
	dev = mem_device("bopt", &m);
	for (int i = 1; i <= 6; i++) {
		ssize_t n = hy_device_read(dev, 0, buf, sizeof(buf), 0);

		CU_ASSERT_EQUAL(n, i % 2 == 0 ? -ENOSPC : (ssize_t)sizeof(buf));
		failed += n < 0;
	}
	CU_ASSERT_EQUAL(failed, 3);
	CU_ASSERT_EQUAL(hy_device_sync(dev, 0, false), 0);
	CU_ASSERT_EQUAL(hy_device_sync(dev, 0, false), -EIO);
	CU_ASSERT_EQUAL(hy_device_sync(dev, 0, false), -EIO);
	CU_ASSERT_EQUAL(m.syncs, 1);
	CU_ASSERT_EQUAL(hy_fault_injected(), 5);
	hy_device_free(dev);
	hy_fault_reset();
}

static void test_short(void)
{
	unsigned char in[8192], out[8192];
	struct hy_device *dev;
	struct mem m;
	char why[256];

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 7 + 1);
	CU_ASSERT_EQUAL_FATAL(hy_fault_init("dev=cache:op=write:err=short:after=0;"
					    "dev=cache:op=read:err=short:nth=1",
					    why, sizeof(why)),
			      0);
	dev = mem_device("cache", &m);
	/* every call moves half of what is left: the loop completes it */
	CU_ASSERT_EQUAL(hy_device_write(dev, 0, in, sizeof(in), 100), (ssize_t)sizeof(in));
	CU_ASSERT_EQUAL(memcmp(m.data + 100, in, sizeof(in)), 0);
	CU_ASSERT_EQUAL(m.writes, 14); /* 8192 halves to 1 byte in 13 calls, then that 1 */
	CU_ASSERT_EQUAL(hy_device_read(dev, 0, out, sizeof(out), 100), (ssize_t)sizeof(out));
	CU_ASSERT_EQUAL(memcmp(out, in, sizeof(in)), 0);
	CU_ASSERT_EQUAL(m.reads, 2); /* half, then the rest */
	/* a one-byte request cannot be shorter: it is served whole */
	CU_ASSERT_EQUAL(hy_device_write(dev, 0, "z", 1, 0), 1);
	CU_ASSERT_EQUAL(m.data[0], 'z');
	hy_device_free(dev);
	hy_fault_reset();
}

/* A table without sync: the wrapper keeps it without (the layer's own
 * callers check), and the other operations still pass. */
static void test_missing_ops(void)
{
	static const struct hy_device_ops no_sync = {.read = mem_read, .write = mem_write};
	struct hy_device *dev = NULL;
	struct mem m;
	char why[256];

	memset(&m, 0, sizeof(m));
	CU_ASSERT_EQUAL_FATAL(
		hy_fault_init("dev=backing:op=sync:err=EIO:after=0", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_device_new("backing", &no_sync, &m, &dev), 0);
	CU_ASSERT_PTR_NULL(dev->ops->sync);
	CU_ASSERT_PTR_NULL(dev->ops->truncate);
	CU_ASSERT_EQUAL(hy_device_write(dev, 0, "ab", 2, 0), 2);
	hy_device_free(dev); /* no inner destroy: only the wrapper's */
	hy_fault_reset();
}

/* The cache store's line I/O goes through its device ("cache"). */
static void test_cache_store(void)
{
	char *dir = hy_test_tmpdir(), path[4096], why[512];
	unsigned char line[HY_CACHE_LINE_SIZE];
	struct hy_cache_store *s = NULL;

	snprintf(path, sizeof(path), "%s/store", dir);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_create(path, "u-1", 4u << 20, HY_CACHE_LINE_SIZE,
						    false, why, sizeof(why)),
			      0);
	CU_ASSERT_EQUAL_FATAL(hy_fault_init("dev=cache:op=write:err=ENOSPC:nth=2;"
					    "dev=cache:op=read:err=EIO:nth=1",
					    why, sizeof(why)),
			      0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, "u-1", &s, why, sizeof(why)), 0);
	memset(line, 0x5a, sizeof(line));
	CU_ASSERT_EQUAL(hy_cache_store_write_line(s, 3, 0xff, line), 0);
	CU_ASSERT_EQUAL(hy_cache_store_write_line(s, 4, 0xff, line), -ENOSPC);
	CU_ASSERT_EQUAL(hy_cache_store_write_line(s, 4, 0xff, line), 0);
	memset(line, 0, sizeof(line));
	CU_ASSERT_EQUAL(hy_cache_store_read_line(s, 3, 0xff, line), -EIO);
	CU_ASSERT_EQUAL(hy_cache_store_read_line(s, 3, 0xff, line), 0);
	CU_ASSERT_EQUAL(line[0], 0x5a);
	CU_ASSERT_EQUAL(line[HY_CACHE_LINE_SIZE - 1], 0x5a);
	hy_cache_store_close(s);
	hy_fault_reset();
	hy_test_rmtree(dir);
	free(dir);
}

/* ---- crash points ---------------------------------------------------------- */

static int crashes;
static char crashed_at[64];

static void on_crash(const char *name)
{
	crashes++;
	snprintf(crashed_at, sizeof(crashed_at), "%s", name);
}

static void test_points(void)
{
	char why[256];

	/* off: nothing counted, nothing happens */
	hy_fault_reset();
	hy_fault_point("cache.clean.mid");
	CU_ASSERT_EQUAL(hy_fault_point_count("cache.clean.mid"), 0);

	CU_ASSERT_EQUAL_FATAL(
		hy_fault_init("point=cache.clean.mid:nth=3;point=map.journal.after:nth=1", why,
			      sizeof(why)),
		0);
	hy_fault_set_crash_hook(on_crash);
	crashes = 0;
	for (int i = 0; i < 5; i++)
		hy_fault_point("cache.clean.mid");
	hy_fault_point("cache.journal.before"); /* no rule: not counted */
	CU_ASSERT_EQUAL(crashes, 1);
	CU_ASSERT_STRING_EQUAL(crashed_at, "cache.clean.mid");
	CU_ASSERT_EQUAL(hy_fault_point_count("cache.clean.mid"), 5);
	CU_ASSERT_EQUAL(hy_fault_point_count("cache.journal.before"), 0);
	hy_fault_point("map.journal.after");
	CU_ASSERT_EQUAL(crashes, 2);
	CU_ASSERT_STRING_EQUAL(crashed_at, "map.journal.after");
	/* device faults are not counted as points */
	CU_ASSERT_EQUAL(hy_fault_injected(), 0);
	hy_fault_reset();
	hy_fault_point("cache.clean.mid");
	CU_ASSERT_EQUAL(crashes, 2);
}

/* The changed hook (device.h, hy_device_set_mtime): told when a time is
 * put back after a write home, not for a request's own time (now), and
 * through the fault wrapper too; told even when the table cannot set
 * times, since the blocks went home all the same. */
static int64_t told_object;
static int told;

static void changed(void *ctx, int64_t object)
{
	CU_ASSERT_PTR_EQUAL(ctx, &told);
	told++;
	told_object = object;
}

static void test_changed_hook(void)
{
	struct hy_device *dev;
	struct mem m;
	char why[256];

	hy_fault_reset();
	dev = mem_device("backing", &m);
	told = 0;
	CU_ASSERT_EQUAL(hy_device_set_mtime(dev, 7, -1), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(told, 0); /* no hook yet */
	hy_device_set_changed_hook(dev, changed, &told);
	CU_ASSERT_EQUAL(hy_device_set_mtime(dev, 7, -1), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(told, 0); /* now: the request's own write */
	CU_ASSERT_EQUAL(hy_device_set_mtime(dev, 7, 1000000000), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(told, 1);
	CU_ASSERT_EQUAL(told_object, 7);
	hy_device_free(dev);
	/* wrapped by a rule that names the device */
	CU_ASSERT_EQUAL(hy_fault_init("dev=backing:op=write:err=EIO:after=0", why, sizeof(why)), 0);
	dev = mem_device("backing", &m);
	CU_ASSERT_PTR_NOT_NULL(dev->fault);
	hy_device_set_changed_hook(dev, changed, &told);
	CU_ASSERT_EQUAL(hy_device_set_mtime(dev, 9, 0), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(told, 2);
	CU_ASSERT_EQUAL(told_object, 9);
	hy_device_free(dev);
	hy_fault_reset();
}

int hy_test_add_fault(void)
{
	CU_pSuite s = CU_add_suite("fault", NULL, NULL);

	if (!s)
		return -1;
	if (!CU_add_test(s, "spec: accepted forms", test_parse_accepts) ||
	    !CU_add_test(s, "spec: refusals name the bad part", test_parse_refuses) ||
	    !CU_add_test(s, "devices no rule names are not wrapped", test_not_wrapped) ||
	    !CU_add_test(s, "EIO on the Nth write", test_eio_nth) ||
	    !CU_add_test(s, "every Nth read, syncs after N", test_every_after) ||
	    !CU_add_test(s, "short writes and reads are completed", test_short) ||
	    !CU_add_test(s, "a table without sync", test_missing_ops) ||
	    !CU_add_test(s, "the changed hook follows a time put back", test_changed_hook) ||
	    !CU_add_test(s, "the cache store's line I/O", test_cache_store) ||
	    !CU_add_test(s, "crash points", test_points))
		return -1;
	return 0;
}
