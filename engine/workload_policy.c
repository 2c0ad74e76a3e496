/* workload_policy.c - see include/hybridfs/workload_policy.h.
 *
 * Every setting is a field: a row (a category, or the metadata pseudo-row)
 * and a key. Text comes in through parse_field() and parse_value(), goes out
 * through field_name() and format_value(); field_at() numbers the fields in
 * the fixed order of hy_workload_policy_each(), which save and the tests
 * walk as well. A value is parsed whole before anything is stored, so a
 * refused setting leaves the table as it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>

#include "hybridfs/log.h"
#include "hybridfs/ondisk.h"
#include "hybridfs/state.h"
#include "hybridfs/workload_policy.h"

#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)

#define METADATA_ROW  HY_CATEGORY_COUNT /* field.row of the metadata settings */
#define TIMEOUT_MAX_S 86400u
#define SHARE_MIN     1u
#define SHARE_MAX     1000u
#define ROW_KEYS      (4 + 2 * HY_CLASS_COUNT) /* write, line_size, admit.*.*, cutoff, evict */
#define METADATA_KEYS 2u
#define FIELD_COUNT   (HY_CATEGORY_COUNT * ROW_KEYS + METADATA_KEYS)
#define NAME_SIZE     96 /* the longest name is 51 bytes */
#define VALUE_SIZE    32 /* the longest value is 20 bytes (a seq_cutoff in bytes) */

enum key {
	K_WRITE,
	K_LINE_SIZE,
	K_ADMIT,
	K_SEQ_CUTOFF,
	K_EVICT,
	K_TIMEOUT, /* metadata */
	K_SHARE,   /* metadata */
};

struct field {
	unsigned row; /* enum hy_category, or METADATA_ROW */
	enum key key;
	unsigned dir; /* K_ADMIT: 0 read, 1 write */
	unsigned cls; /* K_ADMIT: enum hy_request_class */
};

/* A parsed value: the one member its key uses. */
union value {
	unsigned u;	/* write, admit, evict: the enum; line_size; timeout ms; share */
	uint64_t bytes; /* seq_cutoff */
};

static const char *const write_names[] = {
	[HY_WORKLOAD_WRITE_MOUNT] = "mount",
	[HY_WORKLOAD_WRITE_BACK] = "back",
	[HY_WORKLOAD_WRITE_THROUGH] = "through",
	[HY_WORKLOAD_WRITE_AROUND] = "around",
};

static const char *const admit_names[] = {
	[HY_ADMIT_BYPASS] = "bypass",
	[HY_ADMIT_LOW] = "low",
	[HY_ADMIT_NORMAL] = "normal",
	[HY_ADMIT_HIGH] = "high",
};

static const char *const evict_names[] = {
	[HY_EVICT_EARLY] = "early",
	[HY_EVICT_NORMAL] = "normal",
	[HY_EVICT_LATE] = "late",
};

