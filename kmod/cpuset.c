// SPDX-License-Identifier: GPL-2.0
/*
 * cpuset.c - which cgroup owns each CPU through a cpuset partition, for
 * unowned=cpuset (unowned.c).
 *
 * No kernel interface gives a module a partition's CPUs: cpuset keeps its
 * state to itself. Its files say it, so a scan reads them as a reader of
 * /sys/fs/cgroup would: cpuset.cpus.partition ("root" or "isolated" is a
 * valid partition; "member", or anything "invalid", is not) and
 * cpuset.cpus.effective (the CPUs the partition owns: its sub-partitions'
 * are not in it). The scan goes down from the root only into the valid
 * partitions (a local partition's parent is a partition root) and into the
 * cgroups with exclusive CPUs (cpuset.cpus.exclusive: the ancestors of a
 * remote partition), so it reads a few files, not a few per cgroup.
 *
 * A scan sleeps (path walks, allocations): it runs in its own work, every
 * second while the policy is cpuset, on the sampler's housekeeping CPU,
 * and in the write that sets the policy, never in a sample; it hands the
 * sampler its table under cge_lock. A partition's state and its CPUs are
 * two reads: one that turns invalid between them keeps its CPUs until the
 * next scan. The files are opened below the mount that /sys/fs/cgroup was
 * when the policy was set, looked up in the writer's (or modprobe's)
 * context: a worker's root directory is not the system's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/cgroup.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/mutex.h>
#include <linux/namei.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "compat.h"
#include "cgstate.h"
#include "cpuset.h"
#include "sampler.h"

/* How often the partitions are read again: a change of them has no event. */
#define CGE_CPUSET_SCAN_MS	1000
/* Where the cgroup2 hierarchy is looked up when the policy is set. */
#define CGE_CPUSET_CGROOT	"/sys/fs/cgroup"

struct cge_owners *cge_owners;

/*
 * The pinned mount, whether the work may run, whether the module is going
 * (a parameter write can come after its exit), the scans:
 * cge_cpuset_mutex.
 */
static DEFINE_MUTEX(cge_cpuset_mutex);
static struct path cge_cg_root;
static bool cge_cg_pinned;
static bool cge_cpuset_live;
static bool cge_cpuset_dead;
static u64 cge_cpuset_nscans;

static void cge_cpuset_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(cge_cpuset_work, cge_cpuset_fn);

/*
 * A scan: the cgroups still to go down into, the children of the one being
 * visited and the owners found so far (all with references held), each
 * CPU's owner, buffers for a path and a file's text, whether the kernel
 * has cpuset.cpus.exclusive (6.7), the first error (the scan is then
 * dropped, not published short of a subtree).
 */
struct cge_scan {
	struct cgroup **q, **kids, **own;
	unsigned int nq, qcap, kcap, nown;
	u16 *of_cpu;
	cpumask_var_t mask;
	char *path, *line;
	bool no_exclusive;
	int err;
};

static void cge_owners_free(struct cge_owners *t)
{
	unsigned int i;

	if (!t)
		return;
	for (i = 1; i < t->nr; i++)
		cgroup_put(t->cgrp[i]);
	kfree(t->cgrp);
	kfree(t->of_cpu);
	kfree(t->ns);
	kfree(t->uj);
	kfree(t);
}

/*
 * Read the file @name of @cgrp into s->line: below the pinned mount, at the
 * cgroup's path from the hierarchy's root. Return: its length, or a
 * negative error (-ENOENT: no such file, as where cpuset is not enabled).
 */
