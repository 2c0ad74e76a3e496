/* test_state.c - the state folder, schema creation, migration and refusal
 * of damaged or newer databases. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/log.h"
#include "hybridfs/state.h"
#include "suites.h"

static char why[1024];

static void test_create_and_reopen(void)
{
	char *tmp = hy_test_tmpdir(), *dir = hy_test_path_in(tmp, "state"), uuid[37], value[64];
	struct hy_state *state;
	struct stat st;
	sqlite3_stmt *stmt;

	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/backing", false, &state, why, sizeof(why)), 0);
	CU_ASSERT_TRUE(state->created_now);
	CU_ASSERT_EQUAL(strlen(state->uuid), 36);
	snprintf(uuid, sizeof(uuid), "%s", state->uuid);
	CU_ASSERT_EQUAL(stat(dir, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0700);
	/* WAL mode and the current version are on disk */
	CU_ASSERT_EQUAL(sqlite3_prepare_v2(state->db, "PRAGMA journal_mode", -1, &stmt, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(stmt), SQLITE_ROW);
	CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(stmt, 0), "wal");
	sqlite3_finalize(stmt);
	hy_state_close(state);

	/* the identity survives; a moved backing directory is recorded */
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/moved", false, &state, why, sizeof(why)), 0);
	CU_ASSERT_FALSE(state->created_now);
	CU_ASSERT_STRING_EQUAL(state->uuid, uuid);
	CU_ASSERT_EQUAL(hy_state_get_info(state, "backing", value, sizeof(value)), 0);
	CU_ASSERT_STRING_EQUAL(value, "/moved");
	CU_ASSERT_EQUAL(hy_state_get_info(state, "nonesuch", value, sizeof(value)), -ENOENT);
	hy_state_close(state);

	/* read-only open sees the same */
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, NULL, true, &state, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(state->uuid, uuid);
	hy_state_close(state);

	/* a private folder made loose is made private again */
	CU_ASSERT_EQUAL(chmod(dir, 0755), 0);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/moved", false, &state, why, sizeof(why)), 0);
	hy_state_close(state);
	CU_ASSERT_EQUAL(stat(dir, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0700);

	hy_test_rmtree(tmp);
	free(tmp), free(dir);
}

static void test_garbage_refused(void)
{
	char *tmp = hy_test_tmpdir(), *db = hy_test_path_in(tmp, HY_STATE_DB_NAME);
	char junk[8192], after[8192];
	struct hy_state *state;
	int fd;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 7 + 3);
	fd = open(db, O_CREAT | O_WRONLY, 0600);
	CU_ASSERT_EQUAL(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	CU_ASSERT_EQUAL(hy_state_open(tmp, "/b", false, &state, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NULL(state);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, db));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not a database"));
	/* nothing was written into it */
	fd = open(db, O_RDONLY);
	CU_ASSERT_EQUAL(read(fd, after, sizeof(after)), (ssize_t)sizeof(after));
	close(fd);
	CU_ASSERT_EQUAL(memcmp(junk, after, sizeof(junk)), 0);
	hy_test_rmtree(tmp);
	free(tmp), free(db);
}

static void test_newer_refused(void)
{
	char *tmp = hy_test_tmpdir(), *db = hy_test_path_in(tmp, HY_STATE_DB_NAME);
	struct hy_state *state;
	sqlite3 *raw;

	CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &raw), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_exec(raw, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(raw);
	CU_ASSERT_EQUAL(hy_state_open(tmp, "/b", false, &state, why, sizeof(why)), -EPROTO);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "newer hybridfs"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "99"));
	hy_test_rmtree(tmp);
	free(tmp), free(db);
}

/* An empty SQLite file (version 0) is brought forward by the migrations. */
static void test_migrate_from_empty(void)
{
	char *tmp = hy_test_tmpdir(), *db = hy_test_path_in(tmp, HY_STATE_DB_NAME);
	struct hy_state *state;
	sqlite3 *raw;
	sqlite3_stmt *stmt;

	CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &raw), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_exec(raw, "CREATE TABLE unrelated(x)", NULL, NULL, NULL),
			SQLITE_OK);
	sqlite3_close(raw);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(tmp, "/b", false, &state, why, sizeof(why)), 0);
	CU_ASSERT_TRUE(state->created_now);
	CU_ASSERT_EQUAL(sqlite3_prepare_v2(state->db, "PRAGMA user_version", -1, &stmt, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(stmt), SQLITE_ROW);
	CU_ASSERT_EQUAL(sqlite3_column_int(stmt, 0), HY_STATE_SCHEMA_VERSION);
	sqlite3_finalize(stmt);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp), free(db);
}

