/* control.c - see include/hybridfs/control.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hybridfs/log.h"
#include "hybridfs/control.h"

/* The most bytes of untrusted input a message quotes. */
#define ECHO_MAX 64

/* The longest "error" text a response carries; with JSON escaping (six
 * bytes at worst per byte) it still fits the line limit. */
#define ERROR_TEXT_MAX 4096

static const char *const command_names[] = {
	[HY_CONTROL_STATUS] = "status",	    [HY_CONTROL_SYNC] = "sync",
	[HY_CONTROL_PING] = "ping",	    [HY_CONTROL_REORGANIZE] = "reorganize",
	[HY_CONTROL_PROGRESS] = "progress", [HY_CONTROL_EXPLAIN] = "explain",
	[HY_CONTROL_FLUSH] = "flush",	    [HY_CONTROL_POLICY] = "policy",
	[HY_CONTROL_RULES] = "rules",
};

#define N_COMMANDS (sizeof(command_names) / sizeof(command_names[0]))

/* The length of the longest prefix of @s (at most @max of its @len bytes)
 * that does not cut a UTF-8 sequence in two. */
static size_t utf8_prefix(const char *s, size_t len, size_t max)
{
	size_t n;

	if (len <= max)
		return len;
	n = max;
	/* back up over continuation bytes to the start of a sequence */
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* Copies @len bytes of @s to @out (@out_size bytes, NUL-terminated),
 * control bytes replaced by '?' so a message stays one printable line. */
static void copy_printable(char *out, size_t out_size, const char *s, size_t len)
{
	size_t i;

	if (!out_size)
		return;
	if (len > out_size - 1)
		len = utf8_prefix(s, len, out_size - 1);
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	out[len] = '\0';
}

/* Untrusted text to quote in a message: at most ECHO_MAX bytes of it,
 * printable, with "..." when cut. */
static void quote_untrusted(char out[ECHO_MAX + 4], const char *s, size_t len)
{
	size_t n = utf8_prefix(s, len, ECHO_MAX);

	copy_printable(out, ECHO_MAX + 1, s, n);
	if (n < len)
		strcat(out, "...");
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Whether @s (@len bytes) is well-formed UTF-8 (RFC 3629): no overlong
 * forms, no surrogates, nothing past U+10FFFF, no cut sequence. json-c's
 * own check lets some of these through. */
static bool valid_utf8(const unsigned char *s, size_t len)
{
	size_t i = 0, need;
	unsigned char lo, hi;

	while (i < len) {
		unsigned char c = s[i++];

		lo = 0x80;
		hi = 0xbf;
		if (c < 0x80)
			continue;
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			if (c == 0xe0)
				lo = 0xa0; /* overlong */
			else if (c == 0xed)
				hi = 0x9f; /* surrogates */
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			if (c == 0xf0)
				lo = 0x90; /* overlong */
			else if (c == 0xf4)
				hi = 0x8f; /* past U+10FFFF */
		} else {
			return false;
		}
		if (len - i < need || s[i] < lo || s[i] > hi)
			return false;
		for (i++, need--; need > 0; i++, need--)
			if ((s[i] & 0xc0) != 0x80)
				return false;
	}
	return true;
}

/*
 * The part both parsers share: checks the size, tokenises the line with
 * an explicit length, refuses trailing characters and checks that the
 * line is an object speaking our version. @what is "request" or
 * "response". Returns 0 with the object in @out (caller puts it).
 */
static int parse_line(const char *what, const char *line, size_t len, struct json_object **out,
		      char *why, size_t why_size)
{
	struct json_tokener *tok;
	struct json_object *obj, *v;
	enum json_tokener_error jerr;
	size_t end;
	int64_t version;

	*out = NULL;
	if (len >= HY_CONTROL_MAX_LINE)
		return hy_log_why(-E2BIG, why, why_size, "%s of %zu bytes is over the limit of %d",
				  what, len + 1, HY_CONTROL_MAX_LINE);
	if (!line && len)
		return hy_log_why(-EINVAL, why, why_size, "%s is missing", what);
	if (len && memchr(line, '\0', len))
		return hy_log_why(-EINVAL, why, why_size, "%s contains a nul byte", what);
	if (!valid_utf8((const unsigned char *)line, len))
		return hy_log_why(-EINVAL, why, why_size, "%s is not valid utf-8", what);
	for (end = 0; end < len && is_space(line[end]); end++)
		;
	if (end == len)
		return hy_log_why(-EINVAL, why, why_size, "%s is empty", what);

	tok = json_tokener_new();
	if (!tok)
		return hy_log_why(-ENOMEM, why, why_size, "out of memory parsing the %s", what);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
					    JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, line, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue) {
		/* all taken and more wanted: a NUL tells json-c the text ended,
		 * which completes a bare literal ("null", "1") or fails */
		obj = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		end = len;
	}
	json_tokener_free(tok);

	if (jerr == json_tokener_continue)
		return hy_log_why(-EINVAL, why, why_size, "%s is not valid json: it ends too early",
				  what);
	if (jerr != json_tokener_success) {
		json_object_put(obj);
		return hy_log_why(-EINVAL, why, why_size, "%s is not valid json: %s", what,
				  json_tokener_error_desc(jerr));
	}
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		return hy_log_why(-EINVAL, why, why_size, "%s is not a json object", what);
	}
	for (; end < len; end++) {
		if (!is_space(line[end])) {
			json_object_put(obj);
			return hy_log_why(-EINVAL, why, why_size,
					  "%s has trailing characters after its object", what);
		}
	}

	if (!json_object_object_get_ex(obj, "v", &v)) {
		json_object_put(obj);
		return hy_log_why(-EINVAL, why, why_size, "%s has no \"v\" member", what);
	}
	if (!json_object_is_type(v, json_type_int)) {
		json_object_put(obj);
		return hy_log_why(-EINVAL, why, why_size, "%s member \"v\" is not an integer",
				  what);
	}
	version = json_object_get_int64(v);
	if (version != HY_CONTROL_VERSION) {
		json_object_put(obj);
		return hy_log_why(-EPROTO, why, why_size,
				  "%s is in protocol version %" PRId64
				  ", this end speaks version %d",
				  what, version, HY_CONTROL_VERSION);
	}
	*out = obj;
	return 0;
}

