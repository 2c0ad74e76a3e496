/*
 * cli.c - hybridctl's command table and option parser over getopt_long(3).
 * See include/hybridfs/cli.h.
 *
 * getopt_long runs in RETURN_IN_ORDER mode (optstring "-:..."): each
 * argument that is not an option comes back as code 1, in its place, so
 * arguments and options mix in any order whatever POSIXLY_CORRECT says,
 * and the arguments are moved to the front of argv here, in order. "--"
 * makes getopt_long stop; what follows it is taken as arguments. opterr is
 * 0 and ':' leads optstring: every message is this file's, with the
 * nearest option suggested.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/cli.h"

#define LONG_BASE   256 /* getopt_long's val for option i is LONG_BASE + i */
#define HELP_VAL    (LONG_BASE + HY_CLI_MAX_OPTIONS)
#define MAX_WORD    64 /* hy_cli_distance: longer words are never near */
#define MAX_SUGGEST 3

static const char *title_of(const struct hy_cli_command *command)
{
	return command->title ? command->title : command->name;
}

/* "hybridctl: TITLE: " or "hybridctl: " for the top level. */
static void say_prefix(FILE *err, const struct hy_cli_command *command)
{
	const char *title = command ? title_of(command) : "";

	if (title && *title)
		fprintf(err, "%s: %s: ", HY_CLI_PROGRAM, title);
	else
		fprintf(err, "%s: ", HY_CLI_PROGRAM);
}

size_t hy_cli_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	/* three rows of the dynamic program: i - 2, i - 1, i */
	size_t rows[3][MAX_WORD + 1];

	if (la > MAX_WORD || lb > MAX_WORD)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		rows[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *cur = rows[i % 3], *prev = rows[(i - 1) % 3], *prev2 = rows[(i - 2) % 3];

		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t best = prev[j] + 1; /* deletion */

			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1; /* insertion */
			if (prev[j - 1] + cost < best)
				best = prev[j - 1] + cost; /* substitution */
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < best)
				best = prev2[j - 2] + 1; /* two neighbours swapped */
			cur[j] = best;
		}
	}
	return rows[la % 3][lb];
}

const char *hy_cli_suggest(const char *word, const char *const *candidates, size_t n)
{
	size_t wl = strlen(word), best = SIZE_MAX;
	const char *found = NULL;

	if (wl == 0)
		return NULL;
	/* a prefix is what was meant more surely than any near word */
	if (wl >= 2)
		for (size_t i = 0; i < n; i++)
			if (candidates[i] && strncmp(candidates[i], word, wl) == 0 &&
			    candidates[i][wl] != '\0')
				return candidates[i];
	for (size_t i = 0; i < n; i++) {
		size_t cl, longer, limit, d;

		if (!candidates[i])
			continue;
		cl = strlen(candidates[i]);
		longer = cl > wl ? cl : wl;
		limit = longer / 3;
		if (limit < 1)
			limit = 1;
		if (limit > MAX_SUGGEST)
			limit = MAX_SUGGEST;
		d = hy_cli_distance(word, candidates[i]);
		if (d <= limit && d < best && d < longer) {
			best = d;
			found = candidates[i];
		}
	}
	return found;
}

int hy_cli_exit_status(int rc)
{
	if (rc == -ECANCELED)
		return 0;
	return rc == -EINVAL ? 2 : 1;
}

void hy_cli_print_usage(FILE *out, const struct hy_cli_command *command, bool brief)
{
	const char *usage = command->usage ? command->usage : "";
	const char *end = brief ? strstr(usage, "\n\n") : NULL;
	size_t len = end ? (size_t)(end - usage) + 1 : strlen(usage);

	fwrite(usage, 1, len, out);
	if (len && usage[len - 1] != '\n')
		putc('\n', out);
}

