/* options.c - see include/hybridfs/options.h. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "hybridfs/log.h"
#include "hybridfs/options.h"
#include "hybridfs/policy.h" /* the enum only: libhycommon does not link the cache */
#include "hybridfs/rules.h"
#include "hybridfs/runtime.h" /* the state root */
#include "hybridfs/state.h"   /* HY_STATE_DB_NAME */
#include "hybridfs/units.h"

#define HY_DEFAULT_MAX_THREADS 16

/* Options handed to the kernel as they are. */
static const char *const kernel_flags[] = {
	"dev",	      "nodev",	  "suid",	"nosuid",   "exec",	  "noexec",	 "atime",
	"noatime",    "diratime", "nodiratime", "relatime", "norelatime", "strictatime", "lazytime",
	"nolazytime", "sync",	  "async",	"dirsync",  NULL,
};

/* Options that mount(8) and fstab(5) use for themselves: accepted and
 * ignored, so an fstab line works. */
static const char *const mount_flags[] = {
	"defaults", "auto",  "noauto",	"user",	  "nouser", "users",
	"owner",    "group", "_netdev", "nofail", NULL,
};

static bool in_list(const char *const *list, const char *word)
{
	for (; *list; list++)
		if (strcmp(*list, word) == 0)
			return true;
	return false;
}

static int parse_seconds(const char *name, const char *value, double *out, char *why,
			 size_t why_size)
{
	char *end;
	double v;

	if (!value || !*value)
		return hy_log_why(-EINVAL, why, why_size, "option \"%s\" needs a number of seconds",
				  name);
	errno = 0;
	v = strtod(value, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > 86400.0 * 365)
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"%s=%s\": not a number of seconds between 0 and a year",
				  name, value);
	*out = v;
	return 0;
}

static int parse_uint(const char *name, const char *value, unsigned min, unsigned max,
		      unsigned *out, char *why, size_t why_size)
{
	char *end;
	unsigned long v;

	if (!value || !*value || *value == '-')
		return hy_log_why(-EINVAL, why, why_size, "option \"%s\" needs a whole number",
				  name);
	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno || *end || v < min || v > max)
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"%s=%s\": not a whole number from %u to %u", name, value,
				  min, max);
	*out = (unsigned)v;
	return 0;
}

/* "90", "90s", "15m", "12h", "30d" (or 0: keep all) into seconds. */
static int parse_duration(const char *name, const char *value, int64_t *out, char *why,
			  size_t why_size)
{
	char *end;
	long long v;
	int64_t unit = 1;

	if (!value || !*value || *value == '-')
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"%s\" needs a duration (90s, 15m, 12h, 30d)", name);
	errno = 0;
	v = strtoll(value, &end, 10);
	if (*end == 's')
		end++;
	else if (*end == 'm')
		unit = 60, end++;
	else if (*end == 'h')
		unit = 3600, end++;
	else if (*end == 'd')
		unit = 86400, end++;
	if (errno || *end || end == value || v < 0 || v > INT64_MAX / 86400 / unit)
		return hy_log_why(
			-EINVAL, why, why_size,
			"option \"%s=%s\": not a duration (a whole number with s, m, h or d)", name,
			value);
	*out = (int64_t)v * unit;
	return 0;
}

static int parse_count(const char *name, const char *value, int64_t *out, char *why,
		       size_t why_size)
{
	char *end;
	long long v;

	if (!value || !*value || *value == '-')
		return hy_log_why(-EINVAL, why, why_size, "option \"%s\" needs a whole number",
				  name);
	errno = 0;
	v = strtoll(value, &end, 10);
	if (errno || *end || v < 0)
		return hy_log_why(-EINVAL, why, why_size, "option \"%s=%s\": not a whole number",
				  name, value);
	*out = (int64_t)v;
	return 0;
}

static int parse_size(const char *name, const char *value, bool allow_zero, uint64_t *out,
		      char *why, size_t why_size)
{
	if (hy_units_parse_size(value, allow_zero, out) < 0)
		return hy_log_why(
			-EINVAL, why, why_size,
			"option \"%s%s%s\": not a size (bytes, or a whole number with K, M, G "
			"or T%s)",
			name, value ? "=" : "", value ? value : "", allow_zero ? "; 0: none" : "");
	return 0;
}

static int set_string(char **field, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return -ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

/* A decimal number from @min to @max, as heat_threshold=1.5. */
static int parse_number(const char *name, const char *value, double min, double max, double *out,
			char *why, size_t why_size)
{
	char *end;
	double v;

	if (!value || !*value)
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"%s\" needs a number from %g to %g", name, min, max);
	errno = 0;
	v = strtod(value, &end);
	if (errno || *end || !isfinite(v) || v < min || v > max)
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"%s=%s\": not a number from %g to %g", name, value, min,
				  max);
	*out = v;
	return 0;
}

/* Where a BOPT or an SSD cache store lives: an absolute path, a libblkid
 * tag, or none. A relative path is refused as a likely mistyped tag. */
static int parse_place(const char *name, const char *value, char **field, char *why,
		       size_t why_size)
{
	if (!value || !*value)
		return hy_log_why(
			-EINVAL, why, why_size,
			"option \"%s\" needs a place: %s=PATH, UUID=..., LABEL=... or none", name,
			name);
	if (value[0] != '/' && strcmp(value, "none") != 0 && strncmp(value, "UUID=", 5) != 0 &&
	    strncmp(value, "LABEL=", 6) != 0 && strncmp(value, "PARTUUID=", 9) != 0 &&
	    strncmp(value, "PARTLABEL=", 10) != 0)
		return hy_log_why(
			-EINVAL, why, why_size,
			"option \"%s=%s\": give an absolute path, UUID=, LABEL=, PARTUUID=, "
			"PARTLABEL= or none",
			name, value);
	return set_string(field, value);
}

/* cache_write=: "read-only" is the name for write-around. */
static int parse_cache_write(const char *value, enum hy_cache_write_policy *out, char *why,
			     size_t why_size)
{
	if (value && strcmp(value, "back") == 0)
		*out = HY_CACHE_WRITE_BACK;
	else if (value && strcmp(value, "through") == 0)
		*out = HY_CACHE_WRITE_THROUGH;
	else if (value && (strcmp(value, "around") == 0 || strcmp(value, "read-only") == 0))
		*out = HY_CACHE_WRITE_AROUND;
	else
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"cache_write%s%s\": expected back, through, around or "
				  "read-only",
				  value ? "=" : "", value ? value : "");
	return 0;
}

/* The replacement policies' names, as hy_policy_kind_name() gives them (a
 * unit test checks that they agree); kept here so that this library does
 * not link the cache module. */
static const char *const cache_policy_names[] = {
	[HY_POLICY_LRU3] = "lru3",
	[HY_POLICY_LRU] = "lru",
	[HY_POLICY_LARC] = "larc",
	[HY_POLICY_FREQ] = "freq",
};
_Static_assert(sizeof(cache_policy_names) / sizeof(cache_policy_names[0]) == HY_POLICY_KINDS,
	       "one name per replacement policy");

