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
 * Who calls it: fs/main.c (check before mounting, start after becoming a
 * daemon, stop before unmounting).
 *
 * Memory: the server owns its event base, listener, connections and
 * thread. The status handler returns a json-c object that the server
 * releases.
 *
 * Locks: the handlers run on the control thread, one request at a time;
 * they take the locks of what they read (profiler, counters) and must not
 * hold any across their return. A sync request blocks the control thread
 * (not the FUSE workers) until the profiler has caught up; a flush request
 * until every BOPT write is home; a policy request that changes settings
 * until they are in the state database.
 */
#ifndef HYBRIDFS_CONTROL_SERVER_H
#define HYBRIDFS_CONTROL_SERVER_H

#include <stddef.h>

struct json_object;

struct hy_control_handlers {
	void *ctx;
	/* The "status" result; NULL when out of memory. */
	struct json_object *(*status)(void *ctx);
	/* "sync": 0 once every profiler record so far is in the database. */
	int (*sync)(void *ctx);
	/* "reorganize", "progress", "explain", "flush", "policy": the result for
	 * @request (the whole request object, borrowed), or NULL with a message
	 * in @why. NULL handlers answer that the mount cannot do it. */
	struct json_object *(*reorganize)(void *ctx, struct json_object *request, char *why,
					  size_t why_size);
	struct json_object *(*progress)(void *ctx, struct json_object *request, char *why,
					size_t why_size);
	struct json_object *(*explain)(void *ctx, struct json_object *request, char *why,
				       size_t why_size);
	struct json_object *(*flush)(void *ctx, struct json_object *request, char *why,
				     size_t why_size);
	/* NULL when the mount has no policy table (profile=off) */
	struct json_object *(*policy)(void *ctx, struct json_object *request, char *why,
				      size_t why_size);
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
