// SPDX-License-Identifier: GPL-2.0
/*
 * sampler.c - every interval_ms, for each package: drain its CPUs' charge
 * caches, read its energy once, split it with the attribution rule of
 * split.c and add each cgroup's share to its record and ancestors.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/workqueue.h>
#include <linux/suspend.h>
#include <linux/topology.h>
#include <linux/timekeeping.h>
#include <linux/mutex.h>
#include <linux/cpu.h>
#include <linux/math64.h>

#include "compat.h"
#include "sampler.h"
#include "snap.h"
#include "source.h"
#include "probe.h"
#include "cgstate.h"
#include "split.h"
#include "rollup.h"
#include "params.h"
#include "impact.h"
#include "systime.h"
#include "topo.h"
#include "unowned.h"

/* Reap removed cgroups' records about once a second. */
#define CGE_REAP_MS		1000

struct cge_sampler_health cge_sampler_health;

static const struct cge_source *cge_source;
static struct delayed_work cge_work;
static bool cge_stopping;
/* Between the PM notifier's prepare and post events: no sample runs. */
static bool cge_paused;
static u64 cge_reap_due_ns;
static u64 cge_due_ns;

/*
 * One record's charges in the package being sampled: CPU time, the part of
 * it at background QoS, wakeups, and its per-core energy share (AMD).
 */
struct cge_acc {
	u64 ns;
	u64 bg_ns;
	u64 wakeups;
	u64 core_uj;
};

/*
 * Scratch, sampler only (under cge_lock). The records charged in the
 * package being sampled are cge_recs[0..n), their charges cge_accs[0..n)
 * (rec->acc_idx - 1 is the index); the other arrays are filled from them.
 * If the arrays could not grow in this package's pass (cge_grow_failed),
 * the charges that found no room went to their records' totals at once and
 * their CPU time, cge_lost_ns, counts as idle in the energy split.
 * cge_repaid_ns: what the pass took back of earlier overcharges (debt_ns),
 * time the earlier intervals gave their tasks and not idle: idle now.
 */
static struct cpumask cge_done;
static struct cge_rec **cge_recs;
static struct cge_acc *cge_accs;
static bool cge_grow_failed;
static u64 cge_lost_ns;
static u64 cge_repaid_ns;
static u64 *cge_weight;
static u64 *cge_share;
static struct cge_delta *cge_delta;
static unsigned int cge_cap;
/* The platform's energy (PSYS) of this sample not yet shared out. */
static u64 cge_psys_left_uj;
static unsigned int cge_psys_left_cpus;
/* This sample's energy no task drew, by kind (unowned.c). */
static u64 cge_unowned_uj[CGE_UN_NR];
/* unowned=cpuset with partitions: each CPU's time goes to its owner's */
static bool cge_by_owner;
/* This sample's interval, for the power averages (power.c). */
static struct cge_power_step cge_step;

const struct cge_source *cge_sampler_source(void)
{
	return cge_source;
}

/* Where the power averages stand: the last sample's interval end. cge_lock. */
u64 cge_sampler_interval_end(void)
{
	lockdep_assert_held(&cge_lock);
	return cge_step.end_ns;
}

unsigned int cge_sampler_packages(void)
{
	return READ_ONCE(cge_npkg);
}

/* The coefficients of the sample in progress. */
static struct cge_impact_coefs cge_k;

static u64 cge_acc_impact(const struct cge_acc *a)
{
	u64 bg = min(a->bg_ns, a->ns);

	return cge_impact_ns(&cge_k, a->ns - bg, bg, a->wakeups);
}

/* Room for @n records in the scratch, keeping the first @used. */
static int cge_grow(unsigned int n, unsigned int used)
{
	unsigned int cap = max(n, 2 * cge_cap);
	void *r, *a, *w, *s, *d;

	if (n <= cge_cap)
		return 0;
	r = kvmalloc_array(cap, sizeof(*cge_recs), GFP_KERNEL);
	a = kvmalloc_array(cap, sizeof(*cge_accs), GFP_KERNEL);
	w = kvmalloc_array(cap, sizeof(*cge_weight), GFP_KERNEL);
	s = kvmalloc_array(cap, sizeof(*cge_share), GFP_KERNEL);
	d = kvmalloc_array(cap, sizeof(*cge_delta), GFP_KERNEL);
	if (!r || !a || !w || !s || !d) {
		kvfree(r);
		kvfree(a);
		kvfree(w);
		kvfree(s);
		kvfree(d);
		cge_sampler_health.alloc_failures++;
		return -ENOMEM;
	}
	if (used) {
		memcpy(r, cge_recs, used * sizeof(*cge_recs));
		memcpy(a, cge_accs, used * sizeof(*cge_accs));
	}
	kvfree(cge_recs);
	kvfree(cge_accs);
	kvfree(cge_weight);
	kvfree(cge_share);
	kvfree(cge_delta);
	cge_recs = r;
	cge_accs = a;
	cge_weight = w;
	cge_share = s;
	cge_delta = d;
	cge_cap = cap;
	return 0;
}

