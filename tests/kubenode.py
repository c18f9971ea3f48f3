# SPDX-License-Identifier: GPL-2.0
"""Fixture trees shaped like a Kubernetes node for energystat's names
(userspace/names.c): a cgroup_energy tree (fixtree.Tree) whose cgroups are
named as the kubelet and the runtime name them, and beside it a runtime
state root (energystat --runtime-root) holding the OCI bundles that the CRI
runtimes write, each with a config.json whose annotations are those the
runtime writes.

Where each layout and key comes from:

containerd (CRI plugin, runc v2 shim)
  bundle  <root>/run/containerd/io.containerd.runtime.v2.task/k8s.io/<id>/config.json
          containerd core/runtime/v2/bundle.go (NewBundle: <state>/<ns>/<id>,
          the spec written as config.json), the CRI plugin's containerd
          namespace "k8s.io" in pkg/cri/constants/constants.go
  keys    io.kubernetes.cri.container-type ("sandbox" | "container"),
          io.kubernetes.cri.sandbox-name, io.kubernetes.cri.sandbox-namespace,
          io.kubernetes.cri.sandbox-uid, io.kubernetes.cri.sandbox-id, and for
          a container io.kubernetes.cri.container-name and .image-name:
          containerd pkg/cri/annotations/annotations.go (DefaultCRIAnnotations)
  cgroup  systemd driver: <pod slice>/cri-containerd-<id>.scope
          (cgroupsPath "<pod slice>:cri-containerd:<id>"); cgroupfs driver:
          kubepods/<qos>/pod<uid>/<id>

CRI-O
  bundle  <root>/run/containers/storage/overlay-containers/<id>/userdata/config.json
          containers/storage store.go (<runroot>/<driver>-containers) and
          containers.go (<id>/userdata), CRI-O's container run directory
  keys    io.kubernetes.cri-o.ContainerType (cri-o pkg/annotations/internal.go)
          and the kubelet's labels io.kubernetes.pod.name,
          io.kubernetes.pod.namespace, io.kubernetes.pod.uid and, for a
          container, io.kubernetes.container.name, which CRI-O copies into
          the spec's annotations (cri-o server/container_create_linux.go;
          the kubelet's label keys: kubernetes pkg/kubelet/types/labels.go)
  cgroup  systemd driver: <pod slice>/crio-<id>.scope (cgroupsPath
          "<pod slice>:crio:<id>"); cgroupfs driver: kubepods/<qos>/pod<uid>/<id>

Who wins a key both the pod's author and the runtime write (the order the
runtime adds them to the spec; the last write stays): crio_layers() and
containerd_layers() below.

Pod slices and directories as in tests/test_exporter.py (the kubelet's
pkg/kubelet/cm/cgroup_manager_linux.go: '-' of a uid become '_' in unit
names)."""

import json
import os

from fixtree import Tree, root_keys

CONTAINERD_DIR = "run/containerd/io.containerd.runtime.v2.task/k8s.io"
CRIO_DIR = "run/containers/storage/overlay-containers"
PAUSE = "registry.k8s.io/pause:3.9"


def hexid(seed):
    """A 64-hex container id made from a small number."""
    return f"{seed:016x}" * 4


def containerd_annotations(pod, sandbox_id, container=None, image=None):
    """The annotations containerd's CRI plugin writes (DefaultCRIAnnotations):
    container None is the pod's sandbox."""
    a = {"io.kubernetes.cri.sandbox-id": sandbox_id,
         "io.kubernetes.cri.sandbox-namespace": pod["namespace"],
         "io.kubernetes.cri.sandbox-uid": pod["uid"],
         "io.kubernetes.cri.sandbox-name": pod["name"]}
    if container is None:
        a["io.kubernetes.cri.sandbox-log-directory"] = (
            f"/var/log/pods/{pod['namespace']}_{pod['name']}_{pod['uid']}")
        a["io.kubernetes.cri.container-type"] = "sandbox"
    else:
        a["io.kubernetes.cri.container-name"] = container
        a["io.kubernetes.cri.image-name"] = image or "docker.io/library/nginx:1.25"
        a["io.kubernetes.cri.container-type"] = "container"
    return a


