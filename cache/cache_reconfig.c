/* cache_reconfig.c - ReCA's reconfiguration of a file's cached blocks: a
 * change of write policy sends its dirty blocks home first, a larger line
 * size queues a migration that grows its lines; see
 * include/hybridfs/cache.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/fault.h"
#include "hybridfs/log.h"

#include "cache_internal.h"

/* ---- reconfiguration (ReCA) ---------------------------------------------- */

/* A request of @cf's file under @hint (@write_policy: the policy its write
 * follows; -1 for a read: the hint's). A file whose last request followed
 * write-back and whose dirty blocks now fall under another policy goes to
 * the front of the cleaner's queue; one reached with a larger line size
 * than before is queued for a migration. No gate held; nothing here waits
 * for I/O. */
void hy_cache_reconfig_file(struct hy_cache *c, struct cfile *cf, const struct hy_cache_file *f,
			    const struct hy_cache_hint *hint, int write_policy)
{
	uint32_t want = hint->line_size > LINE ? hint->line_size : 0;
	uint32_t had = atomic_load(&cf->line_size);
	int64_t object;
	int last;

	if (write_policy < 0)
		write_policy = hint->write >= 0 ? hint->write : (int)c->cfg.write_policy;
	/* read first: requests of one file mostly keep their policy, and a
	 * load does not bounce the cache line between threads */
	last = atomic_load(&cf->last_write);
	if (last != write_policy)
		last = atomic_exchange(&cf->last_write, write_policy);
	if (last == HY_CACHE_WRITE_BACK && write_policy != HY_CACHE_WRITE_BACK &&
	    atomic_load(&cf->dirty) && !atomic_exchange(&cf->leave_back, true)) {
		atomic_fetch_add(&c->st.migrate_home, 1);
		hy_cache_clean_kick(c);
	}
	if (want == had || !atomic_compare_exchange_strong(&cf->line_size, &had, want))
		return; /* as it was, or another request of the file changed it */
	/* smaller lines need no copy (ReCA's split: each page keeps its own
	 * place in LRU3, the line's priority divided among them); larger ones
	 * are filled in the background, if there is anything to fill */
	if (want < had || !atomic_load(&cf->blocks) || !f->file_id || f->object < 0)
		return;
	if (below_hold(c, f, &object) < 0) {
		atomic_fetch_add(&c->st.migrate_dropped, 1);
		return;
	}
	pthread_mutex_lock(&c->thread_lock);
	if (c->migrate_len < MIGRATE_QUEUE && !c->stopping) {
		c->migrate_queue[c->migrate_len++] = (struct migration){f->file_id, object, want};
		object = -1;
		c->clean_kick = true;
		pthread_cond_broadcast(&c->thread_wake);
	}
	pthread_mutex_unlock(&c->thread_lock);
	if (object >= 0) {
		below_put(c, object);
		atomic_fetch_add(&c->st.migrate_dropped, 1);
	} else {
		atomic_fetch_add(&c->st.migrations, 1);
	}
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ReCA's merge of @m's file into lines of m->line_size: the missing blocks
 * of each line that has some cached are read from below without the
 * file's gate (no request waits for the read) and cached, unless the file
 * changed meanwhile (its generation moved: that line is left as it is).
 * Paced at @rate bytes/s from @start (0: no pacing). Returns the blocks
 * read in or a negative errno. */
static int64_t migrate_file(struct hy_cache *c, const struct migration *m, uint64_t rate,
			    int64_t start, int64_t *paced)
{
	struct hy_cache_file f = {m->file_id, m->object};
	uint64_t per = m->line_size / LINE, *blocks = NULL;
	struct cfile *cf = cfile_get(c, m->file_id, false);
	unsigned char *buf = NULL;
	int64_t filled = 0;
	size_t n = 0;
	int rc;

	if (!cf)
		return 0; /* nothing cached any more */
	buf = malloc(m->line_size);
	pthread_rwlock_rdlock(gate(c, m->file_id));
	rc = buf ? hy_cache_fsync_all_blocks(c, cf, &blocks, &n) : -ENOMEM;
	pthread_rwlock_unlock(gate(c, m->file_id));
	if (rc == 0)
		qsort(blocks, n, sizeof(*blocks), by_u64);
	for (size_t i = 0; rc == 0 && i < n && !atomic_load(&c->stop_now);) {
		uint64_t g = blocks[i] / per, b0 = g * per, b1 = b0 + per, gen;
		uint32_t missing = 0;
		struct hy_device_attr a;
		bool fresh = false;
		ssize_t r;

		while (i < n && blocks[i] / per == g)
			i++;
		if (atomic_load(&cf->line_size) != m->line_size)
			break; /* reconfigured again meanwhile: the newer size rules */
		pthread_rwlock_rdlock(gate(c, m->file_id));
		gen = atomic_load(&cf->generation);
		rc = below_getattr(c, &f, &a);
		if (rc == 0 && (fresh = hy_cache_io_fresh_for(cf, &a))) {
			uint64_t end = (a.size + LINE - 1) / LINE;

			b1 = b1 < end ? b1 : end;
			for (uint64_t b = b0; b < b1; b++) {
				struct held h;

				hy_cache_io_find_block(c, m->file_id, b, false, &h);
				if (!h.where)
					missing |= 1u << (b - b0);
			}
		}
		pthread_rwlock_unlock(gate(c, m->file_id));
		if (rc < 0 || !fresh)
			break; /* changed outside: its next request drops what is stale */
		if (!missing)
			continue;
		r = below_read(c, &f, buf, (size_t)(b1 - b0) * LINE, (off_t)(b0 * LINE));
		if (r < 0) {
			rc = (int)r;
			break;
		}
		memset(buf + r, 0, (size_t)(b1 - b0) * LINE - (size_t)r);
		pthread_rwlock_rdlock(gate(c, m->file_id));
		if (atomic_load(&cf->generation) == gen) {
			for (uint64_t b = b0; b < b1; b++) {
				uint64_t have = (uint64_t)r > (b - b0) * LINE
							? (uint64_t)r - (b - b0) * LINE
							: 0;
				uint8_t valid = 0;

				if (!(missing & (1u << (b - b0))))
					continue;
				for (int k = 0; k < HY_CACHE_SECTORS && (uint64_t)k * SECTOR < have;
				     k++)
					valid |= (uint8_t)(1u << k);
				hy_cache_io_fill_block(c, cf, b, valid, buf + (b - b0) * LINE,
						       NULL);
				filled++;
			}
		}
		pthread_rwlock_unlock(gate(c, m->file_id));
		hy_fault_point("cache.migrate.mid"); /* fault.h: a line filled, maybe more to go */
		*paced += (int64_t)(b1 - b0);
		if (rate)
			hy_cache_clean_pace(c, *paced, rate, start);
	}
	atomic_fetch_add(&c->st.migrate_filled, (uint64_t)filled);
	free(blocks);
	free(buf);
	cfile_put(c, cf);
	return rc < 0 ? rc : filled;
}

/* Runs the queued migrations, oldest first, at @rate bytes/s (0: no
 * pacing). Returns the blocks read in or the first error. */
int64_t hy_cache_reconfig_migrate_pass(struct hy_cache *c, uint64_t rate)
{
	int64_t total = 0, err = 0, start = now_ns(), paced = 0;

	for (;;) {
		struct migration m;
		int64_t r;

		pthread_mutex_lock(&c->thread_lock);
		if (!c->migrate_len || atomic_load(&c->stop_now)) {
			pthread_mutex_unlock(&c->thread_lock);
			break;
		}
		m = c->migrate_queue[0];
		memmove(c->migrate_queue, c->migrate_queue + 1,
			--c->migrate_len * sizeof(c->migrate_queue[0]));
		pthread_mutex_unlock(&c->thread_lock);
		r = migrate_file(c, &m, rate, start, &paced);
		below_put(c, m.object);
		if (r < 0) {
			hy_log(LOG_WARNING,
			       "cache: file %" PRIu64 ": filling its lines to %u bytes failed: %s",
			       m.file_id, m.line_size, strerror((int)-r));
			atomic_fetch_add(&c->st.migrate_dropped, 1);
			if (!err)
				err = r;
		} else {
			total += r;
		}
	}
	return err ? err : total;
}

int64_t hy_cache_run_migrations(struct hy_cache *c)
{
	return hy_cache_reconfig_migrate_pass(c, 0);
}

/* Close: the migrations not run are given up, their objects put back. */
void hy_cache_reconfig_migrations_drop(struct hy_cache *c)
{
	pthread_mutex_lock(&c->thread_lock);
	for (unsigned i = 0; i < c->migrate_len; i++)
		below_put(c, c->migrate_queue[i].object);
	c->migrate_len = 0;
	pthread_mutex_unlock(&c->thread_lock);
}