static void cge_free_scratch(void)
{
	cge_rollup_exit();
	kvfree(cge_recs);
	kvfree(cge_accs);
	kvfree(cge_weight);
	kvfree(cge_share);
	kvfree(cge_delta);
}

/*
 * Add @charge to @rec's charges in this pass, appending @rec to the
 * @n charged records if it is not one yet, less what @rec owes (debt_ns;
 * what it pays counts as idle: cge_repaid_ns).
 * Without scratch room for it (one failed attempt per pass), the charge
 * goes to @rec's totals at once: its time, wakeups and per-core energy are
 * kept, and its time counts as idle in the package's energy split
 * (cge_lost_ns). @charge must not point into cge_accs, which a grow moves.
 */
static void cge_charge(struct cge_rec *rec, unsigned int *n,
		       const struct cge_acc *charge)
{
	struct cge_acc paid, *to;
	const struct cge_acc *a = charge;
	u64 pay;

	if (unlikely(rec->debt_ns) && a->ns) {
		pay = min(rec->debt_ns, a->ns);
		rec->debt_ns -= pay;
		cge_repaid_ns += pay;
		cge_sampler_health.overcharge_repaid_ns += pay;
		paid = *a;
		paid.ns -= pay;
		paid.bg_ns = min(paid.bg_ns, paid.ns);
		a = &paid;
	}
	if (!rec->acc_idx) {
		if (cge_grow_failed || cge_grow(*n + 1, *n)) {
			struct cge_delta d = {
				.usage_ns = a->ns,
				.wakeups = a->wakeups,
				.impact_ns = cge_acc_impact(a),
				.dom_uj[CGE_DOM_CORE] = a->core_uj,
			};

			cge_grow_failed = true;
			cge_lost_ns += a->ns;
			cge_rec_add(rec, &d, &cge_step);
			return;
		}
		cge_recs[*n] = rec;
		cge_accs[*n] = *a;
		rec->acc_idx = ++*n;
		return;
	}
	to = &cge_accs[rec->acc_idx - 1];
	to->ns += a->ns;
	to->bg_ns += a->bg_ns;
	to->wakeups += a->wakeups;
	to->core_uj += a->core_uj;
}

/* SMT siblings drained together for a per-core energy split. */
#define CGE_MAX_SMT		8
/*
 * A core's counter can only be read on the core: by an IPI to one of its
 * CPUs, once per interval if any of them ran a task. A core none of whose
 * CPUs did is not woken to read it: its energy waits there for the next
 * reading. It is read once after load and resume, to start from, and when
 * unread this long (or since its last failed read), so that the 32-bit
 * counter (65,536 J in AMD's 2^-16 J unit) cannot advance 2^32 units
 * unseen below 109 W.
 */
#define CGE_CORE_UNREAD_MAX_NS	(600ULL * NSEC_PER_SEC)

static struct cge_cpu_sample cge_cs[CGE_MAX_SMT];
static struct cge_rec *cge_core_rec[CGE_MAX_SMT * CGE_SLOTS];
static u64 cge_core_w[CGE_MAX_SMT * CGE_SLOTS];
static u64 cge_core_share[CGE_MAX_SMT * CGE_SLOTS];

static u64 cge_slot_weight(const struct cge_slot *sl, int split)
{
	if (split != CGE_SPLIT_IMPACT)
		return sl->ns;
	return cge_impact_ns(&cge_k, sl->ns - sl->bg_ns, sl->bg_ns,
			     sl->wakeups);
}

/*
 * Where the counter of @cpu's core is read: on the sampler's own CPU if it
 * is of that core (no IPI), else on @ran (a CPU of the core that ran a task
 * this interval, or -1) or another online CPU of the core, one the operator
 * left to housekeeping: an isolated CPU is not interrupted for it.
 * Return: the CPU, or -1 if the core's online CPUs are all isolated.
 */
static int cge_core_read_cpu(unsigned int cpu, int ran)
{
	const struct cpumask *sibs = topology_sibling_cpumask(cpu);
	unsigned int me = raw_smp_processor_id(), sib;
	int at = -1;

	rcu_read_lock();
	if (cpumask_test_cpu(me, sibs) && !cpu_is_isolated(me)) {
		at = me;
	} else if (ran >= 0 && !cpu_is_isolated(ran)) {
		at = ran;
	} else {
		for_each_cpu_and(sib, sibs, cpu_online_mask) {
			if (!cpu_is_isolated(sib)) {
				at = sib;
				break;
			}
		}
	}
	rcu_read_unlock();
	return at;
}

