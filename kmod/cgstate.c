// SPDX-License-Identifier: GPL-2.0
/*
 * cgstate.c - per-cgroup records: lookup, creation, hierarchy, lifetime.
 *
 * Records live in an RCU hash keyed by cgroup id. Only the sampler (and
 * module exit) adds or removes them, under cge_lock; the probe's overflow
 * path and the cgroup_rmdir probe look them up under RCU. A record holds a
 * reference on its cgroup so it can tell when the cgroup is removed; it is
 * freed two reaper passes later, once no charge can still name it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/hashtable.h>
#include <linux/mutex.h>
#include <linux/cgroup.h>
#include <linux/bitops.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "compat.h"
#include "cgstate.h"
#include "gone.h"

#define CGE_HASH_BITS		12
#define CGE_DEAD_PASSES		2
/* rec->flags: on cge_ovf_list; on cge_gone_list or cge_removed, for good */
#define CGE_OVF_QUEUED		0
#define CGE_GONE_QUEUED		1

/* Record tree, hash writers, totals: the sampler and readers. */
DEFINE_MUTEX(cge_lock);
struct cge_root_stat cge_root_stat;

static DEFINE_HASHTABLE(cge_hash, CGE_HASH_BITS);
static LIST_HEAD(cge_all);
/* records whose cgroup is removed, not yet unhashed: what the reaper walks */
static LIST_HEAD(cge_removed);
/* records whose removal the cgroup_rmdir tracepoint saw, for the reaper */
static LLIST_HEAD(cge_gone_list);
static LIST_HEAD(cge_grave);
static LLIST_HEAD(cge_ovf_list);
static struct kmem_cache *cge_rec_cache;
static struct cge_rec *cge_root;
static u64 cge_nr_records;
/*
 * Overflow accumulators per record: one per package the machine can have;
 * a package beyond them (an underestimate) uses the first.
 */
static unsigned int cge_ovf_slots;

/*
 * Grace periods for the grave, numbered: one call_rcu() in flight at a
 * time (every kernel has it; polled grace-period cookies came in 5.12).
 * cge_gp_asked is the number of the last one queued, written under
 * cge_lock while none is in flight; the callback publishes it as
 * cge_gp_done. A record unhashed while number N is in flight waits for
 * N + 1, which began after it was unhashed.
 */
static struct rcu_head cge_gp_head;
static unsigned long cge_gp_asked;
static unsigned long cge_gp_done;
static bool cge_gp_in_flight;

static void cge_gp_passed(struct rcu_head *head)
{
	/* pairs with the reaper's acquire: the grace period is over */
	smp_store_release(&cge_gp_done, cge_gp_asked);
	/* pairs with the reaper's acquire: cge_gp_asked was read */
	smp_store_release(&cge_gp_in_flight, false);
}

/* The root's record, the top of the record tree. */
struct cge_rec *cge_rec_root(void)
{
	return cge_root;
}

