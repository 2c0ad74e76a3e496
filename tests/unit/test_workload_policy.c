/* test_workload_policy.c - ReCA's policy table: the defaults of every row,
 * every key set and read back, the text round trip through
 * hy_workload_policy_each(), bad settings refused with the bad part named
 * and the table unchanged, and load and save through a real state
 * database (only non-default rows, damaged rows skipped). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "hybridfs/state.h"
#include "hybridfs/workload_policy.h"
#include "suites.h"

#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)

#define SETTINGS (HY_CATEGORY_COUNT * 12 + 2)

static char why[1024];

static bool same(const struct hy_workload_policy_table *a, const struct hy_workload_policy_table *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static void check_admit(const struct hy_workload_policy *p, unsigned dir,
			enum hy_workload_admit seq, enum hy_workload_admit strided,
			enum hy_workload_admit overlapped, enum hy_workload_admit random)
{
	CU_ASSERT_EQUAL(p->admit[dir][HY_CLASS_SEQUENTIAL], seq);
	CU_ASSERT_EQUAL(p->admit[dir][HY_CLASS_STRIDED], strided);
	CU_ASSERT_EQUAL(p->admit[dir][HY_CLASS_OVERLAPPED], overlapped);
	CU_ASSERT_EQUAL(p->admit[dir][HY_CLASS_RANDOM], random);
}

static void test_defaults(void)
{
	struct hy_workload_policy_table t;
	const struct hy_workload_policy *p;

	hy_workload_policy_defaults(&t);

	p = &t.row[HY_CATEGORY_UNKNOWN];
	CU_ASSERT_EQUAL(p->write, HY_WORKLOAD_WRITE_MOUNT);
	CU_ASSERT_EQUAL(p->line_size, 4 * KIB);
	check_admit(p, 0, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL);
	check_admit(p, 1, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL);
	CU_ASSERT_EQUAL(p->seq_cutoff, HY_WORKLOAD_CUTOFF_MOUNT);
	CU_ASSERT_EQUAL(p->evict, HY_EVICT_NORMAL);

	p = &t.row[HY_CATEGORY_RANDOM_CONSUMER];
	CU_ASSERT_EQUAL(p->write, HY_WORKLOAD_WRITE_AROUND);
	CU_ASSERT_EQUAL(p->line_size, 8 * KIB);
	check_admit(p, 0, HY_ADMIT_LOW, HY_ADMIT_NORMAL, HY_ADMIT_HIGH, HY_ADMIT_HIGH);
	check_admit(p, 1, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL);
	CU_ASSERT_EQUAL(p->seq_cutoff, HY_WORKLOAD_CUTOFF_MOUNT);
	CU_ASSERT_EQUAL(p->evict, HY_EVICT_NORMAL);

	p = &t.row[HY_CATEGORY_RANDOM_PRODUCER_CONSUMER];
	CU_ASSERT_EQUAL(p->write, HY_WORKLOAD_WRITE_MOUNT);
	CU_ASSERT_EQUAL(p->line_size, 4 * KIB);
	check_admit(p, 0, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL, HY_ADMIT_HIGH, HY_ADMIT_HIGH);
	check_admit(p, 1, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL, HY_ADMIT_HIGH, HY_ADMIT_HIGH);
	CU_ASSERT_EQUAL(p->seq_cutoff, HY_WORKLOAD_CUTOFF_MOUNT);
	CU_ASSERT_EQUAL(p->evict, HY_EVICT_LATE);

	p = &t.row[HY_CATEGORY_SEQUENTIAL_PRODUCER_CONSUMER];
	CU_ASSERT_EQUAL(p->write, HY_WORKLOAD_WRITE_THROUGH);
	CU_ASSERT_EQUAL(p->line_size, 16 * KIB);
	check_admit(p, 0, HY_ADMIT_LOW, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL);
	check_admit(p, 1, HY_ADMIT_LOW, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL, HY_ADMIT_NORMAL);
	CU_ASSERT_TRUE(p->admit[0][HY_CLASS_STRIDED] > p->admit[0][HY_CLASS_SEQUENTIAL]);
	CU_ASSERT_EQUAL(p->seq_cutoff, HY_WORKLOAD_CUTOFF_MOUNT);
	CU_ASSERT_EQUAL(p->evict, HY_EVICT_NORMAL);

	p = &t.row[HY_CATEGORY_ARCHIVAL_CONSUMER];
	CU_ASSERT_EQUAL(p->write, HY_WORKLOAD_WRITE_AROUND);
	CU_ASSERT_EQUAL(p->line_size, 64 * KIB);
	check_admit(p, 0, HY_ADMIT_BYPASS, HY_ADMIT_LOW, HY_ADMIT_LOW, HY_ADMIT_LOW);
	check_admit(p, 1, HY_ADMIT_LOW, HY_ADMIT_LOW, HY_ADMIT_LOW, HY_ADMIT_LOW);
	CU_ASSERT_EQUAL(p->seq_cutoff, HY_WORKLOAD_CUTOFF_MOUNT);
	CU_ASSERT_EQUAL(p->evict, HY_EVICT_EARLY);

	p = &t.row[HY_CATEGORY_LARGE_FILE_GENERATOR];
	CU_ASSERT_EQUAL(p->write, HY_WORKLOAD_WRITE_AROUND);
	CU_ASSERT_EQUAL(p->line_size, 64 * KIB);
	check_admit(p, 0, HY_ADMIT_LOW, HY_ADMIT_LOW, HY_ADMIT_LOW, HY_ADMIT_LOW);
	check_admit(p, 1, HY_ADMIT_BYPASS, HY_ADMIT_LOW, HY_ADMIT_LOW, HY_ADMIT_LOW);
	CU_ASSERT_EQUAL(p->seq_cutoff, MIB);
	CU_ASSERT_EQUAL(p->evict, HY_EVICT_EARLY);

	CU_ASSERT_EQUAL(t.metadata_timeout_ms, 10000);
	CU_ASSERT_EQUAL(t.metadata_share_permille, 500);

	/* an out-of-range category reads the unknown row */
	CU_ASSERT_PTR_EQUAL(hy_workload_policy_row(&t, HY_CATEGORY_COUNT),
			    &t.row[HY_CATEGORY_UNKNOWN]);
	CU_ASSERT_PTR_EQUAL(hy_workload_policy_row(&t, (enum hy_category) - 1),
			    &t.row[HY_CATEGORY_UNKNOWN]);
	CU_ASSERT_PTR_EQUAL(hy_workload_policy_row(&t, HY_CATEGORY_ARCHIVAL_CONSUMER),
			    &t.row[HY_CATEGORY_ARCHIVAL_CONSUMER]);
}

