/*
 * category.c - ReCA's per-process workload categories; the rules, the
 * thresholds and the hysteresis are documented in hybridfs/category.h.
 */
#include <string.h>

#include "hybridfs/category.h"

/* flags[] of a window slot */
#define F_CLASS_MASK 0x03u
#define F_WRITE	     0x04u
#define F_LARGE	     0x08u

/* predicate bits of hy_category_state.predicates */
#define P_SEQ	 0x01u
#define P_READS	 0x02u
#define P_WRITES 0x04u
#define P_BIG	 0x08u
#define P_LARGE	 0x10u

#define MARGIN_MAX 999u
/* BIG's byte-weighted mean takes each length up to this (header) */
#define BIG_LENGTH_CAP (UINT32_C(16) << 20)

static const char *const category_names[HY_CATEGORY_COUNT] = {
	[HY_CATEGORY_UNKNOWN] = "unknown",
	[HY_CATEGORY_RANDOM_CONSUMER] = "random-consumer",
	[HY_CATEGORY_RANDOM_PRODUCER_CONSUMER] = "random-producer-consumer",
	[HY_CATEGORY_SEQUENTIAL_PRODUCER_CONSUMER] = "sequential-producer-consumer",
	[HY_CATEGORY_ARCHIVAL_CONSUMER] = "archival-consumer",
	[HY_CATEGORY_LARGE_FILE_GENERATOR] = "large-file-generator",
};

const char *hy_category_name(enum hy_category c)
{
	if ((unsigned)c >= HY_CATEGORY_COUNT)
		return "invalid";
	return category_names[c];
}

void hy_category_config_init(struct hy_category_config *cfg)
{
	cfg->window = HY_CATEGORY_DEFAULT_WINDOW;
	cfg->min_requests = HY_CATEGORY_DEFAULT_MIN_REQUESTS;
	cfg->hold = HY_CATEGORY_DEFAULT_HOLD;
	cfg->seq_permille = HY_CATEGORY_DEFAULT_SEQ_PERMILLE;
	cfg->heavy_permille = HY_CATEGORY_DEFAULT_HEAVY_PERMILLE;
	cfg->large_file_permille = HY_CATEGORY_DEFAULT_LARGE_FILE_PERMILLE;
	cfg->margin_permille = HY_CATEGORY_DEFAULT_MARGIN_PERMILLE;
	cfg->big_margin_permille = HY_CATEGORY_DEFAULT_BIG_MARGIN_PERMILLE;
	cfg->large_request = HY_CATEGORY_DEFAULT_LARGE_REQUEST;
	cfg->large_file = HY_CATEGORY_DEFAULT_LARGE_FILE;
}

