// SPDX-License-Identifier: GPL-2.0
/*
 * rapl.c - detect RAPL and read its energy counters, one reader per package.
 *
 * Detection must not be fooled by emulators that return 0 for these MSRs
 * instead of faulting (QEMU without KVM): it checks the vendor and model or
 * feature, a sane energy unit and a package counter that advances. The
 * decoding (units, quirks, wrap) is in rapl_decode.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/delay.h>
#include <linux/bitops.h>
#include <linux/slab.h>
#include <linux/cpumask.h>
#include <linux/smp.h>
#include <linux/rcupdate.h>
#include <asm/msr.h>
#include <asm/processor.h>
#include <asm/cpufeature.h>

#include "compat.h"
#include "source.h"
#include "emu.h"
#include "rapl_ids.h"

static bool cge_is_amd;
static u32 cge_family, cge_model;
static struct cge_rapl_counter *cge_core_ctr;	/* AMD, per core (topo.c) */
static u32 cge_unit_esu;
static u32 cge_msr[CGE_DOM_NR];
static unsigned long cge_rapl_domains;

const char *cge_rapl_vendor(void)
{
	if (!cge_is_amd)
		return "intel";
	return boot_cpu_data.x86_vendor == X86_VENDOR_HYGON ? "hygon" : "amd";
}

u32 cge_rapl_unit_esu(void)
{
	return cge_unit_esu;
}

/* Domain @d's energy unit, 2^-N J, the model's quirks applied. */
u32 cge_rapl_domain_unit_esu(int d)
{
	if (d == CGE_DOM_CORE && cge_core_ctr)
		return cge_unit_esu;
	return cge_rapl_domain_esu(cge_is_amd, cge_family, cge_model, d,
				   cge_unit_esu);
}

static void cge_rdmsr_batch_fn(void *b)
{
	cge_emu_read_here(b);
}

/*
 * Read @b's registers on @cpu, all in one cross-call: no IPI if @cpu is
 * this CPU. The test build's emulated hardware answers them (emu.h). A
 * cross-call to an isolated CPU is counted (isolated_cpu_reads): the
 * sampler makes one only for a package with no other CPU online. Its
 * callers hold cpus_read_lock() (not exported to modules to assert), so
 * @cpu stays online.
 * Return: 0 (each read's own error is in @b->err), or -ENXIO if @cpu is
 * offline.
 */
static int cge_rdmsr_batch(unsigned int cpu, struct cge_msr_batch *b)
{
	b->from = raw_smp_processor_id();
	if (cpu != b->from) {
		rcu_read_lock();
		if (cpu_is_isolated(cpu))
			cge_source_health.isolated_cpu_reads++;
		rcu_read_unlock();
	}
	return smp_call_function_single(cpu, cge_rdmsr_batch_fn, b, 1);
}

/* One register, read on @cpu. */
static int cge_rdmsr(unsigned int cpu, u32 msr, u64 *val)
{
	struct cge_msr_batch b = { .n = 1, .msr = { msr } };
	int err = cge_rdmsr_batch(cpu, &b);

	if (err)
		return err;
	*val = b.val[0];
	return b.err[0];
}

/* A domain is present if its counter reads and is not stuck at zero. */
static bool cge_domain_present(unsigned int cpu, u32 msr)
{
	u64 v;

	return msr && !cge_rdmsr(cpu, msr, &v) && (v & CGE_RAPL_COUNTER_MASK);
}

/*
 * The domains @pkg's reader reads: PSYS is platform-wide, read once with
 * the first package (the sampler shares it out); AMD's cores are read per
 * core. Their registers into @b, their domains into @dom.
 */
static void cge_rapl_batch(const struct cge_pkg *pkg, struct cge_msr_batch *b,
			   int *dom)
{
	int d;

	BUILD_BUG_ON(CGE_DOM_NR > CGE_MSR_BATCH_MAX);
	b->n = 0;
	for_each_set_bit(d, &cge_rapl_domains, CGE_DOM_NR) {
		if ((d == CGE_DOM_PSYS && pkg->id) ||
		    (d == CGE_DOM_CORE && cge_core_ctr))
			continue;
		dom[b->n] = d;
		b->msr[b->n++] = cge_msr[d];
	}
}

/* All of @pkg's domains in one cross-call to its read_cpu. */
static void cge_rapl_read(struct cge_pkg *pkg, u64 capacity_ns, u64 busy_ns,
			  struct cge_energy *out)
{
	struct cge_msr_batch b;
	int dom[CGE_DOM_NR];
	unsigned int i;

