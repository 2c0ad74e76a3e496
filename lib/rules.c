/* rules.c - pins and excludes: patterns, matching and their rows in the
 * state database; see include/hybridfs/rules.h. */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hybridfs/rules.h"
#include "hybridfs/state.h"

/* Whether @s has a "..": a pattern never reaches out of the mount. */
static bool has_dotdot(const char *s)
{
	for (const char *p = s; (p = strstr(p, "..")); p += 2)
		if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
			return true;
	return false;
}

int hy_rules_check_glob(const char *glob, char *why, size_t why_size)
{
	size_t len = glob ? strlen(glob) : 0;

	if (!len) {
		snprintf(why, why_size, "exclude: a pattern is empty");
		return -EINVAL;
	}
	if (len > HY_RULES_PATTERN_MAX) {
		snprintf(why, why_size, "exclude: pattern \"%.32s...\" is %zu bytes, at most %d",
			 glob, len, HY_RULES_PATTERN_MAX);
		return -EINVAL;
	}
	if (glob[0] == '/') {
		snprintf(why, why_size,
			 "exclude: \"%s\" is absolute; patterns are relative to the mount "
			 "(e.g. build/*)",
			 glob);
		return -EINVAL;
	}
	if (has_dotdot(glob)) {
		snprintf(why, why_size,
			 "exclude: \"%s\" has a \"..\": it would reach out of the mount", glob);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if (glob[i] == '\\') {
			if (++i == len) {
				snprintf(why, why_size, "exclude: \"%s\" ends with a lone \\",
					 glob);
				return -EINVAL;
			}
		} else if (glob[i] == '[') {
			size_t j = i + 1;

			if (glob[j] == '!' || glob[j] == '^')
				j++;
			if (glob[j] == ']')
				j++; /* a ']' first is one of the set */
			while (j < len && glob[j] != ']')
				j++;
			if (j >= len) {
				snprintf(why, why_size, "exclude: \"%s\" has a '[' never closed",
					 glob);
				return -EINVAL;
			}
			i = j;
		}
	}
	return 0;
}

int hy_rules_check_path(const char *path, char *out, size_t out_size, char *why, size_t why_size)
{
	size_t n = 0;

	if (!path) {
		snprintf(why, why_size, "pin: no path");
		return -EINVAL;
	}
	if (path[0] == '/') {
		snprintf(why, why_size, "pin: \"%s\" is absolute; the mount's paths are relative",
			 path);
		return -EINVAL;
	}
	if (strlen(path) > HY_RULES_PATTERN_MAX) {
		snprintf(why, why_size, "pin: path \"%.32s...\" is longer than %d bytes", path,
			 HY_RULES_PATTERN_MAX);
		return -EINVAL;
	}
	if (has_dotdot(path)) {
		snprintf(why, why_size, "pin: \"%s\" is outside the mount", path);
		return -EINVAL;
	}
	/* components, without "." and empty ones */
	for (const char *p = path; *p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len && !(len == 1 && p[0] == '.')) {
			if (n + len + 2 > out_size) {
				snprintf(why, why_size, "pin: path \"%s\" is too long", path);
				return -EINVAL;
			}
			if (n)
				out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	if (out_size)
		out[n] = '\0';
	return 0;
}

bool hy_rules_glob_match(const char *glob, const char *path)
{
	char name[NAME_MAX + 1];

	if (strchr(glob, '/'))
		return fnmatch(glob, path, FNM_PATHNAME | FNM_LEADING_DIR) == 0;
	/* a name: any component */
	for (const char *p = path; *p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len && len < sizeof(name)) {
			memcpy(name, p, len);
			name[len] = '\0';
			if (fnmatch(glob, name, 0) == 0)
				return true;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	return false;
}

bool hy_rules_pin_covers(const char *pin, const char *path)
{
	size_t n = strlen(pin);

	return n == 0 || (strncmp(pin, path, n) == 0 && (path[n] == '\0' || path[n] == '/'));
}

enum hy_rule hy_rules_match(const struct hy_rules *r, const char *path)
{
	for (size_t i = 0; i < r->npins; i++)
		if (hy_rules_pin_covers(r->pins[i], path))
			return HY_RULE_PIN;
	for (size_t i = 0; i < r->nexcludes; i++)
		if (hy_rules_glob_match(r->excludes[i], path))
			return HY_RULE_EXCLUDE;
	return HY_RULE_NONE;
}

static void list_of(struct hy_rules *r, enum hy_rule kind, char ****v, size_t **n)
{
	*v = kind == HY_RULE_PIN ? &r->pins : &r->excludes;
	*n = kind == HY_RULE_PIN ? &r->npins : &r->nexcludes;
}

int hy_rules_add(struct hy_rules *r, enum hy_rule kind, const char *pattern)
{
	char ***v, **grown, *copy;
	size_t *n;

	list_of(r, kind, &v, &n);
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i], pattern) == 0)
			return 0;
	if (*n >= HY_RULES_MAX)
		return -E2BIG;
	grown = realloc(*v, (*n + 1) * sizeof(**v));
	if (!grown)
		return -ENOMEM;
	*v = grown;
	copy = strdup(pattern);
	if (!copy)
		return -ENOMEM;
	grown[(*n)++] = copy;
	return 1;
}

int hy_rules_remove(struct hy_rules *r, enum hy_rule kind, const char *pattern)
{
	char ***v;
	size_t *n;

	list_of(r, kind, &v, &n);
	for (size_t i = 0; i < *n; i++) {
		if (strcmp((*v)[i], pattern) != 0)
			continue;
		free((*v)[i]);
		memmove(&(*v)[i], &(*v)[i + 1], (*n - i - 1) * sizeof(**v));
		(*n)--;
		return 1;
	}
	return 0;
}

void hy_rules_clear(struct hy_rules *r)
{
	for (size_t i = 0; i < r->npins; i++)
		free(r->pins[i]);
	for (size_t i = 0; i < r->nexcludes; i++)
		free(r->excludes[i]);
	free(r->pins);
	free(r->excludes);
	memset(r, 0, sizeof(*r));
}

int hy_rules_copy(struct hy_rules *to, const struct hy_rules *from)
{
	hy_rules_clear(to);
	for (size_t i = 0; i < from->npins; i++)
		if (hy_rules_add(to, HY_RULE_PIN, from->pins[i]) < 0)
			goto fail;
	for (size_t i = 0; i < from->nexcludes; i++)
		if (hy_rules_add(to, HY_RULE_EXCLUDE, from->excludes[i]) < 0)
			goto fail;
	return 0;
fail:
	hy_rules_clear(to);
	return -ENOMEM;
}

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
			return 0; /* a database older than schema 10 */
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
