/* test_trace_reader.c - the block trace reader: golden records for each
 * format (plain and gzip), detection, bad lines and strict mode, device
 * numbering, empty and missing files, a random-input loop that must never
 * crash, and the real traces in /work/shared/traces when they are there. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "hybridfs/trace_reader.h"
#include "suites.h"

#define SHARED_TRACES "/work/shared/traces"

static char why[1024];

struct want {
	int64_t ts_ns;
	uint32_t device;
	uint64_t offset, length;
	bool write;
	int64_t pid;
	const char *process;
	uint64_t line;
};

/* Writes @len bytes of @text to @dir/@name, gzipped when @gz; the path
 * (malloc'd) or NULL. */
static char *write_trace(const char *dir, const char *name, const char *text, size_t len, bool gz)
{
	char *path = hy_test_path_in(dir, name);
	bool ok;

	if (!path)
		return NULL;
	if (gz) {
		gzFile g = gzopen(path, "wb");

		ok = g && (len == 0 || gzwrite(g, text, (unsigned)len) == (int)len);
		if (g && gzclose(g) != Z_OK)
			ok = false;
	} else {
		FILE *f = fopen(path, "wb");

		ok = f && fwrite(text, 1, len, f) == len;
		if (f && fclose(f) != 0)
			ok = false;
	}
	if (!ok) {
		free(path);
		return NULL;
	}
	return path;
}

/* Reads every record of @path in @format, checking them against @want. */
static void check_records(const char *path, const char *format, const struct want *want, size_t n,
			  enum hy_trace_reader_format expect_format)
{
	struct hy_trace_reader *r = NULL;
	struct hy_trace_record rec;
	struct hy_trace_reader_stats st;
	size_t i = 0;
	int rc;

	rc = hy_trace_reader_open(path, format, true, &r, why, sizeof(why));
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(hy_trace_reader_format(r), expect_format);
	while ((rc = hy_trace_reader_next(r, &rec)) == 1) {
		CU_ASSERT_FATAL(i < n);
		CU_ASSERT_EQUAL(rec.ts_ns, want[i].ts_ns);
		CU_ASSERT_EQUAL(rec.device, want[i].device);
		CU_ASSERT_EQUAL(rec.offset, want[i].offset);
		CU_ASSERT_EQUAL(rec.length, want[i].length);
		CU_ASSERT_EQUAL(rec.write, want[i].write);
		CU_ASSERT_EQUAL(rec.pid, want[i].pid);
		CU_ASSERT_STRING_EQUAL(rec.process, want[i].process);
		CU_ASSERT_EQUAL(rec.line, want[i].line);
		i++;
	}
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_EQUAL(i, n);
	hy_trace_reader_get_stats(r, &st);
	CU_ASSERT_EQUAL(st.records, n);
	CU_ASSERT_EQUAL(st.bad_lines, 0);
	CU_ASSERT_STRING_EQUAL(hy_trace_reader_error(r), "");
	/* the end stays the end */
	CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), 0);
	hy_trace_reader_close(r);
}

struct golden {
	enum hy_trace_reader_format format;
	const char *text;
	const struct want *want;
	size_t n;
};

#define GOLDEN(f, t, w)                                                                            \
	{                                                                                          \
		f, t, w, sizeof(w) / sizeof(w[0])                                                  \
	}

static const char msr_text[] = "128166385295514663,hm,0,Write,9056014336,2048,2833\n"
			       "128166385295515175,hm,1,Read,5548077056,4096,2320\n"
			       "128166385295515175,src,0,read,0,0,0\n";
static const struct want msr_want[] = {
	{1172164929551466300, 0, 9056014336, 2048, true, -1, "", 1},
	{1172164929551517500, 1, 5548077056, 4096, false, -1, "", 2},
	{1172164929551517500, 2, 0, 0, false, -1, "", 3},
};

static const char heimdall_text[] = "0.000 0 200626176 4096 0\n"
				    "223.412 3 3159347200 36864 1\n"
				    "0.0015 0 512 512 1\n";
static const struct want heimdall_want[] = {
	{0, 0, 200626176, 4096, true, -1, "", 1},
	{223412000, 1, 3159347200, 36864, false, -1, "", 2},
	{1500, 0, 512, 512, false, -1, "", 3},
};

