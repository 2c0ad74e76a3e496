/* metrics.c - see include/hybridfs/metrics.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hybridfs/log.h"
#include "hybridfs/metrics.h"

const char *const hy_metrics_window_names[HY_METRICS_WINDOWS] = {"5m", "1h", "1d"};
const long hy_metrics_window_seconds[HY_METRICS_WINDOWS] = {300, 3600, 86400};

enum kind { COUNTER, GAUGE };

/* One sample of a family: consecutive rows with the same name are one
 * family, the first row's help and kind are the family's. @label names the
 * extra label (NULL: none), @value its value; @path is where status has
 * the figure (for a counter also its key in "metrics"."totals"). */
struct metric {
	const char *name;
	enum kind kind;
	const char *help;
	const char *label, *value;
	const char *path;
};

#define OP(v)                                                                                      \
	{                                                                                          \
		"hybridfs_operations_total", COUNTER, "FUSE requests served, by kind", "op", v,    \
			"operations." v                                                            \
	}
#define CREAD(v, p)                                                                                \
	{                                                                                          \
		"hybridfs_cache_read_blocks_total", COUNTER,                                       \
			"4 KiB blocks of reads through the cache: hits in DRAM or on the SSD, or " \
			"misses",                                                                  \
			"result", v, "cache." p                                                    \
	}
#define CWRITE(v, p)                                                                               \
	{                                                                                          \
		"hybridfs_cache_write_blocks_total", COUNTER,                                      \
			"4 KiB blocks of writes through the cache: hits in DRAM or on the SSD, "   \
			"or misses",                                                               \
			"result", v, "cache." p                                                    \
	}
#define PASS(v)                                                                                    \
	{                                                                                          \
		"hybridfs_cache_passthrough_blocks_total", COUNTER,                                \
			"4 KiB blocks that passed the cache (read from or written home, no copy "  \
			"kept), by "                                                               \
			"reason: class (ReCA bypasses the request's class), excluded (exclude "    \
			"rules), cutoff "                                                          \
			"(sequential cutoff), no_room, heat (predicted cold), policy (the "        \
			"replacement policy "                                                      \
			"refused), write_around",                                                  \
			"reason", v, "cache.passthrough." v                                        \
	}

