/*
 * main.c - the hybridfs daemon: `hybridfs BACKING MOUNTPOINT [-o OPTIONS]`,
 * also installed as mount.hybridfs for mount(8) and /etc/fstab.
 *
 * Exit status: 0 after a clean unmount, 2 for a bad command line (unknown or
 * malformed option, missing or unusable directory), 1 for anything else
 * (state folder or database unusable, mount refused by the kernel).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fuse_lowlevel.h>
#include <json-c/json.h>
#include <linux/openat2.h>
#include <sqlite3.h>

#include "fs_internal.h"
#include "hybridfs/bopt.h"
#include "hybridfs/borg.h"
#include "hybridfs/cache_store.h"
#include "hybridfs/control.h"
#include "hybridfs/control_server.h"
#include "hybridfs/device.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/emuvfs.h"
#include "hybridfs/engine.h"
#include "hybridfs/fault.h"
#include "hybridfs/inode.h"
#include "hybridfs/profiler.h"
#include "hybridfs/reca.h"
#include "hybridfs/log.h"
#include "hybridfs/map_journal.h"
#include "hybridfs/ondisk.h"
#include "hybridfs/options.h"
#include "hybridfs/runtime.h"
#include "hybridfs/state.h"

/* Descriptors kept for the open files of the mount's users (and SQLite,
 * libevent, the device): the rest may cache directory descriptors. */
#define HY_FD_HEADROOM 1024
/* What the daemon itself holds open at most, whatever the limit: three
 * SQLite connections (database, WAL, shared memory each), the BOPT and its
 * journal, the control socket and its event loop, /dev/fuse, stdio. */
#define HY_FD_OWN 24

static size_t raise_fd_limit(void)
{
	struct rlimit lim;

	if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
		return 1024;
	if (lim.rlim_cur < lim.rlim_max) {
		lim.rlim_cur = lim.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &lim) < 0)
			hy_log(LOG_WARNING, "cannot raise the open-file limit to %llu: %s",
			       (unsigned long long)lim.rlim_max, strerror(errno));
		getrlimit(RLIMIT_NOFILE, &lim);
	}
	if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > (1u << 20))
		lim.rlim_cur = 1u << 20;
	if (lim.rlim_cur <= 2 * HY_FD_HEADROOM)
		return lim.rlim_cur > 4 * HY_FD_OWN ? lim.rlim_cur / 2 - HY_FD_OWN / 2
						    : lim.rlim_cur / 4;
	return (lim.rlim_cur - HY_FD_HEADROOM) / 2;
}

/*
 * The state folder, opened once. The backing folder usually belongs to the
 * mounting user, but when root mounts it, the folder's owner can rename
 * BACKING/.hybridfs away and put a symbolic link to a root-only folder in
 * its place between two of root's path lookups; every file made by path
 * (the database and SQLite's -wal and -shm, the store, the BOPT, the
 * socket) would then be made in that folder. So the folder is opened once,
 * without following a link at any point of its path, checked on that
 * descriptor, and every state file is reached through "/proc/self/fd/N/"
 * (state_at), which the kernel resolves to the descriptor's folder,
 * wherever it is and whatever lies at its path by then.
 */
static int state_fd = -1;
static char state_at[64]; /* "/proc/self/fd/N": the folder's files hang below */
static char state_open_at[72];
static bool state_made;	      /* this mount attempt made the folder */
static int state_parent = -1; /* ... in this folder, */
static char *state_name;      /* ... by this name */

/* SQLite turns a file name into a full path by resolving every symbolic
 * link in it: "/proc/self/fd/N" would become the folder's path again, and
 * the database, its -wal and its -shm would be opened by that path. This
 * VFS, the daemon's default, is the system's with names below
 * /proc/self/fd/ left as they are (they are absolute already). */
static sqlite3_vfs state_vfs;
static sqlite3_vfs *system_vfs;

static int state_vfs_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out)
{
	(void)vfs;
	if (strncmp(name, "/proc/self/fd/", 14) != 0)
		return system_vfs->xFullPathname(system_vfs, name, size, out);
	if (strlen(name) >= (size_t)size)
		return SQLITE_CANTOPEN;
	strcpy(out, name);
	return SQLITE_OK;
}

static int state_vfs_install(char *why, size_t why_size)
{
	int rc;

	system_vfs = sqlite3_vfs_find(NULL);
	if (!system_vfs) {
		snprintf(why, why_size, "state: SQLite has no file system layer");
		return -ENOSYS;
	}
	state_vfs = *system_vfs;
	state_vfs.zName = "hybridfs-fd";
	state_vfs.xFullPathname = state_vfs_full_pathname;
	rc = sqlite3_vfs_register(&state_vfs, 1);
	if (rc != SQLITE_OK) {
		snprintf(why, why_size, "state: cannot set up SQLite's file layer: %s",
			 sqlite3_errstr(rc));
		return -ENOMEM;
	}
	return 0;
}

/* Opens @path's folder, no component of it a symbolic link (the path was
 * resolved by hy_options_check(): a link in it now was put there since).
 * Kernels without openat2 (before 5.6) check the last component only. */
