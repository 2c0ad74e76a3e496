/*
 * cache_glue.c - the daemon's side of the cache (cache.h): opening it at
 * mount with the options, recovering what a crash left in its store
 * through the state database's files table, its part of "status" and of
 * "flush". See fs.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hybridfs/borg.h"
#include "hybridfs/cache.h"
#include "hybridfs/cache_store.h"
#include "hybridfs/engine.h"
#include "fs_internal.h"
#include "hybridfs/inode.h"
#include "hybridfs/log.h"
#include "hybridfs/ondisk.h"
#include "hybridfs/options.h"
#include "hybridfs/identity.h"
#include "hybridfs/profiler.h"
#include "hybridfs/stack.h"

static int open_homes(void *arg, const uint64_t *ids, size_t n, int64_t *objects)
{
	struct hy_fs *fs = arg;
	int *fds = malloc((n ? n : 1) * sizeof(*fds));
	char why[1024];
	int rc;

	if (!fds)
		return -ENOMEM;
	rc = hy_borg_open_homes(fs->db_path, fs->backing_at, fs->hidden_at, fs->inodes->root->fd,
				ids, n, fds, why, sizeof(why));
	if (rc < 0)
		hy_log(LOG_ERR, "cache: %s", why);
	for (size_t i = 0; i < n; i++)
		objects[i] = fds[i];
	free(fds);
	return rc;
}

/* The files table gets a file's row from the profiler's writer thread,
 * within 50 ms: a journaled dirty line must not outlive its file's row,
 * so the row must be committed and on the disk before the journal names
 * it. A failure (the state folder's disk full) is the cache's to handle:
 * it sends the file's dirty blocks home instead. */
static int ids_durable(void *arg, uint64_t file_id)
{
	struct hy_fs *fs = arg;

	return hy_identity_sync_file(hy_profiler_identity(fs->profiler), file_id);
}

int hy_fs_open_cache(struct hy_fs *fs, const struct hy_options *opts)
{
	struct hy_cache_config config = {
		.uuid = fs->uuid,
		.store_size = opts->cache_size_given ? opts->cache_size : 0,
		/* write-back pays off on a faster store than home, which is what
		 * naming one says; the default store shares home's disk */
		.write_policy = opts->cache_write_given || opts->cache_given
					? opts->cache_write
					: HY_CACHE_WRITE_THROUGH,
		.policy = (enum hy_policy_kind)opts->cache_policy,
		.front_bytes = opts->front_buffer,
		.heat_periods = opts->heat_periods,
		.heat_threshold = opts->heat_threshold,
		.clean_rate = opts->cache_clean_rate,
		.seq_cutoff = opts->cache_seq_cutoff,
		.migrate_rate = opts->cache_migrate_rate,
		.open_homes = open_homes,
		.open_homes_arg = fs,
		.ids_durable = ids_durable,
		.ids_durable_arg = fs,
		.no_keep = opts->cache_no_keep,
	};
	char path[4096], why[1024], fstype[16];
	int rc;

	if (opts->cache && strcmp(opts->cache, "none") == 0)
		return 0;
	if (!fs->profiler) {
		/* the cache keys blocks by the profiler's file ids */
		if (opts->cache_given)
			hy_log(LOG_WARNING, "cache: left out: it needs the profiler (profile=on)");
		return 0;
	}
	if (opts->cache) {
		rc = hy_cache_store_resolve(opts->cache, path, sizeof(path), why, sizeof(why));
		/* a store that is not there is made, but not in /dev nor on RAM */
		if (rc == 0)
			rc = hy_ondisk_check_new(path, why, sizeof(why));
		if (rc < 0) {
			hy_log(LOG_ERR, "cache=%s: %s", opts->cache, why);
			return rc;
		}
	} else if (opts->cache_default) {
		snprintf(path, sizeof(path), "%s", opts->cache_default);
	} else {
		snprintf(path, sizeof(path), "%s/%s",
			 opts->state_at ? opts->state_at : opts->state_dir, HY_OPTIONS_CACHE_NAME);
	}
	config.store_path = path;
	/* Dirty lines on a RAM filesystem are gone at a reboot, and with them
	 * data that fsync said was safe: write-back never lands there. The
	 * default for a named store gives way to write-through; asking for
	 * write-back there is refused. */
	if (config.write_policy == HY_CACHE_WRITE_BACK &&
	    hy_ondisk_on_ram(path, fstype, sizeof(fstype))) {
		if (opts->cache_write_given) {
			hy_log(LOG_ERR,
			       "cache: \"%s\" lies on a RAM filesystem (%s), which a reboot "
			       "empties: cache_write=back would lose data written there; use "
			       "cache_write=through, or a store on a disk or a device",
			       path, fstype);
			return -EMEDIUMTYPE;
		}
		hy_log(LOG_NOTICE,
		       "cache: \"%s\" lies on a RAM filesystem (%s): write-through, not "
		       "write-back, which would lose data written there at a reboot",
		       path, fstype);
		config.write_policy = HY_CACHE_WRITE_THROUGH;
	}
	if (opts->pore_given ? opts->pore != HY_PORE_OFF : opts->backend_smr) {
		/* PORE: a period of one persistent buffer's worth of writes is
		 * best (the paper); the emulated disk's buffer when there is one */
		config.pore.rule = opts->pore_given ? opts->pore : HY_PORE_BALANCE;
		config.pore.zone_bytes = opts->pore_zone;
		config.pore.open_permille = opts->pore_open_permille;
		config.pore.period_blocks = (opts->pore_period	    ? opts->pore_period
					     : fs->emulation_buffer ? fs->emulation_buffer
								    : HY_OPTIONS_PORE_PERIOD) /
					    HY_CACHE_LINE_SIZE;
		if (!config.pore.period_blocks)
			config.pore.period_blocks = 1;
		if (config.write_policy != HY_CACHE_WRITE_BACK)
			hy_log(LOG_NOTICE,
			       "cache: PORE has nothing to hold back without write-back "
			       "(cache_write=back)");
	}
	rc = hy_stack_open_cache(fs->engine, &config, &fs->cache, why, sizeof(why));
	if (rc < 0) {
		hy_log(LOG_ERR,
		       "%s; mount with cache=none to use the directory without the cache, or "
		       "make the store again with hybridctl format-cache --force (whatever it "
		       "still holds is lost)",
		       why);
		return rc;
	}
	fs->cache_write = (int)config.write_policy;
	fs->cache_seq_cutoff = config.seq_cutoff;
	if (config.pore.rule != HY_PORE_OFF)
		hy_log(LOG_NOTICE,
		       "cache: PORE (%s): zones of %" PRIu64
		       " MiB, %u per mille open, divided every "
		       "%" PRIu64 " MiB written",
		       hy_pore_rule_name(config.pore.rule),
		       (config.pore.zone_bytes ? config.pore.zone_bytes : HY_PORE_DEFAULT_ZONE) >>
			       20,
		       config.pore.open_permille ? config.pore.open_permille : HY_PORE_DEFAULT_OPEN,
		       config.pore.period_blocks * HY_CACHE_LINE_SIZE >> 20);
	hy_log(LOG_NOTICE, "cache: \"%s\", write-%s, %s, front buffer %" PRIu64 " KiB", path,
	       config.write_policy == HY_CACHE_WRITE_BACK      ? "back"
	       : config.write_policy == HY_CACHE_WRITE_THROUGH ? "through"
							       : "around",
	       hy_policy_kind_name((enum hy_policy_kind)opts->cache_policy),
	       opts->front_buffer >> 10);
	return 0;
}

