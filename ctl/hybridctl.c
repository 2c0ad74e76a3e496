/*
 * hybridctl.c - what a person uses to see what hybridfs is doing.
 *
 *   hybridctl status [MOUNTPOINT] [--json | --format text|json|prometheus [--output FILE]]
 *
 * and dispatches the other subcommands, one file each (ctl.h).
 *
 * Mounts are found through the runtime registry (runtime.h); the state
 * folder's database is opened read-only. The command table is here; its
 * parsing, help and suggestions are cli.h's. Exit status: 0, 1 when a
 * mount cannot be read or its daemon does not answer, 2 for a bad command
 * line.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include "hybridfs/cli.h"
#include "hybridfs/control.h"
#include "hybridfs/log.h"
#include "hybridfs/mount_name.h"
#include "hybridfs/ondisk.h"
#include "hybridfs/runtime.h"
#include "hybridfs/state.h"
#include "ctl.h"

/* What status reports of one mount. Stable JSON field names: see
 * hybridctl(8). */
struct mount_status {
	const struct hy_runtime_entry *entry;
	int64_t uptime;
	int64_t database_bytes;
	int schema_version;
	char error[512];	    /* why the state could not be read, or "" */
	struct json_object *daemon; /* the daemon's "status" result, or NULL */
	char daemon_error[512];	    /* why it could not be had, or "" */
};

static int64_t file_size(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

static void collect(const struct hy_runtime_entry *entry, struct mount_status *ms)
{
	struct hy_state *state;

	memset(ms, 0, sizeof(*ms));
	ms->entry = entry;
	ms->uptime = (int64_t)time(NULL) - entry->started;
	ms->database_bytes = file_size(entry->state_dir, HY_STATE_DB_NAME) +
			     file_size(entry->state_dir, HY_STATE_DB_NAME "-wal");
	if (hy_state_open(entry->state_dir, NULL, true, &state, ms->error, sizeof(ms->error)) ==
	    0) {
		ms->schema_version = HY_STATE_SCHEMA_VERSION;
		hy_state_close(state);
	}
	if (hy_control_call(entry->state_dir, HY_CONTROL_STATUS, 5000, &ms->daemon,
			    ms->daemon_error, sizeof(ms->daemon_error)) < 0)
		ms->daemon = NULL;
}

static struct json_object *jstr(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static void print_json(struct mount_status *list, size_t n)
{
	struct json_object *root = json_object_new_object(), *mounts = json_object_new_array();

	json_object_object_add(root, "version", json_object_new_int(1));
	for (size_t i = 0; i < n; i++) {
		const struct hy_runtime_entry *e = list[i].entry;
		struct json_object *m = json_object_new_object();

		json_object_object_add(m, "mountpoint", jstr(e->mountpoint));
		json_object_object_add(m, "backing", jstr(e->backing));
		json_object_object_add(m, "state_dir", jstr(e->state_dir));
		json_object_object_add(m, "uuid", jstr(e->uuid));
		json_object_object_add(m, "pid", json_object_new_int(e->pid));
		json_object_object_add(m, "started", json_object_new_int64(e->started));
		json_object_object_add(m, "uptime_seconds", json_object_new_int64(list[i].uptime));
		json_object_object_add(m, "database_bytes",
				       json_object_new_int64(list[i].database_bytes));
		json_object_object_add(m, "schema_version",
				       json_object_new_int(list[i].schema_version));
		json_object_object_add(m, "error", list[i].error[0] ? jstr(list[i].error) : NULL);
		/* the daemon's own report, passed on as it is (hybridctl(8)) */
		json_object_object_add(m, "daemon", json_object_get(list[i].daemon));
		json_object_object_add(m, "daemon_error",
				       list[i].daemon_error[0] && !list[i].daemon
					       ? jstr(list[i].daemon_error)
					       : NULL);
		json_object_array_add(mounts, m);
	}
	json_object_object_add(root, "mounts", mounts);
	hy_ctl_print_json(root);
	json_object_put(root);
}

static uint64_t jget_u64(struct json_object *obj, const char *key1, const char *key2)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(obj, key1, &v))
		return 0;
	if (key2 && !json_object_object_get_ex(v, key2, &v))
		return 0;
	return json_object_get_uint64(v);
}

