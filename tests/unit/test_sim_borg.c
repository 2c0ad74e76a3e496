/* test_sim_borg.c - BORG on a trace (sim_borg.h): the phases of BORG-C
 * and BORG-P on a synthetic trace whose patterns come and go, the copy
 * cost of a reconfiguration worked out by hand on an SSD model, reads
 * kept whole, and bad run configurations refused by name.
 *
 * The synthetic patterns: P1 and P2 are 50 scattered 4 KiB blocks each
 * (far apart on a 1 TB disk: every read a seek and half a turn), each read
 * one after the other in a fixed order, ten times over; a phase is one
 * pattern (500 requests, 1 ms apart, one process). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/devmodel.h"
#include "hybridfs/planner.h"
#include "hybridfs/sim_borg.h"
#include "hybridfs/trace_reader.h"
#include "suites.h"

#define PATTERN 50
#define REPEATS 10
#define PHASE	(PATTERN * REPEATS)

static struct hy_trace_record rd(uint64_t block, uint64_t nblocks, int64_t ts_ns)
{
	struct hy_trace_record r = {.ts_ns = ts_ns,
				    .device = 0,
				    .offset = block * 4096,
				    .length = nblocks * 4096,
				    .write = false,
				    .pid = -1,
				    .process = ""};
	return r;
}

/* Two patterns of PATTERN blocks, none shared, none near another. */
static void make_patterns(uint64_t p1[PATTERN], uint64_t p2[PATTERN])
{
	uint64_t x = 88172645463325252ULL;

	for (int i = 0; i < 2 * PATTERN; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* 10,000 blocks apart at least: no read-ahead joins two */
		(i < PATTERN ? p1 : p2)[i % PATTERN] = (uint64_t)i * 10000 + x % 5000;
	}
}

/* Phases 1, 2, 3 read P1, P2, P1. Before phase 3, BORG-C plans from
 * phases 1-2 (P1 and P2: both fit), BORG-P from phase 2 alone (P2): P1
 * comes back from the BOPT with BORG-C only. */
