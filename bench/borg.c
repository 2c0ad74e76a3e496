/*
 * borg.c - what BORG's analyzer and planner cost as the access log grows.
 *
 * For each log size N (default 1e4, 1e5, 1e6, 1e7 requests), in a fresh
 * child process (so that the peak RSS is that size's own):
 *   1. a synthetic access log of N requests is made in memory from a fixed
 *      seed, shaped like a home directory (below), in chunks of 64 Ki
 *      requests; only the hy_analyzer_feed() calls are timed (CLOCK_MONOTONIC),
 *      never the generation, into one fresh analyzer with the default
 *      config: records per second and nanoseconds per record;
 *   2. the analyzer's stats (vertices, edges, splits, cuts), then
 *      hy_analyzer_export() (timed);
 *   3. hy_planner_plan() timed twice: capacity 8 GiB / 4 KiB (BORG's 8 GB
 *      BOPT) and capacity 1% of the graph's blocks;
 *   4. for the sizes given with -r (default 1e5 and 1e6): hy_analyzer_save()
 *      then hy_analyzer_load() into a fresh analyzer, on a temp state
 *      database (hy_state_open, schema 3) under -d DIR; the loaded graph
 *      must have the saved vertex and edge counts;
 *   5. getrusage(RUSAGE_SELF).ru_maxrss.
 * Below 1e6 requests, steps 1 to 3 are repeated (1e6 / N runs, odd, at
 * most 101; each analysis from a fresh analyzer) and the median is kept:
 * one run of 1e4 requests takes a few milliseconds. The child sends its
 * figures to the parent through a pipe; the parent prints markdown tables.
 *
 * The log. F files (N / 50, at least 10,000, at most 200,000; -f FILES
 * fixes F for every size, to tell the log's length from the number of
 * files it touches), sizes from
 * 4 KiB to 64 MiB, most of them small; a file's popularity is Zipf (s = 1)
 * over a random rank, so a few hot files get most requests. 64 processes,
 * interleaved at random, each doing one action after another:
 *   - 35%: replays one of 300 "scripts" (picked with Zipf popularity) of 5
 *     to 30 requests, fixed at start-up: sequential reads through one to a
 *     few files (BORG's partial determinism: the same sequences recur, so
 *     the graph has repeated edges);
 *   - 50%: a sequential run through a file, from its start (70%) or a
 *     random block, in requests of 4 KiB to 128 KiB (a power of two, the
 *     same within the run), up to the end of the file or 1 to 64 requests;
 *   - 15%: 1 to 16 random reads (4 KiB to 128 KiB) inside one file.
 * After an action a process pauses for 1.5 s to 3 s with probability 1/100
 * (longer than the analyzer's gap, so it starts afresh). Timestamps grow by
 * 50 to 150 us per request (100 us on average). Request sizes are clipped
 * to the end of the file.
 *
 * Built and run by bench/borg.sh (see there); by hand:
 *   cc -O2 -std=gnu11 -Iinclude -include BUILD/config.h bench/borg.c \
 *      BUILD/analyzer/libhyanalyzer.a BUILD/planner/libhyplanner.a \
 *      BUILD/lib/libhycommon.a $(pkg-config --cflags --libs sqlite3 json-c) -lm \
 *      -o borg
 *   ./borg [-n N]... [-r N|none]... [-s SEED] [-f FILES] [-d DIR]
 * -n: the sizes (1e6 is fine; default 1e4 1e5 1e6 1e7); -r: the sizes that
 * also get the save/load round trip (default 1e5 1e6; none: no size);
 * -s: the seed (42); -d: where the temp state folder goes ($TMPDIR, else
 * /var/tmp; removed afterwards).
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hybridfs/analyzer.h"
#include "hybridfs/log.h"
#include "hybridfs/planner.h"
#include "hybridfs/state.h"

#define PROCS	     64
#define SCRIPTS	     300
#define CHUNK	     65536
#define MAX_SIZES    16
#define BOPT_8G	     ((8ULL << 30) / 4096)
#define START_TS     1700000000000000000LL
#define MIN_FILES    10000
#define MAX_FILES    200000
#define LOG_PER_FILE 50

static void die(const char *what)
{
	fprintf(stderr, "borg: %s\n", what);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("out of memory");
	return p;
}

/* ---- the synthetic log ------------------------------------------------- */

