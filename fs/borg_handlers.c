/*
 * borg_handlers.c - the control requests of BORG: "reorganize",
 * "progress", "explain" and "flush" (control.h), and BORG's part of "status".
 * "progress" runs on the control loop's thread, the others on its worker
 * (control_server.h); each sees its narrow context (fs.h), never the
 * struct hy_fs. See borg.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hybridfs/analyzer.h"
#include "hybridfs/borg.h"
#include "hybridfs/gain.h"
#include "hybridfs/cache.h"
#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "hybridfs/fault.h"
#include "hybridfs/identity.h"
#include "hybridfs/indirector.h"
#include "fs_internal.h"
#include "hybridfs/inode.h"
#include "hybridfs/log.h"
#include "hybridfs/map.h"
#include "hybridfs/profiler.h"

#define BLOCK 4096
/* Ranges an explain answer lists at most (the line limit is 64 KiB). */
#define EXPLAIN_MAX_RANGES 400

static void add_u64(struct json_object *obj, const char *key, uint64_t v)
{
	json_object_object_add(obj, key, json_object_new_uint64(v));
}

/* An optional number member: 0 when absent, -EINVAL when of another type. */
static int member_number(struct json_object *req, const char *key, double lo, double hi,
			 double *out, bool *given, char *why, size_t why_size)
{
	struct json_object *v;

	*given = false;
	if (!json_object_object_get_ex(req, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
		snprintf(why, why_size, "member \"%s\" is not a number", key);
		return -EINVAL;
	}
	*out = json_object_get_double(v);
	if (!(*out >= lo && *out <= hi)) {
		snprintf(why, why_size, "member \"%s\" is out of range (%g to %g)", key, lo, hi);
		return -EINVAL;
	}
	*given = true;
	return 0;
}

struct json_object *hy_fs_reorganize(void *ctx, struct json_object *req, char *why, size_t why_size)
{
	struct hy_borg *borg = ctx;
	struct hy_reorganize_params params = {.decay = 0.5};
	struct json_object *v, *result;
	uint64_t swept_files = 0, swept_blocks = 0;
	double x;
	bool given;

	if (json_object_object_get_ex(req, "mode", &v)) {
		const char *mode =
			json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";

		if (strcmp(mode, "partial") == 0) {
			params.partial = true;
		} else if (strcmp(mode, "cumulative") != 0) {
			snprintf(why, why_size,
				 "member \"mode\" must be \"cumulative\" or \"partial\"");
			return NULL;
		}
	}
	if (member_number(req, "since_ns", 0, 9.2e18, &x, &given, why, why_size))
		return NULL;
	params.since_ns = given ? (int64_t)x : 0;
	if (member_number(req, "gap_ns", 1, 3.2e16, &x, &given, why, why_size))
		return NULL;
	params.gap_ns = given ? (int64_t)x : 0;
	if (member_number(req, "decay", 1e-9, 1, &x, &given, why, why_size))
		return NULL;
	if (given)
		params.decay = x;
	if (member_number(req, "capacity_blocks", 1, 1.8e19, &x, &given, why, why_size))
		return NULL;
	params.capacity_blocks = given ? (uint64_t)x : 0;
	if (json_object_object_get_ex(req, "always", &v)) {
		if (!json_object_is_type(v, json_type_boolean)) {
			snprintf(why, why_size, "member \"always\" must be true or false");
			return NULL;
		}
		params.always = json_object_get_boolean(v);
	}
	/* files removed behind the mount's back give their BOPT room back
	 * before the plan is made (those removed through the mount did at
	 * once: hy_borg_forget_file); a failed sweep costs room, not data */
	{
		char swhy[512];

		if (hy_borg_sweep_gone(borg, &swept_files, &swept_blocks, swhy, sizeof(swhy)) < 0)
			hy_log(LOG_WARNING, "reorganize: looking for removed files: %s", swhy);
	}
	if (hy_borg_reorganize(borg, &params, why, why_size) < 0)
		return NULL;
	result = json_object_new_object();
	if (result) {
		struct hy_borg_progress p;

		hy_borg_get_progress(borg, &p);
		add_u64(result, "run", p.run);
		add_u64(result, "removed_files", swept_files);
		add_u64(result, "removed_blocks", swept_blocks);
	}
	return result;
}

static struct json_object *progress_json(struct hy_borg *borg)
{
	struct json_object *o = json_object_new_object();
	struct hy_borg_progress p;

	if (!o)
		return NULL;
	hy_borg_get_progress(borg, &p);
	json_object_object_add(o, "phase", json_object_new_string(hy_borg_phase_name(p.phase)));
	add_u64(o, "run", p.run);
	add_u64(o, "generation", p.generation);
	add_u64(o, "requests", p.requests);
	add_u64(o, "vertices", p.vertices);
	add_u64(o, "edges", p.edges);
	add_u64(o, "cut_vertices", p.cut_vertices);
	add_u64(o, "ranges", p.ranges);
	add_u64(o, "planned_blocks", p.planned_blocks);
	add_u64(o, "kept_blocks", p.kept_blocks);
	add_u64(o, "dropped_blocks", p.dropped_blocks);
	add_u64(o, "copy_blocks", p.copy_blocks);
	add_u64(o, "done_blocks", p.done_blocks);
	add_u64(o, "copied_blocks", p.copied_blocks);
	add_u64(o, "skipped_ranges", p.skipped_ranges);
	add_u64(o, "skipped_blocks", p.skipped_blocks);
	/* the plan weighed on a model of the disk (gain.h); null: not known */
	if (p.gain_known) {
		struct json_object *g = json_object_new_object();

		if (g) {
			json_object_object_add(
				g, "decision",
				json_object_new_string(p.decision == HY_GAIN_HOLD ? "held back"
						       : p.decision == HY_GAIN_ALL_HOME
							       ? "all home"
							       : "carried out"));
			json_object_object_add(g, "planned_ms",
					       json_object_new_double(p.model_planned_ms));
			json_object_object_add(g, "current_ms",
					       json_object_new_double(p.model_current_ms));
			json_object_object_add(g, "home_ms",
					       json_object_new_double(p.model_home_ms));
		}
		json_object_object_add(o, "model", g);
	} else {
		json_object_object_add(o, "model", NULL);
	}
	json_object_object_add(o, "seconds", json_object_new_double(p.seconds));
	if (p.phase == HY_BORG_FAILED)
		json_object_object_add(o, "error", json_object_new_string(p.error));
	return o;
}

struct json_object *hy_fs_progress(void *ctx, struct json_object *req, char *why, size_t why_size)
{
	(void)req;
	(void)why;
	(void)why_size;
	return progress_json(ctx);
}

struct json_object *hy_fs_flush(void *ctx, struct json_object *req, char *why, size_t why_size)
{
	const struct hy_fs_flush_ctx *fc = ctx;
	struct json_object *result;
	uint64_t synced;

	int64_t cached = 0;

	(void)req;
	synced = 0;
	hy_fault_point("control.flush"); /* fault.h: a test holds the request here */
	/* the cache first: its blocks go home through the map, into the BOPT
	 * for relocated ones, which BORG's flush then sends home */
	if (fc->cache && (cached = hy_cache_flush(fc->cache)) < 0) {
		snprintf(why, why_size, "the cache's dirty blocks cannot all go home: %s",
			 strerror((int)-cached));
		return NULL;
	}
	if (fc->borg && hy_borg_flush(fc->borg, &synced, why, why_size) < 0)
		return NULL;
	result = json_object_new_object();
	if (result && fc->cache)
		add_u64(result, "cache_blocks", (uint64_t)cached);
	if (result && fc->borg)
		add_u64(result, "synced_blocks", synced);
	return result;
}

struct json_object *hy_fs_borg_status(struct hy_borg *borg, struct hy_engine *engine)
{
	struct json_object *o = json_object_new_object();
	struct hy_borg_info info;
	struct hy_indirector_stats ind;

	if (!o)
		return NULL;
	hy_borg_get_info(borg, &info);
	{
		/* the BOPT reached through a descriptor: the path a person knows */
		char shown[4096];

		snprintf(shown, sizeof(shown), "%s", info.path);
		json_object_object_add(
			o, "path", json_object_new_string(hy_log_unalias(shown, sizeof(shown))));
	}
	add_u64(o, "bytes", info.total_blocks * BLOCK);
	add_u64(o, "read_region_blocks", info.read_blocks);
	add_u64(o, "generation", info.generation);
	json_object_object_add(o, "clean_at_mount", json_object_new_boolean(info.was_clean));
	add_u64(o, "journal_replayed", info.replayed);
	add_u64(o, "map_files", info.map_files);
	add_u64(o, "map_extents", info.map_extents);
	add_u64(o, "map_blocks", info.map_blocks);
	add_u64(o, "dirty_blocks", info.dirty_blocks);
	add_u64(o, "removed_files", info.removed_files);
	add_u64(o, "removed_blocks", info.removed_blocks);
	hy_indirector_get_stats(hy_engine_indirector(engine), &ind);
	add_u64(o, "bopt_writes", ind.bopt_writes);
	add_u64(o, "synced_blocks", ind.synced_blocks);
	add_u64(o, "bopt_reads", ind.bopt_reads);
	add_u64(o, "released_blocks", ind.released_blocks);
	add_u64(o, "stale_files", ind.stale_files);
	{
		/* read-ahead along the plan (indirector.h) */
		struct json_object *ra = json_object_new_object();

		if (ra) {
			add_u64(ra, "window_bytes", ind.readahead_bytes);
			add_u64(ra, "requests", ind.readaheads);
			add_u64(ra, "bytes", ind.readahead_bytes_asked);
			json_object_object_add(o, "readahead", ra);
		}
	}
	if (ind.bopt)
		json_object_object_add(o, "device", hy_fs_device_status(ind.bopt));
	json_object_object_add(o, "reorganization", progress_json(borg));
	{
		struct json_object *w = json_object_new_object();
		struct hy_borg_warm warm;

		hy_borg_get_warm(borg, &warm);
		if (w) {
			add_u64(w, "runs", warm.runs);
			add_u64(w, "files", warm.files);
			add_u64(w, "directories", warm.directories);
			add_u64(w, "missing", warm.missing);
			json_object_object_add(w, "last_seconds",
					       json_object_new_double(warm.last_seconds));
			json_object_object_add(w, "armed", json_object_new_boolean(warm.armed));
		}
		json_object_object_add(o, "warm", w);
	}
	return o;
}

/* ---- explain -------------------------------------------------------- */

/* The heat at @block: the weight of the vertex holding it, or -1. */
static double heat_at(const struct hy_analyzer_heat *v, size_t n, uint64_t block,
		      uint64_t *next_edge)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].block + v[mid].nblocks <= block)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && v[lo].block <= block) {
		*next_edge = v[lo].block + v[lo].nblocks;
		return v[lo].weight;
	}
	*next_edge = lo < n ? v[lo].block : UINT64_MAX;
	return -1;
}

