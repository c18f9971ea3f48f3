// SPDX-License-Identifier: GPL-2.0
/*
 * unowned.c - the energy of a sample that no task drew (idle, and the
 * interrupts, softirqs and steal no cgroup was charged for), shared between
 * the cgroups at the end of the sample by the declared policy.
 *
 * weight: down the hierarchy, as the scheduler shares CPU time. A cgroup's
 * part goes to those of its children that have tasks (their own or their
 * descendants'), in proportion to their cpu.weight, and to its own tasks,
 * together one more entity of the default weight (a nice-0 task's). A
 * cgroup without the cpu controller has the default weight; an empty one
 * reserves nothing. The parts are cumulative roundings of the parent's
 * (as cge_split()'s): they add up to it exactly, so the root's part is the
 * sample's. A child that has tasks but no record (none of them ran since
 * the module loaded) counts with its weight, and its part stays with its
 * parent, the nearest ancestor with a record.
 *
 * cpuset: a CPU that a valid cpuset partition owns (cpuset.c) gives its
 * idle and interrupt time's energy to the partition, shared inside it by
 * weight; the other CPUs' energy goes by weight from the root, the
 * partitions left out (their tasks do not run there). A package's energy
 * goes to its CPUs' owners in proportion to their time, as the sample
 * split it between idle, interrupts and the tasks by time. Without a
 * partition, the same as weight.
 */
#include <linux/kernel.h>
#include <linux/cgroup.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/minmax.h>

#include "compat.h"
#include "cgstate.h"
#include "cpuset.h"
#include "split.h"
#include "unowned.h"

/*
 * A record's cpu.weight is read again once a second (a write to the file
 * has no event) and in the first sample of the policy: at a record's visit
 * when its un_gen is not cge_un_gen, which moves on at those times.
 */
#define CGE_UN_REREAD_NS	NSEC_PER_SEC

static u32 cge_un_gen = 1;
static u64 cge_un_gen_ns;
static unsigned int cge_un_visits;
/* cpuset: the owners' table this sample uses; NULL: none, or no partition */
static struct cge_owners *cge_un_tab;

/* rec->un_part (cpuset): why a record's part is shared apart, or 0 */
enum {
	CGE_UN_PART = 1,	/* a partition: down its own subtree */
	CGE_UN_PART_ONLY,	/* no tasks but partitions' below it */
};

/*
 * The pre-order successor of @rec in @top's subtree: its first child if
 * @down, else its next sibling or the next sibling of its nearest ancestor
 * below @top that has one; NULL at the end. No stack: the tree can be deep.
 */
static struct cge_rec *cge_un_next(struct cge_rec *rec, bool down,
				   struct cge_rec *top)
{
	if (down && !hlist_empty(&rec->children))
		return hlist_entry(rec->children.first, struct cge_rec,
				   sibling);
	for (; rec != top; rec = rec->parent) {
		if (rec->sibling.next)
			return hlist_entry(rec->sibling.next, struct cge_rec,
					   sibling);
	}
	return NULL;
}

/* The "weight" file of the cpu controller: NULL until found, or absent. */
static struct cftype *cge_weight_cft;
static bool cge_weight_looked;

/*
 * @cgrp's cpu.weight, as a read of the file gives it: the cpu controller's
 * own read_u64(), lock-free. CGROUP_WEIGHT_DFL where the cgroup has no cpu
 * controller of its own (its parent's subtree_control does not enable it),
 * or the kernel has no group weights. cge_lock held (the cache above).
 */
static u64 cge_cpu_weight(struct cgroup *cgrp)
{
	struct cgroup_subsys_state *css;
	struct cftype *cft;
	u64 w = CGROUP_WEIGHT_DFL;

	rcu_read_lock();
	css = cge_cpu_css(cgrp);
	if (css && cgroup_parent(cgrp)) {
		if (!cge_weight_looked) {
			for (cft = css->ss->dfl_cftypes; cft && cft->name[0];
			     cft++) {
				if (!strcmp(cft->name, "weight") &&
				    cft->read_u64) {
					cge_weight_cft = cft;
					break;
				}
			}
			cge_weight_looked = true;
		}
		cft = cge_weight_cft;
		if (cft)
			w = max_t(u64, cft->read_u64(css, cft), 1);
	}
	rcu_read_unlock();
	return min_t(u64, w, U32_MAX);
}

