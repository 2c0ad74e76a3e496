/* test_policy.c - the SSD store's replacement policies: each kind's order
 * of victims on hand-made sequences (worked out in the comments), two-step
 * eviction and busy lines within the window, LRU3's ageing, LARC's
 * admission and ghost size, FREQ's counts and ageing, refused arguments,
 * and a randomized run of every kind against a simple O(n) model. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/policy.h"
#include "suites.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static struct hy_policy *make(enum hy_policy_kind kind, uint32_t capacity, uint32_t window)
{
	struct hy_policy_config cfg;
	struct hy_policy *p = NULL;
	char why[256] = "";

	hy_policy_config_init(&cfg);
	cfg.window = window;
	CU_ASSERT_EQUAL(hy_policy_new(kind, capacity, &cfg, &p, why, sizeof(why)), 0);
	return p;
}

static void expect_consistent(const struct hy_policy *p)
{
	char why[256] = "";
	int err = hy_policy_check(p, why, sizeof(why));

	CU_ASSERT_EQUAL(err, 0);
	if (err)
		fprintf(stderr, "\n  %s\n", why);
}

static void expect_order(const struct hy_policy *p, enum hy_policy_queue q, const uint32_t *want,
			 size_t n)
{
	uint32_t got[64];
	size_t len = hy_policy_order(p, q, got, N_OF(got));

	CU_ASSERT_EQUAL(len, n);
	for (size_t i = 0; i < n && i < len; i++)
		CU_ASSERT_EQUAL(got[i], want[i]);
}

#define ORDER(p, q, ...)                                                                           \
	do {                                                                                       \
		const uint32_t want_[] = {__VA_ARGS__};                                            \
		expect_order(p, q, want_, N_OF(want_));                                            \
	} while (0)
#define EMPTY(p, q) expect_order(p, q, NULL, 0)

/* Takes victims with no predicates, removing each, and expects @want in
 * that order, then an empty policy. */
static void expect_victims(struct hy_policy *p, const uint32_t *want, size_t n)
{
	uint32_t line = HY_POLICY_NONE;

	for (size_t i = 0; i < n; i++) {
		CU_ASSERT_EQUAL_FATAL(hy_policy_victim(p, NULL, NULL, NULL, &line), 0);
		CU_ASSERT_EQUAL(line, want[i]);
		CU_ASSERT_EQUAL(hy_policy_remove(p, line), 0);
		expect_consistent(p);
	}
	CU_ASSERT_EQUAL(hy_policy_victim(p, NULL, NULL, NULL, &line), -ENOENT);
}

#define VICTIMS(p, ...)                                                                            \
	do {                                                                                       \
		const uint32_t want_[] = {__VA_ARGS__};                                            \
		expect_victims(p, want_, N_OF(want_));                                             \
	} while (0)

static void insert_range(struct hy_policy *p, uint32_t from, uint32_t to)
{
	for (uint32_t x = from; x < to; x++)
		CU_ASSERT_EQUAL(hy_policy_insert(p, x), 0);
}

/* ---- names, refused arguments, bounds ---- */

