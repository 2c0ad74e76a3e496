/*
 * runtime.h - the registry of running hybridfs mounts.
 *
 * What it is for: hybridctl must find a mount's daemon and state folder
 * from the mountpoint alone, or list every mount. Each daemon writes one
 * small file, named by its mount uuid, into a private per-user runtime
 * folder while it runs, and removes it at unmount:
 *
 *   folder: $HYBRIDFS_RUNTIME_DIR when set to an absolute path (a set of
 *           mounts of its own: tests, sandboxes), else /run/hybridfs
 *           (root), else $XDG_RUNTIME_DIR/hybridfs, else
 *           /tmp/hybridfs-UID; mode 0700, owned by the user
 *   file:   UUID.mount, written whole then renamed into place, lines of
 *           key=value (backslash escapes \\ and \n in values):
 *             uuid, mountpoint, backing, state_dir, pid, started (epoch s)
 *
 * A file whose daemon is gone (killed, crashed) is stale: hy_runtime_list()
 * skips it, and removes it when it can.
 *
 * Who calls it: fs/main.c (register, unregister); ctl/ (list: hybridctl.c,
 * mounts.c, explain_cmd.c, reorganize_cmd.c); lib/mount_name.c.
 * Memory: hy_runtime_list() gives an array the caller frees with free().
 * Locks: none; the rename makes each file appear whole.
 */
#ifndef HYBRIDFS_RUNTIME_H
#define HYBRIDFS_RUNTIME_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hy_runtime_entry {
	char uuid[37];
	char mountpoint[PATH_MAX];
	char backing[PATH_MAX];
	char state_dir[PATH_MAX];
	pid_t pid;
	int64_t started;
};

/* The runtime folder for this user, created (0700) when @create. */
int hy_runtime_dir(char *buf, size_t size, int create);

int hy_runtime_register(const struct hy_runtime_entry *entry, char *why, size_t why_size);
int hy_runtime_unregister(const char *uuid);

/* Every live mount of this user, sorted by mountpoint. */
int hy_runtime_list(struct hy_runtime_entry **out, size_t *count);

/* The folder of the default state folders for the calling user, into
 * @out: hy_options_state_root() (options.h) says which; here so that
 * hybridctl, which does not link the option parser, has it too. */
int hy_runtime_state_root(char *out, size_t size);

/* Parses one registry file's text into @entry: 0, or -EINVAL naming the
 * bad line in @why. */
int hy_runtime_parse(const char *text, struct hy_runtime_entry *entry, char *why, size_t why_size);

#endif
