// SPDX-License-Identifier: GPL-2.0
/*
 * probe.c - sched_switch tracepoint glue and per-CPU charging.
 *
 * The probe runs inside __schedule() with the runqueue lock held and IRQs
 * off. It touches only this CPU's cge_cpu, reads no clock, never takes a
 * lock, never allocates, never reads an MSR and records cgroup ids, not
 * references. The sampler drains each CPU's cache by an IPI to that CPU,
 * unless the CPU has stayed idle since its last drain (cge_drain_quiet()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/percpu.h>
#include <linux/smp.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/cgroup.h>
#include <linux/cpuhotplug.h>
#include <linux/tracepoint.h>
#include <linux/string.h>

#include "compat.h"
#include "probe.h"
#include "cgstate.h"
#include "topo.h"

struct cge_cpu {
	bool tracking;		/* CPU online: charge its time */
	bool idle_at_drain;	/* the idle task ran at the last drain */
	struct task_struct *cur; /* whose runtime start_rt is; never deref'd */
	u64 cur_cgid;		/* the cgroup cur's runtime is charged to */
	u64 cur_parent;		/* cur_cgid's parent, set with it (0: root) */
	u64 wake_cgid;		/* a kernel thread's cgroup, if one left idle */
	u64 wake_parent;	/* ... and its parent */
	bool wake_pending;	/* ... and has not yet handed the CPU on */
	u64 start_rt;		/* cur's sum_exec_runtime, charged up to */
	u64 busy_ns;		/* CPU time charged since the last drain */
	u64 drain_ns;		/* local_clock() at the last drain */
	u64 overflows;		/* charges that took the overflow path */
	u64 quiet_drains;	/* drains without an IPI (sampler-owned) */
	struct task_struct *idle; /* this CPU's idle task (pid 0), once it ran */
	unsigned int hint;	/* slot of the last charge */
	struct cge_cpu_sample s;
};

/*
 * Written on its own CPU with IRQs off (the probe, the drain IPI, the
 * hotplug callbacks), and by the sampler, which holds cpus_read_lock():
 * it takes an offline CPU's cache, where nothing runs the probe, and
 * checks an online CPU's state without a lock to skip an idle CPU's IPI
 * (cge_drain_quiet(), which alone writes drain_ns and quiet_drains from
 * outside). No lock is needed. Allocated (alloc_percpu(), not a
 * static per-CPU variable: those come from the small reserve all modules
 * share) before the sampler starts and freed after its last sample.
 */
static struct cge_cpu __percpu *cge_cpus;
static struct tracepoint *cge_tp;
static struct tracepoint *cge_attach_tp;
static enum cpuhp_state cge_hp_state;

/* The id of @cg's parent, 0 for the root. */
static inline u64 cge_parent_id(struct cgroup *cg)
{
	struct cgroup *pcg = cgroup_parent(cg);

	return pcg ? cgroup_id(pcg) : 0;
}

/*
 * Make @cg, the cgroup c->cur is in now, the one its time is charged to.
 * The parent's id is recorded with it while the task is known to be in @cg:
 * the sampler needs it to find the nearest ancestor of a cgroup removed
 * before the drain, and once the task has moved (the cgroup_attach_task
 * tracepoint fires after the move) it can no longer be looked up. A cgroup's
 * parent never changes and ids are never reused, so a switch between two
 * tasks of one cgroup skips the lookup.
 */
static inline void cge_set_cur(struct cge_cpu *c, struct cgroup *cg)
{
	u64 cgid = cgroup_id(cg);

	if (cgid != c->cur_cgid) {
		c->cur_cgid = cgid;
		c->cur_parent = cge_parent_id(cg);
	}
}

/*
 * Background work in Apple's sense (QoS background/maintenance): on Linux,
 * SCHED_IDLE, SCHED_BATCH and nice >= 10. Weighted by kqos_background.
 */
