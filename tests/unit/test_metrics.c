/* test_metrics.c - the Prometheus exposition (metrics.h): label escaping,
 * one HELP and TYPE a family, totals over the mount's figures, windows;
 * and the counters kept across mounts (counters.h): the window arithmetic,
 * the ring's thinning, restarts, and a round trip through the state
 * database. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>
#include <sqlite3.h>

#include "hybridfs/counters.h"
#include "hybridfs/metrics.h"
#include "hybridfs/state.h"
#include "suites.h"

static void test_escape_label(void)
{
	char out[64];

	CU_ASSERT_EQUAL(hy_metrics_escape_label("/home/ann/src", out, sizeof(out)), 13);
	CU_ASSERT_STRING_EQUAL(out, "/home/ann/src");
	/* backslash, double quote and newline, as the format says */
	hy_metrics_escape_label("a\\b\"c\nd", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "a\\\\b\\\"c\\nd");
	/* UTF-8 is kept; what is not UTF-8 becomes U+FFFD */
	hy_metrics_escape_label("caf\xc3\xa9 \xf0\x9f\x93\x81", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "caf\xc3\xa9 \xf0\x9f\x93\x81");
	hy_metrics_escape_label("a\xff"
				"b",
				out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "a\xef\xbf\xbd"
				    "b");
	/* a lone continuation byte, an overlong '/', a surrogate, a cut sequence */
	hy_metrics_escape_label("\x80|\xc0\xaf|\xed\xa0\x80|\xe2\x82", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out,
			       "\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
			       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd");
	/* cut like snprintf: the full length comes back, the output ends */
	CU_ASSERT_EQUAL(hy_metrics_escape_label("\"\"\"\"", out, 5), 8);
	CU_ASSERT_STRING_EQUAL(out, "\\\"\\\"");
	CU_ASSERT_EQUAL(hy_metrics_escape_label("", out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	CU_ASSERT_EQUAL(hy_metrics_escape_label(NULL, out, sizeof(out)), 0);
}

/* Counts the lines of @text that start with @prefix. */
static int lines_with(const char *text, const char *prefix)
{
	int n = 0;
	size_t len = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += strncmp(p, prefix, len) == 0;
	return n;
}

static char *render(const struct hy_metrics_mount *m, size_t n)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(hy_metrics_render(f, m, n), 0);
	fclose(f);
	return text;
}

static void test_render(void)
{
	static const char status_text[] =
		"{\"backing\": \"/b\", \"uuid\": \"u-1\", \"version\": \"9\","
		" \"backing_disk\": \"sda1\", \"started\": 1700000000,"
		" \"operations\": {\"read\": 5, \"write\": 2},"
		" \"bytes\": {\"read\": 4096, \"written\": 8192},"
		" \"cache\": null,"
		" \"metrics\": {\"last_snapshot\": 1700000060,"
		"   \"totals\": {\"operations.read\": 105, \"bytes.read\": 999999},"
		"   \"windows\": {\"5m\": {\"seconds\": 300, \"counters\": {\"operations.read\": "
		"3}},"
		"                 \"1d\": {\"seconds\": 4000, \"counters\": {\"operations.read\": "
		"50}}}}}";
	struct json_object *st = json_tokener_parse(status_text);
	struct hy_metrics_mount m[2] = {{"/mnt/a \"q\"\n", st, true}, {"/mnt/down", NULL, false}};
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	text = render(m, 2);
	/* one HELP and one TYPE a family, whatever the mounts and windows */
	CU_ASSERT_EQUAL(lines_with(text, "# HELP hybridfs_up "), 1);
	CU_ASSERT_EQUAL(lines_with(text, "# TYPE hybridfs_operations_total counter"), 1);
	CU_ASSERT_EQUAL(lines_with(text, "# TYPE hybridfs_window_operations gauge"), 1);
	CU_ASSERT_EQUAL(lines_with(text, "# HELP hybridfs_window_operations "), 1);
	CU_ASSERT_EQUAL(lines_with(text, "# TYPE hybridfs_start_time_seconds gauge"), 1);
	/* the label escaped; a mount that did not answer is up 0 and nothing else */
	CU_ASSERT_EQUAL(
		lines_with(text,
			   "hybridfs_up{mountpoint=\"/mnt/a \\\"q\\\"\\n\",device=\"sda1\"} 1"),
		1);
	CU_ASSERT_EQUAL(lines_with(text, "hybridfs_up{mountpoint=\"/mnt/down\",device=\"\"} 0"), 1);
	CU_ASSERT_PTR_NULL(strstr(text, "/mnt/down\",device=\"\",op"));
	/* a counter is the total kept across mounts when there is one ... */
	CU_ASSERT_PTR_NOT_NULL(
		strstr(text, "hybridfs_operations_total{mountpoint=\"/mnt/a \\\"q\\\"\\n\","
			     "device=\"sda1\",op=\"read\"} 105\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "hybridfs_read_bytes_total{mountpoint=\"/mnt/a "
					    "\\\"q\\\"\\n\",device=\"sda1\"} 999999\n"));
	/* ... else the mount's own figure */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "op=\"write\"} 2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "hybridfs_written_bytes_total{"));
	/* windows, and what they span; a window status lacks is left out */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "op=\"read\",window=\"5m\"} 3\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "op=\"read\",window=\"1d\"} 50\n"));
	CU_ASSERT_PTR_NULL(strstr(text, "window=\"1h\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(text,
				      "hybridfs_window_covered_seconds{mountpoint=\"/mnt/a "
				      "\\\"q\\\"\\n\",device=\"sda1\",window=\"1d\"} 4000\n"));
	/* a family no mount has is left out: no cache here */
	CU_ASSERT_PTR_NULL(strstr(text, "hybridfs_cache_dirty_bytes"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "hybridfs_info{mountpoint=\"/mnt/a \\\"q\\\"\\n\","
					    "device=\"sda1\",backing=\"/b\",uuid=\"u-1\","
					    "version=\"9\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "hybridfs_metrics_snapshot_time_seconds{"));
	free(text);

	/* no mount at all: hybridfs_up's HELP and TYPE, nothing else */
	text = render(NULL, 0);
	CU_ASSERT_EQUAL(lines_with(text, "hybridfs_"), 0);
	CU_ASSERT_EQUAL(lines_with(text, "# "), 2);
	free(text);
	json_object_put(st);

	/* every persistent counter is a _total of the catalogue */
	CU_ASSERT(hy_metrics_counter_count() > 40);
	CU_ASSERT_STRING_EQUAL(hy_metrics_counter_path(0), "operations.lookup");
	CU_ASSERT_PTR_NULL(hy_metrics_counter_path(hy_metrics_counter_count()));
}

static void test_write_file(void)
{
	char *tmp = hy_test_tmpdir(), *path = hy_test_path_in(tmp, "h.prom"), why[256];
	struct hy_metrics_mount m = {"/m", NULL, false};
	struct stat st;
	FILE *f;
	char line[128] = "";

	CU_ASSERT_EQUAL(hy_metrics_write_file(path, &m, 1, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 0777, 0644);
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_PTR_NOT_NULL(fgets(line, sizeof(line), f));
	fclose(f);
	CU_ASSERT_EQUAL(strncmp(line, "# HELP hybridfs_up", 18), 0);
	/* only the file is left: the temporary one was renamed over it */
	{
		char *other = hy_test_path_in(tmp, "none/h.prom");

		CU_ASSERT_EQUAL(hy_metrics_write_file(other, &m, 1, why, sizeof(why)), -ENOENT);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, other));
		free(other);
	}
	hy_test_rmtree(tmp);
	free(tmp), free(path);
}

/* ---- counters.h: the arithmetic ------------------------------------------ */

static void test_window_ref(void)
{
	const int64_t ts[] = {1000, 1060, 1300, 1600};

	/* the newest sample at least the window old */
	CU_ASSERT_EQUAL(hy_counters_window_ref(ts, 4, 1600, 300), 2);
	CU_ASSERT_EQUAL(hy_counters_window_ref(ts, 4, 1601, 300), 2);
	CU_ASSERT_EQUAL(hy_counters_window_ref(ts, 4, 1599, 300), 1);
	CU_ASSERT_EQUAL(hy_counters_window_ref(ts, 4, 1360, 300), 1);
	CU_ASSERT_EQUAL(hy_counters_window_ref(ts, 4, 9999, 300), 3);
	/* none that old: the oldest */
	CU_ASSERT_EQUAL(hy_counters_window_ref(ts, 4, 1200, 300), 0);
	CU_ASSERT_EQUAL(hy_counters_window_ref(ts, 1, 1200, 300), 0);
}

/* Two days of a sample a second, thinned as they come: the ring stays
 * small, and every window's reference is at most its resolution older
 * than the window. */
static void test_thin(void)
{
	enum { CAP = 4096 };
	static int64_t ts[CAP];
	static bool keep[CAP];
	size_t n = 0, most = 0;
	const int64_t start = 1700000000, windows[] = {300, 3600, 86400}, slack[] = {1, 60, 300};

	for (int64_t now = start; now < start + 2 * 86400; now++) {
		size_t k = 0;

		CU_ASSERT_FATAL(n < CAP);
		ts[n++] = now;
		hy_counters_thin(ts, n, now, 1, keep);
		CU_ASSERT_FATAL(keep[n - 1]);
		for (size_t i = 0; i < n; i++)
			if (keep[i])
				ts[k++] = ts[i];
		n = k;
		most = n > most ? n : most;
		if (now % 997 != 0)
			continue;
		for (int w = 0; w < 3; w++) {
			size_t ref = hy_counters_window_ref(ts, n, now, windows[w]);

			if (now - start < windows[w]) {
				CU_ASSERT_EQUAL(ref, 0); /* younger than the window */
				CU_ASSERT_EQUAL(ts[0], start);
			} else {
				CU_ASSERT(now - ts[ref] >= windows[w]);
				CU_ASSERT(now - ts[ref] <= windows[w] + slack[w]);
			}
		}
	}
	/* 301 + 61 + 289 + 1 at most */
	CU_ASSERT(most <= 660);
	CU_ASSERT(most > 600);
}

static const char *const names[] = {"operations.read", "bytes.read"};

static void test_restart_and_windows(void)
{
	struct hy_counters *c;
	uint64_t v[2], out[2];
	bool have[2] = {true, false};
	int64_t covered;

	CU_ASSERT_EQUAL_FATAL(hy_counters_new(names, 2, 10, &c), 0);
	CU_ASSERT_EQUAL(hy_counters_window(c, 100, 300, out, &covered), -ENODATA);
	CU_ASSERT_EQUAL(hy_counters_snapshot(c, NULL, 1000, NULL, 0), 0);
	v[0] = 7, v[1] = 99;
	hy_counters_update(c, v, have);
	v[0] = 10;
	hy_counters_update(c, v, have);
	/* the source restarted: 4 more, not 10 - 4 less */
	v[0] = 4;
	hy_counters_update(c, v, have);
	hy_counters_totals(c, out);
	CU_ASSERT_EQUAL(out[0], 14);
	CU_ASSERT_EQUAL(out[1], 0); /* never reported */
	CU_ASSERT_EQUAL(hy_counters_snapshot(c, NULL, 1300, NULL, 0), 0);
	v[0] = 5;
	hy_counters_update(c, v, have);
	/* at 1300 + 300: the reference is the sample at 1300 (total 14) */
	CU_ASSERT_EQUAL(hy_counters_window(c, 1600, 300, out, &covered), 0);
	CU_ASSERT_EQUAL(out[0], 1);
	CU_ASSERT_EQUAL(covered, 300);
	/* an hour: no sample that old, the oldest (1000, total 0), 600 s */
	CU_ASSERT_EQUAL(hy_counters_window(c, 1600, 3600, out, &covered), 0);
	CU_ASSERT_EQUAL(out[0], 15);
	CU_ASSERT_EQUAL(covered, 600);
	hy_counters_free(c);
}

/* The totals and the samples survive a "remount" through the database, a
 * crash loses only what came after the last snapshot, and a clock set back
 * drops the samples from its future. */
static void test_round_trip(void)
{
	char *tmp = hy_test_tmpdir(), *dir = hy_test_path_in(tmp, "state"), why[512];
	struct hy_state *state;
	struct hy_counters *c;
	uint64_t v[2] = {40, 4096}, out[2];
	bool have[2] = {true, true};
	int64_t covered;
	sqlite3_stmt *stmt;

	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/b", false, &state, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_counters_new(names, 2, 60, &c), 0);
	CU_ASSERT_EQUAL(hy_counters_load(c, state->db, 1000, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_counters_snapshot(c, state->db, 1000, why, sizeof(why)), 0);
	hy_counters_update(c, v, have);
	CU_ASSERT_EQUAL(hy_counters_snapshot(c, state->db, 1060, why, sizeof(why)), 0);
	/* counted after the last snapshot: lost in a crash */
	v[0] = 45;
	hy_counters_update(c, v, have);
	hy_counters_free(c);

	CU_ASSERT_EQUAL_FATAL(hy_counters_new(names, 2, 60, &c), 0);
	CU_ASSERT_EQUAL(hy_counters_load(c, state->db, 1100, why, sizeof(why)), 0);
	hy_counters_totals(c, out);
	CU_ASSERT_EQUAL(out[0], 40);
	CU_ASSERT_EQUAL(out[1], 4096);
	/* this mount's figures start at zero again, on top */
	v[0] = 2, v[1] = 0;
	hy_counters_update(c, v, have);
	hy_counters_totals(c, out);
	CU_ASSERT_EQUAL(out[0], 42);
	CU_ASSERT_EQUAL(hy_counters_window(c, 1100, 300, out, &covered), 0);
	CU_ASSERT_EQUAL(out[0], 42); /* the oldest sample, at 1000, had 0 */
	CU_ASSERT_EQUAL(covered, 100);
	CU_ASSERT_EQUAL(hy_counters_snapshot(c, state->db, 1100, why, sizeof(why)), 0);
	hy_counters_free(c);
	CU_ASSERT_EQUAL(sqlite3_prepare_v2(state->db,
					   "SELECT value FROM metric_totals "
					   "WHERE name = 'operations.read'",
					   -1, &stmt, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(stmt), SQLITE_ROW);
	CU_ASSERT_EQUAL(sqlite3_column_int64(stmt, 0), 42);
	sqlite3_finalize(stmt);

	/* the clock set back to 1050: the samples at 1060 and 1100 go */
	CU_ASSERT_EQUAL_FATAL(hy_counters_new(names, 2, 60, &c), 0);
	CU_ASSERT_EQUAL(hy_counters_load(c, state->db, 1050, why, sizeof(why)), 0);
	hy_counters_totals(c, out);
	CU_ASSERT_EQUAL(out[0], 42); /* totals never go back */
	CU_ASSERT_EQUAL(hy_counters_snapshot(c, state->db, 1050, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(sqlite3_prepare_v2(state->db,
					   "SELECT count(*), max(ts) FROM metric_samples", -1,
					   &stmt, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(stmt), SQLITE_ROW);
	CU_ASSERT_EQUAL(sqlite3_column_int64(stmt, 0), 2);
	CU_ASSERT_EQUAL(sqlite3_column_int64(stmt, 1), 1050);
	sqlite3_finalize(stmt);
	hy_counters_free(c);

	/* a damaged sample is read as zeros, never refused */
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "INSERT INTO metric_samples VALUES (900, 'not json');", NULL,
				     NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL_FATAL(hy_counters_new(names, 2, 60, &c), 0);
	CU_ASSERT_EQUAL(hy_counters_load(c, state->db, 1100, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_counters_window(c, 1100, 3600, out, &covered), 0);
	CU_ASSERT_EQUAL(out[0], 42);
	CU_ASSERT_EQUAL(covered, 200);
	hy_counters_free(c);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp), free(dir);
}

int hy_test_add_metrics(void)
{
	CU_pSuite s = CU_add_suite("metrics", NULL, NULL);

	if (!s || !CU_add_test(s, "label values escaped", test_escape_label) ||
	    !CU_add_test(s, "exposition of mounts", test_render) ||
	    !CU_add_test(s, "textfile written whole", test_write_file) ||
	    !CU_add_test(s, "window reference sample", test_window_ref) ||
	    !CU_add_test(s, "ring thinned by age", test_thin) ||
	    !CU_add_test(s, "restarts and windows", test_restart_and_windows) ||
	    !CU_add_test(s, "totals across a remount", test_round_trip))
		return -1;
	return 0;
}
