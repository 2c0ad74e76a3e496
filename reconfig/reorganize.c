/* reorganize.c - see include/hybridfs/reorganize.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "hybridfs/analyzer.h"
#include "hybridfs/keymap.h"
#include "hybridfs/map.h"
#include "hybridfs/planner.h"
#include "hybridfs/reorganize.h"
#include "hybridfs/rules.h"
#include "hybridfs/state.h"

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static int db_fail(sqlite3 *db, const char *doing, char *why, size_t why_size)
{
	int rc = hy_state_errno(sqlite3_errcode(db));

	snprintf(why, why_size, "reorganize: %s: %s", doing, sqlite3_errmsg(db));
	return rc ? rc : -EIO;
}

/* The last log rowid before @since_ns (INT64_MAX when nothing is that
 * recent), for a partial run over a time window. */
static int rowid_before(sqlite3 *db, int64_t since_ns, int64_t *out, char *why, size_t why_size)
{
	sqlite3_stmt *st;
	int step;

	if (sqlite3_prepare_v2(db, "SELECT min(rowid) FROM access_log WHERE ts_ns >= ?1", -1, &st,
			       NULL) != SQLITE_OK)
		return db_fail(db, "cannot look the log up by time", why, why_size);
	sqlite3_bind_int64(st, 1, since_ns);
	step = sqlite3_step(st);
	if (step == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*out = sqlite3_column_int64(st, 0) - 1;
	else if (step == SQLITE_ROW)
		*out = INT64_MAX;
	sqlite3_finalize(st);
	if (step != SQLITE_ROW)
		return db_fail(db, "cannot look the log up by time", why, why_size);
	return 0;
}

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Stores @plan as a new generation (only the newest plan's ranges are
 * kept: older ones are history in bopt_plans). */
static int save_plan(sqlite3 *db, const struct hy_reorganize_params *params,
		     struct hy_reorganize_plan *plan, char *why, size_t why_size)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;

	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(db, "cannot start saving the plan", why, why_size);
	if (sqlite3_prepare_v2(db, "SELECT coalesce(max(generation), 0) + 1 FROM bopt_plans", -1,
			       &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		rc = db_fail(db, "cannot number the plan", why, why_size);
		goto fail;
	}
	plan->generation = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_exec(db, "DELETE FROM bopt_plan_ranges", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot clear the previous plan", why, why_size);
		goto fail;
	}
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO bopt_plans (generation, created_ns, mode, requests,"
			       " vertices, edges, ranges, blocks, capacity_blocks, state)"
			       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'planned')",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot prepare the plan record", why, why_size);
		goto fail;
	}
	sqlite3_bind_int64(st, 1, (sqlite3_int64)plan->generation);
	sqlite3_bind_int64(st, 2, now_ns());
	sqlite3_bind_text(st, 3, params->partial ? "partial" : "cumulative", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)plan->analyzer.requests);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)plan->analyzer.vertices);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)plan->analyzer.edges);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)plan->count);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)plan->blocks);
	sqlite3_bind_int64(st, 9, (sqlite3_int64)params->capacity_blocks);
	if (sqlite3_step(st) != SQLITE_DONE) {
		rc = db_fail(db, "cannot record the plan", why, why_size);
		goto fail;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_prepare_v2(
		    db,
		    "INSERT INTO bopt_plan_ranges (generation, bopt_block, file_id, block,"
		    " nblocks, heat) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
		    -1, &st, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot prepare the plan's ranges", why, why_size);
		goto fail;
	}
	for (size_t i = 0; i < plan->count; i++) {
		const struct hy_reorganize_range *r = &plan->ranges[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)plan->generation);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)r->bopt_block);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)r->file_id);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)r->block);
		sqlite3_bind_int64(st, 5, r->nblocks);
		sqlite3_bind_double(st, 6, r->heat);
		if (sqlite3_step(st) != SQLITE_DONE) {
			rc = db_fail(db, "cannot save a range of the plan", why, why_size);
			goto fail;
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot commit the plan", why, why_size);
		goto fail;
	}
	return 0;
