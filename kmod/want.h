/* SPDX-License-Identifier: GPL-2.0 */
/*
 * want.h - a CPU's requests for records, shared fairly between subtrees.
 *
 * Pure logic: no locking, no allocation.
 */
#ifndef CGE_WANT_H
#define CGE_WANT_H

#include <linux/types.h>

/* Cgroups the overflow path met without a record: the sampler makes them. */
#define CGE_WANTS	16

/* Levels of a cgroup's ancestry whose subtrees share the requests. */
#define CGE_WANT_LEVELS	4

/*
 * A request: the cgroup, its parent, and the low 32 bits of the ids of its
 * ancestors at levels 1 to CGE_WANT_LEVELS (the cgroup itself at its own
 * level; 0 below it). Two subtrees whose ids share those bits count as one:
 * fairness only, never what is charged.
 */
struct cge_want {
	u64 cgid;
	u64 parent_cgid;
	u32 tag[CGE_WANT_LEVELS];
};

int cge_want_victim(const struct cge_want *w, unsigned int n, const u32 *tag);

#endif /* CGE_WANT_H */
