/*
 * top_cmd.c - `hybridctl top [MOUNTPOINT] [-d SECONDS] [-n ITERATIONS] [-b]`:
 * the busiest processes of a mount, refreshed, as top(1) and iotop(8) show
 * a machine's. Every SECONDS it asks the daemon for its "status" (control.h)
 * and shows the mount's rates over the last interval (operations, bytes,
 * cache hits) and its processes, busiest first by the bytes they moved in
 * it, with their category, dominant request class and the cache policy row
 * that applies to them.
 *
 * On a terminal it draws with ncurses, on the alternate screen (the shell's
 * screen comes back on quitting): the header, then as many rows as the
 * window has lines, in the columns that fit its width. The least important
 * go first, so that no row is cut in the middle of a cell: META, EVICT,
 * LINE, WRITE and CLASS MIX are dropped, CATEGORY and NAME narrowed, then
 * CATEGORY dropped (fit_columns). A resize (KEY_RESIZE, from ncurses'
 * SIGWINCH handler) and a new sort redraw the sample on screen at once.
 * Keys: r, w, t, p, c sort by reads, writes, total bytes (the default), pid,
 * command; space samples now; q quits. SIGINT and SIGTERM only set a flag
 * (their handlers are ours, set before ncurses starts, so it leaves them
 * alone): the main loop ends ncurses, which puts the terminal back, then
 * dies of the signal; an error (the daemon went away) is said after that,
 * on the shell's screen. In batch mode (-b, stdout not a terminal, or a
 * TERM that ncurses cannot drive) ncurses never starts: the samples follow
 * one another as plain lines, a blank line between, all columns and rows,
 * busiest first.
 *
 * Rates: the first sample has nothing to compare with, so its rates are
 * averages since the mount (totals over the daemon's uptime); later ones
 * are differences between two samples over the time between them. A
 * process is matched by pid and name against the last sample it was in
 * (the daemon reports only its busiest ten): one seen for the first time
 * counts its totals in the interval.
 *
 * Processes that exited: the daemon keeps one in its table (and in its
 * status) until its profiler has logged all of its records (two reaps ten
 * seconds apart with nothing queued: as long as the log stays busy), so top
 * decides itself. A process is listed while it runs, and while its counters
 * move (one that exited during the interval is listed once more, with what
 * it did in it); then it is dropped. "Runs": /proc/PID is there and not a
 * zombie, and it is the process top saw under that pid, by the start time
 * /proc/PID/stat gave when top first saw it (with the daemon's name for it
 * then). A pid that the kernel gave to another process after the exit does
 * not keep the dead one listed; a /proc that cannot be read (another pid
 * namespace, hidepid) leaves only the counters to go by.
 *
 * Exit status: 0 (quit, or ITERATIONS shown), 1 (no daemon, or it went
 * away), 2 (command line).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
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
#include <time.h>
#include <unistd.h>

#include <curses.h>
#include <json-c/json.h>

#include "ctl.h"
#include "hybridfs/cli.h"
#include "hybridfs/control.h"

#define STATUS_TIMEOUT_MS 5000
#define MAX_DELAY_S	  86400.0
#define HISTORY_MAX	  1024 /* processes remembered between samples */
#define N_CLASSES	  4
#define COMM_MAX	  15 /* a process name's bytes (TASK_COMM_LEN - 1) */
#define CELL_MAX	  48
#define LINE_MAX_BYTES	  1024

static const char *const class_names[N_CLASSES] = {"sequential", "strided", "overlapped", "random"};
static const char *const class_short[N_CLASSES] = {"seq", "strd", "ovl", "rand"};

/* The table's columns, most important first. */
enum column {
	COL_PID,
	COL_NAME,
	COL_READ,
	COL_WRITE,
	COL_CATEGORY,
	COL_MIX,
	COL_POLICY_WRITE,
	COL_LINE,
	COL_EVICT,
	COL_META,
	N_COLUMNS
};

static const struct {
	const char *title;
	int width; /* batch mode's (the screen's, but NAME's, when they fit) */
	bool left; /* aligned left */
} column_specs[N_COLUMNS] = {
	[COL_PID] = {"PID", 7, false},		 [COL_NAME] = {"NAME", 16, true},
	[COL_READ] = {"READ/s", 8, false},	 [COL_WRITE] = {"WRITE/s", 8, false},
	[COL_CATEGORY] = {"CATEGORY", 28, true}, [COL_MIX] = {"CLASS MIX", 9, true},
	[COL_POLICY_WRITE] = {"WRITE", 7, true}, [COL_LINE] = {"LINE", 5, false},
	[COL_EVICT] = {"EVICT", 6, true},	 [COL_META] = {"META", 4, false},
};