static const char *const dir_names[2] = {"read", "write"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *hy_workload_write_name(enum hy_workload_write w)
{
	return (unsigned)w < COUNT(write_names) ? write_names[w] : "invalid";
}

const char *hy_workload_admit_name(enum hy_workload_admit a)
{
	return (unsigned)a < COUNT(admit_names) ? admit_names[a] : "invalid";
}

const char *hy_workload_evict_name(enum hy_workload_evict e)
{
	return (unsigned)e < COUNT(evict_names) ? evict_names[e] : "invalid";
}

static void set_admit(struct hy_workload_policy *p, unsigned dir, enum hy_workload_admit a)
{
	for (unsigned c = 0; c < HY_CLASS_COUNT; c++)
		p->admit[dir][c] = (uint8_t)a;
}

/* The defaults and their reasons are in the header. */
void hy_workload_policy_defaults(struct hy_workload_policy_table *t)
{
	struct hy_workload_policy *p;

	/* zeroed first, padding too: tables compare with memcmp */
	memset(t, 0, sizeof(*t));
	for (unsigned c = 0; c < HY_CATEGORY_COUNT; c++) {
		p = &t->row[c];
		p->write = HY_WORKLOAD_WRITE_MOUNT;
		p->line_size = 4 * KIB;
		set_admit(p, 0, HY_ADMIT_NORMAL);
		set_admit(p, 1, HY_ADMIT_NORMAL);
		p->seq_cutoff = HY_WORKLOAD_CUTOFF_MOUNT;
		p->evict = HY_EVICT_NORMAL;
	}

	p = &t->row[HY_CATEGORY_RANDOM_CONSUMER];
	p->write = HY_WORKLOAD_WRITE_AROUND;
	p->line_size = 8 * KIB;
	p->admit[0][HY_CLASS_RANDOM] = HY_ADMIT_HIGH;
	p->admit[0][HY_CLASS_OVERLAPPED] = HY_ADMIT_HIGH;
	p->admit[0][HY_CLASS_STRIDED] = HY_ADMIT_NORMAL;
	p->admit[0][HY_CLASS_SEQUENTIAL] = HY_ADMIT_LOW;

	p = &t->row[HY_CATEGORY_RANDOM_PRODUCER_CONSUMER];
	for (unsigned dir = 0; dir < 2; dir++) {
		p->admit[dir][HY_CLASS_RANDOM] = HY_ADMIT_HIGH;
		p->admit[dir][HY_CLASS_OVERLAPPED] = HY_ADMIT_HIGH;
	}
	p->evict = HY_EVICT_LATE;

	/* strided above sequential, in both directions */
	p = &t->row[HY_CATEGORY_SEQUENTIAL_PRODUCER_CONSUMER];
	p->write = HY_WORKLOAD_WRITE_THROUGH;
	p->line_size = 16 * KIB;
	for (unsigned dir = 0; dir < 2; dir++)
		p->admit[dir][HY_CLASS_SEQUENTIAL] = HY_ADMIT_LOW;

	p = &t->row[HY_CATEGORY_ARCHIVAL_CONSUMER];
	p->write = HY_WORKLOAD_WRITE_AROUND;
	p->line_size = 64 * KIB;
	set_admit(p, 0, HY_ADMIT_LOW);
	set_admit(p, 1, HY_ADMIT_LOW);
	p->admit[0][HY_CLASS_SEQUENTIAL] = HY_ADMIT_BYPASS;
	p->evict = HY_EVICT_EARLY;

	p = &t->row[HY_CATEGORY_LARGE_FILE_GENERATOR];
	p->write = HY_WORKLOAD_WRITE_AROUND;
	p->line_size = 64 * KIB;
	set_admit(p, 0, HY_ADMIT_LOW);
	set_admit(p, 1, HY_ADMIT_LOW);
	p->admit[1][HY_CLASS_SEQUENTIAL] = HY_ADMIT_BYPASS;
	p->seq_cutoff = MIB;
	p->evict = HY_EVICT_EARLY;

	t->metadata_timeout_ms = 10000;
	t->metadata_share_permille = 500;
}

/* --- names ---------------------------------------------------------- */

static bool token_is(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && memcmp(s, word, len) == 0;
}

/* The index of @s[0..len) in @names, or -1. */
static int token_index(const char *s, size_t len, const char *const *names, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (names[i] && token_is(s, len, names[i]))
			return (int)i;
	return -1;
}

/* The field @name[0..len) names: 0, or -EINVAL with the bad part in @why. */
static int parse_field(const char *name, size_t len, struct field *f, char *why, size_t why_size)
{
	const char *dot = memchr(name, '.', len), *key, *rest, *dot2;
	size_t klen, rlen;
	int i;

	memset(f, 0, sizeof(*f));
	if (!dot) {
		hy_ondisk_say(why, why_size, "no \".\" in \"%.*s\" (expected CATEGORY.KEY)",
			      (int)len, name);
		return -EINVAL;
	}
	key = dot + 1;
	klen = len - (size_t)(key - name);
	if (token_is(name, (size_t)(dot - name), "metadata")) {
		f->row = METADATA_ROW;
		if (token_is(key, klen, "timeout")) {
			f->key = K_TIMEOUT;
		} else if (token_is(key, klen, "share")) {
			f->key = K_SHARE;
		} else {
			hy_ondisk_say(
				why, why_size,
				"unknown key \"%.*s\" of metadata (expected timeout or share)",
				(int)klen, key);
			return -EINVAL;
		}
		return 0;
	}
	for (i = 0; i < HY_CATEGORY_COUNT; i++)
		if (token_is(name, (size_t)(dot - name), hy_category_name(i)))
			break;
	if (i == HY_CATEGORY_COUNT) {
		char list[256];
		size_t n = 0;

		list[0] = '\0';
		for (int c = 0; c < HY_CATEGORY_COUNT && n < sizeof(list); c++)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s, ",
					      hy_category_name(c));
		hy_ondisk_say(why, why_size, "unknown category \"%.*s\" (expected %smetadata)",
			      (int)(dot - name), name, list);
		return -EINVAL;
	}
	f->row = (unsigned)i;
	if (token_is(key, klen, "write")) {
		f->key = K_WRITE;
	} else if (token_is(key, klen, "line_size")) {
		f->key = K_LINE_SIZE;
	} else if (token_is(key, klen, "seq_cutoff")) {
		f->key = K_SEQ_CUTOFF;
	} else if (token_is(key, klen, "evict")) {
		f->key = K_EVICT;
	} else if (klen > 6 && memcmp(key, "admit.", 6) == 0) {
		f->key = K_ADMIT;
		rest = key + 6;
		rlen = klen - 6;
		dot2 = memchr(rest, '.', rlen);
		i = token_index(rest, dot2 ? (size_t)(dot2 - rest) : rlen, dir_names, 2);
		if (!dot2 || i < 0) {
			hy_ondisk_say(why, why_size,
				      "unknown key \"%.*s\" (expected admit.read.CLASS or "
				      "admit.write.CLASS)",
				      (int)klen, key);
			return -EINVAL;
		}
		f->dir = (unsigned)i;
		rest = dot2 + 1;
		rlen = klen - (size_t)(rest - key);
		for (i = 0; i < HY_CLASS_COUNT; i++)
			if (token_is(rest, rlen, hy_classify_name(i)))
				break;
		if (i == HY_CLASS_COUNT) {
			hy_ondisk_say(
				why, why_size,
				"unknown request class \"%.*s\" in \"%.*s\" (expected sequential, "
				"strided, overlapped or random)",
				(int)rlen, rest, (int)klen, key);
			return -EINVAL;
		}
		f->cls = (unsigned)i;
	} else {
		hy_ondisk_say(why, why_size,
			      "unknown key \"%.*s\" (expected write, line_size, admit.read.CLASS, "
			      "admit.write.CLASS, seq_cutoff or evict)",
			      (int)klen, key);
		return -EINVAL;
	}
	return 0;
}

