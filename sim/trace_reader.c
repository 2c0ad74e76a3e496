/* trace_reader.c - see include/hybridfs/trace_reader.h.
 *
 * Lines come out of zlib (gzread into a 128 KiB buffer, cut at '\n' by
 * hand, so that NUL bytes and over-long lines are seen, not truncated) into
 * one line buffer; each format's parser splits that buffer in place. The
 * lines read to detect the format are kept in a queue and replayed, so a
 * pipe ("-") works like a file.
 *
 * Detection: a header line names vscsi and hybridfs (vscsi only by its
 * header). Otherwise up to DETECT_LINES non-empty lines are parsed in every
 * other format; a format is a
 * candidate when it parsed at least one of them and at most a quarter were
 * bad; of the candidates, those with the fewest bad lines are kept. One left
 * is the answer. Heimdall and DiskSim lines are both five numbers: a
 * fractional time is Heimdall's (DiskSim's is integer ns, so it fails
 * there); with integer times, an offset or size that is not a multiple of
 * 512 means sectors, so DiskSim; otherwise it is ambiguous and refused.
 *
 * Devices: keys are canonical strings ("8,16", "hm\0" "0", "42"); an
 * open-addressing table maps them to their index, with the last key
 * remembered since traces mostly repeat it.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "hybridfs/log.h"
#include "hybridfs/trace_reader.h"

#define READ_CHUNK   (128 * 1024)
#define DETECT_LINES 64
#define DETECT_BYTES (1024 * 1024)
#define MAX_FIELDS   16
#define SECTOR	     512ULL
#define WHY_SIZE     512
/* 1601-01-01 to 1970-01-01 in 100 ns ticks */
#define WINDOWS_EPOCH_TICKS 116444736000000000LL

#define LINE_TOO_LONG 1
#define LINE_HAS_NUL  2

static const char *const format_names[HY_TRACE_READ_FORMATS] = {
	[HY_TRACE_READ_MSR] = "msr",	     [HY_TRACE_READ_HEIMDALL] = "heimdall",
	[HY_TRACE_READ_FIU] = "fiu",	     [HY_TRACE_READ_BLKPARSE] = "blkparse",
	[HY_TRACE_READ_DISKSIM] = "disksim", [HY_TRACE_READ_SPC] = "spc",
	[HY_TRACE_READ_VSCSI] = "vscsi",     [HY_TRACE_READ_TENCENT] = "tencent",
	[HY_TRACE_READ_ARC] = "arc",	     [HY_TRACE_READ_HYBRIDFS] = "hybridfs",
};

#define VSCSI_HEADER	"version,time,op,size,lbn"
#define HYBRIDFS_HEADER "ts_ns,pid,process,exe,file_id,offset,length"

enum line_kind {
	LINE_RECORD, /* a request */
	LINE_EVENT,  /* a well-formed line that is no request (blkparse) */
	LINE_SKIP,   /* header, blkparse summary: no evidence of the format */
	LINE_BAD,
};

struct pending {
	char *text;
	size_t len;
	unsigned flags;
	uint64_t line;
};

struct device {
	char *key; /* NULL: free slot */
	size_t len;
	uint32_t index;
};

struct parsed {
	int64_t ts_ns, pid;
	uint64_t offset, length;
	bool write;
	const char *process;
	const char *key;
	size_t key_len;
};

struct hy_trace_reader {
	gzFile gz;
	char *path;
	enum hy_trace_reader_format format;
	bool strict, eof, in_summary;
	int failed; /* sticky error of next() */

	char *rbuf; /* READ_CHUNK */
	size_t rpos, rlen;
	uint64_t raw_lines; /* physical lines cut so far */

	char *lbuf; /* the current line, HY_TRACE_MAX_LINE + 1 */
	size_t llen;
	unsigned lflags;
	uint64_t lline;
	char *jbuf; /* a hybridfs record over several lines */
	char *qbuf; /* unquoted CSV fields */
	char *kbuf; /* device key */

	struct pending *queue; /* lines read by detection */
	size_t qhead, qcount;

	struct device *devs;
	size_t dev_cap; /* power of two */
	uint32_t ndev;
	const char *last_key;
	size_t last_len;
	uint32_t last_index;

	struct hy_trace_reader_stats stats;
	char error[WHY_SIZE];
};

