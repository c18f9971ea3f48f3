// SPDX-License-Identifier: GPL-2.0
/*
 * prom.c - one sample in the Prometheus text exposition format, the same
 * text for --prometheus and for the HTTP endpoint.
 */
#include <stdlib.h>
#include <string.h>

#include "energystat.h"

#define NUMLEN	32	/* a counter in decimal, 20 digits and a point */

struct metric {
	const char *name;
	enum key_id key;
	unsigned int scale;	/* value = v / 10^scale */
	const char *help;
};

static const struct metric cg_metrics[] = {
	{ "cgroup_energy_joules_total", K_ENERGY_UJ, 6,
	  "Energy attributed to the cgroup and its descendants (package + DRAM where measured), joules." },
	{ "cgroup_energy_cpu_seconds_total", K_USAGE_USEC, 6,
	  "CPU time of the cgroup's tasks, seconds (as cpu.stat usage_usec)." },
	{ "cgroup_energy_wakeups_total", K_WAKEUPS, 0,
	  "Times a CPU left idle to run a task of the cgroup." },
	{ "cgroup_energy_impact_seconds_total", K_IMPACT_USEC, 6,
	  "Energy impact in CPU-second equivalents (Apple's formula; 1 per second of one busy CPU)." },
};

static const struct metric root_metrics[] = {
	{ "cgroup_energy_measured_joules_total", K_TOTAL_UJ, 6,
	  "All energy the source measured or estimated since the module loaded, joules." },
	{ "cgroup_energy_idle_joules_total", K_IDLE_UJ, 6,
	  "Energy of idle CPU time, joules." },
	{ "cgroup_energy_idle_cpu_seconds_total", K_IDLE_USEC, 6,
	  "Idle CPU time summed over CPUs, seconds." },
	{ "cgroup_energy_irq_joules_total", K_IRQ_UJ, 6,
	  "Energy of interrupt time that no task was charged for, joules." },
	{ "cgroup_energy_irq_cpu_seconds_total", K_IRQ_USEC, 6,
	  "Interrupt time that no task was charged for (as /proc/stat irq, minus what tasks were charged), summed over CPUs, seconds." },
	{ "cgroup_energy_softirq_joules_total", K_SOFTIRQ_UJ, 6,
	  "Energy of softirq time that no task was charged for, joules." },
	{ "cgroup_energy_softirq_cpu_seconds_total", K_SOFTIRQ_USEC, 6,
	  "Softirq time that no task was charged for (as /proc/stat softirq, minus what tasks were charged), summed over CPUs, seconds." },
	{ "cgroup_energy_steal_joules_total", K_STEAL_UJ, 6,
	  "Energy of time stolen by a hypervisor that no task was charged for, joules." },
	{ "cgroup_energy_steal_cpu_seconds_total", K_STEAL_USEC, 6,
	  "Time stolen by a hypervisor that no task was charged for (as /proc/stat steal, minus what tasks were charged), summed over CPUs, seconds." },
};

static const struct {
	enum key_id key;
	const char *domain;
} domains[] = {
	{ K_PACKAGE_UJ, "package" }, { K_CORE_UJ, "core" },
	{ K_UNCORE_UJ, "uncore" }, { K_DRAM_UJ, "dram" }, { K_PSYS_UJ, "psys" },
};

static void prom_head(FILE *f, const char *name, const char *type,
		      const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* cgroup="..." and the workload's labels that are set (workload.c) */
static void prom_labels(FILE *f, const struct cg_node *n)
{
	const struct workload *wl = &n->wl;
	const struct {
		const char *name, *value;
	} labels[] = {
		{ "pod_uid", wl->pod_uid }, { "container_id", wl->container_id },
		{ "qos", wl->qos }, { "unit", wl->unit },
	};

	fputs("cgroup=\"", f);
	fput_prom_label(f, n->path);
	fputc('"', f);
	for (size_t i = 0; i < ARRAY_SIZE(labels); i++) {
		if (!labels[i].value[0])
			continue;
		fprintf(f, ",%s=\"", labels[i].name);
		fput_prom_label(f, labels[i].value);
		fputc('"', f);
	}
}

/* name{labels of n[,domain="..."]} value; n NULL: no labels */
static void prom_sample(FILE *f, const char *name, const struct cg_node *n,
			const char *domain, uint64_t v, unsigned int scale)
{
	char num[NUMLEN];

	fmt_exact(num, sizeof(num), v, scale);
	fputs(name, f);
	if (n) {
		fputc('{', f);
		prom_labels(f, n);
		if (domain)
			fprintf(f, ",domain=\"%s\"", domain);
		fputc('}', f);
	}
	fprintf(f, " %s\n", num);
}

void out_prometheus(FILE *f, const struct view *v)
{
	static const char *const info_labels[] = { "source", "domains", "split" };
	size_t n;
	struct row *rows = make_rows(v, &n);
	const struct cg_node *root = NULL;
	bool any;

	if (!rows)
		return;
	for (size_t m = 0; m < ARRAY_SIZE(cg_metrics); m++) {
		const struct metric *mt = &cg_metrics[m];

		prom_head(f, mt->name, "counter", mt->help);
		for (size_t i = 0; i < n; i++)
			prom_sample(f, mt->name, rows[i].n, NULL,
				    rows[i].n->st.v[mt->key], mt->scale);
	}

	any = false;
	for (size_t i = 0; i < n; i++)
		for (size_t d = 0; d < ARRAY_SIZE(domains); d++)
			any |= stat_has(&rows[i].n->st, domains[d].key);
	if (any) {
		const char *name = "cgroup_energy_domain_joules_total";

		prom_head(f, name, "counter",
			  "Energy attributed to the cgroup per RAPL domain, joules.");
		for (size_t i = 0; i < n; i++)
			for (size_t d = 0; d < ARRAY_SIZE(domains); d++)
				if (stat_has(&rows[i].n->st, domains[d].key))
					prom_sample(f, name, rows[i].n,
						    domains[d].domain,
						    rows[i].n->st.v[domains[d].key], 6);
	}

	for (size_t i = 0; i < n; i++)
		if (strcmp(rows[i].n->path, "/") == 0)
			root = rows[i].n;
	for (size_t m = 0; root && m < ARRAY_SIZE(root_metrics); m++) {
		const struct metric *mt = &root_metrics[m];

		if (!stat_has(&root->st, mt->key))
			continue;
		prom_head(f, mt->name, "counter", mt->help);
		prom_sample(f, mt->name, NULL, NULL, root->st.v[mt->key], mt->scale);
	}

	any = false;
	for (size_t l = 0; l < ARRAY_SIZE(info_labels); l++)
		any |= info_get(&v->s->info, info_labels[l]) != NULL;
	if (any) {
		bool first = true;

		prom_head(f, "cgroup_energy_info", "gauge",
			  "The energy source in use (energy.info); always 1.");
		fputs("cgroup_energy_info{", f);
		for (size_t l = 0; l < ARRAY_SIZE(info_labels); l++) {
			const char *val = info_get(&v->s->info, info_labels[l]);

			if (!val)
				continue;
			fprintf(f, "%s%s=\"", first ? "" : ",", info_labels[l]);
			fput_prom_label(f, val);
			fputc('"', f);
			first = false;
		}
		fputs("} 1\n", f);
	}
	free(rows);
}