static const struct metric catalogue[] = {
	OP("lookup"),
	OP("getattr"),
	OP("setattr"),
	OP("readdir"),
	OP("open"),
	OP("create"),
	OP("read"),
	OP("write"),
	OP("fsync"),
	OP("namespace"),
	OP("xattr"),
	OP("other"),
	{"hybridfs_read_bytes_total", COUNTER, "Bytes read from the mount", NULL, NULL,
	 "bytes.read"},
	{"hybridfs_written_bytes_total", COUNTER, "Bytes written to the mount", NULL, NULL,
	 "bytes.written"},
	{"hybridfs_backing_reads_total", COUNTER, "Read requests sent to the backing directory",
	 NULL, NULL, "backing_device.reads"},
	{"hybridfs_backing_writes_total", COUNTER, "Write requests sent to the backing directory",
	 NULL, NULL, "backing_device.writes"},
	{"hybridfs_backing_read_bytes_total", COUNTER, "Bytes read from the backing directory",
	 NULL, NULL, "backing_device.bytes_read"},
	{"hybridfs_backing_written_bytes_total", COUNTER, "Bytes written to the backing directory",
	 NULL, NULL, "backing_device.bytes_written"},
	{"hybridfs_backing_syncs_total", COUNTER, "Syncs of backing files", NULL, NULL,
	 "backing_device.syncs"},
	{"hybridfs_backing_seeks_total", COUNTER,
	 "Backing requests that did not start where the one before ended", NULL, NULL,
	 "backing_device.seeks"},
	{"hybridfs_backing_errors_total", COUNTER, "Backing requests that failed", NULL, NULL,
	 "backing_device.errors"},
	CREAD("dram_hit", "read_hits_dram"),
	CREAD("ssd_hit", "read_hits_ssd"),
	CREAD("miss", "read_misses"),
	CWRITE("dram_hit", "write_hits_dram"),
	CWRITE("ssd_hit", "write_hits_ssd"),
	CWRITE("miss", "write_misses"),
	PASS("class"),
	PASS("excluded"),
	PASS("cutoff"),
	PASS("no_room"),
	PASS("heat"),
	PASS("policy"),
	PASS("write_around"),
	{"hybridfs_cache_ssd_written_bytes_total", COUNTER, "Bytes written into SSD cache lines",
	 NULL, NULL, "cache.ssd_bytes_written"},
	{"hybridfs_cache_heat_admitted_blocks_total", COUNTER,
	 "4 KiB blocks the front buffer's heat filter sent to the SSD", NULL, NULL,
	 "cache.heat_admitted"},
	{"hybridfs_cache_evicted_blocks_total", COUNTER, "4 KiB blocks evicted, by tier", "tier",
	 "dram", "cache.dram_evictions"},
	{"hybridfs_cache_evicted_blocks_total", COUNTER, NULL, "tier", "ssd",
	 "cache.ssd_evictions"},
	{"hybridfs_cache_cleaned_blocks_total", COUNTER,
	 "Dirty 4 KiB blocks the cleaner wrote home", NULL, NULL, "cache.cleaned_blocks"},
	{"hybridfs_bopt_read_requests_total", COUNTER, "Read requests served from the BOPT", NULL,
	 NULL, "bopt.bopt_reads"},
	{"hybridfs_bopt_write_requests_total", COUNTER, "Write requests that went into the BOPT",
	 NULL, NULL, "bopt.bopt_writes"},
	{"hybridfs_bopt_synced_blocks_total", COUNTER,
	 "4 KiB blocks written into the BOPT that went home", NULL, NULL, "bopt.synced_blocks"},
	{"hybridfs_profiler_logged_requests_total", COUNTER,
	 "Requests the profiler wrote into the access log", NULL, NULL, "profiler.written"},
	{"hybridfs_profiler_dropped_requests_total", COUNTER,
	 "Requests the profiler dropped (its queue was full)", NULL, NULL, "profiler.dropped"},

	{"hybridfs_start_time_seconds", GAUGE, "When the daemon started, seconds since the epoch",
	 NULL, NULL, "started"},
	{"hybridfs_database_bytes", GAUGE, "Size of the state database and its WAL", NULL, NULL,
	 "database_bytes"},
	{"hybridfs_inodes", GAUGE, "Inodes the daemon knows", NULL, NULL, "inodes.known"},
	{"hybridfs_cached_descriptors", GAUGE, "Backing file descriptors kept open", NULL, NULL,
	 "inodes.descriptors_cached"},
	{"hybridfs_cache_dram_capacity_blocks", GAUGE, "4 KiB slots of the DRAM front buffer", NULL,
	 NULL, "cache.dram_blocks"},
	{"hybridfs_cache_dram_used_blocks", GAUGE, "Front buffer slots in use", NULL, NULL,
	 "cache.dram_used"},
	{"hybridfs_cache_ssd_capacity_blocks", GAUGE, "4 KiB lines of the SSD cache store", NULL,
	 NULL, "cache.ssd_lines"},
	{"hybridfs_cache_ssd_used_blocks", GAUGE, "SSD cache lines in use", NULL, NULL,
	 "cache.ssd_used"},
	{"hybridfs_cache_dirty_bytes", GAUGE, "Bytes in the cache not written home yet", NULL, NULL,
	 "cache.dirty_bytes"},
	{"hybridfs_cache_cleaner_backlog_blocks", GAUGE,
	 "Dirty 4 KiB blocks waiting for the cleaner", NULL, NULL, "cache.cleaner_backlog"},
	{"hybridfs_bopt_size_bytes", GAUGE, "Size of the BOPT", NULL, NULL, "bopt.bytes"},
	{"hybridfs_bopt_relocated_blocks", GAUGE, "4 KiB blocks relocated into the BOPT", NULL,
	 NULL, "bopt.map_blocks"},
	{"hybridfs_bopt_dirty_blocks", GAUGE, "Relocated blocks newer in the BOPT than at home",
	 NULL, NULL, "bopt.dirty_blocks"},
	{"hybridfs_profiler_queued_requests", GAUGE, "Requests waiting to be logged", NULL, NULL,
	 "profiler.queued"},
	{"hybridfs_metrics_snapshot_time_seconds", GAUGE,
	 "When the totals were last written to the state database, seconds since the epoch", NULL,
	 NULL, "metrics.last_snapshot"},
};

#define CATALOGUE (sizeof(catalogue) / sizeof(catalogue[0]))

