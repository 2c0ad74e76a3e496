/* borg.c - see include/hybridfs/borg.h. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/bopt.h"
#include "hybridfs/borg.h"
#include "hybridfs/device.h"
#include "hybridfs/fault.h"
#include "hybridfs/engine.h"
#include "hybridfs/indirector.h"
#include "hybridfs/log.h"
#include "hybridfs/map.h"
#include "hybridfs/map_journal.h"
#include "hybridfs/state.h"

#define BLOCK 4096
/* A copy unit: at most this many blocks are read and written at once. */
#define CHUNK_BLOCKS 256
/* Copies made durable with one fdatasync of the BOPT, then committed: a
 * batch ends at this many bytes, or this long after it began (so a slow,
 * rate-limited copy still commits as it goes). */
#define BATCH_BYTES   (4u << 20)
#define BATCH_SECONDS 0.5
/* How long the copy sleeps when the mount was busy during the last chunk. */
#define YIELD_NS 2000000

/* Where home files are: the backing tree, the state folder to skip in it,
 * and a descriptor of its root. */
struct place {
	const char *backing, *state_dir;
	int root_fd;
};

struct hy_borg {
	struct hy_borg_config config;
	struct place place; /* of the strings below and config.root_fd */
	char *state_dir, *db_path, *uuid, *backing;
	struct hy_bopt *bopt;
	struct hy_map *map;
	struct hy_map_journal *journal;
	sqlite3 *db; /* the reconfigurator's; used by one thread at a time */
	bool was_clean;
	uint64_t replayed;
	int64_t checkpointed_ns; /* the cleaner's last checkpoint (its thread only) */

	pthread_mutex_t lock; /* guards what follows */
	struct hy_borg_progress progress;
	struct hy_reorganize_params params;
	bool running, stop, joinable;
	uint64_t runs;
	pthread_t thread;
	pthread_t cleaner;
	pthread_cond_t cleaner_cond; /* wakes the cleaner to stop */
	bool cleaner_started;
	struct timespec started;
};

