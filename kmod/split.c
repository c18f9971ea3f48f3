// SPDX-License-Identifier: GPL-2.0
/*
 * split.c - the attribution rule, in one place.
 *
 * One interval of one package measured @energy. Idle gets the part that
 * matches the idle time; the rest, the busy energy, is shared between the
 * consumers in proportion to their weights. Every division rounds down, and
 * cumulative rounding makes the shares sum to the busy energy exactly, so
 * idle + sum(shares) == energy and nothing is lost or invented.
 *
 * The 128-bit intermediate products are computed here rather than with
 * mul_u64_u64_div_u64(): its generic version (used on UML, where KUnit runs)
 * drops low bits when the product exceeds 64 bits, which would break the
 * exact-sum guarantee.
 */
#include <linux/types.h>
#include <linux/math64.h>
#include <linux/limits.h>
#include <linux/bitops.h>

#include "split.h"

/**
 * cge_mul_u64_u64 - full 64x64 -> 128 bit product
 * @a: first factor
 * @b: second factor
 * @hi: set to bits 127:64 of the product
 *
 * Return: bits 63:0 of @a * @b.
 */
static u64 cge_mul_u64_u64(u64 a, u64 b, u64 *hi)
{
	u64 a_lo = (u32)a, a_hi = a >> 32;
	u64 b_lo = (u32)b, b_hi = b >> 32;
	u64 ll = a_lo * b_lo;
	u64 lh = a_lo * b_hi;
	u64 hl = a_hi * b_lo;
	u64 hh = a_hi * b_hi;
	u64 mid = (ll >> 32) + (u32)lh + (u32)hl;

	*hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
	return (mid << 32) | (u32)ll;
}

/**
 * cge_div128_u64 - divide a 128-bit number by a 64-bit one
 * @hi: bits 127:64 of the dividend, must be less than @d
 * @lo: bits 63:0 of the dividend
 * @d: divisor, not zero
 *
 * Restoring binary long division; @hi < @d guarantees that the quotient
 * fits in 64 bits.
 *
 * Return: floor((@hi * 2^64 + @lo) / @d).
 */
static u64 cge_div128_u64(u64 hi, u64 lo, u64 d)
{
	u64 rem = hi, q = 0;
	int i;

	for (i = 63; i >= 0; i--) {
		bool carry = rem >> 63;

		rem = (rem << 1) | ((lo >> i) & 1);
		q <<= 1;
		/* the true value is carry * 2^64 + rem, and it is < 2 * d */
		if (carry || rem >= d) {
			rem -= d;
			q |= 1;
		}
	}
	return q;
}

/**
 * cge_mul_div_u64 - exact floor(a * b / c) with a 128-bit intermediate
 * @a: first factor
 * @b: second factor
 * @c: divisor
 *
 * Unlike the generic mul_u64_u64_div_u64(), the result is exact for all
 * inputs whose quotient fits in 64 bits (e.g. whenever @b <= @c).
 *
 * Return: floor(@a * @b / @c); U64_MAX if @c is 0 or the quotient does not
 * fit in 64 bits.
 */
u64 cge_mul_div_u64(u64 a, u64 b, u64 c)
{
	u64 hi, lo;

	if (!c)
		return U64_MAX;
	if (!a || !b)
		return 0;
	/* a factor equal to the divisor, as a coefficient of 1.0: no division */
	if (b == c)
		return a;
	if (a == c)
		return b;
	lo = cge_mul_u64_u64(a, b, &hi);
	if (!hi)
		return div64_u64(lo, c);
	if (hi >= c)
		return U64_MAX;
	return cge_div128_u64(hi, lo, c);
}

/**
 * cge_split - split one interval's energy between idle and consumers
 * @energy: energy of the interval of one package, any unit (µJ)
 * @idle_ns: CPU time spent idle in the interval (sum over the CPUs)
 * @busy_ns: CPU time spent running tasks in the interval (sum over the CPUs)
 * @weight: @n weights, one per consumer (CPU time, or energy impact)
 * @share: @n outputs, the energy attributed to each consumer
 * @n: number of consumers
 *
 * Idle gets floor(@energy * @idle_ns / (@idle_ns + @busy_ns)). The rest,
 * the busy energy B, goes to the consumers in proportion to @weight with
 * cumulative rounding: with W_i the prefix sum of the weights and W their
 * total, share[i] = floor(B * W_i / W) - floor(B * W_(i-1) / W). Hence
 * idle + sum(share) == @energy exactly, and each share is within one unit
 * of its ideal value B * weight[i] / W.
 *
 * If @busy_ns is 0, the weights sum to 0, or @idle_ns + @busy_ns is 0,
 * everything is idle and every share is 0.
 *
 * No overflow for any 64-bit input: products are 128-bit; if the times or
 * the weights sum beyond 64 bits, they are all scaled down by the same
 * power of two first (a relative error below 2^-60 in the ratios, the sums
 * stay exact).
 *
 * Return: the idle share.
 */
