/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stat.h - the text of energy.stat and energy.info.
 */
#ifndef CGE_STAT_H
#define CGE_STAT_H

#include <linux/types.h>

struct seq_file;

int cge_stat_show(struct seq_file *m, u64 cgid);
int cge_info_show(struct seq_file *m, bool host);

#endif /* CGE_STAT_H */
