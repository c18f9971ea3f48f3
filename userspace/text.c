// SPDX-License-Identifier: GPL-2.0
/*
 * text.c - UTF-8, escaping for the terminal, JSON and Prometheus, and exact
 * decimal formatting of 64-bit counters (no double rounding: 2^64-1 uJ prints
 * as 18446744073709.551615 J).
 *
 * Cgroup names are any bytes but '/' and NUL. Valid UTF-8 is printed as is;
 * on the terminal, control characters, backslashes and invalid bytes become
 * \xNN (backslash: \\), so a row is always one line. JSON strings and
 * Prometheus label values need valid UTF-8: there each byte that is not part
 * of valid UTF-8 becomes the four characters \xNN (lower-case hex), so that
 * names differing in such bytes stay distinct; valid UTF-8 is unchanged.
 */
#include <stdio.h>
#include <string.h>

#include "text.h"

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if invalid. */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c;
	size_t len;

	if (n == 0)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		c = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/*
 * Walk s as the terminal shows it: calls emit(ctx, bytes, len, width) for
 * each printable sequence or escape.
 */
typedef void (*term_emit)(void *ctx, const char *p, size_t n, unsigned int w);

static void term_walk(const char *str, term_emit emit, void *ctx)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);

	while (n > 0) {
		uint32_t c;
		size_t len = utf8_decode(s, n, &c);

		if (len == 0 || c < 0x20 || c == 0x7f ||
		    (c >= 0x80 && c <= 0x9f)) {
			size_t bytes = len ? len : 1;

			for (size_t i = 0; i < bytes; i++) {
				char esc[5];

				snprintf(esc, sizeof(esc), "\\x%02x", s[i]);
				emit(ctx, esc, 4, 4);
			}
			s += bytes;
			n -= bytes;
			continue;
		}
		if (c == '\\')
			emit(ctx, "\\\\", 2, 2);
		else
			emit(ctx, (const char *)s, len, cp_width(c));
		s += len;
		n -= len;
	}
}

struct esc_buf {
	char *dst;
	size_t size, used;
	bool full;
};

static void emit_buf(void *ctx, const char *p, size_t n, unsigned int w)
{
	struct esc_buf *b = ctx;

	(void)w;
	if (b->full)
		return;
	if (b->used + n + 4 > b->size) {	/* keep room for "..." */
		memcpy(b->dst + b->used, "...", 3);
		b->used += 3;
		b->full = true;
		return;
	}
	memcpy(b->dst + b->used, p, n);
	b->used += n;
}

/* Escape src into dst for a one-line message, truncated with "...". */
void esc_term(char *dst, size_t dstsz, const char *src)
{
	struct esc_buf b = { dst, dstsz, 0, false };

	if (dstsz < 8) {
		if (dstsz)
			dst[0] = '\0';
		return;
	}
	term_walk(src, emit_buf, &b);
	dst[b.used] = '\0';
}

static void emit_width(void *ctx, const char *p, size_t n, unsigned int w)
{
	(void)p;
	(void)n;
	*(size_t *)ctx += w;
}

size_t term_width(const char *s)
{
	size_t w = 0;

	term_walk(s, emit_width, &w);
	return w;
}

static void emit_file(void *ctx, const char *p, size_t n, unsigned int w)
{
	(void)w;
	fwrite(p, 1, n, ctx);
}

void fput_term(FILE *f, const char *s)
{
	term_walk(s, emit_file, f);
}

struct fit_walk {
	FILE *f;
	bool tail;	/* keep the tail (else the head) */
	size_t total;	/* the whole string's width */
	size_t room;	/* columns for the kept part */
	size_t seen;	/* width walked so far */
	size_t used;	/* width printed */
};

static void emit_fit(void *ctx, const char *p, size_t n, unsigned int w)
{
	struct fit_walk *c = ctx;
	bool keep = c->tail ? c->total - c->seen <= c->room :
			      c->used == c->seen && c->used + w <= c->room;

	if (keep) {
		fwrite(p, 1, n, c->f);
		c->used += w;
	}
	c->seen += w;
}

/*
 * Print s as fput_term does in at most width columns: as is when it fits,
 * else "..." and its tail (tail) or its head and "..." (!tail), whole
 * characters and escapes only. Returns the columns printed.
 */
