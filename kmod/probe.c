// SPDX-License-Identifier: GPL-2.0
/*
 * probe.c - sched_switch tracepoint glue and per-CPU charging.
 *
 * The probe runs inside __schedule() with the runqueue lock held and IRQs
 * off. It touches only this CPU's cge_cpu under a raw spinlock (taken
 * remotely only by the sampler's drain), reads local_clock() once, never
 * allocates, never reads an MSR and records cgroup ids, not references.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/cgroup.h>
#include <linux/cpuhotplug.h>
#include <linux/tracepoint.h>
#include <linux/string.h>

#include "compat.h"
#include "probe.h"
#include "cgstate.h"

struct cge_cpu {
	raw_spinlock_t lock;
	bool tracking;		/* CPU online and probe primed */
	bool cur_idle;		/* the idle task runs now */
	u64 last_ns;		/* cpu_clock() at the last charge */
	u64 cur_cgid;		/* cgroup of the task running now */
	u64 overflows;		/* charges that took the overflow path */
	unsigned int hint;	/* slot of the last charge */
	struct cge_cpu_sample s;
};

static DEFINE_PER_CPU(struct cge_cpu, cge_cpu);
static struct tracepoint *cge_tp;
static enum cpuhp_state cge_hp_state;

static inline u64 cge_task_cgid(struct task_struct *p)
{
	return cgroup_id(task_dfl_cgroup(p));
}

/*
 * The id of the parent of @cgid, the cgroup @p is in, or 0 if @p is no
 * longer there (or unknown). Looked up only when a slot is created, so the
 * sampler can find the nearest ancestor of a cgroup removed before the drain.
 */
static u64 cge_parent_cgid(struct task_struct *p, u64 cgid)
{
	struct cgroup *cg, *pcg;

	if (!p)
		return 0;
	cg = task_dfl_cgroup(p);
	pcg = cgroup_parent(cg);
	return cgroup_id(cg) == cgid && pcg ? cgroup_id(pcg) : 0;
}

/*
 * Charge @ns and @wakeups to @cgid in @c's cache; @p, if known, is a task of
 * that cgroup. Lock held.
 */
static void cge_charge(struct cge_cpu *c, u64 cgid, struct task_struct *p,
		       u64 ns, u32 wakeups)
{
	struct cge_cpu_sample *s = &c->s;
	struct cge_slot *sl;
	unsigned int i;

	if (!ns && !wakeups)
		return;
	if (c->hint < s->nr && s->slot[c->hint].cgid == cgid) {
		sl = &s->slot[c->hint];
		goto found;
	}
	for (i = 0; i < s->nr; i++) {
		if (s->slot[i].cgid == cgid) {
			c->hint = i;
			sl = &s->slot[i];
			goto found;
		}
	}
	if (unlikely(s->nr == CGE_SLOTS)) {
		c->overflows++;
		cge_cgstate_overflow(cgid, cge_parent_cgid(p, cgid), ns,
				     wakeups);
		return;
	}
	c->hint = s->nr;
	sl = &s->slot[s->nr++];
	sl->cgid = cgid;
	sl->parent_cgid = cge_parent_cgid(p, cgid);
	sl->ns = 0;
	sl->wakeups = 0;
found:
	sl->ns += ns;
	sl->wakeups += wakeups;
}

/* Charge the running slice up to @now. Lock held. */
static void cge_charge_until(struct cge_cpu *c, u64 now, struct task_struct *p)
{
	u64 delta = now > c->last_ns ? now - c->last_ns : 0;

	c->last_ns = now;
	if (c->cur_idle)
		c->s.idle_ns += delta;
	else
		cge_charge(c, c->cur_cgid, p, delta, 0);
}

