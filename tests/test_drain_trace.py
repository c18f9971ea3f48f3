# SPDX-License-Identifier: GPL-2.0
"""The drain scenario's switch-trace reference, on the host: the trace
lines of the kernels' formats read into each loop's time on its CPU
(tests/vm/guest/drain.py, SwitchTrace), and a span's reference and error
from them (tests/drain_checks.py, traced)."""
import importlib
import sys
from pathlib import Path

import pytest

import drain_checks

GUEST = Path(__file__).resolve().parent / 'vm/guest'

# 6.1's format (flags with 5 characters), 5.10's (4), an RT kernel's, the
# idle task's "<idle>", a comm with a bracket and a blank, and a line of
# another task that the pids leave out
TRACE = '''\
# tracer: nop
#
          cgwork-412     [001] d..2.    45.100000: sched_switch: \
prev_comm=cgwork prev_pid=412 prev_prio=125 prev_state=R ==> \
next_comm=ksoftirqd/1 next_pid=20 next_prio=120
     ksoftirqd/1-20      [001] d..2.    45.100500: sched_switch: \
prev_comm=ksoftirqd/1 prev_pid=20 prev_prio=120 prev_state=S ==> \
next_comm=cgwork next_pid=412 next_prio=125
          <idle>-0       [000] d..2    46.000001: sched_switch: \
prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> \
next_comm=cgwork next_pid=413 next_prio=125
          cgwork-413     [000] d...2..  46.100001: sched_switch: \
prev_comm=cgwork prev_pid=413 prev_prio=125 prev_state=R+ ==> \
next_comm=python3 next_pid=99 next_prio=120
          cgwork-7       [000] d..2.    46.200000: sched_switch: \
prev_comm=cgwork prev_pid=7 prev_prio=120 prev_state=S ==> \
next_comm=swapper/0 next_pid=0 next_prio=120
      a [7] b-99      [000] d..2.    46.300000: sched_switch: \
prev_comm=a [7] b prev_pid=99 prev_prio=120 prev_state=S ==> \
next_comm=cgwork next_pid=413 next_prio=125
'''


@pytest.fixture(scope='module')
def drain():
    # imported as the guest does (its directory first on the path), then
    # taken out of sys.modules again
    path = sys.path[:]
    sys.path.insert(0, str(GUEST))
    try:
        yield importlib.import_module('drain')
    finally:
        sys.path[:] = path
        for name, m in list(sys.modules.items()):
            if Path(getattr(m, '__file__', None) or '/').parent == GUEST:
                del sys.modules[name]


def _trace(drain, text):
    t = drain.SwitchTrace.__new__(drain.SwitchTrace)
    t.text = text
    return t


def test_runs_from_each_format(drain):
    assert _trace(drain, TRACE).runs([412, 413]) == ({
        # out without an in: it ran when the trace started
        412: [[1, None, 45_100_000_000], [1, 45_100_500_000, None]],
        413: [[0, 46_000_001_000, 46_100_001_000],
              [0, 46_300_000_000, None]]}, 0)


def test_events_out_of_sequence_counted(drain):
    lines = TRACE.splitlines()
    # the out of 413 dropped: its next in comes while it is in; an out of
    # 412 on another CPU than its in; a line cut short
    text = '\n'.join(lines[:5] + lines[6:] + [
        lines[2].replace('[001]', '[000]').replace('45.100000',
                                                   '47.000000'),
        lines[2][:90]])
    runs, bad = _trace(drain, text).runs([412, 413])
    assert bad == 3, runs
    # each alone
    for extra in ([], [lines[2].replace('[001]', '[000]')
                       .replace('45.100000', '47.000000')], [lines[2][:90]]):
        runs, bad = _trace(drain, '\n'.join(lines + extra)).runs([412, 413])
        assert bad == (1 if extra else 0), (extra, runs)
    runs, bad = _trace(drain, '\n'.join(lines[:5] + lines[6:])).runs([413])
    assert bad == 1, runs


