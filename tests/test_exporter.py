# SPDX-License-Identifier: GPL-2.0
"""Host tests of energystat for fleets (issue 17): workloads by name, series
that add up, the /metrics endpoint (--listen), over fixture trees.

Run: /usr/bin/python3 -m pytest -q tests/test_exporter.py
"""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from fixtree import Tree, root_keys, share_tree  # noqa: E402
from test_energystat import (prom_samples, promtool_check, run,  # noqa: E402,F401
                             table, tool)

ID = "0123456789abcdef" * 4              # a 64-hex container id
ID2 = "fedcba9876543210" * 4
UID = "5f1c3a2b-8d4e-4f6a-9b0c-1d2e3f4a5b6c"
UID_SD = UID.replace("-", "_")           # the systemd driver's spelling
STATIC_UID = "6d5f9c1a3b2e4d7f8a9b0c1d2e3f4a5b"   # a static pod: a hash

# Each layout: cgroup path -> the workload fields energystat must find.
#
# Kubernetes, systemd driver: the kubelet names QoS and pod slices
# kubepods-<qos>.slice / kubepods-<qos>-pod<uid>.slice, Guaranteed pods sit
# directly under kubepods.slice as kubepods-pod<uid>.slice, and a uid's '-'
# become '_' in unit names (kubernetes pkg/kubelet/cm/cgroup_manager_linux.go,
# ToSystemd/escapeSystemdCgroupName; the design proposal "Kubelet pod level
# resource management"). Container scopes are named by the runtime:
# containerd's CRI plugin cri-containerd-<id>.scope, CRI-O crio-<id>.scope
# (crio-conmon-<id>.scope for its monitor), dockershim/cri-dockerd
# docker-<id>.scope.
KUBE_SYSTEMD = {
    "/kubepods.slice": dict(unit="kubepods.slice"),
    "/kubepods.slice/kubepods-burstable.slice":
        dict(qos="burstable", unit="kubepods-burstable.slice"),
    f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_SD}.slice":
        dict(pod_uid=UID, qos="burstable",
             unit=f"kubepods-burstable-pod{UID_SD}.slice"),
    f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_SD}.slice/"
    f"cri-containerd-{ID}.scope":
        dict(pod_uid=UID, qos="burstable", container_id=ID,
             runtime="containerd", unit=f"cri-containerd-{ID}.scope"),
    f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_SD}.slice/"
    f"crio-{ID2}.scope":
        dict(pod_uid=UID, qos="besteffort", container_id=ID2, runtime="cri-o",
             unit=f"crio-{ID2}.scope"),
    f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_SD}.slice/"
    f"crio-conmon-{ID2}.scope":
        dict(pod_uid=UID, qos="besteffort", unit=f"crio-conmon-{ID2}.scope"),
    # Guaranteed: no QoS slice (Kepler got this one wrong, its #2354)
    f"/kubepods.slice/kubepods-pod{UID_SD}.slice":
        dict(pod_uid=UID, qos="guaranteed", unit=f"kubepods-pod{UID_SD}.slice"),
    f"/kubepods.slice/kubepods-pod{UID_SD}.slice/docker-{ID}.scope":
        dict(pod_uid=UID, qos="guaranteed", container_id=ID, runtime="docker",
             unit=f"docker-{ID}.scope"),
    f"/kubepods.slice/kubepods-pod{STATIC_UID}.slice":
        dict(pod_uid=STATIC_UID, qos="guaranteed",
             unit=f"kubepods-pod{STATIC_UID}.slice"),
    # --cgroup-root=/kubelet.slice (kind, minikube): prefixed slice names
    f"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
    f"kubelet-kubepods-besteffort-pod{UID_SD}.slice/cri-containerd-{ID}.scope":
        dict(pod_uid=UID, qos="besteffort", container_id=ID,
             runtime="containerd", unit=f"cri-containerd-{ID}.scope"),
}

# Kubernetes, cgroupfs driver: kubepods/<qos>/pod<uid>/<container id>, the
# Guaranteed class as kubepods/pod<uid> (same kubelet source; the kubelet
# keeps the uid's dashes). The runtime names the container's directory by
# its id alone, so the runtime is unknown.
KUBE_CGROUPFS = {
    "/kubepods": {},
    "/kubepods/burstable": dict(qos="burstable"),
    f"/kubepods/burstable/pod{UID}": dict(pod_uid=UID, qos="burstable"),
    f"/kubepods/burstable/pod{UID}/{ID}":
        dict(pod_uid=UID, qos="burstable", container_id=ID),
    f"/kubepods/pod{UID}": dict(pod_uid=UID, qos="guaranteed"),
    f"/kubepods/pod{UID}/{ID2}":
        dict(pod_uid=UID, qos="guaranteed", container_id=ID2),
    # a container's own sub-cgroup belongs to it
    f"/kubepods/pod{UID}/{ID2}/init": dict(pod_uid=UID, qos="guaranteed",
                                           container_id=ID2),
}

# Containers outside Kubernetes. Docker: docker-<id>.scope in system.slice
# with the systemd driver, /docker/<id> with cgroupfs (moby's cgroup driver
# docs, dockerd --exec-opt native.cgroupdriver). Podman: libpod-<id>.scope in
# machine.slice (rootful) or the user's slice (rootless), cgroupfs
# /libpod_parent/libpod-<id> (podman's --cgroup-manager docs).
CONTAINERS = {
    f"/system.slice/docker-{ID}.scope":
        dict(container_id=ID, runtime="docker", unit=f"docker-{ID}.scope"),
    f"/docker/{ID}": dict(container_id=ID, runtime="docker"),
    f"/machine.slice/libpod-{ID2}.scope":
        dict(container_id=ID2, runtime="podman", unit=f"libpod-{ID2}.scope"),
    f"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope":
        dict(container_id=ID, runtime="podman", unit=f"libpod-{ID}.scope"),
    f"/libpod_parent/libpod-{ID}": dict(container_id=ID, runtime="podman"),
    f"/system.slice/containerd.service": dict(unit="containerd.service"),
}

# systemd units by name; things that only look like a workload are not one
UNITS_AND_LOOKALIKES = {
    "/system.slice/nginx.service": dict(unit="nginx.service"),
    "/system.slice/nginx.service/worker": dict(unit="nginx.service"),
    "/user.slice/user-1000.slice/session-3.scope": dict(unit="session-3.scope"),
    "/docker/" + ID[:63]: {},                       # 63 hex digits
    "/docker/" + ID.upper(): {},
    "/a/docker/" + ID: {},                          # not the top-level docker
    "/system.slice/docker-" + ID[:12] + ".scope": dict(
        unit="docker-" + ID[:12] + ".scope"),
    "/kubepods/podXYZ": {},
    "/kubepods.slice/kubepods-podXYZ.slice": dict(
        unit="kubepods-podXYZ.slice"),
    "/pod" + UID: {},                               # not under kubepods
    "/.service": {},                                # no unit name
}

LAYOUTS = {"kube_systemd": KUBE_SYSTEMD, "kube_cgroupfs": KUBE_CGROUPFS,
           "containers": CONTAINERS, "units": UNITS_AND_LOOKALIKES}


def ancestors(path):
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def layout_tree(tmp_path, layout):
    """A tree of the layout's cgroups and their parents: 1 J of their own
    tasks in each, counters that include the descendants (as the module's
    do), the root 1 J of its own."""
    t = Tree(tmp_path / "ce", info={"source": "model"})
    cgs = set(layout) | {a for p in layout for a in ancestors(p)}
    for path in cgs:
        below = sum(1 for c in cgs if c.startswith(path + "/"))
        t.add(path, energy_uj=(1 + below) * 1_000_000)
    e = (1 + len(cgs)) * 1_000_000
    t.add("/", energy_uj=e, **root_keys(e))
    return t


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_workload_fields_json(tool, tmp_path, name):
    layout = LAYOUTS[name]
    t = layout_tree(tmp_path, layout)
    doc = json.loads(run(tool, "--root", t.path, "--json", check_rc=0).out)
    got = {c["path"]: c["workload"] for c in doc["cgroups"]}
    for path, want in layout.items():
        assert got[path] == want, path


PROM_LABELS = ("pod_uid", "container_id", "qos", "unit")


def own_unit(want):
    """Whether the unit is the pod's own slice or the container's own scope
    (its id already a label): such a unit is no label (one label per fact)."""
    unit = want.get("unit", "")
    if "container_id" in want:
        return want["container_id"] in unit
    uid = want.get("pod_uid")
    return bool(uid) and unit.endswith(f"pod{uid.replace('-', '_')}.slice")


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_workload_labels_prometheus(tool, tmp_path, name):
    """The same fields as Prometheus labels (all but runtime, and the unit
    only when it adds a fact), in a fixed order after cgroup; the exposition
    passes promtool."""
    layout = LAYOUTS[name]
    t = layout_tree(tmp_path, layout)
    out = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    promtool_check(out)
    for path, want in layout.items():
        labels = f'cgroup="{path}"' + "".join(
            f',{k}="{want[k]}"' for k in PROM_LABELS
            if k in want and not (k == "unit" and own_unit(want)))
        assert f"cgroup_energy_joules_total{{{labels}}} " in out, path


