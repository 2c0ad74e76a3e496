/*
 * analyzer_db.c - BORG's analyzer and the database: the graph fed from the
 * access log, saved to it and loaded back, and one file's heat for
 * explain. See include/hybridfs/analyzer.h and analyzer_internal.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "hybridfs/analyzer.h"
#include "hybridfs/rules.h"
#include "hybridfs/state.h"

#include "analyzer_internal.h"

#define BLOCK_SHIFT 12
#define BLOCK_SIZE  4096

/* ---- the database ----------------------------------------------------------- */

static int db_fail(struct sqlite3 *db, const char *doing, char *why, size_t why_size)
{
	snprintf(why, why_size, "analyzer: %s: %s", doing, sqlite3_errmsg(db));
	return hy_state_errno(sqlite3_errcode(db));
}

/* The 4 KiB block range of a logged request; false when it reads nothing. */
static bool log_range(int64_t offset, int64_t length, uint64_t *block, uint32_t *nblocks)
{
	uint64_t first, last;

	if (offset < 0 || length <= 0 || length > INT64_MAX - offset)
		return false;
	first = (uint64_t)offset >> BLOCK_SHIFT;
	last = ((uint64_t)offset + (uint64_t)length + BLOCK_SIZE - 1) >> BLOCK_SHIFT;
	*block = first;
	*nblocks = last - first > UINT32_MAX ? UINT32_MAX : (uint32_t)(last - first);
	return true;
}

/* ---- files left out (analyzer.h) --------------------------------------- */

static int left_cmp(const void *pa, const void *pb)
{
	const struct hy_analyzer_left *x = pa, *y = pb;

	return x->file_id < y->file_id ? -1 : x->file_id > y->file_id;
}

static struct hy_analyzer_left *left_find(const struct hy_analyzer *a, uint64_t file_id)
{
	struct hy_analyzer_left key = {.file_id = file_id};

	return a->nleft ? bsearch(&key, a->left, a->nleft, sizeof(key), left_cmp) : NULL;
}

