/* profiler.c - see include/hybridfs/profiler.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/log.h"
#include "hybridfs/category.h"
#include "hybridfs/classify.h"
#include "hybridfs/profiler.h"
#include "hybridfs/ring.h"
#include "hybridfs/state.h"
#include "hybridfs/workload_policy.h"

#define BATCH		    4096   /* records popped at a time */
#define MAX_PER_TRANSACTION 262144 /* so one commit never grows without bound */
#define PROCESS_RECHECK_NS  1000000000LL
#define META_MIN	    16	 /* metadata operations before a process is metadata heavy */
#define META_DECAY	    1024 /* recent operations counted before they are halved */
#define GROUPS		    1024 /* (program, file) -> category, for grouping */

struct process_slot {
	pid_t pid; /* 0: empty */
	uint32_t process_id;
	char comm[16];
	int64_t checked_ns; /* CLOCK_MONOTONIC */
	bool dead_once;	    /* the last prune found its pid gone */
	uint64_t reads, writes, bytes_read, bytes_written, meta[HY_META_COUNT];
	/* ReCA for this process: its history of the last requests and its
	 * workload category (made at its first read or write, about 22 KiB),
	 * and how many requests of each class it sent, by mode */
	struct process_io *io;
	uint64_t classes[2][HY_CLASS_COUNT];
	/* metadata operations and data requests lately (halved together
	 * past META_DECAY): a process whose share of metadata is high gets
	 * the policy table's metadata priority */
	uint32_t meta_recent, data_recent;
	uint64_t comm_hash; /* of comm, for grouping */
	bool program_meta;  /* its program's last process was metadata heavy */
	bool grouped;	    /* its category is its group's (still unknown itself) */
	enum hy_category group_category;
};

struct process_io {
	struct hy_classify_history history;
	struct hy_category_state category;
};

/* A slot taken by another pid, or the table freed. Stripe lock held. */
static void slot_clear(struct process_slot *slot)
{
	if (slot->io) {
		hy_classify_free(&slot->io->history);
		free(slot->io);
	}
	memset(slot, 0, sizeof(*slot));
}

/* Rows the writer thread has still to insert. A file row stays listed
 * until its transaction commits, so that an open in between finds its id
 * here rather than making a second one. */
struct pending_process {
	struct pending_process *next;
	uint32_t id;
	pid_t pid;
	char comm[16];
	char *exe;
	int64_t seen_ns;
};

struct pending_file {
	struct pending_file *next;
	uint64_t id;
	uint64_t dev, ino;
	int64_t birth_ns;
	char *name;
	int64_t seen_ns;
	bool in_flight; /* being inserted by the writer now */
};

/* A file whose last name went with no handle open (hy_profiler_file_gone),
 * to be marked in its row. */
struct gone_file {
	struct gone_file *next;
	uint64_t id;
	int64_t ns;
};

/* Processes of this mount found dead at two prunes in a row: each with
 * access_log's last rowid once all its records were in (the ring empty),
 * INT64_MIN for one that made no request; its row goes once the log's
 * oldest row is past that. */
/* A file renamed through the mount (hy_profiler_file_moved): its row's
 * path, to be set, so that BORG finds it at its new name without a walk. */
struct moved_file {
	struct moved_file *next;
	uint64_t id;
	char *path;
};

struct dead_process {
	uint32_t id;
	int64_t last_rowid;
};

struct dead_processes {
	struct dead_process *v;
	size_t n, cap;
};

struct policy_snapshot {
	struct policy_snapshot *older;
	struct hy_workload_policy_table table;
};

struct hy_profiler {
	struct hy_ring *ring;
	int64_t max_age_s, max_rows;
	bool classify; /* ReCA's classes, categories and policies (reca=on) */

	/* A bucket of HY_PROFILER_WAYS slots per pid hash, so that pids that
	 * collide do not push each other out while both run; bucket b is
	 * protected by stripes[b % STRIPES]. */
	pthread_mutex_t stripes[HY_PROFILER_STRIPES];
	struct process_slot slots[HY_PROFILER_PROCESSES][HY_PROFILER_WAYS];

	_Atomic uint32_t next_process_id;
	_Atomic uint64_t next_file_id;
	atomic_bool kick; /* a producer has asked the writer to hurry */

	/* ReCA's policy table in force: an immutable snapshot swapped by
	 * pointer; the ones it replaced are kept until the profiler is freed
	 * (a request may still read one; they are a few hundred bytes and
	 * change only by hand) */
	_Atomic(struct policy_snapshot *) policy;

	/* processes of the same program on the same file share a category
	 * until their own window says one: (hash of comm and file id) ->
	 * key in the high 56 bits, category + 1 in the low 8 */
	_Atomic uint64_t groups[GROUPS];

	pthread_mutex_t mount_lock; /* the mount's classes (its history is the writer's) */
	struct hy_classify_history mount_history;
	bool mount_history_ok;
	uint64_t mount_classes[2][HY_CLASS_COUNT];

	pthread_mutex_t read_lock; /* protects read_db, select_file */
	sqlite3 *read_db;
	sqlite3_stmt *select_file;

	pthread_mutex_t queue_lock; /* protects everything below */
	pthread_cond_t writer_cond, sync_cond;
	struct pending_process *processes;
	struct pending_file *files;
	struct gone_file *gone;	  /* marks still to be written */
	struct moved_file *moved; /* new paths still to be written, newest first */
	bool stopping, wake, failed;
	bool prune_requested;  /* hy_profiler_prune() waits for it to clear */
	uint64_t committed;    /* ring records popped and committed */
	uint64_t rows_queued;  /* pending process and file rows ever queued */
	uint64_t rows_written; /* ... of which committed (a prefix: every
				* transaction carries every row still pending) */
	uint64_t rows_failed;  /* rows_queued as the last failed transaction saw it */
	int rows_error;	       /* ... and why it failed, a negative errno */
	uint64_t files_queued; /* the same for file rows alone (recovery needs them) */
	uint64_t files_written, files_failed;
	uint64_t flushes_started, flushes_done; /* transactions begun and ended */
	bool last_failed;			/* the last transaction did not commit */
	uint64_t written, pruned, batches, errors, processes_seen, files_seen;

	/* the writer thread's own */
	pthread_t writer;
	bool writer_started;
	sqlite3 *db;
	sqlite3_stmt *insert_record, *insert_process, *insert_file, *prune_age, *prune_rows;
	sqlite3_stmt *set_path, *mark_gone, *log_min, *log_max, *prune_files, *prune_process,
		*prune_old_processes;
	/* processes rows: those of earlier mounts (ids below first_process_id)
	 * once the log has nothing left from before this mount (start_rowid);
	 * this mount's dead ones through @dead */
	uint32_t first_process_id;
	int64_t start_rowid;
	bool old_processes_pruned;
	struct dead_processes dead;
	uint64_t rows_pruned; /* files and processes rows */
	int64_t pruned_at_ns;
	bool commit_failing;  /* the last commit failed */
	uint64_t commit_lost; /* records rolled back since commits began to fail */

	/* Durability of the file rows, for hy_profiler_sync_ids(): the
	 * connection commits with synchronous=NORMAL (the WAL is not synced
	 * at a commit); files_durable is the files_written that the last
	 * explicit sync of the WAL covered. durable_lock serializes those
	 * syncs (and is held across one fdatasync, never with queue_lock). */
	pthread_mutex_t durable_lock;
	uint64_t files_durable;
	char *wal_path, *db_path;
	bool dir_synced;
	char *backing; /* the backing directory (mount_info), for relative paths */
};

static int64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- processes --------------------------------------------------------- */

static void read_comm(pid_t pid, char comm[16])
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = pid > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		n = read(fd, comm, 15);
		close(fd);
	}
	if (n <= 0) {
		strcpy(comm, "?");
		return;
	}
	comm[n] = '\0';
	if (comm[n - 1] == '\n')
		comm[n - 1] = '\0';
}

