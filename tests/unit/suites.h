/* suites.h - the CUnit suites of hytest; each test_*.c adds one. */
#ifndef HYBRIDFS_TEST_SUITES_H
#define HYBRIDFS_TEST_SUITES_H

#include <stddef.h>
#include <sys/types.h>

#include <CUnit/CUnit.h>

int hy_test_add_options(void);
int hy_test_add_state(void);
int hy_test_add_inode(void);
int hy_test_add_engine(void);
int hy_test_add_ring(void);
int hy_test_add_control(void);
int hy_test_add_trace(void);
int hy_test_add_analyzer(void);
int hy_test_add_planner(void);
int hy_test_add_map(void);
int hy_test_add_map_journal(void);
int hy_test_add_bopt(void);
int hy_test_add_profiler(void);
int hy_test_add_reorganize(void);
int hy_test_add_heat(void);
int hy_test_add_policy(void);
int hy_test_add_cache_index(void);
int hy_test_add_cache_store(void);
int hy_test_add_cache(void);
int hy_test_add_classify(void);
int hy_test_add_category(void);
int hy_test_add_workload_policy(void);
int hy_test_add_trace_reader(void);
int hy_test_add_devmodel(void);
int hy_test_add_replay(void);
int hy_test_add_sim_borg(void);
int hy_test_add_stack(void);
int hy_test_add_fuzz_regress(void);
int hy_test_add_fault(void);
int hy_test_add_reca(void);
int hy_test_add_identity(void);
int hy_test_add_emulation(void);
int hy_test_add_rules(void);
int hy_test_add_metrics(void);
int hy_test_add_cli(void);
int hy_test_add_progress(void);
int hy_test_add_fuse_channel(void);
int hy_test_add_log(void);

/* A fresh temporary directory for one test; removed by hy_test_rmtree(). */
char *hy_test_tmpdir(void);
void hy_test_rmtree(const char *path);

/* "@dir/@name", malloc'd (NULL: out of memory). */
char *hy_test_path_in(const char *dir, const char *name);
/* All of @len bytes at @off of the file at @path, or -1. */
int hy_test_pread(const char *path, void *buf, size_t len, off_t off);
int hy_test_pwrite(const char *path, const void *buf, size_t len, off_t off);

/* mkfs.ext4's path, or NULL when it is not installed; a 4 MiB image file
 * (never a device) made an ext4 filesystem, mkfs's output in @log: 0 or
 * -1. For the tests that a store or BOPT refuses a filesystem. */
const char *hy_test_find_mkfs_ext4(void);
int hy_test_make_ext4(const char *mkfs, const char *image, const char *log);

#endif
