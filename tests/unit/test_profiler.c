/* test_profiler.c - the access profiler without a mount: records logged
 * through a handle reach access_log with the right process and file rows
 * and the class ReCA gave them, requests with no pid go to the opener,
 * per-process counts (ReCA's process table), the policy of a category per
 * request, retention by rows and by age, a full ring drops and counts, and
 * FIEMAP physical blocks (file ids: test_identity.c). Every
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
#include "hybridfs/reca.h"
#include "hybridfs/state.h"
#include "profiler_fixture.h"
#include "suites.h"

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

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
	CU_ASSERT_EQUAL(hy_reca_process(f.reca, getpid()), h.opener);

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
	self = hy_reca_process(f.reca, getpid());
	CU_ASSERT_NOT_EQUAL(self, h.opener);

	CU_ASSERT_EQUAL(q_int(f.db, "SELECT process_id FROM access_log WHERE mode = 1"), h.opener);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT process_id FROM access_log WHERE mode = 0"), self);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT pid FROM processes WHERE id = %u", h.opener), opener);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT pid FROM processes WHERE id = %u", self), getpid());
	hy_profiler_close(&h);
	close(fd);
	fixture_done(&f);
}

/* Pids that fall in one bucket of the process table (HY_RECA_PROCESSES_MAX
 * apart) keep their own slots while both are active: no new process each
 * time the other one is seen. */
