// SPDX-License-Identifier: GPL-2.0
/*
 * fs.c - the cgroup_energy filesystem.
 *
 * Directories mirror cgroup v2 on demand: ->lookup asks kernfs for the
 * child of the cgroup a directory stands for, ->iterate_shared lists the
 * cgroup's children, ->d_revalidate drops directories whose cgroup is gone.
 * Nothing is copied or kept in step: a cgroup's directory exists exactly
 * while the cgroup does. A mount shows the subtree rooted at the mounting
 * process's cgroup namespace, as a cgroup2 mount does.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/namei.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/cgroup.h>
#include <linux/kernfs.h>
#include <linux/nsproxy.h>
#include <linux/sysfs.h>
#include <linux/kobject.h>

#include "cgroup_energy.h"
#include "compat.h"
#include "fs.h"
#include "stat.h"
#include "cgstate.h"

#define CGE_FS_MAGIC		0x63676e65	/* "cgne" */
#define CGE_DEFAULT_MODE	0440

/* Inode numbers: cgroup ids are unique and never reused. */
#define CGE_INO_DIR		0
#define CGE_INO_STAT		1
#define CGE_INO_INFO		2
#define CGE_INO(cgid, kind)	(((cgid) << 2) | (kind))

struct cge_fs_opts {
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
};

struct cge_sb_info {
	struct cge_fs_opts opts;
	u64 root_cgid;		/* the mounter's cgroup namespace root */
};

static const struct inode_operations cge_dir_iops;
static const struct file_operations cge_dir_fops;
static const struct file_operations cge_stat_fops;
static const struct file_operations cge_info_fops;

static inline u64 cge_inode_cgid(const struct inode *inode)
{
	return (u64)(uintptr_t)inode->i_private;
}

static struct inode *cge_new_inode(struct super_block *sb, u64 cgid, int kind)
{
	struct cge_sb_info *sbi = sb->s_fs_info;
	struct inode *inode = new_inode(sb);

	if (!inode)
		return NULL;
	inode->i_ino = CGE_INO(cgid, kind);
	inode->i_private = (void *)(uintptr_t)cgid;
	cge_inode_touch(inode);
	if (kind == CGE_INO_DIR) {
		inode->i_mode = S_IFDIR | 0555;
		inode->i_op = &cge_dir_iops;
		inode->i_fop = &cge_dir_fops;
		set_nlink(inode, 2);
	} else {
		inode->i_mode = S_IFREG | sbi->opts.mode;
		inode->i_uid = sbi->opts.uid;
		inode->i_gid = sbi->opts.gid;
		inode->i_fop = kind == CGE_INO_STAT ? &cge_stat_fops :
						       &cge_info_fops;
	}
	return inode;
}

/* The id of @parent's child cgroup called @name, or 0. */
static u64 cge_child_cgid(u64 parent, const char *name)
{
	struct cgroup *cgrp = cge_cgroup_get_from_id(parent);
	struct kernfs_node *kn;
	u64 id = 0;

	if (!cgrp)
		return 0;
	kn = kernfs_find_and_get_ns(cgrp->kn, name, NULL);
	cgroup_put(cgrp);
	if (!kn)
		return 0;
	if (kernfs_type(kn) == KERNFS_DIR)
		id = kn->id;	/* what cgroup_id() returns */
	kernfs_put(kn);
	return id;
}

static bool cge_cgroup_alive(u64 cgid)
{
	struct cgroup *cgrp = cge_cgroup_get_from_id(cgid);
	bool alive = cgrp && cge_cgroup_online(cgrp);

	if (cgrp)
		cgroup_put(cgrp);
	return alive;
}

static struct dentry *cge_lookup(struct inode *dir, struct dentry *dentry,
				 unsigned int flags)
{
	struct super_block *sb = dir->i_sb;
	struct cge_sb_info *sbi = sb->s_fs_info;
	const char *name = dentry->d_name.name;
	u64 cgid = cge_inode_cgid(dir);
	struct inode *inode = NULL;
	u64 child;

	if (!strcmp(name, CGE_STAT_FILE)) {
		inode = cge_new_inode(sb, cgid, CGE_INO_STAT);
	} else if (!strcmp(name, CGE_INFO_FILE) && cgid == sbi->root_cgid) {
		inode = cge_new_inode(sb, cgid, CGE_INO_INFO);
	} else {
		child = cge_child_cgid(cgid, name);
		if (!child || !cge_cgroup_alive(child))
			return d_splice_alias(NULL, dentry);
		inode = cge_new_inode(sb, child, CGE_INO_DIR);
	}
	if (!inode)
		return ERR_PTR(-ENOMEM);
	return d_splice_alias(inode, dentry);
}

/* A directory is valid while its cgroup lives; look names up afresh. */
static int cge_d_revalidate(CGE_D_REVALIDATE_ARGS)
{
	struct inode *inode;

	if (flags & LOOKUP_RCU)
		return -ECHILD;
	inode = d_inode(dentry);
	if (!inode)
		return 0;
	if (!S_ISDIR(inode->i_mode))
		return 1;
	return cge_cgroup_alive(cge_inode_cgid(inode));
}

