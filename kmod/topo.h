/* SPDX-License-Identifier: GPL-2.0 */
/*
 * topo.h - which RAPL package and which physical core each CPU belongs to.
 */
#ifndef CGE_TOPO_H
#define CGE_TOPO_H

#include <linux/types.h>
#include <linux/limits.h>
#include <linux/compiler.h>

struct cge_pkg;

/* No package or core known yet: the CPU has not been online since load. */
#define CGE_TOPO_NONE		UINT_MAX

/**
 * struct cge_core - one physical core: the unit of AMD's per-core counter
 * @pkg: package index
 * @key: topology_core_id() within the package
 * @unread_ns: CPU time of its CPUs since its counter was last read
 * @read_ns: when it was last read (CLOCK_MONOTONIC)
 * @skipped: a read was left out since, its CPUs all isolated: the next
 *	reading only starts the counter afresh
 */
struct cge_core {
	unsigned int pkg;
	int key;
	u64 unread_ns;
	u64 read_ns;
	bool skipped;
};

/* Sampler-owned, under cge_lock and cpus_read_lock(). */
extern struct cge_pkg *cge_pkgs;
extern unsigned int cge_npkg;
extern struct cge_core *cge_cores;
/* Each CPU's package index, CGE_TOPO_NONE before its first mapping. */
extern unsigned int *cge_cpu_pkg;

int cge_topo_init(void);
void cge_topo_exit(void);
unsigned int cge_topo_update(void);
unsigned int cge_topo_core(unsigned int cpu);
unsigned int cge_topo_max_pkgs(void);

/**
 * cge_topo_pkg() - @cpu's package index, for the probe's overflow path
 * @cpu: a possible CPU
 *
 * Lock-free: a CPU online since load keeps its index until it is online
 * again with another topology, which only a physical replacement gives.
 *
 * Return: the index, 0 if @cpu has not been mapped yet.
 */
static inline unsigned int cge_topo_pkg(unsigned int cpu)
{
	unsigned int p = READ_ONCE(cge_cpu_pkg[cpu]);

	return p == CGE_TOPO_NONE ? 0 : p;
}

#endif /* CGE_TOPO_H */