/* A version-1 database (the mount's identity only) gains the profiler's
 * tables and keeps its identity. */
static void test_migrate_from_v1(void)
{
	char *tmp = hy_test_tmpdir(), *db = hy_test_path_in(tmp, HY_STATE_DB_NAME);
	struct hy_state *state;
	sqlite3 *raw;
	sqlite3_stmt *stmt;

	CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &raw), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_exec(raw,
				     "CREATE TABLE mount_info (key TEXT PRIMARY KEY NOT NULL,"
				     " value TEXT NOT NULL);"
				     "INSERT INTO mount_info VALUES ('uuid',"
				     " '11111111-2222-4333-8444-555555555555'),"
				     " ('created', '1700000000'), ('backing', '/b');"
				     "PRAGMA user_version = 1;",
				     NULL, NULL, NULL),
			SQLITE_OK);
	sqlite3_close(raw);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(tmp, "/b", false, &state, why, sizeof(why)), 0);
	CU_ASSERT_FALSE(state->created_now);
	CU_ASSERT_STRING_EQUAL(state->uuid, "11111111-2222-4333-8444-555555555555");
	CU_ASSERT_EQUAL(state->created, 1700000000);
	CU_ASSERT_EQUAL(
		sqlite3_exec(state->db,
			     "INSERT INTO processes VALUES (1, 42, 'cat', NULL, 1);"
			     "INSERT INTO files (id, dev, ino, birth_ns, path, first_seen_ns) "
			     "VALUES (1, 1, 2, 3, 'a', 1);"
			     "INSERT INTO access_log VALUES (5, 1, 1, 4095, 2, 0, NULL, NULL);",
			     NULL, NULL, NULL),
		SQLITE_OK);
	/* a reused inode number with another birth time is another file */
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "INSERT INTO files (id, dev, ino, birth_ns, path, "
				     "first_seen_ns) VALUES (2, 1, 2, 4, 'a', 2);",
				     NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_NOT_EQUAL(sqlite3_exec(state->db,
					 "INSERT INTO files (id, dev, ino, birth_ns, path, "
					 "first_seen_ns) VALUES (3, 1, 2, 3, 'b', 3);",
					 NULL, NULL, NULL),
			    SQLITE_OK);
	/* bytes 4095..4096 touch blocks 0 and 1 */
	CU_ASSERT_EQUAL(sqlite3_prepare_v2(state->db,
					   "SELECT block_first, block_count FROM access_log_blocks",
					   -1, &stmt, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(stmt), SQLITE_ROW);
	CU_ASSERT_EQUAL(sqlite3_column_int(stmt, 0), 0);
	CU_ASSERT_EQUAL(sqlite3_column_int(stmt, 1), 2);
	sqlite3_finalize(stmt);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp), free(db);
}

/* A version-11 database (before the counters kept across mounts) gains
 * metric_totals and metric_samples, and keeps what it had. */
static void test_migrate_from_v11(void)
{
	char *tmp = hy_test_tmpdir(), *db = hy_test_path_in(tmp, HY_STATE_DB_NAME);
	struct hy_state *state;
	sqlite3 *raw;
	sqlite3_stmt *stmt;
	char uuid[37];

	/* today's database, taken back to 11 as 11 made it */
	CU_ASSERT_EQUAL_FATAL(hy_state_open(tmp, "/b", false, &state, why, sizeof(why)), 0);
	snprintf(uuid, sizeof(uuid), "%s", state->uuid);
	hy_state_close(state);
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(db, &raw), SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_exec(raw,
				     "DROP TABLE metric_totals; DROP TABLE metric_samples;"
				     "INSERT INTO cache_rules VALUES ('exclude', '*.o');"
				     "PRAGMA user_version = 11;",
				     NULL, NULL, NULL),
			SQLITE_OK);
	sqlite3_close(raw);
	/* read-only, it is refused as not set up (hybridctl of a newer version) */
	CU_ASSERT_EQUAL(hy_state_open(tmp, NULL, true, &state, why, sizeof(why)), -ENOENT);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(tmp, "/b", false, &state, why, sizeof(why)), 0);
	CU_ASSERT_FALSE(state->created_now);
	CU_ASSERT_STRING_EQUAL(state->uuid, uuid);
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "INSERT INTO metric_totals VALUES ('operations.read', 5, 1);"
				     "INSERT INTO metric_samples VALUES (1, '{}');",
				     NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(
		sqlite3_prepare_v2(state->db, "SELECT pattern FROM cache_rules", -1, &stmt, NULL),
		SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(stmt), SQLITE_ROW);
	CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(stmt, 0), "*.o");
	sqlite3_finalize(stmt);
	CU_ASSERT_EQUAL(sqlite3_prepare_v2(state->db, "PRAGMA user_version", -1, &stmt, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(sqlite3_step(stmt), SQLITE_ROW);
	CU_ASSERT_EQUAL(sqlite3_column_int(stmt, 0), 12);
	sqlite3_finalize(stmt);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp), free(db);
}

