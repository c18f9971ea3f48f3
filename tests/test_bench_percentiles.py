# SPDX-License-Identifier: GPL-2.0
"""make bench's cyclictest percentiles (bench/guest_bench.py), on the host:
nearest-rank percentiles of made-up 1 µs histograms, overflows counted, and
the --histfile format of rt-tests 2.x (Debian bookworm)."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'bench'))
import guest_bench as gb  # noqa: E402

# cyclictest -S -h 20 --histfile on two CPUs: print_hist() of rt-tests 2.x
HISTFILE = """# Histogram
000000 000000	000000
000003 000040	000050
000004 000005	000003
000019 000001	000000
# Min Latencies: 00003 00003
# Avg Latencies: 00004 00003
# Max Latencies: 00025 00004
# Histogram Overflows: 00001 00000
# Histogram Overflow at cycle number:
# Thread 0: 00077
# Thread 1:

"""


def test_all_inside():
    c = {10: 50, 20: 40, 30: 9, 40: 1}
    assert gb.hist_percentiles(c, 0, 100) == {'50': 10, '99': 30, '99.9': 40}


def test_percentile_at_a_bucket_edge():
    # rank ceil(0.99 * 100) = 99: the 99th sample is the last of bucket 1
    c = {1: 99, 5: 1}
    assert gb.hist_percentiles(c, 0, 100)['99'] == 1
    # 1,000 samples, p99.9's rank is exactly 999 (no float rounding up)
    c = {2: 999, 7: 1}
    assert gb.hist_percentiles(c, 0, 100)['99.9'] == 2
    c = {2: 998, 7: 2}
    assert gb.hist_percentiles(c, 0, 100)['99.9'] == 7


def test_percentile_in_the_overflow():
    # 100 samples, 2 at or above 100 µs: p99's rank 99 is an overflow
    p = gb.hist_percentiles({10: 98}, 2, 100)
    assert p == {'50': 10, '99': {'above': 100}, '99.9': {'above': 100}}
    # exactly at the edge: the 99th sample is the last one inside
    assert gb.hist_percentiles({10: 99}, 1, 100)['99'] == 10


def test_no_samples():
    assert gb.hist_percentiles({}, 0, 100) == {'50': None, '99': None,
                                               '99.9': None}


def test_read_histogram(tmp_path):
    f = tmp_path / 'hist'
    f.write_text(HISTFILE)
    h = gb.read_histogram(f)
    assert h == {'counts': {0: 0, 3: 90, 4: 8, 19: 1}, 'overflows': [1, 0],
                 'max_us': [25, 4]}
    assert gb.hist_percentiles(h['counts'], 1, 20) == {
        '50': 3, '99': 19, '99.9': {'above': 20}}


def test_pool_runs_keeps_overflow_runs():
    runs = [{'hist': [[5, 99]], 'overflows': 1, 'max_us': 30000},
            {'hist': [[5, 50], [6, 50]], 'overflows': 0, 'max_us': 6}]
    p = gb.pool_runs(runs, 20000)
    assert p == {'runs': 2, 'samples': 200, 'overflows': 1, 'max_us': 30000,
                 'pct_us': {'50': 5, '99': 6, '99.9': {'above': 20000}}}
