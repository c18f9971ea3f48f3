// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kmod/impact.c: Apple's Energy Impact formula and the
 * fixed-point text of its coefficients.
 */
#include <kunit/test.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/string.h>

#include "impact.h"

/* untouched-output canary */
#define CGE_T_CANARY	0xdeadbeefcafef00dULL
/* the parameters' bounds: 10.0 for the time coefficients, 0.01 for wakeups */
#define CGE_T_MAX_TIME	CGE_COEF_MAX_TIME
#define CGE_T_MAX_WAKE	CGE_COEF_MAX_WAKEUP
/* ns in one second */
#define CGE_T_SEC	1000000000ULL

struct cge_t_parse {
	const char *s;
	u64 v;
};

/* xorshift64: a reproducible stream of random-ish inputs */
static u64 cge_t_rand(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* expect @s to parse to @v under @max */
static void cge_t_ok(struct kunit *test, const char *s, u64 max, u64 v)
{
	u64 out = CGE_T_CANARY;

	KUNIT_EXPECT_EQ_MSG(test, cge_coef_parse(s, max, &out), 0,
			    "parse \"%s\"", s);
	KUNIT_EXPECT_EQ_MSG(test, out, v, "parse \"%s\"", s);
}

/* expect @s to be refused under @max, with the output untouched */
static void cge_t_bad(struct kunit *test, const char *s, u64 max)
{
	u64 out = CGE_T_CANARY;

	KUNIT_EXPECT_EQ_MSG(test, cge_coef_parse(s, max, &out), -EINVAL,
			    "parse \"%s\"", s);
	KUNIT_EXPECT_EQ_MSG(test, out, CGE_T_CANARY, "parse \"%s\"", s);
}

static void cge_t_parse_forms(struct kunit *test)
{
	static const struct cge_t_parse ok[] = {
		{ "1", 1000000000 },
		{ "1.0", 1000000000 },
		{ "1.", 1000000000 },
		{ "+1", 1000000000 },
		{ "01", 1000000000 },
		{ "1e0", 1000000000 },
		{ "0.1e1", 1000000000 },
		{ "100e-2", 1000000000 },
		{ "0.0002", 200000 },
		{ "2e-4", 200000 },
		{ "2E-4", 200000 },
		{ "2.0e-4", 200000 },
		{ "0.2e-3", 200000 },
		{ "200000e-9", 200000 },
		{ ".5", 500000000 },
		{ "0.8", 800000000 },
		{ "8e-1", 800000000 },
		{ "8E-1", 800000000 },
		{ ".8e0", 800000000 },
		{ "0", 0 },
		{ "0.0", 0 },
		{ ".0", 0 },
		{ "0e5", 0 },
		{ "1e-9", 1 },
		{ "0.000000001", 1 },
		{ "1000", 1000000000000ULL },
		{ "1e3", 1000000000000ULL },
		{ "1e+3", 1000000000000ULL },
		{ "1.5", 1500000000 },
		{ "123.456789012", 123456789012ULL },
		/* surrounding whitespace, the newline of a sysfs write */
		{ "1\n", 1000000000 },
		{ "0.8\n", 800000000 },
		{ " 2e-4", 200000 },
		{ "\t2e-4\t", 200000 },
		{ " 8e-1\r\n", 800000000 },
		{ "  .5  ", 500000000 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ok); i++)
		cge_t_ok(test, ok[i].s, U64_MAX, ok[i].v);
}

static void cge_t_parse_rounding(struct kunit *test)
{
	static const struct cge_t_parse ok[] = {
		{ "0.0000000005", 1 },
		{ "0.0000000004", 0 },
		{ "0.00000000049999999999", 0 },
		{ "0.00000000050000000000", 1 },
		{ "1.9999999995", 2000000000 },
		{ "1.9999999994999", 1999999999 },
		{ "5e-10", 1 },
		{ "4.9e-10", 0 },
		{ "1e-10", 0 },
		{ "15e-10", 2 },
		{ "25e-10", 3 },
		{ "0.00019999999951", 200000 },
		{ "0.79999999949", 799999999 },
		{ "1e-999999", 0 },
		{ "1e-99999999999999999999999", 0 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ok); i++)
		cge_t_ok(test, ok[i].s, U64_MAX, ok[i].v);
}

static void cge_t_parse_invalid(struct kunit *test)
{
	static const char * const bad[] = {
		"", " ", "\n", ".", "+", "e5", ".e5", "abc", "x1", "1x",
		"1.2.3", "1..2", "1e", "1e+", "1e-", "1e--4", "1e4.5", "1ee4",
		"1e 4", "1 e4", "1 2", "--1", "-1", "-0", "-0.5", "-2e-4",
		"++1", "+-1", "- 1", "inf", "INF", "-inf", "nan", "NaN",
		"infinity", "0x10", "1,5", "1_000", "1\n\n2", "1f",
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		cge_t_bad(test, bad[i], U64_MAX);
}

static void cge_t_parse_huge(struct kunit *test)
{
	const unsigned int n = 400;
	char *s = kunit_kzalloc(test, n + 8, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, s);

	/* 400 zeros then 1 */
	memset(s, '0', n);
	s[n] = '1';
	cge_t_ok(test, s, U64_MAX, CGE_COEF_ONE);
	/* 1 then 400 zeros */
	s[0] = '1';
	s[n] = '0';
	cge_t_bad(test, s, U64_MAX);
	/* and that times 1e-400: 1 again */
	memcpy(s + n + 1, "e-400", 6);
	cge_t_ok(test, s, U64_MAX, CGE_COEF_ONE);
	/* 0.(398 zeros)1: far below the precision */
	memset(s, '0', n + 8);
	s[1] = '.';
	s[n] = '1';
	s[n + 1] = '\0';
	cge_t_ok(test, s, U64_MAX, 0);
	/* 0.(399 nines): rounds up to 1 */
	memset(s + 2, '9', n - 2);
	s[n] = '9';
	cge_t_ok(test, s, U64_MAX, CGE_COEF_ONE);

	cge_t_bad(test, "1e999999", U64_MAX);
	cge_t_bad(test, "1e99999999999999999999999", U64_MAX);
	cge_t_bad(test, "1e19", U64_MAX);
	cge_t_ok(test, "0e999999", U64_MAX, 0);
	cge_t_ok(test, "0e99999999999999999999999", U64_MAX, 0);
	/* the largest value, and one unit more */
	cge_t_ok(test, "18446744073.709551615", U64_MAX, U64_MAX);
	cge_t_ok(test, "18446744073.7095516154", U64_MAX, U64_MAX);
	cge_t_bad(test, "18446744073.7095516155", U64_MAX);
	cge_t_bad(test, "18446744073.709551616", U64_MAX);
	cge_t_bad(test, "18446744074", U64_MAX);
	cge_t_bad(test, "184467440737095516150", U64_MAX);
}

static void cge_t_parse_max(struct kunit *test)
{
	/* time coefficients: up to 10.0 */
	cge_t_ok(test, "10", CGE_T_MAX_TIME, 10000000000ULL);
	cge_t_ok(test, "1e1\n", CGE_T_MAX_TIME, 10000000000ULL);
	cge_t_ok(test, "9.999999999", CGE_T_MAX_TIME, 9999999999ULL);
	/* rounded first, then compared */
	cge_t_ok(test, "10.0000000004", CGE_T_MAX_TIME, 10000000000ULL);
	cge_t_bad(test, "10.0000000005", CGE_T_MAX_TIME);
	cge_t_bad(test, "10.000000001", CGE_T_MAX_TIME);
	cge_t_bad(test, "11", CGE_T_MAX_TIME);
	cge_t_bad(test, "1e2", CGE_T_MAX_TIME);

	/* kcpu_wakeups: up to 0.01 s */
	cge_t_ok(test, "0.01", CGE_T_MAX_WAKE, 10000000);
	cge_t_ok(test, "1e-2", CGE_T_MAX_WAKE, 10000000);
	cge_t_ok(test, "2e-4", CGE_T_MAX_WAKE, 200000);
	cge_t_bad(test, "0.010000001", CGE_T_MAX_WAKE);
	cge_t_bad(test, "1", CGE_T_MAX_WAKE);

	/* a zero bound still accepts zero */
	cge_t_ok(test, "0", 0, 0);
	cge_t_ok(test, "0.0000000004", 0, 0);
	cge_t_bad(test, "1e-9", 0);
}

static void cge_t_defaults(struct kunit *test)
{
	const struct cge_impact_coefs k = CGE_IMPACT_DEFAULTS;

	/* the defaults are macOS's numbers as written in default.plist */
	cge_t_ok(test, "1.0", CGE_T_MAX_TIME, k.kcpu_time);
	cge_t_ok(test, "2.0e-4", CGE_T_MAX_WAKE, k.kcpu_wakeups);
	cge_t_ok(test, "0.8", CGE_T_MAX_TIME, k.kqos_background);
}

/* expect cge_coef_format(@v) == @s, and its return value strlen(@s) */
static void cge_t_fmt(struct kunit *test, u64 v, const char *s)
{
	char buf[32];

	KUNIT_EXPECT_EQ(test, cge_coef_format(buf, sizeof(buf), v),
			(int)strlen(s));
	KUNIT_EXPECT_STREQ(test, buf, s);
}

static void cge_t_format(struct kunit *test)
{
	char small[4];

	cge_t_fmt(test, 0, "0");
	cge_t_fmt(test, 1, "0.000000001");
	cge_t_fmt(test, 10, "0.00000001");
	cge_t_fmt(test, 200000, "0.0002");
	cge_t_fmt(test, 123456789, "0.123456789");
	cge_t_fmt(test, 800000000, "0.8");
	cge_t_fmt(test, 1000000000, "1");
	cge_t_fmt(test, 1500000000, "1.5");
	cge_t_fmt(test, 1000000001, "1.000000001");
	cge_t_fmt(test, 1000000000000ULL, "1000");
	cge_t_fmt(test, 123456789012ULL, "123.456789012");
	cge_t_fmt(test, U64_MAX, "18446744073.709551615");
	cge_t_fmt(test, U64_MAX - 709551615, "18446744073");

	/* truncated like snprintf(), the full length returned */
	KUNIT_EXPECT_EQ(test, cge_coef_format(small, sizeof(small), 200000),
			6);
	KUNIT_EXPECT_STREQ(test, small, "0.0");
	KUNIT_EXPECT_EQ(test, cge_coef_format(NULL, 0, U64_MAX), 21);
}

/* parse(format(v)) == v */
static void cge_t_roundtrip_one(struct kunit *test, u64 v)
{
	char buf[32];
	u64 out = CGE_T_CANARY;

	cge_coef_format(buf, sizeof(buf), v);
	KUNIT_EXPECT_EQ_MSG(test, cge_coef_parse(buf, U64_MAX, &out), 0,
			    "\"%s\"", buf);
	KUNIT_EXPECT_EQ_MSG(test, out, v, "\"%s\"", buf);
}

static void cge_t_roundtrip(struct kunit *test)
{
	static const u64 fixed[] = {
		0, 1, 9, 10, 11, 99, 100, 200000, 999999999, 1000000000,
		1000000001, 800000000, 1999999999, 1000000000000ULL,
		U64_MAX / 2, U64_MAX - 1000000000, U64_MAX - 2, U64_MAX - 1,
		U64_MAX,
	};
	u64 seed = 0x9e3779b97f4a7c15ULL, v;
	unsigned int i, bad = 0;
	char buf[48];

	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		cge_t_roundtrip_one(test, fixed[i]);

	for (i = 0; i < 5000; i++) {
		u64 out = CGE_T_CANARY;

		v = cge_t_rand(&seed) >> (i % 64);
		cge_coef_format(buf, sizeof(buf), v);
		if (cge_coef_parse(buf, U64_MAX, &out) || out != v)
			bad++;
		/* the same value as integer nanos with an exponent */
		snprintf(buf, sizeof(buf), "%llue-9", v);
		if (cge_coef_parse(buf, U64_MAX, &out) || out != v)
			bad++;
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
}

static void cge_t_impact_defaults(struct kunit *test)
{
	const struct cge_impact_coefs k = CGE_IMPACT_DEFAULTS;

	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 0, 0, 0), 0ULL);
	/* 1 s busy at default QoS */
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, CGE_T_SEC, 0, 0),
			1000000000ULL);
	/* 1000 wakeups of 2e-4 s each */
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 0, 0, 1000), 200000000ULL);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 0, 0, 1), 200000ULL);
	/* 1 s of background time */
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 0, CGE_T_SEC, 0),
			800000000ULL);
	/* mixed: 0.5 s + 0.8 * 0.25 s + 10 * 200 µs */
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, CGE_T_SEC / 2, CGE_T_SEC / 4,
					    10), 702000000ULL);
	/* 1 s + 0.8 s + 0.2 s */
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, CGE_T_SEC, CGE_T_SEC, 1000),
			2000000000ULL);
	/* 0.8 * 1 ns floors to 0, 0.8 * 5 ns is 4 */
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 0, 1, 0), 0ULL);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 0, 5, 0), 4ULL);
	/* a day on 1000 CPUs: products beyond 64 bits, still exact */
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 86400000ULL * CGE_T_SEC,
					    0, 0), 86400000ULL * CGE_T_SEC);
}