void hy_cli_print_commands(FILE *out, const struct hy_cli_command *const *table, const char *group)
{
	int width = 0;

	for (size_t i = 0; table[i]; i++) {
		int len = (int)strlen(table[i]->name);

		if (len > width)
			width = len;
	}
	fprintf(out, "\n%s:\n", group && *group ? "actions" : "commands");
	for (size_t i = 0; table[i]; i++)
		fprintf(out, "  %-*s  %s\n", width, table[i]->name,
			table[i]->summary ? table[i]->summary : "");
}

int hy_cli_usage_error(const struct hy_cli *cli, const char *format, ...)
{
	va_list ap;

	say_prefix(cli->err, cli->command);
	va_start(ap, format);
	vfprintf(cli->err, format, ap);
	va_end(ap);
	putc('\n', cli->err);
	hy_cli_print_usage(cli->err, cli->command, true);
	return 2;
}

int hy_cli_choice(const struct hy_cli *cli, const char *option, const char *value,
		  const char *const *choices)
{
	const char *near;
	size_t n = 0;

	for (; choices[n]; n++)
		if (strcmp(choices[n], value) == 0)
			return (int)n;
	say_prefix(cli->err, cli->command);
	fprintf(cli->err, "%s \"%s\": use ", option, value);
	for (size_t i = 0; i < n; i++)
		fprintf(cli->err, "%s%s", choices[i], i + 2 < n ? ", " : i + 2 == n ? " or " : "");
	near = hy_cli_suggest(value, choices, n);
	if (near)
		fprintf(cli->err, " (did you mean \"%s\"?)", near);
	putc('\n', cli->err);
	return -EINVAL;
}

int hy_cli_begin(struct hy_cli *cli, const struct hy_cli_command *command, int argc, char **argv)
{
	const struct hy_cli_option *o = command->options;
	size_t nl = 0, ns = 0, i;

	memset(cli, 0, sizeof(*cli));
	cli->command = command;
	cli->out = stdout;
	cli->err = stderr;
	cli->argc = argc;
	cli->argv = argv;
	cli->args = argv + (argc > 0);
	cli->shortopts[ns++] = '-'; /* arguments in order, as code 1 */
	cli->shortopts[ns++] = ':'; /* a missing value is ':', not '?' */
	for (i = 0; o && (o[i].name || o[i].short_name); i++) {
		if (i == HY_CLI_MAX_OPTIONS || o[i].id <= 0 || o[i].short_name == ':' ||
		    o[i].short_name == '?' || o[i].short_name == '-' || o[i].short_name == 1 ||
		    (unsigned)o[i].short_name > 127) {
			fprintf(cli->err, "%s: %s: option table entry %zu is malformed\n",
				HY_CLI_PROGRAM, title_of(command), i);
			return -EINVAL;
		}
		if (o[i].name)
			cli->longopts[nl++] = (struct option){
				o[i].name, o[i].takes_value ? required_argument : no_argument, NULL,
				LONG_BASE + (int)i};
		if (o[i].short_name) {
			cli->shortopts[ns++] = (char)o[i].short_name;
			if (o[i].takes_value)
				cli->shortopts[ns++] = ':';
		}
	}
	cli->longopts[nl++] = (struct option){"help", no_argument, NULL, HELP_VAL};
	cli->longopts[nl] = (struct option){0};
	cli->shortopts[ns++] = 'h';
	cli->shortopts[ns] = '\0';
	/* 0, not 1: glibc starts afresh (its permutation state too) */
	optind = 0;
	opterr = 0;
	return 0;
}

/* The option table entry for getopt_long's answer @c, or NULL. */
static const struct hy_cli_option *entry_of(const struct hy_cli *cli, int c)
{
	const struct hy_cli_option *o = cli->command->options;

	if (!o)
		return NULL;
	if (c >= LONG_BASE && c < HELP_VAL)
		return &o[c - LONG_BASE];
	for (size_t i = 0; o[i].name || o[i].short_name; i++)
		if (o[i].short_name == c)
			return &o[i];
	return NULL;
}

