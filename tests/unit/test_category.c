/* test_category.c - ReCA's per-process workload categories: names, unknown
 * below the minimum, a synthetic stream for each of the five categories,
 * a phase change that waits for the hysteresis, a noisy stream on a
 * threshold that does not flap, and the window's mix. */
#include <stdio.h>

#include "hybridfs/category.h"
#include "suites.h"

#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)

struct stream {
	enum hy_request_class cls;
	bool write;
	uint32_t length;
	uint64_t file_size;
};

/* a small deterministic generator, so the noisy streams are repeatable */
static uint32_t rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static enum hy_category feed(struct hy_category_state *s, const struct stream *st, unsigned n)
{
	enum hy_category c = hy_category_current(s);

	for (unsigned i = 0; i < n; i++)
		c = hy_category_observe(s, st->cls, st->write, st->length, st->file_size);
	return c;
}

static void test_category_names(void)
{
	CU_ASSERT_STRING_EQUAL(hy_category_name(HY_CATEGORY_UNKNOWN), "unknown");
	CU_ASSERT_STRING_EQUAL(hy_category_name(HY_CATEGORY_RANDOM_CONSUMER), "random-consumer");
	CU_ASSERT_STRING_EQUAL(hy_category_name(HY_CATEGORY_RANDOM_PRODUCER_CONSUMER),
			       "random-producer-consumer");
	CU_ASSERT_STRING_EQUAL(hy_category_name(HY_CATEGORY_SEQUENTIAL_PRODUCER_CONSUMER),
			       "sequential-producer-consumer");
	CU_ASSERT_STRING_EQUAL(hy_category_name(HY_CATEGORY_ARCHIVAL_CONSUMER),
			       "archival-consumer");
	CU_ASSERT_STRING_EQUAL(hy_category_name(HY_CATEGORY_LARGE_FILE_GENERATOR),
			       "large-file-generator");
	CU_ASSERT_STRING_EQUAL(hy_category_name(HY_CATEGORY_COUNT), "invalid");
	CU_ASSERT_STRING_EQUAL(hy_category_name((enum hy_category) - 1), "invalid");
}

static void test_category_unknown_below_minimum(void)
{
	struct hy_category_state s;
	struct hy_category_mix mix;
	struct stream rc = {HY_CLASS_RANDOM, false, 8 * KIB, GIB};

	hy_category_init(&s, NULL);
	CU_ASSERT_EQUAL(hy_category_current(&s), HY_CATEGORY_UNKNOWN);
	hy_category_mix(&s, &mix);
	CU_ASSERT_EQUAL(mix.requests, 0);
	CU_ASSERT_EQUAL(mix.mean_size, 0);
	CU_ASSERT_EQUAL(feed(&s, &rc, HY_CATEGORY_DEFAULT_MIN_REQUESTS - 1), HY_CATEGORY_UNKNOWN);
	CU_ASSERT_EQUAL(hy_category_current(&s), HY_CATEGORY_UNKNOWN);
	CU_ASSERT_EQUAL(feed(&s, &rc, 1), HY_CATEGORY_RANDOM_CONSUMER);
}

/* A pure stream reaches its category exactly at the minimum, not before,
 * and keeps it over several windows. */
static void check_pure(const struct stream *st, enum hy_category want)
{
	struct hy_category_state s;

	hy_category_init(&s, NULL);
	CU_ASSERT_EQUAL(feed(&s, st, HY_CATEGORY_DEFAULT_MIN_REQUESTS - 1), HY_CATEGORY_UNKNOWN);
	CU_ASSERT_EQUAL(feed(&s, st, 1), want);
	CU_ASSERT_EQUAL(feed(&s, st, 4 * HY_CATEGORY_DEFAULT_WINDOW), want);
}

