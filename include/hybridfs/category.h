/*
 * category.h - ReCA's per-process workload categories (papers.md, ReCA;
 * issue 6): from a sliding window of a process's last W requests (their
 * classes from classify.h, directions, sizes and the sizes of the files
 * they touch) each process is put in one of ReCA's five categories, or
 * "unknown" while the window holds too few requests. ReCA found the five
 * categories in over 75 traces and configures the cache per category and
 * per process (by pid); the categories are:
 *
 *	random consumer			mostly reads, mostly not sequential
 *					(lookups, random-read benchmarks);
 *	random producer/consumer	reads and writes, mostly not sequential
 *					(databases, mail servers);
 *	sequential producer/consumer	mostly sequential, but with small
 *					requests, small files or both
 *					directions (compilers, make, fileserver);
 *	archival consumer		reads, sequential, large requests on
 *					large files (cat, tar c, backup);
 *	large file generator		writes, sequential, large requests on
 *					large files (dd, cp, image builders).
 *
 * The window (W = 256 by default, at most HY_CATEGORY_WINDOW_MAX) is a ring
 * of the last W requests with running sums, so each observation is O(1):
 * bytes per class, bytes written, bytes on large files, and the sums of
 * the lengths and of their squares. Every share is a share of bytes, not of
 * requests: one 128 KiB write moves as much data as thirty-two 4 KiB reads,
 * and the cache and the disk see bytes. It also makes the predicates move
 * together in a phase change: counted per request, a window turning from
 * 8 KiB random reads to 128 KiB sequential writes loses its "reads" after 6
 * writes but gains "sequential" only after 128, and spends over a hundred
 * requests looking like a random producer/consumer, long enough to be
 * adopted; by bytes every predicate has turned within 52 writes, less
 * than the hold. A zero-length request counts as one byte (as in
 * classify.h).
 *
 * Five predicates of the window decide the category; each is a threshold
 * (a config field, default in brackets) and each has a reason:
 *
 *	SEQ	sequential requests carry >= seq_permille [500] of the bytes. ReCA's
 *		categories split first into sequential and random ones (fig. 15:
 *		the random ones are where caching pays); a majority is the
 *		plain split. Strided and overlapped count as not sequential:
 *		ReCA finds most strided requests are filesystem metadata, and
 *		overlapped is re-reference, the locality of the random
 *		producer/consumers.
 *	READS	reads >= heavy_permille [800] of the bytes ("consumer").
 *	WRITES	writes >= heavy_permille [800] of the bytes ("producer").
 *		Between the two (writes 20-80%) a process both produces and
 *		consumes. 80% leaves a 1-in-5 minority of the other direction
 *		(a reader's log or index updates, a writer's metadata reads)
 *		inside the "consumer" or "producer" it mostly is.
 *	BIG	byte-weighted mean request size (sum of squared lengths over
 *		the sum of lengths: the size of the request an average byte
 *		travels in; lengths capped at 16 MiB for the sums) >=
 *		large_request [64 KiB]. Half of FUSE's
 *		largest request (128 KiB) and of the kernel's default readahead:
 *		a streaming reader or a dd/cp writer with any usual block size
 *		(64 KiB and up) is above it, a database's 4-16 KiB pages and a
 *		compiler's small writes are well below it.
 *	LARGE	requests on files of at least large_file [1 MiB] carry at least
 *		large_file_permille [500] of the bytes. Under 1 MiB a file is at
 *		most eight 128 KiB requests: too short for a stream the cache
 *		should bypass or read ahead; most source, object and config
 *		files are below it, archives, images and backups above it. The
 *		caller passes the file's size as it is at the request (after a
 *		write that extends it), so a generator's file crosses 1 MiB on
 *		its eighth 128 KiB write.
 *
 * The verdict from the predicates:
 *
 *	fewer than min_requests [32] in the window	unknown (a half-empty
 *		window of a few requests says nothing about a phase);
 *	SEQ and READS and BIG and LARGE			archival consumer;
 *	SEQ and WRITES and BIG and LARGE		large file generator;
 *	SEQ otherwise					sequential producer/consumer
 *		(sequential, but small requests or small files or both
 *		directions: what ReCA's fileserver and build workloads do);
 *	not SEQ and READS				random consumer;
 *	not SEQ otherwise				random producer/consumer (a
 *		random stream that writes at all, even mostly, mixes: a
 *		database's page writes come with its reads).
 *
 * Hysteresis, two stages, so a category does not flap:
 *  1. Each predicate is a Schmitt trigger: it turns true when its value
 *     reaches the threshold and false only when it falls below the
 *     threshold less a margin: margin_permille [150] for the shares
 *     (0.15 absolute: SEQ and LARGE turn off below 35%, READS and WRITES
 *     below 65%), and big_margin_permille [250] of large_request for BIG
 *     (off below 48 KiB by default). A 50/50 mix of short bursts (1 to 8
 *     requests, alternating) keeps a 256-request window's share within
 *     0.39..0.60 over 10,000 requests (measured, 50 seeds); 0.10 let it
 *     through a few times per 10,000, 0.15 never; a phase change moves a
 *     share by 0.5 or more, so it still turns the predicate. A byte-weighted mean swings more than
 *     a share (one 1 MiB request among 4 KiB ones moves it far), hence
 *     the wider band. A window sitting on a threshold thus holds its
 *     predicates.
 *  2. The verdict of the held predicates (the raw verdict) replaces the
 *     category in force only after it has been the raw verdict for hold
 *     [64] consecutive observations; any other raw verdict restarts the
 *     count. 64 is a quarter of the window: a real phase change moves the
 *     window past its thresholds and then stays, noise does not stay.
 *  Leaving "unknown" is immediate, once the window has min_requests:
 *  there is no category to protect yet, and the first one counts as the
 *  one change. The predicates are not updated before that, so the first
 *  verdict uses the plain thresholds. The window never shrinks, so a
 *  process never returns to unknown; an idle process simply stops being
 *  observed (the caller may hy_category_init() it again).
 *
 * Who calls it: ReCA's module (engine/reca.c, reca.h), on every read and
 * write of a process (or a trace's key), after classifying the request
 * against the process's history (classify.h), with the end of the request
 * as what it knows of the file's size; fs/status.c, ctl/simulate_cmd.c
 * and ctl/tune_cmd.c for the categories' names. The unit tests call it
 * directly.
 *
 * Memory: the caller owns struct hy_category_state (embedded per process,
 * 1424 bytes on x86-64); nothing is allocated. Threads: none inside; the caller
 * serializes (ReCA's stripe mutex). The decisions use integer
 * arithmetic only (the mix's doubles are for display): the same requests
 * give the same categories everywhere.
 */
