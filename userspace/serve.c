// SPDX-License-Identifier: GPL-2.0
/*
 * serve.c - energystat --listen: /metrics over HTTP for Prometheus.
 *
 * HTTP is GNU libmicrohttpd's (Debian libmicrohttpd-dev): a small C library
 * made to embed an HTTP/1.1 server in a program. It parses requests,
 * answers malformed ones with 400 itself, handles keep-alive, connection
 * limits (MAX_CONNECTIONS, MAX_PER_IP from one address: more are closed at
 * once) and timeouts, and polls the connections with epoll from a pool of
 * POOL_THREADS threads: a connection that sends nothing (or a byte at a
 * time) holds a slot of MAX_CONNECTIONS, not a thread, until IDLE_TIMEOUT_S.
 * This file only says what a request gets:
 *
 *   GET or HEAD /metrics  the tree read afresh, in the Prometheus text format
 *                         0.0.4, or OpenMetrics 1.0 when the Accept header
 *                         names application/openmetrics-text; the same text
 *                         as --prometheus (prom.c), then the exporter's own
 *                         families (health.c); gzipped when Accept-Encoding
 *                         allows it (gzip.c)
 *   other paths           404
 *   other methods         405 with Allow: GET, HEAD
 *
 * /metrics answers 200 whatever the module's state, as node_exporter does:
 * a tree that cannot be read (module not loaded, nothing mounted, denied,
 * a walk too slow or torn) gives cgroup_energy_up 0, its reason and the
 * exporter's own metrics, and the next scrape reads the tree again, so the
 * series come back by themselves with the module. Reads are serialized (one
 * walk at a time, concurrent scrapes wait their turn) and bounded: a scrape
 * that cannot start its walk, or whose walk has not finished,
 * SCRAPE_TIMEOUT_S after it arrived has no series (reason timeout). The
 * watts gauges compare each read with an earlier one at least WATTS_MIN_S
 * older.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diag.h"
#include "tree.h"
#include "view.h"
#include "gzip.h"
#include "health.h"
#include "webcfg.h"
#include "serve.h"

#define SCRAPE_TIMEOUT_S	5	/* under Prometheus's default scrape_timeout, 10 s */
#define WATTS_MIN_S		1	/* shortest window of the watts gauges */
#define MAX_CONNECTIONS		1024	/* idle ones cost a socket, no thread */
#define MAX_PER_IP		16	/* one client cannot take them all */
#define POOL_THREADS		4	/* requests answered at once */
#define IDLE_TIMEOUT_S		10	/* a connection silent this long is closed */
#define DIAG_FIRST		20	/* per-cgroup errors printed on the first read */

#define TEXT_TYPE	"text/plain; version=0.0.4; charset=utf-8"
#define OM_TYPE		"application/openmetrics-text; version=1.0.0; charset=utf-8"
#define VARY		"Accept, Accept-Encoding"	/* what /metrics depends on */

struct server {
	struct tree t;			/* the tree, with the walk's timeout */
	bool hierarchical;
	const struct filter *filter;	/* --include, --exclude */
	struct health health;		/* module state, own metrics; own lock */
	pthread_mutex_t lock;		/* one read at a time; guards below */
	struct sample older, newer;	/* earlier reads, for the watts gauges */
	bool have_older, have_newer;
	bool first;			/* no read yet: print its errors */
	struct webcfg *wc;		/* --web.config.file; NULL: none */
};

/*
 * Queue body (freed here) as the answer. allow: an Allow header; encoding:
 * a Content-Encoding; vary: a Vary header; each NULL for none.
 */
static enum MHD_Result reply_coded(struct MHD_Connection *c,
				   unsigned int status, const char *type,
				   char *body, size_t len, const char *allow,
				   const char *encoding, const char *vary)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	if (encoding)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, encoding);
	if (vary)
		MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, vary);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status,
			     const char *type, char *body, size_t len,
			     const char *allow)
{
	return reply_coded(c, status, type, body, len, allow, NULL, NULL);
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status,
				  const char *msg, const char *allow)
{
	char *body = strdup(msg);

	if (!body)
		return MHD_NO;
	return reply(c, status, "text/plain; charset=utf-8", body, strlen(body),
		     allow);
}

