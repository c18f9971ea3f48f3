/* SPDX-License-Identifier: GPL-2.0 */
/*
 * diag.h - error messages: one line each, with the "energystat: " prefix.
 */
#ifndef ENERGYSTAT_DIAG_H
#define ENERGYSTAT_DIAG_H

#define PROG "energystat"

struct diag {
	unsigned long errors;	/* per-cgroup problems (exit status 1) */
	unsigned long shown;
	unsigned long limit;	/* print at most this many, count the rest */
};

void diag_error(struct diag *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void diag_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void diag_finish(struct diag *d);

#endif /* ENERGYSTAT_DIAG_H */
