/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unowned.h - the energy no task drew, shared between the cgroups by the
 * declared policy (the unowned parameter).
 */
#ifndef CGE_UNOWNED_H
#define CGE_UNOWNED_H

#include <linux/types.h>

/* What energy.stat's *_share_uj keys carry: idle, and interrupts & co. */
enum cge_unowned_kind {
	CGE_UN_IDLE,
	CGE_UN_SYS,		/* interrupts, softirqs and steal */
	CGE_UN_NR,
};

enum cge_unowned_policy {
	CGE_UNOWNED_NONE,
	CGE_UNOWNED_WEIGHT,
	CGE_UNOWNED_CPUSET,
};

unsigned int cge_unowned_begin(int policy);
void cge_unowned_cpu(unsigned int cpu, u64 idle_ns, u64 sys_ns);
void cge_unowned_pkg(const u64 *uj, u64 other_ns);
void cge_unowned_share(int policy, const u64 *uj, u64 now, bool start);

#endif /* CGE_UNOWNED_H */