static int open_parent(const char *path, char *why, size_t why_size)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS,
	};
	long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return (int)fd;
	if (errno == ELOOP)
		snprintf(why, why_size,
			 "\"%s\" has become a symbolic link or goes through one since it was "
			 "resolved: refusing to follow it",
			 path);
	else
		snprintf(why, why_size, "\"%s\": %s", path, strerror(errno));
	return -errno;
}

/* Makes the state folder if it is missing (mode 0700), opens it, and
 * checks it on the descriptor: a folder (not a symbolic link: a link's
 * target may be anyone's), the mounting user's, private. Sets state_fd,
 * state_at and state_made. */
static int open_state_dir(const char *dir, char *why, size_t why_size)
{
	char *copy = strdup(dir), *slash, msg[512];
	const char *name;
	struct stat st;
	int parent, fd, err;

	if (!copy)
		return -ENOMEM;
	slash = strrchr(copy, '/');
	if (!slash || !slash[1]) {
		snprintf(why, why_size, "state folder \"%s\": not an absolute path of a folder",
			 dir);
		free(copy);
		return -EINVAL;
	}
	*slash = '\0';
	name = slash + 1;
	parent = open_parent(slash == copy ? "/" : copy, msg, sizeof(msg));
	if (parent < 0) {
		snprintf(why, why_size, "state folder \"%s\": %s", dir, msg);
		free(copy);
		return parent;
	}
	if (mkdirat(parent, name, 0700) == 0) {
		state_made = true;
		state_name = strdup(name);
		if (state_name) {
			state_parent = parent;
			parent = -1;
		}
	} else if (errno != EEXIST) {
		err = errno;
		snprintf(why, why_size, "state folder \"%s\": cannot create it: %s", dir,
			 strerror(err));
		goto fail;
	}
	fd = openat(state_parent >= 0 ? state_parent : parent, name,
		    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (fstatat(state_parent >= 0 ? state_parent : parent, name, &st,
			    AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			snprintf(why, why_size,
				 "state folder \"%s\" is a symbolic link: refusing to follow it "
				 "(its target may be anyone's); name the folder itself with "
				 "state=DIR",
				 dir);
		else
			snprintf(why, why_size, "state folder \"%s\": %s", dir,
				 err == ENOTDIR ? "not a directory" : strerror(err));
		goto fail;
	}
	if (parent >= 0)
		close(parent);
	parent = -1;
	snprintf(state_at, sizeof(state_at), "/proc/self/fd/%d", fd);
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		err = ENOTDIR;
		snprintf(why, why_size, "state folder \"%s\": not a directory", dir);
		close(fd);
		goto fail;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, why_size,
			 "state folder \"%s\" belongs to uid %u, not to the mounting user (uid %u)",
			 dir, (unsigned)st.st_uid, (unsigned)geteuid());
		close(fd);
		err = EPERM;
		goto fail;
	}
	/* chmod of the /proc name changes the descriptor's folder (an O_PATH
	 * descriptor takes no fchmod) */
	if ((st.st_mode & 0077) && chmod(state_at, 0700) < 0) {
		err = errno;
		snprintf(why, why_size, "state folder \"%s\": cannot make it private: %s", dir,
			 strerror(err));
		close(fd);
		goto fail;
	}
	state_fd = fd;
	free(copy);
	return 0;
fail:
	if (parent >= 0)
		close(parent);
	state_at[0] = '\0';
	free(copy);
	return -err;
}

/*
 * What this mount attempt made, removed again when it fails before it is
 * ready: a failed mount left the database and the preallocated BOPT and
 * store (257 MiB) behind. Only files that were not there when the
 * attempt began go (the state folder's, through its descriptor, and a
 * regular file made at bopt= or cache=); a store, BOPT or database that
 * existed is never touched, and nothing once the mount has been in use
 * (its files may hold dirty data then). The state folder goes too when
 * this attempt made it and it is empty again (and still a folder: a
 * link put at its name, or a non-empty folder, stays).
 */
static const char *const state_files[] = {
	HY_STATE_DB_NAME,    HY_STATE_DB_NAME "-wal", HY_STATE_DB_NAME "-shm", "bopt",
	HY_MAP_JOURNAL_NAME, HY_OPTIONS_CACHE_NAME,   HY_CONTROL_SOCKET,
};
#define N_STATE_FILES (sizeof(state_files) / sizeof(state_files[0]))
static bool state_file_new[N_STATE_FILES];
static char *named_new[2]; /* bopt=, cache= paths where nothing was */

static void note_named(const char *spec, bool bopt, char **out)
{
	char path[4096], why[512];
	struct stat st;
	int rc;

	if (!spec || strcmp(spec, "none") == 0)
		return;
	rc = bopt ? hy_bopt_resolve(spec, path, sizeof(path), why, sizeof(why))
		  : hy_cache_store_resolve(spec, path, sizeof(path), why, sizeof(why));
	if (rc == 0 && lstat(path, &st) < 0 && errno == ENOENT)
		*out = strdup(path);
}

