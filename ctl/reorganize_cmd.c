/*
 * reorganize_cmd.c - `hybridctl reorganize`: BORG's reorganization of a
 * mount. With --dry-run the analyzer and planner run here, over the state
 * database opened read-only, and the plan is shown; nothing changes.
 * Without it the mount's daemon is asked to analyze, plan and carry the
 * plan out (borg.h); its progress is shown as a bar on a terminal, and a
 * summary at the end. --all does that for every running mount of the user.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include <json-c/json.h>

#include "ctl.h"
#include "hybridfs/cli.h"
#include "hybridfs/control.h"
#include "hybridfs/progress.h"
#include "hybridfs/reorganize.h"
#include "hybridfs/runtime.h"
#include "hybridfs/state.h"
#include "hybridfs/trace.h"
#include "hybridfs/units.h"

#define DEFAULT_CAPACITY (1ULL << 30) /* bytes to plan for in a dry run with no BOPT */
#define DEFAULT_DECAY	 0.5
#define POLL_MS		 200 /* how often the progress is asked for */

struct reorganize_args {
	const char *mountpoint, *state_dir, *mode, *since;
	uint64_t capacity; /* bytes; 0: the BOPT's read region */
	int64_t gap_ns;	   /* 0: the analyzer's default */
	int64_t since_ns;  /* 0: since the last run */
	double decay;
	unsigned top;
	bool dry_run, all, quiet, json;
	bool always; /* carry the plan out even where the model says it saves nothing */
};

enum {
	OPT_DRY_RUN = 1,
	OPT_ALL,
	OPT_ALWAYS,
	OPT_QUIET,
	OPT_JSON,
	OPT_STATE,
	OPT_MODE,
	OPT_SINCE,
	OPT_CAPACITY,
	OPT_GAP,
	OPT_DECAY,
	OPT_TOP,
};

static const struct hy_cli_option reorganize_options[] = {
	{"dry-run", 0, false, OPT_DRY_RUN, NULL},
	{"all", 0, false, OPT_ALL, NULL},
	{"always", 0, false, OPT_ALWAYS, NULL},
	{"quiet", 'q', false, OPT_QUIET, NULL},
	{"json", 0, false, OPT_JSON, NULL},
	{"state", 0, true, OPT_STATE, "DIR"},
	{"mode", 0, true, OPT_MODE, "cumulative or partial"},
	{"since", 0, true, OPT_SINCE, "a time T"},
	{"capacity", 0, true, OPT_CAPACITY, "a SIZE"},
	{"gap", 0, true, OPT_GAP, "SECONDS"},
	{"decay", 0, true, OPT_DECAY, "a factor F"},
	{"top", 0, true, OPT_TOP, "a number N"},
	{0},
};

static const char *const modes[] = {"cumulative", "partial", NULL};

/* One option's value into @a: 0, or 2 after saying why. */
static int take_option(const struct hy_cli *cli, int id, const char *value,
		       struct reorganize_args *a)
{
	char *end;

