/* test_log.c - the log's sinks: the file of log=FILE (its line format,
 * refusals, logrotate's rename and copytruncate, threads writing through a
 * rotation) and the syslog socket (the datagram's format, the fallback
 * file while nobody reads the socket, and back). The threaded test
 * synchronises with joins only; the rotation it races with may land
 * anywhere, and what is checked (every line whole, none lost) holds
 * wherever it lands. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hybridfs/log.h"
#include "suites.h"

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static size_t count_of(const char *text, const char *what)
{
	size_t n = 0;

	for (const char *p = text; p && (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static void back_to_quiet(void)
{
	hy_log_close();
	unsetenv("HYBRIDFS_SYSLOG_SOCKET");
	hy_log_init(HY_LOG_STDERR, LOG_CRIT, "hytest");
}

/* "YYYY-MM-DDTHH:MM:SS.mmm+ZZZZ hytest[pid]: LEVEL: MESSAGE" */
static int line_is(const char *line, const char *level, const char *msg)
{
	char want[512];
	int y, mo, d, h, mi, s, ms, used = 0;

	if (sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%*[+-]%*4d %n", &y, &mo, &d, &h, &mi, &s, &ms,
		   &used) != 7 ||
	    !used)
		return 0;
	snprintf(want, sizeof(want), "hytest[%d]: %s: %s\n", (int)getpid(), level, msg);
	return strncmp(line + used, want, strlen(want)) == 0;
}

static void test_log_file(void)
{
	char *dir = hy_test_tmpdir(), *path, *other, *link, *text, why[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = hy_test_path_in(dir, "hybridfs.log");
	other = hy_test_path_in(dir, "hybridfs.log.1");
	link = hy_test_path_in(dir, "link.log");
	CU_ASSERT_FATAL(path && other && link);

	/* refusals name the file */
	CU_ASSERT_EQUAL(hy_log_open_file("relative.log", why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "absolute"));
	CU_ASSERT_EQUAL(hy_log_open_file(dir, why, sizeof(why)), -EISDIR);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, dir));
	CU_ASSERT_EQUAL(symlink(path, link), 0);
	CU_ASSERT_EQUAL(hy_log_open_file(link, why, sizeof(why)), -ELOOP);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "symbolic link"));
	CU_ASSERT_EQUAL(access(path, F_OK), -1); /* the link was not followed */

	CU_ASSERT_EQUAL_FATAL(hy_log_open_file(path, why, sizeof(why)), 0);
	hy_log_init(HY_LOG_FILE, LOG_INFO, "hytest");
	hy_log(LOG_WARNING, "cache: \"%s\": first", "/x");
	hy_log(LOG_DEBUG, "not shown");
	text = read_all(path);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_TRUE(line_is(text, "warning", "cache: \"/x\": first"));
	CU_ASSERT_EQUAL(count_of(text, "\n"), 1);
	free(text);

	/* logrotate's default: renamed, and the next line makes a new file */
	CU_ASSERT_EQUAL(rename(path, other), 0);
	hy_log(LOG_NOTICE, "second");
	text = read_all(path);
	CU_ASSERT_TRUE(text && line_is(text, "notice", "second"));
	free(text);
	text = read_all(other);
	CU_ASSERT_TRUE(text && count_of(text, "\n") == 1 && !strstr(text, "second"));
	free(text);

	/* copytruncate: the file is written from its new end, not at the old
	 * offset (which would leave a hole of zeros) */
	CU_ASSERT_EQUAL(truncate(path, 0), 0);
	hy_log(LOG_ERR, "third");
	text = read_all(path);
	CU_ASSERT_TRUE(text && line_is(text, "err", "third") && count_of(text, "\n") == 1);
	free(text);

	/* removed: made again */
	CU_ASSERT_EQUAL(unlink(path), 0);
	hy_log(LOG_INFO, "fourth");
	text = read_all(path);
	CU_ASSERT_TRUE(text && line_is(text, "info", "fourth"));
	free(text);

	back_to_quiet();
	hy_test_rmtree(dir);
	free(path);
	free(other);
	free(link);
	free(dir);
}

#define WRITERS 4
#define LINES	400

static void *writer(void *arg)
{
	long id = (long)arg;

	for (int i = 0; i < LINES; i++)
		hy_log(LOG_NOTICE, "writer %ld line %d end", id, i);
	return NULL;
}

