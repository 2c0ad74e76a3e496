/* test_options.c - command line and mount option parsing, path checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fuse_lowlevel.h>

#include "hybridfs/heat.h"
#include "hybridfs/options.h"
#include "hybridfs/policy.h"
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
	CU_ASSERT_FALSE(o.writeback_cache);
	CU_ASSERT_TRUE(o.killpriv_v2);
	CU_ASSERT_TRUE(o.splice);
	CU_ASSERT_DOUBLE_EQUAL(o.attr_timeout, 5.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(o.entry_timeout, 5.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(o.negative_timeout, 5.0, 1e-9);
	CU_ASSERT_PTR_NULL(o.state_dir);
	hy_options_free(&o);
}

static void test_known_options(void)
{
	const char *argv[] = {
		"hybridfs",
		"-o",
		"allow_other,state=/s,attr_timeout=2.5",
		"/b",
		"/m",
		"-o",
		"nosuid,noatime,writeback_cache=on,max_threads=4,killpriv_v2=off,splice=off",
		"-d",
		NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_TRUE(o.allow_other);
	CU_ASSERT_STRING_EQUAL(o.state_dir, "/s");
	CU_ASSERT_DOUBLE_EQUAL(o.attr_timeout, 2.5, 1e-9);
	CU_ASSERT_TRUE(o.writeback_cache);
	CU_ASSERT_FALSE(o.killpriv_v2);
	CU_ASSERT_FALSE(o.splice);
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
	const char *ra_off[] = {"hybridfs", "-o", "bopt_readahead=0", "/b", "/m", NULL};
	const char *ra_odd[] = {"hybridfs", "-o", "bopt_readahead=5000", "/b", "/m", NULL};
	const char *ra_big[] = {"hybridfs", "-o", "bopt_readahead=1G", "/b", "/m", NULL};
	const char *ra_bad[] = {"hybridfs", "-o", "bopt_readahead=far", "/b", "/m", NULL};
	const char *relative[] = {"hybridfs", "-o", "bopt=PARTUID=x", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL_FATAL(parse(&o, defaults), 0);
	CU_ASSERT_PTR_NULL(o.bopt);
	CU_ASSERT_FALSE(o.bopt_given);
	CU_ASSERT_FALSE(o.bopt_size_given);
	CU_ASSERT_EQUAL(o.bopt_size, HY_OPTIONS_BOPT_SIZE);
	CU_ASSERT_EQUAL(o.reorg_rate, HY_OPTIONS_REORG_RATE);
	CU_ASSERT_EQUAL(o.bopt_readahead, HY_OPTIONS_BOPT_READAHEAD);
	hy_options_free(&o);

	CU_ASSERT_EQUAL_FATAL(parse(&o, ra_off), 0);
	CU_ASSERT_EQUAL(o.bopt_readahead, 0);
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
	expect_bad(ra_odd, "bopt_readahead=5000");
	expect_bad(ra_big, "up to 64M");
	expect_bad(ra_bad, "bopt_readahead=far");
}

/* cache_keep=: auto by default; on, off; anything else named */
static void test_cache_keep(void)
{
	const char *defaults[] = {"hybridfs", "/b", "/m", NULL};
	const char *on[] = {"hybridfs", "-o", "cache_keep=on", "/b", "/m", NULL};
	const char *off[] = {"hybridfs", "-o", "cache_keep=off", "/b", "/m", NULL};
	const char *bad[] = {"hybridfs", "-o", "cache_keep=maybe", "/b", "/m", NULL};
	const char *bare[] = {"hybridfs", "-o", "cache_keep", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL_FATAL(parse(&o, defaults), 0);
	CU_ASSERT_EQUAL(o.cache_keep, HY_CACHE_KEEP_AUTO);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, on), 0);
	CU_ASSERT_EQUAL(o.cache_keep, HY_CACHE_KEEP_ON);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, off), 0);
	CU_ASSERT_EQUAL(o.cache_keep, HY_CACHE_KEEP_OFF);
	hy_options_free(&o);
	expect_bad(bad, "cache_keep=maybe");
	expect_bad(bare, "expected auto, on or off");
}

/* passthrough=: off by default; excluded; auto refused with the reason;
 * anything else named */
