/* SPDX-License-Identifier: GPL-2.0 */
/*
 * series.h - each cgroup's own share of its counters (pure).
 */
#ifndef ENERGYSTAT_SERIES_H
#define ENERGYSTAT_SERIES_H

#include "sample.h"

unsigned int series_own(struct sample *s);

#endif /* ENERGYSTAT_SERIES_H */
