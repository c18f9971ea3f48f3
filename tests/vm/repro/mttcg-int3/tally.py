#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Tally results.jsonl: per variant boots, cycles attempted, hangs, crashes
(the guest stopped without hanging: an oops/panic; see the run's console)."""
import collections
import json
import sys

path = sys.argv[1] if len(sys.argv) > 1 else 'tests/vm/repro/mttcg-int3/results.jsonl'
t = collections.OrderedDict()
for line in open(path):
    r = json.loads(line)
    if r['tag'] == 'test':
        continue
    # runs before the qemu field was recorded were all QEMU 7.2.22
    key = f"{r['tag']} qemu {r.get('qemu', '7.2.22')}"
    v = t.setdefault(key, {'boots': 0, 'ok': 0, 'hang': [], 'crash': []})
    v['boots'] += 1
    v['ok'] += r['cycles']
    if r['hung']:
        v['hang'].append(r['cycles'] + 1)
    elif not r['done']:
        v['crash'].append(r['cycles'] + 1)
for k, v in t.items():
    att = v['ok'] + len(v['hang']) + len(v['crash'])
    bad = len(v['hang']) + len(v['crash'])
    print(f"{k:18} boots {v['boots']:2}  cycles {att:4}  hangs {len(v['hang'])} "
          f"at {v['hang']}  crashes {len(v['crash'])} at {v['crash']}  "
          f"per-cycle {bad / att:.3f}")
