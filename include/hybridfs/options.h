/*
 * options.h - the daemon's command line and mount options.
 *
 * What it is for: turning `hybridfs BACKING MOUNTPOINT [-o OPTS] [-f] [-d]`
 * (or mount(8)'s `mount.hybridfs BACKING MOUNTPOINT [-sfnv] [-o OPTS]`) into
 * a checked struct hy_options, and turning that into the argument vector
 * that libfuse's fuse_session_new() takes. Every unknown or malformed
 * option and every bad path is reported in words that name it; the daemon
 * then exits with status 2.
 *
 * Who calls it: fs/main.c at start-up; fs/cache_glue.c (the cache's
 * settings, at mount); the unit tests and the fuzz target.
 *
 * Memory: struct hy_options owns every string in it; hy_options_free()
 * releases them (and accepts a zeroed struct). hy_options_fuse_args() gives
 * an argument vector that the caller frees with fuse_opt_free_args().
 * Locks: none; nothing here is shared between threads.
 */
#ifndef HYBRIDFS_OPTIONS_H
#define HYBRIDFS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hybridfs/pore.h"

/* The hidden folder in BACKING: the default BOPT's (BORG needs it on the
 * backing disk), with a .gitignore of "*" and a CACHEDIR.TAG so that git and
 * backup tools skip it; and the state folder of mounts made before the
 * state moved out of the tree, which keeps being used while it holds a
 * database. */
#define HY_STATE_DIR_NAME ".hybridfs"
/* Where the state folders are by default, one per backing directory named
 * by its real path escaped as systemd-escape --path does: for root
 * /var/lib/hybridfs ($HYBRIDFS_STATE_ROOT instead, for the tests), for a
 * user $XDG_STATE_HOME/hybridfs (default ~/.local/state/hybridfs). */
#define HY_STATE_ROOT_SYSTEM	  "/var/lib/hybridfs"
#define HY_CACHEDIR_TAG_SIGNATURE "Signature: 8a477f597d28d172789f06886806bc55"
#define HY_OPTIONS_BOPT_NAME	  "bopt" /* the default BOPT, a file in the state folder */
#define HY_OPTIONS_BOPT_SIZE	  (256ULL << 20)
/* bopt_readahead=: how far ahead of a chain of relocated files the BOPT is
 * read (indirector.h); the HDD model's seek costs about as much as reading
 * 1 MiB, and 64 MiB bounds what one read may ask of the page cache. */
#define HY_OPTIONS_BOPT_READAHEAD     (1ULL << 20)
#define HY_OPTIONS_BOPT_READAHEAD_MAX (64ULL << 20)
#define HY_OPTIONS_BOPT_MIN	      (1ULL << 20)
#define HY_OPTIONS_REORG_RATE	      (64ULL << 20)
#define HY_OPTIONS_CACHE_NAME	      "cache" /* the default SSD cache store, in the state folder */
/* where a daemon in the background logs when there is no syslog to take
 * its lines and no log=FILE, in the state folder */
#define HY_OPTIONS_LOG_NAME	      "hybridfs.log"
#define HY_OPTIONS_CACHE_SIZE	      (256ULL << 20)
#define HY_OPTIONS_CACHE_MIN	      (1ULL << 20)
#define HY_OPTIONS_FRONT_BUFFER	      (16ULL << 20)
#define HY_OPTIONS_HEAT_PERIODS	      8
#define HY_OPTIONS_HEAT_PERIODS_MIN   5
#define HY_OPTIONS_HEAT_PERIODS_MAX   10
#define HY_OPTIONS_HEAT_THRESHOLD     1.5
#define HY_OPTIONS_HEAT_THRESHOLD_MAX 255.0
#define HY_OPTIONS_CACHE_CLEAN_RATE   (32ULL << 20)
#define HY_OPTIONS_CACHE_SEQ_CUTOFF   (4ULL << 20) /* bcache's sequential_cutoff */
#define HY_OPTIONS_PORE_PERIOD	      (1ULL << 30) /* without emulate=smr's buffer size */
/* metrics_interval=: seconds between snapshots of the counters kept across
 * mounts (counters.h) and rewrites of metrics=FILE; at most five minutes,
 * the shortest window */