void hy_ctl_print_json(struct json_object *obj)
{
	printf("%s\n", json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
								   JSON_C_TO_STRING_NOSLASHESCAPE));
}

void hy_ctl_human_bytes(uint64_t b, char *buf, size_t size)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4)
		v /= 1024, u++;
	if (u == 0)
		snprintf(buf, size, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
}

/* BORG's line: the BOPT, the map, the last reorganization. */
static void print_bopt(struct json_object *d)
{
	struct json_object *b = NULL, *re = NULL, *v = NULL;
	char size[32], copied[32];

	if (!json_object_object_get_ex(d, "bopt", &b) || !b) {
		printf("%-12s none (reorganize is off)\n", "bopt");
		return;
	}
	hy_ctl_human_bytes(jget_u64(b, "bytes", NULL), size, sizeof(size));
	json_object_object_get_ex(b, "path", &v);
	printf("%-12s %s, %s: %llu blocks of %llu files relocated (%llu extents, %llu dirty), "
	       "%llu reads and %llu writes served, %llu stale files dropped\n",
	       "bopt", v ? json_object_get_string(v) : "?", size,
	       (unsigned long long)jget_u64(b, "map_blocks", NULL),
	       (unsigned long long)jget_u64(b, "map_files", NULL),
	       (unsigned long long)jget_u64(b, "map_extents", NULL),
	       (unsigned long long)jget_u64(b, "dirty_blocks", NULL),
	       (unsigned long long)jget_u64(b, "bopt_reads", NULL),
	       (unsigned long long)jget_u64(b, "bopt_writes", NULL),
	       (unsigned long long)jget_u64(b, "stale_files", NULL));
	if (json_object_object_get_ex(b, "reorganization", &re) && jget_u64(re, "run", NULL)) {
		json_object_object_get_ex(re, "phase", &v);
		hy_ctl_human_bytes(jget_u64(re, "copied_blocks", NULL) * 4096, copied,
				   sizeof(copied));
		printf("%-12s %s (plan %llu): %s copied, %llu ranges skipped", "reorganized",
		       v ? json_object_get_string(v) : "?",
		       (unsigned long long)jget_u64(re, "generation", NULL), copied,
		       (unsigned long long)jget_u64(re, "skipped_ranges", NULL));
		/* what the plan was weighed at (gain.h); absent: not weighed */
		if (json_object_object_get_ex(re, "model", &v) && v) {
			struct json_object *dec = NULL, *pl = NULL, *cur = NULL;

			json_object_object_get_ex(v, "decision", &dec);
			json_object_object_get_ex(v, "planned_ms", &pl);
			json_object_object_get_ex(v, "current_ms", &cur);
			printf("; weighed %.0f ms with the plan, %.0f ms without: %s",
			       pl ? json_object_get_double(pl) : 0.0,
			       cur ? json_object_get_double(cur) : 0.0,
			       dec ? json_object_get_string(dec) : "?");
		}
		printf("\n");
	}
	if (json_object_object_get_ex(b, "readahead", &v) && v &&
	    jget_u64(v, "window_bytes", NULL)) {
		char window[32], asked[32];

		hy_ctl_human_bytes(jget_u64(v, "window_bytes", NULL), window, sizeof(window));
		hy_ctl_human_bytes(jget_u64(v, "bytes", NULL), asked, sizeof(asked));
		printf("%-12s %s ahead of a chain: %llu requests, %s\n", "read-ahead", window,
		       (unsigned long long)jget_u64(v, "requests", NULL), asked);
	}
	if (json_object_object_get_ex(b, "warm", &v) && v &&
	    (jget_u64(v, "runs", NULL) ||
	     json_object_get_boolean(json_object_object_get(v, "armed"))))
		printf("%-12s %llu runs: %llu directories, %llu files (%llu missing)%s\n",
		       "warm-up", (unsigned long long)jget_u64(v, "runs", NULL),
		       (unsigned long long)jget_u64(v, "directories", NULL),
		       (unsigned long long)jget_u64(v, "files", NULL),
		       (unsigned long long)jget_u64(v, "missing", NULL),
		       json_object_get_boolean(json_object_object_get(v, "armed"))
			       ? "; armed for the next read from the BOPT"
			       : "");
}

