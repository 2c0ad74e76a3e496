/*
 * policy.h - replacement policies of the SSD cache store: which cached line
 * goes next, and (for LARC) whether a missed block is cached at all.
 *
 * What it is for: the SSD store owns its lines (0..capacity-1) and their
 * data; this module only orders them. The store tells it when a line starts
 * to hold a block (hy_policy_insert), is hit (hy_policy_hit) or is
 * invalidated (hy_policy_remove); asks it for a victim when it needs a line
 * (hy_policy_victim, which does not remove the line: the store removes it
 * once the eviction is done); calls hy_policy_age() once a period; and, on
 * every miss, asks hy_policy_admit() whether the block may enter at all.
 * One API, four kinds, so that the simulator compares them in one engine:
 *
 * HY_POLICY_LRU3 (FusionCache's improved LRU, the "three queues"):
 *   three LRU queues, cold, warm and hot. A new line enters cold (the
 *   simulator and a store without heat figures), or the queue the store
 *   names with hy_policy_insert_at(): FusionCache sorts the blocks coming
 *   from the front buffer into the three queues by their predicted heat. A
 *   hit moves a line one queue up (cold->warm->hot; a hot line stays hot),
 *   to that queue's MRU end. hy_policy_age() moves every warm and hot line
 *   not touched (inserted or hit) since the previous age call one queue
 *   down, to the MRU end of the lower queue, in LRU order (as the Multi-Queue
 *   policy demotes: a demoted line gets a period's grace in its new queue).
 *   The first age call only starts the first period: nothing is idle yet.
 *   Victims come only from cold; when cold is empty, up to `window` lines
 *   are first demoted into it from the LRU end of warm (of hot when warm is
 *   empty too), so a victim exists whenever a line is in use.
 * HY_POLICY_LRU: one LRU queue; age is a no-op.
 * HY_POLICY_LARC (Huang et al., "Improving flash-based disk cache with Lazy
 *   Adaptive Replacement", MSST 2013; ReCA's baseline): one LRU queue Q of
 *   the cached lines plus a ghost queue Qr of recently missed keys, of size
 *   Cr (a real number; C is the capacity). Cr starts at 0.1 C.
 *     hit (hy_policy_hit):   Cr = max(0.1 C, Cr - C / (C - Cr)); line to MRU.
 *     miss (hy_policy_admit): Cr = min(0.9 C, Cr + C / Cr); then
 *       key in Qr: removed from Qr, admitted (returns true; the store takes
 *         a victim if it is full and calls hy_policy_insert);
 *       else: key pushed at the MRU end of Qr, not admitted (false);
 *       then LRU keys leave Qr while |Qr| > Cr.
 *   The paper's pseudocode removes one key, and only when it pushes one:
 *   read literally, Qr would never shrink (each miss adds a key and takes
 *   at most one away), so a lower Cr would change nothing. The trim above
 *   keeps |Qr| <= Cr after every miss, which is the paper's stated intent
 *   ("the size of Qr is Cr"); it is still lazy, done at misses only.
 *   Every first miss is refused, even while the cache has free lines (as in
 *   the paper). The store must call hy_policy_admit() only for keys that
 *   are not cached.
 * HY_POLICY_FREQ (the access-frequency baseline of ReCA): evicts the line
 *   with the fewest accesses, the least recently used of those first. The
 *   classic O(1) LFU: one list of the lines sorted by (count, recency), and
 *   for each count the last line holding it, in a table indexed by count.
 *   Counts start at 1 on insert and saturate at HY_POLICY_FREQ_MAX (a
 *   saturated line still moves to the MRU end of its count). hy_policy_age()
 *   halves every count, rounding down but never below 1; lines whose counts
 *   merge keep their previous order (lower former count first).
 *
 * Two-step eviction (OmniCache) and busy lines, for every kind:
 * hy_policy_victim() looks at most `window` lines (K, default 64) from the
 * LRU end of the eviction queue (cold; the only queue; the least frequent).
 * Lines for which @evictable says false (dirty lines being cleaned, lines
 * in I/O) are skipped. The first line in that order for which @first_choice
 * says true (e.g. "its file has no open handle or was idle for 30 s") is
 * the victim; when there is none, the least recently used evictable line
 * of the window is; when no line of the window is evictable, -EAGAIN. So a
 * victim search costs at most K steps and 2 K predicate calls.
 *
 * Costs: insert, hit, remove, admit are O(1) (admit: expected O(1), an
 * open-addressing hash); victim is O(K). Age: LRU3 moves only the idle lines
 * (O(lines demoted): at most two demotions per insert or hit, so amortized
 * O(1)); FREQ walks every line in use (O(lines)); no-op otherwise.
 *
 * Memory, allocated once by hy_policy_new() (no allocation afterwards):
 *   LRU, LRU3: 8 bytes per line (next, a uint32 index; prev, a 30-bit
 *     index with the line's queue in its top two bits: issue 19, 9 bytes
 *     before, when the queue had a byte of its own);
 *   FREQ: 10 bytes per line (prev, next, a uint16 count) plus a table of
 *     (HY_POLICY_FREQ_MAX + 1) uint32 group tails (256 KiB);
 *   LARC: 8 bytes per line, plus 16 bytes per ghost slot (key, prev, next)
 *     for floor(0.9 C) + 1 slots, plus a hash of uint32 slots, a power of
 *     two at least twice the ghost slots: about 30-37 bytes per line.
 *   hy_policy_get_stats() reports the exact figure.
 *
 * Who calls it: the cache's SSD lines (cache/lines.c: insert, hit,
 * victim, age; cache/cache_io.c: admission; cache/cache.c: new, free),
 * in the daemon and in the simulator's whole cache through the same code;
 * the simulator's replay (sim/replay.c) directly; the mount option parser
 * (lib/options.c) and fs/cache_glue.c, ctl/simulate_cmd.c and
 * ctl/tune_cmd.c (the kind's names); the unit tests.
 *
 * Memory ownership: hy_policy_new() allocates the policy, hy_policy_free()
 * releases it (NULL is fine). Predicates and their @arg stay the caller's.
 *
 * Locks: none. The caller serializes every call on one policy (the store's
 * lock); predicates are called with whatever the caller holds.
 */
