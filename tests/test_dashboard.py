# SPDX-License-Identifier: GPL-2.0
"""The Grafana dashboard (dist/grafana/cgroup-energy.json): every panel's
query, taken from the JSON into a generated file of recording rules, runs
under `promtool test rules` over series recorded from the exporter
(tests/dashboard.py) and gives the values that the fixture's powers say,
computed here; and the committed rendering has one panel per dashboard
panel.

Run: /usr/bin/python3 -m pytest -q tests/test_dashboard.py
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import dashboard as db  # noqa: E402
from test_energystat import tool  # noqa: E402,F401
import need  # noqa: E402

EVAL = f"{db.MINUTES - 1}m"             # the last recorded minute
RANGE_S = 240                            # db.RANGE
INST = {"instance": "node1:10043", "job": "cgroup_energy"}


def pod_w(uid):
    return sum(db.subtree_w(cg) for cg, u in db.POD_OF.items() if u == uid)


def service_w(unit):
    return sum(w for cg, w in db.POWER.items()
               if cg.startswith("/system.slice/" + unit))


def expected():
    """{panel title: [(labels, value)]}, from the fixture's numbers."""
    ns = {}
    for uid, (n, _) in db.PODS.items():
        ns[n] = ns.get(n, 0) + pod_w(uid)
    units = ("nginx.service", "db.service")
    inst = {"instance": INST["instance"]}
    return {
        "Power by namespace (W)": [({"namespace": n}, w) for n, w in ns.items()],
        "Power by pod (W)": [({"namespace": n, "pod": p}, pod_w(uid))
                             for uid, (n, p) in db.PODS.items()],
        "Power by systemd service (W)": [({"unit": u}, service_w(u))
                                         for u in units],
        "Machine power (W)": [(inst, sum(db.POWER.values()) + db.IDLE_W)],
        "Energy by service over the range (J)": [
            ({"unit": u}, service_w(u) * RANGE_S) for u in units],
        "Energy by namespace over the range (J)": [
            ({"namespace": n}, w * RANGE_S) for n, w in ns.items()],
        "Module read errors over the range": [
            (inst, db.READ_ERRORS_PER_MIN * RANGE_S / 60)],
        "Sampler overruns over the range": [
            (inst, db.OVERRUNS_PER_MIN * RANGE_S / 60)],
        "Last sample age (s)": [(inst, db.SAMPLE_AGE_S)],
        "Energy source": [(dict(inst, source="model", kind="modelled"), 1)],
    }


def labels(d):
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(d.items())) + "}"


def rule_name(pid, ref):
    return f"dashboard:panel_{pid}:{ref.lower()}"


def test_panels_are_what_the_tests_check():
    got = {title for _, title, _, _ in db.panels()}
    assert got == set(expected())
    for _, title, _, targets in db.panels():
        for _, expr, _ in targets:
            assert "cgroup_energy_" in expr, title


def test_dashboard_queries_with_promtool(tool, tmp_path):  # noqa: F811
    promtool = shutil.which("promtool")
    if not promtool:
        need.missing("promtool missing (Debian package prometheus)")
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": rule_name(pid, ref), "expr": db.promql(expr)}
        for pid, _, _, targets in db.panels() for ref, expr, _ in targets]}]}
    (tmp_path / "rules.yml").write_text(json.dumps(rules, indent=1))
    series = db.record(tool, str(tmp_path))
    want = expected()
    tests = []
    for pid, title, _, targets in db.panels():
        for ref, _, _ in targets:
            tests.append({"expr": rule_name(pid, ref), "eval_time": EVAL,
                          "exp_samples": [
                              {"labels": rule_name(pid, ref) + labels(lab),
                               "value": v} for lab, v in want[title]]})
    spec = {"rule_files": ["rules.yml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m",
                       "input_series": [{"series": k, "values": " ".join(v)}
                                        for k, v in series.items()],
                       "promql_expr_test": tests}]}
    (tmp_path / "test.yml").write_text(json.dumps(spec, indent=1))
    r = subprocess.run([promtool, "test", "rules", "test.yml"],
                       cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_rendering_has_every_panel():
    """The README's rendering: one panel per dashboard panel, titled as in
    the dashboard, and it says what it is."""
    svg = open(os.path.join(db.REPO, "docs", "dashboard.svg")).read()
    for _, title, _, _ in db.panels():
        assert f">{title}<" in svg.replace("&amp;", "&"), title
    assert "not a Grafana screenshot" in svg
    assert len(re.findall(r'class="panel"', svg)) == len(db.panels())