/* Says that @word (as typed, without its value) is no option of the
 * command, and which one is nearest. */
static int unknown_option(struct hy_cli *cli, const char *typed, size_t typed_len)
{
	const char *cands[HY_CLI_MAX_OPTIONS + 1];
	const struct hy_cli_option *o = cli->command->options;
	const char *bare = typed + (typed[1] == '-' ? 2 : 1);
	size_t n = 0, bl = typed_len - (size_t)(bare - typed);

	for (size_t i = 0; o && (o[i].name || o[i].short_name); i++)
		if (o[i].name)
			cands[n++] = o[i].name;
	cands[n++] = "help";
	say_prefix(cli->err, cli->command);
	fprintf(cli->err, "unknown option \"%.*s\"", (int)typed_len, typed);
	if (bl <= MAX_WORD) {
		char word[MAX_WORD + 1];
		const char *near;

		memcpy(word, bare, bl);
		word[bl] = '\0';
		near = hy_cli_suggest(word, cands, n);
		if (near)
			fprintf(cli->err, "; did you mean --%s?", near);
	}
	putc('\n', cli->err);
	hy_cli_print_usage(cli->err, cli->command, true);
	return -EINVAL;
}

/* The arguments after "--" (or none) joined to those kept; 0. */
static int finish(struct hy_cli *cli)
{
	for (int i = optind; i > 0 && i < cli->argc; i++)
		cli->argv[1 + cli->kept++] = cli->argv[i];
	cli->args = cli->argv + 1;
	cli->nargs = cli->kept;
	cli->done = true;
	return 0;
}

int hy_cli_next(struct hy_cli *cli, int *id, const char **value)
{
	*id = 0;
	*value = NULL;
	if (cli->done || cli->argc < 2)
		return cli->done ? 0 : finish(cli);
	for (;;) {
		/* the element getopt_long is about to read (a cluster of short
		 * options keeps optind on its element until its end) */
		int at = optind > 0 ? optind : 1, longindex = -1;
		int c = getopt_long(cli->argc, cli->argv, cli->shortopts, cli->longopts,
				    &longindex);
		const char *elem = at < cli->argc ? cli->argv[at] : "";
		const struct hy_cli_option *o;

		if (c == -1)
			return finish(cli);
		if (c == 1) {
			cli->argv[1 + cli->kept++] = optarg;
			continue;
		}
		if (c == '?' && optopt == 0) {
			/* an unknown or ambiguous long option; optind is past it */
			const char *t = optind > 1 ? cli->argv[optind - 1] : elem;

			return unknown_option(cli, t, strcspn(t, "="));
		}
		if (c == '?' && optopt >= LONG_BASE) {
			o = entry_of(cli, optopt);
			say_prefix(cli->err, cli->command);
			fprintf(cli->err, "--%s takes no value (\"%s\")\n", o ? o->name : "help",
				elem);
			hy_cli_print_usage(cli->err, cli->command, true);
			return -EINVAL;
		}
		if (c == '?') {
			/* "-dry-run": a long option with one dash, most likely */
			if (elem[0] == '-' && elem[1] == optopt && elem[1] != '-' && elem[2])
				return unknown_option(cli, elem, strcspn(elem, "="));
			say_prefix(cli->err, cli->command);
			fprintf(cli->err, "unknown option \"-%c\"", optopt);
			if (strlen(elem) > 2 && elem[0] == '-' && elem[1] != '-')
				fprintf(cli->err, " (in \"%s\")", elem);
			putc('\n', cli->err);
			hy_cli_print_usage(cli->err, cli->command, true);
			return -EINVAL;
		}
		if (c == ':') {
			o = entry_of(cli, optopt);
			say_prefix(cli->err, cli->command);
			if (o && optopt >= LONG_BASE)
				fprintf(cli->err, "--%s", o->name);
			else
				fprintf(cli->err, "-%c", optopt);
			fprintf(cli->err, " needs %s\n",
				o && o->value_name ? o->value_name : "a value");
			hy_cli_print_usage(cli->err, cli->command, true);
			return -EINVAL;
		}
		if (c >= LONG_BASE) {
			/* getopt_long takes "--dry" for "--dry-run": refused, so
			 * that a script's words keep their meaning */
			const char *name = c == HELP_VAL ? "help" : entry_of(cli, c)->name;
			size_t len = strlen(name);

			if (strncmp(elem, "--", 2) != 0 || strncmp(elem + 2, name, len) != 0 ||
			    (elem[2 + len] != '\0' && elem[2 + len] != '='))
				return unknown_option(cli, elem, strcspn(elem, "="));
		}
		o = c == HELP_VAL ? NULL : entry_of(cli, c);
		if (!o) {
			/* --help, -h */
			hy_cli_print_usage(cli->out, cli->command, false);
			return -ECANCELED;
		}
		*id = o->id;
		*value = o->takes_value ? optarg : NULL;
		return 1;
	}
}

