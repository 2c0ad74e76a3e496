/*
 * tune_cmd.c - `hybridctl tune [MOUNTPOINT] [--since T] [--apply] [--json]`:
 * replays the mount's own access log through its cache (the simulator's
 * whole cache, sim_full.h, at the mount's front buffer and store sizes)
 * under candidate policy tables, and ranks them by hit ratio (then by SSD
 * writes). ReCA found its configurations offline by hand; this does it
 * from the user's own trace. --apply puts the best table in force (the
 * "policy" control request, stored in the state database).
 *
 * Candidates: the table in force; the defaults; and the table in force
 * with every category's line size set to 4K, 16K and 64K; and with every
 * category's write policy set to the mount's. Then, with the table in
 * force, the store's replacement policies (lru3, lru, larc, freq), ranked
 * the same way; and, when the mount has a BOPT, BOPT read regions of half,
 * one, two and four times the mount's: BORG's analyzer and planner (the
 * daemon's greedy placement) trained on the first half of the log, the
 * plan carried out and the second half served through the daemon's map
 * and read path over the mount's emulate= disk model (a 7,200 rpm disk
 * without one), ranked by busy time (sim_borg.h).
 * Those two are mount options (cache_policy=, bopt_size=): tune prints
 * the options to remount with, but only for a gain of at least
 * --min-gain (2%) over the mount's own figure, as a share of it: a
 * remount is no advice for a hit ratio equal to the third decimal, or a
 * best that wins a tie on SSD writes alone. --apply puts the best table
 * in force. Each replay draws a progress line (progress.h). Exit status:
 * 0, 1 (no mount, no cache, no log, a replay failed), 2 (usage).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
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
#include "hybridfs/control.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/planner.h"
#include "hybridfs/policy.h"
#include "hybridfs/progress.h"
#include "hybridfs/sim_borg.h"
#include "hybridfs/sim_full.h"
#include "hybridfs/state.h"
#include "hybridfs/trace.h"
#include "hybridfs/trace_reader.h"
#include "hybridfs/workload_policy.h"

#define CANDIDATES	6
#define BOPT_CANDIDATES 4
#define BLOCK		4096u

/* What tune needs of the mount, from its status. */
struct mount_info {
	uint64_t lines, front; /* SSD store lines, DRAM front buffer blocks */
	char policy[16];       /* the store's replacement policy */
	uint64_t bopt_blocks;  /* the BOPT's read region; 0: no BOPT */
	uint64_t bopt_bytes;   /* the whole BOPT (bopt_size=) */
	char emulate[256];     /* emulate='s text; "": none */
};

struct bopt_candidate {
	uint64_t blocks; /* its read region */
	uint64_t bytes;	 /* the whole BOPT: the read region keeps its share */
	double vanilla_ms, planned_ms;
	uint64_t bopt_blocks_read;
};

struct candidate {
	const char *name;
	struct hy_workload_policy_table table;
	struct hy_sim_full_stats st;
	double hit_ratio;
};

#define DEFAULT_MIN_GAIN 2.0  /* percent: below it, no remount is advised */
#define PROGRESS_EVERY	 4096 /* records between two looks at the clock */

enum { OPT_SINCE = 1, OPT_APPLY, OPT_JSON, OPT_MIN_GAIN, OPT_QUIET };

static const struct hy_cli_option tune_options[] = {
	{"since", 0, true, OPT_SINCE, "a time T"}, {"apply", 0, false, OPT_APPLY, NULL},
	{"json", 0, false, OPT_JSON, NULL},	   {"min-gain", 0, true, OPT_MIN_GAIN, "a PERCENT"},
	{"quiet", 'q', false, OPT_QUIET, NULL},	   {0},
};

/* The replays' progress: one bar per replay, "pass i of n". */
struct passes {
	struct hy_progress bar;
	unsigned pass, count;
	uint64_t rows;
};

static void pass_begin(struct passes *ps, const char *label)
{
	hy_progress_begin(&ps->bar, label, ++ps->pass, ps->count, ps->rows);
}