static void *cleaner_main(void *arg);

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

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
		hy_log(LOG_WARNING, "bopt: cannot read the map of the damaged BOPT: %s", why);
		goto out;
	}
	jpath = join_path(b->state_dir, HY_MAP_JOURNAL_NAME);
	/* replay only: the records of the old generation, the map keeps
	 * what they gave even when one is refused */
	if (jpath && hy_map_journal_open(jpath, generation, epoch, map, &journal, NULL, why,
					 sizeof(why)) < 0)
		hy_log(LOG_WARNING, "bopt: the map journal of the damaged BOPT: %s", why);
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
	    hy_borg_open_homes(b->db_path, b->backing, b->state_dir, b->config.root_fd, ids, nids,
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
		snprintf(path, sizeof(path), "%s/%s", b->state_dir, "bopt");
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
	pthread_mutex_destroy(&b->lock);
	free(b->state_dir), free(b->db_path), free(b->uuid), free(b->backing);
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
	if (!b->state_dir || !b->db_path || !b->uuid || !b->backing ||
	    pthread_mutex_init(&b->lock, NULL) != 0 ||
	    pthread_cond_init(&b->cleaner_cond, NULL) != 0) {
		free(b->state_dir), free(b->db_path), free(b->uuid), free(b->backing);
		free(b);
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	b->config.state_dir = b->state_dir;
	b->config.db_path = b->db_path;
	b->config.uuid = b->uuid;
	b->config.backing = b->backing;
	b->config.bopt_spec = NULL; /* used only here, below */
	b->place = (struct place){b->backing, b->state_dir, config->root_fd};
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
	hy_indirector_set_bopt(hy_engine_indirector(config->engine), b->map, b->bopt->device,
			       hy_bopt_read_offset(b->bopt, 0), b->journal);
	hy_indirector_set_bopt_writes(hy_engine_indirector(config->engine), config->bopt_writes);
	/* dirty blocks left by a crash, and those of files held open long, go
	 * home in the background */
	if (pthread_create(&b->cleaner, NULL, cleaner_main, b) == 0)
		b->cleaner_started = true;
	else
		hy_log(LOG_WARNING, "cannot start the cleaner thread: BOPT writes go home only at "
				    "close, fsync, flush and unmount");
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

/* Saves the map while nothing changes it. */
static int checkpoint_with(struct hy_borg *b, sqlite3 *db, char *why, size_t why_size)
{
	/* every gate: no change of the map or the journal meanwhile; two
	 * checkpoints (the cleaner's, a reorganization's) take turns there */
	return hy_indirector_checkpoint(hy_engine_indirector(b->config.engine), db, why, why_size);
}

static int checkpoint(struct hy_borg *b, char *why, size_t why_size)
{
	return checkpoint_with(b, b->db, why, why_size);
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
	pthread_mutex_unlock(&b->lock);
	if (joinable)
		pthread_join(b->thread, NULL);
	if (b->cleaner_started)
		pthread_join(b->cleaner, NULL);
	/* DESIGN.md invariant 3: at unmount every BOPT write goes home */
	{
		uint64_t synced;

		if (hy_borg_flush(b, &synced, why, sizeof(why)) < 0)
			hy_log(LOG_ERR,
			       "flush at unmount: %s; those blocks stay in the BOPT, "
			       "journaled, and go home at the next mount",
			       why);
	}
	if (checkpoint(b, why, sizeof(why)) < 0)
		hy_log(LOG_ERR, "the map's checkpoint at unmount failed: %s; the journal keeps it",
		       why);
	else if (hy_bopt_set_clean(b->bopt, true) < 0)
		hy_log(LOG_ERR, "bopt: \"%s\": cannot mark it clean", b->bopt->path);
	hy_indirector_set_bopt(hy_engine_indirector(b->config.engine), NULL, NULL, 0, NULL);
	borg_free(b);
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

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
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
}

struct hy_map *hy_borg_map(struct hy_borg *b)
{
	return b->map;
}

static bool stopping(struct hy_borg *b)
{
	bool stop;

	pthread_mutex_lock(&b->lock);
	stop = b->stop;
	pthread_mutex_unlock(&b->lock);
	return stop;
}

static void set_phase(struct hy_borg *b, enum hy_borg_phase phase)
{
	pthread_mutex_lock(&b->lock);
	b->progress.phase = phase;
	pthread_mutex_unlock(&b->lock);
}

/* ---- finding home files --------------------------------------------- */

struct wanted {
	uint64_t file_id;
	uint64_t dev, ino;
	int64_t birth_ns;
	char *path;  /* relative to the backing directory, once found */
	bool walked; /* found by the walk: its row's path is out of date */
	int fd;	     /* open for the copy, or -1 */
};

struct search {
	struct wanted *w; /* sorted by (dev, ino) */
	size_t n, found;
	size_t by_path, walked; /* found by their remembered path; entries a walk visited */
	size_t backing_len;
	dev_t state_dev;
	ino_t state_ino;
	bool have_state;
};

/* nftw() has no argument for its callback; one search runs at a time (the
 * reconfigurator thread is the only caller, and only one runs). */
static struct search *current_search;

static int by_dev_ino(const void *a, const void *b)
{
	const struct wanted *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct search *s = current_search;
	struct wanted key, *hit;

	(void)ftw;
	s->walked++;
	if (type == FTW_D && s->have_state && st->st_dev == s->state_dev &&
	    st->st_ino == s->state_ino)
		return FTW_SKIP_SUBTREE; /* the state folder: the BOPT, the database */
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return FTW_CONTINUE;
	key.dev = (uint64_t)st->st_dev;
	key.ino = (uint64_t)st->st_ino;
	hit = bsearch(&key, s->w, s->n, sizeof(*s->w), by_dev_ino);
	if (!hit || hit->path)
		return FTW_CONTINUE;
	hit->path = strdup(path + s->backing_len + 1);
	hit->walked = hit->path != NULL;
	if (hit->path && ++s->found == s->n)
		return FTW_STOP;
	return FTW_CONTINUE;
}

static pthread_mutex_t search_lock = PTHREAD_MUTEX_INITIALIZER;

static int by_id(const void *a, const void *b)
{
	const struct wanted *x = a, *y = b;

	return x->file_id < y->file_id ? -1 : x->file_id > y->file_id;
}

/* Whether @w's file is at @path (relative to the backing directory): the
 * same dev, ino and birth, as open_home() checks again. */
static bool is_there(const struct place *b, const struct wanted *w, const char *path)
{
	struct statx stx;

	if (!path || !path[0] || path[0] == '/' || strcmp(path, "..") == 0 ||
	    strncmp(path, "../", 3) == 0 || strstr(path, "/../") ||
	    (strlen(path) >= 3 && strcmp(path + strlen(path) - 3, "/..") == 0))
		return false;
	if (statx(b->root_fd, path, AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &stx) != 0 ||
	    !S_ISREG(stx.stx_mode))
		return false;
	return (uint64_t)makedev(stx.stx_dev_major, stx.stx_dev_minor) == w->dev &&
	       stx.stx_ino == w->ino &&
	       (!(stx.stx_mask & STATX_BTIME) || !w->birth_ns ||
		(int64_t)stx.stx_btime.tv_sec * 1000000000 + stx.stx_btime.tv_nsec == w->birth_ns);
}

/* The walk found files elsewhere than their rows say (renamed since, or
 * rows older than the paths): their rows learn where, so that the next
 * flush finds them without a walk. Only on a connection that may write;
 * a failure costs a walk next time, nothing else, and is said. */
static void remember_paths(sqlite3 *db, const struct search *s)
{
	sqlite3_stmt *st;
	size_t n = 0;

	if (sqlite3_db_readonly(db, "main") != 0)
		return;
	for (size_t i = 0; i < s->n; i++)
		n += s->w[i].walked;
	if (!n)
		return;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (sqlite3_prepare_v2(db, "UPDATE files SET path = ?2 WHERE id = ?1", -1, &st, NULL) !=
	    SQLITE_OK) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		goto fail;
	}
	for (size_t i = 0; i < s->n; i++) {
		if (!s->w[i].walked)
			continue;
		sqlite3_bind_int64(st, 1, (sqlite3_int64)s->w[i].file_id);
		sqlite3_bind_text(st, 2, s->w[i].path, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			sqlite3_finalize(st);
			sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
			goto fail;
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		return;
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
fail:
	hy_log(LOG_WARNING,
	       "borg: the paths of %zu files found by a walk of the backing directory cannot be "
	       "kept: %s (the next search walks again)",
	       n, sqlite3_errmsg(db));
}

/* The files of @ids (sorted, unique) with their identity from the files
 * table and their place in the backing tree: first where the files table
 * remembers them (the path the profiler saw when it gave the id, one
 * statx each), then, for those not there (renamed since, or rows from
 * before paths were kept), by one walk of the tree. So a flush costs what
 * its dirty files cost, not what the tree does. */
static int find_files(const struct place *b, sqlite3 *db, const uint64_t *ids, size_t n,
		      struct search *s, char *why, size_t why_size)
{
	sqlite3_stmt *st;
	struct stat sst;
	size_t k = 0;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	s->w = calloc(n ? n : 1, sizeof(*s->w));
	if (!s->w) {
		snprintf(why, why_size, "out of memory for %zu files", n);
		return -ENOMEM;
	}
	if (sqlite3_prepare_v2(db, "SELECT dev, ino, birth_ns, path FROM files WHERE id = ?1", -1,
			       &st, NULL) != SQLITE_OK) {
		snprintf(why, why_size, "state database: %s", sqlite3_errmsg(db));
		return hy_state_errno(sqlite3_errcode(db));
	}
	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)ids[i]);
		if (sqlite3_step(st) == SQLITE_ROW) {
			s->w[k].file_id = ids[i];
			s->w[k].dev = (uint64_t)sqlite3_column_int64(st, 0);
			s->w[k].ino = (uint64_t)sqlite3_column_int64(st, 1);
			s->w[k].birth_ns = sqlite3_column_int64(st, 2);
			s->w[k].fd = -1;
			if (is_there(b, &s->w[k], (const char *)sqlite3_column_text(st, 3))) {
				s->w[k].path = strdup((const char *)sqlite3_column_text(st, 3));
				if (s->w[k].path)
					s->by_path++;
			}
			k++;
		}
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	s->n = k;
	qsort(s->w, s->n, sizeof(*s->w), by_dev_ino);
	s->backing_len = strlen(b->backing);
	while (s->backing_len > 1 && b->backing[s->backing_len - 1] == '/')
		s->backing_len--;
	if (stat(b->state_dir, &sst) == 0) {
		s->have_state = true;
		s->state_dev = sst.st_dev;
		s->state_ino = sst.st_ino;
	}
	s->found = s->by_path;
	if (s->found == s->n) {
		qsort(s->w, s->n, sizeof(*s->w), by_id);
		return 0;
	}
	pthread_mutex_lock(&search_lock);
	current_search = s;
	if (nftw(b->backing, visit, 64, FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL) < 0) {
		rc = -errno;
		snprintf(why, why_size, "cannot search \"%s\" for the planned files: %s",
			 b->backing, strerror(-rc));
	}
	current_search = NULL;
	pthread_mutex_unlock(&search_lock);
	if (rc == 0)
		remember_paths(db, s);
	/* from now on the copy looks files up by id */
	qsort(s->w, s->n, sizeof(*s->w), by_id);
	return rc;
}

static void search_free(struct search *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->w[i].path);
		if (s->w[i].fd >= 0)
			close(s->w[i].fd);
	}
	free(s->w);
	memset(s, 0, sizeof(*s));
}

