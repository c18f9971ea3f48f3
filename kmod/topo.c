// SPDX-License-Identifier: GPL-2.0
/*
 * topo.c - group the CPUs into RAPL packages and physical cores.
 *
 * A package is what one set of RAPL counters covers, as the kernel's own
 * RAPL drivers (powercap intel_rapl, perf rapl) have it: a die on Intel,
 * where multi-die parts have a counter set per die (topology_logical_die_id()),
 * a package on AMD and Hygon (topology_logical_package_id()). A core is the
 * unit of AMD's per-core counter: the SMT siblings of one topology_core_id()
 * in a package.
 *
 * A CPU's topology is known once it has been online, so CPUs are mapped when
 * the sampler first sees them online (cge_topo_update()): a CPU offline at
 * load (maxcpus=, hotplug) joins its real package when it comes up, and
 * keeps its core's counter state across going offline and back.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/topology.h>
#include <asm/processor.h>

#include "compat.h"
#include "source.h"
#include "topo.h"

struct cge_pkg *cge_pkgs;
unsigned int cge_npkg;
struct cge_core *cge_cores;
unsigned int *cge_cpu_pkg;

static unsigned int cge_ncores;
static unsigned int *cge_cpu_core;
static int *cge_pkg_key;
/* CPUs online at the last update; scratch for the next one. */
static struct cpumask cge_mapped, cge_new;

static bool cge_topo_per_package(void)
{
	return boot_cpu_data.x86_vendor == X86_VENDOR_AMD ||
	       boot_cpu_data.x86_vendor == X86_VENDOR_HYGON;
}

/**
 * cge_topo_max_pkgs() - how many packages the machine can have
 *
 * As the kernel's RAPL drivers size their package arrays.
 *
 * Return: at least 1.
 */
unsigned int cge_topo_max_pkgs(void)
{
	unsigned int n = topology_max_packages();

	if (!cge_topo_per_package())
		n *= topology_max_dies_per_package();
	return max(n, 1U);
}

static unsigned int cge_topo_find_pkg(int key)
{
	unsigned int p;

	for (p = 0; p < cge_npkg; p++)
		if (cge_pkg_key[p] == key)
			return p;
	if (p == cge_topo_max_pkgs())
		pr_warn_once("more packages than the topology announced: the others' overflow charges are split with the first package\n");
	cge_pkg_key[p] = key;
	cge_pkgs[p].id = p;
	WRITE_ONCE(cge_npkg, cge_npkg + 1);
	return p;
}

static unsigned int cge_topo_find_core(unsigned int pkg, int key)
{
	unsigned int k;

	for (k = 0; k < cge_ncores; k++)
		if (cge_cores[k].pkg == pkg && cge_cores[k].key == key)
			return k;
	cge_cores[k].pkg = pkg;
	cge_cores[k].key = key;
	cge_ncores++;
	return k;
}

/* @cpu is online: put it in its package and core. */
static void cge_topo_map(unsigned int cpu)
{
	int key = cge_topo_per_package() ? topology_logical_package_id(cpu) :
					   topology_logical_die_id(cpu);
	unsigned int p = cge_topo_find_pkg(key), old = cge_cpu_pkg[cpu];

	if (old != CGE_TOPO_NONE && old != p)
		cpumask_clear_cpu(cpu, &cge_pkgs[old].cpus);
	cpumask_set_cpu(cpu, &cge_pkgs[p].cpus);
	WRITE_ONCE(cge_cpu_pkg[cpu], p);
	cge_cpu_core[cpu] = cge_topo_find_core(p, topology_core_id(cpu));
}

/**
 * cge_topo_update() - map the CPUs that came online since the last call
 *
 * Caller holds cpus_read_lock(), and cge_lock once the sampler runs.
 *
 * Return: the number of packages before the call; those from there to
 * cge_npkg are new, their counters not set up yet.
 */
unsigned int cge_topo_update(void)
{
	unsigned int before = cge_npkg, cpu;

	if (cpumask_andnot(&cge_new, cpu_online_mask, &cge_mapped))
		for_each_cpu(cpu, &cge_new)
			cge_topo_map(cpu);
	cpumask_copy(&cge_mapped, cpu_online_mask);
	return before;
}

/**
 * cge_topo_core() - the core @cpu belongs to
 * @cpu: a possible CPU
 *
 * Return: its index in cge_cores, CGE_TOPO_NONE if @cpu was never online.
 */
unsigned int cge_topo_core(unsigned int cpu)
{
	return cge_cpu_core[cpu];
}

int cge_topo_init(void)
{
	unsigned int cpu;

	/* a cpumask each: large with NR_CPUS=8192, need not be contiguous */
	cge_pkgs = kvcalloc(nr_cpu_ids, sizeof(*cge_pkgs), GFP_KERNEL);
	cge_cores = kcalloc(nr_cpu_ids, sizeof(*cge_cores), GFP_KERNEL);
	cge_cpu_pkg = kcalloc(nr_cpu_ids, sizeof(*cge_cpu_pkg), GFP_KERNEL);
	cge_cpu_core = kcalloc(nr_cpu_ids, sizeof(*cge_cpu_core), GFP_KERNEL);
	cge_pkg_key = kcalloc(nr_cpu_ids, sizeof(*cge_pkg_key), GFP_KERNEL);
	if (!cge_pkgs || !cge_cores || !cge_cpu_pkg || !cge_cpu_core ||
	    !cge_pkg_key) {
		cge_topo_exit();
		return -ENOMEM;
	}
	for (cpu = 0; cpu < nr_cpu_ids; cpu++) {
		cge_cpu_pkg[cpu] = CGE_TOPO_NONE;
		cge_cpu_core[cpu] = CGE_TOPO_NONE;
	}
	cpumask_clear(&cge_mapped);
	cpus_read_lock();
	cge_topo_update();
	cpus_read_unlock();
	return 0;
}

void cge_topo_exit(void)
{
	kfree(cge_pkg_key);
	kfree(cge_cpu_core);
	kfree(cge_cpu_pkg);
	kfree(cge_cores);
	kvfree(cge_pkgs);
}
