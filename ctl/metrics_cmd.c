/* metrics_cmd.c - `hybridctl status --format prometheus`; see ctl.h and
 * include/hybridfs/metrics.h. */
#include <stdio.h>
#include <stdlib.h>

#include "hybridfs/metrics.h"
#include "ctl.h"

int hy_ctl_status_prometheus(const char *const *mountpoints, struct json_object *const *daemons,
			     size_t n, const char *output)
{
	struct hy_metrics_mount *m = calloc(n ? n : 1, sizeof(*m));
	int status = 0;

	if (!m) {
		fprintf(stderr, "hybridctl: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		m[i] = (struct hy_metrics_mount){mountpoints[i], daemons[i], daemons[i] != NULL};
	if (output) {
		char why[1024];

		if (hy_metrics_write_file(output, m, n, why, sizeof(why)) < 0) {
			fprintf(stderr, "hybridctl: %s\n", why);
			status = 1;
		}
	} else if (hy_metrics_render(stdout, m, n) < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "hybridctl: cannot write the metrics to the standard output\n");
		status = 1;
	}
	free(m);
	return status;
}
