/* state.c - see include/hybridfs/state.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/log.h"
#include "hybridfs/state.h"

/* migrations[v] brings a database from version v to v + 1. Never edit a
 * step that has shipped: add the next one. */
static const char *const migrations[HY_STATE_SCHEMA_VERSION] = {
	/* 0 -> 1: the mount's identity */
	"CREATE TABLE mount_info (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);",
	/* 1 -> 2: the profiler's access log (see state.h for the columns) */
	"CREATE TABLE processes (id INTEGER PRIMARY KEY, pid INTEGER NOT NULL,"
	" comm TEXT NOT NULL, exe TEXT, first_seen_ns INTEGER NOT NULL);"
	"CREATE TABLE files (id INTEGER PRIMARY KEY, dev INTEGER NOT NULL, ino INTEGER NOT NULL,"
	" birth_ns INTEGER NOT NULL, path TEXT, first_seen_ns INTEGER NOT NULL,"
	" UNIQUE (dev, ino, birth_ns));"
	"CREATE TABLE access_log (ts_ns INTEGER NOT NULL, process_id INTEGER NOT NULL,"
	" file_id INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL,"
	" mode INTEGER NOT NULL, class INTEGER, phys_block INTEGER);"
	"CREATE INDEX access_log_ts ON access_log (ts_ns);"
	"CREATE VIEW access_log_blocks AS SELECT rowid AS seq, ts_ns, process_id, file_id, offset,"
	" length, offset / 4096 AS block_first,"
	" (offset + length + 4095) / 4096 - offset / 4096 AS block_count, mode, class, phys_block"
	" FROM access_log;",
	/* 2 -> 3: the master access graph and the analyzer's runs */
	"CREATE TABLE graph_vertices (id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL,"
	" block INTEGER NOT NULL, nblocks INTEGER NOT NULL, weight REAL NOT NULL);"
	"CREATE INDEX graph_vertices_range ON graph_vertices (file_id, block);"
	"CREATE TABLE graph_edges (src INTEGER NOT NULL, dst INTEGER NOT NULL,"
	" weight REAL NOT NULL, PRIMARY KEY (src, dst)) WITHOUT ROWID;"
	"CREATE TABLE analyzer_runs (id INTEGER PRIMARY KEY, finished_ns INTEGER NOT NULL,"
	" mode TEXT NOT NULL, last_log_rowid INTEGER NOT NULL, requests INTEGER NOT NULL,"
	" vertices INTEGER NOT NULL, edges INTEGER NOT NULL, cut_vertices INTEGER NOT NULL);",
	/* 3 -> 4: the indirection map */
	"CREATE TABLE bopt_map (file_id INTEGER NOT NULL, block INTEGER NOT NULL,"
	" nblocks INTEGER NOT NULL, bopt_block INTEGER NOT NULL, dirty INTEGER NOT NULL,"
	" generation INTEGER NOT NULL, PRIMARY KEY (file_id, block)) WITHOUT ROWID;",
	/* 4 -> 5: stamps against outside changes, checkpoints, plans */
	"ALTER TABLE bopt_map ADD COLUMN stamp_ns INTEGER NOT NULL DEFAULT 0;"
	"CREATE TABLE bopt_checkpoint (id INTEGER PRIMARY KEY CHECK (id = 1),"
	" generation INTEGER NOT NULL, epoch INTEGER NOT NULL, saved_ns INTEGER NOT NULL);"
	"CREATE TABLE bopt_plans (generation INTEGER PRIMARY KEY, created_ns INTEGER NOT NULL,"
	" finished_ns INTEGER, mode TEXT NOT NULL, requests INTEGER NOT NULL,"
	" vertices INTEGER NOT NULL, edges INTEGER NOT NULL, ranges INTEGER NOT NULL,"
	" blocks INTEGER NOT NULL, capacity_blocks INTEGER NOT NULL, state TEXT NOT NULL,"
	" copied_blocks INTEGER NOT NULL DEFAULT 0, dropped_blocks INTEGER NOT NULL DEFAULT 0,"
	" kept_blocks INTEGER NOT NULL DEFAULT 0, skipped_ranges INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE bopt_plan_ranges (generation INTEGER NOT NULL, bopt_block INTEGER NOT NULL,"
	" file_id INTEGER NOT NULL, block INTEGER NOT NULL, nblocks INTEGER NOT NULL,"
	" heat REAL NOT NULL, PRIMARY KEY (generation, bopt_block)) WITHOUT ROWID;",
	/* 5 -> 6: the policy table's settings that differ from the defaults */
	"CREATE TABLE workload_policy (name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);",
	/* 6 -> 7: files seen gone, so that their rows can be pruned */
	"ALTER TABLE files ADD COLUMN gone_ns INTEGER;"
	"ALTER TABLE files ADD COLUMN gone_rowid INTEGER;"
	"CREATE INDEX files_gone ON files (gone_rowid) WHERE gone_rowid IS NOT NULL;",
	/* 7 -> 8: the filesystems' UUIDs, so that files follow a renumbered disk */
	"CREATE TABLE volumes (dev INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE,"
	" seen_ns INTEGER NOT NULL);",
	/* 8 -> 9: the files the last plan left out, and why (explain) */
	"CREATE TABLE plan_files (file_id INTEGER PRIMARY KEY, reason TEXT NOT NULL,"
	" requests INTEGER NOT NULL, run INTEGER NOT NULL);",
	/* 9 -> 10: files.path is the path relative to the mount, kept across
	 * renames of a folder above it (a range of this index); the rows of
	 * before keep what they had (base names among them) until seen again */
	"ALTER TABLE files ADD COLUMN path_full INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX files_path ON files (path);",
	/* 10 -> 11: what hybridctl pins and excludes (cache and plans) */
	"CREATE TABLE cache_rules (kind TEXT NOT NULL, pattern TEXT NOT NULL,"
	" PRIMARY KEY (kind, pattern)) WITHOUT ROWID;",
	/* 11 -> 12: counters kept across mounts and their samples (counters.h) */
	"CREATE TABLE metric_totals (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL,"
	" saved_ns INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE TABLE metric_samples (ts INTEGER PRIMARY KEY, counters TEXT NOT NULL);",
};

