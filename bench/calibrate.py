#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Calibrate the power model from measurement: on a host with RAPL and the
module loaded (source=rapl), fit the per-CPU idle and busy power that the
module's model source (model_idle_mw, model_busy_mw) needs on that
hardware's VMs, and print them with their fit error and a modprobe.d line.

  /usr/bin/python3 bench/calibrate.py [--seconds 5] [--repeat 1] [--json]

It runs phases of n pinned busy loops on CPUs 0..n-1, n = 0 (idle) .. N
(the CPUs it may run on), each --seconds long after a short warm-up, and
reads around each phase:
  - the module's measured energy: the root's energy.stat, total_uj (the
    headline domains, what the module splits), and each domain's energy
    (package, core, uncore, dram, psys where the part has them) estimated
    from the root's share of it (package_uj ...) as share * total_uj /
    energy_uj over the phase (exact for a steady load; the fit that gives
    the model parameters uses total_uj alone);
  - the kernel's CPU time: /proc/stat, busy = user + nice + system + irq +
    softirq (what the model calls active), over the C CPUs it lists.
Both reads of a phase are taken just after one of the module's samples
(energy.info's samples and last_sample_ns), so that the energy and the
length of the phase cover the same samples. Then, per phase, power
P = E / dt and busy CPUs x = busy / dt, and the
least-squares fit (no free intercept) of the model's own formula

    P = idle_mw * C + (busy_mw - idle_mw) * x

gives model_idle_mw and model_busy_mw per CPU. The fit error printed is the
RMS of the phases' residuals (mW and % of the mean power) and each
parameter's standard error.

Power that no CPU's busy time drives (the package's uncore, DRAM at rest,
the rest of the platform for psys) has no term of its own in the model: the
fit puts it into idle_mw, spread evenly over the C CPUs. So on a part with
U mW of uncore and C CPUs the fitted idle_mw is the cores' idle power plus
U / C, and busy_mw - idle_mw is the cores' dynamic power alone: the same
total energy as the hardware for any load, which is what the model needs.
Power that grows with load outside the cores (DRAM traffic) goes into
busy_mw in proportion to the busy time that caused it.

Inside the test VMs it runs against the test build's emulated RAPL (kmod/
emu.c), whose configured watts it must recover (tests/test_calibrate_emu.py).
"""
import argparse
import json
import math
import os
import signal
import sys
import time
from pathlib import Path

STAT = Path('/sys/fs/cgroup_energy/energy.stat')
# energy.stat keys that are not a RAPL domain
NOT_DOMAINS = ('energy_uj', 'idle_uj', 'irq_uj', 'softirq_uj', 'steal_uj')
BUSY_FIELDS = (1, 2, 3, 6, 7)       # /proc/stat: user nice system irq softirq
ALL_FIELDS = range(1, 9)            # ... idle iowait, steal (not guest*)


def read_stat(path=STAT):
    """The root's total_uj, energy_uj and each domain's key. The root shows
    per domain only the part attributed to cgroups (docs/accuracy.md, "On a
    real machine (RAPL)"), split with the headline's fractions."""
    out = {'dom': {}}
    for line in Path(path).read_text().splitlines():
        k, _, v = line.partition(' ')
        if k in ('total_uj', 'energy_uj'):
            out[k[:-3]] = int(v)
        elif (k.endswith('_uj') and k not in NOT_DOMAINS and
              not k.startswith('own_')):      # the root's own part: not one
            out['dom'][k[:-3]] = int(v)
    return out


def energy(a, b):
    """{domain: µJ} between two read_stat()s: 'total' measured, each
    domain estimated as its attributed part * total / energy (exact when
    the load is steady over the phase)."""
    tot, en = b['total'] - a['total'], b['energy'] - a['energy']
    out = {'total': tot}
    for d, v in b['dom'].items():
        if d in a['dom'] and en > 0:
            out[d] = round((v - a['dom'][d]) * tot / en)
    return out


def read_proc_stat(path='/proc/stat'):
    """{'busy_s', 'cpus'}: busy CPU time summed over CPUs (s), and the
    number of CPUs listed."""
    hz = os.sysconf('SC_CLK_TCK')
    busy, cpus = 0, 0
    for line in Path(path).read_text().splitlines():
        f = line.split()
        if f and f[0].startswith('cpu') and f[0] != 'cpu':
            cpus += 1
            busy += sum(int(f[i]) for i in BUSY_FIELDS)
    return {'busy_s': busy / hz, 'cpus': cpus}


def spin(cpu):
    """A child busy on @cpu until killed, at nice 19: it still takes all of
    the CPU that nothing else wants, and at_sample()'s reads, which must
    fall between two samples, take the CPU when they wake. (At nice 0
    beside a loop on every CPU, on a host running QEMU slowly, every read
    for 30 s straddled a sample: CI's run of d811c46.)"""
    pid = os.fork()
    if pid == 0:
        try:
            os.nice(19)
            os.sched_setaffinity(0, {cpu})
            while True:
                pass
        finally:
            os._exit(0)
    return pid


def read_info(stat):
    out = {}
    for line in stat.with_name('energy.info').read_text().splitlines():
        k, _, v = line.partition(' ')
        out[k] = v
    return out


def at_sample(stat=STAT, domains=None, timeout=30):
    """Everything read just after a sample completed, before the next: the
    module's figures change only at samples, so the phase's energy and its
    length must both be the samples' (up to interval_ms of error per end
    otherwise, 2 % of a 5 s phase at 100 ms). Returns (sample time s,
    read_stat(), read_proc_stat(), domains())."""
    stat = Path(stat)
    n = read_info(stat)['samples']
    deadline = time.monotonic() + timeout
    cut = 0
    while True:
        while read_info(stat)['samples'] == n:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f'the module completed no sample in {timeout} s'
                    if not cut else f'a sample completed during each of '
                    f'{cut} reads in {timeout} s')
            time.sleep(0.002)
        a = read_info(stat)
        e, k = read_stat(stat), read_proc_stat()
        d = domains() if domains else None
        b = read_info(stat)
        if a['samples'] == b['samples']:
            return int(a['last_sample_ns']) / 1e9, e, k, d
        n = b['samples']
        cut += 1


