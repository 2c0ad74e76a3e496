/*
 * progress.c - hybridctl's progress line on a terminal. See
 * include/hybridfs/progress.h.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/progress.h"

#define REDRAW_S       0.2 /* at most five lines a second */
#define FIRST_S	       0.5 /* a step quicker than this draws nothing */
#define RATE_MIN_S     0.5 /* a rate over less time says little */
#define BAR_MAX	       30
#define BAR_MIN	       8
#define LINE_MAX       512
#define WIDTH_FALLBACK 80

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void hy_progress_init(struct hy_progress *p, FILE *out, bool quiet, enum hy_progress_unit unit,
		      const char *noun, const char *step_word)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->on = !quiet && out && isatty(fileno(out));
	p->unit = unit;
	p->noun = noun ? noun : "";
	p->step_word = step_word ? step_word : "step";
}

void hy_progress_begin(struct hy_progress *p, const char *label, unsigned step, unsigned steps,
		       uint64_t total)
{
	snprintf(p->label, sizeof(p->label), "%s", label ? label : "");
	p->step = step;
	p->steps = steps;
	p->total = total;
	p->done = 0;
	p->start = now_s();
	p->last = 0;
}

/* @v, and @of when not negative, in the line's unit, one unit for both:
 * "104.0/200.0 MiB", "512 B", "0.85/1.50M requests", "1200". */
static void amount(const struct hy_progress *p, double v, double of, char *buf, size_t size)
{
	static const char *const bytes[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	static const char *const counts[] = {"", "k", "M", "G", "T"};
	bool items = p->unit == HY_PROGRESS_ITEMS;
	double scale = of >= 0 ? of : v, step = items ? 1000 : 1024;
	/* counts below ten thousand are short enough whole */
	double whole = items ? 10000 : step;
	const char *unit;
	int u = 0, dv, dof;

	if (scale >= whole)
		while (scale >= step && u < 4)
			scale /= step, v /= step, of /= step, u++;
	unit = items ? counts[u] : bytes[u];
	/* three figures for a count: 1.50M, 852.0k */
	dv = u == 0 ? 0 : items && v < 10 ? 2 : 1;
	dof = u == 0 ? 0 : items && of < 10 ? 2 : 1;
	if (of < 0)
		snprintf(buf, size, "%.*f%s%s", dv, v, items ? "" : " ", unit);
	else if (items)
		snprintf(buf, size, "%.*f/%.*f%s", dv, v, dof, of, unit);
	else
		snprintf(buf, size, "%.*f/%.*f %s", dv, v, dof, of, unit);
}

/* "0:08", "12:34", "1:02:03" */
static void clock_text(double s, char *buf, size_t size)
{
	uint64_t t = s > 0 && s < 1e9 ? (uint64_t)(s + 0.5) : 0;

	if (t >= 3600)
		snprintf(buf, size, "%" PRIu64 ":%02u:%02u", t / 3600, (unsigned)(t % 3600 / 60),
			 (unsigned)(t % 60));
	else
		snprintf(buf, size, "%u:%02u", (unsigned)(t / 60), (unsigned)(t % 60));
}

/* Appends to @buf (of @size, @len used so far); the new length, never
 * past the end. */
static size_t add(char *buf, size_t size, size_t len, const char *format, ...)
	__attribute__((format(printf, 4, 5)));
static size_t add(char *buf, size_t size, size_t len, const char *format, ...)
{
	va_list ap;
	int n;

	if (len + 1 >= size)
		return len;
	va_start(ap, format);
	n = vsnprintf(buf + len, size - len, format, ap);
	va_end(ap);
	if (n < 0)
		return len;
	return len + (size_t)n < size ? len + (size_t)n : size - 1;
}

size_t hy_progress_format(const struct hy_progress *p, double now, int width, char *buf,
			  size_t size)
{
	char head[96], tail[LINE_MAX], a[64], t[32];
	double elapsed = now - p->start, rate;
	size_t tl = 0, hl = 0, len = 0;
	bool items = p->unit == HY_PROGRESS_ITEMS;
	int bar = 0;

	if (size == 0)
		return 0;
	buf[0] = '\0';
	if (elapsed < 0)
		elapsed = 0;
	rate = elapsed >= RATE_MIN_S ? (double)p->done / elapsed : 0;
	/* first what a narrow terminal must not lose: which step, of what */
	head[0] = '\0';
	if (p->steps)
		hl = add(head, sizeof(head), hl, "%s %u of %u  ", p->step_word, p->step, p->steps);
	hl = add(head, sizeof(head), hl, "%s", p->label);
	/* then what follows the bar, so that the bar takes the room left */
	if (p->total) {
		double share = (double)p->done / (double)p->total;

		amount(p, (double)p->done, (double)p->total, a, sizeof(a));
		tl = add(tail, sizeof(tail), tl, "%3.0f%%  %s", (share > 1 ? 1 : share) * 100, a);
	} else {
		amount(p, (double)p->done, -1, a, sizeof(a));
		tl = add(tail, sizeof(tail), tl, "%s", a);
	}
	if (items && *p->noun)
		tl = add(tail, sizeof(tail), tl, " %s", p->noun);
	if (rate > 0) {
		amount(p, rate, -1, a, sizeof(a));
		tl = add(tail, sizeof(tail), tl, "  %s/s", a);
	}
	if (p->total && rate > 0 && p->done < p->total) {
		clock_text((double)(p->total - p->done) / rate, t, sizeof(t));
		tl = add(tail, sizeof(tail), tl, "  ETA %s", t);
	} else if (!p->total) {
		clock_text(elapsed, t, sizeof(t));
		tl = add(tail, sizeof(tail), tl, "  %s", t);
	}
	if (p->total) {
		/* head, two spaces, [bar], two spaces, the tail */
		int room = width - 1 - (int)hl - 2 - 2 - 2 - (int)tl;

		bar = room > BAR_MAX ? BAR_MAX : room;
	}
	len = add(buf, size, len, "%s  ", head);
	if (bar >= BAR_MIN) {
		double share = (double)p->done / (double)p->total;
		int fill = (int)((share > 1 ? 1 : share) * bar);

		len = add(buf, size, len, "[");
		for (int i = 0; i < bar; i++)
			len = add(buf, size, len, "%c", i < fill ? '#' : '.');
		len = add(buf, size, len, "]  ");
	}
	len = add(buf, size, len, "%s", tail);
	/* a narrow terminal: cut, rather than wrap onto a new line each time */
	if (width > 1 && len > (size_t)width - 1) {
		len = (size_t)width - 1;
		buf[len] = '\0';
	}
	return len;
}

static int terminal_width(FILE *out)
{
	struct winsize ws;

	if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return WIDTH_FALLBACK;
}

void hy_progress_update(struct hy_progress *p, uint64_t done, uint64_t total)
{
	char line[LINE_MAX];
	double now;

	p->done = done;
	if (total)
		p->total = total;
	if (!p->on)
		return;
	now = now_s();
	if (now - p->start < FIRST_S || now - p->last < REDRAW_S)
		return;
	p->last = now;
	hy_progress_format(p, now, terminal_width(p->out), line, sizeof(line));
	/* \033[K: the rest of the old line goes */
	fprintf(p->out, "\r%s\033[K", line);
	fflush(p->out);
	p->drawn = true;
}

void hy_progress_end(struct hy_progress *p)
{
	if (p->drawn) {
		fputs("\r\033[K", p->out);
		fflush(p->out);
	}
	p->drawn = false;
}
