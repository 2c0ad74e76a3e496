/* test_profiler.c - the access profiler without a mount: records logged
 * through a handle reach access_log with the right process and file rows,
 * file ids are stable (pending, committed, across a restart), requests
 * with no pid go to the opener, per-process counts, retention by rows and
 * by age, a full ring drops and counts, and FIEMAP physical blocks. Every
 * test waits with hy_profiler_sync() or hy_profiler_prune(), never with a
 * sleep, so none passes or fails by luck of timing. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/profiler.h"
#include "hybridfs/state.h"
#include "suites.h"

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

#define NO_VALUE INT64_MIN /* q_int(): no row, or NULL */

static char why[1024];

/* One profiler on a fresh state database in its own temp folder. */
struct fixture {
	char *tmp;	       /* the temp folder, removed at the end */
	char *db_path;	       /* tmp/state/hybridfs.db */
	struct hy_profiler *p; /* NULL once freed */
	sqlite3 *db;	       /* the test's own connection, for checks */
};

static struct hy_profiler_config config_of(const struct fixture *f, size_t ring, int64_t max_age,
					   int64_t max_rows)
{
	struct hy_profiler_config c = {
		.db_path = f->db_path,
		.ring_capacity = ring,
		.max_age_s = max_age,
		.max_rows = max_rows,
	};

	return c;
}

static bool fixture_init(struct fixture *f, size_t ring, int64_t max_age, int64_t max_rows)
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

static void fixture_done(struct fixture *f)
{
	hy_profiler_free(f->p);
	sqlite3_close(f->db);
	if (f->tmp)
		hy_test_rmtree(f->tmp);
	free(f->tmp);
	free(f->db_path);
	memset(f, 0, sizeof(*f));
}

/* The first column of the first row of @fmt..., or NO_VALUE. */
__attribute__((format(printf, 2, 3))) static int64_t q_int(sqlite3 *db, const char *fmt, ...)
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
__attribute__((format(printf, 2, 3))) static char *q_text(sqlite3 *db, const char *fmt, ...)
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
static int make_file(const char *dir, const char *name, size_t size, bool durable)
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

static int open_handle(struct hy_profiler *p, struct hy_profile_handle *h, int fd,
		       uint64_t known_id, const char *name, pid_t pid)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -errno;
	return hy_profiler_open(p, h, fd, &st, known_id, name, pid);
}

