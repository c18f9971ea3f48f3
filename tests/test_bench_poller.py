# SPDX-License-Identifier: GPL-2.0
"""make bench's /proc poller peer (bench/procpoll.c), on the host: it
builds, and its poll lines carry what guest_bench.Poller reads."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'bench'))
import bench  # noqa: E402
import guest_bench as gb  # noqa: E402


def test_poll_lines():
    procpoll = bench.build_helper('procpoll')
    out = subprocess.run([str(procpoll), '-i', '50', '-n', '2'], text=True,
                         capture_output=True, check=True, timeout=60).stdout
    polls = []
    for line in out.splitlines():
        f = line.split()
        assert f[0] == 'poll' and len(f) == 1 + len(gb.Poller.FIELDS)
        polls.append(dict(zip(gb.Poller.FIELDS, map(int, f[1:]))))
    assert [p['seq'] for p in polls] == [1, 2]
    first, second = polls
    # the first poll finds every process new; this test's own ancestors
    # are still there at the second
    assert first['new'] == first['procs'] > 0
    assert second['new'] < second['procs']
    assert first['cgroups'] >= 1 and first['cpu_ns'] > 0
    assert first['t0_ns'] < first['t1_ns'] <= second['t0_ns']
