// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kmod/power.c: power averages over 10 s, 60 s and 300 s.
 * Expected values are the closed forms (P * (1 - exp(-t / T)), decay by
 * exp(-gap / T)) evaluated in floating point outside the kernel.
 */
#include <kunit/test.h>
#include <linux/math64.h>
#include <linux/time64.h>

#include "power.h"

#define CGE_T_STEP	(100 * NSEC_PER_MSEC)

static u64 cge_t_diff(u64 a, u64 b)
{
	return a > b ? a - b : b - a;
}

static void cge_t_add(struct cge_power *p, struct cge_power_step *s,
		      u64 uj)
{
	u64 inc[CGE_POWER_NR];

	cge_power_charge(s, uj, inc);
	cge_power_add(p, s, inc);
}

/* Charge @uj per step of @step_ns for @n steps from @t; returns the end. */
static u64 cge_t_run(struct cge_power *p, u64 t, u64 step_ns, unsigned int n,
		     u64 uj)
{
	struct cge_power_step s;

	while (n--) {
		cge_power_step(&s, t, t + step_ns);
		cge_t_add(p, &s, uj);
		t += step_ns;
	}
	return t;
}

static void cge_t_expect_mw(struct kunit *test, const struct cge_power *p,
			    u64 at, u64 w10, u64 w60, u64 w300)
{
	u64 mw[CGE_POWER_NR];

	cge_power_read(p, at, mw);
	/* within 1 mW of the closed form (rounded to the nearest mW) */
	KUNIT_EXPECT_LE(test, cge_t_diff(mw[0], w10), 1ULL);
	KUNIT_EXPECT_LE(test, cge_t_diff(mw[1], w60), 1ULL);
	KUNIT_EXPECT_LE(test, cge_t_diff(mw[2], w300), 1ULL);
}

static void cge_t_decay(struct kunit *test)
{
	u32 d10 = cge_power_decay(10 * NSEC_PER_SEC, 0);
	u32 d60 = cge_power_decay(60 * NSEC_PER_SEC, 1);
	u32 d300 = cge_power_decay(300 * NSEC_PER_SEC, 2);

	/* exp(-1) * 2^32 = 1580030168.70, within 1 */
	KUNIT_EXPECT_LE(test, cge_t_diff(d10, 1580030169U), 1ULL);
	KUNIT_EXPECT_LE(test, cge_t_diff(d60, 1580030169U), 1ULL);
	KUNIT_EXPECT_LE(test, cge_t_diff(d300, 1580030169U), 1ULL);
	/* under a microsecond: nothing; an hour: everything (exp(-360)) */
	KUNIT_EXPECT_EQ(test, cge_power_decay(999, 0), 0xffffffffU);
	KUNIT_EXPECT_EQ(test, cge_power_decay(3600 * NSEC_PER_SEC, 0), 0U);
}

/* 5 W from 0 for 30 s: P * (1 - exp(-30 / T)) = 4751.1, 1967.3, 475.8 mW */
static void cge_t_rise(struct kunit *test)
{
	struct cge_power p = { 0 };
	u64 t = 1000 * NSEC_PER_SEC;

	p.at_ns = t;
	t = cge_t_run(&p, t, CGE_T_STEP, 300, 500000);
	cge_t_expect_mw(test, &p, t, 4751, 1967, 476);
}

/* 5 W for 3,000 s: every average is 5 W (4999.8 mW for 300 s) */
static void cge_t_steady(struct kunit *test)
{
	struct cge_power p = { 0 };
	u64 t = cge_t_run(&p, 0, CGE_T_STEP, 30000, 500000);

	cge_t_expect_mw(test, &p, t, 5000, 5000, 5000);
}

/* The same 5 W in steps of 10 ms or of 1 s: the same averages at 30 s. */
static void cge_t_step_length(struct kunit *test)
{
	struct cge_power a = { .at_ns = 1 }, b = { .at_ns = 1 };
	u64 ta = cge_t_run(&a, 1, 10 * NSEC_PER_MSEC, 3000, 50000);
	u64 tb = cge_t_run(&b, 1, NSEC_PER_SEC, 30, 5000000);

	KUNIT_EXPECT_EQ(test, ta, tb);
	cge_t_expect_mw(test, &a, ta, 4751, 1967, 476);
	cge_t_expect_mw(test, &b, tb, 4751, 1967, 476);
}

/*
 * After 30 s at 5 W, 10 s with nothing charged: read then, the averages
 * have decayed by exp(-10 / T): 1747.8, 1665.3, 460.2 mW; charged again
 * after the gap, they decay over it first.
 */
static void cge_t_gap(struct kunit *test)
{
	struct cge_power p = { .at_ns = 1 }, q;
	struct cge_power_step s;
	u64 t = cge_t_run(&p, 1, CGE_T_STEP, 300, 500000);

	q = p;
	cge_t_expect_mw(test, &p, t + 10 * NSEC_PER_SEC, 1748, 1665, 460);
	/* read before its time: no decay */
	cge_t_expect_mw(test, &p, t - NSEC_PER_SEC, 4751, 1967, 476);
	/* a charge of 0 changes nothing */
	cge_power_step(&s, t + 9900 * NSEC_PER_MSEC, t + 10 * NSEC_PER_SEC);
	cge_t_add(&q, &s, 0);
	KUNIT_EXPECT_EQ(test, q.at_ns, p.at_ns);
	/* 1 µJ at the end of the gap: the decayed averages, plus 10 µW */
	cge_t_add(&q, &s, 1);
	cge_t_expect_mw(test, &q, t + 10 * NSEC_PER_SEC, 1748, 1665, 460);
	KUNIT_EXPECT_EQ(test, q.at_ns, t + 10 * NSEC_PER_SEC);
}

