// SPDX-License-Identifier: GPL-2.0
/*
 * prom.c - one sample in the Prometheus text exposition format 0.0.4 or in
 * OpenMetrics 1.0, the same text for --prometheus and for the HTTP endpoint.
 *
 * Per-cgroup series are the cgroups' own values (series.c) by default, so
 * that sum() over them is the root's counter; --hierarchical gives the
 * counters as energy.stat has them, under cgroup_energy_subtree_* names so
 * that the two views never mix in one query. Watts need an earlier sample
 * (the endpoint's previous read): --prometheus alone has none.
 */
#include <stdlib.h>
#include <string.h>

#include "stat.h"
#include "tree.h"
#include "text.h"
#include "view.h"

#define NUMLEN	32	/* a counter in decimal, 20 digits and a point */
#define NAMELEN	64	/* a metric name */
#define HELPLEN	512	/* a HELP text */

struct metric {
	const char *name;
	enum key_id key;
	unsigned int scale;	/* value = v / 10^scale */
	const char *help;
};

/* per cgroup: name after the prefix, help ending "of <whose>." */
static const struct metric cg_metrics[] = {
	{ "joules_total", K_ENERGY_UJ, 6,
	  "Energy (package + DRAM where measured), joules," },
	{ "cpu_seconds_total", K_USAGE_USEC, 6,
	  "CPU time (as cpu.stat usage_usec), seconds," },
	{ "wakeups_total", K_WAKEUPS, 0,
	  "Wakeups (times a CPU left idle to run a task)," },
	{ "impact_seconds_total", K_IMPACT_USEC, 6,
	  "Energy impact in CPU-second equivalents (Apple's formula; 1 per second of one busy CPU)" },
};

/*
 * per cgroup, when the module has the keys: its part of the energy no task
 * drew, shared by the module's unowned policy (energy.info "unowned")
 */
static const struct metric share_metrics[] = {
	{ "idle_share_joules_total", K_IDLE_SHARE_UJ, 6,
	  "Energy of idle CPU time" },
	{ "sys_share_joules_total", K_SYS_SHARE_UJ, 6,
	  "Energy of interrupt, softirq and steal time no task was charged for" },
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

/*
 * energy.info figures of the module's health: counters, and the gauges of
 * its memory. A key in microseconds is exported in seconds (scale 6). No
 * name holds its type's word (promtool check metrics): counter_wraps is
 * cgroup_energy_wraps_total.
 */
static const struct {
	const char *key, *name, *type, *help;
	unsigned int scale;
} health[] = {
	{ "samples", "cgroup_energy_samples_total", "counter",
	  "Samples the module took (one per interval).", 0 },
	{ "sampler_overruns", "cgroup_energy_sampler_overruns_total", "counter",
	  "Due times the sampler missed by running late.", 0 },
	{ "energy_read_errors", "cgroup_energy_read_errors_total", "counter",
	  "Energy counter reads that failed in the module.", 0 },
	{ "counter_wraps", "cgroup_energy_wraps_total", "counter",
	  "Energy counter wraps the module handled.", 0 },
	{ "counter_resyncs", "cgroup_energy_resyncs_total", "counter",
	  "Resumes from suspend or hibernation (energy counters read afresh where the source has them).",
	  0 },
	{ "isolated_cpu_reads", "cgroup_energy_isolated_cpu_reads_total",
	  "counter",
	  "Package energy reads done on an isolated CPU, none of the package's others online.",
	  0 },
	{ "isolated_core_skips", "cgroup_energy_isolated_core_skips_total",
	  "counter",
	  "Per-core energy reads left out, the core's CPUs all isolated.", 0 },
	{ "cache_overflows", "cgroup_energy_cache_overflows_total", "counter",
	  "Per-CPU buffer overflows the module handled (nothing lost).", 0 },
	{ "request_takebacks", "cgroup_energy_request_takebacks_total",
	  "counter",
	  "Record requests a new cgroup took back from a subtree holding more.",
	  0 },
	{ "quiet_drains", "cgroup_energy_quiet_drains_total", "counter",
	  "Drains of a CPU that stayed in its idle task since the previous one.",
	  0 },
	{ "overcharge_usec", "cgroup_energy_overcharge_seconds_total", "counter",
	  "CPU time drains charged running tasks beyond what they then ran, seconds.",
	  6 },
	{ "overcharge_repaid_usec",
	  "cgroup_energy_overcharge_repaid_seconds_total", "counter",
	  "Of that overcharge, what later charges took back, seconds.", 6 },
	{ "alloc_failures", "cgroup_energy_alloc_failures_total", "counter",
	  "Allocations that failed in the module.", 0 },
	{ "unowned_changes", "cgroup_energy_unowned_changes_total", "counter",
	  "Changes of the unowned policy the module's samples apply since it loaded; while 0 with the applied policy weight or cpuset (cgroup_energy_source_info's unowned label), energy and both shares add up to the measured energy.",
	  0 },
	{ "unowned_partitions", "cgroup_energy_unowned_partitions", "gauge",
	  "Cpuset partitions that own CPUs in the module's last sample (unowned=cpuset), their CPUs' idle and interrupt energy theirs.",
	  0 },
	{ "records", "cgroup_energy_records", "gauge",
	  "Cgroup records the module holds.", 0 },
	{ "record_bytes", "cgroup_energy_record_bytes", "gauge",
	  "Memory the module's cgroup records take, bytes.", 0 },
};

/*
 * # HELP and # TYPE of a family. In OpenMetrics a counter's family name has
 * no _total and an info family no _info (its samples keep them); the text
 * format 0.0.4 has no info type and calls it a gauge.
 */
void prom_head(FILE *f, const struct view *v, const char *name,
	       const char *type, const char *help)
{
	size_t n = strlen(name);

	if (v->openmetrics && strcmp(type, "counter") == 0)
		n -= strlen("_total");
	else if (v->openmetrics && strcmp(type, "info") == 0)
		n -= strlen("_info");
	else if (strcmp(type, "info") == 0)
		type = "gauge";
	fprintf(f, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)n, name, help,
		(int)n, name, type);
}

