/*
 * simulate_cmd.c - `hybridctl simulate TRACE ...`: a block trace replayed
 * through the cache's replacement policies (replay.h), by the rule of
 * ../shared/traces/BASELINES.md, at one or more cache sizes and policies.
 *
 *   simulate TRACE [--format F] [--cache-size SIZE[,SIZE...]]
 *            [--policy P[,P...]] [--reads-only] [--cap N] [--strict] [--json]
 *
 * SIZE: bytes with an optional K/M/G/T suffix (whole 4 KiB blocks), or P%
 * of the trace's distinct 4 KiB blocks (rounded down, as BASELINES.md
 * does). P: lru, larc, freq, lru3. The trace is read once to count its
 * footprint and once per (policy, size) to replay it. Exit status: 0, 1
 * (the trace cannot be read, or a bad line with --strict), 2 (usage).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl.h"
#include "hybridfs/cli.h"
#include "hybridfs/category.h"
#include "hybridfs/classify.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/policy.h"
#include "hybridfs/progress.h"
#include "hybridfs/replay.h"
#include "hybridfs/sim_full.h"
#include "hybridfs/planner.h"
#include "hybridfs/sim_borg.h"
#include "hybridfs/trace_reader.h"
#include "hybridfs/units.h"
#include "hybridfs/workload_policy.h"

/* hybridfs's whole cache (sim_full.h), beside policy.h's kinds */
#define POLICY_FULL	   ((enum hy_policy_kind)100)
#define POLICY_FULL_NORECA ((enum hy_policy_kind)101)

#define MAX_SIZES    16
#define MAX_POLICIES 8

struct size_arg {
	bool percent;
	double value; /* percent, or blocks */
	char text[32];
};

struct sim_args {
	const char *trace, *format;
	struct size_arg sizes[MAX_SIZES];
	size_t nsizes;
	enum hy_policy_kind policies[MAX_POLICIES];
	size_t npolicies;
	bool reads_only, strict, json, quiet;
	uint64_t cap;
	bool timed;
	struct hy_devmodel_params backing, ssd;
	bool write_back;
	bool open_loop;	       /* requests arrive at their timestamps (timed) */
	double speed;	       /* open loop: the trace's time divided by this (0: 1) */
	bool no_front;	       /* full policy: no DRAM front buffer */
	double heat_threshold; /* full policy; < 0: the default */
	struct hy_workload_policy_table table; /* full policy's ReCA table */
	enum hy_pore_rule pore;
	uint64_t pore_zone;
	unsigned pore_open;
	bool borg;
	double split;	 /* share of the requests BORG trains on; 0: not given */
	unsigned phases; /* --borg-phases; 0: not given */
	bool modes[HY_SIM_BORG_MODES];
	enum hy_planner_placement planner;
	struct size_arg bopt;	 /* the BOPT read region */
	const char *borg_option; /* a BORG option given (for "needs --borg") */
};

static int parse_sizes(const char *list, struct sim_args *a)
{
	char *copy = strdup(list), *save = NULL, *tok;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
		struct size_arg *s = &a->sizes[a->nsizes];
		size_t len = strlen(tok);

		if (a->nsizes == MAX_SIZES) {
			fprintf(stderr, "hybridctl: simulate: at most %d cache sizes\n", MAX_SIZES);
			rc = -EINVAL;
			break;
		}
		snprintf(s->text, sizeof(s->text), "%s", tok);
		if (len > 1 && tok[len - 1] == '%') {
			char *end;

			s->percent = true;
			tok[len - 1] = '\0';
			s->value = strtod(tok, &end);
			if (*end || end == tok || !(s->value > 0) || s->value > 100) {
				fprintf(stderr,
					"hybridctl: simulate: cache size \"%s\": a share must be "
					"above 0%% and at most 100%%\n",
					s->text);
				rc = -EINVAL;
			}
		} else {
			uint64_t bytes;

			if (hy_units_parse_size(tok, false, &bytes) < 0 ||
			    bytes < HY_REPLAY_BLOCK) {
				fprintf(stderr,
					"hybridctl: simulate: cache size \"%s\": not a size of at "
					"least 4K (bytes, or with K, M, G, T) nor a share (5%%)\n",
					s->text);
				rc = -EINVAL;
			}
			s->value = (double)(bytes / HY_REPLAY_BLOCK);
		}
		a->nsizes++;
	}
	free(copy);
	return rc;
}

static int parse_policies(const char *list, struct sim_args *a)
{
	char *copy = strdup(list), *save = NULL, *tok;
	char why[256];
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
		if (a->npolicies == MAX_POLICIES) {
			fprintf(stderr, "hybridctl: simulate: at most %d policies\n", MAX_POLICIES);
			rc = -EINVAL;
		} else if (strcmp(tok, "full") == 0 || strcmp(tok, "full-noreca") == 0) {
			a->policies[a->npolicies++] =
				strcmp(tok, "full") == 0 ? POLICY_FULL : POLICY_FULL_NORECA;
		} else if (hy_policy_kind_parse(tok, &a->policies[a->npolicies], why, sizeof(why)) <
			   0) {
			fprintf(stderr, "hybridctl: simulate: --policy: %s\n", why);
			rc = -EINVAL;
		} else {
			a->npolicies++;
		}
	}
	free(copy);
	return rc;
}

/* The passes over the trace, one bar each ("pass 3 of 12"); the first,
 * which counts the footprint, does not know the length yet. */
static struct passes {
	struct hy_progress bar;
	unsigned pass, count;
} passes;

static void pass_begin(const char *label, uint64_t total)
{
	hy_progress_begin(&passes.bar, label, ++passes.pass, passes.count, total);
}

