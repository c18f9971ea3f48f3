# SPDX-License-Identifier: GPL-2.0
"""Host tests of energystat's names (issue 42): pod, namespace and container
names from the CRI runtimes' OCI bundles (userspace/names.c, --runtime-root)
in the table, JSON and Prometheus labels, over fixture nodes
(tests/kubenode.py); and the recording rules that join the ids with
kube-state-metrics (dist/prometheus/cgroup-energy-names.rules.yml).

Run: /usr/bin/python3 -m pytest -q tests/test_names.py
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import need  # noqa: E402
from kubenode import (DB, WEB, containerd_layers, crio_layers,  # noqa: E402
                      hexid, oci_spec, standard_node)
from test_energystat import (prom_samples, promtool_check, run,  # noqa: E402,F401
                             table, tool)
from test_exporter import Exporter  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = os.path.join(REPO, "dist", "prometheus", "cgroup-energy-names.rules.yml")
NODES = [(r, d) for r in ("containerd", "cri-o") for d in ("systemd", "cgroupfs")]


def expected(node, ids):
    """cgroup path -> (namespace, pod, container or None, type or None)."""
    want = {}
    for pod in (WEB, DB):
        want[node.pod_cgroup(pod)] = (pod["namespace"], pod["name"], None, None)
        for name, cid in ids[pod["name"]].items():
            want[node.container_cgroup(pod, cid)] = (
                pod["namespace"], pod["name"], name,
                "sandbox" if name is None else "container")
    return want


def json_doc(tool, node, *args):
    out = run(tool, "--root", node.tree.path, "--runtime-root", node.rt,
              "--json", *args, check_rc=0).out
    return {c["path"]: c["workload"] for c in json.loads(out)["cgroups"]}


@pytest.mark.parametrize("runtime,driver", NODES)
def test_names_in_json(tool, tmp_path, runtime, driver):
    node, ids = standard_node(tmp_path, runtime, driver)
    got = json_doc(tool, node)
    for path, (ns, pod, ctr, typ) in expected(node, ids).items():
        wl = got[path]
        assert (wl.get("namespace"), wl.get("pod")) == (ns, pod), path
        assert wl.get("container") == ctr and wl.get("container_type") == typ, path
        assert "pod_uid" in wl, path            # the ids stay
    # cgroups that are no pod or container have no names
    for path, wl in got.items():
        if "pod_uid" not in wl:
            assert not {"pod", "namespace", "container"} & set(wl), path


@pytest.mark.parametrize("runtime,driver", NODES)
def test_names_in_table(tool, tmp_path, runtime, driver):
    node, ids = standard_node(tmp_path, runtime, driver)
    out = run(tool, "--root", node.tree.path, "--runtime-root", node.rt,
              "-s", "path", "--depth", "9", check_rc=0,
              env=dict(os.environ, COLUMNS="400")).out
    head, rows = table(out, workload=True)
    col = {path: cells[-1] for path, cells in rows}
    for path, (ns, pod, ctr, typ) in expected(node, ids).items():
        if typ is None:
            assert col[path] == f"{ns}/{pod}", path
        else:
            assert col[path] == f"{ns}/{pod}/{ctr or '(sandbox)'}", path


def series_labels(text, family="cgroup_energy_joules_total"):
    """[{label: value}] of a family's samples (values without escapes)."""
    out = []
    for key in prom_samples(text):
        if key.startswith(family + "{"):
            out.append(dict(re.findall(r'(\w+)="([^"]*)"', key)))
    return out


