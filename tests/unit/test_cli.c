/* test_cli.c - hybridctl's command line (ctl/cli.c): the edit distance
 * and "did you mean", the option table over getopt_long (--opt=value and
 * --opt value, "--", arguments kept in order among options, -h/--help,
 * abbreviations, missing values, values given to flags, short clusters),
 * choices, and the dispatch of commands and actions with their
 * suggestions and exit statuses. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/cli.h"
#include "suites.h"

static void test_distance(void)
{
	CU_ASSERT_EQUAL(hy_cli_distance("", ""), 0);
	CU_ASSERT_EQUAL(hy_cli_distance("status", "status"), 0);
	CU_ASSERT_EQUAL(hy_cli_distance("", "abc"), 3);
	CU_ASSERT_EQUAL(hy_cli_distance("abc", ""), 3);
	/* two neighbours swapped count one (plain Levenshtein says 2) */
	CU_ASSERT_EQUAL(hy_cli_distance("stauts", "status"), 1);
	CU_ASSERT_EQUAL(hy_cli_distance("dryrun", "dry-run"), 1);
	CU_ASSERT_EQUAL(hy_cli_distance("flsuh", "flush"), 1);
	CU_ASSERT_EQUAL(hy_cli_distance("kitten", "sitting"), 3);
	CU_ASSERT_EQUAL(hy_cli_distance("tune", "top"), 3);
	CU_ASSERT_EQUAL(hy_cli_distance("ca", "abc"), 3); /* OSA, not Damerau: no edit twice */
	{
		char longer[80];

		memset(longer, 'a', sizeof(longer) - 1);
		longer[sizeof(longer) - 1] = '\0';
		CU_ASSERT_EQUAL(hy_cli_distance(longer, "a"), SIZE_MAX);
	}
}

static void test_suggest(void)
{
	static const char *const commands[] = {
		"status", "trace",    "reorganize", "explain", "flush", "format-cache", "policy",
		"top",	  "simulate", "tune",	    "pin",     "unpin", "exclude"};
	static const char *const options[] = {"dry-run", "all",	 "always", "quiet", "json",
					      "state",	 "mode", "since",  NULL,    "top"};
	size_t nc = sizeof(commands) / sizeof(commands[0]);
	size_t no = sizeof(options) / sizeof(options[0]);
	const char *s;

	s = hy_cli_suggest("stauts", commands, nc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s, "status");
	s = hy_cli_suggest("reorganise", commands, nc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s, "reorganize");
	s = hy_cli_suggest("dryrun", options, no);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s, "dry-run");
	/* a word that begins a candidate suggests it: "alw" is 3 from
	 * "all" and begins "always" */
	s = hy_cli_suggest("alw", options, no);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s, "always");
	s = hy_cli_suggest("reorg", commands, nc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s, "reorganize");
	/* NULL entries are skipped; the one after is found */
	s = hy_cli_suggest("tpo", options, no);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s, "top");
	/* nothing near: no guess */
	CU_ASSERT_PTR_NULL(hy_cli_suggest("frobnicate", commands, nc));
	CU_ASSERT_PTR_NULL(hy_cli_suggest("x", commands, nc));
	CU_ASSERT_PTR_NULL(hy_cli_suggest("", commands, nc));
	/* a short word is near only within one edit */
	CU_ASSERT_PTR_NULL(hy_cli_suggest("zzp", commands, nc));
	s = hy_cli_suggest("tpo", commands, nc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s, "top");
}

enum { T_JSON = 1, T_SIZE, T_QUIET, T_DELAY, T_BATCH };

static const struct hy_cli_option test_options[] = {
	{"json", 0, false, T_JSON, NULL},
	{"size", 0, true, T_SIZE, "a SIZE"},
	{"quiet", 'q', false, T_QUIET, NULL},
	{"delay", 'd', true, T_DELAY, "SECONDS"},
	{NULL, 'b', false, T_BATCH, NULL},
	{"dry-run", 0, false, 99, NULL},
	{0},
};

