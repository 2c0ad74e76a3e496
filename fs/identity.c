/* identity.c - see include/hybridfs/identity.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/identity.h"
#include "hybridfs/log.h"

/* A new file's row, pending until the transaction that carries it
 * commits, so that an open in between finds its id here rather than
 * making a second one. */
struct pending_file {
	struct pending_file *next;
	uint64_t id;
	uint64_t dev, ino;
	int64_t birth_ns;
	char *name;
	bool full; /* name is the path relative to the backing directory */
	int64_t seen_ns;
	bool in_flight; /* being inserted by the writer now */
};

/* A file whose last name went with no handle open (hy_identity_file_gone),
 * to be marked in its row. */
struct gone_file {
	struct gone_file *next;
	uint64_t id;
	int64_t ns;
};

/* A file renamed through the mount (hy_identity_file_moved): its row's
 * path, to be set, so that BORG finds it at its new name without a walk.
 * Or a folder renamed (hy_identity_dir_moved, @from set): the paths of
 * the files below @from, of ids under @below_id (the files known at the
 * rename: one seen later under a folder made again at the old name is
 * not moved with the old one), change their prefix @from to @path. */
struct moved_file {
	struct moved_file *next;
	uint64_t id;
	char *path;
	char *from;
	uint64_t below_id;
};

struct hy_identity {
	_Atomic uint64_t next_file_id;
	void (*kick)(void *arg);
	void *kick_arg;

	pthread_mutex_t read_lock; /* protects read_db, its statements, the making of ids */
	sqlite3 *read_db;
	sqlite3_stmt *select_file, *select_removed;

	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t batch_cond;
	struct pending_file *files;
	struct gone_file *gone;	  /* marks still to be written */
	struct moved_file *moved; /* new paths still to be written, newest first */
	uint64_t rows_queued;	  /* file rows and renames ever queued */
	uint64_t rows_written;	  /* ... of which committed (a prefix) */
	uint64_t batches_started, batches_done;
	bool last_failed; /* the last transaction did not commit */
	int last_error;	  /* ... and why, a negative errno */
	bool writer_failed;
	uint64_t files_seen;

	/* the writer thread's own: the batch in its transaction now */
	struct gone_file *batch_gone;
	struct moved_file *batch_moved; /* oldest first */
	uint64_t batch_rows;
	sqlite3 *db; /* the writer's connection, borrowed */
	sqlite3_stmt *insert_file, *set_path, *move_dir, *mark_gone, *prune_files;

	/* Durability of the file rows, for hy_identity_sync_file(): the
	 * writer commits with synchronous=NORMAL (the WAL is not synced at a
	 * commit), so the cache's fsync syncs it when its file's row may not
	 * be on the disk yet. durable_lock serializes those syncs (held
	 * across one fdatasync, never with lock). Every id below written_below
	 * has its row committed (ids are made and queued in order under lock,
	 * and a transaction carries every row queued before it began), every
	 * id below durable_below has it on the disk too; durable_below is read
	 * without a lock, so that an fsync of a file whose row is durable
	 * takes none. wal_syncs counts the syncs made. */
	pthread_mutex_t durable_lock;
	uint64_t batch_below, written_below; /* lock */
	_Atomic uint64_t durable_below;
	_Atomic uint64_t wal_syncs;
	char *wal_path, *db_path;
	bool dir_synced;
	char *backing; /* the backing directory (mount_info), for relative paths */
};

static int64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t birth_of(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &stx) < 0 || !(stx.stx_mask & STATX_BTIME))
		return 0; /* no birth time: an inode number's reuse goes unnoticed */
	return (int64_t)stx.stx_btime.tv_sec * 1000000000LL + stx.stx_btime.tv_nsec;
}

/* What a new file's row keeps as its path: where @fd is relative to the
 * backing directory (what /proc says of the descriptor, the moment the id
 * is made: one readlink, the kernel's walk up the dentries, never ours),
 * so that BORG can find the file again without a walk of the tree and
 * the plans, traces and explain name it unambiguously; a hard-linked file
 * is named by the link the kernel shows. @name alone when that cannot be
 * told (another filesystem's view, the file already removed), and then
 * *@full is false. NULL when out of memory or without a name. */
