/*
 * trace.h - the access log as a trace that other tools read.
 *
 * What it is for: `hybridctl trace export` writes the profiler's log
 * (state.h, table access_log) in one of three formats, so that the trace
 * simulator (sim/, hybridctl simulate and tune), and other tools, can
 * replay it:
 *
 *   csv  hybridfs's own, one header line then one line per request:
 *        ts_ns,pid,process,exe,file_id,offset,length,block_first,
 *        block_count,mode,class,phys_block
 *        mode is R or W; class is ReCA's request class by name
 *        (classify.h): sequential, strided, overlapped or random, empty
 *        when the request was not classified;
 *        exe and phys_block are empty when unknown; process and exe are
 *        quoted as RFC 4180 says when they hold a comma, quote or newline.
 *   fiu  the FIU SRCMap/IODedup format, which keeps the pid and process:
 *        "ts pid process lba size op major minor md5", space separated:
 *        ts in ns; lba and size in 512-byte sectors; op R or W; major 0,
 *        minor the file id; md5 "0" (the log stores no contents).
 *   msr  MSR Cambridge: "Timestamp,Hostname,DiskNumber,Type,Offset,Size,
 *        ResponseTime": Timestamp in Windows ticks (100 ns since 1601),
 *        Hostname "hybridfs", DiskNumber 0, Type Read or Write, Offset and
 *        Size in bytes, ResponseTime 0.
 *
 * Addresses in fiu and msr: those formats name a block of one disk, not a
 * file. A request whose physical block is known (phys_block) is exported
 * at that address on the backing device; one without is placed in a
 * synthetic address space where file F's byte B sits at F * 2^40 + B, so
 * different files never overlap. Process names in fiu have white space
 * replaced by '_' so the line still splits into nine fields.
 *
 * Who calls it: ctl/trace_cmd.c (export), ctl/tune_cmd.c (the mount's
 * log exported to replay it), ctl/reorganize_cmd.c (times); the unit
 * tests (golden files).
 *
 * Memory: nothing is kept. Locks: none; @db is used by one thread.
 */
#ifndef HYBRIDFS_TRACE_H
#define HYBRIDFS_TRACE_H

#include <stdint.h>
#include <stdio.h>

struct sqlite3;

enum hy_trace_format {
	HY_TRACE_CSV,
	HY_TRACE_FIU,
	HY_TRACE_MSR,
};

#define HY_TRACE_SYNTHETIC_FILE_SHIFT 40

/* "csv", "fiu" or "msr"; -EINVAL with a message naming the word. */
int hy_trace_format_parse(const char *name, enum hy_trace_format *out, char *why, size_t why_size);

/* Parses a time for --since/--until into ns since the epoch: seconds since
 * the epoch ("1764460800", fractions allowed), an ISO 8601 date and time in
 * UTC or with an offset ("2026-11-30T02:00:00Z", "2026-11-30 02:00",
 * "2026-11-30"), or a time before @now_ns ("-90s", "-15m", "-2h", "-1d").
 * Returns 0 or -EINVAL with a message naming the text. */
int hy_trace_parse_time(const char *text, int64_t now_ns, int64_t *out_ns, char *why,
			size_t why_size);

/* Writes every request with @since_ns <= ts_ns < @until_ns, in log order,
 * to @out. Returns 0 with the count in @rows, or a negative errno with a
 * message in @why (the database's error, or the output's). */
int hy_trace_export(struct sqlite3 *db, enum hy_trace_format format, int64_t since_ns,
		    int64_t until_ns, FILE *out, uint64_t *rows, char *why, size_t why_size);

#endif
