#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Print docs/accuracy.md's "Realtime, nohz_full and tick rate" table from the results
tests/test_accuracy.py keeps in .build/accuracy/<flavour>-<mode>.json:

    CGE_FLAVOURS=all CGE_ACCURACY_MODES="plain nohz" \\
        /usr/bin/python3 -m pytest -q tests/test_accuracy.py
    /usr/bin/python3 tests/accuracy_table.py
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / 'vm'))
import kernels  # noqa: E402

DIR = Path(__file__).resolve().parents[1] / '.build/accuracy'
COLS = [('busy_cpu1', 'busy, CPU 1'), ('busy', 'busy'), ('sleeper', 'sleeper'),
        ('fifo_cpu1', 'FIFO, CPU 1'), ('spawn', '300 processes')]


def cell(r):
    if r['diff'] == 0:
        return '0'
    return f"{r['diff'] / 1000:+.2f} ms ({100 * r['diff'] / r['kernel']:+.3f} %)"


def main():
    rows = ['| kernel | `nohz_full` | ' + ' | '.join(c for _, c in COLS) + ' |',
            '|---' * (len(COLS) + 2) + '|']
    for flavour in kernels.FLAVOURS:
        for mode, label in (('plain', 'no'), ('nohz', 'yes')):
            p = DIR / f'{flavour}-{mode}.json'
            if not p.exists():
                continue
            d = json.loads(p.read_text())
            if not d.get('_can_nohz', True) and mode == 'nohz':
                continue            # booted plain: no nohz_full (5.10)
            acc = d['s_accuracy']
            if 'error' in acc:
                cells = [f"error: {acc['error']}"] * len(COLS)
            else:
                cells = [cell(acc[k]) for k, _ in COLS]
            rows.append(f"| `{flavour}` ({d['s_env']['kver']}) | {label} | "
                        + ' | '.join(cells) + ' |')
    if len(rows) == 2:
        sys.exit(f'accuracy_table: no results in {DIR}')
    print('\n'.join(rows))


if __name__ == '__main__':
    main()
