// SPDX-License-Identifier: GPL-2.0
/*
 * series.c - each cgroup's own share of its counters, so that series add up.
 *
 * A cgroup's counters include all its descendants', so a sum over cgroups
 * counts energy once per level. A cgroup's own value is what its own tasks
 * and removed children used, and what its descendants not shown (below
 * --depth) used: summed over the nodes of a sample, the own values give the
 * counters of the sample's top nodes (the root's, for the whole tree),
 * exactly for a read between two of the module's samples in which every
 * cgroup could be read.
 *
 * The module's own_ keys say it from one file (but for a removed
 * child whose record the module still keeps, seconds after the rmdir: in no
 * series until its record is freed and its counters become its parent's
 * own_): such a value never goes down, however the walk goes. They are
 * taken for every cgroup but those --depth cuts (the subtree's counter):
 * a child that could not be read then drops out of the sum for that read,
 * and does not step into its parent's series and out again. Without own_
 * keys the value is derived, the counter less the counters of the nearest
 * read descendants (its children, or where a child could not be read, that
 * child's read children), and only a walk between two samples makes it
 * exact. Pure: no I/O.
 */
#include <stdlib.h>
#include <string.h>

#include "tree.h"
#include "series.h"

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

/* Whether n's own_ keys cover each of its counters that add up. */
static bool has_own_keys(const struct cg_node *n)
{
	unsigned int adds_up = (1u << NOWN) - 1;

	return n->st.own_present &&
	       (n->st.present & adds_up & ~n->st.own_present) == 0;
}

/*
 * Fill node->own for every read node: the module's own_ keys unless --depth
 * cut its children off (a child that could not be read drops out of the
 * sum, rather than into its parent's series for one read); else its
 * counters without read descendants; else its counters less its nearest
 * read descendants', counted in s->derived. Returns the number of derived
 * nodes whose counters were below their descendants' (a read that straddled
 * one of the module's samples): their own values are clamped to 0.
 */
unsigned int series_own(struct sample *s)
{
	uint64_t (*below)[NKEYS] = calloc(s->n ? s->n : 1, sizeof(*below));
	bool *has_desc = calloc(s->n ? s->n : 1, sizeof(bool));
	char *buf = NULL;
	size_t longest = 1;
	unsigned int torn = 0;

	s->derived = 0;
	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->nodes[i].path) > longest)
			longest = strlen(s->nodes[i].path);
	buf = malloc(longest + 1);
	if (!below || !has_desc || !buf) {
		free(below);
		free(has_desc);
		free(buf);
		s->derived = s->n;	/* none is from the module */
		return s->n;	/* own values stay 0; callers report it */
	}
	for (size_t i = 0; i < s->n; i++) {
		struct cg_node *a;

		if (!s->nodes[i].ok)
			continue;
		a = read_ancestor(s, i, buf);
		if (!a)
			continue;
		has_desc[a - s->nodes] = true;
		for (int k = 0; k < NKEYS; k++)
			if (key_adds_up(k))
				below[a - s->nodes][k] += s->nodes[i].st.v[k];
	}
	for (size_t i = 0; i < s->n; i++) {
		struct cg_node *n = &s->nodes[i];
		bool keys = !n->cut && has_own_keys(n);
		bool clamped = false;

		memset(n->own, 0, sizeof(n->own));
		if (!n->ok)
			continue;
		s->derived += has_desc[i] && !keys;
		for (int k = 0; k < NKEYS; k++) {
			if (!key_adds_up(k))
				continue;
			if (keys)
				n->own[k] = n->st.own[k];
			else if (n->st.v[k] >= below[i][k])
				n->own[k] = n->st.v[k] - below[i][k];
			else
				clamped = true;
		}
		torn += clamped;
	}
	free(below);
	free(has_desc);
	free(buf);
	return torn;
}