/* The earlier read to compute watts against: at least WATTS_MIN_S old. */
static const struct sample *watts_base(struct server *sv, const struct sample *cur)
{
	uint64_t min = (uint64_t)WATTS_MIN_S * 1000000000u;

	if (sv->have_newer && cur->mono_ns - sv->newer.mono_ns >= min)
		return &sv->newer;
	if (sv->have_older)
		return &sv->older;
	return NULL;
}

/* Keep cur as the newest earlier read if it is WATTS_MIN_S after the last. */
static void keep_read(struct server *sv, struct sample *cur)
{
	uint64_t min = (uint64_t)WATTS_MIN_S * 1000000000u;

	if (sv->have_newer && cur->mono_ns - sv->newer.mono_ns < min) {
		sample_free(cur);
		return;
	}
	if (sv->have_older)
		sample_free(&sv->older);
	sv->older = sv->newer;
	sv->have_older = sv->have_newer;
	sv->newer = *cur;
	sv->have_newer = true;
}

static bool wants_openmetrics(struct MHD_Connection *c)
{
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_ACCEPT);

	return accept && strstr(accept, "application/openmetrics-text");
}

/* Forget the earlier reads: the module may come back with new counters. */
static void forget_reads(struct server *sv)
{
	if (sv->have_older)
		sample_free(&sv->older);
	if (sv->have_newer)
		sample_free(&sv->newer);
	sv->have_older = false;
	sv->have_newer = false;
	sv->first = true;
}

/*
 * Read the tree into cur by deadline (CLOCK_MONOTONIC ns), sv->lock held.
 * The root is probed first, without a message: a tree that is down costs
 * one stat and one read, and health.c logs only its changes.
 */
static enum up_reason read_tree(struct server *sv, uint64_t deadline,
				struct sample *cur)
{
	struct diag d = { .limit = sv->first ? DIAG_FIRST : 0 };
	enum tree_state ts = tree_probe(&sv->t, false);
	enum tree_rc rc;

	if (ts != TS_OK)
		return health_reason(ts);
	/* the scrape's own deadline: the walks, retried, all end there */
	sv->t.deadline_ns = deadline;
	sv->t.exact = true;
	rc = clock_ns(CLOCK_MONOTONIC) >= deadline ? TREE_LATE :
	     sample_take(&sv->t, cur, &d);
	switch (rc) {
	case TREE_OK:
		sv->first = false;
		return UP_OK;
	case TREE_LATE:
		return UP_TIMEOUT;
	case TREE_TORN:
		return UP_TORN;
	default:
		ts = tree_probe(&sv->t, false);
		return ts == TS_OK ? UP_READ_ERROR : health_reason(ts);
	}
}

/*
 * The text of one scrape into f: the tree's series when it could be read
 * (r->reason UP_OK), then the exporter's own families. Takes sv->lock for
 * the read unless it waits past the scrape's deadline (reason timeout).
 */
static void scrape_text(struct server *sv, FILE *f, struct view *v,
			struct scrape_result *r)
{
	uint64_t deadline = r->start_ns + (uint64_t)SCRAPE_TIMEOUT_S * 1000000000u;
	struct timespec until = { .tv_sec = 0 };
	struct sample cur;

