/* profiler.c - see include/hybridfs/profiler.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/log.h"
#include "hybridfs/identity.h"
#include "hybridfs/profiler.h"
#include "hybridfs/reca.h"
#include "hybridfs/ring.h"
#include "hybridfs/state.h"

#define BATCH		    4096   /* records popped at a time */
#define MAX_PER_TRANSACTION 262144 /* so one commit never grows without bound */

/* Process rows the writer thread has still to insert. */
struct pending_process {
	struct pending_process *next;
	uint32_t id;
	pid_t pid;
	char comm[16];
	char *exe;
	int64_t seen_ns;
};

/* Processes of this mount found dead at two prunes in a row: each with
 * access_log's last rowid once all its records were in (the ring empty),
 * INT64_MIN for one that made no request; its row goes once the log's
 * oldest row is past that. */
struct dead_process {
	uint32_t id;
	int64_t last_rowid;
};

struct dead_processes {
	struct dead_process *v;
	size_t n, cap;
};

struct hy_profiler {
	struct hy_ring *ring;
	int64_t max_age_s, max_rows;
	/* ReCA (reca.h, borrowed): the process table, whose process ids the
	 * log's records name; and the mount's class mix, fed by the writer */
	struct hy_reca *reca;

	/* file ids (identity.h): owned; its rows ride in the writer's
	 * transactions */
	struct hy_identity *identity;
	atomic_bool kick; /* a producer has asked the writer to hurry */

	pthread_mutex_t queue_lock; /* protects everything below */
	pthread_cond_t writer_cond, sync_cond;
	struct pending_process *processes;
	bool stopping, wake, failed;
	bool prune_requested;  /* hy_profiler_prune() waits for it to clear */
	uint64_t committed;    /* ring records popped and committed */
	uint64_t rows_queued;  /* pending process rows ever queued */
	uint64_t rows_written; /* ... of which committed (a prefix: every
				* transaction carries every row still pending) */
	int rows_error;	       /* why the last failed transaction failed, a negative errno */
	uint64_t flushes_started, flushes_done; /* transactions begun and ended */
	bool last_failed;			/* the last transaction did not commit */
	uint64_t written, pruned, batches, errors, processes_seen;

	/* the writer thread's own */
	pthread_t writer;
	bool writer_started;
	sqlite3 *db;
	sqlite3_stmt *insert_record, *insert_process, *prune_age, *prune_rows;
	sqlite3_stmt *log_min, *log_max, *prune_process, *prune_old_processes;
	/* processes rows: those of earlier mounts (ids below first_process_id)
	 * once the log has nothing left from before this mount (start_rowid);
	 * this mount's dead ones through @dead */
	uint32_t first_process_id;
	int64_t start_rowid;
	bool old_processes_pruned;
	struct dead_processes dead;
	int64_t reap_rowid;   /* the log's last rowid, for the processes reaped now */
	uint64_t rows_pruned; /* files and processes rows */
	int64_t pruned_at_ns;
	bool commit_failing;  /* the last commit failed */
	uint64_t commit_lost; /* records rolled back since commits began to fail */
};

static int64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- processes --------------------------------------------------------- */