@pytest.mark.parametrize("runtime,driver", NODES)
def test_names_as_labels_one_per_fact(tool, tmp_path, runtime, driver):
    """pod, namespace and container labels; no id in two labels besides the
    cgroup path (the unit of a pod's own slice or a container's own scope is
    left out); promtool check metrics accepts the text."""
    node, ids = standard_node(tmp_path, runtime, driver)
    out = run(tool, "--root", node.tree.path, "--runtime-root", node.rt,
              "--prometheus", check_rc=0).out
    promtool_check(out)
    got = {s["cgroup"]: s for s in series_labels(out)}
    want = expected(node, ids)
    for path, (ns, pod, ctr, typ) in want.items():
        s = got[path]
        assert (s["namespace"], s["pod"]) == (ns, pod), path
        assert s.get("container") == (ctr if typ == "container" else None), path
    assert len(got) > len(want)         # the QoS and kubepods levels too
    for s in got.values():
        ids_ = [s[k] for k in ("pod_uid", "container_id") if k in s]
        for i in ids_:
            forms = {i, i.replace("-", "_")}
            holders = [k for k, v in s.items() if k != "cgroup"
                       and any(f in v for f in forms)]
            assert len(holders) == 1, (s, holders)
        if driver == "systemd" and "container_id" in s:
            assert "unit" not in s, s


def test_no_runtime_state_no_names(tool, tmp_path):
    """A runtime root without the runtimes' directories: ids only."""
    node, ids = standard_node(tmp_path, "containerd", "systemd")
    empty = tmp_path / "empty"
    empty.mkdir()
    out = run(tool, "--root", node.tree.path, "--runtime-root", empty,
              "--json", check_rc=0).out
    for c in json.loads(out)["cgroups"]:
        assert not {"pod", "namespace", "container"} & set(c["workload"])


BAD = {
    "malformed": b'{"annotations": {"io.kubernetes.cri.sandbox-name": ',
    "not_an_object": b'["annotations"]',
    "annotations_not_object": b'{"annotations": "x"}',
    "invalid_utf8": None,       # made below
    "oversized": None,
    "bad_name": None,
    "other_pod": None,
    "no_type": None,
    "duplicate_key": None,
}


def bad_config(node, kind, pod, cid):
    """config.json bytes of a bad kind for container cid of pod."""
    good = oci_spec(node.annotations(pod, pod["sandbox"], "nginx"),
                    node.cgroups_path(pod, cid))
    if BAD[kind] is not None:
        return BAD[kind]
    if kind == "invalid_utf8":
        return json.dumps(good).replace("nginx", "ngi\udcffnx", 1).encode(
            "utf-8", "surrogateescape")
    if kind == "oversized":
        good["process"]["env"].append("PAD=" + "x" * (1 << 20))
        return json.dumps(good).encode()
    ann = good["annotations"]
    if kind == "bad_name":
        key = next(k for k in ann if k.endswith(("container-name", "container.name")))
        ann[key] = "Nginx_Upper"
    elif kind == "other_pod":
        key = next(k for k in ann if k.endswith(("sandbox-uid", "pod.uid")))
        ann[key] = "11111111-2222-4333-8444-555555555555"
    elif kind == "no_type":
        for k in [k for k in ann if k.lower().endswith(("container-type", "containertype"))]:
            del ann[k]
    elif kind == "duplicate_key":
        text = json.dumps(good)
        return text.replace('"annotations": {', '"annotations": {"io.kubernetes.pod.name": "a", '
                            '"io.kubernetes.cri.sandbox-name": "a", '
                            '"io.kubernetes.pod.name": "b", '
                            '"io.kubernetes.cri.sandbox-name": "b", ', 1).encode()
    return json.dumps(good).encode()