static char *relative_path(const struct hy_identity *idt, int fd, const char *name, bool *full)
{
	char link[64], target[4096];
	size_t len = idt->backing ? strlen(idt->backing) : 0;
	ssize_t n = -1;

	if (len && fd >= 0) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
	}
	if (n > (ssize_t)len + 1 && strncmp(target, idt->backing, len) == 0 && target[len] == '/') {
		target[n] = '\0';
		if (!(n > 10 && strcmp(target + n - 10, " (deleted)") == 0)) {
			if (full)
				*full = true;
			return strdup(target + len + 1);
		}
	}
	if (full)
		*full = false;
	return name ? strdup(name) : NULL;
}

char *hy_identity_path_of(struct hy_identity *idt, int fd)
{
	return idt && fd >= 0 ? relative_path(idt, fd, NULL, NULL) : NULL;
}

/* The id of the file (@st, @birth) if it has one: pending (queued, not yet
 * committed) or in the database. read_lock held: a row leaves the pending
 * list only once it is committed, so a file is in one or the other, never
 * between the two. 0 with *@id 0 when it has none; -EIO (logged) when the
 * database cannot say, and then no id may be made for it: the file may
 * have one already. */
static int lookup_file(struct hy_identity *idt, const struct stat *st, int64_t birth, uint64_t *id,
		       bool *base_name)
{
	struct pending_file *pf;
	int rc;

	*id = 0;
	if (base_name)
		*base_name = false;
	pthread_mutex_lock(&idt->lock);
	for (pf = idt->files; pf; pf = pf->next)
		if (pf->ino == st->st_ino && pf->dev == st->st_dev && pf->birth_ns == birth) {
			*id = pf->id;
			break;
		}
	pthread_mutex_unlock(&idt->lock);
	if (*id)
		return 0;
	sqlite3_bind_int64(idt->select_file, 1, (int64_t)st->st_dev);
	sqlite3_bind_int64(idt->select_file, 2, (int64_t)st->st_ino);
	sqlite3_bind_int64(idt->select_file, 3, birth);
	rc = sqlite3_step(idt->select_file);
	if (rc == SQLITE_ROW) {
		*id = (uint64_t)sqlite3_column_int64(idt->select_file, 0);
		if (base_name)
			*base_name = sqlite3_column_int(idt->select_file, 1) == 0;
	} else if (rc != SQLITE_DONE)
		hy_log(LOG_ERR, "profiler: looking up the file id of inode %llu: %s",
		       (unsigned long long)st->st_ino, sqlite3_errmsg(idt->read_db));
	sqlite3_reset(idt->select_file);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

int hy_identity_file_id(struct hy_identity *idt, int fd, const struct stat *st, const char *name,
			uint64_t *id)
{
	int64_t birth = birth_of(fd);
	struct pending_file *pf;
	bool base_name = false;
	int rc;

	/* serialized by read_lock, so that two opens can never make two ids
	 * for one file; a new id's path is read from /proc under it: one
	 * readlink, once per file */
	pthread_mutex_lock(&idt->read_lock);
	rc = lookup_file(idt, st, birth, id, &base_name);
	if (rc == 0 && !*id) {
		pf = calloc(1, sizeof(*pf));
		if (!pf) {
			rc = -ENOMEM;
		} else {
			pf->dev = st->st_dev;
			pf->ino = st->st_ino;
			pf->birth_ns = birth;
			pf->name = relative_path(idt, fd, name, &pf->full);
			pf->seen_ns = clock_ns(CLOCK_REALTIME);
			pthread_mutex_lock(&idt->lock);
			pf->id = *id = atomic_fetch_add(&idt->next_file_id, 1);
			pf->next = idt->files;
			idt->files = pf;
			idt->files_seen++;
			idt->rows_queued++;
			pthread_mutex_unlock(&idt->lock);
		}
	}
	pthread_mutex_unlock(&idt->read_lock);
	if (rc)
		*id = 0;
	else if (base_name)
		/* a row of before schema 10, or made when /proc could not
		 * tell: its path follows, once */
		hy_identity_file_moved(idt, *id, fd);
	return rc;
}

uint64_t hy_identity_find_file(struct hy_identity *idt, int fd, const struct stat *st)
{
	uint64_t id;

	pthread_mutex_lock(&idt->read_lock);
	if (lookup_file(idt, st, birth_of(fd), &id, NULL) < 0)
		id = 0;
	pthread_mutex_unlock(&idt->read_lock);
	return id;
}

uint64_t hy_identity_find_removed(struct hy_identity *idt, const char *path)
{
	uint64_t id = 0;

	if (!idt || !path)
		return 0;
	pthread_mutex_lock(&idt->read_lock);
	sqlite3_bind_text(idt->select_removed, 1, path, -1, SQLITE_STATIC);
	if (sqlite3_step(idt->select_removed) == SQLITE_ROW)
		id = (uint64_t)sqlite3_column_int64(idt->select_removed, 0);
	sqlite3_reset(idt->select_removed);
	sqlite3_clear_bindings(idt->select_removed);
	pthread_mutex_unlock(&idt->read_lock);
	return id;
}

void hy_identity_file_gone(struct hy_identity *idt, uint64_t file_id)
{
	struct gone_file *g;

	if (!idt || !file_id)
		return;
	g = malloc(sizeof(*g));
	if (!g) {
		/* the row stays: it costs a row, never data */
		hy_log(LOG_WARNING,
		       "profiler: file %" PRIu64 " is gone, but out of memory to say so", file_id);
		return;
	}
	g->id = file_id;
	g->ns = clock_ns(CLOCK_REALTIME);
	pthread_mutex_lock(&idt->lock);
	g->next = idt->gone;
	idt->gone = g;
	pthread_mutex_unlock(&idt->lock);
}

void hy_identity_file_moved(struct hy_identity *idt, uint64_t file_id, int fd)
{
	struct moved_file *m;

	if (!idt || !file_id || fd < 0)
		return;
	m = calloc(1, sizeof(*m));
	if (m)
		m->path = relative_path(idt, fd, NULL, NULL);
	if (!m || !m->path) {
		/* the row keeps its old path: BORG finds the file by a walk */
		free(m);
		return;
	}
	m->id = file_id;
	pthread_mutex_lock(&idt->lock);
	m->next = idt->moved;
	idt->moved = m;
	idt->rows_queued++; /* a sync waits for it like for a new row */
	pthread_mutex_unlock(&idt->lock);
}

void hy_identity_dir_moved(struct hy_identity *idt, const char *from, const char *to)
{
	struct moved_file *m;

	if (!idt || !from || !to || !*from || !*to || strcmp(from, to) == 0)
		return;
	m = calloc(1, sizeof(*m));
	if (m) {
		m->path = strdup(to);
		m->from = strdup(from);
	}
	if (!m || !m->path || !m->from) {
		hy_log(LOG_WARNING,
		       "profiler: folder \"%s\" renamed to \"%s\", but out of memory to move "
		       "its files' paths (BORG finds them by a walk)",
		       from, to);
		if (m) {
			free(m->path);
			free(m->from);
		}
		free(m);
		return;
	}
	m->below_id = atomic_load(&idt->next_file_id);
	pthread_mutex_lock(&idt->lock);
	m->next = idt->moved;
	idt->moved = m;
	idt->rows_queued++;
	pthread_mutex_unlock(&idt->lock);
}

static struct moved_file *moved_reverse(struct moved_file *m)
{
	struct moved_file *out = NULL, *next;

	for (; m; m = next) {
		next = m->next;
		m->next = out;
		out = m;
	}
	return out;
}

static void moved_free(struct moved_file *m)
{
	struct moved_file *next;

	for (; m; m = next) {
		next = m->next;
		free(m->path);
		free(m->from);
		free(m);
	}
}

static void gone_free(struct gone_file *g)
{
	struct gone_file *next;

	for (; g; g = next) {
		next = g->next;
		free(g);
	}
}

/* ---- the writer's side -------------------------------------------------- */

static int step_done(sqlite3 *db, sqlite3_stmt *stmt)
{
	int rc = sqlite3_step(stmt);

	sqlite3_reset(stmt);
	if (rc != SQLITE_DONE) {
		hy_log(LOG_ERR, "profiler: insert: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	return 0;
}

void hy_identity_batch_begin(struct hy_identity *idt)
{
	pthread_mutex_lock(&idt->lock);
	idt->batch_gone = idt->gone;
	idt->gone = NULL;
	idt->batch_moved = moved_reverse(idt->moved); /* oldest first: the last rename wins */
	idt->moved = NULL;
	for (struct pending_file *pf = idt->files; pf; pf = pf->next)
		pf->in_flight = true;
	idt->batch_rows = idt->rows_queued; /* every row queued so far is in it */
	idt->batch_below = atomic_load(&idt->next_file_id);
	idt->batches_started++;
	pthread_mutex_unlock(&idt->lock);
}

unsigned hy_identity_batch_insert(struct hy_identity *idt, size_t *carried)
{
	struct pending_file *pf;
	unsigned failed = 0;

	/* the in-flight files stay listed (and findable) until the commit;
	 * files made since are put before them and are not in flight */
	pthread_mutex_lock(&idt->lock);
	pf = idt->files;
	pthread_mutex_unlock(&idt->lock);
	for (; pf; pf = pf->next) {
		sqlite3_stmt *st = idt->insert_file;

		if (!pf->in_flight)
			continue;
		sqlite3_bind_int64(st, 1, (int64_t)pf->id);
		sqlite3_bind_int64(st, 2, (int64_t)pf->dev);
		sqlite3_bind_int64(st, 3, (int64_t)pf->ino);
		sqlite3_bind_int64(st, 4, pf->birth_ns);
		if (pf->name)
			sqlite3_bind_text(st, 5, pf->name, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 5);
		sqlite3_bind_int64(st, 6, pf->seen_ns);
		sqlite3_bind_int(st, 7, pf->full);
		if (step_done(idt->db, st))
			failed++;
		(*carried)++;
	}
	return failed;
}

unsigned hy_identity_batch_paths(struct hy_identity *idt)
{
	unsigned failed = 0;

	for (struct moved_file *mv = idt->batch_moved; mv; mv = mv->next) {
		if (mv->from) {
			/* a range of the path index: the files below the folder */
			sqlite3_bind_text(idt->move_dir, 1, mv->from, -1, SQLITE_STATIC);
			sqlite3_bind_text(idt->move_dir, 2, mv->path, -1, SQLITE_STATIC);
			sqlite3_bind_int64(idt->move_dir, 3, (int64_t)mv->below_id);
			if (step_done(idt->db, idt->move_dir))
				failed++;
			continue;
		}
		sqlite3_bind_int64(idt->set_path, 1, (int64_t)mv->id);
		sqlite3_bind_text(idt->set_path, 2, mv->path, -1, SQLITE_STATIC);
		if (step_done(idt->db, idt->set_path))
			failed++;
	}
	return failed;
}

bool hy_identity_batch_marks(struct hy_identity *idt)
{
	bool all = true;

	for (struct gone_file *g = idt->batch_gone; g; g = g->next) {
		sqlite3_bind_int64(idt->mark_gone, 1, (int64_t)g->id);
		sqlite3_bind_int64(idt->mark_gone, 2, g->ns);
		if (step_done(idt->db, idt->mark_gone))
			all = false; /* kept for the next transaction */
	}
	return all;
}

void hy_identity_batch_end(struct hy_identity *idt, bool committed, bool marked, int error)
{
	struct gone_file *gone = idt->batch_gone;
	struct moved_file *moved = idt->batch_moved;
	struct pending_file *pf;

	idt->batch_gone = NULL;
	idt->batch_moved = NULL;
	pthread_mutex_lock(&idt->lock);
	if (!committed) {
		/* retried by the next transaction (INSERT OR IGNORE: a row that
		 * did get in is not doubled) */
		for (pf = idt->files; pf; pf = pf->next)
			pf->in_flight = false;
		idt->last_failed = true;
		idt->last_error = error ? error : -EIO;
	} else {
		idt->last_failed = false;
		for (struct pending_file **link = &idt->files; *link;) {
			pf = *link;
			if (pf->in_flight) {
				*link = pf->next;
				free(pf->name);
				free(pf);
			} else {
				link = &pf->next;
			}
		}
		idt->rows_written = idt->batch_rows;
		if (idt->batch_below > idt->written_below)
			idt->written_below = idt->batch_below;
	}
	idt->batches_done++;
	if (moved && !committed) {
		/* retried, behind the renames queued since (newest first) */
		struct moved_file **tail = &idt->moved;

		while (*tail)
			tail = &(*tail)->next;
		*tail = moved_reverse(moved);
		moved = NULL;
	}
	if (gone && !marked) {
		struct gone_file *g;

		for (g = gone; g->next; g = g->next)
			;
		g->next = idt->gone;
		idt->gone = gone;
		gone = NULL;
	}
	pthread_cond_broadcast(&idt->batch_cond);
	pthread_mutex_unlock(&idt->lock);
	gone_free(gone);
	moved_free(moved);
}

void hy_identity_writer_failed(struct hy_identity *idt)
{
	pthread_mutex_lock(&idt->lock);
	idt->writer_failed = true;
	pthread_cond_broadcast(&idt->batch_cond);
	pthread_mutex_unlock(&idt->lock);
}

void hy_identity_rows(struct hy_identity *idt, uint64_t *queued, uint64_t *written)
{
	pthread_mutex_lock(&idt->lock);
	*queued = idt->rows_queued;
	*written = idt->rows_written;
	pthread_mutex_unlock(&idt->lock);
}

size_t hy_identity_pending(struct hy_identity *idt)
{
	size_t n = 0;

	pthread_mutex_lock(&idt->lock);
	for (struct pending_file *pf = idt->files; pf; pf = pf->next)
		n++;
	pthread_mutex_unlock(&idt->lock);
	return n;
}

uint64_t hy_identity_files_seen(struct hy_identity *idt)
{
	uint64_t n;

	pthread_mutex_lock(&idt->lock);
	n = idt->files_seen;
	pthread_mutex_unlock(&idt->lock);
	return n;
}

uint64_t hy_identity_prune(struct hy_identity *idt, int64_t oldest_rowid)
{
	sqlite3_bind_int64(idt->prune_files, 1, oldest_rowid);
	if (step_done(idt->db, idt->prune_files) < 0)
		return 0;
	return (uint64_t)sqlite3_changes(idt->db);
}

/* ---- durability ---------------------------------------------------------- */

/* fdatasync of the WAL, where the commits are (synchronous=NORMAL leaves
 * them in the page cache); the database file itself when there is no WAL
 * (a checkpoint has synced it). The folder once, for the WAL's name.
 * durable_lock held. */
static int sync_wal(struct hy_identity *idt)
{
	const char *path = idt->wal_path;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0 && errno == ENOENT) {
		path = idt->db_path;
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		rc = -errno;
		hy_log(LOG_ERR, "profiler: \"%s\": cannot open it to sync it: %s", path,
		       strerror(-rc));
		return rc;
	}
	if (fdatasync(fd) < 0) {
		rc = -errno;
		hy_log(LOG_ERR, "profiler: \"%s\": sync: %s", path, strerror(-rc));
	}
	close(fd);
	atomic_fetch_add(&idt->wal_syncs, 1);
	if (rc == 0 && !idt->dir_synced) {
		char dir[4096];
		const char *slash = strrchr(idt->db_path, '/');

		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - idt->db_path) : 1,
			 slash ? idt->db_path : ".");
		fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fsync(fd) < 0) {
			rc = -errno;
			hy_log(LOG_ERR, "profiler: state folder \"%s\": sync: %s", dir,
			       strerror(-rc));
		} else {
			idt->dir_synced = true;
		}
		if (fd >= 0)
			close(fd);
	}
	return rc;
}

