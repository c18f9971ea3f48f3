// SPDX-License-Identifier: GPL-2.0
/*
 * cgstate.c - per-cgroup records: lookup, creation, hierarchy, lifetime.
 *
 * Records live in an RCU hash keyed by cgroup id. Only the sampler (and
 * module exit) adds or removes them, under cge_lock; the probe's overflow
 * path looks them up under RCU. A record holds a reference on its cgroup so
 * it can tell when the cgroup is removed; it is freed two reaper passes
 * later, once no charge can still name it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/hashtable.h>
#include <linux/mutex.h>
#include <linux/cgroup.h>
#include <linux/bitops.h>

#include "compat.h"
#include "cgstate.h"
#include "gone.h"

#define CGE_HASH_BITS		12
#define CGE_DEAD_PASSES		2
#define CGE_OVF_QUEUED		0

/* Record tree, hash writers, totals: the sampler and readers. */
DEFINE_MUTEX(cge_lock);
struct cge_root_stat cge_root_stat;

static DEFINE_HASHTABLE(cge_hash, CGE_HASH_BITS);
static LIST_HEAD(cge_all);
static LIST_HEAD(cge_grave);
static LLIST_HEAD(cge_ovf_list);
static struct kmem_cache *cge_rec_cache;
static struct cge_rec *cge_root;
static u64 cge_nr_records;

u64 cge_root_cgid(void)
{
	return cge_root->cgid;
}

struct cge_rec *cge_rec_root(void)
{
	return cge_root;
}

/*
 * Caller holds cge_lock or is in an RCU read-side section, which keeps the
 * record it returns alive.
 */
struct cge_rec *cge_rec_find(u64 cgid)
{
	struct cge_rec *rec;

	RCU_LOCKDEP_WARN(!rcu_read_lock_held() && !lockdep_is_held(&cge_lock),
			 "record lookup without cge_lock or RCU");
	hash_for_each_possible_rcu(cge_hash, rec, hnode, cgid,
				   lockdep_is_held(&cge_lock)) {
		if (rec->cgid == cgid)
			return rec;
	}
	return NULL;
}

static struct cge_rec *cge_rec_alloc(u64 cgid, struct cgroup *cgrp,
				     struct cge_rec *parent)
{
	struct cge_rec *rec = kmem_cache_zalloc(cge_rec_cache, GFP_KERNEL);

	if (!rec)
		return NULL;
	rec->cgid = cgid;
	rec->cgrp = cgrp;
	rec->parent = parent;
	INIT_LIST_HEAD(&rec->active);
	if (parent)
		parent->nr_children++;
	list_add_tail(&rec->all, &cge_all);
	hash_add_rcu(cge_hash, &rec->hnode, cgid);
	cge_nr_records++;
	return rec;
}

/*
 * Create records for @cgrp and any ancestor that lacks one, top down.
 * Consumes the caller's reference on @cgrp.
 */
static struct cge_rec *cge_rec_create(struct cgroup *cgrp)
{
	struct cge_rec *rec = NULL;
	struct cgroup *c, *pc;
	struct cge_rec *p;

	for (;;) {
		/* The highest ancestor of @cgrp (or itself) without a record. */
		c = cgrp;
		p = NULL;
		while ((pc = cgroup_parent(c))) {
			p = cge_rec_find(cgroup_id(pc));
			if (p)
				break;
			c = pc;
		}
		if (!pc) {		/* @c is the root: it has a record */
			rec = cge_root;
			break;
		}
		if (c != cgrp)
			cgroup_get(c);
		rec = cge_rec_alloc(cgroup_id(c), c, p);
		if (!rec) {
			if (c != cgrp)
				cgroup_put(c);
			rec = p;	/* charge the nearest ancestor instead */
			break;
		}
		if (c == cgrp)
			return rec;	/* the record owns the reference */
	}
	cgroup_put(cgrp);
	return rec;
}

/* Ancestors walked up from a removed cgroup before giving it to the root. */
#define CGE_MAX_HOPS	64

