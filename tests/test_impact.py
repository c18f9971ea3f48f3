# SPDX-License-Identifier: GPL-2.0
"""Energy impact in a VM: wakeups, the formula, QoS weighting, split=impact
against split=time, runtime coefficient changes, bad coefficients."""
import pytest

from workload import ENGINE_GATE, engine_boot, guest_json, ok

pytestmark = ENGINE_GATE

WAKEUP_USEC = 200          # kcpu_wakeups 2e-4 s


@pytest.fixture(scope='module')
def res(vm, vm_flavour, cge_ko):
    return guest_json(engine_boot(vm, vm_flavour, cge_ko), 'impact')


def per_usec(s):
    return s['energy_uj'] / s['usage_usec']


def test_defaults(res):
    r = dict(ok(res, 's_load'))
    r.pop('seconds')
    assert r == {'split': 'impact', 'kcpu_time': 1, 'kcpu_wakeups': '0.0002',
                 'kqos_background': '0.8'}


def test_wakeups_counted(res):
    r = ok(res, 's_split_impact')
    secs = r['run_s']
    # Against the kernel's count of the sleeper's context switches, as in
    # test_accuracy: at most one wakeup per time it was switched in, and
    # some (its CPU idles while it sleeps); the lower bound against its
    # sleeps is test_wakeups_most_sleeps'. A busy loop: a handful.
    w, sw = r['sleeper']['wakeups'], r['switches']
    assert 1 <= w <= sw['switched'] + 1, r
    assert r['busy']['wakeups'] / secs <= 5, r


@pytest.mark.deep
def test_wakeups_most_sleeps(res):
    # how many sleeps end in a wakeup from idle depends on what else the
    # host runs: premise 50 sleeps; at least 0.8 of them
    # (tests/results/sleeper-wakeups.jsonl)
    r = ok(res, 's_split_impact')
    w, sw = r['sleeper']['wakeups'], r['switches']
    assert sw['sleeps'] >= 50, r
    assert 0.8 * sw['sleeps'] <= w, r


@pytest.mark.parametrize('scenario', ['s_split_impact', 's_split_time'])
@pytest.mark.parametrize('who', ['busy', 'sleeper'])
def test_impact_follows_formula(res, scenario, who):
    s = ok(res, scenario)[who]
    want = s['usage_usec'] + WAKEUP_USEC * s['wakeups']
    # usage_usec and impact_usec are each rounded down from nanoseconds
    assert abs(s['impact_usec'] - want) <= 1, s


@pytest.mark.deep
def test_split_impact_charges_wakeups(res):
    r = ok(res, 's_split_impact')
    ratio = per_usec(r['sleeper_delta']) / per_usec(r['busy_delta'])
    assert ratio >= 1.2, (ratio, r)


@pytest.mark.deep
def test_split_time_charges_time(res):
    r = ok(res, 's_split_time')
    ratio = per_usec(r['sleeper_delta']) / per_usec(r['busy_delta'])
    # the figures the ratio is made of, short enough that pytest does not
    # cut them (1.188 once on 5.10, in a clean-clone run of a probe change
    # not landed; its figures were cut)
    keys = ('usage_usec', 'energy_uj')
    assert abs(ratio - 1) <= 0.15, (ratio, {
        w: {k: r[w][k] for k in keys}
        for w in ('busy_delta', 'sleeper_delta', 'busy', 'sleeper')})


def test_background_weighted(res):
    s = ok(res, 's_background')['bg']
    want = 0.8 * s['usage_usec'] + WAKEUP_USEC * s['wakeups']
    assert abs(s['impact_usec'] - want) <= 2, s


# Deep: its premise, 20 wakeups after the change, is the sleeper's time
# left after the freeze and the settles, which a starved guest shortens.
@pytest.mark.deep
def test_coefficient_change_applies_later(res):
    r = ok(res, 's_coefficient_change')
    b, a, again = r['before'], r['after'], r['again']
    # read while the cgroup was frozen, with at least one sample at the new
    # coefficient between the reads: it had nothing of the cgroup to charge.
    # The counters, not the power averages: those decay at every sample
    # (9 mW to 8 once in a clean-clone run)
    assert r['samples_between'] >= 1, r

    def counters(s):
        return {k: v for k, v in s.items() if not k.startswith('power_avg')}
    assert counters(again) == counters(b), r
    du = a['usage_usec'] - b['usage_usec']
    dw = a['wakeups'] - b['wakeups']
    # 1,760-1,900 measured after the change. Over the whole run at most one
    # per time the sleeper was switched in (wait4's count; the freeze is
    # one). At least 20 after the change, premise: 800 µs more per wakeup
    # than the old coefficient puts the old formula outside the 2 % below.
    assert a['wakeups'] <= r['switches']['switched'] + 1, r
    assert dw >= 20, r
    new = du + 1000 * dw       # kcpu_wakeups 0.001 s = 1000 µs
    old = du + WAKEUP_USEC * dw
    di = a['impact_usec'] - b['impact_usec']
    # Everything after the change is charged at the new coefficient.
    assert abs(di - new) <= 0.02 * new + 2, (di, new, old)
    assert r['param_after_reset'] == '0.0002'


def test_bad_coefficients_refused(res):
    r = ok(res, 's_bad_coefficients')
    for what, p in r.items():
        if what in ('dmesg', 'seconds'):
            continue
        assert not p['accepted'] and p['err'] == 'Invalid argument', what
        assert p['kept'], what
    assert any('refused kcpu_time=abc' in ln for ln in r['dmesg'])


def test_leaves_a_guest_without_cgroups(res):
    # guest_engine.py runs next in the same boot and expects none (its
    # energy.info check of a fresh guest); the script made 6: two pairs
    # side by side, 'bg' and 'coef'
    r = ok(res, 's_remove_cgroups')
    assert r['left'] == [] and r['removed'] == 6, r
