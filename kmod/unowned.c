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

/*
 * The pre-order successor of @rec in the record tree: its first child if
 * @down, else its next sibling or the next sibling of its nearest ancestor
 * that has one; NULL at the end. No stack: the tree can be deep.
 */
static struct cge_rec *cge_un_next(struct cge_rec *rec, bool down)
{
	if (down && !hlist_empty(&rec->children))
		return hlist_entry(rec->children.first, struct cge_rec,
				   sibling);
	for (; rec->parent; rec = rec->parent) {
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

/* @rec's weight among its siblings: 0 if its cgroup has no task. */
static u32 cge_un_weight(struct cge_rec *rec)
{
	struct cgroup *cgrp = cge_rec_cgroup(rec);

	if (!cgroup_is_populated(cgrp))
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
 * children. cge_lock held, at the end of a sample.
 */
void cge_unowned_share(int policy, const u64 *uj, u64 now, bool start)
{
	struct cge_rec *root = cge_rec_root(), *rec;
	unsigned int visits = 0;
	bool any = false;
	int k;

	lockdep_assert_held(&cge_lock);
	if (start || now - cge_un_gen_ns >= CGE_UN_REREAD_NS) {
		/* 0 is a new record's: never read */
		if (!++cge_un_gen)
			cge_un_gen = 1;
		cge_un_gen_ns = now;
	}
	for (k = 0; k < CGE_UN_NR; k++)
		any |= uj[k] != 0;
	if (policy != CGE_UNOWNED_WEIGHT || !any)
		return;
	memcpy(root->un_uj, uj, sizeof(root->un_uj));
	for (rec = root; rec; rec = cge_un_next(rec, cge_un_give(rec))) {
		if (!(++visits % 1024))
			cond_resched();
	}
}
