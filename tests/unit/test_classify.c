/* test_classify.c - ReCA's request classifier: each class on constructed
 * sequences, the depth boundary, reads and writes apart, the strided gap's
 * edges, page-granular overlap, files apart, precedence, bad configs, and
 * 100,000 random requests against a reference that scans the history.
 * HYTEST_BENCH=1 prints the ns per hy_classify() at depth 64. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hybridfs/classify.h"
#include "suites.h"

#define KIB    UINT64_C(1024)
#define GAP    HY_CLASSIFY_DEFAULT_GAP
#define FAR(i) ((uint64_t)(i) << 30) /* offsets that never relate */

static enum hy_request_class cls_of(struct hy_classify_history *h, uint64_t f, uint64_t off,
				    uint32_t len)
{
	return hy_classify(h, f, off, len, false);
}

static void init_gap(struct hy_classify_history *h, unsigned depth, uint64_t gap)
{
	struct hy_classify_config cfg;

	hy_classify_config_init(&cfg);
	cfg.depth = depth;
	cfg.stride_gap = gap;
	CU_ASSERT_FATAL(hy_classify_init(h, &cfg) == 0);
}

static void test_classify_names_config(void)
{
	struct hy_classify_config cfg;
	struct hy_classify_history h;

	CU_ASSERT_STRING_EQUAL(hy_classify_name(HY_CLASS_SEQUENTIAL), "sequential");
	CU_ASSERT_STRING_EQUAL(hy_classify_name(HY_CLASS_STRIDED), "strided");
	CU_ASSERT_STRING_EQUAL(hy_classify_name(HY_CLASS_OVERLAPPED), "overlapped");
	CU_ASSERT_STRING_EQUAL(hy_classify_name(HY_CLASS_RANDOM), "random");
	CU_ASSERT_STRING_EQUAL(hy_classify_name((enum hy_request_class)7), "unknown");
	CU_ASSERT_EQUAL(HY_CLASS_SEQUENTIAL, 0);
	CU_ASSERT_EQUAL(HY_CLASS_RANDOM, 3);

	hy_classify_config_init(&cfg);
	CU_ASSERT_EQUAL(cfg.depth, 64);
	CU_ASSERT_EQUAL(cfg.stride_gap, 128 * KIB);
	cfg.depth = 0;
	CU_ASSERT_EQUAL(hy_classify_init(&h, &cfg), -EINVAL);
	cfg.depth = 4097;
	CU_ASSERT_EQUAL(hy_classify_init(&h, &cfg), -EINVAL);
	hy_classify_free(&h); /* a failed init leaves it freed */
	cfg.depth = 4096;
	CU_ASSERT_EQUAL(hy_classify_init(&h, &cfg), 0);
	hy_classify_free(&h);
	hy_classify_free(&h);
	hy_classify_free(NULL);
	CU_ASSERT_EQUAL(hy_classify_init(&h, NULL), 0);
	CU_ASSERT_EQUAL(h.depth, 64);
	hy_classify_free(&h);
}

static void test_classify_each_class(void)
{
	struct hy_classify_history h;

	CU_ASSERT_FATAL(hy_classify_init(&h, NULL) == 0);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 0, 4096), HY_CLASS_RANDOM); /* empty history */
	CU_ASSERT_EQUAL(cls_of(&h, 1, 4096, 4096), HY_CLASS_SEQUENTIAL);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 8192, 8192), HY_CLASS_SEQUENTIAL);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 16384 + 8192, 4096), HY_CLASS_STRIDED);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 5000, 10), HY_CLASS_OVERLAPPED);
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(5), 4096), HY_CLASS_RANDOM);
	/* A sequential run found among interleaved streams. */
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(9), 4096), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(5) + 4096, 4096), HY_CLASS_SEQUENTIAL);
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(9) + 4096, 4096), HY_CLASS_SEQUENTIAL);
	hy_classify_free(&h);
}

/* With depth 64, a continuation of the 64th-last request is sequential and
 * of the 65th-last is not. */