static void test_bad_folders(void)
{
	char *tmp = hy_test_tmpdir(), *file = hy_test_path_in(tmp, "file"),
	     *missing = hy_test_path_in(tmp, "a/b");
	struct hy_state *state;

	fclose(fopen(file, "w"));
	CU_ASSERT_EQUAL(hy_state_open(file, "/b", false, &state, why, sizeof(why)), -ENOTDIR);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "is not a directory"));
	CU_ASSERT_EQUAL(hy_state_open(missing, "/b", false, &state, why, sizeof(why)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "cannot create"));
	if (geteuid() == 0) {
		char *other = hy_test_path_in(tmp, "other");

		CU_ASSERT_EQUAL(mkdir(other, 0700), 0);
		CU_ASSERT_EQUAL(chown(other, 65534, 65534), 0);
		CU_ASSERT_EQUAL(hy_state_open(other, "/b", false, &state, why, sizeof(why)),
				-EPERM);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "belongs to uid 65534"));
		free(other);
	}
	/* read-only open of a folder without a database creates nothing */
	CU_ASSERT_NOT_EQUAL(hy_state_open(tmp, NULL, true, &state, why, sizeof(why)), 0);
	hy_test_rmtree(tmp);
	free(tmp), free(file), free(missing);
}

/* The names the daemon's messages show for the folders it reaches through
 * /proc/self/fd: each alias applied, a longer descriptor number left. */
static void test_log_aliases(void)
{
	char buf[256];

	hy_log_set_alias("/proc/self/fd/4", "/home/ann/.local/state/hybridfs/x");
	hy_log_add_alias("/proc/self/fd/7", "/home/ann/src/.hybridfs");
	snprintf(buf, sizeof(buf),
		 "cannot open \"/proc/self/fd/4/hybridfs.db\" or "
		 "/proc/self/fd/7/bopt or /proc/self/fd/41/x");
	hy_log_unalias(buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "cannot open \"/home/ann/.local/state/hybridfs/x/"
				    "hybridfs.db\" or /home/ann/src/.hybridfs/bopt or "
				    "/proc/self/fd/41/x");
	/* set clears the added ones */
	hy_log_set_alias("/proc/self/fd/4", "/s");
	snprintf(buf, sizeof(buf), "/proc/self/fd/7/bopt");
	CU_ASSERT_STRING_EQUAL(hy_log_unalias(buf, sizeof(buf)), "/proc/self/fd/7/bopt");
	hy_log_set_alias(NULL, NULL);
}

int hy_test_add_state(void)
{
	CU_pSuite s = CU_add_suite("state", NULL, NULL);

	if (!s || !CU_add_test(s, "create and reopen", test_create_and_reopen) ||
	    !CU_add_test(s, "garbage database refused untouched", test_garbage_refused) ||
	    !CU_add_test(s, "newer schema refused", test_newer_refused) ||
	    !CU_add_test(s, "migration from version 0", test_migrate_from_empty) ||
	    !CU_add_test(s, "migration from version 1", test_migrate_from_v1) ||
	    !CU_add_test(s, "migration from version 11", test_migrate_from_v11) ||
	    !CU_add_test(s, "bad state folders", test_bad_folders) ||
	    !CU_add_test(s, "log aliases for descriptor paths", test_log_aliases))
		return -1;
	return 0;
}