static int left_push(struct hy_analyzer *a, uint64_t file_id, enum hy_analyzer_left_reason reason)
{
	if (a->nleft == a->leftcap) {
		size_t cap = a->leftcap ? 2 * a->leftcap : 64;
		struct hy_analyzer_left *grown = realloc(a->left, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		a->left = grown;
		a->leftcap = cap;
	}
	a->left[a->nleft++] = (struct hy_analyzer_left){file_id, reason, 0};
	return 0;
}

/* The files of the rows after @after to leave out, and the removed files
 * the graph already had vertices of (a loaded graph), whose vertices go
 * now: a plan never relocates a file that no longer exists. */
static int find_left_out(struct hy_analyzer *a, struct sqlite3 *db, int64_t after, char *why,
			 size_t why_size)
{
	struct hy_rules rules = {0};
	sqlite3_stmt *st;
	size_t inwindow;
	int step, rc;

	a->nleft = 0;
	/* the excludes (and the pins, which win over them: rules.h) */
	rc = hy_rules_load(db, &rules, true, why, why_size);
	if (rc < 0)
		return rc;
	/* one pass over the window, by file: removed, and the written-once
	 * rule's times (a row without its files row is neither) */
	if (sqlite3_prepare_v2(
		    db,
		    "SELECT l.file_id, max(f.gone_ns IS NOT NULL),"
		    " coalesce(nullif(max(f.birth_ns), 0), max(f.first_seen_ns), 0), min(l.ts_ns),"
		    " coalesce(max(CASE WHEN l.mode = 1 THEN l.ts_ns END), 0),"
		    " coalesce(max(CASE WHEN l.mode = 0 THEN l.ts_ns END), 0), max(f.path)"
		    " FROM access_log l LEFT JOIN files f ON f.id = l.file_id"
		    " WHERE l.rowid > ?1 GROUP BY l.file_id ORDER BY l.file_id",
		    -1, &st, NULL) != SQLITE_OK) {
		hy_rules_clear(&rules);
		return db_fail(db, "cannot read the access log by file", why, why_size);
	}
	sqlite3_bind_int64(st, 1, after);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
		struct hy_analyzer_file_window w = {
			.born_ns = sqlite3_column_int64(st, 2),
			.first_ns = sqlite3_column_int64(st, 3),
			.last_write_ns = sqlite3_column_int64(st, 4),
			.last_read_ns = sqlite3_column_int64(st, 5),
		};
		const char *path = (const char *)sqlite3_column_text(st, 6);

		rc = 0;
		if (sqlite3_column_int(st, 1))
			rc = left_push(a, id, HY_ANALYZER_LEFT_REMOVED);
		else if (path && rules.nexcludes &&
			 hy_rules_match(&rules, path) == HY_RULE_EXCLUDE)
			rc = left_push(a, id, HY_ANALYZER_LEFT_EXCLUDED);
		else if (hy_analyzer_written_once(&w, a->write_once_ns))
			rc = left_push(a, id, HY_ANALYZER_LEFT_WRITTEN_ONCE);
		if (rc) {
			hy_rules_clear(&rules);
			sqlite3_finalize(st);
			snprintf(why, why_size, "analyzer: out of memory");
			return rc;
		}
	}
	sqlite3_finalize(st);
	if (step != SQLITE_DONE) {
		hy_rules_clear(&rules);
		return db_fail(db, "reading the access log by file", why, why_size);
	}
	inwindow = a->nleft;
	/* a loaded graph's files excluded since: their vertices go too */
	if (a->nv && rules.nexcludes) {
		if (sqlite3_prepare_v2(db, "SELECT id, path FROM files WHERE gone_ns IS NULL", -1,
				       &st, NULL) != SQLITE_OK) {
			hy_rules_clear(&rules);
			return db_fail(db, "cannot read the files' paths", why, why_size);
		}
		while ((step = sqlite3_step(st)) == SQLITE_ROW) {
			uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
			const char *path = (const char *)sqlite3_column_text(st, 1);
			struct hy_analyzer_left key = {.file_id = id};

			if (!path || !file_find(a, id) ||
			    (inwindow && bsearch(&key, a->left, inwindow, sizeof(key), left_cmp)) ||
			    hy_rules_match(&rules, path) != HY_RULE_EXCLUDE)
				continue;
			if (left_push(a, id, HY_ANALYZER_LEFT_EXCLUDED)) {
				sqlite3_finalize(st);
				hy_rules_clear(&rules);
				snprintf(why, why_size, "analyzer: out of memory");
				return -ENOMEM;
			}
		}
		sqlite3_finalize(st);
		if (step != SQLITE_DONE) {
			hy_rules_clear(&rules);
			return db_fail(db, "reading the files' paths", why, why_size);
		}
	}
	hy_rules_clear(&rules);
	if (a->nv) {
		if (sqlite3_prepare_v2(db, "SELECT id FROM files WHERE gone_ns IS NOT NULL", -1,
				       &st, NULL) != SQLITE_OK)
			return db_fail(db, "cannot read the files removed", why, why_size);
		while ((step = sqlite3_step(st)) == SQLITE_ROW) {
			uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
			struct hy_analyzer_left key = {.file_id = id};

			/* the window's part is sorted; what is added after it is
			 * not in the window (those are in it already) */
			if (!file_find(a, id) ||
			    (inwindow && bsearch(&key, a->left, inwindow, sizeof(key), left_cmp)))
				continue;
			if (left_push(a, id, HY_ANALYZER_LEFT_REMOVED)) {
				sqlite3_finalize(st);
				snprintf(why, why_size, "analyzer: out of memory");
				return -ENOMEM;
			}
		}
		sqlite3_finalize(st);
		if (step != SQLITE_DONE)
			return db_fail(db, "reading the files removed", why, why_size);
	}
	if (a->nleft > inwindow)
		qsort(a->left, a->nleft, sizeof(*a->left), left_cmp);
	for (size_t i = 0; i < a->nleft; i++) {
		struct file *fe;

		if (a->left[i].reason != HY_ANALYZER_LEFT_REMOVED &&
		    a->left[i].reason != HY_ANALYZER_LEFT_EXCLUDED)
			continue;
		/* the file's slot may move when its last vertex goes: found again */
		while ((fe = file_find(a, a->left[i].file_id)) && fe->head != NIL)
			a->cut_edges += hy_analyzer_graph_vertex_remove(a, fe->head);
	}
	return 0;
}

