/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rollup.h - add a sample's charges to the records, each ancestor once.
 */
#ifndef CGE_ROLLUP_H
#define CGE_ROLLUP_H

#include "cgstate.h"
#include "power.h"

void cge_rollup_add(struct cge_rec *rec, const struct cge_delta *d,
		    struct cge_power_step *step);
void cge_rollup_flush(struct cge_power_step *step);
void cge_rollup_exit(void);

#endif /* CGE_ROLLUP_H */
