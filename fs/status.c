/* status.c - the daemon's answer to "status"; see hy_fs_status() in fs.h
 * and the field list in hybridctl(8). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hybridfs/device.h"
#include "fs_internal.h"
#include "hybridfs/inode.h"
#include "hybridfs/classify.h"
#include "hybridfs/engine.h"
#include "hybridfs/fuse_channel.h"
#include "hybridfs/passthrough.h"
#include "hybridfs/profiler.h"
#include "hybridfs/reca.h"

#define TOP_PROCESSES 10

static const char *const op_names[HY_OP_COUNT] = {
	[HY_OP_LOOKUP] = "lookup",	 [HY_OP_GETATTR] = "getattr", [HY_OP_SETATTR] = "setattr",
	[HY_OP_READDIR] = "readdir",	 [HY_OP_OPEN] = "open",	      [HY_OP_CREATE] = "create",
	[HY_OP_READ] = "read",		 [HY_OP_WRITE] = "write",     [HY_OP_FSYNC] = "fsync",
	[HY_OP_NAMESPACE] = "namespace", [HY_OP_XATTR] = "xattr",     [HY_OP_OTHER] = "other",
};

static void add_u64(struct json_object *obj, const char *key, uint64_t v)
{
	json_object_object_add(obj, key, json_object_new_uint64(v));
}

static void add_str(struct json_object *obj, const char *key, const char *v)
{
	json_object_object_add(obj, key, v ? json_object_new_string(v) : NULL);
}

static int64_t file_size(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

struct json_object *hy_fs_device_status(struct hy_device *device)
{
	struct json_object *dev = json_object_new_object();
	struct hy_device_stats ds;

	if (!dev)
		return NULL;
	hy_device_get_stats(device, &ds);
	add_u64(dev, "reads", ds.reads);
	add_u64(dev, "writes", ds.writes);
	add_u64(dev, "bytes_read", ds.bytes_read);
	add_u64(dev, "bytes_written", ds.bytes_written);
	add_u64(dev, "syncs", ds.syncs);
	add_u64(dev, "errors", ds.errors);
	add_u64(dev, "seeks", ds.seeks);
	add_u64(dev, "prefetches", ds.prefetches);
	add_u64(dev, "bytes_prefetched", ds.bytes_prefetched);
	return dev;
}

/* {"read": {"sequential": n, ...}, "write": {...}}: ReCA's request
 * classes (classify.h), counted by mode. */
static struct json_object *classes_json(uint64_t c[2][HY_CLASS_COUNT])
{
	struct json_object *o = json_object_new_object();

	for (int m = 0; m < 2 && o; m++) {
		struct json_object *k = json_object_new_object();

		for (int i = 0; i < HY_CLASS_COUNT && k; i++)
			json_object_object_add(k, hy_classify_name((enum hy_request_class)i),
					       json_object_new_int64((int64_t)c[m][i]));
		json_object_object_add(o, m ? "write" : "read", k);
	}
	return o;
}

/* {"killpriv_v2": bool, "killpriv_v2_why": text or null, "passthrough":
 * bool, "passthrough_why": text or null, "passthrough_files": {...} or
 * null (passthrough.h), "splice": bool, "splice_why": text or null,
 * "spliced_reads": n, "spliced_bytes": n (fs/ops_files.c), "requests":
 * {"lookup": n, ...}}: the FUSE requests
 * read, by opcode, those seen at least once (null: the channel is not in;
 * fuse_channel.h). */
static struct json_object *fuse_status(struct hy_fs *fs)
{
	struct json_object *o = json_object_new_object(), *req;

