/* mount_name.c - see include/hybridfs/mount_name.h. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/log.h"
#include "hybridfs/mount_name.h"
#include "hybridfs/runtime.h"
#include "hybridfs/state.h"

/* The backing directory of the state folder @dir when its database is
 * mount @uuid's: 0, else -1. Read-only: nothing is made or migrated. */
static int state_of_mount(const char *dir, const char *uuid, char *backing, size_t size)
{
	struct hy_state *state = NULL;
	char why[256], slashed[PATH_MAX + 2];
	int rc = -1;

	/* with a slash: "/proc/self/fd/N/" is followed to the folder */
	snprintf(slashed, sizeof(slashed), "%s/", dir);
	if (hy_state_open(slashed, NULL, true, &state, why, sizeof(why)) == 0 &&
	    strcmp(state->uuid, uuid) == 0) {
		if (hy_state_get_info(state, "backing", backing, size) < 0)
			backing[0] = '\0';
		rc = 0;
	}
	hy_state_close(state);
	return rc;
}

void hy_mount_name_describe(const char *uuid, const char *near, char *out, size_t size)
{
	struct hy_runtime_entry *list = NULL;
	char dir[PATH_MAX], backing[PATH_MAX], *slash;
	size_t n = 0;

	if (!uuid || !*uuid) {
		snprintf(out, size, "no mount");
		return;
	}
	if (hy_runtime_list(&list, &n) == 0)
		for (size_t i = 0; i < n; i++)
			if (strcmp(list[i].uuid, uuid) == 0) {
				snprintf(out, size, "mount %s (\"%s\" on \"%s\")", uuid,
					 list[i].backing, list[i].mountpoint);
				free(list);
				return;
			}
	free(list);
	/* the folder the file lies in: a default store or BOPT is in its
	 * mount's state folder */
	if (near && (slash = strrchr(near, '/')) && slash > near &&
	    (size_t)(slash - near) < sizeof(dir)) {
		memcpy(dir, near, (size_t)(slash - near));
		dir[slash - near] = '\0';
		if (state_of_mount(dir, uuid, backing, sizeof(backing)) == 0) {
			snprintf(out, size, "mount %s (\"%s\", not mounted; state in \"%s\")", uuid,
				 backing, dir);
			hy_log_unalias(out, size);
			return;
		}
	}
	/* the default state folders */
	if (hy_runtime_state_root(dir, sizeof(dir)) == 0) {
		DIR *dp = opendir(dir);
		struct dirent *d;
		char sub[PATH_MAX + NAME_MAX + 2];

		while (dp && (d = readdir(dp))) {
			if (d->d_name[0] == '.')
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", dir, d->d_name);
			if (state_of_mount(sub, uuid, backing, sizeof(backing)) == 0) {
				snprintf(out, size,
					 "mount %s (\"%s\", not mounted; state in \"%s\")", uuid,
					 backing, sub);
				closedir(dp);
				return;
			}
		}
		if (dp)
			closedir(dp);
	}
	snprintf(out, size, "mount %s (not mounted; its state folder is not in \"%s\")", uuid, dir);
}
