/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tree.h - resolve PATH arguments and read a tree into a sample: its
 * energy.tree, or a walk of its directories.
 */
#ifndef ENERGYSTAT_TREE_H
#define ENERGYSTAT_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "sample.h"
#include "diag.h"

struct names;

struct tree {
	const char *root;	/* the tree's directory, no trailing slash ("" = /) */
	bool default_root;	/* root is CGE_MOUNT_POINT: hints name the module */
	int max_depth;		/* -1: unlimited */
	char **paths;		/* normalized cgroup paths to show ("/", "/a/b") */
	size_t npaths;
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC: walks stop there; 0, none */
	bool exact;		/* a read must fall between two module samples */
	struct names *names;	/* pod and container names (names.c); NULL: none */
};

enum tree_rc {
	TREE_OK,
	TREE_FATAL,		/* message printed; nothing can be shown */
	TREE_LATE,		/* the walk passed deadline_ns */
	TREE_TORN,		/* exact: every read straddled a module sample */
};

/* What the tree's root says (tree_probe): readable, or why not. */
enum tree_state {
	TS_OK,
	TS_NOT_LOADED,		/* default root, the module not loaded */
	TS_NOT_MOUNTED,		/* no directory or no energy.stat at the root */
	TS_PERMISSION,		/* EACCES or EPERM */
	TS_NOT_A_TREE,		/* energy.stat not a small regular file */
	TS_ERROR,		/* any other error */
};

char *path_normalize(const char *in);	/* NULL on '..' above the root */
char *path_resolve(const char *arg, const char *root);
int path_cmp(const char *a, const char *b);
enum tree_state tree_probe(const struct tree *t, bool say);
enum tree_rc tree_check(const struct tree *t, bool *exists, struct diag *d);
enum tree_rc sample_take(const struct tree *t, struct sample *s, struct diag *d);
uint64_t clock_ns(clockid_t id);	/* the clock's time, ns */
const struct cg_node *sample_find(const struct sample *s, const char *path);
void sample_free(struct sample *s);

#endif /* ENERGYSTAT_TREE_H */
