// SPDX-License-Identifier: GPL-2.0
/*
 * clockcal - what a local_clock() pair costs on this machine (make bench).
 *
 * The self-timing build of cgroup_energy (CGE_SELFTIME=y) times the probe
 * body as local_clock() - t0 around it, which includes the tail of one
 * local_clock() call and the head of the next. Timing nothing the same way
 * gives that overhead, to subtract: this module does it ROUNDS times with
 * IRQs off at load and shows the mean and the minimum in its parameters:
 *
 *   insmod clockcal.ko && cat /sys/module/clockcal/parameters/pair_ns_mean
 */
#include <linux/module.h>
#include <linux/sched/clock.h>
#include <linux/irqflags.h>
#include <linux/compiler.h>
#include <linux/limits.h>

#define ROUNDS 20000

static unsigned long pair_ns_mean;
module_param(pair_ns_mean, ulong, 0444);
MODULE_PARM_DESC(pair_ns_mean, "mean of local_clock() - t0 around nothing, ns (x1000 in pair_ps_mean)");
static unsigned long pair_ps_mean;
module_param(pair_ps_mean, ulong, 0444);
MODULE_PARM_DESC(pair_ps_mean, "the same mean in picoseconds");
static unsigned long pair_ns_min;
module_param(pair_ns_min, ulong, 0444);
MODULE_PARM_DESC(pair_ns_min, "minimum of local_clock() - t0 around nothing, ns");

static int __init clockcal_init(void)
{
	unsigned long flags, min = ULONG_MAX;
	u64 sum = 0, t0, d;
	int i;

	local_irq_save(flags);
	for (i = 0; i < ROUNDS; i++) {
		t0 = local_clock();
		barrier();
		d = local_clock() - t0;
		sum += d;
		if (d < min)
			min = d;
	}
	local_irq_restore(flags);
	pair_ns_mean = div_u64(sum, ROUNDS);
	pair_ps_mean = div_u64(sum * 1000, ROUNDS);
	pair_ns_min = min;
	return 0;
}

static void __exit clockcal_exit(void)
{
}

module_init(clockcal_init);
module_exit(clockcal_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("cgroup-energy bench: cost of a local_clock() pair");
