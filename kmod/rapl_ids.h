/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rapl_ids.h - the Intel CPU models whose RAPL energy MSRs this module reads,
 * matched by (family, model), with each model's energy unit quirks.
 *
 * Pure data and lookup: rapl.c decides from it, KUnit tests it.
 */
#ifndef CGE_RAPL_IDS_H
#define CGE_RAPL_IDS_H

#include <linux/types.h>

/* the DRAM counter has a fixed 2^-16 J (15.3 µJ) unit */
#define CGE_RAPL_DRAM_FIXED	0x01
/* the PSYS counter counts whole joules */
#define CGE_RAPL_PSYS_1J	0x02

/**
 * struct cge_rapl_id - an Intel model with RAPL energy MSRs
 * @family: CPU family (boot_cpu_data.x86)
 * @model: CPU model (boot_cpu_data.x86_model)
 * @quirks: CGE_RAPL_* unit quirks
 */
struct cge_rapl_id {
	u8 family;
	u8 model;
	u8 quirks;
};

const struct cge_rapl_id *cge_intel_rapl_id(u32 family, u32 model);

#endif /* CGE_RAPL_IDS_H */
