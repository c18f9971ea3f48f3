// SPDX-License-Identifier: GPL-2.0
/*
 * energystat - show the energy, CPU time, wakeups and energy impact of
 * cgroups from the cgroup_energy filesystem (/sys/fs/cgroup_energy).
 *
 * energystat.c: command line, the static mode (one sample) and the live mode
 * (rates between successive samples; on a terminal, interactive as
 * systemd-cgtop). See energystat.1.
 *
 * The units below it, each with its own header, top down:
 *   serve.c     --listen: /metrics over HTTP
 *   webcfg.c    --web.config.file: its TLS and basic authentication
 *   health.c    the exporter's module state and own metrics
 *   gzip.c      gzip of its answers (zlib)
 *   filter.c    --include, --exclude: regexes on the cgroup path
 *   term.c      the interactive live view's terminal: raw mode, keys
 *   output.c, prom.c  table and JSON; Prometheus text (view.h)
 *   units.c     J, kJ, Wh, kWh and W for the table
 *   tree.c      resolve PATH arguments, read a tree into a sample
 *   treefile.c  parse energy.tree: every cgroup from one module sample
 *   series.c    each cgroup's own share of its counters
 *   names.c     pod, namespace and container names from the runtimes' bundles
 *   workload.c  pods, containers and units from cgroup paths
 *   stat.c      parse energy.stat and energy.info, read small files
 *   text.c, width.c  UTF-8, escaping, decimals; code point widths
 *   diag.c      error messages
 *   sample.h    the data of one reading, at the bottom
 *
 * Exit status: 0 all shown; 1 some cgroups could not be read; 2 nothing
 * could be shown (usage error, module not loaded, not mounted, permission
 * denied, unknown cgroup).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "stat.h"
#include "tree.h"
#include "text.h"
#include "filter.h"
#include "view.h"
#include "webcfg.h"
#include "serve.h"
#include "names.h"
#include "term.h"

#define EXIT_PARTIAL	1
#define EXIT_NOTHING	2
#define DIAG_LIMIT	20
#define CGTOP_DEPTH	3	/* systemd-cgtop's default --depth */

enum format { FMT_TABLE, FMT_JSON, FMT_PROM };

struct opts {
	const char *root;
	const char *runtime_root;	/* --runtime-root: runtimes' state under it */
	int depth;		/* -1: unlimited */
	bool live;
	double delay;		/* seconds between updates */
	bool delay_set;		/* -d given */
	unsigned long count;	/* 0: until interrupted */
	enum sort_key sort;
	enum format fmt;
	bool hierarchical;
	const char *listen;	/* --listen [ADDR:]PORT, NULL: none */
	const char *output;	/* --output FILE, NULL: standard output */
	const char *web_config;	/* --web.config.file FILE, NULL: none */
	struct sockaddr_storage addr;	/* its address */
	bool any_addr;		/* no ADDR: every address */
	struct filter filter;	/* --include, --exclude */
	bool batch;
	bool raw;		/* --raw: exact numbers, no human units */
	char **args;
	int nargs;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... [PATH]...\n"
"Show the energy, CPU time, wakeups and energy impact of cgroups, read from\n"
"the cgroup_energy filesystem. PATH is a cgroup (\"/system.slice\", or\n"
"\"system.slice\") or its directory under %s or %s;\n"
"each PATH is shown with its descendants. Default: the whole tree.\n"
"\n"
"  -d, --delay SEC     live mode: an update every SEC seconds (e.g. 0.5)\n"
"  -n, --iterations N   live mode: stop after N updates (default delay 1 s)\n"
"  -1                   live mode: one update (-n 1)\n"
"  -b, --batch          live mode: do not clear the screen, print every row,\n"
"                       no keys\n"
"      --depth N        show N levels below each PATH (0: PATH only); default\n"
"                       3 in the table, no limit with --json or --prometheus\n"
"  -s, --sort KEY       energy (default; power in live mode), cpu, wakeups,\n"
"                       impact or path; -p: path, -c: cpu\n"
"      --raw            the table and live view: exact joules and watts, not\n"
"                       J, kJ, Wh, kWh and W chosen per value\n"
"      --json           one JSON document per sample (see energystat(1))\n"
"      --prometheus     Prometheus text format, for node_exporter's textfile\n"
"                       collector (not with -d, -n or -1)\n"
"  -o, --output FILE    --prometheus: replace FILE atomically (a temporary\n"
"                       file in its directory, renamed), not standard output\n"
"      --listen [ADDR:]PORT  serve /metrics (Prometheus) over HTTP on PORT\n"
"                       (10043 is energystat's); ADDR: an IPv4 address or\n"
"                       [IPv6]; default every address. Starts and serves\n"
"                       whatever the module's state (cgroup_energy_up)\n"
"      --include REGEX  --prometheus, --listen: only the cgroups whose whole\n"
"                       path matches REGEX (POSIX extended); repeatable, any\n"
"      --exclude REGEX  the same: not those; repeatable, wins over --include\n"
"      --web.config.file FILE  --listen: TLS and basic authentication from\n"
"                       FILE, Prometheus exporter-toolkit's web configuration\n"
"      --hierarchical   Prometheus: each cgroup's counters with its descendants\n"
"                       (cgroup_energy_subtree_*); default: its own share, so\n"
"                       that sum() over cgroups is the root's energy\n"
"  -r, --root DIR       read the tree at DIR (default %s)\n"
"      --runtime-root DIR  read pod and container names from the container\n"
"                       runtimes' state under DIR (DIR/run/containerd/...,\n"
"                       DIR/run/containers/storage/...); default /\n"
"  -h, --help           show this help\n"
"  -V, --version        show the version\n"
"\n"
"Table: ENERGY, CPU(s) CPU seconds, WAKEUPS count, IMPACT(s) energy impact in\n"
"CPU-second equivalents, all since the module loaded; a machine line: total =\n"
"tasks + idle + irq + softirq + steal. Live mode: POWER, CPU%% (100 = one CPU),\n"
"WAKEUPS/s, IMPACT (100 = one busy CPU). A ~ after ENERGY or POWER: modelled\n"
"joules (estimates, source model). The table fits the terminal (or $COLUMNS,\n"
"else 80 columns): long paths are cut in the middle; live mode shows the rows\n"
"that fit the screen. On a terminal, live mode starts at once with the\n"
"module's 10 s average power and takes keys: q quit, p c e w i sort by path,\n"
"cpu, power, wakeups, impact, + - depth, space pause, h help.\n"
"Exit status: 0 ok, 1 some cgroups could not be read, 2 nothing could be shown.\n",
		PROG, CGE_CGROUP_ROOT, CGE_MOUNT_POINT, CGE_MOUNT_POINT);
}