static const char fiu_text[] =
	"89966811921625 4257 nfsd 488846200 8 W 6 0 2c4787c7671c2f638777c4ab72859ce1\n"
	"89967003980393 0 swapper 508455704 16 R 8 1 0\n"
	"89967003980394 12 gzip 1 8 R 6 0 0\n";
static const struct want fiu_want[] = {
	{89966811921625, 0, 250289254400, 4096, true, 4257, "nfsd", 1},
	{89967003980393, 1, 260329320448, 8192, false, 0, "swapper", 2},
	{89967003980394, 0, 512, 4096, false, 12, "gzip", 3},
};

static const char blkparse_text[] =
	"  8,16   5        1     0.000000000 18615  A   R 1444645666 + 256 <- (8,17) 1444645632\n"
	"  8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]\n"
	"  8,16   5        0     0.000012990     0  m   N cfq18615S / insert_request\n"
	"  8,0    1        3     1.500000000    99  Q  WS 100 + 8 [kworker/u8:2 x]\n"
	"  8,16   2        4     2.000000001    77  Q   N [foo]\n"
	"  8,16   2        5     2.5            77  Q FWS [flush]\n"
	"  8,16   2        6     3.25           77  Q  RA 7 + 1 [cat]\n"
	"CPU0 (sdb):\n"
	" Reads Queued:           0,        0KiB\t Writes Queued:          84,      336KiB\n"
	"Total (sdb):\n";
static const struct want blkparse_want[] = {
	{1850, 0, 739658580992, 131072, false, 18615, "java", 2},
	{1500000000, 1, 51200, 4096, true, 99, "kworker/u8:2 x", 4},
	{3250000000, 0, 3584, 512, false, 77, "cat", 7},
};

static const char disksim_text[] = "11413000 0 657728 16 1\n"
				   "11565000 1 31244784 64 0\n"
				   "11721000 1 21868784 16 1\n";
static const struct want disksim_want[] = {
	{11413000, 0, 336756736, 8192, false, -1, "", 1},
	{11565000, 1, 15997329408, 32768, true, -1, "", 2},
	{11721000, 1, 11196817408, 8192, false, -1, "", 3},
};

static const char spc_text[] = "0,303567,3584,w,0.000000\n"
			       "1,1148109,8192,R,0.001111\n"
			       "0,1,512,W,12.5\n";
static const struct want spc_want[] = {
	{0, 0, 155426304, 3584, true, -1, "", 1},
	{1111000, 1, 587831808, 8192, false, -1, "", 2},
	{12500000000, 0, 512, 512, true, -1, "", 3},
};

static const char vscsi_text[] = "version,time,op,size,lbn\n"
				 "1,5633898,2a,512,42932745\n"
				 "1,5633899,28,4096,8\n"
				 "2,5633900,0x88,512,0\n"
				 "2,5633901,AA,1024,1\n";
static const struct want vscsi_want[] = {
	{5633898000000000, 0, 21981565440, 512, true, -1, "", 2},
	{5633899000000000, 0, 4096, 4096, false, -1, "", 3},
	{5633900000000000, 0, 0, 512, false, -1, "", 4},
	{5633901000000000, 0, 512, 1024, true, -1, "", 5},
};

static const char tencent_text[] = "1538323200,4247200,128,1,1058\n"
				   "1538323199,13896880,128,0,1063\n"
				   "1538323199,49413280,16,0,1058\n";
static const struct want tencent_want[] = {
	{1538323200000000000, 0, 2174566400, 65536, true, -1, "", 1},
	{1538323199000000000, 1, 7115202560, 65536, false, -1, "", 2},
	{1538323199000000000, 0, 25299599360, 8192, false, -1, "", 3},
};

static const char arc_text[] = "110765 64 0 0\n"
			       "110888 1 0 1\n"
			       "0 0 0 2\n";
static const struct want arc_want[] = {
	{-1, 0, 56711680, 32768, false, -1, "", 1},
	{-1, 0, 56774656, 512, false, -1, "", 2},
	{-1, 0, 0, 0, false, -1, "", 3},
};

