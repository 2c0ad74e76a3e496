/* test_progress.c - hybridctl's progress line (ctl/progress.c): what
 * hy_progress_format() draws for a known and an unknown total, bytes and
 * items, with the rate, the ETA and "step i of n"; how it fits a narrow
 * terminal; and that nothing is drawn on a stream that is not a terminal.
 * The clock is the test's: no test here waits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/progress.h"
#include "suites.h"

static void test_known_total(void)
{
	struct hy_progress p;
	char line[256];
	size_t len;

	hy_progress_init(&p, NULL, false, HY_PROGRESS_BYTES, NULL, "step");
	hy_progress_begin(&p, "copying", 3, 4, 200u << 20);
	p.start = 100.0;
	p.done = 100u << 20;
	/* half of 200 MiB in 8 s: 12.5 MiB/s, 8 s to go */
	len = hy_progress_format(&p, 108.0, 100, line, sizeof(line));
	CU_ASSERT_EQUAL(len, strlen(line));
	/* the step first, then the label, the bar, the rest */
	CU_ASSERT_EQUAL(strncmp(line, "step 3 of 4  copying  [", 23), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "]   50%  100.0/200.0 MiB  12.5 MiB/s  ETA 0:08"));
	/* the bar is half full */
	{
		const char *open = strchr(line, '['), *close = strchr(line, ']');
		size_t fill = 0, width;

		CU_ASSERT_PTR_NOT_NULL_FATAL(open);
		CU_ASSERT_PTR_NOT_NULL_FATAL(close);
		width = (size_t)(close - open - 1);
		for (const char *c = open + 1; c < close; c++)
			fill += *c == '#';
		CU_ASSERT(width >= 8);
		CU_ASSERT_EQUAL(fill, width / 2);
	}
	/* a long ETA in hours */
	p.done = 1u << 20;
	hy_progress_format(&p, 101.0, 120, line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "ETA 3:19"));
	p.start = 0;
	p.done = 100u << 20;
	hy_progress_format(&p, 7200.0, 120, line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "ETA 2:00:00"));
	/* done: no ETA */
	p.done = 200u << 20;
	hy_progress_format(&p, 108.0, 120, line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "100%"));
	CU_ASSERT_PTR_NULL(strstr(line, "ETA"));
}

static void test_unknown_total(void)
{
	struct hy_progress p;
	char line[256];

	hy_progress_init(&p, NULL, false, HY_PROGRESS_ITEMS, "requests", "pass");
	hy_progress_begin(&p, "footprint", 1, 12, 0);
	p.start = 10.0;
	p.done = 1200000;
	hy_progress_format(&p, 13.0, 100, line, sizeof(line));
	/* no bar, no share, no ETA; the count, the rate, the time so far */
	CU_ASSERT_PTR_NULL(strchr(line, '['));
	CU_ASSERT_PTR_NULL(strchr(line, '%'));
	CU_ASSERT_PTR_NULL(strstr(line, "ETA"));
	CU_ASSERT_STRING_EQUAL(line, "pass 1 of 12  footprint  1.20M requests  400.0k/s  0:03");
	/* a count under ten thousand whole; a known total in its unit */
	p.done = 9999;
	hy_progress_format(&p, 13.0, 100, line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "footprint  9999 requests  3333/s"));
	p.total = 1500000;
	p.done = 852000;
	hy_progress_format(&p, 13.0, 200, line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, " 57%  0.85/1.50M requests  284.0k/s  ETA 0:02"));
	p.total = 0;
	/* too early for a rate */
	hy_progress_format(&p, 10.1, 100, line, sizeof(line));
	CU_ASSERT_PTR_NULL(strstr(line, "/s"));
	/* no steps: none said */
	hy_progress_begin(&p, "x", 0, 0, 0);
	hy_progress_format(&p, p.start, 100, line, sizeof(line));
	CU_ASSERT_PTR_NULL(strstr(line, " of "));
}

static void test_narrow(void)
{
	struct hy_progress p;
	char line[256];
	size_t len;

	hy_progress_init(&p, NULL, false, HY_PROGRESS_BYTES, NULL, "step");
	hy_progress_begin(&p, "copying", 3, 4, 1000);
	p.start = 0;
	p.done = 500;
	/* too narrow for a bar: none; never wider than the terminal; the
	 * step kept */
	len = hy_progress_format(&p, 10.0, 40, line, sizeof(line));
	CU_ASSERT_PTR_NULL(strchr(line, '['));
	CU_ASSERT(len <= 39);
	CU_ASSERT_EQUAL(strncmp(line, "step 3 of 4  copying", 20), 0);
	/* 80 columns: a bar still */
	hy_progress_format(&p, 10.0, 80, line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strchr(line, '['));
	CU_ASSERT(strlen(line) <= 79);
	/* a wide one: the bar stops at its widest */
	hy_progress_format(&p, 10.0, 300, line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strchr(line, '['));
	CU_ASSERT(strchr(line, ']') - strchr(line, '[') - 1 <= 30);
	/* a tiny buffer is cut, not overrun */
	len = hy_progress_format(&p, 10.0, 300, line, 8);
	CU_ASSERT_EQUAL(len, 7);
	CU_ASSERT_EQUAL(strlen(line), 7);
}

/* On a file (a pipe would do the same: not a terminal) nothing at all is
 * written, whatever is updated. */
static void test_not_a_terminal(void)
{
	struct hy_progress p;
	FILE *f = tmpfile();

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	hy_progress_init(&p, f, false, HY_PROGRESS_ITEMS, "requests", "pass");
	CU_ASSERT_FALSE(p.on);
	hy_progress_begin(&p, "pass", 1, 2, 100);
	p.start -= 10; /* as if long begun */
	hy_progress_update(&p, 50, 0);
	hy_progress_end(&p);
	CU_ASSERT_EQUAL(ftell(f), 0);
	CU_ASSERT_EQUAL(p.done, 50);
	fclose(f);
	/* quiet: off even where it could draw */
	hy_progress_init(&p, stderr, true, HY_PROGRESS_BYTES, NULL, NULL);
	CU_ASSERT_FALSE(p.on);
}

int hy_test_add_progress(void)
{
	CU_pSuite s = CU_add_suite("progress", NULL, NULL);

	if (!s || !CU_add_test(s, "a known total: bar, rate, ETA, step", test_known_total) ||
	    !CU_add_test(s, "an unknown total: count, rate, time", test_unknown_total) ||
	    !CU_add_test(s, "narrow terminals, small buffers", test_narrow) ||
	    !CU_add_test(s, "nothing off a terminal", test_not_a_terminal))
		return -1;
	return 0;
}
