// SPDX-License-Identifier: GPL-2.0
/*
 * emu.c - emulated RAPL hardware for the test build (make CGE_EMU=y).
 *
 * It answers the RAPL MSR reads, the one boundary the module does not own,
 * so that detection, reading, decoding and the split run unchanged on the
 * test guests' QEMU CPU models. Its energy follows what the machine does,
 * from a source that is not the module's probe: each CPU's busy time as the
 * kernel accounts it (kernel_cpustat, what /proc/stat shows), with per-CPU
 * idle and busy power set at load. A test can change a CPU's busy power at
 * any time (debugfs cgroup_energy_emu/busy_mw): then energy is no longer
 * proportional to busy time, and the module's split of it can be wrong. It
 * keeps what it emitted and what it returned, per package and domain, per
 * core (AMD) and per CPU, in debugfs (cgroup_energy_emu/truth), the
 * reference the tests compare with.
 *
 * Like real parts, its counters restart from 0 when the system resumes
 * from suspend; on request it faults reads or reads a domain as 0.
 *
 * The counters advance in steps of 2^(esu - 6) units: 15.625 mJ, a whole
 * number of µJ for every unit, so the module's µJ totals can be compared
 * with what it read to the µJ. Energy below a step is carried, never lost;
 * the module's own carry of sub-µJ remainders is tested in KUnit.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": emu: " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/kernel_stat.h>
#include <linux/cpumask.h>
#include <linux/topology.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/math64.h>
#include <linux/platform_device.h>
#include <linux/pm.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "emu.h"

/* Intel SDM vol. 4, "MSRs in the 2nd Generation Intel Core Processor". */
#define CGE_EMU_MSR_UNIT	0x606
#define CGE_EMU_MSR_PKG		0x611
#define CGE_EMU_MSR_DRAM	0x619
#define CGE_EMU_MSR_PP0		0x639
#define CGE_EMU_MSR_PP1		0x641
#define CGE_EMU_MSR_PSYS	0x64d
/*
 * AMD PPR for family 17h model 31h (pub. 55803), MSRC001_0299 RAPL_PWR_UNIT,
 * MSRC001_029A CORE_ENERGY_STAT (per core), MSRC001_029B PKG_ENERGY_STAT;
 * the kernel's arch/x86/events/rapl.c and drivers/powercap/intel_rapl_msr.c
 * read the same.
 */
#define CGE_EMU_MSR_AMD_UNIT	0xc0010299
#define CGE_EMU_MSR_AMD_CORE	0xc001029a
#define CGE_EMU_MSR_AMD_PKG	0xc001029b

enum cge_emu_dom {
	CGE_EMU_PKG,
	CGE_EMU_PP0,
	CGE_EMU_PP1,
	CGE_EMU_DRAM,
	CGE_EMU_PSYS,
	CGE_EMU_DOM_NR
};

static const char * const cge_emu_dom_name[CGE_EMU_DOM_NR] = {
	"package", "core", "uncore", "dram", "psys",
};

/**
 * struct cge_emu_profile - one kind of part
 * @name: emu_profile= value
 * @unit_msr: the unit register
 * @unit: its value
 * @msr: each domain's energy counter register
 * @esu: each domain's energy unit, 2^-esu J; 0: the domain is absent (its
 *	 register faults, as an unimplemented MSR does)
 * @per_core: the core domain (PP0) has one counter per physical core
 * @die_scope: one package counter set per die, not per package
 * @uncore_mw: package power beside the cores, of the first package; the
 *	       k-th (from 0) has k + 1 times that, so packages differ
 * @pp1_mw: uncore (PP1, graphics) power, per package
 * @dram_mw: DRAM power at rest, per package
 * @dram_busy_mw: DRAM power added per busy CPU
 * @platform_mw: platform power beside the packages (PSYS)
 */
struct cge_emu_profile {
	const char *name;
	u32 unit_msr;
	u64 unit;
	u32 msr[CGE_EMU_DOM_NR];
	u32 esu[CGE_EMU_DOM_NR];
	bool per_core, die_scope;
	u32 uncore_mw, pp1_mw, dram_mw, dram_busy_mw, platform_mw;
};

#define CGE_EMU_INTEL_MSRS { \
	[CGE_EMU_PKG] = CGE_EMU_MSR_PKG, [CGE_EMU_PP0] = CGE_EMU_MSR_PP0, \
	[CGE_EMU_PP1] = CGE_EMU_MSR_PP1, [CGE_EMU_DRAM] = CGE_EMU_MSR_DRAM, \
	[CGE_EMU_PSYS] = CGE_EMU_MSR_PSYS }

