/* fault.c - see include/hybridfs/fault.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/device.h"
#include "hybridfs/fault.h"
#include "hybridfs/log.h"

#define SPEC_MAX  1024
#define ERR_SHORT 1 /* not an errno: the operation moves half the bytes */

enum op { OP_READ, OP_WRITE, OP_SYNC, OP_COUNT };
enum when { WHEN_NTH, WHEN_EVERY, WHEN_AFTER };

struct rule {
	bool point;	 /* a crash point; else a device rule */
	char name[32];	 /* the device or the point */
	char stall[256]; /* points: the FIFO to wait on instead of crashing, or "" */
	enum op op;	 /* device rules */
	int err;	 /* -EIO, -ENOSPC or ERR_SHORT */
	enum when when;	 /* points: WHEN_NTH */
	uint64_t n;
	_Atomic uint64_t calls;
};

static const char *const op_names[OP_COUNT] = {"read", "write", "sync"};
static const char *const devices[] = {"backing", "bopt", "cache"};
static const char *const points[] = {
	"cache.journal.before", "cache.journal.after", "cache.clean.mid",   "cache.migrate.mid",
	"reorg.copy.mid",	"map.journal.before",  "map.journal.after", "control.flush",
};

bool hy_fault_enabled;
static struct rule rules[HY_FAULT_MAX_RULES];
static size_t nrules;
static char spec_text[SPEC_MAX];
static _Atomic uint64_t injected;
static void (*crash_hook)(const char *name);

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

