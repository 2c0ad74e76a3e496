/* test_inode.c - the inode table: lookup counts, the bounded descriptor
 * cache, reaching inodes through (parent, name), and the unlink and rename
 * bookkeeping. Runs on a plain temporary directory: no mount needed. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hybridfs/inode.h"
#include "suites.h"

struct fixture {
	char *tmp;
	struct hy_inode_table *table;
};

static void fixture_up(struct fixture *f, size_t cap)
{
	int root_fd;

	f->tmp = hy_test_tmpdir();
	CU_ASSERT_PTR_NOT_NULL_FATAL(f->tmp);
	root_fd = open(f->tmp, O_PATH | O_DIRECTORY);
	CU_ASSERT_FATAL(root_fd >= 0);
	CU_ASSERT_EQUAL_FATAL(hy_inode_table_new(root_fd, cap, &f->table), 0);
}

static void fixture_down(struct fixture *f)
{
	hy_inode_table_free(f->table);
	hy_test_rmtree(f->tmp);
	free(f->tmp);
}

/* Looks @name up in @parent the way the daemon does: fstatat, then add. */
static struct hy_inode *lookup(struct fixture *f, struct hy_inode *parent, const char *name)
{
	struct hy_inode_ref ref;
	struct hy_inode *inode = NULL;
	struct stat st;