static void test_passthrough_option(void)
{
	const char *defaults[] = {"hybridfs", "/b", "/m", NULL};
	const char *ex[] = {"hybridfs", "-o", "passthrough=excluded", "/b", "/m", NULL};
	const char *off[] = {"hybridfs", "-o", "passthrough=excluded,passthrough=off",
			     "/b",	 "/m", NULL};
	const char *autom[] = {"hybridfs", "-o", "passthrough=auto", "/b", "/m", NULL};
	const char *bad[] = {"hybridfs", "-o", "passthrough=all", "/b", "/m", NULL};
	const char *bare[] = {"hybridfs", "-o", "passthrough", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL_FATAL(parse(&o, defaults), 0);
	CU_ASSERT_EQUAL(o.passthrough, HY_PASSTHROUGH_OFF);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, ex), 0);
	CU_ASSERT_EQUAL(o.passthrough, HY_PASSTHROUGH_EXCLUDED);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, off), 0);
	CU_ASSERT_EQUAL(o.passthrough, HY_PASSTHROUGH_OFF);
	hy_options_free(&o);
	expect_bad(autom, "not offered");
	expect_bad(bad, "passthrough=all");
	expect_bad(bare, "expected off or excluded");
}

/* opendir=: auto by default; kernel, daemon; kernel refused with
 * entry_timeout=0, which keeps no listings; anything else named */
static void test_opendir_option(void)
{
	const char *defaults[] = {"hybridfs", "/b", "/m", NULL};
	const char *kernel[] = {"hybridfs", "-o", "opendir=kernel", "/b", "/m", NULL};
	const char *daemon[] = {"hybridfs", "-o", "opendir=kernel,opendir=daemon",
				"/b",	    "/m", NULL};
	const char *auto_zero[] = {"hybridfs", "-o", "entry_timeout=0", "/b", "/m", NULL};
	const char *kernel_zero[] = {"hybridfs", "-o", "opendir=kernel,entry_timeout=0",
				     "/b",	 "/m", NULL};
	const char *bad[] = {"hybridfs", "-o", "opendir=sometimes", "/b", "/m", NULL};
	const char *bare[] = {"hybridfs", "-o", "opendir", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL_FATAL(parse(&o, defaults), 0);
	CU_ASSERT_EQUAL(o.opendir, HY_OPENDIR_AUTO);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, kernel), 0);
	CU_ASSERT_EQUAL(o.opendir, HY_OPENDIR_KERNEL);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, daemon), 0);
	CU_ASSERT_EQUAL(o.opendir, HY_OPENDIR_DAEMON);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, auto_zero), 0);
	CU_ASSERT_EQUAL(o.opendir, HY_OPENDIR_AUTO);
	hy_options_free(&o);
	expect_bad(kernel_zero, "entry_timeout=0");
	expect_bad(bad, "opendir=sometimes");
	expect_bad(bare, "expected auto, kernel or daemon");
}

/* open=: auto by default; kernel, daemon; kernel refused beside
 * passthrough=excluded, which needs an OPEN per file; anything else named */
static void test_open_option(void)
{
	const char *defaults[] = {"hybridfs", "/b", "/m", NULL};
	const char *kernel[] = {"hybridfs", "-o", "open=kernel", "/b", "/m", NULL};
	const char *daemon[] = {"hybridfs", "-o", "open=kernel,open=daemon", "/b", "/m", NULL};
	const char *auto_pt[] = {"hybridfs", "-o", "passthrough=excluded", "/b", "/m", NULL};
	const char *kernel_pt[] = {"hybridfs", "-o", "open=kernel,passthrough=excluded",
				   "/b",       "/m", NULL};
	const char *bad[] = {"hybridfs", "-o", "open=never", "/b", "/m", NULL};
	const char *bare[] = {"hybridfs", "-o", "open", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL_FATAL(parse(&o, defaults), 0);
	CU_ASSERT_EQUAL(o.open, HY_OPEN_AUTO);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, kernel), 0);
	CU_ASSERT_EQUAL(o.open, HY_OPEN_KERNEL);
	/* nobody else checks a user's open then */
	CU_ASSERT_EQUAL(hy_options_default_permissions(&o), geteuid() != 0);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, daemon), 0);
	CU_ASSERT_EQUAL(o.open, HY_OPEN_DAEMON);
	CU_ASSERT_FALSE(hy_options_default_permissions(&o));
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, auto_pt), 0);
	CU_ASSERT_EQUAL(o.open, HY_OPEN_AUTO);
	hy_options_free(&o);
	expect_bad(kernel_pt, "passthrough needs one");
	expect_bad(bad, "open=never");
	expect_bad(bare, "expected auto, kernel or daemon");
}

/* splice=: on by default (test_defaults), off (test_known_options); a
 * value that is neither is refused by name */
static void test_splice_option(void)
{
	const char *bad[] = {"hybridfs", "-o", "splice=maybe", "/b", "/m", NULL};
	const char *bare[] = {"hybridfs", "-o", "splice=", "/b", "/m", NULL};

	expect_bad(bad, "\"splice=maybe\": expected on or off");
	expect_bad(bare, "splice");
}