static const struct hy_cli_command test_command = {
	.name = "thing",
	.summary = "a command for the tests",
	.usage = "usage: hybridctl thing [--json] [--size SIZE] ARG...\n"
		 "\n"
		 "  --size  a size\n",
	.options = test_options,
};

/* One parse of @words (after "thing"): the options seen, as "id=value "
 * pairs in @seen, the arguments as "a,b," in @args, what went to stdout
 * and stderr; hy_cli_next's last answer. */
struct parsed {
	char seen[256], args[256], out[1024], err[1024];
	int rc;
};

static void parse(struct parsed *p, const char *const *words)
{
	char *argv[32];
	int argc = 0, id;
	const char *value;
	struct hy_cli cli;
	FILE *out, *err;

	memset(p, 0, sizeof(*p));
	argv[argc++] = (char *)"thing";
	for (; *words && argc < 31; words++)
		argv[argc++] = (char *)*words;
	argv[argc] = NULL;
	out = fmemopen(p->out, sizeof(p->out) - 1, "w");
	err = fmemopen(p->err, sizeof(p->err) - 1, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_PTR_NOT_NULL_FATAL(err);
	CU_ASSERT_EQUAL_FATAL(hy_cli_begin(&cli, &test_command, argc, argv), 0);
	cli.out = out;
	cli.err = err;
	while ((p->rc = hy_cli_next(&cli, &id, &value)) > 0) {
		size_t len = strlen(p->seen);

		snprintf(p->seen + len, sizeof(p->seen) - len, "%d=%s ", id, value ? value : "");
	}
	if (p->rc == 0)
		for (int i = 0; i < cli.nargs; i++) {
			size_t len = strlen(p->args);

			snprintf(p->args + len, sizeof(p->args) - len, "%s,", cli.args[i]);
		}
	fclose(out);
	fclose(err);
}

static void test_options_parse(void)
{
	struct parsed p;

	/* --opt=value and --opt value; options and arguments in any order */
	parse(&p,
	      (const char *const[]){"a", "--size=4K", "b", "--json", "--size", "-1h", "c", NULL});
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.seen, "2=4K 1= 2=-1h ");
	CU_ASSERT_STRING_EQUAL(p.args, "a,b,c,");
	CU_ASSERT_STRING_EQUAL(p.err, "");
	/* "--": what follows is an argument, dashes and all */
	parse(&p, (const char *const[]){"--json", "--", "--size", "-q", "x", NULL});
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.seen, "1= ");
	CU_ASSERT_STRING_EQUAL(p.args, "--size,-q,x,");
	parse(&p, (const char *const[]){"m", "--", NULL});
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.args, "m,");
	/* short options: alone, clustered, with a value joined or apart;
	 * one with no long name; "-" is an argument */
	parse(&p, (const char *const[]){"-qb", "-d2", "-d", "3", "-", NULL});
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.seen, "3= 5= 4=2 4=3 ");
	CU_ASSERT_STRING_EQUAL(p.args, "-,");
	/* nothing at all */
	parse(&p, (const char *const[]){NULL});
	CU_ASSERT_EQUAL(p.rc, 0);
	CU_ASSERT_STRING_EQUAL(p.args, "");
}

static void test_options_help(void)
{
	struct parsed p;

	parse(&p, (const char *const[]){"a", "--help", "--bogus", NULL});
	CU_ASSERT_EQUAL(p.rc, -ECANCELED);
	CU_ASSERT_EQUAL(hy_cli_exit_status(p.rc), 0);
	/* the whole usage, on the output */
	CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "usage: hybridctl thing"));
	CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "--size  a size"));
	CU_ASSERT_STRING_EQUAL(p.err, "");
	parse(&p, (const char *const[]){"-h", NULL});
	CU_ASSERT_EQUAL(p.rc, -ECANCELED);
}