static bool safe_relative(const char *path)
{
	const char *p = path;

	if (!*path || *path == '/')
		return false;
	while (*p) {
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p += len;
		while (*p == '/')
			p++;
	}
	return true;
}

/* Blocks of @id the map holds in the BOPT. */
static uint64_t relocated_blocks(struct hy_map *map, uint64_t id)
{
	struct hy_map_extent *e = NULL;
	uint64_t sum = 0;
	size_t n = 0;

	if (map && hy_map_file_extents(map, id, 0, &e, &n) == 0)
		for (size_t i = 0; i < n; i++)
			sum += e[i].nblocks;
	free(e);
	return sum;
}

static void add_reason(struct json_object *result, const char *reason, const char *detail)
{
	json_object_object_add(result, "reason", json_object_new_string(reason));
	json_object_object_add(result, "detail", json_object_new_string(detail));
}

/* A path removed through the mount whose row is still kept: removed, and
 * what the map still holds of it (nothing once hy_borg_forget_file ran;
 * the blocks of a file still open stay until its last close). */
static struct json_object *explain_removed(struct hy_map *map, const char *path, uint64_t id)
{
	struct json_object *result = json_object_new_object();
	uint64_t held = relocated_blocks(map, id);

	if (!result)
		return NULL;
	json_object_object_add(result, "path", json_object_new_string(path));
	add_u64(result, "file_id", id);
	add_u64(result, "relocated_blocks", held);
	add_reason(result, "removed",
		   held ? "removed through the mount; its relocated blocks are still held: a "
			  "handle of it is open (they go at its last close), or blocks written "
			  "into the BOPT could not go home (they go at the next flush)"
			: "removed through the mount; its relocated blocks were freed");
	json_object_object_add(result, "ranges", json_object_new_array());
	return result;
}

