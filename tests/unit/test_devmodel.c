/* test_devmodel.c - the HDD, SSD and SMR device models against times
 * computed by hand (formulas in device/devmodel.c): sequential and
 * strided reads with and without read-ahead, seeks at known distances,
 * the write cache, the SSD, SMR buffer fills and band cleanings, and the
 * parameter parser and checks.
 *
 * The HDD tests use round numbers: capacity C = 3e9 bytes, 6,000 rpm (half
 * a turn = 5 ms), seeks 1 / 8.5 / 18 ms, media 100 MB/s (100,000 bytes =
 * 1 ms), interface 500 MB/s (100,000 bytes = 0.2 ms). A seek of C / 12
 * (3f = 1/4) costs 1 + 7.5 * 0.5 = 4.75 ms; one of 100,000 bytes (3f =
 * 1e-4) 1 + 7.5 * 0.01 = 1.075 ms; one of 400,000 bytes (3f = 4e-4)
 * 1 + 7.5 * 0.02 = 1.15 ms; one of 2C/3, 8.5 + 9.5 * (1/3) * 1.5 =
 * 13.25 ms. */
#include <errno.h>
#include <string.h>

#include "hybridfs/devmodel.h"
#include "suites.h"

#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)
#define EPS 1e-9

#define C    UINT64_C(3000000000)
#define X    UINT64_C(250000000) /* C / 12 from byte 0 */
#define K100 UINT64_C(100000)

static void hdd_params(struct hy_devmodel_params *p, uint64_t readahead, uint64_t write_cache)
{
	hy_devmodel_defaults(HY_DEVMODEL_HDD, p);
	p->capacity = C;
	p->rpm = 6000;
	p->seek_track_ms = 1.0;
	p->seek_avg_ms = 8.5;
	p->seek_full_ms = 18.0;
	p->media_mb_s = 100;
	p->interface_mb_s = 500;
	p->readahead_bytes = readahead;
	p->write_cache_bytes = write_cache;
}

static struct hy_devmodel *hdd(uint64_t readahead, uint64_t write_cache)
{
	struct hy_devmodel_params p;
	struct hy_devmodel *m = NULL;
	char why[256];

	hdd_params(&p, readahead, write_cache);
	CU_ASSERT_EQUAL_FATAL(hy_devmodel_new(&p, &m, why, sizeof(why)), 0);
	return m;
}

#define SERVE(m, off, len, w, want)                                                                \
	CU_ASSERT_DOUBLE_EQUAL(hy_devmodel_serve(m, off, len, w), want, EPS)

static void test_devmodel_hdd_sequential(void)
{
	struct hy_devmodel *m = hdd(0, 0);
	struct hy_devmodel_stats st;

	/* first: seek C/12 + half a turn + 1 ms; then pure transfers */
	SERVE(m, X, K100, false, 4.75 + 5 + 1);
	SERVE(m, X + K100, K100, false, 1.0);
	SERVE(m, X + 2 * K100, K100, false, 1.0);
	/* the last request's range is still in the buffer */
	SERVE(m, X + 2 * K100, K100, false, 0.2);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.reads, 4);
	CU_ASSERT_EQUAL(st.bytes_read, 4 * K100);
	CU_ASSERT_EQUAL(st.seeks, 1);
	CU_ASSERT_EQUAL(st.readahead_hits, 1);
	CU_ASSERT_DOUBLE_EQUAL(st.busy_ms, 10.75 + 2 + 0.2, EPS);
	CU_ASSERT_EQUAL(st.writes, 0);
	CU_ASSERT_DOUBLE_EQUAL(st.write_amplification, 0, EPS);
	/* offsets wrap into the capacity: C + X + 300,000 continues */
	SERVE(m, C + X + 3 * K100, K100, false, 1.0);
	hy_devmodel_free(m);

	/* with 400,000 bytes of read-ahead: hits until the segment ends, then
	 * one sequential media read (the head waits at the segment's end) */
	m = hdd(4 * K100, 0);
	SERVE(m, X, K100, false, 10.75);
	for (uint64_t i = 1; i <= 4; i++)
		SERVE(m, X + i * K100, K100, false, 0.2);
	SERVE(m, X + 5 * K100, K100, false, 1.0);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.readahead_hits, 4);
	CU_ASSERT_EQUAL(st.seeks, 1);
	CU_ASSERT_DOUBLE_EQUAL(st.busy_ms, 10.75 + 0.8 + 1.0, EPS);
	hy_devmodel_free(m);
}