/*
 * The energy of @cpu's core since its counter was last read, into @uj, and
 * the CPU time of its CPUs over that span, into @span_ns (@now_ns, their time
 * this interval, included). The counter is read if a CPU of the core ran a
 * task this interval (@ran, or -1), or if it was never read (since load or
 * resume) or not for CGE_CORE_UNREAD_MAX_NS; on the CPU
 * cge_core_read_cpu() gives. A core whose CPUs are all isolated is not
 * read (counted: energy.info's isolated_core_skips): its tasks have no
 * per-core energy, and its next reading only starts the counter afresh.
 * Return: false if it was not read: its energy stays in the counter, and
 * its CPUs' time with it, for the next reading.
 */
static bool cge_core_energy(unsigned int cpu, int ran, u64 now_ns, u64 *uj,
			    u64 *span_ns)
{
	unsigned int k = cge_topo_core(cpu);
	u64 now = ktime_get_ns(), raw = 0;
	struct cge_core *core;
	int at;

	if (k == CGE_TOPO_NONE)
		return false;
	core = &cge_cores[k];
	core->unread_ns += now_ns;
	if (ran < 0 && core->read_ns &&
	    now - core->read_ns <= CGE_CORE_UNREAD_MAX_NS)
		return false;
	at = cge_core_read_cpu(cpu, ran);
	if (at < 0) {
		cge_source_health.isolated_core_skips++;
		core->skipped = true;
		/* as a failed read: not again before the limit, unless it runs */
		core->read_ns = now;
		return false;
	}
	if (cge_source->read_core(at, &raw)) {
		cge_source_health.read_errors++;
		/* not again before CGE_CORE_UNREAD_MAX_NS, unless it runs */
		core->read_ns = now;
		return false;
	}
	*uj = cge_source->core_delta(k, raw);
	*span_ns = core->unread_ns;
	core->unread_ns = 0;
	core->read_ns = now;
	if (core->skipped) {
		/* unread for an unknown span, wraps included: start afresh */
		core->skipped = false;
		return false;
	}
	return true;
}

/*
 * Fold @nr CPU samples (one CPU, or the SMT siblings of one core) into the
 * @n charged records (cge_charge()). With per-core energy (@per_core, AMD),
 * the core's energy @core_uj is split here, with the same rule, between the
 * cgroups that ran on it and @other_ns, the rest of its CPUs' time since its
 * last reading (idle, interrupts, softirqs, steal, earlier intervals unread).
 */
static void cge_fold(struct cge_cpu_sample *cs, unsigned int nr,
		     bool per_core, u64 core_uj, u64 other_ns,
		     unsigned int *n, u64 *idle_ns)
{
	int split = READ_ONCE(cge_split_param);
	unsigned int c, i, k = 0;
	struct cge_acc a = {};
	struct cge_slot *sl;
	struct cge_rec *rec;
	u64 busy = 0;

	for (c = 0; c < nr; c++) {
		*idle_ns += cs[c].idle_ns;
		if (cs[c].over_ns) {
			rec = cge_rec_get(cs[c].over_cgid, cs[c].over_parent,
					  0);
			rec->debt_ns += cs[c].over_ns;
			cge_sampler_health.overcharge_ns += cs[c].over_ns;
		}
		for (i = 0; i < cs[c].nr; i++, k++) {
			sl = &cs[c].slot[i];
			rec = cge_rec_get(sl->cgid, sl->parent_cgid,
					  sl->anc_cgid);
			a.ns = sl->ns;
			a.bg_ns = sl->bg_ns;
			a.wakeups = sl->wakeups;
			cge_charge(rec, n, &a);
			cge_core_rec[k] = rec;
			cge_core_w[k] = cge_slot_weight(sl, split);
			busy += sl->ns;
		}
		/* Records for cgroups that overflowed, so next time they fit. */
		for (i = 0; i < cs[c].nr_want; i++)
			cge_rec_get(cs[c].want[i].cgid, cs[c].want[i].parent_cgid,
				    0);
	}
	if (!per_core)
		return;
	cge_split(core_uj, other_ns, busy, cge_core_w, cge_core_share, k);
	memset(&a, 0, sizeof(a));
	for (i = 0; i < k; i++) {
		a.core_uj = cge_core_share[i];
		if (a.core_uj)
			cge_charge(cge_core_rec[i], n, &a);
	}
}

