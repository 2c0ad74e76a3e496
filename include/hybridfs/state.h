/*
 * state.h - the state folder and its SQLite database.
 *
 * What it is for: hybridfs keeps what it learns (the mount's identity now;
 * file ids, the access log, the master access graph, plans and the
 * indirection map in later schema versions) in one SQLite database in a
 * folder of mode 0700 that only the mounting user can read (DESIGN.md
 * invariant 8). This module creates the folder, opens the database in WAL
 * mode, and brings its schema to the current version through forward
 * migrations keyed by PRAGMA user_version.
 *
 * Schema, version 12 (1 had mount_info only; 2 added the access log; 3 the
 * master access graph; 4 the indirection map; 5 its stamps, checkpoints
 * and plans; 6 the workload policy table; 7 files' gone marks; 8 the
 * volumes; 9 the files a plan left out; 10 files' full paths, indexed; 11 the
 * pin and exclude rules; 12 the counters kept across mounts):
 *
 *   table        column         type     meaning
 *   -----------  -------------  -------  -----------------------------------
 *   mount_info   key            TEXT PK  "uuid", "backing", "created",
 *                value          TEXT     "hybridfs_version" (that created it)
 *   processes    id             INT PK   hybridfs's own process number
 *                pid            INT      the kernel's pid (reused over time)
 *                comm           TEXT     process name, /proc/PID/comm
 *                exe            TEXT     /proc/PID/exe, NULL if unreadable
 *                first_seen_ns  INT      CLOCK_REALTIME, ns
 *   files        id             INT PK   hybridfs's file id: stable across
 *                                        renames and remounts
 *                dev, ino       INT      the backing inode (dev: today's
 *                                        number of its filesystem, see
 *                                        volumes) ...
 *                birth_ns       INT      ... and its birth time (statx), so
 *                                        a reused inode number is a new file
 *                path           TEXT     where it is, relative to the backing
 *                                        directory (= the mount), e.g.
 *                                        "src/lib/Makefile" (indexed): as the
 *                                        profiler saw it at the id's making,
 *                                        moved with renames of the file and
 *                                        of the folders above it
 *                                        (identity.h), or a walk since (a
 *                                        hint: BORG checks dev, ino, birth);
 *                                        a removed file's last path
 *                path_full      INT      1: path is the full relative path;
 *                                        0: perhaps a name alone (rows of
 *                                        schema 9 and before, until the file
 *                                        is seen again)
 *                first_seen_ns  INT
 *                gone_ns        INT      when its last name went with no
 *                                        handle open (NULL: not seen gone)
 *                gone_rowid     INT      access_log's last rowid then (indexed):
 *                                        its log rows are all at or below it,
 *                                        so once the log's oldest row is past
 *                                        it the row can go (profiler.h)
 *   access_log   ts_ns          INT      CLOCK_REALTIME, ns (indexed)
 *                process_id     INT      processes.id
 *                file_id        INT      files.id
 *                offset         INT      bytes
 *                length         INT      bytes
 *                mode           INT      0 read, 1 write
 *                class          INT      request class, NULL until classified
 *                phys_block     INT      4 KiB block on the backing device
 *                                        (FIEMAP), NULL when unknown
 *   access_log_blocks (view)             access_log with the 4 KiB block
 *                                        range: block_first, block_count
 *   graph_vertices id            INT PK   the master access graph's vertex
 *                file_id, block INT      range start (4 KiB blocks), indexed
 *                nblocks        INT      range length; ranges never overlap
 *                weight         REAL     requests that touched it (decayed)
 *   graph_edges  src, dst       INT PK   vertex ids: dst read after src
 *                weight         REAL     how often (decayed)
 *   analyzer_runs id            INT PK
 *                finished_ns    INT
 *                mode           TEXT     "cumulative" or "partial"
 *                last_log_rowid INT      access_log read up to here
 *                requests, vertices, edges, cut_vertices  INT  the run's figures
 *   bopt_map     file_id, block INT PK   a relocated extent (map.h)
 *                nblocks        INT
 *                bopt_block     INT      where it starts in the BOPT read region
 *                dirty          INT      1: the BOPT copy is newer than home
 *                generation     INT      the BOPT generation it belongs to
 *                stamp_ns       INT      its file's home ctime when copied
 *   bopt_checkpoint id = 1               the last map checkpoint:
 *                generation     INT      its BOPT generation
 *                epoch          INT      the journal epoch it includes
 *                saved_ns       INT
 *   bopt_plans   generation     INT PK   a reorganization's plan (reconfig.h)
 *                created_ns, finished_ns INT
 *                mode           TEXT     "cumulative" or "partial"
 *                requests, vertices, edges  INT  what the analyzer saw
 *                ranges, blocks INT      what the planner placed
 *                capacity_blocks INT     the read region it planned for
 *                state          TEXT     planned, copying, done, failed
 *                copied_blocks, dropped_blocks, kept_blocks,
 *                skipped_ranges INT      what the reconfigurator did
 *   bopt_plan_ranges generation, bopt_block INT PK  the plan, in BOPT order
 *                file_id, block, nblocks INT  the range
 *                heat           REAL     its vertex's weight
 *   plan_files   file_id        INT PK   a file the last analyzer run left out
 *                                        of the graph, so out of its plan
 *                                        (analyzer.h), replaced at each run:
 *                reason         TEXT     "removed" (gone_ns set) or
 *                                        "written-once" (a build output)
 *                requests       INT      its log rows that run skipped
 *                run            INT      analyzer_runs.id
 *   volumes      dev            INT PK   the device number (st_dev) the
 *                                        filesystem had when last the backing
 *                                        one; negative: set aside (another
 *                                        filesystem has that number now)
 *                uuid           TEXT     its UUID (FS_IOC_GETFSUUID), hex,
 *                                        unique; at mount, when the backing
 *                                        filesystem's number has changed,
 *                                        files.dev follows it (state.c)
 *                seen_ns        INT      CLOCK_REALTIME, ns
 *   workload_policy name         TEXT PK  "CATEGORY.KEY" (workload_policy.h),
 *                                        only the settings that differ from
 *                                        the defaults
 *                value          TEXT     the setting in the text form
 *   cache_rules  kind, pattern  TEXT PK  what hybridctl pins and excludes
 *                                        (pin.h): kind "pin" with a path
 *                                        relative to the mount (a file or
 *                                        a tree), or "exclude" with a glob
 *   metric_totals name          TEXT PK  a counter's status path
 *                                        ("operations.read"; counters.h)
 *                value          INT      its total over every mount so far
 *                saved_ns       INT      CLOCK_REALTIME of that snapshot
 *   metric_samples ts           INT PK   seconds since the epoch: a
 *                                        snapshot of the totals, thinned as
 *                                        it ages (counters.h)
 *                counters       TEXT     JSON {"name": total, ...}
 *
 * Errors: a database that is not SQLite, is damaged, or was made by a newer
 * hybridfs (user_version above HY_STATE_SCHEMA_VERSION) is refused with a
 * message that names the file and what is wrong; nothing is changed in it.
 *
 * Who calls it: the daemon at mount (to check, then again after it has
 * become a daemon, since a SQLite connection must not cross fork), hybridctl
 * (read-only), and the unit tests.
 *
 * Memory: struct hy_state is owned by the caller of hy_state_open() and
 * freed by hy_state_close(). Locks: a struct hy_state is used by one thread
 * at a time; later modules open their own connections.
 */
