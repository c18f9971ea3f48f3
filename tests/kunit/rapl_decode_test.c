// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kmod/rapl_decode.c: units, quirks, wrap-safe deltas.
 */
#include <kunit/test.h>
#include <linux/kernel.h>

#include "rapl_decode.h"

/* unit register values read on real machines */
#define CGE_T_UNIT_INTEL	0x000A0E03ULL	/* client and Skylake-SP */
#define CGE_T_UNIT_AMD_ZEN	0x000A1003ULL	/* Zen 1..4 */

#define CGE_T_SKX		0x55
#define CGE_T_HSW		0x3C
#define CGE_T_SPR		0x8F

static void cge_t_esu_decode(struct kunit *test)
{
	struct cge_rapl_counter c;

	/* Intel client: ESU 14, one count = 10^6 / 2^14 = 61.035 µJ */
	KUNIT_EXPECT_EQ(test, cge_rapl_esu(CGE_T_UNIT_INTEL), 14U);
	cge_rapl_counter_init(&c, 14);
	cge_rapl_counter_delta_uj(&c, 0);
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 1), 61ULL);
	/* 999 more counts: 1000 counts = 61035.156 µJ, 61 already given */
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 1000), 61035ULL - 61);
	/* 2^14 counts are exactly one joule */
	cge_rapl_counter_init(&c, 14);
	cge_rapl_counter_delta_uj(&c, 5);
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 5 + 16384),
			1000000ULL);

	/* AMD Zen: ESU 16, 15.259 µJ per count */
	KUNIT_EXPECT_EQ(test, cge_rapl_esu(CGE_T_UNIT_AMD_ZEN), 16U);
	/* upper and lower fields (power, time units) do not leak in */
	KUNIT_EXPECT_EQ(test, cge_rapl_esu(0xFFFFFFFFFFFFE0FFULL), 0U);
	KUNIT_EXPECT_EQ(test, cge_rapl_esu(0x1F00ULL), 31U);
}

static void cge_t_unit_sane(struct kunit *test)
{
	/* QEMU without RAPL returns 0 for the unit MSR */
	KUNIT_EXPECT_FALSE(test, cge_rapl_unit_sane(cge_rapl_esu(0)));
	KUNIT_EXPECT_TRUE(test,
			  cge_rapl_unit_sane(cge_rapl_esu(CGE_T_UNIT_INTEL)));
	KUNIT_EXPECT_TRUE(test,
			  cge_rapl_unit_sane(cge_rapl_esu(CGE_T_UNIT_AMD_ZEN)));
	KUNIT_EXPECT_FALSE(test, cge_rapl_unit_sane(1));
	KUNIT_EXPECT_FALSE(test, cge_rapl_unit_sane(CGE_RAPL_ESU_MIN - 1));
	KUNIT_EXPECT_TRUE(test, cge_rapl_unit_sane(CGE_RAPL_ESU_MIN));
	KUNIT_EXPECT_TRUE(test, cge_rapl_unit_sane(CGE_RAPL_ESU_MAX));
	KUNIT_EXPECT_FALSE(test, cge_rapl_unit_sane(CGE_RAPL_ESU_MAX + 1));
	KUNIT_EXPECT_FALSE(test, cge_rapl_unit_sane(31));
}

static void cge_t_domain_quirks(struct kunit *test)
{
	u32 esu = cge_rapl_esu(CGE_T_UNIT_INTEL);
	static const u32 dram16[] = {
		0x3F, 0x4F, 0x56, 0x55, 0x6A, 0x6C, 0x57, 0x85,
	};
	unsigned int i;

	/* Skylake-SP 0xA0E03: package 2^-14 J, DRAM fixed 2^-16 J */
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(false, 6, CGE_T_SKX,
						  CGE_DOM_PKG, esu), 14U);
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(false, 6, CGE_T_SKX,
						  CGE_DOM_CORE, esu), 14U);
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(false, 6, CGE_T_SKX,
						  CGE_DOM_DRAM, esu), 16U);
	for (i = 0; i < ARRAY_SIZE(dram16); i++)
		KUNIT_EXPECT_EQ_MSG(test,
				    cge_rapl_domain_esu(false, 6, dram16[i],
							CGE_DOM_DRAM, esu),
				    16U, "model 0x%x", dram16[i]);

	/* client Haswell: DRAM uses the register's unit */
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(false, 6, CGE_T_HSW,
						  CGE_DOM_DRAM, esu), 14U);

	/* Sapphire/Emerald Rapids: PSYS fixed 1 J, DRAM standard unit */
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(false, 6, CGE_T_SPR,
						  CGE_DOM_PSYS, esu), 0U);
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(false, 6, 0xCF,
						  CGE_DOM_PSYS, esu), 0U);
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(false, 6, CGE_T_SPR,
						  CGE_DOM_DRAM, esu), 14U);
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(false, 6, CGE_T_SPR,
						  CGE_DOM_PKG, esu), 14U);
	/* Skylake client PSYS: the register's unit */
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(false, 6, 0x5E,
						  CGE_DOM_PSYS, esu), 14U);

	/* AMD Zen (family 17h, model numbers overlap Intel's): no quirk */
	esu = cge_rapl_esu(CGE_T_UNIT_AMD_ZEN);
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(true, 0x17, CGE_T_SKX,
						  CGE_DOM_DRAM, esu), 16U);
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(true, 0x19, 0x8F,
						  CGE_DOM_PSYS, esu), 16U);
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(true, 0x19, 0x01,
						  CGE_DOM_PKG, esu), 16U);
	/* Intel, another family: no quirk */
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(false, 15, CGE_T_SKX,
						  CGE_DOM_DRAM, 14), 14U);
}

