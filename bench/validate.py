#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make validate: how right are cgroup_energy's numbers?

Boots Debian's kernel under QEMU (tests/vm/harness.py) once per emulated
part, loads the module's test build (make CGE_EMU=y: tests/emu/emu.c answers
the RAPL MSR reads, energy from the kernel's per-CPU busy time) at its
defaults (split=impact, interval_ms 100), runs the scenarios of
tests/vm/guest/guest_validate.py, and scores each figure against something
the module did not compute:

  usage_usec       per cgroup, against the kernel's cpu.stat usage_usec
                   (modes busy, wakeup-heavy, short-lived)
  idle             the root's idle_usec against /proc/stat's idle + iowait
                   over the same windows
  conservation_hw  the root's total_uj against the headline energy
                   (package + DRAM) the emulator returned, after every
                   sample with cgroup churn and over the whole run: MSE 0
  package_split    intel-server, 2 sockets: each cgroup pinned to one
                   package against the emulator's energy of that package
                   times the cgroup's share of that package's CPU time
                   (cpu.stat over /proc/stat)
  core_split       amd-zen: each cgroup pinned to a core against the
                   emulator's energy of that core times its share of the
                   core's CPU time (not run while emu.c has no amd-zen)
  calibration      bench/calibrate.py's fit against the per-CPU power the
                   emulator was configured with (tests/vm/emu.py)
  platform, package, core, dram, total   model against measured (as
                   Kepler's validator names them): one workload measured
                   (the module on the emulated RAPL: the energy it read)
                   and modelled (source=model at the calibrated per-CPU
                   parameters of that domain), modes idle and dynamic
  impact           repeatability of identical runs (spread), and the
                   formula (a self-consistency check: the module against
                   its own inputs)
  conservation     same-read: energy_uj + idle_uj + ... = total_uj of one
                   read (a self-consistency check)

Writes bench/results/validation.json (shaped like Kepler's validator report;
build_info records the commit, whether the tree was clean and kmod/'s tree
hash) and bench/results/validation.svg (per-cgroup power of package_split
against its expected value). Exits 1 if a limit is missed, 2 if the run
itself failed.

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

import treeinfo  # noqa: E402
import validate_report as vr  # noqa: E402
from vm import emu  # noqa: E402

RESULTS = REPO / 'bench' / 'results'
RAW = REPO / '.build' / 'validation' / 'raw.json'
GUEST = 'tests/vm/guest/guest_validate.py'
FIXED_SRC = REPO / 'bench' / 'validate_work.c'
FIXED = REPO / '.build' / 'validate_work'

# one boot each: the usage, idle, conservation, package and model scenarios
# on the two-socket server; conservation and model on the client (its core,
# uncore and psys domains); core_split on AMD's per-core counters
PROFILES = ('intel-server', 'intel-client', 'amd-zen')
CORE_PROFILE = 'amd-zen'
HEADLINE = ('package', 'dram')       # what total_uj counts

USAGE_LIMIT = 2.0          # % MAPE, usage_usec against cpu.stat
IDLE_LIMIT = 3.0           # % MAPE, idle_usec against /proc/stat (10 ms ticks)
SPLIT_LIMIT = 5.0          # % MAPE, package/core split against the emulator
CAL_LIMIT = 3.0            # % MAPE, calibration against the configured power
FORMULA_LIMIT = 0.01       # % MAPE, impact_usec against its formula
USAGE_MODES = ('busy', 'wakeup-heavy', 'short-lived')
SELF = 'self-consistency'  # check= of a metric that compares the module
#                            with itself: reported, not a validation
# Kepler's validator's domain names
DOMAIN_METRIC = {'psys': 'platform', 'package': 'package', 'core': 'core',
                 'dram': 'dram', 'uncore': 'uncore', 'total': 'total'}


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


def profiles():
    """The profiles to boot: those this tree's emu.c has."""
    return [p for p in PROFILES if emu.profile_available(p)]


def run_guest(flavour, quick, timeout, profile):
    from vm import build, harness, kernels
    from workload import cgwork

    try:
        ko = build.build_module(flavour, variant='emu')
    except (build.BuildError, kernels.KernelError) as e:
        raise RuntimeError(f'building the module failed: {e}') from e
    tools = [cgwork(), build_fixed()]
    cmd = (f'/usr/bin/python3 {GUEST} {ko.relative_to(REPO)} '
           + ' '.join(str(t.relative_to(REPO)) for t in tools)
           + f' {profile}' + (' --quick' if quick else ''))
    hw = emu.PROFILES[profile]
    log(f'booting {flavour} under QEMU (TCG), -cpu {hw["cpu_model"]}, '
        f'{hw["sockets"]} socket(s): emulated {profile}')
    try:
        # the plain model: the committed figures were measured on it; the
        # module's load patches kernel text, as on a server
        res = harness.run_vm(flavour, {'validate': cmd}, timeout=timeout,
                             cpu_model=hw['cpu_model'],
                             sockets=hw['sockets'], cpu_flags='',
                             hold_tracepoints=False)
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


# ---- the emulator's record -------------------------------------------------

def truth_uj(truth, pkg=None, domains=HEADLINE):
    """µJ the emulator returned for @domains (of package @pkg, or all)."""
    tot = 0
    for key, v in truth['pkg'].items():
        p, d = key.split()
        if d in domains and (pkg is None or int(p) == pkg):
            tot += v['read'] * 1_000_000 >> v['esu']
    return tot


def pkg_of(raw, snap, cpu):
    """The emulator's package index of @cpu: its own record when it has
    per-CPU lines, else the order in which package ids first appear over
    the CPUs (as emu.c numbers them)."""
    c = snap['truth'].get('cpu', {}).get(str(cpu))
    if c is not None and 'pkg' in c:
        return c['pkg']
    ids = []
    for n in sorted(raw['topology'], key=int):
        i = raw['topology'][n]['package_id']
        if i not in ids:
            ids.append(i)
    return ids.index(raw['topology'][str(cpu)]['package_id'])


def core_of(raw, cpu):
    return raw['topology'][str(cpu)]['core_cpu']


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


def score_idle(raw):
    pairs = []
    for snaps in raw.get('idle', []):
        for a, b in zip(snaps, snaps[1:]):
            pairs.append((b['proc_idle'] - a['proc_idle'],
                          b['root']['idle_usec'] - a['root']['idle_usec']))
    return [vr.result('idle', 'root', pairs, 'usec', limit=IDLE_LIMIT,
                      reference='/proc/stat idle + iowait over the CPUs, '
                                'read at the same sample (10 ms ticks)',
                      what='the root\'s idle_usec over windows of 1.5 s, '
                           'one CPU busy and then none')]


def score_conservation_hw(raw):
    reads = raw.get('conservation_hw', [])
    pairs = []
    if reads:
        h0, t0 = truth_uj(reads[0]['truth']), reads[0]['root']['total_uj']
        pairs = [(truth_uj(r['truth']) - h0, r['root']['total_uj'] - t0)
                 for r in reads[1:]]
    w = raw.get('whole_run') or []
    whole = []
    if len(w) == 2:
        whole = [(truth_uj(w[1]['truth']) - truth_uj(w[0]['truth']),
                  w[1]['root']['total_uj'] - w[0]['root']['total_uj'])]
    ref = ('the headline energy (package + DRAM) the emulator returned to '
           'the module\'s reads, in its units converted to µJ')
    return [
        vr.result('conservation_hw', 'churn', pairs, 'uJ', mse_limit=0,
                  reference=ref, what='root total_uj since the first read, '
                  'after every sample, busy on every CPU, cgroups created '
                  'and removed'),
        vr.result('conservation_hw', 'whole-run', whole, 'uJ', mse_limit=0,
                  reference=ref, what='root total_uj from after load to '
                  'the end of the scenarios'),
        vr.result('conservation', 'same-read',
                  [vr.conserved(r['root']) for r in reads], 'uJ',
                  mse_limit=0, check=SELF,
                  reference='energy_uj + idle_uj + irq_uj + softirq_uj + '
                            'steal_uj of the same read of the root'),
    ]


def split_pairs(raw, key, unit_of, energy_of, actual_key):
    """Per window and cgroup of splits[key]: (expected, module) µJ, where
    expected = the emulator's energy of the cgroup's unit (package or
    core) * the cgroup's cpu.stat time / the unit's CPU time (the window's
    length between the two samples, times the unit's CPUs: /proc/stat's
    per-CPU ticks lose time under TCG on a loaded host, cpu.stat does
    not).
    Returns (pairs, rows)."""
    sc = raw.get('splits', {}).get(key)
    if not sc:
        return [], []
    pairs, rows = [], []
    for a, b in zip(sc['snaps'], sc['snaps'][1:]):
        cpus = sorted(a['proc'], key=int)
        wall = (b['t'] - a['t']) / 1000
        for cg, cpu in sc['cgroups'].items():
            u = unit_of(raw, a, cpu)
            cap = wall * sum(1 for c in cpus if unit_of(raw, a, int(c)) == u)
            t = b['cpu_stat'][cg] - a['cpu_stat'][cg]
            e_unit = energy_of(b, u) - energy_of(a, u)
            exp = e_unit * t / cap if cap else 0
            got = b['cg'][cg][actual_key] - a['cg'][cg][actual_key]
            pairs.append((exp, got))
            rows.append({'cg': cg, 'cpu': cpu, 'unit': u, 't0': a['t'],
                         't1': b['t'], 'expected_uj': round(exp),
                         'module_uj': got, 'unit_uj': e_unit,
                         'cpu_usec': t, 'unit_usec': round(cap)})
    return pairs, rows


def core_uj(snap, core):
    v = snap['truth'].get('core', {}).get(str(core))
    return 0 if v is None else v['read'] * 1_000_000 >> v['esu']


def score_package_split(raw):
    pairs, rows = split_pairs(
        raw, 'package_split', pkg_of,
        lambda s, p: truth_uj(s['truth'], pkg=p), 'energy_uj')
    return [vr.result(
        'package_split', 'per-package', pairs, 'uJ', limit=SPLIT_LIMIT,
        reference='the emulator\'s headline energy (package + DRAM) of '
                  'the package the cgroup is pinned to, times the cgroup\'s '
                  'cpu.stat time over that package\'s CPU time '
                  '(/proc/stat)',
        what='energy_uj of cgroups pinned one to package 0 and two to '
             'package 1 (sharing its CPU), per 1.5 s window',
        windows=rows)], rows


def score_core_split(raws):
    raw = raws.get(CORE_PROFILE)
    if raw is None or raw.get('not_run'):
        why = (raw or {}).get('not_run') or \
            f'no {CORE_PROFILE} profile in tests/emu/emu.c'
        return [{'metric_name': 'core_split', 'mode': 'per-core',
                 'mse': None, 'mape': None, 'samples': 0,
                 'not_run': f'not run: {why}'}]
    pairs, rows = split_pairs(raw, 'core_split',
                              lambda r, s, c: core_of(r, c), core_uj,
                              'core_uj')
    return [vr.result(
        'core_split', 'per-core', pairs, 'uJ', limit=SPLIT_LIMIT,
        reference='the emulator\'s energy of the core the cgroup is pinned '
                  'to (its per-core counter), times the cgroup\'s cpu.stat '
                  'time over that core\'s CPU time (/proc/stat)',
        what='core_uj of cgroups pinned one to core 0 and two to core 1, '
             'whose busy power differs, per 1.5 s window', windows=rows)]


def score_calibration(raw):
    cal = raw.get('model', {}).get('calibration')
    if not cal:
        return []
    want_i, want_b = emu.per_cpu_equivalent(
        raw['profile'], cal['emu_idle_mw'], cal['emu_busy_mw'], cal['cpus'])
    f = cal['fits']['total']
    ref = (f'emu_idle_mw {cal["emu_idle_mw"]}, emu_busy_mw '
           f'{cal["emu_busy_mw"]} and the profile\'s constant power '
           f'spread over the {cal["cpus"]} CPUs (tests/vm/emu.py)')
    return [vr.result('calibration', 'idle', [(want_i, f['idle_mw'])], 'mW',
                      limit=CAL_LIMIT, reference=ref,
                      fit_rms_pct=vr.rnd(f['rms_pct']),
                      fit_se_mw=vr.rnd(f['idle_se_mw'])),
            vr.result('calibration', 'busy', [(want_b, f['busy_mw'])], 'mW',
                      limit=CAL_LIMIT, reference=ref,
                      fit_rms_pct=vr.rnd(f['rms_pct']),
                      fit_se_mw=vr.rnd(f['busy_se_mw']))]


def power(w, uj):
    return uj * 1e3 / w['dt_ns'] if w['dt_ns'] else 0.0      # W


def busy_cpus(windows):
    return [w['busy_s'] * 1e9 / w['dt_ns'] if w['dt_ns'] else 0
            for w in windows]


def score_model(raw):
    """Per domain: the measured workload's power (the energy the module
    read: total_uj for the headline, the emulator's returned counter for a
    domain) against the same workload under source=model at that domain's
    calibrated parameters; idle: the idle windows' power; dynamic: each
    busy window's power above the mean idle power of its own run, per busy
    CPU above idle (W per CPU). Reported, not limited: the emulator's power
    follows the kernel's tick-based busy time (kcpustat), the model the
    module's (the scheduler's clock), and under TCG on a loaded host the
    ticks lose time, so the two differ by how loaded the host was."""
    m = raw.get('model', {})
    meas, out = m.get('measured'), []
    if not meas or not m.get('modelled'):
        return out

    def measured(w, dom):
        return w['uj']['total_uj'] if dom == 'total' else w['dom'].get(dom)

    for dom, mod in sorted(m['modelled'].items()):
        mw = mod.get('windows', [])
        if len(mw) != len(meas) or measured(meas[0], dom) is None:
            continue
        pm = [power(w, measured(w, dom)) for w in meas]
        pe = [power(w, w['uj']['total_uj']) for w in mw]
        idle_m = [p for p, w in zip(pm, meas) if w['phase'] == 'idle']
        idle_e = [p for p, w in zip(pe, mw) if w['phase'] == 'idle']
        base_m, base_e = sum(idle_m) / len(idle_m), sum(idle_e) / len(idle_e)
        # per busy CPU (/proc/stat), so that the two runs' CPU time need
        # not be the same (under TCG it is not)
        xm, xe = busy_cpus(meas), busy_cpus(mw)
        xbm = sum(x for x, w in zip(xm, meas) if w['phase'] == 'idle') / \
            len(idle_m)
        xbe = sum(x for x, w in zip(xe, mw) if w['phase'] == 'idle') / \
            len(idle_e)
        dyn = [((a - base_m) / (c - xbm), (b - base_e) / (d - xbe))
               for a, b, c, d, w in zip(pm, pe, xm, xe, meas)
               if w['phase'] != 'idle' and c - xbm > 0.5 and d - xbe > 0.5]
        name = DOMAIN_METRIC.get(dom, dom)
        common = {'reference': f'measured: {"root total_uj" if dom == "total" else "the " + dom + " counter the module read"} on the emulated RAPL; '
                               f'the model: root total_uj with source=model, '
                               f'model_idle_mw {mod["idle_mw"]}, '
                               f'model_busy_mw {mod["busy_mw"]} (calibrated)'}
        out.append(vr.result(name, 'idle', list(zip(idle_m, idle_e)), 'W',
                             **common))
        out.append(vr.result(name, 'dynamic', dyn, 'W per busy CPU',
                             **common))
    return out


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
                         limit=FORMULA_LIMIT, check=SELF,
                         reference=f'kcpu_time * usage_usec + kcpu_wakeups '
                                   f'* 1e6 * wakeups ({kt:g}, {kw:g}) of the '
                                   'module\'s own usage_usec and wakeups'))
    return out


