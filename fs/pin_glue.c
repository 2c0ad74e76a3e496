/*
 * pin_glue.c - pins and excludes in the daemon (rules.h, pin.h): the
 * mount's rules loaded at mount (the state database's cache_rules and the
 * exclude= option), a file's rule told to the cache at its first open under
 * the rules in force, the "rules" control request (hybridctl pin, unpin,
 * exclude), and their part of "status".
 *
 * Where the path match is done: at open (fs/ops_files.c, where the fs
 * gives the engine a file's id), once per file id and rules generation: a
 * file opened again under the same rules costs one look-up in a map of
 * ids; the match itself reads the descriptor's path (/proc/self/fd) and
 * runs the globs. A request then finds its file's rule in the cache's
 * per-file state: nothing per request here.
 *
 * A change of the rules (the control request) applies at once to the files
 * it can name: a pinned or unpinned tree is walked beneath the backing root
 * (its files' ids from file identity, their sizes for the cap), and the
 * files the state database knows (files.path) are matched again for a
 * changed exclude; a file opened before and not known to the database yet
 * follows at its next open (the generation moved).
 *
 * Locks: p->lock (rwlock) over the rule lists and the matcher's set, taken
 * shared at open; p->seen_lock (a leaf) over the map of ids matched. The
 * control request is the only writer (the control server's worker); it
 * never holds either across the walk or a SQLite call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <json-c/json.h>
#include <linux/openat2.h>
#include <sqlite3.h>

#include "fs_internal.h"
#include "hybridfs/cache.h"
#include "hybridfs/identity.h"
#include "hybridfs/inode.h"
#include "hybridfs/keymap.h"
#include "hybridfs/log.h"
#include "hybridfs/options.h"
#include "hybridfs/pin.h"
#include "hybridfs/profiler.h"
#include "hybridfs/rules.h"
#include "hybridfs/state.h"

#define WALK_MAX_FILES 1000000 /* a pin's tree at most: a command, not a crawl */

struct pin_entry {
	char *path;
	uint64_t files, bytes; /* regular files under it and their 4 KiB blocks' bytes */
};

struct hy_fs_pins {
	pthread_rwlock_t lock; /* the lists and the matcher's set */
	struct pin_entry *pins;
	size_t npins;
	struct hy_rules mine;	/* hybridctl's excludes (their patterns only) */
	struct hy_rules option; /* exclude= */
	struct hy_rules rules;	/* what files are matched against: all of it */
	_Atomic uint32_t gen;	/* moves with each change of the rules */
	_Atomic bool active;	/* any rule at all */
	pthread_mutex_t seen_lock;
	struct hy_keymap seen; /* file id -> gen it was matched under */
	_Atomic uint64_t matched;
};

/* ---- the matcher's set ----------------------------------------------------- */

/* p->lock held exclusive */
static int rebuild(struct hy_fs_pins *p)
{
	struct hy_rules r = {0};
	int rc = 0;

	for (size_t i = 0; i < p->npins && rc >= 0; i++)
		rc = hy_rules_add(&r, HY_RULE_PIN, p->pins[i].path);
	for (size_t i = 0; i < p->option.nexcludes && rc >= 0; i++)
		rc = hy_rules_add(&r, HY_RULE_EXCLUDE, p->option.excludes[i]);
	for (size_t i = 0; i < p->mine.nexcludes && rc >= 0; i++)
		rc = hy_rules_add(&r, HY_RULE_EXCLUDE, p->mine.excludes[i]);
	if (rc < 0) {
		hy_rules_clear(&r);
		return rc;
	}
	hy_rules_clear(&p->rules);
	p->rules = r;
	atomic_store(&p->active, r.npins || r.nexcludes);
	atomic_fetch_add(&p->gen, 1);
	return 0;
}

/* The path of @fd relative to the backing root, into @out; false when it
 * has none there. */
static bool relative_path(const struct hy_fs *fs, int fd, char *out, size_t size)
{
	char proc[64], abs[PATH_MAX];
	size_t n = strlen(fs->backing_path);
	ssize_t len;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	len = readlink(proc, abs, sizeof(abs) - 1);
	if (len <= 0)
		return false;
	abs[len] = '\0';
	if (n == 1 && fs->backing_path[0] == '/')
		n = 0; /* the backing root is / */
	if (strncmp(abs, fs->backing_path, n) != 0 || abs[n] != '/')
		return false;
	snprintf(out, size, "%s", abs + n + 1);
	return true;
}

