/* test_reca.c - ReCA's module (reca.h) on its own: the hint of every row,
 * class and direction is what the row says (the mapping that was the
 * cache's hy_cache_hint_from()); the keyed
 * modes give the classes and categories of a history per key and a window
 * per key (the simulators' keyings: kept for the run, or 4096 hashed slots
 * whose windows start again when another key takes them); the process
 * table classifies, hints only with a table in force, says nothing with
 * reca=off, and takes back a short request's bytes. (Its daemon's use,
 * the class in the access log, grouping and metadata priority: the
 * profiler suite.) */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/cache.h"
#include "hybridfs/reca.h"
#include "suites.h"

static bool same_hint(const struct hy_cache_hint *a, const struct hy_cache_hint *b)
{
	return a->write == b->write && a->admit == b->admit && a->evict == b->evict &&
	       a->line_size == b->line_size && a->seq_cutoff == b->seq_cutoff;
}

static void test_hint_from(void)
{
	static const int write_policy[] = {
		[HY_WORKLOAD_WRITE_MOUNT] = -1,
		[HY_WORKLOAD_WRITE_BACK] = HY_CACHE_WRITE_BACK,
		[HY_WORKLOAD_WRITE_THROUGH] = HY_CACHE_WRITE_THROUGH,
		[HY_WORKLOAD_WRITE_AROUND] = HY_CACHE_WRITE_AROUND,
	};
	struct hy_workload_policy_table t[2];
	char why[256];

	hy_workload_policy_defaults(&t[0]);
	t[1] = t[0];
	CU_ASSERT_EQUAL_FATAL(
		hy_workload_policy_set(&t[1], "random-consumer.line_size=64K", why, sizeof(why)),
		0);
	CU_ASSERT_EQUAL_FATAL(
		hy_workload_policy_set(&t[1], "archival-consumer.write=back", why, sizeof(why)), 0);
	for (int k = 0; k < 2; k++)
		for (int c = 0; c < HY_CATEGORY_COUNT; c++)
			for (int w = 0; w < 2; w++)
				for (int cls = -1; cls <= HY_CLASS_COUNT; cls++) {
					const struct hy_workload_policy *row =
						hy_workload_policy_row(&t[k], (enum hy_category)c);
					struct hy_cache_hint a;

					memset(&a, 0, sizeof(a));
					hy_reca_hint_from(&t[k], (enum hy_category)c, w, cls, &a);
					CU_ASSERT_EQUAL(a.write, write_policy[row->write]);
					CU_ASSERT_EQUAL(
						a.admit,
						row->admit[w][cls < 0 || cls >= HY_CLASS_COUNT
								      ? HY_CLASS_RANDOM
								      : cls]);
					CU_ASSERT_EQUAL(a.evict, row->evict);
					CU_ASSERT_EQUAL(a.line_size, row->line_size);
					CU_ASSERT_EQUAL(a.seq_cutoff, row->seq_cutoff);
				}
}

/* The requests of a small two-device, three-process trace. */
struct step {
	uint64_t device, pid;
	uint64_t offset;
	uint32_t length;
	bool write;
};

static size_t make_steps(struct step *s, size_t max)
{
	size_t n = 0;

	for (uint64_t i = 0; i < 400 && n + 3 <= max; i++) {
		s[n++] = (struct step){0, 1, i << 17, 1 << 17, false};		   /* a stream */
		s[n++] = (struct step){1, 2, (i * 7919 % 997) << 12, 4096, i & 1}; /* random */
		s[n++] = (struct step){0, 3, (i % 8) << 12, 4096, true};	   /* overlapped */
	}
	return n;
}

static struct hy_reca_request request_of(const struct step *s)
{
	return (struct hy_reca_request){
		.history_key = s->device,
		.process_key = (UINT64_C(1) << 62) | s->pid,
		.file_id = s->device,
		.offset = s->offset,
		.length = s->length,
		.write = s->write,
		.file_size = s->offset + s->length,
	};
}

static void test_keyed(void)
{
	static struct step steps[1200];
	size_t n = make_steps(steps, 1200);
	struct hy_workload_policy_table t;
	struct hy_classify_history h[2];
	struct hy_category_state w[4];
	struct hy_reca *r;

	hy_workload_policy_defaults(&t);
	CU_ASSERT_EQUAL_FATAL(hy_reca_new(&(struct hy_reca_config){.keying = HY_RECA_KEYS}, &r), 0);
	CU_ASSERT_EQUAL_FATAL(hy_reca_set_policy(r, &t), 0);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(hy_classify_init(&h[i], NULL), 0);
	for (int i = 0; i < 4; i++)
		hy_category_init(&w[i], NULL);
	for (size_t i = 0; i < n; i++) {
		struct hy_reca_request req = request_of(&steps[i]);
		struct hy_reca_answer a;
		struct hy_cache_hint want;
		enum hy_request_class cls;
		enum hy_category cat;

		CU_ASSERT_EQUAL_FATAL(hy_reca_request(r, &req, &a), 0);
		cls = hy_classify(&h[steps[i].device], steps[i].device, steps[i].offset,
				  steps[i].length, steps[i].write);
		cat = hy_category_observe(&w[steps[i].pid], cls, steps[i].write, steps[i].length,
					  steps[i].offset + steps[i].length);
		CU_ASSERT_EQUAL(a.klass, cls + 1);
		CU_ASSERT_EQUAL(a.category, cat);
		CU_ASSERT_TRUE(a.hinted);
		hy_reca_hint_from(&t, cat, steps[i].write, (int)cls, &want);
		CU_ASSERT_TRUE(same_hint(&a.hint, &want));
	}
	/* the stream is archival by now, the random mix not */
	{
		struct hy_reca_request req = request_of(&steps[n - 3]);
		struct hy_reca_answer a;

		hy_reca_request(r, &req, &a);
		CU_ASSERT_EQUAL(a.category, HY_CATEGORY_ARCHIVAL_CONSUMER);
	}
	for (int i = 0; i < 2; i++)
		hy_classify_free(&h[i]);
	hy_reca_free(r);
}

