/* test_replay.c - the simulator's replay (sim/replay.c): the conversion
 * rule of BASELINES.md (blocks of a request, devices, zero lengths, reads
 * only, the cap), LRU against a reference LRU on random streams, LARC's
 * refusals, the footprint counter, and bad capacities. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/replay.h"
#include "hybridfs/sim_full.h"
#include "hybridfs/sim_borg.h"
#include "hybridfs/trace_reader.h"
#include "suites.h"

static struct hy_trace_record req(uint32_t device, uint64_t offset, uint64_t length, bool write)
{
	struct hy_trace_record r = {.ts_ns = -1,
				    .device = device,
				    .offset = offset,
				    .length = length,
				    .write = write,
				    .pid = -1,
				    .process = ""};
	return r;
}

static struct hy_replay *make(enum hy_policy_kind kind, uint64_t capacity, bool reads_only,
			      uint64_t cap)
{
	struct hy_replay_config cfg = {.policy = kind,
				       .capacity = capacity,
				       .reads_only = reads_only,
				       .max_accesses = cap};
	struct hy_replay *r = NULL;
	char why[256];

	if (hy_replay_new(&cfg, &r, why, sizeof(why)) < 0)
		fprintf(stderr, "\nhy_replay_new: %s\n", why);
	return r;
}

static void test_rule(void)
{
	struct hy_replay *r = make(HY_POLICY_LRU, 100, false, 0);
	struct hy_trace_record a;
	struct hy_replay_stats s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	/* bytes 4000..4200: blocks 0 and 1 */
	a = req(0, 4000, 200, false);
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	/* block 1 again (a hit), block 2 (a miss) */
	a = req(0, 4096, 8192, true);
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	/* the same block of another device is another block */
	a = req(1, 0, 1, false);
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	/* zero length: dropped */
	a = req(0, 0, 0, false);
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	hy_replay_get_stats(r, &s);
	CU_ASSERT_EQUAL(s.accesses, 5);
	CU_ASSERT_EQUAL(s.reads, 3);
	CU_ASSERT_EQUAL(s.writes, 2);
	CU_ASSERT_EQUAL(s.read_hits, 0);
	CU_ASSERT_EQUAL(s.write_hits, 1);
	CU_ASSERT_EQUAL(s.inserts, 4);
	CU_ASSERT_EQUAL(s.requests, 3);
	CU_ASSERT_EQUAL(s.dropped, 1);
	CU_ASSERT_FALSE(s.capped);
	hy_replay_free(r);

	/* reads only: writes dropped; the cap cuts a request in the middle */
	r = make(HY_POLICY_LRU, 100, true, 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	a = req(0, 0, 4096, true);
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	a = req(0, 0, 5 * 4096, false);
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 0);
	hy_replay_get_stats(r, &s);
	CU_ASSERT_EQUAL(s.accesses, 3);
	CU_ASSERT_EQUAL(s.writes, 0);
	CU_ASSERT_EQUAL(s.dropped, 1);
	CU_ASSERT_TRUE(s.capped);
	hy_replay_free(r);
}

/* A reference LRU: an array in recency order (O(n), fine for a test). */
struct ref_lru {
	uint64_t keys[64];
	size_t n, cap;
};

static bool ref_access(struct ref_lru *l, uint64_t key)
{
	for (size_t i = 0; i < l->n; i++) {
		if (l->keys[i] == key) {
			memmove(l->keys + 1, l->keys, i * sizeof(l->keys[0]));
			l->keys[0] = key;
			return true;
		}
	}
	if (l->n == l->cap)
		l->n--;
	memmove(l->keys + 1, l->keys, l->n * sizeof(l->keys[0]));
	l->keys[0] = key;
	l->n++;
	return false;
}

