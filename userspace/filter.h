/* SPDX-License-Identifier: GPL-2.0 */
/*
 * filter.h - --include and --exclude: which cgroup paths the Prometheus
 * series show (POSIX extended regular expressions, regcomp).
 */
#ifndef ENERGYSTAT_FILTER_H
#define ENERGYSTAT_FILTER_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

struct filter {
	regex_t *include, *exclude;
	size_t ninclude, nexclude;
};

int filter_add(struct filter *f, bool exclude, const char *re, char *err,
	       size_t errsz);
bool filter_match(const struct filter *f, const char *path);
bool filter_set(const struct filter *f);
void filter_free(struct filter *f);

#endif /* ENERGYSTAT_FILTER_H */
