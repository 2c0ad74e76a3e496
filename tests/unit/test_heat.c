/* test_heat.c - the front buffer's heat prediction: the weights against a
 * least-squares solve done here (the 3 x 3 normal equations, by Gaussian
 * elimination), exact extrapolation of constant, linear and quadratic
 * series, clamping, lazy ageing, saturation, touches in an older period,
 * periods past 48 bits, the threshold, and bad configs refused by name. */
#include <errno.h>
#include <math.h> /* NAN, INFINITY: macros, no libm */
#include <stdint.h>
#include <string.h>

#include "hybridfs/heat.h"
#include "suites.h"

#define EPS 1e-9

/* The least-squares quadratic through (t, y[t]), t = 0..l-1, evaluated at
 * t = l, unclamped: the normal equations (X'X) beta = X'y solved directly. */
static double absd(double x)
{
	return x < 0 ? -x : x;
}

static double lsq_next(const double *y, unsigned l)
{
	double m[3][4] = {{0}};
	double beta[3] = {0};

	for (unsigned t = 0; t < l; t++) {
		const double p[3] = {1.0, (double)t, (double)t * t};

		for (int i = 0; i < 3; i++) {
			for (int j = 0; j < 3; j++)
				m[i][j] += p[i] * p[j];
			m[i][3] += p[i] * y[t];
		}
	}
	for (int c = 0; c < 3; c++) {
		int piv = c;

		for (int r = c + 1; r < 3; r++)
			if (absd(m[r][c]) > absd(m[piv][c]))
				piv = r;
		for (int k = 0; k < 4; k++) {
			double tmp = m[c][k];

			m[c][k] = m[piv][k];
			m[piv][k] = tmp;
		}
		for (int r = c + 1; r < 3; r++) {
			double f = m[r][c] / m[c][c];

			for (int k = c; k < 4; k++)
				m[r][k] -= f * m[c][k];
		}
	}
	for (int i = 2; i >= 0; i--) {
		double s = m[i][3];

		for (int k = i + 1; k < 3; k++)
			s -= m[i][k] * beta[k];
		beta[i] = s / m[i][i];
	}
	return beta[0] + beta[1] * l + beta[2] * (double)l * l;
}

static double clamp0(double x)
{
	return x > 0.0 ? x : 0.0;
}

/* Touches series[i] times in period first + i; returns the last period. */
static uint64_t build(struct hy_heat_history *h, uint64_t first, const unsigned *series, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < series[i]; k++)
			hy_heat_touch(h, first + i);
	return first + n - 1;
}

