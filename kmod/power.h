/* SPDX-License-Identifier: GPL-2.0 */
/*
 * power.h - each cgroup's power averaged over 10 s, 60 s and 300 s, decayed
 * exponentially as the kernel's load and pressure (PSI) averages are.
 *
 * Pure integer arithmetic: no allocation, no hardware access. No locking:
 * the caller serialises the charges of one step (struct cge_power_step),
 * which keeps the decays it works out.
 */
#ifndef CGE_POWER_H
#define CGE_POWER_H

#include <linux/types.h>

/* the windows: 10 s, 60 s, 300 s */
#define CGE_POWER_NR	3

/**
 * struct cge_power - one cgroup's averages
 * @at_ns: the time they hold at (the end of the last interval that charged
 *	energy; 0 before any)
 * @avg_nw: per window, nW (up to 18 GW)
 */
struct cge_power {
	u64 at_ns;
	u64 avg_nw[CGE_POWER_NR];
};

/* Decays over longer gaps that one step keeps (cge_power_add()). */
#define CGE_POWER_GAPS	4

/**
 * struct cge_power_step - one sampler interval, the same for every cgroup
 * @start_ns: its start (the previous sample)
 * @end_ns: its end
 * @decay: per window, exp(-(end - start) / window) in units of 2^-32
 * @gap_at_ns: times of last charges (struct cge_power's at_ns) before
 *	@start_ns whose decays to @end_ns are in @gap_decay
 * @gap_decay: those decays, per window
 * @gap_nr: the entries in use
 * @gap_next: the entry a new gap replaces once all are in use
 */
struct cge_power_step {
	u64 start_ns;
	u64 end_ns;
	u32 decay[CGE_POWER_NR];
	u64 gap_at_ns[CGE_POWER_GAPS];
	u32 gap_decay[CGE_POWER_GAPS][CGE_POWER_NR];
	unsigned int gap_nr;
	unsigned int gap_next;
};

u32 cge_power_decay(u64 ns, unsigned int k);
void cge_power_step(struct cge_power_step *s, u64 start_ns, u64 end_ns);
void cge_power_restart(struct cge_power_step *s, u64 now_ns);
void cge_power_charge(const struct cge_power_step *s, u64 uj,
		      u64 inc[CGE_POWER_NR]);
void cge_power_add(struct cge_power *p, struct cge_power_step *s,
		   const u64 inc[CGE_POWER_NR]);
void cge_power_read(const struct cge_power *p, u64 at_ns,
		    u64 mw[CGE_POWER_NR]);

#endif /* CGE_POWER_H */