static void note_new_files(const struct hy_options *opts)
{
	struct stat st;

	for (size_t i = 0; i < N_STATE_FILES; i++)
		state_file_new[i] =
			fstatat(state_fd, state_files[i], &st, AT_SYMLINK_NOFOLLOW) < 0 &&
			errno == ENOENT;
	note_named(opts->bopt, true, &named_new[0]);
	note_named(opts->cache, false, &named_new[1]);
}

static void remove_new_files(const char *state_dir)
{
	struct stat st;

	for (size_t i = 0; state_fd >= 0 && i < N_STATE_FILES; i++)
		if (state_file_new[i] && unlinkat(state_fd, state_files[i], 0) < 0 &&
		    errno != ENOENT)
			hy_log(LOG_WARNING,
			       "cannot remove \"%s/%s\" that the failed mount made: %s", state_dir,
			       state_files[i], strerror(errno));
	for (size_t i = 0; i < 2; i++) {
		/* a device that appeared meanwhile is not ours to remove */
		if (named_new[i] && lstat(named_new[i], &st) == 0 && S_ISREG(st.st_mode) &&
		    unlink(named_new[i]) < 0)
			hy_log(LOG_WARNING, "cannot remove \"%s\" that the failed mount made: %s",
			       named_new[i], strerror(errno));
		free(named_new[i]);
		named_new[i] = NULL;
	}
	if (state_made && state_parent >= 0 &&
	    unlinkat(state_parent, state_name, AT_REMOVEDIR) < 0 && errno != ENOTEMPTY &&
	    errno != EEXIST && errno != ENOENT && errno != ENOTDIR)
		hy_log(LOG_WARNING,
		       "cannot remove the state folder \"%s\" that the failed mount made: %s",
		       state_dir, strerror(errno));
}

/* Lets hybridctl find this mount from its mountpoint; a mount that cannot
 * be registered still works, hybridctl just cannot see it. */
static bool register_mount(const struct hy_options *opts, const struct hy_state *state)
{
	struct hy_runtime_entry entry;
	char why[512];

	memset(&entry, 0, sizeof(entry));
	snprintf(entry.uuid, sizeof(entry.uuid), "%s", state->uuid);
	snprintf(entry.mountpoint, sizeof(entry.mountpoint), "%s", opts->mountpoint_real);
	snprintf(entry.backing, sizeof(entry.backing), "%s", opts->backing_real);
	snprintf(entry.state_dir, sizeof(entry.state_dir), "%s", opts->state_dir);
	entry.pid = getpid();
	entry.started = (int64_t)time(NULL);
	if (hy_runtime_register(&entry, why, sizeof(why)) < 0) {
		hy_log(LOG_WARNING, "hybridctl will not see this mount: %s", why);
		return false;
	}
	return true;
}

/* Records waiting to be written, at most: about a second of a busy
 * workload (64 B each, 4 MiB). */
#define HY_PROFILER_RING 65536

static struct json_object *status_handler(void *ctx)
{
	return hy_fs_status(ctx);
}

/* What the reconfigurator yields to: requests served by the mount. */
static uint64_t activity(void *ctx)
{
	struct hy_fs *fs = ctx;

	return atomic_load_explicit(&fs->ops[HY_OP_READ], memory_order_relaxed) +
	       atomic_load_explicit(&fs->ops[HY_OP_WRITE], memory_order_relaxed) +
	       atomic_load_explicit(&fs->ops[HY_OP_LOOKUP], memory_order_relaxed);
}

/* BORG: the BOPT, the map and the reconfigurator. Needs the profiler's
 * file ids. The default BOPT is left out (with a warning) when it cannot be
 * made; one the user asked for fails the mount. */
/* The disk model of emulate=KIND[:NAME=VALUE...] (devmodel.h). */
static uint64_t emulation_capacity;
static uint64_t emulation_buffer; /* an SMR model's persistent buffer: PORE's period */

static int emulation_new(const char *spec, struct hy_device_emulation **out, char *why,
			 size_t why_size)
{
	struct hy_devmodel_params params;
	char msg[256];
	int rc = hy_devmodel_parse_spec(spec, &params, msg, sizeof(msg));

	if (rc == 0)
		rc = hy_device_emulation_new(&params, out, msg, sizeof(msg));
	if (rc < 0)
		snprintf(why, why_size, "option \"emulate=%s\": %s", spec, msg);
	else
		emulation_capacity = params.capacity;
	if (rc == 0 && params.kind == HY_DEVMODEL_SMR)
		emulation_buffer = params.buffer_bytes;
	return rc;
}

/* After a crash, the default store and BOPT may hold data written through
 * the mount and not home yet: only a mount that opens them writes it home,
 * and reads it meanwhile. A mount that leaves them out (profile=off, or a
 * profiler that failed; cache=none; bopt=none) would serve the older home
 * copies, and the next mount with them would write that older dirty data
 * home over what was written meanwhile (damaged.sh: dirty-profile-off).
 * Refused, saying why and what to do. A store or BOPT that cannot be
 * opened is not looked into: leaving a damaged store out is the way the
 * refusal of one offers. */
