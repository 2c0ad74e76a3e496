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
		printf("%s\n",
		       json_object_to_json_string_ext(
			       result, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	else
		print_rules(result);
	json_object_put(result);
	return 0;
}

/* pin PATH..., unpin PATH..., pin --list [MOUNTPOINT] */
static int pin_paths(const char *command, bool unpin, int argc, char **argv)
{
	struct json_object *args, *list;
	char dir[PATH_MAX] = "", mnt[PATH_MAX] = "";
	const char *listed = NULL;
	bool json = false, list_only = false;
	int npaths = 0;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--list") == 0 && !unpin)
			list_only = true;
		else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "hybridctl: %s: unknown option \"%s\"\n", command, argv[i]);
			return 2;
		} else
			npaths++;
	}
	if (list_only) {
		char found[PATH_MAX];
		int rc;

		for (int i = 0; i < argc; i++)
			if (argv[i][0] != '-') {
				if (listed) {
					fprintf(stderr,
						"hybridctl: pin --list: one MOUNTPOINT only\n");
					return 2;
				}
				listed = argv[i];
			}
		rc = hy_ctl_find_state_dir(command, listed, NULL, found, sizeof(found));
		if (rc)
			return rc;
		args = json_object_new_object();
		if (!args)
			return 1;
		return call(command, found, args, json);
	}
	if (!npaths) {
		fprintf(stderr, "usage: hybridctl %s PATH... [--json]%s\n", command,
			unpin ? "" : "\n       hybridctl pin --list [MOUNTPOINT] [--json]");
		return 2;
	}
	args = json_object_new_object();
	list = json_object_new_array();
	if (!args || !list) {
		json_object_put(args);
		json_object_put(list);
		fprintf(stderr, "hybridctl: out of memory\n");
		return 1;
	}
	json_object_object_add(args, unpin ? "unpin" : "pin", list);
	for (int i = 0; i < argc; i++) {
		char real[PATH_MAX], d[PATH_MAX], m[PATH_MAX];
		const char *inside;
		int rc;

		if (argv[i][0] == '-' && argv[i][1])
			continue;
		if (!real_path(argv[i], real, sizeof(real))) {
			fprintf(stderr, "hybridctl: %s: \"%s\": %s\n", command, argv[i],
				strerror(errno));
			json_object_put(args);
			return 1;
		}
		rc = hy_ctl_mount_of(real, d, sizeof(d), m, sizeof(m), &inside);
		if (rc) {
			if (rc == -ENOENT)
				fprintf(stderr,
					"hybridctl: %s: \"%s\" is outside every hybridfs mount of "
					"yours\n",
					command, argv[i]);
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
				command, argv[i], m, mnt);
			json_object_put(args);
			return 2;
		}
		snprintf(dir, sizeof(dir), "%s", d);
		snprintf(mnt, sizeof(mnt), "%s", m);
		json_object_array_add(list, json_object_new_string(inside));
	}
	/* the profiler's pending rows first: a file just made has its id */
	hy_ctl_sync_log(dir);
	return call(command, dir, args, json);
}

int hy_ctl_pin(int argc, char **argv)
{
	return pin_paths("pin", false, argc, argv);
}

int hy_ctl_unpin(int argc, char **argv)
{
	return pin_paths("unpin", true, argc, argv);
}

/* exclude [MOUNTPOINT] [--remove] [--list] GLOB... */
int hy_ctl_exclude(int argc, char **argv)
{
	struct json_object *args, *list;
	char dir[PATH_MAX];
	const char *mount = NULL;
	bool json = false, remove = false, list_only = false;
	int first = 0, nglobs = 0, rc;

	/* a first word naming a mount of yours is the MOUNTPOINT (a glob is
	 * relative to the mount, never one) */
	if (argc > 0 && argv[0][0] != '-') {
		char real[PATH_MAX], d[PATH_MAX], m[PATH_MAX];
		const char *inside;

		if (realpath(argv[0], real) &&
		    hy_ctl_mount_of(real, d, sizeof(d), m, sizeof(m), &inside) == 0 && !*inside) {
			mount = argv[0];
			first = 1;
		}
	}
	for (int i = first; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--remove") == 0)
			remove = true;
		else if (strcmp(argv[i], "--list") == 0)
			list_only = true;
		else if (argv[i][0] == '-' && argv[i][1] == '-') {
			fprintf(stderr, "hybridctl: exclude: unknown option \"%s\"\n", argv[i]);
			return 2;
		} else
			nglobs++;
	}
	if (!nglobs && !list_only) {
		fprintf(stderr,
			"usage: hybridctl exclude [MOUNTPOINT] [--remove] GLOB... [--json]\n"
			"       hybridctl exclude [MOUNTPOINT] --list [--json]\n");
		return 2;
	}
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
	for (int i = first; i < argc; i++)
		if (!(argv[i][0] == '-' && argv[i][1] == '-'))
			json_object_array_add(list, json_object_new_string(argv[i]));
	json_object_object_add(args, remove ? "include" : "exclude", list);
	return call("exclude", dir, args, json);
}