static void test_policy_names(void)
{
	enum hy_policy_kind kind = HY_POLICY_KINDS;
	char why[256] = "";

	for (unsigned k = 0; k < HY_POLICY_KINDS; k++) {
		const char *name = hy_policy_kind_name((enum hy_policy_kind)k);

		CU_ASSERT_PTR_NOT_NULL_FATAL(name);
		CU_ASSERT_EQUAL(hy_policy_kind_parse(name, &kind, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(kind, k);
	}
	CU_ASSERT_STRING_EQUAL(hy_policy_kind_name(HY_POLICY_LRU3), "lru3");
	CU_ASSERT_STRING_EQUAL(hy_policy_kind_name(HY_POLICY_LRU), "lru");
	CU_ASSERT_STRING_EQUAL(hy_policy_kind_name(HY_POLICY_LARC), "larc");
	CU_ASSERT_STRING_EQUAL(hy_policy_kind_name(HY_POLICY_FREQ), "freq");
	CU_ASSERT_PTR_NULL(hy_policy_kind_name(HY_POLICY_KINDS));
	kind = HY_POLICY_LARC;
	CU_ASSERT_EQUAL(hy_policy_kind_parse("lfu", &kind, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"lfu\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "lru3, lru, larc, freq"));
	CU_ASSERT_EQUAL(kind, HY_POLICY_LARC); /* untouched */
	CU_ASSERT_EQUAL(hy_policy_kind_parse("LRU", &kind, why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(hy_policy_kind_parse("", &kind, why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(hy_policy_kind_parse("lru3 ", &kind, NULL, 0), -EINVAL);
}

static void expect_refused(enum hy_policy_kind kind, uint32_t capacity, uint32_t window,
			   const char *word)
{
	struct hy_policy_config cfg;
	struct hy_policy *p = (struct hy_policy *)&cfg; /* must be reset to NULL */
	char why[256] = "";

	hy_policy_config_init(&cfg);
	cfg.window = window;
	CU_ASSERT_EQUAL(hy_policy_new(kind, capacity, &cfg, &p, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, word));
	CU_ASSERT_EQUAL(strncmp(why, "policy: ", 8), 0);
}

static void test_policy_refused(void)
{
	struct hy_policy *p = NULL;
	struct hy_policy_config cfg;
	struct hy_policy_stats st;
	const int minus_one = -1;

	expect_refused(HY_POLICY_KINDS, 8, 64, "kind 4");
	expect_refused((enum hy_policy_kind)minus_one, 8, 64, "kind -1");
	expect_refused(HY_POLICY_LRU, 0, 64, "capacity 0");
	expect_refused(HY_POLICY_LRU3, HY_POLICY_MAX_LINES + 1, 64, "over the limit");
	expect_refused(HY_POLICY_LARC, 1, 64, "larc needs");
	expect_refused(HY_POLICY_FREQ, 8, 0, "window 0");
	expect_refused(HY_POLICY_LRU, 8, HY_POLICY_MAX_WINDOW + 1, "window 65537");

	/* Defaults with a NULL config; 1 line is enough except for LARC. */
	CU_ASSERT_EQUAL_FATAL(hy_policy_new(HY_POLICY_LRU3, 1, NULL, &p, NULL, 0), 0);
	hy_policy_get_stats(p, &st);
	CU_ASSERT_EQUAL(st.window, HY_POLICY_DEFAULT_WINDOW);
	CU_ASSERT_EQUAL(st.capacity, 1);
	hy_policy_free(p);
	hy_policy_config_init(&cfg);
	CU_ASSERT_EQUAL(cfg.window, HY_POLICY_DEFAULT_WINDOW);
	cfg.window = HY_POLICY_MAX_WINDOW;
	CU_ASSERT_EQUAL_FATAL(hy_policy_new(HY_POLICY_LARC, 2, &cfg, &p, NULL, 0), 0);
	hy_policy_free(p);
	hy_policy_free(NULL);
}

static void test_policy_bounds(void)
{
	for (unsigned k = 0; k < HY_POLICY_KINDS; k++) {
		struct hy_policy *p = make((enum hy_policy_kind)k, 4, 64);
		struct hy_policy_stats st;
		uint32_t line = 77;

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		CU_ASSERT_EQUAL(hy_policy_victim(p, NULL, NULL, NULL, &line), -ENOENT);
		CU_ASSERT_EQUAL(line, 77);
		CU_ASSERT_EQUAL(hy_policy_insert(p, 4), -ERANGE);
		CU_ASSERT_EQUAL(hy_policy_insert(p, HY_POLICY_NONE), -ERANGE);
		CU_ASSERT_EQUAL(hy_policy_hit(p, 4), -ERANGE);
		CU_ASSERT_EQUAL(hy_policy_remove(p, 4), -ERANGE);
		CU_ASSERT_EQUAL(hy_policy_queue_of(p, 4), -ERANGE);
		CU_ASSERT_EQUAL(hy_policy_hit(p, 3), -ENOENT);
		CU_ASSERT_EQUAL(hy_policy_remove(p, 3), -ENOENT);
		CU_ASSERT_EQUAL(hy_policy_queue_of(p, 3), -ENOENT);
		CU_ASSERT_EQUAL(hy_policy_insert_at(p, 3, HY_POLICY_QUEUES), -EINVAL);
		CU_ASSERT_EQUAL(hy_policy_insert(p, 3), 0);
		CU_ASSERT_EQUAL(hy_policy_insert(p, 3), -EEXIST);
		CU_ASSERT_EQUAL(hy_policy_insert_at(p, 3, HY_POLICY_HOT), -EEXIST);
		CU_ASSERT_EQUAL(hy_policy_queue_of(p, 3), HY_POLICY_COLD);
		insert_range(p, 0, 3);
		hy_policy_get_stats(p, &st);
		CU_ASSERT_EQUAL(st.in_use, 4);
		CU_ASSERT_EQUAL(st.inserts, 4);
		CU_ASSERT_EQUAL(st.queue_len[HY_POLICY_COLD], 4);
		CU_ASSERT_EQUAL(hy_policy_remove(p, 3), 0);
		CU_ASSERT_EQUAL(hy_policy_remove(p, 3), -ENOENT);
		CU_ASSERT_EQUAL(hy_policy_insert(p, 3), 0); /* a removed line is free again */
		CU_ASSERT_EQUAL(hy_policy_order(p, HY_POLICY_QUEUES, &line, 1), 0);
		expect_consistent(p);
		hy_policy_free(p);
	}
}

/* ---- each kind's order of victims ---- */

static void test_policy_lru_order(void)
{
	struct hy_policy *p = make(HY_POLICY_LRU, 8, 64);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* insert 0..5: [0 1 2 3 4 5] (LRU first); hit 2: [0 1 3 4 5 2];
	 * hit 0: [1 3 4 5 2 0]; age is a no-op; hit 4: [1 3 5 2 0 4]. */
	insert_range(p, 0, 6);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 2), 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 0), 0);
	ORDER(p, HY_POLICY_COLD, 1, 3, 4, 5, 2, 0);
	hy_policy_age(p);
	ORDER(p, HY_POLICY_COLD, 1, 3, 4, 5, 2, 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 4), 0);
	EMPTY(p, HY_POLICY_WARM);
	EMPTY(p, HY_POLICY_HOT);
	/* insert_at's queue means nothing to plain LRU: 6 goes to the MRU end. */
	CU_ASSERT_EQUAL(hy_policy_insert_at(p, 6, HY_POLICY_HOT), 0);
	CU_ASSERT_EQUAL(hy_policy_queue_of(p, 6), HY_POLICY_COLD);
	VICTIMS(p, 1, 3, 5, 2, 0, 4, 6);
	hy_policy_free(p);
}

static void test_policy_lru3_order(void)
{
	struct hy_policy *p = make(HY_POLICY_LRU3, 8, 64);
	struct hy_policy_stats st;
	uint32_t line;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* insert 0..5: cold [0 1 2 3 4 5]. hit 1 twice: cold -> warm -> hot.
	 * hit 3, hit 4: warm [3 4]. So cold [0 2 5], warm [3 4], hot [1]. */
	insert_range(p, 0, 6);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 1), 0);
	CU_ASSERT_EQUAL(hy_policy_queue_of(p, 1), HY_POLICY_WARM);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 1), 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 3), 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 4), 0);
	ORDER(p, HY_POLICY_COLD, 0, 2, 5);
	ORDER(p, HY_POLICY_WARM, 3, 4);
	ORDER(p, HY_POLICY_HOT, 1);
	/* A hit in hot stays in hot. */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 1), 0);
	ORDER(p, HY_POLICY_HOT, 1);
	/* The victim comes from cold's LRU end and is not removed. */
	CU_ASSERT_EQUAL(hy_policy_victim(p, NULL, NULL, NULL, &line), 0);
	CU_ASSERT_EQUAL(line, 0);
	ORDER(p, HY_POLICY_COLD, 0, 2, 5);

	/* age #1 starts the first period: every line was touched "since". */
	hy_policy_age(p);
	ORDER(p, HY_POLICY_COLD, 0, 2, 5);
	ORDER(p, HY_POLICY_WARM, 3, 4);
	ORDER(p, HY_POLICY_HOT, 1);
	/* hit 4: warm -> hot [1 4]; hit 5: cold -> warm [3 5]; cold [0 2]. */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 4), 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 5), 0);
	/* age #2: warm's idle 3 goes to cold's MRU end: cold [0 2 3]; hot's
	 * idle 1 goes to warm's MRU end: warm [5 1]; hot [4]. */
	hy_policy_age(p);
	ORDER(p, HY_POLICY_COLD, 0, 2, 3);
	ORDER(p, HY_POLICY_WARM, 5, 1);
	ORDER(p, HY_POLICY_HOT, 4);
	/* age #3 with no touches: warm [5 1] -> cold [0 2 3 5 1]; hot [4] ->
	 * warm [4] (not straight on to cold: one queue per age). */
	hy_policy_age(p);
	ORDER(p, HY_POLICY_COLD, 0, 2, 3, 5, 1);
	ORDER(p, HY_POLICY_WARM, 4);
	EMPTY(p, HY_POLICY_HOT);
	hy_policy_get_stats(p, &st);
	CU_ASSERT_EQUAL(st.promotions, 6); /* 1 twice, 3, 4 twice, 5 */
	CU_ASSERT_EQUAL(st.demotions, 5);  /* 3, 1; 5, 1, 4 */
	CU_ASSERT_EQUAL(st.ages, 3);
	/* Victims: cold in order, then 4 is demoted into the empty cold. */
	VICTIMS(p, 0, 2, 3, 5, 1, 4);
	hy_policy_free(p);
}

