/* gain.c - see include/hybridfs/gain.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hybridfs/gain.h"
#include "hybridfs/map.h"
#include "hybridfs/reorganize.h"

#define BLOCK 4096

/* One relocated extent of a layout, with its BOPT place on the disk. */
struct placed {
	uint64_t file_id, block, nblocks;
	uint64_t address; /* disk byte of its first block */
};

struct layout {
	struct placed *e; /* sorted by (file id, block) */
	size_t n;
	struct hy_devmodel *home, *bopt; /* bopt == home unless separate */
};

static int by_file_block(const void *pa, const void *pb)
{
	const struct placed *a = pa, *b = pb;

	if (a->file_id != b->file_id)
		return a->file_id < b->file_id ? -1 : 1;
	return a->block < b->block ? -1 : a->block > b->block;
}

static int add(struct layout *l, size_t cap, uint64_t file_id, uint64_t block, uint64_t nblocks,
	       uint64_t bopt_block, const struct hy_gain_place *place)
{
	int rc;

	if (l->n == cap || nblocks == 0)
		return 0;
	rc = place->bopt_address(place->ctx, bopt_block, &l->e[l->n].address);
	if (rc < 0)
		return rc;
	l->e[l->n].file_id = file_id;
	l->e[l->n].block = block;
	l->e[l->n].nblocks = nblocks;
	l->n++;
	return 0;
}