static void test_classify_depth_boundary(void)
{
	for (unsigned fillers = 63; fillers <= 64; fillers++) {
		struct hy_classify_history h;

		CU_ASSERT_FATAL(hy_classify_init(&h, NULL) == 0);
		CU_ASSERT_EQUAL(cls_of(&h, 1, 0, 4096), HY_CLASS_RANDOM);
		for (unsigned i = 0; i < fillers; i++)
			CU_ASSERT_EQUAL(cls_of(&h, 2, FAR(i + 1), 4096), HY_CLASS_RANDOM);
		/* Writes do not push reads out. */
		for (unsigned i = 0; i < 100; i++)
			hy_classify(&h, 1, FAR(i + 1), 4096, true);
		CU_ASSERT_EQUAL(cls_of(&h, 1, 4096, 4096),
				fillers == 63 ? HY_CLASS_SEQUENTIAL : HY_CLASS_RANDOM);
		hy_classify_free(&h);
	}
	/* Depth 1: only the last request counts. */
	struct hy_classify_history h;

	init_gap(&h, 1, GAP);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 0, 4096), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 4096, 4096), HY_CLASS_SEQUENTIAL);
	CU_ASSERT_EQUAL(cls_of(&h, 2, 0, 4096), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 8192, 4096), HY_CLASS_RANDOM);
	hy_classify_free(&h);
}

static void test_classify_directions_apart(void)
{
	struct hy_classify_history h;

	CU_ASSERT_FATAL(hy_classify_init(&h, NULL) == 0);
	CU_ASSERT_EQUAL(hy_classify(&h, 1, 0, 4096, false), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(hy_classify(&h, 1, 4096, 4096, true), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(hy_classify(&h, 1, 0, 4096, true), HY_CLASS_RANDOM); /* not overlapped */
	CU_ASSERT_EQUAL(hy_classify(&h, 1, 4096, 4096, false), HY_CLASS_SEQUENTIAL);
	CU_ASSERT_EQUAL(hy_classify(&h, 1, 8192, 4096, true), HY_CLASS_SEQUENTIAL);
	hy_classify_free(&h);
}

/* After [0, 4096): a start at end + 1 and at end + gap is strided, at
 * end + gap + 1 random. */
static void test_classify_stride_edges(void)
{
	const uint64_t gaps[] = {GAP, 8 * KIB, 1};
	struct hy_classify_history h;

	for (size_t i = 0; i < sizeof(gaps) / sizeof(gaps[0]); i++) {
		const uint64_t g = gaps[i];
		const struct {
			uint64_t off;
			enum hy_request_class want;
		} cases[] = {
			{4096 + 1, HY_CLASS_STRIDED},
			{4096 + g, HY_CLASS_STRIDED},
			{4096 + g + 1, HY_CLASS_RANDOM},
		};

		for (size_t c = 0; c < 3; c++) {
			init_gap(&h, 64, g);
			hy_classify(&h, 1, 0, 4096, false);
			CU_ASSERT_EQUAL(cls_of(&h, 1, cases[c].off, 512), cases[c].want);
			hy_classify_free(&h);
		}
	}
	/* Gap 0: no request is strided. */
	init_gap(&h, 64, 0);
	hy_classify(&h, 1, 0, 4096, false);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 4097, 512), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 4097 + 512, 512), HY_CLASS_SEQUENTIAL);
	hy_classify_free(&h);
	/* The closest end below the start decides, not the first one found. */
	init_gap(&h, 64, 8 * KIB);
	hy_classify(&h, 1, 0, 4096, false);
	hy_classify(&h, 1, 40960, 4096, false);
	hy_classify(&h, 1, FAR(1), 4096, false);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 45056 + 8192, 4096), HY_CLASS_STRIDED);
	hy_classify_free(&h);
}

static void test_classify_overlap_pages(void)
{
	struct hy_classify_history h;

	init_gap(&h, 64, 0); /* so that "not overlapped" reads random */
	CU_ASSERT_EQUAL(cls_of(&h, 1, 100, 100), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 4000, 50), HY_CLASS_OVERLAPPED);	  /* same page, no byte */
	CU_ASSERT_EQUAL(cls_of(&h, 1, 4096, 100), HY_CLASS_RANDOM);	  /* next page */
	CU_ASSERT_EQUAL(cls_of(&h, 1, 3 * 4096 - 1, 2), HY_CLASS_RANDOM); /* pages 2, 3 */
	CU_ASSERT_EQUAL(cls_of(&h, 1, 3 * 4096 + 5, 1), HY_CLASS_OVERLAPPED);
	/* A long request covers many pages; one inside it is overlapped. */
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(1), 1u << 20), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(1) + 500 * KIB, 1), HY_CLASS_OVERLAPPED);
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(1) - 4096, 4096), HY_CLASS_RANDOM);
	/* A short one inside a long one that started much earlier, with
	 * many intervals in between in key order. */
	for (unsigned i = 0; i < 40; i++)
		hy_classify(&h, 1, FAR(2) + (i + 1) * 8192, 1, false);
	hy_classify(&h, 1, FAR(2), 1u << 20, false);
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(2) + 900 * KIB, 1), HY_CLASS_OVERLAPPED);
	/* Zero length: as one byte. */
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(3) + 10, 0), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(3) + 20, 1), HY_CLASS_OVERLAPPED);
	CU_ASSERT_EQUAL(cls_of(&h, 1, FAR(3) + 11, 1), HY_CLASS_SEQUENTIAL);
	hy_classify_free(&h);
}

