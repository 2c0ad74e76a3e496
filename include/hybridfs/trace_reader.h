/*
 * trace_reader.h - block traces read back, one request at a time, for the
 * simulator (issue 7).
 *
 * What it is for: `hybridctl simulate` and the tests replay real block
 * traces through the engine's cache and policies. This module reads them:
 * streaming (one line at a time, constant memory whatever the trace's
 * length), gzip or plain (zlib reads both), in any of the formats below,
 * detected from the first lines unless the caller names one.
 *
 * Formats (the traces in ../shared/traces and the tools' own):
 *   msr        MSR Cambridge CSV: Timestamp,Hostname,DiskNumber,Type,
 *              Offset,Size,ResponseTime (Windows ticks; Read|Write; bytes);
 *              the device is (Hostname, DiskNumber). ts_ns is ns since
 *              the Unix epoch (ticks - 116444736000000000) * 100, as
 *              hybridctl trace export wrote it; ticks below that (a trace
 *              rebased to 0) are taken as they are, times 100.
 *   heimdall   MSR cut by Heimdall/FlashNet: "ts_ms device offset_bytes
 *              size_bytes io_type" (io_type 1 read, 0 write; ts float ms).
 *   fiu        FIU SRCMap/IODedup: "ts_ns pid process lba size R|W major
 *              minor md5" (lba, size in 512 B sectors); device (major,
 *              minor); keeps pid and process. hybridctl trace export
 *              --format fiu writes it too.
 *   blkparse   blkparse's default text: "maj,min cpu seq time pid action
 *              rwbs sector + nsectors [process]"; only Q (queued) events
 *              with R or W in rwbs are requests; every other line (other
 *              actions, CFQ messages, the summary at the end) is skipped
 *              without being an error.
 *   disksim    DiskSim ASCII (UMass/SPC via MQSim): "arrival_ns device
 *              lba_sectors size_sectors type" (type 1 read, 0 write).
 *   spc        SPC/UMass original: "asu,lba,size,opcode,ts" (lba in 512 B
 *              sectors, size in bytes, opcode r|w, ts seconds).
 *   vscsi      CloudPhysics CSV with the header "version,time,op,size,lbn"
 *              (time s, op hex SCSI opcode 28 read / 2a write, size bytes,
 *              lbn 512 B sectors).
 *   tencent    Tencent CBS CSV: Timestamp,Offset,Size,IOType,VolumeID (s;
 *              sectors; 0 read, 1 write); the device is the volume.
 *   arc        ARC .lis: "start_block nblocks ignore request_no" (512 B
 *              blocks, all reads, no time).
 *   hybridfs   hybridctl trace export --format csv (its header line names
 *              it): ts_ns,pid,process,exe,file_id,offset,length,...,mode,
 *              class,phys_block; the device is the file id.
 * Detection (hy_trace_reader_open with @format NULL or "auto"): from the
 * first non-empty lines (a header line names vscsi and hybridfs, and only
 * its header names vscsi; field counts, separators and the shape of each
 * field the rest: up to 64 lines are parsed in each format, and the formats
 * that parse them with the fewest bad lines win); a trace that matches
 * none, or more than one, is refused with a message that says so and asks
 * for --format. Heimdall and DiskSim lines are both five numbers: a
 * fractional first field is Heimdall's; with integer ones, an offset or
 * size that is not a multiple of 512 is DiskSim's (sectors), and lines
 * with only multiples of 512 are ambiguous. An empty trace (or one of
 * comments only) cannot be detected.
 *
 * Devices: each format's device or volume key (a string or numbers) is
 * numbered 0, 1, 2... in order of first appearance (BASELINES.md's rule),
 * kept in a small table (one entry per distinct device; a trace with more
 * than HY_TRACE_MAX_DEVICES is refused at the one past the limit, named).
 *
 * Bad lines: a line that does not parse in the trace's format (too few
 * fields, a number that is not one, a negative or overflowing value, an
 * unknown operation) is counted, and reported once per line through
 * hy_log(LOG_WARNING) with its line number and what was wrong (at most
 * HY_TRACE_MAX_WARNINGS of them are logged; all are counted); with
 * @strict the first one ends the read with -EINVAL and the message in
 * hy_trace_reader_error(). Empty lines and '#' comment lines are skipped.
 * Garbage (binary data, lines longer than HY_TRACE_MAX_LINE) never crashes
 * the reader: an over-long line is a bad line.
 *
 * Who calls it: sim/ (replay), ctl/simulate_cmd.c, the unit tests and the
 * fuzz target.
 *
 * Memory: hy_trace_reader_open allocates the reader (its line buffer and
 * the device table); hy_trace_reader_close frees it. Records are filled in
 * the caller's struct; their process string points into the reader and is
 * valid until the next call. Threads: one reader, one thread.
 */
