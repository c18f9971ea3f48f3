/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gone.h - the parents of recently removed cgroups.
 */
#ifndef CGE_GONE_H
#define CGE_GONE_H

#include <linux/types.h>

void cge_gone_init(void);
void cge_gone_exit(void);
u64 cge_gone_parent(u64 cgid);
int cge_gone_since(u64 *seq, u64 *ids, unsigned int max);

#endif /* CGE_GONE_H */
