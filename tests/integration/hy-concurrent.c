/*
 * hy-concurrent.c - several processes at once on one directory (a hybridfs
 * mount), then an exact check of every file.
 *
 *   hy-concurrent [--procs N] [--seed S] [--verify-only] DIR
 *
 * Every worker process (forked; they are synchronized only by waiting for
 * them all) does, in an order drawn from its own deterministic PRNG:
 *   - writes private files priv-W-F with a position-dependent pattern, in
 *     chunks of random sizes in random order, some chunks twice, and reads
 *     each back;
 *   - writes its own stripes of the shared file "shared" with pwrite(2);
 *     stripes are not page-aligned, so neighbouring workers write parts of
 *     the same pages at the same time;
 *   - reads other workers' private files while they are being written:
 *     every byte must be 0 (not written yet) or the final pattern;
 *   - churns the shared folder "churn": creates, renames (between the
 *     shared sub-folders, and over the common name "churn/common"), links,
 *     unlinks, mkdir/rmdir of its own names.
 * Then the parent checks everything: contents of all files, the exact set
 * of names in "churn", and that "churn/common" is one complete version.
 * With --verify-only only the check runs (e.g. on the backing directory
 * after unmounting).
 *
 * Exit status: 0 all correct, 1 a wrong byte or name, 2 setup error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rng.h"

#define MAX_PROCS	 32
#define PRIV_FILES	 3
#define STRIPE		 5003 /* not a multiple of the page size, on purpose */
#define STRIPES_PER_PROC 40
#define CHURN_ITEMS	 24
#define COMMON_SIZE	 9000

static int nprocs = 8;
static uint64_t seed = 1;
static int dirfd_ = -1;
static const char *dir_path;
static int me = -1; /* worker number, -1 in the parent */

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...)
{
	va_list ap;

	if (me >= 0)
		fprintf(stderr, "hy-concurrent: worker %d: ", me);
	else
		fprintf(stderr, "hy-concurrent: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---- deterministic PRNG and patterns ---------------------------------- */

/* rnd() and below(): rng.h */

/* The byte at @off of the file identified by @id. Never the same for
 * neighbouring offsets, so shifted data is caught. */
static unsigned char pattern(uint64_t id, uint64_t off)
{
	uint64_t z = (id * 0x9e3779b97f4a7c15ULL) ^ (off * 0xc2b2ae3d27d4eb4fULL) ^ seed;

	z ^= z >> 31;
	z *= 0xbf58476d1ce4e5b9ULL;
	z ^= z >> 29;
	return (unsigned char)(z | ((off & 1) ? 0x01 : 0x80)); /* never 0 */
}

static void fill(unsigned char *buf, uint64_t id, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = pattern(id, off + i);
}

static uint64_t priv_id(int w, int f)
{
	return 1000 + (uint64_t)w * 16 + (uint64_t)f;
}

static size_t priv_size(int w, int f)
{
	struct rng r = {seed * 131 + priv_id(w, f)};

	return 1 + (size_t)below(&r, 700000);
}

static uint64_t shared_id(void)
{
	return 7;
}

static uint64_t churn_id(int w, int j)
{
	return 100000 + (uint64_t)w * 1000 + (uint64_t)j;
}

static size_t churn_size(int w, int j)
{
	return (size_t)((w * 7919 + j * 104729) % 20000);
}

static uint64_t common_id(int w)
{
	return 200000 + (uint64_t)w;
}

/* ---- I/O helpers -------------------------------------------------------- */

static void pwrite_all(int fd, const unsigned char *buf, size_t n, off_t off, const char *what)
{
	while (n) {
		ssize_t k = pwrite(fd, buf, n, off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			fail("%s: pwrite at %lld: %s", what, (long long)off,
			     k < 0 ? strerror(errno) : "wrote nothing");
		buf += k;
		n -= (size_t)k;
		off += k;
	}
}

static void write_file(const char *name, uint64_t id, size_t size, int flags)
{
	unsigned char *buf = malloc(size ? size : 1);
	int fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);

	if (!buf)
		fail("out of memory");
	if (fd < 0)
		fail("%s: create: %s", name, strerror(errno));
	fill(buf, id, 0, size);
	pwrite_all(fd, buf, size, 0, name);
	if (close(fd) < 0)
		fail("%s: close: %s", name, strerror(errno));
	free(buf);
}

/* Checks that @name holds exactly @size bytes of pattern @id. */
static void check_file(const char *name, uint64_t id, size_t size)
{
	int fd = openat(dirfd_, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	unsigned char buf[65536];
	struct stat st;
	off_t off = 0;

	if (fd < 0)
		fail("%s: open: %s", name, strerror(errno));
	if (fstat(fd, &st) < 0)
		fail("%s: fstat: %s", name, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size != (off_t)size)
		fail("%s: size %lld (mode %o), expected %zu", name, (long long)st.st_size,
		     (unsigned)st.st_mode, size);
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);

		if (n < 0)
			fail("%s: read at %lld: %s", name, (long long)off, strerror(errno));
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(id, (uint64_t)(off + i)))
				fail("%s: byte %lld is %02x, expected %02x", name,
				     (long long)(off + i), buf[i],
				     pattern(id, (uint64_t)(off + i)));
		off += n;
	}
	if (off != (off_t)size)
		fail("%s: read %lld bytes, expected %zu", name, (long long)off, size);
	close(fd);
}

