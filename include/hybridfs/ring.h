/*
 * ring.h - a bounded queue of fixed-size records: many producers, one
 * consumer, no locks, never blocks a producer.
 *
 * What it is for: the profiler's I/O path. Every FUSE worker thread pushes
 * one record per read or write; the profiler's writer thread pops them in
 * batches into SQLite. When the writer lags and the ring is full, a push
 * fails at once and the record is counted as dropped (DESIGN.md invariant
 * 5: the profiler never blocks I/O).
 *
 * How: Dmitry Vyukov's bounded MPMC array queue, used with one consumer.
 * Each slot carries a sequence number; a producer claims a slot with one
 * compare-and-swap on the enqueue position and publishes it by storing the
 * slot's sequence (release); the consumer reads slots in order while their
 * sequence says they are published (acquire). Below capacity nothing is
 * lost; above it, exactly the pushes that found the ring full are dropped.
 *
 * Who calls it: fs/profiler.c (push from workers, pop from the writer);
 * the unit tests; bench/profiler.
 *
 * Memory: hy_ring_new() allocates the ring and its slots, hy_ring_free()
 * releases them. Records are copied in and out; the ring keeps no pointers
 * of the caller's.
 *
 * Locks: none. hy_ring_push() may be called from any number of threads at
 * once; hy_ring_pop() from one thread at a time. hy_ring_get_stats() from
 * any thread (the figures are a consistent-enough snapshot for display).
 */
#ifndef HYBRIDFS_RING_H
#define HYBRIDFS_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_RING_MAX_RECORD 256 /* bytes; larger records are refused by hy_ring_new() */

struct hy_ring;

struct hy_ring_stats {
	uint64_t pushed;  /* records accepted */
	uint64_t popped;  /* records handed to the consumer */
	uint64_t dropped; /* pushes refused because the ring was full */
	size_t queued;	  /* pushed - popped, at the time of the call */
	size_t capacity;  /* slots */
};

/* Makes a ring of at least @capacity slots (rounded up to a power of two,
 * at least 2) of @record_size bytes (1..HY_RING_MAX_RECORD). Returns 0,
 * -EINVAL for a bad size, or -ENOMEM. */
int hy_ring_new(size_t capacity, size_t record_size, struct hy_ring **out);
void hy_ring_free(struct hy_ring *ring);

/* Copies one record in. Returns true, or false (and counts a drop) when the
 * ring is full. Never blocks, never allocates. */
bool hy_ring_push(struct hy_ring *ring, const void *record);

/* Copies up to @max records out into @records (an array of record_size
 * byte records), oldest first. Returns how many. Consumer only. */
size_t hy_ring_pop(struct hy_ring *ring, void *records, size_t max);

void hy_ring_get_stats(const struct hy_ring *ring, struct hy_ring_stats *out);

#endif
