/* SPDX-License-Identifier: GPL-2.0 */
/*
 * energystat.h - types shared by the energystat tool's files.
 *
 * stat.c    parse energy.stat / energy.info text (pure) and read small files
 * tree.c    resolve PATH arguments, walk a tree into a sample
 * text.c    UTF-8, escaping, exact decimal formatting
 * output.c  table, JSON and Prometheus output
 * diag.c    error messages (one line each, "energystat: " prefix)
 * energystat.c  command line, static and live modes
 */
#ifndef ENERGYSTAT_H
#define ENERGYSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cgroup_energy.h"

#define PROG "energystat"

/* ---- energy.stat keys ------------------------------------------------ */

enum key_id {
	K_USAGE_USEC, K_ENERGY_UJ, K_WAKEUPS, K_IMPACT_USEC,
	K_PACKAGE_UJ, K_CORE_UJ, K_UNCORE_UJ, K_DRAM_UJ, K_PSYS_UJ,
	K_TOTAL_UJ, K_IDLE_UJ, K_IDLE_USEC,
	NKEYS
};

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

struct cg_stat {
	uint64_t v[NKEYS];
	unsigned int present;	/* bit (1u << key_id) set when the key was read */
};

static inline bool stat_has(const struct cg_stat *st, enum key_id k)
{
	return st->present & (1u << k);
}

/* ---- stat.c ------------------------------------------------------------ */

#define STAT_MAX_FILE	16384	/* energy.stat / energy.info larger than this is junk */
#define STAT_MAX_LINE	255

struct parse_err {
	unsigned int line;	/* 1-based line, 0 for the whole file */
	char msg[128];
};

int stat_parse(const char *buf, size_t len, struct cg_stat *st,
	       struct parse_err *pe);

struct info_kv {
	char *key;
	char *value;
};

struct info {
	struct info_kv *kv;
	size_t n;
};

void info_parse(const char *buf, size_t len, struct info *info);
const char *info_get(const struct info *info, const char *key);
void info_free(struct info *info);

/* 0 or an errno; EFBIG when larger than cap, EINVAL when not a regular file */
int read_small_file(const char *path, char *buf, size_t cap, size_t *len);

/* ---- diag.c ------------------------------------------------------------- */

struct diag {
	unsigned long errors;	/* per-cgroup problems (exit status 1) */
	unsigned long shown;
	unsigned long limit;	/* print at most this many, count the rest */
};

void diag_error(struct diag *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void diag_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void diag_finish(struct diag *d);

/* ---- tree.c ------------------------------------------------------------- */

struct cg_node {
	char *path;		/* "/" or "/a/b": raw bytes as in the tree */
	unsigned int depth;	/* below the root of the tree */
	bool ok;		/* energy.stat read and parsed */
	struct cg_stat st;
};

struct sample {
	struct cg_node *nodes;	/* sorted by path (path_cmp) after sample_take */
	size_t n, cap;
	struct cg_stat root;	/* root energy.stat, always read */
	struct info info;	/* root energy.info, may be empty */
	uint64_t mono_ns;	/* CLOCK_MONOTONIC when the sample was taken */
	uint64_t real_ns;	/* CLOCK_REALTIME, for JSON */
};

struct tree {
	const char *root;	/* the tree's directory, no trailing slash ("" = /) */
	bool default_root;	/* root is CGE_MOUNT_POINT: hints name the module */
	int max_depth;		/* -1: unlimited */
	char **paths;		/* normalized cgroup paths to show ("/", "/a/b") */
	size_t npaths;
};

enum tree_rc {
	TREE_OK,
	TREE_FATAL,		/* message printed; nothing can be shown */
};

char *path_normalize(const char *in);	/* NULL on '..' above the root */
char *path_resolve(const char *arg, const char *root);
int path_cmp(const char *a, const char *b);
enum tree_rc tree_check(const struct tree *t, bool *exists, struct diag *d);
enum tree_rc sample_take(const struct tree *t, struct sample *s, struct diag *d);
const struct cg_node *sample_find(const struct sample *s, const char *path);
void sample_free(struct sample *s);

/* ---- text.c ------------------------------------------------------------- */

size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
void esc_term(char *dst, size_t dstsz, const char *src);
size_t term_width(const char *s);
void fput_term(FILE *f, const char *s);
void fput_json_string(FILE *f, const char *s);
void fput_prom_label(FILE *f, const char *s);
void fmt_fixed(char *buf, size_t sz, uint64_t v, unsigned int scale,
	       unsigned int decimals);
void fmt_exact(char *buf, size_t sz, uint64_t v, unsigned int scale);

/* ---- output.c ----------------------------------------------------------- */

enum sort_key { SORT_ENERGY, SORT_CPU, SORT_WAKEUPS, SORT_IMPACT, SORT_PATH };

struct rates {
	bool valid;
	double r[NKEYS];	/* per key, by key_table[k].kind */
};

struct view {
	const struct sample *s;
	const struct rates *rates;	/* NULL in static mode; else one per node */
	double interval_s;		/* live mode only */
	const char *clock;		/* "module" or "wall", live mode only */
	bool reset;			/* counters restarted, re-baselined */
	const char *root;
	enum sort_key sort;
};

void out_table(FILE *f, const struct view *v);
void out_json(FILE *f, const struct view *v);
void out_prometheus(FILE *f, const struct view *v);

#endif /* ENERGYSTAT_H */
