/*
 * flush_cmd.c - `hybridctl flush [MOUNTPOINT] [--json]`: asks the mount's
 * daemon to write every block written into the cache, then into the BOPT,
 * home (DESIGN.md invariant 3), and says how many went.
 *
 * The flush is one control request that answers when it is done; the
 * daemon answers "status" meanwhile (control_server.h runs long requests
 * off its loop). So on a terminal the request waits in a thread of its
 * own while this one asks for the status every POLL_MS and draws the dirty
 * blocks going home: the cache's (step 1 of 2), then the BOPT's (step 2).
 * The thread owns nothing but its result, which it hands back at the join.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "ctl.h"
#include "hybridfs/cli.h"
#include "hybridfs/control.h"
#include "hybridfs/progress.h"

#define POLL_MS	  200
#define STATUS_MS 5000
#define BLOCK	  4096

enum { OPT_JSON = 1, OPT_QUIET };

static const struct hy_cli_option flush_options[] = {
	{"json", 0, false, OPT_JSON, NULL},
	{"quiet", 'q', false, OPT_QUIET, NULL},
	{0},
};

/* The flush request, run by flush_thread. */
struct flush_call {
	const char *dir;
	struct json_object *result; /* the answer, or NULL */
	char why[1024];
	int rc;
	/* set by the thread when the answer is in; read by the drawer */
	pthread_mutex_t lock;
	bool done; /* protected by lock */
};

static void *flush_thread(void *arg)
{
	struct flush_call *c = arg;

	c->rc = hy_control_call(c->dir, HY_CONTROL_FLUSH, 0, &c->result, c->why, sizeof(c->why));
	pthread_mutex_lock(&c->lock);
	c->done = true;
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static bool call_done(struct flush_call *c)
{
	bool done;

	pthread_mutex_lock(&c->lock);
	done = c->done;
	pthread_mutex_unlock(&c->lock);
	return done;
}

/* The dirty blocks of the cache and of the BOPT, from the daemon's
 * status; false when it does not answer. */
static bool dirty_now(const char *dir, uint64_t *cache, uint64_t *bopt)
{
	struct json_object *st = NULL, *c, *b, *v;
	char why[512];

	*cache = *bopt = 0;
	if (hy_control_call(dir, HY_CONTROL_STATUS, STATUS_MS, &st, why, sizeof(why)) < 0)
		return false;
	if (json_object_object_get_ex(st, "cache", &c) && c &&
	    json_object_object_get_ex(c, "dirty_bytes", &v))
		*cache = json_object_get_uint64(v) / BLOCK;
	if (json_object_object_get_ex(st, "bopt", &b) && b &&
	    json_object_object_get_ex(b, "dirty_blocks", &v))
		*bopt = json_object_get_uint64(v);
	json_object_put(st);
	return true;
}

/* Waits for the thread's answer, drawing what is left dirty meanwhile. */
static void follow(struct flush_call *c, struct hy_progress *bar, uint64_t cache0, uint64_t bopt0)
{
	unsigned step = 0;

	while (!call_done(c)) {
		struct timespec pause = {0, POLL_MS * 1000000L};
		uint64_t cache, bopt;

		nanosleep(&pause, NULL);
		if (call_done(c) || !dirty_now(c->dir, &cache, &bopt))
			continue;
		/* the cache's blocks go first; some go into the BOPT, so its
		 * count can grow before it falls */
		if (cache && step != 1) {
			step = 1;
			hy_progress_begin(bar, "cache home", 1, 2, cache0 * BLOCK);
		} else if (!cache && step != 2) {
			step = 2;
			if (bopt > bopt0)
				bopt0 = bopt;
			hy_progress_begin(bar, "BOPT home", 2, 2, bopt0 * BLOCK);
		}
		if (step == 1)
			hy_progress_update(bar, (cache0 > cache ? cache0 - cache : 0) * BLOCK, 0);
		else
			hy_progress_update(bar, (bopt0 > bopt ? bopt0 - bopt : 0) * BLOCK,
					   bopt0 * BLOCK);
	}
	hy_progress_end(bar);
}

static int flush(const struct hy_cli_command *command, int argc, char **argv)
{
	struct flush_call call = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct json_object *v;
	struct hy_progress bar;
	const char *value;
	char dir[PATH_MAX];
	struct hy_cli cli;
	bool json = false, quiet = false;
	uint64_t cache0 = 0, bopt0 = 0;
	pthread_t thread;
	int rc, id;

	if (hy_cli_begin(&cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(&cli, &id, &value)) > 0) {
		if (id == OPT_JSON)
			json = true;
		else
			quiet = true;
	}
	if (rc < 0)
		return hy_cli_exit_status(rc);
	if (cli.nargs > 1)
		return hy_cli_usage_error(&cli, "one MOUNTPOINT only (\"%s\", \"%s\")", cli.args[0],
					  cli.args[1]);
	rc = hy_ctl_find_state_dir("flush", cli.nargs ? cli.args[0] : NULL, NULL, dir, sizeof(dir));
	if (rc)
		return rc;
	call.dir = dir;
	hy_progress_init(&bar, stderr, quiet, HY_PROGRESS_BYTES, NULL, "step");
	/* no terminal, or nothing to follow: the request on its own */
	if (!bar.on || !dirty_now(dir, &cache0, &bopt0) || (!cache0 && !bopt0) ||
	    pthread_create(&thread, NULL, flush_thread, &call) != 0) {
		flush_thread(&call);
	} else {
		follow(&call, &bar, cache0, bopt0);
		pthread_join(thread, NULL);
	}
	if (call.rc) {
		fprintf(stderr, "hybridctl: flush: %s\n", call.why);
		return 1;
	}
	if (json) {
		/* the daemon's answer: cache_blocks and synced_blocks, each
		 * when the mount has a cache, a BOPT (hybridctl(8)) */
		hy_ctl_print_json(call.result);
		json_object_put(call.result);
		return 0;
	}
	/* the cache first, as the daemon does: its blocks may go into the BOPT */
	if (json_object_object_get_ex(call.result, "cache_blocks", &v))
		printf("%" PRIu64 " blocks written into the cache went home\n",
		       (uint64_t)json_object_get_int64(v));
	if (json_object_object_get_ex(call.result, "synced_blocks", &v))
		printf("%" PRIu64 " blocks written into the BOPT went home\n",
		       (uint64_t)json_object_get_int64(v));
	json_object_put(call.result);
	return 0;
}

const struct hy_cli_command hy_ctl_flush_command = {
	.name = "flush",
	.run = flush,
	.summary = "blocks written into the cache or the BOPT go home now",
	.usage = "usage: hybridctl flush [MOUNTPOINT] [--quiet] [--json]\n"
		 "\n"
		 "  MOUNTPOINT   the mount (the only one running when none is named): every\n"
		 "               block written into its SSD cache and not home yet, then every\n"
		 "               dirty block of its BOPT, is written to its home file\n"
		 "  --quiet, -q  no progress bar\n"
		 "  --json       the daemon's answer: {\"cache_blocks\": N, \"synced_blocks\": N}\n"
		 "A progress bar (the cache's dirty blocks, step 1 of 2, then the BOPT's) is\n"
		 "drawn on standard error when it is a terminal.\n",
	.options = flush_options,
};