def test_workload_column(tool, tmp_path):
    layout = {**KUBE_SYSTEMD, **CONTAINERS}
    t = layout_tree(tmp_path, layout)
    head, rows = table(run(tool, "--root", t.path, "-s", "path", "--depth",
                           "9", check_rc=0,
                           env=dict(os.environ, COLUMNS="400")).out,
                       workload=True)
    assert head[-1] == "WORKLOAD"
    col = {path: cells[-1] for path, cells in rows}
    pod = f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_SD}.slice"
    assert col[pod] == "pod:5f1c3a2b"
    assert col[pod + f"/cri-containerd-{ID}.scope"] == "pod:5f1c3a2b/0123456789ab"
    assert col[f"/system.slice/docker-{ID}.scope"] == "docker:0123456789ab"
    assert col[f"/machine.slice/libpod-{ID2}.scope"] == "podman:fedcba987654"
    assert col["/system.slice/containerd.service"] == "containerd.service"
    assert col["/"] == "-"


# ---- series that add up -------------------------------------------------------

def per_cgroup(out, family):
    """{labels: Decimal} of a family's per-cgroup samples."""
    from decimal import Decimal
    return {k[len(family):]: Decimal(v) for k, v in prom_samples(out).items()
            if k.startswith(family + "{")}


def uneven_tree(tmp_path):
    """Counters with descendants, as the module's: own tasks in every level,
    a removed child's energy left in its parent, odd microjoules."""
    t = Tree(tmp_path / "ce", info={"source": "model"})
    own = {"/a": 1_000_003, "/a/b": 7, "/a/b/c": 2_500_001, "/a/d": 0,
           "/e": 333_333, "/e/f": 1}
    removed = {"/a": 40_000_000}     # a removed child's energy stays here
    for cg in own:
        below = sum(v for c, v in own.items() if c.startswith(cg + "/"))
        t.add(cg, energy_uj=own[cg] + below + removed.get(cg, 0),
              usage_usec=2 * (own[cg] + below), wakeups=(own[cg] + below) // 7,
              impact_usec=3 * (own[cg] + below), package_uj=own[cg] + below)
    e = sum(own.values()) + sum(removed.values()) + 5_000_017   # root's own
    t.add("/", energy_uj=e, usage_usec=10**9, wakeups=10**6,
          impact_usec=3 * 10**9, package_uj=e, **root_keys(e))
    return t, e


def test_default_series_sum_to_root_exactly(tool, tmp_path):
    """sum() of the default per-cgroup series equals the root's counter
    exactly (decimal arithmetic, the values are exact microunits); the
    hierarchical view sums to more (every level counted again)."""
    t, e = uneven_tree(tmp_path)
    out = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    promtool_check(out)
    j = per_cgroup(out, "cgroup_energy_joules_total")
    assert len(j) == 7
    assert sum(j.values()) * 10**6 == e
    assert j['{cgroup="/a"}'] * 10**6 == 1_000_003 + 40_000_000
    assert j['{cgroup="/"}'] * 10**6 == 5_000_017
    cpu = per_cgroup(out, "cgroup_energy_cpu_seconds_total")
    assert sum(cpu.values()) * 10**6 == 10**9
    dom = per_cgroup(out, "cgroup_energy_domain_joules_total")
    assert sum(dom.values()) * 10**6 == e
    assert prom_samples(out)["cgroup_energy_clamped_series"] == "0"
    hier = run(tool, "--root", t.path, "--prometheus", "--hierarchical",
               check_rc=0).out
    promtool_check(hier)
    assert "cgroup_energy_joules_total" not in hier
    h = per_cgroup(hier, "cgroup_energy_subtree_joules_total")
    assert h['{cgroup="/"}'] * 10**6 == e
    assert sum(h.values()) * 10**6 > e + 40_000_000  # counted at every level


@pytest.mark.parametrize("own_keys", [False, True])
@pytest.mark.parametrize("args,top", [
    (["--depth", "1"], "/"), (["/a"], "/a"), (["/a", "/e/f"], None),
    (["--depth", "1", "/", "/a/b"], "/"),   # /a cut, /a/b read below it
])
def test_series_sum_with_depth_and_paths(tool, tmp_path, args, top, own_keys):
    """Below --depth, a shown cgroup's own value takes its hidden subtree;
    with PATH arguments the series add up to the PATHs' counters; the same
    with the module's own_ keys."""
    t, e = uneven_tree(tmp_path)
    if own_keys:
        with_own_keys(t, ["/", "/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f"])
    out = run(tool, "--root", t.path, "--prometheus", *args, check_rc=0).out
    j = sum(per_cgroup(out, "cgroup_energy_joules_total").values()) * 10**6
    want = {"/": e, "/a": 41_000_003 + 2_500_008}.get(top,
                                                      41_000_003 + 2_500_008 + 1)
    assert j == want


def test_series_sum_around_unreadable_cgroup(tool, tmp_path):
    """An unreadable cgroup's read children are subtracted from its nearest
    read ancestor: the sum stays exact."""
    t, e = uneven_tree(tmp_path)
    t.write("/a/b", "junk\n")
    r = run(tool, "--root", t.path, "--prometheus", check_rc=1)
    j = per_cgroup(r.out, "cgroup_energy_joules_total")
    assert '{cgroup="/a/b"}' not in j and '{cgroup="/a/b/c"}' in j
    assert sum(j.values()) * 10**6 == e


ADDS_UP = ("usage_usec", "energy_uj", "wakeups", "impact_usec", "package_uj")


def with_own_keys(t, cgs):
    """Give each of @cgs (every cgroup of @t, the root "/" among them) the
    module's own_ keys: its counters less its children's."""
    def read(cg):
        text = open(os.path.join(t.dir(cg), b"energy.stat")).read()
        return dict((k, int(v)) for k, v in
                    (ln.split() for ln in text.splitlines()))
    stats = {cg: read(cg) for cg in cgs}
    for cg, st in stats.items():
        kids = [c for c in cgs if c != cg and os.path.dirname(c) == cg]
        own = {"own_" + k: st[k] - sum(stats[c][k] for c in kids)
               for k in ADDS_UP}
        t.write(cg, "".join(f"{k} {v}\n" for k, v in {**st, **own}.items()))
    return stats


def test_own_keys_give_series_from_one_file(tool, tmp_path):
    """With the module's own_ keys, a cgroup whose children were all read
    takes its series from them: the same values as its counters less its
    children's when the files agree; and when a child was read after a
    module sample its parent had not seen (children above their parent),
    the parent's series is still its own_ value, not clamped."""
    t, e = uneven_tree(tmp_path)
    cgs = ["/", "/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f"]
    derived = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    with_own_keys(t, cgs)
    out = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    assert out == derived
    # /e/f read a sample later: +5 J of its own that /e does not show yet
    t.add("/e/f", energy_uj=5_000_001, usage_usec=2, wakeups=0,
          impact_usec=3, package_uj=5_000_001, own_energy_uj=5_000_001,
          own_usage_usec=2, own_wakeups=0, own_impact_usec=3,
          own_package_uj=5_000_001)
    out = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    j = per_cgroup(out, "cgroup_energy_joules_total")
    assert j['{cgroup="/e"}'] * 10**6 == 333_333
    assert j['{cgroup="/e/f"}'] * 10**6 == 5_000_001
    assert prom_samples(out)["cgroup_energy_clamped_series"] == "0"


def test_unread_child_drops_out_with_own_keys(tool, tmp_path):
    """With own_ keys, a child that cannot be read drops out of the sum for
    that read (its own part, 7 uJ); its parent keeps its own_ value, which a
    derived value (counter less read descendants) would exceed by the
    child's part for one read and then go down again."""
    t, e = uneven_tree(tmp_path)
    with_own_keys(t, ["/", "/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f"])
    t.write("/a/b", "junk\n")
    r = run(tool, "--root", t.path, "--prometheus", check_rc=1)
    j = per_cgroup(r.out, "cgroup_energy_joules_total")
    assert j['{cgroup="/a"}'] * 10**6 == 1_000_003 + 40_000_000
    assert '{cgroup="/a/b"}' not in j and '{cgroup="/a/b/c"}' in j
    assert sum(j.values()) * 10**6 == e - 7


def test_clamped_when_children_exceed_parent(tool, tmp_path):
    """Counters read across a module sample can have children above their
    parent: the parent's own value is clamped to 0 and counted."""
    t, e = uneven_tree(tmp_path)
    t.add("/e", energy_uj=1)
    out = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    assert per_cgroup(out, "cgroup_energy_joules_total")['{cgroup="/e"}'] == 0
    assert prom_samples(out)["cgroup_energy_clamped_series"] == "1"


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_json_own_sums_to_root(tool, tmp_path, name):
    t = layout_tree(tmp_path, LAYOUTS[name])
    doc = json.loads(run(tool, "--root", t.path, "--json", check_rc=0).out)
    root = doc["cgroups"][0]
    assert root["path"] == "/"
    assert sum(c["own"]["energy_uj"] for c in doc["cgroups"]) == \
        root["stat"]["energy_uj"]
    assert all(c["own"]["energy_uj"] == 1_000_000 for c in doc["cgroups"])


# ---- the /metrics endpoint -----------------------------------------------------

