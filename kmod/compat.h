/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.h - every kernel difference the module depends on.
 *
 * The module calls the mainline API by its current names. Where a kernel
 * lacks one, this file defines it under that name, from the older
 * interface, so that the rest of the module reads as upstream code and
 * dropping this file is the whole upstream diff. Only what mainline has no
 * single call for is a cge_ helper here.
 *
 * Decided by the feature probes of kmod/probes.mk (CGE_HAVE_*: what the
 * kernel's headers provide, so backports are followed), and by
 * LINUX_VERSION_CODE only where no probe can tell. No other file tests
 * either. A name is defined only where its probe says it is missing, so it
 * never clashes with the kernel's own. Each entry names the release that
 * changed the interface.
 */
#ifndef CGE_COMPAT_H
#define CGE_COMPAT_H

#include <linux/version.h>
#include <linux/cgroup.h>
#include <linux/kernfs.h>
#include <linux/fs.h>
#include <linux/err.h>
#include <linux/sched.h>
#include <linux/sched/isolation.h>
#include <linux/dcache.h>
#include <linux/rcupdate.h>
#include <linux/workqueue.h>
#include <asm/msr.h>
#include <asm/processor.h>
#include <asm/topology.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 10, 0)
#error "cgroup-energy needs Linux 5.10 or later (the oldest kernel it is tested on)"
#endif

#ifndef CGE_HAVE_SIMPLE_INODE_INIT_TS
#error "CGE_HAVE_* undefined: build through the top-level Kbuild (kmod/probes.mk)"
#endif

/*
 * Backports only make a probe true earlier. Two misses would still build,
 * and wrongly (rcu_dereference() dropped; a workqueue's name to be removed):
 * past the release that made them certain, a miss is the probe's fault.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 15, 0) && !CGE_HAVE_KN_NAME_RCU
#error "kmod/probes.mk: KN_NAME_RCU missed on a kernel that has it"
#endif
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0) && !CGE_HAVE_SYSTEM_PERCPU_WQ
#error "kmod/probes.mk: SYSTEM_PERCPU_WQ missed on a kernel that has it"
#endif

/* sched_switch gained prev_state in 5.18. */
#if CGE_HAVE_SCHED_SWITCH_PREV_STATE
#define CGE_SCHED_SWITCH_ARGS \
	void *data, bool preempt, struct task_struct *prev, \
	struct task_struct *next, unsigned int prev_state
#else
#define CGE_SCHED_SWITCH_ARGS \
	void *data, bool preempt, struct task_struct *prev, \
	struct task_struct *next
#endif

/**
 * cge_cgroup_get_from_id() - a default-hierarchy cgroup by id
 * @id: the cgroup's id
 * @parent: its parent, if known, else NULL
 *
 * cgroup_get_from_id() with one meaning on every kernel: it returns ERR_PTR
 * on failure since 6.1 and NULL before, and 5.10 exports no lookup by id at
 * all. There the children of @parent are searched under RCU, or without a
 * parent the whole hierarchy: O(children), or O(cgroups). Like
 * cgroup_get_from_id(), it does not return a removed cgroup.
 *
 * Return: the cgroup with a reference held, or NULL.
 */
static inline struct cgroup *cge_cgroup_get_from_id(u64 id,
						    struct cgroup *parent)
{
#if CGE_HAVE_CGROUP_GET_FROM_ID
	struct cgroup *cgrp = cgroup_get_from_id(id);

	return IS_ERR_OR_NULL(cgrp) ? NULL : cgrp;
#else
	struct cgroup_subsys_state *pos;
	struct cgroup *found = NULL;

	rcu_read_lock();
	if (parent) {
		list_for_each_entry_rcu(pos, &parent->self.children, sibling)
			if (cgroup_id(pos->cgroup) == id)
				break;
		if (list_entry_is_head(pos, &parent->self.children, sibling))
			pos = NULL;
	} else {
		css_for_each_descendant_pre(pos, &cgrp_dfl_root.cgrp.self)
			if (cgroup_id(pos->cgroup) == id)
				break;
	}
	/* as cgroup_get_from_id(): not a removed one */
	if (pos && (READ_ONCE(pos->flags) & CSS_ONLINE) &&
	    cgroup_tryget(pos->cgroup))
		found = pos->cgroup;
	rcu_read_unlock();
	return found;
#endif
}

/*
 * Whether the CPU has AMD's RAPL interface, CPUID 0x80000007 EDX bit 14.
 * Kernels that name it (not 5.10) set X86_FEATURE_RAPL from that bit; the
 * others keep the leaf in x86_power, so the bit is read there. A helper
 * rather than X86_FEATURE_RAPL itself: on 5.10 no capability word holds it.
 */
static inline bool cge_cpu_has_amd_rapl(void)
{
#if CGE_HAVE_X86_FEATURE_RAPL
	return boot_cpu_has(X86_FEATURE_RAPL);
#else
	return boot_cpu_data.x86_power & BIT(14);
#endif
}

/*
 * The name of kernfs node @kn. kernfs_node->name is a plain pointer before
 * 6.15, RCU-protected since; the accessor kernfs uses, kernfs_rcu_name(),
 * is private to fs/kernfs/, so the module has its own. Callers hold
 * rcu_read_lock(). cgroup v2 directories are never renamed (no .rename in
 * its kernfs syscall ops), so the name a cgroup's node has lives as long as
 * the node.
 */
static inline const char *cge_kn_name(struct kernfs_node *kn)
{
#if CGE_HAVE_KN_NAME_RCU
	return rcu_dereference(kn->name);
#else
	return kn->name;
#endif
}

/*
 * simple_inode_init_ts() sets a new inode's three timestamps since 6.7,
 * which made atime and mtime private; before, they are fields, and ctime is
 * set with inode_set_ctime_current() where it exists (6.6 made i_ctime
 * private; stable kernels have the helper too, as Debian's 6.1), or is a
 * field.
 */
#if !CGE_HAVE_SIMPLE_INODE_INIT_TS
static inline struct timespec64 simple_inode_init_ts(struct inode *inode)
{
#if CGE_HAVE_INODE_SET_CTIME_CURRENT
	struct timespec64 ts = inode_set_ctime_current(inode);
#else
	struct timespec64 ts = current_time(inode);

	inode->i_ctime = ts;
#endif
	inode->i_atime = ts;
	inode->i_mtime = ts;
	return ts;
}
#endif

/* dentry_operations.d_revalidate gained the parent inode and name in 6.14. */
#if CGE_HAVE_D_REVALIDATE_DIR
#define CGE_D_REVALIDATE_ARGS \
	struct inode *cge_dir, const struct qstr *cge_name, \
	struct dentry *dentry, unsigned int flags
#else
#define CGE_D_REVALIDATE_ARGS struct dentry *dentry, unsigned int flags
#endif

/* super_block.s_d_op is private since 6.17: set it with set_default_d_op(). */
#if !CGE_HAVE_SET_DEFAULT_D_OP
static inline void set_default_d_op(struct super_block *s,
				    const struct dentry_operations *ops)
{
	s->s_d_op = ops;
}
#endif

/* generic_delete_inode() was renamed inode_just_drop() in 6.18. */
#if !CGE_HAVE_INODE_JUST_DROP
#define inode_just_drop generic_delete_inode
#endif

/* rdmsrl_safe() was renamed rdmsrq_safe() in 6.16. */
#if !CGE_HAVE_RDMSRQ
#define rdmsrq_safe rdmsrl_safe
#endif

/*
 * topology_max_die_per_package() was renamed
 * topology_max_dies_per_package() in 6.9, and its type became unsigned.
 */
#if !CGE_HAVE_MAX_DIES
#define topology_max_dies_per_package() \
	((unsigned int)topology_max_die_per_package())
#endif

/*
 * system_percpu_wq, the per-CPU system workqueue, replaced system_wq in 6.17
 * (128ea9f6ccfb; some stable kernels, as Debian's 6.12, have both names).
 */
#if !CGE_HAVE_SYSTEM_PERCPU_WQ
#define system_percpu_wq system_wq
#endif

/*
 * cpu_is_isolated() (6.3, and Debian's 6.1): whether the operator took @cpu
 * from the kernel's housekeeping, by isolcpus=, nohz_full= or (where the
 * kernel's own says so) an isolated cpuset partition. Before it, the two
 * housekeeping types it tests, enum hk_flags before 5.19. The masks of 7.x
 * are replaced at run time: callers hold rcu_read_lock().
 */
#if !CGE_HAVE_CPU_IS_ISOLATED
#if !CGE_HAVE_HK_TYPE
#define HK_TYPE_TIMER HK_FLAG_TIMER
#define HK_TYPE_DOMAIN HK_FLAG_DOMAIN
#endif
static inline bool cpu_is_isolated(int cpu)
{
	return !housekeeping_cpu(cpu, HK_TYPE_DOMAIN) ||
	       !housekeeping_cpu(cpu, HK_TYPE_TIMER);
}
#endif

/*
 * The taint of a kernel that ran test code (the RAPL emulator of test
 * builds): TAINT_TEST where it exists (not in 5.10), else TAINT_USER, the
 * taint a user asks for. A name of its own, not TAINT_TEST defined on 5.10:
 * there the kernel is tainted with another flag than the name says.
 */
#if CGE_HAVE_TAINT_TEST
#define CGE_TAINT_EMU TAINT_TEST
#else
#define CGE_TAINT_EMU TAINT_USER
#endif

/*
 * task_is_running() came in 5.14, which renamed task_struct.state to
 * __state; before, the state is read from the old field.
 */
#if !CGE_HAVE_TASK_IS_RUNNING
#define task_is_running(task)	(READ_ONCE((task)->state) == TASK_RUNNING)
#endif

/*
 * @cpu's task clock (the runqueue's clock_task, se.exec_start's clock) at
 * @now, @cpu's sched_clock, in @task_now; false if it cannot be known here.
 * The task clock is private to the scheduler. It is @now itself on kernels
 * that take no interrupt time (CONFIG_IRQ_TIME_ACCOUNTING) and no steal
 * time (CONFIG_PARAVIRT_TIME_ACCOUNTING) out of it, as Debian's (none
 * builds either). Where one is built in, what it took out is in no counter
 * another CPU can read exactly (kernel_cpustat's lags, and x86 stops taking
 * interrupt time out when the TSC is unstable): false. A config decision:
 * no header tells it better.
 */
static inline bool cge_clock_task(unsigned int cpu, u64 now, u64 *task_now)
{
	if (IS_ENABLED(CONFIG_IRQ_TIME_ACCOUNTING) ||
	    IS_ENABLED(CONFIG_PARAVIRT_TIME_ACCOUNTING))
		return false;
	*task_now = now;
	return true;
}

/*
 * Whether @cgrp has tasks of its own (not only its descendants'): a
 * snapshot, read without css_set_lock. cgroup.h has the accessor on 7.x;
 * before, the count is read from the cgroup, as the accessor did there.
 */
#if !CGE_HAVE_CGROUP_HAS_TASKS
static inline bool cgroup_has_tasks(struct cgroup *cgrp)
{
	return READ_ONCE(cgrp->nr_populated_csets);
}
#endif

/*
 * @cgrp's css of the cpu controller, if the controller is enabled on it
 * (its parent's subtree_control); NULL without, while it is being turned
 * off (dying: its tasks are in the parent's group already), or on a kernel
 * built without it. rcu_read_lock() held.
 */
static inline struct cgroup_subsys_state *cge_cpu_css(struct cgroup *cgrp)
{
#ifdef CONFIG_CGROUP_SCHED
	struct cgroup_subsys_state *css;

	css = rcu_dereference(cgrp->subsys[cpu_cgrp_id]);
	if (css && !(READ_ONCE(css->flags) & CSS_DYING))
		return css;
#endif
	return NULL;
}

/*
 * @cgrp's css of the cpuset controller, if the controller is enabled on it:
 * where its cpuset.* files are. NULL on a kernel built without it.
 * rcu_read_lock() held.
 */
static inline struct cgroup_subsys_state *cge_cpuset_css(struct cgroup *cgrp)
{
#if IS_ENABLED(CONFIG_CPUSETS)
	return rcu_dereference(cgrp->subsys[cpuset_cgrp_id]);
#else
	return NULL;
#endif
}

/* Before 5.12, file_open_root() took the root's dentry and mount. */
#if !CGE_HAVE_FILE_OPEN_ROOT_PATH
static inline struct file *cge_file_open_root(const struct path *root,
					      const char *name, int flags,
					      umode_t mode)
{
	return file_open_root(root->dentry, root->mnt, name, flags, mode);
}

#define file_open_root cge_file_open_root
#endif

#endif /* CGE_COMPAT_H */
