/* fuzz_trace_reader.c - libFuzzer target for the block trace reader
 * (sim/trace_reader.c): each input is written to a temporary file (the
 * reader takes a path) and read to its end by detection and in each of
 * the ten formats (strict when the last byte is odd).
 *
 * Not part of the build. By hand, from the source tree, with a configured
 * build in ../build for config.h:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 \
 *     -Iinclude -include ../build/config.h \
 *     tests/fuzz/fuzz_trace_reader.c sim/trace_reader.c lib/log.c \
 *     -lz -o fuzz_trace_reader
 *   mkdir -p corpus && ./fuzz_trace_reader -max_len=8192 corpus
 *
 * (a few real trace heads make a good seed corpus). Bad lines are logged
 * at LOG_WARNING; hy_log_init() keeps the log quiet.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "hybridfs/log.h"
#include "hybridfs/trace_reader.h"

static char path[64];

static void read_all(const char *format, bool strict)
{
	struct hy_trace_reader *r;
	struct hy_trace_record rec;
	char why[512];

	if (hy_trace_reader_open(path, format, strict, &r, why, sizeof(why)) < 0)
		return;
	while (hy_trace_reader_next(r, &rec) == 1)
		if (!rec.process || rec.offset > UINT64_MAX - rec.length)
			abort();
	hy_trace_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f;

	if (!path[0]) {
		hy_log_init(HY_LOG_STDERR, LOG_CRIT, "fuzz_trace_reader");
		snprintf(path, sizeof(path), "/tmp/fuzz_trace_reader.%ld", (long)getpid());
	}
	f = fopen(path, "wb");
	if (!f)
		return 0;
	if (size && fwrite(data, 1, size, f) != size) {
		fclose(f);
		return 0;
	}
	if (fclose(f) != 0)
		return 0;
	read_all(NULL, false);
	for (int i = 0; i < HY_TRACE_READ_FORMATS; i++)
		read_all(hy_trace_reader_format_name((enum hy_trace_reader_format)i),
			 size > 0 && (data[size - 1] & 1));
	unlink(path);
	return 0;
}