/* splitmix64: a fixed seed gives the same log everywhere */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t *s, uint64_t n)
{
	return rnd(s) % n;
}

static double unit(uint64_t *s)
{
	return (double)(rnd(s) >> 11) / 9007199254740992.0;
}

/* Zipf (s = 1) over n ranks: a cumulative table, sampled by binary search */
struct zipf {
	double *cdf;
	size_t n;
};

static void zipf_init(struct zipf *z, size_t n)
{
	double sum = 0;

	z->cdf = xcalloc(n, sizeof(*z->cdf));
	z->n = n;
	for (size_t i = 0; i < n; i++) {
		sum += 1.0 / (double)(i + 1);
		z->cdf[i] = sum;
	}
	for (size_t i = 0; i < n; i++)
		z->cdf[i] /= sum;
}

static size_t zipf_draw(const struct zipf *z, uint64_t *s)
{
	double u = unit(s);
	size_t lo = 0, hi = z->n - 1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct req {
	int64_t ts;
	uint64_t file;
	uint64_t block;
	uint32_t nblocks;
	uint32_t pid;
};

struct step {
	uint32_t file; /* index into the files */
	uint32_t block;
	uint32_t nblocks;
};

struct script {
	struct step *steps;
	uint32_t n;
};

enum action { IDLE, SCRIPT, SEQ, RANDOM };

struct proc {
	enum action act;
	int64_t wake;	 /* paused until then */
	uint32_t file;	 /* SEQ, RANDOM */
	uint32_t block;	 /* SEQ: the next block */
	uint32_t chunk;	 /* SEQ: request size in blocks */
	uint32_t left;	 /* requests left in the action */
	uint32_t script; /* SCRIPT */
	uint32_t pos;	 /* SCRIPT: the next step */
};

struct gen {
	uint64_t seed;
	size_t nfiles;
	uint32_t *size; /* blocks, by file index */
	uint64_t *id;	/* file id by popularity rank */
	struct zipf files, scripts;
	struct script script[SCRIPTS];
	struct proc proc[PROCS];
	int64_t ts;
};

static uint32_t file_blocks(uint64_t *s)
{
	uint64_t r = below(s, 100);

	if (r < 55)
		return 1 + (uint32_t)below(s, 4); /* up to 16 KiB */
	if (r < 85)
		return 5 + (uint32_t)below(s, 60); /* up to 256 KiB */
	if (r < 98)
		return 65 + (uint32_t)below(s, 960); /* up to 4 MiB */
	return 1025 + (uint32_t)below(s, 15360);     /* up to 64 MiB */
}

/* a request size: 4 KiB to 128 KiB, a power of two */
static uint32_t req_blocks(uint64_t *s)
{
	return 1u << below(s, 6);
}

static uint32_t clip(const struct gen *g, uint32_t f, uint32_t block, uint32_t n)
{
	return block + n > g->size[f] ? g->size[f] - block : n;
}

static uint32_t hot_file(struct gen *g)
{
	return (uint32_t)g->id[zipf_draw(&g->files, &g->seed)];
}

static void make_script(struct gen *g, struct script *sc)
{
	uint32_t len = 5 + (uint32_t)below(&g->seed, 26);

	sc->steps = xcalloc(len, sizeof(*sc->steps));
	sc->n = 0;
	while (sc->n < len) {
		uint32_t f = hot_file(g), chunk = req_blocks(&g->seed), b = 0;
		uint32_t reads = 1 + (uint32_t)below(&g->seed, 8);

		for (uint32_t i = 0; i < reads && b < g->size[f] && sc->n < len; i++) {
			uint32_t n = clip(g, f, b, chunk);

			sc->steps[sc->n++] = (struct step){.file = f, .block = b, .nblocks = n};
			b += n;
		}
	}
}

static void gen_init(struct gen *g, uint64_t seed, size_t nfiles)
{
	memset(g, 0, sizeof(*g));
	g->seed = seed;
	g->nfiles = nfiles;
	g->size = xcalloc(nfiles, sizeof(*g->size));
	g->id = xcalloc(nfiles, sizeof(*g->id));
	for (size_t i = 0; i < nfiles; i++) {
		g->size[i] = file_blocks(&g->seed);
		g->id[i] = i;
	}
	for (size_t i = nfiles - 1; i > 0; i--) { /* rank -> file: shuffled */
		size_t j = below(&g->seed, i + 1);
		uint64_t t = g->id[i];

		g->id[i] = g->id[j];
		g->id[j] = t;
	}
	zipf_init(&g->files, nfiles);
	zipf_init(&g->scripts, SCRIPTS);
	for (int i = 0; i < SCRIPTS; i++)
		make_script(g, &g->script[i]);
	g->ts = START_TS;
}

static void gen_free(struct gen *g)
{
	for (int i = 0; i < SCRIPTS; i++)
		free(g->script[i].steps);
	free(g->files.cdf);
	free(g->scripts.cdf);
	free(g->size);
	free(g->id);
}

static void start_action(struct gen *g, struct proc *p)
{
	uint64_t r = below(&g->seed, 100);

	if (r < 35) {
		p->act = SCRIPT;
		p->script = (uint32_t)zipf_draw(&g->scripts, &g->seed);
		p->pos = 0;
	} else if (r < 85) {
		p->act = SEQ;
		p->file = hot_file(g);
		p->block =
			below(&g->seed, 10) < 7 ? 0 : (uint32_t)below(&g->seed, g->size[p->file]);
		p->chunk = req_blocks(&g->seed);
		p->left = 1 + (uint32_t)below(&g->seed, 64);
	} else {
		p->act = RANDOM;
		p->file = hot_file(g);
		p->left = 1 + (uint32_t)below(&g->seed, 16);
	}
}

/* The next request: a random awake process takes its next step. */
static void gen_next(struct gen *g, struct req *out)
{
	uint32_t i = (uint32_t)below(&g->seed, PROCS), f, b, n;
	struct proc *p;

	g->ts += 50000 + (int64_t)below(&g->seed, 100001);
	for (;;) {
		int64_t soonest = INT64_MAX;

		for (uint32_t k = 0; k < PROCS; k++) {
			struct proc *q = &g->proc[(i + k) % PROCS];

			if (q->wake <= g->ts) {
				i = (i + k) % PROCS;
				goto found;
			}
			if (q->wake < soonest)
				soonest = q->wake;
		}
		g->ts = soonest; /* all asleep */
	}
found:
	p = &g->proc[i];
	if (p->act == IDLE)
		start_action(g, p);
	switch (p->act) {
	case SCRIPT: {
		const struct step *st = &g->script[p->script].steps[p->pos++];

		f = st->file, b = st->block, n = st->nblocks;
		if (p->pos == g->script[p->script].n)
			p->act = IDLE;
		break;
	}
	case SEQ:
		f = p->file, b = p->block;
		n = clip(g, f, b, p->chunk);
		p->block += n;
		if (--p->left == 0 || p->block >= g->size[f])
			p->act = IDLE;
		break;
	default: /* RANDOM */
		f = p->file;
		b = (uint32_t)below(&g->seed, g->size[f]);
		n = clip(g, f, b, req_blocks(&g->seed));
		if (--p->left == 0)
			p->act = IDLE;
		break;
	}
	if (p->act == IDLE && below(&g->seed, 100) == 0)
		p->wake = g->ts + 1500000000LL + (int64_t)below(&g->seed, 1500000001ULL);
	*out = (struct req){
		.ts = g->ts, .file = (uint64_t)f + 1, .block = b, .nblocks = n, .pid = i + 1};
}

/* ---- one size, in a child ---------------------------------------------- */

struct result {
	int ok;
	uint64_t n, files;
	unsigned reps; /* median of that many runs */
	double gen_s, analyze_s, export_s, plan8_s, plan1_s;
	struct hy_analyzer_stats st;
	uint64_t graph_blocks, cap1;
	uint64_t plan8_blocks, plan8_count, plan8_skipped;
	uint64_t plan1_blocks, plan1_count;
	int roundtrip; /* 0: not asked, 1: done */
	double save_s, load_s;
	long long db_bytes;
	long maxrss_kib;
	char why[1024];
};

static char why[1024];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static int roundtrip(struct hy_analyzer *a, const char *base, struct result *r)
{
	char dir[PATH_MAX], state_dir[PATH_MAX + 16], wal[PATH_MAX + 64];
	struct hy_analyzer_stats back;
	struct hy_analyzer *b;
	struct hy_state *state;
	int64_t last;
	double t0;
	int rc = -1;

	if (snprintf(dir, sizeof(dir), "%s/hy-borg-bench.XXXXXX", base) >= (int)sizeof(dir) ||
	    !mkdtemp(dir)) {
		snprintf(r->why, sizeof(r->why), "cannot make a temp folder under %s", base);
		return -1;
	}
	snprintf(state_dir, sizeof(state_dir), "%s/state", dir);
	if (hy_state_open(state_dir, "/bench", false, &state, why, sizeof(why)) != 0) {
		snprintf(r->why, sizeof(r->why), "%s", why);
		goto out;
	}
	t0 = now_s();
	if (hy_analyzer_save(a, state->db, "cumulative", 0, why, sizeof(why)) != 0) {
		snprintf(r->why, sizeof(r->why), "%s", why);
		goto close;
	}
	r->save_s = now_s() - t0;
	snprintf(wal, sizeof(wal), "%s-wal", state->db_path);
	r->db_bytes = file_size(state->db_path) + file_size(wal);
	if (hy_analyzer_new(NULL, &b) != 0) {
		snprintf(r->why, sizeof(r->why), "hy_analyzer_new failed");
		goto close;
	}
	t0 = now_s();
	if (hy_analyzer_load(b, state->db, &last, why, sizeof(why)) != 0) {
		snprintf(r->why, sizeof(r->why), "%s", why);
		hy_analyzer_free(b);
		goto close;
	}
	r->load_s = now_s() - t0;
	hy_analyzer_get_stats(b, &back);
	hy_analyzer_free(b);
	if (back.vertices != r->st.vertices || back.edges != r->st.edges) {
		snprintf(r->why, sizeof(r->why),
			 "round trip lost data: %" PRIu64 "/%" PRIu64
			 " vertices/edges saved, %" PRIu64 "/%" PRIu64 " loaded",
			 r->st.vertices, r->st.edges, back.vertices, back.edges);
		goto close;
	}
	r->roundtrip = 1;
	rc = 0;
close:
	hy_state_close(state);
out:
	if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "borg: cannot remove %s\n", dir);
	return rc;
}

