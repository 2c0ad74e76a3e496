/*
 * profiler-writer.c - the profiler's own capacity, without FUSE.
 *
 * 1. Writer capacity: a profiler (ring of 1 << 20 records) on a fresh state
 *    database logs N records (default 5,000,000) through one handle, in
 *    chunks (default 500,000) each followed by hy_profiler_sync(); the
 *    whole run is timed, so the figure is records per second committed to
 *    SQLite, producer work included. Then the database size (db + wal
 *    after PRAGMA wal_checkpoint(TRUNCATE) on a fresh connection) per
 *    million records.
 * 2. Push rate: two producer threads (two handles, two pids) log as fast
 *    as they can into a fresh profiler; records per second offered
 *    (accepted + dropped), how many the full ring refused, and the worst
 *    single hy_profiler_log() call in a second, timed run.
 *
 * Built and run by bench/profiler.sh (see there); by hand:
 *   cc -O2 -std=gnu11 -pthread -Iinclude -include BUILD/config.h \
 *      bench/profiler-writer.c BUILD/fs/libhyfs.a BUILD/engine/libhyengine.a \
 *      BUILD/lib/libhycommon.a $(pkg-config --cflags --libs sqlite3 fuse3 \
 *      json-c libevent libevent_pthreads) -o profiler-writer
 *   ./profiler-writer [-n RECORDS] [-c CHUNK] [-p PUSH_RECORDS] [-d DIR]
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hybridfs/log.h"
#include "hybridfs/profiler.h"
#include "hybridfs/reca.h"
#include "hybridfs/state.h"

#define DATA_BYTES (16u << 20) /* the file the records point into */
#define RING	   (1u << 20)

static char why[1024];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "profiler-writer: %s\n", what);
	exit(1);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A fresh state database in @dir/@name; its path (caller frees). */
static char *make_state(const char *dir, const char *name)
{
	struct hy_state *state;
	char path[PATH_MAX], *db;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (hy_state_open(path, "/bench", false, &state, why, sizeof(why)) != 0)
		die(why);
	db = strdup(state->db_path);
	hy_state_close(state);
	if (!db)
		die("out of memory");
	return db;
}

static struct hy_profiler *make_profiler(const char *db_path)
{
	struct hy_profiler_config c = {.db_path = db_path, .ring_capacity = RING};
	struct hy_profiler *p;

	/* the process table the records' process ids come from (reca.h);
	 * kept until the process exits, like a mount's */
	if (hy_reca_new(&(struct hy_reca_config){.keying = HY_RECA_PROCESSES}, &c.reca) != 0)
		die("out of memory");
	if (hy_profiler_new(&c, &p, why, sizeof(why)) != 0)
		die(why);
	return p;
}

