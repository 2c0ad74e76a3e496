/*
 * classify.h - ReCA's request classifier (papers.md, ReCA; issue 6): each
 * request is compared with the last N requests of the same direction
 * (N = 64 by default, ReCA's history queue) and put in one of four classes:
 *
 *	sequential	it starts exactly where an earlier request of the same
 *			file ended (offset == earlier offset + length);
 *	overlapped	it shares at least one 4 KiB page with an earlier
 *			request of the same file; page-granular: two requests
 *			in one page count even when no byte is in both;
 *	strided		it starts in (end, end + gap] of an earlier request of
 *			the same file, gap = stride_gap;
 *	random		none of these.
 *
 * Precedence, when several apply: sequential, then overlapped, then
 * strided. Sequential first: a stream of small appends or reads (1 KiB
 * each, say) shares a page with its predecessor at almost every step, and
 * it is still the pattern the scheduler merges and the disk reads ahead;
 * calling it overlapped would hide the commonest sequential workload.
 * Overlapped before strided: a request that touches a page just touched
 * is re-reference (its data is likely cached, its priority is about
 * reuse), a stronger relation than "starts near an end"; in particular a
 * request a few hundred bytes after a sub-page request is in the same page
 * and is overlapped, not strided.
 *
 * The default gap, 128 KiB (HY_CLASSIFY_DEFAULT_GAP): ReCA defines strided
 * as "a small gap" that costs the disk head "a few sectors" and defeats
 * merging; its benchmark used 4 KiB requests with an 8 KiB gap, one point,
 * not a definition. Our requests come from FUSE, up to 128 KiB each
 * (FUSE's default max_pages of 32), and the kernel's default readahead
 * window is 128 KiB as well: a gap of at most one largest request is
 * skipped within a track and within the window a readahead would have
 * fetched, while a larger gap is a seek like a random request. 8 KiB
 * would call a reader that skips one 16 KiB record random. The gap is a
 * tunable (0 turns the class off).
 *
 * Directions: one history holds two, reads and writes, each with its own
 * last N requests; a read is classified against earlier reads only, a
 * write against earlier writes only (ReCA measures the classes per
 * direction). So the caller keeps one history per scope, not two.
 *
 * Requests: end = offset + length, saturated at UINT64_MAX; a request
 * touches the pages offset / 4096 .. (end - 1) / 4096. A zero-length
 * request is taken as one byte long (FUSE sends none; this keeps every
 * request a non-empty interval). Files relate only by equal file_id; the
 * caller picks the ids (inode numbers).
 *
 * Who calls it: ReCA's module (engine/reca.c, reca.h) on every read and
 * write, against the process's (or a trace's key's) history, and against
 * the mount's in batches the profiler's writer thread hands it
 * (hy_reca_classify_mount); the answer and the log's record store class
 * + 1 in a uint8 "klass", 0 meaning unclassified. fs/status.c names the
 * classes. The unit tests call it directly.
 *
 * Data structures, per direction: a ring of N slots (the eviction order)
 * with two indexes threaded through the same slots (nothing allocated
 * after init):
 *  - a hash of (file_id, end), chained through the slots both ways, for
 *    sequential: one expected O(1) lookup; unlink is O(1) even when many
 *    slots share a key (a block read over and over);
 *  - an interval treap of the slots' byte ranges, ordered by (file_id,
 *    first byte) with each subtree's largest (file_id, last byte), for
 *    the other two: overlapped is "some slot meets the request's
 *    page-rounded range", strided (asked only when neither of the others
 *    holds) is "some slot meets [offset - gap - 1, offset - 1]"; when no
 *    slot shares a page with the request, such a slot ends in
 *    [offset - gap, offset) (engine/classify.c gives the argument).
 * Treap priorities come from a per-history xorshift generator: depth is
 * O(log N) expected whatever the requests, as they do not choose it.
 *
 * Costs: hy_classify() is O(log N) expected: a hash lookup, at most one
 * tree walk (the latest ending slot that starts before the request's last
 * page answers both overlapped and strided), a tree insert and (when full)
 * a tree removal, each one path; no scan of the history, no allocation,
 * no system call. Measured at N = 64 (tests/unit/test_classify.c prints
 * it with HYTEST_BENCH=1): about 250 ns on the slow development VM, where
 * a plain scan of 64 entries takes about 120 ns: at N = 64 the scan is
 * cheaper, the tree pays off for deep histories (at N = 4096 the scan
 * would be ~7 us) and keeps a lock short whatever N is. Memory: 2 * N
 * slots of 72 bytes plus 2 hash buckets of 4 bytes per slot, allocated by
 * hy_classify_init(): 10 KiB at N = 64, 640 KiB at N = 4096.
 *
 * Memory ownership: the caller owns struct hy_classify_history (embedded in
 * its per-process state or the mount's) and frees its slots with
 * hy_classify_free().
 *
 * Locks: none. One history is single-threaded: the caller serializes.
 * A per-process history lives in ReCA's process table under its stripe
 * lock; the mount-wide one behind ReCA's mount_lock, held for a batch of
 * the profiler's writer's calls. Different histories are
 * independent.
 */
