/*
 * hybridctl.c - what a person uses to see what hybridfs is doing.
 *
 *   hybridctl status [MOUNTPOINT] [--json]
 *
 * Mounts are found through the runtime registry (runtime.h); the state
 * folder's database is opened read-only. Exit status: 0, 1 when a mount
 * cannot be read, 2 for a bad command line.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "hybridfs/log.h"
#include "hybridfs/runtime.h"
#include "hybridfs/state.h"

/* What status reports of one mount. Stable JSON field names: see
 * hybridctl(8). */
struct mount_status {
	const struct hy_runtime_entry *entry;
	int64_t uptime;
	int64_t database_bytes;
	int schema_version;
	char error[512]; /* why the state could not be read, or "" */
};

static void usage(FILE *out)
{
	fprintf(out, "usage: hybridctl status [MOUNTPOINT] [--json]\n"
		     "       hybridctl --help | --version\n"
		     "\n"
		     "  status   the mount, its backing directory, state folder and daemon;\n"
		     "           every hybridfs mount of yours when no MOUNTPOINT is named\n"
		     "See hybridctl(8).\n");
}

static int64_t file_size(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

static void collect(const struct hy_runtime_entry *entry, struct mount_status *ms)
{
	struct hy_state *state;

	memset(ms, 0, sizeof(*ms));
	ms->entry = entry;
	ms->uptime = (int64_t)time(NULL) - entry->started;
	ms->database_bytes = file_size(entry->state_dir, HY_STATE_DB_NAME) +
			     file_size(entry->state_dir, HY_STATE_DB_NAME "-wal");
	if (hy_state_open(entry->state_dir, NULL, true, &state, ms->error, sizeof(ms->error)) ==
	    0) {
		ms->schema_version = HY_STATE_SCHEMA_VERSION;
		hy_state_close(state);
	}
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_json(const struct mount_status *list, size_t n)
{
	printf("{\"version\":1,\"mounts\":[");
	for (size_t i = 0; i < n; i++) {
		const struct hy_runtime_entry *e = list[i].entry;

		printf("%s{\"mountpoint\":", i ? "," : "");
		json_string(e->mountpoint);
		printf(",\"backing\":");
		json_string(e->backing);
		printf(",\"state_dir\":");
		json_string(e->state_dir);
		printf(",\"uuid\":");
		json_string(e->uuid);
		printf(",\"pid\":%d,\"started\":%" PRId64 ",\"uptime_seconds\":%" PRId64
		       ",\"database_bytes\":%" PRId64 ",\"schema_version\":%d,\"error\":",
		       (int)e->pid, e->started, list[i].uptime, list[i].database_bytes,
		       list[i].schema_version);
		if (list[i].error[0])
			json_string(list[i].error);
		else
			printf("null");
		printf("}");
	}
	printf("]}\n");
}

static void human_duration(int64_t s, char *buf, size_t size)
{
	if (s >= 86400)
		snprintf(buf, size, "%" PRId64 "d %" PRId64 "h", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(buf, size, "%" PRId64 "h %" PRId64 "m", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		snprintf(buf, size, "%" PRId64 "m %" PRId64 "s", s / 60, s % 60);
	else
		snprintf(buf, size, "%" PRId64 "s", s);
}

static void print_human(const struct mount_status *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct hy_runtime_entry *e = list[i].entry;
		char up[32];

		human_duration(list[i].uptime, up, sizeof(up));
		printf("%s%-12s %s\n", i ? "\n" : "", "mount", e->mountpoint);
		printf("%-12s %s\n", "backing", e->backing);
		printf("%-12s %s\n", "state", e->state_dir);
		if (list[i].error[0])
			printf("%-12s unreadable: %s\n", "database", list[i].error);
		else
			printf("%-12s %.1f KiB, schema version %d\n", "database",
			       (double)list[i].database_bytes / 1024.0, list[i].schema_version);
		printf("%-12s %s\n", "mount id", e->uuid);
		printf("%-12s pid %d, up %s\n", "daemon", (int)e->pid, up);
	}
}

static int cmd_status(int argc, char **argv)
{
	struct hy_runtime_entry *entries;
	struct mount_status *list;
	const char *mountpoint = NULL;
	char real[PATH_MAX];
	bool json = false;
	size_t n, shown = 0;
	int rc, status = 0;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "hybridctl: status: unknown option \"%s\"\n", argv[i]);
			return 2;
		} else if (!mountpoint) {
			mountpoint = argv[i];
		} else {
			fprintf(stderr, "hybridctl: status: unexpected argument \"%s\"\n", argv[i]);
			return 2;
		}
	}
	if (mountpoint && !realpath(mountpoint, real)) {
		fprintf(stderr, "hybridctl: \"%s\": %s\n", mountpoint, strerror(errno));
		return 1;
	}
	rc = hy_runtime_list(&entries, &n);
	if (rc) {
		fprintf(stderr, "hybridctl: cannot read the runtime folder: %s\n", strerror(-rc));
		return 1;
	}
	list = calloc(n ? n : 1, sizeof(*list));
	if (!list) {
		free(entries);
		fprintf(stderr, "hybridctl: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (mountpoint && strcmp(entries[i].mountpoint, real) != 0)
			continue;
		collect(&entries[i], &list[shown]);
		if (list[shown].error[0])
			status = 1;
		shown++;
	}
	if (mountpoint && shown == 0) {
		fprintf(stderr, "hybridctl: \"%s\" is not a hybridfs mount of yours\n", mountpoint);
		status = 1;
	} else if (json) {
		print_json(list, shown);
	} else if (shown == 0) {
		printf("no hybridfs mounts\n");
	} else {
		print_human(list, shown);
	}
	free(list);
	free(entries);
	return status;
}

int main(int argc, char **argv)
{
	hy_log_init(HY_LOG_STDERR, LOG_ERR, "hybridctl");
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("hybridctl %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "status") == 0)
		return cmd_status(argc - 2, argv + 2);
	fprintf(stderr, "hybridctl: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
