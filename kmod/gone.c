// SPDX-License-Identifier: GPL-2.0
/*
 * gone.c - removed cgroups: their records to the reaper, their parents kept.
 *
 * The probe records a cgroup's id and its parent's. When both are removed
 * before the sampler drains their charge (a pod and its container scope go
 * together), the ids alone cannot say where the charge belongs: a removed
 * cgroup can no longer be looked up. The cgroup_rmdir tracepoint fires for
 * each removal, with the cgroup and so its parent: this file hands its
 * record, if it has one, to the reaper (cge_cgstate_gone()), and keeps the
 * last CGE_GONE_NR (cgroup, parent) pairs so the sampler can walk up to
 * the nearest ancestor that still exists. A pair is kept for a cgroup with
 * a record too: a charge handed over at a task's next switch (a drain's
 * overcharge, a kernel thread's wakeup) can name it after its record is
 * gone. The tracepoint fires after the cgroup's directory is removed: a
 * sample that walks up through a cgroup in between finds it neither live
 * nor here, and charges the ancestor the slot names (cge_slot_anc()), or
 * the root.
 *
 * With a probe attached, every rmdir on the machine also formats the
 * cgroup's path for the tracepoint (cgroup_path() under a global lock).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/cgroup.h>
#include <linux/errno.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "cgstate.h"
#include "gone.h"

/*
 * Removals remembered, shared by all: a pair is needed from the cgroup's
 * removal until the next sample, which at the longest interval (10 s) covers
 * 200 removals a second. Faster removals, one tenant's included, overwrite
 * pairs early: such a cgroup's charge then goes to the nearest ancestor
 * that had a record when the probe made its slot (probe.c, cge_slot_anc());
 * to the root if it had none that near, for a drain's overcharge (over_ns)
 * and for a task that had moved on when its slot was made.
 */
#define CGE_GONE_NR	2048	/* a power of two: the slot is seq's low bits */
#define CGE_GONE_MASK	(CGE_GONE_NR - 1)

struct cge_gone {
	u64 cgid;
	u64 parent;
};

static struct cge_gone cge_gone_ring[CGE_GONE_NR];
/* removals recorded since load; the next goes to cge_gone_seq's slot */
static u64 cge_gone_seq;
/* The tracepoint writes, the sampler reads; neither sleeps under it. */
static DEFINE_RAW_SPINLOCK(cge_gone_lock);
static struct tracepoint *cge_rmdir_tp;

/*
 * Process context, under cgroup_mutex and the tracepoint's path lock (a
 * spinlock, IRQs off without PREEMPT_RT); kernels whose tracepoints take
 * SRCU-fast (7.x) call probes preemptible. No allocation, no sleeping.
 */
static void cge_rmdir_probe(void *data, struct cgroup *cgrp, const char *path)
{
	struct cgroup *parent = cgroup_parent(cgrp);
	struct cge_gone *g;

	if (cgrp->root != &cgrp_dfl_root || !parent)	/* v2 ids only */
		return;
	cge_cgstate_gone(cgroup_id(cgrp));
	raw_spin_lock(&cge_gone_lock);
	g = &cge_gone_ring[cge_gone_seq & CGE_GONE_MASK];
	g->cgid = cgroup_id(cgrp);
	g->parent = cgroup_id(parent);
	cge_gone_seq++;
	raw_spin_unlock(&cge_gone_lock);
}

/**
 * cge_gone_parent() - the parent of a recently removed cgroup
 * @cgid: the removed cgroup's id
 *
 * Return: its parent's id, or 0 if @cgid is not among the last CGE_GONE_NR
 * removals.
 */
u64 cge_gone_parent(u64 cgid)
{
	struct cge_gone *g;
	u64 parent = 0;
	unsigned int i;

	/* Newest first: a charge's cgroup was removed in the last interval. */
	raw_spin_lock(&cge_gone_lock);
	for (i = 1; i <= CGE_GONE_NR; i++) {
		g = &cge_gone_ring[(cge_gone_seq - i) & CGE_GONE_MASK];
		if (g->cgid == cgid) {
			parent = g->parent;
			break;
		}
	}
	raw_spin_unlock(&cge_gone_lock);
	return parent;
}

/* Whether removals are seen as they happen (the tracepoint is attached). */
bool cge_gone_tracked(void)
{
	return !!cge_rmdir_tp;
}

static void cge_find_rmdir_tp(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "cgroup_rmdir"))
		cge_rmdir_tp = tp;
}

/* Without the tracepoint, such a charge goes as when the ring lost it. */
void cge_gone_init(void)
{
	for_each_kernel_tracepoint(cge_find_rmdir_tp, NULL);
	if (!cge_rmdir_tp ||
	    tracepoint_probe_register(cge_rmdir_tp, cge_rmdir_probe, NULL)) {
		pr_warn("cannot attach to cgroup_rmdir: the charge of a cgroup removed with its parent goes to its nearest ancestor the module counted when it ran, or to the root\n");
		cge_rmdir_tp = NULL;
	}
}

void cge_gone_exit(void)
{
	if (!cge_rmdir_tp)
		return;
	tracepoint_probe_unregister(cge_rmdir_tp, cge_rmdir_probe, NULL);
	tracepoint_synchronize_unregister();
}