/* readdirplus=: auto by default; always; anything else named */
static void test_readdirplus_option(void)
{
	const char *defaults[] = {"hybridfs", "/b", "/m", NULL};
	const char *always[] = {"hybridfs", "-o", "readdirplus=always", "/b", "/m", NULL};
	const char *back[] = {"hybridfs", "-o", "readdirplus=always,readdirplus=auto",
			      "/b",	  "/m", NULL};
	const char *bad[] = {"hybridfs", "-o", "readdirplus=never", "/b", "/m", NULL};
	const char *bare[] = {"hybridfs", "-o", "readdirplus", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL_FATAL(parse(&o, defaults), 0);
	CU_ASSERT_FALSE(o.readdirplus_always);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, always), 0);
	CU_ASSERT_TRUE(o.readdirplus_always);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, back), 0);
	CU_ASSERT_FALSE(o.readdirplus_always);
	hy_options_free(&o);
	expect_bad(bad, "readdirplus=never");
	expect_bad(bare, "expected auto or always");
}

/* metrics=: none by default, an absolute path or none; metrics_interval=
 * 1 to 300, 60 by default. (Its folder is checked at mount: metrics.sh.) */
static void test_metrics_options(void)
{
	const char *defaults[] = {"hybridfs", "/b", "/m", NULL};
	const char *given[] = {"hybridfs", "-o", "metrics=/var/x.prom,metrics_interval=5",
			       "/b",	   "/m", NULL};
	const char *none[] = {"hybridfs", "-o", "metrics=/x.prom,metrics=none", "/b", "/m", NULL};
	const char *relative[] = {"hybridfs", "-o", "metrics=x.prom", "/b", "/m", NULL};
	const char *empty[] = {"hybridfs", "-o", "metrics=", "/b", "/m", NULL};
	const char *zero[] = {"hybridfs", "-o", "metrics_interval=0", "/b", "/m", NULL};
	const char *big[] = {"hybridfs", "-o", "metrics_interval=301", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL_FATAL(parse(&o, defaults), 0);
	CU_ASSERT_PTR_NULL(o.metrics);
	CU_ASSERT_EQUAL(o.metrics_interval, 60);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, given), 0);
	CU_ASSERT_STRING_EQUAL(o.metrics, "/var/x.prom");
	CU_ASSERT_EQUAL(o.metrics_interval, 5);
	hy_options_free(&o);
	CU_ASSERT_EQUAL_FATAL(parse(&o, none), 0);
	CU_ASSERT_PTR_NULL(o.metrics);
	hy_options_free(&o);
	expect_bad(relative, "give an absolute path");
	expect_bad(empty, "needs a file");
	expect_bad(zero, "metrics_interval=0");
	expect_bad(big, "from 1 to 300");
}