def phase(n, cpus, seconds, warmup=0.5, stat=STAT, domains=None):
    """n busy loops on the first n of @cpus for @seconds: one row of the
    fit, {'n', 'dt', 'cpus', 'busy_s', 'uj': {domain: µJ}}. @domains: a
    function giving each domain's cumulative µJ from elsewhere (the
    emulator's record in the test VMs), used instead of the estimate."""
    pids = [spin(c) for c in cpus[:n]]
    try:
        time.sleep(warmup)
        t0, e0, k0, d0 = at_sample(stat, domains)
        time.sleep(seconds)
        t1, e1, k1, d1 = at_sample(stat, domains)
    finally:
        for p in pids:
            os.kill(p, signal.SIGKILL)
            os.waitpid(p, 0)
    uj = energy(e0, e1)
    if domains:
        uj = {'total': uj['total'], **{d: d1[d] - d0[d] for d in d1}}
    return {'n': n, 'dt': t1 - t0, 'cpus': k1['cpus'],
            'busy_s': k1['busy_s'] - k0['busy_s'], 'uj': uj}


def measure(seconds=5.0, repeat=1, cpus=None, stat=STAT, log=None,
            domains=None):
    """The phases: n = 0..N busy loops, up and down @repeat times (so
    that a drift over the run does not tilt the fit)."""
    cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    order = list(range(len(cpus) + 1))
    rows = []
    for r in range(repeat):
        for n in (order if r % 2 == 0 else order[::-1]):
            rows.append(phase(n, cpus, seconds, stat=stat, domains=domains))
            if log:
                row = rows[-1]
                log(f'{n} busy: {row["busy_s"] / row["dt"]:.2f} CPUs, '
                    f'{row["uj"]["total"] / row["dt"] / 1000:.0f} mW')
    return rows