	if (!o)
		return NULL;
	json_object_object_add(o, "killpriv_v2",
			       json_object_new_boolean(hy_fuse_channel_killpriv_v2(fs->channel)));
	add_str(o, "killpriv_v2_why",
		fs->channel ? hy_fuse_channel_why(fs->channel)
			    : "the daemon could not read /dev/fuse itself (see its log)");
	json_object_object_add(o, "passthrough",
			       json_object_new_boolean(hy_fuse_channel_passthrough(fs->channel) &&
						       fs->passthrough));
	add_str(o, "passthrough_why",
		!fs->channel || !hy_fuse_channel_passthrough(fs->channel)
			? hy_fuse_channel_passthrough_why(fs->channel)
		: !fs->passthrough ? "the profiler is not running: no exclude rule is known at open"
				   : NULL);
	json_object_object_add(o, "passthrough_files", hy_fs_passthrough_status(fs));
	json_object_object_add(o, "splice",
			       json_object_new_boolean(atomic_load(&fs->splice_reads)));
	add_str(o, "splice_why",
		!fs->splice			 ? "splice=off"
		: atomic_load(&fs->splice_reads) ? NULL
		: fs->splice_why[0]		 ? fs->splice_why
						 : "the backing filesystem cannot splice");
	add_u64(o, "spliced_reads", atomic_load_explicit(&fs->spliced_reads, memory_order_relaxed));
	add_u64(o, "spliced_bytes", atomic_load_explicit(&fs->spliced_bytes, memory_order_relaxed));
	req = fs->channel ? json_object_new_object() : NULL;
	for (unsigned i = 0; req && i < HY_FUSE_CHANNEL_OPCODES; i++) {
		uint64_t n = hy_fuse_channel_count(fs->channel, i);
		const char *name = hy_fuse_channel_opcode_name(i);
		char unnamed[24];

		if (!n)
			continue;
		if (!name) {
			snprintf(unnamed, sizeof(unnamed), "opcode_%u", i);
			name = unnamed;
		}
		add_u64(req, name, n);
	}
	json_object_object_add(o, "requests", req);
	return o;
}

struct json_object *hy_fs_status(struct hy_fs *fs)
{
	struct json_object *root = json_object_new_object(), *ops, *bytes, *inodes, *prof, *procs;
	char wal[4200];

	if (!root)
		return NULL;
	add_str(root, "mountpoint", fs->mountpoint);
	add_str(root, "backing", fs->backing_path);
	add_str(root, "state_dir", fs->state_dir);
	if (fs->disks)
		json_object_object_add(root, "disks", json_object_get(fs->disks));
	add_str(root, "uuid", fs->uuid);
	add_str(root, "version", PACKAGE_VERSION);
	add_str(root, "backing_disk", fs->backing_disk);
	json_object_object_add(root, "pid", json_object_new_int(getpid()));
	json_object_object_add(root, "started", json_object_new_int64(fs->started));
	json_object_object_add(root, "uptime_seconds",
			       json_object_new_int64((int64_t)time(NULL) - fs->started));

	ops = json_object_new_object();
	for (int i = 0; i < HY_OP_COUNT; i++)
		add_u64(ops, op_names[i], atomic_load_explicit(&fs->ops[i], memory_order_relaxed));
	json_object_object_add(root, "operations", ops);
	json_object_object_add(root, "kernel_cache", hy_fs_kcache_status(fs));
	bytes = json_object_new_object();
	add_u64(bytes, "read", atomic_load_explicit(&fs->bytes_read, memory_order_relaxed));
	add_u64(bytes, "written", atomic_load_explicit(&fs->bytes_written, memory_order_relaxed));
	json_object_object_add(root, "bytes", bytes);
	json_object_object_add(root, "fuse", fuse_status(fs));

	json_object_object_add(root, "backing_device", hy_fs_device_status(fs->backing));

	inodes = json_object_new_object();
	pthread_mutex_lock(&fs->inodes->lock);
	add_u64(inodes, "known", fs->inodes->count);
	add_u64(inodes, "descriptors_cached", fs->inodes->fds_cached);
	add_u64(inodes, "descriptor_cap", fs->inodes->fd_cap);
	add_u64(inodes, "descriptor_evictions", fs->inodes->fd_evictions);
	pthread_mutex_unlock(&fs->inodes->lock);
	json_object_object_add(root, "inodes", inodes);

	snprintf(wal, sizeof(wal), "%s-wal", fs->db_path ? fs->db_path : "");
	json_object_object_add(root, "database_bytes",
			       json_object_new_int64(file_size(fs->db_path) + file_size(wal)));

