#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Render the Grafana dashboard (dist/grafana/cgroup-energy.json) to an SVG
for the README, without Grafana: the series recorded from the exporter
(tests/dashboard.py) are loaded into a real Prometheus (Debian's, via
`promtool tsdb create-blocks-from openmetrics`), each panel's query runs on
it as Grafana would run it, and each panel is drawn where its gridPos puts
it: time series as lines, bar gauges as bars, stats as a number, tables as
rows. Not a Grafana screenshot.

  /usr/bin/python3 tests/render_dashboard.py [OUT.svg]   (default docs/dashboard.svg)
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from html import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dashboard as db  # noqa: E402

COL, ROW = 50, 32                 # pixels per grid column and row
COLOURS = ["#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1"]


def prometheus(series, start, work):
    """A Prometheus on a free loopback port holding series (one sample per
    minute from start). Returns (process, base URL)."""
    om = os.path.join(work, "series.om")
    with open(om, "w") as f:
        for k, values in series.items():
            for m, v in enumerate(values):
                f.write(f"{k} {v} {start + 60 * m}\n")
        f.write("# EOF\n")
    data = os.path.join(work, "data")
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics",
                    om, data], check=True, capture_output=True)
    conf = os.path.join(work, "prometheus.yml")
    with open(conf, "w") as f:
        f.write("global: {}\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen(["prometheus", f"--config.file={conf}",
                          f"--storage.tsdb.path={data}",
                          f"--web.listen-address=127.0.0.1:{port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/-/ready", timeout=2)
            return p, url
        except OSError:
            time.sleep(0.1)
    p.kill()
    raise SystemExit("prometheus did not start")


def query(url, expr, **params):
    api = "query_range" if "step" in params else "query"
    q = urllib.parse.urlencode(dict(query=db.promql(expr), **params))
    with urllib.request.urlopen(f"{url}/api/v1/{api}?{q}", timeout=30) as r:
        return json.load(r)["data"]["result"]


def legend(fmt, metric):
    for k, v in metric.items():
        fmt = fmt.replace("{{" + k + "}}", v)
    return fmt


def panel_svg(p, results, x, y, w, h):
    out = [f'<g class="panel"><rect x="{x}" y="{y}" width="{w - 6}" '
           f'height="{h - 6}" rx="3" fill="#181b1f" stroke="#2c3235"/>',
           f'<text x="{x + 8}" y="{y + 18}" fill="#ccccdc" font-size="13" '
           f'font-weight="bold">{escape(p["title"])}</text>']
    fmt = p["targets"][0].get("legendFormat", "")
    unit = {"watt": " W", "joule": " J", "s": " s"}.get(
        p["fieldConfig"]["defaults"]["unit"], "")
    top, bottom = y + 30, y + h - 14
    if p["type"] == "timeseries":
        lines = [(legend(fmt, r["metric"]),
                  [(float(t), float(v)) for t, v in r["values"]])
                 for r in results]
        ts = [t for _, pts in lines for t, _ in pts] or [0, 1]
        vmax = max([v for _, pts in lines for _, v in pts] + [1e-9]) * 1.15
        t0, t1 = min(ts), max(ts)
        pw = w - 190
        for k, (name, pts) in enumerate(lines):
            c = COLOURS[k % len(COLOURS)]
            pl = " ".join(
                f"{x + 10 + (t - t0) / max(t1 - t0, 1) * pw:.1f},"
                f"{bottom - v / vmax * (bottom - top):.1f}" for t, v in pts)
            out.append(f'<polyline points="{pl}" fill="none" stroke="{c}" '
                       'stroke-width="2"/>')
            out.append(f'<text x="{x + pw + 20}" y="{top + 14 + 16 * k}" '
                       f'fill="{c}" font-size="11">{escape(name)} '
                       f'{pts[-1][1]:.2f}{unit}</text>')
        out.append(f'<text x="{x + 10}" y="{top + 10}" fill="#8e8e8e" '
                   f'font-size="10">{vmax / 1.15:.2f}{unit}</text>')
    elif p["type"] == "bargauge":
        vals = sorted(((legend(fmt, r["metric"]), float(r["value"][1]))
                       for r in results), key=lambda e: -e[1])
        vmax = max([v for _, v in vals] + [1e-9])
        for k, (name, v) in enumerate(vals):
            by = top + 8 + 28 * k
            out.append(f'<text x="{x + 10}" y="{by + 12}" fill="#ccccdc" '
                       f'font-size="11">{escape(name)}</text>')
            out.append(f'<rect x="{x + 130}" y="{by}" width="'
                       f'{v / vmax * (w - 260):.1f}" height="16" '
                       f'fill="{COLOURS[k % len(COLOURS)]}"/>')
            out.append(f'<text x="{x + w - 120}" y="{by + 12}" fill="#ccccdc" '
                       f'font-size="11">{v:.0f}{unit}</text>')
    elif p["type"] == "stat":
        v = float(results[0]["value"][1]) if results else float("nan")
        out.append(f'<text x="{x + w / 2 - 3}" y="{y + h / 2 + 18}" '
                   'text-anchor="middle" fill="#73bf69" font-size="30">'
                   f'{v:g}{unit}</text>')
    else:
        for k, r in enumerate(results):
            out.append(f'<text x="{x + 10}" y="{top + 14 + 16 * k}" '
                       f'fill="#ccccdc" font-size="11">'
                       f'{escape(legend(fmt, r["metric"]))}</text>')
    out.append("</g>")
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        db.REPO, "docs", "dashboard.svg")
    tool = os.environ.get("ENERGYSTAT") or os.path.join(
        db.REPO, "userspace", "energystat")
    subprocess.run(["make", "-s", "-C", os.path.join(db.REPO, "userspace")],
                   check=True)
    with open(db.DASHBOARD) as f:
        dash = json.load(f)
    with tempfile.TemporaryDirectory() as work:
        series = db.record(tool, work)
        start = int(time.time()) // 3600 * 3600 - 3 * 3600
        end = start + 60 * (db.MINUTES - 1)
        p, url = prometheus(series, start, work)
        try:
            results = []
            for pn in dash["panels"]:
                expr = pn["targets"][0]["expr"]
                if pn["type"] == "timeseries":
                    results.append(query(url, expr, start=start + 120,
                                         end=end, step=15))
                else:
                    results.append(query(url, expr, time=end))
        finally:
            p.terminate()
            p.wait()
    width = 24 * COL
    height = max(pn["gridPos"]["y"] + pn["gridPos"]["h"]
                 for pn in dash["panels"]) * ROW + 40
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" font-family="sans-serif">',
           "<!-- SPDX-License-Identifier: GPL-2.0 -->",
           f'<rect width="{width}" height="{height}" fill="#111217"/>',
           f'<text x="8" y="24" fill="#ccccdc" font-size="15">'
           f'{escape(dash["title"])}: a rendering of the dashboard\'s queries '
           'over series recorded from the exporter (tests/render_dashboard.py),'
           ' not a Grafana screenshot</text>']
    for pn, res in zip(dash["panels"], results):
        g = pn["gridPos"]
        svg += panel_svg(pn, res, g["x"] * COL + 3, 40 + g["y"] * ROW,
                         g["w"] * COL, g["h"] * ROW)
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(svg) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