static const struct dentry_operations cge_dops = {
	.d_revalidate = cge_d_revalidate,
	.d_delete = always_delete_dentry,
};

struct cge_child {
	u64 cgid;
	unsigned int off;	/* name offset in the name buffer */
	unsigned int len;
};

/*
 * Collect the live children of @cgrp: count under RCU, allocate, then fill
 * what fits (the set may change in between; readdir is a snapshot).
 */
static int cge_children(struct cgroup *cgrp, struct cge_child **out,
			char **names, unsigned int *nr)
{
	struct cgroup_subsys_state *pos, *self = &cgrp->self;
	unsigned int n = 0, bytes = 0, i = 0, off = 0, len;
	struct cge_child *ch;
	const char *name;
	char *buf;

	rcu_read_lock();
	css_for_each_descendant_pre(pos, self) {
		if (pos->parent != self || !cge_cgroup_online(pos->cgroup))
			continue;
		n++;
		bytes += strlen(cge_kn_name(pos->cgroup->kn)) + 1;
	}
	rcu_read_unlock();

	ch = kvmalloc_array(n + 1, sizeof(*ch), GFP_KERNEL);
	buf = kvmalloc(bytes + 1, GFP_KERNEL);
	if (!ch || !buf) {
		kvfree(ch);
		kvfree(buf);
		return -ENOMEM;
	}
	rcu_read_lock();
	css_for_each_descendant_pre(pos, self) {
		if (pos->parent != self || !cge_cgroup_online(pos->cgroup))
			continue;
		name = cge_kn_name(pos->cgroup->kn);
		len = strlen(name);
		if (i == n || off + len + 1 > bytes)
			break;
		memcpy(buf + off, name, len + 1);
		ch[i].cgid = cgroup_id(pos->cgroup);
		ch[i].off = off;
		ch[i].len = len;
		off += len + 1;
		i++;
	}
	rcu_read_unlock();
	*out = ch;
	*names = buf;
	*nr = i;
	return 0;
}

/* Positions: 0-1 dots, 2 energy.stat, 3 energy.info (root), 4+ children. */
static int cge_readdir(struct file *file, struct dir_context *ctx)
{
	struct inode *inode = file_inode(file);
	struct cge_sb_info *sbi = inode->i_sb->s_fs_info;
	u64 cgid = cge_inode_cgid(inode);
	struct cge_child *ch;
	struct cgroup *cgrp;
	unsigned int nr, i;
	char *names;
	int ret;

	if (!dir_emit_dots(file, ctx))
		return 0;
	if (ctx->pos == 2) {
		if (!dir_emit(ctx, CGE_STAT_FILE, strlen(CGE_STAT_FILE),
			      CGE_INO(cgid, CGE_INO_STAT), DT_REG))
			return 0;
		ctx->pos++;
	}
	if (ctx->pos == 3) {
		if (cgid == sbi->root_cgid &&
		    !dir_emit(ctx, CGE_INFO_FILE, strlen(CGE_INFO_FILE),
			      CGE_INO(cgid, CGE_INO_INFO), DT_REG))
			return 0;
		ctx->pos++;
	}
	cgrp = cge_cgroup_get_from_id(cgid);
	if (!cgrp)
		return 0;
	ret = cge_children(cgrp, &ch, &names, &nr);
	cgroup_put(cgrp);
	if (ret)
		return ret;
	for (i = ctx->pos - 4; i < nr; i++) {
		if (!dir_emit(ctx, names + ch[i].off, ch[i].len,
			      CGE_INO(ch[i].cgid, CGE_INO_DIR), DT_DIR))
			break;
		ctx->pos++;
	}
	kvfree(ch);
	kvfree(names);
	return 0;
}

static int cge_stat_seq(struct seq_file *m, void *v)
{
	return cge_stat_show(m, (u64)(uintptr_t)m->private);
}

static int cge_stat_open(struct inode *inode, struct file *file)
{
	return single_open(file, cge_stat_seq, inode->i_private);
}

static int cge_info_seq(struct seq_file *m, void *v)
{
	return cge_info_show(m);
}

static int cge_info_open(struct inode *inode, struct file *file)
{
	return single_open(file, cge_info_seq, NULL);
}

static const struct inode_operations cge_dir_iops = {
	.lookup = cge_lookup,
};

static const struct file_operations cge_dir_fops = {
	.read = generic_read_dir,
	.iterate_shared = cge_readdir,
	.llseek = generic_file_llseek,
};

