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

#include "compat.h"
#include "sampler.h"
#include "source.h"
#include "probe.h"
#include "cgstate.h"
#include "split.h"
#include "params.h"
#include "impact.h"
#include "systime.h"

/* Reap removed cgroups' records about once a second. */
#define CGE_REAP_MS		1000

struct cge_sampler_health cge_sampler_health;

static struct cge_pkg *cge_pkgs;
static unsigned int cge_npkg;
static const struct cge_source *cge_source;
static struct delayed_work cge_work;
static bool cge_stopping;
static atomic_t cge_resync_pending;
static u64 cge_reap_due_ns;
static u64 cge_due_ns;

/* Scratch, sampler only (under cge_lock). */
static struct cpumask cge_done;
static struct cge_rec **cge_recs;
static u64 *cge_weight;
static u64 *cge_share;
static struct cge_delta *cge_delta;
static unsigned int cge_cap;

const struct cge_source *cge_sampler_source(void)
{
	return cge_source;
}

unsigned int cge_sampler_packages(void)
{
	return cge_npkg;
}

/* The coefficients of the sample in progress. */
static struct cge_impact_coefs cge_k;

static u64 cge_rec_impact(const struct cge_rec *rec)
{
	return cge_impact_ns(&cge_k, rec->acc_ns - rec->acc_bg_ns,
			     rec->acc_bg_ns, rec->acc_wakeups);
}

static int cge_grow(unsigned int n)
{
	unsigned int cap = max(n, 2 * cge_cap);
	void *r, *w, *s, *d;

	if (n <= cge_cap)
		return 0;
	r = kvmalloc_array(cap, sizeof(*cge_recs), GFP_KERNEL);
	w = kvmalloc_array(cap, sizeof(*cge_weight), GFP_KERNEL);
	s = kvmalloc_array(cap, sizeof(*cge_share), GFP_KERNEL);
	d = kvmalloc_array(cap, sizeof(*cge_delta), GFP_KERNEL);
	if (!r || !w || !s || !d) {
		kvfree(r);
		kvfree(w);
		kvfree(s);
		kvfree(d);
		cge_sampler_health.alloc_failures++;
		return -ENOMEM;
	}
	kvfree(cge_recs);
	kvfree(cge_weight);
	kvfree(cge_share);
	kvfree(cge_delta);
	cge_recs = r;
	cge_weight = w;
	cge_share = s;
	cge_delta = d;
	cge_cap = cap;
	return 0;
}

static void cge_activate(struct cge_rec *rec, struct list_head *act,
			 unsigned int *n)
{
	if (list_empty(&rec->active)) {
		list_add_tail(&rec->active, act);
		(*n)++;
	}
}

/* SMT siblings drained together for a per-core energy split. */
#define CGE_MAX_SMT		8

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
 * Fold @nr CPU samples (one CPU, or the SMT siblings of one core) into the
 * records' accumulators. With per-core energy (AMD), the core's energy is
 * split here, with the same rule, between the cgroups that ran on it;
 * @sys_ns, the core's interrupt, softirq and steal time, goes with its idle
 * time there.
 */
static void cge_fold(struct cge_cpu_sample *cs, unsigned int nr,
		     unsigned int core_cpu, u64 sys_ns, struct list_head *act,
		     unsigned int *n, u64 *idle_ns)
{
	int split = READ_ONCE(cge_split_param);
	u64 core_uj = 0, idle = 0, busy = 0;
	unsigned int c, i, k = 0;
	struct cge_slot *sl;
	struct cge_rec *rec;
	bool per_core = cge_source->read_core &&
			!cge_source->read_core(core_cpu, &core_uj);

	for (c = 0; c < nr; c++) {
		idle += cs[c].idle_ns;
		for (i = 0; i < cs[c].nr; i++, k++) {
			sl = &cs[c].slot[i];
			rec = cge_rec_get(sl->cgid, sl->parent_cgid);
			rec->acc_ns += sl->ns;
			rec->acc_bg_ns += sl->bg_ns;
			rec->acc_wakeups += sl->wakeups;
			cge_activate(rec, act, n);
			cge_core_rec[k] = rec;
			cge_core_w[k] = cge_slot_weight(sl, split);
			busy += sl->ns;
		}
		/* Records for cgroups that overflowed, so next time they fit. */
		for (i = 0; i < cs[c].nr_want; i++)
			cge_rec_get(cs[c].want[i].cgid, cs[c].want[i].parent_cgid);
	}
	*idle_ns += idle;
	if (!per_core)
		return;
	cge_split(core_uj, idle + sys_ns, busy, cge_core_w, cge_core_share, k);
	for (i = 0; i < k; i++)
		cge_core_rec[i]->acc_core_uj += cge_core_share[i];
}