/**
 * cge_rec_get() - the record to charge for @cgid, created if needed
 * @cgid: cgroup id as recorded by the probe
 * @parent_cgid: its parent's id, or 0 if unknown
 *
 * A cgroup removed before we saw it is charged to its nearest ancestor that
 * has a record or still exists: the parent the probe recorded, then the
 * parents that cge_gone_parent() remembers for removed ones; the root if
 * none is found. Called with cge_lock held; may sleep.
 */
struct cge_rec *cge_rec_get(u64 cgid, u64 parent_cgid)
{
	struct cge_rec *rec;
	struct cgroup *cgrp;
	unsigned int hops;

	lockdep_assert_held(&cge_lock);
	for (hops = 0; cgid && hops < CGE_MAX_HOPS; hops++) {
		rec = cge_rec_find(cgid);
		if (rec)
			return rec;
		cgrp = cge_cgroup_get_from_id(cgid);
		if (cgrp)
			return cge_rec_create(cgrp);
		cgid = parent_cgid ?: cge_gone_parent(cgid);
		parent_cgid = 0;
	}
	return cge_root;
}

/* Add @d to @rec and all its ancestors. cge_lock held. */
void cge_rec_add(struct cge_rec *rec, const struct cge_delta *d)
{
	struct cge_stat *st;
	int i;

	for (; rec; rec = rec->parent) {
		st = &rec->st;
		cge_time_add(&st->usage, d->usage_ns);
		st->wakeups = cge_sat_add(st->wakeups, d->wakeups);
		cge_time_add(&st->impact, d->impact_ns);
		st->energy_uj = cge_sat_add(st->energy_uj, d->energy_uj);
		for (i = 0; i < CGE_DOM_NR; i++)
			st->dom_uj[i] = cge_sat_add(st->dom_uj[i], d->dom_uj[i]);
	}
}

/**
 * cge_cgstate_overflow() - charge a cgroup the per-CPU cache had no room for
 * @cgid: cgroup id
 * @parent_cgid: its parent's id, or 0
 * @ns: CPU time
 * @bg_ns: the part of @ns at background QoS
 * @wakeups: wakeups
 *
 * Called from the probe (runqueue lock held, IRQs off): RCU lookup and
 * atomics only. A cgroup without a record yet is charged to its parent's
 * record, or the root's; the sampler picks the charges up at the next sample.
 *
 * Return: true if @cgid has a record of its own.
 */
bool cge_cgstate_overflow(u64 cgid, u64 parent_cgid, u64 ns, u64 bg_ns,
			  u32 wakeups)
{
	struct cge_rec *rec, *own;

	rcu_read_lock();
	own = cge_rec_find(cgid);
	rec = own;
	if (!rec && parent_cgid)
		rec = cge_rec_find(parent_cgid);
	if (!rec)
		rec = cge_root;
	atomic64_add(ns, &rec->ovf_ns);
	atomic64_add(bg_ns, &rec->ovf_bg_ns);
	atomic_add(wakeups, &rec->ovf_wakeups);
	if (!test_and_set_bit(CGE_OVF_QUEUED, &rec->ovf_queued))
		llist_add(&rec->ovf_node, &cge_ovf_list);
	rcu_read_unlock();
	return own;
}

/**
 * cge_cgstate_take_overflows() - records with overflow charges pending
 *
 * The caller walks the list with llist_for_each_entry_safe, calling
 * cge_rec_take_overflow() on each record.
 */
struct llist_node *cge_cgstate_take_overflows(void)
{
	return llist_del_all(&cge_ovf_list);
}

/* Move @rec's overflow charges into its interval accumulators. */
void cge_rec_take_overflow(struct cge_rec *rec)
{
	clear_bit(CGE_OVF_QUEUED, &rec->ovf_queued);
	/* Clear before taking: a charge added after the take re-queues. */
	smp_mb__after_atomic();
	rec->acc_ns += atomic64_xchg(&rec->ovf_ns, 0);
	rec->acc_bg_ns += atomic64_xchg(&rec->ovf_bg_ns, 0);
	rec->acc_wakeups += atomic_xchg(&rec->ovf_wakeups, 0);
}