def test_on_cpu_clips_runs_to_the_span():
    runs = [[1, None, 100], [1, 150, 300], [1, 400, None]]
    assert drain_checks.on_cpu_ns(runs, 0, 1000) == 100 + 150 + 600
    assert drain_checks.on_cpu_ns(runs, 120, 160) == 10
    assert drain_checks.on_cpu_ns(runs, 300, 400) == 0


def _res(charged0, charged1, unpaired=0):
    ms = 1_000_000
    snaps = [{'samples': i, 'last_sample_ns': i * 100 * ms,
              'loop0': {'usage_usec': c0}, 'loop1': {'usage_usec': c1}}
             for i, (c0, c1) in enumerate(zip(charged0, charged1))]
    # loop0 off CPU 0 from 50 to 60 ms of each interval; loop1 never off
    runs0 = [[0, None, 50 * ms]] + [
        [0, (i * 100 + 60) * ms, (i * 100 + 150) * ms]
        for i in range(len(snaps) - 1)]
    return {'s_drain': {'series': snaps, 'span_max': 3, 'spans_min': 3,
                        'trace': {'lost': 0, 'unpaired': unpaired, 'runs': {
                            'loop0': runs0, 'loop1': [[1, 0, None]]}}}}


def test_error_per_span_in_percent_of_an_interval():
    rows = drain_checks.traced(_res([0, 90_000, 181_000, 270_000],
                                    [0, 100_000, 200_000, 300_000]))
    assert [x['loop0']['traced_us'] for x in rows] == [90_000.0] * 3
    assert [x['loop0']['err_pct'] for x in rows] == [0.0, 1.0, -1.0]
    assert [x['loop1']['err_pct'] for x in rows] == [0.0] * 3


@pytest.mark.parametrize('spoil', ['none', 'unpaired', 'lost', 'cpu0',
                                   'off', 'off0'])
def test_check_wants_every_event_and_the_loop_on_cpu1(spoil):
    res = _res([0, 90_000, 180_000, 270_000], [0, 100_000, 200_000, 300_000])
    tr = res['s_drain']['trace']
    if spoil == 'unpaired':
        tr['unpaired'] = 1
    elif spoil == 'lost':
        tr['lost'] = 1
    elif spoil == 'cpu0':
        # on CPU 0 from 150 to 160 ms, inside the series
        tr['runs']['loop1'] = [[1, 0, 150_000_000], [0, 150_000_000,
                                                     160_000_000],
                               [1, 160_000_000, None]]
    elif spoil == 'off':
        # charged 5 ms more than traced in one span of three: 5 % off
        res['s_drain']['series'][2]['loop1']['usage_usec'] += 5_000
        res['s_drain']['series'][3]['loop1']['usage_usec'] += 5_000
    elif spoil == 'off0':
        # the ticked CPU 0's loop: 3 ms more than traced in one span of
        # three (3 %), within 2 % and a tick, one span in three off
        res['s_drain']['series'][2]['loop0']['usage_usec'] += 3_000
        res['s_drain']['series'][3]['loop0']['usage_usec'] += 3_000
    if spoil == 'none':
        drain_checks.check_traced(res)
    else:
        with pytest.raises(AssertionError):
            drain_checks.check_traced(res)


@pytest.mark.parametrize('off', [1, 2])
def test_ticked_loop_nine_spans_in_ten(off):
    # ten spans; loop0 (ticked CPU 0) 3 ms (3 %) over its trace in @off of
    # them: one in ten passes, two fail
    n = 10
    c0 = [90_000 * i for i in range(n + 1)]
    for k in range(off):
        for i in range(2 + 3 * k, n + 1):
            c0[i] += 3_000
    res = _res(c0, [100_000 * i for i in range(n + 1)])
    errs = [x['loop0']['err_pct'] for x in drain_checks.traced(res)]
    assert sum(abs(e) > 2 for e in errs) == off, errs
    if off == 1:
        drain_checks.check_traced(res)
    else:
        with pytest.raises(AssertionError):
            drain_checks.check_traced(res)