u64 cge_root_cgid(void)
{
	return cge_root->cgid;
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
	INIT_HLIST_HEAD(&rec->children);
	if (parent)
		hlist_add_head(&rec->sibling, &parent->children);
	list_add_tail(&rec->all, &cge_all);
	INIT_LIST_HEAD(&rec->removed);
	hash_add_rcu(cge_hash, &rec->hnode, cgid);
	cge_nr_records++;
	/*
	 * A cgroup being removed while its record is made: rmdir clears
	 * CSS_ONLINE, then its tracepoint looks the record up
	 * (cge_cgstate_gone()). Either that finds the record hashed or this
	 * reads the cgroup offline (a full barrier on each side); if both,
	 * the bit lets one of them queue it.
	 */
	smp_mb();
	if (cgrp && !cge_cgroup_online(cgrp) &&
	    !test_and_set_bit(CGE_GONE_QUEUED, &rec->flags))
		list_add_tail(&rec->removed, &cge_removed);
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
/*
 * Ancestors the probe looks up, runqueue lock held, for a cgroup without a
 * record: the sampler records a charged cgroup's whole chain, so only
 * chains made since the last sample are walked at all.
 */
#define CGE_NEAREST_HOPS	16

/**
 * cge_rec_nearest() - the nearest ancestor of @cg that has a record
 * @cg: a cgroup, under RCU
 *
 * From the probe (IRQs off), when it makes a slot: RCU lookups only, at
 * most CGE_NEAREST_HOPS of them.
 *
 * Return: its id (the root's has one), or 0 if none is that near.
 */
u64 cge_rec_nearest(struct cgroup *cg)
{
	unsigned int hops;

	for (hops = 0; hops < CGE_NEAREST_HOPS; hops++) {
		cg = cgroup_parent(cg);
		if (!cg)
			break;
		if (cge_rec_find(cgroup_id(cg)))
			return cgroup_id(cg);
	}
	return 0;
}

/**
 * cge_rec_get() - the record to charge for @cgid, created if needed
 * @cgid: cgroup id as recorded by the probe
 * @parent_cgid: its parent's id, or 0 if unknown
 * @anc_cgid: its nearest ancestor with a record when the probe made its
 *	slot (cge_rec_nearest()), or 0 if unknown
 *
 * A cgroup removed before we saw it is charged to its nearest ancestor that
 * has a record or still exists: the parent the probe recorded, then the
 * parents that cge_gone_parent() remembers for removed ones; where those
 * run out (the removals of others can overwrite them), @anc_cgid; the root
 * if none is found. Called with cge_lock held; may sleep.
 */
struct cge_rec *cge_rec_get(u64 cgid, u64 parent_cgid, u64 anc_cgid)
{
	struct cge_rec *rec, *parent;
	struct cgroup *cgrp;
	unsigned int hops;

	lockdep_assert_held(&cge_lock);
	for (hops = 0; cgid && hops < CGE_MAX_HOPS; hops++) {
		rec = cge_rec_find(cgid);
		if (rec)
			return rec;
		/* the root's record holds no reference: its cgroup is static */
		parent = parent_cgid ? cge_rec_find(parent_cgid) : NULL;
		cgrp = cge_cgroup_get_from_id(cgid, !parent ? NULL :
					      parent->cgrp ?: &cgrp_dfl_root.cgrp);
		if (cgrp)
			return cge_rec_create(cgrp);
		cgid = parent_cgid ?: cge_gone_parent(cgid);
		parent_cgid = 0;
		if (!cgid) {
			cgid = anc_cgid;
			anc_cgid = 0;
		}
	}
	return cge_root;
}

/**
 * cge_rec_of() - the record of a live @cgrp, created if needed
 * @cgrp: a cgroup the caller holds a reference to
 *
 * Return: its record, or NULL if it was removed (its record, if any, is
 * only waiting for the reaper) or has none and cannot have one (no memory:
 * cge_rec_create() then gives an ancestor's). Called with cge_lock held;
 * may sleep.
 */
struct cge_rec *cge_rec_of(struct cgroup *cgrp)
{
	struct cge_rec *rec;

	if (!(READ_ONCE(cgrp->self.flags) & CSS_ONLINE))
		return NULL;
	rec = cge_rec_find(cgroup_id(cgrp));
	if (rec)
		return rec;
	cgroup_get(cgrp);
	rec = cge_rec_create(cgrp);
	return rec && rec->cgrp == cgrp ? rec : NULL;
}

/* Add @c to @to, each counter stopping at U64_MAX. */
static void cge_counts_add(struct cge_counts *to, const struct cge_counts *c)
{
	int i;

	to->usage_us = cge_sat_add(to->usage_us, c->usage_us);
	to->wakeups = cge_sat_add(to->wakeups, c->wakeups);
	to->impact_us = cge_sat_add(to->impact_us, c->impact_us);
	to->energy_uj = cge_sat_add(to->energy_uj, c->energy_uj);
	for (i = 0; i < CGE_DOM_NR; i++)
		to->dom_uj[i] = cge_sat_add(to->dom_uj[i], c->dom_uj[i]);
}

/*
 * Add @usage_ns and @impact_ns to @rec's own time: the whole µs they make
 * with its remainder go to @rec and each ancestor alike.
 */
static void cge_rec_add_time(struct cge_rec *rec, u64 usage_ns, u64 impact_ns)
{
	u64 usage_us = cge_time_carry(&rec->usage_rem_ns, usage_ns);
	u64 impact_us = cge_time_carry(&rec->impact_rem_ns, impact_ns);

	rec->own.c.usage_us = cge_sat_add(rec->own.c.usage_us, usage_us);
	rec->own.c.impact_us = cge_sat_add(rec->own.c.impact_us, impact_us);
	for (; rec; rec = rec->parent) {
		rec->st.c.usage_us = cge_sat_add(rec->st.c.usage_us, usage_us);
		rec->st.c.impact_us = cge_sat_add(rec->st.c.impact_us, impact_us);
	}
}

/**
 * cge_rec_add_own() - add one interval's charge to a record's own part
 * @rec: the record its tasks ran in
 * @d: the charge, over the sampler interval @step
 * @step: the interval
 * @up: set to what the charge adds to @rec's hierarchical totals and to
 *	each ancestor's: the same whole units to each (cge_rec_add_up())
 *
 * A cgroup's counters are its own tasks' plus its children's, exactly
 * (cge_cgstate_read_locked()). A cgroup without children shows floor(its
 * tasks' ns / 1000) µs, as cpu.stat does; a parent up to 1 µs per cgroup
 * below it less. cge_lock held.
 */
void cge_rec_add_own(struct cge_rec *rec, const struct cge_delta *d,
		     const struct cge_power_step *step, struct cge_up *up)
{
	up->c.usage_us = cge_time_carry(&rec->usage_rem_ns, d->usage_ns);
	up->c.impact_us = cge_time_carry(&rec->impact_rem_ns, d->impact_ns);
	up->c.wakeups = d->wakeups;
	up->c.energy_uj = d->energy_uj;
	memcpy(up->c.dom_uj, d->dom_uj, sizeof(up->c.dom_uj));
	cge_power_charge(step, d->energy_uj, up->inc);
	cge_counts_add(&rec->own.c, &up->c);
}

/* Add @c to @to: the sum of two records' charges for their ancestors. */
void cge_up_add(struct cge_up *to, const struct cge_up *c)
{
	int i;

	cge_counts_add(&to->c, &c->c);
	for (i = 0; i < CGE_POWER_NR; i++)
		to->inc[i] = cge_sat_add(to->inc[i], c->inc[i]);
}

/*
 * Add @up, charged over the interval @step, to @rec's hierarchical totals
 * only (not to its ancestors'). cge_lock held.
 */
void cge_rec_add_up(struct cge_rec *rec, const struct cge_up *up,
		    struct cge_power_step *step)
{
	cge_counts_add(&rec->st.c, &up->c);
	cge_power_add(&rec->st.power, step, up->inc);
}

/*
 * Add @d, charged over the sampler interval @step, to @rec and all its
 * ancestors, the same whole units to each (cge_rec_add_own()). For a
 * single charge; the sampler adds each sample's charges with rollup.c,
 * which visits each ancestor once. cge_lock held.
 */
void cge_rec_add(struct cge_rec *rec, const struct cge_delta *d,
		 struct cge_power_step *step)
{
	struct cge_up up;

	cge_rec_add_own(rec, d, step, &up);
	for (; rec; rec = rec->parent)
		cge_rec_add_up(rec, &up, step);
}

/* Package @pkg's overflow accumulators (the first if it has none). */
static struct cge_ovf *cge_rec_ovf(struct cge_rec *rec, unsigned int pkg)
{
	return &rec->ovf[pkg < cge_ovf_slots ? pkg : 0];
}

static bool cge_rec_ovf_pending(struct cge_rec *rec)
{
	unsigned int i;

	for (i = 0; i < cge_ovf_slots; i++)
		if (atomic64_read(&rec->ovf[i].ns) ||
		    atomic_read(&rec->ovf[i].wakeups))
			return true;
	return false;
}

/**
 * cge_cgstate_overflow() - charge a cgroup the per-CPU cache had no room for
 * @cgid: cgroup id
 * @parent_cgid: its parent's id, or 0
 * @ns: CPU time
 * @bg_ns: the part of @ns at background QoS
 * @wakeups: wakeups
 * @pkg: the package of the CPU it ran on, whose energy it is split with
 *
 * Called from the probe (runqueue lock held, IRQs off): RCU lookup and
 * atomics only. A cgroup without a record yet is charged to its parent's
 * record, or the root's; the sampler picks the charges up at the next sample.
 *
 * Return: true if @cgid has a record of its own.
 */
bool cge_cgstate_overflow(u64 cgid, u64 parent_cgid, u64 ns, u64 bg_ns,
			  u32 wakeups, unsigned int pkg)
{
	struct cge_rec *rec, *own;
	struct cge_ovf *o;

	rcu_read_lock();
	own = cge_rec_find(cgid);
	rec = own;
	if (!rec && parent_cgid)
		rec = cge_rec_find(parent_cgid);
	if (!rec)
		rec = cge_root;
	o = cge_rec_ovf(rec, pkg);
	atomic64_add(ns, &o->ns);
	atomic64_add(bg_ns, &o->bg_ns);
	atomic_add(wakeups, &o->wakeups);
	if (!test_and_set_bit(CGE_OVF_QUEUED, &rec->flags))
		llist_add(&rec->ovf_node, &cge_ovf_list);
	rcu_read_unlock();
	return own;
}

/**
 * cge_cgstate_take_overflows() - records with overflow charges pending
 *
 * The sampler walks the list with llist_for_each_entry once per package,
 * calling cge_rec_take_overflow() on each record, then hands it to
 * cge_cgstate_overflows_done(). Until then the records stay marked queued:
 * the probe adds charges to them without queueing them again.
 */
struct llist_node *cge_cgstate_take_overflows(void)
{
	return llist_del_all(&cge_ovf_list);
}

/**
 * cge_rec_take_overflow() - take @rec's overflow charges on @pkg's CPUs
 * @rec: a record from cge_cgstate_take_overflows()
 * @pkg: the package being sampled
 * @ns: their CPU time
 * @bg_ns: the part of it at background QoS
 * @wakeups: their wakeups
 *
 * Return: true if there were any.
 */
bool cge_rec_take_overflow(struct cge_rec *rec, unsigned int pkg, u64 *ns,
			   u64 *bg_ns, u32 *wakeups)
{
	struct cge_ovf *o;

	/* Slot 0 holds the charges of packages beyond the slots. */
	if (pkg >= cge_ovf_slots)
		return false;
	o = &rec->ovf[pkg];
	/*
	 * The probe adds ns before bg_ns: taking bg_ns first keeps a charge
	 * that lands in between from giving more background than time. Each
	 * is read before it is exchanged: a read of 0 takes what an exchange
	 * would at that moment, without the locked write (most overflow
	 * charges have no background part, and many no wakeup).
	 */
	*bg_ns = atomic64_read(&o->bg_ns) ? atomic64_xchg(&o->bg_ns, 0) : 0;
	*ns = atomic64_read(&o->ns) ? atomic64_xchg(&o->ns, 0) : 0;
	*wakeups = atomic_read(&o->wakeups) ? atomic_xchg(&o->wakeups, 0) : 0;
	return *ns || *wakeups;
}

/*
 * Done with the records of cge_cgstate_take_overflows(): unmark them, and
 * queue again those the probe charged since their package was taken.
 */
void cge_cgstate_overflows_done(struct llist_node *first)
{
	struct cge_rec *rec, *tmp;

	llist_for_each_entry_safe(rec, tmp, first, ovf_node) {
		clear_bit(CGE_OVF_QUEUED, &rec->flags);
		/* Clear before looking: a charge added after it queues. */
		smp_mb__after_atomic();
		if (cge_rec_ovf_pending(rec) &&
		    !test_and_set_bit(CGE_OVF_QUEUED, &rec->flags))
			llist_add(&rec->ovf_node, &cge_ovf_list);
	}
}

static void cge_rec_free(struct cge_rec *rec)
{
	if (rec->parent)
		hlist_del(&rec->sibling);
	if (rec->cgrp)
		cgroup_put(rec->cgrp);
	kmem_cache_free(cge_rec_cache, rec);
	cge_nr_records--;
}

/**
 * cge_cgstate_gone() - the cgroup @cgid was removed
 * @cgid: its id
 *
 * Called from the cgroup_rmdir tracepoint (gone.c), after rmdir cleared
 * CSS_ONLINE: RCU lookup and atomics only. Queues its record, if it has
 * one, for the reaper, so that the reaper's cost follows the removals of
 * cgroups with records, whatever else is removed.
 */
void cge_cgstate_gone(u64 cgid)
{
	struct cge_rec *rec;

	/* pairs with cge_rec_alloc(): CSS_ONLINE cleared, then the lookup */
	smp_mb();
	rcu_read_lock();
	rec = cge_rec_find(cgid);
	if (rec && rec != cge_root &&
	    !test_and_set_bit(CGE_GONE_QUEUED, &rec->flags))
		llist_add(&rec->gone_node, &cge_gone_list);
	rcu_read_unlock();
}

/*
 * Put the records of the cgroups removed since the last pass on
 * cge_removed: those the tracepoint queued; without the tracepoint, every
 * record whose cgroup is offline. cge_lock held.
 */
static void cge_find_removed(void)
{
	struct llist_node *first;
	struct cge_rec *rec, *tmp;

	if (cge_gone_tracked()) {
		/*
		 * Oldest first, as they were removed; _safe: the removed list
		 * head takes the gone_node's place.
		 */
		first = llist_reverse_order(llist_del_all(&cge_gone_list));
		llist_for_each_entry_safe(rec, tmp, first, gone_node)
			list_add_tail(&rec->removed, &cge_removed);
		return;
	}
	list_for_each_entry(rec, &cge_all, all) {
		/* long lists: let others run (under cge_lock, in no RCU section) */
		cond_resched();
		if (rec->cgrp && !cge_cgroup_online(rec->cgrp) &&
		    !test_and_set_bit(CGE_GONE_QUEUED, &rec->flags))
			list_add_tail(&rec->removed, &cge_removed);
	}
}

/**
 * cge_cgstate_reap() - free the records of removed cgroups
 *
 * A record whose cgroup is removed stays findable for CGE_DEAD_PASSES
 * passes, so charges still in per-CPU caches reach it; then it is unhashed,
 * and freed once an RCU grace period has passed and no overflow charge is
 * queued on it. Its totals are already in its ancestors. A pass looks at
 * the records of removed cgroups only, unless the cgroup_rmdir tracepoint
 * is not attached (cge_find_removed()). cge_lock held.
 */
void cge_cgstate_reap(void)
{
	struct cge_rec *rec, *tmp, *last;
	unsigned long done;
	int k;

	lockdep_assert_held(&cge_lock);
	/* pairs with cge_gp_passed(): the grace periods done are over */
	done = smp_load_acquire(&cge_gp_done);
	list_for_each_entry_safe(rec, tmp, &cge_grave, all) {
		cond_resched();
		if (ULONG_CMP_LT(done, rec->gp_cookie) ||
		    test_bit(CGE_OVF_QUEUED, &rec->flags) ||
		    cge_rec_ovf_pending(rec))
			continue;
		list_del(&rec->all);
		/*
		 * Its totals are in its parent's, which now has them as its
		 * own; with its ns below a whole µs, so that none is lost.
		 */
		cge_counts_add(&rec->parent->own.c, &rec->st.c);
		for (k = 0; k < CGE_UN_NR; k++)
			rec->parent->own.share_uj[k] =
				cge_sat_add(rec->parent->own.share_uj[k],
					    rec->st.share_uj[k]);
		cge_rec_add_time(rec->parent, rec->usage_rem_ns,
				 rec->impact_rem_ns);
		cge_rec_free(rec);
	}
	cge_find_removed();
	list_for_each_entry_safe(rec, tmp, &cge_removed, removed) {
		cond_resched();
		if (!hlist_empty(&rec->children))
			continue;
		if (++rec->dead_passes < CGE_DEAD_PASSES)
			continue;
		list_del_init(&rec->removed);
		hash_del_rcu(&rec->hnode);
		rec->gp_cookie = cge_gp_asked + 1;
		list_move_tail(&rec->all, &cge_grave);
	}
	if (list_empty(&cge_grave))
		return;
	last = list_last_entry(&cge_grave, struct cge_rec, all);
	/* pairs with cge_gp_passed(): it no longer reads cge_gp_asked */
	if (!smp_load_acquire(&cge_gp_in_flight) &&
	    ULONG_CMP_LT(cge_gp_asked, last->gp_cookie)) {
		cge_gp_asked++;
		WRITE_ONCE(cge_gp_in_flight, true);
		call_rcu(&cge_gp_head, cge_gp_passed);
	}
}

/**
 * cge_cgstate_read_locked() - copy a cgroup's totals and its own part
 * @cgid: cgroup id
 * @out: the totals
 * @own: its own part (struct cge_rec), power averages zero. It never
 *	decreases (until a total stops at U64_MAX): a freed child's totals
 *	move into it.
 *
 * Caller holds cge_lock, so the copy is one consistent snapshot.
 *
 * Return: true if the cgroup has a record (it ran a task, or a descendant did).
 */
bool cge_cgstate_read_locked(u64 cgid, struct cge_stat *out,
			     struct cge_stat *own)
{
	struct cge_rec *rec;

	lockdep_assert_held(&cge_lock);
	rec = cge_rec_find(cgid);
	if (!rec)
		return false;
	*out = rec->st;
	*own = rec->own;
	return true;
}

/* How many records there are. cge_lock held. */
unsigned int cge_cgstate_nr(void)
{
	lockdep_assert_held(&cge_lock);
	return cge_nr_records;
}

/* Copy @rec to @dst[@i], if there is room. */
static void cge_rec_copy_to(struct cge_rec *rec, struct cge_rec_copy *dst,
			    unsigned int cap, unsigned int i)
{
	if (i >= cap)
		return;
	dst[i].cgid = rec->cgid;
	dst[i].st = rec->st;
	dst[i].own = rec->own;
}

/**
 * cge_cgstate_copy() - every record's totals, as they stand now
 * @dst: where to copy them
 * @cap: how many @dst has room for
 *
 * The live records and those waiting to be freed, whose cgroups are gone.
 * cge_lock held.
 *
 * Return: the number of records; only the first @cap are copied.
 */
unsigned int cge_cgstate_copy(struct cge_rec_copy *dst, unsigned int cap)
{
	struct cge_rec *rec;
	unsigned int i = 0;

	lockdep_assert_held(&cge_lock);
	list_for_each_entry(rec, &cge_all, all) {
		cge_rec_copy_to(rec, dst, cap, i++);
		if (!(i % 1024))
			cond_resched();
	}
	list_for_each_entry(rec, &cge_grave, all)
		cge_rec_copy_to(rec, dst, cap, i++);
	return i;
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

/**
 * cge_cgstate_init() - the record cache and the root's record
 * @pkgs: how many packages the machine can have (overflow slots per record)
 *
 * Return: 0 or -ENOMEM.
 */
int cge_cgstate_init(unsigned int pkgs)
{
	struct cge_rec *r = NULL;

	cge_ovf_slots = max(pkgs, 1U);
	cge_rec_cache = kmem_cache_create("cge_rec",
					  struct_size(r, ovf, cge_ovf_slots),
					  __alignof__(struct cge_rec), 0, NULL);
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
 * After the probes are gone (their unregistering waited for every call:
 * the overflow path's and the rmdir probe's RCU readers included) and the
 * filesystem with them: nobody else looks at the records, which are freed
 * at once.
 */
void cge_cgstate_exit(void)
{
	struct cge_rec *rec, *tmp;

	/* cge_gp_passed() is module code: it must have run */
	rcu_barrier();
	mutex_lock(&cge_lock);
	INIT_LIST_HEAD(&cge_removed);
	llist_del_all(&cge_gone_list);
	list_splice_tail_init(&cge_grave, &cge_all);
	/* Children first: they were created after their parents. */
	list_for_each_entry_safe_reverse(rec, tmp, &cge_all, all) {
		list_del(&rec->all);
		cge_rec_free(rec);
	}
	mutex_unlock(&cge_lock);
	kmem_cache_destroy(cge_rec_cache);
}
