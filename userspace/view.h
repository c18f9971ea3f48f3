/* SPDX-License-Identifier: GPL-2.0 */
/*
 * view.h - what output.c (rows in order, table and JSON) and prom.c
 * (Prometheus text) print: a sample, its rates and how to show them.
 */
#ifndef ENERGYSTAT_VIEW_H
#define ENERGYSTAT_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "filter.h"
#include "sample.h"

enum sort_key { SORT_ENERGY, SORT_CPU, SORT_WAKEUPS, SORT_IMPACT, SORT_PATH };

struct rates {
	bool valid;
	double r[NKEYS];	/* per key, by key_table[k].kind */
};

/*
 * The table's number columns: ENERGY (POWER), SHARE, CPU, WAKEUPS, IMPACT.
 * SHARE only when the module shares the energy no task drew (output.c).
 */
#define TABLE_NCOLS	5

/*
 * The table's shape: the terminal's size (set by the caller before each
 * table) and the widest cell seen per column, kept between the frames of
 * live mode so that columns do not move.
 */
struct table_fit {
	size_t cols;		/* terminal columns */
	size_t max_rows;	/* cgroup rows to print; 0: all */
	size_t num[TABLE_NCOLS];
	size_t path, wl;	/* CGROUP and WORKLOAD */
};

struct view {
	const struct sample *s;
	const struct rates *rates;	/* NULL in static mode; else one per node */
	double interval_s;		/* live mode only */
	const char *clock;		/* "module" or "wall", live mode only */
	bool reset;			/* counters restarted, re-baselined */
	const char *root;
	enum sort_key sort;
	bool hierarchical;		/* Prometheus: subtree counters */
	bool openmetrics;		/* Prometheus: OpenMetrics 1.0 text */
	const struct sample *base;	/* Prometheus: earlier sample for watts */
	const struct filter *filter;	/* Prometheus: whose series; NULL all */
	bool exporter;			/* Prometheus: the caller ends the text */
	struct table_fit *fit;		/* table: its shape */
	bool raw;			/* table: exact numbers, no human units */
	bool top;			/* table: the interactive view's layout */
	const bool *hide;		/* per node: left out (live depth); NULL: none */
	const struct rates *machine;	/* the root's rates; NULL: since load */
};

struct row {
	const struct cg_node *n;
	const struct rates *r;	/* NULL in static mode */
	int prio;		/* 0 for the root, 1 for the others */
	int has;		/* has a sort value (live mode: a rate) */
	uint64_t u;		/* static sort value */
	double dv;		/* live sort value */
};

struct row *make_rows(const struct view *v, size_t *n);
void out_table(FILE *f, const struct view *v);
size_t out_machine(FILE *f, const struct view *v, size_t cols);
void out_json(FILE *f, const struct view *v);
size_t out_prometheus(FILE *f, const struct view *v);
void prom_head(FILE *f, const struct view *v, const char *name,
	       const char *type, const char *help);
void prom_build_info(FILE *f, const struct view *v);

#endif /* ENERGYSTAT_VIEW_H */
