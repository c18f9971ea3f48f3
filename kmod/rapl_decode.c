// SPDX-License-Identifier: GPL-2.0
/*
 * rapl_decode.c - RAPL register decoding.
 *
 * The energy status registers count in units of 2^-ESU joule, ESU taken
 * from the unit register, except where a model uses a fixed unit for a
 * domain (rapl_ids.c).
 */
#include <linux/types.h>
#include <linux/kernel.h>

#include "rapl_decode.h"
#include "rapl_ids.h"

#define CGE_UJ_PER_J	1000000ULL

/**
 * cge_rapl_esu - energy status unit from a unit register value
 * @unit_msr: value of MSR_RAPL_POWER_UNIT (Intel) or its AMD counterpart
 *
 * Return: bits 12:8, the exponent ESU of the energy unit 2^-ESU J.
 */
u32 cge_rapl_esu(u64 unit_msr)
{
	return (unit_msr >> CGE_RAPL_ESU_SHIFT) & CGE_RAPL_ESU_MASK;
}

/**
 * cge_rapl_unit_sane - whether a unit-register ESU looks like real hardware
 * @esu: energy status unit read from the unit register
 *
 * QEMU without RAPL emulation returns 0 for the RAPL MSRs instead of
 * faulting, so 0 must be rejected. Real parts use 14 (61 µJ) or 16
 * (15.3 µJ); anything outside [CGE_RAPL_ESU_MIN, CGE_RAPL_ESU_MAX] is
 * either too coarse to be useful or so fine that the 32-bit counter could
 * wrap more than once per sampling interval.
 *
 * Return: true if @esu is plausible.
 */
bool cge_rapl_unit_sane(u32 esu)
{
	return esu >= CGE_RAPL_ESU_MIN && esu <= CGE_RAPL_ESU_MAX;
}

/**
 * cge_rapl_domain_esu - the energy unit of one domain, after model quirks
 * @is_amd: the CPU is AMD or Hygon (no quirks there)
 * @family: CPU family (boot_cpu_data.x86)
 * @model: CPU model (boot_cpu_data.x86_model)
 * @d: the domain
 * @esu: energy status unit from the unit register
 *
 * Return: the ESU to use for the energy status register of @d.
 */
u32 cge_rapl_domain_esu(bool is_amd, u32 family, u32 model,
			enum cge_rapl_domain d, u32 esu)
{
	const struct cge_rapl_id *id;

	if (is_amd)
		return esu;
	id = cge_intel_rapl_id(family, model);
	if (!id)
		return esu;
	if (d == CGE_DOM_DRAM && (id->quirks & CGE_RAPL_DRAM_FIXED))
		return 16;
	if (d == CGE_DOM_PSYS && (id->quirks & CGE_RAPL_PSYS_1J))
		return 0;
	return esu;
}

/**
 * cge_rapl_counter_init - reset a counter's decoding state
 * @c: the counter
 * @esu: energy status unit of its domain (cge_rapl_domain_esu()), 0..31
 *
 * The next cge_rapl_counter_delta_uj() primes the counter and returns 0.
 */
void cge_rapl_counter_init(struct cge_rapl_counter *c, u32 esu)
{
	c->last_raw = 0;
	c->rem = 0;
	c->esu = esu;
	c->primed = false;
}

/**
 * cge_rapl_raw_wrapped - whether the 32-bit counter wrapped between reads
 * @prev_raw: the previous register value
 * @raw: the current register value
 *
 * For the health counters: assumes at most one wrap between the two reads.
 *
 * Return: true if the low 32 bits went backwards.
 */
bool cge_rapl_raw_wrapped(u64 prev_raw, u64 raw)
{
	return (raw & CGE_RAPL_COUNTER_MASK) < (prev_raw & CGE_RAPL_COUNTER_MASK);
}

/**
 * cge_rapl_counter_delta_uj - energy since the previous read, in µJ
 * @c: the counter state
 * @raw: the current value of the energy status register
 *
 * The delta of the low 32 bits is taken modulo 2^32 (at most one wrap per
 * interval), converted as (delta * 10^6 + rem) >> esu, and the sub-µJ
 * remainder is kept in @c->rem: summed over any number of calls, the
 * result equals the exact conversion of the total count, rounded down.
 * The first call after cge_rapl_counter_init() only primes the state.
 *
 * Return: the energy in µJ, 0 on the priming call.
 */
u64 cge_rapl_counter_delta_uj(struct cge_rapl_counter *c, u64 raw)
{
	u64 delta, scaled;
	u32 esu = min_t(u32, c->esu, 31);

	if (!c->primed) {
		c->last_raw = raw;
		c->primed = true;
		return 0;
	}
	delta = (raw - c->last_raw) & CGE_RAPL_COUNTER_MASK;
	c->last_raw = raw;

	/* < 2^32 * 10^6 + 2^31 < 2^52: no overflow */
	scaled = delta * CGE_UJ_PER_J + c->rem;
	c->rem = scaled & ((1ULL << esu) - 1);
	return scaled >> esu;
}

/**
 * cge_rapl_counter_resync - restart from a new reading without a delta
 * @c: the counter state
 * @raw: the current value of the energy status register
 *
 * After suspend/resume or a VM migration the counter may have been reset:
 * a lower value is not a wrap. The next delta is measured from @raw. The
 * sub-µJ remainder already measured is kept.
 */
void cge_rapl_counter_resync(struct cge_rapl_counter *c, u64 raw)
{
	c->last_raw = raw;
	c->primed = true;
}
