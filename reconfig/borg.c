/* borg.c - BORG in the daemon: open and close, progress, and what a crash
 * left; see include/hybridfs/borg.h. Finding home files is in
 * borg_homes.c, the reconfigurator in borg_reconfig.c, flushing and the
 * cleaner in borg_cleaner.c; what they share, in borg_internal.h. */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/bopt.h"
#include "hybridfs/borg.h"
#include "hybridfs/device.h"
#include "hybridfs/engine.h"
#include "hybridfs/log.h"
#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"
#include "hybridfs/stack.h"

#include "borg_internal.h"

static char *join_path(const char *dir, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return NULL;
	return p;
}

/* ---- open and close ------------------------------------------------- */

/* Makes a BOPT file of the configured size at @path, with a generation no
 * saved map can have (the time), and opens it. */
static int make_bopt(struct hy_borg *b, const char *path, char *why, size_t why_size)
{
	uint64_t size = b->config.bopt_size;
	struct stat st;
	int rc;

	/* one block of header, one of write buffer (kept for assimilated
	 * writes, not used yet), the rest read region; a device is used whole */
	if (stat(path, &st) == 0 && S_ISBLK(st.st_mode))
		rc = hy_bopt_create(path, b->uuid, 0, 0, false, why, why_size);
	else
		rc = hy_bopt_create(path, b->uuid, size, size - 2 * BLOCK, false, why, why_size);
	if (rc)
		return rc;
	rc = hy_bopt_open(path, b->uuid, &b->bopt, why, why_size);
	if (rc)
		return rc;
	rc = hy_bopt_set_generation(b->bopt, (uint64_t)now_ns());
	if (rc)
		snprintf(why, why_size, "bopt: \"%s\": cannot write its generation: %s", path,
			 strerror(-rc));
	return rc;
}

/* Whether @path starts with a BOPT header's magic (a damaged or foreign
 * BOPT is refused, never made anew over). */
static bool has_bopt_magic(const char *path)
{
	char magic[8];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes;

	if (fd < 0)
		return true; /* unreadable: let the open's refusal stand */
	yes = pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	      memcmp(magic, HY_BOPT_MAGIC, sizeof(magic)) == 0;
	close(fd);
	return yes;
}

/* Before a BOPT file is made again (damaged, resized or gone): the blocks
 * written into it through the mount and not home yet (dirty in the map of
 * its last checkpoint and its journal) are read from what is left of it
 * and go home, within each file's size, since the new BOPT starts with an
 * empty map and they would be lost without a word (damaged.sh:
 * dirty-bopt-half, dirty-bopt-header, dirty-bopt-resized). A block the
 * file no longer holds (cut short, or the file gone) is logged as lost.
 * Best effort: what cannot be done is logged, and the BOPT is made again
 * all the same, as it was before this existed. */
