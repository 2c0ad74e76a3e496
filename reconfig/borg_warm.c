/* borg_warm.c - BORG's metadata warm-up (issue 18, item 6): when a chain
 * of relocated files starts being read, the metadata of every relocated
 * file (its directories, its inode) is read ahead in inode order, by a
 * thread of its own ("hy-warm"); see include/hybridfs/borg.h
 * (hy_borg_note_read) and borg_internal.h.
 *
 * Why: after a layout the data of a morning comes from the BOPT in a few
 * sweeps, and what is left is metadata: on the aged-disk benchmark two
 * thirds of the disk's time after a reorganization went to metadata, 42
 * of its 64 reads directory blocks (debugfs icheck), the rest inode
 * tables, read in the order the workload looks names up (git status: path
 * order), which is scattered over the block groups. Read in inode number
 * order they lie in fewer, shorter strides (directories and inodes are
 * placed by group, and ext4 reads ahead in an inode table), and the
 * workload's own lookups then find them cached. So the warm-up reads every
 * directory that holds a relocated file, whole, in the order of the
 * directories' inode numbers, then looks each relocated file up in the
 * order of its own.
 *
 * When: the warm-up is armed at mount (a map that holds files), after a
 * reorganization, and after WARM_IDLE_NS with no read through the mount;
 * it runs at the first read after that which the indirector served from
 * the BOPT (a chain starting), once. Only files the map holds (planned,
 * copied, so weighed worth it: gain.h) are warmed, by their remembered
 * paths; a path that no longer leads to the file costs one failed lookup
 * and is counted missing.
 *
 * Locks: the read path (hy_borg_note_read) touches only atomics, and
 * b->lock when it wakes the thread; the thread takes b->lock to wait and to
 * publish its figures, and opens its own SQLite connection per run. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/borg.h"
#include "hybridfs/engine.h"
#include "hybridfs/indirector.h"
#include "hybridfs/log.h"
#include "hybridfs/map.h"

#include "borg_internal.h"

/* Reads this long apart start a new period: the warm-up is armed again. */
#define WARM_IDLE_NS (60LL * 1000000000LL)
/* At most this many files a warm-up (their metadata, not their data). */
#define WARM_MAX_FILES 200000
/* Directories read whole: up to this size (bytes of directory blocks). */
#define WARM_DIR_MAX (256 * 1024)

static int64_t coarse_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static uint64_t bopt_reads(struct hy_borg *b)
{
	return hy_indirector_bopt_reads(hy_engine_indirector(b->config.engine));
}

void hy_borg_warm_arm(struct hy_borg *b)
{
	atomic_store(&b->warm_armed_at, bopt_reads(b));
	atomic_store(&b->warm_armed, true);
}

void hy_borg_note_read(struct hy_borg *b)
{
	uint64_t reads = bopt_reads(b);
	int64_t now = coarse_ns(), last = atomic_load(&b->warm_last_read_ns);

	/* the shared words are written once a clock tick (a few ms), not
	 * once a read: every request thread reads them */
	if (now != last) {
		uint64_t seen = atomic_exchange(&b->warm_seen_reads, reads);

		atomic_store(&b->warm_last_read_ns, now);
		if (last && now - last >= WARM_IDLE_NS) {
			/* a new period: armed as of the reads before it */
			atomic_store(&b->warm_armed_at, seen);
			atomic_store(&b->warm_armed, true);
		}
	}
	if (!atomic_load(&b->warm_armed) || reads <= atomic_load(&b->warm_armed_at))
		return;
	if (!atomic_exchange(&b->warm_armed, false))
		return; /* another reader woke it */
	pthread_mutex_lock(&b->lock);
	b->warm_wanted = true;
	pthread_cond_broadcast(&b->warm_cond);
	pthread_mutex_unlock(&b->lock);
}

struct warm_file {
	uint64_t dev, ino;
	char *path;
};