def build_info(raws):
    raw = raws[PROFILES[0]]
    i = raw['info_start']
    return {'module': 'cgroup_energy', 'version': i.get('version'),
            'git': vr.git_describe(), **treeinfo.tree_info(),
            'build': 'test build (CGE_EMU=y): emulated RAPL',
            'kernel': raw['specs']['kernel'],
            'flavour': raw.get('vm', {}).get('flavour'),
            'profiles': {p: {'source': r.get('info_start', {}).get('source'),
                             'domains': r.get('info_start', {}).get('domains'),
                             'not_run': r.get('not_run')}
                         for p, r in raws.items()},
            'split': i.get('split'), 'interval_ms': i.get('interval_ms'),
            'emu_idle_mw': raw['emu']['idle_mw'],
            'emu_busy_mw': raw['emu']['busy_mw'],
            'kcpu_time': i.get('kcpu_time'),
            'kcpu_wakeups': i.get('kcpu_wakeups'),
            'kqos_background': i.get('kqos_background')}


def specs(raws):
    s = raws[PROFILES[0]]['specs']
    return {'platform': 'QEMU TCG (no KVM), Debian kernel',
            'cpus': s['cpus'],
            'cpu_models': {p: r['specs']['cpu_model']
                           for p, r in raws.items()},
            'memory': s['memory'], 'machine': s['machine'],
            'host_cpus': os.cpu_count()}


