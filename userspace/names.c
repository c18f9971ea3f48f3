// SPDX-License-Identifier: GPL-2.0
/*
 * names.c - the kubelet's names of a cgroup's pod and container, read from
 * the OCI runtime bundles that the CRI runtimes keep on the node: no API
 * server, no network. A bundle's config.json (the OCI runtime spec) holds
 * annotations that the runtime wrote when it created the container:
 *
 * containerd's CRI plugin: io.kubernetes.cri.container-type ("sandbox" for
 * the pod's pause container, else "container"), .sandbox-name,
 * .sandbox-namespace, .sandbox-uid, and for a container .container-name
 * (containerd pkg/cri/annotations/annotations.go, DefaultCRIAnnotations).
 * The v2 shim's bundle is <state>/<namespace>/<id> (containerd
 * core/runtime/v2/bundle.go, NewBundle) with the state directory
 * /run/containerd/io.containerd.runtime.v2.task and the CRI plugin's
 * containerd namespace k8s.io (containerd pkg/cri/constants/constants.go).
 *
 * CRI-O: the kubelet's labels io.kubernetes.pod.name, .pod.namespace,
 * .pod.uid and .container.name, which CRI-O copies into the spec's
 * annotations (cri-o server/container_create_linux.go), and
 * io.kubernetes.cri-o.ContainerType (cri-o pkg/annotations/internal.go).
 * The bundle is the container's run directory in containers/storage,
 * <runroot>/<driver>-containers/<id>/userdata (containers/storage store.go
 * and containers.go): /run/containers/storage/overlay-containers/<id>/userdata.
 *
 * The bundle directories are listed again for each sample; ids no longer
 * listed are forgotten, so the cache holds the node's containers and no
 * more. A bundle with names is read once per container id (its config.json
 * does not change while the container exists). One without names (half
 * written: the runtime creates the directory before it writes config.json;
 * or no CRI annotations at all, as rootful podman's containers in CRI-O's
 * directory) is read again only when its config.json's identity (device,
 * inode, size, mtime, ctime from fstat of the open file) changes: each
 * sample opens and fstat()s it, nothing more. Below the bundle directory no
 * symbolic link is followed; a config.json larger than NAMES_MAX_CONFIG,
 * not a regular file, not JSON, or whose names are not valid Kubernetes
 * names is ignored: that container keeps its ids only.
 *
 * Who can write the keys read here (a pod's author must not name another
 * namespace): containerd applies the pod annotations it passes through
 * (only those the runtime's pod_annotations allows) before its own keys,
 * which win (containerd internal/cri/server/podsandbox/sandbox_run_linux.go
 * sandboxContainerSpec, internal/cri/server/container_create.go
 * buildLinuxSpec: GetPassthroughAnnotations, then DefaultCRIAnnotations).
 * CRI-O copies the pod's annotations to the top level, but the kubelet's
 * labels last, which win (cri-o server/sandbox_run_linux.go runPodSandbox,
 * internal/factory/container/container.go SpecAddAnnotations); the kubelet
 * sets io.kubernetes.pod.name, .namespace, .uid (and .container.name) after
 * the pod's own labels (kubernetes pkg/kubelet/kuberuntime/labels.go
 * newPodLabels, newContainerLabels). In CRI-O's sandbox the pod's
 * annotations do override CRI-O's own io.kubernetes.cri-o.* keys (there
 * .ContainerType, .Labels, .Metadata), so no name is read from those: a
 * forged ContainerType "container" meets the label container.name "POD",
 * no Kubernetes name, and the sandbox is left unnamed.
 *
 * JSON is parsed by Jansson: strict RFC 8259 (invalid UTF-8 and NUL in
 * strings refused, so a name printed as a label or in JSON is valid text).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "names.h"
#include "stat.h"

#define ID_LEN		64
#define DNS_LABEL	63	/* namespace, container name (RFC 1123 label) */
#define DNS_SUBDOMAIN	253	/* pod name (RFC 1123 subdomain) */

/* the annotation keys a runtime writes */
struct keys {
	const char *type, *pod, *ns, *uid, *container;
};

static const struct source {
	const char *dir;	/* bundle directories' parent, below the root */
	const char *sub;	/* the bundle below <dir>/<id>; NULL: <dir>/<id> */
	struct keys k;
} sources[] = {
	{ "/run/containerd/io.containerd.runtime.v2.task/k8s.io", NULL,
	  { "io.kubernetes.cri.container-type", "io.kubernetes.cri.sandbox-name",
	    "io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-uid",
	    "io.kubernetes.cri.container-name" } },
	{ "/run/containers/storage/overlay-containers", "userdata",
	  { "io.kubernetes.cri-o.ContainerType", "io.kubernetes.pod.name",
	    "io.kubernetes.pod.namespace", "io.kubernetes.pod.uid",
	    "io.kubernetes.container.name" } },
};

/* what fstat says of a config.json: another value, another file or content */
struct ident {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim, ctim;
};