static void salvage_dirty(struct hy_borg *b, const char *path)
{
	struct hy_map_extent *ext = NULL;
	struct hy_map_journal *journal = NULL;
	struct hy_map *map = NULL;
	uint64_t generation = 0, home = 0, lost = 0, *ids = NULL;
	size_t n = 0, nids = 0;
	int *fds = NULL, bopt_fd = -1;
	sqlite3_stmt *st;
	uint32_t epoch = 0;
	char why[1024], *jpath = NULL;
	unsigned char buf[BLOCK];

	if (sqlite3_prepare_v2(b->db, "SELECT generation FROM bopt_checkpoint WHERE id = 1", -1,
			       &st, NULL) != SQLITE_OK)
		return;
	if (sqlite3_step(st) == SQLITE_ROW)
		generation = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (!generation || hy_map_new(&map))
		return;
	if (hy_map_load(map, b->db, generation, &epoch, why, sizeof(why)) < 0) {
		hy_log(LOG_WARNING, "bopt: cannot read the map of the damaged BOPT \"%s\": %s",
		       path, why);
		goto out;
	}
	jpath = join_path(b->state_dir, HY_MAP_JOURNAL_NAME);
	/* replay only: the records of the old generation, the map keeps
	 * what they gave even when one is refused */
	if (jpath && hy_map_journal_open(jpath, generation, epoch, map, &journal, NULL, why,
					 sizeof(why)) < 0)
		hy_log(LOG_WARNING, "bopt: the map journal \"%s\" of the damaged BOPT \"%s\": %s",
		       jpath, path, why);
	hy_map_journal_close(journal);
	if (hy_map_snapshot(map, &ext, &n) < 0)
		goto out;
	ids = calloc(n ? n : 1, sizeof(*ids));
	fds = malloc((n ? n : 1) * sizeof(*fds));
	if (!ids || !fds)
		goto out;
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		while (k < nids && ids[k] != ext[i].file_id)
			k++;
		if (ext[i].dirty && k == nids)
			ids[nids++] = ext[i].file_id;
	}
	if (!nids)
		goto out;
	bopt_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (bopt_fd < 0 ||
	    hy_borg_open_homes(b->db_path, b->backing, b->bopt_dir, b->config.root_fd, ids, nids,
			       fds, why, sizeof(why)) < 0) {
		if (bopt_fd < 0)
			snprintf(why, sizeof(why), "%s", strerror(errno));
		for (size_t i = 0; i < n; i++)
			lost += ext[i].dirty ? ext[i].nblocks : 0;
		hy_log(LOG_ERR,
		       "bopt: \"%s\": %" PRIu64 " blocks written through the mount into it and "
		       "not home yet cannot be written home (%s): lost",
		       path, lost, why);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct stat hst;
		size_t k = 0;

		if (!ext[i].dirty)
			continue;
		while (ids[k] != ext[i].file_id)
			k++;
		if (fds[k] < 0 || fstat(fds[k], &hst) < 0) {
			lost += ext[i].nblocks;
			continue;
		}
		for (uint32_t j = 0; j < ext[i].nblocks; j++) {
			uint64_t at = (ext[i].block + j) * BLOCK;
			size_t len;

			if (at >= (uint64_t)hst.st_size)
				break; /* truncated since: nothing to keep */
			len = (uint64_t)hst.st_size - at < BLOCK
				      ? (size_t)((uint64_t)hst.st_size - at)
				      : BLOCK;
			if (pread(bopt_fd, buf, len,
				  (off_t)((1 + ext[i].bopt_block + j) * BLOCK)) != (ssize_t)len ||
			    pwrite(fds[k], buf, len, (off_t)at) != (ssize_t)len) {
				lost++;
				continue;
			}
			home++;
		}
	}
	for (size_t k = 0; k < nids; k++)
		if (fds[k] >= 0 && fsync(fds[k]) < 0)
			hy_log(LOG_ERR, "bopt: file %" PRIu64 ": fsync: %s", ids[k],
			       strerror(errno));
	hy_log(lost ? LOG_ERR : LOG_NOTICE,
	       "bopt: %" PRIu64 " blocks written through the mount into \"%s\" and not home yet "
	       "went home before it is made again; %" PRIu64 " could not be read from it or "
	       "written home (lost)",
	       home, path, lost);
out:
	for (size_t k = 0; fds && k < nids; k++)
		if (fds[k] >= 0)
			close(fds[k]);
	if (bopt_fd >= 0)
		close(bopt_fd);
	free(fds);
	free(ids);
	free(ext);
	free(jpath);
	hy_map_free(map);
}

