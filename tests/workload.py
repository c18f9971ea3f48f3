# SPDX-License-Identifier: GPL-2.0
"""Build the cgwork workload helper (host gcc; the guest runs it over 9p)."""
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
