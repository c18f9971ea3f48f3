// SPDX-License-Identifier: GPL-2.0
/*
 * model.c - the power model used where there is no RAPL (e.g. VMs).
 *
 * Per CPU, P = idle_mw + (busy_mw - idle_mw) * busy_fraction. Over an
 * interval of a group of CPUs, with capacity_ns the CPU-ns available
 * (ncpus * interval_ns) and busy_ns the CPU-ns spent busy (running tasks,
 * interrupts and softirqs):
 *
 *   E = idle_mw * capacity_ns + (busy_mw - idle_mw) * busy_ns  [mW * ns]
 *
 * and 1 mW * ns = 10^-12 J = 10^-6 µJ. The sub-µJ remainder is carried
 * from one interval to the next, so the sum over many intervals equals the
 * closed form over their total, rounded down once.
 */
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/math64.h>

#include "model.h"

#define CGE_MWNS_PER_UJ	1000000U

/**
 * cge_model_validate - check model parameters
 * @idle_mw: power of one idle CPU, mW
 * @busy_mw: power of one fully busy CPU, mW
 *
 * Callers must reject parameters this refuses before passing them to
 * cge_model_energy_uj().
 *
 * Return: 0, or -EINVAL if @busy_mw < @idle_mw or either exceeds
 * CGE_MODEL_MAX_MW (10^7 mW per CPU).
 */
int cge_model_validate(u32 idle_mw, u32 busy_mw)
{
	if (idle_mw > CGE_MODEL_MAX_MW || busy_mw > CGE_MODEL_MAX_MW)
		return -EINVAL;
	if (busy_mw < idle_mw)
		return -EINVAL;
	return 0;
}

/**
 * cge_model_energy_uj - modelled energy of a group of CPUs over an interval
 * @m: the model state (remainder carried between intervals)
 * @idle_mw: power of one idle CPU, mW
 * @busy_mw: power of one fully busy CPU, mW; callers guarantee
 *	     @busy_mw >= @idle_mw (cge_model_validate()); if not, the busy
 *	     increment is taken as 0
 * @capacity_ns: CPU-ns available in the interval, ncpus * interval_ns
 * @busy_ns: CPU-ns spent busy; clamped to @capacity_ns
 *
 * No overflow for @capacity_ns up to 2^48 and powers up to 10^7 mW: each
 * product is split at 10^6 ns so that no intermediate exceeds 2^62.
 *
 * Return: the energy of the interval, µJ.
 */
u64 cge_model_energy_uj(struct cge_model *m, u32 idle_mw, u32 busy_mw,
			u64 capacity_ns, u64 busy_ns)
{
	u32 d_mw = busy_mw > idle_mw ? busy_mw - idle_mw : 0;
	u32 cap_r, busy_r, rem;
	u64 cap_q, busy_q, uj, frac;

	if (busy_ns > capacity_ns)
		busy_ns = capacity_ns;

	/* x * ns = x * (q * 10^6 + r): the q part is whole µJ */
	cap_q = div_u64_rem(capacity_ns, CGE_MWNS_PER_UJ, &cap_r);
	busy_q = div_u64_rem(busy_ns, CGE_MWNS_PER_UJ, &busy_r);

	uj = (u64)idle_mw * cap_q + (u64)d_mw * busy_q;
	/* < 10^7 * 10^6 * 2 + 10^6: fits easily */
	frac = (u64)idle_mw * cap_r + (u64)d_mw * busy_r + m->rem;
	uj += div_u64_rem(frac, CGE_MWNS_PER_UJ, &rem);
	m->rem = rem;
	return uj;
}
