/* cache_store_journal.c - the SSD cache store's metadata journal: which
 * records may be applied to the line table, their replay at load, and
 * appends with their group commit (lib/group_commit.c); see
 * include/hybridfs/cache_store.h and cache_store_internal.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/cache_store.h"
#include "hybridfs/fault.h"
#include "hybridfs/group_commit.h"
#include "hybridfs/log.h"
#include "hybridfs/ondisk.h"

#include "cache_store_internal.h"

/* ---- replay ---- */

/* A record that may be applied to the table: 0 or -EINVAL. */
static int check_record(const struct hy_cache_store *s, const struct hy_cache_journal_record *r)
{
	if (r->line >= s->header.capacity || (r->dirty & ~r->valid) ||
	    r->tail >= HY_CACHE_LINE_SIZE)
		return -EINVAL;
	switch (r->type) {
	case HY_CJ_FILL:
		return 0;
	case HY_CJ_FREE:
		return 0;
	case HY_CJ_MASKS:
		return s->lines && !s->lines[r->line].used ? -EINVAL
							   : 0; /* unknowable when external */
	}
	return -EINVAL;
}

static void apply(struct hy_cache_store *s, const struct hy_cache_journal_record *r)
{
	struct hy_cache_line *l;

	if (!s->lines)
		return; /* an external table: its owner keeps it */
	l = &s->lines[r->line];

	switch (r->type) {
	case HY_CJ_FILL:
		l->used = true;
		l->file_id = r->file_id;
		l->block = r->block;
		l->valid = r->valid;
		l->dirty = r->dirty;
		l->tail = r->tail;
		l->summed = false;
		break;
	case HY_CJ_FREE:
		memset(l, 0, sizeof(*l));
		return;
	case HY_CJ_MASKS:
		l->valid = r->valid;
		l->dirty = r->dirty;
		l->tail = r->tail;
		l->summed = false; /* the data changed since it was summed */
		break;
	}
}

/* Applies the journal's records after the checkpoint (see the header). */
int hy_cache_store_journal_replay(struct hy_cache_store *s, struct hy_cache_store_load_stats *st)
{
	size_t per = CHUNK / HY_CACHE_JOURNAL_RECORD;
	unsigned char *buf = malloc(CHUNK);
	uint64_t n = 0, expect = s->checkpoint_seq + 1;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	while (n < s->journal_capacity) {
		uint64_t k = s->journal_capacity - n < per ? s->journal_capacity - n : per;

		rc = read_full(s->fd, buf, (size_t)(k * HY_CACHE_JOURNAL_RECORD),
			       s->header.journal_offset + n * HY_CACHE_JOURNAL_RECORD);
		if (rc < 0)
			goto out;
		for (uint64_t i = 0; i < k; i++, n++) {
			static const unsigned char zero[HY_CACHE_JOURNAL_RECORD];
			const unsigned char *p = buf + i * HY_CACHE_JOURNAL_RECORD;
			struct hy_cache_journal_record r;

			if (hy_cache_journal_decode(p, &r) < 0) {
				/* zeros: a fresh journal's end; anything else is torn */
				if (memcmp(p, zero, sizeof(zero)) != 0) {
					st->journal_cut = true;
					st->cut_at = n;
				}
				goto out;
			}
			if (r.generation != s->header.generation)
				goto out; /* an older format's: the end */
			if (r.sequence != expect)
				goto out; /* from before the checkpoint: the end */
			if (check_record(s, &r) < 0) {
				st->journal_cut = true;
				st->cut_at = n;
				goto out;
			}
			apply(s, &r);
			expect++;
			st->replayed++;
		}
	}
out:
	/* A good record of this format after the bad one, newer than any
	 * applied: a power failure can leave that (neither was acknowledged),
	 * and so can damage from outside, which loses the dirty lines those
	 * records name; the two cannot be told apart, so the cut stands (as
	 * for a torn tail), but the loss is said plainly (damaged.sh:
	 * dirty-cache-journal). */
	if (st->journal_cut) {
		bool later = false;

		for (uint64_t m = st->cut_at + 1; rc == 0 && m < s->journal_capacity && !later;
		     m++) {
			unsigned char p[HY_CACHE_JOURNAL_RECORD];
			struct hy_cache_journal_record r;

			if (read_full(s->fd, p, sizeof(p),
				      s->header.journal_offset + m * HY_CACHE_JOURNAL_RECORD) < 0 ||
			    hy_cache_journal_decode(p, &r) < 0)
				break;
			later = r.generation == s->header.generation && r.sequence > expect;
		}
		if (later)
			hy_log(LOG_ERR,
			       "cache: \"%s\": journal record %" PRIu64
			       " is damaged and good records follow it: unless a power failure "
			       "tore it, the journal was damaged, and dirty lines the records "
			       "after "
			       "it name are lost",
			       s->path, st->cut_at);
		else
			hy_log(LOG_WARNING,
			       "cache: \"%s\": journal record %" PRIu64
			       " is torn or damaged; replay stops there",
			       s->path, st->cut_at);
	}
	s->journal_used = n;
	s->commit.written = s->commit.durable = expect - 1;
	free(buf);
	return rc;
}

