/* log.c - see include/hybridfs/log.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/log.h"

#define LINE_MAX_BYTES 1024

static atomic_uint log_sinks = HY_LOG_STDERR;
static atomic_int log_max_level = LOG_NOTICE;
static const char *log_ident = "hybridfs";

/* A file sink: the file of log=FILE, or syslog's fallback. */
struct log_file {
	char path[PATH_MAX]; /* "": none; set before the threads that log start */
	mode_t mode;	     /* for a file made again after a rotation */
	atomic_int fd;	     /* -1: not open (the fallback is opened at first use) */
	/* the file fd has open, to see a rotation by its path */
	atomic_ullong dev, ino;
	atomic_bool reopen_failed; /* said once, until a reopen works */
	pthread_mutex_t reopen;	   /* one reopen at a time (trylock) */
};

static struct log_file named = {.mode = 0640, .fd = -1, .reopen = PTHREAD_MUTEX_INITIALIZER};
static struct log_file fallback = {.mode = 0600, .fd = -1, .reopen = PTHREAD_MUTEX_INITIALIZER};

/* The syslog socket: connected by hy_log_init(), again after a failed send. */
static char syslog_path[sizeof(((struct sockaddr_un *)0)->sun_path)] = HY_LOG_SYSLOG_SOCKET;
static atomic_int syslog_fd = -1;
static atomic_int syslog_type = SOCK_DGRAM;
static atomic_bool syslog_down; /* the last line went to the fallback */
static pthread_mutex_t syslog_reconnect = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"emerg",   "alert",  "crit", "err",
					  "warning", "notice", "info", "debug"};

static const char *level_name(int level)
{
	return level >= 0 && level <= LOG_DEBUG ? level_names[level] : "log";
}

static void set_syslog_path(void)
{
	const char *env = getenv("HYBRIDFS_SYSLOG_SOCKET");

	snprintf(syslog_path, sizeof(syslog_path), "%s",
		 env && env[0] == '/' && strlen(env) < sizeof(syslog_path) ? env
									   : HY_LOG_SYSLOG_SOCKET);
}

/* A socket connected to the syslog socket (a datagram one, or a stream
 * one where syslogd listens so), or a negative errno; *type says which. */
static int syslog_connect(int *type)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int types[2] = {SOCK_DGRAM, SOCK_STREAM}, err = ENOENT;

	memcpy(addr.sun_path, syslog_path, strlen(syslog_path) + 1);
	for (int i = 0; i < 2; i++) {
		int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
			*type = types[i];
			return fd;
		}
		err = errno;
		close(fd);
		if (err != EPROTOTYPE)
			break;
	}
	return -err;
}