#ifndef HYBRIDFS_CATEGORY_H
#define HYBRIDFS_CATEGORY_H

#include <stdbool.h>
#include <stdint.h>

#include "hybridfs/classify.h"

enum hy_category {
	HY_CATEGORY_UNKNOWN = 0,
	HY_CATEGORY_RANDOM_CONSUMER,
	HY_CATEGORY_RANDOM_PRODUCER_CONSUMER,
	HY_CATEGORY_SEQUENTIAL_PRODUCER_CONSUMER,
	HY_CATEGORY_ARCHIVAL_CONSUMER,
	HY_CATEGORY_LARGE_FILE_GENERATOR,
	HY_CATEGORY_COUNT
};

#define HY_CATEGORY_WINDOW_MAX			256u
#define HY_CATEGORY_DEFAULT_WINDOW		256u
#define HY_CATEGORY_DEFAULT_MIN_REQUESTS	32u
#define HY_CATEGORY_DEFAULT_HOLD		64u
#define HY_CATEGORY_DEFAULT_SEQ_PERMILLE	500u
#define HY_CATEGORY_DEFAULT_HEAVY_PERMILLE	800u
#define HY_CATEGORY_DEFAULT_LARGE_FILE_PERMILLE 500u
#define HY_CATEGORY_DEFAULT_MARGIN_PERMILLE	150u
#define HY_CATEGORY_DEFAULT_BIG_MARGIN_PERMILLE 250u
#define HY_CATEGORY_DEFAULT_LARGE_REQUEST	(UINT32_C(64) << 10)
#define HY_CATEGORY_DEFAULT_LARGE_FILE		(UINT64_C(1) << 20)

/* The tunables; hy_category_config_init() fills in the defaults above.
 * hy_category_init() clamps what is out of range: window to
 * 1..HY_CATEGORY_WINDOW_MAX, min_requests to 1..window, hold to at least 1,
 * the permilles to at most 1000 (the margins to at most 999). */
struct hy_category_config {
	unsigned window;	      /* W, requests in the window */
	unsigned min_requests;	      /* fewer: unknown */
	unsigned hold;		      /* K, consecutive raw verdicts to switch */
	unsigned seq_permille;	      /* SEQ: sequential share of requests */
	unsigned heavy_permille;      /* READS / WRITES: share of bytes */
	unsigned large_file_permille; /* LARGE: share of bytes on large files */
	unsigned margin_permille;     /* Schmitt margin of the share predicates */
	unsigned big_margin_permille; /* BIG's, a fraction of large_request */
	uint32_t large_request;	      /* BIG: mean request size, bytes */
	uint64_t large_file;	      /* LARGE: file size, bytes */
};

/* Per process; treat as opaque, read it through the functions below. */
struct hy_category_state {
	struct hy_category_config cfg;
	uint32_t len[HY_CATEGORY_WINDOW_MAX];  /* request length, >= 1 */
	uint8_t flags[HY_CATEGORY_WINDOW_MAX]; /* class | write | large file */
	unsigned head;			       /* next slot to fill */
	unsigned count;			       /* requests in the window */
	uint64_t class_bytes[HY_CLASS_COUNT];
	uint64_t bytes, write_bytes, large_bytes;
	uint64_t sum_cap, sum_sq;   /* BIG: lengths capped, squares */
	unsigned predicates;	    /* held predicate bits */
	enum hy_category current;   /* in force */
	enum hy_category candidate; /* raw verdict being held */
	unsigned streak;	    /* consecutive candidate verdicts */
};

/* The window's shares, for status output. */
struct hy_category_mix {
	unsigned requests;		    /* in the window */
	double class_share[HY_CLASS_COUNT]; /* of bytes, index by class */
	double write_share;		    /* of bytes */
	double large_file_share;	    /* of bytes, files >= large_file */
	uint64_t mean_size;		    /* bytes per request (plain mean) */
};

/* "unknown", "random-consumer", ...; "invalid" out of range. */
const char *hy_category_name(enum hy_category c);

void hy_category_config_init(struct hy_category_config *cfg);

/* An empty window, category unknown; @cfg NULL takes the defaults. */
void hy_category_init(struct hy_category_state *s, const struct hy_category_config *cfg);

/* Adds one request to the window (dropping the oldest when full) and
 * returns the category in force after hysteresis. @cls is the request's
 * class (an out-of-range value counts as random), @length its size,
 * @file_size the size of its file at the request. O(1). */
enum hy_category hy_category_observe(struct hy_category_state *s, enum hy_request_class cls,
				     bool write, uint32_t length, uint64_t file_size);

enum hy_category hy_category_current(const struct hy_category_state *s);

void hy_category_mix(const struct hy_category_state *s, struct hy_category_mix *out);

#endif
