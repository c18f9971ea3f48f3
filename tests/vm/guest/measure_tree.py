# SPDX-License-Identifier: GPL-2.0
"""Reads of the whole tree at scale, and readers against the sampler (a
measurement for docs/overhead.md, not a test; issue 43):

    python3 tests/vm/harness.py --flavour 6.1 -- \\
        '/usr/bin/python3 tests/vm/guest/measure_tree.py KO WALK_TOOL [OLD_KO]'

WALK_TOOL is an energystat built without energy.tree (the walk), to time
against the tool of this tree; OLD_KO, a module from before energy.tree
(sibling scans, energy.stat summed over the children under cge_lock), is
measured the same way as 'before'. For 2,000 and 10,000 cgroups, flat
(siblings) and nested (100 parents of 20 or 100 children), the best of
three: one read of energy.tree, `energystat --prometheus` with it and with
the walk, and a plain walk that opens and reads every energy.stat. Then the
sampler alone and beside a reader throttled by cpu.max (1 ms per 100 ms)
that reads the largest parent's energy.stat (and energy.tree) in a loop:
overruns, and the longest gap between two samples seen by a poller of
energy.info every 10 ms. Prints 'MEAS {json}'; tests/results/tree-read.jsonl
keeps the runs.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from common import CG, EN, info, insmod, mount_en, rmmod, umount_en

TOOL = Path(__file__).resolve().parents[3] / 'userspace/energystat'


def best(fn, n=3):
    out = []
    for _ in range(n):
        t = time.monotonic()
        fn()
        out.append(time.monotonic() - t)
    return round(min(out), 3)


def walk_read():
    for d, _, _ in os.walk(EN):
        with open(os.path.join(d, 'energy.stat')) as f:
            f.read()


def tool(binary):
    subprocess.run([binary, '--prometheus'], check=True,
                   stdout=subprocess.DEVNULL)


def shape(name, n):
    top = CG / 'm'
    if name == 'flat':
        paths = [f'{i}' for i in range(n)]
    else:
        per = 20 if n <= 2000 else 100
        paths = [f'p{i // per}/c{i % per}' for i in range(n)]
    for p in paths:
        (top / p).mkdir(parents=True, exist_ok=True)
    return top


def remove(top):
    """Remove the cgroup @top and every one below it, deepest first."""
    for d, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
        os.rmdir(d)


def sampler_watch(seconds):
    """Overruns and the longest gap between samples over @seconds."""
    i0 = info()
    last, gap, stop = i0['last_sample_ns'], 0, time.monotonic() + seconds
    while time.monotonic() < stop:
        ns = info()['last_sample_ns']
        if ns != last:
            gap, last = max(gap, ns - last), ns
        time.sleep(0.01)
    i1 = info()
    return {'samples': i1['samples'] - i0['samples'],
            'overruns': i1['sampler_overruns'] - i0['sampler_overruns'],
            'max_gap_ms': round(gap / 1e6, 1)}


def scale(walk_tool, before):
    """The reads at 2,000 and 10,000 cgroups; @before: a module without
    energy.tree (the walk only)."""
    out = {}
    for n in (2000, 10000):
        for name in ('flat', 'nested'):
            top = shape(name, n)
            time.sleep(0.5)
            r = {'energystat_walk_prometheus_s':
                 best(lambda: tool(walk_tool), 1 if n > 2000 else 3),
                 'plain_walk_s': best(walk_read, 1 if n > 2000 else 3)}
            if not before:
                r['tree_bytes'] = len((EN / 'energy.tree').read_bytes())
                r['tree_read_s'] = best(
                    lambda: (EN / 'energy.tree').read_bytes())
                r['energystat_prometheus_s'] = best(lambda: tool(TOOL))
            out[f'{name}_{n}'] = r
            remove(top)
    return out


def readers(before):
    """The sampler alone, then beside a reader throttled by its cpu.max that
    reads the largest parent (2,000 children) in a loop."""
    top = shape('flat', 2000)
    (CG / 'cgroup.subtree_control').write_text('+cpu')
    (CG / 'rdr').mkdir(exist_ok=True)
    (CG / 'rdr/cpu.max').write_text('1000 100000')
    out = {'sampler_quiet': sampler_watch(20)}
    files = f'{EN}/m/energy.stat' + ('' if before else f' {EN}/energy.tree')
    script = (f'echo $$ > {CG}/rdr/cgroup.procs; '
              f'while :; do cat {files} > /dev/null; done')
    rdr = subprocess.Popen(['sh', '-c', script])
    out['sampler_throttled_reader'] = sampler_watch(20)
    rdr.kill()
    rdr.wait()
    out['reader_throttled'] = [ln for ln in
                               (CG / 'rdr/cpu.stat').read_text().splitlines()
                               if ln.startswith('nr_throttled')]
    out['reader_reads'] = files
    for _ in range(50):                 # the killed reader leaves it
        try:
            os.rmdir(CG / 'rdr')
            break
        except OSError:
            time.sleep(0.1)
    remove(top)
    return out


def run(ko, walk_tool, before):
    insmod(ko)
    mount_en()
    out = {'scale': scale(walk_tool, before), **readers(before)}
    umount_en()
    rmmod()
    return out


def main():
    ko, walk_tool = sys.argv[1], sys.argv[2]
    out = {'kver': os.uname().release, 'cpus': os.cpu_count(),
           'after': run(ko, walk_tool, False)}
    if len(sys.argv) > 3:
        out['before'] = run(sys.argv[3], walk_tool, True)
    print('MEAS ' + json.dumps(out), flush=True)


if __name__ == '__main__':
    main()