/* Two charges of one interval are one charge of their sum. */
static void cge_t_linear(struct kunit *test)
{
	struct cge_power a = { .at_ns = 1 }, b = { .at_ns = 1 };
	struct cge_power_step s;
	u64 t = cge_t_run(&a, 1, CGE_T_STEP, 50, 300000);
	unsigned int k;

	cge_t_run(&b, 1, CGE_T_STEP, 50, 300000);
	cge_power_step(&s, t, t + CGE_T_STEP);
	cge_t_add(&a, &s, 300000);
	cge_t_add(&b, &s, 100000);
	cge_t_add(&b, &s, 200000);
	for (k = 0; k < CGE_POWER_NR; k++)
		KUNIT_EXPECT_LE(test, cge_t_diff(a.avg_nw[k], b.avg_nw[k]), 1ULL);
}

/*
 * 512 CPUs at the model's 10 kW each for one 10 s interval: 51.2 MJ.
 * avg10 = 5.12 GW * (1 - exp(-1)) = 3236457261 mW, with no overflow.
 */
static void cge_t_no_overflow(struct kunit *test)
{
	struct cge_power p = { .at_ns = NSEC_PER_SEC };
	struct cge_power_step s;
	u64 mw[CGE_POWER_NR];

	cge_power_step(&s, NSEC_PER_SEC, 11 * NSEC_PER_SEC);
	cge_t_add(&p, &s, 51200000000000ULL);
	cge_power_read(&p, 11 * NSEC_PER_SEC, mw);
	KUNIT_EXPECT_LE(test, cge_t_diff(mw[0], 3236457261ULL), 3236ULL);
}

/*
 * 1 MJ in 1 µs: 1 TW, past the 18 GW that 64 bits of nW hold. The power is
 * held at 2^64 - 1 nW, with no divide error: avg10 = that * (1 - exp(-1 µs
 * / 10 s)) = 1844674 mW, to a step of the decay factor (2^-32 in 429.5:
 * 0.23 %, 4295 mW).
 */
static void cge_t_too_much_power(struct kunit *test)
{
	struct cge_power p = { .at_ns = NSEC_PER_SEC };
	struct cge_power_step s;
	u64 mw[CGE_POWER_NR];

	cge_power_step(&s, NSEC_PER_SEC, NSEC_PER_SEC + NSEC_PER_USEC);
	cge_t_add(&p, &s, 1000000000000ULL);
	cge_power_read(&p, NSEC_PER_SEC + NSEC_PER_USEC, mw);
	KUNIT_EXPECT_LE(test, cge_t_diff(mw[0], 1844674ULL), 4295ULL);
}

/* An interval of no length charges nothing. */
static void cge_t_empty_step(struct kunit *test)
{
	struct cge_power p = { 0 };
	struct cge_power_step s;

	cge_power_step(&s, 5, 5);
	cge_t_add(&p, &s, 1000);
	KUNIT_EXPECT_EQ(test, p.at_ns, 0ULL);
	KUNIT_EXPECT_EQ(test, p.avg_nw[0], 0ULL);
}

/*
 * Averages last charged at seven times before the step's start (one of
 * them 0), in an order that makes a step keep and replace more gaps than
 * it holds (CGE_POWER_GAPS), and one at its start: each decays as
 * cge_power_decay() over its own gap gives.
 */
static void cge_t_gap_memo(struct kunit *test)
{
	static const unsigned int at_s[] = { 3, 0, 5, 3, 7, 11, 13, 5, 17, 0,
					     3, 19 };
	u64 end = 20ULL * NSEC_PER_SEC, inc[CGE_POWER_NR], gap, want;
	struct cge_power_step s;
	struct cge_power p;
	unsigned int i, k;

	cge_power_step(&s, end - NSEC_PER_SEC, end);
	cge_power_charge(&s, 1000, inc);
	for (i = 0; i < ARRAY_SIZE(at_s); i++) {
		p.at_ns = (u64)at_s[i] * NSEC_PER_SEC;
		gap = end - p.at_ns;
		for (k = 0; k < CGE_POWER_NR; k++)
			p.avg_nw[k] = 1000000000000ULL;
		cge_power_add(&p, &s, inc);
		KUNIT_EXPECT_EQ(test, p.at_ns, end);
		for (k = 0; k < CGE_POWER_NR; k++) {
			want = mul_u64_u32_shr(1000000000000ULL,
					       cge_power_decay(gap, k), 32) +
			       inc[k];
			KUNIT_EXPECT_EQ(test, p.avg_nw[k], want);
		}
	}
}

static struct kunit_case cge_power_cases[] = {
	KUNIT_CASE(cge_t_decay),
	KUNIT_CASE(cge_t_rise),
	KUNIT_CASE(cge_t_steady),
	KUNIT_CASE(cge_t_step_length),
	KUNIT_CASE(cge_t_gap),
	KUNIT_CASE(cge_t_linear),
	KUNIT_CASE(cge_t_gap_memo),
	KUNIT_CASE(cge_t_no_overflow),
	KUNIT_CASE(cge_t_too_much_power),
	KUNIT_CASE(cge_t_empty_step),
	{}
};

static struct kunit_suite cge_power_suite = {
	.name = "cge_power",
	.test_cases = cge_power_cases,
};

kunit_test_suite(cge_power_suite);

MODULE_LICENSE("GPL");