/* ---- the workers' jobs -------------------------------------------------- */

static void priv_name(char *buf, size_t size, int w, int f)
{
	snprintf(buf, size, "priv-%d-%d", w, f);
}

/* Chunks in random order, some twice; then read back. */
static void job_private(struct rng *r, int f)
{
	size_t size = priv_size(me, f), off = 0;
	uint64_t id = priv_id(me, f);
	char name[64];
	struct {
		size_t off, len;
	} chunks[512];
	int n = 0, fd;
	unsigned char *buf = malloc(256 * 1024);

	if (!buf)
		fail("out of memory");
	priv_name(name, sizeof(name), me, f);
	while (off < size && n < 511) {
		size_t len = 1 + (size_t)below(r, below(r, 4) ? 8192 : 256 * 1024);

		if (len > size - off)
			len = size - off;
		chunks[n].off = off;
		chunks[n].len = len;
		n++;
		off += len;
	}
	if (off < size) {
		chunks[n].off = off;
		chunks[n].len = size - off;
		n++;
	}
	for (int i = n - 1; i > 0; i--) { /* shuffle */
		int j = (int)below(r, (uint64_t)i + 1);
		size_t o = chunks[i].off, l = chunks[i].len;

		chunks[i] = chunks[j];
		chunks[j].off = o;
		chunks[j].len = l;
	}
	fd = openat(dirfd_, name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		fail("%s: create: %s", name, strerror(errno));
	for (int i = 0; i < n; i++) {
		for (size_t done = 0; done < chunks[i].len;) {
			size_t k = chunks[i].len - done;

			if (k > 256 * 1024)
				k = 256 * 1024;
			fill(buf, id, chunks[i].off + done, k);
			pwrite_all(fd, buf, k, (off_t)(chunks[i].off + done), name);
			done += k;
		}
		if (below(r, 8) == 0 && i > 0) { /* again, an earlier chunk */
			int j = (int)below(r, (uint64_t)i);
			size_t k = chunks[j].len > 256 * 1024 ? 256 * 1024 : chunks[j].len;

			fill(buf, id, chunks[j].off, k);
			pwrite_all(fd, buf, k, (off_t)chunks[j].off, name);
		}
		if (below(r, 16) == 0 && fsync(fd) < 0)
			fail("%s: fsync: %s", name, strerror(errno));
	}
	if (close(fd) < 0)
		fail("%s: close: %s", name, strerror(errno));
	free(buf);
	check_file(name, id, size);
}

static void job_stripes(struct rng *r)
{
	int fd = openat(dirfd_, "shared", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	int order[STRIPES_PER_PROC];
	unsigned char buf[STRIPE];

	if (fd < 0)
		fail("shared: open: %s", strerror(errno));
	for (int k = 0; k < STRIPES_PER_PROC; k++)
		order[k] = k;
	for (int k = STRIPES_PER_PROC - 1; k > 0; k--) {
		int j = (int)below(r, (uint64_t)k + 1), t = order[k];

		order[k] = order[j];
		order[j] = t;
	}
	for (int k = 0; k < STRIPES_PER_PROC; k++) {
		/* stripe s belongs to worker s % nprocs */
		uint64_t s = (uint64_t)order[k] * (uint64_t)nprocs + (uint64_t)me;
		off_t off = (off_t)(s * STRIPE);

		fill(buf, shared_id(), (uint64_t)off, STRIPE);
		pwrite_all(fd, buf, STRIPE, off, "shared");
	}
	if (close(fd) < 0)
		fail("shared: close: %s", strerror(errno));
}

/* Reads another worker's private file while it may be written: a byte is
 * either not written yet (0) or its final value. */
static void job_peek(struct rng *r)
{
	int w = (int)below(r, (uint64_t)nprocs), f = (int)below(r, PRIV_FILES);
	uint64_t id = priv_id(w, f);
	unsigned char buf[32768];
	char name[64];
	off_t off;
	ssize_t n;
	int fd;

	priv_name(name, sizeof(name), w, f);
	fd = openat(dirfd_, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return; /* not created yet */
		fail("%s: open: %s", name, strerror(errno));
	}
	off = (off_t)below(r, priv_size(w, f));
	n = pread(fd, buf, sizeof(buf), off);
	if (n < 0)
		fail("%s: read: %s", name, strerror(errno));
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] != 0 && buf[i] != pattern(id, (uint64_t)(off + i)))
			fail("%s: while written, byte %lld is %02x: neither 0 nor %02x", name,
			     (long long)(off + i), buf[i], pattern(id, (uint64_t)(off + i)));
	close(fd);
}