/* msg may hold one %s, replaced by arg (escaped); arg NULL: msg as is. */
static int usage_error(const char *msg, const char *arg)
{
	char shown[256];

	fprintf(stderr, "%s: ", PROG);
	if (arg) {
		esc_term(shown, sizeof(shown), arg);
		fprintf(stderr, msg, shown);
	} else {
		fputs(msg, stderr);
	}
	fprintf(stderr, " (see %s --help)\n", PROG);
	return EXIT_NOTHING;
}

static bool parse_ulong(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

static const struct {
	const char *name;
	enum sort_key key;
} sorts[] = {
	{ "energy", SORT_ENERGY }, { "power", SORT_ENERGY },
	{ "cpu", SORT_CPU }, { "wakeups", SORT_WAKEUPS },
	{ "impact", SORT_IMPACT }, { "path", SORT_PATH },
};

/* --include (exclude false) or --exclude REGEX; -1 after a usage error. */
static int add_filter(struct opts *o, bool exclude, const char *re)
{
	char err[128], msg[256];

	if (filter_add(&o->filter, exclude, re, err, sizeof(err)) == 0)
		return 0;
	/* the regex escaped by usage_error(); err is regerror()'s, plain */
	snprintf(msg, sizeof(msg), "invalid --%s '%%s': not a POSIX extended "
		 "regular expression (%s)", exclude ? "exclude" : "include", err);
	usage_error(msg, re);
	return -1;
}

/* Returns -1 to go on, else an exit status. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	enum { OPT_JSON = 256, OPT_PROM, OPT_HIER, OPT_LISTEN, OPT_DEPTH,
	       OPT_RUNTIME_ROOT, OPT_INCLUDE, OPT_EXCLUDE, OPT_RAW, OPT_WEBCFG };
	static const struct option longopts[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "depth", required_argument, NULL, OPT_DEPTH },
		{ "iterations", required_argument, NULL, 'n' },
		{ "count", required_argument, NULL, 'n' },	/* its older name */
		{ "interval", required_argument, NULL, 'i' },	/* gone: an error */
		{ "batch", no_argument, NULL, 'b' },
		{ "raw", no_argument, NULL, OPT_RAW },
		{ "sort", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "prometheus", no_argument, NULL, OPT_PROM },
		{ "hierarchical", no_argument, NULL, OPT_HIER },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "include", required_argument, NULL, OPT_INCLUDE },
		{ "exclude", required_argument, NULL, OPT_EXCLUDE },
		{ "web.config.file", required_argument, NULL, OPT_WEBCFG },
		{ "output", required_argument, NULL, 'o' },
		{ "root", required_argument, NULL, 'r' },
		{ "runtime-root", required_argument, NULL, OPT_RUNTIME_ROOT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->root = CGE_MOUNT_POINT;
	o->runtime_root = "/";
	o->depth = -1;
	o->delay = 1.0;
	o->sort = SORT_ENERGY;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:n:1bs:pci:o:r:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			errno = 0;
			o->delay = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(o->delay) ||
			    o->delay < 0.01 || o->delay > 86400)
				return usage_error("invalid delay '%s': expected "
						   "seconds between updates, from 0.01 "
						   "to 86400 (-d is the delay, as in "
						   "systemd-cgtop; levels are --depth)",
						   optarg);
			o->delay_set = true;
			o->live = true;
			break;
		case 'i':
			return usage_error("-i/--interval is gone: the delay between "
					   "updates is -d/--delay SEC, as in "
					   "systemd-cgtop", NULL);
		case OPT_DEPTH:
			if (!parse_ulong(optarg, INT_MAX, &v))
				return usage_error("invalid depth '%s': expected a "
						   "number of levels, 0 or more", optarg);
			o->depth = (int)v;
			break;
		case 'n':
			if (!parse_ulong(optarg, ULONG_MAX, &v) || v == 0)
				return usage_error("invalid iterations '%s': expected "
						   "a number of updates, 1 or more", optarg);
			o->count = v;
			o->live = true;
			break;
		case '1':
			o->count = 1;
			o->live = true;
			break;
		case 'b':
			o->batch = true;
			break;
		case OPT_RAW:
			o->raw = true;
			break;
		case 'p':
			o->sort = SORT_PATH;
			break;
		case 'c':
			o->sort = SORT_CPU;
			break;
		case 's': {
			size_t k;

			for (k = 0; k < ARRAY_SIZE(sorts); k++)
				if (strcmp(optarg, sorts[k].name) == 0)
					break;
			if (k == ARRAY_SIZE(sorts))
				return usage_error("invalid sort key '%s': expected "
						   "energy, power, cpu, wakeups, impact "
						   "or path", optarg);
			o->sort = sorts[k].key;
			break;
		}
		case OPT_JSON:
		case OPT_PROM: {
			enum format f = c == OPT_JSON ? FMT_JSON : FMT_PROM;

			if (o->fmt != FMT_TABLE && o->fmt != f)
				return usage_error("--json and --prometheus exclude "
						   "each other", NULL);
			o->fmt = f;
			break;
		}
		case OPT_HIER:
			o->hierarchical = true;
			break;
		case OPT_LISTEN: {
			const char *err = listen_parse(optarg, &o->addr, &o->any_addr);

			if (err) {
				char msg[160];

				snprintf(msg, sizeof(msg), "invalid --listen '%%s': "
					 "expected [ADDR:]PORT; %s", err);
				return usage_error(msg, optarg);
			}
			o->listen = optarg;
			break;
		}
		case OPT_INCLUDE:
		case OPT_EXCLUDE:
			if (add_filter(o, c == OPT_EXCLUDE, optarg) < 0)
				return EXIT_NOTHING;
			break;
		case OPT_WEBCFG:
			if (!*optarg)
				return usage_error("empty --web.config.file", NULL);
			o->web_config = optarg;
			break;
		case 'o':
			if (!*optarg)
				return usage_error("empty --output", NULL);
			o->output = optarg;
			break;
		case 'r':
			if (!*optarg)
				return usage_error("empty --root", NULL);
			o->root = optarg;
			break;
		case OPT_RUNTIME_ROOT: {
			struct stat sb;

			if (!*optarg)
				return usage_error("empty --runtime-root", NULL);
			if (stat(optarg, &sb) != 0 || !S_ISDIR(sb.st_mode))
				return usage_error("invalid --runtime-root '%s': not "
						   "a directory", optarg);
			o->runtime_root = optarg;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("%s %s\n", PROG, CGE_VERSION);
			return 0;
		case ':':
			return usage_error("option '%s' needs an argument",
					   argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (o->listen && (o->live || o->fmt == FMT_JSON))
		return usage_error("--listen serves Prometheus metrics and cannot "
				   "be used with --json, -d, -n or -1", NULL);
	if (o->web_config && !o->listen)
		return usage_error("--web.config.file configures --listen's TLS and "
				   "authentication and needs --listen", NULL);
	if (o->live && o->fmt == FMT_PROM)
		return usage_error("--prometheus prints counters and cannot be "
				   "used with -d, -n or -1: Prometheus computes the "
				   "rates", NULL);
	if (filter_set(&o->filter) && o->fmt != FMT_PROM && !o->listen)
		return usage_error("--include and --exclude choose the series of "
				   "--prometheus and --listen, not of the table or "
				   "--json", NULL);
	if (o->output && (o->fmt != FMT_PROM || o->live || o->listen))
		return usage_error("--output writes one --prometheus text, not with "
				   "--json, the table, -d, -n, -1 or --listen", NULL);
	/* a script's old "-d LEVELS" now runs until interrupted: say so */
	if (o->delay_set && !o->count && !isatty(STDOUT_FILENO))
		diag_msg("note: -d is the delay between updates (as in "
			 "systemd-cgtop) and runs until interrupted; levels are "
			 "--depth");
	if (o->depth < 0 && o->fmt == FMT_TABLE && !o->listen)
		o->depth = CGTOP_DEPTH;
	o->args = argv + optind;
	o->nargs = argc - optind;
	return -1;
}

/* The root as given, trailing slashes dropped ("/" becomes ""). */
static char *root_dir(const char *root)
{
	char *r = strdup(root);
	size_t n;

	if (!r)
		return NULL;
	n = strlen(r);
	while (n > 0 && r[n - 1] == '/')
		r[--n] = '\0';
	return r;
}

/* The root as an absolute normalized path, to recognize ROOT/x arguments. */
static char *root_abs(const char *root)
{
	char cwd[PATH_MAX];
	char *joined, *norm;

	if (root[0] == '/')
		return path_normalize(root);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	joined = malloc(strlen(cwd) + strlen(root) + 2);
	if (!joined)
		return NULL;
	sprintf(joined, "%s/%s", cwd, root);
	norm = path_normalize(joined);
	free(joined);
	return norm;
}

static void free_paths(struct tree *t)
{
	for (size_t i = 0; i < t->npaths; i++)
		free(t->paths[i]);
	free(t->paths);
	t->paths = NULL;
	t->npaths = 0;
}

/*
 * Resolve the PATH arguments and, but for --listen, check that the tree can
 * be read and which of them exist; -1 to go on, else an exit status.
 */
static int setup_tree(const struct opts *o, struct tree *t, char *root,
		      struct diag *d)
{
	char *abs = root_abs(o->root);
	size_t n = o->nargs ? (size_t)o->nargs : 1;
	bool *exists;
	size_t kept = 0;
	int rc = -1;

	t->root = root;
	t->default_root = abs && strcmp(abs, CGE_MOUNT_POINT) == 0;
	t->max_depth = o->depth;
	t->paths = calloc(n, sizeof(char *));
	exists = calloc(n, sizeof(bool));
	if (!t->paths || !exists) {
		diag_msg("out of memory");
		rc = EXIT_NOTHING;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		t->paths[i] = o->nargs ? path_resolve(o->args[i], abs) : strdup("/");
		t->npaths++;
		if (!t->paths[i]) {
			rc = usage_error("invalid cgroup path '%s': '..' goes above "
					 "the root", o->args[i]);
			goto out;
		}
	}
	/* --listen starts whatever the tree's state; walks skip absent PATHs */
	if (o->listen)
		goto out;
	if (tree_check(t, exists, d) != TREE_OK) {
		rc = EXIT_NOTHING;
		goto out;
	}
	for (size_t i = 0; i < t->npaths; i++) {
		if (exists[i])
			t->paths[kept++] = t->paths[i];
		else
			free(t->paths[i]);
	}
	t->npaths = kept;
	if (kept == 0)
		rc = EXIT_NOTHING;
out:
	free(exists);
	free(abs);
	return rc;
}

static size_t shown_rows(const struct sample *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += s->nodes[i].ok;
	return n;
}

static void print_view(const struct opts *o, const struct view *v)
{
	switch (o->fmt) {
	case FMT_JSON:
		out_json(stdout, v);
		break;
	case FMT_PROM:
		out_prometheus(stdout, v);
		break;
	default:
		out_table(stdout, v);
		out_machine(stdout, v, v->fit->cols);
	}
	fflush(stdout);
}

/* A positive number from the environment variable name, else 0. */
static size_t env_size(const char *name)
{
	const char *e = getenv(name);
	unsigned long v;

	return e && parse_ulong(e, 100000, &v) ? v : 0;
}

/*
 * The terminal's size as the table fits it: TIOCGWINSZ on standard output,
 * else $COLUMNS and $LINES, else 80 x 24 on a terminal; output to a pipe or
 * a file without $COLUMNS is not cut (a script's grep finds whole paths).
 */
static void term_size(size_t *cols, size_t *rows)
{
	struct winsize ws = { 0 };
	bool tty = isatty(STDOUT_FILENO);

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0)
		memset(&ws, 0, sizeof(ws));
	*cols = ws.ws_col ? ws.ws_col : env_size("COLUMNS");
	*rows = ws.ws_row ? ws.ws_row : env_size("LINES");
	if (!*cols)
		*cols = tty ? 80 : SIZE_MAX;
	if (!*rows)
		*rows = 24;
}

