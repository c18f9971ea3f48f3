// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kmod/total.c: totals that never wrap.
 */
#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/limits.h>

#include "total.h"

static void cge_t_sat_add(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, cge_sat_add(1, 2), 3ULL);
	KUNIT_EXPECT_EQ(test, cge_sat_add(U64_MAX - 1, 1), U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_sat_add(U64_MAX - 1, 2), U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_sat_add(U64_MAX, U64_MAX), U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_sat_add(U64_MAX, 0), U64_MAX);
}

/* Nanoseconds carried exactly: the total is floor(all added / 1000). */
static void cge_t_time_exact(struct kunit *test)
{
	struct cge_time_total t = {};
	unsigned int i;

	for (i = 0; i < 999; i++)
		cge_time_add(&t, 1);
	KUNIT_EXPECT_EQ(test, t.us, 0ULL);
	KUNIT_EXPECT_EQ(test, t.rem_ns, 999U);
	cge_time_add(&t, 1);
	KUNIT_EXPECT_EQ(test, t.us, 1ULL);
	KUNIT_EXPECT_EQ(test, t.rem_ns, 0U);
	/* 1,999,999 ns and 1 ns: exactly 2,001 µs */
	cge_time_add(&t, 1999999);
	KUNIT_EXPECT_EQ(test, t.us, 2000ULL);
	KUNIT_EXPECT_EQ(test, t.rem_ns, 999U);
	cge_time_add(&t, 1);
	KUNIT_EXPECT_EQ(test, t.us, 2001ULL);
	KUNIT_EXPECT_EQ(test, t.rem_ns, 0U);
}

/*
 * Random adds below 2^40 ns against a reference kept differently: whole
 * seconds and the nanoseconds below them.
 */
static void cge_t_time_random(struct kunit *test)
{
	struct cge_time_total t = {};
	u64 s = 0x9e3779b97f4a7c15ULL, ref_s = 0, ref_ns = 0, x;
	unsigned int i, bad = 0;

	for (i = 0; i < 100000; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		x = s >> (24 + (s & 31));
		cge_time_add(&t, x);
		ref_s += x / 1000000000;
		ref_ns += x % 1000000000;
		if (ref_ns >= 1000000000) {
			ref_ns -= 1000000000;
			ref_s++;
		}
		bad += t.us != ref_s * 1000000 + ref_ns / 1000 ||
		       t.rem_ns != ref_ns % 1000;
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
}

/*
 * More than 2^64 µs in all: the total stops at U64_MAX and never
 * decreases; a nanosecond total would have wrapped long before.
 */
static void cge_t_time_saturates(struct kunit *test)
{
	struct cge_time_total t = {};
	u64 prev = 0;
	unsigned int i, decreased = 0;

	for (i = 0; i < 2100; i++) {
		cge_time_add(&t, U64_MAX);
		decreased += t.us < prev;
		prev = t.us;
	}
	KUNIT_EXPECT_EQ(test, decreased, 0U);
	KUNIT_EXPECT_EQ(test, t.us, U64_MAX);
	KUNIT_EXPECT_LT(test, t.rem_ns, 1000U);
	cge_time_add(&t, 1000);
	KUNIT_EXPECT_EQ(test, t.us, U64_MAX);
}

/* Adding U64_MAX ns once is 18,446,744,073,709,551 µs and 615 ns. */
static void cge_t_time_max_once(struct kunit *test)
{
	struct cge_time_total t = {};

	cge_time_add(&t, U64_MAX);
	KUNIT_EXPECT_EQ(test, t.us, U64_MAX / 1000);
	KUNIT_EXPECT_EQ(test, t.rem_ns, 615U);
	cge_time_add(&t, 385);
	KUNIT_EXPECT_EQ(test, t.us, U64_MAX / 1000 + 1);
	KUNIT_EXPECT_EQ(test, t.rem_ns, 0U);
}

static struct kunit_case cge_total_cases[] = {
	KUNIT_CASE(cge_t_sat_add),
	KUNIT_CASE(cge_t_time_exact),
	KUNIT_CASE(cge_t_time_random),
	KUNIT_CASE(cge_t_time_saturates),
	KUNIT_CASE(cge_t_time_max_once),
	{}
};

static struct kunit_suite cge_total_suite = {
	.name = "cge_total",
	.test_cases = cge_total_cases,
};

kunit_test_suite(cge_total_suite);

MODULE_LICENSE("GPL");
