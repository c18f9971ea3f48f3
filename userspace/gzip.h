/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gzip.h - gzip a response body (zlib) when the client's Accept-Encoding
 * allows it.
 */
#ifndef ENERGYSTAT_GZIP_H
#define ENERGYSTAT_GZIP_H

#include <stdbool.h>
#include <stddef.h>

bool gzip_accepted(const char *accept_encoding);
char *gzip_compress(const char *in, size_t len, size_t *outlen);

#endif /* ENERGYSTAT_GZIP_H */
