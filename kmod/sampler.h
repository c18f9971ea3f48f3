/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sampler.h - the per-interval sample: drain the per-CPU caches, read each
 * package's energy once, split it, fold it into the cgroup records.
 */
#ifndef CGE_SAMPLER_H
#define CGE_SAMPLER_H

#include <linux/types.h>

struct cge_source;

struct cge_sampler_health {
	u64 samples;
	u64 overruns;		/* due times a late sampler missed */
	u64 last_sample_ns;	/* CLOCK_MONOTONIC */
	u64 alloc_failures;
	/*
	 * CPU time drains charged running tasks beyond what the tasks then
	 * turned out to have run (probe.c's over_ns, counted at the task's
	 * next switch), and what of it was taken back from the later charges
	 * of the records that owed it. Summed over all cgroups, their
	 * difference is what is owed still, with the debts of records freed
	 * since, which are never taken back.
	 */
	u64 overcharge_ns;
	u64 overcharge_repaid_ns;
	/*
	 * The unowned policy the samples apply (read once per sample, so a
	 * write applies from the next), the first sample that applied it,
	 * and how many times it changed after the first.
	 */
	u64 unowned_since;
	u64 unowned_changes;
	int unowned_applied;
	/* partitions that own CPUs, in the last sample (unowned=cpuset) */
	unsigned int unowned_partitions;
};

/* Under cge_lock. */
extern struct cge_sampler_health cge_sampler_health;

int cge_sampler_init(void);
void cge_sampler_exit(void);
const struct cge_source *cge_sampler_source(void);
unsigned int cge_sampler_packages(void);
u64 cge_sampler_interval_end(void);
int cge_sample_cpu(void);

#endif /* CGE_SAMPLER_H */
