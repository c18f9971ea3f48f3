# SPDX-License-Identifier: GPL-2.0
"""bench/calibrate.py against the emulated RAPL hardware (test build,
tests/emu/emu.c): at configured per-CPU idle and busy power, with the profile's
uncore (and DRAM) power beside them, it recovers the per-CPU equivalent
(tests/vm/emu.py: constant power spread over the CPUs into idle) within
3 %. The fit itself is tested on the host in test_calibrate.py."""
import pytest

from vm import emu
from workload import guest_json, ok

IDLE_MW, BUSY_MW = 1500, 6000
LIMIT = 0.03


# calibrate.py reads energy.stat and /proc/stat, alike on every kernel;
# one kernel keeps make check within its time budget
CAL_FLAVOUR = '6.1'


# the deep tier's: the fit is to timed phases
pytestmark = [pytest.mark.deep, pytest.mark.only(vm_flavour=[CAL_FLAVOUR])]


@pytest.fixture(scope='module', params=['intel-client', 'intel-server'])
def cal(request, vm, vm_flavour, emu_ko):
    profile = request.param
    p = emu.PROFILES[profile]
    r = vm.run({'run': f'/usr/bin/python3 tests/vm/guest/guest_calibrate.py '
                f'{emu_ko} {profile} {IDLE_MW} {BUSY_MW}'},
               flavour=vm_flavour, timeout=300, cpu_model=p['cpu_model'],
               sockets=p['sockets'])
    return profile, ok(guest_json(r), 's_calibrate')


def test_recovers_configured_power(cal):
    profile, r = cal
    assert r['source'] == 'rapl', r
    want_idle, want_busy = emu.per_cpu_equivalent(profile, IDLE_MW, BUSY_MW,
                                                  r['cpus'])
    f = r['fits']['total']
    assert f['idle_mw'] == pytest.approx(want_idle, rel=LIMIT), (want_idle, f)
    assert f['busy_mw'] == pytest.approx(want_busy, rel=LIMIT), (want_busy, f)