int hy_fs_close_cache(struct hy_fs *fs)
{
	int rc;

	if (!fs->cache)
		return 0;
	/* no request is in flight: everything dirty goes home, then the
	 * engine reads and writes home directly */
	rc = hy_stack_close_cache(fs->engine);
	fs->cache = NULL;
	return rc;
}

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_int64((int64_t)v));
}

static double ratio(uint64_t hits, uint64_t total)
{
	return total ? (double)hits / (double)total : 0.0;
}

struct json_object *hy_fs_cache_status(struct hy_cache *cache)
{
	struct json_object *o = json_object_new_object();
	struct hy_cache_stats s;
	uint64_t reads, writes;

	if (!o)
		return NULL;
	hy_cache_get_stats(cache, &s);
	reads = s.read_hits_dram + s.read_hits_ssd + s.read_misses;
	writes = s.write_hits_dram + s.write_hits_ssd + s.write_misses;
	json_object_object_add(o, "path", json_object_new_string(s.path));
	json_object_object_add(o, "write_policy", json_object_new_string(s.write_policy));
	json_object_object_add(o, "policy", json_object_new_string(s.policy));
	add_u64(o, "read_hits_dram", s.read_hits_dram);
	add_u64(o, "read_hits_ssd", s.read_hits_ssd);
	add_u64(o, "read_misses", s.read_misses);
	add_u64(o, "write_hits_dram", s.write_hits_dram);
	add_u64(o, "write_hits_ssd", s.write_hits_ssd);
	add_u64(o, "write_misses", s.write_misses);
	json_object_object_add(o, "read_hit_ratio_dram",
			       json_object_new_double(ratio(s.read_hits_dram, reads)));
	json_object_object_add(o, "read_hit_ratio_ssd",
			       json_object_new_double(ratio(s.read_hits_ssd, reads)));
	json_object_object_add(o, "write_hit_ratio_dram",
			       json_object_new_double(ratio(s.write_hits_dram, writes)));
	json_object_object_add(o, "write_hit_ratio_ssd",
			       json_object_new_double(ratio(s.write_hits_ssd, writes)));
	add_u64(o, "dram_blocks", s.dram_slots);
	add_u64(o, "dram_used", s.dram_used);
	add_u64(o, "dram_dirty", s.dram_dirty);
	add_u64(o, "ssd_lines", s.ssd_lines);
	add_u64(o, "ssd_used", s.ssd_used);
	add_u64(o, "ssd_dirty", s.ssd_dirty);
	add_u64(o, "dirty_bytes", s.dirty_bytes);
	add_u64(o, "ssd_bytes_written", s.ssd_bytes_written);
	add_u64(o, "heat_admitted", s.heat_admitted);
	add_u64(o, "heat_refused", s.heat_refused);
	add_u64(o, "policy_refused", s.policy_refused);
	add_u64(o, "dram_evictions", s.dram_evictions);
	add_u64(o, "ssd_evictions", s.ssd_evictions);
	add_u64(o, "cold_dirty_home", s.cold_dirty_home);
	add_u64(o, "cleaned_blocks", s.cleaned_blocks);
	add_u64(o, "cleaner_backlog", s.cleaner_backlog);
	add_u64(o, "bypassed", s.bypassed);
	add_u64(o, "seq_bypassed", s.seq_bypassed);
	add_u64(o, "stale_files", s.stale_files);
	add_u64(o, "forgotten_files", s.forgotten_files);
	add_u64(o, "admit_bypassed", s.admit_bypassed);
	add_u64(o, "line_prefetched", s.line_prefetched);
	add_u64(o, "migrations", s.migrations);
	add_u64(o, "migrate_filled", s.migrate_filled);
	add_u64(o, "migrate_dropped", s.migrate_dropped);
	add_u64(o, "migrate_home", s.migrate_home);
	{
		/* PORE (backend=smr): null without it */
		struct json_object *p = NULL;

		if (s.pore.rule != HY_PORE_OFF) {
			p = json_object_new_object();
			json_object_object_add(
				p, "rule", json_object_new_string(hy_pore_rule_name(s.pore.rule)));
			add_u64(p, "zone_bytes", s.pore.zone_bytes);
			add_u64(p, "open_permille", s.pore.open_permille);
			add_u64(p, "period_bytes", s.pore.period_blocks * HY_CACHE_LINE_SIZE);
			add_u64(p, "zones", s.pore.zones);
			add_u64(p, "dirty_zones", s.pore.dirty_zones);
			add_u64(p, "open_zones", s.pore.open_zones);
			add_u64(p, "divisions", s.pore.divisions);
			add_u64(p, "held_blocks", s.pore_held);
			add_u64(p, "forced_passes", s.pore_forced);
			add_u64(p, "kept_from_front", s.pore_kept);
		}
		json_object_object_add(o, "pore", p);
	}
	{
		/* blocks that passed the cache, by reason (cache.h) */
		struct json_object *p = json_object_new_object();

		for (int r = 0; r < HY_CACHE_PASS_COUNT; r++)
			add_u64(p, hy_cache_pass_name((enum hy_cache_pass_reason)r),
				s.passthrough[r]);
		json_object_object_add(o, "passthrough", p);
	}
	add_u64(o, "journal_records", s.journal_records);
	add_u64(o, "checkpoints", s.checkpoints);
	add_u64(o, "recovered_blocks", s.recovered_blocks);
	add_u64(o, "lost_blocks", s.lost_blocks);
	{
		/* the persistent cache: kept at mount, dropped and why, warm-up */
		struct json_object *k = json_object_new_object(), *d = json_object_new_object();

		add_u64(k, "kept_lines", s.keep.kept_lines);
		add_u64(k, "kept_files", s.keep.kept_files);
		add_u64(d, "changed_lines", s.keep.changed_lines);
		add_u64(d, "changed_files", s.keep.changed_files);
		add_u64(d, "unverifiable_lines", s.keep.unverifiable_lines);
		add_u64(d, "unverifiable_files", s.keep.unverifiable_files);
		add_u64(d, "gone_files", s.keep.gone_files);
		add_u64(d, "damaged_lines", s.keep.damaged_lines);
		add_u64(d, "stale_lines", s.keep.stale_lines);
		add_u64(d, "stale_files", s.keep.stale_files);
		add_u64(d, "gone_lines", s.keep.gone_later_lines);
		add_u64(d, "gone_later_files", s.keep.gone_later_files);
		json_object_object_add(k, "dropped", d);
		add_u64(k, "verified_lines", s.keep.verified_lines);
		add_u64(k, "verified_files", s.keep.verified_files);
		add_u64(k, "pending_files", s.keep.pending_files);
		add_u64(k, "warm_hits", s.keep.warm_hits);
		json_object_object_add(k, "across_mounts", json_object_new_boolean(!s.keep.off));
		json_object_object_add(o, "keep", k);
	}
	add_u64(o, "ssd_meta_bytes", s.ssd_meta_bytes);
	add_u64(o, "dram_bytes_per_line", s.dram_bytes_per_line);
	add_u64(o, "dram_bytes_per_store_line", s.dram_bytes_per_store_line);
	add_u64(o, "file_meta_bytes", s.file_meta_bytes);
	add_u64(o, "front_meta_bytes", s.front_meta_bytes);
	return o;
}
