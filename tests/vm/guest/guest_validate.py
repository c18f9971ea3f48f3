# SPDX-License-Identifier: GPL-2.0
"""Guest side of `make validate` (bench/validate.py): run the validation
scenarios in one boot and print the raw measurements; the host computes the
report from them.

    python3 guest_validate.py cgroup_energy.ko cgwork validate_work [--quick]

Prints one line 'CGE-RAW {json}'. Nothing here judges: it records
  - every sample of the module (a recorder thread reads energy.info, the
    root's and the current scenario's energy.stat after each sample), with
    the phases (scenario, start, end) on the same CLOCK_MONOTONIC clock;
  - per cgroup, energy.stat against cpu.stat once the cgroup is quiet;
  - bursts of root reads (conservation);
  - identical runs (fixed work: bench/validate_work.c) for impact
    repeatability, with each run's wait4 rusage.

Workloads are moved into their cgroup while they sleep (blocked on a pipe
before they exec cgwork), so that where a move falls within a slice does
not matter; one scenario (moved) measures what happens when it does.
"""
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

from common import (CG, EN, PARAMS, compare_usage, cpu_usage, info,  # noqa: E402
                    mkcg, proc_idle_usec, settle, sh, snapshot, stat)

READER_CG = 'cge-validator'       # this script's own cgroup


def move_self(rel):
    mkcg(rel)
    (CG / rel / 'cgroup.procs').write_text(f'{os.getpid()}\n')


class Recorder(threading.Thread):
    """Reads the module's figures once per sample, right after it, while a
    recorded phase runs (it sleeps otherwise: under TCG every read costs)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.records = []
        self.track = None             # cgroups of the phase; None: asleep
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def set_track(self, cgs):
        with self.lock:
            self.track = None if cgs is None else [READER_CG, *cgs]

    @staticmethod
    def snapshot(track):
        """One consistent set: no sample completed while reading it."""
        try:
            s = snapshot(['', *track], extra=proc_idle_usec,
                         missing_ok=True, tries=5)
        except RuntimeError:
            return None
        cgs = s['stat']
        return {'n': s['info']['samples'], 't': s['info']['last_sample_ns'],
                'root': cgs.pop(''), 'cg': cgs, 'proc_idle': s['extra']}

    def run(self):
        last = -1
        while not self.stop.is_set():
            with self.lock:
                track = self.track
            if track is None:
                self.stop.wait(0.05)
                continue
            s = self.snapshot(track)
            if s and s['n'] != last:
                last = s['n']
                self.records.append(s)
            ms = int(PARAMS.joinpath('interval_ms').read_text())
            # wake 5 ms after the next sample is due; poll if it is late
            wait = 0
            if s:
                wait = (s['t'] + (ms + 5) * 1_000_000
                        - time.monotonic_ns()) / 1e9
            self.stop.wait(min(wait, ms / 1000) if wait > 0 else 0.02)


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
    def __init__(self, work, rec, quick):
        self.w = work
        self.rec = rec
        self.quick = quick
        self.phases = []
        self.usage_rows = []          # {'mode', 'cg', 'ours', 'kernel', ...}
        self.impact_rows = []         # {'mode', 'run', 'impact_usec', ...}
        self.bursts = []              # root reads in tight loops

    def phase(self, name, kind, cgs, record=False):
        return _Phase(self, name, kind, cgs, record)

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

    # ---- energy split under the model, split=time ------------------------
    def energy_split(self):
        """Steady loads with a 1 s sampling interval, so that the recorder
        sees every sample (each is checked exactly against the policy) and
        costs little CPU itself."""
        secs = 5 if self.quick else 7
        scen = [
            ('one-busy', [('val-split/one/busy', ['busy', secs], 0)]),
            ('two-busy', [('val-split/two/a', ['busy', secs], 0),
                          ('val-split/two/b', ['busy', secs], 1)]),
            ('wakeup-beside-busy',
             [('val-split/wake/busy', ['busy', secs], 0),
              ('val-split/wake/waker', ['sleeper', 1000, secs], 1)]),
        ]
        old = PARAMS.joinpath('interval_ms').read_text().strip()
        PARAMS.joinpath('interval_ms').write_text('1000')
        settle(2)
        try:
            for name, jobs in scen:
                cgs = [j[0] for j in jobs]
                mkcg(*cgs)
                with self.phase(name, 'split', cgs, record=True):
                    self.w.run_all(jobs)
                self.quiet_compare(
                    {cg: 'busy' if args[0] == 'busy' else 'wakeup-heavy'
                     for cg, args, _ in jobs}, self.usage_rows)
            with self.phase('quiet', 'split', [], record=True):
                time.sleep(4 if self.quick else 5)
        finally:
            PARAMS.joinpath('interval_ms').write_text(old)
            settle(1)

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

    # ---- conservation: bursts of root reads, idle and under load ---------
    def conservation(self):
        n = 300 if self.quick else 500
        mkcg('val-cons/busy')
        with self.phase('conservation', 'conservation', ['val-cons/busy']):
            p = self.w.start('val-cons/busy', 'busy', 3)
            t0 = time.monotonic()
            reads = [stat() for _ in range(n)]
            p.wait()
            quiet = [stat() for _ in range(n // 5)]
        self.bursts.append({'loaded': reads, 'quiet': quiet,
                            'seconds': round(time.monotonic() - t0, 2)})


class _Phase:
    def __init__(self, run, name, kind, cgs, record):
        self.run, self.name, self.kind, self.cgs = run, name, kind, cgs
        self.record = record

    def __enter__(self):
        if self.record:
            self.run.rec.set_track(self.cgs)
        self.t0 = time.monotonic_ns()
        return self

    def __exit__(self, *exc):
        if self.record:
            settle(1)           # the interval the phase ended in
            self.run.rec.set_track(None)
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


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if len(args) != 3:
        sys.exit('usage: guest_validate.py MODULE.ko CGWORK VALIDATE_WORK '
                 '[--quick]')
    ko, cgwork, fixed = (os.path.abspath(a) for a in args)
    quick = '--quick' in sys.argv
    t_start = time.monotonic()
    move_self(READER_CG)
    sh(f'insmod {ko} split=time')
    sh(f'mount -t cgroup_energy none {EN}')
    settle(2)
    out = {'specs': guest_specs(), 'info_start': info(),
           'params': {p.name: p.read_text().strip()
                      for p in sorted(PARAMS.iterdir())},
           'quick': quick}
    rec = Recorder()
    rec.start()
    run = Run(Work(cgwork, fixed), rec, quick)
    errors = []
    for step in (run.usage, run.moved, run.energy_split, run.impact_runs,
                 run.conservation):
        try:
            step()
        except Exception as e:     # reported; the host fails the run
            errors.append(f'{step.__name__}: {type(e).__name__}: {e}')
    settle(2)
    rec.stop.set()
    rec.join(5)
    out.update({'info_end': info(), 'records': rec.records,
                'phases': run.phases, 'usage': run.usage_rows,
                'impact': run.impact_rows, 'bursts': run.bursts,
                'errors': errors,
                'guest_seconds': round(time.monotonic() - t_start, 1)})
    sh(f'umount {EN}')
    sh('rmmod cgroup_energy')
    print('CGE-RAW ' + json.dumps(out, separators=(',', ':')), flush=True)


if __name__ == '__main__':
    main()