static int run_static(const struct opts *o, const struct tree *t, struct diag *d)
{
	struct sample s;
	struct table_fit fit = { 0 };
	struct view v = { .root = t->root, .sort = o->sort, .raw = o->raw,
			  .hierarchical = o->hierarchical, .fit = &fit,
			  .filter = o->fmt == FMT_PROM ? &o->filter : NULL };
	size_t rows;
	int rc;

	rc = sample_take(t, &s, d);
	if (rc == TREE_TORN)
		diag_msg("every read of the tree straddled one of the module's "
			 "samples: counters read so would look reset to "
			 "Prometheus; nothing shown");
	if (rc != TREE_OK)
		return EXIT_NOTHING;
	term_size(&fit.cols, &rows);
	v.s = &s;
	if (shown_rows(&s) == 0) {
		rc = EXIT_NOTHING;
	} else {
		print_view(o, &v);
		rc = d->errors ? EXIT_PARTIAL : 0;
	}
	sample_free(&s);
	return rc;
}

/* ---- live mode ---------------------------------------------------------- */

/* Any counter of the root lower than before: the module was reloaded. */
static bool counters_restarted(const struct cg_stat *prev, const struct cg_stat *cur)
{
	for (int k = 0; k < NKEYS; k++)
		if (stat_has(prev, k) && stat_has(cur, k) && cur->v[k] < prev->v[k])
			return true;
	return false;
}

