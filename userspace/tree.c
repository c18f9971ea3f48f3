// SPDX-License-Identifier: GPL-2.0
/*
 * tree.c - resolve PATH arguments and read a cgroup_energy tree: its
 * energy.tree in one read, or a walk of its directories.
 *
 * A module with energy.tree gives every cgroup's counters from one of its
 * samples in one read (treefile.c parses it); the sample is made of the
 * rows the PATHs and --depth select, the same nodes a walk would read.
 * Without the file (an older module), the tree is walked. The walk never
 * follows symbolic links (O_NOFOLLOW, d_type/lstat), and is bounded in
 * depth and path length, so no tree can make it loop or hang. A cgroup
 * that vanishes while it is walked (rmdir racing with readdir) is silently
 * left out; anything else that cannot be read is reported.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "diag.h"
#include "stat.h"
#include "treefile.h"
#include "tree.h"
#include "text.h"
#include "series.h"
#include "names.h"
#include "workload.h"

#define MAX_WALK_DEPTH	256	/* a DIR stays open per level: bounded fds */
#define MODULE_SYSFS	"/sys/module/" CGE_MODULE_NAME
#define MSG_PATH	512	/* escaped paths in messages */
#define TAKE_TRIES	3	/* walks to get one between two module samples */
#define TAKE_TRIES_EXACT 20	/* the same, when a straddling one is refused */

/* "/" or "/a/b" from any spelling; NULL when ".." climbs above the top. */
char *path_normalize(const char *in)
{
	size_t n = strlen(in);
	char *out = malloc(n + 2);
	size_t len = 0;
	const char *p = in;

	if (!out)
		return NULL;
	while (*p) {
		const char *e;
		size_t c;

		while (*p == '/')
			p++;
		e = strchr(p, '/');
		c = e ? (size_t)(e - p) : strlen(p);
		if (c == 0 || (c == 1 && p[0] == '.')) {
			/* empty or "." */
		} else if (c == 2 && p[0] == '.' && p[1] == '.') {
			if (len == 0) {
				free(out);
				return NULL;
			}
			while (len > 0 && out[len - 1] != '/')
				len--;
			len--;	/* the slash */
		} else {
			out[len++] = '/';
			memcpy(out + len, p, c);
			len += c;
		}
		p += c;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';
	return out;
}

/* If path (normalized) is pre or below it, return the rest ("" or "/x"). */
static const char *strip_prefix(const char *path, const char *pre)
{
	size_t n = strlen(pre);

	if (strncmp(path, pre, n) != 0)
		return NULL;
	if (path[n] != '\0' && path[n] != '/')
		return NULL;
	return path + n;
}

/*
 * A PATH argument as a cgroup path: "/sys/fs/cgroup/x", "/sys/fs/cgroup_energy/x",
 * ROOT/x (root absolute, normalized) and "x" or "/x" all mean "/x".
 */
char *path_resolve(const char *arg, const char *root)
{
	char *norm = path_normalize(arg);
	const char *prefixes[] = { root, CGE_MOUNT_POINT, CGE_CGROUP_ROOT };

	if (!norm || arg[0] != '/')
		return norm;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		const char *rest;

		if (!prefixes[i] || strcmp(prefixes[i], "/") == 0)
			continue;
		rest = strip_prefix(norm, prefixes[i]);
		if (rest) {
			char *r = strdup(*rest ? rest : "/");

			free(norm);
			return r;
		}
	}
	return norm;
}

/* Order paths as a tree: '/' sorts before any other byte. */
int path_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a;
	const unsigned char *y = (const unsigned char *)b;

	while (*x && *x == *y) {
		x++;
		y++;
	}
	unsigned int cx = *x == '/' ? 1 : (*x ? *x + 1u : 0);
	unsigned int cy = *y == '/' ? 1 : (*y ? *y + 1u : 0);

	return (cx > cy) - (cx < cy);
}

static unsigned int path_depth(const char *p)
{
	unsigned int d = 0;

	if (strcmp(p, "/") == 0)
		return 0;
	for (; *p; p++)
		d += *p == '/';
	return d;
}

static bool module_loaded(void)
{
	struct stat sb;

	return stat(MODULE_SYSFS, &sb) == 0;
}