static void test_devmodel_hdd_seek(void)
{
	struct hy_devmodel *m = hdd(0, 0);
	struct hy_devmodel_stats st;

	/* 2C/3 from byte 0: the linear part */
	SERVE(m, 2 * C / 3, K100, false, 13.25 + 5 + 1);
	/* C/12 further on, then 100,000 bytes back (before the head) */
	SERVE(m, 2 * C / 3 + K100 + X, K100, false, 4.75 + 5 + 1);
	SERVE(m, 2 * C / 3 + K100 + X, K100, false, 0.2); /* same range */
	SERVE(m, 2 * C / 3 + X - 2 * K100, K100, false, 1.15 + 5 + 1);
	SERVE(m, 2 * C / 3 + X, K100, false, 1.075 + 5 + 1); /* 100,000 on */
	/* a seek of 1/3 exactly: the average */
	hy_devmodel_free(m);
	m = hdd(0, 0);
	SERVE(m, C / 3, K100, false, 8.5 + 5 + 1);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.seeks, 1);
	hy_devmodel_free(m);
}

static void test_devmodel_hdd_readahead(void)
{
	struct hy_devmodel *m = hdd(4 * K100, 0);
	struct hy_devmodel_stats st;

	/* strided, gap inside the segment: a hit; outside: a short seek */
	SERVE(m, X, K100, false, 10.75);
	SERVE(m, X + 3 * K100, K100, false, 0.2);	     /* [X, X+500k) held */
	SERVE(m, X + 6 * K100, K100, false, 1.075 + 5 + 1);  /* head at X+500k */
	SERVE(m, X + 9 * K100, K100, false, 0.2);	     /* [X+600k, X+1.1M) */
	SERVE(m, X + 12 * K100, K100, false, 1.075 + 5 + 1); /* head at X+1.1M */
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.readahead_hits, 2);
	CU_ASSERT_EQUAL(st.seeks, 3);
	hy_devmodel_free(m);

	/* without read-ahead every strided read seeks */
	m = hdd(0, 0);
	SERVE(m, X, K100, false, 10.75);
	SERVE(m, X + 2 * K100, K100, false, 1.075 + 5 + 1);
	SERVE(m, X + 4 * K100, K100, false, 1.075 + 5 + 1);
	hy_devmodel_free(m);

	/* a read that starts in the segment and runs past it: the held
	 * 50,000 bytes at interface speed, the rest straight from the media */
	m = hdd(4 * K100, 0);
	SERVE(m, X, K100, false, 10.75);
	SERVE(m, X + 45 * K100 / 10, K100, false, 0.1 + 0.5);
	SERVE(m, X + 9 * K100, K100 / 2, false, 0.1); /* [X+450k, X+950k) */
	hy_devmodel_free(m);

	/* a write over the segment drops it; one elsewhere does not */
	m = hdd(4 * K100, MIB);
	SERVE(m, X, K100, false, 10.75);
	SERVE(m, 2 * C / 3, K100, true, 0.2); /* absorbed */
	SERVE(m, X + K100, K100, false, 0.2);
	SERVE(m, X + 2 * K100, K100, true, 0.2);
	/* head still at X+500k: 400,000 bytes back */
	SERVE(m, X + K100, K100, false, 1.15 + 5 + 1);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.readahead_hits, 1);
	CU_ASSERT_EQUAL(st.write_cache_hits, 2);
	hy_devmodel_free(m);
}

static void test_devmodel_hdd_write_cache(void)
{
	struct hy_devmodel *m = hdd(0, 10 * K100);
	struct hy_devmodel_stats st;

	/* 500,000-byte writes into 1,000,000 bytes drained at 100,000 B/ms */
	SERVE(m, X, 5 * K100, true, 1.0);	   /* pending 500k */
	SERVE(m, X, 5 * K100, true, 1.0);	   /* 400k + 500k */
	SERVE(m, X, 5 * K100, true, 4.75 + 5 + 5); /* 800k + 500k: full */
	SERVE(m, X, 5 * K100, true, 1.0);	   /* drained during 14.75 ms */
	SERVE(m, X + 5 * K100, K100, false, 1.0);  /* head left by the 3rd write */
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.writes, 4);
	CU_ASSERT_EQUAL(st.bytes_written, 20 * K100);
	CU_ASSERT_EQUAL(st.write_cache_hits, 3);
	CU_ASSERT_EQUAL(st.seeks, 1);
	CU_ASSERT_EQUAL(st.media_bytes_written, 20 * K100);
	CU_ASSERT_DOUBLE_EQUAL(st.write_amplification, 1.0, EPS);
	CU_ASSERT_DOUBLE_EQUAL(st.busy_ms, 1 + 1 + 14.75 + 1 + 1, EPS);
	hy_devmodel_free(m);

	/* no write cache: a write costs what a read costs */
	m = hdd(0, 0);
	SERVE(m, X, K100, true, 10.75);
	SERVE(m, X + K100, K100, true, 1.0);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.write_cache_hits, 0);
	hy_devmodel_free(m);
}

