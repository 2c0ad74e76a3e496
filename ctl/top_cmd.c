/*
 * top_cmd.c - `hybridctl top [MOUNTPOINT] [-d SECONDS] [-n ITERATIONS] [-b]`:
 * the busiest processes of a mount, refreshed, as top(1) and iotop(8) show
 * a machine's. Every SECONDS it asks the daemon for its "status" (control.h)
 * and shows the mount's rates over the last interval (operations, bytes,
 * cache hits) and its processes sorted by the bytes they moved in it, with
 * their category, dominant request class and the cache policy row that
 * applies to them.
 *
 * On a terminal it redraws the screen each time, fits the table to the
 * window and quits on 'q' (the terminal is put in non-canonical, no-echo
 * mode and restored on every way out, SIGINT and SIGTERM included: the
 * handlers only set a flag, the main loop restores). In batch mode (-b, or
 * stdout not a terminal) the samples follow one another, a blank line
 * between, and the terminal is left alone.
 *
 * Rates: the first sample has nothing to compare with, so its rates are
 * averages since the mount (totals over the daemon's uptime); later ones
 * are differences between two samples over the time between them. A
 * process is matched by pid and name against the last sample it was in
 * (the daemon reports only its busiest ten): one seen for the first time
 * counts its totals in the interval.
 *
 * Exit status: 0 (quit, or ITERATIONS shown), 1 (no daemon, or it went
 * away), 2 (command line).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl.h"
#include "hybridfs/cli.h"
#include "hybridfs/control.h"

#define STATUS_TIMEOUT_MS 5000
#define MAX_DELAY_S	  86400.0
#define HEADER_LINES	  4    /* title, rates, cache, blank: the table starts below */
#define HISTORY_MAX	  1024 /* processes remembered between samples */
#define N_CLASSES	  4

static const char *const class_names[N_CLASSES] = {"sequential", "strided", "overlapped", "random"};
static const char *const class_short[N_CLASSES] = {"seq", "strd", "ovl", "rand"};

/* What a process had moved when last seen. */
struct seen {
	int64_t pid;
	char name[32];
	uint64_t bytes_read, bytes_written;
	uint64_t classes[N_CLASSES]; /* reads and writes together */
	double t;		     /* when (seconds, monotonic) */
	uint64_t sample;	     /* the sample it was last in */
};

/* One row of the table. */
struct row {
	struct json_object *proc; /* borrowed from the sample */
	int64_t pid;
	double read_rate, write_rate; /* bytes per second */
	uint64_t classes[N_CLASSES];  /* in the interval (or totals) */
};

