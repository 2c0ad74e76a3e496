/* test_ring.c - the profiler's record ring: sizes, FIFO order, wrap-around,
 * drops when full, and many producers against one consumer. The threaded
 * tests synchronise only with joins, barriers and atomics, never with
 * sleeps, so they cannot pass or fail by luck of timing. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/ring.h"
#include "suites.h"

static size_t capacity_of(size_t capacity, size_t record_size)
{
	struct hy_ring *ring;
	struct hy_ring_stats st;

	if (hy_ring_new(capacity, record_size, &ring) != 0)
		return 0;
	hy_ring_get_stats(ring, &st);
	hy_ring_free(ring);
	return st.capacity;
}

static void test_ring_sizes(void)
{
	struct hy_ring *ring = NULL;

	CU_ASSERT_EQUAL(capacity_of(0, 8), 2);
	CU_ASSERT_EQUAL(capacity_of(1, 8), 2);
	CU_ASSERT_EQUAL(capacity_of(2, 8), 2);
	CU_ASSERT_EQUAL(capacity_of(3, 8), 4);
	CU_ASSERT_EQUAL(capacity_of(1024, 8), 1024);
	CU_ASSERT_EQUAL(capacity_of(1025, 8), 2048);
	CU_ASSERT_EQUAL(capacity_of(4, 1), 4);
	CU_ASSERT_EQUAL(capacity_of(4, HY_RING_MAX_RECORD), 4);
	CU_ASSERT_EQUAL(hy_ring_new(4, 0, &ring), -EINVAL);
	CU_ASSERT_EQUAL(hy_ring_new(4, HY_RING_MAX_RECORD + 1, &ring), -EINVAL);
	/* No size_t holds the rounded capacity or the slot array. */
	CU_ASSERT_EQUAL(hy_ring_new(SIZE_MAX, 8, &ring), -EINVAL);
	CU_ASSERT_EQUAL(hy_ring_new(SIZE_MAX / 4, 8, &ring), -EINVAL);
	CU_ASSERT_PTR_NULL(ring);
	hy_ring_free(NULL);
}