fail:
	sqlite3_finalize(st);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	plan->generation = 0;
	return rc;
}

/* One file of a plan, for step 2b (reorganize.h). */
struct plan_file {
	uint64_t file_id;
	size_t first;	  /* its first range's index in BOPT order */
	size_t nranges;	  /* ranges of it in the plan */
	uint64_t covered; /* blocks planned */
	uint64_t end;	  /* one past its last planned block */
	uint64_t whole;	  /* > 0: planned whole, this many blocks */
	double heat;	  /* its hottest range's */
};

static int by_file(const void *pa, const void *pb)
{
	const struct plan_file *a = pa, *b = pb;

	if (a->file_id != b->file_id)
		return a->file_id < b->file_id ? -1 : 1;
	return a->first < b->first ? -1 : a->first > b->first;
}

static int by_first(const void *pa, const void *pb)
{
	const struct plan_file *a = pa, *b = pb;

	return a->first < b->first ? -1 : a->first > b->first;
}

static struct plan_file *file_of(struct plan_file *f, size_t n, uint64_t file_id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f[mid].file_id < file_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && f[lo].file_id == file_id ? &f[lo] : NULL;
}

/* Step 2b: small files planned in part are planned whole, at their first
 * range's place, while the read region has room; the plan is packed again
 * in its order. */
static int whole_small_files(const struct hy_reorganize_params *params,
			     struct hy_reorganize_plan *out, char *why, size_t why_size)
{
	struct plan_file *f = NULL;
	struct hy_reorganize_range *ranges = NULL;
	uint64_t *ids = NULL, *sizes = NULL, room, offset = 0;
	size_t n = 0, k = 0;
	int rc = 0;

	if (!params->file_sizes || out->count == 0)
		return 0;
	f = calloc(out->count, sizeof(*f));
	ranges = calloc(out->count, sizeof(*ranges));
	if (!f || !ranges) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < out->count; i++)
		f[i] = (struct plan_file){.file_id = out->ranges[i].file_id, .first = i};
	qsort(f, out->count, sizeof(*f), by_file);
	for (size_t i = 0; i < out->count; i++) /* one entry a file, its first range's index */
		if (n == 0 || f[n - 1].file_id != f[i].file_id)
			f[n++] = f[i];
	for (size_t i = 0; i < out->count; i++) {
		const struct hy_reorganize_range *r = &out->ranges[i];
		struct plan_file *pf = file_of(f, n, r->file_id);

		pf->nranges++;
		pf->covered += r->nblocks;
		if (r->block + r->nblocks > pf->end)
			pf->end = r->block + r->nblocks;
		if (r->heat > pf->heat)
			pf->heat = r->heat;
	}
	ids = malloc(n * sizeof(*ids));
	sizes = malloc(n * sizeof(*sizes));
	if (!ids || !sizes) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		ids[i] = f[i].file_id;
		sizes[i] = UINT64_MAX;
	}
	rc = params->file_sizes(params->file_sizes_ctx, ids, n, sizes, why, why_size);
	if (rc < 0)
		goto out;
	/* the files in plan order, so the first ones get the room */
	for (size_t i = 0; i < n; i++) {
		uint64_t blocks = sizes[i] == UINT64_MAX ? 0 : (sizes[i] + 4095) / 4096;

		/* a file that shrank since it was read (a range past its end)
		 * is left as planned: the copy clips it */
		if (blocks && blocks <= HY_REORGANIZE_WHOLE_BLOCKS && f[i].end <= blocks &&
		    (f[i].covered < blocks || f[i].nranges > 1))
			f[i].whole = blocks;
	}
	qsort(f, n, sizeof(*f), by_first);
	room = params->capacity_blocks > out->blocks ? params->capacity_blocks - out->blocks : 0;
	for (size_t i = 0; i < n; i++) {
		if (!f[i].whole)
			continue;
		if (f[i].whole - f[i].covered > room) {
			f[i].whole = 0;
			continue;
		}
		room -= f[i].whole - f[i].covered;
		out->whole_files++;
		out->whole_blocks += f[i].whole - f[i].covered;
	}
	if (out->whole_files == 0)
		goto out;
	qsort(f, n, sizeof(*f), by_file);
	for (size_t i = 0; i < out->count; i++) {
		const struct hy_reorganize_range *r = &out->ranges[i];
		const struct plan_file *pf = file_of(f, n, r->file_id);

		if (!pf->whole) {
			ranges[k] = *r;
		} else if (pf->first == i) {
			ranges[k] = (struct hy_reorganize_range){.file_id = r->file_id,
								 .block = 0,
								 .nblocks = (uint32_t)pf->whole,
								 .heat = pf->heat};
		} else {
			continue; /* in the whole range already */
		}
		ranges[k].bopt_block = offset;
		offset += ranges[k++].nblocks;
	}
	free(out->ranges);
	out->ranges = ranges;
	ranges = NULL;
	out->count = k;
	out->blocks = offset;
