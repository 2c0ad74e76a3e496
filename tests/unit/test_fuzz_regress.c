/* test_fuzz_regress.c - the inputs of the fuzz targets (tests/fuzz) that
 * matter, kept as unit tests: each feeds one parser the nasty input
 * classes its target explores (truncated, oversized, wrong magic, sizes
 * that overflow, bytes that are not text) and checks a clean refusal with
 * a message. A crash the fuzzers find gets its input added here, named
 * after the target (see docs/reliability.md, "Fuzzing").
 *
 * Files are made in a temporary directory and removed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/bopt.h"
#include "hybridfs/cache_store.h"
#include "hybridfs/control.h"
#include "hybridfs/ondisk.h"
#include "hybridfs/options.h"
#include "hybridfs/trace_reader.h"
#include "suites.h"

#define UUID "0f6b1a52-8a3e-4c7e-9d51-2b7c4e1d9a01"

static char why[1024];

/* ---- fuzz_options ---- */

static int parse_words(const char *const *words, struct hy_options *o)
{
	char *argv[16];
	int argc = 0;

	for (; *words && argc < 15; words++)
		argv[argc++] = (char *)*words;
	argv[argc] = NULL;
	why[0] = '\0';
	return hy_options_parse(argc, argv, o, why, sizeof(why));
}

static int parse_list(const char *list)
{
	static const char *const base[] = {"hybridfs", "/b", "/m", NULL};
	struct hy_options o;
	int rc;

	if (parse_words(base, &o) != 0)
		return 1; /* not an errno: fails every expectation below */
	why[0] = '\0';
	rc = hy_options_parse_list(&o, list, why, sizeof(why));
	hy_options_free(&o);
	return rc;
}

static void test_options(void)
{
	static const char *const dangling_o[] = {"hybridfs", "/b", "/m", "-o", NULL};
	static const char *const dangling_t[] = {"mount.hybridfs", "/b", "/m", "-t", NULL};
	static const char *const three[] = {"hybridfs", "/b", "/m", "/x", NULL};
	static const char *const empty_argv0[] = {"", "/b", "/m", NULL};
	static const char *const bad[] = {
		"cache_size=99999999999999999999T", /* overflows the size */
		"bopt_size=1023K",		    /* under the minimum */
		"attr_timeout=1e400",		    /* infinite */
		"attr_timeout=nan",
		"entry_timeout=-0.5",
		"heat_threshold=inf",
		"heat_periods=4294967301", /* wraps an unsigned */
		"max_threads=-1",
		"profile_max_age=9223372036854775807d", /* overflows seconds */
		"profile_max_rows=99999999999999999999",
		"pore_open=%",
		"pore_open=0.01%",
		"pore_open=1234567890123456789012345678901234567890", /* past its buffer */
		"pore_zone=0",
		"pore_period=1",
		"cache=relative/path",
		"emulate=",
		"state=",
		"cache_write",
		"ro=1",
		"nosuch\\,option",
	};
	struct hy_options o;

	CU_ASSERT_EQUAL(parse_words(dangling_o, &o), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "-o"));
	hy_options_free(&o);
	CU_ASSERT_EQUAL(parse_words(dangling_t, &o), -EINVAL);
	hy_options_free(&o);
	CU_ASSERT_EQUAL(parse_words(three, &o), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "/x"));
	hy_options_free(&o);
	CU_ASSERT_EQUAL(parse_words(empty_argv0, &o), 0);
	hy_options_free(&o);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse_list(bad[i]);

		if (rc != -EINVAL || !why[0])
			fprintf(stderr, "fuzz_options: \"%s\": %d (%s)\n", bad[i], rc, why);
		CU_ASSERT_EQUAL(rc, -EINVAL);
		CU_ASSERT(why[0] != '\0');
	}
	/* harmless: a lone or trailing backslash, empty words */
	CU_ASSERT_EQUAL(parse_list("state=/a\\"), 0);
	CU_ASSERT_EQUAL(parse_list(",,,noatime,,x-a=\\,b,"), 0);
	CU_ASSERT_EQUAL(parse_list("\\\\"), -EINVAL); /* a word that is one backslash */
}

