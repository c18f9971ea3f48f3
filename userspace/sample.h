/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sample.h - the data of one reading of a tree, at the bottom of the tool:
 * the energy.stat keys, one cgroup's counters, energy.info, a cgroup node
 * and a sample. No functions besides the inline accessors.
 */
#ifndef ENERGYSTAT_SAMPLE_H
#define ENERGYSTAT_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup_energy.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define STR_(x)		#x
#define STR(x)		STR_(x)	/* a macro's value as a string */

/* ---- energy.stat keys ------------------------------------------------ */

enum key_id {
	K_USAGE_USEC, K_ENERGY_UJ, K_WAKEUPS, K_IMPACT_USEC,
	K_PACKAGE_UJ, K_CORE_UJ, K_UNCORE_UJ, K_DRAM_UJ, K_PSYS_UJ,
	K_IDLE_SHARE_UJ, K_SYS_SHARE_UJ,	/* optional: modules before unowned */
	K_TOTAL_UJ, K_IDLE_UJ, K_IDLE_USEC,
	K_IRQ_UJ, K_IRQ_USEC, K_SOFTIRQ_UJ, K_SOFTIRQ_USEC,
	K_STEAL_UJ, K_STEAL_USEC,
	NKEYS
};

/* per-cgroup keys (those before K_TOTAL_UJ) add up over cgroups */
static inline bool key_adds_up(enum key_id k)
{
	return k < K_TOTAL_UJ;
}

_Static_assert(NKEYS <= 32, "cg_stat.present has one bit per key");
_Static_assert(K_SYS_SHARE_UJ < K_TOTAL_UJ, "the shares add up over cgroups");

/* the keys every energy.stat must have */
#define REQUIRED_KEYS ((1u << K_USAGE_USEC) | (1u << K_ENERGY_UJ) | \
		       (1u << K_WAKEUPS) | (1u << K_IMPACT_USEC))

enum key_kind {
	KIND_UJ,	/* microjoules: rate in watts */
	KIND_CPU_USEC,	/* CPU microseconds: rate in percent of one CPU */
	KIND_COUNT,	/* events: rate per second */
	KIND_IMPACT,	/* CPU-us equivalents: rate on Apple's scale (100 = 1 CPU) */
};

struct key_desc {
	const char *name;	/* energy.stat key */
	enum key_kind kind;
	const char *rate;	/* JSON name of its rate in live mode */
};

extern const struct key_desc key_table[NKEYS];

/* the keys that add up also come as own_<key>, the cgroup's own part */
#define NOWN K_TOTAL_UJ

struct cg_stat {
	uint64_t v[NKEYS];
	uint64_t own[NOWN];	/* own_<key> */
	unsigned int present;	/* bit (1u << key_id) set when the key was read */
	unsigned int own_present;	/* the same for own[] */
	uint64_t avg10_mw;	/* power_avg10_mw: a gauge, not a counter */
	bool has_avg10;		/* power_avg10_mw was read */
};

static inline bool stat_has(const struct cg_stat *st, enum key_id k)
{
	return st->present & (1u << k);
}

struct info_kv {
	char *key;
	char *value;
};

struct info {
	struct info_kv *kv;
	size_t n;
};

/*
 * What a cgroup's path says it runs (workload.c): empty strings when the
 * path says nothing. The pod uid is as the API server writes it (dashes).
 */
struct workload {
	char pod_uid[65];	/* Kubernetes pod, from its pod slice/directory */
	char qos[12];		/* guaranteed, burstable or besteffort */
	char container_id[65];	/* 64 hex digits (containerd, CRI-O, Docker, Podman) */
	const char *runtime;	/* "containerd", "cri-o", "docker", "podman" or NULL */
	char unit[256];		/* innermost systemd unit (.service, .scope, .slice...) */
	bool unit_own;		/* unit is the pod's own slice or the container's own
				 * scope: it says nothing pod_uid or container_id do not */
	/* from the runtime's bundle (names.c); empty when unknown */
	char pod[254];		/* pod name, a DNS subdomain (253 at most) */
	char namespace[64];	/* its namespace, a DNS label */
	char container[64];	/* the container's name in its pod, a DNS label */
	const char *container_type;	/* "sandbox" (the pod's pause), "container" or NULL */
};

struct cg_node {
	char *path;		/* "/" or "/a/b": raw bytes as in the tree */
	unsigned int depth;	/* below the root of the tree */
	bool ok;		/* energy.stat read and parsed */
	bool cut;		/* --depth left its children out */
	struct cg_stat st;
	uint64_t own[NKEYS];	/* its share of st in series (series.c) */
	struct workload wl;
};

struct sample {
	struct cg_node *nodes;	/* sorted by path (path_cmp) after sample_take */
	size_t n, cap;
	struct cg_stat root;	/* root energy.stat, always read */
	struct info info;	/* root energy.info, may be empty */
	unsigned int derived;	/* nodes whose own values are st less descendants' */
	unsigned int torn;	/* of those, the ones clamped to 0 */
	uint64_t mono_ns;	/* CLOCK_MONOTONIC when the sample was taken */
	uint64_t real_ns;	/* CLOCK_REALTIME, for JSON */
};

#endif /* ENERGYSTAT_SAMPLE_H */