static char *read_exe(pid_t pid)
{
	char path[64], target[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = pid > 0 ? readlink(path, target, sizeof(target) - 1) : -1;
	if (n <= 0)
		return NULL; /* a kernel thread, gone, or another user's */
	target[n] = '\0';
	return strdup(target);
}

static void queue_process(struct hy_profiler *p, uint32_t id, pid_t pid, const char *comm)
{
	struct pending_process *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return; /* the row is lost, the records still name the id */
	pp->id = id;
	pp->pid = pid;
	memcpy(pp->comm, comm, sizeof(pp->comm));
	pp->exe = read_exe(pid);
	pp->seen_ns = clock_ns(CLOCK_REALTIME);
	pthread_mutex_lock(&p->queue_lock);
	pp->next = p->processes;
	p->processes = pp;
	p->processes_seen++;
	p->rows_queued++;
	pthread_mutex_unlock(&p->queue_lock);
}

/* Finds (or makes) @pid's slot and applies @update under its stripe. A
 * new pid, or one not checked for a second, has its name read again
 * (outside the lock); a changed name (exec, or the pid reused) is a new
 * process. */
/* The slot of @pid in its bucket, or the one to give it: an empty one, else
 * the one checked longest ago. Under the bucket's stripe lock. */
static struct process_slot *slot_for(struct process_slot *bucket, pid_t pid)
{
	struct process_slot *victim = &bucket[0];

	for (int w = 0; w < HY_PROFILER_WAYS; w++) {
		if (bucket[w].pid == pid)
			return &bucket[w];
		if (bucket[w].pid == 0 ||
		    (victim->pid != 0 && bucket[w].checked_ns < victim->checked_ns))
			victim = &bucket[w];
	}
	return victim;
}

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static uint64_t comm_hash(const char comm[16])
{
	uint64_t h = 1469598103934665603ULL;

	for (int i = 0; i < 16 && comm[i]; i++)
		h = (h ^ (unsigned char)comm[i]) * 1099511628211ULL;
	return h;
}

/* The category of @slot's process for its policy: its own once its window
 * has one; before that, its group's (another process of the same program
 * that worked on the same file lately: make's compilers, a database's
 * workers), which its own replaces as soon as it has one. Stripe lock
 * held. */
static enum hy_category category_of(struct hy_profiler *p, struct process_slot *slot,
				    uint64_t file_id)
{
	uint64_t key = hash64(slot->comm_hash ^ hash64(file_id));
	_Atomic uint64_t *g = &p->groups[key % GROUPS];
	enum hy_category own =
		slot->io ? hy_category_current(&slot->io->category) : HY_CATEGORY_UNKNOWN;
	uint64_t v;

	if (own != HY_CATEGORY_UNKNOWN) {
		uint64_t mine = (key & ~0xffULL) | (uint64_t)(own + 1);

		/* written only when it changes: processes of one program on one
		 * file would otherwise bounce its cache line on every request */
		if (atomic_load_explicit(g, memory_order_relaxed) != mine)
			atomic_store_explicit(g, mine, memory_order_relaxed);
		slot->grouped = false;
		return own;
	}
	v = atomic_load_explicit(g, memory_order_relaxed);
	if (v && (v & ~0xffULL) == (key & ~0xffULL) && (v & 0xff) - 1 < HY_CATEGORY_COUNT) {
		slot->grouped = true;
		slot->group_category = (enum hy_category)((v & 0xff) - 1);
		return slot->group_category;
	}
	return slot->grouped ? slot->group_category : HY_CATEGORY_UNKNOWN;
}

/* Classifies a read or write in @slot's history (made on first use; a
 * process without one, out of memory, gets no class). Stripe lock held.
 * The class + 1, or 0. */
static uint8_t classify_in(struct process_slot *slot, const struct hy_profile_record *rec)
{
	enum hy_request_class cls;

	if (!slot->io) {
		slot->io = malloc(sizeof(*slot->io));
		if (!slot->io || hy_classify_init(&slot->io->history, NULL) < 0) {
			free(slot->io);
			slot->io = NULL;
			return 0;
		}
		hy_category_init(&slot->io->category, NULL);
	}
	cls = hy_classify(&slot->io->history, rec->file_id, rec->offset, rec->length,
			  rec->mode == HY_PROFILE_WRITE);
	slot->classes[rec->mode][cls]++;
	/* the file's size is not looked up per request: the end of the
	 * furthest request is what the category sees of it */
	hy_category_observe(&slot->io->category, cls, rec->mode == HY_PROFILE_WRITE, rec->length,
			    rec->offset + rec->length);
	return (uint8_t)(cls + 1);
}

static const struct hy_workload_policy_table *policy_table(struct hy_profiler *p)
{
	struct policy_snapshot *snap = atomic_load_explicit(&p->policy, memory_order_acquire);

	return snap ? &snap->table : NULL;
}

/* Metadata heavy: at least the table's share of its operations lately are
 * metadata, once it has made META_MIN operations; before that, as the
 * last process of the same program was (ls, find, du, git status: a
 * listing asks for its directory's entries first, and only replies made
 * with the priority keep them). Stripe lock held. */
static bool metadata_heavy(const struct process_slot *slot,
			   const struct hy_workload_policy_table *t)
{
	uint64_t all = (uint64_t)slot->meta_recent + slot->data_recent;

	if (!t)
		return false;
	if (all < META_MIN)
		return slot->program_meta;
	return (uint64_t)slot->meta_recent * 1000 >= (uint64_t)t->metadata_share_permille * all;
}

/* The program's slot in the groups table for its metadata verdict (its
 * comm alone: file id 0 is never a file's). */
static _Atomic uint64_t *program_group(struct hy_profiler *p, const struct process_slot *slot,
				       uint64_t *key)
{
	*key = hash64(slot->comm_hash ^ hash64(0));
	return &p->groups[*key % GROUPS];
}

/* Once a process has its own verdict, its program's is that one. */
static void program_meta_learn(struct hy_profiler *p, const struct process_slot *slot, bool heavy)
{
	uint64_t key;
	_Atomic uint64_t *g = program_group(p, slot, &key);
	uint64_t mine = (key & ~0xffULL) | (heavy ? 2 : 1);

	/* written only when it changes (a shared word: see category_of) */
	if ((uint64_t)slot->meta_recent + slot->data_recent >= META_MIN &&
	    atomic_load_explicit(g, memory_order_relaxed) != mine)
		atomic_store_explicit(g, mine, memory_order_relaxed);
}

static void count_recent(struct process_slot *slot, bool meta)
{
	if (meta)
		slot->meta_recent++;
	else
		slot->data_recent++;
	if (slot->meta_recent + slot->data_recent > META_DECAY) {
		slot->meta_recent /= 2;
		slot->data_recent /= 2;
	}
}

/* Finds (or makes) @pid's slot and counts: a read or write of @bytes
 * (@mode >= 0; classified when @t is given, its policy into @t), a
 * metadata operation (@meta >= 0; whether the process is metadata heavy
 * into *@heavy). Returns the process id (0: lost a race for the slot). */
static uint32_t process_touch_full(struct hy_profiler *p, pid_t pid, int mode, uint64_t bytes,
				   int meta, struct hy_profile_record *rec,
				   struct hy_profile_ticket *t, bool *heavy)
{
	size_t b = (size_t)pid % HY_PROFILER_PROCESSES;
	pthread_mutex_t *lock = &p->stripes[b % HY_PROFILER_STRIPES];
	struct process_slot *slot;
	int64_t now = clock_ns(CLOCK_MONOTONIC);
	char comm[16];
	uint32_t id;
	bool fresh;

	pthread_mutex_lock(lock);
	slot = slot_for(p->slots[b], pid);
	fresh = slot->pid == pid && now - slot->checked_ns < PROCESS_RECHECK_NS;
	if (!fresh) {
		pthread_mutex_unlock(lock);
		read_comm(pid, comm);
		pthread_mutex_lock(lock);
		slot = slot_for(p->slots[b], pid); /* the bucket may have changed */
		if (slot->pid == pid && strcmp(slot->comm, comm) == 0) {
			slot->checked_ns = now;
		} else {
			id = atomic_fetch_add(&p->next_process_id, 1);
			slot_clear(slot);
			slot->pid = pid;
			slot->process_id = id;
			memcpy(slot->comm, comm, sizeof(slot->comm));
			slot->comm_hash = comm_hash(comm);
			{
				uint64_t key, v;

				v = atomic_load_explicit(program_group(p, slot, &key),
							 memory_order_relaxed);
				slot->program_meta =
					(v & ~0xffULL) == (key & ~0xffULL) && (v & 0xff) == 2;
			}
			slot->checked_ns = now;
			pthread_mutex_unlock(lock);
			queue_process(p, id, pid, comm);
			pthread_mutex_lock(lock);
			slot = slot_for(p->slots[b], pid);
		}
	}
	if (slot->pid == pid) {
		if (mode == HY_PROFILE_READ) {
			slot->reads++;
			slot->bytes_read += bytes;
		} else if (mode == HY_PROFILE_WRITE) {
			slot->writes++;
			slot->bytes_written += bytes;
		}
		if (meta >= 0) {
			slot->meta[meta]++;
			bool h;

			count_recent(slot, true);
			h = metadata_heavy(slot, policy_table(p));
			program_meta_learn(p, slot, h);
			if (heavy)
				*heavy = h;
		}
		if (rec)
			count_recent(slot, false);
		if (rec && p->classify) {
			const struct hy_workload_policy_table *table = policy_table(p);

			rec->klass = classify_in(slot, rec);
			if (t && table) {
				t->category = category_of(p, slot, rec->file_id);
				hy_cache_hint_from(table, t->category, mode == HY_PROFILE_WRITE,
						   rec->klass ? (int)rec->klass - 1 : -1, &t->hint);
				t->hinted = true;
			}
		}
		id = slot->process_id;
	} else {
		id = 0; /* lost a race for the slot to another pid: rare, unnamed */
	}
	pthread_mutex_unlock(lock);
	return id;
}

static uint32_t process_touch(struct hy_profiler *p, pid_t pid, int mode, uint64_t bytes, int meta,
			      struct hy_profile_record *rec)
{
	return process_touch_full(p, pid, mode, bytes, meta, rec, NULL, NULL);
}

uint32_t hy_profiler_process(struct hy_profiler *p, pid_t pid)
{
	return process_touch(p, pid, -1, 0, -1, NULL);
}

double hy_profiler_count_meta(struct hy_profiler *p, pid_t pid, enum hy_profile_meta kind)
{
	const struct hy_workload_policy_table *t;
	bool heavy = false;

	if (!p || pid <= 0)
		return 0;
	process_touch_full(p, pid, -1, 0, (int)kind, NULL, NULL, &heavy);
	if (!p->classify)
		return 0; /* reca=off: no priority */
	t = policy_table(p);
	return heavy && t ? t->metadata_timeout_ms / 1000.0 : 0;
}

/* ---- files ------------------------------------------------------------- */

static int64_t birth_of(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &stx) < 0 || !(stx.stx_mask & STATX_BTIME))
		return 0; /* no birth time: an inode number's reuse goes unnoticed */
	return (int64_t)stx.stx_btime.tv_sec * 1000000000LL + stx.stx_btime.tv_nsec;
}

