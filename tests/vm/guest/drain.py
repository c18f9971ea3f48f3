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
them). The kernel's count of
function-call IPIs per CPU (/proc/interrupts, CAL) over the loops' series,
then over a window with CPU 1 idle. The loops' usage_usec against cpu.stat
once they have exited.
"""
import os
import subprocess
import time
from pathlib import Path

from common import CG, compare_usage, mkcg, next_sample, stat, Work

SERIES_S = 3.6
IDLE_WINDOW_S = 2.0
# After the loops exit, the kernel's deferred work on their CPUs wakes
# kernel threads there for a while (4 IPIs in 2 s on CPU 1 of 6.1 right
# after them, 0 once settled)
SETTLE_S = 1.0
SCHEDSTATS = Path('/proc/sys/kernel/sched_schedstats')


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


def _cal():
    """Function-call IPIs received per CPU since boot (/proc/interrupts)."""
    for line in Path('/proc/interrupts').read_text().splitlines():
        f = line.split()
        if f and f[0] == 'CAL:':
            return [int(x) for x in f[1:] if x.isdigit()]
    raise RuntimeError('no CAL line in /proc/interrupts')


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


def _series(cgs, cgwork):
    # at nice 5, so that this script, at 0, runs on CPU 0 when it wakes
    procs = [subprocess.Popen(['nice', '-n', '5', cgwork, '-C',
                               str(CG / cg), '-p', str(cpu), 'busy',
                               str(SERIES_S + 2)])
             for cpu, cg in enumerate(cgs)]
    try:
        # from the first sample after both ran (exec under TCG: 0.2-0.7 s)
        while not all(stat(cg)['usage_usec'] for cg in cgs):
            time.sleep(0.05)
        first = next_sample(cgs)
        cal0 = _cal()
        series = []
        end = time.monotonic() + SERIES_S
        while time.monotonic() < end:
            s = next_sample(cgs, extra=_cpu_state)
            series.append({
                'samples': s['info']['samples'],
                'last_sample_ns': s['info']['last_sample_ns'],
                **s['extra'],
                **{cg: {k: s['stat'][cg][k]
                        for k in ('usage_usec', 'energy_uj')}
                   for cg in cgs}})
        cal1 = _cal()
    finally:
        Work.stop(procs, cgs)
    ipis = {'cal': [b - a for a, b in zip(cal0, cal1)],
            'samples': series[-1]['samples'] - first['info']['samples']}
    return series, ipis


def s_drain(ctx):
    cgs = ['loop0', 'loop1']
    mkcg(*cgs)
    old = _pin_all({0})
    SCHEDSTATS.write_text('1\n')
    try:
        series, busy = _series(cgs, ctx['cgwork'])
        # the loops gone: their totals against cpu.stat, what a drain
        # charged beyond their runtime taken back
        usage = compare_usage(cgs)
        time.sleep(SETTLE_S)
        a = _cal()
        time.sleep(IDLE_WINDOW_S)
        idle = [y - x for x, y in zip(a, _cal())]
    finally:
        SCHEDSTATS.write_text('0\n')
        _unpin(old)
    return {'series': series, 'usage': usage,
            'ipis': {'busy': busy, 'idle': {'cal': idle,
                                            'window_s': IDLE_WINDOW_S}}}