/* ---- fuzz_control ---- */

/* Parses @len bytes from a buffer of exactly that size (no NUL after it,
 * as the server's buffer gives a line). */
static int request(const char *text, size_t len)
{
	struct hy_control_request req = {0};
	char *copy = malloc(len ? len : 1);
	int rc;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	why[0] = '\0';
	rc = hy_control_parse_request(copy, len, &req, why, sizeof(why));
	if (rc == 0)
		hy_control_request_clear(&req);
	free(copy);
	return rc;
}

#define REQ(s) request(s, sizeof(s) - 1)

static void test_control(void)
{
	size_t big = HY_CONTROL_MAX_LINE + 10, deep = 5000;
	char *line = malloc(big);
	struct json_object *result = NULL;

	CU_ASSERT_EQUAL(REQ("{\"v\": 1, \"cmd\": \"sta"), -EINVAL); /* cut */
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "not valid json"));
	CU_ASSERT_EQUAL(REQ("{\"v\": 1, \"cmd\": \"status\"}\0junk"), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "nul"));
	CU_ASSERT_EQUAL(REQ("{\"v\": 1, \"cmd\": \"\xc0\xaf\"}"), -EINVAL);	/* overlong */
	CU_ASSERT_EQUAL(REQ("{\"v\": 1, \"cmd\": \"\xed\xa0\x80\"}"), -EINVAL); /* surrogate */
	CU_ASSERT_EQUAL(REQ("{\"v\": 1, \"cmd\": \"\xf4\x90\x80\x80\"}"), -EINVAL);
	CU_ASSERT_EQUAL(REQ("{\"v\": 1, \"cmd\": \"status\"} {}"), -EINVAL);
	CU_ASSERT_EQUAL(REQ("{\"v\": 1.0, \"cmd\": \"status\"}"), -EINVAL);
	CU_ASSERT_EQUAL(REQ("{\"v\": \"1\", \"cmd\": \"status\"}"), -EINVAL);
	CU_ASSERT_EQUAL(REQ("{\"v\": 1, \"cmd\": [\"status\"]}"), -EINVAL);
	CU_ASSERT_EQUAL(REQ("   \t\r\n"), -EINVAL);
	CU_ASSERT_EQUAL(REQ(""), -EINVAL);
	CU_ASSERT_EQUAL(REQ("null"), -EINVAL);
	CU_ASSERT_EQUAL(REQ("1"), -EINVAL);
	/* a version past int64: refused either way, never taken as 1 */
	CU_ASSERT_NOT_EQUAL(REQ("{\"v\": 18446744073709551617, \"cmd\": \"ping\"}"), 0);
	CU_ASSERT_EQUAL(REQ("{\"v\": -9223372036854775808, \"cmd\": \"ping\"}"), -EPROTO);
	/* a command name with control bytes: echoed printable and cut */
	CU_ASSERT_EQUAL(REQ("{\"v\": 1, \"cmd\": \"a\\u0001b\\nccccccccccccccccccccccccccccccccc"
			    "cccccccccccccccccccccccccccccccccccccccccccc\"}"),
			-ENOSYS);
	CU_ASSERT_PTR_NULL(strchr(why, '\n'));
	CU_ASSERT_PTR_NULL(strchr(why, '\001'));
	CU_ASSERT(strlen(why) < 200);

	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	/* oversized: refused before it is parsed */
	memset(line, ' ', big);
	CU_ASSERT_EQUAL(request(line, big), -E2BIG);
	CU_ASSERT_EQUAL(request(line, HY_CONTROL_MAX_LINE), -E2BIG);
	/* nested past json-c's depth limit */
	for (size_t i = 0; i < deep; i++) {
		line[i] = '[';
		line[2 * deep - 1 - i] = ']';
	}
	CU_ASSERT_EQUAL(request(line, 2 * deep), -EINVAL);
	free(line);

	why[0] = '\0';
	CU_ASSERT_EQUAL(
		hy_control_parse_response("{\"v\":1,\"ok\":false}", 18, &result, why, sizeof(why)),
		-EINVAL);
	CU_ASSERT_PTR_NULL(result);
	CU_ASSERT(why[0] != '\0');

	/* found by fuzz_control: an empty "error" left the caller no words */
	why[0] = '\0';
	CU_ASSERT_EQUAL(hy_control_parse_response("{\"v\":1,\"ok\":false,\"error\":\"\"}", 29,
						  &result, why, sizeof(why)),
			-EREMOTEIO);
	CU_ASSERT_PTR_NULL(result);
	CU_ASSERT_STRING_EQUAL(why, "the daemon gave an empty error");
	/* and a NUL inside it is not the end of the text */
	CU_ASSERT_EQUAL(hy_control_parse_response("{\"v\":1,\"ok\":false,\"error\":\"\\u0000x\"}",
						  36, &result, why, sizeof(why)),
			-EREMOTEIO);
	CU_ASSERT_STRING_EQUAL(why, "?x");
}

