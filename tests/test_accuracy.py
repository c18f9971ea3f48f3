# SPDX-License-Identifier: GPL-2.0
"""usage_usec against cpu.stat with nohz_full=1 on the kernel command line
(CPU 1 of the 2-CPU guest runs tickless when one task is on it), compared on
quiet cgroups, one boot per selected flavour (CGE_FLAVOURS).  The module
charges the scheduler's own per-task runtime at every switch, so a stopped
tick must not change what it counts.

CGE_ACCURACY_MODES="nohz plain" also boots without nohz_full (the table of
docs/accuracy.md comes from such a run); default "nohz".  A kernel built
without CONFIG_NO_HZ_FULL (Debian 11's 5.10) boots plain in nohz mode, and
test_nohz_full_active checks that it has no nohz_full.  On ticked CPUs, make check
compares usage_usec with cpu.stat in test_engine (100 overflowing cgroups,
cgroup churn) and test_stress (churn under migration).  Results are kept in
.build/accuracy/<flavour>-<mode>.json.
"""
import json
import os
from pathlib import Path

import pytest

import drain_checks
import tiers
from vm import kernels
from workload import cgwork, guest_json

REPO = Path(__file__).resolve().parents[1]
APPEND = {'nohz': 'nohz_full=1', 'plain': ''}
# flavours whose kernel has no CONFIG_NO_HZ_FULL
NO_NOHZ_FULL = {'5.10'}
MODES = (os.environ.get('CGE_ACCURACY_MODES') or 'nohz').split()


@pytest.fixture(scope='module', params=MODES)
def res(request, vm, vm_flavour, cge_ko):
    mode = request.param
    config = kernels.kernel(vm_flavour).config.read_text()
    can_nohz = 'CONFIG_NO_HZ_FULL=y' in config.splitlines()
    # only Debian 11's 5.10 is built without it; another kernel that loses
    # it is a failure, not a plain boot
    assert can_nohz or vm_flavour in NO_NOHZ_FULL, vm_flavour
    boot = mode if can_nohz else 'plain'
    r = vm.run({'run': f'{tiers.guest_env()}/usr/bin/python3 '
                f'tests/vm/guest/guest_accuracy.py {cge_ko} {cgwork()}'},
               flavour=vm_flavour, append=APPEND[boot], timeout=600)
    out = guest_json(r)
    out['_mode'] = mode
    out['_can_nohz'] = can_nohz
    d = REPO / '.build/accuracy'
    d.mkdir(parents=True, exist_ok=True)
    (d / f'{vm_flavour}-{mode}.json').write_text(json.dumps(out, indent=1)
                                                 + '\n')
    return out


def test_nohz_full_active(res):
    r = res['s_env']
    assert 'error' not in r, r['error']
    if res['_mode'] == 'nohz':
        # a kernel without CONFIG_NO_HZ_FULL has no nohz_full to turn on
        assert r['nohz_full'] == ('1' if res['_can_nohz'] else None), r


@pytest.mark.parametrize('cg', ['busy_cpu1', 'busy', 'sleeper', 'fifo_cpu1'])
def test_usage_matches_cpu_stat(res, cg):
    r = res['s_accuracy']
    assert 'error' not in r, r['error']
    assert r[cg]['kernel'] > 0
    # Both sum the scheduler's own runtimes: equal on most kernels, up to
    # 0.32 ms below on 6.1-rt and sid (docs/accuracy.md's table, not explained yet),
    # never above but by what drains charged beyond a runtime and no later
    # charge took back (drain_checks.above_cpu_stat_max()). 1 ms is three
    # times the largest gap; 3 % or 30 ms would pass a 2 ms sleeper charged
    # nothing.
    # On a failure, the message tells whether drains charged running tasks
    # beyond what they then turned out to have run and whether that was
    # taken back (energy.info's overcharge figures, summed over all
    # cgroups), and the guest's clock (TSC unstable at boot, after the
    # workloads). The FIFO loop's record holds its switches on CPU 1 and the
    # sample times while it ran (guest_accuracy.py, _fifo_loop()).
    env = res['s_env']
    assert -1000 <= r[cg]['diff'] <= drain_checks.above_cpu_stat_max(
        r[cg]), (
        r[cg], r.get('overcharge'),
        {k: env.get(k) for k in ('tsc_unstable', 'clocksource')},
        r.get('tsc_unstable'))


def test_sleeper_counts_wakeups(res):
    r = res['s_accuracy']
    assert 'error' not in r, r['error']
    s = r['sleeper']
    # Against the kernel's count of the sleeper's context switches (wait4),
    # not a rate: at most one wakeup per time it was switched in
    # (Work.switches), and some (its CPU idles while it sleeps)
    assert 1 <= s['wakeups'] <= s['switched'] + 1, s
    # a busy loop: at most one per time it was switched in (a handful)
    assert r['busy']['wakeups'] <= r['busy']['switched'] + 1, r['busy']


@pytest.mark.deep
def test_sleeper_wakeups_most_sleeps(res):
    r = res['s_accuracy']
    assert 'error' not in r, r['error']
    s = r['sleeper']
    # Premise: 50 sleeps, 1/20 of the nominal 2 ms. At least 0.8 of its
    # sleeps (tests/results/sleeper-wakeups.jsonl; a CPU that ran something
    # else while the sleeper slept gives no wakeup from idle).
    assert s['sleeps'] >= 50, s
    assert 0.8 * s['sleeps'] <= s['wakeups'], s


def test_short_lived_processes(res):
    r = res['s_accuracy']
    assert 'error' not in r, r['error']
    # as above: 0 to 0.20 ms below cpu.stat measured
    assert -1000 <= r['spawn']['diff'] <= drain_checks.above_cpu_stat_max(
        r['spawn']), r['spawn']
    assert r['root_ok']


# CPU 1 tickless: not on a kernel without CONFIG_NO_HZ_FULL, where CPU 1 is
# ticked, its kernel threads in every interval (test_engine checks 1 s
# windows)
@pytest.mark.deep
@pytest.mark.only(vm_flavour=[f for f in kernels.known_flavours()
                              if f not in NO_NOHZ_FULL])
def test_busy_time_current_at_every_interval(res):
    assert res['_can_nohz'], 'collected for kernels with CONFIG_NO_HZ_FULL'
    drain_checks.check_intervals(res)


@pytest.mark.deep
def test_busy_time_per_interval_against_switch_trace(res):
    # CPU 1's loop, tickless where the kernel has nohz_full, every span;
    # the ticked CPU 0's, nine spans in ten
    drain_checks.check_traced(res)


@pytest.mark.deep
def test_equal_loops_equal_energy_per_window(res):
    drain_checks.check_windows(res, tickless=res['_can_nohz'])


@pytest.mark.deep
def test_no_ipi_to_a_busy_or_idle_cpu(res):
    drain_checks.check_ipis(res)


def test_loops_totals_match_cpu_stat(res):
    drain_checks.check_totals(res)
