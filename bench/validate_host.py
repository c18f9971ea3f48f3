#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make validate on a real machine: cgroup_energy's RAPL figures against the
kernel's own RAPL driver (perf's power PMU), and the power model against
RAPL, which is how model_idle_mw and model_busy_mw are calibrated.

Needs: root, the module loaded with RAPL in use (energy.info says `source
rapl`), perf (`apt-get install linux-perf`) and the perf power PMU. Without
RAPL it stops with exit status 2 and says why. It loads the CPUs with busy
loops at a few levels (0, 1, half, all CPUs), and in each window:

  - perf stat -a -e power/energy-pkg/,power/energy-ram/ -- sleep SECONDS
  - the module's root energy.stat, read after every sample meanwhile

and scores:

  rapl   headline  total_uj (package + DRAM) against perf's pkg + ram
  rapl   package   the package energy the module measured, against perf
  rapl   dram      the same for DRAM (when both measure it)
  model  idle      the model's power for the measured CPU time against RAPL,
                   at rest
  model  dynamic   the same above the idle baseline, under load
  conservation     total_uj == energy_uj + idle_uj + irq_uj + softirq_uj +
                   steal_uj in every read

The root energy.stat shows total_uj (package + DRAM) but per domain only the
part attributed to cgroups (package_uj, dram_uj). Each domain is split with
the headline's fractions, so per sample domain total = domain share *
total_uj / energy_uj; summed over samples read one by one, that is what the
module measured per domain.

  /usr/bin/python3 bench/validate.py --host [--seconds 10] [--repeat 2]
