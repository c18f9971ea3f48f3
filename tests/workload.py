# SPDX-License-Identifier: GPL-2.0
"""Shared by the VM tests: build the cgwork workload helper (host gcc; the
guest runs it over 9p), read a guest script's results, compare figures."""
import os
import subprocess
from pathlib import Path

import pytest

import tiers

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / 'tests/vm/workload/cgwork.c'
OUT = REPO / '.build/cgwork'


def cgwork():
    if not OUT.exists() or OUT.stat().st_mtime < SRC.stat().st_mtime:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(['gcc', '-O2', '-Wall', '-Wextra', '-Werror', '-o',
                        str(OUT), str(SRC)], check=True)
    return OUT


# a hotplug state that holds a CPU going offline (s_hotplug_window)
HPHOLD = REPO / 'tests/vm/fixtures/hphold'
# cgroups test_engine's churn creates and removes
ENGINE_CHURN = int(os.environ.get('CGE_CHURN', 10000))
# The gate boots the engine and impact scenarios on one kernel of each set
# of compat probe results (kmod/probes.mk: 6.1 and 6.1-rt have the same
# set, 6.12 and 6.12-rt, sid and experimental), PREEMPT_RT's where a set
# has it; every kernel boots in the gate's accuracy and RAPL boots too. The
# deep tier runs them on every kernel.
ENGINE_GATE = pytest.mark.gate_only(
    vm_flavour=['5.10', '6.1-rt', '6.12-rt', 'sid'])


def engine_boot(vm, flavour, ko):
    """One boot per flavour for guest_impact.py and then guest_engine.py:
    test_impact reads 'impact', test_engine 'engine' (vm.run memoises the
    boot across the two modules). Each script loads and unloads the module
    itself; the engine's suspend and hotplug scenarios come after impact's.
    In the gate, the engine's deep-only scenarios do not run."""
    tool = cgwork()
    only = tiers.guest_env()
    hold = vm.build_external(HPHOLD, flavour)
    return vm.run({'impact': f'/usr/bin/python3 tests/vm/guest/guest_impact.py '
                   f'{ko} {tool}',
                   'engine': f'{only}CGE_CHURN={ENGINE_CHURN} '
                   f'CGE_HPHOLD={hold} /usr/bin/python3 '
                   f'tests/vm/guest/guest_engine.py {ko} {tool}'},
                  flavour=flavour, timeout=1800)


def guest_json(result, name='run'):
    """The CGE-RESULT line a guest_*.py script printed, parsed."""
    import json
    out = result[name].output
    for line in out.splitlines():
        if line.startswith('CGE-RESULT '):
            return json.loads(line[len('CGE-RESULT '):])
    raise AssertionError(f'no CGE-RESULT line; rc={result[name].rc}; '
                         f'output tail:\n{out[-3000:]}')


def ok(res, name):
    """Scenario @name's result; fails the test if the scenario raised."""
    r = res[name]
    assert 'error' not in r, r['error']
    return r


def close(ours, kernel, rel, abs_usec):
    """ours within rel (a fraction) of kernel, or within abs_usec."""
    return abs(ours - kernel) <= max(rel * kernel, abs_usec)
