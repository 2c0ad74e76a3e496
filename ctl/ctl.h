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

/* The commands, each declared (name, handler, summary, usage, options;
 * cli.h) in its own file and listed in ctl/hybridctl.c's table. Their
 * handlers return the exit status: 0 done; 1 the daemon said no or did
 * not answer, or something could not be read or written; 2 a bad command
 * line. */
struct hy_cli_command;
extern const struct hy_cli_command hy_ctl_trace_command;	/* trace export (trace_cmd.c) */
extern const struct hy_cli_command hy_ctl_reorganize_command;	/* reorganize_cmd.c */
extern const struct hy_cli_command hy_ctl_explain_command;	/* explain_cmd.c */
extern const struct hy_cli_command hy_ctl_flush_command;	/* flush_cmd.c */
extern const struct hy_cli_command hy_ctl_format_cache_command; /* format_cache_cmd.c */
extern const struct hy_cli_command hy_ctl_policy_command;	/* policy get|set|reset */
extern const struct hy_cli_command hy_ctl_top_command;		/* top_cmd.c */
extern const struct hy_cli_command hy_ctl_simulate_command;	/* simulate_cmd.c */
extern const struct hy_cli_command hy_ctl_tune_command;		/* tune_cmd.c */
extern const struct hy_cli_command hy_ctl_pin_command;		/* pin, unpin, exclude: */
extern const struct hy_cli_command hy_ctl_unpin_command;	/* pin_cmd.c */
extern const struct hy_cli_command hy_ctl_exclude_command;

/* Prints @obj as one line of JSON on standard output (the form every
 * --json of hybridctl uses unless said otherwise). */
struct json_object;
void hy_ctl_print_json(struct json_object *obj);

/* A process's dominant request class and its share ("rand 87%", "-"), from
 * its "classes" in status (ctl/top_cmd.c). */
void hy_ctl_class_mix(struct json_object *proc, char *buf, size_t size);
/* The policy a process follows, in brief: "around 64K early [meta]". */
void hy_ctl_policy_brief(struct json_object *policy, char *buf, size_t size);

/* @s seconds for people: "45s", "3m 5s", "2h 10m", "4d 3h" (ctl/hybridctl.c). */
void hy_ctl_human_duration(int64_t s, char *buf, size_t size);

/* @b bytes for people: "512 B", "1.5 MiB" (ctl/hybridctl.c). */
void hy_ctl_human_bytes(uint64_t b, char *buf, size_t size);

#endif
