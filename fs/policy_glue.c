/*
 * policy_glue.c - ReCA's policy table in the daemon (workload_policy.h):
 * loaded from the state database at mount and put in force in ReCA's
 * module (reca.h, the engine's), changed by the "policy" control request (stored first, then
 * put in force: a change that cannot be stored is not made), and the
 * policy each process follows, for "status". See fs.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>
#include <sqlite3.h>

#include "fs_internal.h"
#include "hybridfs/log.h"
#include "hybridfs/engine.h"
#include "hybridfs/reca.h"
#include "hybridfs/state.h"
#include "hybridfs/workload_policy.h"

int hy_fs_open_policy(struct hy_fs *fs, struct sqlite3 *db)
{
	struct hy_workload_policy_table t;
	int rc;

	if (!fs->profiler)
		return 0; /* no categories without the profiler: nothing to follow */
	rc = hy_workload_policy_load(db, &t);
	if (rc < 0) {
		hy_log(LOG_WARNING,
		       "policy: cannot read the policy table from \"%s\" (%s); the defaults are "
		       "in force",
		       sqlite3_db_filename(db, "main"), strerror(-rc));
		hy_workload_policy_defaults(&t);
	}
	return hy_reca_set_policy(fs->engine->reca, &t);
}

static int add_setting(void *arg, const char *name, const char *value)
{
	json_object_object_add(arg, name, json_object_new_string(value));
	return 0;
}

static struct json_object *settings_json(const struct hy_workload_policy_table *t)
{
	struct json_object *o = json_object_new_object();

	if (o && hy_workload_policy_each(t, add_setting, o) != 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* Settings whose text differs between @a and @b. */
static int count_changed(struct json_object *a, struct json_object *b)
{
	int n = 0;

	json_object_object_foreach(a, name, value)
	{
		struct json_object *other;

		if (!json_object_object_get_ex(b, name, &other) ||
		    strcmp(json_object_get_string(value), json_object_get_string(other)) != 0)
			n++;
	}
	return n;
}

static int store(const char *db_path, const struct hy_workload_policy_table *t, char *why,
		 size_t why_size)
{
	sqlite3 *db = NULL;
	int rc;

	rc = sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		snprintf(why, why_size, "cannot open the state database \"%s\": %s", db_path,
			 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return hy_state_errno(rc);
	}
	sqlite3_busy_timeout(db, 5000);
	rc = hy_workload_policy_save(db, t);
	if (rc < 0)
		snprintf(why, why_size,
			 "cannot store the policy table in the state database \"%s\": %s; "
			 "nothing was changed",
			 db_path, strerror(-rc));
	if (sqlite3_close(db) != SQLITE_OK)
		hy_log(LOG_WARNING, "policy: closing the state database: %s", sqlite3_errmsg(db));
	return rc;
}

struct json_object *hy_fs_policy(void *ctx, struct json_object *request, char *why, size_t why_size)
{
	const struct hy_fs_policy_ctx *pc = ctx;
	struct hy_workload_policy_table old, t;
	struct json_object *member, *before, *after, *result;
	int changed;

	if (!hy_reca_get_policy(pc->reca, &old))
		hy_workload_policy_defaults(&old);
	t = old;
	if (json_object_object_get_ex(request, "reset", &member)) {
		if (!json_object_is_type(member, json_type_boolean)) {
			snprintf(why, why_size, "\"reset\" must be true or false");
			return NULL;
		}
		if (json_object_get_boolean(member))
			hy_workload_policy_defaults(&t);
	}
	if (json_object_object_get_ex(request, "set", &member)) {
		size_t n;

		if (!json_object_is_type(member, json_type_array)) {
			snprintf(why, why_size,
				 "\"set\" must be an array of \"CATEGORY.KEY=VALUE\" strings");
			return NULL;
		}
		n = json_object_array_length(member);
		for (size_t i = 0; i < n; i++) {
			struct json_object *item = json_object_array_get_idx(member, i);
			char msg[512];

			if (!json_object_is_type(item, json_type_string)) {
				snprintf(why, why_size,
					 "\"set\" item %zu is not a string; nothing was changed",
					 i + 1);
				return NULL;
			}
			if (hy_workload_policy_set(&t, json_object_get_string(item), msg,
						   sizeof(msg)) < 0) {
				snprintf(why, why_size, "%s; nothing was changed", msg);
				return NULL;
			}
		}
	}
	before = settings_json(&old);
	after = settings_json(&t);
	result = json_object_new_object();
	if (!before || !after || !result) {
		json_object_put(before);
		json_object_put(after);
		json_object_put(result);
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	changed = count_changed(after, before);
	json_object_put(before);
	if (changed) {
		if (store(pc->db_path, &t, why, why_size) < 0 ||
		    hy_reca_set_policy(pc->reca, &t) < 0) {
			if (strcmp(why, "out of memory") == 0)
				snprintf(why, why_size,
					 "out of memory: the change is stored, and in force from "
					 "the next mount");
			json_object_put(after);
			json_object_put(result);
			return NULL;
		}
		hy_log(LOG_NOTICE, "policy: %d setting%s changed by hybridctl", changed,
		       changed == 1 ? "" : "s");
	}
	json_object_object_add(result, "settings", after);
	json_object_object_add(result, "changed", json_object_new_int(changed));
	return result;
}

struct json_object *hy_fs_process_policy(struct hy_fs *fs, const struct hy_workload_policy_table *t,
					 const struct hy_reca_process *p)
{
	static const char *const cache_write[] = {"back", "through", "around"};
	const struct hy_workload_policy *row = hy_workload_policy_row(t, p->policy_category);
	struct json_object *o = json_object_new_object();
	const char *write;

	if (!o)
		return NULL;
	/* "mount": what the mount's cache does; no cache, nothing is cached */
	if (!fs->cache)
		write = "none";
	else if (row->write == HY_WORKLOAD_WRITE_MOUNT)
		write = cache_write[fs->cache_write];
	else
		write = hy_workload_write_name(row->write);
	json_object_object_add(o, "category",
			       json_object_new_string(hy_category_name(p->policy_category)));
	json_object_object_add(o, "grouped", json_object_new_boolean(p->grouped));
	json_object_object_add(o, "write", json_object_new_string(write));
	json_object_object_add(o, "line_size", json_object_new_int64(row->line_size));
	json_object_object_add(o, "evict",
			       json_object_new_string(hy_workload_evict_name(row->evict)));
	json_object_object_add(o, "seq_cutoff",
			       json_object_new_uint64(row->seq_cutoff == HY_WORKLOAD_CUTOFF_MOUNT
							      ? fs->cache_seq_cutoff
							      : row->seq_cutoff));
	json_object_object_add(o, "metadata_priority",
			       json_object_new_boolean(p->metadata_priority));
	return o;
}
