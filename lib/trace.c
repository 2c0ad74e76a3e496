/* trace.c - see include/hybridfs/trace.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "hybridfs/classify.h"
#include "hybridfs/trace.h"

#define NS_PER_S    INT64_C(1000000000)
#define BLOCK_SIZE  UINT64_C(4096)
#define SECTOR_SIZE UINT64_C(512)
/* 100 ns ticks from 1601-01-01 to 1970-01-01 */
#define WINDOWS_EPOCH_TICKS INT64_C(116444736000000000)

int hy_trace_format_parse(const char *name, enum hy_trace_format *out, char *why, size_t why_size)
{
	static const struct {
		const char *name;
		enum hy_trace_format format;
	} formats[] = {
		{"csv", HY_TRACE_CSV},
		{"fiu", HY_TRACE_FIU},
		{"msr", HY_TRACE_MSR},
	};

	for (size_t i = 0; name && i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(name, formats[i].name) == 0) {
			*out = formats[i].format;
			return 0;
		}
	}
	snprintf(why, why_size, "unknown trace format \"%s\" (expected csv, fiu or msr)",
		 name ? name : "");
	return -EINVAL;
}

/* ---- times ---- */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Reads exactly @n digits at *@p into @out and advances. */
static bool fixed_digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!is_digit((*p)[i]))
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return true;
}

/* Reads ".ddd..." (at least one digit) as nanoseconds; digits past the
 * ninth are dropped. */
static bool fraction_ns(const char **p, int64_t *out)
{
	int64_t ns = 0, scale = NS_PER_S / 10;
	const char *s = *p;

	if (*s != '.' || !is_digit(s[1]))
		return false;
	for (s++; is_digit(*s); s++) {
		ns += (*s - '0') * scale;
		scale /= 10;
	}
	*p = s;
	*out = ns;
	return true;
}

/* Days from 1970-01-01 to @y-@m-@d of the proleptic Gregorian calendar
 * (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : days[m - 1];
}

/* seconds * 10^9 + ns, or false when it does not fit in int64. */
static bool to_ns(int64_t seconds, int64_t ns, int64_t *out)
{
	int64_t v;

	if (__builtin_mul_overflow(seconds, NS_PER_S, &v) || __builtin_add_overflow(v, ns, &v))
		return false;
	*out = v;
	return true;
}

static int bad_time(const char *text, const char *what, char *why, size_t why_size)
{
	snprintf(why, why_size, "bad time \"%s\": %s", text, what);
	return -EINVAL;
}

#define TIME_FORMS                                                                                 \
	"expected seconds since the epoch, an ISO 8601 date such as 2026-11-30T02:00:00Z, or a "   \
	"time ago such as -90s, -15m, -2h or -1d"

/* "-90s", "-15m", "-2h", "-1d" */
static int parse_relative(const char *text, int64_t now_ns, int64_t *out_ns, char *why,
			  size_t why_size)
{
	const char *p = text + 1;
	int64_t n = 0, unit, ago;

	if (!is_digit(*p))
		return bad_time(text, TIME_FORMS, why, why_size);
	for (; is_digit(*p); p++) {
		if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, *p - '0', &n))
			return bad_time(text, "too far in the past", why, why_size);
	}
	switch (p[0]) {
	case 's':
		unit = NS_PER_S;
		break;
	case 'm':
		unit = 60 * NS_PER_S;
		break;
	case 'h':
		unit = 3600 * NS_PER_S;
		break;
	case 'd':
		unit = 86400 * NS_PER_S;
		break;
	default:
		return bad_time(text, "the unit must be s, m, h or d", why, why_size);
	}
	if (p[1] != '\0')
		return bad_time(text, "the unit must be s, m, h or d", why, why_size);
	if (__builtin_mul_overflow(n, unit, &ago) || __builtin_sub_overflow(now_ns, ago, out_ns))
		return bad_time(text, "too far in the past", why, why_size);
	return 0;
}