static void config_for(struct hy_heat_config *c, unsigned l)
{
	char why[128] = "";

	CU_ASSERT_EQUAL_FATAL(
		hy_heat_config_init(c, l, HY_HEAT_DEFAULT_THRESHOLD, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(why, "");
}

static void test_heat_size(void)
{
	struct hy_heat_history h;

	CU_ASSERT(sizeof(struct hy_heat_history) <= 16);
	/* An all-zero history is empty. */
	memset(&h, 0, sizeof(h));
	for (unsigned ago = 0; ago < HY_HEAT_MAX_PERIODS; ago++)
		CU_ASSERT_EQUAL(hy_heat_count(&h, 1000, ago), 0);
}

/* Each weight is the prediction of a series that is 1 at t and 0
 * elsewhere; the moments say that quadratics are reproduced. */
static void test_heat_weights(void)
{
	struct hy_heat_config c;

	for (unsigned l = HY_HEAT_MIN_PERIODS; l <= HY_HEAT_MAX_PERIODS; l++) {
		double m0 = 0, m1 = 0, m2 = 0;

		config_for(&c, l);
		CU_ASSERT_EQUAL(c.periods, l);
		CU_ASSERT_EQUAL(c.denominator, (int32_t)(l * (l - 1) * (l - 2)));
		for (unsigned t = 0; t < l; t++) {
			double y[HY_HEAT_MAX_PERIODS] = {0};

			y[t] = 1.0;
			CU_ASSERT_DOUBLE_EQUAL(c.weights[t], lsq_next(y, l), EPS);
			CU_ASSERT_DOUBLE_EQUAL(c.weights[t], (double)c.scaled[t] / c.denominator,
					       EPS);
			m0 += c.weights[t];
			m1 += c.weights[t] * t;
			m2 += c.weights[t] * t * t;
		}
		for (unsigned t = l; t < HY_HEAT_MAX_PERIODS; t++) {
			CU_ASSERT_EQUAL(c.scaled[t], 0);
			CU_ASSERT_EQUAL(c.weights[t], 0.0);
		}
		CU_ASSERT_DOUBLE_EQUAL(m0, 1.0, EPS);
		CU_ASSERT_DOUBLE_EQUAL(m1, (double)l, EPS);
		CU_ASSERT_DOUBLE_EQUAL(m2, (double)l * l, EPS);
	}
	/* The closed form's first case, by hand: 3/5, -3/5, -4/5, 0, 9/5. */
	config_for(&c, 5);
	CU_ASSERT_DOUBLE_EQUAL(c.weights[0], 0.6, EPS);
	CU_ASSERT_DOUBLE_EQUAL(c.weights[1], -0.6, EPS);
	CU_ASSERT_DOUBLE_EQUAL(c.weights[2], -0.8, EPS);
	CU_ASSERT_DOUBLE_EQUAL(c.weights[3], 0.0, EPS);
	CU_ASSERT_DOUBLE_EQUAL(c.weights[4], 1.8, EPS);
}

/* y(t) for t = 0..l-1 touched into a fresh history starting at @first;
 * the prediction as of the last period. */
static double predict_series(const unsigned *y, unsigned l, uint64_t first)
{
	struct hy_heat_history h;
	struct hy_heat_config c;

	memset(&h, 0, sizeof(h));
	config_for(&c, l);
	return hy_heat_predict(&h, build(&h, first, y, l), &c);
}

static void test_heat_constant_linear_quadratic(void)
{
	for (unsigned l = HY_HEAT_MIN_PERIODS; l <= HY_HEAT_MAX_PERIODS; l++) {
		unsigned cst[HY_HEAT_MAX_PERIODS], lin[HY_HEAT_MAX_PERIODS];
		unsigned up[HY_HEAT_MAX_PERIODS], down[HY_HEAT_MAX_PERIODS];
		int ll = (int)l;

		for (unsigned t = 0; t < l; t++) {
			int ti = (int)t;

			cst[t] = 7;
			lin[t] = 2 * t + 1;
			up[t] = (unsigned)(ti * ti - 3 * ti + 5);    /* 5, 3, 3, 5, 9, ... */
			down[t] = (unsigned)(40 + 6 * ti - ti * ti); /* 40, 45, 48, ... 13 */
		}
		CU_ASSERT_DOUBLE_EQUAL(predict_series(cst, l, 100), 7.0, EPS);
		/* Exact, not only close: the integer dot product. */
		CU_ASSERT(predict_series(cst, l, 100) == 7.0);
		CU_ASSERT_DOUBLE_EQUAL(predict_series(lin, l, 100), 2.0 * l + 1, EPS);
		CU_ASSERT_DOUBLE_EQUAL(predict_series(up, l, 100), (double)(ll * ll - 3 * ll + 5),
				       EPS);
		CU_ASSERT_DOUBLE_EQUAL(predict_series(down, l, 100),
				       (double)(40 + 6 * ll - ll * ll), EPS);
		/* Where the history starts does not matter. */
		CU_ASSERT_DOUBLE_EQUAL(predict_series(up, l, 0), (double)(ll * ll - 3 * ll + 5),
				       EPS);
	}
}

static uint32_t rng_next(uint32_t *s)
{
	/* xorshift32, fixed seeds: the same series on every run */
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void test_heat_noisy(void)
{
	unsigned positive = 0, clamped = 0;

	for (uint32_t seed = 1; seed <= 200; seed++) {
		uint32_t s = seed * 2654435761u;

		for (unsigned l = HY_HEAT_MIN_PERIODS; l <= HY_HEAT_MAX_PERIODS; l++) {
			unsigned y[HY_HEAT_MAX_PERIODS];
			double yd[HY_HEAT_MAX_PERIODS];
			double want;

			for (unsigned t = 0; t < l; t++) {
				y[t] = rng_next(&s) % 41;
				yd[t] = y[t];
			}
			want = lsq_next(yd, l);
			if (want > 0)
				positive++;
			else
				clamped++;
			CU_ASSERT_DOUBLE_EQUAL(predict_series(y, l, seed), clamp0(want), EPS);
		}
	}
	/* Both sides of the clamp were exercised. */
	CU_ASSERT(positive > 100);
	CU_ASSERT(clamped > 100);
}

static void test_heat_falling_clamps(void)
{
	for (unsigned l = HY_HEAT_MIN_PERIODS; l <= HY_HEAT_MAX_PERIODS; l++) {
		unsigned y[HY_HEAT_MAX_PERIODS];
		double yd[HY_HEAT_MAX_PERIODS];
		struct hy_heat_history h;
		struct hy_heat_config c;
		uint64_t last;

		for (unsigned t = 0; t < l; t++) {
			y[t] = 5 * (l - 1 - t); /* ..., 10, 5, 0: next would be -5 */
			yd[t] = y[t];
		}
		CU_ASSERT_DOUBLE_EQUAL(lsq_next(yd, l), -5.0, EPS);
		memset(&h, 0, sizeof(h));
		config_for(&c, l);
		last = build(&h, 50, y, l);
		CU_ASSERT_EQUAL(hy_heat_predict(&h, last, &c), 0.0);
		CU_ASSERT_FALSE(hy_heat_is_hot(&h, last, &c));
	}
}

static void test_heat_lazy_ageing(void)
{
	int positive = 0;

	for (unsigned l = HY_HEAT_MIN_PERIODS; l <= HY_HEAT_MAX_PERIODS; l++) {
		static const unsigned three[2][3] = {{30, 2, 1}, {1, 2, 30}};
		struct hy_heat_history h, before;
		struct hy_heat_config c;

		config_for(&c, l);
		/* Touched in period 3 only, asked at 3 + L + 2: the L periods
		 * asked about are all empty. */
		memset(&h, 0, sizeof(h));
		for (int k = 0; k < 50; k++)
			hy_heat_touch(&h, 3);
		CU_ASSERT(hy_heat_predict(&h, 3, &c) > 0.0);
		memcpy(&before, &h, sizeof(h));
		for (unsigned ago = 0; ago < l; ago++)
			CU_ASSERT_EQUAL(hy_heat_count(&h, 3 + l + 2, ago), 0);
		CU_ASSERT_EQUAL(hy_heat_predict(&h, 3 + l + 2, &c), 0.0);
		CU_ASSERT_FALSE(hy_heat_is_hot(&h, 3 + l + 2, &c));
		/* Kept beyond the window while the history still holds it. */
		CU_ASSERT_EQUAL(hy_heat_count(&h, 3 + l + 2, l + 2),
				l + 2 < HY_HEAT_MAX_PERIODS ? 50u : 0u);
		/* Asking wrote nothing. */
		CU_ASSERT_EQUAL(memcmp(&before, &h, sizeof(h)), 0);

		/* Touched in 10, 11, 12, asked at 14: 13 and 14 count as 0. */
		for (int v = 0; v < 2; v++) {
			double yd[HY_HEAT_MAX_PERIODS] = {0};
			double want;

			memset(&h, 0, sizeof(h));
			build(&h, 10, three[v], 3);
			for (unsigned i = 0; i < 3; i++)
				yd[l - 5 + i] = three[v][i];
			want = clamp0(lsq_next(yd, l));
			if (want > 0)
				positive++;
			CU_ASSERT_EQUAL(hy_heat_count(&h, 14, 0), 0);
			CU_ASSERT_EQUAL(hy_heat_count(&h, 14, 1), 0);
			CU_ASSERT_EQUAL(hy_heat_count(&h, 14, 2), three[v][2]);
			CU_ASSERT_EQUAL(hy_heat_count(&h, 14, 3), three[v][1]);
			CU_ASSERT_EQUAL(hy_heat_count(&h, 14, 4), three[v][0]);
			CU_ASSERT_EQUAL(hy_heat_count(&h, 14, 5), 0);
			CU_ASSERT_DOUBLE_EQUAL(hy_heat_predict(&h, 14, &c), want, EPS);
			/* A touch at 14 shifts the counts by the two periods. */
			hy_heat_touch(&h, 14);
			CU_ASSERT_EQUAL(hy_heat_count(&h, 14, 0), 1);
			CU_ASSERT_EQUAL(hy_heat_count(&h, 14, 1), 0);
			CU_ASSERT_EQUAL(hy_heat_count(&h, 14, 2), three[v][2]);
			CU_ASSERT_EQUAL(hy_heat_count(&h, 14, 4), three[v][0]);
			CU_ASSERT_EQUAL(hy_heat_count(&h, 15, 5), three[v][0]);
		}
	}
	/* Some of the cases extrapolate above 0, so the zeros were used. */
	CU_ASSERT(positive >= 3);
}

static void test_heat_saturation(void)
{
	struct hy_heat_history h;
	struct hy_heat_config c;

	config_for(&c, HY_HEAT_DEFAULT_PERIODS);
	memset(&h, 0, sizeof(h));
	for (int k = 0; k < 300; k++)
		hy_heat_touch(&h, 7);
	CU_ASSERT_EQUAL(hy_heat_count(&h, 7, 0), HY_HEAT_COUNT_MAX);
	CU_ASSERT_DOUBLE_EQUAL(hy_heat_predict(&h, 7, &c),
			       HY_HEAT_COUNT_MAX * c.weights[HY_HEAT_DEFAULT_PERIODS - 1], EPS);
	/* The next period starts from 0; the saturated one moves back. */
	hy_heat_touch(&h, 8);
	CU_ASSERT_EQUAL(hy_heat_count(&h, 8, 0), 1);
	CU_ASSERT_EQUAL(hy_heat_count(&h, 8, 1), HY_HEAT_COUNT_MAX);
	for (int k = 0; k < 1000; k++)
		hy_heat_touch(&h, 8);
	CU_ASSERT_EQUAL(hy_heat_count(&h, 8, 0), HY_HEAT_COUNT_MAX);
	CU_ASSERT_EQUAL(hy_heat_count(&h, 8, 1), HY_HEAT_COUNT_MAX);
	CU_ASSERT_EQUAL(hy_heat_count(&h, 8, 2), 0);
}

static void test_heat_older_touch(void)
{
	struct hy_heat_history h;

	memset(&h, 0, sizeof(h));
	for (int k = 0; k < 3; k++)
		hy_heat_touch(&h, 20);
	hy_heat_touch(&h, 18);
	CU_ASSERT_EQUAL(hy_heat_count(&h, 20, 0), 4);
	CU_ASSERT_EQUAL(hy_heat_count(&h, 20, 2), 0);
	/* Far older still counts in the newest; the newest did not move. */
	hy_heat_touch(&h, 20 - (UINT64_C(1) << 40));
	CU_ASSERT_EQUAL(hy_heat_count(&h, 20, 0), 5);
	CU_ASSERT_EQUAL(hy_heat_count(&h, 21, 1), 5);
	CU_ASSERT_EQUAL(hy_heat_count(&h, 21, 0), 0);
	/* Asked about an older period: read as of the newest. */
	CU_ASSERT_EQUAL(hy_heat_count(&h, 19, 0), 5);
}

static void test_heat_large_periods(void)
{
	const uint64_t wrap = UINT64_C(1) << 48;
	struct hy_heat_history h;
	struct hy_heat_config c;

	config_for(&c, HY_HEAT_DEFAULT_PERIODS);
	/* Across the 48-bit wrap of the stored period. */
	memset(&h, 0, sizeof(h));
	hy_heat_touch(&h, wrap - 1);
	hy_heat_touch(&h, wrap + 1);
	CU_ASSERT_EQUAL(hy_heat_count(&h, wrap + 1, 0), 1);
	CU_ASSERT_EQUAL(hy_heat_count(&h, wrap + 1, 1), 0);
	CU_ASSERT_EQUAL(hy_heat_count(&h, wrap + 1, 2), 1);
	CU_ASSERT_EQUAL(hy_heat_count(&h, wrap + 20, 0), 0);
	CU_ASSERT_EQUAL(hy_heat_count(&h, wrap + 20, 19), 0);
	/* A fresh history first touched in a period that looks "older"
	 * than its zeroed newest (2^47 and more apart) starts there. */
	memset(&h, 0, sizeof(h));
	hy_heat_touch(&h, (UINT64_C(1) << 47) + 5);
	hy_heat_touch(&h, (UINT64_C(1) << 47) + 6);
	CU_ASSERT_EQUAL(hy_heat_count(&h, (UINT64_C(1) << 47) + 6, 0), 1);
	CU_ASSERT_EQUAL(hy_heat_count(&h, (UINT64_C(1) << 47) + 6, 1), 1);
	memset(&h, 0, sizeof(h));
	hy_heat_touch(&h, UINT64_MAX);
	hy_heat_touch(&h, UINT64_MAX);
	CU_ASSERT_EQUAL(hy_heat_count(&h, UINT64_MAX, 0), 2);
	CU_ASSERT_DOUBLE_EQUAL(hy_heat_predict(&h, UINT64_MAX, &c),
			       2 * c.weights[HY_HEAT_DEFAULT_PERIODS - 1], EPS);
}

static void test_heat_threshold(void)
{
	static const unsigned steady[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	static const unsigned last_two[8] = {0, 0, 0, 0, 0, 0, 1, 1};
	struct hy_heat_history h;
	struct hy_heat_config c, c1, c0;
	uint64_t last;

	config_for(&c, HY_HEAT_DEFAULT_PERIODS);
	CU_ASSERT_EQUAL(c.threshold, HY_HEAT_DEFAULT_THRESHOLD);
	CU_ASSERT_EQUAL_FATAL(hy_heat_config_init(&c1, HY_HEAT_DEFAULT_PERIODS, 1.0, NULL, 0), 0);
	CU_ASSERT_EQUAL_FATAL(hy_heat_config_init(&c0, HY_HEAT_DEFAULT_PERIODS, 0.0, NULL, 0), 0);
	/* Seen once, in the current period: 9/8, cold by default. */
	memset(&h, 0, sizeof(h));
	hy_heat_touch(&h, 30);
	CU_ASSERT_DOUBLE_EQUAL(hy_heat_predict(&h, 30, &c), 9.0 / 8, EPS);
	CU_ASSERT_FALSE(hy_heat_is_hot(&h, 30, &c));
	CU_ASSERT_TRUE(hy_heat_is_hot(&h, 30, &c1));
	/* Seen twice in it: 9/4, hot. */
	hy_heat_touch(&h, 30);
	CU_ASSERT_TRUE(hy_heat_is_hot(&h, 30, &c));
	/* Once in each of the last two periods: 90/56, hot. */
	memset(&h, 0, sizeof(h));
	last = build(&h, 30, last_two, 8);
	CU_ASSERT_DOUBLE_EQUAL(hy_heat_predict(&h, last, &c), 90.0 / 56, EPS);
	CU_ASSERT_TRUE(hy_heat_is_hot(&h, last, &c));
	/* Steady once a period: exactly 1.0, hot at 1.0 (no rounding
	 * below it), cold at the default. */
	memset(&h, 0, sizeof(h));
	last = build(&h, 30, steady, 8);
	CU_ASSERT(hy_heat_predict(&h, last, &c) == 1.0);
	CU_ASSERT_TRUE(hy_heat_is_hot(&h, last, &c1));
	CU_ASSERT_FALSE(hy_heat_is_hot(&h, last, &c));
	/* Threshold 0: everything goes, even an empty history. */
	memset(&h, 0, sizeof(h));
	CU_ASSERT_TRUE(hy_heat_is_hot(&h, 30, &c0));
}

static void check_refused(unsigned periods, double threshold, const char *name, const char *value)
{
	struct hy_heat_config c, saved;
	char why[128] = "";

	config_for(&c, 7);
	memcpy(&saved, &c, sizeof(c));
	CU_ASSERT_EQUAL(hy_heat_config_init(&c, periods, threshold, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, name));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, value));
	CU_ASSERT_EQUAL(memcmp(&c, &saved, sizeof(c)), 0);
	CU_ASSERT_EQUAL(hy_heat_config_init(&c, periods, threshold, NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(hy_heat_config_init(&c, periods, threshold, why, 0), -EINVAL);
}

static void test_heat_bad_config(void)
{
	struct hy_heat_config c;

	check_refused(0, 1.0, "periods", "\"0\"");
	check_refused(4, 1.0, "periods", "\"4\"");
	check_refused(11, 1.0, "periods", "\"11\"");
	check_refused(8, -1.0, "threshold", "\"-1\"");
	check_refused(8, 256.0, "threshold", "\"256\"");
	check_refused(8, NAN, "threshold", "nan");
	check_refused(8, INFINITY, "threshold", "inf");
	/* The ends of the ranges are fine. */
	CU_ASSERT_EQUAL(hy_heat_config_init(&c, 5, 0.0, NULL, 0), 0);
	CU_ASSERT_EQUAL(hy_heat_config_init(&c, 10, HY_HEAT_THRESHOLD_MAX, NULL, 0), 0);
}

int hy_test_add_heat(void)
{
	CU_pSuite s = CU_add_suite("heat", NULL, NULL);

	if (!s || !CU_add_test(s, "a history is at most 16 bytes", test_heat_size) ||
	    !CU_add_test(s, "weights are the least-squares extrapolation", test_heat_weights) ||
	    !CU_add_test(s, "constant, linear, quadratic series exactly",
			 test_heat_constant_linear_quadratic) ||
	    !CU_add_test(s, "noisy series against a normal-equations solve", test_heat_noisy) ||
	    !CU_add_test(s, "a falling series clamps at 0", test_heat_falling_clamps) ||
	    !CU_add_test(s, "lazy ageing: empty periods count as 0", test_heat_lazy_ageing) ||
	    !CU_add_test(s, "counts saturate", test_heat_saturation) ||
	    !CU_add_test(s, "a touch in an older period counts in the newest",
			 test_heat_older_touch) ||
	    !CU_add_test(s, "periods past 48 bits", test_heat_large_periods) ||
	    !CU_add_test(s, "the threshold", test_heat_threshold) ||
	    !CU_add_test(s, "bad configs refused by name", test_heat_bad_config))
		return -1;
	return 0;
}
