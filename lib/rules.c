/* rules.c - pins and excludes: patterns and matching, pure (the mount
 * option's parser and its fuzz target link it alone); their rows in the
 * state database are rules_db.c's. See include/hybridfs/rules.h. */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/rules.h"

/* Whether @s has a "..": a pattern never reaches out of the mount. */
static bool has_dotdot(const char *s)
{
	for (const char *p = s; (p = strstr(p, "..")); p += 2)
		if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
			return true;
	return false;
}

int hy_rules_check_glob(const char *glob, char *why, size_t why_size)
{
	size_t len = glob ? strlen(glob) : 0;

	if (!len) {
		snprintf(why, why_size, "exclude: a pattern is empty");
		return -EINVAL;
	}
	if (len > HY_RULES_PATTERN_MAX) {
		snprintf(why, why_size, "exclude: pattern \"%.32s...\" is %zu bytes, at most %d",
			 glob, len, HY_RULES_PATTERN_MAX);
		return -EINVAL;
	}
	if (glob[0] == '/') {
		snprintf(why, why_size,
			 "exclude: \"%s\" is absolute; patterns are relative to the mount "
			 "(e.g. build/*)",
			 glob);
		return -EINVAL;
	}
	if (has_dotdot(glob)) {
		snprintf(why, why_size,
			 "exclude: \"%s\" has a \"..\": it would reach out of the mount", glob);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		if (glob[i] == '\\') {
			if (++i == len) {
				snprintf(why, why_size, "exclude: \"%s\" ends with a lone \\",
					 glob);
				return -EINVAL;
			}
		} else if (glob[i] == '[') {
			size_t j = i + 1;

			if (glob[j] == '!' || glob[j] == '^')
				j++;
			if (glob[j] == ']')
				j++; /* a ']' first is one of the set */
			while (j < len && glob[j] != ']')
				j++;
			if (j >= len) {
				snprintf(why, why_size, "exclude: \"%s\" has a '[' never closed",
					 glob);
				return -EINVAL;
			}
			i = j;
		}
	}
	return 0;
}

int hy_rules_check_path(const char *path, char *out, size_t out_size, char *why, size_t why_size)
{
	size_t n = 0;

	if (!path) {
		snprintf(why, why_size, "pin: no path");
		return -EINVAL;
	}
	if (path[0] == '/') {
		snprintf(why, why_size, "pin: \"%s\" is absolute; the mount's paths are relative",
			 path);
		return -EINVAL;
	}
	if (strlen(path) > HY_RULES_PATTERN_MAX) {
		snprintf(why, why_size, "pin: path \"%.32s...\" is longer than %d bytes", path,
			 HY_RULES_PATTERN_MAX);
		return -EINVAL;
	}
	if (has_dotdot(path)) {
		snprintf(why, why_size, "pin: \"%s\" is outside the mount", path);
		return -EINVAL;
	}
	/* components, without "." and empty ones */
	for (const char *p = path; *p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len && !(len == 1 && p[0] == '.')) {
			if (n + len + 2 > out_size) {
				snprintf(why, why_size, "pin: path \"%s\" is too long", path);
				return -EINVAL;
			}
			if (n)
				out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	if (out_size)
		out[n] = '\0';
	return 0;
}

bool hy_rules_glob_match(const char *glob, const char *path)
{
	char name[NAME_MAX + 1];

	if (strchr(glob, '/'))
		return fnmatch(glob, path, FNM_PATHNAME | FNM_LEADING_DIR) == 0;
	/* a name: any component */
	for (const char *p = path; *p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len && len < sizeof(name)) {
			memcpy(name, p, len);
			name[len] = '\0';
			if (fnmatch(glob, name, 0) == 0)
				return true;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	return false;
}

bool hy_rules_pin_covers(const char *pin, const char *path)
{
	size_t n = strlen(pin);

	return n == 0 || (strncmp(pin, path, n) == 0 && (path[n] == '\0' || path[n] == '/'));
}

enum hy_rule hy_rules_match(const struct hy_rules *r, const char *path)
{
	for (size_t i = 0; i < r->npins; i++)
		if (hy_rules_pin_covers(r->pins[i], path))
			return HY_RULE_PIN;
	for (size_t i = 0; i < r->nexcludes; i++)
		if (hy_rules_glob_match(r->excludes[i], path))
			return HY_RULE_EXCLUDE;
	return HY_RULE_NONE;
}

static void list_of(struct hy_rules *r, enum hy_rule kind, char ****v, size_t **n)
{
	*v = kind == HY_RULE_PIN ? &r->pins : &r->excludes;
	*n = kind == HY_RULE_PIN ? &r->npins : &r->nexcludes;
}

int hy_rules_add(struct hy_rules *r, enum hy_rule kind, const char *pattern)
{
	char ***v, **grown, *copy;
	size_t *n;

	list_of(r, kind, &v, &n);
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i], pattern) == 0)
			return 0;
	if (*n >= HY_RULES_MAX)
		return -E2BIG;
	grown = realloc(*v, (*n + 1) * sizeof(**v));
	if (!grown)
		return -ENOMEM;
	*v = grown;
	copy = strdup(pattern);
	if (!copy)
		return -ENOMEM;
	grown[(*n)++] = copy;
	return 1;
}

int hy_rules_remove(struct hy_rules *r, enum hy_rule kind, const char *pattern)
{
	char ***v;
	size_t *n;

	list_of(r, kind, &v, &n);
	for (size_t i = 0; i < *n; i++) {
		if (strcmp((*v)[i], pattern) != 0)
			continue;
		free((*v)[i]);
		memmove(&(*v)[i], &(*v)[i + 1], (*n - i - 1) * sizeof(**v));
		(*n)--;
		return 1;
	}
	return 0;
}

void hy_rules_clear(struct hy_rules *r)
{
	for (size_t i = 0; i < r->npins; i++)
		free(r->pins[i]);
	for (size_t i = 0; i < r->nexcludes; i++)
		free(r->excludes[i]);
	free(r->pins);
	free(r->excludes);
	memset(r, 0, sizeof(*r));
}

int hy_rules_copy(struct hy_rules *to, const struct hy_rules *from)
{
	hy_rules_clear(to);
	for (size_t i = 0; i < from->npins; i++)
		if (hy_rules_add(to, HY_RULE_PIN, from->pins[i]) < 0)
			goto fail;
	for (size_t i = 0; i < from->nexcludes; i++)
		if (hy_rules_add(to, HY_RULE_EXCLUDE, from->excludes[i]) < 0)
			goto fail;
	return 0;
fail:
	hy_rules_clear(to);
	return -ENOMEM;
}