/* Interleaved streams: @a for @na requests, then @b for @nb, repeated. */
static enum hy_category feed_mix(struct hy_category_state *s, const struct stream *a, unsigned na,
				 const struct stream *b, unsigned nb, unsigned rounds)
{
	for (unsigned r = 0; r < rounds; r++) {
		feed(s, a, na);
		feed(s, b, nb);
	}
	return hy_category_current(s);
}

static void test_category_each(void)
{
	struct hy_category_state s;
	/* random consumer: random 8 KiB reads of a big file (a lookup) */
	struct stream rc = {HY_CLASS_RANDOM, false, 8 * KIB, GIB};
	/* archival consumer: 128 KiB sequential reads of big files (tar c) */
	struct stream ac = {HY_CLASS_SEQUENTIAL, false, 128 * KIB, 100 * MIB};
	/* large file generator: 1 MiB sequential writes (dd bs=1M) */
	struct stream lfg = {HY_CLASS_SEQUENTIAL, true, 1024 * KIB, 2 * GIB};
	/* producer/consumers, mixed in both directions */
	struct stream rr = {HY_CLASS_RANDOM, false, 8 * KIB, GIB};
	struct stream ow = {HY_CLASS_OVERLAPPED, true, 8 * KIB, GIB};
	struct stream sr = {HY_CLASS_SEQUENTIAL, false, 4 * KIB, 20 * KIB};
	struct stream sw = {HY_CLASS_SEQUENTIAL, true, 4 * KIB, 60 * KIB};
	struct hy_category_state g;
	uint64_t size = 0;
	unsigned i;

	check_pure(&rc, HY_CATEGORY_RANDOM_CONSUMER);
	check_pure(&ac, HY_CATEGORY_ARCHIVAL_CONSUMER);
	check_pure(&lfg, HY_CATEGORY_LARGE_FILE_GENERATOR);

	/* database: 60% random reads, 40% overlapped page writes */
	hy_category_init(&s, NULL);
	CU_ASSERT_EQUAL(feed_mix(&s, &rr, 3, &ow, 2, 6), HY_CATEGORY_UNKNOWN); /* 30 < 32 */
	CU_ASSERT_EQUAL(feed_mix(&s, &rr, 3, &ow, 2, 1), HY_CATEGORY_RANDOM_PRODUCER_CONSUMER);
	CU_ASSERT_EQUAL(feed_mix(&s, &rr, 3, &ow, 2, 200), HY_CATEGORY_RANDOM_PRODUCER_CONSUMER);

	/* compiler: reads small sources, writes small objects, sequentially */
	hy_category_init(&s, NULL);
	CU_ASSERT_EQUAL(feed_mix(&s, &sr, 5, &sw, 3, 3), HY_CATEGORY_UNKNOWN); /* 24 */
	CU_ASSERT_EQUAL(feed(&s, &sr, 7), HY_CATEGORY_UNKNOWN);		       /* 31 */
	CU_ASSERT_EQUAL(feed(&s, &sr, 1), HY_CATEGORY_SEQUENTIAL_PRODUCER_CONSUMER);
	CU_ASSERT_EQUAL(feed_mix(&s, &sr, 5, &sw, 3, 200),
			HY_CATEGORY_SEQUENTIAL_PRODUCER_CONSUMER);

	/* a file that grows from nothing: 128 KiB writes, size after each
	 * write; its first writes are on a small file (under 1 MiB) */
	hy_category_init(&g, NULL);
	for (i = 0; i < 2000; i++) {
		size += 128 * KIB;
		hy_category_observe(&g, i ? HY_CLASS_SEQUENTIAL : HY_CLASS_RANDOM, true, 128 * KIB,
				    size);
	}
	CU_ASSERT_EQUAL(hy_category_current(&g), HY_CATEGORY_LARGE_FILE_GENERATOR);

	/* small sequential writes of small files are no generator */
	hy_category_init(&g, NULL);
	CU_ASSERT_EQUAL(feed(&g, &sw, 1000), HY_CATEGORY_SEQUENTIAL_PRODUCER_CONSUMER);
}

