// SPDX-License-Identifier: GPL-2.0
/*
 * output.c - the three output formats of one sample: an aligned table, one
 * JSON document (one line) and the Prometheus text exposition format.
 *
 * Rows are the cgroups whose energy.stat was read. Order: the root "/" first,
 * then by the sort key, largest first (cgroups without a rate yet after those
 * with one), then by path; --sort path gives tree order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "energystat.h"

struct row {
	const struct cg_node *n;
	const struct rates *r;	/* NULL in static mode */
	int prio;		/* 0 for the root, 1 for the others */
	int has;		/* has a sort value (live mode: a rate) */
	uint64_t u;		/* static sort value */
	double dv;		/* live sort value */
};

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->prio != y->prio)
		return x->prio - y->prio;
	if (x->has != y->has)
		return y->has - x->has;
	if (x->u != y->u)
		return x->u < y->u ? 1 : -1;
	if (x->dv != y->dv)
		return x->dv < y->dv ? 1 : -1;
	return path_cmp(x->n->path, y->n->path);
}

static enum key_id sort_field(enum sort_key k)
{
	switch (k) {
	case SORT_CPU:
		return K_USAGE_USEC;
	case SORT_WAKEUPS:
		return K_WAKEUPS;
	case SORT_IMPACT:
		return K_IMPACT_USEC;
	default:
		return K_ENERGY_UJ;
	}
}

/* The rows to print, in order; *n set to their number. NULL if none/ENOMEM. */
static struct row *make_rows(const struct view *v, size_t *n)
{
	const struct sample *s = v->s;
	struct row *rows = malloc((s->n ? s->n : 1) * sizeof(*rows));
	enum key_id k = sort_field(v->sort);
	size_t m = 0;

	*n = 0;
	if (!rows)
		return NULL;
	for (size_t i = 0; i < s->n; i++) {
		const struct cg_node *node = &s->nodes[i];
		struct row *r = &rows[m];

		if (!node->ok)
			continue;
		r->n = node;
		r->r = v->rates ? &v->rates[i] : NULL;
		r->prio = strcmp(node->path, "/") != 0;
		r->has = 1;
		r->u = 0;
		r->dv = 0;
		if (v->sort != SORT_PATH) {
			if (!r->r)
				r->u = node->st.v[k];
			else if (r->r->valid && !isnan(r->r->r[k]))
				r->dv = r->r->r[k];
			else
				r->has = 0;
		}
		m++;
	}
	qsort(rows, m, sizeof(*rows), row_cmp);
	*n = m;
	return rows;
}

/* ---- table -------------------------------------------------------------- */

#define NCOLS	4
#define CELL	32

static const enum key_id table_keys[NCOLS] = {
	K_ENERGY_UJ, K_USAGE_USEC, K_WAKEUPS, K_IMPACT_USEC
};
static const char *const static_heads[NCOLS] = {
	"ENERGY(J)", "CPU(s)", "WAKEUPS", "IMPACT(s)"
};
static const char *const live_heads[NCOLS] = {
	"POWER(W)", "CPU%", "WAKEUPS/s", "IMPACT"
};

static void format_cell(char *buf, const struct row *r, int col)
{
	enum key_id k = table_keys[col];

	if (!r->r) {
		if (k == K_WAKEUPS)
			snprintf(buf, CELL, "%llu",
				 (unsigned long long)r->n->st.v[k]);
		else
			fmt_fixed(buf, CELL, r->n->st.v[k], 6, 3);
	} else if (!r->r->valid || isnan(r->r->r[k])) {
		snprintf(buf, CELL, "-");
	} else {
		snprintf(buf, CELL, k == K_ENERGY_UJ ? "%.3f" : "%.1f", r->r->r[k]);
	}
}

