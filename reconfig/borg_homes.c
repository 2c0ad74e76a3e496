/* borg_homes.c - BORG's search for home files: by the path the files
 * table remembers when its dev/ino and birth still match, else by a walk
 * of the backing tree; see include/hybridfs/borg.h (hy_borg_open_homes)
 * and borg_internal.h. */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/borg.h"
#include "hybridfs/log.h"
#include "hybridfs/state.h"

#include "borg_internal.h"

/* ---- finding home files --------------------------------------------- */

/* nftw() has no argument for its callback; one search runs at a time
 * (search_lock: the reconfigurator, the cleaner's flush and the sweep of
 * removed files before a reorganization may each search). */
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
 * same dev, ino and birth, as hy_borg_homes_open_home() checks again. */
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
	       "kept in \"%s\": %s (the next search walks again)",
	       n, sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
}

/* The files of @ids (sorted, unique) with their identity from the files
 * table and their place in the backing tree: first where the files table
 * remembers them (the path the profiler saw when it gave the id, one
 * statx each), then, for those not there (renamed since, or rows from
 * before paths were kept), by one walk of the tree. So a flush costs what
 * its dirty files cost, not what the tree does. */
int hy_borg_homes_find_files(const struct place *b, sqlite3 *db, const uint64_t *ids, size_t n,
			     struct search *s, char *why, size_t why_size)
{
	sqlite3_stmt *st;
	char root[64];
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
	/* The walk goes through the root's descriptor, not the backing
	 * directory's path: a mount in place covers that path, and a walk of
	 * it would go through the mount itself. The "/." has lstat() follow
	 * the /proc link to the descriptor's folder (nftw() drops a trailing
	 * slash, and would see the link). */
	snprintf(root, sizeof(root), "/proc/self/fd/%d/.", b->root_fd);
	s->backing_len = strlen(root);
	if (b->state_dir && stat(b->state_dir, &sst) == 0) {
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
	if (nftw(root, visit, 64, FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL) < 0) {
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

void hy_borg_homes_search_free(struct search *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->w[i].path);
		if (s->w[i].fd >= 0)
			close(s->w[i].fd);
	}
	free(s->w);
	memset(s, 0, sizeof(*s));
}

struct wanted *hy_borg_homes_wanted_by_id(const struct search *s, uint64_t file_id)
{
	struct wanted key = {.file_id = file_id};

	return bsearch(&key, s->w, s->n, sizeof(*s->w), by_id);
}

/* Opens @w's file read-only and checks it is the same file (dev, ino and
 * birth): -ENOENT when it is gone or another. */
int hy_borg_homes_open_home(const struct place *b, const struct wanted *w, int access, int *fd_out)
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
	rc = hy_borg_homes_find_files(&p, db, ids, n, &files, why, why_size);
	sqlite3_close(db);
	for (size_t i = 0; i < n && rc == 0; i++)
		if (hy_borg_homes_open_home(&p, hy_borg_homes_wanted_by_id(&files, ids[i]), O_RDWR,
					    &fds[i]) < 0)
			fds[i] = -1;
	hy_borg_homes_search_free(&files);
	return rc;
}