/*
 * Intel: unit register 0xA0E03 (power 1/8 W, energy 2^-14 J, time 2^-10 s):
 * the value Intel's client and server parts since Sandy Bridge report (SDM
 * vol. 3B, 15.10.1; the kernel's intel_rapl_common.c decodes the same
 * fields). Multi-die parts (Cascade Lake-AP) have a package counter set per
 * die: the kernel's perf rapl.c and intel_rapl_common.c key them by
 * topology_logical_die_id().
 *
 * AMD: unit register 0xA1003 (power 1/8 W, energy 2^-16 J, time 2^-10 s),
 * its reset value in the PPR for family 17h model 31h (MSRC001_0299). The
 * package counter is per package whatever the dies: the kernel's perf
 * rapl.c scopes AMD and Hygon by package since "perf/x86/rapl: Fix the
 * energy-pkg event for AMD CPUs" (v6.12), its die id being the CCD.
 */
static const struct cge_emu_profile cge_emu_profiles[] = {
	{
		/*
		 * A client part (QEMU -cpu Skylake-Client): package, cores
		 * (PP0), uncore (PP1) and platform (PSYS), all in the
		 * register's unit; no DRAM domain.
		 */
		.name = "intel-client",
		.unit_msr = CGE_EMU_MSR_UNIT, .unit = 0xA0E03,
		.msr = CGE_EMU_INTEL_MSRS,
		.esu = { [CGE_EMU_PKG] = 14, [CGE_EMU_PP0] = 14,
			 [CGE_EMU_PP1] = 14, [CGE_EMU_PSYS] = 14 },
		.die_scope = true,
		.uncore_mw = 2000, .pp1_mw = 300, .platform_mw = 4000,
	},
	{
		/*
		 * A Skylake-SP/Cascade Lake server (QEMU -cpu
		 * Cascadelake-Server, -smp sockets=2): package and DRAM. Its
		 * DRAM counts in 2^-16 J whatever the unit register says
		 * (Intel Xeon Scalable datasheet vol. 2; the kernel's perf
		 * rapl.c and intel_rapl_common.c apply the same fixed unit).
		 */
		.name = "intel-server",
		.unit_msr = CGE_EMU_MSR_UNIT, .unit = 0xA0E03,
		.msr = CGE_EMU_INTEL_MSRS,
		.esu = { [CGE_EMU_PKG] = 14, [CGE_EMU_DRAM] = 16 },
		.die_scope = true,
		.uncore_mw = 15000, .dram_mw = 3000, .dram_busy_mw = 500,
	},
	{
		/*
		 * A Zen 2 EPYC (QEMU -cpu EPYC-Rome, family 17h model 31h):
		 * a package counter and a counter per physical core (shared
		 * by its SMT siblings), nothing else.
		 */
		.name = "amd-zen",
		.unit_msr = CGE_EMU_MSR_AMD_UNIT, .unit = 0xA1003,
		.msr = { [CGE_EMU_PKG] = CGE_EMU_MSR_AMD_PKG,
			 [CGE_EMU_PP0] = CGE_EMU_MSR_AMD_CORE },
		.esu = { [CGE_EMU_PKG] = 16, [CGE_EMU_PP0] = 16 },
		.per_core = true,
		.uncore_mw = 10000,
	},
};

static char *emu_profile = "intel-client";
module_param(emu_profile, charp, 0444);
MODULE_PARM_DESC(emu_profile, "test build: emulated RAPL part (intel-client, intel-server, amd-zen)");
static unsigned int emu_idle_mw = 1000;
module_param(emu_idle_mw, uint, 0444);
MODULE_PARM_DESC(emu_idle_mw, "test build: emulated power of an idle CPU, mW");
static unsigned int emu_busy_mw = 8000;
module_param(emu_busy_mw, uint, 0444);
MODULE_PARM_DESC(emu_busy_mw, "test build: emulated power of a busy CPU, mW");
#define CGE_EMU_MAX_CPU_MW	256
static unsigned int emu_cpu_busy_mw[CGE_EMU_MAX_CPU_MW];
static int cge_emu_ncpu_mw;
module_param_array(emu_cpu_busy_mw, uint, &cge_emu_ncpu_mw, 0444);
MODULE_PARM_DESC(emu_cpu_busy_mw, "test build: emulated power of each busy CPU by CPU number, mW (default emu_busy_mw)");
static unsigned int emu_scale = 1;
module_param(emu_scale, uint, 0444);
MODULE_PARM_DESC(emu_scale, "test build: multiply all emulated power (fast counter wraps), 1-10000");
static char *emu_zero;
module_param(emu_zero, charp, 0444);
MODULE_PARM_DESC(emu_zero, "test build: this domain's register reads 0 (package, core, uncore, dram, psys)");
static unsigned int emu_fail_every;
module_param(emu_fail_every, uint, 0444);
MODULE_PARM_DESC(emu_fail_every, "test build: every N-th energy counter read fails with -EIO (0: none)");