/* ReCA: random writes faster than random reads, thanks to the write cache */
static void test_devmodel_hdd_random_write(void)
{
	struct hy_devmodel_params p;
	struct hy_devmodel *m = NULL;
	double r, w, rot = 60000.0 / 7200 / 2;

	hy_devmodel_defaults(HY_DEVMODEL_HDD, &p);
	CU_ASSERT_EQUAL_FATAL(hy_devmodel_new(&p, &m, NULL, 0), 0);
	/* half the stroke: 8.5 + 9.5 * (1/2 - 1/3) * 1.5 */
	r = hy_devmodel_serve(m, p.capacity / 2, 4096, false);
	CU_ASSERT_DOUBLE_EQUAL(r, 8.5 + 9.5 * 0.25 + rot + 4096 / 210e3, 1e-6);
	w = hy_devmodel_serve(m, p.capacity / 5, 4096, true);
	CU_ASSERT_DOUBLE_EQUAL(w, 4096 / 600e3, 1e-9);
	CU_ASSERT(w < r / 2);
	hy_devmodel_free(m);
}

static void test_devmodel_ssd(void)
{
	struct hy_devmodel_params p;
	struct hy_devmodel *m = NULL;
	struct hy_devmodel_stats st;

	hy_devmodel_defaults(HY_DEVMODEL_SSD, &p);
	CU_ASSERT_EQUAL(p.capacity, UINT64_C(1000000000000));
	CU_ASSERT_EQUAL_FATAL(hy_devmodel_new(&p, &m, NULL, 0), 0);
	SERVE(m, 123456789, 4096, false, 0.09 + 4096 / 530e3);
	SERVE(m, 5, 4096, false, 0.09 + 4096 / 530e3);
	SERVE(m, 999999999, 1000000, true, 0.03 + 2.0);
	SERVE(m, 0, 0, true, 0);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.reads, 2);
	CU_ASSERT_EQUAL(st.writes, 2);
	CU_ASSERT_EQUAL(st.bytes_read, 8192);
	CU_ASSERT_EQUAL(st.bytes_written, 1000000);
	CU_ASSERT_EQUAL(st.seeks, 0);
	CU_ASSERT_EQUAL(st.readahead_hits, 0);
	CU_ASSERT_DOUBLE_EQUAL(st.write_amplification, 1.0, EPS);
	CU_ASSERT_DOUBLE_EQUAL(st.busy_ms, 0.18 + 2 * 4096 / 530e3 + 2.03, EPS);
	hy_devmodel_free(m);
}

/* SMR: 64 MiB in 1 MiB bands, a 4 MiB buffer, 6,000 rpm, 100 MB/s: an
 * append of 1 MiB = 10.48576 ms; going to the buffer 8.5 + 5 ms; a band
 * rewrite 8.5 + 5 + 20.97152 ms */
#define T1M	10.48576
#define T512K	5.24288
#define GO	13.5
#define REWRITE (13.5 + 20.97152)

static struct hy_devmodel *smr(uint64_t capacity, uint64_t buffer)
{
	struct hy_devmodel_params p;
	struct hy_devmodel *m = NULL;
	char why[256];

	hy_devmodel_defaults(HY_DEVMODEL_SMR, &p);
	p.capacity = capacity;
	p.band_bytes = MIB;
	p.buffer_bytes = buffer;
	p.rpm = 6000;
	p.seek_avg_ms = 8.5;
	p.media_mb_s = 100;
	p.interface_mb_s = 500;
	p.readahead_bytes = 0;
	CU_ASSERT_EQUAL_FATAL(hy_devmodel_new(&p, &m, why, sizeof(why)), 0);
	return m;
}