static double rate_of(enum key_kind kind, uint64_t delta, double dt_us)
{
	switch (kind) {
	case KIND_UJ:
		return (double)delta / dt_us;		/* uJ/us = W */
	case KIND_COUNT:
		return (double)delta / dt_us * 1e6;	/* per second */
	default:
		return (double)delta / dt_us * 100.0;	/* 100 = one CPU */
	}
}

/*
 * Rates of every cgroup of cur against prev. A cgroup absent from prev, or
 * whose counters went down (removed and created again), was created after
 * prev was taken: its counters started at 0, so its whole value is the delta.
 * A key absent from prev, or a cgroup unreadable in prev, has no rate (NaN).
 */
static void compute_rates(const struct sample *prev, const struct sample *cur,
			  double dt_us, struct rates *rates)
{
	for (size_t i = 0; i < cur->n; i++) {
		const struct cg_node *c = &cur->nodes[i];
		const struct cg_node *p = sample_find(prev, c->path);
		struct rates *r = &rates[i];
		bool fresh;

		r->valid = c->ok && (!p || p->ok);
		if (!r->valid)
			continue;
		fresh = !p || counters_restarted(&p->st, &c->st);
		for (int k = 0; k < NKEYS; k++) {
			if (!stat_has(&c->st, k) || (!fresh && !stat_has(&p->st, k))) {
				r->r[k] = NAN;
				continue;
			}
			uint64_t base = fresh ? 0 : p->st.v[k];

			r->r[k] = rate_of(key_table[k].kind, c->st.v[k] - base, dt_us);
		}
	}
}

/* When the module took the sample s was read from (last_sample_ns); 0: unknown */
static uint64_t module_ns(const struct sample *s)
{
	uint64_t ns;

	return info_u64(&s->info, "last_sample_ns", &ns) ? ns : 0;
}

/*
 * Refuse a delay shorter than the module's interval when the module does not
 * say when it sampled: the counters would be stale between its samples and
 * a rate over the wall clock wrong. -1 to go on, else an exit status.
 */