static void expect_ok(int rc, const char *what, const char *name)
{
	if (rc < 0)
		fail("%s %s: %s", what, name, strerror(errno));
}

static void do_rename(const char *from, const char *to)
{
	if (renameat(dirfd_, from, dirfd_, to) < 0)
		fail("rename %s %s: %s", from, to, strerror(errno));
}

static void do_link(const char *from, const char *to)
{
	if (linkat(dirfd_, from, dirfd_, to, 0) < 0)
		fail("link %s %s: %s", from, to, strerror(errno));
}

static void do_mkdir(const char *name, bool may_exist)
{
	if (mkdirat(dirfd_, name, 0755) < 0 && !(may_exist && errno == EEXIST))
		fail("mkdir %s: %s", name, strerror(errno));
}

/* The final name of churn item @j of worker @w, or NULL when it ends
 * removed; a function of (w, j) alone, so the parent can check. */
static const char *churn_final(int w, int j, char *buf, size_t size)
{
	switch (j % 4) {
	case 0:
		snprintf(buf, size, "churn/d%d/item-%d-%d", (w + j) % 3, w, j);
		return buf;
	case 1:
		snprintf(buf, size, "churn/renamed-%d-%d", w, j);
		return buf;
	case 2:
		return NULL;
	default:
		snprintf(buf, size, "churn/w%d/sub%d/f", w, j);
		return buf;
	}
}

/* Item @j of this worker: made as a temporary name, then moved to the
 * name churn_final() gives, through other names and folders. */
