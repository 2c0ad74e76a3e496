/*
 * reca.h - ReCA's characterization in one place (papers.md, ReCA; issues
 * 6 and 17): for one read or write, its request class (classify.h) in its
 * stream's history, its process's workload category (category.h) and what
 * the policy table in force (workload_policy.h) says the cache should do
 * with it (struct hy_cache_hint). The engine asks it once per request
 * (hy_engine_read_as/_write_as, engine.h) and hands the hint to the cache;
 * the simulators ask it the same way before they drive the cache.
 *
 * Keying (struct hy_reca_config):
 *   HY_RECA_PROCESSES  the daemon's: one history and one category window
 *			per process (by pid; the process's name read from
 *			/proc at most once a second, a changed name is a new
 *			process), processes of the same program on the same
 *			file sharing a category until their own window says
 *			one (the (program, file) grouping), and the per-process
 *			figures `status` shows (hy_reca_top): requests, bytes,
 *			classes, metadata operations, metadata priority. Each
 *			process gets the access log's process id here
 *			(numbered from hy_reca_set_process_ids' first); the
 *			profiler writes its row when told of it.
 *   HY_RECA_KEYS	the replay's (sim/replay.c): a history per
 *			history_key and a category window per process_key,
 *			each kept for the whole run.
 *   HY_RECA_KEYS_HASHED the whole-cache simulator's (sim/full.c): 4096
 *			histories by history_key modulo 4096 (keys that meet
 *			share one), 4096 category windows by a hash of
 *			process_key (a key that takes another's window starts
 *			it again).
 *
 * Who calls it: engine/engine.c (hy_reca_request per read and write);
 * fs/main.c (new, free, for the mount's lifetime); fs/profiler.c (process
 * ids, the processes that died, the bytes a short request did not move, the
 * mount's class mix from its writer thread; hy_profiler_log, which the unit
 * tests and the bench use, asks as the engine would); fs/ops.c (metadata
 * operations); fs/policy_glue.c and fs/status.c (the table in force, the
 * processes, the classes); sim/replay.c and sim/full.c (their own, keyed);
 * the unit tests.
 *
 * Memory: struct hy_reca owns its tables and the policy snapshots it was
 * given (kept until it is freed: a request may still read an old one).
 * A process's history and window (about 22 KiB) are made at its first read
 * or write. Answers own nothing.
 *
 * Locks: HY_RECA_PROCESSES: the process table is 1024 buckets of 4 slots by
 * pid, bucket b protected by stripes[b % 64], a leaf: it is the one lock a
 * request takes here (the profiler's own process table took the same one
 * before), held for the lookup, the classification and the hint, never
 * across I/O (a process's name is read from /proc with it dropped) nor
 * across the callback that is told of a new process; hy_reca_reap()'s
 * callback runs under it and must take no lock. The grouping table and
 * the table in force are read without a lock (atomic words, a snapshot
 * swapped by pointer; set_policy callers serialize, the control loop).
 * mount_lock (a leaf) protects the mount's class mix, taken once per 256
 * records by the profiler's writer. The keyed modes take no lock: one
 * thread drives a simulator.
 */
#ifndef HYBRIDFS_RECA_H
#define HYBRIDFS_RECA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hybridfs/cache.h" /* struct hy_cache_hint */
#include "hybridfs/category.h"
#include "hybridfs/classify.h"
#include "hybridfs/workload_policy.h"

#define HY_RECA_PROCESSES_MAX 1024 /* process table buckets, by pid */
#define HY_RECA_WAYS	      4	   /* slots per bucket */
#define HY_RECA_STRIPES	      64

enum hy_reca_keying {
	HY_RECA_PROCESSES,
	HY_RECA_KEYS,
	HY_RECA_KEYS_HASHED,
};

/* Metadata operations counted per process (ReCA: they matter more than
 * user data; a metadata-heavy process gets the policy table's metadata
 * timeout, see hy_reca_count_meta()). */
enum hy_profile_meta { HY_META_LOOKUP, HY_META_GETATTR, HY_META_READDIR, HY_META_COUNT };

struct hy_reca_config {
	enum hy_reca_keying keying;
	bool no_classify; /* reca=off: no request classes, categories or policies
			   * (HY_RECA_PROCESSES still numbers and counts processes) */
};

/* The facts of one read or write. */
struct hy_reca_request {
	pid_t pid;	      /* HY_RECA_PROCESSES: the process it is for (> 0) */
	uint64_t history_key; /* the keyed modes: the history it is classified in */
	uint64_t process_key; /* ... and the category window it counts in */
	uint64_t file_id;     /* for the classifier (the keyed modes: their device) */
	uint64_t offset;
	uint32_t length;
	bool write;
	/* what the category sees of the file's size: the end of the furthest
	 * request (it is not looked up per request) */
	uint64_t file_size;
};

/* What ReCA says of it. */
struct hy_reca_answer {
	uint32_t process_id;	   /* HY_RECA_PROCESSES: the log's id of the process;
				    * 0: lost a race for its slot (rare, unnamed) */
	uint8_t klass;		   /* request class + 1; 0: unclassified */
	enum hy_category category; /* the one whose row gave @hint */
	bool hinted;		   /* a policy table is in force: @hint is its word */
	struct hy_cache_hint hint;
};

