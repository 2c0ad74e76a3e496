/* test_trace.c - trace export (csv, fiu, msr) against golden text, the
 * --since/--until window, write errors, and the time and format parsers. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hybridfs/state.h"
#include "hybridfs/trace.h"
#include "suites.h"

static char why[1024];

/* Three processes (a name with a space, one with a comma, one with a quote
 * and an exe with a comma), three files, five requests in log order (the
 * fourth is earlier than the third): reads and writes, with and without a
 * physical block, one spanning three blocks, one classified. */
static const char fixture_sql[] =
	"INSERT INTO processes VALUES (1, 1234, 'my app', '/usr/bin/my app', 1);"
	"INSERT INTO processes VALUES (2, 42, 'cat,dog', NULL, 2);"
	"INSERT INTO processes VALUES (3, 7, 'q\"x', '/bin/a,b', 3);"
	"INSERT INTO files (id, dev, ino, birth_ns, path, first_seen_ns) VALUES (1, 8, 100, 1, "
	"'/a', 1);"
	"INSERT INTO files (id, dev, ino, birth_ns, path, first_seen_ns) VALUES (2, 8, 101, 1, "
	"'/b', 1);"
	"INSERT INTO files (id, dev, ino, birth_ns, path, first_seen_ns) VALUES (3, 8, 102, 1, "
	"'/c', 1);"
	"INSERT INTO access_log VALUES (1764460800000000000, 1, 1, 0, 4096, 0, NULL, 100);"
	"INSERT INTO access_log VALUES (1764460800000000500, 2, 2, 4095, 2, 1, NULL, NULL);"
	"INSERT INTO access_log VALUES (1764460801000000000, 1, 2, 8192, 10000, 0, 3, NULL);"
	"INSERT INTO access_log VALUES (1764460800900000000, 3, 1, 5000, 100, 1, NULL, 7);"
	"INSERT INTO access_log VALUES (1764460802000000000, 2, 3, 1, 511, 0, NULL, NULL);";

#define CSV_HEADER                                                                                 \
	"ts_ns,pid,process,exe,file_id,offset,length,block_first,block_count,mode,class,"          \
	"phys_block\n"
#define CSV_1 "1764460800000000000,1234,my app,/usr/bin/my app,1,0,4096,0,1,R,,100\n"
#define CSV_2 "1764460800000000500,42,\"cat,dog\",,2,4095,2,0,2,W,,\n"
#define CSV_3 "1764460801000000000,1234,my app,/usr/bin/my app,2,8192,10000,2,3,R,random,\n"
#define CSV_4 "1764460800900000000,7,\"q\"\"x\",\"/bin/a,b\",1,5000,100,1,1,W,,7\n"
#define CSV_5 "1764460802000000000,42,\"cat,dog\",,3,1,511,0,1,R,,\n"

/* block 100 is byte 409600; file 2 starts at 2 << 40 = 2199023255552 and
 * file 3 at 3298534883328; block 7 byte 904 is 29576 */
#define FIU_1 "1764460800000000000 1234 my_app 800 8 R 0 1 0\n"
#define FIU_2 "1764460800000000500 42 cat,dog 4294967303 2 W 0 2 0\n"
#define FIU_3 "1764460801000000000 1234 my_app 4294967312 20 R 0 2 0\n"
#define FIU_4 "1764460800900000000 7 q\"x 57 1 W 0 1 0\n"
#define FIU_5 "1764460802000000000 42 cat,dog 6442450944 1 R 0 3 0\n"

#define MSR_1 "134089344000000000,hybridfs,0,Read,409600,4096,0\n"
#define MSR_2 "134089344000000005,hybridfs,0,Write,2199023259647,2,0\n"
#define MSR_3 "134089344010000000,hybridfs,0,Read,2199023263744,10000,0\n"
#define MSR_4 "134089344009000000,hybridfs,0,Write,29576,100,0\n"
#define MSR_5 "134089344020000000,hybridfs,0,Read,3298534883329,511,0\n"

static struct hy_state *open_db(char **tmp, bool fill)
{
	struct hy_state *state = NULL;

	*tmp = hy_test_tmpdir();
	if (!*tmp)
		return NULL;
	if (hy_state_open(*tmp, "/backing", false, &state, why, sizeof(why)) != 0)
		return NULL;
	if (fill && sqlite3_exec(state->db, fixture_sql, NULL, NULL, NULL) != SQLITE_OK) {
		hy_state_close(state);
		return NULL;
	}
	return state;
}

