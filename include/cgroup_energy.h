/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * cgroup_energy.h - names shared by the module, the energystat tool and the
 * tests: filesystem type, mount point, file names and energy.stat keys.
 *
 * Only preprocessor definitions: this header is included both from kernel
 * code and from userspace C.
 */
#ifndef CGROUP_ENERGY_H
#define CGROUP_ENERGY_H

#define CGE_VERSION		"0.1.0"
#define CGE_MODULE_NAME		"cgroup_energy"
#define CGE_FS_TYPE		"cgroup_energy"
#define CGE_MOUNT_POINT		"/sys/fs/cgroup_energy"
#define CGE_CGROUP_ROOT		"/sys/fs/cgroup"
#define CGE_STAT_FILE		"energy.stat"
#define CGE_INFO_FILE		"energy.info"
/*
 * At a mount's root: every cgroup's counters from one sample. Lines of
 * "key value" (sample, and the root-only keys in a mount of the whole
 * tree), then a line "path" and the energy.stat keys in order, then one
 * line per cgroup: its path below the mount (space, tab, newline and
 * backslash as octal escapes, as in /proc/mounts) and their values.
 */
#define CGE_TREE_FILE		"energy.tree"

/* energy.stat keys present in every directory */
#define CGE_KEY_USAGE_USEC	"usage_usec"
#define CGE_KEY_ENERGY_UJ	"energy_uj"
#define CGE_KEY_WAKEUPS		"wakeups"
#define CGE_KEY_IMPACT_USEC	"impact_usec"
/*
 * Also in every directory: the power of energy_uj, mW, averaged over 10 s,
 * 60 s and 300 s as the kernel's pressure (PSI) averages are: gauges, where
 * every other key is a counter.
 */
#define CGE_KEY_POWER_AVG10_MW	"power_avg10_mw"
#define CGE_KEY_POWER_AVG60_MW	"power_avg60_mw"
#define CGE_KEY_POWER_AVG300_MW	"power_avg300_mw"

/* per RAPL domain keys, present only for the domains the source measures */
#define CGE_KEY_PACKAGE_UJ	"package_uj"
#define CGE_KEY_CORE_UJ		"core_uj"
#define CGE_KEY_UNCORE_UJ	"uncore_uj"
#define CGE_KEY_DRAM_UJ		"dram_uj"
#define CGE_KEY_PSYS_UJ		"psys_uj"

/*
 * In every directory, after the power averages: the cgroup's part of the
 * energy no task drew, shared by the unowned parameter's policy (0 with
 * "none"): of idle, and of interrupts, softirqs and steal. Counters,
 * hierarchical like the others; at the root, the parts shared of idle_uj
 * and of irq_uj + softirq_uj + steal_uj.
 */
#define CGE_KEY_IDLE_SHARE_UJ	"idle_share_uj"
#define CGE_KEY_SYS_SHARE_UJ	"sys_share_uj"

/*
 * In every directory, after those: the same counters (usage_usec,
 * energy_uj, wakeups, impact_usec and the domains measured) and the
 * shares with this prefix, own_energy_uj and so on: the part of the
 * cgroup's own tasks and its removed descendants, without its children's. A parent's counter is
 * its own_ counter plus its children's counters, exactly.
 */
#define CGE_OWN_PREFIX		"own_"

/* keys present only in the root directory's energy.stat */
#define CGE_KEY_TOTAL_UJ	"total_uj"
#define CGE_KEY_IDLE_UJ		"idle_uj"
#define CGE_KEY_IDLE_USEC	"idle_usec"
/*
 * Root only: CPU time no task was charged for that the kernel books as
 * interrupts, softirqs or stolen by a hypervisor (/proc/stat's irq, softirq
 * and steal), and the energy of that time.
 * total_uj == energy_uj + irq_uj + softirq_uj + steal_uj + idle_uj.
 */
#define CGE_KEY_IRQ_UJ		"irq_uj"
#define CGE_KEY_IRQ_USEC	"irq_usec"
#define CGE_KEY_SOFTIRQ_UJ	"softirq_uj"
#define CGE_KEY_SOFTIRQ_USEC	"softirq_usec"
#define CGE_KEY_STEAL_UJ	"steal_uj"
#define CGE_KEY_STEAL_USEC	"steal_usec"

#endif /* CGROUP_ENERGY_H */
