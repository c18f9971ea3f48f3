// SPDX-License-Identifier: GPL-2.0
/*
 * total.c - cumulative totals that never wrap: times kept in microseconds
 * with their nanosecond remainder, and adds that stop at U64_MAX. A total
 * never decreases, as energy.stat promises.
 */
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/time64.h>

#include "total.h"

/**
 * cge_time_carry() - add @ns to a remainder below a microsecond
 * @rem_ns: nanoseconds, < NSEC_PER_USEC before and after
 * @ns: nanoseconds
 *
 * Return: the whole microseconds that @ns and *@rem_ns make together; what
 * is left below one stays in *@rem_ns.
 */
u64 cge_time_carry(u32 *rem_ns, u64 ns)
{
	u32 rem;
	u64 us = div_u64_rem(ns, NSEC_PER_USEC, &rem);

	rem += *rem_ns;
	if (rem >= NSEC_PER_USEC) {
		rem -= NSEC_PER_USEC;
		us++;
	}
	*rem_ns = rem;
	return us;
}

/**
 * cge_time_add() - add @ns to @t, exactly
 * @t: the total
 * @ns: nanoseconds
 *
 * t->us stays floor(all nanoseconds added / 1000) until it reaches U64_MAX,
 * where it stays.
 */
void cge_time_add(struct cge_time_total *t, u64 ns)
{
	t->us = cge_sat_add(t->us, cge_time_carry(&t->rem_ns, ns));
}
