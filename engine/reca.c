/* reca.c - see include/hybridfs/reca.h. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/keymap.h"
#include "hybridfs/reca.h"

#define PROCESS_RECHECK_NS 1000000000LL
#define META_MIN	   16	/* metadata operations before a process is metadata heavy */
#define META_DECAY	   1024 /* recent operations counted before they are halved */
#define GROUPS		   1024 /* (program, file) -> category, for grouping */
#define HASHED_SLOTS	   4096 /* HY_RECA_KEYS_HASHED: histories and windows */

struct process_io {
	struct hy_classify_history history;
	struct hy_category_state category;
};

struct process_slot {
	pid_t pid; /* 0: empty */
	uint32_t process_id;
	char comm[16];
	int64_t checked_ns; /* CLOCK_MONOTONIC */
	bool dead_once;	    /* the last reap found its pid gone */
	uint64_t reads, writes, bytes_read, bytes_written, meta[HY_META_COUNT];
	/* its history of the last requests and its workload category (made
	 * at its first read or write), and how many requests of each class it
	 * sent, by direction */
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

struct policy_snapshot {
	struct policy_snapshot *older;
	struct hy_workload_policy_table table;
};

struct hy_reca {
	enum hy_reca_keying keying;
	bool classify;

	/* ReCA's policy table in force: an immutable snapshot swapped by
	 * pointer; the ones it replaced are kept until the module is freed (a
	 * request may still read one; they are a few hundred bytes and change
	 * only by hand) */
	_Atomic(struct policy_snapshot *) policy;

	/* HY_RECA_PROCESSES: a bucket of HY_RECA_WAYS slots per pid hash, so
	 * that pids that collide do not push each other out while both run;
	 * bucket b is protected by stripes[b % STRIPES]. */
	pthread_mutex_t stripes[HY_RECA_STRIPES];
	struct process_slot (*slots)[HY_RECA_WAYS];
	_Atomic uint32_t next_process_id;
	void (*made)(void *arg, uint32_t id, pid_t pid, const char comm[16]);
	void *made_arg;
	/* processes of the same program on the same file share a category
	 * until their own window says one: (hash of comm and file id) -> key
	 * in the high 56 bits, category + 1 in the low 8 */
	_Atomic uint64_t groups[GROUPS];

	pthread_mutex_t mount_lock; /* the mount's classes */
	struct hy_classify_history mount_history;
	bool mount_history_ok;
	uint64_t mount_classes[2][HY_CLASS_COUNT];

