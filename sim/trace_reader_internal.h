/*
 * trace_reader_internal.h - what the parts of the block trace reader
 * share: the reader in full, a parsed line, the kinds of lines, and the
 * functions one part calls in the other (hy_trace_reader_<part>_<verb>).
 * Only the reader's own .c files (sim/trace_reader.c, sim/trace_formats.c)
 * include it; the API is include/hybridfs/trace_reader.h.
 *
 * The parts: trace_formats.c (numbers, field splitting, and each format's
 * parser of one line), trace_reader.c (lines out of zlib, devices,
 * reading records, detection, open and close).
 *
 * Locks: none. One reader, one thread (trace_reader.h).
 */
#ifndef HYBRIDFS_TRACE_READER_INTERNAL_H
#define HYBRIDFS_TRACE_READER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#include "hybridfs/trace_reader.h"

#define MAX_FIELDS 16
#define SECTOR	   512ULL
#define WHY_SIZE   512

#define VSCSI_HEADER	"version,time,op,size,lbn"
#define HYBRIDFS_HEADER "ts_ns,pid,process,exe,file_id,offset,length"

enum line_kind {
	LINE_RECORD, /* a request */
	LINE_EVENT,  /* a well-formed line that is no request (blkparse) */
	LINE_SKIP,   /* header, blkparse summary: no evidence of the format */
	LINE_BAD,
};

struct parsed {
	int64_t ts_ns, pid;
	uint64_t offset, length;
	bool write;
	const char *process;
	const char *key;
	size_t key_len;
};

struct hy_trace_reader {
	gzFile gz;
	char *path;
	enum hy_trace_reader_format format;
	bool strict, eof, in_summary;
	int failed; /* sticky error of next() */

	char *rbuf; /* READ_CHUNK */
	size_t rpos, rlen;
	uint64_t raw_lines; /* physical lines cut so far */

	char *lbuf; /* the current line, HY_TRACE_MAX_LINE + 1 */
	size_t llen;
	unsigned lflags;
	uint64_t lline;
	char *jbuf; /* a hybridfs record over several lines */
	char *qbuf; /* unquoted CSV fields */
	char *kbuf; /* device key */

	struct pending *queue; /* lines read by detection */
	size_t qhead, qcount;

	struct device *devs;
	size_t dev_cap; /* power of two */
	uint32_t ndev;
	const char *last_key;
	size_t last_len;
	uint32_t last_index;

	struct hy_trace_reader_stats stats;
	char error[WHY_SIZE];
};

enum num_status { NUM_OK, NUM_EMPTY, NUM_NOT, NUM_NEGATIVE, NUM_OVERFLOW };

/* ---- functions one part calls in the other, by the file that has them ---- */

/* trace_formats.c */
enum num_status hy_trace_reader_parse_u64(const char *s, uint64_t *out);
const char *hy_trace_reader_parse_excerpt(const char *s, char *buf, size_t size);
int hy_trace_reader_parse_split_blank(char *s, char **f);
bool hy_trace_reader_parse_is_header(const char *line, const char *header);
enum line_kind hy_trace_reader_parse_line(struct hy_trace_reader *r,
					  enum hy_trace_reader_format format, bool *in_summary,
					  char *line, size_t len, struct parsed *p, char *why,
					  size_t why_size);

#endif
