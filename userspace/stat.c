// SPDX-License-Identifier: GPL-2.0
/*
 * stat.c - parse energy.stat and energy.info, read small pseudo-files.
 *
 * The parsers take a buffer and know nothing of files, so that every kind of
 * junk (binary data, overlong lines, values above 2^64-1) is handled in one
 * place and reported with its line number.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stat.h"

const struct key_desc key_table[NKEYS] = {
	[K_USAGE_USEC]	= { CGE_KEY_USAGE_USEC,	KIND_CPU_USEC,	"cpu_percent" },
	[K_ENERGY_UJ]	= { CGE_KEY_ENERGY_UJ,	KIND_UJ,	"power_w" },
	[K_WAKEUPS]	= { CGE_KEY_WAKEUPS,	KIND_COUNT,	"wakeups_per_s" },
	[K_IMPACT_USEC]	= { CGE_KEY_IMPACT_USEC, KIND_IMPACT,	"impact" },
	[K_PACKAGE_UJ]	= { CGE_KEY_PACKAGE_UJ,	KIND_UJ,	"package_w" },
	[K_CORE_UJ]	= { CGE_KEY_CORE_UJ,	KIND_UJ,	"core_w" },
	[K_UNCORE_UJ]	= { CGE_KEY_UNCORE_UJ,	KIND_UJ,	"uncore_w" },
	[K_DRAM_UJ]	= { CGE_KEY_DRAM_UJ,	KIND_UJ,	"dram_w" },
	[K_PSYS_UJ]	= { CGE_KEY_PSYS_UJ,	KIND_UJ,	"psys_w" },
	[K_IDLE_SHARE_UJ] = { CGE_KEY_IDLE_SHARE_UJ, KIND_UJ,	"idle_share_w" },
	[K_SYS_SHARE_UJ] = { CGE_KEY_SYS_SHARE_UJ, KIND_UJ,	"sys_share_w" },
	[K_TOTAL_UJ]	= { CGE_KEY_TOTAL_UJ,	KIND_UJ,	"total_w" },
	[K_IDLE_UJ]	= { CGE_KEY_IDLE_UJ,	KIND_UJ,	"idle_w" },
	[K_IDLE_USEC]	= { CGE_KEY_IDLE_USEC,	KIND_CPU_USEC,	"idle_cpu_percent" },
	[K_IRQ_UJ]	= { CGE_KEY_IRQ_UJ,	KIND_UJ,	"irq_w" },
	[K_IRQ_USEC]	= { CGE_KEY_IRQ_USEC,	KIND_CPU_USEC,	"irq_cpu_percent" },
	[K_SOFTIRQ_UJ]	= { CGE_KEY_SOFTIRQ_UJ,	KIND_UJ,	"softirq_w" },
	[K_SOFTIRQ_USEC] = { CGE_KEY_SOFTIRQ_USEC, KIND_CPU_USEC, "softirq_cpu_percent" },
	[K_STEAL_UJ]	= { CGE_KEY_STEAL_UJ,	KIND_UJ,	"steal_w" },
	[K_STEAL_USEC]	= { CGE_KEY_STEAL_USEC,	KIND_CPU_USEC,	"steal_cpu_percent" },
};

static bool is_key_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static int key_lookup(const char *k, size_t n)
{
	for (int i = 0; i < NKEYS; i++)
		if (strlen(key_table[i].name) == n &&
		    memcmp(key_table[i].name, k, n) == 0)
			return i;
	return -1;
}

static int fail(struct parse_err *pe, unsigned int line, const char *msg)
{
	pe->line = line;
	snprintf(pe->msg, sizeof(pe->msg), "%s", msg);
	return -1;
}

/* What the energy.stat key k[0..n) names; SK_NONE for a newer module's key. */
struct stat_key stat_key(const char *k, size_t n)
{
	const size_t plen = strlen(CGE_OWN_PREFIX);
	struct stat_key sk = { SK_NONE, 0 };
	bool own = n > plen && memcmp(k, CGE_OWN_PREFIX, plen) == 0;
	int id;

	if (n == strlen(CGE_KEY_POWER_AVG10_MW) &&
	    memcmp(k, CGE_KEY_POWER_AVG10_MW, n) == 0) {
		sk.kind = SK_AVG10;
		return sk;
	}
	id = own ? key_lookup(k + plen, n - plen) : key_lookup(k, n);
	if (id < 0 || (own && !key_adds_up(id)))
		return sk;
	sk.kind = own ? SK_OWN : SK_COUNTER;
	sk.id = id;
	return sk;
}

/*
 * Store v as key's value in st: power_avg10_mw, the module's 10 s average
 * power (a gauge), kept apart from the counters, which rates, JSON and
 * Prometheus go through. Returns 0, or -1 with pe set when st has it already.
 */