static void test_classify_files_apart(void)
{
	struct hy_classify_history h;

	CU_ASSERT_FATAL(hy_classify_init(&h, NULL) == 0);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 0, 4096), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 2, 4096, 4096), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 3, 0, 4096), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 4, 8192, 4096), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 0, 0, 1), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, UINT64_MAX, 4096, 1), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 2, 8192, 4096), HY_CLASS_SEQUENTIAL);
	hy_classify_free(&h);
}

static void test_classify_precedence(void)
{
	struct hy_classify_history h;

	CU_ASSERT_FATAL(hy_classify_init(&h, NULL) == 0);
	/* Sequential over overlapped: small appends share a page. */
	CU_ASSERT_EQUAL(cls_of(&h, 1, 0, 1024), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 1024, 1024), HY_CLASS_SEQUENTIAL);
	CU_ASSERT_EQUAL(cls_of(&h, 1, 2048, 1024), HY_CLASS_SEQUENTIAL);
	/* Overlapped over strided: 100 bytes after an end, same page. */
	CU_ASSERT_EQUAL(cls_of(&h, 1, 3072 + 100, 100), HY_CLASS_OVERLAPPED);
	/* Sequential over strided: one end at the start, one just before. */
	CU_ASSERT_EQUAL(cls_of(&h, 2, 0, 8192), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 2, FAR(1), 4096), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 2, 16384, 4096), HY_CLASS_STRIDED);
	CU_ASSERT_EQUAL(cls_of(&h, 2, 20480 + 4096, 4096), HY_CLASS_STRIDED);
	hy_classify(&h, 2, 4096 * 100, 4096 * 6, false); /* ends at page 106 */
	hy_classify(&h, 2, 4096 * 104, 4096, false);	 /* ends at page 105 */
	CU_ASSERT_EQUAL(cls_of(&h, 2, 4096 * 106, 4096), HY_CLASS_SEQUENTIAL);
	/* Saturated end: a request reaching the last byte. */
	CU_ASSERT_EQUAL(cls_of(&h, 3, UINT64_MAX - 10, 100), HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(cls_of(&h, 3, UINT64_MAX, 1), HY_CLASS_SEQUENTIAL);
	hy_classify_free(&h);
}

/* The reference: the last depth requests of each direction in a ring,
 * scanned in full. */
struct ref_req {
	uint64_t file, off, end;
};

struct ref {
	struct ref_req *r[2];
	unsigned depth, count[2], head[2];
	uint64_t gap;
};

static enum hy_request_class ref_classify(struct ref *rf, uint64_t f, uint64_t off, uint32_t len,
					  bool write)
{
	int w = write ? 1 : 0;
	uint64_t len1 = len ? len : 1; /* zero length: as one byte */
	uint64_t end = off > UINT64_MAX - len1 ? UINT64_MAX : off + len1;
	uint64_t fp = off >> 12, lp = (end - 1) >> 12;
	bool seq = false, ovl = false, str = false;

	for (unsigned i = 0; i < rf->count[w]; i++) {
		const struct ref_req *q = &rf->r[w][i];
		uint64_t qfp = q->off >> 12, qlp = (q->end - 1) >> 12;

		if (q->file != f)
			continue;
		seq |= q->end == off;
		ovl |= qfp <= lp && fp <= qlp;
		str |= q->end < off && off - q->end <= rf->gap;
	}
	rf->r[w][rf->head[w]] = (struct ref_req){f, off, end};
	rf->head[w] = (rf->head[w] + 1) % rf->depth;
	if (rf->count[w] < rf->depth)
		rf->count[w]++;
	if (seq)
		return HY_CLASS_SEQUENTIAL;
	if (ovl)
		return HY_CLASS_OVERLAPPED;
	return str ? HY_CLASS_STRIDED : HY_CLASS_RANDOM;
}

