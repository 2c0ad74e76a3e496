/* reserve.c - what the write-back cache's reservation at home costs a
 * write (issue 8: cache.h's reserve, fallocate with FALLOC_FL_KEEP_SIZE
 * before a write-back write is taken): the microseconds of one call on a
 * 4 KiB range already allocated (a rewrite) and on a new one past the end
 * (an append), on the filesystem of DIR.
 *
 *   cc -O2 -o reserve bench/reserve.c && ./reserve [DIR] [CALLS]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/var/tmp";
	long calls = argc > 2 ? atol(argv[2]) : 200000;
	char path[4096], block[4096];
	double t0;
	int fd;

	snprintf(path, sizeof(path), "%s/hybridfs-reserve.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0 || calls <= 0) {
		fprintf(stderr, "reserve: %s: %s\n", path, fd < 0 ? strerror(errno) : "bad CALLS");
		return 1;
	}
	memset(block, 1, sizeof(block));
	for (int i = 0; i < 1024; i++)
		if (pwrite(fd, block, sizeof(block), (off_t)i * 4096) != (ssize_t)sizeof(block)) {
			perror("reserve: pwrite");
			return 1;
		}
	fsync(fd);
	t0 = now_us();
	for (long i = 0; i < calls; i++)
		if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)(i % 1024) * 4096, 4096) < 0) {
			perror("reserve: fallocate");
			return 1;
		}
	printf("allocated range: %.2f us a call\n", (now_us() - t0) / (double)calls);
	t0 = now_us();
	for (long i = 0; i < calls; i++)
		if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)(1024 + i) * 4096, 4096) < 0) {
			perror("reserve: fallocate");
			return 1;
		}
	printf("new block past the end: %.2f us a call\n", (now_us() - t0) / (double)calls);
	unlink(path);
	close(fd);
	return 0;
}