#ifndef HYBRIDFS_POLICY_H
#define HYBRIDFS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_POLICY_MAX_LINES	 ((1u << 30) - 1) /* lines per policy: 30-bit links */
#define HY_POLICY_DEFAULT_WINDOW 64		  /* K of the victim search */
#define HY_POLICY_MAX_WINDOW	 65536
#define HY_POLICY_FREQ_MAX	 65535 /* FREQ counts saturate here */
#define HY_POLICY_NONE		 UINT32_MAX

enum hy_policy_kind {
	HY_POLICY_LRU3, /* "lru3": hot, warm, cold; the default */
	HY_POLICY_LRU,	/* "lru" */
	HY_POLICY_LARC, /* "larc" */
	HY_POLICY_FREQ, /* "freq" */
	HY_POLICY_KINDS
};

/* The queues of LRU3. The one-queue kinds (LRU, LARC, FREQ) keep every
 * line in HY_POLICY_COLD, their eviction queue. */
enum hy_policy_queue { HY_POLICY_COLD, HY_POLICY_WARM, HY_POLICY_HOT, HY_POLICY_QUEUES };

struct hy_policy;

struct hy_policy_config {
	uint32_t window; /* K: lines a victim search looks at, 1..HY_POLICY_MAX_WINDOW */
};

struct hy_policy_stats {
	enum hy_policy_kind kind;
	uint32_t capacity;
	uint32_t window;
	uint32_t in_use;		      /* lines holding a block */
	uint32_t queue_len[HY_POLICY_QUEUES]; /* lines per queue */
	uint32_t ghost_len;		      /* LARC: keys in the ghost queue */
	double ghost_size;		      /* LARC: Cr, the ghost queue's size */
	uint64_t inserts, hits, removes;
	uint64_t promotions;	    /* LRU3: moves one queue up by a hit */
	uint64_t demotions;	    /* LRU3: moves down by age or refill */
	uint64_t ages;		    /* hy_policy_age() calls */
	uint64_t admitted, refused; /* hy_policy_admit() answers */
	uint64_t ghost_hits;	    /* LARC: admissions by a ghost hit */
	uint64_t victims_first;	    /* victims that were a first choice */
	uint64_t victims_lru;	    /* victims taken by recency */
	uint64_t victims_again;	    /* searches that answered -EAGAIN */
	uint64_t skipped;	    /* lines skipped as not evictable */
	size_t bytes;		    /* memory the policy holds */
};

