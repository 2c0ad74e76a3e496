/* log.c - see include/hybridfs/log.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/log.h"

static enum hy_log_sink log_sink = HY_LOG_STDERR;
static int log_max_level = LOG_NOTICE;
static const char *log_ident = "hybridfs";

void hy_log_init(enum hy_log_sink sink, int max_level, const char *ident)
{
	log_sink = sink;
	log_max_level = max_level;
	if (ident)
		log_ident = ident;
	if (sink == HY_LOG_SYSLOG)
		openlog(log_ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

int hy_log_level(void)
{
	return log_max_level;
}

#define ALIASES 4
static char alias_path[ALIASES][64];
static char alias_shown[ALIASES][4096];
static size_t naliases;

void hy_log_set_alias(const char *path, const char *shown)
{
	naliases = 0;
	hy_log_add_alias(path, shown);
}

void hy_log_add_alias(const char *path, const char *shown)
{
	if (!path || !shown || strlen(path) >= sizeof(alias_path[0]) || naliases >= ALIASES)
		return;
	snprintf(alias_path[naliases], sizeof(alias_path[0]), "%s", path);
	snprintf(alias_shown[naliases], sizeof(alias_shown[0]), "%s", shown);
	naliases++;
}

static void unalias_one(char *buf, size_t size, const char *path, const char *shown)
{
	size_t plen = strlen(path), slen = strlen(shown), n = 0;
	char out[4096];
	const char *p = buf;

	if (!plen || !size || !strstr(buf, path))
		return;
	if (size > sizeof(out))
		size = sizeof(out);
	while (*p && n + 1 < size) {
		/* "/proc/self/fd/4" names the folder, "/proc/self/fd/42" does not */
		if (strncmp(p, path, plen) == 0 && !(p[plen] >= '0' && p[plen] <= '9')) {
			size_t take = slen < size - 1 - n ? slen : size - 1 - n;

			memcpy(out + n, shown, take);
			n += take;
			p += plen;
			/* "/proc/self/fd/4//x" (a folder given with its slash) */
			if (p[0] == '/' && p[1] == '/')
				p++;
			continue;
		}
		out[n++] = *p++;
	}
	out[n] = '\0';
	memcpy(buf, out, n + 1);
}

char *hy_log_unalias(char *buf, size_t size)
{
	for (size_t i = 0; i < naliases; i++)
		unalias_one(buf, size, alias_path[i], alias_shown[i]);
	return buf;
}

void hy_vlog(int level, const char *fmt, va_list ap)
{
	char line[1024];
	int saved_errno = errno;
	int len;

	if (level > log_max_level)
		return;
	if (log_sink == HY_LOG_SYSLOG) {
		if (!naliases) {
			vsyslog(level, fmt, ap);
		} else {
			vsnprintf(line, sizeof(line), fmt, ap);
			syslog(level, "%s", hy_log_unalias(line, sizeof(line)));
		}
		errno = saved_errno;
		return;
	}
	len = snprintf(line, sizeof(line), "%s: ", log_ident);
	if (len < 0 || (size_t)len >= sizeof(line))
		len = 0;
	vsnprintf(line + len, sizeof(line) - (size_t)len, fmt, ap);
	hy_log_unalias(line, sizeof(line) - 1);
	len = (int)strlen(line);
	if ((size_t)len >= sizeof(line) - 1)
		len = (int)sizeof(line) - 2;
	line[len++] = '\n';
	/* One write per line keeps threads from interleaving; a log sink that
	 * fails has nowhere to report to, so the result is deliberately unused. */
	if (write(STDERR_FILENO, line, (size_t)len) < 0)
		errno = saved_errno;
	errno = saved_errno;
}

void hy_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hy_vlog(level, fmt, ap);
	va_end(ap);
}

void hy_log_vwhy(int err, char *why, size_t why_size, const char *fmt, va_list ap)
{
	int saved = errno;

	if (!why || !why_size)
		return;
	if (err)
		errno = err < 0 ? -err : err;
	vsnprintf(why, why_size, fmt, ap);
	errno = saved; /* callers may still look at theirs */
}

int hy_log_why(int err, char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hy_log_vwhy(err, why, why_size, fmt, ap);
	va_end(ap);
	return err;
}
