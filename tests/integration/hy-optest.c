/*
 * hy-optest.c - runs a fixed list of single-user POSIX operations inside a
 * directory and prints what each one did, one line per step:
 *
 *     <step-name> <result> [attribute=value ...]
 *
 * where <result> is the return value, "ok", or errno=<NAME>. ops.sh runs it
 * once on a plain directory and once inside a hybridfs mount and diffs the
 * two outputs: any difference is the mount not behaving like the directory.
 *
 * So only what must be equal on both sides is printed: types, modes, link
 * counts, sizes, data checksums, times that were set explicitly. Inode
 * numbers, device numbers and "now" times legitimately differ; they are
 * compared within one run ("same"/"changed", "recent") instead.
 *
 * Usage: hy-optest ROOT          run every scenario inside ROOT (empty)
 *        hy-optest --lstat PATH  print lstat's result for PATH (ops.sh uses
 *                                it to check that the state folder is hidden)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* ---- printing ---------------------------------------------------------- */

static const char *errname(int e)
{
	const char *name = strerrorname_np(e);

	return name ? name : "UNKNOWN";
}

/* One output line: the step name, then the formatted rest. */
__attribute__((format(printf, 2, 3))) static void say(const char *step, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", step);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Prints a call's return value, or errno=NAME when it failed. Call it right
 * after the system call, before anything can change errno. */
static long res(const char *step, long rc)
{
	if (rc < 0)
		say(step, "errno=%s", errname(errno));
	else
		say(step, "%ld", rc);
	return rc;
}

/* As res(), for calls whose non-negative value differs between runs
 * (descriptors): prints "ok". */
static long res_ok(const char *step, long rc)
{
	if (rc < 0)
		say(step, "errno=%s", errname(errno));
	else
		say(step, "ok");
	return rc;
}

static const char *type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "reg";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "lnk";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "sock";
	case S_IFCHR:
		return "chr";
	case S_IFBLK:
		return "blk";
	default:
		return "?";
	}
}

/* The attributes that must match. A directory's size depends on the
 * history of its blocks, not on what the mount did, so it is left out. */
static void say_stat(const char *step, const struct stat *st)
{
	char size[32] = "", rdev[40] = "";

	if (!S_ISDIR(st->st_mode))
		snprintf(size, sizeof(size), " size=%lld", (long long)st->st_size);
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		snprintf(rdev, sizeof(rdev), " rdev=%u:%u", major(st->st_rdev), minor(st->st_rdev));
	say(step, "type=%s mode=%04o nlink=%lu%s%s uid=%s gid=%s", type_name(st->st_mode),
	    (unsigned)(st->st_mode & 07777), (unsigned long)st->st_nlink, size, rdev,
	    st->st_uid == getuid() ? "self" : "other", st->st_gid == getgid() ? "self" : "other");
}

static void show_lstat(const char *step, const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		say(step, "errno=%s", errname(errno));
	else
		say_stat(step, &st);
}

static void show_fstat(const char *step, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		say(step, "errno=%s", errname(errno));
	else
		say_stat(step, &st);
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_START 0xcbf29ce484222325ULL

/* Reads the whole file through @fd (from offset 0, to end of file) and
 * prints its length and checksum, and the text itself when it is short. */
static void show_data_fd(const char *step, int fd)
{
	static char buf[65536];
	char text[65] = "";
	uint64_t h = FNV_START;
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		if (off == 0 && n < 64) {
			memcpy(text, buf, (size_t)n);
			text[n] = '\0';
			for (ssize_t i = 0; i < n; i++)
				if (text[i] < 32 || text[i] > 126)
					text[i] = '.';
		}
		h = fnv1a(h, buf, (size_t)n);
		off += n;
	}
	if (n < 0)
		say(step, "errno=%s", errname(errno));
	else if (off < 64)
		say(step, "len=%lld data=\"%s\"", (long long)off, text);
	else
		say(step, "len=%lld fnv=%016llx", (long long)off, (unsigned long long)h);
}

static void show_data(const char *step, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		say(step, "errno=%s", errname(errno));
		return;
	}
	show_data_fd(step, fd);
	close(fd);
}

/* Whether [off, off+len) of @fd reads as zeros (short reads past EOF are
 * reported as such). */
static void show_zeros(const char *step, int fd, off_t off, size_t len)
{
	char buf[4096];
	size_t done = 0, nonzero = 0;

	while (done < len) {
		size_t want = len - done < sizeof(buf) ? len - done : sizeof(buf);
		ssize_t n = pread(fd, buf, want, off + (off_t)done);

		if (n < 0) {
			say(step, "errno=%s", errname(errno));
			return;
		}
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			nonzero += buf[i] != 0;
		done += (size_t)n;
	}
	say(step, "read=%zu %s", done, nonzero ? "nonzero" : "zeros");
}

/* Creates @path holding @text (truncating it), mode 0644. */
static void put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		say("put_file", "%s errno=%s", path, errname(errno));
	if (fd >= 0)
		close(fd);
}

/* Fills @buf with a pattern that depends on the offset and a seed, so that
 * misplaced blocks change the checksum. */
static void pattern(char *buf, size_t len, off_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(((uint64_t)off + i) * 31 + seed + ((uint64_t)off + i) / 4096);
}

static void same_ino(const char *step, const struct stat *a, const char *path)
{
	struct stat b;

	if (lstat(path, &b) < 0)
		say(step, "errno=%s", errname(errno));
	else
		say(step, "%s", a->st_ino == b.st_ino ? "same" : "changed");
}

/* A time set explicitly: must read back exactly on both sides. */
static void say_ts(const char *step, const char *what, const struct timespec *ts)
{
	say(step, "%s=%lld.%09ld", what, (long long)ts->tv_sec, ts->tv_nsec);
}

/* A time set to "now": only whether it lies within the call's window. */
static const char *recent(const struct timespec *ts, const struct timespec *before,
			  const struct timespec *after)
{
	/* The kernel's clock is coarse (one tick behind at most), hence the
	 * one-second slack; no waiting is involved. */
	return ts->tv_sec >= before->tv_sec - 1 && ts->tv_sec <= after->tv_sec + 1 ? "recent"
										   : "old";
}

/* ---- scenarios ----------------------------------------------------------- */