def crio_annotations(pod, sandbox_id, container=None):
    """The annotations CRI-O writes: the kubelet's labels plus its own keys."""
    a = {"io.kubernetes.pod.name": pod["name"],
         "io.kubernetes.pod.namespace": pod["namespace"],
         "io.kubernetes.pod.uid": pod["uid"],
         "io.kubernetes.cri-o.SandboxID": sandbox_id,
         "io.kubernetes.cri-o.ContainerType":
             "sandbox" if container is None else "container"}
    if container is not None:
        a["io.kubernetes.container.name"] = container
    return a


def layered(*layers):
    """Annotations added layer after layer, a later layer's key winning, as
    the runtimes' g.AddAnnotation / WithAnnotation calls overwrite."""
    out = {}
    for layer in layers:
        out.update(layer)
    return out


def crio_layers(pod, sandbox_id, container, pod_annotations):
    """A CRI-O bundle's annotations where the pod's author set
    pod_annotations. Sandbox (cri-o server/sandbox_run_linux.go
    runPodSandbox): CRI-O's own io.kubernetes.cri-o.* keys, then the pod's
    annotations, then the kubelet's labels (its pod labels plus
    io.kubernetes.pod.*, kubernetes pkg/kubelet/kuberuntime/labels.go
    newPodLabels) with io.kubernetes.container.name "POD". Container (cri-o
    internal/factory/container/container.go SpecAddAnnotations): the pod's
    annotations, then CRI-O's own keys, then the container's (kubelet's)
    annotations, then its labels (newContainerLabels)."""
    kube = {"io.kubernetes.pod.name": pod["name"],
            "io.kubernetes.pod.namespace": pod["namespace"],
            "io.kubernetes.pod.uid": pod["uid"]}
    meta = {"name": pod["name"], "uid": pod["uid"],
            "namespace": pod["namespace"], "attempt": 0}
    own = {"io.kubernetes.cri-o.SandboxID": sandbox_id,
           "io.kubernetes.cri-o.Namespace": pod["namespace"],
           "io.kubernetes.cri-o.ContainerType":
               "sandbox" if container is None else "container"}
    if container is None:
        labels = {**kube, "io.kubernetes.container.name": "POD"}
        own["io.kubernetes.cri-o.Labels"] = json.dumps(labels)
        own["io.kubernetes.cri-o.Metadata"] = json.dumps(meta)
        return layered(own, pod_annotations, labels)
    labels = {**kube, "io.kubernetes.container.name": container}
    own["io.kubernetes.cri-o.Labels"] = json.dumps(labels)
    own["io.kubernetes.cri-o.Metadata"] = json.dumps({"name": container, "attempt": 0})
    return layered(pod_annotations, own, {"io.kubernetes.container.hash": "1"}, labels)


def containerd_layers(pod, sandbox_id, container, pod_annotations):
    """A containerd bundle's annotations where the pod's author set
    pod_annotations and the runtime's pod_annotations lets them all pass:
    the passed annotations first, then DefaultCRIAnnotations (containerd
    internal/cri/server/podsandbox/sandbox_run_linux.go
    sandboxContainerSpec, internal/cri/server/container_create.go
    buildLinuxSpec)."""
    return layered(pod_annotations,
                   containerd_annotations(pod, sandbox_id, container))


def oci_spec(annotations, cgroups_path):
    """A config.json (OCI runtime spec) trimmed to what a reader meets first."""
    return {"ociVersion": "1.1.0",
            "process": {"user": {"uid": 0, "gid": 0}, "args": ["/pause"],
                        "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"],
                        "cwd": "/"},
            "root": {"path": "rootfs", "readonly": True},
            "annotations": annotations,
            "linux": {"cgroupsPath": cgroups_path,
                      "namespaces": [{"type": "pid"}, {"type": "ipc"},
                                     {"type": "uts"}, {"type": "mount"}]}}


