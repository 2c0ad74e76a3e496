/* runtime.c - see include/hybridfs/runtime.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hybridfs/log.h"
#include "hybridfs/options.h" /* HY_STATE_ROOT_SYSTEM */
#include "hybridfs/runtime.h"

int hy_runtime_dir(char *buf, size_t size, int create)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	const char *own = getenv("HYBRIDFS_RUNTIME_DIR");
	struct stat st;
	int n;

	/* a registry of one's own: separate sets of mounts (tests, sandboxes) */
	if (own && *own == '/')
		n = snprintf(buf, size, "%s", own);
	else if (geteuid() == 0)
		n = snprintf(buf, size, "/run/hybridfs");
	else if (xdg && *xdg == '/')
		n = snprintf(buf, size, "%s/hybridfs", xdg);
	else
		n = snprintf(buf, size, "/tmp/hybridfs-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	if (create && mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(buf, &st) < 0)
		return -errno;
	/* someone else's folder in /tmp must not be trusted */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return -EPERM;
	return 0;
}

static void put_value(FILE *f, const char *key, const char *value)
{
	fprintf(f, "%s=", key);
	for (; *value; value++) {
		if (*value == '\\')
			fputs("\\\\", f);
		else if (*value == '\n')
			fputs("\\n", f);
		else
			fputc(*value, f);
	}
	fputc('\n', f);
}

int hy_runtime_register(const struct hy_runtime_entry *entry, char *why, size_t why_size)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 64], path[PATH_MAX + 64], num[32];
	FILE *f;
	int rc, fd;

	rc = hy_runtime_dir(dir, sizeof(dir), 1);
	if (rc) {
		snprintf(why, why_size, "runtime folder \"%s\": %s", dir, strerror(-rc));
		return rc;
	}
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, entry->uuid);
	snprintf(path, sizeof(path), "%s/%s.mount", dir, entry->uuid);
	fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(why, why_size, "runtime file \"%s\": %s", tmp, strerror(-rc));
		return rc;
	}
	put_value(f, "uuid", entry->uuid);
	put_value(f, "mountpoint", entry->mountpoint);
	put_value(f, "backing", entry->backing);
	put_value(f, "state_dir", entry->state_dir);
	snprintf(num, sizeof(num), "%d", (int)entry->pid);
	put_value(f, "pid", num);
	snprintf(num, sizeof(num), "%" PRId64, entry->started);
	put_value(f, "started", num);
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		rc = -errno;
		unlink(tmp);
		snprintf(why, why_size, "runtime file \"%s\": %s", path, strerror(-rc));
		return rc;
	}
	return 0;
}

int hy_runtime_unregister(const char *uuid)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];
	int rc = hy_runtime_dir(dir, sizeof(dir), 0);

	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s.mount", dir, uuid);
	return unlink(path) < 0 ? -errno : 0;
}

static int unescape_into(char *dst, size_t size, const char *src, size_t len)
{
	size_t out = 0;

	for (size_t i = 0; i < len; i++) {
		char c = src[i];

		if (c == '\\' && i + 1 < len) {
			c = src[++i] == 'n' ? '\n' : src[i];
		}
		if (out + 1 >= size)
			return -ENAMETOOLONG;
		dst[out++] = c;
	}
	dst[out] = '\0';
	return 0;
}

