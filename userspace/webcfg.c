// SPDX-License-Identifier: GPL-2.0
/*
 * webcfg.c - --web.config.file: the Prometheus exporter-toolkit web
 * configuration file (its docs/web-configuration.md), so that energystat
 * --listen takes TLS and basic authentication as every exporter does.
 *
 * Libraries, each made for its job:
 *   libyaml     the YAML parser (Debian libyaml-dev)
 *   libxcrypt   crypt_rn(): bcrypt of a password against its hash
 *               (Debian libcrypt-dev)
 *   GnuTLS      the certificate and key checked at startup, a client
 *               certificate verified, HMAC and a constant-time compare for
 *               the cache below (Debian libgnutls28-dev); libmicrohttpd's
 *               TLS is GnuTLS too
 *
 * Keys, as exporter-toolkit spells them; the file is read once, at startup:
 *   tls_server_config   cert_file/cert, key_file/key, client_ca_file/
 *                       client_ca, client_auth_type (NoClientCert or
 *                       RequireAndVerifyClientCert), min_version and
 *                       max_version (TLS10 to TLS13, default TLS12 to TLS13),
 *                       prefer_server_cipher_suites; relative file names are
 *                       relative to the configuration file's directory
 *   basic_auth_users    user: bcrypt hash ($2y$, $2b$ or $2a$)
 *   http_server_config  http2 (accepted: energystat speaks HTTP/1.1)
 * Any other key, a wrong type, a file that cannot be read, a certificate
 * that does not load with its key, a hash that is not bcrypt: an error
 * naming the file, the line and the key; so are the keys energystat does
 * not implement (cipher_suites, curve_preferences, client_allowed_sans,
 * headers, rate_limit), rather than being silently ignored.
 *
 * A bcrypt check costs tens of milliseconds at cost 10, on every scrape.
 * As exporter-toolkit does, a successful check is cached: per user, an
 * HMAC-SHA256 of the password under a key drawn at startup (never the
 * password), compared in constant time; a wrong password always pays bcrypt.
 */
#include <crypt.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "diag.h"
#include "text.h"
#include "webcfg.h"

#define REALM		"energystat"
#define MAX_FILE	(1024 * 1024)	/* a PEM file larger is not one */
#define DIGEST_LEN	32		/* HMAC-SHA256 */

struct user {
	char *name;
	char *hash;
	bool cached;			/* digest: the last password that passed */
	unsigned char digest[DIGEST_LEN];
};

struct webcfg {
	char *cert, *key, *ca;		/* PEM text; cert NULL: no TLS */
	char priorities[160];		/* GnuTLS priority string */
	bool verify_client;		/* RequireAndVerifyClientCert */
	struct user *users;
	size_t nusers;
	pthread_mutex_t lock;		/* guards users[].cached and .digest */
	unsigned char mac_key[DIGEST_LEN];
	struct MHD_OptionItem opts[5];
};

/* The parse: the file's name and directory, its YAML document. */
struct ctx {
	const char *file;
	char *dir;
	yaml_document_t doc;
	struct webcfg *w;
	/* tls_server_config as written, before it is checked */
	char *cert_file, *key_file, *ca_file, *auth_type, *min_v, *max_v;
	bool prefer_server;
	bool has_tls;
	yaml_node_t *tls, *tls_key;	/* tls_server_config, its key: lines */
};

/*
 * One error line: FILE: line N: KEY: message, escaped for the terminal
 * (keys and values come from the file). Returns false.
 */
