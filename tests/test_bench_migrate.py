# SPDX-License-Identifier: GPL-2.0
"""make bench's migrate section, the parts that run on the host (no VM):
cghop's output parsed, its failures, and the section's figures and rows in
latest.json and latest.md."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'bench'))
import bench  # noqa: E402
import guest_bench  # noqa: E402


def test_parse_hops():
    assert guest_bench.parse_hops('hops 2000 ns 500000000\n') == 4000.0
    # stray lines around it (a warning on stderr, merged)
    assert guest_bench.parse_hops('x\nhops 10 ns 1000\ny\n') == 1e7


@pytest.mark.parametrize('out', ['', 'hops 10 ns 0\n', 'hops x ns 5\n',
                                 'cghop: hop 3: Device or resource busy\n'])
def test_parse_hops_rejects(out):
    with pytest.raises(RuntimeError):
        guest_bench.parse_hops(out)


def test_cghop_fails_cleanly(tmp_path):
    """Built as make bench builds it; a missing cgroup is an error exit with
    a message, not a hop count."""
    exe = bench.build_helper('cghop')
    p = subprocess.run([str(exe), '4', str(tmp_path / 'a'),
                        str(tmp_path / 'b')], capture_output=True, text=True)
    assert p.returncode == 1 and 'cgroup.procs' in p.stderr, p
    assert not p.stdout
    p = subprocess.run([str(exe), '4'], capture_output=True, text=True)
    assert p.returncode == 2 and 'usage' in p.stderr


def fake_migrate(states='BT'):
    """A migrate section's result as cmd_migrate builds it: A runs at 1000
    migrations/s, B at 900, T at 950, F at 980 (depth 1), from the real
    helpers."""
    seq = guest_bench.schedule({s: 10 for s in states})
    rate = {'A': 1000.0, 'B': 900.0, 'T': 950.0, 'F': 980.0}
    v = [rate[s] for s in seq]
    ratios = {s: [] for s in states}
    ratios.update(guest_bench.pair_ratios(seq, v))
    return {'hops': 2000, 'sequence': ''.join(seq), 'errors': [],
            'depths': {'1': {
                'values': v, 'ratios': ratios,
                'summary': {s: guest_bench.ratio_summary(r)
                            for s, r in ratios.items()},
                'by_state': {s: guest_bench.spread(
                    [x for x, t in zip(v, seq) if t == s])
                    for s in 'A' + states}}}}


def test_migrate_figures():
    f = bench.migrate_figures(fake_migrate())['1']
    assert (f['A_per_s'], f['B_per_s'], f['T_per_s']) == (1000, 900, 950)
    assert f['module_ratio'] == 0.9 and f['tracefs_ratio'] == 0.95
    assert f['module_ratio_ci95'] == [0.9, 0.9]
    assert 'tracefs_filtered_ratio' not in f
    f = bench.migrate_figures(fake_migrate('BTF'))['1']
    assert f['F_per_s'] == 980 and f['tracefs_filtered_ratio'] == 0.98
    assert bench.migrate_figures({}) == {}
    assert bench.migrate_figures({'error': 'no result'}) == {}


def test_migrate_rows():
    rows = bench.migrate_rows(fake_migrate())
    assert len(rows) == 3
    assert rows[0].startswith('| cgroup migrations, depth 1: cgroup_energy '
                              'B/A | 0.900 (0.900–0.900, n=10; 95 % CI')
    assert '| 1000 / 900 / 950 |' in rows[2]
    rows = bench.migrate_rows(fake_migrate('BTF'))
    assert len(rows) == 4 and 'F/A' in rows[2] and '0.980 (' in rows[2]
    assert 'per second A / B / T / F (medians) | 1000 / 900 / 950 / 980 |' \
        in rows[3]
    err = bench.migrate_rows({'error': 'no result (rc=1): boom'})
    assert err == ['| cgroup migrations | error: no result (rc=1): boom | |']