static int parse_cache_policy(const char *value, unsigned *out, char *why, size_t why_size)
{
	for (unsigned k = 0; k < HY_POLICY_KINDS; k++)
		if (value && strcmp(value, cache_policy_names[k]) == 0) {
			*out = k;
			return 0;
		}
	return hy_log_why(-EINVAL, why, why_size,
			  "option \"cache_policy%s%s\": expected lru3, lru, larc or freq",
			  value ? "=" : "", value ? value : "");
}

static int parse_bool(const char *name, const char *value, bool *out, char *why, size_t why_size)
{
	if (!value || strcmp(value, "on") == 0 || strcmp(value, "1") == 0 ||
	    strcmp(value, "yes") == 0) {
		*out = true;
		return 0;
	}
	if (strcmp(value, "off") == 0 || strcmp(value, "0") == 0 || strcmp(value, "no") == 0) {
		*out = false;
		return 0;
	}
	return hy_log_why(-EINVAL, why, why_size, "option \"%s=%s\": expected on or off", name,
			  value);
}

static int append_kernel_option(struct hy_options *opts, const char *word)
{
	size_t old = opts->kernel_options ? strlen(opts->kernel_options) : 0;
	char *grown = realloc(opts->kernel_options, old + strlen(word) + 2);

	if (!grown)
		return -ENOMEM;
	if (old)
		grown[old++] = ',';
	strcpy(grown + old, word);
	opts->kernel_options = grown;
	return 0;
}