/* The cache's lines: hit ratios by tier, occupancy, dirty bytes, what
 * the heat filter and the cleaner did. */
static void print_cache(struct json_object *d)
{
	struct json_object *c = NULL, *wp = NULL, *pol = NULL, *path = NULL, *pore = NULL;
	uint64_t reads, writes;
	char dirty[32], written[32];

	if (!json_object_object_get_ex(d, "cache", &c) || !c) {
		printf("%-12s none\n", "cache");
		return;
	}
	json_object_object_get_ex(c, "write_policy", &wp);
	json_object_object_get_ex(c, "policy", &pol);
	reads = jget_u64(c, "read_hits_dram", NULL) + jget_u64(c, "read_hits_ssd", NULL) +
		jget_u64(c, "read_misses", NULL);
	writes = jget_u64(c, "write_hits_dram", NULL) + jget_u64(c, "write_hits_ssd", NULL) +
		 jget_u64(c, "write_misses", NULL);
	hy_ctl_human_bytes(jget_u64(c, "dirty_bytes", NULL), dirty, sizeof(dirty));
	hy_ctl_human_bytes(jget_u64(c, "ssd_bytes_written", NULL), written, sizeof(written));
	json_object_object_get_ex(c, "path", &path);
	printf("%-12s %s, write-%s, %s; DRAM %llu/%llu blocks, SSD %llu/%llu lines; %s dirty "
	       "(cleaner backlog %llu blocks)\n",
	       "cache", path ? json_object_get_string(path) : "?",
	       wp ? json_object_get_string(wp) : "?", pol ? json_object_get_string(pol) : "?",
	       (unsigned long long)jget_u64(c, "dram_used", NULL),
	       (unsigned long long)jget_u64(c, "dram_blocks", NULL),
	       (unsigned long long)jget_u64(c, "ssd_used", NULL),
	       (unsigned long long)jget_u64(c, "ssd_lines", NULL), dirty,
	       (unsigned long long)jget_u64(c, "cleaner_backlog", NULL));
	printf("%-12s reads %.1f%% DRAM + %.1f%% SSD of %llu blocks, writes %.1f%% DRAM + %.1f%% "
	       "SSD of %llu\n",
	       "cache hits", reads ? 100.0 * jget_u64(c, "read_hits_dram", NULL) / reads : 0.0,
	       reads ? 100.0 * jget_u64(c, "read_hits_ssd", NULL) / reads : 0.0,
	       (unsigned long long)reads,
	       writes ? 100.0 * jget_u64(c, "write_hits_dram", NULL) / writes : 0.0,
	       writes ? 100.0 * jget_u64(c, "write_hits_ssd", NULL) / writes : 0.0,
	       (unsigned long long)writes);
	printf("%-12s %s written to the SSD; heat sent %llu blocks there and kept %llu off; "
	       "%llu DRAM and %llu SSD evictions; %llu blocks cleaned\n",
	       "cache work", written, (unsigned long long)jget_u64(c, "heat_admitted", NULL),
	       (unsigned long long)jget_u64(c, "heat_refused", NULL),
	       (unsigned long long)jget_u64(c, "dram_evictions", NULL),
	       (unsigned long long)jget_u64(c, "ssd_evictions", NULL),
	       (unsigned long long)jget_u64(c, "cleaned_blocks", NULL));
	/* the persistent cache: what the mount kept of the store */
	{
		struct json_object *k = NULL, *dr = NULL;

		struct json_object *across = NULL;

		if (json_object_object_get_ex(c, "keep", &k) && k &&
		    json_object_object_get_ex(k, "across_mounts", &across) &&
		    !json_object_get_boolean(across)) {
			printf("%-12s nothing across mounts (cache_keep: the store lies on the "
			       "backing disk, which spins, or cache_keep=off)\n",
			       "cache kept");
		} else if (k) {
			json_object_object_get_ex(k, "dropped", &dr);
			printf("%-12s kept %llu lines of %llu files at mount (%llu files checked "
			       "and used, %llu not used yet), %llu SSD hits from them; dropped "
			       "%llu lines changed (%llu files changed while unmounted, %llu "
			       "written home after a crash), %llu gone, %llu unverifiable, %llu "
			       "damaged\n",
			       "cache kept", (unsigned long long)jget_u64(k, "kept_lines", NULL),
			       (unsigned long long)jget_u64(k, "kept_files", NULL),
			       (unsigned long long)jget_u64(k, "verified_files", NULL),
			       (unsigned long long)jget_u64(k, "pending_files", NULL),
			       (unsigned long long)jget_u64(k, "warm_hits", NULL),
			       (unsigned long long)(jget_u64(dr, "stale_lines", NULL) +
						    jget_u64(dr, "changed_lines", NULL)),
			       (unsigned long long)jget_u64(dr, "stale_files", NULL),
			       (unsigned long long)jget_u64(dr, "changed_files", NULL),
			       (unsigned long long)jget_u64(dr, "gone_lines", NULL),
			       (unsigned long long)jget_u64(dr, "unverifiable_lines", NULL),
			       (unsigned long long)jget_u64(dr, "damaged_lines", NULL));
		}
	}
	/* ReCA: what the per-process policies did */
	printf("%-12s %llu blocks kept out by their class, %llu read ahead to fill lines; "
	       "%llu files migrated to larger lines (%llu blocks read in, %llu given up), "
	       "%llu sent home on leaving write-back\n",
	       "cache reca", (unsigned long long)jget_u64(c, "admit_bypassed", NULL),
	       (unsigned long long)jget_u64(c, "line_prefetched", NULL),
	       (unsigned long long)jget_u64(c, "migrations", NULL),
	       (unsigned long long)jget_u64(c, "migrate_filled", NULL),
	       (unsigned long long)jget_u64(c, "migrate_dropped", NULL),
	       (unsigned long long)jget_u64(c, "migrate_home", NULL));
	/* PORE (backend=smr) */
	if (json_object_object_get_ex(c, "pore", &pore) && pore) {
		struct json_object *rule = NULL;

		json_object_object_get_ex(pore, "rule", &rule);
		printf("%-12s %s: %llu of %llu zones with dirty blocks open (%llu zones seen, "
		       "%llu divisions); %llu dirty blocks held back, %llu passes forced\n",
		       "cache pore", rule ? json_object_get_string(rule) : "?",
		       (unsigned long long)jget_u64(pore, "open_zones", NULL),
		       (unsigned long long)jget_u64(pore, "dirty_zones", NULL),
		       (unsigned long long)jget_u64(pore, "zones", NULL),
		       (unsigned long long)jget_u64(pore, "divisions", NULL),
		       (unsigned long long)jget_u64(pore, "held_blocks", NULL),
		       (unsigned long long)jget_u64(pore, "forced_passes", NULL));
	}
}