static inline bool cge_task_background(struct task_struct *p)
{
	return p->policy == SCHED_IDLE || p->policy == SCHED_BATCH ||
	       task_nice(p) >= 10;
}

/*
 * Ask the sampler for a record for @cgid, which the overflow path met without
 * one, once per drain of this CPU: a cgroup that switches often must not fill
 * the list alone; each drain makes records for up to CGE_WANTS distinct ones.
 */
static void cge_want(struct cge_cpu_sample *s, u64 cgid, u64 parent)
{
	unsigned int i;

	for (i = 0; i < s->nr_want; i++)
		if (s->want[i].cgid == cgid)
			return;
	if (s->nr_want == CGE_WANTS)
		return;
	s->want[s->nr_want].cgid = cgid;
	s->want[s->nr_want++].parent_cgid = parent;
}

/* Charge @ns and @wakeups to @p's cgroup @cgid, child of @parent, in @c. */
static void cge_charge(struct cge_cpu *c, struct task_struct *p, u64 cgid,
		       u64 parent, u64 ns, u32 wakeups)
{
	u64 bg_ns = ns && cge_task_background(p) ? ns : 0;
	struct cge_cpu_sample *s = &c->s;
	struct cge_slot *sl;
	unsigned int i;

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
		if (!cge_cgstate_overflow(cgid, parent, ns, bg_ns, wakeups,
					  cge_topo_pkg(smp_processor_id())))
			cge_want(s, cgid, parent);
		return;
	}
	c->hint = s->nr;
	sl = &s->slot[s->nr++];
	sl->cgid = cgid;
	sl->parent_cgid = parent;
	sl->ns = 0;
	sl->bg_ns = 0;
	sl->wakeups = 0;
found:
	sl->ns += ns;
	sl->bg_ns += bg_ns;
	sl->wakeups += wakeups;
}

/*
 * Charge @p (running here, not the idle task) its CPU time since it was
 * switched in or last charged. The scheduler has brought
 * p->se.sum_exec_runtime up to date before sched_switch fires, for every
 * scheduling class (update_curr() from dequeue or put_prev_task), and it is
 * what cpu.stat's usage_usec sums: so the probe reads no clock and agrees
 * with cpu.stat by construction.
 */
static void cge_charge_task(struct cge_cpu *c, struct task_struct *p)
{
	u64 rt = READ_ONCE(p->se.sum_exec_runtime);
	u64 delta = rt - c->start_rt;

	c->start_rt = rt;
	/* Only a task whose start we saw (not one running when we attached). */
	if (unlikely(p != c->cur)) {
		c->cur = p;
		cge_set_cur(c, task_dfl_cgroup(p));
		return;
	}
	c->busy_ns += delta;
	cge_charge(c, p, c->cur_cgid, c->cur_parent, delta, 0);
}

static inline void cge_switch_in(struct cge_cpu *c, struct task_struct *p)
{
	c->cur = p;
	cge_set_cur(c, task_dfl_cgroup(p));
	c->start_rt = READ_ONCE(p->se.sum_exec_runtime);
}

#ifdef CGE_SELFTIME
/*
 * Self-timing build (make CGE_SELFTIME=y): every 16th call is timed with
 * local_clock() around the probe body; energy.info shows the mean. For the
 * benchmark only: the clock reads cost more than the body.
 */
struct cge_selftime {
	u64 calls;
	u64 timed;
	u64 ns;
};

static DEFINE_PER_CPU(struct cge_selftime, cge_selftime);

static void cge_probe_body(struct cge_cpu *c, struct task_struct *prev,
			   struct task_struct *next);

static void notrace cge_probe(CGE_SCHED_SWITCH_ARGS)
{
	struct cge_selftime *st = this_cpu_ptr(&cge_selftime);
	struct cge_cpu *c = this_cpu_ptr(cge_cpus);
	u64 t0;

	if (unlikely(!c->tracking))
		return;
	if (++st->calls & 15) {
		cge_probe_body(c, prev, next);
		return;
	}
	t0 = local_clock();
	cge_probe_body(c, prev, next);
	st->ns += local_clock() - t0;
	st->timed++;
}