/*
 * @rec's weight among its siblings: 0 if its cgroup has no task, or is a
 * partition (cpuset), which has its CPUs' energy apart, or has no tasks
 * but partitions'.
 */
static u32 cge_un_weight(struct cge_rec *rec)
{
	struct cgroup *cgrp = cge_rec_cgroup(rec);

	if (rec->un_part || !cgroup_is_populated(cgrp))
		return 0;
	if (rec->un_gen != cge_un_gen) {
		rec->un_cpuw = cge_cpu_weight(cgrp);
		rec->un_gen = cge_un_gen;
	}
	return rec->un_cpuw;
}

/*
 * The weights of @cgrp's children that have tasks and no record, when it
 * has more children with tasks than the @nrec its records show: they keep
 * their parts in @cgrp's own. Read every time: such a child is rare and
 * brief (its tasks had not run since the module loaded).
 */
static u64 cge_un_unrecorded(struct cgroup *cgrp, unsigned int nrec)
{
	struct cgroup_subsys_state *pos;
	u64 w = 0;

	if (READ_ONCE(cgrp->nr_populated_domain_children) +
	    READ_ONCE(cgrp->nr_populated_threaded_children) <= nrec)
		return 0;
	rcu_read_lock();
	list_for_each_entry_rcu(pos, &cgrp->self.children, sibling) {
		if (cgroup_is_populated(pos->cgroup) &&
		    !cge_rec_find(cgroup_id(pos->cgroup)))
			w += cge_cpu_weight(pos->cgroup);
	}
	rcu_read_unlock();
	return w;
}

/*
 * @rec's part un_uj[] to its totals, shared between its children that
 * have tasks by their weights and its own tasks (CGROUP_WEIGHT_DFL,
 * together): cumulative roundings of its part (cge_mul_div_u64(), exact),
 * so the children's parts and its own add up to it. A part with no weight
 * to go to stays its own.
 * Return: whether a child got any: the walk goes down into its children,
 * and skips those given nothing (un_uj[] cleared here).
 */
static bool cge_un_give(struct cge_rec *rec)
{
	u64 wsum, prefix, cur, prev[CGE_UN_NR], given[CGE_UN_NR] = {};
	struct cgroup *cgrp = cge_rec_cgroup(rec);
	const u64 *a = rec->un_uj;
	bool any = false, down = false;
	unsigned int nrec = 0;
	struct cge_rec *c;
	int k;

	for (k = 0; k < CGE_UN_NR; k++)
		any |= a[k] != 0;
	if (!any)
		return false;
	prefix = cgroup_has_tasks(cgrp) ? CGROUP_WEIGHT_DFL : 0;
	wsum = 0;
	hlist_for_each_entry(c, &rec->children, sibling) {
		c->un_w = cge_un_weight(c);
		wsum += c->un_w;
		nrec += c->un_w != 0;
	}
	prefix += cge_un_unrecorded(cgrp, nrec);
	wsum += prefix;
	for (k = 0; k < CGE_UN_NR; k++)
		prev[k] = wsum ? cge_mul_div_u64(a[k], prefix, wsum) : a[k];
	hlist_for_each_entry(c, &rec->children, sibling) {
		memset(c->un_uj, 0, sizeof(c->un_uj));
		if (!c->un_w)
			continue;
		prefix += c->un_w;
		for (k = 0; k < CGE_UN_NR; k++) {
			cur = cge_mul_div_u64(a[k], prefix, wsum);
			c->un_uj[k] = cur - prev[k];
			given[k] += c->un_uj[k];
			prev[k] = cur;
			down |= c->un_uj[k] != 0;
		}
	}
	for (k = 0; k < CGE_UN_NR; k++) {
		rec->st.share_uj[k] = cge_sat_add(rec->st.share_uj[k], a[k]);
		rec->own.share_uj[k] = cge_sat_add(rec->own.share_uj[k],
						   a[k] - given[k]);
	}
	return down;
}

