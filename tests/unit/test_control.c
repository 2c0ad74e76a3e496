/* test_control.c - the control protocol: request and response lines are
 * parsed strictly and answered with a message that says what was wrong,
 * and hy_control_call() talks to a small server thread over the socket. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hybridfs/control.h"
#include "hybridfs/control_server.h"
#include "suites.h"

/* Parses and gives the request object back at once: these tests look at
 * the command only (test_request_arguments looks at the object). */
static int parse_len(const char *line, size_t len, struct hy_control_request *req, char *why,
		     size_t why_size)
{
	int rc = hy_control_parse_request(line, len, req, why, why_size);

	if (rc == 0)
		hy_control_request_clear(req);
	return rc;
}

static int parse(const char *line, struct hy_control_request *req, char *why, size_t why_size)
{
	return parse_len(line, strlen(line), req, why, why_size);
}

static bool has_control_chars(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static void test_parse_valid(void)
{
	static const struct {
		const char *line;
		enum hy_control_command command;
	} cases[] = {
		{"{\"v\":1,\"cmd\":\"status\"}", HY_CONTROL_STATUS},
		{"{\"v\":1,\"cmd\":\"sync\"}", HY_CONTROL_SYNC},
		{"{\"v\":1,\"cmd\":\"ping\"}", HY_CONTROL_PING},
		{"{\"v\":1,\"cmd\":\"flush\"}", HY_CONTROL_FLUSH},
		{"{\"v\":1,\"cmd\":\"policy\",\"reset\":true,\"set\":[\"unknown.evict=late\"]}",
		 HY_CONTROL_POLICY},
		{"{\"cmd\":\"ping\",\"v\":1}", HY_CONTROL_PING},
		{"{\"v\": 1, \"cmd\": \"status\"}", HY_CONTROL_STATUS},
	};
	struct hy_control_request req;
	char why[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&req, 0xff, sizeof(req));
		CU_ASSERT_EQUAL(parse(cases[i].line, &req, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(req.version, HY_CONTROL_VERSION);
		CU_ASSERT_EQUAL(req.command, cases[i].command);
	}
	/* no message buffer at all is fine */
	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"sync\"}", &req, NULL, 0), 0);
	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"frob\"}", &req, NULL, 0), -ENOSYS);

	CU_ASSERT_STRING_EQUAL(hy_control_command_name(HY_CONTROL_STATUS), "status");
	CU_ASSERT_STRING_EQUAL(hy_control_command_name(HY_CONTROL_SYNC), "sync");
	CU_ASSERT_STRING_EQUAL(hy_control_command_name(HY_CONTROL_PING), "ping");
	CU_ASSERT_PTR_NULL(hy_control_command_name((enum hy_control_command)42));
	CU_ASSERT_PTR_NULL(hy_control_command_name((enum hy_control_command)1000));
}

static void test_parse_whitespace(void)
{
	struct hy_control_request req;
	char why[256];

	CU_ASSERT_EQUAL(parse("   {\"v\":1,\"cmd\":\"ping\"}   ", &req, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(req.command, HY_CONTROL_PING);
	CU_ASSERT_EQUAL(parse("\t{ \"v\" : 1 ,\r\n \"cmd\" : \"sync\" }\r", &req, why, sizeof(why)),
			0);
	CU_ASSERT_EQUAL(req.command, HY_CONTROL_SYNC);
}

static void test_parse_extra_members(void)
{
	struct hy_control_request req;
	char why[256];

	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"status\",\"x\":[1,2,{\"y\":null}],"
			      "\"later\":\"z\",\"n\":1.5}",
			      &req, why, sizeof(why)),
			0);
	CU_ASSERT_EQUAL(req.command, HY_CONTROL_STATUS);
	CU_ASSERT_EQUAL(
		parse("{\"future\":{\"a\":true},\"cmd\":\"sync\",\"v\":1}", &req, why, sizeof(why)),
		0);
	CU_ASSERT_EQUAL(req.command, HY_CONTROL_SYNC);
	/* well-formed UTF-8 of every length is fine */
	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"ping\",\"x\":\"\xc3\xa9\xe2\x82\xac"
			      "\xf0\x9f\x92\xbe\xed\x9f\xbf\xf4\x8f\xbf\xbf\"}",
			      &req, why, sizeof(why)),
			0);
}

