/* SPDX-License-Identifier: GPL-2.0 */
/*
 * units.h - energy and power in units a reader takes in at a glance
 * (J, kJ, Wh, kWh; W), for the table and the live view; --raw bypasses it.
 */
#ifndef ENERGYSTAT_UNITS_H
#define ENERGYSTAT_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define UNITS_CELL	16	/* fits any fmt_energy / fmt_power result */

void fmt_energy(char *buf, size_t sz, uint64_t uj);
void fmt_power(char *buf, size_t sz, double watts);

#endif /* ENERGYSTAT_UNITS_H */