@pytest.mark.parametrize("runtime", ["containerd", "cri-o"])
def test_bad_bundles_are_ignored_per_container(tool, tmp_path, runtime):
    """Each bad config.json (or a symbolic link, a FIFO, a directory) costs
    only its own container's names: ids kept, exit status 0, every other
    container named."""
    node, ids = standard_node(tmp_path, runtime, "systemd")
    bad = {}
    for i, kind in enumerate(list(BAD) + ["symlink_file", "symlink_dir",
                                          "fifo", "directory"]):
        cid = hexid(0x100 + i)
        bad[kind] = cid
        node.cgroups[node.container_cgroup(WEB, cid)] = 1000
        if kind == "symlink_file":
            target = tmp_path / "elsewhere.json"
            target.write_text(json.dumps(oci_spec(
                node.annotations(WEB, WEB["sandbox"], "sneaky"), "")))
            os.makedirs(node.bundle_dir(cid))
            os.symlink(target, node.config_path(cid))
        elif kind == "symlink_dir":
            real = tmp_path / "realbundle"
            node2_cfg = oci_spec(node.annotations(WEB, WEB["sandbox"], "sneaky"), "")
            os.makedirs(real)
            (real / "config.json").write_text(json.dumps(node2_cfg))
            link = node.bundle_dir(cid)
            if runtime == "cri-o":      # the id directory itself
                link = os.path.dirname(link)
            os.makedirs(os.path.dirname(link), exist_ok=True)
            if runtime == "cri-o":
                os.makedirs(real / "userdata")
                (real / "userdata" / "config.json").write_text(json.dumps(node2_cfg))
            os.symlink(real, link)
        elif kind == "fifo":
            os.makedirs(node.bundle_dir(cid))
            os.mkfifo(node.config_path(cid))
        elif kind == "directory":
            os.makedirs(node.config_path(cid))
        else:
            node.write_config(cid, bad_config(node, kind, WEB, cid))
    assert os.path.getsize(node.config_path(bad["oversized"])) > (1 << 20)
    node.build()
    got = json_doc(tool, node)
    for kind, cid in bad.items():
        wl = got[node.container_cgroup(WEB, cid)]
        assert wl["container_id"] == cid and wl["pod_uid"] == WEB["uid"], kind
        assert not {"pod", "namespace", "container"} & set(wl), (kind, wl)
    for path, (ns, pod, ctr, typ) in expected(node, ids).items():
        assert (got[path].get("pod"), got[path].get("container")) == (pod, ctr), path
    # the same bundles under --prometheus and the table: no failure either
    promtool_check(run(tool, "--root", node.tree.path, "--runtime-root",
                       node.rt, "--prometheus", check_rc=0).out)
    run(tool, "--root", node.tree.path, "--runtime-root", node.rt, check_rc=0)


def test_large_bundle_under_the_bound_is_read(tool, tmp_path):
    """The bound is the size: a config.json of 1 MiB less 4 KiB (a long
    environment, as a seccomp profile or many variables make) is read,
    so the oversized one above is refused for its size alone."""
    node, ids = standard_node(tmp_path, "containerd", "systemd")
    nginx = ids[WEB["name"]]["nginx"]
    spec = oci_spec(node.annotations(WEB, WEB["sandbox"], "nginx"), "")
    spec["process"]["env"].append("PAD=")
    pad = (1 << 20) - 4096 - len(json.dumps(spec))
    spec["process"]["env"][-1] += "x" * pad
    node.write_config(nginx, json.dumps(spec).encode())
    assert (1 << 20) - 8192 < os.path.getsize(node.config_path(nginx)) < 1 << 20
    got = json_doc(tool, node)
    assert got[node.container_cgroup(WEB, nginx)]["container"] == "nginx"


@pytest.mark.parametrize("arg,msg", [
    ("", "empty --runtime-root"),
    ("/nonexistent/rt", "invalid --runtime-root"),
    ("/etc/hostname", "invalid --runtime-root"),
])
def test_bad_runtime_root(tool, tmp_path, arg, msg):
    node, _ = standard_node(tmp_path, "containerd", "systemd")
    r = run(tool, "--root", node.tree.path, "--runtime-root", arg, check_rc=2)
    assert msg in r.err and r.out == ""


