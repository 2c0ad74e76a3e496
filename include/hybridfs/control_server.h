/*
 * control_server.h - the daemon's end of the control socket.
 *
 * What it is for: `hybridctl` talks to a running daemon through a Unix
 * socket in the state folder (protocol: control.h). This module owns that
 * socket and a libevent loop on a named thread, "hy-control", that accepts
 * connections, checks the peer's uid (SO_PEERCRED: only the daemon's own
 * user), reads one request line, answers it through the handlers the
 * daemon gives, and closes. A malformed, oversized, unknown or idle
 * request costs the daemon one error line and the connection, nothing
 * more.
 *
 * Long requests, those that do I/O or wait ("sync", "reorganize",
 * "explain", "flush", "policy"), are answered by a second thread,
 * "hy-control-long", one at a time in the order they came; their answer
 * is written back on the loop's thread. The loop meanwhile goes on
 * answering "status", "progress" and "ping", so a long flush never leaves
 * `hybridctl status` without an answer. A long request that comes while
 * one runs waits its turn (as it did when the loop answered everything);
 * past 16 waiting, one more is answered at once with an error naming the
 * request that runs ("busy: a \"flush\" request is running...").
 *
 * Who calls it: fs/main.c (check before mounting, start after becoming a
 * daemon, stop before unmounting).
 *
 * Memory: the server owns its event base, listener, connections, threads
 * and the requests waiting for the worker. The status handler returns a
 * json-c object that the server releases.
 *
 * Locks: "status", "progress" and "ping" run on the loop's thread, the
 * long requests on the worker's, so a status handler may run while a long
 * one does (never two long ones at once, nor two short ones); the
 * handlers take the locks of what they read (profiler, counters, BORG's
 * progress) and must not hold any across their return. A sync request
 * blocks the worker (not the FUSE workers, nor status) until the profiler
 * has caught up; a flush request until every BOPT write is home; a policy
 * request that changes settings until they are in the state database.
 * Stopping waits for the long request that runs; those still waiting are
 * dropped (their peers see the connection close).
 */
#ifndef HYBRIDFS_CONTROL_SERVER_H
#define HYBRIDFS_CONTROL_SERVER_H

#include <stddef.h>

struct json_object;

/* "reorganize", "progress", "explain", "flush", "policy": the result for
 * @request (the whole request object, borrowed), or NULL with a message
 * in @why. @ctx is the handler's own (what it needs, nothing more). A NULL
 * answer answers that the mount cannot do it. */
struct hy_control_handler {
	struct json_object *(*answer)(void *ctx, struct json_object *request, char *why,
				      size_t why_size);
	void *ctx;
};

struct hy_control_handlers {
	void *ctx; /* status's and sync's */
	/* The "status" result; NULL when out of memory. */
	struct json_object *(*status)(void *ctx);
	/* "sync": 0 once every profiler record so far is in the database. */
	int (*sync)(void *ctx);
	struct hy_control_handler reorganize, progress, explain, flush;
	/* answer NULL when the mount has no policy table (profile=off) */
	struct hy_control_handler policy;
	/* pins and excludes (rules.h); answer NULL with profile=off */
	struct hy_control_handler rules;
};

struct hy_control_server;

/* Before mounting: -EBUSY (with a message) when a live daemon already
 * answers on @state_dir's socket; a stale socket file is fine. */
int hy_control_server_check(const char *state_dir, char *why, size_t why_size);

/* Binds the socket (mode 0600; a stale one is replaced) and starts the
 * control thread. Returns 0 or a negative errno with a message. */
int hy_control_server_start(const char *state_dir, const struct hy_control_handlers *handlers,
			    struct hy_control_server **out, char *why, size_t why_size);

/* Stops the thread, closes every connection, removes the socket. */
void hy_control_server_stop(struct hy_control_server *server);

#endif
