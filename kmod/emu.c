// SPDX-License-Identifier: GPL-2.0
/*
 * emu.c - emulated RAPL hardware for the test build (make CGE_EMU=y).
 *
 * It answers the RAPL MSR reads, the one boundary the module does not own,
 * so that detection, reading, decoding and the split run unchanged on the
 * test guests' QEMU CPU models. Its energy follows what the machine does,
 * from a source that is not the module's probe: each CPU's busy time as the
 * kernel accounts it (kernel_cpustat, what /proc/stat shows), with per-CPU
 * idle and busy power set at load. It keeps what it emitted and what it
 * returned, per package and domain, in counter units, in debugfs
 * (cgroup_energy_emu/truth), the reference the tests compare with.
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

#include "emu.h"

/* Intel SDM vol. 4, "MSRs in the 2nd Generation Intel Core Processor". */
#define CGE_EMU_MSR_UNIT	0x606
#define CGE_EMU_MSR_PKG		0x611
#define CGE_EMU_MSR_DRAM	0x619
#define CGE_EMU_MSR_PP0		0x639
#define CGE_EMU_MSR_PP1		0x641
#define CGE_EMU_MSR_PSYS	0x64d

enum cge_emu_dom {
	CGE_EMU_PKG,
	CGE_EMU_PP0,
	CGE_EMU_PP1,
	CGE_EMU_DRAM,
	CGE_EMU_PSYS,
	CGE_EMU_DOM_NR
};

static const u32 cge_emu_msr[CGE_EMU_DOM_NR] = {
	[CGE_EMU_PKG] = CGE_EMU_MSR_PKG,
	[CGE_EMU_PP0] = CGE_EMU_MSR_PP0,
	[CGE_EMU_PP1] = CGE_EMU_MSR_PP1,
	[CGE_EMU_DRAM] = CGE_EMU_MSR_DRAM,
	[CGE_EMU_PSYS] = CGE_EMU_MSR_PSYS,
};

static const char * const cge_emu_dom_name[CGE_EMU_DOM_NR] = {
	"package", "core", "uncore", "dram", "psys",
};

/**
 * struct cge_emu_profile - one kind of part
 * @name: emu_profile= value
 * @unit: the unit register's value
 * @esu: each domain's energy unit, 2^-esu J; 0: the domain is absent (its
 *	 register faults, as an unimplemented MSR does)
 * @uncore_mw: package power beside the cores, of the first package; the
 *	       k-th (from 0) has k + 1 times that, so packages differ
 * @pp1_mw: uncore (PP1, graphics) power, per package
 * @dram_mw: DRAM power at rest, per package
 * @dram_busy_mw: DRAM power added per busy CPU
 * @platform_mw: platform power beside the packages (PSYS)
 */
struct cge_emu_profile {
	const char *name;
	u64 unit;
	u32 esu[CGE_EMU_DOM_NR];
	u32 uncore_mw, pp1_mw, dram_mw, dram_busy_mw, platform_mw;
};

/*
 * Unit register 0xA0E03 (power 1/8 W, energy 2^-14 J, time 2^-10 s): the
 * value Intel's client and server parts since Sandy Bridge report (SDM
 * vol. 3B, 15.10.1; the kernel's intel_rapl_common.c decodes the same
 * fields).
 */
static const struct cge_emu_profile cge_emu_profiles[] = {
	{
		/*
		 * A client part (QEMU -cpu Skylake-Client): package, cores
		 * (PP0), uncore (PP1) and platform (PSYS), all in the
		 * register's unit; no DRAM domain.
		 */
		.name = "intel-client",
		.unit = 0xA0E03,
		.esu = { [CGE_EMU_PKG] = 14, [CGE_EMU_PP0] = 14,
			 [CGE_EMU_PP1] = 14, [CGE_EMU_PSYS] = 14 },
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
		.unit = 0xA0E03,
		.esu = { [CGE_EMU_PKG] = 14, [CGE_EMU_DRAM] = 16 },
		.uncore_mw = 15000, .dram_mw = 3000, .dram_busy_mw = 500,
	},
};

static char *emu_profile = "intel-client";
module_param(emu_profile, charp, 0444);
MODULE_PARM_DESC(emu_profile, "test build: emulated RAPL part (intel-client, intel-server)");
static unsigned int emu_idle_mw = 1000;
module_param(emu_idle_mw, uint, 0444);
MODULE_PARM_DESC(emu_idle_mw, "test build: emulated power of an idle CPU, mW");
static unsigned int emu_busy_mw = 8000;
module_param(emu_busy_mw, uint, 0444);
MODULE_PARM_DESC(emu_busy_mw, "test build: emulated power of a busy CPU, mW");
static unsigned int emu_scale = 1;
module_param(emu_scale, uint, 0444);
MODULE_PARM_DESC(emu_scale, "test build: multiply all emulated power (fast counter wraps), 1-10000");