static void test_ring_fifo(void)
{
	struct hy_ring *ring;
	struct hy_ring_stats st;
	uint32_t in, out[20];

	CU_ASSERT_EQUAL_FATAL(hy_ring_new(16, sizeof(in), &ring), 0);
	for (in = 0; in < 10; in++)
		CU_ASSERT_TRUE(hy_ring_push(ring, &in));
	hy_ring_get_stats(ring, &st);
	CU_ASSERT_EQUAL(st.pushed, 10);
	CU_ASSERT_EQUAL(st.queued, 10);
	CU_ASSERT_EQUAL(hy_ring_pop(ring, out, 0), 0);
	CU_ASSERT_EQUAL(hy_ring_pop(ring, out, 3), 3);
	CU_ASSERT_EQUAL(hy_ring_pop(ring, out + 3, 20), 7);
	for (uint32_t i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(out[i], i);
	hy_ring_get_stats(ring, &st);
	CU_ASSERT_EQUAL(st.pushed, 10);
	CU_ASSERT_EQUAL(st.popped, 10);
	CU_ASSERT_EQUAL(st.dropped, 0);
	CU_ASSERT_EQUAL(st.queued, 0);
	hy_ring_free(ring);
}

static void test_ring_empty(void)
{
	struct hy_ring *ring;
	char rec[8] = "abcdefg", out[8];

	CU_ASSERT_EQUAL_FATAL(hy_ring_new(4, sizeof(rec), &ring), 0);
	CU_ASSERT_EQUAL(hy_ring_pop(ring, out, 4), 0);
	CU_ASSERT_TRUE(hy_ring_push(ring, rec));
	CU_ASSERT_EQUAL(hy_ring_pop(ring, out, 4), 1);
	CU_ASSERT_EQUAL(memcmp(out, rec, sizeof(rec)), 0);
	CU_ASSERT_EQUAL(hy_ring_pop(ring, out, 4), 0);
	hy_ring_free(ring);
}

/* Odd record size, so slots are padded: pop must copy out exactly
 * record_size bytes per record, packed, and nothing past them. */
static void test_ring_wraparound(void)
{
	enum { SIZE = 5, LAPS = 5000 };
	struct hy_ring *ring;
	struct hy_ring_stats st;
	unsigned char rec[SIZE], out[4 * SIZE + 1];
	uint32_t next_in = 0, next_out = 0;

	CU_ASSERT_EQUAL_FATAL(hy_ring_new(3, SIZE, &ring), 0);
	for (int lap = 0; lap < LAPS; lap++) {
		size_t want = (size_t)lap % 4 + 1, got;

		for (size_t i = 0; i < want; i++, next_in++) {
			memcpy(rec, &next_in, sizeof(next_in));
			rec[4] = (unsigned char)(next_in * 7);
			CU_ASSERT_TRUE(hy_ring_push(ring, rec));
		}
		memset(out, 0xa5, sizeof(out));
		got = hy_ring_pop(ring, out, 4);
		CU_ASSERT_EQUAL(got, want);
		CU_ASSERT_EQUAL(out[got * SIZE], 0xa5);
		for (size_t i = 0; i < got; i++, next_out++) {
			uint32_t v;

			memcpy(&v, out + i * SIZE, sizeof(v));
			CU_ASSERT_EQUAL(v, next_out);
			CU_ASSERT_EQUAL(out[i * SIZE + 4], (unsigned char)(next_out * 7));
		}
	}
	hy_ring_get_stats(ring, &st);
	CU_ASSERT_EQUAL(st.capacity, 4);
	CU_ASSERT_EQUAL(st.pushed, next_in);
	CU_ASSERT_EQUAL(st.popped, next_out);
	CU_ASSERT_EQUAL(st.dropped, 0);
	CU_ASSERT_EQUAL(st.queued, 0);
	hy_ring_free(ring);
}

static void test_ring_full(void)
{
	struct hy_ring *ring;
	struct hy_ring_stats st;
	uint64_t v, out[8];

	CU_ASSERT_EQUAL_FATAL(hy_ring_new(8, sizeof(v), &ring), 0);
	for (v = 0; v < 8; v++)
		CU_ASSERT_TRUE(hy_ring_push(ring, &v));
	for (int i = 0; i < 5; i++, v++)
		CU_ASSERT_FALSE(hy_ring_push(ring, &v));
	hy_ring_get_stats(ring, &st);
	CU_ASSERT_EQUAL(st.pushed, 8);
	CU_ASSERT_EQUAL(st.dropped, 5);
	CU_ASSERT_EQUAL(st.queued, 8);
	CU_ASSERT_EQUAL(st.popped, 0);

	/* One slot freed: exactly one more push fits. */
	CU_ASSERT_EQUAL(hy_ring_pop(ring, out, 1), 1);
	CU_ASSERT_EQUAL(out[0], 0);
	v = 100;
	CU_ASSERT_TRUE(hy_ring_push(ring, &v));
	CU_ASSERT_FALSE(hy_ring_push(ring, &v));
	CU_ASSERT_EQUAL(hy_ring_pop(ring, out, 8), 8);
	for (int i = 0; i < 7; i++)
		CU_ASSERT_EQUAL(out[i], (uint64_t)i + 1);
	CU_ASSERT_EQUAL(out[7], 100);
	hy_ring_get_stats(ring, &st);
	CU_ASSERT_EQUAL(st.pushed, 9);
	CU_ASSERT_EQUAL(st.popped, 9);
	CU_ASSERT_EQUAL(st.dropped, 6);
	CU_ASSERT_EQUAL(st.queued, 0);
	hy_ring_free(ring);
}

/* The threaded tests. */

enum { PRODUCERS = 4 };

/* 64 bytes, the size of a profiler record; the payload and checksum catch
 * a record torn by a consumer reading a slot before it was published. */
struct tagged {
	uint32_t producer;
	uint32_t pad;
	uint64_t seq;
	uint64_t payload[5];
	uint64_t checksum;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static uint64_t checksum(const struct tagged *t)
{
	uint64_t sum = mix(t->producer) ^ mix(t->seq + 0x9e3779b97f4a7c15ULL);

	for (int i = 0; i < 5; i++)
		sum = mix(sum + t->payload[i]);
	return sum;
}

static void make_tagged(struct tagged *t, uint32_t producer, uint64_t seq)
{
	memset(t, 0, sizeof(*t));
	t->producer = producer;
	t->seq = seq;
	for (int i = 0; i < 5; i++)
		t->payload[i] = mix(((uint64_t)producer << 40) ^ (seq << 3) ^ (uint64_t)i);
	t->checksum = checksum(t);
}

struct run {
	struct hy_ring *ring;
	uint64_t attempts;    /* per producer */
	uint64_t first_phase; /* attempts before the consumer may start */
	size_t batch;	      /* records per pop */
	bool slow;	      /* consumer yields between pops */
	pthread_barrier_t start;
	atomic_bool producers_done;

	/* Written by one thread each, read after the joins. */
	uint64_t accepted[PRODUCERS];
	uint64_t refused[PRODUCERS];
	uint64_t received[PRODUCERS];
	uint64_t bad_record; /* wrong producer id or checksum */
	uint64_t out_of_order;
};

struct producer_arg {
	struct run *run;
	uint32_t id;
};

static void produce(struct run *run, uint32_t id, uint64_t from, uint64_t to)
{
	struct tagged t;

	for (uint64_t seq = from; seq < to; seq++) {
		make_tagged(&t, id, seq);
		if (hy_ring_push(run->ring, &t))
			run->accepted[id]++;
		else
			run->refused[id]++;
	}
}

static void *producer_main(void *p)
{
	struct producer_arg *arg = p;
	struct run *run = arg->run;

	produce(run, arg->id, 0, run->first_phase);
	pthread_barrier_wait(&run->start);
	produce(run, arg->id, run->first_phase, run->attempts);
	return NULL;
}

/* Returns how many it popped. Per producer the sequence numbers must rise:
 * strictly by one when nothing may be dropped, otherwise by at least one. */
static size_t consume_batch(struct run *run, struct tagged *buf, uint64_t next[PRODUCERS],
			    bool exact)
{
	size_t n = hy_ring_pop(run->ring, buf, run->batch);

	for (size_t i = 0; i < n; i++) {
		const struct tagged *t = &buf[i];

		if (t->producer >= PRODUCERS || t->checksum != checksum(t)) {
			run->bad_record++;
			continue;
		}
		if (exact ? t->seq != next[t->producer] : t->seq < next[t->producer])
			run->out_of_order++;
		next[t->producer] = t->seq + 1;
		run->received[t->producer]++;
	}
	return n;
}

static void *consumer_main(void *p)
{
	struct run *run = p;
	struct tagged *buf = calloc(run->batch, sizeof(*buf));
	uint64_t next[PRODUCERS] = {0};
	bool exact = run->first_phase == 0 && !run->slow;

	if (!buf) {
		run->bad_record++;
		pthread_barrier_wait(&run->start);
		return NULL;
	}
	pthread_barrier_wait(&run->start);
	for (;;) {
		/* Read the flag before popping: if it was set, every push
		 * was published before it, so an empty pop means drained. */
		bool done = atomic_load_explicit(&run->producers_done, memory_order_acquire);

		if (consume_batch(run, buf, next, exact) == 0) {
			if (done)
				break;
			sched_yield();
		} else if (run->slow) {
			sched_yield();
		}
	}
	free(buf);
	return NULL;
}

static void run_threads(struct run *run)
{
	pthread_t producers[PRODUCERS], consumer;
	struct producer_arg args[PRODUCERS];

	CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&run->start, NULL, PRODUCERS + 1), 0);
	atomic_init(&run->producers_done, false);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&consumer, NULL, consumer_main, run), 0);
	for (uint32_t i = 0; i < PRODUCERS; i++) {
		args[i].run = run;
		args[i].id = i;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&producers[i], NULL, producer_main, &args[i]),
				      0);
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(producers[i], NULL);
	atomic_store_explicit(&run->producers_done, true, memory_order_release);
	pthread_join(consumer, NULL);
	pthread_barrier_destroy(&run->start);
}