static struct wanted *wanted_by_id(const struct search *s, uint64_t file_id)
{
	struct wanted key = {.file_id = file_id};

	return bsearch(&key, s->w, s->n, sizeof(*s->w), by_id);
}

/* Opens @w's file read-only and checks it is the same file (dev, ino and
 * birth): -ENOENT when it is gone or another. */
static int open_home(const struct place *b, const struct wanted *w, int access, int *fd_out)
{
	struct statx stx;
	int fd;

	if (!w || !w->path)
		return -ENOENT;
	fd = openat(b->root_fd, w->path, access | O_NOATIME | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EPERM) /* O_NOATIME on a file we do not own */
		fd = openat(b->root_fd, w->path, access | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &stx) != 0 ||
	    (uint64_t)makedev(stx.stx_dev_major, stx.stx_dev_minor) != w->dev ||
	    stx.stx_ino != w->ino ||
	    ((stx.stx_mask & STATX_BTIME) && w->birth_ns &&
	     (int64_t)stx.stx_btime.tv_sec * 1000000000 + stx.stx_btime.tv_nsec != w->birth_ns)) {
		close(fd);
		return -ENOENT;
	}
	*fd_out = fd;
	return 0;
}

int hy_borg_open_homes(const char *db_path, const char *backing, const char *state_dir, int root_fd,
		       const uint64_t *ids, size_t n, int *fds, char *why, size_t why_size)
{
	struct place p = {backing, state_dir, root_fd};
	struct search files;
	sqlite3 *db = NULL;
	int rc;

	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(why, why_size, "state database \"%s\": %s", db_path,
			 db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return -EIO;
	}
	sqlite3_busy_timeout(db, 10000);
	rc = find_files(&p, db, ids, n, &files, why, why_size);
	sqlite3_close(db);
	for (size_t i = 0; i < n && rc == 0; i++)
		if (open_home(&p, wanted_by_id(&files, ids[i]), O_RDWR, &fds[i]) < 0)
			fds[i] = -1;
	search_free(&files);
	return rc;
}