int hy_analyzer_feed_log(struct hy_analyzer *a, struct sqlite3 *db, int64_t after, int64_t *last,
			 char *why, size_t why_size)
{
	sqlite3_stmt *st;
	int rc;

	*last = after;
	rc = find_left_out(a, db, after, why, why_size);
	if (rc)
		return rc;
	if (sqlite3_prepare_v2(db,
			       "SELECT rowid, ts_ns, process_id, file_id, offset, length"
			       " FROM access_log WHERE rowid > ?1 ORDER BY rowid",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(db, "cannot read the access log", why, why_size);
	sqlite3_bind_int64(st, 1, after);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t rowid = sqlite3_column_int64(st, 0);
		uint64_t block;
		uint32_t nblocks;

		struct hy_analyzer_left *left = left_find(a, (uint64_t)sqlite3_column_int64(st, 3));

		if (left)
			left->requests++;
		else if (log_range(sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5), &block,
				   &nblocks)) {
			int err = hy_analyzer_feed(a, sqlite3_column_int64(st, 1),
						   (uint32_t)sqlite3_column_int64(st, 2),
						   (uint64_t)sqlite3_column_int64(st, 3), block,
						   nblocks);

			if (err) {
				snprintf(why, why_size, "analyzer: access log row %" PRId64 ": %s",
					 rowid, strerror(-err));
				sqlite3_finalize(st);
				return err;
			}
		}
		*last = rowid;
	}
	if (rc != SQLITE_DONE) {
		rc = db_fail(db, "reading the access log", why, why_size);
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	return 0;
}

/* Saved ids: by last use, so that a load restores the recency order the
 * cold-tail cut needs (the schema has no column for it). */
static int save_order(const void *pa, const void *pb, void *arg)
{
	const struct hy_analyzer *a = arg;
	uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;

	if (a->v[x].lru != a->v[y].lru)
		return a->v[x].lru < a->v[y].lru ? -1 : 1;
	return key_cmp(a->v[x].file, a->v[x].block, a->v[y].file, a->v[y].block);
}

int hy_analyzer_save(const struct hy_analyzer *a, struct sqlite3 *db, const char *mode,
		     int64_t last_rowid, char *why, size_t why_size)
{
	sqlite3_stmt *vst = NULL, *est = NULL, *rst = NULL, *lst = NULL;
	uint32_t *order = NULL, *id = NULL;
	struct timespec now;
	size_t n = 0;
	int rc = 0;

	if (!mode || (strcmp(mode, "cumulative") && strcmp(mode, "partial"))) {
		snprintf(why, why_size, "analyzer: mode \"%s\" is neither cumulative nor partial",
			 mode ? mode : "(null)");
		return -EINVAL;
	}
	order = malloc((a->nv ? a->nv : 1) * sizeof(*order));
	id = malloc((a->vused ? a->vused : 1) * sizeof(*id));
	if (!order || !id) {
		free(order), free(id);
		snprintf(why, why_size, "analyzer: saving the graph: out of memory");
		return -ENOMEM;
	}
	for (uint32_t x = 0; x < a->vused; x++)
		if (a->v[x].nblocks)
			order[n++] = x;
	qsort_r(order, n, sizeof(*order), save_order, (void *)a);
	for (size_t i = 0; i < n; i++)
		id[order[i]] = (uint32_t)(i + 1);

	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot start saving the graph", why, why_size);
		goto out;
	}
	if (sqlite3_exec(db, "DELETE FROM graph_edges; DELETE FROM graph_vertices;", NULL, NULL,
			 NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT INTO graph_vertices (id, file_id, block, nblocks, weight)"
			       " VALUES (?1, ?2, ?3, ?4, ?5)",
			       -1, &vst, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO graph_edges (src, dst, weight) VALUES (?1, ?2, ?3)",
			       -1, &est, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT INTO analyzer_runs (finished_ns, mode, last_log_rowid,"
			       " requests, vertices, edges, cut_vertices)"
			       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
			       -1, &rst, NULL) != SQLITE_OK)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct vertex *vx = &a->v[order[i]];

		sqlite3_bind_int64(vst, 1, (int64_t)(i + 1));
		sqlite3_bind_int64(vst, 2, (int64_t)vx->file);
		sqlite3_bind_int64(vst, 3, (int64_t)vx->block);
		sqlite3_bind_int64(vst, 4, vx->nblocks);
		sqlite3_bind_double(vst, 5, vx->weight);
		if (sqlite3_step(vst) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(vst);
	}
	for (uint32_t i = 0; i < a->eused; i++) {
		const struct edge *ed = &a->e[i];

		if (ed->from == NIL)
			continue;
		sqlite3_bind_int64(est, 1, id[ed->from]);
		sqlite3_bind_int64(est, 2, id[ed->to]);
		sqlite3_bind_double(est, 3, ed->weight);
		if (sqlite3_step(est) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(est);
	}
	clock_gettime(CLOCK_REALTIME, &now);
	sqlite3_bind_int64(rst, 1, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
	sqlite3_bind_text(rst, 2, mode, -1, SQLITE_STATIC);
	sqlite3_bind_int64(rst, 3, last_rowid);
	sqlite3_bind_int64(rst, 4, (int64_t)a->requests);
	sqlite3_bind_int64(rst, 5, a->nv);
	sqlite3_bind_int64(rst, 6, a->ne);
	sqlite3_bind_int64(rst, 7, (int64_t)a->cut_vertices);
	if (sqlite3_step(rst) != SQLITE_DONE)
		goto fail;
	/* the files this run left out, for explain: why a file is not planned */
	{
		int64_t run = sqlite3_last_insert_rowid(db);

		if (sqlite3_exec(db, "DELETE FROM plan_files", NULL, NULL, NULL) != SQLITE_OK ||
		    sqlite3_prepare_v2(db,
				       "INSERT INTO plan_files (file_id, reason, requests, run)"
				       " VALUES (?1, ?2, ?3, ?4)",
				       -1, &lst, NULL) != SQLITE_OK)
			goto fail;
		for (size_t i = 0; i < a->nleft; i++) {
			sqlite3_bind_int64(lst, 1, (int64_t)a->left[i].file_id);
			sqlite3_bind_text(lst, 2, hy_analyzer_left_name(a->left[i].reason), -1,
					  SQLITE_STATIC);
			sqlite3_bind_int64(lst, 3, (int64_t)a->left[i].requests);
			sqlite3_bind_int64(lst, 4, run);
			if (sqlite3_step(lst) != SQLITE_DONE)
				goto fail;
			sqlite3_reset(lst);
		}
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	goto out;
fail:
	rc = db_fail(db, "saving the graph", why, why_size);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
	sqlite3_finalize(vst);
	sqlite3_finalize(est);
	sqlite3_finalize(rst);
	sqlite3_finalize(lst);
	free(order);
	free(id);
	return rc;
}

static int64_t query_int(struct sqlite3 *db, const char *sql, int64_t arg, int64_t dflt, int *rc)
{
	sqlite3_stmt *st;
	int64_t val = dflt;
	int step;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		*rc = -1;
		return dflt;
	}
	if (sqlite3_bind_parameter_count(st) > 0)
		sqlite3_bind_int64(st, 1, arg);
	step = sqlite3_step(st);
	if (step == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		val = sqlite3_column_int64(st, 0);
	else if (step != SQLITE_ROW && step != SQLITE_DONE)
		*rc = -1;
	sqlite3_finalize(st);
	return val;
}

static int id_cmp(const void *pa, const void *pb)
{
	int64_t x = *(const int64_t *)pa, y = *(const int64_t *)pb;

	return x < y ? -1 : x > y;
}

/* Reads the saved vertices (ids ascending, so ids[i] is slot i's id) and
 * edges into the empty graph. */
static int load_graph(struct hy_analyzer *a, struct sqlite3 *db, char *why, size_t why_size)
{
	sqlite3_stmt *st = NULL;
	int64_t *ids = NULL, nvx, ned;
	int q = 0, rc = 0, step;
	size_t n = 0;

	nvx = query_int(db, "SELECT count(*) FROM graph_vertices", 0, 0, &q);
	ned = query_int(db, "SELECT count(*) FROM graph_edges", 0, 0, &q);
	if (q)
		return db_fail(db, "reading the saved graph", why, why_size);
	if (nvx < 0 || nvx > (int64_t)MAX_SLOTS - 8 || ned < 0 || ned > (int64_t)MAX_SLOTS - 8 ||
	    hy_analyzer_graph_grow_vertices(a, (size_t)nvx) ||
	    hy_analyzer_graph_grow_edges(a, (size_t)ned) ||
	    hy_analyzer_graph_grow_hash(a, (size_t)ned) ||
	    !(ids = malloc((size_t)(nvx ? nvx : 1) * sizeof(*ids))))
		goto nomem;
	if (sqlite3_prepare_v2(db,
			       "SELECT id, file_id, block, nblocks, weight FROM graph_vertices"
			       " ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		goto dbfail;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t f = (uint64_t)sqlite3_column_int64(st, 1);
		uint64_t b = (uint64_t)sqlite3_column_int64(st, 2);
		int64_t nb = sqlite3_column_int64(st, 3);
		double w = sqlite3_column_double(st, 4);
		struct file *fe;
		uint32_t pred, next, x;

		if (n >= (size_t)nvx || nb <= 0 || nb > UINT32_MAX || b + (uint64_t)nb < b ||
		    !(w > 0.0) || !isfinite(w))
			goto damaged;
		fe = file_find(a, f);
		pred = fe ? t_floor(a, fe->root, b) : NIL;
		next = pred != NIL ? a->v[pred].next : fe ? fe->head : NIL;
		if ((pred != NIL && vend(a, pred) > b) ||
		    (next != NIL && a->v[next].block < b + (uint64_t)nb))
			goto damaged;
		if (!fe && hy_analyzer_graph_grow_files(a, 1))
			goto nomem;
		/* the rank by id is the recency order (see save_order) */
		fe = hy_analyzer_graph_file_get(a, f);
		x = hy_analyzer_graph_vertex_alloc(a, f, b, (uint32_t)nb, w, n + 1);
		hy_analyzer_graph_list_link(a, fe, pred, next, x);
		fe->root = hy_analyzer_graph_t_insert(a, fe->root, x);
		ids[n++] = sqlite3_column_int64(st, 0);
	}
	if (step != SQLITE_DONE)
		goto dbfail;
	sqlite3_finalize(st);
	st = NULL;
	a->clock = n;

	if (sqlite3_prepare_v2(db, "SELECT src, dst, weight FROM graph_edges", -1, &st, NULL) !=
	    SQLITE_OK)
		goto dbfail;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t src = sqlite3_column_int64(st, 0), dst = sqlite3_column_int64(st, 1);
		int64_t *ps = bsearch(&src, ids, n, sizeof(*ids), id_cmp);
		int64_t *pd = bsearch(&dst, ids, n, sizeof(*ids), id_cmp);
		double w = sqlite3_column_double(st, 2);

		if (!ps || !pd || ps == pd || !(w > 0.0) || !isfinite(w) || a->eused >= a->ecap ||
		    (size_t)a->ne * 2 >= a->ehcap ||
		    hy_analyzer_graph_eh_find(a, (uint32_t)(ps - ids), (uint32_t)(pd - ids)))
			goto damaged;
		hy_analyzer_graph_edge_add(a, (uint32_t)(ps - ids), (uint32_t)(pd - ids), w);
	}
	if (step != SQLITE_DONE)
		goto dbfail;
	goto out;
nomem:
	snprintf(why, why_size, "analyzer: loading %" PRId64 " vertices: out of memory", nvx);
	rc = -ENOMEM;
	goto out;
damaged:
	snprintf(why, why_size,
		 "analyzer: the saved graph is damaged (overlapping ranges, a bad length, "
		 "weight or edge)");
	rc = -EUCLEAN;
	goto out;
dbfail:
	rc = db_fail(db, "reading the saved graph", why, why_size);
out:
	sqlite3_finalize(st);
	free(ids);
	return rc;
}

/* Rebuilds each process's last request from the log read so far, as a full
 * run would have it: only requests within the gap of the last one read can
 * still start a temporal edge, and the ts_ns index finds those. */
static int load_processes(struct hy_analyzer *a, struct sqlite3 *db, int64_t last_rowid, char *why,
			  size_t why_size)
{
	sqlite3_stmt *st;
	int64_t tlast, from;
	int q = 0, step;

	tlast = query_int(db, "SELECT ts_ns FROM access_log WHERE rowid = ?1", last_rowid,
			  INT64_MIN, &q);
	if (q)
		return db_fail(db, "reading the access log", why, why_size);
	if (tlast == INT64_MIN)
		return 0; /* that part of the log is gone: nothing to go on from */
	if (__builtin_sub_overflow(tlast, a->gap_ns, &from))
		from = INT64_MIN;
	if (sqlite3_prepare_v2(db,
			       "SELECT ts_ns, process_id, file_id, offset, length FROM access_log"
			       " WHERE ts_ns >= ?1 AND rowid <= ?2 ORDER BY rowid",
			       -1, &st, NULL) != SQLITE_OK)
		return db_fail(db, "reading the access log", why, why_size);
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, last_rowid);
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t block;
		uint32_t nblocks;

		if (!log_range(sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4), &block,
			       &nblocks))
			continue;
		if (hy_analyzer_graph_grow_procs(a)) {
			sqlite3_finalize(st);
			snprintf(why, why_size, "analyzer: loading the processes: out of memory");
			return -ENOMEM;
		}
		hy_analyzer_graph_proc_set(
			a, (uint32_t)sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 0),
			(uint64_t)sqlite3_column_int64(st, 2), block + nblocks - 1, NIL);
	}
	sqlite3_finalize(st);
	if (step != SQLITE_DONE)
		return db_fail(db, "reading the access log", why, why_size);
	return 0;
}