/* Room for everything: nothing may be lost, duplicated or reordered. */
static void test_ring_concurrent_lossless(void)
{
	enum { N = 20000 };
	struct run *run = calloc(1, sizeof(*run));
	struct hy_ring_stats st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(run);
	CU_ASSERT_EQUAL_FATAL(hy_ring_new(PRODUCERS * N, sizeof(struct tagged), &run->ring), 0);
	run->attempts = N;
	run->batch = 64;
	run_threads(run);

	CU_ASSERT_EQUAL(run->bad_record, 0);
	CU_ASSERT_EQUAL(run->out_of_order, 0);
	for (int i = 0; i < PRODUCERS; i++) {
		CU_ASSERT_EQUAL(run->accepted[i], N);
		CU_ASSERT_EQUAL(run->refused[i], 0);
		CU_ASSERT_EQUAL(run->received[i], N);
	}
	hy_ring_get_stats(run->ring, &st);
	CU_ASSERT_EQUAL(st.pushed, (uint64_t)PRODUCERS * N);
	CU_ASSERT_EQUAL(st.popped, (uint64_t)PRODUCERS * N);
	CU_ASSERT_EQUAL(st.dropped, 0);
	CU_ASSERT_EQUAL(st.queued, 0);
	hy_ring_free(run->ring);
	free(run);
}

