/* SPDX-License-Identifier: GPL-2.0 */
/*
 * probe.h - the sched_switch probe and its per-CPU charge cache.
 *
 * The probe charges the time since the last switch on this CPU to the cgroup
 * of the task that ran (or to idle), into a small per-CPU cache keyed by
 * cgroup id. The sampler drains the caches every interval, from its own CPU.
 */
#ifndef CGE_PROBE_H
#define CGE_PROBE_H

#include <linux/types.h>

#include "want.h"

/* Distinct cgroups one CPU can hold per interval before the overflow path. */
#define CGE_SLOTS	32

struct cge_slot {
	u64 cgid;		/* cgroup id, never a reference */
	u64 parent_cgid;	/* its parent's id, 0 for the root */
	/*
	 * its nearest ancestor with a record when the slot was made, if it
	 * had none itself; else 0 (cge_slot_anc())
	 */
	u64 anc_cgid;
	u64 ns;			/* CPU time charged this interval */
	u64 bg_ns;		/* the part at background QoS */
	u32 wakeups;		/* idle -> task switches this interval */
	u32 pad;
};

struct task_struct;

/*
 * What one CPU ran since the previous drain. @over_ns: CPU time an earlier
 * drain charged to cgroup @over_cgid (child of @over_parent) for a running
 * task's open slice beyond what the task then turned out to have run; the
 * sampler takes it back from that cgroup's later charges.
 */
struct cge_cpu_sample {
	u64 idle_ns;
	u64 over_ns;
	u64 over_cgid;
	u64 over_parent;
	unsigned int nr;
	unsigned int nr_want;
	struct cge_slot slot[CGE_SLOTS];
	struct cge_want want[CGE_WANTS];
};

int cge_probe_alloc(void);
void cge_probe_free(void);
int cge_probe_init(void);
void cge_probe_exit(void);
struct task_struct *cge_cpu_drain(unsigned int cpu, struct cge_cpu_sample *out,
				  bool *ran);
void cge_probe_counters(u64 *overflows, u64 *quiet_drains, u64 *takebacks);
void cge_probe_selftime(u64 *timed, u64 *ns);

#endif /* CGE_PROBE_H */