/* HY_RECA_KEYS_HASHED: a key that lands on another's window starts it
 * again; a history is shared by the keys that meet modulo 4096. */
static void test_keyed_hashed(void)
{
	struct hy_reca *r;
	struct hy_reca_request req = {.history_key = 5, .file_id = 5, .length = 1 << 17};
	struct hy_reca_answer a;
	uint64_t k1 = 7, k2 = 0;

	CU_ASSERT_EQUAL_FATAL(
		hy_reca_new(&(struct hy_reca_config){.keying = HY_RECA_KEYS_HASHED}, &r), 0);
	/* another key whose slot is k1's (the 12 high bits of the product) */
	for (uint64_t k = k1 + 1; !k2; k++)
		if ((k * UINT64_C(0x9e3779b97f4a7c15)) >> 52 ==
		    (k1 * UINT64_C(0x9e3779b97f4a7c15)) >> 52)
			k2 = k;
	req.process_key = k1;
	for (uint64_t i = 0; i < 300; i++) {
		req.offset = i << 17;
		req.file_size = req.offset + req.length;
		CU_ASSERT_EQUAL(hy_reca_request(r, &req, &a), 0);
	}
	CU_ASSERT_EQUAL(a.category, HY_CATEGORY_ARCHIVAL_CONSUMER);
	CU_ASSERT_FALSE(a.hinted); /* no table in force */
	req.process_key = k2;
	hy_reca_request(r, &req, &a);
	CU_ASSERT_EQUAL(a.category, HY_CATEGORY_UNKNOWN);  /* its window is new */
	CU_ASSERT_EQUAL(a.klass, HY_CLASS_SEQUENTIAL + 1); /* the history is the device's */
	req.process_key = k1;
	hy_reca_request(r, &req, &a);
	CU_ASSERT_EQUAL(a.category, HY_CATEGORY_UNKNOWN); /* k1's was taken */
	hy_reca_free(r);
}

static void test_processes(void)
{
	struct hy_workload_policy_table t;
	struct hy_reca_process top[4];
	struct hy_reca *r;
	struct hy_reca_answer a;
	struct hy_reca_request req = {.pid = getpid(), .file_id = 9, .length = 4096};
	uint32_t id;

	for (int off = 0; off < 2; off++) {
		CU_ASSERT_EQUAL_FATAL(
			hy_reca_new(&(struct hy_reca_config){HY_RECA_PROCESSES, off}, &r), 0);
		hy_reca_set_process_ids(r, 100, NULL, NULL);
		id = hy_reca_process(r, getpid());
		CU_ASSERT_EQUAL(id, 100);
		req.file_size = req.length;
		CU_ASSERT_EQUAL(hy_reca_request(r, &req, &a), 0);
		CU_ASSERT_EQUAL(a.process_id, id);
		CU_ASSERT_EQUAL(a.klass, off ? 0 : HY_CLASS_RANDOM + 1);
		CU_ASSERT_FALSE(a.hinted); /* no table yet */
		hy_workload_policy_defaults(&t);
		CU_ASSERT_EQUAL_FATAL(hy_reca_set_policy(r, &t), 0);
		CU_ASSERT_EQUAL(hy_reca_request(r, &req, &a), 0);
		CU_ASSERT_EQUAL(a.hinted, !off); /* reca=off: never */
		CU_ASSERT_EQUAL(a.category, HY_CATEGORY_UNKNOWN);
		hy_reca_uncount(r, getpid(), id, false, 1000); /* the second was short */
		CU_ASSERT_EQUAL_FATAL(hy_reca_top(r, top, 4), 1);
		CU_ASSERT_EQUAL(top[0].reads, 2);
		CU_ASSERT_EQUAL(top[0].bytes_read, 2 * 4096 - 1000);
		{
			uint64_t classified = 0;

			for (int c = 0; c < HY_CLASS_COUNT; c++)
				classified += top[0].classes[0][c];
			CU_ASSERT_EQUAL(classified, off ? 0 : 2);
		}
		hy_reca_free(r);
	}
}

int hy_test_add_reca(void)
{
	CU_pSuite s = CU_add_suite("reca", NULL, NULL);

	if (!s || !CU_add_test(s, "the hint of every row is the cache's", test_hint_from) ||
	    !CU_add_test(s, "keyed: a history and a window per key", test_keyed) ||
	    !CU_add_test(s, "keyed, hashed: slots taken over start again", test_keyed_hashed) ||
	    !CU_add_test(s, "processes: classes, hints, reca=off, short requests", test_processes))
		return -1;
	return 0;
}