/* What a new file's row keeps as its path: where @fd is relative to the
 * backing directory (what /proc says of the descriptor, the moment the id
 * is made), so that BORG can find the file again without a walk of the
 * tree; @name alone when that cannot be told (another filesystem's view,
 * the file already removed). NULL when out of memory or without a name. */
static char *relative_path(const struct hy_profiler *p, int fd, const char *name)
{
	char link[64], target[4096];
	size_t len = p->backing ? strlen(p->backing) : 0;
	ssize_t n = -1;

	if (len && fd >= 0) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
	}
	if (n > (ssize_t)len + 1 && strncmp(target, p->backing, len) == 0 && target[len] == '/') {
		target[n] = '\0';
		if (!(n > 10 && strcmp(target + n - 10, " (deleted)") == 0))
			return strdup(target + len + 1);
	}
	return name ? strdup(name) : NULL;
}

/* The id of the file (@st, @birth) if it has one: pending (queued, not yet
 * committed) or in the database. read_lock held: a row leaves the pending
 * list only once it is committed, so a file is in one or the other, never
 * between the two. 0 with *@id 0 when it has none; -EIO (logged) when the
 * database cannot say, and then no id may be made for it: the file may
 * have one already. */
static int lookup_file(struct hy_profiler *p, const struct stat *st, int64_t birth, uint64_t *id)
{
	struct pending_file *pf;
	int rc;

	*id = 0;
	pthread_mutex_lock(&p->queue_lock);
	for (pf = p->files; pf; pf = pf->next)
		if (pf->ino == st->st_ino && pf->dev == st->st_dev && pf->birth_ns == birth) {
			*id = pf->id;
			break;
		}
	pthread_mutex_unlock(&p->queue_lock);
	if (*id)
		return 0;
	sqlite3_bind_int64(p->select_file, 1, (int64_t)st->st_dev);
	sqlite3_bind_int64(p->select_file, 2, (int64_t)st->st_ino);
	sqlite3_bind_int64(p->select_file, 3, birth);
	rc = sqlite3_step(p->select_file);
	if (rc == SQLITE_ROW)
		*id = (uint64_t)sqlite3_column_int64(p->select_file, 0);
	else if (rc != SQLITE_DONE)
		hy_log(LOG_ERR, "profiler: looking up the file id of inode %llu: %s",
		       (unsigned long long)st->st_ino, sqlite3_errmsg(p->read_db));
	sqlite3_reset(p->select_file);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

/* Finds the file's id, or makes one (serialized by read_lock, so that two
 * opens can never make two ids for one file). A new id's path is read from
 * /proc under it: one readlink, once per file. 0, -EIO or -ENOMEM. */
static int find_or_make_file(struct hy_profiler *p, const struct stat *st, int64_t birth, int fd,
			     const char *name, uint64_t *id)
{
	struct pending_file *pf;
	int rc;

	pthread_mutex_lock(&p->read_lock);
	rc = lookup_file(p, st, birth, id);
	if (rc == 0 && !*id) {
		pf = calloc(1, sizeof(*pf));
		if (!pf) {
			rc = -ENOMEM;
		} else {
			pf->dev = st->st_dev;
			pf->ino = st->st_ino;
			pf->birth_ns = birth;
			pf->name = relative_path(p, fd, name);
			pf->seen_ns = clock_ns(CLOCK_REALTIME);
			pthread_mutex_lock(&p->queue_lock);
			pf->id = *id = atomic_fetch_add(&p->next_file_id, 1);
			pf->next = p->files;
			p->files = pf;
			p->files_seen++;
			p->rows_queued++;
			p->files_queued++;
			pthread_mutex_unlock(&p->queue_lock);
		}
	}
	pthread_mutex_unlock(&p->read_lock);
	return rc;
}

uint64_t hy_profiler_find_file(struct hy_profiler *p, int fd, const struct stat *st)
{
	uint64_t id;

	pthread_mutex_lock(&p->read_lock);
	if (lookup_file(p, st, birth_of(fd), &id) < 0)
		id = 0;
	pthread_mutex_unlock(&p->read_lock);
	return id;
}

int hy_profiler_open(struct hy_profiler *p, struct hy_profile_handle *handle, int fd,
		     const struct stat *st, uint64_t known_id, const char *name, pid_t pid)
{
	int rc = 0;

	memset(handle, 0, sizeof(*handle));
	pthread_mutex_init(&handle->lock, NULL);
	handle->fiemap_at_ns = INT64_MIN / 2;
	handle->opener = process_touch(p, pid, -1, 0, -1, NULL);
	handle->opener_pid = pid;
	handle->file_id = known_id;
	/* on error the handle works on, with file id 0: the file is served,
	 * not profiled, not cached (the cache and the map know files by id) */
	if (!known_id)
		rc = find_or_make_file(p, st, birth_of(fd), fd, name, &handle->file_id);
	return rc;
}

void hy_profiler_close(struct hy_profile_handle *handle)
{
	pthread_mutex_destroy(&handle->lock);
}

void hy_profiler_file_gone(struct hy_profiler *p, uint64_t file_id)
{
	struct gone_file *g;

	if (!p || !file_id)
		return;
	g = malloc(sizeof(*g));
	if (!g) {
		/* the row stays: it costs a row, never data */
		hy_log(LOG_WARNING,
		       "profiler: file %" PRIu64 " is gone, but out of memory to say so", file_id);
		return;
	}
	g->id = file_id;
	g->ns = clock_ns(CLOCK_REALTIME);
	pthread_mutex_lock(&p->queue_lock);
	g->next = p->gone;
	p->gone = g;
	pthread_mutex_unlock(&p->queue_lock);
}

void hy_profiler_file_moved(struct hy_profiler *p, uint64_t file_id, int fd)
{
	struct moved_file *m;

	if (!p || !file_id || fd < 0)
		return;
	m = calloc(1, sizeof(*m));
	if (m)
		m->path = relative_path(p, fd, NULL);
	if (!m || !m->path) {
		/* the row keeps its old path: BORG finds the file by a walk */
		free(m);
		return;
	}
	m->id = file_id;
	pthread_mutex_lock(&p->queue_lock);
	m->next = p->moved;
	p->moved = m;
	p->rows_queued++; /* a sync waits for it like for a new row */
	pthread_mutex_unlock(&p->queue_lock);
}

static struct moved_file *moved_reverse(struct moved_file *m)
{
	struct moved_file *out = NULL, *next;

	for (; m; m = next) {
		next = m->next;
		m->next = out;
		out = m;
	}
	return out;
}

static void moved_free(struct moved_file *m)
{
	struct moved_file *next;

	for (; m; m = next) {
		next = m->next;
		free(m->path);
		free(m);
	}
}

/* ---- physical addresses ------------------------------------------------ */

static void fiemap_refresh(struct hy_profile_handle *h, int fd, uint64_t offset)
{
	struct {
		struct fiemap map;
		struct fiemap_extent extents[HY_PROFILER_EXTENTS];
	} buf;

	memset(&buf, 0, sizeof(buf));
	buf.map.fm_start = offset & ~(uint64_t)4095;
	buf.map.fm_length = FIEMAP_MAX_OFFSET - buf.map.fm_start;
	buf.map.fm_extent_count = HY_PROFILER_EXTENTS;
	h->extents = 0;
	if (ioctl(fd, FS_IOC_FIEMAP, &buf.map) < 0)
		return; /* the backing filesystem does not say: addresses stay unknown */
	for (unsigned i = 0; i < buf.map.fm_mapped_extents && i < HY_PROFILER_EXTENTS; i++) {
		const struct fiemap_extent *e = &buf.extents[i];
		bool unknown = e->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
					      FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_INLINE |
					      FIEMAP_EXTENT_NOT_ALIGNED);

		h->extent[h->extents].logical = e->fe_logical;
		h->extent[h->extents].physical = unknown ? 0 : e->fe_physical;
		h->extent[h->extents].length = e->fe_length;
		h->extents++;
	}
}

