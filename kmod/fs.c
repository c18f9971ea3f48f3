// SPDX-License-Identifier: GPL-2.0
/*
 * fs.c - the cgroup_energy filesystem.
 *
 * Directories mirror cgroup v2 on demand. A directory's inode holds a
 * reference on its cgroup, so what a mount shows depends on the mount, not
 * on who reads it (as with cgroup2): ->lookup finds a child by name in the
 * directory's kernfs node (an rbtree), ->iterate_shared lists its children,
 * ->d_revalidate drops a directory whose cgroup was removed. An open
 * directory keeps its cgroup's struct (not the cgroup) after removal, as an
 * open cgroup2 directory keeps its kernfs node.
 * No tree is copied or kept in step. A mount shows the subtree rooted at the
 * mounting process's cgroup namespace root; its root has energy.info and
 * energy.tree (tree.c) beside energy.stat. A child cgroup named like one of
 * a directory's files is not listed there (the file keeps its name) and is
 * read in energy.tree.
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
#include <linux/rculist.h>
#include <linux/nsproxy.h>
#include <linux/sysfs.h>
#include <linux/kobject.h>

#include "cgroup_energy.h"
#include "compat.h"
#include "fs.h"
#include "stat.h"
#include "cgstate.h"
#include "tree.h"

#define CGE_FS_MAGIC		0x63676e65	/* "cgne" */
#define CGE_DEFAULT_MODE	0440

/* Inode numbers: cgroup ids are unique and never reused. */
#define CGE_INO_DIR		0
#define CGE_INO_STAT		1
#define CGE_INO_INFO		2
#define CGE_INO_TREE		3
#define CGE_INO(cgid, kind)	(((cgid) << 2) | (kind))

struct cge_fs_opts {
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
};

struct cge_sb_info {
	spinlock_t opts_lock;	/* a remount changes opts as a whole */
	struct cge_fs_opts opts;
	u64 root_cgid;		/* the mounter's cgroup namespace root */
};

static const struct inode_operations cge_dir_iops;
static const struct file_operations cge_dir_fops;
static const struct file_operations cge_stat_fops;
static const struct file_operations cge_info_fops;
static const struct file_operations cge_tree_fops;

/* A directory's cgroup: the inode holds a reference until it is evicted. */
static inline struct cgroup *cge_dir_cgroup(const struct inode *inode)
{
	return inode->i_private;
}

/* The cgroup id of a file: energy.stat's cgroup, or the mount's root. */
static inline u64 cge_file_cgid(const struct inode *inode)
{
	return (u64)(uintptr_t)inode->i_private;
}

/* A directory inode for @cgrp, taking over the caller's reference. */
static struct inode *cge_new_dir(struct super_block *sb, struct cgroup *cgrp)
{
	struct inode *inode = new_inode(sb);

	if (!inode) {
		cgroup_put(cgrp);
		return NULL;
	}
	inode->i_ino = CGE_INO(cgroup_id(cgrp), CGE_INO_DIR);
	inode->i_private = cgrp;
	inode->i_mode = S_IFDIR | 0555;
	inode->i_op = &cge_dir_iops;
	inode->i_fop = &cge_dir_fops;
	set_nlink(inode, 2);
	simple_inode_init_ts(inode);
	return inode;
}

static struct inode *cge_new_file(struct super_block *sb, u64 cgid, int kind)
{
	struct cge_sb_info *sbi = sb->s_fs_info;
	struct inode *inode = new_inode(sb);
	struct cge_fs_opts o;

	if (!inode)
		return NULL;
	spin_lock(&sbi->opts_lock);
	o = sbi->opts;
	spin_unlock(&sbi->opts_lock);
	inode->i_ino = CGE_INO(cgid, kind);
	inode->i_private = (void *)(uintptr_t)cgid;
	inode->i_mode = S_IFREG | o.mode;
	inode->i_uid = o.uid;
	inode->i_gid = o.gid;
	inode->i_fop = kind == CGE_INO_STAT ? &cge_stat_fops :
		       kind == CGE_INO_INFO ? &cge_info_fops : &cge_tree_fops;
	simple_inode_init_ts(inode);
	return inode;
}

static void cge_evict_inode(struct inode *inode)
{
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	if (S_ISDIR(inode->i_mode))
		cgroup_put(cge_dir_cgroup(inode));
}

/* Whether @name is one of the files of the directory of cgroup @cgid. */
static bool cge_file_name(const struct cge_sb_info *sbi, u64 cgid,
			  const char *name)
{
	return !strcmp(name, CGE_STAT_FILE) ||
	       (cgid == sbi->root_cgid && (!strcmp(name, CGE_INFO_FILE) ||
					   !strcmp(name, CGE_TREE_FILE)));
}

