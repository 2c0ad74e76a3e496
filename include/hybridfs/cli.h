/*
 * cli.h - hybridctl's command line: one table of commands, one option
 * parser for all of them, and "did you mean" for what was mistyped.
 *
 * What it is for: every hybridctl subcommand used to walk its own argv,
 * each a little differently (one took --opt=value, the next refused it;
 * some knew --help, some did not). Here a command is declared once, as a
 * struct hy_cli_command: its name, its handler, a one-line summary, its
 * usage text and a table of its options; hy_cli_dispatch() finds the
 * command a word names (or suggests the nearest), and hy_cli_next(), over
 * getopt_long(3), gives the handler its options one at a time, the same
 * way for every command:
 *
 *   --opt=value and --opt value, -o value and -ovalue; --opt values may
 *   start with '-' (--since -1h); "--" ends the options (what follows is
 *   an argument even when it starts with '-'); options and arguments mix
 *   in any order (status M --json, status --json M), arguments kept in
 *   their order; abbreviations are refused (a script that says --dry
 *   would break when a --dry-xyz comes), with a suggestion; -h and --help
 *   print the command's usage on standard output (exit status 0).
 *
 * Exit status convention, for every command (hybridctl(8), EXIT STATUS):
 * 0 done; 1 the daemon said no, did not answer, or something could not be
 * read or written; 2 the command line was wrong (a usage error).
 *
 * Who calls it: ctl/hybridctl.c (the command table, main) and every
 * command file of ctl/ (their options); tests/unit/test_cli.c.
 *
 * Memory: nothing is allocated. hy_cli_next() moves the arguments that
 * are not options to the front of the argv it was given (argv[1..]), in
 * their order, and points cli->args at them: the caller's argv is
 * rearranged, as getopt_long does. Tables are static and borrowed.
 * Locks: none; getopt_long keeps global state (optind), so one parse at a
 * time, in one thread.
 */
#ifndef HYBRIDFS_CLI_H
#define HYBRIDFS_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define HY_CLI_PROGRAM	   "hybridctl"
#define HY_CLI_MAX_OPTIONS 48 /* per command; hy_cli_begin refuses more */

/* One option of a command. A table of them ends with a zeroed entry. */
struct hy_cli_option {
	const char *name;	/* long name without "--", or NULL (short only) */
	int short_name;		/* 'q', or 0 for none */
	bool takes_value;	/* --name VALUE / --name=VALUE */
	int id;			/* what hy_cli_next gives for it; > 0, unique */
	const char *value_name; /* "SIZE": said when the value is missing */
};

struct hy_cli_command;

/* Runs a command: @argv[0] is its name, options and arguments follow.
 * Returns the exit status (0, 1, 2). */
typedef int (*hy_cli_handler)(const struct hy_cli_command *command, int argc, char **argv);

struct hy_cli_command {
	const char *name;  /* "status"; an action's own word: "export" */
	const char *title; /* in messages: "trace export"; NULL: @name */
	hy_cli_handler run;
	const char *summary; /* one line for `hybridctl --help` */
	/* printed whole by --help; its first paragraph (up to a blank line,
	 * the synopsis) after a usage error. Starts "usage: hybridctl ...". */
	const char *usage;
	const struct hy_cli_option *options; /* NULL: none but --help */
	/* a command of actions (trace export, policy get|set|reset): the
	 * next word picks one; @run is then NULL. NULL-terminated. */
	const struct hy_cli_command *const *actions;
};

/* One parse of one command's argv. Fields above the line are the
 * caller's to read; the rest is private. */
struct hy_cli {
	const struct hy_cli_command *command;
	FILE *out;   /* --help goes here: stdout */
	FILE *err;   /* errors: stderr */
	char **args; /* the arguments that are not options, in order, */
	int nargs;   /* valid once hy_cli_next() has returned 0 */
	/* ---- */
	int argc;
	char **argv;
	int kept; /* arguments moved to argv[1..] so far */
	bool done;
	struct option longopts[HY_CLI_MAX_OPTIONS + 2];
	char shortopts[3 * HY_CLI_MAX_OPTIONS + 8];
};

/* Starts parsing @argv (@argv[0] the command's name) for @command's
 * options. 0, or -EINVAL when the option table is malformed (a bug: said
 * on stderr). */
int hy_cli_begin(struct hy_cli *cli, const struct hy_cli_command *command, int argc, char **argv);

/* The next option: 1, its id in *@id and its value (NULL when it takes
 * none) in *@value; 0 when the options are done (cli->args, cli->nargs
 * hold the other arguments); -ECANCELED after --help printed the usage on
 * cli->out (exit status 0); -EINVAL after a usage error was said on
 * cli->err (unknown or abbreviated option, with the nearest one
 * suggested; a missing value; a value given to an option that takes
 * none), with the command's synopsis (exit status 2). */
int hy_cli_next(struct hy_cli *cli, int *id, const char **value);

/* The exit status for a negative hy_cli_next() or hy_cli_choice()
 * answer: 0 for -ECANCELED (--help), 2 for -EINVAL, 1 for anything else. */
int hy_cli_exit_status(int rc);

/* Says "hybridctl: TITLE: MESSAGE" on cli->err, then the command's
 * synopsis. Returns 2, the exit status of a usage error. */
int hy_cli_usage_error(const struct hy_cli *cli, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

/* @value as one of @choices (NULL-terminated): its index, or -EINVAL
 * after saying, on cli->err, `--OPTION "VALUE": use A, B or C`, and the
 * nearest choice when one is near. */
int hy_cli_choice(const struct hy_cli *cli, const char *option, const char *value,
		  const char *const *choices);

/* Prints @command's usage: all of it, or its synopsis only (@brief). */
void hy_cli_print_usage(FILE *out, const struct hy_cli_command *command, bool brief);

/* Runs @command with @argv (@argv[0] its own word): its handler, or,
 * for a command of actions, the action the next word names. A word no
 * action has is refused with the nearest suggested and a short usage
 * (exit status 2; "unknown command" at the top, whose title is "");
 * "--help", "-h" and "help [WORD...]" print the usage of the command (of
 * actions) and its list, or of the one the words name. Returns the exit
 * status. */
int hy_cli_run(const struct hy_cli_command *command, int argc, char **argv);

/* "commands:" (@group "", the top) or "actions:", then each of @table's
 * with its summary. */
void hy_cli_print_commands(FILE *out, const struct hy_cli_command *const *table, const char *group);

/* The optimal string alignment distance between @a and @b (insertions,
 * deletions, substitutions and swaps of two neighbours each count 1), or
 * SIZE_MAX when either is longer than 64 bytes. */
size_t hy_cli_distance(const char *a, const char *b);

/* The candidate nearest @word among @n (@candidates[i] may be NULL:
 * skipped), or NULL when none is near enough to be what was meant: one
 * @word is a prefix of (the first such), else the nearest within a
 * distance of a third of the longer word's length (at least 1, at most 3),
 * the first on a tie. */
const char *hy_cli_suggest(const char *word, const char *const *candidates, size_t n);

#endif