static void test_colliding_pids(void)
{
	struct fixture f;
	struct hy_profiler_stats st;
	pid_t a = getpid(), b = getpid() + HY_RECA_PROCESSES_MAX;
	uint32_t first_a, first_b;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	first_a = hy_reca_process(f.reca, a);
	first_b = hy_reca_process(f.reca, b);
	for (int i = 0; i < 10; i++) {
		CU_ASSERT_EQUAL(hy_reca_process(f.reca, a), first_a);
		CU_ASSERT_EQUAL(hy_reca_process(f.reca, b), first_b);
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
	struct hy_reca_process top[8];
	char comm[16];
	size_t n;
	int fd;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	fd = make_file(f.tmp, "a", 4096, false);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	for (int i = 0; i < 3; i++)
		hy_reca_count_meta(f.reca, getpid(), HY_META_LOOKUP);
	for (int i = 0; i < 2; i++)
		hy_reca_count_meta(f.reca, getpid(), HY_META_GETATTR);
	hy_reca_count_meta(f.reca, getpid(), HY_META_READDIR);
	hy_reca_count_meta(f.reca, 0, HY_META_LOOKUP); /* no pid: not counted */
	hy_reca_count_meta(NULL, getpid(), HY_META_LOOKUP);

	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", getpid()), 0);
	hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_READ, 0, 4096);
	hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_READ, 4096, 4096);
	hy_profiler_log(f.p, &h, fd, getpid(), HY_PROFILE_WRITE, 0, 100);
	/* our parent moves more bytes: it comes first */
	CU_ASSERT_EQUAL(open_handle(f.p, &hp, fd, 0, "/a", getppid()), 0);
	hy_profiler_log(f.p, &hp, fd, getppid(), HY_PROFILE_WRITE, 0, 1 << 20);

	n = hy_reca_top(f.reca, top, 8);
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
	CU_ASSERT_EQUAL(hy_reca_top(f.reca, top, 1), 1);
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
	struct served tk;
	struct hy_reca_process top[8];
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
	serve_begin(&f, &h, getpid(), HY_PROFILE_READ, 0, 4096, &tk);
	CU_ASSERT_FALSE(tk.a.hinted);
	CU_ASSERT_EQUAL(tk.a.klass, 1 + HY_CLASS_RANDOM);
	hy_profiler_end(f.p, &h, fd, &tk.t, 4096);
	CU_ASSERT_EQUAL(hy_reca_count_meta(f.reca, getpid(), HY_META_LOOKUP), 0);

	hy_workload_policy_defaults(&t);
	CU_ASSERT_EQUAL_FATAL(hy_reca_set_policy(f.reca, &t), 0);
	/* too few requests for a category: the unknown row, the mount's */
	serve_begin(&f, &h, getpid(), HY_PROFILE_READ, 4096, 4096, &tk);
	CU_ASSERT_TRUE(tk.a.hinted);
	CU_ASSERT_EQUAL(tk.a.category, HY_CATEGORY_UNKNOWN);
	CU_ASSERT_EQUAL(tk.a.hint.write, -1);
	CU_ASSERT_EQUAL(tk.a.hint.line_size, 4096);
	CU_ASSERT_EQUAL(tk.a.hint.admit, HY_ADMIT_NORMAL);
	hy_profiler_end(f.p, &h, fd, &tk.t, 4096);
	/* a stream of 128 KiB sequential reads over 8 MiB: archival consumer,
	 * whose sequential reads bypass the cache, 64 KiB lines, evicted early */
	for (uint64_t i = 0; i < 64; i++) {
		serve_begin(&f, &h, getpid(), HY_PROFILE_READ, (i + 1) << 17, 1 << 17, &tk);
		hy_profiler_end(f.p, &h, fd, &tk.t, 1 << 17);
	}
	CU_ASSERT_EQUAL(tk.a.category, HY_CATEGORY_ARCHIVAL_CONSUMER);
	CU_ASSERT_EQUAL(tk.a.klass, 1 + HY_CLASS_SEQUENTIAL);
	CU_ASSERT_EQUAL(tk.a.hint.write, HY_CACHE_WRITE_AROUND);
	CU_ASSERT_EQUAL(tk.a.hint.admit, HY_ADMIT_BYPASS);
	CU_ASSERT_EQUAL(tk.a.hint.line_size, 65536);
	CU_ASSERT_EQUAL(tk.a.hint.evict, HY_EVICT_EARLY);
	/* a random read of the same process: low (not bypassed) */
	serve_begin(&f, &h, getpid(), HY_PROFILE_READ, 1ULL << 30, 4096, &tk);
	CU_ASSERT_EQUAL(tk.a.klass, 1 + HY_CLASS_RANDOM);
	CU_ASSERT_EQUAL(tk.a.hint.admit, HY_ADMIT_LOW);
	hy_profiler_end(f.p, &h, fd, &tk.t, -EIO); /* failed: not logged, bytes taken back */
	/* a new table is in force for the next request */
	CU_ASSERT_EQUAL(
		hy_workload_policy_set(&t, "archival-consumer.line_size=16K", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(hy_reca_set_policy(f.reca, &t), 0);
	serve_begin(&f, &h, getpid(), HY_PROFILE_READ, 65ULL << 17, 1 << 17, &tk);
	CU_ASSERT_EQUAL(tk.a.hint.line_size, 16384);
	hy_profiler_end(f.p, &h, fd, &tk.t, 4096); /* short: 4 KiB of 128 */
	n = hy_reca_top(f.reca, top, 8);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(top[0].bytes_read, 2 * 4096 + (64ULL << 17) + 4096);
	CU_ASSERT_EQUAL(top[0].category, HY_CATEGORY_ARCHIVAL_CONSUMER);
	CU_ASSERT_FALSE(top[0].metadata_priority);

	/* a process of the same program on the same file, with no category
	 * of its own yet, follows ours (grouped) */
	child = idle_child(&wfd);
	CU_ASSERT_TRUE_FATAL(child > 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &hc, fd, h.file_id, "/a", child), 0);
	serve_begin(&f, &hc, child, HY_PROFILE_READ, 0, 4096, &tk);
	CU_ASSERT_EQUAL(tk.a.category, HY_CATEGORY_ARCHIVAL_CONSUMER);
	CU_ASSERT_EQUAL(tk.a.hint.line_size, 16384);
	hy_profiler_end(f.p, &hc, fd, &tk.t, 4096);
	n = hy_reca_top(f.reca, top, 8);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	CU_ASSERT_EQUAL(top[1].pid, child);
	CU_ASSERT_EQUAL(top[1].category, HY_CATEGORY_UNKNOWN);
	CU_ASSERT_TRUE(top[1].grouped);
	CU_ASSERT_EQUAL(top[1].policy_category, HY_CATEGORY_ARCHIVAL_CONSUMER);

	/* metadata: heavy once at least 16 operations are mostly metadata;
	 * the next process of the program starts heavy */
	for (int i = 1; i <= 14; i++) /* with its one read: 15 operations */
		CU_ASSERT_EQUAL(hy_reca_count_meta(f.reca, child, HY_META_GETATTR), 0);
	CU_ASSERT_EQUAL(hy_reca_count_meta(f.reca, child, HY_META_LOOKUP), 10.0);
	n = hy_reca_top(f.reca, top, 8);
	CU_ASSERT_TRUE(n == 2 && top[1].pid == child && top[1].metadata_priority);
	child2 = idle_child(&wfd2);
	CU_ASSERT_TRUE_FATAL(child2 > 0);
	CU_ASSERT_EQUAL(hy_reca_count_meta(f.reca, child2, HY_META_READDIR), 10.0);
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
	struct served tk;
	struct hy_profiler_config c;
	struct fixture f;
	struct hy_profile_handle h;
	uint64_t mc[2][HY_CLASS_COUNT];
	int fd;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	profiler_stop(&f);
	f.no_classify = true;
	c = config_of(&f, 1024, 0, 0);
	CU_ASSERT_EQUAL_FATAL(hy_profiler_new(&c, &f.p, why, sizeof(why)), 0);
	hy_workload_policy_defaults(&t);
	CU_ASSERT_EQUAL_FATAL(hy_reca_set_policy(f.reca, &t), 0);
	fd = make_file(f.tmp, "a", 4096, false);
	CU_ASSERT_TRUE_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fd, 0, "/a", getpid()), 0);
	for (uint64_t i = 0; i < 40; i++) {
		serve_begin(&f, &h, getpid(), HY_PROFILE_READ, i << 17, 1 << 17, &tk);
		CU_ASSERT_FALSE(tk.a.hinted);
		CU_ASSERT_EQUAL(tk.a.klass, 0);
		hy_profiler_end(f.p, &h, fd, &tk.t, 1 << 17);
	}
	for (int i = 0; i < 40; i++)
		CU_ASSERT_EQUAL(hy_reca_count_meta(f.reca, getpid(), HY_META_LOOKUP), 0);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	hy_reca_get_mount_classes(f.reca, mc);
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
