/* profiler_fixture.h - what the profiler and identity suites share: a
 * profiler (with its process table and its file ids) on a fresh state
 * database in a temp folder, the test's own connection to check the rows,
 * files to open, and a request served as the engine serves one. */
#ifndef HYBRIDFS_TEST_PROFILER_FIXTURE_H
#define HYBRIDFS_TEST_PROFILER_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/profiler.h"
#include "hybridfs/reca.h"
#include "hybridfs/state.h"
#include "suites.h"

#define NO_VALUE INT64_MIN /* q_int(): no row, or NULL */

static char why[1024] __attribute__((unused));

/* One profiler on a fresh state database in its own temp folder. */
struct fixture {
	char *tmp;	       /* the temp folder, removed at the end */
	char *db_path;	       /* tmp/state/hybridfs.db */
	struct hy_profiler *p; /* NULL once freed */
	struct hy_reca *reca;  /* ReCA's process table, one per profiler (a mount's) */
	bool no_classify;      /* ... made with reca=off */
	sqlite3 *db;	       /* the test's own connection, for checks */
};

/* The config of a new profiler, with a new process table (a mount's). */
static inline struct hy_profiler_config config_of(struct fixture *f, size_t ring, int64_t max_age,
						  int64_t max_rows)
{
	struct hy_reca_config rc = {.keying = HY_RECA_PROCESSES, .no_classify = f->no_classify};
	struct hy_profiler_config c = {
		.db_path = f->db_path,
		.ring_capacity = ring,
		.max_age_s = max_age,
		.max_rows = max_rows,
	};

	if (!f->reca && hy_reca_new(&rc, &f->reca) < 0)
		f->reca = NULL;
	c.reca = f->reca;
	return c;
}

/* The profiler stopped (a mount ends): its process table goes with it. */
static inline void profiler_stop(struct fixture *f)
{
	hy_profiler_free(f->p);
	f->p = NULL;
	hy_reca_free(f->reca);
	f->reca = NULL;
}

/* A read or write as the engine serves one: ReCA's answer first (the hint
 * it would hand the cache), then the profiler's ticket from it. */
struct served {
	struct hy_reca_answer a;
	struct hy_profile_ticket t;
};

static inline void serve_begin(struct fixture *f, struct hy_profile_handle *h, pid_t pid,
			       enum hy_profile_mode mode, uint64_t offset, uint32_t length,
			       struct served *s)
{
	struct hy_reca_request r = {
		.pid = pid > 0 ? pid : h->opener_pid,
		.file_id = h->file_id,
		.offset = offset,
		.length = length,
		.write = mode == HY_PROFILE_WRITE,
		.file_size = offset + length,
	};

	hy_reca_request(f->reca, &r, &s->a);
	hy_profiler_ticket(h, pid, mode, offset, length, &s->a, &s->t);
}

static inline bool fixture_init(struct fixture *f, size_t ring, int64_t max_age, int64_t max_rows)
{
	struct hy_state *state;
	struct hy_profiler_config c;
	char *dir;
	int rc;

	memset(f, 0, sizeof(*f));
	f->tmp = hy_test_tmpdir();
	if (!f->tmp || asprintf(&dir, "%s/state", f->tmp) < 0)
		return false;
	rc = hy_state_open(dir, "/b", false, &state, why, sizeof(why));
	free(dir);
	if (rc != 0) {
		fprintf(stderr, "\nhy_state_open: %s\n", why);
		return false;
	}
	f->db_path = strdup(state->db_path);
	hy_state_close(state);
	if (!f->db_path)
		return false;
	c = config_of(f, ring, max_age, max_rows);
	rc = hy_profiler_new(&c, &f->p, why, sizeof(why));
	if (rc != 0) {
		fprintf(stderr, "\nhy_profiler_new: %s\n", why);
		return false;
	}
	if (sqlite3_open_v2(f->db_path, &f->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return false;
	sqlite3_busy_timeout(f->db, 10000);
	return true;
}

static inline void fixture_done(struct fixture *f)
{
	profiler_stop(f);
	sqlite3_close(f->db);
	if (f->tmp)
		hy_test_rmtree(f->tmp);
	free(f->tmp);
	free(f->db_path);
	memset(f, 0, sizeof(*f));
}

/* The first column of the first row of @fmt..., or NO_VALUE. */
__attribute__((format(printf, 2, 3))) static inline int64_t q_int(sqlite3 *db, const char *fmt, ...)
{
	char sql[512];
	sqlite3_stmt *st;
	int64_t v = NO_VALUE;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "\n%s: %s\n", sql, sqlite3_errmsg(db));
		return NO_VALUE;
	}
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* The first column of the first row as text (caller frees), or NULL. */
__attribute__((format(printf, 2, 3))) static inline char *q_text(sqlite3 *db, const char *fmt, ...)
{
	char sql[512], *v = NULL;
	sqlite3_stmt *st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

/* A file of @size bytes in @dir (written, fsync'd when @durable), open
 * read-write; -1 on failure. */
static inline int make_file(const char *dir, const char *name, size_t size, bool durable)
{
	char path[PATH_MAX], buf[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	for (size_t done = 0; done < size;) {
		size_t n = size - done < sizeof(buf) ? size - done : sizeof(buf);

		memset(buf, (int)('a' + done / sizeof(buf) % 26), n);
		if (write(fd, buf, n) != (ssize_t)n) {
			close(fd);
			return -1;
		}
		done += n;
	}
	if (durable && fsync(fd) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline int open_handle(struct hy_profiler *p, struct hy_profile_handle *h, int fd,
			      uint64_t known_id, const char *name, pid_t pid)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -errno;
	return hy_profiler_open(p, h, fd, &st, known_id, name, pid);
}

static inline void read_self_comm(char comm[16])
{
	FILE *f = fopen("/proc/self/comm", "r");

	strcpy(comm, "?");
	if (f) {
		if (fgets(comm, 16, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
}

static inline int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