static void test_cache_options(void)
{
	const char *defaults[] = {"hybridfs", "/b", "/m", NULL};
	const char *given[] = {"hybridfs",
			       "-o",
			       "cache=PARTLABEL=ssd,cache_size=2G,cache_write=through,"
			       "cache_policy=larc,front_buffer=64M,heat_periods=5,"
			       "heat_threshold=2.25,cache_clean_rate=0",
			       "/b",
			       "/m",
			       NULL};
	const char *path[] = {"hybridfs", "-o", "cache=/dev/sdb1,cache_write=around",
			      "/b",	  "/m", NULL};
	const char *read_only[] = {"hybridfs", "-o", "cache_write=read-only,cache_policy=freq",
				   "/b",       "/m", NULL};
	const char *edges[] = {
		"hybridfs",
		"-o",
		"front_buffer=0,heat_periods=10,heat_threshold=0,cache_size=1M,"
		"cache_write=back,cache_policy=lru,cache_clean_rate=1K,cache_seq_cutoff=0,"
		"cache_migrate_rate=0,reca=off",
		"/b",
		"/m",
		NULL};
	const char *top[] = {"hybridfs", "-o", "heat_threshold=255,cache_policy=lru3",
			     "/b",	 "/m", NULL};
	const char *none[] = {"hybridfs", "-o", "cache=none", "/b", "/m", NULL};
	struct hy_options o;

	CU_ASSERT_EQUAL_FATAL(parse(&o, defaults), 0);
	CU_ASSERT_PTR_NULL(o.cache);
	CU_ASSERT_FALSE(o.cache_given);
	CU_ASSERT_FALSE(o.cache_size_given);
	CU_ASSERT_EQUAL(o.cache_size, HY_OPTIONS_CACHE_SIZE);
	CU_ASSERT_EQUAL(o.cache_size, 256ULL << 20);
	CU_ASSERT_EQUAL(o.cache_write, HY_CACHE_WRITE_BACK);
	CU_ASSERT_EQUAL(o.cache_policy, HY_POLICY_LRU3);
	CU_ASSERT_EQUAL(o.front_buffer, HY_OPTIONS_FRONT_BUFFER);
	CU_ASSERT_EQUAL(o.front_buffer, 16ULL << 20);
	CU_ASSERT_EQUAL(o.heat_periods, 8);
	CU_ASSERT_DOUBLE_EQUAL(o.heat_threshold, 1.5, 1e-9);
	CU_ASSERT_EQUAL(o.cache_clean_rate, HY_OPTIONS_CACHE_CLEAN_RATE);
	CU_ASSERT_EQUAL(o.cache_clean_rate, 32ULL << 20);
	CU_ASSERT_EQUAL(o.cache_seq_cutoff, 4ULL << 20);
	CU_ASSERT_EQUAL(o.cache_migrate_rate, 8ULL << 20);
	CU_ASSERT_TRUE(o.reca);
	CU_ASSERT_FALSE(o.cache_write_given); /* the mount picks: cache.h */
	hy_options_free(&o);

	CU_ASSERT_EQUAL_FATAL(parse(&o, given), 0);
	CU_ASSERT_STRING_EQUAL(o.cache, "PARTLABEL=ssd");
	CU_ASSERT_TRUE(o.cache_given);
	CU_ASSERT_TRUE(o.cache_size_given);
	CU_ASSERT_EQUAL(o.cache_size, 2ULL << 30);
	CU_ASSERT_EQUAL(o.cache_write, HY_CACHE_WRITE_THROUGH);
	CU_ASSERT_EQUAL(o.cache_policy, HY_POLICY_LARC);
	CU_ASSERT_EQUAL(o.front_buffer, 64ULL << 20);
	CU_ASSERT_EQUAL(o.heat_periods, 5);
	CU_ASSERT_DOUBLE_EQUAL(o.heat_threshold, 2.25, 1e-9);
	CU_ASSERT_EQUAL(o.cache_clean_rate, 0);
	hy_options_free(&o);

	CU_ASSERT_EQUAL_FATAL(parse(&o, path), 0);
	CU_ASSERT_STRING_EQUAL(o.cache, "/dev/sdb1");
	CU_ASSERT_EQUAL(o.cache_write, HY_CACHE_WRITE_AROUND);
	CU_ASSERT_FALSE(o.cache_size_given);
	hy_options_free(&o);

	CU_ASSERT_EQUAL_FATAL(parse(&o, read_only), 0);
	CU_ASSERT_EQUAL(o.cache_write, HY_CACHE_WRITE_AROUND);
	CU_ASSERT_EQUAL(o.cache_policy, HY_POLICY_FREQ);
	CU_ASSERT_PTR_NULL(o.cache);
	hy_options_free(&o);

	CU_ASSERT_EQUAL_FATAL(parse(&o, edges), 0);
	CU_ASSERT_EQUAL(o.front_buffer, 0);
	CU_ASSERT_EQUAL(o.heat_periods, 10);
	CU_ASSERT_DOUBLE_EQUAL(o.heat_threshold, 0.0, 1e-9);
	CU_ASSERT_EQUAL(o.cache_size, 1ULL << 20);
	CU_ASSERT_EQUAL(o.cache_write, HY_CACHE_WRITE_BACK);
	CU_ASSERT_EQUAL(o.cache_policy, HY_POLICY_LRU);
	CU_ASSERT_EQUAL(o.cache_clean_rate, 1024);
	CU_ASSERT_EQUAL(o.cache_seq_cutoff, 0);
	CU_ASSERT_EQUAL(o.cache_migrate_rate, 0);
	CU_ASSERT_FALSE(o.reca);
	CU_ASSERT_TRUE(o.cache_write_given);
	hy_options_free(&o);

	CU_ASSERT_EQUAL_FATAL(parse(&o, top), 0);
	CU_ASSERT_DOUBLE_EQUAL(o.heat_threshold, 255.0, 1e-9);
	CU_ASSERT_EQUAL(o.cache_policy, HY_POLICY_LRU3);
	hy_options_free(&o);

	CU_ASSERT_EQUAL_FATAL(parse(&o, none), 0);
	CU_ASSERT_STRING_EQUAL(o.cache, "none");
	CU_ASSERT_TRUE(o.cache_given);
	hy_options_free(&o);

	/* PORE: off over a conventional disk; backend=smr alone, or pore= */
	CU_ASSERT_EQUAL_FATAL(parse(&o, defaults), 0);
	CU_ASSERT_FALSE(o.backend_smr);
	CU_ASSERT_FALSE(o.pore_given);
	CU_ASSERT_EQUAL(o.pore_zone, 0);
	CU_ASSERT_EQUAL(o.pore_open_permille, 0);
	CU_ASSERT_EQUAL(o.pore_period, 0);
	hy_options_free(&o);
	{
		const char *smr[] = {"hybridfs",
				     "-o",
				     "backend=smr,pore=coverage,pore_zone=32M,pore_open=12.5%,"
				     "pore_period=20G",
				     "/b",
				     "/m",
				     NULL};
		const char *cmr[] = {"hybridfs", "-o", "backend=smr,backend=cmr,pore_open=100",
				     "/b",	 "/m", NULL};

		CU_ASSERT_EQUAL_FATAL(parse(&o, smr), 0);
		CU_ASSERT_TRUE(o.backend_smr);
		CU_ASSERT_TRUE(o.pore_given);
		CU_ASSERT_EQUAL(o.pore, HY_PORE_COVERAGE);
		CU_ASSERT_EQUAL(o.pore_zone, 32ULL << 20);
		CU_ASSERT_EQUAL(o.pore_open_permille, 125);
		CU_ASSERT_EQUAL(o.pore_period, 20ULL << 30);
		hy_options_free(&o);
		CU_ASSERT_EQUAL_FATAL(parse(&o, cmr), 0);
		CU_ASSERT_FALSE(o.backend_smr);
		CU_ASSERT_EQUAL(o.pore_open_permille, 1000);
		hy_options_free(&o);
	}
}