	/* HY_RECA_KEYS: key -> index, grown as keys come */
	struct hy_keymap devices, processes;
	struct hy_classify_history *histories;
	size_t nhistories;
	struct hy_category_state *windows;
	size_t nwindows;
	/* HY_RECA_KEYS_HASHED: HASHED_SLOTS of each */
	uint64_t *window_keys;
};

static int64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static const struct hy_workload_policy_table *policy_table(struct hy_reca *r)
{
	struct policy_snapshot *snap = atomic_load_explicit(&r->policy, memory_order_acquire);

	return snap ? &snap->table : NULL;
}

void hy_reca_hint_from(const struct hy_workload_policy_table *t, enum hy_category category,
		       bool write, int cls, struct hy_cache_hint *hint)
{
	static const int write_policy[] = {
		[HY_WORKLOAD_WRITE_MOUNT] = -1,
		[HY_WORKLOAD_WRITE_BACK] = HY_CACHE_WRITE_BACK,
		[HY_WORKLOAD_WRITE_THROUGH] = HY_CACHE_WRITE_THROUGH,
		[HY_WORKLOAD_WRITE_AROUND] = HY_CACHE_WRITE_AROUND,
	};
	const struct hy_workload_policy *row = hy_workload_policy_row(t, category);

	if (cls < 0 || cls >= HY_CLASS_COUNT)
		cls = HY_CLASS_RANDOM;
	hint->write = (unsigned)row->write < 4 ? write_policy[row->write] : -1;
	hint->admit = row->admit[write][cls];
	hint->evict = (uint8_t)row->evict;
	hint->line_size = row->line_size;
	hint->seq_cutoff = row->seq_cutoff;
}

int hy_reca_new(const struct hy_reca_config *config, struct hy_reca **out)
{
	struct hy_reca *r = calloc(1, sizeof(*r));
	int rc = 0;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->keying = config->keying;
	r->classify = !config->no_classify;
	for (int i = 0; i < HY_RECA_STRIPES; i++)
		pthread_mutex_init(&r->stripes[i], NULL);
	pthread_mutex_init(&r->mount_lock, NULL);
	switch (r->keying) {
	case HY_RECA_PROCESSES:
		r->slots = calloc(HY_RECA_PROCESSES_MAX, sizeof(*r->slots));
		if (!r->slots)
			rc = -ENOMEM;
		r->mount_history_ok = hy_classify_init(&r->mount_history, NULL) == 0;
		atomic_store(&r->next_process_id, 1);
		break;
	case HY_RECA_KEYS:
		rc = hy_keymap_init(&r->devices, 64, true);
		if (rc == 0)
			rc = hy_keymap_init(&r->processes, 64, true);
		break;
	case HY_RECA_KEYS_HASHED:
		r->histories = calloc(HASHED_SLOTS, sizeof(*r->histories));
		r->windows = calloc(HASHED_SLOTS, sizeof(*r->windows));
		r->window_keys = malloc(HASHED_SLOTS * sizeof(*r->window_keys));
		if (!r->histories || !r->windows || !r->window_keys)
			rc = -ENOMEM;
		else
			memset(r->window_keys, 0xff, HASHED_SLOTS * sizeof(*r->window_keys));
		break;
	}
	if (rc < 0) {
		hy_reca_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

/* A slot taken by another pid, or the table freed. Stripe lock held. */
static void slot_clear(struct process_slot *slot)
{
	if (slot->io) {
		hy_classify_free(&slot->io->history);
		free(slot->io);
	}
	memset(slot, 0, sizeof(*slot));
}

void hy_reca_free(struct hy_reca *r)
{
	if (!r)
		return;
	if (r->slots) {
		for (size_t b = 0; b < HY_RECA_PROCESSES_MAX; b++)
			for (int w = 0; w < HY_RECA_WAYS; w++)
				slot_clear(&r->slots[b][w]);
		free(r->slots);
	}
	if (r->mount_history_ok)
		hy_classify_free(&r->mount_history);
	if (r->keying == HY_RECA_KEYS) {
		for (size_t i = 0; i < r->nhistories; i++)
			hy_classify_free(&r->histories[i]);
	} else if (r->keying == HY_RECA_KEYS_HASHED && r->histories) {
		for (size_t i = 0; i < HASHED_SLOTS; i++)
			hy_classify_free(&r->histories[i]);
	}
	free(r->histories);
	free(r->windows);
	free(r->window_keys);
	if (r->devices.keys)
		hy_keymap_free(&r->devices);
	if (r->processes.keys)
		hy_keymap_free(&r->processes);
	for (struct policy_snapshot *snap = atomic_load(&r->policy), *older; snap; snap = older) {
		older = snap->older;
		free(snap);
	}
	pthread_mutex_destroy(&r->mount_lock);
	for (int i = 0; i < HY_RECA_STRIPES; i++)
		pthread_mutex_destroy(&r->stripes[i]);
	free(r);
}

int hy_reca_set_policy(struct hy_reca *r, const struct hy_workload_policy_table *table)
{
	struct policy_snapshot *snap = malloc(sizeof(*snap));

	if (!snap)
		return -ENOMEM;
	snap->table = *table;
	/* one writer at a time is the caller's (the control loop's) business;
	 * readers see the old table or the new one, whole */
	snap->older = atomic_load(&r->policy);
	atomic_store_explicit(&r->policy, snap, memory_order_release);
	return 0;
}

bool hy_reca_get_policy(struct hy_reca *r, struct hy_workload_policy_table *out)
{
	const struct hy_workload_policy_table *t = policy_table(r);

	if (t)
		*out = *t;
	return t != NULL;
}

/* ---- the keyed modes (the simulators) ------------------------------------ */

/* The index of @key in @m's values, a new one (the array grown) when the
 * key is new: -ENOMEM. */
static int64_t index_of(struct hy_keymap *m, uint64_t key, size_t *count, void **array, size_t elem)
{
	uint64_t slot = hy_keymap_slot(m, key);
	void *grown;
	int rc;

	if (m->keys[slot] == key)
		return m->values[slot];
	grown = realloc(*array, (*count + 1) * elem);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	rc = hy_keymap_put(m, key, (uint32_t)*count);
	if (rc < 0)
		return rc;
	return (int64_t)(*count)++;
}

static int keyed_exact(struct hy_reca *r, const struct hy_reca_request *req,
		       enum hy_request_class *cls, enum hy_category *cat)
{
	size_t before = r->nhistories;
	int64_t d = index_of(&r->devices, req->history_key, &r->nhistories, (void **)&r->histories,
			     sizeof(*r->histories));
	int64_t p;

	if (d < 0)
		return (int)d;
	if (r->nhistories > before && hy_classify_init(&r->histories[d], NULL) < 0) {
		/* the key stays mapped to an uninitialized slot: refuse from now on */
		return -ENOMEM;
	}
	before = r->nwindows;
	p = index_of(&r->processes, req->process_key, &r->nwindows, (void **)&r->windows,
		     sizeof(*r->windows));
	if (p < 0)
		return (int)p;
	if (r->nwindows > before)
		hy_category_init(&r->windows[p], NULL);
	*cls = hy_classify(&r->histories[d], req->file_id, req->offset, req->length, req->write);
	*cat = hy_category_observe(&r->windows[p], *cls, req->write, req->length, req->file_size);
	return 0;
}

static int keyed_hashed(struct hy_reca *r, const struct hy_reca_request *req,
			enum hy_request_class *cls, enum hy_category *cat)
{
	struct hy_classify_history *h = &r->histories[req->history_key % HASHED_SLOTS];
	uint64_t slot = (req->process_key * UINT64_C(0x9e3779b97f4a7c15)) >> 52; /* 12 bits */

	if (!h->depth && hy_classify_init(h, NULL) < 0)
		return -ENOMEM;
	if (r->window_keys[slot] != req->process_key) { /* a new one, or another in its slot */
		r->window_keys[slot] = req->process_key;
		hy_category_init(&r->windows[slot], NULL);
	}
	*cls = hy_classify(h, req->file_id, req->offset, req->length, req->write);
	*cat = hy_category_observe(&r->windows[slot], *cls, req->write, req->length,
				   req->file_size);
	return 0;
}

/* ---- HY_RECA_PROCESSES: the daemon's process table ----------------------- */

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

/* The slot of @pid in its bucket, or the one to give it: an empty one, else
 * the one checked longest ago. Under the bucket's stripe lock. */
static struct process_slot *slot_for(struct process_slot *bucket, pid_t pid)
{
	struct process_slot *victim = &bucket[0];

	for (int w = 0; w < HY_RECA_WAYS; w++) {
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
static enum hy_category category_of(struct hy_reca *r, struct process_slot *slot, uint64_t file_id)
{
	uint64_t key = hash64(slot->comm_hash ^ hash64(file_id));
	_Atomic uint64_t *g = &r->groups[key % GROUPS];
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
static uint8_t classify_in(struct process_slot *slot, const struct hy_reca_request *req)
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
	cls = hy_classify(&slot->io->history, req->file_id, req->offset, req->length, req->write);
	slot->classes[req->write][cls]++;
	hy_category_observe(&slot->io->category, cls, req->write, req->length, req->file_size);
	return (uint8_t)(cls + 1);
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
static _Atomic uint64_t *program_group(struct hy_reca *r, const struct process_slot *slot,
				       uint64_t *key)
{
	*key = hash64(slot->comm_hash ^ hash64(0));
	return &r->groups[*key % GROUPS];
}

/* Once a process has its own verdict, its program's is that one. */
static void program_meta_learn(struct hy_reca *r, const struct process_slot *slot, bool heavy)
{
	uint64_t key;
	_Atomic uint64_t *g = program_group(r, slot, &key);
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

/* Finds (or makes) @pid's slot and counts: a read or write (@req; its
 * class, category and hint into @out), a metadata operation (@meta >= 0;
 * whether the process is metadata heavy into *@heavy). A new pid, or one
 * not checked for a second, has its name read again (outside the lock); a
 * changed name (exec, or the pid reused) is a new process. Returns the
 * process id (0: lost a race for the slot). */
static uint32_t process_touch(struct hy_reca *r, pid_t pid, const struct hy_reca_request *req,
			      int meta, struct hy_reca_answer *out, bool *heavy)
{
	size_t b = (size_t)pid % HY_RECA_PROCESSES_MAX;
	pthread_mutex_t *lock = &r->stripes[b % HY_RECA_STRIPES];
	struct process_slot *slot;
	int64_t now = clock_ns(CLOCK_MONOTONIC);
	char comm[16];
	uint32_t id;
	bool fresh;

	pthread_mutex_lock(lock);
	slot = slot_for(r->slots[b], pid);
	fresh = slot->pid == pid && now - slot->checked_ns < PROCESS_RECHECK_NS;
	if (!fresh) {
		pthread_mutex_unlock(lock);
		read_comm(pid, comm);
		pthread_mutex_lock(lock);
		slot = slot_for(r->slots[b], pid); /* the bucket may have changed */
		if (slot->pid == pid && strcmp(slot->comm, comm) == 0) {
			slot->checked_ns = now;
		} else {
			id = atomic_fetch_add(&r->next_process_id, 1);
			slot_clear(slot);
			slot->pid = pid;
			slot->process_id = id;
			memcpy(slot->comm, comm, sizeof(slot->comm));
			slot->comm_hash = comm_hash(comm);
			{
				uint64_t key, v;

				v = atomic_load_explicit(program_group(r, slot, &key),
							 memory_order_relaxed);
				slot->program_meta =
					(v & ~0xffULL) == (key & ~0xffULL) && (v & 0xff) == 2;
			}
			slot->checked_ns = now;
			pthread_mutex_unlock(lock);
			if (r->made)
				r->made(r->made_arg, id, pid, comm);
			pthread_mutex_lock(lock);
			slot = slot_for(r->slots[b], pid);
		}
	}
	if (slot->pid == pid) {
		if (req && !req->write) {
			slot->reads++;
			slot->bytes_read += req->length;
		} else if (req) {
			slot->writes++;
			slot->bytes_written += req->length;
		}
		if (meta >= 0) {
			slot->meta[meta]++;
			bool h;

			count_recent(slot, true);
			h = metadata_heavy(slot, policy_table(r));
			program_meta_learn(r, slot, h);
			if (heavy)
				*heavy = h;
		}
		if (req)
			count_recent(slot, false);
		if (req && r->classify) {
			const struct hy_workload_policy_table *table = policy_table(r);

			out->klass = classify_in(slot, req);
			if (table) {
				out->category = category_of(r, slot, req->file_id);
				hy_reca_hint_from(table, out->category, req->write,
						  out->klass ? (int)out->klass - 1 : -1,
						  &out->hint);
				out->hinted = true;
			}
		}
		id = slot->process_id;
	} else {
		id = 0; /* lost a race for the slot to another pid: rare, unnamed */
	}
	pthread_mutex_unlock(lock);
	return id;
}

void hy_reca_set_process_ids(struct hy_reca *r, uint32_t first,
			     void (*made)(void *arg, uint32_t id, pid_t pid, const char comm[16]),
			     void *arg)
{
	atomic_store(&r->next_process_id, first);
	r->made = made;
	r->made_arg = arg;
}

uint32_t hy_reca_process(struct hy_reca *r, pid_t pid)
{
	return process_touch(r, pid, NULL, -1, NULL, NULL);
}

int hy_reca_request(struct hy_reca *r, const struct hy_reca_request *req,
		    struct hy_reca_answer *out)
{
	enum hy_request_class cls = HY_CLASS_RANDOM;
	enum hy_category cat = HY_CATEGORY_UNKNOWN;
	const struct hy_workload_policy_table *table;
	int rc;

	memset(out, 0, sizeof(*out));
	if (r->keying == HY_RECA_PROCESSES) {
		out->process_id = process_touch(r, req->pid, req, -1, out, NULL);
		return 0;
	}
	if (!r->classify)
		return 0;
	rc = r->keying == HY_RECA_KEYS ? keyed_exact(r, req, &cls, &cat)
				       : keyed_hashed(r, req, &cls, &cat);
	table = policy_table(r);
	if (rc < 0) {
		if (table && r->keying == HY_RECA_KEYS_HASHED) {
			hy_reca_hint_from(table, HY_CATEGORY_UNKNOWN, req->write, -1, &out->hint);
			out->hinted = true;
		}
		return rc;
	}
	out->klass = (uint8_t)(cls + 1);
	out->category = cat;
	if (table) {
		hy_reca_hint_from(table, cat, req->write, (int)cls, &out->hint);
		out->hinted = true;
	}
	return 0;
}

void hy_reca_uncount(struct hy_reca *r, pid_t pid, uint32_t process_id, bool write,
		     uint64_t missing)
{
	size_t b = (size_t)pid % HY_RECA_PROCESSES_MAX;
	pthread_mutex_t *lock = &r->stripes[b % HY_RECA_STRIPES];
	struct process_slot *slot;

	if (!r->slots || !missing)
		return;
	pthread_mutex_lock(lock);
	slot = slot_for(r->slots[b], pid);
	if (slot->pid == pid && slot->process_id == process_id)
		*(write ? &slot->bytes_written : &slot->bytes_read) -= missing;
	pthread_mutex_unlock(lock);
}

double hy_reca_count_meta(struct hy_reca *r, pid_t pid, enum hy_profile_meta kind)
{
	const struct hy_workload_policy_table *t;
	bool heavy = false;

	if (!r || !r->slots || pid <= 0)
		return 0;
	process_touch(r, pid, NULL, (int)kind, NULL, &heavy);
	if (!r->classify)
		return 0; /* reca=off: no priority */
	t = policy_table(r);
	return heavy && t ? t->metadata_timeout_ms / 1000.0 : 0;
}

size_t hy_reca_reap(struct hy_reca *r, bool settled,
		    bool (*dead)(void *arg, uint32_t process_id, bool had_io), void *arg)
{
	size_t gone = 0;

	if (!r->slots)
		return 0;
	for (size_t b = 0; b < HY_RECA_PROCESSES_MAX; b++) {
		pthread_mutex_t *lock = &r->stripes[b % HY_RECA_STRIPES];

		pthread_mutex_lock(lock);
		for (int w = 0; w < HY_RECA_WAYS; w++) {
			struct process_slot *slot = &r->slots[b][w];

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
			/* (@dead takes no lock of ours: a leaf of the caller's) */
			if (!dead(arg, slot->process_id, slot->reads || slot->writes))
				continue;
			slot_clear(slot);
			gone++;
		}
		pthread_mutex_unlock(lock);
	}
	return gone;
}

static uint64_t busyness(const struct hy_reca_process *pp)
{
	return pp->bytes_read + pp->bytes_written;
}

static int by_busyness(const void *a, const void *b)
{
	const struct hy_reca_process *x = a, *y = b;
	uint64_t bx = busyness(x), by = busyness(y);
	uint64_t rx = x->reads + x->writes, ry = y->reads + y->writes;

	if (bx != by)
		return bx > by ? -1 : 1;
	if (rx != ry)
		return rx > ry ? -1 : 1;
	return x->pid - y->pid;
}

size_t hy_reca_top(struct hy_reca *r, struct hy_reca_process *out, size_t max)
{
	struct hy_reca_process *all;
	size_t n = 0;

	if (!r->slots)
		return 0;
	all = malloc(HY_RECA_PROCESSES_MAX * HY_RECA_WAYS * sizeof(*all));
	if (!all)
		return 0;
	for (size_t b = 0; b < HY_RECA_PROCESSES_MAX; b++) {
		pthread_mutex_t *lock = &r->stripes[b % HY_RECA_STRIPES];

		pthread_mutex_lock(lock);
		for (int w = 0; w < HY_RECA_WAYS; w++) {
			const struct process_slot *slot = &r->slots[b][w];
			struct hy_reca_process *pp;

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
			pp->metadata_priority = metadata_heavy(slot, policy_table(r));
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

void hy_reca_classify_mount(struct hy_reca *r, const struct hy_reca_io *ios, size_t n)
{
	if (!r->mount_history_ok || !r->classify)
		return;
	pthread_mutex_lock(&r->mount_lock);
	for (size_t i = 0; i < n; i++)
		r->mount_classes[ios[i].write]
				[hy_classify(&r->mount_history, ios[i].file_id, ios[i].offset,
					     ios[i].length, ios[i].write)]++;
	pthread_mutex_unlock(&r->mount_lock);
}

void hy_reca_get_mount_classes(struct hy_reca *r, uint64_t out[2][HY_CLASS_COUNT])
{
	pthread_mutex_lock(&r->mount_lock);
	memcpy(out, r->mount_classes, sizeof(r->mount_classes));
	pthread_mutex_unlock(&r->mount_lock);
}
