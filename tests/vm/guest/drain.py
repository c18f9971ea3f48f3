# SPDX-License-Identifier: GPL-2.0
"""The drain without a tick or an IPI (kmod/probe.c, cge_cpu_drain()): one
scenario, s_drain, that guest_accuracy.py runs in its boot (nohz_full=1:
CPU 1 tickless when one task runs there) and guest_engine.py in its own (no
nohz_full: both CPUs ticked), with the module loaded and mounted.

Every task that may move is on CPU 0 (the housekeeping CPU of a nohz_full
system): this script, the guest's other processes and the unbound kernel
threads. Equal busy loops pinned to CPU 0 and CPU 1, each in its own
cgroup, run together: after each sample (as many as this script catches),
their CPU time and energy, and each CPU's idle time and schedule() calls
(tests/drain_checks.py makes intervals and windows of about 1 s of
them); once they have exited, their usage_usec against cpu.stat. Then the
IPI windows: the kernel's count of function-call and reschedule IPIs per
CPU (/proc/interrupts, CAL and RES) while two such loops run, then with
CPU 1 idle.

s_drain_base, run in the same boot before the module is first loaded: the
same IPI windows without the module, the kernel's own IPIs, which the
module's are counted against. (Not after it is unloaded: for 3 s after
rmmod CPU 0 took 20-55 more, on 6.1 to 7.3.)

The series' reference for each loop's time on its CPU is the kernel's own
record of its switches: the sched_switch event of the trace instance that
guest-init.sh holds (tracing_on 0 there, so that the module's load patches
no kernel text) records the switches of cgwork's tasks from before the
loops start to after the series' last snapshot, on the CLOCK_MONOTONIC
clock of the module's sample times (trace_clock mono). Turning the
instance's recording on and off, its clock and its filter patch no text.
The events go to the ring buffer, read once the loops are gone, so nothing
wakes for them; clearing the filter then calls every CPU (a function-call
IPI each) and waits for RCU, before the IPI windows begin.
"""
import contextlib
import os
import re
import subprocess
import time
from pathlib import Path

from common import (CG, LOOP_MAX_S, compare_usage, info, mkcg,
                    next_sample, running, Work)

# The series: a snapshot after each sample the script catches, for
# SERIES_S, and on until it holds SPANS_MIN spans of one to SPAN_MAX
# samples between consecutive snapshots (SERIES_MAX_S at most). On a host
# running QEMU slowly a read after a sample outlasts the interval, and
# consecutive snapshots are samples apart: in CI's run of d811c46, 0-6
# spans of one sample in the 3.6 s (36 intervals) on every kernel.
SERIES_S = 3.6
SERIES_MAX_S = 30
SPAN_MAX = 3
SPANS_MIN = 12
BUSY_WINDOW_S = 3.0
IDLE_WINDOW_S = 2.0
# After the loops exit, the kernel's deferred work on their CPUs wakes
# kernel threads there for a while (4 IPIs in 2 s on CPU 1 of 6.1 right
# after them, 0 once settled)
SETTLE_S = 1.0
SCHEDSTATS = Path('/proc/sys/kernel/sched_schedstats')
NOHZ_FULL = Path('/sys/devices/system/cpu/nohz_full')
# The instance guest-init.sh holds sched_switch on in (harness.run_vm's
# hold_tracepoints)
HOLD = Path('/sys/kernel/tracing/instances/cge-hold')
# A line of its trace: the CPU and the time (s.us), before the event's
# name (after the task's comm and pid, which may hold anything); then the
# pids switched out and in
SWITCH = re.compile(r'\[(\d+)\]\s+\S+\s+(\d+)\.(\d{6}): sched_switch: ')
PIDS = re.compile(r'\sprev_pid=(\d+) prev_prio=.*\s==> .*'
                  r'\snext_pid=(\d+) next_prio=')