static void test_lru_reference(void)
{
	uint64_t rng = 0x2545f4914f6cdd1dULL;

	for (size_t cap = 1; cap <= 64; cap = cap * 2 + 1) {
		struct hy_replay *r = make(HY_POLICY_LRU, cap, false, 0);
		struct ref_lru ref = {.cap = cap};
		unsigned mismatches = 0;

		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		for (int i = 0; i < 50000; i++) {
			uint64_t key;

			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			/* a skewed stream over 200 keys of two devices */
			key = (rng % 3 ? rng % 20 : rng % 200) | ((rng >> 40) % 2) << 48;
			if ((hy_replay_access(r, key, rng & 1) == 1) != ref_access(&ref, key))
				mismatches++;
		}
		CU_ASSERT_EQUAL(mismatches, 0);
		hy_replay_free(r);
	}
}

static void test_policies_and_footprint(void)
{
	static const enum hy_policy_kind kinds[] = {HY_POLICY_LRU, HY_POLICY_LARC, HY_POLICY_FREQ,
						    HY_POLICY_LRU3};
	struct hy_replay_footprint *fp;
	struct hy_trace_record a;
	struct hy_replay_stats s;
	char why[256];

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct hy_replay *r = make(kinds[k], 50, false, 0);

		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		for (int round = 0; round < 3; round++)
			for (uint64_t b = 0; b < 40; b++) {
				a = req(0, b * 4096, 4096, false);
				CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
			}
		hy_replay_get_stats(r, &s);
		CU_ASSERT_EQUAL(s.accesses, 120);
		if (kinds[k] == HY_POLICY_LARC) {
			/* lazy: a first miss is refused, the second admitted */
			CU_ASSERT_EQUAL(s.refused, 40);
			CU_ASSERT_EQUAL(s.inserts, 40);
			CU_ASSERT_EQUAL(s.read_hits, 40);
		} else {
			/* 40 blocks fit in 50: only the first round misses */
			CU_ASSERT_EQUAL(s.inserts, 40);
			CU_ASSERT_EQUAL(s.read_hits, 80);
			CU_ASSERT_EQUAL(s.evictions, 0);
		}
		hy_replay_free(r);
	}

	CU_ASSERT_EQUAL_FATAL(hy_replay_footprint_new(false, 0, &fp), 0);
	for (uint64_t i = 0; i < 100000; i++) {
		a = req((uint32_t)(i % 3), (i % 50000) * 4096, 4096, i % 2);
		CU_ASSERT_EQUAL(hy_replay_footprint_add(fp, &a), 1);
	}
	/* 50,000 offsets, each on the device i % 3 gives it: i and i + 50,000
	 * differ by 50,000 = 2 mod 3, so every (device, block) pair is new */
	CU_ASSERT_EQUAL(hy_replay_footprint_blocks(fp), 100000);
	CU_ASSERT_EQUAL(hy_replay_footprint_accesses(fp), 100000);
	hy_replay_footprint_free(fp);

	{
		struct hy_replay_config bad = {.policy = HY_POLICY_LRU, .capacity = 0};
		struct hy_replay *r;

		CU_ASSERT_EQUAL(hy_replay_new(&bad, &r, why, sizeof(why)), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "0 blocks"));
		bad.capacity = UINT64_C(1) << 40;
		CU_ASSERT_EQUAL(hy_replay_new(&bad, &r, why, sizeof(why)), -EINVAL);
	}
}

/* Timing over device models: a read miss costs a backing read (its fill is
 * SSD busy time, not response time), a hit an SSD read; a write goes to
 * the backing device and the SSD; response times by class and category. */
/* Two SSD models with round numbers: 1 ms and 0.1 ms a request, and a
 * transfer of 4 KiB at 4096 MB/s (1 us). */
static void round_models(struct hy_devmodel_params *backing, struct hy_devmodel_params *ssd)
{
	hy_devmodel_defaults(HY_DEVMODEL_SSD, backing);
	backing->read_us = backing->write_us = 1000;
	backing->read_mb_s = backing->write_mb_s = 4096;
	*ssd = *backing;
	ssd->read_us = ssd->write_us = 100;
}