static void test_log_file_threads(void)
{
	char *dir = hy_test_tmpdir(), *path, *other, *a, *b, why[512];
	pthread_t threads[WRITERS];
	size_t whole = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	path = hy_test_path_in(dir, "t.log");
	other = hy_test_path_in(dir, "t.log.1");
	CU_ASSERT_FATAL(path && other);
	CU_ASSERT_EQUAL_FATAL(hy_log_open_file(path, why, sizeof(why)), 0);
	hy_log_init(HY_LOG_FILE, LOG_INFO, "hytest");
	for (long i = 0; i < WRITERS; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[i], NULL, writer, (void *)i), 0);
	/* a rotation while they write */
	CU_ASSERT_EQUAL(rename(path, other), 0);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(threads[i], NULL);
	hy_log(LOG_NOTICE, "after");
	a = read_all(path);
	b = read_all(other);
	CU_ASSERT_FATAL(a && b);
	/* every line whole, in one file or the other */
	for (char *text = a; text; text = text == a ? b : NULL)
		for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
			char *m = strstr(line, "notice: ");

			CU_ASSERT_PTR_NOT_NULL(m);
			if (m && (strcmp(m, "notice: after") == 0 ||
				  strcmp(m + strlen(m) - 4, " end") == 0))
				whole++;
		}
	CU_ASSERT_EQUAL(whole, WRITERS * LINES + 1);
	free(a);
	free(b);
	back_to_quiet();
	hy_test_rmtree(dir);
	free(path);
	free(other);
	free(dir);
}

static int bind_socket(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void test_log_syslog(void)
{
	char *dir = hy_test_tmpdir(), *sock, *fallback, *text, got[2048], want[256];
	int rx;
	ssize_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	sock = hy_test_path_in(dir, "log");
	fallback = hy_test_path_in(dir, "fallback.log");
	CU_ASSERT_FATAL(sock && fallback);
	rx = bind_socket(sock);
	CU_ASSERT_FATAL(rx >= 0);
	setenv("HYBRIDFS_SYSLOG_SOCKET", sock, 1);
	CU_ASSERT_EQUAL(hy_log_syslog_probe(), 0);
	CU_ASSERT_STRING_EQUAL(hy_log_syslog_socket(), sock);
	hy_log_set_fallback(fallback);
	hy_log_init(HY_LOG_SYSLOG, LOG_INFO, "hytest");

	/* <daemon facility | warning>Mmm dd hh:mm:ss hytest[pid]: message */
	hy_log(LOG_WARNING, "to syslog");
	n = recv(rx, got, sizeof(got) - 1, MSG_DONTWAIT);
	CU_ASSERT_TRUE_FATAL(n > 0);
	got[n] = '\0';
	CU_ASSERT_EQUAL(strncmp(got, "<28>", 4), 0);
	snprintf(want, sizeof(want), " hytest[%d]: to syslog", (int)getpid());
	CU_ASSERT_TRUE(n > (ssize_t)strlen(want) && strcmp(got + n - strlen(want), want) == 0);
	CU_ASSERT_EQUAL(access(fallback, F_OK), -1);

	/* nobody reads the socket: the lines go to the fallback, with why */
	close(rx);
	unlink(sock);
	CU_ASSERT_TRUE(hy_log_syslog_probe() < 0);
	hy_log(LOG_ERR, "not lost");
	hy_log(LOG_ERR, "nor this");
	text = read_all(fallback);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, sock));
	CU_ASSERT_EQUAL(count_of(text, "until it takes them again"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "err: not lost\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "err: nor this\n"));
	free(text);

	/* a syslogd again: connected at the next line */
	rx = bind_socket(sock);
	CU_ASSERT_FATAL(rx >= 0);
	hy_log(LOG_NOTICE, "back");
	n = recv(rx, got, sizeof(got) - 1, MSG_DONTWAIT);
	CU_ASSERT_TRUE(n > 0);
	got[n > 0 ? n : 0] = '\0';
	CU_ASSERT_PTR_NOT_NULL(strstr(got, "]: back"));
	text = read_all(fallback);
	CU_ASSERT_TRUE(text && strstr(text, "syslog takes the lines again") &&
		       !strstr(text, "back\n"));
	free(text);

	close(rx);
	back_to_quiet();
	hy_test_rmtree(dir);
	free(sock);
	free(fallback);
	free(dir);
}

int hy_test_add_log(void)
{
	CU_pSuite s = CU_add_suite("log", NULL, NULL);

	if (!s || !CU_add_test(s, "file sink, refusals and logrotate", test_log_file) ||
	    !CU_add_test(s, "threads through a rotation", test_log_file_threads) ||
	    !CU_add_test(s, "syslog socket and its fallback", test_log_syslog))
		return -1;
	return 0;
}