static void test_devmodel_smr_clean(void)
{
	struct hy_devmodel *m = smr(64 * MIB, 4 * MIB);
	struct hy_devmodel_stats st;

	/* fill the buffer exactly: bands 0, 5, 10 dirty */
	SERVE(m, 0, MIB, true, GO + T1M);
	SERVE(m, 5 * MIB, MIB, true, T1M); /* appends are sequential */
	SERVE(m, 5 * MIB + 512 * KIB, 512 * KIB, true, T512K);
	SERVE(m, 10 * MIB, MIB, true, T1M);
	SERVE(m, 512 * KIB, 512 * KIB, true, T512K);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.band_cleanings, 0);
	CU_ASSERT_EQUAL(st.media_bytes_written, 4 * MIB);
	CU_ASSERT_DOUBLE_EQUAL(st.write_amplification, 1.0, EPS);
	/* one more: the three dirty bands are rewritten, then the append */
	SERVE(m, 20 * MIB, MIB, true, 3 * REWRITE + GO + T1M);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.band_cleanings, 3);
	CU_ASSERT_EQUAL(st.bytes_written, 5 * MIB);
	CU_ASSERT_EQUAL(st.media_bytes_written, 8 * MIB);
	CU_ASSERT_DOUBLE_EQUAL(st.write_amplification, 8.0 / 5.0, EPS);
	CU_ASSERT_EQUAL(st.seeks, 2);
	/* a read from the buffer's head position: the average seek */
	SERVE(m, 20 * MIB, MIB, false, GO + T1M);
	/* a write straddling bands 29 and 30, after a read: back to the buffer */
	SERVE(m, 30 * MIB - 4096, 8192, true, GO + 8192 / 1e5);
	/* 4 MiB more: bands 20, 29, 30 are rewritten */
	SERVE(m, 40 * MIB, 4 * MIB, true, 3 * REWRITE + GO + 4 * T1M);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.band_cleanings, 6);
	CU_ASSERT_EQUAL(st.media_bytes_written, 8 * MIB + 8192 + 4 * MIB + 3 * MIB);
	CU_ASSERT_EQUAL(st.bytes_written, 9 * MIB + 8192);
	CU_ASSERT_EQUAL(st.seeks, 5);
	CU_ASSERT_EQUAL(st.reads, 1);
	hy_devmodel_free(m);
}

static void test_devmodel_smr_large_and_partial(void)
{
	struct hy_devmodel *m = smr(64 * MIB, 4 * MIB);
	struct hy_devmodel_stats st;

	/* 10 MiB through a 4 MiB buffer: 4 + 4 + 2, cleaning 4 bands twice */
	SERVE(m, 0, 10 * MIB, true,
	      GO + 4 * T1M + 4 * REWRITE + GO + 4 * T1M + 4 * REWRITE + GO + 2 * T1M);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.band_cleanings, 8);
	CU_ASSERT_EQUAL(st.media_bytes_written, 18 * MIB);
	CU_ASSERT_DOUBLE_EQUAL(st.write_amplification, 1.8, EPS);
	hy_devmodel_free(m);

	/* a last band of 512 KiB is rewritten as 512 KiB */
	m = smr(2 * MIB + 512 * KIB, MIB);
	SERVE(m, 2 * MIB, 512 * KIB, true, GO + T512K);
	SERVE(m, 0, MIB, true, GO + T1M + GO + 2 * T512K);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.band_cleanings, 1);
	CU_ASSERT_EQUAL(st.media_bytes_written, 2 * MIB);
	/* a write past the end wraps: it dirties the last band and band 0;
	 * band 0 (from the 1 MiB write) is cleaned first */
	SERVE(m, 2 * MIB + 512 * KIB - 4096, 8192, true, REWRITE + GO + 8192 / 1e5);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.band_cleanings, 2);
	SERVE(m, MIB, MIB, true, GO + 2 * T512K + REWRITE + GO + T1M);
	hy_devmodel_get_stats(m, &st);
	CU_ASSERT_EQUAL(st.band_cleanings, 4);
	CU_ASSERT_EQUAL(st.media_bytes_written, 2 * MIB + MIB + 8192 + 512 * KIB + MIB + MIB);
	hy_devmodel_free(m);
}

