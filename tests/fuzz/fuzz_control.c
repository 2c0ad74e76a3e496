/* fuzz_control.c - libFuzzer target for the control protocol's parsers
 * (lib/control.c): the request line the daemon reads from its socket
 * (fs/control_server.c hands each line to hy_control_parse_request()), and
 * the response line hybridctl reads back (hy_control_parse_response()).
 *
 * An input is one line without its newline, given with its length and no
 * NUL after it, as the server's buffer gives it (so ASan sees a read past
 * the end). On top of the parse:
 *
 *   - a refusal must say why, and a request that parses must name a
 *     command that formats back into a request that parses the same;
 *   - a "policy" request's "set" strings go through
 *     hy_workload_policy_set() on a default table, as fs/policy_glue.c
 *     does with them, and the table is read back whole;
 *   - the error text of a refusal, sent back as the daemon would send it
 *     (hy_control_format_error()), must parse as that error response.
 *
 * Built and run by tests/fuzz/run.sh; seeds in tests/fuzz/corpus/fuzz_control/.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "hybridfs/control.h"
#include "hybridfs/log.h"
#include "hybridfs/workload_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int read_setting(void *arg, const char *name, const char *value)
{
	size_t *total = arg;

	*total += strlen(name) + strlen(value);
	return 0;
}

/* What fs/policy_glue.c does with a policy request's members. */
static void apply_policy(struct json_object *request)
{
	struct hy_workload_policy_table t;
	struct json_object *set, *item;
	char why[256], value[64];
	size_t n, total = 0;

	hy_workload_policy_defaults(&t);
	if (!json_object_object_get_ex(request, "set", &set) ||
	    !json_object_is_type(set, json_type_array))
		return;
	n = json_object_array_length(set);
	for (size_t i = 0; i < n; i++) {
		item = json_object_array_get_idx(set, i);
		if (!json_object_is_type(item, json_type_string))
			return;
		why[0] = '\0';
		if (hy_workload_policy_set(&t, json_object_get_string(item), why, sizeof(why)) <
		    0) {
			if (!why[0])
				abort();
			return;
		}
		/* a setting that was taken reads back */
		const char *s = json_object_get_string(item);
		const char *eq = strchr(s, '=');

		if (eq) {
			char name[128];
			size_t len = (size_t)(eq - s);

			if (len < sizeof(name)) {
				memcpy(name, s, len);
				name[len] = '\0';
				if (hy_workload_policy_get(&t, name, value, sizeof(value), why,
							   sizeof(why)) < 0)
					abort();
			}
		}
	}
	hy_workload_policy_each(&t, read_setting, &total);
}

static void check_request(const uint8_t *data, size_t size)
{
	struct hy_control_request req, again;
	char why[256], why2[256];
	char *line, *error;
	struct json_object *result = NULL;
	int rc;

	why[0] = '\0';
	rc = hy_control_parse_request((const char *)data, size, &req, why, sizeof(why));
	if (rc < 0) {
		if (!why[0] || memchr(why, '\n', strlen(why)))
			abort();
		/* the refusal travels back to the client intact */
		error = hy_control_format_error(why);
		if (!error)
			return;
		if (hy_control_parse_response(error, strlen(error) - 1, &result, why2,
					      sizeof(why2)) != -EREMOTEIO ||
		    strcmp(why, why2) != 0)
			abort();
		free(error);
		return;
	}
	if (rc != 0 || !req.object || !hy_control_command_name(req.command))
		abort();
	line = hy_control_format_request_args(req.command, req.object);
	if (line) {
		if (hy_control_parse_request(line, strlen(line) - 1, &again, why, sizeof(why)) !=
			    0 ||
		    again.command != req.command)
			abort();
		hy_control_request_clear(&again);
		free(line);
	}
	if (req.command == HY_CONTROL_POLICY)
		apply_policy(req.object);
	hy_control_request_clear(&req);
}

static void check_response(const uint8_t *data, size_t size)
{
	struct json_object *result = NULL;
	char why[256];
	int rc;

	why[0] = '\0';
	rc = hy_control_parse_response((const char *)data, size, &result, why, sizeof(why));
	if (rc == 0) {
		if (!result)
			abort();
		json_object_put(result);
	} else if (!why[0] || result) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;

	if (!quiet) {
		hy_log_init(HY_LOG_STDERR, LOG_CRIT, "fuzz_control");
		quiet = true;
	}
	check_request(data, size);
	check_response(data, size);
	return 0;
}
