/* SPDX-License-Identifier: GPL-2.0 */
/*
 * systime.h - the CPU time that is neither a task's nor idle: interrupts,
 * softirqs and time stolen by a hypervisor, as the kernel books them.
 */
#ifndef CGE_SYSTIME_H
#define CGE_SYSTIME_H

#include <linux/types.h>

enum cge_sys_kind {
	CGE_SYS_IRQ,
	CGE_SYS_SOFTIRQ,
	CGE_SYS_STEAL,
	CGE_SYS_NR
};

/* Time of each kind, ns. */
struct cge_systime {
	u64 ns[CGE_SYS_NR];
};

struct task_struct;

void cge_systime_carve(const u64 *delta, u64 *idle_ns, u64 *out);
void cge_systime_sampled(u64 idle_irq_ns, u64 *delta);
int cge_systime_init(void);
void cge_systime_exit(void);
void cge_systime_take(unsigned int cpu, struct task_struct *idle,
		      u64 *idle_ns, struct cge_systime *acc);

#endif /* CGE_SYSTIME_H */