/* ---- fuzz_cache_store and fuzz_bopt: headers ---- */

static void test_cache_superblock(void)
{
	struct hy_cache_store_header h = {
		.version = HY_CACHE_STORE_VERSION,
		.line_size = HY_CACHE_LINE_SIZE,
		.capacity = 11,
		.generation = 42,
		.table_offset = 4096,
		.table_size = 6 * 4096, /* two copies: header, records, stamps */
		.journal_offset = 7 * 4096,
		.journal_size = 4096,
		.data_offset = 8 * 4096,
		.data_size = 11 * 4096,
	};
	struct hy_cache_store_header out;
	unsigned char buf[HY_CACHE_STORE_BLOCK];

	hy_cache_store_encode(&h, buf);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_decode(buf, &out, why, sizeof(why)), 0);

	/* wrong magic */
	buf[0] ^= 1;
	CU_ASSERT_EQUAL(hy_cache_store_decode(buf, &out, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "magic"));
	/* a newer version, before the checksum */
	hy_cache_store_encode(&h, buf);
	hy_ondisk_put_le32(buf + 8, HY_CACHE_STORE_VERSION + 1);
	CU_ASSERT_EQUAL(hy_cache_store_decode(buf, &out, why, sizeof(why)), -EPROTO);
	/* sizes that overflow, each with a good checksum */
	h.capacity = UINT64_MAX / 32 + 2; /* capacity * 32 wraps */
	hy_cache_store_encode(&h, buf);
	CU_ASSERT_EQUAL(hy_cache_store_decode(buf, &out, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "do not add up"));
	h.capacity = 11;
	h.journal_size = UINT64_MAX - 4095; /* offsets wrap */
	h.data_offset = h.journal_offset + h.journal_size;
	hy_cache_store_encode(&h, buf);
	CU_ASSERT_EQUAL(hy_cache_store_decode(buf, &out, why, sizeof(why)), -EUCLEAN);
	h.journal_size = 4096;
	h.data_offset = 6 * 4096;
	h.data_size = 0; /* capacity 11 in no bytes */
	hy_cache_store_encode(&h, buf);
	CU_ASSERT_EQUAL(hy_cache_store_decode(buf, &out, why, sizeof(why)), -EUCLEAN);
	/* an unterminated uuid */
	h.data_size = 11 * 4096;
	hy_cache_store_encode(&h, buf);
	memset(buf + 16, 'a', 40);
	hy_ondisk_put_le64(buf + 128, hy_ondisk_fnv1a64(buf, 128));
	CU_ASSERT_EQUAL(hy_cache_store_decode(buf, &out, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "uuid"));
}

