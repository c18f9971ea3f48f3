// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kmod/split.c: the attribution rule.
 */
#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/limits.h>

#include "split.h"

#define CGE_T_MAXN	16

/* xorshift64: a reproducible stream of random-ish inputs */
static u64 cge_t_rand(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* idle + sum(share) == energy, returned as the sum */
static u64 cge_t_sum(u64 idle, const u64 *share, unsigned int n)
{
	unsigned int i;
	u64 sum = idle;

	for (i = 0; i < n; i++)
		sum += share[i];
	return sum;
}

static void cge_t_mul_div(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(10, 3, 4), 7ULL);
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(0, U64_MAX, 1), 0ULL);
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(U64_MAX, 0, 3), 0ULL);
	/* a zero divisor wins over a zero factor */
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(0, 5, 0), U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(U64_MAX, U64_MAX, U64_MAX),
			U64_MAX);
	/* (2^64 - 1)^2 / 2^64 = 2^64 - 2 (+ a fraction) */
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(U64_MAX, U64_MAX, 0),
			U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(1ULL << 63, 1ULL << 63,
					      (1ULL << 63) + 1),
			(1ULL << 63) - 1);
	/* 2^63 * 3 / 4: exact where a 64-bit product would overflow */
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(1ULL << 63, 3, 4),
			3ULL << 61);
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(U64_MAX, U64_MAX - 1, U64_MAX),
			U64_MAX - 1);
	/* quotient does not fit: saturate */
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(U64_MAX, 4, 2), U64_MAX);
	/* a factor equal to the divisor gives the other factor */
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(U64_MAX, 7, 7), U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(7, U64_MAX - 3, 7),
			U64_MAX - 3);
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(12345, 1000000000, 1000000000),
			12345ULL);
	/* and the zero divisor still wins */
	KUNIT_EXPECT_EQ(test, cge_mul_div_u64(0, 0, 0), U64_MAX);
}

static void cge_t_basic(struct kunit *test)
{
	u64 w[2] = { 1, 2 }, s[2];

	/* idle 1/4 of the time: 250 idle, 750 busy split 1:2 */
	KUNIT_EXPECT_EQ(test, cge_split(1000, 1, 3, w, s, 2), 250ULL);
	KUNIT_EXPECT_EQ(test, s[0], 250ULL);
	KUNIT_EXPECT_EQ(test, s[1], 500ULL);
}

static void cge_t_one_uj_three_ways(struct kunit *test)
{
	u64 w[3] = { 1, 1, 1 }, s[3];
	u64 idle = cge_split(1, 0, 3, w, s, 3);

	KUNIT_EXPECT_EQ(test, idle, 0ULL);
	/* cumulative rounding: floor(1/3), floor(2/3) - 0, 1 - floor(2/3) */
	KUNIT_EXPECT_EQ(test, s[0], 0ULL);
	KUNIT_EXPECT_EQ(test, s[1], 0ULL);
	KUNIT_EXPECT_EQ(test, s[2], 1ULL);
	KUNIT_EXPECT_EQ(test, cge_t_sum(idle, s, 3), 1ULL);

	/* 2 µJ three ways: 0, 1, 1 */
	idle = cge_split(2, 0, 3, w, s, 3);
	KUNIT_EXPECT_EQ(test, s[0], 0ULL);
	KUNIT_EXPECT_EQ(test, s[1], 1ULL);
	KUNIT_EXPECT_EQ(test, s[2], 1ULL);
	KUNIT_EXPECT_EQ(test, cge_t_sum(idle, s, 3), 2ULL);
}

static void cge_t_all_idle(struct kunit *test)
{
	u64 w[2] = { 5, 7 }, s[2] = { 99, 99 };

	/* no busy time */
	KUNIT_EXPECT_EQ(test, cge_split(12345, 100, 0, w, s, 2), 12345ULL);
	KUNIT_EXPECT_EQ(test, s[0], 0ULL);
	KUNIT_EXPECT_EQ(test, s[1], 0ULL);
	/* no time at all */
	s[0] = 99;
	KUNIT_EXPECT_EQ(test, cge_split(12345, 0, 0, w, s, 2), 12345ULL);
	KUNIT_EXPECT_EQ(test, s[0], 0ULL);
	/* no consumers */
	KUNIT_EXPECT_EQ(test, cge_split(12345, 10, 10, NULL, NULL, 0),
			12345ULL);
	/* busy only, idle 0: idle share is 0 */
	KUNIT_EXPECT_EQ(test, cge_split(12345, 0, 10, w, s, 2), 0ULL);
	KUNIT_EXPECT_EQ(test, s[0] + s[1], 12345ULL);
}