#define CGE_EMU_MAX_PKG		8
#define CGE_EMU_MAX_MW		100000
#define CGE_EMU_MAX_SCALE	10000
/* Counters start near the top, as on a machine up for a while: they wrap. */
#define CGE_EMU_START		0xF0000000ULL
#define CGE_EMU_RAW_MASK	0xffffffffULL
/* pJ per joule over 2^12: 1e12 = 2^12 * 5^12 */
#define CGE_EMU_5_12		244140625ULL

/**
 * struct cge_emu_ctr - one energy counter register
 * @units: emitted since load, whole units, unwrapped (from CGE_EMU_START)
 * @rem: emitted below a unit, in 2^(esu-12) pJ
 * @read: @units at the last good read, rounded down to the counter step
 * @reads: good reads
 * @max_step: the largest advance of @read from one good read to the next:
 *	      2^32 or more is a wrap no reader could see
 * @base: @units at the last restart, rounded down to the step; the
 *	  register holds (@read - @base) mod 2^32
 * @restarts: restarts at resume
 * @gap_from: @read before a restart not yet followed by a read
 * @gap_open: @gap_from is set
 * @gap: units between the last read before each restart and the first read
 *	 after it, summed
 * @failed: reads that faulted by emu_fail_every
 */
struct cge_emu_ctr {
	u64 units, rem, read, reads, max_step, base;
	u64 restarts, gap_from, gap, failed;
	bool gap_open;
};

/**
 * struct cge_emu_pkg - the counters of one package (or die, @die_scope)
 * @id: topology_physical_package_id()
 * @die: topology_die_id() if the profile is die-scoped, else 0
 * @ctr: its counters, by domain (PSYS: cge_emu_psys)
 */
struct cge_emu_pkg {
	int id, die;
	struct cge_emu_ctr ctr[CGE_EMU_DOM_NR];
};

/**
 * struct cge_emu_core - the counter of one physical core (@per_core)
 * @pkg: its package, an index in cge_emu_pkgs
 * @die: topology_die_id()
 * @id: topology_core_id()
 * @first: its lowest CPU number seen so far
 * @remote: reads asked for from a CPU that is not one of its own (an IPI)
 * @ctr: the counter
 */
struct cge_emu_core {
	int pkg, die, id;
	unsigned int first;
	u64 remote;
	struct cge_emu_ctr ctr;
};

/**
 * struct cge_emu_cpu - what the emulator knows of one CPU
 * @pkg: its package, an index in cge_emu_pkgs; -1 before it was first seen
 *	 online
 * @core: its core, an index in cge_emu_cores (@per_core)
 * @busy_mw: its busy power
 * @busy_ns: kernel_cpustat busy time at the last advance
 * @busy_total: busy time since it was first seen
 * @uj: its energy (idle and dynamic, scaled) since it was first seen, µJ
 * @pj_rem: the part of it below a µJ, pJ
 * @reads_here: cross-calls that read registers on it (the module's reads
 *	executed there, wherever they were asked from)
 */
struct cge_emu_cpu {
	int pkg, core;
	u32 busy_mw;
	u64 busy_ns, busy_total, uj, pj_rem;
	u64 reads_here;
};

static const struct cge_emu_profile *cge_emu_p;
static int cge_emu_zero_dom = -1;
/*
 * raw: every read runs in a cross-call's function (cge_emu_read_here()),
 * hardirq even on RT.
 * Each read brings every online CPU up to date under it, IRQs off: fine
 * for a test build of a few CPUs, not for production.
 */
static DEFINE_RAW_SPINLOCK(cge_emu_lock);
/* packages in the order they were first seen */
static struct cge_emu_pkg cge_emu_pkgs[CGE_EMU_MAX_PKG];
static unsigned int cge_emu_npkg;
static struct cge_emu_ctr cge_emu_psys;
static struct cge_emu_core *cge_emu_cores;
static unsigned int cge_emu_ncore;
static struct cge_emu_cpu *cge_emu_cpus;
static u64 cge_emu_last_ns;
static u64 cge_emu_counter_reads;
static struct dentry *cge_emu_dir;
static struct platform_device *cge_emu_pdev;

static void cge_emu_ctr_init(struct cge_emu_ctr *c)
{
	memset(c, 0, sizeof(*c));
	c->units = CGE_EMU_START;
	c->read = CGE_EMU_START;
}