int stat_store(struct cg_stat *st, struct stat_key key, uint64_t v,
	       unsigned int lineno, struct parse_err *pe)
{
	unsigned int *present = key.kind == SK_OWN ? &st->own_present :
				&st->present;
	char msg[64];

	switch (key.kind) {
	case SK_NONE:
		return 0;	/* a key from a newer module: ignored */
	case SK_AVG10:
		if (st->has_avg10)
			return fail(pe, lineno,
				    "duplicate key " CGE_KEY_POWER_AVG10_MW);
		st->avg10_mw = v;
		st->has_avg10 = true;
		return 0;
	default:
		break;
	}
	if (*present & (1u << key.id)) {
		snprintf(msg, sizeof(msg), "duplicate key %s%s",
			 key.kind == SK_OWN ? CGE_OWN_PREFIX : "",
			 key_table[key.id].name);
		return fail(pe, lineno, msg);
	}
	if (key.kind == SK_OWN)
		st->own[key.id] = v;
	else
		st->v[key.id] = v;
	*present |= 1u << key.id;
	return 0;
}

/*
 * The decimal number at p[0..n), up to the first byte that is not a digit:
 * its length (0: no digit), or -1 when it is above 2^64-1.
 */
int stat_u64(const char *p, size_t n, uint64_t *v)
{
	size_t i = 0;

	*v = 0;
	while (i < n && p[i] >= '0' && p[i] <= '9') {
		unsigned int d = (unsigned int)(p[i] - '0');

		if (*v > (UINT64_MAX - d) / 10)
			return -1;
		*v = *v * 10 + d;
		i++;
	}
	return (int)i;
}

/* Parse one "key value" line (no newline). Returns 0, or -1 with pe set. */
int stat_line(const char *p, size_t n, unsigned int lineno, struct cg_stat *st,
	      struct parse_err *pe)
{
	size_t i = 0, kstart, klen;
	uint64_t v = 0;
	int digits;

	if (n > STAT_MAX_LINE)
		return fail(pe, lineno, "line too long");
	for (size_t j = 0; j < n; j++) {
		unsigned char c = (unsigned char)p[j];

		if ((c < 0x20 && c != '\t' && c != '\r') || c >= 0x7f)
			return fail(pe, lineno, "binary data");
	}

	kstart = i;
	while (i < n && is_key_char((unsigned char)p[i]))
		i++;
	klen = i - kstart;
	if (klen == 0 || i == n || (p[i] != ' ' && p[i] != '\t'))
		return fail(pe, lineno, "expected 'key value'");
	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	digits = stat_u64(p + i, n - i, &v);
	if (digits < 0)
		return fail(pe, lineno,
			    "value out of range (above 18446744073709551615)");
	if (digits == 0)
		return fail(pe, lineno,
			    "expected 'key value' with an unsigned integer value");
	i += (size_t)digits;
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
		i++;
	if (i != n)
		return fail(pe, lineno,
			    "expected 'key value' with an unsigned integer value");
	return stat_store(st, stat_key(p + kstart, klen), v, lineno, pe);
}

/* 0 when st has every key each energy.stat has, else -1 with pe set. */
int stat_complete(const struct cg_stat *st, unsigned int lineno,
		  struct parse_err *pe)
{
	char msg[64];

	for (int k = 0; k < NKEYS; k++) {
		if ((REQUIRED_KEYS & (1u << k)) && !(st->present & (1u << k))) {
			snprintf(msg, sizeof(msg), "missing key %s",
				 key_table[k].name);
			return fail(pe, lineno, msg);
		}
	}
	return 0;
}

int stat_parse(const char *buf, size_t len, struct cg_stat *st,
	       struct parse_err *pe)
{
	unsigned int lineno = 0;
	size_t pos = 0;

	memset(st, 0, sizeof(*st));
	if (len == 0)
		return fail(pe, 0, "empty file");
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		lineno++;
		if (n > 0 && stat_line(buf + pos, n, lineno, st, pe) < 0)
			return -1;
		pos += n + 1;
	}
	return stat_complete(st, 0, pe);
}

static bool info_has(const struct info *info, const char *key, size_t n)
{
	for (size_t i = 0; i < info->n; i++)
		if (strlen(info->kv[i].key) == n && memcmp(info->kv[i].key, key, n) == 0)
			return true;
	return false;
}

/*
 * energy.info is informational: lines that are not "key words..." with
 * printable ASCII are skipped rather than reported.
 */
