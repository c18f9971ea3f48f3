/* SPDX-License-Identifier: GPL-2.0 */
/*
 * impact.h - Apple's Energy Impact formula and its coefficients.
 *
 * The energy impact of a cgroup in one interval, in CPU-ns equivalents:
 *
 *   kcpu_time * fg_ns + kqos_background * bg_ns + kcpu_wakeups * wakeups
 *
 * The default coefficients are the energy-impact coefficients of macOS's
 * default.plist: kcpu_time 1.0, kcpu_wakeups 2.0e-4 (seconds of CPU per
 * wakeup), kqos_background 0.8 (per CPU-second of time in the QoS classes
 * background and maintenance; here: SCHED_IDLE, SCHED_BATCH and nice >= 10,
 * while other CPU time counts as default QoS).
 *
 * Coefficients are unsigned fixed point with 9 decimal places: 1.0 is
 * CGE_COEF_ONE. The precision is therefore 1e-9, i.e. 1 ns per CPU-second
 * for the time coefficients and 1 ns per wakeup for kcpu_wakeups (whose
 * value in 1e-9 s units is exactly the ns charged per wakeup).
 *
 * Pure integer arithmetic: no locking, no allocation, no floating point,
 * no hardware access.
 */
#ifndef CGE_IMPACT_H
#define CGE_IMPACT_H

#include <linux/types.h>

/* Coefficients are fixed point with 9 decimal places: 1.0 == CGE_COEF_ONE. */
#define CGE_COEF_ONE	1000000000ULL

/**
 * struct cge_impact_coefs - energy impact coefficients, in CGE_COEF_ONE units
 * @kcpu_time: per CPU-second of default-QoS time; default 1.0
 * @kcpu_wakeups: seconds per wakeup; default 2e-4 (== 200000 ns per wakeup)
 * @kqos_background: per CPU-second of background time; default 0.8
 */
struct cge_impact_coefs {
	u64 kcpu_time;
	u64 kcpu_wakeups;
	u64 kqos_background;
};

/*
 * The largest coefficients accepted: 10.0 per CPU-second for the time
 * coefficients, 0.01 s per wakeup (10 and 50 times macOS's defaults). At
 * them the root's impact_usec of a 4,096-CPU machine with every CPU busy
 * reaches 2^64 in 14 years, a 64-CPU machine's at 10,000 wakeups a second
 * per CPU in 91 years; totals stop there (total.c).
 */
#define CGE_COEF_MAX_TIME	(10 * CGE_COEF_ONE)
#define CGE_COEF_MAX_WAKEUP	(CGE_COEF_ONE / 100)

/* macOS default.plist: kcpu_time 1.0, kcpu_wakeups 2.0e-4, kqos_background 0.8 */
#define CGE_IMPACT_DEFAULTS	{ CGE_COEF_ONE, 200000, 800000000 }

int cge_coef_parse(const char *s, u64 max, u64 *out);
int cge_coef_format(char *buf, size_t size, u64 v);
u64 cge_impact_ns(const struct cge_impact_coefs *k, u64 fg_ns, u64 bg_ns,
		  u64 wakeups);

#endif /* CGE_IMPACT_H */
