/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgstate.h - per-cgroup records: hierarchical totals and their lifetime.
 *
 * A record exists for every cgroup that ran a task since the module loaded,
 * and for all its ancestors. Totals are hierarchical (like cpu.stat): the
 * sampler adds each interval's deltas to a record and all its ancestors, so
 * the energy of a removed cgroup stays in its parent.
 */
#ifndef CGE_CGSTATE_H
#define CGE_CGSTATE_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/atomic.h>
#include <linux/rcupdate.h>

#include "rapl_decode.h"
#include "total.h"
#include "systime.h"
#include "power.h"
#include "unowned.h"

/* One interval's charge to a cgroup: the sampler's delta. */
struct cge_delta {
	u64 usage_ns;
	u64 wakeups;
	u64 impact_ns;		/* energy impact, CPU-ns equivalents */
	u64 energy_uj;		/* headline: package + DRAM */
	u64 dom_uj[CGE_DOM_NR];
};

/* Counters that add up, each stopping at U64_MAX (cge_counts_add()). */
struct cge_counts {
	u64 usage_us;
	u64 wakeups;
	u64 impact_us;			/* CPU-µs equivalents */
	u64 energy_uj;
	u64 dom_uj[CGE_DOM_NR];
};

/*
 * What energy.stat shows for one cgroup: totals since the module loaded,
 * none of which wraps (total.h), its descendants' included.
 */
struct cge_stat {
	struct cge_counts c;
	struct cge_power power;		/* of c.energy_uj */
	/* its part of the energy no task drew (unowned.c), by kind */
	u64 share_uj[CGE_UN_NR];
};

/*
 * What one interval's charges add to a record's hierarchical totals and
 * to each ancestor's: whole units, and the power averages' increments.
 */
struct cge_up {
	struct cge_counts c;
	u64 inc[CGE_POWER_NR];
};

/* Root-only totals. */
struct cge_root_stat {
	u64 total_uj;
	u64 idle_uj;
	struct cge_time_total idle;
	u64 sys_uj[CGE_SYS_NR];		/* interrupts, softirqs, steal */
	struct cge_time_total sys[CGE_SYS_NR];
};

#include <linux/cgroup.h>
#include <linux/kernfs.h>

/*
 * Whether @cgrp is still there: rmdir clears CSS_ONLINE at once, while the
 * self reference may be killed later (recent kernels wait for the last
 * exiting task).
 */
static inline bool cge_cgroup_online(struct cgroup *cgrp)
{
	return READ_ONCE(cgrp->self.flags) & CSS_ONLINE;
}

/*
 * A cgroup that cgroupfs shows: online, and its directory activated.
 * cgroup_create() links a cgroup into its parent's children and marks it
 * online before it populates and activates the directory, and a mkdir can
 * still fail after that.
 */
static inline bool cge_cgroup_shown(struct cgroup *cgrp)
{
	return cge_cgroup_online(cgrp) &&
	       (READ_ONCE(cgrp->kn->flags) & KERNFS_ACTIVATED);
}

/* Charges of one package's CPUs that their caches had no room for. */
struct cge_ovf {
	atomic64_t ns;
	atomic64_t bg_ns;
	atomic_t wakeups;
};

