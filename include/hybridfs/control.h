/*
 * control.h - the control protocol between the daemon and hybridctl.
 *
 * What it is for: the daemon listens on a Unix socket in its state folder
 * (HY_CONTROL_SOCKET, mode 0600; peers of another uid are refused by
 * SO_PEERCRED). A client writes one request line and reads one response
 * line; each line is one JSON object ended by "\n", at most
 * HY_CONTROL_MAX_LINE bytes with the newline. The daemon (fs/control_server.c)
 * and hybridctl share this header and lib/control.c, so both ends agree.
 *
 *   request:   {"v": 1, "cmd": "status"}
 *              "v"    protocol version, a number; must be HY_CONTROL_VERSION
 *              "cmd"  "status" | "sync" | "ping" | "reorganize" | "progress"
 *                     | "explain" | "flush" | "policy" | "rules"
 *                     status: counters and the busiest processes
 *                     sync:   answered once every profiler record queued
 *                             before the request is in the database
 *                     ping:   answered at once, for liveness
 *                     reorganize: starts BORG's reorganization; members
 *                             "mode" ("cumulative"|"partial"), "since_ns",
 *                             "gap_ns", "decay", "capacity_blocks" (all
 *                             optional); answered once it has started
 *                     progress: where the last reorganization is
 *                     explain: where the blocks of the file at "path"
 *                             (relative to the mountpoint) are served
 *                             from, run by run (DRAM, SSD, BOPT, home;
 *                             dirty or clean); members "offset" and
 *                             "length" (bytes, optional) narrow it to a
 *                             range; an offset at or past the end is
 *                             refused
 *                     flush:  answered once every block written into the
 *                             BOPT is home
 *                     policy: the workload policy table
 *                             (workload_policy.h), read and changed;
 *                             members (both optional):
 *                             "reset"  true: every setting back to its
 *                                      default first
 *                             "set"    array of strings
 *                                      "CATEGORY.KEY=VALUE", applied in
 *                                      order after the reset; one bad
 *                                      setting refuses the request and
 *                                      changes nothing
 *                             result: {"settings": {"random-consumer.write":
 *                             "around", ...every setting, in the table's
 *                             order...}, "changed": N} (N settings whose
 *                             value differs from before; 0 for a plain
 *                             read); changes are stored in the state
 *                             database and survive remounts
 *                     rules:  pins and excludes (rules.h), read and
 *                             changed; members (all optional), arrays
 *                             of strings: "pin" and "unpin" (paths
 *                             relative to the mount), "exclude" and
 *                             "include" (globs added and removed); all
 *                             checked first: one bad item, or pins past
 *                             their share of the cache store, refuses
 *                             the request and changes nothing. result:
 *                             {"pins": [{"path", "files", "bytes"}...],
 *                             "excludes": [{"pattern", "source"}...],
 *                             "changed": N, and the cache's figures
 *                             (pin.h)}; stored in the state database
 *              other members are ignored (later versions may add some)
 *
 *   response:  {"v": 1, "ok": true, "result": {...}}
 *              {"v": 1, "ok": false, "error": "what was wrong"}
 *
 * A malformed line (not JSON, not an object, "v" or "cmd" missing or of the
 * wrong type), a wrong version, an unknown command or an oversized line
 * each get an error response that says which; the daemon then closes that
 * connection and goes on serving others.
 *
 * Long requests (sync, reorganize, explain, flush, policy, rules) are answered
 * one at a time, in the order they came, while status, progress and ping
 * are answered at once (control_server.h); past 16 long requests waiting,
 * one more gets the error "busy: a \"CMD\" request is running...".
 *
 * The socket path can exceed sun_path (108 bytes) when the state folder is
 * deep, so both ends reach it through "/proc/self/fd/N/control.sock", N an
 * O_PATH descriptor of the state folder (hy_control_socket_path()).
 *
 * Who calls it: fs/control_server.c (the daemon's server), ctl/ (hybridctl.c,
 * mounts.c and each command that asks the daemon), the unit tests, the
 * fuzz target and tests/integration.
 *
 * Memory: the hy_control_format_*() functions return malloc'd strings the
 * caller frees; hy_control_parse_response() gives a json-c object the
 * caller releases with json_object_put(). Locks: none; no shared state.
 */
#ifndef HYBRIDFS_CONTROL_H
#define HYBRIDFS_CONTROL_H

#include <stddef.h>

struct json_object;

#define HY_CONTROL_VERSION  1
#define HY_CONTROL_MAX_LINE 65536
#define HY_CONTROL_SOCKET   "control.sock"

enum hy_control_command {
	HY_CONTROL_STATUS,
	HY_CONTROL_SYNC,
	HY_CONTROL_PING,
	HY_CONTROL_REORGANIZE,
	HY_CONTROL_PROGRESS,
	HY_CONTROL_EXPLAIN,
	HY_CONTROL_FLUSH,
	HY_CONTROL_POLICY,
	HY_CONTROL_RULES,
};

struct hy_control_request {
	int version;
	enum hy_control_command command;
	struct json_object *object; /* the whole request, for its arguments */
};

/* Parses one request line (@len bytes, newline not included, not
 * necessarily NUL-terminated). Returns 0, or with a message in @why:
 * -E2BIG oversized, -EINVAL malformed, -EPROTO another version, -ENOSYS
 * unknown command. On success req->object holds the request object: give
 * it back with hy_control_request_clear(). */
int hy_control_parse_request(const char *line, size_t len, struct hy_control_request *req,
			     char *why, size_t why_size);
void hy_control_request_clear(struct hy_control_request *req);

/* The name of a command ("status"), or NULL. */
const char *hy_control_command_name(enum hy_control_command command);

/* Request and response lines, newline included; NULL when out of memory.
 * hy_control_format_result() takes ownership of @result. */
char *hy_control_format_request(enum hy_control_command command);
/* ... with @args' members (borrowed; "v" and "cmd" are ignored) added. */
char *hy_control_format_request_args(enum hy_control_command command, struct json_object *args);
char *hy_control_format_result(struct json_object *result);
char *hy_control_format_error(const char *why);

/* Parses one response line. Returns 0 with the "result" object in
 * @result (owned by the caller), -EREMOTEIO with the daemon's "error" text
 * in @why, or -EINVAL / -EPROTO / -E2BIG as for requests. */
int hy_control_parse_response(const char *line, size_t len, struct json_object **result, char *why,
			      size_t why_size);

/* Fills @buf with the /proc/self/fd path of the socket in the folder that
 * @state_dir_fd (an O_PATH descriptor) names. */
int hy_control_socket_path(int state_dir_fd, char *buf, size_t size);

/* Client side: connects to the daemon whose state folder is @state_dir,
 * sends @command and waits (up to @timeout_ms; 0 waits forever) for the
 * response. Returns 0 with @result as for hy_control_parse_response(), or
 * a negative errno with a message in @why (-ENOENT or -ECONNREFUSED: no
 * daemon; -EACCES: refused). */
int hy_control_call(const char *state_dir, enum hy_control_command command, int timeout_ms,
		    struct json_object **result, char *why, size_t why_size);
/* ... with arguments (see hy_control_format_request_args()). */
int hy_control_call_args(const char *state_dir, enum hy_control_command command,
			 struct json_object *args, int timeout_ms, struct json_object **result,
			 char *why, size_t why_size);

#endif