static void cge_t_impact_exact(struct kunit *test)
{
	struct cge_impact_coefs k = { CGE_COEF_ONE / 2, 0, CGE_COEF_ONE / 2 };
	u64 seed = 0x2545f4914f6cdd1dULL;
	unsigned int i, bad = 0;

	/* 0.5 * 1 + 0.5 * 1: one rounding of the sum, not two */
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 1, 1, 0), 1ULL);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 3, 0, 0), 1ULL);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 3, 3, 0), 3ULL);
	/* 3.0 * 6e18 = 1.8e19, a 128-bit product, < U64_MAX */
	k.kcpu_time = 3 * CGE_COEF_ONE;
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 6000000000000000000ULL, 0, 0),
			18000000000000000000ULL);
	/* 1/3 (to 9 places) of U64_MAX */
	k.kcpu_time = 333333333;
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, U64_MAX, 0, 0),
			6148914685087602513ULL);

	/* small enough for a plain 64-bit reference */
	for (i = 0; i < 2000; i++) {
		struct cge_impact_coefs r;
		u64 fg, bg, w, want;

		r.kcpu_time = cge_t_rand(&seed) >> 33;
		r.kqos_background = cge_t_rand(&seed) >> 33;
		r.kcpu_wakeups = cge_t_rand(&seed) >> 33;
		fg = cge_t_rand(&seed) >> 33;
		bg = cge_t_rand(&seed) >> 33;
		w = cge_t_rand(&seed) >> 34;
		want = (r.kcpu_time * fg + r.kqos_background * bg) /
		       CGE_COEF_ONE + r.kcpu_wakeups * w;
		if (cge_impact_ns(&r, fg, bg, w) != want)
			bad++;
	}
	KUNIT_EXPECT_EQ(test, bad, 0U);
}