static void test_names(void)
{
	CU_ASSERT_STRING_EQUAL(hy_workload_write_name(HY_WORKLOAD_WRITE_MOUNT), "mount");
	CU_ASSERT_STRING_EQUAL(hy_workload_write_name(HY_WORKLOAD_WRITE_BACK), "back");
	CU_ASSERT_STRING_EQUAL(hy_workload_write_name(HY_WORKLOAD_WRITE_THROUGH), "through");
	CU_ASSERT_STRING_EQUAL(hy_workload_write_name(HY_WORKLOAD_WRITE_AROUND), "around");
	CU_ASSERT_STRING_EQUAL(hy_workload_write_name((enum hy_workload_write)4), "invalid");
	CU_ASSERT_STRING_EQUAL(hy_workload_admit_name(HY_ADMIT_BYPASS), "bypass");
	CU_ASSERT_STRING_EQUAL(hy_workload_admit_name(HY_ADMIT_LOW), "low");
	CU_ASSERT_STRING_EQUAL(hy_workload_admit_name(HY_ADMIT_NORMAL), "normal");
	CU_ASSERT_STRING_EQUAL(hy_workload_admit_name(HY_ADMIT_HIGH), "high");
	CU_ASSERT_STRING_EQUAL(hy_workload_admit_name((enum hy_workload_admit)9), "invalid");
	CU_ASSERT_STRING_EQUAL(hy_workload_evict_name(HY_EVICT_EARLY), "early");
	CU_ASSERT_STRING_EQUAL(hy_workload_evict_name(HY_EVICT_NORMAL), "normal");
	CU_ASSERT_STRING_EQUAL(hy_workload_evict_name(HY_EVICT_LATE), "late");
	CU_ASSERT_STRING_EQUAL(hy_workload_evict_name((enum hy_workload_evict) - 1), "invalid");
}