/* Small logs take milliseconds: they are analyzed and planned several
 * times (each time from scratch) and the median is kept. */
#define MIN_WORK 1000000ULL
#define MAX_REPS 101

static unsigned reps_for(uint64_t n)
{
	uint64_t k = MIN_WORK / n;

	return k <= 1 ? 1 : k >= MAX_REPS ? MAX_REPS : (unsigned)(k | 1);
}

static int dbl_cmp(const void *pa, const void *pb)
{
	double x = *(const double *)pa, y = *(const double *)pb;

	return x < y ? -1 : x > y;
}

static double median(double *t, unsigned n)
{
	qsort(t, n, sizeof(*t), dbl_cmp);
	return t[n / 2];
}

/* A fresh analyzer fed the N requests of the log; returns the seconds spent
 * in hy_analyzer_feed() and adds the generation's to @gen_s. */
static double analyze(struct hy_analyzer **out, uint64_t n, uint64_t seed, size_t files,
		      double *gen_s)
{
	static struct req buf[CHUNK];
	struct hy_analyzer *a;
	struct gen g;
	uint64_t done = 0;
	double secs = 0, t0;

	gen_init(&g, seed, files);
	if (hy_analyzer_new(NULL, &a) != 0)
		die("hy_analyzer_new failed");
	while (done < n) {
		size_t m = n - done < CHUNK ? (size_t)(n - done) : CHUNK;

		t0 = now_s();
		for (size_t i = 0; i < m; i++)
			gen_next(&g, &buf[i]);
		*gen_s += now_s() - t0;
		t0 = now_s();
		for (size_t i = 0; i < m; i++)
			if (hy_analyzer_feed(a, buf[i].ts, buf[i].pid, buf[i].file, buf[i].block,
					     buf[i].nblocks) != 0)
				die("hy_analyzer_feed failed");
		secs += now_s() - t0;
		done += m;
	}
	gen_free(&g);
	*out = a;
	return secs;
}

