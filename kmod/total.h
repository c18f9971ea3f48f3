/* SPDX-License-Identifier: GPL-2.0 */
/*
 * total.h - cumulative totals that never wrap.
 */
#ifndef CGE_TOTAL_H
#define CGE_TOTAL_H

#include <linux/limits.h>
#include <linux/overflow.h>
#include <linux/types.h>

/*
 * A cumulative time: whole microseconds (what energy.stat shows) and the
 * nanoseconds below them. 2^64 µs is 584,542 CPU-years: 142 years of a
 * 4,096-CPU machine's root. In nanoseconds it would be 52 days.
 */
struct cge_time_total {
	u64 us;
	u32 rem_ns;		/* < NSEC_PER_USEC */
};

/*
 * @a + @b, or U64_MAX if that does not fit. Inline: the sampler makes
 * several for every charged cgroup and ancestor.
 */
static inline u64 cge_sat_add(u64 a, u64 b)
{
	u64 sum;

	return check_add_overflow(a, b, &sum) ? U64_MAX : sum;
}

u64 cge_time_carry(u32 *rem_ns, u64 ns);
void cge_time_add(struct cge_time_total *t, u64 ns);

#endif /* CGE_TOTAL_H */