/* @sys's interrupt, softirq and steal time, summed. */
static u64 cge_sys_ns(const struct cge_systime *sys)
{
	u64 ns = 0;
	int k;

	for (k = 0; k < CGE_SYS_NR; k++)
		ns += sys->ns[k];
	return ns;
}

/*
 * Drain @cpu into cge_cs[@i] (@ran: set to @cpu if it ran a task and @ran
 * is not set yet), and take its interrupt, softirq and steal time out of
 * its idle time into @sys; with unowned=cpuset's partitions, both to its
 * owner's (cge_unowned_cpu()).
 * Return: its CPU time; the tasks' part of it is added to @busy.
 */
static u64 cge_drain_cpu(unsigned int cpu, unsigned int i, int *ran,
			 struct cge_systime *sys, u64 *busy)
{
	struct cge_cpu_sample *cs = &cge_cs[i];
	u64 idle, tasks = 0, sys_ns = 0;
	struct task_struct *idle_task;
	unsigned int k;
	bool r;

	idle_task = cge_cpu_drain(cpu, cs, &r);
	if (r && *ran < 0)
		*ran = cpu;
	idle = cs->idle_ns;
	if (cge_by_owner)
		sys_ns = cge_sys_ns(sys);
	cge_systime_take(cpu, idle_task, &cs->idle_ns, sys);
	if (cge_by_owner)
		cge_unowned_cpu(cpu, cs->idle_ns, cge_sys_ns(sys) - sys_ns);
	for (k = 0; k < cs->nr; k++)
		tasks += cs->slot[k].ns;
	*busy += tasks;
	return idle + tasks;
}

/*
 * Drain @pkg's CPUs, a core's online SMT siblings together, into the
 * records; their idle time into @idle_ns, their interrupt, softirq and
 * steal time into @sys.
 */
static void cge_drain_pkg(struct cge_pkg *pkg, unsigned int *n,
			  u64 *idle_ns, struct cge_systime *sys)
{
	bool cores = cge_source->read_core;
	struct cpumask *done = &cge_done;
	unsigned int cpu, sib, nr;
	u64 now_ns, busy, uj = 0, span = 0;
	bool per_core;
	int ran;

	cpumask_clear(done);
	for_each_cpu(cpu, &pkg->cpus) {
		if (cpumask_test_cpu(cpu, done))
			continue;
		busy = 0;
		ran = -1;
		now_ns = cge_drain_cpu(cpu, 0, &ran, sys, &busy);
		cpumask_set_cpu(cpu, done);
		nr = 1;
		if (cores && cpu_online(cpu)) {
			for_each_cpu_and(sib, topology_sibling_cpumask(cpu),
					 &pkg->cpus) {
				if (nr == CGE_MAX_SMT)
					break;
				if (cpumask_test_cpu(sib, done))
					continue;
				now_ns += cge_drain_cpu(sib, nr, &ran, sys, &busy);
				cpumask_set_cpu(sib, done);
				nr++;
			}
		}
		per_core = cores && cpu_online(cpu) &&
			   cge_core_energy(cpu, ran, now_ns, &uj, &span);
		cge_fold(cge_cs, nr, per_core, uj, span - min(span, busy), n,
			 idle_ns);
	}
}

/* The charges of @pkg's CPUs the probe could not cache. */
static void cge_drain_overflows(struct llist_node *first, unsigned int pkg,
				unsigned int *n)
{
	struct cge_acc a = {};
	struct cge_rec *rec;
	u32 wakeups;

	llist_for_each_entry(rec, first, ovf_node) {
		if (!cge_rec_take_overflow(rec, pkg, &a.ns, &a.bg_ns, &wakeups))
			continue;
		a.wakeups = wakeups;
		cge_charge(rec, n, &a);
	}
}

/*
 * The @n charged records' deltas (time, wakeups, impact, per-core energy)
 * and split weights, from their charges; their acc_idx cleared.
 * Return: their CPU time.
 */
static u64 cge_collect(unsigned int n, int split)
{
	const struct cge_acc *a;
	u64 busy_ns = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		cge_recs[i]->acc_idx = 0;
		a = &cge_accs[i];
		busy_ns += a->ns;
		memset(&cge_delta[i], 0, sizeof(cge_delta[i]));
		cge_delta[i].usage_ns = a->ns;
		cge_delta[i].wakeups = a->wakeups;
		cge_delta[i].impact_ns = cge_acc_impact(a);
		cge_delta[i].dom_uj[CGE_DOM_CORE] = a->core_uj;
		cge_weight[i] = split == CGE_SPLIT_IMPACT ?
				cge_delta[i].impact_ns : a->ns;
	}
	return busy_ns;
}