static void run_phases(const struct hy_planner_options *planner)
{
	struct hy_devmodel_params hdd;
	struct hy_sim_borg_run_config cfg = {
		.requests = 3 * PHASE,
		.phases = 3,
		.modes = {true, true},
		.capacity = 2 * PATTERN,
		.bopt_address = UINT64_MAX,
		.device = &hdd,
		.planner = planner,
	};
	const struct hy_sim_borg_phase *ph;
	struct hy_sim_borg_run *run;
	uint64_t p1[PATTERN], p2[PATTERN];
	unsigned n;
	char why[256];

	make_patterns(p1, p2);
	hy_devmodel_defaults(HY_DEVMODEL_HDD, &hdd);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_run_new(&cfg, &run, why, sizeof(why)), 0);
	for (int k = 0; k < 3; k++)
		for (int rep = 0; rep < REPEATS; rep++)
			for (int i = 0; i < PATTERN; i++) {
				int64_t ts = (int64_t)((k * REPEATS + rep) * PATTERN + i) * 1000000;
				struct hy_trace_record r = rd(k == 1 ? p2[i] : p1[i], 1, ts);

				CU_ASSERT_EQUAL_FATAL(
					hy_sim_borg_run_request(run, &r, why, sizeof(why)), 0);
			}
	ph = hy_sim_borg_run_phases(run, &n);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	for (unsigned k = 0; k < 3; k++) {
		CU_ASSERT_EQUAL(ph[k].first, k * PHASE);
		CU_ASSERT_EQUAL(ph[k].requests, PHASE);
	}
	/* every scattered read pays a seek and half a turn without a plan */
	CU_ASSERT_TRUE(ph[1].busy_ms_vanilla > PHASE * 4.0);
	/* phase 1: no plan in either mode */
	for (int m = 0; m < HY_SIM_BORG_MODES; m++) {
		CU_ASSERT_EQUAL(ph[0].mode[m].planned_blocks, 0);
		CU_ASSERT_DOUBLE_EQUAL(ph[0].mode[m].busy_ms, ph[0].busy_ms_vanilla, 1e-9);
	}
	/* phase 2: both planned P1 from phase 1; P2 is not in the BOPT, so
	 * the phase runs exactly as without a plan */
	for (int m = 0; m < HY_SIM_BORG_MODES; m++) {
		CU_ASSERT_EQUAL(ph[1].mode[m].trained, PHASE);
		CU_ASSERT_EQUAL(ph[1].mode[m].planned_blocks, PATTERN);
		CU_ASSERT_EQUAL(ph[1].mode[m].copied_blocks, PATTERN);
		CU_ASSERT_EQUAL(ph[1].mode[m].bopt_blocks_read, 0);
		CU_ASSERT_TRUE(ph[1].mode[m].reconfiguration_busy_ms > PATTERN * 4.0);
		CU_ASSERT_DOUBLE_EQUAL(ph[1].mode[m].busy_ms, ph[1].busy_ms_vanilla, 1e-6);
	}
	/* phase 3, cumulative: trained on 1000 requests, P1 and P2 planned,
	 * P1 read in order from the BOPT */
	CU_ASSERT_EQUAL(ph[2].mode[HY_SIM_BORG_CUMULATIVE].trained, 2 * PHASE);
	CU_ASSERT_EQUAL(ph[2].mode[HY_SIM_BORG_CUMULATIVE].planned_blocks, 2 * PATTERN);
	CU_ASSERT_EQUAL(ph[2].mode[HY_SIM_BORG_CUMULATIVE].bopt_blocks_read, PHASE);
	CU_ASSERT_TRUE(ph[2].mode[HY_SIM_BORG_CUMULATIVE].busy_ms < ph[2].busy_ms_vanilla / 10);
	/* P1 stayed where the first plan put it or moved: copied P2 at least */
	CU_ASSERT_TRUE(ph[2].mode[HY_SIM_BORG_CUMULATIVE].copied_blocks >= PATTERN);
	/* phase 3, partial: trained on phase 2 alone, P2 planned, P1 read
	 * from home as without a plan */
	CU_ASSERT_EQUAL(ph[2].mode[HY_SIM_BORG_PARTIAL].trained, PHASE);
	CU_ASSERT_EQUAL(ph[2].mode[HY_SIM_BORG_PARTIAL].planned_blocks, PATTERN);
	CU_ASSERT_EQUAL(ph[2].mode[HY_SIM_BORG_PARTIAL].bopt_blocks_read, 0);
	CU_ASSERT_TRUE(ph[2].mode[HY_SIM_BORG_PARTIAL].reconfiguration_busy_ms > 0);
	CU_ASSERT_DOUBLE_EQUAL(ph[2].mode[HY_SIM_BORG_PARTIAL].busy_ms, ph[2].busy_ms_vanilla,
			       1e-6);
	hy_sim_borg_run_free(run);
}

static void test_phases_greedy(void)
{
	run_phases(NULL);
}

static void test_phases_chains(void)
{
	struct hy_planner_options o = {.placement = HY_PLANNER_CHAINS, .near_blocks = 256};

	run_phases(&o);
}

/* A split point: two phases, the second starting at the split. */
static void test_split(void)
{
	struct hy_devmodel_params hdd;
	struct hy_sim_borg_run_config cfg = {
		.requests = 10,
		.phases = 2,
		.split = 7,
		.modes = {true, false},
		.capacity = 4,
		.bopt_address = UINT64_MAX,
		.device = &hdd,
	};
	const struct hy_sim_borg_phase *ph;
	struct hy_sim_borg_run *run;
	unsigned n;
	char why[256];

	hy_devmodel_defaults(HY_DEVMODEL_HDD, &hdd);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_run_new(&cfg, &run, why, sizeof(why)), 0);
	for (int i = 0; i < 10; i++) {
		struct hy_trace_record r = rd((uint64_t)(i % 2) * 100000, 1, i * 1000000);

		CU_ASSERT_EQUAL(hy_sim_borg_run_request(run, &r, why, sizeof(why)), 0);
	}
	ph = hy_sim_borg_run_phases(run, &n);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(ph[0].requests, 7);
	CU_ASSERT_EQUAL(ph[1].first, 7);
	CU_ASSERT_EQUAL(ph[1].requests, 3);
	CU_ASSERT_EQUAL(ph[1].mode[HY_SIM_BORG_CUMULATIVE].trained, 7);
	/* the partial mode was not asked for: nothing of it */
	CU_ASSERT_EQUAL(ph[1].mode[HY_SIM_BORG_PARTIAL].planned_blocks, 0);
	CU_ASSERT_DOUBLE_EQUAL(ph[1].mode[HY_SIM_BORG_PARTIAL].busy_ms, 0, 1e-12);
	hy_sim_borg_run_free(run);
}

