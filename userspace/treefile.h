/* SPDX-License-Identifier: GPL-2.0 */
/*
 * treefile.h - parse energy.tree text (pure): every cgroup's counters from
 * one of the module's samples.
 */
#ifndef ENERGYSTAT_TREEFILE_H
#define ENERGYSTAT_TREEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"
#include "stat.h"

#define TREE_MAX_FILE	(256u << 20)	/* energy.tree larger than this is junk */

struct tree_row {
	char *path;		/* "/" or "/a/b", unescaped: raw bytes as in the tree */
	unsigned int line;	/* its line in the file, 1-based */
	struct cg_stat st;	/* the cgroup's energy.stat keys */
};

struct tree_file {
	uint64_t sample;	/* the module's samples taken by then (has_sample) */
	bool has_sample;
	struct cg_stat head;	/* the root-only keys, before the "path" line */
	struct tree_row *rows;	/* in the file's order: parents before children */
	size_t n;
};

int treefile_parse(const char *buf, size_t len, struct tree_file *tf,
		   struct parse_err *pe);
const struct tree_row *treefile_find(const struct tree_file *tf,
				     const char *path);
void treefile_free(struct tree_file *tf);

#endif /* ENERGYSTAT_TREEFILE_H */