static void read_self_comm(char comm[16])
{
	FILE *f = fopen("/proc/self/comm", "r");

	strcpy(comm, "?");
	if (f) {
		if (fgets(comm, 16, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- records, processes, files ----------------------------------------- */

static void test_records_logged(void)
{
	static const struct {
		enum hy_profile_mode mode;
		uint64_t offset;
		uint32_t length;
		enum hy_request_class klass;
	} io[] = {
		{HY_PROFILE_READ, 0, 4096, HY_CLASS_RANDOM},
		{HY_PROFILE_WRITE, 8192, 100, HY_CLASS_RANDOM},
		{HY_PROFILE_READ, 12345, 7, HY_CLASS_STRIDED},
		{HY_PROFILE_WRITE, 1ULL << 40, 131072, HY_CLASS_RANDOM},
	};
	struct fixture f;
	struct hy_profile_handle h;
	struct hy_profiler_stats stats;
	struct stat st;
	sqlite3_stmt *rows;
	char comm[16], exe[PATH_MAX], *text;
	int64_t before, after;
	ssize_t n;
	size_t i = 0;
	int fd;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	fd = make_file(f.tmp, "a", 65536, false);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(fstat(fd, &st), 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", getpid()), 0);
	CU_ASSERT_NOT_EQUAL(h.file_id, 0);
	CU_ASSERT_NOT_EQUAL(h.opener, 0);
	CU_ASSERT_EQUAL(h.opener_pid, getpid());
	CU_ASSERT_EQUAL(hy_profiler_process(f.p, getpid()), h.opener);

	before = realtime_ns();
	for (i = 0; i < sizeof(io) / sizeof(io[0]); i++)
		hy_profiler_log(f.p, &h, fd, getpid(), io[i].mode, io[i].offset, io[i].length);
	after = realtime_ns();
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);

	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM access_log"), 4);
	CU_ASSERT_EQUAL_FATAL(
		sqlite3_prepare_v2(f.db,
				   "SELECT ts_ns, process_id, file_id, offset, length,"
				   " mode, class FROM access_log ORDER BY rowid",
				   -1, &rows, NULL),
		SQLITE_OK);
	for (i = 0; sqlite3_step(rows) == SQLITE_ROW && i < sizeof(io) / sizeof(io[0]); i++) {
		CU_ASSERT_TRUE(sqlite3_column_int64(rows, 0) >= before);
		CU_ASSERT_TRUE(sqlite3_column_int64(rows, 0) <= after);
		CU_ASSERT_EQUAL(sqlite3_column_int64(rows, 1), h.opener);
		CU_ASSERT_EQUAL(sqlite3_column_int64(rows, 2), (int64_t)h.file_id);
		CU_ASSERT_EQUAL(sqlite3_column_int64(rows, 3), (int64_t)io[i].offset);
		CU_ASSERT_EQUAL(sqlite3_column_int64(rows, 4), io[i].length);
		CU_ASSERT_EQUAL(sqlite3_column_int(rows, 5), (int)io[i].mode);
		/* ReCA's classes against this process's earlier requests of the
		 * same mode: nothing before (random), nothing before (random),
		 * 8 KiB after the read that ended at 4096 (strided), far from
		 * the write at 8192 (random) */
		CU_ASSERT_EQUAL(sqlite3_column_int(rows, 6), (int)io[i].klass);
	}
	sqlite3_finalize(rows);
	CU_ASSERT_EQUAL(i, 4);

	/* the process row names this process */
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT pid FROM processes WHERE id = %u", h.opener), getpid());
	read_self_comm(comm);
	text = q_text(f.db, "SELECT comm FROM processes WHERE id = %u", h.opener);
	CU_ASSERT_PTR_NOT_NULL(text);
	if (text)
		CU_ASSERT_STRING_EQUAL(text, comm);
	free(text);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CU_ASSERT_TRUE_FATAL(n > 0);
	exe[n] = '\0';
	text = q_text(f.db, "SELECT exe FROM processes WHERE id = %u", h.opener);
	CU_ASSERT_PTR_NOT_NULL(text);
	if (text)
		CU_ASSERT_STRING_EQUAL(text, exe);
	free(text);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM processes"), 1);

	/* the file row has the backing inode */
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT dev FROM files WHERE id = %" PRIu64, h.file_id),
			(int64_t)st.st_dev);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT ino FROM files WHERE id = %" PRIu64, h.file_id),
			(int64_t)st.st_ino);
	text = q_text(f.db, "SELECT path FROM files WHERE id = %" PRIu64, h.file_id);
	CU_ASSERT_PTR_NOT_NULL(text);
	if (text)
		CU_ASSERT_STRING_EQUAL(text, "/a");
	free(text);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files"), 1);

	hy_profiler_get_stats(f.p, &stats);
	CU_ASSERT_EQUAL(stats.written, 4);
	CU_ASSERT_EQUAL(stats.dropped, 0);
	CU_ASSERT_EQUAL(stats.queued, 0);
	CU_ASSERT_EQUAL(stats.errors, 0);
	CU_ASSERT_EQUAL(stats.processes_seen, 1);
	CU_ASSERT_EQUAL(stats.files_seen, 1);
	CU_ASSERT_TRUE(stats.batches >= 1);

	hy_profiler_close(&h);
	close(fd);
	fixture_done(&f);
}

static void test_file_ids(void)
{
	struct fixture f;
	struct hy_profile_handle h1, h2, h3, h4, h5;
	struct hy_profiler_config c;
	struct stat st;
	uint64_t id_a, id_b, max_file;
	int64_t max_process;
	uint32_t pid_again;
	int fa, fb, fc;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	fa = make_file(f.tmp, "a", 4096, false);
	fb = make_file(f.tmp, "b", 4096, false);
	CU_ASSERT_TRUE_FATAL(fa >= 0 && fb >= 0);

	/* two opens of one inode before anything is committed: one id (from
	 * the pending list, or from the database if the writer was quick) */
	CU_ASSERT_EQUAL(open_handle(f.p, &h1, fa, 0, "/a", getpid()), 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h2, fa, 0, "/a", getpid()), 0);
	id_a = h1.file_id;
	CU_ASSERT_NOT_EQUAL(id_a, 0);
	CU_ASSERT_EQUAL(h2.file_id, id_a);
	/* another file, another id */
	CU_ASSERT_EQUAL(open_handle(f.p, &h3, fb, 0, "/b", getpid()), 0);
	id_b = h3.file_id;
	CU_ASSERT_NOT_EQUAL(id_b, 0);
	CU_ASSERT_NOT_EQUAL(id_b, id_a);

	hy_profiler_log(f.p, &h1, fa, getpid(), HY_PROFILE_READ, 0, 4096);
	hy_profiler_log(f.p, &h2, fa, getpid(), HY_PROFILE_WRITE, 0, 4096);
	hy_profiler_log(f.p, &h3, fb, getpid(), HY_PROFILE_READ, 0, 4096);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files"), 2);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files WHERE id = %" PRIu64, id_a), 1);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files WHERE id = %" PRIu64, id_b), 1);
	CU_ASSERT_EQUAL(
		q_int(f.db, "SELECT count(*) FROM access_log WHERE file_id = %" PRIu64, id_a), 2);

	/* after the commit: the same id, from the database */
	CU_ASSERT_EQUAL(open_handle(f.p, &h4, fa, 0, "/a-renamed", getpid()), 0);
	CU_ASSERT_EQUAL(h4.file_id, id_a);
	/* an inode's cached id is used as it is */
	CU_ASSERT_EQUAL(open_handle(f.p, &h5, fb, 4242, "/b", getpid()), 0);
	CU_ASSERT_EQUAL(h5.file_id, 4242);
	hy_profiler_close(&h1);
	hy_profiler_close(&h2);
	hy_profiler_close(&h3);
	hy_profiler_close(&h4);
	hy_profiler_close(&h5);

	/* records logged just before free are drained into the database */
	CU_ASSERT_EQUAL(open_handle(f.p, &h1, fb, 0, "/b", getpid()), 0);
	for (int i = 0; i < 100; i++)
		hy_profiler_log(f.p, &h1, fb, getpid(), HY_PROFILE_READ, (uint64_t)i * 4096, 4096);
	hy_profiler_close(&h1);
	hy_profiler_free(f.p);
	f.p = NULL;
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM access_log"), 103);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files"), 2);
	max_file = (uint64_t)q_int(f.db, "SELECT max(id) FROM files");
	max_process = q_int(f.db, "SELECT max(id) FROM processes");
	CU_ASSERT_EQUAL(max_file, id_a > id_b ? id_a : id_b);
	CU_ASSERT_TRUE(max_process >= 1);

	/* a new profiler on the same database: same inode, same id; new ids
	 * above the old maximum */
	c = config_of(&f, 1024, 0, 0);
	CU_ASSERT_EQUAL_FATAL(hy_profiler_new(&c, &f.p, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h1, fa, 0, "/a", getpid()), 0);
	CU_ASSERT_EQUAL(h1.file_id, id_a);
	CU_ASSERT_EQUAL(open_handle(f.p, &h2, fb, 0, "/b", getpid()), 0);
	CU_ASSERT_EQUAL(h2.file_id, id_b);
	fc = make_file(f.tmp, "c", 4096, false);
	CU_ASSERT_TRUE_FATAL(fc >= 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h3, fc, 0, "/c", getpid()), 0);
	CU_ASSERT_TRUE(h3.file_id > max_file);
	pid_again = hy_profiler_process(f.p, getpid());
	CU_ASSERT_TRUE((int64_t)pid_again > max_process);
	CU_ASSERT_EQUAL(h1.opener, pid_again);
	hy_profiler_log(f.p, &h3, fc, getpid(), HY_PROFILE_WRITE, 0, 4096);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files"), 3);
	CU_ASSERT_EQUAL_FATAL(fstat(fc, &st), 0);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT ino FROM files WHERE id = %" PRIu64, h3.file_id),
			(int64_t)st.st_ino);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT process_id FROM access_log ORDER BY rowid DESC"),
			pid_again);
	hy_profiler_close(&h1);
	hy_profiler_close(&h2);
	hy_profiler_close(&h3);

	close(fa);
	close(fb);
	close(fc);
	fixture_done(&f);
}