/* The table in force from the daemon's "policy" answer. */
static int table_in_force(const char *dir, struct hy_workload_policy_table *t, char *why,
			  size_t why_size)
{
	struct json_object *result = NULL, *settings;
	int rc = hy_control_call(dir, HY_CONTROL_POLICY, 30000, &result, why, why_size);

	if (rc < 0)
		return rc;
	hy_workload_policy_defaults(t);
	if (json_object_object_get_ex(result, "settings", &settings)) {
		json_object_object_foreach(settings, name, value)
		{
			char setting[256];

			snprintf(setting, sizeof(setting), "%s=%s", name,
				 json_object_get_string(value));
			if (hy_workload_policy_set(t, setting, why, why_size) < 0) {
				json_object_put(result);
				return -EPROTO;
			}
		}
	}
	json_object_put(result);
	return 0;
}

/* The mount's cache sizes, store policy, BOPT and disk model, from its
 * status. */
static int mount_info(const char *dir, struct mount_info *m, char *why, size_t why_size)
{
	struct json_object *result = NULL, *cache, *bopt, *emu, *v;
	int rc = hy_control_call(dir, HY_CONTROL_STATUS, 30000, &result, why, why_size);

	memset(m, 0, sizeof(*m));
	if (rc < 0)
		return rc;
	if (!json_object_object_get_ex(result, "cache", &cache) || !cache) {
		snprintf(why, why_size, "the mount has no cache (cache=none, or profile=off)");
		json_object_put(result);
		return -ENOENT;
	}
	m->lines =
		json_object_object_get_ex(cache, "ssd_lines", &v) ? json_object_get_uint64(v) : 0;
	m->front =
		json_object_object_get_ex(cache, "dram_blocks", &v) ? json_object_get_uint64(v) : 0;
	snprintf(m->policy, sizeof(m->policy), "%s",
		 json_object_object_get_ex(cache, "policy", &v) ? json_object_get_string(v) : "");
	if (json_object_object_get_ex(result, "bopt", &bopt) && bopt &&
	    json_object_object_get_ex(bopt, "read_region_blocks", &v)) {
		m->bopt_blocks = json_object_get_uint64(v);
		if (json_object_object_get_ex(bopt, "bytes", &v))
			m->bopt_bytes = json_object_get_uint64(v);
	}
	if (json_object_object_get_ex(result, "emulation", &emu) && emu &&
	    json_object_object_get_ex(emu, "model", &v))
		snprintf(m->emulate, sizeof(m->emulate), "%s", json_object_get_string(v));
	json_object_put(result);
	return 0;
}

static void set_all(struct hy_workload_policy_table *t, const char *key, const char *value)
{
	char setting[128], why[256];

	for (int c = 0; c < HY_CATEGORY_COUNT; c++) {
		snprintf(setting, sizeof(setting), "%s.%s=%s",
			 hy_category_name((enum hy_category)c), key, value);
		if (hy_workload_policy_set(t, setting, why, sizeof(why)) < 0)
			fprintf(stderr, "hybridctl: tune: %s\n", why); /* cannot happen */
	}
}

/* One candidate over the exported log. 0, or 1 after saying why. */
static int replay(const char *trace, uint64_t lines, uint64_t front, enum hy_policy_kind policy,
		  struct candidate *c, struct passes *ps)
{
	struct hy_sim_full_config cfg = {
		.capacity = lines + front,
		.front_permille = lines + front ? (unsigned)(front * 1000 / (lines + front)) : 0,
		.no_front = front == 0,
		.heat_threshold = -1,
		.reca = true,
		.table = &c->table,
		.policy = policy,
	};
	struct hy_trace_reader *reader;
	struct hy_trace_record rec;
	struct hy_sim_full *f;
	char why[512];
	int rc;

