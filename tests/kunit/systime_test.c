// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kmod/systime.c: interrupt, softirq and steal time taken
 * out of a CPU's non-task time, never more than it had.
 */
#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/limits.h>

#include "systime.h"

/* all fits: each kind whole, idle what is left */
static void cge_t_carve_fits(struct kunit *test)
{
	u64 d[CGE_SYS_NR] = { 4000000, 8000000, 0 }, out[CGE_SYS_NR];
	u64 idle = 100000000;

	cge_systime_carve(d, &idle, out);
	KUNIT_EXPECT_EQ(test, out[CGE_SYS_IRQ], 4000000ULL);
	KUNIT_EXPECT_EQ(test, out[CGE_SYS_SOFTIRQ], 8000000ULL);
	KUNIT_EXPECT_EQ(test, out[CGE_SYS_STEAL], 0ULL);
	KUNIT_EXPECT_EQ(test, idle, 88000000ULL);
}

/*
 * A busy CPU whose tick samples fell in interrupts that tasks were charged
 * for: no more than the non-task time, in the order irq, softirq, steal.
 */
static void cge_t_carve_clamps(struct kunit *test)
{
	u64 d[CGE_SYS_NR] = { 4000000, 8000000, 4000000 }, out[CGE_SYS_NR];
	u64 idle = 6000000;

	cge_systime_carve(d, &idle, out);
	KUNIT_EXPECT_EQ(test, out[CGE_SYS_IRQ], 4000000ULL);
	KUNIT_EXPECT_EQ(test, out[CGE_SYS_SOFTIRQ], 2000000ULL);
	KUNIT_EXPECT_EQ(test, out[CGE_SYS_STEAL], 0ULL);
	KUNIT_EXPECT_EQ(test, idle, 0ULL);

	idle = 0;
	cge_systime_carve(d, &idle, out);
	KUNIT_EXPECT_EQ(test, out[0] + out[1] + out[2], 0ULL);
}

/* the parts and the idle left sum to the idle given, at the limits too */
static void cge_t_carve_sum(struct kunit *test)
{
	u64 d[CGE_SYS_NR] = { U64_MAX, U64_MAX, U64_MAX }, out[CGE_SYS_NR];
	u64 idle = U64_MAX - 1;

	cge_systime_carve(d, &idle, out);
	KUNIT_EXPECT_EQ(test, out[CGE_SYS_IRQ], U64_MAX - 1);
	KUNIT_EXPECT_EQ(test, out[1] + out[2] + idle, 0ULL);
}

/*
 * Tick samples (no IRQ_TIME_ACCOUNTING): of the CPU's 12 ms of sampled
 * interrupt time, the 8 ms the idle task's stime rose by are the part no
 * task was charged for, shared 1:2 as irq and softirq rose.
 */
static void cge_t_sampled_share(struct kunit *test)
{
	u64 d[CGE_SYS_NR] = { 4000000, 8000000, 1000 };

	cge_systime_sampled(6000000, d);
	KUNIT_EXPECT_EQ(test, d[CGE_SYS_IRQ], 2000000ULL);
	KUNIT_EXPECT_EQ(test, d[CGE_SYS_SOFTIRQ], 4000000ULL);
	KUNIT_EXPECT_EQ(test, d[CGE_SYS_STEAL], 1000ULL);	/* untouched */
}

/* never more than the counters rose, and nothing when they did not */
static void cge_t_sampled_bounded(struct kunit *test)
{
	u64 d[CGE_SYS_NR] = { 4000000, 0, 0 };

	cge_systime_sampled(12000000, d);	/* a bh-disabled idle tick too */
	KUNIT_EXPECT_EQ(test, d[CGE_SYS_IRQ], 4000000ULL);
	KUNIT_EXPECT_EQ(test, d[CGE_SYS_SOFTIRQ], 0ULL);

	d[CGE_SYS_IRQ] = 0;
	cge_systime_sampled(4000000, d);
	KUNIT_EXPECT_EQ(test, d[CGE_SYS_IRQ] + d[CGE_SYS_SOFTIRQ], 0ULL);

	/* a busy CPU: its samples hit tasks, the idle task's stime is flat */
	d[CGE_SYS_IRQ] = 4000000;
	d[CGE_SYS_SOFTIRQ] = 8000000;
	cge_systime_sampled(0, d);
	KUNIT_EXPECT_EQ(test, d[CGE_SYS_IRQ] + d[CGE_SYS_SOFTIRQ], 0ULL);
}

static struct kunit_case cge_systime_cases[] = {
	KUNIT_CASE(cge_t_carve_fits),
	KUNIT_CASE(cge_t_carve_clamps),
	KUNIT_CASE(cge_t_carve_sum),
	KUNIT_CASE(cge_t_sampled_share),
	KUNIT_CASE(cge_t_sampled_bounded),
	{}
};

static struct kunit_suite cge_systime_suite = {
	.name = "cge_systime",
	.test_cases = cge_systime_cases,
};

kunit_test_suite(cge_systime_suite);

MODULE_LICENSE("GPL");
