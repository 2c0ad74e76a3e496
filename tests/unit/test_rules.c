/* test_rules.c - pins and excludes (lib/rules.c): glob matching with its
 * two forms (a name matches any component; a path is anchored, with
 * FNM_PATHNAME and FNM_LEADING_DIR), pins covering trees, bad patterns
 * refused with their reason, the exclude= mount option (its globs after
 * commas), and the cache_rules rows kept across a reopening. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hybridfs/options.h"
#include "hybridfs/rules.h"
#include "hybridfs/state.h"
#include "suites.h"

static char why[512];

static void test_glob_match(void)
{
	static const struct {
		const char *glob, *path;
		bool match;
	} cases[] = {
		/* a name: any component */
		{"*.o", "a.o", true},
		{"*.o", "src/lib/a.o", true},
		{"*.o", "a.obj", false},
		{"*.o", "a.o/b.c", true}, /* a folder named so: what it holds */
		{"node_modules", "web/node_modules/x/index.js", true},
		{"node_modules", "web/node_modules2/x.js", false},
		{"node_modules", "node_modules", true},
		{"?.c", "src/x.c", true},
		{"?.c", "src/xy.c", false},
		{"[ab].c", "a.c", true},
		{"[!ab].c", "a.c", false},
		{"*", "anything/at/all", true},
		/* a path: from the root, '*' stops at '/', a folder covers its tree */
		{"build/*", "build/a.o", true},
		{"build/*", "build/sub/b.o", true},
		{"build/*", "src/build/a.o", false},
		{"build/*", "build", false},
		{"build", "src/build/a.o", true}, /* the name form */
		{"src/*.c", "src/a.c", true},
		{"src/*.c", "src/sub/a.c", false},
		{"src/*/gen", "src/x/gen/y.c", true},
		{"a/b", "a/b", true},
		{"a/b", "a/bc", false},
		{"\\*.o", "*.o", true},
		{"\\*.o", "x.o", false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool got;

		CU_ASSERT_EQUAL_FATAL(hy_rules_check_glob(cases[i].glob, why, sizeof(why)), 0);
		got = hy_rules_glob_match(cases[i].glob, cases[i].path);
		if (got != cases[i].match)
			fprintf(stderr, "\n\"%s\" on \"%s\": %d, want %d\n", cases[i].glob,
				cases[i].path, got, cases[i].match);
		CU_ASSERT_EQUAL(got, cases[i].match);
	}
}

