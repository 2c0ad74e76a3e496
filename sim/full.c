/* full.c - see include/hybridfs/sim_full.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hybridfs/cache.h"
#include "hybridfs/cache_store.h"
#include "hybridfs/device.h"
#include "hybridfs/devmodel.h"
#include "hybridfs/engine.h"
#include "hybridfs/reca.h"
#include "hybridfs/stack.h"
#include "hybridfs/replay.h"
#include "hybridfs/sim_home.h"
#include "hybridfs/sim_full.h"
#include "hybridfs/trace_reader.h"
#include "hybridfs/workload_policy.h"

#define BLOCK	     HY_REPLAY_BLOCK
#define EVICT_EVERY  64
#define CHUNK_BLOCKS 1024 /* 4 MiB: more than any request of the shared traces */
#define SIM_UUID     "51a0c0de-0000-4000-8000-5100000f0110"

/* ---- home: a model that keeps nothing ---------------------------------- */

struct hy_sim_full {
	struct hy_sim_full_config cfg;
	struct hy_cache *cache;
	struct hy_engine *engine; /* the daemon's stack (stack.h) over home */
	struct hy_device *home;	  /* a model of home that keeps nothing */
	char *store_path;
	struct hy_devmodel *backing; /* NULL: untimed */
	struct hy_sim_disk disk;     /* home's requests served over backing */
	/* ReCA, keyed as a trace is: histories by device, categories by pid
	 * (else device), each in 4096 hashed slots (reca.h) */
	struct hy_reca *reca;
	uint64_t since_evict, since_clean, clean_every;
	struct hy_sim_full_stats st;
	unsigned char *buf; /* CHUNK_BLOCKS blocks: a request larger than that goes in pieces */
};

/* ---- the replay ----------------------------------------------------------- */

/* A store file of exactly @lines lines (its layout's size found by asking
 * the store how many lines a size gives). */
static int make_store(const char *path, uint64_t lines, char *why, size_t why_size)
{
	uint64_t size = lines * (BLOCK + 64) + (UINT64_C(1) << 20);

	for (int tries = 0; tries < 8; tries++) {
		struct hy_cache_store *s = NULL;
		uint64_t cap;
		int rc;

		/* a new file each time: the store's layout is planned for it */
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
		rc = hy_cache_store_create(path, "", size, HY_CACHE_LINE_SIZE, true, why, why_size);

		if (rc == 0)
			rc = hy_cache_store_open(path, NULL, &s, why, why_size);
		if (rc < 0)
			return rc;
		if (!s)
			return -EIO; /* cannot happen: opened means a store */
		cap = s->header.capacity;
		hy_cache_store_close(s);
		if (cap == lines)
			return 0;
		size = cap > lines ? size - (cap - lines) * BLOCK : size + (lines - cap) * BLOCK;
	}
	return 0; /* close enough: a few lines more or less */
}