int hy_control_parse_request(const char *line, size_t len, struct hy_control_request *req,
			     char *why, size_t why_size)
{
	struct json_object *obj, *cmd;
	const char *name;
	char quoted[ECHO_MAX + 4];
	size_t name_len, i;
	int rc;

	rc = parse_line("request", line, len, &obj, why, why_size);
	if (rc)
		return rc;
	if (!json_object_object_get_ex(obj, "cmd", &cmd)) {
		json_object_put(obj);
		return hy_log_why(-EINVAL, why, why_size, "request has no \"cmd\" member");
	}
	if (!json_object_is_type(cmd, json_type_string)) {
		json_object_put(obj);
		return hy_log_why(-EINVAL, why, why_size, "request member \"cmd\" is not a string");
	}
	name = json_object_get_string(cmd);
	name_len = (size_t)json_object_get_string_len(cmd);
	for (i = 0; i < N_COMMANDS; i++) {
		if (strlen(command_names[i]) == name_len &&
		    memcmp(command_names[i], name, name_len) == 0) {
			req->version = HY_CONTROL_VERSION;
			req->command = (enum hy_control_command)i;
			req->object = obj; /* its arguments, for the handler */
			return 0;
		}
	}
	quote_untrusted(quoted, name, name_len);
	json_object_put(obj);
	return hy_log_why(-ENOSYS, why, why_size, "unknown command \"%s\"", quoted);
}

void hy_control_request_clear(struct hy_control_request *req)
{
	json_object_put(req->object);
	req->object = NULL;
}

const char *hy_control_command_name(enum hy_control_command command)
{
	if ((unsigned)command >= N_COMMANDS)
		return NULL;
	return command_names[command];
}

/* The line for @obj (which this puts), newline included, or NULL. */
static char *finish_line(struct json_object *obj)
{
	const char *text;
	size_t n;
	char *line = NULL;

	text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (text) {
		n = strlen(text);
		line = malloc(n + 2);
		if (line) {
			memcpy(line, text, n);
			line[n] = '\n';
			line[n + 1] = '\0';
		}
	}
	json_object_put(obj);
	return line;
}

