// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kmod/rapl_ids.c: the Intel models whose RAPL MSRs are
 * read, and their unit quirks, against the kernel's own table.
 *
 * The rows are rapl_ids[] of drivers/powercap/intel_rapl_msr.c (moved there
 * from intel_rapl_common.c, linux-pm, January 2026), with the VFM values of
 * arch/x86/include/asm/intel-family.h (7.2), and perf's
 * arch/x86/events/rapl.c for Broadwell-D's DRAM unit. Parts whose RAPL the
 * kernel reads through TPMI only (Granite Rapids, Sierra Forest, Clearwater
 * Forest, Diamond Rapids) and the Atom parts with the Silvermont unit
 * encoding are not in the table.
 */
#include <kunit/test.h>
#include <linux/kernel.h>

#include "rapl_decode.h"
#include "rapl_ids.h"

enum cge_t_expect {
	CGE_T_NO,	/* not in the table */
	CGE_T_YES,	/* in it, the unit register's unit for every domain */
	CGE_T_DRAM,	/* in it, DRAM fixed at 2^-16 J */
	CGE_T_PSYS,	/* in it, PSYS in whole joules */
};

struct cge_t_id {
	const char *name;
	u8 family;
	u8 model;
	u8 expect;
};

#define CGE_T(n, f, m, e)	{ #n, f, m, CGE_T_##e }

static const struct cge_t_id cge_t_ids[] = {
	CGE_T(SANDYBRIDGE, 6, 0x2A, YES),
	CGE_T(SANDYBRIDGE_X, 6, 0x2D, YES),
	CGE_T(IVYBRIDGE, 6, 0x3A, YES),
	CGE_T(IVYBRIDGE_X, 6, 0x3E, YES),
	CGE_T(HASWELL, 6, 0x3C, YES),
	CGE_T(HASWELL_L, 6, 0x45, YES),
	CGE_T(HASWELL_G, 6, 0x46, YES),
	CGE_T(HASWELL_X, 6, 0x3F, DRAM),
	CGE_T(BROADWELL, 6, 0x3D, YES),
	CGE_T(BROADWELL_G, 6, 0x47, YES),
	CGE_T(BROADWELL_D, 6, 0x56, DRAM),	/* perf's model_hsx */
	CGE_T(BROADWELL_X, 6, 0x4F, DRAM),
	CGE_T(SKYLAKE, 6, 0x5E, YES),
	CGE_T(SKYLAKE_L, 6, 0x4E, YES),
	CGE_T(SKYLAKE_X, 6, 0x55, DRAM),
	CGE_T(KABYLAKE_L, 6, 0x8E, YES),
	CGE_T(KABYLAKE, 6, 0x9E, YES),
	CGE_T(CANNONLAKE_L, 6, 0x66, YES),
	CGE_T(ICELAKE_L, 6, 0x7E, YES),
	CGE_T(ICELAKE, 6, 0x7D, YES),
	CGE_T(ICELAKE_NNPI, 6, 0x9D, YES),
	CGE_T(ICELAKE_X, 6, 0x6A, DRAM),
	CGE_T(ICELAKE_D, 6, 0x6C, DRAM),
	CGE_T(COMETLAKE_L, 6, 0xA6, YES),
	CGE_T(COMETLAKE, 6, 0xA5, YES),
	CGE_T(TIGERLAKE_L, 6, 0x8C, YES),
	CGE_T(TIGERLAKE, 6, 0x8D, YES),
	CGE_T(ROCKETLAKE, 6, 0xA7, YES),
	CGE_T(ALDERLAKE, 6, 0x97, YES),
	CGE_T(ALDERLAKE_L, 6, 0x9A, YES),
	CGE_T(ATOM_GRACEMONT, 6, 0xBE, YES),
	CGE_T(RAPTORLAKE, 6, 0xB7, YES),
	CGE_T(RAPTORLAKE_P, 6, 0xBA, YES),
	CGE_T(RAPTORLAKE_S, 6, 0xBF, YES),
	CGE_T(BARTLETTLAKE, 6, 0xD7, YES),
	CGE_T(METEORLAKE, 6, 0xAC, YES),
	CGE_T(METEORLAKE_L, 6, 0xAA, YES),
	CGE_T(SAPPHIRERAPIDS_X, 6, 0x8F, PSYS),
	CGE_T(EMERALDRAPIDS_X, 6, 0xCF, PSYS),
	CGE_T(LUNARLAKE_M, 6, 0xBD, YES),
	CGE_T(PANTHERLAKE_L, 6, 0xCC, YES),
	CGE_T(WILDCATLAKE_L, 6, 0xD5, YES),
	CGE_T(NOVALAKE, 18, 0x01, YES),
	CGE_T(NOVALAKE_L, 18, 0x03, YES),
	CGE_T(ARROWLAKE_H, 6, 0xC5, YES),
	CGE_T(ARROWLAKE, 6, 0xC6, YES),
	CGE_T(ARROWLAKE_U, 6, 0xB5, YES),
	CGE_T(LAKEFIELD, 6, 0x8A, YES),
	CGE_T(ATOM_GOLDMONT, 6, 0x5C, YES),
	CGE_T(ATOM_GOLDMONT_PLUS, 6, 0x7A, YES),
	CGE_T(ATOM_GOLDMONT_D, 6, 0x5F, YES),
	CGE_T(ATOM_TREMONT, 6, 0x96, YES),
	CGE_T(ATOM_TREMONT_D, 6, 0x86, YES),
	CGE_T(ATOM_TREMONT_L, 6, 0x9C, YES),
	CGE_T(XEON_PHI_KNL, 6, 0x57, DRAM),
	CGE_T(XEON_PHI_KNM, 6, 0x85, DRAM),

	/* Silvermont unit encoding (the kernel's rapl_defaults_byt and co.) */
	CGE_T(ATOM_SILVERMONT, 6, 0x37, NO),
	CGE_T(ATOM_AIRMONT, 6, 0x4C, NO),
	CGE_T(ATOM_SILVERMONT_MID, 6, 0x4A, NO),
	CGE_T(ATOM_SILVERMONT_MID2, 6, 0x5A, NO),
	/* not in the kernel's RAPL MSR table */
	CGE_T(ATOM_SILVERMONT_D, 6, 0x4D, NO),
	CGE_T(GRANITERAPIDS_X, 6, 0xAD, NO),
	CGE_T(GRANITERAPIDS_D, 6, 0xAE, NO),
	CGE_T(ATOM_CRESTMONT_X, 6, 0xAF, NO),
	CGE_T(ATOM_CRESTMONT, 6, 0xB6, NO),
	CGE_T(ATOM_DARKMONT_X, 6, 0xDD, NO),
	CGE_T(PANTHERLAKE_R, 6, 0xE5, NO),
	CGE_T(DIAMONDRAPIDS_X, 19, 0x01, NO),
	CGE_T(NEHALEM, 6, 0x1E, NO),
	CGE_T(P4_PRESCOTT, 15, 0x03, NO),
	/* a model number is only meant in its own family */
	CGE_T(fam18_SKYLAKE_X_model, 18, 0x55, NO),
	CGE_T(fam19_NOVALAKE_L_model, 19, 0x03, NO),
	CGE_T(fam6_NOVALAKE_model, 6, 0x01, NO),
	CGE_T(fam5_SANDYBRIDGE_model, 5, 0x2A, NO),
};

