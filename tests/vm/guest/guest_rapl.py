#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Guest side of test_rapl_emu.py: the RAPL path end to end on emulated
hardware (the test build's kmod/emu.c answers the MSR reads), against the
emulator's own record of what it returned (debugfs cgroup_energy_emu/truth).

usage: guest_rapl.py MODULE.ko CGWORK PROFILE"""
import os
import sys
import time
from pathlib import Path

from common import (EN, Work, conservation_ok, dmesg, info, insmod, mkcg,
                    mount_en, next_sample, rmmod, scenarios, sh, snapshot,
                    stat, umount_en)

KO, CGWORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
PROFILE = sys.argv[3]
W = Work(CGWORK)
TRUTH = Path('/sys/kernel/debug/cgroup_energy_emu/truth')
# the headline domains: what total_uj counts
HEADLINE = ('package', 'dram')


def truth():
    """{(pkg, domain): {'esu', 'emitted', 'read', 'reads'}} in counter units
    (unwrapped), as the emulator keeps them."""
    out = {}
    for line in TRUTH.read_text().splitlines()[1:]:
        f = line.split()
        out[(int(f[1]), f[2])] = {k: int(v) for k, v in zip(f[3::2], f[4::2])}
    return out


def uj(units, esu):
    """Counter units to µJ; the emulator steps in whole µJ (emu.c)."""
    assert units * 1_000_000 % (1 << esu) == 0, (units, esu)
    return units * 1_000_000 >> esu


def headline_uj(t):
    return sum(uj(v['read'], v['esu']) for (p, d), v in t.items()
               if d in HEADLINE)


def load(params=''):
    insmod(KO, f'emu_profile={PROFILE} {params}'.strip())
    mount_en()


def unload():
    umount_en()
    rmmod()


def s_detect(ctx):
    """Detection ran unchanged on the QEMU CPU model and found the
    profile's domains."""
    sh('mountpoint -q /sys/kernel/debug || '
       'mount -t debugfs debugfs /sys/kernel/debug')
    sh('dmesg -C')
    load()
    time.sleep(0.5)
    i = info()
    log = [ln.split('] ', 1)[-1] for ln in dmesg().splitlines()
           if 'cgroup_energy' in ln]
    return {'info': {k: i[k] for k in ('source', 'domains', 'packages')},
            'keys': sorted(stat()), 'truth': sorted(
                f'{p} {d}' for p, d in truth()), 'log': log}


def s_conservation_hw(ctx):
    """Work in several cgroups, on both CPUs, created and removed; after
    each sample for 8 s, the root's total_uj against the headline energy
    the emulator returned: their difference (the energy before the module
    primed its counters) never changes, to the µJ."""
    mkcg('hw/a', 'hw/b')
    ws = [W.start('hw/a', 'busy', 6, cpu=0), W.start('hw/b', 'busy', 6, cpu=1)]
    diffs, conserved = [], []
    t_end = time.monotonic() + 8
    n = 0
    while time.monotonic() < t_end:
        s = next_sample(extra=truth)
        root = s['stat']['']
        diffs.append(headline_uj(s['extra']) - root['total_uj'])
        conserved.append(conservation_ok(root))
        n += 1
        if n % 5 == 0:
            mkcg(f'hw/c{n}')
            W.run(f'hw/c{n}', 'busy', 0.05)
            os.rmdir(f'/sys/fs/cgroup/hw/c{n}')
    for w in ws:
        w.wait()
    last = truth()
    return {'reads': len(diffs), 'distinct_diffs': sorted(set(diffs)),
            'conserved': all(conserved),
            'total_uj': stat()['total_uj'],
            'reads_per_domain': {f'{p} {d}': v['reads']
                                 for (p, d), v in last.items()}}


def s_wrap(ctx):
    """Power times 10,000: the 32-bit counters wrap every second or two.
    Reloaded so; conservation against the emulator holds across them."""
    unload()
    load('emu_scale=10000')
    mkcg('wrap')
    w = W.start('wrap', 'busy', 6, cpu=0)
    a = next_sample(extra=truth)
    time.sleep(6)
    b = next_sample(extra=truth)
    w.wait()
    ra, rb = a['stat'][''], b['stat']['']
    crossed = sum((v['read'] >> 32) - (a['extra'][k]['read'] >> 32)
                  for k, v in b['extra'].items())
    return {'wraps': b['info']['counter_wraps'] - a['info']['counter_wraps'],
            'crossed': crossed,
            'module_uj': rb['total_uj'] - ra['total_uj'],
            'hw_uj': headline_uj(b['extra']) - headline_uj(a['extra']),
            'conserved': conservation_ok(rb)}


def s_packages(ctx):
    """A busy loop pinned to CPU 0 (package 0): its energy comes from the
    package it ran on. Its share of package 0's energy against the
    emulator's package 0 and package 1 energy over the same window."""
    unload()
    load()
    mkcg('pk')
    a = next_sample(['', 'pk'], extra=truth)
    W.run('pk', 'busy', 4, cpu=0)
    b = next_sample(['', 'pk'], extra=truth)
    pk = {p: sum(uj(b['extra'][(p, d)]['read'] - a['extra'][(p, d)]['read'],
                    b['extra'][(p, d)]['esu'])
                 for (q, d) in b['extra'] if q == p and d in HEADLINE)
          for p, _ in b['extra']}
    ra, rb = a['stat'][''], b['stat']['']
    return {'cg_uj': b['stat']['pk']['energy_uj'] -
            a['stat']['pk']['energy_uj'],
            'root_energy_uj': rb['energy_uj'] - ra['energy_uj'],
            'root_idle_uj': rb['idle_uj'] - ra['idle_uj'],
            'pkg_uj': pk, 'packages': b['info']['packages']}


def s_end(ctx):
    unload()
    return {}


if __name__ == '__main__':
    scenarios([s_detect, s_conservation_hw, s_wrap, s_packages, s_end], {})
