/* SPDX-License-Identifier: GPL-2.0 */
/*
 * serve.h - energystat --listen: /metrics over HTTP (libmicrohttpd).
 */
#ifndef ENERGYSTAT_SERVE_H
#define ENERGYSTAT_SERVE_H

#include <stdbool.h>
#include <sys/socket.h>

#include "tree.h"

struct webcfg;

const char *listen_parse(const char *arg, struct sockaddr_storage *ss,
			 bool *any);
int serve(const struct tree *t, const struct sockaddr_storage *ss, bool any,
	  bool hierarchical, struct webcfg *wc);

#endif /* ENERGYSTAT_SERVE_H */