def _cpu_state():
    """Each CPU's idle + iowait time (/proc/stat, USER_HZ: 10 ms), µs, and
    its calls of schedule() (/proc/schedstat's sched_count, the 3rd field
    of its cpuN line, counted while SCHEDSTATS is 1)."""
    hz = os.sysconf('SC_CLK_TCK')
    idle, sched = {}, {}
    for line in Path('/proc/stat').read_text().splitlines():
        f = line.split()
        if f[0].startswith('cpu') and f[0] != 'cpu':
            idle[int(f[0][3:])] = (int(f[4]) + int(f[5])) * 1_000_000 // hz
    for line in Path('/proc/schedstat').read_text().splitlines():
        f = line.split()
        if f and f[0].startswith('cpu') and f[0][3:].isdigit():
            sched[int(f[0][3:])] = int(f[3])
    return {'idle_usec': idle, 'schedule_calls': sched}


def _ipis():
    """IPIs received per CPU since boot (/proc/interrupts): function calls
    (CAL: smp_call_function*(), remote irq_work, TLB shootdowns, and on
    7.x the wakeup of a task queued to another CPU) and reschedules (RES:
    a remote wakeup that only needs the CPU to schedule)."""
    out = {}
    for line in Path('/proc/interrupts').read_text().splitlines():
        f = line.split()
        if f and f[0] in ('CAL:', 'RES:'):
            out[f[0][:3].lower()] = [int(x) for x in f[1:] if x.isdigit()]
    if len(out) != 2:
        raise RuntimeError('no CAL or RES line in /proc/interrupts')
    return out


def _since(a):
    b = _ipis()
    return {k: [y - x for x, y in zip(a[k], b[k])] for k in a}


def _pin_all(cpus):
    """Every task's affinity set to @cpus (per-CPU kernel threads refuse);
    returns {pid: its former affinity}. A sleeping task whose CPU is 1 is
    woken by a function-call IPI (ttwu_queue_wakelist()) from CPU 0's
    timers, and which ones the scheduler puts there depends on CPU 0's
    load (kcompactd0, woken every 512 ms, was there in one run: 4 in 2 s
    on CPU 1 of 6.1)."""
    old = {}
    for d in Path('/proc').iterdir():
        if not d.name.isdigit():
            continue
        pid = int(d.name)
        try:
            old[pid] = os.sched_getaffinity(pid)
            os.sched_setaffinity(pid, cpus)
        except OSError:
            old.pop(pid, None)                # exited, or refused
    return old


def _unpin(old):
    for pid, cpus in old.items():
        try:
            os.sched_setaffinity(pid, cpus)
        except OSError:
            pass                              # exited


def _loops(cgs, cgwork, seconds):
    # at nice 5, so that this script, at 0, runs on CPU 0 when it wakes
    procs = [subprocess.Popen(['nice', '-n', '5', cgwork, '-C',
                               str(CG / cg), '-p', str(cpu), 'busy',
                               str(seconds)])
             for cpu, cg in enumerate(cgs)]
    try:
        running(cgs)            # exec under TCG: 0.2-0.7 s
    except Exception:
        Work.stop(procs, cgs)
        raise
    return procs


def _pids(cgs):
    """{cgroup: the pid of the one task in it} (the loops' workers)."""
    out = {}
    for cg in cgs:
        pids = (CG / cg / 'cgroup.threads').read_text().split()
        if len(pids) != 1:
            raise RuntimeError(f'{cg}: {len(pids)} tasks, not one: {pids}')
        out[cg] = int(pids[0])
    return out