/* Pins and excludes (rules.h): what is pinned and held, what is kept out. */
static void print_rules(struct json_object *d)
{
	struct json_object *r = NULL, *ex = NULL;
	char pinned[32], held[32], cap[32];
	size_t ne;

	if (!json_object_object_get_ex(d, "rules", &r) || !r)
		return;
	hy_ctl_human_bytes(jget_u64(r, "pinned_bytes", NULL), pinned, sizeof(pinned));
	hy_ctl_human_bytes(jget_u64(r, "held_bytes", NULL), held, sizeof(held));
	hy_ctl_human_bytes(jget_u64(r, "cap_bytes", NULL), cap, sizeof(cap));
	printf("%-12s %llu files (%s) pinned, %s held in the SSD of at most %s; %llu blocks over "
	       "the cap\n",
	       "cache pins", (unsigned long long)jget_u64(r, "pinned_files", NULL), pinned, held,
	       cap, (unsigned long long)jget_u64(r, "over_cap_blocks", NULL));
	json_object_object_get_ex(r, "excludes", &ex);
	ne = ex ? json_object_array_length(ex) : 0;
	printf("%-12s", "cache excl.");
	for (size_t i = 0; i < ne; i++)
		printf("%s %s", i ? "," : "",
		       json_object_get_string(json_object_object_get(
			       json_object_array_get_idx(ex, i), "pattern")));
	printf("%s; %llu requests went around the cache\n", ne ? "" : " none",
	       (unsigned long long)jget_u64(r, "excluded_requests", NULL));
}