/* The @i-th field in the order of hy_workload_policy_each(), i < FIELD_COUNT. */
static void field_at(unsigned i, struct field *f)
{
	unsigned k;

	memset(f, 0, sizeof(*f));
	if (i >= HY_CATEGORY_COUNT * ROW_KEYS) {
		f->row = METADATA_ROW;
		f->key = i - HY_CATEGORY_COUNT * ROW_KEYS == 0 ? K_TIMEOUT : K_SHARE;
		return;
	}
	f->row = i / ROW_KEYS;
	k = i % ROW_KEYS;
	if (k == 0) {
		f->key = K_WRITE;
	} else if (k == 1) {
		f->key = K_LINE_SIZE;
	} else if (k < 2 + 2 * HY_CLASS_COUNT) {
		f->key = K_ADMIT;
		f->dir = (k - 2) / HY_CLASS_COUNT;
		f->cls = (k - 2) % HY_CLASS_COUNT;
	} else if (k == 2 + 2 * HY_CLASS_COUNT) {
		f->key = K_SEQ_CUTOFF;
	} else {
		f->key = K_EVICT;
	}
}

static void field_name(const struct field *f, char *buf, size_t size)
{
	const char *row = f->row == METADATA_ROW ? "metadata" : hy_category_name(f->row);

	switch (f->key) {
	case K_WRITE:
		snprintf(buf, size, "%s.write", row);
		break;
	case K_LINE_SIZE:
		snprintf(buf, size, "%s.line_size", row);
		break;
	case K_ADMIT:
		snprintf(buf, size, "%s.admit.%s.%s", row, dir_names[f->dir],
			 hy_classify_name(f->cls));
		break;
	case K_SEQ_CUTOFF:
		snprintf(buf, size, "%s.seq_cutoff", row);
		break;
	case K_EVICT:
		snprintf(buf, size, "%s.evict", row);
		break;
	case K_TIMEOUT:
		snprintf(buf, size, "%s.timeout", row);
		break;
	case K_SHARE:
		snprintf(buf, size, "%s.share", row);
		break;
	}
}

