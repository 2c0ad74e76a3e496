/*
 * main.c - the hybridfs daemon: `hybridfs BACKING MOUNTPOINT [-o OPTIONS]`,
 * also installed as mount.hybridfs for mount(8) and /etc/fstab.
 *
 * Exit status: 0 after a clean unmount, 2 for a bad command line (unknown or
 * malformed option, missing or unusable directory), 1 for anything else
 * (state folder or database unusable, mount refused by the kernel).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
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
#include "hybridfs/fuse_channel.h"
#include "hybridfs/inode.h"
#include "hybridfs/profiler.h"
#include "hybridfs/reca.h"
#include "hybridfs/log.h"
#include "hybridfs/map_journal.h"
#include "hybridfs/mount_name.h"
#include "hybridfs/ondisk.h"
#include "hybridfs/options.h"
#include "hybridfs/passthrough.h"
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
/* the folder of a default store on a faster disk (place_store), and
 * whether this attempt made it */
static bool fast_dir_made;
static char fast_dir[PATH_MAX];

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
	if (fast_dir_made && rmdir(fast_dir) < 0 && errno != ENOTEMPTY && errno != EEXIST)
		hy_log(LOG_WARNING, "cannot remove \"%s\" that the failed mount made: %s", fast_dir,
		       strerror(errno));
	fast_dir_made = false;
	if (state_made && state_parent >= 0 &&
	    unlinkat(state_parent, state_name, AT_REMOVEDIR) < 0 && errno != ENOTEMPTY &&
	    errno != EEXIST && errno != ENOENT && errno != ENOTDIR)
		hy_log(LOG_WARNING,
		       "cannot remove the state folder \"%s\" that the failed mount made: %s",
		       state_dir, strerror(errno));
}

/* ---- the default state folder, out of the tree ------------------------
 *
 * One folder per backing directory (hy_options_default_state), named by
 * the directory's real path. The database records which directory it is
 * (mount_info "backing_id": inode and birth time, which a rename keeps
 * and a new directory at the same path does not have), so that:
 * - a folder found at the name that was made for another directory (the
 *   one that was here was removed or moved away) is set aside as
 *   NAME.moved-SECONDS, never used for this one, and a notice says so;
 * - a directory that moved finds its folder again at its next mount: the
 *   state root is searched for the folder that records its identity, which
 *   is renamed to the new name (a notice says from where).
 */
static char *parents_made[16]; /* folders made for the default state folder */
static size_t n_parents_made;

static int backing_identity(const char *path, char *out, size_t size)
{
	struct statx stx;

	if (statx(AT_FDCWD, path, 0, STATX_INO | STATX_BTIME, &stx) < 0)
		return -errno;
	if (stx.stx_mask & STATX_BTIME)
		snprintf(out, size, "%llu:%lld", (unsigned long long)stx.stx_ino,
			 (long long)stx.stx_btime.tv_sec * 1000000000LL + stx.stx_btime.tv_nsec);
	else /* no birth time: the device number must do */
		snprintf(out, size, "%llu:0:%u:%u", (unsigned long long)stx.stx_ino,
			 stx.stx_dev_major, stx.stx_dev_minor);
	return 0;
}

/* The identity the database in @dir records, into @out ("" when none is). */
static void recorded_identity(const char *dir, char *out, size_t size)
{
	char path[PATH_MAX];
	sqlite3 *db = NULL;
	sqlite3_stmt *st;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, HY_STATE_DB_NAME);
	if (access(path, F_OK) != 0)
		return;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) ==
		    SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT value FROM mount_info WHERE key = 'backing_id'", -1, &st,
			       NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			snprintf(out, size, "%s", (const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
}

static void record_identity(struct hy_state *state, const char *id)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(state->db,
			       "INSERT OR REPLACE INTO mount_info(key, value) "
			       "VALUES ('backing_id', ?1)",
			       -1, &st, NULL) != SQLITE_OK) {
		hy_log(LOG_WARNING, "state: cannot record the backing directory's identity: %s",
		       sqlite3_errmsg(state->db));
		return;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		hy_log(LOG_WARNING, "state: cannot record the backing directory's identity: %s",
		       sqlite3_errmsg(state->db));
	sqlite3_finalize(st);
}

/* Where the default state folder of @opts is, following the directory's
 * identity as said above. */
static void follow_identity(const struct hy_options *opts, const char *id)
{
	char recorded[128], aside[PATH_MAX + 32], other[PATH_MAX];
	char *copy = strdup(opts->state_dir), *slash;
	struct dirent *d;
	DIR *root;

	if (!copy)
		return;
	recorded_identity(opts->state_dir, recorded, sizeof(recorded));
	if (recorded[0] && strcmp(recorded, id) != 0) {
		snprintf(aside, sizeof(aside), "%s.moved-%lld", opts->state_dir,
			 (long long)time(NULL));
		if (rename(opts->state_dir, aside) == 0)
			hy_log(LOG_NOTICE,
			       "state: \"%s\" was made for another directory that was at \"%s\" "
			       "(removed or moved away since): set aside as \"%s\"; this one "
			       "starts with new state",
			       opts->state_dir, opts->backing_real, aside);
		else
			hy_log(LOG_WARNING, "state: cannot set \"%s\" aside: %s", opts->state_dir,
			       strerror(errno));
	}
	if (access(opts->state_dir, F_OK) == 0 || !(slash = strrchr(copy, '/'))) {
		free(copy);
		return;
	}
	*slash = '\0';
	root = opendir(*copy ? copy : "/");
	while (root && (d = readdir(root))) {
		if (d->d_name[0] == '.' || strcmp(d->d_name, slash + 1) == 0)
			continue;
		snprintf(other, sizeof(other), "%s/%s", copy, d->d_name);
		recorded_identity(other, recorded, sizeof(recorded));
		if (strcmp(recorded, id) != 0)
			continue;
		if (rename(other, opts->state_dir) == 0)
			hy_log(LOG_NOTICE,
			       "state: the backing directory has moved to \"%s\": its state "
			       "follows it from \"%s\" to \"%s\"",
			       opts->backing_real, other, opts->state_dir);
		else
			hy_log(LOG_WARNING, "state: cannot move \"%s\" to \"%s\": %s", other,
			       opts->state_dir, strerror(errno));
		break;
	}
	if (root)
		closedir(root);
	free(copy);
}

