/*
 * devmodel.c - HDD, SSD and SMR service-time models; the contract is in
 * include/hybridfs/devmodel.h. Every model is deterministic: the same
 * requests in the same order give the same times, so tests can compute
 * them by hand. Times are in ms, rates in MB/s (10^6 bytes), so that
 * "transfer(n, r)" below is n / (r * 10^6) * 1000 = n / (r * 1000) ms.
 *
 * HDD (kind=hdd)
 *   The head starts at byte 0. For a request at byte o (wrapped into the
 *   capacity C) with the head at h:
 *     d = |o - h|, f = d / C
 *     seek(d)   = 0                                        if d == 0
 *               = track + (avg - track) * sqrt(3 f)        if f <= 1/3
 *               = avg + (full - avg) * (f - 1/3) / (2/3)   otherwise
 *     rotation  = 0 if d == 0 (the request continues the last one), else
 *                 half a turn, 60000 / rpm / 2 ms (the average, so that the
 *                 model stays deterministic)
 *     media(o, n) = seek(d) + rotation + transfer(n, media_mb_s)
 *   (Ruemmler & Wilkes' seek curve, pinned at track-to-track, at a third of
 *   the stroke (the average seek) and at the full stroke.)
 *   Reads. The drive holds one segment [s, e) of its DRAM buffer: after a
 *   read of [o, o + n) that went to the media it holds the request and the
 *   read-ahead behind it, [o, o + n + readahead_bytes) (cut at C), and the
 *   head is left at the segment's end (the read-ahead runs in the
 *   background, between requests: it costs the host nothing, but it moves
 *   the head). Then a read
 *     - inside [s, e): a read-ahead hit, transfer(n, interface_mb_s);
 *     - starting inside and running past e: the held part at interface
 *       speed plus media(e, rest) (no seek and no rotation when the head is
 *       still at e); the segment becomes [o, o + n + readahead_bytes);
 *     - otherwise: media(o, n), and the segment is replaced.
 *   Hence a sequential stream pays one seek and rotation, then hits, then
 *   one pure media transfer per segment; a strided stream hits while its
 *   gap stays inside the segment and pays a short seek plus half a turn
 *   per request once it does not.
 *   Writes. The volatile write cache is a byte budget drained at media
 *   speed over the model's own clock (the sum of service times so far, as
 *   the model serves a closed loop): before each write,
 *     pending = max(0, pending - (clock - last) * media_mb_s * 1000)
 *   and if write_cache_bytes > 0 and pending + n <= write_cache_bytes the
 *   write is absorbed: transfer(n, interface_mb_s), pending += n, the head
 *   does not move (the drain happens in the background and its head
 *   movements are ignored). Otherwise the write pays media(o, n) and leaves
 *   the head at o + n; pending is left as it is. A write that overlaps the
 *   held read segment drops it. Note: the drain is charged as if it were
 *   sequential, so a long run of small random writes stays far cheaper
 *   than random reads (more than ReCA's 2x) until the cache fills.
 *
 * SSD (kind=ssd)
 *   read:  read_us / 1000 + transfer(n, read_mb_s)
 *   write: write_us / 1000 + transfer(n, write_mb_s)
 *   No state but the counters (no garbage collection, no internal write
 *   amplification: media_bytes_written = bytes_written).
 *
 * SMR (kind=smr)
 *   Reads as on the HDD, except that when the head is in the persistent
 *   buffer (the last media access was a buffer append) the read pays
 *   seek_avg_ms + rotation + transfer: the buffer has no LBA, so the
 *   distance is taken to be the average one. Reads of data still in the
 *   buffer are served like any read, from the data's LBA (the buffer's
 *   location is ignored). write_cache_bytes is ignored: the persistent
 *   buffer plays its part.
 *   Writes are appended to the persistent buffer, which is sequential
 *   whatever their LBAs: an append costs transfer(n, media_mb_s), plus
 *   seek_avg_ms + rotation when the previous media access was not an
 *   append (a read or a cleaning moved the head away). Each append marks
 *   the bands it covers dirty (band = byte / band_bytes) and adds n to the
 *   buffered bytes and to media_bytes_written. When buffered + n would
 *   exceed buffer_bytes, the buffer is cleaned first: every dirty band is
 *   read, merged and written back whole, at seek_avg_ms + rotation +
 *   transfer(2 * band, media_mb_s) each (band = band_bytes, less for a
 *   last partial band); band_cleanings += 1 and media_bytes_written +=
 *   band per band; then the buffer is empty and the write goes on. A write
 *   larger than the buffer is appended in pieces of at most buffer_bytes.
 *   Write amplification = media_bytes_written / bytes_written.
 *   The band table is a bitmap over the ceil(C / band_bytes) bands plus
 *   the list of dirty band numbers in the order they became dirty, both
 *   allocated by hy_devmodel_new, so that marking is O(1) and cleaning is
 *   O(dirty bands) with no allocation while serving.
 *
 * All kinds: a request of length 0 is counted and costs nothing. A request
 * that runs past the end of the device wraps to byte 0 (for the head and
 * the bands). sqrt is computed here by Newton's method, because the
 * daemon, which links libhydevice.a, does not link libm.
 *
 * Defaults (hy_devmodel_defaults fills every field, the other kinds' from
 * their own defaults, so that "kind=" alone switches to a valid model):
 *   HDD: a 7,200 rpm 3.5" SATA drive, Seagate Barracuda ST1000DM010 class:
 *     1 TB (10^12 bytes); 8.5 ms average read seek and 4.16 ms average
 *     latency (7,200 rpm) and ~210 MB/s sustained (data sheet); 1.0 ms
 *     track-to-track and 18 ms full stroke (typical of the class: the data
 *     sheet gives only the average); SATA 6 Gb/s interface, 600 MB/s; a
 *     64 MB DRAM cache, modeled as a 64 MiB write cache; read-ahead
 *     1 MiB: a track holds 210 MB/s / 120 turns/s ~ 1.75 MB, and a drive
 *     reads ahead about half to one track while the host turns the next
 *     request around (its 64 MB buffer holds many such segments; one is
 *     modeled). 256 KiB would make sequential 1 MiB streams miss every
 *     time, which drives do not.
 *   SSD: a SATA SSD, Samsung 870 EVO class: 1 TB, ~90 us read and ~30 us
 *     write latency at queue depth 1, 530 / 500 MB/s.
 *   SMR: a 5 TB drive-managed SMR disk, Seagate Archive v2 ST5000AS0011
 *     class: 5,900 rpm, 9.5 ms average seek (1.0 / 18 ms track / full as
 *     for the HDD), ~180 MB/s sustained; bands of 32 MiB (PORE: 17-36 MB);
 *     a persistent buffer of 1 GiB (PORE: ~20 GB on 5 TB, scaled down so
 *     that simulated traces reach cleanings); no volatile write cache.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/devmodel.h"
#include "hybridfs/log.h"
#include "hybridfs/units.h"

#define KIB	       (UINT64_C(1) << 10)
#define MIB	       (UINT64_C(1) << 20)
#define GIB	       (UINT64_C(1) << 30)
#define MIN_CAPACITY   MIB
#define MAX_BANDS      (UINT64_C(1) << 24) /* the dirty list: 64 MiB at most */
#define DEFAULT_HDD_TB UINT64_C(1000000000000)