/* A seen entry: the generation it was matched under (its low 30 bits)
 * and the rule found, in one value. */
#define SEEN_RULE_BITS 2
#define SEEN_GEN_MASK  (UINT32_MAX >> SEEN_RULE_BITS)

static void seen_set(struct hy_fs_pins *p, uint64_t id, uint32_t gen, enum hy_rule rule)
{
	uint32_t v = (gen & SEEN_GEN_MASK) << SEEN_RULE_BITS | (uint32_t)rule;

	pthread_mutex_lock(&p->seen_lock);
	{
		uint64_t slot = hy_keymap_slot(&p->seen, id);

		if (p->seen.keys[slot] == id)
			p->seen.values[slot] = v;
		else if (hy_keymap_put(&p->seen, id, v) < 0)
			hy_log(LOG_DEBUG, "pins: out of memory for file %" PRIu64, id);
	}
	pthread_mutex_unlock(&p->seen_lock);
}

enum hy_rule hy_fs_pins_opened(struct hy_fs *fs, int fd, uint64_t file_id)
{
	struct hy_fs_pins *p = fs->pins;
	char path[PATH_MAX];
	enum hy_rule rule;
	uint32_t gen, seen;
	bool known;

	/* without the cache the rules matter only to passthrough (the
	 * analyzer matches paths itself) */
	if (!p || !file_id || (!fs->cache && !fs->passthrough) || fd < 0)
		return HY_RULE_NONE;
	gen = atomic_load(&p->gen);
	pthread_mutex_lock(&p->seen_lock);
	known = hy_keymap_get(&p->seen, file_id, &seen) &&
		seen >> SEEN_RULE_BITS == (gen & SEEN_GEN_MASK);
	pthread_mutex_unlock(&p->seen_lock);
	if (known)
		return (enum hy_rule)(seen & ((1u << SEEN_RULE_BITS) - 1));
	/* no rule at all: nothing to match (the cache's map is empty too:
	 * the change that removed the last rule told it) */
	if (!atomic_load(&p->active) &&
	    (!fs->cache || hy_pin_file_rule(fs->cache, file_id) == HY_RULE_NONE))
		return HY_RULE_NONE;
	if (!relative_path(fs, fd, path, sizeof(path)))
		return HY_RULE_NONE;
	pthread_rwlock_rdlock(&p->lock);
	rule = hy_rules_match(&p->rules, path);
	pthread_rwlock_unlock(&p->lock);
	if (fs->cache && hy_pin_file_rule(fs->cache, file_id) != rule) {
		if (hy_pin_set_files(fs->cache, &file_id, 1, rule) < 0) {
			hy_log(LOG_WARNING, "pins: out of memory for \"%s\"'s rule", path);
			/* the cache goes on with the rule it had: so does the caller */
			return hy_pin_file_rule(fs->cache, file_id);
		}
		atomic_fetch_add(&p->matched, 1);
	}
	seen_set(p, file_id, gen, rule);
	return rule;
}

/* ---- walking a pinned tree ---------------------------------------------------- */

struct walked {
	uint64_t *ids;
	char **paths;
	size_t n, cap;
	uint64_t files, bytes;
};

static void walked_free(struct walked *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->paths[i]);
	free(w->ids);
	free(w->paths);
	memset(w, 0, sizeof(*w));
}

static int walked_add(struct walked *w, uint64_t id, const char *path)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		uint64_t *ids = realloc(w->ids, cap * sizeof(*ids));
		char **paths;

		if (!ids)
			return -ENOMEM;
		w->ids = ids;
		paths = realloc(w->paths, cap * sizeof(*paths));
		if (!paths)
			return -ENOMEM;
		w->paths = paths;
		w->cap = cap;
	}
	if (!(w->paths[w->n] = strdup(path)))
		return -ENOMEM;
	w->ids[w->n++] = id;
	return 0;
}

/* A regular file at @path (relative) reached as @name in @dirfd. */
static int walk_file(struct hy_fs *fs, int dirfd, const char *name, const char *path,
		     const struct stat *st, struct walked *w)
{
	struct hy_identity *idt = fs->profiler ? hy_profiler_identity(fs->profiler) : NULL;
	uint64_t id = 0;

	w->files++;
	w->bytes += ((uint64_t)st->st_size + 4095) / 4096 * 4096;
	if (idt) {
		int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

		if (fd >= 0) {
			id = hy_identity_find_file(idt, fd, st);
			close(fd);
		}
	}
	/* a file without an id has nothing cached: it is matched at its
	 * first open */
	return id ? walked_add(w, id, path) : 0;
}

