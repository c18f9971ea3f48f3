// SPDX-License-Identifier: GPL-2.0
/*
 * tree.c - energy.tree: every cgroup's counters from one sample, in one read.
 *
 * A read formats a snapshot of all records (snap.c) without taking
 * cge_lock. It walks the live cgroups below the mount's root, as readdir
 * shows them, and looks each one up in the snapshot: O(N log N) for N
 * cgroups, with a chance for others to run every CGE_TREE_BATCH lines.
 */
#include <linux/kernel.h>
#include <linux/cgroup.h>
#include <linux/kernfs.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/bsearch.h>
#include <linux/bitops.h>

#include "cgroup_energy.h"
#include "tree.h"
#include "snap.h"
#include "cgstate.h"
#include "sampler.h"
#include "source.h"
#include "power.h"
#include "stat.h"

/* Cgroups listed between two chances for others to run. */
#define CGE_TREE_BATCH		32

/* A record's place in the snapshot, by cgroup id. */
struct cge_tree_key {
	u64 cgid;
	unsigned int idx;
};

static int cge_tree_key_cmp(const void *a, const void *b)
{
	const struct cge_tree_key *x = a, *y = b;

	return x->cgid < y->cgid ? -1 : x->cgid > y->cgid;
}

/* What a reader works out from a snapshot before it lists the cgroups. */
struct cge_tree_read {
	struct cge_snap *s;
	struct cge_tree_key *keys;	/* by cgid */
	unsigned long domains;
	char *path;
};

/* The snapshot's records by cgroup id, for the walk to look them up. */
static void cge_tree_index(struct cge_tree_read *r)
{
	unsigned int i;

	for (i = 0; i < r->s->nr; i++) {
		r->keys[i].cgid = r->s->rec[i].cgid;
		r->keys[i].idx = i;
	}
	sort(r->keys, r->s->nr, sizeof(*r->keys), cge_tree_key_cmp, NULL);
}

static void cge_tree_header(struct seq_file *m, struct cge_tree_read *r,
			    bool host)
{
	const struct cge_root_stat *rs = &r->s->rs;
	unsigned int k;

	seq_printf(m, "sample %llu\n", r->s->sample);
	if (host) {
		seq_printf(m, CGE_KEY_TOTAL_UJ " %llu\n", rs->total_uj);
		seq_printf(m, CGE_KEY_IDLE_UJ " %llu\n", rs->idle_uj);
		seq_printf(m, CGE_KEY_IDLE_USEC " %llu\n", rs->idle.us);
		for (k = 0; k < CGE_SYS_NR; k++)
			seq_printf(m, "%s %llu\n%s %llu\n", cge_sys_keys[k][0],
				   rs->sys_uj[k], cge_sys_keys[k][1],
				   rs->sys[k].us);
	}
	seq_puts(m, "path");
	cge_stat_keys(m, "", r->domains);
	for (k = 0; k < CGE_POWER_NR; k++)
		seq_printf(m, " %s", cge_power_keys[k]);
	cge_share_keys_show(m, "");
	cge_stat_keys(m, CGE_OWN_PREFIX, r->domains);
	cge_share_keys_show(m, CGE_OWN_PREFIX);
	seq_putc(m, '\n');
}

/* One cgroup's line: its path, escaped as /proc/mounts does, and counters. */
static void cge_tree_line(struct seq_file *m, struct cge_tree_read *r,
			  struct cgroup *cgrp, struct cgroup *root)
{
	static const struct cge_stat zero;
	struct cge_tree_key key = { .cgid = cgroup_id(cgrp) }, *k;
	const struct cge_stat *st = &zero, *own = &zero;
	u64 mw[CGE_POWER_NR] = { 0 };
	unsigned int i;
	int len;

	/* a truncated path is PATH_MAX long, whichever way a kernel says so */
	len = kernfs_path_from_node(cgrp->kn, root->kn, r->path, PATH_MAX + 1);
	if (len < 0 || len >= PATH_MAX)
		return;		/* not listed: contract.md, energy.tree */
	k = bsearch(&key, r->keys, r->s->nr, sizeof(*k), cge_tree_key_cmp);
	if (k) {
		st = &r->s->rec[k->idx].st;
		own = &r->s->rec[k->idx].own;
		cge_power_read(&st->power, r->s->at_ns, mw);
	}
	seq_escape(m, r->path, " \t\n\\");
	cge_stat_values(m, &st->c, r->domains);
	for (i = 0; i < CGE_POWER_NR; i++)
		seq_printf(m, " %llu", mw[i]);
	cge_share_values(m, st);
	cge_stat_values(m, &own->c, r->domains);
	cge_share_values(m, own);
	seq_putc(m, '\n');
}

/**
 * cge_tree_size_hint() - a buffer size that likely holds @root's listing
 * @root: the mount's root cgroup
 *
 * A line per cgroup: a path and a value per column, most of them short
 * (seq_read() calls again with a larger buffer when it is too small).
 *
 * Return: bytes.
 */
size_t cge_tree_size_hint(struct cgroup *root)
{
	unsigned int doms = hweight_long(cge_sampler_source()->domains());
	size_t line = 48 + 14 * (2 * (4 + doms) + CGE_POWER_NR);

	return ((size_t)READ_ONCE(root->nr_descendants) + 1) * line + PAGE_SIZE;
}

/**
 * cge_tree_show() - energy.tree of a mount
 * @m: the file
 * @root: the mount's root cgroup, held by its root inode
 * @host: the mount shows the whole tree: the root-only keys too
 *
 * Return: 0, or -errno (interrupted, no memory).
 */
int cge_tree_show(struct seq_file *m, struct cgroup *root, bool host)
{
	struct cgroup_subsys_state *css;
	struct cge_tree_read r = { };
	unsigned int n = 0;
	int ret = -ENOMEM;

	r.s = cge_snap_fresh();
	if (IS_ERR(r.s))
		return PTR_ERR(r.s);
	r.domains = cge_sampler_source()->domains();
	r.keys = kvmalloc_array(r.s->nr, sizeof(*r.keys), GFP_KERNEL_ACCOUNT);
	r.path = kmalloc(PATH_MAX + 1, GFP_KERNEL_ACCOUNT);
	if (!r.keys || !r.path)
		goto out;
	cge_tree_index(&r);
	cge_tree_header(m, &r, host);
	rcu_read_lock();
	css_for_each_descendant_pre(css, &root->self) {
		if (css == &root->self || cge_cgroup_shown(css->cgroup))
			cge_tree_line(m, &r, css->cgroup, root);
		/* seq_read() calls again with a larger buffer */
		if (seq_has_overflowed(m))
			break;
		/*
		 * Let others run: css_next_descendant_pre() needs the css it
		 * goes on from to be accessible, not the whole walk in one RCU
		 * section, so hold it across.
		 */
		if (++n % CGE_TREE_BATCH == 0 && css_tryget(css)) {
			rcu_read_unlock();
			cond_resched();
			rcu_read_lock();
			css_put(css);
		}
	}
	rcu_read_unlock();
	ret = 0;
out:
	kfree(r.path);
	kvfree(r.keys);
	cge_snap_put(r.s);
	return ret;
}