static const char hybridfs_text[] =
	"ts_ns,pid,process,exe,file_id,offset,length,block_first,block_count,mode,class,"
	"phys_block\n"
	"1764460800000000000,1234,my app,/usr/bin/my app,1,0,4096,0,1,R,,100\n"
	"1764460800000000500,42,\"cat,dog\",,2,4095,2,0,2,W,,\n"
	"1764460800900000000,7,\"q\"\"x\",\"/bin/a,b\",1,5000,100,1,1,W,,7\n"
	"1764460802000000000,,\"two\nlines\",,3,1,511,0,1,R,,\n"
	"1764460803000000000,5,p,,1,8,8,0,1,R,3,\n";
static const struct want hybridfs_want[] = {
	{1764460800000000000, 0, 0, 4096, false, 1234, "my app", 2},
	{1764460800000000500, 1, 4095, 2, true, 42, "cat,dog", 3},
	{1764460800900000000, 0, 5000, 100, true, 7, "q\"x", 4},
	{1764460802000000000, 2, 1, 511, false, -1, "two\nlines", 5},
	{1764460803000000000, 0, 8, 8, false, 5, "p", 7},
};

static const struct golden goldens[] = {
	GOLDEN(HY_TRACE_READ_MSR, msr_text, msr_want),
	GOLDEN(HY_TRACE_READ_HEIMDALL, heimdall_text, heimdall_want),
	GOLDEN(HY_TRACE_READ_FIU, fiu_text, fiu_want),
	GOLDEN(HY_TRACE_READ_BLKPARSE, blkparse_text, blkparse_want),
	GOLDEN(HY_TRACE_READ_DISKSIM, disksim_text, disksim_want),
	GOLDEN(HY_TRACE_READ_SPC, spc_text, spc_want),
	GOLDEN(HY_TRACE_READ_VSCSI, vscsi_text, vscsi_want),
	GOLDEN(HY_TRACE_READ_TENCENT, tencent_text, tencent_want),
	GOLDEN(HY_TRACE_READ_ARC, arc_text, arc_want),
	GOLDEN(HY_TRACE_READ_HYBRIDFS, hybridfs_text, hybridfs_want),
};
#define NGOLDEN (sizeof(goldens) / sizeof(goldens[0]))

/* Each format named, then detected, plain and gzipped. */
static void test_golden(void)
{
	char *dir = hy_test_tmpdir();

	CU_ASSERT_FATAL(dir != NULL);
	for (size_t i = 0; i < NGOLDEN; i++) {
		const struct golden *g = &goldens[i];
		const char *name = hy_trace_reader_format_name(g->format);

		for (int gz = 0; gz < 2; gz++) {
			char *path =
				write_trace(dir, gz ? "t.gz" : "t", g->text, strlen(g->text), gz);

			CU_ASSERT_FATAL(path != NULL);
			check_records(path, name, g->want, g->n, g->format);
			check_records(path, NULL, g->want, g->n, g->format);
			check_records(path, "auto", g->want, g->n, g->format);
			free(path);
		}
	}
	hy_test_rmtree(dir);
	free(dir);
}

/* Comments, blank lines and CRLF are skipped or stripped. */
static void test_skipped_lines(void)
{
	static const char text[] = "# an arc trace\r\n\r\n   \n110765 64 0 0\r\n#\n110888 1 0 1\n";
	char *dir = hy_test_tmpdir(), *path;
	struct hy_trace_reader *r;
	struct hy_trace_record rec;
	struct hy_trace_reader_stats st;

	CU_ASSERT_FATAL(dir != NULL);
	path = write_trace(dir, "c", text, strlen(text), false);
	CU_ASSERT_FATAL(path != NULL);
	CU_ASSERT_EQUAL_FATAL(hy_trace_reader_open(path, NULL, true, &r, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_trace_reader_format(r), HY_TRACE_READ_ARC);
	CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), 1);
	CU_ASSERT_EQUAL(rec.line, 4);
	CU_ASSERT_EQUAL(rec.length, 32768);
	CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), 1);
	CU_ASSERT_EQUAL(rec.line, 6);
	CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), 0);
	hy_trace_reader_get_stats(r, &st);
	CU_ASSERT_EQUAL(st.lines, 6);
	CU_ASSERT_EQUAL(st.records, 2);
	CU_ASSERT_EQUAL(st.skipped, 4);
	CU_ASSERT_EQUAL(st.bad_lines, 0);
	CU_ASSERT_EQUAL(st.devices, 1);
	hy_trace_reader_close(r);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

/* Five numbers with integer times and 512-multiples fit heimdall and
 * disksim alike: refused, asking for the format; garbage fits nothing. */
