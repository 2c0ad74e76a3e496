/* control_server.c - see include/hybridfs/control_server.h. */
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
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <json-c/json.h>

#include "hybridfs/control.h"
#include "hybridfs/control_server.h"
#include "hybridfs/log.h"

#define IDLE_SECONDS 10 /* a connection that sends no full line in this long is closed */
/* Long requests waiting behind the running one, at most; one more is
 * answered "busy" (control_server.h). */
#define MAX_WAITING 16

/* A long request on its way through the worker: parsed on the loop,
 * answered on the worker, its answer written on the loop. */
struct job {
	struct job *next;
	struct bufferevent *bev; /* touched on the loop's thread only */
	struct hy_control_request req;
	char *out; /* the answer line, once the worker has it */
};

struct job_list {
	struct job *head, **tail;
	size_t n;
};

struct hy_control_server {
	struct hy_control_handlers handlers;
	struct event_base *base;
	struct evconnlistener *listener;
	struct event *stop_event; /* made active by stop(), run on the loop */
	struct event *done_event; /* made active by the worker: answers to write */
	pthread_t thread;
	bool thread_started;

	/* the worker and what it shares with the loop */
	pthread_t worker;
	bool worker_started;
	pthread_mutex_t lock; /* protects the rest of this block */
	pthread_cond_t wake;  /* a job waits, or stop */
	struct job_list waiting, done;
	const char *running; /* the command the worker answers now, or NULL */
	bool stopping;
	int dir_fd; /* O_PATH descriptor of the state folder */
	char path[128];
	uid_t uid;
};

static void close_when_sent(struct bufferevent *bev, void *arg)
{
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		bufferevent_free(bev);
}

static void connection_event(struct bufferevent *bev, short events, void *arg)
{
	if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		bufferevent_free(bev);
}

/* Queues @line (consumed) and closes the connection once it is sent. */
static void reply_and_close(struct bufferevent *bev, char *line)
{
	static const char oom[] = "{\"v\":1,\"ok\":false,\"error\":\"out of memory\"}\n";

	bufferevent_disable(bev, EV_READ);
	if (line)
		evbuffer_add(bufferevent_get_output(bev), line, strlen(line));
	else
		evbuffer_add(bufferevent_get_output(bev), oom, sizeof(oom) - 1);
	free(line);
	bufferevent_setcb(bev, NULL, close_when_sent, connection_event, NULL);
	bufferevent_enable(bev, EV_WRITE);
}

/* A handler's answer: its result, or its error. A NULL handler answers
 * @missing when given, else that the mount has no BOPT to @name with. */
static char *from_handler(const struct hy_control_handler *handler, struct json_object *request,
			  const char *name, const char *missing)
{
	struct json_object *result;
	char why[1024];

	if (!handler->answer) {
		if (missing)
			return hy_control_format_error(missing);
		snprintf(why, sizeof(why),
			 "this mount cannot %s: it has no BOPT (bopt=none, or "
			 "profile=off)",
			 name);
		return hy_control_format_error(why);
	}
	snprintf(why, sizeof(why), "out of memory");
	result = handler->answer(handler->ctx, request, why, sizeof(why));
	/* a state file is named by its folder's path, not by the daemon's
	 * /proc/self/fd name for it */
	return result ? hy_control_format_result(result)
		      : hy_control_format_error(hy_log_unalias(why, sizeof(why)));
}

/* The answer to @req, on whichever thread is_long() chose. */
static char *answer(struct hy_control_server *srv, const struct hy_control_request *req)
{
	struct json_object *result;
	char why[256], *out = NULL;
	int rc;

	switch (req->command) {
	case HY_CONTROL_PING:
		out = hy_control_format_result(json_object_new_object());
		break;
	case HY_CONTROL_SYNC:
		/* with the profiler off there is nothing to wait for */
		rc = srv->handlers.sync ? srv->handlers.sync(srv->handlers.ctx) : -ENOSYS;
		if (rc && rc != -ENOSYS) {
			snprintf(why, sizeof(why),
				 "the profiler cannot commit to the state database: %s",
				 strerror(-rc));
			out = hy_control_format_error(why);
		} else
			out = hy_control_format_result(json_object_new_object());
		break;
	case HY_CONTROL_STATUS:
		result = srv->handlers.status(srv->handlers.ctx);
		out = result ? hy_control_format_result(result) : NULL;
		break;
	case HY_CONTROL_REORGANIZE:
		out = from_handler(&srv->handlers.reorganize, req->object, "reorganize", NULL);
		break;
	case HY_CONTROL_PROGRESS:
		out = from_handler(&srv->handlers.progress, req->object, "report a reorganization",
				   NULL);
		break;
	case HY_CONTROL_EXPLAIN:
		out = from_handler(&srv->handlers.explain, req->object, "explain", NULL);
		break;
	case HY_CONTROL_FLUSH:
		out = from_handler(&srv->handlers.flush, req->object, "flush", NULL);
		break;
	case HY_CONTROL_POLICY:
		out = from_handler(&srv->handlers.policy, req->object, "policy",
				   "this mount has no cache policy table (profile=off)");
		break;
	case HY_CONTROL_RULES:
		out = from_handler(&srv->handlers.rules, req->object, "pin or exclude",
				   "this mount knows no files by id (profile=off)");
		break;
	default:
		out = hy_control_format_error("unknown command");
	}
	return out;
}