static void cge_rec_free(struct cge_rec *rec)
{
	if (rec->parent)
		rec->parent->nr_children--;
	if (rec->cgrp)
		cgroup_put(rec->cgrp);
	kmem_cache_free(cge_rec_cache, rec);
	cge_nr_records--;
}

/**
 * cge_cgstate_reap() - free the records of removed cgroups
 *
 * A record whose cgroup is removed stays findable for CGE_DEAD_PASSES
 * passes, so charges still in per-CPU caches reach it; then it is unhashed,
 * and freed once an RCU grace period has passed and no overflow charge is
 * queued on it. Its totals are already in its ancestors. cge_lock held.
 */
void cge_cgstate_reap(void)
{
	struct cge_rec *rec, *tmp;

	lockdep_assert_held(&cge_lock);
	list_for_each_entry_safe(rec, tmp, &cge_grave, all) {
		if (!poll_state_synchronize_rcu(rec->gp_cookie) ||
		    test_bit(CGE_OVF_QUEUED, &rec->ovf_queued) ||
		    atomic64_read(&rec->ovf_ns) || !list_empty(&rec->active))
			continue;
		list_del(&rec->all);
		cge_rec_free(rec);
	}
	list_for_each_entry_safe(rec, tmp, &cge_all, all) {
		if (rec == cge_root || rec->nr_children ||
		    cge_cgroup_online(rec->cgrp))
			continue;
		if (++rec->dead_passes < CGE_DEAD_PASSES)
			continue;
		hash_del_rcu(&rec->hnode);
		rec->gp_cookie = get_state_synchronize_rcu();
		list_move_tail(&rec->all, &cge_grave);
	}
}

/**
 * cge_cgstate_read_locked() - copy a cgroup's totals
 * @cgid: cgroup id
 * @out: the totals
 *
 * Caller holds cge_lock, so the copy is one consistent snapshot.
 *
 * Return: true if the cgroup has a record (it ran a task, or a descendant did).
 */
bool cge_cgstate_read_locked(u64 cgid, struct cge_stat *out)
{
	struct cge_rec *rec;

	lockdep_assert_held(&cge_lock);
	rec = cge_rec_find(cgid);
	if (rec)
		*out = rec->st;
	return rec;
}

/*
 * Whether cgroup v2 has cgroups: without any (a v1-only host, or none made
 * yet) every task sits in the default hierarchy's root and is charged there.
 */
bool cge_cgstate_v2_in_use(void)
{
	return READ_ONCE(cgrp_dfl_root.cgrp.nr_descendants) > 0;
}

/* Live records and the bytes they use. cge_lock held. */
void cge_cgstate_usage(u64 *records, u64 *bytes)
{
	*records = cge_nr_records;
	*bytes = cge_nr_records * kmem_cache_size(cge_rec_cache);
}

int cge_cgstate_init(void)
{
	cge_rec_cache = KMEM_CACHE(cge_rec, 0);
	if (!cge_rec_cache)
		return -ENOMEM;
	mutex_lock(&cge_lock);
	cge_root = cge_rec_alloc(cgroup_id(&cgrp_dfl_root.cgrp), NULL, NULL);
	mutex_unlock(&cge_lock);
	if (!cge_root) {
		kmem_cache_destroy(cge_rec_cache);
		return -ENOMEM;
	}
	return 0;
}

/*
 * After the probe is gone (its unregistering waited for every probe call,
 * the overflow path's RCU readers included) and the filesystem with it:
 * nobody else looks at the records, which are freed at once.
 */
void cge_cgstate_exit(void)
{
	struct cge_rec *rec, *tmp;

	mutex_lock(&cge_lock);
	list_splice_tail_init(&cge_grave, &cge_all);
	/* Children first: they were created after their parents. */
	list_for_each_entry_safe_reverse(rec, tmp, &cge_all, all) {
		list_del(&rec->all);
		cge_rec_free(rec);
	}
	mutex_unlock(&cge_lock);
	kmem_cache_destroy(cge_rec_cache);
}
