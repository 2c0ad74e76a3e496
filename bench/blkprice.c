/*
 * blkprice.c - prices a block trace recorded at a device with the HDD model
 * of device/devmodel.c (issue 18): what the requests a workload made would
 * cost a 7,200 rpm disk, in the order they were issued.
 *
 * Input (stdin): the text of a tracefs instance's `trace` file with the
 * tracepoint block:block_rq_issue enabled, one request a line:
 *
 *   cat-1234 [001] ..... 12.345678: block_rq_issue: 7,0 RS 4096 () 2048 + 8 [cat]
 *
 * (device, rwbs, bytes, command, sector, sectors, process). Reads (an R in
 * rwbs) and writes (a W) are priced; flushes, discards and empty requests
 * are counted and skipped. Lines that are not block_rq_issue events (the
 * file's header, other events) are skipped; a block_rq_issue line that does
 * not parse is an error that names its line number.
 *
 * Output: one line of key=value figures: requests, reads, writes, bytes
 * read and written, seeks (requests that moved the head), the model's busy
 * time in ms, and skipped. With -d, each priced request on stderr too.
 *
 * -i EXTENTS: the ideal layout bound instead. EXTENTS lists the sectors
 * that hold file data (lines "START LENGTH" in 512-byte sectors, as
 * filefrag -e -b512 gives them; any order). Every 4 KiB of file data the
 * trace reads is moved, at its first read, to the next place of one
 * contiguous region (which starts where the first data read was), so the
 * data lies in first-access order; metadata (every sector no extent
 * holds: inodes, directories, the journal) stays where it is, and writes
 * are priced where they were. A request is split into its data and
 * metadata pieces, and adjacent pieces at adjacent new places are one
 * request again: the cost of a layout that put every data block the
 * workload reads exactly in the order it reads them.
 *
 *   blkprice [-c CAPACITY_BYTES] [-p NAME=VALUE]... [-i EXTENTS] [-d] < trace
 *
 * -c: the disk's size (default 1 TiB: the model's seek curve spans it, so
 *     a request's cost grows with the square root of the distance to the
 *     previous one); -p: a devmodel setting (devmodel.h, as emulate= takes
 *     them), e.g. -p readahead=0.
 * Build: see bench/agedisk.sh (cc against BUILD's device and common
 * libraries).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/devmodel.h"

#define SECTOR 512
#define CHUNK  8 /* sectors: 4 KiB, the unit the ideal layout moves */

struct extent {
	uint64_t start, length; /* sectors */
};

static int extent_cmp(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The data extents, sorted and merged; -errno. */
static int load_extents(const char *path, struct extent **out, size_t *n)
{
	FILE *f = fopen(path, "r");
	struct extent *e = NULL;
	size_t cap = 0, k = 0, lineno = 0;
	char buf[256];

	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		uint64_t a, b;

		lineno++;
		if (sscanf(buf, "%" SCNu64 " %" SCNu64, &a, &b) != 2 || b == 0) {
			fprintf(stderr, "blkprice: %s: line %zu: want \"START LENGTH\" (sectors)\n",
				path, lineno);
			fclose(f);
			free(e);
			return -EINVAL;
		}
		if (k == cap) {
			struct extent *g = realloc(e, (cap = cap ? 2 * cap : 1024) * sizeof(*g));

			if (!g) {
				fclose(f);
				free(e);
				return -ENOMEM;
			}
			e = g;
		}
		e[k++] = (struct extent){a, b};
	}
	fclose(f);
	qsort(e, k, sizeof(*e), extent_cmp);
	*n = 0;
	for (size_t i = 0; i < k; i++) {
		if (*n && e[i].start <= e[*n - 1].start + e[*n - 1].length) {
			uint64_t end = e[i].start + e[i].length;

			if (end > e[*n - 1].start + e[*n - 1].length)
				e[*n - 1].length = end - e[*n - 1].start;
		} else {
			e[(*n)++] = e[i];
		}
	}
	*out = e;
	return 0;
}