class SwitchTrace:
    """The held instance's sched_switch events of the tasks named @comm,
    recorded while the context is entered; runs() then gives a task's
    time on a CPU."""

    def __init__(self, comm):
        # as the kernel keeps it: TASK_COMM_LEN, 16 with the NUL
        self.comm = comm[:15]
        self.ev = HOLD / 'events/sched/sched_switch'
        if (self.ev / 'enable').read_text().strip() != '1':
            raise RuntimeError(f'{self.ev} is not enabled (hold_tracepoints)')
        # what the undos write back: no filter, not recording
        state = ((self.ev / 'filter').read_text().strip(),
                 (HOLD / 'tracing_on').read_text().strip())
        if state != ('none', '0'):
            raise RuntimeError(f'{HOLD}: filter and tracing_on {state}, '
                               "not ('none', '0') as guest-init.sh left them")
        self.clock = re.search(r'\[(\S+)\]',
                               (HOLD / 'trace_clock').read_text())[1]
        self.text = ''
        self.lost = None
        self._undo = contextlib.ExitStack()

    def __enter__(self):
        # each setting's undo first, so that a failure leaves none set
        with contextlib.ExitStack() as undo:
            undo.callback(_write, HOLD / 'trace_clock', self.clock)
            _write(HOLD / 'trace_clock', 'mono')
            undo.callback(_write, self.ev / 'filter', '0')
            _write(self.ev / 'filter', f'prev_comm == "{self.comm}" || '
                   f'next_comm == "{self.comm}"')
            undo.callback(_write, HOLD / 'trace', '')
            _write(HOLD / 'trace', '')              # empties the buffer
            undo.callback(_write, HOLD / 'tracing_on', '0')
            _write(HOLD / 'tracing_on', '1')
            self._undo = undo.pop_all()
        return self

    def __exit__(self, *exc):
        with self._undo:
            _write(HOLD / 'tracing_on', '0')
            self.text = (HOLD / 'trace').read_text()
            self.lost = sum(_lost(d) for d in (HOLD / 'per_cpu').iterdir())

    def runs(self, pids):
        """({pid: [[cpu, in_ns, out_ns], ...]}, bad) for @pids: each time
        the task was switched in, where and when, and when it was
        switched out (None: still in when the trace ended; a first run
        may start at None, in before the trace began); bad counts the
        events that fit no such sequence (an out with no in, an in while
        in) and the sched_switch lines not read."""
        out = {p: [] for p in pids}
        bad = 0
        for line in self.text.splitlines():
            m, ids = SWITCH.search(line), PIDS.search(line)
            if not (m and ids):
                bad += 'sched_switch:' in line
                continue
            cpu, ns = int(m[1]), int(m[2]) * 10**9 + int(m[3]) * 1000
            prev, nxt = int(ids[1]), int(ids[2])
            if prev in out:
                r = out[prev]
                if r and r[-1][0] == cpu and r[-1][2] is None:
                    r[-1][2] = ns
                elif r:
                    bad += 1
                else:
                    r.append([cpu, None, ns])
            if nxt in out:
                r = out[nxt]
                bad += bool(r and r[-1][2] is None)
                r.append([cpu, ns, None])
        return out, bad


def _write(path, text):
    path.write_text(text + '\n')


def _lost(cpu_dir):
    """Events a CPU's buffer overwrote or dropped (its stats file)."""
    n = 0
    for line in (cpu_dir / 'stats').read_text().splitlines():
        k, _, v = line.partition(':')
        if k.strip() in ('overrun', 'dropped events'):
            n += int(v)
    return n


def _series(cgs, cgwork):
    """The snapshots, and the loops' switches traced over them: {pids,
    lost (events the buffer lost), unpaired (SwitchTrace.runs()'s bad),
    runs: {cgroup: its runs}}."""
    with SwitchTrace(Path(cgwork).name) as tr:
        procs = _loops(cgs, cgwork, LOOP_MAX_S)
        try:
            pids = _pids(cgs)
            series = _snapshots(cgs)
        finally:
            Work.stop(procs, cgs)
    runs, bad = tr.runs(pids.values())
    return series, {'pids': pids, 'lost': tr.lost, 'unpaired': bad,
                    'runs': {cg: runs[pid] for cg, pid in pids.items()}}