class Node:
    """A cgroup_energy tree at <base>/ce and a runtime root at <base>/rt."""

    def __init__(self, base, runtime, driver):
        assert runtime in ("containerd", "cri-o") and driver in ("systemd", "cgroupfs")
        self.runtime, self.driver = runtime, driver
        self.tree = Tree(os.path.join(base, "ce"), info={"source": "model"})
        self.rt = os.path.join(base, "rt")
        os.makedirs(self.rt, exist_ok=True)
        self.cgroups = {}       # cgroup path -> energy_uj of its own tasks

    def bundle_dir(self, cid):
        if self.runtime == "containerd":
            return os.path.join(self.rt, CONTAINERD_DIR, cid)
        return os.path.join(self.rt, CRIO_DIR, cid, "userdata")

    def config_path(self, cid):
        return os.path.join(self.bundle_dir(cid), "config.json")

    def write_config(self, cid, data):
        """config.json of container cid, verbatim (bytes or a dict as JSON)."""
        os.makedirs(self.bundle_dir(cid), exist_ok=True)
        if isinstance(data, dict):
            data = json.dumps(data, indent=2).encode()
        with open(self.config_path(cid), "wb") as f:
            f.write(data)

    def pod_cgroup(self, pod):
        qos, uid = pod["qos"], pod["uid"]
        if self.driver == "systemd":
            sd = uid.replace("-", "_")
            if qos == "guaranteed":
                return f"/kubepods.slice/kubepods-pod{sd}.slice"
            return (f"/kubepods.slice/kubepods-{qos}.slice/"
                    f"kubepods-{qos}-pod{sd}.slice")
        if qos == "guaranteed":
            return f"/kubepods/pod{uid}"
        return f"/kubepods/{qos}/pod{uid}"

    def container_cgroup(self, pod, cid):
        prefix = {"containerd": "cri-containerd", "cri-o": "crio"}[self.runtime]
        if self.driver == "systemd":
            return f"{self.pod_cgroup(pod)}/{prefix}-{cid}.scope"
        return f"{self.pod_cgroup(pod)}/{cid}"

    def cgroups_path(self, pod, cid):
        """linux.cgroupsPath as the runtime writes it for the driver."""
        if self.driver == "systemd":
            slice_ = self.pod_cgroup(pod).rsplit("/", 1)[1]
            prefix = {"containerd": "cri-containerd", "cri-o": "crio"}[self.runtime]
            return f"{slice_}:{prefix}:{cid}"
        return f"{self.pod_cgroup(pod)}/{cid}"

    def annotations(self, pod, sandbox_id, container=None):
        if self.runtime == "containerd":
            return containerd_annotations(pod, sandbox_id, container)
        return crio_annotations(pod, sandbox_id, container)

    def add_pod(self, pod, containers, energy_uj=1_000_000):
        """A pod: its sandbox and containers (name -> id), cgroups and
        bundles. Returns {name or None (the sandbox): container id}."""
        ids = {None: pod["sandbox"], **containers}
        self.cgroups[self.pod_cgroup(pod)] = energy_uj
        for name, cid in ids.items():
            self.cgroups[self.container_cgroup(pod, cid)] = energy_uj
            self.write_config(cid, oci_spec(
                self.annotations(pod, pod["sandbox"], name),
                self.cgroups_path(pod, cid)))
        return ids

    def build(self):
        """Write every cgroup's energy.stat: own energy plus descendants'."""
        cgs = dict(self.cgroups)
        for path in list(cgs):
            parts = path.strip("/").split("/")
            for i in range(1, len(parts)):
                cgs.setdefault("/" + "/".join(parts[:i]), 0)
        for path in cgs:
            below = sum(e for c, e in cgs.items() if c.startswith(path + "/"))
            self.tree.add(path, energy_uj=cgs[path] + below)
        e = sum(cgs.values()) + 1_000_000
        self.tree.add("/", energy_uj=e, **root_keys(e))
        return self


WEB = dict(name="web-7d9f8c6b5-x2x4q", namespace="shop", qos="burstable",
           uid="5f1c3a2b-8d4e-4f6a-9b0c-1d2e3f4a5b6c", sandbox=hexid(0x51))
DB = dict(name="db-0", namespace="shop", qos="guaranteed",
          uid="0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", sandbox=hexid(0x52))


def standard_node(base, runtime, driver):
    """Two pods: web (burstable; containers nginx and a sidecar) and db
    (guaranteed; postgres). Returns (node, {pod name: {container: id}})."""
    n = Node(base, runtime, driver)
    ids = {WEB["name"]: n.add_pod(WEB, {"nginx": hexid(0x61),
                                        "log-shipper": hexid(0x62)}),
           DB["name"]: n.add_pod(DB, {"postgres": hexid(0x63)})}
    return n.build(), ids