struct hy_devmodel {
	struct hy_devmodel_params p;
	struct hy_devmodel_stats st; /* busy_ms is the model's clock */
	uint64_t head;		     /* byte under the head, < capacity */
	bool in_buffer;		     /* SMR: the last media access was an append */
	bool seg_valid;		     /* the held read segment [seg_start, seg_end) */
	uint64_t seg_start, seg_end;
	double wc_pending; /* HDD: bytes in the write cache */
	double wc_time;	   /* clock when wc_pending was last drained */
	/* SMR */
	uint64_t nbands;
	uint8_t *dirty_map; /* one bit per band */
	uint32_t *dirty;    /* ndirty band numbers, in the order they got dirty */
	uint64_t ndirty;
	uint64_t buffered; /* bytes in the persistent buffer */
};

void hy_devmodel_defaults(enum hy_devmodel_kind kind, struct hy_devmodel_params *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	out->capacity = DEFAULT_HDD_TB;
	out->rpm = 7200;
	out->seek_track_ms = 1.0;
	out->seek_avg_ms = 8.5;
	out->seek_full_ms = 18.0;
	out->media_mb_s = 210;
	out->interface_mb_s = 600;
	out->readahead_bytes = MIB;
	out->write_cache_bytes = 64 * MIB;
	out->read_us = 90;
	out->write_us = 30;
	out->read_mb_s = 530;
	out->write_mb_s = 500;
	out->band_bytes = 32 * MIB;
	out->buffer_bytes = GIB;
	if (kind == HY_DEVMODEL_SMR) {
		out->capacity = 5 * DEFAULT_HDD_TB;
		out->rpm = 5900;
		out->seek_avg_ms = 9.5;
		out->media_mb_s = 180;
		out->write_cache_bytes = 0;
	}
}

