/*
 * format_cache_cmd.c - `hybridctl format-cache TARGET [--size SIZE]
 * [--force]`: makes an SSD cache store (cache_store.h) before any mount,
 * on a file or a whole block device. The store is unclaimed (an empty
 * mount uuid): the first mount that names it with cache=TARGET claims it.
 * Like every format in hybridfs it refuses to overwrite what libblkid
 * recognizes, another mount's store, a damaged store or a store at all,
 * unless --force; the refusal comes from hy_cache_store_create(), which
 * writes nothing before it has looked.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl.h"
#include "hybridfs/cli.h"
#include "hybridfs/cache_store.h"
#include "hybridfs/ondisk.h"
#include "hybridfs/units.h"

#define MIN_SIZE (1024 * 1024) /* bytes: the smallest --size taken */

/* The tail hy_ondisk_check_overwrite() and refuse_existing_store() give a
 * refusal; here it is said in the command's own words. */
#define REFUSAL_TAIL "; refusing to overwrite it without force"

enum { OPT_SIZE = 1, OPT_FORCE, OPT_JSON };

static const struct hy_cli_option format_cache_options[] = {
	{"size", 0, true, OPT_SIZE, "a SIZE"},
	{"force", 0, false, OPT_FORCE, NULL},
	{"json", 0, false, OPT_JSON, NULL},
	{0},
};

static bool is_tag(const char *s)
{
	return strncmp(s, "UUID=", 5) == 0 || strncmp(s, "LABEL=", 6) == 0 ||
	       strncmp(s, "PARTUUID=", 9) == 0 || strncmp(s, "PARTLABEL=", 10) == 0;
}

/* TARGET as a path: a tag through libblkid, a relative path made absolute
 * (cache= takes absolute paths only). 0 or 1 after saying why. */
static int target_path(const char *target, char *path, size_t size)
{
	char abs[PATH_MAX + 1], cwd[PATH_MAX], why[1024];
	const char *spec = target;
	int n;

	if (!is_tag(target) && target[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd))) {
			fprintf(stderr,
				"hybridctl: format-cache: cannot find the current folder: %s\n",
				strerror(errno));
			return 1;
		}
		n = snprintf(abs, sizeof(abs), "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, target);
		if (n < 0 || (size_t)n >= sizeof(abs)) {
			fprintf(stderr, "hybridctl: format-cache: \"%s\" is too long a path\n",
				target);
			return 1;
		}
		spec = abs;
	}
	if (hy_cache_store_resolve(spec, path, size, why, sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: format-cache: %s\n",
			strncmp(why, "cache: ", 7) == 0 ? why + 7 : why);
		return 1;
	}
	/* a device's name that no device has is a typo, not a file to make in
	 * /dev (RAM); a store on another RAM filesystem made here is meant */
	if (hy_ondisk_check_new(path, why, sizeof(why)) == -ENODEV) {
		fprintf(stderr, "hybridctl: format-cache: %s: %s\n", spec, why);
		return 1;
	}
	return 0;
}

/* Says why hy_cache_store_create() refused or failed. */
static void say_failure(int rc, char *why)
{
	char *msg = strncmp(why, "cache: ", 7) == 0 ? why + 7 : why;
	size_t len = strlen(msg), tail = strlen(REFUSAL_TAIL);

	if (rc == -EEXIST && len > tail && strcmp(msg + len - tail, REFUSAL_TAIL) == 0) {
		msg[len - tail] = '\0';
		fprintf(stderr,
			"hybridctl: format-cache: %s; nothing was written; --force formats it "
			"anyway\n",
			msg);
		return;
	}
	fprintf(stderr, "hybridctl: format-cache: %s\n", msg);
}

/* What was made, read back from the new superblock: as text, or as JSON
 * (@json; field names in hybridctl(8)). */
