// SPDX-License-Identifier: GPL-2.0
/*
 * workload.c - what a cgroup runs, from the names that the kubelet, the
 * container runtimes and systemd give their cgroups. Pure: a path in, a
 * struct workload out, no I/O.
 *
 * Kubernetes, systemd cgroup driver (the kubelet writes a pod uid's dashes
 * as underscores in unit names; they are turned back into dashes here):
 *   kubepods.slice/kubepods-pod<uid>.slice                 Guaranteed pod
 *   kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice
 *   <pod slice>/cri-containerd-<id>.scope, crio-<id>.scope or docker-<id>.scope
 * Kubernetes, cgroupfs driver:
 *   kubepods/pod<uid>/<id>                                 Guaranteed pod
 *   kubepods/<qos>/pod<uid>/<id>
 * Containers outside Kubernetes: docker-<id>.scope, libpod-<id>.scope
 * (Podman), and with cgroupfs docker/<id> and libpod_parent/libpod-<id>.
 *
 * <qos> is burstable or besteffort, <id> 64 lower-case hex digits. A pod
 * slice is recognised by how its name ends, so a kubelet --cgroup-root that
 * prefixes the names (kubelet-kubepods-...) changes nothing. Cgroups below a
 * pod or a container (a container's own sub-cgroups) belong to it; the
 * outermost pod and container win. The unit is the innermost path component
 * named like a systemd unit; unit_own says it is the component that gave
 * the pod uid or the container id (its own slice or scope), so that a
 * Prometheus series need not say the same id twice.
 */
#include <stdio.h>
#include <string.h>

#include "workload.h"

#define ID_LEN	64

struct comp {
	const char *p;
	size_t n;
};

static bool comp_is(const struct comp *c, const char *s)
{
	return strlen(s) == c->n && memcmp(c->p, s, c->n) == 0;
}

static bool has_suffix(const char *p, size_t n, const char *s)
{
	size_t k = strlen(s);

	return n >= k && memcmp(p + n - k, s, k) == 0;
}

static bool has_prefix(const char *p, size_t n, const char *s)
{
	size_t k = strlen(s);

	return n >= k && memcmp(p, s, k) == 0;
}

static bool is_id(const char *p, size_t n)
{
	if (n != ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return true;
}

static void copy(char *dst, size_t sz, const char *p, size_t n)
{
	if (n >= sz)
		n = sz - 1;
	memcpy(dst, p, n);
	dst[n] = '\0';
}

/*
 * A pod uid as written in a name: hex digits and `sep` (the kubelet's uids
 * are UUIDs; a static pod's is a hash without dashes). Stored with dashes.
 */
static bool set_uid(struct workload *wl, const char *p, size_t n, char sep)
{
	if (n == 0 || n >= sizeof(wl->pod_uid))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f') ||
		      p[i] == sep))
			return false;
	for (size_t i = 0; i < n; i++)
		wl->pod_uid[i] = p[i] == '_' ? '-' : p[i];
	wl->pod_uid[n] = '\0';
	return true;
}

static const char *const qos_words[] = { "burstable", "besteffort" };

static const char *qos_word(const char *p, size_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(qos_words); i++)
		if (strlen(qos_words[i]) == n && memcmp(p, qos_words[i], n) == 0)
			return qos_words[i];
	return NULL;
}

/*
 * systemd driver: "...kubepods[-<qos>].slice" is a QoS slice,
 * "...kubepods[-<qos>]-pod<uid>.slice" a pod. Returns true for either.
 */
static bool systemd_kube(const struct comp *c, struct workload *wl)
{
	const char *k = NULL, *p, *end;

	if (!has_suffix(c->p, c->n, ".slice"))
		return false;
	end = c->p + c->n - strlen(".slice");
	for (p = c->p; p + 8 <= end; p++)	/* the last "kubepods" */
		if (memcmp(p, "kubepods", 8) == 0 && (p == c->p || p[-1] == '-'))
			k = p;
	if (!k)
		return false;
	p = k + 8;
	const char *qos = "guaranteed";

	if (p < end && *p == '-') {
		const char *dash = memchr(p + 1, '-', (size_t)(end - p - 1));
		size_t wn = (size_t)((dash ? dash : end) - (p + 1));

		if (qos_word(p + 1, wn)) {
			qos = qos_word(p + 1, wn);
			p += 1 + wn;
		}
	}
	if (p == end) {			/* kubepods.slice or a QoS slice */
		if (strcmp(qos, "guaranteed") != 0)
			copy(wl->qos, sizeof(wl->qos), qos, strlen(qos));
		return true;
	}
	if (!has_prefix(p, (size_t)(end - p), "-pod") ||
	    !set_uid(wl, p + 4, (size_t)(end - p - 4), '_'))
		return false;
	copy(wl->qos, sizeof(wl->qos), qos, strlen(qos));
	return true;
}

