#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make validate: how right are cgroup_energy's numbers?

Boots Debian's kernel under QEMU (tests/vm/harness.py), loads the module with
split=time, runs the scenarios of tests/vm/guest/guest_validate.py in one
boot, and scores what the module reported against references:

  usage_usec    per cgroup, against the kernel's cpu.stat usage_usec
                (modes busy, wakeup-heavy, short-lived)
  conservation  root total_uj against energy_uj + idle_uj + irq_uj +
                softirq_uj + steal_uj, every read
  energy_split  the model source: each sample's energy per cgroup (dynamic),
                idle share (idle) and total (absolute) against what the
                policy (DESIGN.md section 3) and the model parameters give
                for the CPU time the module measured
  impact        impact_usec of identical runs: spread (CV), and the formula

Writes bench/results/validation.json (shaped like Kepler's validator report)
and bench/results/validation.svg (per-cgroup power over time). Exits 1 if a
limit is missed, 2 if the run itself failed.

  /usr/bin/python3 bench/validate.py [--flavour 6.1] [--quick]
  /usr/bin/python3 bench/validate.py --raw FILE     # re-score a saved run
  /usr/bin/python3 bench/validate.py --host ...     # real machine with RAPL
                                                    # (see validate_host.py)
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'bench'))
sys.path.insert(0, str(REPO / 'tests'))

import validate_report as vr  # noqa: E402

RESULTS = REPO / 'bench' / 'results'
RAW = REPO / '.build' / 'validation' / 'raw.json'
GUEST = 'tests/vm/guest/guest_validate.py'
FIXED_SRC = REPO / 'bench' / 'validate_work.c'
FIXED = REPO / '.build' / 'validate_work'

USAGE_LIMIT = 2.0          # % MAPE, usage_usec against cpu.stat
SPLIT_LIMIT = 0.1          # % MAPE, energy against the policy
SPLIT_FLOOR_UJ = 1000      # samples expecting less are not scored
FORMULA_LIMIT = 0.01       # % MAPE, impact_usec against its formula
USAGE_MODES = ('busy', 'wakeup-heavy', 'short-lived')
SHORT = {'cge-validator': 'validator (reader)'}


def log(msg):
    print(f'validate: {msg}', file=sys.stderr, flush=True)


# ---- running the VM --------------------------------------------------------

def build_fixed():
    """The fixed-work helper of the impact runs (host gcc, run over 9p)."""
    if not FIXED.exists() or FIXED.stat().st_mtime < FIXED_SRC.stat().st_mtime:
        FIXED.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(['gcc', '-O2', '-Wall', '-Wextra', '-Werror', '-o',
                        str(FIXED), str(FIXED_SRC)], check=True)
    return FIXED


def run_guest(flavour, quick, timeout):
    from vm import build, harness, kernels
    from workload import cgwork

    if subprocess.run(['sh', str(REPO / 'tests/deps.sh')]).returncode:
        raise RuntimeError('cannot install the packages it needs (run as '
                           'root, or see tests/deps.sh)')
    try:
        ko = build.build_module(flavour)
    except (build.BuildError, kernels.KernelError) as e:
        raise RuntimeError(f'building the module failed: {e}') from e
    tools = [cgwork(), build_fixed()]
    cmd = (f'/usr/bin/python3 {GUEST} {ko.relative_to(REPO)} '
           + ' '.join(str(t.relative_to(REPO)) for t in tools)
           + (' --quick' if quick else ''))
    log(f'booting {flavour} under QEMU (TCG); the scenarios take about '
        f'{"1.5" if quick else "2"} minutes')
    try:
        res = harness.run_vm(flavour, {'validate': cmd}, timeout=timeout)
    except harness.VMError as e:
        raise RuntimeError(str(e)) from e
    out = res['validate'].output
    for line in out.splitlines():
        if line.startswith('CGE-RAW '):
            raw = json.loads(line[len('CGE-RAW '):])
            raw['vm'] = {'flavour': flavour, 'kver': res.kver,
                         'boot_s': round(res.boot_time or 0, 1),
                         'vm_s': round(res.duration, 1),
                         'rundir': str(res.rundir)}
            return raw
    raise RuntimeError(f'the guest printed no CGE-RAW line (rc '
                       f'{res["validate"].rc}); output tail:\n{out[-3000:]}')


# ---- scoring ---------------------------------------------------------------