/* Why the file is or is not relocated, from what the code recorded: the
 * map (relocated), the last run's plan_files (removed, written once), the
 * newest plan's ranges (planned but not in the BOPT: the copy skipped it
 * or a change released it since) and the saved graph against the plan's
 * room (no room: what the plan left free was less than the smallest range
 * of the file; else the planner did not choose it, or it was never read:
 * cold). */
static int explain_reason(const struct hy_fs_explain_ctx *ec, struct json_object *result,
			  uint64_t id, uint64_t relocated, const struct hy_analyzer_heat *v,
			  size_t nv, char *why, size_t why_size)
{
	struct hy_analyzer_file_plan fp;
	uint64_t smallest = UINT64_MAX;

	add_u64(result, "relocated_blocks", relocated);
	if (!id) {
		add_reason(result, "cold", "never read or written through the mount");
		return 0;
	}
	if (hy_analyzer_file_plan(ec->db_path, id, &fp, why, why_size) < 0)
		return -EIO;
	if (relocated) {
		add_reason(result, "relocated", "in the BOPT, as the plan placed it");
		return 0;
	}
	if (strcmp(fp.left, "written-once") == 0) {
		add_reason(result, "written-once",
			   "written in the log's window and read only soon after: not planned");
		return 0;
	}
	if (strcmp(fp.left, "excluded") == 0) {
		add_reason(result, "excluded",
			   "its path matches an exclude (exclude=, hybridctl exclude): kept out "
			   "of the cache and the plans");
		return 0;
	}
	if (fp.left[0]) {
		add_reason(result, fp.left, "left out of the plan");
		return 0;
	}
	if (fp.planned_blocks) {
		if (strcmp(fp.state, "planned") == 0 || strcmp(fp.state, "copying") == 0)
			add_reason(result, "copying", "in the plan; the copy has not reached it");
		else if (strcmp(fp.state, "failed") == 0)
			add_reason(result, "stopped",
				   "in the plan, not in the BOPT: the reorganization failed or was "
				   "stopped before it was copied");
		else
			add_reason(result, "changed",
				   "in the plan, not in the BOPT: the copy skipped it (the file "
				   "changed during the copy, or its place was still held) or a "
				   "change through the mount released it since");
		return 0;
	}
	for (size_t i = 0; i < nv; i++)
		if (v[i].nblocks < smallest)
			smallest = v[i].nblocks;
	if (nv && fp.have_plan &&
	    (fp.plan_blocks >= fp.capacity_blocks ||
	     fp.capacity_blocks - fp.plan_blocks < smallest)) {
		add_reason(result, "no-room",
			   "read, but the plan's BOPT room was full before it came");
		return 0;
	}
	add_reason(result, "cold", nv ? "read, but not chosen by the planner" : "not in the plan");
	return 0;
}

