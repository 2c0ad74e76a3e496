/* trace_formats.c - the block trace reader's parsers, one a format, and
 * the numbers and field splitting they share: each fills a struct parsed
 * from one line, split in place. See include/hybridfs/trace_reader.h (the
 * formats) and trace_reader_internal.h; the reading, detection and
 * devices are in trace_reader.c.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/trace_reader.h"

#include "trace_reader_internal.h"

/* 1601-01-01 to 1970-01-01 in 100 ns ticks */
#define WINDOWS_EPOCH_TICKS 116444736000000000LL

/* ---- numbers ---- */

enum num_status hy_trace_reader_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return NUM_EMPTY;
	if (*s == '-')
		return isdigit((unsigned char)s[1]) && s[strspn(s + 1, "0123456789") + 1] == '\0'
			       ? NUM_NEGATIVE
			       : NUM_NOT;
	if (!isdigit((unsigned char)*s))
		return NUM_NOT;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10) {
			if (s[strspn(s, "0123456789")] != '\0')
				return NUM_NOT;
			return NUM_OVERFLOW;
		}
		v = v * 10 + d;
	}
	if (*s)
		return NUM_NOT;
	*out = v;
	return NUM_OK;
}

/* A non-negative decimal ("12", "12.5", "0.000") times 10^@digits, the
 * extra fraction digits dropped; at most INT64_MAX. */
static enum num_status parse_scaled(const char *s, int digits, int64_t *out)
{
	uint64_t ip = 0, frac = 0, scale = 1;
	const char *p = s;
	bool any = false;

	if (!*s)
		return NUM_EMPTY;
	if (*s == '-')
		return (isdigit((unsigned char)s[1]) || s[1] == '.') ? NUM_NEGATIVE : NUM_NOT;
	for (int i = 0; i < digits; i++)
		scale *= 10;
	for (; isdigit((unsigned char)*p); p++, any = true) {
		unsigned d = (unsigned)(*p - '0');

		if (ip > ((uint64_t)INT64_MAX / scale - d) / 10)
			return NUM_OVERFLOW;
		ip = ip * 10 + d;
	}
	if (*p == '.') {
		uint64_t f = scale;

		for (p++; isdigit((unsigned char)*p); p++, any = true) {
			f /= 10;
			frac += (uint64_t)(*p - '0') * f;
		}
	}
	if (*p || !any)
		return NUM_NOT;
	if (ip * scale > (uint64_t)INT64_MAX - frac)
		return NUM_OVERFLOW;
	*out = (int64_t)(ip * scale + frac);
	return NUM_OK;
}