static int check_delay(const struct opts *o, const struct sample *s)
{
	uint64_t ms;

	if (module_ns(s) || !info_u64(&s->info, "interval_ms", &ms) ||
	    o->delay * 1000 >= (double)ms)
		return -1;
	diag_msg("-d %g is shorter than the module's sampling interval (%llu ms, "
		 "energy.info interval_ms), and this module does not give the "
		 "time of its samples (last_sample_ns): use -d %g or more",
		 o->delay, (unsigned long long)ms, (double)ms / 1000);
	return EXIT_NOTHING;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000u),
		.tv_nsec = (long)(ns % 1000000000u),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/*
 * The samples live mode keeps: last, the previous read, and base, the newest
 * read of an older module sample than last's. Rates are over the module's
 * samples (last_sample_ns) when it gives their time: from last when the
 * module sampled since, else from base (the same rates as the frame before:
 * the module's rate, not a wall-clock rate over a stale sample). A module
 * without last_sample_ns: over the wall clock, from last.
 */
struct live {
	struct sample last, base;
	bool have_last, have_base;
};

static void live_drop(struct live *l)
{
	if (l->have_base)
		sample_free(&l->base);
	if (l->have_last)
		sample_free(&l->last);
	l->have_base = false;
	l->have_last = false;
}

/* The rates of the root's keys (the machine line's), from prev to cur. */
static void machine_rates(const struct cg_stat *prev, const struct cg_stat *cur,
			  double dt_us, struct rates *r)
{
	r->valid = true;
	for (int k = 0; k < NKEYS; k++)
		r->r[k] = stat_has(prev, k) && stat_has(cur, k) ?
			  rate_of(key_table[k].kind, cur->v[k] - prev->v[k], dt_us) :
			  NAN;
}

/*
 * Rates of cur into v (NULL rates: none yet), the root's into machine
 * (v->machine set when there are some); false when cur restarts.
 */
static bool live_rates(const struct live *l, const struct sample *cur,
		       struct view *v, struct rates *rates,
		       struct rates *machine)
{
	uint64_t now = module_ns(cur), then = module_ns(&l->last);
	const struct sample *from = &l->last;
	double dt;

	if (!l->have_last || counters_restarted(&l->last.root, &cur->root) ||
	    now < then)
		return false;
	if (now && then) {
		if (now == then)
			from = l->have_base && module_ns(&l->base) &&
			       module_ns(&l->base) < now ? &l->base : NULL;
		v->clock = "module";
		if (!from)
			return true;	/* no module sample since the first read */
		dt = (double)(now - module_ns(from)) / 1e3;
	} else {
		dt = (double)(cur->mono_ns - from->mono_ns) / 1e3;
		if (dt < 1)
			dt = 1;
	}
	v->interval_s = dt / 1e6;
	compute_rates(from, cur, dt, rates);
	machine_rates(&from->root, &cur->root, dt, machine);
	v->machine = machine;
	return true;
}

/* Keep cur as last; the old last becomes base unless it read cur's sample. */
static void live_keep(struct live *l, struct sample *cur, bool reset)
{
	bool same = !reset && l->have_last && module_ns(cur) &&
		    module_ns(cur) == module_ns(&l->last);

	if (same) {
		sample_free(&l->last);
	} else {
		if (l->have_base)
			sample_free(&l->base);
		l->have_base = l->have_last && !reset;
		if (l->have_base)
			l->base = l->last;
		else if (l->have_last)
			sample_free(&l->last);
	}
	l->last = *cur;
	l->have_last = true;
}

static int run_live(const struct opts *o, const struct tree *t, struct diag *d)
{
	struct live l = { 0 };
	struct sample cur;
	struct table_fit fit = { 0 };
	struct rates machine;
	bool failed = false;
	bool clear = o->fmt == FMT_TABLE && !o->batch && isatty(STDOUT_FILENO);
	uint64_t step = (uint64_t)(o->delay * 1e9), next;
	int rc;

	if (sample_take(t, &l.last, d) != TREE_OK)
		return EXIT_NOTHING;
	l.have_last = true;
	rc = check_delay(o, &l.last);
	if (rc >= 0) {
		live_drop(&l);
		return rc;
	}
	next = l.last.mono_ns + step;
	for (unsigned long i = 0; o->count == 0 || i < o->count; i++) {
		struct view v = { .root = t->root, .sort = o->sort, .fit = &fit,
				  .clock = "wall", .raw = o->raw };
		struct rates *rates;
		size_t rows, extra;

		sleep_until(next);
		next += step;
		if (sample_take(t, &cur, d) != TREE_OK) {
			/* message printed; re-baseline when the tree is back */
			failed = true;
			live_drop(&l);
			continue;
		}
		if (cur.mono_ns > next)		/* fell behind: do not burst */
			next = cur.mono_ns + step;
		rates = calloc(cur.n ? cur.n : 1, sizeof(*rates));
		if (!rates) {
			diag_msg("out of memory");
			sample_free(&cur);
			break;
		}
		v.s = &cur;
		v.rates = rates;
		v.reset = !live_rates(&l, &cur, &v, rates, &machine);
		term_size(&fit.cols, &rows);
		/* the header, the rows, the machine line, the reset message,
		 * the cursor's line */
		extra = 2 + (size_t)v.reset +
			(o->fmt == FMT_TABLE ? out_machine(NULL, &v, fit.cols) : 0);
		fit.max_rows = !clear ? 0 : rows > extra ? rows - extra : 1;
		if (clear)
			fputs("\033[H\033[2J", stdout);
		else if (i > 0 && o->fmt == FMT_TABLE)
			fputc('\n', stdout);
		print_view(o, &v);
		if (v.reset)
			diag_msg("counters restarted (module reloaded?): new baseline, "
				 "rates from the next update");
		free(rates);
		live_keep(&l, &cur, v.reset);
	}
	live_drop(&l);
	return failed || d->errors ? EXIT_PARTIAL : 0;
}