/* Share @uj[] down @top's subtree, @top's part all of it. */
static void cge_un_walk(struct cge_rec *top, const u64 *uj)
{
	struct cge_rec *rec;
	bool any = false;
	int k;

	for (k = 0; k < CGE_UN_NR; k++)
		any |= uj[k] != 0;
	if (!any)
		return;
	memcpy(top->un_uj, uj, sizeof(top->un_uj));
	for (rec = top; rec;
	     rec = cge_un_next(rec, cge_un_give(rec), top)) {
		if (!(++cge_un_visits % 1024))
			cond_resched();
	}
}

/*
 * Mark the ancestors of partition @rec that have no tasks but those of
 * partitions below them (the ancestors of a remote partition can be such
 * members): left out of the walk they are in, as the partitions are. A
 * populated child that is a partition, or such an ancestor, counts once in
 * its parent's un_w (scratch until the walk sets it), which is such an
 * ancestor once all its populated children are.
 */
static void cge_un_mark_up(struct cge_rec *rec)
{
	struct cgroup *cgrp;
	struct cge_rec *a;

	if (!cgroup_is_populated(cge_rec_cgroup(rec)))
		return;
	for (a = rec->parent; a && a->parent && !a->un_part; a = a->parent) {
		cgrp = cge_rec_cgroup(a);
		if (cgroup_has_tasks(cgrp) ||
		    ++a->un_w < READ_ONCE(cgrp->nr_populated_domain_children) +
				READ_ONCE(cgrp->nr_populated_threaded_children))
			return;
		a->un_part = CGE_UN_PART_ONLY;
	}
}

/*
 * cpuset: each partition's part down its subtree, and into its ancestors'
 * totals; the root's down the rest, the partitions left out (un_part). A
 * partition without a record, or removed since the scan, leaves its part
 * to the root's.
 */
static void cge_un_partitions(struct cge_owners *t)
{
	struct cge_rec *rec, *a;
	unsigned int i;
	int k;

	for (i = 1; i < t->nr; i++) {
		rec = cge_rec_of(t->cgrp[i]);
		if (rec) {
			rec->un_part = CGE_UN_PART;
			for (a = rec->parent; a; a = a->parent)
				a->un_w = 0;
			continue;
		}
		for (k = 0; k < CGE_UN_NR; k++) {
			t->uj[0][k] += t->uj[i][k];
			t->uj[i][k] = 0;
		}
	}
	for (i = 1; i < t->nr; i++) {
		rec = cge_rec_find(cgroup_id(t->cgrp[i]));
		if (rec && rec->un_part == CGE_UN_PART)
			cge_un_mark_up(rec);
	}
	cge_un_walk(cge_rec_root(), t->uj[0]);
	for (i = 1; i < t->nr; i++) {
		rec = cge_rec_find(cgroup_id(t->cgrp[i]));
		if (!rec || rec->un_part != CGE_UN_PART)
			continue;
		for (a = rec->parent; a; a = a->parent) {
			for (k = 0; k < CGE_UN_NR; k++)
				a->st.share_uj[k] = cge_sat_add(a->st.share_uj[k],
								t->uj[i][k]);
		}
		cge_un_walk(rec, t->uj[i]);
	}
	for (i = 1; i < t->nr; i++) {
		rec = cge_rec_find(cgroup_id(t->cgrp[i]));
		if (!rec || rec->un_part != CGE_UN_PART)
			continue;
		for (a = rec->parent; a && a->un_part == CGE_UN_PART_ONLY;
		     a = a->parent)
			a->un_part = 0;
	}
	for (i = 0; i < t->nr; i++) {
		rec = i ? cge_rec_find(cgroup_id(t->cgrp[i])) : NULL;
		if (rec)
			rec->un_part = 0;
		memset(t->uj[i], 0, sizeof(t->uj[i]));
	}
}