int hy_analyzer_load(struct hy_analyzer *a, struct sqlite3 *db, int64_t *last_rowid, char *why,
		     size_t why_size)
{
	int q = 0, rc;

	*last_rowid = 0;
	hy_analyzer_graph_reset(a);
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(db, "cannot start loading the graph", why, why_size);
	*last_rowid = query_int(
		db, "SELECT last_log_rowid FROM analyzer_runs ORDER BY id DESC LIMIT 1", 0, 0, &q);
	if (q) {
		rc = db_fail(db, "reading the analyzer's runs", why, why_size);
		goto fail;
	}
	rc = load_graph(a, db, why, why_size);
	if (!rc && *last_rowid > 0)
		rc = load_processes(a, db, *last_rowid, why, why_size);
	if (rc)
		goto fail;
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	hy_analyzer_graph_cut_cold(a); /* a graph saved under a larger bound */
	return 0;
fail:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	hy_analyzer_graph_reset(a);
	*last_rowid = 0;
	return rc;
}

/* ---- one file's heat, for explain ------------------------------------ */

int hy_analyzer_file_heat(const char *db_path, uint64_t file_id, struct hy_analyzer_heat **out,
			  size_t *n, char *why, size_t why_size)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;
	size_t cap = 0;
	int step, rc = 0;

	*out = NULL;
	*n = 0;
	/* its own read-only connection: the reconfigurator's may be busy on
	 * its thread, and the graph is read as the last run saved it */
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(why, why_size, "state database \"%s\": %s", db_path,
			 db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return -EIO;
	}
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(
		    db,
		    "SELECT block, nblocks, weight FROM graph_vertices WHERE file_id = ?1"
		    " ORDER BY block",
		    -1, &q, NULL) != SQLITE_OK) {
		rc = -EIO;
		goto out;
	}
	sqlite3_bind_int64(q, 1, (sqlite3_int64)file_id);
	while ((step = sqlite3_step(q)) == SQLITE_ROW) {
		if (*n == cap) {
			struct hy_analyzer_heat *grown;

			cap = cap ? 2 * cap : 64;
			grown = realloc(*out, cap * sizeof(*grown));
			if (!grown) {
				rc = -ENOMEM;
				goto out;
			}
			*out = grown;
		}
		(*out)[(*n)++] = (struct hy_analyzer_heat){(uint64_t)sqlite3_column_int64(q, 0),
							   (uint64_t)sqlite3_column_int64(q, 1),
							   sqlite3_column_double(q, 2)};
	}
	if (step != SQLITE_DONE)
		rc = -EIO;
