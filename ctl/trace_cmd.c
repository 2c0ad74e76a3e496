/*
 * trace_cmd.c - hybridctl trace export: the access log as a trace file.
 *
 *   hybridctl trace export [MOUNTPOINT] [--state DIR] [--since T] [--until T]
 *                          --format csv|fiu|msr [--output FILE]
 *
 * The state folder comes from the running mount at MOUNTPOINT (runtime.h),
 * from --state DIR (also for a filesystem that is not mounted), or, with
 * neither, from the one mount that runs. The database is opened read-only;
 * the daemon is not asked anything. --output FILE is written to FILE.tmp,
 * then renamed, so FILE is never left half written (a device or pipe named
 * by --output is written directly). Exit status: 0, 1 when something cannot
 * be read or written, 2 for a bad command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "hybridfs/cli.h"
#include "hybridfs/runtime.h"
#include "hybridfs/state.h"
#include "hybridfs/trace.h"

struct export_args {
	const char *mountpoint, *state_dir, *since, *until, *format, *output;
};

enum { OPT_STATE = 1, OPT_SINCE, OPT_UNTIL, OPT_FORMAT, OPT_OUTPUT };

static const struct hy_cli_option export_options[] = {
	{"state", 0, true, OPT_STATE, "DIR"},
	{"since", 0, true, OPT_SINCE, "a time T"},
	{"until", 0, true, OPT_UNTIL, "a time T"},
	{"format", 0, true, OPT_FORMAT, "csv, fiu or msr"},
	{"output", 0, true, OPT_OUTPUT, "a FILE"},
	{0},
};

/* -1 when the command line is whole, or the exit status after --help (0)
 * or a usage error (2). */
static int parse_args(const struct hy_cli_command *command, int argc, char **argv,
		      struct export_args *a)
{
	struct hy_cli cli;
	const char *value;
	int rc, id;

	memset(a, 0, sizeof(*a));
	if (hy_cli_begin(&cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(&cli, &id, &value)) > 0) {
		const char **slot = id == OPT_STATE    ? &a->state_dir
				    : id == OPT_SINCE  ? &a->since
				    : id == OPT_UNTIL  ? &a->until
				    : id == OPT_FORMAT ? &a->format
						       : &a->output;

		*slot = value;
	}
	if (rc < 0)
		return hy_cli_exit_status(rc);
	if (cli.nargs > 1)
		return hy_cli_usage_error(&cli, "unexpected argument \"%s\"", cli.args[1]);
	a->mountpoint = cli.nargs ? cli.args[0] : NULL;
	if (!a->format)
		return hy_cli_usage_error(&cli, "name a format: --format csv|fiu|msr");
	if (a->mountpoint && a->state_dir)
		return hy_cli_usage_error(&cli, "name a MOUNTPOINT or --state DIR, not both");
	if (a->output && !*a->output)
		return hy_cli_usage_error(&cli, "--output needs a file name");
	return -1;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Where --output goes. A regular file (or a new name) is written as
 * FILE.tmp and renamed into place (through a symbolic link, to the file it
 * names); anything else that exists (a device, a pipe) is written directly,
 * never replaced. */
struct output {
	const char *name; /* as given, for messages */
	char *final;	  /* what is renamed over, or NULL when direct */
	char *tmp;	  /* final.tmp, or NULL when direct */
	FILE *f;
};

/* 0 or a positive errno (the file it concerns in *@bad). */
static int output_open(struct output *o, const char *name, const char **bad)
{
	struct stat st;
	char real[PATH_MAX];
	int fd;

	memset(o, 0, sizeof(*o));
	o->name = name;
	*bad = name;
	if (stat(name, &st) == 0 && !S_ISREG(st.st_mode)) {
		o->f = fopen(name, "we");
		return o->f ? 0 : errno;
	}
	/* a link to a regular file: replace the file, keep the link */
	o->final = strdup(realpath(name, real) ? real : name);
	if (!o->final || asprintf(&o->tmp, "%s.tmp", o->final) < 0) {
		o->tmp = NULL;
		return ENOMEM;
	}
	*bad = o->tmp;
	/* 0600: the trace names the programs you ran */
	fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int err = errno;

		close(fd);
		unlink(o->tmp);
		return err;
	}
	return 0;
}

/* Flushes and closes; for a file, syncs and renames it into place. 0 or a
 * positive errno. */
