/*
 * hy-crash.c - the writer and the checker of crash.sh: what an fsync
 * promised must survive a kill -9 of the daemon.
 *
 *   hy-crash run --seed N --files K MOUNTDIR REFDIR
 *	Opens K files f0..f(K-1) in MOUNTDIR (made if missing), takes what
 *	they hold now as the reference and fsyncs them; then, forever (until
 *	killed), in rounds: picks a file, makes 1..8 random writes to it
 *	(offsets anywhere in the first 1.5 MiB, sub-4K and unaligned ones
 *	among them, sizes 1 B .. 64 KiB), fsyncs it and records what it now
 *	holds as synced. It keeps, in REFDIR (outside the mount):
 *	  fI.synced   the file's content as of its last successful fsync
 *		      (written to a temporary name, fsync'd, renamed)
 *	  fI.log      each write since then: a record appended before the
 *		      pwrite is issued, so a write that reached the mount is
 *		      always logged; emptied once the next .synced is in place
 *	  fsyncs      how many rounds have ended with an fsync (crash.sh
 *		      polls it to pick the moment of the kill)
 *	Only the file of the current round has a non-empty log.
 *	With --kill PID --after N it sends SIGKILL to PID (the daemon) once
 *	N rounds have ended with an fsync: at once, or after the writes of
 *	one more round (which the seed picks), and exits 0. The kill comes
 *	from here so that its moment is exact, not a matter of polling.
 *
 *   hy-crash once --seed N --files K --kill PID MOUNTDIR REFDIR
 *	Makes K new files n0..n(K-1) in MOUNTDIR, sizes each (ftruncate) and
 *	writes it over (64 KiB and an unaligned tail of random bytes, a copy
 *	first in REFDIR/nI.synced) and fsyncs it, then sends SIGKILL to PID
 *	at once: whatever the daemon keeps about a file must be durable by
 *	the time its fsync returns.
 *
 *   hy-crash append --seed N --kill PID MOUNTDIR REFDIR
 *	Makes f0 anew in MOUNTDIR with a few KiB, fsyncs it (REFDIR/f0.synced),
 *	then appends 48 chunks of random unaligned sizes to it, each logged
 *	first in REFDIR/f0.log, with no fsync, and sends SIGKILL to PID at
 *	once. `check --files 1` then finds the synced size, or appended data
 *	after it: a size that grew at home before the data was there reads
 *	as zeros where a write put data, and fails.
 *
 *   hy-crash check --files K MOUNTDIR REFDIR
 *	After the crash and a remount: a file with an empty log must equal
 *	its .synced copy exactly; in a file with a log, every byte must be
 *	the synced byte or the byte of one of the logged writes at that
 *	offset, and the size from the synced one up to the end of the
 *	furthest logged write. Past the synced size a zero is allowed only in
 *	a hole: where no logged write put data, or where a write that began
 *	beyond it came before every write that covers it. Prints each violation
 *	(the first few per file) and exits 1 if there was one; 0 otherwise.
 *	Says how many files were exact and how many mixed.
 *
 * Exit status: 0 fine, 1 a check failed or a mount call failed (run: a
 * failure after the daemon was killed is expected; crash.sh ignores it),
 * 2 usage, 99 the reference folder failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES 16
#define SPAN	  (1536 * 1024) /* offsets of writes start below this */
#define MAX_WRITE (64 * 1024)
#define MAX_SIZE  (SPAN + MAX_WRITE)
#define LOG_MAGIC 0x48594352u /* "HYCR" */

/* One record of fI.log, followed by len bytes of data. */
struct log_rec {
	uint64_t off;
	uint32_t len;
	uint32_t magic;
};

static uint64_t rng;

