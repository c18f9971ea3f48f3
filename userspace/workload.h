/* SPDX-License-Identifier: GPL-2.0 */
/*
 * workload.h - pods, containers and units from cgroup paths (pure).
 */
#ifndef ENERGYSTAT_WORKLOAD_H
#define ENERGYSTAT_WORKLOAD_H

#include <stddef.h>

#include "sample.h"

/* workload_label's buffer: namespace/pod/container at their longest */
#define WORKLOAD_LABEL	384

void workload_parse(const char *path, struct workload *wl);
void workload_label(const struct workload *wl, char *buf, size_t sz);

#endif /* ENERGYSTAT_WORKLOAD_H */