out:
	if (rc == -ENOMEM)
		snprintf(why, why_size, "reorganize: out of memory making small files whole");
	free(f);
	free(ranges);
	free(ids);
	free(sizes);
	return rc;
}

/* The vertices of files a pin names (rules.h, the state database's
 * cache_rules and files.path): @pinned[i] for @vertices[i]. Returns how
 * many, or a negative errno with @why. */
static long pinned_vertices(sqlite3 *db, const struct hy_plan_vertex *vertices, size_t nv,
			    bool *pinned, char *why, size_t why_size)
{
	struct hy_rules rules = {0};
	struct hy_keymap ids;
	sqlite3_stmt *st;
	long n = 0;
	int rc, step;

	rc = hy_rules_load(db, &rules, false, why, why_size);
	if (rc < 0 || !rules.npins || !nv) {
		hy_rules_clear(&rules);
		return rc;
	}
	rules.nexcludes = 0; /* excluded files are not in the graph (analyzer.h) */
	if (hy_keymap_init(&ids, 64, false) < 0) {
		hy_rules_clear(&rules);
		return -ENOMEM;
	}
	if (sqlite3_prepare_v2(db, "SELECT id, path FROM files WHERE gone_ns IS NULL", -1, &st,
			       NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot read the files' paths", why, why_size);
		goto out;
	}
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *path = (const char *)sqlite3_column_text(st, 1);

		if (path && hy_rules_match(&rules, path) == HY_RULE_PIN &&
		    hy_keymap_put(&ids, (uint64_t)sqlite3_column_int64(st, 0), 0) < 0) {
			rc = -ENOMEM;
			break;
		}
	}
	sqlite3_finalize(st);
	if (rc == 0 && step != SQLITE_DONE)
		rc = db_fail(db, "reading the files' paths", why, why_size);
	for (size_t i = 0; rc == 0 && i < nv; i++)
		if ((pinned[i] = ids.count && hy_keymap_get(&ids, vertices[i].file_id, NULL)))
			n++;
out:
	if (rc == -ENOMEM)
		snprintf(why, why_size, "reorganize: out of memory for the pinned files");
	hy_keymap_free(&ids);
	hy_rules_clear(&rules);
	return rc < 0 ? rc : n;
}

/* The plan with pinned files first (hybridctl pin): the pinned vertices
 * are planned on their own at the front of the read region, the others
 * behind them in what room is left; the edges between the two sets are
 * dropped (they cannot be sequential when one set goes first anyway).
 * Entries name @vertices' indexes, as hy_planner_plan's do. */