/* ---- the interactive live view ------------------------------------------ */

/*
 * Live mode on a terminal (standard input too), as systemd-cgtop: keys act
 * at once, a first screen before the first delay, the depth changed without
 * a new walk (the whole tree is read, the levels shown are filtered).
 */
struct top {
	enum sort_key sort;
	int depth;		/* levels shown below each PATH; -1: all */
	bool paused, help;
	bool first;		/* the first screen: power from power_avg10_mw */
	bool have;		/* a frame to draw */
};

static const char *const sort_names[] = {
	[SORT_ENERGY] = "power", [SORT_CPU] = "cpu", [SORT_WAKEUPS] = "wakeups",
	[SORT_IMPACT] = "impact", [SORT_PATH] = "path",
};

/* The first screen's rates: power from power_avg10_mw, nothing else. */
static void avg10_rates(const struct sample *s, struct rates *rates)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct cg_node *n = &s->nodes[i];

		rates[i].valid = n->ok && n->st.has_avg10;
		for (int k = 0; k < NKEYS; k++)
			rates[i].r[k] = NAN;
		if (rates[i].valid)
			rates[i].r[K_ENERGY_UJ] = (double)n->st.avg10_mw / 1e3;
	}
}

/* Levels of "/a/b" below "/": 2; "/": 0. */
static unsigned int levels(const char *path)
{
	unsigned int n = 0;

	for (const char *p = path; path[1] && *p; p++)
		n += *p == '/';
	return n;
}

/* Levels a node is below the nearest PATH argument that holds it. */
static unsigned int rel_depth(const struct tree *t, const struct cg_node *n)
{
	unsigned int best = n->depth, lv = levels(n->path);

	for (size_t i = 0; i < t->npaths; i++) {
		const char *p = t->paths[i];
		size_t len = strlen(p);

		if (strcmp(p, "/") == 0 ||
		    (strncmp(n->path, p, len) == 0 &&
		     (n->path[len] == '\0' || n->path[len] == '/')))
			if (lv - levels(p) < best)
				best = lv - levels(p);
	}
	return best;
}

/* hide[i]: the node is deeper than tp->depth; the deepest level seen. */
static unsigned int top_hide(const struct tree *t, const struct sample *s,
			     const struct top *tp, bool *hide)
{
	unsigned int deepest = 0;

	for (size_t i = 0; i < s->n; i++) {
		unsigned int d = rel_depth(t, &s->nodes[i]);

		hide[i] = tp->depth >= 0 && d > (unsigned int)tp->depth;
		if (d > deepest)
			deepest = d;
	}
	return deepest;
}

/* One line of at most cols columns, then a newline. */
static void top_line(FILE *f, const char *text, size_t cols)
{
	fput_term_fit(f, text, cols, false);
	fputc('\n', f);
}

/*
 * Put @len bytes of @frame on the screen over the last one: from the top,
 * each row erased then written, then all below erased. No moment shows a
 * blank screen: a terminal that shows a frame's first part before the rest
 * (a pty passes one write on in pieces) shows the rest of the last frame
 * below it, never an empty table. The erase comes before the line, not
 * after: after a line as wide as the terminal the cursor waits to wrap,
 * and an erase there can take the last column.
 */
static void top_put(const char *frame, size_t len)
{
	const char *p = frame, *end = frame + len, *nl;

	fputs("\033[H", stdout);
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		fputs("\033[K", stdout);
		fwrite(p, 1, (size_t)(nl - p + 1), stdout);
		p = nl + 1;
	}
	fputs("\033[K", stdout);
	fwrite(p, 1, (size_t)(end - p), stdout);
	fputs("\033[J", stdout);
	fflush(stdout);
}

/*
 * The screen: a status line (sort key, depth, delay, paused), the machine
 * line, the first screen's note, the help line, then the rows that fit.
 */
static void top_draw(const struct opts *o, const struct tree *t,
		     const struct top *tp, struct view *v, bool *hide)
{
	size_t cols, rows, lines = 1, len = 0;
	char status[160], depth[16], *frame = NULL;
	FILE *f = open_memstream(&frame, &len);

	if (!f) {
		diag_msg("out of memory");
		return;
	}
	term_size(&cols, &rows);
	v->fit->cols = cols;
	v->sort = tp->sort;
	v->hide = hide;
	top_hide(t, v->s, tp, hide);
	if (tp->depth < 0)
		snprintf(depth, sizeof(depth), "all");
	else
		snprintf(depth, sizeof(depth), "%d", tp->depth);
	snprintf(status, sizeof(status), "%s  sort: %s  depth: %s  every %g s%s"
		 "  h: help", PROG, sort_names[tp->sort], depth, o->delay,
		 tp->paused ? "  PAUSED" : "");
	top_line(f, status, cols);
	lines += out_machine(f, v, cols);
	if (tp->first) {
		top_line(f, "POWER: the module's 10 s average (power_avg10_mw); "
			 "the rest from the next update", cols);
		lines++;
	}
	if (tp->help) {
		top_line(f, "q quit  sort: p path c cpu e power w wakeups i impact  "
			 "+/- depth  space pause", cols);
		lines++;
	}
	lines += 2 + (size_t)v->reset;	/* the header, the cursor's line */
	v->fit->max_rows = rows > lines ? rows - lines : 1;
	out_table(f, v);
	if (fclose(f)) {
		diag_msg("out of memory");
	} else {
		top_put(frame, len);
	}
	free(frame);
	if (v->reset)
		diag_msg("counters restarted (module reloaded?): new baseline, "
			 "rates from the next update");
}