static void test_bopt_header(void)
{
	struct hy_bopt_header h = {
		.version = HY_BOPT_VERSION,
		.uuid = UUID,
		.total_blocks = 3,
		.read_blocks = 1,
		.write_blocks = 1,
	};
	struct hy_bopt_header out;
	unsigned char buf[HY_BOPT_BLOCK];

	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL_FATAL(hy_bopt_decode(buf, &out, why, sizeof(why)), 0);
	buf[7] ^= 1;
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &out, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "magic"));
	hy_bopt_encode(&h, buf);
	hy_ondisk_put_le32(buf + 8, UINT32_MAX);
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &out, why, sizeof(why)), -EPROTO);
	/* read + write wraps to the total */
	h.read_blocks = UINT64_MAX / 2;
	h.write_blocks = UINT64_MAX / 2 + 1;
	h.total_blocks = h.read_blocks + h.write_blocks + 1; /* 0 */
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &out, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "do not add up"));
	/* more blocks than an off_t holds */
	h.read_blocks = UINT64_MAX / 4096;
	h.write_blocks = 1;
	h.total_blocks = h.read_blocks + 2;
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &out, why, sizeof(why)), -EUCLEAN);
	/* empty uuid, nonzero reserved field */
	h.read_blocks = h.write_blocks = 1;
	h.total_blocks = 3;
	h.uuid[0] = '\0';
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &out, why, sizeof(why)), -EUCLEAN);
	snprintf(h.uuid, sizeof(h.uuid), "%s", UUID);
	hy_bopt_encode(&h, buf);
	buf[92] = 1;
	hy_ondisk_put_le64(buf + 96, hy_ondisk_fnv1a64(buf, 96));
	CU_ASSERT_EQUAL(hy_bopt_decode(buf, &out, why, sizeof(why)), -EUCLEAN);
}

/* ---- fuzz_cache_store and fuzz_bopt: files ---- */

