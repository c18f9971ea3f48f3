// SPDX-License-Identifier: GPL-2.0
/*
 * output.c - the rows of one sample in order, and two of its output formats:
 * an aligned table and one JSON document (one line). prom.c has the third.
 *
 * Rows are the cgroups whose energy.stat was read (and that the view's
 * filter keeps: --include, --exclude). Order: the root "/" first,
 * then by the sort key, largest first (cgroups without a rate yet after those
 * with one), then by path; --sort path gives tree order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "stat.h"
#include "tree.h"
#include "text.h"
#include "units.h"
#include "workload.h"
#include "view.h"

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
struct row *make_rows(const struct view *v, size_t *n)
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

		if (!node->ok || (v->hide && v->hide[i]) ||
		    !filter_match(v->filter, node->path))
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

#define CELL		32
#define HEAD		16
#define WL_MIN		10	/* WORKLOAD's columns when CGROUP needs the rest */

/* idle_share_uj + sys_share_uj: table_keys[] names the first of the two */
#define COL_SHARE	1

static const enum key_id table_keys[TABLE_NCOLS] = {
	K_ENERGY_UJ, K_IDLE_SHARE_UJ, K_USAGE_USEC, K_WAKEUPS, K_IMPACT_USEC
};
/* the heads with --raw, then those with human units in the energy columns */
static const char *const static_heads[2][TABLE_NCOLS] = {
	{ "ENERGY(J)", "SHARE(J)", "CPU(s)", "WAKEUPS", "IMPACT(s)" },
	{ "ENERGY", "SHARE", "CPU(s)", "WAKEUPS", "IMPACT(s)" },
};
static const char *const live_heads[2][TABLE_NCOLS] = {
	{ "POWER(W)", "SHARE(W)", "CPU%", "WAKEUPS/s", "IMPACT" },
	{ "POWER", "SHARE", "CPU%", "WAKEUPS/s", "IMPACT" },
};

/*
 * Whether the table has column c: SHARE only when the read has the share
 * keys and the root's shares are not 0 (a module with unowned=none, or
 * one without the keys, gives the table of the four others).
 */
static bool col_shown(const struct view *v, int c)
{
	const struct cg_stat *root = &v->s->root;

	if (c != COL_SHARE)
		return true;
	return (stat_has(root, K_IDLE_SHARE_UJ) && root->v[K_IDLE_SHARE_UJ]) ||
	       (stat_has(root, K_SYS_SHARE_UJ) && root->v[K_SYS_SHARE_UJ]);
}

/* Energy cell: microjoules as the energy column shows them. */
static void format_uj(char *buf, uint64_t uj, bool raw)
{
	if (raw)
		fmt_fixed(buf, CELL, uj, 6, 3);
	else
		fmt_energy(buf, CELL, uj);
}

/* Power cell: watts as the power column shows them; NaN: none yet. */
static void format_w(char *buf, double w, bool raw)
{
	if (isnan(w))
		snprintf(buf, CELL, "-");
	else if (raw)
		snprintf(buf, CELL, "%.3f", w);
	else
		fmt_power(buf, CELL, w);
}

/*
 * The SHARE cell: the cgroup's part of the energy no task drew, idle's and
 * irq, softirq and steal's together ("-" when its file has neither key).
 */
static void format_share(char *buf, const struct row *r, bool raw)
{
	const struct cg_stat *st = &r->n->st;
	bool has = stat_has(st, K_IDLE_SHARE_UJ) || stat_has(st, K_SYS_SHARE_UJ);
	uint64_t uj;

	if (!has || (r->r && !r->r->valid)) {
		snprintf(buf, CELL, "-");
	} else if (!r->r) {
		if (__builtin_add_overflow(st->v[K_IDLE_SHARE_UJ],
					   st->v[K_SYS_SHARE_UJ], &uj))
			uj = UINT64_MAX;
		format_uj(buf, uj, raw);
	} else {
		/* a key the file lacks counts 0; a key new in it has no rate */
		format_w(buf, (stat_has(st, K_IDLE_SHARE_UJ) ?
			       r->r->r[K_IDLE_SHARE_UJ] : 0) +
			      (stat_has(st, K_SYS_SHARE_UJ) ?
			       r->r->r[K_SYS_SHARE_UJ] : 0), raw);
	}
}

