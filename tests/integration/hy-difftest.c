/*
 * hy-difftest.c - differential random tester for hybridfs.
 *
 *   hy-difftest --seed N --ops COUNT [--check-every K] [--umasks OCT,OCT...]
 *               [--drop-caches K] [--hook-every K --hook PROGRAM] [--wide]
 *               [--verbose] PLAIN MOUNT
 *   hy-difftest --compare [--ignore NAME] A B
 *
 * The first form generates one random sequence of file system operations
 * from a fixed-seed PRNG (splitmix64: the same sequence on every machine)
 * and applies each operation to both directories: PLAIN is an ordinary
 * directory, MOUNT a hybridfs mount of an equivalent (normally empty)
 * directory. The result of every call (return value and errno, and the
 * bytes read) must be the same in both, and every K operations (and at the
 * end) the two trees must be identical: names, types, modes, link counts,
 * sizes of non-directories, symlink targets and file contents. Inode
 * numbers and times are not compared.
 *
 * The name space is small (a few dozen paths over nested directories of
 * the same names), so operations collide often: renames over files and
 * directories, links and unlinks of names other operations hold open,
 * directories turned into files and back. A pool of descriptors (files and
 * directories) is kept across operations, so writes through a descriptor of
 * a file that was renamed or unlinked meanwhile, and *at calls relative to
 * a directory that was renamed or removed, are covered.
 *
 * --hook runs PROGRAM with the operation number as its argument every K
 * operations, between two operations, and waits for it (a failure stops
 * the run): e.g. a reconfiguration of the mount's cache policy.
 *
 * The second form only compares two trees (e.g. the backing directory with
 * the plain one once the mount is gone); --ignore skips one top-level name.
 *
 * Exit status: 0 identical, 1 a difference (the tail of the operation log is
 * printed), 2 usage or setup error.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#ifndef FALLOC_FL_ZERO_RANGE
#define FALLOC_FL_ZERO_RANGE 0x10
#endif

#define MAX_IO	  (256 * 1024)
#define LOG_KEEP  48
#define POOL	  8
#define CMP_CHUNK (64 * 1024)

/* ---- deterministic PRNG (splitmix64) ---------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* Data for a write: a stream that depends on the operation number and the
 * position, so shifted or stale bytes never look right by accident. */
static void fill_data(unsigned char *buf, size_t size, uint64_t seed)
{
	uint64_t s = seed * 0xd1342543de82ef95ULL + 1;

	for (size_t i = 0; i < size; i++) {
		if ((i & 7) == 0) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
		}
		buf[i] = (unsigned char)(s >> ((i & 7) * 8));
	}
}

/* ---- state ---------------------------------------------------------- */

static const char *side_name[2] = {"plain", "mount"};
static const char *root_path[2];
static int root_fd[2] = {-1, -1};
static unsigned long op_no;
static bool verbose;
static unsigned long drop_every;
static char oplog[LOG_KEEP][600];
static char cur_op[600];
static uint64_t seed;
static unsigned long calls_ok, calls_failed;

/* The name space: paths from the root, and leaf names for calls relative
 * to a pooled directory descriptor. The same names at every level make
 * renames into one's own subtree, and directories replacing files, common. */
static const char *const small_paths[] = {
	"a",	   "b",	    "c",     "d",     "e",     "f",	    "g",       "a/a",
	"a/b",	   "a/c",   "a/d",   "a/e",   "b/a",   "b/b",	    "b/c",     "b/d",
	"c/a",	   "c/b",   "c/c",   "d/a",   "a/a/a", "a/a/b",	    "a/a/c",   "a/b/a",
	"a/b/b",   "b/a/a", "b/a/b", "b/b/a", "c/a/a", "a/a/a/a",   "a/a/a/b", "a/b/a/a",
	"b/a/a/a", "c/c/c", "e/f",   "f/e",   "g/g",   "a/a/a/a/a",
};

/* --wide: more folders (5 x 4 x 3 x 2 names over four levels) than the
 * daemon's descriptor cache holds when its open-file limit is low. */
static char wide_store[400][16];
static const char *paths_v[400];
static const char *const *paths = small_paths;
static size_t npaths = sizeof(small_paths) / sizeof(small_paths[0]);
#define NPATHS npaths

static void make_wide(void)
{
	static const char *const lv[] = {"abcde", "abcd", "abc", "ab"};
	size_t n = 0, level_start = 0, level_end;

	for (const char *c = lv[0]; *c; c++)
		snprintf(wide_store[n++], sizeof(wide_store[0]), "%c", *c);
	for (int l = 1; l < 4; l++) {
		level_end = n;
		for (size_t i = level_start; i < level_end; i++)
			for (const char *c = lv[l]; *c; c++)
				snprintf(wide_store[n++], sizeof(wide_store[0]), "%s/%c",
					 wide_store[i], *c);
		level_start = level_end;
	}
	for (size_t i = 0; i < n; i++)
		paths_v[i] = wide_store[i];
	paths = paths_v;
	npaths = n;
}

static const char *const leaves[] = {"a", "b", "c", "d", "x", "y"};
#define NLEAVES (sizeof(leaves) / sizeof(leaves[0]))

/* Symlink targets: relative and never leaving the tree by "..", so both
 * trees resolve them the same way. */