static void test_detect_refusals(void)
{
	static const char ambiguous[] = "0 0 4096 4096 1\n1000 0 8192 512 0\n";
	static const char garbage[] = "hello world\nthis is no trace\n";
	char *dir = hy_test_tmpdir(), *path;
	struct hy_trace_reader *r = NULL;

	CU_ASSERT_FATAL(dir != NULL);
	path = write_trace(dir, "a", ambiguous, strlen(ambiguous), false);
	CU_ASSERT_FATAL(path != NULL);
	CU_ASSERT_EQUAL(hy_trace_reader_open(path, NULL, false, &r, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "heimdall and disksim"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "--format"));
	/* named, it reads */
	CU_ASSERT_EQUAL(hy_trace_reader_open(path, "heimdall", false, &r, why, sizeof(why)), 0);
	hy_trace_reader_close(r);
	free(path);

	path = write_trace(dir, "g", garbage, strlen(garbage), false);
	CU_ASSERT_FATAL(path != NULL);
	CU_ASSERT_EQUAL(hy_trace_reader_open(path, NULL, false, &r, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not recognized"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, path));
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

/* Bad lines, in fiu: counted, skipped, each with its line number; strict
 * mode stops at the first one and names it. */
static void test_bad_lines(void)
{
	static const char *const lines[] = {
		"1 2 p 3 8 R 0 0 m\n",			     /* 1 good */
		"1 2 p 3\n",				     /* 2 too few fields */
		"x 2 p 3 8 R 0 0 m\n",			     /* 3 not a number */
		"-5 2 p 3 8 R 0 0 m\n",			     /* 4 negative */
		"1 2 p 99999999999999999999999 8 R 0 0 m\n", /* 5 overflow */
		"1 2 p 3 8 X 0 0 m\n",			     /* 6 unknown op */
		NULL,					     /* 7 100 KB */
		"\x01\x02\x00\xff\xfe garbage\n",	     /* 8 binary */
		"5 6 q 7 8 W 1 2 m\n",			     /* 9 good */
		"1 2 p 36028797018963968 8 R 0 0 m\n",	     /* 10 lba * 512 */
		"1 2 p 3 8 R 0 0 m extra\n",		     /* 11 too many */
		"1 2 p 36028797018963967 2 R 0 0 m\n",	     /* 12 end > 2^64 */
	};
	static const size_t binary_len = 14;
	size_t cap = 200000, len = 0;
	char *text = malloc(cap), *dir = hy_test_tmpdir(), *path;
	struct hy_trace_reader *r;
	struct hy_trace_record rec;
	struct hy_trace_reader_stats st;

	CU_ASSERT_FATAL(text != NULL && dir != NULL);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		if (i == 6) {
			memset(text + len, 'a', 100 * 1024);
			len += 100 * 1024;
			text[len++] = '\n';
		} else {
			size_t l = i == 7 ? binary_len : strlen(lines[i]);

			memcpy(text + len, lines[i], l);
			len += l;
		}
	}
	path = write_trace(dir, "bad", text, len, false);
	CU_ASSERT_FATAL(path != NULL);

	CU_ASSERT_EQUAL_FATAL(hy_trace_reader_open(path, "fiu", false, &r, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), 1);
	CU_ASSERT_EQUAL(rec.line, 1);
	CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), 1);
	CU_ASSERT_EQUAL(rec.line, 9);
	CU_ASSERT_EQUAL(rec.ts_ns, 5);
	CU_ASSERT_EQUAL(rec.pid, 6);
	CU_ASSERT_STRING_EQUAL(rec.process, "q");
	CU_ASSERT_EQUAL(rec.offset, 7 * 512);
	CU_ASSERT(rec.write);
	CU_ASSERT_EQUAL(rec.device, 1);
	CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), 0);
	hy_trace_reader_get_stats(r, &st);
	CU_ASSERT_EQUAL(st.lines, 12);
	CU_ASSERT_EQUAL(st.records, 2);
	CU_ASSERT_EQUAL(st.bad_lines, 10);
	CU_ASSERT_EQUAL(st.devices, 2);
	hy_trace_reader_close(r);

	/* strict: line 2 ends it, and stays the error */
	CU_ASSERT_EQUAL_FATAL(hy_trace_reader_open(path, "fiu", true, &r, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), 1);
	CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(hy_trace_reader_error(r), "line 2:"));
	CU_ASSERT_PTR_NOT_NULL(strstr(hy_trace_reader_error(r), "expected 9 fields, found 4"));
	CU_ASSERT_PTR_NOT_NULL(strstr(hy_trace_reader_error(r), path));
	CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), -EINVAL);
	hy_trace_reader_close(r);
	free(path);

	/* each bad line alone, strict, says what was wrong at line 1 */
	{
		static const struct {
			const char *text;
			const char *format, *words;
		} one[] = {
			{"x 2 p 3 8 R 0 0 m\n", "fiu", "is not a number"},
			{"-5 2 p 3 8 R 0 0 m\n", "fiu", "is negative"},
			{"1 2 p 99999999999999999999999 8 R 0 0 m\n", "fiu", "is too large"},
			{"1 2 p 3 8 X 0 0 m\n", "fiu", "unknown operation \"X\""},
			{"1,5633898,2b,512,42932745\n", "vscsi", "unknown operation \"2b\""},
			{"1,5633898,2a,512\n", "vscsi", "expected 5 fields, found 4"},
			{"1,2,3,2,5\n", "tencent", "unknown operation \"2\""},
			{"1.5 0 0 512 2\n", "heimdall", "unknown operation \"2\""},
			{"1.5 0 0 512 1\n", "disksim", "is not a number"},
			{"0,hm,0,Trim,0,0,0\n", "msr", "unknown operation \"Trim\""},
			{"0,1,512,x,0.1\n", "spc", "unknown operation \"x\""},
			{"1 2 3\n", "arc", "expected 4 fields, found 3"},
			{"junk here\n", "blkparse", "not a blkparse event"},
			{"8,0 1 1 0.5 9 Q R 5 - 8 [x]\n", "blkparse", "sector + count"},
			{"1,2,\"p,,,1,2,3,R,,\n", "hybridfs", "quote"},
			{"1,2,p,,1,2,3,0,1,Q,,\n", "hybridfs", "unknown operation \"Q\""},
		};

		for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
			path = write_trace(dir, "one", one[i].text, strlen(one[i].text), false);
			CU_ASSERT_FATAL(path != NULL);
			CU_ASSERT_EQUAL_FATAL(hy_trace_reader_open(path, one[i].format, true, &r,
								   why, sizeof(why)),
					      0);
			CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), -EINVAL);
			CU_ASSERT_PTR_NOT_NULL(strstr(hy_trace_reader_error(r), "line 1:"));
			if (!strstr(hy_trace_reader_error(r), one[i].words))
				fprintf(stderr, "\n%s: \"%s\" lacks \"%s\"\n", one[i].format,
					hy_trace_reader_error(r), one[i].words);
			CU_ASSERT_PTR_NOT_NULL(strstr(hy_trace_reader_error(r), one[i].words));
			hy_trace_reader_close(r);
			free(path);
		}
	}
	free(text);
	hy_test_rmtree(dir);
	free(dir);
}