const char *hy_devmodel_kind_name(enum hy_devmodel_kind kind)
{
	switch (kind) {
	case HY_DEVMODEL_HDD:
		return "hdd";
	case HY_DEVMODEL_SSD:
		return "ssd";
	case HY_DEVMODEL_SMR:
		return "smr";
	}
	return NULL;
}

int hy_devmodel_kind_parse(const char *name, enum hy_devmodel_kind *out, char *why, size_t why_size)
{
	static const enum hy_devmodel_kind kinds[] = {HY_DEVMODEL_HDD, HY_DEVMODEL_SSD,
						      HY_DEVMODEL_SMR};

	for (size_t i = 0; name && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(name, hy_devmodel_kind_name(kinds[i])) == 0) {
			*out = kinds[i];
			return 0;
		}
	return hy_log_why(-EINVAL, why, why_size,
			  "devmodel: unknown device kind \"%s\" (hdd, ssd or smr)",
			  name ? name : "");
}

/* hy_devmodel_set's table of fields */
enum field_type { F_KIND, F_SIZE, F_SIZE0, F_DOUBLE };

static const struct field {
	const char *name;
	size_t offset;
	enum field_type type;
} fields[] = {
	{"kind", offsetof(struct hy_devmodel_params, kind), F_KIND},
	{"capacity", offsetof(struct hy_devmodel_params, capacity), F_SIZE},
	{"rpm", offsetof(struct hy_devmodel_params, rpm), F_DOUBLE},
	{"seek_track_ms", offsetof(struct hy_devmodel_params, seek_track_ms), F_DOUBLE},
	{"seek_avg_ms", offsetof(struct hy_devmodel_params, seek_avg_ms), F_DOUBLE},
	{"seek_full_ms", offsetof(struct hy_devmodel_params, seek_full_ms), F_DOUBLE},
	{"media_mb_s", offsetof(struct hy_devmodel_params, media_mb_s), F_DOUBLE},
	{"interface_mb_s", offsetof(struct hy_devmodel_params, interface_mb_s), F_DOUBLE},
	{"readahead_bytes", offsetof(struct hy_devmodel_params, readahead_bytes), F_SIZE0},
	{"write_cache_bytes", offsetof(struct hy_devmodel_params, write_cache_bytes), F_SIZE0},
	{"read_us", offsetof(struct hy_devmodel_params, read_us), F_DOUBLE},
	{"write_us", offsetof(struct hy_devmodel_params, write_us), F_DOUBLE},
	{"read_mb_s", offsetof(struct hy_devmodel_params, read_mb_s), F_DOUBLE},
	{"write_mb_s", offsetof(struct hy_devmodel_params, write_mb_s), F_DOUBLE},
	{"band_bytes", offsetof(struct hy_devmodel_params, band_bytes), F_SIZE},
	{"buffer_bytes", offsetof(struct hy_devmodel_params, buffer_bytes), F_SIZE},
};