void cge_probe_selftime(u64 *timed, u64 *ns)
{
	int cpu;

	*timed = 0;
	*ns = 0;
	for_each_possible_cpu(cpu) {
		*timed += READ_ONCE(per_cpu_ptr(&cge_selftime, cpu)->timed);
		*ns += READ_ONCE(per_cpu_ptr(&cge_selftime, cpu)->ns);
	}
}
#else
static void cge_probe_body(struct cge_cpu *c, struct task_struct *prev,
			   struct task_struct *next);

static void notrace cge_probe(CGE_SCHED_SWITCH_ARGS)
{
	struct cge_cpu *c = this_cpu_ptr(cge_cpus);

	if (likely(c->tracking))
		cge_probe_body(c, prev, next);
}

void cge_probe_selftime(u64 *timed, u64 *ns)
{
	*timed = 0;
	*ns = 0;
}
#endif

static __always_inline void cge_probe_body(struct cge_cpu *c,
					   struct task_struct *prev,
					   struct task_struct *next)
{
	if (!is_idle_task(prev))
		cge_charge_task(c, prev);
	if (is_idle_task(next)) {
		/*
		 * The CPU's own idle task has pid 0; play_idle_precise() also
		 * marks kthreads PF_IDLE (powerclamp), and those are freed.
		 */
		if (!next->pid)
			WRITE_ONCE(c->idle, next);
		/* A kernel thread woke the CPU for its own work. */
		if (c->wake_pending) {
			c->wake_pending = false;
			cge_charge(c, prev, c->wake_cgid, c->wake_parent, 0, 1);
		}
		return;
	}
	cge_switch_in(c, next);
	/*
	 * Leaving the idle task to run a task is one wakeup of its cgroup. A
	 * kernel thread that left idle only to hand the CPU to a task (the
	 * timer thread that wakes sleepers on PREEMPT_RT) passes it on.
	 */
	if (is_idle_task(prev) && (next->flags & PF_KTHREAD)) {
		c->wake_pending = true;
		c->wake_cgid = c->cur_cgid;
		c->wake_parent = c->cur_parent;
	} else if (is_idle_task(prev) ||
		   (c->wake_pending && !(next->flags & PF_KTHREAD))) {
		c->wake_pending = false;
		cge_charge(c, next, c->cur_cgid, c->cur_parent, 0, 1);
	}
}

/*
 * Close this CPU's interval: charge the running task up to its last
 * runtime update, and call idle whatever part of the wall time since the
 * last drain no task was charged for.
 */
static void cge_close_interval(struct cge_cpu *c)
{
	u64 now = local_clock();
	u64 wall = now > c->drain_ns ? now - c->drain_ns : 0;

	if (!is_idle_task(current)) {
		cge_charge_task(c, current);
		/* A task moved by another process: its new cgroup from now on. */
		cge_set_cur(c, task_dfl_cgroup(current));
	}
	c->s.idle_ns += wall > c->busy_ns ? wall - c->busy_ns : 0;
	c->busy_ns = 0;
	c->drain_ns = now;
	c->idle_at_drain = is_idle_task(current);
}

static void cge_take(struct cge_cpu *c, struct cge_cpu_sample *out)
{
	out->idle_ns = c->s.idle_ns;
	out->nr = c->s.nr;
	memcpy(out->slot, c->s.slot, c->s.nr * sizeof(c->s.slot[0]));
	out->nr_want = c->s.nr_want;
	memcpy(out->want, c->s.want, c->s.nr_want * sizeof(c->s.want[0]));
	c->s.idle_ns = 0;
	c->s.nr = 0;
	c->s.nr_want = 0;
	c->hint = 0;
}