/* hy_profiler_find_file: the id of a file already known, pending or
 * committed, and after a restart; 0 for one never opened, for which it
 * makes no row (issue 16.3: an inode entry made after a FORGET). */
static void test_find_file(void)
{
	struct fixture f;
	struct hy_profile_handle h;
	struct hy_profiler_config c;
	struct stat sa, sb;
	uint64_t id_a;
	int fa, fb;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	fa = make_file(f.tmp, "a", 4096, false);
	fb = make_file(f.tmp, "b", 4096, false);
	CU_ASSERT_TRUE_FATAL(fa >= 0 && fb >= 0);
	CU_ASSERT_EQUAL_FATAL(fstat(fa, &sa), 0);
	CU_ASSERT_EQUAL_FATAL(fstat(fb, &sb), 0);
	CU_ASSERT_EQUAL(hy_profiler_find_file(f.p, fa, &sa), 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fa, 0, "/a", getpid()), 0);
	id_a = h.file_id;
	CU_ASSERT_NOT_EQUAL(id_a, 0);
	hy_profiler_close(&h);
	/* pending (or committed already, if the writer was quick) */
	CU_ASSERT_EQUAL(hy_profiler_find_file(f.p, fa, &sa), id_a);
	CU_ASSERT_EQUAL(hy_profiler_find_file(f.p, fb, &sb), 0);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	CU_ASSERT_EQUAL(hy_profiler_find_file(f.p, fa, &sa), id_a);
	CU_ASSERT_EQUAL(hy_profiler_find_file(f.p, fb, &sb), 0);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files"), 1);
	/* through an O_PATH descriptor too (the daemon's objects) */
	{
		int opath = openat(AT_FDCWD, f.tmp, O_PATH | O_DIRECTORY);
		int fd = opath >= 0 ? openat(opath, "a", O_PATH) : -1;

		CU_ASSERT_TRUE(fd >= 0);
		CU_ASSERT_EQUAL(hy_profiler_find_file(f.p, fd, &sa), id_a);
		if (fd >= 0)
			close(fd);
		if (opath >= 0)
			close(opath);
	}
	/* a restart keeps it */
	hy_profiler_free(f.p);
	c = config_of(&f, 1024, 0, 0);
	CU_ASSERT_EQUAL_FATAL(hy_profiler_new(&c, &f.p, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_profiler_find_file(f.p, fa, &sa), id_a);
	CU_ASSERT_EQUAL(hy_profiler_find_file(f.p, fb, &sb), 0);
	close(fa);
	close(fb);
	fixture_done(&f);
}