/* The runs of an explain answer, built block range by block range from
 * the cache's answer (hy_cache_where), the map's pieces (below the cache:
 * the BOPT or home) and the saved heat: consecutive blocks with one
 * place, one dirty state and one heat are one run. Every block is
 * counted in the summary; at most EXPLAIN_MAX_RANGES runs are listed. */
enum { W_DRAM, W_SSD, W_BOPT, W_HOME, W_PLACES };
static const char *const where_name[W_PLACES] = {"dram", "ssd", "bopt", "home"};

struct runs {
	struct json_object *ranges;
	const struct hy_map_piece *pieces;
	size_t npieces, piece; /* the map's pieces of the range; the one now */
	const struct hy_analyzer_heat *v;
	size_t nv;
	uint64_t listed, next_block;
	bool truncated;
	uint64_t blocks[W_PLACES], dirty[W_PLACES];
	/* the run being gathered */
	bool open;
	uint64_t first, count, bopt_block;
	int where;
	bool dirty_now;
	double heat;
};

static int runs_flush(struct runs *r)
{
	struct json_object *o;

	if (!r->open)
		return 0;
	r->open = false;
	if (r->listed >= EXPLAIN_MAX_RANGES) {
		if (!r->truncated)
			r->next_block = r->first;
		r->truncated = true;
		return 0;
	}
	o = json_object_new_object();
	if (!o)
		return -ENOMEM;
	add_u64(o, "first", r->first);
	add_u64(o, "count", r->count);
	json_object_object_add(o, "where", json_object_new_string(where_name[r->where]));
	json_object_object_add(o, "dirty", json_object_new_boolean(r->dirty_now));
	/* a cached run also says where its copy below lies: what a read
	 * would find once the cache let the blocks go */
	if (r->where == W_DRAM || r->where == W_SSD)
		json_object_object_add(
			o, "below",
			json_object_new_string(r->bopt_block == HY_MAP_HOME ? "home" : "bopt"));
	if (r->bopt_block != HY_MAP_HOME)
		add_u64(o, "bopt_block", r->bopt_block);
	if (r->heat >= 0)
		json_object_object_add(o, "heat", json_object_new_double(r->heat));
	json_object_array_add(r->ranges, o);
	r->listed++;
	return 0;
}

