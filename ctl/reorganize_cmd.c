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

#include "ctl.h"
#include <json-c/json.h>
#include <unistd.h>

#include "hybridfs/control.h"
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
	bool dry_run, all, quiet;
	bool always; /* carry the plan out even where the model says it saves nothing */
};

static void usage(FILE *out)
{
	fprintf(out, "usage: hybridctl reorganize [MOUNTPOINT | --all | --state DIR] [--dry-run]\n"
		     "                            [--mode cumulative|partial] [--since T]\n"
		     "                            [--capacity SIZE] [--gap S] [--decay F]\n"
		     "                            [--top N] [--always] [--quiet]\n");
}

static int parse_args(int argc, char **argv, struct reorganize_args *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = "cumulative";
	a->capacity = 0;
	a->decay = DEFAULT_DECAY;
	a->top = 10;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (strcmp(arg, "--dry-run") == 0) {
			a->dry_run = true;
		} else if (strcmp(arg, "--all") == 0) {
			a->all = true;
		} else if (strcmp(arg, "--always") == 0) {
			a->always = true;
		} else if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
			a->quiet = true;
		} else if (strcmp(arg, "--state") == 0 && next) {
			a->state_dir = argv[++i];
		} else if (strcmp(arg, "--mode") == 0 && next) {
			a->mode = argv[++i];
			if (strcmp(a->mode, "cumulative") != 0 && strcmp(a->mode, "partial") != 0) {
				fprintf(stderr,
					"hybridctl: reorganize: --mode \"%s\": use cumulative or "
					"partial\n",
					a->mode);
				return 2;
			}
		} else if (strcmp(arg, "--since") == 0 && next) {
			a->since = argv[++i];
		} else if (strcmp(arg, "--capacity") == 0 && next) {
			if (hy_units_parse_size(argv[++i], false, &a->capacity) < 0) {
				fprintf(stderr,
					"hybridctl: reorganize: --capacity \"%s\": not a size "
					"(bytes, or with K, M, G, T)\n",
					argv[i]);
				return 2;
			}
		} else if (strcmp(arg, "--gap") == 0 && next) {
			double g = strtod(argv[++i], &end);

			if (*end || !(g > 0 && g <= 86400.0 * 365)) {
				fprintf(stderr,
					"hybridctl: reorganize: --gap \"%s\": seconds above 0 (a "
					"year at most)\n",
					argv[i]);
				return 2;
			}
			a->gap_ns = (int64_t)(g * 1e9);
		} else if (strcmp(arg, "--decay") == 0 && next) {
			a->decay = strtod(argv[++i], &end);
			if (*end || !(a->decay > 0 && a->decay <= 1)) {
				fprintf(stderr,
					"hybridctl: reorganize: --decay \"%s\": a number above 0 "
					"and "
					"at most 1\n",
					argv[i]);
				return 2;
			}
		} else if (strcmp(arg, "--top") == 0 && next) {
			unsigned long v = strtoul(argv[++i], &end, 10);

			if (*end || argv[i][0] == '-' || v > 100000) {
				fprintf(stderr,
					"hybridctl: reorganize: --top \"%s\": 0 to 100000\n",
					argv[i]);
				return 2;
			}
			a->top = (unsigned)v;
		} else if (arg[0] == '-') {
			fprintf(stderr, "hybridctl: reorganize: unknown option \"%s\"\n", arg);
			usage(stderr);
			return 2;
		} else if (!a->mountpoint) {
			a->mountpoint = arg;
		} else {
			fprintf(stderr, "hybridctl: reorganize: unexpected argument \"%s\"\n", arg);
			return 2;
		}
	}
	if ((a->mountpoint != NULL) + (a->state_dir != NULL) + a->all > 1) {
		fprintf(stderr,
			"hybridctl: reorganize: name one of MOUNTPOINT, --all and --state\n");
		return 2;
	}
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
	return 0;
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

/* The mount's BOPT read region in bytes, from its status (0: no BOPT, or
 * no daemon). */
static uint64_t read_region_of(const char *dir)
{
	struct json_object *status = NULL, *bopt;
	char why[512];
	uint64_t bytes = 0;

	if (hy_control_call(dir, HY_CONTROL_STATUS, 10000, &status, why, sizeof(why)) == 0 &&
	    json_object_object_get_ex(status, "bopt", &bopt) && bopt &&
	    json_object_is_type(bopt, json_type_object))
		bytes = member_u64(bopt, "read_region_blocks") * 4096;
	json_object_put(status);
	return bytes;
}

static int dry_run(const struct reorganize_args *a)
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
	if (!bytes)
		bytes = read_region_of(dir);
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