/* The median of @reps plans; the last plan's figures in @out. */
static double plan(const struct hy_plan_vertex *v, size_t nv, const struct hy_plan_edge *e,
		   size_t ne, uint64_t cap, unsigned reps, struct hy_plan *out)
{
	double t[MAX_REPS];

	for (unsigned i = 0; i < reps; i++) {
		double t0 = now_s();

		if (i > 0)
			hy_plan_free(out);
		if (hy_planner_plan(v, nv, e, ne, cap, out, why, sizeof(why)) != 0)
			die(why);
		t[i] = now_s() - t0;
	}
	return median(t, reps);
}

struct opts {
	uint64_t seed;
	uint64_t files; /* 0: N / LOG_PER_FILE within [MIN_FILES, MAX_FILES] */
	const char *base;
};

static void run_size(uint64_t n, const struct opts *o, bool rt, struct result *r)
{
	struct hy_analyzer *a = NULL;
	struct hy_plan_vertex *v;
	struct hy_plan_edge *e;
	struct hy_plan p8, p1;
	struct rusage ru;
	uint64_t files = n / LOG_PER_FILE;
	double t[MAX_REPS];
	size_t nv, ne;

	memset(r, 0, sizeof(*r));
	r->n = n;
	r->reps = reps_for(n);
	files = files < MIN_FILES ? MIN_FILES : files > MAX_FILES ? MAX_FILES : files;
	r->files = o->files ? o->files : files;
	for (unsigned i = 0; i < r->reps; i++) {
		if (a)
			hy_analyzer_free(a);
		t[i] = analyze(&a, n, o->seed, r->files, &r->gen_s);
	}
	r->analyze_s = median(t, r->reps);
	r->gen_s /= r->reps;
	hy_analyzer_get_stats(a, &r->st);

	for (unsigned i = 0; i < r->reps; i++) {
		double t0 = now_s();

		if (hy_analyzer_export(a, &v, &nv, NULL, &e, &ne) != 0)
			die("hy_analyzer_export failed");
		t[i] = now_s() - t0;
		if (i + 1 < r->reps)
			free(v), free(e);
	}
	r->export_s = median(t, r->reps);
	for (size_t i = 0; i < nv; i++)
		r->graph_blocks += v[i].nblocks;
	r->cap1 = r->graph_blocks / 100 ? r->graph_blocks / 100 : 1;

	r->plan8_s = plan(v, nv, e, ne, BOPT_8G, r->reps, &p8);
	r->plan8_blocks = p8.blocks_used, r->plan8_count = p8.count, r->plan8_skipped = p8.skipped;
	hy_plan_free(&p8);
	r->plan1_s = plan(v, nv, e, ne, r->cap1, r->reps, &p1);
	r->plan1_blocks = p1.blocks_used, r->plan1_count = p1.count;
	hy_plan_free(&p1);
	free(v);
	free(e);

	r->ok = 1;
	if (rt && roundtrip(a, o->base, r) != 0)
		r->ok = 0;
	hy_analyzer_free(a);
	getrusage(RUSAGE_SELF, &ru);
	r->maxrss_kib = ru.ru_maxrss;
}