static unsigned clamp_u(unsigned v, unsigned lo, unsigned hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void hy_category_init(struct hy_category_state *s, const struct hy_category_config *cfg)
{
	struct hy_category_config *c = &s->cfg;

	memset(s, 0, sizeof(*s));
	if (cfg)
		*c = *cfg;
	else
		hy_category_config_init(c);
	c->window = clamp_u(c->window, 1, HY_CATEGORY_WINDOW_MAX);
	c->min_requests = clamp_u(c->min_requests, 1, c->window);
	if (c->hold < 1)
		c->hold = 1;
	c->seq_permille = clamp_u(c->seq_permille, 0, 1000);
	c->heavy_permille = clamp_u(c->heavy_permille, 0, 1000);
	c->large_file_permille = clamp_u(c->large_file_permille, 0, 1000);
	c->margin_permille = clamp_u(c->margin_permille, 0, MARGIN_MAX);
	c->big_margin_permille = clamp_u(c->big_margin_permille, 0, MARGIN_MAX);
	s->current = HY_CATEGORY_UNKNOWN;
	s->candidate = HY_CATEGORY_UNKNOWN;
}

/*
 * One Schmitt trigger over "part / whole >= permille / 1000": on at the
 * threshold, off below the threshold less @margin (both in permille).
 * Integer cross-multiplication; part <= whole < 2^64 / 1000 holds for
 * a window of at most 256 requests of at most 4 GiB each.
 */
static bool schmitt(bool was, uint64_t part, uint64_t whole, unsigned permille, unsigned margin)
{
	unsigned t = permille;

	if (was)
		t = permille > margin ? permille - margin : 0;
	return part * 1000 >= whole * t;
}

static unsigned update_predicates(struct hy_category_state *s)
{
	const struct hy_category_config *c = &s->cfg;
	unsigned p = s->predicates, q = 0;
	unsigned m = c->margin_permille;
	/* sum_sq <= 256 * 2^48, sum_cap >= 1: the mean fits in 2^24 */
	uint64_t wmean = s->sum_sq / s->sum_cap;

	if (schmitt(p & P_SEQ, s->class_bytes[HY_CLASS_SEQUENTIAL], s->bytes, c->seq_permille, m))
		q |= P_SEQ;
	if (schmitt(p & P_READS, s->bytes - s->write_bytes, s->bytes, c->heavy_permille, m))
		q |= P_READS;
	if (schmitt(p & P_WRITES, s->write_bytes, s->bytes, c->heavy_permille, m))
		q |= P_WRITES;
	if (schmitt(p & P_LARGE, s->large_bytes, s->bytes, c->large_file_permille, m))
		q |= P_LARGE;
	if (schmitt(p & P_BIG, wmean, c->large_request, 1000, c->big_margin_permille))
		q |= P_BIG;
	s->predicates = q;
	return q;
}

static enum hy_category verdict(unsigned p)
{
	if (p & P_SEQ) {
		if ((p & (P_READS | P_BIG | P_LARGE)) == (P_READS | P_BIG | P_LARGE))
			return HY_CATEGORY_ARCHIVAL_CONSUMER;
		if ((p & (P_WRITES | P_BIG | P_LARGE)) == (P_WRITES | P_BIG | P_LARGE))
			return HY_CATEGORY_LARGE_FILE_GENERATOR;
		return HY_CATEGORY_SEQUENTIAL_PRODUCER_CONSUMER;
	}
	if (p & P_READS)
		return HY_CATEGORY_RANDOM_CONSUMER;
	return HY_CATEGORY_RANDOM_PRODUCER_CONSUMER;
}

static void window_drop(struct hy_category_state *s, unsigned slot)
{
	uint8_t f = s->flags[slot];
	uint32_t len = s->len[slot];
	uint64_t cap = len < BIG_LENGTH_CAP ? len : BIG_LENGTH_CAP;

	s->class_bytes[f & F_CLASS_MASK] -= len;
	s->sum_cap -= cap;
	s->sum_sq -= cap * cap;
	s->bytes -= len;
	if (f & F_WRITE)
		s->write_bytes -= len;
	if (f & F_LARGE)
		s->large_bytes -= len;
	s->count--;
}

enum hy_category hy_category_observe(struct hy_category_state *s, enum hy_request_class cls,
				     bool write, uint32_t length, uint64_t file_size)
{
	unsigned slot = s->head;
	unsigned k = (unsigned)cls < HY_CLASS_COUNT ? (unsigned)cls : (unsigned)HY_CLASS_RANDOM;
	uint32_t len = length ? length : 1;
	uint64_t cap = len < BIG_LENGTH_CAP ? len : BIG_LENGTH_CAP;
	uint8_t f = (uint8_t)k;
	enum hy_category raw;

	if (s->count == s->cfg.window)
		window_drop(s, slot);
	if (write)
		f |= F_WRITE;
	if (file_size >= s->cfg.large_file)
		f |= F_LARGE;
	s->flags[slot] = f;
	s->len[slot] = len;
	s->class_bytes[k] += len;
	s->sum_cap += cap;
	s->sum_sq += cap * cap;
	s->bytes += len;
	if (write)
		s->write_bytes += len;
	if (f & F_LARGE)
		s->large_bytes += len;
	s->count++;
	s->head = slot + 1 == s->cfg.window ? 0 : slot + 1;

	if (s->count < s->cfg.min_requests)
		return s->current;
	raw = verdict(update_predicates(s));
	if (s->current == HY_CATEGORY_UNKNOWN || raw == s->current) {
		/* leaving unknown is immediate (header, hysteresis) */
		s->current = raw;
		s->candidate = raw;
		s->streak = 0;
		return s->current;
	}
	if (raw == s->candidate) {
		s->streak++;
	} else {
		s->candidate = raw;
		s->streak = 1;
	}
	if (s->streak >= s->cfg.hold) {
		s->current = raw;
		s->streak = 0;
	}
	return s->current;
}

enum hy_category hy_category_current(const struct hy_category_state *s)
{
	return s->current;
}

void hy_category_mix(const struct hy_category_state *s, struct hy_category_mix *out)
{
	memset(out, 0, sizeof(*out));
	out->requests = s->count;
	if (!s->count)
		return;
	for (unsigned i = 0; i < HY_CLASS_COUNT; i++)
		out->class_share[i] = (double)s->class_bytes[i] / (double)s->bytes;
	out->write_share = (double)s->write_bytes / (double)s->bytes;
	out->large_file_share = (double)s->large_bytes / (double)s->bytes;
	out->mean_size = s->bytes / s->count;
}
