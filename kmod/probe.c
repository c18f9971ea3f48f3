// SPDX-License-Identifier: GPL-2.0
/*
 * probe.c - sched_switch tracepoint glue and per-CPU charging.
 *
 * The probe runs inside __schedule() with the runqueue lock held and IRQs
 * off. It writes only this CPU's cge_cpu, under this CPU's raw spinlock,
 * reads no clock, never allocates, never reads an MSR and records cgroup
 * ids, not references; only when it makes a slot or overflows does it look
 * records up, under RCU. The sampler drains each CPU from the sampler's CPU,
 * under that lock, without interrupting it (cge_cpu_drain()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/percpu.h>
#include <linux/smp.h>
#include <linux/cpu.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/cgroup.h>
#include <linux/cpuhotplug.h>
#include <linux/tracepoint.h>
#include <linux/string.h>
#include <linux/log2.h>

#include "compat.h"
#include "probe.h"
#include "cgstate.h"
#include "topo.h"

struct cge_cpu {
	raw_spinlock_t lock;
	bool tracking;		/* from its online callback until dead */
	/*
	 * cur runs here: the probe saw it switched in (or it is the hotplug
	 * thread that brought the CPU online), and not out yet
	 */
	bool running;
	bool idle_at_drain;	/* the idle task ran at the last drain */
	/* whose runtime start_rt is; read only while running (see above) */
	struct task_struct *cur;
	u64 cur_cgid;		/* the cgroup cur's runtime is charged to */
	u64 cur_parent;		/* cur_cgid's parent, set with it (0: root) */
	u64 cur_serial;		/* cur_cgid's serial_nr (U64_MAX: none yet) */
	u64 open_cgid;		/* the cgroup a drain last charged cur's */
	u64 open_parent;	/* ... open slice to, and its parent */
	u64 wake_cgid;		/* a kernel thread's cgroup, if one left idle */
	u64 wake_parent;	/* ... and its parent */
	bool wake_pending;	/* ... and has not yet handed the CPU on */
	u64 start_rt;		/* cur's runtime, charged up to */
	u64 busy_ns;		/* CPU time charged since the last drain */
	u64 drain_ns;		/* this CPU's sched_clock at the last drain */
	u64 overflows;		/* charges that took the overflow path */
	u64 quiet_drains;	/* drains of a CPU that stayed idle */
	u64 takebacks;		/* requests a newcomer took back (want.c) */
	struct task_struct *idle; /* this CPU's idle task (pid 0), once it ran */
	unsigned int hint;	/* slot of the last charge */
	struct cge_cpu_sample s;
};

/*
 * Each CPU's state is written under its lock: on the CPU itself by the
 * probe, the attach probe and the online callbacks (IRQs off), from the
 * sampler's CPU by the drain, which holds cpus_read_lock(), and from
 * another CPU by the dead callback once the CPU is gone and at module
 * exit (cge_cpus_stop()). A drain
 * closes the CPU's interval (charges the running task up to now) and takes
 * its cache, atomically with respect to the probe, without interrupting
 * the CPU (an IPI to do it there would interrupt every busy CPU every
 * interval, isolated ones, nohz_full or isolcpus, included; AMD's per-core
 * energy counters are the exception: sampler.c). The lock keeps the probe
 * out meanwhile; the probe takes it uncontended but for the drain of its
 * CPU (a copy of at most CGE_SLOTS slots, every interval_ms). A raw
 * spinlock, as the runqueue lock the probe nests in: it does not sleep on
 * PREEMPT_RT. Allocated (__alloc_percpu(), not a static per-CPU variable:
 * those come from the small reserve all modules share; aligned so that
 * each CPU's state is within one page: cge_probe_alloc()) before the
 * sampler starts and freed after its last sample.
 */
static struct cge_cpu __percpu *cge_cpus;
static struct tracepoint *cge_tp;
static struct tracepoint *cge_attach_tp;
static enum cpuhp_state cge_hp_state;
static enum cpuhp_state cge_dead_state;
/* set at module exit: the online state's teardown then stops each CPU */
static bool cge_probe_stopping;

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
 * tracepoint fires after the move) it can no longer be looked up. A switch
 * between two tasks of one cgroup skips both lookups: @cg's serial_nr (its
 * self css's: 0 for the root, from a counter that starts at 1 and only
 * grows for the others, set before any task can join them) names it for
 * the boot as its id does (and its parent never changes), and is read
 * from @cg itself, where the id is read from its kernfs node, one more
 * pointer. cur_serial starts at U64_MAX, which no cgroup has.
 */