int hy_log_syslog_probe(void)
{
	int type, fd;

	set_syslog_path();
	fd = syslog_connect(&type);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

const char *hy_log_syslog_socket(void)
{
	return syslog_path;
}

/* Puts @fd in place of the descriptor @slot holds (taking its number, so
 * a thread that read the number writes to an open file), or in @slot when
 * it holds none. Returns the number in @slot. */
static int swap_in(atomic_int *slot, int fd)
{
	int old = atomic_load(slot);

	if (old < 0) {
		atomic_store(slot, fd);
		return fd;
	}
	if (dup2(fd, old) < 0) {
		close(fd);
		return old;
	}
	close(fd);
	return old;
}

/* O_NONBLOCK: a FIFO at @path must not hang the open (it is refused
 * below); a regular file does not heed it. */
static int open_log(const char *path, mode_t mode, struct stat *st)
{
	int fd =
		open(path,
		     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK,
		     mode);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static void remember(struct log_file *f, const struct stat *st)
{
	atomic_store(&f->dev, (unsigned long long)st->st_dev);
	atomic_store(&f->ino, (unsigned long long)st->st_ino);
}

/* The file at f->path opened again (it was renamed, removed, or never
 * opened): the descriptor to write to, or -1. A reopen that fails is said
 * once, in the file still open or on stderr. */
static int file_reopen(struct log_file *f)
{
	struct stat st;
	char note[PATH_MAX + 128];
	int fd, out;

	if (pthread_mutex_trylock(&f->reopen) != 0)
		return atomic_load(&f->fd);
	fd = open_log(f->path, f->mode, &st);
	if (fd < 0) {
		out = atomic_load(&f->fd);
		if (!atomic_exchange(&f->reopen_failed, true)) {
			int n = snprintf(note, sizeof(note),
					 "%s: log file \"%s\": cannot open it: %s; %s\n", log_ident,
					 f->path, strerror(-fd),
					 out >= 0 ? "writing on into the file as it was open"
						  : "writing to standard error");

			hy_log_unalias(note, sizeof(note));
			n = (int)strlen(note);
			if (write(out >= 0 ? out : STDERR_FILENO, note, (size_t)n) < 0)
				n = 0; /* nowhere else to say it */
		}
		pthread_mutex_unlock(&f->reopen);
		return out;
	}
	out = swap_in(&f->fd, fd);
	remember(f, &st);
	atomic_store(&f->reopen_failed, false);
	pthread_mutex_unlock(&f->reopen);
	return out;
}

/* One line into @f: 0, or -1 when it could not be written. */
static int file_write(struct log_file *f, const char *line, size_t len)
{
	struct stat st;
	int fd = atomic_load(&f->fd);

	if (!f->path[0])
		return -1;
	/* a stat a line: lines are few (debug lines only with -d), and it
	 * follows logrotate without a signal */
	if (fd < 0 || stat(f->path, &st) < 0 ||
	    (unsigned long long)st.st_ino != atomic_load(&f->ino) ||
	    (unsigned long long)st.st_dev != atomic_load(&f->dev))
		fd = file_reopen(f);
	if (fd < 0)
		return -1;
	return write(fd, line, len) == (ssize_t)len ? 0 : -1;
}

int hy_log_open_file(const char *path, char *why, size_t why_size)
{
	struct stat st;
	int fd;

	if (!path || path[0] != '/' || strlen(path) >= sizeof(named.path))
		return hy_log_why(-EINVAL, why, why_size, "log file \"%s\": give an absolute path",
				  path ? path : "");
	fd = open_log(path, named.mode, &st);
	if (fd == -ELOOP)
		return hy_log_why(fd, why, why_size,
				  "log file \"%s\" is a symbolic link: name the file it points to",
				  path);
	if (fd == -EINVAL)
		return hy_log_why(fd, why, why_size, "log file \"%s\" is not a regular file", path);
	if (fd < 0)
		return hy_log_why(fd, why, why_size, "log file \"%s\": %m", path);
	snprintf(named.path, sizeof(named.path), "%s", path);
	swap_in(&named.fd, fd);
	remember(&named, &st);
	return 0;
}

void hy_log_set_fallback(const char *path)
{
	int fd = atomic_exchange(&fallback.fd, -1);

	if (fd >= 0)
		close(fd);
	snprintf(fallback.path, sizeof(fallback.path), "%s", path ? path : "");
}

void hy_log_close(void)
{
	struct log_file *files[] = {&named, &fallback};
	int fd;

	for (size_t i = 0; i < 2; i++) {
		fd = atomic_exchange(&files[i]->fd, -1);
		if (fd >= 0)
			close(fd);
		files[i]->path[0] = '\0';
	}
	fd = atomic_exchange(&syslog_fd, -1);
	if (fd >= 0)
		close(fd);
}

void hy_log_init(unsigned sinks, int max_level, const char *ident)
{
	if (ident)
		log_ident = ident;
	if (sinks & HY_LOG_SYSLOG) {
		int type = SOCK_DGRAM, fd;

		set_syslog_path();
		fd = syslog_connect(&type);
		atomic_store(&syslog_type, type);
		if (fd >= 0)
			swap_in(&syslog_fd, fd);
	}
	if ((sinks & HY_LOG_FILE) && atomic_load(&named.fd) < 0)
		sinks = (sinks & ~(unsigned)HY_LOG_FILE) | HY_LOG_STDERR;
	atomic_store(&log_max_level, max_level);
	atomic_store(&log_sinks, sinks);
}

int hy_log_level(void)
{
	return atomic_load_explicit(&log_max_level, memory_order_relaxed);
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

/* "2025-01-31T03:30:00.123+0100 ident[pid]: level: message\n" into @f. */
static int file_line(struct log_file *f, int level, const char *msg)
{
	char line[LINE_MAX_BYTES + 128], stamp[40], zone[8];
	struct timespec now;
	struct tm tm;
	int n;

	clock_gettime(CLOCK_REALTIME, &now);
	localtime_r(&now.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	n = snprintf(line, sizeof(line), "%s.%03ld%s %s[%d]: %s: %s\n", stamp,
		     now.tv_nsec / 1000000, zone, log_ident, (int)getpid(), level_name(level), msg);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof(line)) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	return file_write(f, line, (size_t)n);
}

static void stderr_line(const char *msg)
{
	char line[LINE_MAX_BYTES + 64];
	int n = snprintf(line, sizeof(line), "%s: %s\n", log_ident, msg);

	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	/* one write per line keeps threads from interleaving; a sink that
	 * fails has nowhere to report to */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

/* One RFC 3164 datagram (or NUL-ended record on a stream socket): 0, or a
 * negative errno when the socket does not take it, connected again once. */
static int syslog_send(int level, const char *msg)
{
	char packet[LINE_MAX_BYTES + 128], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	size_t len;
	int n, fd, nfd, type;

	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", &tm);
	n = snprintf(packet, sizeof(packet), "<%d>%s %s[%d]: %s", LOG_DAEMON | level, stamp,
		     log_ident, (int)getpid(), msg);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(packet))
		n = (int)sizeof(packet) - 1;
	fd = atomic_load(&syslog_fd);
	len = (size_t)n + (atomic_load(&syslog_type) == SOCK_STREAM);
	if (fd >= 0 && send(fd, packet, len, MSG_NOSIGNAL) == (ssize_t)len)
		return 0;
	if (pthread_mutex_trylock(&syslog_reconnect) != 0)
		return -EAGAIN; /* another thread is connecting: this line goes to the fallback */
	nfd = syslog_connect(&type);
	if (nfd >= 0) {
		atomic_store(&syslog_type, type);
		fd = swap_in(&syslog_fd, nfd);
	}
	pthread_mutex_unlock(&syslog_reconnect);
	if (nfd < 0)
		return nfd;
	len = (size_t)n + (type == SOCK_STREAM);
	return send(fd, packet, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -errno;
}

/* A syslog line the socket did not take: into the fallback file, the
 * first one after a line that says why; stderr without a fallback. */
static void syslog_missed(int level, const char *msg, int err, bool to_stderr)
{
	char note[512];

	if (!atomic_exchange(&syslog_down, true)) {
		snprintf(note, sizeof(note),
			 "syslog: \"%s\": %s: the lines it does not take go to this file, until "
			 "it takes them again",
			 syslog_path, strerror(-err));
		if (file_line(&fallback, LOG_NOTICE, note) < 0 && !to_stderr)
			stderr_line(note);
	}
	if (file_line(&fallback, level, msg) < 0 && !to_stderr)
		stderr_line(msg);
}

void hy_vlog(int level, const char *fmt, va_list ap)
{
	char msg[LINE_MAX_BYTES];
	int saved_errno = errno, rc;
	unsigned sinks;

	if (level > hy_log_level())
		return;
	sinks = atomic_load(&log_sinks);
	errno = saved_errno; /* for a %m */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	hy_log_unalias(msg, sizeof(msg));
	if (sinks & HY_LOG_STDERR)
		stderr_line(msg);
	/* a line the file does not take (a full disk) goes to syslog, else stderr */
	if ((sinks & HY_LOG_FILE) && file_line(&named, level, msg) < 0 &&
	    !(sinks & (HY_LOG_STDERR | HY_LOG_SYSLOG)) && syslog_send(level, msg) < 0)
		stderr_line(msg);
	if (sinks & HY_LOG_SYSLOG) {
		rc = syslog_send(level, msg);
		if (rc < 0)
			syslog_missed(level, msg, rc, sinks & HY_LOG_STDERR);
		else if (atomic_exchange(&syslog_down, false))
			file_line(&fallback, LOG_NOTICE, "syslog takes the lines again");
	}
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