/* Every regular file at or under @rel, without following symbolic links
 * and skipping the state folder. 0, or a negative errno with @why. */
static int walk(struct hy_fs *fs, const char *rel, struct walked *w, char *why, size_t why_size)
{
	int root = fs->inodes->root->fd;
	char **stack = NULL;
	size_t depth = 0, cap = 0;
	struct stat st;
	int rc = 0;

	if (*rel) {
		/* beneath the backing root: a symbolic link in the path that
		 * leads out of it is refused, as explain refuses it */
		struct open_how how = {
			.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
		};
		long fd = syscall(SYS_openat2, root, rel, &how, sizeof(how));

		if (fd >= 0) {
			close((int)fd);
		} else if (errno == EXDEV || errno == ELOOP) {
			snprintf(why, why_size, "pin: \"%s\" is not a path inside the mount", rel);
			return -EXDEV;
		}
	}
	if (fstatat(root, *rel ? rel : ".", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = -errno;
		snprintf(why, why_size, "pin: \"%s\": %s", rel, strerror(errno));
		return rc;
	}
	if (S_ISREG(st.st_mode)) {
		const char *slash = strrchr(rel, '/');
		char dir[PATH_MAX];
		int dfd;

		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - rel) : 1,
			 slash ? rel : ".");
		dfd = openat(root, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			rc = -errno;
			snprintf(why, why_size, "pin: \"%s\": %s", rel, strerror(errno));
			return rc;
		}
		rc = walk_file(fs, dfd, slash ? slash + 1 : rel, rel, &st, w);
		close(dfd);
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, why_size, "pin: \"%s\" is neither a file nor a folder", rel);
		return -EINVAL;
	}
	if (!(stack = malloc(sizeof(*stack))) || !(stack[0] = strdup(rel))) {
		free(stack);
		return -ENOMEM;
	}
	depth = cap = 1;
	while (depth && rc == 0) {
		char *dir = stack[--depth];
		int dfd = openat(root, *dir ? dir : ".",
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat dst;
		struct dirent *e;
		DIR *d;

		if (dfd < 0 || fstat(dfd, &dst) < 0 || !(d = fdopendir(dfd))) {
			if (dfd >= 0)
				close(dfd);
			free(dir);
			continue; /* unreadable: its files are not counted */
		}
		while ((e = readdir(d)) && rc == 0) {
			char child[PATH_MAX];

			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (dst.st_dev == fs->state_parent_dev &&
			    dst.st_ino == fs->state_parent_ino &&
			    strcmp(e->d_name, fs->state_name) == 0)
				continue;
			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if ((size_t)snprintf(child, sizeof(child), "%s%s%s", dir, *dir ? "/" : "",
					     e->d_name) >= sizeof(child))
				continue;
			if (S_ISREG(st.st_mode)) {
				if (w->files >= WALK_MAX_FILES) {
					snprintf(why, why_size,
						 "pin: \"%s\" holds more than %d files; pin a part "
						 "of it",
						 rel, WALK_MAX_FILES);
					rc = -E2BIG;
					break;
				}
				rc = walk_file(fs, dirfd(d), e->d_name, child, &st, w);
			} else if (S_ISDIR(st.st_mode)) {
				if (depth == cap) {
					char **grown = realloc(stack, 2 * cap * sizeof(*stack));

					if (!grown) {
						rc = -ENOMEM;
						break;
					}
					stack = grown;
					cap *= 2;
				}
				if (!(stack[depth] = strdup(child))) {
					rc = -ENOMEM;
					break;
				}
				depth++;
			}
		}
		closedir(d);
		free(dir);
	}
	while (depth)
		free(stack[--depth]);
	free(stack);
	if (rc == -ENOMEM)
		snprintf(why, why_size, "pin: out of memory walking \"%s\"", rel);
	return rc;
}