struct cge_rec {
	struct hlist_node hnode;	/* cge_hash, RCU */
	struct list_head all;		/* every record, cge_lock */
	/*
	 * Its cgroup is removed: on cge_gone_list from the rmdir probe, then
	 * moved to cge_removed (cge_lock), never on both; CGE_GONE_QUEUED
	 * makes it queued once.
	 */
	union {
		struct llist_node gone_node;
		struct list_head removed;
	};
	struct llist_node ovf_node;	/* has overflow charges pending */
	unsigned long flags;		/* CGE_OVF_QUEUED, CGE_GONE_QUEUED */
	u64 cgid;
	struct cgroup *cgrp;		/* reference held; root: none */
	struct cge_rec *parent;
	struct hlist_head children;	/* their sibling nodes, cge_lock */
	struct hlist_node sibling;
	unsigned long gp_cookie;	/* grace period it waits for */
	unsigned int dead_passes;
	/*
	 * Sampler only, one after the other in each package's pass: while
	 * it is charged, 1 + the index of its charges in the sampler's
	 * scratch (acc_idx); then, while the charges are added to the
	 * records, 1 + its slot in rollup.c (roll_idx); else 0.
	 */
	union {
		unsigned int acc_idx;
		unsigned int roll_idx;
	};
	/*
	 * Sampler only: CPU time charged to it for a running task beyond
	 * what the task then turned out to have run (probe.c's over_ns),
	 * taken back from its next charges.
	 */
	u64 debt_ns;
	/*
	 * Sampler only (unowned.c): its cgroup's cpu.weight as last read, in
	 * which of unowned.c's read generations (0: never), its weight among
	 * its siblings in this sample's share (0: no task), why this sample
	 * shares its part apart (cpuset: a partition, or above partitions
	 * only; 0: not), its part of each kind.
	 */
	u32 un_cpuw;
	u32 un_gen;
	u32 un_w;
	u8 un_part;
	u64 un_uj[CGE_UN_NR];
	/* its own tasks' time below a whole µs (total.h) */
	u32 usage_rem_ns;
	u32 impact_rem_ns;
	struct cge_stat st;		/* hierarchical totals, cge_lock */
	/*
	 * The part of @st its own tasks, its freed descendants' records and
	 * charges that found no record below it made: @st less its child
	 * records' @st, exactly (until a total stops at U64_MAX). No power
	 * averages. cge_lock.
	 */
	struct cge_stat own;
	/* charges from the overflow path, per package (topo.c) */
	struct cge_ovf ovf[];
};

/* @rec's cgroup: the root's record holds none, its cgroup is static. */
static inline struct cgroup *cge_rec_cgroup(const struct cge_rec *rec)
{
	return rec->cgrp ?: &cgrp_dfl_root.cgrp;
}

/* One record in a copy of them all (cge_cgstate_copy()). */
struct cge_rec_copy {
	u64 cgid;
	struct cge_stat st;
	struct cge_stat own;
};

/* Held by the sampler for a whole sample and by readers of the totals. */
extern struct mutex cge_lock;
extern struct cge_root_stat cge_root_stat;

int cge_cgstate_init(unsigned int pkgs);
void cge_cgstate_exit(void);

struct cge_rec *cge_rec_get(u64 cgid, u64 parent_cgid, u64 anc_cgid);
struct cge_rec *cge_rec_find(u64 cgid);
struct cge_rec *cge_rec_of(struct cgroup *cgrp);
struct cge_rec *cge_rec_root(void);
u64 cge_rec_nearest(struct cgroup *cg);
void cge_rec_add(struct cge_rec *rec, const struct cge_delta *d,
		 struct cge_power_step *step);
void cge_rec_add_own(struct cge_rec *rec, const struct cge_delta *d,
		     const struct cge_power_step *step, struct cge_up *up);
void cge_rec_add_up(struct cge_rec *rec, const struct cge_up *up,
		    struct cge_power_step *step);
void cge_up_add(struct cge_up *to, const struct cge_up *c);
void cge_cgstate_gone(u64 cgid);
bool cge_cgstate_overflow(u64 cgid, u64 parent_cgid, u64 ns, u64 bg_ns,
			  u32 wakeups, unsigned int pkg);
struct llist_node *cge_cgstate_take_overflows(void);
bool cge_rec_take_overflow(struct cge_rec *rec, unsigned int pkg, u64 *ns,
			   u64 *bg_ns, u32 *wakeups);
void cge_cgstate_overflows_done(struct llist_node *first);
void cge_cgstate_reap(void);
bool cge_cgstate_read_locked(u64 cgid, struct cge_stat *out,
			     struct cge_stat *own);
u64 cge_root_cgid(void);
unsigned int cge_cgstate_nr(void);
unsigned int cge_cgstate_copy(struct cge_rec_copy *dst, unsigned int cap);
void cge_cgstate_usage(u64 *records, u64 *bytes);
bool cge_cgstate_v2_in_use(void);

#endif /* CGE_CGSTATE_H */