static int add_exclude(struct hy_options *opts, const char *glob, char *why, size_t why_size)
{
	char **grown;
	int rc = hy_rules_check_glob(glob, why, why_size);

	if (rc < 0)
		return rc;
	if (opts->nexclude >= HY_RULES_MAX)
		return hy_log_why(-EINVAL, why, why_size, "option \"exclude\": more than %d globs",
				  HY_RULES_MAX);
	grown = realloc(opts->exclude, (opts->nexclude + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	opts->exclude = grown;
	if (!(grown[opts->nexclude] = strdup(glob)))
		return -ENOMEM;
	opts->nexclude++;
	opts->exclude_open = true;
	return 0;
}

static int parse_one_word(struct hy_options *opts, char *word, char *why, size_t why_size);

/* One "name" or "name=value" from a -o list. exclude=*.o,node_modules: the words
 * after exclude= that are no option are more of its globs (a mount option
 * list splits at commas). */
static int parse_one(struct hy_options *opts, char *word, char *why, size_t why_size)
{
	bool open = opts->exclude_open, sloppy = opts->sloppy;
	char *glob = open && *word && !strchr(word, '=') ? strdup(word) : NULL;
	int rc;

	if (open && *word && !strchr(word, '=') && !glob)
		return -ENOMEM;
	opts->exclude_open = false;
	if (glob)
		opts->sloppy = false; /* an unknown word is then a glob, not ignored */
	rc = parse_one_word(opts, word, why, why_size);
	opts->sloppy = sloppy;
	if (glob && rc == -EINVAL && strncmp(why, "unknown option", 14) == 0)
		rc = add_exclude(opts, glob, why, why_size);
	free(glob);
	return rc;
}

static int parse_one_word(struct hy_options *opts, char *word, char *why, size_t why_size)
{
	char *value = strchr(word, '=');
	const char *name = word;

	if (value)
		*value++ = '\0';
	if (!*name)
		return 0; /* "a,,b" and a trailing comma are harmless */

	if (strcmp(name, "state") == 0) {
		if (!value || !*value)
			return hy_log_why(-EINVAL, why, why_size,
					  "option \"state\" needs a directory: state=DIR");
		opts->state_given = true;
		return set_string(&opts->state_dir, value);
	}
	if (strcmp(name, "allow_other") == 0 && !value) {
		opts->allow_other = true;
		return 0;
	}
	if (strcmp(name, "default_permissions") == 0 && !value)
		return 0; /* on whenever other users are let in; see hy_options_fuse_args() */
	if (strcmp(name, "ro") == 0 && !value) {
		opts->read_only = true;
		return 0;
	}
	if (strcmp(name, "rw") == 0 && !value) {
		opts->read_only = false;
		return 0;
	}
	if (strcmp(name, "writeback_cache") == 0)
		return parse_bool(name, value, &opts->writeback_cache, why, why_size);
	if (strcmp(name, "killpriv_v2") == 0)
		return parse_bool(name, value, &opts->killpriv_v2, why, why_size);
	if (strcmp(name, "splice") == 0)
		return parse_bool(name, value, &opts->splice, why, why_size);
	if (strcmp(name, "passthrough") == 0) {
		if (value && (strcmp(value, "off") == 0 || strcmp(value, "excluded") == 0)) {
			opts->passthrough =
				value[0] == 'o' ? HY_PASSTHROUGH_OFF : HY_PASSTHROUGH_EXCLUDED;
			return 0;
		}
		/* hybridfs(8) says why there is no "auto" */
		if (value && strcmp(value, "auto") == 0)
			return hy_log_why(
				-EINVAL, why, why_size,
				"option \"passthrough=auto\" is not offered: nothing known at "
				"open tells a file that will be read or written in one "
				"sequential stream (see hybridfs(8)); expected off or excluded");
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"passthrough%s%s\": expected off or excluded",
				  value ? "=" : "", value ? value : "");
	}
	/* who opens folders and files: the enums of both are auto, kernel,
	 * daemon in that order */
	if (strcmp(name, "opendir") == 0 || strcmp(name, "open") == 0) {
		static const char *const modes[] = {"auto", "kernel", "daemon"};
		_Static_assert(HY_OPENDIR_AUTO == 0 && HY_OPENDIR_KERNEL == 1 &&
				       HY_OPENDIR_DAEMON == 2 && HY_OPEN_AUTO == 0 &&
				       HY_OPEN_KERNEL == 1 && HY_OPEN_DAEMON == 2,
			       "opendir= and open= list their modes as modes[] does");

		for (int i = 0; value && i < 3; i++) {
			if (strcmp(value, modes[i]) == 0) {
				if (strcmp(name, "opendir") == 0)
					opts->opendir = i;
				else
					opts->open = i;
				return 0;
			}
		}
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"%s%s%s\": expected auto, kernel or daemon", name,
				  value ? "=" : "", value ? value : "");
	}
	if (strcmp(name, "readdirplus") == 0) {
		if (value && (strcmp(value, "auto") == 0 || strcmp(value, "always") == 0)) {
			opts->readdirplus_always = value[1] == 'l';
			return 0;
		}
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"readdirplus%s%s\": expected auto or always",
				  value ? "=" : "", value ? value : "");
	}
	if (strcmp(name, "attr_timeout") == 0)
		return parse_seconds(name, value, &opts->attr_timeout, why, why_size);
	if (strcmp(name, "entry_timeout") == 0)
		return parse_seconds(name, value, &opts->entry_timeout, why, why_size);
	if (strcmp(name, "negative_timeout") == 0)
		return parse_seconds(name, value, &opts->negative_timeout, why, why_size);
	if (strcmp(name, "profile") == 0)
		return parse_bool(name, value, &opts->profile, why, why_size);
	if (strcmp(name, "profile_max_age") == 0)
		return parse_duration(name, value, &opts->profile_max_age_s, why, why_size);
	if (strcmp(name, "profile_max_rows") == 0)
		return parse_count(name, value, &opts->profile_max_rows, why, why_size);
	if (strcmp(name, "bopt") == 0) {
		opts->bopt_given = true;
		return parse_place(name, value, &opts->bopt, why, why_size);
	}
	if (strcmp(name, "bopt_size") == 0) {
		opts->bopt_size_given = true;
		if (parse_size(name, value, false, &opts->bopt_size, why, why_size))
			return -EINVAL;
		if (opts->bopt_size < HY_OPTIONS_BOPT_MIN)
			return hy_log_why(-EINVAL, why, why_size,
					  "option \"bopt_size=%s\": a BOPT needs at least 1M",
					  value);
		return 0;
	}
	if (strcmp(name, "bopt_writes") == 0)
		return parse_bool(name, value, &opts->bopt_writes, why, why_size);
	if (strcmp(name, "bopt_readahead") == 0) {
		if (parse_size(name, value, true, &opts->bopt_readahead, why, why_size))
			return -EINVAL;
		if (opts->bopt_readahead > HY_OPTIONS_BOPT_READAHEAD_MAX ||
		    opts->bopt_readahead % 4096)
			return hy_log_why(
				-EINVAL, why, why_size,
				"option \"bopt_readahead=%s\": a multiple of 4K up to 64M (0: off)",
				value);
		return 0;
	}
	if (strcmp(name, "bopt_force") == 0)
		return parse_bool(name, value, &opts->bopt_force, why, why_size);
	if (strcmp(name, "bopt_on_ssd") == 0)
		return parse_bool(name, value, &opts->bopt_on_ssd, why, why_size);
	if (strcmp(name, "reorg_rate") == 0)
		return parse_size(name, value, true, &opts->reorg_rate, why, why_size);
	if (strcmp(name, "emulate") == 0) {
		if (!value || !*value)
			return hy_log_why(-EINVAL, why, why_size,
					  "option \"emulate\" needs a value: hdd, ssd, smr (with "
					  ":name=value settings) or none");
		free(opts->emulate);
		opts->emulate = strcmp(value, "none") == 0 ? NULL : strdup(value);
		return strcmp(value, "none") == 0 || opts->emulate ? 0 : -ENOMEM;
	}
	if (strcmp(name, "cache") == 0) {
		opts->cache_given = true;
		return parse_place(name, value, &opts->cache, why, why_size);
	}
	if (strcmp(name, "cache_size") == 0) {
		opts->cache_size_given = true;
		if (parse_size(name, value, false, &opts->cache_size, why, why_size))
			return -EINVAL;
		if (opts->cache_size < HY_OPTIONS_CACHE_MIN)
			return hy_log_why(
				-EINVAL, why, why_size,
				"option \"cache_size=%s\": an SSD cache needs at least 1M", value);
		return 0;
	}
	if (strcmp(name, "cache_write") == 0) {
		opts->cache_write_given = true;
		return parse_cache_write(value, &opts->cache_write, why, why_size);
	}
	if (strcmp(name, "cache_policy") == 0)
		return parse_cache_policy(value, &opts->cache_policy, why, why_size);
	if (strcmp(name, "front_buffer") == 0)
		return parse_size(name, value, true, &opts->front_buffer, why, why_size);
	if (strcmp(name, "heat_periods") == 0)
		return parse_uint(name, value, HY_OPTIONS_HEAT_PERIODS_MIN,
				  HY_OPTIONS_HEAT_PERIODS_MAX, &opts->heat_periods, why, why_size);
	if (strcmp(name, "heat_threshold") == 0)
		return parse_number(name, value, 0.0, HY_OPTIONS_HEAT_THRESHOLD_MAX,
				    &opts->heat_threshold, why, why_size);
	if (strcmp(name, "cache_clean_rate") == 0)
		return parse_size(name, value, true, &opts->cache_clean_rate, why, why_size);
	if (strcmp(name, "cache_keep") == 0) {
		if (value && strcmp(value, "auto") == 0) {
			opts->cache_keep = HY_CACHE_KEEP_AUTO;
			return 0;
		}
		if (value && (strcmp(value, "on") == 0 || strcmp(value, "off") == 0)) {
			opts->cache_keep = value[1] == 'n' ? HY_CACHE_KEEP_ON : HY_CACHE_KEEP_OFF;
			return 0;
		}
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"cache_keep%s%s\": expected auto, on or off",
				  value ? "=" : "", value ? value : "");
	}
	if (strcmp(name, "cache_seq_cutoff") == 0)
		return parse_size(name, value, true, &opts->cache_seq_cutoff, why, why_size);
	if (strcmp(name, "cache_migrate_rate") == 0)
		return parse_size(name, value, true, &opts->cache_migrate_rate, why, why_size);
	if (strcmp(name, "reca") == 0)
		return parse_bool(name, value, &opts->reca, why, why_size);
	if (strcmp(name, "backend") == 0) {
		if (value && strcmp(value, "smr") == 0)
			opts->backend_smr = true;
		else if (value && strcmp(value, "cmr") == 0)
			opts->backend_smr = false;
		else
			return hy_log_why(
				-EINVAL, why, why_size,
				"option \"backend%s%s\": the backing disk is cmr (conventional, "
				"the default) or smr (shingled)",
				value ? "=" : "", value ? value : "");
		return 0;
	}
	if (strcmp(name, "pore") == 0) {
		enum hy_pore_rule rule;

		if (!value || hy_pore_rule_parse(value, &rule) < 0)
			return hy_log_why(-EINVAL, why, why_size,
					  "option \"pore%s%s\": PORE's zone choice is coverage, "
					  "popularity, balance or off",
					  value ? "=" : "", value ? value : "");
		opts->pore = rule;
		opts->pore_given = true;
		return 0;
	}
	if (strcmp(name, "pore_zone") == 0) {
		if (parse_size(name, value, false, &opts->pore_zone, why, why_size))
			return -EINVAL;
		if (opts->pore_zone < HY_PORE_MIN_ZONE || opts->pore_zone > HY_PORE_MAX_ZONE)
			return hy_log_why(-EINVAL, why, why_size,
					  "option \"pore_zone=%s\": zones of 1M to 1T", value);
		return 0;
	}
	if (strcmp(name, "pore_open") == 0) {
		double percent;
		char copy[32];
		size_t len = value ? strlen(value) : 0;

		/* "10%" or "10": a percentage */
		if (len && len < sizeof(copy)) {
			memcpy(copy, value, len + 1);
			if (copy[len - 1] == '%')
				copy[len - 1] = '\0';
		} else {
			copy[0] = '\0';
		}
		if (!*copy || parse_number(name, copy, 0.1, 100.0, &percent, NULL, 0))
			return hy_log_why(
				-EINVAL, why, why_size,
				"option \"pore_open%s%s\": the share of the zones open, a "
				"percentage from 0.1%% to 100%%",
				value ? "=" : "", value ? value : "");
		opts->pore_open_permille = (unsigned)(percent * 10.0 + 0.5);
		return 0;
	}
	if (strcmp(name, "pore_period") == 0) {
		if (parse_size(name, value, false, &opts->pore_period, why, why_size))
			return -EINVAL;
		if (opts->pore_period < 4096)
			return hy_log_why(-EINVAL, why, why_size,
					  "option \"pore_period=%s\": at least one block (4K)",
					  value);
		return 0;
	}
	if (strcmp(name, "log") == 0) {
		if (!value || !*value)
			return hy_log_why(-EINVAL, why, why_size,
					  "option \"log\" needs a file: log=FILE");
		return set_string(&opts->log_file, value);
	}
	if (strcmp(name, "stack") == 0)
		return parse_bool(name, value, &opts->stack, why, why_size);
	if (strcmp(name, "max_threads") == 0)
		return parse_uint(name, value, 1, 256, &opts->max_threads, why, why_size);
	if (strcmp(name, "metrics") == 0) {
		if (!value || !*value)
			return hy_log_why(-EINVAL, why, why_size,
					  "option \"metrics\" needs a file: metrics=FILE or "
					  "metrics=none");
		if (value[0] != '/' && strcmp(value, "none") != 0)
			return hy_log_why(-EINVAL, why, why_size,
					  "option \"metrics=%s\": give an absolute path (the "
					  "daemon leaves its working folder) or none",
					  value);
		if (strcmp(value, "none") == 0) {
			free(opts->metrics);
			opts->metrics = NULL;
			return 0;
		}
		return set_string(&opts->metrics, value);
	}
	if (strcmp(name, "metrics_interval") == 0)
		return parse_uint(name, value, 1, HY_OPTIONS_METRICS_INTERVAL_MAX,
				  &opts->metrics_interval, why, why_size);
	if (strcmp(name, "exclude") == 0)
		return add_exclude(opts, value ? value : "", why, why_size);
	if (!value && in_list(kernel_flags, name))
		return append_kernel_option(opts, name);
	if (!value && in_list(mount_flags, name))
		return 0;
	if (strncmp(name, "x-", 2) == 0 || strcmp(name, "comment") == 0)
		return 0; /* fstab annotations for other programs */
	if (opts->sloppy)
		return 0;
	if (value)
		return hy_log_why(-EINVAL, why, why_size, "unknown option \"%s=%s\"", name, value);
	return hy_log_why(-EINVAL, why, why_size, "unknown option \"%s\"", name);
}