static int plan_pinned_first(const struct hy_plan_vertex *vertices, size_t nv,
			     const struct hy_plan_edge *edges, size_t ne, const bool *pinned,
			     uint64_t capacity, struct hy_plan *out, char *why, size_t why_size)
{
	struct hy_plan_vertex *sub = malloc((nv ? nv : 1) * sizeof(*sub));
	struct hy_plan_edge *sube = malloc((ne ? ne : 1) * sizeof(*sube));
	uint32_t *back = malloc((nv ? nv : 1) * sizeof(*back));
	uint32_t *index = malloc((nv ? nv : 1) * sizeof(*index));
	struct hy_plan part[2] = {{0}, {0}};
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!sub || !sube || !back || !index)
		goto fail;
	for (int k = 0; k < 2; k++) {
		bool want = k == 0;
		size_t n = 0, m = 0;

		for (size_t i = 0; i < nv; i++)
			if (pinned[i] == want) {
				index[i] = (uint32_t)n;
				back[n] = (uint32_t)i;
				sub[n++] = vertices[i];
			}
		for (size_t j = 0; j < ne; j++)
			if (pinned[edges[j].from] == want && pinned[edges[j].to] == want)
				sube[m++] = (struct hy_plan_edge){index[edges[j].from],
								  index[edges[j].to],
								  edges[j].weight};
		rc = hy_planner_plan(sub, n, sube, m, k ? capacity - part[0].blocks_used : capacity,
				     &part[k], why, why_size);
		if (rc)
			goto fail;
		for (size_t i = 0; i < part[k].count; i++) {
			part[k].entries[i].vertex = back[part[k].entries[i].vertex];
			if (k)
				part[k].entries[i].bopt_block += part[0].blocks_used;
		}
	}
	out->entries = malloc((part[0].count + part[1].count + 1) * sizeof(*out->entries));
	if (!out->entries) {
		rc = -ENOMEM;
		goto fail;
	}
	memcpy(out->entries, part[0].entries, part[0].count * sizeof(*out->entries));
	memcpy(out->entries + part[0].count, part[1].entries,
	       part[1].count * sizeof(*out->entries));
	out->count = part[0].count + part[1].count;
	out->blocks_used = part[0].blocks_used + part[1].blocks_used;
	out->skipped = part[0].skipped + part[1].skipped;
	rc = 0;
fail:
	if (rc == -ENOMEM)
		snprintf(why, why_size, "reorganize: out of memory planning the pinned files first");
	hy_plan_free(&part[0]);
	hy_plan_free(&part[1]);
	free(sub);
	free(sube);
	free(back);
	free(index);
	return rc;
}