const char *hy_trace_reader_format_name(enum hy_trace_reader_format format)
{
	if ((int)format < 0 || format >= HY_TRACE_READ_FORMATS)
		return NULL;
	return format_names[format];
}

int hy_trace_reader_format_parse(const char *name, enum hy_trace_reader_format *out, char *why,
				 size_t why_size)
{
	for (int i = 0; i < HY_TRACE_READ_FORMATS; i++) {
		if (name && strcasecmp(name, format_names[i]) == 0) {
			*out = (enum hy_trace_reader_format)i;
			return 0;
		}
	}
	snprintf(why, why_size,
		 "unknown trace format \"%s\" (expected msr, heimdall, fiu, blkparse, disksim, "
		 "spc, vscsi, tencent, arc, hybridfs or auto)",
		 name ? name : "");
	return -EINVAL;
}

enum hy_trace_reader_format hy_trace_reader_format(const struct hy_trace_reader *reader)
{
	return reader->format;
}

const char *hy_trace_reader_error(const struct hy_trace_reader *reader)
{
	return reader->error;
}

void hy_trace_reader_get_stats(const struct hy_trace_reader *reader,
			       struct hy_trace_reader_stats *out)
{
	*out = reader->stats;
	out->devices = reader->ndev;
}

/* ---- numbers ---- */

enum num_status { NUM_OK, NUM_EMPTY, NUM_NOT, NUM_NEGATIVE, NUM_OVERFLOW };

static enum num_status parse_u64(const char *s, uint64_t *out)
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
static const char *excerpt(const char *s, char *buf, size_t size)
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
		 excerpt(tok, ex, sizeof(ex)), what[st]);
}

static bool get_u64(char **f, int i, const char *name, uint64_t *out, char *why, size_t why_size)
{
	enum num_status st = parse_u64(f[i], out);

	if (st != NUM_OK)
		field_error(why, why_size, i, name, f[i], st);
	return st == NUM_OK;
}

static bool get_i64(char **f, int i, const char *name, int64_t *out, char *why, size_t why_size)
{
	uint64_t v;
	enum num_status st = parse_u64(f[i], &v);

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
static int split_blank(char *s, char **f)
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

	snprintf(why, why_size, "unknown operation \"%s\"", excerpt(tok, ex, sizeof(ex)));
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
	int n = split_blank(line, f);

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
	int n = split_blank(line, f);

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
	return parse_u64(buf, major) == NUM_OK && parse_u64(c + 1, minor) == NUM_OK;
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
	n = split_blank(line, f);
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

static bool is_header(const char *line, const char *header)
{
	return strncasecmp(line, header, strlen(header)) == 0;
}

static enum line_kind parse_vscsi(struct hy_trace_reader *r, char *line, struct parsed *p, WHY)
{
	char *f[MAX_FIELDS], *op, *endp;
	uint64_t version;
	unsigned long code;
	int n;

	if (is_header(line, VSCSI_HEADER))
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
	int n = split_blank(line, f);

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

	if (is_header(line, HYBRIDFS_HEADER))
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

static enum line_kind parse_line(struct hy_trace_reader *r, enum hy_trace_reader_format format,
				 bool *in_summary, char *line, size_t len, struct parsed *p, WHY)
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

/* ---- lines ---- */

/* The next physical line into lbuf: 1, 0 at the end, or -EIO. */
static int raw_line(struct hy_trace_reader *r)
{
	size_t n = 0;
	unsigned flags = 0;
	bool any = false;

	for (;;) {
		char *start, *nl;
		size_t avail, seg;

		if (r->rpos == r->rlen) {
			int got, errnum = Z_OK;

			if (r->eof)
				break;
			got = gzread(r->gz, r->rbuf, READ_CHUNK);
			if (got <= 0) {
				const char *msg = gzerror(r->gz, &errnum);

				if (got < 0 || errnum != Z_OK) {
					snprintf(r->error, sizeof(r->error),
						 "trace \"%s\": cannot read line %" PRIu64 ": %s",
						 r->path, r->raw_lines + 1,
						 errnum == Z_ERRNO ? strerror(errno) : msg);
					return -EIO;
				}
				r->eof = true;
				break;
			}
			r->rpos = 0;
			r->rlen = (size_t)got;
		}
		any = true;
		start = r->rbuf + r->rpos;
		avail = r->rlen - r->rpos;
		nl = memchr(start, '\n', avail);
		seg = nl ? (size_t)(nl - start) : avail;
		if (memchr(start, '\0', seg))
			flags |= LINE_HAS_NUL;
		if ((flags & LINE_TOO_LONG) || n + seg > HY_TRACE_MAX_LINE) {
			flags |= LINE_TOO_LONG;
		} else {
			memcpy(r->lbuf + n, start, seg);
			n += seg;
		}
		r->rpos += seg + (nl ? 1 : 0);
		if (nl)
			break;
	}
	if (!any)
		return 0;
	if (n > 0 && r->lbuf[n - 1] == '\r')
		n--;
	r->lbuf[n] = '\0';
	r->llen = n;
	r->lflags = flags;
	r->lline = ++r->raw_lines;
	return 1;
}

/* The next line, the detection queue first. */
static int get_line(struct hy_trace_reader *r)
{
	if (r->qcount > 0) {
		struct pending *q = &r->queue[r->qhead++];

		r->qcount--;
		memcpy(r->lbuf, q->text, q->len + 1);
		r->llen = q->len;
		r->lflags = q->flags;
		r->lline = q->line;
		free(q->text);
		q->text = NULL;
		return 1;
	}
	return raw_line(r);
}

/* blank or '#' */
static bool ignorable(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\v' || *s == '\f')
		s++;
	return *s == '\0' || *s == '#';
}

/* ---- devices ---- */

static uint64_t hash_key(const char *key, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)key[i]) * 1099511628211ULL;
	return h;
}