/*
 * Drain one CPU into @cs, and take its interrupt, softirq and steal time out
 * of its idle time into @sys. Return: the time taken.
 */
static u64 cge_drain_cpu(unsigned int cpu, struct cge_cpu_sample *cs,
			 struct cge_systime *sys)
{
	struct task_struct *idle_task = cge_cpu_drain(cpu, cs);
	u64 idle = cs->idle_ns;

	cge_systime_take(cpu, idle_task, &cs->idle_ns, sys);
	return idle - cs->idle_ns;
}

/*
 * Drain @pkg's CPUs, a core's SMT siblings together, into the records;
 * their idle time into @idle_ns, their interrupt, softirq and steal time
 * into @sys.
 */
static void cge_drain_pkg(struct cge_pkg *pkg, struct list_head *act,
			  unsigned int *n, u64 *idle_ns,
			  struct cge_systime *sys)
{
	struct cpumask *done = &cge_done;
	unsigned int cpu, sib, nr;
	u64 sys_ns;

	cpumask_clear(done);
	for_each_cpu(cpu, &pkg->cpus) {
		if (cpumask_test_cpu(cpu, done))
			continue;
		sys_ns = cge_drain_cpu(cpu, &cge_cs[0], sys);
		cpumask_set_cpu(cpu, done);
		nr = 1;
		for_each_cpu_and(sib, topology_sibling_cpumask(cpu), &pkg->cpus) {
			if (nr == CGE_MAX_SMT || !cge_source->read_core)
				break;
			if (cpumask_test_cpu(sib, done))
				continue;
			sys_ns += cge_drain_cpu(sib, &cge_cs[nr++], sys);
			cpumask_set_cpu(sib, done);
		}
		cge_fold(cge_cs, nr, cpu, sys_ns, act, n, idle_ns);
	}
}

/* Charges the probe could not cache; split with the first package. */
static void cge_drain_overflows(struct list_head *act, unsigned int *n)
{
	struct llist_node *first = cge_cgstate_take_overflows();
	struct cge_rec *rec, *tmp;

	llist_for_each_entry_safe(rec, tmp, first, ovf_node) {
		cge_rec_take_overflow(rec);
		cge_activate(rec, act, n);
	}
}

/*
 * The active records into the scratch arrays, with their deltas (time,
 * wakeups, impact, per-core energy) and split weights.
 * Return: their CPU time.
 */