static void test_bad_cache_options(void)
{
	const char *empty[] = {"hybridfs", "-o", "cache=", "/b", "/m", NULL};
	const char *bare[] = {"hybridfs", "-o", "cache", "/b", "/m", NULL};
	const char *relative[] = {"hybridfs", "-o", "cache=ssd/cache", "/b", "/m", NULL};
	const char *typo[] = {"hybridfs", "-o", "cache=PARTUID=x", "/b", "/m", NULL};
	const char *small[] = {"hybridfs", "-o", "cache_size=512K", "/b", "/m", NULL};
	const char *zero_size[] = {"hybridfs", "-o", "cache_size=0", "/b", "/m", NULL};
	const char *bad_size[] = {"hybridfs", "-o", "cache_size=lots", "/b", "/m", NULL};
	const char *bad_write[] = {"hybridfs", "-o", "cache_write=sideways", "/b", "/m", NULL};
	const char *no_write[] = {"hybridfs", "-o", "cache_write", "/b", "/m", NULL};
	const char *bad_policy[] = {"hybridfs", "-o", "cache_policy=arc", "/b", "/m", NULL};
	const char *upper_policy[] = {"hybridfs", "-o", "cache_policy=LRU", "/b", "/m", NULL};
	const char *bad_front[] = {"hybridfs", "-o", "front_buffer=-1M", "/b", "/m", NULL};
	const char *few_periods[] = {"hybridfs", "-o", "heat_periods=4", "/b", "/m", NULL};
	const char *many_periods[] = {"hybridfs", "-o", "heat_periods=11", "/b", "/m", NULL};
	const char *word_periods[] = {"hybridfs", "-o", "heat_periods=eight", "/b", "/m", NULL};
	const char *neg_threshold[] = {"hybridfs", "-o", "heat_threshold=-0.5", "/b", "/m", NULL};
	const char *big_threshold[] = {"hybridfs", "-o", "heat_threshold=256", "/b", "/m", NULL};
	const char *nan_threshold[] = {"hybridfs", "-o", "heat_threshold=nan", "/b", "/m", NULL};
	const char *word_threshold[] = {"hybridfs", "-o", "heat_threshold=hot", "/b", "/m", NULL};
	const char *no_threshold[] = {"hybridfs", "-o", "heat_threshold=", "/b", "/m", NULL};
	const char *bad_rate[] = {"hybridfs", "-o", "cache_clean_rate=fast", "/b", "/m", NULL};
	const char *bad_cutoff[] = {"hybridfs", "-o", "cache_seq_cutoff=-1", "/b", "/m", NULL};
	const char *bad_migrate[] = {"hybridfs", "-o", "cache_migrate_rate=2X", "/b", "/m", NULL};
	const char *bad_reca[] = {"hybridfs", "-o", "reca=maybe", "/b", "/m", NULL};

	expect_bad(empty, "cache");
	expect_bad(bare, "cache");
	expect_bad(relative, "cache=ssd/cache");
	expect_bad(relative, "absolute path");
	expect_bad(typo, "cache=PARTUID=x");
	expect_bad(small, "cache_size=512K");
	expect_bad(small, "at least 1M");
	expect_bad(zero_size, "cache_size=0");
	expect_bad(bad_size, "cache_size=lots");
	expect_bad(bad_write, "cache_write=sideways");
	expect_bad(bad_write, "back, through, around or read-only");
	expect_bad(no_write, "cache_write");
	expect_bad(bad_policy, "cache_policy=arc");
	expect_bad(bad_policy, "lru3, lru, larc or freq");
	expect_bad(upper_policy, "cache_policy=LRU");
	expect_bad(bad_front, "front_buffer=-1M");
	expect_bad(few_periods, "heat_periods=4");
	expect_bad(few_periods, "from 5 to 10");
	expect_bad(many_periods, "heat_periods=11");
	expect_bad(word_periods, "heat_periods=eight");
	expect_bad(neg_threshold, "heat_threshold=-0.5");
	expect_bad(neg_threshold, "from 0 to 255");
	expect_bad(big_threshold, "heat_threshold=256");
	expect_bad(nan_threshold, "heat_threshold=nan");
	expect_bad(word_threshold, "heat_threshold=hot");
	expect_bad(no_threshold, "heat_threshold");
	expect_bad(bad_rate, "cache_clean_rate=fast");
	expect_bad(bad_cutoff, "cache_seq_cutoff=-1");
	expect_bad(bad_migrate, "cache_migrate_rate=2X");
	expect_bad(bad_reca, "reca=maybe");
	{
		const char *backend[] = {"hybridfs", "-o", "backend=tape", "/b", "/m", NULL};
		const char *bare_backend[] = {"hybridfs", "-o", "backend", "/b", "/m", NULL};
		const char *rule[] = {"hybridfs", "-o", "pore=lru", "/b", "/m", NULL};
		const char *zone[] = {"hybridfs", "-o", "pore_zone=512K", "/b", "/m", NULL};
		const char *open0[] = {"hybridfs", "-o", "pore_open=0%", "/b", "/m", NULL};
		const char *open_big[] = {"hybridfs", "-o", "pore_open=101", "/b", "/m", NULL};
		const char *open_word[] = {"hybridfs", "-o", "pore_open=half", "/b", "/m", NULL};
		const char *period[] = {"hybridfs", "-o", "pore_period=1K", "/b", "/m", NULL};

		expect_bad(backend, "backend=tape");
		expect_bad(backend, "cmr (conventional, the default) or smr");
		expect_bad(bare_backend, "backend");
		expect_bad(rule, "pore=lru");
		expect_bad(rule, "coverage, popularity, balance or off");
		expect_bad(zone, "pore_zone=512K");
		expect_bad(zone, "1M to 1T");
		expect_bad(open0, "pore_open=0%");
		expect_bad(open_big, "pore_open=101");
		expect_bad(open_word, "pore_open=half");
		expect_bad(open_word, "0.1% to 100%");
		expect_bad(period, "pore_period=1K");
	}
}

