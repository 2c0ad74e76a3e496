/*
 * rules.h - which files the cache pins and which it leaves out (issue 19,
 * item 5): the rule set, its patterns' syntax and matching, and its rows in
 * the state database's cache_rules table (state.h).
 *
 * What it is for: `hybridctl pin PATH` keeps a file's or a tree's blocks
 * in the SSD cache store and places them first in the BOPT's plans;
 * `exclude=GLOB` (the mount option) and `hybridctl exclude GLOB` keep
 * matching files out of the cache and out of the plans. Both name files by
 * their path relative to the mount ("src/main.c", never "/src/main.c"):
 *   - a pin is a path: it pins that file, or every file under it when it
 *     is a directory ("" or "." is the whole mount);
 *   - an exclude is a glob (fnmatch(3)). A glob without a '/' is a name:
 *     it matches any component of the path ("*.o" every object file,
 *     "node_modules" every file under a folder of that name). A glob with
 *     a '/' is matched from the mount's root against the whole path, with
 *     FNM_PATHNAME ('*' and '?' never match a '/') and FNM_LEADING_DIR (a
 *     glob that matches a folder matches what lies under it): the glob "build/" then "*"
 *     excludes build/a.o and build/sub/b.o, not src/build/a.o.
 * A file both pinned and excluded is pinned: the pin names it on purpose.
 * Patterns are checked before they are kept (hy_rules_check_*): empty,
 * longer than HY_RULES_PATTERN_MAX, absolute, with a ".." component or an
 * unclosed '[' is refused with a message that quotes it.
 *
 * Kinds in cache_rules: "pin", "exclude" (hybridctl's, kept until removed)
 * and "exclude-option" (the mount option's, replaced at every mount, so
 * that the analyzer and `hybridctl reorganize` see them too).
 *
 * The patterns and their matching are lib/rules.c's, pure (no SQLite: the
 * options' fuzz target links it alone); the rows are lib/rules_db.c's.
 *
 * Who calls it: lib/options.c (exclude=), fs/pin_glue.c (the daemon: at
 * mount, at each file's first open, and for the "rules" control request),
 * analyzer/analyzer_db.c (excluded files are left out of the graph),
 * reconfig/reorganize.c (pinned files first in the plan), the unit tests.
 *
 * Memory: struct hy_rules owns copies of its patterns; hy_rules_clear()
 * frees them. Locks: none; the caller serializes changes to one set (the
 * daemon holds its rules' rwlock).
 */
#ifndef HYBRIDFS_RULES_H
#define HYBRIDFS_RULES_H

#include <stdbool.h>
#include <stddef.h>

struct sqlite3;

#define HY_RULES_PATTERN_MAX 1024 /* bytes of a pattern */
#define HY_RULES_MAX	     256  /* patterns of one kind */

enum hy_rule {
	HY_RULE_NONE = 0,
	HY_RULE_PIN = 1,
	HY_RULE_EXCLUDE = 2,
};

struct hy_rules {
	char **pins; /* normalized paths: no leading, trailing or double '/' */
	size_t npins;
	char **excludes; /* globs */
	size_t nexcludes;
};

/* 0, or -EINVAL with the reason in @why (the pattern quoted). */
int hy_rules_check_glob(const char *glob, char *why, size_t why_size);
/* Checks a pin's path and writes it normalized into @out (@out_size
 * bytes): "./a//b/" is "a/b", "." and "" are "". 0 or -EINVAL. */
int hy_rules_check_path(const char *path, char *out, size_t out_size, char *why, size_t why_size);

/* Whether @glob (checked) matches @path, as the top comment says. */
bool hy_rules_glob_match(const char *glob, const char *path);
/* Whether the pin @pin names @path or a folder holding it. */
bool hy_rules_pin_covers(const char *pin, const char *path);

/* What the set says of the file at @path (relative to the mount). */
enum hy_rule hy_rules_match(const struct hy_rules *rules, const char *path);

/* Adds (1) or finds already there (0) a checked pattern; -ENOMEM, or
 * -E2BIG past HY_RULES_MAX patterns of the kind. */
int hy_rules_add(struct hy_rules *rules, enum hy_rule kind, const char *pattern);
/* Removes it (1) or finds it absent (0). */
int hy_rules_remove(struct hy_rules *rules, enum hy_rule kind, const char *pattern);
void hy_rules_clear(struct hy_rules *rules);
/* A copy of @from into @to (cleared first). 0 or -ENOMEM. */
int hy_rules_copy(struct hy_rules *to, const struct hy_rules *from);

/* Adds every row of cache_rules to @rules ("exclude-option" rows too
 * when @with_option). A database without the table (older than schema
 * 10) has none. 0 or a negative errno with a message. */
int hy_rules_load(struct sqlite3 *db, struct hy_rules *rules, bool with_option, char *why,
		  size_t why_size);
/* Adds (@add) or deletes one row of kind "pin", "exclude" or
 * "exclude-option". 0 or a negative errno with a message. */
int hy_rules_store(struct sqlite3 *db, const char *kind, const char *pattern, bool add, char *why,
		   size_t why_size);
/* The mount's exclude= globs replace the "exclude-option" rows. */
int hy_rules_store_option(struct sqlite3 *db, char *const *globs, size_t n, char *why,
			  size_t why_size);

#endif