/* One pass over the trace: @fn for each record. 0, or 1 after saying why. */
static int each_record(const struct sim_args *a, int (*fn)(void *arg, struct hy_trace_record *),
		       void *arg, struct hy_trace_reader_stats *stats, char *format_name,
		       size_t format_size)
{
	struct hy_trace_reader *reader;
	struct hy_trace_record rec;
	bool failed = false;
	uint64_t seen = 0;
	char why[512];
	int rc;

	rc = hy_trace_reader_open(a->trace, a->format, a->strict, &reader, why, sizeof(why));
	if (rc < 0) {
		fprintf(stderr, "hybridctl: simulate: %s\n", why);
		return 1;
	}
	if (format_name)
		snprintf(format_name, format_size, "%s",
			 hy_trace_reader_format_name(hy_trace_reader_format(reader)));
	while ((rc = hy_trace_reader_next(reader, &rec)) == 1) {
		int done = fn(arg, &rec);

		if (done < 0)
			failed = true; /* @fn said why */
		if (done <= 0)
			break;
		if ((++seen & 0x3fff) == 0)
			hy_progress_update(&passes.bar, seen, 0);
	}
	hy_progress_end(&passes.bar);
	if (rc < 0)
		fprintf(stderr, "hybridctl: simulate: %s: %s\n", a->trace,
			hy_trace_reader_error(reader));
	if (stats)
		hy_trace_reader_get_stats(reader, stats);
	hy_trace_reader_close(reader);
	return rc < 0 || failed ? 1 : 0;
}

static int count_footprint(void *arg, struct hy_trace_record *rec)
{
	int rc = hy_replay_footprint_add(arg, rec);

	if (rc < 0)
		fprintf(stderr, "hybridctl: simulate: out of memory counting the footprint\n");
	return rc;
}

static int replay_one(void *arg, struct hy_trace_record *rec)
{
	int rc = hy_replay_request(arg, rec);

	if (rc == -EINVAL)
		fprintf(stderr,
			"hybridctl: simulate: line %" PRIu64 " has no timestamp: an open-loop "
			"replay (--open-loop) needs one on every request\n",
			rec->line);
	else if (rc < 0)
		fprintf(stderr, "hybridctl: simulate: out of memory replaying\n");
	return rc;
}

static const char *policy_name(enum hy_policy_kind p)
{
	return p == POLICY_FULL		 ? "full"
	       : p == POLICY_FULL_NORECA ? "full-noreca"
					 : hy_policy_kind_name(p);
}

static int full_one(void *arg, struct hy_trace_record *rec)
{
	int rc = hy_sim_full_request(arg, rec);

	if (rc < 0)
		fprintf(stderr, "hybridctl: simulate: the full policy failed: %s\n", strerror(-rc));
	return rc;
}

/* The trace through hybridfs's whole cache; its figures in @s's fields. */
static int run_full(const struct sim_args *a, enum hy_policy_kind p, uint64_t blocks,
		    struct hy_replay_stats *s, char *why, size_t why_size)
{
	struct hy_sim_full_config fc = {
		.capacity = blocks,
		.heat_threshold = a->heat_threshold,
		.table = &a->table,
		.reca = p == POLICY_FULL,
		.no_front = a->no_front,
		.reads_only = a->reads_only,
		.max_accesses = a->cap,
		/* timed: the cache's reads and writes home served by the model;
		 * write-back with the daemon's cleaner, PORE's zones with --pore */
		.backing = a->timed ? &a->backing : NULL,
		.write_back = a->write_back,
		.pore = {.rule = a->pore,
			 .zone_bytes = a->pore_zone,
			 .open_permille = a->pore_open},
	};
	struct hy_sim_full_stats fs;
	struct hy_sim_full *f;
	int status;

	if (hy_sim_full_new(&fc, &f, why, why_size) < 0)
		return -1;
	status = each_record(a, full_one, f, NULL, NULL, 0);
	/* what stays dirty goes home too: every policy pays for its writes */
	if (!status && a->write_back && hy_sim_full_finish(f) < 0) {
		fprintf(stderr, "hybridctl: simulate: the full policy's final flush failed\n");
		status = 1;
	}
	hy_sim_full_get_stats(f, &fs);
	hy_sim_full_free(f);
	memset(s, 0, sizeof(*s));
	s->accesses = fs.accesses;
	s->reads = fs.reads;
	s->writes = fs.writes;
	s->read_hits = fs.read_hits;
	s->write_hits = fs.write_hits;
	/* SSD fills: the blocks written into store lines (by the heat filter's
	 * admissions and by writes) */
	s->inserts = fs.ssd_bytes_written / HY_REPLAY_BLOCK;
	s->refused = fs.heat_refused;
	s->requests = fs.requests;
	s->dropped = fs.dropped;
	s->capped = fs.capped;
	if (a->timed) {
		/* busy time and the model's figures; no response times (the
		 * cache runs as one process, not request by request) */
		s->timed = true;
		s->backing_busy_ms = fs.backing_busy_ms;
		s->backing = fs.backing;
		s->dirty_evictions = fs.cleaned_blocks;
		s->forced_evictions = fs.pore_forced;
		s->pore_divisions = fs.pore.divisions;
	}
	return status;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

static struct json_object *latency_json(const struct hy_replay_latency *l)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "requests", json_object_new_uint64(l->requests));
	json_object_object_add(o, "mean_ms", json_object_new_double(l->mean_ms));
	json_object_object_add(o, "p99_ms", json_object_new_double(l->p99_ms));
	return o;
}