/*
 * A cgroup hierarchy: /sys/fs/cgroup itself (a tmpfs of v1 hierarchies in
 * the hybrid layout), or a directory with cgroup.procs (every v1 or v2 one).
 */
static bool is_cgroup_dir(const char *dir)
{
	char path[PATH_MAX + 16], *real = realpath(*dir ? dir : "/", NULL);
	bool top = real && strcmp(real, CGE_CGROUP_ROOT) == 0;
	struct stat sb;

	free(real);
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	return top || stat(path, &sb) == 0;
}

static void perm_hint(const char *file)
{
	diag_msg("permission denied reading %s: run as root, or have root mount "
		   "the tree with -o gid=<group>,mode=0440 and join that group",
		   file);
}

/*
 * What an error err from stat (dir) or from reading energy.stat says of
 * the tree's root.
 */
static enum tree_state root_state(const struct tree *t, bool dir, int err)
{
	if (err == EACCES || err == EPERM)
		return TS_PERMISSION;
	if (err == ENOENT || (dir && err == ENOTDIR))
		return t->default_root && !module_loaded() ? TS_NOT_LOADED :
		       TS_NOT_MOUNTED;
	if (err == EINVAL || err == EFBIG || err == ENOTDIR)
		return TS_NOT_A_TREE;
	return TS_ERROR;
}

/*
 * Explain why the tree's root cannot be used. err from lstat (dir) or from
 * reading the root's file name (energy.stat, energy.tree).
 */
static void diagnose_root(const struct tree *t, const char *name, bool dir,
			  int err)
{
	char root[MSG_PATH], file[MSG_PATH + 16];
	const char *shown = *t->root ? t->root : "/";

	esc_term(root, sizeof(root), shown);
	snprintf(file, sizeof(file), "%s/%s", *t->root ? root : "", name);

	if (err == EACCES || err == EPERM) {
		perm_hint(dir ? root : file);
		return;
	}
	if (dir && (err == ENOENT || err == ENOTDIR)) {
		if (!t->default_root)
			diag_msg("no such directory: %s (--root)", root);
		else if (!module_loaded())
			diag_msg("the %s module is not loaded (no %s): run modprobe %s",
				   CGE_MODULE_NAME, CGE_MOUNT_POINT, CGE_MODULE_NAME);
		else
			diag_msg("%s is missing although the %s module is loaded: "
				   "reload it (rmmod %s; modprobe %s)", CGE_MOUNT_POINT,
				   CGE_MODULE_NAME, CGE_MODULE_NAME, CGE_MODULE_NAME);
		return;
	}
	if (!dir && err == ENOENT) {
		if (t->default_root && !module_loaded())
			diag_msg("the %s module is not loaded: run modprobe %s, "
				   "then mount -t %s none %s", CGE_MODULE_NAME,
				   CGE_MODULE_NAME, CGE_FS_TYPE, CGE_MOUNT_POINT);
		else if (is_cgroup_dir(t->root))
			/* mounting over it would hide the cgroups themselves */
			diag_msg("%s is a cgroup hierarchy, not a %s tree: "
				   "leave --root at %s, which mirrors %s (a PATH "
				   "may be given as %s/...)", root, CGE_FS_TYPE,
				   CGE_MOUNT_POINT, CGE_CGROUP_ROOT, CGE_CGROUP_ROOT);
		else
			diag_msg("nothing mounted on %s (no %s): run mount -t %s none %s",
				   root, CGE_STAT_FILE, CGE_FS_TYPE, root);
		return;
	}
	if (err == EINVAL || err == EFBIG || err == ENOTDIR)
		diag_msg("%s is not a %s tree (%s is %s)", root, CGE_FS_TYPE, file,
			   err == EFBIG ? "too large" : "not a regular file");
	else
		diag_msg("cannot read %s: %s", dir ? root : file, strerror(err));
}

/*
 * Read the root's energy.stat into buf. On failure, say why (when say) and
 * return what the failure says of the tree.
 */
static enum tree_state read_root(const struct tree *t, char *buf, size_t *len,
				 bool say)
{
	char path[PATH_MAX + 32];
	struct stat sb;
	bool dir = true;
	int err = 0;

	if (stat(*t->root ? t->root : "/", &sb) < 0) {
		err = errno;
	} else if (!S_ISDIR(sb.st_mode)) {
		err = ENOTDIR;
	} else {
		snprintf(path, sizeof(path), "%s/%s", t->root, CGE_STAT_FILE);
		err = read_small_file(path, buf, STAT_MAX_FILE, len);
		dir = false;
	}
	if (!err)
		return TS_OK;
	if (say)
		diagnose_root(t, CGE_STAT_FILE, dir, err);
	return root_state(t, dir, err);
}