/* {"v": 1} with @key set to @value (which this takes), or NULL. */
static struct json_object *new_message(const char *key, struct json_object *value)
{
	struct json_object *obj = json_object_new_object();
	struct json_object *v = json_object_new_int(HY_CONTROL_VERSION);

	if (!obj || !v || !value || json_object_object_add(obj, "v", v) != 0) {
		json_object_put(obj);
		json_object_put(v);
		json_object_put(value);
		return NULL;
	}
	if (json_object_object_add(obj, key, value) != 0) {
		json_object_put(obj);
		json_object_put(value);
		return NULL;
	}
	return obj;
}

char *hy_control_format_request_args(enum hy_control_command command, struct json_object *args)
{
	const char *name = hy_control_command_name(command);
	struct json_object *obj;

	if (!name)
		return NULL;
	obj = new_message("cmd", json_object_new_string(name));
	if (obj && args) {
		json_object_object_foreach(args, key, value)
		{
			if (strcmp(key, "v") == 0 || strcmp(key, "cmd") == 0)
				continue;
			if (json_object_object_add(obj, key, json_object_get(value)) != 0) {
				json_object_put(obj);
				return NULL;
			}
		}
	}
	return obj ? finish_line(obj) : NULL;
}

char *hy_control_format_request(enum hy_control_command command)
{
	return hy_control_format_request_args(command, NULL);
}

char *hy_control_format_error(const char *why)
{
	struct json_object *obj;
	size_t len;

	if (!why)
		why = "unknown error";
	len = utf8_prefix(why, strlen(why), ERROR_TEXT_MAX);
	obj = new_message("ok", json_object_new_boolean(0));
	if (!obj)
		return NULL;
	if (json_object_object_add(obj, "error", json_object_new_string_len(why, (int)len)) != 0) {
		json_object_put(obj);
		return NULL;
	}
	return finish_line(obj);
}

char *hy_control_format_result(struct json_object *result)
{
	struct json_object *obj;
	char *line, why[128];
	size_t n;

	if (!result)
		result = json_object_new_object();
	obj = new_message("ok", json_object_new_boolean(1));
	if (!obj) {
		json_object_put(result);
		return NULL;
	}
	if (json_object_object_add(obj, "result", result) != 0) {
		json_object_put(obj);
		json_object_put(result);
		return NULL;
	}
	line = finish_line(obj);
	if (!line)
		return NULL;
	/* A line the peer would refuse is no answer: say so instead. */
	n = strlen(line);
	if (n > HY_CONTROL_MAX_LINE) {
		free(line);
		snprintf(why, sizeof(why), "result of %zu bytes is over the limit of %d", n,
			 HY_CONTROL_MAX_LINE);
		return hy_control_format_error(why);
	}
	return line;
}

int hy_control_parse_response(const char *line, size_t len, struct json_object **result, char *why,
			      size_t why_size)
{
	struct json_object *obj, *ok, *member;
	int rc;

	*result = NULL;
	rc = parse_line("response", line, len, &obj, why, why_size);
	if (rc)
		return rc;
	if (!json_object_object_get_ex(obj, "ok", &ok) ||
	    !json_object_is_type(ok, json_type_boolean)) {
		json_object_put(obj);
		return hy_log_why(-EINVAL, why, why_size, "response has no boolean \"ok\" member");
	}
	if (json_object_get_boolean(ok)) {
		if (!json_object_object_get_ex(obj, "result", &member) ||
		    !json_object_is_type(member, json_type_object)) {
			json_object_put(obj);
			return hy_log_why(-EINVAL, why, why_size,
					  "response has \"ok\" true but no \"result\" object");
		}
		*result = json_object_get(member);
		json_object_put(obj);
		return 0;
	}
	if (!json_object_object_get_ex(obj, "error", &member) ||
	    !json_object_is_type(member, json_type_string)) {
		json_object_put(obj);
		return hy_log_why(-EINVAL, why, why_size,
				  "response has \"ok\" false but no \"error\" string");
	}
	/* an empty "error" (found by tests/fuzz/fuzz_control.c) would leave
	 * the caller an error with no words: say that the daemon gave none */
	if (json_object_get_string_len(member) == 0)
		hy_log_why(0, why, why_size, "the daemon gave an empty error");
	else if (why && why_size)
		copy_printable(why, why_size, json_object_get_string(member),
			       (size_t)json_object_get_string_len(member));
	json_object_put(obj);
	return -EREMOTEIO;
}