/* IPI: on the CPU itself, IRQs off, so the probe cannot interleave. */
static void cge_drain_local(void *arg)
{
	struct cge_cpu *c = this_cpu_ptr(cge_cpus);
	struct cge_drain *dr = arg;

	if (c->tracking)
		cge_close_interval(c);
	cge_take(c, dr->out);
	if (dr->read_local) {
		dr->err = dr->read_local(&dr->raw);
		dr->read = true;
	}
}

/*
 * A CPU that was idle at its last drain and has charged nothing since has
 * stayed idle: leaving idle for a task charges a wakeup (a slot) or marks
 * a kernel thread's (wake_pending). Account its interval as idle from here
 * and leave it asleep (an IPI every interval_ms would wake every idle CPU
 * ten times a second); the probe does no extra work for this. drain_ns
 * belongs to the sampler (written here or by the IPI it sends; the probe
 * never reads it), and sched_clock_cpu() is @cpu's own clock. Should @cpu
 * wake between the checks and the update, at most that window is counted
 * as idle here and as busy at the next drain.
 */
static bool cge_drain_quiet(unsigned int cpu, struct cge_cpu *c,
			    struct cge_cpu_sample *out)
{
	unsigned long flags;
	u64 now, last;

	if (!READ_ONCE(c->tracking) || !READ_ONCE(c->idle_at_drain) ||
	    READ_ONCE(c->busy_ns) || READ_ONCE(c->s.nr) ||
	    READ_ONCE(c->s.nr_want) || READ_ONCE(c->s.idle_ns) ||
	    READ_ONCE(c->wake_pending))
		return false;
	local_irq_save(flags);
	now = sched_clock_cpu(cpu);
	last = READ_ONCE(c->drain_ns);
	WRITE_ONCE(c->drain_ns, now);
	local_irq_restore(flags);
	out->idle_ns = now > last ? now - last : 0;
	out->nr = 0;
	out->nr_want = 0;
	WRITE_ONCE(c->quiet_drains, c->quiet_drains + 1);
	return true;
}

/**
 * cge_cpu_drain() - take what @cpu ran since the previous drain
 * @cpu: any possible CPU
 * @dr: @dr->out receives the charges; the CPU's cache starts empty again.
 *	@dr->read says whether @dr->read_local ran on @cpu (@dr->err, @dr->raw)
 *
 * An online CPU charges its running slice up to now first (to the cgroup
 * its task is in now), so a long-running task is counted at every sample;
 * one that stayed idle is not woken (cge_drain_quiet()).
 * Caller holds cpus_read_lock(). Process context.
 *
 * Return: @cpu's idle task (pid 0, never freed) once the probe has seen it
 * run, else NULL.
 */
struct task_struct *cge_cpu_drain(unsigned int cpu, struct cge_drain *dr)
{
	struct cge_cpu *c = per_cpu_ptr(cge_cpus, cpu);
	struct cge_cpu_sample *out = dr->out;

	dr->read = false;
	if (!cpu_online(cpu)) {
		/* Hotplug is held off: nothing runs the probe there. */
		cge_take(c, out);
	} else if (!cge_drain_quiet(cpu, c, out)) {
		/* @cpu is online and hotplug is held off: the IPI cannot fail. */
		if (WARN_ON_ONCE(smp_call_function_single(cpu, cge_drain_local,
							  dr, 1))) {
			out->nr = 0;
			out->nr_want = 0;
			out->idle_ns = 0;
			dr->read = false;
		}
	}
	return READ_ONCE(c->idle);
}

/* The probe's health counters, summed over the CPUs (energy.info). */
void cge_probe_counters(u64 *overflows, u64 *quiet_drains)
{
	struct cge_cpu *c;
	int cpu;

	*overflows = 0;
	*quiet_drains = 0;
	for_each_possible_cpu(cpu) {
		c = per_cpu_ptr(cge_cpus, cpu);
		*overflows += READ_ONCE(c->overflows);
		*quiet_drains += READ_ONCE(c->quiet_drains);
	}
}