	switch (id) {
	case OPT_DRY_RUN:
		a->dry_run = true;
		break;
	case OPT_ALL:
		a->all = true;
		break;
	case OPT_ALWAYS:
		a->always = true;
		break;
	case OPT_QUIET:
		a->quiet = true;
		break;
	case OPT_JSON:
		a->json = true;
		break;
	case OPT_STATE:
		a->state_dir = value;
		break;
	case OPT_MODE:
		if (hy_cli_choice(cli, "--mode", value, modes) < 0)
			return 2;
		a->mode = value;
		break;
	case OPT_SINCE:
		a->since = value;
		break;
	case OPT_CAPACITY:
		if (hy_units_parse_size(value, false, &a->capacity) < 0) {
			fprintf(stderr,
				"hybridctl: reorganize: --capacity \"%s\": not a size "
				"(bytes, or with K, M, G, T)\n",
				value);
			return 2;
		}
		break;
	case OPT_GAP: {
		double g = strtod(value, &end);

		if (*end || end == value || !(g > 0 && g <= 86400.0 * 365)) {
			fprintf(stderr,
				"hybridctl: reorganize: --gap \"%s\": seconds above 0 (a "
				"year at most)\n",
				value);
			return 2;
		}
		a->gap_ns = (int64_t)(g * 1e9);
		break;
	}
	case OPT_DECAY:
		a->decay = strtod(value, &end);
		if (*end || end == value || !(a->decay > 0 && a->decay <= 1)) {
			fprintf(stderr,
				"hybridctl: reorganize: --decay \"%s\": a number above 0 and at "
				"most 1\n",
				value);
			return 2;
		}
		break;
	case OPT_TOP: {
		unsigned long v = strtoul(value, &end, 10);

		if (*end || end == value || value[0] == '-' || v > 100000) {
			fprintf(stderr, "hybridctl: reorganize: --top \"%s\": 0 to 100000\n",
				value);
			return 2;
		}
		a->top = (unsigned)v;
		break;
	}
	}
	return 0;
}

/* -1 when the command line is whole, or the exit status after --help
 * (0) or a usage error (2). */
static int parse_args(const struct hy_cli_command *command, int argc, char **argv,
		      struct reorganize_args *a)
{
	struct hy_cli cli;
	const char *value;
	int rc, id;

	memset(a, 0, sizeof(*a));
	a->mode = "cumulative";
	a->capacity = 0;
	a->decay = DEFAULT_DECAY;
	a->top = 10;
	if (hy_cli_begin(&cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(&cli, &id, &value)) > 0)
		if (take_option(&cli, id, value, a))
			return 2;
	if (rc < 0)
		return hy_cli_exit_status(rc);
	if (cli.nargs > 1)
		return hy_cli_usage_error(&cli, "unexpected argument \"%s\"", cli.args[1]);
	a->mountpoint = cli.nargs ? cli.args[0] : NULL;
	if ((a->mountpoint != NULL) + (a->state_dir != NULL) + a->all > 1)
		return hy_cli_usage_error(&cli, "name one of MOUNTPOINT, --all and --state");
	if (a->state_dir && !a->dry_run) {
		fprintf(stderr,
			"hybridctl: reorganize: --state reads a folder without its daemon, "
			"so it goes only with --dry-run; name the MOUNTPOINT to reorganize\n");
		return 2;
	}
	if (a->since) {
		struct timespec now;
		char why[256];

		clock_gettime(CLOCK_REALTIME, &now);
		if (hy_trace_parse_time(a->since, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec,
					&a->since_ns, why, sizeof(why)) < 0) {
			fprintf(stderr, "hybridctl: reorganize: --since: %s\n", why);
			return 2;
		}
		if (a->since_ns <= 0)
			a->since_ns = 1;
	}
	return -1;
}

static void size_text(uint64_t bytes, char *buf, size_t size)
{
	if (bytes >= (1ULL << 20))
		snprintf(buf, size, "%.1f MiB", (double)bytes / (1 << 20));
	else
		snprintf(buf, size, "%" PRIu64 " KiB", bytes / 1024);
}