static void test_devmodel_set(void)
{
	struct hy_devmodel_params p, keep;
	char why[256];
	static const char *const bad[] = {
		"rpm=0",
		"rpm=-1",
		"rpm=abc",
		"rpm=nan",
		"rpm=inf",
		"rpm=",
		"rpm= 5",
		"rpm=5x",
		"seek_avg_ms=1e999",
		"bogus=1",
		"rpm",
		"=5",
		"band_bytes=0",
		"band_bytes=1X",
		"band_bytes=K",
		"capacity=-1",
		"capacity=1e12",
		"kind=tape",
		"kind=",
		"readahead_bytes=-1",
		"RPM=5400",
	};

	hy_devmodel_defaults(HY_DEVMODEL_HDD, &p);
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "rpm=5400", why, sizeof(why)), 0);
	CU_ASSERT_DOUBLE_EQUAL(p.rpm, 5400, EPS);
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "seek_avg_ms=12.5", why, sizeof(why)), 0);
	CU_ASSERT_DOUBLE_EQUAL(p.seek_avg_ms, 12.5, EPS);
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "band_bytes=64M", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(p.band_bytes, 64 * MIB);
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "capacity=2T", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(p.capacity, UINT64_C(2) << 40);
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "capacity=1000000000000", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(p.capacity, UINT64_C(1000000000000));
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "readahead_bytes=0", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(p.readahead_bytes, 0);
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "write_cache_bytes=8m", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(p.write_cache_bytes, 8 * MIB);
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "read_us=0.5", why, sizeof(why)), 0);
	CU_ASSERT_DOUBLE_EQUAL(p.read_us, 0.5, EPS);
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "kind=smr", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(p.kind, HY_DEVMODEL_SMR);
	CU_ASSERT_DOUBLE_EQUAL(p.rpm, 5400, EPS); /* kind= changes the kind only */

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		keep = p;
		why[0] = 0;
		CU_ASSERT_EQUAL(hy_devmodel_set(&p, bad[i], why, sizeof(why)), -EINVAL);
		CU_ASSERT(memcmp(&keep, &p, sizeof(p)) == 0);
		CU_ASSERT(why[0] != 0);
	}
	/* the message names the parameter */
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "bogus=1", why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"bogus\""));
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "seek_full_ms=x", why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "seek_full_ms"));
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "kind=tape", why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"tape\""));
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, "rpm=0", NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(hy_devmodel_set(&p, NULL, why, sizeof(why)), -EINVAL);
}