static int report(const char *path, const char *target, bool json)
{
	struct hy_cache_store *store = NULL;
	char why[1024], data[32], journal[32], total[32];
	const struct hy_cache_store_header *h;

	if (hy_cache_store_open(path, NULL, &store, why, sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: format-cache: the new store does not open: %s\n", why);
		return 1;
	}
	h = &store->header;
	if (json) {
		struct json_object *o = json_object_new_object();

		if (!o) {
			hy_cache_store_close(store);
			fprintf(stderr, "hybridctl: format-cache: out of memory\n");
			return 1;
		}
		json_object_object_add(o, "path", json_object_new_string(path));
		json_object_object_add(o, "cache_option",
				       json_object_new_string(is_tag(target) ? target : path));
		json_object_object_add(o, "lines", json_object_new_uint64(h->capacity));
		json_object_object_add(o, "line_size", json_object_new_uint64(h->line_size));
		json_object_object_add(o, "data_bytes", json_object_new_uint64(h->data_size));
		json_object_object_add(o, "journal_bytes", json_object_new_uint64(h->journal_size));
		json_object_object_add(
			o, "journal_records",
			json_object_new_uint64(h->journal_size / HY_CACHE_JOURNAL_RECORD));
		json_object_object_add(o, "total_bytes",
				       json_object_new_uint64(h->data_offset + h->data_size));
		json_object_object_add(o, "claimed", json_object_new_boolean(0));
		hy_ctl_print_json(o);
		json_object_put(o);
		hy_cache_store_close(store);
		return 0;
	}
	hy_ctl_human_bytes(h->data_size, data, sizeof(data));
	hy_ctl_human_bytes(h->journal_size, journal, sizeof(journal));
	hy_ctl_human_bytes(h->data_offset + h->data_size, total, sizeof(total));
	printf("formatted \"%s\" as a hybridfs cache store\n", path);
	printf("  capacity  %" PRIu64 " lines of %" PRIu32 " bytes: %" PRIu64 " bytes (%s)\n",
	       h->capacity, h->line_size, h->data_size, data);
	printf("  journal   %" PRIu64 " bytes (%s, %" PRIu64 " records)\n", h->journal_size,
	       journal, h->journal_size / HY_CACHE_JOURNAL_RECORD);
	printf("  in all    %" PRIu64 " bytes (%s)\n", h->data_offset + h->data_size, total);
	printf("it is unclaimed: the first mount that names it with cache=%s takes it\n",
	       is_tag(target) ? target : path);
	hy_cache_store_close(store);
	return 0;
}

static int format_cache(const struct hy_cli_command *command, int argc, char **argv)
{
	const char *target = NULL, *size_text = NULL, *value;
	char path[PATH_MAX], why[1024];
	bool force = false, json = false;
	uint64_t size = 0;
	struct hy_cli cli;
	struct stat st;
	int rc, id;

	if (hy_cli_begin(&cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(&cli, &id, &value)) > 0) {
		if (id == OPT_SIZE)
			size_text = value;
		else if (id == OPT_FORCE)
			force = true;
		else
			json = true;
	}
	if (rc < 0)
		return hy_cli_exit_status(rc);
	if (cli.nargs > 1)
		return hy_cli_usage_error(&cli, "one TARGET only (\"%s\", \"%s\")", cli.args[0],
					  cli.args[1]);
	target = cli.nargs ? cli.args[0] : NULL;
	if (!target || !*target)
		return hy_cli_usage_error(&cli, "no TARGET");
	if (size_text) {
		if (hy_units_parse_size(size_text, false, &size) < 0) {
			fprintf(stderr,
				"hybridctl: format-cache: --size \"%s\": use a number of bytes, "
				"or with K, M, G or T\n",
				size_text);
			return 2;
		}
		if (size < MIN_SIZE) {
			fprintf(stderr,
				"hybridctl: format-cache: --size \"%s\": the smallest store is "
				"1M\n",
				size_text);
			return 2;
		}
	}
	rc = target_path(target, path, sizeof(path));
	if (rc)
		return rc;
	if (stat(path, &st) < 0) {
		if (errno != ENOENT || is_tag(target)) {
			fprintf(stderr, "hybridctl: format-cache: cannot look at \"%s\": %s\n",
				path, strerror(errno));
			return 1;
		}
		if (!size_text) {
			fprintf(stderr,
				"hybridctl: format-cache: \"%s\" does not exist; --size is needed "
				"to make it\n",
				path);
			return 2;
		}
	} else if (S_ISBLK(st.st_mode)) {
		if (size_text)
			fprintf(stderr,
				"hybridctl: format-cache: --size is ignored for the block device "
				"\"%s\": the store takes all of it\n",
				path);
		size = 0;
	} else if (S_ISREG(st.st_mode) && !size_text) {
		size = (uint64_t)st.st_size; /* kept */
		if (size < MIN_SIZE) {
			fprintf(stderr,
				"hybridctl: format-cache: \"%s\" is %" PRIu64
				" bytes, less than the smallest store (1M); give --size\n",
				path, size);
			return 1;
		}
	}
	rc = hy_cache_store_create(path, NULL, size, HY_CACHE_LINE_SIZE, force, why, sizeof(why));
	if (rc < 0) {
		say_failure(rc, why);
		return 1;
	}
	return report(path, target, json);
}

const struct hy_cli_command hy_ctl_format_cache_command = {
	.name = "format-cache",
	.run = format_cache,
	.summary = "an SSD cache store on a file or a device, unclaimed until mounted",
	.usage = "usage: hybridctl format-cache TARGET [--size SIZE] [--force] [--json]\n"
		 "\n"
		 "  TARGET   a file (made if missing), a block device, or UUID=, LABEL=,\n"
		 "           PARTUUID=, PARTLABEL=\n"
		 "  --size   the file's size (K, M, G, T suffixes; at least 1M); needed\n"
		 "           for a new file, ignored for a block device\n"
		 "  --force  format even over a filesystem or another store\n"
		 "  --json   what was made, as JSON (hybridctl(8))\n",
	.options = format_cache_options,
};