/* The slot of package (@id, @die), appended if new; -1 if full. */
static int cge_emu_pkg_slot(int id, int die)
{
	unsigned int k;
	int d;

	for (k = 0; k < cge_emu_npkg; k++)
		if (cge_emu_pkgs[k].id == id && cge_emu_pkgs[k].die == die)
			return k;
	if (cge_emu_npkg == CGE_EMU_MAX_PKG) {
		pr_warn_once("more than %u packages: the others have no counters\n",
			     CGE_EMU_MAX_PKG);
		return -1;
	}
	/* appended: a package keeps its number, and its uncore power */
	cge_emu_npkg++;
	cge_emu_pkgs[k].id = id;
	cge_emu_pkgs[k].die = die;
	for (d = 0; d < CGE_EMU_DOM_NR; d++)
		cge_emu_ctr_init(&cge_emu_pkgs[k].ctr[d]);
	return k;
}

/* The slot of @cpu's physical core, added if new. */
static int cge_emu_core_slot(unsigned int cpu, int pkg)
{
	int die = topology_die_id(cpu), id = topology_core_id(cpu);
	struct cge_emu_core *co;
	unsigned int i;

	for (i = 0; i < cge_emu_ncore; i++) {
		co = &cge_emu_cores[i];
		if (co->pkg == pkg && co->die == die && co->id == id) {
			co->first = min(co->first, cpu);
			return i;
		}
	}
	co = &cge_emu_cores[cge_emu_ncore];
	co->pkg = pkg;
	co->die = die;
	co->id = id;
	co->first = cpu;
	co->remote = 0;
	cge_emu_ctr_init(&co->ctr);
	return cge_emu_ncore++;
}

/*
 * @cpu is online for the first time since load: its package and core from
 * its topology now (a CPU offline at load counts in its real package).
 */
static void cge_emu_see(unsigned int cpu, u64 busy)
{
	struct cge_emu_cpu *c = &cge_emu_cpus[cpu];
	int die = cge_emu_p->die_scope ? topology_die_id(cpu) : 0;
	int pk = cge_emu_pkg_slot(topology_physical_package_id(cpu), die);

	if (pk < 0)
		return;
	c->pkg = pk;
	if (cge_emu_p->per_core)
		c->core = cge_emu_core_slot(cpu, pk);
	c->busy_mw = (int)cpu < cge_emu_ncpu_mw ? emu_cpu_busy_mw[cpu] :
		     emu_busy_mw;
	c->busy_ns = busy;
}

/* The kernel's busy time of @cpu: everything /proc/stat does not call idle. */
static u64 cge_emu_busy_ns(unsigned int cpu)
{
	struct kernel_cpustat kcs;

	kcpustat_cpu_fetch(&kcs, cpu);
	return kcs.cpustat[CPUTIME_USER] + kcs.cpustat[CPUTIME_NICE] +
	       kcs.cpustat[CPUTIME_SYSTEM] + kcs.cpustat[CPUTIME_IRQ] +
	       kcs.cpustat[CPUTIME_SOFTIRQ];
}

/* Add @pj to a counter of unit 2^-@esu J (12 <= @esu <= 20). */
static void cge_emu_emit(struct cge_emu_ctr *c, u32 esu, u64 pj)
{
	/* in chunks that cannot overflow once shifted */
	u64 chunk_max = U64_MAX >> (esu - 12 + 1), chunk, v;

	while (pj) {
		chunk = min(pj, chunk_max);
		pj -= chunk;
		v = (chunk << (esu - 12)) + c->rem;
		c->units += div64_u64_rem(v, CGE_EMU_5_12, &c->rem);
	}
}

/*
 * @cpu's energy over the last @dt ns: into its own total and its core's
 * counter; returns it unscaled, its busy time in @busy.
 */
static u64 cge_emu_cpu_advance(unsigned int cpu, u64 dt, u64 *busy)
{
	struct cge_emu_cpu *c = &cge_emu_cpus[cpu];
	u64 now = cge_emu_busy_ns(cpu), b, pj;
	u32 rem;

	*busy = 0;
	if (c->pkg < 0)
		return 0;
	/*
	 * Busy time beyond the interval (a tick of 1/HZ landing in the short
	 * gap between two reads) is carried to the next, not dropped: over
	 * time the CPU draws its busy power for all of its busy time.
	 */
	b = min(now - c->busy_ns, dt);
	c->busy_ns += b;
	c->busy_total += b;
	pj = (u64)emu_idle_mw * dt + (u64)(c->busy_mw - emu_idle_mw) * b;
	c->uj += div_u64_rem(pj * emu_scale + c->pj_rem, 1000000, &rem);
	c->pj_rem = rem;
	if (cge_emu_p->per_core)
		cge_emu_emit(&cge_emu_cores[c->core].ctr,
			     cge_emu_p->esu[CGE_EMU_PP0], pj * emu_scale);
	*busy = b;
	return pj;
}

