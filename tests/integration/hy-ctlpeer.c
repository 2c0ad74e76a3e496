/*
 * hy-ctlpeer.c - a raw, possibly hostile, client of the daemon's control
 * socket (control.h), for the profiler's integration test (profiler.sh).
 *
 *   hy-ctlpeer STATE_DIR MODE
 *
 * MODE is one of:
 *   line TEXT       sends TEXT and "\n", prints the response line
 *   raw-random N    sends N random bytes (no newline added), shuts down
 *                   writing, prints whatever comes back, or "closed"
 *   oversized       sends 100000 bytes of 'x' with no newline, prints the
 *                   response
 *   nul             sends a valid ping request with a nul byte and more
 *                   text after it on the same line, prints the response
 *   half            sends half a request line and closes; prints "sent"
 *
 * The socket is reached as "/proc/self/fd/N/control.sock", N an O_PATH
 * descriptor of STATE_DIR, as hybridctl does (hy_control_socket_path()).
 * What the daemon sent is printed up to its first newline, followed by a
 * newline; "closed" when it hung up without a byte.
 *
 * Exit status: 0 the exchange happened (whatever the daemon answered),
 * 1 a send or receive error other than the daemon hanging up, 2 a bad
 * command line, 3 the connection was refused (the message names the errno:
 * EACCES when the socket's permissions keep us out).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "hybridfs/control.h"

#define OVERSIZED    100000
#define RESPONSE_MAX (1 << 20)
#define RECV_TIMEOUT 30 /* seconds; only a hung daemon takes this long */
#define RANDOM_MAX   (16 << 20)

__attribute__((format(printf, 2, 3), noreturn)) static void die(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("hy-ctlpeer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

static int connect_state(const char *state_dir)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval tv = {RECV_TIMEOUT, 0};
	int dir_fd, sock, rc;

	dir_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		die(3, "state folder \"%s\": %s", state_dir, strerror(errno));
	rc = hy_control_socket_path(dir_fd, addr.sun_path, sizeof(addr.sun_path));
	if (rc)
		die(2, "cannot name the socket in \"%s\": %s", state_dir, strerror(-rc));
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		die(1, "socket: %s", strerror(errno));
	if (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		die(1, "setsockopt: %s", strerror(errno));
	do {
		rc = connect(sock, (struct sockaddr *)&addr, sizeof(addr));
	} while (rc < 0 && errno == EINTR);
	if (rc < 0)
		die(3, "connect to \"%s/%s\": %s", state_dir, HY_CONTROL_SOCKET, strerror(errno));
	/* the path names dir_fd only while it is open; the socket is made */
	close(dir_fd);
	return sock;
}

/* Sends all of @buf; false when the daemon stopped reading and hung up
 * (EPIPE, ECONNRESET), which a hostile request may well cause. */
static bool send_all(int sock, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(sock, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE || errno == ECONNRESET)
				return false;
			die(1, "send: %s", strerror(errno));
		}
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/* Reads until a newline, end of file or RESPONSE_MAX bytes and prints the
 * first line, or "closed". */
static void print_response(int sock)
{
	char *buf = malloc(RESPONSE_MAX);
	size_t have = 0;
	char *nl = NULL;

	if (!buf)
		die(1, "out of memory");
	while (have < RESPONSE_MAX && !nl) {
		ssize_t n = recv(sock, buf + have, RESPONSE_MAX - have, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECONNRESET)
				break;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				die(1, "no answer in %d s", RECV_TIMEOUT);
			die(1, "recv: %s", strerror(errno));
		}
		if (n == 0)
			break;
		nl = memchr(buf + have, '\n', (size_t)n);
		have += (size_t)n;
	}
	if (nl)
		have = (size_t)(nl - buf);
	if (have == 0 && !nl) {
		puts("closed");
	} else {
		fwrite(buf, 1, have, stdout);
		putchar('\n');
	}
	free(buf);
}

static void mode_line(int sock, const char *text)
{
	size_t len = strlen(text);
	char *line = malloc(len + 1);

	if (!line)
		die(1, "out of memory");
	memcpy(line, text, len);
	line[len] = '\n';
	send_all(sock, line, len + 1);
	free(line);
	print_response(sock);
}

static void mode_raw_random(int sock, const char *count)
{
	char *end, *buf;
	unsigned long n;
	size_t have = 0;

	errno = 0;
	n = strtoul(count, &end, 10);
	if (errno || *end || end == count || n == 0 || n > RANDOM_MAX)
		die(2, "raw-random: N must be 1 to %d, not \"%s\"", RANDOM_MAX, count);
	buf = malloc(n);
	if (!buf)
		die(1, "out of memory");
	while (have < n) {
		ssize_t got = getrandom(buf + have, n - have, 0);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			die(1, "getrandom: %s", strerror(errno));
		}
		have += (size_t)got;
	}
	if (send_all(sock, buf, n) && shutdown(sock, SHUT_WR) < 0 && errno != ENOTCONN)
		die(1, "shutdown: %s", strerror(errno));
	free(buf);
	print_response(sock);
}

static void mode_oversized(int sock)
{
	char *buf = malloc(OVERSIZED);

	if (!buf)
		die(1, "out of memory");
	memset(buf, 'x', OVERSIZED);
	/* the daemon may answer and hang up before taking it all */
	send_all(sock, buf, OVERSIZED);
	free(buf);
	print_response(sock);
}

static void mode_nul(int sock)
{
	/* a valid request up to the nul: a C-string parser would accept it */
	static const char line[] = "{\"v\":1,\"cmd\":\"ping\"}\0{\"more\":1}\n";

	send_all(sock, line, sizeof(line) - 1);
	print_response(sock);
}

static void mode_half(int sock)
{
	static const char half[] = "{\"v\":1,\"cmd\":\"sta";

	send_all(sock, half, sizeof(half) - 1);
	puts("sent");
}

int main(int argc, char **argv)
{
	const char *mode;
	int sock;

	if (argc < 3)
		die(2, "usage: hy-ctlpeer STATE_DIR line TEXT | raw-random N | oversized | nul | "
		       "half");
	mode = argv[2];
	if ((strcmp(mode, "line") == 0 || strcmp(mode, "raw-random") == 0) ? argc != 4 : argc != 3)
		die(2, "wrong number of arguments for \"%s\"", mode);
	if (strcmp(mode, "line") && strcmp(mode, "raw-random") && strcmp(mode, "oversized") &&
	    strcmp(mode, "nul") && strcmp(mode, "half"))
		die(2, "unknown mode \"%s\"", mode);

	sock = connect_state(argv[1]);
	if (strcmp(mode, "line") == 0)
		mode_line(sock, argv[3]);
	else if (strcmp(mode, "raw-random") == 0)
		mode_raw_random(sock, argv[3]);
	else if (strcmp(mode, "oversized") == 0)
		mode_oversized(sock);
	else if (strcmp(mode, "nul") == 0)
		mode_nul(sock);
	else
		mode_half(sock);
	close(sock);
	return fflush(stdout) == 0 ? 0 : 1;
}
