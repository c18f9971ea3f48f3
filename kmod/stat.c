// SPDX-License-Identifier: GPL-2.0
/*
 * stat.c - format energy.stat (one consistent snapshot per read) and
 * energy.info. Key names come from include/cgroup_energy.h.
 */
#include <linux/kernel.h>
#include <linux/seq_file.h>
#include <linux/math64.h>
#include <linux/mutex.h>
#include <linux/bitops.h>

#include "cgroup_energy.h"
#include "stat.h"
#include "cgstate.h"
#include "sampler.h"
#include "source.h"
#include "probe.h"
#include "params.h"
#include "impact.h"
#include "unowned.h"
#include "cpuset.h"

static const char * const cge_dom_keys[CGE_DOM_NR] = {
	[CGE_DOM_PKG] = CGE_KEY_PACKAGE_UJ,
	[CGE_DOM_CORE] = CGE_KEY_CORE_UJ,
	[CGE_DOM_UNCORE] = CGE_KEY_UNCORE_UJ,
	[CGE_DOM_DRAM] = CGE_KEY_DRAM_UJ,
	[CGE_DOM_PSYS] = CGE_KEY_PSYS_UJ,
};

static const char * const cge_dom_names[CGE_DOM_NR] = {
	[CGE_DOM_PKG] = "package",
	[CGE_DOM_CORE] = "core",
	[CGE_DOM_UNCORE] = "uncore",
	[CGE_DOM_DRAM] = "dram",
	[CGE_DOM_PSYS] = "psys",
};

const char * const cge_sys_keys[CGE_SYS_NR][2] = {
	[CGE_SYS_IRQ] = { CGE_KEY_IRQ_UJ, CGE_KEY_IRQ_USEC },
	[CGE_SYS_SOFTIRQ] = { CGE_KEY_SOFTIRQ_UJ, CGE_KEY_SOFTIRQ_USEC },
	[CGE_SYS_STEAL] = { CGE_KEY_STEAL_UJ, CGE_KEY_STEAL_USEC },
};

const char * const cge_power_keys[CGE_POWER_NR] = {
	CGE_KEY_POWER_AVG10_MW, CGE_KEY_POWER_AVG60_MW, CGE_KEY_POWER_AVG300_MW,
};

static const char * const cge_share_keys[CGE_UN_NR] = {
	[CGE_UN_IDLE] = CGE_KEY_IDLE_SHARE_UJ,
	[CGE_UN_SYS] = CGE_KEY_SYS_SHARE_UJ,
};

static void cge_kv(struct seq_file *m, const char *key, u64 val)
{
	seq_printf(m, "%s %llu\n", key, val);
}

/* The shares' keys after @prefix, each after a space: energy.tree's header. */
void cge_share_keys_show(struct seq_file *m, const char *prefix)
{
	int k;

	for (k = 0; k < CGE_UN_NR; k++)
		seq_printf(m, " %s%s", prefix, cge_share_keys[k]);
}

/* The shares of @st in cge_share_keys_show()'s order, each after a space. */
void cge_share_values(struct seq_file *m, const struct cge_stat *st)
{
	int k;

	for (k = 0; k < CGE_UN_NR; k++)
		seq_printf(m, " %llu", st->share_uj[k]);
}

/* The counters' keys after @prefix, each after a space: energy.tree's header. */
void cge_stat_keys(struct seq_file *m, const char *prefix,
		   unsigned long domains)
{
	int d;

	seq_printf(m, " %s" CGE_KEY_USAGE_USEC " %s" CGE_KEY_ENERGY_UJ
		   " %s" CGE_KEY_WAKEUPS " %s" CGE_KEY_IMPACT_USEC,
		   prefix, prefix, prefix, prefix);
	for_each_set_bit(d, &domains, CGE_DOM_NR)
		seq_printf(m, " %s%s", prefix, cge_dom_keys[d]);
}

/* The counters @c in cge_stat_keys()' order, each after a space. */
void cge_stat_values(struct seq_file *m, const struct cge_counts *c,
		     unsigned long domains)
{
	int d;

	seq_printf(m, " %llu %llu %llu %llu", c->usage_us, c->energy_uj,
		   c->wakeups, c->impact_us);
	for_each_set_bit(d, &domains, CGE_DOM_NR)
		seq_printf(m, " %llu", c->dom_uj[d]);
}