/* Package @k's energy over @dt ns, its CPUs' @cpu_pj and @busy ns in it. */
static void cge_emu_pkg_advance(unsigned int k, u64 dt, u64 cpu_pj, u64 busy)
{
	const struct cge_emu_profile *p = cge_emu_p;
	struct cge_emu_ctr *c = cge_emu_pkgs[k].ctr;

	cge_emu_emit(&c[CGE_EMU_PKG], p->esu[CGE_EMU_PKG],
		     (cpu_pj + (u64)p->uncore_mw * (k + 1) * dt) * emu_scale);
	if (p->esu[CGE_EMU_PP0] && !p->per_core)
		cge_emu_emit(&c[CGE_EMU_PP0], p->esu[CGE_EMU_PP0],
			     cpu_pj * emu_scale);
	if (p->esu[CGE_EMU_PP1])
		cge_emu_emit(&c[CGE_EMU_PP1], p->esu[CGE_EMU_PP1],
			     (u64)p->pp1_mw * dt * emu_scale);
	if (p->esu[CGE_EMU_DRAM])
		cge_emu_emit(&c[CGE_EMU_DRAM], p->esu[CGE_EMU_DRAM],
			     ((u64)p->dram_mw * dt +
			      (u64)p->dram_busy_mw * busy) * emu_scale);
}

/* Energy of everything since the last call, into the counters. */
static void cge_emu_advance(void)
{
	const struct cge_emu_profile *p = cge_emu_p;
	u64 cpu_pj[CGE_EMU_MAX_PKG] = { 0 }, busy_ns[CGE_EMU_MAX_PKG] = { 0 };
	u64 now = ktime_get_ns(), dt, pj, b, total_pkg = 0;
	unsigned int cpu, k;
	int pk;

	dt = now - cge_emu_last_ns;
	cge_emu_last_ns = now;
	for_each_online_cpu(cpu) {
		pj = cge_emu_cpu_advance(cpu, dt, &b);
		pk = cge_emu_cpus[cpu].pkg;
		if (pk >= 0) {
			cpu_pj[pk] += pj;
			busy_ns[pk] += b;
		}
	}
	/* new CPUs count from the next call (a new package moves the slots) */
	for_each_online_cpu(cpu)
		if (cge_emu_cpus[cpu].pkg < 0)
			cge_emu_see(cpu, cge_emu_busy_ns(cpu));
	for (k = 0; k < cge_emu_npkg; k++) {
		cge_emu_pkg_advance(k, dt, cpu_pj[k], busy_ns[k]);
		total_pkg += cpu_pj[k] + (u64)p->uncore_mw * (k + 1) * dt;
	}
	/* The platform: every package, the uncore, the rest of the board. */
	if (p->esu[CGE_EMU_PSYS])
		cge_emu_emit(&cge_emu_psys, p->esu[CGE_EMU_PSYS],
			     (total_pkg + (u64)(p->pp1_mw * cge_emu_npkg +
						p->platform_mw) * dt) *
			     emu_scale);
}

/* The counter register @msr as read on @cpu, its domain in @dom. */
static struct cge_emu_ctr *cge_emu_find(unsigned int cpu, u32 msr, int *dom)
{
	const struct cge_emu_profile *p = cge_emu_p;
	struct cge_emu_cpu *c = &cge_emu_cpus[cpu];
	int d;

	for (d = 0; d < CGE_EMU_DOM_NR; d++)
		if (p->msr[d] == msr && p->esu[d])
			break;
	*dom = d;
	if (d == CGE_EMU_PSYS)
		return &cge_emu_psys;
	if (d == CGE_EMU_DOM_NR || c->pkg < 0)
		return NULL;
	if (d == CGE_EMU_PP0 && p->per_core)
		return &cge_emu_cores[c->core].ctr;
	return &cge_emu_pkgs[c->pkg].ctr[d];
}

/* A read of @c; every emu_fail_every-th read faults, returning nothing. */
static int cge_emu_read(struct cge_emu_ctr *c, u32 esu, u64 *val)
{
	u64 prev = c->read;

	if (emu_fail_every && ++cge_emu_counter_reads % emu_fail_every == 0) {
		c->failed++;
		return -EIO;
	}
	c->read = round_down(c->units, 1ULL << (esu - 6));
	c->reads++;
	c->max_step = max(c->max_step, c->read - prev);
	if (c->gap_open) {
		c->gap += c->read - c->gap_from;
		c->gap_open = false;
	}
	*val = (c->read - c->base) & CGE_EMU_RAW_MASK;
	return 0;
}

