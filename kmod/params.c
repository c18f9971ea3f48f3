// SPDX-License-Identifier: GPL-2.0
/*
 * params.c - module parameters. A bad value is refused with -EINVAL, the old
 * value is kept, and the kernel log names what was refused.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/string.h>
#include <linux/stringify.h>
#include <linux/mutex.h>

#include "params.h"
#include "model.h"
#include "impact.h"
#include "unowned.h"
#include "cpuset.h"

unsigned int cge_interval_ms = 100;
unsigned int cge_model_idle_mw = 740;
unsigned int cge_model_busy_mw = 3500;
int cge_source_param = CGE_SOURCE_AUTO;
int cge_split_param = CGE_SPLIT_IMPACT;
int cge_unowned_param = CGE_UNOWNED_NONE;
static struct cge_impact_coefs cge_coefs = CGE_IMPACT_DEFAULTS;

/* Serialises writers that validate one parameter against another. */
static DEFINE_MUTEX(cge_params_lock);

/*
 * False while the module loads: the load-time values arrive one by one in
 * the command line's order, so the model's pair is checked as a pair once
 * all have arrived (cge_params_load()), not against the other's default.
 */
static bool cge_params_live;

static const char * const cge_source_names[] = {
	[CGE_SOURCE_AUTO] = "auto",
	[CGE_SOURCE_RAPL] = "rapl",
	[CGE_SOURCE_MODEL] = "model",
};

static const char * const cge_split_names[] = {
	[CGE_SPLIT_TIME] = "time",
	[CGE_SPLIT_IMPACT] = "impact",
};

static const char * const cge_unowned_names[] = {
	[CGE_UNOWNED_NONE] = "none",
	[CGE_UNOWNED_WEIGHT] = "weight",
	[CGE_UNOWNED_CPUSET] = "cpuset",
};

const char *cge_unowned_name(int policy)
{
	return cge_unowned_names[policy];
}

const char *cge_split_name(int kind)
{
	return cge_split_names[kind];
}

static int cge_refuse(const struct kernel_param *kp, const char *val,
		      const char *why)
{
	pr_warn("refused %s=%s: %s\n", kp->name, val, why);
	return -EINVAL;
}

static int cge_set_interval(const char *val, const struct kernel_param *kp)
{
	unsigned int v;

	if (kstrtouint(val, 0, &v) || v < CGE_INTERVAL_MS_MIN ||
	    v > CGE_INTERVAL_MS_MAX)
		return cge_refuse(kp, val, "expected " __stringify(CGE_INTERVAL_MS_MIN)
				  "-" __stringify(CGE_INTERVAL_MS_MAX) " (ms)");
	WRITE_ONCE(cge_interval_ms, v);
	return 0;
}

static int cge_set_model_mw(const char *val, const struct kernel_param *kp)
{
	unsigned int *target = kp->arg;
	unsigned int v, idle, busy;
	int ret = 0;

	if (kstrtouint(val, 0, &v))
		return cge_refuse(kp, val, "expected milliwatts per CPU");
	mutex_lock(&cge_params_lock);
	if (cge_params_live) {
		idle = target == &cge_model_idle_mw ? v : cge_model_idle_mw;
		busy = target == &cge_model_busy_mw ? v : cge_model_busy_mw;
	} else {
		/* loading: each alone here, the pair in cge_params_load() */
		idle = v;
		busy = v;
	}
	if (cge_model_validate(idle, busy))
		ret = cge_refuse(kp, val, CGE_MODEL_PAIR_RULE);
	else
		WRITE_ONCE(*target, v);
	mutex_unlock(&cge_params_lock);
	return ret;
}

/**
 * cge_params_load() - check the load-time values as a whole
 *
 * Called once from module init, after the kernel has set every parameter
 * given at load; from here on each write is checked against the others.
 *
 * Return: 0, or -EINVAL (logged) if model_idle_mw > model_busy_mw.
 */