static void cge_t_ids_table(struct kunit *test)
{
	const struct cge_t_id *t;
	const struct cge_rapl_id *id;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cge_t_ids); i++) {
		t = &cge_t_ids[i];
		id = cge_intel_rapl_id(t->family, t->model);
		KUNIT_EXPECT_EQ_MSG(test, !!id, t->expect != CGE_T_NO,
				    "%s (%u, 0x%02x)", t->name, t->family,
				    t->model);
		if (!id)
			continue;
		KUNIT_EXPECT_EQ_MSG(test, !!(id->quirks & CGE_RAPL_DRAM_FIXED),
				    t->expect == CGE_T_DRAM, "%s DRAM unit",
				    t->name);
		KUNIT_EXPECT_EQ_MSG(test, !!(id->quirks & CGE_RAPL_PSYS_1J),
				    t->expect == CGE_T_PSYS, "%s PSYS unit",
				    t->name);
	}
}

/* The quirks as the decoder applies them, with the register's unit 14. */
static void cge_t_ids_domain_esu(struct kunit *test)
{
	const struct cge_t_id *t;
	unsigned int i;
	u32 dram, psys, pkg;

	for (i = 0; i < ARRAY_SIZE(cge_t_ids); i++) {
		t = &cge_t_ids[i];
		pkg = cge_rapl_domain_esu(false, t->family, t->model,
					  CGE_DOM_PKG, 14);
		dram = cge_rapl_domain_esu(false, t->family, t->model,
					   CGE_DOM_DRAM, 14);
		psys = cge_rapl_domain_esu(false, t->family, t->model,
					   CGE_DOM_PSYS, 14);
		KUNIT_EXPECT_EQ_MSG(test, pkg, 14U, "%s", t->name);
		KUNIT_EXPECT_EQ_MSG(test, dram,
				    t->expect == CGE_T_DRAM ? 16U : 14U,
				    "%s", t->name);
		KUNIT_EXPECT_EQ_MSG(test, psys,
				    t->expect == CGE_T_PSYS ? 0U : 14U,
				    "%s", t->name);
	}
	/* AMD and Hygon: never a quirk, whatever the model number */
	KUNIT_EXPECT_EQ(test, cge_rapl_domain_esu(true, 0x19, 0x55,
						  CGE_DOM_DRAM, 16), 16U);
}

static struct kunit_case cge_rapl_ids_cases[] = {
	KUNIT_CASE(cge_t_ids_table),
	KUNIT_CASE(cge_t_ids_domain_esu),
	{}
};

static struct kunit_suite cge_rapl_ids_suite = {
	.name = "cge_rapl_ids",
	.test_cases = cge_rapl_ids_cases,
};

kunit_test_suite(cge_rapl_ids_suite);

MODULE_LICENSE("GPL");