int hy_options_parse_list(struct hy_options *opts, const char *list, char *why, size_t why_size)
{
	size_t len = strlen(list);
	char *word = malloc(len + 1);
	size_t in, out = 0;
	int rc = 0;

	if (!word)
		return -ENOMEM;
	for (in = 0; in <= len && rc == 0; in++) {
		char c = list[in];

		if (c == '\\' && (list[in + 1] == ',' || list[in + 1] == '\\')) {
			word[out++] = list[++in];
			continue;
		}
		if (c == ',' || c == '\0') {
			word[out] = '\0';
			rc = parse_one(opts, word, why, why_size);
			out = 0;
			continue;
		}
		word[out++] = c;
	}
	free(word);
	return rc;
}

static void options_reset(struct hy_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	/* off: see docs/reliability.md, "The kernel's write-back cache" */
	opts->writeback_cache = false;
	opts->killpriv_v2 = true;
	opts->splice = true;
	/* changes through the mount keep the kernel's caches right at any
	 * length; these bound how long one made in the backing directory
	 * itself may be missed (fs/kcache.c) */
	opts->attr_timeout = 5.0;
	opts->entry_timeout = 5.0;
	opts->negative_timeout = 5.0;
	opts->max_threads = HY_DEFAULT_MAX_THREADS;
	opts->profile = true;
	opts->profile_max_age_s = 30 * 86400;
	opts->profile_max_rows = 10000000;
	opts->bopt_size = HY_OPTIONS_BOPT_SIZE;
	opts->reorg_rate = HY_OPTIONS_REORG_RATE;
	opts->bopt_writes = true;
	opts->bopt_readahead = HY_OPTIONS_BOPT_READAHEAD;
	opts->cache_size = HY_OPTIONS_CACHE_SIZE;
	opts->cache_write = HY_CACHE_WRITE_BACK;
	opts->cache_policy = HY_POLICY_LRU3;
	opts->front_buffer = HY_OPTIONS_FRONT_BUFFER;
	opts->heat_periods = HY_OPTIONS_HEAT_PERIODS;
	opts->heat_threshold = HY_OPTIONS_HEAT_THRESHOLD;
	opts->cache_clean_rate = HY_OPTIONS_CACHE_CLEAN_RATE;
	opts->cache_seq_cutoff = HY_OPTIONS_CACHE_SEQ_CUTOFF;
	opts->cache_migrate_rate = 8ULL << 20;
	opts->reca = true;
	opts->metrics_interval = HY_OPTIONS_METRICS_INTERVAL;
}

int hy_options_parse(int argc, char **argv, struct hy_options *opts, char *why, size_t why_size)
{
	const char *base;
	int i, rc;

	options_reset(opts);
	base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
	base = base ? base + 1 : (argc > 0 && argv[0] ? argv[0] : "hybridfs");
	if (set_string(&opts->program, base))
		return -ENOMEM;
	opts->mount_helper = strncmp(base, "mount.", 6) == 0;

	/* -s changes what later -o words mean (sloppy), so flags go first. */
	for (i = 1; i < argc; i++)
		if (opts->mount_helper && strcmp(argv[i], "-s") == 0)
			opts->sloppy = true;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "-o") == 0) {
			if (i + 1 >= argc)
				return hy_log_why(-EINVAL, why, why_size,
						  "option \"-o\" needs a list of options");
			rc = hy_options_parse_list(opts, argv[++i], why, why_size);
			if (rc)
				return rc;
		} else if (strncmp(arg, "-o", 2) == 0) {
			rc = hy_options_parse_list(opts, arg + 2, why, why_size);
			if (rc)
				return rc;
		} else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			opts->show_help = true;
		} else if (strcmp(arg, "-V") == 0 || strcmp(arg, "--version") == 0) {
			opts->show_version = true;
		} else if (strcmp(arg, "-d") == 0) {
			opts->debug = opts->foreground = true;
		} else if (strcmp(arg, "-f") == 0) {
			if (opts->mount_helper)
				opts->fake = true;
			else
				opts->foreground = true;
		} else if (strcmp(arg, "-s") == 0) {
			if (!opts->mount_helper)
				opts->single_threaded = true;
		} else if (opts->mount_helper &&
			   (strcmp(arg, "-n") == 0 || strcmp(arg, "-v") == 0)) {
			/* no mtab to write; verbosity is the default */
		} else if (opts->mount_helper && strcmp(arg, "-t") == 0) {
			if (i + 1 >= argc)
				return hy_log_why(-EINVAL, why, why_size,
						  "option \"-t\" needs a type");
			i++;
		} else if (arg[0] == '-' && arg[1] != '\0') {
			return hy_log_why(-EINVAL, why, why_size, "unknown option \"%s\"", arg);
		} else if (!opts->backing) {
			if (set_string(&opts->backing, arg))
				return -ENOMEM;
		} else if (!opts->mountpoint) {
			if (set_string(&opts->mountpoint, arg))
				return -ENOMEM;
		} else {
			return hy_log_why(
				-EINVAL, why, why_size,
				"unexpected argument \"%s\": give BACKING and MOUNTPOINT only",
				arg);
		}
	}
	if (opts->show_help || opts->show_version)
		return 0;
	if (!opts->backing)
		return hy_log_why(-EINVAL, why, why_size,
				  "missing BACKING directory and MOUNTPOINT");
	if (!opts->mountpoint)
		return hy_log_why(-EINVAL, why, why_size, "missing MOUNTPOINT after \"%s\"",
				  opts->backing);
	/* The kernel keeps a listing it opened itself until the folder
	 * changes; only the daemon's drop at its entries' expiry bounds
	 * how long a change behind the mount goes unseen (fs/kcache.c) */
	if (opts->opendir == HY_OPENDIR_KERNEL && opts->entry_timeout <= 0) {
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"opendir=kernel\" keeps folder listings in the kernel, "
				  "and entry_timeout=0 asks for none kept: give opendir=daemon or "
				  "auto, or an entry_timeout above 0");
	}
	/* a file the kernel opened itself has no OPEN to answer with a
	 * backing id */
	if (opts->open == HY_OPEN_KERNEL && opts->passthrough != HY_PASSTHROUGH_OFF) {
		return hy_log_why(-EINVAL, why, why_size,
				  "option \"open=kernel\" sends no OPEN, and passthrough needs one "
				  "per file to name its backing file: give open=daemon or auto, or "
				  "passthrough=off");
	}
	return 0;
}