/* Devices numbered by first appearance; one past the limit refused. */
static void test_devices(void)
{
	static const char text[] = "1,0,8,0,5\n1,0,8,0,3\n1,0,8,1,5\n1,0,8,0,9\n1,0,8,0,3\n";
	static const uint32_t want[] = {0, 1, 0, 2, 1};
	char *dir = hy_test_tmpdir(), *path, *big;
	struct hy_trace_reader *r;
	struct hy_trace_record rec;
	struct hy_trace_reader_stats st;
	size_t len = 0;
	int rc;

	CU_ASSERT_FATAL(dir != NULL);
	path = write_trace(dir, "d", text, strlen(text), false);
	CU_ASSERT_FATAL(path != NULL);
	CU_ASSERT_EQUAL_FATAL(hy_trace_reader_open(path, "tencent", true, &r, why, sizeof(why)), 0);
	for (size_t i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), 1);
		CU_ASSERT_EQUAL(rec.device, want[i]);
	}
	hy_trace_reader_get_stats(r, &st);
	CU_ASSERT_EQUAL(st.devices, 3);
	hy_trace_reader_close(r);
	free(path);

	/* one volume more than the limit */
	big = malloc((size_t)(HY_TRACE_MAX_DEVICES + 1) * 24);
	CU_ASSERT_FATAL(big != NULL);
	for (int i = 0; i <= HY_TRACE_MAX_DEVICES; i++)
		len += (size_t)sprintf(big + len, "1,0,8,0,%d\n", i);
	path = write_trace(dir, "many", big, len, true);
	CU_ASSERT_FATAL(path != NULL);
	CU_ASSERT_EQUAL_FATAL(hy_trace_reader_open(path, "tencent", false, &r, why, sizeof(why)),
			      0);
	while ((rc = hy_trace_reader_next(r, &rec)) == 1)
		CU_ASSERT_EQUAL(rec.device, rec.line - 1);
	CU_ASSERT_EQUAL(rc, -E2BIG);
	snprintf(why, sizeof(why), "line %d: device \"%d\"", HY_TRACE_MAX_DEVICES + 1,
		 HY_TRACE_MAX_DEVICES);
	CU_ASSERT_PTR_NOT_NULL(strstr(hy_trace_reader_error(r), why));
	hy_trace_reader_get_stats(r, &st);
	CU_ASSERT_EQUAL(st.records, HY_TRACE_MAX_DEVICES);
	CU_ASSERT_EQUAL(st.devices, HY_TRACE_MAX_DEVICES);
	hy_trace_reader_close(r);
	free(path);
	free(big);
	hy_test_rmtree(dir);
	free(dir);
}