/* options.c keeps its own table of the policies' names (libhycommon does not
 * link the cache module): it must agree with hy_policy_kind_name(), and the
 * heat defaults with heat.h. */
static void test_cache_policy_names(void)
{
	char list[256] = "";
	struct hy_options o;

	for (unsigned k = 0; k < HY_POLICY_KINDS; k++) {
		const char *name = hy_policy_kind_name((enum hy_policy_kind)k);
		char word[64];
		const char *argv[] = {"hybridfs", "-o", word, "/b", "/m", NULL};

		CU_ASSERT_PTR_NOT_NULL_FATAL(name);
		snprintf(word, sizeof(word), "cache_policy=%s", name);
		CU_ASSERT_EQUAL(parse(&o, argv), 0);
		CU_ASSERT_EQUAL(o.cache_policy, k);
		hy_options_free(&o);
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
			 k == 0			    ? ""
			 : k + 1 == HY_POLICY_KINDS ? " or "
						    : ", ",
			 name);
	}
	/* ...and no name more: the message lists exactly the kinds */
	{
		const char *argv[] = {"hybridfs", "-o", "cache_policy=x", "/b", "/m", NULL};

		expect_bad(argv, list);
	}
	CU_ASSERT_EQUAL(HY_OPTIONS_HEAT_PERIODS, HY_HEAT_DEFAULT_PERIODS);
	CU_ASSERT_EQUAL(HY_OPTIONS_HEAT_PERIODS_MIN, HY_HEAT_MIN_PERIODS);
	CU_ASSERT_EQUAL(HY_OPTIONS_HEAT_PERIODS_MAX, HY_HEAT_MAX_PERIODS);
	CU_ASSERT_DOUBLE_EQUAL(HY_OPTIONS_HEAT_THRESHOLD, HY_HEAT_DEFAULT_THRESHOLD, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(HY_OPTIONS_HEAT_THRESHOLD_MAX, HY_HEAT_THRESHOLD_MAX, 1e-12);
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
	char *tmp = hy_test_tmpdir(), *b, *m, *inner, *file, *root, *xdg, *real, *want, *legacy,
	     *db, name[256];
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

	/* the default state folder: out of the tree, named by the path */
	CU_ASSERT(asprintf(&root, "%s/root", tmp) > 0);
	CU_ASSERT(asprintf(&xdg, "%s/xdg", tmp) > 0);
	setenv("HYBRIDFS_STATE_ROOT", root, 1);
	setenv("XDG_STATE_HOME", xdg, 1);
	argv[1] = b, argv[2] = m;
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), 0);
	real = realpath(b, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(real);
	CU_ASSERT_EQUAL(hy_options_escape_path(real, name, sizeof(name)), 0);
	if (asprintf(&want, geteuid() == 0 ? "%s/%s" : "%s/hybridfs/%s",
		     geteuid() == 0 ? root : xdg, name) < 0)
		want = NULL;
	CU_ASSERT_PTR_NOT_NULL_FATAL(want);
	CU_ASSERT_STRING_EQUAL(o.state_dir, want);
	CU_ASSERT_FALSE(o.state_legacy);
	CU_ASSERT_FALSE(o.in_place);
	hy_options_free(&o);

	/* an older mount's BACKING/.hybridfs with a database keeps being used */
	CU_ASSERT(asprintf(&legacy, "%s/.hybridfs", b) > 0);
	CU_ASSERT(asprintf(&db, "%s/hybridfs.db", legacy) > 0);
	CU_ASSERT_EQUAL(mkdir(legacy, 0700), 0);
	fclose(fopen(db, "w"));
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(o.state_dir, "/b/.hybridfs"));
	CU_ASSERT_TRUE(o.state_legacy);
	hy_options_free(&o);

	/* ... but not by a mount in place, which would cover it */
	argv[1] = b, argv[2] = b;
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "Move it out"));
	hy_options_free(&o);
	unlink(db);
	rmdir(legacy);

	argv[1] = b, argv[2] = b; /* the mountpoint itself: a mount in place */
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), 0);
	CU_ASSERT_TRUE(o.in_place);
	hy_options_free(&o);

	/* a BOPT named inside a mount in place would be reached through it */
	{
		const char *bargv[6] = {"hybridfs", NULL, NULL, "-o", NULL, NULL};
		char *opt;

		CU_ASSERT(asprintf(&opt, "bopt=%s/x/bopt", b) > 0);
		bargv[1] = b, bargv[2] = b, bargv[4] = opt;
		CU_ASSERT_EQUAL(hy_options_parse(5, (char **)bargv, &o, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), -EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "inside the mountpoint"));
		hy_options_free(&o);
		free(opt);
	}
	unsetenv("HYBRIDFS_STATE_ROOT");
	unsetenv("XDG_STATE_HOME");

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
	free(root), free(xdg), free(real), free(want), free(legacy), free(db);
}