/* The requests that do I/O or wait (on the profiler, the database, the
 * devices): answered on the worker, so that the loop goes on answering
 * status, progress and ping meanwhile. */
static bool is_long(enum hy_control_command command)
{
	switch (command) {
	case HY_CONTROL_SYNC:
	case HY_CONTROL_REORGANIZE:
	case HY_CONTROL_EXPLAIN:
	case HY_CONTROL_FLUSH:
	case HY_CONTROL_POLICY:
	case HY_CONTROL_RULES:
		return true;
	default:
		return false;
	}
}

static void job_push(struct job_list *list, struct job *job)
{
	job->next = NULL;
	*list->tail = job;
	list->tail = &job->next;
	list->n++;
}

static struct job *job_pop(struct job_list *list)
{
	struct job *job = list->head;

	if (job) {
		list->head = job->next;
		if (!list->head)
			list->tail = &list->head;
		list->n--;
	}
	return job;
}

static void *worker_main(void *arg)
{
	struct hy_control_server *srv = arg;
	struct job *job;

	pthread_setname_np(pthread_self(), "hy-control-long");
	pthread_mutex_lock(&srv->lock);
	while (!srv->stopping) {
		job = job_pop(&srv->waiting);
		if (!job) {
			pthread_cond_wait(&srv->wake, &srv->lock);
			continue;
		}
		srv->running = hy_control_command_name(job->req.command);
		pthread_mutex_unlock(&srv->lock);
		job->out = answer(srv, &job->req);
		hy_control_request_clear(&job->req);
		pthread_mutex_lock(&srv->lock);
		srv->running = NULL;
		job_push(&srv->done, job);
		/* thread-safe: the base was made after evthread_use_pthreads() */
		event_active(srv->done_event, EV_READ, 0);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

/* On the loop: the worker's answers go out. */
static void write_done(evutil_socket_t fd, short what, void *arg)
{
	struct hy_control_server *srv = arg;
	struct job_list done;
	struct job *job;

	(void)fd;
	(void)what;
	pthread_mutex_lock(&srv->lock);
	done = srv->done;
	if (!done.head)
		done.tail = &done.head;
	srv->done.head = NULL;
	srv->done.tail = &srv->done.head;
	srv->done.n = 0;
	pthread_mutex_unlock(&srv->lock);
	while ((job = job_pop(&done))) {
		reply_and_close(job->bev, job->out);
		free(job);
	}
}

/* Hands @req (taken over) to the worker; NULL, or the answer when it cannot
 * wait: too many wait already, or out of memory. */
static char *queue_long(struct hy_control_server *srv, struct bufferevent *bev,
			struct hy_control_request *req)
{
	struct job *job = calloc(1, sizeof(*job));
	char why[256];

	if (!job) {
		hy_control_request_clear(req);
		return hy_control_format_error("out of memory");
	}
	pthread_mutex_lock(&srv->lock);
	if (srv->waiting.n >= MAX_WAITING) {
		snprintf(why, sizeof(why),
			 "busy: a \"%s\" request is running and %zu more wait; ask again once "
			 "they have been answered",
			 srv->running ? srv->running : "long", srv->waiting.n);
		pthread_mutex_unlock(&srv->lock);
		hy_control_request_clear(req);
		free(job);
		return hy_control_format_error(why);
	}
	job->bev = bev;
	job->req = *req;
	job_push(&srv->waiting, job);
	pthread_cond_signal(&srv->wake);
	pthread_mutex_unlock(&srv->lock);
	/* nothing more is read; the answer comes through write_done() */
	bufferevent_disable(bev, EV_READ);
	bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	return NULL;
}

static void connection_read(struct bufferevent *bev, void *arg)
{
	struct hy_control_server *srv = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct hy_control_request req;
	struct evbuffer_ptr eol;
	size_t eol_len = 0, len;
	char *line, msg[256];

	eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_LF);
	if (eol.pos < 0) {
		if (evbuffer_get_length(in) >= HY_CONTROL_MAX_LINE) {
			snprintf(msg, sizeof(msg), "request longer than %d bytes",
				 HY_CONTROL_MAX_LINE - 1);
			reply_and_close(bev, hy_control_format_error(msg));
		}
		return; /* wait for the rest of the line */
	}
	len = (size_t)eol.pos;
	line = (char *)evbuffer_pullup(in, (ssize_t)(len + eol_len));
	if (!line) {
		reply_and_close(bev, NULL);
		return;
	}
	if (hy_control_parse_request(line, len, &req, msg, sizeof(msg))) {
		reply_and_close(bev, hy_control_format_error(msg));
		return;
	}
	if (is_long(req.command)) {
		line = queue_long(srv, bev, &req);
		if (line)
			reply_and_close(bev, line);
		return;
	}
	reply_and_close(bev, answer(srv, &req));
	hy_control_request_clear(&req);
}

static void refuse(int fd, const char *why)
{
	char *line = hy_control_format_error(why);

	/* best effort: the peer is being turned away either way */
	if (line && send(fd, line, strlen(line), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		hy_log_debug("control: could not tell a refused peer why: %s", strerror(errno));
	free(line);
	close(fd);
}

static void accept_connection(struct evconnlistener *listener, evutil_socket_t fd,
			      struct sockaddr *addr, int socklen, void *arg)
{
	struct hy_control_server *srv = arg;
	struct ucred cred;
	socklen_t cred_len = sizeof(cred);
	struct bufferevent *bev;
	struct timeval idle = {IDLE_SECONDS, 0};
	char why[128];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) < 0) {
		refuse(fd, "cannot tell who is asking");
		return;
	}
	if (cred.uid != srv->uid) {
		hy_log(LOG_NOTICE, "control: refused uid %u (pid %d): not the mounting user",
		       (unsigned)cred.uid, (int)cred.pid);
		snprintf(why, sizeof(why), "refused: uid %u is not the mounting user",
			 (unsigned)cred.uid);
		refuse(fd, why);
		return;
	}
	bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		close(fd);
		return;
	}
	/* at most one line is buffered: the read stops past the limit */
	bufferevent_setwatermark(bev, EV_READ, 0, HY_CONTROL_MAX_LINE);
	bufferevent_set_timeouts(bev, &idle, &idle);
	bufferevent_setcb(bev, connection_read, NULL, connection_event, srv);
	bufferevent_enable(bev, EV_READ);
}

