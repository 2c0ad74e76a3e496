/* metrics_glue.c - the daemon's side of the counters kept across mounts
 * and of metrics=FILE; see hy_fs_open_metrics() in fs.h.
 *
 * The thread "hy-metrics" sleeps metrics_interval seconds at a time (on
 * CLOCK_MONOTONIC: a clock set back does not stall it), then takes the
 * status answer as hybridctl would (which feeds the mount's figures into
 * the totals, hy_fs_metrics_status()), snapshots the totals into the state
 * database on its own connection, and writes the textfile from the same
 * answer. lock protects stopping and the error notes only; the counters
 * have their own (counters.h), and neither is held across the status
 * call, SQLite or the file. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <sqlite3.h>

#include "fs_internal.h"
#include "hybridfs/counters.h"
#include "hybridfs/log.h"
#include "hybridfs/metrics.h"
#include "hybridfs/options.h"

struct hy_fs_metrics {
	struct hy_fs *fs;
	struct hy_counters *counters;
	const char **names; /* the counters' status paths (metrics.h), [n] */
	size_t n;
	uint64_t *values; /* scratch of hy_fs_metrics_status(), under lock */
	bool *have;
	const char *file; /* metrics=, borrowed from the options; NULL: none */
	int64_t interval;
	sqlite3 *db; /* the thread's (main's before and after it); NULL: not persisted */

	pthread_t thread;
	bool started;
	pthread_mutex_t lock; /* protects the rest */
	pthread_cond_t wake;
	bool stopping;
	uint64_t errors;
	char last_error[512];
};

/* A failed snapshot or file: counted, and logged when it says something
 * new (a full disk would otherwise log every interval). */
static void note_error(struct hy_fs_metrics *m, const char *why)
{
	bool fresh;

	pthread_mutex_lock(&m->lock);
	m->errors++;
	fresh = strcmp(m->last_error, why) != 0;
	if (fresh)
		snprintf(m->last_error, sizeof(m->last_error), "%s", why);
	pthread_mutex_unlock(&m->lock);
	if (fresh)
		hy_log(LOG_WARNING, "%s", why);
}

static void add_counters(struct json_object *o, const struct hy_fs_metrics *m, const uint64_t *v)
{
	for (size_t i = 0; i < m->n; i++)
		json_object_object_add(o, m->names[i], json_object_new_uint64(v[i]));
}

struct json_object *hy_fs_metrics_status(struct hy_fs_metrics *m, struct json_object *status)
{
	struct json_object *o = json_object_new_object(), *windows, *totals;
	int64_t now = (int64_t)time(NULL), last, oldest;
	uint64_t snapshots;

	if (!o)
		return NULL;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n; i++) {
		unsigned long long v = 0;

		m->have[i] = hy_metrics_status_u64(status, m->names[i], &v);
		m->values[i] = v;
	}
	hy_counters_update(m->counters, m->values, m->have);
	json_object_object_add(o, "interval_seconds", json_object_new_int64(m->interval));
	json_object_object_add(o, "file", m->file ? json_object_new_string(m->file) : NULL);
	json_object_object_add(o, "persistent", json_object_new_boolean(m->db != NULL));
	json_object_object_add(o, "errors", json_object_new_uint64(m->errors));
	json_object_object_add(o, "last_error",
			       m->last_error[0] ? json_object_new_string(m->last_error) : NULL);
	hy_counters_totals(m->counters, m->values);
	totals = json_object_new_object();
	add_counters(totals, m, m->values);
	json_object_object_add(o, "totals", totals);
	windows = json_object_new_object();
	for (int w = 0; w < HY_METRICS_WINDOWS; w++) {
		int64_t covered;

		if (hy_counters_window(m->counters, now, hy_metrics_window_seconds[w], m->values,
				       &covered) == 0) {
			struct json_object *win = json_object_new_object(),
					   *counters = json_object_new_object();

			json_object_object_add(win, "seconds", json_object_new_int64(covered));
			add_counters(counters, m, m->values);
			json_object_object_add(win, "counters", counters);
			json_object_object_add(windows, hy_metrics_window_names[w], win);
		}
	}
	pthread_mutex_unlock(&m->lock);
	json_object_object_add(o, "windows", windows);
	hy_counters_info(m->counters, &snapshots, &last, &oldest);
	json_object_object_add(o, "snapshots", json_object_new_uint64(snapshots));
	json_object_object_add(o, "last_snapshot", last ? json_object_new_int64(last) : NULL);
	json_object_object_add(o, "history_seconds",
			       json_object_new_int64(oldest && now > oldest ? now - oldest : 0));
	return o;
}