/* A token for a message: at most 40 bytes, non-printable ones as '?'. */
const char *hy_trace_reader_parse_excerpt(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (; *s && n + 4 < size && n < 40; s++)
		buf[n++] = isprint((unsigned char)*s) ? *s : '?';
	if (*s && n + 4 < size) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

static void field_error(char *why, size_t why_size, int field, const char *name, const char *tok,
			enum num_status st)
{
	static const char *const what[] = {
		[NUM_EMPTY] = "is empty",
		[NUM_NOT] = "is not a number",
		[NUM_NEGATIVE] = "is negative",
		[NUM_OVERFLOW] = "is too large",
	};
	char ex[64];

	snprintf(why, why_size, "field %d (%s) \"%s\" %s", field + 1, name,
		 hy_trace_reader_parse_excerpt(tok, ex, sizeof(ex)), what[st]);
}

static bool get_u64(char **f, int i, const char *name, uint64_t *out, char *why, size_t why_size)
{
	enum num_status st = hy_trace_reader_parse_u64(f[i], out);

	if (st != NUM_OK)
		field_error(why, why_size, i, name, f[i], st);
	return st == NUM_OK;
}

static bool get_i64(char **f, int i, const char *name, int64_t *out, char *why, size_t why_size)
{
	uint64_t v;
	enum num_status st = hy_trace_reader_parse_u64(f[i], &v);

	if (st == NUM_OK && v > INT64_MAX)
		st = NUM_OVERFLOW;
	if (st != NUM_OK) {
		field_error(why, why_size, i, name, f[i], st);
		return false;
	}
	*out = (int64_t)v;
	return true;
}

static bool get_scaled(char **f, int i, const char *name, int digits, int64_t *out, char *why,
		       size_t why_size)
{
	enum num_status st = parse_scaled(f[i], digits, out);

	if (st != NUM_OK)
		field_error(why, why_size, i, name, f[i], st);
	return st == NUM_OK;
}

/* sectors to bytes */
static bool get_sectors(char **f, int i, const char *name, uint64_t *out, char *why,
			size_t why_size)
{
	uint64_t v;

	if (!get_u64(f, i, name, &v, why, why_size))
		return false;
	if (v > UINT64_MAX / SECTOR) {
		field_error(why, why_size, i, name, f[i], NUM_OVERFLOW);
		return false;
	}
	*out = v * SECTOR;
	return true;
}

static bool check_count(int n, int want, char *why, size_t why_size)
{
	if (n != want)
		snprintf(why, why_size, "expected %d fields, found %d", want, n);
	return n == want;
}

/* ---- splitting ---- */

/* On runs of blanks; the count of all fields (only MAX_FIELDS stored). */
int hy_trace_reader_parse_split_blank(char *s, char **f)
{
	int n = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			return n;
		if (n < MAX_FIELDS)
			f[n] = s;
		n++;
		while (*s && *s != ' ' && *s != '\t')
			s++;
		if (*s)
			*s++ = '\0';
	}
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/* On commas, blanks around fields dropped, no quoting. */
static int split_comma(char *s, char **f)
{
	int n = 0;

	for (;;) {
		char *c = strchr(s, ',');

		if (c)
			*c = '\0';
		if (n < MAX_FIELDS)
			f[n] = trim(s);
		n++;
		if (!c)
			return n;
		s = c + 1;
	}
}

/* RFC 4180, fields unquoted into @out (as long as @s); -1: a quote out of
 * place or never closed. */
static int split_rfc4180(const char *s, char *out, char **f)
{
	int n = 0;

	for (;;) {
		if (n < MAX_FIELDS)
			f[n] = out;
		n++;
		if (*s == '"') {
			for (s++;; s++) {
				if (!*s)
					return -1;
				if (*s == '"') {
					if (s[1] != '"')
						break;
					s++;
				}
				*out++ = *s;
			}
			s++;
			if (*s && *s != ',')
				return -1;
		} else {
			for (; *s && *s != ','; s++) {
				if (*s == '"')
					return -1;
				*out++ = *s;
			}
		}
		*out++ = '\0';
		if (!*s)
			return n;
		s++;
	}
}

/* ---- formats: each fills @p from @line (split in place) ---- */

#define WHY char *why, size_t why_size

static void no_process(struct parsed *p)
{
	p->pid = -1;
	p->process = "";
}

static enum line_kind bad_op(const char *tok, WHY)
{
	char ex[64];

	snprintf(why, why_size, "unknown operation \"%s\"",
		 hy_trace_reader_parse_excerpt(tok, ex, sizeof(ex)));
	return LINE_BAD;
}

static enum line_kind parse_msr(struct hy_trace_reader *r, char *line, struct parsed *p, WHY)
{
	char *f[MAX_FIELDS];
	uint64_t ticks, disk, resp;
	int n = split_comma(line, f);

	if (!check_count(n, 7, why, why_size) || !get_u64(f, 0, "timestamp", &ticks, why, why_size))
		return LINE_BAD;
	if (!*f[1]) {
		snprintf(why, why_size, "field 2 (hostname) is empty");
		return LINE_BAD;
	}
	if (!get_u64(f, 2, "disk number", &disk, why, why_size))
		return LINE_BAD;
	if (strcasecmp(f[3], "read") == 0)
		p->write = false;
	else if (strcasecmp(f[3], "write") == 0)
		p->write = true;
	else
		return bad_op(f[3], why, why_size);
	if (!get_u64(f, 4, "offset", &p->offset, why, why_size) ||
	    !get_u64(f, 5, "size", &p->length, why, why_size) ||
	    !get_u64(f, 6, "response time", &resp, why, why_size))
		return LINE_BAD;
	/* FILETIME to ns since the Unix epoch; earlier ticks (a trace rebased
	 * to 0) are taken as they are */
	if (ticks >= (uint64_t)WINDOWS_EPOCH_TICKS)
		ticks -= (uint64_t)WINDOWS_EPOCH_TICKS;
	if (ticks > (uint64_t)INT64_MAX / 100) {
		field_error(why, why_size, 0, "timestamp", f[0], NUM_OVERFLOW);
		return LINE_BAD;
	}
	p->ts_ns = (int64_t)ticks * 100;
	no_process(p);
	{
		size_t hl = strlen(f[1]);

		memcpy(r->kbuf, f[1], hl);
		p->key_len = hl + 1 + (size_t)snprintf(r->kbuf + hl + 1, 24, "%" PRIu64, disk);
		r->kbuf[hl] = '\0';
		p->key = r->kbuf;
	}
	return LINE_RECORD;
}

static bool get_rw01(char **f, int i, bool one_is_write, bool *write)
{
	if (strcmp(f[i], "0") == 0)
		*write = !one_is_write;
	else if (strcmp(f[i], "1") == 0)
		*write = one_is_write;
	else
		return false;
	return true;
}

static void number_key(struct hy_trace_reader *r, struct parsed *p, uint64_t a)
{
	p->key_len = (size_t)snprintf(r->kbuf, 32, "%" PRIu64, a);
	p->key = r->kbuf;
}

static void pair_key(struct hy_trace_reader *r, struct parsed *p, uint64_t a, uint64_t b)
{
	p->key_len = (size_t)snprintf(r->kbuf, 48, "%" PRIu64 ",%" PRIu64, a, b);
	p->key = r->kbuf;
}

/* heimdall: ts_ms device offset size io_type; disksim: ts_ns device lba
 * size type */
static enum line_kind parse_five(struct hy_trace_reader *r, bool disksim, char *line,
				 struct parsed *p, WHY)
{
	char *f[MAX_FIELDS];
	uint64_t dev;
	int n = hy_trace_reader_parse_split_blank(line, f);

	if (!check_count(n, 5, why, why_size))
		return LINE_BAD;
	if (disksim ? !get_i64(f, 0, "arrival time", &p->ts_ns, why, why_size)
		    : !get_scaled(f, 0, "timestamp", 6, &p->ts_ns, why, why_size))
		return LINE_BAD;
	if (!get_u64(f, 1, "device", &dev, why, why_size))
		return LINE_BAD;
	if (disksim ? (!get_sectors(f, 2, "lba", &p->offset, why, why_size) ||
		       !get_sectors(f, 3, "size", &p->length, why, why_size))
		    : (!get_u64(f, 2, "offset", &p->offset, why, why_size) ||
		       !get_u64(f, 3, "size", &p->length, why, why_size)))
		return LINE_BAD;
	if (!get_rw01(f, 4, false, &p->write))
		return bad_op(f[4], why, why_size);
	no_process(p);
	number_key(r, p, dev);
	return LINE_RECORD;
}

static enum line_kind parse_fiu(struct hy_trace_reader *r, char *line, struct parsed *p, WHY)
{
	char *f[MAX_FIELDS];
	uint64_t major, minor;
	int n = hy_trace_reader_parse_split_blank(line, f);

	if (!check_count(n, 9, why, why_size) ||
	    !get_i64(f, 0, "timestamp", &p->ts_ns, why, why_size) ||
	    !get_i64(f, 1, "pid", &p->pid, why, why_size) ||
	    !get_sectors(f, 3, "lba", &p->offset, why, why_size) ||
	    !get_sectors(f, 4, "size", &p->length, why, why_size))
		return LINE_BAD;
	if (strcasecmp(f[5], "R") == 0)
		p->write = false;
	else if (strcasecmp(f[5], "W") == 0)
		p->write = true;
	else
		return bad_op(f[5], why, why_size);
	if (!get_u64(f, 6, "major", &major, why, why_size) ||
	    !get_u64(f, 7, "minor", &minor, why, why_size))
		return LINE_BAD;
	p->process = f[2];
	pair_key(r, p, major, minor);
	return LINE_RECORD;
}

static bool parse_majmin(const char *s, uint64_t *major, uint64_t *minor)
{
	char buf[48];
	const char *c = strchr(s, ',');
	size_t len = c ? (size_t)(c - s) : 0;

	if (!c || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return hy_trace_reader_parse_u64(buf, major) == NUM_OK &&
	       hy_trace_reader_parse_u64(c + 1, minor) == NUM_OK;
}

static bool summary_start(const char *s)
{
	return (strncmp(s, "CPU", 3) == 0 && isdigit((unsigned char)s[3])) ||
	       strncmp(s, "Total (", 7) == 0 || strncmp(s, "Throughput", 10) == 0 ||
	       strncmp(s, "Events (", 8) == 0 || strncmp(s, "Skips:", 6) == 0;
}

static enum line_kind parse_blkparse(struct hy_trace_reader *r, bool *in_summary, char *line,
				     size_t len, struct parsed *p, WHY)
{
	char *f[MAX_FIELDS], *end = line + len;
	uint64_t major, minor, cpu, seq;
	int n;

	if (*in_summary)
		return LINE_SKIP;
	n = hy_trace_reader_parse_split_blank(line, f);
	if (n == 0 || !parse_majmin(f[0], &major, &minor)) {
		if (n > 0 && summary_start(f[0])) {
			*in_summary = true;
			return LINE_SKIP;
		}
		snprintf(why, why_size, "not a blkparse event (no \"major,minor\" first)");
		return LINE_BAD;
	}
	if (n < 7) {
		snprintf(why, why_size, "expected at least 7 fields, found %d", n);
		return LINE_BAD;
	}
	if (!get_u64(f, 1, "cpu", &cpu, why, why_size) ||
	    !get_u64(f, 2, "sequence", &seq, why, why_size) ||
	    !get_scaled(f, 3, "time", 9, &p->ts_ns, why, why_size) ||
	    !get_i64(f, 4, "pid", &p->pid, why, why_size))
		return LINE_BAD;
	if (strcmp(f[5], "Q") != 0 || !strpbrk(f[6], "RW"))
		return LINE_EVENT;
	if (n == 7 || f[7][0] == '[')
		return LINE_EVENT; /* a flush without data */
	if (n < 10 || strcmp(f[8], "+") != 0) {
		snprintf(why, why_size, "expected \"sector + count\" after the rwbs");
		return LINE_BAD;
	}
	if (!get_sectors(f, 7, "sector", &p->offset, why, why_size) ||
	    !get_sectors(f, 9, "sectors", &p->length, why, why_size))
		return LINE_BAD;
	p->write = strchr(f[6], 'W') != NULL;
	p->process = "";
	if (n > 10 && f[10][0] == '[') {
		char *s = f[10] + 1, *e = end;

		while (e > s && e[-1] != ']')
			e--;
		if (e > s) {
			e[-1] = '\0';
			for (char *q = s; q < e - 1; q++)
				if (*q == '\0')
					*q = ' ';
			p->process = s;
		}
	}
	pair_key(r, p, major, minor);
	return LINE_RECORD;
}

static enum line_kind parse_spc(struct hy_trace_reader *r, char *line, struct parsed *p, WHY)
{
	char *f[MAX_FIELDS];
	uint64_t asu;
	int n = split_comma(line, f);

	if (!check_count(n, 5, why, why_size) || !get_u64(f, 0, "asu", &asu, why, why_size) ||
	    !get_sectors(f, 1, "lba", &p->offset, why, why_size) ||
	    !get_u64(f, 2, "size", &p->length, why, why_size))
		return LINE_BAD;
	if (strcasecmp(f[3], "r") == 0)
		p->write = false;
	else if (strcasecmp(f[3], "w") == 0)
		p->write = true;
	else
		return bad_op(f[3], why, why_size);
	if (!get_scaled(f, 4, "timestamp", 9, &p->ts_ns, why, why_size))
		return LINE_BAD;
	no_process(p);
	number_key(r, p, asu);
	return LINE_RECORD;
}

bool hy_trace_reader_parse_is_header(const char *line, const char *header)
{
	return strncasecmp(line, header, strlen(header)) == 0;
}

static enum line_kind parse_vscsi(struct hy_trace_reader *r, char *line, struct parsed *p, WHY)
{
	char *f[MAX_FIELDS], *op, *endp;
	uint64_t version;
	unsigned long code;
	int n;

	if (hy_trace_reader_parse_is_header(line, VSCSI_HEADER))
		return LINE_SKIP;
	n = split_comma(line, f);
	if (!check_count(n, 5, why, why_size) ||
	    !get_u64(f, 0, "version", &version, why, why_size) ||
	    !get_scaled(f, 1, "time", 9, &p->ts_ns, why, why_size))
		return LINE_BAD;
	op = f[2];
	if (op[0] == '0' && (op[1] == 'x' || op[1] == 'X'))
		op += 2;
	if (!isxdigit((unsigned char)op[0]) || strlen(op) > 2)
		return bad_op(f[2], why, why_size);
	code = strtoul(op, &endp, 16);
	if (*endp)
		return bad_op(f[2], why, why_size);
	if (code == 0x08 || code == 0x28 || code == 0x88 || code == 0xa8)
		p->write = false;
	else if (code == 0x0a || code == 0x2a || code == 0x8a || code == 0xaa)
		p->write = true;
	else
		return bad_op(f[2], why, why_size);
	if (!get_u64(f, 3, "size", &p->length, why, why_size) ||
	    !get_sectors(f, 4, "lbn", &p->offset, why, why_size))
		return LINE_BAD;
	no_process(p);
	p->key = "";
	p->key_len = 0;
	(void)r;
	return LINE_RECORD;
}

static enum line_kind parse_tencent(struct hy_trace_reader *r, char *line, struct parsed *p, WHY)
{
	char *f[MAX_FIELDS];
	uint64_t vol;
	int n = split_comma(line, f);

	if (!check_count(n, 5, why, why_size) ||
	    !get_scaled(f, 0, "timestamp", 9, &p->ts_ns, why, why_size) ||
	    !get_sectors(f, 1, "offset", &p->offset, why, why_size) ||
	    !get_sectors(f, 2, "size", &p->length, why, why_size))
		return LINE_BAD;
	if (!get_rw01(f, 3, true, &p->write))
		return bad_op(f[3], why, why_size);
	if (!get_u64(f, 4, "volume", &vol, why, why_size))
		return LINE_BAD;
	no_process(p);
	number_key(r, p, vol);
	return LINE_RECORD;
}

static enum line_kind parse_arc(char *line, struct parsed *p, WHY)
{
	char *f[MAX_FIELDS];
	uint64_t ignore, reqno;
	int n = hy_trace_reader_parse_split_blank(line, f);

	if (!check_count(n, 4, why, why_size) ||
	    !get_sectors(f, 0, "start block", &p->offset, why, why_size) ||
	    !get_sectors(f, 1, "blocks", &p->length, why, why_size) ||
	    !get_u64(f, 2, "ignore", &ignore, why, why_size) ||
	    !get_u64(f, 3, "request number", &reqno, why, why_size))
		return LINE_BAD;
	p->ts_ns = -1;
	p->write = false;
	no_process(p);
	p->key = "";
	p->key_len = 0;
	return LINE_RECORD;
}

static enum line_kind parse_hybridfs(struct hy_trace_reader *r, char *line, struct parsed *p, WHY)
{
	char *f[MAX_FIELDS];
	uint64_t file;
	int n;

	if (hy_trace_reader_parse_is_header(line, HYBRIDFS_HEADER))
		return LINE_SKIP;
	n = split_rfc4180(line, r->qbuf, f);
	if (n < 0) {
		snprintf(why, why_size, "a quote out of place (RFC 4180)");
		return LINE_BAD;
	}
	if (!check_count(n, 12, why, why_size) || !get_i64(f, 0, "ts_ns", &p->ts_ns, why, why_size))
		return LINE_BAD;
	if (!*f[1])
		p->pid = -1;
	else if (!get_i64(f, 1, "pid", &p->pid, why, why_size))
		return LINE_BAD;
	if (!get_u64(f, 4, "file_id", &file, why, why_size) ||
	    !get_u64(f, 5, "offset", &p->offset, why, why_size) ||
	    !get_u64(f, 6, "length", &p->length, why, why_size))
		return LINE_BAD;
	if (strcmp(f[9], "R") == 0)
		p->write = false;
	else if (strcmp(f[9], "W") == 0)
		p->write = true;
	else
		return bad_op(f[9], why, why_size);
	p->process = f[2];
	number_key(r, p, file);
	return LINE_RECORD;
}

enum line_kind hy_trace_reader_parse_line(struct hy_trace_reader *r,
					  enum hy_trace_reader_format format, bool *in_summary,
					  char *line, size_t len, struct parsed *p, WHY)
{
	enum line_kind k;

	switch (format) {
	case HY_TRACE_READ_MSR:
		k = parse_msr(r, line, p, why, why_size);
		break;
	case HY_TRACE_READ_HEIMDALL:
		k = parse_five(r, false, line, p, why, why_size);
		break;
	case HY_TRACE_READ_FIU:
		k = parse_fiu(r, line, p, why, why_size);
		break;
	case HY_TRACE_READ_BLKPARSE:
		k = parse_blkparse(r, in_summary, line, len, p, why, why_size);
		break;
	case HY_TRACE_READ_DISKSIM:
		k = parse_five(r, true, line, p, why, why_size);
		break;
	case HY_TRACE_READ_SPC:
		k = parse_spc(r, line, p, why, why_size);
		break;
	case HY_TRACE_READ_VSCSI:
		k = parse_vscsi(r, line, p, why, why_size);
		break;
	case HY_TRACE_READ_TENCENT:
		k = parse_tencent(r, line, p, why, why_size);
		break;
	case HY_TRACE_READ_ARC:
		k = parse_arc(line, p, why, why_size);
		break;
	case HY_TRACE_READ_HYBRIDFS:
		k = parse_hybridfs(r, line, p, why, why_size);
		break;
	default:
		snprintf(why, why_size, "unknown format");
		return LINE_BAD;
	}
	if (k == LINE_RECORD && p->offset > UINT64_MAX - p->length) {
		snprintf(why, why_size, "offset + length is too large");
		return LINE_BAD;
	}
	return k;
}