/* Runs on the loop's own thread. A loopbreak asked from another thread
 * before the loop starts is forgotten (event_base_loop clears it as it
 * begins); an active event is not: it runs as soon as the loop does. */
static void stop_now(evutil_socket_t fd, short what, void *arg)
{
	struct hy_control_server *srv = arg;

	(void)fd;
	(void)what;
	event_base_loopbreak(srv->base);
}

static void *control_main(void *arg)
{
	struct hy_control_server *srv = arg;

	pthread_setname_np(pthread_self(), "hy-control");
	if (event_base_dispatch(srv->base) < 0)
		hy_log(LOG_ERR,
		       "control: the event loop failed; hybridctl cannot reach this mount");
	return NULL;
}

static int open_dir(const char *state_dir, int *fd, char *path, size_t size, char *why,
		    size_t why_size)
{
	*fd = open(state_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0) {
		int err = errno;

		snprintf(why, why_size, "control: state folder \"%s\": %s", state_dir,
			 strerror(err));
		return -err;
	}
	return hy_control_socket_path(*fd, path, size);
}

int hy_control_server_check(const char *state_dir, char *why, size_t why_size)
{
	struct json_object *result = NULL;
	char ignored[256];
	int rc = hy_control_call(state_dir, HY_CONTROL_PING, 2000, &result, ignored,
				 sizeof(ignored));

	if (result)
		json_object_put(result);
	if (rc == 0 || rc == -EREMOTEIO || rc == -EACCES) {
		snprintf(why, why_size,
			 "state folder \"%s\" is in use by another running hybridfs daemon",
			 state_dir);
		return -EBUSY;
	}
	return 0;
}

int hy_control_server_start(const char *state_dir, const struct hy_control_handlers *handlers,
			    struct hy_control_server **out, char *why, size_t why_size)
{
	struct hy_control_server *srv = calloc(1, sizeof(*srv));
	struct sockaddr_un addr;
	mode_t old_umask;
	int fd = -1, rc;