int cge_params_load(void)
{
	int ret = 0;

	mutex_lock(&cge_params_lock);
	if (cge_model_validate(cge_model_idle_mw, cge_model_busy_mw)) {
		pr_err("refused model_idle_mw=%u model_busy_mw=%u: %s\n",
		       cge_model_idle_mw, cge_model_busy_mw,
		       CGE_MODEL_PAIR_RULE);
		ret = -EINVAL;
	} else {
		cge_params_live = true;
	}
	mutex_unlock(&cge_params_lock);
	return ret;
}

/*
 * The index of @val in @names, or a refusal that names them all ("expected
 * a, b or c").
 */
static int cge_match_enum(const char *val, const struct kernel_param *kp,
			  const char * const *names, int n)
{
	int i = __sysfs_match_string(names, n, val), len;
	char why[64];

	if (i < 0) {
		len = scnprintf(why, sizeof(why), "expected");
		for (i = 0; i < n; i++)
			len += scnprintf(why + len, sizeof(why) - len, "%s%s",
					 !i ? " " : i == n - 1 ? " or " : ", ",
					 names[i]);
		return cge_refuse(kp, val, why);
	}
	return i;
}

/* A value of @names. */
static int cge_set_enum(const char *val, const struct kernel_param *kp,
			const char * const *names, int n)
{
	int i = cge_match_enum(val, kp, names, n);

	if (i < 0)
		return i;
	WRITE_ONCE(*(int *)kp->arg, i);
	return 0;
}

static int cge_get_enum(char *buf, const struct kernel_param *kp,
			const char * const *names)
{
	return sysfs_emit(buf, "%s\n", names[READ_ONCE(*(int *)kp->arg)]);
}

static int cge_set_source(const char *val, const struct kernel_param *kp)
{
	return cge_set_enum(val, kp, cge_source_names,
			    ARRAY_SIZE(cge_source_names));
}

static int cge_get_source(char *buf, const struct kernel_param *kp)
{
	return cge_get_enum(buf, kp, cge_source_names);
}

static int cge_set_split(const char *val, const struct kernel_param *kp)
{
	return cge_set_enum(val, kp, cge_split_names,
			    ARRAY_SIZE(cge_split_names));
}

static int cge_get_split(char *buf, const struct kernel_param *kp)
{
	return cge_get_enum(buf, kp, cge_split_names);
}

/*
 * cpuset reads the partitions below /sys/fs/cgroup as the writer sees it:
 * refused, changing nothing, where that is not the cgroup2 hierarchy's
 * root (cge_cpuset_pin()). At load only recorded: the module's init pins
 * it, in modprobe's context, once there is a module to unpin it. Writers
 * are serialised (kernel_param_lock).
 */
static int cge_set_unowned(const char *val, const struct kernel_param *kp)
{
	int i = cge_match_enum(val, kp, cge_unowned_names,
			       ARRAY_SIZE(cge_unowned_names));
	char why[80];
	int ret;

	if (i < 0)
		return i;
	if (i == CGE_UNOWNED_CPUSET && READ_ONCE(cge_params_live)) {
		ret = cge_cpuset_pin();
		if (ret) {
			snprintf(why, sizeof(why),
				 "cannot read the partitions below /sys/fs/cgroup (%d)",
				 ret);
			return cge_refuse(kp, val, why);
		}
	}
	WRITE_ONCE(cge_unowned_param, i);
	if (i != CGE_UNOWNED_CPUSET)
		cge_cpuset_unpin();
	return 0;
}

static int cge_get_unowned(char *buf, const struct kernel_param *kp)
{
	return cge_get_enum(buf, kp, cge_unowned_names);
}

