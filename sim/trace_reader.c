/* trace_reader.c - the block trace reader: lines out of zlib, devices,
 * reading records, detection, open and close; see
 * include/hybridfs/trace_reader.h. The formats' parsers are in
 * trace_formats.c; what the two share, in trace_reader_internal.h.
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

#include "trace_reader_internal.h"

#define READ_CHUNK   (128 * 1024)
#define DETECT_LINES 64
#define DETECT_BYTES (1024 * 1024)

#define LINE_TOO_LONG 1
#define LINE_HAS_NUL  2

static const char *const format_names[HY_TRACE_READ_FORMATS] = {
	[HY_TRACE_READ_MSR] = "msr",	     [HY_TRACE_READ_HEIMDALL] = "heimdall",
	[HY_TRACE_READ_FIU] = "fiu",	     [HY_TRACE_READ_BLKPARSE] = "blkparse",
	[HY_TRACE_READ_DISKSIM] = "disksim", [HY_TRACE_READ_SPC] = "spc",
	[HY_TRACE_READ_VSCSI] = "vscsi",     [HY_TRACE_READ_TENCENT] = "tencent",
	[HY_TRACE_READ_ARC] = "arc",	     [HY_TRACE_READ_HYBRIDFS] = "hybridfs",
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
			 r->path, r->lline, hy_trace_reader_parse_excerpt(shown, ex, sizeof(ex)),
			 HY_TRACE_MAX_DEVICES);
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
			k = hy_trace_reader_parse_line(r, r->format, &r->in_summary, line, len, &p,
						       why, sizeof(why));
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
		if (hy_trace_reader_parse_split_blank(r->lbuf, f) != 5 ||
		    hy_trace_reader_parse_u64(f[2], &off) != NUM_OK ||
		    hy_trace_reader_parse_u64(f[3], &size) != NUM_OK)
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

			if (hy_trace_reader_parse_is_header(s, VSCSI_HEADER)) {
				r->format = HY_TRACE_READ_VSCSI;
				goto out;
			}
			if (hy_trace_reader_parse_is_header(s, HYBRIDFS_HEADER)) {
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
				k = hy_trace_reader_parse_line(r, (enum hy_trace_reader_format)f,
							       &summary[f], copy, r->llen, &p, lwhy,
							       sizeof(lwhy));
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