size_t fput_term_fit(FILE *f, const char *s, size_t width, bool tail)
{
	struct fit_walk c = { .f = f, .tail = tail, .total = term_width(s) };

	if (c.total <= width) {
		fput_term(f, s);
		return c.total;
	}
	if (width <= 3) {
		fwrite("...", 1, width, f);
		return width;
	}
	c.room = width - 3;
	if (tail)
		fputs("...", f);
	term_walk(s, emit_fit, &c);
	if (!tail)
		fputs("...", f);
	return c.used + 3;
}

/*
 * Print s in at most width columns keeping its start and its end: as is
 * when it fits, else head "..." tail, the tail one column longer when the
 * room is odd (a path's end names the cgroup, its start the slice).
 * Returns the columns printed.
 */
size_t fput_term_mid(FILE *f, const char *s, size_t width)
{
	struct fit_walk head = { .f = f, .total = term_width(s) };
	struct fit_walk tail = { .f = f, .tail = true, .total = head.total };

	if (head.total <= width || width <= 3)
		return fput_term_fit(f, s, width, false);
	tail.room = (width - 3 + 1) / 2;
	head.room = width - 3 - tail.room;
	term_walk(s, emit_fit, &head);
	fputs("...", f);
	term_walk(s, emit_fit, &tail);
	return head.used + 3 + tail.used;
}

void fput_json_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);

	fputc('"', f);
	while (n > 0) {
		uint32_t c;
		size_t len = utf8_decode(s, n, &c);

		if (len == 0) {
			fprintf(f, "\\\\x%02x", *s);	/* \xNN, backslash escaped */
			s++;
			n--;
			continue;
		}
		if (c == '"')
			fputs("\\\"", f);
		else if (c == '\\')
			fputs("\\\\", f);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", (unsigned int)c);
		else
			fwrite(s, 1, len, f);
		s += len;
		n -= len;
	}
	fputc('"', f);
}

/*
 * Label value per the text exposition format: \\, \" and \n escaped, and
 * an invalid byte as the value \xNN (written \\xNN).
 */
void fput_prom_label(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str);

	while (n > 0) {
		uint32_t c;
		size_t len = utf8_decode(s, n, &c);

		if (len == 0) {
			fprintf(f, "\\\\x%02x", *s);	/* \xNN, backslash escaped */
			s++;
			n--;
			continue;
		}
		if (c == '"')
			fputs("\\\"", f);
		else if (c == '\\')
			fputs("\\\\", f);
		else if (c == '\n')
			fputs("\\n", f);
		else
			fwrite(s, 1, len, f);
		s += len;
		n -= len;
	}
}

static uint64_t pow10u(unsigned int e)
{
	uint64_t p = 1;

	while (e--)
		p *= 10;
	return p;
}

/*
 * v / 10^scale with exactly `decimals` digits after the point, rounded half
 * up, in integer arithmetic. scale <= 18, decimals <= scale.
 */
void fmt_fixed(char *buf, size_t sz, uint64_t v, unsigned int scale,
	       unsigned int decimals)
{
	uint64_t div = pow10u(scale);
	uint64_t q = v / div, r = v % div;
	uint64_t unit = pow10u(scale - decimals);
	uint64_t fr = r / unit;

	if (r % unit >= (unit + 1) / 2 && unit > 1)
		fr++;
	if (fr == pow10u(decimals)) {
		q++;
		fr = 0;
	}
	if (decimals == 0)
		snprintf(buf, sz, "%llu", (unsigned long long)q);
	else
		snprintf(buf, sz, "%llu.%0*llu", (unsigned long long)q,
			 (int)decimals, (unsigned long long)fr);
}

/* v / 10^scale exactly, trailing zeros dropped: 2500000, 6 -> "2.5". */
void fmt_exact(char *buf, size_t sz, uint64_t v, unsigned int scale)
{
	uint64_t div = pow10u(scale);
	uint64_t q = v / div, r = v % div;
	int digits = (int)scale;

	if (r == 0) {
		snprintf(buf, sz, "%llu", (unsigned long long)q);
		return;
	}
	while (r % 10 == 0) {
		r /= 10;
		digits--;
	}
	snprintf(buf, sz, "%llu.%0*llu", (unsigned long long)q, digits,
		 (unsigned long long)r);
}