#define HY_OPTIONS_METRICS_INTERVAL	60
#define HY_OPTIONS_METRICS_INTERVAL_MAX 300

/* cache_write=: where a write to a block goes while the SSD cache is on.
 * The cache module takes the value from here. */
enum hy_cache_write_policy {
	HY_CACHE_WRITE_BACK,	/* into the cache, marked dirty; home later */
	HY_CACHE_WRITE_THROUGH, /* into the cache and home at once */
	HY_CACHE_WRITE_AROUND,	/* home only; a cached copy is dropped ("read-only") */
};

struct hy_options {
	char *program;	       /* basename of argv[0] */
	bool mount_helper;     /* invoked as mount.hybridfs: -f means fake, -s sloppy */
	char *backing;	       /* as given on the command line */
	char *mountpoint;      /* as given */
	char *backing_real;    /* absolute, symlinks resolved (hy_options_check) */
	char *mountpoint_real; /* absolute, symlinks resolved (hy_options_check) */
	char *state_dir;       /* absolute; default hy_options_default_state() */
	bool state_given;      /* state= named it */
	/* the state folder is an older mount's BACKING/.hybridfs (it holds a
	 * database): kept, so that nobody's state is stranded */
	bool state_legacy;
	/* BACKING and MOUNTPOINT are one directory: the daemon serves it
	 * through the descriptor it opens before the mount */
	bool in_place;
	/* How the daemon reaches the state folder's files: "/proc/self/fd/N",
	 * N the folder opened once after its checks (fs/main.c), so that a
	 * symbolic link put at state_dir's path later is never followed.
	 * NULL until then (the daemon's own string, not freed here). */
	const char *state_at;

	bool foreground;      /* -f (not in helper mode) or -d */
	bool debug;	      /* -d: libfuse's debug output, and LOG_DEBUG */
	bool single_threaded; /* -s (not in helper mode) */
	bool fake;	      /* mount -f: check everything, mount nothing */
	bool sloppy;	      /* mount -s: unknown options are ignored */
	bool show_help;
	bool show_version;

	bool allow_other; /* implies default_permissions */
	bool read_only;
	bool writeback_cache; /* kernel write-back page cache (on by default) */
	bool killpriv_v2;     /* the daemon clears setuid/setgid (fuse_channel.h; on) */
	/* splice=: READ replies of blocks that are home only go from the
	 * backing file's pages to the kernel by splice(2) (fs/ops_files.c; on) */
	bool splice;
	/* passthrough=: the files the kernel reads and writes itself
	 * (passthrough.h): none (off, the default) or those of exclude rules */
	enum { HY_PASSTHROUGH_OFF, HY_PASSTHROUGH_EXCLUDED } passthrough;
	/* opendir=: who opens directories (fs/kcache.c). kernel: the kernel
	 * itself, with no OPENDIR and RELEASEDIR requests, keeping every
	 * listing until its folder changes or its entries expire; daemon: a
	 * request each way per opendir(3); auto (the default): kernel where
	 * it offers that and entry_timeout is not 0, else daemon. */
	enum { HY_OPENDIR_AUTO, HY_OPENDIR_KERNEL, HY_OPENDIR_DAEMON } opendir;
	/* open=: who opens regular files (fs/kfile.c). kernel: the kernel
	 * itself, with no OPEN and RELEASE requests; the daemon opens its
	 * backing file at the first read or write and keeps it while it is
	 * used. daemon: a request each way per open(2). auto (the default):
	 * kernel where the kernel offers it, passthrough=off, and the kernel
	 * checks permissions at open (allow_other) or need not (the daemon
	 * is root, and so is everyone it serves); else daemon. open=kernel
	 * on a user's own mount turns on default_permissions. */
	enum { HY_OPEN_AUTO, HY_OPEN_KERNEL, HY_OPEN_DAEMON } open;
	/* readdirplus=always: every listing request asks for the entries'
	 * attributes, not only a listing's first (auto, the default) */
	bool readdirplus_always;
	double attr_timeout;	 /* seconds the kernel may keep attributes */
	double entry_timeout;	 /* seconds the kernel may keep a name */
	double negative_timeout; /* seconds the kernel may keep "no such name" */
	unsigned max_threads;	 /* FUSE worker threads at most */