static int open_bopt(struct hy_borg *b, char *why, size_t why_size)
{
	char path[4096];
	struct stat st;
	bool default_place = !b->config.bopt_spec;
	int rc;

	if (default_place) {
		snprintf(path, sizeof(path), "%s/%s", b->bopt_dir, "bopt");
	} else {
		rc = hy_bopt_resolve(b->config.bopt_spec, path, sizeof(path), why, why_size);
		if (rc)
			return rc;
	}
	if (stat(path, &st) < 0) {
		if (errno != ENOENT) {
			rc = -errno;
			snprintf(why, why_size, "bopt: cannot look at \"%s\": %s", path,
				 strerror(-rc));
			return rc;
		}
		hy_log(LOG_NOTICE, "bopt: making \"%s\" (%" PRIu64 " bytes)", path,
		       b->config.bopt_size);
		/* a BOPT removed behind the mount's back: says what the map
		 * still held dirty in it (damaged.sh: dirty-bopt-removed) */
		salvage_dirty(b, path);
		return make_bopt(b, path, why, why_size);
	}
	rc = hy_bopt_open(path, b->uuid, &b->bopt, why, why_size);
	if (rc && S_ISBLK(st.st_mode) && !has_bopt_magic(path)) {
		/* a device named for the BOPT that is not one yet: made one
		 * (hy_bopt_create refuses it when libblkid finds a filesystem
		 * or another signature there) */
		hy_log(LOG_NOTICE, "bopt: making a BOPT on the device \"%s\"", path);
		return make_bopt(b, path, why, why_size);
	}
	if (rc) {
		/* Our own file in the state folder, damaged: home copies are
		 * current, so it is made again rather than refusing the mount. */
		if (!default_place || (rc != -EUCLEAN && rc != -EPROTO))
			return rc;
		/* hy_bopt_create refuses to write over a damaged BOPT (it cannot
		 * tell it is ours), so it made nothing (damaged.sh: bopt-header):
		 * the file is removed instead, once the blocks only it held are
		 * home; but not a newer hybridfs's BOPT, nor a file that is no
		 * BOPT at all (no magic where one was cut short or garbled), which
		 * are not ours to remove */
		if (rc == -EPROTO || (!has_bopt_magic(path) && st.st_size >= 8))
			return rc;
		hy_log(LOG_WARNING, "%s; making it again (its copies are dropped)", why);
		salvage_dirty(b, path);
		if (unlink(path) < 0) {
			rc = -errno;
			snprintf(why, why_size, "bopt: cannot remove the damaged \"%s\": %s", path,
				 strerror(-rc));
			return rc;
		}
		return make_bopt(b, path, why, why_size);
	}
	if (S_ISREG(st.st_mode) && b->config.bopt_given &&
	    b->bopt->header.total_blocks * BLOCK != (b->config.bopt_size / BLOCK) * BLOCK) {
		hy_log(LOG_NOTICE,
		       "bopt: \"%s\" has %" PRIu64 " bytes, bopt_size asks for %" PRIu64
		       "; making it again (its copies are dropped)",
		       path, b->bopt->header.total_blocks * BLOCK, b->config.bopt_size);
		hy_bopt_close(b->bopt);
		b->bopt = NULL;
		/* after a crash it may hold blocks not home yet (damaged.sh:
		 * dirty-bopt-resized) */
		salvage_dirty(b, path);
		return make_bopt(b, path, why, why_size);
	}
	return 0;
}

/* A journal whose replay fails in the middle (a record the map refuses:
 * damage from outside, since a crash only tears the end) is set aside, and
 * the map keeps what the records before it gave: dirty marks among them
 * still send their blocks home. What the records after it said is lost;
 * a release among them is caught by the stamp check (the change that
 * followed it moved the home file's ctime). */
static int reset_journal(struct hy_borg *b, const char *path, const char *failure, char *why,
			 size_t why_size)
{
	char damaged[4200];
	uint64_t generation = b->bopt->header.generation;
	struct hy_map_stats stats;
	int rc;

	snprintf(damaged, sizeof(damaged), "%s%s", path, HY_BORG_DAMAGED_SUFFIX);
	hy_map_get_stats(b->map, &stats);
	hy_log(LOG_ERR,
	       "%s; it is kept as \"%s\", and the map keeps what came before the damage (%" PRIu64
	       " blocks relocated, %" PRIu64 " of them written through the mount and not home "
	       "yet)",
	       failure, damaged, stats.blocks, stats.dirty_blocks);
	if (rename(path, damaged) < 0) {
		rc = -errno;
		snprintf(why, why_size, "cannot set the damaged map journal \"%s\" aside: %s", path,
			 strerror(-rc));
		return rc;
	}
	rc = hy_map_journal_open(path, generation, 0, b->map, &b->journal, NULL, why, why_size);
	if (rc)
		return rc;
	return hy_map_journal_checkpoint(b->journal, b->map, b->db, why, why_size);
}

