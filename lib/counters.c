/* counters.c - see include/hybridfs/counters.h. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <sqlite3.h>

#include "hybridfs/counters.h"
#include "hybridfs/log.h"
#include "hybridfs/state.h"

#define FIVE_MINUTES 300
#define HOUR	     3600
#define DAY	     86400

struct hy_counters {
	pthread_mutex_t lock; /* protects everything below */
	const char *const *names;
	size_t n;
	int64_t interval;
	uint64_t *base; /* earlier mounts' totals, [n] */
	uint64_t *acc;	/* what this mount counted, [n] */
	uint64_t *last; /* the figures fed last, [n] */
	/* the ring, oldest first: len samples of n totals each */
	int64_t *ts;
	uint64_t *values; /* [cap * n] */
	size_t len, cap;
	uint64_t snapshots;
	int64_t last_snapshot;
};

int hy_counters_new(const char *const *names, size_t n, int64_t interval_s,
		    struct hy_counters **out)
{
	struct hy_counters *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->names = names;
	c->n = n;
	c->interval = interval_s > 0 ? interval_s : 1;
	c->base = calloc(n ? n : 1, sizeof(*c->base));
	c->acc = calloc(n ? n : 1, sizeof(*c->acc));
	c->last = calloc(n ? n : 1, sizeof(*c->last));
	if (!c->base || !c->acc || !c->last) {
		hy_counters_free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

void hy_counters_free(struct hy_counters *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->base);
	free(c->acc);
	free(c->last);
	free(c->ts);
	free(c->values);
	free(c);
}

size_t hy_counters_window_ref(const int64_t *ts, size_t n, int64_t now, int64_t window_s)
{
	int64_t edge = now - window_s;
	size_t lo = 0, hi = n; /* the first sample newer than the edge is in [lo, hi] */

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ts[mid] <= edge)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

void hy_counters_thin(const int64_t *ts, size_t n, int64_t now, int64_t interval_s, bool *keep)
{
	size_t day_ref;
	bool have_day_ref;

	if (n == 0)
		return;
	day_ref = hy_counters_window_ref(ts, n, now, DAY);
	have_day_ref = ts[day_ref] <= now - DAY;
	for (size_t i = 0; i < n; i++) {
		int64_t age = now - ts[i];
		/* the first of its bucket: buckets of a minute nest in those of
		 * five, so a sample kept for the hour is kept for the day */
		bool first_minute = i == 0 || ts[i - 1] / 60 != ts[i] / 60;
		bool first_five = i == 0 || ts[i - 1] / FIVE_MINUTES != ts[i] / FIVE_MINUTES;

		if (i + 1 == n)
			keep[i] = true; /* the newest: what the next mount starts from */
		else if (have_day_ref && i <= day_ref)
			keep[i] = i == day_ref;
		else if (age <= FIVE_MINUTES + interval_s)
			keep[i] = true;
		else if (age <= HOUR + 60)
			keep[i] = first_minute;
		else
			keep[i] = first_five;
	}
}

/* Room for one more sample. Lock held. */
static int ring_grow(struct hy_counters *c)
{
	size_t cap = c->cap ? c->cap * 2 : 64;
	int64_t *ts;
	uint64_t *values;

	if (c->len < c->cap)
		return 0;
	ts = realloc(c->ts, cap * sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	c->ts = ts;
	values = realloc(c->values, cap * (c->n ? c->n : 1) * sizeof(*values));
	if (!values)
		return -ENOMEM;
	c->values = values;
	c->cap = cap;
	return 0;
}

static int name_index(const struct hy_counters *c, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->names[i], name) == 0)
			return (int)i;
	return -1;
}

static int db_fail(sqlite3 *db, const char *what, char *why, size_t why_size)
{
	int rc = hy_state_errno(sqlite3_errcode(db));

	snprintf(why, why_size, "metrics: %s: %s", what, sqlite3_errmsg(db));
	return rc ? rc : -EIO;
}

/* One sample's JSON into the ring's slot @slot (its names looked up;
 * unknown ones skipped, missing ones 0). */
static void parse_sample(struct hy_counters *c, size_t slot, const char *text)
{
	struct json_object *o = text ? json_tokener_parse(text) : NULL;
	uint64_t *v = c->values + slot * c->n;

	memset(v, 0, c->n * sizeof(*v));
	if (o && json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, key, val)
		{
			int i = name_index(c, key);

			if (i >= 0 && json_object_is_type(val, json_type_int) &&
			    json_object_get_int64(val) > 0)
				v[i] = (uint64_t)json_object_get_int64(val);
		}
	}
	json_object_put(o);
}