static void job_churn(struct rng *r, int j)
{
	char tmp[96], a[96], b[96];
	unsigned char buf[4096];
	size_t size = churn_size(me, j);
	int fd;

	snprintf(tmp, sizeof(tmp), "churn/tmp-%d-%d", me, j);
	write_file(tmp, churn_id(me, j), size, O_TRUNC);
	switch (j % 4) {
	case 0: /* across the shared folders, with a link made and removed */
		snprintf(a, sizeof(a), "churn/d%d/item-%d-%d", (me + j + 1) % 3, me, j);
		do_rename(tmp, a);
		snprintf(b, sizeof(b), "churn/d%d/link-%d-%d", (me + j + 2) % 3, me, j);
		do_link(a, b);
		churn_final(me, j, tmp, sizeof(tmp));
		do_rename(a, tmp);
		expect_ok(unlinkat(dirfd_, b, 0), "unlink", b);
		break;
	case 1: /* renamed, linked, first name removed */
		snprintf(a, sizeof(a), "churn/x-%d-%d", me, j);
		do_rename(tmp, a);
		churn_final(me, j, b, sizeof(b));
		do_link(a, b);
		expect_ok(unlinkat(dirfd_, a, 0), "unlink", a);
		break;
	case 2: /* unlinked while open, written and read through the descriptor */
		fd = openat(dirfd_, tmp, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			fail("%s: open: %s", tmp, strerror(errno));
		expect_ok(unlinkat(dirfd_, tmp, 0), "unlink", tmp);
		fill(buf, churn_id(me, j), size, sizeof(buf));
		pwrite_all(fd, buf, sizeof(buf), (off_t)size, tmp);
		for (off_t off = 0; off < (off_t)(size + sizeof(buf));) {
			ssize_t n = pread(fd, buf, sizeof(buf), off);

			if (n <= 0)
				fail("%s (unlinked): read at %lld: %s", tmp, (long long)off,
				     n < 0 ? strerror(errno) : "end of file");
			for (ssize_t i = 0; i < n; i++)
				if (buf[i] != pattern(churn_id(me, j), (uint64_t)(off + i)))
					fail("%s (unlinked): byte %lld wrong", tmp,
					     (long long)(off + i));
			off += n;
		}
		close(fd);
		if (j == 2) { /* every worker replaces the common name once */
			snprintf(a, sizeof(a), "churn/cm-%d", me);
			write_file(a, common_id(me), COMMON_SIZE, O_TRUNC);
			do_rename(a, "churn/common");
		}
		break;
	default: /* in a private folder made and renamed in the shared one */
		snprintf(a, sizeof(a), "churn/w%d", me);
		do_mkdir(a, true);
		snprintf(a, sizeof(a), "churn/w%d/tmpsub%d", me, j);
		do_mkdir(a, false);
		snprintf(b, sizeof(b), "churn/w%d/tmpsub%d/f", me, j);
		do_rename(tmp, b);
		snprintf(b, sizeof(b), "churn/w%d/sub%d", me, j);
		do_rename(a, b);
		snprintf(a, sizeof(a), "churn/w%d/scratch%d", me, j);
		do_mkdir(a, false);
		snprintf(b, sizeof(b), "churn/w%d/scratch%d/g", me, j);
		write_file(b, 1, (size_t)below(r, 5000), O_EXCL);
		expect_ok(unlinkat(dirfd_, b, 0), "unlink", b);
		expect_ok(unlinkat(dirfd_, a, AT_REMOVEDIR), "rmdir", a);
		break;
	}
}

static void worker(void)
{
	struct rng r = {seed * 1000003 + (uint64_t)me};
	int steps_priv = 0, steps_churn = 0;
	bool stripes_done = false;

	while (steps_priv < PRIV_FILES || steps_churn < CHURN_ITEMS || !stripes_done) {
		uint64_t k = below(&r, 10);

		if (k < 2 && steps_priv < PRIV_FILES) {
			job_private(&r, steps_priv++);
		} else if (k < 3 && !stripes_done) {
			job_stripes(&r);
			stripes_done = true;
		} else if (k < 6) {
			job_peek(&r);
		} else if (steps_churn < CHURN_ITEMS) {
			job_churn(&r, steps_churn++);
		}
	}
}

/* ---- the check ---------------------------------------------------------- */

struct names {
	char **v;
	size_t n, cap;
};

static void names_add(struct names *l, const char *name)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			fail("out of memory");
	}
	l->v[l->n] = strdup(name);
	if (!l->v[l->n])
		fail("out of memory");
	l->n++;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Every name under @rel, as "path" for files and "path/" for folders. */
static void walk(const char *rel, struct names *out)
{
	int fd = openat(dirfd_, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;

	if (!dp)
		fail("%s: opendir: %s", rel, strerror(errno));
	while ((errno = 0, de = readdir(dp))) {
		char sub[PATH_MAX];
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name);
		if (fstatat(dirfd_, sub, &st, AT_SYMLINK_NOFOLLOW) < 0)
			fail("%s: lstat: %s", sub, strerror(errno));
		if (S_ISDIR(st.st_mode)) {
			char d[PATH_MAX + 1];

			snprintf(d, sizeof(d), "%s/", sub);
			names_add(out, d);
			walk(sub, out);
		} else {
			if (st.st_nlink != 1)
				fail("%s: link count %lu, expected 1", sub,
				     (unsigned long)st.st_nlink);
			names_add(out, sub);
		}
	}
	if (errno)
		fail("%s: readdir: %s", rel, strerror(errno));
	closedir(dp);
}

