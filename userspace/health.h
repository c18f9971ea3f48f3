/* SPDX-License-Identifier: GPL-2.0 */
/*
 * health.h - the exporter's own state: whether the module's tree could be
 * read and why not, and its health counters, as Prometheus families.
 */
#ifndef ENERGYSTAT_HEALTH_H
#define ENERGYSTAT_HEALTH_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "tree.h"
#include "view.h"

/* Why a scrape has, or has not, the tree's series: cgroup_energy_up_info */
enum up_reason {
	UP_OK,
	UP_NOT_LOADED,
	UP_NOT_MOUNTED,
	UP_PERMISSION_DENIED,
	UP_NOT_A_TREE,
	UP_READ_ERROR,
	UP_TIMEOUT,
	UP_TORN,
	NREASONS
};

struct health {
	pthread_mutex_t lock;		/* scrapes run at once: guards below */
	uint64_t scrapes;		/* scrapes begun */
	uint64_t errors[NREASONS];	/* scrapes ended without the tree */
	enum up_reason last;		/* the latest state, logged when it changes;
					 * NREASONS: none known yet */
};

/* one scrape's outcome, for its own text */
struct scrape_result {
	enum up_reason reason;
	size_t cgroups;			/* cgroups whose series it has */
	uint64_t start_ns;		/* CLOCK_MONOTONIC when it arrived */
};

void health_init(struct health *h);
void health_start(struct health *h, const struct tree *t);
void health_destroy(struct health *h);
void health_begin(struct health *h);
enum up_reason health_reason(enum tree_state ts);
void health_end(struct health *h, const struct tree *t, enum up_reason r);
void health_write(FILE *f, const struct view *v, struct health *h,
		  const struct scrape_result *r);

#endif /* ENERGYSTAT_HEALTH_H */