/*
 * The copy of a plan, by hand, on an SSD model with read 100 us + n / 400
 * MB/s and write 50 us + n / 200 MB/s (4096 bytes: 0.01024 ms to read,
 * 0.02048 ms to write). Trained on a request of blocks 20-21 then one of
 * block 5000, three times: two vertices, [20, 2 blocks] and [5000, 1].
 * The copy, range by range: read [20-21] (one request: its sources are
 * contiguous) 0.1 + 0.02048, write it 0.05 + 0.04096; read [5000] 0.1 +
 * 0.01024, write it 0.05 + 0.02048: 0.39216 ms, 3 blocks. The same plan
 * again: every block is where it goes, nothing to copy.
 */
static void test_copy_cost(void)
{
	struct hy_devmodel_params ssd;
	struct hy_devmodel *model;
	struct hy_sim_borg *l;
	struct hy_sim_borg_stats st;
	double ms = -1;
	char why[256];

	hy_devmodel_defaults(HY_DEVMODEL_SSD, &ssd);
	ssd.read_us = 100;
	ssd.write_us = 50;
	ssd.read_mb_s = 400;
	ssd.write_mb_s = 200;
	CU_ASSERT_EQUAL_FATAL(hy_devmodel_new(&ssd, &model, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_new(8, UINT64_MAX, &l), 0);
	for (int rep = 0; rep < 3; rep++) {
		struct hy_trace_record a = rd(20, 2, rep * 2000000);
		struct hy_trace_record b = rd(5000, 1, rep * 2000000 + 1000000);

		CU_ASSERT_EQUAL(hy_sim_borg_train(l, &a), 0);
		CU_ASSERT_EQUAL(hy_sim_borg_train(l, &b), 0);
	}
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_reconfigure(l, model, &ms, why, sizeof(why)), 0);
	hy_sim_borg_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.planned_blocks, 3);
	CU_ASSERT_EQUAL(st.copied_blocks, 3);
	CU_ASSERT_EQUAL(st.reconfigurations, 1);
	CU_ASSERT_DOUBLE_EQUAL(ms, 0.1 + 0.02048 + 0.05 + 0.04096 + 0.1 + 0.01024 + 0.05 + 0.02048,
			       1e-9);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_reconfigure(l, model, &ms, why, sizeof(why)), 0);
	hy_sim_borg_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.planned_blocks, 3);
	CU_ASSERT_EQUAL(st.copied_blocks, 0);
	CU_ASSERT_DOUBLE_EQUAL(ms, 0, 1e-12);
	CU_ASSERT_EQUAL(st.kept_blocks, 3);
	/* forgotten: a fresh graph plans nothing, and what is relocated stays
	 * until a plan wants its room (reorganize.h: left) */
	CU_ASSERT_EQUAL(hy_sim_borg_forget(l), 0);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_reconfigure(l, model, &ms, why, sizeof(why)), 0);
	hy_sim_borg_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.trained, 0);
	CU_ASSERT_EQUAL(st.planned_blocks, 0);
	CU_ASSERT_EQUAL(st.dropped_blocks, 0);
	CU_ASSERT_EQUAL(st.kept_blocks, 3);
	CU_ASSERT_DOUBLE_EQUAL(ms, 0, 1e-12);
	hy_sim_borg_free(l);
	hy_devmodel_free(model);
}

/* An SSD model whose times are worked out by hand: a read is 100 us +
 * n / 400 MB/s (4096 bytes: 0.01024 ms), a write 50 us + n / 200 MB/s
 * (0.02048 ms). */
