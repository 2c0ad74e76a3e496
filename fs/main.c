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
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "hybridfs/fs.h"
#include "hybridfs/log.h"
#include "hybridfs/options.h"
#include "hybridfs/runtime.h"
#include "hybridfs/state.h"

/* Descriptors kept for the open files of the mount's users (and SQLite,
 * libevent, the device): the rest may cache directory descriptors. */
#define HY_FD_HEADROOM 1024

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
		return lim.rlim_cur / 2;
	return (lim.rlim_cur - HY_FD_HEADROOM) / 2;
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
	int root_fd = -1, rc, status = 1;
	bool registered = false;
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
	if (rc) {
		status = usage_error(program, rc == -ENOMEM ? "out of memory" : why);
		goto out;
	}

	/* Checked now, while errors still reach the terminal; opened again
	 * after fork, since a SQLite connection must not cross it. */
	rc = hy_state_open(opts.state_dir, opts.backing_real, false, &state, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "%s: %s\n", program, why);
		goto out;
	}
	hy_state_close(state);
	state = NULL;
	if (opts.fake) {
		status = 0;
		goto out;
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

	if (hy_options_fuse_args(&opts, &args)) {
		fprintf(stderr, "%s: out of memory\n", program);
		goto out;
	}
	se = fuse_session_new(&args, &hy_fs_operations, sizeof(hy_fs_operations), &fs);
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
	if (!opts.foreground)
		hy_log_init(HY_LOG_SYSLOG, opts.debug ? LOG_DEBUG : LOG_NOTICE, "hybridfs");
	if (fuse_daemonize(opts.foreground) != 0)
		goto out_unmount;
	rc = hy_state_open(opts.state_dir, opts.backing_real, false, &state, why, sizeof(why));
	if (rc) {
		hy_log(LOG_ERR, "%s", why);
		goto out_unmount;
	}
	hy_log(LOG_NOTICE, "mounted \"%s\" on \"%s\" (state in \"%s\", mount %s)",
	       opts.backing_real, opts.mountpoint_real, opts.state_dir, state->uuid);
	registered = register_mount(&opts, state);

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
	hy_state_close(state);
	hy_fs_destroy(&fs);
	if (root_fd >= 0)
		close(root_fd);
	fuse_opt_free_args(&args);
	hy_options_free(&opts);
	return status;
}