static int check_left_out(const struct hy_options *opts, const struct hy_fs *fs,
			  struct hy_state *state, char *why, size_t why_size)
{
	bool cache_out = !fs->profiler || (opts->cache && strcmp(opts->cache, "none") == 0);
	bool bopt_out = !fs->profiler || (opts->bopt && strcmp(opts->bopt, "none") == 0);
	const char *how = !fs->profiler ? "without the profiler" : "with cache=none or bopt=none";
	char path[4096];
	uint64_t dirty = 0;

	snprintf(path, sizeof(path), "%s/%s", opts->state_at, HY_OPTIONS_CACHE_NAME);
	if (cache_out && access(path, F_OK) == 0)
		dirty = hy_cache_store_left_dirty(path, state->uuid);
	if (dirty) {
		snprintf(
			why, why_size,
			"cache: \"%.600s\" holds %" PRIu64
			" dirty lines that a crash left, which only a "
			"mount that uses the store writes home; a mount %s would serve older data: "
			"mount once with profile=on and the cache, then as you like",
			path, dirty, how);
		return -EBUSY;
	}
	snprintf(path, sizeof(path), "%s/bopt", opts->state_at);
	if (bopt_out && access(path, F_OK) == 0)
		dirty = hy_borg_left_dirty(opts->state_at, state->uuid, state->db);
	if (dirty) {
		snprintf(why, why_size,
			 "bopt: \"%.600s\" holds %" PRIu64
			 " blocks written through the mount and not "
			 "home yet, which only a mount that uses it writes home; a mount %s would "
			 "serve older data: mount once with profile=on and the BOPT, then as you "
			 "like",
			 path, dirty, how);
		return -EBUSY;
	}
	return 0;
}

/* bopt_force: the block device at @path (resolved from bopt=) becomes
 * this mount's BOPT, unless it is one already: the reconfigurator then
 * opens it as its own. A new generation, as a BOPT the reconfigurator
 * makes gets, so that no saved map of an older one applies. A regular file
 * is never written over (hy_bopt_create: a mistyped path must not cost a
 * user's file), and a path with nothing there is left to the
 * reconfigurator, which makes it without force. */
static int force_bopt(const char *path, const char *uuid)
{
	struct hy_bopt *bopt = NULL;
	struct timespec ts;
	struct stat st;
	char why[1024];
	int rc;

	if (stat(path, &st) < 0 || !S_ISBLK(st.st_mode))
		return 0;
	if (hy_bopt_open(path, uuid, &bopt, why, sizeof(why)) == 0) {
		hy_bopt_close(bopt);
		return 0;
	}
	hy_log(LOG_NOTICE, "bopt: making a BOPT on \"%s\" over what it held (bopt_force)", path);
	rc = hy_bopt_create(path, uuid, 0, 0, true, why, sizeof(why));
	if (rc == 0)
		rc = hy_bopt_open(path, uuid, &bopt, why, sizeof(why));
	if (rc == 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		rc = hy_bopt_set_generation(bopt, (uint64_t)ts.tv_sec * 1000000000u +
							  (uint64_t)ts.tv_nsec);
		if (rc < 0)
			snprintf(why, sizeof(why),
				 "bopt: \"%.900s\": cannot write its generation: %s", path,
				 strerror(-rc));
		hy_bopt_close(bopt);
	}
	if (rc < 0)
		hy_log(LOG_ERR, "%s", why);
	return rc;
}