def _snapshots(cgs):
    next_sample(cgs)
    series = []
    t0 = time.monotonic()
    spans = 0
    while (time.monotonic() < t0 + SERIES_S or spans < SPANS_MIN) and \
            time.monotonic() < t0 + SERIES_MAX_S:
        s = next_sample(cgs, extra=_cpu_state)
        if series:
            spans += 1 <= s['info']['samples'] - \
                series[-1]['samples'] <= SPAN_MAX
        series.append({
            'samples': s['info']['samples'],
            'last_sample_ns': s['info']['last_sample_ns'],
            **s['extra'],
            **{cg: {k: s['stat'][cg][k]
                    for k in ('usage_usec', 'energy_uj')}
               for cg in cgs}})
    return series


def _ipi_windows(cgs, cgwork, samples):
    """IPIs per CPU (_ipis()) while equal loops run on CPU 0 and CPU 1,
    then over a window with CPU 1 idle; this script wakes every 100 ms on
    CPU 0 and reads nothing of the module's in them. (Reading its files
    every 2 ms, as next_sample() polls, frees a dentry and an inode per
    open by RCU (fs.c: always_delete_dentry): on 7.2 the grace periods
    that keep going woke RCU's kthread on CPU 0 from CPU 1 by an IPI, and
    kicked the tickless CPU 1's tick, 10-27 IPIs a second: a reader's
    cost, not the sampler's, which no window of this count holds.)
    @samples() returns the module's sample count, or None."""
    procs = _loops(cgs, cgwork, LOOP_MAX_S)
    try:
        # the sample count read first (one read of the module's files),
        # and last, over samples_s
        n0, ts = samples(), time.monotonic()
        time.sleep(0.5)
        ipi0, t0 = _ipis(), time.monotonic()
        while time.monotonic() < t0 + BUSY_WINDOW_S:
            time.sleep(0.1)
        busy = {**_since(ipi0), 'window_s': round(time.monotonic() - t0, 3)}
        n1 = samples()
        if n0 is not None:
            busy['samples'] = n1 - n0
            busy['samples_s'] = round(time.monotonic() - ts, 3)
    finally:
        Work.stop(procs, cgs)
    time.sleep(SETTLE_S)
    a = _ipis()
    time.sleep(IDLE_WINDOW_S)
    return {'busy': busy, 'idle': {**_since(a), 'window_s': IDLE_WINDOW_S}}


def s_drain(ctx):
    cgs = ['loop0', 'loop1']
    mkcg(*cgs, 'ipi0', 'ipi1')
    old = _pin_all({0})
    SCHEDSTATS.write_text('1\n')
    try:
        before = info()
        series, trace = _series(cgs, ctx['cgwork'])
        # the loops gone: their totals against cpu.stat, what a drain
        # charged beyond their runtime taken back
        usage = compare_usage(cgs, before)
    finally:
        SCHEDSTATS.write_text('0\n')
    try:
        ipis = _ipi_windows(['ipi0', 'ipi1'], ctx['cgwork'],
                            lambda: info()['samples'])
    finally:
        _unpin(old)
    return {'series': series, 'span_max': SPAN_MAX, 'spans_min': SPANS_MIN,
            'trace': trace,
            'usage': usage, 'ipis': ipis,
            'rt': 'PREEMPT_RT' in os.uname().version,
            'nohz_full': _nohz_full()}


def _nohz_full():
    """The nohz_full CPUs, '' if none (the file says '(null)' on a kernel
    built with NO_HZ_FULL and booted without it; 5.10 has no file)."""
    try:
        cpus = NOHZ_FULL.read_text().strip()
    except FileNotFoundError:
        return ''
    return '' if cpus == '(null)' else cpus


def s_drain_base(ctx):
    """s_drain's IPI windows without the module; its cgroups removed after
    (the module's first load finds none: test_engine)."""
    cgs = ['base0', 'base1']
    mkcg(*cgs)
    old = _pin_all({0})
    try:
        return {'ipis': _ipi_windows(cgs, ctx['cgwork'], lambda: None)}
    finally:
        _unpin(old)
        for cg in cgs:
            os.rmdir(CG / cg)
