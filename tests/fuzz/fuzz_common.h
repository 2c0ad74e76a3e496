/* fuzz_common.h - what the file-based fuzz targets share: a private
 * temporary folder (on tmpfs when there is one, since the stores fsync),
 * removed at exit, and writing an input into a file there.
 *
 * Header-only (static functions) so that each target stays one source
 * file plus the sources it fuzzes. Not thread-safe; libFuzzer runs one
 * input at a time.
 */
#ifndef HYBRIDFS_FUZZ_COMMON_H
#define HYBRIDFS_FUZZ_COMMON_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_dir[256];

static void fuzz_remove_dir(void)
{
	if (fuzz_dir[0])
		rmdir(fuzz_dir); /* the targets unlink their files after each input */
}

/* The folder, made on first use: $HY_FUZZ_TMPDIR, else /dev/shm when it is
 * a writable folder, else $TMPDIR or /tmp. Aborts when none can be made: a
 * target that cannot run must not look like one that found nothing. */
static const char *fuzz_tmpdir(void)
{
	const char *base = getenv("HY_FUZZ_TMPDIR");

	if (fuzz_dir[0])
		return fuzz_dir;
	if (!base || !*base)
		base = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/hybridfs-fuzz.XXXXXX", base);
	if (!mkdtemp(fuzz_dir)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(fuzz_remove_dir);
	return fuzz_dir;
}

/* Writes @size bytes of @data as the whole file @path (made or cut):
 * 0 or -1. */
static int fuzz_write_file(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < size) {
		ssize_t n = write(fd, (const char *)data + done, size - done);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	return close(fd);
}

#endif