static struct hy_devmodel *hand_ssd(void)
{
	struct hy_devmodel_params ssd;
	struct hy_devmodel *model;
	char why[256];

	hy_devmodel_defaults(HY_DEVMODEL_SSD, &ssd);
	ssd.read_us = 100;
	ssd.write_us = 50;
	ssd.read_mb_s = 400;
	ssd.write_mb_s = 200;
	CU_ASSERT_FATAL(hy_devmodel_new(&ssd, &model, why, sizeof(why)) == 0);
	return model;
}

/* Requests of blocks @a (@na of them) then @b, three times: a graph of
 * two vertices, both planned in a BOPT of 8 blocks. */
static void train_pair(struct hy_sim_borg *l, uint64_t a, uint64_t na, uint64_t b)
{
	for (int rep = 0; rep < 3; rep++) {
		struct hy_trace_record x = rd(a, na, rep * 2000000);
		struct hy_trace_record y = rd(b, 1, rep * 2000000 + 1000000);

		CU_ASSERT_EQUAL(hy_sim_borg_train(l, &x), 0);
		CU_ASSERT_EQUAL(hy_sim_borg_train(l, &y), 0);
	}
}

/* A new plan that keeps [20, 2] and replaces [5000] by [9000]: what is in
 * its place stays (the diff's keep), the rest is dropped, and only the
 * blocks whose place changed are copied. */
static void test_plan_change(void)
{
	struct hy_devmodel *model = hand_ssd();
	struct hy_sim_borg *l;
	struct hy_sim_borg_stats st;
	double ms;
	char why[256];

	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_new(8, UINT64_MAX, &l), 0);
	train_pair(l, 20, 2, 5000);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_reconfigure(l, model, &ms, why, sizeof(why)), 0);
	hy_sim_borg_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.copied_blocks, 3);
	CU_ASSERT_EQUAL(hy_sim_borg_forget(l), 0);
	train_pair(l, 20, 2, 9000);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_reconfigure(l, model, &ms, why, sizeof(why)), 0);
	hy_sim_borg_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.planned_blocks, 3);
	CU_ASSERT_EQUAL(st.kept_blocks + st.copied_blocks, 3);
	CU_ASSERT_EQUAL(st.kept_blocks, 2);
	CU_ASSERT_EQUAL(st.dropped_blocks, 3 - st.kept_blocks);
	/* a read and a write per block copied */
	CU_ASSERT_DOUBLE_EQUAL(ms, (double)st.copied_blocks * (0.1 + 0.01024 + 0.05 + 0.02048),
			       1e-9);
	hy_sim_borg_free(l);
	hy_devmodel_free(model);
}

/* Blocks 20-23 with 20-21 relocated: through the map, two device
 * requests (the BOPT's two blocks, then home's two); without a BOPT, one
 * request home. */
static void test_serve(void)
{
	struct hy_devmodel *model = hand_ssd();
	struct hy_sim_borg *l;
	struct hy_sim_borg_stats st;
	struct hy_trace_record partly = rd(20, 4, -1), elsewhere = rd(100, 1, -1);
	char why[256];

	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_new(8, UINT64_MAX, &l), 0);
	train_pair(l, 20, 2, 5000);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_reconfigure(l, NULL, NULL, why, sizeof(why)), 0);
	CU_ASSERT_DOUBLE_EQUAL(hy_sim_borg_serve(l, model, &partly, false), 0.1 + 0.04096, 1e-9);
	hy_sim_borg_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.relocated_blocks, 0);
	CU_ASSERT_DOUBLE_EQUAL(hy_sim_borg_serve(l, model, &partly, true), 2 * (0.1 + 0.02048),
			       1e-9);
	hy_sim_borg_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.relocated_blocks, 2);
	CU_ASSERT_EQUAL(st.served, 1);
	/* nothing relocated there: one request home, as without a plan */
	CU_ASSERT_DOUBLE_EQUAL(hy_sim_borg_serve(l, model, &elsewhere, true), 0.1 + 0.01024, 1e-9);
	hy_sim_borg_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.relocated_blocks, 2);
	hy_sim_borg_free(l);
	hy_devmodel_free(model);
}