static void name_of(sqlite3 *db, uint64_t file_id, char *buf, size_t size)
{
	sqlite3_stmt *st;

	snprintf(buf, size, "?");
	if (sqlite3_prepare_v2(db, "SELECT path FROM files WHERE id = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, (int64_t)file_id);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

/* A number member of @obj, 0 when missing. */
static uint64_t member_u64(struct json_object *obj, const char *key)
{
	struct json_object *v;

	if (!obj || !json_object_object_get_ex(obj, key, &v))
		return 0;
	return (uint64_t)json_object_get_int64(v);
}

/* The mount's BOPT read region in bytes (0: no BOPT), from its status:
 * 0, or the control call's error (no daemon answers; @why says why). */
static int read_region_of(const char *dir, uint64_t *bytes, char *why, size_t why_size)
{
	struct json_object *status = NULL, *bopt;
	int rc = hy_control_call(dir, HY_CONTROL_STATUS, 10000, &status, why, why_size);

	*bytes = 0;
	if (rc == 0 && json_object_object_get_ex(status, "bopt", &bopt) && bopt &&
	    json_object_is_type(bopt, json_type_object))
		*bytes = member_u64(bopt, "read_region_blocks") * 4096;
	json_object_put(status);
	return rc;
}

/* A new object for one mount in --json's "mounts", added to @mounts
 * (NULL: out of memory, and nothing added). */
static struct json_object *mount_entry(struct json_object *mounts, const struct reorganize_args *a,
				       const char *mount, const char *dir)
{
	struct json_object *m = json_object_new_object();

	if (!m)
		return NULL;
	json_object_object_add(m, "mountpoint", mount ? json_object_new_string(mount) : NULL);
	json_object_object_add(m, "state_dir", json_object_new_string(dir));
	json_object_object_add(m, "dry_run", json_object_new_boolean(a->dry_run));
	json_object_object_add(m, "mode", json_object_new_string(a->mode));
	json_object_array_add(mounts, m);
	return m;
}

/* @why as the "error" of a --json entry (none: nothing to do). */
static void note_error(struct json_object *entry, const char *why)
{
	if (entry)
		json_object_object_add(entry, "error", json_object_new_string(why));
}

/* The dry run's plan as JSON (hybridctl(8), reorganize --json). */
static struct json_object *plan_json(sqlite3 *db, const struct hy_reorganize_plan *plan,
				     uint64_t capacity_bytes, unsigned top)
{
	struct json_object *o = json_object_new_object(), *ranges = json_object_new_array();
	char name[4096];

	if (!o || !ranges) {
		json_object_put(o);
		json_object_put(ranges);
		return NULL;
	}
	json_object_object_add(o, "requests", json_object_new_uint64(plan->analyzer.requests));
	json_object_object_add(o, "after_row", json_object_new_int64(plan->after));
	json_object_object_add(o, "last_row", json_object_new_int64(plan->last));
	json_object_object_add(o, "analyze_seconds", json_object_new_double(plan->analyze_seconds));
	json_object_object_add(o, "vertices", json_object_new_uint64(plan->analyzer.vertices));
	json_object_object_add(o, "edges", json_object_new_uint64(plan->analyzer.edges));
	json_object_object_add(o, "splits", json_object_new_uint64(plan->analyzer.splits));
	json_object_object_add(o, "cut_vertices",
			       json_object_new_uint64(plan->analyzer.cut_vertices));
	json_object_object_add(o, "ranges", json_object_new_uint64(plan->count));
	json_object_object_add(o, "planned_blocks", json_object_new_uint64(plan->blocks));
	json_object_object_add(o, "capacity_blocks", json_object_new_uint64(capacity_bytes / 4096));
	json_object_object_add(o, "skipped_ranges", json_object_new_uint64(plan->skipped));
	json_object_object_add(o, "plan_seconds", json_object_new_double(plan->plan_seconds));
	for (size_t i = 0; i < plan->count && i < top; i++) {
		const struct hy_reorganize_range *r = &plan->ranges[i];
		struct json_object *x = json_object_new_object();

		if (!x)
			break;
		name_of(db, r->file_id, name, sizeof(name));
		json_object_object_add(x, "bopt_block", json_object_new_uint64(r->bopt_block));
		json_object_object_add(x, "file_id", json_object_new_uint64(r->file_id));
		json_object_object_add(x, "block", json_object_new_uint64(r->block));
		json_object_object_add(x, "blocks", json_object_new_uint64(r->nblocks));
		json_object_object_add(x, "path", json_object_new_string(name));
		json_object_array_add(ranges, x);
	}
	json_object_object_add(o, "top", ranges);
	return o;
}

/* With @mounts (--json) the plan goes there, else it is printed. */
static int dry_run(const struct reorganize_args *a, struct json_object *mounts)
{
	struct hy_reorganize_params params = {0};
	struct hy_reorganize_plan plan;
	struct hy_state *state = NULL;
	char why[1024], name[4096], used[32], capacity[32], dir[4096];
	uint64_t bytes = a->capacity;
	int rc;

	rc = hy_ctl_find_state_dir("reorganize", a->mountpoint, a->state_dir, dir, sizeof(dir));
	if (rc)
		return rc;
	/* a folder no daemon serves plans for the default capacity */
	if (!bytes && read_region_of(dir, &bytes, why, sizeof(why)) < 0)
		bytes = 0;
	if (!bytes)
		bytes = DEFAULT_CAPACITY;
	rc = hy_ctl_open_log("reorganize", NULL, dir, &state);
	if (rc)
		return rc;
	params.partial = strcmp(a->mode, "partial") == 0;
	params.since_ns = a->since_ns;
	params.gap_ns = a->gap_ns;
	params.decay = a->decay;
	params.capacity_blocks = bytes / 4096;
	if (hy_reorganize_make_plan(state->db, &params, &plan, why, sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: %s\n", why);
		hy_state_close(state);
		return 1;
	}
	if (mounts) {
		struct json_object *m = mount_entry(mounts, a, a->mountpoint, dir);
		struct json_object *o = plan_json(state->db, &plan, bytes, a->top);

		rc = m && o ? 0 : 1;
		if (rc)
			fprintf(stderr, "hybridctl: reorganize: out of memory\n");
		if (m)
			json_object_object_add(m, "plan", o);
		else
			json_object_put(o);
		hy_reorganize_plan_free(&plan);
		hy_state_close(state);
		return rc;
	}
	printf("reorganize, dry run, %s mode: %s\n", a->mode,
	       a->mountpoint ? a->mountpoint : state->dir);
	printf("  analyzed  %" PRIu64 " requests (log rows after %" PRId64 " up to %" PRId64
	       ") in %.3f s\n",
	       plan.analyzer.requests, plan.after, plan.last, plan.analyze_seconds);
	printf("  graph     %" PRIu64 " vertices, %" PRIu64 " edges, %" PRIu64 " splits, %" PRIu64
	       " vertices cut to bound memory\n",
	       plan.analyzer.vertices, plan.analyzer.edges, plan.analyzer.splits,
	       plan.analyzer.cut_vertices);
	size_text(plan.blocks * 4096, used, sizeof(used));
	size_text(bytes, capacity, sizeof(capacity));
	printf("  plan      %zu ranges, %s of %s, %zu skipped, planned in %.3f s\n", plan.count,
	       used, capacity, plan.skipped, plan.plan_seconds);
	if (plan.count && a->top) {
		printf("\n  %12s  %10s  %12s  %8s  %s\n", "BOPT BLOCK", "FILE", "FIRST BLOCK",
		       "BLOCKS", "PATH (in the mount)");
		for (size_t i = 0; i < plan.count && i < a->top; i++) {
			const struct hy_reorganize_range *r = &plan.ranges[i];

			name_of(state->db, r->file_id, name, sizeof(name));
			printf("  %12" PRIu64 "  %10" PRIu64 "  %12" PRIu64 "  %8u  %s\n",
			       r->bopt_block, r->file_id, r->block, r->nblocks, name);
		}
		if (plan.count > a->top)
			printf("  ... %zu more\n", plan.count - a->top);
	}
	printf("\nNothing was changed (--dry-run).\n");
	hy_reorganize_plan_free(&plan);
	hy_state_close(state);
	return 0;
}

/* The daemon's phases in order (borg.h), for "step i of n". */
static const char *const phases[] = {"planning", "dropping", "copying", "checkpointing"};
#define NPHASES (sizeof(phases) / sizeof(phases[0]))

/* One more look at the daemon's progress: a new bar when the phase (or
 * the mount, with --all) changed, else the bar moved on. */
static void show_progress(struct hy_progress *bar, struct json_object *p, unsigned mount_no,
			  unsigned mounts)
{
	const char *phase = json_object_get_string(json_object_object_get(p, "phase"));
	uint64_t total = member_u64(p, "copy_blocks"), done = member_u64(p, "done_blocks");
	unsigned step = 0;
	char label[sizeof(bar->label)];

	if (!phase)
		return;
	for (size_t i = 0; i < NPHASES; i++)
		if (strcmp(phase, phases[i]) == 0)
			step = (unsigned)i + 1;
	if (!step)
		return; /* done, failed: the summary follows */
	/* with --all: which mount, in the label; "step" is the phase's */
	if (mounts > 1)
		snprintf(label, sizeof(label), "%u/%u %s", mount_no, mounts, phase);
	else
		snprintf(label, sizeof(label), "%s", phase);
	if (strcmp(bar->label, label) != 0 || bar->step != step)
		hy_progress_begin(bar, label, step, NPHASES,
				  strcmp(phase, "copying") == 0 ? total * 4096 : 0);
	hy_progress_update(bar, strcmp(phase, "copying") == 0 ? done * 4096 : 0,
			   strcmp(phase, "copying") == 0 ? total * 4096 : 0);
}

/* Asks the daemon at @dir to reorganize and follows it to the end (mount
 * @mount_no of @mounts, for the bar). Returns the exit status; with
 * @skip_no_bopt a mount without a BOPT is noted and passed over (0). With
 * @mounts_json (--json) the daemon's last progress goes there. */
static int reorganize_mount(const struct reorganize_args *a, const char *dir, const char *mount,
			    bool skip_no_bopt, unsigned mount_no, unsigned mounts,
			    struct json_object *mounts_json)
{
	struct json_object *args = json_object_new_object(), *result = NULL, *p = NULL;
	struct json_object *entry = mounts_json ? mount_entry(mounts_json, a, mount, dir) : NULL;
	struct hy_progress bar;
	char why[1024], mib[4][32];
	const char *phase = "";
	uint64_t run, region;
	int rc;

	if (!args || (mounts_json && !entry)) {
		json_object_put(args);
		fprintf(stderr, "hybridctl: out of memory\n");
		return 1;
	}
	if (read_region_of(dir, &region, why, sizeof(why)) < 0) {
		/* no answer is not a mount without a BOPT: exit status 1 */
		json_object_put(args);
		fprintf(stderr, "hybridctl: reorganize: %s: %s\n", mount, why);
		note_error(entry, why);
		return 1;
	}
	if (!region) {
		json_object_put(args);
		if (skip_no_bopt) {
			if (entry)
				json_object_object_add(entry, "skipped",
						       json_object_new_string("no BOPT"));
			else if (!a->quiet)
				printf("%s: no BOPT (bopt=none or profile=off), skipped\n", mount);
			return 0;
		}
		snprintf(why, sizeof(why),
			 "\"%s\" has no BOPT (mounted with bopt=none or profile=off)", mount);
		fprintf(stderr, "hybridctl: reorganize: %s\n", why);
		note_error(entry, why);
		return 2;
	}
	hy_ctl_sync_log(dir);
	json_object_object_add(args, "mode", json_object_new_string(a->mode));
	if (a->since_ns)
		json_object_object_add(args, "since_ns", json_object_new_int64(a->since_ns));
	if (a->gap_ns)
		json_object_object_add(args, "gap_ns", json_object_new_int64(a->gap_ns));
	json_object_object_add(args, "decay", json_object_new_double(a->decay));
	if (a->always)
		json_object_object_add(args, "always", json_object_new_boolean(1));
	if (a->capacity)
		json_object_object_add(args, "capacity_blocks",
				       json_object_new_int64((int64_t)(a->capacity / 4096)));
	rc = hy_control_call_args(dir, HY_CONTROL_REORGANIZE, args, 30000, &result, why,
				  sizeof(why));
	json_object_put(args);
	if (rc) {
		fprintf(stderr, "hybridctl: reorganize: %s: %s\n", mount, why);
		note_error(entry, why);
		return rc == -EREMOTEIO && strstr(why, "capacity") ? 2 : 1;
	}
	run = member_u64(result, "run");
	json_object_put(result);
	hy_progress_init(&bar, stderr, a->quiet, HY_PROGRESS_BYTES, NULL, "step");
	for (;;) {
		struct timespec pause = {0, POLL_MS * 1000000L};

		json_object_put(p);
		p = NULL;
		rc = hy_control_call(dir, HY_CONTROL_PROGRESS, 30000, &p, why, sizeof(why));
		if (rc) {
			hy_progress_end(&bar);
			fprintf(stderr, "hybridctl: reorganize: %s: lost the daemon: %s\n", mount,
				why);
			note_error(entry, why);
			return 1;
		}
		phase = json_object_get_string(json_object_object_get(p, "phase"));
		if (member_u64(p, "run") != run) {
			hy_progress_end(&bar);
			fprintf(stderr,
				"hybridctl: reorganize: %s: another reorganization started "
				"meanwhile\n",
				mount);
			note_error(entry, "another reorganization started meanwhile");
			json_object_put(p);
			return 1;
		}
		show_progress(&bar, p, mount_no, mounts);
		if (phase && (strcmp(phase, "done") == 0 || strcmp(phase, "failed") == 0))
			break;
		nanosleep(&pause, NULL);
	}
	hy_progress_end(&bar);
	if (entry)
		json_object_object_add(entry, "result", json_object_get(p));
	if (strcmp(phase, "failed") == 0) {
		fprintf(stderr, "hybridctl: reorganize: %s: failed: %s\n", mount,
			json_object_get_string(json_object_object_get(p, "error")));
		json_object_put(p);
		return 1;
	}
	if (!a->quiet && !entry) {
		size_text(member_u64(p, "planned_blocks") * 4096, mib[0], sizeof(mib[0]));
		size_text(member_u64(p, "copied_blocks") * 4096, mib[1], sizeof(mib[1]));
		size_text(member_u64(p, "dropped_blocks") * 4096, mib[2], sizeof(mib[2]));
		size_text(member_u64(p, "kept_blocks") * 4096, mib[3], sizeof(mib[3]));
		printf("reorganized %s (%s mode, plan %" PRIu64 ") in %.2f s\n", mount, a->mode,
		       member_u64(p, "generation"),
		       json_object_get_double(json_object_object_get(p, "seconds")));
		printf("  analyzed  %" PRIu64 " requests: %" PRIu64 " vertices, %" PRIu64
		       " edges (%" PRIu64 " vertices cut)\n",
		       member_u64(p, "requests"), member_u64(p, "vertices"), member_u64(p, "edges"),
		       member_u64(p, "cut_vertices"));
		printf("  planned   %" PRIu64 " ranges, %s\n", member_u64(p, "ranges"), mib[0]);
		{
			struct json_object *g = json_object_object_get(p, "model");

			/* what the plan was weighed at (gain.h) */
			if (g)
				printf("  weighed   the period's reads on a model of the disk: "
				       "%.0f ms "
				       "with the plan, %.0f ms as the disk was, %.0f ms with "
				       "nothing "
				       "relocated: %s\n",
				       json_object_get_double(
					       json_object_object_get(g, "planned_ms")),
				       json_object_get_double(
					       json_object_object_get(g, "current_ms")),
				       json_object_get_double(json_object_object_get(g, "home_ms")),
				       json_object_get_string(
					       json_object_object_get(g, "decision")));
		}
		printf("  moved     %s copied, %s dropped, %s kept in place\n", mib[1], mib[2],
		       mib[3]);
		printf("  skipped   %" PRIu64 " ranges (%" PRIu64
		       " blocks: files gone, changed during the copy, or past their end)\n",
		       member_u64(p, "skipped_ranges"), member_u64(p, "skipped_blocks"));
	}
	json_object_put(p);
	return 0;
}

static int reorganize(const struct hy_cli_command *command, int argc, char **argv)
{
	struct hy_runtime_entry *entries;
	struct reorganize_args a;
	struct json_object *root = NULL, *mounts = NULL;
	char dir[4096];
	size_t n;
	int rc, worst = 0;

	rc = parse_args(command, argc, argv, &a);
	if (rc >= 0)
		return rc;
	if (a.json) {
		root = json_object_new_object();
		mounts = json_object_new_array();
		if (!root || !mounts) {
			json_object_put(root);
			json_object_put(mounts);
			fprintf(stderr, "hybridctl: out of memory\n");
			return 1;
		}
		json_object_object_add(root, "mounts", mounts);
	}
	if (a.dry_run && !a.all) {
		worst = dry_run(&a, mounts);
	} else if (!a.all) {
		worst = hy_ctl_find_state_dir("reorganize", a.mountpoint, NULL, dir, sizeof(dir));
		if (!worst)
			worst = reorganize_mount(&a, dir, a.mountpoint ? a.mountpoint : dir, false,
						 1, 1, mounts);
	} else {
		rc = hy_runtime_list(&entries, &n);
		if (rc) {
			fprintf(stderr, "hybridctl: cannot read the runtime folder: %s\n",
				strerror(-rc));
			json_object_put(root);
			return 1;
		}
		if (n == 0 && !a.quiet && !a.json)
			printf("no hybridfs mounts are running\n");
		for (size_t i = 0; i < n; i++) {
			struct reorganize_args one = a;

			one.mountpoint = entries[i].mountpoint;
			rc = a.dry_run ? dry_run(&one, mounts)
				       : reorganize_mount(&a, entries[i].state_dir,
							  entries[i].mountpoint, true,
							  (unsigned)i + 1, (unsigned)n, mounts);
			if (rc > worst)
				worst = rc;
		}
		free(entries);
	}
	/* what was done, also when a mount failed: each says how it went */
	if (root && (worst == 0 || json_object_array_length(mounts) > 0))
		hy_ctl_print_json(root);
	json_object_put(root);
	return worst;
}

const struct hy_cli_command hy_ctl_reorganize_command = {
	.name = "reorganize",
	.run = reorganize,
	.summary = "BORG: hot blocks planned in access order and copied into the BOPT",
	.usage = "usage: hybridctl reorganize [MOUNTPOINT | --all | --state DIR] [--dry-run]\n"
		 "                            [--mode cumulative|partial] [--since T]\n"
		 "                            [--capacity SIZE] [--gap S] [--decay F]\n"
		 "                            [--top N] [--always] [--quiet] [--json]\n"
		 "\n"
		 "  MOUNTPOINT       the mount (the only one running when none is named)\n"
		 "  --all            every running mount of yours, one after the other\n"
		 "  --state DIR      a state folder, read without its daemon (--dry-run only)\n"
		 "  --dry-run        analyze and plan here, show the plan; nothing changes\n"
		 "  --mode M         cumulative (the whole log since the last run, the\n"
		 "                   default) or partial (the period since the last run only)\n"
		 "  --since T        the log since T (-2h, an ISO 8601 time, epoch seconds)\n"
		 "  --capacity SIZE  plan for SIZE bytes (default: the BOPT's read region)\n"
		 "  --gap S          requests S seconds apart are not one another's successors\n"
		 "  --decay F        the weight of older runs' edges, above 0, at most 1 (0.5)\n"
		 "  --top N          the dry run lists the first N ranges (10)\n"
		 "  --always         carry the plan out even where the disk model says it\n"
		 "                   saves nothing\n"
		 "  --quiet, -q      no progress bar, no summary\n"
		 "  --json           the plan (dry run) or the daemon's last progress report\n"
		 "                   as JSON: {\"mounts\": [...]} (hybridctl(8))\n"
		 "A progress bar (step i of 4: planning, dropping, copying, checkpointing;\n"
		 "rate and ETA while copying) is drawn on standard error when it is a terminal.\n",
	.options = reorganize_options,
};