/* Makes the folders above the default state folder that are missing
 * (~/.local/state, its hybridfs; /var/lib/hybridfs), private; a failed
 * mount removes them again while empty. */
static int make_state_parents(const char *dir, char *why, size_t why_size)
{
	char *copy = strdup(dir), *p;

	if (!copy)
		return -ENOMEM;
	for (p = strchr(copy + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(copy, 0700) == 0) {
			if (n_parents_made < sizeof(parents_made) / sizeof(parents_made[0]))
				parents_made[n_parents_made++] = strdup(copy);
		} else if (errno != EEXIST) {
			snprintf(why, why_size, "state folder \"%s\": cannot create \"%s\": %s",
				 dir, copy, strerror(errno));
			free(copy);
			return -errno;
		}
		*p = '/';
	}
	free(copy);
	return 0;
}

static void remove_state_parents(void)
{
	while (n_parents_made) {
		char *dir = parents_made[--n_parents_made];

		if (dir && rmdir(dir) < 0 && errno != ENOTEMPTY && errno != EEXIST &&
		    errno != ENOENT)
			hy_log(LOG_WARNING, "cannot remove \"%s\" that the failed mount made: %s",
			       dir, strerror(errno));
		free(dir);
	}
}

/* ---- the hidden folder in the backing directory: the BOPT's ----------
 *
 * BACKING/.hybridfs, reached through the root's descriptor (a mount in
 * place covers the path) and made only when a default BOPT is made, with
 * a .gitignore of "*" and a CACHEDIR.TAG (the Cache Directory Tagging
 * Specification's signature) so that git and backup tools skip it. When
 * the state folder itself is inside the backing directory (an older
 * mount's, or state= naming one there), it is the BOPT's folder, as before.
 */
static int hidden_fd = -1;
static char hidden_at[64];
static bool hidden_made;     /* this attempt made the folder ... */
static bool hidden_tags[2];  /* ... or these files in it */
static bool hidden_bopt_new; /* the default BOPT in it is this attempt's */
static const char *const hidden_tag_names[2] = {".gitignore", "CACHEDIR.TAG"};
static char backing_at[64];
static char hidden_shown[PATH_MAX + 16]; /* what the logs call hidden_at */

static int open_hidden(int root, bool make, char *why, size_t why_size)
{
	static const char *const text[2] = {
		"# hybridfs: BORG's optimized region (BOPT); not for git\n*\n",
		HY_CACHEDIR_TAG_SIGNATURE "\n# This folder holds hybridfs's BOPT, a copy of hot "
					  "blocks: backups may skip it.\n",
	};
	struct stat st;
	int fd;

	if (hidden_fd >= 0)
		return 0;
	if (make && mkdirat(root, HY_STATE_DIR_NAME, 0700) == 0)
		hidden_made = true;
	else if (make && errno != EEXIST)
		return hy_log_why(-errno, why, why_size, "bopt: cannot make \"%s/%s\": %s",
				  backing_at, HY_STATE_DIR_NAME, strerror(errno));
	fd = openat(root, HY_STATE_DIR_NAME, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hy_log_why(-errno, why, why_size, "bopt: \"%s\": %s", HY_STATE_DIR_NAME,
				  errno == ELOOP || errno == ENOTDIR
					  ? "not a folder (a symbolic link is not followed)"
					  : strerror(errno));
	/* a folder someone else put there is not for the daemon's BOPT */
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
		close(fd);
		return hy_log_why(-EPERM, why, why_size,
				  "bopt: \"%s\" in the backing directory belongs to uid %u, not to "
				  "the mounting user",
				  HY_STATE_DIR_NAME, (unsigned)st.st_uid);
	}
	hidden_fd = fd;
	snprintf(hidden_at, sizeof(hidden_at), "/proc/self/fd/%d", fd);
	hy_log_add_alias(hidden_at, hidden_shown);
	for (int i = 0; make && i < 2; i++) {
		char path[128];
		int tfd;

		snprintf(path, sizeof(path), "%s/%s", hidden_at, hidden_tag_names[i]);
		tfd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (tfd < 0)
			continue; /* there already, or cannot be: the BOPT works without */
		hidden_tags[i] = true;
		if (write(tfd, text[i], strlen(text[i])) != (ssize_t)strlen(text[i]))
			hy_log(LOG_WARNING, "bopt: cannot write \"%s/%s\": %s", HY_STATE_DIR_NAME,
			       hidden_tag_names[i], strerror(errno));
		close(tfd);
	}
	return 0;
}

/* What open_hidden() made, when the BOPT was not made after all (left out
 * or the mount failed): a folder made that holds nothing else goes. */
static void remove_hidden(int root)
{
	char path[128];

	if (hidden_fd < 0)
		return;
	snprintf(path, sizeof(path), "%s/bopt", hidden_at);
	if (hidden_bopt_new && unlink(path) < 0 && errno != ENOENT)
		hy_log(LOG_WARNING, "cannot remove \"%s/bopt\" that the mount made: %s",
		       HY_STATE_DIR_NAME, strerror(errno));
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", hidden_at, hidden_tag_names[i]);
		if (hidden_tags[i] && unlink(path) < 0 && errno != ENOENT)
			hy_log(LOG_WARNING, "cannot remove \"%s/%s\" that the mount made: %s",
			       HY_STATE_DIR_NAME, hidden_tag_names[i], strerror(errno));
		hidden_tags[i] = false;
	}
	close(hidden_fd);
	hidden_fd = -1;
	hidden_at[0] = '\0';
	if (hidden_made && root >= 0 && unlinkat(root, HY_STATE_DIR_NAME, AT_REMOVEDIR) < 0 &&
	    errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
		hy_log(LOG_WARNING, "cannot remove \"%s\" that the mount made: %s",
		       HY_STATE_DIR_NAME, strerror(errno));
	hidden_made = false;
}