static int grow_devices(struct hy_trace_reader *r)
{
	size_t cap = r->dev_cap ? r->dev_cap * 2 : 64;
	struct device *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < r->dev_cap; i++) {
		struct device *d = &r->devs[i];
		size_t j;

		if (!d->key)
			continue;
		for (j = hash_key(d->key, d->len) & (cap - 1); t[j].key; j = (j + 1) & (cap - 1))
			;
		t[j] = *d;
	}
	free(r->devs);
	r->devs = t;
	r->dev_cap = cap;
	return 0;
}

static int device_index(struct hy_trace_reader *r, const char *key, size_t len, uint32_t *out)
{
	size_t j;
	char ex[64];

	if (r->last_key && r->last_len == len && memcmp(r->last_key, key, len) == 0) {
		*out = r->last_index;
		return 0;
	}
	if ((size_t)r->ndev * 2 >= r->dev_cap && grow_devices(r) < 0)
		goto nomem;
	for (j = hash_key(key, len) & (r->dev_cap - 1); r->devs[j].key;
	     j = (j + 1) & (r->dev_cap - 1)) {
		if (r->devs[j].len == len && memcmp(r->devs[j].key, key, len) == 0)
			goto found;
	}
	if (r->ndev >= HY_TRACE_MAX_DEVICES) {
		char shown[64];
		size_t k;

		for (k = 0; k < len && k < sizeof(shown) - 1; k++)
			shown[k] = key[k] ? key[k] : ' ';
		shown[k] = '\0';
		snprintf(r->error, sizeof(r->error),
			 "trace \"%s\": line %" PRIu64 ": device \"%s\" is one more than the %d "
			 "devices a trace may have",
			 r->path, r->lline, excerpt(shown, ex, sizeof(ex)), HY_TRACE_MAX_DEVICES);
		return -E2BIG;
	}
	r->devs[j].key = malloc(len + 1);
	if (!r->devs[j].key)
		goto nomem;
	memcpy(r->devs[j].key, key, len);
	r->devs[j].key[len] = '\0';
	r->devs[j].len = len;
	r->devs[j].index = r->ndev++;
found:
	r->last_key = r->devs[j].key;
	r->last_len = len;
	r->last_index = r->devs[j].index;
	*out = r->devs[j].index;
	return 0;
nomem:
	snprintf(r->error, sizeof(r->error), "trace \"%s\": out of memory for the device table",
		 r->path);
	return -ENOMEM;
}

/* ---- reading ---- */

