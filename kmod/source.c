// SPDX-License-Identifier: GPL-2.0
/*
 * source.c - the power model source: per CPU
 * P = idle_mw + (busy_mw - idle_mw) * busy_fraction (see model.c).
 */
#include <linux/kernel.h>

#include "source.h"
#include "model.h"
#include "params.h"

struct cge_source_health cge_source_health;

static void cge_model_read(struct cge_pkg *pkg, u64 capacity_ns, u64 busy_ns,
			   struct cge_energy *out)
{
	struct cge_model m = { .rem = pkg->model_rem };
	u32 idle = READ_ONCE(cge_model_idle_mw);
	u32 busy = READ_ONCE(cge_model_busy_mw);

	/* The setters keep idle <= busy; a racing pair of writes may not. */
	if (busy < idle)
		busy = idle;
	memset(out, 0, sizeof(*out));
	out->headline_uj = cge_model_energy_uj(&m, idle, busy, capacity_ns,
					       busy_ns);
	pkg->model_rem = m.rem;
}

/* No counters: init_pkg and resync have nothing to do. */
static void cge_model_nop(struct cge_pkg *pkg)
{
}

static unsigned long cge_model_domains(void)
{
	return 0;
}

const struct cge_source cge_model_source = {
	.name = "model",
	.domains = cge_model_domains,
	.read = cge_model_read,
	.init_pkg = cge_model_nop,
	.resync = cge_model_nop,
};