static int open_borg(const struct hy_options *opts, struct hy_fs *fs, const struct hy_state *state)
{
	struct hy_borg_config config = {
		.state_dir = opts->state_at,
		.db_path = state->db_path,
		.uuid = state->uuid,
		.backing = opts->backing_real,
		.root_fd = fs->inodes->root->fd,
		.bopt_spec = opts->bopt,
		.bopt_given = opts->bopt_given || opts->bopt_size_given,
		.bopt_size = opts->bopt_size,
		.rate = opts->reorg_rate,
		.bopt_writes = opts->bopt_writes,
		.readahead = opts->bopt_readahead,
		.engine = fs->engine,
		.activity = activity,
		.activity_ctx = fs,
	};
	char why[1024], path[4096], fstype[16];
	bool existed, named_dev, named_file;
	struct stat st;
	int rc;

	if (opts->bopt && strcmp(opts->bopt, "none") == 0)
		return 0;
	if (!fs->profiler) {
		if (config.bopt_given)
			hy_log(LOG_WARNING, "bopt: left out: BORG needs the profiler (profile=on)");
		return 0;
	}
	/* A BOPT named by the user that is not there is made, but not in /dev
	 * nor on RAM; one on RAM that exists takes no writes (they would be
	 * lost at a reboot), only copies of home blocks. */
	if (opts->bopt) {
		char msg[512];

		rc = hy_bopt_resolve(opts->bopt, path, sizeof(path), msg, sizeof(msg));
		if (rc == 0)
			rc = hy_ondisk_check_new(path, msg, sizeof(msg));
		if (rc < 0) {
			hy_log(LOG_ERR, "bopt=%s: %s", opts->bopt, msg);
			return rc;
		}
	} else {
		snprintf(path, sizeof(path), "%s/bopt", opts->state_at);
	}
	named_dev = opts->bopt && stat(path, &st) == 0 && S_ISBLK(st.st_mode);
	named_file = opts->bopt && !named_dev && lstat(path, &st) == 0 && S_ISREG(st.st_mode);
	if (opts->bopt && opts->bopt_force) {
		rc = force_bopt(path, state->uuid);
		if (rc < 0)
			return rc;
	} else if (opts->bopt_force) {
		hy_log(LOG_WARNING, "bopt_force: ignored: it applies to a BOPT named by bopt=");
	}
	if (config.bopt_writes && hy_ondisk_on_ram(path, fstype, sizeof(fstype))) {
		hy_log(LOG_NOTICE,
		       "bopt: \"%s\" lies on a RAM filesystem (%s): writes to relocated blocks go "
		       "home, not into it (bopt_writes=off)",
		       path, fstype);
		config.bopt_writes = false;
	}
	/* Only a default BOPT that is not there yet may be left out: one that
	 * exists may hold blocks written through the mount and not home yet
	 * (its map says where), and a mount without it would read those
	 * blocks' older home copies (damaged.sh: bopt-other, db-map). */
	snprintf(path, sizeof(path), "%s/bopt", opts->state_at);
	existed = !opts->bopt && lstat(path, &st) == 0;
	/* BORG lays hot blocks out in access order to save seeks: a disk that
	 * does not spin has none to save, and would only pay for the copies
	 * (issue 18: never make a user's disk slower). A named BOPT, one that
	 * exists, or bopt_on_ssd keep it; a disk that cannot be asked too. */
	if (!opts->bopt && !existed && !opts->bopt_on_ssd &&
	    hy_ondisk_rotational(opts->backing_real) == 0) {
		hy_log(LOG_NOTICE,
		       "bopt: none: the backing directory's disk does not spin (queue/rotational "
		       "0), so BORG's layout would save no seeks; mount with -o bopt_on_ssd to "
		       "have one anyway");
		return 0;
	}
	rc = hy_borg_open(&config, &fs->borg, why, sizeof(why));
	if (rc == 0)
		return 0;
	if (config.bopt_given || existed) {
		/* the way out of a refusal to write over what is there (a
		 * filesystem or other signature, another mount's BOPT) */
		if ((rc == -EEXIST || rc == -EUCLEAN) && named_dev && !opts->bopt_force)
			hy_log(LOG_ERR,
			       "%s; mount with -o bopt_force to make a BOPT there anyway (what it "
			       "holds is lost)",
			       why);
		else if ((rc == -EEXIST || rc == -EUCLEAN) && named_file)
			hy_log(LOG_ERR,
			       "%s; a file is never written over, even with bopt_force: remove it "
			       "or name another path, and a BOPT is made there",
			       why);
		else
			hy_log(LOG_ERR, "%s", why);
		return rc;
	}
	hy_log(LOG_WARNING, "%s; mounting without a BOPT (reorganize is off)", why);
	return 0;
}

/* explain names a file by its path in the mount. hy_fs_explain() refuses
 * absolute paths and ".."; a symlink in the mount pointing out of it
 * ("out" -> /etc, then "out/passwd") would still lead its lookups outside.
 * The path is resolved beneath the backing root first (openat2 with
 * RESOLVE_BENEATH; the last component not followed, as explain does), and
 * one that leaves it is refused (issue 8: a control request naming a path
 * outside the mount is refused). A kernel without openat2 (before 5.6)
 * keeps the handler's own checks. */
static struct json_object *explain_handler(void *ctx, struct json_object *req, char *why,
					   size_t why_size)
{
	const struct hy_fs_explain_ctx *ec = ctx;
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	struct json_object *v;
	const char *path;
	long fd;

	if (json_object_object_get_ex(req, "path", &v) &&
	    json_object_is_type(v, json_type_string) && *(path = json_object_get_string(v)) &&
	    *path != '/') {
		fd = syscall(SYS_openat2, ec->root_fd, path, &how, sizeof(how));
		if (fd >= 0) {
			close((int)fd);
		} else if (errno == EXDEV || errno == ELOOP) {
			snprintf(why, why_size, "\"%s\" is not a path inside the mount", path);
			return NULL;
		}
	}
	return hy_fs_explain(ctx, req, why, why_size);
}

static int sync_handler(void *ctx)
{
	struct hy_fs *fs = ctx;

	return fs->profiler ? hy_profiler_sync(fs->profiler) : -ENOSYS;
}

/* Becoming a daemon, readiness included: the parent returns only once the
 * child has mounted and its control socket listens (or has failed, with
 * the child's exit status), so that a script, or mount(8), can use the
 * mount and hybridctl at once. libfuse's fuse_daemonize() returns before
 * the child's threads could start. */
static int ready_fd = -1;

static int daemon_start(void)
{
	int fds[2], status;
	unsigned char byte;
	pid_t pid;
	ssize_t n;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		return -err;
	}
	if (pid > 0) {
		close(fds[1]);
		do
			n = read(fds[0], &byte, 1);
		while (n < 0 && errno == EINTR);
		if (n == 1)
			_exit(byte);
		/* the child died without a word */
		if (waitpid(pid, &status, 0) == pid && WIFEXITED(status))
			_exit(WEXITSTATUS(status) ? WEXITSTATUS(status) : 1);
		_exit(1);
	}
	close(fds[0]);
	ready_fd = fds[1];
	if (setsid() < 0)
		hy_log(LOG_WARNING, "setsid: %s", strerror(errno));
	return 0;
}