int hy_counters_load(struct hy_counters *c, sqlite3 *db, int64_t now, char *why, size_t why_size)
{
	sqlite3_stmt *st = NULL;
	int rc = 0, step;

	pthread_mutex_lock(&c->lock);
	memset(c->base, 0, c->n * sizeof(*c->base));
	c->len = 0;
	if (sqlite3_prepare_v2(db, "SELECT name, value FROM metric_totals", -1, &st, NULL) !=
	    SQLITE_OK) {
		rc = db_fail(db, "cannot read the totals", why, why_size);
		goto out;
	}
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		int i = name ? name_index(c, name) : -1;

		if (i >= 0 && sqlite3_column_int64(st, 1) > 0)
			c->base[i] = (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (step != SQLITE_DONE) {
		rc = db_fail(db, "cannot read the totals", why, why_size);
		goto out;
	}
	if (sqlite3_prepare_v2(db,
			       "SELECT ts, counters FROM metric_samples WHERE ts <= ?1 ORDER BY ts",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot read the samples", why, why_size);
		goto out;
	}
	sqlite3_bind_int64(st, 1, now);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		rc = ring_grow(c);
		if (rc) {
			snprintf(why, why_size, "metrics: out of memory");
			goto out;
		}
		c->ts[c->len] = sqlite3_column_int64(st, 0);
		parse_sample(c, c->len, (const char *)sqlite3_column_text(st, 1));
		c->len++;
	}
	if (step != SQLITE_DONE) {
		rc = db_fail(db, "cannot read the samples", why, why_size);
		goto out;
	}
	/* a total below its newest sample would make a window negative: the
	 * sample is what was written last with it, so it wins */
	if (c->len)
		for (size_t i = 0; i < c->n; i++)
			if (c->values[(c->len - 1) * c->n + i] > c->base[i])
				c->base[i] = c->values[(c->len - 1) * c->n + i];
out:
	sqlite3_finalize(st);
	if (rc) {
		memset(c->base, 0, c->n * sizeof(*c->base));
		c->len = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void hy_counters_update(struct hy_counters *c, const uint64_t *values, const bool *have)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n; i++) {
		if (!have[i])
			continue;
		/* below the last figure: its source restarted from zero */
		c->acc[i] += values[i] >= c->last[i] ? values[i] - c->last[i] : values[i];
		c->last[i] = values[i];
	}
	pthread_mutex_unlock(&c->lock);
}

static void totals_locked(const struct hy_counters *c, uint64_t *out)
{
	for (size_t i = 0; i < c->n; i++)
		out[i] = c->base[i] + c->acc[i];
}

void hy_counters_totals(struct hy_counters *c, uint64_t *out)
{
	pthread_mutex_lock(&c->lock);
	totals_locked(c, out);
	pthread_mutex_unlock(&c->lock);
}

int hy_counters_window(struct hy_counters *c, int64_t now, int64_t window_s, uint64_t *out,
		       int64_t *covered)
{
	size_t ref;

	pthread_mutex_lock(&c->lock);
	if (c->len == 0) {
		pthread_mutex_unlock(&c->lock);
		memset(out, 0, c->n * sizeof(*out));
		*covered = 0;
		return -ENODATA;
	}
	ref = hy_counters_window_ref(c->ts, c->len, now, window_s);
	totals_locked(c, out);
	for (size_t i = 0; i < c->n; i++) {
		uint64_t then = c->values[ref * c->n + i];

		out[i] = out[i] > then ? out[i] - then : 0;
	}
	*covered = now > c->ts[ref] ? now - c->ts[ref] : 0;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void hy_counters_info(struct hy_counters *c, uint64_t *snapshots, int64_t *last, int64_t *oldest)
{
	pthread_mutex_lock(&c->lock);
	*snapshots = c->snapshots;
	*last = c->last_snapshot;
	*oldest = c->len ? c->ts[0] : 0;
	pthread_mutex_unlock(&c->lock);
}

/* The sample's JSON text, malloc'd (NULL: out of memory). */
static char *sample_json(const struct hy_counters *c, const uint64_t *totals)
{
	struct json_object *o = json_object_new_object();
	char *text = NULL;

	if (!o)
		return NULL;
	for (size_t i = 0; i < c->n; i++)
		json_object_object_add(o, c->names[i],
				       json_object_new_int64(totals[i] > INT64_MAX
								     ? INT64_MAX
								     : (int64_t)totals[i]));
	text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return text;
}

/* Writes @totals, the sample at @now and the removal of @gone[0..ngone)
 * in one transaction. */
static int write_snapshot(struct hy_counters *c, sqlite3 *db, int64_t now, const uint64_t *totals,
			  const int64_t *gone, size_t ngone, char *why, size_t why_size)
{
	sqlite3_stmt *put = NULL, *sample = NULL, *drop = NULL;
	char *text = sample_json(c, totals);
	int rc = 0;

	if (!text) {
		snprintf(why, why_size, "metrics: out of memory");
		return -ENOMEM;
	}
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot start writing the totals", why, why_size);
		free(text);
		return rc;
	}
	if (sqlite3_prepare_v2(db,
			       "INSERT OR REPLACE INTO metric_totals (name, value, saved_ns) "
			       "VALUES (?1, ?2, ?3)",
			       -1, &put, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(
		    db, "INSERT OR REPLACE INTO metric_samples (ts, counters) VALUES (?1, ?2)", -1,
		    &sample, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "DELETE FROM metric_samples WHERE ts = ?1", -1, &drop, NULL) !=
		    SQLITE_OK)
		goto fail;
	for (size_t i = 0; i < c->n; i++) {
		sqlite3_bind_text(put, 1, c->names[i], -1, SQLITE_STATIC);
		sqlite3_bind_int64(put, 2, totals[i] > INT64_MAX ? INT64_MAX : (int64_t)totals[i]);
		sqlite3_bind_int64(put, 3, now * 1000000000LL);
		if (sqlite3_step(put) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(put);
	}
	sqlite3_bind_int64(sample, 1, now);
	sqlite3_bind_text(sample, 2, text, -1, SQLITE_STATIC);
	if (sqlite3_step(sample) != SQLITE_DONE)
		goto fail;
	for (size_t i = 0; i < ngone; i++) {
		sqlite3_bind_int64(drop, 1, gone[i]);
		if (sqlite3_step(drop) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(drop);
	}
	/* samples from after now: the clock was set back */
	sqlite3_reset(drop);
	sqlite3_finalize(drop);
	drop = NULL;
	if (sqlite3_prepare_v2(db, "DELETE FROM metric_samples WHERE ts > ?1", -1, &drop, NULL) !=
		    SQLITE_OK ||
	    (sqlite3_bind_int64(drop, 1, now), sqlite3_step(drop)) != SQLITE_DONE)
		goto fail;
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	goto out;
fail:
	rc = db_fail(db, "cannot write the totals", why, why_size);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
	sqlite3_finalize(put);
	sqlite3_finalize(sample);
	sqlite3_finalize(drop);
	free(text);
	return rc;
}

int hy_counters_snapshot(struct hy_counters *c, sqlite3 *db, int64_t now, char *why,
			 size_t why_size)
{
	uint64_t *totals = malloc((c->n ? c->n : 1) * sizeof(*totals));
	int64_t *gone = NULL;
	bool *keep = NULL;
	size_t ngone = 0, kept = 0;
	bool back = false;
	int rc;

	if (!totals) {
		snprintf(why, why_size, "metrics: out of memory");
		return -ENOMEM;
	}
	pthread_mutex_lock(&c->lock);
	/* a sample from after now (the clock set back) or at this second
	 * gives way to this one */
	while (c->len && c->ts[c->len - 1] >= now)
		back = c->ts[--c->len] > now || back;
	rc = ring_grow(c);
	keep = rc ? NULL : malloc((c->len + 1) * sizeof(*keep));
	gone = keep ? malloc((c->len + 1) * sizeof(*gone)) : NULL;
	if (!gone) {
		pthread_mutex_unlock(&c->lock);
		free(totals);
		free(keep);
		snprintf(why, why_size, "metrics: out of memory");
		return -ENOMEM;
	}
	totals_locked(c, totals);
	c->ts[c->len] = now;
	memcpy(c->values + c->len * c->n, totals, c->n * sizeof(*totals));
	c->len++;
	hy_counters_thin(c->ts, c->len, now, c->interval, keep);
	for (size_t i = 0; i < c->len; i++) {
		if (!keep[i]) {
			gone[ngone++] = c->ts[i];
			continue;
		}
		if (kept != i) {
			c->ts[kept] = c->ts[i];
			memmove(c->values + kept * c->n, c->values + i * c->n,
				c->n * sizeof(*c->values));
		}
		kept++;
	}
	c->len = kept;
	c->snapshots++;
	c->last_snapshot = now;
	pthread_mutex_unlock(&c->lock);
	if (back)
		hy_log(LOG_NOTICE, "metrics: the clock went back; the samples taken after it are "
				   "dropped");
	rc = db ? write_snapshot(c, db, now, totals, gone, ngone, why, why_size) : 0;
	free(totals);
	free(gone);
	free(keep);
	return rc;
}