/* "1764460800" or "1764460800.25" */
static int parse_epoch(const char *text, int64_t *out_ns, char *why, size_t why_size)
{
	const char *p = text;
	int64_t seconds = 0, ns = 0;

	if (!is_digit(*p))
		return bad_time(text, TIME_FORMS, why, why_size);
	for (; is_digit(*p); p++) {
		if (__builtin_mul_overflow(seconds, 10, &seconds) ||
		    __builtin_add_overflow(seconds, *p - '0', &seconds))
			return bad_time(text, "out of range", why, why_size);
	}
	if (*p == '.' && !fraction_ns(&p, &ns))
		return bad_time(text, TIME_FORMS, why, why_size);
	if (*p != '\0')
		return bad_time(text, TIME_FORMS, why, why_size);
	if (!to_ns(seconds, ns, out_ns))
		return bad_time(text, "out of range", why, why_size);
	return 0;
}

/* YYYY-MM-DD[(T| )HH:MM[:SS[.fff]]][Z|(+|-)HH[:]MM] */
static int parse_iso(const char *text, int64_t *out_ns, char *why, size_t why_size)
{
	const char *p = text;
	int year, month, day, hour = 0, minute = 0, second = 0, oh = 0, om = 0;
	int64_t ns = 0, seconds, offset = 0;
	char what[96];

	if (!fixed_digits(&p, 4, &year) || *p++ != '-' || !fixed_digits(&p, 2, &month) ||
	    *p++ != '-' || !fixed_digits(&p, 2, &day))
		return bad_time(text, TIME_FORMS, why, why_size);
	if (month < 1 || month > 12) {
		snprintf(what, sizeof(what), "month %d is out of range", month);
		return bad_time(text, what, why, why_size);
	}
	if (day < 1 || day > days_in_month(year, month)) {
		snprintf(what, sizeof(what), "day %d is out of range", day);
		return bad_time(text, what, why, why_size);
	}
	if (*p == 'T' || *p == ' ') {
		p++;
		if (!fixed_digits(&p, 2, &hour) || *p++ != ':' || !fixed_digits(&p, 2, &minute))
			return bad_time(text, TIME_FORMS, why, why_size);
		if (*p == ':') {
			p++;
			if (!fixed_digits(&p, 2, &second))
				return bad_time(text, TIME_FORMS, why, why_size);
			if (*p == '.' && !fraction_ns(&p, &ns))
				return bad_time(text, TIME_FORMS, why, why_size);
		}
		if (hour > 23 || minute > 59 || second > 59)
			return bad_time(text, "the time of day is out of range", why, why_size);
		if (*p == 'Z') {
			p++;
		} else if (*p == '+' || *p == '-') {
			int sign = *p++ == '-' ? -1 : 1;

			if (!fixed_digits(&p, 2, &oh))
				return bad_time(text, TIME_FORMS, why, why_size);
			if (*p == ':')
				p++;
			if (!fixed_digits(&p, 2, &om))
				return bad_time(text, TIME_FORMS, why, why_size);
			if (oh > 23 || om > 59)
				return bad_time(text, "the UTC offset is out of range", why,
						why_size);
			offset = sign * (oh * 3600 + om * 60);
		}
	}
	if (*p != '\0')
		return bad_time(text, TIME_FORMS, why, why_size);
	seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second -
		  offset;
	if (!to_ns(seconds, ns, out_ns))
		return bad_time(text, "out of range", why, why_size);
	return 0;
}

int hy_trace_parse_time(const char *text, int64_t now_ns, int64_t *out_ns, char *why,
			size_t why_size)
{
	size_t digits;

	if (!text || !*text)
		return bad_time(text ? text : "", TIME_FORMS, why, why_size);
	if (text[0] == '-')
		return parse_relative(text, now_ns, out_ns, why, why_size);
	for (digits = 0; is_digit(text[digits]); digits++)
		;
	if (digits == 4 && text[4] == '-')
		return parse_iso(text, out_ns, why, why_size);
	return parse_epoch(text, out_ns, why, why_size);
}

/* ---- export ---- */

/* One statement, in log order; LEFT JOINs so that a request whose process
 * or file row is missing is still exported (with those fields empty). The
 * files join adds no column today: SQLite drops it, and it is where a
 * file's columns will come from. */
static const char export_sql[] =
	"SELECT a.rowid, a.ts_ns, p.pid, p.comm, p.exe, a.file_id, a.offset, a.length,"
	" a.mode, a.class, a.phys_block"
	" FROM access_log AS a"
	" LEFT JOIN processes AS p ON p.id = a.process_id"
	" LEFT JOIN files AS f ON f.id = a.file_id"
	" WHERE a.ts_ns >= ?1 AND a.ts_ns < ?2"
	" ORDER BY a.rowid";

