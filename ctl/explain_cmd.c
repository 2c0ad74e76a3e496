/*
 * explain_cmd.c - `hybridctl explain PATH [--range OFFSET[:LENGTH]]
 * [--json]`: asks the daemon of the mount PATH is in where the file's
 * blocks are served from, as runs of consecutive blocks with one answer:
 * DRAM (the cache's front buffer), SSD (a line of the cache store), BOPT
 * (relocated by the indirection map, with its block) or home, dirty
 * (newer than what lies below) or clean, and how hot they are (the master
 * access graph's weight after the last reorganization); the blocks of each
 * place counted; and why the file is or is not relocated (its "reason":
 * relocated, cold, written-once, excluded, removed, no-room, changed,
 * copying, stopped; fs/borg_handlers.c). At most 400 runs are listed, the counts
 * cover the whole range. A path removed through the mount is still
 * explained while its row is kept.
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
#include "hybridfs/units.h"

static uint64_t member_u64(struct json_object *obj, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(obj, key, &v) ? (uint64_t)json_object_get_int64(v) : 0;
}

static void print_human(struct json_object *r, const char *path)
{
	static const char *const places[] = {"dram", "ssd", "bopt", "home"};
	static const char *const shown[] = {"DRAM", "SSD", "BOPT", "home"};
	struct json_object *ranges = json_object_object_get(r, "ranges");
	struct json_object *summary = json_object_object_get(r, "summary");
	struct json_object *range = json_object_object_get(r, "range");
	size_t n = ranges ? json_object_array_length(ranges) : 0;

	struct json_object *reason = json_object_object_get(r, "reason");
	struct json_object *detail = json_object_object_get(r, "detail");

	if (json_object_object_get(r, "size"))
		printf("%s: file %" PRIu64 ", %" PRIu64 " bytes, %" PRIu64 " blocks of 4 KiB\n",
		       path, member_u64(r, "file_id"), member_u64(r, "size"),
		       member_u64(r, "blocks"));
	else
		printf("%s: file %" PRIu64 "\n", path, member_u64(r, "file_id"));
	if (reason)
		printf("%s, %" PRIu64 " blocks relocated: %s\n", json_object_get_string(reason),
		       member_u64(r, "relocated_blocks"),
		       detail ? json_object_get_string(detail) : "");
	if (range && member_u64(range, "count") != member_u64(r, "blocks"))
		printf("blocks %" PRIu64 " to %" PRIu64 " (%" PRIu64 " blocks):\n",
		       member_u64(range, "first"),
		       member_u64(range, "first") + member_u64(range, "count") - 1,
		       member_u64(range, "count"));
	if (summary) {
		bool any = false;

		printf("served from:");
		for (size_t i = 0; i < 4; i++) {
			struct json_object *o = json_object_object_get(summary, places[i]);
			uint64_t blocks = member_u64(o, "blocks"), dirty = member_u64(o, "dirty");

			if (!blocks)
				continue;
			printf("%s %s %" PRIu64 " blocks", any ? "," : "", shown[i], blocks);
			if (dirty)
				printf(" (%" PRIu64 " dirty)", dirty);
			any = true;
		}
		printf("%s\n", any ? "" : " nothing (an empty file)");
	}
	if (!n)
		return;
	printf("%12s %12s %10s  %-5s %-5s %12s  %s\n", "FIRST", "LAST", "BLOCKS", "WHERE", "STATE",
	       "BOPT BLOCK", "HEAT");
	for (size_t i = 0; i < n; i++) {
		struct json_object *x = json_object_array_get_idx(ranges, i), *heat, *bb, *d;
		uint64_t first = member_u64(x, "first"), count = member_u64(x, "count");
		const char *where = json_object_get_string(json_object_object_get(x, "where"));
		char bopt[24] = "-", h[24] = "-";

		for (size_t k = 0; k < 4; k++)
			if (where && strcmp(where, places[k]) == 0)
				where = shown[k];
		if (json_object_object_get_ex(x, "bopt_block", &bb))
			snprintf(bopt, sizeof(bopt), "%" PRIu64,
				 (uint64_t)json_object_get_int64(bb));
		if (json_object_object_get_ex(x, "heat", &heat))
			snprintf(h, sizeof(h), "%.2f", json_object_get_double(heat));
		printf("%12" PRIu64 " %12" PRIu64 " %10" PRIu64 "  %-5s %-5s %12s  %s\n", first,
		       first + count - 1, count, where ? where : "?",
		       json_object_object_get_ex(x, "dirty", &d) && json_object_get_boolean(d)
			       ? "dirty"
			       : "clean",
		       bopt, h);
	}
	if (json_object_object_get(r, "truncated"))
		printf("(the list stops at %zu runs; the counts above cover the whole range; "
		       "--range %" PRIu64 " goes on from block %" PRIu64 ")\n",
		       n, member_u64(r, "next_block") * 4096, member_u64(r, "next_block"));
}

/* --range OFFSET[:LENGTH], bytes with the size suffixes of units.h. */
static int parse_range(const char *text, uint64_t *off, uint64_t *len, bool *has_len)
{
	char head[64];
	const char *colon = strchr(text, ':');
	size_t hl = colon ? (size_t)(colon - text) : strlen(text);

	*has_len = false;
	if (hl == 0 || hl >= sizeof(head)) {
		fprintf(stderr, "hybridctl: explain: --range \"%s\": no offset (OFFSET[:LENGTH])\n",
			text);
		return -EINVAL;
	}
	memcpy(head, text, hl);
	head[hl] = '\0';
	if (hy_units_parse_size(head, true, off) < 0 || *off > INT64_MAX) {
		fprintf(stderr,
			"hybridctl: explain: --range \"%s\": offset \"%s\" is not a size "
			"(bytes, or with K, M, G, T)\n",
			text, head);
		return -EINVAL;
	}
	if (colon) {
		if (hy_units_parse_size(colon + 1, false, len) < 0 || *len > INT64_MAX) {
			fprintf(stderr,
				"hybridctl: explain: --range \"%s\": length \"%s\" is not a size "
				"above 0 (bytes, or with K, M, G, T)\n",
				text, colon + 1);
			return -EINVAL;
		}
		*has_len = true;
	}
	return 0;
}

