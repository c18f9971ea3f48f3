/* SPDX-License-Identifier: GPL-2.0 */
/*
 * model.h - the power model used where there is no RAPL (e.g. VMs):
 * per CPU, P = idle_mw + (busy_mw - idle_mw) * busy_fraction.
 *
 * Pure integer arithmetic: no locking, no allocation, no hardware access.
 */
#ifndef CGE_MODEL_H
#define CGE_MODEL_H

#include <linux/types.h>

/* the largest per-CPU power accepted, in mW (10 kW) */
#define CGE_MODEL_MAX_MW	10000000U
/* what cge_model_validate() requires, for the parameters' refusals */
#define CGE_MODEL_PAIR_RULE	"need model_idle_mw <= model_busy_mw <= 10000000"

/**
 * struct cge_model - model state of one group of CPUs (one package)
 * @rem: energy not yet reported, in 10^-6 µJ (mW * ns), always < 10^6
 */
struct cge_model {
	u64 rem;
};

int cge_model_validate(u32 idle_mw, u32 busy_mw);
u64 cge_model_energy_uj(struct cge_model *m, u32 idle_mw, u32 busy_mw,
			u64 capacity_ns, u64 busy_ns);

#endif /* CGE_MODEL_H */
