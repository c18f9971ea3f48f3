// SPDX-License-Identifier: GPL-2.0
/*
 * series.c - each cgroup's own share of its counters, so that series add up.
 *
 * A cgroup's counters include all its descendants', so a sum over cgroups
 * counts energy once per level. A cgroup's own value is its counter minus
 * the counters of its nearest read descendants (its children, or where a
 * child could not be read, that child's read children): the energy of its
 * own tasks, of removed children, and of descendants that were not read or
 * not shown (below --depth). Summed over the nodes of a sample, the own
 * values give exactly the counters of the sample's top nodes: the root's,
 * when the whole tree is read. Pure: no I/O.
 */
#include <stdlib.h>
#include <string.h>

#include "energystat.h"

/* The nearest read ancestor of node i in s, or NULL. */
static struct cg_node *read_ancestor(struct sample *s, size_t i, char *buf)
{
	char *slash;

	strcpy(buf, s->nodes[i].path);
	while ((slash = strrchr(buf, '/')) != NULL && strcmp(buf, "/") != 0) {
		const struct cg_node *a;

		slash[slash == buf] = '\0';	/* "/a" -> "/", "/a/b" -> "/a" */
		a = sample_find(s, buf);
		if (a && a->ok)
			return (struct cg_node *)a;
	}
	return NULL;
}

/*
 * Fill node->own for every read node. Returns the number of nodes whose
 * counters were below their descendants' (a read that straddled one of the
 * module's samples): their own values are clamped to 0.
 */
unsigned int series_own(struct sample *s)
{
	uint64_t (*below)[NKEYS] = calloc(s->n ? s->n : 1, sizeof(*below));
	char *buf = NULL;
	size_t longest = 1;
	unsigned int torn = 0;

	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->nodes[i].path) > longest)
			longest = strlen(s->nodes[i].path);
	buf = malloc(longest + 1);
	if (!below || !buf) {
		free(below);
		free(buf);
		return s->n;	/* own values stay 0; callers report it */
	}
	for (size_t i = 0; i < s->n; i++) {
		struct cg_node *a;

		if (!s->nodes[i].ok)
			continue;
		a = read_ancestor(s, i, buf);
		if (!a)
			continue;
		for (int k = 0; k < NKEYS; k++)
			if (key_adds_up(k))
				below[a - s->nodes][k] += s->nodes[i].st.v[k];
	}
	for (size_t i = 0; i < s->n; i++) {
		struct cg_node *n = &s->nodes[i];
		bool clamped = false;

		memset(n->own, 0, sizeof(n->own));
		if (!n->ok)
			continue;
		for (int k = 0; k < NKEYS; k++) {
			if (!key_adds_up(k))
				continue;
			if (n->st.v[k] >= below[i][k])
				n->own[k] = n->st.v[k] - below[i][k];
			else
				clamped = true;
		}
		torn += clamped;
	}
	free(below);
	free(buf);
	return torn;
}