static void test_policy_lru3_refill(void)
{
	struct hy_policy *p = make(HY_POLICY_LRU3, 8, 2);
	struct hy_policy_stats st;
	uint32_t line;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* hot [0 1 2] (hit twice each), warm empty, cold empty: the victim
	 * search demotes window = 2 lines from hot's LRU end into cold. */
	insert_range(p, 0, 3);
	for (uint32_t x = 0; x < 3; x++) {
		CU_ASSERT_EQUAL(hy_policy_hit(p, x), 0);
		CU_ASSERT_EQUAL(hy_policy_hit(p, x), 0);
	}
	ORDER(p, HY_POLICY_HOT, 0, 1, 2);
	CU_ASSERT_EQUAL(hy_policy_victim(p, NULL, NULL, NULL, &line), 0);
	CU_ASSERT_EQUAL(line, 0);
	ORDER(p, HY_POLICY_COLD, 0, 1);
	ORDER(p, HY_POLICY_HOT, 2);
	/* With lines in warm, warm is drained first: insert 3 into warm. */
	CU_ASSERT_EQUAL(hy_policy_remove(p, 0), 0);
	CU_ASSERT_EQUAL(hy_policy_remove(p, 1), 0);
	CU_ASSERT_EQUAL(hy_policy_insert_at(p, 3, HY_POLICY_WARM), 0);
	CU_ASSERT_EQUAL(hy_policy_insert_at(p, 4, HY_POLICY_HOT), 0);
	ORDER(p, HY_POLICY_HOT, 2, 4);
	CU_ASSERT_EQUAL(hy_policy_victim(p, NULL, NULL, NULL, &line), 0);
	CU_ASSERT_EQUAL(line, 3);
	ORDER(p, HY_POLICY_COLD, 3);
	EMPTY(p, HY_POLICY_WARM);
	hy_policy_get_stats(p, &st);
	CU_ASSERT_EQUAL(st.demotions, 3);
	expect_consistent(p);
	VICTIMS(p, 3, 2, 4);
	hy_policy_free(p);
}

static void test_policy_lru3_ageing(void)
{
	struct hy_policy *p = make(HY_POLICY_LRU3, 16, 64);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* warm [0 1 2 3], hot [4 5 6 7]. */
	insert_range(p, 0, 8);
	for (uint32_t x = 0; x < 8; x++) {
		CU_ASSERT_EQUAL(hy_policy_hit(p, x), 0);
		if (x >= 4)
			CU_ASSERT_EQUAL(hy_policy_hit(p, x), 0);
	}
	hy_policy_age(p); /* period 1 starts */
	/* Touched in period 1: 1 (warm -> hot), 5 (stays hot, to its MRU end).
	 * Removed in period 1: 2 (idle, warm) and 6 (idle, hot): the idle
	 * lines around them must still be found. */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 1), 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 5), 0);
	CU_ASSERT_EQUAL(hy_policy_remove(p, 2), 0);
	CU_ASSERT_EQUAL(hy_policy_remove(p, 6), 0);
	/* Removing the last idle line of a queue (3 in warm) too. */
	CU_ASSERT_EQUAL(hy_policy_remove(p, 3), 0);
	CU_ASSERT_EQUAL(hy_policy_insert(p, 3), 0); /* cold, touched */
	expect_consistent(p);
	ORDER(p, HY_POLICY_WARM, 0);
	ORDER(p, HY_POLICY_HOT, 4, 7, 1, 5);
	/* age: idle 0 (warm) -> cold; idle 4, 7 (hot) -> warm; 1, 5 stay. */
	hy_policy_age(p);
	ORDER(p, HY_POLICY_COLD, 3, 0);
	ORDER(p, HY_POLICY_WARM, 4, 7);
	ORDER(p, HY_POLICY_HOT, 1, 5);
	/* Touch 7 only (warm -> hot); age: 4 -> cold; 1, 5 -> warm. */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 7), 0);
	hy_policy_age(p);
	ORDER(p, HY_POLICY_COLD, 3, 0, 4);
	ORDER(p, HY_POLICY_WARM, 1, 5);
	ORDER(p, HY_POLICY_HOT, 7);
	/* Lines demoted by age are idle in their new queue: the next age
	 * moves them on, and a hit in between saves one (5 -> hot). */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 5), 0);
	hy_policy_age(p);
	ORDER(p, HY_POLICY_COLD, 3, 0, 4, 1);
	ORDER(p, HY_POLICY_WARM, 7);
	ORDER(p, HY_POLICY_HOT, 5);
	expect_consistent(p);
	hy_policy_free(p);
}

static void test_policy_larc_order(void)
{
	struct hy_policy *p = make(HY_POLICY_LARC, 8, 64);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* LARC's cache queue is an LRU: insert 0..4, hit 1, hit 0:
	 * [2 3 4 1 0]; age is a no-op. */
	insert_range(p, 0, 5);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 1), 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 0), 0);
	hy_policy_age(p);
	VICTIMS(p, 2, 3, 4, 1, 0);
	hy_policy_free(p);
}