int hy_reorganize_make_plan(sqlite3 *db, const struct hy_reorganize_params *params,
			    struct hy_reorganize_plan *out, char *why, size_t why_size)
{
	struct hy_analyzer_config config = {.gap_ns = params->gap_ns};
	struct hy_analyzer *analyzer = NULL;
	struct hy_plan_vertex *vertices = NULL;
	struct hy_plan_edge *edges = NULL;
	struct hy_plan plan = {0};
	uint64_t *weights = NULL;
	struct timespec t0;
	size_t nv = 0, ne = 0;
	int64_t after = 0;
	bool *pinned = NULL;
	long npinned;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(params->decay > 0 && params->decay <= 1)) {
		snprintf(why, why_size, "reorganize: decay %g is not above 0 and at most 1",
			 params->decay);
		return -EINVAL;
	}
	if (hy_analyzer_new(&config, &analyzer) < 0) {
		snprintf(why, why_size, "reorganize: out of memory");
		return -ENOMEM;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* cumulative: the saved graph, decayed, plus the log since its run;
	 * partial: a fresh graph of the log since the last run (or since) */
	rc = hy_analyzer_load(analyzer, db, &after, why, why_size);
	if (rc)
		goto out;
	if (params->partial) {
		hy_analyzer_free(analyzer);
		analyzer = NULL;
		if (hy_analyzer_new(&config, &analyzer) < 0) {
			rc = -ENOMEM;
			snprintf(why, why_size, "reorganize: out of memory");
			goto out;
		}
	} else {
		hy_analyzer_decay(analyzer, params->decay);
	}
	if (params->since_ns > 0) {
		rc = rowid_before(db, params->since_ns, &after, why, why_size);
		if (rc)
			goto out;
	}
	out->after = after == INT64_MAX ? 0 : after;
	rc = hy_analyzer_feed_log(analyzer, db, after, &out->last, why, why_size);
	if (rc)
		goto out;
	if (out->last < after && after != INT64_MAX)
		out->last = after; /* nothing new */
	out->analyze_seconds = seconds_since(&t0);
	hy_analyzer_get_stats(analyzer, &out->analyzer);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = hy_analyzer_export(analyzer, &vertices, &nv, &weights, &edges, &ne);
	if (rc) {
		snprintf(why, why_size, "reorganize: out of memory exporting the graph");
		goto out;
	}
	/* pinned files' ranges first, subject to the read region's room */
	pinned = calloc(nv ? nv : 1, sizeof(*pinned));
	if (!pinned) {
		rc = -ENOMEM;
		snprintf(why, why_size, "reorganize: out of memory");
		goto out;
	}
	npinned = pinned_vertices(db, vertices, nv, pinned, why, why_size);
	if (npinned < 0) {
		rc = (int)npinned;
		goto out;
	}
	if (npinned)
		rc = plan_pinned_first(vertices, nv, edges, ne, pinned, params->capacity_blocks,
				       &plan, why, why_size);
	else
		rc = hy_planner_plan(vertices, nv, edges, ne, params->capacity_blocks, &plan, why,
				     why_size);
	if (rc)
		goto out;
	out->ranges = calloc(plan.count ? plan.count : 1, sizeof(*out->ranges));
	if (!out->ranges) {
		rc = -ENOMEM;
		snprintf(why, why_size, "reorganize: out of memory for %zu ranges", plan.count);
		goto out;
	}
	for (size_t i = 0; i < plan.count; i++) {
		const struct hy_plan_vertex *v = &vertices[plan.entries[i].vertex];

		out->ranges[i] = (struct hy_reorganize_range){
			.file_id = v->file_id,
			.block = v->block,
			.nblocks = v->nblocks,
			.bopt_block = plan.entries[i].bopt_block,
			.heat = (double)weights[plan.entries[i].vertex],
		};
	}
	out->count = plan.count;
	out->blocks = plan.blocks_used;
	out->skipped = plan.skipped;
	rc = whole_small_files(params, out, why, why_size);
	if (rc)
		goto out;
	out->plan_seconds = seconds_since(&t0);
	if (params->save) {
		rc = hy_analyzer_save(analyzer, db, params->partial ? "partial" : "cumulative",
				      out->last, why, why_size);
		if (rc == 0)
			rc = save_plan(db, params, out, why, why_size);
	}
out:
	if (rc)
		hy_reorganize_plan_free(out);
	hy_plan_free(&plan);
	free(pinned);
	free(vertices);
	free(weights);
	free(edges);
	hy_analyzer_free(analyzer);
	return rc;
}

void hy_reorganize_plan_free(struct hy_reorganize_plan *plan)
{
	free(plan->ranges);
	plan->ranges = NULL;
	plan->count = 0;
}

int hy_reorganize_record(sqlite3 *db, uint64_t generation, const char *state,
			 uint64_t copied_blocks, uint64_t dropped_blocks, uint64_t kept_blocks,
			 uint64_t skipped_ranges, char *why, size_t why_size)
{
	sqlite3_stmt *st;
	int rc = 0;

	if (sqlite3_prepare_v2(db,
			       "UPDATE bopt_plans SET state = ?2, copied_blocks = ?3,"
			       " dropped_blocks = ?4, kept_blocks = ?5, skipped_ranges = ?6,"
			       " finished_ns = CASE WHEN ?2 IN ('done', 'failed') THEN ?7 END"
			       " WHERE generation = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(db, "cannot prepare the plan's record", why, why_size);
	sqlite3_bind_int64(st, 1, (sqlite3_int64)generation);
	sqlite3_bind_text(st, 2, state, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)copied_blocks);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)dropped_blocks);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)kept_blocks);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)skipped_ranges);
	sqlite3_bind_int64(st, 7, now_ns());
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = db_fail(db, "cannot record how the plan went", why, why_size);
	sqlite3_finalize(st);
	return rc;
}

/* ---- the difference ------------------------------------------------- */

