/* test_identity.c - file ids (identity.h) as the profiler's writer makes
 * their rows: ids are stable (pending, committed, across a restart),
 * found by the backing identity without making one, and a lookup the
 * database cannot answer makes none. Every test waits with
 * hy_profiler_sync(), never with a sleep. */
#include <inttypes.h>

#include "hybridfs/identity.h"
#include "profiler_fixture.h"

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
	profiler_stop(&f);
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
	pid_again = hy_reca_process(f.reca, getpid());
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

/* hy_identity_find_file: the id of a file already known, pending or
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
	CU_ASSERT_EQUAL(hy_identity_find_file(hy_profiler_identity(f.p), fa, &sa), 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h, fa, 0, "/a", getpid()), 0);
	id_a = h.file_id;
	CU_ASSERT_NOT_EQUAL(id_a, 0);
	hy_profiler_close(&h);
	/* pending (or committed already, if the writer was quick) */
	CU_ASSERT_EQUAL(hy_identity_find_file(hy_profiler_identity(f.p), fa, &sa), id_a);
	CU_ASSERT_EQUAL(hy_identity_find_file(hy_profiler_identity(f.p), fb, &sb), 0);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	CU_ASSERT_EQUAL(hy_identity_find_file(hy_profiler_identity(f.p), fa, &sa), id_a);
	CU_ASSERT_EQUAL(hy_identity_find_file(hy_profiler_identity(f.p), fb, &sb), 0);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files"), 1);
	/* through an O_PATH descriptor too (the daemon's objects) */
	{
		int opath = openat(AT_FDCWD, f.tmp, O_PATH | O_DIRECTORY);
		int fd = opath >= 0 ? openat(opath, "a", O_PATH) : -1;

		CU_ASSERT_TRUE(fd >= 0);
		CU_ASSERT_EQUAL(hy_identity_find_file(hy_profiler_identity(f.p), fd, &sa), id_a);
		if (fd >= 0)
			close(fd);
		if (opath >= 0)
			close(opath);
	}
	/* a restart keeps it */
	profiler_stop(&f);
	c = config_of(&f, 1024, 0, 0);
	CU_ASSERT_EQUAL_FATAL(hy_profiler_new(&c, &f.p, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_identity_find_file(hy_profiler_identity(f.p), fa, &sa), id_a);
	CU_ASSERT_EQUAL(hy_identity_find_file(hy_profiler_identity(f.p), fb, &sb), 0);
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

/* The path a file's row keeps (state.h: files.path): relative to the
 * backing directory, full (two Makefiles in two folders are two paths),
 * moved with a folder above the file (hy_identity_dir_moved, one range of
 * the path index) but not a file first seen after the move under a
 * folder made again at the old name, nor a file of a folder whose name
 * only begins the same; a row of before schema 10 with a base name takes
 * its full path when the file is seen again; two folders exchanged swap
 * their files' prefixes. */
static char *path_of_id(struct fixture *f, uint64_t id)
{
	return q_text(f->db, "SELECT path FROM files WHERE id = %" PRIu64, id);
}

static bool path_is(struct fixture *f, uint64_t id, const char *want)
{
	char *got = path_of_id(f, id);
	bool ok = got && strcmp(got, want) == 0;

	if (!ok)
		fprintf(stderr, "\nfile %" PRIu64 ": path \"%s\", not \"%s\"\n", id,
			got ? got : "(none)", want);
	free(got);
	return ok;
}

static void test_full_paths(void)
{
	static const char *const names[] = {"src/lib/Makefile", "doc/Makefile", "srcx/Makefile",
					    "src/top"};
	struct fixture f;
	struct hy_profiler_config c;
	struct hy_profile_handle h[6];
	char *real, path[PATH_MAX], path2[PATH_MAX];
	uint64_t id[6];
	int fd[6];

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	/* the backing directory is the temp folder: ids see their paths */
	profiler_stop(&f);
	real = realpath(f.tmp, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(real);
	{
		sqlite3_stmt *st;

		CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(f.db,
							 "UPDATE mount_info SET value = ?1 "
							 "WHERE key = 'backing'",
							 -1, &st, NULL),
				      SQLITE_OK);
		sqlite3_bind_text(st, 1, real, -1, SQLITE_STATIC);
		CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_DONE);
		sqlite3_finalize(st);
	}
	c = config_of(&f, 1024, 0, 0);
	CU_ASSERT_EQUAL_FATAL(hy_profiler_new(&c, &f.p, why, sizeof(why)), 0);
	for (const char *d = "src\0src/lib\0doc\0srcx\0tree\0"; *d; d += strlen(d) + 1) {
		snprintf(path, sizeof(path), "%s/%s", f.tmp, d);
		CU_ASSERT_EQUAL_FATAL(mkdir(path, 0700), 0);
	}
	for (int i = 0; i < 4; i++) {
		fd[i] = make_file(f.tmp, names[i], 4096, false);
		CU_ASSERT_TRUE_FATAL(fd[i] >= 0);
		CU_ASSERT_EQUAL(
			open_handle(f.p, &h[i], fd[i], 0, strrchr(names[i], '/') + 1, getpid()), 0);
		id[i] = h[i].file_id;
		hy_profiler_close(&h[i]);
	}
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	for (int i = 0; i < 4; i++)
		CU_ASSERT(path_is(&f, id[i], names[i]));
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files WHERE path_full = 1"), 4);

	/* src moves to tree/src2; a new src holds a file seen after the
	 * move, inserted in the same transaction as the move's rows */
	snprintf(path, sizeof(path), "%s/src", f.tmp);
	snprintf(path2, sizeof(path2), "%s/tree/src2", f.tmp);
	CU_ASSERT_EQUAL_FATAL(rename(path, path2), 0);
	hy_identity_dir_moved(hy_profiler_identity(f.p), "src", "tree/src2");
	CU_ASSERT_EQUAL_FATAL(mkdir(path, 0700), 0);
	fd[4] = make_file(f.tmp, "src/late", 4096, false);
	CU_ASSERT_TRUE_FATAL(fd[4] >= 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &h[4], fd[4], 0, "late", getpid()), 0);
	id[4] = h[4].file_id;
	hy_profiler_close(&h[4]);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	CU_ASSERT(path_is(&f, id[0], "tree/src2/lib/Makefile"));
	CU_ASSERT(path_is(&f, id[3], "tree/src2/top"));
	CU_ASSERT(path_is(&f, id[1], "doc/Makefile"));
	CU_ASSERT(path_is(&f, id[2], "srcx/Makefile"));
	CU_ASSERT(path_is(&f, id[4], "src/late"));
	/* a folder moved back to the top */
	snprintf(path, sizeof(path), "%s/lib", f.tmp);
	snprintf(path2, sizeof(path2), "%s/tree/src2/lib", f.tmp);
	CU_ASSERT_EQUAL_FATAL(rename(path2, path), 0);
	hy_identity_dir_moved(hy_profiler_identity(f.p), "tree/src2/lib", "lib");
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	CU_ASSERT(path_is(&f, id[0], "lib/Makefile"));
	CU_ASSERT(path_is(&f, id[3], "tree/src2/top"));

	/* a row with a base name (as schema 9 kept some): seen again, it
	 * takes its full path */
	CU_ASSERT_EQUAL(
		sqlite3_exec(f.db,
			     "UPDATE files SET path = 'Makefile', path_full = 0 WHERE path = "
			     "'doc/Makefile'",
			     NULL, NULL, NULL),
		SQLITE_OK);
	CU_ASSERT(path_is(&f, id[1], "Makefile"));
	CU_ASSERT_EQUAL(open_handle(f.p, &h[5], fd[1], 0, "Makefile", getpid()), 0);
	CU_ASSERT_EQUAL(h[5].file_id, id[1]);
	hy_profiler_close(&h[5]);
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	CU_ASSERT(path_is(&f, id[1], "doc/Makefile"));
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT path_full FROM files WHERE id = %" PRIu64, id[1]), 1);

	/* two folders exchanged (RENAME_EXCHANGE): three moves through a name
	 * no path has, as fs/ops_names.c queues them */
	snprintf(path, sizeof(path), "%s/doc", f.tmp);
	snprintf(path2, sizeof(path2), "%s/srcx", f.tmp);
	CU_ASSERT_EQUAL_FATAL(renameat2(AT_FDCWD, path, AT_FDCWD, path2, RENAME_EXCHANGE), 0);
	hy_identity_dir_moved(hy_profiler_identity(f.p), "doc", "\001exchange");
	hy_identity_dir_moved(hy_profiler_identity(f.p), "srcx", "doc");
	hy_identity_dir_moved(hy_profiler_identity(f.p), "\001exchange", "srcx");
	CU_ASSERT_EQUAL(hy_profiler_sync(f.p), 0);
	CU_ASSERT(path_is(&f, id[1], "srcx/Makefile"));
	CU_ASSERT(path_is(&f, id[2], "doc/Makefile"));
	CU_ASSERT(path_is(&f, id[0], "lib/Makefile"));
	for (int i = 0; i < 5; i++)
		close(fd[i]);
	free(real);
	fixture_done(&f);
}