/* A key: true when it asks to quit; *draw set when the screen changes. */
static bool top_key(int key, const struct tree *t, const struct sample *s,
		    struct top *tp, bool *hide, uint64_t *next, bool *draw)
{
	static const struct {
		int key;
		enum sort_key sort;
	} sort_keys[] = {
		{ 'p', SORT_PATH }, { 'c', SORT_CPU }, { 'e', SORT_ENERGY },
		{ 'w', SORT_WAKEUPS }, { 'i', SORT_IMPACT },
	};

	*draw = true;
	for (size_t i = 0; i < ARRAY_SIZE(sort_keys); i++)
		if (key == sort_keys[i].key)
			tp->sort = sort_keys[i].sort;
	if (key == '+' && tp->depth >= 0 && tp->depth < INT_MAX)
		tp->depth++;
	if (key == '-' && tp->depth < 0 && tp->have)
		tp->depth = (int)top_hide(t, s, tp, hide);
	if (key == '-' && tp->depth > 0)
		tp->depth--;
	if (key == ' ') {
		tp->paused = !tp->paused;
		if (!tp->paused)	/* a new frame at once */
			*next = clock_ns(CLOCK_MONOTONIC);
	}
	if (key == 'h' || key == '?')
		tp->help = !tp->help;
	return key == 'q' || key == 'Q';
}

#define KEY_EARLY	(-3)	/* poll() woke before the time: nothing to do */

/* Wait for the next frame's time or a key: the key, or KEY_NONE on time. */
static int top_wait(uint64_t next)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	int key;

	if (now >= next)
		return KEY_NONE;
	key = term_key((int)((next - now + 999999) / 1000000));
	if (key == KEY_NONE && clock_ns(CLOCK_MONOTONIC) < next)
		return KEY_EARLY;
	return key;
}

/* A new sample into l and its rates into v; false when it cannot be read. */
static bool top_sample(const struct tree *t, struct live *l, struct view *v,
		       struct rates **rates, bool **hide, struct rates *machine,
		       struct diag *d)
{
	struct sample cur;
	size_t n;

	if (sample_take(t, &cur, d) != TREE_OK) {
		live_drop(l);
		return false;
	}
	n = cur.n ? cur.n : 1;
	free(*rates);
	free(*hide);
	*rates = calloc(n, sizeof(**rates));
	*hide = calloc(n, sizeof(**hide));
	if (!*rates || !*hide) {
		diag_msg("out of memory");
		sample_free(&cur);
		live_drop(l);
		return false;
	}
	v->machine = NULL;
	v->rates = *rates;
	v->reset = !live_rates(l, &cur, v, *rates, machine);
	live_keep(l, &cur, v->reset);
	v->s = &l->last;
	return true;
}

static int run_top(const struct opts *o, const struct tree *t0, struct diag *d)
{
	struct tree t = *t0;
	struct live l = { 0 };
	struct table_fit fit = { 0 };
	struct top tp = { .sort = o->sort, .depth = o->depth, .first = true };
	struct view v = { .root = t.root, .fit = &fit, .clock = "wall",
			  .raw = o->raw, .top = true };
	struct rates *rates = NULL, machine;
	bool *hide = NULL, failed = false;
	uint64_t step = (uint64_t)(o->delay * 1e9), next;
	unsigned long done = 0;
	int rc;

	t.max_depth = -1;	/* every level read: +/- only filter */
	if (sample_take(&t, &l.last, d) != TREE_OK)
		return EXIT_NOTHING;
	l.have_last = true;
	rc = check_delay(o, &l.last);
	if (rc >= 0) {
		live_drop(&l);
		return rc;
	}
	rates = calloc(l.last.n ? l.last.n : 1, sizeof(*rates));
	hide = calloc(l.last.n ? l.last.n : 1, sizeof(*hide));
	if (!rates || !hide) {
		diag_msg("out of memory");
		rc = EXIT_NOTHING;
		goto out;
	}
	if (!term_raw())
		diag_msg("cannot put the terminal in raw mode: keys act after Enter");
	/* a whole screen per write (top_put()) */
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	avg10_rates(&l.last, rates);
	v.s = &l.last;
	v.rates = rates;
	tp.have = true;
	top_draw(o, &t, &tp, &v, hide);
	next = l.last.mono_ns + step;
	while (!o->count || done < o->count) {
		int key = top_wait(next);
		bool draw = false;

		if (key == KEY_NONE) {
			next += step;
			if (tp.paused)
				continue;
			tp.have = top_sample(&t, &l, &v, &rates, &hide, &machine, d);
			failed |= !tp.have;
			tp.first = false;
			draw = tp.have;
			done++;
			if (l.have_last && l.last.mono_ns > next)
				next = l.last.mono_ns + step;	/* no burst */
		} else if (key == KEY_REDRAW) {
			draw = tp.have;
		} else if (key > 0 && top_key(key, &t, v.s, &tp, hide, &next, &draw)) {
			break;
		}
		if (draw && tp.have)
			top_draw(o, &t, &tp, &v, hide);
	}
	rc = failed || d->errors ? EXIT_PARTIAL : 0;
out:
	term_restore();
	free(hide);
	free(rates);
	live_drop(&l);
	return rc;
}

/* the signals that end energystat while --output writes */
static const int output_sigs[] = { SIGTERM, SIGINT, SIGHUP };
static struct sigaction output_old[ARRAY_SIZE(output_sigs)];
/* --output's temporary file while it is being written, for output_signal() */
static const char *volatile output_tmp;