/* The extent holding @sector, or NULL. */
static const struct extent *extent_of(const struct extent *e, size_t n, uint64_t sector)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e[mid].start + e[mid].length <= sector)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && e[lo].start <= sector ? &e[lo] : NULL;
}

/* The ideal's new places of data chunks: an open-addressing table from a
 * chunk's sector to its new sector. */
struct places {
	uint64_t *keys, *vals, mask, count, next;
	bool started;
};

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	return k ^ (k >> 33);
}

/* The new sector of the chunk at @chunk (a multiple of CHUNK), given one
 * at its first read; UINT64_MAX when out of memory. */
static uint64_t place_of(struct places *p, uint64_t chunk)
{
	uint64_t i;

	if (2 * (p->count + 1) > p->mask + 1) {
		uint64_t cap = p->mask ? 2 * (p->mask + 1) : 4096;
		uint64_t *k = malloc(cap * sizeof(*k)), *v = malloc(cap * sizeof(*v));

		if (!k || !v) {
			free(k);
			free(v);
			return UINT64_MAX;
		}
		memset(k, 0xff, cap * sizeof(*k));
		for (uint64_t j = 0; p->mask && j <= p->mask; j++) {
			if (p->keys[j] == UINT64_MAX)
				continue;
			for (i = mix(p->keys[j]) & (cap - 1); k[i] != UINT64_MAX; i = (i + 1) & (cap - 1))
				;
			k[i] = p->keys[j];
			v[i] = p->vals[j];
		}
		free(p->keys);
		free(p->vals);
		p->keys = k;
		p->vals = v;
		p->mask = cap - 1;
	}
	for (i = mix(chunk) & p->mask; p->keys[i] != UINT64_MAX; i = (i + 1) & p->mask)
		if (p->keys[i] == chunk)
			return p->vals[i];
	if (!p->started) {
		p->next = chunk; /* the region starts where the first data read was */
		p->started = true;
	}
	p->keys[i] = chunk;
	p->vals[i] = p->next;
	p->next += CHUNK;
	p->count++;
	return p->vals[i];
}

/* Prices read [@sector, @sector + @nr) as the ideal layout would lay it:
 * data pieces at their new places, metadata where it is, adjacent pieces
 * one request. 0, or -ENOMEM. */
static int serve_ideal(struct hy_devmodel *model, const struct extent *e, size_t n,
		       struct places *p, uint64_t sector, uint64_t nr)
{
	uint64_t run_at = 0, run_len = 0, end = sector + nr;

	for (uint64_t s = sector; s < end;) {
		const struct extent *x = extent_of(e, n, s);
		uint64_t at, len;

		if (x) {
			uint64_t chunk = s - s % CHUNK, to = chunk + CHUNK;
			uint64_t placed = place_of(p, chunk);

			if (placed == UINT64_MAX)
				return -ENOMEM;
			if (to > end)
				to = end;
			if (to > x->start + x->length)
				to = x->start + x->length;
			at = placed + (s - chunk);
			len = to - s;
		} else {
			/* metadata up to the next data extent or the end */
			const struct extent *next = NULL;
			size_t lo = 0, hi = n;

			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (e[mid].start <= s)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < n)
				next = &e[lo];
			at = s;
			len = (next && next->start < end ? next->start : end) - s;
		}
		if (run_len && run_at + run_len == at) {
			run_len += len;
		} else {
			if (run_len)
				hy_devmodel_serve(model, run_at * SECTOR, run_len * SECTOR, false);
			run_at = at;
			run_len = len;
		}
		s += len;
	}
	if (run_len)
		hy_devmodel_serve(model, run_at * SECTOR, run_len * SECTOR, false);
	return 0;
}

