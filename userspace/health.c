// SPDX-License-Identifier: GPL-2.0
/*
 * health.c - the exporter's module state and its own health metrics, the
 * families that end every /metrics response, whatever the module's state:
 *
 *   cgroup_energy_up                   1: this scrape read the tree; 0: not
 *   cgroup_energy_up_info{reason}      why (one series, value 1)
 *   energystat_scrapes_total           scrapes of /metrics, this one included
 *   energystat_scrape_errors_total{reason}  scrapes with cgroup_energy_up 0
 *   energystat_scrape_duration_seconds this scrape's time until this family
 *   energystat_exported_cgroups        cgroups whose series it has
 *   energystat_build_info{version}
 *
 * The counters are updated under a lock of their own, since scrapes run at
 * once (one per connection thread) and only one reads the tree at a time.
 * A change of the module state is logged once, not at every scrape.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diag.h"
#include "text.h"
#include "health.h"

static const char *const reason_names[NREASONS] = {
	[UP_OK] = "ok",
	[UP_NOT_LOADED] = "not_loaded",
	[UP_NOT_MOUNTED] = "not_mounted",
	[UP_PERMISSION_DENIED] = "permission_denied",
	[UP_NOT_A_TREE] = "not_a_tree",
	[UP_READ_ERROR] = "read_error",
	[UP_TIMEOUT] = "timeout",
	[UP_TORN] = "torn",
};

/* The reason a tree_probe() state gives. */
enum up_reason health_reason(enum tree_state ts)
{
	switch (ts) {
	case TS_OK:
		return UP_OK;
	case TS_NOT_LOADED:
		return UP_NOT_LOADED;
	case TS_NOT_MOUNTED:
		return UP_NOT_MOUNTED;
	case TS_PERMISSION:
		return UP_PERMISSION_DENIED;
	case TS_NOT_A_TREE:
		return UP_NOT_A_TREE;
	default:
		return UP_READ_ERROR;
	}
}

/* Log why the tree cannot be read now that it cannot (r not UP_OK). */
static void log_down(const struct tree *t, enum up_reason r)
{
	if (r == UP_TIMEOUT)
		diag_msg("a scrape could not read the tree in time: /metrics has "
			 "cgroup_energy_up 0 (reason timeout) until one can");
	else if (r == UP_TORN)
		diag_msg("every read of a scrape straddled one of the module's "
			 "samples: /metrics has cgroup_energy_up 0 (reason torn) "
			 "until one does not");
	else if (tree_probe(t, true) == TS_OK)
		diag_msg("cannot read the tree (reason %s)", reason_names[r]);
	else
		diag_msg("until the tree can be read, /metrics has the exporter's "
			 "own metrics and cgroup_energy_up 0 (reason %s)",
			 reason_names[r]);
}

/* Before the server starts: no scrape yet, no state known. */
void health_init(struct health *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->lock, NULL);
	h->last = NREASONS;
}

/*
 * Once it listens: the tree's state now, and why it cannot be read, if
 * so, unless a scrape already said (scrapes may come at once).
 */
void health_start(struct health *h, const struct tree *t)
{
	enum up_reason r = health_reason(tree_probe(t, false));
	bool first;

	pthread_mutex_lock(&h->lock);
	first = h->last == NREASONS;
	if (first)
		h->last = r;
	pthread_mutex_unlock(&h->lock);
	if (first && r != UP_OK)
		log_down(t, r);
}

void health_destroy(struct health *h)
{
	pthread_mutex_destroy(&h->lock);
}

/* A scrape of /metrics begins. */
void health_begin(struct health *h)
{
	pthread_mutex_lock(&h->lock);
	h->scrapes++;
	pthread_mutex_unlock(&h->lock);
}

/* A scrape ended with r: count it if an error, log a change of state. */
void health_end(struct health *h, const struct tree *t, enum up_reason r)
{
	enum up_reason was;

	pthread_mutex_lock(&h->lock);
	if (r != UP_OK)
		h->errors[r]++;
	was = h->last;
	h->last = r;
	pthread_mutex_unlock(&h->lock);
	if (r == was || (r == UP_OK && was == NREASONS))
		return;
	if (r == UP_OK)
		diag_msg("the tree can be read again: /metrics has its series "
			 "(cgroup_energy_up 1)");
	else
		log_down(t, r);
}

static void health_gauge(FILE *f, const struct view *v, const char *name,
			 const char *help, const char *value)
{
	prom_head(f, v, name, "gauge", help);
	fprintf(f, "%s %s\n", name, value);
}

/*
 * The families of the module state and of the exporter's health for the
 * scrape r, then energystat_build_info and, in OpenMetrics, # EOF.
 * cgroup_energy_up_info is a gauge in both formats: an OpenMetrics info
 * family of that name would be called cgroup_energy_up, as the gauge is.
 */
void health_write(FILE *f, const struct view *v, struct health *h,
		  const struct scrape_result *r)
{
	uint64_t errors[NREASONS], scrapes;
	char num[32];

	pthread_mutex_lock(&h->lock);
	scrapes = h->scrapes;
	memcpy(errors, h->errors, sizeof(errors));
	pthread_mutex_unlock(&h->lock);

	health_gauge(f, v, "cgroup_energy_up",
		     "1 when this scrape read the cgroup_energy tree, else 0 (the reason in cgroup_energy_up_info).",
		     r->reason == UP_OK ? "1" : "0");
	prom_head(f, v, "cgroup_energy_up_info", "gauge",
		  "Why cgroup_energy_up is what it is: ok, not_loaded, not_mounted, permission_denied, not_a_tree, read_error, timeout or torn; always 1.");
	fprintf(f, "cgroup_energy_up_info{reason=\"%s\"} 1\n",
		reason_names[r->reason]);
	prom_head(f, v, "energystat_scrapes_total", "counter",
		  "Scrapes of /metrics (GET and HEAD), this one included.");
	fprintf(f, "energystat_scrapes_total %llu\n", (unsigned long long)scrapes);
	prom_head(f, v, "energystat_scrape_errors_total", "counter",
		  "Scrapes of /metrics without the tree's series (cgroup_energy_up 0), by reason.");
	for (int i = UP_OK + 1; i < NREASONS; i++)
		fprintf(f, "energystat_scrape_errors_total{reason=\"%s\"} %llu\n",
			reason_names[i], (unsigned long long)errors[i]);
	fmt_exact(num, sizeof(num), clock_ns(CLOCK_MONOTONIC) - r->start_ns, 9);
	health_gauge(f, v, "energystat_scrape_duration_seconds",
		     "Time this scrape took to read the tree and write its series, seconds.",
		     num);
	snprintf(num, sizeof(num), "%zu", r->cgroups);
	health_gauge(f, v, "energystat_exported_cgroups",
		     "Cgroups whose series this scrape has (after --include and --exclude).",
		     num);
	prom_build_info(f, v);
	if (v->openmetrics)
		fputs("# EOF\n", f);
}