/* A count: decimal digits only, no sign, no overflow. */
static int parse_count(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* One rule, @text (NUL-terminated, modified in place), into @r. */
static int parse_rule(char *text, const char *whole, struct rule *r, char *why, size_t why_size)
{
	const char *dev = NULL, *point = NULL, *op = NULL, *err = NULL, *when_key = NULL;
	const char *stall = NULL;
	uint64_t n = 0;
	char *rest = text, *field;

	memset(r, 0, sizeof(*r));
	if (!*text) {
		snprintf(why, why_size, "%s: \"%s\": an empty rule", HY_FAULT_ENV, whole);
		return -EINVAL;
	}
	/* strsep, not strtok: an empty field ("a::b") is an error, not skipped */
	while ((field = strsep(&rest, ":")) != NULL) {
		char *eq = strchr(field, '=');
		const char **slot = NULL;
		const char *key, *value;

		if (!eq || eq == field || !eq[1]) {
			snprintf(why, why_size, "%s: \"%s\": \"%s\" is not KEY=VALUE", HY_FAULT_ENV,
				 whole, field);
			return -EINVAL;
		}
		*eq = '\0';
		key = field;
		value = eq + 1;
		if (strcmp(key, "dev") == 0)
			slot = &dev;
		else if (strcmp(key, "point") == 0)
			slot = &point;
		else if (strcmp(key, "op") == 0)
			slot = &op;
		else if (strcmp(key, "err") == 0)
			slot = &err;
		else if (strcmp(key, "stall") == 0)
			slot = &stall;
		else if (strcmp(key, "nth") == 0 || strcmp(key, "every") == 0 ||
			 strcmp(key, "after") == 0)
			slot = &when_key;
		if (!slot) {
			snprintf(why, why_size,
				 "%s: \"%s\": unknown key \"%s\" (expected dev, point, op, err, "
				 "stall, nth, every or after)",
				 HY_FAULT_ENV, whole, key);
			return -EINVAL;
		}
		if (*slot) {
			snprintf(why, why_size,
				 "%s: \"%s\": \"%s\" given twice (or with another "
				 "of nth, every, after)",
				 HY_FAULT_ENV, whole, key);
			return -EINVAL;
		}
		if (slot == &when_key) {
			*slot = key;
			if (parse_count(value, &n) < 0) {
				snprintf(why, why_size, "%s: \"%s\": %s=\"%s\" is not a count",
					 HY_FAULT_ENV, whole, key, value);
				return -EINVAL;
			}
		} else {
			*slot = value;
		}
	}
	if (!!dev == !!point) {
		snprintf(why, why_size,
			 "%s: \"%s\": a rule names one dev= or one point=", HY_FAULT_ENV, whole);
		return -EINVAL;
	}
	if (!when_key) {
		snprintf(why, why_size, "%s: \"%s\": says not when (nth=, every= or after=)",
			 HY_FAULT_ENV, whole);
		return -EINVAL;
	}
	r->when = strcmp(when_key, "nth") == 0	   ? WHEN_NTH
		  : strcmp(when_key, "every") == 0 ? WHEN_EVERY
						   : WHEN_AFTER;
	r->n = n;
	if (n == 0 && r->when != WHEN_AFTER) {
		snprintf(why, why_size, "%s: \"%s\": %s=0 (counts start at 1)", HY_FAULT_ENV, whole,
			 when_key);
		return -EINVAL;
	}
	if (point) {
		if (op || err) {
			snprintf(why, why_size,
				 "%s: \"%s\": a crash point takes no op= or err=", HY_FAULT_ENV,
				 whole);
			return -EINVAL;
		}
		if (!in_list(point, points, sizeof(points) / sizeof(points[0]))) {
			snprintf(
				why, why_size,
				"%s: \"%s\": unknown crash point \"%s\" (see fault.h for the list)",
				HY_FAULT_ENV, whole, point);
			return -EINVAL;
		}
		if (r->when != WHEN_NTH) {
			snprintf(why, why_size, "%s: \"%s\": a crash point is reached once: nth=N",
				 HY_FAULT_ENV, whole);
			return -EINVAL;
		}
		if (stall && (*stall != '/' || strlen(stall) >= sizeof(r->stall))) {
			snprintf(why, why_size,
				 "%s: \"%s\": stall= names a FIFO by its absolute path (at most "
				 "%zu bytes)",
				 HY_FAULT_ENV, whole, sizeof(r->stall) - 1);
			return -EINVAL;
		}
		r->point = true;
		snprintf(r->name, sizeof(r->name), "%s", point);
		snprintf(r->stall, sizeof(r->stall), "%s", stall ? stall : "");
		return 0;
	}
	if (stall) {
		snprintf(why, why_size, "%s: \"%s\": stall= is for a point=", HY_FAULT_ENV, whole);
		return -EINVAL;
	}
	if (!in_list(dev, devices, sizeof(devices) / sizeof(devices[0]))) {
		snprintf(why, why_size,
			 "%s: \"%s\": unknown device \"%s\" (expected backing, bopt or cache)",
			 HY_FAULT_ENV, whole, dev);
		return -EINVAL;
	}
	snprintf(r->name, sizeof(r->name), "%s", dev);
	if (!op || !err) {
		snprintf(why, why_size,
			 "%s: \"%s\": a device rule needs op= and err=", HY_FAULT_ENV, whole);
		return -EINVAL;
	}
	for (r->op = 0; r->op < OP_COUNT && strcmp(op, op_names[r->op]) != 0; r->op++)
		;
	if (r->op == OP_COUNT) {
		snprintf(why, why_size,
			 "%s: \"%s\": unknown operation \"%s\" (expected read, write or sync)",
			 HY_FAULT_ENV, whole, op);
		return -EINVAL;
	}
	if (strcmp(err, "EIO") == 0) {
		r->err = -EIO;
	} else if (strcmp(err, "ENOSPC") == 0) {
		r->err = -ENOSPC;
	} else if (strcmp(err, "short") == 0 && r->op != OP_SYNC) {
		r->err = ERR_SHORT;
	} else {
		snprintf(why, why_size, "%s: \"%s\": unknown error \"%s\" (expected EIO, ENOSPC%s)",
			 HY_FAULT_ENV, whole, err,
			 r->op == OP_SYNC ? "; a sync cannot be short" : " or short");
		return -EINVAL;
	}
	return 0;
}

void hy_fault_reset(void)
{
	hy_fault_enabled = false;
	nrules = 0;
	spec_text[0] = '\0';
	atomic_store(&injected, 0);
	crash_hook = NULL;
}

int hy_fault_init(const char *spec, char *why, size_t why_size)
{
	struct rule parsed[HY_FAULT_MAX_RULES];
	char buf[SPEC_MAX];
	size_t n = 0;
	char *p;

	hy_fault_reset();
	if (!spec || !*spec)
		return 0;
	if (strlen(spec) >= sizeof(buf)) {
		snprintf(why, why_size, "%s: longer than %d bytes", HY_FAULT_ENV, SPEC_MAX - 1);
		return -EINVAL;
	}
	memcpy(buf, spec, strlen(spec) + 1);
	p = buf;
	for (;;) {
		char *end = strchr(p, ';');
		char whole[SPEC_MAX];
		int rc;

		if (end)
			*end = '\0';
		if (n == HY_FAULT_MAX_RULES) {
			snprintf(why, why_size, "%s: more than %d rules", HY_FAULT_ENV,
				 HY_FAULT_MAX_RULES);
			return -EINVAL;
		}
		snprintf(whole, sizeof(whole), "%s", p);
		rc = parse_rule(p, whole, &parsed[n], why, why_size);
		if (rc < 0)
			return rc;
		n++;
		if (!end)
			break;
		p = end + 1;
	}
	for (size_t i = 0; i < n; i++) {
		rules[i] = parsed[i];
		atomic_store(&rules[i].calls, 0);
	}
	nrules = n;
	snprintf(spec_text, sizeof(spec_text), "%s", spec);
	hy_fault_enabled = true;
	return 0;
}

int hy_fault_init_env(char *why, size_t why_size)
{
	const char *spec = getenv(HY_FAULT_ENV);
	int rc = hy_fault_init(spec, why, why_size);

	if (rc == 0 && hy_fault_enabled)
		hy_log(LOG_WARNING, "fault injection in force (%s): \"%s\"", HY_FAULT_ENV, spec);
	return rc;
}

const char *hy_fault_spec(void)
{
	return spec_text;
}

uint64_t hy_fault_injected(void)
{
	return atomic_load(&injected);
}

void hy_fault_set_crash_hook(void (*hook)(const char *name))
{
	crash_hook = hook;
}

static bool due(struct rule *r)
{
	uint64_t k = atomic_fetch_add(&r->calls, 1) + 1;

	switch (r->when) {
	case WHEN_NTH:
		return k == r->n;
	case WHEN_EVERY:
		return k % r->n == 0;
	case WHEN_AFTER:
		return k > r->n;
	}
	return false;
}

uint64_t hy_fault_point_count(const char *name)
{
	for (size_t i = 0; i < nrules; i++)
		if (rules[i].point && strcmp(rules[i].name, name) == 0)
			return atomic_load(&rules[i].calls);
	return 0;
}

/* The thread that reached a stalling point waits until a test has opened
 * the FIFO for writing and closed it again: opening a FIFO to read blocks
 * until a writer comes, reading it until the last writer leaves. The test
 * knows the point is reached when its own open returns. */
static void stall_on(const struct rule *r)
{
	char buf[64];
	int fd;

	hy_log(LOG_WARNING, "fault: point \"%s\" reached: waiting on \"%s\"", r->name, r->stall);
	fd = open(r->stall, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		hy_log(LOG_ERR, "fault: \"%s\": %s; going on", r->stall, strerror(errno));
		return;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	close(fd);
	hy_log(LOG_WARNING, "fault: point \"%s\": released", r->name);
}

void hy_fault_point_hit(const char *name)
{
	for (size_t i = 0; i < nrules; i++) {
		struct rule *r = &rules[i];
		char line[160];
		int len;

		if (!r->point || strcmp(r->name, name) != 0 || !due(r))
			continue;
		if (r->stall[0]) {
			stall_on(r);
			continue;
		}
		if (crash_hook) {
			crash_hook(name);
			continue;
		}
		/* one write(2), no stdio: other threads keep running until the
		 * signal lands, and nothing of the daemon's may be flushed */
		len = snprintf(line, sizeof(line),
			       "hybridfs: fault: crash point \"%s\" reached (time %" PRIu64
			       "): SIGKILL\n",
			       name, r->n);
		if (len > 0 && write(STDERR_FILENO, line, (size_t)len) < 0)
			len = 0; /* nothing to do: the process ends now anyway */
		raise(SIGKILL);
		for (;;)
			pause(); /* SIGKILL cannot be caught: not reached */
	}
}

/* ---- the device wrapper ---------------------------------------------- */

struct fault_dev {
	struct hy_device_ops ops; /* the inner table, read/write/sync/destroy ours */
	const struct hy_device_ops *inner;
	struct rule *by_op[OP_COUNT][HY_FAULT_MAX_RULES + 1]; /* NULL-terminated */
};

/* The fault the rules give for this call of @op, or 0. Every matching
 * rule counts the call, whether or not another one fires. */
static int fault_for(struct hy_device *dev, enum op op)
{
	struct fault_dev *fd = dev->fault;
	int err = 0;

	for (struct rule **r = fd->by_op[op]; *r; r++)
		if (due(*r) && !err)
			err = (*r)->err;
	if (err) {
		atomic_fetch_add(&injected, 1);
		hy_log_debug("fault: device \"%s\": %s: %s", dev->name, op_names[op],
			     err == ERR_SHORT ? "short" : strerror(-err));
	}
	return err;
}

static ssize_t fault_read(struct hy_device *dev, int64_t object, void *buf, size_t len, off_t off)
{
	struct fault_dev *fd = dev->fault;
	int err = fault_for(dev, OP_READ);

	if (err == ERR_SHORT && len > 1)
		len /= 2;
	else if (err < 0)
		return err;
	return fd->inner->read(dev, object, buf, len, off);
}

static ssize_t fault_write(struct hy_device *dev, int64_t object, const void *buf, size_t len,
			   off_t off)
{
	struct fault_dev *fd = dev->fault;
	int err = fault_for(dev, OP_WRITE);

	if (err == ERR_SHORT && len > 1)
		len /= 2;
	else if (err < 0)
		return err;
	return fd->inner->write(dev, object, buf, len, off);
}

static int fault_sync(struct hy_device *dev, int64_t object, bool data_only)
{
	struct fault_dev *fd = dev->fault;
	int err = fault_for(dev, OP_SYNC);

	if (err < 0)
		return err;
	return fd->inner->sync(dev, object, data_only);
}

static void fault_destroy(struct hy_device *dev)
{
	struct fault_dev *fd = dev->fault;

	/* the inner table's destroy sees the device as it made it */
	dev->ops = fd->inner;
	dev->fault = NULL;
	if (fd->inner->destroy)
		fd->inner->destroy(dev);
	free(fd);
}

int hy_fault_attach(struct hy_device *dev)
{
	struct fault_dev *fd;
	size_t count[OP_COUNT] = {0};
	bool any = false;

	if (!hy_fault_enabled || dev->fault)
		return 0;
	for (size_t i = 0; i < nrules; i++)
		if (!rules[i].point && strcmp(rules[i].name, dev->name) == 0)
			any = true;
	if (!any)
		return 0;
	fd = calloc(1, sizeof(*fd));
	if (!fd)
		return -ENOMEM;
	for (size_t i = 0; i < nrules; i++)
		if (!rules[i].point && strcmp(rules[i].name, dev->name) == 0)
			fd->by_op[rules[i].op][count[rules[i].op]++] = &rules[i];
	fd->inner = dev->ops;
	fd->ops = *dev->ops;
	/* an operation the inner table lacks stays missing */
	if (fd->inner->read)
		fd->ops.read = fault_read;
	if (fd->inner->write)
		fd->ops.write = fault_write;
	if (fd->inner->sync)
		fd->ops.sync = fault_sync;
	fd->ops.destroy = fault_destroy;
	dev->fault = fd;
	dev->ops = &fd->ops;
	return 0;
}