static const struct file_operations cge_stat_fops = {
	.open = cge_stat_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

static const struct file_operations cge_info_fops = {
	.open = cge_info_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

static const struct super_operations cge_sops = {
	.statfs = simple_statfs,
	.drop_inode = cge_drop_inode,
};

enum { CGE_OPT_UID, CGE_OPT_GID, CGE_OPT_MODE };

static const struct fs_parameter_spec cge_fs_params[] = {
	fsparam_u32("uid", CGE_OPT_UID),
	fsparam_u32("gid", CGE_OPT_GID),
	fsparam_u32oct("mode", CGE_OPT_MODE),
	{}
};

static int cge_bad_opt(struct fs_parameter *param, const char *why)
{
	pr_warn("mount option %s%s%s refused: %s\n", param->key,
		param->type == fs_value_is_string ? "=" : "",
		param->type == fs_value_is_string ? param->string : "", why);
	return -EINVAL;
}

static int cge_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	struct cge_fs_opts *o = fc->fs_private;
	struct fs_parse_result r;
	kuid_t uid;
	kgid_t gid;
	int opt;

	opt = fs_parse(fc, cge_fs_params, param, &r);
	if (opt == -ENOPARAM) {
		if (!strcmp(param->key, "source"))
			return -ENOPARAM;	/* the VFS takes it */
		return cge_bad_opt(param, "unknown option (uid=, gid=, mode=)");
	}
	if (opt < 0)
		return cge_bad_opt(param, "malformed value");
	switch (opt) {
	case CGE_OPT_UID:
		uid = make_kuid(current_user_ns(), r.uint_32);
		if (!uid_valid(uid))
			return cge_bad_opt(param, "no such uid");
		o->uid = uid;
		break;
	case CGE_OPT_GID:
		gid = make_kgid(current_user_ns(), r.uint_32);
		if (!gid_valid(gid))
			return cge_bad_opt(param, "no such gid");
		o->gid = gid;
		break;
	case CGE_OPT_MODE:
		if (r.uint_32 & ~0777)
			return cge_bad_opt(param, "mode must be octal 0-0777");
		o->mode = r.uint_32;
		break;
	}
	return 0;
}

static int cge_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct cge_sb_info *sbi;
	struct inode *root;

	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	sbi->opts = *(struct cge_fs_opts *)fc->fs_private;
	sbi->root_cgid = cgroup_id(current->nsproxy->cgroup_ns->root_cset->dfl_cgrp);
	sb->s_fs_info = sbi;
	sb->s_magic = CGE_FS_MAGIC;
	sb->s_op = &cge_sops;
	cge_set_default_d_op(sb, &cge_dops);
	sb->s_time_gran = 1;

	root = cge_new_inode(sb, sbi->root_cgid, CGE_INO_DIR);
	if (!root)
		return -ENOMEM;
	sb->s_root = d_make_root(root);
	return sb->s_root ? 0 : -ENOMEM;
}

static int cge_get_tree(struct fs_context *fc)
{
	return get_tree_nodev(fc, cge_fill_super);
}

/* New options apply to files looked up from now on. */
static int cge_reconfigure(struct fs_context *fc)
{
	struct cge_sb_info *sbi = fc->root->d_sb->s_fs_info;

	sbi->opts = *(struct cge_fs_opts *)fc->fs_private;
	return 0;
}

static void cge_free_fc(struct fs_context *fc)
{
	kfree(fc->fs_private);
}

static const struct fs_context_operations cge_fc_ops = {
	.parse_param = cge_parse_param,
	.get_tree = cge_get_tree,
	.reconfigure = cge_reconfigure,
	.free = cge_free_fc,
};

static int cge_init_fs_context(struct fs_context *fc)
{
	struct cge_fs_opts *o = kzalloc(sizeof(*o), GFP_KERNEL);

	if (!o)
		return -ENOMEM;
	o->uid = GLOBAL_ROOT_UID;
	o->gid = GLOBAL_ROOT_GID;
	o->mode = CGE_DEFAULT_MODE;
	if (fc->purpose == FS_CONTEXT_FOR_RECONFIGURE && fc->root) {
		struct cge_sb_info *sbi = fc->root->d_sb->s_fs_info;

		*o = sbi->opts;
	}
	fc->fs_private = o;
	fc->ops = &cge_fc_ops;
	return 0;
}

static void cge_kill_sb(struct super_block *sb)
{
	struct cge_sb_info *sbi = sb->s_fs_info;

	kill_anon_super(sb);
	kfree(sbi);
}

static struct file_system_type cge_fs_type = {
	.owner = THIS_MODULE,
	.name = CGE_FS_TYPE,
	.init_fs_context = cge_init_fs_context,
	.parameters = cge_fs_params,
	.kill_sb = cge_kill_sb,
};

int cge_fs_init(void)
{
	int ret = sysfs_create_mount_point(fs_kobj, CGE_FS_TYPE);

	if (ret)
		return ret;
	ret = register_filesystem(&cge_fs_type);
	if (ret)
		sysfs_remove_mount_point(fs_kobj, CGE_FS_TYPE);
	return ret;
}

void cge_fs_exit(void)
{
	unregister_filesystem(&cge_fs_type);
	sysfs_remove_mount_point(fs_kobj, CGE_FS_TYPE);
}