/* True when @inner is @outer or a path below it (both absolute, resolved). */
static bool path_within(const char *inner, const char *outer)
{
	size_t n = strlen(outer);

	if (strcmp(outer, "/") == 0)
		return true;
	return strncmp(inner, outer, n) == 0 && (inner[n] == '\0' || inner[n] == '/');
}

/* @path for a shell command line: as it is when it holds only characters
 * no shell treats specially, else in single quotes. */
static void shell_word(const char *path, char *out, size_t size)
{
	size_t n = 0;

	if (path[strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			      "/._-+,:@%")] == '\0') {
		snprintf(out, size, "%s", path);
		return;
	}
	if (size < 3) {
		if (size)
			out[0] = '\0';
		return;
	}
	out[n++] = '\'';
	for (; *path && n + 5 < size; path++) {
		if (*path == '\'') {
			memcpy(out + n, "'\\''", 4);
			n += 4;
		} else {
			out[n++] = *path;
		}
	}
	out[n++] = '\'';
	out[n] = '\0';
}

/* Where the dead mount that makes @path answer ENOTCONN is: the highest
 * folder of @path (made absolute) whose statfs still answers so. */
static void dead_mount_of(const char *path, char *out, size_t size)
{
	char cwd[PATH_MAX], *slash;
	struct statfs sfs;

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)) ||
	    (size_t)snprintf(out, size, "%s/%s", strcmp(cwd, "/") == 0 ? "" : cwd, path) >= size)
		snprintf(out, size, "%s", path);
	for (;;) {
		size_t len = strlen(out);

		while (len > 1 && out[len - 1] == '/')
			out[--len] = '\0';
		slash = strrchr(out, '/');
		if (!slash || slash == out)
			return;
		*slash = '\0';
		if (statfs(out, &sfs) == 0 || errno != ENOTCONN) {
			*slash = '/';
			return;
		}
	}
}

static int resolve_dir(const char *what, const char *path, char **out, char *why, size_t why_size)
{
	struct statfs sfs;
	struct stat st;
	char *real;

	/* statfs: the kernel may answer a stat from its cache for a while
	 * after the daemon died, never a statfs */
	if (stat(path, &st) < 0 || statfs(path, &sfs) < 0) {
		int err = errno;

		if (err == ENOTCONN) {
			char dead[PATH_MAX], word[2 * PATH_MAX];

			/* a FUSE mount whose daemon is gone (killed, crashed):
			 * only an unmount clears it */
			dead_mount_of(path, dead, sizeof(dead));
			shell_word(dead, word, sizeof(word));
			snprintf(why, why_size,
				 "%s \"%s\": the mount at \"%s\" is left from a daemon that died "
				 "(%s); run umount %s (or fusermount3 -u %s) first",
				 what, path, dead, strerror(err), word, word);
			return -err;
		}
		snprintf(why, why_size, "%s \"%s\": %s", what, path, strerror(err));
		return -err;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, why_size, "%s \"%s\" is not a directory", what, path);
		return -ENOTDIR;
	}
	real = realpath(path, NULL);
	if (!real) {
		int err = errno;

		snprintf(why, why_size, "%s \"%s\": %s", what, path, strerror(err));
		return -err;
	}
	*out = real;
	return 0;
}

static char *resolve_maybe_missing(const char *path);

/* @name (the last part of @copy, whose last slash is @slash or NULL) in
 * its folder resolved: the folder may be missing too. @copy is cut at
 * @slash. A new string, or NULL. */
static char *join_resolved_folder(char *copy, char *slash, const char *name)
{
	char *real, *joined;

	if (!slash) {
		real = realpath(".", NULL);
	} else if (slash == copy) {
		real = strdup("/");
	} else {
		*slash = '\0';
		real = resolve_maybe_missing(copy);
	}
	if (!real)
		return NULL;
	if (asprintf(&joined, "%s/%s", strcmp(real, "/") == 0 ? "" : real, name) < 0)
		joined = NULL;
	free(real);
	return joined;
}

/* The state folder may not exist yet: resolve its nearest existing parent. */
static char *resolve_maybe_missing(const char *path)
{
	char *copy, *slash, *real, *joined;

	real = realpath(path, NULL);
	if (real)
		return real;
	if (errno != ENOENT)
		return NULL;
	copy = strdup(path);
	if (!copy)
		return NULL;
	slash = strrchr(copy, '/');
	joined = join_resolved_folder(copy, slash, slash ? slash + 1 : copy);
	free(copy);
	return joined;
}

/* @path with its folder resolved and its last name kept as it is: a state
 * folder that is a symbolic link is refused when it is opened (its target
 * may be anyone's), not silently followed here. */
static char *resolve_folder_of(const char *path)
{
	char *copy = strdup(path), *slash, *real, *joined;
	const char *name;
	size_t len;

	if (!copy)
		return NULL;
	len = strlen(copy);
	while (len > 1 && copy[len - 1] == '/')
		copy[--len] = '\0';
	slash = strrchr(copy, '/');
	name = slash ? slash + 1 : copy;
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		/* "/", "x/.": no name of its own to keep */
		real = resolve_maybe_missing(copy);
		free(copy);
		return real;
	}
	joined = join_resolved_folder(copy, slash, name);
	free(copy);
	return joined;
}

int hy_options_escape_path(const char *path, char *out, size_t size)
{
	size_t n = 0, len;
	const char *p = path;

	while (*p == '/')
		p++;
	len = strlen(p);
	while (len && p[len - 1] == '/')
		len--;
	if (!len)
		return size >= 2 ? (snprintf(out, size, "-"), 0) : -ENAMETOOLONG;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		char piece[8];

		if (c == '/')
			snprintf(piece, sizeof(piece), "-");
		else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == ':' || c == '_' || (c == '.' && i > 0))
			snprintf(piece, sizeof(piece), "%c", c);
		else
			snprintf(piece, sizeof(piece), "\\x%02x", c);
		if (n + strlen(piece) + 1 > size)
			return -ENAMETOOLONG;
		memcpy(out + n, piece, strlen(piece));
		n += strlen(piece);
	}
	out[n] = '\0';
	return 0;
}