static void test_policy_freq_order(void)
{
	struct hy_policy *p = make(HY_POLICY_FREQ, 8, 64);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* insert 0..5, all count 1. hit 3 twice (3), hit 1 (2), hit 4 (2),
	 * hit 0 three times (4). Fewest accesses first, ties by recency
	 * (least recently used first): count 1: 2, 5; count 2: 1, 4;
	 * count 3: 3; count 4: 0. */
	insert_range(p, 0, 6);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 3), 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 3), 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 1), 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 4), 0);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(hy_policy_hit(p, 0), 0);
	ORDER(p, HY_POLICY_COLD, 2, 5, 1, 4, 3, 0);
	/* hit 2 (count 2): the MRU end of count 2: [5 1 4 2 3 0]. */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 2), 0);
	ORDER(p, HY_POLICY_COLD, 5, 1, 4, 2, 3, 0);
	expect_consistent(p);
	/* age halves: 5:1->1 (never below 1), 1:2->1, 4:2->1, 2:2->1,
	 * 3:3->1, 0:4->2. Merged counts keep their order: [5 1 4 2 3 | 0]. */
	hy_policy_age(p);
	ORDER(p, HY_POLICY_COLD, 5, 1, 4, 2, 3, 0);
	expect_consistent(p);
	/* hit 5 (count 2) joins 0's count at its MRU end: [1 4 2 3 0 5];
	 * had 0 kept count 4, 5 would sit before it. */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 5), 0);
	ORDER(p, HY_POLICY_COLD, 1, 4, 2, 3, 0, 5);
	/* remove 1, insert 1: count 1 again, MRU of count 1: [4 2 3 1 0 5]. */
	CU_ASSERT_EQUAL(hy_policy_remove(p, 1), 0);
	CU_ASSERT_EQUAL(hy_policy_insert(p, 1), 0);
	ORDER(p, HY_POLICY_COLD, 4, 2, 3, 1, 0, 5);
	/* hit 3 (count 1 -> 2) goes after 5: [4 2 1 0 5 3]. A new line 7
	 * goes to the MRU end of count 1: [4 2 1 7 0 5 3]. */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 3), 0);
	CU_ASSERT_EQUAL(hy_policy_insert(p, 7), 0);
	ORDER(p, HY_POLICY_COLD, 4, 2, 1, 7, 0, 5, 3);
	VICTIMS(p, 4, 2, 1, 7, 0, 5, 3);
	/* Without a count-1 group, a new line goes first: 6 at count 2,
	 * then 7 inserted (count 1) precedes it. */
	CU_ASSERT_EQUAL(hy_policy_insert(p, 6), 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 6), 0);
	CU_ASSERT_EQUAL(hy_policy_insert(p, 7), 0);
	ORDER(p, HY_POLICY_COLD, 7, 6);
	/* The last line of count 1 leaving by a hit makes it count 2, in
	 * 6's group at the MRU end: [6 7]. */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 7), 0);
	ORDER(p, HY_POLICY_COLD, 6, 7);
	expect_consistent(p);
	hy_policy_free(p);
}

static void test_policy_freq_saturation(void)
{
	struct hy_policy *p = make(HY_POLICY_FREQ, 4, 64);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* 0 hit 70,000 times saturates at HY_POLICY_FREQ_MAX; 1 hit
	 * HY_POLICY_FREQ_MAX - 1 times reaches the same count later, so it is
	 * the more recent of the two: [2 0 1]. */
	insert_range(p, 0, 3);
	for (int i = 0; i < 70000; i++)
		CU_ASSERT_EQUAL_FATAL(hy_policy_hit(p, 0), 0);
	for (int i = 0; i < HY_POLICY_FREQ_MAX - 1; i++)
		CU_ASSERT_EQUAL_FATAL(hy_policy_hit(p, 1), 0);
	ORDER(p, HY_POLICY_COLD, 2, 0, 1);
	/* A saturated line still moves to the MRU end of its count. */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 0), 0);
	ORDER(p, HY_POLICY_COLD, 2, 1, 0);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 0), 0); /* already there */
	ORDER(p, HY_POLICY_COLD, 2, 1, 0);
	expect_consistent(p);
	/* age: 32767 both; 2 hit 32767 times: 1 + 32767 = 32768 > 32767, so
	 * 2 leaves the LRU end: [1 0 2]. */
	hy_policy_age(p);
	for (int i = 0; i < 32767; i++)
		CU_ASSERT_EQUAL_FATAL(hy_policy_hit(p, 2), 0);
	ORDER(p, HY_POLICY_COLD, 1, 0, 2);
	expect_consistent(p);
	hy_policy_free(p);
}

/* ---- two-step eviction and busy lines ---- */

struct preds {
	uint64_t first; /* bit x: line x is a first choice */
	uint64_t busy;	/* bit x: line x cannot be evicted now */
	unsigned calls; /* predicate calls */
};

static bool is_first(uint32_t line, void *arg)
{
	struct preds *pr = arg;

	pr->calls++;
	return pr->first >> line & 1;
}

static bool is_evictable(uint32_t line, void *arg)
{
	struct preds *pr = arg;

	pr->calls++;
	return !(pr->busy >> line & 1);
}

static int victim_of(struct hy_policy *p, struct preds *pr, uint64_t first, uint64_t busy,
		     uint32_t *line)
{
	pr->first = first;
	pr->busy = busy;
	pr->calls = 0;
	*line = HY_POLICY_NONE;
	return hy_policy_victim(p, is_first, is_evictable, pr, line);
}

#define BIT(x) ((uint64_t)1 << (x))