/* Tells the waiting parent @status; the first call only. With @detach the
 * daemon then lets go of the terminal. */
static void daemon_ready(int status, bool detach)
{
	unsigned char byte = (unsigned char)status;
	int null_fd;

	if (ready_fd < 0)
		return;
	if (write(ready_fd, &byte, 1) != 1)
		hy_log(LOG_WARNING, "cannot tell the parent process we are ready: %s",
		       strerror(errno));
	close(ready_fd);
	ready_fd = -1;
	if (!detach)
		return;
	if (chdir("/") < 0)
		hy_log(LOG_WARNING, "chdir /: %s", strerror(errno));
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd >= 0) {
		dup2(null_fd, STDIN_FILENO);
		dup2(null_fd, STDOUT_FILENO);
		dup2(null_fd, STDERR_FILENO);
		if (null_fd > STDERR_FILENO)
			close(null_fd);
	}
}

static int usage_error(const char *program, const char *why)
{
	fprintf(stderr, "%s: %s\n", program, why);
	fprintf(stderr, "Try '%s --help' for more information.\n", program);
	return 2;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *loop_config = NULL;
	struct fuse_session *se = NULL;
	struct hy_state *state = NULL;
	struct hy_options opts;
	struct hy_fs fs;
	char why[1024] = "";
	const char *program;
	struct hy_control_server *control = NULL;
	struct hy_profiler *profiler = NULL;
	struct hy_reca *reca = NULL;
	struct hy_device_emulation *emulation = NULL;
	int root_fd = -1, rc, status = 1;
	bool registered = false, ready = false;
	size_t fd_cap;

	memset(&fs, 0, sizeof(fs));
	rc = hy_options_parse(argc, argv, &opts, why, sizeof(why));
	program = opts.program ? opts.program : "hybridfs";
	hy_log_init(HY_LOG_STDERR, LOG_NOTICE, program);
	if (rc) {
		status = usage_error(program, rc == -ENOMEM ? "out of memory" : why);
		goto out;
	}
	if (opts.show_help) {
		hy_options_usage(program, stdout);
		status = 0;
		goto out;
	}
	if (opts.show_version) {
		printf("hybridfs %s (libfuse %s)\n", PACKAGE_VERSION, fuse_pkgversion());
		status = 0;
		goto out;
	}
	if (opts.debug)
		hy_log_init(HY_LOG_STDERR, LOG_DEBUG, program);
	rc = hy_options_check(&opts, why, sizeof(why));
	/* fault injection (tests): read once, before any device or thread;
	 * a bad spec refuses to start like a bad option */
	if (rc == 0)
		rc = hy_fault_init_env(why, sizeof(why));
	if (rc == 0 && opts.emulate)
		rc = emulation_new(opts.emulate, &emulation, why, sizeof(why));
	if (rc) {
		status = usage_error(program, rc == -ENOMEM ? "out of memory" : why);
		goto out;
	}

	rc = state_vfs_install(why, sizeof(why));
	/* the databases lie on the emulated disk too: their I/O is charged */
	if (rc == 0 && emulation)
		rc = hy_emuvfs_install(emulation, why, sizeof(why));
	if (rc == 0)
		rc = open_state_dir(opts.state_dir, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "%s: %s\n", program, why);
		goto out;
	}
	opts.state_at = state_at;
	hy_log_set_alias(state_at, opts.state_dir);
	note_new_files(&opts);
	/* with a slash: hy_state_open() checks the folder with lstat(), which
	 * follows the /proc link only then */
	snprintf(state_open_at, sizeof(state_open_at), "%s/", state_at);

	/* Checked now, while errors still reach the terminal; opened again
	 * after fork, since a SQLite connection must not cross it. */
	rc = hy_state_open(state_open_at, opts.backing_real, false, &state, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "%s: %s\n", program, hy_log_unalias(why, sizeof(why)));
		goto out;
	}
	hy_state_close(state);
	state = NULL;
	/* Two daemons on one state folder would both write its log. */
	if (hy_control_server_check(state_at, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: %s\n", program, hy_log_unalias(why, sizeof(why)));
		goto out;
	}
	if (opts.fake) {
		status = 0;
		goto out;
	}

	if (!opts.foreground) {
		rc = daemon_start();
		if (rc < 0) {
			fprintf(stderr, "%s: cannot become a daemon: %s\n", program, strerror(-rc));
			goto out;
		}
	}
	fd_cap = raise_fd_limit();
	root_fd = open(opts.backing_real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		fprintf(stderr, "%s: backing directory \"%s\": %s\n", program, opts.backing,
			strerror(errno));
		goto out;
	}
	rc = hy_fs_init(&fs, root_fd, fd_cap, opts.state_dir);
	root_fd = -1; /* the inode table owns it, or closed it */
	if (rc) {
		fprintf(stderr, "%s: cannot set up: %s\n", program, strerror(-rc));
		goto out;
	}
	fs.attr_timeout = opts.attr_timeout;
	fs.entry_timeout = opts.entry_timeout;
	fs.negative_timeout = opts.negative_timeout;
	fs.writeback_cache = opts.writeback_cache && !opts.read_only;
	fs.posix_acl = opts.allow_other;
	if (fs.writeback_cache)
		hy_log(LOG_NOTICE,
		       "writeback_cache=on: the kernel keeps file sizes and times itself, so "
		       "changes made in the backing folder while mounted may not be seen; new "
		       "files are made with MKNOD and OPEN (hybridfs(8))");

	if (hy_options_fuse_args(&opts, &args)) {
		fprintf(stderr, "%s: out of memory\n", program);
		goto out;
	}
	se = fuse_session_new(&args, hy_fs_umask_operations(), sizeof(struct fuse_lowlevel_ops),
			      &fs);
	if (!se) {
		fprintf(stderr, "%s: libfuse refused the options\n", program);
		goto out;
	}
	/* A shell starts background jobs with SIGINT ignored, and libfuse only
	 * takes over signals left at their default: SIGINT and SIGTERM must
	 * unmount however the daemon was started. (SIGHUP is left as it is, so
	 * nohup keeps working.) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, opts.mountpoint_real) != 0) {
		fprintf(stderr, "%s: cannot mount on \"%s\"\n", program, opts.mountpoint);
		goto out_signals;
	}
	rc = hy_state_open(state_open_at, opts.backing_real, false, &state, why, sizeof(why));
	if (rc) {
		hy_log(LOG_ERR, "%s", why);
		goto out_unmount;
	}
	registered = register_mount(&opts, state);
	fs.mountpoint = opts.mountpoint_real;
	fs.backing_path = opts.backing_real;
	fs.state_dir = opts.state_dir;
	fs.db_path = state->db_path;
	fs.uuid = state->uuid;
	fs.started = (int64_t)time(NULL);
	/* No FUSE worker runs before the session loop: fs may still change. */
	if (opts.profile) {
		/* ReCA's process table: the engine asks it per request, the
		 * profiler logs the processes it makes */
		struct hy_reca_config rcfg = {.keying = HY_RECA_PROCESSES,
					      .no_classify = !opts.reca};
		struct hy_profiler_config config = {
			.db_path = state->db_path,
			.ring_capacity = HY_PROFILER_RING,
			.max_age_s = opts.profile_max_age_s,
			.max_rows = opts.profile_max_rows,
		};

		/* The files stay usable without their log. */
		if (hy_reca_new(&rcfg, &reca) < 0)
			snprintf(why, sizeof(why), "reca: out of memory");
		config.reca = reca;
		if (!reca || hy_profiler_new(&config, &profiler, why, sizeof(why)) < 0) {
			hy_log(LOG_ERR, "%s; going on with profile=off", why);
			hy_reca_free(reca);
			reca = NULL;
		}
		fs.profiler = profiler;
		hy_engine_set_reca(fs.engine, reca);
	}
	/* ReCA's policy table: the defaults, with the changes stored by
	 * hybridctl policy set (a table that cannot be read is logged and
	 * the defaults rule: the files stay usable) */
	if (hy_fs_open_policy(&fs, state->db) < 0)
		hy_log(LOG_WARNING, "policy: out of memory; requests follow the mount's settings");
	/* the emulated disk holds the backing files and the BOPT; the cache
	 * store is the fast device it is not */
	if (emulation) {
		hy_device_set_emulation(fs.backing, emulation, -1);
		fs.emulation = emulation;
		fs.emulate = opts.emulate;
		fs.emulation_buffer = emulation_buffer;
	}
	if (check_left_out(&opts, &fs, state, why, sizeof(why)) < 0) {
		hy_log(LOG_ERR, "%s", why);
		goto out_unmount;
	}
	if (open_borg(&opts, &fs, state) < 0)
		goto out_unmount;
	if (emulation && hy_borg_bopt_device(fs.borg)) {
		struct stat st;
		int bfd = hy_borg_bopt_fd(fs.borg);
		/* a BOPT file is priced where its extents lie (its descriptor
		 * is the one the BOPT device reads); where the filesystem has no
		 * map, by its inode as the files are; a device of its own in the
		 * disk's second half */
		bool file = fstat(bfd, &st) == 0 && S_ISREG(st.st_mode);
		int64_t region =
			file ? (int64_t)((uint64_t)st.st_ino * HY_DEVICE_EMULATION_FILE_SPAN)
			     : (int64_t)(emulation_capacity / 2);

		hy_device_set_emulation(hy_borg_bopt_device(fs.borg), emulation, region);
		if (file)
			hy_device_set_emulation_fd(hy_borg_bopt_device(fs.borg), bfd);
	}
	/* after BORG: the cache's misses go through the map. A default store
	 * (neither cache nor cache_size given) that cannot be made for lack
	 * of room in the state folder is left out, as the default BOPT is;
	 * one that exists already may hold dirty lines, so it never is. */
	{
		char store[4096];
		bool store_new;
		int crc;

		snprintf(store, sizeof(store), "%s/%s", state_at, HY_OPTIONS_CACHE_NAME);
		store_new = !opts.cache_given && !opts.cache_size_given &&
			    access(store, F_OK) != 0 && errno == ENOENT;
		crc = hy_fs_open_cache(&fs, &opts);
		if (crc == -ENOSPC && store_new)
			hy_log(LOG_WARNING,
			       "cache: left out: no room for the default store in \"%s\"; "
			       "mounting without the SSD cache",
			       opts.state_dir);
		else if (crc < 0)
			goto out_unmount;
	}
	/* pins and excludes, after the cache (its share for pins) */
	if (fs.profiler && hy_fs_open_pins(&fs, &opts, state->db) < 0) {
		hy_log(LOG_ERR, "pins: out of memory");
		goto out_unmount;
	}
	{
		/* what each handler sees; they outlive the server, stopped
		 * before main returns */
		static struct hy_fs_flush_ctx flush_ctx;
		static struct hy_fs_explain_ctx explain_ctx;
		static struct hy_fs_policy_ctx policy_ctx;
		struct hy_control_handlers handlers = {
			.ctx = &fs,
			.status = status_handler,
			.sync = sync_handler,
			.reorganize = {fs.borg ? hy_fs_reorganize : NULL, fs.borg},
			.progress = {fs.borg ? hy_fs_progress : NULL, fs.borg},
			.explain = {fs.borg || fs.cache ? explain_handler : NULL, &explain_ctx},
			.flush = {fs.borg || fs.cache ? hy_fs_flush : NULL, &flush_ctx},
			.policy = {fs.profiler ? hy_fs_policy : NULL, &policy_ctx},
			.rules = {fs.pins ? hy_fs_rules : NULL, &fs},
		};

		flush_ctx = (struct hy_fs_flush_ctx){fs.cache, fs.borg};
		explain_ctx = (struct hy_fs_explain_ctx){
			fs.borg, fs.profiler ? hy_profiler_identity(fs.profiler) : NULL,
			fs.inodes->root->fd, fs.db_path, fs.cache};
		policy_ctx = (struct hy_fs_policy_ctx){reca, fs.db_path};
		if (hy_control_server_start(state_at, &handlers, &control, why, sizeof(why)) < 0)
			hy_log(LOG_WARNING, "%s; hybridctl cannot reach this mount", why);
	}

	/* Ready: the mount and the control socket are there. */
	ready = true;
	if (!opts.foreground) {
		daemon_ready(0, true);
		hy_log_init(HY_LOG_SYSLOG, opts.debug ? LOG_DEBUG : LOG_NOTICE, "hybridfs");
	}
	hy_log(LOG_NOTICE, "mounted \"%s\" on \"%s\" (state in \"%s\", mount %s)",
	       opts.backing_real, opts.mountpoint_real, opts.state_dir, state->uuid);

	/* The kernel has applied the caller's umask to every mode it sends;
	 * the daemon's own must not be applied on top. */
	umask(0);
	if (opts.single_threaded) {
		rc = fuse_session_loop(se);
	} else {
		loop_config = fuse_loop_cfg_create();
		if (!loop_config)
			goto out_unmount;
		fuse_loop_cfg_set_clone_fd(loop_config, 0);
		fuse_loop_cfg_set_max_threads(loop_config, opts.max_threads);
		fuse_loop_cfg_set_idle_threads(loop_config, opts.max_threads / 2 + 1);
		rc = fuse_session_loop_mt(se, loop_config);
	}
	status = rc < 0 ? 1 : 0;
	hy_log(LOG_NOTICE, "unmounting \"%s\"", opts.mountpoint_real);
out_unmount:
	hy_control_server_stop(control);
	control = NULL;
	/* no request is in flight: the loop has ended, or never ran */
	if (hy_fs_close_cache(&fs) < 0)
		status = 1;
	hy_fs_close_pins(&fs);
	hy_borg_close(fs.borg);
	fs.borg = NULL;
	if (registered && hy_runtime_unregister(state->uuid) < 0)
		hy_log(LOG_WARNING, "cannot remove the runtime file of mount %s", state->uuid);
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out:
	if (loop_config)
		fuse_loop_cfg_destroy(loop_config);
	hy_control_server_stop(control);
	if (hy_fs_close_cache(&fs) < 0)
		status = 1;
	hy_fs_close_pins(&fs);
	hy_borg_close(fs.borg);
	fs.borg = NULL;
	hy_fs_destroy(&fs);	    /* closes handles first: they hold profiler state */
	hy_profiler_free(profiler); /* drains the log into the database */
	hy_reca_free(reca);	    /* after the profiler's writer, which feeds it */
	hy_state_close(state);
	/* after every device and database that used it */
	hy_emuvfs_detach();
	hy_device_emulation_free(emulation);
	if (root_fd >= 0)
		close(root_fd);
	if (status && !ready && !opts.fake)
		remove_new_files(opts.state_dir);
	if (state_fd >= 0)
		close(state_fd);
	if (state_parent >= 0)
		close(state_parent);
	free(state_name);
	fuse_opt_free_args(&args);
	hy_options_free(&opts);
	daemon_ready(status ? status : 1, false); /* failed before it was ready */
	return status;
}
