/*
 * log.h - the one logging module of hybridfs.
 *
 * Every module logs through hy_log() with a syslog level; the level is
 * tested before anything is formatted, so a debug message on the I/O path
 * costs one comparison when debugging is off. Messages are lowercase, with
 * no full stop, and quote their subject: `state: "/x" is not a directory`.
 *
 * Who calls it: everyone. The daemon calls hy_log_init() at start-up (to
 * stderr while in the foreground) and again once it is ready (to syslog
 * or to the file of log=FILE once daemonized); tests and hybridctl keep
 * the default (stderr, LOG_NOTICE).
 *
 * The sinks, any of them at once:
 *   stderr  "ident: message", one write(2) a line.
 *   file    "2025-01-31T03:30:00.123+0100 ident[pid]: level: message",
 *           appended (O_APPEND) to the file hy_log_open_file() opened. The
 *           path is looked at before each line: a file renamed or removed
 *           (logrotate's default) is made again and written from then on,
 *           and one truncated in place (copytruncate) is written from its
 *           new end, so logrotate needs no signal and no postrotate. Lines
 *           written while a rotation is under way land in the old file or
 *           the new one, whole.
 *   syslog  an RFC 3164 datagram (the daemon facility) to /dev/log, the
 *           socket syslog(3) uses; on a systemd machine it is journald's
 *           (systemd-journald-dev-log.socket), so the journal gets every
 *           line with its level and identifier, without libsystemd.
 *           $HYBRIDFS_SYSLOG_SOCKET (an absolute path) names another
 *           socket, for tests: a machine's /dev/log cannot be hidden from
 *           one test. Unlike syslog(3), which drops a message it cannot
 *           send, a line the socket does not take (no /dev/log, nobody
 *           reading it) goes to the fallback file (hy_log_set_fallback()),
 *           after a line there that says why, or to stderr without one;
 *           the socket is connected again at the next line.
 *
 * Locks: each line is formatted on the stack and written with one write(2)
 * or send(2) call, so lines from different threads never interleave and
 * no lock is held while a line is written. A reopen of the file (after a
 * rotation) or of the socket is done by one thread at a time, under a
 * mutex of this module taken with trylock: a thread that finds it taken
 * writes to the descriptor as it is. The new descriptor takes the old
 * one's number (dup2), so a thread that read the number before always
 * writes to an open file. The sinks and the level are atomics.
 * Memory: nothing is allocated. The aliases (hy_log_set_alias,
 * hy_log_add_alias) and the paths (hy_log_open_file, hy_log_set_fallback)
 * are set before the threads that log start, and only read afterwards.
 */
#ifndef HYBRIDFS_LOG_H
#define HYBRIDFS_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <syslog.h>

/* Flags: hy_log_init() takes any of them or'ed together. */
enum hy_log_sink {
	HY_LOG_STDERR = 1, /* "ident: message" on standard error */
	HY_LOG_SYSLOG = 2, /* the syslog socket, the daemon facility */
	HY_LOG_FILE = 4,   /* the file of hy_log_open_file() */
};

/* The syslog socket's path, unless $HYBRIDFS_SYSLOG_SOCKET names another. */
#define HY_LOG_SYSLOG_SOCKET "/dev/log"

/* Sets the sinks (enum hy_log_sink flags), the lowest level that is
 * printed (LOG_DEBUG prints all), and the program name that prefixes each
 * line. @ident is not copied. With HY_LOG_SYSLOG the socket is connected
 * (again); HY_LOG_FILE without a file opened is stderr. */
void hy_log_init(unsigned sinks, int max_level, const char *ident);

/* The lowest level that is printed now. */
int hy_log_level(void);

/* Opens @path (absolute) to append to, creating it with mode 0640 (less
 * the umask) when it is missing, for the file sink. A symbolic link, or
 * something other than a regular file, is refused. Returns 0, or a
 * negative errno with the reason, naming the file, in @why. */
int hy_log_open_file(const char *path, char *why, size_t why_size);

/* Where syslog's lines go while the socket does not take them: @path,
 * opened (created 0600) at the first such line. @path may be a
 * "/proc/self/fd/N/..." name the aliases show as the real one. NULL:
 * none (stderr). Copied. */
void hy_log_set_fallback(const char *path);

/* Whether the syslog socket takes a connection now: 0, or a negative
 * errno (-ENOENT: no /dev/log; -ECONNREFUSED: nobody reads it). */
int hy_log_syslog_probe(void);

/* The syslog socket's path, as hy_log_syslog_probe() tries it. */
const char *hy_log_syslog_socket(void);

/* Closes the file sinks and the socket (tests; the daemon at exit). */
void hy_log_close(void);

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
