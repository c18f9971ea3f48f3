// SPDX-License-Identifier: GPL-2.0
/* Minimal: a no-op sched_switch probe registered the way cgroup_energy does. */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt
#include <linux/module.h>
#include <linux/tracepoint.h>
#include <linux/sched.h>
#include <linux/string.h>

static struct tracepoint *tp;

static void notrace tpmin_probe(void *data, bool preempt,
				struct task_struct *prev,
				struct task_struct *next,
				unsigned int prev_state)
{
}

static void find_tp(struct tracepoint *t, void *priv)
{
	if (!strcmp(t->name, "sched_switch"))
		tp = t;
}

static int __init tpmin_init(void)
{
	for_each_kernel_tracepoint(find_tp, NULL);
	if (!tp)
		return -ENOENT;
	return tracepoint_probe_register(tp, tpmin_probe, NULL);
}

static void __exit tpmin_exit(void)
{
	tracepoint_probe_unregister(tp, tpmin_probe, NULL);
	tracepoint_synchronize_unregister();
}

module_init(tpmin_init);
module_exit(tpmin_exit);
MODULE_LICENSE("GPL");
