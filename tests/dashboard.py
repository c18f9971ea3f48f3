# SPDX-License-Identifier: GPL-2.0
"""Series recorded from the exporter for the Grafana dashboard's tests
(tests/test_dashboard.py) and its rendering (tests/render_dashboard.py).

A fixture tree of pods (both QoS layouts of the systemd driver) and services
burns at fixed powers (W, each cgroup's own tasks); energystat --prometheus
reads it once a minute for MINUTES minutes, the counters (which include the
descendants', as the module's do) growing by power x 60 s each minute. The
expected values of the tests come from POWER, not from energystat's output."""

import json
import os
import subprocess
import time

from fixtree import Tree, root_keys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DASHBOARD = os.path.join(REPO, "dist", "grafana", "cgroup-energy.json")
MINUTES = 6                      # samples at 0, 1, ... MINUTES - 1 minutes
INSTANCE = 'instance="node1:10043",job="cgroup_energy"'

UID1 = "5f1c3a2b-8d4e-4f6a-9b0c-1d2e3f4a5b6c"
UID2 = "0d6a2c1e-4b3f-4e5d-8a7b-9c0d1e2f3a4b"
UID3 = "9e8d7c6b-5a4f-4e3d-2c1b-0a9f8e7d6c5b"
ID = "0123456789abcdef" * 4
_SD = lambda u: u.replace("-", "_")
_BURST = "/kubepods.slice/kubepods-burstable.slice"
_BEST = "/kubepods.slice/kubepods-besteffort.slice"
POD1 = f"{_BURST}/kubepods-burstable-pod{_SD(UID1)}.slice"
POD2 = f"/kubepods.slice/kubepods-pod{_SD(UID2)}.slice"
POD3 = f"{_BEST}/kubepods-besteffort-pod{_SD(UID3)}.slice"

# each cgroup's own power, watts (0 for the levels in between)
POWER = {
    "/": 0.25,
    "/kubepods.slice": 0, _BURST: 0, _BEST: 0, "/system.slice": 0,
    POD1: 0.5, f"{POD1}/cri-containerd-{ID}.scope": 3.0,
    POD2: 0, f"{POD2}/cri-containerd-{ID[::-1]}.scope": 1.0,
    POD3: 0, f"{POD3}/crio-{ID}.scope": 2.0,
    "/system.slice/nginx.service": 1.5,
    "/system.slice/nginx.service/worker": 0.5,
    "/system.slice/db.service": 4.0,
}
IDLE_W = 5.0
READ_ERRORS_PER_MIN = 1
OVERRUNS_PER_MIN = 2
SAMPLE_AGE_S = 3                 # the module's last sample, when read

# kube-state-metrics' kube_pod_info of the three pods
PODS = {UID1: ("shop", "web-0"), UID2: ("shop", "db-0"),
        UID3: ("batch", "job-x")}
POD_OF = {POD1: UID1, POD2: UID2, POD3: UID3}


def subtree_w(cg):
    return sum(w for c, w in POWER.items()
               if c == cg or cg == "/" or c.startswith(cg + "/"))


def _write(t, minute):
    for cg in POWER:
        uj = round(subtree_w(cg) * 60 * minute * 1e6)
        extra = {}
        if cg == "/":
            extra = root_keys(uj, idle_uj=round(IDLE_W * 60 * minute * 1e6))
        t.add(cg, energy_uj=uj, usage_usec=uj // 4, wakeups=minute,
              impact_usec=uj // 4, **extra)
    # the module's last sample SAMPLE_AGE_S before the read (the exporter
    # reports the age against CLOCK_MONOTONIC, as time.monotonic_ns())
    t.set_info({"version": "0.1.0", "source": "model", "domains": "none",
                "split": "impact", "interval_ms": 100,
                "last_sample_ns": time.monotonic_ns() - SAMPLE_AGE_S * 10**9,
                "samples": 600 * minute,
                "sampler_overruns": OVERRUNS_PER_MIN * minute,
                "energy_read_errors": READ_ERRORS_PER_MIN * minute})


def _samples(text):
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = v
    return out


def with_instance(series):
    """name{labels} -> name{labels,instance,job}, as a scrape stores it."""
    if "{" not in series:
        return f"{series}{{{INSTANCE}}}"
    return series[:-1] + "," + INSTANCE + "}"


def record(tool, tmp):
    """{series (with instance and job): [value per minute]} read by
    energystat --prometheus, and kube-state-metrics' kube_pod_info. The
    age of the last sample is truncated to whole seconds: it also holds the
    time between writing energy.info and the read (0.1 s once on a loaded
    host)."""
    t = Tree(os.path.join(tmp, "ce"))
    series = {}
    for minute in range(MINUTES):
        _write(t, minute)
        r = subprocess.run([tool, "--root", t.path, "--prometheus"],
                           capture_output=True, text=True, check=True)
        for k, v in _samples(r.stdout).items():
            if k.startswith("cgroup_energy_last_sample_age_seconds"):
                v = str(int(float(v)))      # less the read's own time
            series.setdefault(with_instance(k), []).append(v)
    for uid, (ns, pod) in PODS.items():
        k = (f'kube_pod_info{{namespace="{ns}",pod="{pod}",uid="{uid}",'
             f'node="node1",instance="ksm:8080",job="kube-state-metrics"}}')
        series[k] = ["1"] * MINUTES
    return series


def panels():
    """[(panel id, title, type, [(refId, expr, legendFormat)])] of the
    dashboard."""
    with open(DASHBOARD) as f:
        d = json.load(f)
    return [(p["id"], p["title"], p["type"],
             [(t["refId"], t["expr"], t.get("legendFormat", ""))
              for t in p["targets"]]) for p in d["panels"]]


# Grafana's variables, as the dashboard would have them over a 4-minute
# range with a 1-minute scrape interval.
RANGE = "4m"
RATE_INTERVAL = "2m"


def promql(expr):
    return expr.replace("$__rate_interval", RATE_INTERVAL) \
               .replace("$__range", RANGE)