static int bad_line(struct hy_trace_reader *r, uint64_t line, const char *why)
{
	r->stats.bad_lines++;
	if (r->strict) {
		snprintf(r->error, sizeof(r->error), "trace \"%s\": line %" PRIu64 ": %s", r->path,
			 line, why);
		return -EINVAL;
	}
	if (r->stats.bad_lines <= HY_TRACE_MAX_WARNINGS)
		hy_log(LOG_WARNING, "trace \"%s\": line %" PRIu64 ": %s (skipped)%s", r->path, line,
		       why,
		       r->stats.bad_lines == HY_TRACE_MAX_WARNINGS
			       ? "; further bad lines are counted, not logged"
			       : "");
	return 0;
}

/* Appends the lines that a quoted field spans to the record in jbuf. */
static int join_quoted(struct hy_trace_reader *r, size_t *len, unsigned *flags)
{
	size_t n = r->llen;
	bool open = true;

	memcpy(r->jbuf, r->lbuf, n + 1);
	while (open) {
		int rc = get_line(r);

		if (rc < 0)
			return rc;
		if (rc == 0)
			break; /* the quote never closes: the parser says so */
		r->stats.lines++;
		*flags |= r->lflags;
		if (n + 1 + r->llen > HY_TRACE_MAX_LINE) {
			*flags |= LINE_TOO_LONG;
		} else {
			r->jbuf[n++] = '\n';
			memcpy(r->jbuf + n, r->lbuf, r->llen + 1);
			n += r->llen;
		}
		for (const char *s = r->lbuf; *s; s++)
			if (*s == '"')
				open = !open;
	}
	*len = n;
	return 0;
}

static bool quote_open(const char *s)
{
	bool open = false;

	for (; *s; s++)
		if (*s == '"')
			open = !open;
	return open;
}

int hy_trace_reader_next(struct hy_trace_reader *reader, struct hy_trace_record *rec)
{
	struct hy_trace_reader *r = reader;
	char why[256];

	if (r->failed)
		return r->failed;
	for (;;) {
		struct parsed p = {0};
		char *line;
		size_t len;
		unsigned flags;
		uint64_t lineno;
		enum line_kind k;
		int rc = get_line(r);

		if (rc <= 0) {
			r->failed = rc;
			return rc;
		}
		r->stats.lines++;
		line = r->lbuf;
		len = r->llen;
		flags = r->lflags;
		lineno = r->lline;
		if (!(flags & (LINE_TOO_LONG | LINE_HAS_NUL)) && ignorable(line)) {
			r->stats.skipped++;
			continue;
		}
		if (r->format == HY_TRACE_READ_HYBRIDFS && !(flags & LINE_HAS_NUL) &&
		    !(flags & LINE_TOO_LONG) && quote_open(line)) {
			rc = join_quoted(r, &len, &flags);
			if (rc < 0) {
				r->failed = rc;
				return rc;
			}
			line = r->jbuf;
		}
		if (flags & LINE_TOO_LONG) {
			snprintf(why, sizeof(why), "longer than %d bytes", HY_TRACE_MAX_LINE);
			k = LINE_BAD;
		} else if (flags & LINE_HAS_NUL) {
			snprintf(why, sizeof(why), "binary data (a NUL byte)");
			k = LINE_BAD;
		} else {
			k = parse_line(r, r->format, &r->in_summary, line, len, &p, why,
				       sizeof(why));
		}
		if (k == LINE_BAD) {
			rc = bad_line(r, lineno, why);
			if (rc < 0) {
				r->failed = rc;
				return rc;
			}
			continue;
		}
		if (k != LINE_RECORD) {
			r->stats.skipped++;
			continue;
		}
		r->lline = lineno;
		rc = device_index(r, p.key, p.key_len, &rec->device);
		if (rc < 0) {
			r->failed = rc;
			return rc;
		}
		rec->ts_ns = p.ts_ns;
		rec->offset = p.offset;
		rec->length = p.length;
		rec->write = p.write;
		rec->pid = p.pid;
		rec->process = p.process;
		rec->line = lineno;
		r->stats.records++;
		return 1;
	}
}

/* ---- detection ---- */

static int queue_line(struct hy_trace_reader *r)
{
	struct pending *q = &r->queue[r->qcount];

	q->text = malloc(r->llen + 1);
	if (!q->text) {
		snprintf(r->error, sizeof(r->error), "out of memory");
		return -ENOMEM;
	}
	memcpy(q->text, r->lbuf, r->llen + 1);
	q->len = r->llen;
	q->flags = r->lflags;
	q->line = r->lline;
	r->qcount++;
	return 0;
}