#ifndef HYBRIDFS_CLASSIFY_H
#define HYBRIDFS_CLASSIFY_H

#include <stdbool.h>
#include <stdint.h>

#define HY_CLASSIFY_PAGE_SHIFT	  12 /* the 4 KiB page of "overlapped" */
#define HY_CLASSIFY_MIN_DEPTH	  1u
#define HY_CLASSIFY_MAX_DEPTH	  4096u
#define HY_CLASSIFY_DEFAULT_DEPTH 64u			/* ReCA's history queue */
#define HY_CLASSIFY_DEFAULT_GAP	  (UINT64_C(128) << 10) /* see above */

enum hy_request_class {
	HY_CLASS_SEQUENTIAL = 0,
	HY_CLASS_STRIDED = 1,
	HY_CLASS_OVERLAPPED = 2,
	HY_CLASS_RANDOM = 3,
};
#define HY_CLASS_COUNT 4

struct hy_classify_config {
	unsigned depth;	     /* requests kept per direction, 1..4096 */
	uint64_t stride_gap; /* bytes; strided: offset in (end, end + gap] */
};

struct hy_classify_node; /* private to engine/classify.c */

struct hy_classify_dir {
	struct hy_classify_node *nodes; /* depth slots, the ring */
	uint32_t *buckets;		/* hash of (file_id, end): mask + 1 chains */
	uint32_t mask;
	unsigned count; /* slots in use */
	unsigned head;	/* next slot to fill: the oldest when full */
	uint32_t root;	/* interval treap by (file_id, first byte) */
};

/* One history: its fields are private; all zero is a freed history. */
struct hy_classify_history {
	unsigned depth;
	uint64_t stride_gap;
	uint32_t rng;		       /* treap priorities */
	struct hy_classify_dir dir[2]; /* [0] reads, [1] writes */
};

/* The defaults: depth 64, gap 128 KiB. */
void hy_classify_config_init(struct hy_classify_config *cfg);

/* An empty history with @cfg (NULL: the defaults): 0, -EINVAL for a depth
 * outside 1..4096, -ENOMEM. On failure @h is left freed (all zero). */
int hy_classify_init(struct hy_classify_history *h, const struct hy_classify_config *cfg);

/* Frees the slots and zeroes @h; NULL and a freed history are fine. */
void hy_classify_free(struct hy_classify_history *h);

/* The class of the request against the earlier requests of its direction,
 * then adds it to the history (the oldest of that direction leaves when
 * it is full). O(log depth) expected; never fails. */
enum hy_request_class hy_classify(struct hy_classify_history *h, uint64_t file_id, uint64_t offset,
				  uint32_t length, bool write);

/* "sequential", "strided", "overlapped", "random"; "unknown" otherwise. */
const char *hy_classify_name(enum hy_request_class cls);

#endif