/*
 * @parent's shown child cgroup called @name, with a reference, or NULL:
 * kernfs finds the name in its directory's rbtree. A cgroup directory's
 * kn->priv is its cgroup, cleared (RCU) before the cgroup is freed.
 */
static struct cgroup *cge_child_get(struct cgroup *parent, const char *name)
{
	struct kernfs_node *kn = kernfs_find_and_get(parent->kn, name);
	struct cgroup *child = NULL;
	struct cgroup *c;

	if (!kn)
		return NULL;
	rcu_read_lock();
	c = rcu_dereference(*(void __rcu __force **)&kn->priv);
	if (kernfs_type(kn) == KERNFS_DIR && c && cge_cgroup_shown(c) &&
	    cgroup_tryget(c))
		child = c;
	rcu_read_unlock();
	kernfs_put(kn);
	return child;
}

static struct dentry *cge_lookup(struct inode *dir, struct dentry *dentry,
				 unsigned int flags)
{
	struct super_block *sb = dir->i_sb;
	struct cge_sb_info *sbi = sb->s_fs_info;
	struct cgroup *cgrp = cge_dir_cgroup(dir);
	const char *name = dentry->d_name.name;
	u64 cgid = cgroup_id(cgrp);
	struct inode *inode;
	struct cgroup *child;

	if (!strcmp(name, CGE_STAT_FILE)) {
		inode = cge_new_file(sb, cgid, CGE_INO_STAT);
	} else if (!strcmp(name, CGE_INFO_FILE) && cgid == sbi->root_cgid) {
		inode = cge_new_file(sb, cgid, CGE_INO_INFO);
	} else if (!strcmp(name, CGE_TREE_FILE) && cgid == sbi->root_cgid) {
		inode = cge_new_file(sb, cgid, CGE_INO_TREE);
	} else {
		child = cge_child_get(cgrp, name);
		if (!child)
			return d_splice_alias(NULL, dentry);
		inode = cge_new_dir(sb, child);
	}
	if (!inode)
		return ERR_PTR(-ENOMEM);
	return d_splice_alias(inode, dentry);
}

/*
 * A directory is valid while its cgroup is online (cgroup v2 has no rename:
 * a cgroup keeps its name); names are looked up afresh.
 */
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
	return cge_cgroup_online(cge_dir_cgroup(inode));
}

static const struct dentry_operations cge_dops = {
	.d_revalidate = cge_d_revalidate,
	.d_delete = always_delete_dentry,
};

/*
 * Directory positions: 0-1 the dots, 2 energy.stat, 3 energy.info and 4
 * energy.tree (mount root only), then each child cgroup at CGE_POS_CHILD
 * plus its serial number. A cgroup's children are listed in ascending
 * serial number order and a serial number is never reused, so a listing
 * resumed at a position neither skips nor repeats a child that exists
 * throughout, whatever was created or removed in between.
 */
#define CGE_POS_STAT		2
#define CGE_POS_INFO		3
#define CGE_POS_TREE		4
#define CGE_POS_CHILD		5

/* One child, copied out under RCU to be emitted after it. */
struct cge_dirent {
	u64 serial;
	u64 cgid;
	u16 len;
	char name[];
};

#define CGE_DIRENT_SIZE(len) \
	ALIGN(offsetof(struct cge_dirent, name) + (len) + 1, sizeof(u64))

/*
 * Copy the shown children of @cgrp at positions from @pos on into @buf
 * (@size bytes), in order, as many as fit. *@last, if set, is the child a
 * previous batch ended with, held: a held css stays on the list (it leaves
 * it only when released), so the walk goes on after it. Walks @cgrp's
 * children only.
 * Return: bytes used; *@more says whether some did not fit, and then
 * *@last holds the last child copied (or NULL); the old one is put.
 */