/* log=FILE: made absolute (the daemon leaves its working folder), never
 * inside the mountpoint; stack is a flag */
static void test_log_and_stack(void)
{
	char *tmp = hy_test_tmpdir(), *b, *m, *opt, *want, cwd[4096];
	const char *argv[6] = {"hybridfs", NULL, NULL, "-o", NULL, NULL};
	struct hy_options o;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
	CU_ASSERT(asprintf(&b, "%s/b", tmp) > 0);
	CU_ASSERT(asprintf(&m, "%s/m", tmp) > 0);
	CU_ASSERT_EQUAL(mkdir(b, 0755), 0);
	CU_ASSERT_EQUAL(mkdir(m, 0755), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof(cwd)));
	CU_ASSERT_EQUAL_FATAL(chdir(tmp), 0);
	argv[1] = b, argv[2] = m;

	argv[4] = "state=/x,log=hy.log,stack";
	CU_ASSERT_EQUAL(hy_options_parse(5, (char **)argv, &o, why, sizeof(why)), 0);
	CU_ASSERT_TRUE(o.stack);
	CU_ASSERT_STRING_EQUAL(o.log_file, "hy.log");
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), 0);
	CU_ASSERT(asprintf(&want, "%s/hy.log", tmp) > 0);
	CU_ASSERT_STRING_EQUAL(o.log_file, want);
	hy_options_free(&o);

	argv[4] = "state=/x";
	CU_ASSERT_EQUAL(hy_options_parse(5, (char **)argv, &o, why, sizeof(why)), 0);
	CU_ASSERT_FALSE(o.stack);
	CU_ASSERT_PTR_NULL(o.log_file);
	hy_options_free(&o);

	argv[4] = "log=";
	CU_ASSERT_EQUAL(hy_options_parse(5, (char **)argv, &o, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "needs a file"));
	hy_options_free(&o);
	argv[4] = "stack=maybe";
	CU_ASSERT_EQUAL(hy_options_parse(5, (char **)argv, &o, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "stack=maybe"));
	hy_options_free(&o);

	/* each line would be a request to the daemon that writes it */
	CU_ASSERT(asprintf(&opt, "state=/x,log=%s/sub/x.log", m) > 0);
	argv[4] = opt;
	CU_ASSERT_EQUAL(hy_options_parse(5, (char **)argv, &o, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "inside the mountpoint"));
	hy_options_free(&o);

	CU_ASSERT_EQUAL(chdir(cwd), 0);
	hy_test_rmtree(tmp);
	free(tmp), free(b), free(m), free(opt), free(want);
}