/* ---- the reconfigurator --------------------------------------------- */

/* A range read and written to the BOPT, waiting for its commit. */
struct copier {
	struct hy_borg *b;
	struct search files;
	size_t open; /* home files open now (their wanted.fd) */
	/* copies in the BOPT waiting for their commit; each one's object is
	 * its home file's descriptor, borrowed from the open-file cache */
	struct hy_indirector_copy *pending;
	bool *committed; /* as many as pending */
	size_t npending, cap;
	uint64_t batch_bytes;
	struct timespec batch_started;
	unsigned char *buf;
	/* pacing */
	struct timespec t0;
	uint64_t bytes;
	uint64_t activity;
};

static void progress_add(struct hy_borg *b, uint64_t done, uint64_t copied, uint64_t skipped_ranges,
			 uint64_t skipped_blocks)
{
	pthread_mutex_lock(&b->lock);
	b->progress.done_blocks += done;
	b->progress.copied_blocks += copied;
	b->progress.skipped_ranges += skipped_ranges;
	b->progress.skipped_blocks += skipped_blocks;
	pthread_mutex_unlock(&b->lock);
}

/* Commits the batch: the BOPT made durable once, then the indirector puts
 * each range in the map if nothing changed its file since it was read. */
static int commit_batch(struct copier *c, char *why, size_t why_size)
{
	struct hy_borg *b = c->b;
	int rc;

	if (c->npending == 0)
		return 0;
	rc = hy_device_sync(b->bopt->device, 0, true);
	if (rc) {
		snprintf(why, why_size, "bopt: \"%s\": cannot make the copies durable: %s",
			 b->bopt->path, strerror(-rc));
		return rc;
	}
	rc = hy_indirector_copy_commit(hy_engine_indirector(b->config.engine), c->pending,
				       c->npending, c->committed);
	if (rc) {
		snprintf(why, why_size, "the map journal failed: %s", strerror(-rc));
		return rc;
	}
	for (size_t i = 0; i < c->npending; i++) {
		if (c->committed[i])
			progress_add(b, 0, c->pending[i].nblocks, 0, 0);
		else
			progress_add(b, 0, 0, 1, c->pending[i].nblocks);
	}
	c->npending = 0;
	c->batch_bytes = 0;
	return 0;
}

