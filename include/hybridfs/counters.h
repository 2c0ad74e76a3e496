/*
 * counters.h - counters kept across mounts, and what they counted in the
 * last five minutes, hour and day (bcache's stats_total, stats_day,
 * stats_hour and stats_five_minute).
 *
 * What it is for: a mount's own counters start at zero; monitoring wants
 * totals that only grow, and a recent rate without a scraper's history.
 * This module keeps, per counter name, the total of every earlier mount
 * (the base, read from the state database at mount) plus what this mount
 * has counted, fed in by hy_counters_update() from the mount's own
 * figures (a figure below the last one fed is a restart of its source,
 * counted whole; a figure not reported now leaves the counter as it is).
 *
 * Persistence: hy_counters_snapshot() (the daemon's metrics thread, every
 * metrics_interval seconds and at unmount) writes the totals into
 * metric_totals and a sample of them into metric_samples, in one
 * transaction, so a crash (kill -9, power) loses at most what was counted
 * since the last snapshot, and never puts a total below a sample. Nothing
 * is written per request.
 *
 * Windows: the samples are a ring thinned as they age: every sample of the
 * last five minutes and one interval, the first of each minute for the
 * last hour, the first of each five minutes for the last day, and the
 * newest older than a day (the day window's reference). A window's figure
 * is the total now minus the total of the newest sample at least the
 * window old (its reference; the oldest sample when none is that old, and
 * the window then spans less: the covered seconds say how long it spans).
 * The error of a window is at most the spacing of the samples at its far
 * end: an interval for 5m, a minute for 1h, five minutes for 1d.
 *
 * Tables (state.h, schema 12):
 *
 *   metric_totals   name TEXT PK   a counter's status path ("operations.read")
 *                   value INT      its total over every mount, as of saved_ns
 *                   saved_ns INT   CLOCK_REALTIME of the snapshot
 *   metric_samples  ts INT PK      seconds since the epoch
 *                   counters TEXT  {"name": total, ...} at ts (a name a sample
 *                                  lacks was not counted yet then: 0)
 *
 * Who calls it: fs/metrics_glue.c; the unit tests.
 *
 * Memory: hy_counters_new() / hy_counters_free(); the names are borrowed
 * for the object's life (static strings). Locks: one mutex inside, a leaf,
 * never held across a SQLite call: update, totals and window may be
 * called from any thread; load and snapshot by one thread at a time, on
 * that thread's own connection.
 */
#ifndef HYBRIDFS_COUNTERS_H
#define HYBRIDFS_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sqlite3;
struct hy_counters;

/* Counters named @names[0..n), snapshots every @interval_s seconds (the
 * thinning keeps one interval past five minutes). 0 or -ENOMEM. */
int hy_counters_new(const char *const *names, size_t n, int64_t interval_s,
		    struct hy_counters **out);
void hy_counters_free(struct hy_counters *c);

/* Reads the totals (the base) and the samples earlier mounts left in @db
 * (schema 12); samples from after @now (a clock set back) are dropped.
 * 0, or a negative errno with a message in @why (nothing loaded). */
int hy_counters_load(struct hy_counters *c, struct sqlite3 *db, int64_t now, char *why,
		     size_t why_size);

/* Folds in this mount's figures: @values[i] for names[i] where @have[i]. */
void hy_counters_update(struct hy_counters *c, const uint64_t *values, const bool *have);

/* A sample of the totals at @now into the ring (one at the same second
 * is replaced), the ring thinned, and all of it written to @db in one
 * transaction (@db NULL: in memory only). 0, or a negative errno with a
 * message in @why (the ring keeps the sample; the next snapshot writes the
 * totals again). */
int hy_counters_snapshot(struct hy_counters *c, struct sqlite3 *db, int64_t now, char *why,
			 size_t why_size);

/* The totals now, @n of them into @out. */
void hy_counters_totals(struct hy_counters *c, uint64_t *out);

/* What each counter counted in the last @window_s seconds into @out, and
 * how long the window really spans into @covered. 0, or -ENODATA when the
 * ring is empty (no snapshot yet). */
int hy_counters_window(struct hy_counters *c, int64_t now, int64_t window_s, uint64_t *out,
		       int64_t *covered);

/* Snapshots taken (this object's), the last one's time (0: none), the
 * oldest sample's (0: none). */
void hy_counters_info(struct hy_counters *c, uint64_t *snapshots, int64_t *last, int64_t *oldest);

/* The window arithmetic, on sample times @ts[0..n) ascending (n > 0):
 * the index of a window's reference sample (above). */
size_t hy_counters_window_ref(const int64_t *ts, size_t n, int64_t now, int64_t window_s);

/* ... and the thinning: @keep[i] for each sample to keep at @now. */
void hy_counters_thin(const int64_t *ts, size_t n, int64_t now, int64_t interval_s, bool *keep);

#endif