struct tally {
	unsigned ok, bad;
	uint64_t first_bad;
	char why[160];
};

/* Heimdall's offsets and sizes are bytes of 512-byte sectors. */
static bool all_sector_multiples(struct hy_trace_reader *r)
{
	for (size_t i = 0; i < r->qcount; i++) {
		char *f[MAX_FIELDS];
		uint64_t off, size;

		if (r->queue[i].flags || ignorable(r->queue[i].text))
			continue;
		memcpy(r->lbuf, r->queue[i].text, r->queue[i].len + 1);
		if (split_blank(r->lbuf, f) != 5 || parse_u64(f[2], &off) != NUM_OK ||
		    parse_u64(f[3], &size) != NUM_OK)
			continue;
		if (off % SECTOR || size % SECTOR || size == 0)
			return false;
	}
	return true;
}

static int detect(struct hy_trace_reader *r, char *why, size_t why_size)
{
	struct tally t[HY_TRACE_READ_FORMATS] = {{0}};
	bool summary[HY_TRACE_READ_FORMATS] = {0};
	unsigned sample = 0, min_bad = UINT32_MAX;
	size_t bytes = 0;
	int cand[HY_TRACE_READ_FORMATS], ncand = 0;
	char *copy;
	int rc = 0;

	r->queue = calloc(DETECT_LINES * 4, sizeof(*r->queue));
	copy = malloc(HY_TRACE_MAX_LINE + 1);
	if (!r->queue || !copy) {
		free(copy);
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	while (sample < DETECT_LINES && r->qcount < DETECT_LINES * 4 && bytes < DETECT_BYTES) {
		rc = raw_line(r);
		if (rc < 0) {
			snprintf(why, why_size, "%s", r->error);
			goto out;
		}
		if (rc == 0)
			break;
		rc = queue_line(r);
		if (rc < 0)
			goto out;
		bytes += r->llen;
		if (!r->lflags && ignorable(r->lbuf))
			continue;
		if (sample == 0 && !r->lflags) {
			const char *s = r->lbuf + strspn(r->lbuf, " \t");

			if (is_header(s, VSCSI_HEADER)) {
				r->format = HY_TRACE_READ_VSCSI;
				goto out;
			}
			if (is_header(s, HYBRIDFS_HEADER)) {
				r->format = HY_TRACE_READ_HYBRIDFS;
				goto out;
			}
		}
		sample++;
		for (int f = 0; f < HY_TRACE_READ_FORMATS; f++) {
			struct parsed p;
			char lwhy[160];
			enum line_kind k;

			/* only its header names vscsi: without it, "1,0,8,0,5"
			 * would be a vscsi READ as much as a tencent line */
			if (f == HY_TRACE_READ_VSCSI)
				continue;
			if (r->lflags) {
				k = LINE_BAD;
				snprintf(lwhy, sizeof(lwhy), "%s",
					 r->lflags & LINE_TOO_LONG ? "an over-long line"
								   : "binary data");
			} else {
				memcpy(copy, r->lbuf, r->llen + 1);
				k = parse_line(r, (enum hy_trace_reader_format)f, &summary[f], copy,
					       r->llen, &p, lwhy, sizeof(lwhy));
			}
			if (k == LINE_RECORD || k == LINE_EVENT) {
				t[f].ok++;
			} else if (k == LINE_BAD) {
				if (!t[f].bad++) {
					t[f].first_bad = r->lline;
					snprintf(t[f].why, sizeof(t[f].why), "%s", lwhy);
				}
			}
		}
	}
	rc = 0;
	for (int f = 0; f < HY_TRACE_READ_FORMATS; f++)
		if (t[f].ok > 0 && t[f].ok >= 3 * t[f].bad && t[f].bad < min_bad)
			min_bad = t[f].bad;
	for (int f = 0; f < HY_TRACE_READ_FORMATS; f++)
		if (t[f].ok > 0 && t[f].ok >= 3 * t[f].bad && t[f].bad == min_bad)
			cand[ncand++] = f;
	if (ncand == 2 && cand[0] == HY_TRACE_READ_HEIMDALL && cand[1] == HY_TRACE_READ_DISKSIM &&
	    !all_sector_multiples(r)) {
		cand[0] = HY_TRACE_READ_DISKSIM;
		ncand = 1;
	}
	if (ncand == 1) {
		r->format = (enum hy_trace_reader_format)cand[0];
	} else if (ncand > 1) {
		size_t n = (size_t)snprintf(why, why_size, "trace \"%s\": its first lines fit ",
					    r->path);

		for (int i = 0; i < ncand && n < why_size; i++)
			n += (size_t)snprintf(why + n, why_size - n, "%s%s",
					      i == 0	       ? ""
					      : i == ncand - 1 ? " and "
							       : ", ",
					      format_names[cand[i]]);
		if (n < why_size)
			snprintf(why + n, why_size - n, " alike; name the format (--format)");
		rc = -EINVAL;
	} else if (sample == 0) {
		snprintf(why, why_size,
			 "trace \"%s\" has no request lines to detect its format from; name the "
			 "format (--format)",
			 r->path);
		rc = -EINVAL;
	} else {
		int best = -1;

		for (int f = 0; f < HY_TRACE_READ_FORMATS; f++)
			if (t[f].ok > 0 && (best < 0 || t[f].ok > t[best].ok))
				best = f;
		if (best >= 0)
			snprintf(why, why_size,
				 "trace \"%s\": format not recognized (closest is %s, but line "
				 "%" PRIu64 ": %s); name the format (--format)",
				 r->path, format_names[best], t[best].first_bad, t[best].why);
		else
			snprintf(why, why_size,
				 "trace \"%s\": format not recognized (line %" PRIu64
				 " fits none of msr, heimdall, fiu, blkparse, disksim, spc, vscsi, "
				 "tencent, arc, hybridfs); name the format (--format)",
				 r->path, t[0].first_bad);
		rc = -EINVAL;
	}
out:
	free(copy);
	return rc;
}

/* ---- open and close ---- */

int hy_trace_reader_open(const char *path, const char *format, bool strict,
			 struct hy_trace_reader **out, char *why, size_t why_size)
{
	struct hy_trace_reader *r;
	bool detecting = !format || strcmp(format, "auto") == 0;
	struct stat st;
	int fd, rc;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	r->strict = strict;
	if (!detecting) {
		rc = hy_trace_reader_format_parse(format, &r->format, why, why_size);
		if (rc < 0)
			goto fail;
	}
	r->path = strdup(path);
	r->rbuf = malloc(READ_CHUNK);
	r->lbuf = malloc(HY_TRACE_MAX_LINE + 1);
	r->jbuf = malloc(HY_TRACE_MAX_LINE + 1);
	r->qbuf = malloc(HY_TRACE_MAX_LINE + 1);
	r->kbuf = malloc(HY_TRACE_MAX_LINE + 64);
	if (!r->path || !r->rbuf || !r->lbuf || !r->jbuf || !r->qbuf || !r->kbuf) {
		snprintf(why, why_size, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	r->lbuf[0] = '\0';
	if (strcmp(path, "-") == 0)
		fd = dup(STDIN_FILENO);
	else
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, why_size, "cannot open trace \"%s\": %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		snprintf(why, why_size, "cannot read trace \"%s\": %s", path, strerror(EISDIR));
		rc = -EISDIR;
		goto fail;
	}
	r->gz = gzdopen(fd, "rb");
	if (!r->gz) {
		close(fd);
		snprintf(why, why_size, "cannot open trace \"%s\": out of memory", path);
		rc = -ENOMEM;
		goto fail;
	}
	gzbuffer(r->gz, READ_CHUNK);
	if (detecting) {
		rc = detect(r, why, why_size);
		if (rc < 0)
			goto fail;
	}
	r->error[0] = '\0';
	*out = r;
	return 0;
fail:
	hy_trace_reader_close(r);
	return rc;
}

void hy_trace_reader_close(struct hy_trace_reader *reader)
{
	if (!reader)
		return;
	if (reader->gz)
		gzclose(reader->gz);
	if (reader->queue) {
		for (size_t i = 0; i < reader->qhead + reader->qcount; i++)
			free(reader->queue[i].text);
		free(reader->queue);
	}
	for (size_t i = 0; i < reader->dev_cap; i++)
		free(reader->devs[i].key);
	free(reader->devs);
	free(reader->path);
	free(reader->rbuf);
	free(reader->lbuf);
	free(reader->jbuf);
	free(reader->qbuf);
	free(reader->kbuf);
	free(reader);
}