int hy_sim_full_new(const struct hy_sim_full_config *cfg, struct hy_sim_full **out, char *why,
		    size_t why_size)
{
	struct hy_sim_full *f;
	struct hy_cache_config cc;
	const char *dir = cfg->store_dir ? cfg->store_dir : getenv("TMPDIR");
	unsigned permille = cfg->front_permille ? cfg->front_permille : 125;
	uint64_t front, lines;
	int fd, rc;

	*out = NULL;
	if (cfg->capacity < 16) {
		snprintf(why, why_size, "the full policy needs a cache of 16 blocks at least");
		return -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	f->cfg = *cfg;
	f->buf = malloc((size_t)CHUNK_BLOCKS * BLOCK);
	if (!f->buf) {
		free(f);
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	front = cfg->no_front ? 0 : cfg->capacity * (permille > 1000 ? 1000 : permille) / 1000;
	lines = cfg->capacity - front;
	if (!lines)
		lines = 1;
	if (asprintf(&f->store_path, "%s/hybridfs-sim-store.XXXXXX", dir && *dir ? dir : "/tmp") <
	    0) {
		f->store_path = NULL;
		free(f->buf);
		free(f);
		snprintf(why, why_size, "out of memory");
		return -ENOMEM;
	}
	fd = mkstemp(f->store_path);
	if (fd < 0) {
		rc = -errno;
		snprintf(why, why_size, "cannot make a store file in \"%s\": %s",
			 dir && *dir ? dir : "/tmp", strerror(errno));
		free(f->store_path);
		free(f->buf);
		free(f);
		return rc;
	}
	close(fd);
	rc = make_store(f->store_path, lines, why, why_size);
	if (rc == 0 && cfg->backing)
		rc = hy_devmodel_new(cfg->backing, &f->backing, why, why_size);
	f->disk.model = f->backing;
	if (rc == 0 && cfg->pore.rule != HY_PORE_OFF && !cfg->write_back) {
		snprintf(why, why_size, "PORE needs the cache in write-back");
		rc = -EINVAL;
	}
	memset(&cc, 0, sizeof(cc));
	cc.store_path = f->store_path;
	cc.uuid = SIM_UUID;
	cc.write_policy = cfg->write_back ? HY_CACHE_WRITE_BACK : HY_CACHE_WRITE_THROUGH;
	cc.pore = cfg->pore;
	if (cc.pore.rule != HY_PORE_OFF && !cc.pore.period_blocks)
		cc.pore.period_blocks = cfg->backing && cfg->backing->buffer_bytes >= BLOCK
						? cfg->backing->buffer_bytes / BLOCK
						: 1;
	cc.policy = cfg->policy;
	cc.front_bytes = front * BLOCK;
	cc.heat_periods = 8;
	cc.heat_threshold = cfg->heat_threshold < 0 ? 1.5 : cfg->heat_threshold;
	cc.no_threads = true;
	/* the stack the daemon builds (stack.h: engine, cache, indirector
	 * without a BOPT) over a device, here a model of home that keeps
	 * nothing; requests go in through the engine, as FUSE's do */
	if (rc == 0) {
		rc = hy_sim_home_new(&f->disk, &f->home);
		if (rc < 0)
			snprintf(why, why_size, "out of memory");
	}
	if (rc == 0) {
		struct hy_stack_config sc = {.backing = f->home, .cache = &cc};

		rc = hy_stack_new(&sc, &f->engine, why, why_size);
		if (rc == 0)
			f->cache = f->engine->cache;
	}
	if (rc == 0 && cfg->reca) {
		struct hy_reca_config rcfg = {.keying = HY_RECA_KEYS_HASHED};
		struct hy_workload_policy_table t;

		if (cfg->table)
			t = *cfg->table;
		else
			hy_workload_policy_defaults(&t);
		rc = hy_reca_new(&rcfg, &f->reca);
		if (rc == 0)
			rc = hy_reca_set_policy(f->reca, &t);
		if (rc < 0)
			snprintf(why, why_size, "out of memory");
	}
	if (rc < 0) {
		hy_sim_full_free(f);
		return rc;
	}
	{
		struct hy_cache_stats s;

		hy_cache_get_stats(f->cache, &s);
		f->st.ssd_lines = s.ssd_lines;
		f->st.front_blocks = s.dram_slots;
		f->clean_every = cfg->clean_every ? cfg->clean_every : (cfg->capacity + 7) / 8;
	}
	*out = f;
	return 0;
}

void hy_sim_full_free(struct hy_sim_full *f)
{
	if (!f)
		return;
	if (f->engine && hy_stack_close_cache(f->engine) < 0)
		fprintf(stderr, "hybridfs simulator: closing the cache failed\n");
	hy_stack_free(f->engine);
	hy_device_free(f->home);
	hy_devmodel_free(f->backing);
	if (f->store_path && unlink(f->store_path) < 0)
		fprintf(stderr, "hybridfs simulator: cannot remove \"%s\": %s\n", f->store_path,
			strerror(errno));
	hy_reca_free(f->reca);
	free(f->store_path);
	free(f->buf);
	free(f);
}

/* The request's hint from its class and its process's category (ReCA's,
 * reca.h; an unclassified request's when its history cannot be made). */
static void hint_for(struct hy_sim_full *f, const struct hy_trace_record *rec,
		     struct hy_cache_hint *hint)
{
	struct hy_reca_request req;
	struct hy_reca_answer a;

	hy_replay_reca_request(rec, &req);
	hy_reca_request(f->reca, &req, &a);
	*hint = a.hint;
}

int hy_sim_full_request(struct hy_sim_full *f, const struct hy_trace_record *rec)
{
	struct hy_engine_file file;
	struct hy_cache_hint hint, *hp = NULL;
	uint64_t first, last;

	if (f->cfg.max_accesses && f->st.accesses >= f->cfg.max_accesses) {
		f->st.capped = true;
		return 0;
	}
	if (rec->length == 0 || (f->cfg.reads_only && rec->write)) {
		f->st.dropped++;
		return 1;
	}
	if (f->cfg.reca) {
		hint_for(f, rec, &hint);
		hp = &hint;
	}
	/* the trace's device is the file: its id and its object on the model */
	hy_engine_file_init(f->engine, &file, (int)(rec->device + 1));
	hy_engine_file_set_id(&file, (uint64_t)rec->device + 1);
	first = rec->offset / BLOCK;
	last = (rec->offset + rec->length - 1) / BLOCK;
	if (f->cfg.max_accesses && last - first + 1 > f->cfg.max_accesses - f->st.accesses) {
		last = first + (f->cfg.max_accesses - f->st.accesses) - 1; /* cut at the cap */
		f->st.capped = true;
	}
	f->st.requests++;
	/* the request whole, in one call (its blocks are its block accesses):
	 * a block that the same request's miss brought in is a miss, not a
	 * hit; only later requests profit from what a larger line read */
	for (uint64_t b = first; b <= last;) {
		uint64_t n = last - b + 1, chunk;
		ssize_t got;

		chunk = n < CHUNK_BLOCKS ? n : CHUNK_BLOCKS;
		f->st.accesses += chunk;
		if (rec->write) {
			f->st.writes += chunk;
			got = hy_engine_write_hinted(f->engine, &file, hp, f->buf, chunk * BLOCK,
						     (off_t)(b * BLOCK));
		} else {
			f->st.reads += chunk;
			got = hy_engine_read_hinted(f->engine, &file, hp, f->buf, chunk * BLOCK,
						    (off_t)(b * BLOCK));
		}
		if (got < 0)
			return (int)got;
		f->since_evict += chunk;
		if (f->since_evict >= EVICT_EVERY) {
			hy_cache_run_front_eviction(f->cache);
			if (hy_cache_run_migrations(f->cache) < 0)
				return -EIO;
			f->since_evict = 0;
		}
		/* write-back: the cleaner's pass once every clean_every blocks
		 * written, as its thread would run every few seconds */
		if (rec->write && f->cfg.write_back) {
			f->since_clean += chunk;
			if (f->since_clean >= f->clean_every) {
				int64_t r = hy_cache_run_cleaner(f->cache);

				if (r < 0)
					return (int)r;
				f->since_clean = 0;
			}
		}
		b += chunk;
	}
	return f->st.capped ? 0 : 1;
}

void hy_sim_full_get_stats(struct hy_sim_full *f, struct hy_sim_full_stats *out)
{
	struct hy_cache_stats s;

	hy_cache_get_stats(f->cache, &s);
	*out = f->st;
	out->dram_hits = s.read_hits_dram + s.write_hits_dram;
	out->ssd_hits = s.read_hits_ssd + s.write_hits_ssd;
	out->read_hits = s.read_hits_dram + s.read_hits_ssd;
	out->write_hits = s.write_hits_dram + s.write_hits_ssd;
	out->ssd_bytes_written = s.ssd_bytes_written;
	out->heat_admitted = s.heat_admitted;
	out->heat_refused = s.heat_refused;
	out->cleaned_blocks = s.cleaned_blocks;
	out->pore = s.pore;
	out->pore_held = s.pore_held;
	out->pore_forced = s.pore_forced;
	out->backing_busy_ms = f->disk.busy_ms;
	if (f->backing)
		hy_devmodel_get_stats(f->backing, &out->backing);
}

int64_t hy_sim_full_finish(struct hy_sim_full *f)
{
	return hy_cache_flush(f->cache);
}