def test_exporter_caches_names_per_container(tool, tmp_path):
    """Across scrapes: a bundle is read once per container id (a rewritten
    config.json of a known container changes nothing), a new container is
    named at its first scrape, a bundle that was unreadable is read again,
    and a removed one is forgotten."""
    node, ids = standard_node(tmp_path, "containerd", "systemd")
    x = Exporter(tool, node.tree.path, "--runtime-root", node.rt)
    try:
        def labels():
            r, body = x.get()
            assert r.status == 200
            return {s["cgroup"]: s for s in series_labels(body)}

        nginx = ids[WEB["name"]]["nginx"]
        path = node.container_cgroup(WEB, nginx)
        assert labels()[path]["container"] == "nginx"
        node.write_config(nginx, oci_spec(
            node.annotations(WEB, WEB["sandbox"], "renamed"), ""))
        assert labels()[path]["container"] == "nginx"        # cached

        late = hexid(0x70)
        late_path = node.container_cgroup(WEB, late)
        node.write_config(late, b'{"annotations": {')      # half written
        node.cgroups[late_path] = 1000
        node.build()
        assert "container" not in labels()[late_path]
        node.write_config(late, oci_spec(
            node.annotations(WEB, WEB["sandbox"], "late"), ""))
        assert labels()[late_path]["container"] == "late"     # read again

        shutil.rmtree(node.bundle_dir(nginx))
        assert "container" not in labels()[path]              # forgotten
        node.write_config(nginx, oci_spec(
            node.annotations(WEB, WEB["sandbox"], "again"), ""))
        assert labels()[path]["container"] == "again"
    finally:
        rc, err = x.stop()
    assert rc == 0, err


PODMAN = {"ociVersion": "1.1.0", "process": {"args": ["sleep", "inf"]},
          "annotations": {"io.container.manager": "libpod",
                          "org.opencontainers.image.stopSignal": "15"}}


def traced_exporter(tool, tmp_path, node):
    """energystat --listen under strace -f -ttt -y (every read() with the
    path it reads and its wall-clock time, to tmp_path/trace). Returns the
    Exporter and the file holding the tool's pid (strace's own pid would
    only detach it on SIGTERM)."""
    pidfile, trace = tmp_path / "pid", tmp_path / "trace"
    wrap = tmp_path / "traced-energystat"
    wrap.write_text(
        "#!/bin/sh\n"
        f"exec {need.need('strace', 'strace')} -f -qq -ttt -y -e trace=read "
        f"-o '{trace}' sh -c 'echo $$ >\"$0\" && exec \"$@\"' '{pidfile}' "
        f"'{tool}' \"$@\"\n")
    wrap.chmod(0o755)
    return Exporter(str(wrap), node.tree.path, "--runtime-root", node.rt), pidfile


def reads_of(trace, path):
    """Wall-clock times of the read() calls on path that returned data."""
    pat = re.compile(r"^\d+ +([\d.]+) read\(\d+<(.*?)>, .* = (\d+)$")
    times = []
    for line in trace.read_text().splitlines():
        m = pat.match(line)
        if m and m.group(2) == path and int(m.group(3)) > 0:
            times.append(float(m.group(1)))
    return times


def test_unnamed_bundle_read_again_only_when_rewritten(tool, tmp_path):
    """A bundle without names (rootful podman's, in CRI-O's directory) is
    read once across three scrapes, not once a scrape; rewritten (another
    size and mtime), it is read once more across the next three; a named
    one is read once in all. Counted by strace: read() calls that return
    data from that config.json, by scrape."""
    node, ids = standard_node(tmp_path, "cri-o", "systemd")
    podman = hexid(0x90)
    node.write_config(podman, PODMAN)
    x, pidfile = traced_exporter(tool, tmp_path, node)
    marks = []
    try:
        for i in range(6):
            if i == 3:
                spec = dict(PODMAN, annotations={**PODMAN["annotations"],
                                                 "io.podman.annotations.label": "x"})
                node.write_config(podman, spec)
            r, body = x.get()
            assert r.status == 200
            marks.append(time.time())
        nginx = node.container_cgroup(WEB, ids[WEB["name"]]["nginx"])
        assert {s["cgroup"]: s for s in series_labels(body)}[nginx]["container"] == "nginx"
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGTERM)
        rc = x.p.wait(timeout=20)
        err = x.p.stderr.read()
    assert rc == 0, err
    trace = tmp_path / "trace"
    podman_reads = reads_of(trace, node.config_path(podman))
    before = [t for t in podman_reads if t <= marks[2]]
    after = [t for t in podman_reads if marks[2] < t <= marks[5]]
    assert (len(before), len(after), len(podman_reads)) == (1, 1, 2), podman_reads
    named = reads_of(trace, node.config_path(ids[WEB["name"]]["nginx"]))
    assert len(named) == 1, named