static void verify(void)
{
	struct names want = {NULL, 0, 0}, have = {NULL, 0, 0};
	char name[PATH_MAX];
	bool common_ok = false;

	for (int w = 0; w < nprocs; w++)
		for (int f = 0; f < PRIV_FILES; f++) {
			priv_name(name, sizeof(name), w, f);
			check_file(name, priv_id(w, f), priv_size(w, f));
		}
	check_file("shared", shared_id(), (size_t)nprocs * STRIPES_PER_PROC * STRIPE);

	for (int d = 0; d < 3; d++) {
		snprintf(name, sizeof(name), "churn/d%d/", d);
		names_add(&want, name);
	}
	names_add(&want, "churn/common");
	for (int w = 0; w < nprocs; w++) {
		bool has_dir = false;

		for (int j = 0; j < CHURN_ITEMS; j++) {
			const char *fin = churn_final(w, j, name, sizeof(name));

			if (!fin)
				continue;
			check_file(fin, churn_id(w, j), churn_size(w, j));
			names_add(&want, fin);
			if (j % 4 == 3) {
				has_dir = true;
				snprintf(name, sizeof(name), "churn/w%d/sub%d/", w, j);
				names_add(&want, name);
			}
		}
		if (has_dir) {
			snprintf(name, sizeof(name), "churn/w%d/", w);
			names_add(&want, name);
		}
	}
	walk("churn", &have);
	qsort(want.v, want.n, sizeof(char *), cmp_str);
	qsort(have.v, have.n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < want.n || i < have.n; i++)
		if (i >= want.n || i >= have.n || strcmp(want.v[i], have.v[i]) != 0)
			fail("churn: name %zu is \"%s\", expected \"%s\"", i,
			     i < have.n ? have.v[i] : "(none)", i < want.n ? want.v[i] : "(none)");

	/* "churn/common" is one worker's version, whole */
	for (int w = 0; w < nprocs && !common_ok; w++) {
		int fd = openat(dirfd_, "churn/common", O_RDONLY | O_CLOEXEC);
		unsigned char buf[COMMON_SIZE + 1];
		ssize_t n;

		if (fd < 0)
			fail("churn/common: open: %s", strerror(errno));
		n = pread(fd, buf, sizeof(buf), 0);
		close(fd);
		if (n != COMMON_SIZE)
			fail("churn/common: %zd bytes, expected %d", n, COMMON_SIZE);
		common_ok = true;
		for (size_t i = 0; i < COMMON_SIZE && common_ok; i++)
			common_ok = buf[i] == pattern(common_id(w), i);
	}
	if (!common_ok)
		fail("churn/common: not any one worker's version");
	for (size_t i = 0; i < want.n; i++)
		free(want.v[i]);
	for (size_t i = 0; i < have.n; i++)
		free(have.v[i]);
	free(want.v);
	free(have.v);
}

static void usage(void)
{
	fprintf(stderr, "usage: hy-concurrent [--procs N] [--seed S] [--verify-only] DIR\n");
	exit(2);
}

int main(int argc, char **argv)
{
	bool verify_only = false, failed = false;
	pid_t pids[MAX_PROCS];
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc)
			nprocs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--verify-only") == 0)
			verify_only = true;
		else
			usage();
	}
	if (argc - i != 1 || nprocs < 1 || nprocs > MAX_PROCS)
		usage();
	dir_path = argv[i];
	dirfd_ = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd_ < 0) {
		fprintf(stderr, "hy-concurrent: %s: %s\n", dir_path, strerror(errno));
		return 2;
	}
	if (!verify_only) {
		do_mkdir("churn", false);
		for (int d = 0; d < 3; d++) {
			char name[32];

			snprintf(name, sizeof(name), "churn/d%d", d);
			do_mkdir(name, false);
		}
		fflush(NULL);
		for (int w = 0; w < nprocs; w++) {
			pids[w] = fork();
			if (pids[w] < 0) {
				fprintf(stderr, "hy-concurrent: fork: %s\n", strerror(errno));
				return 2;
			}
			if (pids[w] == 0) {
				me = w;
				worker();
				_exit(0);
			}
		}
		for (int w = 0; w < nprocs; w++) {
			int status;

			while (waitpid(pids[w], &status, 0) < 0) {
				if (errno != EINTR) {
					fprintf(stderr, "hy-concurrent: waitpid: %s\n",
						strerror(errno));
					return 2;
				}
			}
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				fprintf(stderr, "hy-concurrent: worker %d failed (status %#x)\n", w,
					status);
				failed = true;
			}
		}
		if (failed)
			return 1;
	}
	verify();
	printf("hy-concurrent: %d workers, seed %" PRIu64 ": every file checked in %s\n", nprocs,
	       seed, dir_path);
	return 0;
}
