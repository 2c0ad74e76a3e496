/* replay.c - see include/hybridfs/replay.h.
 *
 * The keys of the cached blocks map to their lines in an open-addressing
 * table (linear probing, deletion by backward shift, so no tombstones pile
 * up over millions of evictions), sized at four times the capacity; the
 * footprint counter is the same table with no values, grown by doubling.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hybridfs/keymap.h"
#include "hybridfs/pore.h"
#include "hybridfs/reca.h"
#include "hybridfs/replay.h"
#include "hybridfs/trace_reader.h"

/* ---- response times ------------------------------------------------------- */

/* Log-scale buckets: bucket k holds times in [1 us * 1.04^k, 1 us *
 * 1.04^(k+1)); 560 of them reach past 1,000 s. */
#define HIST_BUCKETS 560
#define HIST_BASE_MS 0.001
#define HIST_GROWTH  1.04

struct latency_hist {
	uint64_t n;
	double sum_ms;
	uint32_t bucket[HIST_BUCKETS];
};

static void hist_add(struct latency_hist *h, double ms)
{
	int k = ms <= HIST_BASE_MS ? 0 : (int)(log(ms / HIST_BASE_MS) / log(HIST_GROWTH));

	if (k >= HIST_BUCKETS)
		k = HIST_BUCKETS - 1;
	h->bucket[k]++;
	h->n++;
	h->sum_ms += ms;
}

static void hist_result(const struct latency_hist *h, struct hy_replay_latency *out)
{
	uint64_t want = h->n - h->n / 100, seen = 0; /* the 99th percentile's rank */

	out->requests = h->n;
	out->mean_ms = h->n ? h->sum_ms / (double)h->n : 0;
	out->p99_ms = 0;
	for (int k = 0; k < HIST_BUCKETS && h->n; k++) {
		seen += h->bucket[k];
		if (seen >= want) {
			out->p99_ms = HIST_BASE_MS * pow(HIST_GROWTH, k + 1); /* its upper end */
			break;
		}
	}
}

/* ---- the replay ---------------------------------------------------------- */

struct hy_replay {
	struct hy_replay_config cfg;
	struct hy_policy *policy;
	struct hy_keymap map; /* key -> line */
	uint64_t *line_key;   /* line -> key (HY_KEYMAP_EMPTY: free) */
	uint32_t next_free;   /* lines are used in order until the cache is full */
	uint32_t capacity;
	uint64_t since_age;
	struct hy_replay_stats st;
	/* timing */
	struct hy_devmodel *backing, *ssd;
	/* ReCA: a history per device, a category per process of the trace
	 * (its pid, else its device), kept for the whole run (reca.h) */
	struct hy_reca *reca;
	struct latency_hist all, by_class[HY_CLASS_COUNT], by_category[HY_CATEGORY_COUNT];
	/* write-back and PORE */
	uint8_t *line_dirty;  /* per line */
	uint32_t *line_zone;  /* per line: its PORE zone */
	struct hy_pore *pore; /* PORE's zones (pore.h, the cache's own code) */
	double pending_ms;    /* eviction writes the current request waits for */
	/* open loop: the first timestamp, the last arrival, when the storage
	 * is free again (ms from the first arrival), the waits summed */
	int64_t first_ts;
	double last_arrival_ms, free_ms, wait_sum_ms;
	bool started;
};