/* ---- which disk a path is on ----------------------------------------- */

struct disk {
	char name[64];	/* the block device's name (sda1), or what the filesystem is */
	char whole[64]; /* its disk's (sda) */
	int rotational; /* 1, 0, or a negative errno: cannot be asked */
	bool ram;
	dev_t dev;
	bool known;
};

static void disk_of(const char *path, struct disk *d)
{
	const char *root = getenv("HYBRIDFS_SYSFS");
	char sys[PATH_MAX], link[PATH_MAX], type[16], *base;
	struct stat st;
	ssize_t n;

	memset(d, 0, sizeof(*d));
	d->rotational = -ENODEV;
	if (!root || !*root)
		root = "/sys";
	if (stat(path, &st) < 0)
		return;
	d->known = true;
	d->dev = st.st_dev;
	d->rotational = hy_ondisk_rotational(path);
	if (hy_ondisk_on_ram(path, type, sizeof(type))) {
		d->ram = true;
		snprintf(d->name, sizeof(d->name), "%s", type);
		snprintf(d->whole, sizeof(d->whole), "%s:%u:%u", type, major(st.st_dev),
			 minor(st.st_dev));
		return;
	}
	snprintf(sys, sizeof(sys), "%s/dev/block/%u:%u", root, major(st.st_dev), minor(st.st_dev));
	n = readlink(sys, link, sizeof(link) - 1);
	if (n <= 0) {
		snprintf(d->name, sizeof(d->name), "device %u:%u", major(st.st_dev),
			 minor(st.st_dev));
		snprintf(d->whole, sizeof(d->whole), "%s", d->name);
		return;
	}
	link[n] = '\0';
	base = strrchr(link, '/');
	snprintf(d->name, sizeof(d->name), "%.63s", base ? base + 1 : link);
	snprintf(d->whole, sizeof(d->whole), "%s", d->name);
	/* a partition's folder lies in its disk's */
	snprintf(sys, sizeof(sys), "%s/dev/block/%u:%u/partition", root, major(st.st_dev),
		 minor(st.st_dev));
	if (access(sys, F_OK) == 0 && base) {
		*base = '\0';
		base = strrchr(link, '/');
		snprintf(d->whole, sizeof(d->whole), "%.63s", base ? base + 1 : link);
	}
}

static bool same_disk(const struct disk *a, const struct disk *b)
{
	return a->known && b->known && (a->dev == b->dev || strcmp(a->whole, b->whole) == 0);
}

static const char *disk_kind(const struct disk *d)
{
	return d->ram		    ? "RAM"
	       : d->rotational == 1 ? "spins"
	       : d->rotational == 0 ? "SSD"
				    : "unknown";
}

static struct json_object *disk_json(const char *what, const char *path, const struct disk *d,
				     const char *why)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "what", json_object_new_string(what));
	json_object_object_add(o, "path", path ? json_object_new_string(path) : NULL);
	json_object_object_add(o, "disk", d && d->known ? json_object_new_string(d->name) : NULL);
	json_object_object_add(o, "kind", json_object_new_string(d ? disk_kind(d) : "none"));
	if (d && d->rotational >= 0)
		json_object_object_add(o, "rotational", json_object_new_boolean(d->rotational));
	json_object_object_add(o, "why", json_object_new_string(why));
	return o;
}

/* Where the default cache store goes, said in @why (opts->cache set to
 * "none" when nowhere). The state folder's disk when it does not spin and
 * is not the backing disk: a faster disk than the backing one; else
 * /var/tmp's, on the same terms (fast_store). Not on the backing disk
 * itself (the state folder on it), measured on the aged-disk benchmark
 * (BENCHMARKS.md, Issue 19, "A store on the backing disk"): a cold
 * morning 0.99-1.01x of cache=none, a remounted one after a
 * reorganization 1.00-1.19x without keeping lines and 24-31x keeping them,
 * a repeated morning in the same mount 0.55-0.81x only from the DRAM
 * front buffer (which the kernel's page cache gives a real day anyway),
 * and the store's writes land on the disk it was meant to spare. So no
 * store there unless cache_size= or cache_write= ask for the default one.
 * A state folder on another disk that spins keeps the store: it spares
 * the backing disk's seeks (not measured: no second disk here). */

/* The folder of the default stores that go to a faster disk than the
 * state folder's: a user's state folder lies in their home, on the disk
 * of the directories they mount (the user this project is for has /home
 * on a hard disk and the system on an SSD), /var/tmp on the system's.
 * HYBRIDFS_FAST_ROOT names another (the tests'). Per user, 0700, checked
 * to be theirs: /var/tmp is everyone's. Such a store is write-through (the
 * default's policy), so a tmpfiles clean-up of /var/tmp loses warmth,
 * never data. */
#define HY_FAST_ROOT "/var/tmp"

/* The default store on a disk that does not spin, is not RAM and is not
 * the backing one, when the state folder's is not such a disk: 1 with its
 * path in @opts->cache_default and the reason in @why, 0 when there is
 * none. */
