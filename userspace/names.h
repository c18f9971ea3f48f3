/* SPDX-License-Identifier: GPL-2.0 */
/*
 * names.h - pod, namespace and container names from the OCI bundles that
 * the CRI runtimes (containerd, CRI-O) keep on the node, by container id.
 */
#ifndef ENERGYSTAT_NAMES_H
#define ENERGYSTAT_NAMES_H

#include "sample.h"

#define NAMES_MAX_CONFIG	(1u << 20)	/* a larger config.json is ignored */

struct names;

/* root: the directory the runtimes' state is under ("" for /); NULL on ENOMEM */
struct names *names_new(const char *root);
void names_free(struct names *nm);

/*
 * Fill the names of s's pods and containers (struct workload's pod,
 * namespace, container): the bundles are listed again, a new one read once,
 * one without names read again only when its config.json changes, those
 * gone forgotten. Anything unreadable leaves names empty.
 */
void names_apply(struct names *nm, struct sample *s);

#endif /* ENERGYSTAT_NAMES_H */