/*
 * Split @e by time between idle, @sys's kinds and the tasks, and the tasks'
 * part between the @n collected records by their weights, into their
 * deltas; the kinds' headline energy into @sys_uj. Return: the headline
 * energy of idle.
 */
static u64 cge_share_energy(const struct cge_energy *e, u64 idle_ns,
			    u64 busy_ns, const struct cge_systime *sys,
			    unsigned int n, u64 *sys_uj)
{
	unsigned long domains = cge_source->domains();
	u64 idle_uj, unused[CGE_SYS_NR];
	unsigned int i;
	int d;

	idle_uj = cge_split_kinds(e->headline_uj, idle_ns, sys->ns, sys_uj,
				  CGE_SYS_NR, busy_ns, cge_weight, cge_share,
				  n);
	for (i = 0; i < n; i++)
		cge_delta[i].energy_uj = cge_share[i];
	for_each_set_bit(d, &domains, CGE_DOM_NR) {
		/* Per-core energy was split core by core in cge_fold(). */
		if (d == CGE_DOM_CORE && cge_source->read_core)
			continue;
		cge_split_kinds(e->dom_uj[d], idle_ns, sys->ns, unused,
				CGE_SYS_NR, busy_ns, cge_weight, cge_share, n);
		for (i = 0; i < n; i++)
			cge_delta[i].dom_uj[d] = cge_share[i];
	}
	return idle_uj;
}

/*
 * The platform's energy (PSYS), read with the first package, goes to every
 * package in proportion to its online CPUs, each package's part then split
 * between its own cgroups and idle; the last package takes what is left,
 * so the parts add up to the reading.
 */
static void cge_share_psys(const struct cge_pkg *pkg, struct cge_energy *e)
{
	unsigned int online = 0, cpu;
	u64 part;

	if (!(cge_source->domains() & BIT(CGE_DOM_PSYS)))
		return;
	if (pkg->id == 0)
		cge_psys_left_uj = e->dom_uj[CGE_DOM_PSYS];
	for_each_cpu_and(cpu, &pkg->cpus, cpu_online_mask)
		online++;
	part = online >= cge_psys_left_cpus ? cge_psys_left_uj :
	       mul_u64_u32_div(cge_psys_left_uj, online, cge_psys_left_cpus);
	cge_psys_left_uj -= part;
	cge_psys_left_cpus -= min(online, cge_psys_left_cpus);
	e->dom_uj[CGE_DOM_PSYS] = part;
}

/*
 * Where @pkg's counters are read: on the sampler's own CPU if it is one of
 * @pkg's (no IPI), else on the first online CPU of @pkg that the operator
 * left to housekeeping, so that no isolated CPU is interrupted for it. A
 * package whose online CPUs are all isolated is read on the first of them
 * (rapl.c counts such reads). Return: nr_cpu_ids if no CPU of @pkg is
 * online.
 */
static unsigned int cge_pkg_read_cpu(const struct cge_pkg *pkg)
{
	unsigned int me = raw_smp_processor_id(), cpu, at;

	at = cpumask_first_and(&pkg->cpus, cpu_online_mask);
	rcu_read_lock();
	if (cpumask_test_cpu(me, &pkg->cpus) && cpu_online(me) &&
	    !cpu_is_isolated(me)) {
		at = me;
	} else {
		for_each_cpu_and(cpu, &pkg->cpus, cpu_online_mask) {
			if (!cpu_is_isolated(cpu)) {
				at = cpu;
				break;
			}
		}
	}
	rcu_read_unlock();
	return at;
}

/*
 * Read @pkg's energy for this interval and split it between the @n charged
 * records, @sys's kinds and idle; @idle_ns is its CPUs' idle time. With
 * unowned=cpuset's partitions, idle's and the kinds' energy go on to the
 * owners of its CPUs (cge_unowned_pkg()).
 * Interrupts and softirqs count as busy for the power model, steal as idle:
 * the CPU ran someone else. Not inlined: make bench times it with ftrace.
 */