static uint64_t rnd_state = 0x853c49e6748fea9bULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void run_random(unsigned depth, uint64_t gap, unsigned n)
{
	struct hy_classify_history h;
	unsigned counts[HY_CLASS_COUNT] = {0}, bad = 0;
	uint64_t last_end[4][2] = {{0}};
	struct ref rf = {.depth = depth, .gap = gap};

	init_gap(&h, depth, gap);
	rf.r[0] = calloc(depth, sizeof(struct ref_req));
	rf.r[1] = calloc(depth, sizeof(struct ref_req));
	CU_ASSERT_FATAL(rf.r[0] && rf.r[1]);
	for (unsigned i = 0; i < n; i++) {
		uint64_t f = rnd() % 4, off;
		bool w = rnd() % 3 == 0;
		uint32_t len;
		unsigned how = rnd() % 8;

		/* Lengths: sub-page, page multiples, long; sometimes zero. */
		switch (rnd() % 4) {
		case 0:
			len = (uint32_t)(rnd() % 4096);
			break;
		case 1:
			len = (uint32_t)((1 + rnd() % 8) * 4096);
			break;
		case 2:
			len = (uint32_t)(1 + rnd() % (256 * 1024));
			break;
		default:
			len = 4096;
			break;
		}
		if (how < 3)
			off = last_end[f][w]; /* a continuation, maybe evicted */
		else if (how < 5)
			off = last_end[f][w] + rnd() % (2 * gap + 2); /* near an end */
		else if (how < 6)
			off = last_end[f][w] - last_end[f][w] % 4096; /* its last page */
		else
			off = (rnd() % (64 * 1024 * 1024)) & ~(uint64_t)(rnd() % 2 ? 511 : 0);
		if (i % 1000 == 999)
			off = UINT64_MAX - rnd() % 8192; /* the saturated end */
		enum hy_request_class got = hy_classify(&h, f, off, len, w);
		enum hy_request_class want = ref_classify(&rf, f, off, len, w);

		if (got != want && bad++ < 5)
			fprintf(stderr,
				"classify: request %u (file %llu, %llu+%u, %s): %s, want %s\n", i,
				(unsigned long long)f, (unsigned long long)off, len,
				w ? "write" : "read", hy_classify_name(got),
				hy_classify_name(want));
		counts[want]++;
		last_end[f][w] = off > UINT64_MAX - len ? 0 : off + len;
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* Every class was exercised. */
	for (int c = 0; c < HY_CLASS_COUNT; c++) {
		if (counts[c] <= n / 100)
			fprintf(stderr, "classify: depth %u: %u %s of %u\n", depth, counts[c],
				hy_classify_name((enum hy_request_class)c), n);
		CU_ASSERT(counts[c] > n / 100);
	}
	free(rf.r[0]);
	free(rf.r[1]);
	hy_classify_free(&h);
}

static void test_classify_random_vs_reference(void)
{
	run_random(64, GAP, 100000);
	run_random(7, 8 * KIB, 20000);
	run_random(1, GAP, 5000);
	run_random(300, 4096, 20000);
}

static void test_classify_bench(void)
{
	const char *env = getenv("HYTEST_BENCH");
	struct hy_classify_history h;
	struct timespec t0, t1;
	const unsigned n = 2000000;
	unsigned sink = 0;
	uint64_t off = 0;

	if (!env || strcmp(env, "1") != 0)
		return;
	CU_ASSERT_FATAL(hy_classify_init(&h, NULL) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < n; i++) {
		uint64_t r = rnd();

		off = r % 4 ? off + 4096 : (r >> 8) % (1ULL << 30);
		sink += hy_classify(&h, r % 8, off, 4096, (r >> 4) % 4 == 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("\n    classify: %.1f ns per request at depth 64 (%u requests, sink %u)\n",
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / n, n,
	       sink);
	hy_classify_free(&h);
}

int hy_test_add_classify(void)
{
	CU_pSuite s = CU_add_suite("classify", NULL, NULL);

	if (!s || !CU_add_test(s, "names, config, bad depths", test_classify_names_config) ||
	    !CU_add_test(s, "each class", test_classify_each_class) ||
	    !CU_add_test(s, "the depth boundary", test_classify_depth_boundary) ||
	    !CU_add_test(s, "reads and writes apart", test_classify_directions_apart) ||
	    !CU_add_test(s, "strided gap edges", test_classify_stride_edges) ||
	    !CU_add_test(s, "overlap by 4 KiB page", test_classify_overlap_pages) ||
	    !CU_add_test(s, "different files never relate", test_classify_files_apart) ||
	    !CU_add_test(s, "precedence", test_classify_precedence) ||
	    !CU_add_test(s, "random requests against a scanning reference",
			 test_classify_random_vs_reference) ||
	    !CU_add_test(s, "benchmark (HYTEST_BENCH=1)", test_classify_bench))
		return -1;
	return 0;
}