int hy_devmodel_parse_spec(const char *spec, struct hy_devmodel_params *p, char *why,
			   size_t why_size)
{
	char *copy = strdup(spec), *save = NULL, *tok;
	enum hy_devmodel_kind kind;
	int rc;

	if (!copy) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	tok = strtok_r(copy, ":", &save);
	rc = hy_devmodel_kind_parse(tok ? tok : "", &kind, why, why_size);
	if (rc == 0) {
		hy_devmodel_defaults(kind, p);
		while (rc == 0 && (tok = strtok_r(NULL, ":", &save)) != NULL)
			rc = hy_devmodel_set(p, tok, why, why_size);
	}
	free(copy);
	return rc;
}

int hy_devmodel_set(struct hy_devmodel_params *p, const char *setting, char *why, size_t why_size)
{
	const char *eq = setting ? strchr(setting, '=') : NULL;
	const struct field *f = NULL;
	const char *value;
	size_t len;

	if (!eq)
		return hy_log_why(-EINVAL, why, why_size, "devmodel: \"%s\" is not name=value",
				  setting ? setting : "");
	len = (size_t)(eq - setting);
	value = eq + 1;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (strlen(fields[i].name) == len && strncmp(fields[i].name, setting, len) == 0)
			f = &fields[i];
	if (!f)
		return hy_log_why(-EINVAL, why, why_size, "devmodel: unknown parameter \"%.*s\"",
				  (int)len, setting);

	switch (f->type) {
	case F_KIND: {
		enum hy_devmodel_kind k;

		if (hy_devmodel_kind_parse(value, &k, why, why_size) < 0)
			return -EINVAL;
		p->kind = k;
		return 0;
	}
	case F_SIZE:
	case F_SIZE0: {
		uint64_t v;

		/* hy_units_parse_size would take a bare suffix ("K") as 0 */
		if (value[0] < '0' || value[0] > '9' ||
		    hy_units_parse_size(value, f->type == F_SIZE0, &v) < 0)
			return hy_log_why(-EINVAL, why, why_size,
					  "devmodel: \"%s=%s\": not a size in bytes (K, M, G, T "
					  "suffixes)%s",
					  f->name, value, f->type == F_SIZE0 ? "" : " above 0");
		memcpy((char *)p + f->offset, &v, sizeof(v));
		return 0;
	}
	case F_DOUBLE: {
		char *end = (char *)value;
		double v = 0;

		/* no leading space, no "inf" or "nan" */
		errno = 0;
		if (value[0] == '-' || value[0] == '+' || value[0] == '.' ||
		    (value[0] >= '0' && value[0] <= '9'))
			v = strtod(value, &end);
		if (end == value || errno || *end || !isfinite(v) || !(v > 0))
			return hy_log_why(-EINVAL, why, why_size,
					  "devmodel: \"%s=%s\": not a number above 0", f->name,
					  value);
		memcpy((char *)p + f->offset, &v, sizeof(v));
		return 0;
	}
	}
	return hy_log_why(-EINVAL, why, why_size, "devmodel: unknown parameter \"%s\"", f->name);
}

static bool positive(double v)
{
	return isfinite(v) && v > 0;
}