	if (!cfg.front_permille && front)
		cfg.front_permille = 1;
	if (hy_sim_full_new(&cfg, &f, why, sizeof(why)) < 0 ||
	    hy_trace_reader_open(trace, "hybridfs", false, &reader, why, sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: tune: %s\n", why);
		return 1;
	}
	pass_begin(ps, c->name);
	for (uint64_t n = 1; (rc = hy_trace_reader_next(reader, &rec)) == 1; n++) {
		if (hy_sim_full_request(f, &rec) < 0) {
			rc = -EIO;
			break;
		}
		if (n % PROGRESS_EVERY == 0)
			hy_progress_update(&ps->bar, n, 0);
	}
	hy_progress_end(&ps->bar);
	if (rc < 0)
		fprintf(stderr, "hybridctl: tune: replaying the log: %s\n",
			rc == -EIO ? "the cache failed" : hy_trace_reader_error(reader));
	hy_trace_reader_close(reader);
	hy_sim_full_get_stats(f, &c->st);
	hy_sim_full_free(f);
	c->hit_ratio = c->st.accesses ? (double)(c->st.read_hits + c->st.write_hits) /
						(double)c->st.accesses
				      : 0;
	return rc < 0 ? 1 : 0;
}

/* BOPT read regions of @n sizes over the exported log: trained on its
 * first half, the second served with the plan and without over @model.
 * 0, or 1 after saying why. */
static int replay_bopt(const char *trace, uint64_t rows, const struct hy_devmodel_params *model,
		       struct bopt_candidate *b, int n, struct passes *ps)
{
	for (int i = 0; i < n; i++) {
		struct hy_sim_borg_run_config rc = {
			.requests = rows,
			.phases = 2,
			.split = rows / 2 ? rows / 2 : 1,
			.modes = {true, false},
			.capacity = b[i].blocks,
			.bopt_address = UINT64_MAX,
			.device = model,
		};
		const struct hy_sim_borg_phase *ph;
		struct hy_sim_borg_run *run = NULL;
		struct hy_trace_reader *reader = NULL;
		struct hy_trace_record rec;
		unsigned np;
		char why[512];
		int rc2 = 0;

		if (hy_sim_borg_run_new(&rc, &run, why, sizeof(why)) < 0 ||
		    hy_trace_reader_open(trace, "hybridfs", false, &reader, why, sizeof(why)) < 0) {
			fprintf(stderr, "hybridctl: tune: BOPT sizes: %s\n", why);
			hy_sim_borg_run_free(run);
			return 1;
		}
		{
			char label[48], size[32];

			hy_ctl_human_bytes(b[i].bytes, size, sizeof(size));
			snprintf(label, sizeof(label), "BOPT %s", size);
			pass_begin(ps, label);
		}
		for (uint64_t k = 1; rc2 >= 0 && (rc2 = hy_trace_reader_next(reader, &rec)) == 1;
		     k++) {
			if (hy_sim_borg_run_request(run, &rec, why, sizeof(why)) < 0)
				rc2 = -EIO;
			if (k % PROGRESS_EVERY == 0)
				hy_progress_update(&ps->bar, k, 0);
		}
		hy_progress_end(&ps->bar);
		if (rc2 < 0)
			fprintf(stderr, "hybridctl: tune: BOPT sizes: %s\n",
				rc2 == -EIO ? why : hy_trace_reader_error(reader));
		hy_trace_reader_close(reader);
		ph = hy_sim_borg_run_phases(run, &np);
		if (np >= 2) {
			b[i].vanilla_ms = ph[1].busy_ms_vanilla;
			b[i].planned_ms = ph[1].mode[HY_SIM_BORG_CUMULATIVE].busy_ms;
			b[i].bopt_blocks_read = ph[1].mode[HY_SIM_BORG_CUMULATIVE].bopt_blocks_read;
		}
		hy_sim_borg_run_free(run);
		if (rc2 < 0)
			return 1;
	}
	return 0;
}

static int by_busy(const void *a, const void *b)
{
	const struct bopt_candidate *x = a, *y = b;

	if (x->planned_ms != y->planned_ms)
		return x->planned_ms < y->planned_ms ? -1 : 1;
	return (x->blocks > y->blocks) - (x->blocks < y->blocks); /* the smaller first */
}

static int by_rank(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;

	if (x->hit_ratio != y->hit_ratio)
		return x->hit_ratio > y->hit_ratio ? -1 : 1;
	return x->st.ssd_bytes_written < y->st.ssd_bytes_written   ? -1
	       : x->st.ssd_bytes_written > y->st.ssd_bytes_written ? 1
								   : 0;
}

static int add_setting(void *arg, const char *name, const char *value)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s=%s", name, value);
	json_object_array_add(arg, json_object_new_string(buf));
	return 0;
}

/* Puts @t in force: a reset, then every setting of @t. */
static int apply(const char *dir, const struct hy_workload_policy_table *t)
{
	struct json_object *args = json_object_new_object(), *set = json_object_new_array();
	struct json_object *result = NULL;
	char why[512];
	int rc;

	json_object_object_add(args, "reset", json_object_new_boolean(true));
	hy_workload_policy_each(t, add_setting, set);
	json_object_object_add(args, "set", set);
	rc = hy_control_call_args(dir, HY_CONTROL_POLICY, args, 30000, &result, why, sizeof(why));
	json_object_put(args);
	json_object_put(result);
	if (rc < 0)
		fprintf(stderr, "hybridctl: tune: --apply: %s\n", why);
	return rc < 0 ? 1 : 0;
}

