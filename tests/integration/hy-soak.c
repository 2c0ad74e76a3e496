/*
 * hy-soak.c - load and soak: many processes for a while on overlapping
 * files of one directory (a hybridfs mount), then an exact check of every
 * file against a reference.
 *
 *   hy-soak [options] DIR
 *     --procs N          worker processes (default 32, at most 256)
 *     --seconds S        how long the workers run (default 30)
 *     --seed S           the PRNG seed (default 1)
 *     --slots N          files in the pool (default 4 per process)
 *     --stall S          the watchdog: fail when no worker finishes an
 *                        operation in S seconds (default 60)
 *     --hook CMD         a shell command run while the workers run; given
 *                        k times, hook i starts at (i + 1) / (k + 1) of the
 *                        run; a hook that fails fails the soak
 *     --rss-pid PID      sample the resident size of PID (the daemon) five
 *                        times a second; with --rss-growth KIB, fail when at
 *                        the end of the run it is more than KIB above its
 *                        size at the end of warm-up (--rss-warmup S, default
 *                        a quarter of the run); with --rss-peak KIB, when at
 *                        any moment it is more than KIB above that size (a
 *                        reorganization's analyzer holds the log's graph for
 *                        a while: the peak bound is the looser one)
 *     --save-ref FILE    write the final reference there
 *     --verify-only FILE check DIR against a saved reference and exit (e.g.
 *                        the backing directory after unmounting)
 *
 * The files live in DIR/soak/d0..d2. The pool has N slots; slot s holds at
 * most one file, named "dG%3/sS.G" (G the slot's generation), or none.
 * Every worker draws slots from the whole pool, so every file is worked on
 * by many processes in turn (overlap), while different files are worked on
 * at the same time. The reference is shared (an anonymous shared mapping):
 * each slot has a process-shared mutex held across the operation and the
 * update of the slot's reference, so the reference is exact. A file is a
 * sequence of CHUNK-byte chunks (CHUNK is not a divisor of the page size:
 * writes cover parts of pages); each chunk has the version of the write that
 * made it (0: a hole, zeros), and its bytes are a function of the version
 * and the offset, so data moved or mixed up is caught.
 *
 * Operations (drawn per worker from its seeded PRNG): write chunks at a
 * random place (extending the file, sometimes with a hole), sometimes
 * followed by fsync or fdatasync; read a random range and compare; read a
 * file without its lock (overlapping a writer: only errors are checked);
 * create (O_EXCL) or rewrite with O_TRUNC; rename within the slot (to
 * another folder) or over another slot's file (both locked, in slot order);
 * unlink; ftruncate to a chunk boundary; fsync alone; a full check.
 *
 * Progress: each worker counts its operations and says what it is doing in
 * shared memory; the parent, once a second, samples the counts and the RSS,
 * starts the hooks, and when no count has moved for --stall seconds prints
 * what every worker was doing and fails. At the end the parent checks every
 * slot (contents, size) and that the folders hold exactly the slots' names.
 *
 * Output: a line "soak: procs=... seconds=... ops=... ops_per_s=..." and
 * with --rss-pid "rss: start_kib=... warm_kib=... peak_kib=... end_kib=...".
 * Exit status: 0 all correct, 1 a wrong byte, name or error, a stall, a
 * failed hook or RSS past its bound; 2 a setup error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rng.h"

#define MAX_PROCS  256
#define MAX_SLOTS  4096
#define MAX_CHUNKS 192	/* a file is at most 192 chunks */
#define CHUNK	   1000 /* bytes; not a divisor of 4096, on purpose */
#define NDIRS	   3
#define MAX_HOOKS  8
#define DOING_LEN  120

struct slot {
	pthread_mutex_t lock;
	/* protected by lock */
	bool exists;
	uint32_t gen;
	uint32_t nchunks;	  /* the file's size is nchunks * CHUNK */
	uint64_t ver[MAX_CHUNKS]; /* 0: hole */
};

