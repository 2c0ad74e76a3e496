/*
 * flush_cmd.c - `hybridctl flush [MOUNTPOINT]`: asks the mount's daemon to
 * write every block written into the BOPT home (DESIGN.md invariant 3),
 * and says how many went.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "ctl.h"
#include "hybridfs/control.h"

int hy_ctl_flush(int argc, char **argv)
{
	struct json_object *result = NULL, *v;
	const char *mountpoint = NULL;
	char dir[PATH_MAX], why[1024];
	int rc;

	for (int i = 0; i < argc; i++) {
		if (argv[i][0] == '-') {
			fprintf(stderr, "hybridctl: flush: unknown option \"%s\"\n", argv[i]);
			return 2;
		}
		if (mountpoint) {
			fprintf(stderr, "hybridctl: flush: one MOUNTPOINT only\n");
			return 2;
		}
		mountpoint = argv[i];
	}
	rc = hy_ctl_find_state_dir("flush", mountpoint, NULL, dir, sizeof(dir));
	if (rc)
		return rc;
	rc = hy_control_call(dir, HY_CONTROL_FLUSH, 0, &result, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "hybridctl: flush: %s\n", why);
		return 1;
	}
	/* the cache first, as the daemon does: its blocks may go into the BOPT */
	if (json_object_object_get_ex(result, "cache_blocks", &v))
		printf("%" PRIu64 " blocks written into the cache went home\n",
		       (uint64_t)json_object_get_int64(v));
	if (json_object_object_get_ex(result, "synced_blocks", &v))
		printf("%" PRIu64 " blocks written into the BOPT went home\n",
		       (uint64_t)json_object_get_int64(v));
	json_object_put(result);
	return 0;
}