static int check(const struct hy_devmodel_params *p, char *why, size_t why_size)
{
	if (!hy_devmodel_kind_name(p->kind))
		return hy_log_why(-EINVAL, why, why_size, "devmodel: unknown device kind %d",
				  (int)p->kind);
	if (p->capacity < MIN_CAPACITY)
		return hy_log_why(-EINVAL, why, why_size, "devmodel: capacity %llu is below 1 MiB",
				  (unsigned long long)p->capacity);
	if (p->kind == HY_DEVMODEL_SSD) {
		if (!positive(p->read_us) || !positive(p->write_us))
			return hy_log_why(-EINVAL, why, why_size,
					  "devmodel: read_us and write_us must be numbers above 0");
		if (!positive(p->read_mb_s) || !positive(p->write_mb_s))
			return hy_log_why(
				-EINVAL, why, why_size,
				"devmodel: read_mb_s and write_mb_s must be numbers above 0");
		return 0;
	}
	if (!positive(p->rpm))
		return hy_log_why(-EINVAL, why, why_size, "devmodel: rpm must be a number above 0");
	if (!positive(p->seek_track_ms) || !positive(p->seek_avg_ms) || !positive(p->seek_full_ms))
		return hy_log_why(
			-EINVAL, why, why_size,
			"devmodel: seek_track_ms, seek_avg_ms and seek_full_ms must be numbers "
			"above 0");
	if (p->seek_track_ms > p->seek_avg_ms)
		return hy_log_why(-EINVAL, why, why_size,
				  "devmodel: seek_track_ms %g is above seek_avg_ms %g",
				  p->seek_track_ms, p->seek_avg_ms);
	if (p->seek_avg_ms > p->seek_full_ms)
		return hy_log_why(-EINVAL, why, why_size,
				  "devmodel: seek_avg_ms %g is above seek_full_ms %g",
				  p->seek_avg_ms, p->seek_full_ms);
	if (!positive(p->media_mb_s) || !positive(p->interface_mb_s))
		return hy_log_why(
			-EINVAL, why, why_size,
			"devmodel: media_mb_s and interface_mb_s must be numbers above 0");
	if (p->kind != HY_DEVMODEL_SMR)
		return 0;
	if (p->band_bytes == 0)
		return hy_log_why(-EINVAL, why, why_size, "devmodel: band_bytes must be above 0");
	if (p->band_bytes > p->buffer_bytes)
		return hy_log_why(-EINVAL, why, why_size,
				  "devmodel: band_bytes %llu is larger than buffer_bytes %llu",
				  (unsigned long long)p->band_bytes,
				  (unsigned long long)p->buffer_bytes);
	if (p->band_bytes > p->capacity)
		return hy_log_why(-EINVAL, why, why_size,
				  "devmodel: band_bytes %llu is larger than capacity %llu",
				  (unsigned long long)p->band_bytes,
				  (unsigned long long)p->capacity);
	if ((p->capacity - 1) / p->band_bytes + 1 > MAX_BANDS)
		return hy_log_why(
			-EINVAL, why, why_size,
			"devmodel: capacity / band_bytes is more than %llu bands; use larger "
			"bands",
			(unsigned long long)MAX_BANDS);
	return 0;
}

int hy_devmodel_new(const struct hy_devmodel_params *p, struct hy_devmodel **out, char *why,
		    size_t why_size)
{
	struct hy_devmodel *m;
	int rc;

	*out = NULL;
	rc = check(p, why, why_size);
	if (rc < 0)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->p = *p;
	if (p->kind == HY_DEVMODEL_SMR) {
		m->nbands = (p->capacity - 1) / p->band_bytes + 1;
		m->dirty_map = calloc((size_t)((m->nbands + 7) / 8), 1);
		m->dirty = calloc((size_t)m->nbands, sizeof(*m->dirty));
		if (!m->dirty_map || !m->dirty) {
			hy_log_why(-EINVAL, why, why_size, "devmodel: no memory for %llu bands",
				   (unsigned long long)m->nbands);
			hy_devmodel_free(m);
			return -ENOMEM;
		}
	}
	hy_log_debug("devmodel: %s model, capacity %llu", hy_devmodel_kind_name(p->kind),
		     (unsigned long long)p->capacity);
	*out = m;
	return 0;
}

void hy_devmodel_free(struct hy_devmodel *m)
{
	if (!m)
		return;
	free(m->dirty_map);
	free(m->dirty);
	free(m);
}

/* sqrt of 0 <= x <= 1 by Newton's method (no libm; see the top comment) */
static double root(double x)
{
	double r = 1.0;

	if (!(x > 0))
		return 0;
	for (int i = 0; i < 100; i++) {
		double next = 0.5 * (r + x / r);

		if (next == r)
			break;
		r = next;
	}
	return r;
}