/**
 * cge_unowned_begin() - at the start of a sample, under @policy
 * @policy: enum cge_unowned_policy, the one this sample applies
 *
 * Return: the partitions that own CPUs (cpuset), whose CPUs' energy the
 * sample keeps apart with cge_unowned_cpu() and cge_unowned_pkg(); 0:
 * none, nothing to keep apart. cge_lock held.
 */
unsigned int cge_unowned_begin(int policy)
{
	struct cge_owners *t = cge_owners;

	lockdep_assert_held(&cge_lock);
	cge_un_tab = policy == CGE_UNOWNED_CPUSET && t && t->nr > 1 ? t : NULL;
	return cge_un_tab ? cge_un_tab->nr - 1 : 0;
}

/* @cpu's idle and interrupt time in this sample, to its owner's. */
void cge_unowned_cpu(unsigned int cpu, u64 idle_ns, u64 sys_ns)
{
	u64 *ns = cge_un_tab->ns[cge_un_tab->of_cpu[cpu]];

	ns[CGE_UN_IDLE] += idle_ns;
	ns[CGE_UN_SYS] += sys_ns;
}

/**
 * cge_unowned_pkg() - a package's unowned energy to its CPUs' owners
 * @uj: its CGE_UN_NR amounts, µJ
 * @other_ns: idle time of no CPU (repaid or lost charges): the root's
 *
 * Each kind in proportion to the owners' time of it (cge_unowned_cpu()),
 * in cumulative roundings: the parts add up to @uj exactly. All to the
 * root where no CPU had any.
 */
void cge_unowned_pkg(const u64 *uj, u64 other_ns)
{
	struct cge_owners *t = cge_un_tab;
	u64 sum, prefix, prev, cur;
	unsigned int i;
	int k;

	t->ns[0][CGE_UN_IDLE] += other_ns;
	for (k = 0; k < CGE_UN_NR; k++) {
		sum = 0;
		for (i = 0; i < t->nr; i++)
			sum += t->ns[i][k];
		if (!sum) {
			t->uj[0][k] += uj[k];
			continue;
		}
		prefix = 0;
		prev = 0;
		for (i = 0; i < t->nr; i++) {
			prefix += t->ns[i][k];
			cur = cge_mul_div_u64(uj[k], prefix, sum);
			t->uj[i][k] += cur - prev;
			prev = cur;
			t->ns[i][k] = 0;
		}
	}
}

/**
 * cge_unowned_share() - share a sample's unowned energy by @policy
 * @policy: enum cge_unowned_policy, the one this sample applies
 * @uj: the sample's CGE_UN_NR amounts, µJ, summed over the packages
 * @now: the sample's time, CLOCK_MONOTONIC ns
 * @start: this is the policy's first sample: read every cpu.weight again
 *
 * Adds each cgroup's part to its share_uj[] (the root's is all of @uj),
 * and its own tasks' part to its own.share_uj[], in one walk down the
 * records from the root that visits the cgroups given a part and their
 * children (cpuset: one more down each partition, which the sample gave
 * its part). cge_lock held, at the end of a sample.
 */
void cge_unowned_share(int policy, const u64 *uj, u64 now, bool start)
{
	lockdep_assert_held(&cge_lock);
	if (start || now - cge_un_gen_ns >= CGE_UN_REREAD_NS) {
		/* 0 is a new record's: never read */
		if (!++cge_un_gen)
			cge_un_gen = 1;
		cge_un_gen_ns = now;
	}
	if (policy == CGE_UNOWNED_NONE)
		return;
	if (cge_un_tab)
		cge_un_partitions(cge_un_tab);
	else
		cge_un_walk(cge_rec_root(), uj);
}
