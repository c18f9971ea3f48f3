// SPDX-License-Identifier: GPL-2.0
/*
 * rollup.c - add a sample's charges to the records and their ancestors,
 * each ancestor once.
 *
 * A charged record's own part and its hierarchical totals are added at
 * once; what it adds to its ancestors' waits in its parent's slot. Every
 * record with a slot has its ancestors in slots before it, so one pass
 * from the last slot to the first adds each slot to its record and then
 * to its parent's slot, a child's before its parent's. With N charged
 * cgroups under one parent, the parent is visited once, not N times, and
 * a charged cgroup without charged children gets no slot of its own.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>

#include "rollup.h"
#include "sampler.h"

struct cge_roll {
	struct cge_rec *rec;
	struct cge_up up;
};

/*
 * Scratch under cge_lock: slots [0, cge_roll_nr) in use. After a failed
 * grow, no other is tried until the flush, so that a pass under memory
 * pressure does not reclaim for every record while it holds cge_lock.
 */
static struct cge_roll *cge_roll_slots;
static unsigned int cge_roll_nr;
static unsigned int cge_roll_cap;
static bool cge_roll_failed;

static int cge_roll_grow(unsigned int n)
{
	unsigned int cap;
	struct cge_roll *r;

	if (n <= cge_roll_cap)
		return 0;
	if (cge_roll_failed)
		return -ENOMEM;
	cap = max(n, 2 * cge_roll_cap);
	r = kvmalloc_array(cap, sizeof(*r), GFP_KERNEL);
	if (!r) {
		cge_roll_failed = true;
		cge_sampler_health.alloc_failures++;
		return -ENOMEM;
	}
	if (cge_roll_nr)
		memcpy(r, cge_roll_slots, cge_roll_nr * sizeof(*r));
	kvfree(cge_roll_slots);
	cge_roll_slots = r;
	cge_roll_cap = cap;
	return 0;
}

/*
 * @rec's slot. Without one, @rec and its ancestors up to the first that
 * has one get slots, the highest first, so that a parent's slot always
 * comes before its children's. NULL if the scratch cannot grow.
 */
static struct cge_up *cge_roll_slot(struct cge_rec *rec)
{
	unsigned int m = 0, i;
	struct cge_rec *r;

	if (rec->roll_idx)
		return &cge_roll_slots[rec->roll_idx - 1].up;
	for (r = rec; r && !r->roll_idx; r = r->parent)
		m++;
	if (cge_roll_grow(cge_roll_nr + m))
		return NULL;
	i = cge_roll_nr + m;
	for (r = rec; r && !r->roll_idx; r = r->parent) {
		i--;
		cge_roll_slots[i].rec = r;
		memset(&cge_roll_slots[i].up, 0, sizeof(cge_roll_slots[i].up));
		r->roll_idx = i + 1;
	}
	cge_roll_nr += m;
	return &cge_roll_slots[rec->roll_idx - 1].up;
}

/**
 * cge_rollup_add() - add one interval's charge to a record, its ancestors'
 * part at the next cge_rollup_flush()
 * @rec: the record its tasks ran in
 * @d: the charge
 * @step: the sampler interval it was charged over
 *
 * Without room for a slot, the charge goes to the ancestors at once.
 * cge_lock held.
 */
void cge_rollup_add(struct cge_rec *rec, const struct cge_delta *d,
		    struct cge_power_step *step)
{
	struct cge_up up, *slot;

	lockdep_assert_held(&cge_lock);
	cge_rec_add_own(rec, d, step, &up);
	cge_rec_add_up(rec, &up, step);
	rec = rec->parent;
	if (!rec)
		return;
	slot = cge_roll_slot(rec);
	if (slot) {
		cge_up_add(slot, &up);
		return;
	}
	for (; rec; rec = rec->parent)
		cge_rec_add_up(rec, &up, step);
}

/**
 * cge_rollup_flush() - add the slots to their records and ancestors
 * @step: the sampler interval of the charges
 *
 * cge_lock held without a break since the first cge_rollup_add() of the
 * pass: the slots point at records that the reaper may free.
 */
void cge_rollup_flush(struct cge_power_step *step)
{
	struct cge_roll *s;
	struct cge_rec *p;
	unsigned int k;

	lockdep_assert_held(&cge_lock);
	k = cge_roll_nr;
	while (k--) {
		s = &cge_roll_slots[k];
		cge_rec_add_up(s->rec, &s->up, step);
		p = s->rec->parent;
		if (p)
			cge_up_add(&cge_roll_slots[p->roll_idx - 1].up, &s->up);
		s->rec->roll_idx = 0;
	}
	cge_roll_nr = 0;
	cge_roll_failed = false;
}

void cge_rollup_exit(void)
{
	WARN_ON_ONCE(cge_roll_nr);
	kvfree(cge_roll_slots);
	cge_roll_slots = NULL;
	cge_roll_cap = 0;
}