static int open_map(struct hy_borg *b, char *why, size_t why_size)
{
	uint64_t generation = b->bopt->header.generation;
	char failure[1024];
	uint32_t epoch = 0;
	char *path;
	int rc;

	rc = hy_map_new(&b->map);
	if (rc) {
		snprintf(why, why_size, "out of memory");
		return rc;
	}
	rc = hy_map_load(b->map, b->db, generation, &epoch, why, why_size);
	if (rc == -ESTALE) {
		hy_log(LOG_NOTICE, "%s: the BOPT was made anew, the map starts empty", why);
		epoch = 0;
	} else if (rc) {
		/* the refusal names the file (damaged.sh: db-map) */
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s", why);
		snprintf(why, why_size, "state database \"%s\": %s", b->db_path, msg);
		return rc;
	}
	path = join_path(b->state_dir, HY_MAP_JOURNAL_NAME);
	if (!path) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	rc = hy_map_journal_open(path, generation, epoch, b->map, &b->journal, &b->replayed,
				 failure, sizeof(failure));
	if (rc == -EUCLEAN)
		rc = reset_journal(b, path, failure, why, why_size);
	else if (rc)
		snprintf(why, why_size, "%s", failure);
	free(path);
	return rc;
}

/* What hy_borg_open() made, in any state of it (its lock and condition
 * are made first, with the strings). */
static void borg_free(struct hy_borg *b)
{
	hy_map_journal_close(b->journal);
	hy_map_free(b->map);
	hy_bopt_close(b->bopt);
	sqlite3_close(b->db);
	pthread_cond_destroy(&b->cleaner_cond);
	pthread_cond_destroy(&b->warm_cond);
	pthread_mutex_destroy(&b->lock);
	free(b->state_dir), free(b->db_path), free(b->uuid), free(b->backing);
	free(b->bopt_dir);
	free(b);
}

