#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Append the figures of the latest VM runs to tests/results/*.jsonl.

usage: collect_vm.py systime|rapl-emu|prometheus|drain [RUNS_DIR]

Reads the guests' CGE-RESULT lines in RUNS_DIR (default .build/vm-runs; the
harness keeps the last CGE_KEEP_RUNS runs, 20 unless set) and appends, per
kernel (and per emulated part), the newest run's figures of HEAD's commit
(each run's config names the commit it tested; runs of another commit, or
of a tree with changes, are left out) with the kernel version and the date:
  systime   s_systime of tests/vm/guest/guest_engine.py: the module's irq,
            softirq and steal time against /proc/stat's
  rapl-emu  tests/vm/guest/guest_rapl.py: every scenario's figures but
            detection's (conservation against the emulated hardware, wraps,
            packages, cores, overflow, PSYS, suspend, faults)
  prometheus tests/vm/guest/guest_prometheus.py: every scenario's figures
            (Prometheus's rate() against the module's power, the scrapes,
            the pod join, the containerised exporter against the host's)
  drain     tests/vm/guest/drain.py in test_accuracy's and test_engine's
            boots, per kernel and boot (tickless or ticked CPU 1): the
            quiet spans' error (% of an interval), each loop's error per
            span against the kernel's switch trace, the 1 s windows,
            the IPIs with and without the module, the totals against
            cpu.stat
"""
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / 'tests'))
import drain_checks  # noqa: E402


def git(*args):
    return subprocess.run(['git', '-C', str(REPO), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def runs(runs_dir):
    """(flavour, kver, mtime, result dict) of each run with a result."""
    for d in sorted(runs_dir.iterdir()):
        cfg = d / 'config'
        if d.is_symlink() or not cfg.exists():
            continue
        conf = dict(ln.split('=', 1) for ln in cfg.read_text().split())
        if conf.get('CGE_COMMIT') != git('rev-parse', '--short=12', 'HEAD'):
            continue
        for out in sorted((d / 'out').glob('*')):
            for line in out.read_text(errors='replace').splitlines():
                if line.startswith('CGE-RESULT '):
                    yield (conf['CGE_FLAVOUR'].strip("'"),
                           conf['CGE_KVER'].strip("'"), d.stat().st_mtime,
                           json.loads(line[len('CGE-RESULT '):]))


def drain_row(res):
    """s_drain's figures, as tests/drain_checks.py makes them."""
    every = drain_checks.intervals(res)
    quiet = drain_checks.quiet(every)
    most = max(x['schedule_calls'] / x['n'] for x in quiet)
    # % of an interval: a span of n samples is held to one interval's bound
    err = [100 * (x['loop1_us'] - x['len_us']) / (x['len_us'] / x['n'])
           for x in quiet]
    added, w, b = drain_checks.added_ipis(res)
    d = res['s_drain']
    return {
        'spans': len(every), 'quiet_spans': len(err),
        'samples_per_span': sorted({x['n'] for x in every}),
        'quiet_rule': f'the {drain_checks.QUIET_MIN} quietest',
        'quiet_schedule_calls_per_interval_max': round(most, 2),
        'quiet_err_pct_min_max': [round(min(err), 3), round(max(err), 3)],
        'quiet_within_2pct': sum(abs(e) <= 2 for e in err),
        'windows': [{
            'len_ms': round(x['len_us'] / 1000, 1),
            'loop1_vs_busy1_pct': round(100 * (x['loop1']['usage_us'] -
                                               x['busy1_us']) /
                                        x['len_us'], 3),
            'uj_per_cpu_s_0_to_1': round(
                x['loop0']['energy_uj'] * x['loop1']['usage_us'] /
                (x['loop0']['usage_us'] * x['loop1']['energy_uj']), 4)}
            for x in drain_checks.windows(res)],
        'ipis_with': w, 'ipis_without': b, 'ipis_added': added,
        'totals_diff_us': {cg: d['usage'][cg]['diff']
                           for cg in ('loop0', 'loop1')},
        'traced': traced_row(res),
        'rt': d['rt']}


def traced_row(res):
    """Each loop's charge per span against its time on its CPU in the
    kernel's switch trace (drain_checks.traced): the spans' errors, % of
    an interval (least, most, mean), and how often the trace has the loop
    switched in."""
    tr = res['s_drain'].get('trace')
    if not tr:
        return None
    spans = drain_checks.traced(res)
    out = {'lost_events': tr['lost'], 'unpaired_events': tr.get('unpaired'),
           'spans': len(spans)}
    for cg in ('loop0', 'loop1'):
        err = [x[cg]['err_pct'] for x in spans]
        out[cg] = {'err_pct_min_max': [min(err), max(err)] if err else None,
                   'err_pct_mean': round(sum(err) / len(err), 3)
                   if err else None,
                   'within_2pct': sum(abs(e) <= 2 for e in err),
                   'switched_in': sum(r[1] is not None
                                      for r in tr['runs'][cg])}
    return out


def rows(kind, runs_dir):
    latest = {}
    for flavour, kver, mtime, res in runs(runs_dir):
        if kind == 'systime' and 's_systime' in res:
            key, row = flavour, dict(res['s_systime'])
        elif kind == 'rapl-emu' and 's_conservation_hw' in res:
            d = res['s_detect']['info']
            key = (flavour, d['domains'])
            row = {'domains': d['domains'], 'packages': d['packages'],
                   'vendor': d.get('vendor'),
                   **{k: {f: v for f, v in r.items() if f != 'seconds'}
                      for k, r in res.items()
                      if k not in ('s_detect', 's_end')}}
        elif kind == 'drain' and 's_drain_base' in res:
            boot = 'tickless' if res['s_drain'].get('nohz_full') else \
                'ticked'
            key, row = (flavour, boot), {'cpu1': boot, **drain_row(res)}
        elif kind == 'prometheus' and 's_rate' in res:
            key = flavour
            row = {k: {f: v for f, v in r.items() if f != 'seconds'}
                   for k, r in res.items() if k != 's_stop'}
        else:
            continue
        row.pop('seconds', None)
        if key not in latest or latest[key][0] < mtime:
            latest[key] = (mtime, {'flavour': flavour, 'kver': kver, **row})
    return [r for _, r in sorted(latest.values(), key=lambda x: x[0])]


def main():
    kind = sys.argv[1]
    runs_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else \
        REPO / '.build/vm-runs'
    meta = {'date': time.strftime('%Y-%m-%d'),
            'commit': git('rev-parse', '--short=12', 'HEAD')}
    out = REPO / 'tests/results' / f'{kind}.jsonl'
    with out.open('a') as f:
        for r in rows(kind, runs_dir):
            f.write(json.dumps({**meta, **r}) + '\n')
            print(r['flavour'], r['kver'], file=sys.stderr)


if __name__ == '__main__':
    main()