struct top {
	const char *dir;
	double delay;
	long iterations; /* 0: forever */
	bool batch, keys;
	struct json_object *prev; /* the last sample, or NULL */
	double prev_t;
	struct seen *seen;
	size_t n_seen;
	uint64_t sample;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t ju64(struct json_object *obj, const char *key)
{
	struct json_object *v = NULL;

	if (!obj || !json_object_object_get_ex(obj, key, &v))
		return 0;
	return json_object_get_uint64(v);
}

static const char *jstr(struct json_object *obj, const char *key, const char *none)
{
	struct json_object *v = NULL;

	if (!obj || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return none;
	return json_object_get_string(v);
}

static struct json_object *jobj(struct json_object *obj, const char *key)
{
	struct json_object *v = NULL;

	if (!obj || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

/* A counter's growth; a counter that went down (a daemon restarted, a pid
 * reused) counts from zero. */
static uint64_t grown(uint64_t now, uint64_t before)
{
	return now >= before ? now - before : now;
}

/* The requests of each class a process sent, reads and writes together. */
static void process_classes(struct json_object *proc, uint64_t out[N_CLASSES])
{
	struct json_object *classes = jobj(proc, "classes");

	for (int i = 0; i < N_CLASSES; i++)
		out[i] = ju64(jobj(classes, "read"), class_names[i]) +
			 ju64(jobj(classes, "write"), class_names[i]);
}

/* The dominant class and its share: "rand 87%", or "-" with none. */
static void class_mix(const uint64_t c[N_CLASSES], char *buf, size_t size)
{
	uint64_t total = 0;
	int best = 0;

	for (int i = 0; i < N_CLASSES; i++) {
		total += c[i];
		if (c[i] > c[best])
			best = i;
	}
	if (!total)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%s %.0f%%", class_short[best],
			 100.0 * (double)c[best] / (double)total);
}

/* A rate for a narrow column: "0", "512", "12.3K", "4.0M". */
static void short_rate(double bps, char *buf, size_t size)
{
	static const char units[] = "KMGT";
	int u = -1;

	if (bps < 0.5) {
		snprintf(buf, size, "0");
		return;
	}
	while (bps >= 1000.0 && u < 3) {
		bps /= 1024.0;
		u++;
	}
	if (u < 0)
		snprintf(buf, size, "%.0f", bps);
	else
		snprintf(buf, size, "%.1f%c", bps, units[u]);
}

/* A line size: "8K", or bytes when not a whole number of KiB. */
static void line_size(struct json_object *policy, char *buf, size_t size)
{
	struct json_object *v = NULL;
	uint64_t b;

	if (!policy || !json_object_object_get_ex(policy, "line_size", &v)) {
		snprintf(buf, size, "-");
		return;
	}
	b = json_object_get_uint64(v);
	if (b && b % 1024 == 0)
		snprintf(buf, size, "%" PRIu64 "K", b / 1024);
	else
		snprintf(buf, size, "%" PRIu64, b);
}

void hy_ctl_class_mix(struct json_object *proc, char *buf, size_t size)
{
	uint64_t c[N_CLASSES];

	process_classes(proc, c);
	class_mix(c, buf, size);
}

void hy_ctl_policy_brief(struct json_object *policy, char *buf, size_t size)
{
	char line[32];

	if (!policy) {
		snprintf(buf, size, "-");
		return;
	}
	line_size(policy, line, sizeof(line));
	snprintf(buf, size, "%s %s %s%s", jstr(policy, "write", "-"), line,
		 jstr(policy, "evict", "-"),
		 json_object_get_boolean(jobj(policy, "metadata_priority")) ? " meta" : "");
}

static struct seen *find_seen(struct top *t, int64_t pid, const char *name)
{
	for (size_t i = 0; i < t->n_seen; i++)
		if (t->seen[i].pid == pid && strcmp(t->seen[i].name, name) == 0)
			return &t->seen[i];
	return NULL;
}

/* Remembers @proc as of @now; when full, forgets the one seen longest
 * ago. */
static void remember(struct top *t, struct json_object *proc, int64_t pid, const char *name,
		     double now)
{
	struct seen *s = find_seen(t, pid, name);

	if (!s) {
		if (t->n_seen < HISTORY_MAX) {
			s = &t->seen[t->n_seen++];
		} else {
			s = &t->seen[0];
			for (size_t i = 1; i < t->n_seen; i++)
				if (t->seen[i].sample < s->sample)
					s = &t->seen[i];
		}
		memset(s, 0, sizeof(*s));
		s->pid = pid;
		snprintf(s->name, sizeof(s->name), "%s", name);
	}
	s->bytes_read = ju64(proc, "bytes_read");
	s->bytes_written = ju64(proc, "bytes_written");
	process_classes(proc, s->classes);
	s->t = now;
	s->sample = t->sample;
}

/* The rows of @sample, rates computed against what was seen before
 * (@uptime: the first sample's divisor). Returns how many, with the rows
 * in @rows (malloc'd, the caller frees), or -1 when out of memory. */
static ssize_t make_rows(struct top *t, struct json_object *sample, double now, double uptime,
			 struct row **rows)
{
	struct json_object *procs = NULL;
	size_t n;
	struct row *r;

	*rows = NULL;
	if (!json_object_object_get_ex(sample, "processes", &procs) ||
	    !json_object_is_type(procs, json_type_array))
		return 0;
	n = json_object_array_length(procs);
	r = calloc(n ? n : 1, sizeof(*r));
	if (!r)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(procs, i);
		const char *name = jstr(p, "name", "?");
		int64_t pid = (int64_t)ju64(p, "pid");
		const struct seen *s = t->prev ? find_seen(t, pid, name) : NULL;
		uint64_t rd = ju64(p, "bytes_read"), wr = ju64(p, "bytes_written");
		double dt = t->prev ? now - t->prev_t : uptime;

		r[i].proc = p;
		r[i].pid = pid;
		process_classes(p, r[i].classes);
		if (s) {
			uint64_t c[N_CLASSES], total = 0;

			dt = now - s->t;
			rd = grown(rd, s->bytes_read);
			wr = grown(wr, s->bytes_written);
			for (int k = 0; k < N_CLASSES; k++)
				total += c[k] = grown(r[i].classes[k], s->classes[k]);
			/* a process idle in the interval keeps its overall mix */
			if (total)
				memcpy(r[i].classes, c, sizeof(c));
		}
		if (dt < 1e-3)
			dt = 1e-3;
		r[i].read_rate = (double)rd / dt;
		r[i].write_rate = (double)wr / dt;
	}
	*rows = r;
	return (ssize_t)n;
}

/* Busiest first; pid order among equals. */
static int by_throughput(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double tx = x->read_rate + x->write_rate, ty = y->read_rate + y->write_rate;

	if (tx != ty)
		return tx > ty ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Adds one line to the screen, cut at @cols bytes when @cols > 0. Control
 * bytes become '?': a process name (its comm, which any process sets) must
 * not send escape sequences to the terminal. */
static void emit(FILE *out, int cols, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void emit(FILE *out, int cols, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (len = 0; line[len]; len++)
		if ((unsigned char)line[len] < 0x20 || line[len] == 0x7f)
			line[len] = '?';
	if (cols > 0 && len > (size_t)cols)
		len = (size_t)cols;
	fprintf(out, "%.*s\n", (int)len, line);
}

static uint64_t sum_members(struct json_object *obj)
{
	uint64_t sum = 0;

	if (!obj || !json_object_is_type(obj, json_type_object))
		return 0;
	json_object_object_foreach(obj, key, value)
	{
		(void)key;
		sum += json_object_get_uint64(value);
	}
	return sum;
}

/* The cache line of the header: hit ratios in the interval. */
static void cache_line(FILE *out, int cols, struct json_object *cur, struct json_object *prev)
{
	struct json_object *c = jobj(cur, "cache"), *p = jobj(prev, "cache");
	uint64_t rd_dram, rd_ssd, rd, wr_hit, wr;
	char dirty[32];

	if (!c) {
		emit(out, cols, "cache: none");
		return;
	}
	/* p is NULL on the first sample: grown() then gives the totals */
	rd_dram = grown(ju64(c, "read_hits_dram"), ju64(p, "read_hits_dram"));
	rd_ssd = grown(ju64(c, "read_hits_ssd"), ju64(p, "read_hits_ssd"));
	rd = rd_dram + rd_ssd + grown(ju64(c, "read_misses"), ju64(p, "read_misses"));
	wr_hit = grown(ju64(c, "write_hits_dram"), ju64(p, "write_hits_dram")) +
		 grown(ju64(c, "write_hits_ssd"), ju64(p, "write_hits_ssd"));
	wr = wr_hit + grown(ju64(c, "write_misses"), ju64(p, "write_misses"));
	hy_ctl_human_bytes(ju64(c, "dirty_bytes"), dirty, sizeof(dirty));
	if (rd)
		emit(out, cols,
		     "cache: reads %.1f%% hit (DRAM %.1f%%, SSD %.1f%%) of %" PRIu64
		     " blocks, writes %.1f%% hit of %" PRIu64 ", %s dirty",
		     100.0 * (double)(rd_dram + rd_ssd) / (double)rd,
		     100.0 * (double)rd_dram / (double)rd, 100.0 * (double)rd_ssd / (double)rd, rd,
		     wr ? 100.0 * (double)wr_hit / (double)wr : 0.0, wr, dirty);
	else
		emit(out, cols,
		     "cache: no reads, writes %.1f%% hit of %" PRIu64 " blocks, %s dirty",
		     wr ? 100.0 * (double)wr_hit / (double)wr : 0.0, wr, dirty);
}

/* Draws one sample: the header, then as many rows as @max_rows allows
 * (negative: all). */
static void draw(FILE *out, struct top *t, struct json_object *cur, struct row *rows, size_t n,
		 double dt, bool first, int cols, int max_rows)
{
	struct json_object *ops = jobj(cur, "operations"), *pops = jobj(t->prev, "operations");
	struct json_object *bytes = jobj(cur, "bytes"), *pbytes = jobj(t->prev, "bytes");
	char wall[16], up[32], rd[32], wr[32], mix[32], line[24];
	time_t now = time(NULL);
	struct tm tm;
	size_t shown;

	localtime_r(&now, &tm);
	strftime(wall, sizeof(wall), "%H:%M:%S", &tm);
	hy_ctl_human_duration((int64_t)ju64(cur, "uptime_seconds"), up, sizeof(up));
	emit(out, cols, "hybridctl top - %s  %s  daemon pid %" PRIu64 ", up %s", wall,
	     jstr(cur, "mountpoint", "?"), ju64(cur, "pid"), up);
	hy_ctl_human_bytes(
		(uint64_t)((double)grown(ju64(bytes, "read"), ju64(pbytes, "read")) / dt), rd,
		sizeof(rd));
	hy_ctl_human_bytes(
		(uint64_t)((double)grown(ju64(bytes, "written"), ju64(pbytes, "written")) / dt), wr,
		sizeof(wr));
	emit(out, cols, "%.1f ops/s, %s/s read, %s/s written (%s)",
	     (double)grown(sum_members(ops), sum_members(pops)) / dt, rd, wr,
	     first ? "averages since the mount" : "last interval");
	cache_line(out, cols, cur, t->prev);
	emit(out, cols, "%s", "");
	emit(out, cols, "%7s %-16s %8s %8s %-28s %-9s %-7s %5s %-6s %4s", "PID", "NAME", "READ/s",
	     "WRITE/s", "CATEGORY", "CLASS MIX", "WRITE", "LINE", "EVICT", "META");
	shown = max_rows < 0 ? n : ((size_t)max_rows < n ? (size_t)max_rows : n);
	for (size_t i = 0; i < shown; i++) {
		struct json_object *p = rows[i].proc, *pol = jobj(p, "policy"), *meta = NULL;
		bool meta_on = false;

		short_rate(rows[i].read_rate, rd, sizeof(rd));
		short_rate(rows[i].write_rate, wr, sizeof(wr));
		class_mix(rows[i].classes, mix, sizeof(mix));
		line_size(pol, line, sizeof(line));
		if (pol && json_object_object_get_ex(pol, "metadata_priority", &meta))
			meta_on = json_object_get_boolean(meta);
		emit(out, cols, "%7" PRId64 " %-16.16s %8s %8s %-28s %-9s %-7s %5s %-6s %4s",
		     rows[i].pid, jstr(p, "name", "?"), rd, wr, jstr(p, "category", "-"), mix,
		     jstr(pol, "write", "-"), line, jstr(pol, "evict", "-"),
		     !pol      ? "-"
		     : meta_on ? "yes"
			       : "-");
	}
}

/* The terminal's size; 0 when unknown. */
static void window(int *rows, int *cols)
{
	struct winsize ws;

	*rows = *cols = 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* Takes and shows one sample. Returns 0, or 1 after saying why the
 * daemon could not be asked. */
static int refresh(struct top *t)
{
	struct json_object *cur = NULL;
	struct row *rows = NULL;
	char why[1024];
	double now, dt;
	ssize_t n;
	int trows = 0, cols = 0, max_rows = -1;

	if (hy_control_call(t->dir, HY_CONTROL_STATUS, STATUS_TIMEOUT_MS, &cur, why, sizeof(why))) {
		fprintf(stderr, "hybridctl: top: %s\n", why);
		return 1;
	}
	now = now_s();
	t->sample++;
	dt = t->prev ? now - t->prev_t : (double)ju64(cur, "uptime_seconds");
	if (dt < 1e-3)
		dt = 1e-3;
	n = make_rows(t, cur, now, dt, &rows);
	if (n < 0) {
		json_object_put(cur);
		fprintf(stderr, "hybridctl: top: out of memory\n");
		return 1;
	}
	if (n > 0)
		qsort(rows, (size_t)n, sizeof(*rows), by_throughput);
	if (!t->batch) {
		window(&trows, &cols);
		if (trows > 0)
			max_rows = trows > HEADER_LINES + 2 ? trows - HEADER_LINES - 2 : 0;
		fputs("\033[H\033[2J", stdout);
	} else if (t->sample > 1) {
		putchar('\n');
	}
	draw(stdout, t, cur, rows, (size_t)n, dt, t->prev == NULL, cols, max_rows);
	fflush(stdout);
	for (ssize_t i = 0; i < n; i++)
		remember(t, rows[i].proc, rows[i].pid, jstr(rows[i].proc, "name", "?"), now);
	free(rows);
	json_object_put(t->prev);
	t->prev = cur;
	t->prev_t = now;
	return 0;
}

/* Waits until @deadline (monotonic seconds). Returns true to go on,
 * false when 'q' was typed or a signal came. */
static bool wait_until(const struct top *t, double deadline)
{
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
	char keys[64];

	for (;;) {
		double left = deadline - now_s();
		int ms, rc;
		ssize_t got;

		if (stop_signal)
			return false;
		if (left <= 0)
			return true;
		ms = (int)(left * 1000.0) + 1; /* never early: a wait of 0 would spin */
		rc = poll(&pfd, t->keys ? 1 : 0, ms);
		if (rc < 0 && errno != EINTR)
			return true; /* cannot wait on stdin: refresh now rather than spin */
		if (rc <= 0)
			continue;
		got = read(STDIN_FILENO, keys, sizeof(keys));
		if (got <= 0)
			return false; /* the terminal went away */
		for (ssize_t i = 0; i < got; i++) {
			if (keys[i] == 'q' || keys[i] == 'Q')
				return false;
			if (keys[i] == ' ')
				return true; /* refresh now */
		}
	}
}

static int parse_delay(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > MAX_DELAY_S) {
		fprintf(stderr,
			"hybridctl: top: -d \"%s\": not a number of seconds above 0 and at most "
			"%.0f\n",
			s, MAX_DELAY_S);
		return 2;
	}
	*out = v;
	return 0;
}

static int parse_iterations(const char *s, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || s[0] == '+' || s[0] == ' ') {
		fprintf(stderr, "hybridctl: top: -n \"%s\": not a whole number of at least 1\n", s);
		return 2;
	}
	*out = v;
	return 0;
}

enum { OPT_DELAY = 1, OPT_ITERATIONS, OPT_BATCH };

static const struct hy_cli_option top_options[] = {
	{"delay", 'd', true, OPT_DELAY, "SECONDS"},
	{"iterations", 'n', true, OPT_ITERATIONS, "ITERATIONS"},
	{"batch", 'b', false, OPT_BATCH, NULL},
	{0},
};

static int run_top(const struct hy_cli_command *command, int argc, char **argv)
{
	struct top t = {.delay = 2.0};
	struct termios saved, raw;
	struct sigaction sa, old_int, old_term;
	const char *mountpoint = NULL, *value;
	char dir[PATH_MAX];
	struct hy_cli cli;
	bool term_set = false;
	double next;
	int rc, id;

	if (hy_cli_begin(&cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(&cli, &id, &value)) > 0) {
		if (id == OPT_BATCH)
			t.batch = true;
		else if ((id == OPT_DELAY ? parse_delay(value, &t.delay)
					  : parse_iterations(value, &t.iterations)) != 0)
			return 2;
	}
	if (rc < 0)
		return hy_cli_exit_status(rc);
	if (cli.nargs > 1)
		return hy_cli_usage_error(&cli, "one MOUNTPOINT only (\"%s\")", cli.args[1]);
	mountpoint = cli.nargs ? cli.args[0] : NULL;
	rc = hy_ctl_find_state_dir("top", mountpoint, NULL, dir, sizeof(dir));
	if (rc)
		return rc;
	t.dir = dir;
	t.seen = calloc(HISTORY_MAX, sizeof(*t.seen));
	if (!t.seen) {
		fprintf(stderr, "hybridctl: top: out of memory\n");
		return 1;
	}
	if (!isatty(STDOUT_FILENO))
		t.batch = true;
	/* keys only from a terminal, on a screen that is redrawn */
	t.keys = !t.batch && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
	if (t.keys) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns EINTR */
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		term_set = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}

	rc = 0;
	next = now_s();
	for (long i = 0; !t.iterations || i < t.iterations; i++) {
		if (i > 0 && !wait_until(&t, next))
			break;
		next = now_s() + t.delay;
		rc = refresh(&t);
		if (rc || stop_signal)
			break;
	}

	if (term_set)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	if (t.keys) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
	}
	json_object_put(t.prev);
	free(t.seen);
	if (stop_signal) {
		/* the terminal is back: die of the signal as the shell expects */
		fflush(stdout);
		raise(stop_signal);
	}
	return rc;
}

const struct hy_cli_command hy_ctl_top_command = {
	.name = "top",
	.run = run_top,
	.summary = "the busiest processes, refreshed: rates, category, class mix, policy",
	.usage = "usage: hybridctl top [MOUNTPOINT] [-d SECONDS] [-n ITERATIONS] [-b]\n"
		 "\n"
		 "  -d, --delay SECONDS        between refreshes (2)\n"
		 "  -n, --iterations N         quit after N refreshes (default: on q)\n"
		 "  -b, --batch                samples one after the other, for a file or a pipe\n"
		 "                             (also when standard output is not a terminal)\n",
	.options = top_options,
};