/* One snapshot, and the file from the same answer; @up false at unmount. */
static void tick(struct hy_fs_metrics *m, bool up)
{
	struct json_object *status = hy_fs_status(m->fs); /* feeds the counters */
	char why[1024];

	if (hy_counters_snapshot(m->counters, m->db, (int64_t)time(NULL), why, sizeof(why)) < 0)
		note_error(m, why);
	if (!m->file)
		goto out;
	if (!status) {
		note_error(m, "metrics: out of memory");
		goto out;
	}
	/* the section again: this snapshot's time in it */
	json_object_object_add(status, "metrics", hy_fs_metrics_status(m, status));
	{
		struct hy_metrics_mount mount = {m->fs->mountpoint, status, up};

		if (hy_metrics_write_file(m->file, &mount, 1, why, sizeof(why)) < 0)
			note_error(m, why);
	}
out:
	json_object_put(status);
}

static void *metrics_main(void *arg)
{
	struct hy_fs_metrics *m = arg;
	struct timespec until;

	pthread_setname_np(pthread_self(), "hy-metrics");
	clock_gettime(CLOCK_MONOTONIC, &until);
	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		until.tv_sec += m->interval;
		while (!m->stopping &&
		       pthread_cond_timedwait(&m->wake, &m->lock, &until) != ETIMEDOUT)
			;
		if (m->stopping)
			break;
		pthread_mutex_unlock(&m->lock);
		tick(m, true);
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

static void metrics_free(struct hy_fs_metrics *m)
{
	if (!m)
		return;
	if (m->db && sqlite3_close(m->db) != SQLITE_OK)
		hy_log(LOG_WARNING, "metrics: closing the state database: %s",
		       sqlite3_errmsg(m->db));
	hy_counters_free(m->counters);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m->names);
	free(m->values);
	free(m->have);
	free(m);
}

int hy_fs_open_metrics(struct hy_fs *fs, const struct hy_options *opts)
{
	struct hy_fs_metrics *m = calloc(1, sizeof(*m));
	pthread_condattr_t attr;
	char why[1024];
	int rc;

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&m->wake, &attr);
	pthread_condattr_destroy(&attr);
	m->fs = fs;
	m->file = opts->metrics;
	m->interval = opts->metrics_interval ? opts->metrics_interval : HY_OPTIONS_METRICS_INTERVAL;
	m->n = hy_metrics_counter_count();
	m->names = calloc(m->n, sizeof(*m->names));
	m->values = calloc(m->n, sizeof(*m->values));
	m->have = calloc(m->n, sizeof(*m->have));
	if (!m->names || !m->values || !m->have ||
	    hy_counters_new(m->names, m->n, m->interval, &m->counters) < 0) {
		metrics_free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n; i++)
		m->names[i] = hy_metrics_counter_path(i);
	if (sqlite3_open_v2(fs->db_path, &m->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		hy_log(LOG_WARNING,
		       "metrics: cannot open the state database \"%s\": %s; the counters are "
		       "this mount's alone",
		       fs->db_path, m->db ? sqlite3_errmsg(m->db) : "out of memory");
		sqlite3_close(m->db);
		m->db = NULL;
	} else {
		sqlite3_busy_timeout(m->db, 5000);
		if (hy_counters_load(m->counters, m->db, (int64_t)time(NULL), why, sizeof(why)) <
		    0) {
			/* never written over with this mount's smaller totals */
			hy_log(LOG_WARNING, "%s; the counters are this mount's alone", why);
			sqlite3_close(m->db);
			m->db = NULL;
		}
	}
	/* the first sample: the totals as the mount found them */
	if (hy_counters_snapshot(m->counters, m->db, (int64_t)time(NULL), why, sizeof(why)) < 0)
		note_error(m, why);
	fs->metrics = m;
	rc = pthread_create(&m->thread, NULL, metrics_main, m);
	if (rc) {
		hy_log(LOG_WARNING, "metrics: cannot start its thread: %s; saved at unmount only",
		       strerror(rc));
		return 0;
	}
	m->started = true;
	return 0;
}

void hy_fs_close_metrics(struct hy_fs *fs)
{
	struct hy_fs_metrics *m = fs->metrics;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	if (m->started)
		pthread_join(m->thread, NULL);
	/* the last snapshot: what this mount counted up to its unmount */
	tick(m, false);
	fs->metrics = NULL;
	metrics_free(m);
}