static int in_child(uint64_t n, const struct opts *o, bool rt, struct result *r)
{
	int fd[2], status;
	ssize_t got = 0;
	pid_t pid;

	fflush(stdout);
	if (pipe(fd) != 0)
		die("pipe failed");
	pid = fork();
	if (pid < 0)
		die("fork failed");
	if (pid == 0) {
		static struct result mine;
		const char *p = (const char *)&mine;
		size_t left = sizeof(mine);

		close(fd[0]);
		run_size(n, o, rt, &mine);
		while (left > 0) {
			ssize_t w = write(fd[1], p, left);

			if (w <= 0)
				_exit(1);
			p += w, left -= (size_t)w;
		}
		_exit(mine.ok ? 0 : 1);
	}
	close(fd[1]);
	memset(r, 0, sizeof(*r));
	while ((size_t)got < sizeof(*r)) {
		ssize_t m = read(fd[0], (char *)r + got, sizeof(*r) - (size_t)got);

		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			break;
		got += m;
	}
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if ((size_t)got != sizeof(*r)) {
		memset(r, 0, sizeof(*r));
		r->n = n;
		snprintf(r->why, sizeof(r->why), "the child died (status %d)", status);
		return -1;
	}
	return r->ok ? 0 : -1;
}

/* ---- main ---------------------------------------------------------------- */

