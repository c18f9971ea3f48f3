/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cpuset.h - which cgroup owns each CPU through a cpuset partition, for
 * unowned=cpuset.
 */
#ifndef CGE_CPUSET_H
#define CGE_CPUSET_H

#include <linux/types.h>
#include <linux/cgroup.h>

#include "unowned.h"

/**
 * struct cge_owners - the CPUs' owners, as the last scan found them
 * @nr: owners: [0] the root (the CPUs no partition owns), [1, nr) the
 *	valid partitions that own CPUs
 * @cgrp: each owner's cgroup, a reference held; [0] NULL
 * @of_cpu: each CPU id's owner
 * @ns: sampler: each owner's CPUs' idle and interrupt time, this package
 * @uj: sampler: each owner's part of the unowned energy, this sample
 */
struct cge_owners {
	unsigned int nr;
	struct cgroup **cgrp;
	u16 *of_cpu;
	u64 (*ns)[CGE_UN_NR];
	u64 (*uj)[CGE_UN_NR];
};

/*
 * The table the sampler uses: NULL before the first scan; dropped by the
 * work's next run (within a second) once the policy is no longer cpuset.
 */
extern struct cge_owners *cge_owners;

int cge_cpuset_pin(void);
void cge_cpuset_unpin(void);
int cge_cpuset_start(bool want);
void cge_cpuset_stop(void);
u64 cge_cpuset_scans(void);

#endif /* CGE_CPUSET_H */