static int fast_store(struct hy_options *opts, const struct disk *state_disk,
		      const struct disk *backing_disk, char *why, size_t why_size)
{
	const char *root = getenv("HYBRIDFS_FAST_ROOT");
	const char *name = strrchr(opts->state_dir, '/');
	char path[PATH_MAX + NAME_MAX + 16];
	struct disk d;
	struct stat st;

	if (!root || root[0] != '/')
		root = HY_FAST_ROOT;
	disk_of(root, &d);
	if (d.rotational != 0 || d.ram || same_disk(&d, backing_disk) || !name || !name[1])
		return 0;
	snprintf(fast_dir, sizeof(fast_dir), "%s/hybridfs-%u", root, (unsigned)geteuid());
	if (mkdir(fast_dir, 0700) == 0)
		fast_dir_made = true;
	else if (errno != EEXIST)
		return 0;
	/* a folder somebody else made at the name, or a link, is not used */
	if (lstat(fast_dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		hy_log(LOG_WARNING,
		       "cache: \"%s\" is not a folder of mode 0700 of uid %u: the default store "
		       "stays in the state folder",
		       fast_dir, (unsigned)geteuid());
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s.cache", fast_dir, name + 1);
	if (lstat(path, &st) < 0 && errno == ENOENT)
		named_new[1] = strdup(path); /* a failed mount removes it */
	opts->cache_default = strdup(path);
	if (!opts->cache_default)
		return 0;
	snprintf(why, why_size,
		 "in %.200s: its disk (%s) does not spin and is not the backing directory's (%s), "
		 "and the state folder's (%s) is %s",
		 fast_dir, d.name, backing_disk->known ? backing_disk->name : "unknown",
		 state_disk->known ? state_disk->name : "unknown",
		 same_disk(state_disk, backing_disk) ? "the backing disk" : "a disk that spins");
	return 1;
}

/* cache_keep=auto: lines kept across mounts unless the store lies on the
 * backing directory's disk and that disk spins (or cannot be asked). On
 * the aged-disk benchmark a remounted morning with a kept store on the
 * backing disk cost 24-31 times the same morning without a store (7.3-7.8
 * s against 0.25-0.30 s after a reorganization: the kept lines read one by
 * one from the store, 1,300-1,400 seeks, instead of the BOPT's sequential
 * layout); kept on another disk, a twelfth of a cold morning
 * (BENCHMARKS.md, Issue 19). A block device named
 * as the store is another disk. @store: the default store's path, when
 * cache= names none. Returns whether nothing is to be kept. */
static bool keep_decision(const struct hy_options *opts, const char *store,
			  const struct disk *backing)
{
	char path[4096], why[256];
	struct disk d;
	struct stat st;

	if (opts->cache_keep != HY_CACHE_KEEP_AUTO)
		return opts->cache_keep == HY_CACHE_KEEP_OFF;
	if (opts->cache && strcmp(opts->cache, "none") == 0)
		return false; /* no store: nothing to say */
	if (opts->cache) {
		if (hy_cache_store_resolve(opts->cache, path, sizeof(path), why, sizeof(why)) < 0)
			return false; /* the open says what is wrong */
	} else {
		snprintf(path, sizeof(path), "%s", store);
	}
	if (stat(path, &st) == 0) {
		if (S_ISBLK(st.st_mode))
			return false;
	} else {
		/* made at open: its folder's disk */
		char *slash = strrchr(path, '/');

		if (slash && slash != path)
			*slash = '\0';
	}
	disk_of(path, &d);
	if (!same_disk(&d, backing) || backing->rotational == 0)
		return false;
	hy_log(LOG_NOTICE,
	       "cache: \"%s\" lies on the backing directory's disk (%s), which %s: its lines "
	       "are not kept across mounts (cache_keep=on keeps them)",
	       opts->cache ? opts->cache : store, backing->known ? backing->name : "unknown",
	       backing->rotational == 1 ? "spins" : "cannot be asked whether it spins");
	return true;
}

static void place_store(struct hy_options *opts, const struct disk *state_disk,
			const struct disk *backing_disk, char *why, size_t why_size)
{
	char store[4200];

	snprintf(store, sizeof(store), "%s/%s", opts->state_at, HY_OPTIONS_CACHE_NAME);
	if (opts->cache) {
		snprintf(why, why_size, "%s",
			 strcmp(opts->cache, "none") == 0 ? "cache=none: no SSD cache"
							  : "named by cache=");
		return;
	}
	if (access(store, F_OK) == 0) {
		snprintf(why, why_size,
			 "the store of earlier mounts, in the state folder (kept: it may hold "
			 "data not home yet)");
		return;
	}
	/* (write-back asked for keeps to the state folder: a store in
	 * /var/tmp may be cleaned away, dirty lines and all) */
	if (!opts->cache_write_given &&
	    !(state_disk->rotational == 0 && !state_disk->ram &&
	      !same_disk(state_disk, backing_disk)) &&
	    fast_store(opts, state_disk, backing_disk, why, why_size) > 0)
		return;
	if (opts->cache_size_given || opts->cache_write_given) {
		snprintf(why, why_size, "in the state folder, as %s asks for the default store",
			 opts->cache_size_given ? "cache_size=" : "cache_write=");
		return;
	}
	if (state_disk->rotational == 0 && !state_disk->ram &&
	    !same_disk(state_disk, backing_disk)) {
		snprintf(why, why_size,
			 "in the state folder: its disk (%s) does not spin and is not the "
			 "backing directory's (%s)",
			 state_disk->name, backing_disk->known ? backing_disk->name : "unknown");
		return;
	}
	if (!same_disk(state_disk, backing_disk)) {
		snprintf(why, why_size,
			 "in the state folder, on its disk (%s): no faster disk to be had, and "
			 "not the backing one, whose seeks it spares",
			 state_disk->known ? state_disk->name : "unknown");
		return;
	}
	snprintf(why, why_size,
		 "none: no faster disk than the backing one (the state folder's, %s, is the "
		 "backing disk, where a store was measured to cost more than it saves: "
		 "BENCHMARKS.md, Issue 19); name one with cache=",
		 state_disk->known ? state_disk->name : "unknown");
	free(opts->cache);
	opts->cache = strdup("none");
}

/* Where the default BOPT is: the state folder when that is inside the
 * backing directory (an older mount's, or state= naming one there) or
 * holds a BOPT already (an older mount's state folder moved out whole),
 * else the hidden folder BACKING/.hybridfs. */
/* The kernel's read-ahead on a FUSE mount starts at 128 KiB (the bdi's
 * default), and the kernel sends no read larger than its window: a
 * sequential read of 1 MiB then costs 8 requests where one would carry it
 * (max_pages lets a request hold 1 MiB), and 8 times the daemon's reads
 * of the backing file (BENCHMARKS.md, "Issue 20: the data path and the
 * peers": 1 GiB read cold took 8,192 READs and 1.26 s of the daemon's CPU
 * at 128 KiB, 1,024 and 0.43-0.51 s at 1 MiB). So the mount's bdi
 * (/sys/class/bdi/MAJ:MIN, MAJ:MIN from the mount's line in mountinfo,
 * which asks the mount nothing) gets a window of one full request,
 * before the INIT reply, which must offer as much for the kernel to keep
 * it. Root only (sysfs); a user's mount keeps 128 KiB, said at info.
 * Returns the window in bytes, or 0 when it was left alone. */
static uint32_t raise_readahead(const char *mountpoint, uint32_t want_bytes)
{
	const unsigned want_kb = want_bytes / 1024;
	char line[8192], want_path[PATH_MAX * 4 + 1] = "", sysfs[96], *q;
	const char *c;
	unsigned major = 0, minor = 0, now_kb = 0;
	bool found = false;
	FILE *f;

	/* mountinfo escapes blank, tab, newline and backslash as \ooo */
	for (c = mountpoint, q = want_path; *c && q < want_path + sizeof(want_path) - 5; c++) {
		if (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\\')
			q += sprintf(q, "\\%03o", (unsigned char)*c);
		else
			*q++ = *c;
	}
	*q = '\0';
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	/* the last mount on that point is this one (a mount in place covers
	 * the directory's own mount) */
	while (fgets(line, sizeof(line), f)) {
		unsigned ma, mi;
		char point[sizeof(line)];
		const char *dash = strstr(line, " - ");

		if (sscanf(line, "%*u %*u %u:%u %*s %8191s", &ma, &mi, point) == 3 &&
		    strcmp(point, want_path) == 0 && dash && strncmp(dash + 3, "fuse", 4) == 0) {
			major = ma;
			minor = mi;
			found = true;
		}
	}
	fclose(f);
	if (!found)
		return 0;
	snprintf(sysfs, sizeof(sysfs), "/sys/class/bdi/%u:%u/read_ahead_kb", major, minor);
	f = fopen(sysfs, "re");
	if (f) {
		if (fscanf(f, "%u", &now_kb) != 1)
			now_kb = 0;
		fclose(f);
	}
	if (now_kb >= want_kb)
		return now_kb * 1024u;
	{
		char text[16];
		int fd = open(sysfs, O_WRONLY | O_CLOEXEC), len, e = 0;

		len = snprintf(text, sizeof(text), "%u\n", want_kb);
		if (fd < 0 || write(fd, text, (size_t)len) != len)
			e = errno;
		if (fd >= 0)
			close(fd);
		if (e) {
			hy_log(LOG_INFO,
			       "fs: the kernel's read-ahead on the mount stays at %u KiB (%s: %s): "
			       "sequential reads take a request per %u KiB",
			       now_kb, sysfs, strerror(e), now_kb);
			return 0;
		}
	}
	return want_kb * 1024u;
}

static bool state_in_backing, bopt_in_state;
static int backing_fd = -1; /* the backing directory, for the daemon's own use */
static char bopt_why[512];
static struct disk backing_disk, state_disk;

static const char *default_bopt_dir(void)
{
	static char dir[96];

	if (bopt_in_state)
		return state_at;
	if (hidden_fd >= 0)
		return hidden_at;
	snprintf(dir, sizeof(dir), "%s/%s", backing_at, HY_STATE_DIR_NAME);
	return dir;
}

/* "disks" of hybridctl status: where the database, the cache store and
 * the BOPT are, on which disk, and why there. */
static struct json_object *disks_status(const struct hy_options *opts, const struct hy_fs *fs,
					const char *store_why)
{
	struct json_object *arr = json_object_new_array();
	char path[PATH_MAX + 32], why[1024], db_why[512];
	struct disk d;

	if (!arr)
		return NULL;
	if (opts->state_given)
		snprintf(db_why, sizeof(db_why), "named by state=");
	else if (opts->state_legacy)
		snprintf(db_why, sizeof(db_why),
			 "the state folder of earlier mounts, inside the backing directory "
			 "(kept, so that their state is not stranded)");
	else
		snprintf(db_why, sizeof(db_why),
			 "the default for %s: a folder per backing directory, "
			 "out of the tree",
			 geteuid() == 0 ? "root (" HY_STATE_ROOT_SYSTEM ")"
					: "a user ($XDG_STATE_HOME/hybridfs)");
	snprintf(path, sizeof(path), "%s/%s", opts->state_dir, HY_STATE_DB_NAME);
	json_object_array_add(arr, disk_json("database", path, &state_disk, db_why));

	if (!fs->cache) {
		json_object_array_add(
			arr, disk_json("store", NULL, NULL, store_why[0] ? store_why : "none"));
	} else if (opts->cache &&
		   hy_cache_store_resolve(opts->cache, path, sizeof(path), why, sizeof(why)) == 0) {
		disk_of(path, &d);
		json_object_array_add(arr, disk_json("store", path, &d, store_why));
	} else if (opts->cache_default) {
		disk_of(opts->cache_default, &d);
		json_object_array_add(arr, disk_json("store", opts->cache_default, &d, store_why));
	} else {
		snprintf(path, sizeof(path), "%s/%s", opts->state_dir, HY_OPTIONS_CACHE_NAME);
		json_object_array_add(arr, disk_json("store", path, &state_disk, store_why));
	}

	if (!fs->borg) {
		json_object_array_add(
			arr, disk_json("bopt", NULL, NULL, bopt_why[0] ? bopt_why : "none"));
	} else if (opts->bopt &&
		   hy_bopt_resolve(opts->bopt, path, sizeof(path), why, sizeof(why)) == 0) {
		disk_of(path, &d);
		json_object_array_add(arr, disk_json("bopt", path, &d, bopt_why));
	} else {
		snprintf(path, sizeof(path), "%s/bopt",
			 bopt_in_state ? opts->state_dir : opts->backing_real);
		if (!bopt_in_state)
			snprintf(path, sizeof(path), "%s/%s/bopt",
				 strcmp(opts->backing_real, "/") == 0 ? "" : opts->backing_real,
				 HY_STATE_DIR_NAME);
		json_object_array_add(arr, disk_json("bopt", path, &backing_disk, bopt_why));
	}
	return arr;
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
	snprintf(path, sizeof(path), "%s/bopt", default_bopt_dir());
	if (bopt_out && access(path, F_OK) == 0)
		dirty = hy_borg_left_dirty(opts->state_at, default_bopt_dir(), state->uuid,
					   state->db);
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
		.bopt_dir = bopt_in_state ? NULL : default_bopt_dir(),
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

	if (opts->bopt && strcmp(opts->bopt, "none") == 0) {
		snprintf(bopt_why, sizeof(bopt_why), "none: bopt=none");
		return 0;
	}
	if (!fs->profiler) {
		snprintf(bopt_why, sizeof(bopt_why), "none: BORG needs the profiler (profile=on)");
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
		snprintf(path, sizeof(path), "%s/bopt", default_bopt_dir());
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
	snprintf(path, sizeof(path), "%s/bopt", default_bopt_dir());
	existed = !opts->bopt && lstat(path, &st) == 0;
	/* BORG lays hot blocks out in access order to save seeks: a disk that
	 * does not spin has none to save, and would only pay for the copies
	 * (issue 18: never make a user's disk slower). A named BOPT, one that
	 * exists, or bopt_on_ssd keep it; a disk that cannot be asked too. */
	if (!opts->bopt && !existed && !opts->bopt_on_ssd && backing_disk.rotational == 0) {
		hy_log(LOG_NOTICE,
		       "bopt: none: the backing directory's disk does not spin (queue/rotational "
		       "0), so BORG's layout would save no seeks; mount with -o bopt_on_ssd to "
		       "have one anyway");
		snprintf(bopt_why, sizeof(bopt_why),
			 "none: the backing disk (%s) does not spin: a layout saves no seeks "
			 "there (bopt_on_ssd makes one)",
			 backing_disk.name);
		return 0;
	}
	if (!opts->bopt && !bopt_in_state) {
		/* the hidden folder, made with the BOPT only */
		if (!existed)
			hidden_bopt_new = true;
		rc = open_hidden(backing_fd, !existed, why, sizeof(why));
		if (rc < 0) {
			hidden_bopt_new = false;
			hy_log(LOG_WARNING, "%s; mounting without a BOPT (reorganize is off)", why);
			snprintf(bopt_why, sizeof(bopt_why), "none: %.490s", why);
			return 0;
		}
		config.bopt_dir = hidden_at;
		/* the tree hides it from now on (fs/ops.c) */
		fs->state_is_child = true;
	}
	snprintf(
		bopt_why, sizeof(bopt_why), "%s",
		opts->bopt	   ? "named by bopt="
		: state_in_backing ? "in the state folder, inside the backing directory (BORG "
				     "lays blocks out on the backing disk)"
		: bopt_in_state
			? "in the state folder (state= names it, or an earlier mount made it there)"
			: "in the backing directory's hidden folder " HY_STATE_DIR_NAME
			  ": BORG lays blocks out on the backing disk");
	rc = hy_borg_open(&config, &fs->borg, why, sizeof(why));
	if (rc == 0)
		return 0;
	if (hidden_bopt_new) {
		remove_hidden(backing_fd);
		hidden_bopt_new = false;
	}
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
	snprintf(bopt_why, sizeof(bopt_why), "none: %.490s", why);
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

/* Where the daemon logs once in the background: the file of log=FILE,
 * else syslog. Where no syslog takes the lines (no /dev/log: a container,
 * a minimal system), they go to the state folder's hybridfs.log instead of
 * nowhere, as the caller is told now, while it still sees stderr. */
static unsigned background_sinks(const struct hy_options *opts)
{
	char path[sizeof(state_at) + sizeof(HY_OPTIONS_LOG_NAME) + 1];
	int rc;

	if (opts->log_file)
		return HY_LOG_FILE;
	snprintf(path, sizeof(path), "%s/%s", state_at, HY_OPTIONS_LOG_NAME);
	hy_log_set_fallback(path);
	rc = hy_log_syslog_probe();
	if (rc < 0)
		hy_log(LOG_NOTICE,
		       "no syslog here (\"%s\": %s): the daemon's messages go to \"%s/%s\" "
		       "(log=FILE names another file)",
		       hy_log_syslog_socket(), strerror(-rc), opts->state_dir, HY_OPTIONS_LOG_NAME);
	return HY_LOG_SYSLOG;
}

static int usage_error(const char *program, const char *why)
{
	fprintf(stderr, "%s: %s\n", program, why);
	fprintf(stderr, "Try '%s --help' for more information.\n", program);
	return 2;
}

/* Overlayfs and eCryptfs stack on another filesystem (s_stack_depth 1):
 * backing files there need a mount that stacks two deep. */
#define OVERLAYFS_MAGIC 0x794c7630
#define ECRYPTFS_MAGIC	0xf15f

/* What the channel asks the kernel at INIT for passthrough=, or why it
 * asks nothing (fuse_channel.h, passthrough.h). */
static void want_passthrough(const struct hy_options *opts, struct hy_fs *fs,
			     struct hy_fuse_channel *channel)
{
	struct statfs sf;

	if (opts->passthrough == HY_PASSTHROUGH_OFF)
		return; /* the channel's default: passthrough=off */
	if (geteuid() != 0) {
		hy_fuse_channel_want_passthrough(
			channel, 0,
			"the daemon is not root: the kernel takes backing files only from "
			"CAP_SYS_ADMIN");
		return;
	}
	if (!opts->profile) {
		hy_fuse_channel_want_passthrough(
			channel, 0,
			"profile=off: no file ids, so no exclude rule is known at open");
		return;
	}
	/* 1 unless the backing files lie on a stacked filesystem: with 1
	 * the mount may itself be an overlayfs layer */
	if (fstatfs(fs->inodes->root->fd, &sf) == 0 &&
	    (sf.f_type == OVERLAYFS_MAGIC || sf.f_type == ECRYPTFS_MAGIC))
		hy_fuse_channel_want_passthrough(channel, 2, NULL);
	else
		hy_fuse_channel_want_passthrough(channel, 1, NULL);
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
	struct hy_fuse_channel *channel = NULL;
	int root_fd = -1, rc, status = 1;
	char backing_id[128] = "", store_why[512] = "";
	bool registered = false, ready = false;
	size_t fd_cap;

	memset(&fs, 0, sizeof(fs));
	rc = hy_options_parse(argc, argv, &opts, why, sizeof(why));
	program = opts.program ? opts.program : "hybridfs";
	/* refusals name another mount's store or BOPT by its directories */
	hy_ondisk_set_mount_namer(hy_mount_name_describe);
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
	/* log=FILE: from now on, so that the file tells the whole story */
	if (rc == 0 && opts.log_file) {
		rc = hy_log_open_file(opts.log_file, why, sizeof(why));
		if (rc == 0)
			hy_log_init(HY_LOG_STDERR | HY_LOG_FILE,
				    opts.debug ? LOG_DEBUG : LOG_NOTICE, program);
	}
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
	if (rc == 0 && backing_identity(opts.backing_real, backing_id, sizeof(backing_id)) < 0)
		backing_id[0] = '\0';
	if (rc == 0 && !opts.state_given && !opts.state_legacy) {
		if (backing_id[0])
			follow_identity(&opts, backing_id);
		rc = make_state_parents(opts.state_dir, why, sizeof(why));
	}
	if (rc == 0)
		rc = open_state_dir(opts.state_dir, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "%s: %s\n", program, why);
		goto out;
	}
	if (opts.state_legacy)
		hy_log(LOG_NOTICE,
		       "state: using \"%s\", the state folder of earlier mounts, inside the "
		       "backing directory (new mounts keep theirs in %s; hybridfs(8), \"Where the "
		       "state lives\")",
		       opts.state_dir,
		       geteuid() == 0 ? HY_STATE_ROOT_SYSTEM : "~/.local/state/hybridfs");
	{
		size_t n = strlen(opts.backing_real);

		struct stat st;

		state_in_backing = strncmp(opts.state_dir, opts.backing_real, n) == 0 &&
				   (opts.state_dir[n] == '/' || n == 1);
		/* state= keeps everything in the folder it names, the BOPT too,
		 * as before (bopt= puts it elsewhere) */
		bopt_in_state = state_in_backing || opts.state_given ||
				fstatat(state_fd, "bopt", &st, AT_SYMLINK_NOFOLLOW) == 0;
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
	if (backing_id[0])
		record_identity(state, backing_id);
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
	/* Opened before the mount: a mount in place covers the path, and the
	 * daemon serves the directory through these descriptors from then on
	 * (its own accesses by path go through backing_at) */
	root_fd = open(opts.backing_real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd >= 0)
		backing_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
	if (root_fd < 0 || backing_fd < 0) {
		fprintf(stderr, "%s: backing directory \"%s\": %s\n", program, opts.backing,
			strerror(errno));
		goto out;
	}
	snprintf(backing_at, sizeof(backing_at), "/proc/self/fd/%d", backing_fd);
	snprintf(hidden_shown, sizeof(hidden_shown), "%s/%s",
		 strcmp(opts.backing_real, "/") == 0 ? "" : opts.backing_real, HY_STATE_DIR_NAME);
	hy_log_add_alias(backing_at, opts.backing_real);
	disk_of(opts.backing_real, &backing_disk);
	disk_of(opts.state_dir, &state_disk);
	place_store(&opts, &state_disk, &backing_disk, store_why, sizeof(store_why));
	{
		char hide[PATH_MAX + 16];

		/* what the mount hides: the state folder when it is inside, else
		 * the BOPT's hidden folder */
		snprintf(hide, sizeof(hide), "%s/%s",
			 strcmp(opts.backing_real, "/") == 0 ? "" : opts.backing_real,
			 HY_STATE_DIR_NAME);
		rc = hy_fs_init(&fs, root_fd, fd_cap, state_in_backing ? opts.state_dir : hide);
	}
	root_fd = -1; /* the inode table owns it, or closed it */
	if (rc) {
		fprintf(stderr, "%s: cannot set up: %s\n", program, strerror(-rc));
		goto out;
	}
	fs.attr_timeout = opts.attr_timeout;
	fs.entry_timeout = opts.entry_timeout;
	fs.opendir = opts.opendir;
	fs.open_mode = opts.open;
	/* a file the kernel opens itself is checked at open by the kernel
	 * (default_permissions) or by nobody: enough where only root comes
	 * in, which may open anything anyway */
	fs.open_files_unchecked_ok = hy_options_default_permissions(&opts) || geteuid() == 0;
	fs.readdirplus_always = opts.readdirplus_always;
	fs.splice = opts.splice;
	fs.negative_timeout = opts.negative_timeout;
	fs.writeback_cache = opts.writeback_cache && !opts.read_only;
	fs.posix_acl = opts.allow_other;
	if (fs.writeback_cache)
		hy_log(LOG_NOTICE,
		       "writeback_cache=on: the kernel keeps file sizes and times itself, so "
		       "changes made in the backing folder while mounted may not be seen; new "
		       "files are made with MKNOD and OPEN (hybridfs(8))");

	if (fs.splice) {
		struct rlimit lim;
		int64_t most = 0;

		/* two descriptors per worker thread for its pipe: out of the
		 * headroom, which a limit this low does not leave */
		if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
		    lim.rlim_cur <= 2 * HY_FD_HEADROOM)
			snprintf(fs.splice_why, sizeof(fs.splice_why),
				 "the open-file limit (%llu) leaves no descriptors for a pipe per "
				 "worker thread",
				 (unsigned long long)lim.rlim_cur);
		else
			most = hy_fs_splice_read_size(fs.splice_why, sizeof(fs.splice_why));
		fs.splice_max_read = most > 0 ? (uint32_t)most : 0;
	}
	if (hy_options_fuse_args(&opts, &args)) {
		fprintf(stderr, "%s: out of memory\n", program);
		goto out;
	}
	/* reads no larger than a spliced reply carries where pipes are
	 * limited (1008 KiB for 1 MiB ones), and a read-ahead window of one
	 * such read (raise_readahead): one request each, all spliced */
	if (fs.splice_max_read && fs.splice_max_read < HY_FS_READAHEAD) {
		char max_read[32];

		snprintf(max_read, sizeof(max_read), "max_read=%u", fs.splice_max_read);
		if (fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, max_read)) {
			fprintf(stderr, "%s: out of memory\n", program);
			goto out;
		}
	}
	se = fuse_session_new(&args, hy_fs_umask_operations(), sizeof(struct fuse_lowlevel_ops),
			      &fs);
	if (!se) {
		fprintf(stderr, "%s: libfuse refused the options\n", program);
		goto out;
	}
	hy_fs_kcache_attach(&fs, se);
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
	/* before the session loop answers INIT (hy_init offers it) */
	fs.readahead = raise_readahead(opts.mountpoint_real,
				       fs.splice_max_read ? fs.splice_max_read : HY_FS_READAHEAD);
	/* The device through the daemon's channel: requests counted, and
	 * FUSE_HANDLE_KILLPRIV_V2 taken (fuse_channel.h). The descriptor is
	 * the one fuse_session_mount() got, from mount(2) as root or from
	 * fusermount3 otherwise; the kernel reads and writes both alike. A
	 * channel that cannot be had leaves libfuse's own reads and writes:
	 * the mount works as before. */
	rc = hy_fuse_channel_new(opts.killpriv_v2, &channel);
	if (rc == 0)
		rc = hy_fuse_channel_install(channel, se, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "fuse: no channel: out of memory");
	if (rc < 0) {
		hy_log(LOG_WARNING,
		       "%s; FUSE requests go uncounted, and the kernel asks for "
		       "security.capability before every write",
		       why);
		hy_fuse_channel_free(channel);
		channel = NULL;
	}
	fs.channel = channel;
	if (channel)
		want_passthrough(&opts, &fs, channel);
	/* the backing directory's volume and path were followed by the open
	 * before the mount; looked at by path now, a mount in place would be
	 * asked about itself before it serves */
	rc = hy_state_open(state_open_at, NULL, false, &state, why, sizeof(why));
	if (rc) {
		hy_log(LOG_ERR, "%s", why);
		goto out_unmount;
	}
	registered = register_mount(&opts, state);
	fs.mountpoint = opts.mountpoint_real;
	fs.backing_path = opts.backing_real;
	fs.backing_at = backing_at;
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
	fs.hidden_at = state_in_backing ? state_at : hidden_fd >= 0 ? hidden_at : NULL;
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

		if (opts.cache_default)
			snprintf(store, sizeof(store), "%s", opts.cache_default);
		else
			snprintf(store, sizeof(store), "%s/%s", state_at, HY_OPTIONS_CACHE_NAME);
		store_new = !opts.cache_given && !opts.cache_size_given &&
			    access(store, F_OK) != 0 && errno == ENOENT;
		opts.cache_no_keep = keep_decision(&opts, store, &backing_disk);
		crc = hy_fs_open_cache(&fs, &opts);
		if (crc == -ENOSPC && store_new)
			hy_log(LOG_WARNING,
			       "cache: left out: no room for the default store \"%s\"; "
			       "mounting without the SSD cache",
			       opts.cache_default ? opts.cache_default : opts.state_dir);
		else if (crc < 0)
			goto out_unmount;
		if (crc == -ENOSPC && store_new)
			snprintf(store_why, sizeof(store_why),
				 "none: no room for the default store in the state folder");
	}
	/* which open files the kernel serves itself, before the pins
	 * (whose rules it asks for) */
	if (opts.passthrough == HY_PASSTHROUGH_EXCLUDED && fs.profiler &&
	    hy_fs_open_passthrough(&fs) < 0) {
		hy_log(LOG_ERR, "passthrough: out of memory");
		goto out_unmount;
	}
	/* pins and excludes, after the cache (its share for pins) */
	if (fs.profiler && hy_fs_open_pins(&fs, &opts, state->db) < 0) {
		hy_log(LOG_ERR, "pins: out of memory");
		goto out_unmount;
	}
	fs.disks = disks_status(&opts, &fs, store_why);
	fs.backing_disk = backing_disk.known ? backing_disk.name : NULL;
	/* after everything status reports on, before the control socket */
	if (hy_fs_open_metrics(&fs, &opts) < 0) {
		hy_log(LOG_ERR, "metrics: out of memory");
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
		unsigned sinks = background_sinks(&opts);

		daemon_ready(0, true);
		hy_log_init(sinks, opts.debug ? LOG_DEBUG : LOG_NOTICE, "hybridfs");
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
	/* the files the kernel opened itself, closed as at a last close while
	 * the cache and BORG still take their writes home (fs/kfile.c) */
	hy_fs_kfiles_close_all(&fs);
	/* the last snapshot, while the cache still reports its figures */
	hy_fs_close_metrics(&fs);
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
	hy_fs_kcache_detach(&fs);
	fuse_session_destroy(se);
out:
	/* after the session, whose reads and writes it served */
	fs.channel = NULL;
	hy_fuse_channel_free(channel);
	if (loop_config)
		fuse_loop_cfg_destroy(loop_config);
	hy_control_server_stop(control);
	hy_fs_close_metrics(&fs);
	if (hy_fs_close_cache(&fs) < 0)
		status = 1;
	hy_fs_close_pins(&fs);
	hy_borg_close(fs.borg);
	fs.borg = NULL;
	hy_fs_destroy(&fs);	      /* closes handles first: they hold profiler state */
	hy_fs_close_passthrough(&fs); /* after the handles, which held its ids */
	hy_profiler_free(profiler);   /* drains the log into the database */
	hy_reca_free(reca);	      /* after the profiler's writer, which feeds it */
	hy_state_close(state);
	/* after every device and database that used it */
	hy_emuvfs_detach();
	hy_device_emulation_free(emulation);
	if (root_fd >= 0)
		close(root_fd);
	if (status && !ready && !opts.fake) {
		remove_new_files(opts.state_dir);
		remove_hidden(backing_fd);
		remove_state_parents();
	}
	for (size_t i = 0; i < n_parents_made; i++)
		free(parents_made[i]);
	if (hidden_fd >= 0)
		close(hidden_fd);
	if (backing_fd >= 0)
		close(backing_fd);
	json_object_put(fs.disks);
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
