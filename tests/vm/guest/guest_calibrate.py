#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Guest side of test_calibrate_emu.py: bench/calibrate.py against the test
build's emulated RAPL at known per-CPU power.

usage: guest_calibrate.py MODULE.ko PROFILE IDLE_MW BUSY_MW"""
import os
import sys

from common import REPO, info, insmod, mount_en, scenarios, s_unload

sys.path.insert(0, str(REPO / 'bench'))
import calibrate  # noqa: E402

KO, PROFILE = os.path.abspath(sys.argv[1]), sys.argv[2]
IDLE, BUSY = int(sys.argv[3]), int(sys.argv[4])


def s_calibrate(ctx):
    insmod(KO, f'emu_profile={PROFILE} emu_idle_mw={IDLE} emu_busy_mw={BUSY}')
    mount_en()
    rows = calibrate.measure(seconds=3)
    return {'source': info()['source'], 'cpus': os.cpu_count(),
            'phases': rows, 'fits': calibrate.calibrate(rows)}


if __name__ == '__main__':
    scenarios([s_calibrate, s_unload], {})