/* A write to a relocated block goes into the BOPT (bopt_writes, the
 * daemon's default); the next reconfiguration sends it home first (a BOPT
 * read and a home write), and the same plan then copies nothing. */
static void test_writes_home(void)
{
	struct hy_devmodel *model = hand_ssd();
	struct hy_sim_borg *l;
	struct hy_sim_borg_stats st;
	struct hy_trace_record w = rd(20, 1, -1);
	double ms;
	char why[256];

	w.write = true;
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_new(8, UINT64_MAX, &l), 0);
	train_pair(l, 20, 2, 5000);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_reconfigure(l, NULL, NULL, why, sizeof(why)), 0);
	CU_ASSERT_DOUBLE_EQUAL(hy_sim_borg_serve(l, model, &w, true), 0.05 + 0.02048, 1e-9);
	hy_sim_borg_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.relocated_blocks, 1);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_reconfigure(l, model, &ms, why, sizeof(why)), 0);
	hy_sim_borg_get_stats(l, &st);
	CU_ASSERT_EQUAL(st.synced_blocks, 1);
	CU_ASSERT_EQUAL(st.copied_blocks, 0);
	CU_ASSERT_EQUAL(st.kept_blocks, 3);
	CU_ASSERT_DOUBLE_EQUAL(ms, 0.1 + 0.01024 + 0.05 + 0.02048, 1e-9);
	hy_sim_borg_free(l);
	hy_devmodel_free(model);
}
static void expect_bad(struct hy_sim_borg_run_config cfg, const char *word)
{
	static char not_null;
	struct hy_sim_borg_run *run = (struct hy_sim_borg_run *)(void *)&not_null;
	char why[256] = "";

	CU_ASSERT_EQUAL(hy_sim_borg_run_new(&cfg, &run, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NULL(run);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, word));
}

static void test_bad_config(void)
{
	struct hy_devmodel_params hdd;
	struct hy_sim_borg_run_config good =
					      {
						      .requests = 100,
						      .phases = 4,
						      .modes = {true, true},
						      .capacity = 10,
						      .bopt_address = UINT64_MAX,
						      .device = &hdd,
					      },
				      c;
	struct hy_sim_borg_run *run;
	char why[256];

	hy_devmodel_defaults(HY_DEVMODEL_HDD, &hdd);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_run_new(&good, &run, why, sizeof(why)), 0);
	hy_sim_borg_run_free(run);
	c = good;
	c.phases = 1;
	expect_bad(c, "1 phases");
	c.phases = HY_SIM_BORG_MAX_PHASES + 1;
	expect_bad(c, "65 phases");
	c = good;
	c.requests = 3;
	expect_bad(c, "3 requests");
	c = good;
	c.split = 50;
	expect_bad(c, "split");
	c = good;
	c.phases = 2;
	c.split = 100;
	expect_bad(c, "split at request 100");
	c = good;
	c.modes[0] = c.modes[1] = false;
	expect_bad(c, "mode");
	c = good;
	c.capacity = 0;
	expect_bad(c, "BOPT of 0");
	c = good;
	c.device = NULL;
	expect_bad(c, "disk model");
	/* a model the device layer refuses, named by it */
	c = good;
	hdd.seek_track_ms = 20;
	expect_bad(c, "seek_track_ms");
}

int hy_test_add_sim_borg(void)
{
	CU_pSuite s = CU_add_suite("sim_borg", NULL, NULL);

	if (!s || !CU_add_test(s, "BORG-C and BORG-P phases, greedy planner", test_phases_greedy) ||
	    !CU_add_test(s, "BORG-C and BORG-P phases, chains planner", test_phases_chains) ||
	    !CU_add_test(s, "two phases cut at a split point", test_split) ||
	    !CU_add_test(s, "a reconfiguration's copy, by hand", test_copy_cost) ||
	    !CU_add_test(s, "a plan change copies only what moved", test_plan_change) ||
	    !CU_add_test(s, "relocated blocks served from the BOPT", test_serve) ||
	    !CU_add_test(s, "writes into the BOPT go home before a plan", test_writes_home) ||
	    !CU_add_test(s, "bad run configurations refused", test_bad_config))
		return -1;
	return 0;
}