void info_parse(const char *buf, size_t len, struct info *info)
{
	size_t pos = 0;

	info->kv = NULL;
	info->n = 0;
	while (pos < len) {
		const char *p = buf + pos;
		const char *nl = memchr(p, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - p) : len - pos;
		size_t i = 0, k;
		bool ok = n > 0 && n <= STAT_MAX_LINE;

		pos += n + 1;
		for (size_t j = 0; ok && j < n; j++)
			if ((unsigned char)p[j] < 0x20 || (unsigned char)p[j] >= 0x7f)
				ok = p[j] == '\t';
		if (!ok)
			continue;
		while (i < n && is_key_char((unsigned char)p[i]))
			i++;
		k = i;
		if (k == 0 || i == n || (p[i] != ' ' && p[i] != '\t'))
			continue;
		while (i < n && (p[i] == ' ' || p[i] == '\t'))
			i++;
		size_t vend = n;

		while (vend > i && (p[vend - 1] == ' ' || p[vend - 1] == '\t'))
			vend--;
		if (vend == i || info_has(info, p, k))
			continue;	/* no value, or a repeated key: first wins */

		struct info_kv *kv = realloc(info->kv, (info->n + 1) * sizeof(*kv));

		if (!kv)
			return;
		info->kv = kv;
		kv[info->n].key = strndup(p, k);
		kv[info->n].value = strndup(p + i, vend - i);
		if (!kv[info->n].key || !kv[info->n].value) {
			free(kv[info->n].key);
			free(kv[info->n].value);
			return;
		}
		/* tabs inside the value become spaces: one word separator */
		for (char *c = kv[info->n].value; *c; c++)
			if (*c == '\t')
				*c = ' ';
		info->n++;
	}
}

const char *info_get(const struct info *info, const char *key)
{
	for (size_t i = 0; i < info->n; i++)
		if (strcmp(info->kv[i].key, key) == 0)
			return info->kv[i].value;
	return NULL;
}

/* energy.info's key as a number; false when absent or not a number */
bool info_u64(const struct info *info, const char *key, uint64_t *out)
{
	const char *val = info_get(info, key);
	char *end;

	if (!val || *val < '0' || *val > '9')
		return false;
	errno = 0;
	*out = strtoull(val, &end, 10);
	return !errno && !*end;
}

void info_free(struct info *info)
{
	for (size_t i = 0; i < info->n; i++) {
		free(info->kv[i].key);
		free(info->kv[i].value);
	}
	free(info->kv);
	info->kv = NULL;
	info->n = 0;
}

/*
 * Read a whole small file. O_NONBLOCK so that a FIFO planted in a tree
 * cannot hang us; anything but a regular file is refused.
 */
int read_small_file(const char *path, char *buf, size_t cap, size_t *len)
{
	int fd, err;

	*len = 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? EINVAL : errno;
	err = read_small_fd(fd, buf, cap, len);
	close(fd);
	return err;
}

/*
 * Read fd to its end into *buf of *cap bytes, growing it with realloc() up
 * to max (a caller's fixed buffer has *cap == max); got is what is in it.
 * EFBIG when the file holds more than max bytes.
 */
static int read_to_end(int fd, char **buf, size_t *cap, size_t max,
		       size_t *got)
{
	for (;;) {
		ssize_t r;

		if (*got == *cap && *cap >= max) {
			char c;

			r = read(fd, &c, 1);
			if (r < 0 && errno == EINTR)
				continue;
			return r < 0 ? errno : (r > 0 ? EFBIG : 0);
		}
		if (*got == *cap) {
			size_t ncap = *cap <= max / 2 ? 2 * *cap : max;
			char *nb = realloc(*buf, ncap);

			if (!nb)
				return ENOMEM;
			*buf = nb;
			*cap = ncap;
		}
		r = read(fd, *buf + *got, *cap - *got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (r == 0)
			return 0;
		*got += (size_t)r;
	}
}

/* read_small_file's reading of an open file; fd stays open */
int read_small_fd(int fd, char *buf, size_t cap, size_t *len)
{
	struct stat sb;
	size_t got = 0;
	int err;

	if (fstat(fd, &sb) < 0)
		err = errno;
	else if (!S_ISREG(sb.st_mode))
		err = EINVAL;
	else
		err = read_to_end(fd, &buf, &cap, cap, &got);
	*len = got;
	return err;
}

/*
 * Read a whole file of up to max bytes into a malloc()ed *buf, with one
 * open read to its end (a seq_file such as energy.tree is made once per
 * open). Refused as read_small_file refuses, but EISDIR for a directory.
 */
int read_whole_file(const char *path, size_t max, char **buf, size_t *len)
{
	size_t cap = 65536, got = 0;
	struct stat sb;
	char *b = NULL;
	int fd, err = 0;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? EINVAL : errno;
	if (fstat(fd, &sb) < 0)
		err = errno;
	else if (!S_ISREG(sb.st_mode))
		err = S_ISDIR(sb.st_mode) ? EISDIR : EINVAL;
	else if (sb.st_size > 0 && (uint64_t)sb.st_size >= cap)
		cap = (uint64_t)sb.st_size < max ? (size_t)sb.st_size + 1 : max;
	if (cap > max)
		cap = max;
	if (!err) {
		b = malloc(cap ? cap : 1);
		err = b ? 0 : ENOMEM;
	}
	if (!err)
		err = read_to_end(fd, &b, &cap, max, &got);
	close(fd);
	if (err) {
		free(b);
		return err;
	}
	*buf = b;
	*len = got;
	return 0;
}