static void test_options_errors(void)
{
	struct parsed p;

	/* unknown, with the nearest: the synopsis only follows */
	parse(&p, (const char *const[]){"--dryrun", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_EQUAL(hy_cli_exit_status(p.rc), 2);
	CU_ASSERT_PTR_NOT_NULL(
		strstr(p.err, "thing: unknown option \"--dryrun\"; did you mean --dry-run?"));
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "usage: hybridctl thing"));
	CU_ASSERT_PTR_NULL(strstr(p.err, "--size  a size"));
	CU_ASSERT_STRING_EQUAL(p.out, "");
	/* its value is not part of the name said */
	parse(&p, (const char *const[]){"--sise=4K", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "unknown option \"--sise\"; did you mean --size?"));
	/* nothing near */
	parse(&p, (const char *const[]){"--frobnicate", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "unknown option \"--frobnicate\"\n"));
	/* an abbreviation getopt_long would take is refused */
	parse(&p, (const char *const[]){"--dry", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "unknown option \"--dry\"; did you mean --dry-run?"));
	parse(&p, (const char *const[]){"--si=1", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "\"--si\"; did you mean --size?"));
	/* a long option with one dash ("-dry-run" would be -d ry-run here) */
	parse(&p, (const char *const[]){"-json", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "\"-json\"; did you mean --json?"));
	/* an unknown short option, alone and in a cluster */
	parse(&p, (const char *const[]){"-x", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "unknown option \"-x\""));
	parse(&p, (const char *const[]){"-qx", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "unknown option \"-x\" (in \"-qx\")"));
	/* a missing value names what is missing */
	parse(&p, (const char *const[]){"a", "--size", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "thing: --size needs a SIZE"));
	parse(&p, (const char *const[]){"-d", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "thing: -d needs SECONDS"));
	/* a value for a flag */
	parse(&p, (const char *const[]){"--json=yes", NULL});
	CU_ASSERT_EQUAL(p.rc, -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "--json takes no value (\"--json=yes\")"));
}

static void test_choice(void)
{
	static const char *const modes[] = {"cumulative", "partial", NULL};
	char err[512] = "";
	struct hy_cli cli;
	char *argv[] = {(char *)"thing", NULL};

	CU_ASSERT_EQUAL_FATAL(hy_cli_begin(&cli, &test_command, 1, argv), 0);
	cli.err = fmemopen(err, sizeof(err) - 1, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(cli.err);
	CU_ASSERT_EQUAL(hy_cli_choice(&cli, "--mode", "partial", modes), 1);
	CU_ASSERT_EQUAL(hy_cli_choice(&cli, "--mode", "partail", modes), -EINVAL);
	fflush(cli.err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--mode \"partail\": use cumulative or partial "
					   "(did you mean \"partial\"?)"));
	fclose(cli.err);
}

/* A table with a bad entry (an id of 0) is refused, not half used. */
static void test_bad_table(void)
{
	static const struct hy_cli_option bad[] = {{"json", 0, false, 0, NULL}, {0}};
	static const struct hy_cli_command c = {.name = "bad", .options = bad};
	char err[256] = "", *argv[] = {(char *)"bad", NULL};
	struct hy_cli cli;
	FILE *saved = stderr;

	stderr = fmemopen(err, sizeof(err) - 1, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(stderr);
	CU_ASSERT_EQUAL(hy_cli_begin(&cli, &c, 1, argv), -EINVAL);
	fclose(stderr);
	stderr = saved;
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "malformed"));
}

/* ---- dispatch ---- */

static int last_argc;
static char last_word[32];

static int record(const struct hy_cli_command *command, int argc, char **argv)
{
	(void)command;
	last_argc = argc;
	snprintf(last_word, sizeof(last_word), "%s", argv[0]);
	return 7;
}

static const struct hy_cli_command get_action = {
	.name = "get", .title = "pol get", .run = record, .usage = "usage: pol get\n"};
static const struct hy_cli_command set_action = {
	.name = "set", .title = "pol set", .run = record, .usage = "usage: pol set\n"};
static const struct hy_cli_command *const pol_actions[] = {&get_action, &set_action, NULL};
static const struct hy_cli_command pol = {
	.name = "pol", .usage = "usage: pol get|set\n", .actions = pol_actions};
static const struct hy_cli_command stat_command = {
	.name = "status", .run = record, .usage = "usage: status\n"};
