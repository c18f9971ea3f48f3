#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Guest side of test_rapl_emu.py: the RAPL path end to end on emulated
hardware (the test build's tests/emu/emu.c answers the MSR reads), against the
emulator's own record of what it returned (debugfs cgroup_energy_emu/truth).

usage: guest_rapl.py MODULE.ko CGWORK PROFILE [isolated]

With 'isolated', the boot has an isolated CPU (test_rapl_isolated.py) and
runs s_isolated only."""
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1].parent))
from vm.harness import SUSPEND_CYCLE  # noqa: E402

from common import (CG, EN, LOOP_MAX_S, PARAMS, Work, root_terms_add_up,
                    cpu_usage, dmesg, freeze, get_param, housekeeping_on_cpu0, info,
                    insmod, mkcg, mount_en, next_sample, rmmod, running,
                    scenarios, set_param, sh, stat, umount_en, usage_at)

KO, CGWORK = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
PROFILE = sys.argv[3]
ISOLATED = sys.argv[4:] == ['isolated']
W = Work(CGWORK)
TRUTH = Path('/sys/kernel/debug/cgroup_energy_emu/truth')
BUSY_MW = Path('/sys/kernel/debug/cgroup_energy_emu/busy_mw')
# the headline domains: what total_uj counts
HEADLINE = ('package', 'dram')


def truth():
    """The emulator's record, in counter units (unwrapped): {(pkg,
    domain): {'esu', 'emitted', 'read', 'reads', ...}} per package
    counter, {('core', C): {...}} per AMD core (C its lowest CPU) and
    {('cpu', N): {'pkg', 'busy_ns', 'uj'}} per online CPU."""
    out = {}
    for line in TRUTH.read_text().splitlines()[1:]:
        f = line.split()
        if f[0] == 'pkg':
            out[(int(f[1]), f[2])] = {k: int(v)
                                      for k, v in zip(f[3::2], f[4::2])}
        elif f[0] in ('core', 'cpu'):
            out[(f[0], int(f[1]))] = {k: int(v)
                                      for k, v in zip(f[2::2], f[3::2])}
    return out


def counters(t, kind):
    """The entries of @kind ('pkg', 'core', 'cpu') of truth() @t."""
    if kind == 'pkg':
        return {k: v for k, v in t.items() if isinstance(k[0], int)}
    return {k[1]: v for k, v in t.items() if k[0] == kind}


def uj(units, esu):
    """Counter units to µJ; the emulator steps in whole µJ (emu.c)."""
    assert units * 1_000_000 % (1 << esu) == 0, (units, esu)
    return units * 1_000_000 >> esu


def headline_uj(t):
    return sum(uj(v['read'], v['esu'])
               for (p, d), v in counters(t, 'pkg').items() if d in HEADLINE)


def pkg_uj(a, b, domains=HEADLINE):
    """{package: µJ the emulator returned between truth() @a and @b} for
    @domains."""
    out = {}
    for (p, d), v in counters(b, 'pkg').items():
        if d in domains:
            out[p] = out.get(p, 0) + uj(v['read'] - a[(p, d)]['read'],
                                        v['esu'])
    return out


def core_uj(a, b, c):
    """µJ the emulator returned for core @c between truth() @a and @b: up
    to the module's last read of it before each, so for a busy core (read
    in every drain) the same span as the module's figures of snapshots @a
    and @b. Its emitted energy would run to the moment truth() is read, a
    few ms later at one end than at the other (a 1 % excess of the
    module's over it once, 20 ms of two 12 W cores under a loaded host)."""
    va, vb = a[('core', c)], b[('core', c)]
    return uj(vb['read'] - va['read'], vb['esu'])


def delta(a, b, rel, key):
    return b['stat'][rel][key] - a['stat'][rel][key]


SCHEDSTATS = Path('/proc/sys/kernel/sched_schedstats')


def task_picks():
    """{cpu: times it switched to a task (not idle)}: /proc/schedstat's
    sched_count less sched_goidle (the 3rd and 4th fields of its cpuN
    line), counted while SCHEDSTATS is 1."""
    out = {}
    for line in Path('/proc/schedstat').read_text().splitlines():
        f = line.split()
        if f and f[0].startswith('cpu') and f[0][3:].isdigit():
            out[int(f[0][3:])] = int(f[3]) - int(f[4])
    return out


def cpu_run_ns():
    """{cpu: ns its tasks ran (not idle) since boot}: /proc/schedstat's
    rq_cpu_time, the 7th field of its cpuN line (sched_info, kept whether
    or not SCHEDSTATS counts)."""
    out = {}
    for line in Path('/proc/schedstat').read_text().splitlines():
        f = line.split()
        if f and f[0].startswith('cpu') and f[0][3:].isdigit():
            out[int(f[0][3:])] = int(f[7])
    return out


def inside(rels, loads, secs=3, picks=False):
    """Start @loads [(cgroup, cpu)] of busy loops, and return two
    next_sample() snapshots of @rels with the emulator's record, @secs
    apart, both while the loops run: a window with no idle edges. The loops
    spin until they are stopped, after @b: on a starved guest (amd-zen,
    5.10, in a clean-clone make check, e341c4f's CI) loops of a fixed
    @secs + 2 s had ended before @b, and the window took 0.3 s of them.
    Each snapshot's 'usage' is usage_at() of the loaded cgroups, read
    just after it. With @picks, each snapshot's 'picks' are
    task_picks() read after it, from just after the sample it follows."""
    ws = [W.start(cg, 'busy', LOOP_MAX_S, cpu=cpu) for cg, cpu in loads]
    cgs = {cg for cg, _ in loads}
    try:
        running(cgs)
        a = next_sample(rels, extra=truth)
        a['usage'] = usage_at(cgs)
        if picks:
            a['picks'] = task_picks()
        time.sleep(secs)
        b = next_sample(rels, extra=truth)
        b['usage'] = usage_at(cgs)
        if picks:
            b['picks'] = task_picks()
    finally:
        W.stop(ws, cgs)
    return a, b


def window(a, b, cg):
    """The CPU time of @cg (usage_usec, the kernel's) between the reads
    usage_at() of snapshots @a and @b of inside(), and the time between
    those reads, in µs."""
    return {'cpu_us': b['usage'][cg] - a['usage'][cg],
            'window_us': b['usage']['at_us'] - a['usage']['at_us']}


def load(params=''):
    insmod(KO, f'emu_profile={PROFILE} {params}'.strip())
    mount_en()


def unload():
    """Unmount and unload, what of it is there."""
    if os.path.ismount(EN):
        umount_en()
    if PARAMS.exists():
        rmmod()


def held_events():
    """The hooked tracepoints' trace events enabled before the module
    loads, at the top level or in an instance (the harness's hold): with
    none, loading the module adds the only probe and patches kernel
    text. None without tracefs, where it cannot be told."""
    t = Path('/sys/kernel/tracing')
    if not (t / 'events/sched/sched_switch/enable').exists():
        return None
    held = []
    for d in [t, *sorted(t.glob('instances/*'))]:
        for ev in ('sched/sched_switch', 'cgroup/cgroup_attach_task',
                   'cgroup/cgroup_rmdir'):
            f = d / 'events' / ev / 'enable'
            if f.exists() and f.read_text().strip() != '0':
                held.append(str(f.relative_to(t)))
    return held


def s_detect(ctx):
    """Detection ran unchanged on the QEMU CPU model and found the
    profile's domains."""
    sh('mountpoint -q /sys/kernel/debug || '
       'mount -t debugfs debugfs /sys/kernel/debug')
    sh('dmesg -C')
    held = held_events()
    load()
    time.sleep(0.5)
    i = info()
    log = [ln.split('] ', 1)[-1] for ln in dmesg().splitlines()
           if 'cgroup_energy' in ln]
    return {'info': {**{k: i[k] for k in ('source', 'domains', 'packages',
                                          'vendor')},
                     'units': {k[len('unit_esu_'):]: v for k, v in i.items()
                               if k.startswith('unit_esu_')}},
            'keys': sorted(stat()), 'truth': sorted(
                f'{p} {d}' for p, d in truth()), 'log': log,
            'held_events': held}


# s_conservation_hw's reads: at least this many, and for 5 s at least. (In
# 5 s alone, EPYC's 4 vCPUs under a CPU quota on QEMU made 5: each read
# waits for a sample, and a cgroup made every fifth runs cgwork, 0.2-0.7 s
# under TCG at normal speed; docs/testing.md, "Slow hosts".)
CONSERVATION_READS = 12


def s_conservation_hw(ctx):
    """Work in several cgroups, on both CPUs, created and removed; after
    each sample for 5 s and CONSERVATION_READS samples at least (60 s at
    most), the root's total_uj against the headline energy the emulator
    returned: their difference (the energy before the module primed its
    counters) never changes, to the µJ."""
    mkcg('hw/a', 'hw/b')
    ws = [W.start('hw/a', 'busy', LOOP_MAX_S, cpu=0),
          W.start('hw/b', 'busy', LOOP_MAX_S, cpu=1)]
    diffs, conserved = [], []
    t0 = time.monotonic()
    n = 0
    try:
        while (n < CONSERVATION_READS or time.monotonic() < t0 + 5) and \
                time.monotonic() < t0 + 60:
            s = next_sample(extra=truth)
            root = s['stat']['']
            diffs.append(headline_uj(s['extra']) - root['total_uj'])
            conserved.append(root_terms_add_up(root))
            n += 1
            if n % 5 == 0:
                mkcg(f'hw/c{n}')
                W.run(f'hw/c{n}', 'busy', 0.05)
                os.rmdir(f'/sys/fs/cgroup/hw/c{n}')
    finally:
        W.stop(ws, ['hw/a', 'hw/b'])
    last = truth()
    return {'reads': len(diffs), 'distinct_diffs': sorted(set(diffs)),
            'seconds_read': round(time.monotonic() - t0, 2),
            'conserved': all(conserved),
            'total_uj': stat()['total_uj'],
            'reads_per_domain': {f'{p} {d}': v['reads']
                                 for (p, d), v in counters(last,
                                                           'pkg').items()}}


# s_unowned's tree below /sys/fs/cgroup: {cgroup: (cpu.weight or None for
# the default, what runs in it)}. un's children have the cpu controller,
# d's do not (default weight); d also has tasks of its own, and c reserves
# nothing: it has no task. One busy loop: the other CPU idles, so most of
# the window's energy is unowned.
UNOWNED_TREE = {'un': (200, None), 'un/a': (300, 'busy'),
                'un/b': (100, 'sleeper'), 'un/c': (1000, None),
                'un/d': (50, 'sleeper'), 'un/d/d1': (None, 'sleeper'),
                'un/d/d2': (None, 'sleeper')}
# The default weight: of a cgroup without cpu.weight, and of the tasks of a
# cgroup of its own, together (docs/contract.md, "Unowned energy").
WEIGHT_DFL = 100


def cgroup_tree():
    """Every cgroup below /sys/fs/cgroup ('' the root) that has tasks, its
    own or its descendants': {rel: {'weight', 'own_tasks', 'children'}},
    from the cgroup files."""
    out = {}
    for d in [CG, *sorted(p for p in CG.rglob('*') if p.is_dir())]:
        if d != CG and 'populated 1' not in \
                (d / 'cgroup.events').read_text().splitlines():
            continue
        rel = str(d.relative_to(CG)) if d != CG else ''
        w = d / 'cpu.weight'
        out[rel] = {'weight': int(w.read_text()) if w.exists()
                    else WEIGHT_DFL,
                    'own_tasks': bool((d / 'cgroup.threads').read_text()
                                      .split()),
                    'children': []}
    for rel in out:
        if rel:
            out[rel.rpartition('/')[0]]['children'].append(rel)
    return out


def expected_shares(tree, pool, top='', skip=()):
    """{rel: (its part, its own tasks' part)} of @pool µJ shared by weight
    down @tree (cgroup_tree()) from @top, the subtrees of @skip left out,
    exactly, as Fractions: the test's reference, from the cgroup files, not
    from the module."""
    from fractions import Fraction
    out = {}

    def give(rel, part):
        node = tree[rel]
        kids = [k for k in node['children'] if k not in skip]
        wsum = (WEIGHT_DFL if node['own_tasks'] else 0) + sum(
            tree[k]['weight'] for k in kids)
        given = Fraction(0)
        for k in kids:
            sub = part * tree[k]['weight'] / wsum
            given += sub
            give(k, sub)
        out[rel] = (part, part - given)
    give(top, Fraction(pool))
    return out


def start_runs(tree):
    """Start what runs in each cgroup of @tree (UNOWNED_TREE's shape): a
    busy loop on CPU 0, or a sleeper. Returns ({cgroup: what}, processes)."""
    runs = {rel: what for rel, (_, what) in tree.items() if what}
    ws = [W.start(rel, 'busy', LOOP_MAX_S, cpu=0) if what == 'busy' else
          W.start(rel, 'sleeper', 50_000, LOOP_MAX_S)
          for rel, what in runs.items()]
    return runs, ws


def s_unowned(ctx):
    """unowned: a bad value refused, then "weight" set at run time, and a
    window of 3 s with busy loops and sleepers in UNOWNED_TREE: the shares
    against the emulator's energy less the tasks' (the pool) shared by the
    cgroup files' weights, and the policy's change in energy.info."""
    sh('echo +cpu > /sys/fs/cgroup/cgroup.subtree_control')
    mkcg(*UNOWNED_TREE)
    sh('echo +cpu > /sys/fs/cgroup/un/cgroup.subtree_control')
    for rel, (w, _) in UNOWNED_TREE.items():
        if w:
            (CG / rel / 'cpu.weight').write_text(f'{w}\n')
    bad = set_param('unowned', 'fair')
    bad_kept = get_param('unowned')
    runs, ws = start_runs(UNOWNED_TREE)
    rels = ['', *UNOWNED_TREE]
    try:
        running(runs)
        before = next_sample(rels)
        n = info()['samples']
        set_ok = set_param('unowned', 'weight')
        a = next_sample(rels, extra=truth)
        tree_a = cgroup_tree()
        time.sleep(3)
        b = next_sample(rels, extra=truth)
        tree_b = cgroup_tree()
    finally:
        W.stop(ws, runs)
    set_param('unowned', 'none')
    after = next_sample()
    # every cgroup with tasks has a record: it ran since the module loaded
    unrecorded = [r for r in tree_b if not stat(r)['usage_usec']]
    pool = sum(pkg_uj(a['extra'], b['extra']).values()) - \
        delta(a, b, '', 'energy_uj')
    exp = expected_shares(tree_b, pool)
    got = {r: {'part': delta(a, b, r, 'idle_share_uj') +
               delta(a, b, r, 'sys_share_uj'),
               'own': delta(a, b, r, 'own_idle_share_uj') +
               delta(a, b, r, 'own_sys_share_uj')} for r in rels}
    return {'bad': bad, 'bad_kept': bad_kept, 'set': set_ok,
            'samples_before_set': n,
            'info_a': {k: a['info'][k] for k in a['info']
                       if k.startswith('unowned')},
            'info_after': {k: after['info'][k] for k in after['info']
                           if k.startswith('unowned')},
            'samples': b['info']['samples'] - a['info']['samples'],
            'moved_before_set': {r: before['stat'][r]['idle_share_uj'] +
                                 before['stat'][r]['sys_share_uj']
                                 for r in rels},
            'unrecorded': unrecorded, 'same_tree': tree_a == tree_b,
            'pool': pool,
            'root_shares': got['']['part'],
            'root_unowned': sum(delta(a, b, '', f'{k}_uj')
                                for k in ('idle', 'irq', 'softirq',
                                          'steal')),
            'got': got,
            'expected': {r: [float(exp[r][0]), float(exp[r][1])]
                         if r in exp else [0.0, 0.0] for r in rels},
            'weights': {r: tree_b[r]['weight'] for r in tree_b}}


# s_unowned_cpuset's partition, beside UNOWNED_TREE: it owns the last CPU
# (intel-client: package 1, the whole of it), its cgroups sleepers only, so
# that CPU idles most of the window.
PART_TREE = {'part': (None, None), 'part/p': (300, 'sleeper'),
             'part/q': (100, 'sleeper')}


def truth_at():
    """truth(), when it was read ('at_ns', CLOCK_MONOTONIC), the kernel's
    CPU time of the partition's tasks then ('part_us', cpu.stat) and of
    every CPU's tasks ('run_ns', cpu_run_ns())."""
    t = truth()
    t['at_ns'] = time.monotonic_ns()
    t['part_us'] = cpu_usage('part')
    t['run_ns'] = cpu_run_ns()
    return t


# 5.10 moves the per-CPU kernel threads of the root off the CPUs a new
# partition takes (cpuset's update_tasks_cpumask(); later kernels leave
# them): its per-CPU workqueues then run work on the wrong CPU, which
# warns (and panics the test guests, panic_on_warn). There, no partition:
# cpuset with none shares as weight does.
PARTITIONS_SAFE = tuple(map(int, re.match(
    r'(\d+)\.(\d+)', os.uname().release).groups())) >= (6, 1)


def s_unowned_cpuset(ctx):
    """unowned=cpuset: a valid partition ('root') owns the last CPU; over a
    3 s window its cgroups share that CPU's unowned energy by their weights,
    the rest of the tree the other CPUs' (the partition left out), against
    the emulator's energy and the cgroup files; energy.info's partitions.
    Without PARTITIONS_SAFE, the same with 'part' a member: by weight."""
    last = os.cpu_count() - 1
    sh('echo +cpu +cpuset > /sys/fs/cgroup/cgroup.subtree_control')
    mkcg(*UNOWNED_TREE, *PART_TREE)
    sh('echo +cpu > /sys/fs/cgroup/un/cgroup.subtree_control')
    sh('echo +cpu > /sys/fs/cgroup/part/cgroup.subtree_control')
    for rel, (w, _) in {**UNOWNED_TREE, **PART_TREE}.items():
        if w:
            (CG / rel / 'cpu.weight').write_text(f'{w}\n')
    (CG / 'part/cpuset.cpus').write_text(f'{last}\n')
    if PARTITIONS_SAFE:
        (CG / 'part/cpuset.cpus.partition').write_text('root\n')
    partition = (CG / 'part/cpuset.cpus.partition').read_text().strip()
    runs, ws = start_runs({**UNOWNED_TREE, **PART_TREE})
    rels = ['', *UNOWNED_TREE, *PART_TREE]
    try:
        running(runs)
        # by time alone: the reference below is a CPU's idle time
        set_param('split', 'time')
        set_ok = set_param('unowned', 'cpuset')
        next_sample(rels)
        a = next_sample(rels, extra=truth_at)
        tree_a = cgroup_tree()
        time.sleep(3)
        b = next_sample(rels, extra=truth_at)
        tree_b = cgroup_tree()
        effective = (CG / 'part/cpuset.cpus.effective').read_text().strip()
    finally:
        W.stop(ws, runs)
    set_param('unowned', 'none')
    set_param('split', 'impact')
    (CG / 'part/cpuset.cpus.partition').write_text('member\n')
    after = next_sample()
    pkgs = pkg_uj(a['extra'], b['extra'])
    pool = sum(pkgs.values()) - delta(a, b, '', 'energy_uj')
    got = {r: {'part': delta(a, b, r, 'idle_share_uj') +
               delta(a, b, r, 'sys_share_uj'),
               'own': delta(a, b, r, 'own_idle_share_uj') +
               delta(a, b, r, 'own_sys_share_uj')} for r in rels}
    part_pool = got['part']['part']
    # the reference: the rest of the pool down the tree without the
    # partition, the partition's down its own subtree; the root's part
    # holds both
    if partition == 'root':
        exp = expected_shares(tree_b, pool - part_pool, skip=('part',))
        exp.update(expected_shares(tree_b, part_pool, top='part'))
        exp[''] = (exp[''][0] + part_pool, exp[''][1])
    else:
        exp = expected_shares(tree_b, pool)
    cpu_pkg = {c: v['pkg'] for c, v in counters(b['extra'], 'cpu').items()}
    return {'set': set_ok, 'partition': partition, 'effective': effective,
            'last_cpu': last, 'kernel': os.uname().release,
            'partitions_safe': PARTITIONS_SAFE,
            'info_a': {k: a['info'][k] for k in a['info']
                       if k.startswith('unowned')},
            'info_after': {k: after['info'][k] for k in after['info']
                           if k.startswith('unowned')},
            'samples': b['info']['samples'] - a['info']['samples'],
            'same_tree': tree_a == tree_b,
            'unrecorded': [r for r in tree_b if not stat(r)['usage_usec']],
            'pool': pool, 'part_pool': part_pool,
            'root_shares': got['']['part'],
            'pkg_uj': {str(p): v for p, v in pkgs.items()},
            'last_pkg': cpu_pkg.get(last),
            'pkg_cpus': {str(p): sorted(c for c, q in cpu_pkg.items()
                                        if q == p) for p in pkgs},
            'part_energy': delta(a, b, 'part', 'energy_uj'),
            'window_ns': b['extra']['at_ns'] - a['extra']['at_ns'],
            'part_cpu_ns': 1000 * (b['extra']['part_us'] -
                                   a['extra']['part_us']),
            'last_run_ns': b['extra']['run_ns'][last] -
            a['extra']['run_ns'][last],
            'got': got,
            'expected': {r: [float(exp[r][0]), float(exp[r][1])]
                         if r in exp else [0.0, 0.0] for r in rels}}


# Power scale of s_wrap: the fastest counter wraps about every second (AMD's
# package, 2^-16 J, 28 W: 65,536 J per wrap, 1.2 s at 2,000 times; Intel's
# PSYS, 2^-14 J: 1-2 s at 10,000 times). At 10,000 times AMD's package wrapped
# every 0.23 s, and on 6.1-rt a reading of it once missed a wrap (CI, 4f269bf).
WRAP_SCALE = {'amd-zen': 2000}
# the counter wraps s_wrap waits for (test_rapl_emu checks 4 or more)
WRAPS_MIN = 4


def crossed(ta, tb):
    """The crossings of 2^32 between the emulator's records @ta and @tb of
    the counters the module reads."""
    ctrs = [(k, v['read']) for k, v in counters(tb, 'pkg').items()] + [
        (('core', c), v['read']) for c, v in counters(tb, 'core').items()]
    return sum((r >> 32) - (ta[k]['read'] >> 32) for k, r in ctrs)


def s_wrap(ctx):
    """Power scaled up until the 32-bit counters wrap every second or so.
    Reloaded so; conservation against the emulator holds across them, over
    a window of 4 s or more, until WRAPS_MIN crossings (30 s at most). A
    busy loop on each core (CPUs 0 and 2 of 4 on AMD), so that every core
    counter is read every interval. max_step: the largest advance of any
    counter between two of the module's reads, in wraps (1 or more is a
    wrap no reader can see). Reloaded at the default power after."""
    unload()
    try:
        load(f'emu_scale={WRAP_SCALE.get(PROFILE, 10000)}')
        return wrapped()
    finally:
        unload()
        load()


def wrapped():
    """s_wrap's window, the module loaded at its scaled power."""
    mkcg('wrap')
    cpus = sorted({core_of(c) for c in range(os.cpu_count())}) \
        if PROFILE == 'amd-zen' else [0]
    ws = [W.start('wrap', 'busy', LOOP_MAX_S, cpu=c) for c in cpus]
    try:
        running(['wrap'])
        a = next_sample(extra=truth)
        # 4 s, and on until the counters crossed 2^32 WRAPS_MIN times (30 s
        # at most): the guest's loops draw the power, and under a CPU quota
        # on QEMU EPYC's 4 vCPUs crossed 3 times in 4 s (docs/testing.md,
        # "Slow hosts")
        t0 = time.monotonic()
        time.sleep(4)
        while crossed(a['extra'], truth()) < WRAPS_MIN and \
                time.monotonic() < t0 + 30:
            time.sleep(0.5)
        b = next_sample(extra=truth)
    finally:
        W.stop(ws, ['wrap'])
    ra, rb = a['stat'][''], b['stat']['']
    ta, tb = a['extra'], b['extra']
    steps = [v['max_step'] for v in counters(tb, 'pkg').values()] + [
        v['max_step'] for v in counters(tb, 'core').values()]
    out = {'wraps': b['info']['counter_wraps'] - a['info']['counter_wraps'],
           'crossed': crossed(ta, tb),
           'window_s': round((b['info']['last_sample_ns'] -
                              a['info']['last_sample_ns']) / 1e9, 2),
           'max_step': round(max(steps) / (1 << 32), 3),
           'module_uj': rb['total_uj'] - ra['total_uj'],
           'hw_uj': headline_uj(tb) - headline_uj(ta),
           'conserved': root_terms_add_up(rb)}
    return out


def s_packages(ctx):
    """A busy loop pinned to CPU 0 (package 0), running before the window
    and after it: its energy comes from the package it ran on. Its share
    of package 0's energy against the emulator's package 0 and package 1
    energy over the same window."""
    mkcg('pk')
    # the window inside the loop's run: its edges hold no exec of cgwork
    # (with them, under a CPU quota on QEMU, the loop took 0.867 of
    # package 0's energy; docs/testing.md, "Slow hosts")
    a, b = inside(['', 'pk'], [('pk', 0)], 4)
    pk = pkg_uj(a['extra'], b['extra'])
    ra, rb = a['stat'][''], b['stat']['']
    return {'cg_uj': b['stat']['pk']['energy_uj'] -
            a['stat']['pk']['energy_uj'],
            'root_energy_uj': rb['energy_uj'] - ra['energy_uj'],
            'root_idle_uj': rb['idle_uj'] - ra['idle_uj'],
            'pkg_uj': pk, 'packages': b['info']['packages'],
            'window': window(a, b, 'pk')}


def s_late_cpu(ctx):
    """Booted with maxcpus=1: CPU 1 (package 1) is offline at load, its
    topology unknown. Brought online, it joins package 1: a busy loop on it
    is charged from package 1's energy."""
    sh('dmesg -C')
    load()
    try:
        before = info()['packages']
        sh('echo 1 > /sys/devices/system/cpu/cpu1/online')
        mkcg('late')
        a, b = inside(['', 'late'], [('late', 1)], 2)
    finally:
        unload()
    return {'packages_at_load': before,
            'packages': b['info']['packages'],
            'late_window': window(a, b, 'late'),
            'cg_uj': delta(a, b, 'late', 'energy_uj'),
            'pkg_uj': pkg_uj(a['extra'], b['extra'])}


def s_psys(ctx):
    """The platform's energy (PSYS, read with package 0) is shared by all
    packages: a busy loop alone on package 1 gets its part."""
    mkcg('ps')
    a = next_sample(['', 'ps'], extra=truth)
    W.run('ps', 'busy', 3, cpu=1)
    b = next_sample(['', 'ps'], extra=truth)
    return {'cg_psys_uj': delta(a, b, 'ps', 'psys_uj'),
            'root_psys_uj': delta(a, b, '', 'psys_uj'),
            'psys_uj': pkg_uj(a['extra'], b['extra'], ('psys',))[0],
            'packages': b['info']['packages']}


def s_overflow(ctx):
    """64 cgroups on CPU 1 (package 1), each a process calling
    sched_yield(): they take turns many times an interval, 64 cgroups
    against the 32 slots of a CPU's cache, so about half of their time
    takes the overflow path. CPU 1 draws 40 W busy, CPU 0 stays idle: their
    energy must come from package 1, whose share of it they take nearly
    all of."""
    unload()
    load('emu_cpu_busy_mw=8000,40000')
    cgs = [f'ov/c{i}' for i in range(64)]
    mkcg(*cgs)
    ws = [W.start(cg, 'yield', LOOP_MAX_S, cpu=1) for cg in cgs]
    try:
        running(cgs)
        a = next_sample(['', 'ov'], extra=truth)
        time.sleep(2)
        b = next_sample(['', 'ov'], extra=truth)
    finally:
        W.stop(ws, cgs)
    return {'overflows': b['info']['cache_overflows'] -
            a['info']['cache_overflows'],
            'samples': b['info']['samples'] - a['info']['samples'],
            'cg_uj': delta(a, b, 'ov', 'energy_uj'),
            'pkg_uj': pkg_uj(a['extra'], b['extra'])}


def core_of(cpu):
    """The emulator's name of @cpu's core: its lowest CPU, as the kernel
    groups SMT siblings (6.1 sees none on QEMU's EPYC-Rome)."""
    sib = Path(f'/sys/devices/system/cpu/cpu{cpu}/topology/'
               'thread_siblings_list').read_text().strip()
    return min(int(x.split('-')[0]) for x in sib.split(','))


def s_cores(ctx):
    """AMD, 4 CPUs: CPUs 2 and 3 draw 12 W busy, 0 and 1 3 W. A cgroup
    filling CPUs 2 and 3 gets their cores' per-core energy; then, with
    only CPU 0 busy, the idle cores' counters are not read (no IPI wakes
    them) while CPU 0's core is, each interval; reads are on the core."""
    unload()
    mkcg('hi', 'lo')
    hi = sorted({core_of(2), core_of(3)})
    lo = core_of(0)
    # this script and the sampler's work on CPU 0 throughout (the sampler
    # stays on the CPU that loaded the module): free to run on CPUs 2 and
    # 3, they took 7 % from "hi" once (0.932 of its cores' energy on
    # 6.12-rt; 0.982 with them on CPU 0), and ran there in every interval
    # of the idle phase (21 reads of 21); the sampler alone on CPU 2 took
    # 54 % of it
    with housekeeping_on_cpu0():
        load('emu_cpu_busy_mw=3000,3000,12000,12000')
        a, b = inside(['', 'hi', 'lo'], [('hi', 2), ('hi', 3), ('lo', 0)],
                      2)
        SCHEDSTATS.write_text('1\n')
        try:
            b2, c = inside(['', 'hi', 'lo'], [('lo', 0)], 2, picks=True)
        finally:
            SCHEDSTATS.write_text('0\n')
    ta, tb, tc = a['extra'], b2['extra'], c['extra']
    return {'hi_cores': hi, 'lo_core': lo,
            'cores': sorted(counters(tb, 'core')),
            'hi_window': window(a, b, 'hi'),
            'hi_core_uj': delta(a, b, 'hi', 'core_uj'),
            'lo_core_uj': delta(a, b, 'lo', 'core_uj'),
            'hi_truth_uj': sum(core_uj(ta, b['extra'], k) for k in hi),
            'lo_truth_uj': core_uj(ta, b['extra'], lo),
            # per core, the times its CPUs switched to a task in the
            # idle phase: its reads can be no more
            'idle_phase_picks': {
                k: sum(c['picks'][n] - b2['picks'][n]
                       for n in range(os.cpu_count()) if core_of(n) == k)
                for k in counters(tc, 'core')},
            'idle_phase_samples': c['info']['samples'] -
            b2['info']['samples'],
            'idle_phase_reads': {k: v['reads'] - tb[('core', k)]['reads']
                                 for k, v in counters(tc, 'core').items()},
            'remote': {k: v['remote'] - ta[('core', k)]['remote']
                       for k, v in counters(tc, 'core').items()},
            'read_errors': c['info']['energy_read_errors'] -
            a['info']['energy_read_errors']}


def s_sibling(ctx):
    """CPU 2 goes offline and back while CPU 3 runs a busy loop: the
    counter state is the core's, not a CPU's, so where they are siblings
    (6.12 on) nothing is invented or counted twice when CPU 3 is the one
    left to read it; the offline CPU is not read."""
    mkcg('sib')
    cores = sorted({core_of(2), core_of(3)})
    w = W.start('sib', 'busy', LOOP_MAX_S, cpu=3)
    try:
        running(['sib'])
        a = next_sample(['', 'sib'], extra=truth)
        a['usage'] = usage_at(['sib'])
        try:
            time.sleep(0.5)
            sh('echo 0 > /sys/devices/system/cpu/cpu2/online')
            time.sleep(2)
        finally:
            sh('echo 1 > /sys/devices/system/cpu/cpu2/online')
        time.sleep(1)
        b = next_sample(['', 'sib'], extra=truth)
        b['usage'] = usage_at(['sib'])
    finally:
        W.stop([w], ['sib'])
    return {'siblings': len(cores) == 1,
            'sib_window': window(a, b, 'sib'),
            'cg_core_uj': delta(a, b, 'sib', 'core_uj'),
            'core_uj': sum(core_uj(a['extra'], b['extra'], k)
                           for k in cores),
            'read_errors': b['info']['energy_read_errors'] -
            a['info']['energy_read_errors']}


def s_faults(ctx):
    """The uncore domain reads as zero (absent) and every 7th counter read
    fails: detection leaves uncore out, each failure is counted, and
    nothing is lost or invented: total_uj against the emulator as in
    s_conservation_hw."""
    unload()
    load('emu_zero=uncore emu_fail_every=7')
    mkcg('fa')
    w = W.start('fa', 'busy', 4, cpu=0)
    a = next_sample(extra=truth)
    diffs = []
    for _ in range(8):
        s = next_sample(extra=truth)
        diffs.append(headline_uj(s['extra']) - s['stat']['']['total_uj'])
    W.stop([w], ['fa'])
    failed = sum(v.get('failed', 0) for v in counters(s['extra'],
                                                      'pkg').values())
    return {'domains': s['info']['domains'],
            'keys': sorted(k for k in stat() if k.endswith('_uj')),
            'read_errors': s['info']['energy_read_errors'] -
            a['info']['energy_read_errors'],
            'failed': failed - sum(v.get('failed', 0)
                                   for v in counters(a['extra'],
                                                     'pkg').values()),
            'distinct_diffs': sorted(set(diffs))}


def s_suspend(ctx):
    """A suspend to RAM and resume through the whole kernel path (the
    harness's SUSPEND_CYCLE: pm_test core, all but the firmware's S3), with
    a busy loop running across it. The emulated
    counters restart at resume, as real ones do. The module samples last
    before the suspend and starts its counters afresh after resume: no
    restart is taken for a wrap, and total_uj grows by what the emulator
    returned less what no reader can see (from the last read before the
    restart to the first after it: 'gap')."""
    mkcg('sus')
    w = W.start('sus', 'busy', 8, cpu=0)
    a = next_sample(extra=truth)
    sh(SUSPEND_CYCLE)
    next_sample()
    b = next_sample(extra=truth)
    W.stop([w], ['sus'])
    ta, tb = a['extra'], b['extra']
    pk = counters(tb, 'pkg')

    def seen(t):
        return sum(uj(v['read'] - v['gap'], v['esu'])
                   for (p, d), v in counters(t, 'pkg').items()
                   if d in HEADLINE)
    return {'restarts': min(v['restarts'] - ta[k]['restarts']
                            for k, v in pk.items()),
            'wraps': b['info']['counter_wraps'] - a['info']['counter_wraps'],
            'resyncs': b['info']['counter_resyncs'] -
            a['info']['counter_resyncs'],
            'module_uj': delta(a, b, '', 'total_uj'),
            'hw_uj': seen(tb) - seen(ta),
            'conserved': root_terms_add_up(b['stat'][''])}


# s_steps: CPU 1's busy power while each cgroup runs there, mW
STEP_MW = {'steps/hot': 16000, 'steps/cold': 2000}
# s_steps' runs: (interval_ms, phase seconds, phases). Phases ten intervals
# long, then an interval eight phases long.
STEP_RUNS = ((100, 1.0, 6), (2000, 0.25, 24))


def stepped(interval_ms, phase_s, phases):
    """Busy loops in steps/hot and steps/cold, both on CPU 1 (package 1,
    alone), take turns in @phases phases of @phase_s (the other frozen);
    before each, CPU 1's busy power is set to its cgroup's STEP_MW. The
    emulator's record of CPU 1's energy, read at each phase's end, is what
    each cgroup drew; the module's figures are its core domain's (package
    1's: CPU 1's energy only) over the same run, at @interval_ms."""
    PARAMS.joinpath('interval_ms').write_text(f'{interval_ms}\n')
    cgs = sorted(STEP_MW, reverse=True)         # hot first
    ws = [W.start(cg, 'busy', LOOP_MAX_S, cpu=1) for cg in cgs]
    try:
        running(cgs)
        for cg in cgs:
            freeze(cg)
        a = next_sample(['', *cgs], extra=truth)
        a['usage'] = usage_at(cgs)
        drawn = dict.fromkeys(cgs, 0)
        last = a['extra'][('cpu', 1)]['uj']
        for i in range(phases):
            cg = cgs[i % 2]
            BUSY_MW.write_text(f'1 {STEP_MW[cg]}\n')
            freeze(cg, False)
            time.sleep(phase_s)
            freeze(cg)
            now = truth()[('cpu', 1)]['uj']
            drawn[cg] += now - last
            last = now
        b = next_sample(['', *cgs], extra=truth)
        b['usage'] = usage_at(cgs)
    finally:
        for cg in cgs:
            freeze(cg, False)
        W.stop(ws, cgs)
    return {'interval_ms': interval_ms, 'phase_s': phase_s, 'phases': phases,
            'module_uj': {cg: delta(a, b, cg, 'core_uj') for cg in cgs},
            'drawn_uj': drawn,
            'cpu_us': {cg: b['usage'][cg] - a['usage'][cg] for cg in cgs},
            'window_us': b['usage']['at_us'] - a['usage']['at_us'],
            'pkg1_core_uj': pkg_uj(a['extra'], b['extra'], ('core',))[1],
            'samples': b['info']['samples'] - a['info']['samples']}


# writes busy_mw must refuse: no power, below emu_idle_mw (1000) or above
# 100 W, a CPU that does not exist, words, a third field
BAD_BUSY_MW = ['1', '1 999', '1 100001', '64 5000', 'one 5000', '1 5000 2',
               '1 -5000']


def s_busy_mw(ctx):
    """The emulator's power step (debugfs busy_mw) refuses each of
    BAD_BUSY_MW with its errno and leaves every CPU's power as it was."""
    before = BUSY_MW.read_text()
    out = {}
    for w in BAD_BUSY_MW:
        try:
            fd = os.open(BUSY_MW, os.O_WRONLY)
            try:
                os.write(fd, w.encode())
                out[w] = 0
            finally:
                os.close(fd)
        except OSError as e:
            out[w] = e.errno
    return {'errno': out, 'unchanged': BUSY_MW.read_text() == before,
            'busy_mw': before}


def s_steps(ctx):
    """The split against power that is not proportional to busy time: two
    cgroups with the same CPU time on one CPU, one drawing 8 times the
    other's busy power (stepped()), with phases longer than the module's
    interval and then shorter. The module splits each interval's energy by
    CPU time, so it can follow the step only where an interval holds one
    cgroup. Reloaded from CPU 0, so that the sampler and this script stay
    off CPU 1; reloaded at the defaults after, whatever happened."""
    mkcg(*STEP_MW)
    try:
        unload()
        with housekeeping_on_cpu0():
            load()
            return {'runs': [stepped(*r) for r in STEP_RUNS]}
    finally:
        unload()
        load()


def ipis():
    """{cpu: function-call IPIs it took}, the CAL row of /proc/interrupts
    (one column per online CPU, named in the header)."""
    lines = Path('/proc/interrupts').read_text().splitlines()
    cpus = [int(c[3:]) for c in lines[0].split()]
    for line in lines[1:]:
        f = line.split()
        if f and f[0] == 'CAL:':
            return dict(zip(cpus, map(int, f[1:1 + len(cpus)])))
    raise AssertionError('no CAL row in /proc/interrupts')


def isolated_cpu():
    """The one CPU the boot isolated (isolcpus=)."""
    iso = Path('/sys/devices/system/cpu/isolated').read_text().strip()
    assert iso and iso.isdigit(), f'isolated CPUs: {iso!r}'
    return int(iso)


def package_of(cpu):
    return int(Path(f'/sys/devices/system/cpu/cpu{cpu}/topology/'
                    'physical_package_id').read_text())


def ipi_window(cpu, secs):
    """A busy loop in cgroup iso on @cpu: over @secs while it ran, the IPIs
    @cpu took, and with the module loaded its counters' changes and the
    emulator's: reads per package and core, and the cross-calls that read
    registers on @cpu."""
    def ends(last):
        """The module's figures around the IPI count and the emulator's
        record: [start's after, end's before] lies inside the span of those
        two, which lies inside [start's before, end's after]."""
        loaded = PARAMS.exists()
        e = {'before': info() if loaded else {}}
        if last:
            e['truth'] = truth() if loaded else {}
        e['ipis'], e['at'] = ipis()[cpu], time.monotonic()
        if not last:
            e['truth'] = truth() if loaded else {}
        e['after'] = info() if loaded else {}
        return e
    w = W.start('iso', 'busy', LOOP_MAX_S, cpu=cpu)
    try:
        running({'iso'})
        a = ends(False)
        time.sleep(secs)
        b = ends(True)
    finally:
        W.stop([w], {'iso'})
    out = {'ipis': b['ipis'] - a['ipis'], 'seconds': b['at'] - a['at']}
    if a['before']:
        keys = ('samples', 'isolated_cpu_reads', 'isolated_core_skips',
                'energy_read_errors')
        # inner: what surely fell inside; outer: what may have
        out.update({k: b['before'][k] - a['after'][k] for k in keys})
        out['outer'] = {k: b['after'][k] - a['before'][k] for k in keys}
        out['pkg_reads'] = {
            f'{p} {d}': v['reads'] - a['truth'][(p, d)]['reads']
            for (p, d), v in counters(b['truth'], 'pkg').items()}
        out['core_reads'] = {
            k: v['reads'] - a['truth'][('core', k)]['reads']
            for k, v in counters(b['truth'], 'core').items()}
        out['reads_here'] = (b['truth'][('cpu', cpu)]['reads_here'] -
                             a['truth'][('cpu', cpu)]['reads_here'])
    return out


def s_isolated(ctx):
    """A busy loop on the isolated CPU (isolcpus=, nohz_full=): the
    function-call IPIs it takes in 4 s without the module, then with it
    sampling every 20 ms; its package is read on a housekeeping CPU of
    it, and on AMD its core's counter, where no sibling is left to
    housekeeping, is not read. Then (Intel) the package's other CPU
    offline: the isolated CPU is its only one, read there, counted."""
    unload()
    cpu = isolated_cpu()
    mkcg('iso')
    out = {'cpu': cpu, 'core': core_of(cpu), 'cmdline':
           Path('/proc/cmdline').read_text().strip()}
    with housekeeping_on_cpu0():
        out['without'] = ipi_window(cpu, 4)
        load('interval_ms=20')
        # after the load's text patching (an IPI to every CPU)
        next_sample([''])
        out['with'] = ipi_window(cpu, 4)
        mates = [n for n in range(os.cpu_count())
                 if n != cpu and package_of(n) == package_of(cpu)]
        if PROFILE.startswith('intel'):
            for n in mates:
                Path(f'/sys/devices/system/cpu/cpu{n}/online').write_text('0')
            try:
                next_sample([''])
                out['alone'] = ipi_window(cpu, 4)
            finally:
                for n in mates:
                    Path(f'/sys/devices/system/cpu/cpu{n}/online').write_text(
                        '1')
        a = next_sample(['iso'])
        time.sleep(0.5)
        out['iso_stat'] = a['stat']['iso']
    unload()
    return out


def s_end(ctx):
    unload()
    return {}


SCENARIOS = {
    'intel-client': [s_detect, s_conservation_hw, s_unowned,
                     s_unowned_cpuset, s_wrap,
                     s_packages, s_psys, s_busy_mw, s_steps, s_suspend,
                     s_faults, s_end],
    'intel-server': [s_late_cpu, s_detect, s_conservation_hw, s_unowned,
                     s_wrap, s_packages, s_overflow, s_end],
    'amd-zen': [s_detect, s_conservation_hw, s_unowned, s_unowned_cpuset,
                s_wrap, s_cores,
                s_sibling, s_end],
}

if __name__ == '__main__':
    if ISOLATED:
        scenarios([s_isolated, s_end], {})
    else:
        # only the deep tier's tests read these
        scenarios(SCENARIOS[PROFILE], {},
                  deep_only=(s_packages, s_psys, s_busy_mw, s_steps))
