// SPDX-License-Identifier: GPL-2.0
/*
 * rapl_ids.c - the Intel models with RAPL energy MSRs, and their unit quirks.
 *
 * Family 6 models the kernel's rapl drivers know; DRAM has a fixed 2^-16 J
 * unit on the Haswell-class servers and Xeon Phi, PSYS a 1 J unit on
 * Sapphire and Emerald Rapids.
 */
#include <linux/kernel.h>

#include "rapl_ids.h"

#define CGE_ID(f, m, q)	{ .family = (f), .model = (m), .quirks = (q) }
#define CGE_DRAM	CGE_RAPL_DRAM_FIXED
#define CGE_PSYS	CGE_RAPL_PSYS_1J

static const struct cge_rapl_id cge_intel_rapl_ids[] = {
	CGE_ID(6, 0x2a, 0), CGE_ID(6, 0x2d, 0), CGE_ID(6, 0x3a, 0),
	CGE_ID(6, 0x3c, 0), CGE_ID(6, 0x3e, 0), CGE_ID(6, 0x3f, CGE_DRAM),
	CGE_ID(6, 0x45, 0), CGE_ID(6, 0x46, 0), CGE_ID(6, 0x47, 0),
	CGE_ID(6, 0x4f, CGE_DRAM), CGE_ID(6, 0x4c, 0), CGE_ID(6, 0x4d, 0),
	CGE_ID(6, 0x56, CGE_DRAM), CGE_ID(6, 0x55, CGE_DRAM),
	CGE_ID(6, 0x4e, 0), CGE_ID(6, 0x5e, 0), CGE_ID(6, 0x57, CGE_DRAM),
	CGE_ID(6, 0x5c, 0), CGE_ID(6, 0x5f, 0), CGE_ID(6, 0x66, 0),
	CGE_ID(6, 0x6a, CGE_DRAM), CGE_ID(6, 0x6c, CGE_DRAM),
	CGE_ID(6, 0x7a, 0), CGE_ID(6, 0x7d, 0), CGE_ID(6, 0x7e, 0),
	CGE_ID(6, 0x85, CGE_DRAM), CGE_ID(6, 0x86, 0), CGE_ID(6, 0x8a, 0),
	CGE_ID(6, 0x8c, 0), CGE_ID(6, 0x8d, 0), CGE_ID(6, 0x8e, 0),
	CGE_ID(6, 0x8f, CGE_PSYS), CGE_ID(6, 0x96, 0), CGE_ID(6, 0x97, 0),
	CGE_ID(6, 0x9a, 0), CGE_ID(6, 0x9c, 0), CGE_ID(6, 0x9e, 0),
	CGE_ID(6, 0xa5, 0), CGE_ID(6, 0xa6, 0), CGE_ID(6, 0xa7, 0),
	CGE_ID(6, 0xaa, 0), CGE_ID(6, 0xac, 0), CGE_ID(6, 0xad, 0),
	CGE_ID(6, 0xae, 0), CGE_ID(6, 0xaf, 0), CGE_ID(6, 0xb5, 0),
	CGE_ID(6, 0xb7, 0), CGE_ID(6, 0xba, 0), CGE_ID(6, 0xbd, 0),
	CGE_ID(6, 0xbe, 0), CGE_ID(6, 0xbf, 0), CGE_ID(6, 0xc5, 0),
	CGE_ID(6, 0xc6, 0), CGE_ID(6, 0xcf, CGE_PSYS),
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