static void test_parse_malformed(void)
{
	static const struct {
		const char *line;
		size_t len;
	} cases[] = {
#define C(s) {s, sizeof(s) - 1}
		C(""),
		C("   "),
		C("{"),
		C("{\"v\":1,\"cmd\":\"status\""),
		C("[]"),
		C("null"),
		C("true"),
		C("1"),
		C("\"status\""),
		C("{\"v\":\"1\",\"cmd\":\"status\"}"),
		C("{\"v\":1.0,\"cmd\":\"status\"}"),
		C("{\"v\":true,\"cmd\":\"status\"}"),
		C("{\"v\":null,\"cmd\":\"status\"}"),
		C("{\"cmd\":\"status\"}"),
		C("{\"v\":1}"),
		C("{\"v\":1,\"cmd\":5}"),
		C("{\"v\":1,\"cmd\":null}"),
		C("{\"v\":1,\"cmd\":[\"status\"]}"),
		C("{\"v\":1,\"cmd\":\"status\"}x"),
		C("{\"v\":1,\"cmd\":\"status\"} }"),
		C("{\"v\":1,\"cmd\":\"status\"}{\"v\":1,\"cmd\":\"status\"}"),
		C("{\"v\":1,\"cmd\":\"status\"}\0"),
		C("{\"v\":1,\0\"cmd\":\"status\"}"),
		C("{\"v\":1,\"cmd\":\"sta\0tus\"}"),
		C("\0{\"v\":1,\"cmd\":\"status\"}"),
		C("{\"v\":1,\"cmd\":\"st\xff\xfe\"}"),
		C("{\"v\":1,\"cmd\":\"status\",\"x\":\"\xc3\x28\"}"),
		C("{\"v\":1,\"cmd\":\"status\",\"x\":\"\xed\xa0\x80\"}"),
		C("{\"v\":1,\"cmd\":\"status\",\"x\":\"\xc0\xaf\"}"),
		C("{\"v\":1,\"cmd\":\"status\",\"x\":\"\xe0\x80\xaf\"}"),
		C("{\"v\":1,\"cmd\":\"status\",\"x\":\"\xf4\x90\x80\x80\"}"),
		C("{\"v\":1,\"cmd\":\"status\",\"x\":\"\xf8\x88\x80\x80\x80\"}"),
		C("{\"v\":1,\"cmd\":\"status\"}\xe2\x82"),
		C("{\"v\":1,\"cmd\":\"status\",\"x\":\"\x80\"}"),
		C("{'v':1,'cmd':'status'}"),
		C("{\"v\":1,\"cmd\":\"status\",}"),
		C("{v:1,cmd:\"status\"}"),
#undef C
	};
	struct hy_control_request req;
	char why[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why[0] = '\0';
		int rc = parse_len(cases[i].line, cases[i].len, &req, why, sizeof(why));
		if (rc != -EINVAL)
			fprintf(stderr, "\ncase %zu: rc %d (%s)\n", i, rc, why);
		CU_ASSERT_EQUAL(rc, -EINVAL);
		CU_ASSERT(why[0] != '\0');
		CU_ASSERT_FALSE(has_control_chars(why));
		CU_ASSERT(strlen(why) < 200);
	}
	CU_ASSERT_EQUAL(parse_len(NULL, 0, &req, why, sizeof(why)), -EINVAL);

	/* the messages say which */
	CU_ASSERT_EQUAL(parse("{\"v\":1}", &req, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"cmd\""));
	CU_ASSERT_EQUAL(parse("{\"v\":\"1\",\"cmd\":\"status\"}", &req, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"v\""));
	CU_ASSERT_EQUAL(parse("[]", &req, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "object"));
	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"status\"}x", &req, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "trailing"));
	/* a tiny message buffer is cut, not overrun */
	CU_ASSERT_EQUAL(parse("[]", &req, why, 4), -EINVAL);
	CU_ASSERT_EQUAL(strlen(why), 3);
}

static void test_parse_oversized(void)
{
	static const char object[] = "{\"v\":1,\"cmd\":\"ping\"}";
	char *line = malloc(HY_CONTROL_MAX_LINE + 1);
	struct hy_control_request req;
	char why[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	memset(line, ' ', HY_CONTROL_MAX_LINE + 1);
	memcpy(line, object, sizeof(object) - 1);
	CU_ASSERT_EQUAL(parse_len(line, HY_CONTROL_MAX_LINE + 1, &req, why, sizeof(why)), -E2BIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "limit"));
	/* the limit counts the newline: a line of MAX_LINE bytes plus "\n" is over */
	CU_ASSERT_EQUAL(parse_len(line, HY_CONTROL_MAX_LINE, &req, why, sizeof(why)), -E2BIG);
	CU_ASSERT_EQUAL(parse_len(line, HY_CONTROL_MAX_LINE - 1, &req, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(req.command, HY_CONTROL_PING);
	/* garbage that big is refused for its size before it is parsed */
	memset(line, '[', HY_CONTROL_MAX_LINE + 1);
	CU_ASSERT_EQUAL(parse_len(line, HY_CONTROL_MAX_LINE + 1, &req, why, sizeof(why)), -E2BIG);
	/* deep nesting under the limit is malformed, not a crash */
	CU_ASSERT_EQUAL(parse_len(line, 10000, &req, why, sizeof(why)), -EINVAL);
	free(line);
}

static void test_parse_version(void)
{
	struct hy_control_request req;
	char why[256];

	CU_ASSERT_EQUAL(parse("{\"v\":2,\"cmd\":\"status\"}", &req, why, sizeof(why)), -EPROTO);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "version 2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "version 1"));
	CU_ASSERT_EQUAL(parse("{\"v\":0,\"cmd\":\"status\"}", &req, why, sizeof(why)), -EPROTO);
	CU_ASSERT_EQUAL(parse("{\"v\":-1,\"cmd\":\"status\"}", &req, why, sizeof(why)), -EPROTO);
	CU_ASSERT_EQUAL(parse("{\"v\":99999999999,\"cmd\":\"status\"}", &req, why, sizeof(why)),
			-EPROTO);
	/* another version may have other commands: the version is checked first */
	CU_ASSERT_EQUAL(parse("{\"v\":2,\"cmd\":\"frob\"}", &req, why, sizeof(why)), -EPROTO);
	CU_ASSERT_EQUAL(parse("{\"v\":2}", &req, why, sizeof(why)), -EPROTO);
}

static void test_parse_unknown_command(void)
{
	struct hy_control_request req;
	char why[256];

	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"frob\"}", &req, why, sizeof(why)), -ENOSYS);
	CU_ASSERT_STRING_EQUAL(why, "unknown command \"frob\"");
	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"\"}", &req, why, sizeof(why)), -ENOSYS);
	CU_ASSERT_STRING_EQUAL(why, "unknown command \"\"");
	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"STATUS\"}", &req, why, sizeof(why)), -ENOSYS);
	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"status \"}", &req, why, sizeof(why)), -ENOSYS);
	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"stat\"}", &req, why, sizeof(why)), -ENOSYS);
	/* an escaped NUL does not end the name early */
	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"status\\u0000x\"}", &req, why, sizeof(why)),
			-ENOSYS);
	CU_ASSERT_FALSE(has_control_chars(why));
	/* a terminal escape in the name is not passed on */
	CU_ASSERT_EQUAL(parse("{\"v\":1,\"cmd\":\"\\u001b[31mred\\n\"}", &req, why, sizeof(why)),
			-ENOSYS);
	CU_ASSERT_FALSE(has_control_chars(why));
}