	memset(out, 0, sizeof(*out));
	cge_rapl_batch(pkg, &b, dom);
	/* a failed cross-call is one error: the next read takes the delta */
	if (cge_rdmsr_batch(pkg->read_cpu, &b)) {
		cge_source_health.read_errors++;
		return;
	}
	for (i = 0; i < b.n; i++) {
		struct cge_rapl_counter *c = &pkg->ctr[dom[i]];

		if (b.err[i]) {
			cge_source_health.read_errors++;
			continue;
		}
		if (c->primed && cge_rapl_raw_wrapped(c->last_raw, b.val[i]))
			cge_source_health.wraps++;
		out->dom_uj[dom[i]] = cge_rapl_counter_delta_uj(c, b.val[i]);
	}
	out->headline_uj = out->dom_uj[CGE_DOM_PKG] + out->dom_uj[CGE_DOM_DRAM];
}

static void cge_rapl_resync(struct cge_pkg *pkg)
{
	struct cge_msr_batch b;
	int dom[CGE_DOM_NR];
	unsigned int i;
	int err;

	cge_rapl_batch(pkg, &b, dom);
	err = cge_rdmsr_batch(pkg->read_cpu, &b);
	if (err)
		cge_source_health.read_errors++;
	for (i = 0; i < b.n; i++) {
		/* on failure the next good read primes it: no delta */
		if (err || b.err[i]) {
			if (!err)
				cge_source_health.read_errors++;
			pkg->ctr[dom[i]].primed = false;
		} else {
			cge_rapl_counter_resync(&pkg->ctr[dom[i]], b.val[i]);
		}
	}
}

static void cge_rapl_init_pkg(struct cge_pkg *pkg)
{
	int d;

	for (d = 0; d < CGE_DOM_NR; d++)
		cge_rapl_counter_init(&pkg->ctr[d],
				      cge_rapl_domain_esu(cge_is_amd, cge_family,
							  cge_model, d,
							  cge_unit_esu));
	cge_rapl_resync(pkg);
}

/* AMD per-core energy: the counter of @cpu's core, read there. */
static int cge_rapl_read_core(unsigned int cpu, u64 *raw)
{
	return cge_rdmsr(cpu, CGE_MSR_AMD_CORE_ENERGY_STATUS, raw);
}

static u64 cge_rapl_core_delta(unsigned int core, u64 raw)
{
	struct cge_rapl_counter *c = &cge_core_ctr[core];

	if (c->primed && cge_rapl_raw_wrapped(c->last_raw, raw))
		cge_source_health.wraps++;
	return cge_rapl_counter_delta_uj(c, raw);
}

/* After resume: each core's next reading only primes its counter. */
static void cge_rapl_core_resync(void)
{
	unsigned int k;

	for (k = 0; k < nr_cpu_ids; k++)
		cge_rapl_counter_init(&cge_core_ctr[k], cge_unit_esu);
}

static unsigned long cge_rapl_get_domains(void)
{
	return cge_rapl_domains;
}

/* Package counters only. */
static const struct cge_source cge_rapl_source = {
	.name = "rapl",
	.domains = cge_rapl_get_domains,
	.read = cge_rapl_read,
	.init_pkg = cge_rapl_init_pkg,
	.resync = cge_rapl_resync,
};

/* With per-core counters (AMD). */
static const struct cge_source cge_rapl_core_source = {
	.name = "rapl",
	.domains = cge_rapl_get_domains,
	.read = cge_rapl_read,
	.init_pkg = cge_rapl_init_pkg,
	.resync = cge_rapl_resync,
	.read_core = cge_rapl_read_core,
	.core_delta = cge_rapl_core_delta,
	.core_resync = cge_rapl_core_resync,
};

void cge_rapl_exit(void)
{
	kfree(cge_core_ctr);
	cge_core_ctr = NULL;
}

/*
 * AMD family 17h (Zen, Zen 2), 19h (Zen 3, 4) and 1Ah (Zen 5), Hygon family
 * 18h: the RAPL MSRs of their PPRs, matched by family as the kernel's
 * powercap driver does (intel_rapl_common.c: X86_MATCH_VENDOR_FAM), or by
 * the CPUID RAPL bit where a CPU reports it.
 */
static bool cge_amd_has_rapl(const struct cpuinfo_x86 *c)
{
	if (cge_cpu_has_amd_rapl())
		return true;
	if (c->x86_vendor == X86_VENDOR_AMD)
		return c->x86 == 0x17 || c->x86 == 0x19 || c->x86 == 0x1a;
	return c->x86 == 0x18;
}

