# SPDX-License-Identifier: GPL-2.0
"""Shared by the VM tests: build the cgwork workload helper (host gcc; the
guest runs it over 9p), read a guest script's results, compare figures."""
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / 'tests/vm/workload/cgwork.c'
OUT = REPO / '.build/cgwork'


def cgwork():
    if not OUT.exists() or OUT.stat().st_mtime < SRC.stat().st_mtime:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(['gcc', '-O2', '-Wall', '-Wextra', '-Werror', '-o',
                        str(OUT), str(SRC)], check=True)
    return OUT


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