int main(int argc, char **argv)
{
	struct hy_devmodel_params params;
	struct hy_devmodel_stats st;
	struct hy_devmodel *model = NULL;
	uint64_t capacity = UINT64_C(1) << 40, skipped = 0, lineno = 0;
	char why[256], *line = NULL;
	const char *ideal = NULL;
	struct extent *extents = NULL;
	struct places places = {0};
	size_t cap = 0, nextents = 0;
	bool debug = false;
	int opt, rc = 0;

	hy_devmodel_defaults(HY_DEVMODEL_HDD, &params);
	while ((opt = getopt(argc, argv, "c:p:i:d")) != -1) {
		switch (opt) {
		case 'c': {
			char *end;

			errno = 0;
			capacity = strtoull(optarg, &end, 10);
			if (errno || *end || capacity < (UINT64_C(1) << 20)) {
				fprintf(stderr, "blkprice: -c wants a size in bytes, 1 MiB at least\n");
				return 2;
			}
			break;
		}
		case 'p':
			if (hy_devmodel_set(&params, optarg, why, sizeof(why)) < 0) {
				fprintf(stderr, "blkprice: -p %s: %s\n", optarg, why);
				return 2;
			}
			break;
		case 'i':
			ideal = optarg;
			break;
		case 'd':
			debug = true;
			break;
		default:
			fprintf(stderr, "usage: blkprice [-c BYTES] [-p NAME=VALUE]... [-i EXTENTS] [-d] "
					"< trace\n");
			return 2;
		}
	}
	params.capacity = capacity;
	if (ideal) {
		rc = load_extents(ideal, &extents, &nextents);
		if (rc < 0) {
			if (rc != -EINVAL)
				fprintf(stderr, "blkprice: %s: %s\n", ideal, strerror(-rc));
			return 2;
		}
	}
	if (hy_devmodel_new(&params, &model, why, sizeof(why)) < 0) {
		fprintf(stderr, "blkprice: the model: %s\n", why);
		return 2;
	}
	while (getline(&line, &cap, stdin) > 0) {
		const char *ev = strstr(line, "block_rq_issue: ");
		unsigned major, minor, nr;
		char rwbs[16];
		uint64_t bytes, sector;
		bool write;
		double ms;

		lineno++;
		if (!ev)
			continue;
		if (sscanf(ev + strlen("block_rq_issue: "), "%u,%u %15s %" SCNu64 " %*s %" SCNu64
							     " + %u",
			   &major, &minor, rwbs, &bytes, &sector, &nr) != 6) {
			fprintf(stderr, "blkprice: line %" PRIu64 ": not a block_rq_issue event: %s",
				lineno, line);
			hy_devmodel_free(model);
			free(line);
			return 1;
		}
		if (nr == 0 || strchr(rwbs, 'D') || (!strchr(rwbs, 'R') && !strchr(rwbs, 'W'))) {
			skipped++;
			continue;
		}
		write = strchr(rwbs, 'W') != NULL;
		if (ideal && !write) {
			if (serve_ideal(model, extents, nextents, &places, sector, nr) < 0) {
				fprintf(stderr, "blkprice: out of memory\n");
				rc = 1;
				break;
			}
			continue;
		}
		ms = hy_devmodel_serve(model, sector * SECTOR, (uint64_t)nr * SECTOR, write);
		if (debug)
			fprintf(stderr, "%s %" PRIu64 " %u %.3f\n", write ? "W" : "R", sector, nr, ms);
	}
	free(line);
	hy_devmodel_get_stats(model, &st);
	printf("requests=%" PRIu64 " reads=%" PRIu64 " writes=%" PRIu64 " bytes_read=%" PRIu64
	       " bytes_written=%" PRIu64 " seeks=%" PRIu64 " busy_ms=%.1f skipped=%" PRIu64 "\n",
	       st.reads + st.writes, st.reads, st.writes, st.bytes_read, st.bytes_written, st.seeks,
	       st.busy_ms, skipped);
	hy_devmodel_free(model);
	free(extents);
	free(places.keys);
	free(places.vals);
	return rc;
}