static void test_policy_two_step(void)
{
	/* Every kind orders 0..9, inserted in order and never hit, as
	 * [0 1 ... 9] in its eviction queue. Window K = 4: lines 0..3. */
	for (unsigned k = 0; k < HY_POLICY_KINDS; k++) {
		struct hy_policy *p = make((enum hy_policy_kind)k, 16, 4);
		struct hy_policy_stats st;
		struct preds pr;
		uint32_t line;

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		insert_range(p, 0, 10);
		/* A first choice in the window wins over the LRU line. */
		CU_ASSERT_EQUAL(victim_of(p, &pr, BIT(2) | BIT(6), 0, &line), 0);
		CU_ASSERT_EQUAL(line, 2);
		/* The first first-choice line in LRU order. */
		CU_ASSERT_EQUAL(victim_of(p, &pr, BIT(3) | BIT(1), 0, &line), 0);
		CU_ASSERT_EQUAL(line, 1);
		/* One outside the window is not seen: the LRU line. */
		CU_ASSERT_EQUAL(victim_of(p, &pr, BIT(6), 0, &line), 0);
		CU_ASSERT_EQUAL(line, 0);
		CU_ASSERT(pr.calls <= 2 * 4);
		/* No first choice at all: the LRU line. */
		CU_ASSERT_EQUAL(victim_of(p, &pr, 0, 0, &line), 0);
		CU_ASSERT_EQUAL(line, 0);
		/* Busy lines are skipped, first choice or not. */
		CU_ASSERT_EQUAL(victim_of(p, &pr, BIT(1), BIT(0) | BIT(1), &line), 0);
		CU_ASSERT_EQUAL(line, 2);
		CU_ASSERT_EQUAL(victim_of(p, &pr, BIT(1) | BIT(3), BIT(1), &line), 0);
		CU_ASSERT_EQUAL(line, 3);
		/* The whole window busy: -EAGAIN, though 4 is free to go. */
		CU_ASSERT_EQUAL(victim_of(p, &pr, BIT(4), 0xf, &line), -EAGAIN);
		CU_ASSERT_EQUAL(line, HY_POLICY_NONE);
		CU_ASSERT_EQUAL(pr.calls, 4); /* evictable only, once per line */
		/* Busy lines only with NULL first_choice: the LRU evictable. */
		pr.busy = BIT(0);
		CU_ASSERT_EQUAL(hy_policy_victim(p, NULL, is_evictable, &pr, &line), 0);
		CU_ASSERT_EQUAL(line, 1);
		/* First choice only with NULL evictable. */
		pr.first = BIT(3);
		CU_ASSERT_EQUAL(hy_policy_victim(p, is_first, NULL, &pr, &line), 0);
		CU_ASSERT_EQUAL(line, 3);
		/* The search does not remove anything. */
		hy_policy_get_stats(p, &st);
		CU_ASSERT_EQUAL(st.in_use, 10);
		CU_ASSERT_EQUAL(st.victims_first, 4);
		CU_ASSERT_EQUAL(st.victims_lru, 4);
		CU_ASSERT_EQUAL(st.victims_again, 1);
		CU_ASSERT_EQUAL(st.skipped, 2 + 1 + 4 + 1);
		/* Removing 0..3 moves the window to 4..7. */
		for (uint32_t x = 0; x < 4; x++)
			CU_ASSERT_EQUAL(hy_policy_remove(p, x), 0);
		CU_ASSERT_EQUAL(victim_of(p, &pr, BIT(7) | BIT(8), BIT(4), &line), 0);
		CU_ASSERT_EQUAL(line, 7);
		expect_consistent(p);
		hy_policy_free(p);
	}
}

/* ---- LARC ---- */

static double larc_size(const struct hy_policy *p)
{
	struct hy_policy_stats st;

	hy_policy_get_stats(p, &st);
	return st.ghost_size;
}

static uint32_t larc_ghost_len(const struct hy_policy *p)
{
	struct hy_policy_stats st;

	hy_policy_get_stats(p, &st);
	return st.ghost_len;
}

static void test_policy_larc_admission(void)
{
	struct hy_policy *p = make(HY_POLICY_LARC, 10, 64);
	struct hy_policy_stats st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	/* C = 10: Cr starts at 1 and lives in [1, 9]. First miss of 100:
	 * Cr = min(9, 1 + 10/1) = 9; 100 goes to the ghost queue, refused. */
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), 1.0, 1e-12);
	CU_ASSERT_FALSE(hy_policy_admit(p, 100));
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), 9.0, 1e-12);
	CU_ASSERT_EQUAL(larc_ghost_len(p), 1);
	/* Second miss of 100 within the window: admitted, leaves the ghost. */
	CU_ASSERT_TRUE(hy_policy_admit(p, 100));
	CU_ASSERT_EQUAL(larc_ghost_len(p), 0);
	/* ...so a third miss is a first miss again. */
	CU_ASSERT_FALSE(hy_policy_admit(p, 100));
	CU_ASSERT_TRUE(hy_policy_admit(p, 100));
	/* The window: 9 keys 1..9 fill Qr (|Qr| = 9 <= Cr = 9); a tenth, 10,
	 * pushes out the LRU key 1. So 1 is a first miss again (and pushes
	 * out 2), 2 is too (and pushes out 3), while 4 is still a second
	 * miss. */
	for (uint64_t key = 1; key <= 9; key++)
		CU_ASSERT_FALSE(hy_policy_admit(p, key));
	CU_ASSERT_EQUAL(larc_ghost_len(p), 9);
	CU_ASSERT_FALSE(hy_policy_admit(p, 10));
	CU_ASSERT_EQUAL(larc_ghost_len(p), 9);
	CU_ASSERT_FALSE(hy_policy_admit(p, 1));
	CU_ASSERT_FALSE(hy_policy_admit(p, 2));
	CU_ASSERT_TRUE(hy_policy_admit(p, 4));
	/* Keys are 64-bit: neighbours in the high bits are different keys. */
	CU_ASSERT_FALSE(hy_policy_admit(p, (uint64_t)1 << 48 | 5));
	CU_ASSERT_TRUE(hy_policy_admit(p, (uint64_t)1 << 48 | 5));
	hy_policy_get_stats(p, &st);
	CU_ASSERT_EQUAL(st.ghost_hits, 4);
	CU_ASSERT_EQUAL(st.admitted, 4);
	CU_ASSERT_EQUAL(st.refused, 15);
	expect_consistent(p);
	hy_policy_free(p);

	/* The other kinds admit every miss. */
	for (unsigned k = 0; k < HY_POLICY_KINDS; k++) {
		if (k == HY_POLICY_LARC)
			continue;
		p = make((enum hy_policy_kind)k, 10, 64);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		CU_ASSERT_TRUE(hy_policy_admit(p, 1));
		CU_ASSERT_TRUE(hy_policy_admit(p, 1));
		hy_policy_get_stats(p, &st);
		CU_ASSERT_EQUAL(st.ghost_len, 0);
		CU_ASSERT_EQUAL(st.admitted, 2);
		hy_policy_free(p);
	}
}