	/* the monotonic clock: a step of the wall clock moves no deadline */
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += SCRAPE_TIMEOUT_S;
	if (pthread_mutex_clocklock(&sv->lock, CLOCK_MONOTONIC, &until) != 0) {
		r->reason = UP_TIMEOUT;
		health_end(&sv->health, &sv->t, r->reason);
		health_write(f, v, &sv->health, r);
		return;
	}
	r->reason = read_tree(sv, deadline, &cur);
	if (r->reason == UP_OK) {
		v->s = &cur;
		v->base = watts_base(sv, &cur);
		r->cgroups = out_prometheus(f, v);
		keep_read(sv, &cur);
	} else {
		forget_reads(sv);
	}
	health_end(&sv->health, &sv->t, r->reason);
	pthread_mutex_unlock(&sv->lock);
	v->s = NULL;
	v->base = NULL;
	health_write(f, v, &sv->health, r);
}

/* Whether the client's Accept-Encoding allows a gzipped answer. */
static bool wants_gzip(struct MHD_Connection *c)
{
	return gzip_accepted(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						MHD_HTTP_HEADER_ACCEPT_ENCODING));
}

/*
 * GET or HEAD /metrics: 200 whatever the module's state. HEAD gets the
 * headers GET would (MHD sends no body), Content-Length of the same coding.
 */
static enum MHD_Result scrape(struct server *sv, struct MHD_Connection *c)
{
	struct scrape_result r = { .start_ns = clock_ns(CLOCK_MONOTONIC) };
	struct view v = { .root = sv->t.root, .sort = SORT_ENERGY,
			  .hierarchical = sv->hierarchical,
			  .openmetrics = wants_openmetrics(c),
			  .filter = sv->filter, .exporter = true };
	const char *type = v.openmetrics ? OM_TYPE : TEXT_TYPE;
	char *body = NULL, *gz;
	size_t len = 0, gzlen;
	FILE *f;

	health_begin(&sv->health);
	f = open_memstream(&body, &len);
	if (!f)
		return MHD_NO;
	scrape_text(sv, f, &v, &r);
	if (fclose(f) != 0) {
		free(body);
		return MHD_NO;
	}
	if (!wants_gzip(c))
		return reply_coded(c, MHD_HTTP_OK, type, body, len, NULL, NULL,
				   VARY);
	gz = gzip_compress(body, len, &gzlen);
	if (!gz)	/* out of memory: the text as it is */
		return reply_coded(c, MHD_HTTP_OK, type, body, len, NULL, NULL,
				   VARY);
	free(body);
	return reply_coded(c, MHD_HTTP_OK, type, gz, gzlen, NULL, "gzip", VARY);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload_data,
			      size_t *upload_size, void **con_cls)
{
	enum MHD_Result ret;

	(void)version;
	(void)upload_data;
	(void)upload_size;
	(void)con_cls;
	if (webcfg_refuse(((struct server *)cls)->wc, c, &ret))
		return ret;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "energystat: only GET and HEAD\n", "GET, HEAD");
	if (strcmp(url, "/metrics") != 0)
		return reply_text(c, MHD_HTTP_NOT_FOUND,
				  "energystat: not found; the metrics are at /metrics\n",
				  NULL);
	return scrape(cls, c);
}

/*
 * "[ADDR:]PORT" into a socket address: ADDR an IPv4 address or an IPv6 one
 * in brackets, none for every address (IPv6 and IPv4). Returns an error
 * message, or NULL.
 */
const char *listen_parse(const char *arg, struct sockaddr_storage *ss,
			 bool *any)
{
	const char *colon = strrchr(arg, ':');
	const char *port = colon ? colon + 1 : arg;
	char host[INET6_ADDRSTRLEN + 2];
	unsigned long p = 0;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (!*port || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5)
		return "PORT must be a number from 1 to 65535";
	p = strtoul(port, NULL, 10);
	if (p < 1 || p > 65535)
		return "PORT must be a number from 1 to 65535";
	*any = !colon || colon == arg;
	if (*any) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_any;
		a->sin6_port = htons((uint16_t)p);
		return NULL;
	}
	hl = (size_t)(colon - arg);
	if (hl >= sizeof(host))
		return "ADDR must be an IPv4 address or an IPv6 address in brackets";
	memcpy(host, arg, hl);
	host[hl] = '\0';
	if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		host[hl - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)p);
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1)
			return NULL;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)p);
		if (inet_pton(AF_INET, host, &a->sin_addr) == 1)
			return NULL;
	}
	return "ADDR must be an IPv4 address or an IPv6 address in brackets";
}