static bool fail(const struct ctx *x, const yaml_node_t *n, const char *key,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool fail(const struct ctx *x, const yaml_node_t *n, const char *key,
		 const char *fmt, ...)
{
	char msg[512], line[1024], shown[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n)
		snprintf(line, sizeof(line), "%s: line %lu: %s: %s", x->file,
			 (unsigned long)n->start_mark.line + 1, key, msg);
	else
		snprintf(line, sizeof(line), "%s: %s: %s", x->file, key, msg);
	esc_term(shown, sizeof(shown), line);
	diag_msg("--web.config.file %s", shown);
	return false;
}

static yaml_node_t *node(struct ctx *x, int id)
{
	return yaml_document_get_node(&x->doc, id);
}

/* YAML's null: an empty plain scalar, ~ or null */
static bool is_null(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;

	return n->type == YAML_SCALAR_NODE &&
	       n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*v || !strcmp(v, "~") || !strcmp(v, "null") ||
		!strcmp(v, "Null") || !strcmp(v, "NULL"));
}

/* A string value into *out (NULL for null); false on a wrong type. */
static bool get_str(struct ctx *x, yaml_node_t *n, const char *key, char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return fail(x, n, key, "expected a string");
	free(*out);
	*out = is_null(n) ? NULL : strdup((const char *)n->data.scalar.value);
	return *out || is_null(n) || fail(x, n, key, "out of memory");
}

static bool get_bool(struct ctx *x, yaml_node_t *n, const char *key, bool *out)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return fail(x, n, key, "expected true or false");
	v = (const char *)n->data.scalar.value;
	if (strcmp(v, "true") && strcmp(v, "false"))
		return fail(x, n, key, "expected true or false");
	*out = !strcmp(v, "true");
	return true;
}

/*
 * Each key of the mapping n (null: none) through fn; duplicate keys and
 * keys that are not strings are errors, as in exporter-toolkit's strict
 * parse.
 */
static bool each_key(struct ctx *x, yaml_node_t *n, const char *where,
		     bool (*fn)(struct ctx *, const char *, yaml_node_t *,
				yaml_node_t *))
{
	yaml_node_pair_t *p, *q;

	if (is_null(n))
		return true;
	if (n->type != YAML_MAPPING_NODE)
		return fail(x, n, where, "expected a mapping of keys");
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(x, p->key), *v = node(x, p->value);
		const char *name;

		if (k->type != YAML_SCALAR_NODE)
			return fail(x, k, where, "a key must be a string");
		name = (const char *)k->data.scalar.value;
		for (q = n->data.mapping.pairs.start; q < p; q++) {
			yaml_node_t *o = node(x, q->key);

			if (o->type == YAML_SCALAR_NODE &&
			    !strcmp((const char *)o->data.scalar.value, name)) {
				char path[128];

				snprintf(path, sizeof(path), "%s.%.64s", where, name);
				return fail(x, k, x->doc.nodes.start == n ? name : path,
					    "given twice");
			}
		}
		if (!fn(x, name, k, v))
			return false;
	}
	return true;
}

static bool tls_key(struct ctx *x, const char *name, yaml_node_t *k,
		    yaml_node_t *v)
{
	static const char *const unsupported[] = {
		"cipher_suites", "curve_preferences", "client_allowed_sans",
	};
	char path[64];

	snprintf(path, sizeof(path), "tls_server_config.%s", name);
	x->has_tls = true;
	if (!strcmp(name, "cert_file"))
		return get_str(x, v, path, &x->cert_file);
	if (!strcmp(name, "key_file"))
		return get_str(x, v, path, &x->key_file);
	if (!strcmp(name, "client_ca_file"))
		return get_str(x, v, path, &x->ca_file);
	if (!strcmp(name, "cert"))
		return get_str(x, v, path, &x->w->cert);
	if (!strcmp(name, "key"))
		return get_str(x, v, path, &x->w->key);
	if (!strcmp(name, "client_ca"))
		return get_str(x, v, path, &x->w->ca);
	if (!strcmp(name, "client_auth_type"))
		return get_str(x, v, path, &x->auth_type);
	if (!strcmp(name, "min_version"))
		return get_str(x, v, path, &x->min_v);
	if (!strcmp(name, "max_version"))
		return get_str(x, v, path, &x->max_v);
	if (!strcmp(name, "prefer_server_cipher_suites"))
		return get_bool(x, v, path, &x->prefer_server);
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(*unsupported); i++)
		if (!strcmp(name, unsupported[i]))
			return fail(x, k, path, "not supported by energystat "
				    "(GnuTLS's defaults are used)");
	return fail(x, k, path, "unknown key (known: cert_file, key_file, cert, "
		    "key, client_ca_file, client_ca, client_auth_type, "
		    "min_version, max_version, prefer_server_cipher_suites)");
}