/*
 * Whether the tree can be read now, and if not why (no message unless
 * say): the exporter's module state, probed before each scrape.
 */
enum tree_state tree_probe(const struct tree *t, bool say)
{
	char buf[STAT_MAX_FILE];
	size_t len;

	return read_root(t, buf, &len, say);
}

/* The tree's energy.info into info (empty when it cannot be read). */
static void read_info(const struct tree *t, struct info *info)
{
	char path[PATH_MAX + 32], buf[STAT_MAX_FILE];
	size_t len;

	info->kv = NULL;
	info->n = 0;
	snprintf(path, sizeof(path), "%s/%s", t->root, CGE_INFO_FILE);
	if (read_small_file(path, buf, sizeof(buf), &len) == 0)
		info_parse(buf, len, info);
}

/*
 * Read and parse the tree's energy.tree into tf, and when info is not
 * NULL energy.info into it right after the read (before the parse, so that
 * the module is likely still at the tree's sample). Returns 0; ENOENT when
 * there is no energy.tree (ENOENT or ENOTDIR, an older module; EISDIR, an
 * older module's cgroup of that name); -1 with pe set when it does not
 * parse; else the errno of the read.
 */
static int tree_file_read(const struct tree *t, struct tree_file *tf,
			  struct parse_err *pe, struct info *info)
{
	char path[PATH_MAX + 32];
	size_t len;
	char *buf;
	int err;

	snprintf(path, sizeof(path), "%s/%s", t->root, CGE_TREE_FILE);
	err = read_whole_file(path, TREE_MAX_FILE, &buf, &len);
	if (err == ENOENT || err == ENOTDIR || err == EISDIR)
		return ENOENT;
	if (err)
		return err;
	if (info)
		read_info(t, info);
	err = treefile_parse(buf, len, tf, pe);
	free(buf);
	return err;
}

/* The tree's energy.tree as messages show it, escaped. */
static void tree_file_shown(const struct tree *t, char *file, size_t sz)
{
	char root[MSG_PATH];

	esc_term(root, sizeof(root), *t->root ? t->root : "");
	snprintf(file, sz, "%s/%s", root, CGE_TREE_FILE);
}

/* 0, or the errno of lstat(path), ENOTDIR when it is not a directory. */
static int dir_error(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) < 0)
		return errno;
	return S_ISDIR(sb.st_mode) ? 0 : ENOTDIR;
}

/*
 * Whether energy.tree lists path: a cgroup named like a file of its
 * directory (energy.stat) has no directory in the mount. The file is read
 * at the first call (*loaded 1, or -1 when it cannot be).
 */
static bool tree_lists(const struct tree *t, struct tree_file *tf, int *loaded,
		       const char *path)
{
	struct parse_err pe;

	if (*loaded == 0)
		*loaded = tree_file_read(t, tf, &pe, NULL) == 0 ? 1 : -1;
	return *loaded > 0 && treefile_find(tf, path);
}

/* Before the first sample: the tree is usable, and which PATHs exist. */
enum tree_rc tree_check(const struct tree *t, bool *exists, struct diag *d)
{
	char buf[STAT_MAX_FILE];
	char path[PATH_MAX + 32];
	struct tree_file tf;
	int loaded = 0;
	size_t len;

	if (read_root(t, buf, &len, true) != TS_OK)
		return TREE_FATAL;
	for (size_t i = 0; i < t->npaths; i++) {
		char shown[MSG_PATH], dir[MSG_PATH];
		bool too_long = strlen(t->root) + strlen(t->paths[i]) >= PATH_MAX;
		int err;

		exists[i] = false;
		snprintf(path, sizeof(path), "%s%s", t->root,
			 strcmp(t->paths[i], "/") ? t->paths[i] : "");
		esc_term(shown, sizeof(shown), t->paths[i]);
		esc_term(dir, sizeof(dir), path);
		err = too_long ? 0 : dir_error(path);
		if (too_long) {
			diag_error(d, "cgroup path too long: %s", shown);
		} else if (err == 0 || tree_lists(t, &tf, &loaded, t->paths[i])) {
			exists[i] = true;
		} else if (err == EACCES) {
			diag_error(d, "permission denied looking up cgroup %s (%s)",
				   shown, dir);
		} else {
			diag_error(d, "unknown cgroup %s: no directory %s", shown, dir);
		}
	}
	if (loaded > 0)
		treefile_free(&tf);
	return TREE_OK;
}

uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct walker {
	const struct tree *t;
	struct sample *s;
	struct diag *d;
	size_t rootlen;
	uint64_t deadline;	/* CLOCK_MONOTONIC ns, 0: none */
	bool late;		/* the deadline passed: the walk stopped */
	char buf[PATH_MAX + 32];
};

static struct cg_node *node_add(struct sample *s, const char *path,
				unsigned int depth)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct cg_node *n = realloc(s->nodes, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->nodes = n;
		s->cap = cap;
	}

	struct cg_node *node = &s->nodes[s->n];

	node->path = strdup(path);
	if (!node->path)
		return NULL;
	node->depth = depth;
	node->ok = false;
	node->cut = false;
	workload_parse(path, &node->wl);
	memset(&node->st, 0, sizeof(node->st));
	s->n++;
	return node;
}

/* Report pe, a parse error of file (escaped). */
static void parse_error(struct diag *d, const char *shown,
			const struct parse_err *pe)
{
	if (pe->line)
		diag_error(d, "%s:%u: %s", shown, pe->line, pe->msg);
	else
		diag_error(d, "%s: %s", shown, pe->msg);
}

/* Parse buf as FILE's energy.stat, reporting errors. */
static bool parse_reported(struct diag *d, const char *file, const char *buf,
			   size_t len, struct cg_stat *st)
{
	struct parse_err pe;
	char shown[MSG_PATH];

	if (stat_parse(buf, len, st, &pe) == 0)
		return true;
	esc_term(shown, sizeof(shown), file);
	parse_error(d, shown, &pe);
	memset(st, 0, sizeof(*st));
	return false;
}

/* Report a problem with the file or directory now in w->buf. */
static void walk_error(struct walker *w, const char *what, unsigned int line)
{
	char shown[MSG_PATH];

	esc_term(shown, sizeof(shown), *w->buf ? w->buf : "/");
	if (line)
		diag_error(w->d, "%s:%u: %s", shown, line, what);
	else
		diag_error(w->d, "%s: %s", shown, what);
}

static const char *read_error(int err)
{
	switch (err) {
	case EACCES:
	case EPERM:
		return "permission denied (the mount options gid= and mode= say "
		       "who may read energy.stat)";
	case EFBIG:
		return "file too large";
	case EINVAL:
		return "not a regular file";
	default:
		return strerror(err);
	}
}

/* Read the energy.stat of the directory in w->buf[0..len). */
static void read_node(struct walker *w, size_t len, unsigned int depth)
{
	char text[STAT_MAX_FILE];
	struct parse_err pe;
	struct cg_stat st;
	struct cg_node *n;
	bool ok = false;
	size_t tlen;
	int err;

	if (len == w->rootlen) {	/* the root: read once by sample_take */
		n = node_add(w->s, "/", 0);
		if (n) {
			n->st = w->s->root;
			n->ok = w->s->root.present != 0;
		}
		return;
	}
	snprintf(w->buf + len, sizeof(w->buf) - len, "/%s", CGE_STAT_FILE);
	err = read_small_file(w->buf, text, sizeof(text), &tlen);
	if (err == ENOENT) {
		w->buf[len] = '\0';
		if (access(w->buf, F_OK) < 0)
			return;	/* the cgroup went away meanwhile */
		w->buf[len] = '/';
	}
	if (err)
		walk_error(w, read_error(err), 0);
	else if (stat_parse(text, tlen, &st, &pe) < 0)
		walk_error(w, pe.msg, pe.line);
	else
		ok = true;
	w->buf[len] = '\0';

	n = node_add(w->s, w->buf + w->rootlen, depth);
	if (!n) {
		diag_error(w->d, "out of memory");
		return;
	}
	n->ok = ok;
	if (ok)
		n->st = st;
}