/* A predicate on a line, given the @arg passed to hy_policy_victim(). */
typedef bool (*hy_policy_pred)(uint32_t line, void *arg);

/* Fills @cfg with the defaults (window HY_POLICY_DEFAULT_WINDOW). */
void hy_policy_config_init(struct hy_policy_config *cfg);

/* Makes a policy of @kind over lines 0..@capacity-1, all free. @cfg may be
 * NULL (defaults). Returns 0 and *@out, or -EINVAL (bad kind, capacity,
 * window; the text in @why names it) or -ENOMEM. */
int hy_policy_new(enum hy_policy_kind kind, uint32_t capacity, const struct hy_policy_config *cfg,
		  struct hy_policy **out, char *why, size_t why_size);
void hy_policy_free(struct hy_policy *p);

/* "lru3", "lru", "larc", "freq"; NULL for a kind out of range. */
const char *hy_policy_kind_name(enum hy_policy_kind kind);
/* Parses a kind's name (the mount option's value). Returns 0, or -EINVAL
 * with a message that quotes @name and lists the names. */
int hy_policy_kind_parse(const char *name, enum hy_policy_kind *out, char *why, size_t why_size);

/* @line now holds a block: it enters at the MRU end of cold (LRU3), of the
 * queue (LRU, LARC), or of count 1 (FREQ). Returns 0, -ERANGE (line out of
 * range) or -EEXIST (already in use). */
int hy_policy_insert(struct hy_policy *p, uint32_t line);
/* As hy_policy_insert(), into queue @q for LRU3 (the other kinds ignore @q).
 * -EINVAL for a @q out of range. */
int hy_policy_insert_at(struct hy_policy *p, uint32_t line, enum hy_policy_queue q);
/* @line was hit. Returns 0, -ERANGE, or -ENOENT (not in use). */
int hy_policy_hit(struct hy_policy *p, uint32_t line);
/* @line no longer holds a block (evicted or invalidated). 0, -ERANGE, -ENOENT. */
int hy_policy_remove(struct hy_policy *p, uint32_t line);

/* Chooses a victim as the top comment says. @first_choice NULL: no first
 * step (the LRU evictable line); @evictable NULL: every line is. The
 * predicates must not call into the policy. Returns 0 and *@line
 * (still in use: the caller removes it after the eviction), -ENOENT when no
 * line is in use, or -EAGAIN when no line of the window is evictable. LRU3
 * may demote lines into an empty cold queue first. */
int hy_policy_victim(struct hy_policy *p, hy_policy_pred first_choice, hy_policy_pred evictable,
		     void *arg, uint32_t *line);

/* Once a period: LRU3 demotes idle lines, FREQ halves counts. */
void hy_policy_age(struct hy_policy *p);

/* A block of key @key missed: may it enter the cache? LARC answers and
 * adapts as the top comment says; the other kinds always say true. */
bool hy_policy_admit(struct hy_policy *p, uint64_t key);

void hy_policy_get_stats(const struct hy_policy *p, struct hy_policy_stats *out);

/* The queue @line is in, or -ENOENT when it is free, -ERANGE out of range. */
int hy_policy_queue_of(const struct hy_policy *p, uint32_t line);

/* Copies up to @max lines of queue @q into @out in eviction order (LRU end
 * first; FREQ: fewest accesses first). Returns the queue's length, which may
 * be more than @max. O(length): for tests, debugging and status. */
size_t hy_policy_order(const struct hy_policy *p, enum hy_policy_queue q, uint32_t *out,
		       size_t max);

/* Checks every internal invariant (links, lengths, LRU3's idle marks,
 * FREQ's order and group tails, LARC's ghost queue and hash). Returns 0, or
 * -EUCLEAN with the first broken one in @why. O(lines + table sizes): for
 * tests and assert(). */
int hy_policy_check(const struct hy_policy *p, char *why, size_t why_size);

#endif