static bool http_key(struct ctx *x, const char *name, yaml_node_t *k,
		     yaml_node_t *v)
{
	bool http2;

	if (!strcmp(name, "http2"))
		return get_bool(x, v, "http_server_config.http2", &http2);
	if (!strcmp(name, "headers"))
		return fail(x, k, "http_server_config.headers",
			    "not supported by energystat");
	return fail(x, k, "http_server_config", "unknown key '%s' (known: "
		    "http2)", name);
}

/*
 * A bcrypt hash as crypt(3) writes it: $2y$, $2b$ or $2a$, a two-digit
 * cost from 04 to 31, $, 22 characters of salt and 31 of hash in bcrypt's
 * base64; and one that libxcrypt takes (crypt_checksalt).
 */
static bool is_bcrypt(const char *h)
{
	static const char b64[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "abcdefghijklmnopqrstuvwxyz0123456789";
	int cost;

	if (strlen(h) != 60 || strncmp(h, "$2", 2) || !strchr("aby", h[2]) ||
	    h[3] != '$' || h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9' ||
	    h[6] != '$' || strspn(h + 7, b64) != 53)
		return false;
	cost = (h[4] - '0') * 10 + (h[5] - '0');
	if (cost < 4 || cost > 31)
		return false;
	return crypt_checksalt(h) == CRYPT_SALT_OK ||
	       crypt_checksalt(h) == CRYPT_SALT_METHOD_LEGACY;
}

static bool user_key(struct ctx *x, const char *name, yaml_node_t *k,
		     yaml_node_t *v)
{
	struct webcfg *w = x->w;
	char path[96];
	struct user *u;

	snprintf(path, sizeof(path), "basic_auth_users.%.60s", name);
	if (!*name || strchr(name, ':'))
		return fail(x, k, path, "a user name must be non-empty and "
			    "without ':' (basic authentication's separator)");
	if (v->type != YAML_SCALAR_NODE || is_null(v) ||
	    !is_bcrypt((const char *)v->data.scalar.value))
		return fail(x, v, path, "not a bcrypt hash ($2y$, $2b$ or $2a$, "
			    "cost 04 to 31, 60 characters; htpasswd -nBC 10 \"\" "
			    "prints one after a ':')");
	u = realloc(w->users, (w->nusers + 1) * sizeof(*u));
	if (!u)
		return fail(x, NULL, path, "out of memory");
	w->users = u;
	u = &w->users[w->nusers++];
	memset(u, 0, sizeof(*u));
	u->name = strdup(name);
	u->hash = strdup((const char *)v->data.scalar.value);
	return (u->name && u->hash) || fail(x, NULL, path, "out of memory");
}

static bool top_key(struct ctx *x, const char *name, yaml_node_t *k,
		    yaml_node_t *v)
{
	if (!strcmp(name, "tls_server_config")) {
		x->tls = v;
		x->tls_key = k;
		return each_key(x, v, name, tls_key);
	}
	if (!strcmp(name, "http_server_config"))
		return each_key(x, v, name, http_key);
	if (!strcmp(name, "basic_auth_users"))
		return each_key(x, v, name, user_key);
	if (!strcmp(name, "rate_limit"))
		return fail(x, k, name, "not supported by energystat");
	return fail(x, k, name, "unknown key (known: tls_server_config, "
		    "basic_auth_users, http_server_config)");
}

/* The value of tls_server_config's key (that of tls_server_config when absent) */
static yaml_node_t *tls_at(struct ctx *x, const char *key)
{
	yaml_node_pair_t *p;

	for (p = x->tls->data.mapping.pairs.start; p < x->tls->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(x, p->key);

		if (k->type == YAML_SCALAR_NODE &&
		    !strcmp((const char *)k->data.scalar.value, key))
			return node(x, p->value);
	}
	return x->tls_key;
}

/* A file named in the configuration, relative to its directory, as text. */
static bool read_pem(struct ctx *x, const char *key, const char *name,
		     char **out)
{
	yaml_node_t *at = tls_at(x, strchr(key, '.') + 1);
	char *path = NULL, *shrunk;
	FILE *f;
	size_t n;

	if (name[0] == '/' ? !(path = strdup(name)) :
	    asprintf(&path, "%s/%s", x->dir, name) < 0)
		return fail(x, at, key, "out of memory");
	f = fopen(path, "r");
	*out = f ? calloc(1, MAX_FILE + 1) : NULL;
	n = *out ? fread(*out, 1, MAX_FILE + 1, f) : 0;
	if (!f || !*out || ferror(f) || n == 0 || n > MAX_FILE) {
		fail(x, at, key, "cannot read %s: %s", path,
		     !f ? strerror(errno) : n > MAX_FILE ? "larger than 1 MiB" :
		     n == 0 ? "empty" : strerror(errno));
		if (f)
			fclose(f);
		free(path);
		return false;
	}
	fclose(f);
	free(path);
	shrunk = realloc(*out, n + 1);	/* the text, not MAX_FILE */
	if (shrunk)
		*out = shrunk;
	return true;
}

/* "TLS10".."TLS13" into GnuTLS's version names; NULL: unknown */
static const char *tls_version(const char *v)
{
	static const char *const names[][2] = {
		{ "TLS10", "VERS-TLS1.0" }, { "TLS11", "VERS-TLS1.1" },
		{ "TLS12", "VERS-TLS1.2" }, { "TLS13", "VERS-TLS1.3" },
	};

	for (size_t i = 0; i < 4; i++)
		if (!strcmp(v, names[i][0]))
			return names[i][1];
	return NULL;
}

/* min_version..max_version into the GnuTLS priority string */
static bool tls_priorities(struct ctx *x)
{
	const char *min = x->min_v ? x->min_v : "TLS12";
	const char *max = x->max_v ? x->max_v : "TLS13";
	char *p = x->w->priorities;

	if (!tls_version(min))
		return fail(x, tls_at(x, "min_version"),
			    "tls_server_config.min_version", "'%s' is not TLS10, TLS11, TLS12 or TLS13", min);
	if (!tls_version(max))
		return fail(x, tls_at(x, "max_version"),
			    "tls_server_config.max_version", "'%s' is not TLS10, TLS11, TLS12 or TLS13", max);
	if (strcmp(min, max) > 0)
		return fail(x, tls_at(x, "min_version"),
			    "tls_server_config.min_version",
			    "%s is above max_version %s", min, max);
	strcpy(p, "NORMAL:-VERS-ALL");
	for (char v[] = "TLS10"; v[4] <= '3'; v[4]++)
		if (strcmp(v, min) >= 0 && strcmp(v, max) <= 0)
			sprintf(p + strlen(p), ":+%s", tls_version(v));
	if (x->prefer_server)
		strcat(p, ":%SERVER_PRECEDENCE");
	return true;
}

/* GnuTLS takes the versions, the certificate loads with its key, the CAs. */
static bool tls_check(struct ctx *x)
{
	struct webcfg *w = x->w;
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t cert = { (unsigned char *)w->cert, (unsigned)strlen(w->cert) };
	gnutls_datum_t key = { (unsigned char *)w->key, (unsigned)strlen(w->key) };
	gnutls_priority_t prio;
	const char *err;
	int rc;

	rc = gnutls_priority_init(&prio, w->priorities, &err);
	if (rc < 0)
		return fail(x, tls_at(x, "min_version"), "tls_server_config",
			    "GnuTLS refuses the versions as \"%s\": %s",
			    w->priorities, gnutls_strerror(rc));
	gnutls_priority_deinit(prio);
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return fail(x, NULL, "tls_server_config", "out of memory");
	rc = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key,
						  GNUTLS_X509_FMT_PEM, NULL, 0);
	if (rc < 0) {
		gnutls_certificate_free_credentials(cred);
		return fail(x, tls_at(x, x->cert_file ? "cert_file" : "cert"),
			    x->cert_file ? "tls_server_config.cert_file" :
			    "tls_server_config.cert", "the certificate does not "
			    "load with its key (key_file): %s", gnutls_strerror(rc));
	}
	if (w->ca) {
		gnutls_datum_t ca = { (unsigned char *)w->ca, (unsigned)strlen(w->ca) };

		rc = gnutls_certificate_set_x509_trust_mem(cred, &ca,
							   GNUTLS_X509_FMT_PEM);
		if (rc <= 0) {
			gnutls_certificate_free_credentials(cred);
			return fail(x, tls_at(x, x->ca_file ? "client_ca_file" :
					      "client_ca"),
				    x->ca_file ? "tls_server_config.client_ca_file" :
				    "tls_server_config.client_ca",
				    "no CA certificate in it%s%s", rc < 0 ? ": " : "",
				    rc < 0 ? gnutls_strerror(rc) : "");
		}
	}
	gnutls_certificate_free_credentials(cred);
	return true;
}

