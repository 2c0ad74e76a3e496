/* heat.c - FusionCache's heat prediction; see include/hybridfs/heat.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hybridfs/heat.h"

#define PERIOD_MASK ((UINT64_C(1) << 48) - 1)
#define PERIOD_HALF (UINT64_C(1) << 47)

_Static_assert(sizeof(struct hy_heat_history) == 16, "a history is 16 bytes");
_Static_assert(HY_HEAT_COUNT_MAX == UINT8_MAX, "counts are uint8_t");

static void set_why(char *why, size_t why_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;

	if (!why || why_size == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_size, fmt, ap);
	va_end(ap);
}

int hy_heat_config_init(struct hy_heat_config *config, unsigned periods, double threshold,
			char *why, size_t why_size)
{
	struct hy_heat_config c;
	int32_t l;

	if (periods < HY_HEAT_MIN_PERIODS || periods > HY_HEAT_MAX_PERIODS) {
		set_why(why, why_size, "heat: periods \"%u\" out of range %d..%d", periods,
			HY_HEAT_MIN_PERIODS, HY_HEAT_MAX_PERIODS);
		return -EINVAL;
	}
	/* Written so that NaN fails too. */
	if (!(threshold >= 0.0 && threshold <= HY_HEAT_THRESHOLD_MAX)) {
		set_why(why, why_size, "heat: threshold \"%g\" is not a number in 0..%g", threshold,
			HY_HEAT_THRESHOLD_MAX);
		return -EINVAL;
	}
	memset(&c, 0, sizeof(c));
	c.periods = periods;
	c.threshold = threshold;
	l = (int32_t)periods;
	/* The closed form of X (X'X)^-1 (1, L, L^2)' derived in heat.h. */
	c.denominator = l * (l - 1) * (l - 2);
	for (int32_t t = 0; t < l; t++) {
		c.scaled[t] = 3 * (l * l - 8 * l * t - 3 * l + 10 * t * t + 6 * t + 2);
		c.weights[t] = (double)c.scaled[t] / (double)c.denominator;
	}
	*config = c;
	return 0;
}

static uint64_t newest_of(const struct hy_heat_history *h)
{
	return (uint64_t)h->newest_hi << 32 | h->newest_lo;
}

static void set_newest(struct hy_heat_history *h, uint64_t period)
{
	h->newest_lo = (uint32_t)period;
	h->newest_hi = (uint16_t)(period >> 32);
}

/* How many periods @period is after the history's newest, modulo 2^48: 0
 * when it is the newest, and also when it is older (serial number
 * arithmetic: a distance of 2^47 or more means "before"). */
static uint64_t age_of(const struct hy_heat_history *h, uint64_t period)
{
	uint64_t age = (period - newest_of(h)) & PERIOD_MASK;

	return age < PERIOD_HALF ? age : 0;
}

static bool is_empty(const struct hy_heat_history *h)
{
	for (unsigned i = 0; i < HY_HEAT_MAX_PERIODS; i++)
		if (h->counts[i])
			return false;
	return true;
}

void hy_heat_touch(struct hy_heat_history *history, uint64_t period)
{
	uint64_t age = (period - newest_of(history)) & PERIOD_MASK;

	/* Older than the newest: counted in the newest, except in an empty
	 * history, which starts at whatever period comes first (a zeroed
	 * history says period 0, and the counter may be 2^47 beyond it). */
	if (age >= PERIOD_HALF && !is_empty(history))
		age = 0;
	if (age >= HY_HEAT_MAX_PERIODS) {
		memset(history->counts, 0, sizeof(history->counts));
		set_newest(history, period);
	} else if (age > 0) {
		memmove(history->counts + age, history->counts, HY_HEAT_MAX_PERIODS - (size_t)age);
		memset(history->counts, 0, (size_t)age);
		set_newest(history, period);
	}
	if (history->counts[0] < HY_HEAT_COUNT_MAX)
		history->counts[0]++;
}

unsigned hy_heat_count(const struct hy_heat_history *history, uint64_t period, unsigned ago)
{
	uint64_t age = age_of(history, period);

	if (ago >= HY_HEAT_MAX_PERIODS || ago < age)
		return 0;
	return history->counts[ago - age];
}

double hy_heat_predict(const struct hy_heat_history *history, uint64_t period,
		       const struct hy_heat_config *config)
{
	uint64_t age = age_of(history, period);
	unsigned l = config->periods;
	int32_t dot = 0;

	/* Point t = l - 1 - ago is the count @ago periods before @period, which
	 * is counts[ago - age] when ago >= age. |scaled| <= 648 (L = 10,
	 * t = 9), so |dot| <= 255 * 10 * 648: no overflow. */
	for (uint64_t ago = age; ago < l; ago++)
		dot += config->scaled[l - 1 - ago] * history->counts[ago - age];
	if (dot <= 0)
		return 0.0;
	return (double)dot / (double)config->denominator;
}

bool hy_heat_is_hot(const struct hy_heat_history *history, uint64_t period,
		    const struct hy_heat_config *config)
{
	return hy_heat_predict(history, period, config) >= config->threshold;
}