/* Keeps the copy under the rate, and out of the way of the mount's users. */
static void pace(struct copier *c, uint64_t bytes)
{
	struct hy_borg *b = c->b;
	uint64_t activity;

	c->bytes += bytes;
	if (b->config.rate) {
		double due = (double)c->bytes / (double)b->config.rate, now = seconds_since(&c->t0);

		if (due > now) {
			double wait = due - now;
			struct timespec ts = {(time_t)wait,
					      (long)((wait - (double)(time_t)wait) * 1e9)};

			nanosleep(&ts, NULL);
		}
	}
	if (b->config.activity) {
		activity = b->config.activity(b->config.activity_ctx);
		if (activity != c->activity) {
			struct timespec ts = {0, YIELD_NS};

			c->activity = activity;
			nanosleep(&ts, NULL);
		}
	}
}

/* Home files stay open while their copies wait for the commit (which
 * compares their ctime); at most MAX_OPEN at once, then the batch is
 * committed and they are closed. Returns the descriptor, -ENOENT when the
 * file is gone, or the commit's error. */
#define MAX_OPEN 64

static int home_fd(struct copier *c, uint64_t file_id, char *why, size_t why_size)
{
	struct wanted *w = wanted_by_id(&c->files, file_id);
	int fd = -1, rc;

	if (!w)
		return -ENOENT;
	if (w->fd >= 0)
		return w->fd;
	if (c->open == MAX_OPEN) {
		rc = commit_batch(c, why, why_size);
		if (rc)
			return rc;
		for (size_t i = 0; i < c->files.n; i++) {
			if (c->files.w[i].fd >= 0) {
				close(c->files.w[i].fd);
				c->files.w[i].fd = -1;
			}
		}
		c->open = 0;
	}
	rc = open_home(&c->b->place, w, O_RDONLY, &fd);
	if (rc)
		return -ENOENT;
	w->fd = fd;
	c->open++;
	return fd;
}

/* Reads one chunk home and writes it to the BOPT; queues its commit. */
static int copy_chunk(struct copier *c, uint64_t file_id, uint64_t block, uint32_t nblocks,
		      uint64_t bopt_block, char *why, size_t why_size)
{
	struct hy_borg *b = c->b;
	struct hy_indirector *ind = hy_engine_indirector(b->config.engine);
	struct hy_indirector_copy p = {.file_id = file_id,
				       .object = -1,
				       .block = block,
				       .nblocks = nblocks,
				       .bopt_block = bopt_block};
	size_t len = (size_t)nblocks * BLOCK;
	struct stat st;
	ssize_t n;
	int fd, rc;

	/* BOPT blocks still held (an extent written through the mount and not
	 * home yet stays where it is) are never written over: the data there
	 * is that file's only current copy */
	if (hy_map_bopt_in_use(b->map, bopt_block, nblocks)) {
		progress_add(b, nblocks, 0, 1, nblocks);
		return 0;
	}
	fd = home_fd(c, file_id, why, why_size);
	if (fd < 0 && fd != -ENOENT)
		return fd;
	if (fd < 0) {
		progress_add(b, nblocks, 0, 1, nblocks);
		return 0; /* gone, or another file now */
	}
	/* whole blocks of data only: never the last partial block */
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size / BLOCK <= block) {
		progress_add(b, nblocks, 0, 1, nblocks);
		return 0;
	}
	if ((uint64_t)st.st_size / BLOCK < block + nblocks) {
		uint32_t keep = (uint32_t)((uint64_t)st.st_size / BLOCK - block);

		progress_add(b, nblocks - keep, 0, 1, nblocks - keep);
		nblocks = keep;
		p.nblocks = keep;
		len = (size_t)nblocks * BLOCK;
	}
	/* what the commit will compare with, taken before the read */
	p.object = fd;
	rc = hy_indirector_copy_begin(ind, &p);
	if (rc) {
		progress_add(b, nblocks, 0, 1, nblocks);
		return 0;
	}
	n = hy_indirector_copy_read(ind, &p, c->buf);
	if (n != (ssize_t)len) {
		progress_add(b, nblocks, 0, 1, nblocks); /* shrank meanwhile */
		return 0;
	}
	n = hy_device_write(b->bopt->device, 0, c->buf, len,
			    (off_t)hy_bopt_read_offset(b->bopt, bopt_block));
	if (n != (ssize_t)len) {
		rc = n < 0 ? (int)n : -EIO;
		snprintf(why, why_size, "bopt: \"%s\": cannot write block %" PRIu64 ": %s",
			 b->bopt->path, bopt_block, strerror(-rc));
		return rc;
	}
	if (c->npending == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct hy_indirector_copy *grown = realloc(c->pending, cap * sizeof(*grown));
		bool *flags;

		if (!grown) {
			snprintf(why, why_size, "out of memory");
			return -ENOMEM;
		}
		c->pending = grown;
		flags = realloc(c->committed, cap * sizeof(*flags));
		if (!flags) {
			snprintf(why, why_size, "out of memory");
			return -ENOMEM;
		}
		c->committed = flags;
		c->cap = cap;
	}
	/* fault.h: the chunk is in the BOPT, not yet in the map */
	hy_fault_point("reorg.copy.mid");
	if (c->npending == 0)
		clock_gettime(CLOCK_MONOTONIC, &c->batch_started);
	c->pending[c->npending++] = p;
	c->batch_bytes += len;
	progress_add(b, nblocks, 0, 0, 0);
	pace(c, len);
	if (c->batch_bytes >= BATCH_BYTES || seconds_since(&c->batch_started) >= BATCH_SECONDS)
		return commit_batch(c, why, why_size);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int copy_all(struct hy_borg *b, const struct hy_reorganize_diff *diff, char *why,
		    size_t why_size)
{
	struct copier c = {.b = b};
	uint64_t *ids = malloc((diff->ncopy ? diff->ncopy : 1) * sizeof(*ids));
	size_t nids = 0;
	int rc = 0;

	c.buf = malloc((size_t)CHUNK_BLOCKS * BLOCK);
	if (!ids || !c.buf) {
		free(ids);
		free(c.buf);
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < diff->ncopy; i++)
		ids[nids++] = diff->copy[i].file_id;
	qsort(ids, nids, sizeof(*ids), cmp_u64);
	{
		size_t u = 0;

		for (size_t i = 0; i < nids; i++)
			if (u == 0 || ids[u - 1] != ids[i])
				ids[u++] = ids[i];
		nids = u;
	}
	rc = find_files(&b->place, b->db, ids, nids, &c.files, why, why_size);
	free(ids);
	clock_gettime(CLOCK_MONOTONIC, &c.t0);
	if (b->config.activity)
		c.activity = b->config.activity(b->config.activity_ctx);
	for (size_t i = 0; i < diff->ncopy && rc == 0; i++) {
		const struct hy_reorganize_range *r = &diff->copy[i];

		for (uint64_t at = 0; at < r->nblocks && rc == 0; at += CHUNK_BLOCKS) {
			uint64_t n =
				r->nblocks - at < CHUNK_BLOCKS ? r->nblocks - at : CHUNK_BLOCKS;

			if (stopping(b)) {
				rc = -ECANCELED;
				snprintf(why, why_size,
					 "stopped: the filesystem is being unmounted");
				break;
			}
			rc = copy_chunk(&c, r->file_id, r->block + at, (uint32_t)n,
					r->bopt_block + at, why, why_size);
		}
	}
	/* what was copied is committed even when stopped */
	if (rc == 0 || rc == -ECANCELED) {
		char more[256];
		int crc = commit_batch(&c, more, sizeof(more));

		if (crc && rc == 0) {
			rc = crc;
			snprintf(why, why_size, "%s", more);
		}
	}
	search_free(&c.files);
	free(c.pending);
	free(c.committed);
	free(c.buf);
	return rc;
}