static void test_empty_missing(void)
{
	char *dir = hy_test_tmpdir(), *path, *missing;
	struct hy_trace_reader *r = NULL;
	struct hy_trace_record rec;
	struct hy_trace_reader_stats st;

	CU_ASSERT_FATAL(dir != NULL);
	for (int gz = 0; gz < 2; gz++) {
		path = write_trace(dir, "empty", "", 0, gz);
		CU_ASSERT_FATAL(path != NULL);
		for (int f = 0; f < HY_TRACE_READ_FORMATS; f++) {
			const char *name =
				hy_trace_reader_format_name((enum hy_trace_reader_format)f);

			CU_ASSERT_EQUAL_FATAL(
				hy_trace_reader_open(path, name, true, &r, why, sizeof(why)), 0);
			CU_ASSERT_EQUAL(hy_trace_reader_next(r, &rec), 0);
			hy_trace_reader_get_stats(r, &st);
			CU_ASSERT_EQUAL(st.lines, 0);
			CU_ASSERT_EQUAL(st.records, 0);
			hy_trace_reader_close(r);
		}
		/* nothing to detect from */
		CU_ASSERT_EQUAL(hy_trace_reader_open(path, NULL, false, &r, why, sizeof(why)),
				-EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "--format"));
		free(path);
	}

	missing = hy_test_path_in(dir, "no-such-trace");
	CU_ASSERT_FATAL(missing != NULL);
	r = NULL;
	CU_ASSERT_EQUAL(hy_trace_reader_open(missing, "arc", false, &r, why, sizeof(why)), -ENOENT);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, missing));
	CU_ASSERT_EQUAL(hy_trace_reader_open(missing, NULL, false, &r, why, sizeof(why)), -ENOENT);
	CU_ASSERT_EQUAL(hy_trace_reader_open(dir, NULL, false, &r, why, sizeof(why)), -EISDIR);
	free(missing);
	hy_test_rmtree(dir);
	free(dir);
}