# ---- plot ------------------------------------------------------------------

def plot(rows, path):
    """package_split: each cgroup's power per window, the module's (steps)
    against the expected (circles)."""
    if not rows:
        return
    t0 = min(r['t0'] for r in rows)
    series = []
    for cg in dict.fromkeys(r['cg'] for r in rows):
        pts, marks = [], []
        for r in rows:
            if r['cg'] != cg:
                continue
            x0, x1 = (r['t0'] - t0) / 1e9, (r['t1'] - t0) / 1e9
            dt = x1 - x0
            pts.append((x0, x1, r['module_uj'] / dt / 1e6))
            marks.append(((x0 + x1) / 2, r['expected_uj'] / dt / 1e6))
        series.append({'name': f'{cg.split("/")[-1]} (package '
                               f'{rows[[x["cg"] for x in rows].index(cg)]["unit"]})',
                       'points': pts, 'marks': marks})
    vr.svg_plot(path, 'cgroup_energy on an emulated 2-socket server: '
                      'power per cgroup, split=impact, 100 ms',
                series, [], 'time (s)', 'power (W), per 1.5 s window',
                note='circles: the emulator\'s package energy times the '
                     'cgroup\'s share of the package\'s CPU time')


# ---- main ------------------------------------------------------------------

def score(raws):
    server = raws[PROFILES[0]]
    ps, rows = score_package_split(server)
    others = [r for p, r in raws.items() if p != PROFILES[0]
              and not r.get('not_run')]
    results = (score_usage(server) + score_idle(server)
               + score_conservation_hw(server) + ps
               + score_core_split(raws) + score_calibration(server)
               + score_model(server))
    for r in others:        # the other parts: their mode says which
        for res in (score_conservation_hw(r)[:2] + score_calibration(r)
                    + score_model(r)):
            res['mode'] = f'{res["mode"]} ({r["profile"]})'
            results.append(res)
    return results + score_impact(server), rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if '--host' in argv:
        import validate_host
        return validate_host.main([a for a in argv if a != '--host'])
    ap = argparse.ArgumentParser(
        description='Validate cgroup_energy\'s numbers in VMs on emulated '
                    'RAPL and write bench/results/validation.{json,svg}.')
    ap.add_argument('--flavour', default='6.1')
    ap.add_argument('--quick', action='store_true',
                    help='fewer and shorter runs (for trying things out)')
    ap.add_argument('--timeout', type=int, default=540,
                    help='seconds for each VM run (default 540)')
    ap.add_argument('--raw', type=Path,
                    help='score a saved run (.build/validation/raw.json) '
                         'instead of booting VMs')
    ap.add_argument('--out', type=Path, default=RESULTS,
                    help='directory for validation.json and .svg')
    ap.add_argument('--host', action='store_true',
                    help='validate on this machine instead, with the module '
                         'loaded and RAPL (--host --help for its options)')
    a = ap.parse_args(argv)

    t_start = time.monotonic()
    if a.raw:
        saved = json.loads(a.raw.read_text())
        raws = saved['profiles']
    else:
        if subprocess.run(['sh', str(REPO / 'tests/deps.sh')]).returncode:
            log('error: cannot install the packages it needs (run as root, '
                'or see tests/deps.sh)')
            return 2
        raws = {}
        for p in profiles():
            try:
                raws[p] = run_guest(a.flavour, a.quick, a.timeout, p)
            except RuntimeError as e:
                log(f'error: {p}: {e}')
                return 2
        saved = {'profiles': raws}
        RAW.parent.mkdir(parents=True, exist_ok=True)
        RAW.write_text(json.dumps(saved) + '\n')
    results, rows = score(raws)
    failures = [f'{r["metric_name"]}/{r["mode"]}' for r in results
                if r.get('pass') is False and r.get('check') != SELF]
    failures += [f'guest {p}: {e}' for p, r in raws.items()
                 for e in r.get('errors', [])]
    duration = (saved.get('run', {}).get('duration_s') if a.raw
                else round(time.monotonic() - t_start, 1))
    vms = {p: {k: v for k, v in r.get('vm', {}).items() if k != 'rundir'}
           for p, r in raws.items()}
    run = {'date': saved.get('date') or time.strftime('%Y-%m-%dT%H:%M:%S%z'),
           'duration_s': duration,
           'guest_s': {p: r.get('guest_seconds') for p, r in raws.items()},
           'vms': vms, 'quick': raws[PROFILES[0]].get('quick', False),
           'passed': not failures, 'failures': failures,
           'self_consistency_failed': [
               f'{r["metric_name"]}/{r["mode"]}' for r in results
               if r.get('pass') is False and r.get('check') == SELF],
           'command': 'make validate'}
    saved.setdefault('date', run['date'])
    saved.setdefault('run', {'duration_s': duration})
    if not a.raw:
        RAW.write_text(json.dumps(saved) + '\n')
    jpath, spath = a.out / 'validation.json', a.out / 'validation.svg'
    vr.write_report(jpath, build_info(raws), specs(raws), results, run)
    plot(rows, spath)
    print(vr.summary(results))
    shown = jpath.relative_to(REPO) if jpath.is_relative_to(REPO) else jpath
    print(f'\nwrote {shown} and {spath.name}; {duration} s'
          + ('' if not failures else f'; FAILED: {", ".join(failures)}'))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
