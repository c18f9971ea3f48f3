# SPDX-License-Identifier: GPL-2.0
"""The bench guard: the short version of make bench (bench/bench.py).

One boot of the 6.1 guest, about two minutes: `perf bench sched pipe`
without and with cgroup_energy loaded, alternating (12 pairs, each B run
paired with the A run next to it), and the self-timing build
(CGE_SELFTIME=y) under the same benchmark. It fails only on a gross
regression, against the baseline of this host's class in
bench/baseline.json (recorded once per class, from BASELINE_RUNS boots of
this short version; bench.baseline_limits()):

- the median of the pairwise B/A throughput ratios below the class's
  ratio_limit (what the runs' spread gives by chance once in 1,000), or
- the probe's share of the benchmark's time (self-timed ns per switch
  times switches per second, which does not move with the guest's speed)
  above the class's share_limit.

The deep tier's (make check-full): timing under TCG depends on the host's
load. It runs on the baseline's flavour only; `make bench` measures it all.
"""
import json
import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'bench'))
import bench  # noqa: E402


# the boot's tests (the others are host tests of bench.py's rules)
ON_BASELINE = pytest.mark.only(vm_flavour=[bench.FLAVOUR])


@pytest.fixture(scope='module')
def short(vm, vm_flavour, cge_ko):
    try:
        base = bench.baseline()
    except bench.BaselineError as e:
        pytest.fail(str(e))
    selfko = bench.build_selftime(vm_flavour)
    # the plain model, as make bench's baseline was measured on
    res = vm.run(bench.short_commands(cge_ko, selfko), flavour=vm_flavour,
                 timeout=600, cpu_flags='')
    return {'throughput': bench.guest_result(res['throughput']),
            'selftime': bench.guest_result(res['selftime']), 'base': base}


def test_baseline_file():
    """Each host class's baseline: the runs it was recorded from, in the
    guard's conditions, why, and the limits their spread gives."""
    doc = json.loads(bench.BASELINE.read_text())
    assert set(doc) == {'note', 'classes'} and doc['classes'], doc.keys()
    assert doc['note'] == bench.BASELINE_NOTE
    for cls, base in doc['classes'].items():
        assert base['flavour'] == bench.FLAVOUR, cls
        assert base['short'] == bench.SHORT, cls
        # recorded as the guard runs: trace events held on
        # (harness.run_vm's default)
        assert base['hold_tracepoints'] is True, cls
        assert len(base['runs']) >= bench.BASELINE_RUNS, cls
        assert all(len(r['ratios_B']) == bench.SHORT['pairs']
                   for r in base['runs']), cls
        assert base['why'].strip(), cls
        assert {k: base[k] for k in ('ratio_limit', 'share_limit')} == \
            bench.baseline_limits(base['runs']), cls


@pytest.mark.deep
@ON_BASELINE
def test_short_bench_runs(short):
    tp = short['throughput']
    assert not tp.get('error'), tp['error']
    assert not tp['errors'], tp['errors']
    assert tp['bench']['pipe']['summary']['B']['n'] >= 10
    st = short['selftime']
    assert not st.get('error'), st['error']
    assert all(r['timed_calls'] > 0 for r in st['reps']), st['reps']


@pytest.mark.deep
@ON_BASELINE
def test_no_gross_regression(short):
    base = short['base']
    bad = bench.gross_regression(short['throughput'], short['selftime'], base)
    pipe = short['throughput']['bench']['pipe']['summary']['B']
    print(f'module_ratio {pipe["median"]:.3f} ({pipe["min"]:.3f}-'
          f'{pipe["max"]:.3f}, n={pipe["n"]}); self-timed '
          f'{short["selftime"]["pipe"]["median"]} ns per switch, share '
          f'{short["selftime"]["pipe_share"]["median"]:.4f} (baseline '
          f'{base["ns_per_switch"]} ns, {base["pipe_share"]:.4f}; limits '
          f'{base["ratio_limit"]}, {base["share_limit"]})')
    assert not bad, '; '.join(bad)


def test_gross_regression_rule():
    """The rule itself, on made-up results (no VM)."""
    base = {'ns_per_switch': 100, 'pipe_share': 0.01, 'ratio_limit': 0.8,
            'share_limit': 0.015}

    def tput(ratios):
        return {'errors': [], 'bench': {'pipe': {'ratios': {'B': ratios},
                'summary': {'B': bench_spread(ratios)}}}}

    def selftime(ns, share):
        return {'pipe': {'median': ns}, 'pipe_share': {'median': share}}

    ok = [1.0, 0.95, 1.05] * 4
    assert bench.gross_regression(tput(ok), selftime(100, 0.01), base) == []
    # a slower guest: more ns, same share: fine
    assert bench.gross_regression(tput(ok), selftime(400, 0.01), base) == []
    assert bench.gross_regression(tput(ok), selftime(100, 0.016), base)
    assert bench.gross_regression(tput([0.79] * 12), selftime(100, 0.01),
                                  base)
    assert bench.gross_regression(tput([1.0] * 9), selftime(100, 0.01), base)