static bool is_subdir(DIR *dir, const struct dirent *de)
{
	struct stat sb;

	if (de->d_type == DT_DIR)
		return true;
	if (de->d_type != DT_UNKNOWN)
		return false;
	return fstatat(dirfd(dir), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(sb.st_mode);
}

static void list_error(struct walker *w, int err)
{
	char shown[MSG_PATH];

	esc_term(shown, sizeof(shown), *w->buf ? w->buf : "/");
	diag_error(w->d, "cannot list %s: %s", shown, strerror(err));
}

/*
 * Read the directory in w->buf[0..len) and those below it. A node whose
 * children --depth (or MAX_WALK_DEPTH) leaves out is cut: its series is its
 * subtree's counter, not its own_ keys (series.c).
 */
static void walk(struct walker *w, size_t len, unsigned int depth,
		 unsigned int below)
{
	size_t self = w->s->n;
	struct dirent *de;
	DIR *dir;
	int fd;

	if (w->deadline && clock_ns(CLOCK_MONOTONIC) > w->deadline)
		w->late = true;
	if (w->late)
		return;
	read_node(w, len, depth);
	if (w->s->n == self)
		return;		/* gone, or out of memory */
	if (w->t->max_depth >= 0 && below >= (unsigned int)w->t->max_depth) {
		w->s->nodes[self].cut = true;
		return;
	}
	if (depth >= MAX_WALK_DEPTH) {
		walk_error(w, "deeper than " STR(MAX_WALK_DEPTH)
			   " levels, not descending", 0);
		w->s->nodes[self].cut = true;
		return;
	}
	/* the root itself may be a symlink (--root); nothing below it */
	fd = open(*w->buf ? w->buf : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC |
		  (len == w->rootlen ? 0 : O_NOFOLLOW));
	if (fd < 0) {
		if (errno != ENOENT)
			list_error(w, errno);
		return;
	}
	dir = fdopendir(fd);
	if (!dir) {
		list_error(w, errno);
		close(fd);
		return;
	}
	while ((errno = 0, de = readdir(dir)) != NULL) {
		size_t nlen = strlen(de->d_name);

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    !is_subdir(dir, de))
			continue;
		if (len + 1 + nlen + sizeof("/" CGE_STAT_FILE) > sizeof(w->buf) ||
		    len + 1 + nlen >= PATH_MAX) {
			walk_error(w, "a subdirectory's path is too long", 0);
			continue;
		}
		w->buf[len] = '/';
		memcpy(w->buf + len + 1, de->d_name, nlen + 1);
		walk(w, len + 1 + nlen, depth + 1, below + 1);
		w->buf[len] = '\0';
	}
	if (errno)
		list_error(w, errno);
	closedir(dir);
}

static int node_cmp(const void *a, const void *b)
{
	const struct cg_node *x = a, *y = b;

	return path_cmp(x->path, y->path);
}

static enum tree_rc sample_read(const struct tree *t, struct sample *s,
				struct diag *d)
{
	struct walker *w;
	char buf[STAT_MAX_FILE];
	char file[MSG_PATH + 16];
	size_t len;

	memset(s, 0, sizeof(*s));
	s->mono_ns = clock_ns(CLOCK_MONOTONIC);
	s->real_ns = clock_ns(CLOCK_REALTIME);
	/*
	 * energy.info first: its last_sample_ns, the same again after the
	 * walk (same_module_sample()), then covers every file read, the
	 * root's included.
	 */
	read_info(t, &s->info);
	if (read_root(t, buf, &len, true) != TS_OK)
		return TREE_FATAL;
	esc_term(file, MSG_PATH, *t->root ? t->root : "");
	strcat(file, "/" CGE_STAT_FILE);
	parse_reported(d, file, buf, len, &s->root);

	w = malloc(sizeof(*w));
	if (!w) {
		diag_msg("out of memory");
		return TREE_FATAL;
	}
	w->t = t;
	w->s = s;
	w->d = d;
	w->rootlen = strlen(t->root);
	w->deadline = t->deadline_ns;
	w->late = false;
	for (size_t i = 0; i < t->npaths && !w->late; i++) {
		const char *p = t->paths[i];
		size_t len = w->rootlen;

		memcpy(w->buf, t->root, w->rootlen + 1);
		if (strcmp(p, "/") != 0) {
			if (w->rootlen + strlen(p) >= PATH_MAX)
				continue;	/* reported by tree_check */
			strcpy(w->buf + w->rootlen, p);
			len += strlen(p);
			if (access(w->buf, F_OK) < 0)
				continue;	/* gone since tree_check */
		}
		walk(w, len, path_depth(p), 0);
	}
	if (w->late) {
		free(w);
		return TREE_LATE;
	}
	free(w);