static inline void cge_set_cur(struct cge_cpu *c, struct cgroup *cg)
{
	u64 serial = cg->self.serial_nr;

	if (serial != c->cur_serial) {
		c->cur_serial = serial;
		c->cur_cgid = cgroup_id(cg);
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
 * @p's cgroup's ancestors at levels 1 to CGE_WANT_LEVELS, itself included,
 * as struct cge_want's tags. Under RCU, the cgroup read stays valid, and
 * its ancestors with it, even if @p moves meanwhile. The tags are then its
 * new cgroup's, as they are @p's for a wakeup charged to the cgroup that
 * woke the CPU: they weigh in the sharing only, never in what is charged.
 */
static void cge_want_tags(struct task_struct *p, u32 *tag)
{
	struct cgroup *cg, *a;
	unsigned int l;

	rcu_read_lock();
	cg = task_dfl_cgroup(p);
	for (l = 0; l < CGE_WANT_LEVELS; l++) {
		a = cgroup_ancestor(cg, l + 1);
		tag[l] = a ? lower_32_bits(cgroup_id(a)) : 0;
	}
	rcu_read_unlock();
}

/*
 * Ask the sampler for a record for @cgid, @p's cgroup, which the overflow
 * path met without one, once per drain of this CPU: a cgroup that switches
 * often must not fill the list alone; each drain makes records for up to
 * CGE_WANTS distinct ones. A full list is shared between subtrees
 * (want.c): a newcomer may take back another subtree's newest request.
 */
static void cge_want(struct cge_cpu *c, struct task_struct *p, u64 cgid,
		     u64 parent)
{
	struct cge_cpu_sample *s = &c->s;
	u32 tag[CGE_WANT_LEVELS];
	struct cge_want *w;
	unsigned int i;
	int v;

	for (i = 0; i < s->nr_want; i++)
		if (s->want[i].cgid == cgid)
			return;
	cge_want_tags(p, tag);
	if (s->nr_want == CGE_WANTS) {
		v = cge_want_victim(s->want, s->nr_want, tag);
		if (v < 0)
			return;
		memmove(&s->want[v], &s->want[v + 1],
			(s->nr_want - v - 1) * sizeof(s->want[0]));
		s->nr_want--;
		WRITE_ONCE(c->takebacks, c->takebacks + 1);
	}
	w = &s->want[s->nr_want++];
	w->cgid = cgid;
	w->parent_cgid = parent;
	memcpy(w->tag, tag, sizeof(w->tag));
}

/*
 * For a new slot: if @cgid, @p's cgroup, has no record yet, the nearest
 * ancestor that has one (0 if it has one, or @p has moved on). Should
 * @cgid and its parent be removed before the drain, the sampler walks up
 * through the parents of removed cgroups that gone.c remembers; that ring
 * is shared by all, and another tenant's removals can overwrite it. The
 * charge then goes to this ancestor, looked up before any of them, rather
 * than to the root. One lookup for a cgroup with a record; for a new one,
 * a walk up to the first ancestor with one (cge_rec_nearest()).
 */
static u64 cge_slot_anc(struct task_struct *p, u64 cgid)
{
	struct cgroup *cg;
	u64 anc = 0;

	rcu_read_lock();
	cg = task_dfl_cgroup(p);
	if (cgroup_id(cg) == cgid && !cge_rec_find(cgid))
		anc = cge_rec_nearest(cg);
	rcu_read_unlock();
	return anc;
}

/*
 * Charge @ns, of which @bg_ns background, and @wakeups to @cgid, child of
 * @parent, in @c, the state of @cpu, when the slot charged last is not
 * @cgid's or the cache is empty (cge_charge()).
 */
static noinline void cge_charge_slot(struct cge_cpu *c, unsigned int cpu,
				     struct task_struct *p, u64 cgid,
				     u64 parent, u64 ns, u64 bg_ns,
				     u32 wakeups)
{
	struct cge_cpu_sample *s = &c->s;
	struct cge_slot *sl;
	unsigned int i;

	for (i = 0; i < s->nr; i++) {
		if (s->slot[i].cgid == cgid) {
			c->hint = i;
			sl = &s->slot[i];
			goto found;
		}
	}
	if (unlikely(s->nr == CGE_SLOTS)) {
		WRITE_ONCE(c->overflows, c->overflows + 1);
		if (!cge_cgstate_overflow(cgid, parent, ns, bg_ns, wakeups,
					  cge_topo_pkg(cpu)))
			cge_want(c, p, cgid, parent);
		return;
	}
	c->hint = s->nr;
	sl = &s->slot[s->nr++];
	sl->cgid = cgid;
	sl->parent_cgid = parent;
	sl->anc_cgid = cge_slot_anc(p, cgid);
	sl->ns = 0;
	sl->bg_ns = 0;
	sl->wakeups = 0;
found:
	sl->ns += ns;
	sl->bg_ns += bg_ns;
	sl->wakeups += wakeups;
}

/*
 * Charge @ns and @wakeups to @p's cgroup @cgid, child of @parent, in @c,
 * the state of @cpu. Inline, as cge_charge_task() is: a switch that charges
 * the cgroup the CPU charged last calls no module function from the probe.
 */
static __always_inline void cge_charge(struct cge_cpu *c, unsigned int cpu,
				       struct task_struct *p, u64 cgid,
				       u64 parent, u64 ns, u32 wakeups)
{
	u64 bg_ns = ns && cge_task_background(p) ? ns : 0;
	struct cge_cpu_sample *s = &c->s;
	struct cge_slot *sl;

	if (likely(c->hint < s->nr && s->slot[c->hint].cgid == cgid)) {
		sl = &s->slot[c->hint];
		sl->ns += ns;
		sl->bg_ns += bg_ns;
		sl->wakeups += wakeups;
		return;
	}
	cge_charge_slot(c, cpu, p, cgid, parent, ns, bg_ns, wakeups);
}

/*
 * Charge @p (running here, not the idle task) its CPU time since it was
 * switched in or last charged. At sched_switch (@fresh) the scheduler has
 * brought p->se.sum_exec_runtime up to date, for every scheduling class
 * (update_curr() from dequeue or put_prev_task), and it is what cpu.stat's
 * usage_usec sums: so the probe reads no clock and agrees with cpu.stat by
 * construction. Elsewhere (hotplug, the attach probe) it may be older than
 * what a drain already charged from an estimate (cge_charge_open()): then
 * nothing is charged until it catches up. At a switch, what a drain charged
 * beyond the runtime is handed to the sampler to take back (over_ns).
 */
static __always_inline void cge_charge_task(struct cge_cpu *c,
					    struct task_struct *p, bool fresh)
{
	u64 rt = READ_ONCE(p->se.sum_exec_runtime);
	u64 delta;

	/* Only a task whose start we saw (not one running when we attached). */
	if (unlikely(p != c->cur)) {
		c->start_rt = rt;
		c->cur = p;
		cge_set_cur(c, task_dfl_cgroup(p));
		return;
	}
	if (unlikely(rt < c->start_rt)) {
		if (!fresh)
			return;
		/*
		 * at most one per interval: one slice was open at the drain,
		 * charged to open_cgid (cur_cgid since, if a drain moved it)
		 */
		c->s.over_ns += c->start_rt - rt;
		c->s.over_cgid = c->open_cgid;
		c->s.over_parent = c->open_parent;
		c->start_rt = rt;
		return;
	}
	delta = rt - c->start_rt;
	c->start_rt = rt;
	c->busy_ns += delta;
	cge_charge(c, smp_processor_id(), p, c->cur_cgid, c->cur_parent, delta,
		   0);
}

static inline void cge_switch_in(struct cge_cpu *c, struct task_struct *p)
{
	c->cur = p;
	cge_set_cur(c, task_dfl_cgroup(p));
	c->start_rt = READ_ONCE(p->se.sum_exec_runtime);
}

/*
 * The probe's @data is cge_cpus, its bits carried in a void *
 * (cge_probe_init()): the probe's common path reads no module global (its
 * overflow path does), so that it touches as few pages as it can: after a
 * switch between address spaces, each may cost a TLB miss. Converted
 * through unsigned long, as the kernel's own per-CPU accessors do: per-CPU
 * pointers may be in the __seg_gs address space, which a plain cast to or
 * from void * warns about.
 */
static __always_inline struct cge_cpu *cge_probe_cpu(void *data)
{
	return this_cpu_ptr((struct cge_cpu __percpu __force *)
			    (unsigned long)data);
}

static inline void *cge_probe_data(void)
{
	return (void *)(__force unsigned long)cge_cpus;
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
	struct cge_cpu *c = cge_probe_cpu(data);
	u64 t0;

	if (unlikely(!c->tracking))
		return;
	if (++st->calls & 15) {
		raw_spin_lock(&c->lock);
		cge_probe_body(c, prev, next);
		raw_spin_unlock(&c->lock);
		return;
	}
	t0 = local_clock();
	raw_spin_lock(&c->lock);
	cge_probe_body(c, prev, next);
	raw_spin_unlock(&c->lock);
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
	struct cge_cpu *c = cge_probe_cpu(data);

	if (likely(c->tracking)) {
		raw_spin_lock(&c->lock);
		cge_probe_body(c, prev, next);
		raw_spin_unlock(&c->lock);
	}
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
		cge_charge_task(c, prev, true);
	if (is_idle_task(next)) {
		c->running = false;
		/*
		 * The CPU's own idle task has pid 0; play_idle_precise() also
		 * marks kthreads PF_IDLE (powerclamp), and those are freed.
		 */
		if (!next->pid)
			WRITE_ONCE(c->idle, next);
		/* A kernel thread woke the CPU for its own work. */
		if (c->wake_pending) {
			c->wake_pending = false;
			cge_charge(c, smp_processor_id(), prev, c->wake_cgid,
				   c->wake_parent, 0, 1);
		}
		return;
	}
	cge_switch_in(c, next);
	c->running = true;
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
		cge_charge(c, smp_processor_id(), next, c->cur_cgid,
			   c->cur_parent, 0, 1);
	}
}

/*
 * The task running on @cpu, c->cur, charged its runtime up to @now, @cpu's
 * sched_clock, from the sampler's CPU; c->lock held. The scheduler's own
 * sum_exec_runtime moves only when it calls update_curr() (a switch, a
 * tick, a wakeup on that runqueue): on a tickless CPU it can be a second
 * old. What the task ran since is the CPU's task clock now minus
 * se.exec_start, the task clock at that update (cge_clock_task(): @now on
 * kernels that take no interrupt or steal time out of it, as Debian's;
 * elsewhere only the runtime is charged). c->cur is alive: it is @cpu's
 * current task, and the probe, which would see it switched out for the
 * last time, waits for c->lock. The charge is at most the
 * interval's time not charged yet (@wall less busy_ns). It can exceed what
 * the scheduler makes of the slice: by the scheduler's own time when the
 * task is being preempted (below), or by one update's worth when the reads
 * fall between the two stores of an update_curr() (nothing orders them;
 * RT and deadline tasks on 5.10 and 6.1 store the runtime first), or under
 * proxy execution (6.17, not built in Debian's kernels), where exec_start
 * is the donor's. The probe hands the excess back at the next switch
 * (over_ns).
 */
static void cge_charge_open(struct cge_cpu *c, unsigned int cpu, u64 now,
			    u64 wall)
{
	struct task_struct *p = c->cur;
	u64 rt, start, again, task_now, room, est;
	int tries;

	/*
	 * update_curr() runs on @cpu under its runqueue lock, which we do not
	 * hold: an exec_start that did not change around the runtime read
	 * most likely pairs with it (not if both reads fell between its two
	 * stores: over_ns settles that).
	 */
	for (tries = 0; tries < 3; tries++) {
		start = READ_ONCE(p->se.exec_start);
		smp_rmb();	/* exec_start, then the runtime */
		rt = READ_ONCE(p->se.sum_exec_runtime);
		smp_rmb();	/* the runtime, then exec_start again */
		again = READ_ONCE(p->se.exec_start);
		if (start == again)
			break;
	}
	if (start != again)
		return;
	/*
	 * A task that stopped running sets its state first (before sleeping
	 * or exiting, and before update_curr() settles its runtime): if it
	 * still runs after those reads, it ran at @now, read before them.
	 * One that is switching out while preempted keeps TASK_RUNNING: its
	 * charge can exceed its runtime by the scheduler's own time between
	 * put_prev_task() and sched_switch (over_ns).
	 */
	smp_rmb();	/* the runtime pair, then the state */
	if (!task_is_running(p))
		return;
	est = rt;
	if (cge_clock_task(cpu, now, &task_now) && task_now > start)
		est += task_now - start;
	if (est <= c->start_rt)
		return;
	room = wall > c->busy_ns ? wall - c->busy_ns : 0;
	est = min(est - c->start_rt, room);
	if (!est)
		return;
	c->start_rt += est;
	c->busy_ns += est;
	c->open_cgid = c->cur_cgid;
	c->open_parent = c->cur_parent;
	cge_charge(c, cpu, p, c->cur_cgid, c->cur_parent, est, 0);
}

/*
 * Close @cpu's interval at @now, its sched_clock: charge the running task
 * up to now (on the CPU itself, from its runtime; elsewhere, from an
 * estimate: cge_charge_open()), and call idle whatever part of the wall
 * time since the last drain no task was charged for. c->lock held.
 */
static void cge_close_interval(struct cge_cpu *c, unsigned int cpu, u64 now,
			       bool here)
{
	u64 wall = now > c->drain_ns ? now - c->drain_ns : 0;

	if (here && !is_idle_task(current)) {
		cge_charge_task(c, current, false);
		/* A task moved by another process: its new cgroup from now on. */
		cge_set_cur(c, task_dfl_cgroup(current));
	} else if (!here && c->running) {
		cge_charge_open(c, cpu, now, wall);
		/* the same, for the task running there (alive: see above) */
		rcu_read_lock();
		cge_set_cur(c, task_dfl_cgroup(c->cur));
		rcu_read_unlock();
	}
	c->s.idle_ns += wall > c->busy_ns ? wall - c->busy_ns : 0;
	c->busy_ns = 0;
	c->drain_ns = now;
}

static void cge_take(struct cge_cpu *c, struct cge_cpu_sample *out)
{
	out->idle_ns = c->s.idle_ns;
	out->over_ns = c->s.over_ns;
	out->over_cgid = c->s.over_cgid;
	out->over_parent = c->s.over_parent;
	out->nr = c->s.nr;
	memcpy(out->slot, c->s.slot, c->s.nr * sizeof(c->s.slot[0]));
	out->nr_want = c->s.nr_want;
	memcpy(out->want, c->s.want, c->s.nr_want * sizeof(c->s.want[0]));
	c->s.idle_ns = 0;
	c->s.over_ns = 0;
	c->s.nr = 0;
	c->s.nr_want = 0;
	c->hint = 0;
}

/**
 * cge_cpu_drain() - take what @cpu ran since the previous drain
 * @cpu: any possible CPU
 * @out: receives the charges; the CPU's cache starts empty again
 * @ran: set if @cpu ran a task in the interval (it was charged CPU time)
 *
 * From the sampler's CPU, without interrupting @cpu: an online CPU's
 * running task is charged up to now first (to the cgroup it is in now), so
 * a long-running task is counted at every sample, on a tickless CPU too. A
 * CPU that was idle at the previous drain and ran nothing since counts a
 * quiet drain. Caller holds cpus_read_lock(). Process context.
 *
 * Return: @cpu's idle task (pid 0, never freed) once the probe has seen it
 * run, else NULL.
 */
struct task_struct *cge_cpu_drain(unsigned int cpu, struct cge_cpu_sample *out,
				  bool *ran)
{
	struct cge_cpu *c = per_cpu_ptr(cge_cpus, cpu);
	unsigned long flags;
	bool quiet;

	raw_spin_lock_irqsave(&c->lock, flags);
	quiet = false;
	*ran = false;
	if (c->tracking) {
		*ran = c->running || c->busy_ns;
		quiet = c->idle_at_drain && !*ran && !c->s.nr &&
			!c->s.nr_want && !c->wake_pending;
		/* hotplug is held off: @cpu's state stays as it is */
		cge_close_interval(c, cpu, sched_clock_cpu(cpu), false);
		c->idle_at_drain = !c->running;
		if (quiet)
			WRITE_ONCE(c->quiet_drains, c->quiet_drains + 1);
	}
	cge_take(c, out);
	raw_spin_unlock_irqrestore(&c->lock, flags);
	return READ_ONCE(c->idle);
}

/* The probe's health counters, summed over the CPUs (energy.info). */
void cge_probe_counters(u64 *overflows, u64 *quiet_drains, u64 *takebacks)
{
	struct cge_cpu *c;
	int cpu;

	*overflows = 0;
	*quiet_drains = 0;
	*takebacks = 0;
	for_each_possible_cpu(cpu) {
		c = per_cpu_ptr(cge_cpus, cpu);
		*overflows += READ_ONCE(c->overflows);
		*quiet_drains += READ_ONCE(c->quiet_drains);
		*takebacks += READ_ONCE(c->takebacks);
	}
}

/*
 * Runs on @cpu as it comes online (in its hotplug thread, which is current,
 * with the probe already attached: cge_probe_init()): start charging from
 * now. current leaves the CPU through the probe, so it is the running task
 * a drain may charge (cge_charge_open()).
 */
static int cge_cpu_online(unsigned int cpu)
{
	struct cge_cpu *c = this_cpu_ptr(cge_cpus);
	unsigned long flags;

	raw_spin_lock_irqsave(&c->lock, flags);
	/* an offline that failed below this state: the CPU never stopped */
	if (c->tracking) {
		raw_spin_unlock_irqrestore(&c->lock, flags);
		return 0;
	}
	c->idle_at_drain = false;
	c->drain_ns = local_clock();
	c->busy_ns = 0;
	rcu_read_lock();
	cge_switch_in(c, current);
	rcu_read_unlock();
	c->running = true;
	c->tracking = true;
	raw_spin_unlock_irqrestore(&c->lock, flags);
	return 0;
}

/*
 * Runs on @cpu as it goes offline, and on each CPU at module exit. At exit,
 * it charges up to now and stops. Going offline, it does nothing: the CPU
 * still runs tasks after this state, those the scheduler has not pushed
 * away yet (from CPUHP_AP_ACTIVE on, a task switched in there is pushed to
 * another CPU; 5.10 moves them only at CPUHP_TEARDOWN_CPU) and the
 * callbacks of the states below, so it tracks until dead (cge_cpu_dead()).
 */
static int cge_cpu_offline(unsigned int cpu)
{
	struct cge_cpu *c = this_cpu_ptr(cge_cpus);
	unsigned long flags;

	if (!READ_ONCE(cge_probe_stopping))
		return 0;
	raw_spin_lock_irqsave(&c->lock, flags);
	if (c->tracking)
		cge_close_interval(c, cpu, local_clock(), true);
	c->tracking = false;
	c->running = false;
	raw_spin_unlock_irqrestore(&c->lock, flags);
	return 0;
}

/*
 * Runs on another CPU once @cpu is dead. Tracepoints stop firing on a CPU
 * once it is marked offline (their cpu_online() condition), which the
 * stopper task taking it down does: the probe's last call switched that
 * stopper in, and every task that ran there before it was charged at its
 * switch out. The stopper's own time is not charged; the interval closes
 * as idle, and the CPU stops tracking.
 */
static int cge_cpu_dead(unsigned int cpu)
{
	struct cge_cpu *c = per_cpu_ptr(cge_cpus, cpu);
	unsigned long flags;

	raw_spin_lock_irqsave(&c->lock, flags);
	if (c->tracking) {
		c->running = false;
		cge_close_interval(c, cpu, local_clock(), false);
	}
	c->tracking = false;
	raw_spin_unlock_irqrestore(&c->lock, flags);
	return 0;
}

/*
 * Stop every CPU still tracking, from this CPU: one whose hotplug state
 * stays below the online state's (a failed bringup the kernel cannot roll
 * back, a CPU parked by hotplug's state control) met neither callback.
 * With the probe still attached: c->cur of an online CPU is alive (see
 * cge_charge_open()); an offline one's ran last, its charge is done.
 */
static void cge_cpus_stop(void)
{
	struct cge_cpu *c;
	unsigned long flags;
	unsigned int cpu;

	cpus_read_lock();
	for_each_possible_cpu(cpu) {
		c = per_cpu_ptr(cge_cpus, cpu);
		raw_spin_lock_irqsave(&c->lock, flags);
		if (c->tracking) {
			if (!cpu_online(cpu))
				c->running = false;
			cge_close_interval(c, cpu, sched_clock_cpu(cpu), false);
		}
		c->tracking = false;
		c->running = false;
		raw_spin_unlock_irqrestore(&c->lock, flags);
	}
	cpus_read_unlock();
}

/*
 * A task that moves itself to another cgroup (as `echo $$ > cgroup.procs`,
 * systemd and container runtimes do before exec), or moves its whole
 * process (the tracepoint names the process's leader, whichever of its
 * threads wrote cgroup.procs): charge its runtime so far
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

	if (task != current &&
	    !(threadgroup && same_thread_group(task, current)))
		return;
	c = get_cpu_ptr(cge_cpus);
	raw_spin_lock_irqsave(&c->lock, flags);
	if (c->tracking && c->cur == current) {
		rcu_read_lock();
		cg = task_dfl_cgroup(current);	/* dst may be a v1 cgroup */
		if (cgroup_id(cg) != c->cur_cgid) {
			cge_charge_task(c, current, false);
			cge_set_cur(c, cg);
		}
		rcu_read_unlock();
	}
	raw_spin_unlock_irqrestore(&c->lock, flags);
	put_cpu_ptr(cge_cpus);
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
	int cpu;

	/*
	 * Aligned to the power of two at or above its size, so that no CPU's
	 * state spans two pages: the probe touches one page of its per-CPU
	 * state (cge_probe_cpu()).
	 */
	BUILD_BUG_ON(roundup_pow_of_two(sizeof(struct cge_cpu)) > PAGE_SIZE);
	cge_cpus = __alloc_percpu(sizeof(struct cge_cpu),
				  roundup_pow_of_two(sizeof(struct cge_cpu)));
	if (!cge_cpus)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		raw_spin_lock_init(&per_cpu_ptr(cge_cpus, cpu)->lock);
		per_cpu_ptr(cge_cpus, cpu)->cur_serial = U64_MAX;
	}
	return 0;
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

	/*
	 * The probe first (it returns at once on a CPU not tracking yet),
	 * then each CPU starts tracking from its hotplug thread, whose
	 * switch out the probe then sees (cge_cpu_online()).
	 */
	ret = tracepoint_probe_register(cge_tp, cge_probe, cge_probe_data());
	if (ret) {
		pr_err("cannot attach to sched_switch: %d\n", ret);
		return ret;
	}
	ret = cpuhp_setup_state_nocalls(CPUHP_BP_PREPARE_DYN,
					"cgroup_energy:dead", NULL, cge_cpu_dead);
	if (ret < 0)
		goto err_probe;
	cge_dead_state = ret;
	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "cgroup_energy:online",
				cge_cpu_online, cge_cpu_offline);
	if (ret < 0) {
		cpuhp_remove_state_nocalls(cge_dead_state);
		cge_cpus_stop();
		goto err_probe;
	}
	cge_hp_state = ret;
	/* Without it, a self-moved task's first slice goes to its new cgroup. */
	if (!cge_attach_tp ||
	    tracepoint_probe_register(cge_attach_tp, cge_attach_probe, NULL)) {
		pr_warn("cannot attach to cgroup_attach_task\n");
		cge_attach_tp = NULL;
	}
	return 0;

err_probe:
	WARN_ON_ONCE(tracepoint_probe_unregister(cge_tp, cge_probe,
						 cge_probe_data()));
	tracepoint_synchronize_unregister();
	return ret;
}

void cge_probe_exit(void)
{
	if (cge_attach_tp)
		tracepoint_probe_unregister(cge_attach_tp, cge_attach_probe,
					    NULL);
	/*
	 * Every CPU charged up to now and no longer tracking: each online one
	 * on itself; one that goes offline between the two removals by the
	 * dead state; any other from here.
	 */
	WRITE_ONCE(cge_probe_stopping, true);
	cpuhp_remove_state(cge_hp_state);
	cpuhp_remove_state_nocalls(cge_dead_state);
	cge_cpus_stop();
	/* it matches on the function and @data: a live probe otherwise */
	WARN_ON_ONCE(tracepoint_probe_unregister(cge_tp, cge_probe,
						 cge_probe_data()));
	tracepoint_synchronize_unregister();
}
