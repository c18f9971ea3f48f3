# SPDX-License-Identifier: GPL-2.0
"""Host tests of the validator's scoring (no VM, no RAPL needed):

    /usr/bin/python3 -m pytest -q bench/validate_selftest.py

Synthetic runs are made by replaying the module's policy (DESIGN.md section
3, integer arithmetic with cumulative rounding) so that the scorers must
find them exact, and by breaking it so that they must not."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import validate            # noqa: E402
import validate_host       # noqa: E402
import validate_report as vr  # noqa: E402

I_MW, B_MW = 740, 3500


def split(energy, idle, busy, weights):
    """The module's cge_split(): idle share, then cumulative rounding."""
    if not busy or not sum(weights):
        return energy, [0] * len(weights)
    b = energy - energy * idle // (idle + busy)
    out, prev, acc, tot = [], 0, 0, sum(weights)
    for w in weights:
        acc += w
        cur = b * acc // tot
        out.append(cur - prev)
        prev = cur
    return energy - b, out


def model_run(intervals, bias=0):
    """A raw VM run: intervals = [(idle_ns, {cg: ns})]; bias is added to
    the first cgroup's energy in every interval (a broken module)."""
    root = {'usage_usec': 0, 'energy_uj': 0, 'idle_uj': 0, 'idle_usec': 0,
            'total_uj': 0, 'wakeups': 0, 'impact_usec': 0}
    cgs = {}
    ns = {'root_busy': 0, 'root_idle': 0}
    recs, rem, t = [], 0, 10**9
    names = sorted({c for _, m in intervals for c in m})

    def snap(n):
        return {'n': n, 't': t, 'root': dict(root),
                'cg': {c: dict(v) for c, v in cgs.items()}}
    for c in names:
        cgs[c] = {'usage_usec': 0, 'energy_uj': 0, 'wakeups': 0,
                  'impact_usec': 0}
    cgns = dict.fromkeys(names, 0)
    recs.append(snap(1))
    for i, (idle, per) in enumerate(intervals):
        busy = sum(per.values())
        frac = I_MW * (idle + busy) + (B_MW - I_MW) * busy + rem
        e, rem = divmod(frac, 10**6)
        order = sorted(per)
        idle_e, shares = split(e, idle, busy, [per[c] for c in order])
        for k, c in enumerate(order):
            cgns[c] += per[c]
            cgs[c]['usage_usec'] = cgns[c] // 1000
            cgs[c]['energy_uj'] += shares[k] + (bias if k == 0 else 0)
        ns['root_busy'] += busy
        ns['root_idle'] += idle
        root['usage_usec'] = ns['root_busy'] // 1000
        root['idle_usec'] = ns['root_idle'] // 1000
        root['energy_uj'] += sum(shares) + bias
        root['idle_uj'] += idle_e
        root['total_uj'] += e + bias
        t += 10**9
        recs.append(snap(i + 2))
    return {'specs': {'cpus': 2},
            'info_start': {'source': 'model', 'model_idle_mw': I_MW,
                           'model_busy_mw': B_MW},
            'records': recs,
            'phases': [{'name': 'one-busy', 'kind': 'split', 'cgroups': names,
                        'start_ns': 0, 'end_ns': t + 1}]}


STEADY = [(950_000_000, {'a': 1_000_000_000, 'v': 50_000_000})] * 5 + \
    [(10_000_000, {'a': 1_000_000_000, 'b': 990_000_000})] * 3


def test_policy_replay_is_exact():
    raw = model_run(STEADY)
    res = {r['mode']: r for r in validate.score_split(raw, validate
                                                      .split_intervals(raw))}
    for mode in ('dynamic', 'idle', 'absolute'):
        assert res[mode]['pass'], res[mode]
        assert res[mode]['mape'] < 0.001, res[mode]
    assert res['dynamic']['samples'] == 5 * 2 + 3 * 2


def test_policy_error_is_caught():
    raw = model_run(STEADY, bias=50000)     # 50 mJ too much per interval
    res = {r['mode']: r for r in validate.score_split(raw, validate
                                                      .split_intervals(raw))}
    assert not res['dynamic']['pass']
    assert not res['absolute']['pass']