/* The counters @c, each key after @prefix, the domains' of @domains. */
static void cge_counters_show(struct seq_file *m, const char *prefix,
			      const struct cge_counts *c, unsigned long domains)
{
	int d;

	seq_printf(m, "%s" CGE_KEY_USAGE_USEC " %llu\n", prefix, c->usage_us);
	seq_printf(m, "%s" CGE_KEY_ENERGY_UJ " %llu\n", prefix, c->energy_uj);
	seq_printf(m, "%s" CGE_KEY_WAKEUPS " %llu\n", prefix, c->wakeups);
	seq_printf(m, "%s" CGE_KEY_IMPACT_USEC " %llu\n", prefix, c->impact_us);
	for_each_set_bit(d, &domains, CGE_DOM_NR)
		seq_printf(m, "%s%s %llu\n", prefix, cge_dom_keys[d],
			   c->dom_uj[d]);
}

/**
 * cge_stat_show() - energy.stat of cgroup @cgrp
 * @m: the file
 * @cgrp: the cgroup, held; the root's file also carries the root-only keys
 *
 * A cgroup without a record reads zeros (it never ran a task); a removed
 * one reads its last totals until its record is freed, then -ENODEV.
 *
 * Return: 0, or -ENODEV.
 */
int cge_stat_show(struct seq_file *m, struct cgroup *cgrp)
{
	u64 cgid = cgroup_id(cgrp);
	unsigned long domains = cge_sampler_source()->domains();
	bool root = cgid == cge_root_cgid();
	u64 mw[CGE_POWER_NR], at_ns;
	struct cge_root_stat rs;
	struct cge_stat st, own;
	unsigned int k;

	/* One lock hold: the root's keys agree with each other exactly. */
	mutex_lock(&cge_lock);
	if (!cge_cgstate_read_locked(cgid, &st, &own)) {
		/* records are freed under cge_lock, after their cgroup's rmdir */
		if (!cge_cgroup_online(cgrp)) {
			mutex_unlock(&cge_lock);
			return -ENODEV;
		}
		memset(&st, 0, sizeof(st));
		memset(&own, 0, sizeof(own));
	}
	rs = cge_root_stat;
	at_ns = cge_sampler_interval_end();
	mutex_unlock(&cge_lock);
	cge_power_read(&st.power, at_ns, mw);

	cge_counters_show(m, "", &st.c, domains);
	for (k = 0; k < CGE_POWER_NR; k++)
		cge_kv(m, cge_power_keys[k], mw[k]);
	for (k = 0; k < CGE_UN_NR; k++)
		cge_kv(m, cge_share_keys[k], st.share_uj[k]);
	cge_counters_show(m, CGE_OWN_PREFIX, &own.c, domains);
	for (k = 0; k < CGE_UN_NR; k++)
		seq_printf(m, CGE_OWN_PREFIX "%s %llu\n", cge_share_keys[k],
			   own.share_uj[k]);
	if (root) {
		cge_kv(m, CGE_KEY_TOTAL_UJ, rs.total_uj);
		cge_kv(m, CGE_KEY_IDLE_UJ, rs.idle_uj);
		cge_kv(m, CGE_KEY_IDLE_USEC, rs.idle.us);
		for (k = 0; k < CGE_SYS_NR; k++) {
			cge_kv(m, cge_sys_keys[k][0], rs.sys_uj[k]);
			cge_kv(m, cge_sys_keys[k][1], rs.sys[k].us);
		}
	}
	return 0;
}

/**
 * cge_info_show() - energy.info: what is in effect and how healthy it is
 * @m: the file
 * @host: the mount shows the whole tree; a mount of a cgroup namespace's
 *	subtree gets the settings and the sample clock, nothing host-wide
 *
 * Return: 0.
 */