static void close_db(struct hy_state *state, char *tmp)
{
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp);
}

/* Exports into a string (caller frees); the return code in *@rc. */
static char *export_text(struct hy_state *state, enum hy_trace_format format, int64_t since,
			 int64_t until, uint64_t *rows, int *rc)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f) {
		*rc = -errno;
		return NULL;
	}
	*rc = hy_trace_export(state->db, format, since, until, f, rows, why, sizeof(why));
	fclose(f);
	return buf;
}

static void check_export(struct hy_state *state, enum hy_trace_format format, int64_t since,
			 int64_t until, const char *expected, uint64_t expected_rows)
{
	uint64_t rows = 99;
	int rc;
	char *text = export_text(state, format, since, until, &rows, &rc);

	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_STRING_EQUAL(text, expected);
	if (strcmp(text, expected) != 0)
		fprintf(stderr, "\ngot:\n%s\nexpected:\n%s\n", text, expected);
	CU_ASSERT_EQUAL(rows, expected_rows);
	free(text);
}

static void test_golden(void)
{
	char *tmp;
	struct hy_state *state = open_db(&tmp, true);

	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	check_export(state, HY_TRACE_CSV, INT64_MIN, INT64_MAX,
		     CSV_HEADER CSV_1 CSV_2 CSV_3 CSV_4 CSV_5, 5);
	check_export(state, HY_TRACE_FIU, INT64_MIN, INT64_MAX, FIU_1 FIU_2 FIU_3 FIU_4 FIU_5, 5);
	check_export(state, HY_TRACE_MSR, INT64_MIN, INT64_MAX, MSR_1 MSR_2 MSR_3 MSR_4 MSR_5, 5);
	close_db(state, tmp);
}

/* since inclusive, until exclusive; log order kept inside the window */
static void test_window(void)
{
	char *tmp;
	struct hy_state *state = open_db(&tmp, true);

	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	check_export(state, HY_TRACE_CSV, 1764460800000000500, 1764460801000000000,
		     CSV_HEADER CSV_2 CSV_4, 2);
	check_export(state, HY_TRACE_CSV, 1764460800000000501, 1764460801000000001,
		     CSV_HEADER CSV_3 CSV_4, 2);
	check_export(state, HY_TRACE_FIU, 1764460800000000000, 1764460800000000001, FIU_1, 1);
	check_export(state, HY_TRACE_MSR, 1764460802000000000, INT64_MAX, MSR_5, 1);
	check_export(state, HY_TRACE_MSR, INT64_MIN, 1764460800000000000, "", 0);
	/* an empty or reversed window */
	check_export(state, HY_TRACE_CSV, 1764460800000000000, 1764460800000000000, CSV_HEADER, 0);
	check_export(state, HY_TRACE_FIU, INT64_MAX, INT64_MIN, "", 0);
	close_db(state, tmp);
}

static void test_empty_log(void)
{
	char *tmp;
	struct hy_state *state = open_db(&tmp, false);

	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	check_export(state, HY_TRACE_CSV, INT64_MIN, INT64_MAX, CSV_HEADER, 0);
	check_export(state, HY_TRACE_FIU, INT64_MIN, INT64_MAX, "", 0);
	check_export(state, HY_TRACE_MSR, INT64_MIN, INT64_MAX, "", 0);
	close_db(state, tmp);
}

/* A request whose process row is missing keeps its place, fields empty;
 * a process without a name stays nine fields in fiu. */
static void test_missing_process(void)
{
	char *tmp;
	struct hy_state *state = open_db(&tmp, false);

	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	CU_ASSERT_EQUAL_FATAL(
		sqlite3_exec(state->db,
			     "INSERT INTO processes VALUES (1, 5, '', NULL, 1);"
			     "INSERT INTO access_log VALUES (10, 9, 4, 0, 512, 1, NULL, NULL);"
			     "INSERT INTO access_log VALUES (11, 1, 4, 0, 512, 0, NULL, NULL);",
			     NULL, NULL, NULL),
		SQLITE_OK);
	check_export(state, HY_TRACE_CSV, INT64_MIN, INT64_MAX,
		     CSV_HEADER "10,,,,4,0,512,0,1,W,,\n"
				"11,5,,,4,0,512,0,1,R,,\n",
		     2);
	check_export(state, HY_TRACE_FIU, INT64_MIN, INT64_MAX,
		     "10 0 - 8589934592 1 W 0 4 0\n"
		     "11 5 - 8589934592 1 R 0 4 0\n",
		     2);
	close_db(state, tmp);
}