/* The physical 4 KiB block of @offset, or -1. */
static int64_t phys_block(struct hy_profile_handle *h, int fd, uint64_t offset)
{
	int64_t now, block = -1;
	bool refreshed = false;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		/* extents come sorted from FIEMAP: a binary search */
		unsigned lo = 0, hi = h->extents;

		while (lo < hi) {
			unsigned mid = (lo + hi) / 2;

			if (offset < h->extent[mid].logical)
				hi = mid;
			else if (offset >= h->extent[mid].logical + h->extent[mid].length)
				lo = mid + 1;
			else {
				if (h->extent[mid].physical)
					block = (int64_t)((h->extent[mid].physical + offset -
							   h->extent[mid].logical) /
							  4096);
				goto out;
			}
		}
		if (refreshed)
			break;
		now = clock_ns(CLOCK_MONOTONIC);
		if (now - h->fiemap_at_ns < 1000000000LL)
			break; /* at most one FIEMAP a second per open file */
		h->fiemap_at_ns = now;
		fiemap_refresh(h, fd, offset);
		refreshed = true;
	}
out:
	pthread_mutex_unlock(&h->lock);
	return block;
}

/* ---- the I/O path ------------------------------------------------------ */

void hy_profiler_begin(struct hy_profiler *p, struct hy_profile_handle *handle, pid_t pid,
		       enum hy_profile_mode mode, uint64_t offset, uint32_t length,
		       struct hy_profile_ticket *t)
{
	struct hy_profile_record rec;

	memset(t, 0, sizeof(*t));
	memset(&rec, 0, sizeof(rec));
	rec.file_id = handle->file_id;
	rec.offset = offset;
	rec.length = length;
	rec.mode = (uint8_t)mode;
	if (pid <= 0)
		pid = handle->opener_pid;
	t->pid = pid;
	t->mode = mode;
	t->offset = offset;
	t->length = length;
	/* the process's class goes into the record, and the policy of its
	 * category into the ticket */
	t->process_id = process_touch_full(p, pid, mode, length, -1, &rec, t, NULL);
	t->klass = rec.klass;
}

void hy_profiler_end(struct hy_profiler *p, struct hy_profile_handle *handle, int fd,
		     const struct hy_profile_ticket *t, ssize_t done)
{
	struct hy_profile_record rec;
	struct hy_ring_stats rs;

	if ((done > 0 ? (uint64_t)done : 0) < t->length) {
		/* short (end of file) or failed: begin counted too many bytes */
		uint64_t moved = done > 0 ? (uint64_t)done : 0;
		size_t b = (size_t)t->pid % HY_PROFILER_PROCESSES;
		pthread_mutex_t *lock = &p->stripes[b % HY_PROFILER_STRIPES];
		struct process_slot *slot;

		pthread_mutex_lock(lock);
		slot = slot_for(p->slots[b], t->pid);
		if (slot->pid == t->pid && slot->process_id == t->process_id) {
			uint64_t *bytes = t->mode == HY_PROFILE_WRITE ? &slot->bytes_written
								      : &slot->bytes_read;

			*bytes -= t->length - moved;
		}
		pthread_mutex_unlock(lock);
	}
	if (done <= 0)
		return; /* nothing moved: nothing to log */
	memset(&rec, 0, sizeof(rec));
	rec.ts_ns = clock_ns(CLOCK_REALTIME);
	rec.file_id = handle->file_id;
	rec.offset = t->offset;
	rec.length = (uint32_t)done;
	rec.mode = (uint8_t)t->mode;
	rec.process_id = t->process_id;
	rec.klass = t->klass;
	rec.phys_block = phys_block(handle, fd, t->offset);
	/* A full ring drops the record (the ring counts it). Past half full
	 * the writer is woken early, once, instead of on its next tick. */
	if (hy_ring_push(p->ring, &rec)) {
		hy_ring_get_stats(p->ring, &rs);
		if (rs.queued < rs.capacity / 2)
			return;
	}
	if (!atomic_exchange(&p->kick, true)) {
		pthread_mutex_lock(&p->queue_lock);
		p->wake = true;
		pthread_cond_signal(&p->writer_cond);
		pthread_mutex_unlock(&p->queue_lock);
	}
}

void hy_profiler_log(struct hy_profiler *p, struct hy_profile_handle *handle, int fd, pid_t pid,
		     enum hy_profile_mode mode, uint64_t offset, uint32_t length)
{
	struct hy_profile_ticket t;

	hy_profiler_begin(p, handle, pid, mode, offset, length, &t);
	hy_profiler_end(p, handle, fd, &t, length);
}

/* ---- the writer thread ------------------------------------------------- */

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **stmt)
{
	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, NULL) != SQLITE_OK) {
		hy_log(LOG_ERR, "profiler: preparing \"%.40s...\": %s", sql, sqlite3_errmsg(db));
		return -EIO;
	}
	return 0;
}