struct entry {
	char id[ID_LEN + 1];
	bool named;		/* read and valid: the names below are set */
	bool seen;		/* listed in this pass */
	bool known;		/* at: the config.json last read (opened) */
	struct ident at;
	bool sandbox;		/* the pod's sandbox (pause) container */
	char uid[65];		/* the pod's uid, empty when not annotated */
	char pod[DNS_SUBDOMAIN + 1];
	char ns[DNS_LABEL + 1];
	char container[DNS_LABEL + 1];	/* empty for a sandbox */
};

struct names {
	char *root;		/* no trailing slash: "" for / */
	struct entry *e;	/* sorted by id between passes */
	size_t n, cap;
	char *buf;		/* the largest config.json read yet, kept */
	size_t bufcap;
};

struct names *names_new(const char *root)
{
	struct names *nm = calloc(1, sizeof(*nm));
	size_t n;

	if (!nm)
		return NULL;
	nm->root = strdup(root);
	if (!nm->root) {
		free(nm);
		return NULL;
	}
	n = strlen(nm->root);
	while (n > 0 && nm->root[n - 1] == '/')
		nm->root[--n] = '\0';
	return nm;
}

void names_free(struct names *nm)
{
	if (!nm)
		return;
	free(nm->root);
	free(nm->e);
	free(nm->buf);
	free(nm);
}

static bool is_id(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == ID_LEN;
}

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/*
 * A Kubernetes name: lower-case letters, digits and '-' (and '.' when dots),
 * starting and ending with a letter or digit, 1 to max bytes. Copied to dst.
 */
static bool set_name(char *dst, const json_t *v, size_t max, bool dots)
{
	const char *s = json_string_value(v);
	size_t n = s ? json_string_length(v) : 0;

	if (n == 0 || n > max || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && !(dots && s[i] == '.'))
			return false;
	memcpy(dst, s, n + 1);
	return true;
}

/* A pod uid as the API server writes it (a UUID; a static pod's is a hash). */
static bool set_uid(char *dst, const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = s ? json_string_length(v) : 0;

	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      s[i] == '-'))
			return false;
	memcpy(dst, s, n + 1);
	return true;
}

/* The names in a bundle's annotations; e->named when all that apply are valid. */
static void take_names(const json_t *ann, const struct keys *k, struct entry *e)
{
	const char *type = json_string_value(json_object_get(ann, k->type));
	const json_t *uid = json_object_get(ann, k->uid);

	if (!type)
		return;
	e->sandbox = strcmp(type, "sandbox") == 0;
	if (!e->sandbox && strcmp(type, "container") != 0)
		return;
	if (uid && !set_uid(e->uid, uid))
		return;
	if (!set_name(e->pod, json_object_get(ann, k->pod), DNS_SUBDOMAIN, true) ||
	    !set_name(e->ns, json_object_get(ann, k->ns), DNS_LABEL, false))
		return;
	if (!e->sandbox &&
	    !set_name(e->container, json_object_get(ann, k->container),
		      DNS_LABEL, false))
		return;
	e->named = true;
}

/* Parse a config.json; anything but an object with an "annotations" object: no names. */
static void parse_config(const char *buf, size_t len, const struct keys *k,
			 struct entry *e)
{
	json_error_t err;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	const json_t *ann;

	if (!root)
		return;
	ann = json_object_get(root, "annotations");
	if (json_is_object(ann))
		take_names(ann, k, e);
	json_decref(root);
}

