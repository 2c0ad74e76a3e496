/* ring.c - see include/hybridfs/ring.h. */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/ring.h"

/* Not queried at run time: a wrong guess only costs speed, and 64 bytes is
 * right for the x86-64 and arm64 machines hybridfs runs on. */
#define HY_CACHE_LINE 64

/* Each slot's sequence says whose turn it is: equal to the position a
 * producer may claim (empty), one past it (published, the consumer's turn),
 * or a lap ahead (consumed, free for the next lap). */
struct slot {
	atomic_size_t seq;
	unsigned char data[];
};

/* Producers hammer enqueue_pos, the consumer owns dequeue_pos, everyone
 * reads the constants, and dropped is hot only while the ring is full: each
 * gets its own cache line so that one party's writes do not evict the line
 * another is reading. */
struct hy_ring {
	alignas(HY_CACHE_LINE) unsigned char *slots;
	size_t mask;
	size_t record_size;
	size_t stride;

	/* Doubles as the count of accepted pushes: a claimed slot is always
	 * filled and published, so a successful CAS is an accepted push. */
	alignas(HY_CACHE_LINE) atomic_size_t enqueue_pos;

	/* Only the consumer writes it; atomic because stats read it as the
	 * count of popped records from any thread. */
	alignas(HY_CACHE_LINE) atomic_size_t dequeue_pos;

	alignas(HY_CACHE_LINE) atomic_uint_least64_t dropped;
};

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static struct slot *slot_at(const struct hy_ring *ring, size_t pos)
{
	return (struct slot *)(void *)(ring->slots + (pos & ring->mask) * ring->stride);
}

int hy_ring_new(size_t capacity, size_t record_size, struct hy_ring **out)
{
	struct hy_ring *ring;
	size_t slots = 2, stride, bytes;

	if (record_size == 0 || record_size > HY_RING_MAX_RECORD)
		return -EINVAL;
	/* A capacity no size_t can hold after rounding is a bad size, not a
	 * shortage of memory: no machine could ever satisfy it. */
	while (slots < capacity) {
		if (slots > SIZE_MAX / 2)
			return -EINVAL;
		slots *= 2;
	}
	/* Records land at max_align_t boundaries so the next slot's sequence
	 * is aligned and a record could be read in place if ever needed. */
	stride = round_up(offsetof(struct slot, data) + record_size, alignof(max_align_t));
	if (slots > (SIZE_MAX - HY_CACHE_LINE) / stride)
		return -EINVAL;
	/* aligned_alloc wants a multiple of the alignment. */
	bytes = round_up(slots * stride, HY_CACHE_LINE);

	ring = aligned_alloc(HY_CACHE_LINE, round_up(sizeof(*ring), HY_CACHE_LINE));
	if (!ring)
		return -ENOMEM;
	memset(ring, 0, sizeof(*ring));
	ring->slots = aligned_alloc(HY_CACHE_LINE, bytes);
	if (!ring->slots) {
		free(ring);
		return -ENOMEM;
	}
	ring->mask = slots - 1;
	ring->record_size = record_size;
	ring->stride = stride;
	atomic_init(&ring->enqueue_pos, 0);
	atomic_init(&ring->dequeue_pos, 0);
	atomic_init(&ring->dropped, 0);
	for (size_t i = 0; i < slots; i++)
		atomic_init(&slot_at(ring, i)->seq, i);
	*out = ring;
	return 0;
}

void hy_ring_free(struct hy_ring *ring)
{
	if (!ring)
		return;
	free(ring->slots);
	free(ring);
}

bool hy_ring_push(struct hy_ring *ring, const void *record)
{
	size_t pos = atomic_load_explicit(&ring->enqueue_pos, memory_order_relaxed);
	struct slot *slot;

	for (;;) {
		size_t seq;
		intptr_t lag;

		slot = slot_at(ring, pos);
		/* Acquire pairs with the consumer's release: the slot's old
		 * record must be copied out before we overwrite it. */
		seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
		/* Signed difference so that the test survives the positions
		 * wrapping around size_t. */
		lag = (intptr_t)(seq - pos);
		if (lag == 0) {
			/* Relaxed is enough: the slot's sequence, not the
			 * position, carries the data to the consumer. */
			if (atomic_compare_exchange_weak_explicit(&ring->enqueue_pos, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
			/* A failed CAS reloaded pos; try that slot. */
		} else if (lag < 0) {
			/* The slot still holds last lap's record: the ring is
			 * full, and waiting for the consumer would block I/O. */
			atomic_fetch_add_explicit(&ring->dropped, 1, memory_order_relaxed);
			return false;
		} else {
			/* Another producer claimed this slot since we read
			 * pos; catch up. */
			pos = atomic_load_explicit(&ring->enqueue_pos, memory_order_relaxed);
		}
	}
	memcpy(slot->data, record, ring->record_size);
	atomic_store_explicit(&slot->seq, pos + 1, memory_order_release);
	return true;
}

size_t hy_ring_pop(struct hy_ring *ring, void *records, size_t max)
{
	/* Relaxed: only this thread (the single consumer) ever stores it. */
	size_t pos = atomic_load_explicit(&ring->dequeue_pos, memory_order_relaxed);
	unsigned char *dst = records;
	size_t n;

	for (n = 0; n < max; n++, pos++) {
		struct slot *slot = slot_at(ring, pos);

		/* With one consumer the sequence is either pos (not yet
		 * published: stop, even if later slots are ready, to keep
		 * FIFO order) or pos + 1 (ready). */
		if (atomic_load_explicit(&slot->seq, memory_order_acquire) != pos + 1)
			break;
		memcpy(dst + n * ring->record_size, slot->data, ring->record_size);
		/* Hand the slot to the producer of the next lap, after the
		 * copy (release). */
		atomic_store_explicit(&slot->seq, pos + ring->mask + 1, memory_order_release);
	}
	/* Once per batch: producers never read dequeue_pos, only stats do.
	 * Release so that a stats reader who sees these pops also sees the
	 * pushes they consumed (queued never goes negative). */
	if (n)
		atomic_store_explicit(&ring->dequeue_pos, pos, memory_order_release);
	return n;
}

void hy_ring_get_stats(const struct hy_ring *ring, struct hy_ring_stats *out)
{
	/* Popped first, with acquire: every push it counts then shows in
	 * enqueue_pos, so pushed >= popped in the snapshot. */
	size_t popped = atomic_load_explicit(&ring->dequeue_pos, memory_order_acquire);
	size_t pushed = atomic_load_explicit(&ring->enqueue_pos, memory_order_relaxed);

	out->pushed = pushed;
	out->popped = popped;
	out->dropped = atomic_load_explicit(&ring->dropped, memory_order_relaxed);
	out->queued = pushed - popped;
	out->capacity = ring->mask + 1;
}
