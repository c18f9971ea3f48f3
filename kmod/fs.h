/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fs.h - the cgroup_energy filesystem, a mirror of the cgroup v2 tree.
 */
#ifndef CGE_FS_H
#define CGE_FS_H

int cge_fs_init(void);
void cge_fs_exit(void);

#endif /* CGE_FS_H */