static size_t cge_children_from(const struct cge_sb_info *sbi,
				struct cgroup *cgrp, loff_t pos,
				struct cgroup_subsys_state **last, char *buf,
				size_t size, bool *more)
{
	struct list_head *head = &cgrp->self.children;
	struct cgroup_subsys_state *child, *prev = *last, *tail = NULL;
	struct cge_dirent *de;
	const char *name;
	size_t used = 0;
	size_t len;

	*more = false;
	rcu_read_lock();
	child = prev ? list_next_or_null_rcu(head, &prev->sibling,
					     struct cgroup_subsys_state,
					     sibling) :
		       list_first_or_null_rcu(head, struct cgroup_subsys_state,
					      sibling);
	for (; child; child = list_next_or_null_rcu(head, &child->sibling,
						    struct cgroup_subsys_state,
						    sibling)) {
		if (child->serial_nr + CGE_POS_CHILD < pos ||
		    !cge_cgroup_shown(child->cgroup))
			continue;
		name = cge_kn_name(child->cgroup->kn);
		if (cge_file_name(sbi, cgroup_id(cgrp), name))
			continue;	/* the file has the name */
		len = strlen(name);
		if (used + CGE_DIRENT_SIZE(len) > size) {
			*more = true;
			break;
		}
		de = (struct cge_dirent *)(buf + used);
		de->serial = child->serial_nr;
		de->cgid = cgroup_id(child->cgroup);
		de->len = len;
		memcpy(de->name, name, len + 1);
		used += CGE_DIRENT_SIZE(len);
		tail = child;
	}
	*last = *more && tail && css_tryget(tail) ? tail : NULL;
	rcu_read_unlock();
	if (prev)
		css_put(prev);
	return used;
}