static void cge_t_impact_saturate(struct kunit *test)
{
	const struct cge_impact_coefs d = CGE_IMPACT_DEFAULTS;
	struct cge_impact_coefs one = { CGE_COEF_ONE, 1, CGE_COEF_ONE };
	struct cge_impact_coefs big = { U64_MAX, U64_MAX, U64_MAX };

	KUNIT_EXPECT_EQ(test, cge_impact_ns(&d, U64_MAX, 0, 0), U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&d, U64_MAX, U64_MAX, U64_MAX),
			U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&d, 0, 0, U64_MAX), U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&d, 0, 0, U64_MAX / 200000 + 1),
			U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&d, 0, 0, U64_MAX / 200000),
			U64_MAX / 200000 * 200000);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&big, U64_MAX, U64_MAX, U64_MAX),
			U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&big, 1, 0, 0),
			U64_MAX / CGE_COEF_ONE);
	/* exactly U64_MAX, then one more in each term */
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&one, 1ULL << 63,
					    (1ULL << 63) - 1, 0), U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&one, 1ULL << 63, 1ULL << 63, 0),
			U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&one, U64_MAX - 5, 0, 5),
			U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&one, U64_MAX - 5, 0, 6),
			U64_MAX);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&one, U64_MAX - 5, 0, 4),
			U64_MAX - 1);
	/* the largest kcpu_time * U64_MAX ns */
	one.kcpu_time = CGE_T_MAX_TIME;
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&one, U64_MAX, 0, 0), U64_MAX);
}

