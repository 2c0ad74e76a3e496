/*
 * policy_cmd.c - `hybridctl policy get|set|reset`: reads and changes the
 * workload policy table of a running mount (workload_policy.h) through the
 * daemon's "policy" control request (control.h). The daemon checks the
 * settings and stores them in the state database; this end only sorts its
 * command line into a mountpoint, names and settings, and prints.
 *
 *   policy get [MOUNTPOINT] [NAME...] [--json]
 *   policy set [MOUNTPOINT] SETTING... [--json]
 *   policy reset [MOUNTPOINT] [--json]
 *
 * Exit status: 0, 1 (no daemon, or the daemon refused), 2 (command line).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "ctl.h"
#include "hybridfs/cli.h"
#include "hybridfs/control.h"

/* Setting a value writes the state database: give the daemon time. */
#define POLICY_TIMEOUT_MS 30000

enum policy_action { POLICY_GET, POLICY_SET, POLICY_RESET };

enum { OPT_JSON = 1 };

static const struct hy_cli_option policy_options[] = {
	{"json", 0, false, OPT_JSON, NULL},
	{0},
};

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether the setting @name is chosen by @names (@n of them; none: all):
 * a name chooses itself and, as a prefix at a '.', what is under it
 * ("random-consumer" chooses "random-consumer.write"). */
static bool chosen(const char *name, char **names, size_t n)
{
	if (n == 0)
		return true;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);

		if (strncmp(name, names[i], len) == 0 && (name[len] == '\0' || name[len] == '.'))
			return true;
	}
	return false;
}

/* Whether some setting of @settings is chosen by @name. */
static bool names_something(struct json_object *settings, char *name)
{
	json_object_object_foreach(settings, key, value)
	{
		(void)value;
		if (chosen(key, &name, 1))
			return true;
	}
	return false;
}

static void print_setting(const char *name, struct json_object *value)
{
	/* the text form is strings; print anything else as JSON would */
	if (json_object_is_type(value, json_type_string))
		printf("%s=%s\n", name, json_object_get_string(value));
	else
		printf("%s=%s\n", name,
		       json_object_to_json_string_ext(value, JSON_C_TO_STRING_PLAIN));
}

static void print_json(struct json_object *obj)
{
	hy_ctl_print_json(obj);
}

/* --json with names: @result with only the settings @names choose (the
 * rest dropped from it). Returns the exit status. */
static int print_picked(struct json_object *result, struct json_object *settings, char **names,
			size_t n)
{
	struct json_object *picked = json_object_new_object();

	if (!picked) {
		fprintf(stderr, "hybridctl: policy: out of memory\n");
		return 1;
	}
	json_object_object_foreach(settings, key, value)
	{
		if (chosen(key, names, n))
			json_object_object_add(picked, key, json_object_get(value));
	}
	/* puts the old settings, which @settings borrowed */
	json_object_object_add(result, "settings", picked);
	print_json(result);
	return 0;
}

/* `get`: the settings @names choose, in the daemon's order. Returns the
 * exit status. */
static int show(struct json_object *result, char **names, size_t n, bool json)
{
	struct json_object *settings = NULL;

	if (!json_object_object_get_ex(result, "settings", &settings) ||
	    !json_object_is_type(settings, json_type_object)) {
		fprintf(stderr, "hybridctl: policy: the daemon's answer has no settings\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (!names_something(settings, names[i])) {
			fprintf(stderr,
				"hybridctl: policy: no setting is named \"%s\" (see hybridctl "
				"policy get)\n",
				names[i]);
			return 2;
		}
	}
	if (json && n > 0)
		return print_picked(result, settings, names, n);
	if (json) {
		print_json(result);
		return 0;
	}
	json_object_object_foreach(settings, key, value)
	{
		if (chosen(key, names, n))
			print_setting(key, value);
	}
	return 0;
}

/* `set` and `reset`: the new values of the names set (each once, in the
 * order given), then how many settings changed. */
static void show_changes(struct json_object *result, char **set, size_t n, bool json)
{
	struct json_object *settings = NULL, *value, *changed = NULL;

	if (json) {
		print_json(result);
		return;
	}
	json_object_object_get_ex(result, "settings", &settings);
	for (size_t i = 0; i < n && settings; i++) {
		size_t len = strcspn(set[i], "=");
		bool again = false;
		char *name;

		for (size_t j = 0; j < i && !again; j++)
			again = strcspn(set[j], "=") == len && strncmp(set[j], set[i], len) == 0;
		if (again)
			continue;
		name = strndup(set[i], len);
		if (name && json_object_object_get_ex(settings, name, &value))
			print_setting(name, value);
		free(name);
	}
	json_object_object_get_ex(result, "changed", &changed);
	{
		int64_t k = changed ? json_object_get_int64(changed) : 0;

		printf("%" PRId64 " setting%s changed\n", k, k == 1 ? "" : "s");
	}
}

/* The request's arguments: {"set": [...]} or {"reset": true}; NULL when
 * out of memory. */
static struct json_object *make_args(enum policy_action action, char **set, size_t n)
{
	struct json_object *args = json_object_new_object(), *list;

	if (!args || action == POLICY_GET)
		return args;
	if (action == POLICY_RESET) {
		if (json_object_object_add(args, "reset", json_object_new_boolean(1)) == 0)
			return args;
		json_object_put(args);
		return NULL;
	}
	list = json_object_new_array();
	if (!list || json_object_object_add(args, "set", list) != 0) {
		json_object_put(list);
		json_object_put(args);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *s = json_object_new_string(set[i]);

		if (!s || json_object_array_add(list, s) != 0) {
			json_object_put(s);
			json_object_put(args);
			return NULL;
		}
	}
	return args;
}