/* Per-process figures for `hybridctl status` (HY_RECA_PROCESSES). */
struct hy_reca_process {
	pid_t pid;
	uint32_t process_id;
	char comm[16];
	uint64_t reads, writes, bytes_read, bytes_written;
	uint64_t meta[HY_META_COUNT];
	uint64_t classes[2][HY_CLASS_COUNT]; /* [write][class] (classify.h) */
	enum hy_category category;	     /* its workload category (category.h) */
	/* the category whose policy it follows: its own, or while it has
	 * none its group's (grouped: same program, same file) */
	enum hy_category policy_category;
	bool grouped;
	bool metadata_priority; /* metadata heavy: its lookups get the metadata timeout */
};

/* One request of the mount's class mix (hy_reca_classify_mount). */
struct hy_reca_io {
	uint64_t file_id, offset;
	uint32_t length;
	bool write;
};

struct hy_reca;

/* 0 or -ENOMEM. */
int hy_reca_new(const struct hy_reca_config *config, struct hy_reca **out);
void hy_reca_free(struct hy_reca *reca);

/* Classifies @req, counts it in its process's (or key's) window and, when
 * a policy table is in force, puts in @out the hint of its row for the
 * request. HY_RECA_PROCESSES: also counts the request and its bytes for
 * its process. Never blocks on I/O (but for a new pid's name, read from
 * /proc with no lock held). Returns 0, or -ENOMEM (HY_RECA_KEYS: no room
 * for a new key's history or window; HY_RECA_KEYS_HASHED: the history
 * could not be made, and @out has the hint for an unclassified request). */
int hy_reca_request(struct hy_reca *reca, const struct hy_reca_request *req,
		    struct hy_reca_answer *out);

/* What @table's row for @category says for a request of @cls (-1:
 * unclassified, taken as random) in the direction @write. */
void hy_reca_hint_from(const struct hy_workload_policy_table *table, enum hy_category category,
		       bool write, int cls, struct hy_cache_hint *hint);

/* Puts @table in force (a copy); requests see the old table or the new
 * one, whole. 0 or -ENOMEM. Callers serialize (the control loop). */
int hy_reca_set_policy(struct hy_reca *reca, const struct hy_workload_policy_table *table);
/* The table in force, copied; false when none was set. */
bool hy_reca_get_policy(struct hy_reca *reca, struct hy_workload_policy_table *out);

/* ---- HY_RECA_PROCESSES -------------------------------------------------- */

/* Process ids are given from @first on; @made is told of each new one
 * (with no lock held) to write its row. Set before requests flow. */
void hy_reca_set_process_ids(struct hy_reca *reca, uint32_t first,
			     void (*made)(void *arg, uint32_t id, pid_t pid, const char comm[16]),
			     void *arg);

/* The log's id of @pid's process, reading /proc when it is new or its
 * entry is over a second old. Never fails: an unreadable process gets the
 * name "?". Counts nothing. */
uint32_t hy_reca_process(struct hy_reca *reca, pid_t pid);

/* A request counted by hy_reca_request() moved @missing bytes fewer than it
 * asked for (short at the end of a file, or failed). */
void hy_reca_uncount(struct hy_reca *reca, pid_t pid, uint32_t process_id, bool write,
		     uint64_t missing);

/* Counts one metadata operation of @pid. Returns the policy table's
 * metadata timeout (seconds) when the process is metadata heavy (at least
 * 16 metadata operations lately and at least the table's share of its
 * operations), else 0: the caller replies with the longer of it and the
 * mount's timeouts (ReCA's metadata priority: the kernel's dentry and
 * attribute caches are a FUSE mount's metadata cache). */
double hy_reca_count_meta(struct hy_reca *reca, pid_t pid, enum hy_profile_meta kind);

/* Processes whose pid was gone at this call and the one before (and, with
 * @settled false, not yet this one: their records may still be on their
 * way) leave the table; @dead is told of each (its id, and whether it made
 * a read or write) and returns false to keep it for the next call. Returns
 * how many left. */
size_t hy_reca_reap(struct hy_reca *reca, bool settled,
		    bool (*dead)(void *arg, uint32_t process_id, bool had_io), void *arg);

/* Fills @out with up to @max processes, busiest (by bytes, then requests)
 * first; returns how many. */
size_t hy_reca_top(struct hy_reca *reca, struct hy_reca_process *out, size_t max);

/* The mount's own class mix: @n requests classified in the mount's history
 * of each direction, in the order given (the profiler's writer, in the
 * order the requests were served, so that no request takes a mount-wide
 * lock for it). Nothing with reca=off. */
void hy_reca_classify_mount(struct hy_reca *reca, const struct hy_reca_io *ios, size_t n);
void hy_reca_get_mount_classes(struct hy_reca *reca, uint64_t out[2][HY_CLASS_COUNT]);

#endif