/* A file of DATA_BYTES, written and fsync'd, so FIEMAP has extents. */
static int make_data(const char *dir)
{
	char path[PATH_MAX];
	static char buf[1 << 20];
	int fd;

	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die("cannot create the data file");
	memset(buf, 'x', sizeof(buf));
	for (unsigned i = 0; i < DATA_BYTES / sizeof(buf); i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			die("cannot write the data file");
	if (fsync(fd) != 0)
		die("cannot fsync the data file");
	return fd;
}

static void open_handle(struct hy_profiler *p, struct hy_profile_handle *h, int fd, pid_t pid)
{
	struct stat st;

	if (fstat(fd, &st) != 0 || hy_profiler_open(p, h, fd, &st, 0, "/data", pid) != 0)
		die("cannot open a profile handle");
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

/* ---- 1. writer capacity ------------------------------------------------ */

static void writer_capacity(const char *dir, int fd, uint64_t n, uint64_t chunk)
{
	char *db_path = make_state(dir, "state-writer"), wal[PATH_MAX + 8];
	struct hy_profiler *p = make_profiler(db_path);
	struct hy_profile_handle h;
	struct hy_profiler_stats st;
	uint64_t seed = 0x9e3779b97f4a7c15ULL, done = 0;
	double t0, t1, pushing = 0;
	long long db_bytes, wal_bytes;
	sqlite3 *db;

	open_handle(p, &h, fd, getpid());
	t0 = now_s();
	while (done < n) {
		uint64_t m = n - done < chunk ? n - done : chunk;
		double c0 = now_s();

		for (uint64_t i = 0; i < m; i++) {
			uint64_t r = xorshift(&seed);

			hy_profiler_log(p, &h, fd, getpid(),
					(r >> 63) ? HY_PROFILE_WRITE : HY_PROFILE_READ,
					(r % (DATA_BYTES / 4096)) * 4096, 4096);
		}
		pushing += now_s() - c0;
		if (hy_profiler_sync(p) != 0)
			die("hy_profiler_sync failed");
		done += m;
	}
	t1 = now_s();
	hy_profiler_get_stats(p, &st);
	hy_profiler_close(&h);
	hy_profiler_free(p);

	if (sqlite3_open(db_path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL) != SQLITE_OK)
		die("cannot checkpoint the database");
	sqlite3_close(db);
	snprintf(wal, sizeof(wal), "%s-wal", db_path);
	db_bytes = file_size(db_path);
	wal_bytes = file_size(wal);

	printf("writer: %" PRIu64 " records in chunks of %" PRIu64 " + sync, ring %u\n", n, chunk,
	       RING);
	printf("writer: committed %" PRIu64 ", dropped %" PRIu64 ", errors %" PRIu64
	       ", transactions %" PRIu64 "\n",
	       st.written, st.dropped, st.errors, st.batches);
	printf("writer: %.3f s in all (%.3f s of it in hy_profiler_log)\n", t1 - t0, pushing);
	printf("writer_records_per_s %.0f\n", (double)st.written / (t1 - t0));
	printf("db_bytes %lld wal_bytes %lld\n", db_bytes, wal_bytes);
	printf("db_bytes_per_million %.0f\n",
	       (double)(db_bytes + wal_bytes) * 1e6 / (double)(st.written ? st.written : 1));
	free(db_path);
}

/* ---- 2. push rate from two producers ------------------------------------ */

struct producer {
	struct hy_profiler *p;
	struct hy_profile_handle h;
	int fd;
	pid_t pid;
	uint64_t n;
	bool timed;
	pthread_barrier_t *start;
	double elapsed;
	int64_t worst_ns; /* timed runs: the slowest single call */
	uint64_t over_10us, over_100us;
	long voluntary, involuntary; /* context switches: blocked, preempted */
};

static void *produce(void *arg)
{
	struct producer *pr = arg;
	uint64_t seed = 0x2545f4914f6cdd1dULL ^ (uint64_t)pr->pid;
	struct rusage r0, r1;
	double t0;

	pthread_barrier_wait(pr->start);
	getrusage(RUSAGE_THREAD, &r0);
	t0 = now_s();
	for (uint64_t i = 0; i < pr->n; i++) {
		uint64_t r = xorshift(&seed);
		int64_t c0 = pr->timed ? now_ns() : 0;

		hy_profiler_log(pr->p, &pr->h, pr->fd, pr->pid,
				(r >> 63) ? HY_PROFILE_WRITE : HY_PROFILE_READ,
				(r % (DATA_BYTES / 4096)) * 4096, 4096);
		if (pr->timed) {
			int64_t d = now_ns() - c0;

			if (d > pr->worst_ns)
				pr->worst_ns = d;
			pr->over_10us += d > 10000;
			pr->over_100us += d > 100000;
		}
	}
	pr->elapsed = now_s() - t0;
	getrusage(RUSAGE_THREAD, &r1);
	pr->voluntary = r1.ru_nvcsw - r0.ru_nvcsw;
	pr->involuntary = r1.ru_nivcsw - r0.ru_nivcsw;
	return NULL;
}

static void push_rate(const char *dir, int fd, uint64_t n, bool timed)
{
	char *db_path = make_state(dir, timed ? "state-push-timed" : "state-push");
	struct hy_profiler *p = make_profiler(db_path);
	struct producer pr[2];
	struct hy_profiler_stats st;
	pthread_barrier_t start;
	pthread_t t[2];
	double elapsed = 0;

	pthread_barrier_init(&start, NULL, 3);
	for (int i = 0; i < 2; i++) {
		memset(&pr[i], 0, sizeof(pr[i]));
		pr[i].p = p;
		pr[i].fd = fd;
		pr[i].pid = i == 0 ? getpid() : getppid(); /* two processes, as two fio jobs */
		pr[i].n = n / 2;
		pr[i].timed = timed;
		pr[i].start = &start;
		open_handle(p, &pr[i].h, fd, pr[i].pid);
		if (pthread_create(&t[i], NULL, produce, &pr[i]) != 0)
			die("cannot start a producer");
	}
	pthread_barrier_wait(&start);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		if (pr[i].elapsed > elapsed)
			elapsed = pr[i].elapsed;
	}
	if (hy_profiler_sync(p) != 0)
		die("hy_profiler_sync failed");
	hy_profiler_get_stats(p, &st);
	if (!timed) {
		printf("push: 2 producers, %" PRIu64 " calls in %.3f s: accepted %" PRIu64
		       ", dropped %" PRIu64 " (sum %s)\n",
		       pr[0].n + pr[1].n, elapsed, st.written, st.dropped,
		       st.written + st.dropped == pr[0].n + pr[1].n ? "ok" : "WRONG");
		printf("push_records_per_s %.0f\n", (double)(pr[0].n + pr[1].n) / elapsed);
		printf("push: producer context switches: voluntary (blocked) %ld, involuntary"
		       " (preempted) %ld\n",
		       pr[0].voluntary + pr[1].voluntary, pr[0].involuntary + pr[1].involuntary);
	} else {
		printf("push (each call timed): slowest call %.1f us; calls over 10 us: %" PRIu64
		       ", over 100 us: %" PRIu64 " of %" PRIu64 "; dropped %" PRIu64 "\n",
		       (double)(pr[0].worst_ns > pr[1].worst_ns ? pr[0].worst_ns : pr[1].worst_ns) /
			       1e3,
		       pr[0].over_10us + pr[1].over_10us, pr[0].over_100us + pr[1].over_100us,
		       pr[0].n + pr[1].n, st.dropped);
		printf("push (each call timed): voluntary (blocked) context switches %ld,"
		       " involuntary (preempted) %ld\n",
		       pr[0].voluntary + pr[1].voluntary, pr[0].involuntary + pr[1].involuntary);
	}
	for (int i = 0; i < 2; i++)
		hy_profiler_close(&pr[i].h);
	hy_profiler_free(p);
	pthread_barrier_destroy(&start);
	free(db_path);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static uint64_t number(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v == 0)
		die("options want positive whole numbers");
	return v;
}

int main(int argc, char **argv)
{
	uint64_t n = 5000000, chunk = 500000, push = 4000000;
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
	char dir[PATH_MAX - 64]; /* room for the names made inside */
	int opt, fd;

	while ((opt = getopt(argc, argv, "n:c:p:d:h")) != -1) {
		switch (opt) {
		case 'n':
			n = number(optarg);
			break;
		case 'c':
			chunk = number(optarg);
			break;
		case 'p':
			push = number(optarg);
			break;
		case 'd':
			base = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-n RECORDS] [-c CHUNK] [-p PUSH_RECORDS] [-d DIR]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (chunk > RING)
		die("-c CHUNK must not exceed the ring (1048576)");
	hy_log_init(HY_LOG_STDERR, LOG_WARNING, "profiler-writer");
	if (snprintf(dir, sizeof(dir), "%s/hy-profiler-bench.XXXXXX", base) >= (int)sizeof(dir))
		die("-d DIR is too long");
	if (!mkdtemp(dir))
		die("mkdtemp failed");
	fd = make_data(dir);
	printf("dir %s\n", dir);

	writer_capacity(dir, fd, n, chunk);
	push_rate(dir, fd, push, false);
	push_rate(dir, fd, push, true);

	close(fd);
	if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "profiler-writer: cannot remove %s\n", dir);
	return 0;
}