/* The command of @table named @word, or NULL. */
static const struct hy_cli_command *find(const struct hy_cli_command *const *table,
					 const char *word)
{
	for (size_t i = 0; table[i]; i++)
		if (strcmp(table[i]->name, word) == 0)
			return table[i];
	return NULL;
}

/* Says that @word names none of @group's commands (or actions), with the
 * nearest; 2. */
static int unknown_command(const struct hy_cli_command *group, const char *word)
{
	const struct hy_cli_command *const *table = group->actions;
	const char *cands[64], *near;
	size_t n = 0;
	bool top = !*title_of(group);

	for (; n < 64 && table[n]; n++)
		cands[n] = table[n]->name;
	near = hy_cli_suggest(word, cands, n);
	say_prefix(stderr, top ? NULL : group);
	fprintf(stderr, "unknown %s \"%s\"", top ? "command" : "action", word);
	if (near)
		fprintf(stderr, "; did you mean \"%s\"?", near);
	putc('\n', stderr);
	hy_cli_print_usage(stderr, group, true);
	return 2;
}

static bool is_help(const char *word)
{
	return strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0 || strcmp(word, "help") == 0;
}

/* `help WORD...`: the usage of the command the words name. */
static int help_for(const struct hy_cli_command *group, int argc, char **argv)
{
	const struct hy_cli_command *c = group;

	for (int i = 0; i < argc; i++) {
		const struct hy_cli_command *next = c->actions ? find(c->actions, argv[i]) : NULL;

		if (!next && c->actions)
			return unknown_command(c, argv[i]);
		if (!next) {
			fprintf(stderr, "%s: help: \"%s\" has no action \"%s\"\n", HY_CLI_PROGRAM,
				title_of(c), argv[i]);
			return 2;
		}
		c = next;
	}
	hy_cli_print_usage(stdout, c, false);
	if (c->actions)
		hy_cli_print_commands(stdout, c->actions, title_of(c));
	return 0;
}

int hy_cli_run(const struct hy_cli_command *command, int argc, char **argv)
{
	const struct hy_cli_command *next;
	bool top = !*title_of(command);

	if (!command->actions)
		return command->run(command, argc, argv);
	if (argc < 2) {
		if (!top) {
			say_prefix(stderr, command);
			fprintf(stderr, "name an action:");
			for (size_t i = 0; command->actions[i]; i++)
				fprintf(stderr, "%s %s", i ? "," : "", command->actions[i]->name);
			putc('\n', stderr);
		}
		hy_cli_print_usage(stderr, command, true);
		return 2;
	}
	if (is_help(argv[1]))
		return help_for(command, argc - 2, argv + 2);
	next = find(command->actions, argv[1]);
	if (!next)
		return unknown_command(command, argv[1]);
	return hy_cli_run(next, argc - 1, argv + 1);
}