static void test_timed(void)
{
	struct hy_devmodel_params backing, ssd;
	struct hy_replay_config cfg = {
		.policy = HY_POLICY_LRU, .capacity = 100, .backing = &backing, .ssd = &ssd};
	struct hy_trace_record a;
	struct hy_replay_stats s;
	struct hy_replay *r;
	char why[256];

	round_models(&backing, &ssd);
	CU_ASSERT_EQUAL_FATAL(hy_replay_new(&cfg, &r, why, sizeof(why)), 0);
	a = req(0, 0, 8192, false); /* two blocks missed: one backing read of 8 KiB */
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	a = req(0, 4096, 4096, false); /* a hit: an SSD read */
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	a = req(0, 1 << 20, 4096, true); /* a write: backing + SSD */
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	hy_replay_get_stats(r, &s);
	CU_ASSERT_TRUE(s.timed);
	CU_ASSERT_DOUBLE_EQUAL(s.backing_busy_ms, 1.002 + 1.001, 1e-9);
	/* the fill (0.102) in busy time, the hit (0.101) and the write (0.101) */
	CU_ASSERT_DOUBLE_EQUAL(s.ssd_busy_ms, 0.102 + 0.101 + 0.101, 1e-9);
	CU_ASSERT_EQUAL(s.all.requests, 3);
	CU_ASSERT_DOUBLE_EQUAL(s.all.mean_ms, (1.002 + 0.101 + 1.102) / 3, 1e-9);
	CU_ASSERT_TRUE(s.all.p99_ms >= 1.102 && s.all.p99_ms <= 1.102 * 1.05);
	/* the second read shares a page with the first: overlapped */
	CU_ASSERT_EQUAL(s.by_class[HY_CLASS_OVERLAPPED].requests, 1);
	CU_ASSERT_DOUBLE_EQUAL(s.by_class[HY_CLASS_OVERLAPPED].mean_ms, 0.101, 1e-9);
	CU_ASSERT_EQUAL(s.by_class[HY_CLASS_RANDOM].requests, 2);
	CU_ASSERT_EQUAL(s.by_category[HY_CATEGORY_UNKNOWN].requests, 3);
	CU_ASSERT_EQUAL(s.backing.reads, 1);
	CU_ASSERT_EQUAL(s.backing.writes, 1);
	CU_ASSERT_EQUAL(s.ssd.writes, 2);
	hy_replay_free(r);

	/* a bad model is refused, named */
	backing.read_us = -1;
	CU_ASSERT_EQUAL(hy_replay_new(&cfg, &r, why, sizeof(why)), -EINVAL);
}

/* Open loop: requests served in arrival order, each waiting for the one
 * before it; round_models (a backing read of 4 KiB: 1.001 ms, an SSD read
 * 0.101 ms). */
