// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kmod/model.c: the power model used without RAPL.
 */
#include <kunit/test.h>
#include <linux/errno.h>

#include "model.h"

/* Cloud Carbon Footprint per-vCPU averages: 0.74 W idle, 3.5 W busy */
#define CGE_T_IDLE	740
#define CGE_T_BUSY	3500
/* 4 CPUs, 100 ms interval */
#define CGE_T_CAP	(4ULL * 100000000ULL)

static void cge_t_idle_only(struct kunit *test)
{
	struct cge_model m = { 0 };

	/* 0.74 W * 4 CPUs * 0.1 s = 0.296 J */
	KUNIT_EXPECT_EQ(test, cge_model_energy_uj(&m, CGE_T_IDLE, CGE_T_BUSY,
						  CGE_T_CAP, 0), 296000ULL);
	KUNIT_EXPECT_EQ(test, m.rem, 0ULL);
}

static void cge_t_fully_busy(struct kunit *test)
{
	struct cge_model m = { 0 };

	/* 3.5 W * 4 * 0.1 s = 1.4 J */
	KUNIT_EXPECT_EQ(test, cge_model_energy_uj(&m, CGE_T_IDLE, CGE_T_BUSY,
						  CGE_T_CAP, CGE_T_CAP),
			1400000ULL);
	/* busy beyond capacity is clamped */
	KUNIT_EXPECT_EQ(test, cge_model_energy_uj(&m, CGE_T_IDLE, CGE_T_BUSY,
						  CGE_T_CAP, 3 * CGE_T_CAP),
			1400000ULL);
}

static void cge_t_half_busy(struct kunit *test)
{
	struct cge_model m = { 0 };

	/* 0.296 J idle floor + (3.5 - 0.74) W * 0.2 CPU-s = 0.848 J */
	KUNIT_EXPECT_EQ(test, cge_model_energy_uj(&m, CGE_T_IDLE, CGE_T_BUSY,
						  CGE_T_CAP, CGE_T_CAP / 2),
			848000ULL);
	/* same as the mean of idle and busy power */
	KUNIT_EXPECT_EQ(test, 848000ULL, (296000ULL + 1400000ULL) / 2);
}

static void cge_t_zero(struct kunit *test)
{
	struct cge_model m = { 0 };

	KUNIT_EXPECT_EQ(test, cge_model_energy_uj(&m, 0, 0, CGE_T_CAP,
						  CGE_T_CAP), 0ULL);
	KUNIT_EXPECT_EQ(test, cge_model_energy_uj(&m, CGE_T_IDLE, CGE_T_BUSY,
						  0, 0), 0ULL);
}

/*
 * 1000 intervals of awkward lengths: the sum of the µJ returned equals the
 * closed form over the total, exactly; what is left is the sub-µJ part.
 */
static void cge_t_remainder_1000(struct kunit *test)
{
	struct cge_model m = { 0 };
	const u32 idle = 741, busy = 3499;
	u64 sum = 0, cap_total = 0, busy_total = 0, closed;
	u64 cap = 333333337, b = 123456789;
	unsigned int i;

	for (i = 0; i < 1000; i++) {
		/* vary the interval a little, as a real timer does */
		u64 c = cap + (i % 7) * 1013, bn = b + (i % 11) * 977;

		sum += cge_model_energy_uj(&m, idle, busy, c, bn);
		cap_total += c;
		busy_total += bn;
	}
	/* mW * ns, < 2^63 here */
	closed = (u64)idle * cap_total + (u64)(busy - idle) * busy_total;
	KUNIT_EXPECT_EQ(test, sum, closed / 1000000);
	KUNIT_EXPECT_EQ(test, m.rem, closed % 1000000);
	/* rounding each interval separately would have lost energy */
	KUNIT_EXPECT_GT(test, closed / 1000000,
			1000 * (((u64)idle * cap + (u64)(busy - idle) * b) /
				1000000));
}

/* the documented range: capacity up to 2^48 CPU-ns, 10^7 mW per CPU */
static void cge_t_no_overflow(struct kunit *test)
{
	struct cge_model m = { 0 };
	u64 cap = 1ULL << 48;

	/* 10^7 mW * 2^48 ns = 10 * 2^48 µJ */
	KUNIT_EXPECT_EQ(test, cge_model_energy_uj(&m, CGE_MODEL_MAX_MW,
						  CGE_MODEL_MAX_MW, cap, cap),
			10ULL << 48);
	KUNIT_EXPECT_EQ(test, cge_model_energy_uj(&m, 0, CGE_MODEL_MAX_MW,
						  cap, cap - 1),
			10 * (cap - 1));
	KUNIT_EXPECT_EQ(test, m.rem, 0ULL);
	/* 1 * 2^48 + (10^7 - 1) * 2^47 mW*ns, ~2^70: computed offline */
	KUNIT_EXPECT_EQ(test, cge_model_energy_uj(&m, 1, CGE_MODEL_MAX_MW,
						  cap, cap / 2),
			1407375024290768ULL);
	KUNIT_EXPECT_EQ(test, m.rem, 355328ULL);
}

static void cge_t_validate(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, cge_model_validate(CGE_T_IDLE, CGE_T_BUSY), 0);
	KUNIT_EXPECT_EQ(test, cge_model_validate(1000, 1000), 0);
	KUNIT_EXPECT_EQ(test, cge_model_validate(0, 0), 0);
	KUNIT_EXPECT_EQ(test, cge_model_validate(0, CGE_MODEL_MAX_MW), 0);
	KUNIT_EXPECT_EQ(test, cge_model_validate(CGE_T_BUSY, CGE_T_IDLE),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, cge_model_validate(0, CGE_MODEL_MAX_MW + 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, cge_model_validate(CGE_MODEL_MAX_MW + 1,
						 CGE_MODEL_MAX_MW + 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, cge_model_validate(0, U32_MAX), -EINVAL);
}

/* callers reject busy < idle; if one slips through, no busy increment */
static void cge_t_busy_below_idle(struct kunit *test)
{
	struct cge_model m = { 0 };

	KUNIT_EXPECT_EQ(test, cge_model_energy_uj(&m, CGE_T_BUSY, CGE_T_IDLE,
						  CGE_T_CAP, CGE_T_CAP),
			1400000ULL);
}

static struct kunit_case cge_model_cases[] = {
	KUNIT_CASE(cge_t_idle_only),
	KUNIT_CASE(cge_t_fully_busy),
	KUNIT_CASE(cge_t_half_busy),
	KUNIT_CASE(cge_t_zero),
	KUNIT_CASE(cge_t_remainder_1000),
	KUNIT_CASE(cge_t_no_overflow),
	KUNIT_CASE(cge_t_validate),
	KUNIT_CASE(cge_t_busy_below_idle),
	{}
};

static struct kunit_suite cge_model_suite = {
	.name = "cge_model",
	.test_cases = cge_model_cases,
};

kunit_test_suite(cge_model_suite);

MODULE_LICENSE("GPL");
