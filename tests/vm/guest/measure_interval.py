# SPDX-License-Identifier: GPL-2.0
"""How often the sampler samples for each interval_ms, in a quiet guest (a
measurement for docs/contract.md's "Module parameters", not a test):

    python3 tests/vm/harness.py --flavour 6.1 -- \\
        '/usr/bin/python3 tests/vm/guest/measure_interval.py KO 10,20,100'

Per value: samples a second by the guest's clock over 4 s (energy.info's
samples), the overruns in that time, and the guest's non-idle CPU share
(/proc/stat). Prints 'MEAS {json}'; tests/results/interval-period.jsonl
keeps the runs docs/contract.md quotes.
"""
import json
import os
import sys
import time

from common import info, insmod, mount_en, rmmod, umount_en


def busy_jiffies():
    v = [int(x) for x in open('/proc/stat').readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def main():
    ko, values = sys.argv[1], [int(x) for x in sys.argv[2].split(',')]
    out = {}
    for n in values:
        insmod(ko, f'interval_ms={n}')
        mount_en()
        time.sleep(0.5)
        i0, (b0, t0), w0 = info(), busy_jiffies(), time.monotonic()
        time.sleep(4)
        i1, (b1, t1), w1 = info(), busy_jiffies(), time.monotonic()
        umount_en()
        rmmod()
        out[n] = {'samples_per_s':
                  round((i1['samples'] - i0['samples']) / (w1 - w0), 1),
                  'overruns': i1['sampler_overruns'] - i0['sampler_overruns'],
                  'busy_pct': round(100 * (b1 - b0) / max(1, t1 - t0), 2)}
    print('MEAS ' + json.dumps({'kver': os.uname().release, 'r': out}),
          flush=True)


if __name__ == '__main__':
    main()