/* Tells the cache the rules of the walked files, by @rules. */
static int apply_walked(struct hy_fs *fs, const struct hy_rules *rules, const struct walked *w)
{
	for (enum hy_rule r = HY_RULE_NONE; r <= HY_RULE_EXCLUDE; r++) {
		uint64_t *ids = malloc((w->n ? w->n : 1) * sizeof(*ids));
		size_t n = 0;
		int rc;

		if (!ids)
			return -ENOMEM;
		for (size_t i = 0; i < w->n; i++)
			if (hy_rules_match(rules, w->paths[i]) == r)
				ids[n++] = w->ids[i];
		rc = fs->cache ? hy_pin_set_files(fs->cache, ids, n, r) : 0;
		free(ids);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The files the database knows, matched again (an exclude changed). */
static int apply_known(struct hy_fs *fs, sqlite3 *db, const struct hy_rules *rules)
{
	struct walked w = {0};
	sqlite3_stmt *st;
	int rc = 0, step;

	if (!fs->cache)
		return 0;
	if (sqlite3_prepare_v2(db, "SELECT id, path FROM files WHERE gone_ns IS NULL", -1, &st,
			       NULL) != SQLITE_OK)
		return hy_state_errno(sqlite3_errcode(db));
	while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *path = (const char *)sqlite3_column_text(st, 1);

		if (path)
			rc = walked_add(&w, (uint64_t)sqlite3_column_int64(st, 0), path);
	}
	sqlite3_finalize(st);
	if (rc == 0)
		rc = apply_walked(fs, rules, &w);
	walked_free(&w);
	return rc;
}

/* ---- at mount ------------------------------------------------------------------- */

static sqlite3 *db_open(const char *db_path, char *why, size_t why_size)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);

	if (rc != SQLITE_OK) {
		snprintf(why, why_size, "cannot open the state database \"%s\": %s", db_path,
			 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static int pin_push(struct hy_fs_pins *p, const char *path, uint64_t files, uint64_t bytes)
{
	struct pin_entry *grown = realloc(p->pins, (p->npins + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	p->pins = grown;
	if (!(grown[p->npins].path = strdup(path)))
		return -ENOMEM;
	grown[p->npins].files = files;
	grown[p->npins].bytes = bytes;
	p->npins++;
	return 0;
}

int hy_fs_open_pins(struct hy_fs *fs, const struct hy_options *opts, struct sqlite3 *db)
{
	struct hy_fs_pins *p = calloc(1, sizeof(*p));
	struct hy_rules stored = {0};
	struct walked *walks;
	char why[512];
	int rc;

	if (!p || hy_keymap_init(&p->seen, 64, true) < 0) {
		free(p);
		return -ENOMEM;
	}
	pthread_rwlock_init(&p->lock, NULL);
	pthread_mutex_init(&p->seen_lock, NULL);
	fs->pins = p;
	for (size_t i = 0; i < opts->nexclude; i++)
		if (hy_rules_add(&p->option, HY_RULE_EXCLUDE, opts->exclude[i]) < 0)
			return -ENOMEM;
	/* the mount's excludes, for the analyzer and hybridctl reorganize */
	rc = hy_rules_store_option(db, opts->exclude, opts->nexclude, why, sizeof(why));
	if (rc < 0)
		hy_log(LOG_WARNING, "pins: %s; the plans do not know exclude=", why);
	rc = hy_rules_load(db, &stored, false, why, sizeof(why));
	if (rc < 0) {
		hy_log(LOG_WARNING, "pins: %s; no pin or exclude of hybridctl is in force", why);
		hy_rules_clear(&stored);
	}
	for (size_t i = 0; i < stored.nexcludes; i++)
		if (hy_rules_add(&p->mine, HY_RULE_EXCLUDE, stored.excludes[i]) < 0)
			rc = -ENOMEM;
	walks = calloc(stored.npins + 1, sizeof(*walks));
	if (!walks)
		rc = -ENOMEM;
	for (size_t i = 0; walks && i < stored.npins; i++) {
		/* a pinned tree gone since: kept (it may come back), counted empty */
		if (walk(fs, stored.pins[i], &walks[i], why, sizeof(why)) < 0)
			hy_log(LOG_NOTICE, "%s", why);
		if (pin_push(p, stored.pins[i], walks[i].files, walks[i].bytes) < 0)
			rc = -ENOMEM;
	}
	if (rc != -ENOMEM && rebuild(p) < 0)
		rc = -ENOMEM;
	/* the files already known get their rules now, the others at open */
	for (size_t i = 0; rc != -ENOMEM && i < stored.npins; i++)
		if (apply_walked(fs, &p->rules, &walks[i]) < 0)
			hy_log(LOG_WARNING, "pins: out of memory pinning \"%s\"", stored.pins[i]);
	for (size_t i = 0; walks && i < stored.npins; i++)
		walked_free(&walks[i]);
	free(walks);
	hy_rules_clear(&stored);
	if (rc == -ENOMEM)
		return -ENOMEM;
	if (p->npins || p->rules.nexcludes)
		hy_log(LOG_NOTICE, "pins: %zu pinned, %zu excluded pattern%s in force", p->npins,
		       p->rules.nexcludes, p->rules.nexcludes == 1 ? "" : "s");
	return 0;
}

void hy_fs_close_pins(struct hy_fs *fs)
{
	struct hy_fs_pins *p = fs->pins;

	if (!p)
		return;
	for (size_t i = 0; i < p->npins; i++)
		free(p->pins[i].path);
	free(p->pins);
	hy_rules_clear(&p->mine);
	hy_rules_clear(&p->option);
	hy_rules_clear(&p->rules);
	hy_keymap_free(&p->seen);
	pthread_rwlock_destroy(&p->lock);
	pthread_mutex_destroy(&p->seen_lock);
	free(p);
	fs->pins = NULL;
}

/* ---- the "rules" request and status ---------------------------------------------- */

struct json_object *hy_fs_pins_status(struct hy_fs *fs)
{
	struct hy_fs_pins *p = fs->pins;
	struct json_object *o = json_object_new_object(), *pins, *ex;
	uint64_t files = 0, bytes = 0;

	if (!o || !p)
		return o;
	pins = json_object_new_array();
	ex = json_object_new_array();
	pthread_rwlock_rdlock(&p->lock);
	for (size_t i = 0; i < p->npins; i++) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "path", json_object_new_string(p->pins[i].path));
		json_object_object_add(e, "files", json_object_new_uint64(p->pins[i].files));
		json_object_object_add(e, "bytes", json_object_new_uint64(p->pins[i].bytes));
		json_object_array_add(pins, e);
		files += p->pins[i].files;
		bytes += p->pins[i].bytes;
	}
	for (int k = 0; k < 2; k++) {
		const struct hy_rules *r = k ? &p->mine : &p->option;

		for (size_t i = 0; i < r->nexcludes; i++) {
			struct json_object *e = json_object_new_object();

			json_object_object_add(e, "pattern",
					       json_object_new_string(r->excludes[i]));
			json_object_object_add(e, "source",
					       json_object_new_string(k ? "hybridctl" : "mount"));
			json_object_array_add(ex, e);
		}
	}
	pthread_rwlock_unlock(&p->lock);
	json_object_object_add(o, "pins", pins);
	json_object_object_add(o, "excludes", ex);
	json_object_object_add(o, "pinned_files", json_object_new_uint64(files));
	json_object_object_add(o, "pinned_bytes", json_object_new_uint64(bytes));
	json_object_object_add(o, "cache", json_object_new_boolean(fs->cache != NULL));
	if (fs->cache) {
		struct hy_pin_stats ps;

		hy_pin_get_stats(fs->cache, &ps);
		json_object_object_add(o, "held_bytes",
				       json_object_new_uint64(ps.pinned_lines * 4096));
		json_object_object_add(o, "cap_bytes", json_object_new_uint64(ps.pin_cap * 4096));
		json_object_object_add(o, "over_cap_blocks", json_object_new_uint64(ps.over_cap));
		json_object_object_add(o, "files_pinned", json_object_new_uint64(ps.files_pinned));
		json_object_object_add(o, "files_excluded",
				       json_object_new_uint64(ps.files_excluded));
		json_object_object_add(o, "excluded_requests",
				       json_object_new_uint64(ps.excluded_requests));
	}
	return o;
}

/* The strings of member @name of @request into @out (borrowed), checked
 * to be strings. 0, or -EINVAL with @why. */
static int string_list(struct json_object *request, const char *name, const char ***out, size_t *n,
		       char *why, size_t why_size)
{
	struct json_object *m;

	*out = NULL;
	*n = 0;
	if (!json_object_object_get_ex(request, name, &m))
		return 0;
	if (!json_object_is_type(m, json_type_array)) {
		snprintf(why, why_size, "\"%s\" must be an array of strings", name);
		return -EINVAL;
	}
	*n = json_object_array_length(m);
	if (*n > HY_RULES_MAX) {
		snprintf(why, why_size, "\"%s\": more than %d items", name, HY_RULES_MAX);
		return -EINVAL;
	}
	*out = calloc(*n ? *n : 1, sizeof(**out));
	if (!*out) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < *n; i++) {
		struct json_object *item = json_object_array_get_idx(m, i);

		if (!json_object_is_type(item, json_type_string)) {
			snprintf(why, why_size, "\"%s\" item %zu is not a string", name, i + 1);
			free(*out);
			*out = NULL;
			return -EINVAL;
		}
		(*out)[i] = json_object_get_string(item);
	}
	return 0;
}

static int pin_index(const struct hy_fs_pins *p, const char *path)
{
	for (size_t i = 0; i < p->npins; i++)
		if (strcmp(p->pins[i].path, path) == 0)
			return (int)i;
	return -1;
}

static void human(uint64_t bytes, char *out, size_t size)
{
	if (bytes >= (1ULL << 30))
		snprintf(out, size, "%.1f GiB", (double)bytes / (1ULL << 30));
	else if (bytes >= (1ULL << 20))
		snprintf(out, size, "%.1f MiB", (double)bytes / (1ULL << 20));
	else
		snprintf(out, size, "%.1f KiB", (double)bytes / 1024);
}

struct json_object *hy_fs_rules(void *ctx, struct json_object *request, char *why, size_t why_size)
{
	struct hy_fs *fs = ctx;
	struct hy_fs_pins *p = fs->pins;
	const char **pin = NULL, **unpin = NULL, **ex = NULL, **inc = NULL;
	size_t npin = 0, nunpin = 0, nex = 0, ninc = 0;
	char(*paths)[HY_RULES_PATTERN_MAX + 1] = NULL;
	struct walked *walks = NULL;
	uint64_t held = 0, added = 0, cap = 0;
	struct json_object *result = NULL;
	sqlite3 *db = NULL;
	int changed = 0, rc;

	if (!p) {
		snprintf(why, why_size, "this mount has no rules");
		return NULL;
	}
	if ((rc = string_list(request, "pin", &pin, &npin, why, why_size)) < 0 ||
	    (rc = string_list(request, "unpin", &unpin, &nunpin, why, why_size)) < 0 ||
	    (rc = string_list(request, "exclude", &ex, &nex, why, why_size)) < 0 ||
	    (rc = string_list(request, "include", &inc, &ninc, why, why_size)) < 0)
		goto out;
	/* everything checked before anything changes */
	paths = calloc(npin + nunpin + 1, sizeof(*paths));
	walks = calloc(npin + 1, sizeof(*walks));
	if (!paths || !walks) {
		snprintf(why, why_size, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < npin + nunpin; i++) {
		const char *given = i < npin ? pin[i] : unpin[i - npin];

		if (hy_rules_check_path(given, paths[i], sizeof(paths[i]), why, why_size) < 0)
			goto out;
	}
	for (size_t i = 0; i < nex; i++)
		if (hy_rules_check_glob(ex[i], why, why_size) < 0)
			goto out;
	for (size_t i = 0; i < nunpin; i++)
		if (pin_index(p, paths[npin + i]) < 0) {
			snprintf(why, why_size, "unpin: \"%s\" is not pinned%s", unpin[i],
				 p->npins ? "" : " (nothing is)");
			goto out;
		}
	for (size_t i = 0; i < npin; i++) {
		if (walk(fs, paths[i], &walks[i], why, why_size) < 0)
			goto out;
		if (pin_index(p, paths[i]) < 0)
			added += walks[i].bytes;
	}
	pthread_rwlock_rdlock(&p->lock);
	for (size_t i = 0; i < p->npins; i++) {
		bool going = false;

		for (size_t j = 0; j < nunpin; j++)
			going |= strcmp(p->pins[i].path, paths[npin + j]) == 0;
		if (!going)
			held += p->pins[i].bytes;
	}
	pthread_rwlock_unlock(&p->lock);
	if (fs->cache) {
		struct hy_pin_stats ps;

		hy_pin_get_stats(fs->cache, &ps);
		cap = ps.pin_cap * 4096;
	}
	if (fs->cache && added && held + added > cap) {
		char a[32], h[32], c[32];

		human(added, a, sizeof(a));
		human(held, h, sizeof(h));
		human(cap, c, sizeof(c));
		snprintf(why, why_size,
			 "pin: %s more to pin, with %s pinned already, passes the %s pins may hold "
			 "(half of the cache store); nothing was pinned",
			 a, h, c);
		goto out;
	}
	/* stored first: a change that cannot be kept is not made */
	db = db_open(fs->db_path, why, why_size);
	if (!db)
		goto out;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(why, why_size, "state database: %s", sqlite3_errmsg(db));
		goto out;
	}
	rc = 0;
	for (size_t i = 0; i < npin && rc == 0; i++)
		rc = hy_rules_store(db, "pin", paths[i], true, why, why_size);
	for (size_t i = 0; i < nunpin && rc == 0; i++)
		rc = hy_rules_store(db, "pin", paths[npin + i], false, why, why_size);
	for (size_t i = 0; i < nex && rc == 0; i++)
		rc = hy_rules_store(db, "exclude", ex[i], true, why, why_size);
	for (size_t i = 0; i < ninc && rc == 0; i++)
		rc = hy_rules_store(db, "exclude", inc[i], false, why, why_size);
	if (rc < 0 || sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		if (rc == 0)
			snprintf(why, why_size, "state database: %s; nothing was changed",
				 sqlite3_errmsg(db));
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		goto out;
	}
	/* in force */
	pthread_rwlock_wrlock(&p->lock);
	rc = 0;
	for (size_t i = 0; i < npin && rc == 0; i++) {
		int k = pin_index(p, paths[i]);

		if (k >= 0) {
			p->pins[k].files = walks[i].files;
			p->pins[k].bytes = walks[i].bytes;
		} else {
			rc = pin_push(p, paths[i], walks[i].files, walks[i].bytes);
			changed++;
		}
	}
	for (size_t i = 0; i < nunpin; i++) {
		int k = pin_index(p, paths[npin + i]);

		if (k < 0)
			continue;
		free(p->pins[k].path);
		memmove(&p->pins[k], &p->pins[k + 1],
			(p->npins - (size_t)k - 1) * sizeof(*p->pins));
		p->npins--;
		changed++;
	}
	for (size_t i = 0; i < nex && rc >= 0; i++)
		if ((rc = hy_rules_add(&p->mine, HY_RULE_EXCLUDE, ex[i])) > 0)
			changed++;
	for (size_t i = 0; i < ninc; i++)
		changed += hy_rules_remove(&p->mine, HY_RULE_EXCLUDE, inc[i]);
	if (rc >= 0)
		rc = rebuild(p);
	pthread_rwlock_unlock(&p->lock);
	if (rc < 0) {
		snprintf(why, why_size,
			 "out of memory: the change is stored, and in force from the "
			 "next mount");
		goto out;
	}
	/* the files it names, now: the pinned and unpinned trees, and with a
	 * changed exclude every file the database knows */
	{
		struct hy_rules now = {0};

		pthread_rwlock_rdlock(&p->lock);
		rc = hy_rules_copy(&now, &p->rules);
		pthread_rwlock_unlock(&p->lock);
		for (size_t i = 0; i < npin && rc == 0; i++)
			rc = apply_walked(fs, &now, &walks[i]);
		for (size_t i = 0; i < nunpin && rc == 0; i++) {
			struct walked w = {0};
			char ignored[256];

			if (walk(fs, paths[npin + i], &w, ignored, sizeof(ignored)) == 0)
				rc = apply_walked(fs, &now, &w);
			walked_free(&w);
		}
		if (rc == 0 && (nex || ninc))
			rc = apply_known(fs, db, &now);
		hy_rules_clear(&now);
		if (rc < 0)
			hy_log(LOG_WARNING,
			       "pins: the rules changed, but not every file could be told (%s); "
			       "the "
			       "others follow at their next open",
			       strerror(-rc));
	}
	if (changed)
		hy_log(LOG_NOTICE, "pins: %d rule%s changed by hybridctl", changed,
		       changed == 1 ? "" : "s");
	result = hy_fs_pins_status(fs);
	if (result)
		json_object_object_add(result, "changed", json_object_new_int(changed));
	else
		snprintf(why, why_size, "out of memory");
out:
	if (db && sqlite3_close(db) != SQLITE_OK)
		hy_log(LOG_WARNING, "pins: closing the state database: %s", sqlite3_errmsg(db));
	for (size_t i = 0; walks && i < npin; i++)
		walked_free(&walks[i]);
	free(walks);
	free(paths);
	free(pin);
	free(unpin);
	free(ex);
	free(inc);
	return result;
}