void out_table(FILE *f, const struct view *v)
{
	const char *const *heads = v->rates ? live_heads : static_heads;
	size_t n, pathw = strlen("CGROUP"), w[NCOLS];
	struct row *rows = make_rows(v, &n);
	char (*cells)[NCOLS][CELL];

	if (!rows)
		return;
	cells = malloc((n ? n : 1) * sizeof(*cells));
	if (!cells) {
		free(rows);
		return;
	}
	for (int c = 0; c < NCOLS; c++)
		w[c] = strlen(heads[c]);
	for (size_t i = 0; i < n; i++) {
		size_t pw = term_width(rows[i].n->path);

		if (pw > pathw)
			pathw = pw;
		for (int c = 0; c < NCOLS; c++) {
			format_cell(cells[i][c], &rows[i], c);
			if (strlen(cells[i][c]) > w[c])
				w[c] = strlen(cells[i][c]);
		}
	}
	fprintf(f, "%-*s", (int)pathw, "CGROUP");
	for (int c = 0; c < NCOLS; c++)
		fprintf(f, "  %*s", (int)w[c], heads[c]);
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		fput_term(f, rows[i].n->path);
		fprintf(f, "%*s", (int)(pathw - term_width(rows[i].n->path)), "");
		for (int c = 0; c < NCOLS; c++)
			fprintf(f, "  %*s", (int)w[c], cells[i][c]);
		fputc('\n', f);
	}
	free(cells);
	free(rows);
}

/* ---- JSON --------------------------------------------------------------- */

static void json_rates(FILE *f, const struct row *r)
{
	bool first = true;

	if (!r->r->valid) {
		fputs("null", f);
		return;
	}
	fputc('{', f);
	for (int k = 0; k < NKEYS; k++) {
		if (!stat_has(&r->n->st, k))
			continue;
		fprintf(f, "%s\"%s\":", first ? "" : ",", key_table[k].rate);
		if (isnan(r->r->r[k]))
			fputs("null", f);	/* the key is new in this sample */
		else
			fprintf(f, "%.6f", r->r->r[k]);
		first = false;
	}
	fputc('}', f);
}

void out_json(FILE *f, const struct view *v)
{
	size_t n;
	struct row *rows = make_rows(v, &n);

	fprintf(f, "{\"version\":1,\"tool\":\"%s %s\",\"root\":", PROG, CGE_VERSION);
	fput_json_string(f, *v->root ? v->root : "/");
	fprintf(f, ",\"timestamp_ns\":%llu,\"mode\":\"%s\"",
		(unsigned long long)v->s->real_ns, v->rates ? "live" : "static");
	if (v->rates)
		fprintf(f, ",\"interval_s\":%.6f,\"clock\":\"%s\",\"reset\":%s",
			v->interval_s, v->clock, v->reset ? "true" : "false");
	fputs(",\"info\":{", f);
	for (size_t i = 0; i < v->s->info.n; i++) {
		if (i)
			fputc(',', f);
		fput_json_string(f, v->s->info.kv[i].key);
		fputc(':', f);
		fput_json_string(f, v->s->info.kv[i].value);
	}
	fputs("},\"cgroups\":[", f);
	for (size_t i = 0; rows && i < n; i++) {
		const struct cg_node *node = rows[i].n;
		bool first = true;

		fputs(i ? ",{\"path\":" : "{\"path\":", f);
		fput_json_string(f, node->path);
		fprintf(f, ",\"depth\":%u,\"stat\":{", node->depth);
		for (int k = 0; k < NKEYS; k++) {
			if (!stat_has(&node->st, k))
				continue;
			fprintf(f, "%s\"%s\":%llu", first ? "" : ",", key_table[k].name,
				(unsigned long long)node->st.v[k]);
			first = false;
		}
		fputc('}', f);
		if (rows[i].r) {
			fputs(",\"rates\":", f);
			json_rates(f, &rows[i]);
		}
		fputc('}', f);
	}
	fputs("]}\n", f);
	free(rows);
}

/* ---- Prometheus --------------------------------------------------------- */

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

static void prom_sample(FILE *f, const char *name, const char *cgroup,
			const char *domain, uint64_t v, unsigned int scale)
{
	char num[CELL];

	fmt_exact(num, sizeof(num), v, scale);
	fputs(name, f);
	if (cgroup) {
		fputs("{cgroup=\"", f);
		fput_prom_label(f, cgroup);
		fputc('"', f);
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
			prom_sample(f, mt->name, rows[i].n->path, NULL,
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
					prom_sample(f, name, rows[i].n->path,
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