/* open(2) with O_CREAT, O_EXCL, O_TRUNC and the usual refusals. */
static void sc_create(void)
{
	int fd;

	fd = res_ok("create.excl", open("c_file", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640));
	show_fstat("create.excl.fstat", fd);
	res("create.write", write(fd, "hello world", 11));
	close(fd);
	res_ok("create.excl.again", open("c_file", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
	fd = res_ok("create.nonexcl", open("c_file", O_RDWR | O_CREAT | O_CLOEXEC, 0600));
	show_fstat("create.nonexcl.fstat", fd); /* mode and data unchanged */
	close(fd);
	fd = res_ok("create.trunc", open("c_file", O_WRONLY | O_TRUNC | O_CLOEXEC));
	show_fstat("create.trunc.fstat", fd);
	close(fd);
	show_lstat("create.trunc.lstat", "c_file");
	res_ok("create.missing", open("c_missing", O_RDONLY | O_CLOEXEC));
	res_ok("create.notdir", open("c_file/x", O_RDONLY | O_CLOEXEC));
	res_ok("create.in_missing", open("c_missing/x", O_RDWR | O_CREAT | O_CLOEXEC, 0644));
	res("create.mkdir", mkdir("c_dir", 0755));
	res_ok("create.dir_wronly", open("c_dir", O_WRONLY | O_CLOEXEC));
	res_ok("create.dir_creat", open("c_dir", O_RDONLY | O_CREAT | O_CLOEXEC, 0644));
	fd = res_ok("create.dir_rdonly", open("c_dir", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	close(fd);
	res_ok("create.file_odirectory", open("c_file", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	res("create.symlink_dangling", symlink("c_target", "c_dangling"));
	/* O_EXCL does not follow the final symlink, even a dangling one. */
	res_ok("create.excl_symlink",
	       open("c_dangling", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
	res_ok("create.nofollow", open("c_dangling", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
	/* Without O_EXCL, O_CREAT through a dangling symlink creates its target. */
	fd = res_ok("create.via_symlink", open("c_dangling", O_RDWR | O_CREAT | O_CLOEXEC, 0600));
	close(fd);
	show_lstat("create.via_symlink.target", "c_target");
}

/* Mode bits of new nodes follow the caller's umask, not the daemon's. */
static void sc_umask(void)
{
	int fd;

	umask(0);
	res("umask0.mkdir", mkdir("u_dir0", 0777));
	show_lstat("umask0.mkdir.lstat", "u_dir0");
	fd = res_ok("umask0.create", open("u_file0", O_RDWR | O_CREAT | O_CLOEXEC, 0666));
	close(fd);
	show_lstat("umask0.create.lstat", "u_file0");
	res("umask0.mkfifo", mkfifo("u_fifo0", 0666));
	show_lstat("umask0.mkfifo.lstat", "u_fifo0");
	res("umask0.mkdir_sticky", mkdir("u_sticky", 01777));
	show_lstat("umask0.mkdir_sticky.lstat", "u_sticky");
	umask(077);
	res("umask077.mkdir", mkdir("u_dir077", 0777));
	show_lstat("umask077.mkdir.lstat", "u_dir077");
	fd = res_ok("umask077.create", open("u_file077", O_RDWR | O_CREAT | O_CLOEXEC, 0666));
	close(fd);
	show_lstat("umask077.create.lstat", "u_file077");
	umask(022);
	/* A setgid directory passes the bit on to new subdirectories. */
	res("umask.setgid_dir", mkdir("u_sgid", 0755));
	res("umask.setgid_chmod", chmod("u_sgid", 02755));
	res("umask.setgid_sub", mkdir("u_sgid/sub", 0755));
	show_lstat("umask.setgid_sub.lstat", "u_sgid/sub");
}

/* O_APPEND: every write lands at the end, whatever the offset says. */
static void sc_append(void)
{
	char buf[64];
	int fd;

	put_file("a_file", "0123456789");
	fd = res_ok("append.open", open("a_file", O_WRONLY | O_APPEND | O_CLOEXEC));
	res("append.lseek0", lseek(fd, 0, SEEK_SET));
	res("append.write", write(fd, "abc", 3));
	res("append.pos", lseek(fd, 0, SEEK_CUR));
	/* Linux's pwrite(2) on an O_APPEND descriptor appends too. */
	res("append.pwrite0", pwrite(fd, "XY", 2, 0));
	close(fd);
	show_data("append.data", "a_file");
	fd = res_ok("append.open_rdwr", open("a_file", O_RDWR | O_APPEND | O_CLOEXEC));
	res("append.read", read(fd, buf, 4));
	res("append.write2", write(fd, "!", 1));
	res("append.pos2", lseek(fd, 0, SEEK_CUR));
	res("append.read_at_end", read(fd, buf, sizeof(buf)));
	close(fd);
	show_data("append.data2", "a_file");
	/* O_APPEND together with O_TRUNC|O_CREAT on a new name. */
	fd = res_ok("append.creat",
		    open("a_new", O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	res("append.creat.write", write(fd, "one", 3));
	res("append.creat.write2", write(fd, "two", 3));
	close(fd);
	show_data("append.creat.data", "a_new");
}

/* Reads and writes at offsets; writes past the end leave a hole of zeros. */
static void sc_rw(void)
{
	static char big[8192];
	char buf[64];
	int fd;

	pattern(big, sizeof(big), 0, 7);
	fd = res_ok("rw.open", open("rw_file", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	res("rw.write", write(fd, big, sizeof(big)));
	res("rw.lseek", lseek(fd, 100, SEEK_SET));
	res("rw.write_at", write(fd, "ABCD", 4));
	res("rw.pos", lseek(fd, 0, SEEK_CUR));
	memset(buf, 0, sizeof(buf));
	res("rw.pread", pread(fd, buf, 8, 98));
	say("rw.pread.data", "%02x%02x[%.4s]%02x%02x", (unsigned char)buf[0], (unsigned char)buf[1],
	    buf + 2, (unsigned char)buf[6], (unsigned char)buf[7]);
	res("rw.lseek_end", lseek(fd, 0, SEEK_END));
	res("rw.read_eof", read(fd, buf, sizeof(buf)));
	res("rw.pread_past_eof", pread(fd, buf, sizeof(buf), 100000));
	res("rw.pread_short", pread(fd, buf, sizeof(buf), 8192 - 10));
	res("rw.pwrite_past_eof", pwrite(fd, "tail", 4, 1048576 + 3));
	show_fstat("rw.fstat", fd);
	show_zeros("rw.hole", fd, 8192, 1048576 + 3 - 8192);
	res("rw.pread_tail", pread(fd, buf, sizeof(buf), 1048576));
	say("rw.pread_tail.data", "%02x%02x%02x[%.4s]", (unsigned char)buf[0],
	    (unsigned char)buf[1], (unsigned char)buf[2], buf + 3);
	res("rw.lseek_beyond", lseek(fd, 2 * 1048576, SEEK_SET));
	res("rw.write_beyond", write(fd, "z", 1));
	show_fstat("rw.fstat2", fd);
	show_data_fd("rw.data", fd);
	res("rw.lseek_negative", lseek(fd, -1, SEEK_SET));
	close(fd);
	/* The data is there for a fresh open too (not only in this fd's view). */
	show_data("rw.data_reopen", "rw_file");
	fd = res_ok("rw.open_rdonly", open("rw_file", O_RDONLY | O_CLOEXEC));
	res("rw.write_rdonly", write(fd, "x", 1));
	close(fd);
	fd = res_ok("rw.open_wronly", open("rw_file", O_WRONLY | O_CLOEXEC));
	res("rw.read_wronly", read(fd, buf, 1));
	close(fd);
}

/* truncate(2) and ftruncate(2) up and down; data beyond a cut is gone. */
static void sc_truncate(void)
{
	static char big[20000];
	int fd, fd2;

	pattern(big, sizeof(big), 0, 3);
	fd = res_ok("trunc.open", open("t_file", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	res("trunc.write", write(fd, big, sizeof(big)));
	res("trunc.up", truncate("t_file", 100000));
	show_lstat("trunc.up.lstat", "t_file");
	show_zeros("trunc.up.zeros", fd, 20000, 80000);
	res("trunc.down", truncate("t_file", 10));
	show_fstat("trunc.down.fstat", fd); /* the open descriptor sees it too */
	show_data_fd("trunc.down.data", fd);
	res("trunc.up_again", truncate("t_file", 5000));
	show_zeros("trunc.up_again.zeros", fd, 10, 4990); /* cut data stays cut */
	res("trunc.ftrunc_down", ftruncate(fd, 3));
	show_lstat("trunc.ftrunc_down.lstat", "t_file");
	show_data("trunc.ftrunc_down.data", "t_file");
	res("trunc.ftrunc_up", ftruncate(fd, 9000));
	show_lstat("trunc.ftrunc_up.lstat", "t_file");
	show_data("trunc.ftrunc_up.data", "t_file");
	res("trunc.ftrunc_negative", ftruncate(fd, -1));
	/* Written after a truncate: the write lands at its offset, hole before. */
	res("trunc.ftrunc_zero", ftruncate(fd, 0));
	res("trunc.pwrite_after", pwrite(fd, "end", 3, 100));
	show_data_fd("trunc.pwrite_after.data", fd);
	close(fd);
	fd2 = res_ok("trunc.open_rdonly", open("t_file", O_RDONLY | O_CLOEXEC));
	res("trunc.ftrunc_rdonly", ftruncate(fd2, 0));
	close(fd2);
	fd2 = res_ok("trunc.open_otrunc", open("t_file", O_RDWR | O_TRUNC | O_CLOEXEC));
	show_fstat("trunc.open_otrunc.fstat", fd2);
	close(fd2);
	res("trunc.missing", truncate("t_missing", 0));
	res("trunc.mkdir", mkdir("t_dir", 0755));
	res("trunc.dir", truncate("t_dir", 0));
	res("trunc.negative", truncate("t_file", -1));
}

/* chmod/fchmod, and chown to the caller's own uid and gid. */
static void sc_chmod(void)
{
	int fd;

	put_file("m_file", "mode");
	res("chmod.0600", chmod("m_file", 0600));
	show_lstat("chmod.0600.lstat", "m_file");
	fd = res_ok("chmod.open", open("m_file", O_RDWR | O_CLOEXEC));
	res("chmod.fchmod_4755", fchmod(fd, 04755));
	show_fstat("chmod.fchmod_4755.fstat", fd);
	show_lstat("chmod.fchmod_4755.lstat", "m_file");
	res("chmod.fchmod_0", fchmod(fd, 0));
	show_lstat("chmod.fchmod_0.lstat", "m_file");
	close(fd);
	res("chmod.06755", chmod("m_file", 06755));
	/* chown clears setuid/setgid on an executable file, even for root. */
	res("chown.self", chown("m_file", getuid(), getgid()));
	show_lstat("chown.self.lstat", "m_file");
	fd = res_ok("chown.open", open("m_file", O_RDONLY | O_CLOEXEC));
	res("chown.fchown_self", fchown(fd, getuid(), getgid()));
	res("chown.fchown_nochange", fchown(fd, (uid_t)-1, (gid_t)-1));
	show_fstat("chown.fchown.fstat", fd);
	close(fd);
	res("chmod.mkdir", mkdir("m_dir", 0755));
	res("chmod.dir_1777", chmod("m_dir", 01777));
	show_lstat("chmod.dir_1777.lstat", "m_dir");
	res("chmod.symlink", symlink("m_file", "m_link"));
	res("chown.lchown_self", lchown("m_link", getuid(), getgid()));
	show_lstat("chown.lchown.lstat", "m_link");
	res("chmod.via_symlink", chmod("m_link", 0640)); /* follows the link */
	show_lstat("chmod.via_symlink.lstat", "m_file");
	res("chmod.missing", chmod("m_missing", 0644));
	res("chown.missing", chown("m_missing", getuid(), getgid()));
	res("chmod.fchmodat_nofollow", fchmodat(AT_FDCWD, "m_link", 0600, AT_SYMLINK_NOFOLLOW));
}

/* utimensat: explicit times read back exactly; UTIME_OMIT leaves a time
 * alone; UTIME_NOW sets "now". */
static void sc_utimens(void)
{
	struct timespec set[2], before, after;
	struct stat st, st2;
	int fd;

	put_file("ut_file", "times");
	set[0].tv_sec = 1000000000;
	set[0].tv_nsec = 123456789;
	set[1].tv_sec = 1200000000;
	set[1].tv_nsec = 987654321;
	res("utime.explicit", utimensat(AT_FDCWD, "ut_file", set, 0));
	lstat("ut_file", &st);
	say_ts("utime.explicit.atime", "atime", &st.st_atim);
	say_ts("utime.explicit.mtime", "mtime", &st.st_mtim);

	set[0].tv_nsec = UTIME_OMIT;
	set[1].tv_sec = 1300000000;
	set[1].tv_nsec = 500000000;
	res("utime.omit_atime", utimensat(AT_FDCWD, "ut_file", set, 0));
	lstat("ut_file", &st2);
	say("utime.omit_atime.atime", "%s",
	    st2.st_atim.tv_sec == st.st_atim.tv_sec && st2.st_atim.tv_nsec == st.st_atim.tv_nsec
		    ? "unchanged"
		    : "changed");
	say_ts("utime.omit_atime.mtime", "mtime", &st2.st_mtim);

	set[0].tv_nsec = UTIME_NOW;
	set[1].tv_nsec = UTIME_OMIT;
	clock_gettime(CLOCK_REALTIME, &before);
	res("utime.now_atime", utimensat(AT_FDCWD, "ut_file", set, 0));
	clock_gettime(CLOCK_REALTIME, &after);
	lstat("ut_file", &st);
	say("utime.now_atime.atime", "%s", recent(&st.st_atim, &before, &after));
	say_ts("utime.now_atime.mtime", "mtime", &st.st_mtim); /* still 1300000000.5 */

	fd = res_ok("utime.open", open("ut_file", O_RDWR | O_CLOEXEC));
	set[0].tv_sec = 1100000000;
	set[0].tv_nsec = 1;
	set[1].tv_sec = 1100000001;
	set[1].tv_nsec = 999999999;
	res("utime.futimens", futimens(fd, set));
	fstat(fd, &st);
	say_ts("utime.futimens.atime", "atime", &st.st_atim);
	say_ts("utime.futimens.mtime", "mtime", &st.st_mtim);
	clock_gettime(CLOCK_REALTIME, &before);
	res("utime.futimens_null", futimens(fd, NULL));
	clock_gettime(CLOCK_REALTIME, &after);
	fstat(fd, &st);
	say("utime.futimens_null.times", "atime=%s mtime=%s", recent(&st.st_atim, &before, &after),
	    recent(&st.st_mtim, &before, &after));

	/* A write after an explicit mtime moves mtime to "now". */
	set[0].tv_nsec = UTIME_OMIT;
	set[1].tv_sec = 1200000000;
	set[1].tv_nsec = 0;
	res("utime.before_write", futimens(fd, set));
	clock_gettime(CLOCK_REALTIME, &before);
	res("utime.write", pwrite(fd, "T", 1, 0));
	close(fd);
	clock_gettime(CLOCK_REALTIME, &after);
	lstat("ut_file", &st);
	say("utime.write.mtime", "%s", recent(&st.st_mtim, &before, &after));

	res("utime.symlink", symlink("ut_file", "ut_link"));
	set[0].tv_sec = 1010101010;
	set[0].tv_nsec = 0;
	set[1].tv_sec = 1020202020;
	set[1].tv_nsec = 20;
	res("utime.nofollow", utimensat(AT_FDCWD, "ut_link", set, AT_SYMLINK_NOFOLLOW));
	lstat("ut_link", &st);
	say_ts("utime.nofollow.mtime", "mtime", &st.st_mtim);
	res("utime.missing", utimensat(AT_FDCWD, "ut_missing", NULL, 0));
	set[1].tv_nsec = 1000000000;
	res("utime.bad_nsec", utimensat(AT_FDCWD, "ut_file", set, 0));
}

/* mkdir/rmdir/unlink and their errors. */
static void sc_mkdir(void)
{
	res("mkdir.d", mkdir("d", 0750));
	show_lstat("mkdir.d.lstat", "d");
	res("mkdir.again", mkdir("d", 0755));
	res("mkdir.sub_a", mkdir("d/a", 0755));
	res("mkdir.sub_b", mkdir("d/b", 0755));
	show_lstat("mkdir.nlink", "d"); /* 2 + two subdirectories */
	res("rmdir.notempty", rmdir("d"));
	res("rmdir.missing", rmdir("d_missing"));
	put_file("d_file", "f");
	res("rmdir.file", rmdir("d_file"));
	res("mkdir.under_file", mkdir("d_file/x", 0755));
	res("mkdir.in_missing", mkdir("d_missing/x", 0755));
	res("mkdir.over_file", mkdir("d_file", 0755));
	res("rmdir.dot", rmdir("d/."));
	res("rmdir.dotdot", rmdir("d/a/.."));
	res("unlink.dir", unlink("d"));
	res("unlink.missing", unlink("d_missing"));
	res("unlink.under_file", unlink("d_file/x"));
	res("rmdir.sub_a", rmdir("d/a"));
	res("rmdir.sub_b", rmdir("d/b"));
	show_lstat("rmdir.nlink", "d");
	res("rmdir.d", rmdir("d"));
	show_lstat("rmdir.d.lstat", "d");
	res("rmdir.again", rmdir("d"));
	res("unlink.file", unlink("d_file"));
	show_lstat("unlink.file.lstat", "d_file");
	/* The name is free again at once, for a new node of another type. */
	res("mkdir.reuse", mkdir("d_file", 0700));
	show_lstat("mkdir.reuse.lstat", "d_file");
	res("rmdir.reuse", rmdir("d_file"));
}

/* An unlinked file that is still open lives on through its descriptor. */
static void sc_unlink_open(void)
{
	char buf[64];
	int fd, fd2;

	put_file("uo_file", "data1234");
	fd = res_ok("unlink_open.open", open("uo_file", O_RDWR | O_CLOEXEC));
	res("unlink_open.unlink", unlink("uo_file"));
	show_lstat("unlink_open.lstat", "uo_file");
	show_fstat("unlink_open.fstat", fd);
	res("unlink_open.pwrite", pwrite(fd, "more", 4, 8));
	memset(buf, 0, sizeof(buf));
	res("unlink_open.pread", pread(fd, buf, sizeof(buf), 0));
	say("unlink_open.pread.data", "\"%s\"", buf);
	res("unlink_open.ftruncate", ftruncate(fd, 4));
	res("unlink_open.fchmod", fchmod(fd, 0600));
	show_fstat("unlink_open.fstat2", fd);
	/* Attribute calls on it reach the daemon without a name. */
	res("unlink_open.fchown_self", fchown(fd, getuid(), getgid()));
	res("unlink_open.fsetxattr", fsetxattr(fd, "user.orphan", "yes", 3, 0));
	res("unlink_open.fgetxattr", fgetxattr(fd, "user.orphan", buf, sizeof(buf)));
	{
		struct timespec set[2] = {{1111111111, 11}, {1222222222, 22}};
		struct stat st;

		res("unlink_open.futimens", futimens(fd, set));
		if (fstat(fd, &st) == 0)
			say_ts("unlink_open.futimens.mtime", "mtime", &st.st_mtim);
	}
	/* A new file under the same name is a different file. */
	put_file("uo_file", "new");
	show_data("unlink_open.new.data", "uo_file");
	show_data_fd("unlink_open.old.data", fd);
	fd2 = res_ok("unlink_open.open_new", open("uo_file", O_RDWR | O_CLOEXEC));
	res("unlink_open.unlink_new", unlink("uo_file"));
	res("unlink_open.write_new", write(fd2, "N", 1));
	show_data_fd("unlink_open.new_fd.data", fd2);
	show_data_fd("unlink_open.old_fd.data", fd);
	close(fd2);
	close(fd);
	show_lstat("unlink_open.gone", "uo_file");
}

/* A file opened for reading and read, written through a second
 * descriptor, then unlinked and read again once its pages are gone. With
 * open=kernel the first read opens the backing file read-only, the write
 * makes it read-write, and the last read reaches the unlinked file through
 * what its entry keeps (fs/kfile.c). */
static void sc_read_write_unlink(void)
{
	char buf[64];
	int fd, fd2;

	put_file("rwu_file", "readonly-data");
	fd = res_ok("read_write_unlink.open", open("rwu_file", O_RDONLY | O_CLOEXEC));
	memset(buf, 0, sizeof(buf));
	res("read_write_unlink.pread", pread(fd, buf, sizeof(buf) - 1, 0));
	say("read_write_unlink.pread.data", "\"%s\"", buf);
	fd2 = res_ok("read_write_unlink.open_w", open("rwu_file", O_WRONLY | O_CLOEXEC));
	res("read_write_unlink.pwrite", pwrite(fd2, "WRITTEN", 7, 0));
	res("read_write_unlink.fsync", fsync(fd2));
	close(fd2);
	res("read_write_unlink.fsync_r", fsync(fd));
	res("read_write_unlink.unlink", unlink("rwu_file"));
	res("read_write_unlink.fadvise", posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	memset(buf, 0, sizeof(buf));
	res("read_write_unlink.pread2", pread(fd, buf, sizeof(buf) - 1, 0));
	say("read_write_unlink.pread2.data", "\"%s\"", buf);
	res("read_write_unlink.pwrite_r", pwrite(fd, "x", 1, 0));
	close(fd);
}

/* rename(2) and renameat2(2) over files and directories. */
static void sc_rename(void)
{
	int fd;

	put_file("r_a", "AAA");
	put_file("r_b", "BBBB");
	fd = res_ok("rename.open_victim", open("r_b", O_RDONLY | O_CLOEXEC));
	res("rename.file_over_file", rename("r_a", "r_b"));
	show_lstat("rename.file_over_file.old", "r_a");
	show_data("rename.file_over_file.new", "r_b");
	show_fstat("rename.victim.fstat", fd); /* the replaced file: nlink 0 */
	show_data_fd("rename.victim.data", fd);
	close(fd);

	res("rename.mkdir_src", mkdir("r_dir", 0755));
	put_file("r_dir/inner", "inner");
	res("rename.mkdir_empty", mkdir("r_empty", 0700));
	res("rename.dir_over_empty", rename("r_dir", "r_empty"));
	show_lstat("rename.dir_over_empty.old", "r_dir");
	show_lstat("rename.dir_over_empty.new", "r_empty");
	show_data("rename.dir_over_empty.inner", "r_empty/inner");
	res("rename.mkdir_full", mkdir("r_full", 0755));
	put_file("r_full/x", "x");
	res("rename.dir_over_nonempty", rename("r_empty", "r_full"));
	res("rename.file_over_dir", rename("r_b", "r_full"));
	res("rename.dir_over_file", rename("r_full", "r_b"));
	res("rename.missing", rename("r_missing", "r_other"));
	res("rename.into_own_sub", rename("r_full", "r_full/sub"));
	res("rename.same_name", rename("r_b", "r_b"));
	show_data("rename.same_name.data", "r_b");
	res("rename.link", link("r_b", "r_b2"));
	res("rename.hardlinks", rename("r_b", "r_b2")); /* one inode: nothing happens */
	show_lstat("rename.hardlinks.a", "r_b");
	show_lstat("rename.hardlinks.b", "r_b2");
	res("rename.across_dirs", rename("r_b2", "r_full/moved"));
	show_data("rename.across_dirs.data", "r_full/moved");
	res("rename.to_missing_dir", rename("r_b", "r_missing/x"));

	put_file("r_x", "XXX");
	put_file("r_y", "YYYYY");
	res("renameat2.noreplace_exists",
	    renameat2(AT_FDCWD, "r_x", AT_FDCWD, "r_y", RENAME_NOREPLACE));
	res("renameat2.noreplace_new",
	    renameat2(AT_FDCWD, "r_x", AT_FDCWD, "r_z", RENAME_NOREPLACE));
	show_data("renameat2.noreplace_new.data", "r_z");
	show_lstat("renameat2.noreplace_new.old", "r_x");
	res("renameat2.exchange", renameat2(AT_FDCWD, "r_z", AT_FDCWD, "r_y", RENAME_EXCHANGE));
	show_data("renameat2.exchange.z", "r_z");
	show_data("renameat2.exchange.y", "r_y");
	res("renameat2.exchange_missing",
	    renameat2(AT_FDCWD, "r_z", AT_FDCWD, "r_missing", RENAME_EXCHANGE));
	/* Exchanging a file and a directory swaps their types under the names. */
	res("renameat2.exchange_dir",
	    renameat2(AT_FDCWD, "r_z", AT_FDCWD, "r_full", RENAME_EXCHANGE));
	show_lstat("renameat2.exchange_dir.z", "r_z");
	show_lstat("renameat2.exchange_dir.full", "r_full");
	show_data("renameat2.exchange_dir.inner", "r_z/x");
	res("renameat2.both_flags",
	    renameat2(AT_FDCWD, "r_z", AT_FDCWD, "r_full", RENAME_EXCHANGE | RENAME_NOREPLACE));

	/* A descriptor opened before a rename still works after it. */
	put_file("r_open", "opened");
	fd = res_ok("rename.open_moved", open("r_open", O_RDWR | O_CLOEXEC));
	res("rename.moved", rename("r_open", "r_opened"));
	res("rename.moved.write", pwrite(fd, "O", 1, 0));
	show_data("rename.moved.data", "r_opened");
	close(fd);
}

/* Hard links: one inode, two names. */
static void sc_link(void)
{
	struct stat st;

	put_file("l_a", "linked");
	res("link.new", link("l_a", "l_b"));
	res("link.exists", link("l_a", "l_b"));
	show_lstat("link.a", "l_a");
	show_lstat("link.b", "l_b");
	lstat("l_a", &st);
	same_ino("link.ino", &st, "l_b");
	res("link.chmod_a", chmod("l_a", 0600));
	show_lstat("link.chmod_seen_via_b", "l_b");
	put_file("l_b", "rewritten via b");
	show_data("link.data_via_a", "l_a");
	res("link.third", link("l_b", "l_c"));
	show_lstat("link.third.a", "l_a");
	res("link.unlink_a", unlink("l_a"));
	show_lstat("link.after_unlink.b", "l_b");
	show_lstat("link.after_unlink.c", "l_c");
	res("link.mkdir", mkdir("l_dir", 0755));
	res("link.dir", link("l_dir", "l_dir2"));
	res("link.missing", link("l_missing", "l_x"));
	res("link.to_missing_dir", link("l_b", "l_missing/x"));
	res("link.symlink", symlink("l_b", "l_sym"));
	/* link(2) does not follow a symlink: the new name is a symlink too. */
	res("link.of_symlink", link("l_sym", "l_sym2"));
	show_lstat("link.of_symlink.lstat", "l_sym2");
	res("link.follow", linkat(AT_FDCWD, "l_sym", AT_FDCWD, "l_follow", AT_SYMLINK_FOLLOW));
	show_lstat("link.follow.lstat", "l_follow");
}

/* symlink(2) and readlink(2), including a target of nearly PATH_MAX. */
static void sc_symlink(void)
{
	static char target[PATH_MAX + 8], back[PATH_MAX + 8];
	char small[4];
	ssize_t n;
	int fd;

	put_file("s_file", "pointed to");
	res("symlink.new", symlink("s_file", "s_link"));
	show_lstat("symlink.lstat", "s_link");
	n = res("symlink.readlink", readlink("s_link", back, sizeof(back)));
	if (n >= 0)
		say("symlink.readlink.data", "\"%.*s\"", (int)n, back);
	res("symlink.readlink_small", readlink("s_link", small, sizeof(small)));
	res("symlink.exists", symlink("other", "s_link"));
	show_data("symlink.follow", "s_link");
	res("symlink.readlink_file", readlink("s_file", back, sizeof(back)));
	res("symlink.readlink_missing", readlink("s_missing", back, sizeof(back)));
	res("symlink.dangling", symlink("s_nowhere", "s_dangling"));
	res_ok("symlink.open_dangling", open("s_dangling", O_RDONLY | O_CLOEXEC));
	res("symlink.loop_a", symlink("s_loop_b", "s_loop_a"));
	res("symlink.loop_b", symlink("s_loop_a", "s_loop_b"));
	res_ok("symlink.open_loop", open("s_loop_a", O_RDONLY | O_CLOEXEC));
	res("symlink.mkdir", mkdir("s_dir", 0755));
	put_file("s_dir/in", "in dir");
	res("symlink.to_dir", symlink("s_dir", "s_dlink"));
	show_data("symlink.through_dir", "s_dlink/in");
	res("symlink.empty", symlink("", "s_empty"));

	/* 4095 bytes is the longest target; 4096 (PATH_MAX with its NUL) is one too many. */
	static const size_t lens[] = {4000, 4095, 4096};

	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		size_t len = lens[k];
		char step[64], name[32];

		memset(target, 0, sizeof(target));
		for (size_t i = 0; i < len; i++)
			target[i] = (i % 64 == 63) ? '/' : (char)('a' + i % 26);
		snprintf(name, sizeof(name), "s_long%zu", len);
		snprintf(step, sizeof(step), "symlink.long%zu", len);
		if (res(step, symlink(target, name)) < 0)
			continue;
		snprintf(step, sizeof(step), "symlink.long%zu.lstat", len);
		show_lstat(step, name);
		memset(back, 0, sizeof(back));
		n = readlink(name, back, sizeof(back));
		snprintf(step, sizeof(step), "symlink.long%zu.readlink", len);
		if (n < 0)
			say(step, "errno=%s", errname(errno));
		else
			say(step, "%zd %s", n,
			    (size_t)n == len && memcmp(back, target, len) == 0 ? "equal"
									       : "different");
	}
	fd = res_ok("symlink.open_nofollow", open("s_link", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
	if (fd >= 0)
		close(fd);
	fd = res_ok("symlink.open_path",
		    open("s_link", O_PATH | O_NOFOLLOW | O_CLOEXEC)); /* the link itself */
	show_fstat("symlink.open_path.fstat", fd);
	if (fd >= 0)
		close(fd);
}

/* A symlink with two hard links, one of them removed: the remaining name
 * still leads to an ordinary symlink. */
static void sc_symlink_hardlink(void)
{
	struct timespec set[2] = {{UTIME_OMIT, UTIME_OMIT}, {1234567890, 5}};
	char back[64];
	struct stat st;
	ssize_t n;

	res("symhard.symlink", symlink("sh_target", "sh_link"));
	res("symhard.link", link("sh_link", "sh_link2"));
	res("symhard.unlink_second", unlink("sh_link2"));
	show_lstat("symhard.lstat", "sh_link");
	n = res("symhard.readlink", readlink("sh_link", back, sizeof(back)));
	if (n >= 0)
		say("symhard.readlink.data", "\"%.*s\"", (int)n, back);
	/* The VFS answers user.* reads on a symlink itself (ENODATA); trusted.*
	 * (the caller is root) goes down to the filesystem. */
	res("symhard.lgetxattr", lgetxattr("sh_link", "user.none", back, sizeof(back)));
	res("symhard.lgetxattr_trusted", lgetxattr("sh_link", "trusted.none", back, sizeof(back)));
	res("symhard.llistxattr", llistxattr("sh_link", NULL, 0) >= 0 ? 0 : -1);
	res("symhard.lsetxattr", lsetxattr("sh_link", "user.x", "v", 1, 0));
	res("symhard.lchown_self", lchown("sh_link", getuid(), getgid()));
	res("symhard.utimens_nofollow", utimensat(AT_FDCWD, "sh_link", set, AT_SYMLINK_NOFOLLOW));
	if (lstat("sh_link", &st) == 0)
		say_ts("symhard.utimens_nofollow.mtime", "mtime", &st.st_mtim);
	res("symhard.rename", rename("sh_link", "sh_moved"));
	show_lstat("symhard.rename.lstat", "sh_moved");
}

/* mmap(2) MAP_SHARED writes reach the file; read(2) sees mapped data. */
static void sc_mmap(void)
{
	char buf[16];
	char *map;
	int fd;

	put_file("mm_file", "0123456789abcdef");
	fd = res_ok("mmap.open", open("mm_file", O_RDWR | O_CLOEXEC));
	map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	say("mmap.map", "%s", map == MAP_FAILED ? errname(errno) : "ok");
	if (map != MAP_FAILED) {
		say("mmap.read", "\"%.16s\"", map);
		memcpy(map + 4, "MMAP", 4);
		res("mmap.msync", msync(map, 4096, MS_SYNC));
		memset(buf, 0, sizeof(buf));
		res("mmap.pread", pread(fd, buf, 8, 2));
		say("mmap.pread.data", "\"%.8s\"", buf);
		res("mmap.pwrite", pwrite(fd, "W", 1, 0));
		say("mmap.sees_pwrite", "%c", map[0]);
		munmap(map, 4096);
	}
	close(fd);
	show_data("mmap.data", "mm_file");
}

/* fsync, fdatasync and fsync of a directory succeed. */
static void sc_fsync(void)
{
	int fd, dfd;

	put_file("fs_file", "sync me");
	fd = res_ok("fsync.open", open("fs_file", O_RDWR | O_CLOEXEC));
	res("fsync.write", write(fd, "S", 1));
	res("fsync.fsync", fsync(fd));
	res("fsync.fdatasync", fdatasync(fd));
	close(fd);
	dfd = res_ok("fsync.opendir", open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	res("fsync.dir", fsync(dfd));
	close(dfd);
	fd = res_ok("fsync.open_sync", open("fs_file", O_WRONLY | O_SYNC | O_CLOEXEC));
	res("fsync.write_sync", write(fd, "s", 1));
	close(fd);
	show_data("fsync.data", "fs_file");
}

/* O_TMPFILE: an unnamed file in the directory, given a name by linkat. */
static void sc_tmpfile(void)
{
	char proc[64];
	int fd;

	fd = res_ok("tmpfile.open", open(".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
	if (fd < 0)
		return;
	res("tmpfile.write", write(fd, "unnamed", 7));
	show_fstat("tmpfile.fstat", fd);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	res("tmpfile.linkat", linkat(AT_FDCWD, proc, AT_FDCWD, "tmp_named", AT_SYMLINK_FOLLOW));
	show_lstat("tmpfile.named.lstat", "tmp_named");
	show_data("tmpfile.named.data", "tmp_named");
	close(fd);
}

/* FIFOs, device nodes and unix sockets. */
static void sc_special(void)
{
	struct sockaddr_un addr;
	char buf[16];
	int rd, wr, srv, cli;

	res("fifo.mkfifo", mkfifo("sp_fifo", 0640));
	show_lstat("fifo.lstat", "sp_fifo");
	res("fifo.again", mkfifo("sp_fifo", 0640));
	res_ok("fifo.open_w_noreader", open("sp_fifo", O_WRONLY | O_NONBLOCK | O_CLOEXEC));
	rd = res_ok("fifo.open_r", open("sp_fifo", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
	wr = res_ok("fifo.open_w", open("sp_fifo", O_WRONLY | O_NONBLOCK | O_CLOEXEC));
	res("fifo.write", write(wr, "ping", 4));
	memset(buf, 0, sizeof(buf));
	res("fifo.read", read(rd, buf, sizeof(buf) - 1));
	say("fifo.read.data", "\"%s\"", buf);
	close(wr);
	close(rd);
	res("mknod.reg", mknod("sp_reg", S_IFREG | 0600, 0));
	show_lstat("mknod.reg.lstat", "sp_reg");
	res("mknod.chr", mknod("sp_chr", S_IFCHR | 0600, makedev(1, 3)));
	show_lstat("mknod.chr.lstat", "sp_chr");
	res("mknod.fifo", mknod("sp_fifo2", S_IFIFO | 0644, 0));
	show_lstat("mknod.fifo.lstat", "sp_fifo2");

	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "sp_sock");
	srv = res_ok("sock.socket", socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	res("sock.bind", bind(srv, (struct sockaddr *)&addr, sizeof(addr)));
	show_lstat("sock.lstat", "sp_sock");
	res("sock.listen", listen(srv, 1));
	cli = res_ok("sock.client", socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	res("sock.connect", connect(cli, (struct sockaddr *)&addr, sizeof(addr)));
	close(cli);
	cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	res("sock.bind_again", bind(cli, (struct sockaddr *)&addr, sizeof(addr)));
	close(cli);
	close(srv);
	res("sock.unlink", unlink("sp_sock"));
	show_lstat("sock.unlink.lstat", "sp_sock");
}

static void sc_statfs(void)
{
	struct statvfs sv;

	if (res("statfs", statvfs(".", &sv)) == 0)
		say("statfs.namemax", "%lu", (unsigned long)sv.f_namemax);
}

/* fallocate(2): allocate, keep size, punch a hole, zero a range. */
static void sc_fallocate(void)
{
	static char big[16384];
	int fd, ro;

	memset(big, 'a', sizeof(big));
	fd = res_ok("falloc.open", open("fa_file", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	res("falloc.write", write(fd, big, sizeof(big)));
	res("falloc.mode0", fallocate(fd, 0, 0, 20000));
	show_fstat("falloc.mode0.fstat", fd);
	show_zeros("falloc.mode0.zeros", fd, 16384, 20000 - 16384);
	res("falloc.keep_size", fallocate(fd, FALLOC_FL_KEEP_SIZE, 20000, 20000));
	show_fstat("falloc.keep_size.fstat", fd);
	res("falloc.punch", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 4096));
	show_fstat("falloc.punch.fstat", fd);
	show_zeros("falloc.punch.zeros", fd, 4096, 4096);
	show_zeros("falloc.punch.before", fd, 0, 4096);
	res("falloc.punch_unaligned",
	    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 10));
	show_zeros("falloc.punch_unaligned.zeros", fd, 100, 10);
	res("falloc.punch_nokeep", fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096));
	res("falloc.zero_range", fallocate(fd, FALLOC_FL_ZERO_RANGE, 10000, 2000));
	show_zeros("falloc.zero_range.zeros", fd, 10000, 2000);
	show_fstat("falloc.zero_range.fstat", fd);
	res("falloc.zero_range_extend", fallocate(fd, FALLOC_FL_ZERO_RANGE, 19000, 11000));
	show_fstat("falloc.zero_range_extend.fstat", fd);
	res("falloc.zero_range_keep",
	    fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 29000, 11000));
	show_fstat("falloc.zero_range_keep.fstat", fd);
	res("falloc.bad_len", fallocate(fd, 0, 0, 0));
	show_data_fd("falloc.data", fd);
	close(fd);
	show_data("falloc.data_reopen", "fa_file");
	ro = res_ok("falloc.open_rdonly", open("fa_file", O_RDONLY | O_CLOEXEC));
	res("falloc.rdonly", fallocate(ro, 0, 0, 100));
	close(ro);
}

/* lseek SEEK_DATA/SEEK_HOLE over a sparse file: data at 0 and at 1 MiB. */
static void sc_seek(void)
{
	static char block[4096];
	const off_t mib = 1048576;
	int fd;

	memset(block, 'd', sizeof(block));
	fd = res_ok("seek.open", open("sk_file", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	res("seek.write0", pwrite(fd, block, sizeof(block), 0));
	res("seek.write1m", pwrite(fd, block, sizeof(block), mib));
	res("seek.extend", ftruncate(fd, 3 * mib));
	res("seek.data_0", lseek(fd, 0, SEEK_DATA));
	res("seek.hole_0", lseek(fd, 0, SEEK_HOLE));
	res("seek.data_4k", lseek(fd, 4096, SEEK_DATA));
	res("seek.hole_1m", lseek(fd, mib, SEEK_HOLE));
	res("seek.data_after_last", lseek(fd, mib + 4096, SEEK_DATA));
	res("seek.hole_2m", lseek(fd, 2 * mib, SEEK_HOLE));
	res("seek.data_eof", lseek(fd, 3 * mib, SEEK_DATA));
	res("seek.hole_eof", lseek(fd, 3 * mib, SEEK_HOLE));
	res("seek.end", lseek(fd, 0, SEEK_END));
	close(fd);
	/* Once more after a close and a fresh open: the data is on disk-side. */
	fd = res_ok("seek.reopen", open("sk_file", O_RDONLY | O_CLOEXEC));
	res("seek.reopen.hole_0", lseek(fd, 0, SEEK_HOLE));
	res("seek.reopen.data_4k", lseek(fd, 4096, SEEK_DATA));
	close(fd);
}

/* copy_file_range(2) copies data, and copies nothing at the end. */
static void sc_copy_range(void)
{
	static char big[100000];
	loff_t in_off, out_off;
	ssize_t n = 0, total = 0;
	int in, out, ro;

	pattern(big, sizeof(big), 0, 11);
	in = res_ok("cfr.open_in", open("cfr_in", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	res("cfr.write_in", write(in, big, sizeof(big)));
	out = res_ok("cfr.open_out", open("cfr_out", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
	in_off = 1000;
	out_off = 500;
	/* A short count is allowed; loop as a caller must. */
	while (total < 50000) {
		n = copy_file_range(in, &in_off, out, &out_off, (size_t)(50000 - total), 0);
		if (n <= 0)
			break;
		total += n;
	}
	if (total == 0 && n < 0)
		say("cfr.copy", "errno=%s", errname(errno));
	else
		say("cfr.copy", "%zd in_off=%lld out_off=%lld", total, (long long)in_off,
		    (long long)out_off);
	show_fstat("cfr.out.fstat", out);
	show_zeros("cfr.out.head", out, 0, 500);
	show_data_fd("cfr.out.data", out);
	in_off = 100000;
	res("cfr.at_eof", copy_file_range(in, &in_off, out, NULL, 100, 0));
	in_off = 0;
	out_off = 50;
	res("cfr.overlap", copy_file_range(in, &in_off, in, &out_off, 100, 0));
	close(out);
	show_data("cfr.out.data_reopen", "cfr_out");
	ro = res_ok("cfr.open_rdonly", open("cfr_out", O_RDONLY | O_CLOEXEC));
	in_off = 0;
	res("cfr.to_rdonly", copy_file_range(in, &in_off, ro, NULL, 100, 0));
	close(ro);
	close(in);
}

static void show_xattr(const char *step, const char *path, const char *name)
{
	char buf[2048];
	ssize_t n = getxattr(path, name, buf, sizeof(buf));

	if (n < 0)
		say(step, "errno=%s", errname(errno));
	else if (n < 64)
		say(step, "%zd \"%.*s\"", n, (int)n, buf);
	else
		say(step, "%zd fnv=%016llx", n,
		    (unsigned long long)fnv1a(FNV_START, buf, (size_t)n));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The user.* names, sorted (security.* names depend on the system). */
static void show_xattr_list(const char *step, const char *path)
{
	char buf[4096], *names[64], line[4096] = "";
	size_t count = 0;
	ssize_t n = listxattr(path, buf, sizeof(buf));

	if (n < 0) {
		say(step, "errno=%s", errname(errno));
		return;
	}
	for (char *p = buf; p < buf + n && count < 64; p += strlen(p) + 1)
		if (strncmp(p, "user.", 5) == 0)
			names[count++] = p;
	qsort(names, count, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < count; i++) {
		strncat(line, " ", sizeof(line) - strlen(line) - 1);
		strncat(line, names[i], sizeof(line) - strlen(line) - 1);
	}
	say(step, "count=%zu%s", count, line);
}

/* Extended attributes in the user namespace. */
static void sc_xattr(void)
{
	static char big[1000], longname[300];
	char small[1];
	int fd;

	put_file("x_file", "x");
	res("xattr.set", setxattr("x_file", "user.a", "va", 2, 0));
	show_xattr("xattr.get", "x_file", "user.a");
	res("xattr.get_size", getxattr("x_file", "user.a", NULL, 0));
	res("xattr.get_small", getxattr("x_file", "user.a", small, sizeof(small)));
	show_xattr("xattr.get_missing", "x_file", "user.missing");
	res("xattr.create_exists", setxattr("x_file", "user.a", "vb", 2, XATTR_CREATE));
	res("xattr.replace_missing", setxattr("x_file", "user.b", "vb", 2, XATTR_REPLACE));
	res("xattr.replace", setxattr("x_file", "user.a", "replaced", 8, XATTR_REPLACE));
	show_xattr("xattr.get_replaced", "x_file", "user.a");
	res("xattr.create_new", setxattr("x_file", "user.b", "", 0, XATTR_CREATE));
	show_xattr("xattr.get_empty", "x_file", "user.b");
	pattern(big, sizeof(big), 0, 5);
	res("xattr.set_big", setxattr("x_file", "user.big", big, sizeof(big), 0));
	show_xattr("xattr.get_big", "x_file", "user.big");
	show_xattr_list("xattr.list", "x_file");
	res("xattr.list_size", listxattr("x_file", NULL, 0) > 0 ? 1 : -1);
	res("xattr.list_small", listxattr("x_file", small, sizeof(small)));
	res("xattr.remove", removexattr("x_file", "user.a"));
	res("xattr.remove_again", removexattr("x_file", "user.a"));
	show_xattr("xattr.get_removed", "x_file", "user.a");
	show_xattr_list("xattr.list_after", "x_file");
	memset(longname, 'n', sizeof(longname) - 1);
	memcpy(longname, "user.", 5);
	res("xattr.name_too_long", setxattr("x_file", longname, "v", 1, 0));
	res("xattr.missing_file", setxattr("x_missing", "user.a", "v", 1, 0));
	fd = res_ok("xattr.open", open("x_file", O_RDONLY | O_CLOEXEC));
	res("xattr.fset", fsetxattr(fd, "user.f", "byfd", 4, 0));
	show_xattr("xattr.fset.get", "x_file", "user.f");
	res("xattr.fget_size", fgetxattr(fd, "user.f", NULL, 0));
	res("xattr.fremove", fremovexattr(fd, "user.f"));
	close(fd);
	if (getuid() == 0) { /* trusted.* needs CAP_SYS_ADMIN */
		res("xattr.trusted_set", setxattr("x_file", "trusted.t", "tv", 2, 0));
		show_xattr("xattr.trusted_get", "x_file", "trusted.t");
		res("xattr.trusted_remove", removexattr("x_file", "trusted.t"));
	}
	res("xattr.mkdir", mkdir("x_dir", 0755));
	res("xattr.dir_set", setxattr("x_dir", "user.d", "dir", 3, 0));
	show_xattr("xattr.dir_get", "x_dir", "user.d");
	res("xattr.symlink", symlink("x_file", "x_link"));
	/* user.* attributes are refused on symlinks themselves... */
	res("xattr.lset_symlink", lsetxattr("x_link", "user.l", "v", 1, 0));
	res("xattr.lget_symlink", lgetxattr("x_link", "user.l", NULL, 0));
	/* ...and reach the target through them. */
	res("xattr.set_via_symlink", setxattr("x_link", "user.via", "link", 4, 0));
	show_xattr("xattr.get_via_target", "x_file", "user.via");
}

/* flock(2): a second open file description cannot take a conflicting lock. */
static void sc_flock(void)
{
	int fd1, fd2;

	put_file("fl_file", "lock");
	fd1 = res_ok("flock.open1", open("fl_file", O_RDWR | O_CLOEXEC));
	fd2 = res_ok("flock.open2", open("fl_file", O_RDWR | O_CLOEXEC));
	res("flock.ex", flock(fd1, LOCK_EX));
	res("flock.other_ex_nb", flock(fd2, LOCK_EX | LOCK_NB));
	res("flock.other_sh_nb", flock(fd2, LOCK_SH | LOCK_NB));
	res("flock.unlock", flock(fd1, LOCK_UN));
	res("flock.other_sh", flock(fd2, LOCK_SH | LOCK_NB));
	res("flock.sh", flock(fd1, LOCK_SH | LOCK_NB));
	res("flock.upgrade_nb", flock(fd1, LOCK_EX | LOCK_NB));
	close(fd2); /* closing the last descriptor of a description drops its lock */
	res("flock.upgrade_after_close", flock(fd1, LOCK_EX | LOCK_NB));
	close(fd1);
}

static void say_flock(const char *step, const struct flock *fl, pid_t owner)
{
	const char *type = fl->l_type == F_WRLCK   ? "wrlck"
			   : fl->l_type == F_RDLCK ? "rdlck"
			   : fl->l_type == F_UNLCK ? "unlck"
						   : "?";

	if (fl->l_type == F_UNLCK)
		say(step, "%s", type);
	else
		say(step, "%s start=%lld len=%lld pid=%s", type, (long long)fl->l_start,
		    (long long)fl->l_len, fl->l_pid == owner ? "parent" : "other");
}

/* What a forked child sees of the parent's POSIX record lock. */
static void posix_lock_child(pid_t parent)
{
	struct flock fl;
	int fd = res_ok("fcntl.child.open", open("pl_file", O_RDWR | O_CLOEXEC));

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = 10;
	fl.l_len = 5;
	if (res("fcntl.child.getlk", fcntl(fd, F_GETLK, &fl)) == 0)
		say_flock("fcntl.child.getlk.lock", &fl, parent);
	fl.l_type = F_RDLCK;
	fl.l_start = 0;
	fl.l_len = 1;
	res("fcntl.child.setlk_conflict", fcntl(fd, F_SETLK, &fl));
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = 200;
	fl.l_len = 100;
	if (res("fcntl.child.getlk_free", fcntl(fd, F_GETLK, &fl)) == 0)
		say_flock("fcntl.child.getlk_free.lock", &fl, parent);
	res("fcntl.child.setlk_free", fcntl(fd, F_SETLK, &fl));
	close(fd);
}

/* fcntl F_SETLK/F_GETLK between a parent and a forked child. */
static void sc_posix_lock(void)
{
	struct flock fl;
	pid_t child, parent = getpid();
	int fd, status;

	put_file("pl_file", "posix locks");
	fd = res_ok("fcntl.open", open("pl_file", O_RDWR | O_CLOEXEC));
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = 0;
	fl.l_len = 100;
	res("fcntl.setlk", fcntl(fd, F_SETLK, &fl));
	/* The child prints too: flush so the buffer is not written twice, and
	 * wait for it so the lines come in a fixed order. */
	fflush(stdout);
	child = fork();
	if (child == 0) {
		posix_lock_child(parent);
		fflush(stdout);
		_exit(0);
	}
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status))
		say("fcntl.child", "failed");
	fl.l_type = F_UNLCK;
	res("fcntl.unlock", fcntl(fd, F_SETLK, &fl));
	/* OFD locks conflict between two descriptions in one process. */
	{
		int fd2 = open("pl_file", O_RDWR | O_CLOEXEC);

		fl.l_type = F_WRLCK;
		fl.l_pid = 0;
		res("fcntl.ofd_setlk", fcntl(fd, F_OFD_SETLK, &fl));
		fl.l_pid = 0;
		res("fcntl.ofd_conflict", fcntl(fd2, F_OFD_SETLK, &fl));
		close(fd2);
	}
	close(fd);
}

/* access(2) as the caller (root in the test suite, so mostly X_OK counts). */
static void sc_access(void)
{
	put_file("ac_file", "a");
	res("access.chmod", chmod("ac_file", 0644));
	res("access.f_ok", access("ac_file", F_OK));
	res("access.r_ok", access("ac_file", R_OK));
	res("access.w_ok", access("ac_file", W_OK));
	res("access.x_ok", access("ac_file", X_OK));
	res("access.chmod_0444", chmod("ac_file", 0444));
	res("access.w_ok_0444", access("ac_file", W_OK));
	res("access.chmod_0744", chmod("ac_file", 0744));
	res("access.x_ok_0744", access("ac_file", X_OK));
	res("access.missing", access("ac_missing", F_OK));
	res("access.notdir", access("ac_file/x", F_OK));
	res("access.dir_x", access(".", X_OK | W_OK | R_OK));
	res("access.eaccess", faccessat(AT_FDCWD, "ac_file", R_OK | W_OK, AT_EACCESS));
	res("access.symlink", symlink("ac_missing", "ac_link"));
	res("access.dangling", access("ac_link", F_OK));
	res("access.dangling_nofollow", faccessat(AT_FDCWD, "ac_link", F_OK, AT_SYMLINK_NOFOLLOW));
}

/* NAME_MAX: 255 bytes work, 256 are refused by every call. */
static void sc_names(void)
{
	char n255[257], n256[258];
	int fd;

	memset(n255, 'n', 255);
	n255[255] = '\0';
	memset(n256, 'm', 256);
	n256[256] = '\0';
	fd = res_ok("name255.create", open(n255, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
	res("name255.write", write(fd, "255", 3));
	close(fd);
	show_lstat("name255.lstat", n255);
	show_data("name255.data", n255);
	res("name255.rename", rename(n255, "nm_short"));
	res("name255.rename_back", rename("nm_short", n255));
	res_ok("name256.create", open(n256, O_RDWR | O_CREAT | O_CLOEXEC, 0644));
	show_lstat("name256.lstat", n256);
	res("name256.mkdir", mkdir(n256, 0755));
	res("name256.symlink", symlink("x", n256));
	res("name256.link", link(n255, n256));
	res("name256.rename", rename(n255, n256));
	res("name256.mkfifo", mkfifo(n256, 0644));
	res("name256.unlink", unlink(n256));
	res("name255.unlink", unlink(n255));
	res("name255.mkdir", mkdir(n255, 0755));
	res("name255.rmdir", rmdir(n255));
}

/* A path near PATH_MAX, built with *at calls relative to directory fds. */
static void sc_deep(void)
{
	static char path[PATH_MAX + 512];
	char comp[251];
	size_t len = 0;
	int depth = 0, dfd, next, fd;

	dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* 250-byte components until one more would pass ~3900 bytes. */
	while (len + 251 + 10 < 3900) {
		memset(comp, 'a' + depth % 26, 250);
		comp[250] = '\0';
		if (mkdirat(dfd, comp, 0755) < 0) {
			say("deep.mkdirat", "depth=%d errno=%s", depth, errname(errno));
			break;
		}
		next = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (next < 0) {
			say("deep.openat_dir", "depth=%d errno=%s", depth, errname(errno));
			break;
		}
		close(dfd);
		dfd = next;
		len += (size_t)snprintf(path + len, sizeof(path) - len, "%s%s", len ? "/" : "",
					comp);
		depth++;
	}
	say("deep.dirs", "depth=%d len=%zu", depth, len);
	fd = res_ok("deep.create",
		    openat(dfd, "deep_file", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
	res("deep.write", write(fd, "deep data", 9));
	close(fd);
	len += (size_t)snprintf(path + len, sizeof(path) - len, "/deep_file");
	say("deep.path", "len=%zu", len);
	/* The whole relative path in one string is still shorter than PATH_MAX. */
	show_data("deep.read_by_path", path);
	show_lstat("deep.lstat_by_path", path);
	fd = openat(dfd, "deep_file", O_RDONLY | O_CLOEXEC);
	show_data_fd("deep.read_by_fd", fd);
	if (fd >= 0)
		close(fd);
	/* One more level makes the string too long, though *at calls still work. */
	memset(comp, 'z', 250);
	comp[250] = '\0';
	res("deep.mkdirat_more", mkdirat(dfd, comp, 0755));
	len -= strlen("/deep_file");
	len += (size_t)snprintf(path + len, sizeof(path) - len, "/%s", comp);
	/* The kernel refuses the string before looking at any name in it, so
	 * the last components need not exist. */
	while (len < PATH_MAX)
		len += (size_t)snprintf(path + len, sizeof(path) - len, "/%.99s", comp);
	say("deep.long_path", "len=%zu", len);
	res_ok("deep.create_too_long", open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644));
	fd = res_ok("deep.create_at", openat(dfd, "z_at", O_RDWR | O_CREAT | O_CLOEXEC, 0600));
	if (fd >= 0)
		close(fd);
	close(dfd);
}

/* O_DIRECT with aligned buffers, offsets and sizes. */
static void sc_odirect(void)
{
	void *buf = NULL;
	int fd;

	if (posix_memalign(&buf, 4096, 8192) != 0) {
		say("odirect.memalign", "failed");
		return;
	}
	pattern(buf, 8192, 0, 13);
	fd = res_ok("odirect.open",
		    open("od_file", O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644));
	res("odirect.pwrite", pwrite(fd, buf, 8192, 0));
	res("odirect.pwrite_4k", pwrite(fd, buf, 4096, 16384));
	memset(buf, 0, 8192);
	res("odirect.pread", pread(fd, buf, 4096, 4096));
	say("odirect.pread.data", "fnv=%016llx", (unsigned long long)fnv1a(FNV_START, buf, 4096));
	res("odirect.pread_hole", pread(fd, buf, 4096, 8192));
	say("odirect.pread_hole.data", "fnv=%016llx",
	    (unsigned long long)fnv1a(FNV_START, buf, 4096));
	res("odirect.pread_eof", pread(fd, buf, 4096, 20480));
	show_fstat("odirect.fstat", fd);
	close(fd);
	free(buf);
	/* Buffered readers see what was written directly. */
	show_data("odirect.data", "od_file");
}

/* readdir of 1000 entries (and again after removing half of them). */
static void show_listing(const char *step, const char *dir)
{
	static char *names[1100];
	size_t count = 0, dups = 0, reg = 0, dirs = 0, other = 0;
	uint64_t h = FNV_START;
	struct dirent *de;
	DIR *dp = opendir(dir);

	if (!dp) {
		say(step, "errno=%s", errname(errno));
		return;
	}
	errno = 0;
	while ((de = readdir(dp)) != NULL && count < 1100) {
		names[count++] = strdup(de->d_name);
		reg += de->d_type == DT_REG;
		dirs += de->d_type == DT_DIR;
		other += de->d_type != DT_REG && de->d_type != DT_DIR;
	}
	if (errno)
		say(step, "readdir errno=%s", errname(errno));
	closedir(dp);
	qsort(names, count, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < count; i++) {
		if (i && strcmp(names[i], names[i - 1]) == 0)
			dups++;
		h = fnv1a(h, names[i], strlen(names[i]) + 1);
	}
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	say(step, "count=%zu dups=%zu reg=%zu dir=%zu other=%zu fnv=%016llx", count, dups, reg,
	    dirs, other, (unsigned long long)h);
}

/* telldir/seekdir: a saved position leads back to the same entry. */
static void show_seekdir(const char *step, const char *dir)
{
	char at_mark[256] = "", after_seek[256] = "";
	struct dirent *de;
	long mark = -1;
	DIR *dp = opendir(dir);

	if (!dp) {
		say(step, "errno=%s", errname(errno));
		return;
	}
	for (int i = 0; i < 500 && (de = readdir(dp)) != NULL; i++)
		;
	mark = telldir(dp);
	de = readdir(dp);
	if (de)
		snprintf(at_mark, sizeof(at_mark), "%s", de->d_name);
	while (readdir(dp) != NULL)
		;
	seekdir(dp, mark);
	de = readdir(dp);
	if (de)
		snprintf(after_seek, sizeof(after_seek), "%s", de->d_name);
	rewinddir(dp);
	de = readdir(dp);
	say(step, "%s rewind=%s",
	    at_mark[0] && strcmp(at_mark, after_seek) == 0 ? "same" : "different",
	    de ? "ok" : "empty");
	closedir(dp);
}

static void sc_readdir(void)
{
	char name[32];
	int dfd, fd, bad = 0;

	res("readdir.mkdir", mkdir("rd", 0755));
	dfd = open("rd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "entry-%04d", i);
		if (i % 10 == 0) {
			bad += mkdirat(dfd, name, 0755) < 0;
		} else {
			fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			bad += fd < 0;
			if (fd >= 0)
				close(fd);
		}
	}
	say("readdir.create", "failed=%d", bad);
	show_listing("readdir.list", "rd");
	show_seekdir("readdir.seekdir", "rd");
	bad = 0;
	for (int i = 0; i < 1000; i += 2) {
		snprintf(name, sizeof(name), "entry-%04d", i);
		bad += unlinkat(dfd, name, i % 10 == 0 ? AT_REMOVEDIR : 0) < 0;
	}
	say("readdir.remove_half", "failed=%d", bad);
	show_listing("readdir.list_half", "rd");
	close(dfd);
	res("readdir.mkdir_empty", mkdir("rd_empty", 0755));
	show_listing("readdir.list_empty", "rd_empty");
	show_listing("readdir.list_file", "rd/entry-0001");
	show_listing("readdir.list_missing", "rd_missing");
}

/* st_ino stays the same across renames (compared within one run). */
static void sc_ino_rename(void)
{
	struct stat st, dst;

	put_file("in_file", "ino");
	lstat("in_file", &st);
	res("ino.rename", rename("in_file", "in_renamed"));
	same_ino("ino.after_rename", &st, "in_renamed");
	res("ino.mkdir", mkdir("in_dir", 0755));
	res("ino.rename_across", rename("in_renamed", "in_dir/in_file"));
	same_ino("ino.after_rename_across", &st, "in_dir/in_file");
	put_file("in_victim", "victim");
	res("ino.rename_over", rename("in_dir/in_file", "in_victim"));
	same_ino("ino.after_rename_over", &st, "in_victim");
	lstat("in_dir", &dst);
	res("ino.rename_dir", rename("in_dir", "in_dir2"));
	same_ino("ino.after_rename_dir", &dst, "in_dir2");
	put_file("in_x", "x");
	lstat("in_x", &st);
	res("ino.exchange", renameat2(AT_FDCWD, "in_x", AT_FDCWD, "in_victim", RENAME_EXCHANGE));
	same_ino("ino.after_exchange", &st, "in_victim");
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--lstat") == 0) {
		show_lstat("lstat", argv[2]);
		return 0;
	}
	/* O_TMPFILE apart: libfuse 3.14 has no tmpfile operation, so the
	 * mount answers EOPNOTSUPP (a known gap, see hybridfs(8)); the script
	 * checks that answer on its own, and the plain directory's with it. */
	if (argc == 3 && strcmp(argv[1], "--tmpfile") == 0) {
		if (chdir(argv[2]) < 0)
			return 1;
		sc_tmpfile();
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: %s ROOT | --lstat PATH | --tmpfile ROOT\n", argv[0]);
		return 2;
	}
	if (chdir(argv[1]) < 0) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}
	umask(022);
	sc_create();
	sc_umask();
	sc_append();
	sc_rw();
	sc_truncate();
	sc_chmod();
	sc_utimens();
	sc_mkdir();
	sc_unlink_open();
	sc_read_write_unlink();
	sc_rename();
	sc_link();
	sc_symlink();
	sc_symlink_hardlink();
	sc_special();
	sc_statfs();
	sc_mmap();
	sc_fsync();
	sc_fallocate();
	sc_seek();
	sc_copy_range();
	sc_xattr();
	sc_flock();
	sc_posix_lock();
	sc_access();
	sc_names();
	sc_deep();
	sc_odirect();
	sc_readdir();
	sc_ino_rename();
	return fflush(stdout) == 0 ? 0 : 1;
}