static void cge_t_zero_weights(struct kunit *test)
{
	u64 w[3] = { 0, 0, 0 }, s[3] = { 1, 1, 1 };

	KUNIT_EXPECT_EQ(test, cge_split(999, 10, 90, w, s, 3), 999ULL);
	KUNIT_EXPECT_EQ(test, s[0] + s[1] + s[2], 0ULL);

	/* a zero weight gets nothing, the others everything busy */
	w[1] = 5;
	KUNIT_EXPECT_EQ(test, cge_split(1000, 10, 90, w, s, 3), 100ULL);
	KUNIT_EXPECT_EQ(test, s[0], 0ULL);
	KUNIT_EXPECT_EQ(test, s[1], 900ULL);
	KUNIT_EXPECT_EQ(test, s[2], 0ULL);
}

static void cge_t_energy_zero(struct kunit *test)
{
	u64 w[3] = { 3, 1, 4 }, s[3] = { 7, 7, 7 };

	KUNIT_EXPECT_EQ(test, cge_split(0, 10, 90, w, s, 3), 0ULL);
	KUNIT_EXPECT_EQ(test, s[0] + s[1] + s[2], 0ULL);
}

static void cge_t_weights_near_2_63(struct kunit *test)
{
	u64 w[3] = { (1ULL << 63) - 1, (1ULL << 63) - 1, (1ULL << 63) - 1 };
	u64 s[3], e = 1ULL << 63, idle, third = e / 3;
	unsigned int i;

	/* the weights sum beyond 2^64: equal weights still split equally */
	idle = cge_split(e, 0, 1, w, s, 3);
	KUNIT_EXPECT_EQ(test, idle, 0ULL);
	KUNIT_EXPECT_EQ(test, cge_t_sum(idle, s, 3), e);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_GE(test, s[i], third);
		KUNIT_EXPECT_LE(test, s[i], third + 1);
	}

	/*
	 * 2^63 : 1 needs the full 128-bit product: the small one gets
	 * 2^63 - floor(2^63 * 2^63 / (2^63 + 1)) = 1.
	 */
	w[0] = 1ULL << 63;
	w[1] = 1;
	idle = cge_split(e, 0, 1, w, s, 2);
	KUNIT_EXPECT_EQ(test, s[0], e - 1);
	KUNIT_EXPECT_EQ(test, s[1], 1ULL);
	KUNIT_EXPECT_EQ(test, cge_t_sum(idle, s, 2), e);

	/* maximal everything */
	w[0] = U64_MAX;
	w[1] = U64_MAX;
	w[2] = U64_MAX;
	idle = cge_split(U64_MAX, U64_MAX, U64_MAX, w, s, 3);
	KUNIT_EXPECT_EQ(test, cge_t_sum(idle, s, 3), U64_MAX);
	KUNIT_EXPECT_EQ(test, idle, U64_MAX / 2);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_LE(test, s[i] - (U64_MAX - idle) / 3, 1ULL);
}

static void cge_t_times_near_2_63(struct kunit *test)
{
	u64 w[2] = { 1, 1 }, s[2], idle;

	/* idle_ns + busy_ns overflows 64 bits */
	idle = cge_split(1000, 1ULL << 63, 1ULL << 63, w, s, 2);
	KUNIT_EXPECT_EQ(test, idle, 500ULL);
	KUNIT_EXPECT_EQ(test, s[0], 250ULL);
	KUNIT_EXPECT_EQ(test, s[1], 250ULL);

	idle = cge_split(1ULL << 62, 3ULL << 62, 1ULL << 62, w, s, 2);
	KUNIT_EXPECT_EQ(test, idle, 3ULL << 60);
	KUNIT_EXPECT_EQ(test, cge_t_sum(idle, s, 2), 1ULL << 62);
}