int hy_options_state_root(char *out, size_t size)
{
	return hy_runtime_state_root(out, size);
}

char *hy_options_default_state(const char *backing_real)
{
	char root[PATH_MAX], name[NAME_MAX + 1], *out;
	int rc = hy_options_state_root(root, sizeof(root));

	if (rc == 0)
		rc = hy_options_escape_path(backing_real, name, sizeof(name));
	if (rc < 0) {
		errno = -rc;
		return NULL;
	}
	if (asprintf(&out, "%s/%s", root, name) < 0)
		return NULL;
	return out;
}

/* A BOPT or store named by path inside the mountpoint would be reached
 * through the mount itself by the daemon that serves it. */
static int check_place(const struct hy_options *opts, const char *name, const char *value,
		       char *why, size_t why_size)
{
	char *real;
	bool inside;

	if (!value || value[0] != '/')
		return 0;
	real = resolve_folder_of(value);
	inside = real && path_within(real, opts->mountpoint_real);
	free(real);
	if (!inside)
		return 0;
	snprintf(why, why_size,
		 "option \"%s=%s\": inside the mountpoint \"%s\", where the daemon would "
		 "reach it through its own mount: name a place outside it%s",
		 name, value, opts->mountpoint,
		 opts->in_place ? " (or leave bopt= out: the default BOPT is reached through "
				  "the directory's descriptor)"
				: "");
	return -EINVAL;
}

/* metrics=FILE: written by the daemon after the mount, so checked now,
 * while a mistake still reaches the terminal: its folder exists and the
 * daemon may write there, it is not a folder itself, and it is not inside
 * the mount (the daemon would write through itself). */
static int check_metrics_file(struct hy_options *opts, char *why, size_t why_size)
{
	char *real, *slash;
	const char *dir;
	struct stat st;
	int rc = 0;

	if (!opts->metrics)
		return 0;
	real = resolve_folder_of(opts->metrics);
	if (!real)
		return hy_log_why(-errno, why, why_size, "option \"metrics=%s\": %s", opts->metrics,
				  strerror(errno));
	slash = strrchr(real, '/');
	*slash = '\0'; /* resolved: absolute */
	dir = slash == real ? "/" : real;
	if (stat(dir, &st) < 0)
		rc = hy_log_why(-errno, why, why_size,
				"option \"metrics=%s\": its folder \"%s\": %s", opts->metrics, dir,
				strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		rc = hy_log_why(-ENOTDIR, why, why_size,
				"option \"metrics=%s\": \"%s\" is not a folder", opts->metrics,
				dir);
	else if (access(dir, W_OK | X_OK) < 0)
		rc = hy_log_why(-EACCES, why, why_size,
				"option \"metrics=%s\": the mounting user cannot write into its "
				"folder \"%s\"",
				opts->metrics, dir);
	else if (path_within(dir, opts->mountpoint_real))
		rc = hy_log_why(-EINVAL, why, why_size,
				"option \"metrics=%s\": inside the mountpoint \"%s\", where the "
				"daemon would write it through its own mount: name a place "
				"outside it",
				opts->metrics, opts->mountpoint);
	else if (stat(opts->metrics, &st) == 0 && S_ISDIR(st.st_mode))
		rc = hy_log_why(-EISDIR, why, why_size,
				"option \"metrics=%s\": a folder; name a file in it, such as "
				"metrics=%s/hybridfs.prom",
				opts->metrics, opts->metrics);
	free(real);
	return rc;
}

/* Unescapes a field of /proc/self/mountinfo in place (\040 for a space,
 * \011, \012, \134). */
static void unescape_mountinfo(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* The live hybridfs mount that @path lies on, by its device number in
 * /proc/self/mountinfo: 1 with its mountpoint in @at and its source (the
 * backing directory: fsname) in @source, else 0. With @root, only a mount
 * whose mountpoint is @path itself counts. A mount table that cannot be
 * read tells nothing: 0. */
static int hybridfs_mount_of(const char *path, bool root, char *at, size_t at_size, char *source,
			     size_t source_size)
{
	unsigned major, minor;
	char *line = NULL;
	size_t cap = 0;
	struct stat st;
	int found = 0;
	FILE *f;

	if (stat(path, &st) < 0)
		return 0;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	while (!found && getline(&line, &cap, f) > 0) {
		char point[PATH_MAX], type[64], src[PATH_MAX], *dash;

		/* ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [TAGS...] - TYPE SOURCE ... */
		dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*u %*u %u:%u %*s %4095s", &major, &minor, point) != 3 ||
		    sscanf(dash + 3, "%63s %4095s", type, src) != 2)
			continue;
		if (strcmp(type, "fuse.hybridfs") != 0 || major != major(st.st_dev) ||
		    minor != minor(st.st_dev))
			continue;
		unescape_mountinfo(point);
		unescape_mountinfo(src);
		if (root && strcmp(point, path) != 0)
			continue;
		snprintf(at, at_size, "%s", point);
		snprintf(source, source_size, "%s", src);
		found = 1;
	}
	free(line);
	fclose(f);
	return found;
}

/* A hybridfs mount on a live hybridfs mount, refused without stack: over
 * it, it would hide the mount below (and hybridctl would still find the
 * one below by the path); served from it, every block would pass two
 * caches and two profilers. */
static int check_stacking(const struct hy_options *opts, char *why, size_t why_size)
{
	char at[PATH_MAX], source[PATH_MAX], word[2 * PATH_MAX];

	if (opts->stack)
		return 0;
	if (hybridfs_mount_of(opts->mountpoint_real, true, at, sizeof(at), source,
			      sizeof(source))) {
		shell_word(at, word, sizeof(word));
		snprintf(why, why_size,
			 "mountpoint \"%s\" is a live hybridfs mount (of \"%s\"): a mount over it "
			 "would hide it, and hybridctl would still report the mount below; "
			 "unmount it first (umount %s), or give stack to mount over it anyway",
			 opts->mountpoint, source, word);
		return -EBUSY;
	}
	if (hybridfs_mount_of(opts->backing_real, false, at, sizeof(at), source, sizeof(source))) {
		snprintf(why, why_size,
			 "backing directory \"%s\" lies on the live hybridfs mount at \"%s\" (of "
			 "\"%s\"): every block would pass through two caches; name the directory "
			 "below it (in \"%s\"), or give stack to mount it anyway",
			 opts->backing, at, source, source);
		return -EBUSY;
	}
	return 0;
}

/* log=FILE: absolute (the daemon leaves its working folder), and never
 * inside the mountpoint, where each line would be a request to the
 * daemon that writes it. */
static int check_log_file(struct hy_options *opts, char *why, size_t why_size)
{
	char *real;

	if (!opts->log_file)
		return 0;
	real = resolve_folder_of(opts->log_file);
	if (!real) {
		int err = errno ? errno : ENOMEM;

		snprintf(why, why_size, "log file \"%s\": %s", opts->log_file, strerror(err));
		return -err;
	}
	if (path_within(real, opts->mountpoint_real)) {
		snprintf(why, why_size,
			 "option \"log=%s\": inside the mountpoint \"%s\", where the daemon would "
			 "write each line through its own mount: name a file outside it",
			 opts->log_file, opts->mountpoint);
		free(real);
		return -EINVAL;
	}
	free(opts->log_file);
	opts->log_file = real;
	return 0;
}

int hy_options_check(struct hy_options *opts, char *why, size_t why_size)
{
	int rc;

	free(opts->backing_real);
	free(opts->mountpoint_real);
	opts->backing_real = opts->mountpoint_real = NULL;
	rc = resolve_dir("backing directory", opts->backing, &opts->backing_real, why, why_size);
	if (rc)
		return rc;
	rc = resolve_dir("mountpoint", opts->mountpoint, &opts->mountpoint_real, why, why_size);
	if (rc)
		return rc;
	/* a mount in place: the daemon opens the directory before the mount
	 * and serves it through that descriptor (fs/main.c) */
	opts->in_place = strcmp(opts->backing_real, opts->mountpoint_real) == 0;
	if (!opts->in_place && path_within(opts->backing_real, opts->mountpoint_real)) {
		snprintf(why, why_size, "backing directory \"%s\" is inside the mountpoint \"%s\"",
			 opts->backing, opts->mountpoint);
		return -EINVAL;
	}
	if (!opts->in_place && path_within(opts->mountpoint_real, opts->backing_real)) {
		snprintf(why, why_size,
			 "mountpoint \"%s\" is inside the backing directory \"%s\": the filesystem "
			 "would contain itself",
			 opts->mountpoint, opts->backing);
		return -EINVAL;
	}
	opts->state_legacy = false;
	if (!opts->state_dir) {
		char *legacy;
		struct stat st;

		if (asprintf(&legacy, "%s/%s/%s",
			     strcmp(opts->backing_real, "/") == 0 ? "" : opts->backing_real,
			     HY_STATE_DIR_NAME, HY_STATE_DB_NAME) < 0)
			return -ENOMEM;
		/* a mount from before the state moved out of the tree: its
		 * database, cache store and map journal stay where they are */
		if (lstat(legacy, &st) == 0 && S_ISREG(st.st_mode)) {
			legacy[strlen(legacy) - strlen(HY_STATE_DB_NAME) - 1] = '\0';
			opts->state_dir = legacy;
			opts->state_legacy = true;
		} else {
			free(legacy);
			opts->state_dir = hy_options_default_state(opts->backing_real);
			if (!opts->state_dir) {
				int err = errno ? errno : ENOMEM;

				snprintf(why, why_size,
					 "no default state folder: %s (set $HOME or "
					 "$XDG_STATE_HOME, or name one with state=DIR)",
					 strerror(err));
				return -err;
			}
		}
	} else {
		char *real = resolve_folder_of(opts->state_dir);

		if (!real) {
			int err = errno;

			snprintf(why, why_size, "state folder \"%s\": %s", opts->state_dir,
				 strerror(err));
			return -err;
		}
		free(opts->state_dir);
		opts->state_dir = real;
	}
	if (path_within(opts->state_dir, opts->mountpoint_real)) {
		if (opts->state_legacy)
			snprintf(why, why_size,
				 "\"%s\" holds the state of earlier mounts of \"%s\", and a mount "
				 "in place covers it: the daemon and hybridctl could not reach it. "
				 "Move it out once (mv \"%s\" to a folder outside, then mount with "
				 "state= naming it, or to the default place; see hybridfs(8), "
				 "\"Where the state lives\")",
				 opts->state_dir, opts->backing, opts->state_dir);
		else
			snprintf(why, why_size,
				 "state folder \"%s\" is inside the mountpoint \"%s\"",
				 opts->state_dir, opts->mountpoint);
		return -EINVAL;
	}
	rc = check_place(opts, "bopt", opts->bopt, why, why_size);
	if (rc == 0)
		rc = check_place(opts, "cache", opts->cache, why, why_size);
	if (rc == 0)
		rc = check_metrics_file(opts, why, why_size);
	if (rc == 0)
		rc = check_log_file(opts, why, why_size);
	if (rc == 0)
		rc = check_stacking(opts, why, why_size);
	return rc;
}

/* fsname is shown by mount(8) and df(1); commas in it must be escaped for
 * libfuse's own option parser. */
static char *escape_commas(const char *s)
{
	char *out = malloc(strlen(s) * 2 + 1), *p = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		if (*s == ',' || *s == '\\')
			*p++ = '\\';
		*p++ = *s;
	}
	*p = '\0';
	return out;
}

