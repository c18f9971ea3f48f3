# SPDX-License-Identifier: GPL-2.0
"""usage_usec against cpu.stat on quiet cgroups (the one scenario of this
fact: the engine suite does not repeat it), run inside the VM by
tests/test_accuracy.py (typically with nohz_full=1 on the command line):

    python3 guest_accuracy.py cgroup_energy.ko cgwork

Workloads, each in its own cgroup, compared once the cgroup is quiet: a busy
loop pinned to CPU 1 (the nohz_full CPU when nohz_full=1: its tick stops), a
busy loop left to the scheduler, a 2 ms sleeper, a SCHED_FIFO busy loop on
CPU 1, 300 short-lived processes.  Prints 'CGE-RESULT {json}'.
"""
import os
import re
import threading
import time
from pathlib import Path

from common import (CG, EN, Work, compare_usage, root_terms_add_up, dmesg,
                    info, main_args, mkcg, s_unload, scenarios, sh, stat)
from drain import SwitchTrace, s_drain, s_drain_base

KO, CGWORK = main_args()
# a sched_switch line on CPU 1, as 'time prev_pid prev_state next_comm
# next_pid'
SWITCH_CPU1 = re.compile(r'\[001\] \S+\s+(\d+\.\d+): sched_switch: .*?'
                         r'prev_pid=(\d+) .*?prev_state=(\S+) ==> '
                         r'next_comm=(.*?) next_pid=(\d+)')
W = Work(CGWORK)


def _read(p):
    try:
        return Path(p).read_text().strip()
    except OSError:
        return None


def s_env(ctx):
    return {'kver': os.uname().release,
            'cmdline': _read('/proc/cmdline'),
            'nohz_full': _read('/sys/devices/system/cpu/nohz_full'),
            'isolated': _read('/sys/devices/system/cpu/isolated'),
            'rt': 'PREEMPT_RT' in os.uname().version,
            # an unstable TSC makes sched_clock per-CPU: a tickless CPU's
            # runqueue clock then stands still between readings of it
            # (docs/accuracy.md)
            'tsc_unstable': 'Marking TSC unstable' in dmesg(),
            'clocksource': _read('/sys/devices/system/clocksource/'
                                 'clocksource0/current_clocksource'),
            'clk_tck': os.sysconf('SC_CLK_TCK')}


def s_load(ctx):
    # from CPU 0: the sampler stays on the CPU that loaded the module
    # (sampler.c, cge_queue_sample()), and s_drain wants CPU 1 to itself
    sh(f'taskset -c 0 insmod {KO}')
    sh(f'mount -t cgroup_energy none {EN}')
    return {'info': info()}


def _fifo_loop():
    """The SCHED_FIFO loop on CPU 1, with what test_usage_matches_cpu_stat
    prints if its cgroup's figure is off: CPU 1's sched_switch events of
    cgwork (and how many events the trace lost) and the sampler's sample
    times (energy.info's last_sample_ns, polled every 10 ms from CPU 0; both
    CLOCK_MONOTONIC) while it ran.  Both are diagnostics: a trace or a poll
    that fails is recorded in 'diag_error', and the loop runs regardless."""
    samples, done, errors = set(), threading.Event(), []

    def poll():
        try:
            # beside the sampler, off the loop's tickless CPU
            os.sched_setaffinity(0, {0})
            while not done.is_set():
                samples.add(info()['last_sample_ns'])
                time.sleep(0.01)
        except (OSError, KeyError) as e:
            errors.append(f'poll: {e!r}')

    tr = None
    try:
        tr = SwitchTrace('cgwork').__enter__()
    except (OSError, RuntimeError) as e:
        errors.append(f'trace: {e!r}')
    t = threading.Thread(target=poll)
    t.start()
    try:
        sh(f'chrt -f 10 {CGWORK} -C {CG}/fifo_cpu1 -p 1 busy 0.5')
    finally:
        done.set()
        t.join()
        if tr:
            try:
                tr.__exit__(None, None, None)
            except OSError as e:
                errors.append(f'trace: {e!r}')
    out = {'sample_ns': sorted(samples)}
    if tr:
        out['switches_cpu1'] = [' '.join(m.groups())
                                for m in SWITCH_CPU1.finditer(tr.text)]
        out['trace_lost'] = tr.lost
    if errors:
        out['diag_error'] = errors
    return out


def s_accuracy(ctx):
    cgs = ['busy_cpu1', 'busy', 'sleeper', 'fifo_cpu1', 'spawn']
    mkcg(*cgs)
    before = info()
    a = W.start('busy_cpu1', 'busy', 2, cpu=1)
    a.wait()
    b = W.start('busy', 'busy', 2)
    c = W.start('sleeper', 'sleeper', 2000, 2)
    busy_switches = W.switches(b)
    switches = W.switches(c)
    fifo = _fifo_loop()
    W.run('spawn', 'spawn', 300, 2000)
    out = compare_usage(cgs, before)
    out['root_ok'] = root_terms_add_up(stat())
    # the clocksource watchdog can mark the TSC unstable after boot
    out['tsc_unstable'] = 'Marking TSC unstable' in dmesg()
    i = info()
    out['overcharge'] = {k: i[k] for k in ('overcharge_usec',
                                           'overcharge_repaid_usec')}
    out['sleeper'].update(switches)
    out['busy'].update(busy_switches)
    out['fifo_cpu1'].update(fifo)
    return out


if __name__ == '__main__':
    scenarios([s_env, s_drain_base, s_load, s_accuracy, s_drain, s_unload],
              {'cgwork': CGWORK}, deep_only=(s_drain_base,))