/*
 * Random consumer (8 KiB random reads) for 1000 requests, then a large
 * file generator (128 KiB sequential writes to a big file). With w writes
 * in the 256-request window: READS falls (below 65%) at w = 9, BIG turns
 * at 14, SEQ at 16, WRITES (80%) at 52. The raw verdict is random
 * producer/consumer for w = 9..15 and sequential producer/consumer for
 * 16..51, both runs shorter than the hold (64), so neither is adopted;
 * from w = 52 it is large file generator, adopted on the 64th such
 * verdict: the 52 + 63 = 115th write.
 */
static void test_category_phase_change(void)
{
	struct hy_category_state s;
	struct stream rc = {HY_CLASS_RANDOM, false, 8 * KIB, GIB};
	struct stream lfg = {HY_CLASS_SEQUENTIAL, true, 128 * KIB, GIB};
	unsigned i, switched = 0;

	hy_category_init(&s, NULL);
	CU_ASSERT_EQUAL(feed(&s, &rc, 1000), HY_CATEGORY_RANDOM_CONSUMER);
	for (i = 1; i <= 1000; i++) {
		enum hy_category c = feed(&s, &lfg, 1);

		if (c != HY_CATEGORY_RANDOM_CONSUMER) {
			CU_ASSERT_EQUAL(c, HY_CATEGORY_LARGE_FILE_GENERATOR);
			if (!switched)
				switched = i;
		} else {
			CU_ASSERT_EQUAL(switched, 0); /* never back */
		}
	}
	CU_ASSERT(switched > HY_CATEGORY_DEFAULT_HOLD);
	CU_ASSERT_EQUAL(switched, 52 + HY_CATEGORY_DEFAULT_HOLD - 1);

	/* a shorter hold (still above the 36-long intermediate run) switches
	 * sooner, by the difference */
	{
		struct hy_category_config cfg;

		hy_category_config_init(&cfg);
		cfg.hold = 40;
		hy_category_init(&s, &cfg);
		feed(&s, &rc, 1000);
		CU_ASSERT_EQUAL(feed(&s, &lfg, 52 + 38), HY_CATEGORY_RANDOM_CONSUMER);
		CU_ASSERT_EQUAL(feed(&s, &lfg, 1), HY_CATEGORY_LARGE_FILE_GENERATOR);
	}
}

/* Counts changes of the category in force over @n requests that alternate,
 * in bursts of 1..@burst requests (seeded), between @a and @b. */
static unsigned count_flaps(const struct stream *a, const struct stream *b, unsigned burst,
			    unsigned n, uint32_t seed, enum hy_category *last)
{
	struct hy_category_state s;
	enum hy_category prev = HY_CATEGORY_UNKNOWN;
	unsigned changes = 0, i = 0, which = 0;

	hy_category_init(&s, NULL);
	while (i < n) {
		unsigned len = 1 + rnd(&seed) % burst;
		const struct stream *st = which ? b : a;

		for (unsigned j = 0; j < len && i < n; j++, i++) {
			enum hy_category c = hy_category_observe(&s, st->cls, st->write, st->length,
								 st->file_size);

			if (c != prev)
				changes++;
			prev = c;
		}
		which ^= 1;
	}
	*last = prev;
	return changes;
}