static const char *const targets[] = {
	"a", "b", "c", "a/a", "a/b", "b/a/a", "x", "missing/none", ".", "a/a/a/a", "d",
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

static const mode_t file_modes[] = {0644, 0600, 0666, 0755, 0400, 0000, 0777, 04755, 02755, 0640};
static const mode_t dir_modes[] = {0755, 0700, 0777, 01777, 02755, 0555, 0711};
static const mode_t chmod_modes[] = {0644,  0600,  0755,  0700, 0444, 0000,
				     04755, 02755, 01777, 0640, 0777, 0111};
/* Umasks the process takes before each operation (--umasks). */
static mode_t umasks[8] = {022, 0, 077, 002};
static size_t numasks = 4;

struct slot {
	bool used;
	bool dir;
	int fd[2];
	char desc[240];
};
static struct slot pool[POOL];

static unsigned char *wbuf;
static unsigned char *rbuf[2];

/* ---- reporting ------------------------------------------------------ */

static void log_tail(void)
{
	unsigned long first = op_no >= LOG_KEEP ? op_no - LOG_KEEP + 1 : 1;

	fprintf(stderr, "---- last operations (seed %" PRIu64 ") ----\n", seed);
	for (unsigned long n = first; n <= op_no; n++)
		fprintf(stderr, "  %s\n", oplog[n % LOG_KEEP]);
	fprintf(stderr, "----\n");
}

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hy-difftest: MISMATCH at op %lu (%s): ", op_no, cur_op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (op_no)
		log_tail();
	exit(1);
}

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hy-difftest: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* Records the operation about to run; a call's results are added to it. */
__attribute__((format(printf, 1, 2))) static void op_begin(const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(cur_op, sizeof(cur_op), "#%lu ", op_no);
	va_start(ap, fmt);
	vsnprintf(cur_op + n, sizeof(cur_op) - (size_t)n, fmt, ap);
	va_end(ap);
	snprintf(oplog[op_no % LOG_KEEP], sizeof(oplog[0]), "%s", cur_op);
}

static void op_note(const char *note)
{
	char *line = oplog[op_no % LOG_KEEP];
	size_t len = strlen(line);

	snprintf(line + len, sizeof(oplog[0]) - len, " %s", note);
}

struct res {
	long ret;
	int err;
};

static struct res mkres(long ret)
{
	struct res r = {ret, ret < 0 ? errno : 0};

	return r;
}

static const char *res_str(struct res r, char *buf, size_t size)
{
	if (r.ret < 0)
		snprintf(buf, size, "-1 %s", strerrorname_np(r.err) ? strerrorname_np(r.err) : "?");
	else
		snprintf(buf, size, "%ld", r.ret);
	return buf;
}

/* Both calls must have had the same outcome. */
static void same(const char *what, struct res a, struct res b)
{
	char x[64], y[64];

	if (a.ret != b.ret || a.err != b.err)
		fail("%s: plain %s, mount %s", what, res_str(a, x, sizeof(x)),
		     res_str(b, y, sizeof(y)));
	snprintf(x, sizeof(x), "=%s", res_str(a, y, sizeof(y)));
	op_note(x);
	if (a.ret < 0)
		calls_failed++;
	else
		calls_ok++;
}

/* ---- choosing arguments --------------------------------------------- */

struct loc {
	int slot; /* a pooled directory, or -1 for the root */
	const char *name;
	char desc[200];
};

static int base_fd(int side, const struct loc *l)
{
	return l->slot < 0 ? root_fd[side] : pool[l->slot].fd[side];
}

static int count_dir_slots(void)
{
	int n = 0;

	for (int i = 0; i < POOL; i++)
		n += pool[i].used && pool[i].dir;
	return n;
}

static void pick_any(struct loc *l)
{
	int ndirs = count_dir_slots();

	l->slot = -1;
	if (ndirs && below(5) == 0) {
		int k = (int)below((uint64_t)ndirs);

		for (int i = 0; i < POOL; i++) {
			if (pool[i].used && pool[i].dir && k-- == 0) {
				l->slot = i;
				break;
			}
		}
		l->name = leaves[below(NLEAVES)];
		snprintf(l->desc, sizeof(l->desc), "[%d:%.60s]/%s", l->slot, pool[l->slot].desc,
			 l->name);
	} else {
		l->name = paths[below(NPATHS)];
		snprintf(l->desc, sizeof(l->desc), "%s", l->name);
	}
}

/* What a picked name should be like in the plain tree (whose state is
 * a function of the seed alone, so the choice stays deterministic). */
enum want { ANY, EXISTING, CREATABLE, DIRECTORY, FILE_ };

static bool fits(const struct loc *l, enum want want)
{
	struct stat st;
	char parent[PATH_MAX];
	char *slash;

	if (want == FILE_)
		return fstatat(base_fd(0, l), l->name, &st, 0) == 0 && S_ISREG(st.st_mode);
	if (want == DIRECTORY)
		return fstatat(base_fd(0, l), l->name, &st, 0) == 0 && S_ISDIR(st.st_mode);
	if (fstatat(base_fd(0, l), l->name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return want == EXISTING || below(3) == 0; /* existing: EEXIST, or replaced */
	if (want != CREATABLE)
		return false;
	snprintf(parent, sizeof(parent), "%s", l->name);
	slash = strrchr(parent, '/');
	if (!slash)
		return true;
	*slash = '\0';
	return fstatat(base_fd(0, l), parent, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

/* Mostly a name that makes the call do something; sometimes any name, so
 * the error paths are compared too. */
static void pick_loc(struct loc *l, enum want want)
{
	pick_any(l);
	if (want == ANY || below(5) == 0)
		return;
	for (int tries = 0; tries < 12 && !fits(l, want); tries++)
		pick_any(l);
}

static size_t pick_size(void)
{
	uint64_t r = below(100);

	if (r < 55)
		return 1 + (size_t)below(512);
	if (r < 80)
		return 513 + (size_t)below(16384 - 512);
	if (r < 93)
		return 16385 + (size_t)below(MAX_IO - 16384);
	return MAX_IO - (size_t)below(2);
}

/* An offset; @cur is the plain file's size, so writes land at, just past
 * and far past the end of file too. */
static off_t pick_off(off_t cur)
{
	uint64_t r = below(100);

	if (r < 25)
		return 0;
	if (r < 45)
		return (off_t)below(8192);
	if (r < 60)
		return cur;
	if (r < 75)
		return cur + (off_t)below(70000);
	if (r < 90)
		return (off_t)below(200000);
	return (off_t)below(600000);
}

static off_t pick_len(void)
{
	uint64_t r = below(100);

	if (r < 25)
		return 0;
	if (r < 60)
		return (off_t)below(16384);
	if (r < 85)
		return (off_t)below(300000);
	return (off_t)below(700000);
}

static off_t fd_size(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : 0;
}

static int pick_slot(bool want_dir, bool any)
{
	int idx[POOL], n = 0;

	for (int i = 0; i < POOL; i++)
		if (pool[i].used && (any || pool[i].dir == want_dir))
			idx[n++] = i;
	return n ? idx[below((uint64_t)n)] : -1;
}

static int free_slot(void)
{
	for (int i = 0; i < POOL; i++)
		if (!pool[i].used)
			return i;
	return -1;
}

static void slot_close(int i)
{
	for (int s = 0; s < 2; s++)
		if (pool[i].fd[s] >= 0)
			close(pool[i].fd[s]);
	pool[i].used = false;
	pool[i].fd[0] = pool[i].fd[1] = -1;
}

/* ---- comparing -------------------------------------------------------- */

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	default:
		return "other";
	}
}

/* The attributes that must agree: type and permission bits, link count,
 * and the size of anything but a directory (a directory's size is the
 * backing filesystem's business, and the state folder is in the root). */
static void same_stat(const char *what, const struct stat *a, const struct stat *b)
{
	if (a->st_mode != b->st_mode)
		fail("%s: mode plain %s %04o, mount %s %04o", what, type_name(a->st_mode),
		     (unsigned)(a->st_mode & 07777), type_name(b->st_mode),
		     (unsigned)(b->st_mode & 07777));
	if (a->st_nlink != b->st_nlink)
		fail("%s: link count plain %lu, mount %lu", what, (unsigned long)a->st_nlink,
		     (unsigned long)b->st_nlink);
	if (!S_ISDIR(a->st_mode) && a->st_size != b->st_size)
		fail("%s: size plain %lld, mount %lld", what, (long long)a->st_size,
		     (long long)b->st_size);
}

static void same_bytes(const char *what, const unsigned char *a, const unsigned char *b, size_t n,
		       off_t base)
{
	if (memcmp(a, b, n) == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i]) {
			size_t j = i;

			while (j < n && a[j] != b[j])
				j++;
			fail("%s: contents differ at offset %lld (plain %02x, mount %02x; "
			     "%zu bytes differ from there)",
			     what, (long long)(base + (off_t)i), a[i], b[i], j - i);
		}
	}
}

