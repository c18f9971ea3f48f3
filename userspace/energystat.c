// SPDX-License-Identifier: GPL-2.0
/*
 * energystat - show the energy, CPU time, wakeups and energy impact of
 * cgroups from the cgroup_energy filesystem (/sys/fs/cgroup_energy).
 *
 * energystat.c: command line, the static mode (one sample) and the live mode
 * (rates between successive samples). See energystat.1.
 *
 * Exit status: 0 all shown; 1 some cgroups could not be read; 2 nothing
 * could be shown (usage error, module not loaded, not mounted, permission
 * denied, unknown cgroup).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "energystat.h"

#define EXIT_PARTIAL	1
#define EXIT_NOTHING	2
#define DIAG_LIMIT	20

enum format { FMT_TABLE, FMT_JSON, FMT_PROM };

struct opts {
	const char *root;
	int depth;		/* -1: unlimited */
	bool live;
	double interval;	/* seconds */
	unsigned long count;	/* 0: until interrupted */
	enum sort_key sort;
	enum format fmt;
	bool hierarchical;
	const char *listen;	/* --listen [ADDR:]PORT, NULL: none */
	struct sockaddr_storage addr;	/* its address */
	bool any_addr;		/* no ADDR: every address */
	bool batch;
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
"  -d, --depth N        show N levels below each PATH (0: PATH only)\n"
"  -i, --interval SEC   live mode: rates over SEC-second intervals (e.g. 0.5)\n"
"  -n, --count N        live mode: stop after N updates (default interval 1 s)\n"
"  -b, --batch          live mode: do not clear the screen between updates\n"
"  -s, --sort KEY       energy (default), cpu, wakeups, impact or path\n"
"      --json           one JSON document per sample (see energystat(1))\n"
"      --prometheus     Prometheus text format, for node_exporter's textfile\n"
"                       collector (not with -i)\n"
"      --listen [ADDR:]PORT  serve /metrics (Prometheus) over HTTP on PORT;\n"
"                       ADDR: an IPv4 address or [IPv6]; default every address\n"
"      --hierarchical   Prometheus: each cgroup's counters with its descendants\n"
"                       (cgroup_energy_subtree_*); default: its own share, so\n"
"                       that sum() over cgroups is the root's energy\n"
"  -r, --root DIR       read the tree at DIR (default %s)\n"
"  -h, --help           show this help\n"
"  -V, --version        show the version\n"
"\n"
"Table: ENERGY(J) joules, CPU(s) CPU seconds, WAKEUPS count, IMPACT(s) energy\n"
"impact in CPU-second equivalents, all since the module loaded. Live mode:\n"
"POWER(W) watts, CPU%% (100 = one CPU), WAKEUPS/s, IMPACT (100 = one busy CPU).\n"
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

/* Returns -1 to go on, else an exit status. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	enum { OPT_JSON = 256, OPT_PROM, OPT_HIER, OPT_LISTEN };
	static const struct option longopts[] = {
		{ "depth", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "batch", no_argument, NULL, 'b' },
		{ "sort", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "prometheus", no_argument, NULL, OPT_PROM },
		{ "hierarchical", no_argument, NULL, OPT_HIER },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "root", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const sorts[] = {
		[SORT_ENERGY] = "energy", [SORT_CPU] = "cpu",
		[SORT_WAKEUPS] = "wakeups", [SORT_IMPACT] = "impact",
		[SORT_PATH] = "path",
	};
	unsigned long v;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->root = CGE_MOUNT_POINT;
	o->depth = -1;
	o->interval = 1.0;
	o->sort = SORT_ENERGY;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:i:n:bs:r:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!parse_ulong(optarg, INT_MAX, &v))
				return usage_error("invalid depth '%s': expected a "
						   "number of levels, 0 or more", optarg);
			o->depth = (int)v;
			break;
		case 'i':
			errno = 0;
			o->interval = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(o->interval) ||
			    o->interval < 0.01 || o->interval > 86400)
				return usage_error("invalid interval '%s': expected "
						   "seconds, from 0.01 to 86400", optarg);
			o->live = true;
			break;
		case 'n':
			if (!parse_ulong(optarg, ULONG_MAX, &v) || v == 0)
				return usage_error("invalid count '%s': expected a "
						   "number of updates, 1 or more", optarg);
			o->count = v;
			o->live = true;
			break;
		case 'b':
			o->batch = true;
			break;
		case 's': {
			size_t k;

			for (k = 0; k < ARRAY_SIZE(sorts); k++)
				if (strcmp(optarg, sorts[k]) == 0)
					break;
			if (k == ARRAY_SIZE(sorts))
				return usage_error("invalid sort key '%s': expected "
						   "energy, cpu, wakeups, impact or path",
						   optarg);
			o->sort = (enum sort_key)k;
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
		case 'r':
			if (!*optarg)
				return usage_error("empty --root", NULL);
			o->root = optarg;
			break;
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
				   "be used with --json, -i or -n", NULL);
	if (o->live && o->fmt == FMT_PROM)
		return usage_error("--prometheus prints counters and cannot be "
				   "used with -i/-n: Prometheus computes the rates", NULL);
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

/* Resolve the PATH arguments; -1 to go on, else an exit status. */
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
	}
	fflush(stdout);
}