static void test_category_no_flap(void)
{
	/* 50/50 sequential and random small reads: SEQ sits on its 50%
	 * threshold, the raw verdict between random consumer and sequential
	 * producer/consumer */
	struct stream seq = {HY_CLASS_SEQUENTIAL, false, 4 * KIB, 20 * KIB};
	struct stream ran = {HY_CLASS_RANDOM, false, 4 * KIB, 20 * KIB};
	/* random reads with writes at 20% of the bytes: READS on its 80% */
	struct stream rd = {HY_CLASS_RANDOM, false, 8 * KIB, GIB};
	struct stream wr = {HY_CLASS_RANDOM, true, 8 * KIB, GIB};
	enum hy_category last;
	unsigned changes;
	uint32_t seed;

	for (seed = 1; seed <= 5; seed++) {
		changes = count_flaps(&seq, &ran, 8, 10000, seed * 2654435761u, &last);
		CU_ASSERT(changes <= 2);
		if (changes > 2)
			printf("\n  seq/random seed %u: %u changes\n", seed, changes);
	}

	/* reads in bursts of 1..8, a write after each burst: 1 in 5.5 */
	for (seed = 1; seed <= 5; seed++) {
		struct hy_category_state s;
		enum hy_category prev = HY_CATEGORY_UNKNOWN;
		uint32_t x = seed * 2654435761u;
		unsigned i = 0;

		changes = 0;
		hy_category_init(&s, NULL);
		while (i < 10000) {
			unsigned len = 1 + rnd(&x) % 8;

			for (unsigned j = 0; j <= len && i < 10000; j++, i++) {
				const struct stream *st = j < len ? &rd : &wr;
				enum hy_category c = hy_category_observe(&s, st->cls, st->write,
									 st->length, st->file_size);

				if (c != prev)
					changes++;
				prev = c;
			}
		}
		CU_ASSERT(changes <= 2);
		if (changes > 2)
			printf("\n  read/write seed %u: %u changes\n", seed, changes);
	}
}

static void test_category_mix(void)
{
	struct hy_category_state s;
	struct hy_category_mix mix;
	struct stream a = {HY_CLASS_SEQUENTIAL, false, 4 * KIB, 2 * MIB};
	struct stream b = {HY_CLASS_STRIDED, true, 12 * KIB, 4 * KIB};
	struct hy_category_config cfg;

	hy_category_config_init(&cfg);
	cfg.window = 100;
	hy_category_init(&s, &cfg);
	feed(&s, &b, 500); /* all of these leave the window */
	feed_mix(&s, &a, 3, &b, 1, 25);
	hy_category_mix(&s, &mix);
	CU_ASSERT_EQUAL(mix.requests, 100);
	/* 75 reads of 4 KiB and 25 writes of 12 KiB: half the bytes each */
	CU_ASSERT_DOUBLE_EQUAL(mix.class_share[HY_CLASS_SEQUENTIAL], 0.5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(mix.class_share[HY_CLASS_STRIDED], 0.5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(mix.class_share[HY_CLASS_RANDOM], 0.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(mix.write_share, 0.5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(mix.large_file_share, 0.5, 1e-9);
	CU_ASSERT_EQUAL(mix.mean_size, 6 * KIB);

	/* out-of-range values are clamped; a zero length counts as 1 byte */
	cfg.window = 100000;
	cfg.min_requests = 0;
	cfg.hold = 0;
	hy_category_init(&s, &cfg);
	CU_ASSERT_EQUAL(hy_category_observe(&s, HY_CLASS_RANDOM, false, 0, 0),
			HY_CATEGORY_RANDOM_CONSUMER);
	hy_category_mix(&s, &mix);
	CU_ASSERT_EQUAL(mix.requests, 1);
	CU_ASSERT_EQUAL(mix.mean_size, 1);
	feed(&s, &a, 1000);
	hy_category_mix(&s, &mix);
	CU_ASSERT_EQUAL(mix.requests, HY_CATEGORY_WINDOW_MAX);
}

int hy_test_add_category(void)
{
	CU_pSuite s = CU_add_suite("category", NULL, NULL);

	if (!s || !CU_add_test(s, "names", test_category_names) ||
	    !CU_add_test(s, "unknown below the minimum", test_category_unknown_below_minimum) ||
	    !CU_add_test(s, "each category from its stream", test_category_each) ||
	    !CU_add_test(s, "phase change after the hold", test_category_phase_change) ||
	    !CU_add_test(s, "no flapping on a threshold", test_category_no_flap) ||
	    !CU_add_test(s, "the window's mix, clamped config", test_category_mix))
		return -1;
	return 0;
}