int hy_runtime_parse(const char *text, struct hy_runtime_entry *entry, char *why, size_t why_size)
{
	int line_no = 0;

	memset(entry, 0, sizeof(*entry));
	while (*text) {
		const char *end = strchr(text, '\n'), *eq;
		size_t len = end ? (size_t)(end - text) : strlen(text);
		char num[32];
		int rc = 0;

		line_no++;
		eq = memchr(text, '=', len);
		if (!eq) {
			snprintf(why, why_size, "line %d has no \"=\"", line_no);
			return -EINVAL;
		}
		const char *value = eq + 1;
		size_t klen = (size_t)(eq - text), vlen = len - klen - 1;

#define KEY(k) (klen == sizeof(k) - 1 && memcmp(text, k, klen) == 0)
		if (KEY("uuid"))
			rc = unescape_into(entry->uuid, sizeof(entry->uuid), value, vlen);
		else if (KEY("mountpoint"))
			rc = unescape_into(entry->mountpoint, sizeof(entry->mountpoint), value,
					   vlen);
		else if (KEY("backing"))
			rc = unescape_into(entry->backing, sizeof(entry->backing), value, vlen);
		else if (KEY("state_dir"))
			rc = unescape_into(entry->state_dir, sizeof(entry->state_dir), value, vlen);
		else if (KEY("pid") || KEY("started")) {
			char *stop;
			long long v;

			rc = unescape_into(num, sizeof(num), value, vlen);
			v = strtoll(num, &stop, 10);
			if (rc == 0 && (*stop || !*num || v < 0))
				rc = -EINVAL;
			if (KEY("pid"))
				entry->pid = (pid_t)v;
			else
				entry->started = v;
		}
#undef KEY
		/* unknown keys are skipped: a newer daemon may add some */
		if (rc) {
			snprintf(why, why_size, "line %d: bad value", line_no);
			return -EINVAL;
		}
		text += len + (end ? 1 : 0);
	}
	if (!entry->uuid[0] || !entry->mountpoint[0] || entry->pid <= 0) {
		snprintf(why, why_size, "uuid, mountpoint or pid missing");
		return -EINVAL;
	}
	return 0;
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(((const struct hy_runtime_entry *)a)->mountpoint,
		      ((const struct hy_runtime_entry *)b)->mountpoint);
}

int hy_runtime_list(struct hy_runtime_entry **out, size_t *count)
{
	char dir[PATH_MAX], path[PATH_MAX + 300], text[4 * PATH_MAX + 256], why[128];
	struct hy_runtime_entry *list = NULL, *grown;
	struct dirent *d;
	size_t n = 0;
	DIR *dp;
	int rc;

	*out = NULL;
	*count = 0;
	rc = hy_runtime_dir(dir, sizeof(dir), 0);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	dp = opendir(dir);
	if (!dp)
		return -errno;
	while ((d = readdir(dp))) {
		size_t len = strlen(d->d_name);
		ssize_t got;
		int fd;

		if (len < 7 || strcmp(d->d_name + len - 6, ".mount") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		got = read(fd, text, sizeof(text) - 1);
		close(fd);
		if (got < 0)
			continue;
		text[got] = '\0';
		grown = realloc(list, (n + 1) * sizeof(*list));
		if (!grown) {
			rc = -ENOMEM;
			break;
		}
		list = grown;
		if (hy_runtime_parse(text, &list[n], why, sizeof(why))) {
			hy_log(LOG_WARNING, "runtime file \"%s\": %s", path, why);
			continue;
		}
		if (kill(list[n].pid, 0) < 0 && errno == ESRCH) {
			unlink(path); /* its daemon is gone */
			continue;
		}
		n++;
	}
	closedir(dp);
	if (rc) {
		free(list);
		return rc;
	}
	if (n > 1)
		qsort(list, n, sizeof(*list), compare_entries);
	*out = list;
	*count = n;
	return 0;
}

int hy_runtime_state_root(char *out, size_t size)
{
	const char *env;

	if (geteuid() == 0) {
		env = getenv("HYBRIDFS_STATE_ROOT");
		snprintf(out, size, "%s", env && env[0] == '/' ? env : HY_STATE_ROOT_SYSTEM);
		return 0;
	}
	/* the XDG base directory rules: a relative $XDG_STATE_HOME is ignored */
	env = getenv("XDG_STATE_HOME");
	if (env && env[0] == '/') {
		snprintf(out, size, "%s/hybridfs", env);
		return 0;
	}
	env = getenv("HOME");
	if (!env || env[0] != '/') {
		struct passwd *pw = getpwuid(geteuid());

		env = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
	}
	if (!env)
		return -ENOENT;
	snprintf(out, size, "%s/.local/state/hybridfs", strcmp(env, "/") == 0 ? "" : env);
	return 0;
}