static const struct hy_cli_command *const top_table[] = {&stat_command, &pol, NULL};
static const struct hy_cli_command top = {
	.name = "prog", .title = "", .usage = "usage: prog COMMAND\n", .actions = top_table};

/* Runs @words through hy_cli_run(&top), stdout and stderr to files;
 * the exit status; what was said in @said. */
static int run(const char *const *words, char *said, size_t size)
{
	char *argv[16];
	int argc = 0, rc;
	FILE *saved_out = stdout, *saved_err = stderr;

	argv[argc++] = (char *)"prog";
	for (; *words && argc < 15; words++)
		argv[argc++] = (char *)*words;
	argv[argc] = NULL;
	memset(said, 0, size);
	stdout = stderr = fmemopen(said, size - 1, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(stdout);
	last_argc = -1;
	last_word[0] = '\0';
	rc = hy_cli_run(&top, argc, argv);
	fclose(stdout);
	stdout = saved_out;
	stderr = saved_err;
	return rc;
}

static void test_dispatch(void)
{
	char said[1024];

	CU_ASSERT_EQUAL(run((const char *const[]){"status", "a", NULL}, said, sizeof(said)), 7);
	CU_ASSERT_EQUAL(last_argc, 2);
	CU_ASSERT_STRING_EQUAL(last_word, "status");
	CU_ASSERT_EQUAL(run((const char *const[]){"pol", "set", "x=1", NULL}, said, sizeof(said)),
			7);
	CU_ASSERT_STRING_EQUAL(last_word, "set");
	CU_ASSERT_EQUAL(last_argc, 2);
	/* a mistyped command: a suggestion and the synopsis, exit status 2 */
	CU_ASSERT_EQUAL(run((const char *const[]){"stauts", NULL}, said, sizeof(said)), 2);
	CU_ASSERT_PTR_NOT_NULL(
		strstr(said, "unknown command \"stauts\"; did you mean \"status\"?"));
	CU_ASSERT_PTR_NOT_NULL(strstr(said, "usage: prog COMMAND"));
	CU_ASSERT_EQUAL(last_argc, -1);
	CU_ASSERT_EQUAL(run((const char *const[]){"pol", "gte", NULL}, said, sizeof(said)), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(said, "pol: unknown action \"gte\"; did you mean \"get\"?"));
	CU_ASSERT_EQUAL(run((const char *const[]){"pol", NULL}, said, sizeof(said)), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(said, "pol: name an action: get, set"));
	/* no command */
	CU_ASSERT_EQUAL(run((const char *const[]){NULL}, said, sizeof(said)), 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(said, "usage: prog COMMAND"));
	/* help: the list, one command's usage, an action's */
	CU_ASSERT_EQUAL(run((const char *const[]){"--help", NULL}, said, sizeof(said)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(said, "commands:"));
	CU_ASSERT_PTR_NOT_NULL(strstr(said, "  status"));
	CU_ASSERT_EQUAL(run((const char *const[]){"help", "pol", "set", NULL}, said, sizeof(said)),
			0);
	CU_ASSERT_STRING_EQUAL(said, "usage: pol set\n");
	CU_ASSERT_EQUAL(run((const char *const[]){"pol", "--help", NULL}, said, sizeof(said)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(said, "actions:"));
	CU_ASSERT_EQUAL(run((const char *const[]){"help", "nope", NULL}, said, sizeof(said)), 2);
	CU_ASSERT_EQUAL(last_argc, -1);
}

int hy_test_add_cli(void)
{
	CU_pSuite s = CU_add_suite("cli", NULL, NULL);

	if (!s || !CU_add_test(s, "edit distance", test_distance) ||
	    !CU_add_test(s, "did you mean", test_suggest) ||
	    !CU_add_test(s, "options: forms, --, order", test_options_parse) ||
	    !CU_add_test(s, "options: --help", test_options_help) ||
	    !CU_add_test(s, "options: errors name the problem", test_options_errors) ||
	    !CU_add_test(s, "choices", test_choice) ||
	    !CU_add_test(s, "a malformed table is refused", test_bad_table) ||
	    !CU_add_test(s, "commands and actions", test_dispatch))
		return -1;
	return 0;
}