/* Both of "name" and "name_file" given, or neither when one is needed. */
static bool one_of(struct ctx *x, const char *text, const char *file,
		   const char *name, bool needed)
{
	if (text && file)
		return fail(x, x->tls_key, "tls_server_config", "%s and %s_file "
			    "exclude each other", name, name);
	if (needed && !text && !file)
		return fail(x, x->tls_key, "tls_server_config", "%s_file (or %s) is "
			    "required", name, name);
	return true;
}

/* tls_server_config as written into the server's TLS settings */
static bool tls_setup(struct ctx *x)
{
	struct webcfg *w = x->w;
	const char *auth = x->auth_type ? x->auth_type : "NoClientCert";

	if (!x->has_tls)
		return true;
	if (!one_of(x, w->cert, x->cert_file, "cert", true) ||
	    !one_of(x, w->key, x->key_file, "key", true) ||
	    !one_of(x, w->ca, x->ca_file, "client_ca", false))
		return false;
	if (!strcmp(auth, "RequireAndVerifyClientCert"))
		w->verify_client = true;
	else if (strcmp(auth, "NoClientCert"))
		return fail(x, tls_at(x, "client_auth_type"),
			    "tls_server_config.client_auth_type", "'%s' is not supported by energystat (NoClientCert or "
			    "RequireAndVerifyClientCert)", auth);
	if (w->verify_client != (w->ca || x->ca_file))
		return fail(x, x->tls_key, "tls_server_config", w->verify_client ?
			    "client_auth_type RequireAndVerifyClientCert needs "
			    "client_ca_file" : "client_ca_file needs "
			    "client_auth_type RequireAndVerifyClientCert");
	if ((x->cert_file && !read_pem(x, "tls_server_config.cert_file",
				       x->cert_file, &w->cert)) ||
	    (x->key_file && !read_pem(x, "tls_server_config.key_file",
				      x->key_file, &w->key)) ||
	    (x->ca_file && !read_pem(x, "tls_server_config.client_ca_file",
				     x->ca_file, &w->ca)))
		return false;
	if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
		return fail(x, x->tls_key, "tls_server_config", "this libmicrohttpd "
			    "is built without TLS");
	return tls_priorities(x) && tls_check(x);
}

