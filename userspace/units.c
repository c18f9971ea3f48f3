// SPDX-License-Identifier: GPL-2.0
/*
 * units.c - energy and power for people: one unit per value, chosen so that
 * the number has at most four digits before its point (J below 1 kJ, kJ
 * below 10 Wh, Wh below 1 kWh, kWh above; W for power) and three
 * significant digits at least (two decimals below 10, one below 100).
 */
#include <stdio.h>

#include "units.h"

/* v with the decimals its size calls for, then the unit. */
static void human(char *buf, size_t sz, double v, const char *unit)
{
	int dec = v < 9.995 ? 2 : v < 99.95 ? 1 : 0;

	snprintf(buf, sz, "%.*f %s", dec, v, unit);
}

/* Microjoules as "12.5 J", "110 kJ" style: see the file's comment. */
void fmt_energy(char *buf, size_t sz, uint64_t uj)
{
	double j = (double)uj / 1e6;

	if (j < 999.5)
		human(buf, sz, j, "J");
	else if (j < 36000)		/* 10 Wh */
		human(buf, sz, j / 1e3, "kJ");
	else if (j < 3600 * 999.5)
		human(buf, sz, j / 3600, "Wh");
	else
		human(buf, sz, j / 3.6e6, "kWh");
}

/* Watts as "0.05 W", "35.2 W", "120 W". */
void fmt_power(char *buf, size_t sz, double watts)
{
	human(buf, sz, watts, "W");
}
