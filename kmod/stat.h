/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stat.h - the text of energy.stat and energy.info, and energy.tree's keys.
 */
#ifndef CGE_STAT_H
#define CGE_STAT_H

#include <linux/types.h>

#include "systime.h"
#include "power.h"

struct seq_file;
struct cge_counts;
struct cge_stat;
struct cgroup;

extern const char * const cge_sys_keys[CGE_SYS_NR][2];
extern const char * const cge_power_keys[CGE_POWER_NR];

void cge_stat_keys(struct seq_file *m, const char *prefix,
		   unsigned long domains);
void cge_stat_values(struct seq_file *m, const struct cge_counts *c,
		     unsigned long domains);
void cge_share_keys_show(struct seq_file *m, const char *prefix);
void cge_share_values(struct seq_file *m, const struct cge_stat *st);
int cge_stat_show(struct seq_file *m, struct cgroup *cgrp);
int cge_info_show(struct seq_file *m, bool host);

#endif /* CGE_STAT_H */