def test_baseline_limits_from_the_spread():
    """On runs drawn from a known spread (each run's median B/A and probe
    share lognormal), one more run falls beyond a limit computed from
    BASELINE_RUNS of them about GUARD_ALPHA of the time (3 of 3,000
    expected), and runs that spread more give wider limits."""
    import random
    rnd = random.Random(3)

    def runs(noise, n=bench.BASELINE_RUNS):
        return [{'module_ratio': math.exp(rnd.gauss(0, noise)),
                 'pipe_share': 0.04 * math.exp(rnd.gauss(0, noise))}
                for _ in range(n)]
    out = 0
    for _ in range(3000):
        lim = bench.baseline_limits(runs(0.05))
        new = runs(0.05, 1)[0]
        out += new['module_ratio'] < lim['ratio_limit']
        out += new['pipe_share'] > lim['share_limit']
    assert out <= 20, out           # 6 expected of 6,000 draws
    rnd.seed(4)
    quiet = bench.baseline_limits(runs(0.02))
    rnd.seed(4)
    noisy = bench.baseline_limits(runs(0.1))
    assert noisy['ratio_limit'] < quiet['ratio_limit'] < 1
    assert quiet['share_limit'] < noisy['share_limit']


def test_baseline_limits_catch_a_gross_regression():
    """Self-consistency of each committed class's limits with its runs: a
    module that cuts throughput by 40 % falls below the ratio limit even
    in the class's best run, and every run's share is below the share
    limit."""
    classes = json.loads(bench.BASELINE.read_text())['classes']
    for cls, base in classes.items():
        assert 0.6 * max(r['module_ratio'] for r in base['runs']) < \
            base['ratio_limit'], cls
        assert max(r['pipe_share'] for r in base['runs']) < \
            base['share_limit'], cls


def bench_spread(xs):
    import statistics
    return {'median': statistics.median(xs), 'min': min(xs), 'max': max(xs),
            'n': len(xs)}


def test_ipi_rows():
    """The pipe runs' IPIs a second per CPU and state, on made-up runs (a
    failed run, None, left out)."""
    import guest_bench
    st = guest_bench.ipi_spread('ABBA', [[1, 2], [3, 4], None, [5, 6]],
                                ['A', 'B'])
    assert [x['median'] for x in st['A']] == [3, 4]
    assert [x['n'] for x in st['B']] == [1, 1]
    rows = bench.ipi_rows({'bench': {'pipe': {'ipis_by_state': st}}})
    assert rows == [
        '| pipe: IPIs a second (CAL + RES), CPU 0 / CPU 1: without | '
        '3 (1-5) / 4 (2-6) | |',
        '| pipe: IPIs a second (CAL + RES), CPU 0 / CPU 1: cgroup_energy | '
        '3 (3-3) / 4 (4-4) | |']
    assert bench.ipi_rows({}) == []


def test_median_ci_covers_with_shared_runs():
    """The order-statistics interval of the median treats the ratios as
    independent, but neighbouring ratios share an A run (A B A B A). On
    simulated runs (each run's throughput lognormal, 12 % noise, over a
    drift with lag-1 correlation 0.5, 10 %; B 5 % slower), paired as the
    benchmark pairs them, it still holds the true ratio in at least 90 %
    of 400 sequences (93-97 % in a simulation of 300 per case at 10, 12
    and 40 pairs; a moving-block bootstrap of the median, tried instead,
    held it in 80-83 % at 10-12 pairs and 90-94 % at 40)."""
    import math
    import random
    import guest_bench
    rnd = random.Random(5)
    for n in (12, 40):
        hit = 0
        for _ in range(400):
            seq, v, d = guest_bench.schedule({'B': n}), [], 0.0
            for s in seq:
                d = 0.5 * d + rnd.gauss(0, 0.1) * math.sqrt(0.75)
                v.append(math.exp(d + rnd.gauss(0, 0.12)) *
                         (0.95 if s == 'B' else 1))
            rs = guest_bench.pair_ratios(seq, v)['B']
            lo, hi = guest_bench.median_ci(rs)
            hit += lo <= 0.95 <= hi
        assert hit >= 0.9 * 400, (n, hit)