struct worker {
	_Atomic uint64_t ops;
	_Atomic int failed;
	char doing[DOING_LEN]; /* for the watchdog's report; racy on purpose */
	uint64_t count[10];
};

struct shared {
	_Atomic int stop;
	_Atomic uint64_t next_ver;
	struct worker w[MAX_PROCS];
	struct slot s[];
};

enum op {
	OP_WRITE,
	OP_READ,
	OP_PEEK,
	OP_CREATE,
	OP_RENAME,
	OP_UNLINK,
	OP_TRUNC,
	OP_FSYNC,
	OP_CHECK,
	OP_COUNT
};
static const char *const op_names[OP_COUNT] = {"write",	 "read",  "peek",  "create", "rename",
					       "unlink", "trunc", "fsync", "check"};
/* the mix, in per cent */
static const int op_weight[OP_COUNT] = {30, 22, 10, 8, 8, 5, 5, 6, 6};

static int nprocs = 32, nslots, seconds = 30, stall = 60;
static uint64_t seed = 1;
static int rootfd = -1;
static struct shared *sh;
static int me = -1; /* worker number, -1 in the parent */

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;
	char buf[1024];
	int n = 0;

	if (me >= 0)
		n = snprintf(buf, sizeof(buf), "hy-soak: worker %d: ", me);
	else
		n = snprintf(buf, sizeof(buf), "hy-soak: ");
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", buf);
}

#define fail(...)                                                                                  \
	do {                                                                                       \
		say(__VA_ARGS__);                                                                  \
		if (me >= 0)                                                                       \
			atomic_store(&sh->w[me].failed, 1);                                        \
		exit(1);                                                                           \
	} while (0)

/* ---- PRNG and contents -------------------------------------------------- */

/* rnd() and below(): rng.h */

/* The byte at @off of a chunk written by version @ver (0: a hole). */
static unsigned char pattern(uint64_t ver, uint64_t off)
{
	uint64_t z;

	if (!ver)
		return 0;
	z = (ver * 0x9e3779b97f4a7c15ULL) ^ (off * 0xc2b2ae3d27d4eb4fULL) ^ seed;
	z ^= z >> 31;
	z *= 0xbf58476d1ce4e5b9ULL;
	z ^= z >> 29;
	return (unsigned char)(z | 1); /* never 0 */
}

static void fill_chunks(unsigned char *buf, uint64_t ver, uint32_t first, uint32_t n)
{
	uint64_t off = (uint64_t)first * CHUNK;

	for (size_t i = 0; i < (size_t)n * CHUNK; i++)
		buf[i] = pattern(ver, off + i);
}

/* ---- names --------------------------------------------------------------- */

static void slot_name(int s, uint32_t gen, char *buf, size_t size)
{
	snprintf(buf, size, "soak/d%u/s%d.%u", gen % NDIRS, s, gen);
}