static char *read_exe(pid_t pid)
{
	char path[64], target[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = pid > 0 ? readlink(path, target, sizeof(target) - 1) : -1;
	if (n <= 0)
		return NULL; /* a kernel thread, gone, or another user's */
	target[n] = '\0';
	return strdup(target);
}

/* ReCA's process table made process @id (hy_reca_set_process_ids): its row
 * is queued for the writer. No lock of ReCA's is held. */
static void queue_process(void *arg, uint32_t id, pid_t pid, const char comm[16])
{
	struct hy_profiler *p = arg;
	struct pending_process *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return; /* the row is lost, the records still name the id */
	pp->id = id;
	pp->pid = pid;
	memcpy(pp->comm, comm, sizeof(pp->comm));
	pp->exe = read_exe(pid);
	pp->seen_ns = clock_ns(CLOCK_REALTIME);
	pthread_mutex_lock(&p->queue_lock);
	pp->next = p->processes;
	p->processes = pp;
	p->processes_seen++;
	p->rows_queued++;
	pthread_mutex_unlock(&p->queue_lock);
}

/* ---- files ------------------------------------------------------------- */

struct hy_identity *hy_profiler_identity(struct hy_profiler *p)
{
	return p ? p->identity : NULL;
}

int hy_profiler_open(struct hy_profiler *p, struct hy_profile_handle *handle, int fd,
		     const struct stat *st, uint64_t known_id, const char *name, pid_t pid)
{
	int rc = 0;

	memset(handle, 0, sizeof(*handle));
	pthread_mutex_init(&handle->lock, NULL);
	handle->fiemap_at_ns = INT64_MIN / 2;
	handle->opener = hy_reca_process(p->reca, pid);
	handle->opener_pid = pid;
	handle->file_id = known_id;
	/* on error the handle works on, with file id 0: the file is served,
	 * not profiled, not cached (the cache and the map know files by id) */
	if (!known_id)
		rc = hy_identity_file_id(p->identity, fd, st, name, &handle->file_id);
	return rc;
}

void hy_profiler_close(struct hy_profile_handle *handle)
{
	pthread_mutex_destroy(&handle->lock);
}

/* ---- physical addresses ------------------------------------------------ */

static void fiemap_refresh(struct hy_profile_handle *h, int fd, uint64_t offset)
{
	struct {
		struct fiemap map;
		struct fiemap_extent extents[HY_PROFILER_EXTENTS];
	} buf;

	memset(&buf, 0, sizeof(buf));
	buf.map.fm_start = offset & ~(uint64_t)4095;
	buf.map.fm_length = FIEMAP_MAX_OFFSET - buf.map.fm_start;
	buf.map.fm_extent_count = HY_PROFILER_EXTENTS;
	h->extents = 0;
	if (ioctl(fd, FS_IOC_FIEMAP, &buf.map) < 0)
		return; /* the backing filesystem does not say: addresses stay unknown */
	for (unsigned i = 0; i < buf.map.fm_mapped_extents && i < HY_PROFILER_EXTENTS; i++) {
		const struct fiemap_extent *e = &buf.extents[i];
		bool unknown = e->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
					      FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_INLINE |
					      FIEMAP_EXTENT_NOT_ALIGNED);

		h->extent[h->extents].logical = e->fe_logical;
		h->extent[h->extents].physical = unknown ? 0 : e->fe_physical;
		h->extent[h->extents].length = e->fe_length;
		h->extents++;
	}
}

/* The physical 4 KiB block of @offset, or -1. */
static int64_t phys_block(struct hy_profile_handle *h, int fd, uint64_t offset)
{
	int64_t now, block = -1;
	bool refreshed = false;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		/* extents come sorted from FIEMAP: a binary search */
		unsigned lo = 0, hi = h->extents;

		while (lo < hi) {
			unsigned mid = (lo + hi) / 2;

			if (offset < h->extent[mid].logical)
				hi = mid;
			else if (offset >= h->extent[mid].logical + h->extent[mid].length)
				lo = mid + 1;
			else {
				if (h->extent[mid].physical)
					block = (int64_t)((h->extent[mid].physical + offset -
							   h->extent[mid].logical) /
							  4096);
				goto out;
			}
		}
		if (refreshed)
			break;
		now = clock_ns(CLOCK_MONOTONIC);
		if (now - h->fiemap_at_ns < 1000000000LL)
			break; /* at most one FIEMAP a second per open file */
		h->fiemap_at_ns = now;
		fiemap_refresh(h, fd, offset);
		refreshed = true;
	}
out:
	pthread_mutex_unlock(&h->lock);
	return block;
}

/* ---- the I/O path ------------------------------------------------------ */

void hy_profiler_end(struct hy_profiler *p, struct hy_profile_handle *handle, int fd,
		     const struct hy_profile_ticket *t, ssize_t done)
{
	struct hy_profile_record rec;
	struct hy_ring_stats rs;

	if ((done > 0 ? (uint64_t)done : 0) < t->length) /* short (end of file) or failed */
		hy_reca_uncount(p->reca, t->pid, t->process_id, t->mode == HY_PROFILE_WRITE,
				t->length - (done > 0 ? (uint64_t)done : 0));
	if (done <= 0)
		return; /* nothing moved: nothing to log */
	memset(&rec, 0, sizeof(rec));
	rec.ts_ns = clock_ns(CLOCK_REALTIME);
	rec.file_id = handle->file_id;
	rec.offset = t->offset;
	rec.length = (uint32_t)done;
	rec.mode = (uint8_t)t->mode;
	rec.process_id = t->process_id;
	rec.klass = t->klass;
	rec.phys_block = phys_block(handle, fd, t->offset);
	/* A full ring drops the record (the ring counts it). Past half full
	 * the writer is woken early, once, instead of on its next tick. */
	if (hy_ring_push(p->ring, &rec)) {
		hy_ring_get_stats(p->ring, &rs);
		if (rs.queued < rs.capacity / 2)
			return;
	}
	if (!atomic_exchange(&p->kick, true)) {
		pthread_mutex_lock(&p->queue_lock);
		p->wake = true;
		pthread_cond_signal(&p->writer_cond);
		pthread_mutex_unlock(&p->queue_lock);
	}
}