static int by_inode(const void *pa, const void *pb)
{
	const struct warm_file *a = pa, *b = pb;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

static bool stopping(struct hy_borg *b)
{
	bool stop;

	pthread_mutex_lock(&b->lock);
	stop = b->stop;
	pthread_mutex_unlock(&b->lock);
	return stop;
}

/* The map's files with their inode and remembered path, in inode order:
 * 0 and *@out (*@n of them; free each path and the array), or a negative
 * errno with @why. */
static int warm_list(struct hy_borg *b, struct warm_file **out, size_t *n, char *why,
		     size_t why_size)
{
	struct hy_map_extent *ext = NULL;
	struct warm_file *files = NULL;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t next = 0, count = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = hy_map_snapshot(b->map, &ext, &next);
	if (rc) {
		snprintf(why, why_size, "out of memory");
		return rc;
	}
	files = calloc(next ? next : 1, sizeof(*files));
	if (!files) {
		free(ext);
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	if (sqlite3_open_v2(b->db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
		    SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "SELECT dev, ino, path FROM files WHERE id = ?1 AND gone_ns IS NULL"
			       " AND path IS NOT NULL",
			       -1, &st, NULL) != SQLITE_OK) {
		snprintf(why, why_size, "state database \"%s\": %s", b->db_path,
			 db ? sqlite3_errmsg(db) : "out of memory");
		rc = -EIO;
		goto out;
	}
	sqlite3_busy_timeout(db, 10000);
	/* the snapshot is sorted by file id: one row per file */
	for (size_t i = 0; i < next && count < WARM_MAX_FILES; i++) {
		const unsigned char *path;

		if (i && ext[i].file_id == ext[i - 1].file_id)
			continue;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, (sqlite3_int64)ext[i].file_id);
		if (sqlite3_step(st) != SQLITE_ROW)
			continue; /* not known (any more) */
		path = sqlite3_column_text(st, 2);
		files[count].dev = (uint64_t)sqlite3_column_int64(st, 0);
		files[count].ino = (uint64_t)sqlite3_column_int64(st, 1);
		files[count].path = path ? strdup((const char *)path) : NULL;
		if (files[count].path)
			count++;
	}
	qsort(files, count, sizeof(*files), by_inode);
	*out = files;
	*n = count;
	files = NULL;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(ext);
	free(files);
	return rc;
}

struct warm_dir {
	uint64_t ino;
	char *path; /* relative to the backing directory; "." for the top */
};

static int by_dir_inode(const void *pa, const void *pb)
{
	const struct warm_dir *a = pa, *b = pb;

	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

static int by_path(const void *pa, const void *pb)
{
	return strcmp(*(char *const *)pa, *(char *const *)pb);
}

/* Reads the directories that hold @files, each whole, in the order of
 * their inode numbers: the count read, or -ENOMEM. */
static int64_t warm_dirs(struct hy_borg *b, const struct warm_file *files, size_t n)
{
	char **names = calloc(n ? n : 1, sizeof(*names));
	struct warm_dir *dirs = calloc(n ? n : 1, sizeof(*dirs));
	size_t nnames = 0, ndirs = 0;
	int64_t done = 0;

	if (!names || !dirs) {
		free(names);
		free(dirs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const char *slash = strrchr(files[i].path, '/');

		names[nnames] = slash ? strndup(files[i].path, (size_t)(slash - files[i].path))
				      : strdup(".");
		if (names[nnames])
			nnames++;
	}
	qsort(names, nnames, sizeof(*names), by_path);
	for (size_t i = 0; i < nnames; i++) {
		struct stat st;

		/* a directory larger than WARM_DIR_MAX is left to the lookups:
		 * they read a few of its index blocks, a listing all of it */
		if ((i && strcmp(names[i], names[i - 1]) == 0) ||
		    fstatat(b->config.root_fd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(st.st_mode) || st.st_size > WARM_DIR_MAX)
			continue;
		dirs[ndirs].ino = (uint64_t)st.st_ino;
		dirs[ndirs].path = names[i];
		ndirs++;
	}
	qsort(dirs, ndirs, sizeof(*dirs), by_dir_inode);
	for (size_t i = 0; i < ndirs && !stopping(b); i++) {
		int fd = openat(b->config.root_fd, dirs[i].path,
				O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

		if (!d) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		while (readdir(d))
			; /* every block of it */
		closedir(d);
		done++;
	}
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	free(dirs);
	return done;
}

/* One warm-up: the metadata of the map's files, in inode order. */
static void warm_once(struct hy_borg *b)
{
	struct warm_file *files;
	struct timespec t0;
	uint64_t found = 0, missing = 0;
	int64_t dirs;
	char why[512] = "";
	size_t n;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = warm_list(b, &files, &n, why, sizeof(why));
	if (rc) {
		hy_log(LOG_WARNING, "warm-up: the relocated files cannot be listed: %s", why);
		return;
	}
	dirs = warm_dirs(b, files, n);
	if (dirs < 0)
		hy_log(LOG_WARNING, "warm-up: out of memory listing directories; files only");
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		/* a lookup from the backing directory: the directories on the
		 * way, then the inode. Not following a last symlink: its own
		 * inode is what a lookup reads */
		if ((i & 255) == 0 && stopping(b)) {
			n = i;
			break;
		}
		if (fstatat(b->config.root_fd, files[i].path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (uint64_t)st.st_ino == files[i].ino)
			found++;
		else
			missing++;
	}
	for (size_t i = 0; i < n; i++)
		free(files[i].path);
	free(files);
	pthread_mutex_lock(&b->lock);
	b->warm.runs++;
	b->warm.files += found;
	b->warm.missing += missing;
	b->warm.directories += dirs > 0 ? (uint64_t)dirs : 0;
	b->warm.last_seconds = seconds_since(&t0);
	pthread_mutex_unlock(&b->lock);
	hy_log(LOG_NOTICE,
	       "warm-up: %" PRId64 " directories and the inodes of %" PRIu64
	       " relocated files read in inode order (%" PRIu64 " not where they were), %.2f s",
	       dirs > 0 ? dirs : 0, found, missing, seconds_since(&t0));
}

void *hy_borg_warm_main(void *arg)
{
	struct hy_borg *b = arg;

	pthread_setname_np(pthread_self(), "hy-warm");
	pthread_mutex_lock(&b->lock);
	for (;;) {
		while (!b->stop && !b->warm_wanted)
			pthread_cond_wait(&b->warm_cond, &b->lock);
		if (b->stop)
			break;
		b->warm_wanted = false;
		pthread_mutex_unlock(&b->lock);
		warm_once(b);
		pthread_mutex_lock(&b->lock);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

void hy_borg_get_warm(struct hy_borg *b, struct hy_borg_warm *out)
{
	pthread_mutex_lock(&b->lock);
	*out = b->warm;
	pthread_mutex_unlock(&b->lock);
	out->armed = atomic_load(&b->warm_armed);
}