/* Extents leaving the BOPT (or moving in it) are released, a gate stripe
 * at a time: under the stripe's gate, held exclusive, each clean piece is
 * journaled and released, and the records are made durable before the
 * gate is let go, so no change of those files can slip in between. Dirty
 * pieces (written through the mount, not home yet) stay where they are;
 * copies planned onto their BOPT blocks are then refused and skipped.
 * Then a barrier (every gate taken once) waits out reads that may still
 * use the old places. */
static int drop_all(struct hy_borg *b, const struct hy_reorganize_diff *diff, char *why,
		    size_t why_size)
{
	struct hy_indirector_range *ranges =
		malloc((diff->ndrop ? diff->ndrop : 1) * sizeof(*ranges));
	uint64_t kept_dirty = 0;
	int rc;

	if (!ranges) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < diff->ndrop; i++)
		ranges[i] = (struct hy_indirector_range){diff->drop[i].file_id, diff->drop[i].block,
							 diff->drop[i].nblocks};
	rc = hy_indirector_drop(hy_engine_indirector(b->config.engine), ranges, diff->ndrop,
				&kept_dirty);
	free(ranges);
	if (rc) {
		snprintf(why, why_size, "dropping extents from the map failed: %s", strerror(-rc));
		return rc;
	}
	if (kept_dirty) {
		hy_log(LOG_NOTICE,
		       "reorganize: %" PRIu64 " blocks written through the mount and not home yet "
		       "stay in the BOPT",
		       kept_dirty);
		pthread_mutex_lock(&b->lock);
		b->progress.dropped_blocks -= kept_dirty;
		b->progress.kept_blocks += kept_dirty;
		pthread_mutex_unlock(&b->lock);
	}
	return 0;
}