	/* sort by path and drop duplicates from overlapping PATHs */
	if (s->n > 1)
		qsort(s->nodes, s->n, sizeof(s->nodes[0]), node_cmp);
	size_t out = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct cg_node *prev = out > 0 ? &s->nodes[out - 1] : NULL;

		if (prev && strcmp(prev->path, s->nodes[i].path) == 0) {
			/* read twice: cut only if cut in both walks */
			if (!prev->ok && s->nodes[i].ok) {
				prev->ok = true;
				prev->st = s->nodes[i].st;
			}
			prev->cut &= s->nodes[i].cut;
			free(s->nodes[i].path);
			continue;
		}
		s->nodes[out++] = s->nodes[i];
	}
	s->n = out;
	return TREE_OK;
}

/* energy.info's last_sample_ns now is the one s was read with (or none). */
static bool same_module_sample(const struct tree *t, const struct sample *s)
{
	const char *then = info_get(&s->info, "last_sample_ns");
	char path[PATH_MAX + 32], buf[STAT_MAX_FILE];
	struct info now;
	size_t len;
	bool same;

	if (!then)
		return true;
	snprintf(path, sizeof(path), "%s/%s", t->root, CGE_INFO_FILE);
	if (read_small_file(path, buf, sizeof(buf), &len) != 0)
		return true;	/* the next sample will say what is wrong */
	info_parse(buf, len, &now);
	same = info_get(&now, "last_sample_ns") &&
	       strcmp(info_get(&now, "last_sample_ns"), then) == 0;
	info_free(&now);
	return same;
}

/* Whether another walk may follow one that straddled a module sample. */
static bool take_again(const struct tree *t, int walks, bool exact)
{
	if (!exact)
		return walks < TAKE_TRIES;
	if (t->deadline_ns)
		return clock_ns(CLOCK_MONOTONIC) < t->deadline_ns;
	return walks < TAKE_TRIES_EXACT;
}

/* Levels path is below the nearest PATH argument that holds it; -1: none. */
static int levels_below(const struct tree *t, const char *path)
{
	unsigned int lv = path_depth(path);
	int best = -1;

	for (size_t i = 0; i < t->npaths; i++) {
		const char *p = t->paths[i];
		int below;

		if (strcmp(p, "/") != 0 && !strip_prefix(path, p))
			continue;
		below = (int)(lv - path_depth(p));
		if (best < 0 || below < best)
			best = below;
	}
	return best;
}

/*
 * The rows of tf that the PATHs and --depth select into s, as a walk reads
 * them: a row at --depth below its nearest PATH is cut, the root's node has
 * the root-only keys. Returns 0, or -1 out of memory.
 */
static int tree_select(const struct tree *t, const struct tree_file *tf,
		       struct sample *s)
{
	const struct tree_row *root = treefile_find(tf, "/");

	s->root = root->st;	/* treefile_parse() makes sure there is one */
	for (int k = K_TOTAL_UJ; k < NKEYS; k++) {
		if (!stat_has(&tf->head, k))
			continue;
		s->root.v[k] = tf->head.v[k];
		s->root.present |= 1u << k;
	}
	for (size_t i = 0; i < tf->n; i++) {
		const struct tree_row *r = &tf->rows[i];
		int below = levels_below(t, r->path);
		struct cg_node *n;

		if (below < 0 || (t->max_depth >= 0 && below > t->max_depth))
			continue;
		n = node_add(s, r->path, path_depth(r->path));
		if (!n)
			return -1;
		n->ok = true;
		n->cut = t->max_depth >= 0 && below == t->max_depth;
		n->st = r == root ? s->root : r->st;
	}
	if (s->n > 1)
		qsort(s->nodes, s->n, sizeof(s->nodes[0]), node_cmp);
	return 0;
}

/* energy.info's samples is tf's sample, or one of them does not say. */
static bool info_of_sample(const struct info *info, const struct tree_file *tf)
{
	uint64_t n;

	return !tf->has_sample || !info_u64(info, "samples", &n) ||
	       n == tf->sample;
}