size_t hy_metrics_counter_count(void)
{
	size_t n = 0;

	for (size_t i = 0; i < CATALOGUE; i++)
		n += catalogue[i].kind == COUNTER;
	return n;
}

const char *hy_metrics_counter_path(size_t i)
{
	for (size_t k = 0; k < CATALOGUE; k++)
		if (catalogue[k].kind == COUNTER && i-- == 0)
			return catalogue[k].path;
	return NULL;
}

/* The object at dotted @path, or NULL. */
static struct json_object *at_path(struct json_object *obj, const char *path)
{
	char key[64];

	while (obj && *path) {
		const char *dot = strchr(path, '.');
		size_t len = dot ? (size_t)(dot - path) : strlen(path);

		if (len >= sizeof(key) || !json_object_is_type(obj, json_type_object))
			return NULL;
		memcpy(key, path, len);
		key[len] = '\0';
		if (!json_object_object_get_ex(obj, key, &obj))
			return NULL;
		path += len + (dot ? 1 : 0);
	}
	return obj;
}

static bool number_of(struct json_object *v, unsigned long long *out)
{
	if (!v)
		return false;
	switch (json_object_get_type(v)) {
	case json_type_int:
		/* json-c keeps an unsigned value past INT64_MAX as such */
		*out = json_object_get_int64(v) < 0 ? 0
						    : (unsigned long long)json_object_get_uint64(v);
		return true;
	case json_type_double: {
		double d = json_object_get_double(v);

		*out = d > 0 ? (unsigned long long)d : 0;
		return true;
	}
	case json_type_boolean:
		*out = json_object_get_boolean(v) ? 1 : 0;
		return true;
	default:
		return false;
	}
}

bool hy_metrics_status_u64(struct json_object *status, const char *path, unsigned long long *out)
{
	return number_of(at_path(status, path), out);
}

/* The length of the UTF-8 sequence at @s (1 to 4), or 0 when it is not
 * one: overlong forms, surrogates and values past U+10FFFF are not. */
static size_t utf8_length(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	unsigned min, v;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000, v = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	return n;
}

size_t hy_metrics_escape_label(const char *in, char *out, size_t size)
{
	const unsigned char *s = (const unsigned char *)(in ? in : "");
	size_t len = 0;

	while (*s) {
		char piece[4];
		size_t n = utf8_length(s), plen;

		if (*s == '\\' || *s == '"') {
			piece[0] = '\\', piece[1] = (char)*s, plen = 2;
		} else if (*s == '\n') {
			piece[0] = '\\', piece[1] = 'n', plen = 2;
		} else if (n == 0) {
			/* U+FFFD REPLACEMENT CHARACTER for a byte that is not UTF-8 */
			piece[0] = (char)0xef, piece[1] = (char)0xbf, piece[2] = (char)0xbd,
			plen = 3;
			n = 1;
		} else {
			memcpy(piece, s, n);
			plen = n;
		}
		for (size_t i = 0; i < plen; i++, len++)
			if (len + 1 < size)
				out[len] = piece[i];
		s += n;
	}
	if (size)
		out[len < size ? len : size - 1] = '\0';
	return len;
}

/* A label value, escaped, to @out. */
static void put_label(FILE *out, const char *name, const char *value, bool first)
{
	char small[512], *buf = small;
	size_t need = hy_metrics_escape_label(value, small, sizeof(small));

	if (need >= sizeof(small)) {
		buf = malloc(need + 1);
		if (buf)
			hy_metrics_escape_label(value, buf, need + 1);
		else
			buf = small; /* cut, never unescaped */
	}
	fprintf(out, "%s%s=\"%s\"", first ? "" : ",", name, buf);
	if (buf != small)
		free(buf);
}