static const struct {
	const char *prefix;
	const char *runtime;
} runtimes[] = {
	{ "cri-containerd-", "containerd" }, { "crio-", "cri-o" },
	{ "docker-", "docker" }, { "libpod-", "podman" },
};

/* <prefix><id>.scope (systemd) or <prefix><id> (cgroupfs): a container. */
static bool runtime_container(const struct comp *c, struct workload *wl)
{
	size_t n = c->n;

	if (has_suffix(c->p, n, ".scope"))
		n -= strlen(".scope");
	for (size_t i = 0; i < ARRAY_SIZE(runtimes); i++) {
		size_t k = strlen(runtimes[i].prefix);

		if (has_prefix(c->p, n, runtimes[i].prefix) &&
		    is_id(c->p + k, n - k)) {
			copy(wl->container_id, sizeof(wl->container_id), c->p + k, ID_LEN);
			wl->runtime = runtimes[i].runtime;
			return true;
		}
	}
	return false;
}

static const char *const unit_suffixes[] = {
	".service", ".scope", ".slice", ".socket", ".mount", ".swap",
};

static bool is_unit(const struct comp *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(unit_suffixes); i++)
		if (c->n > strlen(unit_suffixes[i]) &&
		    has_suffix(c->p, c->n, unit_suffixes[i]))
			return true;
	return false;
}

void workload_parse(const char *path, struct workload *wl)
{
	/* where the parent sits in a cgroupfs-driver kubepods tree */
	enum { FS_NONE, FS_KUBEPODS, FS_QOS, FS_POD, FS_DOCKER } fs = FS_NONE;
	const char *p = path;
	unsigned int depth = 0, unit_at = 0, own_at = 0;

	memset(wl, 0, sizeof(*wl));
	while (*p) {
		struct comp c;
		bool pod = wl->pod_uid[0], ctr = wl->container_id[0];
		int next = FS_NONE;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		c.p = p;
		c.n = strcspn(p, "/");
		p += c.n;
		depth++;
		if (is_unit(&c) && c.n < sizeof(wl->unit)) {
			copy(wl->unit, sizeof(wl->unit), c.p, c.n);
			unit_at = depth;
		}
		if (ctr)
			continue;
		if (runtime_container(&c, wl) || (!pod && systemd_kube(&c, wl))) {
			if (wl->container_id[0] || (!pod && wl->pod_uid[0]))
				own_at = depth;
			continue;
		}
		if (comp_is(&c, "kubepods")) {
			next = FS_KUBEPODS;
		} else if (fs == FS_KUBEPODS && qos_word(c.p, c.n)) {
			copy(wl->qos, sizeof(wl->qos), c.p, c.n);
			next = FS_QOS;
		} else if ((fs == FS_KUBEPODS || fs == FS_QOS) && !pod &&
			   has_prefix(c.p, c.n, "pod") &&
			   set_uid(wl, c.p + 3, c.n - 3, '-')) {
			if (fs == FS_KUBEPODS)
				copy(wl->qos, sizeof(wl->qos), "guaranteed", 10);
			next = FS_POD;
		} else if ((fs == FS_POD || fs == FS_DOCKER) && is_id(c.p, c.n)) {
			copy(wl->container_id, sizeof(wl->container_id), c.p, c.n);
			wl->runtime = fs == FS_DOCKER ? "docker" : NULL;
		} else if (depth == 1 && comp_is(&c, "docker")) {
			next = FS_DOCKER;
		}
		fs = next;
	}
	wl->unit_own = unit_at && unit_at == own_at;
}

/*
 * The table's workload column, one word: with the names of names.c
 * "<namespace>/<pod>/<container>" ("(sandbox)" for the pod's pause
 * container, a word no container name can be) or "<namespace>/<pod>";
 * without, "pod:<uid:8>/<container id:12>", "pod:<uid:8>",
 * "<runtime>:<container id:12>", the unit, or "-". The short forms are the
 * prefixes that kubectl and docker users recognise; JSON and Prometheus
 * carry the whole ids.
 */
void workload_label(const struct workload *wl, char *buf, size_t sz)
{
	if (wl->pod[0] && wl->container_type)
		snprintf(buf, sz, "%s/%s/%s", wl->namespace, wl->pod,
			 wl->container[0] ? wl->container : "(sandbox)");
	else if (wl->pod[0])
		snprintf(buf, sz, "%s/%s", wl->namespace, wl->pod);
	else if (wl->pod_uid[0] && wl->container_id[0])
		snprintf(buf, sz, "pod:%.8s/%.12s", wl->pod_uid, wl->container_id);
	else if (wl->pod_uid[0])
		snprintf(buf, sz, "pod:%.8s", wl->pod_uid);
	else if (wl->container_id[0])
		snprintf(buf, sz, "%s:%.12s", wl->runtime ? wl->runtime : "container",
			 wl->container_id);
	else
		snprintf(buf, sz, "%s", wl->unit[0] ? wl->unit : "-");
}
