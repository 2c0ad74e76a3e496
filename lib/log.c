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

void hy_vlog(int level, const char *fmt, va_list ap)
{
	char line[1024];
	int saved_errno = errno;
	int len;

	if (level > log_max_level)
		return;
	if (log_sink == HY_LOG_SYSLOG) {
		vsyslog(level, fmt, ap);
		errno = saved_errno;
		return;
	}
	len = snprintf(line, sizeof(line), "%s: ", log_ident);
	if (len < 0 || (size_t)len >= sizeof(line))
		len = 0;
	len += vsnprintf(line + len, sizeof(line) - (size_t)len, fmt, ap);
	if (len < 0 || (size_t)len >= sizeof(line) - 1)
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