/* When the database cannot say whether a file has an id, none is made:
 * the file may have one already, and a second would split its cached and
 * relocated blocks from its requests. (Before, an error of the lookup was
 * taken for "no row", and the file got a new id.) */
static void test_lookup_error_makes_no_id(void)
{
	struct fixture f;
	struct hy_profile_handle h;
	uint64_t id_a;
	int fa, fb;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	fa = make_file(f.tmp, "a", 4096, false);
	fb = make_file(f.tmp, "b", 4096, false);
	CU_ASSERT_TRUE_FATAL(fa >= 0 && fb >= 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fa, 0, "/a", getpid()), 0);
	id_a = h.file_id;
	hy_profiler_close(&h);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	/* the files table out of reach of the profiler's lookups */
	CU_ASSERT_EQUAL(
		sqlite3_exec(f.db, "ALTER TABLE files RENAME TO files_away", NULL, NULL, NULL),
		SQLITE_OK);
	CU_ASSERT_TRUE(open_handle(f.p, &h, fb, 0, "/b", getpid()) < 0);
	CU_ASSERT_EQUAL(h.file_id, 0);
	hy_profiler_close(&h);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fa, 0, "/a", getpid()) < 0, 1);
	CU_ASSERT_EQUAL(h.file_id, 0); /* not a new one for a */
	hy_profiler_close(&h);
	/* back: a has its id, b gets one */
	CU_ASSERT_EQUAL(
		sqlite3_exec(f.db, "ALTER TABLE files_away RENAME TO files", NULL, NULL, NULL),
		SQLITE_OK);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fa, 0, "/a", getpid()), 0);
	CU_ASSERT_EQUAL(h.file_id, id_a);
	hy_profiler_close(&h);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fb, 0, "/b", getpid()), 0);
	CU_ASSERT_NOT_EQUAL(h.file_id, 0);
	CU_ASSERT_NOT_EQUAL(h.file_id, id_a);
	hy_profiler_close(&h);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files"), 2);
	close(fa);
	close(fb);
	fixture_done(&f);
}

static void test_no_pid_is_opener(void)
{
	struct fixture f;
	struct hy_profile_handle h;
	uint32_t self;
	pid_t opener = getppid();
	int fd;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	fd = make_file(f.tmp, "a", 4096, false);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	/* opened by our parent; then a request with no pid, one with ours */
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", opener), 0);
	CU_ASSERT_EQUAL(h.opener_pid, opener);
	hy_profiler_log(f.p, &h, fd, 0, HY_PROFILE_WRITE, 0, 4096);
	hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_READ, 4096, 4096);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	self = hy_profiler_process(f.p, getpid());
	CU_ASSERT_NOT_EQUAL(self, h.opener);

	CU_ASSERT_EQUAL(q_int(f.db, "SELECT process_id FROM access_log WHERE mode = 1"), h.opener);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT process_id FROM access_log WHERE mode = 0"), self);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT pid FROM processes WHERE id = %u", h.opener), opener);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT pid FROM processes WHERE id = %u", self), getpid());
	hy_profiler_close(&h);
	close(fd);
	fixture_done(&f);
}

/* Pids that fall in one bucket of the process table (HY_PROFILER_PROCESSES
 * apart) keep their own slots while both are active: no new process each
 * time the other one is seen. */
static void test_colliding_pids(void)
{
	struct fixture f;
	struct hy_profiler_stats st;
	pid_t a = getpid(), b = getpid() + HY_PROFILER_PROCESSES;
	uint32_t first_a, first_b;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	first_a = hy_profiler_process(f.p, a);
	first_b = hy_profiler_process(f.p, b);
	for (int i = 0; i < 10; i++) {
		CU_ASSERT_EQUAL(hy_profiler_process(f.p, a), first_a);
		CU_ASSERT_EQUAL(hy_profiler_process(f.p, b), first_b);
	}
	CU_ASSERT_NOT_EQUAL(first_a, first_b);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	hy_profiler_get_stats(f.p, &st);
	CU_ASSERT_EQUAL(st.processes_seen, 2);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM processes"), 2);
	fixture_done(&f);
}