/* --- values --------------------------------------------------------- */

/* Bytes: decimal digits, then optionally K, M or G (any case, binary
 * multiples) and optionally "iB" after it. 0, -EINVAL (not that), or
 * -ERANGE (more than 64 bits). */
static int parse_bytes(const char *s, uint64_t *out)
{
	unsigned shift = 0;
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9') /* strtoull takes blanks, signs */
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	switch (*end) {
	case '\0':
		break;
	case 'K':
	case 'k':
		shift = 10;
		break;
	case 'M':
	case 'm':
		shift = 20;
		break;
	case 'G':
	case 'g':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (shift && end[1] != '\0' && strcasecmp(end + 1, "ib") != 0)
		return -EINVAL;
	if (v > UINT64_MAX >> shift)
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

/* @v in the largest suffix that is exact: "0", "512", "8K", "1M", "3G". */
static int format_bytes(uint64_t v, char *buf, size_t size)
{
	static const struct {
		unsigned shift;
		char suffix;
	} units[] = {{30, 'G'}, {20, 'M'}, {10, 'K'}};

	if (v)
		for (size_t i = 0; i < COUNT(units); i++)
			if ((v & ((UINT64_C(1) << units[i].shift) - 1)) == 0)
				return snprintf(buf, size, "%" PRIu64 "%c", v >> units[i].shift,
						units[i].suffix);
	return snprintf(buf, size, "%" PRIu64, v);
}

/* Seconds with optional decimals ("10", "0.5", "2.250") into ms, at most
 * @max_s seconds. 0, -EINVAL (not that), -ERANGE (above @max_s), -EDOM
 * (a non-zero digit below the millisecond). No locale, no exponent. */
static int parse_seconds(const char *s, unsigned max_s, uint32_t *ms)
{
	uint64_t whole = 0, frac = 0;
	bool too_fine = false;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++)
		if (whole <= UINT32_MAX) /* saturates above: stays too large */
			whole = whole * 10 + (unsigned)(*s - '0');
	if (*s == '.') {
		unsigned digits = 0;

		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++, digits++) {
			if (digits < 3)
				frac = frac * 10 + (unsigned)(*s - '0');
			else if (*s != '0')
				too_fine = true;
		}
		for (; digits < 3; digits++)
			frac *= 10;
	}
	if (*s)
		return -EINVAL;
	if (whole * 1000 + frac > (uint64_t)max_s * 1000)
		return -ERANGE;
	if (too_fine)
		return -EDOM;
	*ms = (uint32_t)(whole * 1000 + frac);
	return 0;
}

/* "10", "0.5", "1.25", "0.001" */
static int format_seconds(uint32_t ms, char *buf, size_t size)
{
	unsigned frac = ms % 1000, digits = 3;

	if (!frac)
		return snprintf(buf, size, "%" PRIu32, ms / 1000);
	for (; frac % 10 == 0; frac /= 10)
		digits--;
	return snprintf(buf, size, "%" PRIu32 ".%0*u", ms / 1000, (int)digits, frac);
}

/* A decimal number without sign, blanks or suffix. */
static int parse_uint(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*out = v;
	return 0;
}

/* @value for field @f into @v: 0, or -EINVAL with @name (the field's text)
 * and @value in @why. */
static int parse_value(const struct field *f, const char *name, int name_len, const char *value,
		       union value *v, char *why, size_t why_size)
{
	uint64_t n;
	int i, rc;