static int step_done(sqlite3 *db, sqlite3_stmt *stmt)
{
	int rc = sqlite3_step(stmt);

	sqlite3_reset(stmt);
	if (rc != SQLITE_DONE) {
		hy_log(LOG_ERR, "profiler: insert: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	return 0;
}

/* The mount's own classes: the writer classifies what it pops, in the
 * ring's order (the order the requests were served in, within a few
 * microseconds), so that no request takes a mount-wide lock for it. */
static void classify_mount(struct hy_profiler *p, const struct hy_profile_record *recs, size_t n)
{
	if (!p->mount_history_ok || !p->classify)
		return;
	pthread_mutex_lock(&p->mount_lock);
	for (size_t i = 0; i < n; i++) {
		const struct hy_profile_record *r = &recs[i];

		if (r->mode <= HY_PROFILE_WRITE)
			p->mount_classes[r->mode]
					[hy_classify(&p->mount_history, r->file_id, r->offset,
						     r->length, r->mode == HY_PROFILE_WRITE)]++;
	}
	pthread_mutex_unlock(&p->mount_lock);
}

static void insert_records(struct hy_profiler *p, const struct hy_profile_record *recs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct hy_profile_record *r = &recs[i];
		sqlite3_stmt *st = p->insert_record;

		sqlite3_bind_int64(st, 1, r->ts_ns);
		sqlite3_bind_int64(st, 2, r->process_id);
		sqlite3_bind_int64(st, 3, (int64_t)r->file_id);
		sqlite3_bind_int64(st, 4, (int64_t)r->offset);
		sqlite3_bind_int64(st, 5, r->length);
		sqlite3_bind_int(st, 6, r->mode);
		if (r->klass)
			sqlite3_bind_int(st, 7, r->klass - 1);
		else
			sqlite3_bind_null(st, 7);
		if (r->phys_block >= 0)
			sqlite3_bind_int64(st, 8, r->phys_block);
		else
			sqlite3_bind_null(st, 8);
		if (step_done(p->db, st) == 0)
			p->written++;
		else
			p->errors++;
	}
}

/* One transaction: the pending process and file rows, then everything in
 * the ring (up to MAX_PER_TRANSACTION records). Rows leave the pending
 * lists only once a commit that carries them has worked: a transaction that
 * fails (the state folder's disk full) leaves them for the next one, which
 * carries every row still pending, so the rows committed are always all
 * those queued before some moment (rows_written, files_written). */
static void flush_once(struct hy_profiler *p, struct hy_profile_record *buf)
{
	struct pending_process *procs, *pp;
	struct pending_file *pf;
	struct gone_file *gone, *g;
	struct moved_file *moved, *mv;
	bool drained = false;
	size_t n = 0, total = 0;
	uint64_t popped, rows, files, written_before = p->written, lost = 0;
	bool commit_failed = false, rows_ok = true;
	size_t carried = 0; /* rows inserted */
	int why = 0;

	pthread_mutex_lock(&p->queue_lock);
	procs = p->processes;
	p->processes = NULL;
	gone = p->gone;
	p->gone = NULL;
	moved = moved_reverse(p->moved); /* oldest first: the last rename wins */
	p->moved = NULL;
	for (pf = p->files; pf; pf = pf->next)
		pf->in_flight = true;
	rows = p->rows_queued; /* every row queued so far is in this transaction */
	files = p->files_queued;
	p->flushes_started++;
	pthread_mutex_unlock(&p->queue_lock);

	if (sqlite3_exec(p->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		/* nothing is inserted outside a transaction: the rows wait,
		 * the records stay in the ring */
		why = hy_state_errno(sqlite3_errcode(p->db));
		if (!p->commit_failing)
			hy_log(LOG_ERR, "profiler: begin: %s", sqlite3_errmsg(p->db));
		p->commit_failing = true;
		p->errors++;
		commit_failed = true;
		goto done;
	}
	for (pp = procs; pp; pp = pp->next) {
		sqlite3_stmt *st = p->insert_process;

		sqlite3_bind_int64(st, 1, pp->id);
		sqlite3_bind_int64(st, 2, pp->pid);
		sqlite3_bind_text(st, 3, pp->comm, -1, SQLITE_STATIC);
		if (pp->exe)
			sqlite3_bind_text(st, 4, pp->exe, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 4);
		sqlite3_bind_int64(st, 5, pp->seen_ns);
		if (step_done(p->db, st)) {
			p->errors++;
			rows_ok = false;
		}
		carried++;
	}
	/* the in-flight files stay listed (and findable) until the commit */
	pthread_mutex_lock(&p->queue_lock);
	pf = p->files;
	pthread_mutex_unlock(&p->queue_lock);
	for (; pf; pf = pf->next) {
		sqlite3_stmt *st = p->insert_file;

		if (!pf->in_flight)
			continue;
		sqlite3_bind_int64(st, 1, (int64_t)pf->id);
		sqlite3_bind_int64(st, 2, (int64_t)pf->dev);
		sqlite3_bind_int64(st, 3, (int64_t)pf->ino);
		sqlite3_bind_int64(st, 4, pf->birth_ns);
		if (pf->name)
			sqlite3_bind_text(st, 5, pf->name, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 5);
		sqlite3_bind_int64(st, 6, pf->seen_ns);
		if (step_done(p->db, st)) {
			p->errors++;
			rows_ok = false;
		}
		carried++;
	}
	if (!rows_ok) {
		why = hy_state_errno(sqlite3_errcode(p->db));
		/* SQLite may have rolled the whole transaction back (a full
		 * disk): the records would then be committed one by one */
		if (sqlite3_get_autocommit(p->db)) {
			commit_failed = true;
			goto done;
		}
	}
	/* after the rows' inserts: a file made and renamed in one batch */
	for (mv = moved; mv; mv = mv->next) {
		sqlite3_bind_int64(p->set_path, 1, (int64_t)mv->id);
		sqlite3_bind_text(p->set_path, 2, mv->path, -1, SQLITE_STATIC);
		if (step_done(p->db, p->set_path)) {
			p->errors++;
			rows_ok = false;
		}
	}
	while (total < MAX_PER_TRANSACTION && (n = hy_ring_pop(p->ring, buf, BATCH)) > 0) {
		classify_mount(p, buf, n);
		insert_records(p, buf, n);
		total += n;
	}
	drained = n == 0;
	/* A gone file's records were all pushed before it was said gone: once
	 * the ring has been emptied in this transaction they are all in, at or
	 * below the rowid its mark keeps (else the mark waits) */
	if (drained) {
		for (g = gone; g; g = g->next) {
			sqlite3_bind_int64(p->mark_gone, 1, (int64_t)g->id);
			sqlite3_bind_int64(p->mark_gone, 2, g->ns);
			if (step_done(p->db, p->mark_gone))
				drained = false; /* kept for the next transaction */
		}
	}
	/* A commit that fails (the state folder's disk is full, typically)
	 * rolls the records back: they are counted as errors, not as written,
	 * and the failure is logged once, not once a batch, until a commit
	 * works again (issue 8: a full state disk must not flood the log). */
	if (sqlite3_exec(p->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		commit_failed = true;
		why = hy_state_errno(sqlite3_errcode(p->db));
		lost = p->written - written_before;
		if (!p->commit_failing)
			hy_log(LOG_ERR,
			       "profiler: commit: %s; the access log loses records until a "
			       "commit works again (counted as errors), file and process rows "
			       "wait for it",
			       sqlite3_errmsg(p->db));
		p->commit_failing = true;
		p->commit_lost += lost;
		if (sqlite3_exec(p->db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK &&
		    sqlite3_get_autocommit(p->db) == 0)
			hy_log(LOG_ERR, "profiler: rollback: %s", sqlite3_errmsg(p->db));
	} else if (p->commit_failing && (p->written > written_before || carried)) {
		/* (an empty transaction commits even on a full disk) */
		hy_log(LOG_NOTICE, "profiler: commits work again; %" PRIu64 " records were lost",
		       p->commit_lost);
		p->commit_failing = false;
		p->commit_lost = 0;
	}
	p->batches++;
done:
	if (why == 0 && (commit_failed || !rows_ok))
		why = -EIO;

	pthread_mutex_lock(&p->queue_lock);
	p->written -= lost;
	if (commit_failed)
		p->errors += lost ? lost : 1;
	if (commit_failed || !rows_ok) {
		/* retried by the next transaction (INSERT OR REPLACE / OR
		 * IGNORE: a row that did get in is not doubled) */
		for (pf = p->files; pf; pf = pf->next)
			pf->in_flight = false;
		if (procs) {
			for (pp = procs; pp->next; pp = pp->next)
				;
			pp->next = p->processes;
			p->processes = procs;
			procs = NULL;
		}
		p->rows_failed = rows;
		p->files_failed = files;
		p->rows_error = why;
		p->last_failed = true;
	} else {
		p->last_failed = false;
		for (struct pending_file **link = &p->files; *link;) {
			pf = *link;
			if (pf->in_flight) {
				*link = pf->next;
				free(pf->name);
				free(pf);
			} else {
				link = &pf->next;
			}
		}
		p->rows_written = rows;
		p->files_written = files;
	}
	{
		struct hy_ring_stats rs;

		hy_ring_get_stats(p->ring, &rs);
		popped = rs.popped;
	}
	p->committed = popped;
	p->flushes_done++;
	if (moved && (commit_failed || !rows_ok)) {
		/* retried, behind the renames queued since (newest first) */
		struct moved_file **tail = &p->moved;

		while (*tail)
			tail = &(*tail)->next;
		*tail = moved_reverse(moved);
		moved = NULL;
	}
	if (gone && (commit_failed || !drained)) {
		for (g = gone; g->next; g = g->next)
			;
		g->next = p->gone;
		p->gone = gone;
		gone = NULL;
	}
	pthread_cond_broadcast(&p->sync_cond);
	pthread_mutex_unlock(&p->queue_lock);
	while (procs) {
		pp = procs->next;
		free(procs->exe);
		free(procs);
		procs = pp;
	}
	while (gone) {
		g = gone->next;
		free(gone);
		gone = g;
	}
	moved_free(moved);
}

static int64_t one_int(sqlite3 *db, sqlite3_stmt *st, int64_t otherwise)
{
	int64_t v = otherwise;
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	else if (rc != SQLITE_ROW)
		hy_log(LOG_ERR, "profiler: prune: %s", sqlite3_errmsg(db));
	sqlite3_reset(st);
	return v;
}

/* Slots of processes whose pid was gone at this prune and the last one are
 * emptied, and their ids listed in p->dead with the log's last rowid: ten
 * seconds dead, every record they pushed is in the ring or in the log, and
 * with the ring empty, in the log. A pid in use again keeps its slot (its
 * name is checked at its next request). */
static void find_dead(struct hy_profiler *p, int64_t last_rowid)
{
	struct hy_ring_stats rs;
	bool settled;

	hy_ring_get_stats(p->ring, &rs);
	settled = rs.queued == 0;
	for (size_t b = 0; b < HY_PROFILER_PROCESSES; b++) {
		pthread_mutex_t *lock = &p->stripes[b % HY_PROFILER_STRIPES];

		pthread_mutex_lock(lock);
		for (int w = 0; w < HY_PROFILER_WAYS; w++) {
			struct process_slot *slot = &p->slots[b][w];
			struct dead_processes *d = &p->dead;

			if (slot->pid <= 0)
				continue;
			if (kill(slot->pid, 0) == 0 || errno != ESRCH) {
				slot->dead_once = false;
				continue;
			}
			if (!slot->dead_once || !settled) {
				slot->dead_once = true;
				continue;
			}
			if (d->n == d->cap) {
				size_t cap = d->cap ? d->cap * 2 : 64;
				struct dead_process *v = realloc(d->v, cap * sizeof(*v));

				if (!v)
					continue; /* its row stays: a row, never data */
				d->v = v;
				d->cap = cap;
			}
			/* one that never read nor wrote has no log rows at all */
			d->v[d->n++] = (struct dead_process){
				slot->process_id,
				slot->reads || slot->writes ? last_rowid : INT64_MIN};
			slot_clear(slot);
		}
		pthread_mutex_unlock(lock);
	}
}

/* Rows of files and processes that nothing refers to any more (issue 16):
 * a file seen gone (its last name went with no handle open) with no log
 * rows left (its mark's rowid below the log's oldest), no indirection map
 * entry, no vertex of the master graph and no range of a kept plan; a
 * process that is not running with no log rows left. The cache drops a
 * gone file's blocks when it is said gone (hy_engine_forget_file), before
 * the mark. The row with the highest id is always kept: ids are never
 * given twice (the next id at open is the highest + 1). */
static void prune_rows(struct hy_profiler *p)
{
	int64_t oldest = one_int(p->db, p->log_min, INT64_MAX);
	int64_t last = one_int(p->db, p->log_max, 0);
	struct dead_processes *d = &p->dead;

	sqlite3_bind_int64(p->prune_files, 1, oldest);
	if (step_done(p->db, p->prune_files) == 0)
		p->rows_pruned += (uint64_t)sqlite3_changes(p->db);
	find_dead(p, last);
	{
		size_t kept = 0;

		for (size_t i = 0; i < d->n; i++) {
			if (d->v[i].last_rowid < oldest) {
				sqlite3_bind_int64(p->prune_process, 1, d->v[i].id);
				if (step_done(p->db, p->prune_process) == 0) {
					p->rows_pruned += (uint64_t)sqlite3_changes(p->db);
					continue;
				}
			}
			d->v[kept++] = d->v[i];
		}
		d->n = kept;
	}
	if (!p->old_processes_pruned && p->start_rowid < oldest) {
		sqlite3_bind_int64(p->prune_old_processes, 1, p->first_process_id);
		if (step_done(p->db, p->prune_old_processes) == 0) {
			p->rows_pruned += (uint64_t)sqlite3_changes(p->db);
			p->old_processes_pruned = true;
		}
	}
}

static void prune(struct hy_profiler *p, bool now_please)
{
	int64_t now = clock_ns(CLOCK_MONOTONIC);

	if (!now_please && now - p->pruned_at_ns < (int64_t)HY_PROFILER_PRUNE_S * 1000000000LL)
		return;
	p->pruned_at_ns = now;
	if (p->max_age_s > 0) {
		sqlite3_bind_int64(p->prune_age, 1,
				   clock_ns(CLOCK_REALTIME) - p->max_age_s * 1000000000LL);
		if (step_done(p->db, p->prune_age) == 0)
			p->pruned += (uint64_t)sqlite3_changes(p->db);
	}
	if (p->max_rows > 0) {
		sqlite3_bind_int64(p->prune_rows, 1, p->max_rows);
		if (step_done(p->db, p->prune_rows) == 0)
			p->pruned += (uint64_t)sqlite3_changes(p->db);
	}
	prune_rows(p);
}

static void *writer_main(void *arg)
{
	struct hy_profiler *p = arg;
	struct hy_profile_record *buf = malloc(BATCH * sizeof(*buf));
	struct timespec deadline;
	bool stopping, prune_now;

	pthread_setname_np(pthread_self(), "hy-profiler");
	if (!buf) {
		hy_log(LOG_ERR, "profiler: out of memory; the access log stops");
		pthread_mutex_lock(&p->queue_lock);
		p->failed = true;
		pthread_cond_broadcast(&p->sync_cond);
		pthread_mutex_unlock(&p->queue_lock);
		return NULL;
	}
	pthread_mutex_lock(&p->queue_lock);
	for (;;) {
		if (!p->stopping && !p->wake) {
			clock_gettime(CLOCK_REALTIME, &deadline);
			deadline.tv_nsec += HY_PROFILER_FLUSH_MS * 1000000L;
			if (deadline.tv_nsec >= 1000000000L) {
				deadline.tv_sec++;
				deadline.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&p->writer_cond, &p->queue_lock, &deadline);
		}
		p->wake = false;
		stopping = p->stopping;
		prune_now = p->prune_requested;
		pthread_mutex_unlock(&p->queue_lock);

		atomic_store(&p->kick, false);
		flush_once(p, buf);
		prune(p, prune_now);

		pthread_mutex_lock(&p->queue_lock);
		if (prune_now) {
			p->prune_requested = false;
			pthread_cond_broadcast(&p->sync_cond);
		}
		{
			struct hy_ring_stats rs;

			/* a transaction stopped at its cap: go on at once (not
			 * after a failure: the next try waits for the tick) */
			hy_ring_get_stats(p->ring, &rs);
			if (rs.queued && !p->last_failed)
				p->wake = true;
		}
		if (stopping) {
			struct hy_ring_stats rs;

			hy_ring_get_stats(p->ring, &rs);
			if (rs.queued == 0 && !p->processes && !p->files)
				break;
			if (p->last_failed) {
				/* the last try, made after the stop was asked for,
				 * failed too: the rows are lost (a file gets a new
				 * id at the next mount; the cache has sent its
				 * dirty blocks home by now) */
				size_t nfiles = 0, nprocs = 0;

				for (struct pending_file *pf = p->files; pf; pf = pf->next)
					nfiles++;
				for (struct pending_process *pp = p->processes; pp; pp = pp->next)
					nprocs++;
				if (nfiles || nprocs)
					hy_log(LOG_ERR,
					       "profiler: stopping with %zu file and %zu process "
					       "rows that could not be written to the database "
					       "(%s): they are lost",
					       nfiles, nprocs, strerror(-p->rows_error));
				break;
			}
		}
	}
	pthread_mutex_unlock(&p->queue_lock);
	free(buf);
	return NULL;
}

/* ---- life cycle ------------------------------------------------------- */

static int open_db(const char *path, int flags, sqlite3 **db, char *why, size_t why_size)
{
	if (sqlite3_open_v2(path, db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(why, why_size, "profiler: database \"%s\": %s", path,
			 *db ? sqlite3_errmsg(*db) : "out of memory");
		return -EIO;
	}
	sqlite3_busy_timeout(*db, 10000);
	return 0;
}

static int64_t max_id(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		v = -1;
	sqlite3_finalize(st);
	return v;
}

int hy_profiler_new(const struct hy_profiler_config *config, struct hy_profiler **out, char *why,
		    size_t why_size)
{
	struct hy_profiler *p = calloc(1, sizeof(*p));
	int64_t procs, files;
	int rc;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	for (int i = 0; i < HY_PROFILER_STRIPES; i++)
		pthread_mutex_init(&p->stripes[i], NULL);
	pthread_mutex_init(&p->read_lock, NULL);
	pthread_mutex_init(&p->mount_lock, NULL);
	p->mount_history_ok = hy_classify_init(&p->mount_history, NULL) == 0;
	pthread_mutex_init(&p->queue_lock, NULL);
	pthread_mutex_init(&p->durable_lock, NULL);
	pthread_cond_init(&p->writer_cond, NULL);
	pthread_cond_init(&p->sync_cond, NULL);
	p->max_age_s = config->max_age_s;
	p->max_rows = config->max_rows;
	p->classify = !config->no_classify;
	p->pruned_at_ns = clock_ns(CLOCK_MONOTONIC);

	rc = hy_ring_new(config->ring_capacity, sizeof(struct hy_profile_record), &p->ring);
	if (rc) {
		snprintf(why, why_size, "profiler: cannot make a ring of %zu records",
			 config->ring_capacity);
		goto fail;
	}
	p->db_path = strdup(config->db_path);
	if (!p->db_path || asprintf(&p->wal_path, "%s-wal", config->db_path) < 0) {
		p->wal_path = NULL;
		snprintf(why, why_size, "profiler: out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	rc = open_db(config->db_path, SQLITE_OPEN_READWRITE, &p->db, why, why_size);
	if (rc == 0)
		rc = open_db(config->db_path, SQLITE_OPEN_READONLY, &p->read_db, why, why_size);
	if (rc)
		goto fail;
	/* WAL with synchronous=NORMAL: a commit does not wait for the disk; a
	 * crash may lose the newest log rows, never corrupt the database. The
	 * file rows that recovery needs are made durable on demand, by
	 * hy_profiler_sync_ids() (one sync of the WAL per batch of new files
	 * that are fsync'd, not one per commit nor per fsync) */
	if (sqlite3_exec(p->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK)
		hy_log(LOG_WARNING, "profiler: synchronous=NORMAL: %s", sqlite3_errmsg(p->db));
	procs = max_id(p->db, "SELECT coalesce(max(id), 0) FROM processes");
	files = max_id(p->db, "SELECT coalesce(max(id), 0) FROM files");
	if (procs < 0 || files < 0) {
		snprintf(why, why_size, "profiler: database \"%s\" lacks the access log tables: %s",
			 config->db_path, sqlite3_errmsg(p->db));
		rc = -EUCLEAN;
		goto fail;
	}
	atomic_store(&p->next_process_id, (uint32_t)procs + 1);
	p->first_process_id = (uint32_t)procs + 1;
	p->start_rowid = max_id(p->db, "SELECT coalesce(max(rowid), 0) FROM access_log");
	atomic_store(&p->next_file_id, (uint64_t)files + 1);
	{
		sqlite3_stmt *q;

		if (sqlite3_prepare_v2(p->db, "SELECT value FROM mount_info WHERE key = 'backing'",
				       -1, &q, NULL) == SQLITE_OK) {
			if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
				p->backing =
					realpath((const char *)sqlite3_column_text(q, 0), NULL);
			sqlite3_finalize(q);
		}
	}
	if (prepare(p->db,
		    "INSERT INTO access_log (ts_ns, process_id, file_id, offset, length, mode,"
		    " class, phys_block) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		    &p->insert_record) ||
	    prepare(p->db,
		    "INSERT OR REPLACE INTO processes (id, pid, comm, exe, first_seen_ns)"
		    " VALUES (?1, ?2, ?3, ?4, ?5)",
		    &p->insert_process) ||
	    prepare(p->db,
		    "INSERT OR IGNORE INTO files (id, dev, ino, birth_ns, path, first_seen_ns)"
		    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
		    &p->insert_file) ||
	    prepare(p->db, "DELETE FROM access_log WHERE ts_ns < ?1", &p->prune_age) ||
	    prepare(p->db,
		    "DELETE FROM access_log WHERE rowid <= (SELECT max(rowid) FROM access_log) - "
		    "?1",
		    &p->prune_rows) ||
	    prepare(p->db, "UPDATE files SET path = ?2 WHERE id = ?1", &p->set_path) ||
	    prepare(p->db,
		    "UPDATE files SET gone_ns = ?2,"
		    " gone_rowid = (SELECT coalesce(max(rowid), 0) FROM access_log) WHERE id = ?1",
		    &p->mark_gone) ||
	    prepare(p->db, "SELECT min(rowid) FROM access_log", &p->log_min) ||
	    prepare(p->db, "SELECT max(rowid) FROM access_log", &p->log_max) ||
	    prepare(p->db,
		    "DELETE FROM files WHERE gone_rowid IS NOT NULL AND gone_rowid < ?1"
		    " AND id < (SELECT max(id) FROM files)"
		    " AND NOT EXISTS (SELECT 1 FROM bopt_map m WHERE m.file_id = files.id)"
		    " AND NOT EXISTS (SELECT 1 FROM graph_vertices g WHERE g.file_id = files.id)"
		    " AND id NOT IN (SELECT file_id FROM bopt_plan_ranges)",
		    &p->prune_files) ||
	    prepare(p->db,
		    "DELETE FROM processes WHERE id = ?1 AND id < (SELECT max(id) FROM processes)",
		    &p->prune_process) ||
	    prepare(p->db,
		    "DELETE FROM processes WHERE id < ?1 AND id < (SELECT max(id) FROM processes)",
		    &p->prune_old_processes) ||
	    prepare(p->read_db,
		    "SELECT id FROM files WHERE dev = ?1 AND ino = ?2 AND birth_ns = ?3",
		    &p->select_file)) {
		snprintf(why, why_size, "profiler: database \"%s\": %s", config->db_path,
			 sqlite3_errmsg(p->db));
		rc = -EIO;
		goto fail;
	}
	rc = pthread_create(&p->writer, NULL, writer_main, p);
	if (rc) {
		snprintf(why, why_size, "profiler: cannot start the writer thread: %s",
			 strerror(rc));
		rc = -rc;
		goto fail;
	}
	p->writer_started = true;
	*out = p;
	return 0;
fail:
	hy_profiler_free(p);
	return rc;
}

void hy_profiler_free(struct hy_profiler *p)
{
	if (!p)
		return;
	if (p->writer_started) {
		pthread_mutex_lock(&p->queue_lock);
		p->stopping = true;
		pthread_cond_signal(&p->writer_cond);
		pthread_mutex_unlock(&p->queue_lock);
		pthread_join(p->writer, NULL);
	}
	sqlite3_finalize(p->insert_record);
	sqlite3_finalize(p->insert_process);
	sqlite3_finalize(p->insert_file);
	sqlite3_finalize(p->prune_age);
	sqlite3_finalize(p->prune_rows);
	sqlite3_finalize(p->set_path);
	sqlite3_finalize(p->mark_gone);
	sqlite3_finalize(p->log_min);
	sqlite3_finalize(p->log_max);
	sqlite3_finalize(p->prune_files);
	sqlite3_finalize(p->prune_process);
	sqlite3_finalize(p->prune_old_processes);
	sqlite3_finalize(p->select_file);
	if (p->db && sqlite3_close(p->db) != SQLITE_OK)
		hy_log(LOG_ERR, "profiler: closing the database: %s", sqlite3_errmsg(p->db));
	if (p->read_db)
		sqlite3_close(p->read_db);
	while (p->processes) {
		struct pending_process *next = p->processes->next;

		free(p->processes->exe);
		free(p->processes);
		p->processes = next;
	}
	while (p->files) {
		struct pending_file *next = p->files->next;

		free(p->files->name);
		free(p->files);
		p->files = next;
	}
	while (p->gone) {
		struct gone_file *next = p->gone->next;

		free(p->gone);
		p->gone = next;
	}
	moved_free(p->moved);
	free(p->dead.v);
	hy_ring_free(p->ring);
	for (size_t b = 0; b < HY_PROFILER_PROCESSES; b++)
		for (int w = 0; w < HY_PROFILER_WAYS; w++)
			slot_clear(&p->slots[b][w]);
	if (p->mount_history_ok)
		hy_classify_free(&p->mount_history);
	for (struct policy_snapshot *snap = atomic_load(&p->policy), *older; snap; snap = older) {
		older = snap->older;
		free(snap);
	}
	pthread_mutex_destroy(&p->mount_lock);
	for (int i = 0; i < HY_PROFILER_STRIPES; i++)
		pthread_mutex_destroy(&p->stripes[i]);
	pthread_mutex_destroy(&p->read_lock);
	pthread_mutex_destroy(&p->queue_lock);
	pthread_mutex_destroy(&p->durable_lock);
	free(p->wal_path);
	free(p->db_path);
	free(p->backing);
	pthread_cond_destroy(&p->writer_cond);
	pthread_cond_destroy(&p->sync_cond);
	free(p);
}

int hy_profiler_sync(struct hy_profiler *p)
{
	struct hy_ring_stats rs;
	uint64_t rows, first;
	int rc = 0;

	hy_ring_get_stats(p->ring, &rs);
	pthread_mutex_lock(&p->queue_lock);
	p->wake = true;
	pthread_cond_signal(&p->writer_cond);
	/* pushed counts accepted records only: dropped ones are not waited for;
	 * the process and file rows queued so far are waited for too. The
	 * first transaction to begin after this point carries all of them:
	 * if it fails, so does the sync (its rows are retried later). */
	rows = p->rows_queued;
	first = p->flushes_started + 1;
	for (;;) {
		if (p->failed) {
			rc = -EIO;
			break;
		}
		if (p->committed >= rs.pushed && p->rows_written >= rows)
			break;
		if (p->flushes_done >= first && p->last_failed) {
			rc = p->rows_error ? p->rows_error : -EIO;
			break;
		}
		pthread_cond_wait(&p->sync_cond, &p->queue_lock);
	}
	pthread_mutex_unlock(&p->queue_lock);
	return rc;
}

/* fdatasync of the WAL, where the commits are (synchronous=NORMAL leaves
 * them in the page cache); the database file itself when there is no WAL
 * (a checkpoint has synced it). The folder once, for the WAL's name.
 * durable_lock held. */
static int sync_wal(struct hy_profiler *p)
{
	const char *path = p->wal_path;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0 && errno == ENOENT) {
		path = p->db_path;
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		rc = -errno;
		hy_log(LOG_ERR, "profiler: \"%s\": cannot open it to sync it: %s", path,
		       strerror(-rc));
		return rc;
	}
	if (fdatasync(fd) < 0) {
		rc = -errno;
		hy_log(LOG_ERR, "profiler: \"%s\": sync: %s", path, strerror(-rc));
	}
	close(fd);
	if (rc == 0 && !p->dir_synced) {
		char dir[4096];
		const char *slash = strrchr(p->db_path, '/');

		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - p->db_path) : 1,
			 slash ? p->db_path : ".");
		fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fsync(fd) < 0) {
			rc = -errno;
			hy_log(LOG_ERR, "profiler: state folder \"%s\": sync: %s", dir,
			       strerror(-rc));
		} else {
			p->dir_synced = true;
		}
		if (fd >= 0)
			close(fd);
	}
	return rc;
}

int hy_profiler_sync_ids(struct hy_profiler *p)
{
	uint64_t files, first, written;
	int rc = 0;

	pthread_mutex_lock(&p->queue_lock);
	files = p->files_queued;
	first = p->flushes_started + 1;
	if (p->files_written < files) {
		p->wake = true;
		pthread_cond_signal(&p->writer_cond);
	}
	for (;;) {
		if (p->failed) {
			rc = -EIO;
			break;
		}
		if (p->files_written >= files)
			break;
		if (p->flushes_done >= first && p->last_failed) {
			rc = p->rows_error ? p->rows_error : -EIO;
			break;
		}
		pthread_cond_wait(&p->sync_cond, &p->queue_lock);
	}
	written = p->files_written;
	pthread_mutex_unlock(&p->queue_lock);
	if (rc)
		return rc;
	/* one sync covers every file row committed before it: the fsyncs of
	 * a batch of new files share it, and an fsync that finds its file's
	 * row durable already makes none */
	pthread_mutex_lock(&p->durable_lock);
	if (p->files_durable < files) {
		rc = sync_wal(p);
		if (rc == 0)
			p->files_durable = written;
	}
	pthread_mutex_unlock(&p->durable_lock);
	return rc;
}

int hy_profiler_prune(struct hy_profiler *p)
{
	int rc = hy_profiler_sync(p);

	if (rc)
		return rc;
	pthread_mutex_lock(&p->queue_lock);
	p->prune_requested = true;
	p->wake = true;
	pthread_cond_signal(&p->writer_cond);
	while (p->prune_requested && !p->failed)
		pthread_cond_wait(&p->sync_cond, &p->queue_lock);
	rc = p->failed ? -EIO : 0;
	pthread_mutex_unlock(&p->queue_lock);
	return rc;
}

void hy_profiler_get_stats(struct hy_profiler *p, struct hy_profiler_stats *out)
{
	struct hy_ring_stats rs;

	hy_ring_get_stats(p->ring, &rs);
	pthread_mutex_lock(&p->queue_lock);
	out->written = p->written;
	out->pruned = p->pruned;
	out->batches = p->batches;
	out->errors = p->errors;
	out->processes_seen = p->processes_seen;
	out->files_seen = p->files_seen;
	pthread_mutex_unlock(&p->queue_lock);
	out->dropped = rs.dropped;
	out->queued = rs.queued;
}

static uint64_t busyness(const struct hy_profiler_process *pp)
{
	return pp->bytes_read + pp->bytes_written;
}

static int by_busyness(const void *a, const void *b)
{
	const struct hy_profiler_process *x = a, *y = b;
	uint64_t bx = busyness(x), by = busyness(y);
	uint64_t rx = x->reads + x->writes, ry = y->reads + y->writes;

	if (bx != by)
		return bx > by ? -1 : 1;
	if (rx != ry)
		return rx > ry ? -1 : 1;
	return x->pid - y->pid;
}

size_t hy_profiler_top(struct hy_profiler *p, struct hy_profiler_process *out, size_t max)
{
	struct hy_profiler_process *all =
		malloc(HY_PROFILER_PROCESSES * HY_PROFILER_WAYS * sizeof(*all));
	size_t n = 0;

	if (!all)
		return 0;
	for (size_t b = 0; b < HY_PROFILER_PROCESSES; b++) {
		pthread_mutex_t *lock = &p->stripes[b % HY_PROFILER_STRIPES];

		pthread_mutex_lock(lock);
		for (int w = 0; w < HY_PROFILER_WAYS; w++) {
			const struct process_slot *slot = &p->slots[b][w];
			struct hy_profiler_process *pp;

			if (!slot->pid)
				continue;
			pp = &all[n++];
			pp->pid = slot->pid;
			pp->process_id = slot->process_id;
			memcpy(pp->comm, slot->comm, sizeof(pp->comm));
			pp->reads = slot->reads;
			pp->writes = slot->writes;
			pp->bytes_read = slot->bytes_read;
			pp->bytes_written = slot->bytes_written;
			memcpy(pp->meta, slot->meta, sizeof(pp->meta));
			memcpy(pp->classes, slot->classes, sizeof(pp->classes));
			pp->category = slot->io ? hy_category_current(&slot->io->category)
						: HY_CATEGORY_UNKNOWN;
			pp->grouped = pp->category == HY_CATEGORY_UNKNOWN && slot->grouped;
			pp->policy_category = pp->grouped ? slot->group_category : pp->category;
			pp->metadata_priority = metadata_heavy(slot, policy_table(p));
		}
		pthread_mutex_unlock(lock);
	}
	qsort(all, n, sizeof(*all), by_busyness);
	if (n > max)
		n = max;
	memcpy(out, all, n * sizeof(*out));
	free(all);
	return n;
}

void hy_profiler_get_classes(struct hy_profiler *p, uint64_t out[2][HY_CLASS_COUNT])
{
	pthread_mutex_lock(&p->mount_lock);
	memcpy(out, p->mount_classes, sizeof(p->mount_classes));
	pthread_mutex_unlock(&p->mount_lock);
}

int hy_profiler_set_policy(struct hy_profiler *p, const struct hy_workload_policy_table *table)
{
	struct policy_snapshot *snap = malloc(sizeof(*snap));

	if (!snap) {
		hy_log(LOG_ERR, "profiler: out of memory for the policy table");
		return -ENOMEM;
	}
	snap->table = *table;
	/* one writer at a time is the caller's (the control loop's) business;
	 * readers see the old table or the new one, whole */
	snap->older = atomic_load(&p->policy);
	atomic_store_explicit(&p->policy, snap, memory_order_release);
	return 0;
}

bool hy_profiler_get_policy(struct hy_profiler *p, struct hy_workload_policy_table *out)
{
	const struct hy_workload_policy_table *t = policy_table(p);

	if (t)
		*out = *t;
	return t != NULL;
}