int hy_borg_open(const struct hy_borg_config *config, struct hy_borg **out, char *why,
		 size_t why_size)
{
	struct hy_borg *b = calloc(1, sizeof(*b));
	int rc;

	*out = NULL;
	if (!b) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	b->config = *config;
	b->state_dir = strdup(config->state_dir);
	b->db_path = strdup(config->db_path);
	b->uuid = strdup(config->uuid);
	b->backing = strdup(config->backing);
	b->bopt_dir = strdup(config->bopt_dir ? config->bopt_dir : config->state_dir);
	if (!b->state_dir || !b->db_path || !b->uuid || !b->backing || !b->bopt_dir ||
	    pthread_mutex_init(&b->lock, NULL) != 0 ||
	    pthread_cond_init(&b->cleaner_cond, NULL) != 0 ||
	    pthread_cond_init(&b->warm_cond, NULL) != 0) {
		free(b->state_dir), free(b->db_path), free(b->uuid), free(b->backing);
		free(b->bopt_dir);
		free(b);
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	b->config.state_dir = b->state_dir;
	b->config.db_path = b->db_path;
	b->config.uuid = b->uuid;
	b->config.backing = b->backing;
	b->config.bopt_dir = b->bopt_dir;
	b->config.bopt_spec = NULL; /* used only here, below */
	b->place = (struct place){b->backing, b->bopt_dir, config->root_fd};
	if (sqlite3_open_v2(config->db_path, &b->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(why, why_size, "state database \"%s\": %s", config->db_path,
			 b->db ? sqlite3_errmsg(b->db) : "out of memory");
		rc = -EIO;
		goto fail;
	}
	sqlite3_busy_timeout(b->db, 10000);
	b->config.bopt_spec = config->bopt_spec;
	rc = open_bopt(b, why, why_size);
	b->config.bopt_spec = NULL;
	if (rc)
		goto fail;
	b->was_clean = b->bopt->header.clean_shutdown;
	b->checkpointed_ns = now_ns();
	rc = open_map(b, why, why_size);
	if (rc)
		goto fail;
	/* records a crash left are saved with the map now (nothing runs on
	 * it yet): a second crash before the next checkpoint finds nothing
	 * to replay again, and the journal starts empty (faults.sh: "a second
	 * recovery finds nothing to do") */
	if (b->replayed > 0) {
		rc = hy_map_journal_checkpoint(b->journal, b->map, b->db, why, why_size);
		if (rc)
			goto fail;
	}
	rc = hy_bopt_set_clean(b->bopt, false);
	if (rc) {
		snprintf(why, why_size, "bopt: \"%s\": cannot write its header: %s", b->bopt->path,
			 strerror(-rc));
		goto fail;
	}
	{
		/* into the I/O stack as the simulator's BORG puts its own (stack.h) */
		struct hy_stack_bopt part = {
			.map = b->map,
			.device = b->bopt->device,
			.read_base = hy_bopt_read_offset(b->bopt, 0),
			.journal = b->journal,
			.writes = config->bopt_writes,
			.readahead = config->readahead,
			.read_end = hy_bopt_read_offset(b->bopt, b->bopt->header.read_blocks)};

		hy_stack_set_bopt(config->engine, &part);
	}
	/* dirty blocks left by a crash, and those of files held open long, go
	 * home in the background */
	if (pthread_create(&b->cleaner, NULL, hy_borg_cleaner_main, b) == 0)
		b->cleaner_started = true;
	else
		hy_log(LOG_WARNING, "cannot start the cleaner thread: BOPT writes go home only at "
				    "close, fsync, flush and unmount");
	if (pthread_create(&b->warmer, NULL, hy_borg_warm_main, b) == 0) {
		struct hy_map_stats stats;

		b->warmer_started = true;
		hy_map_get_stats(b->map, &stats);
		if (stats.files)
			hy_borg_warm_arm(b); /* the first chain read after mount */
	} else {
		hy_log(LOG_WARNING, "cannot start the warm-up thread: metadata is read as the "
				    "workload asks for it");
	}
	if (!b->was_clean)
		hy_log(LOG_NOTICE,
		       "bopt: \"%s\" was not closed cleanly; the map comes from its last "
		       "checkpoint and %" PRIu64 " journal records",
		       b->bopt->path, b->replayed);
	*out = b;
	return 0;
fail:
	borg_free(b);
	return rc;
}

struct hy_device *hy_borg_bopt_device(struct hy_borg *b)
{
	return b && b->bopt ? b->bopt->device : NULL;
}

int hy_borg_bopt_fd(struct hy_borg *b)
{
	return b && b->bopt ? b->bopt->fd : -1;
}

void hy_borg_close(struct hy_borg *b)
{
	char why[1024];
	bool joinable;

	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	b->stop = true;
	joinable = b->joinable;
	pthread_cond_broadcast(&b->cleaner_cond);
	pthread_cond_broadcast(&b->warm_cond);
	pthread_mutex_unlock(&b->lock);
	if (joinable)
		pthread_join(b->thread, NULL);
	if (b->cleaner_started)
		pthread_join(b->cleaner, NULL);
	if (b->warmer_started)
		pthread_join(b->warmer, NULL);
	/* DESIGN.md invariant 3: at unmount every BOPT write goes home */
	{
		uint64_t synced;

		if (hy_borg_flush(b, &synced, why, sizeof(why)) < 0)
			hy_log(LOG_ERR,
			       "flush at unmount: %s; those blocks stay in the BOPT \"%s\", "
			       "journaled, and go home at the next mount",
			       why, b->bopt->path);
	}
	if (checkpoint(b, why, sizeof(why)) < 0)
		hy_log(LOG_ERR,
		       "the map's checkpoint at unmount failed: %s; the journal in \"%s\" keeps it",
		       why, b->state_dir);
	else if (hy_bopt_set_clean(b->bopt, true) < 0)
		hy_log(LOG_ERR, "bopt: \"%s\": cannot mark it clean", b->bopt->path);
	hy_stack_set_bopt(b->config.engine, NULL);
	borg_free(b);
}

/* ---- removed files ----------------------------------------------------- */

/* Every relocated extent of @file_id leaves the map through the
 * indirector's drop (journaled, under the file's gate, then a barrier), as
 * the reconfigurator drops what a plan no longer keeps: the same
 * crash-safe path, so nothing new can go wrong at replay. */
static int drop_file(struct hy_borg *b, uint64_t file_id, uint64_t *freed, uint64_t *kept_dirty)
{
	struct hy_indirector_range *ranges;
	struct hy_map_extent *e = NULL;
	uint64_t total = 0;
	size_t n = 0;
	int rc;

	*freed = *kept_dirty = 0;
	rc = hy_map_file_extents(b->map, file_id, 0, &e, &n);
	if (rc || n == 0)
		return rc;
	ranges = malloc(n * sizeof(*ranges));
	if (!ranges) {
		free(e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		ranges[i] = (struct hy_indirector_range){file_id, e[i].block, e[i].nblocks};
		total += e[i].nblocks;
	}
	free(e);
	rc = hy_indirector_drop(hy_engine_indirector(b->config.engine), ranges, n, kept_dirty);
	free(ranges);
	if (rc == 0)
		*freed = total - *kept_dirty;
	return rc;
}

int hy_borg_forget_file(struct hy_borg *b, uint64_t file_id, uint64_t *freed)
{
	uint64_t kept = 0, got = 0;
	int rc;

	if (freed)
		*freed = 0;
	if (!b || !file_id ||
	    !hy_indirector_has_copies(hy_engine_indirector(b->config.engine), file_id))
		return 0;
	rc = drop_file(b, file_id, &got, &kept);
	if (rc) {
		hy_log(LOG_WARNING,
		       "file %" PRIu64 ", removed: its relocated blocks stay in the BOPT until "
		       "the next reorganization: %s",
		       file_id, strerror(-rc));
		return rc;
	}
	/* Dirty blocks here are ones the last close could not send home (it
	 * logged why): the drop keeps them, as it keeps every dirty block, and
	 * they go at a later flush (hy_borg_flush: a file gone for good has its
	 * blocks discarded there). */
	if (kept)
		hy_log(LOG_NOTICE,
		       "file %" PRIu64 ", removed: %" PRIu64 " of its blocks written into the "
		       "BOPT and not home stay there until the next flush",
		       file_id, kept);
	pthread_mutex_lock(&b->lock);
	b->forgotten_files++;
	b->forgotten_blocks += got;
	pthread_mutex_unlock(&b->lock);
	if (freed)
		*freed = got;
	return 0;
}

int hy_borg_sweep_gone(struct hy_borg *b, uint64_t *files_out, uint64_t *freed_out, char *why,
		       size_t why_size)
{
	struct hy_map_extent *e = NULL;
	struct search found = {0};
	uint64_t *ids = NULL, files = 0, freed = 0;
	size_t n = 0, nids = 0;
	sqlite3 *db = NULL;
	int rc;

	*files_out = *freed_out = 0;
	rc = hy_map_snapshot(b->map, &e, &n);
	if (rc) {
		snprintf(why, why_size, "out of memory");
		return rc;
	}
	ids = malloc((n ? n : 1) * sizeof(*ids));
	if (!ids) {
		free(e);
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	/* the snapshot is by file, then block: each id once */
	for (size_t i = 0; i < n; i++)
		if (nids == 0 || ids[nids - 1] != e[i].file_id)
			ids[nids++] = e[i].file_id;
	free(e);
	if (nids == 0) {
		free(ids);
		return 0;
	}
	/* its own connection, as the flush: the reconfigurator's may be busy */
	if (sqlite3_open_v2(b->db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(why, why_size, "state database \"%s\": %s", b->db_path,
			 db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		free(ids);
		return -EIO;
	}
	sqlite3_busy_timeout(db, 10000);
	rc = hy_borg_homes_find_files(&b->place, db, ids, nids, &found, why, why_size);
	sqlite3_close(db);
	for (size_t i = 0; i < nids && rc == 0; i++) {
		struct wanted *w = hy_borg_homes_wanted_by_id(&found, ids[i]);
		uint64_t got = 0, kept = 0;

		/* Not at its path nor anywhere in the tree (dev, ino and birth):
		 * removed behind the mount's back, or held open by a handle after
		 * that. Dropping is safe either way: a clean copy equals home (a
		 * handle's reads go home from now on) and dirty ones stay. */
		if (w && w->path)
			continue;
		rc = drop_file(b, ids[i], &got, &kept);
		if (rc)
			snprintf(why, why_size, "file %" PRIu64 ": cannot drop its extents: %s",
				 ids[i], strerror(-rc));
		else if (got)
			files++, freed += got;
	}
	hy_borg_homes_search_free(&found);
	free(ids);
	if (files)
		hy_log(LOG_NOTICE,
		       "reorganize: %" PRIu64 " files removed behind the mount's back held %" PRIu64
		       " relocated blocks: freed",
		       files, freed);
	pthread_mutex_lock(&b->lock);
	b->forgotten_files += files;
	b->forgotten_blocks += freed;
	pthread_mutex_unlock(&b->lock);
	*files_out = files;
	*freed_out = freed;
	return rc;
}

/* ---- progress ------------------------------------------------------- */

const char *hy_borg_phase_name(enum hy_borg_phase phase)
{
	static const char *const names[] = {
		[HY_BORG_IDLE] = "idle",
		[HY_BORG_PLANNING] = "planning",
		[HY_BORG_DROPPING] = "dropping",
		[HY_BORG_COPYING] = "copying",
		[HY_BORG_CHECKPOINTING] = "checkpointing",
		[HY_BORG_DONE] = "done",
		[HY_BORG_FAILED] = "failed",
	};

	return (unsigned)phase < sizeof(names) / sizeof(names[0]) ? names[phase] : "?";
}

void hy_borg_get_progress(struct hy_borg *b, struct hy_borg_progress *out)
{
	pthread_mutex_lock(&b->lock);
	*out = b->progress;
	if (b->running)
		out->seconds = seconds_since(&b->started);
	pthread_mutex_unlock(&b->lock);
}

void hy_borg_get_info(struct hy_borg *b, struct hy_borg_info *out)
{
	struct hy_map_stats stats;

	memset(out, 0, sizeof(*out));
	snprintf(out->path, sizeof(out->path), "%s", b->bopt->path);
	out->generation = b->bopt->header.generation;
	out->total_blocks = b->bopt->header.total_blocks;
	out->read_blocks = b->bopt->header.read_blocks;
	out->write_blocks = b->bopt->header.write_blocks;
	out->was_clean = b->was_clean;
	out->replayed = b->replayed;
	hy_map_get_stats(b->map, &stats);
	out->map_files = stats.files;
	out->map_extents = stats.extents;
	out->map_blocks = stats.blocks;
	out->dirty_blocks = stats.dirty_blocks;
	pthread_mutex_lock(&b->lock);
	out->removed_files = b->forgotten_files;
	out->removed_blocks = b->forgotten_blocks;
	pthread_mutex_unlock(&b->lock);
}

struct hy_map *hy_borg_map(struct hy_borg *b)
{
	return b->map;
}

bool hy_borg_progress_stopping(struct hy_borg *b)
{
	bool stop;

	pthread_mutex_lock(&b->lock);
	stop = b->stop;
	pthread_mutex_unlock(&b->lock);
	return stop;
}

void hy_borg_progress_set_phase(struct hy_borg *b, enum hy_borg_phase phase)
{
	pthread_mutex_lock(&b->lock);
	b->progress.phase = phase;
	pthread_mutex_unlock(&b->lock);
}

/* ---- what a crash left, for a mount that leaves the BOPT out --------- */

uint64_t hy_borg_left_dirty(const char *state_dir, const char *bopt_dir, const char *uuid,
			    struct sqlite3 *db)
{
	struct hy_map_journal *journal = NULL;
	struct hy_bopt *bopt = NULL;
	struct hy_map *map = NULL;
	struct hy_map_stats stats;
	uint64_t dirty = 0;
	uint32_t epoch = 0;
	char path[4096], jpath[4096], msg[1024];

	snprintf(path, sizeof(path), "%s/bopt", bopt_dir);
	snprintf(jpath, sizeof(jpath), "%s/%s", state_dir, HY_MAP_JOURNAL_NAME);
	/* the open-map-and-replay of hy_borg_open(), read only for the count */
	if (hy_bopt_open(path, uuid, &bopt, msg, sizeof(msg)) == 0 && hy_map_new(&map) == 0 &&
	    hy_map_load(map, db, bopt->header.generation, &epoch, msg, sizeof(msg)) == 0) {
		/* what the journal adds; a refused record keeps what came before
		 * it, as the real open does */
		hy_map_journal_open(jpath, bopt->header.generation, epoch, map, &journal, NULL, msg,
				    sizeof(msg));
		hy_map_journal_close(journal);
		hy_map_get_stats(map, &stats);
		dirty = stats.dirty_blocks;
	}
	hy_map_free(map);
	hy_bopt_close(bopt);
	return dirty;
}