static int cge_set_coef(const char *val, const struct kernel_param *kp)
{
	u64 *target = kp->arg;
	u64 max = target == &cge_coefs.kcpu_wakeups ? CGE_COEF_MAX_WAKEUP :
						      CGE_COEF_MAX_TIME;
	u64 v;

	if (cge_coef_parse(val, max, &v))
		return cge_refuse(kp, val, max == CGE_COEF_MAX_WAKEUP ?
				  "expected seconds per wakeup, 0-0.01, e.g. 2e-4" :
				  "expected a decimal 0-10, e.g. 1.0 or 0.8");
	mutex_lock(&cge_params_lock);
	WRITE_ONCE(*target, v);
	mutex_unlock(&cge_params_lock);
	return 0;
}

static int cge_get_coef(char *buf, const struct kernel_param *kp)
{
	int n = cge_coef_format(buf, PAGE_SIZE - 1, READ_ONCE(*(u64 *)kp->arg));

	buf[n++] = '\n';
	buf[n] = '\0';
	return n;
}

/**
 * cge_params_coefs() - the energy-impact coefficients in effect
 * @out: a consistent copy (the sampler takes one per sample, so a write
 *	 applies from the next interval)
 */
void cge_params_coefs(struct cge_impact_coefs *out)
{
	mutex_lock(&cge_params_lock);
	*out = cge_coefs;
	mutex_unlock(&cge_params_lock);
}

static const struct kernel_param_ops cge_coef_ops = {
	.set = cge_set_coef,
	.get = cge_get_coef,
};

static const struct kernel_param_ops cge_interval_ops = {
	.set = cge_set_interval,
	.get = param_get_uint,
};

static const struct kernel_param_ops cge_model_mw_ops = {
	.set = cge_set_model_mw,
	.get = param_get_uint,
};

static const struct kernel_param_ops cge_source_ops = {
	.set = cge_set_source,
	.get = cge_get_source,
};

static const struct kernel_param_ops cge_split_ops = {
	.set = cge_set_split,
	.get = cge_get_split,
};

static const struct kernel_param_ops cge_unowned_ops = {
	.set = cge_set_unowned,
	.get = cge_get_unowned,
};

module_param_cb(interval_ms, &cge_interval_ops, &cge_interval_ms, 0644);
/* 10 ms: one tick at HZ=100, the coarsest; see README, "Parameters". */
MODULE_PARM_DESC(interval_ms, "Sampling interval in ms, 10-10000 (default 100)");
module_param_cb(model_idle_mw, &cge_model_mw_ops, &cge_model_idle_mw, 0644);
MODULE_PARM_DESC(model_idle_mw, "Power model: idle mW per CPU (default 740)");
module_param_cb(model_busy_mw, &cge_model_mw_ops, &cge_model_busy_mw, 0644);
MODULE_PARM_DESC(model_busy_mw, "Power model: busy mW per CPU (default 3500)");
module_param_cb(source, &cge_source_ops, &cge_source_param, 0444);
MODULE_PARM_DESC(source, "Energy source: auto, rapl or model (default auto)");
module_param_cb(split, &cge_split_ops, &cge_split_param, 0644);
MODULE_PARM_DESC(split, "Split weight: impact or time (default impact)");
module_param_cb(kcpu_time, &cge_coef_ops, &cge_coefs.kcpu_time, 0644);
MODULE_PARM_DESC(kcpu_time, "Energy impact per CPU-second, default QoS (default 1.0)");
module_param_cb(kcpu_wakeups, &cge_coef_ops, &cge_coefs.kcpu_wakeups, 0644);
MODULE_PARM_DESC(kcpu_wakeups, "Energy impact of a wakeup, seconds (default 2e-4)");
module_param_cb(kqos_background, &cge_coef_ops, &cge_coefs.kqos_background,
		0644);
MODULE_PARM_DESC(kqos_background, "Energy impact per CPU-second, background QoS (default 0.8)");
module_param_cb(unowned, &cge_unowned_ops, &cge_unowned_param, 0644);
MODULE_PARM_DESC(unowned, "Energy no task drew: none (at the root), weight (shared by cpu.weight) or cpuset (a partition's CPUs' to it, then by cpu.weight) (default none)");
