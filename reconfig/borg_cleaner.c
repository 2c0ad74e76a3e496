/* borg_cleaner.c - dirty BOPT blocks home (hy_borg_flush) and the cleaner
 * thread that flushes and checkpoints the map in the background; see
 * include/hybridfs/borg.h and borg_internal.h. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/borg.h"
#include "hybridfs/engine.h"
#include "hybridfs/log.h"
#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"

#include "borg_internal.h"

/* ---- flushing: dirty BOPT blocks home ------------------------------- */

/* Whether @file_id's row says its last name went through the mount with
 * no handle open (identity.h: gone_ns). Such a file can never be read
 * again: no handle, no name, and ids are never given twice. */
static bool removed(sqlite3 *db, uint64_t file_id)
{
	sqlite3_stmt *st;
	bool yes = false;

	if (sqlite3_prepare_v2(db, "SELECT gone_ns IS NOT NULL FROM files WHERE id = ?1", -1, &st,
			       NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)file_id);
	yes = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return yes;
}

/* A dirty block of a file found nowhere at home stays in the BOPT, unless
 * the file was removed through the mount (removed()): then its blocks are
 * data nobody can read, and they leave the map (journaled, durable) so
 * their BOPT room is free. That is a file whose last close could not send
 * them home (hy_borg_forget_file left them). No gate is needed: no
 * request of it can come, and the reconfigurator finds no home to copy;
 * its drop of the same blocks keeps dirty ones, so whichever comes second
 * finds nothing to do, and the journal's order is the map's (a checkpoint
 * racing it may keep the extent: the next flush discards it again). */
int hy_borg_flush(struct hy_borg *b, uint64_t *synced, char *why, size_t why_size)
{
	struct {
		uint64_t *ids;
		size_t n;
	} dirty;
	struct search files;
	uint64_t unreachable = 0, discarded = 0;
	sqlite3 *db = NULL;
	int rc;

	*synced = 0;
	rc = hy_map_dirty_files(b->map, &dirty.ids, &dirty.n);
	if (rc) {
		snprintf(why, why_size, "out of memory");
		return rc;
	}
	if (!dirty.n) {
		free(dirty.ids);
		return 0;
	}
	/* its own connection: the reconfigurator's may be busy on its thread */
	if (sqlite3_open_v2(b->db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(why, why_size, "state database \"%s\": %s", b->db_path,
			 db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		free(dirty.ids);
		return -EIO;
	}
	sqlite3_busy_timeout(db, 10000);
	rc = hy_borg_homes_find_files(&b->place, db, dirty.ids, dirty.n, &files, why, why_size);
	for (size_t i = 0; i < dirty.n && rc == 0; i++) {
		struct wanted *w = hy_borg_homes_wanted_by_id(&files, dirty.ids[i]);
		struct hy_engine_file file;
		int64_t n;
		int fd = -1;

		if (hy_borg_homes_open_home(&b->place, w, O_RDWR, &fd) < 0) {
			int64_t gone =
				removed(db, dirty.ids[i])
					? hy_map_journal_release(b->journal, b->map, dirty.ids[i],
								 0, UINT64_MAX, true)
					: 0;

			if (gone > 0)
				discarded += (uint64_t)gone;
			else
				unreachable++;
			continue;
		}
		hy_engine_file_init(b->config.engine, &file, fd);
		hy_engine_file_set_id(&file, dirty.ids[i]);
		n = hy_engine_sync_home(b->config.engine, &file);
		close(fd);
		if (n < 0) {
			rc = (int)n;
			snprintf(why, why_size,
				 "file %" PRIu64 ": its BOPT writes cannot go home: %s",
				 dirty.ids[i], strerror(-rc));
		} else {
			*synced += (uint64_t)n;
		}
	}
	sqlite3_close(db);
	if (discarded)
		hy_log(LOG_NOTICE,
		       "flush: %" PRIu64 " blocks written into the BOPT for files removed through "
		       "the mount since (nobody can read them) were discarded",
		       discarded);
	if (unreachable)
		hy_log(LOG_WARNING,
		       "flush: %" PRIu64 " files with blocks written into the BOPT were not found "
		       "in \"%s\" (gone, or unreadable); their blocks stay in the BOPT",
		       unreachable, b->backing);
	hy_borg_homes_search_free(&files);
	free(dirty.ids);
	return rc;
}

/* The background half of write-back: every HY_BORG_CLEAN_SECONDS, dirty
 * blocks of files held open that long go home. */
/* The journal grows with every dirty and clean mark and every release,
 * and stamps refreshed by writes live only in memory until a checkpoint:
 * the cleaner checkpoints once the journal holds HY_BORG_CHECKPOINT_RECORDS
 * records, or any record HY_BORG_CHECKPOINT_SECONDS after the last one, on
 * a connection of its own (the reconfigurator may be using its own). */
static void cleaner_checkpoint(struct hy_borg *b)
{
	static const int64_t every_ns = (int64_t)HY_BORG_CHECKPOINT_SECONDS * 1000000000;
	uint64_t records = hy_map_journal_records(b->journal);
	sqlite3 *db = NULL;
	char why[1024];

	if (records == 0 ||
	    (records < HY_BORG_CHECKPOINT_RECORDS && now_ns() - b->checkpointed_ns < every_ns))
		return;
	if (sqlite3_open_v2(b->db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		hy_log(LOG_ERR, "background checkpoint: state database \"%s\": %s", b->db_path,
		       db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return;
	}
	sqlite3_busy_timeout(db, 10000);
	if (checkpoint_with(b, db, why, sizeof(why)) < 0)
		hy_log(LOG_ERR,
		       "background checkpoint of the map into \"%s\": %s; the journal keeps the "
		       "map",
		       b->db_path, why);
	else
		b->checkpointed_ns = now_ns();
	sqlite3_close(db);
}

void *hy_borg_cleaner_main(void *arg)
{
	struct hy_borg *b = arg;

	pthread_setname_np(pthread_self(), "hy-cleaner");
	pthread_mutex_lock(&b->lock);
	while (!b->stop) {
		struct timespec until;
		struct hy_map_stats stats;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += HY_BORG_CLEAN_SECONDS;
		pthread_cond_timedwait(&b->cleaner_cond, &b->lock, &until);
		if (b->stop)
			break;
		pthread_mutex_unlock(&b->lock);
		hy_map_get_stats(b->map, &stats);
		if (stats.dirty_blocks) {
			char why[512];
			uint64_t synced;

			if (hy_borg_flush(b, &synced, why, sizeof(why)) < 0)
				hy_log(LOG_ERR, "background flush: %s", why);
		}
		cleaner_checkpoint(b);
		pthread_mutex_lock(&b->lock);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}
