/* test_options.c - command line and mount option parsing, path checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "hybridfs/options.h"
#include "suites.h"

static char why[512];

static int parse(struct hy_options *o, const char *const *argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	why[0] = '\0';
	return hy_options_parse(argc, (char **)argv, o, why, sizeof(why));
}

static void test_defaults(void)
{
	const char *argv[] = {"hybridfs", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_STRING_EQUAL(o.backing, "/b");
	CU_ASSERT_STRING_EQUAL(o.mountpoint, "/m");
	CU_ASSERT_FALSE(o.foreground);
	CU_ASSERT_FALSE(o.mount_helper);
	CU_ASSERT_TRUE(o.writeback_cache);
	CU_ASSERT_DOUBLE_EQUAL(o.attr_timeout, 1.0, 1e-9);
	CU_ASSERT_PTR_NULL(o.state_dir);
	hy_options_free(&o);
}

static void test_known_options(void)
{
	const char *argv[] = {"hybridfs",
			      "-o",
			      "allow_other,state=/s,attr_timeout=2.5",
			      "/b",
			      "/m",
			      "-o",
			      "nosuid,noatime,writeback_cache=off,max_threads=4",
			      "-d",
			      NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_TRUE(o.allow_other);
	CU_ASSERT_STRING_EQUAL(o.state_dir, "/s");
	CU_ASSERT_DOUBLE_EQUAL(o.attr_timeout, 2.5, 1e-9);
	CU_ASSERT_FALSE(o.writeback_cache);
	CU_ASSERT_EQUAL(o.max_threads, 4);
	CU_ASSERT_TRUE(o.debug);
	CU_ASSERT_TRUE(o.foreground);
	CU_ASSERT_STRING_EQUAL(o.kernel_options, "nosuid,noatime");
	hy_options_free(&o);
}

static void test_escaped_comma(void)
{
	const char *argv[] = {"hybridfs", "-o", "state=/a\\,b", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_STRING_EQUAL(o.state_dir, "/a,b");
	hy_options_free(&o);
}

static void expect_bad(const char *const *argv, const char *words)
{
	struct hy_options o;

	CU_ASSERT_EQUAL(parse(&o, argv), -EINVAL);
	if (!strstr(why, words)) {
		fprintf(stderr, "message \"%s\" lacks \"%s\"\n", why, words);
		CU_FAIL("the message does not name the problem");
	}
	hy_options_free(&o);
}

static void test_profile_options(void)
{
	const char *defaults[] = {"hybridfs", "/b", "/m", NULL};
	const char *set[] = {
		"hybridfs", "-o", "profile=off,profile_max_age=12h,profile_max_rows=500",
		"/b",	    "/m", NULL};
	const char *units[] = {"hybridfs", "-o", "profile_max_age=90,profile=on", "/b", "/m", NULL};
	const char *minutes[] = {"hybridfs", "-o", "profile_max_age=15m", "/b", "/m", NULL};
	const char *keep_all[] = {"hybridfs", "-o", "profile_max_age=0,profile_max_rows=0",
				  "/b",	      "/m", NULL};
	const char *bad_age[] = {"hybridfs", "-o", "profile_max_age=3w", "/b", "/m", NULL};
	const char *neg_age[] = {"hybridfs", "-o", "profile_max_age=-1d", "/b", "/m", NULL};
	const char *bad_rows[] = {"hybridfs", "-o", "profile_max_rows=many", "/b", "/m", NULL};
	const char *bad_profile[] = {"hybridfs", "-o", "profile=sometimes", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL(parse(&o, defaults), 0);
	CU_ASSERT_TRUE(o.profile);
	CU_ASSERT_EQUAL(o.profile_max_age_s, 30 * 86400);
	CU_ASSERT_EQUAL(o.profile_max_rows, 10000000);
	hy_options_free(&o);
	CU_ASSERT_EQUAL(parse(&o, set), 0);
	CU_ASSERT_FALSE(o.profile);
	CU_ASSERT_EQUAL(o.profile_max_age_s, 12 * 3600);
	CU_ASSERT_EQUAL(o.profile_max_rows, 500);
	hy_options_free(&o);
	CU_ASSERT_EQUAL(parse(&o, units), 0);
	CU_ASSERT_TRUE(o.profile);
	CU_ASSERT_EQUAL(o.profile_max_age_s, 90);
	hy_options_free(&o);
	CU_ASSERT_EQUAL(parse(&o, minutes), 0);
	CU_ASSERT_EQUAL(o.profile_max_age_s, 15 * 60);
	hy_options_free(&o);
	CU_ASSERT_EQUAL(parse(&o, keep_all), 0);
	CU_ASSERT_EQUAL(o.profile_max_age_s, 0);
	CU_ASSERT_EQUAL(o.profile_max_rows, 0);
	hy_options_free(&o);
	expect_bad(bad_age, "profile_max_age=3w");
	expect_bad(neg_age, "profile_max_age");
	expect_bad(bad_rows, "profile_max_rows=many");
	expect_bad(bad_profile, "profile=sometimes");
}

static void test_bopt_options(void)
{
	const char *defaults[] = {"hybridfs", "/b", "/m", NULL};
	const char *given[] = {"hybridfs", "-o", "bopt=LABEL=fast,bopt_size=16M,reorg_rate=0",
			       "/b",	   "/m", NULL};
	const char *none[] = {"hybridfs", "-o", "bopt=none", "/b", "/m", NULL};
	const char *small[] = {"hybridfs", "-o", "bopt_size=512K", "/b", "/m", NULL};
	const char *bad_size[] = {"hybridfs", "-o", "bopt_size=lots", "/b", "/m", NULL};
	const char *bad_rate[] = {"hybridfs", "-o", "reorg_rate=-5M", "/b", "/m", NULL};
	const char *empty[] = {"hybridfs", "-o", "bopt=", "/b", "/m", NULL};
	const char *relative[] = {"hybridfs", "-o", "bopt=PARTUID=x", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL_FATAL(parse(&o, defaults), 0);
	CU_ASSERT_PTR_NULL(o.bopt);
	CU_ASSERT_FALSE(o.bopt_given);
	CU_ASSERT_FALSE(o.bopt_size_given);
	CU_ASSERT_EQUAL(o.bopt_size, HY_OPTIONS_BOPT_SIZE);
	CU_ASSERT_EQUAL(o.reorg_rate, HY_OPTIONS_REORG_RATE);
	hy_options_free(&o);

	CU_ASSERT_EQUAL_FATAL(parse(&o, given), 0);
	CU_ASSERT_STRING_EQUAL(o.bopt, "LABEL=fast");
	CU_ASSERT_TRUE(o.bopt_given);
	CU_ASSERT_TRUE(o.bopt_size_given);
	CU_ASSERT_EQUAL(o.bopt_size, 16ULL << 20);
	CU_ASSERT_EQUAL(o.reorg_rate, 0);
	hy_options_free(&o);

	CU_ASSERT_EQUAL_FATAL(parse(&o, none), 0);
	CU_ASSERT_STRING_EQUAL(o.bopt, "none");
	hy_options_free(&o);

	expect_bad(small, "at least 1M");
	expect_bad(bad_size, "bopt_size=lots");
	expect_bad(bad_rate, "reorg_rate=-5M");
	expect_bad(empty, "bopt");
	expect_bad(relative, "bopt=PARTUID=x");
}

static void test_bad_options(void)
{
	const char *unknown[] = {"hybridfs", "-o", "frobnicate", "/b", "/m", NULL};
	const char *unknown_value[] = {"hybridfs", "-o", "frob=1", "/b", "/m", NULL};
	const char *bad_number[] = {"hybridfs", "-o", "attr_timeout=abc", "/b", "/m", NULL};
	const char *negative[] = {"hybridfs", "-o", "entry_timeout=-1", "/b", "/m", NULL};
	const char *zero_threads[] = {"hybridfs", "-o", "max_threads=0", "/b", "/m", NULL};
	const char *bad_bool[] = {"hybridfs", "-o", "writeback_cache=maybe", "/b", "/m", NULL};
	const char *empty_state[] = {"hybridfs", "-o", "state=", "/b", "/m", NULL};
	const char *flag[] = {"hybridfs", "--bogus", "/b", "/m", NULL};
	const char *none[] = {"hybridfs", NULL};
	const char *one[] = {"hybridfs", "/b", NULL};
	const char *three[] = {"hybridfs", "/b", "/m", "/x", NULL};
	const char *dangling_o[] = {"hybridfs", "/b", "/m", "-o", NULL};

	expect_bad(unknown, "\"frobnicate\"");
	expect_bad(unknown_value, "\"frob=1\"");
	expect_bad(bad_number, "attr_timeout=abc");
	expect_bad(negative, "entry_timeout=-1");
	expect_bad(zero_threads, "max_threads=0");
	expect_bad(bad_bool, "writeback_cache=maybe");
	expect_bad(empty_state, "state");
	expect_bad(flag, "--bogus");
	expect_bad(none, "missing BACKING");
	expect_bad(one, "missing MOUNTPOINT");
	expect_bad(three, "\"/x\"");
	expect_bad(dangling_o, "-o");
}

static void test_mount_helper(void)
{
	const char *fake[] = {"/sbin/mount.hybridfs",
			      "/b",
			      "/m",
			      "-f",
			      "-n",
			      "-o",
			      "rw,defaults,noauto,user,_netdev,x-systemd.automount,nofail",
			      NULL};
	const char *sloppy[] = {"mount.hybridfs", "/b", "/m", "-o", "whatever", "-s", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL(parse(&o, fake), 0);
	CU_ASSERT_TRUE(o.mount_helper);
	CU_ASSERT_TRUE(o.fake);
	CU_ASSERT_FALSE(o.foreground);
	CU_ASSERT_PTR_NULL(o.kernel_options);
	hy_options_free(&o);
	CU_ASSERT_EQUAL(parse(&o, sloppy), 0);
	CU_ASSERT_TRUE(o.sloppy);
	hy_options_free(&o);
}

static void test_paths(void)
{
	char *tmp = hy_test_tmpdir(), *b, *m, *inner, *file;
	struct hy_options o;
	const char *argv[4] = {"hybridfs", NULL, NULL, NULL};

	CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
	CU_ASSERT(asprintf(&b, "%s/b", tmp) > 0);
	CU_ASSERT(asprintf(&m, "%s/m", tmp) > 0);
	CU_ASSERT(asprintf(&inner, "%s/b/m", tmp) > 0);
	CU_ASSERT(asprintf(&file, "%s/file", tmp) > 0);
	CU_ASSERT_EQUAL(mkdir(b, 0755), 0);
	CU_ASSERT_EQUAL(mkdir(m, 0755), 0);
	CU_ASSERT_EQUAL(mkdir(inner, 0755), 0);
	fclose(fopen(file, "w"));

	argv[1] = b, argv[2] = m;
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(o.state_dir, "/b/.hybridfs"));
	hy_options_free(&o);

	argv[1] = b, argv[2] = b; /* the mountpoint itself */
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "mountpoint itself"));
	hy_options_free(&o);

	argv[1] = inner, argv[2] = b; /* backing inside the mountpoint */
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "inside the mountpoint"));
	hy_options_free(&o);

	argv[1] = b, argv[2] = inner; /* mountpoint inside the backing */
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "inside the backing"));
	hy_options_free(&o);

	argv[1] = b, argv[2] = file;
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), -ENOTDIR);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "is not a directory"));
	hy_options_free(&o);

	argv[1] = "/nonexistent/hybridfs/backing", argv[2] = m;
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "backing directory"));
	hy_options_free(&o);

	hy_test_rmtree(tmp);
	free(tmp), free(b), free(m), free(inner), free(file);
}