/*
 * cgroup="..." and the workload's labels that are set (workload.c,
 * names.c), one per fact: the unit only when it is not the pod's own slice
 * or the container's own scope, whose id pod_uid or container_id already
 * carries.
 */
static void prom_labels(FILE *f, const struct cg_node *n)
{
	const struct workload *wl = &n->wl;
	const struct {
		const char *name, *value;
	} labels[] = {
		{ "pod_uid", wl->pod_uid }, { "container_id", wl->container_id },
		{ "qos", wl->qos }, { "unit", wl->unit_own ? "" : wl->unit },
		{ "namespace", wl->namespace }, { "pod", wl->pod },
		{ "container", wl->container },
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
			const char *domain, const char *value)
{
	fputs(name, f);
	if (n) {
		fputc('{', f);
		prom_labels(f, n);
		if (domain)
			fprintf(f, ",domain=\"%s\"", domain);
		fputc('}', f);
	}
	fprintf(f, " %s\n", value);
}

static void prom_number(FILE *f, const char *name, const struct cg_node *n,
			const char *domain, uint64_t v, unsigned int scale)
{
	char num[NUMLEN];

	fmt_exact(num, sizeof(num), v, scale);
	prom_sample(f, name, n, domain, num);
}

/* The value the view shows of node n's key k: own (default) or subtree. */
static uint64_t shown(const struct view *v, const struct cg_node *n,
		      enum key_id k)
{
	return v->hierarchical ? n->st.v[k] : n->own[k];
}

/*
 * Seconds between the module samples that v->base and v->s were read
 * from, by the module's own clock; 0 when there is no such interval (no
 * base, no last_sample_ns, or the same module sample twice).
 */
static double watts_window(const struct view *v)
{
	uint64_t a, b;

	if (!v->base || !info_u64(&v->base->info, "last_sample_ns", &a) ||
	    !info_u64(&v->s->info, "last_sample_ns", &b) || b <= a)
		return 0;
	return (double)(b - a) / 1e9;
}

/* The per-cgroup families' name prefix: hierarchical values or own. */
static const char *family_prefix(const struct view *v)
{
	return v->hierarchical ? "cgroup_energy_subtree_" : "cgroup_energy_";
}

/* Whose values the per-cgroup families hold, for their HELP text. */
static const char *family_whose(const struct view *v)
{
	return v->hierarchical ?
	       "the cgroup and its descendants (live and removed)" :
	       "the cgroup's own tasks and removed children, without its shown descendants";
}

/*
 * cgroup_energy[_subtree]_{idle,sys}_share_joules_total: of the energy no
 * task drew, the part the module's unowned policy gave the cgroup; none
 * when no cgroup's file has the key (an older module).
 */
static void share_families(FILE *f, const struct view *v,
			   const struct row *rows, size_t n)
{
	const char *pre = family_prefix(v), *whose = family_whose(v);
	const char *sum = v->hierarchical ?
		"At the root cgroup, cgroup_energy_subtree_joules_total plus both shares" :
		"sum() over cgroups of cgroup_energy_joules_total plus both shares";
	char name[NAMELEN], help[HELPLEN];

	for (size_t m = 0; m < ARRAY_SIZE(share_metrics); m++) {
		const struct metric *mt = &share_metrics[m];
		bool any = false;

		for (size_t i = 0; i < n; i++)
			any |= stat_has(&rows[i].n->st, mt->key);
		if (!any)
			continue;
		snprintf(name, sizeof(name), "%s%s", pre, mt->name);
		snprintf(help, sizeof(help),
			 "%s that the module's unowned policy (energy.info) gives %s, joules. Unfiltered, %s equals cgroup_energy_measured_joules_total when the applied policy was weight or cpuset since the module loaded.",
			 mt->help, whose, sum);
		prom_head(f, v, name, "counter", help);
		for (size_t i = 0; i < n; i++)
			if (stat_has(&rows[i].n->st, mt->key))
				prom_number(f, name, rows[i].n, NULL,
					    shown(v, rows[i].n, mt->key), mt->scale);
	}
}

/* per cgroup: cgroup_energy[_subtree]_<suffix>, from the view's values */
static void cgroup_families(FILE *f, const struct view *v,
			    const struct row *rows, size_t n)
{
	const char *pre = family_prefix(v), *whose = family_whose(v);
	char name[NAMELEN], help[HELPLEN];
	bool any = false;

	for (size_t m = 0; m < ARRAY_SIZE(cg_metrics); m++) {
		const struct metric *mt = &cg_metrics[m];

		snprintf(name, sizeof(name), "%s%s", pre, mt->name);
		snprintf(help, sizeof(help), "%s of %s.", mt->help, whose);
		prom_head(f, v, name, "counter", help);
		for (size_t i = 0; i < n; i++)
			prom_number(f, name, rows[i].n, NULL,
				    shown(v, rows[i].n, mt->key), mt->scale);
	}

	share_families(f, v, rows, n);

	for (size_t i = 0; i < n; i++)
		for (size_t d = 0; d < ARRAY_SIZE(domains); d++)
			any |= stat_has(&rows[i].n->st, domains[d].key);
	if (any) {
		snprintf(name, sizeof(name), "%sdomain_joules_total", pre);
		snprintf(help, sizeof(help), "Energy per RAPL domain of %s, joules.",
			 whose);
		prom_head(f, v, name, "counter", help);
		for (size_t i = 0; i < n; i++)
			for (size_t d = 0; d < ARRAY_SIZE(domains); d++)
				if (stat_has(&rows[i].n->st, domains[d].key))
					prom_number(f, name, rows[i].n,
						    domains[d].domain,
						    shown(v, rows[i].n, domains[d].key), 6);
	}
}

/*
 * cgroup_energy[_subtree]_watts: energy over the module's clock between
 * the base sample and this one. A cgroup that was not read in both, or
 * whose value went down (removed and created again), has no sample.
 */
static void watts_family(FILE *f, const struct view *v, const struct row *rows,
			 size_t n, double dt)
{
	char name[NAMELEN], help[HELPLEN], num[NUMLEN];

	snprintf(name, sizeof(name), "%swatts", family_prefix(v));
	snprintf(help, sizeof(help), "Power of %s between the module's sample "
		 "of this read and that of one at least 1 s older, watts.",
		 v->hierarchical ? "the cgroup and its descendants" :
		 "the cgroup's own tasks");
	prom_head(f, v, name, "gauge", help);
	for (size_t i = 0; i < n; i++) {
		const struct cg_node *b = sample_find(v->base, rows[i].n->path);
		uint64_t now = shown(v, rows[i].n, K_ENERGY_UJ), then;

		if (!b || !b->ok)
			continue;
		then = shown(v, b, K_ENERGY_UJ);
		if (now < then)
			continue;
		snprintf(num, sizeof(num), "%.6f", (double)(now - then) / 1e6 / dt);
		prom_sample(f, name, rows[i].n, NULL, num);
	}
}

static void root_families(FILE *f, const struct view *v,
			  const struct cg_node *root, double dt)
{
	const struct cg_node *b;
	char num[NUMLEN];

	for (size_t m = 0; m < ARRAY_SIZE(root_metrics); m++) {
		const struct metric *mt = &root_metrics[m];

		if (!stat_has(&root->st, mt->key))
			continue;
		prom_head(f, v, mt->name, "counter", mt->help);
		prom_number(f, mt->name, NULL, NULL, root->st.v[mt->key], mt->scale);
	}
	b = dt > 0 ? sample_find(v->base, "/") : NULL;
	if (b && b->ok && stat_has(&root->st, K_TOTAL_UJ) &&
	    stat_has(&b->st, K_TOTAL_UJ) && root->st.v[K_TOTAL_UJ] >= b->st.v[K_TOTAL_UJ]) {
		prom_head(f, v, "cgroup_energy_measured_watts", "gauge",
			  "Power the source measured or estimated over the window of cgroup_energy_watts, watts.");
		snprintf(num, sizeof(num), "%.6f",
			 (double)(root->st.v[K_TOTAL_UJ] - b->st.v[K_TOTAL_UJ]) / 1e6 / dt);
		prom_sample(f, "cgroup_energy_measured_watts", NULL, NULL, num);
	}
}

/* what energy.info says of the source and the module's health */
static void info_families(FILE *f, const struct view *v)
{
	/* label, energy.info key: unowned is the policy the samples apply */
	static const char *const info_labels[][2] = {
		{ "source", "source" }, { "domains", "domains" },
		{ "split", "split" }, { "unowned", "unowned_applied" },
		{ "version", "version" },
	};
	const struct sample *s = v->s;
	const char *src = info_get(&s->info, "source");
	char num[NUMLEN];
	bool first = true;
	uint64_t x;

	if (src) {
		prom_head(f, v, "cgroup_energy_source_info", "info",
			  "The module's energy source (energy.info); kind is measured (RAPL) or modelled (an estimate).");
		fputs("cgroup_energy_source_info{", f);
		for (size_t l = 0; l < ARRAY_SIZE(info_labels); l++) {
			const char *val = info_get(&s->info, info_labels[l][1]);

			if (!val)
				continue;
			fprintf(f, "%s%s=\"", first ? "" : ",", info_labels[l][0]);
			fput_prom_label(f, val);
			fputc('"', f);
			first = false;
		}
		fprintf(f, ",kind=\"%s\"} 1\n",
			strcmp(src, "model") == 0 ? "modelled" : "measured");
	}
	for (size_t m = 0; m < ARRAY_SIZE(health); m++) {
		if (!info_u64(&s->info, health[m].key, &x))
			continue;
		prom_head(f, v, health[m].name, health[m].type,
			  health[m].help);
		prom_number(f, health[m].name, NULL, NULL, x, health[m].scale);
	}
	if (info_u64(&s->info, "last_sample_ns", &x) && s->mono_ns >= x) {
		prom_head(f, v, "cgroup_energy_last_sample_age_seconds", "gauge",
			  "Time since the module's last completed sample when the tree was read, seconds.");
		fmt_exact(num, sizeof(num), s->mono_ns - x, 9);
		prom_sample(f, "cgroup_energy_last_sample_age_seconds", NULL, NULL, num);
	}
	if (info_u64(&s->info, "interval_ms", &x)) {
		prom_head(f, v, "cgroup_energy_interval_seconds", "gauge",
			  "The module's sampling interval, seconds.");
		fmt_exact(num, sizeof(num), x, 3);
		prom_sample(f, "cgroup_energy_interval_seconds", NULL, NULL, num);
	}
}

/* energystat_build_info: the version of the energystat that wrote the text */
void prom_build_info(FILE *f, const struct view *v)
{
	prom_head(f, v, "energystat_build_info", "info",
		  "The energystat that wrote this; always 1.");
	fputs("energystat_build_info{version=\"" CGE_VERSION "\"} 1\n", f);
}

/*
 * The sample of v as Prometheus text; returns the number of cgroups whose
 * series it has. The root's machine-level families (measured, idle, irq...)
 * do not depend on v->filter. v->exporter: the text is left open for the
 * exporter's own families (health.c), which end it.
 */
size_t out_prometheus(FILE *f, const struct view *v)
{
	size_t n;
	struct row *rows = make_rows(v, &n);
	const struct cg_node *root = sample_find(v->s, "/");
	double dt = watts_window(v);

	if (!rows)
		return 0;
	cgroup_families(f, v, rows, n);
	if (dt > 0)
		watts_family(f, v, rows, n, dt);
	if (!v->hierarchical) {
		prom_head(f, v, "cgroup_energy_clamped_series", "gauge",
			  "Cgroups whose counters were below their descendants' in this read (own values clamped to 0; 0 when they add up).");
		fprintf(f, "cgroup_energy_clamped_series %u\n", v->s->torn);
	}
	if (root && root->ok)
		root_families(f, v, root, dt);
	info_families(f, v);
	if (!v->exporter) {
		prom_build_info(f, v);
		if (v->openmetrics)
			fputs("# EOF\n", f);
	}
	free(rows);
	return n;
}