enum sort_by { SORT_TOTAL, SORT_READS, SORT_WRITES, SORT_PID, SORT_COMMAND, N_SORTS };

/* What a process had moved when last seen. */
struct seen {
	int64_t pid;
	char name[32];
	uint64_t bytes_read, bytes_written, reads, writes;
	uint64_t classes[N_CLASSES]; /* reads and writes together */
	double t;		     /* when (seconds, monotonic) */
	uint64_t sample;	     /* the sample it was last in */
	uint64_t start;		     /* its start time (/proc/PID/stat), when known */
	bool start_known;
};

/* One row of the table. */
struct row {
	struct json_object *proc; /* borrowed from the sample */
	const char *name;	  /* borrowed from proc */
	int64_t pid;
	double read_rate, write_rate; /* bytes per second */
	uint64_t classes[N_CLASSES];  /* in the interval (or totals) */
	bool runs;		      /* the process seen under pid still runs */
	bool moved;		      /* its counters moved in the interval */
	uint64_t start;		      /* its start time, when start_known */
	bool start_known;
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
	enum sort_by sort;

	/* the sample shown, kept for a redraw: its rows (borrowing from prev) */
	struct row *rows;
	size_t n_rows;
	char wall[16];
	char where[LINE_MAX_BYTES]; /* mountpoint, daemon pid, uptime */
	char rates[LINE_MAX_BYTES];
	char cache[LINE_MAX_BYTES];

	/* ncurses, when the screen is its (NULL in batch mode) */
	SCREEN *screen;
	int cursor; /* the cursor's visibility before, or ERR */
	struct sigaction old_int, old_term;
	char error[LINE_MAX_BYTES]; /* said once the terminal is back */
};

static const struct {
	int key;
	const char *name;
	int column; /* the header's highlight, -1 for none */
} sort_specs[N_SORTS] = {
	[SORT_TOTAL] = {'t', "total", -1},	     [SORT_READS] = {'r', "reads", COL_READ},
	[SORT_WRITES] = {'w', "writes", COL_WRITE},  [SORT_PID] = {'p', "pid", COL_PID},
	[SORT_COMMAND] = {'c', "command", COL_NAME},
};

#define KEYS_HINT "r reads  w writes  t total  p pid  c command  space now  q quit"

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

/* Remembers @r as of @now; when full, forgets the one seen longest ago. */
static void remember(struct top *t, const struct row *r, double now)
{
	struct seen *s = find_seen(t, r->pid, r->name);

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
		s->pid = r->pid;
		snprintf(s->name, sizeof(s->name), "%s", r->name);
	}
	s->bytes_read = ju64(r->proc, "bytes_read");
	s->bytes_written = ju64(r->proc, "bytes_written");
	s->reads = ju64(r->proc, "reads");
	s->writes = ju64(r->proc, "writes");
	process_classes(r->proc, s->classes);
	s->t = now;
	s->sample = t->sample;
	if (r->start_known) {
		s->start = r->start;
		s->start_known = true;
	}
}

/* What /proc says of @pid: its name (at most COMM_MAX bytes), whether it has
 * exited (a zombie), and its start time (clock ticks after boot, the same
 * for as long as the process lives). Returns 0, -ENOENT when no process has
 * the pid, or another negative errno when /proc cannot tell. */