static void test_fuse_args(void)
{
	const char *argv[] = {"hybridfs", "-o", "allow_other,nosuid,ro", "/b,c", "/m", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct hy_options o;

	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_fuse_args(&o, &args), 0);
	CU_ASSERT_EQUAL_FATAL(args.argc, 3);
	CU_ASSERT_STRING_EQUAL(args.argv[1], "-o");
	CU_ASSERT_STRING_EQUAL(args.argv[2], "fsname=/b\\,c,subtype=hybridfs,default_permissions,"
					     "allow_other,ro,nosuid");
	fuse_opt_free_args(&args);
	hy_options_free(&o);

	/* only the mounting user: the backing filesystem checks permissions */
	{
		const char *single[] = {"hybridfs", "/b", "/m", NULL};
		struct fuse_args args1 = FUSE_ARGS_INIT(0, NULL);

		CU_ASSERT_EQUAL(parse(&o, single), 0);
		CU_ASSERT_EQUAL(hy_options_fuse_args(&o, &args1), 0);
		CU_ASSERT_STRING_EQUAL(args1.argv[2], "fsname=/b,subtype=hybridfs");
		fuse_opt_free_args(&args1);
		hy_options_free(&o);
	}
}

int hy_test_add_options(void)
{
	CU_pSuite s = CU_add_suite("options", NULL, NULL);

	if (!s || !CU_add_test(s, "defaults", test_defaults) ||
	    !CU_add_test(s, "known options", test_known_options) ||
	    !CU_add_test(s, "escaped comma", test_escaped_comma) ||
	    !CU_add_test(s, "bad options name the problem", test_bad_options) ||
	    !CU_add_test(s, "profiler options", test_profile_options) ||
	    !CU_add_test(s, "BOPT options", test_bopt_options) ||
	    !CU_add_test(s, "mount(8) helper mode", test_mount_helper) ||
	    !CU_add_test(s, "path checks", test_paths) ||
	    !CU_add_test(s, "libfuse arguments", test_fuse_args))
		return -1;
	return 0;
}