/* [first, first + count) in one place, cut where the heat changes;
 * @bopt_block: the BOPT block of @first (served from there, or the copy
 * below a cached block), HY_MAP_HOME when it lies home. */
static int runs_add(struct runs *r, uint64_t first, uint64_t count, int where, bool dirty,
		    uint64_t bopt_block)
{
	uint64_t end = first + count;

	r->blocks[where] += count;
	if (dirty)
		r->dirty[where] += count;
	while (first < end) {
		uint64_t edge, to;
		double heat = heat_at(r->v, r->nv, first, &edge);

		to = edge < end ? edge : end;
		if (r->open && r->where == where && r->dirty_now == dirty && r->heat == heat &&
		    r->first + r->count == first &&
		    (bopt_block == HY_MAP_HOME ? r->bopt_block == HY_MAP_HOME
					       : r->bopt_block != HY_MAP_HOME &&
							 r->bopt_block + r->count == bopt_block)) {
			r->count += to - first;
		} else {
			if (runs_flush(r) < 0)
				return -ENOMEM;
			r->open = true;
			r->first = first;
			r->count = to - first;
			r->where = where;
			r->dirty_now = dirty;
			r->heat = heat;
			r->bopt_block = bopt_block;
		}
		if (bopt_block != HY_MAP_HOME)
			bopt_block += to - first;
		first = to;
	}
	return 0;
}

/* hy_cache_where's callback: cached blocks are served from the cache,
 * the others from where the map says. */
