/* SPDX-License-Identifier: GPL-2.0 */
/*
 * snap.h - snapshots of all records, made by the sampler when readers ask.
 */
#ifndef CGE_SNAP_H
#define CGE_SNAP_H

#include <linux/types.h>
#include <linux/kref.h>
#include <linux/rcupdate.h>

#include "cgstate.h"

/* All records as one sample left them. */
struct cge_snap {
	struct kref ref;
	struct rcu_head rcu;
	u64 sample;			/* energy.info's samples by then */
	u64 at_ns;			/* that sample's interval end */
	struct cge_root_stat rs;
	unsigned int nr;
	struct cge_rec_copy rec[];
};

void cge_snap_sampled(u64 sample, u64 at_ns);
struct cge_snap *cge_snap_fresh(void);
void cge_snap_put(struct cge_snap *s);
void cge_snap_exit(void);

#endif /* CGE_SNAP_H */