static int write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (!f)
		return -1;
	if (len && fwrite(buf, 1, len, f) != len)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static void test_store_files(void)
{
	char *dir = hy_test_tmpdir(), *path = dir ? hy_test_path_in(dir, "store") : NULL;
	unsigned char buf[HY_CACHE_STORE_BLOCK];
	struct hy_cache_store *s = NULL;
	struct hy_cache_store_header h;
	struct hy_cache_store_load_stats st;
	struct hy_cache_journal_record r = {0};
	unsigned char rec[HY_CACHE_JOURNAL_RECORD];

	CU_ASSERT_PTR_NOT_NULL_FATAL(path);
	/* an empty file, and a superblock cut short */
	CU_ASSERT_EQUAL(write_file(path, "", 0), 0);
	CU_ASSERT_EQUAL(hy_cache_store_open(path, NULL, &s, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NULL(s);
	CU_ASSERT_EQUAL(hy_cache_store_create(path, "", 128 * 1024, HY_CACHE_LINE_SIZE, true, why,
					      sizeof(why)),
			0);
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_decode(buf, &h, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(truncate(path, 100), 0);
	CU_ASSERT_EQUAL(hy_cache_store_open(path, NULL, &s, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_EQUAL(hy_cache_store_open_truncated(path, NULL, &s, why, sizeof(why)), -EUCLEAN);
	/* cut inside the journal: refused even for salvage */
	CU_ASSERT_EQUAL(write_file(path, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(truncate(path, (off_t)h.journal_offset), 0);
	CU_ASSERT_EQUAL(hy_cache_store_open_truncated(path, NULL, &s, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "truncated"));

	/* cut after the journal: salvage opens it, but both table copies are
	 * zeros: load refuses */
	CU_ASSERT_EQUAL(truncate(path, (off_t)h.data_offset), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open_truncated(path, NULL, &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_cache_store_load(s, NULL, NULL, NULL, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "both line table copies"));
	hy_cache_store_close(s);
	s = NULL;

	/* a good store whose journal holds a record for a line past the end,
	 * with a good checksum: replay stops there, load goes on */
	CU_ASSERT_EQUAL(unlink(path), 0);
	CU_ASSERT_EQUAL(hy_cache_store_create(path, "", 128 * 1024, HY_CACHE_LINE_SIZE, true, why,
					      sizeof(why)),
			0);
	CU_ASSERT_EQUAL_FATAL(hy_test_pread(path, buf, sizeof(buf), 0), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_decode(buf, &h, why, sizeof(why)), 0);
	r.type = HY_CJ_FILL;
	r.line = UINT64_MAX;
	r.valid = 0xff;
	r.sequence = 1; /* copy A is at checkpoint 0 */
	r.generation = h.generation;
	hy_cache_journal_encode(&r, rec);
	CU_ASSERT_EQUAL(hy_test_pwrite(path, rec, sizeof(rec), (off_t)h.journal_offset), 0);
	CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, NULL, &s, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(hy_cache_store_load(s, NULL, NULL, &st, why, sizeof(why)), 0);
	CU_ASSERT(st.journal_cut);
	CU_ASSERT_EQUAL(st.cut_at, 0);
	CU_ASSERT_EQUAL(st.replayed, 0);
	hy_cache_store_close(s);
	s = NULL;

	/* Found by fuzz_cache_store (the tail, format 2): a line record of
	 * the table whose tail lies past the line, with a good checksum, was
	 * counted damaged but left in use, with that tail, and handed to
	 * load's callback. It must leave a free line. */
	{
		unsigned char lr[HY_CACHE_LINE_RECORD], extra[16];
		off_t at = (off_t)(h.table_offset + HY_CACHE_STORE_BLOCK); /* copy A, line 0 */
		uint32_t sum;

		memset(lr, 0, sizeof(lr));
		hy_ondisk_put_le64(lr, 5);     /* file id */
		hy_ondisk_put_le64(lr + 8, 0); /* block */
		lr[16] = lr[17] = 0x01;	       /* valid, dirty */
		lr[18] = 1;		       /* in use */
		lr[20] = 0xff, lr[21] = 0xff;  /* tail 65535 */
		hy_ondisk_put_le64(extra, 0);  /* the line number */
		hy_ondisk_put_le64(extra + 8, h.generation);
		sum = hy_ondisk_fnv1a32_more(hy_ondisk_fnv1a32(lr, 28), extra, sizeof(extra));
		hy_ondisk_put_le32(lr + 28, sum);
		/* in both table copies: the last load checkpointed into one */
		CU_ASSERT_EQUAL(hy_test_pwrite(path, lr, sizeof(lr), at), 0);
		CU_ASSERT_EQUAL(hy_test_pwrite(path, lr, sizeof(lr), at + (off_t)h.table_size / 2),
				0);
		CU_ASSERT_EQUAL_FATAL(hy_cache_store_open(path, NULL, &s, why, sizeof(why)), 0);
		memset(&st, 0, sizeof(st));
		CU_ASSERT_EQUAL(hy_cache_store_load(s, NULL, NULL, &st, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(st.damaged_records, 1);
		CU_ASSERT_EQUAL(st.lines, 0);
		hy_cache_store_close(s);
	}

	unlink(path);
	hy_test_rmtree(dir);
	free(path);
	free(dir);
}

static void test_bopt_files(void)
{
	char *dir = hy_test_tmpdir(), *path = dir ? hy_test_path_in(dir, "bopt") : NULL;
	struct hy_bopt_header h = {
		.version = HY_BOPT_VERSION,
		.uuid = UUID,
		.total_blocks = 1ull << 40, /* far more than the file */
		.read_blocks = 1,
	};
	unsigned char buf[HY_BOPT_BLOCK];
	struct hy_bopt *b = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(path);
	CU_ASSERT_EQUAL(write_file(path, "HYBOPT", 6), 0); /* a header cut short */
	CU_ASSERT_EQUAL(hy_bopt_open(path, NULL, &b, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NULL(b);
	h.write_blocks = h.total_blocks - 2;
	hy_bopt_encode(&h, buf);
	CU_ASSERT_EQUAL(write_file(path, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(hy_bopt_open(path, NULL, &b, why, sizeof(why)), -EUCLEAN);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "truncated"));
	CU_ASSERT_PTR_NULL(b);
	unlink(path);
	hy_test_rmtree(dir);
	free(path);
	free(dir);
}

/* ---- fuzz_trace_reader ---- */

/* Reads the trace in @text (@len bytes) in @format to its end: the number
 * of records, or a negative errno. */
static int read_trace(const char *dir, const char *text, size_t len, const char *format,
		      bool strict)
{
	char *path = hy_test_path_in(dir, "trace");
	struct hy_trace_reader *r;
	struct hy_trace_record rec;
	int rc, n = 0;

	if (!path || write_file(path, text, len) < 0) {
		free(path);
		return -EIO;
	}
	rc = hy_trace_reader_open(path, format, strict, &r, why, sizeof(why));
	if (rc == 0) {
		while ((rc = hy_trace_reader_next(r, &rec)) == 1) {
			/* no record reaches past the end of a 64-bit space */
			CU_ASSERT(rec.offset <= UINT64_MAX - rec.length);
			n++;
		}
		hy_trace_reader_close(r);
	}
	unlink(path);
	free(path);
	return rc < 0 ? rc : n;
}

#define TRACE(s, fmt, strict) read_trace(dir, s, sizeof(s) - 1, fmt, strict)

static void test_trace_reader(void)
{
	char *dir = hy_test_tmpdir();
	size_t long_len = HY_TRACE_MAX_LINE * 2;
	char *long_line = malloc(long_len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(long_line);
	/* offsets and sizes at the edge of 64 bits: bad lines, never a wrap */
	CU_ASSERT_EQUAL(TRACE("1,h,0,Read,18446744073709551615,4096,1\n", "msr", false), 0);
	CU_ASSERT_EQUAL(TRACE("1,h,0,Read,18446744073709551615,4096,1\n", "msr", true), -EINVAL);
	CU_ASSERT_EQUAL(TRACE("1,h,0,Read,99999999999999999999999,4096,1\n", "msr", true), -EINVAL);
	CU_ASSERT_EQUAL(TRACE("0 0 36028797018963967 4096 1\n", "disksim", true), -EINVAL);
	CU_ASSERT_EQUAL(TRACE("0,36028797018963968,512,w,0.1\n", "spc", true), -EINVAL);
	CU_ASSERT_EQUAL(TRACE("1 2 p 18446744073709551615 8 R 8 0 x\n", "fiu", true), -EINVAL);
	/* binary garbage and a line longer than the limit: bad lines */
	CU_ASSERT_EQUAL(TRACE("\0\0\0\xff\xfe\n\x01,\x02\n", "msr", false), 0);
	memset(long_line, '7', long_len);
	CU_ASSERT_EQUAL(read_trace(dir, long_line, long_len, "arc", false), 0);
	CU_ASSERT_EQUAL(read_trace(dir, long_line, long_len, "arc", true), -EINVAL);
	/* nothing to detect */
	CU_ASSERT(TRACE("", NULL, false) < 0);
	CU_ASSERT(TRACE("# only a comment\n\n", NULL, false) < 0);
	free(long_line);
	hy_test_rmtree(dir);
	free(dir);
}

int hy_test_add_fuzz_regress(void)
{
	CU_pSuite s = CU_add_suite("fuzz_regress", NULL, NULL);

	if (!s)
		return -1;
	if (!CU_add_test(s, "fuzz_options: bad words refused", test_options) ||
	    !CU_add_test(s, "fuzz_control: bad lines refused", test_control) ||
	    !CU_add_test(s, "fuzz_cache_store: bad superblocks refused", test_cache_superblock) ||
	    !CU_add_test(s, "fuzz_cache_store: cut and damaged stores", test_store_files) ||
	    !CU_add_test(s, "fuzz_bopt: bad headers refused", test_bopt_header) ||
	    !CU_add_test(s, "fuzz_bopt: cut and oversized BOPTs", test_bopt_files) ||
	    !CU_add_test(s, "fuzz_trace_reader: bad traces", test_trace_reader))
		return -1;
	return 0;
}
