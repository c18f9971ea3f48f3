// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - module init and exit: per-cgroup energy accounting.
 *
 * Data flows one way: probe (per-CPU charges) -> sampler (reads the energy
 * source, splits, folds into per-cgroup records) -> fs (energy.stat).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>

#include "cgroup_energy.h"
#include "cgstate.h"
#include "sampler.h"
#include "topo.h"
#include "probe.h"
#include "fs.h"
#include "gone.h"
#include "params.h"
#include "snap.h"
#include "emu.h"
#include "cpuset.h"

static int __init cge_init(void)
{
	int ret;

	ret = cge_params_load();
	if (ret)
		goto err_cpuset;
	ret = cge_emu_init();
	if (ret)
		goto err_cpuset;
	ret = cge_probe_alloc();
	if (ret)
		goto err_emu;
	ret = cge_cgstate_init(cge_topo_max_pkgs());
	if (ret)
		goto err_probe_free;
	/* after the records it looks up, before the sampler that reaps them */
	cge_gone_init();
	/* the partitions read before the first sample (unowned=cpuset) */
	ret = cge_cpuset_start(cge_unowned_param == CGE_UNOWNED_CPUSET);
	if (ret) {
		pr_err("refused unowned=cpuset: cannot read the partitions below /sys/fs/cgroup (%d)\n",
		       ret);
		goto err_gone;
	}
	ret = cge_sampler_init();
	if (ret)
		goto err_gone;
	ret = cge_probe_init();
	if (ret)
		goto err_sampler;
	ret = cge_fs_init();
	if (ret)
		goto err_probe;
	pr_info("version %s loaded\n", CGE_VERSION);
	return 0;

err_probe:
	cge_probe_exit();
err_sampler:
	cge_sampler_exit();
err_gone:
	cge_gone_exit();
	cge_cgstate_exit();
err_probe_free:
	cge_probe_free();
err_emu:
	cge_emu_exit();
err_cpuset:
	/* unowned=cpuset given at load holds the cgroup2 mount */
	cge_cpuset_stop();
	return ret;
}

static void __exit cge_exit(void)
{
	cge_fs_exit();
	cge_probe_exit();
	cge_sampler_exit();
	cge_cpuset_stop();
	cge_snap_exit();
	cge_gone_exit();
	cge_cgstate_exit();
	cge_probe_free();
	cge_emu_exit();
	pr_info("unloaded\n");
}

module_init(cge_init);
module_exit(cge_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Per-cgroup energy accounting");
MODULE_VERSION(CGE_VERSION);
MODULE_AUTHOR("cgroup-energy developers");