/* A read of the per-core counter @c asked for from CPU @from. */
static void cge_emu_count_remote(struct cge_emu_ctr *c, unsigned int from)
{
	struct cge_emu_core *co = container_of(c, struct cge_emu_core, ctr);

	if (cge_emu_cpus[from].pkg < 0 ||
	    &cge_emu_cores[cge_emu_cpus[from].core] != co)
		co->remote++;
}

/* One register read on this CPU, under cge_emu_lock. */
static int cge_emu_read_one(unsigned int from, u32 msr, u64 *val)
{
	const struct cge_emu_profile *p = cge_emu_p;
	struct cge_emu_ctr *c;
	int d;

	if (msr == p->unit_msr) {
		*val = p->unit;
		return 0;
	}
	c = cge_emu_find(smp_processor_id(), msr, &d);
	if (!c)
		return -EIO;
	if (d == CGE_EMU_PP0 && p->per_core)
		cge_emu_count_remote(c, from);
	if (d == cge_emu_zero_dom) {
		*val = 0;
		return 0;
	}
	return cge_emu_read(c, p->esu[d], val);
}

/**
 * cge_emu_read_here - read emulated RAPL registers on this CPU
 * @b: the registers, the CPU that asked for them; their values and errors
 *
 * As rdmsrq_safe() on each register, which it replaces: the module calls
 * it on the CPU whose registers it reads, IRQs off (a cross-call's
 * function, hardirq even on RT). An error is -EIO for a register the
 * profile does not have (real parts fault on it) or a read that
 * emu_fail_every faults.
 */
void cge_emu_read_here(struct cge_msr_batch *b)
{
	unsigned int i;

	raw_spin_lock(&cge_emu_lock);
	cge_emu_advance();
	cge_emu_cpus[smp_processor_id()].reads_here++;
	for (i = 0; i < b->n; i++)
		b->err[i] = cge_emu_read_one(b->from, b->msr[i], &b->val[i]);
	raw_spin_unlock(&cge_emu_lock);
}

/* After resume: the counter starts again from 0 at its last whole step. */
static void cge_emu_restart(struct cge_emu_ctr *c, u32 esu)
{
	c->base = round_down(c->units, 1ULL << (esu - 6));
	c->restarts++;
	if (!c->gap_open) {
		c->gap_from = c->read;
		c->gap_open = true;
	}
}

/*
 * Resume, before tasks thaw, in both suspend to idle and to RAM: every
 * counter restarts, after the energy up to now went in.
 */
static int cge_emu_resume_noirq(struct device *dev)
{
	const struct cge_emu_profile *p = cge_emu_p;
	unsigned long flags;
	unsigned int k, i;
	int d;

	raw_spin_lock_irqsave(&cge_emu_lock, flags);
	cge_emu_advance();
	for (d = 0; d < CGE_EMU_DOM_NR; d++) {
		if (!p->esu[d])
			continue;
		for (k = 0; k < cge_emu_npkg; k++)
			cge_emu_restart(&cge_emu_pkgs[k].ctr[d], p->esu[d]);
		if (d == CGE_EMU_PSYS)
			cge_emu_restart(&cge_emu_psys, p->esu[d]);
		for (i = 0; d == CGE_EMU_PP0 && i < cge_emu_ncore; i++)
			cge_emu_restart(&cge_emu_cores[i].ctr, p->esu[d]);
	}
	raw_spin_unlock_irqrestore(&cge_emu_lock, flags);
	return 0;
}

static const struct dev_pm_ops cge_emu_pm_ops = {
	.resume_noirq = cge_emu_resume_noirq,
};

static struct platform_driver cge_emu_driver = {
	.driver = {
		.name = "cgroup_energy_emu",
		.pm = &cge_emu_pm_ops,
	},
};

static void cge_emu_show_ctr(struct seq_file *m, struct cge_emu_ctr *c)
{
	seq_printf(m, "emitted %llu read %llu reads %llu max_step %llu",
		   c->units, c->read, c->reads, c->max_step);
}

static void cge_emu_show_faults(struct seq_file *m, struct cge_emu_ctr *c)
{
	seq_printf(m, " restarts %llu gap %llu failed %llu\n", c->restarts,
		   c->gap, c->failed);
}