static void test_hostile_command_not_echoed(void)
{
	static const char head[] = "{\"v\":1,\"cmd\":\"";
	size_t n = 10000, len = 0;
	char *line = malloc(sizeof(head) + 2 * n + 8);
	struct hy_control_request req;
	char why[HY_CONTROL_MAX_LINE];
	const char *dots;

	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	memcpy(line, head, sizeof(head) - 1);
	len = sizeof(head) - 1;
	memset(line + len, 'A', n);
	len += n;
	memcpy(line + len, "\"}", 2);
	len += 2;
	CU_ASSERT_EQUAL(parse_len(line, len, &req, why, sizeof(why)), -ENOSYS);
	CU_ASSERT(strlen(why) < 100);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "AAAA"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "...\""));

	/* two-byte characters: the cut falls between characters, never inside one */
	len = sizeof(head) - 1;
	for (size_t i = 0; i < n; i++) {
		line[len++] = '\xc3';
		line[len++] = '\xa9';
	}
	memcpy(line + len, "\"}", 2);
	len += 2;
	CU_ASSERT_EQUAL(parse_len(line, len, &req, why, sizeof(why)), -ENOSYS);
	CU_ASSERT(strlen(why) < 100);
	dots = strstr(why, "...\"");
	CU_ASSERT_PTR_NOT_NULL_FATAL(dots);
	CU_ASSERT_EQUAL((unsigned char)dots[-1], 0xa9);
	CU_ASSERT_EQUAL((unsigned char)dots[-2], 0xc3);
	free(line);
}