static void test_open_loop(void)
{
	struct hy_devmodel_params backing, ssd;
	struct hy_replay_config cfg = {.policy = HY_POLICY_LRU,
				       .capacity = 100,
				       .backing = &backing,
				       .ssd = &ssd,
				       .open_loop = true};
	struct hy_trace_record a;
	struct hy_replay_stats s;
	struct hy_replay *r;
	char why[256];

	round_models(&backing, &ssd);

	/* three misses at the same instant: 1.001, then waits of 1.001 and
	 * 2.002; a fourth 10 ms later finds the storage idle */
	CU_ASSERT_EQUAL_FATAL(hy_replay_new(&cfg, &r, why, sizeof(why)), 0);
	for (int i = 0; i < 3; i++) {
		a = req(0, (uint64_t)i << 20, 4096, false);
		a.ts_ns = 5000000;
		CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	}
	a = req(0, 8 << 20, 4096, false);
	a.ts_ns = 15000000;
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	/* stamped before the one before it: arrives with it, waits for it */
	a = req(0, 9 << 20, 4096, false);
	a.ts_ns = 14000000;
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	hy_replay_get_stats(r, &s);
	CU_ASSERT_TRUE(s.open_loop);
	CU_ASSERT_EQUAL(s.all.requests, 5);
	CU_ASSERT_DOUBLE_EQUAL(s.all.mean_ms, (1.001 + 2.002 + 3.003 + 1.001 + 2.002) / 5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(s.wait_mean_ms, (1.001 + 2.002 + 1.001) / 5, 1e-9);
	CU_ASSERT_EQUAL(s.waited, 3);
	CU_ASSERT_EQUAL(s.reordered, 1);
	CU_ASSERT_DOUBLE_EQUAL(s.span_ms, 10 + 2 * 1.001, 1e-9);
	/* busy time is the same as closed loop's: only the waits are new */
	CU_ASSERT_DOUBLE_EQUAL(s.backing_busy_ms, 5 * 1.001, 1e-9);
	/* a request without a timestamp is refused */
	a = req(0, 0, 4096, false);
	a.ts_ns = -1;
	CU_ASSERT_EQUAL(hy_replay_request(r, &a), -EINVAL);
	hy_replay_free(r);

	/* --speed 10: 10 ms of trace are 1 ms; the fourth now waits */
	cfg.speed = 10;
	CU_ASSERT_EQUAL_FATAL(hy_replay_new(&cfg, &r, why, sizeof(why)), 0);
	for (int i = 0; i < 4; i++) {
		a = req(0, (uint64_t)i << 20, 4096, false);
		a.ts_ns = i < 3 ? 0 : 10000000;
		CU_ASSERT_EQUAL(hy_replay_request(r, &a), 1);
	}
	hy_replay_get_stats(r, &s);
	CU_ASSERT_EQUAL(s.waited, 3);
	CU_ASSERT_DOUBLE_EQUAL(s.span_ms, 4 * 1.001, 1e-9);
	hy_replay_free(r);

	/* open loop without models, a negative speed: refused, named */
	cfg.speed = -1;
	CU_ASSERT_EQUAL(hy_replay_new(&cfg, &r, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "speed"));
	cfg.speed = 0;
	cfg.backing = NULL;
	CU_ASSERT_EQUAL(hy_replay_new(&cfg, &r, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "open-loop"));
}

/* BORG on a trace: 200 scattered blocks read in one order, again and again:
 * trained on the first half, the plan lays them out in that order and the
 * second half reads them sequentially from the BOPT; without room for
 * them, nothing moves. */
static void test_layout(void)
{
	struct hy_devmodel_params hdd;
	struct hy_devmodel *plain, *planned;
	struct hy_sim_borg *l;
	struct hy_sim_borg_stats ls;
	uint64_t blocks[200], x = 88172645463325252ULL;
	double without = 0, with = 0;
	char why[256];

	for (int i = 0; i < 200; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		blocks[i] = x % 2500000;
	}
	hy_devmodel_defaults(HY_DEVMODEL_HDD, &hdd);
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_new(200, UINT64_MAX, &l), 0);
	CU_ASSERT_EQUAL_FATAL(hy_devmodel_new(&hdd, &plain, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_devmodel_new(&hdd, &planned, why, sizeof(why)), 0);
	for (int rep = 0; rep < 10; rep++)
		for (int i = 0; i < 200; i++) {
			struct hy_trace_record a = req(0, blocks[i] * 4096, 4096, false);

			a.ts_ns = (int64_t)(rep * 200 + i) * 1000000;
			CU_ASSERT_EQUAL(hy_sim_borg_train(l, &a), 0);
		}
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_reconfigure(l, NULL, NULL, why, sizeof(why)), 0);
	for (int rep = 0; rep < 10; rep++)
		for (int i = 0; i < 200; i++) {
			struct hy_trace_record a = req(0, blocks[i] * 4096, 4096, false);

			without += hy_sim_borg_serve(l, plain, &a, false);
			with += hy_sim_borg_serve(l, planned, &a, true);
		}
	hy_sim_borg_get_stats(l, &ls);
	CU_ASSERT_EQUAL(ls.trained, 2000);
	CU_ASSERT_EQUAL(ls.vertices, 200);
	CU_ASSERT_EQUAL(ls.planned_blocks, 200);
	CU_ASSERT_EQUAL(ls.relocated_blocks, 2000);
	/* each scattered read pays a seek and a turn (> 4 ms); in the BOPT
	 * they follow one another and the drive's read-ahead has them */
	CU_ASSERT_TRUE(without > 2000 * 4.0);
	CU_ASSERT_TRUE(with < without / 50);
	hy_devmodel_free(plain);
	hy_devmodel_free(planned);
	hy_sim_borg_free(l);

	/* a BOPT of one block: almost everything stays home */
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_new(1, UINT64_MAX, &l), 0);
	for (int i = 0; i < 200; i++) {
		struct hy_trace_record a = req(0, blocks[i] * 4096, 4096, false);

		CU_ASSERT_EQUAL(hy_sim_borg_train(l, &a), 0);
	}
	CU_ASSERT_EQUAL_FATAL(hy_sim_borg_reconfigure(l, NULL, NULL, why, sizeof(why)), 0);
	hy_sim_borg_get_stats(l, &ls);
	CU_ASSERT_EQUAL(ls.planned_blocks, 1);
	hy_sim_borg_free(l);
	CU_ASSERT_EQUAL(hy_sim_borg_new(0, UINT64_MAX, &l), -EINVAL);
}

