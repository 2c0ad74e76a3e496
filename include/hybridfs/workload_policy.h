/*
 * workload_policy.h - ReCA's policy table (issue 6): for each workload
 * category (category.h), how the cache treats the requests of a process in
 * it: write policy, cache line size, admission priority per request class
 * and direction, sequential cutoff and eviction preference; plus how long
 * the kernel may keep the metadata it asks for when a process is metadata
 * heavy.
 *
 * What it is for: ReCA's module (reca.h) looks up the row of a process's
 * category on every read and write (hy_workload_policy_row(), O(1), no
 * lock: the table in force is an immutable snapshot swapped by pointer)
 * and the engine hands the cache what the row says for the request's class
 * (struct hy_cache_hint, hy_reca_hint_from()). The daemon loads the table from the state
 * database at mount and stores every change made by `hybridctl policy
 * set`, so a change survives remounts.
 *
 * The defaults and their reasons (docs/architecture.md has the long form):
 *
 *   random consumer        write around ("read-only": ReCA measured no
 *                          difference between write policies for random
 *                          consumers, and read-only spares the SSD up to
 *                          33% of its writes); line 8 KiB (ReCA fig. 14a:
 *                          8 KiB beat 4 KiB for random consumers, whose
 *                          programs read 8 KiB blocks); random and
 *                          overlapped reads high (where caching pays),
 *                          strided normal, sequential low.
 *   random producer/consumer  write as the mount says (write-back where the
 *                          store is a device of its own: absorbing random
 *                          writes is what ReCA's +22% over LARC came from;
 *                          through on the default same-disk store); line
 *                          4 KiB (database pages: a larger line reads
 *                          neighbours nobody asked for); random and
 *                          overlapped high in both directions; eviction late.
 *   sequential producer/consumer  write through (compilers and builds read
 *                          back what they wrote soon, but no dirty data
 *                          need wait in the cache); line 16 KiB (small files
 *                          read whole: the line is their read-ahead);
 *                          strided above sequential (ReCA: strided requests
 *                          are mostly filesystem metadata).
 *   archival consumer      write around; line 64 KiB (streams); sequential
 *                          reads bypass (read once: they would push hotter
 *                          blocks out), the rest low; eviction early.
 *   large file generator   write around, sequential cutoff 1 MiB (bcache's
 *                          cutoff, reached early: the file is written once);
 *                          line 64 KiB; sequential writes bypass; eviction
 *                          early.
 *   unknown                the mount's settings: write as the mount says,
 *                          line 4 KiB, everything normal.
 *   metadata               timeout 10 s for the entries and attributes a
 *                          metadata-heavy process looks up (ReCA: metadata
 *                          matters more than user data; in a FUSE mount the
 *                          metadata cache is the kernel's dentry and
 *                          attribute cache, kept as long as the reply says).
 *
 * Text form (hybridctl policy get|set, the database): one setting is
 * "CATEGORY.KEY=VALUE", CATEGORY a category name (hy_category_name()) or
 * "metadata", KEY one of:
 *   write        back | through | around | mount (the mount's cache_write)
 *   line_size    4K | 8K | 16K | 32K | 64K (a power of two, bytes or K)
 *   admit.read.CLASS, admit.write.CLASS   bypass | low | normal | high;
 *                CLASS sequential | strided | overlapped | random
 *   seq_cutoff   bytes (suffixes K, M, G) or "mount"
 *   evict        early | normal | late
 * and for "metadata": timeout (seconds, 0..86400, decimals allowed) and
 * share (permille of a process's operations that are metadata for it to be
 * metadata heavy, 1..1000). Every bad setting is refused with a message
 * that names the part that is wrong; nothing is changed then.
 *
 * Who calls it: engine/reca.c (rows), fs/policy_glue.c (load at mount,
 * `policy` control requests), ctl/tune_cmd.c and ctl/simulate_cmd.c
 * (candidate tables), sim/full.c and fs/status.c (the table's defaults
 * and the one in force), the unit tests and the fuzz target.
 *
 * Memory: a struct hy_workload_policy_table is plain data (no pointers),
 * owned by its caller; copy it by assignment. Threads: none inside.
 */
#ifndef HYBRIDFS_WORKLOAD_POLICY_H
#define HYBRIDFS_WORKLOAD_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hybridfs/category.h"
#include "hybridfs/classify.h"

struct sqlite3;

/* The write policy of a row: the three of cache.h, or the mount's own. */
enum hy_workload_write {
	HY_WORKLOAD_WRITE_MOUNT = 0,
	HY_WORKLOAD_WRITE_BACK,
	HY_WORKLOAD_WRITE_THROUGH,
	HY_WORKLOAD_WRITE_AROUND,
};