static double transfer(uint64_t n, double mb_s)
{
	return (double)n / (mb_s * 1000.0);
}

static double rotation(const struct hy_devmodel *m)
{
	return 60000.0 / m->p.rpm / 2.0;
}

static double seek(const struct hy_devmodel *m, uint64_t d)
{
	const struct hy_devmodel_params *p = &m->p;
	double f = (double)d / (double)p->capacity;

	if (d == 0)
		return 0;
	if (f <= 1.0 / 3.0)
		return p->seek_track_ms + (p->seek_avg_ms - p->seek_track_ms) * root(3.0 * f);
	return p->seek_avg_ms + (p->seek_full_ms - p->seek_avg_ms) * (f - 1.0 / 3.0) * 1.5;
}

/* seek + rotation to reach byte @pos (< capacity); counts a seek; moves nothing */
static double position(struct hy_devmodel *m, uint64_t pos, bool *seeked)
{
	uint64_t d;

	if (m->in_buffer) {
		*seeked = true;
		return m->p.seek_avg_ms + rotation(m);
	}
	d = pos > m->head ? pos - m->head : m->head - pos;
	if (d == 0)
		return 0;
	*seeked = true;
	return seek(m, d) + rotation(m);
}

static uint64_t wrap(const struct hy_devmodel *m, uint64_t pos)
{
	return pos % m->p.capacity;
}

/* After a media read of [offset, end): hold it and the read-ahead behind it */
static void load_segment(struct hy_devmodel *m, uint64_t offset, uint64_t end)
{
	uint64_t e = end + m->p.readahead_bytes;

	if (e > m->p.capacity || e < end) /* cut at the end of the device */
		e = end > m->p.capacity ? end : m->p.capacity;
	m->seg_valid = true;
	m->seg_start = offset;
	m->seg_end = e;
	m->head = wrap(m, e);
	m->in_buffer = false;
}

static double hdd_read(struct hy_devmodel *m, uint64_t offset, uint64_t length, bool *seeked)
{
	uint64_t end = offset + length;
	double t;

	if (m->seg_valid && offset >= m->seg_start && end <= m->seg_end) {
		m->st.readahead_hits++;
		return transfer(length, m->p.interface_mb_s);
	}
	if (m->seg_valid && offset >= m->seg_start && offset < m->seg_end) {
		uint64_t held = m->seg_end - offset;

		t = transfer(held, m->p.interface_mb_s) + position(m, wrap(m, m->seg_end), seeked) +
		    transfer(length - held, m->p.media_mb_s);
	} else {
		t = position(m, offset, seeked) + transfer(length, m->p.media_mb_s);
	}
	load_segment(m, offset, end);
	return t;
}

static void drop_segment_if_overlaps(struct hy_devmodel *m, uint64_t offset, uint64_t end)
{
	if (m->seg_valid && offset < m->seg_end && end > m->seg_start)
		m->seg_valid = false;
}

static double hdd_write(struct hy_devmodel *m, uint64_t offset, uint64_t length, bool *seeked)
{
	const struct hy_devmodel_params *p = &m->p;
	double t;

	drop_segment_if_overlaps(m, offset, offset + length);
	m->wc_pending -= (m->st.busy_ms - m->wc_time) * p->media_mb_s * 1000.0;
	if (m->wc_pending < 0)
		m->wc_pending = 0;
	m->wc_time = m->st.busy_ms;
	if (p->write_cache_bytes > 0 &&
	    m->wc_pending + (double)length <= (double)p->write_cache_bytes) {
		m->wc_pending += (double)length;
		m->st.write_cache_hits++;
		return transfer(length, p->interface_mb_s);
	}
	t = position(m, offset, seeked) + transfer(length, p->media_mb_s);
	m->head = wrap(m, offset + length);
	m->in_buffer = false;
	return t;
}