/* the state folder's name: systemd-escape --path */
static void test_escape_path(void)
{
	char out[256];

	CU_ASSERT_EQUAL(hy_options_escape_path("/home/ann/src", out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "home-ann-src");
	CU_ASSERT_EQUAL(hy_options_escape_path("/", out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "-");
	CU_ASSERT_EQUAL(hy_options_escape_path("/tmp/a-b c/.x/", out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "tmp-a\\x2db\\x20c-.x");
	CU_ASSERT_EQUAL(hy_options_escape_path("/.hidden/\xc3\xbc", out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "\\x2ehidden-\\xc3\\xbc");
	CU_ASSERT_EQUAL(hy_options_escape_path("/abcdef", out, 4), -ENAMETOOLONG);
}

/* state=LINK: the folder of the link is resolved, the link itself is not
 * followed, so that the daemon refuses it when it opens the folder
 * (its target may be anyone's; issue 16, finding 13) */
static void test_state_link(void)
{
	char *tmp = hy_test_tmpdir(), *b, *m, *target, *link, *opt, *want, *real;
	const char *argv[6] = {"hybridfs", "-o", NULL, NULL, NULL, NULL};
	struct hy_options o;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
	real = realpath(tmp, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(real);
	CU_ASSERT(asprintf(&b, "%s/b", tmp) > 0);
	CU_ASSERT(asprintf(&m, "%s/m", tmp) > 0);
	CU_ASSERT(asprintf(&target, "%s/elsewhere", tmp) > 0);
	CU_ASSERT(asprintf(&link, "%s/state", tmp) > 0);
	CU_ASSERT(asprintf(&opt, "state=%s/./state", tmp) > 0);
	CU_ASSERT(asprintf(&want, "%s/state", real) > 0);
	CU_ASSERT_EQUAL(mkdir(b, 0755), 0);
	CU_ASSERT_EQUAL(mkdir(m, 0755), 0);
	CU_ASSERT_EQUAL(mkdir(target, 0700), 0);
	CU_ASSERT_EQUAL(symlink(target, link), 0);
	argv[2] = opt, argv[3] = b, argv[4] = m;
	CU_ASSERT_EQUAL(parse(&o, argv), 0);
	CU_ASSERT_EQUAL(hy_options_check(&o, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o.state_dir);
	CU_ASSERT_STRING_EQUAL(o.state_dir, want);
	hy_options_free(&o);
	hy_test_rmtree(tmp);
	free(tmp), free(real), free(b), free(m), free(target), free(link), free(opt), free(want);
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
	    !CU_add_test(s, "SSD cache options", test_cache_options) ||
	    !CU_add_test(s, "cache_keep: auto, on, off", test_cache_keep) ||
	    !CU_add_test(s, "passthrough: off, excluded; no auto", test_passthrough_option) ||
	    !CU_add_test(s, "opendir: auto, kernel, daemon; not kernel with no timeout",
			 test_opendir_option) ||
	    !CU_add_test(s, "open: auto, kernel, daemon", test_open_option) ||
	    !CU_add_test(s, "readdirplus: auto, always", test_readdirplus_option) ||
	    !CU_add_test(s, "splice: on, off; nothing else", test_splice_option) ||
	    !CU_add_test(s, "metrics and metrics_interval", test_metrics_options) ||
	    !CU_add_test(s, "bad SSD cache options name the problem", test_bad_cache_options) ||
	    !CU_add_test(s, "cache_policy names agree with the policy module",
			 test_cache_policy_names) ||
	    !CU_add_test(s, "mount(8) helper mode", test_mount_helper) ||
	    !CU_add_test(s, "path checks", test_paths) ||
	    !CU_add_test(s, "log=FILE and stack", test_log_and_stack) ||
	    !CU_add_test(s, "state folder names (systemd-escape --path)", test_escape_path) ||
	    !CU_add_test(s, "state=LINK is not followed", test_state_link) ||
	    !CU_add_test(s, "libfuse arguments", test_fuse_args))
		return -1;
	return 0;
}
