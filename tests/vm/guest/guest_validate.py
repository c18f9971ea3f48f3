# SPDX-License-Identifier: GPL-2.0
"""Guest side of `make validate` (bench/validate.py): run the validation
scenarios of one emulated part in one boot, with the module at its
defaults (split, interval_ms) on the test build's emulated RAPL (kmod/
emu.c), and print the raw measurements; the host scores them.

    python3 guest_validate.py cgroup_energy.ko cgwork validate_work PROFILE
        [--quick]

Prints one line 'CGE-RAW {json}'. Nothing here judges: it records, with
what the module did not compute read at the same sample (common.snapshot):
  - per cgroup, energy.stat against cpu.stat once the cgroup is quiet
    (usage, moved, impact runs of fixed work with their wait4 rusage);
  - the root's idle_usec and /proc/stat's idle + iowait (idle);
  - the root's total_uj and the emulator's record of the energy it
    returned (conservation_hw, and the whole run);
  - cgroups pinned to one package (package_split) or core (core_split):
    their energy.stat, cpu.stat, /proc/stat per CPU and the emulator's
    record;
  - bench/calibrate.py's phases and fit, then one workload measured (the
    module on the emulated RAPL) and modelled (source=model at each
    domain's fitted parameters).

Workloads are moved into their cgroup while they sleep (blocked on a pipe
before they exec cgwork), so that where a move falls within a slice does
not matter; one scenario (moved) measures what happens when it does.
"""
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from common import (CG, PARAMS, REPO, compare_usage, cpu_usage,  # noqa: E402
                    emu_truth, emu_uj, fifo, info, insmod, mkcg, mount_debugfs,
                    mount_en, next_sample, proc_idle_usec, rmmod, settle,
                    snapshot, umount_en)

sys.path.insert(0, str(REPO / 'bench'))
import calibrate  # noqa: E402

READER_CG = 'cge-validator'       # this script's own cgroup
# the emulated power per CPU (emu.c's defaults, said out loud) and what each
# profile adds: amd-zen's cores differ
EMU_IDLE_MW, EMU_BUSY_MW = 1000, 8000
PROFILE_PARAMS = {'amd-zen': 'emu_cpu_busy_mw=6000,10000'}


def move_self(rel):
    mkcg(rel)
    (CG / rel / 'cgroup.procs').write_text(f'{os.getpid()}\n')


def truth_json():
    """The emulator's record, with string keys (JSON)."""
    t = emu_truth()
    return {'profile': t['profile'],
            'pkg': {f'{p} {d}': v for (p, d), v in t['pkg'].items()},
            'core': {str(c): v for c, v in t['core'].items()},
            'cpu': {str(c): v for c, v in t['cpu'].items()}}


