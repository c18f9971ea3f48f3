// SPDX-License-Identifier: GPL-2.0
/*
 * filter.c - --include REGEX and --exclude REGEX on the cgroup path.
 *
 * A regex is POSIX extended (regcomp, REG_EXTENDED) and must match the whole
 * path, as node_exporter's --collector.*-include/-exclude flags and
 * Prometheus's relabelling do: it is compiled as ^(REGEX)$ once it compiled
 * alone (so that "a)(b" stays an error). A path is kept when it matches one
 * of the --include (or there is none) and none of the --exclude.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

/* Compile re anchored into *out; 0, else regcomp's error text in err. */
static int compile(regex_t *out, const char *re, char *err, size_t errsz)
{
	regex_t alone;
	char *anchored;
	int rc = regcomp(&alone, re, REG_EXTENDED | REG_NOSUB);

	if (rc != 0) {
		regerror(rc, &alone, err, errsz);
		return -1;
	}
	regfree(&alone);
	anchored = malloc(strlen(re) + sizeof("^()$"));
	if (!anchored) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	sprintf(anchored, "^(%s)$", re);
	rc = regcomp(out, anchored, REG_EXTENDED | REG_NOSUB);
	free(anchored);
	if (rc != 0) {
		regerror(rc, out, err, errsz);
		return -1;
	}
	return 0;
}

/* Add one --include (exclude false) or --exclude; -1 with err set if bad. */
int filter_add(struct filter *f, bool exclude, const char *re, char *err,
	       size_t errsz)
{
	regex_t **list = exclude ? &f->exclude : &f->include;
	size_t *n = exclude ? &f->nexclude : &f->ninclude;
	regex_t *grown = realloc(*list, (*n + 1) * sizeof(**list));

	if (!grown) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	*list = grown;
	if (compile(&grown[*n], re, err, errsz) < 0)
		return -1;
	(*n)++;
	return 0;
}

static bool any_match(const regex_t *list, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (regexec(&list[i], path, 0, NULL, 0) == 0)
			return true;
	return false;
}

/* Whether the series of the cgroup at path are shown; f NULL: all are. */
bool filter_match(const struct filter *f, const char *path)
{
	if (!f)
		return true;
	if (f->ninclude && !any_match(f->include, f->ninclude, path))
		return false;
	return !any_match(f->exclude, f->nexclude, path);
}

/* Whether any --include or --exclude was given. */
bool filter_set(const struct filter *f)
{
	return f->ninclude || f->nexclude;
}

void filter_free(struct filter *f)
{
	for (size_t i = 0; i < f->ninclude; i++)
		regfree(&f->include[i]);
	for (size_t i = 0; i < f->nexclude; i++)
		regfree(&f->exclude[i]);
	free(f->include);
	free(f->exclude);
	memset(f, 0, sizeof(*f));
}