struct range_list {
	struct hy_reorganize_range *r;
	size_t n, cap;
	uint64_t blocks;
};

static int push(struct range_list *l, uint64_t file_id, uint64_t block, uint64_t nblocks,
		uint64_t bopt_block)
{
	if (nblocks == 0)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct hy_reorganize_range *grown = realloc(l->r, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		l->r = grown;
		l->cap = cap;
	}
	l->r[l->n++] =
		(struct hy_reorganize_range){file_id, block, (uint32_t)nblocks, bopt_block, 0.0};
	l->blocks += nblocks;
	return 0;
}

static int by_file_block(const void *a, const void *b)
{
	const struct hy_reorganize_range *x = a, *y = b;

	if (x->file_id != y->file_id)
		return x->file_id < y->file_id ? -1 : 1;
	return x->block < y->block ? -1 : x->block > y->block;
}

static int by_bopt_block(const void *a, const void *b)
{
	const struct hy_reorganize_range *x = a, *y = b;

	return x->bopt_block < y->bopt_block ? -1 : x->bopt_block > y->bopt_block;
}

static uint64_t end_of(const struct hy_reorganize_range *r)
{
	return r->block + r->nblocks;
}

/* @from minus the (sorted, disjoint) @kept, into @out; BOPT places move
 * with the pieces. */
static int subtract(const struct hy_reorganize_range *from, size_t n,
		    const struct hy_reorganize_range *kept, size_t nkept, struct range_list *out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		const struct hy_reorganize_range *r = &from[i];
		uint64_t at = r->block, end = end_of(r);

		while (k < nkept && (kept[k].file_id < r->file_id ||
				     (kept[k].file_id == r->file_id && end_of(&kept[k]) <= at)))
			k++;
		for (size_t j = k;
		     j < nkept && kept[j].file_id == r->file_id && kept[j].block < end; j++) {
			if (kept[j].block > at && push(out, r->file_id, at, kept[j].block - at,
						       r->bopt_block + (at - r->block)))
				return -ENOMEM;
			if (end_of(&kept[j]) > at)
				at = end_of(&kept[j]);
		}
		if (at < end &&
		    push(out, r->file_id, at, end - at, r->bopt_block + (at - r->block)))
			return -ENOMEM;
	}
	return 0;
}

/* Splits @r (relocated, not kept) by whether its blocks must leave the
 * BOPT: planned elsewhere (@plan, sorted by file and block), or lying where
 * a copy will go (@copy, sorted by BOPT place); those into @drop, the rest
 * into @left. */
static int split_leaving(const struct hy_reorganize_range *r,
			 const struct hy_reorganize_range *plan, size_t nplan,
			 const struct hy_reorganize_range *copy, size_t ncopy,
			 struct range_list *drop, struct range_list *left)
{
	uint64_t at = r->block, end = end_of(r);
	size_t lo = 0, hi = nplan;

	/* the first planned range of the file that ends after @at */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (plan[mid].file_id < r->file_id ||
		    (plan[mid].file_id == r->file_id && end_of(&plan[mid]) <= at))
			lo = mid + 1;
		else
			hi = mid;
	}
	while (at < end) {
		uint64_t next = end, bopt = r->bopt_block + (at - r->block);
		bool leaves = false;

		if (lo < nplan && plan[lo].file_id == r->file_id && plan[lo].block < end) {
			if (plan[lo].block <= at) {
				/* planned elsewhere: it moves */
				next = end_of(&plan[lo]) < end ? end_of(&plan[lo]) : end;
				leaves = true;
				lo++;
			} else {
				next = plan[lo].block;
			}
		}
		if (!leaves) {
			/* its BOPT place [bopt, bopt + next - at): where a copy goes? */
			size_t a = 0, b = ncopy;
			uint64_t bend = bopt + (next - at);

			while (a < b) {
				size_t mid = a + (b - a) / 2;

				if (copy[mid].bopt_block + copy[mid].nblocks <= bopt)
					a = mid + 1;
				else
					b = mid;
			}
			if (a < ncopy && copy[a].bopt_block < bend) {
				if (copy[a].bopt_block <= bopt) {
					uint64_t cend = copy[a].bopt_block + copy[a].nblocks;

					leaves = true;
					if (cend < bend)
						next = at + (cend - bopt);
				} else {
					next = at + (copy[a].bopt_block - bopt);
				}
			}
		}
		if (push(leaves ? drop : left, r->file_id, at, next - at, bopt))
			return -ENOMEM;
		at = next;
	}
	return 0;
}

