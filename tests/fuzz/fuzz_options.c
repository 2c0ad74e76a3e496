/* fuzz_options.c - libFuzzer target for the daemon's command line and mount
 * options (lib/options.c), and the emulate= value the daemon parses at
 * start (device/devmodel.c's hy_devmodel_parse_spec()).
 *
 * An input is an argument vector, one word a line: the first line is
 * argv[0] ("hybridfs", "mount.hybridfs" or a path to either), the others
 * the arguments, so "-o\ncache=/x,cache_size=2M" is two words. Each input
 * is parsed three ways:
 *
 *   1. hy_options_parse() on that vector, as fs/main.c does; on success
 *      the checks that the parser promises, then hy_options_fuse_args()
 *      and, when emulate= was given, hy_devmodel_parse_spec();
 *   2. hy_options_parse_list() on the whole input as one -o list (a NUL
 *      ends it, newlines are data), over the defaults;
 *   3. the same with sloppy (mount -s) set.
 *
 * Nothing touches the filesystem (hy_options_check() is not called: it
 * resolves paths). Built and run by tests/fuzz/run.sh; seeds in
 * tests/fuzz/corpus/fuzz_options/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <fuse_lowlevel.h>

#include "hybridfs/devmodel.h"
#include "hybridfs/log.h"
#include "hybridfs/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WORDS 64 /* more words than any real command line has */

/* What a successful parse promises; a broken promise is a crash for the
 * fuzzer to report. */
static void check_parsed(const struct hy_options *o)
{
	if (!o->program)
		abort();
	if (!o->show_help && !o->show_version && (!o->backing || !o->mountpoint))
		abort();
	if (o->heat_periods < HY_OPTIONS_HEAT_PERIODS_MIN ||
	    o->heat_periods > HY_OPTIONS_HEAT_PERIODS_MAX)
		abort();
	if (!(o->heat_threshold >= 0.0 && o->heat_threshold <= HY_OPTIONS_HEAT_THRESHOLD_MAX))
		abort();
	if (o->max_threads < 1 || o->max_threads > 256)
		abort();
	if (o->bopt_size < HY_OPTIONS_BOPT_MIN || o->cache_size < HY_OPTIONS_CACHE_MIN)
		abort();
	if (o->pore_given && o->pore_open_permille > 1000)
		abort();
	if (o->attr_timeout < 0 || o->entry_timeout < 0 || o->negative_timeout < 0)
		abort();
	if (o->profile_max_age_s < 0 || o->profile_max_rows < 0)
		abort();
}

static void parse_argv(char *text)
{
	struct hy_options opts;
	char *argv[MAX_WORDS + 1], why[512];
	int argc = 0;
	char *p = text;

	while (argc < MAX_WORDS) {
		char *nl = strchr(p, '\n');

		argv[argc++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	argv[argc] = NULL;

	why[0] = '\0';
	if (hy_options_parse(argc, argv, &opts, why, sizeof(why)) == 0) {
		struct fuse_args args = FUSE_ARGS_INIT(0, NULL);

		check_parsed(&opts);
		if (opts.backing && hy_options_fuse_args(&opts, &args) == 0 && args.argc < 3)
			abort();
		fuse_opt_free_args(&args);
		if (opts.emulate) {
			struct hy_devmodel_params params;

			hy_devmodel_parse_spec(opts.emulate, &params, why, sizeof(why));
		}
	} else if (!why[0]) {
		/* every refusal says why (ENOMEM aside, which this does not hit) */
		abort();
	}
	hy_options_free(&opts);
}

static void parse_list(const char *list, bool sloppy)
{
	static char *argv[] = {"hybridfs", "/backing", "/mnt", NULL};
	struct hy_options opts;
	char why[512];

	if (hy_options_parse(3, argv, &opts, why, sizeof(why)) != 0)
		abort();
	opts.sloppy = sloppy;
	why[0] = '\0';
	if (hy_options_parse_list(&opts, list, why, sizeof(why)) == 0)
		check_parsed(&opts);
	else if (!why[0])
		abort();
	hy_options_free(&opts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	char *text;

	if (!quiet) {
		hy_log_init(HY_LOG_STDERR, LOG_CRIT, "fuzz_options");
		quiet = true;
	}
	/* a copy with a NUL after it: the parsers take C strings */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	parse_list(text, false);
	parse_list(text, true);
	parse_argv(text); /* last: it cuts @text into words */
	free(text);
	return 0;
}