class FakePipe:
    """A workload for guest_bench.alternate() on the host: throughput
    lognormal, @noise, over a drift with lag-1 correlation 0.5; runs with
    the module "loaded" (insmod called before them) 5 % slower; @warm: the
    values of the first runs."""
    name = 'pipe'

    def __init__(self, seed, noise, warm=(), load_fails=False):
        import random
        self.rnd, self.noise, self.d = random.Random(seed), noise, 0.0
        self.warm, self.loaded = list(warm), False
        self.load_fails = load_fails

    def cmd(self):
        return ['fake']

    def insmod(self, *args):
        if self.load_fails:
            raise RuntimeError('insmod failed')
        self.loaded = True
        return 0.0

    def once(self):
        if self.warm:
            return self.warm.pop(0)
        self.d = 0.5 * self.d + self.rnd.gauss(0, self.noise) * 0.866
        v = math.exp(self.d + self.rnd.gauss(0, self.noise))
        v *= 0.95 if self.loaded else 1.0
        self.loaded = False
        return v


def fake_alternate(monkeypatch, w, **kw):
    """alternate() on the host, nothing loaded or unloaded for real (a
    module of that name loaded on this machine is left alone)."""
    import argparse
    import guest_bench
    monkeypatch.setattr(guest_bench, 'insmod', w.insmod)
    monkeypatch.setattr(guest_bench, 'rmmod', lambda *a: None)
    monkeypatch.setattr(guest_bench, 'MOD', 'cge-test-no-such-module')
    monkeypatch.setattr(guest_bench, 'ipi_counts', lambda: [0, 0])
    monkeypatch.setattr(guest_bench, 'log', lambda msg: None)
    a = argparse.Namespace(**{'warmup': 3, 'warmup_max': 12,
                              'ci_target': bench.CI_TARGET,
                              'pairs_b_max': 240, 'ko': 'x', 'bt': None,
                              **kw})
    return guest_bench.alternate(a, w, {'B': 40}, None, extend=True)


@pytest.mark.parametrize('noise', [0.03, 0.05])
def test_added_pairs_keep_the_ci_honest(monkeypatch, noise):
    """make bench adds B and A runs after its 40 pairs, as many as the
    first 40 ratios' spread says the CI needs to come within 1.5 %, and
    does not look again (guest_bench.alternate()). On 200 simulated
    sequences the final interval holds the true ratio in at least 90 %
    (93-94 % in 300 when this was written, at both noises; the committed
    runs' ratios spread between these two), B has 40 to 240 runs, and at
    3 % noise most runs reach the target."""
    hit = met = 0
    for seed in range(200):
        r = fake_alternate(monkeypatch, FakePipe(seed, noise))
        sm = r['summary']['B']
        assert 40 <= sm['n'] <= 240 and r['sequence'].count('B') == sm['n']
        assert sm['n'] == max(40, r['b_runs_wanted'])
        hit += sm['ci95'][0] <= 0.95 <= sm['ci95'][1]
        met += r['ci_half_width_b'] <= bench.CI_TARGET
    assert hit >= 0.9 * 200, hit
    if noise == 0.03:
        assert met >= 0.7 * 200, met


def test_no_runs_added_without_a_ci(monkeypatch):
    """A module that never loads leaves no B ratio, so no CI: nothing is
    added (the errors say why), rather than 240 B runs that all fail."""
    r = fake_alternate(monkeypatch, FakePipe(1, 0.03, load_fails=True))
    assert r['b_runs_wanted'] is None and r['ci_half_width_b_first'] is None
    assert len(r['sequence']) == r['planned_runs']
    assert len(r['errors']) == r['sequence'].count('B') == 40


def test_warm_up_until_settled(monkeypatch):
    """Uncounted runs go on until the last three lie within 8 %: here
    three getting faster, then steady; at most 12; a fixed count when the
    most is not above the least (make check's short bench: 2)."""
    import guest_bench
    w = FakePipe(1, 0.0, warm=[0.5, 0.7, 0.9, 1.0, 1.0])
    r = fake_alternate(monkeypatch, w, pairs_b_max=0)
    assert r['warmup']['values'] == [0.5, 0.7, 0.9, 1.0, 1.0, 1.0]
    assert r['warmup']['settled'] is True
    w = FakePipe(1, 0.0, warm=[1.0, 2.0] * 10)
    r = fake_alternate(monkeypatch, w, pairs_b_max=0)
    assert len(r['warmup']['values']) == 12
    assert r['warmup']['settled'] is False
    for least, n in ((2, 2), (0, 0)):
        w = FakePipe(1, 0.0, warm=[1.0] * 10)
        r = fake_alternate(monkeypatch, w, warmup=least, warmup_max=0)
        assert len(r['warmup']['values']) == n
        assert r['warmup']['settled'] is None
    assert guest_bench.WARM_SPREAD == 0.08