/* One of output_sigs: no temporary file left, then the signal's default. */
static void output_signal(int sig)
{
	const char *tmp = output_tmp;

	if (tmp)
		unlink(tmp);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Block output_sigs (SIG_BLOCK) or let them in again (SIG_UNBLOCK). */
static void output_mask(int how)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < ARRAY_SIZE(output_sigs); i++)
		sigaddset(&set, output_sigs[i]);
	sigprocmask(how, &set, NULL);
}

/* output_signal() for each of output_sigs not ignored (nohup), or as before. */
static void output_handle(bool on)
{
	struct sigaction sa = { .sa_handler = output_signal };

	for (size_t i = 0; i < ARRAY_SIZE(output_sigs); i++) {
		if (!on) {
			sigaction(output_sigs[i], &output_old[i], NULL);
			continue;
		}
		sigaction(output_sigs[i], NULL, &output_old[i]);
		if (output_old[i].sa_handler != SIG_IGN)
			sigaction(output_sigs[i], &sa, NULL);
	}
}

/*
 * --output: standard output goes to a new temporary file beside FILE
 * (FILE.XXXXXX, which node_exporter's *.prom glob does not match), renamed
 * over FILE once written, so a reader sees the old file or the new one,
 * never a part; SIGTERM, SIGINT or SIGHUP meanwhile removes it. Returns
 * the temporary file's name (to free), NULL on error.
 */
static char *output_open(const char *file)
{
	char *tmp = malloc(strlen(file) + sizeof(".XXXXXX"));
	mode_t mask;
	int fd;

	if (!tmp) {
		diag_msg("out of memory");
		return NULL;
	}
	sprintf(tmp, "%s.XXXXXX", file);
	output_mask(SIG_BLOCK);		/* no signal between these two */
	output_handle(true);
	fd = mkstemp(tmp);
	if (fd >= 0)
		output_tmp = tmp;
	output_mask(SIG_UNBLOCK);
	/* mkstemp's 0600, widened to what the umask lets a new file have */
	mask = umask(0);
	umask(mask);
	if (fd < 0 || fchmod(fd, 0666 & ~mask) != 0 || fflush(stdout) != 0 ||
	    dup2(fd, STDOUT_FILENO) < 0) {
		diag_msg("cannot write %s: %s", tmp, strerror(errno));
		output_mask(SIG_BLOCK);
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		output_tmp = NULL;
		output_handle(false);
		output_mask(SIG_UNBLOCK);
		free(tmp);
		return NULL;
	}
	close(fd);
	return tmp;
}

/* Rename tmp over file when rc says something was shown, else remove it. */
static int output_commit(char *tmp, const char *file, int rc)
{
	int err = 0;

	if (rc != EXIT_NOTHING && (fflush(stdout) != 0 || ferror(stdout) ||
				   fsync(STDOUT_FILENO) != 0))
		err = errno ? errno : EIO;
	output_mask(SIG_BLOCK);		/* the file renamed or removed, and forgotten */
	if (rc != EXIT_NOTHING && !err && rename(tmp, file) != 0)
		err = errno;
	if (rc == EXIT_NOTHING || err)
		unlink(tmp);
	output_tmp = NULL;
	output_handle(false);
	output_mask(SIG_UNBLOCK);
	if (err) {
		diag_msg("cannot write %s: %s", file, strerror(err));
		rc = EXIT_NOTHING;
	}
	free(tmp);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct tree t = { 0 };
	struct diag d = { .limit = DIAG_LIMIT };
	struct webcfg *wc = NULL;
	char *root;
	int rc = parse_opts(argc, argv, &o);

	if (rc >= 0) {
		filter_free(&o.filter);
		return rc;
	}
	/* hidden, for tests/test_docs.py: a valid command line, nothing run */
	if (getenv("ENERGYSTAT_PARSE_ONLY")) {
		filter_free(&o.filter);
		return 0;
	}
	/* before the tree: a bad file is refused whatever the module's state */
	if (o.web_config && !(wc = webcfg_load(o.web_config))) {
		filter_free(&o.filter);
		return EXIT_NOTHING;
	}
	root = root_dir(o.root);
	if (!root) {
		diag_msg("out of memory");
		webcfg_free(wc);
		return EXIT_NOTHING;
	}
	t.names = names_new(o.runtime_root);
	if (!t.names) {
		diag_msg("out of memory");
		free(root);
		return EXIT_NOTHING;
	}
	rc = setup_tree(&o, &t, root, &d);
	/* Prometheus takes a counter that went down for a reset */
	t.exact = o.fmt == FMT_PROM || o.listen;
	if (rc < 0 && o.listen) {
		struct serve_opts so = { .addr = &o.addr, .any = o.any_addr,
					 .hierarchical = o.hierarchical,
					 .filter = &o.filter, .wc = wc };

		rc = serve(&t, &so);
	} else if (rc < 0 && o.output) {
		char *tmp = output_open(o.output);

		rc = tmp ? output_commit(tmp, o.output, run_static(&o, &t, &d)) :
			   EXIT_NOTHING;
	} else if (rc < 0) {
		rc = !o.live ? run_static(&o, &t, &d) :
		     o.fmt == FMT_TABLE && !o.batch && term_interactive() ?
		     run_top(&o, &t, &d) : run_live(&o, &t, &d);
	}
	diag_finish(&d);
	filter_free(&o.filter);
	webcfg_free(wc);
	free_paths(&t);
	names_free(t.names);
	free(root);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		diag_msg("cannot write the output: %s", strerror(errno));
		return EXIT_NOTHING;
	}
	return rc;
}
