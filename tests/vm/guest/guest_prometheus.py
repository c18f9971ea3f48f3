#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Guest side of test_prometheus.py: energystat --listen scraped by a real
Prometheus every second for a minute while pod-shaped cgroups burn, beside
a kube-state-metrics stand-in; then Prometheus's HTTP API against the
module's own snapshots, and a second energystat run as a container would
run it against the first.

usage: guest_prometheus.py MODULE.ko CGWORK ENERGYSTAT PROMETHEUS_PID

Prometheus is started before this script, by its command line in
test_prometheus.py, with prometheus.yml (scraping HOST and KSM below) and
its log in PROM_LOG: the two starts, each several seconds under TCG,
overlap."""
import http.server
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from common import (CG, EN, REPO, Work, fifo, info, insmod, main_args,
                    mkcg, mount_en, next_sample, scenarios, sh, snapshot)

KO, CGWORK = main_args()
ES, PROM_PID = os.path.abspath(sys.argv[3]), int(sys.argv[4])
W = Work(CGWORK)
HOST, CTR, KSM, PROM = 10043, 9401, 9402, 9090      # loopback ports
SCRAPE_S = 60           # the minute of scrapes while the loops burn
AVG_S = (10, 60, 300)   # energy.stat's power averages' windows
IDLE_S = 3              # their decay, after the loops stopped, over this
# Each end of the compared window: the module's snapshots for this long,
# two or more scrapes (one a second) among them.
CAPTURE_S = 2.5
WORK = Path('/tmp/exporter')
PROM_LOG = Path('/tmp/prometheus.log')


def container(uid, qos, cid):
    """A container's cgroup as the kubelet's systemd driver (the pod slice,
    the uid's '-' as '_') and containerd (the scope) name it; Guaranteed
    pods sit directly under kubepods.slice."""
    sd = uid.replace('-', '_')
    pod = (f'kubepods.slice/kubepods-pod{sd}.slice' if qos == 'guaranteed'
           else f'kubepods.slice/kubepods-{qos}.slice/'
           f'kubepods-{qos}-pod{sd}.slice')
    return f'{pod}/cri-containerd-{cid}.scope'


# name: (namespace, pod, uid, qos, container id); 'web' runs on another
# node: kube-state-metrics lists it, this node has no cgroup of it
PODS = {
    'cart': ('shop', 'cart-5d8f7c9b6-x2k4q',
             '3f6b8a52-1c7d-4e9a-b0f2-6d8c4a1e9b37', 'burstable', '7c' * 32),
    'db': ('shop', 'db-0', '9a0e4c1b-5f2d-4b8e-a7c3-2e1f0d9c8b7a',
           'guaranteed', 'd1' * 32),
    'exporter': ('monitoring', 'cgroup-energy-7xk2p',
                 'c4d5e6f7-0a1b-4c2d-8e3f-4a5b6c7d8e9f', 'besteffort',
                 'e5' * 32),
    'web': ('shop', 'web-6b7c8d9e0f-abcde',
            '0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3e', 'burstable', None),
}
CART = container(*PODS['cart'][2:])
DB = container(*PODS['db'][2:])
EXPORTER = container(*PODS['exporter'][2:])
SVC = 'system.slice/burn.service'
# name: (cgroup, CPU); a loop of its own on CPU 0, two sharing CPU 1
BURNERS = {'cart': (CART, 0), 'db': (DB, 1), 'burn.service': (SVC, 1)}
BURNING = [rel for rel, _ in BURNERS.values()]

KSM_TEXT = '# HELP kube_pod_info Information about pod.\n' \
    '# TYPE kube_pod_info gauge\n' + ''.join(
        f'kube_pod_info{{namespace="{ns}",pod="{pod}",uid="{uid}",'
        f'node="{"node1" if cid else "node2"}",created_by_kind="ReplicaSet"}}'
        ' 1\n' for ns, pod, uid, _, cid in PODS.values())

# The containerised exporter, in its own cgroup, cgroup, mount and PID
# namespaces: the node's tree bind-mounted (a hostPath volume), the node's
# own mount gone, /sys/fs/cgroup the container's own cgroup2 mount.
CTR_SH = f"""set -e
mount --bind {EN} {WORK}/energy
umount {EN}
umount {CG}
mount -t cgroup2 none {CG}
cat /proc/self/cgroup > {WORK}/ctr-self
ls {CG} > {WORK}/ctr-view
exec {ES} --root {WORK}/energy --listen 127.0.0.1:{CTR}
"""

# served series that depend on when, not what, the exporter read
TIMED = ('cgroup_energy_watts', 'cgroup_energy_measured_watts',
         'cgroup_energy_last_sample_age_seconds')
# and the counts of each exporter process's own scrapes
OWN = ('energystat_scrapes_total', 'energystat_scrape_errors_total',
       'energystat_scrape_duration_seconds')


class KsmHandler(http.server.BaseHTTPRequestHandler):
    """kube-state-metrics' kube_pod_info for the pods, fixed."""

    def do_GET(self):
        body = KSM_TEXT.encode()
        self.send_response(200)
        self.send_header('Content-Type', 'text/plain; version=0.0.4')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def api(path, **params):
    """Prometheus's HTTP API: the data of /api/v1/@path?@params."""
    d = json.loads(get(f'http://127.0.0.1:{PROM}/api/v1/{path}?'
                       + urllib.parse.urlencode(params)))
    if d['status'] != 'success':
        raise RuntimeError(f'{path} {params}: {d}')
    return d['data']


def query(q, at):
    """Instant query @q at time @at (s): [(labels, value)]."""
    return [(r['metric'], float(r['value'][1]))
            for r in api('query', query=q, time=f'{at:.3f}')['result']]


def rule_expr(record):
    """The expression of @record in the recording rules that docs/prometheus.md
    points to (dist/prometheus/): the rules and the test cannot drift."""
    import yaml     # python3-yaml (tests/deps.sh)
    rules = yaml.safe_load((REPO / 'dist/prometheus/'
                            'cgroup-energy-names.rules.yml').read_text())
    [expr] = [r['expr'] for g in rules['groups'] for r in g['rules']
              if r.get('record') == record]
    return expr


def wait_until(t):
    time.sleep(max(0, t - time.time()))


def s_start(ctx):
    sh('ip link set lo up')
    insmod(KO)
    mount_en()
    mkcg(*BURNING, EXPORTER)
    (WORK / 'energy').mkdir(parents=True)
    ksm = http.server.ThreadingHTTPServer(('127.0.0.1', KSM), KsmHandler)
    threading.Thread(target=ksm.serve_forever, daemon=True).start()
    ctx['procs'] = [
        subprocess.Popen([ES, '--listen', f'127.0.0.1:{HOST}'],
                         stdout=subprocess.DEVNULL),
        subprocess.Popen(
            ['sh', '-c', f'echo $$ > {CG / EXPORTER}/cgroup.procs && exec '
             'unshare --cgroup --mount --pid --fork --mount-proc '
             'sh -c "$0"', CTR_SH], stdout=subprocess.DEVNULL)]
    # The loops at nice 19: they take what the rest leaves, and Prometheus,
    # the exporters and this script the CPU when they wake. (At nice 0, on
    # a host running QEMU slowly, a scrape of either exporter outlasted its
    # 1 s timeout and the targets stayed down: CI's run of d811c46.) Nice
    # 10 or more makes them background work: their CPU time weighs
    # kqos_background (0.8) against the foreground tasks beside them, in
    # impact_usec and the energy split; the checks compare Prometheus with
    # the module's own figures of each cgroup.
    ctx['burners'] = [W.start(cg, 'busy', 2 * SCRAPE_S, cpu=cpu, nice=19)
                      for cg, cpu in BURNERS.values()]
    ctx['t0_ns'] = time.monotonic_ns()      # the module's clock
    # Prometheus hands its targets to the scrape loops 5 s after it starts
    t0 = time.time()
    while True:
        try:
            targets = api('targets')['activeTargets']
        except OSError:
            targets = []
        if len(targets) == 2 and all(t['health'] == 'up' for t in targets):
            break
        if time.time() > t0 + 60:
            raise RuntimeError(f'targets not up in 60 s: {targets}; log: '
                               + PROM_LOG.read_text()[-2000:])
        time.sleep(0.2)
    ctx['t_up'] = time.time()
    # the guest's uptime when the minute of scrapes began
    return {'up_at_s': float(Path('/proc/uptime').read_text().split()[0])}


def capture(rels):
    """The module's snapshots for CAPTURE_S s, one every 50 ms or so:
    [{'samples', 'ns': last_sample_ns, 'wall': that time on the wall clock
    (Prometheus's), 'uj': {rel: energy_uj}, 'avg': {rel: [power_avg10_mw,
    power_avg60_mw, power_avg300_mw]}}]. Each snapshot's reads at
    real-time priority: among the loops and Prometheus, they straddled a
    sample 20 times in a row. The waits between them at normal priority:
    with next_sample()'s polling at real-time priority too, a scrape
    failed meanwhile, the guest running (its samples on time)."""
    out = []
    end = time.monotonic() + CAPTURE_S
    while time.monotonic() < end:
        with fifo():
            s = snapshot(rels)
        off = time.time_ns() - time.monotonic_ns()
        i = s['info']
        out.append({'samples': i['samples'], 'ns': i['last_sample_ns'],
                    'wall': (i['last_sample_ns'] + off) / 1e9,
                    'uj': {r: s['stat'][r]['energy_uj'] for r in rels},
                    'avg': {r: [s['stat'][r][f'power_avg{w}_mw']
                                for w in AVG_S] for r in rels}})
        time.sleep(0.05)
    return out


def overruns():
    """The module's late samples so far, as time: a guest that the host
    stops for a while misses a sample per interval of it."""
    i = info()
    return i['sampler_overruns'] * i['interval_ms'] / 1000


def s_burn(ctx):
    """A minute of scrapes from the first that found both targets up,
    the loops burning throughout; the module's snapshots at two ends."""
    rels = ('', *BURNING)
    stalled = overruns()
    wait_until(ctx['t_up'] + 2)
    ctx['cap_a'] = capture(rels)
    wait_until(ctx['t_up'] + SCRAPE_S - 3 - CAPTURE_S)
    ctx['cap_b'] = capture(rels)
    wait_until(ctx['t_up'] + SCRAPE_S)
    W.stop(ctx['burners'], BURNING)
    ctx['t_end'] = time.time()
    ctx['idle_a'] = next_sample(BURNING)
    ctx['stalled_s'] = round(overruns() - stalled, 1)
    return {'captured': [len(ctx['cap_a']), len(ctx['cap_b'])]}


def nearest(cap, scrapes):
    """Of the scrapes (timestamp, samples read) and the snapshots of
    @cap, the pair nearest in time: a scrape and the module's sample of a
    snapshot."""
    return min(((s, c) for s in scrapes for c in cap),
               key=lambda x: abs(x[0][0] - x[1]['wall']))


def s_rate(ctx):
    """rate() over the window between two scrapes, against the module's
    energy over the window between the two snapshots nearest to them, by
    its clock: each test cgroup's, and sum() of every default series
    against the root's."""
    span = f'{int(ctx["t_end"] - ctx["t_up"]) + 5}s'
    [series] = api('query', query='cgroup_energy_samples_total'
                   f'{{job="cgroup_energy"}}[{span}]',
                   time=f'{ctx["t_end"]:.3f}')['result']
    scrapes = [(ts, int(v)) for ts, v in series['values']]
    ((ts_a, n_a), a), ((ts_b, n_b), b) = (nearest(ctx['cap_a'], scrapes),
                                          nearest(ctx['cap_b'], scrapes))
    ctx['ts_b'] = ts_b
    # from just after the first scrape (range selectors hold (t - w, t] or
    # [t - w, t] by version): with the gap to its start under 1.1 scrape
    # intervals, rate() extrapolates to it, (v_b - v_a) / (ts_b - ts_a)
    win = f'{round((ts_b - ts_a) * 1000) + 500}ms'
    dt = (b['ns'] - a['ns']) / 1e9

    def module_w(rel):
        return (b['uj'][rel] - a['uj'][rel]) / 1e6 / dt

    out = {'window_s': round(ts_b - ts_a, 3), 'module_s': round(dt, 3),
           # at each end, the scrape's time less its snapshot's sample's
           # (wall clock), and the sample it read less that one
           'lag_ms': [round((ts - c['wall']) * 1000, 1)
                      for ts, c in ((ts_a, a), (ts_b, b))],
           'samples_apart': [n_a - a['samples'], n_b - b['samples']],
           'cgroups': {}}
    for name, (rel, _) in BURNERS.items():
        [(_, prom)] = query(f'rate(cgroup_energy_joules_total'
                            f'{{cgroup="/{rel}"}}[{win}])', ts_b)
        out['cgroups'][name] = {
            'prom_w': round(prom, 4), 'module_w': round(module_w(rel), 4),
            'ratio': round(prom / module_w(rel), 5)}
    [(_, total)] = query(f'sum(rate(cgroup_energy_joules_total[{win}]))', ts_b)
    [(_, resets)] = query(f'sum(resets(cgroup_energy_joules_total[{span}]))',
                          ctx['t_end'])
    out['sum'] = {'prom_w': round(total, 4), 'root_w': round(module_w(''), 4),
                  'ratio': round(total / module_w(''), 5), 'resets': resets}
    return out


def ema_mw(points, at_ns, window_s):
    """The exponential moving average over @window_s at @at_ns of the power
    that the energy @points [(ns, µJ)] give, each span's energy spread
    evenly over it (from 0 before the first), mW."""
    out = 0.0
    for (n0, e0), (n1, e1) in zip(points, points[1:]):
        if n1 > n0:
            out += (e1 - e0) / (n1 - n0) * 1e6 * (
                math.exp(-(at_ns - n1) / 1e9 / window_s) -
                math.exp(-(at_ns - n0) / 1e9 / window_s))
    return out


def s_averages(ctx):
    """energy.stat's power averages of each test cgroup against its
    energy_uj (self-consistency: both are the module's), at the window's
    end: the moving averages of the power its counter gives from the
    loops' start (0 J, a new cgroup) over the snapshots of both ends (one
    per sample) and the 50 s between them. Then, the loops stopped, their
    decay by exp(-dt / T) from one read to another dt later."""
    samples = {c['samples']: c for c in ctx['cap_a'] + ctx['cap_b']}
    snaps = [samples[k] for k in sorted(samples)]
    b = snaps[-1]
    time.sleep(max(0.0, ctx['t_end'] + IDLE_S - time.time()))
    idle_a, idle_b = ctx['idle_a'], next_sample(BURNING)
    dt = (idle_b['info']['last_sample_ns'] -
          idle_a['info']['last_sample_ns']) / 1e9
    out = {'t_s': round((b['ns'] - ctx['t0_ns']) / 1e9, 2),
           'points': len(snaps), 'idle_s': round(dt, 2), 'cgroups': {}}
    for name, (rel, _) in BURNERS.items():
        pts = [(ctx['t0_ns'], 0)] + [(c['ns'], c['uj'][rel]) for c in snaps]
        want = [ema_mw(pts, b['ns'], T) for T in AVG_S]
        out['cgroups'][name] = {
            'rise': [round(m / w, 4) for m, w in zip(b['avg'][rel], want)],
            'decay': [round(idle_b['stat'][rel][f'power_avg{T}_mw'] /
                            idle_a['stat'][rel][f'power_avg{T}_mw'] /
                            math.exp(-dt / T), 4) for T in AVG_S],
            'want_mw': [round(w, 1) for w in want],
            'avg_mw': b['avg'][rel]}
    return out


def s_health(ctx):
    """Each target over the minute: its scrapes and how many were up; the
    time the guest stood still meanwhile, by the module's late samples."""
    span = f'{round((ctx["t_end"] - ctx["t_up"]) * 1000)}ms'
    out = {'span_s': round(ctx['t_end'] - ctx['t_up'], 3),
           'stalled_s': ctx['stalled_s']}
    for f, key in (('count', 'scrapes'), ('sum', 'up')):
        for labels, v in query(f'{f}_over_time(up[{span}])', ctx['t_end']):
            out.setdefault(labels['job'], {})[key] = v
    return out


def s_join(ctx):
    """The recording rule's pod-label join, as the rules file has it."""
    expr = rule_expr('namespace_pod:cgroup_energy_joules:rate5m')
    return {'series': sorted([labels['namespace'], labels['pod'], round(v, 4)]
                             for labels, v in query(expr, ctx['ts_b']))}


def metrics(port):
    """/metrics of the exporter on @port: {series: value text}, without the
    TIMED and OWN families."""
    out = {}
    for line in get(f'http://127.0.0.1:{port}/metrics').splitlines():
        if line and line[0] != '#':
            series, value = line.rsplit(' ', 1)
            if series.split('{')[0] not in TIMED + OWN:
                out[series] = value
    return out


def s_container(ctx):
    """The containerised exporter's /metrics between two of the host's:
    the same series, each value from the host's first to its second.
    (Reading both while the module completes no sample, for equal values,
    failed 20 times in a row: two HTTP reads under TCG outlast its 100 ms
    interval.)"""
    before, ctr, after = metrics(HOST), metrics(CTR), metrics(HOST)
    cgroups = {re.search(r'cgroup="([^"]*)"', s).group(1)
               for s in ctr if s.startswith('cgroup_energy_joules_total{')}
    return {'series': len(ctr), 'cgroups': sorted(cgroups),
            'host_only': sorted((set(before) | set(after)) - set(ctr)),
            'ctr_only': sorted(set(ctr) - (set(before) & set(after))),
            'outside': sorted(s for s in ctr if s in before and s in after
                              and not float(before[s]) <= float(ctr[s])
                              <= float(after[s])),
            'ctr_self': (WORK / 'ctr-self').read_text().strip(),
            'ctr_view': (WORK / 'ctr-view').read_text().split()}


def s_stop(ctx):
    """Everything this script started ends here, before the guest's
    dmesg and power-off; Prometheus's log goes to the run's output."""
    W.stop(ctx.get('burners', []), BURNING)
    (CG / EXPORTER / 'cgroup.kill').write_text('1\n')
    for p in ctx.get('procs', []):
        p.terminate()
        p.wait()
    os.kill(PROM_PID, signal.SIGTERM)
    os.waitpid(PROM_PID, 0)         # this script's child: its shell exec'd it
    print(PROM_LOG.read_text(), file=sys.stderr)
    return {}


if __name__ == '__main__':
    scenarios([s_start, s_burn, s_rate, s_averages, s_health, s_join,
               s_container, s_stop], {})