/* The package counters a reader can see: present and not read as 0. */
static void cge_emu_show_pkgs(struct seq_file *m)
{
	const struct cge_emu_profile *p = cge_emu_p;
	struct cge_emu_ctr *c;
	unsigned int k;
	int d;

	for (k = 0; k < cge_emu_npkg; k++)
		for (d = 0; d < CGE_EMU_DOM_NR; d++) {
			if (!p->esu[d] || d == cge_emu_zero_dom ||
			    (d == CGE_EMU_PP0 && p->per_core) ||
			    (d == CGE_EMU_PSYS && k))
				continue;
			c = d == CGE_EMU_PSYS ? &cge_emu_psys :
			    &cge_emu_pkgs[k].ctr[d];
			seq_printf(m, "pkg %u %s esu %u ", k,
				   cge_emu_dom_name[d], p->esu[d]);
			cge_emu_show_ctr(m, c);
			cge_emu_show_faults(m, c);
		}
}

/* The per-core counters, by their lowest CPU number. */
static void cge_emu_show_cores(struct seq_file *m)
{
	struct cge_emu_core *co;
	unsigned int cpu;

	if (!cge_emu_p->per_core || cge_emu_zero_dom == CGE_EMU_PP0)
		return;
	for_each_possible_cpu(cpu) {
		if (cge_emu_cpus[cpu].pkg < 0)
			continue;
		co = &cge_emu_cores[cge_emu_cpus[cpu].core];
		if (co->first != cpu)
			continue;
		seq_printf(m, "core %u esu %u ", cpu,
			   cge_emu_p->esu[CGE_EMU_PP0]);
		cge_emu_show_ctr(m, &co->ctr);
		seq_printf(m, " remote %llu", co->remote);
		cge_emu_show_faults(m, &co->ctr);
	}
}

/*
 * debugfs cgroup_energy_emu/truth, as of now (counters in units, unwrapped;
 * packages numbered in the order their first CPU was seen online):
 *   profile NAME
 *   pkg K DOMAIN esu E emitted X read Y reads Z max_step S restarts R gap G
 *	failed F
 *   core C esu E emitted X read Y reads Z max_step S remote M restarts R
 *	gap G failed F
 *   cpu N pkg K busy_ns B uj U reads_here H
 * core: per-core counters, C its lowest CPU; cpu: each online CPU's busy
 * time and energy (idle and dynamic, scaled) since it was first seen.
 */