static int runs_cached(void *arg, uint64_t first, uint64_t count, enum hy_cache_place place,
		       bool dirty)
{
	struct runs *r = arg;
	uint64_t end = first + count;
	int cached = place == HY_CACHE_IN_DRAM ? W_DRAM : place == HY_CACHE_IN_SSD ? W_SSD : -1;

	while (first < end) {
		const struct hy_map_piece *p;
		uint64_t pend, to;

		while (r->piece + 1 < r->npieces &&
		       r->pieces[r->piece].block + r->pieces[r->piece].nblocks <= first)
			r->piece++;
		p = &r->pieces[r->piece];
		pend = p->block + p->nblocks;
		to = pend < end && pend > first ? pend : end;
		if (p->bopt_block == HY_MAP_HOME || first < p->block || first >= pend) {
			if (runs_add(r, first, to - first, cached >= 0 ? cached : W_HOME,
				     cached >= 0 && dirty, HY_MAP_HOME) < 0)
				return -ENOMEM;
		} else if (runs_add(r, first, to - first, cached >= 0 ? cached : W_BOPT,
				    cached >= 0 ? dirty : p->dirty,
				    p->bopt_block + (first - p->block)) < 0) {
			return -ENOMEM;
		}
		first = to;
	}
	return 0;
}

/* The request's "offset" and "length" (bytes, optional): the blocks
 * [*first, *first + *count) of a file of @size bytes; -EINVAL with the
 * problem named. */
static int explain_range(struct json_object *req, uint64_t size, uint64_t *first, uint64_t *count,
			 bool *given, char *why, size_t why_size)
{
	struct json_object *v;
	uint64_t nblocks = (size + BLOCK - 1) / BLOCK, off = 0, len = 0, end;
	bool has_len = false;

	*given = false;
	if (json_object_object_get_ex(req, "offset", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
			snprintf(why, why_size, "member \"offset\" is not a number of bytes");
			return -EINVAL;
		}
		off = (uint64_t)json_object_get_int64(v);
		*given = true;
	}
	if (json_object_object_get_ex(req, "length", &v)) {
		if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) <= 0) {
			snprintf(why, why_size,
				 "member \"length\" is not a positive number of bytes");
			return -EINVAL;
		}
		len = (uint64_t)json_object_get_int64(v);
		has_len = *given = true;
	}
	if (*given && off >= size) {
		snprintf(why, why_size,
			 "the range starts at byte %" PRIu64 ", past the end of the file (%" PRIu64
			 " bytes)",
			 off, size);
		return -EINVAL;
	}
	if (has_len && off + len < off) {
		snprintf(why, why_size, "the range's offset and length overflow");
		return -EINVAL;
	}
	*first = off / BLOCK;
	end = has_len ? (off + len + BLOCK - 1) / BLOCK : nblocks;
	if (end > nblocks)
		end = nblocks; /* a length past the end: to the end */
	*count = end - *first;
	return 0;
}

struct json_object *hy_fs_explain(void *ctx, struct json_object *req, char *why, size_t why_size)
{
	const struct hy_fs_explain_ctx *ec = ctx;
	struct hy_map *map = ec->borg ? hy_borg_map(ec->borg) : NULL;
	struct json_object *v, *result = NULL, *ranges, *summary, *range;
	struct hy_map_piece *pieces = NULL;
	struct hy_analyzer_heat *vertices = NULL;
	struct runs runs;
	const char *path;
	struct stat st;
	uint64_t id = 0, nblocks, first = 0, count = 0;
	bool ranged;
	size_t nv = 0;
	int n = 0, fd = -1, rc;