static const char *string_at(struct json_object *status, const char *key)
{
	struct json_object *v = NULL;

	if (!status || !json_object_object_get_ex(status, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

/* The labels every sample of @m carries, then @extra=@value, @window
 * (each left out when NULL). */
static void put_labels(FILE *out, const struct hy_metrics_mount *m, const char *extra,
		       const char *value, const char *window)
{
	fputc('{', out);
	put_label(out, "mountpoint", m->mountpoint, true);
	put_label(out, "device", string_at(m->status, "backing_disk"), false);
	if (extra)
		put_label(out, extra, value, false);
	if (window)
		put_label(out, "window", window, false);
	fputc('}', out);
}

/* hybridfs_info: what identifies the mount besides its labels. */
static void put_info(FILE *out, const struct hy_metrics_mount *m)
{
	fputs("hybridfs_info{", out);
	put_label(out, "mountpoint", m->mountpoint, true);
	put_label(out, "device", string_at(m->status, "backing_disk"), false);
	put_label(out, "backing", string_at(m->status, "backing"), false);
	put_label(out, "uuid", string_at(m->status, "uuid"), false);
	put_label(out, "version", string_at(m->status, "version"), false);
	fputs("} 1\n", out);
}

/* HELP text escaped as the format says: backslash and newline. */
static void put_help(FILE *out, const char *name, const char *help)
{
	fprintf(out, "# HELP %s ", name);
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", out);
		else if (*p == '\n')
			fputs("\\n", out);
		else
			fputc(*p, out);
	}
	fputc('\n', out);
}

/* A counter's value: its total kept across mounts when the daemon has
 * one, else the mount's own figure. */
static bool counter_value(struct json_object *status, const char *path, unsigned long long *v)
{
	struct json_object *totals = at_path(status, "metrics.totals"), *t = NULL;

	if (totals && json_object_object_get_ex(totals, path, &t) && number_of(t, v))
		return true;
	return hy_metrics_status_u64(status, path, v);
}

/* What a counter counted in window @w, from "metrics"."windows". */
static bool window_value(struct json_object *status, int w, const char *path, unsigned long long *v)
{
	struct json_object *win = at_path(status, "metrics.windows"), *c = NULL, *x = NULL;

	if (!win || !json_object_object_get_ex(win, hy_metrics_window_names[w], &win) ||
	    !json_object_object_get_ex(win, "counters", &c) ||
	    !json_object_object_get_ex(c, path, &x))
		return false;
	return number_of(x, v);
}

/* hybridfs_operations_total -> hybridfs_window_operations */
static void window_name(const char *counter, char *out, size_t size)
{
	const char *base = counter + strlen("hybridfs_");
	size_t len = strlen(base) - strlen("_total");

	snprintf(out, size, "hybridfs_window_%.*s", (int)len, base);
}

/* Row @k's value for mount @m: @w < 0 the counter or gauge itself, else
 * what the counter counted in window @w. */
static bool sample_value(const struct hy_metrics_mount *m, size_t k, int w, unsigned long long *v)
{
	const struct metric *r = &catalogue[k];

	if (!m->status)
		return false;
	if (w >= 0)
		return window_value(m->status, w, r->path, v);
	if (r->kind == COUNTER)
		return counter_value(m->status, r->path, v);
	return hy_metrics_status_u64(m->status, r->path, v);
}

/* The rows [@first, @end) of one family, over every mount: the counter
 * or gauge itself, or with @windows the counter's window gauge, every
 * window of it (a family's samples go together). A family no mount has a
 * value for is left out whole. */
static void put_family(FILE *out, size_t first, size_t end, bool windows,
		       const struct hy_metrics_mount *mounts, size_t n)
{
	const struct metric *f = &catalogue[first];
	int w0 = windows ? 0 : -1, w1 = windows ? HY_METRICS_WINDOWS : 0;
	unsigned long long v;
	char name[128], help[512];
	bool any = false;

	for (int w = w0; w < w1 && !any; w++)
		for (size_t i = 0; i < n && !any; i++)
			for (size_t k = first; k < end && !any; k++)
				any = sample_value(&mounts[i], k, w, &v);
	if (!any)
		return;
	if (windows) {
		window_name(f->name, name, sizeof(name));
		snprintf(help, sizeof(help),
			 "%s, in the last window (5m, 1h, 1d), from the totals' snapshots (see "
			 "hybridfs_window_covered_seconds)",
			 f->help);
	} else {
		snprintf(name, sizeof(name), "%s", f->name);
		snprintf(help, sizeof(help), "%s", f->help);
	}
	put_help(out, name, help);
	fprintf(out, "# TYPE %s %s\n", name, !windows && f->kind == COUNTER ? "counter" : "gauge");
	for (size_t i = 0; i < n; i++)
		for (int w = w0; w < w1; w++)
			for (size_t k = first; k < end; k++) {
				if (!sample_value(&mounts[i], k, w, &v))
					continue;
				fputs(name, out);
				put_labels(out, &mounts[i], catalogue[k].label, catalogue[k].value,
					   w >= 0 ? hy_metrics_window_names[w] : NULL);
				fprintf(out, " %llu\n", v);
			}
}

int hy_metrics_render(FILE *out, const struct hy_metrics_mount *mounts, size_t n)
{
	put_help(out, "hybridfs_up",
		 "1 while the mount's daemon answers; 0 when it did not, or has unmounted");
	fputs("# TYPE hybridfs_up gauge\n", out);
	for (size_t i = 0; i < n; i++) {
		fputs("hybridfs_up", out);
		put_labels(out, &mounts[i], NULL, NULL, NULL);
		fprintf(out, " %d\n", mounts[i].up && mounts[i].status ? 1 : 0);
	}
	{
		bool any = false;

		for (size_t i = 0; i < n && !any; i++)
			any = mounts[i].status != NULL;
		if (any) {
			put_help(out, "hybridfs_info",
				 "The mount's backing directory, identity and version (always 1)");
			fputs("# TYPE hybridfs_info gauge\n", out);
		}
		for (size_t i = 0; i < n; i++) {
			if (!mounts[i].status)
				continue;
			put_info(out, &mounts[i]);
		}
	}
	for (size_t first = 0; first < CATALOGUE;) {
		size_t end = first + 1;

		while (end < CATALOGUE && strcmp(catalogue[end].name, catalogue[first].name) == 0)
			end++;
		put_family(out, first, end, false, mounts, n);
		first = end;
	}
	{
		bool header = false;

		for (size_t i = 0; i < n; i++)
			for (int w = 0; w < HY_METRICS_WINDOWS; w++) {
				unsigned long long v;
				char path[64];

				snprintf(path, sizeof(path), "metrics.windows.%s.seconds",
					 hy_metrics_window_names[w]);
				if (!mounts[i].status ||
				    !hy_metrics_status_u64(mounts[i].status, path, &v))
					continue;
				if (!header) {
					put_help(
						out, "hybridfs_window_covered_seconds",
						"How much time each window of the hybridfs_window_ "
						"gauges spans: its length, or less while the "
						"history "
						"is younger");
					fputs("# TYPE hybridfs_window_covered_seconds gauge\n",
					      out);
					header = true;
				}
				fputs("hybridfs_window_covered_seconds", out);
				put_labels(out, &mounts[i], NULL, NULL, hy_metrics_window_names[w]);
				fprintf(out, " %llu\n", v);
			}
	}
	for (size_t first = 0; first < CATALOGUE;) {
		size_t end = first + 1;

		while (end < CATALOGUE && strcmp(catalogue[end].name, catalogue[first].name) == 0)
			end++;
		if (catalogue[first].kind == COUNTER)
			put_family(out, first, end, true, mounts, n);
		first = end;
	}
	return ferror(out) ? -EIO : 0;
}

int hy_metrics_write_file(const char *path, const struct hy_metrics_mount *mounts, size_t n,
			  char *why, size_t why_size)
{
	const char *slash = strrchr(path, '/');
	char tmp[PATH_MAX];
	FILE *f;
	int fd, rc;

	if (slash)
		rc = snprintf(tmp, sizeof(tmp), "%.*s/.%s.XXXXXX", (int)(slash - path), path,
			      slash + 1);
	else
		rc = snprintf(tmp, sizeof(tmp), ".%s.XXXXXX", path);
	if (rc < 0 || (size_t)rc >= sizeof(tmp))
		return hy_log_why(-ENAMETOOLONG, why, why_size,
				  "metrics file \"%s\": name too long", path);
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = -errno;
		return hy_log_why(rc, why, why_size, "metrics file \"%s\": cannot make \"%s\": %s",
				  path, tmp, strerror(-rc));
	}
	/* for node_exporter, which runs as its own user */
	if (fchmod(fd, 0644) < 0) {
		rc = -errno;
		close(fd);
		goto fail;
	}
	f = fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		close(fd);
		goto fail;
	}
	rc = hy_metrics_render(f, mounts, n);
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc == 0)
		return 0;
fail:
	unlink(tmp);
	return hy_log_why(rc, why, why_size, "metrics file \"%s\": cannot write it: %s", path,
			  strerror(-rc));
}