/* How much better @best is than @mine, as a share of @mine: for a hit
 * ratio (@higher_better) or a busy time. 0 when they are equal; when
 * @mine is 0 any gain is whole (1). */
static double gain_of(double mine, double best, bool higher_better)
{
	double d = higher_better ? best - mine : mine - best;

	if (d <= 0)
		return 0;
	return mine > 0 ? d / mine : 1;
}

static int tune(const struct hy_cli_command *command, int argc, char **argv)
{
	const char *mountpoint = NULL, *since = NULL, *value;
	bool do_apply = false, json = false, quiet = false;
	struct candidate c[CANDIDATES], sp[HY_POLICY_KINDS];
	struct bopt_candidate bc[BOPT_CANDIDATES];
	struct hy_devmodel_params model;
	struct mount_info m;
	char dir[PATH_MAX], why[1024], trace[PATH_MAX];
	struct hy_state *state = NULL;
	uint64_t lines = 0, front = 0, rows = 0;
	double min_gain = DEFAULT_MIN_GAIN / 100, policy_gain = 0, bopt_gain = 0;
	bool advise_policy, advise_bopt;
	struct passes ps;
	struct hy_cli cli;
	int nbopt = 0, rc, id;
	int64_t since_ns = 0;
	FILE *out;
	int fd, status = 0;

	if (hy_cli_begin(&cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(&cli, &id, &value)) > 0) {
		char *end;

		if (id == OPT_APPLY) {
			do_apply = true;
		} else if (id == OPT_JSON) {
			json = true;
		} else if (id == OPT_QUIET) {
			quiet = true;
		} else if (id == OPT_SINCE) {
			since = value;
		} else {
			min_gain = strtod(value, &end);
			if (end == value || *end || !(min_gain >= 0 && min_gain <= 1000)) {
				fprintf(stderr,
					"hybridctl: tune: --min-gain \"%s\": a percent from 0 to "
					"1000\n",
					value);
				return 2;
			}
			min_gain /= 100;
		}
	}
	if (rc < 0)
		return hy_cli_exit_status(rc);
	if (cli.nargs > 1)
		return hy_cli_usage_error(&cli, "one MOUNTPOINT only");
	mountpoint = cli.nargs ? cli.args[0] : NULL;
	if (since) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		if (hy_trace_parse_time(since, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec,
					&since_ns, why, sizeof(why)) < 0) {
			fprintf(stderr, "hybridctl: tune: --since: %s\n", why);
			return 2;
		}
	}
	status = hy_ctl_find_state_dir("tune", mountpoint, NULL, dir, sizeof(dir));
	if (status)
		return status;
	if (mount_info(dir, &m, why, sizeof(why)) < 0 ||
	    table_in_force(dir, &c[0].table, why, sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: tune: %s\n", why);
		return 1;
	}
	lines = m.lines;
	front = m.front;
	/* the disk the BOPT's plans are timed on: the mount's emulated one */
	if (!m.emulate[0] || hy_devmodel_parse_spec(m.emulate, &model, why, sizeof(why)) < 0)
		hy_devmodel_defaults(HY_DEVMODEL_HDD, &model);
	/* the log, exported as hybridfs's own trace */
	status = hy_ctl_open_log("tune", mountpoint, NULL, &state);
	if (status)
		return status;
	snprintf(trace, sizeof(trace), "%s/hybridfs-tune.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemp(trace);
	out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!out || hy_trace_export(state->db, HY_TRACE_CSV, since_ns, INT64_MAX, out, &rows, why,
				    sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: tune: exporting the log: %s\n",
			out ? why : strerror(errno));
		status = 1;
	}
	if (out && fclose(out) != 0 && !status) {
		fprintf(stderr, "hybridctl: tune: writing \"%s\": %s\n", trace, strerror(errno));
		status = 1;
	}
	hy_state_close(state);
	if (!status && rows == 0) {
		fprintf(stderr, "hybridctl: tune: the log holds no request%s to replay\n",
			since ? " since then" : "");
		status = 1;
	}
	if (!status) {
		c[0].name = "in force";
		hy_workload_policy_defaults(&c[1].table);
		c[1].name = "defaults";
		c[2].table = c[3].table = c[4].table = c[5].table = c[0].table;
		set_all(&c[2].table, "line_size", "4K");
		c[2].name = "lines 4K";
		set_all(&c[3].table, "line_size", "16K");
		c[3].name = "lines 16K";
		set_all(&c[4].table, "line_size", "64K");
		c[4].name = "lines 64K";
		set_all(&c[5].table, "write", "mount");
		c[5].name = "writes as the mount";
		for (int i = 0; i < HY_POLICY_KINDS; i++) {
			sp[i].table = c[0].table;
			sp[i].name = hy_policy_kind_name((enum hy_policy_kind)i);
		}
		hy_progress_init(&ps.bar, stderr, quiet, HY_PROGRESS_ITEMS, "requests", "pass");
		ps.pass = 0;
		ps.rows = rows;
		ps.count = CANDIDATES + HY_POLICY_KINDS +
			   (m.bopt_blocks && rows >= 2 ? BOPT_CANDIDATES : 0);
		for (int i = 0; i < CANDIDATES && !status; i++)
			status = replay(trace, lines, front, HY_POLICY_LRU3, &c[i], &ps);
		for (int i = 0; i < HY_POLICY_KINDS && !status; i++)
			status = replay(trace, lines, front, (enum hy_policy_kind)i, &sp[i], &ps);
		if (m.bopt_blocks) {
			static const double factor[BOPT_CANDIDATES] = {0.5, 1, 2, 4};

			for (nbopt = 0; nbopt < BOPT_CANDIDATES; nbopt++) {
				bc[nbopt] = (struct bopt_candidate){
					.blocks = (uint64_t)((double)m.bopt_blocks * factor[nbopt]),
					/* whole MiB: the option's usual unit */
					.bytes = ((uint64_t)((double)m.bopt_bytes * factor[nbopt]) +
						  (UINT64_C(1) << 20) - 1) &
						 ~((UINT64_C(1) << 20) - 1)};
				if (!bc[nbopt].blocks)
					bc[nbopt].blocks = 1;
			}
			if (!status && rows >= 2)
				status = replay_bopt(trace, rows, &model, bc, nbopt, &ps);
			else
				nbopt = 0; /* one request: nothing to train on and test */
		}
	}
	if (fd >= 0 && unlink(trace) < 0)
		fprintf(stderr, "hybridctl: tune: cannot remove \"%s\": %s\n", trace,
			strerror(errno));
	if (status)
		return status;
	qsort(c, CANDIDATES, sizeof(c[0]), by_rank);
	qsort(sp, HY_POLICY_KINDS, sizeof(sp[0]), by_rank);
	qsort(bc, (size_t)nbopt, sizeof(bc[0]), by_busy);
	/* a remount only for a better figure: the mount's own first on a tie */
	for (int i = 1; i < HY_POLICY_KINDS && by_rank(&sp[i], &sp[0]) == 0; i++)
		if (strcmp(sp[i].name, m.policy) == 0) {
			struct candidate t = sp[0];

			sp[0] = sp[i];
			sp[i] = t;
		}
	for (int i = 1; i < nbopt && bc[i].planned_ms == bc[0].planned_ms; i++)
		if (bc[i].blocks == m.bopt_blocks) {
			struct bopt_candidate t = bc[0];

			bc[0] = bc[i];
			bc[i] = t;
		}
	/* a remount only for a gain worth it: the mount's own figures
	 * against the best's, as a share of the mount's */
	for (int i = 0; i < HY_POLICY_KINDS; i++)
		if (strcmp(sp[i].name, m.policy) == 0)
			policy_gain = gain_of(sp[i].hit_ratio, sp[0].hit_ratio, true);
	for (int i = 0; i < nbopt; i++)
		if (bc[i].blocks == m.bopt_blocks)
			bopt_gain = gain_of(bc[i].planned_ms, bc[0].planned_ms, false);
	advise_policy =
		strcmp(sp[0].name, m.policy) != 0 && policy_gain >= min_gain && policy_gain > 0;
	advise_bopt =
		nbopt && bc[0].blocks != m.bopt_blocks && bopt_gain >= min_gain && bopt_gain > 0;
	if (json) {
		struct json_object *root = json_object_new_object(), *arr = json_object_new_array();
		struct json_object *pol = json_object_new_array(), *bopt = json_object_new_array();
		struct json_object *rec = json_object_new_object();
		char opt[64];

		json_object_object_add(root, "requests", json_object_new_uint64(rows));
		json_object_object_add(root, "ssd_lines", json_object_new_uint64(lines));
		json_object_object_add(root, "front_blocks", json_object_new_uint64(front));
		for (int i = 0; i < HY_POLICY_KINDS; i++) {
			struct json_object *o = json_object_new_object();

			json_object_object_add(o, "policy", json_object_new_string(sp[i].name));
			json_object_object_add(o, "hit_ratio",
					       json_object_new_double(sp[i].hit_ratio));
			json_object_object_add(o, "ssd_bytes_written",
					       json_object_new_uint64(sp[i].st.ssd_bytes_written));
			json_object_object_add(
				o, "current",
				json_object_new_boolean(strcmp(sp[i].name, m.policy) == 0));
			json_object_array_add(pol, o);
		}
		json_object_object_add(root, "store_policies", pol);
		for (int i = 0; i < nbopt; i++) {
			struct json_object *o = json_object_new_object();

			json_object_object_add(o, "bopt_bytes",
					       json_object_new_uint64(bc[i].bytes));
			json_object_object_add(o, "read_region_bytes",
					       json_object_new_uint64(bc[i].blocks * BLOCK));
			json_object_object_add(o, "busy_ms_vanilla",
					       json_object_new_double(bc[i].vanilla_ms));
			json_object_object_add(o, "busy_ms_planned",
					       json_object_new_double(bc[i].planned_ms));
			json_object_object_add(
				o, "reduction",
				json_object_new_double(bc[i].vanilla_ms > 0
							       ? 1 - bc[i].planned_ms /
										 bc[i].vanilla_ms
							       : 0));
			json_object_object_add(o, "bopt_blocks_read",
					       json_object_new_uint64(bc[i].bopt_blocks_read));
			json_object_object_add(
				o, "current",
				json_object_new_boolean(bc[i].blocks == m.bopt_blocks));
			json_object_array_add(bopt, o);
		}
		json_object_object_add(root, "bopt_sizes", nbopt ? bopt : NULL);
		json_object_object_add(
			root, "bopt_device",
			nbopt ? json_object_new_string(hy_devmodel_kind_name(model.kind)) : NULL);
		if (!nbopt)
			json_object_put(bopt);
		json_object_object_add(rec, "cache_policy", json_object_new_string(sp[0].name));
		if (nbopt) {
			snprintf(opt, sizeof(opt), "%" PRIu64 "M", bc[0].bytes >> 20);
			json_object_object_add(rec, "bopt_size", json_object_new_string(opt));
		}
		json_object_object_add(root, "recommended_options", rec);
		{
			/* what tune advises: the options above whose gain reaches
			 * min_gain (hybridctl(8)) */
			struct json_object *r = json_object_new_object();
			char text[128] = "";

			if (advise_policy)
				snprintf(text, sizeof(text), "cache_policy=%s", sp[0].name);
			if (advise_bopt)
				snprintf(text + strlen(text), sizeof(text) - strlen(text),
					 "%sbopt_size=%" PRIu64 "M", *text ? "," : "",
					 bc[0].bytes >> 20);
			json_object_object_add(
				r, "advised",
				json_object_new_boolean(advise_policy || advise_bopt));
			json_object_object_add(r, "options",
					       *text ? json_object_new_string(text) : NULL);
			json_object_object_add(r, "cache_policy_gain",
					       json_object_new_double(policy_gain));
			json_object_object_add(r, "bopt_size_gain",
					       nbopt ? json_object_new_double(bopt_gain) : NULL);
			json_object_object_add(r, "min_gain", json_object_new_double(min_gain));
			json_object_object_add(root, "remount", r);
		}
		for (int i = 0; i < CANDIDATES; i++) {
			struct json_object *o = json_object_new_object();

			json_object_object_add(o, "candidate", json_object_new_string(c[i].name));
			json_object_object_add(o, "hit_ratio",
					       json_object_new_double(c[i].hit_ratio));
			json_object_object_add(o, "accesses",
					       json_object_new_uint64(c[i].st.accesses));
			json_object_object_add(o, "ssd_bytes_written",
					       json_object_new_uint64(c[i].st.ssd_bytes_written));
			json_object_array_add(arr, o);
		}
		json_object_object_add(root, "ranking", arr);
		json_object_object_add(root, "applied", json_object_new_boolean(do_apply));
		printf("%s\n",
		       json_object_to_json_string_ext(
			       root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(root);
	} else {
		char w[32];

		printf("replayed %" PRIu64 " requests of the log through a cache of %" PRIu64
		       " SSD lines and %" PRIu64 " DRAM blocks:\n",
		       rows, lines, front);
		printf("%-4s %-22s %9s %14s\n", "RANK", "CANDIDATE", "HIT", "SSD WRITTEN");
		for (int i = 0; i < CANDIDATES; i++) {
			hy_ctl_human_bytes(c[i].st.ssd_bytes_written, w, sizeof(w));
			printf("%-4d %-22s %9.4f %14s\n", i + 1, c[i].name, c[i].hit_ratio, w);
		}
		printf("\nthe store's replacement policy (cache_policy=), with the table in "
		       "force:\n");
		printf("%-4s %-22s %9s %14s\n", "RANK", "POLICY", "HIT", "SSD WRITTEN");
		for (int i = 0; i < HY_POLICY_KINDS; i++) {
			hy_ctl_human_bytes(sp[i].st.ssd_bytes_written, w, sizeof(w));
			printf("%-4d %-22s %9.4f %14s%s\n", i + 1, sp[i].name, sp[i].hit_ratio, w,
			       strcmp(sp[i].name, m.policy) == 0 ? "  (the mount's)" : "");
		}
		if (nbopt) {
			printf("\nthe BOPT's read region (bopt_size=): trained on the first half "
			       "of "
			       "the log, the second half over the %s model\n",
			       hy_devmodel_kind_name(model.kind));
			printf("%-4s %-12s %12s %12s %8s\n", "RANK", "SIZE", "BUSY MS", "WITHOUT",
			       "LESS");
			for (int i = 0; i < nbopt; i++) {
				hy_ctl_human_bytes(bc[i].bytes, w, sizeof(w));
				printf("%-4d %-12s %12.1f %12.1f %7.1f%%%s\n", i + 1, w,
				       bc[i].planned_ms, bc[i].vanilla_ms,
				       bc[i].vanilla_ms > 0
					       ? 100 * (1 - bc[i].planned_ms / bc[i].vanilla_ms)
					       : 0.0,
				       bc[i].blocks == m.bopt_blocks ? "  (the mount's)" : "");
			}
		}
	}
	if (do_apply) {
		status = apply(dir, &c[0].table);
		if (!status && !json)
			printf("\"%s\" is in force now (hybridctl policy get shows it)\n",
			       c[0].name);
	}
	/* the store's order and the BOPT's size are fixed for a mount's life:
	 * a remount is advised only for a gain of at least min_gain */
	if (!json && (advise_policy || advise_bopt)) {
		printf("remount with -o");
		if (advise_policy)
			printf(" cache_policy=%s", sp[0].name);
		if (advise_bopt)
			printf("%sbopt_size=%" PRIu64 "M", advise_policy ? "," : " ",
			       bc[0].bytes >> 20);
		printf(" to use the best of these (a mount option: not changed by --apply)\n");
	} else if (!json && (strcmp(sp[0].name, m.policy) != 0 ||
			     (nbopt && bc[0].blocks != m.bopt_blocks))) {
		printf("no remount advised: the mount's cache_policy= and bopt_size= are within "
		       "%.4g%% of the best (--min-gain)\n",
		       min_gain * 100);
	}
	return status;
}

const struct hy_cli_command hy_ctl_tune_command = {
	.name = "tune",
	.run = tune,
	.summary = "the mount's own log replayed under candidate policies, ranked",
	.usage = "usage: hybridctl tune [MOUNTPOINT] [--since T] [--apply] [--min-gain PERCENT]\n"
		 "                      [--quiet] [--json]\n"
		 "\n"
		 "  --since T           the log since T (-2h, an ISO 8601 time); all of it\n"
		 "  --apply             put the best policy table in force (policy reset, set)\n"
		 "  --min-gain PERCENT  advise a remount (cache_policy=, bopt_size=) only when\n"
		 "                      it gains at least PERCENT over the mount's own (2)\n"
		 "  --quiet, -q         no progress bar\n"
		 "  --json              the rankings as JSON (hybridctl(8))\n"
		 "A progress bar per replay (pass i of n, rate, ETA) is drawn on standard\n"
		 "error when it is a terminal.\n",
	.options = tune_options,
};
