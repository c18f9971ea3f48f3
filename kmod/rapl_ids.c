// SPDX-License-Identifier: GPL-2.0
/*
 * rapl_ids.c - the Intel models with RAPL energy MSRs, and their unit quirks.
 *
 * The models are those of the kernel's RAPL MSR driver (rapl_ids[] of
 * drivers/powercap/intel_rapl_msr.c, formerly intel_rapl_common.c), matched
 * by family and model as X86_MATCH_VFM() does, less the Atom parts whose
 * unit register has the Silvermont encoding (Silvermont, Airmont, Merrifield,
 * Moorefield), which rapl_decode.c does not decode. Quirks as the kernel
 * has them: DRAM counts in a fixed 2^-16 J (15.3 µJ) unit on the
 * Haswell-class servers and Xeon Phi (its rapl_defaults_hsw_server; perf's
 * rapl.c also for Broadwell-D), PSYS in whole joules on Sapphire and
 * Emerald Rapids (rapl_defaults_spr_server). Servers whose RAPL the kernel
 * reads through TPMI (Granite Rapids, Sierra Forest, Clearwater Forest,
 * Diamond Rapids) are not in its MSR table.
 */
#include <linux/kernel.h>

#include "rapl_ids.h"

#define CGE_ID(f, m, q)	{ .family = (f), .model = (m), .quirks = (q) }
#define CGE_DRAM	CGE_RAPL_DRAM_FIXED
#define CGE_PSYS	CGE_RAPL_PSYS_1J

static const struct cge_rapl_id cge_intel_rapl_ids[] = {
	CGE_ID(6, 0x2a, 0),		/* Sandy Bridge */
	CGE_ID(6, 0x2d, 0),		/* Sandy Bridge-X */
	CGE_ID(6, 0x3a, 0),		/* Ivy Bridge */
	CGE_ID(6, 0x3e, 0),		/* Ivy Bridge-X */
	CGE_ID(6, 0x3c, 0),		/* Haswell */
	CGE_ID(6, 0x45, 0),		/* Haswell-L */
	CGE_ID(6, 0x46, 0),		/* Haswell-G */
	CGE_ID(6, 0x3f, CGE_DRAM),	/* Haswell-X */
	CGE_ID(6, 0x3d, 0),		/* Broadwell */
	CGE_ID(6, 0x47, 0),		/* Broadwell-G */
	CGE_ID(6, 0x56, CGE_DRAM),	/* Broadwell-D */
	CGE_ID(6, 0x4f, CGE_DRAM),	/* Broadwell-X */
	CGE_ID(6, 0x5e, 0),		/* Skylake */
	CGE_ID(6, 0x4e, 0),		/* Skylake-L */
	CGE_ID(6, 0x55, CGE_DRAM),	/* Skylake-X, Cascade/Cooper Lake */
	CGE_ID(6, 0x8e, 0),		/* Kaby Lake-L */
	CGE_ID(6, 0x9e, 0),		/* Kaby Lake */
	CGE_ID(6, 0x66, 0),		/* Cannon Lake-L */
	CGE_ID(6, 0x7e, 0),		/* Ice Lake-L */
	CGE_ID(6, 0x7d, 0),		/* Ice Lake */
	CGE_ID(6, 0x9d, 0),		/* Ice Lake NNPI */
	CGE_ID(6, 0x6a, CGE_DRAM),	/* Ice Lake-X */
	CGE_ID(6, 0x6c, CGE_DRAM),	/* Ice Lake-D */
	CGE_ID(6, 0xa6, 0),		/* Comet Lake-L */
	CGE_ID(6, 0xa5, 0),		/* Comet Lake */
	CGE_ID(6, 0x8c, 0),		/* Tiger Lake-L */
	CGE_ID(6, 0x8d, 0),		/* Tiger Lake */
	CGE_ID(6, 0xa7, 0),		/* Rocket Lake */
	CGE_ID(6, 0x97, 0),		/* Alder Lake */
	CGE_ID(6, 0x9a, 0),		/* Alder Lake-L */
	CGE_ID(6, 0xbe, 0),		/* Alder Lake-N (Gracemont) */
	CGE_ID(6, 0xb7, 0),		/* Raptor Lake */
	CGE_ID(6, 0xba, 0),		/* Raptor Lake-P */
	CGE_ID(6, 0xbf, 0),		/* Raptor Lake-S */
	CGE_ID(6, 0xd7, 0),		/* Bartlett Lake */
	CGE_ID(6, 0xac, 0),		/* Meteor Lake */
	CGE_ID(6, 0xaa, 0),		/* Meteor Lake-L */
	CGE_ID(6, 0x8f, CGE_PSYS),	/* Sapphire Rapids-X */
	CGE_ID(6, 0xcf, CGE_PSYS),	/* Emerald Rapids-X */
	CGE_ID(6, 0xbd, 0),		/* Lunar Lake-M */
	CGE_ID(6, 0xcc, 0),		/* Panther Lake-L */
	CGE_ID(6, 0xd5, 0),		/* Wildcat Lake-L */
	CGE_ID(18, 0x01, 0),		/* Nova Lake */
	CGE_ID(18, 0x03, 0),		/* Nova Lake-L */
	CGE_ID(6, 0xc5, 0),		/* Arrow Lake-H */
	CGE_ID(6, 0xc6, 0),		/* Arrow Lake */
	CGE_ID(6, 0xb5, 0),		/* Arrow Lake-U */
	CGE_ID(6, 0x8a, 0),		/* Lakefield */
	CGE_ID(6, 0x5c, 0),		/* Goldmont (Apollo Lake) */
	CGE_ID(6, 0x7a, 0),		/* Goldmont Plus (Gemini Lake) */
	CGE_ID(6, 0x5f, 0),		/* Goldmont-D (Denverton) */
	CGE_ID(6, 0x96, 0),		/* Tremont (Elkhart Lake) */
	CGE_ID(6, 0x86, 0),		/* Tremont-D (Jacobsville) */
	CGE_ID(6, 0x9c, 0),		/* Tremont-L (Jasper Lake) */
	CGE_ID(6, 0x57, CGE_DRAM),	/* Xeon Phi Knights Landing */
	CGE_ID(6, 0x85, CGE_DRAM),	/* Xeon Phi Knights Mill */
};

/**
 * cge_intel_rapl_id() - look up an Intel model in the RAPL table
 * @family: CPU family
 * @model: CPU model
 *
 * Return: its entry, or NULL if the model is not in the table.
 */
const struct cge_rapl_id *cge_intel_rapl_id(u32 family, u32 model)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cge_intel_rapl_ids); i++)
		if (cge_intel_rapl_ids[i].family == family &&
		    cge_intel_rapl_ids[i].model == model)
			return &cge_intel_rapl_ids[i];
	return NULL;
}
