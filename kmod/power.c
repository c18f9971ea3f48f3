// SPDX-License-Identifier: GPL-2.0
/*
 * power.c - each cgroup's power averaged over 10 s, 60 s and 300 s.
 *
 * As the kernel's load and pressure averages, an exponential moving average
 * over a window T: a power P held for a time t moves the average A to
 *
 *   A' = A * exp(-t / T) + P * (1 - exp(-t / T))
 *
 * Unlike loadavg's and PSI's fixed periods, a step is one sampler interval,
 * whatever its length (interval_ms may change at run time), with P the
 * energy charged in it over its length: the average is exact for energy
 * spread evenly over each interval. A cgroup charged nothing in an interval
 * is not touched then: its averages decay over the whole gap at its next
 * charge, or when read. Constant power P held from an average of 0 for a
 * time t gives P * (1 - exp(-t / T)): 95 % of P after 3 T. Times are the
 * sampler's CLOCK_MONOTONIC ones: time in system sleep does not count; the
 * suspend and resume transitions, unsampled, count as a time without power.
 */
#include <linux/types.h>
#include <linux/bits.h>
#include <linux/math64.h>
#include <linux/string.h>
#include <linux/time64.h>

#include "power.h"
#include "split.h"
#include "total.h"

#define CGE_POWER_ONE	BIT_ULL(32)
/* 1 µJ per ns is 10^12 nW; 1 mW is 10^6 nW */
#define CGE_NW_PER_UJ_NS	1000000000000ULL
#define CGE_NW_PER_MW		1000000U

/*
 * exp(-1 µs / T) * 2^63, rounded, for T = 10 s, 60 s, 300 s: powers of
 * these by squaring keep 2^-39 relative precision up to 2^24 µs (16.7 s),
 * so a long window's average converges to a constant power to the µW.
 */
static const u64 cge_power_us[CGE_POWER_NR] = {
	9223371114517618239ULL, 9223371883131909808ULL, 9223372006110202403ULL
};

/**
 * cge_power_decay - exp(-@ns / T) of window @k
 * @ns: time, counted in whole microseconds
 * @k: window index
 *
 * Return: the factor in units of 2^-32: 2^32 - 1 at most (a step of under
 * 1 µs decays nothing).
 */
u32 cge_power_decay(u64 ns, unsigned int k)
{
	u64 n = div_u64(ns, NSEC_PER_USEC), base = cge_power_us[k];
	u64 r = BIT_ULL(63);

	/* square and multiply: at most 64 rounds, over as soon as it is 0 */
	while (n && r) {
		if (n & 1)
			r = mul_u64_u64_shr(r, base, 63);
		base = mul_u64_u64_shr(base, base, 63);
		n >>= 1;
	}
	r >>= 31;
	return r < CGE_POWER_ONE ? r : CGE_POWER_ONE - 1;
}

/**
 * cge_power_step - the decay factors of the interval @start_ns..@end_ns
 * @s: filled in
 * @start_ns: its start
 * @end_ns: its end
 */
void cge_power_step(struct cge_power_step *s, u64 start_ns, u64 end_ns)
{
	unsigned int k;

	memset(s, 0, sizeof(*s));
	s->start_ns = start_ns;
	s->end_ns = end_ns;
	for (k = 0; k < CGE_POWER_NR; k++)
		s->decay[k] = cge_power_decay(end_ns - start_ns, k);
}

/**
 * cge_power_restart - an empty interval ending at @now_ns, where the next
 *	one starts (after a resume, the counters started afresh)
 * @s: set up
 * @now_ns: the time
 */
void cge_power_restart(struct cge_power_step *s, u64 now_ns)
{
	cge_power_step(s, now_ns, now_ns);
}

/*
 * The decays, per window, of averages last charged at @at_ns (before @s's
 * start) to @s's end. The cgroups charged in one sample were mostly last
 * charged at one of a few earlier samples: each such gap is worked out
 * (cge_power_decay(), up to 64 multiplications a window) once a step.
 */
static const u32 *cge_power_gap(struct cge_power_step *s, u64 at_ns)
{
	unsigned int i, k;
	u32 *d;

	for (i = 0; i < s->gap_nr; i++)
		if (s->gap_at_ns[i] == at_ns)
			return s->gap_decay[i];
	if (s->gap_nr < CGE_POWER_GAPS) {
		i = s->gap_nr++;
	} else {
		i = s->gap_next;
		s->gap_next = (i + 1) % CGE_POWER_GAPS;
	}
	d = s->gap_decay[i];
	for (k = 0; k < CGE_POWER_NR; k++)
		d[k] = cge_power_decay(s->end_ns - at_ns, k);
	s->gap_at_ns[i] = at_ns;
	return d;
}

/**
 * cge_power_charge - what @uj of energy spent over the interval @s adds
 * @s: the interval, set up by cge_power_step()
 * @uj: energy
 * @inc: per window, nW, for cge_power_add() (the same for a cgroup and
 *	each of its ancestors)
 */
void cge_power_charge(const struct cge_power_step *s, u64 uj,
		      u64 inc[CGE_POWER_NR])
{
	u64 span = s->end_ns - s->start_ns, nw = 0;
	unsigned int k;

	/* exact; past 2^64 nW (18 GW) held at that */
	if (span)
		nw = cge_mul_div_u64(uj, CGE_NW_PER_UJ_NS, span);
	for (k = 0; k < CGE_POWER_NR; k++)
		inc[k] = mul_u64_u64_shr(nw, CGE_POWER_ONE - s->decay[k], 32);
}

/**
 * cge_power_add - add a charge of the interval @s to @p
 * @p: the averages
 * @s: the interval; it keeps the decays it works out, so the charges of
 *	one interval are serialised by the caller
 * @inc: the charge, from cge_power_charge()
 *
 * The first charge of an interval decays @p from when it was last charged
 * to the interval's end, with no power in between; further charges of the
 * same interval (an ancestor of several charged cgroups, several packages)
 * add their part, as the average is linear in the power. A charge of
 * nothing changes nothing.
 */
void cge_power_add(struct cge_power *p, struct cge_power_step *s,
		   const u64 inc[CGE_POWER_NR])
{
	const u32 *d;
	unsigned int k;

	if (!(inc[0] | inc[1] | inc[2]))
		return;
	if (p->at_ns != s->end_ns) {
		d = p->at_ns == s->start_ns ? s->decay :
		    cge_power_gap(s, p->at_ns);
		for (k = 0; k < CGE_POWER_NR; k++)
			p->avg_nw[k] = mul_u64_u32_shr(p->avg_nw[k], d[k], 32);
		p->at_ns = s->end_ns;
	}
	for (k = 0; k < CGE_POWER_NR; k++)
		p->avg_nw[k] = cge_sat_add(p->avg_nw[k], inc[k]);
}

/**
 * cge_power_read - the averages at @at_ns, in mW
 * @p: the averages
 * @at_ns: the time to read them at (the last sample), not before @p->at_ns
 * @mw: per window, rounded to the nearest mW
 */
void cge_power_read(const struct cge_power *p, u64 at_ns,
		    u64 mw[CGE_POWER_NR])
{
	u64 gap = at_ns > p->at_ns ? at_ns - p->at_ns : 0, nw;
	unsigned int k;
	u32 rem;

	for (k = 0; k < CGE_POWER_NR; k++) {
		nw = p->avg_nw[k];
		if (gap)
			nw = mul_u64_u32_shr(nw, cge_power_decay(gap, k), 32);
		mw[k] = div_u64_rem(nw, CGE_NW_PER_MW, &rem);
		mw[k] += rem >= CGE_NW_PER_MW / 2;
	}
}