#ifndef HYBRIDFS_TRACE_READER_H
#define HYBRIDFS_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_TRACE_MAX_LINE     65536
#define HY_TRACE_MAX_DEVICES  65535 /* device numbers below 2^16 - 1: replay.h keys */
#define HY_TRACE_MAX_WARNINGS 20

enum hy_trace_reader_format {
	HY_TRACE_READ_MSR,
	HY_TRACE_READ_HEIMDALL,
	HY_TRACE_READ_FIU,
	HY_TRACE_READ_BLKPARSE,
	HY_TRACE_READ_DISKSIM,
	HY_TRACE_READ_SPC,
	HY_TRACE_READ_VSCSI,
	HY_TRACE_READ_TENCENT,
	HY_TRACE_READ_ARC,
	HY_TRACE_READ_HYBRIDFS,
	HY_TRACE_READ_FORMATS
};

/* One request. */
struct hy_trace_record {
	int64_t ts_ns;	   /* from the trace's start as the trace gives it; -1: none */
	uint32_t device;   /* 0, 1, 2... by first appearance */
	uint64_t offset;   /* bytes */
	uint64_t length;   /* bytes; 0 is possible (the replay drops it) */
	bool write;
	int64_t pid;	   /* -1 when the format has none */
	const char *process; /* "" when the format has none */
	uint64_t line;	   /* its line number in the file, from 1 */
};

struct hy_trace_reader_stats {
	uint64_t lines;	    /* read so far */
	uint64_t records;   /* returned */
	uint64_t bad_lines; /* that did not parse (counted, skipped) */
	uint64_t skipped;   /* empty, comment, header, non-request events */
	uint32_t devices;
};

struct hy_trace_reader;

/* "msr", "heimdall", ... (the names above); NULL for an out-of-range one. */
const char *hy_trace_reader_format_name(enum hy_trace_reader_format format);
/* A name to a format: 0, or -EINVAL with a message listing the names. */
int hy_trace_reader_format_parse(const char *name, enum hy_trace_reader_format *out, char *why,
				 size_t why_size);

/* Opens @path ("-": standard input) in @format (NULL or "auto": detected).
 * 0, or a negative errno with the reason in @why (the file cannot be
 * opened or read, the format name is unknown, detection failed). */
int hy_trace_reader_open(const char *path, const char *format, bool strict,
			 struct hy_trace_reader **out, char *why, size_t why_size);
void hy_trace_reader_close(struct hy_trace_reader *reader);

enum hy_trace_reader_format hy_trace_reader_format(const struct hy_trace_reader *reader);

/* The next request into @rec: 1, 0 at the end of the trace, or a negative
 * errno (-EIO a read or decompression error, -EINVAL a bad line in strict
 * mode, -E2BIG too many devices), with the reason in
 * hy_trace_reader_error(). */
int hy_trace_reader_next(struct hy_trace_reader *reader, struct hy_trace_record *rec);

const char *hy_trace_reader_error(const struct hy_trace_reader *reader);
void hy_trace_reader_get_stats(const struct hy_trace_reader *reader,
			       struct hy_trace_reader_stats *out);

#endif