static void test_damaged(void)
{
	char *tmp;
	struct hy_state *state = open_db(&tmp, false);
	uint64_t rows;
	int rc;
	char *text;
	sqlite3 *raw;

	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	CU_ASSERT_EQUAL_FATAL(sqlite3_exec(state->db,
					   "INSERT INTO access_log VALUES (1, 1, 1, 0, 1, 7, NULL,"
					   " NULL);",
					   NULL, NULL, NULL),
			      SQLITE_OK);
	text = export_text(state, HY_TRACE_MSR, INT64_MIN, INT64_MAX, &rows, &rc);
	CU_ASSERT_EQUAL(rc, -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "row 1 is damaged"));
	free(text);
	close_db(state, tmp);

	/* a class no enum hy_request_class has: no name to give it */
	state = open_db(&tmp, false);
	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	CU_ASSERT_EQUAL_FATAL(sqlite3_exec(state->db,
					   "INSERT INTO access_log VALUES (1, 1, 1, 0, 1, 0, 4,"
					   " NULL);",
					   NULL, NULL, NULL),
			      SQLITE_OK);
	text = export_text(state, HY_TRACE_CSV, INT64_MIN, INT64_MAX, &rows, &rc);
	CU_ASSERT_EQUAL(rc, -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "row 1 is damaged"));
	free(text);
	close_db(state, tmp);

	/* a database without the tables: the database's error */
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(":memory:", &raw), SQLITE_OK);
	CU_ASSERT_EQUAL(hy_trace_export(raw, HY_TRACE_CSV, 0, 1, stdout, &rows, why, sizeof(why)),
			-EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "no such table"));
	sqlite3_close(raw);
}

static void test_write_error(void)
{
	char *tmp;
	struct hy_state *state = open_db(&tmp, true);
	uint64_t rows = 99;
	FILE *full;

	CU_ASSERT_PTR_NOT_NULL_FATAL(state);
	for (int format = HY_TRACE_CSV; format <= HY_TRACE_MSR; format++) {
		full = fopen("/dev/full", "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(full);
		CU_ASSERT_EQUAL(hy_trace_export(state->db, (enum hy_trace_format)format, INT64_MIN,
						INT64_MAX, full, &rows, why, sizeof(why)),
				-ENOSPC);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, strerror(ENOSPC)));
		CU_ASSERT_EQUAL(rows, 0);
		fclose(full);
	}
	/* unbuffered, the first write fails */
	full = fopen("/dev/full", "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(full);
	setvbuf(full, NULL, _IONBF, 0);
	CU_ASSERT_EQUAL(hy_trace_export(state->db, HY_TRACE_FIU, INT64_MIN, INT64_MAX, full, &rows,
					why, sizeof(why)),
			-ENOSPC);
	fclose(full);
	close_db(state, tmp);
}