/* One number cell: --raw as always, else energy and power in human units. */
static void format_cell(char *buf, const struct row *r, int col, bool raw)
{
	enum key_id k = table_keys[col];

	if (col == COL_SHARE) {
		format_share(buf, r, raw);
	} else if (!r->r) {
		if (k == K_WAKEUPS)
			snprintf(buf, CELL, "%llu",
				 (unsigned long long)r->n->st.v[k]);
		else if (k == K_ENERGY_UJ)
			format_uj(buf, r->n->st.v[k], raw);
		else
			fmt_fixed(buf, CELL, r->n->st.v[k], 6, 3);
	} else if (!r->r->valid || isnan(r->r->r[k])) {
		snprintf(buf, CELL, "-");
	} else if (k == K_ENERGY_UJ) {
		format_w(buf, r->r->r[k], raw);
	} else {
		snprintf(buf, CELL, "%.1f", r->r->r[k]);
	}
}

static size_t max_sz(size_t a, size_t b)
{
	return a > b ? a : b;
}

static size_t clamp_sz(size_t v, size_t lo, size_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * Widths of CGROUP and WORKLOAD in the columns the number columns leave:
 * CGROUP first, up to all but WL_MIN of them, WORKLOAD the rest (at least
 * its header). A terminal too narrow even for that gets longer lines.
 */
static void fit_widths(const struct table_fit *fit, const bool *shown,
		       bool top, size_t *pathw, size_t *wlw)
{
	size_t used = 2, left, wl_min = fit->wl < WL_MIN ? fit->wl : WL_MIN;

	for (int c = 0; c < TABLE_NCOLS; c++)
		if (shown[c])
			used += 2 + fit->num[c];
	left = fit->cols > used ? fit->cols - used : 0;
	if (top) {	/* no WORKLOAD column: it is in CGROUP's */
		*pathw = clamp_sz(left + 2, strlen("CGROUP"), fit->path);
		*wlw = 0;
		return;
	}
	*pathw = clamp_sz(left > wl_min ? left - wl_min : 0, strlen("CGROUP"),
			  fit->path);
	*wlw = clamp_sz(left > *pathw ? left - *pathw : 0, strlen("WORKLOAD"),
			fit->wl);
}

#define PATH_MIN	16	/* CGROUP's columns kept for the path after WORKLOAD */

/*
 * The interactive view's name: the workload (when it says more than the
 * path's last name) then the path. Sets *lw to the label's width, 0 when
 * it is not shown.
 */
static size_t name_width(const char *path, const char *label, size_t *lw)
{
	const char *last = strrchr(path, '/');

	*lw = 0;
	if (strcmp(label, "-") != 0 && (!last || strcmp(last + 1, label) != 0))
		*lw = term_width(label);
	return term_width(path) + (*lw ? *lw + 2 : 0);
}

/*
 * Print a row's name in width columns: the path cut in the middle, after
 * the workload (top) when one is shown, itself cut at its end when the path
 * would keep fewer than PATH_MIN columns. Returns the columns printed.
 */
static size_t put_name(FILE *f, const char *path, const char *label,
		       size_t width, bool top)
{
	size_t lw, pw, used = 0;

	if (top)
		name_width(path, label, &lw);
	else
		lw = 0;
	if (lw) {
		pw = term_width(path);
		pw = pw < PATH_MIN ? pw : PATH_MIN;
		if (lw + 2 + pw > width)
			lw = width > pw + 2 ? width - pw - 2 : 0;
		if (lw) {
			used = fput_term_fit(f, label, lw, false);
			fputs("  ", f);
			used += 2;
		}
	}
	return used + fput_term_mid(f, path, width - used);
}

/*
 * The table, fitted to v->fit: paths cut in the middle (keeping the slice
 * at their start and the cgroup at their end), workloads keeping their
 * head, at most max_rows rows after the header. A "~" after the energy
 * and share columns' heads marks modelled figures (energy.info "source
 * model"): estimates, not measurements. v->top: the workload before the
 * path in the CGROUP column, no WORKLOAD column.
 */
void out_table(FILE *f, const struct view *v)
{
	const char *const *heads = v->rates ? live_heads[!v->raw] :
					      static_heads[!v->raw];
	const char *src = info_get(&v->s->info, "source");
	struct table_fit *fit = v->fit;
	size_t n, pathw, wlw;
	char head[TABLE_NCOLS][HEAD];
	bool shown[TABLE_NCOLS];
	char (*labels)[WORKLOAD_LABEL];
	struct row *rows = make_rows(v, &n);
	char (*cells)[TABLE_NCOLS][CELL];

	if (!rows)
		return;
	cells = malloc((n ? n : 1) * sizeof(*cells));
	labels = malloc((n ? n : 1) * sizeof(*labels));
	if (!cells || !labels)
		goto out;
	for (int c = 0; c < TABLE_NCOLS; c++) {
		shown[c] = col_shown(v, c);
		snprintf(head[c], HEAD, "%s%s", heads[c],
			 (c == 0 || c == COL_SHARE) && src &&
			 strcmp(src, "model") == 0 ? "~" : "");
		if (shown[c])
			fit->num[c] = max_sz(fit->num[c], strlen(head[c]));
	}
	fit->path = max_sz(fit->path, strlen("CGROUP"));
	fit->wl = max_sz(fit->wl, strlen("WORKLOAD"));
	for (size_t i = 0; i < n; i++) {
		size_t lw;

		workload_label(&rows[i].n->wl, labels[i], sizeof(labels[i]));
		fit->path = max_sz(fit->path, v->top ?
				   name_width(rows[i].n->path, labels[i], &lw) :
				   term_width(rows[i].n->path));
		fit->wl = max_sz(fit->wl, term_width(labels[i]));
		for (int c = 0; c < TABLE_NCOLS; c++) {
			if (!shown[c])
				continue;
			format_cell(cells[i][c], &rows[i], c, v->raw);
			fit->num[c] = max_sz(fit->num[c], strlen(cells[i][c]));
		}
	}
	fit_widths(fit, shown, v->top, &pathw, &wlw);
	if (fit->max_rows && n > fit->max_rows)
		n = fit->max_rows;
	fprintf(f, "%-*s", (int)pathw, "CGROUP");
	for (int c = 0; c < TABLE_NCOLS; c++)
		if (shown[c])
			fprintf(f, "  %*s", (int)fit->num[c], head[c]);
	fputs(v->top ? "\n" : "  WORKLOAD\n", f);
	for (size_t i = 0; i < n; i++) {
		size_t w = put_name(f, rows[i].n->path, labels[i], pathw, v->top);

		fprintf(f, "%*s", (int)(pathw - w), "");
		for (int c = 0; c < TABLE_NCOLS; c++)
			if (shown[c])
				fprintf(f, "  %*s", (int)fit->num[c],
					cells[i][c]);
		if (!v->top) {
			fputs("  ", f);
			fput_term_fit(f, labels[i], wlw, false);
		}
		fputc('\n', f);
	}
out:
	free(labels);
	free(cells);
	free(rows);
}

/* ---- the machine line ---------------------------------------------------- */

/* the root's parts of total_uj, in the order of the contract's identity */
static const struct {
	const char *name;
	enum key_id k;
} machine_parts[] = {
	{ "tasks", K_ENERGY_UJ }, { "idle", K_IDLE_UJ }, { "irq", K_IRQ_UJ },
	{ "softirq", K_SOFTIRQ_UJ }, { "steal", K_STEAL_UJ },
};

/* One part's value: energy since the module loaded, or power. */
static void machine_value(char *buf, const struct view *v, enum key_id k)
{
	if (!v->machine) {
		if (v->raw) {
			fmt_exact(buf, CELL - 2, v->s->root.v[k], 6);
			strcat(buf, " J");
		} else {
			fmt_energy(buf, CELL, v->s->root.v[k]);
		}
	} else if (isnan(v->machine->r[k])) {
		snprintf(buf, CELL, "-");
	} else if (v->raw) {
		snprintf(buf, CELL, "%.3f W", v->machine->r[k]);
	} else {
		fmt_power(buf, CELL, v->machine->r[k]);
	}
}

/*
 * The machine's energy (or power) and its parts, from the root's keys:
 * total_uj == energy_uj (tasks) + idle_uj + irq_uj + softirq_uj + steal_uj
 * (docs/contract.md), the parts an older module lacks left out. Wrapped to
 * cols; f NULL only counts. Returns the lines, 0 without total_uj.
 */
size_t out_machine(FILE *f, const struct view *v, size_t cols)
{
	const struct cg_stat *root = &v->s->root;
	char item[64], val[CELL];
	size_t col = 0, lines = 1;

	if (!stat_has(root, K_TOTAL_UJ))
		return 0;
	machine_value(val, v, K_TOTAL_UJ);
	col = (size_t)snprintf(item, sizeof(item), "machine%s: total %s",
			       v->machine ? "" : " since load", val);
	if (f)
		fputs(item, f);
	for (size_t i = 0; i < ARRAY_SIZE(machine_parts); i++) {
		size_t len;

		if (!stat_has(root, machine_parts[i].k))
			continue;
		machine_value(val, v, machine_parts[i].k);
		len = (size_t)snprintf(item, sizeof(item), "%s %s %s",
				       i ? "+" : "=", machine_parts[i].name, val);
		if (col + 1 + len > cols) {
			lines++;
			col = 1;
			if (f)
				fputs("\n ", f);
		}
		if (f)
			fprintf(f, " %s", item);
		col += 1 + len;
	}
	if (f)
		fputc('\n', f);
	return lines;
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

/* "workload":{...} with the fields that are set, {} when none is */
static void json_workload(FILE *f, const struct workload *wl)
{
	const struct {
		const char *name, *value;
	} fields[] = {
		{ "pod_uid", wl->pod_uid }, { "qos", wl->qos },
		{ "container_id", wl->container_id },
		{ "runtime", wl->runtime ? wl->runtime : "" }, { "unit", wl->unit },
		{ "namespace", wl->namespace }, { "pod", wl->pod },
		{ "container", wl->container },
		{ "container_type", wl->container_type ? wl->container_type : "" },
	};
	bool first = true;

	fputs("\"workload\":{", f);
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		if (!fields[i].value[0])
			continue;
		fprintf(f, "%s\"%s\":", first ? "" : ",", fields[i].name);
		fput_json_string(f, fields[i].value);
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
		fprintf(f, ",\"depth\":%u,", node->depth);
		json_workload(f, &node->wl);
		fputs(",\"stat\":{", f);
		for (int k = 0; k < NKEYS; k++) {
			if (!stat_has(&node->st, k))
				continue;
			fprintf(f, "%s\"%s\":%llu", first ? "" : ",", key_table[k].name,
				(unsigned long long)node->st.v[k]);
			first = false;
		}
		fputs("},\"own\":{", f);
		first = true;
		for (int k = 0; k < NKEYS; k++) {
			if (!stat_has(&node->st, k) || !key_adds_up(k))
				continue;
			fprintf(f, "%s\"%s\":%llu", first ? "" : ",", key_table[k].name,
				(unsigned long long)node->own[k]);
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