static int run_static(const struct opts *o, const struct tree *t, struct diag *d)
{
	struct sample s;
	struct view v = { .root = t->root, .sort = o->sort,
			  .hierarchical = o->hierarchical };
	int rc;

	if (sample_take(t, &s, d) != TREE_OK)
		return EXIT_NOTHING;
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

/* Interval between two samples: the module's own clock when it is sane. */
static double interval_us(const struct sample *prev, const struct sample *cur,
			  const char **clock)
{
	double wall = (double)(cur->mono_ns - prev->mono_ns) / 1e3;
	const char *a = info_get(&prev->info, "last_sample_ns");
	const char *b = info_get(&cur->info, "last_sample_ns");

	*clock = "wall";
	if (wall < 1)
		wall = 1;
	if (a && b) {
		char *ea, *eb;
		unsigned long long x = strtoull(a, &ea, 10), y = strtoull(b, &eb, 10);
		double mod = (double)(y - x) / 1e3;

		if (!*ea && !*eb && y > x && mod > wall / 2 && mod < wall * 2) {
			*clock = "module";
			return mod;
		}
	}
	return wall;
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

static int run_live(const struct opts *o, const struct tree *t, struct diag *d)
{
	struct sample prev, cur;
	bool have_prev, failed = false;
	bool clear = o->fmt == FMT_TABLE && !o->batch && isatty(STDOUT_FILENO);
	uint64_t step = (uint64_t)(o->interval * 1e9), next;

	if (sample_take(t, &prev, d) != TREE_OK)
		return EXIT_NOTHING;
	have_prev = true;
	next = prev.mono_ns + step;
	for (unsigned long i = 0; o->count == 0 || i < o->count; i++) {
		struct view v = { .root = t->root, .sort = o->sort };
		struct rates *rates;

		sleep_until(next);
		next += step;
		if (sample_take(t, &cur, d) != TREE_OK) {
			/* message printed; re-baseline when the tree is back */
			failed = true;
			if (have_prev)
				sample_free(&prev);
			have_prev = false;
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
		v.clock = "wall";
		v.reset = !have_prev || counters_restarted(&prev.root, &cur.root);
		if (v.reset) {
			diag_msg("counters restarted (module reloaded?): new baseline, "
				 "rates from the next update");
		} else {
			double dt = interval_us(&prev, &cur, &v.clock);

			v.interval_s = dt / 1e6;
			compute_rates(&prev, &cur, dt, rates);
		}
		if (clear)
			fputs("\033[H\033[2J", stdout);
		else if (i > 0 && o->fmt == FMT_TABLE)
			fputc('\n', stdout);
		print_view(o, &v);
		free(rates);
		if (have_prev)
			sample_free(&prev);
		prev = cur;
		have_prev = true;
	}
	if (have_prev)
		sample_free(&prev);
	return failed || d->errors ? EXIT_PARTIAL : 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct tree t = { 0 };
	struct diag d = { .limit = DIAG_LIMIT };
	char *root;
	int rc = parse_opts(argc, argv, &o);

	if (rc >= 0)
		return rc;
	root = root_dir(o.root);
	if (!root) {
		diag_msg("out of memory");
		return EXIT_NOTHING;
	}
	rc = setup_tree(&o, &t, root, &d);
	if (rc < 0 && o.listen)
		rc = serve(&t, &o.addr, o.any_addr, o.hierarchical);
	else if (rc < 0)
		rc = o.live ? run_live(&o, &t, &d) : run_static(&o, &t, &d);
	diag_finish(&d);
	free_paths(&t);
	free(root);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		diag_msg("cannot write the output: %s", strerror(errno));
		return EXIT_NOTHING;
	}
	return rc;
}
