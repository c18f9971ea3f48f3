#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""symdump.py RUNDIR [KALLSYMS]: symbolize a hang-dump (RIPs, stack words)."""
import re, subprocess, sys, json
d = sys.argv[1]
ks = sys.argv[2] if len(sys.argv) > 2 else d + '/kallsyms'
t = open(d + '/hang-dump.txt').read()
t = re.sub(r'\x1b\[[0-9;]*[A-Za-z]', '', t)
def sym(ws):
    if not ws: return []
    return subprocess.run(['/usr/bin/python3', 'tests/vm/repro/mttcg-int3/sym.py', ks] + ws,
                          capture_output=True, text=True).stdout.splitlines()
m = re.search(r'RIP samples: (.*)', t)
for row in json.loads(m.group(1)):
    print('RIPs:', [s.split()[1] for s in sym(row)])
for blk in t.split('>> ')[1:]:
    hdr = blk.splitlines()[0]
    if hdr.startswith('x/48gx'):
        ws = re.findall(r'0x(ffffffff8[0-9a-f]{7})', blk)
        print(hdr, ' <- '.join(s.split()[1] for s in sym(ws) if not s.endswith('+0x0')))
    elif 'xb' in hdr or 'gx' in hdr:
        print(hdr, '|', ' '.join(l for l in blk.splitlines()[1:] if ':' in l and '0x' in l)[:200])