static void test_devmodel_kinds(void)
{
	enum hy_devmodel_kind k = HY_DEVMODEL_HDD;
	struct hy_devmodel_params p;
	char why[256];

	CU_ASSERT_STRING_EQUAL(hy_devmodel_kind_name(HY_DEVMODEL_HDD), "hdd");
	CU_ASSERT_STRING_EQUAL(hy_devmodel_kind_name(HY_DEVMODEL_SSD), "ssd");
	CU_ASSERT_STRING_EQUAL(hy_devmodel_kind_name(HY_DEVMODEL_SMR), "smr");
	CU_ASSERT_PTR_NULL(hy_devmodel_kind_name((enum hy_devmodel_kind)7));
	CU_ASSERT_EQUAL(hy_devmodel_kind_parse("smr", &k, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(k, HY_DEVMODEL_SMR);
	CU_ASSERT_EQUAL(hy_devmodel_kind_parse("HDD", &k, why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(k, HY_DEVMODEL_SMR);

	/* the defaults of the header */
	hy_devmodel_defaults(HY_DEVMODEL_HDD, &p);
	CU_ASSERT_EQUAL(p.kind, HY_DEVMODEL_HDD);
	CU_ASSERT_EQUAL(p.capacity, UINT64_C(1000000000000));
	CU_ASSERT_DOUBLE_EQUAL(p.rpm, 7200, EPS);
	CU_ASSERT_DOUBLE_EQUAL(p.seek_avg_ms, 8.5, EPS);
	CU_ASSERT_DOUBLE_EQUAL(p.media_mb_s, 210, EPS);
	CU_ASSERT_EQUAL(p.write_cache_bytes, 64 * MIB);
	hy_devmodel_defaults(HY_DEVMODEL_SMR, &p);
	CU_ASSERT_EQUAL(p.capacity, UINT64_C(5000000000000));
	CU_ASSERT_DOUBLE_EQUAL(p.rpm, 5900, EPS);
	CU_ASSERT_DOUBLE_EQUAL(p.seek_avg_ms, 9.5, EPS);
	CU_ASSERT_DOUBLE_EQUAL(p.media_mb_s, 180, EPS);
	CU_ASSERT_EQUAL(p.band_bytes, 32 * MIB);
	CU_ASSERT_EQUAL(p.buffer_bytes, 1024 * MIB);
	hy_devmodel_defaults(HY_DEVMODEL_SSD, &p);
	CU_ASSERT_DOUBLE_EQUAL(p.read_us, 90, EPS);
	CU_ASSERT_DOUBLE_EQUAL(p.write_us, 30, EPS);

	/* every kind's defaults make a model; a request of 0 bytes is free */
	for (int i = HY_DEVMODEL_HDD; i <= HY_DEVMODEL_SMR; i++) {
		struct hy_devmodel *m = NULL;

		hy_devmodel_defaults((enum hy_devmodel_kind)i, &p);
		CU_ASSERT_EQUAL(hy_devmodel_new(&p, &m, why, sizeof(why)), 0);
		CU_ASSERT_DOUBLE_EQUAL(hy_devmodel_serve(m, 12345, 0, false), 0, EPS);
		hy_devmodel_free(m);
	}
	hy_devmodel_free(NULL);
}

static void check_new_fails(const struct hy_devmodel_params *p, const char *named)
{
	char why[256] = "";
	struct hy_devmodel *m = (struct hy_devmodel *)why; /* any non-NULL value */

	CU_ASSERT_EQUAL(hy_devmodel_new(p, &m, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, named));
}

static void test_devmodel_new_checks(void)
{
	struct hy_devmodel_params p, base;

	hy_devmodel_defaults(HY_DEVMODEL_HDD, &base);
	p = base;
	p.seek_track_ms = 9;
	check_new_fails(&p, "seek_track_ms");
	p = base;
	p.seek_full_ms = 8;
	check_new_fails(&p, "seek_full_ms");
	p = base;
	p.capacity = MIB - 1;
	check_new_fails(&p, "capacity");
	p = base;
	p.rpm = 0;
	check_new_fails(&p, "rpm");
	p = base;
	p.media_mb_s = -1;
	check_new_fails(&p, "media_mb_s");
	p = base;
	p.kind = (enum hy_devmodel_kind)9;
	check_new_fails(&p, "kind");

	hy_devmodel_defaults(HY_DEVMODEL_SSD, &base);
	p = base;
	p.read_mb_s = 0;
	check_new_fails(&p, "read_mb_s");
	p = base;
	p.rpm = 0; /* not an SSD parameter */
	{
		struct hy_devmodel *m = NULL;

		CU_ASSERT_EQUAL(hy_devmodel_new(&p, &m, NULL, 0), 0);
		hy_devmodel_free(m);
	}

	hy_devmodel_defaults(HY_DEVMODEL_SMR, &base);
	p = base;
	p.band_bytes = 0;
	check_new_fails(&p, "band_bytes");
	p = base;
	p.band_bytes = 2 * p.buffer_bytes;
	check_new_fails(&p, "buffer_bytes");
	p = base;
	p.capacity = 16 * MIB;
	check_new_fails(&p, "capacity");
	p = base;
	p.band_bytes = 4096;
	check_new_fails(&p, "bands");
}

int hy_test_add_devmodel(void)
{
	CU_pSuite s = CU_add_suite("devmodel", NULL, NULL);

	if (!s || !CU_add_test(s, "hdd sequential reads", test_devmodel_hdd_sequential) ||
	    !CU_add_test(s, "hdd seeks at known distances", test_devmodel_hdd_seek) ||
	    !CU_add_test(s, "hdd read-ahead and strides", test_devmodel_hdd_readahead) ||
	    !CU_add_test(s, "hdd write cache", test_devmodel_hdd_write_cache) ||
	    !CU_add_test(s, "hdd random write vs read", test_devmodel_hdd_random_write) ||
	    !CU_add_test(s, "ssd", test_devmodel_ssd) ||
	    !CU_add_test(s, "smr buffer and cleaning", test_devmodel_smr_clean) ||
	    !CU_add_test(s, "smr large writes, partial band",
			 test_devmodel_smr_large_and_partial) ||
	    !CU_add_test(s, "set", test_devmodel_set) ||
	    !CU_add_test(s, "kinds and defaults", test_devmodel_kinds) ||
	    !CU_add_test(s, "new checks consistency", test_devmodel_new_checks))
		return -1;
	return 0;
}