def proc_cpus():
    """/proc/stat per CPU, µs: {cpu: {'busy', 'total'}}; busy = user +
    nice + system + irq + softirq, total adds idle, iowait and steal."""
    hz = os.sysconf('SC_CLK_TCK')
    out = {}
    for line in Path('/proc/stat').read_text().splitlines():
        f = line.split()
        if f and f[0].startswith('cpu') and f[0] != 'cpu':
            v = [int(x) * 1_000_000 // hz for x in f[1:9]]
            out[f[0][3:]] = {'busy': v[0] + v[1] + v[2] + v[5] + v[6],
                             'total': sum(v)}
    return out


def proc_busy_s():
    return sum(c['busy'] for c in proc_cpus().values()) / 1e6


def truth_domains():
    """Each domain's energy the emulator returned, summed over packages,
    µJ: what the module read ({} when the emulator is not there)."""
    try:
        t = emu_truth()
    except OSError:
        return {}
    out = {}
    for (_, d), v in t['pkg'].items():
        out[d] = out.get(d, 0) + emu_uj(v['read'], v['esu'])
    return out


def workload_extra():
    return {'busy': proc_busy_s(), 'dom': truth_domains()}


def hw_snapshot(cgs):
    """Just after a sample: the root's and @cgs' energy.stat and, before
    the next sample, the emulator's record; then cpu.stat and /proc/stat.
    Read at real-time priority: among busy loops on every CPU, the reads
    would otherwise outlast the 100 ms interval."""
    with fifo():
        return _hw_snapshot(cgs)


def _hw_snapshot(cgs):
    # the module's figures and the emulator's record of the same sample
    # (energy to the µJ); the kernel's continuous counters right after
    # (a few ms late at both ends of a window): all of them within one
    # 100 ms interval is more than the guest can read under TCG among
    # busy loops
    s = next_sample(['', *cgs], extra=truth_json)
    return {'n': s['info']['samples'], 't': s['info']['last_sample_ns'],
            'root': s['stat'].pop(''), 'cg': s['stat'], 'truth': s['extra'],
            'mono_ns': time.monotonic_ns(),
            'cpu_stat': {cg: cpu_usage(cg) for cg in cgs},
            'proc': proc_cpus(), 'proc_idle': proc_idle_usec()}


def topology():
    """{cpu: {'package_id', 'core_cpu': the lowest CPU of its core}}."""
    out = {}
    base = Path('/sys/devices/system/cpu')
    for d in sorted(base.glob('cpu[0-9]*')):
        t = d / 'topology'
        if not t.exists():
            continue
        sib = (t / 'thread_siblings_list').read_text().strip()
        first = int(sib.replace('-', ',').split(',')[0])
        out[d.name[3:]] = {
            'package_id': int((t / 'physical_package_id').read_text()),
            'core_cpu': first}
    return out


def set_model(idle_mw, busy_mw):
    """model_idle_mw and model_busy_mw, in the order the module accepts
    (idle never above busy in between)."""
    if idle_mw > int(PARAMS.joinpath('model_busy_mw').read_text()):
        PARAMS.joinpath('model_busy_mw').write_text(str(busy_mw))
        PARAMS.joinpath('model_idle_mw').write_text(str(idle_mw))
    else:
        PARAMS.joinpath('model_idle_mw').write_text(str(idle_mw))
        PARAMS.joinpath('model_busy_mw').write_text(str(busy_mw))
    settle(2)


class Work:
    """Starts cgwork (or validate_work) in a cgroup, moving it there while
    it sleeps."""

    def __init__(self, cgwork, fixed):
        self.bin = cgwork
        self.fixed = fixed

    def start(self, cg, *args, cpu=None):
        pin = None
        if args[0] == 'fixed':          # validate_work, pinned from here
            argv, args, pin = [self.fixed], args[1:], cpu
        else:
            argv = [self.bin] + (['-p', str(cpu)] if cpu is not None else [])
        argv += [str(a) for a in args]
        p = subprocess.Popen(['sh', '-c', 'read _ && exec "$@"', 'sh', *argv],
                             stdin=subprocess.PIPE)
        wait_blocked(p.pid)
        if pin is not None:
            os.sched_setaffinity(p.pid, {pin})
        (CG / cg / 'cgroup.procs').write_text(f'{p.pid}\n')
        p.stdin.write(b'go\n')
        p.stdin.close()
        return p

    def run_all(self, jobs):
        """jobs: [(cg, args, cpu)]; start them all, wait for all. Returns
        each one's rusage (wait4: CPU time, voluntary context switches)."""
        ps = [self.start(cg, *args, cpu=cpu) for cg, args, cpu in jobs]
        usage = []
        for p, (cg, args, _) in zip(ps, jobs):
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            if p.returncode:
                raise RuntimeError(f'cgwork {args} in {cg}: rc {p.returncode}')
            usage.append({'ru_usec': round((ru.ru_utime + ru.ru_stime) * 1e6),
                          'nvcsw': ru.ru_nvcsw, 'nivcsw': ru.ru_nivcsw})
        return usage


def wait_blocked(pid, timeout=10):
    """Until @pid sleeps reading its stdin pipe (so it is not running)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1]
            wchan = Path(f'/proc/{pid}/wchan').read_text().strip()
        except OSError:
            state, wchan = ' ?', ''
        if state.split()[0] == 'S' and 'pipe' in wchan:
            return
        time.sleep(0.005)
    raise RuntimeError(f'pid {pid} never blocked on its pipe')


class Run:
    def __init__(self, work, quick):
        self.w = work
        self.quick = quick
        self.phases = []
        self.usage_rows = []          # {'mode', 'cg', 'ours', 'kernel', ...}
        self.impact_rows = []         # {'mode', 'run', 'impact_usec', ...}
        self.idle_snaps = []          # [[hw_snapshot]] per idle window set
        self.cons = []                # conservation_hw reads
        self.splits = {}              # package_split, core_split
        self.model = {}               # calibration, measured, modelled

    def phase(self, name, kind, cgs):
        return _Phase(self, name, kind, cgs)

    def quiet_compare(self, modes, into):
        """modes: {cgroup: mode}; compare once the cgroups are quiet."""
        rows = compare_usage(list(modes))
        for cg, mode in modes.items():
            into.append({'mode': mode, 'cg': cg, **rows[cg]})

    # ---- usage_usec against cpu.stat -------------------------------------
    def usage(self):
        n = 4 if self.quick else 6
        secs = 1.5 if self.quick else 2
        modes = [
            ('busy', ['busy', secs]),
            ('wakeup-heavy', ['sleeper', 500, secs]),
            ('short-lived', ['spawn', 60 if self.quick else 100, 1000]),
        ]
        for mode, args in modes:
            cgs = [f'val-usage/{mode}/c{i}' for i in range(n)]
            mkcg(*cgs)
            with self.phase(f'usage {mode}', 'usage', cgs):
                self.w.run_all([(cg, args, None) for cg in cgs])
            self.quiet_compare({cg: mode for cg in cgs}, self.usage_rows)

    # ---- a running task moved to another cgroup -------------------------
    def moved(self):
        """A busy task on CPU 0 moved from cgroup 'from' to 'to' by this
        process (on CPU 1) while it runs: cpu.stat charges the old cgroup
        up to the move; the module charges the task's slice since its last
        sample to the cgroup it is in when the slice is charged."""
        n = 3 if self.quick else 5
        cpus = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {1})
        try:
            for i in range(n):
                a, b = f'val-moved/r{i}/from', f'val-moved/r{i}/to'
                mkcg(a, b)
                with self.phase(f'moved {i}', 'usage', [a, b]):
                    p = self.w.start(a, 'busy', 2, cpu=0)
                    time.sleep(1 + 0.023 * i)   # vary the phase vs. samples
                    (CG / b / 'cgroup.procs').write_text(f'{p.pid}\n')
                    p.wait()
                self.quiet_compare({a: 'moved-from', b: 'moved-to'},
                                   self.usage_rows)
        finally:
            os.sched_setaffinity(0, cpus)

    # ---- impact repeatability: identical runs ------------------------------
    def impact_runs(self):
        runs = 4 if self.quick else 5
        modes = [
            ('busy', ['fixed', 'loops', 100000]),
            ('wakeup-heavy', ['fixed', 'sleeps', 400, 1000]),
            ('short-lived', ['fixed', 'forks', 40, 2000]),
        ]
        for mode, args in modes:
            cgs = [f'val-impact/{mode}/r{i}' for i in range(runs)]
            warm = f'val-impact/{mode}/warmup'
            mkcg(warm, *cgs)
            with self.phase(f'impact {mode}', 'impact', cgs):
                # The first run pays for TCG's code translation: not scored.
                self.w.run_all([(warm, args, 1)])
                ru = [self.w.run_all([(cg, args, 1)])[0] for cg in cgs]
            settle()
            snap = snapshot(cgs)['stat']
            for i, cg in enumerate(cgs):
                self.impact_rows.append({'mode': mode, 'run': i, 'cg': cg,
                                         **snap[cg], 'kernel': cpu_usage(cg),
                                         **ru[i]})

    # ---- the module against the emulated hardware -----------------------
    def window_snaps(self, cgs, n, secs):
        """@n + 1 snapshots @secs apart, each just after a sample: the
        module's figures, and what it did not compute, read at the same
        sample (the emulator's record, /proc/stat, cpu.stat)."""
        out = []
        for i in range(n + 1):
            if i:
                time.sleep(secs)
            out.append(hw_snapshot(cgs))
        return out

    def idle(self):
        """The root's idle_usec against /proc/stat's idle + iowait over
        the same windows: one CPU busy, then none."""
        cg = 'val-idle/busy'
        mkcg(cg)
        with self.phase('idle', 'idle', [cg]):
            p = self.w.start(cg, 'busy', 5 if self.quick else 6.5, cpu=0)
            time.sleep(0.3)
            self.idle_snaps.append(self.window_snaps([], 3, 1.5))
            p.wait()
            self.idle_snaps.append(self.window_snaps([], 2, 1.5))

    def conservation_hw(self):
        """Work on both CPUs, cgroups created and removed meanwhile: after
        each sample, the root's total_uj and the headline energy the
        emulator returned."""
        mkcg('val-hw/a', 'val-hw/b')
        with self.phase('conservation_hw', 'conservation', ['val-hw/a',
                                                          'val-hw/b']):
            ws = [self.w.start('val-hw/a', 'busy', 5, cpu=0),
                  self.w.start('val-hw/b', 'busy', 5, cpu=1)]
            t_end = time.monotonic() + 6
            n = 0
            while time.monotonic() < t_end:
                s = next_sample(extra=truth_json)
                self.cons.append({'root': s['stat'][''], 'truth': s['extra'],
                                  'n': s['info']['samples']})
                n += 1
                if n % 5 == 0:
                    rel = f'val-hw/c{n}'
                    mkcg(rel)
                    self.w.run_all([(rel, ['busy', 0.05], None)])
                    os.rmdir(CG / rel)
            for w in ws:
                w.wait()

    def split_scenario(self, key, jobs, secs):
        """jobs: [(cgroup, cpu)], each busy for the run (killed after the
        last snapshot, so every window is loaded throughout); snapshots
        every @secs s meanwhile (raw[key])."""
        cgs = [cg for cg, _ in jobs]
        mkcg(*cgs)
        n = 3
        with self.phase(key, key, cgs):
            ps = [self.w.start(cg, 'busy', 120, cpu=cpu) for cg, cpu in jobs]
            try:
                time.sleep(0.3)
                snaps = self.window_snaps(cgs, n, secs)
            finally:
                for p in ps:
                    p.kill()
                    p.wait()
        self.splits[key] = {'cgroups': dict(jobs), 'snaps': snaps}

    def package_split(self):
        """One cgroup busy on CPU 0 (package 0), two sharing CPU 1
        (package 1)."""
        self.split_scenario('package_split', [('val-pkg/s0', 0),
                                              ('val-pkg/s1a', 1),
                                              ('val-pkg/s1b', 1)], 1.5)

    def core_split(self):
        """One cgroup busy on core 0, two sharing core 1 (amd-zen: the
        cores' busy power differs)."""
        self.split_scenario('core_split', [('val-core/c0', 0),
                                           ('val-core/c1a', 1),
                                           ('val-core/c1b', 1)], 1.5)

    # ---- the model against the measured energy ----------------------------
    def workload(self, tag, secs):
        """The same phases each time: idle, one CPU busy, both busy; two
        windows each: [{'phase', 'dt_ns', 'busy_s', 'uj': {root key: µJ},
        'dom': {domain: µJ the emulator returned}}]."""
        out = []
        for name, cpus in (('idle', []), ('one-busy', [0]),
                           ('two-busy', [0, 1])):
            cgs = [f'val-model/{tag}/{name}/c{c}' for c in cpus]
            mkcg(*cgs)
            ps = [self.w.start(cg, 'busy', 120, cpu=c)
                  for cg, c in zip(cgs, cpus)]
            try:       # loaded to the last window's end: killed after it
                time.sleep(0.3)
                with fifo():
                    snaps = [next_sample(extra=workload_extra)]
                for _ in range(2):
                    time.sleep(secs / 2)
                    with fifo():
                        snaps.append(next_sample(extra=workload_extra))
            finally:
                for p in ps:
                    p.kill()
                    p.wait()
            for a, b in zip(snaps, snaps[1:]):
                ra, rb = a['stat'][''], b['stat']['']
                out.append({'phase': name,
                            'dt_ns': b['info']['last_sample_ns'] -
                            a['info']['last_sample_ns'],
                            'busy_s': b['extra']['busy'] - a['extra']['busy'],
                            'uj': {k: rb[k] - ra[k] for k in rb
                                   if k.endswith('_uj') and k in ra},
                            'dom': {d: v - a['extra']['dom'][d]
                                    for d, v in b['extra']['dom'].items()
                                    if d in a['extra']['dom']}})
        return out

    def model_vs_measured(self, load, idle_mw, busy_mw):
        """Calibrate (bench/calibrate.py) on the emulated hardware, run the
        workload measured, then with source=model at each domain's fitted
        parameters."""
        secs = 2 if self.quick else 3
        rows = calibrate.measure(seconds=1.5 if self.quick else 3,
                                 domains=truth_domains)
        fits = calibrate.calibrate(rows)
        self.model['calibration'] = {'phases': rows, 'fits': fits,
                                     'emu_idle_mw': idle_mw,
                                     'emu_busy_mw': busy_mw,
                                     'cpus': os.cpu_count()}
        self.model['measured'] = self.workload('measured', secs)
        load('source=model')
        self.model['source'] = info()['source']
        self.model['modelled'] = {}
        for dom, f in fits.items():
            # a domain no busy time drives (uncore) may fit a busy power a
            # little below its idle one: the module takes idle <= busy
            idle = max(0, round(f['idle_mw']))
            busy = max(idle, round(f['busy_mw']))
            try:
                set_model(idle, busy)
            except OSError as e:
                self.model['modelled'][dom] = {'error': f'{idle} {busy}: {e}'}
                continue
            self.model['modelled'][dom] = {
                'idle_mw': idle, 'busy_mw': busy,
                'windows': self.workload(f'model-{dom}', secs)}


class _Phase:
    def __init__(self, run, name, kind, cgs):
        self.run, self.name, self.kind, self.cgs = run, name, kind, cgs

    def __enter__(self):
        self.t0 = time.monotonic_ns()
        return self

    def __exit__(self, *exc):
        self.run.phases.append({'name': self.name, 'kind': self.kind,
                                'cgroups': self.cgs, 'start_ns': self.t0,
                                'end_ns': time.monotonic_ns()})
        return False


def guest_specs():
    cpu = ''
    for line in Path('/proc/cpuinfo').read_text().splitlines():
        if line.startswith('model name'):
            cpu = line.split(':', 1)[1].strip()
            break
    mem = kv_colon('/proc/meminfo').get('MemTotal', '')
    return {'cpus': os.cpu_count(), 'cpu_model': cpu, 'memory': mem,
            'kernel': platform.release(), 'machine': platform.machine(),
            'hypervisor': 'hypervisor' in Path('/proc/cpuinfo').read_text()}


def kv_colon(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        k, _, v = line.partition(':')
        out[k.strip()] = v.strip()
    return out


# the scenarios of each profile's boot (the usage ones need one boot only)
STEPS = {
    'intel-server': ('usage', 'moved', 'impact_runs', 'idle',
                     'conservation_hw', 'package_split'),
    'intel-client': ('conservation_hw',),
    'amd-zen': ('conservation_hw', 'core_split'),
}
# the parts calibrated and modelled (the client has core, uncore, psys)
MODELLED = ('intel-server', 'intel-client')


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if len(args) != 4:
        sys.exit('usage: guest_validate.py MODULE.ko CGWORK VALIDATE_WORK '
                 'PROFILE [--quick]')
    ko, cgwork, fixed = (os.path.abspath(a) for a in args[:3])
    profile = args[3]
    quick = '--quick' in sys.argv
    t_start = time.monotonic()
    move_self(READER_CG)
    mount_debugfs()
    loaded = []

    def load(extra=''):
        if loaded:
            umount_en()
            rmmod()
            loaded.clear()
        insmod(ko, f'emu_profile={profile} emu_idle_mw={EMU_IDLE_MW} '
                   f'emu_busy_mw={EMU_BUSY_MW} '
                   f'{PROFILE_PARAMS.get(profile, "")} {extra}'.strip())
        loaded.append(1)
        mount_en()
        settle(2)

    out = {'profile': profile, 'specs': guest_specs(), 'quick': quick,
           'topology': topology(), 'errors': [],
           'emu': {'idle_mw': EMU_IDLE_MW, 'busy_mw': EMU_BUSY_MW,
                   'params': PROFILE_PARAMS.get(profile, '')}}
    try:
        load()
    except OSError as e:
        out['not_run'] = f'insmod emu_profile={profile}: {e}'
        print('CGE-RAW ' + json.dumps(out, separators=(',', ':')), flush=True)
        return
    out.update({'info_start': info(),
                'params': {p.name: p.read_text().strip()
                           for p in sorted(PARAMS.iterdir())}})
    run = Run(Work(cgwork, fixed), quick)
    first = hw_snapshot([])
    for name in STEPS.get(profile, ()):
        try:
            getattr(run, name)()
        except Exception as e:     # reported; the host fails the run
            out['errors'].append(f'{name}: {type(e).__name__}: {e}')
    out['whole_run'] = [first, hw_snapshot([])]
    out['info_end'] = info()
    if profile in MODELLED:
        try:
            run.model_vs_measured(load, EMU_IDLE_MW, EMU_BUSY_MW)
        except Exception as e:
            out['errors'].append(f'model_vs_measured: {type(e).__name__}: '
                                 f'{e}')
    out.update({'phases': run.phases, 'usage': run.usage_rows,
                'impact': run.impact_rows, 'idle': run.idle_snaps,
                'conservation_hw': run.cons, 'splits': run.splits,
                'model': run.model,
                'guest_seconds': round(time.monotonic() - t_start, 1)})
    umount_en()
    rmmod()
    print('CGE-RAW ' + json.dumps(out, separators=(',', ':')), flush=True)


if __name__ == '__main__':
    main()