static void cge_t_impact_zero_coefs(struct kunit *test)
{
	struct cge_impact_coefs k = CGE_IMPACT_DEFAULTS;

	/* kcpu_time 0: only background time and wakeups count */
	k.kcpu_time = 0;
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, CGE_T_SEC, 0, 0), 0ULL);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, U64_MAX, 0, 0), 0ULL);
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, CGE_T_SEC, CGE_T_SEC, 10),
			802000000ULL);
	/* all zero: no impact at all */
	k.kcpu_wakeups = 0;
	k.kqos_background = 0;
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, U64_MAX, U64_MAX, U64_MAX),
			0ULL);
	/* kcpu_wakeups 0: CPU time only, the split=time weight */
	k.kcpu_time = CGE_COEF_ONE;
	k.kqos_background = CGE_COEF_ONE;
	KUNIT_EXPECT_EQ(test, cge_impact_ns(&k, 123, 456, 789), 579ULL);
}

static struct kunit_case cge_impact_cases[] = {
	KUNIT_CASE(cge_t_parse_forms),
	KUNIT_CASE(cge_t_parse_rounding),
	KUNIT_CASE(cge_t_parse_invalid),
	KUNIT_CASE(cge_t_parse_huge),
	KUNIT_CASE(cge_t_parse_max),
	KUNIT_CASE(cge_t_defaults),
	KUNIT_CASE(cge_t_format),
	KUNIT_CASE(cge_t_roundtrip),
	KUNIT_CASE(cge_t_impact_defaults),
	KUNIT_CASE(cge_t_impact_exact),
	KUNIT_CASE(cge_t_impact_saturate),
	KUNIT_CASE(cge_t_impact_zero_coefs),
	{}
};

static struct kunit_suite cge_impact_suite = {
	.name = "cge_impact",
	.test_cases = cge_impact_cases,
};

kunit_test_suite(cge_impact_suite);

MODULE_LICENSE("GPL");