static int proc_stat(int64_t pid, char comm[COMM_MAX + 1], bool *exited, uint64_t *start)
{
	char path[64], buf[1024], *open_paren, *close_paren, *tok, *save = NULL;
	int fd, err, field = 2;
	ssize_t got;

	if (pid <= 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%" PRId64 "/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	got = read(fd, buf, sizeof(buf) - 1);
	err = errno;
	close(fd);
	if (got < 0)
		return err == ESRCH ? -ENOENT : -err; /* it went between open and read */
	buf[got] = '\0';
	/* "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses */
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return -EINVAL;
	snprintf(comm, COMM_MAX + 1, "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
	for (tok = strtok_r(close_paren + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (++field == 3) {
			*exited = tok[0] == 'Z' || tok[0] == 'X';
		} else if (field == 22) {
			*start = strtoull(tok, NULL, 10);
			return 0;
		}
	}
	return -EINVAL;
}

/* Whether @r's process still runs (r->runs), and if so its start time. @s:
 * what was seen of it before, or NULL. */
static void check_runs(struct row *r, const struct seen *s)
{
	char comm[COMM_MAX + 1];
	bool exited = false, same_name;
	uint64_t start = 0;

	r->runs = false;
	if (proc_stat(r->pid, comm, &exited, &start) || exited)
		return; /* gone, or /proc cannot tell: its counters decide */
	same_name = strncmp(comm, r->name, COMM_MAX) == 0;
	if (s && s->start_known && start == s->start) {
		r->runs = true;
	} else if (same_name && (!s || !s->start_known || r->moved)) {
		/* seen for the first time; or the pid went to another process of
		 * the same program that the daemon counts in the same row, whose
		 * counters show it is this one now */
		r->runs = true;
	}
	if (r->runs) {
		r->start = start;
		r->start_known = true;
	}
}

/* The rows of @sample, rates computed against what was seen before
 * (@uptime: the first sample's divisor), each said to run and to have moved
 * or not. Returns how many, with the rows in @rows (malloc'd, the caller
 * frees), or -1 when out of memory. */
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
		uint64_t reads = ju64(p, "reads"), writes = ju64(p, "writes");
		double dt = t->prev ? now - t->prev_t : uptime;

		r[i].proc = p;
		r[i].name = name;
		r[i].pid = pid;
		process_classes(p, r[i].classes);
		if (s) {
			uint64_t c[N_CLASSES], total = 0;

			dt = now - s->t;
			rd = grown(rd, s->bytes_read);
			wr = grown(wr, s->bytes_written);
			reads = grown(reads, s->reads);
			writes = grown(writes, s->writes);
			for (int k = 0; k < N_CLASSES; k++)
				total += c[k] = grown(r[i].classes[k], s->classes[k]);
			/* a process idle in the interval keeps its overall mix */
			if (total)
				memcpy(r[i].classes, c, sizeof(c));
		}
		/* the first sample's totals are since the mount, not the
		 * interval: there, only running processes are listed */
		r[i].moved = t->prev && (rd || wr || reads || writes);
		check_runs(&r[i], s);
		if (dt < 1e-3)
			dt = 1e-3;
		r[i].read_rate = (double)rd / dt;
		r[i].write_rate = (double)wr / dt;
	}
	*rows = r;
	return (ssize_t)n;
}

/* Busiest first; pid order among equals. */
static int by_total(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double tx = x->read_rate + x->write_rate, ty = y->read_rate + y->write_rate;

	if (tx != ty)
		return tx > ty ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int by_reads(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->read_rate != y->read_rate)
		return x->read_rate > y->read_rate ? -1 : 1;
	return by_total(a, b);
}

static int by_writes(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->write_rate != y->write_rate)
		return x->write_rate > y->write_rate ? -1 : 1;
	return by_total(a, b);
}

static int by_pid(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int by_command(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : by_pid(a, b);
}

static int (*const sort_compare[N_SORTS])(const void *, const void *) = {
	[SORT_TOTAL] = by_total, [SORT_READS] = by_reads,     [SORT_WRITES] = by_writes,
	[SORT_PID] = by_pid,	 [SORT_COMMAND] = by_command,
};

static void sort_rows(struct top *t)
{
	if (t->n_rows > 1)
		qsort(t->rows, t->n_rows, sizeof(*t->rows), sort_compare[t->sort]);
}

/* Where lines go: stdout in batch mode, lines of any length; else
 * ncurses' stdscr, a line at a time, each cut at the window's width (never
 * wrapped onto the next) and none below its last line. */
struct out {
	bool screen;
	int y; /* screen: the next line */
};

/* Adds @text as one line. Control bytes become '?': a process name (its
 * comm, which any process sets) must not send escape sequences to the
 * terminal; on the screen, bytes past ASCII too, as ncurses would show them
 * wider than one column (hybridctl sets no locale) and push the line
 * past its cell. Drawing past the window's edge is clipped by ncurses (an
 * ERR that needs nothing done). */
static void put_line(struct out *o, attr_t attr, const char *text)
{
	char line[LINE_MAX_BYTES];
	size_t len = strnlen(text, sizeof(line) - 1);

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];

		line[i] = c < 0x20 || c == 0x7f || (o->screen && c > 0x7f) ? '?' : (char)c;
	}
	line[len] = '\0';
	if (!o->screen) {
		printf("%s\n", line);
		return;
	}
	if (o->y < LINES) {
		attrset(attr);
		mvaddnstr(o->y, 0, line, COLS);
		attrset(A_NORMAL);
	}
	o->y++;
}