	switch (f->key) {
	case K_WRITE:
		i = token_index(value, strlen(value), write_names, COUNT(write_names));
		if (i < 0) {
			hy_ondisk_say(why, why_size,
				      "%.*s \"%s\": expected back, through, around or mount",
				      name_len, name, value);
			return -EINVAL;
		}
		v->u = (unsigned)i;
		return 0;
	case K_LINE_SIZE:
		rc = parse_bytes(value, &n);
		if (rc == -EINVAL) {
			hy_ondisk_say(why, why_size,
				      "%.*s \"%s\": not a size in bytes (4K, 8K, 16K, 32K or 64K)",
				      name_len, name, value);
			return -EINVAL;
		}
		if (rc || n < HY_WORKLOAD_LINE_MIN || n > HY_WORKLOAD_LINE_MAX || (n & (n - 1))) {
			hy_ondisk_say(why, why_size,
				      "%.*s \"%s\": not a power of two between 4K and 64K",
				      name_len, name, value);
			return -EINVAL;
		}
		v->u = (unsigned)n;
		return 0;
	case K_ADMIT:
		i = token_index(value, strlen(value), admit_names, COUNT(admit_names));
		if (i < 0) {
			hy_ondisk_say(why, why_size,
				      "%.*s \"%s\": expected bypass, low, normal or high", name_len,
				      name, value);
			return -EINVAL;
		}
		v->u = (unsigned)i;
		return 0;
	case K_SEQ_CUTOFF:
		if (strcmp(value, "mount") == 0) {
			v->bytes = HY_WORKLOAD_CUTOFF_MOUNT;
			return 0;
		}
		rc = parse_bytes(value, &n);
		if (rc == -EINVAL) {
			hy_ondisk_say(
				why, why_size,
				"%.*s \"%s\": not a size in bytes (suffix K, M or G) or \"mount\"",
				name_len, name, value);
			return -EINVAL;
		}
		if (rc || n == HY_WORKLOAD_CUTOFF_MOUNT) { /* the value that means "mount" */
			hy_ondisk_say(why, why_size, "%.*s \"%s\": too large", name_len, name,
				      value);
			return -EINVAL;
		}
		v->bytes = n;
		return 0;
	case K_EVICT:
		i = token_index(value, strlen(value), evict_names, COUNT(evict_names));
		if (i < 0) {
			hy_ondisk_say(why, why_size, "%.*s \"%s\": expected early, normal or late",
				      name_len, name, value);
			return -EINVAL;
		}
		v->u = (unsigned)i;
		return 0;
	case K_TIMEOUT: {
		uint32_t ms;

		rc = parse_seconds(value, TIMEOUT_MAX_S, &ms);
		if (rc == -EINVAL)
			hy_ondisk_say(why, why_size,
				      "%.*s \"%s\": not a number of seconds (like 10 or 0.5)",
				      name_len, name, value);
		else if (rc == -ERANGE)
			hy_ondisk_say(why, why_size, "%.*s \"%s\": more than %u seconds", name_len,
				      name, value, TIMEOUT_MAX_S);
		else if (rc == -EDOM)
			hy_ondisk_say(why, why_size, "%.*s \"%s\": finer than a millisecond",
				      name_len, name, value);
		if (rc)
			return -EINVAL;
		v->u = ms;
		return 0;
	}
	case K_SHARE:
		rc = parse_uint(value, &n);
		if (rc || n < SHARE_MIN || n > SHARE_MAX) {
			hy_ondisk_say(why, why_size,
				      "%.*s \"%s\": not a permille between %u and %u", name_len,
				      name, value, SHARE_MIN, SHARE_MAX);
			return -EINVAL;
		}
		v->u = (unsigned)n;
		return 0;
	}
	hy_ondisk_say(why, why_size, "%.*s: unknown key", name_len, name); /* cannot happen */
	return -EINVAL;
}

static void store_value(struct hy_workload_policy_table *t, const struct field *f,
			const union value *v)
{
	struct hy_workload_policy *p;

	if (f->key == K_TIMEOUT) {
		t->metadata_timeout_ms = v->u;
		return;
	}
	if (f->key == K_SHARE) {
		t->metadata_share_permille = v->u;
		return;
	}
	if (f->row == METADATA_ROW)
		return; /* the parser gives the metadata row no other key */
	p = &t->row[f->row];
	switch (f->key) {
	case K_WRITE:
		p->write = (enum hy_workload_write)v->u;
		break;
	case K_LINE_SIZE:
		p->line_size = v->u;
		break;
	case K_ADMIT:
		p->admit[f->dir][f->cls] = (uint8_t)v->u;
		break;
	case K_SEQ_CUTOFF:
		p->seq_cutoff = v->bytes;
		break;
	case K_EVICT:
		p->evict = (enum hy_workload_evict)v->u;
		break;
	default:
		break;
	}
}

