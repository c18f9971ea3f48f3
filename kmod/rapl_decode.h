/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rapl_decode.h - RAPL register decoding: energy units, per-model unit
 * quirks, 32-bit wrap-safe counter deltas converted to µJ.
 *
 * Pure integer arithmetic: the MSR reads are done elsewhere (rapl.c).
 */
#ifndef CGE_RAPL_DECODE_H
#define CGE_RAPL_DECODE_H

#include <linux/types.h>

/* Intel RAPL MSRs */
#define CGE_MSR_RAPL_POWER_UNIT		0x00000606
#define CGE_MSR_PKG_ENERGY_STATUS	0x00000611
#define CGE_MSR_DRAM_ENERGY_STATUS	0x00000619
#define CGE_MSR_PP0_ENERGY_STATUS	0x00000639
#define CGE_MSR_PP1_ENERGY_STATUS	0x00000641
#define CGE_MSR_PLATFORM_ENERGY_STATUS	0x0000064D

/* AMD (family 17h and later) and Hygon RAPL MSRs */
#define CGE_MSR_AMD_RAPL_POWER_UNIT	0xC0010299
#define CGE_MSR_AMD_CORE_ENERGY_STATUS	0xC001029A
#define CGE_MSR_AMD_PKG_ENERGY_STATUS	0xC001029B

/* energy status unit: bits 12:8 of the unit MSR, 1 count = 2^-ESU J */
#define CGE_RAPL_ESU_SHIFT		8
#define CGE_RAPL_ESU_MASK		0x1f
/* the range of unit-register ESUs accepted as real hardware */
#define CGE_RAPL_ESU_MIN		8
#define CGE_RAPL_ESU_MAX		24

/* the energy counters are 32 bits wide */
#define CGE_RAPL_COUNTER_MASK		0xffffffffULL

/**
 * enum cge_rapl_domain - RAPL energy domains
 * @CGE_DOM_PKG: the whole package
 * @CGE_DOM_CORE: the cores (PP0; per core on AMD)
 * @CGE_DOM_UNCORE: the uncore, usually the integrated GPU (PP1)
 * @CGE_DOM_DRAM: the memory attached to the package
 * @CGE_DOM_PSYS: the platform (SoC and more), client parts and SPR
 * @CGE_DOM_NR: number of domains
 */
enum cge_rapl_domain {
	CGE_DOM_PKG,
	CGE_DOM_CORE,
	CGE_DOM_UNCORE,
	CGE_DOM_DRAM,
	CGE_DOM_PSYS,
	CGE_DOM_NR
};

/**
 * struct cge_rapl_counter - decoding state of one energy status register
 * @last_raw: the previous raw register value
 * @rem: sub-µJ remainder carried to the next delta, in 2^-esu µJ
 * @esu: energy status unit of this domain (after quirks), 0..31
 * @primed: @last_raw holds a real reading
 */
struct cge_rapl_counter {
	u64 last_raw;
	u64 rem;
	u32 esu;
	bool primed;
};

u32 cge_rapl_esu(u64 unit_msr);
bool cge_rapl_unit_sane(u32 esu);
u32 cge_rapl_domain_esu(bool is_amd, u32 family, u32 model,
			enum cge_rapl_domain d, u32 esu);
void cge_rapl_counter_init(struct cge_rapl_counter *c, u32 esu);
bool cge_rapl_raw_wrapped(u64 prev_raw, u64 raw);
u64 cge_rapl_counter_delta_uj(struct cge_rapl_counter *c, u64 raw);
void cge_rapl_counter_resync(struct cge_rapl_counter *c, u64 raw);

#endif /* CGE_RAPL_DECODE_H */