static u64 cge_collect(struct list_head *act, int split)
{
	struct cge_rec *rec;
	unsigned int i = 0;
	u64 busy_ns = 0;

	list_for_each_entry(rec, act, active) {
		busy_ns += rec->acc_ns;
		cge_recs[i] = rec;
		memset(&cge_delta[i], 0, sizeof(cge_delta[i]));
		cge_delta[i].usage_ns = rec->acc_ns;
		cge_delta[i].wakeups = rec->acc_wakeups;
		cge_delta[i].impact_ns = cge_rec_impact(rec);
		cge_delta[i].dom_uj[CGE_DOM_CORE] = rec->acc_core_uj;
		cge_weight[i] = split == CGE_SPLIT_IMPACT ?
				cge_delta[i].impact_ns : rec->acc_ns;
		i++;
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
 * Empty the active records' accumulators. @added: their deltas were added;
 * if not (no scratch room), time and wakeups are added here, without
 * energy.
 */
static void cge_retire(struct list_head *act, bool added)
{
	struct cge_rec *rec, *tmp;

	list_for_each_entry_safe(rec, tmp, act, active) {
		if (!added) {
			struct cge_delta t = {
				.usage_ns = rec->acc_ns,
				.wakeups = rec->acc_wakeups,
				.impact_ns = cge_rec_impact(rec),
				.dom_uj[CGE_DOM_CORE] = rec->acc_core_uj,
			};
			cge_rec_add(rec, &t);
		}
		rec->acc_ns = 0;
		rec->acc_bg_ns = 0;
		rec->acc_wakeups = 0;
		rec->acc_core_uj = 0;
		list_del_init(&rec->active);
	}
}

/*
 * Read @pkg's energy for this interval and split it between the @n active
 * records, @sys's kinds and idle; @idle_ns is its CPUs' idle time. Without
 * scratch room for @n records, the records' time is kept and their share
 * of the energy goes to idle and @sys's kinds. Interrupts and softirqs
 * count as busy for the power model, steal as idle: the CPU ran someone
 * else. Not inlined: make bench times it with ftrace.
 */
static noinline void cge_split_pkg(struct cge_pkg *pkg,
				   struct list_head *act, unsigned int n,
				   u64 idle_ns, const struct cge_systime *sys)
{
	struct cge_root_stat *rs = &cge_root_stat;
	u64 active_ns = sys->ns[CGE_SYS_IRQ] + sys->ns[CGE_SYS_SOFTIRQ];
	bool room = !cge_grow(n);
	u64 busy_ns = 0, idle_uj, sys_uj[CGE_SYS_NR];
	struct cge_energy e;
	unsigned int i, k;

	BUILD_BUG_ON(CGE_SYS_NR > CGE_SPLIT_MAX_KINDS);
	if (room)
		busy_ns = cge_collect(act, READ_ONCE(cge_split_param));
	else
		n = 0;

	pkg->read_cpu = cpumask_first_and(&pkg->cpus, cpu_online_mask);
	if (pkg->read_cpu < nr_cpu_ids)
		cge_source->read(pkg,
				 idle_ns + sys->ns[CGE_SYS_STEAL] + active_ns +
				 busy_ns, active_ns + busy_ns, &e);
	else
		memset(&e, 0, sizeof(e));

	idle_uj = cge_share_energy(&e, idle_ns, busy_ns, sys, n, sys_uj);
	for (i = 0; i < n; i++)
		cge_rec_add(cge_recs[i], &cge_delta[i]);
	cge_retire(act, room);
	rs->total_uj = cge_sat_add(rs->total_uj, e.headline_uj);
	rs->idle_uj = cge_sat_add(rs->idle_uj, idle_uj);
	cge_time_add(&rs->idle, idle_ns);
	for (k = 0; k < CGE_SYS_NR; k++) {
		rs->sys_uj[k] = cge_sat_add(rs->sys_uj[k], sys_uj[k]);
		cge_time_add(&rs->sys[k], sys->ns[k]);
	}
}

static void cge_sample_locked(void)
{
	u64 now = ktime_get_ns();
	struct cge_systime sys;
	unsigned int p, n;
	u64 idle_ns;
	LIST_HEAD(act);

	lockdep_assert_held(&cge_lock);
	cge_params_coefs(&cge_k);
	if (atomic_xchg(&cge_resync_pending, 0)) {
		for (p = 0; p < cge_npkg; p++)
			cge_source->resync(&cge_pkgs[p]);
		cge_source_health.resyncs++;
	}
	if (now >= cge_reap_due_ns) {
		cge_cgstate_reap();
		cge_reap_due_ns = now + CGE_REAP_MS * NSEC_PER_MSEC;
	}
	cpus_read_lock();
	for (p = 0; p < cge_npkg; p++) {
		n = 0;
		idle_ns = 0;
		memset(&sys, 0, sizeof(sys));
		if (p == 0)
			cge_drain_overflows(&act, &n);
		cge_drain_pkg(&cge_pkgs[p], &act, &n, &idle_ns, &sys);
		cge_split_pkg(&cge_pkgs[p], &act, n, idle_ns, &sys);
	}
	cpus_read_unlock();
	cge_sampler_health.samples++;
	cge_sampler_health.last_sample_ns = ktime_get_ns();
}

/* The last sample, at module exit: it empties every CPU's cache. */
static void cge_sample_now(void)
{
	mutex_lock(&cge_lock);
	cge_sample_locked();
	mutex_unlock(&cge_lock);
}

/*
 * Samples are due every interval_ms from the previous due time, not from when
 * the previous one finished: the delay is what is left of the period, rounded
 * up to whole jiffies, so the sample's own time and the timer's rounding do
 * not add up (10 ms asked for gave a sample every 16 ms at HZ=250 when each
 * period was counted from the end of the last sample). A sample serves the
 * due time it was queued for, however late it runs; the due times that pass
 * before it ends are missed and counted as overruns, and the next sample is
 * queued for the first due time still ahead, so samples + overruns is the
 * number of due times. The timer fires on a tick: a sample can start up to
 * a tick before or after its due time. A new interval_ms applies from the
 * sample already queued, which keeps the old one.
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
	if (!READ_ONCE(cge_stopping))
		queue_delayed_work(cge_unbound_wq, &cge_work, delay);
}

static int cge_pm_notify(struct notifier_block *nb, unsigned long action,
			 void *data)
{
	switch (action) {
	case PM_POST_SUSPEND:
	case PM_POST_HIBERNATION:
	case PM_POST_RESTORE:
		/* Counters may have been reset: not a wrap. */
		atomic_set(&cge_resync_pending, 1);
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block cge_pm_nb = {
	.notifier_call = cge_pm_notify,
};

/* Group the possible CPUs by physical package. */
static int cge_setup_pkgs(void)
{
	int *ids, id;
	unsigned int cpu, p;

	cge_pkgs = kcalloc(nr_cpu_ids, sizeof(*cge_pkgs), GFP_KERNEL);
	ids = kcalloc(nr_cpu_ids, sizeof(*ids), GFP_KERNEL);
	if (!cge_pkgs || !ids) {
		kfree(ids);
		kfree(cge_pkgs);
		return -ENOMEM;
	}
	for_each_possible_cpu(cpu) {
		id = cpu_present(cpu) ? topology_physical_package_id(cpu) : 0;
		for (p = 0; p < cge_npkg && ids[p] != id; p++)
			;
		if (p == cge_npkg) {
			ids[p] = id;
			cge_pkgs[p].id = p;
			cge_npkg++;
		}
		cpumask_set_cpu(cpu, &cge_pkgs[p].cpus);
	}
	for (p = 0; p < cge_npkg; p++) {
		cge_pkgs[p].read_cpu = cpumask_first_and(&cge_pkgs[p].cpus,
							 cpu_online_mask);
		if (cge_pkgs[p].read_cpu >= nr_cpu_ids)
			cge_pkgs[p].read_cpu = cpumask_first(&cge_pkgs[p].cpus);
	}
	kfree(ids);
	return 0;
}

static int cge_choose_source(void)
{
	int kind = READ_ONCE(cge_source_param);

	if (kind == CGE_SOURCE_MODEL) {
		cge_source = &cge_model_source;
		return 0;
	}
	cge_source = cge_rapl_detect(cge_pkgs, cge_npkg);
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

	ret = cge_setup_pkgs();
	if (ret)
		return ret;
	ret = cge_choose_source();
	if (ret)
		goto err;
	ret = cge_systime_init();
	if (ret)
		goto err;
	ret = register_pm_notifier(&cge_pm_nb);
	if (ret)
		goto err_sys;
	INIT_DELAYED_WORK(&cge_work, cge_sample_fn);
	queue_delayed_work(cge_unbound_wq, &cge_work,
			   msecs_to_jiffies(READ_ONCE(cge_interval_ms)));
	return 0;
err_sys:
	cge_systime_exit();
err:
	cge_rapl_exit();
	kfree(cge_pkgs);
	return ret;
}

/* After the probe is detached: a last sample flushes every cache. */
void cge_sampler_exit(void)
{
	WRITE_ONCE(cge_stopping, true);
	cancel_delayed_work_sync(&cge_work);
	unregister_pm_notifier(&cge_pm_nb);
	cge_sample_now();
	cge_systime_exit();
	cge_rapl_exit();
	kvfree(cge_recs);
	kvfree(cge_weight);
	kvfree(cge_share);
	kvfree(cge_delta);
	kfree(cge_pkgs);
}