int hy_replay_new(const struct hy_replay_config *cfg, struct hy_replay **out, char *why,
		  size_t why_size)
{
	struct hy_replay *r;
	int rc;

	*out = NULL;
	if (cfg->capacity == 0 || cfg->capacity > UINT32_MAX - 1) {
		snprintf(why, why_size, "a cache of %llu blocks: it must hold 1 to %u",
			 (unsigned long long)cfg->capacity, UINT32_MAX - 1);
		return -EINVAL;
	}
	if (cfg->open_loop && !(cfg->backing && cfg->ssd)) {
		snprintf(why, why_size, "an open-loop replay needs device models to time it");
		return -EINVAL;
	}
	if (!(cfg->speed >= 0) || !isfinite(cfg->speed)) {
		snprintf(why, why_size, "an open-loop speed of %g: it must be above 0", cfg->speed);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	r->cfg = *cfg;
	r->capacity = (uint32_t)cfg->capacity;
	{
		struct hy_policy_config pc;

		/* PORE scans the LRU order for a permitted victim: a wide window
		 * (the store's own search stays at its default) */
		hy_policy_config_init(&pc);
		if (cfg->pore)
			pc.window = r->capacity < HY_POLICY_MAX_WINDOW ? r->capacity
								       : HY_POLICY_MAX_WINDOW;
		rc = hy_policy_new(cfg->policy, r->capacity, &pc, &r->policy, why, why_size);
	}
	if (rc == 0) {
		rc = hy_keymap_init(&r->map, (uint64_t)r->capacity * 4, true);
		r->line_key = malloc((size_t)r->capacity * sizeof(*r->line_key));
		if (rc < 0 || !r->line_key) {
			snprintf(why, why_size, "out of memory for a cache of %u blocks",
				 r->capacity);
			rc = -ENOMEM;
		}
	}
	if (rc < 0) {
		hy_replay_free(r);
		return rc;
	}
	memset(r->line_key, 0xff, (size_t)r->capacity * sizeof(*r->line_key));
	if (cfg->backing && cfg->ssd) {
		rc = hy_devmodel_new(cfg->backing, &r->backing, why, why_size);
		if (rc == 0)
			rc = hy_devmodel_new(cfg->ssd, &r->ssd, why, why_size);
		if (rc == 0 &&
		    hy_reca_new(&(struct hy_reca_config){.keying = HY_RECA_KEYS}, &r->reca) < 0) {
			snprintf(why, why_size, "out of memory");
			rc = -ENOMEM;
		}
		if (rc < 0) {
			hy_replay_free(r);
			return rc;
		}
		r->st.timed = true;
		if (cfg->write_back) {
			r->line_dirty = calloc(r->capacity, 1);
			r->line_zone = calloc(r->capacity, sizeof(*r->line_zone));
			if (!r->line_dirty || !r->line_zone) {
				snprintf(why, why_size, "out of memory");
				hy_replay_free(r);
				return -ENOMEM;
			}
		}
		if (cfg->write_back && cfg->pore != HY_PORE_OFF) {
			struct hy_pore_config pc = {
				.rule = cfg->pore,
				.zone_bytes = cfg->pore_zone_bytes,
				.open_permille = cfg->pore_open_permille,
				.period_blocks = cfg->pore_period ? cfg->pore_period
								  : cfg->backing->buffer_bytes /
									    HY_REPLAY_BLOCK,
			};

			if (!pc.period_blocks)
				pc.period_blocks = 1;
			rc = hy_pore_new(&pc, &r->pore, why, why_size);
			if (rc < 0) {
				hy_replay_free(r);
				return rc;
			}
		}
	}
	*out = r;
	return 0;
}

void hy_replay_free(struct hy_replay *r)
{
	if (!r)
		return;
	hy_policy_free(r->policy);
	if (r->map.keys)
		hy_keymap_free(&r->map);
	free(r->line_key);
	hy_devmodel_free(r->backing);
	hy_devmodel_free(r->ssd);
	hy_reca_free(r->reca);
	free(r->line_dirty);
	free(r->line_zone);
	hy_pore_free(r->pore);
	free(r);
}

/* The byte address of a block key on the backing device model (as the
 * timed replay serves it: device d's block b at d * 2^40 + b * 4 KiB). */
static uint64_t key_address(uint64_t key)
{
	uint64_t device = key >> HY_REPLAY_DEVICE_SHIFT;
	uint64_t block = key & ((UINT64_C(1) << HY_REPLAY_DEVICE_SHIFT) - 1);

	return (device << 40) + block * HY_REPLAY_BLOCK;
}

/* The PORE zone of @key: its index, or -ENOMEM. */
static int64_t zone_of(struct hy_replay *r, uint64_t key)
{
	return hy_pore_zone(r->pore, key_address(key));
}

static bool pore_evictable(uint32_t line, void *arg)
{
	const struct hy_replay *r = arg;

	return !r->line_dirty[line] || hy_pore_open(r->pore, r->line_zone[line]);
}

/* A line leaves: a dirty one is written to the backing device now. */
static void line_leaves(struct hy_replay *r, uint32_t line)
{
	if (!r->line_dirty || !r->line_dirty[line])
		return;
	r->pending_ms += hy_devmodel_serve(r->backing, key_address(r->line_key[line]),
					   HY_REPLAY_BLOCK, true);
	r->st.dirty_evictions++;
	if (r->pore)
		hy_pore_dirty(r->pore, r->line_zone[line], -1);
	r->line_dirty[line] = 0;
}

/* write-back: @line (of @key) is written. */
static int line_written(struct hy_replay *r, uint32_t line, uint64_t key)
{
	if (!r->line_dirty[line]) {
		r->line_dirty[line] = 1;
		if (r->pore) {
			int64_t z = zone_of(r, key);

			if (z < 0)
				return (int)z;
			r->line_zone[line] = (uint32_t)z;
			hy_pore_dirty(r->pore, (uint32_t)z, 1);
		}
	}
	if (r->pore && hy_pore_written(r->pore, 1))
		r->st.pore_divisions++;
	return 0;
}

int hy_replay_access(struct hy_replay *r, uint64_t key, bool write)
{
	uint64_t slot = hy_keymap_slot(&r->map, key);
	uint32_t line;
	int rc;

	r->st.accesses++;
	if (write)
		r->st.writes++;
	else
		r->st.reads++;
	/* aged once every half capacity of accesses, as cache.c does */
	if (++r->since_age >= (r->capacity + 1) / 2) {
		hy_policy_age(r->policy);
		r->since_age = 0;
	}
	if (r->pore) {
		int64_t z = zone_of(r, key);

		if (z < 0)
			return (int)z;
		hy_pore_access(r->pore, (uint32_t)z, 1);
	}
	if (r->map.keys[slot] == key) {
		hy_policy_hit(r->policy, r->map.values[slot]);
		if (write)
			r->st.write_hits++;
		else
			r->st.read_hits++;
		if (write && r->line_dirty && (rc = line_written(r, r->map.values[slot], key)) < 0)
			return rc;
		return 1;
	}
	if (!hy_policy_admit(r->policy, key)) {
		r->st.refused++;
		return 0;
	}
	if (r->next_free < r->capacity) {
		line = r->next_free++;
	} else {
		uint64_t victim;

		if (r->pore && hy_policy_victim(r->policy, NULL, pore_evictable, r, &line) == 0) {
			/* a clean line, or a dirty one of an open zone */
		} else if (hy_policy_victim(r->policy, NULL, NULL, NULL, &line) != 0) {
			return 0; /* cannot happen: every line is evictable */
		} else if (r->pore) {
			r->st.forced_evictions++;
		}
		line_leaves(r, line);
		victim = r->line_key[line];
		hy_policy_remove(r->policy, line);
		hy_keymap_delete_at(&r->map, hy_keymap_slot(&r->map, victim));
		r->st.evictions++;
	}
	rc = hy_keymap_put(&r->map, key, line);
	if (rc < 0)
		return rc;
	r->line_key[line] = key;
	hy_policy_insert(r->policy, line);
	r->st.inserts++;
	if (write && r->line_dirty && (rc = line_written(r, line, key)) < 0)
		return rc;
	return 0;
}

/* Calls @fn for each block access of @rec under the rule; 1, 0 at the cap,
 * or @fn's negative errno. */
static int for_each_block(const struct hy_trace_record *rec, bool reads_only, uint64_t max_accesses,
			  uint64_t *done, uint64_t *requests, uint64_t *dropped,
			  int (*fn)(void *arg, uint64_t key, bool write), void *arg)
{
	uint64_t first, last, base;

	if (max_accesses && *done >= max_accesses)
		return 0;
	if (rec->length == 0 || (reads_only && rec->write)) {
		(*dropped)++;
		return 1;
	}
	first = rec->offset / HY_REPLAY_BLOCK;
	last = (rec->offset + rec->length - 1) / HY_REPLAY_BLOCK;
	if (rec->offset + rec->length < rec->offset) /* past 2^64: cut there */
		last = UINT64_MAX / HY_REPLAY_BLOCK;
	base = (uint64_t)rec->device << HY_REPLAY_DEVICE_SHIFT;
	(*requests)++;
	for (uint64_t b = first; b <= last; b++) {
		int rc;

		if (max_accesses && *done >= max_accesses)
			return 0;
		rc = fn(arg, base | (b & ((UINT64_C(1) << HY_REPLAY_DEVICE_SHIFT) - 1)),
			rec->write);
		if (rc < 0)
			return rc;
		(*done)++;
	}
	return 1;
}

static int replay_block(void *arg, uint64_t key, bool write)
{
	int rc = hy_replay_access(arg, key, write);

	return rc < 0 ? rc : 0;
}

void hy_replay_reca_request(const struct hy_trace_record *rec, struct hy_reca_request *out)
{
	*out = (struct hy_reca_request){
		.history_key = rec->device,
		.process_key =
			rec->pid >= 0 ? (UINT64_C(1) << 62) | (uint64_t)rec->pid : rec->device,
		.file_id = rec->device,
		.offset = rec->offset,
		.length = rec->length > UINT32_MAX ? UINT32_MAX : (uint32_t)rec->length,
		.write = rec->write,
		.file_size = rec->offset + rec->length,
	};
}

/* The request's class in its device's history, and its process's category
 * after it (ReCA's, reca.h). */
static int classify_request(struct hy_replay *r, const struct hy_trace_record *rec,
			    enum hy_request_class *cls, enum hy_category *cat)
{
	struct hy_reca_request req;
	struct hy_reca_answer a;
	int rc;

	hy_replay_reca_request(rec, &req);
	rc = hy_reca_request(r->reca, &req, &a);

	if (rc < 0)
		return rc;
	*cls = (enum hy_request_class)(a.klass - 1);
	*cat = a.category;
	return 0;
}

/* What became of each block of a timed request: the runs the devices see. */
enum { B_HIT, B_FILLED, B_MISSED };

/* Serves a run of @n blocks from @first of @kind; returns the time it adds
 * to the request's response. */
static double serve_run(struct hy_replay *r, bool write, int kind, uint64_t first, uint64_t n)
{
	uint64_t off = key_address(first), len = n * HY_REPLAY_BLOCK;
	double t;

	if (!n)
		return 0;
	if (write) {
		/* write-through: the backing write is the request's own (made
		 * by the caller); the SSD writes the blocks the cache keeps.
		 * Write-back: blocks the cache refused go to the backing device */
		if (kind == B_MISSED && r->cfg.write_back) {
			t = hy_devmodel_serve(r->backing, off, len, true);
			r->st.backing_busy_ms += t;
			return t;
		}
		if (kind == B_MISSED)
			return 0;
		t = hy_devmodel_serve(r->ssd, off, len, true);
		r->st.ssd_busy_ms += t;
		return t;
	}
	if (kind == B_HIT) {
		t = hy_devmodel_serve(r->ssd, off, len, false);
		r->st.ssd_busy_ms += t;
		return t;
	}
	t = hy_devmodel_serve(r->backing, off, len, false);
	r->st.backing_busy_ms += t;
	if (kind == B_FILLED) /* behind the answer: busy time only */
		r->st.ssd_busy_ms += hy_devmodel_serve(r->ssd, off, len, true);
	return t;
}

/* Open loop: the request arrives at its timestamp and is served when the
 * storage is free; its response time is its wait plus @service_ms. */
static double open_loop_response(struct hy_replay *r, const struct hy_trace_record *rec,
				 double service_ms)
{
	double speed = r->cfg.speed > 0 ? r->cfg.speed : 1.0, arrival, start, wait;

	if (!r->started) {
		r->started = true;
		r->first_ts = rec->ts_ns;
	}
	arrival = (double)(rec->ts_ns - r->first_ts) / 1e6 / speed;
	if (arrival < r->last_arrival_ms) {
		/* stamped before the request before it: it arrives with it */
		r->st.reordered++;
		arrival = r->last_arrival_ms;
	}
	r->last_arrival_ms = arrival;
	start = r->free_ms > arrival ? r->free_ms : arrival;
	wait = start - arrival;
	if (wait > 0)
		r->st.waited++;
	r->wait_sum_ms += wait;
	r->free_ms = start + service_ms;
	r->st.span_ms = r->free_ms;
	return wait + service_ms;
}

static int timed_request(struct hy_replay *r, const struct hy_trace_record *rec)
{
	uint64_t first, last, base, mask = (UINT64_C(1) << HY_REPLAY_DEVICE_SHIFT) - 1;
	uint64_t run_first = 0, run_n = 0;
	enum hy_request_class cls = HY_CLASS_RANDOM;
	enum hy_category cat = HY_CATEGORY_UNKNOWN;
	int run_kind = B_HIT, rc = 1;
	double t = 0;

	if (r->cfg.max_accesses && r->st.accesses >= r->cfg.max_accesses) {
		r->st.capped = true;
		return 0;
	}
	if (rec->length == 0 || (r->cfg.reads_only && rec->write)) {
		r->st.dropped++;
		return 1;
	}
	if (r->cfg.open_loop && rec->ts_ns < 0)
		return -EINVAL; /* the caller names the line */
	if (classify_request(r, rec, &cls, &cat) < 0)
		return -ENOMEM;
	first = rec->offset / HY_REPLAY_BLOCK;
	last = (rec->offset + rec->length - 1) / HY_REPLAY_BLOCK;
	if (rec->offset + rec->length < rec->offset)
		last = UINT64_MAX / HY_REPLAY_BLOCK;
	base = (uint64_t)rec->device << HY_REPLAY_DEVICE_SHIFT;
	r->st.requests++;
	if (rec->write && !r->cfg.write_back) {
		t = hy_devmodel_serve(r->backing, key_address(base) + rec->offset, rec->length,
				      true);
		r->st.backing_busy_ms += t;
	}
	r->pending_ms = 0;
	for (uint64_t b = first; b <= last; b++) {
		uint64_t inserts = r->st.inserts;
		int hit, kind;

		if (r->cfg.max_accesses && r->st.accesses >= r->cfg.max_accesses) {
			r->st.capped = true;
			rc = 0;
			break;
		}
		hit = hy_replay_access(r, base | (b & mask), rec->write);
		if (hit < 0)
			return hit;
		kind = hit ? B_HIT : r->st.inserts > inserts ? B_FILLED : B_MISSED;
		/* a write's hits and fills are both SSD writes: one run */
		if (rec->write && kind == B_FILLED)
			kind = B_HIT;
		if (run_n && kind == run_kind) {
			run_n++;
			continue;
		}
		t += serve_run(r, rec->write, run_kind, run_first, run_n);
		run_kind = kind;
		run_first = base | (b & mask);
		run_n = 1;
	}
	t += serve_run(r, rec->write, run_kind, run_first, run_n);
	/* write-back: the dirty victims this request's misses evicted */
	t += r->pending_ms;
	r->st.backing_busy_ms += r->pending_ms;
	if (r->cfg.open_loop)
		t = open_loop_response(r, rec, t);
	hist_add(&r->all, t);
	hist_add(&r->by_class[cls], t);
	hist_add(&r->by_category[cat], t);
	return rc;
}

int hy_replay_request(struct hy_replay *r, const struct hy_trace_record *rec)
{
	uint64_t done = r->st.accesses;
	int rc;

	if (r->st.timed)
		return timed_request(r, rec);
	rc = for_each_block(rec, r->cfg.reads_only, r->cfg.max_accesses, &done, &r->st.requests,
			    &r->st.dropped, replay_block, r);
	if (rc == 0)
		r->st.capped = true;
	return rc;
}

void hy_replay_get_stats(const struct hy_replay *r, struct hy_replay_stats *out)
{
	*out = r->st;
	if (!r->st.timed)
		return;
	hy_devmodel_get_stats(r->backing, &out->backing);
	hy_devmodel_get_stats(r->ssd, &out->ssd);
	out->open_loop = r->cfg.open_loop;
	out->wait_mean_ms = r->st.requests ? r->wait_sum_ms / (double)r->st.requests : 0;
	hist_result(&r->all, &out->all);
	for (int i = 0; i < HY_CLASS_COUNT; i++)
		hist_result(&r->by_class[i], &out->by_class[i]);
	for (int i = 0; i < HY_CATEGORY_COUNT; i++)
		hist_result(&r->by_category[i], &out->by_category[i]);
}

/* ---- footprint ------------------------------------------------------------- */

struct hy_replay_footprint {
	struct hy_keymap set;
	bool reads_only;
	uint64_t max_accesses, accesses, requests, dropped;
};

int hy_replay_footprint_new(bool reads_only, uint64_t max_accesses,
			    struct hy_replay_footprint **out)
{
	struct hy_replay_footprint *fp = calloc(1, sizeof(*fp));

	*out = NULL;
	if (!fp || hy_keymap_init(&fp->set, 1 << 16, false) < 0) {
		free(fp);
		return -ENOMEM;
	}
	fp->reads_only = reads_only;
	fp->max_accesses = max_accesses;
	*out = fp;
	return 0;
}

static int footprint_block(void *arg, uint64_t key, bool write)
{
	struct hy_replay_footprint *fp = arg;
	int rc = hy_keymap_put(&fp->set, key, 0);

	(void)write; /* both directions touch the block */
	return rc < 0 ? rc : 0;
}

int hy_replay_footprint_add(struct hy_replay_footprint *fp, const struct hy_trace_record *rec)
{
	return for_each_block(rec, fp->reads_only, fp->max_accesses, &fp->accesses, &fp->requests,
			      &fp->dropped, footprint_block, fp);
}

uint64_t hy_replay_footprint_blocks(const struct hy_replay_footprint *fp)
{
	return fp->set.count;
}

uint64_t hy_replay_footprint_accesses(const struct hy_replay_footprint *fp)
{
	return fp->accesses;
}

void hy_replay_footprint_free(struct hy_replay_footprint *fp)
{
	if (!fp)
		return;
	hy_keymap_free(&fp->set);
	free(fp);
}