static noinline void cge_split_pkg(struct cge_pkg *pkg, unsigned int n,
				   u64 idle_ns, const struct cge_systime *sys)
{
	struct cge_root_stat *rs = &cge_root_stat;
	u64 active_ns = sys->ns[CGE_SYS_IRQ] + sys->ns[CGE_SYS_SOFTIRQ];
	u64 busy_ns, lost_ns, idle_uj, sys_uj[CGE_SYS_NR], un[CGE_UN_NR];
	u64 other_ns = cge_repaid_ns;
	struct cge_energy e;
	unsigned int i, k;

	BUILD_BUG_ON(CGE_SYS_NR > CGE_SPLIT_MAX_KINDS);
	busy_ns = cge_collect(n, READ_ONCE(cge_split_param));
	idle_ns += cge_repaid_ns;
	cge_repaid_ns = 0;
	/* the CPU time of charges that found no room: busy, but no consumer */
	lost_ns = cge_lost_ns;
	cge_lost_ns = 0;
	cge_grow_failed = false;

	pkg->read_cpu = cge_pkg_read_cpu(pkg);
	memset(&e, 0, sizeof(e));
	if (pkg->read_cpu >= nr_cpu_ids) {
		/* Unread while no CPU of it is online: start afresh after. */
		pkg->stale = true;
	} else if (pkg->stale) {
		if (pkg->uninit)
			cge_source->init_pkg(pkg);
		else
			cge_source->resync(pkg);
		pkg->stale = false;
		pkg->uninit = false;
	} else {
		cge_source->read(pkg,
				 idle_ns + sys->ns[CGE_SYS_STEAL] + active_ns +
				 busy_ns + lost_ns, active_ns + busy_ns + lost_ns,
				 &e);
	}
	cge_share_psys(pkg, &e);

	idle_uj = cge_share_energy(&e, idle_ns + lost_ns, busy_ns, sys, n,
				   sys_uj);
	for (i = 0; i < n; i++)
		cge_rollup_add(cge_recs[i], &cge_delta[i], &cge_step);
	cge_rollup_flush(&cge_step);
	rs->total_uj = cge_sat_add(rs->total_uj, e.headline_uj);
	rs->idle_uj = cge_sat_add(rs->idle_uj, idle_uj);
	cge_time_add(&rs->idle, idle_ns);
	un[CGE_UN_IDLE] = idle_uj;
	un[CGE_UN_SYS] = 0;
	for (k = 0; k < CGE_SYS_NR; k++) {
		un[CGE_UN_SYS] += sys_uj[k];
		rs->sys_uj[k] = cge_sat_add(rs->sys_uj[k], sys_uj[k]);
		cge_time_add(&rs->sys[k], sys->ns[k]);
	}
	for (k = 0; k < CGE_UN_NR; k++)
		cge_unowned_uj[k] += un[k];
	if (cge_by_owner)
		cge_unowned_pkg(un, other_ns + lost_ns);
}

/* Packages from @from on are new: set up their counters. */
static void cge_init_pkgs(unsigned int from)
{
	struct cge_pkg *pkg;

	for (; from < cge_npkg; from++) {
		pkg = &cge_pkgs[from];
		pkg->read_cpu = cge_pkg_read_cpu(pkg);
		if (pkg->read_cpu < nr_cpu_ids) {
			cge_source->init_pkg(pkg);
		} else {
			/* Its CPUs went offline since: set up when one is back. */
			pkg->stale = true;
			pkg->uninit = true;
		}
	}
}

/*
 * The unowned policy this sample applies: the parameter as it is now, so
 * that a write applies from the next sample on and never to earlier ones.
 * A change is recorded in energy.info (the first policy is not a change).
 */
static int cge_unowned_policy(void)
{
	struct cge_sampler_health *h = &cge_sampler_health;
	int policy = READ_ONCE(cge_unowned_param);

	if (!h->unowned_since || policy != h->unowned_applied) {
		if (h->unowned_since)
			h->unowned_changes++;
		h->unowned_applied = policy;
		h->unowned_since = h->samples + 1;
	}
	return policy;
}

static void cge_sample_locked(void)
{
	u64 now = ktime_get_ns();
	struct llist_node *ovf;
	struct cge_systime sys;
	unsigned int p, n;
	u64 idle_ns;
	int policy;

	lockdep_assert_held(&cge_lock);
	policy = cge_unowned_policy();
	cge_sampler_health.unowned_partitions = cge_unowned_begin(policy);
	cge_by_owner = cge_sampler_health.unowned_partitions;
	cge_params_coefs(&cge_k);
	cge_power_step(&cge_step, cge_step.end_ns, now);
	if (now >= cge_reap_due_ns) {
		cge_cgstate_reap();
		cge_reap_due_ns = now + CGE_REAP_MS * NSEC_PER_MSEC;
	}
	cpus_read_lock();
	cge_init_pkgs(cge_topo_update());
	cge_psys_left_cpus = num_online_cpus();
	ovf = cge_cgstate_take_overflows();
	for (p = 0; p < cge_npkg; p++) {
		n = 0;
		idle_ns = 0;
		memset(&sys, 0, sizeof(sys));
		cge_drain_overflows(ovf, p, &n);
		cge_drain_pkg(&cge_pkgs[p], &n, &idle_ns, &sys);
		cge_split_pkg(&cge_pkgs[p], n, idle_ns, &sys);
	}
	cge_cgstate_overflows_done(ovf);
	cpus_read_unlock();
	cge_unowned_share(policy, cge_unowned_uj, now,
			  cge_sampler_health.unowned_since ==
			  cge_sampler_health.samples + 1);
	memset(cge_unowned_uj, 0, sizeof(cge_unowned_uj));
	cge_sampler_health.samples++;
	cge_sampler_health.last_sample_ns = ktime_get_ns();
	cge_snap_sampled(cge_sampler_health.samples, cge_step.end_ns);
}