#ifndef HYBRIDFS_STATE_H
#define HYBRIDFS_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_STATE_SCHEMA_VERSION 12
#define HY_STATE_DB_NAME	"hybridfs.db"

struct sqlite3;

struct hy_state {
	char *dir;	    /* the state folder, absolute */
	char *db_path;	    /* dir/hybridfs.db */
	struct sqlite3 *db; /* open, schema current */
	char uuid[37];	    /* the mount's identity, made at creation */
	int64_t created;    /* seconds since the epoch */
	bool created_now;   /* this open made the database */
};

/* Creates @dir (mode 0700; the parent must exist) when missing, refuses a
 * @dir that is not a directory or is owned by another user, opens or creates
 * the database and migrates it. @backing is stored at creation, and updated
 * (with a notice) when the backing directory has moved. With @read_only,
 * nothing is created or migrated. Returns 0, or a negative errno with a
 * message in @why. */
int hy_state_open(const char *dir, const char *backing, bool read_only, struct hy_state **out,
		  char *why, size_t why_size);

/* Reads one mount_info value into @buf. Returns 0, -ENOENT or -EIO. */
int hy_state_get_info(struct hy_state *state, const char *key, char *buf, size_t size);

void hy_state_close(struct hy_state *state);

/* The negative errno for a SQLite result code, for every module that talks
 * to the state database: -EUCLEAN damaged, -EACCES refused, -ENOSPC full,
 * -EBUSY locked, -ENOMEM, else -EIO; 0 for SQLITE_OK. */
int hy_state_errno(int sqlite_code);

#endif