static void test_counts_and_top(void)
{
	struct fixture f;
	struct hy_profile_handle h, hp;
	struct hy_profiler_process top[8];
	char comm[16];
	size_t n;
	int fd;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	fd = make_file(f.tmp, "a", 4096, false);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	for (int i = 0; i < 3; i++)
		hy_profiler_count_meta(f.p, getpid(), HY_META_LOOKUP);
	for (int i = 0; i < 2; i++)
		hy_profiler_count_meta(f.p, getpid(), HY_META_GETATTR);
	hy_profiler_count_meta(f.p, getpid(), HY_META_READDIR);
	hy_profiler_count_meta(f.p, 0, HY_META_LOOKUP); /* no pid: not counted */
	hy_profiler_count_meta(NULL, getpid(), HY_META_LOOKUP);

	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", getpid()), 0);
	hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_READ, 0, 4096);
	hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_READ, 4096, 4096);
	hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_WRITE, 0, 100);
	/* our parent moves more bytes: it comes first */
	CU_ASSERT_EQUAL(open_handle(f.p, &hp, fd, 0, "/a", getppid()), 0);
	hy_profiler_log(f.p, &hp, fd, getppid(), HY_PROFILE_WRITE, 0, 1 << 20);

	n = hy_profiler_top(f.p, top, 8);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(top[0].pid, getppid());
	CU_ASSERT_EQUAL(top[0].writes, 1);
	CU_ASSERT_EQUAL(top[0].bytes_written, 1 << 20);
	CU_ASSERT_EQUAL(top[0].process_id, hp.opener);
	CU_ASSERT_EQUAL(top[1].pid, getpid());
	CU_ASSERT_EQUAL(top[1].process_id, h.opener);
	CU_ASSERT_EQUAL(top[1].reads, 2);
	CU_ASSERT_EQUAL(top[1].writes, 1);
	CU_ASSERT_EQUAL(top[1].bytes_read, 8192);
	CU_ASSERT_EQUAL(top[1].bytes_written, 100);
	CU_ASSERT_EQUAL(top[1].meta[HY_META_LOOKUP], 3);
	CU_ASSERT_EQUAL(top[1].meta[HY_META_GETATTR], 2);
	CU_ASSERT_EQUAL(top[1].meta[HY_META_READDIR], 1);
	read_self_comm(comm);
	CU_ASSERT_STRING_EQUAL(top[1].comm, comm);
	/* @max is honoured */
	CU_ASSERT_EQUAL(hy_profiler_top(f.p, top, 1), 1);
	CU_ASSERT_EQUAL(top[0].pid, getppid());

	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	hy_profiler_close(&h);
	hy_profiler_close(&hp);
	close(fd);
	fixture_done(&f);
}

/* ---- ReCA: the policy of a process's category, per request -------------- */