/*
 * The CPU samples run on: the one the sampler runs on (at load, the CPU
 * that loads the module), if that CPU is left to the kernel's housekeeping
 * (not isolated by nohz_full=, isolcpus= or an isolated cpuset partition:
 * cpu_is_isolated()), else on the first online one that
 * is: its timer fires there and its worker runs there, so the sampler
 * wakes no other CPU by an IPI and never runs on an isolated one. The
 * unbound workqueue gives neither: it may run the work on any CPU, a
 * tickless or an idle one included. Under cpus_read_lock(): the CPU stays
 * online until the work (or its timer) is queued. A sample is short work,
 * which a per-CPU worker may hold. cpuset.c queues its scan there too.
 */
int cge_sample_cpu(void)
{
	int cpu, hk;

	cpu = raw_smp_processor_id();
	rcu_read_lock();
	if (!cpu_online(cpu) || cpu_is_isolated(cpu)) {
		for_each_online_cpu(hk) {
			if (!cpu_is_isolated(hk)) {
				cpu = hk;
				break;
			}
		}
	}
	rcu_read_unlock();
	return cpu;
}

static void cge_queue_sample(unsigned long delay)
{
	cpus_read_lock();
	queue_delayed_work_on(cge_sample_cpu(), system_percpu_wq, &cge_work,
			      delay);
	cpus_read_unlock();
}

static void cge_sample_now_fn(struct work_struct *work)
{
	mutex_lock(&cge_lock);
	cge_sample_locked();
	mutex_unlock(&cge_lock);
}

static DECLARE_WORK(cge_now_work, cge_sample_now_fn);

/*
 * A sample now (module exit, suspend): it empties every CPU's cache. It
 * runs in a worker, as the periodic ones do, and not in the calling task:
 * a sample looks up the cgroups it has not seen yet with
 * cgroup_get_from_id(), which (6.0 on) finds only those inside the calling
 * task's cgroup namespace, and the task that suspends the machine or
 * unloads the module may be in a container's. Workers are in the initial
 * namespace, so every sample charges the same cgroups whoever starts it.
 */
static void cge_sample_now(void)
{
	cpus_read_lock();
	queue_work_on(cge_sample_cpu(), system_percpu_wq, &cge_now_work);
	cpus_read_unlock();
	flush_work(&cge_now_work);
}

/*
 * Samples are due every interval_ms from the previous due time, not from when
 * the previous one finished: the delay is what is left of the period, rounded
 * up to whole jiffies, so the sample's own time and the timer's rounding do
 * not add up to a longer period. A sample serves the due time it was queued
 * for, however late it runs; the due times that pass before it ends are
 * missed and counted as overruns, and the next sample is queued for the
 * first due time still ahead, so samples + overruns is the number of due
 * times. The timer fires on a tick: a sample can start up to a tick before
 * or after its due time. A new interval_ms applies from the sample already
 * queued, which keeps the old one.
 */
static void cge_sample_fn(struct work_struct *work)
{
	u64 period = (u64)READ_ONCE(cge_interval_ms) * NSEC_PER_MSEC;
	unsigned long delay;
	u64 now, missed, due;

	mutex_lock(&cge_lock);
	if (!cge_due_ns)
		cge_due_ns = ktime_get_ns();
	cge_sample_locked();
	now = ktime_get_ns();
	cge_due_ns += period;
	if (cge_due_ns <= now) {
		missed = div64_u64(now - cge_due_ns, period) + 1;
		cge_sampler_health.overruns += missed;
		cge_due_ns += missed * period;
	}
	due = cge_due_ns;
	mutex_unlock(&cge_lock);
	delay = DIV_ROUND_UP_ULL(due - now, TICK_NSEC);
	if (!READ_ONCE(cge_stopping) && !READ_ONCE(cge_paused))
		cge_queue_sample(delay);
}

/*
 * Before suspend or hibernation, while tasks still run: a last sample, then
 * none until resume (the workqueue is not frozen, and the counters may
 * restart while the machine sleeps).
 */