def score_usage(raw):
    rows = [(u['mode'], u['kernel'], u['ours']) for u in raw['usage']]
    rows += [(i['mode'], i['kernel'], i['usage_usec']) for i in raw['impact']]
    out = []
    for mode in USAGE_MODES:
        pairs = [(k, o) for m, k, o in rows if m == mode]
        out.append(vr.result('usage_usec', mode, pairs, 'usec',
                             limit=USAGE_LIMIT,
                             reference='cpu.stat usage_usec of the same '
                                       'cgroup, read once it is quiet'))
    for mode in ('from', 'to'):
        pairs = [(k, o) for m, k, o in rows if m == f'moved-{mode}']
        if pairs:
            out.append(vr.result(
                'usage_usec_moved', mode, pairs, 'usec',
                reference='cpu.stat usage_usec',
                what=f'the cgroup a running busy task was moved {mode} by '
                     'another process; not scored: the module charges the '
                     'slice since the last sample to the cgroup the task '
                     'is in when it is charged, cpu.stat splits it at the '
                     'move (abs_error_usec: mean |module - cpu.stat|)',
                abs_error_usec=round(sum(abs(o - k) for k, o in pairs)
                                     / len(pairs))))
    return out


conserved = vr.conserved


def score_conservation(raw):
    per_sample = [conserved(r['root']) for r in raw['records']]
    loaded = [conserved(s) for b in raw['bursts'] for s in b['loaded']]
    quiet = [conserved(s) for b in raw['bursts'] for s in b['quiet']]
    return [vr.result('conservation', mode, pairs, 'uJ', mse_limit=0,
                      reference='energy_uj + idle_uj + irq_uj + softirq_uj + '
                                'steal_uj of the same read of the root '
                                'energy.stat')
            for mode, pairs in (('per-sample', per_sample),
                                ('loaded', loaded), ('quiet', quiet))]


def split_intervals(raw):
    """Each pair of consecutive records in a split phase, with what the
    module reported and what the policy gives for the CPU time it measured.

    Model: E = idle_mw * capacity + (busy_mw - idle_mw) * active, capacity
    = idle + irq + softirq + steal + busy CPU time, active = busy + irq +
    softirq (steal is the CPU running someone else: idle power); idle gets
    E * idle / capacity; split=time gives a cgroup E * t / capacity. So with
    f = active / capacity and k = idle_mw + (busy_mw - idle_mw) * f:
    cgroup k * t, idle k * idle_time. mW * us = nJ. Records of builds
    without the irq, softirq and steal keys count them as 0.
    """
    info = raw['info_start']
    i_mw, b_mw = info['model_idle_mw'], info['model_busy_mw']
    ncpu = raw['specs']['cpus']
    out = []
    recs = raw['records']
    for ph in raw['phases']:
        if ph['kind'] != 'split':
            continue
        rs = [r for r in recs if ph['start_ns'] <= r['t'] <= ph['end_ns']]
        for a, b in zip(rs, rs[1:]):
            ra, rb = a['root'], b['root']
            busy = rb['usage_usec'] - ra['usage_usec']
            idle = rb['idle_usec'] - ra['idle_usec']
            sys = {kd: rb.get(f'{kd}_usec', 0) - ra.get(f'{kd}_usec', 0)
                   for kd in ('irq', 'softirq', 'steal')}
            active = busy + sys['irq'] + sys['softirq']
            cap = active + sys['steal'] + idle
            if cap <= 0:
                continue
            k = i_mw + (b_mw - i_mw) * active / cap
            # The sample's length as the module counted it (CPU time over
            # the CPUs): last_sample_ns jitters with the work queue.
            iv = {'phase': ph['name'], 't0': a['t'], 't1': b['t'],
                  'dt': cap / ncpu / 1e6, 'exact': b['n'] - a['n'] == 1,
                  'busy_usec': busy, 'idle_usec': idle,
                  'total': (rb['total_uj'] - ra['total_uj'],
                            (i_mw * cap + (b_mw - i_mw) * active) / 1000),
                  'idle': (rb['idle_uj'] - ra['idle_uj'], k * idle / 1000),
                  'cg': {}}
            for cg in b['cg']:
                if cg not in a['cg']:
                    continue
                t = b['cg'][cg]['usage_usec'] - a['cg'][cg]['usage_usec']
                e = b['cg'][cg]['energy_uj'] - a['cg'][cg]['energy_uj']
                iv['cg'][cg] = (e, k * t / 1000, t)
            out.append(iv)
    return out


