/* SPDX-License-Identifier: GPL-2.0 */
/*
 * serve.h - energystat --listen: /metrics over HTTP (libmicrohttpd).
 */
#ifndef ENERGYSTAT_SERVE_H
#define ENERGYSTAT_SERVE_H

#include <stdbool.h>
#include <sys/socket.h>

#include "filter.h"
#include "tree.h"

struct webcfg;

/* what --listen serves, and where */
struct serve_opts {
	const struct sockaddr_storage *addr;	/* from listen_parse() */
	bool any;				/* no ADDR: every address */
	bool hierarchical;			/* --hierarchical */
	const struct filter *filter;		/* --include, --exclude */
	struct webcfg *wc;			/* --web.config.file, or NULL */
};

const char *listen_parse(const char *arg, struct sockaddr_storage *ss,
			 bool *any);
int serve(const struct tree *t, const struct serve_opts *so);

#endif /* ENERGYSTAT_SERVE_H */
