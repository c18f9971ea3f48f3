/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gone.h - removed cgroups: their records to the reaper, their parents kept.
 */
#ifndef CGE_GONE_H
#define CGE_GONE_H

#include <linux/types.h>

void cge_gone_init(void);
void cge_gone_exit(void);
u64 cge_gone_parent(u64 cgid);
bool cge_gone_tracked(void);

#endif /* CGE_GONE_H */
