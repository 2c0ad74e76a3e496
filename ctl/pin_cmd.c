/*
 * pin_cmd.c - `hybridctl pin PATH...`, `hybridctl unpin PATH...`,
 * `hybridctl pin --list [MOUNTPOINT]` and `hybridctl exclude [MOUNTPOINT]
 * [--remove] [--list] GLOB...`: the mount's pins and excludes (rules.h),
 * through the daemon's "rules" request (control.h), which checks them,
 * stores them in the state database and puts them in force.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl.h"
#include "hybridfs/cli.h"
#include "hybridfs/control.h"
#include "hybridfs/runtime.h"

static uint64_t member_u64(struct json_object *obj, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(obj, key, &v) ? (uint64_t)json_object_get_int64(v) : 0;
}

/* @path's real path; one that names nothing now (unpin of a removed
 * file) through its folder's. */
static bool real_path(const char *path, char *real, size_t size)
{
	char dir[PATH_MAX], rdir[PATH_MAX];
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	int saved;

	if (realpath(path, real))
		return true;
	saved = errno;
	if (saved != ENOENT || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
	if (!realpath(dir, rdir) ||
	    (size_t)snprintf(real, size, "%s/%s", strcmp(rdir, "/") ? rdir : "", name) >= size) {
		errno = saved;
		return false;
	}
	return true;
}

static void print_rules(struct json_object *r)
{
	struct json_object *pins = json_object_object_get(r, "pins");
	struct json_object *ex = json_object_object_get(r, "excludes");
	size_t np = pins ? json_object_array_length(pins) : 0;
	size_t ne = ex ? json_object_array_length(ex) : 0;
	char a[32], b[32];

	if (!np)
		printf("pinned: nothing\n");
	for (size_t i = 0; i < np; i++) {
		struct json_object *e = json_object_array_get_idx(pins, i);
		const char *path = json_object_get_string(json_object_object_get(e, "path"));

		hy_ctl_human_bytes(member_u64(e, "bytes"), a, sizeof(a));
		printf("pinned: %s (%" PRIu64 " file%s, %s)\n", *path ? path : ".",
		       member_u64(e, "files"), member_u64(e, "files") == 1 ? "" : "s", a);
	}
	if (!ne)
		printf("excluded: nothing\n");
	for (size_t i = 0; i < ne; i++) {
		struct json_object *e = json_object_array_get_idx(ex, i);

		printf("excluded: %s (%s)\n",
		       json_object_get_string(json_object_object_get(e, "pattern")),
		       json_object_get_string(json_object_object_get(e, "source")));
	}
	if (json_object_get_boolean(json_object_object_get(r, "cache"))) {
		hy_ctl_human_bytes(member_u64(r, "held_bytes"), a, sizeof(a));
		hy_ctl_human_bytes(member_u64(r, "cap_bytes"), b, sizeof(b));
		printf("cache: %s held pinned of at most %s; %" PRIu64
		       " pinned blocks over the cap; %" PRIu64 " requests excluded\n",
		       a, b, member_u64(r, "over_cap_blocks"), member_u64(r, "excluded_requests"));
	} else {
		printf("cache: none on this mount (pins order the BOPT's plans only)\n");
	}
}

/* Sends @args to the mount of @dir and prints the answer. */
static int call(const char *command, const char *dir, struct json_object *args, bool json)
{
	struct json_object *result = NULL;
	char why[1024];
	int rc = hy_control_call_args(dir, HY_CONTROL_RULES, args, 120000, &result, why,
				      sizeof(why));

	json_object_put(args);
	if (rc) {
		fprintf(stderr, "hybridctl: %s: %s\n", command, why);
		return 1;
	}
	if (json)
		hy_ctl_print_json(result);
	else
		print_rules(result);
	json_object_put(result);
	return 0;
}

enum { OPT_JSON = 1, OPT_LIST, OPT_REMOVE };

static const struct hy_cli_option pin_options[] = {
	{"json", 0, false, OPT_JSON, NULL},
	{"list", 0, false, OPT_LIST, NULL},
	{0},
};

static const struct hy_cli_option unpin_options[] = {
	{"json", 0, false, OPT_JSON, NULL},
	{0},
};

static const struct hy_cli_option exclude_options[] = {
	{"json", 0, false, OPT_JSON, NULL},
	{"list", 0, false, OPT_LIST, NULL},
	{"remove", 0, false, OPT_REMOVE, NULL},
	{0},
};

/* The options of pin, unpin and exclude, and their other arguments in
 * @cli: 0, or the exit status after --help (0) or a usage error (2). */
static int parse(struct hy_cli *cli, const struct hy_cli_command *command, int argc, char **argv,
		 bool *json, bool *list_only, bool *remove)
{
	const char *value;
	int rc, id;

	*json = *list_only = *remove = false;
	if (hy_cli_begin(cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(cli, &id, &value)) > 0) {
		if (id == OPT_JSON)
			*json = true;
		else if (id == OPT_LIST)
			*list_only = true;
		else
			*remove = true;
	}
	return rc < 0 ? hy_cli_exit_status(rc) : -1;
}

/* pin PATH..., unpin PATH..., pin --list [MOUNTPOINT] */
static int pin_paths(const struct hy_cli_command *command, bool unpin, int argc, char **argv)
{
	const char *name = command->name;
	struct json_object *args, *list;
	char dir[PATH_MAX] = "", mnt[PATH_MAX] = "";
	bool json, list_only, remove;
	struct hy_cli cli;
	int rc = parse(&cli, command, argc, argv, &json, &list_only, &remove);

	if (rc >= 0)
		return rc;
	if (list_only) {
		char found[PATH_MAX];

		if (cli.nargs > 1)
			return hy_cli_usage_error(&cli, "--list: one MOUNTPOINT only");
		rc = hy_ctl_find_state_dir(name, cli.nargs ? cli.args[0] : NULL, NULL, found,
					   sizeof(found));
		if (rc)
			return rc;
		args = json_object_new_object();
		if (!args)
			return 1;
		return call(name, found, args, json);
	}
	if (!cli.nargs)
		return hy_cli_usage_error(&cli, "no PATH");
	args = json_object_new_object();
	list = json_object_new_array();
	if (!args || !list) {
		json_object_put(args);
		json_object_put(list);
		fprintf(stderr, "hybridctl: out of memory\n");
		return 1;
	}
	json_object_object_add(args, unpin ? "unpin" : "pin", list);
	for (int i = 0; i < cli.nargs; i++) {
		const char *path = cli.args[i];
		char real[PATH_MAX], d[PATH_MAX], m[PATH_MAX];
		const char *inside;

		if (!real_path(path, real, sizeof(real))) {
			fprintf(stderr, "hybridctl: %s: \"%s\": %s\n", name, path, strerror(errno));
			json_object_put(args);
			return 1;
		}
		rc = hy_ctl_mount_of(real, d, sizeof(d), m, sizeof(m), &inside);
		if (rc) {
			if (rc == -ENOENT)
				fprintf(stderr,
					"hybridctl: %s: \"%s\" is outside every hybridfs mount of "
					"yours\n",
					name, path);
			else
				fprintf(stderr, "hybridctl: cannot read the runtime folder: %s\n",
					strerror(-rc));
			json_object_put(args);
			return 1;
		}
		if (*dir && strcmp(dir, d) != 0) {
			fprintf(stderr,
				"hybridctl: %s: \"%s\" is in the mount on \"%s\", the paths before "
				"it in \"%s\": one mount at a time\n",
				name, path, m, mnt);
			json_object_put(args);
			return 2;
		}
		snprintf(dir, sizeof(dir), "%s", d);
		snprintf(mnt, sizeof(mnt), "%s", m);
		json_object_array_add(list, json_object_new_string(inside));
	}
	/* the profiler's pending rows first: a file just made has its id */
	hy_ctl_sync_log(dir);
	return call(name, dir, args, json);
}

static int pin(const struct hy_cli_command *command, int argc, char **argv)
{
	return pin_paths(command, false, argc, argv);
}

static int unpin(const struct hy_cli_command *command, int argc, char **argv)
{
	return pin_paths(command, true, argc, argv);
}

/* exclude [MOUNTPOINT] [--remove] [--list] GLOB... */
static int exclude(const struct hy_cli_command *command, int argc, char **argv)
{
	struct json_object *args, *list;
	char dir[PATH_MAX];
	const char *mount = NULL;
	bool json, remove, list_only;
	struct hy_cli cli;
	int first = 0, rc = parse(&cli, command, argc, argv, &json, &list_only, &remove);

	if (rc >= 0)
		return rc;
	/* a first word naming a mount of yours is the MOUNTPOINT (a glob is
	 * relative to the mount, never one) */
	if (cli.nargs > 0) {
		char real[PATH_MAX], d[PATH_MAX], m[PATH_MAX];
		const char *inside;

		if (realpath(cli.args[0], real) &&
		    hy_ctl_mount_of(real, d, sizeof(d), m, sizeof(m), &inside) == 0 && !*inside) {
			mount = cli.args[0];
			first = 1;
		}
	}
	if (cli.nargs == first && !list_only)
		return hy_cli_usage_error(&cli, "no GLOB");
	rc = hy_ctl_find_state_dir("exclude", mount, NULL, dir, sizeof(dir));
	if (rc)
		return rc;
	args = json_object_new_object();
	list = json_object_new_array();
	if (!args || !list) {
		json_object_put(args);
		json_object_put(list);
		fprintf(stderr, "hybridctl: out of memory\n");
		return 1;
	}
	for (int i = first; i < cli.nargs; i++)
		json_object_array_add(list, json_object_new_string(cli.args[i]));
	json_object_object_add(args, remove ? "include" : "exclude", list);
	return call("exclude", dir, args, json);
}

const struct hy_cli_command hy_ctl_pin_command = {
	.name = "pin",
	.run = pin,
	.summary = "a file's or a tree's blocks kept in the SSD cache, first in the BOPT",
	.usage = "usage: hybridctl pin PATH... [--json]\n"
		 "       hybridctl pin --list [MOUNTPOINT] [--json]\n"
		 "\n"
		 "  PATH    a file or a folder (every file under it) of one mount of yours;\n"
		 "          pins hold at most half of the cache store and are kept across\n"
		 "          remounts\n"
		 "  --list  the mount's pins and excludes\n"
		 "  --json  the daemon's answer as JSON (hybridctl(8))\n",
	.options = pin_options,
};

const struct hy_cli_command hy_ctl_unpin_command = {
	.name = "unpin",
	.run = unpin,
	.summary = "pins taken away (a path removed since too)",
	.usage = "usage: hybridctl unpin PATH... [--json]\n",
	.options = unpin_options,
};

const struct hy_cli_command hy_ctl_exclude_command = {
	.name = "exclude",
	.run = exclude,
	.summary = "paths matching GLOB kept out of the cache and the BOPT's plans",
	.usage = "usage: hybridctl exclude [MOUNTPOINT] [--remove] GLOB... [--json]\n"
		 "       hybridctl exclude [MOUNTPOINT] --list [--json]\n"
		 "\n"
		 "  GLOB      *.o, build/*, node_modules (the syntax of exclude= in hybridfs(8));\n"
		 "            one starting with '-' after \"--\"\n"
		 "  --remove  let them in again (those added by hybridctl exclude)\n"
		 "  --list    the mount's pins and excludes\n"
		 "  --json    the daemon's answer as JSON (hybridctl(8))\n",
	.options = exclude_options,
};