int hy_identity_sync_file(struct hy_identity *idt, uint64_t file_id)
{
	uint64_t first, written;
	bool kick;
	int rc = 0;

	/* the common case, every fsync of a file after its first: no lock,
	 * no statement, no system call */
	if (file_id < atomic_load(&idt->durable_below))
		return 0;
	/* an id this identity never made (none should come) has no row to
	 * wait for: every row made so far is what can be made durable */
	if (file_id >= atomic_load(&idt->next_file_id))
		file_id = atomic_load(&idt->next_file_id) - 1;
	pthread_mutex_lock(&idt->lock);
	first = idt->batches_started + 1;
	kick = idt->written_below <= file_id;
	pthread_mutex_unlock(&idt->lock);
	if (kick && idt->kick)
		idt->kick(idt->kick_arg); /* takes the writer's lock: not under ours */
	pthread_mutex_lock(&idt->lock);
	for (;;) {
		if (idt->writer_failed) {
			rc = -EIO;
			break;
		}
		if (idt->written_below > file_id)
			break;
		if (idt->batches_done >= first && idt->last_failed) {
			rc = idt->last_error;
			break;
		}
		pthread_cond_wait(&idt->batch_cond, &idt->lock);
	}
	written = idt->written_below;
	pthread_mutex_unlock(&idt->lock);
	if (rc)
		return rc;
	/* one sync covers every row committed before it: the first fsyncs of
	 * a batch of new files share it */
	pthread_mutex_lock(&idt->durable_lock);
	if (atomic_load(&idt->durable_below) <= file_id) {
		rc = sync_wal(idt);
		if (rc == 0 && atomic_load(&idt->durable_below) < written)
			atomic_store(&idt->durable_below, written);
	}
	pthread_mutex_unlock(&idt->durable_lock);
	return rc;
}

