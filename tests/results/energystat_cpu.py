#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Append to tests/results/energystat-cpu.jsonl the CPU time of energystat
over a tree of 10,000 cgroups against that of reading the same files with
find and cat, the reference of test_energystat's guard
(test_10000_cgroups_cpu_time_guard): the ratio's least and most over RUNS
runs of each format.

usage: energystat_cpu.py [RUNS] [NOTE]    (NOTE: the host's state, e.g.
'idle' or 'beside two busy loops')"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / 'tests'))
from fixtree import build_big  # noqa: E402

TOOL = REPO / 'userspace/energystat'


def cpu_s(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, capture_output=True, check=True,
                   stdin=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    note = sys.argv[2] if len(sys.argv) > 2 else ''
    subprocess.run(['make', '-s', '-C', str(REPO / 'userspace')], check=True)
    with tempfile.TemporaryDirectory() as d:
        t = build_big(os.path.join(d, 'big'), 10000)
        ratio = {}
        for _ in range(runs):
            for args in ([], ['--json'], ['--prometheus']):
                ref = cpu_s(['sh', '-c', 'find "$0" -name energy.stat '
                             '-print0 | xargs -0r cat >/dev/null', t.path])
                took = cpu_s([str(TOOL), '--root', t.path, *args])
                ratio.setdefault(' '.join(args) or 'table', []).append(
                    took / ref)
    commit = subprocess.run(['git', '-C', str(REPO), 'rev-parse',
                             '--short=12', 'HEAD'], capture_output=True,
                            text=True).stdout.strip()
    row = {'date': time.strftime('%Y-%m-%d'), 'commit': commit,
           'note': note, 'runs': runs,
           'ratio_min_max': {k: [round(min(v), 3), round(max(v), 3)]
                             for k, v in ratio.items()}}
    with (REPO / 'tests/results/energystat-cpu.jsonl').open('a') as f:
        f.write(json.dumps(row) + '\n')
    print(json.dumps(row))


if __name__ == '__main__':
    main()
