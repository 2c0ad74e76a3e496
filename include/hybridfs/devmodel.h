/*
 * devmodel.h - device models: how long an HDD, an SSD or a shingled (SMR)
 * disk takes to serve a request, for the simulator (issue 7) and for the
 * daemon's HDD emulation (emulate=hdd).
 *
 * What it is for: the simulator replays traces over a backing device and a
 * cache device and reports their busy time and response times; the daemon
 * can delay each backing I/O by the HDD model's service time so that the
 * layout's and the cache's effects show on a machine whose disk is fast.
 * One model serves requests in the order it is given them (closed loop):
 * hy_devmodel_serve() returns the request's service time and advances the
 * model's state (head position, caches, SMR bands).
 *
 * The models, and where their defaults come from (the header of
 * device/devmodel.c cites the data sheets):
 *   HDD: a seek time that grows with the square root of the distance for
 *        short seeks and linearly for long ones (Ruemmler & Wilkes'
 *        curve), between a track-to-track and a full-stroke time; the
 *        rotational latency of its rpm (half a turn on average; none for
 *        a request that continues the previous one); the media transfer
 *        rate; an on-disk read-ahead buffer (a read inside the segment
 *        the last read loaded is served from it at interface speed) and a
 *        write cache (writes acknowledged at interface speed while its
 *        bytes have room, then at media speed), as ReCA measured HDDs
 *        behave (random writes about twice as fast as random reads).
 *        Defaults: a 7,200 rpm 3.5" SATA drive (Seagate Barracuda
 *        ST1000DM010 class: 8.5 ms average read seek, 4.16 ms average
 *        rotational latency, ~210 MB/s sustained).
 *   SSD: a fixed read and write latency plus size over bandwidth.
 *        Defaults: a SATA SSD (Samsung 870 EVO class: ~90 us read, ~30 us
 *        write at queue depth 1, 530 / 500 MB/s).
 *   SMR: an HDD whose writes go to a persistent write buffer (a media
 *        cache) while it has room; when it fills, it is cleaned band by
 *        band: every band with buffered data is read, merged and written
 *        back whole, as PORE describes (bands of 17-36 MB, a buffer of
 *        about 20 GB on a 5 TB drive, scaled here). Write amplification =
 *        bytes written to the media (buffer + band rewrites) / bytes the
 *        host wrote. Defaults: band 32 MiB, buffer 1 GiB.
 *
 * Parameters are plain fields (struct hy_devmodel_params) with defaults
 * from hy_devmodel_defaults(); hy_devmodel_set() takes "name=value"
 * settings (the daemon's emulate= option and hybridctl simulate
 * --device-param use it) and names a bad one.
 *
 * Who calls it: sim/ (replay.c, full.c, borg.c, home.c), ctl/simulate_cmd.c and
 * ctl/tune_cmd.c (--device settings), device/device.c (emulate=: each
 * request delayed by hy_devmodel_serve), fs/main.c (emulate='s spec), the
 * unit tests.
 *
 * Memory: hy_devmodel_new allocates the model (the SMR band table: one bit
 * per band and the list of dirty bands, so serving never allocates);
 * hy_devmodel_free frees it (NULL is fine). Threads: none; the
 * caller serializes (the daemon holds a mutex around serve).
 */
#ifndef HYBRIDFS_DEVMODEL_H
#define HYBRIDFS_DEVMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hy_devmodel_kind { HY_DEVMODEL_HDD, HY_DEVMODEL_SSD, HY_DEVMODEL_SMR };

struct hy_devmodel_params {
	enum hy_devmodel_kind kind;
	uint64_t capacity;	    /* bytes */
	/* HDD and SMR */
	double rpm;
	double seek_track_ms;	    /* track to track */
	double seek_avg_ms;	    /* a third of the stroke */
	double seek_full_ms;	    /* full stroke */
	double media_mb_s;	    /* sustained transfer, MB/s (10^6) */
	double interface_mb_s;	    /* from the drive's buffers */
	uint64_t readahead_bytes;   /* segment loaded after a read; 0: none */
	uint64_t write_cache_bytes; /* volatile write cache; 0: none */
	/* SSD */
	double read_us, write_us;   /* latency per request */
	double read_mb_s, write_mb_s;
	/* SMR */
	uint64_t band_bytes;
	uint64_t buffer_bytes; /* persistent write buffer (media cache) */
};

struct hy_devmodel_stats {
	uint64_t reads, writes;
	uint64_t bytes_read, bytes_written; /* by the host */
	double busy_ms;			    /* sum of service times */
	uint64_t seeks;			    /* HDD/SMR: requests that moved the head */
	uint64_t readahead_hits, write_cache_hits;
	/* SMR: buffer writes + band rewrites; HDD, SSD: = bytes_written */
	uint64_t media_bytes_written;
	uint64_t band_cleanings;    /* SMR: bands rewritten */
	double write_amplification; /* media_bytes_written / bytes_written (0: none) */
};

struct hy_devmodel;

void hy_devmodel_defaults(enum hy_devmodel_kind kind, struct hy_devmodel_params *out);
/* "hdd", "ssd", "smr"; NULL out of range. */
const char *hy_devmodel_kind_name(enum hy_devmodel_kind kind);
int hy_devmodel_kind_parse(const char *name, enum hy_devmodel_kind *out, char *why,
			   size_t why_size);
/* "KIND[:NAME=VALUE...]" (emulate='s text): the kind's defaults with the
 * settings applied. 0, or -EINVAL with @why naming the bad part, or
 * -ENOMEM. */
int hy_devmodel_parse_spec(const char *spec, struct hy_devmodel_params *p, char *why,
			   size_t why_size);
/* One "name=value" setting (field names as above, e.g. "rpm=5400",
 * "seek_avg_ms=12", "band_bytes=64M"): 0, or -EINVAL naming the bad part
 * (@p unchanged). */
int hy_devmodel_set(struct hy_devmodel_params *p, const char *setting, char *why,
		    size_t why_size);

/* 0, or -EINVAL (inconsistent parameters, named) or -ENOMEM. */
int hy_devmodel_new(const struct hy_devmodel_params *p, struct hy_devmodel **out, char *why,
		    size_t why_size);
void hy_devmodel_free(struct hy_devmodel *m);

/* Serves one request of @length bytes at byte @offset (wrapped into the
 * capacity); returns its service time in ms (>= 0). */
double hy_devmodel_serve(struct hy_devmodel *m, uint64_t offset, uint64_t length, bool write);

void hy_devmodel_get_stats(const struct hy_devmodel *m, struct hy_devmodel_stats *out);

#endif