/* @setting is accepted and @name then reads @expect. */
static void set_get(struct hy_workload_policy_table *t, const char *setting, const char *name,
		    const char *expect)
{
	char buf[64];

	CU_ASSERT_EQUAL(hy_workload_policy_set(t, setting, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_workload_policy_get(t, name, buf, sizeof(buf), why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(buf, expect);
	if (strcmp(buf, expect) != 0)
		fprintf(stderr, "\n%s: read \"%s\", expected \"%s\" (%s)\n", setting, buf, expect,
			why);
}

static void test_text_form(void)
{
	struct hy_workload_policy_table t;
	char buf[64];

	hy_workload_policy_defaults(&t);
	/* the defaults as text */
	CU_ASSERT_EQUAL(hy_workload_policy_get(&t, "random-consumer.line_size", buf, sizeof(buf),
					       why, sizeof(why)),
			0);
	CU_ASSERT_STRING_EQUAL(buf, "8K");
	CU_ASSERT_EQUAL(hy_workload_policy_get(&t, "large-file-generator.seq_cutoff", buf,
					       sizeof(buf), why, sizeof(why)),
			0);
	CU_ASSERT_STRING_EQUAL(buf, "1M");
	CU_ASSERT_EQUAL(hy_workload_policy_get(&t, "unknown.seq_cutoff", buf, sizeof(buf), why,
					       sizeof(why)),
			0);
	CU_ASSERT_STRING_EQUAL(buf, "mount");
	CU_ASSERT_EQUAL(hy_workload_policy_get(&t, "archival-consumer.admit.read.sequential", buf,
					       sizeof(buf), why, sizeof(why)),
			0);
	CU_ASSERT_STRING_EQUAL(buf, "bypass");
	CU_ASSERT_EQUAL(
		hy_workload_policy_get(&t, "metadata.timeout", buf, sizeof(buf), why, sizeof(why)),
		0);
	CU_ASSERT_STRING_EQUAL(buf, "10");
	CU_ASSERT_EQUAL(
		hy_workload_policy_get(&t, "metadata.share", buf, sizeof(buf), why, sizeof(why)),
		0);
	CU_ASSERT_STRING_EQUAL(buf, "500");

	/* the spellings a value may take, and its canonical form */
	set_get(&t, "unknown.line_size=8192", "unknown.line_size", "8K");
	set_get(&t, "unknown.line_size=16k", "unknown.line_size", "16K");
	set_get(&t, "unknown.line_size=32KiB", "unknown.line_size", "32K");
	set_get(&t, "unknown.line_size=64K", "unknown.line_size", "64K");
	set_get(&t, "unknown.line_size=4096", "unknown.line_size", "4K");
	CU_ASSERT_EQUAL(t.row[HY_CATEGORY_UNKNOWN].line_size, 4096);
	set_get(&t, "unknown.seq_cutoff=0", "unknown.seq_cutoff", "0");
	CU_ASSERT_EQUAL(t.row[HY_CATEGORY_UNKNOWN].seq_cutoff, 0);
	set_get(&t, "unknown.seq_cutoff=1536", "unknown.seq_cutoff", "1536");
	set_get(&t, "unknown.seq_cutoff=3072K", "unknown.seq_cutoff", "3M");
	set_get(&t, "unknown.seq_cutoff=2g", "unknown.seq_cutoff", "2G");
	CU_ASSERT_EQUAL(t.row[HY_CATEGORY_UNKNOWN].seq_cutoff, 2 * 1024 * MIB);
	set_get(&t, "unknown.seq_cutoff=1536MiB", "unknown.seq_cutoff", "1536M");
	set_get(&t, "unknown.seq_cutoff=18446744073709551614", "unknown.seq_cutoff",
		"18446744073709551614");
	set_get(&t, "unknown.seq_cutoff=mount", "unknown.seq_cutoff", "mount");
	CU_ASSERT_EQUAL(t.row[HY_CATEGORY_UNKNOWN].seq_cutoff, HY_WORKLOAD_CUTOFF_MOUNT);
	set_get(&t, "metadata.timeout=0.5", "metadata.timeout", "0.5");
	CU_ASSERT_EQUAL(t.metadata_timeout_ms, 500);
	set_get(&t, "metadata.timeout=2.250", "metadata.timeout", "2.25");
	CU_ASSERT_EQUAL(t.metadata_timeout_ms, 2250);
	set_get(&t, "metadata.timeout=0.001", "metadata.timeout", "0.001");
	set_get(&t, "metadata.timeout=1.0000", "metadata.timeout", "1");
	set_get(&t, "metadata.timeout=0", "metadata.timeout", "0");
	set_get(&t, "metadata.timeout=86400", "metadata.timeout", "86400");
	CU_ASSERT_EQUAL(t.metadata_timeout_ms, 86400000);
	set_get(&t, "metadata.share=1", "metadata.share", "1");
	set_get(&t, "metadata.share=1000", "metadata.share", "1000");
	set_get(&t, "random-producer-consumer.write=back", "random-producer-consumer.write",
		"back");
	CU_ASSERT_EQUAL(t.row[HY_CATEGORY_RANDOM_PRODUCER_CONSUMER].write, HY_WORKLOAD_WRITE_BACK);
	set_get(&t, "sequential-producer-consumer.admit.write.strided=high",
		"sequential-producer-consumer.admit.write.strided", "high");
	CU_ASSERT_EQUAL(t.row[HY_CATEGORY_SEQUENTIAL_PRODUCER_CONSUMER].admit[1][HY_CLASS_STRIDED],
			HY_ADMIT_HIGH);
	set_get(&t, "archival-consumer.evict=late", "archival-consumer.evict", "late");

	/* get's own errors */
	CU_ASSERT_EQUAL(
		hy_workload_policy_get(&t, "nope.write", buf, sizeof(buf), why, sizeof(why)),
		-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"nope\""));
	CU_ASSERT_EQUAL(
		hy_workload_policy_get(&t, "unknown.nope", buf, sizeof(buf), why, sizeof(why)),
		-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"nope\""));
	CU_ASSERT_EQUAL(
		hy_workload_policy_get(&t, "archival-consumer.evict", buf, 3, why, sizeof(why)),
		-ERANGE);
}

struct collected {
	unsigned n;
	char name[SETTINGS + 1][64];
	char value[SETTINGS + 1][32];
};

static int collect(void *arg, const char *name, const char *value)
{
	struct collected *c = arg;

	if (c->n > SETTINGS)
		return -1;
	snprintf(c->name[c->n], sizeof(c->name[0]), "%s", name);
	snprintf(c->value[c->n], sizeof(c->value[0]), "%s", value);
	c->n++;
	return 0;
}

static int stop_at_third(void *arg, const char *name, const char *value)
{
	unsigned *n = arg;

	(void)name, (void)value;
	return ++*n == 3 ? 42 : 0;
}

/* A value for @name other than @now, by the key's kind. */
static const char *other_value(const char *name, const char *now)
{
	static const char *const writes[] = {"back", "through", "around", "mount", NULL};
	static const char *const admits[] = {"bypass", "low", "normal", "high", NULL};
	static const char *const evicts[] = {"early", "normal", "late", NULL};
	static const char *const lines[] = {"32K", "4K", NULL};
	static const char *const cutoffs[] = {"3M", "0", NULL};
	static const char *const timeouts[] = {"2.5", "7", NULL};
	static const char *const shares[] = {"123", "999", NULL};
	const char *key = strchr(name, '.') + 1;
	const char *const *pick;

	if (strcmp(key, "write") == 0)
		pick = writes;
	else if (strncmp(key, "admit.", 6) == 0)
		pick = admits;
	else if (strcmp(key, "evict") == 0)
		pick = evicts;
	else if (strcmp(key, "line_size") == 0)
		pick = lines;
	else if (strcmp(key, "seq_cutoff") == 0)
		pick = cutoffs;
	else if (strcmp(key, "timeout") == 0)
		pick = timeouts;
	else
		pick = shares;
	for (; *pick; pick++)
		if (strcmp(*pick, now) != 0)
			return *pick;
	return NULL;
}

/* Every key is named by each(), sets and reads back; the whole table
 * round-trips through its text. */
static void test_every_key(void)
{
	static struct collected c, c2;
	struct hy_workload_policy_table t, before, copy;
	char setting[128], buf[64];
	unsigned n = 0;

	hy_workload_policy_defaults(&t);
	memset(&c, 0, sizeof(c));
	CU_ASSERT_EQUAL(hy_workload_policy_each(&t, collect, &c), 0);
	CU_ASSERT_EQUAL_FATAL(c.n, SETTINGS);
	CU_ASSERT_STRING_EQUAL(c.name[0], "unknown.write");
	CU_ASSERT_STRING_EQUAL(c.name[1], "unknown.line_size");
	CU_ASSERT_STRING_EQUAL(c.name[2], "unknown.admit.read.sequential");
	CU_ASSERT_STRING_EQUAL(c.name[9], "unknown.admit.write.random");
	CU_ASSERT_STRING_EQUAL(c.name[10], "unknown.seq_cutoff");
	CU_ASSERT_STRING_EQUAL(c.name[11], "unknown.evict");
	CU_ASSERT_STRING_EQUAL(c.name[12], "random-consumer.write");
	CU_ASSERT_STRING_EQUAL(c.name[SETTINGS - 3], "large-file-generator.evict");
	CU_ASSERT_STRING_EQUAL(c.name[SETTINGS - 2], "metadata.timeout");
	CU_ASSERT_STRING_EQUAL(c.name[SETTINGS - 1], "metadata.share");
	/* names are distinct, and each matches get */
	for (unsigned i = 0; i < c.n; i++) {
		for (unsigned j = 0; j < i; j++)
			CU_ASSERT_STRING_NOT_EQUAL(c.name[i], c.name[j]);
		CU_ASSERT_EQUAL(
			hy_workload_policy_get(&t, c.name[i], buf, sizeof(buf), why, sizeof(why)),
			0);
		CU_ASSERT_STRING_EQUAL(buf, c.value[i]);
	}

	/* each key: a different value is taken, read back, and changes the
	 * table */
	for (unsigned i = 0; i < c.n; i++) {
		const char *v = other_value(c.name[i], c.value[i]);

		CU_ASSERT_PTR_NOT_NULL_FATAL(v);
		memcpy(&before, &t, sizeof(t));
		snprintf(setting, sizeof(setting), "%s=%s", c.name[i], v);
		CU_ASSERT_EQUAL(hy_workload_policy_set(&t, setting, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(
			hy_workload_policy_get(&t, c.name[i], buf, sizeof(buf), why, sizeof(why)),
			0);
		CU_ASSERT_STRING_EQUAL(buf, v);
		CU_ASSERT_FALSE(same(&t, &before));
	}

	/* the changed table through its text onto a fresh one */
	memset(&c2, 0, sizeof(c2));
	CU_ASSERT_EQUAL(hy_workload_policy_each(&t, collect, &c2), 0);
	CU_ASSERT_EQUAL_FATAL(c2.n, SETTINGS);
	hy_workload_policy_defaults(&copy);
	CU_ASSERT_FALSE(same(&copy, &t));
	for (unsigned i = 0; i < c2.n; i++) {
		CU_ASSERT_STRING_NOT_EQUAL(c2.value[i], c.value[i]); /* every one changed */
		snprintf(setting, sizeof(setting), "%s=%s", c2.name[i], c2.value[i]);
		CU_ASSERT_EQUAL(hy_workload_policy_set(&copy, setting, why, sizeof(why)), 0);
	}
	CU_ASSERT_TRUE(same(&copy, &t));

	/* each stops at the first non-zero return */
	CU_ASSERT_EQUAL(hy_workload_policy_each(&t, stop_at_third, &n), 42);
	CU_ASSERT_EQUAL(n, 3);
}

/* Each bad setting is refused, names its bad part, changes nothing. */
static void test_bad_input(void)
{
	static const struct {
		const char *setting, *token;
	} bad[] = {
		{"foo.write=back", "\"foo\""},
		{"random-consumer.colour=red", "\"colour\""},
		{"random-consumer.admit.read.diagonal=high", "\"diagonal\""},
		{"random-consumer.admit.sideways.random=high", "\"admit.sideways.random\""},
		{"random-consumer.admit.read=high", "\"admit.read\""},
		{"random-consumer.admit.read.random=urgent", "\"urgent\""},
		{"random-consumer.admit.write.random=", "random \"\""},
		{"random-consumer.write=sideways", "\"sideways\""},
		{"random-consumer.write=Back", "\"Back\""},
		{"random-consumer.evict=never", "\"never\""},
		{"unknown.line_size=12K",
		 "line_size \"12K\": not a power of two between 4K and 64K"},
		{"unknown.line_size=2K", "\"2K\""},
		{"unknown.line_size=128K", "\"128K\""},
		{"unknown.line_size=abc", "\"abc\""},
		{"unknown.line_size=-8K", "\"-8K\""},
		{"unknown.line_size=8KB", "\"8KB\""},
		{"unknown.line_size= 8K", "\" 8K\""},
		{"unknown.line_size=4095", "\"4095\""},
		{"unknown.line_size=0", "\"0\""},
		{"unknown.line_size=", "line_size \"\""},
		{"unknown.line_size=99999999999999999999K", "\"99999999999999999999K\""},
		{"unknown.seq_cutoff=-1", "\"-1\""},
		{"unknown.seq_cutoff=5X", "\"5X\""},
		{"unknown.seq_cutoff=+5", "\"+5\""},
		{"unknown.seq_cutoff= 5", "\" 5\""},
		{"unknown.seq_cutoff=0x10", "\"0x10\""},
		{"unknown.seq_cutoff=Mount", "\"Mount\""},
		{"unknown.seq_cutoff=18446744073709551616", "\"18446744073709551616\""},
		{"unknown.seq_cutoff=18446744073709551615", "\"18446744073709551615\""},
		{"unknown.seq_cutoff=17179869184G", "\"17179869184G\""},
		{"metadata.timeout=-1", "\"-1\""},
		{"metadata.timeout=1e9", "\"1e9\""},
		{"metadata.timeout=86401", "\"86401\""},
		{"metadata.timeout=86400.001", "\"86400.001\""},
		{"metadata.timeout=99999999999999999999999", "\"99999999999999999999999\""},
		{"metadata.timeout=0.0001", "\"0.0001\""},
		{"metadata.timeout=1.", "\"1.\""},
		{"metadata.timeout=.5", "\".5\""},
		{"metadata.timeout=nan", "\"nan\""},
		{"metadata.timeout=1,5", "\"1,5\""},
		{"metadata.share=0", "\"0\""},
		{"metadata.share=1001", "\"1001\""},
		{"metadata.share=-5", "\"-5\""},
		{"metadata.share=5%", "\"5%\""},
		{"metadata.colour=1", "\"colour\""},
		{"metadata.line_size=8K", "\"line_size\""},
		{"x", "no \"=\" in setting \"x\""},
		{"random-consumer.write", "\"random-consumer.write\""},
		{"random-consumer=back", "\"random-consumer\""},
		{"=5", "\"\""},
		{"Random-Consumer.write=back", "\"Random-Consumer\""},
		{"random-consumer.write =back", "\"write \""},
	};
	struct hy_workload_policy_table t, before;

	hy_workload_policy_defaults(&t);
	/* from a changed table too: a refusal must not reset anything */
	CU_ASSERT_EQUAL(hy_workload_policy_set(&t, "unknown.line_size=32K", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_workload_policy_set(&t, "metadata.timeout=3", why, sizeof(why)), 0);
	memcpy(&before, &t, sizeof(t));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		CU_ASSERT_EQUAL(hy_workload_policy_set(&t, bad[i].setting, why, sizeof(why)),
				-EINVAL);
		CU_ASSERT_TRUE(same(&t, &before));
		CU_ASSERT_PTR_NOT_NULL(strstr(why, bad[i].token));
		if (!strstr(why, bad[i].token))
			fprintf(stderr, "\n\"%s\": message \"%s\" lacks %s\n", bad[i].setting, why,
				bad[i].token);
	}
	/* the unknown category lists what is known */
	CU_ASSERT_EQUAL(hy_workload_policy_set(&t, "foo.write=back", why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why,
				      "(expected unknown, random-consumer, "
				      "random-producer-consumer, sequential-producer-consumer, "
				      "archival-consumer, large-file-generator, metadata)"));
	/* no message buffer is fine */
	CU_ASSERT_EQUAL(hy_workload_policy_set(&t, "foo.write=back", NULL, 0), -EINVAL);
	/* a tiny one is filled, not overrun */
	memset(why, 'z', sizeof(why));
	CU_ASSERT_EQUAL(hy_workload_policy_set(&t, "foo.write=back", why, 4), -EINVAL);
	CU_ASSERT_EQUAL(strlen(why), 3);
	CU_ASSERT_EQUAL(why[4], 'z');
	CU_ASSERT_TRUE(same(&t, &before));
}

/* --- the state database --------------------------------------------- */

static int count_rows(struct hy_state *state)
{
	sqlite3_stmt *stmt;
	int n = -1;

	if (sqlite3_prepare_v2(state->db, "SELECT count(*) FROM workload_policy", -1, &stmt,
			       NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(stmt) == SQLITE_ROW)
		n = sqlite3_column_int(stmt, 0);
	sqlite3_finalize(stmt);
	return n;
}

static char *row_value(struct hy_state *state, const char *name)
{
	sqlite3_stmt *stmt;
	char *v = NULL;

	if (sqlite3_prepare_v2(state->db, "SELECT value FROM workload_policy WHERE name = ?1", -1,
			       &stmt, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		v = strdup((const char *)sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	return v;
}

static void test_load_save(void)
{
	char *tmp = hy_test_tmpdir(), *dir = hy_test_path_in(tmp, "state"), *v;
	struct hy_workload_policy_table t, defaults, loaded;
	struct hy_state *state;

	CU_ASSERT_PTR_NOT_NULL_FATAL(tmp);
	hy_workload_policy_defaults(&defaults);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/backing", false, &state, why, sizeof(why)), 0);

	/* a new database: no rows, the defaults */
	CU_ASSERT_EQUAL(count_rows(state), 0);
	memset(&loaded, 0x5a, sizeof(loaded));
	CU_ASSERT_EQUAL(hy_workload_policy_load(state->db, &loaded), 0);
	CU_ASSERT_TRUE(same(&loaded, &defaults));

	/* the defaults save as nothing */
	CU_ASSERT_EQUAL(hy_workload_policy_save(state->db, &defaults), 0);
	CU_ASSERT_EQUAL(count_rows(state), 0);

	/* three changes, three rows; setting a default back is no row */
	memcpy(&t, &defaults, sizeof(t));
	CU_ASSERT_EQUAL(
		hy_workload_policy_set(&t, "random-producer-consumer.write=back", why, sizeof(why)),
		0);
	CU_ASSERT_EQUAL(
		hy_workload_policy_set(&t, "large-file-generator.seq_cutoff=4M", why, sizeof(why)),
		0);
	CU_ASSERT_EQUAL(hy_workload_policy_set(&t, "metadata.timeout=2.5", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_workload_policy_set(&t, "unknown.evict=normal", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_workload_policy_save(state->db, &t), 0);
	CU_ASSERT_EQUAL(count_rows(state), 3);
	v = row_value(state, "large-file-generator.seq_cutoff");
	CU_ASSERT_PTR_NOT_NULL(v);
	if (v)
		CU_ASSERT_STRING_EQUAL(v, "4M");
	free(v);
	CU_ASSERT_EQUAL(hy_workload_policy_load(state->db, &loaded), 0);
	CU_ASSERT_TRUE(same(&loaded, &t));

	/* saving again replaces the rows */
	CU_ASSERT_EQUAL(hy_workload_policy_set(&t, "metadata.timeout=10", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_workload_policy_save(state->db, &t), 0);
	CU_ASSERT_EQUAL(count_rows(state), 2);
	v = row_value(state, "metadata.timeout");
	CU_ASSERT_PTR_NULL(v);
	free(v);

	/* it survives a reopen */
	hy_state_close(state);
	CU_ASSERT_EQUAL_FATAL(hy_state_open(dir, "/backing", false, &state, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_workload_policy_load(state->db, &loaded), 0);
	CU_ASSERT_TRUE(same(&loaded, &t));

	/* damaged rows are skipped, the good ones still load; an integer
	 * value is read as its text */
	CU_ASSERT_EQUAL(sqlite3_exec(state->db,
				     "INSERT INTO workload_policy VALUES"
				     " ('random-consumer.line_size', '12K'),"
				     " ('bogus.key', '1'),"
				     " ('metadata.share', 250);",
				     NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(hy_workload_policy_load(state->db, &loaded), 0);
	CU_ASSERT_EQUAL(loaded.row[HY_CATEGORY_RANDOM_CONSUMER].line_size, 8 * KIB);
	CU_ASSERT_EQUAL(loaded.metadata_share_permille, 250);
	CU_ASSERT_EQUAL(loaded.row[HY_CATEGORY_RANDOM_PRODUCER_CONSUMER].write,
			HY_WORKLOAD_WRITE_BACK);
	CU_ASSERT_EQUAL(loaded.row[HY_CATEGORY_LARGE_FILE_GENERATOR].seq_cutoff, 4 * MIB);
	loaded.metadata_share_permille = t.metadata_share_permille;
	CU_ASSERT_TRUE(same(&loaded, &t));

	/* a table with a field out of range is not saved; the rows stay */
	t.row[HY_CATEGORY_UNKNOWN].line_size = 12 * KIB;
	CU_ASSERT_EQUAL(hy_workload_policy_save(state->db, &t), -EINVAL);
	CU_ASSERT_EQUAL(count_rows(state), 5);
	t.row[HY_CATEGORY_UNKNOWN].line_size = 4 * KIB;
	t.row[HY_CATEGORY_UNKNOWN].admit[0][HY_CLASS_RANDOM] = 7;
	CU_ASSERT_EQUAL(hy_workload_policy_save(state->db, &t), -EINVAL);
	CU_ASSERT_EQUAL(count_rows(state), 5);

	/* an emptied table loads as the defaults */
	CU_ASSERT_EQUAL(sqlite3_exec(state->db, "DELETE FROM workload_policy", NULL, NULL, NULL),
			SQLITE_OK);
	CU_ASSERT_EQUAL(hy_workload_policy_load(state->db, &loaded), 0);
	CU_ASSERT_TRUE(same(&loaded, &defaults));

	/* save inside someone else's transaction fails and leaves it open */
	CU_ASSERT_EQUAL(sqlite3_exec(state->db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	hy_workload_policy_defaults(&t);
	CU_ASSERT_EQUAL(hy_workload_policy_set(&t, "unknown.write=back", why, sizeof(why)), 0);
	CU_ASSERT_TRUE(hy_workload_policy_save(state->db, &t) < 0);
	CU_ASSERT_FALSE(sqlite3_get_autocommit(state->db));
	CU_ASSERT_EQUAL(sqlite3_exec(state->db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	hy_state_close(state);
	hy_test_rmtree(tmp);
	free(tmp), free(dir);
}

/* A database without the table: an error, and the defaults. */
static void test_load_no_table(void)
{
	struct hy_workload_policy_table t, defaults;
	sqlite3 *db;

	hy_workload_policy_defaults(&defaults);
	CU_ASSERT_EQUAL_FATAL(sqlite3_open(":memory:", &db), SQLITE_OK);
	memset(&t, 0x5a, sizeof(t));
	CU_ASSERT_TRUE(hy_workload_policy_load(db, &t) < 0);
	CU_ASSERT_TRUE(same(&t, &defaults));
	CU_ASSERT_TRUE(hy_workload_policy_save(db, &t) < 0);
	CU_ASSERT_TRUE(sqlite3_get_autocommit(db)); /* rolled back */
	sqlite3_close(db);
}

int hy_test_add_workload_policy(void)
{
	CU_pSuite s = CU_add_suite("workload_policy", NULL, NULL);

	if (!s || !CU_add_test(s, "defaults of every row", test_defaults) ||
	    !CU_add_test(s, "names of the values", test_names) ||
	    !CU_add_test(s, "text form: spellings and canonical values", test_text_form) ||
	    !CU_add_test(s, "every key sets, gets and round-trips", test_every_key) ||
	    !CU_add_test(s, "bad settings refused, table unchanged", test_bad_input) ||
	    !CU_add_test(s, "load and save through the state database", test_load_save) ||
	    !CU_add_test(s, "load without the table", test_load_no_table))
		return -1;
	return 0;
}
