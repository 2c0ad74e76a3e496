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
#include "hybridfs/runtime.h"
#include "hybridfs/state.h"
#include "hybridfs/trace.h"

struct export_args {
	const char *mountpoint, *state_dir, *since, *until, *format, *output;
};

static void usage(FILE *out)
{
	fprintf(out,
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
		"See hybridctl(8).\n");
}

/* "--name VALUE" or "--name=VALUE": 1 when argv[*i] is that option (its
 * value in *@value), 0 when it is not, -1 when the value is missing. */
static int option(int argc, char **argv, int *i, const char *name, const char **value)
{
	size_t len = strlen(name);

	if (strncmp(argv[*i], name, len) != 0)
		return 0;
	if (argv[*i][len] == '=') {
		*value = argv[*i] + len + 1;
		return 1;
	}
	if (argv[*i][len] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		fprintf(stderr, "hybridctl: trace export: %s needs a value\n", name);
		return -1;
	}
	*value = argv[++*i];
	return 1;
}

static int parse_args(int argc, char **argv, struct export_args *a)
{
	static const char *const names[] = {"--state", "--since", "--until", "--format",
					    "--output"};
	const char **slots[] = {&a->state_dir, &a->since, &a->until, &a->format, &a->output};

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < argc; i++) {
		int found = 0;

		for (size_t k = 0; k < sizeof(names) / sizeof(names[0]) && !found; k++) {
			found = option(argc, argv, &i, names[k], slots[k]);
			if (found < 0)
				return 2;
		}
		if (found)
			continue;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "hybridctl: trace export: unknown option \"%s\"\n",
				argv[i]);
			return 2;
		}
		if (a->mountpoint) {
			fprintf(stderr, "hybridctl: trace export: unexpected argument \"%s\"\n",
				argv[i]);
			return 2;
		}
		a->mountpoint = argv[i];
	}
	if (!a->format) {
		fprintf(stderr, "hybridctl: trace export: name a format: --format csv|fiu|msr\n");
		return 2;
	}
	if (a->mountpoint && a->state_dir) {
		fprintf(stderr, "hybridctl: trace export: name a MOUNTPOINT or --state DIR, not "
				"both\n");
		return 2;
	}
	if (a->output && !*a->output) {
		fprintf(stderr, "hybridctl: trace export: --output needs a file name\n");
		return 2;
	}
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

int hy_ctl_trace_export(int argc, char **argv)
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

	rc = parse_args(argc, argv, &a);
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