/**
 * cge_rapl_detect() - set up the RAPL source if this machine has one
 * @cpu: an online CPU to probe the registers on
 * @any_model: try an Intel model the RAPL model table does not list
 *	(source=rapl)
 *
 * The packages' counters are set up by the source's init_pkg().
 *
 * Return: the RAPL source if RAPL counters are present and advance, NULL
 * otherwise.
 */
const struct cge_source *cge_rapl_detect(unsigned int cpu, bool any_model)
{
	struct cpuinfo_x86 *c = &boot_cpu_data;
	u32 unit_msr;
	u64 unit, a, b;
	unsigned int k;
	int d;

	if (boot_cpu_has(X86_FEATURE_HYPERVISOR))
		pr_info("running under a hypervisor: RAPL is rarely passed through\n");
	cge_family = c->x86;
	cge_model = c->x86_model;
	if (c->x86_vendor == X86_VENDOR_INTEL) {
		/*
		 * A model the kernel's table does not list (a new one, a
		 * server whose RAPL it reads through TPMI, or an Atom whose
		 * unit register is encoded otherwise) is tried only when the
		 * operator asks for RAPL (source=rapl): its units are not
		 * known to be the ones decoded here.
		 */
		if (!cge_intel_rapl_id(c->x86, c->x86_model)) {
			if (!any_model) {
				pr_info("Intel family %u model 0x%02x is not in the RAPL model table: source=rapl tries its RAPL MSRs\n",
					c->x86, c->x86_model);
				return NULL;
			}
			pr_warn("Intel family %u model 0x%02x is not in the RAPL model table: trying its RAPL MSRs (source=rapl), no unit quirks\n",
				c->x86, c->x86_model);
		}
		cge_is_amd = false;
		unit_msr = CGE_MSR_RAPL_POWER_UNIT;
		cge_msr[CGE_DOM_PKG] = CGE_MSR_PKG_ENERGY_STATUS;
		cge_msr[CGE_DOM_CORE] = CGE_MSR_PP0_ENERGY_STATUS;
		cge_msr[CGE_DOM_UNCORE] = CGE_MSR_PP1_ENERGY_STATUS;
		cge_msr[CGE_DOM_DRAM] = CGE_MSR_DRAM_ENERGY_STATUS;
		cge_msr[CGE_DOM_PSYS] = CGE_MSR_PLATFORM_ENERGY_STATUS;
	} else if ((c->x86_vendor == X86_VENDOR_AMD ||
		    c->x86_vendor == X86_VENDOR_HYGON) && cge_amd_has_rapl(c)) {
		cge_is_amd = true;
		unit_msr = CGE_MSR_AMD_RAPL_POWER_UNIT;
		cge_msr[CGE_DOM_PKG] = CGE_MSR_AMD_PKG_ENERGY_STATUS;
	} else {
		return NULL;
	}

	if (cge_rdmsr(cpu, unit_msr, &unit))
		return NULL;
	cge_unit_esu = cge_rapl_esu(unit);
	if (!cge_rapl_unit_sane(cge_unit_esu)) {
		pr_info("RAPL unit register 0x%llx is not sane\n", unit);
		return NULL;
	}
	/* A package counter that does not move is no counter. */
	if (cge_rdmsr(cpu, cge_msr[CGE_DOM_PKG], &a))
		return NULL;
	msleep(20);
	if (cge_rdmsr(cpu, cge_msr[CGE_DOM_PKG], &b) ||
	    !((a ^ b) & CGE_RAPL_COUNTER_MASK)) {
		pr_info("RAPL package counter does not advance\n");
		return NULL;
	}

	cge_rapl_domains = BIT(CGE_DOM_PKG);
	for (d = CGE_DOM_CORE; d < CGE_DOM_NR; d++)
		if (cge_domain_present(cpu, cge_msr[d]))
			cge_rapl_domains |= BIT(d);
	if (cge_is_amd &&
	    cge_domain_present(cpu, CGE_MSR_AMD_CORE_ENERGY_STATUS)) {
		cge_core_ctr = kcalloc(nr_cpu_ids, sizeof(*cge_core_ctr),
				       GFP_KERNEL);
		if (cge_core_ctr) {
			for (k = 0; k < nr_cpu_ids; k++)
				cge_rapl_counter_init(&cge_core_ctr[k],
						      cge_unit_esu);
			cge_rapl_domains |= BIT(CGE_DOM_CORE);
		}
	}
	return cge_core_ctr ? &cge_rapl_core_source : &cge_rapl_source;
}