/* ---- appends ---- */

uint64_t hy_cache_store_journal_room(struct hy_cache_store *s)
{
	uint64_t room;

	pthread_mutex_lock(&s->lock);
	room = s->journal_capacity - s->journal_used;
	pthread_mutex_unlock(&s->lock);
	return room;
}

/* Waits until @seq is durable (the group commit). s->lock held. */
static int wait_durable(struct hy_cache_store *s, uint64_t seq)
{
	return hy_group_commit_wait(&s->commit, &s->lock, s->fd, &s->error, seq);
}

int hy_cache_store_journal_write(struct hy_cache_store *s, const struct hy_cache_journal_record *r,
				 uint64_t *seq)
{
	unsigned char buf[HY_CACHE_JOURNAL_RECORD];
	struct hy_cache_journal_record rec = *r;
	int rc;

	pthread_mutex_lock(&s->lock);
	if (!s->loaded || check_record(s, r) < 0) {
		rc = -EINVAL;
		goto out;
	}
	if (s->error) {
		rc = s->error;
		goto out;
	}
	if (s->journal_used >= s->journal_capacity) {
		rc = -ENOSPC;
		goto out;
	}
	/* fault.h: the record never reaches the file */
	hy_fault_point("cache.journal.before");
	rec.sequence = s->commit.written + 1;
	rec.generation = s->header.generation;
	hy_cache_journal_encode(&rec, buf);
	rc = hy_ondisk_write_full(s->fd, buf, sizeof(buf),
				  s->header.journal_offset +
					  s->journal_used * HY_CACHE_JOURNAL_RECORD);
	if (rc < 0) {
		s->error = rc;
		goto out;
	}
	s->journal_used++;
	s->commit.written = rec.sequence;
	/* the table copy follows at once: a checkpoint (which syncs the whole
	 * store before its header) may save it before the record is durable,
	 * and that is as good as the record */
	apply(s, &rec);
	*seq = rec.sequence;
out:
	pthread_mutex_unlock(&s->lock);
	if (rc < 0 && rc != -EINVAL && rc != -ENOSPC)
		hy_log(LOG_ERR, "cache: \"%s\": journal write failed: %s", s->path, strerror(-rc));
	return rc;
}

int hy_cache_store_journal_wait(struct hy_cache_store *s, uint64_t seq)
{
	bool waited;
	int rc;

	pthread_mutex_lock(&s->lock);
	waited = s->commit.durable < seq; /* for the crash point: records became durable */
	rc = wait_durable(s, seq);
	pthread_mutex_unlock(&s->lock);
	if (rc < 0)
		hy_log(LOG_ERR, "cache: \"%s\": journal sync failed: %s", s->path, strerror(-rc));
	else if (waited)
		hy_fault_point("cache.journal.after"); /* durable; the caller not told yet */
	return rc;
}

int hy_cache_store_journal_append(struct hy_cache_store *s, const struct hy_cache_journal_record *r)
{
	uint64_t seq;
	int rc = hy_cache_store_journal_write(s, r, &seq);

	return rc < 0 ? rc : hy_cache_store_journal_wait(s, seq);
}