/* A small ring and a slow consumer. The consumer starts only after every
 * producer has made FIRST attempts, so at least PRODUCERS * FIRST - CAP
 * drops are certain whatever the scheduling; the rest race freely. */
static void test_ring_concurrent_drops(void)
{
	enum { N = 20000, FIRST = 16, CAP = 16 };
	struct run *run = calloc(1, sizeof(*run));
	struct hy_ring_stats st;
	uint64_t accepted = 0, refused = 0, received = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(run);
	CU_ASSERT_EQUAL_FATAL(hy_ring_new(CAP, sizeof(struct tagged), &run->ring), 0);
	run->attempts = N;
	run->first_phase = FIRST;
	run->batch = 3;
	run->slow = true;
	run_threads(run);

	CU_ASSERT_EQUAL(run->bad_record, 0);
	CU_ASSERT_EQUAL(run->out_of_order, 0);
	for (int i = 0; i < PRODUCERS; i++) {
		CU_ASSERT_EQUAL(run->accepted[i] + run->refused[i], N);
		CU_ASSERT_EQUAL(run->received[i], run->accepted[i]);
		accepted += run->accepted[i];
		refused += run->refused[i];
		received += run->received[i];
	}
	CU_ASSERT(refused >= PRODUCERS * FIRST - CAP);
	hy_ring_get_stats(run->ring, &st);
	CU_ASSERT_EQUAL(st.pushed + st.dropped, (uint64_t)PRODUCERS * N);
	CU_ASSERT_EQUAL(st.pushed, accepted);
	CU_ASSERT_EQUAL(st.dropped, refused);
	CU_ASSERT_EQUAL(st.popped, received);
	CU_ASSERT_EQUAL(st.popped, st.pushed);
	CU_ASSERT_EQUAL(st.queued, 0);
	hy_ring_free(run->ring);
	free(run);
}

int hy_test_add_ring(void)
{
	CU_pSuite s = CU_add_suite("ring", NULL, NULL);

	if (!s || !CU_add_test(s, "sizes round up, bad sizes refused", test_ring_sizes) ||
	    !CU_add_test(s, "FIFO order", test_ring_fifo) ||
	    !CU_add_test(s, "pop of an empty ring", test_ring_empty) ||
	    !CU_add_test(s, "wrap-around", test_ring_wraparound) ||
	    !CU_add_test(s, "full ring counts drops", test_ring_full) ||
	    !CU_add_test(s, "concurrent producers, nothing lost", test_ring_concurrent_lossless) ||
	    !CU_add_test(s, "concurrent producers, small ring", test_ring_concurrent_drops))
		return -1;
	return 0;
}
