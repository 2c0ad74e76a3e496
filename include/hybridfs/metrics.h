/*
 * metrics.h - hybridfs's counters and gauges in Prometheus's text format.
 *
 * What it is for: monitoring. hy_metrics_render() turns the daemon's
 * "status" answer of one or more mounts (fs/status.c; the fields are in
 * hybridctl(8)) into the text exposition format 0.0.4 that Prometheus
 * scrapes and node_exporter's textfile collector reads:
 *
 *   # HELP hybridfs_read_bytes_total Bytes read from the mount ...
 *   # TYPE hybridfs_read_bytes_total counter
 *   hybridfs_read_bytes_total{mountpoint="/home/ann/src",device="sda1"} 1234
 *
 * One family at a time over every mount (the format wants a family's
 * samples together), a HELP and a TYPE line before each; every sample
 * carries the labels mountpoint (the mount's) and device (the backing
 * directory's disk, status's "backing_disk"; "" when unknown). Label
 * values are escaped as the format says (\\, \", \n), and bytes that are
 * not UTF-8 become U+FFFD, which the format needs.
 *
 * The names are stable (listed in hybridctl(8)): counters end in _total
 * (and are the totals kept across mounts, status's "metrics"."totals",
 * counters.h, when the daemon has them; else the mount's own figures),
 * units are in the names (_bytes, _seconds, _blocks: 4 KiB), and everything
 * else is a gauge. Each counter has a gauge hybridfs_window_NAME (NAME
 * without hybridfs_ and _total) with a label window="5m", "1h" or "1d":
 * what it counted in the last five minutes, hour and day, from status's
 * "metrics"."windows"; hybridfs_window_covered_seconds says how much time
 * each window really spans (less while the history is younger).
 *
 * hy_metrics_write_file() writes the same into a file for the textfile
 * collector, atomically: a temporary ".NAME.XXXXXX" beside it (a name the
 * collector skips: not *.prom), renamed over it; mode 0644.
 *
 * This module also holds the list of the counters that persist: their
 * status paths ("operations.read", "cache.passthrough.heat"), which the
 * daemon's metrics thread (fs/metrics_glue.c) keeps with counters.h.
 *
 * Who calls it: hybridctl status --format prometheus (ctl/metrics_cmd.c),
 * the daemon's metrics thread, the unit tests.
 *
 * Memory: everything is borrowed for the call; nothing is kept. Locks:
 * none.
 */
#ifndef HYBRIDFS_METRICS_H
#define HYBRIDFS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct json_object;

/* One mount to render. */
struct hy_metrics_mount {
	const char *mountpoint;	    /* the label's value */
	struct json_object *status; /* the daemon's status result; NULL: no answer */
	bool up; /* hybridfs_up: the daemon answers (false: it did not, or it is unmounting) */
};

/* The windows, in the order status gives them: "5m", "1h", "1d". */
#define HY_METRICS_WINDOWS 3
extern const char *const hy_metrics_window_names[HY_METRICS_WINDOWS];
extern const long hy_metrics_window_seconds[HY_METRICS_WINDOWS];

/* Writes the exposition of @n mounts to @out. 0, or -EIO when @out
 * failed. */
int hy_metrics_render(FILE *out, const struct hy_metrics_mount *mounts, size_t n);

/* Renders into @path atomically (see above). 0, or a negative errno with
 * a message naming the file in @why. */
int hy_metrics_write_file(const char *path, const struct hy_metrics_mount *mounts, size_t n,
			  char *why, size_t why_size);

/* @in as a label value of the exposition format, without the quotes,
 * into @out (always terminated when @size > 0). Returns the length the
 * whole escaped value has, as snprintf() does: @size or more means it was
 * cut. */
size_t hy_metrics_escape_label(const char *in, char *out, size_t size);

/* The counters that persist: @i-th status path, for @i below
 * hy_metrics_counter_count(); NULL past it. */
size_t hy_metrics_counter_count(void);
const char *hy_metrics_counter_path(size_t i);

/* The value at dotted @path ("cache.passthrough.heat") of a status
 * object: true with it in @out for a number (negative ones as 0) or a
 * boolean; false when absent, null or not a number. */
bool hy_metrics_status_u64(struct json_object *status, const char *path, unsigned long long *out);

#endif