bool hy_options_default_permissions(const struct hy_options *opts)
{
	return opts->allow_other || (opts->open == HY_OPEN_KERNEL && geteuid() != 0);
}

int hy_options_fuse_args(const struct hy_options *opts, struct fuse_args *args)
{
	char *fsname = escape_commas(opts->backing_real ? opts->backing_real : opts->backing);
	char *list = NULL;
	int rc = -ENOMEM;

	if (!fsname)
		return -ENOMEM;
	/* With allow_other the kernel checks permissions (default_permissions):
	 * the daemon may serve many users. Without it the kernel lets only the
	 * mounting user in, the daemon runs as that user, and the backing
	 * filesystem's own checks are the plain directory's; the kernel's
	 * would cost a GETATTR of the parent after every create and unlink.
	 * A file the kernel opens itself (open=kernel) is checked by nobody
	 * else: a user's mount then needs the kernel's checks too. */
	if (asprintf(&list, "fsname=%s,subtype=hybridfs%s%s%s%s%s", fsname,
		     opts->allow_other ? ",default_permissions,allow_other" : "",
		     hy_options_default_permissions(opts) && !opts->allow_other
			     ? ",default_permissions"
			     : "",
		     opts->read_only ? ",ro" : "", opts->kernel_options ? "," : "",
		     opts->kernel_options ? opts->kernel_options : "") < 0) {
		list = NULL;
		goto out;
	}
	if (fuse_opt_add_arg(args, opts->program ? opts->program : "hybridfs") ||
	    fuse_opt_add_arg(args, "-o") || fuse_opt_add_arg(args, list))
		goto out;
	if (opts->debug && fuse_opt_add_arg(args, "-d"))
		goto out;
	rc = 0;
out:
	free(list);
	free(fsname);
	return rc;
}