/* random-ish inputs over the full 64-bit range: the sum is always exact */
static void cge_t_sum_exact_random(struct kunit *test)
{
	u64 w[CGE_T_MAXN], s[CGE_T_MAXN], seed = 0x9e3779b97f4a7c15ULL;
	unsigned int it, i, n, bad = 0;

	for (it = 0; it < 3000; it++) {
		u64 e, idle_ns, busy_ns, idle, busy;
		/* vary magnitudes: 1 to 64 significant bits */
		unsigned int sh = cge_t_rand(&seed) % 64;

		n = 1 + cge_t_rand(&seed) % CGE_T_MAXN;
		e = cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64);
		idle_ns = cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64);
		busy_ns = cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64);
		for (i = 0; i < n; i++)
			w[i] = (it % 5 == 0 && i % 2) ? 0 :
			       cge_t_rand(&seed) >> sh;
		idle = cge_split(e, idle_ns, busy_ns, w, s, n);
		busy = e - idle;
		if (cge_t_sum(idle, s, n) != e || idle > e)
			bad++;
		for (i = 0; i < n; i++)
			if (s[i] > busy || (!w[i] && s[i]))
				bad++;
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
}

/* small inputs: every share equals the formula computed in plain u64 */
static void cge_t_formula_small(struct kunit *test)
{
	u64 w[CGE_T_MAXN], s[CGE_T_MAXN], seed = 12345;
	unsigned int it, i, n, bad = 0;

	for (it = 0; it < 2000; it++) {
		u64 e, idle_ns, busy_ns, idle, busy, wsum = 0, p = 0, prev = 0;

		n = 1 + cge_t_rand(&seed) % CGE_T_MAXN;
		e = cge_t_rand(&seed) % (1 << 20);
		idle_ns = cge_t_rand(&seed) % (1 << 20);
		busy_ns = 1 + cge_t_rand(&seed) % (1 << 20);
		for (i = 0; i < n; i++) {
			w[i] = cge_t_rand(&seed) % (1 << 20);
			wsum += w[i];
		}
		if (!wsum)
			continue;
		idle = cge_split(e, idle_ns, busy_ns, w, s, n);
		if (idle != e * idle_ns / (idle_ns + busy_ns))
			bad++;
		busy = e - idle;
		for (i = 0; i < n; i++) {
			u64 cur;

			p += w[i];
			cur = busy * p / wsum;
			if (s[i] != cur - prev)
				bad++;
			prev = cur;
		}
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
}

/*
 * split=time: with weights = CPU times, a share is E * t / (idle + busy)
 * within 1, when the busy energy is a whole number (E * busy divisible by
 * the total time).
 */
static void cge_t_time_equivalence(struct kunit *test)
{
	u64 t[4] = { 100, 250, 333, 17 }, s[4], idle_ns = 300, busy_ns = 700;
	u64 total = idle_ns + busy_ns, e, idle;
	unsigned int i, k;

	for (k = 1; k <= 50; k++) {
		e = total * (k * 7919);
		idle = cge_split(e, idle_ns, busy_ns, t, s, 4);
		KUNIT_EXPECT_EQ(test, idle, e * idle_ns / total);
		for (i = 0; i < 4; i++) {
			/* |share * total - e * t| < total */
			u64 a = s[i] * total, b = e * t[i];

			KUNIT_EXPECT_LT(test, a > b ? a - b : b - a, total);
		}
		KUNIT_EXPECT_EQ(test, cge_t_sum(idle, s, 4), e);
	}
}

/*
 * split=time, any inputs: |share - E * t / T| < 1 + t / busy (the busy
 * energy itself is rounded once), i.e. within 1 up to that small term.
 */
static void cge_t_time_equivalence_random(struct kunit *test)
{
	u64 t[CGE_T_MAXN], s[CGE_T_MAXN], seed = 777;
	unsigned int it, i, n, bad = 0;

	for (it = 0; it < 2000; it++) {
		u64 e, idle_ns, busy_ns = 0, total;

		n = 1 + cge_t_rand(&seed) % CGE_T_MAXN;
		e = cge_t_rand(&seed) % 1000000;
		idle_ns = cge_t_rand(&seed) % 100000;
		for (i = 0; i < n; i++) {
			t[i] = 1 + cge_t_rand(&seed) % 100000;
			busy_ns += t[i];
		}
		total = idle_ns + busy_ns;
		cge_split(e, idle_ns, busy_ns, t, s, n);
		for (i = 0; i < n; i++) {
			/* all < 2^63: e < 2^20, t, busy, total < 2^21 */
			u64 lhs = s[i] * total * busy_ns;
			u64 ideal = e * t[i] * busy_ns;
			u64 tol = total * busy_ns + total * t[i];

			if (lhs + total * busy_ns <= ideal ||
			    lhs >= ideal + tol)
				bad++;
		}
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
}

/* idle, then each kind by time; the tasks' part by weight */
static void cge_t_kinds_by_time(struct kunit *test)
{
	u64 kind[3] = { 100, 200, 0 }, ks[3], w[2] = { 1, 3 }, s[2], idle;

	idle = cge_split_kinds(1000, 100, kind, ks, 3, 600, w, s, 2);
	KUNIT_EXPECT_EQ(test, idle, 100ULL);
	KUNIT_EXPECT_EQ(test, ks[0], 100ULL);
	KUNIT_EXPECT_EQ(test, ks[1], 200ULL);
	KUNIT_EXPECT_EQ(test, ks[2], 0ULL);
	KUNIT_EXPECT_EQ(test, s[0], 150ULL);
	KUNIT_EXPECT_EQ(test, s[1], 450ULL);
	/* no task time: the tasks' part is 0, the kinds keep theirs */
	idle = cge_split_kinds(1000, 100, kind, ks, 3, 0, w, s, 2);
	KUNIT_EXPECT_EQ(test, idle + ks[0] + ks[1] + ks[2], 1000ULL);
	KUNIT_EXPECT_EQ(test, ks[1], 2 * ks[0]);
	KUNIT_EXPECT_EQ(test, s[0] + s[1], 0ULL);
}

/* with no kinds, cge_split_kinds() is cge_split(), share for share */
static void cge_t_kinds_none_is_split(struct kunit *test)
{
	u64 w[CGE_T_MAXN], s1[CGE_T_MAXN], s2[CGE_T_MAXN], seed = 777;
	unsigned int it, i, n, bad = 0;

	for (it = 0; it < 2000; it++) {
		u64 e, idle_ns, busy_ns;

		n = 1 + cge_t_rand(&seed) % CGE_T_MAXN;
		e = cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64);
		idle_ns = cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64);
		busy_ns = cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64);
		for (i = 0; i < n; i++)
			w[i] = cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64);
		if (cge_split(e, idle_ns, busy_ns, w, s1, n) !=
		    cge_split_kinds(e, idle_ns, NULL, NULL, 0, busy_ns, w, s2,
				    n))
			bad++;
		for (i = 0; i < n; i++)
			if (s1[i] != s2[i])
				bad++;
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
}

