/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tree.h - energy.tree: every cgroup's counters from one sample.
 */
#ifndef CGE_TREE_H
#define CGE_TREE_H

#include <linux/types.h>
#include <linux/cgroup.h>

struct seq_file;

size_t cge_tree_size_hint(struct cgroup *root);
int cge_tree_show(struct seq_file *m, struct cgroup *root, bool host);

#endif /* CGE_TREE_H */