out:
	if (rc == -EIO)
		snprintf(why, why_size, "state database \"%s\": cannot read the graph", db_path);
	else if (rc == -ENOMEM)
		snprintf(why, why_size, "out of memory");
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	sqlite3_finalize(q);
	sqlite3_close(db);
	return rc;
}

/* ---- one file's plan, for explain ------------------------------------ */

int hy_analyzer_file_plan(const char *db_path, uint64_t file_id, struct hy_analyzer_file_plan *out,
			  char *why, size_t why_size)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;
	int rc = -EIO;

	memset(out, 0, sizeof(*out));
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(why, why_size, "state database \"%s\": %s", db_path,
			 db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return -EIO;
	}
	sqlite3_busy_timeout(db, 5000);
	/* one read transaction: the plan and its run's list agree */
	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_prepare_v2(db, "SELECT reason FROM plan_files WHERE file_id = ?1", -1, &q,
			       NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_int64(q, 1, (sqlite3_int64)file_id);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
		snprintf(out->left, sizeof(out->left), "%s",
			 (const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	q = NULL;
	if (sqlite3_prepare_v2(db,
			       "SELECT generation, state, capacity_blocks, blocks FROM bopt_plans"
			       " ORDER BY generation DESC LIMIT 1",
			       -1, &q, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_step(q) == SQLITE_ROW) {
		out->have_plan = true;
		out->generation = (uint64_t)sqlite3_column_int64(q, 0);
		if (sqlite3_column_text(q, 1))
			snprintf(out->state, sizeof(out->state), "%s",
				 (const char *)sqlite3_column_text(q, 1));
		out->capacity_blocks = (uint64_t)sqlite3_column_int64(q, 2);
		out->plan_blocks = (uint64_t)sqlite3_column_int64(q, 3);
	}
	sqlite3_finalize(q);
	q = NULL;
	if (out->have_plan) {
		if (sqlite3_prepare_v2(db,
				       "SELECT coalesce(sum(nblocks), 0) FROM bopt_plan_ranges"
				       " WHERE generation = ?1 AND file_id = ?2",
				       -1, &q, NULL) != SQLITE_OK)
			goto out;
		sqlite3_bind_int64(q, 1, (sqlite3_int64)out->generation);
		sqlite3_bind_int64(q, 2, (sqlite3_int64)file_id);
		if (sqlite3_step(q) == SQLITE_ROW)
			out->planned_blocks = (uint64_t)sqlite3_column_int64(q, 0);
	}
	rc = 0;
out:
	if (rc)
		snprintf(why, why_size, "state database \"%s\": cannot read the plan: %s", db_path,
			 sqlite3_errmsg(db));
	sqlite3_finalize(q);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}
