/*
 * reorganize_cmd.c - `hybridctl reorganize ... --dry-run`: BORG's analyzer
 * and planner run over a mount's access log, and the plan they make is
 * shown. Nothing is written: the state database is opened read-only.
 * Carrying a plan out (the BOPT, the indirection map and the
 * reconfigurator) is the rest of the BORG work; until it is there,
 * reorganize refuses to run without --dry-run and says so.
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
#include "hybridfs/analyzer.h"
#include "hybridfs/planner.h"
#include "hybridfs/state.h"
#include "hybridfs/trace.h"

#define DEFAULT_CAPACITY (1ULL << 30) /* bytes of BOPT read region to plan for */
#define DEFAULT_DECAY	 0.5

struct reorganize_args {
	const char *mountpoint, *state_dir, *mode, *since;
	uint64_t capacity; /* bytes */
	int64_t gap_ns;	   /* 0: the analyzer's default */
	double decay;
	unsigned top;
	bool dry_run;
};

static void usage(FILE *out)
{
	fprintf(out, "usage: hybridctl reorganize [MOUNTPOINT | --state DIR] --dry-run\n"
		     "                            [--mode cumulative|partial] [--since T]\n"
		     "                            [--capacity SIZE] [--decay F] [--top N]\n");
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* "1G", "512M", "4096K", "1073741824": bytes. */
static int parse_size(const char *text, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t unit = 1;

	if (!text || !*text || *text == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (*end == 'K' || *end == 'k')
		unit = 1ULL << 10, end++;
	else if (*end == 'M' || *end == 'm')
		unit = 1ULL << 20, end++;
	else if (*end == 'G' || *end == 'g')
		unit = 1ULL << 30, end++;
	else if (*end == 'T' || *end == 't')
		unit = 1ULL << 40, end++;
	if (errno || *end || end == text || v == 0 || v > UINT64_MAX / unit)
		return -EINVAL;
	*out = (uint64_t)v * unit;
	return 0;
}

static int parse_args(int argc, char **argv, struct reorganize_args *a)
{
	memset(a, 0, sizeof(*a));
	a->mode = "cumulative";
	a->capacity = DEFAULT_CAPACITY;
	a->decay = DEFAULT_DECAY;
	a->top = 10;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (strcmp(arg, "--dry-run") == 0) {
			a->dry_run = true;
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
			if (parse_size(argv[++i], &a->capacity) < 0) {
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
	if (a->mountpoint && a->state_dir) {
		fprintf(stderr, "hybridctl: reorganize: name a MOUNTPOINT or --state, not both\n");
		return 2;
	}
	if (!a->dry_run) {
		fprintf(stderr,
			"hybridctl: reorganize: only --dry-run is available in this version: the "
			"BOPT, the indirection map and the reconfigurator that carry a plan out "
			"are not built yet\n");
		return 2;
	}
	return 0;
}

/* The first log rowid at or after @since_ns, minus one, for a partial run
 * over a time window. */
static int64_t rowid_before(sqlite3 *db, int64_t since_ns)
{
	sqlite3_stmt *st;
	int64_t rowid = 0;

	if (sqlite3_prepare_v2(db, "SELECT min(rowid) FROM access_log WHERE ts_ns >= ?1", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, since_ns);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		rowid = sqlite3_column_int64(st, 0) - 1;
	else
		rowid = INT64_MAX; /* nothing that recent */
	sqlite3_finalize(st);
	return rowid;
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

int hy_ctl_reorganize(int argc, char **argv)
{
	struct hy_analyzer_config config = {0};
	struct hy_analyzer_stats stats;
	struct hy_analyzer *analyzer = NULL;
	struct hy_plan_vertex *vertices = NULL;
	struct hy_plan_edge *edges = NULL;
	struct hy_plan plan = {0};
	struct hy_state *state = NULL;
	struct reorganize_args a;
	struct timespec t0;
	char why[1024], name[300], used[32], capacity[32];
	int64_t after = 0, last = 0, since_ns;
	size_t nv = 0, ne = 0;
	double analyze_s, plan_s;
	bool partial;
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	partial = strcmp(a.mode, "partial") == 0;
	rc = hy_ctl_open_log("reorganize", a.mountpoint, a.state_dir, &state);
	if (rc)
		return rc;
	rc = 1;
	config.gap_ns = a.gap_ns;
	if (hy_analyzer_new(&config, &analyzer) < 0) {
		fprintf(stderr, "hybridctl: reorganize: out of memory\n");
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* cumulative: the saved graph, decayed, plus the log since its run;
	 * partial: a fresh graph of the log since the last run (or --since) */
	if (hy_analyzer_load(analyzer, state->db, &after, why, sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: reorganize: %s\n", why);
		goto out;
	}
	if (partial) {
		hy_analyzer_free(analyzer);
		analyzer = NULL;
		if (hy_analyzer_new(&config, &analyzer) < 0)
			goto out;
	} else {
		hy_analyzer_decay(analyzer, a.decay);
	}
	if (a.since) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		if (hy_trace_parse_time(a.since, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec,
					&since_ns, why, sizeof(why)) < 0) {
			fprintf(stderr, "hybridctl: reorganize: --since: %s\n", why);
			rc = 2;
			goto out;
		}
		after = rowid_before(state->db, since_ns);
	}
	if (hy_analyzer_feed_log(analyzer, state->db, after, &last, why, sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: reorganize: %s\n", why);
		goto out;
	}
	analyze_s = seconds_since(&t0);
	hy_analyzer_get_stats(analyzer, &stats);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (hy_analyzer_export(analyzer, &vertices, &nv, NULL, &edges, &ne) < 0 ||
	    hy_planner_plan(vertices, nv, edges, ne, a.capacity / 4096, &plan, why, sizeof(why)) <
		    0) {
		fprintf(stderr, "hybridctl: reorganize: planning failed: %s\n", why);
		goto out;
	}
	plan_s = seconds_since(&t0);

	printf("reorganize, dry run, %s mode: %s\n", a.mode,
	       a.mountpoint ? a.mountpoint : state->dir);
	printf("  analyzed  %" PRIu64 " requests (log rows after %" PRId64 " up to %" PRId64
	       ") in %.3f s\n",
	       stats.requests, after == INT64_MAX ? 0 : after, last, analyze_s);
	printf("  graph     %" PRIu64 " vertices, %" PRIu64 " edges, %" PRIu64 " splits, %" PRIu64
	       " vertices cut to bound memory\n",
	       stats.vertices, stats.edges, stats.splits, stats.cut_vertices);
	size_text(plan.blocks_used * 4096, used, sizeof(used));
	size_text(a.capacity, capacity, sizeof(capacity));
	printf("  plan      %zu ranges, %s of %s, %zu skipped, planned in %.3f s\n", plan.count,
	       used, capacity, plan.skipped, plan_s);
	if (plan.count && a.top) {
		printf("\n  %12s  %10s  %12s  %8s  %s\n", "BOPT BLOCK", "FILE", "FIRST BLOCK",
		       "BLOCKS", "NAME (when first seen)");
		for (size_t i = 0; i < plan.count && i < a.top; i++) {
			const struct hy_plan_vertex *v = &vertices[plan.entries[i].vertex];

			name_of(state->db, v->file_id, name, sizeof(name));
			printf("  %12" PRIu64 "  %10" PRIu64 "  %12" PRIu64 "  %8u  %s\n",
			       plan.entries[i].bopt_block, v->file_id, v->block, v->nblocks, name);
		}
		if (plan.count > a.top)
			printf("  ... %zu more\n", plan.count - a.top);
	}
	printf("\nNothing was changed (--dry-run).\n");
	rc = 0;
out:
	hy_plan_free(&plan);
	free(vertices);
	free(edges);
	hy_analyzer_free(analyzer);
	hy_state_close(state);
	return rc;
}
