/*
 * hy-swapper.c - the hostile owner of a backing folder, for statefolder.sh:
 * exchanges two names in a folder over and over (renameat2 RENAME_EXCHANGE),
 * so that a path that was a folder a moment ago is now a symbolic link.
 *
 *   hy-swapper DIR NAME1 NAME2 SECONDS
 *
 * A missing name (the daemon has not made its state folder yet) is waited
 * for: the loop goes on. Stops after SECONDS, or when killed. Prints the
 * number of exchanges made.
 *
 * Exit status: 0 at the end of the time, 1 an error other than a missing
 * name, 2 a bad command line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long long swaps = 0;
	time_t end;
	int dir;

	if (argc != 5) {
		fprintf(stderr, "usage: hy-swapper DIR NAME1 NAME2 SECONDS\n");
		return 2;
	}
	dir = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		fprintf(stderr, "hy-swapper: \"%s\": %s\n", argv[1], strerror(errno));
		return 1;
	}
	end = time(NULL) + atoi(argv[4]);
	while (time(NULL) < end) {
		if (renameat2(dir, argv[2], dir, argv[3], RENAME_EXCHANGE) == 0)
			swaps++;
		else if (errno != ENOENT) {
			fprintf(stderr, "hy-swapper: renameat2: %s\n", strerror(errno));
			return 1;
		}
	}
	printf("%llu\n", swaps);
	return 0;
}