/*
 * A sample from energy.tree: every cgroup from one module sample, so no
 * read straddles one and none is torn. energy.info is read after it, for
 * the time of that sample (last_sample_ns): when the module sampled again
 * between the two reads (energy.info's samples past the tree's sample), up
 * to TAKE_TRIES reads, else the last one as it is. *absent when there is
 * no energy.tree: the caller walks the tree.
 */
static enum tree_rc tree_take(const struct tree *t, struct sample *s,
			      struct diag *d, bool *absent)
{
	char file[MSG_PATH + 16];
	struct tree_file tf;
	struct parse_err pe;
	int err;

	*absent = false;
	for (int reads = 1; ; reads++) {
		memset(s, 0, sizeof(*s));
		err = tree_file_read(t, &tf, &pe, &s->info);
		s->mono_ns = clock_ns(CLOCK_MONOTONIC);
		s->real_ns = clock_ns(CLOCK_REALTIME);
		if (err < 0)
			info_free(&s->info);
		if (err == ENOENT) {
			*absent = true;
			return TREE_OK;
		}
		if (err > 0) {
			diagnose_root(t, CGE_TREE_FILE, false, err);
			return TREE_FATAL;
		}
		if (err < 0) {
			tree_file_shown(t, file, sizeof(file));
			parse_error(d, file, &pe);
			return TREE_FATAL;
		}
		if (info_of_sample(&s->info, &tf) || reads >= TAKE_TRIES ||
		    (t->deadline_ns && clock_ns(CLOCK_MONOTONIC) > t->deadline_ns))
			break;
		treefile_free(&tf);
		info_free(&s->info);
	}
	err = tree_select(t, &tf, s);
	treefile_free(&tf);
	if (err < 0) {
		diag_msg("out of memory");
		sample_free(s);
		return TREE_FATAL;
	}
	if (t->deadline_ns && clock_ns(CLOCK_MONOTONIC) > t->deadline_ns) {
		sample_free(s);
		return TREE_LATE;
	}
	s->torn = series_own(s);
	return TREE_OK;
}

/*
 * A sample read between two of the module's samples (energy.info's
 * last_sample_ns the same after the walk as before it), so that a parent
 * and its children count the same intervals and the own values (series.c)
 * add up to the root's exactly: up to TAKE_TRIES walks, else the last one
 * that finished before t->deadline_ns. Unless t->exact and some own value
 * is derived from several files (a module without own_ keys; a cgroup
 * --depth cuts in one PATH's walk with a descendant read in another's):
 * one read across a sample could go down at the next read, a counter reset
 * to Prometheus. Then up to
 * TAKE_TRIES_EXACT walks, or as many as t->deadline_ns allows, and else
 * TREE_TORN. series_own clamps what does not add up, counted in s->torn.
 */
static enum tree_rc take(const struct tree *t, struct sample *s, struct diag *d)
{
	struct sample next;
	enum tree_rc rc;
	bool absent;

	rc = tree_take(t, s, d, &absent);
	if (!absent)
		return rc;
	rc = sample_read(t, s, d);

	for (int walks = 1; rc == TREE_OK; walks++) {
		bool exact;

		s->torn = series_own(s);
		if (same_module_sample(t, s))
			return TREE_OK;
		exact = t->exact && s->derived;
		if (!take_again(t, walks, exact)) {
			if (!exact)
				return TREE_OK;
			rc = TREE_TORN;
			break;
		}
		rc = sample_read(t, &next, d);
		if (rc == TREE_LATE && !exact) {
			sample_free(&next);
			return TREE_OK;		/* the last walk, as it is */
		}
		sample_free(s);
		*s = next;
	}
	sample_free(s);
	return rc;
}

/* A sample (take()) with the names of its pods and containers when t has them. */
enum tree_rc sample_take(const struct tree *t, struct sample *s, struct diag *d)
{
	enum tree_rc rc = take(t, s, d);

	if (rc == TREE_OK && t->names)
		names_apply(t->names, s);
	return rc;
}

const struct cg_node *sample_find(const struct sample *s, const char *path)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = path_cmp(s->nodes[mid].path, path);

		if (c == 0)
			return &s->nodes[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void sample_free(struct sample *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->nodes[i].path);
	free(s->nodes);
	info_free(&s->info);
	memset(s, 0, sizeof(*s));
}