/* A child that lives (with our name) until @fd_write is closed. */
static pid_t idle_child(int *fd_write)
{
	int pipefd[2];
	pid_t pid;
	char c;

	if (pipe(pipefd) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(pipefd[1]);
		while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(pipefd[0]);
	*fd_write = pipefd[1];
	return pid;
}

static void end_child(pid_t pid, int fd_write)
{
	int status;

	close(fd_write);
	waitpid(pid, &status, 0);
}

static void test_policy_hints(void)
{
	struct hy_workload_policy_table t;
	struct hy_profile_ticket tk;
	struct hy_profiler_process top[8];
	struct fixture f;
	struct hy_profile_handle h, hc;
	pid_t child, child2;
	int fd, wfd, wfd2;
	size_t n;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 4096, 0, 0));
	fd = make_file(f.tmp, "a", 4096, false);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", getpid()), 0);
	/* no table in force: classified, no hint */
	hy_profiler_begin(f.p, &h, getpid(), HY_PROFILE_READ, 0, 4096, &tk);
	CU_ASSERT_FALSE(tk.hinted);
	CU_ASSERT_EQUAL(tk.klass, 1 + HY_CLASS_RANDOM);
	hy_profiler_end(f.p, &h, fd, &tk, 4096);
	CU_ASSERT_EQUAL(hy_profiler_count_meta(f.p, getpid(), HY_META_LOOKUP), 0);

	hy_workload_policy_defaults(&t);
	CU_ASSERT_EQUAL_FATAL(hy_profiler_set_policy(f.p, &t), 0);
	/* too few requests for a category: the unknown row, the mount's */
	hy_profiler_begin(f.p, &h, getpid(), HY_PROFILE_READ, 4096, 4096, &tk);
	CU_ASSERT_TRUE(tk.hinted);
	CU_ASSERT_EQUAL(tk.category, HY_CATEGORY_UNKNOWN);
	CU_ASSERT_EQUAL(tk.hint.write, -1);
	CU_ASSERT_EQUAL(tk.hint.line_size, 4096);
	CU_ASSERT_EQUAL(tk.hint.admit, HY_ADMIT_NORMAL);
	hy_profiler_end(f.p, &h, fd, &tk, 4096);
	/* a stream of 128 KiB sequential reads over 8 MiB: archival consumer,
	 * whose sequential reads bypass the cache, 64 KiB lines, evicted early */
	for (uint64_t i = 0; i < 64; i++) {
		hy_profiler_begin(f.p, &h, getpid(), HY_PROFILE_READ, (i + 1) << 17, 1 << 17, &tk);
		hy_profiler_end(f.p, &h, fd, &tk, 1 << 17);
	}
	CU_ASSERT_EQUAL(tk.category, HY_CATEGORY_ARCHIVAL_CONSUMER);
	CU_ASSERT_EQUAL(tk.klass, 1 + HY_CLASS_SEQUENTIAL);
	CU_ASSERT_EQUAL(tk.hint.write, HY_CACHE_WRITE_AROUND);
	CU_ASSERT_EQUAL(tk.hint.admit, HY_ADMIT_BYPASS);
	CU_ASSERT_EQUAL(tk.hint.line_size, 65536);
	CU_ASSERT_EQUAL(tk.hint.evict, HY_EVICT_EARLY);
	/* a random read of the same process: low (not bypassed) */
	hy_profiler_begin(f.p, &h, getpid(), HY_PROFILE_READ, 1ULL << 30, 4096, &tk);
	CU_ASSERT_EQUAL(tk.klass, 1 + HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(tk.hint.admit, HY_ADMIT_LOW);
	hy_profiler_end(f.p, &h, fd, &tk, -EIO); /* failed: not logged, bytes taken back */
	/* a new table is in force for the next request */
	CU_ASSERT_EQUAL(
		hy_workload_policy_set(&t, "archival-consumer.line_size=16K", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_profiler_set_policy(f.p, &t), 0);
	hy_profiler_begin(f.p, &h, getpid(), HY_PROFILE_READ, 65ULL << 17, 1 << 17, &tk);
	CU_ASSERT_EQUAL(tk.hint.line_size, 16384);
	hy_profiler_end(f.p, &h, fd, &tk, 4096); /* short: 4 KiB of 128 */
	n = hy_profiler_top(f.p, top, 8);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(top[0].bytes_read, 2 * 4096 + (64ULL << 17) + 4096);
	CU_ASSERT_EQUAL(top[0].category, HY_CATEGORY_ARCHIVAL_CONSUMER);
	CU_ASSERT_FALSE(top[0].metadata_priority);

	/* a process of the same program on the same file, with no category
	 * of its own yet, follows ours (grouped) */
	child = idle_child(&wfd);
	CU_ASSERT_TRUE_FATAL(child > 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &hc, fd, h.file_id, "/a", child), 0);
	hy_profiler_begin(f.p, &hc, child, HY_PROFILE_READ, 0, 4096, &tk);
	CU_ASSERT_EQUAL(tk.category, HY_CATEGORY_ARCHIVAL_CONSUMER);
	CU_ASSERT_EQUAL(tk.hint.line_size, 16384);
	hy_profiler_end(f.p, &hc, fd, &tk, 4096);
	n = hy_profiler_top(f.p, top, 8);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(top[1].pid, child);
	CU_ASSERT_EQUAL(top[1].category, HY_CATEGORY_UNKNOWN);
	CU_ASSERT_TRUE(top[1].grouped);
	CU_ASSERT_EQUAL(top[1].policy_category, HY_CATEGORY_ARCHIVAL_CONSUMER);

	/* metadata: heavy once at least 16 operations are mostly metadata;
	 * the next process of the program starts heavy */
	for (int i = 1; i <= 14; i++) /* with its one read: 15 operations */
		CU_ASSERT_EQUAL(hy_profiler_count_meta(f.p, child, HY_META_GETATTR), 0);
	CU_ASSERT_EQUAL(hy_profiler_count_meta(f.p, child, HY_META_LOOKUP), 10.0);
	n = hy_profiler_top(f.p, top, 8);
	CU_ASSERT_TRUE(n == 2 && top[1].pid == child && top[1].metadata_priority);
	child2 = idle_child(&wfd2);
	CU_ASSERT_TRUE_FATAL(child2 > 0);
	CU_ASSERT_EQUAL(hy_profiler_count_meta(f.p, child2, HY_META_READDIR), 10.0);
	end_child(child2, wfd2);
	end_child(child, wfd);

	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	/* logged: every request but the failed one, with its class */
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM access_log"), 2 + 64 + 1 + 1);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM access_log WHERE class = %d",
			      HY_CLASS_SEQUENTIAL),
			64 + 1);
	hy_profiler_close(&h);
	hy_profiler_close(&hc);
	close(fd);
	fixture_done(&f);
}

/* reca=off: nothing classified, no hint, no metadata priority. */
static void test_policy_off(void)
{
	struct hy_workload_policy_table t;
	struct hy_profile_ticket tk;
	struct hy_profiler_config c;
	struct fixture f;
	struct hy_profile_handle h;
	uint64_t mc[2][HY_CLASS_COUNT];
	int fd;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	hy_profiler_free(f.p);
	c = config_of(&f, 1024, 0, 0);
	c.no_classify = true;
	CU_ASSERT_EQUAL_FATAL(hy_profiler_new(&c, &f.p, why, sizeof(why)), 0);
	hy_workload_policy_defaults(&t);
	CU_ASSERT_EQUAL_FATAL(hy_profiler_set_policy(f.p, &t), 0);
	fd = make_file(f.tmp, "a", 4096, false);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", getpid()), 0);
	for (uint64_t i = 0; i < 40; i++) {
		hy_profiler_begin(f.p, &h, getpid(), HY_PROFILE_READ, i << 17, 1 << 17, &tk);
		CU_ASSERT_FALSE(tk.hinted);
		CU_ASSERT_EQUAL(tk.klass, 0);
		hy_profiler_end(f.p, &h, fd, &tk, 1 << 17);
	}
	for (int i = 0; i < 40; i++)
		CU_ASSERT_EQUAL(hy_profiler_count_meta(f.p, getpid(), HY_META_LOOKUP), 0);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	hy_profiler_get_classes(f.p, mc);
	CU_ASSERT_EQUAL(mc[0][HY_CLASS_SEQUENTIAL] + mc[0][HY_CLASS_RANDOM], 0);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM access_log WHERE class IS NULL"), 40);
	hy_profiler_close(&h);
	close(fd);
	fixture_done(&f);
}