def score_split(raw, ivs):
    if raw['info_start'].get('source') != 'model':
        return [{'metric_name': 'energy_split', 'mode': 'dynamic',
                 'mse': None, 'mape': None, 'samples': 0, 'pass': False,
                 'error': f'source is {raw["info_start"].get("source")}, '
                          'not model'}]
    lists = {'dynamic': [], 'idle': [], 'absolute': []}
    small = dict.fromkeys(lists, 0)

    def add(mode, got, exp, dt):
        # The module counts whole uJ: below 1 mJ rounding dominates.
        if exp < SPLIT_FLOOR_UJ:
            small[mode] += 1
        else:
            lists[mode].append((exp / dt / 1e6, got / dt / 1e6))

    for iv in ivs:
        if not iv['exact']:
            continue    # the recorder missed a sample: not one interval
        dt = iv['dt']                       # report power, W
        for e, exp, _ in iv['cg'].values():
            add('dynamic', e, exp, dt)
        add('idle', *iv['idle'], dt)
        add('absolute', *iv['total'], dt)
    n_exact = sum(iv['exact'] for iv in ivs)
    common = {'reference': 'the policy of DESIGN.md section 3 with the '
                           'model parameters, from the CPU time the module '
                           'measured in each sample',
              'intervals': n_exact, 'skipped_merged': len(ivs) - n_exact}
    dyn, idle, tot = lists['dynamic'], lists['idle'], lists['absolute']
    return [
        vr.result('energy_split', 'dynamic', dyn, 'W', limit=SPLIT_LIMIT,
                  what='energy_uj of each cgroup that ran, per sample',
                  below_1mJ=small['dynamic'], **common),
        vr.result('energy_split', 'idle', idle, 'W', limit=SPLIT_LIMIT,
                  what='root idle_uj per sample', below_1mJ=small['idle'],
                  **common),
        vr.result('energy_split', 'absolute', tot, 'W', limit=SPLIT_LIMIT,
                  what='root total_uj per sample',
                  below_1mJ=small['absolute'], **common),
    ]


def coef(info, key, default):
    try:
        return float(info.get(key, default))
    except (TypeError, ValueError):
        return default


def score_impact(raw):
    out = []
    info = raw['info_start']
    kt = coef(info, 'kcpu_time', 1.0)
    kw = coef(info, 'kcpu_wakeups', 2e-4)
    for mode in USAGE_MODES:
        runs = [i for i in raw['impact'] if i['mode'] == mode]
        out.append(vr.spread(
            [i['impact_usec'] for i in runs], 'usec', 'impact', mode,
            reference={'kernel_usage': [i['kernel'] for i in runs],
                       'wakeups': [i['wakeups'] for i in runs],
                       'nvcsw': [i['nvcsw'] for i in runs]},
            what='impact_usec of identical runs, against their mean; '
                 'cv_kernel_usage and cv_nvcsw are the workload\'s own '
                 'spread (cpu.stat, wait4 voluntary context switches)'))
    rows = raw['impact'] + [u for u in raw['usage'] if 'impact_usec' in u]
    pairs = []
    for r in rows:
        usage = r.get('usage_usec', r.get('ours'))
        pairs.append((kt * usage + kw * 1e6 * r['wakeups'], r['impact_usec']))
    out.append(vr.result('impact', 'formula', pairs, 'usec',
                         limit=FORMULA_LIMIT,
                         reference=f'kcpu_time * usage_usec + kcpu_wakeups '
                                   f'* 1e6 * wakeups ({kt:g}, {kw:g})'))
    return out


def build_info(raw):
    i = raw['info_start']
    return {'module': 'cgroup_energy', 'version': i.get('version'),
            'git': vr.git_describe(), 'kernel': raw['specs']['kernel'],
            'flavour': raw.get('vm', {}).get('flavour'),
            'source': i.get('source'), 'domains': i.get('domains'),
            'split': i.get('split'), 'interval_ms': i.get('interval_ms'),
            'interval_ms_energy_split': 1000,
            'model_idle_mw': i.get('model_idle_mw'),
            'model_busy_mw': i.get('model_busy_mw'),
            'kcpu_time': i.get('kcpu_time'),
            'kcpu_wakeups': i.get('kcpu_wakeups'),
            'kqos_background': i.get('kqos_background')}


def specs(raw):
    s = raw['specs']
    return {'platform': 'QEMU TCG (no KVM), Debian kernel',
            'cpus': s['cpus'], 'cpu_model': s['cpu_model'],
            'memory': s['memory'], 'machine': s['machine'],
            'host_cpus': os.cpu_count()}


# ---- plot ------------------------------------------------------------------