int cge_info_show(struct seq_file *m, bool host)
{
	const struct cge_source *src = cge_sampler_source();
	unsigned long domains = src->domains();
	struct cge_sampler_health h;
	struct cge_source_health sh;
	struct cge_impact_coefs k;
	u64 records, bytes, timed, ns, overflows, quiet, takebacks;
	char num[32];
	int d;

	mutex_lock(&cge_lock);
	h = cge_sampler_health;
	sh = cge_source_health;
	cge_cgstate_usage(&records, &bytes);
	mutex_unlock(&cge_lock);

	seq_printf(m, "version %s\n", CGE_VERSION);
	seq_printf(m, "source %s\n", src->name);
	seq_puts(m, "domains");
	if (!domains)
		seq_puts(m, " none");
	for_each_set_bit(d, &domains, CGE_DOM_NR)
		seq_printf(m, " %s", cge_dom_names[d]);
	seq_putc(m, '\n');
	seq_printf(m, "split %s\n", cge_split_name(READ_ONCE(cge_split_param)));
	seq_printf(m, "unowned %s\n",
		   cge_unowned_name(READ_ONCE(cge_unowned_param)));
	/* "-" before the first sample */
	seq_printf(m, "unowned_applied %s\n", h.unowned_since ?
		   cge_unowned_name(h.unowned_applied) : "-");
	seq_printf(m, "unowned_since_sample %llu\n", h.unowned_since);
	seq_printf(m, "unowned_changes %llu\n", h.unowned_changes);
	seq_printf(m, "unowned_partitions %u\n", h.unowned_partitions);
	seq_printf(m, "unowned_partition_scans %llu\n", cge_cpuset_scans());
	seq_printf(m, "interval_ms %u\n", READ_ONCE(cge_interval_ms));
	seq_printf(m, "model_idle_mw %u\n", READ_ONCE(cge_model_idle_mw));
	seq_printf(m, "model_busy_mw %u\n", READ_ONCE(cge_model_busy_mw));
	cge_params_coefs(&k);
	cge_coef_format(num, sizeof(num), k.kcpu_time);
	seq_printf(m, "kcpu_time %s\n", num);
	cge_coef_format(num, sizeof(num), k.kcpu_wakeups);
	seq_printf(m, "kcpu_wakeups %s\n", num);
	cge_coef_format(num, sizeof(num), k.kqos_background);
	seq_printf(m, "kqos_background %s\n", num);
	seq_printf(m, "last_sample_ns %llu\n", h.last_sample_ns);
	seq_printf(m, "samples %llu\n", h.samples);
	if (!host)
		return 0;
	seq_printf(m, "packages %u\n", cge_sampler_packages());
	if (src != &cge_model_source) {
		seq_printf(m, "vendor %s\n", cge_rapl_vendor());
		/* each domain's energy unit is 2^-N J */
		for_each_set_bit(d, &domains, CGE_DOM_NR)
			seq_printf(m, "unit_esu_%s %u\n", cge_dom_names[d],
				   cge_rapl_domain_unit_esu(d));
	}
	seq_printf(m, "sampler_overruns %llu\n", h.overruns);
	seq_printf(m, "energy_read_errors %llu\n", sh.read_errors);
	seq_printf(m, "counter_wraps %llu\n", sh.wraps);
	seq_printf(m, "counter_resyncs %llu\n", sh.resyncs);
	seq_printf(m, "isolated_cpu_reads %llu\n", sh.isolated_cpu_reads);
	seq_printf(m, "isolated_core_skips %llu\n", sh.isolated_core_skips);
	cge_probe_counters(&overflows, &quiet, &takebacks);
	seq_printf(m, "cache_overflows %llu\n", overflows);
	seq_printf(m, "request_takebacks %llu\n", takebacks);
	seq_printf(m, "quiet_drains %llu\n", quiet);
	seq_printf(m, "overcharge_usec %llu\n",
		   div_u64(h.overcharge_ns, NSEC_PER_USEC));
	seq_printf(m, "overcharge_repaid_usec %llu\n",
		   div_u64(h.overcharge_repaid_ns, NSEC_PER_USEC));
	seq_printf(m, "alloc_failures %llu\n", h.alloc_failures);
	seq_printf(m, "records %llu\n", records);
	seq_printf(m, "record_bytes %llu\n", bytes);
	seq_printf(m, "cgroup2 %s\n", cge_cgstate_v2_in_use() ? "in_use" :
		   "no_cgroups (every task is charged to the root)");
	cge_probe_selftime(&timed, &ns);
	if (timed) {
		seq_printf(m, "probe_timed_calls %llu\n", timed);
		seq_printf(m, "probe_ns_mean %llu\n", div64_u64(ns, timed));
	}
	return 0;
}