#define CGE_EMU_MAX_PKG		8
#define CGE_EMU_MAX_SCALE	10000
/* Counters start near the top, as on a machine up for a while: they wrap. */
#define CGE_EMU_START		0xF0000000ULL
/* pJ per joule over 2^12: 1e12 = 2^12 * 5^12 */
#define CGE_EMU_5_12		244140625ULL

struct cge_emu_ctr {
	u64 units;		/* emitted, whole units, unwrapped */
	u64 rem;		/* emitted below a unit, in 2^(esu-12) pJ */
	u64 read;		/* the value last returned, unwrapped */
	u64 reads;
};

struct cge_emu_cpu {
	u64 busy_ns;
	bool seen;
};

static const struct cge_emu_profile *cge_emu_p;
static DEFINE_SPINLOCK(cge_emu_lock);
static struct cge_emu_ctr cge_emu_ctr[CGE_EMU_MAX_PKG][CGE_EMU_DOM_NR];
static int cge_emu_pkg_id[CGE_EMU_MAX_PKG];
static unsigned int cge_emu_npkg;
static struct cge_emu_cpu *cge_emu_cpus;
static u64 cge_emu_last_ns;
static struct dentry *cge_emu_dir;

static int cge_emu_pkg(unsigned int cpu)
{
	int id = topology_physical_package_id(cpu);
	unsigned int p;

	for (p = 0; p < cge_emu_npkg; p++)
		if (cge_emu_pkg_id[p] == id)
			return p;
	return -1;
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

/* Energy of everything since the last call, into the counters. */
static void cge_emu_advance(void)
{
	const struct cge_emu_profile *p = cge_emu_p;
	u64 now = ktime_get_ns(), dt, busy, b, total_pkg = 0;
	u64 cpu_pj[CGE_EMU_MAX_PKG] = { 0 }, busy_ns[CGE_EMU_MAX_PKG] = { 0 };
	u32 d_mw = emu_busy_mw - emu_idle_mw;
	unsigned int cpu, k;
	int pk;

	dt = now - cge_emu_last_ns;
	cge_emu_last_ns = now;
	for_each_online_cpu(cpu) {
		pk = cge_emu_pkg(cpu);
		busy = cge_emu_busy_ns(cpu);
		if (pk < 0 || !cge_emu_cpus[cpu].seen) {
			cge_emu_cpus[cpu].busy_ns = busy;
			cge_emu_cpus[cpu].seen = true;
			continue;
		}
		b = min(busy - cge_emu_cpus[cpu].busy_ns, dt);
		cge_emu_cpus[cpu].busy_ns = busy;
		busy_ns[pk] += b;
		cpu_pj[pk] += (u64)emu_idle_mw * dt + (u64)d_mw * b;
	}
	for (k = 0; k < cge_emu_npkg; k++) {
		struct cge_emu_ctr *c = cge_emu_ctr[k];
		u64 pkg = cpu_pj[k] + (u64)p->uncore_mw * (k + 1) * dt;

		total_pkg += pkg;
		cge_emu_emit(&c[CGE_EMU_PKG], p->esu[CGE_EMU_PKG],
			     pkg * emu_scale);
		if (p->esu[CGE_EMU_PP0])
			cge_emu_emit(&c[CGE_EMU_PP0], p->esu[CGE_EMU_PP0],
				     cpu_pj[k] * emu_scale);
		if (p->esu[CGE_EMU_PP1])
			cge_emu_emit(&c[CGE_EMU_PP1], p->esu[CGE_EMU_PP1],
				     (u64)p->pp1_mw * dt * emu_scale);
		if (p->esu[CGE_EMU_DRAM])
			cge_emu_emit(&c[CGE_EMU_DRAM], p->esu[CGE_EMU_DRAM],
				     ((u64)p->dram_mw * dt +
				      (u64)p->dram_busy_mw * busy_ns[k]) *
				     emu_scale);
	}
	/* The platform: every package, the uncore, the rest of the board. */
	if (p->esu[CGE_EMU_PSYS])
		cge_emu_emit(&cge_emu_ctr[0][CGE_EMU_PSYS], p->esu[CGE_EMU_PSYS],
			     (total_pkg + (u64)(p->pp1_mw * cge_emu_npkg +
						p->platform_mw) * dt) *
			     emu_scale);
}

/**
 * cge_emu_rdmsr - read an emulated RAPL register
 * @cpu: the CPU it is read on (its package's counters)
 * @msr: the register
 * @val: its value
 *
 * Return: 0, or -EIO for a register the profile does not have (real parts
 * fault on it).
 */
int cge_emu_rdmsr(unsigned int cpu, u32 msr, u64 *val)
{
	const struct cge_emu_profile *p = cge_emu_p;
	struct cge_emu_ctr *c;
	unsigned long flags;
	int d, pk;

	if (msr == CGE_EMU_MSR_UNIT) {
		*val = p->unit;
		return 0;
	}
	for (d = 0; d < CGE_EMU_DOM_NR; d++)
		if (cge_emu_msr[d] == msr && p->esu[d])
			break;
	pk = d == CGE_EMU_PSYS ? 0 : cge_emu_pkg(cpu);
	if (d == CGE_EMU_DOM_NR || pk < 0)
		return -EIO;
	spin_lock_irqsave(&cge_emu_lock, flags);
	cge_emu_advance();
	c = &cge_emu_ctr[pk][d];
	c->read = round_down(c->units, 1ULL << (p->esu[d] - 6));
	c->reads++;
	*val = c->read & 0xffffffffULL;
	spin_unlock_irqrestore(&cge_emu_lock, flags);
	return 0;
}

static int cge_emu_truth_show(struct seq_file *m, void *v)
{
	const struct cge_emu_profile *p = cge_emu_p;
	unsigned long flags;
	unsigned int k;
	int d;

	spin_lock_irqsave(&cge_emu_lock, flags);
	seq_printf(m, "profile %s\n", p->name);
	for (k = 0; k < cge_emu_npkg; k++)
		for (d = 0; d < CGE_EMU_DOM_NR; d++) {
			struct cge_emu_ctr *c = &cge_emu_ctr[k][d];

			if (!p->esu[d] || (d == CGE_EMU_PSYS && k))
				continue;
			seq_printf(m, "pkg %u %s esu %u emitted %llu read %llu reads %llu\n",
				   k, cge_emu_dom_name[d], p->esu[d], c->units,
				   c->read, c->reads);
		}
	spin_unlock_irqrestore(&cge_emu_lock, flags);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(cge_emu_truth);

int cge_emu_init(void)
{
	unsigned int cpu, i, k;
	int id, d;

	for (i = 0; i < ARRAY_SIZE(cge_emu_profiles); i++)
		if (!strcmp(emu_profile, cge_emu_profiles[i].name))
			cge_emu_p = &cge_emu_profiles[i];
	if (!cge_emu_p) {
		pr_err("emu_profile=%s: no such profile\n", emu_profile);
		return -EINVAL;
	}
	if (emu_busy_mw < emu_idle_mw || emu_busy_mw > 100000 || !emu_scale ||
	    emu_scale > CGE_EMU_MAX_SCALE) {
		pr_err("emu_idle_mw <= emu_busy_mw <= 100000 and 1 <= emu_scale <= %u\n",
		       CGE_EMU_MAX_SCALE);
		return -EINVAL;
	}
	cge_emu_cpus = kcalloc(nr_cpu_ids, sizeof(*cge_emu_cpus), GFP_KERNEL);
	if (!cge_emu_cpus)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		id = topology_physical_package_id(cpu);
		for (k = 0; k < cge_emu_npkg && cge_emu_pkg_id[k] != id; k++)
			;
		if (k == cge_emu_npkg && k < CGE_EMU_MAX_PKG)
			cge_emu_pkg_id[cge_emu_npkg++] = id;
	}
	for (k = 0; k < cge_emu_npkg; k++)
		for (d = 0; d < CGE_EMU_DOM_NR; d++) {
			cge_emu_ctr[k][d].units = CGE_EMU_START;
			cge_emu_ctr[k][d].read = CGE_EMU_START;
		}
	cge_emu_last_ns = ktime_get_ns();
	cge_emu_advance();
	/* energy from no real counter: say so in the kernel's taint flags */
	add_taint(TAINT_TEST, LOCKDEP_STILL_OK);
	cge_emu_dir = debugfs_create_dir("cgroup_energy_emu", NULL);
	debugfs_create_file("truth", 0444, cge_emu_dir, NULL,
			    &cge_emu_truth_fops);
	pr_info("emulated RAPL: %s, %u packages, %u-%u mW per CPU, scale %u\n",
		cge_emu_p->name, cge_emu_npkg, emu_idle_mw, emu_busy_mw,
		emu_scale);
	return 0;
}

void cge_emu_exit(void)
{
	debugfs_remove_recursive(cge_emu_dir);
	kfree(cge_emu_cpus);
}