static void emit(struct out *o, attr_t attr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void emit(struct out *o, attr_t attr, const char *fmt, ...)
{
	char line[LINE_MAX_BYTES];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	put_line(o, attr, line);
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
static void cache_text(struct json_object *cur, struct json_object *prev, char *buf, size_t size)
{
	struct json_object *c = jobj(cur, "cache"), *p = jobj(prev, "cache");
	uint64_t rd_dram, rd_ssd, rd, wr_hit, wr;
	char dirty[32];

	if (!c) {
		snprintf(buf, size, "cache: none");
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
		snprintf(buf, size,
			 "cache: reads %.1f%% hit (DRAM %.1f%%, SSD %.1f%%) of %" PRIu64
			 " blocks, writes %.1f%% hit of %" PRIu64 ", %s dirty",
			 100.0 * (double)(rd_dram + rd_ssd) / (double)rd,
			 100.0 * (double)rd_dram / (double)rd, 100.0 * (double)rd_ssd / (double)rd,
			 rd, wr ? 100.0 * (double)wr_hit / (double)wr : 0.0, wr, dirty);
	else
		snprintf(buf, size,
			 "cache: no reads, writes %.1f%% hit of %" PRIu64 " blocks, %s dirty",
			 wr ? 100.0 * (double)wr_hit / (double)wr : 0.0, wr, dirty);
}

/* The header of @cur into @t (shown until the next sample): the time, the
 * mount, its rates against t->prev over @dt, its cache. */
static void summarize(struct top *t, struct json_object *cur, double dt)
{
	struct json_object *ops = jobj(cur, "operations"), *pops = jobj(t->prev, "operations");
	struct json_object *bytes = jobj(cur, "bytes"), *pbytes = jobj(t->prev, "bytes");
	char up[32], rd[32], wr[32];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(t->wall, sizeof(t->wall), "%H:%M:%S", &tm);
	hy_ctl_human_duration((int64_t)ju64(cur, "uptime_seconds"), up, sizeof(up));
	snprintf(t->where, sizeof(t->where), "%s  daemon pid %" PRIu64 ", up %s",
		 jstr(cur, "mountpoint", "?"), ju64(cur, "pid"), up);
	hy_ctl_human_bytes(
		(uint64_t)((double)grown(ju64(bytes, "read"), ju64(pbytes, "read")) / dt), rd,
		sizeof(rd));
	hy_ctl_human_bytes(
		(uint64_t)((double)grown(ju64(bytes, "written"), ju64(pbytes, "written")) / dt), wr,
		sizeof(wr));
	snprintf(t->rates, sizeof(t->rates), "%.1f ops/s, %s/s read, %s/s written (%s)",
		 (double)grown(sum_members(ops), sum_members(pops)) / dt, rd, wr,
		 t->prev ? "last interval" : "averages since the mount");
	cache_text(cur, t->prev, t->cache, sizeof(t->cache));
}

/* The cells of one row of the table. */
static void row_cells(const struct row *r, char cells[N_COLUMNS][CELL_MAX])
{
	struct json_object *pol = jobj(r->proc, "policy"), *meta = NULL;
	bool meta_on = false;

	snprintf(cells[COL_PID], CELL_MAX, "%" PRId64, r->pid);
	snprintf(cells[COL_NAME], CELL_MAX, "%s", r->name);
	short_rate(r->read_rate, cells[COL_READ], CELL_MAX);
	short_rate(r->write_rate, cells[COL_WRITE], CELL_MAX);
	snprintf(cells[COL_CATEGORY], CELL_MAX, "%s", jstr(r->proc, "category", "-"));
	class_mix(r->classes, cells[COL_MIX], CELL_MAX);
	snprintf(cells[COL_POLICY_WRITE], CELL_MAX, "%s", jstr(pol, "write", "-"));
	line_size(pol, cells[COL_LINE], CELL_MAX);
	snprintf(cells[COL_EVICT], CELL_MAX, "%s", jstr(pol, "evict", "-"));
	if (pol && json_object_object_get_ex(pol, "metadata_priority", &meta))
		meta_on = json_object_get_boolean(meta);
	snprintf(cells[COL_META], CELL_MAX, "%s", !pol ? "-" : meta_on ? "yes" : "-");
}

static void header_cells(char cells[N_COLUMNS][CELL_MAX])
{
	for (int c = 0; c < N_COLUMNS; c++)
		snprintf(cells[c], CELL_MAX, "%s", column_specs[c].title);
}

/* The width of a line of the columns in @width (0: left out), a space
 * between two. */
static int table_width(const int width[N_COLUMNS])
{
	int total = 0, shown = 0;

	for (int c = 0; c < N_COLUMNS; c++)
		if (width[c]) {
			total += width[c];
			shown++;
		}
	return shown ? total + shown - 1 : 0;
}

/* The columns that fit @cols: each step drops a column (min 0) or narrows
 * it to what fits, not below min, the least important first, until the
 * table fits. Below the last step's width the lines are cut at the edge. */
static void fit_columns(int cols, int width[N_COLUMNS])
{
	static const struct {
		enum column column;
		int min;
	} steps[] = {
		{COL_META, 0}, {COL_EVICT, 0},	   {COL_LINE, 0}, {COL_POLICY_WRITE, 0},
		{COL_MIX, 0},  {COL_CATEGORY, 15}, {COL_NAME, 8}, {COL_CATEGORY, 0},
	};

	for (int c = 0; c < N_COLUMNS; c++)
		width[c] = column_specs[c].width;
	width[COL_NAME] = COMM_MAX; /* batch mode's 16 has a blank at the end */
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int excess = table_width(width) - cols, *w = &width[steps[i].column];

		if (excess <= 0)
			break;
		if (steps[i].min == 0)
			*w = 0;
		else if (*w - excess >= steps[i].min)
			*w -= excess;
		else if (*w > steps[i].min)
			*w = steps[i].min;
	}
}

/* One line of the table from @cells, in the columns of @width, each cell
 * padded to its width and, with @cut (or for NAME), cut at it; @x (may be
 * NULL) gets where each column starts. */
static void table_line(char cells[N_COLUMNS][CELL_MAX], const int width[N_COLUMNS], bool cut,
		       char *buf, size_t size, int x[N_COLUMNS])
{
	size_t n = 0;

	buf[0] = '\0';
	for (int c = 0; c < N_COLUMNS && n < size - 1; c++) {
		int w = width[c], len;

		if (!w)
			continue;
		if (n)
			buf[n++] = ' ';
		if (x)
			x[c] = (int)n;
		if (cut || c == COL_NAME)
			len = column_specs[c].left
				      ? snprintf(buf + n, size - n, "%-*.*s", w, w, cells[c])
				      : snprintf(buf + n, size - n, "%*.*s", w, w, cells[c]);
		else
			len = column_specs[c].left
				      ? snprintf(buf + n, size - n, "%-*s", w, cells[c])
				      : snprintf(buf + n, size - n, "%*s", w, cells[c]);
		if (len < 0)
			break;
		n += (size_t)len < size - n ? (size_t)len : size - n - 1;
	}
}

/* The sample on screen, at the window's size and in the sort of the day. */
static void draw_screen(struct top *t)
{
	struct out o = {.screen = true};
	char cells[N_COLUMNS][CELL_MAX], line[LINE_MAX_BYTES];
	int width[N_COLUMNS], x[N_COLUMNS] = {0}, sorted = sort_specs[t->sort].column;

	erase();
	emit(&o, A_BOLD, "hybridctl top - %s - sorted by %s - %s", t->wall,
	     sort_specs[t->sort].name, t->where);
	put_line(&o, A_NORMAL, t->rates);
	put_line(&o, A_NORMAL, t->cache);
	put_line(&o, A_DIM, KEYS_HINT);
	fit_columns(COLS, width);
	header_cells(cells);
	table_line(cells, width, true, line, sizeof(line), x);
	/* the header as a bar across the window, the sort's column bold */
	emit(&o, A_REVERSE, "%-*s", COLS < (int)sizeof(line) - 1 ? COLS : 0, line);
	if (sorted >= 0 && width[sorted] && o.y - 1 < LINES && x[sorted] < COLS) {
		attrset(A_REVERSE | A_BOLD);
		mvaddnstr(o.y - 1, x[sorted], line + x[sorted],
			  width[sorted] < COLS - x[sorted] ? width[sorted] : COLS - x[sorted]);
		attrset(A_NORMAL);
	}
	for (size_t i = 0; i < t->n_rows && o.y < LINES; i++) {
		row_cells(&t->rows[i], cells);
		table_line(cells, width, true, line, sizeof(line), NULL);
		put_line(&o, A_NORMAL, line);
	}
	refresh();
}

/* The sample as batch mode's lines: every column and row. */
static void print_sample(struct top *t)
{
	struct out o = {.screen = false};
	char cells[N_COLUMNS][CELL_MAX], line[LINE_MAX_BYTES];
	int width[N_COLUMNS];

	if (t->sample > 1)
		putchar('\n');
	for (int c = 0; c < N_COLUMNS; c++)
		width[c] = column_specs[c].width;
	emit(&o, A_NORMAL, "hybridctl top - %s  %s", t->wall, t->where);
	put_line(&o, A_NORMAL, t->rates);
	put_line(&o, A_NORMAL, t->cache);
	put_line(&o, A_NORMAL, "");
	header_cells(cells);
	table_line(cells, width, false, line, sizeof(line), NULL);
	put_line(&o, A_NORMAL, line);
	for (size_t i = 0; i < t->n_rows; i++) {
		row_cells(&t->rows[i], cells);
		table_line(cells, width, false, line, sizeof(line), NULL);
		put_line(&o, A_NORMAL, line);
	}
	fflush(stdout);
}

/* Takes and shows one sample. Returns 0, or 1 with the reason in t->error
 * (the daemon could not be asked, or out of memory). */
static int take_sample(struct top *t)
{
	struct json_object *cur = NULL;
	struct row *rows = NULL;
	double now, dt;
	ssize_t n;
	size_t kept = 0;

	if (hy_control_call(t->dir, HY_CONTROL_STATUS, STATUS_TIMEOUT_MS, &cur, t->error,
			    sizeof(t->error)))
		return 1;
	now = now_s();
	t->sample++;
	dt = t->prev ? now - t->prev_t : (double)ju64(cur, "uptime_seconds");
	if (dt < 1e-3)
		dt = 1e-3;
	n = make_rows(t, cur, now, dt, &rows);
	if (n < 0) {
		json_object_put(cur);
		snprintf(t->error, sizeof(t->error), "out of memory");
		return 1;
	}
	/* every row remembered, the ones not listed too: one dropped stays
	 * known, and is not taken for new (its totals as moved) next time */
	for (ssize_t i = 0; i < n; i++) {
		remember(t, &rows[i], now);
		if (rows[i].runs || rows[i].moved)
			rows[kept++] = rows[i];
	}
	summarize(t, cur, dt);
	free(t->rows);
	json_object_put(t->prev);
	t->rows = rows;
	t->n_rows = kept;
	t->prev = cur;
	t->prev_t = now;
	sort_rows(t);
	if (t->screen)
		draw_screen(t);
	else
		print_sample(t);
	return 0;
}

enum keys_said { KEYS_NONE, KEYS_NOW, KEYS_QUIT };

/* The keys typed since the last call, and resizes (ncurses gives them as
 * KEY_RESIZE): the screen is redrawn after a resize or a new sort. */
static enum keys_said take_keys(struct top *t)
{
	enum keys_said said = KEYS_NONE;
	bool redraw = false;
	int ch;

	while ((ch = getch()) != ERR) {
		if (ch == KEY_RESIZE) {
			redraw = true;
			continue;
		}
		if (!t->keys || ch < 0 || ch > UCHAR_MAX)
			continue; /* keys only from a terminal; no function keys */
		ch = tolower(ch);
		if (ch == 'q')
			return KEYS_QUIT;
		if (ch == ' ')
			said = KEYS_NOW;
		if (ch == '\f') { /* ^L: the whole screen again */
			clearok(curscr, TRUE);
			redraw = true;
		}
		for (int s = 0; s < N_SORTS; s++)
			if (ch == sort_specs[s].key && t->sort != (enum sort_by)s) {
				t->sort = (enum sort_by)s;
				sort_rows(t);
				redraw = true;
			}
	}
	if (redraw && said != KEYS_NOW)
		draw_screen(t);
	return said;
}

/* Waits until @deadline (monotonic seconds). Returns true to go on,
 * false when 'q' was typed, a signal came or the terminal went away. */
static bool wait_until(struct top *t, double deadline)
{
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};

	for (;;) {
		double left;
		int ms, rc;

		if (stop_signal)
			return false;
		if (t->screen) {
			enum keys_said said = take_keys(t);

			if (said == KEYS_QUIT)
				return false;
			if (said == KEYS_NOW)
				return true;
		}
		left = deadline - now_s();
		if (left <= 0)
			return true;
		ms = (int)(left * 1000.0) + 1; /* never early: a wait of 0 would spin */
		/* a signal (SIGWINCH: a resize; SIGINT, SIGTERM) ends the wait
		 * with EINTR: poll is never restarted */
		rc = poll(&pfd, t->keys ? 1 : 0, ms);
		if (rc < 0 && errno != EINTR)
			return true; /* cannot wait on stdin: sample now rather than spin */
		if (rc > 0 && (pfd.revents & (POLLHUP | POLLERR | POLLNVAL)))
			return false; /* the terminal went away */
	}
}

/* Starts ncurses on the terminal: the alternate screen, keys one at a
 * time without echo. Returns false (with the reason said) when the terminal
 * is not one it can drive: batch mode then. */
static bool start_screen(struct top *t)
{
	struct sigaction sa;
	const char *term = getenv("TERM");

	/* ours before ncurses': it installs its own (which exit without
	 * letting us say anything) only where a signal's action is the
	 * default */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &t->old_int);
	sigaction(SIGTERM, &sa, &t->old_term);
	t->keys = isatty(STDIN_FILENO);
	t->screen = newterm(NULL, stdout, stdin);
	if (!t->screen) {
		sigaction(SIGINT, &t->old_int, NULL);
		sigaction(SIGTERM, &t->old_term, NULL);
		fprintf(stderr,
			"hybridctl: top: the terminal (TERM=%s) is not one ncurses can drive; "
			"batch mode\n",
			term && *term ? term : "unset");
		return false;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE); /* waits are poll()'s: a signal ends them */
	set_escdelay(25);
	t->cursor = curs_set(0);
	return true;
}