static void draw_bar(struct json_object *p)
{
	uint64_t total = member_u64(p, "copy_blocks"), done = member_u64(p, "done_blocks");
	const char *phase = json_object_get_string(json_object_object_get(p, "phase"));
	double part = total ? (double)done / (double)total : 0;
	char bar[41];
	int fill = (int)(part * 40);

	if (part > 1)
		part = 1, fill = 40;
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, '.', (size_t)(40 - fill));
	bar[40] = '\0';
	fprintf(stderr, "\r[%s] %3d%%  %.1f/%.1f MiB  %-13s", bar, (int)(part * 100),
		(double)done * 4096 / (1 << 20), (double)total * 4096 / (1 << 20),
		phase ? phase : "?");
	fflush(stderr);
}

/* Asks the daemon at @dir to reorganize and follows it to the end.
 * Returns the exit status; with @skip_no_bopt a mount without a BOPT is
 * noted and passed over (0). */
static int reorganize_mount(const struct reorganize_args *a, const char *dir, const char *mount,
			    bool skip_no_bopt)
{
	struct json_object *args = json_object_new_object(), *result = NULL, *p = NULL;
	bool bar = !a->quiet && isatty(STDERR_FILENO);
	char why[1024], mib[4][32];
	const char *phase = "";
	uint64_t run;
	int rc;

	if (!args) {
		fprintf(stderr, "hybridctl: out of memory\n");
		return 1;
	}
	if (!read_region_of(dir)) {
		json_object_put(args);
		if (skip_no_bopt) {
			if (!a->quiet)
				printf("%s: no BOPT (bopt=none or profile=off), skipped\n", mount);
			return 0;
		}
		fprintf(stderr,
			"hybridctl: reorganize: \"%s\" has no BOPT (mounted with bopt=none or "
			"profile=off, or its daemon is not answering)\n",
			mount);
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
		return rc == -EREMOTEIO && strstr(why, "capacity") ? 2 : 1;
	}
	run = member_u64(result, "run");
	json_object_put(result);
	for (;;) {
		struct timespec pause = {0, POLL_MS * 1000000L};

		json_object_put(p);
		p = NULL;
		rc = hy_control_call(dir, HY_CONTROL_PROGRESS, 30000, &p, why, sizeof(why));
		if (rc) {
			if (bar)
				fputc('\n', stderr);
			fprintf(stderr, "hybridctl: reorganize: %s: lost the daemon: %s\n", mount,
				why);
			return 1;
		}
		phase = json_object_get_string(json_object_object_get(p, "phase"));
		if (member_u64(p, "run") != run) {
			if (bar)
				fputc('\n', stderr);
			fprintf(stderr,
				"hybridctl: reorganize: %s: another reorganization started "
				"meanwhile\n",
				mount);
			json_object_put(p);
			return 1;
		}
		if (bar)
			draw_bar(p);
		if (phase && (strcmp(phase, "done") == 0 || strcmp(phase, "failed") == 0))
			break;
		nanosleep(&pause, NULL);
	}
	if (bar)
		fputc('\n', stderr);
	if (strcmp(phase, "failed") == 0) {
		fprintf(stderr, "hybridctl: reorganize: %s: failed: %s\n", mount,
			json_object_get_string(json_object_object_get(p, "error")));
		json_object_put(p);
		return 1;
	}
	if (!a->quiet) {
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

int hy_ctl_reorganize(int argc, char **argv)
{
	struct hy_runtime_entry *entries;
	struct reorganize_args a;
	char dir[4096];
	size_t n;
	int rc, worst = 0;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	if (a.dry_run && !a.all)
		return dry_run(&a);
	if (!a.all) {
		rc = hy_ctl_find_state_dir("reorganize", a.mountpoint, NULL, dir, sizeof(dir));
		if (rc)
			return rc;
		return reorganize_mount(&a, dir, a.mountpoint ? a.mountpoint : dir, false);
	}
	rc = hy_runtime_list(&entries, &n);
	if (rc) {
		fprintf(stderr, "hybridctl: cannot read the runtime folder: %s\n", strerror(-rc));
		return 1;
	}
	if (n == 0 && !a.quiet)
		printf("no hybridfs mounts are running\n");
	for (size_t i = 0; i < n; i++) {
		struct reorganize_args one = a;

		one.mountpoint = entries[i].mountpoint;
		rc = a.dry_run ? dry_run(&one)
			       : reorganize_mount(&a, entries[i].state_dir, entries[i].mountpoint,
						  true);
		if (rc > worst)
			worst = rc;
	}
	free(entries);
	return worst;
}