static void doing(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void doing(const char *fmt, ...)
{
	va_list ap;

	if (me < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(sh->w[me].doing, DOING_LEN, fmt, ap);
	va_end(ap);
}

/* ---- I/O helpers -------------------------------------------------------- */

static void pwrite_all(int fd, const unsigned char *buf, size_t n, off_t off, const char *name)
{
	while (n) {
		ssize_t k = pwrite(fd, buf, n, off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			fail("%s: pwrite of %zu at %lld: %s", name, n, (long long)off,
			     k < 0 ? strerror(errno) : "wrote nothing");
		buf += k;
		n -= (size_t)k;
		off += k;
	}
}

static size_t pread_all(int fd, unsigned char *buf, size_t n, off_t off, const char *name)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k = pread(fd, buf + got, n - got, off + (off_t)got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			fail("%s: pread of %zu at %lld: %s", name, n - got,
			     (long long)(off + (off_t)got), strerror(errno));
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return got;
}

/* Compares chunks [first, first + n) of @fd with the slot's reference. */
static void check_range(int fd, const struct slot *sl, uint32_t first, uint32_t n, const char *name)
{
	static unsigned char buf[MAX_CHUNKS * CHUNK];
	size_t len = (size_t)n * CHUNK, got;

	got = pread_all(fd, buf, len, (off_t)first * CHUNK, name);
	if (got != len)
		fail("%s: read %zu bytes at %u, expected %zu (size %u)", name, got, first * CHUNK,
		     len, sl->nchunks * CHUNK);
	for (uint32_t c = 0; c < n; c++) {
		uint64_t ver = sl->ver[first + c];
		uint64_t base = (uint64_t)(first + c) * CHUNK;

		for (size_t i = 0; i < CHUNK; i++) {
			unsigned char want = pattern(ver, base + i);
			unsigned char have = buf[(size_t)c * CHUNK + i];

			if (have != want)
				fail("%s: byte %" PRIu64 " is 0x%02x, expected 0x%02x (chunk %u "
				     "of version %" PRIu64 ")",
				     name, base + i, have, want, first + c, ver);
		}
	}
}

/* The whole file: its size, and every byte. */
static void check_slot(const struct slot *sl, int s)
{
	char name[64];
	struct stat st;
	unsigned char extra;
	int fd;

	slot_name(s, sl->gen, name, sizeof(name));
	fd = openat(rootfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (!sl->exists) {
		if (fd >= 0 || errno != ENOENT)
			fail("%s: exists, but slot %d holds no file", name, s);
		return;
	}
	if (fd < 0)
		fail("%s: open: %s", name, strerror(errno));
	if (fstat(fd, &st) < 0)
		fail("%s: fstat: %s", name, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size != (off_t)sl->nchunks * CHUNK)
		fail("%s: size %lld, expected %u", name, (long long)st.st_size,
		     sl->nchunks * CHUNK);
	check_range(fd, sl, 0, sl->nchunks, name);
	if (pread(fd, &extra, 1, (off_t)sl->nchunks * CHUNK) != 0)
		fail("%s: more bytes past its size", name);
	close(fd);
}

/* ---- the operations (the caller holds the slot's lock) -------------------- */

static unsigned char wbuf[MAX_CHUNKS * CHUNK];

static int open_slot(struct slot *sl, int s, int flags, char *name, size_t size)
{
	int fd;

	slot_name(s, sl->gen, name, size);
	fd = openat(rootfd, name, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		fail("%s: open: %s", name, strerror(errno));
	return fd;
}

/* Writes a fresh version into chunks [first, first + n) of an open file. */
static void write_chunks(int fd, struct slot *sl, uint32_t first, uint32_t n, const char *name)
{
	uint64_t ver = atomic_fetch_add(&sh->next_ver, 1);

	fill_chunks(wbuf, ver, first, n);
	pwrite_all(fd, wbuf, (size_t)n * CHUNK, (off_t)first * CHUNK, name);
	for (uint32_t c = sl->nchunks; c < first; c++)
		sl->ver[c] = 0; /* a hole */
	for (uint32_t c = 0; c < n; c++)
		sl->ver[first + c] = ver;
	if (first + n > sl->nchunks)
		sl->nchunks = first + n;
}

static void sync_fd(struct rng *r, int fd, const char *name)
{
	bool data = below(r, 2);

	doing("%s %s", data ? "fdatasync" : "fsync", name);
	if ((data ? fdatasync(fd) : fsync(fd)) < 0)
		fail("%s: %s: %s", name, data ? "fdatasync" : "fsync", strerror(errno));
}

static void op_create(struct rng *r, struct slot *sl, int s)
{
	char name[64];
	int fd;

	if (sl->exists) {
		doing("rewrite (O_TRUNC) slot %d", s);
		fd = open_slot(sl, s, O_WRONLY | O_TRUNC, name, sizeof(name));
	} else {
		sl->gen++;
		doing("create slot %d", s);
		fd = open_slot(sl, s, O_WRONLY | O_CREAT | O_EXCL, name, sizeof(name));
		sl->exists = true;
	}
	sl->nchunks = 0;
	write_chunks(fd, sl, 0, 1 + (uint32_t)below(r, 64), name);
	if (below(r, 4) == 0)
		sync_fd(r, fd, name);
	if (close(fd) < 0)
		fail("%s: close: %s", name, strerror(errno));
}

static void op_write(struct rng *r, struct slot *sl, int s)
{
	uint32_t first, n;
	char name[64];
	int fd;

	if (!sl->exists) {
		op_create(r, sl, s);
		return;
	}
	n = 1 + (uint32_t)below(r, 48);
	/* anywhere in the file, or up to a few chunks past its end (a hole) */
	first = (uint32_t)below(r, sl->nchunks + 4);
	if (first + n > MAX_CHUNKS)
		first = MAX_CHUNKS - n;
	doing("write chunks %u+%u of slot %d", first, n, s);
	fd = open_slot(sl, s, O_WRONLY, name, sizeof(name));
	write_chunks(fd, sl, first, n, name);
	if (below(r, 8) == 0)
		sync_fd(r, fd, name);
	if (close(fd) < 0)
		fail("%s: close: %s", name, strerror(errno));
}

static void op_read(struct rng *r, struct slot *sl, int s)
{
	uint32_t first, n;
	char name[64];
	int fd;

	if (!sl->exists || !sl->nchunks)
		return;
	first = (uint32_t)below(r, sl->nchunks);
	n = 1 + (uint32_t)below(r, sl->nchunks - first);
	doing("read chunks %u+%u of slot %d", first, n, s);
	fd = open_slot(sl, s, O_RDONLY, name, sizeof(name));
	check_range(fd, sl, first, n, name);
	close(fd);
}

/* Without the lock: a writer, a rename or an unlink may be under way, so
 * only the calls' errors are checked (ENOENT: the name went). */
static void op_peek(struct rng *r, int s)
{
	static unsigned char buf[MAX_CHUNKS * CHUNK];
	struct slot *sl = &sh->s[s];
	uint32_t gen = __atomic_load_n(&sl->gen, __ATOMIC_RELAXED);
	char name[64];
	ssize_t k;
	int fd;

	slot_name(s, gen, name, sizeof(name));
	doing("peek at %s (unlocked)", name);
	fd = openat(rootfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			fail("%s: open (unlocked): %s", name, strerror(errno));
		return;
	}
	do
		k = pread(fd, buf, sizeof(buf), (off_t)below(r, 4) * CHUNK);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		fail("%s: pread (unlocked): %s", name, strerror(errno));
	close(fd);
}

static void op_rename(struct rng *r, int a, int b)
{
	struct slot *sa = &sh->s[a], *sb = &sh->s[b];
	char from[64], to[64];

	if (!sa->exists)
		return;
	slot_name(a, sa->gen, from, sizeof(from));
	if (a == b) {
		/* within the slot: to a new name, another folder */
		sa->gen++;
		slot_name(a, sa->gen, to, sizeof(to));
	} else if (sb->exists && below(r, 2)) {
		/* over the other slot's file */
		slot_name(b, sb->gen, to, sizeof(to));
	} else {
		if (sb->exists) {
			slot_name(b, sb->gen, to, sizeof(to));
			doing("unlink %s (before a rename)", to);
			if (unlinkat(rootfd, to, 0) < 0)
				fail("%s: unlink: %s", to, strerror(errno));
		}
		sb->gen++;
		slot_name(b, sb->gen, to, sizeof(to));
	}
	doing("rename %s to %s", from, to);
	if (renameat(rootfd, from, rootfd, to) < 0)
		fail("rename %s to %s: %s", from, to, strerror(errno));
	if (a != b) {
		sb->exists = true;
		sb->nchunks = sa->nchunks;
		memcpy(sb->ver, sa->ver, sizeof(sb->ver));
		sa->exists = false;
	}
}

static void op_unlink(struct slot *sl, int s)
{
	char name[64];

	if (!sl->exists)
		return;
	slot_name(s, sl->gen, name, sizeof(name));
	doing("unlink %s", name);
	if (unlinkat(rootfd, name, 0) < 0)
		fail("%s: unlink: %s", name, strerror(errno));
	sl->exists = false;
}

static void op_trunc(struct rng *r, struct slot *sl, int s)
{
	uint32_t to;
	char name[64];
	int fd;

	if (!sl->exists)
		return;
	to = (uint32_t)below(r, sl->nchunks + 8);
	if (to > MAX_CHUNKS)
		to = MAX_CHUNKS;
	doing("truncate slot %d from %u to %u chunks", s, sl->nchunks, to);
	fd = open_slot(sl, s, O_WRONLY, name, sizeof(name));
	if (ftruncate(fd, (off_t)to * CHUNK) < 0)
		fail("%s: ftruncate to %u: %s", name, to * CHUNK, strerror(errno));
	for (uint32_t c = sl->nchunks; c < to; c++)
		sl->ver[c] = 0;
	sl->nchunks = to;
	if (close(fd) < 0)
		fail("%s: close: %s", name, strerror(errno));
}

static void op_fsync(struct rng *r, struct slot *sl, int s)
{
	char name[64];
	int fd;

	if (!sl->exists)
		return;
	fd = open_slot(sl, s, below(r, 2) ? O_RDWR : O_RDONLY, name, sizeof(name));
	sync_fd(r, fd, name);
	close(fd);
}

static void lock_slot(int s)
{
	int rc = pthread_mutex_lock(&sh->s[s].lock);

	if (rc == EOWNERDEAD)
		fail("slot %d: its lock's holder died (it failed)", s);
	if (rc)
		fail("slot %d: lock: %s", s, strerror(rc));
}

static void unlock_slot(int s)
{
	pthread_mutex_unlock(&sh->s[s].lock);
}

static void worker(int w)
{
	struct rng r = {seed * 1000003 + (uint64_t)w};
	int total = 0;

	me = w;
	for (int k = 0; k < OP_COUNT; k++)
		total += op_weight[k];
	while (!atomic_load(&sh->stop)) {
		int pick = (int)below(&r, (uint64_t)total), k = 0;
		int s = (int)below(&r, (uint64_t)nslots), t;

		while (pick >= op_weight[k])
			pick -= op_weight[k++];
		doing("%s on slot %d: waiting for its lock", op_names[k], s);
		switch (k) {
		case OP_PEEK:
			op_peek(&r, s);
			break;
		case OP_RENAME:
			t = below(&r, 4) == 0 ? s : (int)below(&r, (uint64_t)nslots);
			lock_slot(s < t ? s : t);
			if (t != s)
				lock_slot(s < t ? t : s);
			op_rename(&r, s, t);
			if (t != s)
				unlock_slot(t);
			unlock_slot(s);
			break;
		default:
			lock_slot(s);
			switch (k) {
			case OP_WRITE:
				op_write(&r, &sh->s[s], s);
				break;
			case OP_READ:
				op_read(&r, &sh->s[s], s);
				break;
			case OP_CREATE:
				op_create(&r, &sh->s[s], s);
				break;
			case OP_UNLINK:
				op_unlink(&sh->s[s], s);
				break;
			case OP_TRUNC:
				op_trunc(&r, &sh->s[s], s);
				break;
			case OP_FSYNC:
				op_fsync(&r, &sh->s[s], s);
				break;
			case OP_CHECK:
				doing("check all of slot %d", s);
				check_slot(&sh->s[s], s);
				break;
			}
			unlock_slot(s);
		}
		sh->w[w].count[k]++;
		doing("between operations");
		atomic_fetch_add(&sh->w[w].ops, 1);
	}
	exit(0);
}

/* ---- the parent: hooks, RSS, watchdog, final check -------------------------- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* KiB, or -1 once the process is gone. */
static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static pid_t start_hook(const char *cmd)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void check_names(void)
{
	int found = 0, want = 0;

	for (int s = 0; s < nslots; s++)
		want += sh->s[s].exists;
	for (int d = 0; d < NDIRS; d++) {
		char path[32];
		struct dirent *e;
		DIR *dir;
		int fd;

		snprintf(path, sizeof(path), "soak/d%d", d);
		fd = openat(rootfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || !(dir = fdopendir(fd)))
			fail("%s: %s", path, strerror(errno));
		while ((e = readdir(dir))) {
			unsigned s, gen;
			char tail;

			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			if (sscanf(e->d_name, "s%u.%u%c", &s, &gen, &tail) != 2 ||
			    s >= (unsigned)nslots || !sh->s[s].exists || sh->s[s].gen != gen ||
			    gen % NDIRS != (unsigned)d)
				fail("%s/%s: a name that no slot holds", path, e->d_name);
			found++;
		}
		closedir(dir);
	}
	if (found != want)
		fail("the folders hold %d files, the reference %d", found, want);
}

static void verify_all(void)
{
	for (int s = 0; s < nslots; s++)
		check_slot(&sh->s[s], s);
	check_names();
}

static void save_ref(const char *path)
{
	FILE *f = fopen(path, "we");

	if (!f)
		fail("%s: %s", path, strerror(errno));
	fprintf(f, "hy-soak 1 %" PRIu64 " %d\n", seed, nslots);
	for (int s = 0; s < nslots; s++) {
		const struct slot *sl = &sh->s[s];

		fprintf(f, "%d %u %u", sl->exists ? 1 : 0, sl->gen, sl->nchunks);
		for (uint32_t c = 0; c < sl->nchunks; c++)
			fprintf(f, " %" PRIu64, sl->ver[c]);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		fail("%s: %s", path, strerror(errno));
}

static void load_ref(const char *path)
{
	FILE *f = fopen(path, "re");
	int ex;

	if (!f || fscanf(f, "hy-soak 1 %" SCNu64 " %d", &seed, &nslots) != 2 || nslots < 1 ||
	    nslots > MAX_SLOTS) {
		say("%s: not a reference that hy-soak saved", path);
		exit(2);
	}
	for (int s = 0; s < nslots; s++) {
		struct slot *sl = &sh->s[s];

		if (fscanf(f, "%d %u %u", &ex, &sl->gen, &sl->nchunks) != 3 ||
		    sl->nchunks > MAX_CHUNKS) {
			say("%s: slot %d is damaged", path, s);
			exit(2);
		}
		sl->exists = ex;
		for (uint32_t c = 0; c < sl->nchunks; c++)
			if (fscanf(f, "%" SCNu64, &sl->ver[c]) != 1) {
				say("%s: slot %d is short", path, s);
				exit(2);
			}
	}
	fclose(f);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: hy-soak [--procs N] [--seconds S] [--seed S] [--slots N] "
		"[--stall S] [--hook CMD]... [--rss-pid PID [--rss-growth KIB] "
		"[--rss-peak KIB] [--rss-warmup S]] [--save-ref FILE | --verify-only FILE] DIR\n");
	exit(2);
}

static long number(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi) {
		say("\"%s\": expected a number from %ld to %ld", s, lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	const char *hooks[MAX_HOOKS], *ref_out = NULL, *ref_in = NULL, *dir = NULL;
	int nhooks = 0, hooks_started = 0, failures = 0;
	pid_t pids[MAX_PROCS], hook_pid = 0, rss_pid = 0;
	long rss_growth = -1, rss_peak_growth = -1, rss_warmup = -1, rss_start = -1, rss_warm = -1,
	     rss_peak = -1, rss_end = -1, rss;
	uint64_t last_total = 0, total = 0;
	double t0, last_move, t_end, t, rss_peak_at = 0;
	pthread_mutexattr_t ma;
	size_t size;
	int alive;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (a[0] != '-') {
			if (dir)
				usage();
			dir = a;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (strcmp(a, "--procs") == 0)
			nprocs = (int)number(v, 1, MAX_PROCS);
		else if (strcmp(a, "--seconds") == 0)
			seconds = (int)number(v, 1, 86400);
		else if (strcmp(a, "--seed") == 0)
			seed = (uint64_t)number(v, 0, 1L << 40);
		else if (strcmp(a, "--slots") == 0)
			nslots = (int)number(v, 1, MAX_SLOTS);
		else if (strcmp(a, "--stall") == 0)
			stall = (int)number(v, 1, 86400);
		else if (strcmp(a, "--hook") == 0 && nhooks < MAX_HOOKS)
			hooks[nhooks++] = v;
		else if (strcmp(a, "--rss-pid") == 0)
			rss_pid = (pid_t)number(v, 1, 1L << 30);
		else if (strcmp(a, "--rss-growth") == 0)
			rss_growth = number(v, 0, 1L << 40);
		else if (strcmp(a, "--rss-peak") == 0)
			rss_peak_growth = number(v, 0, 1L << 40);
		else if (strcmp(a, "--rss-warmup") == 0)
			rss_warmup = number(v, 0, 86400);
		else if (strcmp(a, "--save-ref") == 0)
			ref_out = v;
		else if (strcmp(a, "--verify-only") == 0)
			ref_in = v;
		else
			usage();
	}
	if (!dir)
		usage();
	if (!nslots)
		nslots = 4 * nprocs;
	if (nslots > MAX_SLOTS)
		nslots = MAX_SLOTS;
	size = sizeof(struct shared) + (size_t)MAX_SLOTS * sizeof(struct slot);
	sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sh == MAP_FAILED || rootfd < 0) {
		say("%s: %s", dir, strerror(errno));
		return 2;
	}
	if (ref_in) {
		load_ref(ref_in);
		verify_all();
		printf("soak: verified %d slots in %s\n", nslots, dir);
		return 0;
	}
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	for (int s = 0; s < MAX_SLOTS; s++)
		pthread_mutex_init(&sh->s[s].lock, &ma);
	atomic_store(&sh->next_ver, 1);
	if (mkdirat(rootfd, "soak", 0755) < 0) {
		say("%s/soak: %s", dir, strerror(errno));
		return 2;
	}
	for (int d = 0; d < NDIRS; d++) {
		char path[32];

		snprintf(path, sizeof(path), "soak/d%d", d);
		if (mkdirat(rootfd, path, 0755) < 0) {
			say("%s/%s: %s", dir, path, strerror(errno));
			return 2;
		}
	}
	if (rss_warmup < 0)
		rss_warmup = seconds / 4;
	if (rss_pid)
		rss_start = rss_peak = rss_kib(rss_pid);
	fflush(NULL);
	t0 = now();
	for (int w = 0; w < nprocs; w++) {
		pids[w] = fork();
		if (pids[w] < 0) {
			say("fork: %s", strerror(errno));
			atomic_store(&sh->stop, 1);
			return 2;
		}
		if (pids[w] == 0)
			worker(w);
	}
	last_move = t0;
	t_end = t0 + seconds;
	alive = nprocs;
	while (alive > 0 || hook_pid > 0) {
		int status;
		pid_t pid;

		usleep(200000);
		t = now();
		/* reap workers and hooks */
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;

			if (pid == hook_pid) {
				say("hook %d (%s) %s after %.1f s", hooks_started,
				    hooks[hooks_started - 1], ok ? "done" : "FAILED", t - t0);
				hook_pid = 0;
				failures += !ok;
				continue;
			}
			alive--;
			if (!ok) {
				failures++;
				atomic_store(&sh->stop, 1);
			}
		}
		/* hooks, one at a time */
		if (!hook_pid && hooks_started < nhooks && !atomic_load(&sh->stop) &&
		    t - t0 >= (double)seconds * (hooks_started + 1) / (nhooks + 1)) {
			say("hook %d: %s (at %.1f s)", hooks_started + 1, hooks[hooks_started],
			    t - t0);
			hook_pid = start_hook(hooks[hooks_started++]);
		}
		if (t >= t_end)
			atomic_store(&sh->stop, 1);
		/* RSS */
		if (rss_pid && (rss = rss_kib(rss_pid)) >= 0) {
			if (rss > rss_peak) {
				rss_peak = rss;
				rss_peak_at = t - t0;
			}
			if (rss_warm < 0 && t - t0 >= (double)rss_warmup)
				rss_warm = rss;
			rss_end = rss;
		}
		/* the watchdog */
		total = 0;
		for (int w = 0; w < nprocs; w++)
			total += atomic_load(&sh->w[w].ops);
		if (total != last_total || alive == 0) {
			last_total = total;
			last_move = t;
		} else if (t - last_move >= stall) {
			say("STALL: no worker finished an operation in %d s (%" PRIu64
			    " operations done); what each was doing:",
			    stall, total);
			for (int w = 0; w < nprocs; w++)
				say("  worker %d (pid %d, %" PRIu64 " ops): %.*s", w, (int)pids[w],
				    atomic_load(&sh->w[w].ops), DOING_LEN, sh->w[w].doing);
			atomic_store(&sh->stop, 1);
			for (int w = 0; w < nprocs; w++)
				kill(pids[w], SIGKILL);
			if (hook_pid > 0)
				kill(hook_pid, SIGKILL);
			return 1;
		}
	}
	t = now();
	if (hooks_started < nhooks) {
		say("only %d of %d hooks ran", hooks_started, nhooks);
		failures++;
	}
	{
		uint64_t per_op[OP_COUNT] = {0};
		char mix[512];
		size_t n = 0;

		for (int w = 0; w < nprocs; w++)
			for (int k = 0; k < OP_COUNT; k++)
				per_op[k] += sh->w[w].count[k];
		for (int k = 0; k < OP_COUNT; k++)
			n += (size_t)snprintf(mix + n, sizeof(mix) - n, " %s=%" PRIu64, op_names[k],
					      per_op[k]);
		printf("soak: procs=%d seconds=%.1f ops=%" PRIu64 " ops_per_s=%.0f%s\n", nprocs,
		       t - t0, total, (double)total / (t - t0), mix);
	}
	if (rss_pid) {
		printf("rss: start_kib=%ld warm_kib=%ld peak_kib=%ld peak_at_s=%.0f end_kib=%ld\n",
		       rss_start, rss_warm, rss_peak, rss_peak_at, rss_end);
		if (rss_growth >= 0 && rss_warm >= 0 && rss_end > rss_warm + rss_growth) {
			say("the RSS of pid %d grew from %ld KiB (after warm-up) to %ld KiB at the "
			    "end, more than %ld KiB",
			    (int)rss_pid, rss_warm, rss_end, rss_growth);
			failures++;
		}
		if (rss_peak_growth >= 0 && rss_warm >= 0 &&
		    rss_peak > rss_warm + rss_peak_growth) {
			say("the RSS of pid %d peaked at %ld KiB, more than %ld KiB above its %ld "
			    "KiB after warm-up",
			    (int)rss_pid, rss_peak, rss_peak_growth, rss_warm);
			failures++;
		}
	}
	fflush(stdout);
	if (failures) {
		say("%d failure(s) during the run", failures);
		return 1;
	}
	verify_all();
	if (ref_out)
		save_ref(ref_out);
	printf("soak: every file verified (%" PRIu64 " versions written)\n",
	       atomic_load(&sh->next_ver) - 1);
	return 0;
}