	if (!json_object_object_get_ex(req, "path", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		snprintf(why, why_size, "member \"path\" (a string) is missing");
		return NULL;
	}
	path = json_object_get_string(v);
	if (!safe_relative(path)) {
		snprintf(why, why_size, "\"%s\" is not a path inside the mount", path);
		return NULL;
	}
	/* O_PATH: the file is only named, never opened for its data */
	fd = openat(ec->root_fd, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && ec->identity &&
	    (id = hy_identity_find_removed(ec->identity, path)) != 0)
		return explain_removed(map, path, id);
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(why, why_size, "\"%s\": %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "\"%s\" is not a regular file", path);
		goto out;
	}
	nblocks = ((uint64_t)st.st_size + BLOCK - 1) / BLOCK;
	if (explain_range(req, (uint64_t)st.st_size, &first, &count, &ranged, why, why_size) < 0)
		goto out;
	/* file identity knows files by (dev, ino, birth); BORG by their id */
	if (ec->identity)
		id = hy_identity_find_file(ec->identity, fd, &st);
	if (id && hy_analyzer_file_heat(ec->db_path, id, &vertices, &nv, why, why_size) < 0)
		goto out;
	result = json_object_new_object();
	ranges = json_object_new_array();
	summary = json_object_new_object();
	range = json_object_new_object();
	if (!result || !ranges || !summary || !range) {
		json_object_put(ranges);
		json_object_put(summary);
		json_object_put(range);
		goto fail;
	}
	json_object_object_add(result, "path", json_object_new_string(path));
	add_u64(result, "file_id", id);
	add_u64(result, "size", (uint64_t)st.st_size);
	add_u64(result, "blocks", nblocks);
	add_u64(range, "first", first);
	add_u64(range, "count", count);
	json_object_object_add(result, "range", range);
	json_object_object_add(result, "ranges", ranges);
	json_object_object_add(result, "summary", summary);
	if (explain_reason(ec, result, id, id && map ? relocated_blocks(map, id) : 0, vertices, nv,
			   why, why_size) < 0) {
		json_object_put(result);
		result = NULL;
		goto out;
	}
	if (count > UINT32_MAX)
		count = UINT32_MAX; /* the map's lookups are of 32-bit lengths */
	memset(&runs, 0, sizeof(runs));
	runs.ranges = ranges;
	runs.v = vertices;
	runs.nv = nv;
	if (count) {
		/* below the cache: the map's pieces (all home for a file never
		 * profiled, or without BORG) */
		n = id && map ? hy_map_lookup(map, id, first, (uint32_t)count, NULL, 0) : 1;
		pieces = calloc(n > 0 ? (size_t)n : 1, sizeof(*pieces));
		if (!pieces)
			goto fail;
		if (id && map)
			n = hy_map_lookup(map, id, first, (uint32_t)count, pieces, (size_t)n);
		else
			pieces[0] =
				(struct hy_map_piece){first, (uint32_t)count, false, HY_MAP_HOME};
		runs.pieces = pieces;
		runs.npieces = n > 0 ? (size_t)n : 0;
		if (!runs.npieces) {
			pieces[0] =
				(struct hy_map_piece){first, (uint32_t)count, false, HY_MAP_HOME};
			runs.npieces = 1;
		}
		rc = ec->cache && id
			     ? hy_cache_where(ec->cache, id, first, count, runs_cached, &runs)
			     : runs_cached(&runs, first, count, HY_CACHE_NOT_CACHED, false);
		if (rc == 0)
			rc = runs_flush(&runs);
		if (rc < 0) {
			json_object_put(result);
			result = NULL;
			snprintf(why, why_size, "\"%s\": where its blocks are: %s", path,
				 strerror(-rc));
			goto out;
		}
	}
	for (int w = 0; w < W_PLACES; w++) {
		struct json_object *o = json_object_new_object();

		if (!o)
			goto fail;
		add_u64(o, "blocks", runs.blocks[w]);
		add_u64(o, "dirty", runs.dirty[w]);
		json_object_object_add(summary, where_name[w], o);
	}
	if (runs.truncated) {
		json_object_object_add(result, "truncated", json_object_new_boolean(1));
		add_u64(result, "next_block", runs.next_block);
	}
	goto out;
fail:
	json_object_put(result);
	result = NULL;
	snprintf(why, why_size, "out of memory");
out:
	free(pieces);
	free(vertices);
	if (fd >= 0)
		close(fd);
	return result;
}