static int cmp_ignore_count;
static const char *cmp_ignore[4];

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Sorted names of directory @fd (consumed), "." and ".." left out. */
static char **list_dir(int fd, bool top, size_t *count, int *err)
{
	DIR *dp = fdopendir(fd);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*err = 0;
	*count = 0;
	if (!dp) {
		*err = errno;
		close(fd);
		return NULL;
	}
	for (;;) {
		bool skip = false;

		errno = 0;
		de = readdir(dp);
		if (!de) {
			*err = errno;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		for (int i = 0; top && i < cmp_ignore_count; i++)
			skip |= strcmp(de->d_name, cmp_ignore[i]) == 0;
		if (skip)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				die("out of memory");
		}
		names[n] = strdup(de->d_name);
		if (!names[n])
			die("out of memory");
		n++;
	}
	closedir(dp);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	*count = n;
	return names;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void cmp_file(const char *rel, int dfd0, int dfd1, const char *name, off_t size)
{
	int fd0 = openat(dfd0, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int fd1 = openat(dfd1, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	off_t off = 0;

	if (fd0 < 0 || fd1 < 0) {
		int e0 = fd0 < 0 ? errno : 0;

		fail("%s: open for comparing: plain %s, mount %s", rel,
		     fd0 < 0 ? strerror(e0) : "ok", fd1 < 0 ? strerror(errno) : "ok");
	}
	for (;;) {
		ssize_t n0 = pread(fd0, rbuf[0], CMP_CHUNK, off);
		ssize_t n1 = pread(fd1, rbuf[1], CMP_CHUNK, off);

		if (n0 < 0 || n1 < 0 || n0 != n1)
			fail("%s: reading at %lld for comparing: plain %zd, mount %zd", rel,
			     (long long)off, n0, n1);
		if (n0 == 0)
			break;
		same_bytes(rel, rbuf[0], rbuf[1], (size_t)n0, off);
		off += n0;
	}
	if (off != size)
		fail("%s: read %lld bytes, size says %lld", rel, (long long)off, (long long)size);
	close(fd0);
	close(fd1);
}

/* Compares directory @rel (open as @dfd0, @dfd1, both consumed). */
static void cmp_dir(const char *rel, int dfd0, int dfd1, bool top)
{
	int l0 = dup(dfd0), l1 = dup(dfd1), e0, e1;
	size_t n0, n1;
	char **names0, **names1;

	if (l0 < 0 || l1 < 0)
		die("dup: %s", strerror(errno));
	names0 = list_dir(l0, top, &n0, &e0);
	names1 = list_dir(l1, top, &n1, &e1);
	if (e0 || e1)
		fail("%s: readdir: plain %s, mount %s", rel, strerror(e0), strerror(e1));
	for (size_t i = 0; i < n0 || i < n1; i++) {
		if (i >= n0 || i >= n1 || strcmp(names0[i], names1[i]) != 0)
			fail("%s/: entry %zu is \"%s\" in plain, \"%s\" in mount", rel, i,
			     i < n0 ? names0[i] : "(none)", i < n1 ? names1[i] : "(none)");
	}
	for (size_t i = 0; i < n0; i++) {
		const char *name = names0[i];
		char sub[PATH_MAX];
		struct stat st0, st1;

		snprintf(sub, sizeof(sub), "%s/%s", rel, name);
		if (fstatat(dfd0, name, &st0, AT_SYMLINK_NOFOLLOW) < 0)
			fail("%s: lstat in plain: %s", sub, strerror(errno));
		if (fstatat(dfd1, name, &st1, AT_SYMLINK_NOFOLLOW) < 0)
			fail("%s: lstat in mount: %s", sub, strerror(errno));
		same_stat(sub, &st0, &st1);
		if (S_ISREG(st0.st_mode)) {
			cmp_file(sub, dfd0, dfd1, name, st0.st_size);
		} else if (S_ISLNK(st0.st_mode)) {
			char t0[PATH_MAX], t1[PATH_MAX];
			ssize_t k0 = readlinkat(dfd0, name, t0, sizeof(t0) - 1);
			ssize_t k1 = readlinkat(dfd1, name, t1, sizeof(t1) - 1);

			if (k0 < 0 || k1 < 0 || k0 != k1 || memcmp(t0, t1, (size_t)k0) != 0) {
				t0[k0 < 0 ? 0 : k0] = '\0';
				t1[k1 < 0 ? 0 : k1] = '\0';
				fail("%s: symlink target plain \"%s\", mount \"%s\"", sub, t0, t1);
			}
		} else if (S_ISDIR(st0.st_mode)) {
			int c0 =
				openat(dfd0, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int c1 =
				openat(dfd1, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (c0 < 0 || c1 < 0)
				fail("%s: opening the directory: plain %s, mount %s", sub,
				     c0 < 0 ? "failed" : "ok", c1 < 0 ? strerror(errno) : "ok");
			cmp_dir(sub, c0, c1, false);
		}
	}
	free_names(names0, n0);
	free_names(names1, n1);
	close(dfd0);
	close(dfd1);
}

static void cmp_trees(void)
{
	int d0 = openat(root_fd[0], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int d1 = openat(root_fd[1], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st0, st1;

	if (d0 < 0 || d1 < 0)
		die("opening the roots: %s", strerror(errno));
	if (fstat(d0, &st0) < 0 || fstat(d1, &st1) < 0)
		die("stat of the roots: %s", strerror(errno));
	/* The mount hides its state folder, link included; a backing directory
	 * compared after unmount (--ignore .hybridfs) still holds it. */
	if (cmp_ignore_count == 0 && st0.st_nlink != st1.st_nlink)
		fail("/: link count plain %lu, mount %lu", (unsigned long)st0.st_nlink,
		     (unsigned long)st1.st_nlink);
	if ((st0.st_mode & 07777) != (st1.st_mode & 07777))
		fail("/: mode plain %04o, mount %04o", (unsigned)(st0.st_mode & 07777),
		     (unsigned)(st1.st_mode & 07777));
	cmp_dir("", d0, d1, true);
}

/* ---- operations ------------------------------------------------------- */

static void op_create(void)
{
	static const int extra[] = {0, O_EXCL, O_TRUNC, O_EXCL | O_TRUNC, O_APPEND};
	struct loc l;
	int flags = O_CREAT | O_CLOEXEC | extra[below(5)];
	mode_t mode = file_modes[below(sizeof(file_modes) / sizeof(file_modes[0]))];
	struct res r[2];

	flags |= below(2) ? O_WRONLY : O_RDWR;
	pick_loc(&l, CREATABLE);
	op_begin("create %s flags %#o mode %04o", l.desc, (unsigned)flags, (unsigned)mode);
	for (int s = 0; s < 2; s++) {
		int fd = openat(base_fd(s, &l), l.name, flags, mode);

		r[s] = mkres(fd < 0 ? -1 : 0);
		if (fd >= 0)
			close(fd);
	}
	same("open", r[0], r[1]);
}

static void op_mkdir(void)
{
	struct loc l;
	mode_t mode = dir_modes[below(sizeof(dir_modes) / sizeof(dir_modes[0]))];
	struct res r[2];

	pick_loc(&l, CREATABLE);
	op_begin("mkdir %s mode %04o", l.desc, (unsigned)mode);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(mkdirat(base_fd(s, &l), l.name, mode));
	same("mkdir", r[0], r[1]);
}

static void op_rmdir(void)
{
	struct loc l;
	struct res r[2];

	pick_loc(&l, EXISTING);
	op_begin("rmdir %s", l.desc);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(unlinkat(base_fd(s, &l), l.name, AT_REMOVEDIR));
	same("rmdir", r[0], r[1]);
}

static void op_unlink(void)
{
	struct loc l;
	struct res r[2];

	pick_loc(&l, EXISTING);
	op_begin("unlink %s", l.desc);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(unlinkat(base_fd(s, &l), l.name, 0));
	same("unlink", r[0], r[1]);
}

static void op_symlink(void)
{
	struct loc l;
	const char *target = targets[below(NTARGETS)];
	struct res r[2];

	pick_loc(&l, CREATABLE);
	op_begin("symlink %s -> \"%s\"", l.desc, target);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(symlinkat(target, base_fd(s, &l), l.name));
	same("symlink", r[0], r[1]);
}

static void op_link(void)
{
	struct loc a, b;
	int flags = below(4) == 0 ? AT_SYMLINK_FOLLOW : 0;
	struct res r[2];

	pick_loc(&a, EXISTING);
	pick_loc(&b, CREATABLE);
	op_begin("link %s %s%s", a.desc, b.desc, flags ? " follow" : "");
	for (int s = 0; s < 2; s++)
		r[s] = mkres(linkat(base_fd(s, &a), a.name, base_fd(s, &b), b.name, flags));
	same("link", r[0], r[1]);
}

static void op_rename(void)
{
	struct loc a, b;
	uint64_t k = below(10);
	unsigned flags = k < 6 ? 0 : k < 8 ? RENAME_NOREPLACE : RENAME_EXCHANGE;
	struct res r[2];

	pick_loc(&a, EXISTING);
	pick_loc(&b, flags == RENAME_EXCHANGE ? EXISTING : CREATABLE);
	op_begin("rename %s %s%s", a.desc, b.desc,
		 flags == RENAME_NOREPLACE  ? " noreplace"
		 : flags == RENAME_EXCHANGE ? " exchange"
					    : "");
	for (int s = 0; s < 2; s++)
		r[s] = mkres(syscall(SYS_renameat2, base_fd(s, &a), a.name, base_fd(s, &b), b.name,
				     flags));
	same("rename", r[0], r[1]);
}

static void op_chmod(void)
{
	struct loc l;
	mode_t mode = chmod_modes[below(sizeof(chmod_modes) / sizeof(chmod_modes[0]))];
	struct res r[2];

	pick_loc(&l, EXISTING);
	op_begin("chmod %s %04o", l.desc, (unsigned)mode);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(fchmodat(base_fd(s, &l), l.name, mode, 0));
	same("chmod", r[0], r[1]);
}

static void op_truncate(void)
{
	struct loc l;
	off_t len = pick_len();
	struct res r[2];

	pick_loc(&l, FILE_);
	op_begin("truncate %s %lld", l.desc, (long long)len);
	for (int s = 0; s < 2; s++) {
		/* truncate(2) has no *at form: open for writing, as it would */
		int fd = openat(base_fd(s, &l), l.name, O_WRONLY | O_CLOEXEC);

		if (fd < 0) {
			r[s] = mkres(-1);
			continue;
		}
		r[s] = mkres(ftruncate(fd, len));
		close(fd);
	}
	same("truncate", r[0], r[1]);
}

static void op_write(void)
{
	static const int extra[] = {0, 0, 0, O_APPEND, O_TRUNC, O_CREAT};
	struct loc l;
	int flags = O_CLOEXEC | extra[below(6)] | (below(3) ? O_WRONLY : O_RDWR);
	size_t size = pick_size();
	off_t off = 0;
	int fd[2];
	struct res r[2];

	pick_loc(&l, FILE_);
	fill_data(wbuf, size, seed ^ ((uint64_t)op_no << 20));
	op_begin("write %s flags %#o size %zu", l.desc, (unsigned)flags, size);
	for (int s = 0; s < 2; s++) {
		fd[s] = openat(base_fd(s, &l), l.name, flags, 0644);
		r[s] = mkres(fd[s] < 0 ? -1 : 0);
	}
	if (r[0].ret != r[1].ret)
		close(fd[0] >= 0 ? fd[0] : fd[1]);
	same("open", r[0], r[1]);
	if (fd[0] < 0)
		return;
	off = pick_off(fd_size(fd[0]));
	{
		char note[48];

		snprintf(note, sizeof(note), "off %lld", (long long)off);
		op_note(note);
	}
	for (int s = 0; s < 2; s++) {
		if (flags & O_APPEND)
			r[s] = mkres(write(fd[s], wbuf, size));
		else
			r[s] = mkres(pwrite(fd[s], wbuf, size, off));
		close(fd[s]);
	}
	same("write", r[0], r[1]);
}

static void read_both(const char *what, int fd0, int fd1, size_t size, off_t off)
{
	struct res r[2];

	r[0] = mkres(pread(fd0, rbuf[0], size, off));
	r[1] = mkres(pread(fd1, rbuf[1], size, off));
	same(what, r[0], r[1]);
	if (r[0].ret > 0)
		same_bytes(what, rbuf[0], rbuf[1], (size_t)r[0].ret, off);
}

static void op_read(void)
{
	struct loc l;
	size_t size = pick_size();
	off_t off;
	int fd[2];
	struct res r[2];

	pick_loc(&l, FILE_);
	off = below(3) ? (off_t)below(8192) : (off_t)below(700000);
	op_begin("read %s off %lld size %zu", l.desc, (long long)off, size);
	for (int s = 0; s < 2; s++) {
		fd[s] = openat(base_fd(s, &l), l.name, O_RDONLY | O_CLOEXEC);
		r[s] = mkres(fd[s] < 0 ? -1 : 0);
	}
	same("open", r[0], r[1]);
	if (fd[0] < 0)
		return;
	read_both("pread", fd[0], fd[1], size, off);
	close(fd[0]);
	close(fd[1]);
}

static void op_fsync(void)
{
	struct loc l;
	bool data = below(2);
	int fd[2];
	struct res r[2];

	pick_loc(&l, EXISTING);
	op_begin("%s %s", data ? "fdatasync" : "fsync", l.desc);
	for (int s = 0; s < 2; s++) {
		fd[s] = openat(base_fd(s, &l), l.name, O_RDONLY | O_CLOEXEC);
		r[s] = mkres(fd[s] < 0 ? -1 : 0);
	}
	same("open", r[0], r[1]);
	if (fd[0] < 0)
		return;
	for (int s = 0; s < 2; s++) {
		r[s] = mkres(data ? fdatasync(fd[s]) : fsync(fd[s]));
		close(fd[s]);
	}
	same("fsync", r[0], r[1]);
}

static void op_stat(void)
{
	struct loc l;
	int flags = below(2) ? AT_SYMLINK_NOFOLLOW : 0;
	struct stat st[2];
	struct res r[2];

	pick_loc(&l, EXISTING);
	op_begin("%s %s", flags ? "lstat" : "stat", l.desc);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(fstatat(base_fd(s, &l), l.name, &st[s], flags));
	same("stat", r[0], r[1]);
	if (r[0].ret == 0)
		same_stat(l.desc, &st[0], &st[1]);
}

static void op_readlink(void)
{
	struct loc l;
	char t[2][PATH_MAX];
	struct res r[2];

	pick_loc(&l, EXISTING);
	op_begin("readlink %s", l.desc);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(readlinkat(base_fd(s, &l), l.name, t[s], sizeof(t[s])));
	same("readlink", r[0], r[1]);
	if (r[0].ret > 0 && memcmp(t[0], t[1], (size_t)r[0].ret) != 0)
		fail("readlink: targets differ");
}

/* Opens a file or directory into the pool. */
static void op_pool_open(void)
{
	static const int file_flags[] = {
		O_RDWR,		  O_RDWR,	   O_WRONLY, O_RDONLY, O_RDWR | O_APPEND,
		O_RDWR | O_CREAT, O_RDWR | O_TRUNC};
	int i = free_slot();
	bool dir = below(3) == 0;
	int flags;
	struct loc l;
	struct res r[2];

	if (i < 0) {
		i = (int)below(POOL);
		slot_close(i);
	}
	pick_loc(&l, dir ? DIRECTORY : FILE_);
	flags = (dir ? O_RDONLY | O_DIRECTORY : file_flags[below(7)]) | O_CLOEXEC;
	op_begin("pool[%d] = open %s flags %#o", i, l.desc, (unsigned)flags);
	for (int s = 0; s < 2; s++) {
		pool[i].fd[s] = openat(base_fd(s, &l), l.name, flags, 0600);
		r[s] = mkres(pool[i].fd[s] < 0 ? -1 : 0);
	}
	if (r[0].ret != r[1].ret)
		slot_close(i);
	same("open", r[0], r[1]);
	if (r[0].ret < 0)
		return;
	pool[i].used = true;
	pool[i].dir = dir;
	snprintf(pool[i].desc, sizeof(pool[i].desc), "%s", l.desc);
}

static void op_pool_close(void)
{
	int i = pick_slot(false, true);

	if (i < 0)
		return op_pool_open();
	op_begin("close pool[%d] (%s)", i, pool[i].desc);
	slot_close(i);
}

static void op_pool_write(void)
{
	int i = pick_slot(false, false);
	size_t size = pick_size();
	off_t off;
	struct res r[2];

	if (i < 0)
		return op_pool_open();
	off = pick_off(fd_size(pool[i].fd[0]));
	fill_data(wbuf, size, seed ^ ((uint64_t)op_no << 20));
	op_begin("pwrite pool[%d] (%s) off %lld size %zu", i, pool[i].desc, (long long)off, size);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(pwrite(pool[i].fd[s], wbuf, size, off));
	same("pwrite", r[0], r[1]);
}

static void op_pool_read(void)
{
	int i = pick_slot(false, false);
	size_t size = pick_size();
	off_t off;

	if (i < 0)
		return op_pool_open();
	off = below(2) ? (off_t)below(8192) : (off_t)below((uint64_t)fd_size(pool[i].fd[0]) + 4096);
	op_begin("pread pool[%d] (%s) off %lld size %zu", i, pool[i].desc, (long long)off, size);
	read_both("pread", pool[i].fd[0], pool[i].fd[1], size, off);
}

static void op_pool_truncate(void)
{
	int i = pick_slot(false, false);
	off_t len = pick_len();
	struct res r[2];

	if (i < 0)
		return op_pool_open();
	op_begin("ftruncate pool[%d] (%s) %lld", i, pool[i].desc, (long long)len);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(ftruncate(pool[i].fd[s], len));
	same("ftruncate", r[0], r[1]);
}

static void op_pool_fstat(void)
{
	int i = pick_slot(false, true);
	struct stat st[2];
	struct res r[2];

	if (i < 0)
		return op_pool_open();
	op_begin("fstat pool[%d] (%s)", i, pool[i].desc);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(fstat(pool[i].fd[s], &st[s]));
	same("fstat", r[0], r[1]);
	if (r[0].ret == 0)
		same_stat(pool[i].desc, &st[0], &st[1]);
}

static void op_pool_fsync(void)
{
	int i = pick_slot(false, true);
	struct res r[2];

	if (i < 0)
		return op_pool_open();
	op_begin("fsync pool[%d] (%s)", i, pool[i].desc);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(fsync(pool[i].fd[s]));
	same("fsync", r[0], r[1]);
}

static void op_pool_fchmod(void)
{
	int i = pick_slot(false, true);
	mode_t mode = chmod_modes[below(sizeof(chmod_modes) / sizeof(chmod_modes[0]))];
	struct res r[2];

	if (i < 0)
		return op_pool_open();
	op_begin("fchmod pool[%d] (%s) %04o", i, pool[i].desc, (unsigned)mode);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(fchmod(pool[i].fd[s], mode));
	same("fchmod", r[0], r[1]);
}

static void op_pool_fallocate(void)
{
	static const int modes[] = {
		0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		FALLOC_FL_ZERO_RANGE, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE};
	int i = pick_slot(false, false);
	int mode = modes[below(sizeof(modes) / sizeof(modes[0]))];
	off_t off = (off_t)below(300000), len = 1 + (off_t)below(100000);
	struct res r[2];

	/* collapse and insert are left out: FUSE refuses them (EOPNOTSUPP)
	 * before the daemon sees them */
	if (i < 0)
		return op_pool_open();
	op_begin("fallocate pool[%d] (%s) mode %d off %lld len %lld", i, pool[i].desc, mode,
		 (long long)off, (long long)len);
	for (int s = 0; s < 2; s++)
		r[s] = mkres(fallocate(pool[i].fd[s], mode, off, len));
	same("fallocate", r[0], r[1]);
}

static void op_pool_copy(void)
{
	int a = pick_slot(false, false), b = pick_slot(false, false);
	size_t len = pick_size();
	loff_t in, out, oin, oout;
	struct res r[2];

	if (a < 0 || b < 0)
		return op_pool_open();
	oin = (loff_t)below((uint64_t)fd_size(pool[a].fd[0]) + 1);
	oout = pick_off(fd_size(pool[b].fd[0]));
	op_begin("copy_file_range pool[%d] (%s) %lld -> pool[%d] (%s) %lld len %zu", a,
		 pool[a].desc, (long long)oin, b, pool[b].desc, (long long)oout, len);
	for (int s = 0; s < 2; s++) {
		in = oin;
		out = oout;
		r[s] = mkres(copy_file_range(pool[a].fd[s], &in, pool[b].fd[s], &out, len, 0));
	}
	same("copy_file_range", r[0], r[1]);
}

/* Writes a range of a pooled file through a shared mapping (within the
 * file's size), then reads it back by pread. */
static void op_pool_mmap(void)
{
	int i = pick_slot(false, false);
	off_t size, off;
	size_t len;
	bool sync = below(2);
	struct res r[2];

	if (i < 0)
		return op_pool_open();
	size = fd_size(pool[i].fd[0]);
	if (size < 2)
		return op_pool_write();
	off = (off_t)below((uint64_t)size - 1) & ~(off_t)4095;
	len = 1 + (size_t)below((uint64_t)(size - off) < 65536 ? (uint64_t)(size - off) : 65536);
	fill_data(wbuf, len, seed ^ ((uint64_t)op_no << 20));
	op_begin("mmap pool[%d] (%s) off %lld len %zu", i, pool[i].desc, (long long)off, len);
	for (int s = 0; s < 2; s++) {
		unsigned char *map =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, pool[i].fd[s], off);

		if (map == MAP_FAILED) {
			r[s] = mkres(-1);
			continue;
		}
		memcpy(map, wbuf, len);
		r[s] = mkres(sync ? msync(map, len, MS_SYNC) : 0);
		munmap(map, len);
	}
	same("mmap", r[0], r[1]);
	if (r[0].ret == 0)
		read_both("pread after mmap", pool[i].fd[0], pool[i].fd[1], len + 100, off);
}

/* A pooled file reopened with O_DIRECT (through /proc/self/fd, so also
 * a file renamed or unlinked meanwhile): an aligned pwrite or pread that
 * no page cache stands in front of, then the descriptor closed. */
static void op_pool_direct(void)
{
	static unsigned char *dbuf[2];
	int i = pick_slot(false, false), fd[2] = {-1, -1};
	bool write = below(2);
	off_t off;
	size_t len;
	struct res r[2];

	if (i < 0)
		return op_pool_open();
	for (int s = 0; s < 2 && !dbuf[s]; s++)
		if (posix_memalign((void **)&dbuf[s], 4096, 16 * 4096) != 0)
			die("out of memory");
	off = (off_t)below((uint64_t)fd_size(pool[i].fd[0]) / 4096 + 2) * 4096;
	len = 4096 * (size_t)(1 + below(16));
	op_begin("O_DIRECT %s pool[%d] (%s) off %lld len %zu", write ? "pwrite" : "pread", i,
		 pool[i].desc, (long long)off, len);
	for (int s = 0; s < 2; s++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", pool[i].fd[s]);
		fd[s] = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
		r[s] = mkres(fd[s] < 0 ? -1 : 0);
	}
	same("open O_DIRECT", r[0], r[1]);
	if (fd[0] >= 0 && fd[1] >= 0) {
		if (write) {
			fill_data(dbuf[0], len, seed ^ ((uint64_t)op_no << 20) ^ 0xd1);
			memcpy(dbuf[1], dbuf[0], len);
		}
		for (int s = 0; s < 2; s++)
			r[s] = mkres(write ? pwrite(fd[s], dbuf[s], len, off)
					   : pread(fd[s], dbuf[s], len, off));
		same(write ? "O_DIRECT pwrite" : "O_DIRECT pread", r[0], r[1]);
		if (!write && r[0].ret > 0 && r[0].ret == r[1].ret)
			same_bytes("O_DIRECT pread", dbuf[0], dbuf[1], (size_t)r[0].ret, off);
	}
	for (int s = 0; s < 2; s++)
		if (fd[s] >= 0)
			close(fd[s]);
	if (write && r[0].ret > 0)
		read_both("pread after O_DIRECT pwrite", pool[i].fd[0], pool[i].fd[1], len + 100,
			  off);
}

/* A name held open, unlinked (or renamed over), then written through. */
static void op_orphan(void)
{
	int i = free_slot();
	struct loc l;
	struct res r[2];
	size_t size = pick_size();
	off_t off = pick_off(0);
	bool by_rename = below(3) == 0;
	const char *over = paths[below(NPATHS)];

	if (i < 0) {
		i = (int)below(POOL);
		slot_close(i);
	}
	pick_loc(&l, CREATABLE);
	op_begin("orphan pool[%d] = open %s creat, %s, pwrite off %lld size %zu", i, l.desc,
		 by_rename ? "rename over it" : "unlink", (long long)off, size);
	for (int s = 0; s < 2; s++) {
		pool[i].fd[s] = openat(base_fd(s, &l), l.name, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		r[s] = mkres(pool[i].fd[s] < 0 ? -1 : 0);
	}
	if (r[0].ret != r[1].ret)
		slot_close(i);
	same("open", r[0], r[1]);
	if (r[0].ret < 0)
		return;
	pool[i].used = true;
	pool[i].dir = false;
	snprintf(pool[i].desc, sizeof(pool[i].desc), "orphan %s", l.desc);
	for (int s = 0; s < 2; s++) {
		if (by_rename)
			r[s] = mkres(renameat(root_fd[s], over, base_fd(s, &l), l.name));
		else
			r[s] = mkres(unlinkat(base_fd(s, &l), l.name, 0));
	}
	same(by_rename ? "rename" : "unlink", r[0], r[1]);
	fill_data(wbuf, size, seed ^ ((uint64_t)op_no << 20));
	for (int s = 0; s < 2; s++)
		r[s] = mkres(pwrite(pool[i].fd[s], wbuf, size, off));
	same("pwrite", r[0], r[1]);
	read_both("pread back", pool[i].fd[0], pool[i].fd[1], size + 100, off > 50 ? off - 50 : 0);
}

static void op_readdir(void)
{
	struct loc l;
	int fd[2], e[2];
	size_t n[2];
	char **names[2];
	struct res r[2];

	pick_loc(&l, DIRECTORY);
	op_begin("readdir %s", l.desc);
	for (int s = 0; s < 2; s++) {
		fd[s] = openat(base_fd(s, &l), l.name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r[s] = mkres(fd[s] < 0 ? -1 : 0);
	}
	same("opendir", r[0], r[1]);
	if (fd[0] < 0)
		return;
	for (int s = 0; s < 2; s++)
		names[s] = list_dir(fd[s], false, &n[s], &e[s]);
	if (e[0] != e[1] || n[0] != n[1])
		fail("readdir: plain %zu entries (%s), mount %zu (%s)", n[0], strerror(e[0]), n[1],
		     strerror(e[1]));
	for (size_t k = 0; k < n[0]; k++)
		if (strcmp(names[0][k], names[1][k]) != 0)
			fail("readdir: entry \"%s\" vs \"%s\"", names[0][k], names[1][k]);
	free_names(names[0], n[0]);
	free_names(names[1], n[1]);
}

struct op_kind {
	void (*run)(void);
	unsigned weight;
};

static const struct op_kind kinds[] = {
	{op_create, 8},	    {op_write, 12},	 {op_read, 5},		 {op_truncate, 5},
	{op_rename, 12},    {op_link, 5},	 {op_unlink, 6},	 {op_mkdir, 8},
	{op_rmdir, 4},	    {op_symlink, 4},	 {op_chmod, 3},		 {op_fsync, 2},
	{op_stat, 4},	    {op_readlink, 1},	 {op_pool_open, 6},	 {op_pool_close, 3},
	{op_pool_write, 8}, {op_pool_read, 4},	 {op_pool_truncate, 2},	 {op_pool_fstat, 3},
	{op_pool_fsync, 1}, {op_pool_fchmod, 1}, {op_pool_fallocate, 2}, {op_pool_copy, 2},
	{op_orphan, 3},	    {op_pool_mmap, 2},	 {op_readdir, 2},	 {op_pool_direct, 2},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static void run_one(void)
{
	unsigned total = 0, k;
	uint64_t r;

	for (k = 0; k < NKINDS; k++)
		total += kinds[k].weight;
	umask(umasks[below(numasks)]);
	r = below(total);
	for (k = 0; r >= kinds[k].weight; k++)
		r -= kinds[k].weight;
	snprintf(cur_op, sizeof(cur_op), "#%lu (no-op)", op_no);
	snprintf(oplog[op_no % LOG_KEEP], sizeof(oplog[0]), "%s", cur_op);
	kinds[k].run();
}

/* Makes the kernel forget unused dentries and inodes (root only), so the
 * daemon gets FORGET requests and has to find inodes again by name. */
static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (write(fd, "2", 1) < 0)
		drop_every = 0;
	close(fd);
}

/* Runs @program OPNO and waits; its failure ends the run. */
static void run_hook(const char *program)
{
	char arg[32];
	int status;
	pid_t pid;

	snprintf(arg, sizeof(arg), "%lu", op_no);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork for the hook: %s", strerror(errno));
	if (pid == 0) {
		execl(program, program, arg, (char *)NULL);
		fprintf(stderr, "hy-difftest: %s: %s\n", program, strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		die("waiting for the hook: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("the hook %s %s failed (status %d)", program, arg, status);
}

/* ---- main ----------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: hy-difftest --seed N --ops COUNT [--check-every K] [--umasks OCT,OCT...]\n"
		"                   [--drop-caches K] [--hook-every K --hook PROGRAM] [--wide]\n"
		"                   [--verbose] PLAIN MOUNT\n"
		"       hy-difftest --compare [--ignore NAME] A B\n");
	exit(2);
}

static int open_root(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	return fd;
}

static bool dir_is_empty(int fd)
{
	size_t n;
	int err;
	char **names = list_dir(dup(fd), true, &n, &err);

	free_names(names, n);
	return n == 0;
}

int main(int argc, char **argv)
{
	unsigned long ops = 0, check_every = 0, hook_every = 0;
	bool compare_only = false, have_seed = false;
	const char *hook = NULL;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--seed") == 0 && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
			have_seed = true;
		} else if (strcmp(a, "--ops") == 0 && i + 1 < argc) {
			ops = strtoul(argv[++i], NULL, 0);
		} else if (strcmp(a, "--check-every") == 0 && i + 1 < argc) {
			check_every = strtoul(argv[++i], NULL, 0);
		} else if (strcmp(a, "--umasks") == 0 && i + 1 < argc) {
			char *p = argv[++i], *end;

			for (numasks = 0; *p && numasks < 8; p = *end ? end + 1 : end) {
				umasks[numasks++] = (mode_t)strtoul(p, &end, 8);
				if (end == p)
					usage();
			}
			if (!numasks)
				usage();
		} else if (strcmp(a, "--drop-caches") == 0 && i + 1 < argc) {
			drop_every = strtoul(argv[++i], NULL, 0);
		} else if (strcmp(a, "--hook-every") == 0 && i + 1 < argc) {
			hook_every = strtoul(argv[++i], NULL, 0);
		} else if (strcmp(a, "--hook") == 0 && i + 1 < argc) {
			hook = argv[++i];
		} else if (strcmp(a, "--wide") == 0) {
			make_wide();
		} else if (strcmp(a, "--verbose") == 0) {
			verbose = true;
		} else if (strcmp(a, "--compare") == 0) {
			compare_only = true;
		} else if (strcmp(a, "--ignore") == 0 && i + 1 < argc) {
			if (cmp_ignore_count == 4)
				usage();
			cmp_ignore[cmp_ignore_count++] = argv[++i];
		} else {
			usage();
		}
	}
	if (argc - i != 2 || (!compare_only && (!have_seed || !ops)) || (!hook != !hook_every))
		usage();
	root_path[0] = argv[i];
	root_path[1] = argv[i + 1];
	root_fd[0] = open_root(root_path[0]);
	root_fd[1] = open_root(root_path[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	rbuf[0] = malloc(MAX_IO + CMP_CHUNK + 4096);
	rbuf[1] = malloc(MAX_IO + CMP_CHUNK + 4096);
	wbuf = malloc(MAX_IO);
	if (!rbuf[0] || !rbuf[1] || !wbuf)
		die("out of memory");

	if (compare_only) {
		snprintf(cur_op, sizeof(cur_op), "compare %s %s", root_path[0], root_path[1]);
		side_name[1] = root_path[1];
		cmp_trees();
		return 0;
	}
	if (!dir_is_empty(root_fd[0]) || !dir_is_empty(root_fd[1]))
		die("both directories must start empty");
	if (!check_every)
		check_every = ops <= 500 ? 1 : 10;
	for (int s = 0; s < POOL; s++)
		pool[s].fd[0] = pool[s].fd[1] = -1;
	rng_state = seed;
	for (op_no = 1; op_no <= ops; op_no++) {
		run_one();
		if (verbose)
			printf("%s\n", oplog[op_no % LOG_KEEP]);
		if (op_no % check_every == 0 || op_no == ops)
			cmp_trees();
		if (drop_every && op_no % drop_every == 0)
			drop_caches();
		if (hook && op_no % hook_every == 0)
			run_hook(hook);
	}
	op_no = ops;
	/* The descriptors are closed, and the trees compared once more. */
	for (int s = 0; s < POOL; s++)
		if (pool[s].used)
			slot_close(s);
	snprintf(cur_op, sizeof(cur_op), "final comparison");
	cmp_trees();
	printf("hy-difftest: seed %" PRIu64 ", %lu operations (%lu calls succeeded, %lu failed "
	       "alike): %s and %s agree\n",
	       seed, ops, calls_ok, calls_failed, side_name[0], side_name[1]);
	return 0;
}