static int cge_cpuset_read(struct cge_scan *s, struct cgroup *cgrp,
			   const char *name)
{
	struct file *f;
	loff_t pos = 0;
	ssize_t n;
	int len;

	len = cgroup_path(cgrp, s->path, PATH_MAX);
	if (len < 0 || len + strlen(name) + 2 > PATH_MAX)
		return -ENAMETOOLONG;
	snprintf(s->path + len, PATH_MAX - len, "/%s", name);
	/* relative to the mount's root: the path less its leading '/' */
	f = file_open_root(&cge_cg_root, s->path + 1, O_RDONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_read(f, s->line, PAGE_SIZE, &pos);
	fput(f);
	if (n < 0)
		return n;
	if (n == PAGE_SIZE)
		return -EFBIG;
	s->line[n] = '\0';
	return n;
}

/*
 * Take references to @parent's online children that have the cpuset
 * controller into s->kids. Return: how many (0 and s->err on no memory).
 */
static unsigned int cge_cpuset_kids(struct cge_scan *s, struct cgroup *parent)
{
	struct cgroup_subsys_state *pos;
	struct cgroup **kids;
	unsigned int n, i;

	for (;;) {
		n = 0;
		rcu_read_lock();
		list_for_each_entry_rcu(pos, &parent->self.children, sibling) {
			if (!(READ_ONCE(pos->flags) & CSS_ONLINE) ||
			    !cge_cpuset_css(pos->cgroup))
				continue;
			if (n >= s->kcap)
				n++;	/* counted, to make room */
			else if (cgroup_tryget(pos->cgroup))
				s->kids[n++] = pos->cgroup;
		}
		rcu_read_unlock();
		if (n <= s->kcap)
			return n;
		for (i = 0; i < s->kcap; i++)
			cgroup_put(s->kids[i]);
		kids = kmalloc_array(n + 16, sizeof(*kids), GFP_KERNEL);
		if (!kids) {
			s->err = -ENOMEM;
			return 0;
		}
		kfree(s->kids);
		s->kids = kids;
		s->kcap = n + 16;
	}
}

/* Queue @cgrp, whose reference the queue takes over, to go down into. */
static void cge_cpuset_push(struct cge_scan *s, struct cgroup *cgrp)
{
	struct cgroup **q;

	if (s->nq == s->qcap) {
		q = krealloc(s->q, array_size(s->qcap * 2 + 16, sizeof(*q)),
			     GFP_KERNEL);
		if (!q) {
			s->err = -ENOMEM;
			cgroup_put(cgrp);
			return;
		}
		s->q = q;
		s->qcap = s->qcap * 2 + 16;
	}
	s->q[s->nq++] = cgrp;
}

/*
 * Visit @cgrp (its reference is given): a valid partition owns the CPUs of
 * its effective list that no partition seen before claimed (they are
 * disjoint, but a scan is not one instant: so each owner has a CPU of its
 * own), and is gone down into, as a cgroup with exclusive CPUs is; any
 * other is not. A file that cannot be read (the cgroup was removed
 * meanwhile) makes it "not a partition".
 */
static void cge_cpuset_visit(struct cge_scan *s, struct cgroup *cgrp)
{
	unsigned int cpu;
	bool owns = false;
	int ret;

	if (cge_cpuset_read(s, cgrp, "cpuset.cpus.partition") > 0 &&
	    (sysfs_streq(s->line, "root") || sysfs_streq(s->line, "isolated"))) {
		if (cge_cpuset_read(s, cgrp, "cpuset.cpus.effective") >= 0 &&
		    !cpulist_parse(strim(s->line), s->mask)) {
			for_each_cpu(cpu, s->mask) {
				if (cpu >= nr_cpu_ids)
					break;
				if (s->of_cpu[cpu])
					continue;
				s->of_cpu[cpu] = s->nown;
				owns = true;
			}
		}
		/* each owner has a CPU of its own: at most nr_cpu_ids of them */
		if (owns && !WARN_ON_ONCE(s->nown > nr_cpu_ids)) {
			cgroup_get(cgrp);
			s->own[s->nown++] = cgrp;
		}
		cge_cpuset_push(s, cgrp);
		return;
	}
	/* 6.7: a remote partition's ancestors below the root all have some */
	ret = s->no_exclusive ? -ENOENT :
	      cge_cpuset_read(s, cgrp, "cpuset.cpus.exclusive");
	if (ret > 0 && *strim(s->line)) {
		cge_cpuset_push(s, cgrp);
		return;
	}
	if (ret == -ENOENT)
		s->no_exclusive = true;
	cgroup_put(cgrp);
}

static void cge_scan_free(struct cge_scan *s)
{
	unsigned int i;

	for (i = 1; i < s->nown; i++)
		cgroup_put(s->own[i]);
	kfree(s->own);
	kfree(s->of_cpu);
	kfree(s->q);
	kfree(s->kids);
	free_cpumask_var(s->mask);
	kfree(s->path);
	kfree(s->line);
	kfree(s);
}

/*
 * Read the partitions, breadth first from the root (whose CPUs are those
 * no partition owns). Return: the new table, or an ERR_PTR().
 */
static struct cge_owners *cge_cpuset_scan(void)
{
	struct cgroup *cgrp = &cgrp_dfl_root.cgrp;
	struct cge_owners *t;
	unsigned int i, n, head = 0;
	struct cge_scan *s;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return ERR_PTR(-ENOMEM);
	s->own = kcalloc(nr_cpu_ids + 1, sizeof(*s->own), GFP_KERNEL);
	s->of_cpu = kcalloc(nr_cpu_ids, sizeof(*s->of_cpu), GFP_KERNEL);
	s->path = kmalloc(PATH_MAX, GFP_KERNEL);
	s->line = kmalloc(PAGE_SIZE + 1, GFP_KERNEL);
	if (!s->own || !s->of_cpu || !s->path || !s->line ||
	    !zalloc_cpumask_var(&s->mask, GFP_KERNEL)) {
		cge_scan_free(s);
		return ERR_PTR(-ENOMEM);
	}
	s->nown = 1;
	for (;;) {
		n = cge_cpuset_kids(s, cgrp);
		if (cgrp != &cgrp_dfl_root.cgrp)
			cgroup_put(cgrp);
		for (i = 0; i < n; i++)
			cge_cpuset_visit(s, s->kids[i]);
		if (head == s->nq || s->err)
			break;
		cgrp = s->q[head++];
	}
	if (s->err) {
		int err = s->err;

		while (head < s->nq)
			cgroup_put(s->q[head++]);
		cge_scan_free(s);
		return ERR_PTR(err);
	}
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (t) {
		t->ns = kcalloc(s->nown, sizeof(*t->ns), GFP_KERNEL);
		t->uj = kcalloc(s->nown, sizeof(*t->uj), GFP_KERNEL);
	}
	if (!t || !t->ns || !t->uj) {
		cge_owners_free(t);
		cge_scan_free(s);
		return ERR_PTR(-ENOMEM);
	}
	t->nr = s->nown;
	t->cgrp = s->own;
	t->of_cpu = s->of_cpu;
	s->own = NULL;
	s->of_cpu = NULL;
	s->nown = 0;
	cge_scan_free(s);
	return t;
}

/*
 * Scan and hand the sampler the table while the mount is pinned, then
 * again in a second; else drop the table. cge_cpuset_mutex held.
 */
static void cge_cpuset_update(void)
{
	struct cge_owners *t = NULL;

	if (cge_cg_pinned) {
		t = cge_cpuset_scan();
		if (IS_ERR(t))
			goto again;	/* keep the last table */
		WRITE_ONCE(cge_cpuset_nscans, cge_cpuset_nscans + 1);
	}
	mutex_lock(&cge_lock);
	swap(cge_owners, t);
	mutex_unlock(&cge_lock);
	cge_owners_free(t);
again:
	if (cge_cg_pinned && cge_cpuset_live) {
		/* not unbound: 6.1's may run it on an isolated partition's CPU */
		cpus_read_lock();
		queue_delayed_work_on(cge_sample_cpu(), system_percpu_wq,
				      &cge_cpuset_work,
				      msecs_to_jiffies(CGE_CPUSET_SCAN_MS));
		cpus_read_unlock();
	}
}

static void cge_cpuset_fn(struct work_struct *work)
{
	mutex_lock(&cge_cpuset_mutex);
	cge_cpuset_update();
	mutex_unlock(&cge_cpuset_mutex);
}

/*
 * Pin /sys/fs/cgroup as the current process sees it, and once the module
 * runs read the partitions at once. cge_cpuset_mutex held.
 */
static int __cge_cpuset_pin(void)
{
	struct path p;
	int ret;

	if (!IS_ENABLED(CONFIG_CPUSETS))
		return -EOPNOTSUPP;
	if (cge_cpuset_dead)
		return -ENODEV;
	ret = kern_path(CGE_CPUSET_CGROOT, LOOKUP_FOLLOW | LOOKUP_DIRECTORY, &p);
	if (ret)
		return ret;
	if (p.dentry->d_sb->s_magic != CGROUP2_SUPER_MAGIC ||
	    p.dentry != p.mnt->mnt_root ||
	    d_inode(p.dentry)->i_private != cgrp_dfl_root.cgrp.kn) {
		path_put(&p);
		return -ENOTDIR;
	}
	if (cge_cg_pinned)
		path_put(&cge_cg_root);
	cge_cg_root = p;
	cge_cg_pinned = true;
	if (cge_cpuset_live) {
		cancel_delayed_work(&cge_cpuset_work);
		cge_cpuset_update();
	}
	return 0;
}

/**
 * cge_cpuset_pin() - look up the cgroup2 hierarchy for unowned=cpuset
 *
 * In the context of the write that sets the policy (or of modprobe):
 * /sys/fs/cgroup as that process sees it must be the root of the cgroup2
 * hierarchy (not a cgroup namespace's, not a v1 hierarchy). The mount is
 * held until the policy changes; once the module runs, the partitions are
 * read before this returns, so the next sample finds them.
 *
 * Return: 0; -ENOTDIR where /sys/fs/cgroup is not that, or kern_path()'s
 * error; -EOPNOTSUPP on a kernel without cpusets; -ENODEV once the module
 * is going.
 */
int cge_cpuset_pin(void)
{
	int ret;

	mutex_lock(&cge_cpuset_mutex);
	ret = __cge_cpuset_pin();
	mutex_unlock(&cge_cpuset_mutex);
	return ret;
}

/* Let the mount go: the policy is no longer cpuset. */
void cge_cpuset_unpin(void)
{
	mutex_lock(&cge_cpuset_mutex);
	if (cge_cg_pinned)
		path_put(&cge_cg_root);
	cge_cg_pinned = false;
	mutex_unlock(&cge_cpuset_mutex);
}

/* The scans so far, for energy.info. */
u64 cge_cpuset_scans(void)
{
	return READ_ONCE(cge_cpuset_nscans);
}

/**
 * cge_cpuset_start() - at load, before the sampler
 * @want: the policy given at load is cpuset: pin (in modprobe's context)
 *	and read the partitions now
 *
 * Return: 0, or cge_cpuset_pin()'s error.
 */
int cge_cpuset_start(bool want)
{
	int ret = 0;

	mutex_lock(&cge_cpuset_mutex);
	cge_cpuset_live = true;
	if (want)
		ret = __cge_cpuset_pin();
	mutex_unlock(&cge_cpuset_mutex);
	return ret;
}

/* At unload (or a failed load), after the sampler stopped. */
void cge_cpuset_stop(void)
{
	mutex_lock(&cge_cpuset_mutex);
	cge_cpuset_live = false;
	cge_cpuset_dead = true;
	if (cge_cg_pinned)
		path_put(&cge_cg_root);
	cge_cg_pinned = false;
	mutex_unlock(&cge_cpuset_mutex);
	cancel_delayed_work_sync(&cge_cpuset_work);
	cge_owners_free(cge_owners);
	cge_owners = NULL;
}