	bool profile;		   /* the access profiler (on by default) */
	int64_t profile_max_age_s; /* access log retention by age; 0 keeps all */
	int64_t profile_max_rows;  /* ... and by row count; 0 keeps all */

	/* BORG: the BOPT (NULL: STATE/bopt; "none": no BOPT), its size, and
	 * how fast a reorganization copies (bytes/s; 0: no limit). The _given
	 * flags say the user asked: then a BOPT that cannot be made fails the
	 * mount instead of being left out. */
	char *bopt;
	bool bopt_given, bopt_size_given;
	uint64_t bopt_size;
	uint64_t reorg_rate;
	bool bopt_writes;	 /* writes to relocated blocks go into the BOPT */
	uint64_t bopt_readahead; /* bytes read ahead along a chain; 0: off */
	/* bopt_force: a BOPT is made on the block device at bopt= over
	 * whatever is there that is not this mount's BOPT (a filesystem,
	 * another mount's BOPT), as hybridctl format-cache --force does for a
	 * store; a regular file is never written over */
	bool bopt_force;
	/* bopt_on_ssd: the default BOPT is made even when the backing
	 * directory's disk does not spin (queue/rotational 0), where a layout
	 * saves no seeks and only costs the copies */
	bool bopt_on_ssd;

	/* The SSD cache: its store (NULL: STATE/cache; "none": no SSD cache),
	 * the store's size, the write policy, and the replacement policy (an
	 * enum hy_policy_kind of hybridfs/policy.h, kept as unsigned so that
	 * this header does not depend on the cache module). The _given flags
	 * say the user asked: then a store that cannot be made fails the mount. */
	char *cache;
	/* The default store's place when it is not the state folder (set by
	 * the daemon at mount: a faster disk than the state folder's, see
	 * hybridfs(8)); NULL: STATE/cache. Write-through, as the default. */
	char *cache_default;
	/* cache_keep=: the store keeps its lines across mounts (on), never
	 * (off), or unless it lies on the backing directory's disk and that
	 * disk spins (auto, the default: kept lines read back one by one from
	 * there cost more seeks than they save; BENCHMARKS.md, Issue 19).
	 * cache_no_keep is what the daemon decided at mount. */
	enum { HY_CACHE_KEEP_AUTO, HY_CACHE_KEEP_ON, HY_CACHE_KEEP_OFF } cache_keep;
	bool cache_no_keep;
	/* emulate=: NULL (none), or "hdd", "ssd" or "smr" with ":name=value"
	 * model settings (devmodel.h), checked by the daemon at start */
	char *emulate;
	bool cache_given;
	uint64_t cache_size;
	bool cache_size_given;
	enum hy_cache_write_policy cache_write;
	bool cache_write_given; /* else: back for a store named by cache=, through for the default
				   one */
	unsigned cache_policy;
	/* The DRAM front buffer's size (0: none; blocks go straight to the SSD
	 * store, with no heat filter), and FusionCache's heat prediction: the
	 * periods it looks back (5..10) and the heat a block needs to enter
	 * the SSD store (0..255; 0 admits every block). */
	uint64_t front_buffer;
	unsigned heat_periods;
	double heat_threshold;
	uint64_t cache_clean_rate; /* bytes/s the cleaner writes home; 0: no limit */
	uint64_t cache_seq_cutoff; /* a file's sequential write stream past this goes home; 0: never
				    */
	uint64_t cache_migrate_rate; /* bytes/s of line migrations (ReCA); 0: no limit */
	/* ReCA: every read and write classified, every process given a
	 * workload category and the cache policy of its category (on by
	 * default; needs the profiler) */
	bool reca;
	/* backend=smr: home is a shingled disk; the cache's cleaner then
	 * follows PORE (pore.h) with the rule pore= names (balance unless
	 * given; pore= alone turns it on over any disk), zones of pore_zone
	 * bytes, pore_open per mille of the zones holding dirty blocks open,
	 * divided again every pore_period bytes written into the cache (0:
	 * emulate=smr's buffer, else HY_OPTIONS_PORE_PERIOD) */
	bool backend_smr;
	enum hy_pore_rule pore;
	bool pore_given;
	uint64_t pore_zone;
	unsigned pore_open_permille;
	uint64_t pore_period;

