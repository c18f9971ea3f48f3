// SPDX-License-Identifier: GPL-2.0
/*
 * systime.c - interrupt, softirq and steal time out of each CPU's idle.
 *
 * The probe charges tasks their sum_exec_runtime; what is left of the wall
 * time is the CPU's non-task time. Part of it the CPU spent in interrupts,
 * softirqs, or stolen by a hypervisor; the kernel's counters of those
 * (kernel_cpustat, what /proc/stat shows) say how much, but how they relate
 * to tasks' runtime depends on the kernel's configuration:
 *  - With CONFIG_IRQ_TIME_ACCOUNTING, switched on at boot (sched_clock_irqtime;
 *    tsc=noirqtime or an unstable TSC switch it off), the kernel measures
 *    interrupt and softirq time and keeps it out of tasks' runtime: all of
 *    it lies in the non-task time (softirqs run by ksoftirqd are that
 *    thread's runtime). A tick while the idle task runs is then idle time.
 *  - Without it (Debian's kernels), or switched off, the counters are tick
 *    samples, and a
 *    sample that hits a running task is also in that task's runtime, which
 *    the module has charged. A sample that hits the idle task is also added
 *    to the idle task's stime (account_process_tick(): a tick in an
 *    interrupt or softirq while idle is system time of the idle task), so
 *    the idle task's stime increase is the sampled interrupt time that no
 *    task was charged for (a tick while the idle task has softirqs
 *    disabled adds to it too, as system time: the caps below keep that
 *    out). It is shared between irq and softirq as the CPU's counters rose,
 *    and never exceeds what they rose. An idle task's stime that rises at
 *    all says the ticks sample: from then on this rule applies even where
 *    CONFIG_IRQ_TIME_ACCOUNTING is built in.
 *  - On a nohz_full CPU the kernel accounts time at kernel entry and exit
 *    (vtime), not at the tick: neither counter moves, and nothing is taken.
 *  - Steal is measured at each tick from the hypervisor's clock. Without
 *    CONFIG_PARAVIRT_TIME_ACCOUNTING, steal while a task ran is also in its
 *    runtime; what fits in the non-task time is taken.
 * Each interval, each CPU's parts are taken out of its non-task time, in
 * the order irq, softirq, steal, up to what is left of it.
 */
#include <linux/kernel.h>
#include <linux/kernel_stat.h>
#include <linux/sched.h>
#include <linux/cpumask.h>
#include <linux/slab.h>

#include "systime.h"
#include "split.h"

static const enum cpu_usage_stat cge_sys_stat[CGE_SYS_NR] = {
	[CGE_SYS_IRQ] = CPUTIME_IRQ,
	[CGE_SYS_SOFTIRQ] = CPUTIME_SOFTIRQ,
	[CGE_SYS_STEAL] = CPUTIME_STEAL,
};

/* Each possible CPU's counters at the previous take; sampler only. */
struct cge_sys_prev {
	u64 ns[CGE_SYS_NR];
	u64 idle_stime;			/* its idle task's stime */
	struct task_struct *idle;	/* whose stime that is */
};

static struct cge_sys_prev *cge_sys_prev;
/* An idle task's stime rose: the kernel samples interrupt time at ticks. */
static bool cge_sys_ticks;

/**
 * cge_systime_carve - take the kinds of system time out of a CPU's idle
 * @delta: CGE_SYS_NR times of the interval, ns
 * @idle_ns: the CPU's non-task time in the interval; reduced by the result
 * @out: CGE_SYS_NR outputs: each kind's part, at most what @idle_ns had left
 */
void cge_systime_carve(const u64 *delta, u64 *idle_ns, u64 *out)
{
	unsigned int k;

	for (k = 0; k < CGE_SYS_NR; k++) {
		out[k] = min(delta[k], *idle_ns);
		*idle_ns -= out[k];
	}
}

/**
 * cge_systime_sampled - the sampled interrupt time no task was charged for
 * @idle_irq_ns: the idle task's stime increase: irq and softirq samples
 *		 taken while it ran
 * @delta: the CPU's counter increases; its irq and softirq are replaced by
 *	   their parts of @idle_irq_ns, shared as they rose, each at most
 *	   what it was
 */
void cge_systime_sampled(u64 idle_irq_ns, u64 *delta)
{
	u64 irq = delta[CGE_SYS_IRQ], soft = delta[CGE_SYS_SOFTIRQ];
	u64 sum = irq + soft;

	if (!sum) {
		/* the idle task's system time was not an interrupt's */
		delta[CGE_SYS_IRQ] = 0;
		delta[CGE_SYS_SOFTIRQ] = 0;
		return;
	}
	delta[CGE_SYS_IRQ] = min(irq, cge_mul_div_u64(idle_irq_ns, irq, sum));
	delta[CGE_SYS_SOFTIRQ] = min(soft, idle_irq_ns - delta[CGE_SYS_IRQ]);
}

static u64 cge_sys_read(unsigned int cpu, unsigned int k)
{
	return READ_ONCE(kcpustat_cpu(cpu).cpustat[cge_sys_stat[k]]);
}

int cge_systime_init(void)
{
	unsigned int cpu, k;

	cge_sys_prev = kcalloc(nr_cpu_ids, sizeof(*cge_sys_prev), GFP_KERNEL);
	if (!cge_sys_prev)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		for (k = 0; k < CGE_SYS_NR; k++)
			cge_sys_prev[cpu].ns[k] = cge_sys_read(cpu, k);
	return 0;
}

void cge_systime_exit(void)
{
	kfree(cge_sys_prev);
	cge_sys_prev = NULL;
}

/* The increase of @idle's stime since the previous take; 0 the first time. */
static u64 cge_idle_irq_ns(struct cge_sys_prev *p, struct task_struct *idle)
{
	u64 stime, d;

	if (!idle)
		return 0;
	stime = READ_ONCE(idle->stime);
	d = p->idle == idle ? stime - p->idle_stime : 0;
	p->idle = idle;
	p->idle_stime = stime;
	return d;
}

/**
 * cge_systime_take - one CPU's system time since the previous take
 * @cpu: the CPU, just drained
 * @idle: its idle task (cge_cpu_drain()), or NULL if it has not run yet
 * @idle_ns: its non-task time since its previous drain; reduced by what is
 *	     taken
 * @acc: each kind's part is added here
 *
 * Process context, sampler only. The counters are written by @cpu itself;
 * a read that races with an update sees the old or the new value, as
 * /proc/stat does.
 */
void cge_systime_take(unsigned int cpu, struct task_struct *idle,
		      u64 *idle_ns, struct cge_systime *acc)
{
	struct cge_sys_prev *p = &cge_sys_prev[cpu];
	u64 now, delta[CGE_SYS_NR], part[CGE_SYS_NR], idle_irq;
	unsigned int k;

	for (k = 0; k < CGE_SYS_NR; k++) {
		now = cge_sys_read(cpu, k);
		delta[k] = now - p->ns[k];
		p->ns[k] = now;
	}
	idle_irq = cge_idle_irq_ns(p, idle);
	if (idle_irq)
		cge_sys_ticks = true;
	if (!IS_ENABLED(CONFIG_IRQ_TIME_ACCOUNTING) || cge_sys_ticks)
		cge_systime_sampled(idle_irq, delta);
	cge_systime_carve(delta, idle_ns, part);
	for (k = 0; k < CGE_SYS_NR; k++)
		acc->ns[k] += part[k];
}
