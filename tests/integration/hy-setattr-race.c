/* hy-setattr-race - the setattr race of issue 16, finding 11, bounded.
 *
 *   hy-setattr-race FILE DIR NAME OTHER VICTIM ITERATIONS
 *
 * FILE is NAME in DIR, reached through the mount; DIR is the backing
 * directory (the caller can write it), where OTHER is a symlink to
 * VICTIM, a file the caller does not own. A child swaps NAME and OTHER
 * in DIR with renameat2(RENAME_EXCHANGE) as fast as it can, while this
 * process changes FILE's mode through the mount (fchmod of a descriptor:
 * the kernel sends a SETATTR by node, which the daemon carries out).
 * If the daemon acts on the name instead of the object it checked, the
 * chmod lands on VICTIM through the symlink. Exits 1 as soon as VICTIM's
 * mode changed, 0 after ITERATIONS without, 2 on a setup error.
 *
 * ITERATIONS "once": no race, the order made certain instead: FILE is
 * opened, the names are swapped once at home, then one fchmod of FILE
 * (the kernel still knows the inode by its node and sends the SETATTR),
 * then the names are swapped back. The chmod must fail (ESTALE: the name
 * leads to another inode now) or land on FILE's inode, never on VICTIM. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

int main(int argc, char **argv)
{
	long iterations, failed = 0, i;
	struct stat st;
	mode_t before;
	int fd, dirfd, status, changed = 0;
	pid_t child;

	if (argc != 7) {
		fprintf(stderr, "usage: hy-setattr-race FILE DIR NAME OTHER VICTIM ITERATIONS\n");
		return 2;
	}
	iterations = strtol(argv[6], NULL, 10);
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	dirfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || dirfd < 0 || stat(argv[5], &st) < 0) {
		perror("hy-setattr-race: setup");
		return 2;
	}
	before = st.st_mode & 07777;
	if (strcmp(argv[6], "once") == 0) {
		int rc, err;

		if (syscall(SYS_renameat2, dirfd, argv[3], dirfd, argv[4], RENAME_EXCHANGE) < 0) {
			perror("hy-setattr-race: renameat2");
			return 2;
		}
		rc = fchmod(fd, 0646);
		err = errno;
		if (syscall(SYS_renameat2, dirfd, argv[3], dirfd, argv[4], RENAME_EXCHANGE) < 0) {
			perror("hy-setattr-race: renameat2 back");
			return 2;
		}
		if (stat(argv[5], &st) < 0) {
			perror("hy-setattr-race: stat");
			return 2;
		}
		printf("fchmod after the swap: %s; %s: mode %04o -> %04o\n",
		       rc < 0 ? strerror(err) : "done", argv[5], (unsigned)before,
		       (unsigned)(st.st_mode & 07777));
		return (st.st_mode & 07777) != before;
	}
	child = fork();
	if (child < 0) {
		perror("hy-setattr-race: fork");
		return 2;
	}
	if (child == 0) {
		for (;;)
			syscall(SYS_renameat2, dirfd, argv[3], dirfd, argv[4], RENAME_EXCHANGE);
	}
	for (i = 0; i < iterations && !changed; i++) {
		if (fchmod(fd, (i & 1) ? 0646 : 0644) < 0)
			failed++;
		if (stat(argv[5], &st) == 0 && (st.st_mode & 07777) != before)
			changed = 1;
	}
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	if (changed) {
		printf("%s: mode %04o -> %04o after %ld chmods of %s through the mount\n", argv[5],
		       (unsigned)before, (unsigned)(st.st_mode & 07777), i, argv[1]);
		return 1;
	}
	printf("%s: mode stayed %04o through %ld chmods (%ld refused while the name was "
	       "elsewhere)\n",
	       argv[5], (unsigned)before, i, failed);
	return 0;
}