/* ---- flushing: dirty BOPT blocks home ------------------------------- */

static int collect_dirty(const struct hy_map_extent *e, void *arg)
{
	struct {
		uint64_t *ids;
		size_t n, cap;
	} *l = arg;

	if (!e->dirty || (l->n && l->ids[l->n - 1] == e->file_id))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		uint64_t *grown = realloc(l->ids, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		l->ids = grown;
		l->cap = cap;
	}
	l->ids[l->n++] = e->file_id;
	return 0;
}

int hy_borg_flush(struct hy_borg *b, uint64_t *synced, char *why, size_t why_size)
{
	struct {
		uint64_t *ids;
		size_t n, cap;
	} dirty = {NULL, 0, 0};
	struct search files;
	uint64_t unreachable = 0;
	sqlite3 *db = NULL;
	int rc;

	*synced = 0;
	/* the walk gives files in id order, so each id comes once */
	rc = hy_map_walk(b->map, collect_dirty, &dirty);
	if (rc) {
		free(dirty.ids);
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
	rc = find_files(&b->place, db, dirty.ids, dirty.n, &files, why, why_size);
	sqlite3_close(db);
	for (size_t i = 0; i < dirty.n && rc == 0; i++) {
		struct wanted *w = wanted_by_id(&files, dirty.ids[i]);
		struct hy_engine_file file;
		int64_t n;
		int fd = -1;

		if (open_home(&b->place, w, O_RDWR, &fd) < 0) {
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
	if (unreachable)
		hy_log(LOG_WARNING,
		       "flush: %" PRIu64 " files with blocks written into the BOPT were not found "
		       "in \"%s\" (gone, or unreadable); their blocks stay in the BOPT",
		       unreachable, b->backing);
	search_free(&files);
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
		hy_log(LOG_ERR, "background checkpoint: %s; the journal keeps the map", why);
	else
		b->checkpointed_ns = now_ns();
	sqlite3_close(db);
}

static void *cleaner_main(void *arg)
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

static int run(struct hy_borg *b, char *why, size_t why_size)
{
	struct hy_reorganize_plan plan;
	struct hy_reorganize_diff diff = {0};
	struct hy_map_extent *current = NULL;
	size_t ncurrent = 0;
	int rc;

	rc = hy_reorganize_make_plan(b->db, &b->params, &plan, why, why_size);
	if (rc)
		return rc;
	pthread_mutex_lock(&b->lock);
	b->progress.generation = plan.generation;
	b->progress.requests = plan.analyzer.requests;
	b->progress.vertices = plan.analyzer.vertices;
	b->progress.edges = plan.analyzer.edges;
	b->progress.cut_vertices = plan.analyzer.cut_vertices;
	b->progress.ranges = plan.count;
	b->progress.planned_blocks = plan.blocks;
	b->progress.phase = HY_BORG_DROPPING;
	pthread_mutex_unlock(&b->lock);

	/* blocks leaving the BOPT go home first if they are dirty: a flush
	 * now sends every dirty block home, so the drops below find clean
	 * ones (but for writes that come meanwhile: those stay in place) */
	{
		struct hy_map_stats stats;
		uint64_t synced;

		hy_map_get_stats(b->map, &stats);
		rc = stats.dirty_blocks ? hy_borg_flush(b, &synced, why, why_size) : 0;
		if (rc < 0)
			goto out;
	}
	rc = hy_map_snapshot(b->map, &current, &ncurrent);
	if (rc == 0)
		rc = hy_reorganize_diff(current, ncurrent, plan.ranges, plan.count, &diff);
	free(current);
	if (rc) {
		snprintf(why, why_size, "out of memory comparing the plan with the map");
		goto out;
	}
	pthread_mutex_lock(&b->lock);
	b->progress.kept_blocks = diff.keep_blocks;
	b->progress.dropped_blocks = diff.drop_blocks;
	b->progress.copy_blocks = diff.copy_blocks;
	pthread_mutex_unlock(&b->lock);
	rc = hy_reorganize_record(b->db, plan.generation, "copying", 0, diff.drop_blocks,
				  diff.keep_blocks, 0, why, why_size);
	if (rc == 0)
		rc = drop_all(b, &diff, why, why_size);
	if (rc)
		goto out;
	/* releases journaled by writers and truncations are not waited for
	 * (their stamps cover a crash); BOPT blocks they freed may be copied
	 * over now, so their records must be durable first */
	rc = hy_map_journal_sync(b->journal);
	if (rc) {
		snprintf(why, why_size, "the map journal failed: %s", strerror(-rc));
		goto out;
	}
	set_phase(b, HY_BORG_COPYING);
	rc = copy_all(b, &diff, why, why_size);
	if (rc && rc != -ECANCELED)
		goto out;
	set_phase(b, HY_BORG_CHECKPOINTING);
	{
		char cwhy[1024];
		int crc = checkpoint(b, cwhy, sizeof(cwhy));

		if (crc && rc == 0) {
			rc = crc;
			snprintf(why, why_size, "%s", cwhy);
		}
	}
out : {
	struct hy_borg_progress p;
	char rwhy[512];

	hy_borg_get_progress(b, &p);
	if (plan.generation &&
	    hy_reorganize_record(b->db, plan.generation, rc ? "failed" : "done", p.copied_blocks,
				 p.dropped_blocks, p.kept_blocks, p.skipped_ranges, rwhy,
				 sizeof(rwhy)) < 0)
		hy_log(LOG_WARNING, "%s", rwhy);
}
	hy_reorganize_diff_free(&diff);
	hy_reorganize_plan_free(&plan);
	return rc;
}

static void *reconfig_main(void *arg)
{
	struct hy_borg *b = arg;
	char why[1024] = "";
	int rc;

	pthread_setname_np(pthread_self(), "hy-reconfig");
	rc = run(b, why, sizeof(why));
	pthread_mutex_lock(&b->lock);
	b->progress.seconds = seconds_since(&b->started);
	b->progress.phase = rc ? HY_BORG_FAILED : HY_BORG_DONE;
	if (rc)
		snprintf(b->progress.error, sizeof(b->progress.error), "%s", why);
	b->running = false;
	pthread_mutex_unlock(&b->lock);
	if (rc)
		hy_log(LOG_ERR, "reorganization failed: %s", why);
	else
		hy_log(LOG_NOTICE,
		       "reorganization %" PRIu64 " done: %" PRIu64 " blocks copied, %" PRIu64
		       " dropped, %" PRIu64 " kept, %" PRIu64 " ranges skipped, %.1f s",
		       b->progress.generation, b->progress.copied_blocks,
		       b->progress.dropped_blocks, b->progress.kept_blocks,
		       b->progress.skipped_ranges, b->progress.seconds);
	return NULL;
}

int hy_borg_reorganize(struct hy_borg *b, const struct hy_reorganize_params *params, char *why,
		       size_t why_size)
{
	uint64_t region = b->bopt->header.read_blocks;
	int rc;

	if (params->capacity_blocks > region) {
		snprintf(why, why_size,
			 "the capacity asked for (%" PRIu64 " blocks) is more than the BOPT's read "
			 "region (%" PRIu64 " blocks of 4 KiB)",
			 params->capacity_blocks, region);
		return -EINVAL;
	}
	pthread_mutex_lock(&b->lock);
	if (b->running) {
		pthread_mutex_unlock(&b->lock);
		snprintf(why, why_size, "a reorganization is running already (run %" PRIu64 ")",
			 b->progress.run);
		return -EBUSY;
	}
	if (b->stop) {
		pthread_mutex_unlock(&b->lock);
		snprintf(why, why_size, "the filesystem is being unmounted");
		return -ESHUTDOWN;
	}
	if (b->joinable) {
		pthread_join(b->thread, NULL); /* the previous run, finished */
		b->joinable = false;
	}
	b->params = *params;
	b->params.save = true;
	if (!b->params.capacity_blocks)
		b->params.capacity_blocks = region;
	memset(&b->progress, 0, sizeof(b->progress));
	b->progress.run = ++b->runs;
	b->progress.phase = HY_BORG_PLANNING;
	clock_gettime(CLOCK_MONOTONIC, &b->started);
	b->running = true;
	rc = pthread_create(&b->thread, NULL, reconfig_main, b);
	if (rc) {
		b->running = false;
		b->progress.phase = HY_BORG_IDLE;
		pthread_mutex_unlock(&b->lock);
		snprintf(why, why_size, "cannot start the reconfigurator thread: %s", strerror(rc));
		return -rc;
	}
	b->joinable = true;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

/* ---- what a crash left, for a mount that leaves the BOPT out --------- */

uint64_t hy_borg_left_dirty(const char *state_dir, const char *uuid, struct sqlite3 *db)
{
	struct hy_map_journal *journal = NULL;
	struct hy_bopt *bopt = NULL;
	struct hy_map *map = NULL;
	struct hy_map_stats stats;
	uint64_t dirty = 0;
	uint32_t epoch = 0;
	char path[4096], jpath[4096], msg[1024];

	snprintf(path, sizeof(path), "%s/bopt", state_dir);
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