static int add_ranges(struct layout *l, size_t cap, const struct hy_reorganize_range *r, size_t n,
		      const struct hy_gain_place *place)
{
	for (size_t i = 0; i < n; i++) {
		int rc =
			add(l, cap, r[i].file_id, r[i].block, r[i].nblocks, r[i].bopt_block, place);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The extent of @l that holds block @at of @file_id, or else the first one
 * after it (index @l->n when none). */
static size_t find(const struct layout *l, uint64_t file_id, uint64_t at)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct placed *e = &l->e[mid];

		if (e->file_id < file_id || (e->file_id == file_id && e->block + e->nblocks <= at))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Serves one logged read under layout @l: each piece from where it lies.
 * @home_byte is the disk byte of the request's first byte at home. */
static void serve(struct layout *l, uint64_t file_id, uint64_t off, uint64_t len,
		  uint64_t home_byte)
{
	uint64_t end = off + len, at = off;
	size_t i = find(l, file_id, off / BLOCK);

	while (at < end) {
		uint64_t blk = at / BLOCK, to;
		const struct placed *e = i < l->n && l->e[i].file_id == file_id ? &l->e[i] : NULL;

		if (e && e->block <= blk) {
			to = (e->block + e->nblocks) * BLOCK;
			to = to < end ? to : end;
			hy_devmodel_serve(l->bopt, e->address + (at - e->block * BLOCK), to - at,
					  false);
			i++;
		} else {
			to = e ? e->block * BLOCK : end;
			to = to < end ? to : end;
			hy_devmodel_serve(l->home, home_byte + (at - off), to - at, false);
		}
		at = to;
	}
}

static void totals(const struct layout *l, double *ms, uint64_t *seeks, uint64_t *requests)
{
	struct hy_devmodel_stats st;

	hy_devmodel_get_stats(l->home, &st);
	*ms = st.busy_ms;
	*seeks = st.seeks;
	*requests = st.reads;
	if (l->bopt != l->home) {
		hy_devmodel_get_stats(l->bopt, &st);
		*ms += st.busy_ms;
		*seeks += st.seeks;
		*requests += st.reads;
	}
}

int hy_gain_estimate(sqlite3 *db, int64_t after, int64_t last, const struct hy_map_extent *current,
		     size_t ncurrent, const struct hy_reorganize_diff *diff,
		     const struct hy_gain_place *place, struct hy_gain_estimate *out, char *why,
		     size_t why_size)
{
	struct layout lay[3] = {{0}}; /* home, current, planned */
	size_t cap[3] = {0, ncurrent, diff->nkeep + diff->nleft + diff->ncopy};
	sqlite3_stmt *st = NULL;
	int rc = 0, s;

	memset(out, 0, sizeof(*out));
	for (int k = 0; k < 3 && rc == 0; k++) {
		lay[k].e = malloc((cap[k] ? cap[k] : 1) * sizeof(*lay[k].e));
		if (!lay[k].e) {
			rc = -ENOMEM;
			snprintf(why, why_size, "gain: out of memory");
			break;
		}
		rc = hy_devmodel_new(&place->disk, &lay[k].home, why, why_size);
		if (rc == 0 && place->bopt_separate)
			rc = hy_devmodel_new(&place->disk, &lay[k].bopt, why, why_size);
		else
			lay[k].bopt = lay[k].home;
	}
	for (size_t i = 0; i < ncurrent && rc == 0; i++)
		rc = add(&lay[1], cap[1], current[i].file_id, current[i].block, current[i].nblocks,
			 current[i].bopt_block, place);
	if (rc == 0)
		rc = add_ranges(&lay[2], cap[2], diff->keep, diff->nkeep, place);
	if (rc == 0)
		rc = add_ranges(&lay[2], cap[2], diff->left, diff->nleft, place);
	if (rc == 0)
		rc = add_ranges(&lay[2], cap[2], diff->copy, diff->ncopy, place);
	if (rc < 0) {
		if (!why[0])
			snprintf(why, why_size, "gain: the BOPT's place on the disk: %s",
				 strerror(-rc));
		goto out;
	}
	for (int k = 1; k < 3; k++)
		qsort(lay[k].e, lay[k].n, sizeof(*lay[k].e), by_file_block);

	s = sqlite3_prepare_v2(db,
			       "SELECT file_id, offset, length, phys_block FROM access_log"
			       " WHERE rowid > ?1 AND rowid <= ?2 AND mode = 0 ORDER BY rowid",
			       -1, &st, NULL);
	if (s != SQLITE_OK) {
		snprintf(why, why_size, "gain: reading the access log: %s", sqlite3_errmsg(db));
		rc = -EIO;
		goto out;
	}
	sqlite3_bind_int64(st, 1, after);
	sqlite3_bind_int64(st, 2, last);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t file_id = (uint64_t)sqlite3_column_int64(st, 0);
		int64_t off = sqlite3_column_int64(st, 1), len = sqlite3_column_int64(st, 2);
		uint64_t home_byte;

		out->reads++;
		if (sqlite3_column_type(st, 3) == SQLITE_NULL || off < 0 || len <= 0)
			continue; /* no place known: not priced in any layout */
		home_byte = (uint64_t)sqlite3_column_int64(st, 3) * BLOCK + (uint64_t)off % BLOCK;
		out->priced++;
		for (int k = 0; k < 3; k++)
			serve(&lay[k], file_id, (uint64_t)off, (uint64_t)len, home_byte);
	}
	if (s != SQLITE_DONE) {
		snprintf(why, why_size, "gain: reading the access log: %s", sqlite3_errmsg(db));
		rc = -EIO;
		goto out;
	}
	totals(&lay[0], &out->home_ms, &out->home_seeks, &out->home_requests);
	totals(&lay[1], &out->current_ms, &out->current_seeks, &out->current_requests);
	totals(&lay[2], &out->planned_ms, &out->planned_seeks, &out->planned_requests);
	out->known = out->priced > 0 && 2 * out->priced >= out->reads;
out:
	sqlite3_finalize(st);
	for (int k = 0; k < 3; k++) {
		if (lay[k].bopt != lay[k].home)
			hy_devmodel_free(lay[k].bopt);
		hy_devmodel_free(lay[k].home);
		free(lay[k].e);
	}
	return rc;
}

enum hy_gain_decision hy_gain_decide(const struct hy_gain_estimate *e)
{
	double keep = 1.0 - HY_GAIN_MARGIN;

	if (!e->known)
		return HY_GAIN_GO;
	if (e->planned_ms < e->current_ms * keep)
		return e->home_ms < e->planned_ms * keep ? HY_GAIN_ALL_HOME : HY_GAIN_GO;
	return e->home_ms < e->current_ms * keep ? HY_GAIN_ALL_HOME : HY_GAIN_HOLD;
}