static int cge_emu_truth_show(struct seq_file *m, void *v)
{
	struct cge_emu_cpu *c;
	unsigned long flags;
	unsigned int cpu;

	raw_spin_lock_irqsave(&cge_emu_lock, flags);
	cge_emu_advance();
	seq_printf(m, "profile %s\n", cge_emu_p->name);
	cge_emu_show_pkgs(m);
	cge_emu_show_cores(m);
	for_each_online_cpu(cpu) {
		c = &cge_emu_cpus[cpu];
		if (c->pkg >= 0)
			seq_printf(m, "cpu %u pkg %d busy_ns %llu uj %llu reads_here %llu\n",
				   cpu, c->pkg, c->busy_total, c->uj,
				   c->reads_here);
	}
	raw_spin_unlock_irqrestore(&cge_emu_lock, flags);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(cge_emu_truth);

/* debugfs cgroup_energy_emu/busy_mw: "CPU MW" a line, each CPU seen online. */
static int cge_emu_busy_show(struct seq_file *m, void *v)
{
	unsigned long flags;
	unsigned int cpu;

	raw_spin_lock_irqsave(&cge_emu_lock, flags);
	for_each_possible_cpu(cpu)
		if (cge_emu_cpus[cpu].pkg >= 0)
			seq_printf(m, "%u %u\n", cpu, cge_emu_cpus[cpu].busy_mw);
	raw_spin_unlock_irqrestore(&cge_emu_lock, flags);
	return 0;
}

static int cge_emu_busy_open(struct inode *inode, struct file *file)
{
	return single_open(file, cge_emu_busy_show, NULL);
}

/*
 * Writing "CPU MW" (one write, from the start) sets that CPU's busy power
 * from now on: the energy up to now is counted at the power before. A CPU
 * not seen online since load, or a power outside emu_idle_mw to
 * CGE_EMU_MAX_MW, is refused with -EINVAL and changes nothing.
 */
static ssize_t cge_emu_busy_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	char buf[32], *rest, *word;
	unsigned int cpu, mw;
	unsigned long flags;
	ssize_t ret = len;

	if (*ppos || !len || len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	rest = strim(buf);
	word = strsep(&rest, " \t");
	if (!rest || kstrtouint(word, 10, &cpu) ||
	    kstrtouint(strim(rest), 10, &mw) || cpu >= nr_cpu_ids ||
	    !cpu_possible(cpu) || mw < emu_idle_mw || mw > CGE_EMU_MAX_MW)
		return -EINVAL;
	raw_spin_lock_irqsave(&cge_emu_lock, flags);
	if (cge_emu_cpus[cpu].pkg < 0) {
		ret = -EINVAL;
	} else {
		cge_emu_advance();
		cge_emu_cpus[cpu].busy_mw = mw;
	}
	raw_spin_unlock_irqrestore(&cge_emu_lock, flags);
	return ret;
}

static const struct file_operations cge_emu_busy_fops = {
	.owner = THIS_MODULE,
	.open = cge_emu_busy_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.write = cge_emu_busy_write,
	.release = single_release,
};

/* The parameters: a profile, powers in range, a known domain to zero. */
static int cge_emu_params(void)
{
	unsigned int i;
	int d;

	for (i = 0; i < ARRAY_SIZE(cge_emu_profiles); i++)
		if (!strcmp(emu_profile, cge_emu_profiles[i].name))
			cge_emu_p = &cge_emu_profiles[i];
	if (!cge_emu_p) {
		pr_err("emu_profile=%s: no such profile\n", emu_profile);
		return -EINVAL;
	}
	if (emu_busy_mw < emu_idle_mw || emu_busy_mw > CGE_EMU_MAX_MW ||
	    !emu_scale || emu_scale > CGE_EMU_MAX_SCALE) {
		pr_err("emu_idle_mw <= emu_busy_mw <= %u and 1 <= emu_scale <= %u\n",
		       CGE_EMU_MAX_MW, CGE_EMU_MAX_SCALE);
		return -EINVAL;
	}
	for (i = 0; i < (unsigned int)cge_emu_ncpu_mw; i++)
		if (emu_cpu_busy_mw[i] < emu_idle_mw ||
		    emu_cpu_busy_mw[i] > CGE_EMU_MAX_MW) {
			pr_err("emu_cpu_busy_mw: CPU %u: %u mW is not in emu_idle_mw (%u) to %u\n",
			       i, emu_cpu_busy_mw[i], emu_idle_mw,
			       CGE_EMU_MAX_MW);
			return -EINVAL;
		}
	if (!emu_zero)
		return 0;
	d = match_string(cge_emu_dom_name, CGE_EMU_DOM_NR, emu_zero);
	if (d < 0) {
		pr_err("emu_zero=%s: not a domain (package, core, uncore, dram, psys)\n",
		       emu_zero);
		return -EINVAL;
	}
	cge_emu_zero_dom = d;
	return 0;
}

/* The device whose resume restarts the counters. */
static int cge_emu_register_pm(void)
{
	int ret = platform_driver_register(&cge_emu_driver);

	if (ret)
		return ret;
	cge_emu_pdev = platform_device_register_simple(cge_emu_driver.driver.name,
						       PLATFORM_DEVID_NONE,
						       NULL, 0);
	if (IS_ERR(cge_emu_pdev)) {
		platform_driver_unregister(&cge_emu_driver);
		return PTR_ERR(cge_emu_pdev);
	}
	return 0;
}

int cge_emu_init(void)
{
	unsigned int cpu;
	int ret = cge_emu_params();

	if (ret)
		return ret;
	cge_emu_cpus = kcalloc(nr_cpu_ids, sizeof(*cge_emu_cpus), GFP_KERNEL);
	cge_emu_cores = kcalloc(nr_cpu_ids, sizeof(*cge_emu_cores),
				GFP_KERNEL);
	if (!cge_emu_cpus || !cge_emu_cores) {
		ret = -ENOMEM;
		goto err;
	}
	for_each_possible_cpu(cpu)
		cge_emu_cpus[cpu].pkg = -1;
	cge_emu_ctr_init(&cge_emu_psys);
	cge_emu_last_ns = ktime_get_ns();
	cge_emu_advance();
	ret = cge_emu_register_pm();
	if (ret)
		goto err;
	/* energy from no real counter: say so in the kernel's taint flags */
	add_taint(CGE_TAINT_EMU, LOCKDEP_STILL_OK);
	cge_emu_dir = debugfs_create_dir("cgroup_energy_emu", NULL);
	debugfs_create_file("truth", 0444, cge_emu_dir, NULL,
			    &cge_emu_truth_fops);
	debugfs_create_file("busy_mw", 0644, cge_emu_dir, NULL,
			    &cge_emu_busy_fops);
	pr_info("emulated RAPL: %s, %u packages, %u-%u mW per CPU, scale %u\n",
		cge_emu_p->name, cge_emu_npkg, emu_idle_mw, emu_busy_mw,
		emu_scale);
	return 0;
err:
	kfree(cge_emu_cores);
	kfree(cge_emu_cpus);
	return ret;
}

void cge_emu_exit(void)
{
	debugfs_remove_recursive(cge_emu_dir);
	platform_device_unregister(cge_emu_pdev);
	platform_driver_unregister(&cge_emu_driver);
	kfree(cge_emu_cores);
	kfree(cge_emu_cpus);
}