static void cge_sampler_pause(void)
{
	WRITE_ONCE(cge_paused, true);
	cancel_delayed_work_sync(&cge_work);
	cge_sample_now();
}

/*
 * After resume (or a suspend that failed): the counters start afresh, so no
 * delta is taken across the sleep, before the sampler runs again.
 */
static void cge_sampler_resume(void)
{
	unsigned int p, k;

	mutex_lock(&cge_lock);
	cpus_read_lock();
	for (p = 0; p < cge_npkg; p++) {
		cge_pkgs[p].read_cpu = cge_pkg_read_cpu(&cge_pkgs[p]);
		/* one without an online CPU stays or becomes stale */
		cge_pkgs[p].stale |= cge_pkgs[p].read_cpu >= nr_cpu_ids;
		if (!cge_pkgs[p].stale)
			cge_source->resync(&cge_pkgs[p]);
	}
	cpus_read_unlock();
	if (cge_source->core_resync) {
		cge_source->core_resync();
		/* Each core's next sample reads it, to start afresh. */
		for (k = 0; k < nr_cpu_ids; k++) {
			cge_cores[k].unread_ns = 0;
			cge_cores[k].read_ns = 0;
			cge_cores[k].skipped = false;
		}
	}
	cge_source_health.resyncs++;
	/* the next interval, for the power averages, starts after the resync */
	cge_power_restart(&cge_step, ktime_get_ns());
	cge_due_ns = 0;
	WRITE_ONCE(cge_paused, false);
	mutex_unlock(&cge_lock);
	if (!READ_ONCE(cge_stopping))
		cge_queue_sample(msecs_to_jiffies(READ_ONCE(cge_interval_ms)));
}

static int cge_pm_notify(struct notifier_block *nb, unsigned long action,
			 void *data)
{
	switch (action) {
	case PM_SUSPEND_PREPARE:
	case PM_HIBERNATION_PREPARE:
	case PM_RESTORE_PREPARE:
		cge_sampler_pause();
		break;
	case PM_POST_SUSPEND:
	case PM_POST_HIBERNATION:
	case PM_POST_RESTORE:
		cge_sampler_resume();
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block cge_pm_nb = {
	.notifier_call = cge_pm_notify,
};

static int cge_choose_source(void)
{
	int kind = READ_ONCE(cge_source_param);

	if (kind == CGE_SOURCE_MODEL) {
		cge_source = &cge_model_source;
		return 0;
	}
	cge_source = cge_rapl_detect(cge_pkgs[0].read_cpu,
				     kind == CGE_SOURCE_RAPL);
	if (cge_source) {
		pr_info("energy source: RAPL (%s), energy unit 2^-%u J\n",
			cge_rapl_vendor(), cge_rapl_unit_esu());
		return 0;
	}
	if (kind == CGE_SOURCE_RAPL) {
		pr_err("source=rapl: no usable RAPL counters on this machine\n");
		return -ENODEV;
	}
	cge_source = &cge_model_source;
	pr_info("no usable RAPL counters: falling back to the power model (%u-%u mW per CPU); energy is an estimate\n",
		cge_model_idle_mw, cge_model_busy_mw);
	return 0;
}

int cge_sampler_init(void)
{
	int ret;

	ret = cge_topo_init();
	if (ret)
		return ret;
	cpus_read_lock();
	cge_pkgs[0].read_cpu = cge_pkg_read_cpu(&cge_pkgs[0]);
	ret = cge_choose_source();
	if (!ret)
		cge_init_pkgs(0);
	cpus_read_unlock();
	if (ret)
		goto err;
	ret = cge_systime_init();
	if (ret)
		goto err;
	cge_power_restart(&cge_step, ktime_get_ns());
	INIT_DELAYED_WORK(&cge_work, cge_sample_fn);
	cge_queue_sample(msecs_to_jiffies(READ_ONCE(cge_interval_ms)));
	/* Last: a suspend from here on finds the work to stop. */
	ret = register_pm_notifier(&cge_pm_nb);
	if (ret)
		goto err_work;
	return 0;
err_work:
	WRITE_ONCE(cge_stopping, true);
	cancel_delayed_work_sync(&cge_work);
	cge_free_scratch();
	cge_systime_exit();
err:
	cge_rapl_exit();
	cge_topo_exit();
	return ret;
}

/* After the probe is detached: a last sample flushes every cache. */
void cge_sampler_exit(void)
{
	WRITE_ONCE(cge_stopping, true);
	unregister_pm_notifier(&cge_pm_nb);
	cancel_delayed_work_sync(&cge_work);
	cge_sample_now();
	cge_systime_exit();
	cge_rapl_exit();
	cge_free_scratch();
	cge_topo_exit();
}