FORGED = {"io.kubernetes.pod.namespace": "kube-system",
          "io.kubernetes.pod.name": "coredns-5d78c9869d-abcde",
          "io.kubernetes.pod.uid": "11111111-2222-4333-8444-555555555555",
          "io.kubernetes.container.name": "coredns",
          "io.kubernetes.cri-o.ContainerType": "container",
          "io.kubernetes.cri-o.Namespace": "kube-system",
          "io.kubernetes.cri-o.Labels": json.dumps(
              {"io.kubernetes.pod.namespace": "kube-system",
               "io.kubernetes.pod.name": "coredns-5d78c9869d-abcde",
               "io.kubernetes.container.name": "coredns"}),
          "io.kubernetes.cri-o.Metadata": json.dumps(
              {"name": "coredns-5d78c9869d-abcde", "namespace": "kube-system"}),
          "io.kubernetes.cri.sandbox-namespace": "kube-system",
          "io.kubernetes.cri.sandbox-name": "coredns-5d78c9869d-abcde",
          "io.kubernetes.cri.sandbox-uid": "11111111-2222-4333-8444-555555555555",
          "io.kubernetes.cri.container-name": "coredns",
          "io.kubernetes.cri.container-type": "sandbox"}


@pytest.mark.parametrize("runtime", ["containerd", "cri-o"])
def test_pod_annotations_cannot_claim_another_namespace(tool, tmp_path, runtime):
    """A pod whose author annotated it with every key energystat reads (and
    CRI-O's Labels/Metadata/Namespace/ContainerType), claiming kube-system:
    its bundles, written in the order the runtime layers the annotations
    (kubenode.crio_layers, containerd_layers), still name it shop/web.
    The forged values are in the files; none reaches a label. A CRI-O
    sandbox whose ContainerType the pod overrode is left unnamed (its
    container.name is "POD"); the pod's cgroup takes a container's names."""
    node, ids = standard_node(tmp_path, runtime, "systemd")
    layers = crio_layers if runtime == "cri-o" else containerd_layers
    for name, cid in ids[WEB["name"]].items():
        node.write_config(cid, oci_spec(layers(WEB, WEB["sandbox"], name, FORGED),
                                        node.cgroups_path(WEB, cid)))
        assert "kube-system" in open(node.config_path(cid)).read()
    got = json_doc(tool, node)
    for path, wl in got.items():
        assert wl.get("namespace") in (None, "shop"), (path, wl)
        assert wl.get("container") != "coredns", (path, wl)
    want = expected(node, ids)
    sandbox = node.container_cgroup(WEB, WEB["sandbox"])
    for path, (ns, pod, ctr, typ) in want.items():
        if runtime == "cri-o" and path == sandbox:
            assert not {"pod", "namespace", "container"} & set(got[path]), got[path]
            continue
        assert (got[path].get("namespace"), got[path].get("pod"),
                got[path].get("container")) == (ns, pod, ctr), path
    prom = run(tool, "--root", node.tree.path, "--runtime-root", node.rt,
               "--prometheus", check_rc=0).out
    assert "kube-system" not in prom and "coredns" not in prom