static struct MHD_Daemon *start(unsigned int flags,
				const struct sockaddr_storage *ss,
				struct server *sv)
{
	return MHD_start_daemon(flags | webcfg_flags(sv->wc),
				ntohs(((const struct sockaddr_in *)ss)->sin_port),
				NULL, NULL, handle, sv,
				MHD_OPTION_SOCK_ADDR, ss,
				MHD_OPTION_CONNECTION_LIMIT,
				(unsigned int)MAX_CONNECTIONS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				(unsigned int)MAX_PER_IP,
				MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned int)IDLE_TIMEOUT_S,
				MHD_OPTION_THREAD_POOL_SIZE,
				(unsigned int)POOL_THREADS,
				MHD_OPTION_ARRAY, webcfg_options(sv->wc),
				MHD_OPTION_END);
}

/*
 * Say where the daemon listens: "127.0.0.1:10043", "[::1]:10043", ..., and
 * " over HTTPS" when --web.config.file turned TLS on.
 */
static void log_listening(const struct sockaddr_storage *ss, bool any, bool v4,
			  bool tls)
{
	unsigned int port = ntohs(((const struct sockaddr_in *)ss)->sin_port);
	const char *over = tls ? " over HTTPS" : "";
	char host[INET6_ADDRSTRLEN] = "";

	if (any) {
		diag_msg("serving /metrics on every %saddress, port %u%s",
			 v4 ? "IPv4 " : "", port, over);
	} else if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr,
			  host, sizeof(host));
		diag_msg("serving /metrics on [%s]:%u%s", host, port, over);
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
			  host, sizeof(host));
		diag_msg("serving /metrics on %s:%u%s", host, port, over);
	}
}

/*
 * Serve until SIGINT or SIGTERM; returns an exit status: 2 only when the
 * address cannot be listened on. The tree need not be readable (health.c).
 */
int serve(const struct tree *t, const struct serve_opts *so)
{
	struct server sv = { .t = *t, .hierarchical = so->hierarchical,
			     .filter = so->filter, .first = true,
			     .wc = so->wc };
	const struct sockaddr_storage *ss = so->addr;
	bool any = so->any, v4 = false;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
	struct MHD_Daemon *daemon;
	sigset_t stop;
	int sig;

	if (any)
		flags |= MHD_USE_DUAL_STACK;
	else if (ss->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* the threads MHD starts inherit the mask: only sigwait takes these */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&sv.lock, NULL);
	health_init(&sv.health);
	errno = 0;
	daemon = start(flags, ss, &sv);
	if (!daemon && any) {
		/* a host without IPv6 (ipv6.disable=1): every IPv4 address */
		struct sockaddr_in v4a = {
			.sin_family = AF_INET,
			.sin_port = ((const struct sockaddr_in *)ss)->sin_port,
			.sin_addr.s_addr = htonl(INADDR_ANY),
		};

		daemon = start(flags & ~MHD_USE_DUAL_STACK,
			       (const struct sockaddr_storage *)&v4a, &sv);
		v4 = true;
	}
	if (!daemon) {
		diag_msg("cannot listen on the address of --listen: %s",
			 strerror(errno ? errno : EADDRINUSE));
		health_destroy(&sv.health);
		pthread_mutex_destroy(&sv.lock);
		return 2;
	}
	log_listening(ss, any, v4, webcfg_flags(sv.wc) & MHD_USE_TLS);
	health_start(&sv.health, &sv.t);
	while (sigwait(&stop, &sig) != 0)
		;
	MHD_stop_daemon(daemon);
	forget_reads(&sv);
	health_destroy(&sv.health);
	pthread_mutex_destroy(&sv.lock);
	return 0;
}