/* every unit goes somewhere, for any inputs, times near 2^64 included */
static void cge_t_kinds_sum_exact(struct kunit *test)
{
	u64 w[CGE_T_MAXN], s[CGE_T_MAXN], kind[3], ks[3], seed = 4242;
	unsigned int it, i, n, bad = 0;

	for (it = 0; it < 3000; it++) {
		u64 e, idle_ns, busy_ns, idle, sum;

		n = 1 + cge_t_rand(&seed) % CGE_T_MAXN;
		e = cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64);
		idle_ns = cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64);
		busy_ns = it % 7 ? cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64) :
			  U64_MAX;
		for (i = 0; i < 3; i++)
			kind[i] = it % 11 ? cge_t_rand(&seed) >> (it % 64) :
				  U64_MAX - i;
		for (i = 0; i < n; i++)
			w[i] = cge_t_rand(&seed) >> (cge_t_rand(&seed) % 64);
		idle = cge_split_kinds(e, idle_ns, kind, ks, 3, busy_ns, w, s,
				       n);
		sum = cge_t_sum(idle, s, n) + ks[0] + ks[1] + ks[2];
		if (sum != e)
			bad++;
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
}

static struct kunit_case cge_split_cases[] = {
	KUNIT_CASE(cge_t_mul_div),
	KUNIT_CASE(cge_t_basic),
	KUNIT_CASE(cge_t_one_uj_three_ways),
	KUNIT_CASE(cge_t_all_idle),
	KUNIT_CASE(cge_t_zero_weights),
	KUNIT_CASE(cge_t_energy_zero),
	KUNIT_CASE(cge_t_weights_near_2_63),
	KUNIT_CASE(cge_t_times_near_2_63),
	KUNIT_CASE(cge_t_sum_exact_random),
	KUNIT_CASE(cge_t_formula_small),
	KUNIT_CASE(cge_t_time_equivalence),
	KUNIT_CASE(cge_t_time_equivalence_random),
	KUNIT_CASE(cge_t_kinds_by_time),
	KUNIT_CASE(cge_t_kinds_none_is_split),
	KUNIT_CASE(cge_t_kinds_sum_exact),
	{}
};

static struct kunit_suite cge_split_suite = {
	.name = "cge_split",
	.test_cases = cge_split_cases,
};

kunit_test_suite(cge_split_suite);

MODULE_LICENSE("GPL");