int hy_control_socket_path(int state_dir_fd, char *buf, size_t size)
{
	int n;

	if (state_dir_fd < 0)
		return -EBADF;
	n = snprintf(buf, size, "/proc/self/fd/%d/%s", state_dir_fd, HY_CONTROL_SOCKET);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before @deadline (0 when none) as poll() takes them:
 * -1 forever, 0 when it has passed. */
static int remaining_ms(int64_t deadline)
{
	int64_t left;

	if (!deadline)
		return -1;
	left = deadline - now_ms();
	if (left <= 0)
		return 0;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Waits for @events on @fd until @deadline. Returns 0, -ETIMEDOUT or a
 * negative errno. */
static int wait_for(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int n;

	for (;;) {
		n = poll(&pfd, 1, remaining_ms(deadline));
		if (n > 0)
			return 0; /* ready, or an error the next call reports */
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Whoever listens in the folder gets our requests (flush, reorganize,
 * policy) and is believed in its answers: it must be the daemon of the
 * user who asks, or root's. A socket of another user's process there
 * (a folder swapped or given by someone else) is refused. */
static int check_peer(const char *state_dir, int sock, char *why, size_t why_size)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return hy_log_why(-errno, why, why_size, "cannot tell who listens in \"%s\": %m",
				  state_dir);
	if (cred.uid != geteuid() && cred.uid != 0)
		return hy_log_why(-EACCES, why, why_size,
				  "refusing the process listening in \"%s\" (pid %d): it runs as "
				  "uid %u, neither you (uid %u) nor root, so it is not your daemon",
				  state_dir, (int)cred.pid, (unsigned)cred.uid,
				  (unsigned)geteuid());
	return 0;
}

static int connect_daemon(const char *state_dir, int dir_fd, int sock, int64_t deadline, char *why,
			  size_t why_size)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval tv;
	int rc, left;

	rc = hy_control_socket_path(dir_fd, addr.sun_path, sizeof(addr.sun_path));
	if (rc)
		return hy_log_why(rc, why, why_size, "cannot name the control socket in \"%s\"",
				  state_dir);
	/* A full listen backlog blocks connect(); SO_SNDTIMEO bounds that. */
	if (deadline) {
		left = remaining_ms(deadline);
		if (left == 0)
			left = 1;
		tv.tv_sec = left / 1000;
		tv.tv_usec = (left % 1000) * 1000;
		setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	do {
		rc = connect(sock, (struct sockaddr *)&addr, sizeof(addr));
	} while (rc < 0 && errno == EINTR);
	if (rc == 0)
		return check_peer(state_dir, sock, why, why_size);
	switch (errno) {
	case ENOENT:
	case ECONNREFUSED:
		return hy_log_why(-errno, why, why_size,
				  "no hybridfs daemon is listening in \"%s\"", state_dir);
	case EACCES:
	case EPERM:
		return hy_log_why(
			-EACCES, why, why_size,
			"refused by the daemon in \"%s\": its socket belongs to another user",
			state_dir);
	case EAGAIN:
		return hy_log_why(-ETIMEDOUT, why, why_size,
				  "the daemon in \"%s\" accepts no connection (timed out)",
				  state_dir);
	default:
		rc = -errno;
		return hy_log_why(rc, why, why_size, "cannot connect to the daemon in \"%s\": %m",
				  state_dir);
	}
}

static int send_all(const char *state_dir, int sock, const char *buf, size_t len, int64_t deadline,
		    char *why, size_t why_size)
{
	ssize_t n;
	int rc;

	while (len > 0) {
		rc = wait_for(sock, POLLOUT, deadline);
		if (rc == -ETIMEDOUT)
			return hy_log_why(rc, why, why_size,
					  "the daemon in \"%s\" did not take the request in time",
					  state_dir);
		if (rc)
			return hy_log_why(rc, why, why_size,
					  "cannot wait for the daemon in \"%s\": %m", state_dir);
		n = send(sock, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			rc = -errno;
			return hy_log_why(rc, why, why_size,
					  "cannot send the request to the daemon in \"%s\": %m",
					  state_dir);
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads one line into @buf (HY_CONTROL_MAX_LINE bytes). Returns its length
 * without the newline, or a negative errno. */
static ssize_t read_line(const char *state_dir, int sock, char *buf, int64_t deadline, char *why,
			 size_t why_size)
{
	size_t have = 0;
	ssize_t n;
	char *nl;
	int rc;

	for (;;) {
		if (have == HY_CONTROL_MAX_LINE)
			return hy_log_why(
				-E2BIG, why, why_size,
				"the response of the daemon in \"%s\" is over the limit of %d "
				"bytes",
				state_dir, HY_CONTROL_MAX_LINE);
		rc = wait_for(sock, POLLIN, deadline);
		if (rc == -ETIMEDOUT)
			return hy_log_why(rc, why, why_size,
					  "the daemon in \"%s\" did not answer in time", state_dir);
		if (rc)
			return hy_log_why(rc, why, why_size,
					  "cannot wait for the daemon in \"%s\": %m", state_dir);
		n = recv(sock, buf + have, HY_CONTROL_MAX_LINE - have, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			rc = -errno;
			return hy_log_why(rc, why, why_size,
					  "cannot read the response of the daemon in \"%s\": %m",
					  state_dir);
		}
		if (n == 0)
			return hy_log_why(
				-ECONNRESET, why, why_size,
				have ? "the daemon in \"%s\" hung up in the middle of its response"
				     : "the daemon in \"%s\" hung up without answering",
				state_dir);
		nl = memchr(buf + have, '\n', (size_t)n);
		if (nl)
			return nl - buf;
		have += (size_t)n;
	}
}

int hy_control_call(const char *state_dir, enum hy_control_command command, int timeout_ms,
		    struct json_object **result, char *why, size_t why_size)
{
	return hy_control_call_args(state_dir, command, NULL, timeout_ms, result, why, why_size);
}

int hy_control_call_args(const char *state_dir, enum hy_control_command command,
			 struct json_object *args, int timeout_ms, struct json_object **result,
			 char *why, size_t why_size)
{
	int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
	int dir_fd = -1, sock = -1, rc;
	char *request = NULL, *buf = NULL;
	ssize_t len;

	*result = NULL;
	if (!state_dir || !*state_dir)
		return hy_log_why(-EINVAL, why, why_size, "no state folder given");
	if (!hy_control_command_name(command))
		return hy_log_why(-EINVAL, why, why_size, "unknown command %d", (int)command);
	request = hy_control_format_request_args(command, args);
	if (!request)
		return hy_log_why(-ENOMEM, why, why_size, "out of memory");
	if (strlen(request) > HY_CONTROL_MAX_LINE) {
		free(request);
		return hy_log_why(-E2BIG, why, why_size,
				  "the request is over the limit of %d bytes", HY_CONTROL_MAX_LINE);
	}

	dir_fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		rc = -errno;
		if (rc == -ENOENT)
			hy_log_why(rc, why, why_size, "no hybridfs daemon is listening in \"%s\"",
				   state_dir);
		else
			hy_log_why(rc, why, why_size, "state folder \"%s\": %m", state_dir);
		goto out;
	}
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		rc = -errno;
		hy_log_why(rc, why, why_size, "cannot make a socket: %m");
		goto out;
	}
	rc = connect_daemon(state_dir, dir_fd, sock, deadline, why, why_size);
	if (rc)
		goto out;
	rc = send_all(state_dir, sock, request, strlen(request), deadline, why, why_size);
	if (rc)
		goto out;
	buf = malloc(HY_CONTROL_MAX_LINE);
	if (!buf) {
		rc = hy_log_why(-ENOMEM, why, why_size, "out of memory");
		goto out;
	}
	len = read_line(state_dir, sock, buf, deadline, why, why_size);
	if (len < 0) {
		rc = (int)len;
		goto out;
	}
	rc = hy_control_parse_response(buf, (size_t)len, result, why, why_size);
out:
	free(buf);
	free(request);
	if (sock >= 0)
		close(sock);
	if (dir_fd >= 0)
		close(dir_fd);
	return rc;
}