static void cge_t_first_call_primes(struct kunit *test)
{
	struct cge_rapl_counter c;

	cge_rapl_counter_init(&c, 14);
	KUNIT_EXPECT_FALSE(test, c.primed);
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 0xDEADBEEF), 0ULL);
	KUNIT_EXPECT_TRUE(test, c.primed);
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 0xDEADBEEF), 0ULL);
}

/* recorded sequence of a package counter wrapping mid-interval */
static void cge_t_wrap_mid_interval(struct kunit *test)
{
	struct cge_rapl_counter c;

	cge_rapl_counter_init(&c, 14);
	/* reserved upper 32 bits may read non-zero: ignored */
	cge_rapl_counter_delta_uj(&c, 0xABCD0000FFFFF000ULL);
	KUNIT_EXPECT_TRUE(test, cge_rapl_raw_wrapped(0xABCD0000FFFFF000ULL,
						     0x0000000000000800ULL));
	/* 0x1000 + 0x800 = 6144 counts = 6144 * 10^6 / 2^14 = 375000 µJ */
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 0x800), 375000ULL);
	KUNIT_EXPECT_EQ(test, c.rem, 0ULL);
	/* and on, past the wrap, normally */
	KUNIT_EXPECT_FALSE(test, cge_rapl_raw_wrapped(0x800, 0x4800));
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 0x4800),
			1000000ULL);
	/* the largest delta: 2^32 - 1 counts at 2^-16 J */
	cge_rapl_counter_init(&c, 16);
	cge_rapl_counter_delta_uj(&c, 0x100);
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 0xFF),
			0xFFFFFFFFULL * 1000000 >> 16);
}

/*
 * Many small deltas, crossing a wrap: the sum of the µJ returned equals
 * the exact conversion of the total count (rounded down once), for the
 * units in use.
 */
static void cge_t_many_small_deltas(struct kunit *test)
{
	static const u32 units[] = { 14, 16, 0, 31 };
	unsigned int u, i;

	for (u = 0; u < ARRAY_SIZE(units); u++) {
		struct cge_rapl_counter c;
		u64 raw = 0xFFFF0000ULL, counts = 0, sum = 0, seed = 42 + u;
		u64 exact;

		cge_rapl_counter_init(&c, units[u]);
		cge_rapl_counter_delta_uj(&c, raw);
		for (i = 0; i < 20000; i++) {
			u64 inc;

			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			inc = (seed >> 33) % 8;
			counts += inc;
			raw = (raw + inc) & 0xFFFFFFFFULL;
			sum += cge_rapl_counter_delta_uj(&c, raw);
		}
		KUNIT_EXPECT_LT(test, raw, 0xFFFF0000ULL); /* it wrapped */
		exact = (counts * 1000000ULL) >> units[u];
		KUNIT_EXPECT_EQ_MSG(test, sum, exact, "esu %u", units[u]);
		/* what is left is less than one µJ */
		KUNIT_EXPECT_LT(test, c.rem, 1ULL << units[u]);
		KUNIT_EXPECT_EQ(test, (sum << units[u]) + c.rem,
				counts * 1000000ULL);
	}
}

/* PSYS on SPR counts whole joules */
static void cge_t_psys_joules(struct kunit *test)
{
	struct cge_rapl_counter c;

	cge_rapl_counter_init(&c, cge_rapl_domain_esu(false, 6, CGE_T_SPR,
						      CGE_DOM_PSYS, 14));
	cge_rapl_counter_delta_uj(&c, 100);
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 103), 3000000ULL);
	KUNIT_EXPECT_EQ(test, c.rem, 0ULL);
}

/* after resume the counter restarted near 0: not a wrap */
static void cge_t_resync_not_wrap(struct kunit *test)
{
	struct cge_rapl_counter c, naive;

	cge_rapl_counter_init(&c, 14);
	cge_rapl_counter_delta_uj(&c, 0x80000000);
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 0x80004000),
			1000000ULL);
	naive = c;

	/* resume: the register now reads 0x100 */
	cge_rapl_counter_resync(&c, 0x100);
	KUNIT_EXPECT_TRUE(test, c.primed);
	KUNIT_EXPECT_EQ(test, c.last_raw, 0x100ULL);
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 0x100 + 0x4000),
			1000000ULL);

	/* without the resync, the reset would read as ~2^31 counts */
	KUNIT_EXPECT_GT(test, cge_rapl_counter_delta_uj(&naive, 0x4100),
			100000000000ULL);

	/* resync on a never-primed counter primes it */
	cge_rapl_counter_init(&c, 16);
	cge_rapl_counter_resync(&c, 7);
	KUNIT_EXPECT_EQ(test, cge_rapl_counter_delta_uj(&c, 7 + 65536),
			1000000ULL);
}

static struct kunit_case cge_rapl_cases[] = {
	KUNIT_CASE(cge_t_esu_decode),
	KUNIT_CASE(cge_t_unit_sane),
	KUNIT_CASE(cge_t_domain_quirks),
	KUNIT_CASE(cge_t_first_call_primes),
	KUNIT_CASE(cge_t_wrap_mid_interval),
	KUNIT_CASE(cge_t_many_small_deltas),
	KUNIT_CASE(cge_t_psys_joules),
	KUNIT_CASE(cge_t_resync_not_wrap),
	{}
};

static struct kunit_suite cge_rapl_suite = {
	.name = "cge_rapl_decode",
	.test_cases = cge_rapl_cases,
};

kunit_test_suite(cge_rapl_suite);

MODULE_LICENSE("GPL");