/* ---- retention ---------------------------------------------------------- */

static void test_retention_rows(void)
{
	struct fixture f;
	struct hy_profile_handle h;
	struct hy_profiler_stats stats;
	int fd;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 4096, 0, 100));
	fd = make_file(f.tmp, "a", 4096, false);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", getpid()), 0);
	for (uint64_t i = 0; i < 1000; i++)
		hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_READ, i * 4096, 4096);
	CU_ASSERT_EQUAL(hy_profiler_prune(f.p), 0);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM access_log"), 100);
	/* the newest are kept */
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT min(offset) FROM access_log"), 900 * 4096);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT max(offset) FROM access_log"), 999 * 4096);
	hy_profiler_get_stats(f.p, &stats);
	CU_ASSERT_EQUAL(stats.written, 1000);
	CU_ASSERT_EQUAL(stats.pruned, 900);
	CU_ASSERT_EQUAL(stats.dropped, 0);

	/* a second prune with nothing new removes nothing */
	CU_ASSERT_EQUAL(hy_profiler_prune(f.p), 0);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM access_log"), 100);
	hy_profiler_close(&h);
	close(fd);
	fixture_done(&f);
}

static bool insert_row(sqlite3 *db, int64_t ts_ns, uint64_t offset)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "INSERT INTO access_log (ts_ns, process_id, file_id, offset, length, mode)"
		 " VALUES (%" PRId64 ", 999, 999, %" PRIu64 ", 4096, 0)",
		 ts_ns, offset);
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
}

static void test_retention_age(void)
{
	const int64_t hour = 3600LL * 1000000000LL;
	struct fixture f;
	struct hy_profile_handle h;
	struct hy_profiler_stats stats;
	int64_t now = realtime_ns();
	int fd;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 4096, 3600, 0));
	fd = make_file(f.tmp, "a", 4096, false);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	/* old rows before the profiler's own ... */
	for (int i = 0; i < 5; i++)
		CU_ASSERT_TRUE(insert_row(f.db, now - 2 * hour - i, 1000 + (uint64_t)i));
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", getpid()), 0);
	for (uint64_t i = 0; i < 10; i++)
		hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_WRITE, i * 4096, 4096);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	/* ... and after them; plus direct rows young enough to stay */
	for (int i = 0; i < 5; i++)
		CU_ASSERT_TRUE(insert_row(f.db, now - 30 * hour, 2000 + (uint64_t)i));
	CU_ASSERT_TRUE(insert_row(f.db, now - hour / 2, 3000));
	CU_ASSERT_TRUE(insert_row(f.db, now - hour / 60, 3001));
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM access_log"), 22);

	CU_ASSERT_EQUAL(hy_profiler_prune(f.p), 0);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM access_log"), 12);
	CU_ASSERT_EQUAL(
		q_int(f.db, "SELECT count(*) FROM access_log WHERE ts_ns < %" PRId64, now - hour),
		0);
	CU_ASSERT_EQUAL(
		q_int(f.db, "SELECT count(*) FROM access_log WHERE process_id = %u", h.opener), 10);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM access_log WHERE offset >= 3000"
				    " AND offset <= 3001"),
			2);
	hy_profiler_get_stats(f.p, &stats);
	CU_ASSERT_EQUAL(stats.pruned, 10);
	hy_profiler_close(&h);
	close(fd);
	fixture_done(&f);
}

/* ---- a full ring --------------------------------------------------------- */

static void ring_run(size_t capacity, uint64_t attempts, struct hy_profiler_stats *stats,
		     int64_t *rows)
{
	struct fixture f;
	struct hy_profile_handle h;
	int fd;

	memset(stats, 0, sizeof(*stats));
	*rows = -1;
	CU_ASSERT_TRUE_FATAL(fixture_init(&f, capacity, 0, 0));
	fd = make_file(f.tmp, "a", 4096, false);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", getpid()), 0);
	for (uint64_t i = 0; i < attempts; i++)
		hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_READ, i * 4096, 4096);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	hy_profiler_get_stats(f.p, stats);
	*rows = q_int(f.db, "SELECT count(*) FROM access_log");
	hy_profiler_close(&h);
	close(fd);
	fixture_done(&f);
}

static void test_full_ring_drops(void)
{
	struct hy_profiler_stats stats;
	int64_t rows;

	/* two slots, 1000 records: the writer drains as it can; whatever it
	 * did not take in time was dropped and counted, nothing else lost */
	ring_run(2, 1000, &stats, &rows);
	CU_ASSERT_EQUAL(stats.written + stats.dropped, 1000);
	CU_ASSERT_EQUAL((uint64_t)rows, stats.written);
	CU_ASSERT_EQUAL(stats.queued, 0);
	CU_ASSERT_EQUAL(stats.errors, 0);

	/* below capacity nothing is lost */
	ring_run(1024, 1000, &stats, &rows);
	CU_ASSERT_EQUAL(stats.written, 1000);
	CU_ASSERT_EQUAL(stats.dropped, 0);
	CU_ASSERT_EQUAL(rows, 1000);
}