/* hy_identity_sync_file, the cache's fsync of a journaled file: a new
 * file's row is made durable once (one sync of the WAL, which commits it
 * first); after that, and for every file known before the mount, an fsync
 * syncs nothing, even while other new files wait for their rows (before,
 * every first fsync of a file after any new file synced the WAL again,
 * and waited for the writer's transaction). */
static void test_sync_file_once(void)
{
	struct fixture f;
	struct hy_profile_handle ha, hb, hc;
	struct hy_profiler_config c;
	struct hy_identity *idt;
	uint64_t syncs;
	int fa, fb, fc;

	CU_ASSERT_TRUE_FATAL(fixture_init(&f, 1024, 0, 0));
	idt = hy_profiler_identity(f.p);
	fa = make_file(f.tmp, "a", 4096, false);
	fb = make_file(f.tmp, "b", 4096, false);
	fc = make_file(f.tmp, "c", 4096, false);
	CU_ASSERT_TRUE_FATAL(fa >= 0 && fb >= 0 && fc >= 0);
	syncs = hy_identity_wal_syncs(idt);

	/* a new file: its row committed and synced, once */
	CU_ASSERT_EQUAL(open_handle(f.p, &ha, fa, 0, "/a", getpid()), 0);
	CU_ASSERT_NOT_EQUAL_FATAL(ha.file_id, 0);
	CU_ASSERT_EQUAL(hy_identity_sync_file(idt, ha.file_id), 0);
	CU_ASSERT_EQUAL(hy_identity_wal_syncs(idt), syncs + 1);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files WHERE id = %" PRIu64, ha.file_id),
			1);
	CU_ASSERT_EQUAL(hy_identity_sync_file(idt, ha.file_id), 0);
	CU_ASSERT_EQUAL(hy_identity_wal_syncs(idt), syncs + 1);

	/* another new file, its row pending: the first one's fsync still
	 * syncs nothing; the new one's syncs once */
	CU_ASSERT_EQUAL(open_handle(f.p, &hb, fb, 0, "/b", getpid()), 0);
	CU_ASSERT_EQUAL(hy_identity_sync_file(idt, ha.file_id), 0);
	CU_ASSERT_EQUAL(hy_identity_wal_syncs(idt), syncs + 1);
	CU_ASSERT_EQUAL(hy_identity_sync_file(idt, hb.file_id), 0);
	CU_ASSERT_EQUAL(hy_identity_wal_syncs(idt), syncs + 2);
	CU_ASSERT_EQUAL(q_int(f.db, "SELECT count(*) FROM files WHERE id = %" PRIu64, hb.file_id),
			1);
	hy_profiler_close(&ha);
	hy_profiler_close(&hb);

	/* the next mount: one sync at its start, none for the files of
	 * before, even with a new file pending */
	profiler_stop(&f);
	c = config_of(&f, 1024, 0, 0);
	CU_ASSERT_EQUAL_FATAL(hy_profiler_new(&c, &f.p, why, sizeof(why)), 0);
	idt = hy_profiler_identity(f.p);
	syncs = hy_identity_wal_syncs(idt);
	CU_ASSERT_EQUAL(open_handle(f.p, &ha, fa, 0, "/a", getpid()), 0);
	CU_ASSERT_EQUAL(open_handle(f.p, &hc, fc, 0, "/c", getpid()), 0);
	CU_ASSERT_TRUE(hc.file_id > hb.file_id);
	CU_ASSERT_EQUAL(hy_identity_sync_file(idt, ha.file_id), 0);
	CU_ASSERT_EQUAL(hy_identity_sync_file(idt, hb.file_id), 0);
	CU_ASSERT_EQUAL(hy_identity_wal_syncs(idt), syncs);
	CU_ASSERT_EQUAL(hy_identity_sync_file(idt, hc.file_id), 0);
	CU_ASSERT_EQUAL(hy_identity_wal_syncs(idt), syncs + 1);
	hy_profiler_close(&ha);
	hy_profiler_close(&hc);

	close(fa);
	close(fb);
	close(fc);
	fixture_done(&f);
}

int hy_test_add_identity(void)
{
	CU_pSuite s = CU_add_suite("identity", NULL, NULL);

	if (!s || !CU_add_test(s, "file ids: pending, committed, after restart", test_file_ids) ||
	    !CU_add_test(s, "file ids found by identity, none made", test_find_file) ||
	    !CU_add_test(s, "a failed lookup makes no file id", test_lookup_error_makes_no_id) ||
	    !CU_add_test(s, "full paths, moved with their folders", test_full_paths) ||
	    !CU_add_test(s, "a file's row made durable once, not per fsync", test_sync_file_once))
		return -1;
	return 0;
}