/* ReCA's request classes of the mount's reads and writes, in shares. */
static void print_classes(struct json_object *prof)
{
	static const char *const names[] = {"sequential", "strided", "overlapped", "random"};
	static const char *const modes[] = {"read", "write"};
	struct json_object *classes = NULL;

	if (!prof || !json_object_object_get_ex(prof, "classes", &classes))
		return;
	printf("%-12s", "classes");
	for (int m = 0; m < 2; m++) {
		struct json_object *k = NULL;
		uint64_t n[4], total = 0;

		json_object_object_get_ex(classes, modes[m], &k);
		for (int i = 0; i < 4; i++)
			total += n[i] = k ? jget_u64(k, names[i], NULL) : 0;
		printf("%s %ss", m ? ";" : "", modes[m]);
		for (int i = 0; i < 4; i++)
			printf("%s %.0f%% %s", i ? "," : "",
			       total ? 100.0 * (double)n[i] / (double)total : 0.0, names[i]);
	}
	printf("\n");
}

/* Where the database, the store and the BOPT are, and why (the daemon's
 * "disks"). */
static void print_disks(struct json_object *d)
{
	struct json_object *disks = NULL;

	if (!json_object_object_get_ex(d, "disks", &disks) ||
	    !json_object_is_type(disks, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(disks); i++) {
		struct json_object *e = json_object_array_get_idx(disks, i), *what = NULL,
				   *path = NULL, *disk = NULL, *kind = NULL, *why = NULL;

		json_object_object_get_ex(e, "what", &what);
		json_object_object_get_ex(e, "path", &path);
		json_object_object_get_ex(e, "disk", &disk);
		json_object_object_get_ex(e, "kind", &kind);
		json_object_object_get_ex(e, "why", &why);
		if (path && disk)
			printf("%-12s %s %s on %s (%s): %s\n", i ? "" : "disks",
			       json_object_get_string(what), json_object_get_string(path),
			       json_object_get_string(disk),
			       kind ? json_object_get_string(kind) : "?",
			       why ? json_object_get_string(why) : "");
		else
			printf("%-12s %s: %s\n", i ? "" : "disks", json_object_get_string(what),
			       why ? json_object_get_string(why) : "none");
	}
}

static void print_daemon(struct json_object *d)
{
	static const char *const ops[] = {"lookup", "getattr",	 "setattr", "readdir",
					  "open",   "create",	 "read",    "write",
					  "fsync",  "namespace", "xattr",   "other"};
	struct json_object *procs = NULL, *prof = NULL, *enabled = NULL;
	char r[32], w[32];

	printf("%-12s", "operations");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		printf("%s %s %llu", i ? "," : "", ops[i],
		       (unsigned long long)jget_u64(d, "operations", ops[i]));
	printf("\n");
	hy_ctl_human_bytes(jget_u64(d, "bytes", "read"), r, sizeof(r));
	hy_ctl_human_bytes(jget_u64(d, "bytes", "written"), w, sizeof(w));
	printf("%-12s %s read, %s written\n", "data", r, w);
	if (json_object_object_get_ex(d, "profiler", &prof) &&
	    json_object_object_get_ex(prof, "enabled", &enabled) &&
	    json_object_get_boolean(enabled))
		printf("%-12s on: %llu requests logged, %llu dropped, %llu queued, %llu pruned\n",
		       "profiler", (unsigned long long)jget_u64(prof, "written", NULL),
		       (unsigned long long)jget_u64(prof, "dropped", NULL),
		       (unsigned long long)jget_u64(prof, "queued", NULL),
		       (unsigned long long)jget_u64(prof, "pruned", NULL));
	else
		printf("%-12s off\n", "profiler");
	print_classes(prof);
	print_disks(d);
	print_bopt(d);
	print_cache(d);
	print_rules(d);
	{
		struct json_object *e = NULL, *model = NULL, *v = NULL;

		if (json_object_object_get_ex(d, "emulation", &e) && e &&
		    json_object_object_get_ex(e, "model", &model)) {
			double modeled = 0, waited = 0;

			if (json_object_object_get_ex(e, "modeled_ms", &v))
				modeled = json_object_get_double(v);
			if (json_object_object_get_ex(e, "waited_ms", &v))
				waited = json_object_get_double(v);
			printf("%-12s %s: %llu requests delayed, %.1f s of disk time modeled, "
			       "%.1f s waited\n",
			       "emulation", json_object_get_string(model),
			       (unsigned long long)jget_u64(e, "requests", NULL), modeled / 1000,
			       waited / 1000);
		}
	}
	if (!json_object_object_get_ex(d, "processes", &procs) || !json_object_array_length(procs))
		return;
	/* META: lookups, getattrs and readdirs; POLICY: what the cache does
	 * for the process (ReCA): write policy, line size, eviction */
	printf("\n%7s  %-16s %9s %9s %10s %10s %8s  %-28s %-9s %s\n", "PID", "PROCESS", "READS",
	       "WRITES", "READ", "WRITTEN", "META", "CATEGORY", "MIX", "POLICY");
	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		struct json_object *p = json_object_array_get_idx(procs, i), *name = NULL,
				   *cat = NULL, *policy = NULL;
		char mix[32], brief[64];

		json_object_object_get_ex(p, "name", &name);
		json_object_object_get_ex(p, "category", &cat);
		json_object_object_get_ex(p, "policy", &policy);
		hy_ctl_human_bytes(jget_u64(p, "bytes_read", NULL), r, sizeof(r));
		hy_ctl_human_bytes(jget_u64(p, "bytes_written", NULL), w, sizeof(w));
		hy_ctl_class_mix(p, mix, sizeof(mix));
		hy_ctl_policy_brief(policy, brief, sizeof(brief));
		printf("%7llu  %-16s %9llu %9llu %10s %10s %8llu  %-28s %-9s %s\n",
		       (unsigned long long)jget_u64(p, "pid", NULL),
		       name ? json_object_get_string(name) : "?",
		       (unsigned long long)jget_u64(p, "reads", NULL),
		       (unsigned long long)jget_u64(p, "writes", NULL), r, w,
		       (unsigned long long)(jget_u64(p, "lookups", NULL) +
					    jget_u64(p, "getattrs", NULL) +
					    jget_u64(p, "readdirs", NULL)),
		       cat ? json_object_get_string(cat) : "?", mix, brief);
	}
}