static void notrace cge_probe(CGE_SCHED_SWITCH_ARGS)
{
	struct cge_cpu *c = this_cpu_ptr(&cge_cpu);
	u64 now = local_clock();
	bool next_idle = is_idle_task(next);
	u64 cgid = next_idle ? 0 : cge_task_cgid(next);

	raw_spin_lock(&c->lock);
	if (likely(c->tracking)) {
		/* Leaving the idle task to run a task: one wakeup. */
		if (c->cur_idle && !next_idle)
			cge_charge(c, cgid, next, 0, 1);
		cge_charge_until(c, now, prev);
	}
	c->cur_idle = next_idle;
	c->cur_cgid = cgid;
	raw_spin_unlock(&c->lock);
}

/**
 * cge_cpu_drain() - take what @cpu ran since the previous drain
 * @cpu: any possible CPU
 * @out: receives the charges; the CPU's cache starts empty again
 *
 * Charges the running slice up to now first, so that a long-running task
 * is counted at every sample. Process context.
 */
void cge_cpu_drain(unsigned int cpu, struct cge_cpu_sample *out)
{
	struct cge_cpu *c = per_cpu_ptr(&cge_cpu, cpu);
	unsigned long flags;

	raw_spin_lock_irqsave(&c->lock, flags);
	if (c->tracking)
		cge_charge_until(c, cpu_clock(cpu), NULL);
	out->idle_ns = c->s.idle_ns;
	out->nr = c->s.nr;
	memcpy(out->slot, c->s.slot, c->s.nr * sizeof(c->s.slot[0]));
	c->s.idle_ns = 0;
	c->s.nr = 0;
	c->hint = 0;
	raw_spin_unlock_irqrestore(&c->lock, flags);
}

u64 cge_probe_overflows(void)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(&cge_cpu, cpu)->overflows);
	return sum;
}

/* Runs on @cpu as it comes online: start charging from now. */
static int cge_cpu_online(unsigned int cpu)
{
	struct cge_cpu *c = per_cpu_ptr(&cge_cpu, cpu);
	unsigned long flags;

	raw_spin_lock_irqsave(&c->lock, flags);
	c->last_ns = local_clock();
	c->cur_idle = is_idle_task(current);
	rcu_read_lock();
	c->cur_cgid = c->cur_idle ? 0 : cge_task_cgid(current);
	rcu_read_unlock();
	c->tracking = true;
	raw_spin_unlock_irqrestore(&c->lock, flags);
	return 0;
}

/* Runs on @cpu as it goes offline: charge up to now, then stop. */
static int cge_cpu_offline(unsigned int cpu)
{
	struct cge_cpu *c = per_cpu_ptr(&cge_cpu, cpu);
	unsigned long flags;

	raw_spin_lock_irqsave(&c->lock, flags);
	if (c->tracking)
		cge_charge_until(c, local_clock(), current);
	c->tracking = false;
	raw_spin_unlock_irqrestore(&c->lock, flags);
	return 0;
}

static void cge_find_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_switch"))
		*(struct tracepoint **)priv = tp;
}

int cge_probe_init(void)
{
	int cpu, ret;

	for_each_possible_cpu(cpu)
		raw_spin_lock_init(&per_cpu_ptr(&cge_cpu, cpu)->lock);

	for_each_kernel_tracepoint(cge_find_tp, &cge_tp);
	if (!cge_tp) {
		pr_err("tracepoint sched_switch not found\n");
		return -ENOENT;
	}

	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "cgroup_energy:online",
				cge_cpu_online, cge_cpu_offline);
	if (ret < 0)
		return ret;
	cge_hp_state = ret;

	ret = tracepoint_probe_register(cge_tp, cge_probe, NULL);
	if (ret) {
		pr_err("cannot attach to sched_switch: %d\n", ret);
		cpuhp_remove_state(cge_hp_state);
	}
	return ret;
}

void cge_probe_exit(void)
{
	tracepoint_probe_unregister(cge_tp, cge_probe, NULL);
	tracepoint_synchronize_unregister();
	cpuhp_remove_state(cge_hp_state);
}