	*out = NULL;
	if (!srv)
		return -ENOMEM;
	srv->handlers = *handlers;
	srv->uid = geteuid();
	srv->dir_fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->wake, NULL);
	srv->waiting.tail = &srv->waiting.head;
	srv->done.tail = &srv->done.head;
	rc = open_dir(state_dir, &srv->dir_fd, srv->path, sizeof(srv->path), why, why_size);
	if (rc)
		goto fail;
	if (evthread_use_pthreads() < 0) {
		snprintf(why, why_size, "control: libevent has no thread support");
		rc = -ENOSYS;
		goto fail;
	}
	srv->base = event_base_new();
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (!srv->base || fd < 0) {
		rc = fd < 0 ? -errno : -ENOMEM;
		snprintf(why, why_size, "control: cannot make the socket: %s", strerror(-rc));
		goto fail;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	if (strlen(srv->path) >= sizeof(addr.sun_path)) {
		snprintf(why, why_size, "control: socket path \"%s\" is too long", srv->path);
		rc = -ENAMETOOLONG;
		goto fail;
	}
	memcpy(addr.sun_path, srv->path, strlen(srv->path) + 1);
	/* hy_control_server_check() found no live daemon: a socket file left
	 * there is stale */
	unlinkat(srv->dir_fd, HY_CONTROL_SOCKET, 0);
	/* born 0600: no window with a looser mode. umask is the process's,
	 * safe here because no FUSE worker runs yet (the session loop starts
	 * after this server). */
	old_umask = umask(0177);
	rc = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	umask(old_umask);
	if (rc < 0 || listen(fd, 16) < 0) {
		rc = -errno;
		snprintf(why, why_size, "control: cannot listen on \"%s/%s\": %s", state_dir,
			 HY_CONTROL_SOCKET, strerror(-rc));
		goto fail;
	}
	srv->listener = evconnlistener_new(srv->base, accept_connection, srv,
					   LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (!srv->listener) {
		snprintf(why, why_size, "control: cannot watch the socket");
		rc = -ENOMEM;
		goto fail;
	}
	fd = -1; /* the listener owns it */
	srv->stop_event = event_new(srv->base, -1, 0, stop_now, srv);
	srv->done_event = event_new(srv->base, -1, 0, write_done, srv);
	if (!srv->stop_event || !srv->done_event) {
		snprintf(why, why_size, "control: out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	rc = pthread_create(&srv->worker, NULL, worker_main, srv);
	if (rc) {
		snprintf(why, why_size, "control: cannot start the worker: %s", strerror(rc));
		rc = -rc;
		goto fail;
	}
	srv->worker_started = true;
	rc = pthread_create(&srv->thread, NULL, control_main, srv);
	if (rc) {
		snprintf(why, why_size, "control: cannot start the thread: %s", strerror(rc));
		rc = -rc;
		goto fail;
	}
	srv->thread_started = true;
	*out = srv;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	hy_control_server_stop(srv);
	return rc;
}

void hy_control_server_stop(struct hy_control_server *srv)
{
	struct job *job;

	if (!srv)
		return;
	if (srv->thread_started) {
		event_active(srv->stop_event, EV_READ, 0);
		pthread_join(srv->thread, NULL);
	}
	/* the loop has stopped: the worker finishes the request it runs (as the
	 * loop would have, had it run it) and takes no other */
	if (srv->worker_started) {
		pthread_mutex_lock(&srv->lock);
		srv->stopping = true;
		pthread_cond_signal(&srv->wake);
		pthread_mutex_unlock(&srv->lock);
		pthread_join(srv->worker, NULL);
	}
	/* their peers see the connection close unanswered */
	while ((job = job_pop(&srv->waiting))) {
		hy_control_request_clear(&job->req);
		bufferevent_free(job->bev);
		free(job);
	}
	while ((job = job_pop(&srv->done))) {
		free(job->out);
		bufferevent_free(job->bev);
		free(job);
	}
	if (srv->done_event)
		event_free(srv->done_event);
	if (srv->stop_event)
		event_free(srv->stop_event);
	if (srv->listener)
		evconnlistener_free(srv->listener);
	if (srv->base)
		event_base_free(srv->base);
	if (srv->dir_fd >= 0) {
		unlinkat(srv->dir_fd, HY_CONTROL_SOCKET, 0);
		close(srv->dir_fd);
	}
	pthread_cond_destroy(&srv->wake);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