static struct json_object *result_json(const char *policy, const struct size_arg *size,
				       uint64_t blocks, const struct hy_replay_stats *s,
				       double seconds)
{
	struct json_object *o = json_object_new_object();
	uint64_t hits = s->read_hits + s->write_hits;

	json_object_object_add(o, "policy", json_object_new_string(policy));
	json_object_object_add(o, "cache_size", json_object_new_string(size->text));
	json_object_object_add(o, "cache_blocks", json_object_new_uint64(blocks));
	json_object_object_add(o, "accesses", json_object_new_uint64(s->accesses));
	json_object_object_add(o, "reads", json_object_new_uint64(s->reads));
	json_object_object_add(o, "writes", json_object_new_uint64(s->writes));
	json_object_object_add(o, "read_hits", json_object_new_uint64(s->read_hits));
	json_object_object_add(o, "write_hits", json_object_new_uint64(s->write_hits));
	json_object_object_add(o, "hit_ratio", json_object_new_double(ratio(hits, s->accesses)));
	json_object_object_add(o, "miss_ratio",
			       json_object_new_double(1.0 - ratio(hits, s->accesses)));
	json_object_object_add(o, "read_hit_ratio",
			       json_object_new_double(ratio(s->read_hits, s->reads)));
	json_object_object_add(o, "write_hit_ratio",
			       json_object_new_double(ratio(s->write_hits, s->writes)));
	json_object_object_add(o, "ssd_fills", json_object_new_uint64(s->inserts));
	/* every fill and every write hit writes a block into the SSD */
	json_object_object_add(
		o, "ssd_bytes_written",
		json_object_new_uint64((s->inserts + s->write_hits) * (uint64_t)HY_REPLAY_BLOCK));
	json_object_object_add(o, "refused", json_object_new_uint64(s->refused));
	json_object_object_add(o, "evictions", json_object_new_uint64(s->evictions));
	if (s->timed) {
		static const char *const cls[] = {"sequential", "strided", "overlapped", "random"};
		struct json_object *by_class = json_object_new_object();
		struct json_object *by_cat = json_object_new_object();

		json_object_object_add(o, "backing_busy_ms",
				       json_object_new_double(s->backing_busy_ms));
		json_object_object_add(o, "ssd_busy_ms", json_object_new_double(s->ssd_busy_ms));
		json_object_object_add(o, "response", latency_json(&s->all));
		for (int i = 0; i < HY_CLASS_COUNT; i++)
			if (s->by_class[i].requests)
				json_object_object_add(by_class, cls[i],
						       latency_json(&s->by_class[i]));
		for (int i = 0; i < HY_CATEGORY_COUNT; i++)
			if (s->by_category[i].requests)
				json_object_object_add(by_cat,
						       hy_category_name((enum hy_category)i),
						       latency_json(&s->by_category[i]));
		json_object_object_add(o, "response_by_class", by_class);
		json_object_object_add(o, "response_by_category", by_cat);
		json_object_object_add(o, "backing_write_amplification",
				       json_object_new_double(s->backing.write_amplification));
		json_object_object_add(o, "dirty_evictions",
				       json_object_new_uint64(s->dirty_evictions));
		json_object_object_add(o, "forced_evictions",
				       json_object_new_uint64(s->forced_evictions));
		json_object_object_add(o, "pore_divisions",
				       json_object_new_uint64(s->pore_divisions));
		json_object_object_add(o, "loop",
				       json_object_new_string(s->open_loop ? "open" : "closed"));
		if (s->open_loop) {
			json_object_object_add(o, "span_ms", json_object_new_double(s->span_ms));
			json_object_object_add(o, "wait_mean_ms",
					       json_object_new_double(s->wait_mean_ms));
			json_object_object_add(o, "requests_waited",
					       json_object_new_uint64(s->waited));
			json_object_object_add(o, "requests_reordered",
					       json_object_new_uint64(s->reordered));
			json_object_object_add(
				o, "backing_utilization",
				json_object_new_double(
					s->span_ms > 0 ? s->backing_busy_ms / s->span_ms : 0));
		}
	}
	json_object_object_add(o, "seconds", json_object_new_double(seconds));
	json_object_object_add(o, "accesses_per_second",
			       json_object_new_double(seconds > 0 ? s->accesses / seconds : 0));
	return o;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- BORG on the trace ------------------------------------------------------ */

static const char *const mode_names[HY_SIM_BORG_MODES] = {"cumulative", "partial"};

struct borg_pass {
	struct hy_sim_borg_run *run;
	int error;
};

static int borg_one(void *arg, struct hy_trace_record *rec)
{
	struct borg_pass *b = arg;
	char why[512];

	if (hy_sim_borg_run_request(b->run, rec, why, sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: simulate: --borg: %s\n", why);
		b->error = 1;
		return -1;
	}
	return 1;
}

static double reduction(double vanilla, double planned)
{
	return vanilla > 0 ? 1.0 - planned / vanilla : 0.0;
}

static struct json_object *phase_mode_json(const struct hy_sim_borg_phase_mode *m, double vanilla)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "busy_ms_planned", json_object_new_double(m->busy_ms));
	json_object_object_add(o, "reduction",
			       json_object_new_double(reduction(vanilla, m->busy_ms)));
	json_object_object_add(o, "reconfiguration_busy_ms",
			       json_object_new_double(m->reconfiguration_busy_ms));
	json_object_object_add(o, "trained_requests", json_object_new_uint64(m->trained));
	json_object_object_add(o, "vertices", json_object_new_uint64(m->vertices));
	json_object_object_add(o, "edges", json_object_new_uint64(m->edges));
	json_object_object_add(o, "planned_blocks", json_object_new_uint64(m->planned_blocks));
	json_object_object_add(o, "copied_blocks", json_object_new_uint64(m->copied_blocks));
	json_object_object_add(o, "bopt_blocks_read", json_object_new_uint64(m->bopt_blocks_read));
	return o;
}

/* BORG over the trace's phases (BORG-C and BORG-P side by side with
 * vanilla); the figures as JSON, printed as a table too without --json. */