/* openat() of a directory below dfd, no symbolic link followed */
static int open_dir_at(int dfd, const char *name)
{
	return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Open <id>[/<sub>]/config.json below the bundles' directory dfd; -1 if none. */
static int open_config(int dfd, const struct source *src, const char *id)
{
	int fd = open_dir_at(dfd, id), cfd;

	if (fd >= 0 && src->sub) {
		int sub = open_dir_at(fd, src->sub);

		close(fd);
		fd = sub;
	}
	if (fd < 0)
		return -1;
	cfd = openat(fd, "config.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(fd);
	return cfd;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static bool same_ident(const struct ident *a, const struct ident *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       same_time(&a->mtim, &b->mtim) && same_time(&a->ctim, &b->ctim);
}

/* nm->buf holding at least n bytes (kept for the next bundle); false on ENOMEM */
static bool fit_buf(struct names *nm, size_t n)
{
	char *nb;

	if (n <= nm->bufcap)
		return true;
	nb = realloc(nm->buf, n);
	if (!nb)
		return false;
	nm->buf = nb;
	nm->bufcap = n;
	return true;
}

/*
 * Read e's bundle into e unless e is unnamed and its config.json is the one
 * already read (same identity). The buffer is sized from st_size: a file
 * that grows meanwhile fails the read and, its identity changed, is read
 * at the next pass.
 */
static void read_bundle(struct names *nm, int dfd, const struct source *src,
			struct entry *e)
{
	int cfd = open_config(dfd, src, e->id);
	struct ident id;
	struct stat sb;
	size_t len;

	if (cfd < 0) {
		e->known = false;
		return;
	}
	if (fstat(cfd, &sb) < 0) {
		e->known = false;
		close(cfd);
		return;
	}
	id = (struct ident){ sb.st_dev, sb.st_ino, sb.st_size, sb.st_mtim, sb.st_ctim };
	if (e->known && same_ident(&e->at, &id)) {
		close(cfd);
		return;
	}
	e->named = e->sandbox = false;
	e->uid[0] = e->pod[0] = e->ns[0] = e->container[0] = '\0';
	e->known = true;
	e->at = id;
	if (!S_ISREG(sb.st_mode) || sb.st_size < 0 ||
	    (size_t)sb.st_size > NAMES_MAX_CONFIG)
		goto out;
	if (!fit_buf(nm, (size_t)sb.st_size + 1))
		e->known = false;	/* ENOMEM: try again next pass */
	else if (read_small_fd(cfd, nm->buf, (size_t)sb.st_size + 1, &len) == 0)
		parse_config(nm->buf, len, &src->k, e);
out:
	close(cfd);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->id, ((const struct entry *)b)->id);
}

/* the entry of container id among the first n (sorted), or NULL */
static struct entry *find(const struct names *nm, size_t n, const char *id)
{
	struct entry key;

	memcpy(key.id, id, ID_LEN + 1);
	return bsearch(&key, nm->e, n, sizeof(*nm->e), entry_cmp);
}

/* A new entry at the end, read from its bundle; false on ENOMEM. */
static bool add(struct names *nm, int dfd, const struct source *src,
		const char *id)
{
	struct entry *e;

	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? nm->cap * 2 : 64;
		struct entry *ne = realloc(nm->e, cap * sizeof(*ne));

		if (!ne)
			return false;
		nm->e = ne;
		nm->cap = cap;
	}
	e = &nm->e[nm->n++];
	memset(e, 0, sizeof(*e));
	memcpy(e->id, id, ID_LEN + 1);
	e->seen = true;
	read_bundle(nm, dfd, src, e);
	return true;
}

/* List one runtime's bundles: mark the known ids seen, read the new ones. */
static void list_source(struct names *nm, const struct source *src, size_t known)
{
	char path[4096];
	struct dirent *de;
	DIR *d;
	int dfd;

	if ((size_t)snprintf(path, sizeof(path), "%s%s", nm->root, src->dir) >=
	    sizeof(path))
		return;
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		struct entry *e;

		if (!is_id(de->d_name))
			continue;
		e = find(nm, known, de->d_name);
		if (e && !e->named)	/* half written then, or no names at all */
			read_bundle(nm, dirfd(d), src, e);
		if (e)
			e->seen = true;
		else if (!add(nm, dirfd(d), src, de->d_name))
			break;
	}
	closedir(d);
}

/* The bundles now: known ids kept, new ones read, gone ones dropped. */
static void names_list(struct names *nm)
{
	size_t known = nm->n, out = 0;

	for (size_t i = 0; i < nm->n; i++)
		nm->e[i].seen = false;
	for (size_t s = 0; s < ARRAY_SIZE(sources); s++)
		list_source(nm, &sources[s], known);
	for (size_t i = 0; i < nm->n; i++)
		if (nm->e[i].seen)
			nm->e[out++] = nm->e[i];
	nm->n = out;
	if (nm->n > 1)
		qsort(nm->e, nm->n, sizeof(*nm->e), entry_cmp);
}

/* The names of pod uid: its sandbox's, else any of its containers'. */
static const struct entry *pod_entry(const struct names *nm, const char *uid)
{
	const struct entry *any = NULL;

	for (size_t i = 0; i < nm->n; i++) {
		const struct entry *e = &nm->e[i];

		if (!e->named || strcmp(e->uid, uid) != 0)
			continue;
		if (e->sandbox)
			return e;
		if (!any)
			any = e;
	}
	return any;
}

/*
 * A container's names, unless its bundle says another pod than its cgroup
 * path (a self-consistency check: then neither is trusted).
 */
static void name_container(const struct names *nm, struct workload *wl)
{
	const struct entry *e = find(nm, nm->n, wl->container_id);

	if (!e || !e->named ||
	    (wl->pod_uid[0] && e->uid[0] && strcmp(wl->pod_uid, e->uid) != 0))
		return;
	strcpy(wl->pod, e->pod);
	strcpy(wl->namespace, e->ns);
	strcpy(wl->container, e->container);
	wl->container_type = e->sandbox ? "sandbox" : "container";
}

void names_apply(struct names *nm, struct sample *s)
{
	names_list(nm);
	for (size_t i = 0; i < s->n; i++) {
		struct workload *wl = &s->nodes[i].wl;
		const struct entry *e;

		if (wl->container_id[0]) {
			name_container(nm, wl);
		} else if (wl->pod_uid[0]) {
			e = pod_entry(nm, wl->pod_uid);
			if (e) {
				strcpy(wl->pod, e->pod);
				strcpy(wl->namespace, e->ns);
			}
		}
	}
}