static void test_format_parse(void)
{
	enum hy_trace_format f = HY_TRACE_MSR;

	CU_ASSERT_EQUAL(hy_trace_format_parse("csv", &f, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(f, HY_TRACE_CSV);
	CU_ASSERT_EQUAL(hy_trace_format_parse("fiu", &f, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(f, HY_TRACE_FIU);
	CU_ASSERT_EQUAL(hy_trace_format_parse("msr", &f, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(f, HY_TRACE_MSR);
	CU_ASSERT_EQUAL(hy_trace_format_parse("blktrace", &f, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"blktrace\""));
	CU_ASSERT_EQUAL(hy_trace_format_parse("CSV", &f, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"CSV\""));
	CU_ASSERT_EQUAL(hy_trace_format_parse("", &f, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"\""));
	CU_ASSERT_EQUAL(f, HY_TRACE_MSR);
}

#define NOW INT64_C(1764460800000000123)

static void check_time(const char *text, int64_t expected)
{
	int64_t out = 0;
	int rc = hy_trace_parse_time(text, NOW, &out, why, sizeof(why));

	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(out, expected);
	if (rc != 0 || out != expected)
		fprintf(stderr, "\n\"%s\": rc %d, %lld (%s)\n", text, rc, (long long)out, why);
}

static void check_bad_time(const char *text, const char *reason)
{
	int64_t out = 42;
	char quoted[256];

	snprintf(quoted, sizeof(quoted), "\"%s\"", text);
	why[0] = '\0';
	CU_ASSERT_EQUAL(hy_trace_parse_time(text, NOW, &out, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, quoted));
	if (reason)
		CU_ASSERT_PTR_NOT_NULL(strstr(why, reason));
	CU_ASSERT_EQUAL(out, 42);
}

static void test_parse_time(void)
{
	/* seconds since the epoch */
	check_time("1764460800", INT64_C(1764460800000000000));
	check_time("1764460800.5", INT64_C(1764460800500000000));
	check_time("1764460800.123456789", INT64_C(1764460800123456789));
	check_time("1764460800.1234567891", INT64_C(1764460800123456789));
	check_time("0", 0);
	check_time("9223372036", INT64_C(9223372036000000000));
	/* ISO 8601: 2026-11-30T00:00:00Z is 1795996800 */
	check_time("2026-11-30T02:00:00Z", INT64_C(1796004000000000000));
	check_time("2026-11-30T02:00:00+02:00", INT64_C(1795996800000000000));
	check_time("2026-11-30T02:00:00-0130", INT64_C(1796009400000000000));
	check_time("2026-11-30T02:00:00.25Z", INT64_C(1796004000250000000));
	check_time("2026-11-30 02:00", INT64_C(1796004000000000000));
	check_time("2026-11-30T02:00", INT64_C(1796004000000000000));
	check_time("2026-11-30", INT64_C(1795996800000000000));
	check_time("1970-01-01", 0);
	check_time("1969-12-31T23:59:59Z", -INT64_C(1000000000));
	check_time("2028-02-29", INT64_C(1835395200000000000));
	check_time("2000-02-29", INT64_C(951782400000000000));
	/* before now */
	check_time("-90s", NOW - INT64_C(90000000000));
	check_time("-15m", NOW - INT64_C(900000000000));
	check_time("-2h", NOW - INT64_C(7200000000000));
	check_time("-1d", NOW - INT64_C(86400000000000));
	check_time("-0s", NOW);

	check_bad_time("yesterday", "ISO 8601");
	check_bad_time("", NULL);
	check_bad_time("-5x", "unit");
	check_bad_time("-5", "unit");
	check_bad_time("-s", NULL);
	check_bad_time("-5s ago", NULL);
	check_bad_time("2026-13-01", "month 13");
	check_bad_time("2026-00-10", "month 0");
	check_bad_time("2026-02-29", "day 29");
	check_bad_time("1900-02-29", "day 29");
	check_bad_time("2026-11-31", "day 31");
	check_bad_time("2026-11-30T24:00", "time of day");
	check_bad_time("2026-11-30T02:60", "time of day");
	check_bad_time("2026-11-30T02:00+25:00", "offset");
	check_bad_time("2026-11-30T2:00", NULL);
	check_bad_time("2026-11-30X", NULL);
	check_bad_time("2026-11-30T02:00:00ZZ", NULL);
	check_bad_time("2026-1-30", NULL);
	check_bad_time("1764460800.", NULL);
	check_bad_time(".5", NULL);
	check_bad_time("1764460800s", NULL);
	check_bad_time("+1764460800", NULL);
	check_bad_time("9223372037", "out of range");
	check_bad_time("99999999999999999999", "out of range");
	check_bad_time("2263-01-01", "out of range");
	check_bad_time("-99999999999d", "too far");
}

int hy_test_add_trace(void)
{
	CU_pSuite s = CU_add_suite("trace", NULL, NULL);

	if (!s || !CU_add_test(s, "golden csv, fiu and msr", test_golden) ||
	    !CU_add_test(s, "since and until window", test_window) ||
	    !CU_add_test(s, "empty log", test_empty_log) ||
	    !CU_add_test(s, "missing process row", test_missing_process) ||
	    !CU_add_test(s, "damaged rows and databases", test_damaged) ||
	    !CU_add_test(s, "write error", test_write_error) ||
	    !CU_add_test(s, "format names", test_format_parse) ||
	    !CU_add_test(s, "time parser", test_parse_time))
		return -1;
	return 0;
}