/* The YAML document of the file into x->doc; false on a syntax error. */
static bool parse_yaml(struct ctx *x)
{
	yaml_parser_t p;
	FILE *f = fopen(x->file, "r");
	bool ok;

	if (!f) {
		diag_msg("--web.config.file %s: %s", x->file, strerror(errno));
		return false;
	}
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, f);
	ok = yaml_parser_load(&p, &x->doc);
	if (!ok)
		diag_msg("--web.config.file %s: line %lu: not YAML: %s", x->file,
			 (unsigned long)p.problem_mark.line + 1,
			 p.problem ? p.problem : "syntax error");
	yaml_parser_delete(&p);
	fclose(f);
	return ok;
}

static void ctx_free(struct ctx *x)
{
	free(x->dir);
	free(x->cert_file);
	free(x->key_file);
	free(x->ca_file);
	free(x->auth_type);
	free(x->min_v);
	free(x->max_v);
}

/* The options for MHD_start_daemon: TLS's when configured. */
static void set_options(struct webcfg *w)
{
	struct MHD_OptionItem *o = w->opts;

	if (w->cert) {
		*o++ = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, w->cert };
		*o++ = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, w->key };
		*o++ = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
						w->priorities };
	}
	if (w->ca)
		*o++ = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, w->ca };
	*o = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
}