static int output_finish(struct output *o)
{
	int err = 0;

	errno = 0;
	if (fflush(o->f) == EOF || ferror(o->f))
		err = errno ? errno : EIO;
	else if (o->tmp && fsync(fileno(o->f)) < 0)
		err = errno;
	if (fclose(o->f) == EOF && !err)
		err = errno ? errno : EIO;
	o->f = NULL;
	if (!err && o->tmp && rename(o->tmp, o->final) < 0)
		err = errno;
	return err;
}

/* Closes and removes what was written, on failure. */
static void output_abandon(struct output *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
}

static void output_free(struct output *o)
{
	free(o->final);
	free(o->tmp);
}

static int trace_export(const struct hy_cli_command *command, int argc, char **argv)
{
	struct export_args a;
	enum hy_trace_format format;
	int64_t since = INT64_MIN, until = INT64_MAX, now = now_ns();
	struct hy_state *state;
	struct output o = {0};
	const char *bad;
	char why[1024];
	uint64_t rows;
	FILE *out = stdout;
	int rc;

	rc = parse_args(command, argc, argv, &a);
	if (rc >= 0)
		return rc;
	if (hy_trace_format_parse(a.format, &format, why, sizeof(why)) ||
	    (a.since && hy_trace_parse_time(a.since, now, &since, why, sizeof(why))) ||
	    (a.until && hy_trace_parse_time(a.until, now, &until, why, sizeof(why)))) {
		fprintf(stderr, "hybridctl: trace export: %s\n", why);
		return 2;
	}
	if (since >= until) {
		fprintf(stderr,
			"hybridctl: trace export: --since \"%s\" is not before --until \"%s\"\n",
			a.since ? a.since : "", a.until ? a.until : "");
		return 2;
	}
	rc = hy_ctl_open_log("trace export", a.mountpoint, a.state_dir, &state);
	if (rc)
		return rc;
	if (a.output) {
		rc = output_open(&o, a.output, &bad);
		if (rc) {
			fprintf(stderr, "hybridctl: cannot write \"%s\": %s\n", bad, strerror(rc));
			output_free(&o);
			hy_state_close(state);
			return 1;
		}
		out = o.f;
	}
	rc = hy_trace_export(state->db, format, since, until, out, &rows, why, sizeof(why));
	hy_state_close(state);
	if (rc) {
		/* the database's errors name it; the output's are named here */
		if (!ferror(out))
			fprintf(stderr, "hybridctl: %s\n", why);
		else if (a.output)
			fprintf(stderr, "hybridctl: \"%s\": %s\n", a.output, why);
		else
			fprintf(stderr, "hybridctl: standard output: %s\n", why);
		output_abandon(&o);
		output_free(&o);
		return 1;
	}
	if (!a.output)
		return 0;
	rc = output_finish(&o);
	if (rc) {
		fprintf(stderr, "hybridctl: cannot write \"%s\": %s\n", a.output, strerror(rc));
		output_abandon(&o);
		output_free(&o);
		return 1;
	}
	output_free(&o);
	fprintf(stderr, "exported %" PRIu64 " requests to %s\n", rows, a.output);
	return 0;
}

static const struct hy_cli_command export_command = {
	.name = "export",
	.title = "trace export",
	.run = trace_export,
	.summary = "the access log as a trace file (csv, fiu, msr)",
	.usage =
		"usage: hybridctl trace export [MOUNTPOINT] [--state DIR] [--since T] [--until T]\n"
		"                              --format csv|fiu|msr [--output FILE]\n"
		"\n"
		"  MOUNTPOINT    a running hybridfs mount (the only one when not named)\n"
		"  --state DIR   read this state folder instead (the mount may be gone)\n"
		"  --since T     requests at or after T; --until T: before T. T is seconds\n"
		"                since the epoch, an ISO 8601 date such as 2026-11-30T02:00:00Z,\n"
		"                or a time ago: -90s, -15m, -2h, -1d\n"
		"  --format F    csv (hybridfs's own), fiu (FIU SRCMap) or msr (MSR Cambridge)\n"
		"  --output FILE write FILE instead of standard output\n"
		"See hybridctl(8).\n",
	.options = export_options,
};

static const struct hy_cli_command *const trace_actions[] = {&export_command, NULL};

const struct hy_cli_command hy_ctl_trace_command = {
	.name = "trace",
	.summary = "trace export: the access log as a trace (T: -90s, -2h, ISO 8601)",
	.usage =
		"usage: hybridctl trace export [MOUNTPOINT | --state DIR] [--since T] [--until T]\n"
		"                              --format csv|fiu|msr [--output FILE]\n",
	.actions = trace_actions,
};