static void test_policy_larc_ghost_size(void)
{
	struct hy_policy *p = make(HY_POLICY_LARC, 100, 64);
	double cr;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(hy_policy_insert(p, 0), 0);
	/* C = 100, Cr in [10, 90], starts at 10. A hit at the floor stays
	 * there: max(10, 10 - 100/90) = 10. */
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), 10.0, 1e-12);
	CU_ASSERT_EQUAL(hy_policy_hit(p, 0), 0);
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), 10.0, 1e-12);
	/* Misses grow it by C/Cr: 10 + 10 = 20, + 5 = 25, + 4 = 29. */
	CU_ASSERT_FALSE(hy_policy_admit(p, 1000));
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), 20.0, 1e-12);
	CU_ASSERT_FALSE(hy_policy_admit(p, 1001));
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), 25.0, 1e-12);
	CU_ASSERT_FALSE(hy_policy_admit(p, 1002));
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), 29.0, 1e-12);
	/* A ghost hit is a miss too: 29 + 100/29. */
	CU_ASSERT_TRUE(hy_policy_admit(p, 1001));
	cr = 29.0 + 100.0 / 29.0;
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), cr, 1e-9);
	/* Hits shrink it by C/(C - Cr). */
	CU_ASSERT_EQUAL(hy_policy_hit(p, 0), 0);
	cr -= 100.0 / (100.0 - cr);
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), cr, 1e-9);
	hy_policy_free(p);

	/* Up to the ceiling: 100 distinct misses (keys 0..99). Cr grows by
	 * at least 100/90 a miss, so it reaches 90 well before 100 misses,
	 * and stays ahead of |Qr| (one key a miss) until then: Qr ends with
	 * the 90 most recent keys, 10..99. */
	p = make(HY_POLICY_LARC, 100, 64);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(hy_policy_insert(p, 0), 0);
	for (uint64_t key = 0; key < 100; key++)
		CU_ASSERT_FALSE(hy_policy_admit(p, key));
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), 90.0, 1e-12);
	CU_ASSERT_EQUAL(larc_ghost_len(p), 90);
	/* Four hits: 90 - 100/10 = 80, - 100/20 = 75, - 100/25 = 71,
	 * - 100/29 = 67.55...; Qr keeps its 90 keys until the next miss. */
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(hy_policy_hit(p, 0), 0);
	cr = 71.0 - 100.0 / 29.0;
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), cr, 1e-9);
	CU_ASSERT_EQUAL(larc_ghost_len(p), 90);
	expect_consistent(p); /* |Qr| may exceed Cr between misses */
	/* A miss of 1000: Cr = cr + 100/cr = 69.03...; Qr gets 1000 (91 keys)
	 * and drops LRU keys until |Qr| <= Cr: 69 keys, 32..99 and 1000.
	 * (The paper's pseudocode, read literally, drops one: 90.) */
	CU_ASSERT_FALSE(hy_policy_admit(p, 1000));
	cr += 100.0 / cr;
	CU_ASSERT_DOUBLE_EQUAL(larc_size(p), cr, 1e-9);
	CU_ASSERT_EQUAL(larc_ghost_len(p), 69);
	CU_ASSERT_TRUE(hy_policy_admit(p, 32)); /* the oldest kept */
	CU_ASSERT_EQUAL(larc_ghost_len(p), 68);
	CU_ASSERT_FALSE(hy_policy_admit(p, 31)); /* dropped */
	expect_consistent(p);
	hy_policy_free(p);
}

/* ---- memory ---- */

static void test_policy_memory(void)
{
	/* Bytes per line at 2^20 lines (see policy.h): 8 for LRU and LRU3
	 * (the queue in the prev link's top bits; 9 before issue 19), 10 +
	 * 256 KiB / 2^20 = 10.25 for FREQ, 8 + 16 x 0.9 + 4 x 2^21 / 2^20 =
	 * 30.4 for LARC (its ghost queue and hash). */
	static const double limit[HY_POLICY_KINDS] = {
		[HY_POLICY_LRU3] = 8.01,
		[HY_POLICY_LRU] = 8.01,
		[HY_POLICY_LARC] = 30.5,
		[HY_POLICY_FREQ] = 10.26,
	};
	const uint32_t lines = 1u << 20;

	for (unsigned k = 0; k < HY_POLICY_KINDS; k++) {
		struct hy_policy *p = make((enum hy_policy_kind)k, lines, 64);
		struct hy_policy_stats st;

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		hy_policy_get_stats(p, &st);
		CU_ASSERT(st.bytes >= (size_t)8 * lines);
		CU_ASSERT((double)st.bytes / lines <= limit[k]);
		if (k != HY_POLICY_LARC)
			CU_ASSERT((double)st.bytes / lines <= 16.0);
		hy_policy_free(p);
	}
}

/* ---- randomized, against an O(n) model ---- */

#define R_CAP	 48
#define R_WINDOW 6
#define R_OPS	 100000
#define R_KEYS	 (3 * R_CAP)

struct m_line {
	bool used;
	bool idle;
	unsigned q;
	uint32_t count;
	uint64_t stamp;
};

