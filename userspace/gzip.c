// SPDX-License-Identifier: GPL-2.0
/*
 * gzip.c - the gzip content coding of the /metrics response.
 *
 * Compression is zlib's (Debian zlib1g-dev), the reference implementation
 * of deflate: deflateInit2 with windowBits 15 + 16 writes the gzip wrapper
 * (RFC 1952) itself. Prometheus asks for gzip on every scrape, and metric
 * text, with its repeated names and labels, shrinks several times over.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "gzip.h"

#define GZIP_WINDOW	(15 + 16)	/* 32 KiB window, gzip wrapper */
#define GZIP_MEMLEVEL	8		/* zlib's default */

/* Skip spaces and tabs (HTTP's optional whitespace). */
static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/*
 * The q value of one Accept-Encoding element's parameters (";q=0.5"): 0
 * only for "q=0", "q=0.", "q=0.0"... (RFC 9110 12.4.2); anything else or
 * none counts as acceptable.
 */
static bool q_nonzero(const char *p, const char *end)
{
	while (p < end) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *v;

		if (!semi)
			return true;
		p = skip_ows(semi + 1);
		if (end - p < 2 || (p[0] != 'q' && p[0] != 'Q') || p[1] != '=')
			continue;
		v = p + 2;
		if (*v != '0')
			return true;
		for (v++; v < end && (*v == '.' || *v == '0'); v++)
			;
		v = skip_ows(v);
		return !(v >= end || *v == ';');
	}
	return true;
}

/*
 * Whether an Accept-Encoding header value allows gzip: an element "gzip"
 * (or "x-gzip", or "*") whose q is not 0. A "gzip;q=0" refuses it even
 * when "*" would allow it. NULL (no header): identity only.
 */
bool gzip_accepted(const char *ae)
{
	bool star = false, named = false, gzip = false;
	const char *p = ae;

	while (p && *p) {
		const char *end = strchr(p, ',');
		const char *tok = skip_ows(p);
		size_t len;

		if (!end)
			end = p + strlen(p);
		len = strcspn(tok, ";, \t");
		if (tok + len > end)
			len = (size_t)(end - tok);
		if ((len == 4 && strncasecmp(tok, "gzip", 4) == 0) ||
		    (len == 6 && strncasecmp(tok, "x-gzip", 6) == 0)) {
			named = true;
			gzip |= q_nonzero(tok + len, end);
		} else if (len == 1 && *tok == '*') {
			star = q_nonzero(tok + len, end);
		}
		p = *end ? end + 1 : end;
	}
	return named ? gzip : star;
}

/* in[0..len) gzipped into a new buffer (*outlen bytes); NULL on error. */
char *gzip_compress(const char *in, size_t len, size_t *outlen)
{
	z_stream z = { 0 };
	unsigned char *out;
	uLong bound;

	if (len > UINT32_MAX)
		return NULL;
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WINDOW,
			 GZIP_MEMLEVEL, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	/* deflateBound counts zlib's wrapper; gzip's is 12 bytes longer */
	bound = deflateBound(&z, (uLong)len) + 18;
	out = malloc(bound);
	if (!out) {
		deflateEnd(&z);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)bound;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*outlen = z.total_out;
	deflateEnd(&z);
	return (char *)out;
}