static uint64_t next_rand(void)
{
	/* xorshift64*: a fixed sequence for a seed */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static uint64_t below(uint64_t n)
{
	return next_rand() % n;
}

static void die_ref(const char *what, const char *path)
{
	fprintf(stderr, "hy-crash: %s \"%s\": %s\n", what, path, strerror(errno));
	exit(99);
}

/* Writes all of @buf at @off; -1 with errno on failure. */
static int write_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* Reads up to @max bytes of @path into @buf; the size read, or -1. */
static ssize_t read_file(const char *path, unsigned char *buf, size_t max)
{
	int fd = open(path, O_RDONLY);
	size_t got = 0;

	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t n = pread(fd, buf + got, max - got, (off_t)got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (n == 0 || got + (size_t)n == max) {
			got += (size_t)n;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	return (ssize_t)got;
}

/* Replaces @path with @len bytes of @buf durably: a temporary file,
 * fsync'd, renamed over it, and the folder fsync'd. */
static void put_durable(const char *refdir, const char *path, const void *buf, size_t len)
{
	char tmp[4096];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die_ref("cannot make", tmp);
	if (write_all(fd, buf, len, 0) < 0 || fsync(fd) < 0)
		die_ref("cannot write", tmp);
	close(fd);
	if (rename(tmp, path) < 0)
		die_ref("cannot rename", tmp);
	fd = open(refdir, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Every buffer lives until the process ends (it returns from main right
 * after it killed the daemon, or on the first failure, from many places):
 * they are kept here and freed at exit, so the sanitizer pass sees no
 * leak. */
static void *owned[2 * MAX_FILES + 8];
static size_t nowned;

static void free_owned(void)
{
	while (nowned)
		free(owned[--nowned]);
}

static void *own(void *p)
{
	if (p && nowned < sizeof(owned) / sizeof(owned[0])) {
		if (nowned == 0)
			atexit(free_owned);
		owned[nowned++] = p;
	}
	return p;
}

struct file {
	char mnt_path[4096], synced[4096], log[4096];
	int fd, log_fd;
	unsigned char *ref; /* what the file holds after every write so far */
	size_t size;
};

static int run(uint64_t seed, int nfiles, const char *mnt, const char *refdir, pid_t victim,
	       uint64_t kill_after)
{
	struct file files[MAX_FILES];
	unsigned char *data = own(malloc(MAX_WRITE));
	char count_path[4096];
	uint64_t fsyncs = 0;

	if (!data)
		return 99;
	rng = seed * 0x9E3779B97F4A7C15ull + 1;
	snprintf(count_path, sizeof(count_path), "%s/fsyncs", refdir);
	for (int i = 0; i < nfiles; i++) {
		struct file *f = &files[i];
		ssize_t n;

		snprintf(f->mnt_path, sizeof(f->mnt_path), "%s/f%d", mnt, i);
		snprintf(f->synced, sizeof(f->synced), "%s/f%d.synced", refdir, i);
		snprintf(f->log, sizeof(f->log), "%s/f%d.log", refdir, i);
		f->ref = own(calloc(1, MAX_SIZE));
		if (!f->ref)
			return 99;
		f->fd = open(f->mnt_path, O_RDWR | O_CREAT, 0644);
		if (f->fd < 0) {
			fprintf(stderr, "hy-crash: open \"%s\": %s\n", f->mnt_path,
				strerror(errno));
			return 1;
		}
		n = read_file(f->mnt_path, f->ref, MAX_SIZE);
		if (n < 0) {
			fprintf(stderr, "hy-crash: read \"%s\": %s\n", f->mnt_path,
				strerror(errno));
			return 1;
		}
		f->size = (size_t)n;
		if (fsync(f->fd) < 0) {
			fprintf(stderr, "hy-crash: fsync \"%s\": %s\n", f->mnt_path,
				strerror(errno));
			return 1;
		}
		put_durable(refdir, f->synced, f->ref, f->size);
		f->log_fd = open(f->log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		if (f->log_fd < 0)
			die_ref("cannot make", f->log);
	}
	put_durable(refdir, count_path, "0\n", 2);

	for (;;) {
		struct file *f = &files[below((uint64_t)nfiles)];
		int writes = 1 + (int)below(8);
		char num[32];
		/* the round after the last fsync asked for: the kill comes
		 * right away, or after its writes, before its fsync */
		bool last = victim > 0 && fsyncs == kill_after;

		if (last && below(2) == 0)
			writes = 0;

		for (int w = 0; w < writes; w++) {
			struct log_rec rec;
			uint64_t off, len;

			len = below(3) == 0 ? 1 + below(4095) : 1 + below(MAX_WRITE);
			off = below(SPAN);
			if (below(2) == 0)
				off &= ~(uint64_t)4095;
			for (uint64_t k = 0; k < len; k++)
				data[k] = (unsigned char)next_rand();
			rec = (struct log_rec){
				.off = off, .len = (uint32_t)len, .magic = LOG_MAGIC};
			/* logged before the mount sees it: kill -9 of this
			 * process cannot lose it (the kernel keeps the page) */
			if (write(f->log_fd, &rec, sizeof(rec)) != (ssize_t)sizeof(rec) ||
			    write(f->log_fd, data, len) != (ssize_t)len)
				die_ref("cannot append to", f->log);
			if (write_all(f->fd, data, len, (off_t)off) < 0) {
				fprintf(stderr,
					"hy-crash: pwrite \"%s\" off %" PRIu64 " len %" PRIu64
					": %s\n",
					f->mnt_path, off, len, strerror(errno));
				return 1;
			}
			memcpy(f->ref + off, data, len);
			if (off + len > f->size)
				f->size = off + len;
		}
		if (last) {
			printf("hy-crash: kill -9 of the daemon (pid %ld) after %" PRIu64
			       " fsyncs and %d writes\n",
			       (long)victim, fsyncs, writes);
			if (kill(victim, SIGKILL) < 0) {
				fprintf(stderr, "hy-crash: kill %ld: %s\n", (long)victim,
					strerror(errno));
				return 1;
			}
			return 0;
		}
		if (fsync(f->fd) < 0) {
			fprintf(stderr, "hy-crash: fsync \"%s\": %s\n", f->mnt_path,
				strerror(errno));
			return 1;
		}
		put_durable(refdir, f->synced, f->ref, f->size);
		if (ftruncate(f->log_fd, 0) < 0)
			die_ref("cannot empty", f->log);
		fsyncs++;
		snprintf(num, sizeof(num), "%" PRIu64 "\n", fsyncs);
		put_durable(refdir, count_path, num, strlen(num));
		/* now and then a close and a reopen: the last close of a
		 * file queues its dirty blocks for the cleaner */
		if (below(8) == 0) {
			close(f->fd);
			f->fd = open(f->mnt_path, O_RDWR);
			if (f->fd < 0) {
				fprintf(stderr, "hy-crash: reopen \"%s\": %s\n", f->mnt_path,
					strerror(errno));
				return 1;
			}
		}
	}
}

/* Whether offset @o past the synced size may read as zero: no logged
 * write covers it, or one that began past it came before the first that
 * covers it (a sparse write made the hole, which a later write had not
 * filled at the crash). */
static bool hole_before_data(const struct log_rec *recs, size_t nrec, uint64_t o)
{
	for (size_t r = 0; r < nrec; r++) {
		if (recs[r].off > o)
			return true;
		if (o < recs[r].off + recs[r].len)
			return false;
	}
	return true;
}

static int check(int nfiles, const char *mnt, const char *refdir)
{
	unsigned char *synced = own(malloc(MAX_SIZE)), *actual = own(malloc(MAX_SIZE + 1));
	unsigned char *logbuf = own(malloc(64u * 1024 * 1024));
	int bad_files = 0, exact = 0, mixed = 0;

	if (!synced || !actual || !logbuf)
		return 99;
	for (int i = 0; i < nfiles; i++) {
		char path[4096];
		ssize_t ssize, asize, lsize;
		size_t nrec = 0, pos = 0;
		struct log_rec recs[1024];
		const unsigned char *rdata[1024];
		uint64_t max_end = 0;
		int errors = 0;
		bool size_ok;

		snprintf(path, sizeof(path), "%s/f%d.synced", refdir, i);
		ssize = read_file(path, synced, MAX_SIZE);
		if (ssize < 0)
			die_ref("cannot read", path);
		snprintf(path, sizeof(path), "%s/f%d.log", refdir, i);
		lsize = read_file(path, logbuf, 64u * 1024 * 1024);
		if (lsize < 0)
			die_ref("cannot read", path);
		/* a record cut short by the kill of the writer was never
		 * written to the mount: drop it */
		while (pos + sizeof(struct log_rec) <= (size_t)lsize && nrec < 1024) {
			struct log_rec r;
			memcpy(&r, logbuf + pos, sizeof(r));
			if (r.magic != LOG_MAGIC || pos + sizeof(r) + r.len > (size_t)lsize)
				break;
			rdata[nrec] = logbuf + pos + sizeof(r);
			recs[nrec++] = r;
			if (r.off + r.len > max_end)
				max_end = r.off + r.len;
			pos += sizeof(r) + r.len;
		}
		snprintf(path, sizeof(path), "%s/f%d", mnt, i);
		asize = read_file(path, actual, MAX_SIZE + 1);
		if (asize < 0) {
			printf("f%d: cannot read through the mount: %s\n", i, strerror(errno));
			bad_files++;
			continue;
		}
		/* the kernel may split a write: any size from the synced one
		 * up to the end of the furthest logged write */
		size_ok = asize == ssize || (asize > ssize && (uint64_t)asize <= max_end);
		if (!size_ok) {
			printf("f%d: size %zd, synced size %zd, %zu unsynced writes ending at most "
			       "at %" PRIu64 "%s\n",
			       i, asize, ssize, nrec, max_end,
			       asize > ssize && asize % 512 == 0 && asize - ssize < 512
				       ? " (the synced size rounded up to a 512-byte sector)"
				       : "");
			errors++;
		}
		for (ssize_t o = 0; o < asize; o++) {
			unsigned char want = o < ssize ? synced[o] : 0;
			bool ok = actual[o] == want;

			/* past the synced size a zero is a hole only where a write
			 * that began beyond it came before every write of it: a
			 * size that ran ahead of the data it covers is not one */
			if (ok && o >= ssize && !hole_before_data(recs, nrec, (uint64_t)o))
				ok = false;

			for (size_t r = nrec; r-- > 0 && !ok;) {
				const struct log_rec *rec = &recs[r];
				if ((uint64_t)o >= rec->off && (uint64_t)o < rec->off + rec->len &&
				    rdata[r][o - (ssize_t)rec->off] == actual[o])
					ok = true;
			}
			if (ok)
				continue;
			if (errors < 5) {
				ssize_t end = o;
				while (end < asize && end - o < 1 << 20 &&
				       (end < ssize ? actual[end] != synced[end]
						    : actual[end] == 0 &&
							      !hole_before_data(recs, nrec,
										(uint64_t)end)))
					end++;
				printf("f%d: offset %zd: byte %02x, synced %02x (%s); %zu unsynced "
				       "writes, none wrote it; %zd bytes differ from the synced "
				       "content from there\n",
				       i, o, actual[o], want,
				       o < ssize ? "in the synced size"
						 : "past the synced size, where a write put data "
						   "before any write beyond it: zeros the size "
						   "ran ahead of",
				       nrec, end - o);
			}
			errors++;
		}
		if (errors) {
			printf("f%d: %d wrong bytes or sizes (synced size %zd, size %zd)\n", i,
			       errors, ssize, asize);
			bad_files++;
		} else if (nrec == 0) {
			exact++;
		} else {
			mixed++;
		}
	}
	printf("hy-crash: %d files equal their synced copy, %d hold synced and later bytes, "
	       "%d wrong\n",
	       exact, mixed, bad_files);
	return bad_files ? 1 : 0;
}

/* once: new files written, each fsync'd, then the kill at once. The
 * copies are made first, so nothing slows the mount's part down. */
static int once(uint64_t seed, int nfiles, const char *mnt, const char *refdir, pid_t victim)
{
	const size_t len = MAX_WRITE + 777; /* an unaligned end */
	unsigned char *data = own(malloc(len * (size_t)nfiles));
	int fds[MAX_FILES];

	if (!data)
		return 99;
	rng = seed * 0x9E3779B97F4A7C15ull + 1;
	for (int i = 0; i < nfiles; i++) {
		char path[4096];

		for (size_t k = 0; k < len; k++)
			data[i * len + k] = (unsigned char)next_rand();
		snprintf(path, sizeof(path), "%s/n%d.synced", refdir, i);
		put_durable(refdir, path, data + i * len, len);
	}
	for (int i = 0; i < nfiles; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/n%d", mnt, i);
		/* sized first (a write past the end goes home at once), then
		 * written over: the data is in dirty lines, journaled by the
		 * fsync, of a file the daemon has only just seen */
		fds[i] = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
		if (fds[i] < 0 || ftruncate(fds[i], (off_t)len) < 0 ||
		    write_all(fds[i], data + i * len, len, 0) < 0 || fsync(fds[i]) < 0) {
			fprintf(stderr, "hy-crash: \"%s\": %s\n", path, strerror(errno));
			return 1;
		}
	}
	if (kill(victim, SIGKILL) < 0) {
		fprintf(stderr, "hy-crash: kill %ld: %s\n", (long)victim, strerror(errno));
		return 1;
	}
	printf("hy-crash: kill -9 of the daemon (pid %ld) right after the fsync of %d new "
	       "files\n",
	       (long)victim, nfiles);
	return 0;
}

/* append: f0 made anew with a synced start, then appended to in chunks
 * of unaligned sizes, each logged first, with no fsync, and the kill at
 * once: `check --files 1` then wants the synced size or appended data
 * after it, never a size past data that is not there. */
static int append(uint64_t seed, const char *mnt, const char *refdir, pid_t victim)
{
	const int chunks = 48;
	unsigned char *data = own(malloc(MAX_WRITE));
	char path[4096], synced[4096], logp[4096];
	uint64_t size;
	int fd, log_fd;

	if (!data)
		return 99;
	rng = seed * 0x9E3779B97F4A7C15ull + 1;
	snprintf(path, sizeof(path), "%s/f0", mnt);
	snprintf(synced, sizeof(synced), "%s/f0.synced", refdir);
	snprintf(logp, sizeof(logp), "%s/f0.log", refdir);
	size = 1000 + below(8192);
	for (uint64_t k = 0; k < size; k++)
		data[k] = (unsigned char)next_rand();
	put_durable(refdir, synced, data, size);
	log_fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (log_fd < 0)
		die_ref("cannot make", logp);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write_all(fd, data, size, 0) < 0 || fsync(fd) < 0) {
		fprintf(stderr, "hy-crash: \"%s\": %s\n", path, strerror(errno));
		return 1;
	}
	for (int w = 0; w < chunks; w++) {
		uint64_t len = 1 + below(below(2) ? 4095 : 24000);
		struct log_rec rec = {.off = size, .len = (uint32_t)len, .magic = LOG_MAGIC};

		for (uint64_t k = 0; k < len; k++)
			data[k] = (unsigned char)(next_rand() | 1); /* no zero byte */
		if (write(log_fd, &rec, sizeof(rec)) != (ssize_t)sizeof(rec) ||
		    write(log_fd, data, len) != (ssize_t)len)
			die_ref("cannot append to", logp);
		if (write_all(fd, data, len, (off_t)size) < 0) {
			fprintf(stderr, "hy-crash: append to \"%s\" at %" PRIu64 ": %s\n", path,
				size, strerror(errno));
			return 1;
		}
		size += len;
	}
	if (kill(victim, SIGKILL) < 0) {
		fprintf(stderr, "hy-crash: kill %ld: %s\n", (long)victim, strerror(errno));
		return 1;
	}
	printf("hy-crash: kill -9 of the daemon (pid %ld) after %d appends with no fsync, "
	       "size %" PRIu64 "\n",
	       (long)victim, chunks, size);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: hy-crash run --seed N --files K [--kill PID --after N] MOUNTDIR "
			"REFDIR\n"
			"       hy-crash once --seed N --files K --kill PID MOUNTDIR REFDIR\n"
			"       hy-crash append --seed N --kill PID MOUNTDIR REFDIR\n"
			"       hy-crash check --files K MOUNTDIR REFDIR\n");
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t seed = 1, kill_after = 0;
	pid_t victim = 0;
	int nfiles = 4, i = 2;
	bool do_run, do_once = false, do_append = false;

	if (argc < 2)
		return usage();
	if (strcmp(argv[1], "run") == 0)
		do_run = true;
	else if (strcmp(argv[1], "once") == 0)
		do_run = do_once = true;
	else if (strcmp(argv[1], "append") == 0)
		do_run = do_append = true;
	else if (strcmp(argv[1], "check") == 0)
		do_run = false;
	else
		return usage();
	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (strcmp(argv[i], "--seed") == 0)
			seed = strtoull(argv[i + 1], NULL, 0);
		else if (strcmp(argv[i], "--files") == 0)
			nfiles = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--kill") == 0)
			victim = (pid_t)atol(argv[i + 1]);
		else if (strcmp(argv[i], "--after") == 0)
			kill_after = strtoull(argv[i + 1], NULL, 0);
		else
			return usage();
	}
	if (argc - i != 2 || nfiles < 1 || nfiles > MAX_FILES)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (do_append)
		return victim > 0 ? append(seed, argv[i], argv[i + 1], victim) : usage();
	if (do_once)
		return victim > 0 ? once(seed, nfiles, argv[i], argv[i + 1], victim) : usage();
	return do_run ? run(seed, nfiles, argv[i], argv[i + 1], victim, kill_after)
		      : check(nfiles, argv[i], argv[i + 1]);
}
