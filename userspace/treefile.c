// SPDX-License-Identifier: GPL-2.0
/*
 * treefile.c - parse energy.tree: every cgroup's counters from one sample.
 *
 * The text: "key value" lines (sample, and the root-only keys when the
 * mount shows the whole tree), then "path" and the energy.stat keys that
 * name the columns, then one line per cgroup, parents before children: its
 * path below the mount (space, tab, newline and backslash as the octal
 * escapes \040, \011, \012 and \134, as in /proc/mounts) and a value per
 * column. As stat.c's, the parser takes a buffer and knows nothing of
 * files: any junk is reported with its line number. Pure: no I/O.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "treefile.h"

#define PATH_KEY	"path"		/* the line that names the columns */
#define SAMPLE_KEY	"sample"	/* the module's sample, in the header */
#define MSG_NAME	48	/* a column's name or a path in a message */

/* A column of the rows: what its key names, and the key as written. */
struct column {
	struct stat_key key;
	const char *name;
	size_t len;
};

static int fail(struct parse_err *pe, unsigned int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parse_err *pe, unsigned int line, const char *fmt, ...)
{
	va_list ap;

	pe->line = line;
	va_start(ap, fmt);
	vsnprintf(pe->msg, sizeof(pe->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_key_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether p[0..n) is the line that names the columns: "path" and its keys. */
static bool is_path_line(const char *p, size_t n)
{
	size_t k = strlen(PATH_KEY);

	return n >= k && memcmp(p, PATH_KEY, k) == 0 && (n == k || is_blank(p[k]));
}

/* A header line before the columns: "sample N" or one of stat_line()'s. */
static int parse_head(const char *p, size_t n, unsigned int lineno,
		      struct tree_file *tf, struct parse_err *pe)
{
	const size_t k = strlen(SAMPLE_KEY);
	size_t i = k;

	if (stat_line(p, n, lineno, &tf->head, pe) < 0)
		return -1;
	if (n <= k || memcmp(p, SAMPLE_KEY, k) != 0 || !is_blank(p[k]))
		return 0;
	if (tf->has_sample)
		return fail(pe, lineno, "duplicate key " SAMPLE_KEY);
	while (is_blank(p[i]))
		i++;
	stat_u64(p + i, n - i, &tf->sample);	/* stat_line() checked it */
	tf->has_sample = true;
	return 0;
}

/*
 * The columns' line, "path key...": every energy.stat key may be a column,
 * those each energy.stat has must be. Returns the number of columns in
 * *cols (malloc()ed), or -1 with pe set.
 */
static int parse_columns(const char *p, size_t n, unsigned int lineno,
			 struct column **cols, struct parse_err *pe)
{
	struct cg_stat seen;
	struct column *c;
	size_t i = strlen(PATH_KEY), ncols = 0;

	memset(&seen, 0, sizeof(seen));
	for (size_t j = i; j < n; j++)
		ncols += !is_blank(p[j]) && is_blank(p[j - 1]);
	c = calloc(ncols ? ncols : 1, sizeof(*c));
	*cols = c;
	if (!c)
		return fail(pe, lineno, "out of memory");
	for (size_t f = 0; f < ncols; f++) {
		while (is_blank(p[i]))
			i++;
		c[f].name = p + i;
		while (i < n && !is_blank(p[i])) {
			if (!is_key_char((unsigned char)p[i]))
				return fail(pe, lineno, "expected '" PATH_KEY
					    "' and energy.stat keys");
			i++;
		}
		c[f].len = (size_t)(p + i - c[f].name);
		c[f].key = stat_key(c[f].name, c[f].len);
		if (stat_store(&seen, c[f].key, 0, lineno, pe) < 0)
			return -1;	/* a key named twice */
	}
	if (stat_complete(&seen, lineno, pe) < 0)
		return -1;
	return (int)ncols;
}

static bool is_octal(char c)
{
	return c >= '0' && c <= '7';
}

/*
 * The path p[0..n) of a row, its escapes undone, checked to be "/" or
 * "/a/b" without empty, "." or ".." names. NULL with pe set on junk.
 */
static char *parse_path(const char *p, size_t n, unsigned int lineno,
			struct parse_err *pe)
{
	char *out = malloc(n + 1);
	size_t o = 0;

	if (!out) {
		fail(pe, lineno, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned int c = (unsigned char)p[i];

		if (c == '\0') {
			fail(pe, lineno, "binary data");
			goto bad;
		}
		if (c == '\\') {
			if (n - i < 4 || !is_octal(p[i + 1]) ||
			    !is_octal(p[i + 2]) || !is_octal(p[i + 3])) {
				fail(pe, lineno, "bad escape in the path: a "
				     "backslash not followed by 3 octal digits");
				goto bad;
			}
			c = (unsigned int)((p[i + 1] - '0') * 64 +
					   (p[i + 2] - '0') * 8 + (p[i + 3] - '0'));
			if (c != ' ' && c != '\t' && c != '\n' && c != '\\') {
				fail(pe, lineno, "bad escape in the path: \\%.3s "
				     "(only \\040, \\011, \\012 and \\134)",
				     p + i + 1);
				goto bad;
			}
			i += 3;
		}
		out[o++] = (char)c;
	}
	out[o] = '\0';
	if (o >= PATH_MAX) {
		fail(pe, lineno, "path too long");
		goto bad;
	}
	if (out[0] != '/') {
		fail(pe, lineno, "expected a path from '/' at the start of the line");
		goto bad;
	}
	for (const char *s = out + 1; o > 1; ) {
		const char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len == 0 || (len == 1 && s[0] == '.') ||
		    (len == 2 && s[0] == '.' && s[1] == '.')) {
			fail(pe, lineno, "bad path: an empty, '.' or '..' name");
			goto bad;
		}
		if (!e)
			break;
		s = e + 1;
	}
	return out;
bad:
	free(out);
	return NULL;
}

/* One cgroup's line: its path, then a value per column. */
static int parse_row(const char *p, size_t n, unsigned int lineno,
		     const struct column *cols, size_t ncols,
		     struct tree_row *row, struct parse_err *pe)
{
	size_t i = 0, f = 0;

	memset(row, 0, sizeof(*row));
	row->line = lineno;
	while (i < n && !is_blank(p[i]))
		i++;
	row->path = parse_path(p, i, lineno, pe);
	if (!row->path)
		return -1;
	for (;;) {
		size_t start;
		uint64_t v;
		int digits;

		while (i < n && is_blank(p[i]))
			i++;
		if (i == n)
			break;
		start = i;
		while (i < n && !is_blank(p[i]))
			i++;
		if (f++ >= ncols)
			continue;	/* counted for the message below */
		digits = stat_u64(p + start, i - start, &v);
		if (digits < 0)
			return fail(pe, lineno, "%.*s: value out of range (above "
				    "18446744073709551615)",
				    (int)(cols[f - 1].len < MSG_NAME ?
					  cols[f - 1].len : MSG_NAME),
				    cols[f - 1].name);
		if ((size_t)digits != i - start)
			return fail(pe, lineno, "%.*s: expected an unsigned "
				    "integer value",
				    (int)(cols[f - 1].len < MSG_NAME ?
					  cols[f - 1].len : MSG_NAME),
				    cols[f - 1].name);
		if (stat_store(&row->st, cols[f - 1].key, v, lineno, pe) < 0)
			return -1;
	}
	if (f != ncols)
		return fail(pe, lineno, "expected the path and %zu values, "
			    "found %zu values", ncols, f);
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct tree_row *x = *(const struct tree_row *const *)a;
	const struct tree_row *y = *(const struct tree_row *const *)b;

	return strcmp(x->path, y->path);
}

/* The row of path in by (sorted by path), or NULL. */
static const struct tree_row *find_sorted(struct tree_row **by, size_t n,
					  const char *path)
{
	struct tree_row key = { .path = (char *)path }, *k = &key, **r;

	r = bsearch(&k, by, n, sizeof(*by), row_cmp);
	return r ? *r : NULL;
}

/*
 * Each cgroup listed once, after its parent: the root "/" first. Returns 0,
 * or -1 with pe set.
 */
static int check_rows(const struct tree_file *tf, struct parse_err *pe)
{
	struct tree_row **by = malloc((tf->n ? tf->n : 1) * sizeof(*by));
	char shown[MSG_NAME];
	char *parent = NULL;
	int rc = -1;

	if (!by)
		return fail(pe, 0, "out of memory");
	for (size_t i = 0; i < tf->n; i++)
		by[i] = &tf->rows[i];
	qsort(by, tf->n, sizeof(*by), row_cmp);
	for (size_t i = 1; i < tf->n; i++) {
		const struct tree_row *a = by[i - 1], *b = by[i];

		if (strcmp(a->path, b->path) == 0) {
			esc_term(shown, sizeof(shown), b->path);
			fail(pe, a->line > b->line ? a->line : b->line,
			     "cgroup %s listed twice (lines %u and %u)", shown,
			     a->line < b->line ? a->line : b->line,
			     a->line > b->line ? a->line : b->line);
			goto out;
		}
	}
	if (!find_sorted(by, tf->n, "/")) {
		fail(pe, 0, "no line for the root, /");
		goto out;
	}
	for (size_t i = 0; i < tf->n; i++) {
		const struct tree_row *r = &tf->rows[i], *up;
		char *slash;

		if (strcmp(r->path, "/") == 0)
			continue;
		free(parent);
		parent = strdup(r->path);
		if (!parent) {
			fail(pe, r->line, "out of memory");
			goto out;
		}
		slash = strrchr(parent, '/');
		slash[slash == parent] = '\0';	/* "/a" -> "/", "/a/b" -> "/a" */
		up = find_sorted(by, tf->n, parent);
		if (!up || up->line > r->line) {
			esc_term(shown, sizeof(shown), r->path);
			fail(pe, r->line, "cgroup %s before its parent's line",
			     shown);
			goto out;
		}
	}
	rc = 0;
out:
	free(parent);
	free(by);
	return rc;
}

/*
 * Parse energy.tree's text into tf. Returns 0, or -1 with pe set (tf then
 * empty).
 */
int treefile_parse(const char *buf, size_t len, struct tree_file *tf,
		   struct parse_err *pe)
{
	struct column *cols = NULL;
	unsigned int lineno = 0;
	size_t pos = 0, cap = 0;
	int ncols = -1;

	memset(tf, 0, sizeof(*tf));
	if (len == 0)
		return fail(pe, 0, "empty file");
	while (pos < len) {
		const char *p = buf + pos;
		const char *nl = memchr(p, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - p) : len - pos;
		int rc;

		lineno++;
		pos += n + 1;
		if (n == 0)
			continue;
		if (ncols < 0 && !is_path_line(p, n)) {
			rc = parse_head(p, n, lineno, tf, pe);
		} else if (ncols < 0) {
			ncols = parse_columns(p, n, lineno, &cols, pe);
			rc = ncols;
		} else {
			if (tf->n == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				struct tree_row *r = realloc(tf->rows,
							     ncap * sizeof(*r));

				if (!r) {
					fail(pe, lineno, "out of memory");
					goto bad;
				}
				tf->rows = r;
				cap = ncap;
			}
			rc = parse_row(p, n, lineno, cols, (size_t)ncols,
				       &tf->rows[tf->n], pe);
			if (rc == 0 || tf->rows[tf->n].path)
				tf->n++;	/* freed with the others */
		}
		if (rc < 0)
			goto bad;
	}
	if (ncols < 0) {
		fail(pe, 0, "no '" PATH_KEY "' line naming the columns");
		goto bad;
	}
	if (check_rows(tf, pe) < 0)
		goto bad;
	/* the header's keys but the root-only ones are not the header's to say */
	tf->head.present &= ~((1u << NOWN) - 1);
	tf->head.own_present = 0;
	tf->head.has_avg10 = false;
	free(cols);
	return 0;
bad:
	free(cols);
	treefile_free(tf);
	return -1;
}

/* The row of path in tf, or NULL: a linear search. */
const struct tree_row *treefile_find(const struct tree_file *tf,
				     const char *path)
{
	for (size_t i = 0; i < tf->n; i++)
		if (strcmp(tf->rows[i].path, path) == 0)
			return &tf->rows[i];
	return NULL;
}

void treefile_free(struct tree_file *tf)
{
	for (size_t i = 0; i < tf->n; i++)
		free(tf->rows[i].path);
	free(tf->rows);
	memset(tf, 0, sizeof(*tf));
}
