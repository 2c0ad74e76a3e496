/*
 * hy-iogen.c - a process with a known name that does a known list of reads
 * and writes, for the profiler's integration test (profiler.sh).
 *
 *   hy-iogen NAME FILE SPEC...
 *
 * Sets its process name to NAME (prctl PR_SET_NAME, so /proc/PID/comm
 * shows it), opens FILE with O_RDWR | O_CREAT | O_DIRECT, and performs each
 * SPEC in order:
 *   r:OFFSET:LENGTH   one pread(2) of LENGTH bytes at OFFSET
 *   w:OFFSET:LENGTH   one pwrite(2) of LENGTH bytes at OFFSET
 *   rename:NEWPATH    rename(2) FILE to NEWPATH while it stays open
 *   wait:FIFO         open FIFO and read one byte from it, FILE still open
 *                     (a test holds the file open this way, without sleeping)
 * OFFSET and LENGTH must be multiples of 4096 (O_DIRECT); buffers are
 * aligned with posix_memalign(3). Each request is issued exactly once and
 * must be done in full (a short read or write is an error).
 *
 * Prints nothing on success. Exit status: 0, 1 on any error (with a
 * message on standard error), 2 for a bad command line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

#define ALIGN	   4096
#define MAX_LENGTH (64u << 20)

__attribute__((format(printf, 2, 3), noreturn)) static void die(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("hy-iogen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

/* A decimal number that is a multiple of ALIGN; *@end is where it ends. */
static uint64_t parse_number(const char *spec, const char *s, char **end)
{
	unsigned long long v;

	if (*s < '0' || *s > '9')
		die(2, "bad spec \"%s\": expected a number at \"%s\"", spec, s);
	errno = 0;
	v = strtoull(s, end, 10);
	if (errno)
		die(2, "bad spec \"%s\": number out of range", spec);
	if (v % ALIGN)
		die(2, "bad spec \"%s\": %llu is not a multiple of %d", spec, v, ALIGN);
	return (uint64_t)v;
}

/* The byte a write puts at @pos: recognisable, position-dependent. */
static unsigned char pattern(uint64_t pos)
{
	return (unsigned char)('a' + (pos / ALIGN + pos) % 26);
}

static void do_io(int fd, const char *spec)
{
	char mode = spec[0], *end;
	uint64_t offset, length;
	unsigned char *buf;
	ssize_t n;
	int rc;

	if ((mode != 'r' && mode != 'w') || spec[1] != ':')
		die(2,
		    "bad spec \"%s\": expected r:OFFSET:LENGTH, w:OFFSET:LENGTH or "
		    "rename:PATH",
		    spec);
	offset = parse_number(spec, spec + 2, &end);
	if (*end != ':')
		die(2, "bad spec \"%s\": expected \":\" after the offset", spec);
	length = parse_number(spec, end + 1, &end);
	if (*end != '\0')
		die(2, "bad spec \"%s\": trailing characters \"%s\"", spec, end);
	if (length == 0 || length > MAX_LENGTH)
		die(2, "bad spec \"%s\": length must be 1 to %u bytes", spec, MAX_LENGTH);
	if (offset > (uint64_t)INT64_MAX - length)
		die(2, "bad spec \"%s\": offset out of range", spec);

	rc = posix_memalign((void **)&buf, ALIGN, (size_t)length);
	if (rc)
		die(1, "%s: posix_memalign: %s", spec, strerror(rc));
	if (mode == 'w') {
		for (uint64_t i = 0; i < length; i++)
			buf[i] = pattern(offset + i);
		n = pwrite(fd, buf, (size_t)length, (off_t)offset);
	} else {
		memset(buf, 0, (size_t)length);
		n = pread(fd, buf, (size_t)length, (off_t)offset);
	}
	if (n < 0)
		die(1, "%s: %s: %s", spec, mode == 'w' ? "pwrite" : "pread", strerror(errno));
	if ((uint64_t)n != length)
		die(1, "%s: short %s: %zd of %" PRIu64 " bytes", spec,
		    mode == 'w' ? "write" : "read", n, length);
	free(buf);
}

int main(int argc, char **argv)
{
	const char *path;
	int fd;

	if (argc < 3)
		die(2, "usage: hy-iogen NAME FILE SPEC...");
	if (strlen(argv[1]) == 0 || strlen(argv[1]) > 15)
		die(2, "NAME must be 1 to 15 bytes: \"%s\"", argv[1]);
	if (prctl(PR_SET_NAME, argv[1], 0, 0, 0) < 0)
		die(1, "prctl(PR_SET_NAME, \"%s\"): %s", argv[1], strerror(errno));
	path = argv[2];
	fd = open(path, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
	if (fd < 0)
		die(1, "%s: open: %s", path, strerror(errno));
	for (int i = 3; i < argc; i++) {
		if (strncmp(argv[i], "wait:", 5) == 0) {
			char byte;
			int ff = open(argv[i] + 5, O_RDONLY | O_CLOEXEC);

			if (ff < 0)
				die(1, "%s: open: %s", argv[i] + 5, strerror(errno));
			if (read(ff, &byte, 1) < 0)
				die(1, "%s: read: %s", argv[i] + 5, strerror(errno));
			close(ff);
		} else if (strncmp(argv[i], "rename:", 7) == 0) {
			const char *to = argv[i] + 7;

			if (!*to)
				die(2, "bad spec \"%s\": no new path", argv[i]);
			if (rename(path, to) < 0)
				die(1, "rename \"%s\" to \"%s\": %s", path, to, strerror(errno));
			path = to;
		} else {
			do_io(fd, argv[i]);
		}
	}
	if (close(fd) < 0)
		die(1, "%s: close: %s", path, strerror(errno));
	return 0;
}