void hy_profiler_log(struct hy_profiler *p, struct hy_profile_handle *handle, int fd, pid_t pid,
		     enum hy_profile_mode mode, uint64_t offset, uint32_t length)
{
	struct hy_reca_request req = {
		.pid = pid > 0 ? pid : handle->opener_pid,
		.file_id = handle->file_id,
		.offset = offset,
		.length = length,
		.write = mode == HY_PROFILE_WRITE,
		.file_size = offset + length,
	};
	struct hy_reca_answer a;
	struct hy_profile_ticket t;

	hy_reca_request(p->reca, &req, &a);
	hy_profiler_ticket(handle, pid, mode, offset, length, &a, &t);
	hy_profiler_end(p, handle, fd, &t, length);
}

void hy_profiler_ticket(const struct hy_profile_handle *handle, pid_t pid,
			enum hy_profile_mode mode, uint64_t offset, uint32_t length,
			const struct hy_reca_answer *answer, struct hy_profile_ticket *t)
{
	t->pid = pid > 0 ? pid : handle->opener_pid;
	t->process_id = answer ? answer->process_id : 0;
	t->mode = mode;
	t->klass = answer ? answer->klass : 0;
	t->offset = offset;
	t->length = length;
}

/* ---- the writer thread ------------------------------------------------- */

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **stmt)
{
	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, NULL) != SQLITE_OK) {
		hy_log(LOG_ERR, "profiler: preparing \"%.40s...\": %s", sql, sqlite3_errmsg(db));
		return -EIO;
	}
	return 0;
}

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

/* The mount's own classes (ReCA's, hy_reca_classify_mount): the writer
 * hands over what it pops, in the ring's order (the order the requests
 * were served in, within a few microseconds), so that no request takes a
 * mount-wide lock for it. */
static void classify_mount(struct hy_profiler *p, const struct hy_profile_record *recs, size_t n)
{
	struct hy_reca_io ios[256];
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (recs[i].mode > HY_PROFILE_WRITE)
			continue;
		ios[k++] = (struct hy_reca_io){recs[i].file_id, recs[i].offset, recs[i].length,
					       recs[i].mode == HY_PROFILE_WRITE};
		if (k == sizeof(ios) / sizeof(ios[0])) {
			hy_reca_classify_mount(p->reca, ios, k);
			k = 0;
		}
	}
	if (k)
		hy_reca_classify_mount(p->reca, ios, k);
}

static void insert_records(struct hy_profiler *p, const struct hy_profile_record *recs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct hy_profile_record *r = &recs[i];
		sqlite3_stmt *st = p->insert_record;

		sqlite3_bind_int64(st, 1, r->ts_ns);
		sqlite3_bind_int64(st, 2, r->process_id);
		sqlite3_bind_int64(st, 3, (int64_t)r->file_id);
		sqlite3_bind_int64(st, 4, (int64_t)r->offset);
		sqlite3_bind_int64(st, 5, r->length);
		sqlite3_bind_int(st, 6, r->mode);
		if (r->klass)
			sqlite3_bind_int(st, 7, r->klass - 1);
		else
			sqlite3_bind_null(st, 7);
		if (r->phys_block >= 0)
			sqlite3_bind_int64(st, 8, r->phys_block);
		else
			sqlite3_bind_null(st, 8);
		if (step_done(p->db, st) == 0)
			p->written++;
		else
			p->errors++;
	}
}