/* ---- physical blocks ----------------------------------------------------- */

/* Our own FIEMAP of @fd at @offset: the physical 4 KiB block, or -1. */
static int64_t fiemap_block(int fd, uint64_t offset)
{
	struct {
		struct fiemap map;
		struct fiemap_extent extents[8];
	} buf;

	memset(&buf, 0, sizeof(buf));
	buf.map.fm_start = offset;
	buf.map.fm_length = 4096;
	buf.map.fm_extent_count = 8;
	if (ioctl(fd, FS_IOC_FIEMAP, &buf.map) < 0 || buf.map.fm_mapped_extents == 0)
		return -1;
	for (unsigned i = 0; i < buf.map.fm_mapped_extents; i++) {
		const struct fiemap_extent *e = &buf.extents[i];

		if (offset >= e->fe_logical && offset < e->fe_logical + e->fe_length &&
		    !(e->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC)))
			return (int64_t)((e->fe_physical + offset - e->fe_logical) / 4096);
	}
	return -1;
}

static void test_phys_block(void)
{
	struct fixture f;
	struct hy_profile_handle h;
	struct statfs sfs;
	int64_t got0, got2, want0, want2;
	bool must;
	int fd;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	fd = make_file(f.tmp, "a", 65536, true);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(fstatfs(fd, &sfs), 0);
	must = sfs.f_type == EXT4_SUPER_MAGIC || sfs.f_type == XFS_SUPER_MAGIC;
	want0 = fiemap_block(fd, 0);
	want2 = fiemap_block(fd, 8192);

	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", getpid()), 0);
	hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_READ, 0, 4096);
	hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_READ, 8192, 4096);
	hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_READ, 1 << 20, 4096); /* a hole */
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	got0 = q_int(f.db, "SELECT phys_block FROM access_log WHERE offset = 0");
	got2 = q_int(f.db, "SELECT phys_block FROM access_log WHERE offset = 8192");
	CU_ASSERT_EQUAL(q_int(f.db,
			      "SELECT count(*) FROM access_log WHERE offset = %d AND"
			      " phys_block IS NULL",
			      1 << 20),
			1);
	if (must) {
		CU_ASSERT_NOT_EQUAL(got0, NO_VALUE);
		CU_ASSERT_NOT_EQUAL(want0, -1);
		CU_ASSERT_EQUAL(got0, want0);
		CU_ASSERT_EQUAL(got2, want2);
	} else if (got0 == NO_VALUE) {
		fprintf(stderr,
			"\n  (skipped: %s is on filesystem 0x%lx, not ext4/xfs; no physical"
			" block) ",
			f.tmp, (unsigned long)sfs.f_type);
	} else {
		CU_ASSERT_EQUAL(got0, want0);
	}
	hy_profiler_close(&h);
	close(fd);
	fixture_done(&f);
}

/* ---- refusal ------------------------------------------------------------- */

static void test_bad_database(void)
{
	struct hy_profiler_config c = {.ring_capacity = 16};
	struct hy_profiler *p = (struct hy_profiler *)&c; /* must be reset to NULL */
	char *tmp = hy_test_tmpdir(), path[PATH_MAX];
	sqlite3 *db;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
	/* missing: not created */
	snprintf(path, sizeof(path), "%s/missing.db", tmp);
	c.db_path = path;
	CU_ASSERT_EQUAL(hy_profiler_new(&c, &p, why, sizeof(why)), -EIO);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, path));
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	/* a database without the access log tables */
	snprintf(path, sizeof(path), "%s/empty.db", tmp);
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	CU_ASSERT_EQUAL(hy_profiler_new(&c, &p, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "access log"));
	hy_test_rmtree(tmp);
	free(tmp);
}

int hy_test_add_profiler(void)
{
	CU_pSuite s = CU_add_suite("profiler", NULL, NULL);

	if (!s || !CU_add_test(s, "records, process and file rows", test_records_logged) ||
	    !CU_add_test(s, "file ids: pending, committed, after restart", test_file_ids) ||
	    !CU_add_test(s, "file ids found by identity, none made", test_find_file) ||
	    !CU_add_test(s, "a failed lookup makes no file id", test_lookup_error_makes_no_id) ||
	    !CU_add_test(s, "no pid: the opener", test_no_pid_is_opener) ||
	    !CU_add_test(s, "metadata counts and top", test_counts_and_top) ||
	    !CU_add_test(s, "colliding pids keep their processes", test_colliding_pids) ||
	    !CU_add_test(s, "retention by rows", test_retention_rows) ||
	    !CU_add_test(s, "retention by age", test_retention_age) ||
	    !CU_add_test(s, "full ring drops and counts", test_full_ring_drops) ||
	    !CU_add_test(s, "physical blocks (FIEMAP)", test_phys_block) ||
	    !CU_add_test(s, "ReCA: the policy of the category, per request", test_policy_hints) ||
	    !CU_add_test(s, "ReCA: reca=off", test_policy_off) ||
	    !CU_add_test(s, "missing or foreign database refused", test_bad_database))
		return -1;
	return 0;
}
