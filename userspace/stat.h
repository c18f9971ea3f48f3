/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stat.h - parse energy.stat and energy.info text (pure), energy.stat's
 * keys and lines for energy.tree's parser (treefile.c), and read files.
 */
#ifndef ENERGYSTAT_STAT_H
#define ENERGYSTAT_STAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"

#define STAT_MAX_FILE	16384	/* energy.stat / energy.info larger than this is junk */
#define STAT_MAX_LINE	255

struct parse_err {
	unsigned int line;	/* 1-based line, 0 for the whole file */
	char msg[128];
};

/* What an energy.stat key names */
struct stat_key {
	enum { SK_NONE, SK_COUNTER, SK_OWN, SK_AVG10 } kind;
	int id;			/* SK_COUNTER, SK_OWN: its enum key_id */
};

int stat_parse(const char *buf, size_t len, struct cg_stat *st,
	       struct parse_err *pe);
struct stat_key stat_key(const char *k, size_t n);
int stat_store(struct cg_stat *st, struct stat_key key, uint64_t v,
	       unsigned int lineno, struct parse_err *pe);
int stat_u64(const char *p, size_t n, uint64_t *v);
int stat_line(const char *p, size_t n, unsigned int lineno, struct cg_stat *st,
	      struct parse_err *pe);
int stat_complete(const struct cg_stat *st, unsigned int lineno,
		  struct parse_err *pe);

void info_parse(const char *buf, size_t len, struct info *info);
const char *info_get(const struct info *info, const char *key);
bool info_u64(const struct info *info, const char *key, uint64_t *out);
void info_free(struct info *info);

/* 0 or an errno; EFBIG when larger than cap, EINVAL when not a regular file */
int read_small_file(const char *path, char *buf, size_t cap, size_t *len);
int read_small_fd(int fd, char *buf, size_t cap, size_t *len);
/* The same into *buf, malloc()ed and grown up to max bytes; free() it */
int read_whole_file(const char *path, size_t max, char **buf, size_t *len);

#endif /* ENERGYSTAT_STAT_H */