import http.client  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Exporter:
    """energystat --listen on a free local port, stopped with SIGTERM;
    root None: the default root (/sys/fs/cgroup_energy)."""

    def __init__(self, tool, root, *args, preexec_fn=None):
        self.port = free_port()
        where = ["--root", root] if root is not None else []
        self.p = subprocess.Popen([tool, *where, "--listen",
                                   f"127.0.0.1:{self.port}", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, preexec_fn=preexec_fn)
        line = self.p.stderr.readline()
        # where it listens, address and port, first of all
        assert line == f"energystat: serving /metrics on 127.0.0.1:{self.port}\n", line

    def get(self, path="/metrics", method="GET", headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request(method, path, headers=headers or {})
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        return r, body

    def stop(self):
        self.p.terminate()
        rc = self.p.wait(timeout=10)
        err = self.p.stderr.read()
        return rc, err


@pytest.fixture
def exporter(tool, tmp_path):
    t, e = uneven_tree(tmp_path)
    t.set_info({"source": "model", "interval_ms": 100, "last_sample_ns": 10**12,
                "samples": 40, "sampler_overruns": 2, "energy_read_errors": 1,
                "counter_wraps": 4, "counter_resyncs": 3, "quiet_drains": 7,
                "cache_overflows": 5, "request_takebacks": 8,
                "alloc_failures": 6,
                "overcharge_usec": 1500, "overcharge_repaid_usec": 1200,
                "records": 12, "record_bytes": 3072})
    x = Exporter(tool, t.path)
    x.tree, x.energy = t, e
    yield x
    if x.p.poll() is None:
        x.stop()


# the exporter's own families (health.c), which --prometheus has not
OWN = ("cgroup_energy_up", "cgroup_energy_up_info", "energystat_scrapes_total",
       "energystat_scrape_errors_total", "energystat_scrape_duration_seconds",
       "energystat_exported_cgroups")


def family_of(line):
    """The metric name of an exposition line (# HELP/# TYPE or a sample)."""
    words = line.split(" ")
    name = words[2] if line.startswith("# ") else words[0]
    return name.split("{")[0]


def without_own(text):
    return [x for x in text.splitlines() if family_of(x) not in OWN]


def stable(text):
    """The lines of a text that two reads of an unchanged tree share: not
    the exporter's own, not the age of the module's sample."""
    return [x for x in without_own(text)
            if family_of(x) != "cgroup_energy_last_sample_age_seconds"]


def test_served_equals_one_shot(tool, exporter):
    """One code path: the served text is --prometheus's (a self-consistency
    check) and the exporter's own families, and promtool accepts it."""
    r, body = exporter.get()
    assert r.status == 200
    assert r.getheader("Content-Type") == "text/plain; version=0.0.4; charset=utf-8"
    promtool_check(body)
    one = run(tool, "--root", exporter.tree.path, "--prometheus", check_rc=0).out
    strip = lambda s: [x for x in without_own(s)
                       if not x.startswith("cgroup_energy_last_sample_age")]
    assert strip(body) == strip(one)
    assert {family_of(x) for x in body.splitlines()} >= set(OWN)
    s = prom_samples(body)
    assert s["cgroup_energy_sampler_overruns_total"] == "2"
    assert s["cgroup_energy_read_errors_total"] == "1"
    assert s["cgroup_energy_wraps_total"] == "4"
    assert s["cgroup_energy_resyncs_total"] == "3"
    assert s["cgroup_energy_quiet_drains_total"] == "7"
    assert s["cgroup_energy_cache_overflows_total"] == "5"
    assert s["cgroup_energy_request_takebacks_total"] == "8"
    assert s["cgroup_energy_alloc_failures_total"] == "6"
    assert s["cgroup_energy_overcharge_seconds_total"] == "0.0015"
    assert s["cgroup_energy_overcharge_repaid_seconds_total"] == "0.0012"
    assert s["cgroup_energy_records"] == "12"
    assert s["cgroup_energy_record_bytes"] == "3072"
    assert "# TYPE cgroup_energy_records gauge" in body
    assert s['cgroup_energy_source_info{source="model",kind="modelled"}'] == "1"
    assert s['energystat_build_info{version="0.1.0"}'] == "1"
    assert sum(per_cgroup(body, "cgroup_energy_joules_total").values()) * 10**6 \
        == exporter.energy


SHARE_FAMILIES = ("cgroup_energy_idle_share_joules_total",
                  "cgroup_energy_sys_share_joules_total")


def test_served_shares_add_up_to_measured(tool, tmp_path):
    """A module with unowned=weight since load: the served text is
    --prometheus's, with both share families (OpenMetrics too), and sum()
    over cgroups of cgroup_energy_joules_total and both shares is
    cgroup_energy_measured_joules_total exactly; the subtree view's root
    series add up the same; with unowned=cpuset too. unowned=none: the
    families, all 0."""
    from decimal import Decimal
    t = share_tree(tmp_path / "w")
    x = Exporter(tool, t.path)
    try:
        r, body = x.get()
        _, om = x.get(headers={"Accept": "application/openmetrics-text"})
    finally:
        x.stop()
    assert r.status == 200
    promtool_check(body)
    one = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    assert stable(body) == stable(one)
    s = prom_samples(body)
    measured = Decimal(s["cgroup_energy_measured_joules_total"])
    assert sum(sum(per_cgroup(body, f).values()) for f in
               ("cgroup_energy_joules_total", *SHARE_FAMILIES)) == measured
    assert [k for k in s if k.startswith("cgroup_energy_source_info{")] == [
        'cgroup_energy_source_info{source="rapl",split="impact",'
        'unowned="weight",version="0.1.0",kind="measured"}']
    assert s["cgroup_energy_unowned_changes_total"] == "0"
    for f in SHARE_FAMILIES:
        assert f"# TYPE {f[:-len('_total')]} counter\n" in om
    hier = run(tool, "--root", t.path, "--prometheus", "--hierarchical",
               check_rc=0).out
    h = prom_samples(hier)
    assert sum(Decimal(h[f"cgroup_energy_subtree_{f}{{cgroup=\"/\"}}"])
               for f in ("joules_total", "idle_share_joules_total",
                         "sys_share_joules_total")) == measured
    assert s["cgroup_energy_unowned_partitions"] == "0"
    # cpuset: the same sums, its label and its partitions
    cs = prom_samples(run(tool, "--root",
                          share_tree(tmp_path / "c", "cpuset").path,
                          "--prometheus", check_rc=0).out)
    assert sum(Decimal(v) for k, v in cs.items() if k.startswith(
        ("cgroup_energy_joules_total{", "cgroup_energy_idle_share_joules_"
         "total{", "cgroup_energy_sys_share_joules_total{"))) == measured
    assert 'unowned="cpuset"' in next(k for k in cs if k.startswith(
        "cgroup_energy_source_info{"))
    assert cs["cgroup_energy_unowned_partitions"] == "1"
    none = run(tool, "--root", share_tree(tmp_path / "n", "none").path,
               "--prometheus", check_rc=0).out
    promtool_check(none)
    for f in SHARE_FAMILIES:
        v = per_cgroup(none, f)
        assert len(v) == 7 and not any(v.values())


def test_openmetrics_when_asked(exporter):
    r, body = exporter.get(headers={
        "Accept": "application/openmetrics-text; version=1.0.0,text/plain;q=0.5"})
    assert r.status == 200
    assert r.getheader("Content-Type").startswith("application/openmetrics-text")
    assert body.endswith("# EOF\n")
    assert "# TYPE cgroup_energy_joules counter\n" in body
    assert "# TYPE cgroup_energy_source info\n" in body
    assert "# TYPE energystat_scrapes counter\n" in body
    # a gauge: an info family of that name would be cgroup_energy_up
    assert "# TYPE cgroup_energy_up_info gauge\n" in body
    assert body.count("# EOF") == 1
    try:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    except ImportError:
        return      # promtool checks the 0.0.4 text only; the markers above
    assert len(list(text_string_to_metric_families(body))) > 5


def test_watts_over_module_clock(exporter):
    """Two reads 1 s or more apart: watts = energy delta / last_sample_ns
    delta, exactly as written (+2 J of /a/b/c's own over 0.5 s module
    time: 4 W)."""
    _, body = exporter.get()
    assert "cgroup_energy_watts" not in body        # no earlier read yet
    time.sleep(1.05)
    t = exporter.tree
    own_c = 2_500_001 + 2_000_000
    t.add("/a/b/c", energy_uj=own_c)
    t.add("/a/b", energy_uj=7 + own_c)
    t.add("/a", energy_uj=1_000_003 + 7 + own_c + 0 + 40_000_000)
    e = exporter.energy + 2_000_000
    t.add("/", energy_uj=e, usage_usec=10**9, wakeups=10**6,
          impact_usec=3 * 10**9, package_uj=e, **root_keys(e))
    t.set_info({"source": "model", "last_sample_ns": 10**12 + 500_000_000})
    _, body = exporter.get()
    w = {k: float(v) for k, v in prom_samples(body).items()
         if k.startswith("cgroup_energy_watts{")}
    assert w['cgroup_energy_watts{cgroup="/a/b/c"}'] == pytest.approx(4.0, abs=1e-6)
    assert w['cgroup_energy_watts{cgroup="/a"}'] == 0
    assert sum(w.values()) == pytest.approx(4.0, abs=1e-5)
    assert float(prom_samples(body)["cgroup_energy_measured_watts"]) == \
        pytest.approx(4.0, abs=1e-6)
    # another window (1.5 s of module time since this read's sample), the
    # same HELP texts: a scrape's metadata does not change with its figures
    helps = [ln for ln in body.splitlines() if ln.startswith("# HELP")]
    time.sleep(1.05)
    t.set_info({"source": "model", "last_sample_ns": 10**12 + 2 * 10**9})
    _, body = exporter.get()
    assert "cgroup_energy_watts{" in body
    assert [ln for ln in body.splitlines() if ln.startswith("# HELP")] == helps


@pytest.mark.parametrize("path,method,status", [
    ("/", "GET", 404), ("/metricsx", "GET", 404), ("/metrics/", "GET", 404),
    ("/metrics", "POST", 405), ("/metrics", "DELETE", 405),
    ("/metrics", "HEAD", 200),
])
def test_status_codes(exporter, path, method, status):
    r, body = exporter.get(path, method)
    assert r.status == status
    if status == 405:
        assert r.getheader("Allow") == "GET, HEAD"
    if method == "HEAD":
        assert body == "" and int(r.getheader("Content-Length")) > 1000


def test_concurrent_scrapes(exporter):
    """16 scrapes at once: all complete, all 200, all the same series."""
    results = []

    def one():
        r, body = exporter.get()
        results.append((r.status, len(per_cgroup(body, "cgroup_energy_joules_total"))))

    threads = [threading.Thread(target=one) for _ in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert results == [(200, 7)] * 16


def test_one_address_cannot_take_every_connection(exporter):
    """16 idle connections from 127.0.0.1: a 17th from it is closed at
    once, unanswered; a scrape from 127.0.0.2 (another loopback address)
    is served."""
    held = [socket.create_connection(("127.0.0.1", exporter.port))
            for _ in range(16)]
    try:
        # accepted in order: the 17th is counted after the 16
        with socket.create_connection(("127.0.0.1", exporter.port)) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            s.settimeout(5)
            try:
                got = s.recv(65536)
            except ConnectionResetError:
                got = b""
            assert got == b"", got[:100]
        with socket.create_connection(("127.0.0.1", exporter.port),
                                      source_address=("127.0.0.2", 0)) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
                      b"Connection: close\r\n\r\n")
            s.settimeout(10)
            got = b""
            while len(got) < 12 and (chunk := s.recv(12 - len(got))):
                got += chunk
            assert got == b"HTTP/1.1 200"
    finally:
        for s in held:
            s.close()


GARBAGE = [b"\x00\xff\x13garbage\r\n\r\n", b"GET /metrics HTTP/9.9\r\n\r\n",
           b"GET " + b"A" * 100_000 + b" HTTP/1.1\r\n\r\n",
           b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
           b"G"]


def test_survives_garbage_and_disconnects(exporter):
    """Garbage requests, a client gone mid-response, a half-sent request:
    the exporter keeps serving and exits 0 on SIGTERM."""
    for g in GARBAGE:
        with socket.create_connection(("127.0.0.1", exporter.port)) as s:
            # the exporter may answer 400 and close before the client's
            # shutdown or read: ENOTCONN, ECONNRESET, EPIPE are its answer
            try:
                s.sendall(g)
                s.shutdown(socket.SHUT_WR)
                s.settimeout(10)
                while s.recv(65536):
                    pass
            except (OSError, socket.timeout):
                pass
    for _ in range(20):
        # read the status line of a scrape, then reset the connection
        with socket.create_connection(("127.0.0.1", exporter.port)) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(12) == b"HTTP/1.1 200"
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         b"\x01\x00\x00\x00\x00\x00\x00\x00")
    r, body = exporter.get()
    assert r.status == 200 and body.startswith("# HELP")
    assert exporter.p.poll() is None
    rc, err = exporter.stop()
    assert rc == 0, err


def test_idle_connections_do_not_stop_scrapes(exporter):
    """Two clients that each hold the most connections one address may
    have (serve.c MAX_PER_IP, 16) with half-sent requests: a third one's
    scrape is answered at once, since an idle connection takes a slot of
    MAX_CONNECTIONS (1024), not one of the threads; a 17th from one
    address is closed."""
    held = []
    try:
        for src in ("127.0.0.2", "127.0.0.3"):
            for _ in range(16):
                s = socket.create_connection(("127.0.0.1", exporter.port),
                                             source_address=(src, 0))
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                held.append(s)
        extra = socket.create_connection(("127.0.0.1", exporter.port),
                                         source_address=("127.0.0.2", 0))
        extra.settimeout(10)
        try:
            extra.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            closed = extra.recv(1) == b""
        except OSError:
            closed = True
        extra.close()
        assert closed
        r, body = exporter.get()
        assert r.status == 200 and body.startswith("# HELP")
    finally:
        for s in held:
            s.close()


@pytest.mark.parametrize("arg,msg", [
    ("0", "PORT must be a number from 1 to 65535"),
    ("65536", "PORT must be a number from 1 to 65535"),
    ("http", "PORT must be a number from 1 to 65535"),
    ("localhost:9100", "ADDR must be an IPv4 address"),
    ("1.2.3:9100", "ADDR must be an IPv4 address"),
    ("[::1:9100", "ADDR must be an IPv4 address"),
    ("127.0.0.1:", "PORT must be a number"),
])
def test_bad_listen(tool, tmp_path, arg, msg):
    t, _ = uneven_tree(tmp_path)
    r = run(tool, "--root", t.path, "--listen", arg, check_rc=2, timeout=10)
    assert r.out == "" and len(r.err.splitlines()) == 1
    assert f"invalid --listen '{arg}'" in r.err and msg in r.err


def test_listen_conflicts_and_busy_port(tool, tmp_path):
    t, _ = uneven_tree(tmp_path)
    r = run(tool, "--root", t.path, "--listen", "9", "--json", check_rc=2)
    assert "cannot be used with --json" in r.err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run(tool, "--root", t.path, "--listen", f"127.0.0.1:{port}",
                check_rc=2, timeout=10)
        assert "cannot listen" in r.err
    r = run(tool, "--root", t.path, "--listen", f"127.0.0.1:{free_port()}",
            "--include", "(", check_rc=2, timeout=10)
    assert "invalid --include '('" in r.err


# ---- an exporter like node_exporter (issue 42) ---------------------------------

import gzip  # noqa: E402
import urllib.request as urlreq  # noqa: E402


def fetch(port, accept_encoding=None, method="GET", accept=None):
    """(status, headers, raw body bytes) of /metrics with urllib, which
    sends Accept-Encoding only when told and never decompresses."""
    req = urlreq.Request(f"http://127.0.0.1:{port}/metrics", method=method)
    if accept_encoding is not None:
        req.add_header("Accept-Encoding", accept_encoding)
    if accept is not None:
        req.add_header("Accept", accept)
    with urlreq.urlopen(req, timeout=10) as u:
        return u.status, u.headers, u.read()


def own(body):
    """The exporter's own samples of a text: {name{labels}: value}."""
    return {k: v for k, v in prom_samples(body).items()
            if k.split("{")[0] in OWN}


def up_of(body):
    """(cgroup_energy_up, its reason) of a text."""
    s = prom_samples(body)
    (reason,) = [k for k in s if k.startswith("cgroup_energy_up_info{")]
    assert s[reason] == "1"
    return s["cgroup_energy_up"], reason[len('cgroup_energy_up_info{reason="'):-2]


def test_gzip_when_accepted(exporter):
    """gzip when Accept-Encoding allows it (the text gunzips to what an
    identity answer has), not when it does not; Vary names the header;
    HEAD answers with the headers of the same coding."""
    st, h, raw = fetch(exporter.port)
    assert st == 200 and h["Content-Encoding"] is None
    assert "Accept-Encoding" in [v.strip() for v in h["Vary"].split(",")]
    plain = raw.decode()
    assert int(h["Content-Length"]) == len(raw)
    for ae in ("gzip", "gzip, deflate, br", "deflate;q=1.0, GZip;q=0.5",
               "identity;q=0.5, *", "x-gzip"):
        st, h, raw = fetch(exporter.port, ae)
        assert st == 200 and h["Content-Encoding"] == "gzip", ae
        assert "Accept-Encoding" in h["Vary"]
        assert int(h["Content-Length"]) == len(raw) < len(plain) / 3
        text = gzip.decompress(raw).decode()
        assert stable(text) == stable(plain), ae
    promtool_check(text)
    for ae in ("identity", "deflate, br", "gzip;q=0", "gzip;q=0.000, *",
               "*;q=0", ""):
        st, h, raw = fetch(exporter.port, ae)
        assert h["Content-Encoding"] is None and raw.startswith(b"# HELP"), ae
    # HEAD: GET's headers, no body; the gzipped length of a scrape's text
    st, h, raw = fetch(exporter.port, "gzip", "HEAD")
    assert st == 200 and raw == b"" and h["Content-Encoding"] == "gzip"
    assert 0 < int(h["Content-Length"]) < len(plain) / 3
    st, h, raw = fetch(exporter.port, None, "HEAD")
    assert h["Content-Encoding"] is None
    assert abs(int(h["Content-Length"]) - len(plain)) < 16   # its duration's digits
    # OpenMetrics gzipped too
    st, h, raw = fetch(exporter.port, "gzip",
                       accept="application/openmetrics-text; version=1.0.0")
    assert h["Content-Type"].startswith("application/openmetrics-text")
    assert gzip.decompress(raw).decode().endswith("# EOF\n")


def test_gzip_ratio_on_1000_cgroups(tool, tmp_path, capsys):
    """The ratio on a 1,000-cgroup tree (build_big): the text is several
    times smaller gzipped; the figure is printed for the record."""
    from fixtree import build_big
    t = build_big(tmp_path / "big", n=1000)
    x = Exporter(tool, t.path)
    try:
        _, _, plain = fetch(x.port)
        _, _, gz = fetch(x.port, "gzip")
    finally:
        x.stop()
    assert own(gzip.decompress(gz).decode())["energystat_exported_cgroups"] \
        == "1001"
    ratio = len(plain) / len(gz)
    with capsys.disabled():
        print(f"\ngzip on 1,000 cgroups: {len(plain)} -> {len(gz)} bytes, "
              f"ratio {ratio:.1f}")
    assert 400_000 < len(plain) < 440_000
    assert 6 < ratio < 30


def test_module_absent_then_created(tool, tmp_path):
    """No tree at all: the exporter starts (not exit 2), /metrics answers
    200 with cgroup_energy_up 0 (reason not_mounted) and its own metrics,
    which promtool accepts; the tree created: up 1 and its series without a
    restart; gone again: up 0. Each change is logged once."""
    root = tmp_path / "ce"
    x = Exporter(tool, str(root), "/a/b")       # a PATH that does not exist
    try:
        for i in range(3):
            st, h, raw = fetch(x.port)
            body = raw.decode()
            assert st == 200 and up_of(body) == ("0", "not_mounted")
            assert "cgroup_energy_joules_total" not in body
            assert own(body)["energystat_exported_cgroups"] == "0"
            promtool_check(body)
        s = own(body)
        assert s['energystat_scrape_errors_total{reason="not_mounted"}'] == "3"
        assert s["energystat_scrapes_total"] == "3"
        assert prom_samples(body)['energystat_build_info{version="0.1.0"}'] == "1"
        t, e = uneven_tree(tmp_path)                # makes tmp_path/ce
        body = fetch(x.port)[2].decode()
        assert up_of(body) == ("1", "ok")
        j = per_cgroup(body, "cgroup_energy_joules_total")
        assert set(j) == {'{cgroup="/a/b"}', '{cgroup="/a/b/c"}'}
        assert own(body)["energystat_exported_cgroups"] == "2"
        promtool_check(body)
        os.rename(root, tmp_path / "away")
        body = fetch(x.port)[2].decode()
        assert up_of(body) == ("0", "not_mounted")
        os.rename(tmp_path / "away", root)
        os.unlink(root / "energy.stat")             # a directory, nothing mounted
        body = fetch(x.port)[2].decode()
        assert up_of(body) == ("0", "not_mounted")
        s = own(body)
        assert s['energystat_scrape_errors_total{reason="not_mounted"}'] == "5"
        assert s["energystat_scrapes_total"] == "6"
        assert x.p.poll() is None
    finally:
        rc, err = x.stop()
    assert rc == 0
    lines = err.splitlines()
    assert lines == [
        f"energystat: no such directory: {root} (--root)",
        "energystat: until the tree can be read, /metrics has the exporter's "
        "own metrics and cgroup_energy_up 0 (reason not_mounted)",
        "energystat: the tree can be read again: /metrics has its series "
        "(cgroup_energy_up 1)",
        f"energystat: no such directory: {root} (--root)",
        "energystat: until the tree can be read, /metrics has the exporter's "
        "own metrics and cgroup_energy_up 0 (reason not_mounted)"], err


def test_default_root_module_not_loaded(tool):
    """The default root on this host, where the module is not loaded (the
    premise, asserted): reason not_loaded, and the log says modprobe."""
    assert not os.path.exists("/sys/module/cgroup_energy"), \
        "the premise: cgroup_energy is not loaded on the test host"
    x = Exporter(tool, None)
    try:
        body = fetch(x.port)[2].decode()
    finally:
        rc, err = x.stop()
    assert up_of(body) == ("0", "not_loaded") and rc == 0
    assert "modprobe cgroup_energy" in err.splitlines()[0]


def test_not_a_tree(tool, tmp_path):
    """--root at a directory whose energy.stat is a directory: not_a_tree."""
    (tmp_path / "ce" / "energy.stat").mkdir(parents=True)
    x = Exporter(tool, str(tmp_path / "ce"))
    try:
        body = fetch(x.port)[2].decode()
    finally:
        x.stop()
    assert up_of(body) == ("0", "not_a_tree")


def drop_dac_caps():
    """In the child before exec: drop CAP_DAC_OVERRIDE (1) and
    CAP_DAC_READ_SEARCH (2) from the bounding set (prctl PR_CAPBSET_DROP,
    24), so that root, after exec, obeys permission bits as any user."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:
            os._exit(99)


def test_permission_denied(tool, tmp_path):
    """A root the exporter's user may not look into (below a directory of
    mode 0; as root, without the capabilities that bypass permission bits):
    permission_denied, and the log says how to delegate (gid=, mode=);
    readable again: up 1."""
    locked = tmp_path / "locked"
    t = Tree(locked / "ce", info={"source": "model"})
    t.add("/", energy_uj=1, **root_keys(1))
    os.chmod(locked, 0)
    try:
        x = Exporter(tool, t.path, preexec_fn=drop_dac_caps
                     if os.geteuid() == 0 else None)
        try:
            body = fetch(x.port)[2].decode()
            os.chmod(locked, 0o755)         # the mount's gid= and mode=, say
            again = fetch(x.port)[2].decode()
        finally:
            rc, err = x.stop()
    finally:
        os.chmod(locked, 0o755)
    assert up_of(body) == ("0", "permission_denied") and rc == 0
    assert own(body)['energystat_scrape_errors_total{reason="permission_denied"}'] == "1"
    assert up_of(again) == ("1", "ok")
    assert err.startswith(f"energystat: permission denied reading {t.path}: "
                          "run as root, or have root mount the tree with -o "
                          "gid=<group>,mode=0440"), err


def test_health_counters_exact(tool, exporter):
    """energystat_scrapes_total counts every scrape, this one included:
    exact after 5 scrapes one by one, 3 HEAD, then 24 at once (the counters
    have a lock of their own, beside the tree's); errors stay 0; the
    duration is a small positive number."""
    for i in range(1, 6):
        s = own(fetch(exporter.port)[2].decode())
        assert s["energystat_scrapes_total"] == str(i)
    for _ in range(3):
        fetch(exporter.port, method="HEAD")
    seen = []

    def one():
        seen.append(own(fetch(exporter.port)[2].decode()))

    threads = [threading.Thread(target=one) for _ in range(24)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert len(seen) == 24
    # each counted itself when it began, after the 8 before, and saw at
    # most the 24 that ran at once
    assert all(9 <= int(s["energystat_scrapes_total"]) <= 32 for s in seen)
    s = own(fetch(exporter.port)[2].decode())
    assert s["energystat_scrapes_total"] == str(5 + 3 + 24 + 1)
    assert s["cgroup_energy_up"] == "1"
    assert s["energystat_exported_cgroups"] == "7"
    errors = {k: v for k, v in s.items()
              if k.startswith("energystat_scrape_errors_total{")}
    assert errors == {f'energystat_scrape_errors_total{{reason="{r}"}}': "0"
                      for r in ("not_loaded", "not_mounted", "permission_denied",
                                "not_a_tree", "read_error", "timeout", "torn")}
    assert 0 < float(s["energystat_scrape_duration_seconds"]) < 5


def test_listen_log_line_every_address(tool, tmp_path):
    """Without ADDR the log says every address (or every IPv4 address on a
    host without IPv6) and the port."""
    t, _ = uneven_tree(tmp_path)
    port = free_port()
    p = subprocess.Popen([tool, "--root", t.path, "--listen", str(port)],
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
    finally:
        p.terminate()
        assert p.wait(timeout=10) == 0
    assert line in (f"energystat: serving /metrics on every address, port {port}\n",
                    f"energystat: serving /metrics on every IPv4 address, "
                    f"port {port}\n"), line


def test_listen_log_line_ipv6_loopback(tool, tmp_path):
    """[::1]:PORT: the log says [::1] and the port; on a host without IPv6
    (python cannot bind ::1 either) it cannot listen: exit status 2."""
    t, _ = uneven_tree(tmp_path)
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
            port = s.getsockname()[1]
    except OSError:
        port = None
    if port is None:
        r = run(tool, "--root", t.path, "--listen", "[::1]:10043", check_rc=2,
                timeout=10)
        assert "cannot listen" in r.err
        return
    p = subprocess.Popen([tool, "--root", t.path, "--listen", f"[::1]:{port}"],
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
    finally:
        p.terminate()
        assert p.wait(timeout=10) == 0
    assert line == f"energystat: serving /metrics on [::1]:{port}\n", line


FILTERS = [
    # args, the cgroups whose series remain
    (["--include", "/a(/.*)?"], {"/a", "/a/b", "/a/b/c", "/a/d"}),
    (["--include", "/a"], {"/a"}),                      # anchored: /a only
    (["--include", "a"], set()),                        # matches no whole path
    (["--exclude", "/a/b.*"], {"/", "/a", "/a/d", "/e", "/e/f"}),
    (["--include", "/a.*", "--exclude", "/a/b(/.*)?"], {"/a", "/a/d"}),
    (["--include", "/e", "--include", "/a/d"], {"/e", "/a/d"}),   # any
    (["--exclude", "/", "--exclude", ".*/[bf]"], {"/a", "/a/b/c", "/a/d", "/e"}),
]


@pytest.mark.parametrize("args,want", FILTERS)
def test_include_exclude(tool, tmp_path, args, want):
    """--include/--exclude choose the per-cgroup series of --prometheus and
    of --listen alike (the same text); the root's machine-level families
    stay; the own-share series then no longer sum to the root."""
    t, e = uneven_tree(tmp_path)
    out = run(tool, "--root", t.path, "--prometheus", *args, check_rc=0).out
    promtool_check(out)
    for fam in ("cgroup_energy_joules_total", "cgroup_energy_cpu_seconds_total",
                "cgroup_energy_domain_joules_total"):
        got = {k.split('"')[1] for k in per_cgroup(out, fam)}
        assert got == want, fam
    s = prom_samples(out)
    assert s["cgroup_energy_measured_joules_total"] == str(e / 10**6).rstrip("0")
    if "/" not in want:
        j = per_cgroup(out, "cgroup_energy_joules_total")
        assert sum(j.values()) * 10**6 < e
    x = Exporter(tool, t.path, *args)
    try:
        body = fetch(x.port, "gzip")[2]
    finally:
        x.stop()
    body = gzip.decompress(body).decode()
    assert stable(body) == stable(out)
    assert own(body)["energystat_exported_cgroups"] == str(len(want))


@pytest.mark.parametrize("args,msg", [
    (["--prometheus", "--include", "a)(b"], "invalid --include 'a)(b'"),
    (["--prometheus", "--exclude", "["], "invalid --exclude '['"),
    (["--prometheus", "--include", "x{2,1}"], "invalid --include 'x{2,1}'"),
    (["--include", "/a"], "--include and --exclude choose the series of "
     "--prometheus and --listen"),
    (["--json", "--exclude", "/a"], "--include and --exclude choose"),
    (["--prometheus", "--include"], "option '--include' needs an argument"),
])
def test_bad_filter_refused(tool, tmp_path, args, msg):
    """A bad regex, or a filter without --prometheus or --listen: a usage
    error (exit 2), one line, nothing on standard output."""
    t, _ = uneven_tree(tmp_path)
    r = run(tool, "--root", t.path, *args, check_rc=2)
    assert r.out == "" and len(r.err.splitlines()) == 1, r.err
    assert msg in r.err, r.err


# ---- the node_exporter textfile route -------------------------------------------

from test_energystat import INVALID_NAMES, invalid_names_tree  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import urllib.request  # noqa: E402

import need  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVICE = os.path.join(REPO, "dist/systemd/cgroup-energy-textfile.service")
DEBIAN_TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"


def service_command(tool, textfile):
    """The service's ExecStart as systemd runs it: its Environment= with
    TEXTFILE set to textfile, ${VAR} expanded, @BINDIR@ (make install's) the
    directory of the tool under test."""
    text = open(SERVICE).read()
    env = dict(re.findall(r"^Environment=(\w+)=(.*)$", text, re.M))
    assert os.path.dirname(env["TEXTFILE"]) == DEBIAN_TEXTFILE_DIR
    env["TEXTFILE"] = str(textfile)
    (line,) = re.findall(r"^ExecStart=(.*)$", text, re.M)
    line = line.replace("@BINDIR@", os.path.dirname(tool))
    line = re.sub(r"\$\{(\w+)\}", lambda m: env[m[1]], line)
    return shlex.split(line)


def test_debian_textfile_directory():
    """Debian's prometheus-node-exporter reads the directory that the
    service writes to."""
    r = subprocess.run(["dpkg", "-L", "prometheus-node-exporter"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        need.missing("prometheus-node-exporter is not installed "
                     "(sh tests/deps.sh)")
    assert DEBIAN_TEXTFILE_DIR in r.stdout.splitlines()


def test_output_replaces_atomically(tool, tmp_path):
    """--output: the file appears whole (a temporary file beside it, which
    *.prom does not match, renamed); a tree that cannot be read leaves the
    old file; bad uses are errors that write nothing."""
    t, e = uneven_tree(tmp_path)
    d = tmp_path / "textfile"
    d.mkdir()
    f = d / "cgroup_energy.prom"
    cmd = service_command(tool, f)
    r = subprocess.run(cmd + ["--root", t.path], capture_output=True)
    assert r.returncode == 0 and r.stdout == b"" and r.stderr == b"", r
    want = run(tool, "--root", t.path, "--prometheus", check_rc=0).out
    assert f.read_text() == want and os.listdir(d) == [f.name]
    # mkstemp's 0600 widened to the umask's (the service: 0027, 0640)
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(f).st_mode & 0o777 == 0o666 & ~mask
    r = subprocess.run(cmd + ["--root", str(tmp_path / "gone")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no such directory" in r.stderr
    assert f.read_text() == want and os.listdir(d) == [f.name]
    r = run(tool, "--root", t.path, "--prometheus", "--output",
            str(tmp_path / "nodir" / "x.prom"), check_rc=2)
    assert r.err.startswith(f"energystat: cannot write {tmp_path}/nodir/x.prom.")
    for args in (["--json"], ["--listen", "9"], []):
        r = run(tool, "--root", t.path, *args, "--output", str(f), check_rc=2)
        assert "--output writes one --prometheus text" in r.err
    assert f.read_text() == want


def test_output_killed_leaves_no_temporary_file(tool, tmp_path):
    """SIGTERM (the timer's service stopped, a timeout) while --output
    writes: the temporary file goes with the process, the old file stays."""
    from fixtree import build_big
    t = build_big(tmp_path / "big", n=10000)
    d = tmp_path / "textfile"
    d.mkdir()
    f = d / "cgroup_energy.prom"
    f.write_text("old\n")
    p = subprocess.Popen([tool, "--root", t.path, "--prometheus", "--output",
                          str(f)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while len(os.listdir(d)) < 2 and p.poll() is None and \
            time.monotonic() < deadline:
        time.sleep(0.0005)
    # the premise: killed while its temporary file was there
    assert len(os.listdir(d)) == 2 and p.poll() is None, os.listdir(d)
    p.terminate()
    assert p.wait(timeout=10) == -15
    assert os.listdir(d) == [f.name] and f.read_text() == "old\n"
    # SIGHUP ignored (nohup): still ignored, the file written
    import signal
    p = subprocess.Popen([tool, "--root", t.path, "--prometheus", "--output",
                          str(f)], stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGHUP,
                                                          signal.SIG_IGN))
    while len(os.listdir(d)) < 2 and p.poll() is None and \
            time.monotonic() < deadline + 10:
        time.sleep(0.0005)
    p.send_signal(signal.SIGHUP)
    assert p.wait(timeout=30) == 0
    assert os.listdir(d) == [f.name] and f.read_text().startswith("# HELP")


def test_node_exporter_serves_the_textfile(tool, tmp_path):
    """A real node_exporter (Debian's), its textfile collector only, reading
    the file the service's command wrote: our series, the names that differ
    only in bytes that are not UTF-8 as distinct series, no scrape error."""
    exe = shutil.which("prometheus-node-exporter")
    if not exe:
        need.missing("prometheus-node-exporter is not installed "
                     "(sh tests/deps.sh)")
    t = invalid_names_tree(tmp_path / "ce")
    d = tmp_path / "textfile"
    d.mkdir()
    r = subprocess.run(service_command(tool, d / "cgroup_energy.prom") +
                       ["--root", t.path], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    port = free_port()
    p = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{port}",
                          "--collector.disable-defaults",
                          "--collector.textfile",
                          f"--collector.textfile.directory={d}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/metrics", timeout=5) as u:
                    body = u.read().decode()
                break
            except OSError:
                assert p.poll() is None, p.stderr.read().decode()
                assert time.monotonic() < deadline, "node_exporter never answered"
                time.sleep(0.1)
    finally:
        p.terminate()
        p.wait(timeout=10)
    s = prom_samples(body)
    assert s["node_textfile_scrape_error"] == "0", body
    j = {k: v for k, v in s.items()
         if k.startswith("cgroup_energy_joules_total{")}
    assert len(j) == len(INVALID_NAMES) + 1, j
    for i, shown in enumerate(INVALID_NAMES.values()):
        value = shown.replace("\\", "\\\\")
        assert any(f'cgroup="{value}"' in k and float(v) == i + 1
                   for k, v in j.items()), (value, j)
    assert 'cgroup_energy_source_info{' in body
    assert re.search(r'^node_textfile_mtime_seconds\{file="[^"]*cgroup_energy'
                     r'\.prom"\} ', body, re.M), body


# ---- TLS and basic authentication (--web.config.file) --------------------------

import ssl  # noqa: E402
import urllib.parse  # noqa: E402

WEB_CONFIG = os.path.join(REPO, "dist/energystat/web-config.yml")
PASSWORD = "s3cret pass"


def openssl(*args):
    exe = need.need("openssl", "openssl")
    r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def bcrypt(password, cost=4):
    """A bcrypt hash from htpasswd (Apache's own bcrypt, not the libxcrypt
    that energystat checks it with); cost 4, bcrypt's least, keeps tests
    quick."""
    exe = need.need("htpasswd", "apache2-utils")
    r = subprocess.run([exe, "-nbBC", str(cost), "", password],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    h = r.stdout.strip().lstrip(":")
    assert re.fullmatch(r"\$2y\$%02d\$[./A-Za-z0-9]{53}" % cost, h), h
    return h


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A self-signed server certificate for 127.0.0.1, a client CA and a
    client certificate it signs, and one it does not sign."""
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", d / "server.key", "-out",
            d / "server.crt", "-days", "2", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1")
    openssl("req", "-x509", *ec, "-keyout", d / "ca.key", "-out", d / "ca.crt",
            "-days", "2", "-subj", "/CN=energystat test CA")
    openssl("req", *ec, "-keyout", d / "client.key", "-out", d / "client.csr",
            "-subj", "/CN=prometheus")
    openssl("x509", "-req", "-in", d / "client.csr", "-CA", d / "ca.crt",
            "-CAkey", d / "ca.key", "-CAcreateserial", "-out", d / "client.crt",
            "-days", "2")
    openssl("req", "-x509", *ec, "-keyout", d / "other.key", "-out",
            d / "other.crt", "-days", "2", "-subj", "/CN=stranger")
    return d


def write_config(tmp_path, text):
    f = tmp_path / "web-config.yml"
    f.write_text(text)
    return f


class TLSExporter(Exporter):
    """energystat --listen with --web.config.file; scrapes over HTTPS that
    verify the server's certificate."""

    def __init__(self, tool, root, config, ca):
        self.port = free_port()
        self.ca = ca
        self.p = subprocess.Popen([tool, "--root", root, "--listen",
                                   f"127.0.0.1:{self.port}",
                                   "--web.config.file", config],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        line = self.p.stderr.readline()
        assert line.startswith("energystat: serving /metrics"), line

    def get_tls(self, user=None, password=None, cert=None, version=None):
        ctx = ssl.create_default_context(cafile=str(self.ca))
        if cert:
            ctx.load_cert_chain(cert[0], cert[1])
        if version:
            ctx.minimum_version = ctx.maximum_version = version
        headers = {}
        if user is not None:
            tok = base64.b64encode(f"{user}:{password}".encode()).decode()
            headers["Authorization"] = "Basic " + tok
        c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10,
                                        context=ctx)
        c.request("GET", "/metrics", headers=headers)
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        return r, body


import base64  # noqa: E402


@pytest.fixture
def tls_exporter(tool, tmp_path, pki):
    t, _ = uneven_tree(tmp_path)
    cfg = write_config(tmp_path, f"""\
tls_server_config:
  cert_file: {pki}/server.crt
  key_file: {pki}/server.key
basic_auth_users:
  alice: {bcrypt(PASSWORD)}
  bob: {bcrypt("bobs password")}
""")
    x = TLSExporter(tool, t.path, cfg, pki / "server.crt")
    x.tree = t
    yield x
    if x.p.poll() is None:
        x.stop()


def assert_401(r, body):
    assert r.status == 401
    assert r.getheader("WWW-Authenticate") == 'Basic realm="energystat"'
    assert "cgroup_energy" not in body


def test_tls_basic_auth(tool, tls_exporter):
    """The right user and password over TLS: the metrics, the same as
    --prometheus (a self-consistency check); anything else: 401 with a
    Basic challenge and no metrics."""
    r, body = tls_exporter.get_tls("alice", PASSWORD)
    assert r.status == 200
    promtool_check(body)
    one = run(tool, "--root", tls_exporter.tree.path, "--prometheus",
              check_rc=0).out
    assert stable(body) == stable(one)
    assert tls_exporter.get_tls("bob", "bobs password")[0].status == 200
    assert_401(*tls_exporter.get_tls("alice", "s3cret pas"))
    assert_401(*tls_exporter.get_tls("alice", PASSWORD + "x"))
    assert_401(*tls_exporter.get_tls("alice", "bobs password"))
    assert_401(*tls_exporter.get_tls("mallory", PASSWORD))
    assert_401(*tls_exporter.get_tls("alice", ""))
    assert_401(*tls_exporter.get_tls())
    # a wrong password after a right one (cached) is still refused
    assert tls_exporter.get_tls("alice", PASSWORD)[0].status == 200
    assert_401(*tls_exporter.get_tls("alice", "wrong"))
    rc, err = tls_exporter.stop()
    assert rc == 0 and PASSWORD not in err


def test_tls_concurrent_right_and_wrong(tls_exporter):
    """Scrapes in parallel, half with a wrong password: each gets its own
    answer (the cache of passwords that passed is shared by the threads)."""
    results = []

    def scrape(i):
        good = i % 2 == 0
        r, _ = tls_exporter.get_tls("alice", PASSWORD if good else f"bad{i}")
        results.append((good, r.status))

    threads = [threading.Thread(target=scrape, args=(i,)) for i in range(12)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert len(results) == 12
    assert sorted(results) == [(False, 401)] * 6 + [(True, 200)] * 6


def test_plain_http_to_tls_port_fails(tls_exporter):
    """Plain HTTP to the TLS port gets no HTTP answer, and no metrics."""
    with pytest.raises((http.client.HTTPException, OSError)):
        r, body = tls_exporter.get()
        assert "cgroup_energy" not in body   # not reached: raised above
    assert tls_exporter.get_tls("alice", PASSWORD)[0].status == 200


def test_tls_versions(tool, tmp_path, pki):
    """min_version TLS13: a TLS 1.2 client is refused, TLS 1.3 served
    (with prefer_server_cipher_suites, GnuTLS's %SERVER_PRECEDENCE)."""
    t, _ = uneven_tree(tmp_path)
    cfg = write_config(tmp_path, f"""\
tls_server_config:
  cert_file: {pki}/server.crt
  key_file: {pki}/server.key
  min_version: TLS13
  prefer_server_cipher_suites: true
""")
    x = TLSExporter(tool, t.path, cfg, pki / "server.crt")
    try:
        assert x.get_tls(version=ssl.TLSVersion.TLSv1_3)[0].status == 200
        with pytest.raises(ssl.SSLError):
            x.get_tls(version=ssl.TLSVersion.TLSv1_2)
    finally:
        x.stop()


def test_mutual_tls(tool, tmp_path, pki):
    """RequireAndVerifyClientCert: a client certificate that client_ca_file
    signs is served; none, or one it does not sign, gets 403. Relative
    names are relative to the configuration file's directory."""
    t, _ = uneven_tree(tmp_path)
    cfg = write_config(pki, """\
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
""")
    x = TLSExporter(tool, t.path, cfg, pki / "server.crt")
    try:
        r, body = x.get_tls(cert=(pki / "client.crt", pki / "client.key"))
        assert r.status == 200 and "cgroup_energy_joules_total" in body
        for cert in (None, (pki / "other.crt", pki / "other.key")):
            r, body = x.get_tls(cert=cert)
            assert r.status == 403 and "cgroup_energy" not in body
    finally:
        x.stop()


TLS_FILES = "tls_server_config:\n  cert_file: {pki}/server.crt\n  key_file: {pki}/server.key\n"


@pytest.mark.parametrize("text,key,msg", [
    ("tls_server_config:\n  cert_file: x\n  certfile: y\n",
     "tls_server_config.certfile", "unknown key"),
    ("tls_config: {{}}\n", "tls_config", "unknown key"),
    ("basic_auth_users: [alice]\n", "basic_auth_users", "expected a mapping"),
    ("tls_server_config: yes\n", "tls_server_config", "expected a mapping"),
    (TLS_FILES + "  min_version: 1.2\n", "tls_server_config.min_version",
     "not TLS10, TLS11, TLS12 or TLS13"),
    (TLS_FILES + "  min_version: TLS13\n  max_version: TLS12\n",
     "tls_server_config.min_version", "above max_version"),
    (TLS_FILES + "  client_auth_type: RequireAnyClientCert\n",
     "tls_server_config.client_auth_type", "not supported"),
    (TLS_FILES + "  client_auth_type: RequireAndVerifyClientCert\n",
     "tls_server_config", "needs client_ca_file"),
    (TLS_FILES + "  client_ca_file: {pki}/ca.crt\n",
     "tls_server_config", "needs client_auth_type"),
    (TLS_FILES + "  client_ca_file: {pki}/server.key\n"
     "  client_auth_type: RequireAndVerifyClientCert\n",
     "tls_server_config.client_ca_file", "no CA certificate"),
    (TLS_FILES + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
     "tls_server_config.cipher_suites", "not supported"),
    (TLS_FILES + "  prefer_server_cipher_suites: 1\n",
     "tls_server_config.prefer_server_cipher_suites", "expected true or false"),
    (TLS_FILES + "  cert: inline\n", "tls_server_config",
     "cert and cert_file exclude each other"),
    ("tls_server_config:\n  key_file: {pki}/server.key\n", "tls_server_config",
     "cert_file (or cert) is required"),
    ("tls_server_config:\n  cert_file: {pki}/none.crt\n  key_file: {pki}/server.key\n",
     "tls_server_config.cert_file", "cannot read"),
    ("tls_server_config:\n  cert_file: {pki}/server.crt\n  key_file: {pki}/ca.key\n",
     "tls_server_config.cert_file", "does not load with its key"),
    ("tls_server_config:\n  cert_file: {pki}/server.key\n  key_file: {pki}/server.key\n",
     "tls_server_config.cert_file", "does not load with its key"),
    ("http_server_config:\n  http2: maybe\n", "http_server_config.http2",
     "expected true or false"),
    ("http_server_config:\n  headers:\n    X-Frame-Options: deny\n",
     "http_server_config.headers", "not supported"),
    ("rate_limit:\n  burst: 20\n", "rate_limit", "not supported"),
    ("basic_auth_users:\n  a:b: {hash}\n", "basic_auth_users.a:b", "without ':'"),
    ("basic_auth_users:\n  alice: {hash}\n  alice: {hash}\n",
     "basic_auth_users.alice",
     "given twice"),
    ("tls_server_config:\n  cert_file: [a\n", "not YAML", ""),
    # a key that would drive the terminal is shown escaped
    ('tls_server_config:\n  "\\e[2J": 1\n', "tls_server_config.\\x1b[2J",
     "unknown key"),
])
def test_bad_web_config(tool, tmp_path, pki, text, key, msg):
    """A malformed file, an unknown or unsupported key, a wrong type, a
    file that cannot be used: exit 2 at startup, one line naming the file,
    the line and the key, nothing served."""
    t, _ = uneven_tree(tmp_path)
    cfg = write_config(tmp_path, text.format(pki=pki, hash=bcrypt("x")))
    port = free_port()
    r = run(tool, "--root", t.path, "--listen", f"127.0.0.1:{port}",
            "--web.config.file", cfg, check_rc=2, timeout=30)
    assert r.out == "" and len(r.err.splitlines()) == 1, r.err
    assert re.match(f"energystat: --web.config.file {re.escape(str(cfg))}: "
                    r"line \d+: ", r.err), r.err
    assert key in r.err and msg in r.err, r.err
    assert "\x1b" not in r.err


@pytest.mark.parametrize("value", [
    "change-me",                                          # a plain password
    "$1$saltsalt$qjJj4Wxl8UzC5cQzvlv7s0",                 # MD5-crypt
    "$6$saltsalt$" + "a" * 86,                            # SHA-512-crypt
    "$2y$03$" + "a" * 53,                                 # cost below 4
    "$2y$32$" + "a" * 53,                                 # cost above 31
    "$2x$10$" + "a" * 53,                                 # the buggy variant
    "$2y$10$" + "a" * 52,                                 # one short
    "$2y$10$" + "a" * 52 + "!",                           # not bcrypt's base64
    "",                                                   # null
    "[a]",                                                # not a string
])
def test_non_bcrypt_hash_refused(tool, tmp_path, value):
    t, _ = uneven_tree(tmp_path)
    cfg = write_config(tmp_path, f"basic_auth_users:\n  alice: '{value}'\n"
                       if value and value[0] != "[" else
                       f"basic_auth_users:\n  alice: {value}\n")
    r = run(tool, "--root", t.path, "--listen", "127.0.0.1:1",
            "--web.config.file", cfg, check_rc=2, timeout=30)
    assert len(r.err.splitlines()) == 1, r.err
    assert "line 2: basic_auth_users.alice: not a bcrypt hash" in r.err
    assert value not in r.err or not value    # the hash is not printed


def test_web_config_usage(tool, tmp_path):
    t, _ = uneven_tree(tmp_path)
    r = run(tool, "--root", t.path, "--web.config.file", WEB_CONFIG, check_rc=2)
    assert "needs --listen" in r.err
    r = run(tool, "--root", t.path, "--listen", "127.0.0.1:1",
            "--web.config.file", tmp_path / "none.yml", check_rc=2)
    assert f"--web.config.file {tmp_path}/none.yml: No such file" in r.err
    # before the tree is read: refused whatever the module's state
    r = run(tool, "--root", tmp_path / "none", "--listen", "127.0.0.1:1",
            "--web.config.file", write_config(tmp_path, "x: 1\n"), check_rc=2)
    assert len(r.err.splitlines()) == 1 and "x: unknown key" in r.err


def doc_web_configs():
    """The shipped example and the web-config.yml of docs/prometheus.md."""
    doc = open(os.path.join(REPO, "docs/prometheus.md")).read()
    blocks = re.findall(r"```yaml\n# web-config.yml\n(.*?)```", doc, re.S)
    assert len(blocks) == 1
    return [open(WEB_CONFIG).read(), blocks[0]]


@pytest.mark.parametrize("which", [0, 1])
def test_documented_web_configs(tool, tmp_path, pki, which):
    """The shipped example and the documented one, with their certificate
    and key in place: promtool check web-config (Prometheus's own parser)
    and energystat both take them, and the example's password (change-me)
    gets through."""
    text = doc_web_configs()[which]
    names = re.findall(r"^\s*(cert_file|key_file): (\S+)$", text, re.M)
    assert [n for n, _ in names] == ["cert_file", "key_file"]
    for n, path in names:
        local = tmp_path / os.path.basename(path)
        shutil.copy(pki / ("server.crt" if n == "cert_file" else "server.key"),
                    local)
        text = text.replace(path, str(local))
    cfg = write_config(tmp_path, text)
    exe = need.need("promtool", "prometheus")
    r = subprocess.run([exe, "check", "web-config", str(cfg)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "SUCCESS" in r.stdout + r.stderr, r
    t, _ = uneven_tree(tmp_path)
    x = TLSExporter(tool, t.path, cfg, pki / "server.crt")
    try:
        user = re.search(r"^basic_auth_users:\n(?:\s*#.*\n)*\s+(\w+):", text,
                         re.M)[1]
        assert x.get_tls(user, "change-me")[0].status == 200
        assert_401(*x.get_tls(user, "change-you"))
    finally:
        x.stop()


def doc_scrape_config():
    """The Prometheus side of docs/prometheus.md's TLS and basic auth."""
    doc = open(os.path.join(REPO, "docs/prometheus.md")).read()
    sec = doc[doc.index("## TLS and basic auth"):]
    return re.search(r"```yaml\n(scrape_configs:\n.*?)```", sec, re.S)[1]


def test_prometheus_scrapes_over_tls(tool, tmp_path, pki):
    """A real Prometheus, with docs/prometheus.md's scrape configuration,
    scrapes over TLS with basic authentication (target up, the series
    stored); the same job with a wrong password is down with 401."""
    t, _ = uneven_tree(tmp_path)
    cfg = write_config(tmp_path, f"""\
tls_server_config:
  cert_file: {pki}/server.crt
  key_file: {pki}/server.key
basic_auth_users:
  prometheus: {bcrypt(PASSWORD)}
""")
    x = TLSExporter(tool, t.path, cfg, pki / "server.crt")
    r, body = x.get_tls("prometheus", PASSWORD)
    assert r.status == 200
    series = [s for s in prom_samples(body)
              if s.startswith("cgroup_energy_joules_total{")]
    assert 2 <= len(series) <= 20
    (tmp_path / "pw").write_text(PASSWORD)
    job = doc_scrape_config()
    job = job.replace("/etc/prometheus/energystat-ca.crt", str(pki / "server.crt"))
    job = job.replace("/etc/prometheus/energystat.password", str(tmp_path / "pw"))
    job = job.replace('"node1:10043"', f'"127.0.0.1:{x.port}"')
    assert str(tmp_path / "pw") in job and str(x.port) in job
    wrong = job.split("\n", 1)[1].replace("job_name: energystat",
                                          "job_name: wrong")
    wrong = wrong.replace(f"password_file: {tmp_path}/pw", "password: wrong")
    assert "password: wrong" in wrong
    # the scrape timeout is a hang guard: a scrape takes milliseconds
    conf = tmp_path / "prometheus.yml"
    conf.write_text("global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\n"
                    + job + wrong)
    exe = need.need("prometheus", "prometheus")
    port = free_port()
    p = subprocess.Popen([exe, f"--config.file={conf}",
                          f"--storage.tsdb.path={tmp_path}/data",
                          f"--web.listen-address=127.0.0.1:{port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = f"http://127.0.0.1:{port}/api/v1/"
    try:
        health = {}
        for _ in range(120):                 # up to 60 s: a hang guard
            time.sleep(0.5)
            try:
                with urllib.request.urlopen(api + "targets", timeout=10) as f:
                    targets = json.load(f)["data"]["activeTargets"]
            except OSError:
                continue
            health = {tg["labels"]["job"]: (tg["health"], tg["lastError"])
                      for tg in targets}
            if health.get("energystat", ("",))[0] == "up" and \
                    "401" in health.get("wrong", ("", ""))[1]:
                break
        assert health["energystat"] == ("up", ""), health
        assert health["wrong"] == (
            "down", "server returned HTTP status 401 Unauthorized"), health
        q = urllib.parse.quote('count(cgroup_energy_joules_total{job="energystat"})')
        with urllib.request.urlopen(api + "query?query=" + q, timeout=10) as f:
            (res,) = json.load(f)["data"]["result"]
        assert int(res["value"][1]) == len(series)
    finally:
        p.terminate()
        p.wait(timeout=30)
        x.stop()
