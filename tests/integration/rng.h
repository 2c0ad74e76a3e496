/*
 * rng.h - the test programs' deterministic random numbers (splitmix64):
 * the same seed, the same sequence, on every machine, so a failing run can
 * be run again. Header only; for hy-concurrent and hy-soak (hy-difftest
 * keeps the same generator over one global state).
 */
#ifndef HYBRIDFS_TEST_RNG_H
#define HYBRIDFS_TEST_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s;
};

static inline uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A number below @n (0 for 0). */
static inline uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

#endif