/* A path that names nothing now (a file removed through the mount, whose
 * reason the daemon may still know): its directory's real path and its
 * name; false (errno kept) when the directory is gone too. */
static bool removed_path(const char *path, char *real, size_t size)
{
	char dir[PATH_MAX], rdir[PATH_MAX];
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	int saved = errno;

	if (saved != ENOENT || !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
	if (!realpath(dir, rdir)) {
		errno = saved;
		return false;
	}
	if ((size_t)snprintf(real, size, "%s/%s", strcmp(rdir, "/") ? rdir : "", name) >= size) {
		errno = saved;
		return false;
	}
	return true;
}

enum { OPT_JSON = 1, OPT_RANGE };

static const struct hy_cli_option explain_options[] = {
	{"json", 0, false, OPT_JSON, NULL},
	{"range", 0, true, OPT_RANGE, "OFFSET[:LENGTH]"},
	{0},
};

static int explain(const struct hy_cli_command *command, int argc, char **argv)
{
	struct json_object *args, *result = NULL;
	const char *path = NULL, *inside, *value;
	char real[PATH_MAX], dir[PATH_MAX], why[1024];
	bool json = false, ranged = false, has_len = false;
	uint64_t off = 0, len = 0;
	struct hy_cli cli;
	int rc, id;

	if (hy_cli_begin(&cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(&cli, &id, &value)) > 0) {
		if (id == OPT_JSON) {
			json = true;
		} else {
			if (parse_range(value, &off, &len, &has_len) < 0)
				return 2;
			ranged = true;
		}
	}
	if (rc < 0)
		return hy_cli_exit_status(rc);
	if (cli.nargs > 1)
		return hy_cli_usage_error(&cli, "one PATH only");
	if (cli.nargs == 0)
		return hy_cli_usage_error(&cli, "no PATH");
	path = cli.args[0];
	if (!realpath(path, real) && !removed_path(path, real, sizeof(real))) {
		fprintf(stderr, "hybridctl: explain: \"%s\": %s\n", path, strerror(errno));
		return 1;
	}
	rc = hy_ctl_mount_of(real, dir, sizeof(dir), NULL, 0, &inside);
	if (rc) {
		if (rc == -ENOENT)
			fprintf(stderr,
				"hybridctl: explain: \"%s\" is not in a hybridfs mount of yours\n",
				path);
		else
			fprintf(stderr, "hybridctl: cannot read the runtime folder: %s\n",
				strerror(-rc));
		return 1;
	}
	if (!*inside) {
		fprintf(stderr, "hybridctl: explain: \"%s\" is the mount itself, not a file\n",
			path);
		return 1;
	}
	args = json_object_new_object();
	if (!args) {
		fprintf(stderr, "hybridctl: out of memory\n");
		return 1;
	}
	json_object_object_add(args, "path", json_object_new_string(inside));
	if (ranged)
		json_object_object_add(args, "offset", json_object_new_int64((int64_t)off));
	if (has_len)
		json_object_object_add(args, "length", json_object_new_int64((int64_t)len));
	/* the profiler's pending rows first: a removal just made is marked */
	hy_ctl_sync_log(dir);
	rc = hy_control_call_args(dir, HY_CONTROL_EXPLAIN, args, 30000, &result, why, sizeof(why));
	json_object_put(args);
	if (rc) {
		fprintf(stderr, "hybridctl: explain: %s\n", why);
		return 1;
	}
	if (json)
		hy_ctl_print_json(result);
	else
		print_human(result, path);
	json_object_put(result);
	return 0;
}

const struct hy_cli_command hy_ctl_explain_command = {
	.name = "explain",
	.run = explain,
	.summary = "where a file's blocks are served from: DRAM, SSD, BOPT, home",
	.usage = "usage: hybridctl explain PATH [--range OFFSET[:LENGTH]] [--json]\n"
		 "\n"
		 "  PATH       a file in a hybridfs mount of yours (one removed through the\n"
		 "             mount too, while its row is kept)\n"
		 "  --range    the blocks of these bytes only (K, M, G, T suffixes): from\n"
		 "             OFFSET, LENGTH bytes (default: to the end)\n"
		 "  --json     the daemon's answer as JSON (hybridctl(8))\n"
		 "Runs of blocks with one answer: where they are served from, dirty or clean,\n"
		 "their BOPT block and heat; and why the file is (not) relocated.\n",
	.options = explain_options,
};
