/* SPDX-License-Identifier: GPL-2.0 */
/*
 * split.h - the attribution rule: how one interval's energy of one package
 * is divided between idle and the consumers (cgroups) that ran in it.
 *
 * Pure integer arithmetic: no locking, no allocation, no hardware access.
 */
#ifndef CGE_SPLIT_H
#define CGE_SPLIT_H

#include <linux/types.h>

u64 cge_mul_div_u64(u64 a, u64 b, u64 c);
u64 cge_split(u64 energy, u64 idle_ns, u64 busy_ns, const u64 *weight,
	      u64 *share, unsigned int n);

/* Kinds of CPU time split beside the tasks (interrupts, softirqs, steal). */
#define CGE_SPLIT_MAX_KINDS	4

u64 cge_split_kinds(u64 energy, u64 idle_ns, const u64 *kind_ns,
		    u64 *kind_share, unsigned int nk, u64 busy_ns,
		    const u64 *weight, u64 *share, unsigned int n);

#endif /* CGE_SPLIT_H */