/* The value of @f in @t in the text form; snprintf's return. */
static int format_value(const struct hy_workload_policy_table *t, const struct field *f, char *buf,
			size_t size)
{
	const struct hy_workload_policy *p = f->row == METADATA_ROW ? NULL : &t->row[f->row];

	switch (f->key) {
	case K_WRITE:
		return snprintf(buf, size, "%s", hy_workload_write_name(p->write));
	case K_LINE_SIZE:
		return format_bytes(p->line_size, buf, size);
	case K_ADMIT:
		return snprintf(buf, size, "%s", hy_workload_admit_name(p->admit[f->dir][f->cls]));
	case K_SEQ_CUTOFF:
		if (p->seq_cutoff == HY_WORKLOAD_CUTOFF_MOUNT)
			return snprintf(buf, size, "mount");
		return format_bytes(p->seq_cutoff, buf, size);
	case K_EVICT:
		return snprintf(buf, size, "%s", hy_workload_evict_name(p->evict));
	case K_TIMEOUT:
		return format_seconds(t->metadata_timeout_ms, buf, size);
	case K_SHARE:
		return snprintf(buf, size, "%" PRIu32, t->metadata_share_permille);
	}
	return snprintf(buf, size, "invalid");
}

/* --- the API -------------------------------------------------------- */

/* One setting given as its name @name[0..len) and @value. */
static int set_parts(struct hy_workload_policy_table *t, const char *name, size_t len,
		     const char *value, char *why, size_t why_size)
{
	struct field f;
	union value v;
	int rc;

	rc = parse_field(name, len, &f, why, why_size);
	if (rc)
		return rc;
	rc = parse_value(&f, name, (int)len, value, &v, why, why_size);
	if (rc)
		return rc;
	store_value(t, &f, &v);
	return 0;
}

int hy_workload_policy_set(struct hy_workload_policy_table *t, const char *setting, char *why,
			   size_t why_size)
{
	const char *eq = strchr(setting, '=');

	if (!eq) {
		hy_ondisk_say(why, why_size, "no \"=\" in setting \"%s\"", setting);
		return -EINVAL;
	}
	return set_parts(t, setting, (size_t)(eq - setting), eq + 1, why, why_size);
}

int hy_workload_policy_get(const struct hy_workload_policy_table *t, const char *name, char *buf,
			   size_t size, char *why, size_t why_size)
{
	struct field f;
	int rc, n;

	rc = parse_field(name, strlen(name), &f, why, why_size);
	if (rc)
		return rc;
	n = format_value(t, &f, buf, size);
	if (n < 0 || (size_t)n >= size) {
		hy_ondisk_say(why, why_size, "the value of \"%s\" needs %d bytes, %zu given", name,
			      n + 1, size);
		return -ERANGE;
	}
	return 0;
}

int hy_workload_policy_each(const struct hy_workload_policy_table *t,
			    int (*fn)(void *arg, const char *name, const char *value), void *arg)
{
	char name[NAME_SIZE], value[VALUE_SIZE];
	struct field f;

	for (unsigned i = 0; i < FIELD_COUNT; i++) {
		int rc;

		field_at(i, &f);
		field_name(&f, name, sizeof(name));
		format_value(t, &f, value, sizeof(value));
		rc = fn(arg, name, value);
		if (rc)
			return rc;
	}
	return 0;
}

/* --- the state database --------------------------------------------- */