int hy_state_errno(int sqlite_code)
{
	switch (sqlite_code & 0xff) { /* the primary code of an extended one */
	case SQLITE_OK:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		return -EUCLEAN;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	default:
		return -EIO;
	}
}

static int db_error(struct hy_state *state, const char *doing, char *why, size_t why_size)
{
	snprintf(why, why_size, "state database \"%s\": %s: %s", state->db_path, doing,
		 sqlite3_errmsg(state->db));
	return hy_state_errno(sqlite3_errcode(state->db));
}

static int make_uuid(char out[37])
{
	unsigned char b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -errno;
	b[6] = (b[6] & 0x0f) | 0x40; /* version 4 */
	b[8] = (b[8] & 0x3f) | 0x80; /* RFC 4122 variant */
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
	return 0;
}

static int set_info(struct hy_state *state, const char *key, const char *value)
{
	sqlite3_stmt *stmt;
	int rc;

	rc = sqlite3_prepare_v2(state->db,
				"INSERT OR REPLACE INTO mount_info(key, value) VALUES (?1, ?2)", -1,
				&stmt, NULL);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(stmt, 2, value, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int hy_state_get_info(struct hy_state *state, const char *key, char *buf, size_t size)
{
	sqlite3_stmt *stmt;
	int rc;

	if (sqlite3_prepare_v2(state->db, "SELECT value FROM mount_info WHERE key = ?1", -1, &stmt,
			       NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		snprintf(buf, size, "%s", (const char *)sqlite3_column_text(stmt, 0));
		rc = 0;
	} else {
		rc = rc == SQLITE_DONE ? -ENOENT : -EIO;
	}
	sqlite3_finalize(stmt);
	return rc;
}

/* <linux/fs.h> from before Linux 6.5 lacks it; the kernel's ABI is fixed */
#ifndef FS_IOC_GETFSUUID
struct fsuuid2 {
	uint8_t len;
	uint8_t uuid[16];
};
#define FS_IOC_GETFSUUID _IOR(0x15, 0, struct fsuuid2)
#endif

/* The device number of the filesystem @path is on, and its UUID (the
 * superblock's: ext4, xfs and btrfs keep it on the disk, tmpfs makes one
 * per mount), which a renumbering of the disk does not change. 0, or a
 * negative errno (-ENODATA: the filesystem has none, or the kernel cannot
 * say, before 6.5; an all-zero UUID is none). */
static int volume_of(const char *path, uint64_t *dev, char uuid[40])
{
	struct fsuuid2 u = {.len = sizeof(u.uuid)};
	struct stat st;
	bool zero = true;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || ioctl(fd, FS_IOC_GETFSUUID, &u) < 0)
		rc = errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP ? -ENODATA : -errno;
	close(fd);
	if (rc)
		return rc;
	for (unsigned i = 0; i < u.len && i < sizeof(u.uuid); i++)
		zero = zero && u.uuid[i] == 0;
	if (u.len == 0 || u.len > sizeof(u.uuid) || zero)
		return -ENODATA;
	*dev = (uint64_t)st.st_dev;
	for (unsigned i = 0; i < u.len; i++)
		snprintf(uuid + 2 * i, 3, "%02x", u.uuid[i]);
	return 0;
}

static int64_t one_int(sqlite3 *db, const char *sql, const char *text, int64_t a, int64_t otherwise)
{
	sqlite3_stmt *stmt;
	int64_t v = otherwise;

	if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
		return otherwise;
	if (text)
		sqlite3_bind_text(stmt, 1, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 2, a);
	if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return v;
}

static int exec2(sqlite3 *db, const char *sql, const char *text, int64_t a, int64_t b)
{
	sqlite3_stmt *stmt;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return rc;
	if (text)
		sqlite3_bind_text(stmt, 1, text, -1, SQLITE_STATIC);
	sqlite3_bind_int64(stmt, 2, a);
	sqlite3_bind_int64(stmt, 3, b);
	rc = sqlite3_step(stmt);
	sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Files are known by (dev, ino, birth), and st_dev is only the number the
 * kernel gave the disk at this boot: a disk numbered otherwise after a
 * reboot would have its files taken for gone (their dirty cache lines
 * and BOPT blocks with them). The backing filesystem's UUID is kept with
 * the number it had (table volumes); when the number has changed, the
 * rows of its files follow it here, at mount, before anyone looks a file
 * up, so every lookup (the profiler's, BORG's, the cache's recovery)
 * compares today's numbers. Another volume's rows that held today's
 * number are set aside under a negative number (no st_dev is) until that
 * volume is the backing one again. A filesystem without a UUID keeps the
 * behaviour of before: its rows are compared by number. */
static int follow_volume(struct hy_state *state, const char *backing, char *why, size_t why_size)
{
	char uuid[40];
	uint64_t dev;
	int64_t old, other = 0, park;
	int rc = volume_of(backing, &dev, uuid);

	if (rc < 0) {
		/* no UUID, or no backing directory to ask (the daemon checks
		 * it; the tests name none): rows are compared by number */
		if (rc != -ENODATA && rc != -ENOENT)
			hy_log(LOG_WARNING,
			       "state: backing directory \"%s\": its filesystem's UUID: %s; files "
			       "are known by its device number only",
			       backing, strerror(-rc));
		return 0;
	}
	old = one_int(state->db, "SELECT dev FROM volumes WHERE uuid = ?1", uuid, 0, INT64_MIN);
	if (old == (int64_t)dev)
		return 0;
	if (sqlite3_exec(state->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_error(state, "cannot record the backing filesystem", why, why_size);
	other = one_int(state->db, "SELECT count(*) FROM volumes WHERE dev = ?2", NULL,
			(int64_t)dev, 0);
	if (other > 0) {
		park = one_int(state->db, "SELECT min(dev) FROM volumes WHERE dev < 0", NULL, 0,
			       0) -
		       1;
		if (exec2(state->db, "UPDATE files SET dev = ?3 WHERE dev = ?2", NULL, (int64_t)dev,
			  park) != SQLITE_OK ||
		    exec2(state->db, "UPDATE volumes SET dev = ?3 WHERE dev = ?2", NULL,
			  (int64_t)dev, park) != SQLITE_OK)
			goto fail;
		hy_log(LOG_NOTICE,
		       "state: device %u:%u was another filesystem's when last seen; its files' "
		       "rows are set aside until it is the backing one again",
		       major((dev_t)dev), minor((dev_t)dev));
	}
	if (old != INT64_MIN) {
		if (exec2(state->db, "UPDATE files SET dev = ?2 WHERE dev = ?3", NULL, (int64_t)dev,
			  old) != SQLITE_OK)
			goto fail;
		hy_log(LOG_NOTICE,
		       "state: the backing filesystem (UUID %s) was device %u:%u, is %u:%u now: "
		       "%d files follow it",
		       uuid, old >= 0 ? major((dev_t)old) : 0, old >= 0 ? minor((dev_t)old) : 0,
		       major((dev_t)dev), minor((dev_t)dev), sqlite3_changes(state->db));
		rc = exec2(state->db, "UPDATE volumes SET dev = ?2, seen_ns = ?3 WHERE uuid = ?1",
			   uuid, (int64_t)dev, (int64_t)time(NULL) * 1000000000LL);
	} else {
		rc = exec2(state->db,
			   "INSERT INTO volumes (uuid, dev, seen_ns) VALUES (?1, ?2, ?3)", uuid,
			   (int64_t)dev, (int64_t)time(NULL) * 1000000000LL);
	}
	if (rc != SQLITE_OK || sqlite3_exec(state->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	return 0;
fail:
	rc = db_error(state, "cannot record the backing filesystem's UUID", why, why_size);
	sqlite3_exec(state->db, "ROLLBACK", NULL, NULL, NULL);
	if (old == INT64_MIN && other == 0) {
		/* a first sight only: nothing to follow yet, the mount goes on
		 * (a full state disk: fulldisk.sh) and records it next time */
		hy_log(LOG_WARNING, "%s", why);
		return 0;
	}
	return rc;
}

static int read_version(struct hy_state *state, int *version)
{
	sqlite3_stmt *stmt;
	int rc;

	rc = sqlite3_prepare_v2(state->db, "PRAGMA user_version", -1, &stmt, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW) {
		*version = sqlite3_column_int(stmt, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(stmt);
	return rc;
}

/* Runs every missing migration step in one transaction, so a crash leaves
 * the database at its old version, never between two. */
static int migrate(struct hy_state *state, int from, const char *backing, char *why,
		   size_t why_size)
{
	char sql[64], value[64];
	int v;

	if (sqlite3_exec(state->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_error(state, "cannot start the schema migration", why, why_size);
	for (v = from; v < HY_STATE_SCHEMA_VERSION; v++) {
		if (sqlite3_exec(state->db, migrations[v], NULL, NULL, NULL) != SQLITE_OK)
			goto fail;
	}
	if (from == 0) {
		if (make_uuid(state->uuid))
			goto fail;
		snprintf(value, sizeof(value), "%" PRId64, (int64_t)time(NULL));
		if (set_info(state, "uuid", state->uuid) || set_info(state, "backing", backing) ||
		    set_info(state, "created", value) ||
		    set_info(state, "hybridfs_version", PACKAGE_VERSION))
			goto fail;
		state->created_now = true;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", HY_STATE_SCHEMA_VERSION);
	if (sqlite3_exec(state->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (sqlite3_exec(state->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (from > 0)
		hy_log(LOG_NOTICE, "state: migrated \"%s\" from schema %d to %d", state->db_path,
		       from, HY_STATE_SCHEMA_VERSION);
	return 0;
fail : {
	int rc = db_error(state, "schema migration failed", why, why_size);

	sqlite3_exec(state->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}
}

static int prepare_dir(const char *dir, bool read_only, char *why, size_t why_size)
{
	struct stat st;

	if (!read_only && mkdir(dir, 0700) < 0 && errno != EEXIST) {
		int err = errno;

		snprintf(why, why_size, "state folder \"%s\": cannot create it: %s", dir,
			 strerror(err));
		return -err;
	}
	if (lstat(dir, &st) < 0) {
		int err = errno;

		snprintf(why, why_size, "state folder \"%s\": %s", dir, strerror(err));
		return -err;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, why_size, "state folder \"%s\" is not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, why_size,
			 "state folder \"%s\" belongs to uid %u, not to the mounting user (uid %u)",
			 dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (!read_only && (st.st_mode & 0077) && chmod(dir, 0700) < 0) {
		int err = errno;

		snprintf(why, why_size, "state folder \"%s\": cannot make it private: %s", dir,
			 strerror(err));
		return -err;
	}
	return 0;
}

/* A database that is missing or empty (0 bytes: SQLite would take it for a
 * new one) in a folder that holds what an earlier mount made beside it
 * (the BOPT, its map journal, the cache store) was lost or truncated:
 * starting a new one would give the mount a new identity, and the files
 * that belong to the old one (their dirty blocks among them) would be
 * refused later with a message that blames them (damaged.sh: db-empty).
 * Refused here, naming the database; nothing is changed. */
static int check_not_lost(struct hy_state *state, char *why, size_t why_size)
{
	static const char *const beside[] = {"bopt", "bopt-map.journal", "cache"};
	char path[4096];
	struct stat st;

	if (stat(state->db_path, &st) == 0) {
		if (st.st_size > 0)
			return 0;
	} else if (errno != ENOENT) {
		return 0; /* the open below says what is wrong */
	}
	for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", state->dir, beside[i]);
		if (lstat(path, &st) == 0 && st.st_size > 0) {
			snprintf(why, why_size,
				 "state database \"%s\" is missing or empty (truncated?), but the "
				 "state folder holds an earlier mount's \"%s\", which needs it; "
				 "refusing to start a new database (restore it, or move the state "
				 "folder aside to start afresh)",
				 state->db_path, beside[i]);
			return -EUCLEAN;
		}
	}
	return 0;
}

int hy_state_open(const char *dir, const char *backing, bool read_only, struct hy_state **out,
		  char *why, size_t why_size)
{
	struct hy_state *state;
	char stored[4096], created[32];
	int version = 0, rc, flags;

	*out = NULL;
	rc = prepare_dir(dir, read_only, why, why_size);
	if (rc)
		return rc;
	state = calloc(1, sizeof(*state));
	if (!state)
		return -ENOMEM;
	state->dir = strdup(dir);
	if (!state->dir || asprintf(&state->db_path, "%s/%s", dir, HY_STATE_DB_NAME) < 0) {
		state->db_path = NULL;
		rc = -ENOMEM;
		goto fail;
	}
	/* SQLite makes its -wal and -shm files with the database's mode: a
	 * database born 0600 keeps the access log the user's alone even if
	 * the folder's mode is loosened later (invariant 8). */
	rc = check_not_lost(state, why, why_size);
	if (rc)
		goto fail;
	if (!read_only) {
		int fd = open(state->db_path, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);

		if (fd < 0) {
			rc = -errno;
			snprintf(why, why_size, "state database \"%s\": %s", state->db_path,
				 strerror(-rc));
			goto fail;
		}
		close(fd);
	}
	flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	if (sqlite3_open_v2(state->db_path, &state->db, flags | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		rc = state->db ? db_error(state, "cannot open", why, why_size) : -ENOMEM;
		goto fail;
	}
	sqlite3_busy_timeout(state->db, 5000);
	/* The first read of a file that is not SQLite fails here, with
	 * SQLITE_NOTADB: before anything is written to it. */
	if (read_version(state, &version) != SQLITE_OK) {
		rc = db_error(state, "cannot read the schema version", why, why_size);
		goto fail;
	}
	if (version > HY_STATE_SCHEMA_VERSION) {
		snprintf(why, why_size,
			 "state database \"%s\" has schema version %d, made by a newer hybridfs "
			 "(this one knows up to %d); refusing to touch it",
			 state->db_path, version, HY_STATE_SCHEMA_VERSION);
		rc = -EPROTO;
		goto fail;
	}
	if (version < 0) {
		snprintf(why, why_size, "state database \"%s\" has an impossible schema version %d",
			 state->db_path, version);
		rc = -EUCLEAN;
		goto fail;
	}
	if (!read_only) {
		if (sqlite3_exec(state->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) !=
			    SQLITE_OK ||
		    sqlite3_exec(state->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) !=
			    SQLITE_OK) {
			rc = db_error(state, "cannot set the journal mode", why, why_size);
			goto fail;
		}
		if (version < HY_STATE_SCHEMA_VERSION) {
			rc = migrate(state, version, backing ? backing : "", why, why_size);
			if (rc)
				goto fail;
		}
	} else if (version < HY_STATE_SCHEMA_VERSION) {
		snprintf(why, why_size, "state database \"%s\" is not set up (schema version %d)",
			 state->db_path, version);
		rc = -ENOENT;
		goto fail;
	}
	if (hy_state_get_info(state, "uuid", state->uuid, sizeof(state->uuid)) ||
	    hy_state_get_info(state, "created", created, sizeof(created))) {
		snprintf(why, why_size, "state database \"%s\" has lost the mount's identity",
			 state->db_path);
		rc = -EUCLEAN;
		goto fail;
	}
	state->created = strtoll(created, NULL, 10);
	if (!read_only && backing && backing[0]) {
		rc = follow_volume(state, backing, why, why_size);
		if (rc)
			goto fail;
	}
	if (!read_only && backing &&
	    hy_state_get_info(state, "backing", stored, sizeof(stored)) == 0 &&
	    strcmp(stored, backing) != 0) {
		hy_log(LOG_NOTICE, "state: backing directory moved from \"%s\" to \"%s\"", stored,
		       backing);
		if (set_info(state, "backing", backing) != SQLITE_OK) {
			rc = db_error(state, "cannot record the backing directory", why, why_size);
			goto fail;
		}
	}
	*out = state;
	return 0;
fail:
	hy_state_close(state);
	return rc;
}

void hy_state_close(struct hy_state *state)
{
	if (!state)
		return;
	if (state->db && sqlite3_close(state->db) != SQLITE_OK)
		hy_log(LOG_ERR, "state: closing \"%s\": %s", state->db_path,
		       sqlite3_errmsg(state->db));
	free(state->dir);
	free(state->db_path);
	free(state);
}