u64 cge_split(u64 energy, u64 idle_ns, u64 busy_ns, const u64 *weight,
	      u64 *share, unsigned int n)
{
	u64 total, busy, wsum, wcarry, prefix, prev, cur;
	unsigned int i, shift;

	for (i = 0; i < n; i++)
		share[i] = 0;

	if (!busy_ns || !n)
		return energy;

	/* sum of the weights, 128 bits wide: wcarry counts the overflows */
	wsum = 0;
	wcarry = 0;
	for (i = 0; i < n; i++) {
		wsum += weight[i];
		if (wsum < weight[i])
			wcarry++;
	}
	if (!wsum && !wcarry)
		return energy;
	shift = wcarry ? fls64(wcarry) : 0;
	if (shift) {
		wsum = 0;
		for (i = 0; i < n; i++)
			wsum += weight[i] >> shift;
		if (!wsum)
			return energy;
	}

	total = idle_ns + busy_ns;
	if (total < idle_ns) {
		/* halving both changes their ratio by less than 2^-62 */
		idle_ns >>= 1;
		busy_ns >>= 1;
		total = idle_ns + busy_ns;
	}
	busy = energy - cge_mul_div_u64(energy, idle_ns, total);

	prefix = 0;
	prev = 0;
	for (i = 0; i < n; i++) {
		prefix += weight[i] >> shift;
		cur = cge_mul_div_u64(busy, prefix, wsum);
		share[i] = cur - prev;
		prev = cur;
	}
	/* prefix == wsum now, so prev == busy: the shares sum exactly */
	return energy - busy;
}

/**
 * cge_split_kinds - split between idle, kinds of non-task time, and tasks
 * @energy: energy of the interval of one package
 * @idle_ns: CPU time spent idle
 * @kind_ns: @nk times that were neither idle nor a task's (interrupts, ...)
 * @kind_share: @nk outputs, the energy of each kind
 * @nk: number of kinds, at most CGE_SPLIT_MAX_KINDS (more are ignored)
 * @busy_ns: CPU time spent running tasks
 * @weight: @n weights of the consumers, as for cge_split()
 * @share: @n outputs, the energy of each consumer
 * @n: number of consumers
 *
 * By time first: idle, each kind and the tasks together get their part of
 * @energy as cge_split() gives it; the tasks' part is then split between
 * the consumers by @weight. With no kinds, this is cge_split(). Every unit
 * goes somewhere: idle + sum(kind_share) + sum(share) == @energy.
 *
 * Return: the idle share.
 */
u64 cge_split_kinds(u64 energy, u64 idle_ns, const u64 *kind_ns,
		    u64 *kind_share, unsigned int nk, u64 busy_ns,
		    const u64 *weight, u64 *share, unsigned int n)
{
	u64 t[CGE_SPLIT_MAX_KINDS + 1], s[CGE_SPLIT_MAX_KINDS + 1];
	unsigned int k, shift = 0;
	u64 active, idle;
	bool carry;

	if (nk > CGE_SPLIT_MAX_KINDS)	/* callers check at build time */
		nk = CGE_SPLIT_MAX_KINDS;
	/* all times shifted alike until their sum fits in 64 bits */
	do {
		carry = false;
		t[0] = busy_ns >> shift;
		active = t[0];
		for (k = 0; k < nk; k++) {
			t[k + 1] = kind_ns[k] >> shift;
			active += t[k + 1];
			carry |= active < t[k + 1];
		}
	} while (carry && ++shift);
	idle = cge_split(energy, idle_ns >> shift, active, t, s, nk + 1);
	for (k = 0; k < nk; k++)
		kind_share[k] = s[k + 1];
	return idle + cge_split(s[0], 0, busy_ns, weight, share, n);
}