enum {
	COL_ROWID,
	COL_TS,
	COL_PID,
	COL_COMM,
	COL_EXE,
	COL_FILE,
	COL_OFFSET,
	COL_LENGTH,
	COL_MODE,
	COL_CLASS,
	COL_PHYS,
};

struct row {
	int64_t rowid, ts_ns, pid, file_id, offset, length, klass, phys_block;
	const char *comm, *exe; /* NULL when unknown */
	bool has_pid, has_class, has_phys, write;
};

/* The csv's class column: ReCA's class by name (classify.h's enum, as
 * the log stores it); engine/classify.c's hy_classify_name() says the
 * same, but lib/ links nothing above it. */
static const char *const class_names[HY_CLASS_COUNT] = {
	[HY_CLASS_SEQUENTIAL] = "sequential",
	[HY_CLASS_STRIDED] = "strided",
	[HY_CLASS_OVERLAPPED] = "overlapped",
	[HY_CLASS_RANDOM] = "random",
};

static void put_int(FILE *out, bool known, int64_t v)
{
	if (known)
		fprintf(out, "%" PRId64, v);
}

/* RFC 4180: quoted when it holds a comma, quote or line break; quotes
 * doubled. */
static void put_csv_text(FILE *out, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	putc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			putc('"', out);
		putc(*s, out);
	}
	putc('"', out);
}

static void put_csv(FILE *out, const struct row *r)
{
	uint64_t off = (uint64_t)r->offset, len = (uint64_t)r->length;
	uint64_t first = off / BLOCK_SIZE,
		 count = (off + len + BLOCK_SIZE - 1) / BLOCK_SIZE - first;

	fprintf(out, "%" PRId64 ",", r->ts_ns);
	put_int(out, r->has_pid, r->pid);
	putc(',', out);
	put_csv_text(out, r->comm);
	putc(',', out);
	put_csv_text(out, r->exe);
	fprintf(out, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%c,", r->file_id,
		r->offset, r->length, first, count, r->write ? 'W' : 'R');
	if (r->has_class)
		fputs(class_names[r->klass], out);
	putc(',', out);
	put_int(out, r->has_phys, r->phys_block);
	putc('\n', out);
}

/* The request's first byte on one disk: on the backing device when its
 * block is known (the rest of the request assumed contiguous), else in the
 * synthetic space file_id * 2^40 + offset. */
static uint64_t disk_address(const struct row *r)
{
	if (r->has_phys)
		return (uint64_t)r->phys_block * BLOCK_SIZE + (uint64_t)r->offset % BLOCK_SIZE;
	return ((uint64_t)r->file_id << HY_TRACE_SYNTHETIC_FILE_SHIFT) + (uint64_t)r->offset;
}

static void put_fiu(FILE *out, const struct row *r)
{
	uint64_t addr = disk_address(r), len = (uint64_t)r->length;
	uint64_t lba = addr / SECTOR_SIZE;
	uint64_t sectors = (addr % SECTOR_SIZE + len + SECTOR_SIZE - 1) / SECTOR_SIZE;

	fprintf(out, "%" PRId64 " %" PRId64 " ", r->ts_ns, r->has_pid ? r->pid : 0);
	if (!r->comm || !*r->comm) {
		putc('-', out);
	} else {
		for (const char *s = r->comm; *s; s++)
			putc(strchr(" \t\n\r\v\f", *s) ? '_' : *s, out);
	}
	fprintf(out, " %" PRIu64 " %" PRIu64 " %c 0 %" PRId64 " 0\n", lba, sectors,
		r->write ? 'W' : 'R', r->file_id);
}

static void put_msr(FILE *out, const struct row *r)
{
	/* floor division, so that a time before 1970 still counts up */
	int64_t ticks = r->ts_ns / 100 - (r->ts_ns % 100 < 0) + WINDOWS_EPOCH_TICKS;

	fprintf(out, "%" PRId64 ",hybridfs,0,%s,%" PRIu64 ",%" PRId64 ",0\n", ticks,
		r->write ? "Write" : "Read", disk_address(r), r->length);
}

static int db_error(sqlite3 *db, const char *doing, char *why, size_t why_size)
{
	const char *file = sqlite3_db_filename(db, "main");
	int code = sqlite3_errcode(db);

	snprintf(why, why_size, "state database \"%s\": %s: %s",
		 file && *file ? file : ":memory:", doing, sqlite3_errmsg(db));
	if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
		return -EUCLEAN;
	if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
		return -EBUSY;
	if (code == SQLITE_NOMEM)
		return -ENOMEM;
	return -EIO;
}