# ---- recording rules: ids joined with kube-state-metrics ----------------------

def promtool():
    exe = shutil.which("promtool")
    if not exe:
        need.missing("promtool (Debian package prometheus)")
    return exe


def test_rules_check():
    r = subprocess.run([promtool(), "check", "rules", RULES],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS: 2 rules found" in r.stdout, r.stdout


RULES_TEST = """\
rule_files:
  - {rules}
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # the exporter without runtime state: ids only (60 J a minute: 1 W)
      - series: 'cgroup_energy_joules_total{{instance="n1",cgroup="/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{sd}.slice",pod_uid="{uid}",qos="burstable"}}'
        values: '0+60x10'
      - series: 'cgroup_energy_joules_total{{instance="n1",cgroup="/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{sd}.slice/cri-containerd-{c1}.scope",pod_uid="{uid}",qos="burstable",container_id="{c1}"}}'
        values: '0+120x10'
      - series: 'cgroup_energy_joules_total{{instance="n1",cgroup="/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{sd}.slice/crio-{c2}.scope",pod_uid="{uid}",qos="burstable",container_id="{c2}"}}'
        values: '0+180x10'
      # a cgroup that is no pod: in no rule's output
      - series: 'cgroup_energy_joules_total{{instance="n1",cgroup="/system.slice/sshd.service",unit="sshd.service"}}'
        values: '0+600x10'
      # kube-state-metrics, two replicas (the same facts twice)
      - series: 'kube_pod_info{{job="ksm",instance="k1",namespace="shop",pod="web-0",uid="{uid}",node="n1"}}'
        values: '1x10'
      - series: 'kube_pod_info{{job="ksm",instance="k2",namespace="shop",pod="web-0",uid="{uid}",node="n1"}}'
        values: '1x10'
      - series: 'kube_pod_container_info{{job="ksm",instance="k1",namespace="shop",pod="web-0",container="nginx",container_id="containerd://{c1}",uid="{uid}"}}'
        values: '1x10'
      - series: 'kube_pod_container_info{{job="ksm",instance="k1",namespace="shop",pod="web-0",container="sidecar",container_id="cri-o://{c2}",uid="{uid}"}}'
        values: '1x10'
      # a container kube-state-metrics has not seen yet: no id to join
      - series: 'kube_pod_container_info{{job="ksm",instance="k1",namespace="shop",pod="web-0",container="init",container_id="",uid="{uid}"}}'
        values: '1x10'
    promql_expr_test:
      - expr: namespace_pod:cgroup_energy_joules:rate5m
        eval_time: 10m
        exp_samples:
          - labels: 'namespace_pod:cgroup_energy_joules:rate5m{{namespace="shop",pod="web-0",pod_uid="{uid}"}}'
            value: 6
      - expr: namespace_pod_container:cgroup_energy_joules:rate5m
        eval_time: 10m
        exp_samples:
          - labels: 'namespace_pod_container:cgroup_energy_joules:rate5m{{namespace="shop",pod="web-0",container="nginx",container_id="{c1}"}}'
            value: 2
          - labels: 'namespace_pod_container:cgroup_energy_joules:rate5m{{namespace="shop",pod="web-0",container="sidecar",container_id="{c2}"}}'
            value: 3
"""


def test_rules_join_ids_with_kube_state_metrics(tmp_path):
    """promtool test rules: the pod's watts (its slice's own and its
    containers') by namespace and pod name, a container's by its name,
    kube-state-metrics' replicas not counted twice."""
    uid = WEB["uid"]
    f = tmp_path / "names_test.yml"
    f.write_text(RULES_TEST.format(rules=RULES, uid=uid, sd=uid.replace("-", "_"),
                                   c1=hexid(0x61), c2=hexid(0x62)))
    r = subprocess.run([promtool(), "test", "rules", str(f)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout, r.stdout
