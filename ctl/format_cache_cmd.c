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

#include "ctl.h"
#include "hybridfs/cache_store.h"
#include "hybridfs/ondisk.h"
#include "hybridfs/units.h"

#define MIN_SIZE (1024 * 1024) /* bytes: the smallest --size taken */

/* The tail hy_ondisk_check_overwrite() and refuse_existing_store() give a
 * refusal; here it is said in the command's own words. */
#define REFUSAL_TAIL "; refusing to overwrite it without force"

static void usage(FILE *out)
{
	fprintf(out, "usage: hybridctl format-cache TARGET [--size SIZE] [--force]\n"
		     "  TARGET   a file (made if missing), a block device, or UUID=, LABEL=,\n"
		     "           PARTUUID=, PARTLABEL=\n"
		     "  --size   the file's size (K, M, G, T suffixes; at least 1M); needed\n"
		     "           for a new file, ignored for a block device\n"
		     "  --force  format even over a filesystem or another store\n");
}

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

/* What was made, read back from the new superblock. */
static int report(const char *path, const char *target)
{
	struct hy_cache_store *store = NULL;
	char why[1024], data[32], journal[32], total[32];
	const struct hy_cache_store_header *h;

	if (hy_cache_store_open(path, NULL, &store, why, sizeof(why)) < 0) {
		fprintf(stderr, "hybridctl: format-cache: the new store does not open: %s\n", why);
		return 1;
	}
	h = &store->header;
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

int hy_ctl_format_cache(int argc, char **argv)
{
	const char *target = NULL, *size_text = NULL;
	char path[PATH_MAX], why[1024];
	bool force = false;
	uint64_t size = 0;
	struct stat st;
	int rc;

	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(arg, "--force") == 0) {
			force = true;
		} else if (strcmp(arg, "--size") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "hybridctl: format-cache: --size needs a SIZE\n");
				return 2;
			}
			size_text = argv[++i];
		} else if (strncmp(arg, "--size=", 7) == 0) {
			size_text = arg + 7;
		} else if (arg[0] == '-' && arg[1] != '\0') {
			fprintf(stderr, "hybridctl: format-cache: unknown option \"%s\"\n", arg);
			usage(stderr);
			return 2;
		} else if (target) {
			fprintf(stderr,
				"hybridctl: format-cache: one TARGET only (\"%s\", \"%s\")\n",
				target, arg);
			return 2;
		} else {
			target = arg;
		}
	}
	if (!target || !*target) {
		fprintf(stderr, "hybridctl: format-cache: no TARGET\n");
		usage(stderr);
		return 2;
	}
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
	return report(path, target);
}