struct webcfg *webcfg_load(const char *file)
{
	struct ctx x = { .file = file };
	char *copy = strdup(file);
	yaml_node_t *root;
	bool ok;

	x.w = calloc(1, sizeof(*x.w));
	x.dir = copy ? strdup(dirname(copy)) : NULL;
	free(copy);
	if (!x.w || !x.dir) {
		diag_msg("out of memory");
		free(x.w);
		free(x.dir);
		return NULL;
	}
	pthread_mutex_init(&x.w->lock, NULL);
	ok = parse_yaml(&x);
	if (ok) {
		root = yaml_document_get_root_node(&x.doc);
		/* an empty file: neither TLS nor authentication, as in exporter-toolkit */
		ok = !root || each_key(&x, root, "the top level", top_key);
		ok = ok && tls_setup(&x);
		yaml_document_delete(&x.doc);
	}
	ok = ok && gnutls_rnd(GNUTLS_RND_KEY, x.w->mac_key, sizeof(x.w->mac_key)) == 0;
	ctx_free(&x);
	if (!ok) {
		webcfg_free(x.w);
		return NULL;
	}
	set_options(x.w);
	return x.w;
}

void webcfg_free(struct webcfg *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nusers; i++) {
		free(w->users[i].name);
		free(w->users[i].hash);
	}
	free(w->users);
	if (w->key)
		gnutls_memset(w->key, 0, strlen(w->key));
	free(w->cert);
	free(w->key);
	free(w->ca);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

unsigned int webcfg_flags(const struct webcfg *w)
{
	return w && w->cert ? MHD_USE_TLS : 0;
}

struct MHD_OptionItem *webcfg_options(struct webcfg *w)
{
	static struct MHD_OptionItem none[] = { { MHD_OPTION_END, 0, NULL } };

	return w ? w->opts : none;
}

/* bcrypt of pass against hash, the results compared in constant time */
static bool bcrypt_ok(const char *pass, const char *hash)
{
	struct crypt_data *cd = calloc(1, sizeof(*cd));
	const char *out;
	bool ok;

	if (!cd)
		return false;
	out = crypt_rn(pass, hash, cd, sizeof(*cd));
	ok = out && strlen(out) == strlen(hash) &&
	     gnutls_memcmp(out, hash, strlen(hash)) == 0;
	gnutls_memset(cd, 0, sizeof(*cd));
	free(cd);
	return ok;
}

/* The hash of the highest bcrypt cost ("$2y$NN$"): what an unknown user pays. */
static const char *costliest(const struct webcfg *w)
{
	const char *h = w->users[0].hash;

	for (size_t i = 1; i < w->nusers; i++)
		if (strncmp(w->users[i].hash + 4, h + 4, 2) > 0)
			h = w->users[i].hash;
	return h;
}