def plot(raw, ivs, path):
    phases = [p for p in raw['phases'] if p['kind'] == 'split']
    if not phases or not ivs:
        return
    t0 = phases[0]['start_ns']

    def x(ns):
        return (ns - t0) / 1e9

    names = []
    for iv in ivs:
        for cg in iv['cg']:
            if cg not in names:
                names.append(cg)
    order = [n for n in names if n != 'cge-validator'] + \
        [n for n in names if n == 'cge-validator']
    series = []
    for cg in order:
        pts, marks = [], []
        for iv in ivs:
            if cg not in iv['cg']:
                continue
            dt = iv['dt']
            e, exp, _ = iv['cg'][cg]
            pts.append((x(iv['t0']), x(iv['t1']), e / dt / 1e6))
            if cg != 'cge-validator':
                marks.append(((x(iv['t0']) + x(iv['t1'])) / 2,
                              exp / dt / 1e6))
        label = SHORT.get(cg, cg.removeprefix('val-split/'))
        series.append({'name': label, 'points': pts, 'marks': marks})
    idle = [(x(iv['t0']), x(iv['t1']), iv['idle'][0] / iv['dt'] / 1e6)
            for iv in ivs]
    total = [(x(iv['t0']), x(iv['t1']), iv['total'][0] / iv['dt'] / 1e6)
             for iv in ivs]
    series.append({'name': 'idle (root idle_uj)', 'points': idle,
                   'color': '#999999'})
    series.append({'name': 'total (root total_uj)', 'points': total,
                   'color': '#333333', 'dash': True})
    info = raw['info_start']
    vr.svg_plot(
        path, 'cgroup_energy in a 2-CPU VM: power per cgroup, model source, '
              'split=time',
        series, [(x(p['start_ns']), x(p['end_ns']), p['name'])
                 for p in phases],
        'time (s)', 'power (W), per 1 s sample',
        note=f'{raw["specs"]["kernel"]}, model_idle_mw '
             f'{info["model_idle_mw"]}, model_busy_mw {info["model_busy_mw"]}'
             '; circles: what the policy gives for the measured CPU time')


# ---- main ------------------------------------------------------------------

def score(raw):
    ivs = split_intervals(raw)
    results = (score_usage(raw) + score_conservation(raw) +
               score_split(raw, ivs) + score_impact(raw))
    return results, ivs


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if '--host' in argv:
        import validate_host
        return validate_host.main([a for a in argv if a != '--host'])
    ap = argparse.ArgumentParser(
        description='Validate cgroup_energy\'s numbers in a VM and write '
                    'bench/results/validation.{json,svg}.')
    ap.add_argument('--flavour', default='6.1')
    ap.add_argument('--quick', action='store_true',
                    help='fewer and shorter runs (for trying things out)')
    ap.add_argument('--timeout', type=int, default=540,
                    help='seconds for the VM run (default 540)')
    ap.add_argument('--raw', type=Path,
                    help='score a saved run (.build/validation/raw.json) '
                         'instead of booting a VM')
    ap.add_argument('--out', type=Path, default=RESULTS,
                    help='directory for validation.json and .svg')
    ap.add_argument('--host', action='store_true',
                    help='validate on this machine instead, with the module '
                         'loaded and RAPL (--host --help for its options)')
    a = ap.parse_args(argv)

    t_start = time.monotonic()
    if a.raw:
        raw = json.loads(a.raw.read_text())
    else:
        try:
            raw = run_guest(a.flavour, a.quick, a.timeout)
        except RuntimeError as e:
            log(f'error: {e}')
            return 2
        RAW.parent.mkdir(parents=True, exist_ok=True)
        RAW.write_text(json.dumps(raw) + '\n')
    results, ivs = score(raw)
    failures = [f'{r["metric_name"]}/{r["mode"]}' for r in results
                if r.get('pass') is False]
    failures += [f'guest: {e}' for e in raw.get('errors', [])]
    duration = (raw.get('run', {}).get('duration_s') if a.raw
                else round(time.monotonic() - t_start, 1))
    vm = {k: v for k, v in raw.get('vm', {}).items() if k != 'rundir'}
    run = {'date': raw.get('date') or time.strftime('%Y-%m-%dT%H:%M:%S%z'),
           'duration_s': duration, 'guest_s': raw.get('guest_seconds'),
           **vm, 'quick': raw.get('quick', False),
           'passed': not failures, 'failures': failures,
           'command': 'make validate'}
    raw.setdefault('date', run['date'])
    raw.setdefault('run', {'duration_s': duration})
    if not a.raw:
        RAW.write_text(json.dumps(raw) + '\n')
    jpath, spath = a.out / 'validation.json', a.out / 'validation.svg'
    vr.write_report(jpath, build_info(raw), specs(raw), results, run)
    plot(raw, ivs, spath)
    print(vr.summary(results))
    shown = jpath.relative_to(REPO) if jpath.is_relative_to(REPO) else jpath
    print(f'\nwrote {shown} and {spath.name}; {duration} s'
          + ('' if not failures else f'; FAILED: {", ".join(failures)}'))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