	/* exclude=GLOB,...: paths kept out of the cache and the plans
	 * (rules.h), checked; owned. exclude_open: the word before was one
	 * of them, so a next word that is no option is another glob. */
	char **exclude;
	size_t nexclude;
	bool exclude_open;

	/* metrics=FILE: node_exporter's textfile (metrics.h), rewritten every
	 * metrics_interval seconds (NULL: none; absolute, its folder checked
	 * by hy_options_check(), owned); metrics_interval: also how often the
	 * counters kept across mounts are saved */
	char *metrics;
	unsigned metrics_interval;
	/* log=FILE: the daemon's messages are appended to FILE (absolute
	 * once checked), timestamped, instead of going to syslog; NULL:
	 * syslog once in the background (log.h). Owned. */
	char *log_file;
	/* stack: the mountpoint may be a live hybridfs mount, and the
	 * backing directory may lie on one (refused without: the mount below
	 * would be hidden, or served through a second cache) */
	bool stack;

	/* Mount options passed to the kernel unchanged, comma separated
	 * (nosuid, nodev, noexec, noatime, ...). Owned. */
	char *kernel_options;
};

/* Parses argv into @opts (zeroed by the caller or not: it is reset here).
 * Returns 0, or -EINVAL with a message naming the bad word in @why. Paths
 * are not looked at here; see hy_options_check(). */
int hy_options_parse(int argc, char **argv, struct hy_options *opts, char *why, size_t why_size);

/* Parses one comma-separated -o list into @opts, as hy_options_parse() does
 * for each -o. Commas inside a value are written as "\,". */
int hy_options_parse_list(struct hy_options *opts, const char *list, char *why, size_t why_size);

/* Checks the paths: BACKING must be a directory, MOUNTPOINT a directory that
 * is BACKING itself (a mount in place) or neither inside it nor holding it;
 * the state folder, the log file, and a BOPT or store named by path, must
 * not be inside the mountpoint. A path under a mount whose daemon died
 * (ENOTCONN) is refused with the umount that clears it; without stack, a
 * MOUNTPOINT that is a live hybridfs mount, and a BACKING on one, are
 * refused (the mount table, /proc/self/mountinfo, says which they are). Fills backing_real,
 * mountpoint_real and state_dir (the default: BACKING/.hybridfs when it holds a database, else
 * hy_options_default_state()). Returns 0 or a negative errno with a message
 * in @why. */
int hy_options_check(struct hy_options *opts, char *why, size_t why_size);

/* @path (absolute) escaped as `systemd-escape --path` does: slashes at
 * both ends dropped, the others made "-", every byte but ASCII letters,
 * digits, ':', '_' and a '.' not first written \xNN; "/" is "-". Returns
 * 0, or -ENAMETOOLONG when it does not fit @size. */
int hy_options_escape_path(const char *path, char *out, size_t size);

/* The folder holding the default state folders for the calling user (see
 * HY_STATE_ROOT_SYSTEM), into @out. Returns 0, or -ENOENT when a user's has
 * no home to go by. */
int hy_options_state_root(char *out, size_t size);

/* The default state folder of the backing directory @backing_real: the
 * state root's entry named by hy_options_escape_path(). A new string, or
 * NULL (errno set). */
char *hy_options_default_state(const char *backing_real);

/* Whether the kernel checks permissions itself (default_permissions):
 * with allow_other, and with open=kernel on a mount by a user other than
 * root (nobody else sees an open then). */
bool hy_options_default_permissions(const struct hy_options *opts);

/* Builds the argument vector for fuse_session_new(): program name, -o with
 * fsname, subtype, default_permissions (hy_options_default_permissions),
 * allow_other, and the kernel
 * options; -d when debugging. Returns 0 or -ENOMEM. @args is a struct fuse_args. */
struct fuse_args;
int hy_options_fuse_args(const struct hy_options *opts, struct fuse_args *args);

/* The usage text, for -h and for errors. */
void hy_options_usage(const char *program, FILE *out);

void hy_options_free(struct hy_options *opts);

#endif