/* Ends ncurses: the shell's screen and the terminal's modes back. */
static void stop_screen(struct top *t)
{
	if (!t->screen)
		return;
	if (t->cursor != ERR)
		curs_set(t->cursor);
	endwin();
	delscreen(t->screen);
	t->screen = NULL;
	sigaction(SIGINT, &t->old_int, NULL);
	sigaction(SIGTERM, &t->old_term, NULL);
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

/* The samples, until ITERATIONS, 'q', a signal or an error. Returns the
 * exit status. */
static int run(struct top *t)
{
	double next;
	int rc = 0;

	t->seen = calloc(HISTORY_MAX, sizeof(*t->seen));
	if (!t->seen) {
		fprintf(stderr, "hybridctl: top: out of memory\n");
		return 1;
	}
	if (!isatty(STDOUT_FILENO))
		t->batch = true;
	if (!t->batch && !start_screen(t))
		t->batch = true;

	next = now_s();
	for (long i = 0; !t->iterations || i < t->iterations; i++) {
		if (i > 0 && !wait_until(t, next))
			break;
		next = now_s() + t->delay;
		rc = take_sample(t);
		if (rc || stop_signal)
			break;
	}

	stop_screen(t);
	if (rc)
		fprintf(stderr, "hybridctl: top: %s\n", t->error);
	free(t->rows);
	json_object_put(t->prev);
	free(t->seen);
	if (stop_signal) {
		/* the terminal is back: die of the signal as the shell expects */
		fflush(stdout);
		raise(stop_signal);
	}
	return rc;
}

static const struct hy_cli_option top_options[] = {
	{"delay", 'd', true, OPT_DELAY, "SECONDS"},
	{"iterations", 'n', true, OPT_ITERATIONS, "ITERATIONS"},
	{"batch", 'b', false, OPT_BATCH, NULL},
	{0},
};

static int run_top(const struct hy_cli_command *command, int argc, char **argv)
{
	struct top t = {.delay = 2.0, .cursor = ERR};
	const char *mountpoint = NULL, *value;
	char dir[PATH_MAX];
	struct hy_cli cli;
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
	return run(&t);
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
