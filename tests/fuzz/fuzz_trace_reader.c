/* fuzz_trace_reader.c - libFuzzer target for the block trace reader
 * (sim/trace_reader.c): each input is written to a temporary file (the
 * reader takes a path) and read to its end by detection and in each of
 * the ten formats (strict when the last byte is odd).
 *
 * Built and run by tests/fuzz/run.sh with the other targets; seeds (a
 * line or two of each format) in tests/fuzz/corpus/fuzz_trace_reader/.
 * Bad lines are logged at LOG_WARNING; hy_log_init() keeps the log quiet.
 * The file lives in a private folder (fuzz_common.h), removed at exit.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "hybridfs/log.h"
#include "hybridfs/trace_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[300];

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
	if (!path[0]) {
		hy_log_init(HY_LOG_STDERR, LOG_CRIT, "fuzz_trace_reader");
		snprintf(path, sizeof(path), "%s/trace", fuzz_tmpdir());
	}
	if (fuzz_write_file(path, data, size) < 0)
		return 0;
	read_all(NULL, false);
	for (int i = 0; i < HY_TRACE_READ_FORMATS; i++)
		read_all(hy_trace_reader_format_name((enum hy_trace_reader_format)i),
			 size > 0 && (data[size - 1] & 1));
	unlink(path);
	return 0;
}