void hy_ctl_human_duration(int64_t s, char *buf, size_t size)
{
	if (s >= 86400)
		snprintf(buf, size, "%" PRId64 "d %" PRId64 "h", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(buf, size, "%" PRId64 "h %" PRId64 "m", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		snprintf(buf, size, "%" PRId64 "m %" PRId64 "s", s / 60, s % 60);
	else
		snprintf(buf, size, "%" PRId64 "s", s);
}

static void print_human(struct mount_status *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct hy_runtime_entry *e = list[i].entry;
		char up[32];

		hy_ctl_human_duration(list[i].uptime, up, sizeof(up));
		printf("%s%-12s %s\n", i ? "\n" : "", "mount", e->mountpoint);
		printf("%-12s %s\n", "backing", e->backing);
		printf("%-12s %s\n", "state", e->state_dir);
		if (list[i].error[0])
			printf("%-12s unreadable: %s\n", "database", list[i].error);
		else
			printf("%-12s %.1f KiB, schema version %d\n", "database",
			       (double)list[i].database_bytes / 1024.0, list[i].schema_version);
		printf("%-12s %s\n", "mount id", e->uuid);
		printf("%-12s pid %d, up %s\n", "daemon", (int)e->pid, up);
		if (list[i].daemon)
			print_daemon(list[i].daemon);
		else
			printf("%-12s no answer: %s\n", "status", list[i].daemon_error);
	}
}

/* The Prometheus exposition (ctl/metrics_cmd.c); a mount whose database
 * cannot be read still has its daemon's figures. */
static int print_prometheus(const struct mount_status *list, size_t n, const char *output)
{
	const char **mountpoints = calloc(n ? n : 1, sizeof(*mountpoints));
	struct json_object **daemons = calloc(n ? n : 1, sizeof(*daemons));
	int status = 1;

	if (mountpoints && daemons) {
		for (size_t i = 0; i < n; i++) {
			mountpoints[i] = list[i].entry->mountpoint;
			daemons[i] = list[i].daemon;
		}
		status = hy_ctl_status_prometheus(mountpoints, daemons, n, output);
	} else {
		fprintf(stderr, "hybridctl: out of memory\n");
	}
	free(mountpoints);
	free(daemons);
	return status;
}

enum { STATUS_JSON = 1, STATUS_FORMAT, STATUS_OUTPUT };

static const struct hy_cli_option status_options[] = {
	{"json", 0, false, STATUS_JSON, NULL},
	{"format", 0, true, STATUS_FORMAT, "text, json or prometheus"},
	{"output", 0, true, STATUS_OUTPUT, "FILE"},
	{0},
};

/* --format's words */
enum status_format { STATUS_TEXT, STATUS_AS_JSON, STATUS_PROMETHEUS };
static const char *const status_formats[] = {"text", "json", "prometheus", NULL};

static int cmd_status(const struct hy_cli_command *command, int argc, char **argv)
{
	struct hy_runtime_entry *entries;
	struct mount_status *list;
	const char *mountpoint = NULL, *output = NULL, *value;
	enum status_format format = STATUS_TEXT;
	char real[PATH_MAX];
	struct hy_cli cli;
	size_t n, shown = 0;
	int rc, id, status = 0;

	if (hy_cli_begin(&cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(&cli, &id, &value)) > 0) {
		if (id == STATUS_JSON) {
			format = STATUS_AS_JSON;
		} else if (id == STATUS_OUTPUT) {
			output = value;
		} else {
			rc = hy_cli_choice(&cli, "--format", value, status_formats);
			if (rc < 0)
				return 2;
			format = (enum status_format)rc;
		}
	}
	if (rc < 0)
		return hy_cli_exit_status(rc);
	if (cli.nargs > 1)
		return hy_cli_usage_error(&cli, "one MOUNTPOINT only (\"%s\", \"%s\")", cli.args[0],
					  cli.args[1]);
	mountpoint = cli.nargs ? cli.args[0] : NULL;
	if (output && format != STATUS_PROMETHEUS)
		return hy_cli_usage_error(&cli, "--output goes with --format prometheus");
	if (mountpoint && !realpath(mountpoint, real)) {
		fprintf(stderr, "hybridctl: \"%s\": %s\n", mountpoint, strerror(errno));
		return 1;
	}
	rc = hy_runtime_list(&entries, &n);
	if (rc) {
		fprintf(stderr, "hybridctl: cannot read the runtime folder: %s\n", strerror(-rc));
		return 1;
	}
	list = calloc(n ? n : 1, sizeof(*list));
	if (!list) {
		free(entries);
		fprintf(stderr, "hybridctl: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (mountpoint && strcmp(entries[i].mountpoint, real) != 0)
			continue;
		collect(&entries[i], &list[shown]);
		/* a script must see a mount that cannot be read or whose
		 * daemon does not answer: 1, after everything is shown */
		if (list[shown].error[0] || !list[shown].daemon)
			status = 1;
		shown++;
	}
	if (mountpoint && shown == 0) {
		fprintf(stderr, "hybridctl: \"%s\" is not a hybridfs mount of yours\n", mountpoint);
		status = 1;
	} else if (format == STATUS_PROMETHEUS) {
		int prc = print_prometheus(list, shown, output);

		if (prc)
			status = prc;
	} else if (format == STATUS_AS_JSON) {
		print_json(list, shown);
	} else if (shown == 0) {
		printf("no hybridfs mounts\n");
	} else {
		print_human(list, shown);
	}
	for (size_t i = 0; i < shown; i++)
		json_object_put(list[i].daemon);
	free(list);
	free(entries);
	return status;
}

static const struct hy_cli_command status_command = {
	.name = "status",
	.run = cmd_status,
	.summary = "the mount, its daemon, operations, cache, BOPT, busiest processes",
	.usage = "usage: hybridctl status [MOUNTPOINT] [--json | --format text|json|prometheus]\n"
		 "                        [--output FILE]\n"
		 "\n"
		 "  MOUNTPOINT     one mount; every hybridfs mount of yours when none is named\n"
		 "  --json         as JSON, the same as --format json (hybridctl(8), JSON OUTPUT)\n"
		 "  --format F     text (the default), json, or prometheus: the metrics in\n"
		 "                 Prometheus's text format (hybridctl(8), PROMETHEUS METRICS)\n"
		 "  --output FILE  with --format prometheus: written atomically, for\n"
		 "                 node_exporter's textfile collector\n"
		 "Exit status 1 when a mount's daemon does not answer or its state cannot be\n"
		 "read (after showing what can be), 2 for a bad command line.\n",
	.options = status_options,
};

/* The commands, in the order `hybridctl --help` lists them. */
static const struct hy_cli_command *const commands[] = {
	&status_command,
	&hy_ctl_trace_command,
	&hy_ctl_reorganize_command,
	&hy_ctl_explain_command,
	&hy_ctl_flush_command,
	&hy_ctl_format_cache_command,
	&hy_ctl_policy_command,
	&hy_ctl_top_command,
	&hy_ctl_simulate_command,
	&hy_ctl_tune_command,
	&hy_ctl_pin_command,
	&hy_ctl_unpin_command,
	&hy_ctl_exclude_command,
	NULL,
};

static const struct hy_cli_command hybridctl_command = {
	.name = "hybridctl",
	.title = "",
	.usage = "usage: hybridctl COMMAND [OPTIONS] [ARGUMENTS]\n"
		 "       hybridctl COMMAND --help\n"
		 "       hybridctl --help | --version\n"
		 "\n"
		 "Options and arguments mix in any order; --opt=value is --opt value; \"--\"\n"
		 "ends the options. Exit status: 0 done; 1 the daemon said no or did not\n"
		 "answer, or something could not be read or written; 2 a bad command line.\n"
		 "See hybridctl(8).\n",
	.actions = commands,
};

int main(int argc, char **argv)
{
	hy_log_init(HY_LOG_STDERR, LOG_ERR, "hybridctl");
	/* a refusal about another mount's store names its directories, as the
	 * daemon's do (format-cache) */
	hy_ondisk_set_mount_namer(hy_mount_name_describe);
	if (argc >= 2 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)) {
		printf("hybridctl %s\n", PACKAGE_VERSION);
		return 0;
	}
	return hy_cli_run(&hybridctl_command, argc, argv);
}