/*
 * user and pass against basic_auth_users: the cached digest of the last
 * password that passed, else bcrypt. An unknown user pays bcrypt too, at
 * the highest cost of the file's hashes, so that timing does not tell
 * which users exist.
 */
static bool password_ok(struct webcfg *w, const char *user, const char *pass)
{
	unsigned char digest[DIGEST_LEN];
	struct user *u = NULL;
	bool ok;

	for (size_t i = 0; i < w->nusers && !u; i++)
		if (!strcmp(w->users[i].name, user))
			u = &w->users[i];
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, w->mac_key, sizeof(w->mac_key),
			     pass, strlen(pass), digest) < 0)
		return false;
	if (u) {
		pthread_mutex_lock(&w->lock);
		ok = u->cached && gnutls_memcmp(u->digest, digest, DIGEST_LEN) == 0;
		pthread_mutex_unlock(&w->lock);
		if (ok)
			return true;
	}
	ok = bcrypt_ok(pass, u ? u->hash : costliest(w)) && u;
	if (ok) {
		pthread_mutex_lock(&w->lock);
		memcpy(u->digest, digest, DIGEST_LEN);
		u->cached = true;
		pthread_mutex_unlock(&w->lock);
	}
	return ok;
}

/* RequireAndVerifyClientCert: a client certificate that the CAs sign */
static bool client_cert_ok(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	unsigned int status = 0, n = 0;

	if (!ci || !ci->tls_session ||
	    !gnutls_certificate_get_peers(ci->tls_session, &n) || n == 0)
		return false;
	return gnutls_certificate_verify_peers2(ci->tls_session, &status) == 0 &&
	       status == 0;
}

/* The request's basic authentication checked; false when it fails. */
static bool basic_auth_ok(struct webcfg *w, struct MHD_Connection *c)
{
	bool ok = false;
#if MHD_VERSION >= 0x00097704
	struct MHD_BasicAuthInfo *a = MHD_basic_auth_get_username_password3(c);

	if (a && a->password && strlen(a->username) == a->username_len &&
	    strlen(a->password) == a->password_len)
		ok = password_ok(w, a->username, a->password);
	if (a && a->password)
		gnutls_memset(a->password, 0, a->password_len);
	MHD_free(a);
#else
	char *pass = NULL;
	char *user = MHD_basic_auth_get_username_password(c, &pass);

	if (user && pass)
		ok = password_ok(w, user, pass);
	if (pass)
		gnutls_memset(pass, 0, strlen(pass));
	MHD_free(user);
	MHD_free(pass);
#endif
	return ok;
}

static enum MHD_Result refuse(struct MHD_Connection *c, bool auth)
{
	static const char forbidden[] = "energystat: a client certificate signed "
					"by client_ca_file is required\n";
	static const char unauth[] = "energystat: authentication required\n";
	const char *msg = auth ? unauth : forbidden;
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(msg), (void *)msg,
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
#if MHD_VERSION >= 0x00097704
	ret = auth ? MHD_queue_basic_auth_required_response3(c, REALM, MHD_NO, r) :
		     MHD_queue_response(c, MHD_HTTP_FORBIDDEN, r);
#else
	ret = auth ? MHD_queue_basic_auth_fail_response(c, REALM, r) :
		     MHD_queue_response(c, MHD_HTTP_FORBIDDEN, r);
#endif
	MHD_destroy_response(r);
	return ret;
}

bool webcfg_refuse(struct webcfg *w, struct MHD_Connection *c,
		   enum MHD_Result *ret)
{
	if (!w)
		return false;
	if (w->verify_client && !client_cert_ok(c)) {
		*ret = refuse(c, false);
		return true;
	}
	if (w->nusers && !basic_auth_ok(w, c)) {
		*ret = refuse(c, true);
		return true;
	}
	return false;
}