struct model {
	enum hy_policy_kind kind;
	struct m_line l[R_CAP];
	uint64_t seq;
	double cr, cr_min, cr_max;
	uint64_t ghost[R_CAP]; /* oldest first */
	size_t glen;
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static bool m_before(const struct model *m, uint32_t a, uint32_t b)
{
	if (m->kind == HY_POLICY_FREQ && m->l[a].count != m->l[b].count)
		return m->l[a].count < m->l[b].count;
	return m->l[a].stamp < m->l[b].stamp;
}

/* The lines of queue @q in eviction order (insertion sort, n <= 48). */
static size_t m_order(const struct model *m, unsigned q, uint32_t *out)
{
	size_t n = 0;

	for (uint32_t x = 0; x < R_CAP; x++) {
		size_t i;

		if (!m->l[x].used || m->l[x].q != q)
			continue;
		for (i = n; i > 0 && m_before(m, x, out[i - 1]); i--)
			out[i] = out[i - 1];
		out[i] = x;
		n++;
	}
	return n;
}

static void m_insert(struct model *m, uint32_t x, unsigned q)
{
	m->l[x].used = true;
	m->l[x].idle = false;
	m->l[x].q = m->kind == HY_POLICY_LRU3 ? q : HY_POLICY_COLD;
	m->l[x].count = 1;
	m->l[x].stamp = ++m->seq;
}

static void m_hit(struct model *m, uint32_t x)
{
	struct m_line *l = &m->l[x];

	if (m->kind == HY_POLICY_LRU3 && l->q < HY_POLICY_HOT)
		l->q++;
	if (m->kind == HY_POLICY_FREQ && l->count < HY_POLICY_FREQ_MAX)
		l->count++;
	if (m->kind == HY_POLICY_LARC) {
		double d = R_CAP / (R_CAP - m->cr);

		m->cr = m->cr - d > m->cr_min ? m->cr - d : m->cr_min;
	}
	l->idle = false;
	l->stamp = ++m->seq;
}

/* Moves up to @max lines of @from, LRU first (only the idle ones when
 * @idle_only), to the MRU end of @to; they keep their idle flag. */
static void m_move(struct model *m, unsigned from, unsigned to, size_t max, bool idle_only)
{
	uint32_t order[R_CAP];
	size_t n = m_order(m, from, order);

	for (size_t i = 0; i < n && i < max; i++) {
		if (idle_only && !m->l[order[i]].idle)
			continue;
		m->l[order[i]].q = to;
		m->l[order[i]].stamp = ++m->seq;
	}
}

static void m_age(struct model *m)
{
	if (m->kind == HY_POLICY_LRU3) {
		m_move(m, HY_POLICY_WARM, HY_POLICY_COLD, R_CAP, true);
		m_move(m, HY_POLICY_HOT, HY_POLICY_WARM, R_CAP, true);
		for (uint32_t x = 0; x < R_CAP; x++)
			m->l[x].idle = true;
	} else if (m->kind == HY_POLICY_FREQ) {
		uint32_t order[R_CAP];
		size_t n = m_order(m, HY_POLICY_COLD, order);

		for (size_t i = 0; i < n; i++) {
			struct m_line *l = &m->l[order[i]];

			l->count = l->count / 2 ? l->count / 2 : 1;
			l->stamp = ++m->seq; /* keep the order among merged counts */
		}
	}
}

static int m_victim(struct model *m, const struct preds *pr, bool use_first, bool use_busy,
		    uint32_t *line)
{
	uint32_t order[R_CAP];
	uint32_t fallback = HY_POLICY_NONE;
	size_t n = 0;
	bool any = false;

	for (uint32_t x = 0; x < R_CAP; x++)
		any |= m->l[x].used;
	if (!any)
		return -ENOENT;
	if (m->kind == HY_POLICY_LRU3 && m_order(m, HY_POLICY_COLD, order) == 0)
		m_move(m, m_order(m, HY_POLICY_WARM, order) ? HY_POLICY_WARM : HY_POLICY_HOT,
		       HY_POLICY_COLD, R_WINDOW, false);
	n = m_order(m, HY_POLICY_COLD, order);
	for (size_t i = 0; i < n && i < R_WINDOW; i++) {
		uint32_t x = order[i];

		if (use_busy && (pr->busy >> x & 1))
			continue;
		if (use_first && (pr->first >> x & 1)) {
			*line = x;
			return 0;
		}
		if (fallback == HY_POLICY_NONE)
			fallback = x;
	}
	if (fallback == HY_POLICY_NONE)
		return -EAGAIN;
	*line = fallback;
	return 0;
}

static bool m_admit(struct model *m, uint64_t key)
{
	bool hit = false;

	if (m->kind != HY_POLICY_LARC)
		return true;
	m->cr = m->cr + R_CAP / m->cr < m->cr_max ? m->cr + R_CAP / m->cr : m->cr_max;
	for (size_t i = 0; i < m->glen; i++) {
		if (m->ghost[i] == key) {
			memmove(&m->ghost[i], &m->ghost[i + 1], (m->glen - i - 1) * sizeof(key));
			m->glen--;
			hit = true;
			break;
		}
	}
	if (!hit)
		m->ghost[m->glen++] = key;
	while (m->glen > m->cr) {
		memmove(&m->ghost[0], &m->ghost[1], (m->glen - 1) * sizeof(key));
		m->glen--;
	}
	return hit;
}

/* A line of the wanted state, picked at random (NONE when there is none). */
static uint32_t m_pick(const struct model *m, bool used)
{
	uint32_t start = rnd_below(R_CAP);

	for (uint32_t i = 0; i < R_CAP; i++) {
		uint32_t x = (start + i) % R_CAP;

		if (m->l[x].used == used)
			return x;
	}
	return HY_POLICY_NONE;
}

static unsigned compare(const struct hy_policy *p, const struct model *m)
{
	unsigned bad = 0;

	for (unsigned q = 0; q < HY_POLICY_QUEUES; q++) {
		uint32_t want[R_CAP], got[R_CAP];
		size_t n = m_order(m, q, want);

		if (hy_policy_order(p, (enum hy_policy_queue)q, got, R_CAP) != n ||
		    memcmp(want, got, n * sizeof(*got)) != 0)
			bad++;
	}
	if (m->kind == HY_POLICY_LARC) {
		struct hy_policy_stats st;

		hy_policy_get_stats(p, &st);
		bad += st.ghost_len != m->glen || st.ghost_size != m->cr;
	}
	return bad;
}

static void run_random(enum hy_policy_kind kind, uint64_t seed)
{
	struct hy_policy *p = make(kind, R_CAP, R_WINDOW);
	struct model *m = calloc(1, sizeof(*m));
	struct hy_policy_stats st;
	struct preds pr = {0, 0, 0};
	unsigned mismatches = 0, checks_failed = 0;
	uint64_t victims = 0, again = 0;
	uint32_t used = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	rng_state = seed;
	m->kind = kind;
	m->cr_min = 0.1 * R_CAP;
	m->cr_max = 0.9 * R_CAP;
	m->cr = m->cr_min;
	for (long op = 0; op < R_OPS; op++) {
		uint32_t r = rnd_below(100), x, a = HY_POLICY_NONE, b = HY_POLICY_NONE;
		int ra, rb;

		if (r < 30) { /* insert a free line (LRU3: sometimes not in cold) */
			unsigned q = rnd_below(4) == 0 ? rnd_below(HY_POLICY_QUEUES) : 0;

			x = m_pick(m, false);
			if (x == HY_POLICY_NONE)
				x = rnd_below(R_CAP); /* full: expect -EEXIST */
			ra = hy_policy_insert_at(p, x, (enum hy_policy_queue)q);
			if (!m->l[x].used) {
				m_insert(m, x, q);
				used++;
				mismatches += ra != 0;
			} else {
				mismatches += ra != -EEXIST;
			}
		} else if (r < 62) { /* hit a used line, or a free one (-ENOENT) */
			x = rnd_below(8) ? m_pick(m, true) : m_pick(m, false);
			if (x == HY_POLICY_NONE)
				continue;
			ra = hy_policy_hit(p, x);
			if (m->l[x].used) {
				m_hit(m, x);
				mismatches += ra != 0;
			} else {
				mismatches += ra != -ENOENT;
			}
		} else if (r < 70) { /* remove (invalidate) */
			x = m_pick(m, true);
			if (x == HY_POLICY_NONE)
				continue;
			mismatches += hy_policy_remove(p, x) != 0;
			m->l[x].used = false;
			used--;
		} else if (r < 92) { /* victim search, then usually the eviction */
			bool use_first = rnd_below(4) != 0, use_busy = rnd_below(4) != 0;

			pr.first = rnd() & rnd() & rnd(); /* about 1 line in 8 */
			pr.busy = rnd();		  /* about 1 line in 2 */
			ra = hy_policy_victim(p, use_first ? is_first : NULL,
					      use_busy ? is_evictable : NULL, &pr, &a);
			rb = m_victim(m, &pr, use_first, use_busy, &b);
			mismatches += ra != rb || (ra == 0 && a != b);
			victims += ra == 0;
			again += ra == -EAGAIN;
			if (ra == 0 && a == b && rnd_below(4) != 0) {
				mismatches += hy_policy_remove(p, a) != 0;
				m->l[a].used = false;
				used--;
			}
		} else if (r < 93) {
			hy_policy_age(p);
			m_age(m);
		} else { /* a miss: may this key enter? */
			uint64_t key = rnd_below(R_KEYS) * 0x9e3779b97f4a7c15ULL;

			mismatches += hy_policy_admit(p, key) != m_admit(m, key);
		}
		mismatches += compare(p, m);
		if (op % 97 == 0 && hy_policy_check(p, NULL, 0) != 0)
			checks_failed++;
		if (mismatches || checks_failed) {
			fprintf(stderr, "\n  %s: first mismatch at operation %ld (r %u)\n",
				hy_policy_kind_name(kind), op, r);
			break;
		}
	}
	CU_ASSERT_EQUAL(mismatches, 0);
	CU_ASSERT_EQUAL(checks_failed, 0);
	expect_consistent(p);
	hy_policy_get_stats(p, &st);
	CU_ASSERT_EQUAL(st.in_use, used);
	/* The run must have exercised what it claims to. */
	CU_ASSERT(victims > 1000);
	CU_ASSERT(again > 10);
	CU_ASSERT(st.ages > 100);
	if (kind == HY_POLICY_LRU3)
		CU_ASSERT(st.demotions > 1000 && st.promotions > 1000);
	if (kind == HY_POLICY_LARC)
		CU_ASSERT(st.ghost_hits > 100 && st.refused > 100);
	free(m);
	hy_policy_free(p);
}

static void test_policy_random_lru3(void)
{
	run_random(HY_POLICY_LRU3, 0x1badc0ffee);
}

static void test_policy_random_lru(void)
{
	run_random(HY_POLICY_LRU, 0x5eed0002);
}

static void test_policy_random_larc(void)
{
	run_random(HY_POLICY_LARC, 0x5eed0003);
}

static void test_policy_random_freq(void)
{
	run_random(HY_POLICY_FREQ, 0x5eed0004);
}

int hy_test_add_policy(void)
{
	CU_pSuite s = CU_add_suite("policy", NULL, NULL);

	if (!s || !CU_add_test(s, "kind names parse and print", test_policy_names) ||
	    !CU_add_test(s, "bad kinds, capacities, windows refused by name",
			 test_policy_refused) ||
	    !CU_add_test(s, "line bounds, double inserts, free lines", test_policy_bounds) ||
	    !CU_add_test(s, "lru: order of victims", test_policy_lru_order) ||
	    !CU_add_test(s, "lru3: order of victims", test_policy_lru3_order) ||
	    !CU_add_test(s, "lru3: empty cold refilled from warm, then hot",
			 test_policy_lru3_refill) ||
	    !CU_add_test(s, "lru3: ageing demotes idle lines, keeps touched ones",
			 test_policy_lru3_ageing) ||
	    !CU_add_test(s, "larc: order of victims", test_policy_larc_order) ||
	    !CU_add_test(s, "freq: order of victims, ties by recency, ageing halves",
			 test_policy_freq_order) ||
	    !CU_add_test(s, "freq: saturated counts", test_policy_freq_saturation) ||
	    !CU_add_test(s, "two-step eviction and busy lines within the window",
			 test_policy_two_step) ||
	    !CU_add_test(s, "larc: admitted on the second miss in the ghost window",
			 test_policy_larc_admission) ||
	    !CU_add_test(s, "larc: ghost size adapts", test_policy_larc_ghost_size) ||
	    !CU_add_test(s, "memory per line", test_policy_memory) ||
	    !CU_add_test(s, "lru3: 100,000 random operations against a model",
			 test_policy_random_lru3) ||
	    !CU_add_test(s, "lru: 100,000 random operations against a model",
			 test_policy_random_lru) ||
	    !CU_add_test(s, "larc: 100,000 random operations against a model",
			 test_policy_random_larc) ||
	    !CU_add_test(s, "freq: 100,000 random operations against a model",
			 test_policy_random_freq))
		return -1;
	return 0;
}