"""
import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'bench'))
sys.path.insert(0, str(REPO / 'tests'))

import validate_report as vr  # noqa: E402

EN = Path('/sys/fs/cgroup_energy')
CG = Path('/sys/fs/cgroup')
MOD = Path('/sys/module/cgroup_energy')
PMU = Path('/sys/bus/event_source/devices/power')
LOAD_CG = 'cge-validate'
RAPL_LIMIT = 1.0            # % MAPE, module against perf
EVENTS = {'package': 'power/energy-pkg/', 'dram': 'power/energy-ram/'}


class Unusable(RuntimeError):
    """This machine cannot run the host validation; the message says why."""


def log(msg):
    print(f'validate --host: {msg}', file=sys.stderr, flush=True)


def kv(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        k, _, v = line.partition(' ')
        out[k] = int(v) if v.lstrip('-').isdigit() else v
    return out


# ---- preconditions ----------------------------------------------------------

def check_machine(en):
    """Return (energy.info, perf events to use, mounted_here)."""
    if os.geteuid() != 0:
        raise Unusable('run as root (perf -a, cgroups, energy.stat is 0440)')
    if not (PMU / 'events' / 'energy-pkg').exists() and \
            not any(Path('/sys/class/powercap').glob('*rapl*')):
        virt = 'hypervisor' in Path('/proc/cpuinfo').read_text()
        raise Unusable(
            'no RAPL on this machine: the kernel shows neither a perf power '
            f'PMU ({PMU}) nor powercap RAPL zones (/sys/class/powercap)'
            + (' (this is a virtual machine: hypervisors rarely pass RAPL '
               'through)' if virt else '')
            + '. --host needs RAPL; without it run `make validate` (VM, '
            'power model)')
    mounted = False
    if not (en / 'energy.info').exists():
        if not MOD.is_dir():
            raise Unusable('the module is not loaded: build it for this '
                           'kernel and load it (make; insmod '
                           './cgroup_energy.ko), then run this again')
        r = subprocess.run(['mount', '-t', 'cgroup_energy', 'none', str(en)],
                           capture_output=True, text=True)
        if r.returncode:
            raise Unusable(f'cannot mount the cgroup_energy filesystem on '
                           f'{en}: {r.stderr.strip()}')
        mounted = True
    info = kv(en / 'energy.info')
    if info.get('source') != 'rapl':
        raise Unusable(
            f'no RAPL: energy.info says "source {info.get("source")}", so '
            'the module is estimating with its power model (a VM, or a CPU '
            'whose RAPL counters it cannot use; the kernel log says which). '
            '--host compares RAPL readings and needs a machine with RAPL; '
            'in a VM run `make validate` instead')
    if not shutil.which('perf'):
        raise Unusable('perf not found: apt-get install linux-perf')
    if not (PMU / 'events' / 'energy-pkg').exists():
        raise Unusable('the kernel\'s RAPL perf PMU has no energy-pkg event '
                       f'({PMU}/events/energy-pkg missing): try modprobe '
                       'rapl (intel_rapl_perf on old kernels)')
    doms = str(info.get('domains', '')).split()
    events = {'package': EVENTS['package']}
    if 'dram' in doms and (PMU / 'events' / 'energy-ram').exists():
        events['dram'] = EVENTS['dram']
    return info, events, mounted


# ---- perf -------------------------------------------------------------------

def parse_perf(text, events):
    """perf stat -x ';' output -> {domain: (joules, running seconds)}."""
    out = {}
    for line in text.splitlines():
        f = line.split(';')
        if len(f) < 4:
            continue
        for dom, ev in events.items():
            if f[2].strip() == ev:
                val = f[0].strip().replace(',', '.')
                if val.startswith('<'):
                    raise Unusable(f'perf cannot count {ev}: {val}')
                out[dom] = (float(val), int(f[3]) / 1e9 if f[3].strip()
                            else None)
    missing = set(events) - set(out)
    if missing:
        raise Unusable(f'perf printed no count for {sorted(missing)}:\n'
                       f'{text[-2000:]}')
    return out


def perf_window(seconds, events):
    cmd = ['perf', 'stat', '-a', '-x', ';', '-e', ','.join(events.values()),
           '--', 'sleep', str(seconds)]
    t0 = time.monotonic_ns()
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env={**os.environ, 'LC_ALL': 'C'})
    t1 = time.monotonic_ns()
    if r.returncode:
        raise Unusable(f'{" ".join(cmd)} failed: {r.stderr.strip()[-2000:]}')
    counts = parse_perf(r.stderr, events)
    for dom, (j, run_s) in counts.items():
        counts[dom] = (j, run_s or (t1 - t0) / 1e9)
    return counts, t0, t1


# ---- the module, every sample -----------------------------------------------

class Recorder(threading.Thread):
    def __init__(self, en):
        super().__init__(daemon=True)
        self.en = en
        self.records = []
        self.stop = threading.Event()

    def read(self):
        for _ in range(5):
            a = kv(self.en / 'energy.info')
            root = kv(self.en / 'energy.stat')
            b = kv(self.en / 'energy.info')
            if a['samples'] == b['samples']:
                return {'n': a['samples'], 't': a['last_sample_ns'],
                        'interval_ms': a['interval_ms'], 'root': root}
        return None

    def run(self):
        last = -1
        while not self.stop.is_set():
            s = self.read()
            if s and s['n'] != last:
                last = s['n']
                self.records.append(s)
            wait = 0.002
            if s:
                due = s['t'] + (s['interval_ms'] + 2) * 1_000_000
                wait = max((due - time.monotonic_ns()) / 1e9, 0.002)
            self.stop.wait(min(wait, 1.0))


def domain_totals(recs, doms):
    """Energy the module measured per domain between the first and last
    record, sample by sample: share * total / energy (see the docstring).
    Returns ({dom: uJ}, samples that could not be split)."""
    out = dict.fromkeys(doms, 0.0)
    unsplit = 0
    for a, b in zip(recs, recs[1:]):
        ra, rb = a['root'], b['root']
        tot = rb['total_uj'] - ra['total_uj']
        head = rb['energy_uj'] - ra['energy_uj']
        if tot and not head:
            unsplit += 1          # all idle: no share tells the domains apart
            continue
        for d in doms:
            share = rb[f'{d}_uj'] - ra[f'{d}_uj']
            out[d] += share * tot / head if head else 0
    return out, unsplit


# ---- load -------------------------------------------------------------------

class Load:
    def __init__(self):
        from workload import cgwork
        self.bin = str(cgwork())
        self.cg = CG / LOAD_CG
        self.cg.mkdir(exist_ok=True)
        self.procs = []

    def start(self, cpus, seconds):
        self.procs = [subprocess.Popen([self.bin, '-c', str(self.cg), '-p',
                                        str(c), 'busy', str(seconds)])
                      for c in cpus]

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait()
        self.procs = []

    def remove(self):
        self.stop()
        try:
            self.cg.rmdir()
        except OSError:
            pass


# ---- the run ----------------------------------------------------------------

def levels(spec, ncpu):
    out = []
    for item in spec.split(','):
        n = {'half': ncpu // 2, 'all': ncpu}.get(item.strip())
        n = int(item) if n is None else n
        if 0 <= n <= ncpu and n not in out:
            out.append(n)
    return out


def measure(args, en, events):
    cpus = sorted(os.sched_getaffinity(0))
    rec = Recorder(en)
    rec.start()
    load = Load()
    windows = []
    try:
        for n in levels(args.levels, len(cpus)):
            for rep in range(args.repeat):
                log(f'{n} busy CPU(s), window {rep + 1}/{args.repeat}: '
                    f'{args.seconds} s')
                load.start(cpus[:n], args.seconds + 4)
                time.sleep(1.5)                   # let frequency settle
                counts, t0, t1 = perf_window(args.seconds, events)
                time.sleep(0.3)
                load.stop()
                windows.append({'busy_cpus': n, 'rep': rep, 'perf': counts,
                                'perf_t0': t0, 'perf_t1': t1})
                time.sleep(1.0)
    finally:
        rec.stop.set()
        rec.join(3)
        load.remove()
    return windows, rec.records


def bracket(recs, t0, t1):
    """Records spanning [t0, t1] as closely as possible: the last one at or
    before t0 and the first one at or after t1."""
    first = [r for r in recs if r['t'] <= t0]
    last = [r for r in recs if r['t'] >= t1]
    if not first or not last:
        return []
    return [r for r in recs if first[-1]['t'] <= r['t'] <= last[0]['t']]


def score(info, windows, recs, events, ncpu):
    i_mw, b_mw = info['model_idle_mw'], info['model_busy_mw']
    doms = [d for d in events if f'{d}_uj' in recs[0]['root']]
    pairs = {'headline': [], **{d: [] for d in doms}}
    rows = []
    for w in windows:
        rs = bracket(recs, w['perf_t0'], w['perf_t1'])
        if len(rs) < 2:
            continue
        dt = (rs[-1]['t'] - rs[0]['t']) / 1e9
        ra, rb = rs[0]['root'], rs[-1]['root']
        perf_w = {d: j / s for d, (j, s) in w['perf'].items()}
        mod_tot = (rb['total_uj'] - ra['total_uj']) / dt / 1e6
        pairs['headline'].append((sum(perf_w.values()), mod_tot))
        per_dom, unsplit = domain_totals(rs, doms)
        for d in doms:
            pairs[d].append((perf_w[d], per_dom[d] / dt / 1e6))
        busy = rb['usage_usec'] - ra['usage_usec']
        idle = rb['idle_usec'] - ra['idle_usec']
        model_w = (i_mw * (busy + idle) + (b_mw - i_mw) * busy) / dt / 1e9
        rows.append({'busy_cpus': w['busy_cpus'],
                     'busy_cpus_measured': busy / dt / 1e6,
                     'rapl_w': sum(perf_w.values()), 'module_w': mod_tot,
                     'model_w': model_w, 'unsplit_samples': unsplit,
                     't0': rs[0]['t'], 't1': rs[-1]['t'],
                     'perf_w': perf_w})
    results = [vr.result('rapl', 'headline', pairs['headline'], 'W',
                         limit=RAPL_LIMIT,
                         reference='perf stat -a ' + ' + '.join(
                             events.values()) + ' over the same window',
                         what='root total_uj (package + DRAM)')]
    for d in doms:
        results.append(vr.result(
            'rapl', d, pairs[d], 'W', limit=RAPL_LIMIT,
            reference=f'perf stat -a -e {events[d]}',
            what=f'the module\'s {d} energy: {d}_uj * total_uj / energy_uj '
                 'per sample'))
    idle_rows = [r for r in rows if r['busy_cpus'] == 0]
    load_rows = [r for r in rows if r['busy_cpus'] > 0]
    results.append(vr.result(
        'model', 'idle', [(r['rapl_w'], r['model_w']) for r in idle_rows],
        'W', reference='RAPL (perf) package + DRAM at rest',
        what=f'model_idle_mw {i_mw}, model_busy_mw {b_mw} applied to the '
             'measured CPU time'))
    if idle_rows:
        base_r = sum(r['rapl_w'] for r in idle_rows) / len(idle_rows)
        base_m = sum(r['model_w'] for r in idle_rows) / len(idle_rows)
        results.append(vr.result(
            'model', 'dynamic',
            [(r['rapl_w'] - base_r, r['model_w'] - base_m)
             for r in load_rows], 'W',
            reference='RAPL (perf) package + DRAM above its idle baseline',
            what='the model above its idle baseline'))
    cons = [vr.conserved(r['root']) for r in recs]
    results.append(vr.result('conservation', 'host', cons, 'uJ', mse_limit=0,
                             reference='energy_uj + idle_uj + irq_uj + '
                                       'softirq_uj + steal_uj of the same '
                                       'read'))
    return results, rows, calibrate(rows, ncpu)


def calibrate(rows, ncpu):
    """Least squares P = a + b * busy CPUs: per CPU idle a/ncpu, busy
    a/ncpu + b (what model_idle_mw / model_busy_mw should be)."""
    xs = [r['busy_cpus_measured'] for r in rows]
    ys = [r['rapl_w'] for r in rows]
    if len(rows) < 2 or max(xs) - min(xs) < 0.5:
        return None
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / \
        sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    idle_mw = round(a / ncpu * 1000)
    busy_mw = round((a / ncpu + b) * 1000)
    return {'fit': 'rapl_w = a + b * busy_cpus', 'a_w': vr.rnd(a),
            'b_w_per_cpu': vr.rnd(b), 'cpus': ncpu,
            'model_idle_mw': idle_mw, 'model_busy_mw': busy_mw,
            'apply': f'echo {idle_mw} > /sys/module/cgroup_energy/parameters/'
                     f'model_idle_mw; echo {busy_mw} > /sys/module/'
                     'cgroup_energy/parameters/model_busy_mw  (or insmod '
                     f'cgroup_energy.ko model_idle_mw={idle_mw} '
                     f'model_busy_mw={busy_mw} on similar machines without '
                     'RAPL)'}


def plot(rows, path):
    if not rows:
        return
    t0 = rows[0]['t0']
    series = []
    for key, name in (('rapl_w', 'RAPL, perf (package + DRAM)'),
                      ('module_w', 'module total_uj'),
                      ('model_w', 'model for the same CPU time')):
        series.append({'name': name, 'dash': key == 'module_w',
                       'points': [((r['t0'] - t0) / 1e9, (r['t1'] - t0) / 1e9,
                                   r[key]) for r in rows]})
    phases = [((r['t0'] - t0) / 1e9, (r['t1'] - t0) / 1e9,
               f'{r["busy_cpus"]} busy') for r in rows]
    vr.svg_plot(path, 'cgroup_energy on this host: RAPL, module and model',
                series, phases, 'time (s)', 'power (W), per window')


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog='validate.py --host',
        description='Validate cgroup_energy on this machine against the '
                    'kernel\'s RAPL driver (needs root, RAPL, perf).')
    ap.add_argument('--seconds', type=float, default=10,
                    help='length of each perf window (default 10)')
    ap.add_argument('--repeat', type=int, default=2,
                    help='windows per load level (default 2)')
    ap.add_argument('--levels', default='0,1,half,all',
                    help='busy CPUs per level: numbers, half, all '
                         '(default 0,1,half,all)')
    ap.add_argument('--out', type=Path, default=REPO / 'bench' / 'results'
                    / 'validation-host.json')
    ap.add_argument('--energy-root', type=Path, default=EN,
                    help=argparse.SUPPRESS)        # tests
    a = ap.parse_args(argv)
    t_start = time.monotonic()
    mounted = False
    try:
        info, events, mounted = check_machine(a.energy_root)
        windows, recs = measure(a, a.energy_root, events)
        if len(recs) < 2:
            raise Unusable('the module completed no samples during the run')
    except Unusable as e:
        log(f'cannot validate here: {e}')
        return 2
    finally:
        if mounted:
            subprocess.run(['umount', str(a.energy_root)])
    ncpu = len(os.sched_getaffinity(0))
    results, rows, cal = score(info, windows, recs, events, ncpu)
    uname = os.uname()
    build_info = {'module': 'cgroup_energy', 'version': info.get('version'),
                  'git': vr.git_describe(), 'kernel': uname.release,
                  'source': info.get('source'),
                  'domains': info.get('domains'), 'split': info.get('split'),
                  'interval_ms': info.get('interval_ms'),
                  'model_idle_mw': info.get('model_idle_mw'),
                  'model_busy_mw': info.get('model_busy_mw')}
    cpu_model = ''
    for line in Path('/proc/cpuinfo').read_text().splitlines():
        if line.startswith('model name'):
            cpu_model = line.split(':', 1)[1].strip()
            break
    mem = Path('/proc/meminfo').read_text().splitlines()[0].split(':')[1]
    specs = {'platform': 'host', 'hostname': uname.nodename,
             'cpus': ncpu, 'cpu_model': cpu_model, 'memory': mem.strip(),
             'packages': info.get('packages')}
    failures = [f'{r["metric_name"]}/{r["mode"]}' for r in results
                if r.get('pass') is False]
    run = {'date': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
           'duration_s': round(time.monotonic() - t_start, 1),
           'seconds_per_window': a.seconds, 'repeat': a.repeat,
           'windows': rows, 'calibration': cal, 'passed': not failures,
           'failures': failures,
           'command': '/usr/bin/python3 bench/validate.py --host'}
    vr.write_report(a.out, build_info, specs, results, run)
    plot(rows, a.out.with_suffix('.svg'))
    print(vr.summary(results))
    if cal:
        print(f'\nmodel calibration for this machine: model_idle_mw '
              f'{cal["model_idle_mw"]}, model_busy_mw {cal["model_busy_mw"]}'
              f'\n  {cal["apply"]}')
    print(f'\nwrote {a.out} and {a.out.with_suffix(".svg").name}'
          + (f'; FAILED: {", ".join(failures)}' if failures else ''))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