/* One transaction: the pending process and file rows, then everything in
 * the ring (up to MAX_PER_TRANSACTION records). Rows leave the pending
 * lists only once a commit that carries them has worked: a transaction that
 * fails (the state folder's disk full) leaves them for the next one, which
 * carries every row still pending, so the rows committed are always all
 * those queued before some moment (rows_written, files_written). */
static void flush_once(struct hy_profiler *p, struct hy_profile_record *buf)
{
	struct pending_process *procs, *pp;
	bool drained = false;
	size_t n = 0, total = 0;
	uint64_t popped, rows, written_before = p->written, lost = 0;
	bool commit_failed = false, rows_ok = true;
	size_t carried = 0; /* rows inserted */
	int why = 0;

	pthread_mutex_lock(&p->queue_lock);
	procs = p->processes;
	p->processes = NULL;
	rows = p->rows_queued; /* every row queued so far is in this transaction */
	p->flushes_started++;
	hy_identity_batch_begin(p->identity); /* and every file row */
	pthread_mutex_unlock(&p->queue_lock);

	if (sqlite3_exec(p->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		/* nothing is inserted outside a transaction: the rows wait,
		 * the records stay in the ring */
		why = hy_state_errno(sqlite3_errcode(p->db));
		if (!p->commit_failing)
			hy_log(LOG_ERR, "profiler: begin: %s", sqlite3_errmsg(p->db));
		p->commit_failing = true;
		p->errors++;
		commit_failed = true;
		goto done;
	}
	for (pp = procs; pp; pp = pp->next) {
		sqlite3_stmt *st = p->insert_process;

		sqlite3_bind_int64(st, 1, pp->id);
		sqlite3_bind_int64(st, 2, pp->pid);
		sqlite3_bind_text(st, 3, pp->comm, -1, SQLITE_STATIC);
		if (pp->exe)
			sqlite3_bind_text(st, 4, pp->exe, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 4);
		sqlite3_bind_int64(st, 5, pp->seen_ns);
		if (step_done(p->db, st)) {
			p->errors++;
			rows_ok = false;
		}
		carried++;
	}
	/* the file rows (identity.h), in the same transaction */
	{
		unsigned bad = hy_identity_batch_insert(p->identity, &carried);

		if (bad) {
			p->errors += bad;
			rows_ok = false;
		}
	}
	if (!rows_ok) {
		why = hy_state_errno(sqlite3_errcode(p->db));
		/* SQLite may have rolled the whole transaction back (a full
		 * disk): the records would then be committed one by one */
		if (sqlite3_get_autocommit(p->db)) {
			commit_failed = true;
			goto done;
		}
	}
	/* after the rows' inserts: a file made and renamed in one batch */
	{
		unsigned bad = hy_identity_batch_paths(p->identity);

		if (bad) {
			p->errors += bad;
			rows_ok = false;
		}
	}
	while (total < MAX_PER_TRANSACTION && (n = hy_ring_pop(p->ring, buf, BATCH)) > 0) {
		classify_mount(p, buf, n);
		insert_records(p, buf, n);
		total += n;
	}
	drained = n == 0;
	/* A gone file's records were all pushed before it was said gone: once
	 * the ring has been emptied in this transaction they are all in, at or
	 * below the rowid its mark keeps (else the mark waits) */
	if (drained && !hy_identity_batch_marks(p->identity))
		drained = false; /* kept for the next transaction */
	/* A commit that fails (the state folder's disk is full, typically)
	 * rolls the records back: they are counted as errors, not as written,
	 * and the failure is logged once, not once a batch, until a commit
	 * works again (issue 8: a full state disk must not flood the log). */
	if (sqlite3_exec(p->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		commit_failed = true;
		why = hy_state_errno(sqlite3_errcode(p->db));
		lost = p->written - written_before;
		if (!p->commit_failing)
			hy_log(LOG_ERR,
			       "profiler: commit: \"%s\": %s; the access log loses records "
			       "until a commit works again (counted as errors), file and process "
			       "rows wait for it",
			       sqlite3_db_filename(p->db, "main"), sqlite3_errmsg(p->db));
		p->commit_failing = true;
		p->commit_lost += lost;
		if (sqlite3_exec(p->db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK &&
		    sqlite3_get_autocommit(p->db) == 0)
			hy_log(LOG_ERR, "profiler: rollback: %s", sqlite3_errmsg(p->db));
	} else if (p->commit_failing && (p->written > written_before || carried)) {
		/* (an empty transaction commits even on a full disk) */
		hy_log(LOG_NOTICE,
		       "profiler: commits work again in \"%s\"; %" PRIu64 " records were lost",
		       sqlite3_db_filename(p->db, "main"), p->commit_lost);
		p->commit_failing = false;
		p->commit_lost = 0;
	}
	p->batches++;
done:
	if (why == 0 && (commit_failed || !rows_ok))
		why = -EIO;

	pthread_mutex_lock(&p->queue_lock);
	p->written -= lost;
	if (commit_failed)
		p->errors += lost ? lost : 1;
	if (commit_failed || !rows_ok) {
		/* retried by the next transaction (INSERT OR REPLACE: a row
		 * that did get in is not doubled) */
		if (procs) {
			for (pp = procs; pp->next; pp = pp->next)
				;
			pp->next = p->processes;
			p->processes = procs;
			procs = NULL;
		}
		p->rows_error = why;
		p->last_failed = true;
	} else {
		p->last_failed = false;
		p->rows_written = rows;
	}
	hy_identity_batch_end(p->identity, !(commit_failed || !rows_ok), drained && !commit_failed,
			      why);
	{
		struct hy_ring_stats rs;

		hy_ring_get_stats(p->ring, &rs);
		popped = rs.popped;
	}
	p->committed = popped;
	p->flushes_done++;
	pthread_cond_broadcast(&p->sync_cond);
	pthread_mutex_unlock(&p->queue_lock);
	while (procs) {
		pp = procs->next;
		free(procs->exe);
		free(procs);
		procs = pp;
	}
}

static int64_t one_int(sqlite3 *db, sqlite3_stmt *st, int64_t otherwise)
{
	int64_t v = otherwise;
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	else if (rc != SQLITE_ROW)
		hy_log(LOG_ERR, "profiler: prune: %s", sqlite3_errmsg(db));
	sqlite3_reset(st);
	return v;
}

/* ReCA's processes found dead (hy_reca_reap) are listed in p->dead with the
 * log's last rowid: ten seconds dead, every record they pushed is in the
 * ring or in the log, and with the ring empty, in the log. Writer thread. */
static bool dead_process(void *arg, uint32_t id, bool had_io)
{
	struct hy_profiler *p = arg;
	struct dead_processes *d = &p->dead;

	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct dead_process *v = realloc(d->v, cap * sizeof(*v));

		if (!v)
			return false; /* its row stays: a row, never data */
		d->v = v;
		d->cap = cap;
	}
	/* one that never read nor wrote has no log rows at all */
	d->v[d->n++] = (struct dead_process){id, had_io ? p->reap_rowid : INT64_MIN};
	return true;
}

static void find_dead(struct hy_profiler *p, int64_t last_rowid)
{
	struct hy_ring_stats rs;

	hy_ring_get_stats(p->ring, &rs);
	p->reap_rowid = last_rowid;
	hy_reca_reap(p->reca, rs.queued == 0, dead_process, p);
}

/* Rows of files and processes that nothing refers to any more (issue 16):
 * a file seen gone (its last name went with no handle open) with no log
 * rows left (its mark's rowid below the log's oldest), no indirection map
 * entry, no vertex of the master graph and no range of a kept plan; a
 * process that is not running with no log rows left. The cache drops a
 * gone file's blocks when it is said gone (hy_engine_forget_file), before
 * the mark. The row with the highest id is always kept: ids are never
 * given twice (the next id at open is the highest + 1). */
static void prune_rows(struct hy_profiler *p)
{
	int64_t oldest = one_int(p->db, p->log_min, INT64_MAX);
	int64_t last = one_int(p->db, p->log_max, 0);
	struct dead_processes *d = &p->dead;

	p->rows_pruned += hy_identity_prune(p->identity, oldest);
	find_dead(p, last);
	{
		size_t kept = 0;

		for (size_t i = 0; i < d->n; i++) {
			if (d->v[i].last_rowid < oldest) {
				sqlite3_bind_int64(p->prune_process, 1, d->v[i].id);
				if (step_done(p->db, p->prune_process) == 0) {
					p->rows_pruned += (uint64_t)sqlite3_changes(p->db);
					continue;
				}
			}
			d->v[kept++] = d->v[i];
		}
		d->n = kept;
	}
	if (!p->old_processes_pruned && p->start_rowid < oldest) {
		sqlite3_bind_int64(p->prune_old_processes, 1, p->first_process_id);
		if (step_done(p->db, p->prune_old_processes) == 0) {
			p->rows_pruned += (uint64_t)sqlite3_changes(p->db);
			p->old_processes_pruned = true;
		}
	}
}

static void prune(struct hy_profiler *p, bool now_please)
{
	int64_t now = clock_ns(CLOCK_MONOTONIC);

	if (!now_please && now - p->pruned_at_ns < (int64_t)HY_PROFILER_PRUNE_S * 1000000000LL)
		return;
	p->pruned_at_ns = now;
	if (p->max_age_s > 0) {
		sqlite3_bind_int64(p->prune_age, 1,
				   clock_ns(CLOCK_REALTIME) - p->max_age_s * 1000000000LL);
		if (step_done(p->db, p->prune_age) == 0)
			p->pruned += (uint64_t)sqlite3_changes(p->db);
	}
	if (p->max_rows > 0) {
		sqlite3_bind_int64(p->prune_rows, 1, p->max_rows);
		if (step_done(p->db, p->prune_rows) == 0)
			p->pruned += (uint64_t)sqlite3_changes(p->db);
	}
	prune_rows(p);
}

static void *writer_main(void *arg)
{
	struct hy_profiler *p = arg;
	struct hy_profile_record *buf = malloc(BATCH * sizeof(*buf));
	struct timespec deadline;
	bool stopping, prune_now;

	pthread_setname_np(pthread_self(), "hy-profiler");
	if (!buf) {
		hy_log(LOG_ERR, "profiler: out of memory; the access log stops");
		pthread_mutex_lock(&p->queue_lock);
		p->failed = true;
		pthread_cond_broadcast(&p->sync_cond);
		pthread_mutex_unlock(&p->queue_lock);
		hy_identity_writer_failed(p->identity);
		return NULL;
	}
	pthread_mutex_lock(&p->queue_lock);
	for (;;) {
		if (!p->stopping && !p->wake) {
			clock_gettime(CLOCK_REALTIME, &deadline);
			deadline.tv_nsec += HY_PROFILER_FLUSH_MS * 1000000L;
			if (deadline.tv_nsec >= 1000000000L) {
				deadline.tv_sec++;
				deadline.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&p->writer_cond, &p->queue_lock, &deadline);
		}
		p->wake = false;
		stopping = p->stopping;
		prune_now = p->prune_requested;
		pthread_mutex_unlock(&p->queue_lock);

		atomic_store(&p->kick, false);
		flush_once(p, buf);
		prune(p, prune_now);

		pthread_mutex_lock(&p->queue_lock);
		if (prune_now) {
			p->prune_requested = false;
			pthread_cond_broadcast(&p->sync_cond);
		}
		{
			struct hy_ring_stats rs;

			/* a transaction stopped at its cap: go on at once (not
			 * after a failure: the next try waits for the tick) */
			hy_ring_get_stats(p->ring, &rs);
			if (rs.queued && !p->last_failed)
				p->wake = true;
		}
		if (stopping) {
			struct hy_ring_stats rs;

			hy_ring_get_stats(p->ring, &rs);
			if (rs.queued == 0 && !p->processes && !hy_identity_pending(p->identity))
				break;
			if (p->last_failed) {
				/* the last try, made after the stop was asked for,
				 * failed too: the rows are lost (a file gets a new
				 * id at the next mount; the cache has sent its
				 * dirty blocks home by now) */
				size_t nfiles = hy_identity_pending(p->identity), nprocs = 0;

				for (struct pending_process *pp = p->processes; pp; pp = pp->next)
					nprocs++;
				if (nfiles || nprocs)
					hy_log(LOG_ERR,
					       "profiler: stopping with %zu file and %zu process "
					       "rows that could not be written to the database "
					       "(%s): they are lost",
					       nfiles, nprocs, strerror(-p->rows_error));
				break;
			}
		}
	}
	pthread_mutex_unlock(&p->queue_lock);
	free(buf);
	return NULL;
}

/* ---- life cycle ------------------------------------------------------- */

/* The identity's syncs ask for a transaction soon (identity.h). */
static void wake_writer(void *arg)
{
	struct hy_profiler *p = arg;

	pthread_mutex_lock(&p->queue_lock);
	p->wake = true;
	pthread_cond_signal(&p->writer_cond);
	pthread_mutex_unlock(&p->queue_lock);
}

static int open_db(const char *path, int flags, sqlite3 **db, char *why, size_t why_size)
{
	if (sqlite3_open_v2(path, db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(why, why_size, "profiler: database \"%s\": %s", path,
			 *db ? sqlite3_errmsg(*db) : "out of memory");
		return -EIO;
	}
	sqlite3_busy_timeout(*db, 10000);
	return 0;
}

static int64_t max_id(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		v = -1;
	sqlite3_finalize(st);
	return v;
}

int hy_profiler_new(const struct hy_profiler_config *config, struct hy_profiler **out, char *why,
		    size_t why_size)
{
	struct hy_profiler *p = calloc(1, sizeof(*p));
	int64_t procs;
	int rc;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->queue_lock, NULL);
	pthread_cond_init(&p->writer_cond, NULL);
	pthread_cond_init(&p->sync_cond, NULL);
	p->max_age_s = config->max_age_s;
	p->max_rows = config->max_rows;
	p->reca = config->reca;
	p->pruned_at_ns = clock_ns(CLOCK_MONOTONIC);

	rc = hy_ring_new(config->ring_capacity, sizeof(struct hy_profile_record), &p->ring);
	if (rc) {
		snprintf(why, why_size, "profiler: cannot make a ring of %zu records",
			 config->ring_capacity);
		goto fail;
	}
	rc = open_db(config->db_path, SQLITE_OPEN_READWRITE, &p->db, why, why_size);
	if (rc)
		goto fail;
	/* WAL with synchronous=NORMAL: a commit does not wait for the disk; a
	 * crash may lose the newest log rows, never corrupt the database. The
	 * file rows that recovery needs are made durable on demand, by
	 * hy_identity_sync_file() (one sync of the WAL per batch of new files
	 * that are fsync'd, not one per commit nor per fsync) */
	if (sqlite3_exec(p->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK)
		hy_log(LOG_WARNING, "profiler: synchronous=NORMAL: %s", sqlite3_errmsg(p->db));
	procs = max_id(p->db, "SELECT coalesce(max(id), 0) FROM processes");
	if (procs < 0) {
		snprintf(why, why_size, "profiler: database \"%s\" lacks the access log tables: %s",
			 config->db_path, sqlite3_errmsg(p->db));
		rc = -EUCLEAN;
		goto fail;
	}
	hy_reca_set_process_ids(p->reca, (uint32_t)procs + 1, queue_process, p);
	p->first_process_id = (uint32_t)procs + 1;
	p->start_rowid = max_id(p->db, "SELECT coalesce(max(rowid), 0) FROM access_log");
	rc = hy_identity_new(&(struct hy_identity_config){config->db_path, p->db, wake_writer, p},
			     &p->identity, why, why_size);
	if (rc)
		goto fail;
	if (prepare(p->db,
		    "INSERT INTO access_log (ts_ns, process_id, file_id, offset, length, mode,"
		    " class, phys_block) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		    &p->insert_record) ||
	    prepare(p->db,
		    "INSERT OR REPLACE INTO processes (id, pid, comm, exe, first_seen_ns)"
		    " VALUES (?1, ?2, ?3, ?4, ?5)",
		    &p->insert_process) ||
	    prepare(p->db, "DELETE FROM access_log WHERE ts_ns < ?1", &p->prune_age) ||
	    prepare(p->db,
		    "DELETE FROM access_log WHERE rowid <= (SELECT max(rowid) FROM access_log) - "
		    "?1",
		    &p->prune_rows) ||
	    prepare(p->db, "SELECT min(rowid) FROM access_log", &p->log_min) ||
	    prepare(p->db, "SELECT max(rowid) FROM access_log", &p->log_max) ||
	    prepare(p->db,
		    "DELETE FROM processes WHERE id = ?1 AND id < (SELECT max(id) FROM processes)",
		    &p->prune_process) ||
	    prepare(p->db,
		    "DELETE FROM processes WHERE id < ?1 AND id < (SELECT max(id) FROM processes)",
		    &p->prune_old_processes)) {
		snprintf(why, why_size, "profiler: database \"%s\": %s", config->db_path,
			 sqlite3_errmsg(p->db));
		rc = -EIO;
		goto fail;
	}
	rc = pthread_create(&p->writer, NULL, writer_main, p);
	if (rc) {
		snprintf(why, why_size, "profiler: cannot start the writer thread: %s",
			 strerror(rc));
		rc = -rc;
		goto fail;
	}
	p->writer_started = true;
	*out = p;
	return 0;
fail:
	hy_profiler_free(p);
	return rc;
}

void hy_profiler_free(struct hy_profiler *p)
{
	if (!p)
		return;
	if (p->writer_started) {
		pthread_mutex_lock(&p->queue_lock);
		p->stopping = true;
		pthread_cond_signal(&p->writer_cond);
		pthread_mutex_unlock(&p->queue_lock);
		pthread_join(p->writer, NULL);
	}
	sqlite3_finalize(p->insert_record);
	sqlite3_finalize(p->insert_process);
	sqlite3_finalize(p->prune_age);
	sqlite3_finalize(p->prune_rows);
	sqlite3_finalize(p->log_min);
	sqlite3_finalize(p->log_max);
	sqlite3_finalize(p->prune_process);
	sqlite3_finalize(p->prune_old_processes);
	hy_identity_free(p->identity); /* its statements are on p->db */
	if (p->db && sqlite3_close(p->db) != SQLITE_OK)
		hy_log(LOG_ERR, "profiler: closing the database: %s", sqlite3_errmsg(p->db));
	while (p->processes) {
		struct pending_process *next = p->processes->next;

		free(p->processes->exe);
		free(p->processes);
		p->processes = next;
	}
	free(p->dead.v);
	hy_ring_free(p->ring);
	pthread_mutex_destroy(&p->queue_lock);
	pthread_cond_destroy(&p->writer_cond);
	pthread_cond_destroy(&p->sync_cond);
	free(p);
}

int hy_profiler_sync(struct hy_profiler *p)
{
	struct hy_ring_stats rs;
	uint64_t rows, first, file_rows, queued, written;
	int rc = 0;

	hy_ring_get_stats(p->ring, &rs);
	pthread_mutex_lock(&p->queue_lock);
	p->wake = true;
	pthread_cond_signal(&p->writer_cond);
	/* pushed counts accepted records only: dropped ones are not waited for;
	 * the process and file rows queued so far are waited for too. The
	 * first transaction to begin after this point carries all of them:
	 * if it fails, so does the sync (its rows are retried later). */
	rows = p->rows_queued;
	hy_identity_rows(p->identity, &file_rows, &written);
	first = p->flushes_started + 1;
	for (;;) {
		if (p->failed) {
			rc = -EIO;
			break;
		}
		if (p->committed >= rs.pushed && p->rows_written >= rows) {
			hy_identity_rows(p->identity, &queued, &written);
			if (written >= file_rows)
				break;
		}
		if (p->flushes_done >= first && p->last_failed) {
			rc = p->rows_error ? p->rows_error : -EIO;
			break;
		}
		pthread_cond_wait(&p->sync_cond, &p->queue_lock);
	}
	pthread_mutex_unlock(&p->queue_lock);
	return rc;
}

int hy_profiler_prune(struct hy_profiler *p)
{
	int rc = hy_profiler_sync(p);

	if (rc)
		return rc;
	pthread_mutex_lock(&p->queue_lock);
	p->prune_requested = true;
	p->wake = true;
	pthread_cond_signal(&p->writer_cond);
	while (p->prune_requested && !p->failed)
		pthread_cond_wait(&p->sync_cond, &p->queue_lock);
	rc = p->failed ? -EIO : 0;
	pthread_mutex_unlock(&p->queue_lock);
	return rc;
}

void hy_profiler_get_stats(struct hy_profiler *p, struct hy_profiler_stats *out)
{
	struct hy_ring_stats rs;

	hy_ring_get_stats(p->ring, &rs);
	pthread_mutex_lock(&p->queue_lock);
	out->written = p->written;
	out->pruned = p->pruned;
	out->batches = p->batches;
	out->errors = p->errors;
	out->processes_seen = p->processes_seen;
	out->files_seen = hy_identity_files_seen(p->identity);
	pthread_mutex_unlock(&p->queue_lock);
	out->dropped = rs.dropped;
	out->queued = rs.queued;
}
