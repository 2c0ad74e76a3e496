/* rules_db.c - the cache_rules rows of the state database (state.h): pins
 * and excludes kept across remounts; see include/hybridfs/rules.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "hybridfs/rules.h"
#include "hybridfs/state.h"

static int db_fail(struct sqlite3 *db, const char *doing, char *why, size_t why_size)
{
	snprintf(why, why_size, "state database: %s: %s", doing, sqlite3_errmsg(db));
	return hy_state_errno(sqlite3_errcode(db));
}

int hy_rules_load(struct sqlite3 *db, struct hy_rules *r, bool with_option, char *why,
		  size_t why_size)
{
	sqlite3_stmt *st;
	int step;

	if (sqlite3_prepare_v2(db, "SELECT kind, pattern FROM cache_rules ORDER BY kind, pattern",
			       -1, &st, NULL) != SQLITE_OK) {
		if (strstr(sqlite3_errmsg(db), "no such table"))
			return 0; /* a database older than schema 11 */
		return db_fail(db, "cannot read cache_rules", why, why_size);
	}
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 0);
		const char *pattern = (const char *)sqlite3_column_text(st, 1);
		int rc = 0;

		if (!kind || !pattern)
			continue;
		if (strcmp(kind, "pin") == 0)
			rc = hy_rules_add(r, HY_RULE_PIN, pattern);
		else if (strcmp(kind, "exclude") == 0 ||
			 (with_option && strcmp(kind, "exclude-option") == 0))
			rc = hy_rules_add(r, HY_RULE_EXCLUDE, pattern);
		if (rc < 0) {
			sqlite3_finalize(st);
			snprintf(why, why_size, "cache_rules: %s", strerror(-rc));
			return rc;
		}
	}
	sqlite3_finalize(st);
	if (step != SQLITE_DONE)
		return db_fail(db, "reading cache_rules", why, why_size);
	return 0;
}

int hy_rules_store(struct sqlite3 *db, const char *kind, const char *pattern, bool add, char *why,
		   size_t why_size)
{
	sqlite3_stmt *st;
	int step;

	if (sqlite3_prepare_v2(
		    db,
		    add ? "INSERT OR IGNORE INTO cache_rules (kind, pattern) VALUES (?1, ?2)"
			: "DELETE FROM cache_rules WHERE kind = ?1 AND pattern = ?2",
		    -1, &st, NULL) != SQLITE_OK)
		return db_fail(db, "cannot change cache_rules", why, why_size);
	sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pattern, -1, SQLITE_STATIC);
	step = sqlite3_step(st);
	sqlite3_finalize(st);
	if (step != SQLITE_DONE)
		return db_fail(db, "changing cache_rules", why, why_size);
	return 0;
}

int hy_rules_store_option(struct sqlite3 *db, char *const *globs, size_t n, char *why,
			  size_t why_size)
{
	int rc;

	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(db, "cannot begin a transaction", why, why_size);
	if (sqlite3_exec(db, "DELETE FROM cache_rules WHERE kind = 'exclude-option'", NULL, NULL,
			 NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot change cache_rules", why, why_size);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		rc = hy_rules_store(db, "exclude-option", globs[i], true, why, why_size);
		if (rc < 0)
			goto fail;
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, "cannot commit cache_rules", why, why_size);
		goto fail;
	}
	return 0;
fail:
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}