uint64_t hy_identity_wal_syncs(struct hy_identity *idt)
{
	return atomic_load(&idt->wal_syncs);
}

/* ---- life cycle ----------------------------------------------------------- */

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **stmt)
{
	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, NULL) != SQLITE_OK) {
		hy_log(LOG_ERR, "profiler: preparing \"%.40s...\": %s", sql, sqlite3_errmsg(db));
		return -EIO;
	}
	return 0;
}

int hy_identity_new(const struct hy_identity_config *config, struct hy_identity **out, char *why,
		    size_t why_size)
{
	struct hy_identity *idt = calloc(1, sizeof(*idt));
	sqlite3_stmt *q;
	int64_t files = -1;

	*out = NULL;
	if (!idt)
		return -ENOMEM;
	pthread_mutex_init(&idt->read_lock, NULL);
	pthread_mutex_init(&idt->lock, NULL);
	pthread_mutex_init(&idt->durable_lock, NULL);
	pthread_cond_init(&idt->batch_cond, NULL);
	idt->db = config->writer_db;
	idt->kick = config->kick;
	idt->kick_arg = config->arg;
	idt->db_path = strdup(config->db_path);
	if (!idt->db_path || asprintf(&idt->wal_path, "%s-wal", config->db_path) < 0) {
		idt->wal_path = NULL;
		snprintf(why, why_size, "profiler: out of memory");
		hy_identity_free(idt);
		return -ENOMEM;
	}
	if (sqlite3_prepare_v2(idt->db, "SELECT coalesce(max(id), 0) FROM files", -1, &q, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(q) == SQLITE_ROW)
			files = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
	}
	if (files < 0) {
		snprintf(why, why_size, "profiler: database \"%s\" lacks the access log tables: %s",
			 config->db_path, sqlite3_errmsg(idt->db));
		hy_identity_free(idt);
		return -EUCLEAN;
	}
	atomic_store(&idt->next_file_id, (uint64_t)files + 1);
	/* the rows of before this mount are committed; a crash of the last
	 * one may have left the newest in a WAL not yet on the disk, which
	 * this one sync covers: after it, an fsync of a file known before
	 * the mount never waits for the identity (a failure leaves them to
	 * their first fsync) */
	idt->written_below = (uint64_t)files + 1;
	if (sync_wal(idt) == 0)
		atomic_store(&idt->durable_below, (uint64_t)files + 1);
	if (sqlite3_prepare_v2(idt->db, "SELECT value FROM mount_info WHERE key = 'backing'", -1,
			       &q, NULL) == SQLITE_OK) {
		if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
			/* kept as the daemon resolved it (hy_options_check): a
			 * realpath() now would look it up through the mount
			 * when the mount covers the directory (in place) */
			idt->backing = strdup((const char *)sqlite3_column_text(q, 0));
		sqlite3_finalize(q);
	}
	if (sqlite3_open_v2(config->db_path, &idt->read_db,
			    SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(why, why_size, "profiler: database \"%s\": %s", config->db_path,
			 idt->read_db ? sqlite3_errmsg(idt->read_db) : "out of memory");
		hy_identity_free(idt);
		return -EIO;
	}
	sqlite3_busy_timeout(idt->read_db, 10000);
	if (prepare(idt->db,
		    "INSERT OR IGNORE INTO files (id, dev, ino, birth_ns, path, first_seen_ns,"
		    " path_full) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
		    &idt->insert_file) ||
	    prepare(idt->db, "UPDATE files SET path = ?2, path_full = 1 WHERE id = ?1",
		    &idt->set_path) ||
	    /* '0' follows '/': the range is every path below the folder */
	    prepare(idt->db,
		    "UPDATE files SET path = ?2 || substr(path, length(?1) + 1)"
		    " WHERE path > ?1 || '/' AND path < ?1 || '0' AND id < ?3"
		    " AND gone_ns IS NULL",
		    &idt->move_dir) ||
	    prepare(idt->db,
		    "UPDATE files SET gone_ns = ?2,"
		    " gone_rowid = (SELECT coalesce(max(rowid), 0) FROM access_log) WHERE id = ?1",
		    &idt->mark_gone) ||
	    prepare(idt->db,
		    "DELETE FROM files WHERE gone_rowid IS NOT NULL AND gone_rowid < ?1"
		    " AND id < (SELECT max(id) FROM files)"
		    " AND NOT EXISTS (SELECT 1 FROM bopt_map m WHERE m.file_id = files.id)"
		    " AND NOT EXISTS (SELECT 1 FROM graph_vertices g WHERE g.file_id = files.id)"
		    " AND id NOT IN (SELECT file_id FROM bopt_plan_ranges)",
		    &idt->prune_files) ||
	    prepare(idt->read_db,
		    "SELECT id, path_full FROM files WHERE dev = ?1 AND ino = ?2 AND birth_ns = ?3",
		    &idt->select_file) ||
	    prepare(idt->read_db,
		    "SELECT id FROM files WHERE path = ?1 AND gone_ns IS NOT NULL"
		    " ORDER BY gone_ns DESC LIMIT 1",
		    &idt->select_removed)) {
		snprintf(why, why_size, "profiler: database \"%s\": %s", config->db_path,
			 sqlite3_errmsg(idt->db));
		hy_identity_free(idt);
		return -EIO;
	}
	*out = idt;
	return 0;
}

void hy_identity_free(struct hy_identity *idt)
{
	if (!idt)
		return;
	sqlite3_finalize(idt->insert_file);
	sqlite3_finalize(idt->set_path);
	sqlite3_finalize(idt->move_dir);
	sqlite3_finalize(idt->mark_gone);
	sqlite3_finalize(idt->prune_files);
	sqlite3_finalize(idt->select_file);
	sqlite3_finalize(idt->select_removed);
	if (idt->read_db)
		sqlite3_close(idt->read_db);
	while (idt->files) {
		struct pending_file *next = idt->files->next;

		free(idt->files->name);
		free(idt->files);
		idt->files = next;
	}
	gone_free(idt->gone);
	gone_free(idt->batch_gone);
	moved_free(idt->moved);
	moved_free(idt->batch_moved);
	pthread_mutex_destroy(&idt->read_lock);
	pthread_mutex_destroy(&idt->lock);
	pthread_mutex_destroy(&idt->durable_lock);
	pthread_cond_destroy(&idt->batch_cond);
	free(idt->wal_path);
	free(idt->db_path);
	free(idt->backing);
	free(idt);
}