def lstsq2(a, b, y):
    """Least squares y ~ p * a + q * b (no intercept): (p, q, rms of the
    residuals, standard errors of p and q)."""
    saa = sum(x * x for x in a)
    sbb = sum(x * x for x in b)
    sab = sum(x * z for x, z in zip(a, b))
    say = sum(x * z for x, z in zip(a, y))
    sby = sum(x * z for x, z in zip(b, y))
    det = saa * sbb - sab * sab
    if not det:
        raise ValueError('the phases do not tell idle from busy power: '
                         'run at least one idle and one busy phase')
    p = (say * sbb - sby * sab) / det
    q = (sby * saa - say * sab) / det
    res = [yy - p * x - q * z for x, z, yy in zip(a, b, y)]
    sse = sum(r * r for r in res)
    rms = math.sqrt(sse / len(y))
    dof = len(y) - 2
    s2 = sse / dof if dof > 0 else 0.0
    return p, q, rms, math.sqrt(s2 * sbb / det), math.sqrt(s2 * saa / det)


def fit(rows, domain='total'):
    """Per-CPU idle and busy power (mW) of @domain from the phases:
    {'idle_mw', 'busy_mw', 'rms_mw', 'rms_pct', 'idle_se_mw',
    'busy_se_mw', 'phases'}."""
    rows = [r for r in rows if domain in r['uj'] and r['dt'] > 0]
    c = [r['cpus'] for r in rows]
    x = [r['busy_s'] / r['dt'] for r in rows]
    y = [r['uj'][domain] / r['dt'] / 1000 for r in rows]   # µJ/s/1000 = mW
    # P = idle * C + (busy - idle) * x
    idle, dyn, rms, se_i, se_d = lstsq2(c, x, y)
    mean = sum(y) / len(y)
    return {'domain': domain, 'idle_mw': idle, 'busy_mw': idle + dyn,
            'dynamic_mw': dyn, 'rms_mw': rms,
            'rms_pct': rms / mean * 100 if mean else None,
            'idle_se_mw': se_i, 'busy_se_mw': math.hypot(se_i, se_d),
            'phases': len(rows)}


def calibrate(rows):
    """The fit of every domain measured; 'total' first (the headline the
    module splits: what model_idle_mw and model_busy_mw stand for)."""
    doms = sorted({d for r in rows for d in r['uj']} - {'total'})
    return {d: fit(rows, d) for d in ['total', *doms]}


def options_line(f):
    return (f'options cgroup_energy model_idle_mw={round(f["idle_mw"])} '
            f'model_busy_mw={round(f["busy_mw"])}')


def report(fits):
    t = fits['total']
    lines = [f'model_idle_mw={round(t["idle_mw"])}',
             f'model_busy_mw={round(t["busy_mw"])}',
             f'fit error: rms {t["rms_mw"]:.1f} mW ({t["rms_pct"]:.2f} % of '
             f'the mean power) over {t["phases"]} phases; standard error '
             f'idle {t["idle_se_mw"]:.1f} mW, busy {t["busy_se_mw"]:.1f} mW',
             '', 'per domain (mW per CPU; constant power such as uncore is '
             'in idle):']
    for d, f in fits.items():
        lines.append(f'  {d:8} idle {f["idle_mw"]:8.1f}  busy '
                     f'{f["busy_mw"]:8.1f}  rms {f["rms_mw"]:.1f} mW')
    lines += ['', '# /etc/modprobe.d/cgroup-energy.conf on this hardware\'s '
              'VMs (per vCPU):', options_line(t)]
    return '\n'.join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seconds', type=float, default=5.0,
                    help='length of each phase (default 5)')
    ap.add_argument('--repeat', type=int, default=1,
                    help='run the phases this many times (up, down, ...)')
    ap.add_argument('--stat', type=Path, default=STAT,
                    help=f'the root energy.stat (default {STAT})')
    ap.add_argument('--json', action='store_true',
                    help='print the phases and fits as JSON')
    a = ap.parse_args(argv)
    if not a.stat.exists():
        sys.exit(f'calibrate: {a.stat}: no such file (load cgroup_energy and '
                 'mount its file system: see docs/install.md)')
    src = a.stat.with_name('energy.info').read_text()
    if 'source rapl' not in src:
        print('calibrate: warning: the module\'s source is not rapl: this '
              'fits the model to itself', file=sys.stderr)
    rows = measure(a.seconds, a.repeat, stat=a.stat,
                   log=lambda m: print(f'calibrate: {m}', file=sys.stderr,
                                       flush=True))
    fits = calibrate(rows)
    if a.json:
        print(json.dumps({'phases': rows, 'fits': fits}))
    else:
        print(report(fits))
    return 0


if __name__ == '__main__':
    sys.exit(main())