static void test_bad_globs(void)
{
	char longer[HY_RULES_PATTERN_MAX + 2];
	static const struct {
		const char *glob, *says;
	} bad[] = {
		{"", "empty"},	 {"/etc/*", "absolute"},    {"a/../b", ".."},
		{"..", ".."},	 {"*.[ch", "never closed"}, {"[", "never closed"},
		{"a\\", "lone"}, {"[!", "never closed"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		CU_ASSERT_EQUAL(hy_rules_check_glob(bad[i].glob, why, sizeof(why)), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, bad[i].says));
	}
	CU_ASSERT_EQUAL(hy_rules_check_glob(NULL, why, sizeof(why)), -EINVAL);
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	CU_ASSERT_EQUAL(hy_rules_check_glob(longer, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "at most"));
	longer[HY_RULES_PATTERN_MAX] = '\0';
	CU_ASSERT_EQUAL(hy_rules_check_glob(longer, why, sizeof(why)), 0);
	/* "..x" and "x.." are names, not a way up */
	CU_ASSERT_EQUAL(hy_rules_check_glob("..x", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_rules_check_glob("a/x..", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_rules_check_glob("[]]", why, sizeof(why)), 0);
}

static void test_pins(void)
{
	char out[64];
	struct hy_rules r = {0};

	CU_ASSERT_EQUAL(hy_rules_check_path("./src//lib/", out, sizeof(out), why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(out, "src/lib");
	CU_ASSERT_EQUAL(hy_rules_check_path(".", out, sizeof(out), why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	CU_ASSERT_EQUAL(hy_rules_check_path("/etc", out, sizeof(out), why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "absolute"));
	CU_ASSERT_EQUAL(hy_rules_check_path("a/../../etc", out, sizeof(out), why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "outside the mount"));
	CU_ASSERT(hy_rules_pin_covers("src", "src/a.c"));
	CU_ASSERT(hy_rules_pin_covers("src", "src"));
	CU_ASSERT(!hy_rules_pin_covers("src", "src2/a.c"));
	CU_ASSERT(hy_rules_pin_covers("", "anything"));
	/* a pin wins over an exclude */
	CU_ASSERT_EQUAL(hy_rules_add(&r, HY_RULE_PIN, "keep"), 1);
	CU_ASSERT_EQUAL(hy_rules_add(&r, HY_RULE_PIN, "keep"), 0);
	CU_ASSERT_EQUAL(hy_rules_add(&r, HY_RULE_EXCLUDE, "*.o"), 1);
	CU_ASSERT_EQUAL(hy_rules_match(&r, "keep/a.o"), HY_RULE_PIN);
	CU_ASSERT_EQUAL(hy_rules_match(&r, "src/a.o"), HY_RULE_EXCLUDE);
	CU_ASSERT_EQUAL(hy_rules_match(&r, "src/a.c"), HY_RULE_NONE);
	CU_ASSERT_EQUAL(hy_rules_remove(&r, HY_RULE_EXCLUDE, "*.o"), 1);
	CU_ASSERT_EQUAL(hy_rules_remove(&r, HY_RULE_EXCLUDE, "*.o"), 0);
	CU_ASSERT_EQUAL(hy_rules_match(&r, "src/a.o"), HY_RULE_NONE);
	hy_rules_clear(&r);
}

static void test_exclude_option(void)
{
	const char *argv[] = {"hybridfs", "-o", "exclude=*.o,build/*,node_modules,ro",
			      "/b",	  "/m", NULL};
	const char *bad[] = {"hybridfs", "-o", "exclude=/abs", "/b", "/m", NULL};
	const char *empty[] = {"hybridfs", "-o", "exclude=", "/b", "/m", NULL};
	const char *typo[] = {"hybridfs", "-o", "exclude=*.o,cache_sise=1M", "/b", "/m", NULL};
	struct hy_options o;

	memset(&o, 0, sizeof(o));
	CU_ASSERT_EQUAL_FATAL(hy_options_parse(5, (char **)argv, &o, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL_FATAL(o.nexclude, 3);
	CU_ASSERT_STRING_EQUAL(o.exclude[0], "*.o");
	CU_ASSERT_STRING_EQUAL(o.exclude[1], "build/*");
	CU_ASSERT_STRING_EQUAL(o.exclude[2], "node_modules");
	CU_ASSERT(o.read_only); /* an option after the globs is still one */
	hy_options_free(&o);
	CU_ASSERT_EQUAL(hy_options_parse(5, (char **)bad, &o, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "absolute"));
	hy_options_free(&o);
	CU_ASSERT_EQUAL(hy_options_parse(5, (char **)empty, &o, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "empty"));
	hy_options_free(&o);
	/* a word with '=' after the globs is an option, and an unknown one says so */
	CU_ASSERT_EQUAL(hy_options_parse(5, (char **)typo, &o, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "cache_sise"));
	hy_options_free(&o);
}

static void test_rows(void)
{
	char *dir = hy_test_tmpdir();
	struct hy_state *state = NULL;
	struct hy_rules r = {0};
	char *const option[] = {"*.tmp"};

	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/b", false, &state, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_rules_store(state->db, "pin", "src", true, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_rules_store(state->db, "pin", "src", true, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_rules_store(state->db, "exclude", "*.o", true, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_rules_store_option(state->db, option, 1, why, sizeof(why)), 0);
	hy_state_close(state);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/b", false, &state, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_rules_load(state->db, &r, false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(r.npins, 1);
	CU_ASSERT_EQUAL(r.nexcludes, 1);
	hy_rules_clear(&r);
	CU_ASSERT_EQUAL(hy_rules_load(state->db, &r, true, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(r.nexcludes, 2);
	hy_rules_clear(&r);
	/* the next mount's exclude= replaces the option's rows only */
	CU_ASSERT_EQUAL(hy_rules_store_option(state->db, NULL, 0, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_rules_store(state->db, "pin", "src", false, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_rules_load(state->db, &r, true, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(r.npins, 0);
	CU_ASSERT_EQUAL_FATAL(r.nexcludes, 1);
	CU_ASSERT_STRING_EQUAL(r.excludes[0], "*.o");
	hy_rules_clear(&r);
	hy_state_close(state);
	hy_test_rmtree(dir);
	free(dir);
}

int hy_test_add_rules(void)
{
	CU_pSuite s = CU_add_suite("rules", NULL, NULL);

	if (!s || !CU_add_test(s, "globs: names, paths, folders", test_glob_match) ||
	    !CU_add_test(s, "bad globs name the problem", test_bad_globs) ||
	    !CU_add_test(s, "pins cover trees and win over excludes", test_pins) ||
	    !CU_add_test(s, "the exclude= mount option", test_exclude_option) ||
	    !CU_add_test(s, "cache_rules rows across a reopening", test_rows))
		return -1;
	return 0;
}