void hy_options_usage(const char *program, FILE *out)
{
	fprintf(out,
		"usage: %s BACKING MOUNTPOINT [-o OPTIONS] [-f] [-d] [-s]\n"
		"\n"
		"Mounts BACKING at MOUNTPOINT through hybridfs.\n"
		"\n"
		"  -f                     stay in the foreground\n"
		"  -d                     debug output (implies -f)\n"
		"  -s                     one FUSE worker thread\n"
		"  -h, --help             this text\n"
		"  -V, --version          the version\n"
		"\n"
		"OPTIONS (comma separated):\n"
		"  state=DIR              where hybridfs keeps its database, map journal,\n"
		"                         cache store and control socket (default: a folder\n"
		"                         per backing directory in /var/lib/hybridfs for\n"
		"                         root, in $XDG_STATE_HOME/hybridfs for a user;\n"
		"                         BACKING/%s while it holds an older mount's)\n"
		"  allow_other            let other users in (the kernel then checks permissions)\n"
		"  ro, rw                 read-only or read-write mount\n"
		"  writeback_cache=on|off the kernel's write-back page cache (default off)\n"
		"  killpriv_v2=on|off     the daemon clears setuid, setgid and capabilities on\n"
		"                         writes, sparing a request per write (default on)\n"
		"  splice=on|off          reads the kernel copies straight from the backing\n"
		"                         file's pages, one copy less (default on)\n"
		"  passthrough=off|excluded  the kernel reads and writes excluded files\n"
		"                         itself, without the daemon (root; default off)\n"
		"  opendir=auto|kernel|daemon  who opens folders: the kernel keeps\n"
		"                         listings without a request (default auto)\n"
		"  open=auto|kernel|daemon  who opens files: the kernel opens them\n"
		"                         without a request, the daemon at the first\n"
		"                         read or write (default auto)\n"
		"  readdirplus=auto|always  attributes with every listing request, for\n"
		"                         programs that list a folder, then stat it\n"
		"                         (default auto: the first request, and after\n"
		"                         lookups)\n"
		"  attr_timeout=SEC       how long the kernel keeps attributes (default 5)\n"
		"  entry_timeout=SEC      how long the kernel keeps names, listings (default 5)\n"
		"  negative_timeout=SEC   how long the kernel keeps missing names (default 5)\n"
		"  log=FILE               append the daemon's messages to FILE, timestamped\n"
		"                         (default: syslog in the background, or the state\n"
		"                         folder's %s where there is none)\n"
		"  stack                  mount over a live hybridfs mount, or from a backing\n"
		"                         directory on one (refused without)\n"
		"  max_threads=N          FUSE worker threads at most (default %d)\n"
		"  metrics=FILE|none      Prometheus metrics for node_exporter's textfile\n"
		"                         collector, rewritten every metrics_interval\n"
		"                         (default none)\n"
		"  metrics_interval=SEC   how often the counters kept across mounts are\n"
		"                         saved and metrics= rewritten, 1 to 300 (default 60)\n"
		"  profile=on|off         log every read and write into the state database\n"
		"                         (default on)\n"
		"  profile_max_age=AGE    keep the log this long: 90s, 15m, 12h, 30d (default\n"
		"                         30d; 0 keeps all)\n"
		"  profile_max_rows=N     keep at most N requests (default 10000000; 0: all)\n"
		"  bopt=PATH|UUID=U|LABEL=L|PARTUUID=U|PARTLABEL=L|none  BORG's optimized\n"
		"                         region (a file or a device used whole), where\n"
		"                         reorganization copies hot blocks in access order\n"
		"                         (default: the file bopt in BACKING/.hybridfs,\n"
		"                         hidden from the mount, git and backups)\n"
		"  bopt_size=SIZE         size of a BOPT file (default 256M)\n"
		"  reorg_rate=SIZE        bytes per second a reorganization copies at most\n"
		"                         (default 64M; 0: no limit)\n"
		"  bopt_writes=on|off     writes to relocated blocks go into the BOPT and\n"
		"                         home later (default on), or home at once\n"
		"  bopt_readahead=SIZE    how far the BOPT is read ahead of a chain of\n"
		"                         relocated files (default 1M; 0: off)\n"
		"  bopt_force             make the BOPT on the device at bopt= over a\n"
		"                         filesystem or another mount's BOPT found there\n"
		"                         (what it holds is lost)\n"
		"  bopt_on_ssd            make the default BOPT even when the backing\n"
		"                         directory's disk does not spin (by default it has\n"
		"                         none there: a layout saves no seeks on an SSD)\n"
		"  cache=PATH|UUID=U|LABEL=L|PARTUUID=U|PARTLABEL=L|none  the SSD cache's\n"
		"                         store (a file or a device used whole; default: the\n"
		"                         file %s in the state folder; none: no SSD cache)\n"
		"  cache_size=SIZE        size of an SSD cache file (default 256M, at least 1M)\n"
		"  cache_write=back|through|around|read-only  writes go into the cache and\n"
		"                         home later, into both at once, or home only\n"
		"                         (around, read-only); default back with a store\n"
		"                         named by cache=, through with the default one\n"
		"  cache_policy=lru3|lru|larc|freq  which cached block leaves the SSD cache\n"
		"                         first (default lru3)\n"
		"  front_buffer=SIZE      the DRAM front buffer, where blocks wait before the\n"
		"                         SSD cache (default 16M; 0: none, no heat filter)\n"
		"  heat_periods=N         periods the heat prediction looks back, 5 to 10\n"
		"                         (default 8)\n"
		"  heat_threshold=X       heat a block needs to enter the SSD cache, 0 to 255\n"
		"                         (default 1.5; 0 admits every block)\n"
		"  cache_clean_rate=SIZE  bytes per second the cleaner writes dirty blocks\n"
		"                         home at most (default 32M; 0: no limit)\n"
		"  cache_keep=auto|on|off  the store keeps its lines across mounts (auto:\n"
		"                         unless it lies on the backing disk and that spins)\n"
		"  cache_seq_cutoff=SIZE  a file written sequentially past this goes home\n"
		"                         directly (default 4M; 0: never)\n"
		"  cache_migrate_rate=SIZE  bytes per second line migrations read at most\n"
		"                         (default 8M; 0: no limit)\n"
		"  exclude=GLOB,...       paths (relative to the mount) kept out of the cache\n"
		"                         and the BOPT's plans: *.o, build/*, node_modules\n"
		"  emulate=hdd[:NAME=VALUE...]|ssd|smr|none  delay every backing and BOPT\n"
		"                         request by a disk model's service time (default\n"
		"                         none; e.g. emulate=hdd:rpm=5400)\n"
		"  reca=on|off            classify every request and follow the cache policy\n"
		"                         of each process's workload category (default on)\n"
		"  backend=cmr|smr        the backing disk; smr turns PORE on: the cache's\n"
		"                         cleaner writes dirty blocks home only into the\n"
		"                         zones open this period (default cmr)\n"
		"  pore=balance|coverage|popularity|off  how PORE chooses the open zones\n"
		"                         (default balance with backend=smr, else off)\n"
		"  pore_zone=SIZE         PORE's zones (default 16M)\n"
		"  pore_open=P%%           share of the zones with dirty blocks open (default\n"
		"                         10%%)\n"
		"  pore_period=SIZE       bytes written into the cache between divisions\n"
		"                         (default: emulate=smr's buffer, else 1G)\n"
		"  nosuid, nodev, noexec, noatime, ... passed to the kernel\n"
		"\n"
		"See hybridfs(8).\n",
		program, HY_STATE_DIR_NAME, HY_OPTIONS_LOG_NAME, HY_DEFAULT_MAX_THREADS,
		HY_OPTIONS_CACHE_NAME);
}

void hy_options_free(struct hy_options *opts)
{
	if (!opts)
		return;
	free(opts->program);
	free(opts->backing);
	free(opts->mountpoint);
	free(opts->backing_real);
	free(opts->mountpoint_real);
	free(opts->state_dir);
	free(opts->kernel_options);
	free(opts->bopt);
	free(opts->cache);
	free(opts->cache_default);
	free(opts->emulate);
	free(opts->metrics);
	free(opts->log_file);
	for (size_t i = 0; i < opts->nexclude; i++)
		free(opts->exclude[i]);
	free(opts->exclude);
	memset(opts, 0, sizeof(*opts));
}
