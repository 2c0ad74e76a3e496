/*
 * log.h - the one logging module of hybridfs.
 *
 * Every module logs through hy_log() with a syslog level; the level is
 * tested before anything is formatted, so a debug message on the I/O path
 * costs one comparison when debugging is off. Messages are lowercase, with
 * no full stop, and quote their subject: `state: "/x" is not a directory`.
 *
 * Who calls it: everyone. The daemon calls hy_log_init() once at start-up
 * (to stderr while in the foreground, to syslog once daemonized); tests and
 * hybridctl keep the default (stderr, LOG_NOTICE).
 *
 * Locks: the sink writes each message with one write(2) or syslog(3) call,
 * so lines from different threads never interleave; no lock is taken.
 * Memory: nothing is allocated. The aliases (hy_log_set_alias,
 * hy_log_add_alias) are set before threads start and only read afterwards.
 */
#ifndef HYBRIDFS_LOG_H
#define HYBRIDFS_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <syslog.h>

enum hy_log_sink {
	HY_LOG_STDERR, /* "hybridfs: message" on standard error */
	HY_LOG_SYSLOG, /* syslog(3) with the daemon facility */
};

/* Sets the sink, the lowest level that is printed (LOG_DEBUG prints all),
 * and the program name that prefixes each line. @ident is not copied. */
void hy_log_init(enum hy_log_sink sink, int max_level, const char *ident);

/* The lowest level that is printed now. */
int hy_log_level(void);

/* A name to show for a path that means nothing to a person: the daemon
 * reaches its state folder through "/proc/self/fd/N" (fs/main.c), and
 * every message, log line and control error that names a file in it shows
 * @shown in its place instead. Set once, before any thread starts; both
 * strings are copied (NULL clears). */
void hy_log_set_alias(const char *path, const char *shown);
/* One more such name (at most four in all), for the other folders the
 * daemon reaches through a descriptor (the BOPT's hidden folder, the
 * backing directory mounted over in place); hy_log_set_alias clears them. */
void hy_log_add_alias(const char *path, const char *shown);

/* Rewrites @buf (a message, @size bytes with its terminator) in place with
 * the alias applied; cut to fit. Returns @buf. */
char *hy_log_unalias(char *buf, size_t size);

void hy_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hy_vlog(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Refusals that carry their reason to the caller instead of the log (a
 * parser's "why" buffer): formats @fmt into @why (nothing when @why is
 * NULL or @why_size 0; cut to fit, always terminated) and returns @err,
 * so that a refusal is one statement:
 *     return hy_log_why(-EINVAL, why, why_size, "bad size \"%s\"", s);
 * A %m in @fmt names @err (errno's own when @err is 0); errno is left as
 * it was. */
int hy_log_why(int err, char *why, size_t why_size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void hy_log_vwhy(int err, char *why, size_t why_size, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

#define hy_log_debug(...)                                                                          \
	do {                                                                                       \
		if (hy_log_level() >= LOG_DEBUG)                                                   \
			hy_log(LOG_DEBUG, __VA_ARGS__);                                            \
	} while (0)

#endif
