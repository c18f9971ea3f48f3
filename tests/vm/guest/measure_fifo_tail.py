# SPDX-License-Identifier: GPL-2.0
"""What a SCHED_FIFO loop alone on a tickless CPU is charged, by the kernel
and by the module, against its wall time (a measurement for
docs/accuracy.md's paragraphs on a tickless CPU whose sched_clock is
unstable, not a test):

    python3 tests/vm/harness.py --flavour 6.1 --append nohz_full=1 -- \\
        '/usr/bin/python3 tests/vm/guest/measure_fifo_tail.py KO CGWORK N'

First three loops without the module, then N with it, each 0.5 s of wall
time in a cgroup of its own on CPU 1, as test_accuracy's FIFO loop: per
loop, its cgroup's cpu.stat usage_usec (and, with the module, usage_usec)
once quiet, and the wall time of the command that ran it.  Prints
'MEAS {json}'; tests/results/fifo-tail.jsonl keeps the runs
docs/accuracy.md quotes.
"""
import json
import os
import sys
import time

from common import (CG, compare_usage, cpu_usage, dmesg, info, insmod,
                    mkcg, mount_en, sh)


def loop(cgwork, cg):
    t0 = time.monotonic()
    sh(f'chrt -f 10 {cgwork} -C {CG}/{cg} -p 1 busy 0.5')
    return round((time.monotonic() - t0) * 1e6)


def main():
    ko, cgwork, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # the sampler stays on the CPU that loaded the module: CPU 0, ticked
    os.sched_setaffinity(0, {0})
    out = {'tsc_unstable': 'Marking TSC unstable' in dmesg(),
           'without': [], 'with': []}
    for i in range(3):
        cg = f'bare{i}'
        mkcg(cg)
        wall = loop(cgwork, cg)
        time.sleep(0.5)
        out['without'].append({'wall_us': wall, 'kernel': cpu_usage(cg)})
    insmod(ko)
    mount_en()
    cgs = [f'f{i}' for i in range(n)]
    mkcg(*cgs)
    walls = [loop(cgwork, cg) for cg in cgs]
    usage = compare_usage(cgs)
    for cg, wall in zip(cgs, walls):
        u = usage[cg]
        out['with'].append({'wall_us': wall, 'kernel': u['kernel'],
                            'ours': u['ours']})
    i = info()
    out['overcharge'] = {k: i[k] for k in ('overcharge_usec',
                                           'overcharge_repaid_usec')}
    print('MEAS ' + json.dumps(out), flush=True)


if __name__ == '__main__':
    main()