	prof = json_object_new_object();
	json_object_object_add(prof, "enabled", json_object_new_boolean(fs->profiler != NULL));
	procs = json_object_new_array();
	if (fs->profiler) {
		struct hy_reca_process top[TOP_PROCESSES];
		struct hy_profiler_stats ps;
		size_t n;

		hy_profiler_get_stats(fs->profiler, &ps);
		add_u64(prof, "written", ps.written);
		add_u64(prof, "dropped", ps.dropped);
		add_u64(prof, "queued", ps.queued);
		add_u64(prof, "pruned", ps.pruned);
		add_u64(prof, "errors", ps.errors);
		add_u64(prof, "processes_seen", ps.processes_seen);
		add_u64(prof, "files_seen", ps.files_seen);
		{
			uint64_t mc[2][HY_CLASS_COUNT];

			hy_reca_get_mount_classes(fs->engine->reca, mc);
			json_object_object_add(prof, "classes", classes_json(mc));
		}
		struct hy_workload_policy_table table;
		bool have_table = hy_reca_get_policy(fs->engine->reca, &table);

		n = hy_reca_top(fs->engine->reca, top, TOP_PROCESSES);
		for (size_t i = 0; i < n; i++) {
			struct json_object *p = json_object_new_object();

			json_object_object_add(p, "pid", json_object_new_int(top[i].pid));
			add_str(p, "name", top[i].comm);
			add_u64(p, "reads", top[i].reads);
			add_u64(p, "writes", top[i].writes);
			add_u64(p, "bytes_read", top[i].bytes_read);
			add_u64(p, "bytes_written", top[i].bytes_written);
			add_u64(p, "lookups", top[i].meta[HY_META_LOOKUP]);
			add_u64(p, "getattrs", top[i].meta[HY_META_GETATTR]);
			add_u64(p, "readdirs", top[i].meta[HY_META_READDIR]);
			json_object_object_add(p, "classes", classes_json(top[i].classes));
			add_str(p, "category", hy_category_name(top[i].category));
			if (have_table)
				json_object_object_add(p, "policy",
						       hy_fs_process_policy(fs, &table, &top[i]));
			json_object_array_add(procs, p);
		}
	}
	json_object_object_add(root, "profiler", prof);
	/* BORG: the BOPT, the map and the last reorganization (null: none) */
	json_object_object_add(root, "bopt",
			       fs->borg ? hy_fs_borg_status(fs->borg, fs->engine) : NULL);
	/* the cache: hits, occupancy, dirty bytes, the cleaner (null: none) */
	json_object_object_add(root, "cache", fs->cache ? hy_fs_cache_status(fs->cache) : NULL);
	json_object_object_add(root, "rules", fs->pins ? hy_fs_pins_status(fs) : NULL);
	json_object_object_add(root, "processes", procs);
	/* emulate=: the disk model's figures (null: no emulation) */
	if (fs->emulation) {
		struct hy_device_emulation_stats es;
		struct json_object *e = json_object_new_object();

		hy_device_emulation_get_stats(fs->emulation, &es);
		add_str(e, "model", fs->emulate);
		add_u64(e, "requests", es.requests);
		add_u64(e, "state_requests", es.state_requests);
		add_u64(e, "cached", es.cached);
		add_u64(e, "reads", es.reads);
		add_u64(e, "writes", es.writes);
		add_u64(e, "bytes_read", es.bytes_read);
		add_u64(e, "bytes_written", es.bytes_written);
		add_u64(e, "seeks", es.seeks);
		json_object_object_add(e, "modeled_ms", json_object_new_double(es.modeled_ms));
		json_object_object_add(e, "waited_ms", json_object_new_double(es.waited_ms));
		json_object_object_add(root, "emulation", e);
	} else {
		json_object_object_add(root, "emulation", NULL);
	}
	/* last: the totals kept across mounts are fed from the figures above */
	json_object_object_add(root, "metrics",
			       fs->metrics ? hy_fs_metrics_status(fs->metrics, root) : NULL);
	return root;
}