static int cge_readdir(struct file *file, struct dir_context *ctx)
{
	struct inode *inode = file_inode(file);
	struct cge_sb_info *sbi = inode->i_sb->s_fs_info;
	struct cgroup *cgrp = cge_dir_cgroup(inode);
	u64 cgid = cgroup_id(cgrp);
	struct cgroup_subsys_state *last = NULL;
	struct cge_dirent *de;
	size_t used, off;
	bool more;
	char *buf;

	if (!dir_emit_dots(file, ctx))
		return 0;
	if (ctx->pos == CGE_POS_STAT) {
		if (!dir_emit(ctx, CGE_STAT_FILE, strlen(CGE_STAT_FILE),
			      CGE_INO(cgid, CGE_INO_STAT), DT_REG))
			return 0;
		ctx->pos++;
	}
	if (ctx->pos == CGE_POS_INFO) {
		if (cgid == sbi->root_cgid &&
		    !dir_emit(ctx, CGE_INFO_FILE, strlen(CGE_INFO_FILE),
			      CGE_INO(cgid, CGE_INO_INFO), DT_REG))
			return 0;
		ctx->pos++;
	}
	if (ctx->pos == CGE_POS_TREE) {
		if (cgid == sbi->root_cgid &&
		    !dir_emit(ctx, CGE_TREE_FILE, strlen(CGE_TREE_FILE),
			      CGE_INO(cgid, CGE_INO_TREE), DT_REG))
			return 0;
		ctx->pos++;
	}
	buf = (char *)__get_free_page(GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	do {
		used = cge_children_from(sbi, cgrp, ctx->pos, &last, buf,
					 PAGE_SIZE, &more);
		for (off = 0; off < used; off += CGE_DIRENT_SIZE(de->len)) {
			de = (struct cge_dirent *)(buf + off);
			ctx->pos = de->serial + CGE_POS_CHILD;
			if (!dir_emit(ctx, de->name, de->len,
				      CGE_INO(de->cgid, CGE_INO_DIR), DT_DIR))
				goto out;
			ctx->pos++;
		}
	} while (more);
out:
	if (last)
		css_put(last);
	free_page((unsigned long)buf);
	return 0;
}

/*
 * The directory's inode holds its cgroup while the file is open (an open
 * file pins its dentry, and that its parent): a removed cgroup's file
 * reads its last totals until the record is freed, then -ENODEV.
 */
static int cge_stat_seq(struct seq_file *m, void *v)
{
	struct inode *dir = d_inode(m->file->f_path.dentry->d_parent);

	return cge_stat_show(m, cge_dir_cgroup(dir));
}

static int cge_stat_open(struct inode *inode, struct file *file)
{
	return single_open(file, cge_stat_seq, NULL);
}

/* The host's health counters only in a mount of the whole tree. */
static int cge_info_seq(struct seq_file *m, void *v)
{
	return cge_info_show(m, cge_file_cgid(m->private) == cge_root_cgid());
}

static int cge_info_open(struct inode *inode, struct file *file)
{
	return single_open(file, cge_info_seq, inode);
}

/* The mount's root cgroup, held by the root directory's inode. */
static int cge_tree_seq(struct seq_file *m, void *v)
{
	struct inode *inode = m->private;
	struct cgroup *root = cge_dir_cgroup(d_inode(inode->i_sb->s_root));

	return cge_tree_show(m, root, cgroup_id(root) == cge_root_cgid());
}

static int cge_tree_open(struct inode *inode, struct file *file)
{
	struct cgroup *root = cge_dir_cgroup(d_inode(inode->i_sb->s_root));

	return single_open_size(file, cge_tree_seq, inode,
				cge_tree_size_hint(root));
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

static const struct file_operations cge_tree_fops = {
	.open = cge_tree_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

/* The options that differ from the defaults, as /proc/mounts shows them. */
static int cge_show_options(struct seq_file *m, struct dentry *root)
{
	struct cge_sb_info *sbi = root->d_sb->s_fs_info;
	struct cge_fs_opts o;

	spin_lock(&sbi->opts_lock);
	o = sbi->opts;
	spin_unlock(&sbi->opts_lock);
	if (!uid_eq(o.uid, GLOBAL_ROOT_UID))
		seq_printf(m, ",uid=%u", from_kuid_munged(seq_user_ns(m), o.uid));
	if (!gid_eq(o.gid, GLOBAL_ROOT_GID))
		seq_printf(m, ",gid=%u", from_kgid_munged(seq_user_ns(m), o.gid));
	if (o.mode != CGE_DEFAULT_MODE)
		seq_printf(m, ",mode=%04o", o.mode);
	return 0;
}

static const struct super_operations cge_sops = {
	.statfs = simple_statfs,
	.show_options = cge_show_options,
	.drop_inode = inode_just_drop,
	.evict_inode = cge_evict_inode,
};

enum { CGE_OPT_UID, CGE_OPT_GID, CGE_OPT_MODE };

static const struct fs_parameter_spec cge_fs_params[] = {
	fsparam_u32("uid", CGE_OPT_UID),
	fsparam_u32("gid", CGE_OPT_GID),
	fsparam_u32oct("mode", CGE_OPT_MODE),
	{}
};

/* -EINVAL, and why: to fsconfig(2) callers, or else in the kernel log. */
static int cge_bad_opt(struct fs_context *fc, struct fs_parameter *param,
		       const char *why)
{
	return invalfc(fc, "mount option %s%s%s refused: %s", param->key,
		       param->type == fs_value_is_string ? "=" : "",
		       param->type == fs_value_is_string ? param->string : "",
		       why);
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
		return cge_bad_opt(fc, param, "unknown option (uid=, gid=, mode=)");
	}
	if (opt < 0)
		return cge_bad_opt(fc, param, "malformed value");
	switch (opt) {
	case CGE_OPT_UID:
		uid = make_kuid(fc->user_ns, r.uint_32);
		if (!uid_valid(uid))
			return cge_bad_opt(fc, param, "no such uid");
		o->uid = uid;
		break;
	case CGE_OPT_GID:
		gid = make_kgid(fc->user_ns, r.uint_32);
		if (!gid_valid(gid))
			return cge_bad_opt(fc, param, "no such gid");
		o->gid = gid;
		break;
	case CGE_OPT_MODE:
		if (r.uint_32 & ~0444)
			return cge_bad_opt(fc, param,
					   "mode takes read bits only (0-0444)");
		o->mode = r.uint_32;
		break;
	}
	return 0;
}

static int cge_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct cgroup *cgrp;
	struct cge_sb_info *sbi;
	struct inode *root;

	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	spin_lock_init(&sbi->opts_lock);
	sbi->opts = *(struct cge_fs_opts *)fc->fs_private;
	/* The namespace's root cgroup, pinned by the namespace we run in. */
	cgrp = current->nsproxy->cgroup_ns->root_cset->dfl_cgrp;
	cgroup_get(cgrp);
	sbi->root_cgid = cgroup_id(cgrp);
	sb->s_fs_info = sbi;
	sb->s_magic = CGE_FS_MAGIC;
	sb->s_op = &cge_sops;
	set_default_d_op(sb, &cge_dops);
	sb->s_time_gran = 1;
	/* Directory positions are css serial numbers: 64-bit, for seekdir. */
	sb->s_maxbytes = MAX_LFS_FILESIZE;
	sb->s_iflags |= SB_I_NOEXEC | SB_I_NODEV;

	root = cge_new_dir(sb, cgrp);
	if (!root)
		return -ENOMEM;
	sb->s_root = d_make_root(root);
	return sb->s_root ? 0 : -ENOMEM;
}

static int cge_get_tree(struct fs_context *fc)
{
	return get_tree_nodev(fc, cge_fill_super);
}

/* New options apply, all together, to files looked up from now on. */
static int cge_reconfigure(struct fs_context *fc)
{
	struct cge_sb_info *sbi = fc->root->d_sb->s_fs_info;

	spin_lock(&sbi->opts_lock);
	sbi->opts = *(struct cge_fs_opts *)fc->fs_private;
	spin_unlock(&sbi->opts_lock);
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

		spin_lock(&sbi->opts_lock);
		*o = sbi->opts;
		spin_unlock(&sbi->opts_lock);
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