/* PORE: with Coverage First the zone with the most dirty blocks is open,
 * so a dirty LRU line of another zone is skipped and the victim comes from
 * the open one; without PORE the LRU line goes. */
static void pore_case(enum hy_pore_rule pore, int *b1_hit, uint64_t *dirty_evictions)
{
	struct hy_devmodel_params smr, ssd;
	struct hy_replay_config cfg = {
		.policy = HY_POLICY_LRU, .capacity = 4, .backing = &smr, .ssd = &ssd};
	struct hy_replay_stats s;
	struct hy_replay *r;
	char why[256];
	const uint64_t zone = UINT64_C(16) << 20;

	hy_devmodel_defaults(HY_DEVMODEL_SMR, &smr);
	hy_devmodel_defaults(HY_DEVMODEL_SSD, &ssd);
	cfg.write_back = true;
	cfg.pore = pore;
	cfg.pore_period = 1;
	CU_ASSERT_EQUAL_FATAL(hy_replay_new(&cfg, &r, why, sizeof(why)), 0);
	/* b1 in zone 5 first (the LRU line), then three blocks of zone 1 */
	CU_ASSERT_EQUAL(hy_replay_access(r, 5 * zone / 4096, true), 0);
	for (uint64_t i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(hy_replay_access(r, zone / 4096 + i, true), 0);
	/* a fifth block (zone 9) needs a victim */
	CU_ASSERT_EQUAL(hy_replay_access(r, 9 * zone / 4096, true), 0);
	*b1_hit = hy_replay_access(r, 5 * zone / 4096, false);
	hy_replay_get_stats(r, &s);
	*dirty_evictions = s.dirty_evictions;
	if (pore)
		CU_ASSERT_TRUE(s.pore_divisions >= 5);
	hy_replay_free(r);
}

static void test_pore(void)
{
	uint64_t with_ev, without_ev;
	int with, without;

	pore_case(HY_PORE_COVERAGE, &with, &with_ev);
	pore_case(HY_PORE_OFF, &without, &without_ev);
	CU_ASSERT_EQUAL(with, 1);    /* b1 stayed: its zone was forbidden */
	CU_ASSERT_EQUAL(without, 0); /* LRU took it */
	CU_ASSERT_TRUE(with_ev >= 1 && without_ev >= 1);
}

/* The whole cache in the simulator: a working set that fits is hit after
 * its first round (from DRAM or the SSD store); the store file is made in
 * the folder given and removed at the end; with ReCA an archival stream
 * (large sequential reads of a large file) is kept out by its class. */
static void test_full(void)
{
	char *dir = hy_test_tmpdir();
	struct hy_sim_full_config cfg = {.capacity = 256, .heat_threshold = -1, .store_dir = dir};
	struct hy_sim_full_stats fs;
	struct hy_sim_full *f;
	struct hy_trace_record a;
	char why[256];
	DIR *d;
	int files = 0;
	uint64_t refused[2];

	CU_ASSERT_EQUAL_FATAL(hy_sim_full_new(&cfg, &f, why, sizeof(why)), 0);
	for (int round = 0; round < 5; round++)
		for (uint64_t b = 0; b < 20; b++) {
			a = req(0, b * 4096, 4096, round % 2);
			CU_ASSERT_EQUAL(hy_sim_full_request(f, &a), 1);
		}
	hy_sim_full_get_stats(f, &fs);
	CU_ASSERT_EQUAL(fs.accesses, 100);
	CU_ASSERT_EQUAL(fs.read_hits + fs.write_hits, 80);
	CU_ASSERT_EQUAL(fs.front_blocks, 32);
	CU_ASSERT_TRUE(fs.ssd_lines >= 223 && fs.ssd_lines <= 225);
	hy_sim_full_free(f);
	d = opendir(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (struct dirent *e; (e = readdir(d));)
		files += e->d_name[0] != '.';
	closedir(d);
	CU_ASSERT_EQUAL(files, 0);

	for (int reca = 0; reca < 2; reca++) {
		cfg.reca = reca;
		CU_ASSERT_EQUAL_FATAL(hy_sim_full_new(&cfg, &f, why, sizeof(why)), 0);
		for (uint64_t i = 0; i < 256; i++) { /* 32 MiB in 128 KiB reads */
			a = req(0, i << 17, 1 << 17, false);
			a.pid = 7;
			CU_ASSERT_EQUAL(hy_sim_full_request(f, &a), 1);
		}
		hy_sim_full_get_stats(f, &fs);
		CU_ASSERT_EQUAL(fs.accesses, 256 * 32);
		refused[reca] = fs.heat_refused;
		hy_sim_full_free(f);
	}
	/* without ReCA the stream's blocks pass through the front buffer (as
	 * many as it has room for between its evictions) and are judged cold
	 * there; once the process is an archival consumer its sequential reads
	 * bypass the cache altogether */
	CU_ASSERT_TRUE(refused[0] >= 1000);
	CU_ASSERT_TRUE(refused[1] < refused[0] / 4);
	hy_test_rmtree(dir);
	free(dir);

	cfg.capacity = 8;
	CU_ASSERT_EQUAL(hy_sim_full_new(&cfg, &f, why, sizeof(why)), -EINVAL);
}

int hy_test_add_replay(void)
{
	CU_pSuite s = CU_add_suite("replay", NULL, NULL);

	if (!s)
		return -1;
	if (!CU_add_test(s, "the conversion rule", test_rule) ||
	    !CU_add_test(s, "LRU against a reference", test_lru_reference) ||
	    !CU_add_test(s, "policies, footprint, bad capacities", test_policies_and_footprint) ||
	    !CU_add_test(s, "timing over device models", test_timed) ||
	    !CU_add_test(s, "open loop by timestamps", test_open_loop) ||
	    !CU_add_test(s, "BORG's layout on a repeated pattern", test_layout) ||
	    !CU_add_test(s, "PORE: dirty victims from open zones", test_pore) ||
	    !CU_add_test(s, "the whole cache (full policy)", test_full))
		return -1;
	return 0;
}
