#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""sym.py KALLSYMS addr... : nearest symbol+off"""
import bisect, sys
syms = []
for l in open(sys.argv[1]):
    a, t, n = l.split()[:3]
    a = int(a, 16)
    if a: syms.append((a, n))
syms.sort(); keys = [a for a, _ in syms]
for x in sys.argv[2:]:
    v = int(x, 16); i = bisect.bisect_right(keys, v) - 1
    print(x, f'{syms[i][1]}+0x{v - syms[i][0]:x}' if i >= 0 else '?')