static uint64_t number(const char *s)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end); /* 1e6 as well as 1000000 */
	if (errno || *end || !(d >= 1) || d > 4e9 || d != floor(d))
		die("sizes and the seed want positive whole numbers (1e6 is fine)");
	return (uint64_t)d;
}

static double mib(uint64_t blocks)
{
	return (double)blocks * 4096 / 1048576;
}

int main(int argc, char **argv)
{
	uint64_t sizes[MAX_SIZES], rts[MAX_SIZES];
	size_t nsizes = 0, nrts = 0;
	struct result res[MAX_SIZES];
	struct opts o = {.seed = 42, .base = getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp"};
	bool rts_given = false;
	int opt, fails = 0;

	while ((opt = getopt(argc, argv, "n:r:s:f:d:h")) != -1) {
		switch (opt) {
		case 'n':
			if (nsizes == MAX_SIZES)
				die("too many -n");
			sizes[nsizes++] = number(optarg);
			break;
		case 'r':
			if (nrts == MAX_SIZES)
				die("too many -r");
			rts_given = true;
			if (strcmp(optarg, "none") != 0)
				rts[nrts++] = number(optarg);
			break;
		case 's':
			o.seed = number(optarg);
			break;
		case 'f':
			o.files = number(optarg);
			if (o.files > 100000000)
				die("-f FILES: at most 100000000");
			break;
		case 'd':
			o.base = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-n N]... [-r N|none]... [-s SEED] [-f FILES] [-d "
				"DIR]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (nsizes == 0) {
		static const uint64_t dflt[] = {10000, 100000, 1000000, 10000000};

		for (size_t i = 0; i < 4; i++)
			sizes[nsizes++] = dflt[i];
	}
	if (!rts_given) {
		rts[nrts++] = 100000;
		rts[nrts++] = 1000000;
	}
	hy_log_init(HY_LOG_STDERR, LOG_WARNING, "borg");

	printf("- log: seed %" PRIu64 ", %d processes, %d scripts, Zipf s=1, requests 4-128 KiB,"
	       " ~100 us apart, ",
	       o.seed, PROCS, SCRIPTS);
	if (o.files)
		printf("%" PRIu64 " files at every size\n", o.files);
	else
		printf("files = N/%d within [%d, %d]\n", LOG_PER_FILE, MIN_FILES, MAX_FILES);
	printf("- analyzer: default config (gap %.0f s, max_vertices %d); 8 GiB plan = %llu "
	       "blocks\n",
	       HY_ANALYZER_DEFAULT_GAP_NS / 1e9, HY_ANALYZER_DEFAULT_MAX_VERTICES,
	       (unsigned long long)BOPT_8G);
	printf("- each size in a fresh child process; below %llu requests the analysis, export"
	       " and plans are repeated (runs) and the median kept\n",
	       (unsigned long long)MIN_WORK);
	for (size_t i = 0; i < nsizes; i++) {
		bool rt = false;
		double t0 = now_s();

		for (size_t j = 0; j < nrts; j++)
			rt = rt || rts[j] == sizes[i];
		fprintf(stderr, "borg: N = %" PRIu64 "%s ...\n", sizes[i],
			rt ? " (with save/load)" : "");
		if (in_child(sizes[i], &o, rt, &res[i]) != 0) {
			fprintf(stderr, "borg: N = %" PRIu64 " failed: %s\n", sizes[i], res[i].why);
			fails++;
		} else {
			fprintf(stderr, "borg: N = %" PRIu64 " done in %.1f s\n", sizes[i],
				now_s() - t0);
		}
	}

	printf("\n## analyzer and planner cost against log size\n\n");
	printf("| N | files | runs | analyze s | records/s | ns/record | vertices | edges | splits "
	       "| cuts | export s | plan s (8 GiB) | plan s (1%%) | plan ns/edge (8 GiB) "
	       "| planned MiB (8 GiB) | planned MiB (1%%) | peak RSS MiB |\n");
	printf("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
	for (size_t i = 0; i < nsizes; i++) {
		const struct result *r = &res[i];

		if (!r->analyze_s) {
			printf("| %" PRIu64 " | failed: %s |\n", r->n, r->why);
			continue;
		}
		printf("| %" PRIu64 " | %" PRIu64 " | %u | %.4f | %.0f | %.0f | %" PRIu64
		       " | %" PRIu64 " | %" PRIu64 " | %" PRIu64
		       " | %.4f | %.4f | %.4f | %.0f | %.1f | %.1f "
		       "| %.1f |\n",
		       r->n, r->files, r->reps, r->analyze_s, (double)r->n / r->analyze_s,
		       r->analyze_s * 1e9 / (double)r->n, r->st.vertices, r->st.edges, r->st.splits,
		       r->st.cut_vertices, r->export_s, r->plan8_s, r->plan1_s,
		       r->st.edges ? r->plan8_s * 1e9 / (double)r->st.edges : 0.0,
		       mib(r->plan8_blocks), mib(r->plan1_blocks), (double)r->maxrss_kib / 1024);
	}
	printf("\n- graph: blocks covered, and what the 8 GiB plan placed\n\n");
	printf("| N | graph MiB | 1%% capacity MiB | placed vertices (8 GiB) | skipped (8 GiB) "
	       "| placed vertices (1%%) | generation s (not timed above) |\n");
	printf("|--:|--:|--:|--:|--:|--:|--:|\n");
	for (size_t i = 0; i < nsizes; i++) {
		const struct result *r = &res[i];

		if (!r->analyze_s)
			continue;
		printf("| %" PRIu64 " | %.1f | %.1f | %" PRIu64 " | %" PRIu64 " | %" PRIu64
		       " | %.3f |\n",
		       r->n, mib(r->graph_blocks), mib(r->cap1), r->plan8_count, r->plan8_skipped,
		       r->plan1_count, r->gen_s);
	}
	printf("\n## save + load round trip (SQLite state database, schema %d)\n\n",
	       HY_STATE_SCHEMA_VERSION);
	printf("| N | vertices | edges | save s | load s | db MiB | us/vertex (save+load) |\n");
	printf("|--:|--:|--:|--:|--:|--:|--:|\n");
	for (size_t i = 0; i < nsizes; i++) {
		const struct result *r = &res[i];

		if (!r->roundtrip)
			continue;
		printf("| %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %.3f | %.3f | %.1f | %.2f |\n",
		       r->n, r->st.vertices, r->st.edges, r->save_s, r->load_s,
		       (double)r->db_bytes / 1048576,
		       r->st.vertices ? (r->save_s + r->load_s) * 1e6 / (double)r->st.vertices
				      : 0.0);
	}
	return fails ? 1 : 0;
}