/* One action: argv[0] is its word (get, set, reset). */
static int policy(const struct hy_cli_command *command, enum policy_action action, int argc,
		  char **argv)
{
	struct json_object *args = NULL, *result = NULL;
	const char *mountpoint = NULL, *value;
	char dir[PATH_MAX], why[1024], **words;
	size_t nwords = 0;
	bool json = false;
	struct hy_cli cli;
	int rc, id;

	if (hy_cli_begin(&cli, command, argc, argv) < 0)
		return 2;
	while ((rc = hy_cli_next(&cli, &id, &value)) > 0)
		json = true;
	if (rc < 0)
		return hy_cli_exit_status(rc);
	/* the names (get) or settings (set), in the order given */
	words = calloc((size_t)cli.nargs + 1, sizeof(*words));
	if (!words) {
		fprintf(stderr, "hybridctl: policy: out of memory\n");
		return 1;
	}
	for (int i = 0; i < cli.nargs; i++) {
		const char *a = cli.args[i];
		bool setting = strchr(a, '=') != NULL;

		if (setting && action != POLICY_SET) {
			fprintf(stderr,
				"hybridctl: policy %s: \"%s\" is a setting; change settings with "
				"hybridctl policy set\n",
				argv[0], a);
			rc = 2;
			goto out;
		} else if (setting) {
			if (a[0] == '=') {
				fprintf(stderr,
					"hybridctl: policy set: \"%s\" names no setting "
					"(CATEGORY.KEY=VALUE)\n",
					a);
				rc = 2;
				goto out;
			}
			words[nwords++] = cli.args[i];
		} else if (!mountpoint && (action != POLICY_GET || is_dir(a))) {
			mountpoint = a;
		} else if (action == POLICY_GET && !is_dir(a)) {
			words[nwords++] = cli.args[i];
		} else if (action == POLICY_SET && mountpoint) {
			fprintf(stderr,
				"hybridctl: policy set: \"%s\" is not a setting "
				"(CATEGORY.KEY=VALUE)\n",
				a);
			rc = 2;
			goto out;
		} else {
			fprintf(stderr, "hybridctl: policy %s: one MOUNTPOINT only (\"%s\")\n",
				argv[0], a);
			rc = 2;
			goto out;
		}
	}
	if (action == POLICY_SET && nwords == 0) {
		fprintf(stderr, "hybridctl: policy set: no setting given (CATEGORY.KEY=VALUE)\n");
		rc = 2;
		goto out;
	}

	rc = hy_ctl_find_state_dir("policy", mountpoint, NULL, dir, sizeof(dir));
	if (rc)
		goto out;
	args = make_args(action, words, nwords);
	if (!args) {
		fprintf(stderr, "hybridctl: policy: out of memory\n");
		rc = 1;
		goto out;
	}
	if (hy_control_call_args(dir, HY_CONTROL_POLICY, args, POLICY_TIMEOUT_MS, &result, why,
				 sizeof(why))) {
		fprintf(stderr, "hybridctl: policy: %s\n", why);
		rc = 1;
		goto out;
	}
	if (action == POLICY_GET) {
		rc = show(result, words, nwords, json);
	} else {
		show_changes(result, words, nwords, json);
		rc = 0;
	}
out:
	json_object_put(result);
	json_object_put(args);
	free(words);
	return rc;
}

static int policy_get(const struct hy_cli_command *command, int argc, char **argv)
{
	return policy(command, POLICY_GET, argc, argv);
}

static int policy_set(const struct hy_cli_command *command, int argc, char **argv)
{
	return policy(command, POLICY_SET, argc, argv);
}

static int policy_reset(const struct hy_cli_command *command, int argc, char **argv)
{
	return policy(command, POLICY_RESET, argc, argv);
}

static const struct hy_cli_command get_command = {
	.name = "get",
	.title = "policy get",
	.run = policy_get,
	.summary = "the settings (NAME: CATEGORY.KEY, or CATEGORY for all its keys)",
	.usage = "usage: hybridctl policy get [MOUNTPOINT] [NAME...] [--json]\n"
		 "\n"
		 "  NAME    CATEGORY.KEY (random-consumer.line_size), or a CATEGORY for all its\n"
		 "          keys; every setting when none is named\n"
		 "  --json  the daemon's answer as JSON: {\"settings\": {NAME: VALUE, ...}}\n",
	.options = policy_options,
};

static const struct hy_cli_command set_command = {
	.name = "set",
	.title = "policy set",
	.run = policy_set,
	.summary = "changes settings, kept in the state database across remounts",
	.usage = "usage: hybridctl policy set [MOUNTPOINT] CATEGORY.KEY=VALUE... [--json]\n"
		 "\n"
		 "  CATEGORY.KEY=VALUE  archival-consumer.line_size=32K, "
		 "random-consumer.write=back\n"
		 "                      (the categories and keys: hybridctl(8))\n"
		 "  --json              the daemon's answer as JSON\n",
	.options = policy_options,
};

static const struct hy_cli_command reset_command = {
	.name = "reset",
	.title = "policy reset",
	.run = policy_reset,
	.summary = "the defaults again",
	.usage = "usage: hybridctl policy reset [MOUNTPOINT] [--json]\n",
	.options = policy_options,
};

static const struct hy_cli_command *const policy_actions[] = {&get_command, &set_command,
							      &reset_command, NULL};

const struct hy_cli_command hy_ctl_policy_command = {
	.name = "policy",
	.summary = "the cache policy table by workload category: get, set, reset",
	.usage = "usage: hybridctl policy get [MOUNTPOINT] [NAME...] [--json]\n"
		 "       hybridctl policy set [MOUNTPOINT] CATEGORY.KEY=VALUE... [--json]\n"
		 "       hybridctl policy reset [MOUNTPOINT] [--json]\n",
	.actions = policy_actions,
};
