/* SPDX-License-Identifier: GPL-2.0 */
/*
 * source.h - where each package's energy comes from: RAPL counters, or the
 * power model where there are none (VMs).
 */
#ifndef CGE_SOURCE_H
#define CGE_SOURCE_H

#include <linux/types.h>
#include <linux/cpumask.h>

#include "rapl_decode.h"

/* A package: what one set of RAPL counters covers (topo.c). */
struct cge_pkg {
	unsigned int id;		/* index in the package array */
	struct cpumask cpus;		/* CPUs mapped to it since load */
	struct cge_rapl_counter ctr[CGE_DOM_NR];
	unsigned int read_cpu;		/* where its counters are read */
	bool stale;			/* had no online CPU: resync first */
	bool uninit;			/* ... and was never set up */
	u64 model_rem;			/* struct cge_model state */
};

/* One sample's energy of one package, µJ. */
struct cge_energy {
	u64 headline_uj;		/* package + DRAM, or the model */
	u64 dom_uj[CGE_DOM_NR];
};

/* Read-only: what differs between machines is decided at detection. */
struct cge_source {
	const char *name;
	/* BIT(CGE_DOM_*) measured */
	unsigned long (*domains)(void);
	/*
	 * Energy of @pkg since the previous call. @capacity_ns is the CPU
	 * time the package's CPUs were tracked for, @busy_ns the part they
	 * were busy (tasks, interrupts, softirqs; not steal). Process
	 * context.
	 */
	void (*read)(struct cge_pkg *pkg, u64 capacity_ns, u64 busy_ns,
		     struct cge_energy *out);
	/*
	 * Set up a package's counters: at load, and for a package first
	 * seen when its CPUs came online. Process context.
	 */
	void (*init_pkg)(struct cge_pkg *pkg);
	/* Start the counters afresh (after resume): no delta from before. */
	void (*resync)(struct cge_pkg *pkg);
	/*
	 * Per-core energy (AMD), or all NULL; it is the CGE_DOM_CORE domain.
	 * read_core() reads the counter of @cpu's core, in a cross-call if
	 * @cpu is not this CPU. core_delta()
	 * turns a raw value of core @core into µJ since its previous value;
	 * core_resync() makes the next value of every core start afresh.
	 */
	int (*read_core)(unsigned int cpu, u64 *raw);
	u64 (*core_delta)(unsigned int core, u64 raw);
	void (*core_resync)(void);
};

/*
 * Health counters, shown in energy.info. isolated_cpu_reads: cross-calls
 * that read counters on an isolated CPU (a package none of whose online
 * CPUs is left to housekeeping); isolated_core_skips: samples in which a
 * due read of a per-core counter was left out, its core's CPUs all
 * isolated.
 */
struct cge_source_health {
	u64 read_errors;
	u64 wraps;
	u64 resyncs;
	u64 isolated_cpu_reads;
	u64 isolated_core_skips;
};

extern const struct cge_source cge_model_source;
extern struct cge_source_health cge_source_health;

const struct cge_source *cge_rapl_detect(unsigned int cpu, bool any_model);
void cge_rapl_exit(void);
const char *cge_rapl_vendor(void);
u32 cge_rapl_unit_esu(void);
u32 cge_rapl_domain_unit_esu(int d);

#endif /* CGE_SOURCE_H */