	if (hy_inode_pin(f->table, parent, true, &ref))
		return NULL;
	if (fstatat(ref.dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		hy_inode_add_lookup(f->table, parent, name, &st, -1, &inode);
	hy_inode_unpin(f->table, &ref);
	return inode;
}

static int stat_of(struct fixture *f, struct hy_inode *inode, struct stat *st)
{
	struct hy_inode_ref ref;
	int rc = hy_inode_pin(f->table, inode, false, &ref);

	if (rc)
		return rc;
	rc = fstatat(ref.dirfd, ref.name, st, ref.self ? AT_EMPTY_PATH : AT_SYMLINK_NOFOLLOW);
	rc = rc < 0 ? -errno : 0;
	hy_inode_unpin(f->table, &ref);
	return rc;
}

static void test_lookup_counts(void)
{
	struct fixture f;
	struct hy_inode *a, *again;
	char path[512];
	size_t before;

	fixture_up(&f, 16);
	snprintf(path, sizeof(path), "%s/a", f.tmp);
	fclose(fopen(path, "w"));
	before = f.table->count;
	a = lookup(&f, f.table->root, "a");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	again = lookup(&f, f.table->root, "a");
	CU_ASSERT_PTR_EQUAL(a, again);
	CU_ASSERT_EQUAL(a->nlookup, 2);
	CU_ASSERT_EQUAL(f.table->count, before + 1);
	hy_inode_forget(f.table, a, 1);
	CU_ASSERT_EQUAL(f.table->count, before + 1);
	hy_inode_forget(f.table, a, 1); /* frees it */
	CU_ASSERT_EQUAL(f.table->count, before);
	fixture_down(&f);
}

/* Two hard links are one entry, whatever name reached it. */
static void test_hard_links(void)
{
	struct fixture f;
	struct hy_inode *a, *b;
	char pa[512], pb[512];

	fixture_up(&f, 16);
	snprintf(pa, sizeof(pa), "%s/a", f.tmp);
	snprintf(pb, sizeof(pb), "%s/b", f.tmp);
	fclose(fopen(pa, "w"));
	CU_ASSERT_EQUAL(link(pa, pb), 0);
	a = lookup(&f, f.table->root, "a");
	b = lookup(&f, f.table->root, "b");
	CU_ASSERT_PTR_EQUAL(a, b);
	CU_ASSERT_STRING_EQUAL(b->name, "b"); /* the latest name is kept */
	fixture_down(&f);
}

/* A deep tree with a cache of 16 descriptors: every directory stays
 * reachable, the cache never grows past its cap, and evicted directories
 * are reopened through their parents. */
static void test_fd_cache_bounded(void)
{
	struct fixture f;
	struct hy_inode *dirs[64], *parent;
	struct stat st;
	char path[4096];
	size_t len;

	fixture_up(&f, 16);
	len = (size_t)snprintf(path, sizeof(path), "%s", f.tmp);
	parent = f.table->root;
	for (int i = 0; i < 64; i++) {
		char name[16];

		snprintf(name, sizeof(name), "d%02d", i);
		len += (size_t)snprintf(path + len, sizeof(path) - len, "/%s", name);
		CU_ASSERT_EQUAL_FATAL(mkdir(path, 0755), 0);
		dirs[i] = lookup(&f, parent, name);
		CU_ASSERT_PTR_NOT_NULL_FATAL(dirs[i]);
		parent = dirs[i];
		CU_ASSERT(f.table->fds_cached <= f.table->fd_cap);
	}
	CU_ASSERT(f.table->fd_evictions > 0);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 64; i++) {
			struct hy_inode_ref ref;

			CU_ASSERT_EQUAL(hy_inode_pin(f.table, dirs[i], true, &ref), 0);
			CU_ASSERT_TRUE(ref.self);
			CU_ASSERT_EQUAL(fstat(ref.dirfd, &st), 0);
			CU_ASSERT_EQUAL(st.st_ino, dirs[i]->ino);
			hy_inode_unpin(f.table, &ref);
			CU_ASSERT(f.table->fds_cached <= f.table->fd_cap);
		}
	CU_ASSERT(f.table->fd_reopens > 0);
	/* out of descriptors: the idle ones can be given back, in use ones not */
	{
		struct hy_inode_ref busy;
		size_t before = f.table->fds_cached;

		CU_ASSERT_EQUAL(hy_inode_pin(f.table, dirs[63], true, &busy), 0);
		CU_ASSERT_EQUAL(hy_inode_shed(f.table, 1000), before - 1);
		CU_ASSERT_EQUAL(f.table->fds_cached, 1);
		CU_ASSERT_EQUAL(dirs[63]->fd, busy.dirfd);
		hy_inode_unpin(f.table, &busy);
		CU_ASSERT_EQUAL(hy_inode_shed(f.table, 1000), 1);
		CU_ASSERT_EQUAL(f.table->fds_cached, 0);
	}
	fixture_down(&f);
}

/* A name changed behind the table's back is noticed, not followed. */
static void test_stale_name(void)
{
	struct fixture f;
	struct hy_inode *d;
	struct hy_inode_ref ref;
	char p1[512], p2[512];

	fixture_up(&f, 16);
	snprintf(p1, sizeof(p1), "%s/d", f.tmp);
	snprintf(p2, sizeof(p2), "%s/e", f.tmp);
	CU_ASSERT_EQUAL(mkdir(p1, 0755), 0);
	d = lookup(&f, f.table->root, "d");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(rename(p1, p2), 0);
	CU_ASSERT_EQUAL(mkdir(p1, 0755), 0); /* another inode under the old name */
	CU_ASSERT_EQUAL(hy_inode_pin(f.table, d, true, &ref), -ESTALE);
	fixture_down(&f);
}

/* An open-but-unlinked file stays reachable through its pinned descriptor. */
static void test_unlink_keeps_reachable(void)
{
	struct fixture f;
	struct hy_inode *a, *child;
	struct stat st;
	char path[512];

	fixture_up(&f, 16);
	snprintf(path, sizeof(path), "%s/a", f.tmp);
	fclose(fopen(path, "w"));
	a = lookup(&f, f.table->root, "a");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	child = hy_inode_pin_child(f.table, f.table->root, "a");
	CU_ASSERT_PTR_EQUAL(child, a);
	CU_ASSERT_EQUAL(unlink(path), 0);
	hy_inode_unpin_child(f.table, child, true);
	CU_ASSERT_PTR_NULL(a->name);
	CU_ASSERT_EQUAL(stat_of(&f, a, &st), 0);
	CU_ASSERT_EQUAL(st.st_nlink, 0);
	CU_ASSERT_EQUAL(st.st_ino, a->ino);
	/* a name the table does not record gives nothing to pin */
	CU_ASSERT_PTR_NULL(hy_inode_pin_child(f.table, f.table->root, "nonesuch"));
	fixture_down(&f);
}

/* After a rename the entry is reached by its new name, from its new parent. */
static void test_rename_moves_name(void)
{
	struct fixture f;
	struct hy_inode *d, *x, *child;
	struct stat st;
	char from[512], to[512];

	fixture_up(&f, 16);
	snprintf(from, sizeof(from), "%s/d", f.tmp);
	CU_ASSERT_EQUAL(mkdir(from, 0755), 0);
	snprintf(from, sizeof(from), "%s/x", f.tmp);
	fclose(fopen(from, "w"));
	snprintf(to, sizeof(to), "%s/d/y", f.tmp);
	d = lookup(&f, f.table->root, "d");
	x = lookup(&f, f.table->root, "x");
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	child = hy_inode_pin_child(f.table, f.table->root, "x");
	CU_ASSERT_PTR_EQUAL(child, x);
	CU_ASSERT_EQUAL(rename(from, to), 0);
	CU_ASSERT_EQUAL(hy_inode_moved(f.table, child, d, "y"), 0);
	hy_inode_unpin_child(f.table, child, false);
	CU_ASSERT_PTR_EQUAL(x->parent, d);
	CU_ASSERT_STRING_EQUAL(x->name, "y");
	/* drop the pinned descriptor to force the reach by name */
	f.table->fd_cap = 0;
	{
		struct hy_inode_ref ref;

		CU_ASSERT_EQUAL(hy_inode_pin(f.table, d, true, &ref), 0);
		hy_inode_unpin(f.table, &ref);
	}
	CU_ASSERT_EQUAL(stat_of(&f, x, &st), 0);
	CU_ASSERT_EQUAL(st.st_ino, x->ino);
	fixture_down(&f);
}

/* A child keeps its parent entry alive after the kernel forgets the parent. */
static void test_parent_outlives_forget(void)
{
	struct fixture f;
	struct hy_inode *d, *x;
	struct stat st;
	char path[512];

	fixture_up(&f, 16);
	snprintf(path, sizeof(path), "%s/d", f.tmp);
	CU_ASSERT_EQUAL(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/d/x", f.tmp);
	fclose(fopen(path, "w"));
	d = lookup(&f, f.table->root, "d");
	x = lookup(&f, d, "x");
	hy_inode_forget(f.table, d, 1);
	CU_ASSERT_PTR_NOT_NULL(hy_inode_find(f.table, d->dev, d->ino));
	CU_ASSERT_EQUAL(stat_of(&f, x, &st), 0);
	hy_inode_forget(f.table, x, 1); /* frees both */
	CU_ASSERT_EQUAL(f.table->count, 1);
	fixture_down(&f);
}

/* A chain deeper than a path (issue 16.7), reached on a small stack. */
#define DEEP_LEVELS 3000

struct deep_pin {
	struct fixture *f;
	struct hy_inode *inode;
	int rc;
	ino_t ino;
};

static void *deep_pin_main(void *arg)
{
	struct deep_pin *d = arg;
	struct hy_inode_ref ref;
	struct stat st;

	d->rc = hy_inode_pin(d->f->table, d->inode, true, &ref);
	if (d->rc == 0) {
		d->ino = fstat(ref.dirfd, &st) == 0 ? st.st_ino : 0;
		hy_inode_unpin(d->f->table, &ref);
	}
	return NULL;
}

/* Removes the chain "deep/d/d/..." under @root_fd one level a time: the
 * second level moves up beside the first, which is then empty. */
static void deep_remove(int root_fd)
{
	for (;;) {
		int top = openat(root_fd, "deep", O_RDONLY | O_DIRECTORY);
		bool more;

		if (top < 0)
			return;
		more = renameat(top, "d", root_fd, "deep.next") == 0;
		close(top);
		CU_ASSERT_EQUAL_FATAL(unlinkat(root_fd, "deep", AT_REMOVEDIR), 0);
		if (!more || renameat(root_fd, "deep.next", root_fd, "deep") != 0)
			return;
	}
}

/* Every descriptor of a 3,000-level chain given back, the deepest level
 * is pinned from a thread with a 128 KiB stack: it is reopened level by
 * level from the root, in a loop (recursion needed ~750 bytes a level). */
static void test_deep_chain_small_stack(void)
{
	struct fixture f;
	struct hy_inode *parent;
	struct deep_pin d = {.rc = -1};
	pthread_attr_t attr;
	pthread_t thread;
	int root_fd, fd;

	fixture_up(&f, 16);
	root_fd = open(f.tmp, O_PATH | O_DIRECTORY);
	CU_ASSERT_FATAL(root_fd >= 0);
	CU_ASSERT_EQUAL_FATAL(mkdirat(root_fd, "deep", 0755), 0);
	fd = openat(root_fd, "deep", O_PATH | O_DIRECTORY);
	parent = lookup(&f, f.table->root, "deep");
	CU_ASSERT_PTR_NOT_NULL_FATAL(parent);
	for (int i = 0; i < DEEP_LEVELS; i++) {
		int next;

		CU_ASSERT_EQUAL_FATAL(mkdirat(fd, "d", 0755), 0);
		next = openat(fd, "d", O_PATH | O_DIRECTORY);
		CU_ASSERT_FATAL(next >= 0);
		close(fd);
		fd = next;
		parent = lookup(&f, parent, "d");
		CU_ASSERT_PTR_NOT_NULL_FATAL(parent);
	}
	close(fd);
	hy_inode_shed(f.table, SIZE_MAX);
	CU_ASSERT_EQUAL(f.table->fds_cached, 0);
	d.f = &f;
	d.inode = parent;
	pthread_attr_init(&attr);
	CU_ASSERT_EQUAL_FATAL(pthread_attr_setstacksize(&attr, 128 * 1024), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&thread, &attr, deep_pin_main, &d), 0);
	pthread_join(thread, NULL);
	pthread_attr_destroy(&attr);
	CU_ASSERT_EQUAL(d.rc, 0);
	CU_ASSERT_EQUAL(d.ino, parent->ino);
	CU_ASSERT(f.table->fds_cached <= f.table->fd_cap);
	deep_remove(root_fd);
	close(root_fd);
	fixture_down(&f);
}

int hy_test_add_inode(void)
{
	CU_pSuite s = CU_add_suite("inode", NULL, NULL);

	if (!s || !CU_add_test(s, "lookup counts", test_lookup_counts) ||
	    !CU_add_test(s, "hard links are one entry", test_hard_links) ||
	    !CU_add_test(s, "descriptor cache is bounded", test_fd_cache_bounded) ||
	    !CU_add_test(s, "stale name detected", test_stale_name) ||
	    !CU_add_test(s, "unlinked entry stays reachable", test_unlink_keeps_reachable) ||
	    !CU_add_test(s, "rename moves the name", test_rename_moves_name) ||
	    !CU_add_test(s, "parent outlives forget", test_parent_outlives_forget) ||
	    !CU_add_test(s, "deep chain on a small stack", test_deep_chain_small_stack))
		return -1;
	return 0;
}