static void mark_band(struct hy_devmodel *m, uint64_t b)
{
	uint8_t bit = (uint8_t)(1u << (b % 8));

	if (m->dirty_map[b / 8] & bit)
		return;
	m->dirty_map[b / 8] |= bit;
	m->dirty[m->ndirty++] = (uint32_t)b;
}

/* marks the bands of [offset, offset + length), offset < capacity, wrapping */
static void mark_range(struct hy_devmodel *m, uint64_t offset, uint64_t length)
{
	uint64_t cap = m->p.capacity, band = m->p.band_bytes;

	if (length > cap)
		length = cap;
	while (length > 0) {
		uint64_t n = cap - offset < length ? cap - offset : length;

		for (uint64_t b = offset / band; b <= (offset + n - 1) / band; b++)
			mark_band(m, b);
		length -= n;
		offset = 0;
	}
}

static double smr_clean(struct hy_devmodel *m)
{
	const struct hy_devmodel_params *p = &m->p;
	double t = 0;

	for (uint64_t i = 0; i < m->ndirty; i++) {
		uint64_t b = m->dirty[i], start = b * p->band_bytes;
		uint64_t size =
			p->capacity - start < p->band_bytes ? p->capacity - start : p->band_bytes;

		t += p->seek_avg_ms + rotation(m) + transfer(2 * size, p->media_mb_s);
		m->st.media_bytes_written += size;
		m->st.band_cleanings++;
		m->dirty_map[b / 8] = 0; /* all its bits get cleared in turn */
		m->head = wrap(m, start + size);
	}
	m->ndirty = 0;
	m->buffered = 0;
	m->in_buffer = false;
	return t;
}

static double smr_write(struct hy_devmodel *m, uint64_t offset, uint64_t length, bool *seeked)
{
	const struct hy_devmodel_params *p = &m->p;
	double t = 0;

	drop_segment_if_overlaps(m, offset, offset + length);
	while (length > 0) {
		uint64_t n = length < p->buffer_bytes ? length : p->buffer_bytes;

		if (m->buffered + n > p->buffer_bytes) {
			if (m->ndirty > 0)
				*seeked = true;
			t += smr_clean(m);
		}
		if (!m->in_buffer) {
			*seeked = true;
			t += p->seek_avg_ms + rotation(m);
		}
		t += transfer(n, p->media_mb_s);
		m->in_buffer = true;
		m->buffered += n;
		m->st.media_bytes_written += n;
		mark_range(m, offset, n);
		offset = wrap(m, offset + n);
		length -= n;
	}
	return t;
}

double hy_devmodel_serve(struct hy_devmodel *m, uint64_t offset, uint64_t length, bool write)
{
	bool seeked = false;
	double t;

	if (!m)
		return 0;
	if (write) {
		m->st.writes++;
		m->st.bytes_written += length;
	} else {
		m->st.reads++;
		m->st.bytes_read += length;
	}
	if (length == 0)
		return 0;
	offset = wrap(m, offset);
	if (m->p.kind == HY_DEVMODEL_SSD) {
		t = write ? m->p.write_us / 1000.0 + transfer(length, m->p.write_mb_s)
			  : m->p.read_us / 1000.0 + transfer(length, m->p.read_mb_s);
		if (write)
			m->st.media_bytes_written += length;
	} else if (!write) {
		t = hdd_read(m, offset, length, &seeked);
	} else if (m->p.kind == HY_DEVMODEL_SMR) {
		t = smr_write(m, offset, length, &seeked);
	} else {
		t = hdd_write(m, offset, length, &seeked);
		m->st.media_bytes_written += length;
	}
	if (seeked)
		m->st.seeks++;
	m->st.busy_ms += t;
	return t;
}

void hy_devmodel_get_stats(const struct hy_devmodel *m, struct hy_devmodel_stats *out)
{
	*out = m->st;
	out->write_amplification = m->st.bytes_written ? (double)m->st.media_bytes_written /
								 (double)m->st.bytes_written
						       : 0;
}