static int out_error(int err, char *why, size_t why_size)
{
	if (err <= 0)
		err = EIO;
	snprintf(why, why_size, "cannot write the trace: %s", strerror(err));
	return -err;
}

/* Reads the current row; false when it breaks the schema's rules. */
static bool read_row(sqlite3_stmt *stmt, struct row *r)
{
	int64_t mode = sqlite3_column_int64(stmt, COL_MODE);

	r->rowid = sqlite3_column_int64(stmt, COL_ROWID);
	r->ts_ns = sqlite3_column_int64(stmt, COL_TS);
	r->has_pid = sqlite3_column_type(stmt, COL_PID) != SQLITE_NULL;
	r->pid = sqlite3_column_int64(stmt, COL_PID);
	r->comm = (const char *)sqlite3_column_text(stmt, COL_COMM);
	r->exe = (const char *)sqlite3_column_text(stmt, COL_EXE);
	r->file_id = sqlite3_column_int64(stmt, COL_FILE);
	r->offset = sqlite3_column_int64(stmt, COL_OFFSET);
	r->length = sqlite3_column_int64(stmt, COL_LENGTH);
	r->has_class = sqlite3_column_type(stmt, COL_CLASS) != SQLITE_NULL;
	r->klass = sqlite3_column_int64(stmt, COL_CLASS);
	r->has_phys = sqlite3_column_type(stmt, COL_PHYS) != SQLITE_NULL;
	r->phys_block = sqlite3_column_int64(stmt, COL_PHYS);
	r->write = mode == 1;
	return (mode == 0 || mode == 1) && r->offset >= 0 && r->length >= 0 && r->file_id >= 0 &&
	       (!r->has_phys || r->phys_block >= 0) &&
	       (!r->has_class || (r->klass >= 0 && r->klass < HY_CLASS_COUNT));
}

int hy_trace_export(struct sqlite3 *db, enum hy_trace_format format, int64_t since_ns,
		    int64_t until_ns, FILE *out, uint64_t *rows, char *why, size_t why_size)
{
	sqlite3_stmt *stmt;
	uint64_t n = 0;
	int rc, step;

	*rows = 0;
	if (format != HY_TRACE_CSV && format != HY_TRACE_FIU && format != HY_TRACE_MSR) {
		snprintf(why, why_size, "unknown trace format %d", (int)format);
		return -EINVAL;
	}
	if (sqlite3_prepare_v2(db, export_sql, -1, &stmt, NULL) != SQLITE_OK)
		return db_error(db, "cannot read the access log", why, why_size);
	sqlite3_bind_int64(stmt, 1, since_ns);
	sqlite3_bind_int64(stmt, 2, until_ns);
	errno = 0;
	if (format == HY_TRACE_CSV &&
	    fputs("ts_ns,pid,process,exe,file_id,offset,length,block_first,block_count,mode,"
		  "class,phys_block\n",
		  out) == EOF) {
		rc = out_error(errno, why, why_size);
		goto done;
	}
	while ((step = sqlite3_step(stmt)) == SQLITE_ROW) {
		struct row r;

		if (!read_row(stmt, &r)) {
			snprintf(why, why_size,
				 "state database \"%s\": access log row %" PRId64
				 " is damaged (mode, offset, length, file, class or block out of "
				 "range)",
				 sqlite3_db_filename(db, "main"), r.rowid);
			rc = -EUCLEAN;
			goto done;
		}
		errno = 0;
		if (format == HY_TRACE_CSV)
			put_csv(out, &r);
		else if (format == HY_TRACE_FIU)
			put_fiu(out, &r);
		else
			put_msr(out, &r);
		if (ferror(out)) {
			rc = out_error(errno, why, why_size);
			goto done;
		}
		n++;
	}
	if (step != SQLITE_DONE) {
		rc = db_error(db, "cannot read the access log", why, why_size);
		goto done;
	}
	errno = 0;
	if (fflush(out) == EOF || ferror(out)) {
		rc = out_error(errno, why, why_size);
		goto done;
	}
	*rows = n;
	rc = 0;
done:
	sqlite3_finalize(stmt);
	return rc;
}