/* Admission priority of a request class (ReCA's priority table, by class):
 *   bypass  not cached: a read miss is served from below and not kept, a
 *           write goes around (a cached copy is kept current);
 *   low     cached, its lines enter the cold queue (evicted first);
 *   normal  as the cache does by itself (the heat filter decides);
 *   high    cached, and admitted from the front buffer to the SSD store
 *           whatever its heat. */
enum hy_workload_admit {
	HY_ADMIT_BYPASS = 0,
	HY_ADMIT_LOW,
	HY_ADMIT_NORMAL,
	HY_ADMIT_HIGH,
};

/* Eviction preference: the LRU3 queue a row's new SSD lines enter. */
enum hy_workload_evict {
	HY_EVICT_EARLY = 0, /* cold queue */
	HY_EVICT_NORMAL,    /* by heat, as the cache does by itself */
	HY_EVICT_LATE,	    /* hot queue */
};

#define HY_WORKLOAD_LINE_MIN	 4096u
#define HY_WORKLOAD_LINE_MAX	 65536u
#define HY_WORKLOAD_CUTOFF_MOUNT UINT64_MAX /* seq_cutoff: the mount's cache_seq_cutoff= */

struct hy_workload_policy {
	enum hy_workload_write write;
	uint32_t line_size;		  /* bytes, a power of two in [LINE_MIN, LINE_MAX] */
	uint8_t admit[2][HY_CLASS_COUNT]; /* [write?][class]: enum hy_workload_admit */
	uint64_t seq_cutoff;		  /* bytes (0: never), or HY_WORKLOAD_CUTOFF_MOUNT */
	enum hy_workload_evict evict;
};

struct hy_workload_policy_table {
	struct hy_workload_policy row[HY_CATEGORY_COUNT]; /* by enum hy_category */
	uint32_t metadata_timeout_ms; /* entry/attr timeout for metadata-heavy processes */
	uint32_t metadata_share_permille;
};

/* The defaults above. */
void hy_workload_policy_defaults(struct hy_workload_policy_table *t);

/* The row for @category (an out-of-range one: the unknown row). */
static inline const struct hy_workload_policy *
hy_workload_policy_row(const struct hy_workload_policy_table *t, enum hy_category category)
{
	return &t->row[(unsigned)category < HY_CATEGORY_COUNT ? category : HY_CATEGORY_UNKNOWN];
}

/* Applies one "CATEGORY.KEY=VALUE" setting to @t. Returns 0, or -EINVAL
 * with a message naming the bad part in @why (then @t is unchanged). */
int hy_workload_policy_set(struct hy_workload_policy_table *t, const char *setting, char *why,
			   size_t why_size);

/* The value of "CATEGORY.KEY" in the text form, into @buf. Returns 0,
 * -EINVAL (unknown category or key) or -ERANGE (@size too small; 32 bytes
 * hold any value), with a message in @why. */
int hy_workload_policy_get(const struct hy_workload_policy_table *t, const char *name, char *buf,
			   size_t size, char *why, size_t why_size);

/* Every setting of @t, one per call of @fn with its name "CATEGORY.KEY"
 * and its value in the text form, in a fixed order (categories in enum
 * order, each write, line_size, admit.read.CLASS and admit.write.CLASS in
 * class order, seq_cutoff, evict; then metadata timeout, share). Stops at
 * and returns the first non-zero return of @fn; 0 when all were given. */
int hy_workload_policy_each(const struct hy_workload_policy_table *t,
			    int (*fn)(void *arg, const char *name, const char *value), void *arg);

/* Names for the text form and status output. */
const char *hy_workload_write_name(enum hy_workload_write w);
const char *hy_workload_admit_name(enum hy_workload_admit a);
const char *hy_workload_evict_name(enum hy_workload_evict e);

/* The state database's table workload_policy (schema 6): one row per
 * setting that differs from the defaults. load starts from the defaults
 * and applies the rows (a row that no longer parses is skipped with a
 * warning that names it, so a damaged row never stops a mount); save
 * replaces the rows by the settings of @t that differ from the defaults,
 * in one transaction (a table with a field outside its range is refused
 * with -EINVAL before the database is touched). 0 or a negative errno
 * (logged); when load fails, @t holds the defaults. */
int hy_workload_policy_load(struct sqlite3 *db, struct hy_workload_policy_table *t);
int hy_workload_policy_save(struct sqlite3 *db, const struct hy_workload_policy_table *t);

#endif