def test_split_needs_model_source():
    raw = model_run(STEADY)
    raw['info_start']['source'] = 'rapl'
    (r,) = validate.score_split(raw, [])
    assert r['pass'] is False and 'not model' in r['error']


def test_conservation_mse():
    good = {'energy_uj': 5, 'idle_uj': 7, 'total_uj': 12}
    bad = {'energy_uj': 5, 'idle_uj': 7, 'total_uj': 13}
    raw = {'records': [{'root': good}], 'bursts': [{'loaded': [good],
                                                    'quiet': [good, bad]}]}
    res = {r['mode']: r for r in validate.score_conservation(raw)}
    assert res['loaded']['mse'] == 0 and res['loaded']['pass']
    assert res['quiet']['mse'] == 0.5 and not res['quiet']['pass']


def test_conservation_counts_irq_softirq_steal():
    # every µJ somewhere: a root whose interrupt, softirq and steal energy
    # were left out would fail; a record without those keys (older build)
    # counts them as 0
    full = {'energy_uj': 5, 'idle_uj': 7, 'irq_uj': 1, 'softirq_uj': 2,
            'steal_uj': 3, 'total_uj': 18}
    old = {'energy_uj': 5, 'idle_uj': 7, 'total_uj': 12}
    assert vr.conserved(full) == (18, 18)
    assert vr.conserved(old) == (12, 12)
    assert vr.conserved(dict(full, steal_uj=0)) == (15, 18)


def test_errors_and_spread():
    mse, mape, max_ape, n, zeros = vr.errors([(100, 101), (200, 198), (0, 1)])
    assert n == 3 and zeros == 1
    assert mse == pytest.approx((1 + 4 + 1) / 3)
    assert mape == pytest.approx(1.0) and max_ape == pytest.approx(1.0)
    r = vr.spread([90, 100, 110], 'usec', 'impact', 'busy',
                  reference={'kernel_usage': [1, 1, 1]})
    assert r['mean'] == 100 and r['cv'] == pytest.approx(8.16497, rel=1e-4)
    assert r['cv_kernel_usage'] == 0


PERF = """\
# started on ...
12.50;Joules;power/energy-pkg/;10001234567;100.00;;
3.25;Joules;power/energy-ram/;10001234567;100.00;;
"""


def test_parse_perf():
    got = validate_host.parse_perf(PERF, validate_host.EVENTS)
    assert got['package'] == (12.5, pytest.approx(10.001234567))
    assert got['dram'][0] == 3.25
    with pytest.raises(validate_host.Unusable, match='not supported'):
        validate_host.parse_perf(
            '<not supported>;Joules;power/energy-ram/;0;0;;\n',
            {'dram': 'power/energy-ram/'})
    with pytest.raises(validate_host.Unusable, match='no count'):
        validate_host.parse_perf('', {'package': 'power/energy-pkg/'})


def rapl_records(intervals):
    """Host records: intervals = [(pkg_uj, dram_uj, idle_ns, busy_ns)],
    every domain split with the same idle/busy times, as the module does."""
    root = dict.fromkeys(('usage_usec', 'idle_usec', 'energy_uj', 'idle_uj',
                          'total_uj', 'package_uj', 'dram_uj'), 0)
    recs, t = [{'n': 1, 't': 0, 'root': dict(root)}], 0
    for k, (pkg, dram, idle, busy) in enumerate(intervals):
        idle_e, (share,) = split(pkg + dram, idle, busy, [busy])
        root['energy_uj'] += share
        root['idle_uj'] += idle_e
        root['total_uj'] += pkg + dram
        root['package_uj'] += split(pkg, idle, busy, [busy])[1][0]
        root['dram_uj'] += split(dram, idle, busy, [busy])[1][0]
        root['usage_usec'] += busy // 1000
        root['idle_usec'] += idle // 1000
        t += 100_000_000
        recs.append({'n': k + 2, 't': t, 'root': dict(root)})
    return recs


