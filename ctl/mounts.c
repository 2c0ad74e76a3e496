/* mounts.c - finding a mount's state folder, and syncing its log, for the
 * hybridctl commands that read the state database. See ctl.h. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl.h"
#include "hybridfs/control.h"
#include "hybridfs/runtime.h"
#include "hybridfs/state.h"

int hy_ctl_find_state_dir(const char *command, const char *mountpoint, const char *state_dir,
			  char *dir, size_t size)
{
	struct hy_runtime_entry *entries;
	char real[PATH_MAX];
	size_t n, match = SIZE_MAX;
	int rc;

	if (state_dir) {
		snprintf(dir, size, "%s", state_dir);
		return 0;
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
	for (size_t i = 0; i < n; i++) {
		if (!mountpoint || strcmp(entries[i].mountpoint, real) == 0)
			match = i;
	}
	if (mountpoint && match == SIZE_MAX) {
		fprintf(stderr,
			"hybridctl: \"%s\" is not a hybridfs mount of yours; for one that is not "
			"mounted, name its state folder with --state DIR\n",
			mountpoint);
		rc = 1;
	} else if (!mountpoint && n == 0) {
		fprintf(stderr, "hybridctl: no hybridfs mounts of yours are running; name a state "
				"folder with --state DIR\n");
		rc = 1;
	} else if (!mountpoint && n > 1) {
		fprintf(stderr, "hybridctl: %s: %zu hybridfs mounts are running; name one:\n",
			command, n);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "  %s\n", entries[i].mountpoint);
		rc = 2;
	} else {
		snprintf(dir, size, "%s", entries[match].state_dir);
		rc = 0;
	}
	free(entries);
	return rc;
}

void hy_ctl_sync_log(const char *dir)
{
	struct json_object *result = NULL;
	char why[512];
	int rc = hy_control_call(dir, HY_CONTROL_SYNC, 30000, &result, why, sizeof(why));

	json_object_put(result);
	/* no daemon (unmounted, or a folder nobody serves): the log is complete */
	if (rc < 0 && rc != -ENOENT && rc != -ECONNREFUSED)
		fprintf(stderr,
			"hybridctl: warning: the daemon did not sync its log (%s); the newest "
			"requests may be missing\n",
			why);
}

int hy_ctl_open_log(const char *command, const char *mountpoint, const char *state_dir,
		    struct hy_state **state)
{
	char dir[PATH_MAX], why[1024];
	int rc = hy_ctl_find_state_dir(command, mountpoint, state_dir, dir, sizeof(dir));

	if (rc)
		return rc;
	hy_ctl_sync_log(dir);
	if (hy_state_open(dir, NULL, true, state, why, sizeof(why))) {
		fprintf(stderr, "hybridctl: %s\n", why);
		return 1;
	}
	return 0;
}

/* The registered mount holding @real (the longest mountpoint that is a
 * prefix of it at a '/'): its state folder, its mountpoint, and @real's
 * path inside it. -ENOENT when none does. */
int hy_ctl_mount_of(const char *real, char *state_dir, size_t size, char *mnt, size_t mnt_size,
		    const char **inside)
{
	struct hy_runtime_entry *entries;
	size_t n, best = SIZE_MAX, best_len = 0;
	int rc = hy_runtime_list(&entries, &n);

	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(entries[i].mountpoint);

		if (strncmp(real, entries[i].mountpoint, len) == 0 &&
		    (real[len] == '/' || real[len] == '\0' || len == 1) && len >= best_len) {
			best = i;
			best_len = len;
		}
	}
	if (best == SIZE_MAX) {
		free(entries);
		return -ENOENT;
	}
	snprintf(state_dir, size, "%s", entries[best].state_dir);
	if (mnt)
		snprintf(mnt, mnt_size, "%s", entries[best].mountpoint);
	*inside = best_len == 1 ? real + 1 : real + best_len + (real[best_len] == '/');
	free(entries);
	return 0;
}