static void test_request_round_trip(void)
{
	static const enum hy_control_command commands[] = {HY_CONTROL_STATUS, HY_CONTROL_SYNC,
							   HY_CONTROL_PING};
	struct hy_control_request req;
	char why[256];

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char *line = hy_control_format_request(commands[i]);
		size_t len;

		CU_ASSERT_PTR_NOT_NULL_FATAL(line);
		len = strlen(line);
		CU_ASSERT(len > 1);
		CU_ASSERT_EQUAL(line[len - 1], '\n');
		CU_ASSERT_PTR_EQUAL(strchr(line, '\n'), line + len - 1);
		CU_ASSERT_EQUAL(parse_len(line, len - 1, &req, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(req.command, commands[i]);
		CU_ASSERT_EQUAL(req.version, HY_CONTROL_VERSION);
		/* the newline is whitespace too */
		CU_ASSERT_EQUAL(parse_len(line, len, &req, why, sizeof(why)), 0);
		free(line);
	}
	CU_ASSERT_PTR_NULL(hy_control_format_request((enum hy_control_command)42));
}

static void test_result_round_trip(void)
{
	struct json_object *result = json_object_new_object(), *back = NULL, *member;
	char why[256], *line;
	size_t len;

	CU_ASSERT_PTR_NOT_NULL_FATAL(result);
	json_object_object_add(result, "reads", json_object_new_int64(1234567890123LL));
	json_object_object_add(result, "text", json_object_new_string("two\nlines \"quoted\" /"));
	json_object_object_add(result, "list", json_object_new_array());
	line = hy_control_format_result(result); /* takes @result */
	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	len = strlen(line);
	CU_ASSERT_EQUAL(line[len - 1], '\n');
	CU_ASSERT_PTR_EQUAL(strchr(line, '\n'), line + len - 1);
	CU_ASSERT_EQUAL(hy_control_parse_response(line, len - 1, &back, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_TRUE(json_object_object_get_ex(back, "reads", &member));
	CU_ASSERT_EQUAL(json_object_get_int64(member), 1234567890123LL);
	CU_ASSERT_TRUE(json_object_object_get_ex(back, "text", &member));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(member), "two\nlines \"quoted\" /");
	json_object_put(back);
	free(line);

	/* no result is an empty one */
	line = hy_control_format_result(NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	CU_ASSERT_EQUAL(hy_control_parse_response(line, strlen(line), &back, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_EQUAL(json_object_object_length(back), 0);
	json_object_put(back);
	free(line);
}

static void test_error_response(void)
{
	struct json_object *back = (struct json_object *)&back;
	char why[256], small[8], *line;

	line = hy_control_format_error("unknown command \"frob\"");
	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	CU_ASSERT_PTR_EQUAL(strchr(line, '\n'), line + strlen(line) - 1);
	CU_ASSERT_EQUAL(hy_control_parse_response(line, strlen(line) - 1, &back, why, sizeof(why)),
			-EREMOTEIO);
	CU_ASSERT_PTR_NULL(back);
	CU_ASSERT_STRING_EQUAL(why, "unknown command \"frob\"");
	/* a short buffer gets the start of the text */
	CU_ASSERT_EQUAL(hy_control_parse_response(line, strlen(line), &back, small, sizeof(small)),
			-EREMOTEIO);
	CU_ASSERT_STRING_EQUAL(small, "unknown");
	free(line);

	/* the daemon's text reaches a terminal: control characters are replaced */
	line = hy_control_format_error("bad\n\x1b[2Jthing");
	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	CU_ASSERT_PTR_EQUAL(strchr(line, '\n'), line + strlen(line) - 1);
	CU_ASSERT_EQUAL(hy_control_parse_response(line, strlen(line), &back, why, sizeof(why)),
			-EREMOTEIO);
	CU_ASSERT_STRING_EQUAL(why, "bad??[2Jthing");
	free(line);

	/* a huge message still makes a line the peer accepts */
	{
		char *huge = malloc(HY_CONTROL_MAX_LINE * 2);

		CU_ASSERT_PTR_NOT_NULL_FATAL(huge);
		memset(huge, '\x01', HY_CONTROL_MAX_LINE * 2 - 1);
		huge[HY_CONTROL_MAX_LINE * 2 - 1] = '\0';
		line = hy_control_format_error(huge);
		CU_ASSERT_PTR_NOT_NULL_FATAL(line);
		CU_ASSERT(strlen(line) <= HY_CONTROL_MAX_LINE);
		CU_ASSERT_EQUAL(
			hy_control_parse_response(line, strlen(line) - 1, &back, why, sizeof(why)),
			-EREMOTEIO);
		free(line);
		free(huge);
	}
}

static void test_result_too_big(void)
{
	struct json_object *result = json_object_new_object(), *back;
	char *big = malloc(HY_CONTROL_MAX_LINE + 1), why[256], *line;

	CU_ASSERT_PTR_NOT_NULL_FATAL(result);
	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	memset(big, 'x', HY_CONTROL_MAX_LINE);
	big[HY_CONTROL_MAX_LINE] = '\0';
	json_object_object_add(result, "big", json_object_new_string(big));
	free(big);
	line = hy_control_format_result(result);
	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	CU_ASSERT(strlen(line) <= HY_CONTROL_MAX_LINE);
	CU_ASSERT_EQUAL(hy_control_parse_response(line, strlen(line) - 1, &back, why, sizeof(why)),
			-EREMOTEIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "limit"));
	free(line);
}

static void test_parse_response_malformed(void)
{
	static const char *const invalid[] = {
		"",
		"{",
		"[]",
		"null",
		"{\"v\":1}",
		"{\"ok\":true,\"result\":{}}",
		"{\"v\":\"1\",\"ok\":true,\"result\":{}}",
		"{\"v\":1,\"ok\":1,\"result\":{}}",
		"{\"v\":1,\"ok\":\"true\",\"result\":{}}",
		"{\"v\":1,\"ok\":true}",
		"{\"v\":1,\"ok\":true,\"result\":[]}",
		"{\"v\":1,\"ok\":true,\"result\":null}",
		"{\"v\":1,\"ok\":false}",
		"{\"v\":1,\"ok\":false,\"error\":7}",
		"{\"v\":1,\"ok\":true,\"result\":{}} x",
		"hello",
	};
	struct json_object *back;
	char why[256];

	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		back = (struct json_object *)&back;
		why[0] = '\0';
		CU_ASSERT_EQUAL(hy_control_parse_response(invalid[i], strlen(invalid[i]), &back,
							  why, sizeof(why)),
				-EINVAL);
		CU_ASSERT_PTR_NULL(back);
		CU_ASSERT(why[0] != '\0');
	}
	{
		static const char v2[] = "{\"v\":2,\"ok\":true,\"result\":{}}";

		CU_ASSERT_EQUAL(
			hy_control_parse_response(v2, sizeof(v2) - 1, &back, why, sizeof(why)),
			-EPROTO);
	}
	CU_ASSERT_PTR_NULL(back);
	CU_ASSERT_EQUAL(
		hy_control_parse_response("x", HY_CONTROL_MAX_LINE + 1, &back, why, sizeof(why)),
		-E2BIG);
	CU_ASSERT_PTR_NULL(back);
}

static void test_socket_path(void)
{
	static const char want[] = "/proc/self/fd/7/" HY_CONTROL_SOCKET;
	char buf[128];

	CU_ASSERT_EQUAL(hy_control_socket_path(7, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, want);
	CU_ASSERT_EQUAL(hy_control_socket_path(7, buf, sizeof(want)), 0);
	CU_ASSERT_STRING_EQUAL(buf, want);
	CU_ASSERT_EQUAL(hy_control_socket_path(7, buf, sizeof(want) - 1), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(hy_control_socket_path(2147483647, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "/proc/self/fd/2147483647/" HY_CONTROL_SOCKET);
	CU_ASSERT_EQUAL(hy_control_socket_path(7, buf, 4), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(hy_control_socket_path(-1, buf, sizeof(buf)), -EBADF);
	/* fits in sun_path whatever the descriptor */
	CU_ASSERT(sizeof("/proc/self/fd/2147483647/" HY_CONTROL_SOCKET) <=
		  sizeof(((struct sockaddr_un *)0)->sun_path));
}

/*
 * A server for one connection, in a state folder deeper than sun_path
 * allows, bound through /proc/self/fd like the daemon.
 */
enum server_mode {
	REPLY,	       /* read the request, answer with @reply */
	REPLY_SLOWLY,  /* the same, one byte per send() */
	SILENT,	       /* read the request, never answer, wait for the hang-up */
	HANG_UP,       /* read the request, close */
	CLOSE_AT_ONCE, /* close without reading */
	FLOOD,	       /* answer with more than a line can hold, no newline */
};

struct server {
	char *tmp; /* the temporary folder */
	char *dir; /* the state folder in it */
	int dir_fd;
	int listen_fd;
	enum server_mode mode;
	const char *reply;
	char request[512];
	size_t request_len;
	pthread_t thread;
	bool running;
};

static void send_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static void *serve_one(void *arg)
{
	struct server *s = arg;
	char c, *flood;
	int fd;

	do {
		fd = accept(s->listen_fd, NULL, NULL);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return NULL;
	if (s->mode != CLOSE_AT_ONCE) {
		while (s->request_len < sizeof(s->request) - 1 && recv(fd, &c, 1, 0) == 1) {
			s->request[s->request_len++] = c;
			if (c == '\n')
				break;
		}
	}
	switch (s->mode) {
	case REPLY:
		send_all(fd, s->reply, strlen(s->reply));
		break;
	case REPLY_SLOWLY:
		for (const char *p = s->reply; *p; p++)
			send_all(fd, p, 1);
		break;
	case SILENT:
		while (recv(fd, &c, 1, 0) > 0)
			;
		break;
	case FLOOD:
		flood = malloc(2 * HY_CONTROL_MAX_LINE);
		if (flood) {
			memset(flood, 'x', 2 * HY_CONTROL_MAX_LINE);
			send_all(fd, flood, 2 * HY_CONTROL_MAX_LINE);
			free(flood);
		}
		break;
	case HANG_UP:
	case CLOSE_AT_ONCE:
		break;
	}
	close(fd);
	return NULL;
}

/* Makes the state folder; with @listening, a socket in it. */
static int server_setup(struct server *s, bool bound, bool listening)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	char name[201];

	memset(s, 0, sizeof(*s));
	s->dir_fd = s->listen_fd = -1;
	s->tmp = hy_test_tmpdir();
	if (!s->tmp)
		return -1;
	memset(name, 'd', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	if (asprintf(&s->dir, "%s/%s", s->tmp, name) < 0)
		return -1;
	if (mkdir(s->dir, 0700) != 0)
		return -1;
	s->dir_fd = open(s->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->dir_fd < 0)
		return -1;
	if (!bound)
		return 0;
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0)
		return -1;
	if (hy_control_socket_path(s->dir_fd, addr.sun_path, sizeof(addr.sun_path)) != 0)
		return -1;
	if (bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
		return -1;
	if (listening && listen(s->listen_fd, 4) != 0)
		return -1;
	return 0;
}

static int server_start(struct server *s, enum server_mode mode, const char *reply)
{
	s->mode = mode;
	s->reply = reply;
	if (pthread_create(&s->thread, NULL, serve_one, s) != 0)
		return -1;
	s->running = true;
	return 0;
}

static void server_finish(struct server *s)
{
	if (s->running)
		pthread_join(s->thread, NULL);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	hy_test_rmtree(s->tmp);
	free(s->dir);
	free(s->tmp);
}

static void test_call_round_trip(void)
{
	struct server s;
	struct json_object *result = NULL, *member;
	struct hy_control_request req;
	char why[256];

	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, true), 0);
	/* too deep for sun_path: only the /proc/self/fd path reaches it */
	CU_ASSERT(strlen(s.dir) >= sizeof(((struct sockaddr_un *)0)->sun_path));
	CU_ASSERT_EQUAL_FATAL(
		server_start(&s, REPLY, "{\"v\":1,\"ok\":true,\"result\":{\"pong\":true}}\n"), 0);
	CU_ASSERT_EQUAL(hy_control_call(s.dir, HY_CONTROL_PING, 10000, &result, why, sizeof(why)),
			0);
	server_finish(&s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(result);
	CU_ASSERT_TRUE(json_object_object_get_ex(result, "pong", &member));
	CU_ASSERT_TRUE(json_object_get_boolean(member));
	json_object_put(result);
	/* what the server read was one request line for the command */
	CU_ASSERT(s.request_len > 0);
	CU_ASSERT_EQUAL(s.request[s.request_len - 1], '\n');
	CU_ASSERT_EQUAL(parse_len(s.request, s.request_len - 1, &req, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(req.command, HY_CONTROL_PING);

	/* an answer in pieces, and no timeout at all */
	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, true), 0);
	CU_ASSERT_EQUAL_FATAL(
		server_start(&s, REPLY_SLOWLY, "{\"v\":1,\"ok\":true,\"result\":{\"n\":3}}\n"), 0);
	CU_ASSERT_EQUAL(hy_control_call(s.dir, HY_CONTROL_STATUS, 0, &result, why, sizeof(why)), 0);
	server_finish(&s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(result);
	CU_ASSERT_TRUE(json_object_object_get_ex(result, "n", &member));
	CU_ASSERT_EQUAL(json_object_get_int(member), 3);
	json_object_put(result);
	CU_ASSERT_EQUAL(parse_len(s.request, s.request_len - 1, &req, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(req.command, HY_CONTROL_STATUS);
}

static struct json_object *no_status(void *ctx)
{
	(void)ctx;
	return json_object_new_object();
}

/* A server stopped right after it started (the daemon of a mount that is
 * unmounted at once): the stop must reach a loop that may not have begun
 * yet. A loopbreak asked before the loop starts is forgotten by libevent,
 * so this hung the daemon now and then; it would hang here. */
static void test_server_stop_at_once(void)
{
	struct hy_control_handlers handlers = {.status = no_status};
	char *dir = hy_test_tmpdir(), why[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	for (int i = 0; i < 200; i++) {
		struct hy_control_server *srv = NULL;

		CU_ASSERT_EQUAL_FATAL(
			hy_control_server_start(dir, &handlers, &srv, why, sizeof(why)), 0);
		hy_control_server_stop(srv);
	}
	hy_test_rmtree(dir);
	free(dir);
}

/* A policy handler that answers with what it was given: "changed" is the
 * number of "set" strings, "settings" has the first one. */
static struct json_object *echo_policy(void *ctx, struct json_object *request, char *why,
				       size_t why_size)
{
	struct json_object *set = NULL, *result, *settings;
	size_t n = 0;

	(void)ctx;
	if (json_object_object_get_ex(request, "set", &set))
		n = json_object_array_length(set);
	if (n == 0) {
		snprintf(why, why_size, "nothing to set");
		return NULL;
	}
	result = json_object_new_object();
	settings = json_object_new_object();
	json_object_object_add(settings, "first",
			       json_object_get(json_object_array_get_idx(set, 0)));
	json_object_object_add(result, "settings", settings);
	json_object_object_add(result, "changed", json_object_new_int((int)n));
	return result;
}

/* "policy" reaches its handler with its arguments; without one, the
 * answer says the mount has no policy table (and not that it has no BOPT). */
static void test_server_policy(void)
{
	struct hy_control_handlers handlers = {.status = no_status};
	struct hy_control_server *srv = NULL;
	struct json_object *result = NULL, *args, *set, *v = NULL, *settings = NULL;
	char *dir = hy_test_tmpdir(), why[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_EQUAL_FATAL(hy_control_server_start(dir, &handlers, &srv, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_control_call(dir, HY_CONTROL_POLICY, 10000, &result, why, sizeof(why)),
			-EREMOTEIO);
	CU_ASSERT_PTR_NULL(result);
	CU_ASSERT_STRING_EQUAL(why, "this mount has no cache policy table (profile=off)");
	hy_control_server_stop(srv);

	handlers.policy.answer = echo_policy;
	CU_ASSERT_EQUAL_FATAL(hy_control_server_start(dir, &handlers, &srv, why, sizeof(why)), 0);
	args = json_object_new_object();
	set = json_object_new_array();
	CU_ASSERT_PTR_NOT_NULL_FATAL(args);
	CU_ASSERT_PTR_NOT_NULL_FATAL(set);
	json_object_array_add(set, json_object_new_string("random-consumer.write=back"));
	json_object_array_add(set, json_object_new_string("unknown.evict=late"));
	json_object_object_add(args, "set", set);
	json_object_object_add(args, "reset", json_object_new_boolean(1));
	CU_ASSERT_EQUAL(hy_control_call_args(dir, HY_CONTROL_POLICY, args, 10000, &result, why,
					     sizeof(why)),
			0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(result);
	CU_ASSERT_TRUE(json_object_object_get_ex(result, "changed", &v));
	CU_ASSERT_EQUAL(json_object_get_int(v), 2);
	CU_ASSERT_TRUE(json_object_object_get_ex(result, "settings", &settings));
	CU_ASSERT_TRUE(json_object_object_get_ex(settings, "first", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "random-consumer.write=back");
	json_object_put(result);
	/* the handler's own message comes back as the error */
	CU_ASSERT_EQUAL(hy_control_call(dir, HY_CONTROL_POLICY, 10000, &result, why, sizeof(why)),
			-EREMOTEIO);
	CU_ASSERT_STRING_EQUAL(why, "nothing to set");
	json_object_put(args);
	hy_control_server_stop(srv);
	hy_test_rmtree(dir);
	free(dir);
}

static void test_request_arguments(void)
{
	struct json_object *args = json_object_new_object(), *v;
	struct hy_control_request req;
	char why[256], *line;

	CU_ASSERT_PTR_NOT_NULL_FATAL(args);
	json_object_object_add(args, "path", json_object_new_string("dir/file"));
	json_object_object_add(args, "cmd", json_object_new_string("status")); /* ignored */
	json_object_object_add(args, "v", json_object_new_int(9));	       /* ignored */
	line = hy_control_format_request_args(HY_CONTROL_EXPLAIN, args);
	json_object_put(args);
	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	CU_ASSERT_EQUAL_FATAL(
		hy_control_parse_request(line, strlen(line) - 1, &req, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(req.command, HY_CONTROL_EXPLAIN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req.object);
	CU_ASSERT_TRUE(json_object_object_get_ex(req.object, "path", &v));
	CU_ASSERT_STRING_EQUAL(json_object_get_string(v), "dir/file");
	hy_control_request_clear(&req);
	CU_ASSERT_PTR_NULL(req.object);
	free(line);
	/* the new commands have names both ends agree on */
	CU_ASSERT_STRING_EQUAL(hy_control_command_name(HY_CONTROL_REORGANIZE), "reorganize");
	CU_ASSERT_STRING_EQUAL(hy_control_command_name(HY_CONTROL_PROGRESS), "progress");
	CU_ASSERT_STRING_EQUAL(hy_control_command_name(HY_CONTROL_EXPLAIN), "explain");
	CU_ASSERT_STRING_EQUAL(hy_control_command_name(HY_CONTROL_FLUSH), "flush");
	CU_ASSERT_STRING_EQUAL(hy_control_command_name(HY_CONTROL_POLICY), "policy");
}

static void test_call_error_response(void)
{
	struct server s;
	struct json_object *result = NULL;
	char why[256];

	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, true), 0);
	CU_ASSERT_EQUAL_FATAL(
		server_start(&s, REPLY,
			     "{\"v\":1,\"ok\":false,\"error\":\"the disk is on fire\"}\n"),
		0);
	CU_ASSERT_EQUAL(hy_control_call(s.dir, HY_CONTROL_SYNC, 10000, &result, why, sizeof(why)),
			-EREMOTEIO);
	CU_ASSERT_PTR_NULL(result);
	CU_ASSERT_STRING_EQUAL(why, "the disk is on fire");
	server_finish(&s);
}

static void test_call_no_server(void)
{
	struct server s;
	struct json_object *result = NULL;
	char why[512], want[512];
	int rc;

	/* a state folder without a socket */
	CU_ASSERT_EQUAL_FATAL(server_setup(&s, false, false), 0);
	rc = hy_control_call(s.dir, HY_CONTROL_PING, 10000, &result, why, sizeof(why));
	CU_ASSERT(rc == -ENOENT || rc == -ECONNREFUSED);
	CU_ASSERT_PTR_NULL(result);
	snprintf(want, sizeof(want), "no hybridfs daemon is listening in \"%s\"", s.dir);
	CU_ASSERT_STRING_EQUAL(why, want);
	server_finish(&s);

	/* a socket that nobody listens on, as a dead daemon leaves */
	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, false), 0);
	rc = hy_control_call(s.dir, HY_CONTROL_PING, 10000, &result, why, sizeof(why));
	CU_ASSERT(rc == -ENOENT || rc == -ECONNREFUSED);
	snprintf(want, sizeof(want), "no hybridfs daemon is listening in \"%s\"", s.dir);
	CU_ASSERT_STRING_EQUAL(why, want);
	server_finish(&s);

	/* no state folder at all */
	rc = hy_control_call("/nonexistent/hybridfs-state", HY_CONTROL_PING, 10000, &result, why,
			     sizeof(why));
	CU_ASSERT_EQUAL(rc, -ENOENT);
	CU_ASSERT_STRING_EQUAL(
		why, "no hybridfs daemon is listening in \"/nonexistent/hybridfs-state\"");
	CU_ASSERT_EQUAL(hy_control_call("", HY_CONTROL_PING, 0, &result, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_EQUAL(
		hy_control_call("/tmp", (enum hy_control_command)42, 0, &result, why, sizeof(why)),
		-EINVAL);
}

/* A socket in the state folder whose listener is another user's process
 * (not root): hybridctl must not send it requests nor believe its answers
 * (issue 16, finding 13). The listener binds as root, then becomes
 * nobody before listen(), the moment SO_PEERCRED records. */
static void test_call_foreign_daemon(void)
{
	struct server s;
	struct json_object *result = NULL;
	char why[512], byte = 0;
	int ready[2], status;
	pid_t pid;
	int rc;

	if (geteuid() != 0) {
		fprintf(stderr, "(skipped: needs root) ");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, false), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(ready), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		static const char answer[] = "{\"v\":1,\"ok\":true,\"result\":{\"pong\":true}}\n";
		char buf[512];
		int c;

		close(ready[0]);
		if (setgid(65534) != 0 || setuid(65534) != 0 || listen(s.listen_fd, 4) != 0)
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		c = accept(s.listen_fd, NULL, NULL);
		if (c < 0)
			_exit(1);
		if (read(c, buf, sizeof(buf)) < 0 || write(c, answer, sizeof(answer) - 1) < 0)
			_exit(1);
		close(c);
		_exit(0);
	}
	close(ready[1]);
	CU_ASSERT_EQUAL(read(ready[0], &byte, 1), 1);
	close(ready[0]);
	rc = hy_control_call(s.dir, HY_CONTROL_PING, 10000, &result, why, sizeof(why));
	CU_ASSERT_EQUAL(rc, -EACCES);
	CU_ASSERT_PTR_NULL(result);
	if (result)
		json_object_put(result);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "uid 65534"));
	if (rc != -EACCES)
		fprintf(stderr, "\nforeign daemon: rc %d (%s)\n", rc, why);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	server_finish(&s);
}

static void test_call_timeout(void)
{
	struct server s;
	struct json_object *result = NULL;
	char why[512];

	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, true), 0);
	CU_ASSERT_EQUAL_FATAL(server_start(&s, SILENT, NULL), 0);
	CU_ASSERT_EQUAL(hy_control_call(s.dir, HY_CONTROL_SYNC, 200, &result, why, sizeof(why)),
			-ETIMEDOUT);
	CU_ASSERT_PTR_NULL(result);
	CU_ASSERT(why[0] != '\0');
	server_finish(&s); /* the server ends when the call hangs up */
}

static void test_call_bad_answers(void)
{
	struct server s;
	struct json_object *result = NULL;
	char why[512];
	int rc;

	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, true), 0);
	CU_ASSERT_EQUAL_FATAL(server_start(&s, REPLY, "hello, is it me you're looking for\n"), 0);
	CU_ASSERT_EQUAL(hy_control_call(s.dir, HY_CONTROL_PING, 10000, &result, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NULL(result);
	server_finish(&s);

	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, true), 0);
	CU_ASSERT_EQUAL_FATAL(server_start(&s, REPLY, "{\"v\":7,\"ok\":true,\"result\":{}}\n"), 0);
	CU_ASSERT_EQUAL(hy_control_call(s.dir, HY_CONTROL_PING, 10000, &result, why, sizeof(why)),
			-EPROTO);
	server_finish(&s);

	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, true), 0);
	CU_ASSERT_EQUAL_FATAL(server_start(&s, FLOOD, NULL), 0);
	CU_ASSERT_EQUAL(hy_control_call(s.dir, HY_CONTROL_PING, 10000, &result, why, sizeof(why)),
			-E2BIG);
	CU_ASSERT_PTR_NULL(result);
	server_finish(&s);

	/* a line cut short by the hang-up */
	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, true), 0);
	CU_ASSERT_EQUAL_FATAL(server_start(&s, REPLY, "{\"v\":1,\"ok\":true,"), 0);
	CU_ASSERT_EQUAL(hy_control_call(s.dir, HY_CONTROL_PING, 10000, &result, why, sizeof(why)),
			-ECONNRESET);
	server_finish(&s);

	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, true), 0);
	CU_ASSERT_EQUAL_FATAL(server_start(&s, HANG_UP, NULL), 0);
	CU_ASSERT_EQUAL(hy_control_call(s.dir, HY_CONTROL_PING, 10000, &result, why, sizeof(why)),
			-ECONNRESET);
	CU_ASSERT_PTR_NULL(result);
	server_finish(&s);

	/* a peer gone before the request is written: an error, not SIGPIPE */
	CU_ASSERT_EQUAL_FATAL(server_setup(&s, true, true), 0);
	CU_ASSERT_EQUAL_FATAL(server_start(&s, CLOSE_AT_ONCE, NULL), 0);
	rc = hy_control_call(s.dir, HY_CONTROL_PING, 10000, &result, why, sizeof(why));
	CU_ASSERT(rc == -EPIPE || rc == -ECONNRESET);
	CU_ASSERT_PTR_NULL(result);
	server_finish(&s);
}

int hy_test_add_control(void)
{
	CU_pSuite suite = CU_add_suite("control", NULL, NULL);

	if (!suite)
		return -1;
	if (!CU_add_test(suite, "valid requests", test_parse_valid) ||
	    !CU_add_test(suite, "whitespace around a request", test_parse_whitespace) ||
	    !CU_add_test(suite, "extra members are ignored", test_parse_extra_members) ||
	    !CU_add_test(suite, "malformed requests", test_parse_malformed) ||
	    !CU_add_test(suite, "oversized requests", test_parse_oversized) ||
	    !CU_add_test(suite, "another protocol version", test_parse_version) ||
	    !CU_add_test(suite, "unknown commands", test_parse_unknown_command) ||
	    !CU_add_test(suite, "hostile command not echoed", test_hostile_command_not_echoed) ||
	    !CU_add_test(suite, "request round trip", test_request_round_trip) ||
	    !CU_add_test(suite, "result round trip", test_result_round_trip) ||
	    !CU_add_test(suite, "error responses", test_error_response) ||
	    !CU_add_test(suite, "result over the line limit", test_result_too_big) ||
	    !CU_add_test(suite, "malformed responses", test_parse_response_malformed) ||
	    !CU_add_test(suite, "socket path", test_socket_path) ||
	    !CU_add_test(suite, "call round trip", test_call_round_trip) ||
	    !CU_add_test(suite, "call to another user's daemon", test_call_foreign_daemon) ||
	    !CU_add_test(suite, "call with an error response", test_call_error_response) ||
	    !CU_add_test(suite, "request arguments", test_request_arguments) ||
	    !CU_add_test(suite, "server stopped at once", test_server_stop_at_once) ||
	    !CU_add_test(suite, "policy requests reach their handler", test_server_policy) ||
	    !CU_add_test(suite, "call with no daemon", test_call_no_server) ||
	    !CU_add_test(suite, "call timing out", test_call_timeout) ||
	    !CU_add_test(suite, "call with bad answers", test_call_bad_answers))
		return -1;
	return 0;
}
