/*
 * heat.h - FusionCache's heat prediction for the DRAM front buffer: each
 * buffered block counts its accesses per period, and a quadratic regression
 * over its counts in the last L periods (L = 5..10) predicts how many
 * accesses it will get in the next period (its "heat"). When the front
 * buffer fills, only blocks whose predicted heat reaches the threshold go
 * to the SSD store; the others are dropped (clean) or written home (dirty).
 * This is the filter that keeps blocks read or written once (scans,
 * write-once data) from wearing the SSD (papers.md, FusionCache).
 *
 * Periods: a global counter that the caller advances (every N requests or
 * every second; the front buffer chooses). Contract: periods never go
 * backwards. A touch with an older period than the history's newest is
 * counted in the newest (two threads that read the clock in one order and
 * touch in the other lose nothing), and a question about an older period
 * is answered as of the newest. The history stores 48 bits of the
 * period and compares them modulo 2^48, so the counter may run past 2^48;
 * a block untouched for 2^47 periods or more would be misread (at a
 * thousand periods a second, after 4000 years).
 *
 * History: struct hy_heat_history is 16 bytes, embedded in each buffered
 * block (no allocation per block). It keeps the counts of the last
 * HY_HEAT_MAX_PERIODS periods, whatever L is, and the period of the newest
 * one. Ageing is lazy: nothing sweeps the blocks when a period ends; a
 * touch shifts the counts by the periods that passed since the newest, and
 * a question (hy_heat_predict, hy_heat_count) reads them shifted without
 * writing. An all-zero history is an empty one: memset or calloc it, no
 * init call.
 *
 * Prediction: the least-squares fit of y = a + b*t + c*t^2 to the points
 * (t, y_t), t = 0..L-1 from the oldest period to @period, y_t the count of
 * that period (0 before the history began), evaluated at t = L (the next
 * period) and clamped at 0. With X the L x 3 matrix of rows (1, t, t^2),
 * the fit is beta = (X'X)^-1 X'y and the prediction (1, L, L^2) beta =
 * w'y, with w = X (X'X)^-1 (1, L, L^2)': weights that depend on L only.
 * Solving the 3 x 3 normal equations in closed form (sums of t^k for
 * k = 0..4 over t = 0..L-1) gives
 *
 *	w_t = 3 (L^2 - 8Lt - 3L + 10t^2 + 6t + 2) / (L (L-1) (L-2))
 *
 * (for L = 5: 3/5, -3/5, -4/5, 0, 9/5). They sum to 1 and reproduce any
 * quadratic exactly (sum w_t t = L, sum w_t t^2 = L^2). The numerators are
 * integers, so hy_heat_config_init() keeps them with the common
 * denominator, and a prediction is one integer dot product of L counts
 * with L weights and one division: exact (the division rounded once), so
 * a steady series predicts exactly its level and never flips at a
 * threshold by rounding. The weights are also kept as doubles, for
 * display and for callers that want them.
 *
 * Who calls it: the DRAM front buffer (cache/front.c: each access,
 * hy_heat_touch; the evictor, hy_heat_predict, when it picks what goes to
 * the SSD), its setup in cache/cache.c; the trace simulator through the
 * cache (sim/full.c); the unit tests.
 *
 * Memory: none allocated. The caller owns the histories (inside its
 * buffered blocks) and the config (filled by hy_heat_config_init(), then
 * read-only).
 *
 * Locks: none. A config is read-only after init and may be shared by any
 * number of threads. The caller serializes access to one history (the
 * front buffer's lock on that block); different histories are independent.
 */
#ifndef HYBRIDFS_HEAT_H
#define HYBRIDFS_HEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HY_HEAT_MIN_PERIODS	5   /* smallest L */
#define HY_HEAT_MAX_PERIODS	10  /* largest L; also the periods a history keeps */
#define HY_HEAT_DEFAULT_PERIODS 8   /* the middle of FusionCache's 5..10 */
#define HY_HEAT_COUNT_MAX	255 /* a period's count saturates here */
#define HY_HEAT_THRESHOLD_MAX	255.0
/*
 * The default threshold, in accesses per period. With the default L = 8 a
 * block accessed once, in whichever period, predicts at most 9/8 (once in
 * the current period; the weights above), so 1.5 never admits a block seen
 * once: a scan that fills the buffer within one period stays off the SSD.
 * A block seen again soon is admitted (once in each of the last two
 * periods: 1.61; twice in the current one: 2.25), and so is a steady rate
 * of 1.5 accesses a period or more. The cost: a block read exactly once
 * every period predicts 1.0 and stays out; a caller that wants those sets
 * 1.0 and lets single accesses in the current period through (9/8). For
 * L = 5 and 6 one access in the current period predicts 1.8 and 1.5: with
 * those L, use a threshold above that to keep the same guarantee.
 */
#define HY_HEAT_DEFAULT_THRESHOLD 1.5

/*
 * One block's access counts. 16 bytes. All zero = empty. Fields are
 * private to heat.c: read the counts through hy_heat_count().
 */
struct hy_heat_history {
	uint32_t newest_lo; /* bits 0..31 of the period of counts[0] */
	uint16_t newest_hi; /* bits 32..47 of it */
	/* counts[i]: accesses in the period i periods before the newest,
	 * saturating at HY_HEAT_COUNT_MAX; as of the newest period (older
	 * slots are not moved until the next touch) */
	uint8_t counts[HY_HEAT_MAX_PERIODS];
};

/* The predictor's parameters, filled by hy_heat_config_init(). */
struct hy_heat_config {
	unsigned periods; /* L, HY_HEAT_MIN_PERIODS..HY_HEAT_MAX_PERIODS */
	double threshold; /* predicted accesses per period, 0..HY_HEAT_THRESHOLD_MAX */
	/* weights[t] = scaled[t] / denominator, t = 0 (oldest) .. L-1 (the
	 * period asked about); unused slots are 0 */
	double weights[HY_HEAT_MAX_PERIODS];
	int32_t scaled[HY_HEAT_MAX_PERIODS];
	int32_t denominator; /* L (L-1) (L-2) */
};

/*
 * Fills @config for L = @periods (HY_HEAT_MIN_PERIODS..HY_HEAT_MAX_PERIODS)
 * and @threshold (a number in 0..HY_HEAT_THRESHOLD_MAX; 0 admits every
 * block, the filter off). Returns 0, or -EINVAL with a message naming the
 * bad value in @why (which may be NULL); @config is unchanged on error.
 */
int hy_heat_config_init(struct hy_heat_config *config, unsigned periods, double threshold,
			char *why, size_t why_size);

/* Counts one access to the block in @period (see the contract above: an
 * older period counts in the newest). Never fails, never allocates. */
void hy_heat_touch(struct hy_heat_history *history, uint64_t period);

/* The block's count @ago periods before @period (0 = @period itself), as
 * of @period: 0 for a period without accesses, before the history's
 * first touch, or HY_HEAT_MAX_PERIODS or more ago. Reads, never writes. */
unsigned hy_heat_count(const struct hy_heat_history *history, uint64_t period, unsigned ago);

/* The predicted accesses in the period after @period (>= 0), from the
 * counts of the L periods ending with @period. Reads, never writes. */
double hy_heat_predict(const struct hy_heat_history *history, uint64_t period,
		       const struct hy_heat_config *config);

/* hy_heat_predict() >= config->threshold: the block may go to the SSD. */
bool hy_heat_is_hot(const struct hy_heat_history *history, uint64_t period,
		    const struct hy_heat_config *config);

#endif
