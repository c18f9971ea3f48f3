/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - every kernel-version difference the module depends on.
 *
 * No other file tests LINUX_VERSION_CODE. Each helper names the kernel
 * release that changed the interface.
 */
#ifndef CGE_COMPAT_H
#define CGE_COMPAT_H

#include <linux/version.h>
#include <linux/cgroup.h>
#include <linux/kernfs.h>
#include <linux/fs.h>
#include <linux/err.h>
#include <linux/sched.h>

/* sched_switch gained prev_state in 5.18. */
#define CGE_SCHED_SWITCH_ARGS \
	void *data, bool preempt, struct task_struct *prev, \
	struct task_struct *next, unsigned int prev_state

/* cgroup_get_from_id() returns ERR_PTR on failure since 6.1, NULL before. */
static inline struct cgroup *cge_cgroup_get_from_id(u64 id)
{
	struct cgroup *cgrp = cgroup_get_from_id(id);

	return IS_ERR_OR_NULL(cgrp) ? NULL : cgrp;
}

/*
 * kernfs_node->name is a plain pointer in 6.1 and 6.12; later kernels make
 * it RCU-protected. Callers hold rcu_read_lock().
 */
static inline const char *cge_kn_name(struct kernfs_node *kn)
{
	return kn->name;
}

/* Inode timestamps: direct fields before 6.6, accessors since 6.7. */
static inline void cge_inode_touch(struct inode *inode)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
	simple_inode_init_ts(inode);
#else
	struct timespec64 now = current_time(inode);

	inode->i_atime = now;
	inode->i_mtime = now;
	inode->i_ctime = now;
#endif
}

/* dentry_operations.d_revalidate gained the parent inode and name in 6.14. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 14, 0)
#define CGE_D_REVALIDATE_ARGS \
	struct inode *cge_dir, const struct qstr *cge_name, \
	struct dentry *dentry, unsigned int flags
#else
#define CGE_D_REVALIDATE_ARGS struct dentry *dentry, unsigned int flags
#endif

#endif /* CGE_COMPAT_H */
