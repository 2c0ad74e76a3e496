/*
 * hytest.c - runs every CUnit suite. Exit status 0 when all pass, 1
 * otherwise (never a failure count: automake reads 77 and 99 specially).
 */
#define _XOPEN_SOURCE 700
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "hybridfs/log.h"
#include "suites.h"

char *hy_test_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *path;

	if (asprintf(&path, "%s/hytest.XXXXXX", base ? base : "/tmp") < 0)
		return NULL;
	if (!mkdtemp(path)) {
		free(path);
		return NULL;
	}
	return path;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

char *hy_test_path_in(const char *dir, const char *name)
{
	char *p;

	return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

int hy_test_pread(const char *path, void *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, buf, len, off);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

int hy_test_pwrite(const char *path, const void *buf, size_t len, off_t off)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pwrite(fd, buf, len, off);
	close(fd);
	return n == (ssize_t)len ? 0 : -1;
}

const char *hy_test_find_mkfs_ext4(void)
{
	static const char *const where[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4",
					    "/usr/bin/mkfs.ext4", NULL};

	for (int i = 0; where[i]; i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

int hy_test_make_ext4(const char *mkfs, const char *image, const char *log)
{
	int status, fd;
	pid_t pid;

	fd = open(image, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, 4 << 20) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (out >= 0) {
			dup2(out, 1);
			dup2(out, 2);
		}
		execl(mkfs, mkfs, "-q", "-F", image, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void hy_test_rmtree(const char *path)
{
	if (path && nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "hytest: cannot remove %s\n", path);
}

int main(void)
{
	unsigned failures;

	/* Expected errors would clutter the output; tests check the text. */
	hy_log_init(HY_LOG_STDERR, LOG_CRIT, "hytest");
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	if (hy_test_add_options() || hy_test_add_state() || hy_test_add_inode() ||
	    hy_test_add_engine() || hy_test_add_ring() || hy_test_add_control() ||
	    hy_test_add_trace() || hy_test_add_analyzer() || hy_test_add_planner() ||
	    hy_test_add_map() || hy_test_add_map_journal() || hy_test_add_bopt() ||
	    hy_test_add_profiler() || hy_test_add_reorganize() || hy_test_add_heat() ||
	    hy_test_add_policy() || hy_test_add_cache_index() || hy_test_add_cache_store() ||
	    hy_test_add_cache() || hy_test_add_classify() || hy_test_add_category() ||
	    hy_test_add_workload_policy() || hy_test_add_trace_reader() || hy_test_add_replay() ||
	    hy_test_add_devmodel() || hy_test_add_sim_borg() || hy_test_add_stack() ||
	    hy_test_add_fuzz_regress() || hy_test_add_fault() || hy_test_add_reca() ||
	    hy_test_add_identity() || hy_test_add_emulation() || hy_test_add_rules() ||
	    hy_test_add_metrics() || hy_test_add_cli() || hy_test_add_progress() ||
	    hy_test_add_fuse_channel() || hy_test_add_log()) {
		fprintf(stderr, "hytest: cannot register the suites\n");
		CU_cleanup_registry();
		return 1;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	if (getenv("HY_TEST_SUITE")) {
		/* one suite by name, for a quick run by hand */
		CU_pSuite only = CU_get_suite(getenv("HY_TEST_SUITE"));

		if (!only) {
			fprintf(stderr, "hytest: no suite \"%s\"\n", getenv("HY_TEST_SUITE"));
			CU_cleanup_registry();
			return 1;
		}
		CU_basic_run_suite(only);
	} else {
		CU_basic_run_tests();
	}
	failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	if (CU_get_number_of_tests_run() == 0)
		failures = 1; /* a run of nothing is a failure */
	CU_cleanup_registry();
	return failures ? 1 : 0;
}