int hy_reorganize_diff(const struct hy_map_extent *current, size_t ncurrent,
		       const struct hy_reorganize_range *ranges, size_t nranges,
		       struct hy_reorganize_diff *out)
{
	struct range_list keep = {0}, drop = {0}, copy = {0}, rest = {0}, left = {0};
	struct hy_reorganize_range *cur = NULL, *plan = NULL;
	size_t i = 0, j = 0;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	cur = malloc((ncurrent ? ncurrent : 1) * sizeof(*cur));
	plan = malloc((nranges ? nranges : 1) * sizeof(*plan));
	if (!cur || !plan)
		goto fail;
	for (size_t k = 0; k < ncurrent; k++)
		cur[k] = (struct hy_reorganize_range){current[k].file_id, current[k].block,
						      current[k].nblocks, current[k].bopt_block,
						      0.0};
	if (nranges) /* an empty plan may come as NULL */
		memcpy(plan, ranges, nranges * sizeof(*plan));
	qsort(cur, ncurrent, sizeof(*cur), by_file_block);
	qsort(plan, nranges, sizeof(*plan), by_file_block);

	/* kept: where a relocated extent and a planned range overlap with the
	 * same BOPT place for the same block */
	while (i < ncurrent && j < nranges) {
		const struct hy_reorganize_range *c = &cur[i], *p = &plan[j];

		if (c->file_id != p->file_id) {
			if (c->file_id < p->file_id)
				i++;
			else
				j++;
			continue;
		}
		{
			uint64_t lo = c->block > p->block ? c->block : p->block;
			uint64_t hi = end_of(c) < end_of(p) ? end_of(c) : end_of(p);

			if (lo < hi &&
			    c->bopt_block + (lo - c->block) == p->bopt_block + (lo - p->block) &&
			    push(&keep, c->file_id, lo, hi - lo, c->bopt_block + (lo - c->block)))
				goto fail;
			if (end_of(c) <= end_of(p))
				i++;
			else
				j++;
		}
	}
	if (subtract(cur, ncurrent, keep.r, keep.n, &rest) ||
	    subtract(plan, nranges, keep.r, keep.n, &copy))
		goto fail;
	if (copy.n > 1)
		qsort(copy.r, copy.n, sizeof(*copy.r), by_bopt_block);
	/* what the plan leaves out stays until its room is wanted: a clean
	 * copy of home costs nothing where it is, and a period whose reads
	 * the page cache served would otherwise undo a good layout */
	for (size_t k = 0; k < rest.n; k++)
		if (split_leaving(&rest.r[k], plan, nranges, copy.r, copy.n, &drop, &left))
			goto fail;
	out->keep = keep.r, out->nkeep = keep.n, out->keep_blocks = keep.blocks;
	out->drop = drop.r, out->ndrop = drop.n, out->drop_blocks = drop.blocks;
	out->copy = copy.r, out->ncopy = copy.n, out->copy_blocks = copy.blocks;
	out->left = left.r, out->nleft = left.n, out->left_blocks = left.blocks;
	free(rest.r);
	rc = 0;
	goto out;
fail:
	free(keep.r);
	free(drop.r);
	free(copy.r);
	free(rest.r);
	free(left.r);
out:
	free(cur);
	free(plan);
	return rc;
}

void hy_reorganize_diff_free(struct hy_reorganize_diff *diff)
{
	free(diff->keep);
	free(diff->drop);
	free(diff->copy);
	free(diff->left);
	memset(diff, 0, sizeof(*diff));
}
