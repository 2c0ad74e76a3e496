/* hy-deepdir - a directory chain deeper than any path (issue 16, finding 7).
 *
 *   hy-deepdir make DIR DEPTH SIBLINGS
 *	in DIR (the backing directory): the chain deep/d/d/.../d of DEPTH
 *	levels, made with mkdirat from the level above (no path would fit
 *	in PATH_MAX), and SIBLINGS folders s0, s1... beside it;
 *   hy-deepdir probe DIR DEPTH SIBLINGS
 *	in DIR (the mount): walks the chain down to its deepest level,
 *	keeping a descriptor of it, looks a name up in each sibling (so the
 *	daemon's bounded descriptor cache gives up those of the chain), then
 *	looks a name up in the deepest level, which the daemon must reach
 *	from the nearest level it still holds open. Prints the answer of
 *	that lookup ("ENOENT" is right) and exits 0 when it is ENOENT.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: hy-deepdir make|probe DIR DEPTH SIBLINGS\n");
	return 2;
}

/* Opens @depth levels of "d" down from @top (closed); -1 with a message. */
static int walk(int top, long depth, int make)
{
	int fd = top;

	for (long i = 0; i < depth; i++) {
		int next;

		if (make && mkdirat(fd, "d", 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "hy-deepdir: level %ld: mkdir: %s\n", i + 1,
				strerror(errno));
			close(fd);
			return -1;
		}
		next = openat(fd, "d", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			fprintf(stderr, "hy-deepdir: level %ld: open: %s\n", i + 1,
				strerror(errno));
			close(fd);
			return -1;
		}
		close(fd);
		fd = next;
	}
	return fd;
}

int main(int argc, char **argv)
{
	long depth, siblings;
	int root, top, deep, make;
	struct stat st;
	char name[64];

	if (argc != 5)
		return usage();
	make = strcmp(argv[1], "make") == 0;
	if (!make && strcmp(argv[1], "probe") != 0)
		return usage();
	depth = strtol(argv[3], NULL, 10);
	siblings = strtol(argv[4], NULL, 10);
	root = open(argv[2], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0 || depth <= 0 || siblings < 0) {
		fprintf(stderr, "hy-deepdir: %s: %s\n", argv[2],
			root < 0 ? strerror(errno) : "bad numbers");
		return 2;
	}
	if (make) {
		if (mkdirat(root, "deep", 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "hy-deepdir: %s/deep: %s\n", argv[2], strerror(errno));
			return 2;
		}
		for (long i = 0; i < siblings; i++) {
			snprintf(name, sizeof(name), "s%ld", i);
			if (mkdirat(root, name, 0755) < 0 && errno != EEXIST) {
				fprintf(stderr, "hy-deepdir: %s/%s: %s\n", argv[2], name,
					strerror(errno));
				return 2;
			}
		}
	}
	top = openat(root, "deep", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (top < 0) {
		fprintf(stderr, "hy-deepdir: %s/deep: %s\n", argv[2], strerror(errno));
		return 2;
	}
	deep = walk(top, depth, make);
	if (deep < 0)
		return 2;
	if (make)
		return 0;
	for (long i = 0; i < siblings; i++) {
		snprintf(name, sizeof(name), "s%ld/x", i);
		if (fstatat(root, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
			fprintf(stderr, "hy-deepdir: %s/%s: %s\n", argv[2], name,
				errno ? strerror(errno) : "exists");
			return 1;
		}
	}
	errno = 0;
	if (fstatat(deep, "nothere", &st, AT_SYMLINK_NOFOLLOW) == 0)
		errno = EEXIST;
	printf("%s\n", errno == ENOENT ? "ENOENT" : strerror(errno));
	return errno == ENOENT ? 0 : 1;
}