/* Runs on @cpu as it comes online: start charging from now. */
static int cge_cpu_online(unsigned int cpu)
{
	struct cge_cpu *c = this_cpu_ptr(cge_cpus);
	unsigned long flags;

	local_irq_save(flags);
	c->idle_at_drain = false;
	c->drain_ns = local_clock();
	c->busy_ns = 0;
	rcu_read_lock();
	cge_switch_in(c, current);
	rcu_read_unlock();
	c->tracking = true;
	local_irq_restore(flags);
	return 0;
}

/* Runs on @cpu as it goes offline: charge up to now, then stop. */
static int cge_cpu_offline(unsigned int cpu)
{
	struct cge_cpu *c = this_cpu_ptr(cge_cpus);
	unsigned long flags;

	local_irq_save(flags);
	if (c->tracking)
		cge_close_interval(c);
	c->tracking = false;
	local_irq_restore(flags);
	return 0;
}

/*
 * A task that moves itself to another cgroup (as `echo $$ > cgroup.procs`,
 * systemd and container runtimes do before exec): charge its runtime so far
 * to the cgroup it leaves, as cpu.stat does. Process context, after the move
 * (the tracepoint fires once cgroup_migrate() has committed, in 6.1 as in
 * mainline), so the cgroup left and its parent are those recorded in @c, not
 * looked up here; with the parent, the sampler charges the slice to it if
 * the cgroup is removed before the next sample.
 */
static void cge_attach_probe(void *data, struct cgroup *dst, const char *path,
			     struct task_struct *task, bool threadgroup)
{
	struct cgroup *cg;
	struct cge_cpu *c;
	unsigned long flags;

	if (task != current)
		return;
	local_irq_save(flags);
	c = this_cpu_ptr(cge_cpus);
	if (c->tracking && c->cur == current) {
		rcu_read_lock();
		cg = task_dfl_cgroup(current);	/* dst may be a v1 cgroup */
		if (cgroup_id(cg) != c->cur_cgid) {
			cge_charge_task(c, current);
			cge_set_cur(c, cg);
		}
		rcu_read_unlock();
	}
	local_irq_restore(flags);
}

static void cge_find_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "sched_switch"))
		cge_tp = tp;
	else if (!strcmp(tp->name, "cgroup_attach_task"))
		cge_attach_tp = tp;
}

/**
 * cge_probe_alloc() - allocate the per-CPU caches (zeroed: not tracking)
 *
 * Before the sampler starts, which drains them; cge_probe_free() after its
 * last sample.
 *
 * Return: 0 or -ENOMEM.
 */
int cge_probe_alloc(void)
{
	cge_cpus = alloc_percpu(struct cge_cpu);
	return cge_cpus ? 0 : -ENOMEM;
}

void cge_probe_free(void)
{
	free_percpu(cge_cpus);
	cge_cpus = NULL;
}

int cge_probe_init(void)
{
	int ret;

	for_each_kernel_tracepoint(cge_find_tp, NULL);
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
		return ret;
	}
	/* Without it, a self-moved task's first slice goes to its new cgroup. */
	if (!cge_attach_tp ||
	    tracepoint_probe_register(cge_attach_tp, cge_attach_probe, NULL)) {
		pr_warn("cannot attach to cgroup_attach_task\n");
		cge_attach_tp = NULL;
	}
	return 0;
}

void cge_probe_exit(void)
{
	if (cge_attach_tp)
		tracepoint_probe_unregister(cge_attach_tp, cge_attach_probe,
					    NULL);
	tracepoint_probe_unregister(cge_tp, cge_probe, NULL);
	tracepoint_synchronize_unregister();
	cpuhp_remove_state(cge_hp_state);
}