int hy_workload_policy_load(struct sqlite3 *db, struct hy_workload_policy_table *t)
{
	struct hy_workload_policy_table loaded;
	char why[512];
	sqlite3_stmt *stmt;
	int rc;

	hy_workload_policy_defaults(t);
	hy_workload_policy_defaults(&loaded);
	rc = sqlite3_prepare_v2(db, "SELECT name, value FROM workload_policy ORDER BY name", -1,
				&stmt, NULL);
	if (rc != SQLITE_OK) {
		hy_log(LOG_ERR, "workload policy: cannot read the state database: %s",
		       sqlite3_errmsg(db));
		return hy_state_errno(rc) ? hy_state_errno(rc) : -EIO;
	}
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(stmt, 0);
		int name_len = sqlite3_column_bytes(stmt, 0);
		const char *value = (const char *)sqlite3_column_text(stmt, 1);
		int value_len = sqlite3_column_bytes(stmt, 1);

		if ((!name && sqlite3_column_type(stmt, 0) != SQLITE_NULL) ||
		    (!value && sqlite3_column_type(stmt, 1) != SQLITE_NULL)) {
			rc = SQLITE_NOMEM;
			break;
		}
		if (!name || !value) {
			hy_log(LOG_WARNING,
			       "workload policy: skipping a state database row \"%s\" with a "
			       "NULL %s",
			       name ? name : "(null)", name ? "value" : "name");
			continue;
		}
		/* a NUL inside would hide the rest of the text from the parser */
		if (strlen(value) != (size_t)value_len) {
			hy_log(LOG_WARNING,
			       "workload policy: skipping state database row \"%s\": its value "
			       "holds a NUL byte",
			       name);
			continue;
		}
		if (set_parts(&loaded, name, (size_t)name_len, value, why, sizeof(why)))
			hy_log(LOG_WARNING,
			       "workload policy: skipping state database row \"%s\" = \"%s\": %s",
			       name, value, why);
	}
	if (rc != SQLITE_DONE) {
		hy_log(LOG_ERR, "workload policy: cannot read the state database: %s",
		       rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(db));
		sqlite3_finalize(stmt);
		return hy_state_errno(rc) ? hy_state_errno(rc) : -EIO;
	}
	sqlite3_finalize(stmt);
	memcpy(t, &loaded, sizeof(*t));
	return 0;
}

int hy_workload_policy_save(struct sqlite3 *db, const struct hy_workload_policy_table *t)
{
	struct hy_workload_policy_table defaults, check;
	char name[NAME_SIZE], value[VALUE_SIZE], dvalue[VALUE_SIZE], why[512], doing[160];
	sqlite3_stmt *stmt = NULL;
	struct field f;
	int rc;

	hy_workload_policy_defaults(&defaults);
	hy_workload_policy_defaults(&check);
	/* Only what load takes back is saved: a field set by hand to a value
	 * outside its range is refused before the database is touched. */
	for (unsigned i = 0; i < FIELD_COUNT; i++) {
		field_at(i, &f);
		field_name(&f, name, sizeof(name));
		format_value(t, &f, value, sizeof(value));
		if (set_parts(&check, name, strlen(name), value, why, sizeof(why))) {
			hy_log(LOG_ERR, "workload policy: not saving an invalid table: %s", why);
			return -EINVAL;
		}
	}
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		/* no ROLLBACK: a transaction that is not ours may be open */
		rc = hy_state_errno(sqlite3_errcode(db));
		hy_log(LOG_ERR, "workload policy: cannot start saving to the state database: %s",
		       sqlite3_errmsg(db));
		return rc ? rc : -EIO;
	}
	snprintf(doing, sizeof(doing), "cannot clear the saved table");
	if (sqlite3_exec(db, "DELETE FROM workload_policy", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	snprintf(doing, sizeof(doing), "cannot prepare the insert");
	if (sqlite3_prepare_v2(db, "INSERT INTO workload_policy (name, value) VALUES (?1, ?2)", -1,
			       &stmt, NULL) != SQLITE_OK)
		goto fail;
	for (unsigned i = 0; i < FIELD_COUNT; i++) {
		field_at(i, &f);
		format_value(t, &f, value, sizeof(value));
		format_value(&defaults, &f, dvalue, sizeof(dvalue));
		if (strcmp(value, dvalue) == 0)
			continue;
		field_name(&f, name, sizeof(name));
		snprintf(doing, sizeof(doing), "cannot save \"%s=%s\"", name, value);
		if (sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_text(stmt, 2, value, -1, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_step(stmt) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(stmt);
	}
	sqlite3_finalize(stmt);
	stmt = NULL;
	snprintf(doing, sizeof(doing), "cannot commit");
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	return 0;
fail:
	rc = hy_state_errno(sqlite3_errcode(db));
	hy_log(LOG_ERR, "workload policy: saving to the state database: %s: %s", doing,
	       sqlite3_errmsg(db));
	sqlite3_finalize(stmt);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc ? rc : -EIO;
}