static struct json_object *borg_json(const struct sim_args *a, uint64_t footprint,
				     uint64_t requests, int *status)
{
	struct hy_planner_options planner = {
		.placement = a->planner,
		/* a range within the drive's read-ahead after the one before it
		 * is read without a seek: sequential enough */
		.near_blocks = (uint32_t)(a->backing.readahead_bytes / HY_REPLAY_BLOCK),
	};
	struct hy_sim_borg_run_config rc = {
		.requests = requests,
		.phases = a->phases ? a->phases : 2,
		.capacity = a->bopt.text[0] ? (a->bopt.percent ? (uint64_t)((double)footprint *
									    a->bopt.value / 100.0)
							       : (uint64_t)a->bopt.value)
					    : footprint / 10,
		.bopt_address = UINT64_MAX,
		.device = &a->backing,
		.planner = &planner,
	};
	struct hy_sim_borg_phase_mode total[HY_SIM_BORG_MODES] = {{0}};
	struct json_object *o = NULL, *phases, *totals;
	const struct hy_sim_borg_phase *ph;
	struct borg_pass b = {0};
	double vanilla = 0;
	unsigned n;
	char why[512];

	if (!a->phases)
		rc.split = (uint64_t)((double)requests * (a->split > 0 ? a->split : 0.5));
	if (!a->bopt.text[0] && !rc.capacity)
		rc.capacity = 1; /* a tiny trace: a BOPT of one block */
	memcpy(rc.modes, a->modes, sizeof(rc.modes));
	if (hy_sim_borg_run_new(&rc, &b.run, why, sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: simulate: --borg: %s\n", why);
		*status = 1;
		return NULL;
	}
	if (each_record(a, borg_one, &b, NULL, NULL, 0) || b.error) {
		*status = 1;
		goto out;
	}
	ph = hy_sim_borg_run_phases(b.run, &n);
	o = json_object_new_object();
	phases = json_object_new_array();
	json_object_object_add(o, "device",
			       json_object_new_string(hy_devmodel_kind_name(a->backing.kind)));
	json_object_object_add(
		o, "planner",
		json_object_new_string(a->planner == HY_PLANNER_CHAINS ? "chains" : "greedy"));
	json_object_object_add(o, "reads", json_object_new_string("split"));
	json_object_object_add(o, "phases_count", json_object_new_uint64(n));
	json_object_object_add(o, "bopt_blocks", json_object_new_uint64(rc.capacity));
	if (!a->json) {
		printf("BORG (%s, %s planner, split reads): %u phases, a BOPT of %" PRIu64
		       " blocks; busy time in ms, LESS the reduction against vanilla\n",
		       hy_devmodel_kind_name(a->backing.kind),
		       a->planner == HY_PLANNER_CHAINS ? "chains" : "greedy", n, rc.capacity);
		printf("%-6s %9s %12s", "PHASE", "REQUESTS", "VANILLA");
		for (int m = 0; m < HY_SIM_BORG_MODES; m++)
			if (a->modes[m])
				printf(" | %12s %7s %8s %9s %10s", m ? "PARTIAL" : "CUMULATIVE",
				       "LESS", "PLANNED", "FROM-BOPT", "RECONF-MS");
		printf("\n");
	}
	for (unsigned k = 0; k < n; k++) {
		struct json_object *p = json_object_new_object();

		json_object_object_add(p, "phase", json_object_new_uint64(k + 1));
		json_object_object_add(p, "first_request", json_object_new_uint64(ph[k].first));
		json_object_object_add(p, "requests", json_object_new_uint64(ph[k].requests));
		json_object_object_add(p, "busy_ms_vanilla",
				       json_object_new_double(ph[k].busy_ms_vanilla));
		if (!a->json)
			printf("%-6u %9" PRIu64 " %12.1f", k + 1, ph[k].requests,
			       ph[k].busy_ms_vanilla);
		for (int m = 0; m < HY_SIM_BORG_MODES; m++) {
			const struct hy_sim_borg_phase_mode *x = &ph[k].mode[m];

			if (!a->modes[m])
				continue;
			json_object_object_add(p, mode_names[m],
					       phase_mode_json(x, ph[k].busy_ms_vanilla));
			if (!a->json)
				printf(" | %12.1f %6.1f%% %8" PRIu64 " %9" PRIu64 " %10.1f",
				       x->busy_ms,
				       100 * reduction(ph[k].busy_ms_vanilla, x->busy_ms),
				       x->planned_blocks, x->bopt_blocks_read,
				       x->reconfiguration_busy_ms);
			if (k == 0)
				continue; /* no plan yet: the totals are phases 2..N */
			total[m].busy_ms += x->busy_ms;
			total[m].reconfiguration_busy_ms += x->reconfiguration_busy_ms;
			total[m].planned_blocks += x->planned_blocks;
			total[m].copied_blocks += x->copied_blocks;
			total[m].bopt_blocks_read += x->bopt_blocks_read;
		}
		if (k)
			vanilla += ph[k].busy_ms_vanilla;
		if (!a->json)
			printf("\n");
		json_object_array_add(phases, p);
	}
	json_object_object_add(o, "phases", phases);
	totals = json_object_new_object();
	json_object_object_add(totals, "busy_ms_vanilla", json_object_new_double(vanilla));
	if (!a->json) {
		char label[16];

		snprintf(label, sizeof(label), "2..%u", n);
		printf("%-6s %9" PRIu64 " %12.1f", label, requests - (n ? ph[1].first : 0),
		       vanilla);
	}
	for (int m = 0; m < HY_SIM_BORG_MODES; m++) {
		struct json_object *t;

		if (!a->modes[m])
			continue;
		t = json_object_new_object();
		json_object_object_add(t, "busy_ms_planned",
				       json_object_new_double(total[m].busy_ms));
		json_object_object_add(
			t, "reduction",
			json_object_new_double(reduction(vanilla, total[m].busy_ms)));
		json_object_object_add(t, "reconfiguration_busy_ms",
				       json_object_new_double(total[m].reconfiguration_busy_ms));
		json_object_object_add(t, "planned_blocks",
				       json_object_new_uint64(total[m].planned_blocks));
		json_object_object_add(t, "copied_blocks",
				       json_object_new_uint64(total[m].copied_blocks));
		json_object_object_add(t, "bopt_blocks_read",
				       json_object_new_uint64(total[m].bopt_blocks_read));
		json_object_object_add(totals, mode_names[m], t);
		if (!a->json)
			printf(" | %12.1f %6.1f%% %8" PRIu64 " %9" PRIu64 " %10.1f",
			       total[m].busy_ms, 100 * reduction(vanilla, total[m].busy_ms),
			       total[m].planned_blocks, total[m].bopt_blocks_read,
			       total[m].reconfiguration_busy_ms);
	}
	if (!a->json)
		printf("\n");
	json_object_object_add(o, "totals", totals);
out:
	hy_sim_borg_run_free(b.run);
	return o;
}

enum {
	OPT_FORMAT = 1,
	OPT_CACHE_SIZE,
	OPT_POLICY,
	OPT_CAP,
	OPT_DEVICE,
	OPT_DEVICE_PARAM,
	OPT_SSD_PARAM,
	OPT_NO_FRONT,
	OPT_HEAT_THRESHOLD,
	OPT_POLICY_SET,
	OPT_WRITE_BACK,
	OPT_OPEN_LOOP,
	OPT_SPEED,
	OPT_PORE,
	OPT_PORE_ZONE,
	OPT_PORE_OPEN,
	OPT_BORG,
	OPT_SPLIT,
	OPT_BORG_PHASES,
	OPT_BORG_MODE,
	OPT_BORG_PLANNER,
	OPT_BORG_READS,
	OPT_BOPT_SIZE,
	OPT_READS_ONLY,
	OPT_STRICT,
	OPT_JSON,
	OPT_QUIET,
};

static const struct hy_cli_option simulate_options[] = {
	{"format", 0, true, OPT_FORMAT, "a trace format F"},
	{"cache-size", 0, true, OPT_CACHE_SIZE, "SIZE[,SIZE...]"},
	{"policy", 0, true, OPT_POLICY, "P[,P...]"},
	{"cap", 0, true, OPT_CAP, "a number N"},
	{"device", 0, true, OPT_DEVICE, "hdd, ssd or smr"},
	{"device-param", 0, true, OPT_DEVICE_PARAM, "NAME=VALUE"},
	{"ssd-param", 0, true, OPT_SSD_PARAM, "NAME=VALUE"},
	{"no-front", 0, false, OPT_NO_FRONT, NULL},
	{"heat-threshold", 0, true, OPT_HEAT_THRESHOLD, "a number X"},
	{"policy-set", 0, true, OPT_POLICY_SET, "CATEGORY.KEY=VALUE"},
	{"write-back", 0, false, OPT_WRITE_BACK, NULL},
	{"open-loop", 0, false, OPT_OPEN_LOOP, NULL},
	{"speed", 0, true, OPT_SPEED, "a factor X"},
	{"pore", 0, true, OPT_PORE, "coverage, popularity, balance or off"},
	{"pore-zone", 0, true, OPT_PORE_ZONE, "a SIZE"},
	{"pore-open", 0, true, OPT_PORE_OPEN, "a permille N"},
	{"borg", 0, false, OPT_BORG, NULL},
	{"split", 0, true, OPT_SPLIT, "a share F"},
	{"borg-phases", 0, true, OPT_BORG_PHASES, "a number N"},
	{"borg-mode", 0, true, OPT_BORG_MODE, "cumulative, partial or both"},
	{"borg-planner", 0, true, OPT_BORG_PLANNER, "chains or greedy"},
	{"borg-reads", 0, true, OPT_BORG_READS, "split"},
	{"bopt-size", 0, true, OPT_BOPT_SIZE, "SIZE or P%"},
	{"reads-only", 0, false, OPT_READS_ONLY, NULL},
	{"strict", 0, false, OPT_STRICT, NULL},
	{"json", 0, false, OPT_JSON, NULL},
	{"quiet", 'q', false, OPT_QUIET, NULL},
	{0},
};

static const char *const pore_rules[] = {"coverage", "popularity", "balance", "off", NULL};
static const char *const borg_modes[] = {"cumulative", "partial", "both", NULL};
static const char *const planners[] = {"chains", "greedy", NULL};

/* One option's @value (NULL for a flag) into @a: 0, or 2 after saying
 * why. */
static int take_option(const struct hy_cli *cli, int id, const char *value, struct sim_args *a)
{
	char why[512], *end;

	switch (id) {
	case OPT_FORMAT:
		a->format = value;
		break;
	case OPT_CACHE_SIZE:
		if (parse_sizes(value, a) < 0)
			return 2;
		break;
	case OPT_POLICY:
		if (parse_policies(value, a) < 0)
			return 2;
		break;
	case OPT_CAP:
		if (hy_units_parse_size(value, false, &a->cap) < 0) {
			fprintf(stderr,
				"hybridctl: simulate: --cap \"%s\": not a number of block "
				"accesses\n",
				value);
			return 2;
		}
		break;
	case OPT_DEVICE: {
		enum hy_devmodel_kind kind;

		if (hy_devmodel_kind_parse(value, &kind, why, sizeof(why)) < 0) {
			fprintf(stderr, "hybridctl: simulate: --device: %s\n", why);
			return 2;
		}
		hy_devmodel_defaults(kind, &a->backing);
		a->timed = true;
		break;
	}
	case OPT_DEVICE_PARAM:
	case OPT_SSD_PARAM: {
		bool backing = id == OPT_DEVICE_PARAM;

		if (backing && !a->timed) {
			fprintf(stderr,
				"hybridctl: simulate: --device-param comes after --device\n");
			return 2;
		}
		if (hy_devmodel_set(backing ? &a->backing : &a->ssd, value, why, sizeof(why)) < 0) {
			fprintf(stderr, "hybridctl: simulate: --%s: %s\n",
				backing ? "device-param" : "ssd-param", why);
			return 2;
		}
		break;
	}
	case OPT_NO_FRONT:
		a->no_front = true;
		break;
	case OPT_HEAT_THRESHOLD:
		a->heat_threshold = strtod(value, &end);
		if (*end || end == value || !(a->heat_threshold >= 0) || a->heat_threshold > 255) {
			fprintf(stderr,
				"hybridctl: simulate: --heat-threshold \"%s\": a number from 0 to "
				"255\n",
				value);
			return 2;
		}
		break;
	case OPT_POLICY_SET:
		if (hy_workload_policy_set(&a->table, value, why, sizeof(why)) < 0) {
			fprintf(stderr, "hybridctl: simulate: --policy-set: %s\n", why);
			return 2;
		}
		break;
	case OPT_WRITE_BACK:
		a->write_back = true;
		break;
	case OPT_OPEN_LOOP:
		a->open_loop = true;
		break;
	case OPT_SPEED:
		a->speed = strtod(value, &end);
		if (*end || end == value || !(a->speed > 0) || !isfinite(a->speed)) {
			fprintf(stderr,
				"hybridctl: simulate: --speed \"%s\": a factor above 0 (2: the "
				"trace's requests arrive twice as fast)\n",
				value);
			return 2;
		}
		break;
	case OPT_PORE: {
		static const enum hy_pore_rule rules[] = {HY_PORE_COVERAGE, HY_PORE_POPULARITY,
							  HY_PORE_BALANCE, HY_PORE_OFF};
		int k = hy_cli_choice(cli, "--pore", value, pore_rules);

		if (k < 0)
			return 2;
		a->pore = rules[k];
		a->write_back = a->write_back || a->pore != HY_PORE_OFF;
		break;
	}
	case OPT_PORE_ZONE:
		if (hy_units_parse_size(value, false, &a->pore_zone) < 0 ||
		    a->pore_zone < HY_REPLAY_BLOCK) {
			fprintf(stderr,
				"hybridctl: simulate: --pore-zone \"%s\": a size of at least 4K\n",
				value);
			return 2;
		}
		break;
	case OPT_PORE_OPEN: {
		unsigned long v = strtoul(value, &end, 10);

		if (*end || end == value || v < 1 || v > 1000) {
			fprintf(stderr,
				"hybridctl: simulate: --pore-open \"%s\": a permille of the zones "
				"holding dirty blocks, 1 to 1000\n",
				value);
			return 2;
		}
		a->pore_open = (unsigned)v;
		break;
	}
	case OPT_BORG:
		a->borg = true;
		break;
	case OPT_SPLIT:
		a->borg_option = "--split";
		a->split = strtod(value, &end);
		if (*end || end == value || !(a->split > 0) || !(a->split < 1)) {
			fprintf(stderr,
				"hybridctl: simulate: --split \"%s\": a share between 0 and 1, "
				"such "
				"as 0.5\n",
				value);
			return 2;
		}
		if (a->phases) {
			fprintf(stderr,
				"hybridctl: simulate: --split and --borg-phases exclude each "
				"other (a split makes two phases)\n");
			return 2;
		}
		break;
	case OPT_BORG_PHASES: {
		unsigned long v;

		a->borg_option = "--borg-phases";
		errno = 0;
		v = strtoul(value, &end, 10);
		if (errno || *end || end == value || value[0] == '-' || v < 2 ||
		    v > HY_SIM_BORG_MAX_PHASES) {
			fprintf(stderr,
				"hybridctl: simulate: --borg-phases \"%s\": a whole number of "
				"phases "
				"from 2 to %d\n",
				value, HY_SIM_BORG_MAX_PHASES);
			return 2;
		}
		if (a->split > 0) {
			fprintf(stderr,
				"hybridctl: simulate: --split and --borg-phases exclude each "
				"other (a split makes two phases)\n");
			return 2;
		}
		a->phases = (unsigned)v;
		break;
	}
	case OPT_BORG_MODE: {
		int k = hy_cli_choice(cli, "--borg-mode", value, borg_modes);

		a->borg_option = "--borg-mode";
		if (k < 0)
			return 2;
		a->modes[HY_SIM_BORG_CUMULATIVE] = k == 0 || k == 2;
		a->modes[HY_SIM_BORG_PARTIAL] = k == 1 || k == 2;
		break;
	}
	case OPT_BORG_PLANNER: {
		int k = hy_cli_choice(cli, "--borg-planner", value, planners);

		a->borg_option = "--borg-planner";
		if (k < 0)
			return 2;
		a->planner = k == 0 ? HY_PLANNER_CHAINS : HY_PLANNER_GREEDY;
		break;
	}
	case OPT_BORG_READS:
		a->borg_option = "--borg-reads";
		/* the daemon's read path splits a read partly relocated between
		 * home and the BOPT: that is what is simulated */
		if (strcmp(value, "split") != 0) {
			fprintf(stderr,
				"hybridctl: simulate: --borg-reads \"%s\": split (the daemon's "
				"read "
				"path splits a read partly relocated; \"whole\" was the old "
				"simulator's alone)\n",
				value);
			return 2;
		}
		break;
	case OPT_BOPT_SIZE: {
		size_t len = strlen(value);
		uint64_t bytes = 0;
		double share = 0;
		bool ok;

		end = NULL;
		if (len > 1 && value[len - 1] == '%')
			share = strtod(value, &end);
		ok = end ? end == value + len - 1 && share > 0 && share <= 100
			 : hy_units_parse_size(value, false, &bytes) == 0 &&
				     bytes >= HY_REPLAY_BLOCK;
		a->borg_option = "--bopt-size";
		if (!ok) {
			fprintf(stderr,
				"hybridctl: simulate: --bopt-size \"%s\": one size of 4K or more, "
				"or "
				"a share of the footprint above 0%% and at most 100%%\n",
				value);
			return 2;
		}
		snprintf(a->bopt.text, sizeof(a->bopt.text), "%s", value);
		a->bopt.percent = end != NULL;
		a->bopt.value = end ? share : (double)(bytes / HY_REPLAY_BLOCK);
		break;
	}
	case OPT_READS_ONLY:
		a->reads_only = true;
		break;
	case OPT_STRICT:
		a->strict = true;
		break;
	case OPT_JSON:
		a->json = true;
		break;
	case OPT_QUIET:
		a->quiet = true;
		break;
	}
	return 0;
}

static int simulate(const struct hy_cli_command *command, int argc, char **argv)
{
	struct sim_args a = {.format = NULL, .modes = {true, true}, .planner = HY_PLANNER_CHAINS};
	struct hy_replay_footprint *fp = NULL;
	struct hy_trace_reader_stats rs;
	struct json_object *results, *borg = NULL;
	char format[32] = "", why[512];
	const char *value;
	uint64_t footprint;
	struct hy_cli cli;
	int status = 0, rc, id;

	hy_devmodel_defaults(HY_DEVMODEL_SSD, &a.ssd);
	hy_workload_policy_defaults(&a.table);
	a.heat_threshold = -1;
	if (hy_cli_begin(&cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(&cli, &id, &value)) > 0)
		if (take_option(&cli, id, value, &a))
			return 2;
	if (rc < 0)
		return hy_cli_exit_status(rc);
	if (cli.nargs > 1)
		return hy_cli_usage_error(&cli, "one TRACE only (\"%s\", then \"%s\")", cli.args[0],
					  cli.args[1]);
	a.trace = cli.nargs ? cli.args[0] : NULL;
	if (!a.trace)
		return hy_cli_usage_error(&cli, "no TRACE");
	if (a.write_back && !a.timed) {
		fprintf(stderr, "hybridctl: simulate: --write-back and --pore need a --device\n");
		return 2;
	}
	if ((a.open_loop || a.speed > 0) && !a.timed) {
		fprintf(stderr, "hybridctl: simulate: --open-loop and --speed need a --device\n");
		return 2;
	}
	if (a.speed > 0 && !a.open_loop) {
		fprintf(stderr, "hybridctl: simulate: --speed needs --open-loop\n");
		return 2;
	}
	if (a.open_loop)
		for (size_t p = 0; p < a.npolicies; p++)
			if (a.policies[p] == POLICY_FULL || a.policies[p] == POLICY_FULL_NORECA) {
				fprintf(stderr,
					"hybridctl: simulate: --open-loop times the replay's "
					"policies (lru, larc, freq, lru3), not --policy %s\n",
					policy_name(a.policies[p]));
				return 2;
			}
	if (a.borg_option && !a.borg) {
		fprintf(stderr, "hybridctl: simulate: %s needs --borg\n", a.borg_option);
		return 2;
	}
	if (!a.nsizes && parse_sizes("1%,5%,10%,20%", &a) < 0)
		return 2;
	if (!a.npolicies && parse_policies("lru,larc,freq,lru3", &a) < 0)
		return 2;
	if (a.format && strcmp(a.format, "auto") != 0) {
		enum hy_trace_reader_format f;

		if (hy_trace_reader_format_parse(a.format, &f, why, sizeof(why)) < 0) {
			fprintf(stderr, "hybridctl: simulate: --format: %s\n", why);
			return 2;
		}
	}

	if (hy_replay_footprint_new(a.reads_only, a.cap, &fp) < 0) {
		fprintf(stderr, "hybridctl: simulate: out of memory\n");
		return 1;
	}
	hy_progress_init(&passes.bar, stderr, a.quiet, HY_PROGRESS_ITEMS, "requests", "pass");
	passes.count = 1 + (a.borg ? 1 : 0) + (unsigned)(a.npolicies * a.nsizes);
	pass_begin("footprint", 0);
	if (each_record(&a, count_footprint, fp, &rs, format, sizeof(format))) {
		hy_replay_footprint_free(fp);
		return 1;
	}
	footprint = hy_replay_footprint_blocks(fp);
	results = json_object_new_array();
	if (!a.json) {
		printf("trace %s (%s): %" PRIu64 " requests, %" PRIu64 " bad lines, %u devices; "
		       "%" PRIu64 " block accesses%s, footprint %" PRIu64 " blocks\n",
		       a.trace, format, rs.records, rs.bad_lines, rs.devices,
		       hy_replay_footprint_accesses(fp), a.reads_only ? " (reads)" : "", footprint);
		printf("%-6s %-10s %10s %9s %9s %9s %9s %12s %12s\n", "POLICY", "SIZE", "BLOCKS",
		       "HIT", "MISS", "READ HIT", "WRITE HIT", "SSD FILLS", "ACCESSES/S");
	}
	hy_replay_footprint_free(fp);
	if (a.borg && !status) {
		if (!a.timed) {
			hy_devmodel_defaults(HY_DEVMODEL_HDD, &a.backing);
			a.timed = true;
		}
		pass_begin("BORG", rs.records);
		borg = borg_json(&a, footprint, rs.records, &status);
	}
	for (size_t p = 0; p < a.npolicies && !status; p++) {
		for (size_t z = 0; z < a.nsizes && !status; z++) {
			const struct size_arg *sz = &a.sizes[z];
			uint64_t blocks =
				sz->percent ? (uint64_t)((double)footprint * sz->value / 100.0)
					    : (uint64_t)sz->value;
			struct hy_replay_config cfg = {
				.policy = a.policies[p],
				.capacity = blocks ? blocks : 1,
				.reads_only = a.reads_only,
				.max_accesses = a.cap,
				.backing = a.timed ? &a.backing : NULL,
				.ssd = a.timed ? &a.ssd : NULL,
				.write_back = a.write_back,
				.pore = a.pore,
				.pore_zone_bytes = a.pore_zone,
				.pore_open_permille = a.pore_open,
				.open_loop = a.open_loop,
				.speed = a.speed,
			};
			struct hy_replay_stats s;
			struct hy_replay *r;
			double t0, dt;

			t0 = now_s();
			{
				char label[64];

				snprintf(label, sizeof(label), "%s %s", policy_name(a.policies[p]),
					 sz->text);
				pass_begin(label, rs.records);
			}
			if (a.policies[p] == POLICY_FULL || a.policies[p] == POLICY_FULL_NORECA) {
				status = run_full(&a, a.policies[p], cfg.capacity, &s, why,
						  sizeof(why));
				if (status < 0) {
					fprintf(stderr, "hybridctl: simulate: %s\n", why);
					status = 1;
				}
			} else if (hy_replay_new(&cfg, &r, why, sizeof(why)) < 0) {
				fprintf(stderr, "hybridctl: simulate: %s\n", why);
				status = 1;
			} else {
				status = each_record(&a, replay_one, r, NULL, NULL, 0);
				hy_replay_get_stats(r, &s);
				hy_replay_free(r);
			}
			dt = now_s() - t0;
			if (status)
				break;
			if (a.json) {
				json_object_array_add(results,
						      result_json(policy_name(a.policies[p]), sz,
								  cfg.capacity, &s, dt));
			} else {
				uint64_t hits = s.read_hits + s.write_hits;

				printf("%-6s %-10s %10" PRIu64 " %9.4f %9.4f %9.4f %9.4f %12" PRIu64
				       " %12.0f\n",
				       policy_name(a.policies[p]), sz->text, cfg.capacity,
				       ratio(hits, s.accesses), 1.0 - ratio(hits, s.accesses),
				       ratio(s.read_hits, s.reads), ratio(s.write_hits, s.writes),
				       s.inserts, dt > 0 ? s.accesses / dt : 0.0);
				if (s.timed && (a.policies[p] == POLICY_FULL ||
						a.policies[p] == POLICY_FULL_NORECA))
					printf("       %s busy %.1f s; %" PRIu64
					       " dirty blocks written home\n",
					       hy_devmodel_kind_name(a.backing.kind),
					       s.backing_busy_ms / 1000, s.dirty_evictions);
				else if (s.timed)
					printf("       %s busy %.1f s, SSD busy %.1f s; response "
					       "mean %.3f ms, p99 %.3f ms\n",
					       hy_devmodel_kind_name(a.backing.kind),
					       s.backing_busy_ms / 1000, s.ssd_busy_ms / 1000,
					       s.all.mean_ms, s.all.p99_ms);
				if (s.open_loop)
					printf("       open loop: %.1f s from the first arrival to "
					       "the "
					       "last completion, mean wait %.3f ms (%" PRIu64
					       " requests waited)\n",
					       s.span_ms / 1000, s.wait_mean_ms, s.waited);
				if (s.timed && a.backing.kind == HY_DEVMODEL_SMR)
					printf("       write amplification %.2f, %" PRIu64
					       " band cleanings\n",
					       s.backing.write_amplification,
					       s.backing.band_cleanings);
			}
		}
	}
	if (a.json && !status) {
		struct json_object *root = json_object_new_object();

		json_object_object_add(root, "trace", json_object_new_string(a.trace));
		json_object_object_add(root, "format", json_object_new_string(format));
		json_object_object_add(root, "requests", json_object_new_uint64(rs.records));
		json_object_object_add(root, "bad_lines", json_object_new_uint64(rs.bad_lines));
		json_object_object_add(root, "devices", json_object_new_uint64(rs.devices));
		json_object_object_add(root, "reads_only", json_object_new_boolean(a.reads_only));
		json_object_object_add(root, "footprint_blocks", json_object_new_uint64(footprint));
		json_object_object_add(root, "results", results);
		json_object_object_add(root, "borg", borg);
		borg = NULL;
		printf("%s\n",
		       json_object_to_json_string_ext(
			       root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(root);
	} else {
		json_object_put(results);
	}
	json_object_put(borg);
	return status;
}

const struct hy_cli_command hy_ctl_simulate_command = {
	.name = "simulate",
	.run = simulate,
	.summary = "a block trace replayed through the cache's policies: hit ratios",
	.usage = "usage: hybridctl simulate TRACE [--format F] [--cache-size SIZE[,SIZE...]]\n"
		 "                          [--policy P[,P...]] [--reads-only] [--cap N]\n"
		 "                          [--strict] [--json] [--device hdd|ssd|smr]\n"
		 "                          [--device-param NAME=VALUE]... [--ssd-param "
		 "NAME=VALUE]...\n"
		 "\n"
		 "  SIZE  bytes (K, M, G, T suffixes) or P% of the trace's distinct 4 KiB blocks\n"
		 "        (default 1%,5%,10%,20%)\n"
		 "  P     lru, larc, freq, lru3 (default lru,larc,freq,lru3), or full (the whole\n"
		 "        cache: front buffer, heat filter, LRU3 store, ReCA) or full-noreca\n"
		 "  F     msr, heimdall, fiu, blkparse, disksim, spc, vscsi, tencent, arc,\n"
		 "        hybridfs (default: detected)\n"
		 "  --device: time the replay over a backing device model and an SSD model\n"
		 "        (devmodel.h): busy times, response times per class and category\n"
		 "  --no-front, --heat-threshold X, --policy-set CATEGORY.KEY=VALUE: the full\n"
		 "        policy without a front buffer, with another heat threshold, with a\n"
		 "        setting of ReCA's table changed (hybridctl policy's text form)\n"
		 "  --write-back: writes stay dirty in the cache until evicted (timed)\n"
		 "  --open-loop [--speed X]: requests arrive at their timestamps (divided by X)\n"
		 "        and wait for the storage, instead of one after the other (timed)\n"
		 "  --pore coverage|popularity|balance [--pore-zone SIZE] [--pore-open N]:\n"
		 "        PORE's zone-aware eviction (write-back, for an SMR --device)\n"
		 "  --borg [--split F | --borg-phases N] [--borg-mode cumulative|partial|both]\n"
		 "         [--borg-planner chains|greedy] [--borg-reads split]\n"
		 "         [--bopt-size SIZE|P%]: BORG's analyzer, planner, reconfigurator and\n"
		 "        read path (the daemon's) on the trace, served over the device model\n"
		 "        with each plan and without: two phases\n"
		 "        cut at F of the requests (0.5), or N phases with a reconfiguration\n"
		 "        before each (BORG-C plans from all before it, BORG-P from the one\n"
		 "        before); BOPT 10% of the footprint\n"
		 "  --quiet, -q: no progress bar (one per pass over the trace, \"pass i of n\",\n"
		 "        on standard error when it is a terminal)\n",
	.options = simulate_options,
};