/* A gzip file cut short: the records before the cut, then -EIO. */
static void test_truncated_gzip(void)
{
	char *dir = hy_test_tmpdir(), *path, *text, *data;
	struct hy_trace_reader *r;
	struct hy_trace_record rec;
	size_t len = 0;
	long size;
	FILE *f;
	int rc;
	unsigned n = 0;

	CU_ASSERT_FATAL(dir != NULL);
	text = malloc(50000 * 32);
	CU_ASSERT_FATAL(text != NULL);
	srand(7);
	for (int i = 0; i < 50000; i++)
		len += (size_t)sprintf(text + len, "%d %d 0 %d\n", rand(), rand() % 100, i);
	path = write_trace(dir, "t.gz", text, len, true);
	CU_ASSERT_FATAL(path != NULL);
	f = fopen(path, "rb");
	CU_ASSERT_FATAL(f != NULL);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	data = malloc((size_t)size);
	CU_ASSERT_FATAL(data != NULL && fread(data, 1, (size_t)size, f) == (size_t)size);
	fclose(f);
	f = fopen(path, "wb");
	CU_ASSERT_FATAL(f != NULL);
	fwrite(data, 1, (size_t)size / 2, f);
	fclose(f);

	CU_ASSERT_EQUAL_FATAL(hy_trace_reader_open(path, NULL, false, &r, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_trace_reader_format(r), HY_TRACE_READ_ARC);
	while ((rc = hy_trace_reader_next(r, &rec)) == 1)
		n++;
	CU_ASSERT_EQUAL(rc, -EIO);
	CU_ASSERT(n > 1000 && n < 50000);
	CU_ASSERT_PTR_NOT_NULL(strstr(hy_trace_reader_error(r), path));
	hy_trace_reader_close(r);
	free(data);
	free(text);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

static void test_format_names(void)
{
	enum hy_trace_reader_format f;

	for (int i = 0; i < HY_TRACE_READ_FORMATS; i++) {
		const char *name = hy_trace_reader_format_name((enum hy_trace_reader_format)i);

		CU_ASSERT_PTR_NOT_NULL_FATAL(name);
		CU_ASSERT_EQUAL(hy_trace_reader_format_parse(name, &f, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(f, (enum hy_trace_reader_format)i);
	}
	CU_ASSERT_PTR_NULL(hy_trace_reader_format_name(HY_TRACE_READ_FORMATS));
	CU_ASSERT_PTR_NULL(hy_trace_reader_format_name((enum hy_trace_reader_format) - 1));
	CU_ASSERT_EQUAL(hy_trace_reader_format_parse("csv2", &f, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "\"csv2\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "blkparse"));
	CU_ASSERT_EQUAL(hy_trace_reader_open("/nonexistent", "csv2", false,
					     &(struct hy_trace_reader *){NULL}, why, sizeof(why)),
			-EINVAL);
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Random buffers (printable, binary, or golden lines mutated) read in
 * every format and by detection: any result but a crash or a leak. */
static void test_fuzz(void)
{
	static const char alphabet[] = "0123456789 ,.-+\n\r\t\"#[]RWrwQxa:/";
	char *dir = hy_test_tmpdir(), *path, *buf;
	unsigned iterations = 2000;

	CU_ASSERT_FATAL(dir != NULL);
	path = hy_test_path_in(dir, "fuzz");
	buf = malloc(4096);
	CU_ASSERT_FATAL(path != NULL && buf != NULL);
	for (unsigned it = 0; it < iterations; it++) {
		size_t len = rnd() % 4096;
		unsigned mode = it % 4;

		if (mode == 3) {
			const char *g = goldens[rnd() % NGOLDEN].text;
			size_t gl = strlen(g);

			len = gl < 4096 ? gl : 4095;
			memcpy(buf, g, len);
			for (unsigned k = rnd() % 8; k > 0; k--)
				buf[rnd() % len] =
					(char)(rnd() % 3 ? alphabet[rnd() % (sizeof(alphabet) - 1)]
							 : (char)rnd());
		} else {
			for (size_t k = 0; k < len; k++) {
				if (mode == 0)
					buf[k] = (char)(rnd() & 0xff);
				else if (mode == 1)
					buf[k] = (char)(32 + rnd() % 95);
				else
					buf[k] = alphabet[rnd() % (sizeof(alphabet) - 1)];
			}
		}
		if (mode == 0 && it % 8 == 0 && len >= 2) {
			buf[0] = 0x1f; /* gzip's magic over garbage */
			buf[1] = (char)0x8b;
		}
		free(path);
		path = write_trace(dir, "fuzz", buf, len, it % 7 == 6);
		CU_ASSERT_FATAL(path != NULL);
		for (int fmt = -1; fmt < HY_TRACE_READ_FORMATS; fmt++) {
			struct hy_trace_reader *r;
			struct hy_trace_record rec;
			struct hy_trace_reader_stats st;
			const char *name = fmt < 0 ? NULL
						   : hy_trace_reader_format_name(
							     (enum hy_trace_reader_format)fmt);
			int rc =
				hy_trace_reader_open(path, name, it % 2 == 0, &r, why, sizeof(why));

			if (rc < 0) {
				CU_ASSERT(fmt < 0);
				continue;
			}
			while ((rc = hy_trace_reader_next(r, &rec)) == 1) {
				CU_ASSERT(rec.process != NULL);
				CU_ASSERT(rec.offset <= UINT64_MAX - rec.length);
			}
			CU_ASSERT(rc == 0 || rc == -EINVAL || rc == -EIO);
			hy_trace_reader_get_stats(r, &st);
			CU_ASSERT(st.records + st.bad_lines + st.skipped <= st.lines);
			hy_trace_reader_close(r);
		}
	}
	free(buf);
	free(path);
	hy_test_rmtree(dir);
	free(dir);
}

/* The shared real traces, when this machine has them (CI may not). */
static void test_real_traces(void)
{
	static const struct {
		const char *file;
		enum hy_trace_reader_format format;
		uint64_t requests, writes;
		uint32_t devices;
	} real[] = {
		{"fiu_mail_cheetah_head10k.blkparse", HY_TRACE_READ_FIU, 10000, 1095, 1},
		{"apress_hadoop_blkparse_50k.txt.gz", HY_TRACE_READ_BLKPARSE, 15524, 15444, 1},
		{"umass_websearch_mqsim_wsrch-small.trace", HY_TRACE_READ_DISKSIM, 24783, 4, 6},
		{"msr_cut_rw20_80_105.trace", HY_TRACE_READ_HEIMDALL, 10000, 7980, 1},
		{"msr_cambridge_hm_sample1000.csv", HY_TRACE_READ_MSR, 1000, 492, 1},
		{"cloudphysics_vscsi_sample.csv.gz", HY_TRACE_READ_VSCSI, 113872, 66898, 1},
		{"tencent_cbs_sample.csv.gz", HY_TRACE_READ_TENCENT, 50000, 25479, 2038},
		{"arc_P6.lis.gz", HY_TRACE_READ_ARC, 519711, 0, 1},
	};
	bool bench = getenv("HYTEST_BENCH") && strcmp(getenv("HYTEST_BENCH"), "1") == 0;

	if (access(SHARED_TRACES, R_OK) != 0)
		return;
	for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
		char *path = hy_test_path_in(SHARED_TRACES, real[i].file);
		struct hy_trace_reader *r;
		struct hy_trace_record rec;
		struct hy_trace_reader_stats st;
		struct timespec t0, t1;
		uint64_t writes = 0;
		int rc;

		CU_ASSERT_FATAL(path != NULL);
		if (access(path, R_OK) != 0) {
			free(path);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = hy_trace_reader_open(path, NULL, true, &r, why, sizeof(why));
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		CU_ASSERT_EQUAL(hy_trace_reader_format(r), real[i].format);
		while ((rc = hy_trace_reader_next(r, &rec)) == 1)
			writes += rec.write;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		CU_ASSERT_EQUAL(rc, 0);
		hy_trace_reader_get_stats(r, &st);
		CU_ASSERT_EQUAL(st.records, real[i].requests);
		CU_ASSERT_EQUAL(writes, real[i].writes);
		CU_ASSERT_EQUAL(st.bad_lines, 0);
		CU_ASSERT_EQUAL(st.devices, real[i].devices);
		if (bench) {
			double s = (double)(t1.tv_sec - t0.tv_sec) +
				   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

			fprintf(stderr, "\n  %s: %" PRIu64 " records in %.3f s, %.0f records/s",
				real[i].file, st.records, s, s > 0 ? (double)st.records / s : 0.0);
		}
		hy_trace_reader_close(r);
		free(path);
	}
	if (bench)
		fputc('\n', stderr);
}

int hy_test_add_trace_reader(void)
{
	CU_pSuite s = CU_add_suite("trace_reader", NULL, NULL);

	if (!s || !CU_add_test(s, "golden records, each format, plain and gzip", test_golden) ||
	    !CU_add_test(s, "comments, blank lines, crlf", test_skipped_lines) ||
	    !CU_add_test(s, "detection refusals", test_detect_refusals) ||
	    !CU_add_test(s, "bad lines and strict mode", test_bad_lines) ||
	    !CU_add_test(s, "devices by first appearance", test_devices) ||
	    !CU_add_test(s, "empty and missing files", test_empty_missing) ||
	    !CU_add_test(s, "truncated gzip", test_truncated_gzip) ||
	    !CU_add_test(s, "format names", test_format_names) ||
	    !CU_add_test(s, "random input never crashes", test_fuzz) ||
	    !CU_add_test(s, "real traces", test_real_traces))
		return -1;
	return 0;
}
