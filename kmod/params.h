/* SPDX-License-Identifier: GPL-2.0 */
/*
 * params.h - the module parameters, validated on every write.
 */
#ifndef CGE_PARAMS_H
#define CGE_PARAMS_H

#include <linux/types.h>

enum cge_source_kind {
	CGE_SOURCE_AUTO,
	CGE_SOURCE_RAPL,
	CGE_SOURCE_MODEL,
};

enum cge_split_kind {
	CGE_SPLIT_TIME,
	CGE_SPLIT_IMPACT,
};

#define CGE_INTERVAL_MS_MIN	10
#define CGE_INTERVAL_MS_MAX	10000

/* Read with READ_ONCE(): writers are the parameter setters. */
extern unsigned int cge_interval_ms;
extern unsigned int cge_model_idle_mw;
extern unsigned int cge_model_busy_mw;
extern int cge_source_param;
extern int cge_split_param;
extern int cge_unowned_param;

struct cge_impact_coefs;

int cge_params_load(void);
void cge_params_coefs(struct cge_impact_coefs *out);
const char *cge_split_name(int kind);
const char *cge_unowned_name(int policy);

#endif /* CGE_PARAMS_H */
