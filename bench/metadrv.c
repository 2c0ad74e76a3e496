/* metadrv.c - the small-file driver of bench/meta.sh and bench/peers.sh:
 * create (open O_CREAT|O_EXCL, write SIZE bytes, close), stat or unlink N
 * files f0000000... in DIR, one process per phase so that the page cache
 * can be dropped between phases; prints the phase's seconds
 * (CLOCK_MONOTONIC). Compiled by the scripts on the fly (cc -O2). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "metadrv: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	char path[4096], buf[65536];
	const char *mode, *dir;
	long n, i, size;
	double t0;

	if (argc < 4) {
		fprintf(stderr, "usage: metadrv create|stat|unlink DIR N [SIZE]\n");
		return 2;
	}
	mode = argv[1];
	dir = argv[2];
	n = atol(argv[3]);
	size = argc > 4 ? atol(argv[4]) : 0;
	if (size < 0 || size > (long)sizeof(buf))
		size = sizeof(buf);
	memset(buf, 'x', sizeof(buf));

	t0 = now();
	if (strcmp(mode, "create") == 0) {
		if (mkdir(dir, 0755) != 0)
			die("mkdir", dir);
		for (i = 0; i < n; i++) {
			int fd;

			snprintf(path, sizeof(path), "%s/f%07ld", dir, i);
			fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
			if (fd < 0)
				die("open", path);
			if (size > 0 && write(fd, buf, size) != size)
				die("write", path);
			if (close(fd) != 0)
				die("close", path);
		}
	} else if (strcmp(mode, "stat") == 0) {
		struct stat st;

		for (i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/f%07ld", dir, i);
			if (stat(path, &st) != 0)
				die("stat", path);
			if (st.st_size != size)
				fprintf(stderr, "metadrv: %s: size %lld, want %ld\n",
					path, (long long)st.st_size, size), exit(1);
		}
	} else if (strcmp(mode, "unlink") == 0) {
		for (i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/f%07ld", dir, i);
			if (unlink(path) != 0)
				die("unlink", path);
		}
		if (rmdir(dir) != 0)
			die("rmdir", dir);
	} else {
		fprintf(stderr, "metadrv: unknown mode %s\n", mode);
		return 2;
	}
	printf("%.4f\n", now() - t0);
	return 0;
}
