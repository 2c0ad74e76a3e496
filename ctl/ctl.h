/* ctl.h - hybridctl's subcommands, one file each; private to ctl/. */
#ifndef HYBRIDFS_CTL_H
#define HYBRIDFS_CTL_H

#include <stddef.h>
#include <stdint.h>

/* The registered mount holding the real path @real (the longest
 * mountpoint that is a prefix of it at a '/'): its state folder, its
 * mountpoint (@mnt, may be NULL) and @real's path inside it. 0, -ENOENT
 * when none does, or hy_runtime_list's error. */
int hy_ctl_mount_of(const char *real, char *state_dir, size_t size, char *mnt, size_t mnt_size,
		    const char **inside);

/* The state folder to read: @state_dir when given, else the one of the
 * mount at @mountpoint, else the only running mount. Returns 0, or the
 * exit status (1 or 2) after saying why on stderr. */
int hy_ctl_find_state_dir(const char *command, const char *mountpoint, const char *state_dir,
			  char *dir, size_t size);

/* Asks a running daemon to write every request it has logged; warns on
 * stderr when a daemon answers but cannot. */
void hy_ctl_sync_log(const char *dir);

struct hy_state;

/* For the commands that read the access log: finds the state folder (as
 * hy_ctl_find_state_dir), has the daemon sync its log, and opens the state
 * database read-only into @state (the caller closes it). Returns 0, or the
 * exit status after saying why on stderr. */
int hy_ctl_open_log(const char *command, const char *mountpoint, const char *state_dir,
		    struct hy_state **state);

/* `hybridctl status --format prometheus [--output FILE]` (ctl/metrics_cmd.c):
 * @n mounts' daemon answers (NULL: no answer) rendered by metrics.h to
 * stdout, or into @output atomically. The exit status: 0, or 1 when the
 * file cannot be written. */
struct json_object;
int hy_ctl_status_prometheus(const char *const *mountpoints, struct json_object *const *daemons,
			     size_t n, const char *output);

/* `hybridctl trace export ...`: @argc/@argv start after "export".
 * Returns the exit status: 0, 1 (cannot read), 2 (bad command line). */
int hy_ctl_trace_export(int argc, char **argv);

/* `hybridctl reorganize ...`: @argc/@argv start after "reorganize".
 * Returns the exit status: 0, 1 (failed), 2 (bad command line, no BOPT). */
int hy_ctl_reorganize(int argc, char **argv);

/* `hybridctl explain PATH [--json]`: where PATH's blocks live. Returns the
 * exit status: 0, 1 (not in a mount, or the daemon cannot say), 2 (usage). */
int hy_ctl_explain(int argc, char **argv);

/* `hybridctl flush [MOUNTPOINT]`: BOPT writes home. The exit status. */
int hy_ctl_flush(int argc, char **argv);

/* `hybridctl format-cache TARGET [--size SIZE] [--force]`: an unclaimed
 * SSD cache store. The exit status: 0, 1 (refused or failed), 2 (usage). */
int hy_ctl_format_cache(int argc, char **argv);

/* `hybridctl policy get|set|reset ...`: @argc/@argv start after "policy".
 * The exit status: 0, 1 (no daemon, or it refused), 2 (bad command line). */
int hy_ctl_policy(int argc, char **argv);

/* `hybridctl top [MOUNTPOINT] [-d SECONDS] [-n ITERATIONS] [-b]`: the
 * busiest processes, refreshed. The exit status: 0, 1 (no daemon, or it
 * went away), 2 (bad command line). */
int hy_ctl_top(int argc, char **argv);

struct json_object;
/* A process's dominant request class and its share ("rand 87%", "-"), from
 * its "classes" in status (ctl/top_cmd.c). */
void hy_ctl_class_mix(struct json_object *proc, char *buf, size_t size);
/* The policy a process follows, in brief: "around 64K early [meta]". */
void hy_ctl_policy_brief(struct json_object *policy, char *buf, size_t size);

/* `hybridctl tune [MOUNTPOINT] [--since T] [--apply] [--json]`: the mount's
 * log replayed under candidate policy tables, ranked. The exit status. */
int hy_ctl_tune(int argc, char **argv);

/* `hybridctl pin PATH...`, `unpin PATH...`, `pin --list [MOUNTPOINT]`,
 * `exclude [MOUNTPOINT] [--remove|--list] GLOB...` (ctl/pin_cmd.c): the
 * mount's pins and excludes. The exit status: 0, 1 (refused, no daemon),
 * 2 (usage). */
int hy_ctl_pin(int argc, char **argv);
int hy_ctl_unpin(int argc, char **argv);
int hy_ctl_exclude(int argc, char **argv);

/* `hybridctl simulate TRACE ...`: a block trace through the cache's
 * replacement policies (replay.h). The exit status: 0, 1, 2 (usage). */
int hy_ctl_simulate(int argc, char **argv);

/* @s seconds for people: "45s", "3m 5s", "2h 10m", "4d 3h" (ctl/hybridctl.c). */
void hy_ctl_human_duration(int64_t s, char *buf, size_t size);

/* @b bytes for people: "512 B", "1.5 MiB" (ctl/hybridctl.c). */
void hy_ctl_human_bytes(uint64_t b, char *buf, size_t size);

#endif