def test_domain_totals_recover_each_domain():
    ivs = [(1_000_000 + 7919 * k, 300_000 + 31 * k, 180_000_000 - k * 10**6,
            20_000_000 + k * 10**6) for k in range(50)]
    recs = rapl_records(ivs)
    got, unsplit = validate_host.domain_totals(recs, ['package', 'dram'])
    assert unsplit == 0
    assert got['package'] == pytest.approx(sum(i[0] for i in ivs), rel=1e-5)
    assert got['dram'] == pytest.approx(sum(i[1] for i in ivs), rel=1e-5)


def test_host_score_and_calibration():
    """A machine drawing 20 W + 6 W per busy CPU, 4 CPUs, read by an exact
    module and an exact perf: RAPL MAPE ~0, calibration recovers it."""
    ncpu, recs, windows, t = 4, [], [], 0
    root = dict.fromkeys(('usage_usec', 'idle_usec', 'energy_uj', 'idle_uj',
                          'total_uj', 'package_uj', 'dram_uj'), 0)
    n = 0
    for busy_cpus in (0, 0, 1, 1, 2, 2, 4, 4):
        t0 = t
        for _ in range(20):                   # 2 s of 100 ms samples
            busy = int(busy_cpus * 0.1e9) + 2_000_000
            idle = ncpu * 100_000_000 - busy
            w = 20 + 6 * busy / 0.1e9
            pkg, dram = int(w * 0.08e6), int(w * 0.02e6)
            idle_e, (share,) = split(pkg + dram, idle, busy, [busy])
            root['energy_uj'] += share
            root['idle_uj'] += idle_e
            root['total_uj'] += pkg + dram
            root['package_uj'] += split(pkg, idle, busy, [busy])[1][0]
            root['dram_uj'] += split(dram, idle, busy, [busy])[1][0]
            root['usage_usec'] += busy // 1000
            root['idle_usec'] += idle // 1000
            n += 1
            recs.append({'n': n, 't': t, 'root': dict(root)})
            t += 100_000_000
        span = (t - 100_000_000 - t0) / 1e9
        e = (recs[-1]['root']['total_uj'] -
             recs[-20]['root']['total_uj']) / 1e6
        windows.append({'busy_cpus': busy_cpus, 'perf_t0': t0,
                        'perf_t1': t - 100_000_000,
                        'perf': {'package': (e * 0.8, span),
                                 'dram': (e * 0.2, span)}})
    info = {'model_idle_mw': 740, 'model_busy_mw': 3500}
    results, rows, cal = validate_host.score(
        info, windows, recs, validate_host.EVENTS, ncpu)
    res = {(r['metric_name'], r['mode']): r for r in results}
    for key in (('rapl', 'headline'), ('rapl', 'package'), ('rapl', 'dram'),
                ('conservation', 'host')):
        assert res[key]['pass'], res[key]
    assert res[('model', 'idle')]['mape'] > 50        # 3 W model vs 20 W
    assert cal['model_idle_mw'] == pytest.approx(5000, abs=60)
    assert cal['model_busy_mw'] == pytest.approx(11000, abs=150)


def test_host_refuses_without_rapl(monkeypatch, tmp_path):
    monkeypatch.setattr(validate_host, 'PMU', tmp_path / 'none')
    monkeypatch.setattr(validate_host.os, 'geteuid', lambda: 0)
    monkeypatch.setattr(validate_host.Path, 'glob',
                        lambda self, pat: iter(()))
    with pytest.raises(validate_host.Unusable, match='no RAPL'):
        validate_host.check_machine(tmp_path)
    assert validate_host.main(['--energy-root', str(tmp_path)]) == 2


def test_host_refuses_model_source(monkeypatch, tmp_path):
    pmu = tmp_path / 'pmu'
    (pmu / 'events').mkdir(parents=True)
    (pmu / 'events' / 'energy-pkg').write_text('event=0x02\n')
    en = tmp_path / 'en'
    en.mkdir()
    (en / 'energy.info').write_text('source model\ndomains none\n')
    monkeypatch.setattr(validate_host, 'PMU', pmu)
    monkeypatch.setattr(validate_host.os, 'geteuid', lambda: 0)
    with pytest.raises(validate_host.Unusable, match='source model'):
        validate_host.check_machine(en)
