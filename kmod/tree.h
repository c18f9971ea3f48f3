/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tree.h - energy.tree: every cgroup's counters from one sample.
 */
#ifndef CGE_TREE_H
#define CGE_TREE_H

#include <linux/types.h>
#include <linux/cgroup.h>
#include <linux/kernfs.h>

#include "cgstate.h"

struct seq_file;

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

size_t cge_tree_size_hint(struct cgroup *root);
int cge_tree_show(struct seq_file *m, struct cgroup *root, bool host);

#endif /* CGE_TREE_H */
