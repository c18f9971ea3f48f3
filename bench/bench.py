#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench: the module's overhead, measured in QEMU (TCG) guests.

Boots Debian's 6.1 kernel once and runs, in that boot (bench/guest_bench.py):
context-switch throughput without a probe (A), with cgroup_energy (B) and
with an eBPF peer (C, bench/ebpf_peer.bt under bpftrace) in alternation;
the self-timing build's nanoseconds per switch; the eBPF peer's own cost per
call; sampler cost and memory with 10, 1,000 and 10,000 cgroups; the /proc
poller peer's CPU (bench/procpoll, what Kepler 0.10+ does every 5 s) with
100 and 10,000 processes beside the sampler's, and the short tasks it
misses; cgroup migrations per second (bench/cghop.c) without the module,
with it, and with only the cgroup_attach_task event enabled in tracefs.
Then boots 6.1 again under QEMU's insncount plugin (bench/insncount.c,
bench/insns.py) for the instructions the module's probe and the eBPF
peer's program execute per switch, and 6.1-rt for cyclictest with and
without the module. Writes
bench/results/latest.json and latest.md and prints the table.

Timing in a TCG guest varies by about 15 % from run to run (docs/overhead.md,
"These are TCG figures"): every ratio is the median of pairwise ratios of
adjacent runs, with min and max. The figures are relative; on a real host see
docs/overhead.md, "On a real machine".

The pipe's B/A pairs: --pairs-b first, then as many more as their spread
says bring the 95 % CI within 1.5 % of the median (at most --pairs-b-max);
uncounted warm-up runs until the last three settle (at most --warmup-max).

  bench.py [--pairs-b N] [--pairs-b-max N] [--warmup-max N] [--pairs-c N]
           [--budget S] [--no-rt] [--only SECTIONS]
           [--out DIR] [--record-baseline --why TEXT [--replace-baseline]]
           [--local [--kdir DIR]]
"""
import argparse
import datetime
import functools
import json
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'tests'))
sys.path.insert(0, str(REPO / 'bench'))
import insns  # noqa: E402
import treeinfo  # noqa: E402
from vm import build, harness, kernels  # noqa: E402

BENCH = REPO / 'bench'
GUEST = BENCH / 'guest_bench.py'
PEER = BENCH / 'ebpf_peer.bt'
RESULTS = BENCH / 'results'
BASELINE = BENCH / 'baseline.json'
FLAVOUR = '6.1'
RT_FLAVOUR = '6.1-rt'
PY = '/usr/bin/python3'
SECTIONS = ('tools', 'throughput', 'selftime', 'ebpfcost', 'sampler',
            'records', 'poller', 'migrate', 'insns', 'cyclictest')

# Targets (the issue): B/A >= 0.97; <= 256 B per cgroup, <= 4 KiB per CPU;
# <= 50 ns per switch on bare metal (a TCG figure is not comparable).
TARGET_RATIO = 0.97
# The issue: pairs enough that B/A's 95 % CI is narrower than +-1.5 %.
CI_TARGET = 0.015
TARGET_CGROUP_BYTES = 256
TARGET_CPU_BYTES = 4096
TARGET_NS_BARE_METAL = 50
# The bench guard (tests/test_bench.py, make check-full) runs SHORT and
# fails only on a gross regression, against a baseline recorded once per
# host class (bench/baseline.json): BASELINE_RUNS boots of SHORT on a quiet
# host of that class. Its limits are one-sided prediction bounds from those
# runs' spread (baseline_limits()): a new run of the same module on a host
# as quiet falls beyond either with probability GUARD_ALPHA, the runs'
# boot-to-boot spread included (each run's median B/A and probe share, on a
# log scale, taken as normal: Student's t with n - 1 degrees of freedom).
BASELINE_RUNS = 5
GUARD_ALPHA = 0.001


BASELINE_NOTE = (
    'The bench guard (tests/test_bench.py, make check-full) against the '
    'baseline of its host class: BASELINE_RUNS boots of the short version '
    '(bench.SHORT) on a quiet host; the guard fails if the median B/A '
    'ratio falls below ratio_limit or the probe\'s share of the benchmark '
    'exceeds share_limit, one-sided prediction bounds from the runs\' '
    'spread (bench.baseline_limits). Recorded with bench/bench.py --only '
    'tools --record-baseline --why "..."; a class\'s baseline is replaced '
    'only with --replace-baseline, in a commit that says why.')


class BaselineError(RuntimeError):
    pass


# The short version, the bench guard's: pipe only, B only, 12 pairs.
SHORT = {'pairs': 12, 'pipe_loops': 3000, 'selftime_reps': 3, 'warmup': 2}


def short_commands(ko, selfko):
    """The guest commands of the short version (tests/test_bench.py)."""
    return {
        'throughput': guest('throughput', ko=ko, pairs_b=SHORT['pairs'],
                            pairs_c=0, pipe_loops=SHORT['pipe_loops'],
                            hb_loops=0, warmup=SHORT['warmup']),
        'selftime': guest('selftime', ko=selfko, reps=SHORT['selftime_reps'],
                          pipe_loops=SHORT['pipe_loops'], hb_loops=0),
    }


def gross_regression(tput, selftime, base):
    """Problems worth failing the bench guard for, from the short version's
    results against @base, this host class's baseline (baseline()): [] if
    none. The self-timed figure is compared as the share of the benchmark's
    time spent in the probe (ns per switch times switches per second),
    which does not move with the guest's speed."""
    bad = []
    pipe = (tput.get('bench') or {}).get('pipe') or {}
    b = (pipe.get('summary') or {}).get('B') or {}
    if (b.get('n') or 0) < 10:
        bad.append(f'only {b.get("n")} pairs B/A (errors: '
                   f'{tput.get("errors") or tput.get("error")})')
    elif b['median'] < base['ratio_limit']:
        bad.append(f'module_ratio {b["median"]:.3f} < {base["ratio_limit"]} '
                   f'(min {b["min"]:.3f}, max {b["max"]:.3f}, n {b["n"]}; '
                   f'ratios {[round(x, 3) for x in pipe["ratios"]["B"]]})')
    share = (selftime.get('pipe_share') or {}).get('median')
    if share is None:
        bad.append(f'no self-timed figure: {selftime.get("error")}')
    elif share > base['share_limit']:
        bad.append(f'the probe\'s share of the benchmark {share:.4f} '
                   f'({selftime["pipe"]["median"]} ns per switch) > '
                   f'{base["share_limit"]} (baseline {base["pipe_share"]})')
    return bad


def host_class(facts=None):
    """The kind of host a baseline holds for: its CPU model and count."""
    f = facts or host_facts()
    return f'{f["cpu"] or "unknown CPU"}, {f["cpus"]} CPUs, {f["machine"]}'


@functools.lru_cache(maxsize=None)
def t_quantile(p, df):
    """Student's t distribution's @p quantile (p > 0.5) at @df degrees of
    freedom: its density integrated (Simpson's rule), the bound bisected."""
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) *
                                    math.gamma(df / 2))

    def cdf(x, steps=2000):
        h = x / steps
        f = [c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2)
             for i in range(steps + 1)]
        return 0.5 + h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) +
                              2 * sum(f[2:-1:2]))
    lo, hi = 0.0, 1000.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return (lo + hi) / 2


def baseline_limits(runs):
    """The bench guard's limits from a baseline's @runs (BASELINE_RUNS):
    {'ratio_limit', 'share_limit'}, the one-sided 1 - GUARD_ALPHA
    prediction bounds of one more run's median B/A (below) and probe share
    (above), on a log scale."""
    n = len(runs)
    k = t_quantile(1 - GUARD_ALPHA, n - 1) * math.sqrt(1 + 1 / n)

    def bound(xs, sign):
        logs = [math.log(x) for x in xs]
        return math.exp(statistics.mean(logs) +
                        sign * k * statistics.stdev(logs))
    return {'ratio_limit': round(bound([r['module_ratio'] for r in runs], -1),
                                 3),
            'share_limit': round(bound([r['pipe_share'] for r in runs], 1), 5)}


def baseline(cls=None):
    """The baseline of host class @cls (default: this host's)."""
    cls = cls or host_class()
    doc = json.loads(BASELINE.read_text())
    base = doc.get('classes', {}).get(cls)
    if base is None:
        raise BaselineError(
            f'{BASELINE.relative_to(REPO)} has no baseline for this host '
            f'class ({cls}): record one on a quiet host with bench/bench.py '
            '--only tools --record-baseline --why "..."')
    return base


def log(msg):
    print(f'bench: {msg}', file=sys.stderr, flush=True)


# ------------------------------------------------------------------ builds

def make_module(kdir, srcs, dst, *make_args):
    """Copy srcs into dst (rsync, mtimes kept) and build the module there
    against the kernel build tree kdir; returns the one .ko."""
    dst.mkdir(parents=True, exist_ok=True)
    excl = [f'--exclude={p}' for p in build.PRODUCTS]
    subprocess.run(['rsync', '-a', '--delete', *excl, *[str(x) for x in srcs],
                    f'{dst}/'], check=True)
    cmd = ['make', '-C', str(kdir), f'M={dst}', *make_args,
           f'-j{os.cpu_count() or 1}', 'modules']
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise build.BuildError(f'{" ".join(cmd)} failed:\n'
                               + (r.stdout + r.stderr)[-4000:])
    kos = sorted(dst.glob('*.ko'))
    if len(kos) != 1:
        raise build.BuildError(f'{dst}: expected one .ko, found {kos}')
    return kos[0]


MODULE_SRCS = [REPO / n for n in ('Kbuild', 'kmod', 'include')]


def build_selftime(flavour=FLAVOUR, kdir=None, dst=None):
    """cgroup_energy.ko built with CGE_SELFTIME=y (energy.info then shows
    probe_timed_calls and probe_ns_mean), in .build/<kver>/selftime."""
    if kdir is None:
        k = kernels.kernel(flavour)
        kdir, dst = k.kdir, build.build_dir(k.kver) / 'selftime'
    ko = make_module(kdir, MODULE_SRCS, dst, 'CGE_SELFTIME=y')
    if b'probe_timed_calls' not in ko.read_bytes():
        raise build.BuildError(f'{ko}: CGE_SELFTIME did not take effect')
    return ko


def build_helper(name):
    """bench/<name>.c built into .build/bench/<name> if older or missing."""
    src = BENCH / f'{name}.c'
    out = REPO / '.build' / 'bench' / name
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(['gcc', '-O2', '-Wall', '-Wextra', '-Werror',
                        '-pthread', '-o', str(out), str(src)], check=True)
    return out


def build_clockcal(flavour=FLAVOUR):
    return build.build_external(BENCH / 'clockcal', flavour, 'clockcal')


# ------------------------------------------------------- static memory facts

def symbol_sizes(ko, names=('cge_cpu', 'cge_selftime', 'cge_hash', 'cge_cs',
                             'cge_gone_ring')):
    """Sizes of the module's static and per-CPU objects (readelf -s)."""
    out = {}
    r = subprocess.run(['readelf', '-sW', str(ko)], capture_output=True,
                       text=True, check=True)
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) >= 8 and f[7] in names and f[3] == 'OBJECT':
            out[f[7]] = int(f[2], 0) if f[2].startswith('0x') else int(f[2])
    return out


def struct_sizes(ko, names=('cge_cpu', 'cge_rec', 'cge_stat', 'cge_delta',
                             'cge_acc', 'cge_slot', 'cge_roll')):
    """sizeof the module's structures, from DWARF (pahole), if available."""
    try:
        r = subprocess.run(['pahole', '-C', ','.join(names), str(ko)],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out, cur = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r'struct (\w+) \{', line)
        if m:
            cur = m.group(1)
        m = re.search(r'/\* size: (\d+)', line)
        if m and cur:
            out[cur] = int(m.group(1))
            cur = None
    return out


# ----------------------------------------------------------------- guests

def guest(sub, **args):
    """The shell command that runs one guest_bench.py section."""
    argv = [PY, str(GUEST), sub]
    for k, v in args.items():
        if v is None or v is False:
            continue
        argv += [f'--{k.replace("_", "-")}', str(v)]
    return shlex.join(argv)


def guest_result(cmdres):
    """The BENCH-RESULT line of one command's output, parsed."""
    for line in reversed(cmdres.output.splitlines()):
        if line.startswith('BENCH-RESULT '):
            return json.loads(line[len('BENCH-RESULT '):])
    tail = '\n'.join(cmdres.output.splitlines()[-30:])
    return {'error': f'no result (rc={cmdres.rc}): {tail}'}


class Progress(threading.Thread):
    """Echo the guest's `bench:` lines while it runs (from the run dir)."""

    def __init__(self, runs):
        super().__init__(daemon=True)
        self.runs, self.stop, self.seen = runs, threading.Event(), {}

    def run(self):
        while not self.stop.wait(2):
            self.poll()

    def poll(self):
        out = self.runs / 'last' / 'out'
        try:
            files = sorted(out.glob('*.out'))
        except OSError:
            return
        for f in files:
            try:
                lines = f.read_text(errors='replace').splitlines()
            except OSError:
                continue
            key = str(f.resolve())
            for line in lines[self.seen.get(key, 0):]:
                if line.startswith('bench:'):
                    print(line, file=sys.stderr, flush=True)
            self.seen[key] = len(lines)


def boot(flavour, commands, timeout, mem='1G', hold=False, qemu_args=()):
    """Run commands in one boot; {name: parsed result}, plus '_vm' facts.
    The module's load patches kernel text as on a server unless @hold (the
    trace events held on, as in make check: harness.run_vm)."""
    runs = Path(os.environ['CGE_RUNS'])
    prog = Progress(runs)
    prog.start()
    t0 = time.monotonic()
    try:
        # the plain model: the committed figures were measured on it
        res = harness.run_vm(flavour, commands, timeout=timeout, mem=mem,
                             cpu_flags='', hold_tracepoints=hold,
                             qemu_args=qemu_args)
        err = None
    except harness.VMError as e:
        res, err = e.result, str(e).splitlines()[0]
    finally:
        prog.stop.set()
        prog.join()
        prog.poll()
    out = {'_vm': {'flavour': flavour, 'seconds': round(time.monotonic() - t0),
                   'error': err}}
    if res is not None:
        out['_vm'].update(kver=res.kver, boot_s=res.boot_time,
                          rundir=str(res.rundir))
        for r in res.results:
            out[r.name] = (guest_result(r) if r.rc is not None else
                           {'error': 'did not finish (VM error or timeout)'})
    return out


def run_local(commands):
    """Run the sections on this machine (bench.py --local), in order."""
    out = {'_vm': {'flavour': 'local', 'kver': os.uname().release,
                   'error': None}}
    for name, cmd in commands.items():
        log(f'local: {name}')
        p = subprocess.Popen(cmd, shell=True, cwd=REPO, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        lines = []
        for line in p.stdout:
            lines.append(line.rstrip('\n'))
            if line.startswith('bench:'):
                print(line, end='', file=sys.stderr, flush=True)
        p.wait()
        out[name] = guest_result(harness.CommandResult(
            name, cmd, p.returncode, '\n'.join(lines)))
    return out


# ---------------------------------------------------------------- summary

def host_facts():
    cpu = ''
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    return {'cpu': cpu, 'cpus': os.cpu_count(), 'machine': platform.machine(),
            'loadavg': os.getloadavg()}


def git_facts():
    def git(*a):
        r = subprocess.run(['git', '-C', str(REPO), *a], capture_output=True,
                           text=True)
        return r.stdout.strip() if r.returncode == 0 else None
    dirty = git('status', '--porcelain', '--', 'kmod', 'include', 'Kbuild')
    t = treeinfo.tree_info()
    return {'commit': git('rev-parse', 'HEAD'),
            'module_sources_modified': bool(dirty),
            'clean': t['clean'], 'kmod_tree': t['kmod_tree']}


def r3(x, n=3):
    return None if x is None else round(x, n)


def summarize(raw, static):
    """The figures that go into latest.json, from the sections' results."""
    s = {}
    tp = raw.get('throughput', {})
    pipe = tp.get('bench', {}).get('pipe', {})
    s['module_ratio'] = r3(pipe.get('summary', {}).get('B', {}).get('median'))
    s['ebpf_ratio'] = r3(pipe.get('summary', {}).get('C', {}).get('median'))
    ci = pipe.get('summary', {}).get('B', {}).get('ci95')
    s['module_ratio_ci95'] = [r3(x) for x in ci] if ci else None
    # the CI's larger half over the median, unrounded, where a target was
    # asked for (guest_bench.alternate())
    s['module_ratio_ci_half'] = (pipe.get('ci_half_width_b')
                                 if pipe.get('ci_target') else None)
    ci = pipe.get('summary', {}).get('C', {}).get('ci95')
    s['ebpf_ratio_ci95'] = [r3(x) for x in ci] if ci else None
    st = raw.get('selftime', {})
    ns = st.get('pipe', {}).get('median')
    s['ns_per_switch'] = ns
    s['probe_share'] = (st.get('pipe_share') or {}).get('median')
    clock = (st.get('clock') or {}).get('pair_ns_mean')
    s['clock_pair_ns'] = r3(clock, 1)
    s['ns_per_switch_net'] = (r3(max(0.0, ns - clock), 1)
                              if ns is not None and clock is not None else None)
    eb = raw.get('ebpfcost', {})
    s['ebpf_ns_per_call'] = r3(eb.get('ns_mean'), 1)
    s['ebpf_ns_per_call_net'] = (r3(max(0.0, eb['ns_mean'] - clock), 1)
                                 if eb.get('ns_mean') is not None
                                 and clock is not None else None)
    sm = raw.get('sampler', {})
    rows = [r for r in sm.get('counts', []) if not r.get('error')]
    big = max(rows, key=lambda r: r['cgroups']) if rows else None
    if big and big.get('records'):
        s['bytes_per_cgroup'] = round(big['record_bytes'] / big['records'])
        s['slab_bytes_per_cgroup'] = big.get('slab', {}).get('slab_size')
    else:
        s['bytes_per_cgroup'] = static['structs'].get('cge_rec')
        s['slab_bytes_per_cgroup'] = None
    s['bytes_per_cpu'] = static['structs'].get('cge_cpu')
    # the sampler's scratch arrays, per record charged in an interval:
    # record pointer, weight, share (8 B each), struct cge_delta, cge_acc;
    # an ancestor of charged records has a slot in rollup.c too (struct
    # cge_roll), a charged record without charged children none
    st = static['structs']
    need = ('cge_delta', 'cge_acc')
    s['sampler_scratch_bytes_per_active_cgroup'] = (
        3 * 8 + sum(st[k] for k in need)) \
        if all(k in st for k in need) else None
    s['fixed_bytes'] = {k: v for k, v in static['symbols'].items()
                        if k in ('cge_hash', 'cge_cs', 'cge_gone_ring')}
    s['module_bytes'] = sm.get('module_bytes')
    s['poller'] = [{'procs': r['procs'], 'cgroups': r['cgroups'],
                    'poll_ms': r3(r['poll_ms']['median'], 1),
                    'poller_ms_per_s': r3(r['per_s_ms']['median'], 2),
                    'sampler_ms_per_s': r3(r['module']['us_per_s'] / 1000,
                                           2)}
                   for r in raw.get('poller', {}).get('counts', [])
                   if not r.get('error')]
    s['poller_short_tasks'] = raw.get('poller', {}).get('short_tasks')
    cy = raw.get('cyclictest', {})
    s['cyclictest_us'] = {st: {'samples': cy[st]['samples'],
                               'overflows': cy[st]['overflows'],
                               'max': cy[st]['max_us'],
                               **{f'p{k}': v for k, v in
                                  cy[st]['pct_us'].items()}}
                          for st in ('A', 'B')
                          if 'pct_us' in cy.get(st, {})}
    s['migrate'] = migrate_figures(raw.get('migrate', {}))
    s['pipe_ipis_per_s'] = {
        k: [r3(sp['median'], 1) for sp in v]
        for k, v in (pipe.get('ipis_by_state') or {}).items() if v}
    return s


def run_insns(ko):
    """The insns section: a boot of FLAVOUR under QEMU's insncount plugin
    (bench/insns.py), the module and the eBPF peer attached together."""
    try:
        plugin = insns.build_plugin()
    except (insns.InsnsError, OSError) as e:
        return {'error': f'the insncount plugin: {e}'}
    with tempfile.TemporaryDirectory(prefix='cge-insns-') as d:
        out = Path(d) / 'counts.txt'
        # the trace events held on: the module's and bpftrace's attach
        # patch no kernel text (docs/testing.md), and the held events'
        # probes run in the kernel's text, which the plugin does not count
        r = boot(FLAVOUR, {'insns': guest('insns', ko=ko, bt=PEER)}, 900,
                 hold=True, qemu_args=insns.qemu_args(plugin, out))
        res = r.get('insns') or {'error': r['_vm']['error']}
        if res.get('error'):
            return res
        if not out.exists():
            return {'error': 'QEMU exited without the plugin\'s counts'}
        counts, untracked = insns.read_counts(out.read_text())
    try:
        return insns.figures(res, counts, untracked, insns.call_graph(ko))
    except insns.InsnsError as e:
        return {'error': str(e)}


def insns_rows(ic):
    """The insns section's rows of the main table."""
    if not ic:
        return []
    if ic.get('error'):
        return [f'| instructions per switch (QEMU count) | error: '
                f'{ic["error"][:200]} | |']
    return [
        f'| probe, instructions per call (QEMU count; {ic["probe_calls"]:,} '
        f'calls): its own / with {", ".join(ic["probe_path"][1:])} | '
        f'{fmt(ic["probe_insns_per_call"], 1)} / '
        f'{fmt(ic["probe_path_insns_per_call"], 1)} | |',
        f'| probe, kernel functions it calls (instructions not counted) | '
        f'{", ".join(ic["probe_kernel_calls"])} | |',
        f'| eBPF peer program, instructions per call (QEMU count; '
        f'{fmt(ic["peer_calls"])} calls, bpf_stats {fmt(ic["peer_runs_by_fdinfo"])}'
        f'; its helpers not counted) | {fmt(ic["peer_insns_per_call"], 1)} | |']


def ipi_rows(tp):
    """Table rows: IPIs a second (CAL + RES, /proc/interrupts) per CPU
    during the pipe runs, median over the runs of each state."""
    st = ((tp.get('bench') or {}).get('pipe') or {}).get('ipis_by_state')
    if not st or not st.get('A'):
        return []
    names = {'A': 'without', 'B': 'cgroup_energy', 'C': 'eBPF peer',
             'D': 'cgroup_energy, sampler every 10 s'}

    def cpus(sps):
        return ' / '.join(f'{sp["median"]:.0f} ({sp["min"]:.0f}-'
                          f'{sp["max"]:.0f})' for sp in sps)
    return [f'| pipe: IPIs a second (CAL + RES), '
            f'{" / ".join(f"CPU {c}" for c in range(len(sps)))}: '
            f'{names.get(s, s)} | {cpus(sps)} | |'
            for s, sps in st.items() if sps]


def migrate_figures(mg):
    """Per cgroup depth: migrations per second without the module (A),
    with it (B), with the tracefs event alone (T) and, if run, with it
    filtered out (F), medians; the ratios to A with their 95 % CIs."""
    out = {}
    for depth, dep in mg.get('depths', {}).items():
        f = {f'{x}_per_s': r3(sp.get('median'), 0)
             for x, sp in dep['by_state'].items()}
        for x, key in (('B', 'module'), ('T', 'tracefs'),
                       ('F', 'tracefs_filtered')):
            if x not in dep['summary']:
                continue
            sp = dep['summary'][x]
            f[f'{key}_ratio'] = r3(sp.get('median'))
            f[f'{key}_ratio_ci95'] = ([r3(c) for c in sp['ci95']]
                                      if sp.get('ci95') else None)
        out[depth] = f
    return out


def targets(s, local=False):
    def t(value, target, ok):
        return {'value': value, 'target': target,
                'met': None if value is None else ok(value)}
    ci = s.get('module_ratio_ci95')
    out = {
        'module_ratio': t(s['module_ratio'], f'>= {TARGET_RATIO}',
                          lambda v: v >= TARGET_RATIO),
        'bytes_per_cgroup': t(s['bytes_per_cgroup'],
                              f'<= {TARGET_CGROUP_BYTES}',
                              lambda v: v <= TARGET_CGROUP_BYTES),
        'bytes_per_cpu': t(s['bytes_per_cpu'], f'<= {TARGET_CPU_BYTES}',
                           lambda v: v <= TARGET_CPU_BYTES),
    }
    if ci:
        out['module_ratio']['note'] = (
            f'95 % CI of the median {ci[0]:.3f}–{ci[1]:.3f}: '
            + ('the target is inside it, so this run cannot tell'
               if ci[0] < TARGET_RATIO <= ci[1] else
               'the target is outside it'))
    hw = s.get('module_ratio_ci_half')
    if hw is not None:
        out['module_ratio_ci'] = t(round(100 * hw, 2),
                                   f'<= {100 * CI_TARGET} % of the median',
                                   lambda v: v <= 100 * CI_TARGET)
        out['module_ratio_ci']['note'] = ('the 95 % CI\'s larger half '
                                          'over the median, in %')
    if local:
        out['ns_per_switch'] = t(s['ns_per_switch_net'],
                                 f'<= {TARGET_NS_BARE_METAL} on bare metal',
                                 lambda v: v <= TARGET_NS_BARE_METAL)
        out['ns_per_switch']['note'] = ('net of the clock pair; judged as '
                                        'if this machine were bare metal')
    else:
        out['ns_per_switch'] = {
            'value': s['ns_per_switch_net'],
            'target': f'<= {TARGET_NS_BARE_METAL} on bare metal', 'met': None,
            'note': 'TCG guest: emulation inflates every ns, not comparable; '
                    'see docs/overhead.md'}
    return out


def fmt(x, nd=3):
    if x is None:
        return 'n/a'
    if isinstance(x, float):
        return f'{x:.{nd}f}'
    return str(x)


def spread_txt(sp, nd=3):
    if not sp or sp.get('median') is None:
        return 'n/a'
    ci = sp.get('ci95')
    return (f'{fmt(sp["median"], nd)} ({fmt(sp["min"], nd)}–'
            f'{fmt(sp["max"], nd)}, n={sp["n"]}'
            + (f'; 95 % CI {fmt(ci[0], nd)}–{fmt(ci[1], nd)}' if ci else '')
            + ')')


def migrate_rows(mg):
    """The migrate section's rows of the main table."""
    L = []
    for depth, dep in mg.get('depths', {}).items():
        sm, st = dep['summary'], dep['by_state']
        L += [f'| cgroup migrations, depth {depth}: cgroup_energy B/A | '
              f'{spread_txt(sm.get("B"))} | |',
              f'| cgroup migrations, depth {depth}: tracefs event alone, no '
              f'module, T/A (diagnostic) | {spread_txt(sm.get("T"))} | |']
        if 'F' in sm:
            L.append(f'| cgroup migrations, depth {depth}: tracefs event, '
                     f'every event filtered out, F/A (diagnostic: the path '
                     f'formatting) | {spread_txt(sm["F"])} | |')
        L.append(f'| cgroup migrations, depth {depth}: per second '
                 f'{" / ".join(st)} (medians) | '
                 + ' / '.join(fmt(x['median'], 0) for x in st.values())
                 + ' | |')
    err = mg.get('error') or '; '.join(mg.get('errors', []))
    if err:
        L.append(f'| cgroup migrations | error: {err[:200]} | |')
    return L


def run_rows(name, b):
    """How a workload's runs went: the warm-up, and for the pipe the B
    runs its first ratios' CI asked for (guest_bench.alternate())."""
    L = []
    wu = b.get('warmup')
    if wu:
        L.append(f'| {name}: warm-up runs (uncounted; until the last '
                 f'{wu["runs"]} lie within {wu["spread"]:.0%} of each '
                 f'other) | {len(wu["values"])}'
                 + {None: ' (a fixed count)', True: ', settled',
                    False: ', not settled'}[wu['settled']] + ' | |')
    if b.get('ci_target'):
        def pct(x):
            return 'none' if x is None else f'{x:.2%}'
        nb = b['sequence'].count('B')
        first = nb - (len(b['sequence']) - b['planned_runs']) // 2
        L.append(f'| {name}: B/A\'s 95 % CI, larger half over the median: '
                 f'after the {first} scheduled B runs; after all '
                 f'(B runs wanted for {b["ci_target"]:.1%}, run) | '
                 f'{pct(b.get("ci_half_width_b_first"))}; '
                 f'{pct(b.get("ci_half_width_b"))} '
                 f'({b.get("b_runs_wanted") or first}, {nb}'
                 + (', the time budget cut it' if b.get('stopped_early')
                    else '') + ') | '
                 f'<= {b["ci_target"]:.1%} |')
    return L


def markdown(d):
    s, raw = d, d['raw']
    if d.get('local'):
        where = (f'This machine (bench.py --local): kernel '
                 f'{d["guest"].get("kver", "?")}, {d["host"]["cpu"]}, '
                 f'{d["host"]["cpus"]} CPUs (load average '
                 f'{d["host"]["loadavg"][0]:.1f} at the start); benchmarks '
                 'pinned to CPU 0. Commit ')
    else:
        where = (f'Guest: Debian {d["guest"].get("kver", "?")} under QEMU '
                 f'TCG, {d["guest"].get("cpus", "?")} vCPUs; benchmarks '
                 f'pinned to CPU 0. Host: {d["host"]["cpu"]}, '
                 f'{d["host"]["cpus"]} CPUs (shared; load average '
                 f'{d["host"]["loadavg"][0]:.1f} at the start). Commit ')
    L = [f'# make bench: results ({d["date"]})', '',
         where +
         f'{(d["git"]["commit"] or "?")[:12]}'
         + (' (module sources modified)' if d['git']['module_sources_modified']
            else '') + '.', '',
         ('' if d.get('local') else
          'TCG figures are relative: compare ratios, not absolute times. ')
         + 'Ratios are throughput with / without: the median of the '
         'pairwise ratios of adjacent runs (min–max, number of pairs, and '
         'the 95 % confidence interval of the median).', '',
         '| measure | value | target |', '|---|---|---|']
    tp = raw.get('throughput', {}).get('bench', {})
    for name in ('pipe', 'hackbench'):
        b = tp.get(name)
        if not b:
            continue
        L.append(f'| {name}: cgroup_energy B/A | {spread_txt(b["summary"].get("B"))} '
                 f'| {">= 0.97" if name == "pipe" else ""} |')
        L += run_rows(name, b)
        if 'C' in b['summary']:
            L.append(f'| {name}: eBPF peer (bpftrace) C/A | '
                     f'{spread_txt(b["summary"].get("C"))} | |')
        if 'D' in b['summary']:
            L.append(f'| {name}: cgroup_energy, sampler every 10 s, D/A '
                     f'(diagnostic) | {spread_txt(b["summary"].get("D"))} | |')
    if raw.get('throughput', {}).get('error'):
        L.append(f'| throughput | error: {raw["throughput"]["error"][:200]} | |')
    L += ipi_rows(raw.get('throughput', {}))
    L += migrate_rows(raw.get('migrate', {}))
    L += insns_rows(raw.get('insns'))
    peer_err = [e for e in raw.get('throughput', {}).get('errors', [])
                if 'bpftrace' in e or 'eBPF' in e]
    if peer_err:
        L.append(f'| eBPF peer | {len(peer_err)} errors, first: '
                 f'{peer_err[0][:160]} | |')
    L.append(f'| probe, self-timed, ns per switch (raw) | '
             f'{spread_txt(raw.get("selftime", {}).get("pipe"), 0)} | |')
    L.append(f'| share of the pipe benchmark\'s time in the probe '
             f'(self-timed ns x switches/s) | '
             f'{fmt(s.get("probe_share") and 100 * s["probe_share"], 2)} % | |')
    L.append(f'| local_clock() pair (timing overhead in the raw figure) | '
             f'{fmt(s["clock_pair_ns"], 1)} ns | |')
    L.append(f'| probe, ns per switch, net of the clock pair | '
             f'{fmt(s["ns_per_switch_net"], 1)} | <= 50 on bare metal |')
    L.append(f'| eBPF peer program, ns per call (bpf_stats, raw / net) | '
             f'{fmt(s["ebpf_ns_per_call"], 1)} / '
             f'{fmt(s["ebpf_ns_per_call_net"], 1)} | |')
    L.append(f'| memory per tracked cgroup (record) | '
             f'{fmt(s["bytes_per_cgroup"])} B (slab object '
             f'{fmt(s["slab_bytes_per_cgroup"])} B) | <= 256 B |')
    L.append(f'| memory per CPU (struct cge_cpu) | {fmt(s["bytes_per_cpu"])} B '
             f'| <= 4096 B |')
    fx = s.get('fixed_bytes') or {}
    L.append(f'| fixed: hash table / sampler scratch / removed-cgroup '
             f'ring / module size | {fmt(fx.get("cge_hash"))} / '
             f'{fmt(fx.get("cge_cs"))} / {fmt(fx.get("cge_gone_ring"))} / '
             f'{fmt(s.get("module_bytes"))} B | |')
    L.append(f'| sampler scratch per active cgroup (kvmalloc, kept) | '
             f'{fmt(s["sampler_scratch_bytes_per_active_cgroup"])} B | |')
    counts = raw.get('sampler', {}).get('counts', [])
    L += [] if not counts else ['', '## Sampler cost per interval', '',
          'µs per sample, from ftrace (function_graph) on `cge_sample_fn`: '
          'median / min over the samples; idle = the cgroups exist but '
          'their tasks sleep, active = every one of them ran in the '
          'interval. *work* is the sample without the drains and the '
          'reaper pass: what grows with active cgroups. *drain* is the '
          'time in the CPUs\' drains (cge_cpu_drain(), from the sampler\'s '
          'CPU, under each CPU\'s lock). *reap* is the once-a-second pass '
          'over the records of removed cgroups. *reap, flood* is that '
          'pass while another process makes and removes empty cgroups as '
          'fast as it can (removals a second in brackets): none of them '
          'has a record, so they must not make the pass grow: its cost '
          'follows the removals of cgroups with records. '
          'Probe ns: the self-timed probe while those cgroups run. '
          '*unowned* is the active samples again with `unowned=weight` and '
          'the cpu controller on every one of those cgroups: the share of '
          'the energy no task drew (`cge_unowned_share()`, a cpu.weight '
          'read per cgroup), and the whole sample with it; *cpuset* the '
          'same with `unowned=cpuset` and an empty partition that owns the '
          'last CPU (each CPU\'s time kept apart, a second walk).', '',
          '| cgroups | records | B/record | interval | idle: total | '
          'idle: work | active: total | active: work | drain | reap | '
          'reap, flood | probe ns | cache overflows | unowned: share | '
          'unowned: total | cpuset: share | cpuset: total |',
          '|' + '---|' * 17]

    def mm(x):
        if not x or x.get('median') is None:
            return 'n/a'
        return f'{x["median"]:.0f} / {x["min"]:.0f}'

    def flood(f):
        if not f:
            return 'n/a'
        if f.get('error'):
            return f'error: {f["error"][:100]}'
        x = f['reap']
        if x.get('median') is None:
            return 'n/a'
        return (f'{x["median"]:.1f} / {x["min"]:.1f} '
                f'({fmt(f["removed_per_s"])}/s)')

    for r in counts:
        if r.get('error'):
            L.append(f'| {r["cgroups"]} | error: {r["error"][:200]} |'
                     + ' |' * 15)
            continue
        bpr = (round(r['record_bytes'] / r['records']) if r.get('records')
               else None)
        probe = r.get('probe') or {}
        un = r.get('active_unowned') or {}
        cs = r.get('active_cpuset') or {}
        L.append(f'| {r["cgroups"]} | {r["records"]} | {fmt(bpr)} | '
                 f'{r["interval_ms"]} ms | {mm(r["idle"]["total"])} | '
                 f'{mm(r["idle"]["work"])} | {mm(r["active"]["total"])} | '
                 f'{mm(r["active"]["work"])} | {mm(r["active"]["drain"])} | '
                 f'{mm(r["active"]["reap"])} | {flood(r.get("flood"))} | '
                 f'{fmt(probe.get("ns"), 0)} | '
                 f'{r.get("cache_overflows", "n/a")} | '
                 f'{mm(un.get("unowned"))} | {mm(un.get("total"))} | '
                 f'{mm(cs.get("unowned"))} | {mm(cs.get("total"))} |')
    if raw.get('sampler', {}).get('error'):
        L.append(f'\nsampler: error: {raw["sampler"]["error"][:300]}')
    L += records_md(raw.get('records', {}))
    L += poller_md(raw.get('poller', {}))
    L += cyclictest_md(raw.get('cyclictest', {}), d.get('rt_kver'))
    L += ['', '## Targets', '']
    for k, t in d['targets'].items():
        met = {True: 'met', False: 'MISSED', None: 'not judged'}[t['met']]
        L.append(f'- {k}: {fmt(t["value"])} (target {t["target"]}): {met}'
                 + (f' — {t["note"]}' if t.get('note') else ''))
    L += ['', f'Run time: {d["seconds"]} s.', '']
    return '\n'.join(L)


def records_md(rc):
    """The records section: records of cgroups that ran once and sleep, the
    sample and the reaper's pass with them, and their removal all at once."""
    if rc.get('error'):
        return ['', f'records: error: {rc["error"][:300]}']
    if not rc.get('counts'):
        return []

    def us(x):
        if not x or x.get('median') is None:
            return 'n/a'
        return f'{x["median"]:.1f} / {x["max"]:.1f}'

    L = ['', '## Records of cgroups that ran once', '',
         'One process moves itself through every cgroup until each has a '
         'record, then sleeps (interval 1 s). µs, median / max: the idle '
         'sample (ftrace, as above), the reaper\'s pass during the removal '
         'flood (removals a second in brackets), and its passes after every '
         'one of the cgroups is removed at once, until their records are '
         'freed (each pass under cge_lock).', '',
         '| cgroups | records | B/record | made in | idle sample | '
         'reap, flood | removal: passes | removal: pass | records left | '
         'rmdir and freed in |', '|' + '---|' * 10]
    for r in rc['counts']:
        if r.get('error'):
            L.append(f'| {r["cgroups"]} | error: {r["error"][:200]} |'
                     + ' |' * 8)
            continue
        f, rm = r.get('flood') or {}, r.get('removal') or {}
        bpr = (round(r['record_bytes'] / r['records']) if r.get('records')
               else None)
        fl = (f'error: {f["error"][:100]}' if f.get('error') else
              f'{us(f.get("reap"))} ({fmt(f.get("removed_per_s"))}/s)')
        L.append(f'| {fmt(r["cgroups"])} | {fmt(r["records"])} | {fmt(bpr)} '
                 f'| {r["ramp_s"]} s | {us(r["idle"]["total"])} | {fl} | '
                 f'{len(rm.get("passes", []))} | {us(rm.get("reap"))} | '
                 f'{rm.get("records_left", "n/a")} | '
                 f'{rm.get("seconds", "n/a")} s |')
    return L


def poller_md(po):
    """The /proc poller section: its CPU per poll and per second beside the
    module's sampler, and the short tasks between two polls."""
    if po.get('error'):
        return ['', f'poller: error: {po["error"][:300]}']
    if not po.get('counts'):
        return []
    iv = po['interval_ms'] / 1000
    L = ['', f'## The /proc poller peer (Kepler 0.10+), every {iv:g} s', '',
         '`bench/procpoll`: each poll lists /proc and reads every '
         'process\'s stat (utime + stime), comm and exe link when it ran, '
         'cgroup and cmdline when first seen, and sums the time per cgroup '
         '(docs/overhead.md). CPU: the poller\'s thread CPU clock per poll '
         f'(median, min–max over {po["polls"] - 1} polls after the first; '
         'the first reads every process as new); /proc/<pid>/stat: its '
         'utime + stime over those polls, read by the driver. Sampler: '
         'cgroup_energy\'s, every 100 ms, in the same state, from ftrace '
         '(µs per sample, median, and µs of sampler per second). '
         'The processes sleep: they cost the module\'s probe nothing.', '',
         '| processes / cgroups | poller: first poll | poller: CPU per poll '
         '| mean per poll, /proc/<pid>/stat | poller: CPU per second | '
         'sampler: µs per sample | sampler: CPU per second |',
         '|' + '---|' * 7]
    for r in po['counts']:
        if r.get('error'):
            L.append(f'| {r["procs"]} / {r["cgroups"]} | error: '
                     f'{r["error"][:200]} |' + ' |' * 5)
            continue
        m = r['module']
        L.append(f'| {r["seen_procs"]} / {r["seen_cgroups"]} '
                 f'({r["procs"]} / {r["cgroups"]} of procload) | '
                 f'{r["first_poll_ms"]:.1f} ms | '
                 f'{spread_txt(r["poll_ms"], 1)} ms | '
                 f'{r["stat_ms_per_poll"]:.0f} ms | '
                 f'{r["per_s_ms"]["median"]:.2f} ms/s | '
                 f'{spread_txt(m["us_per_sample"], 0)} | '
                 f'{m["us_per_s"] / 1000:.2f} ms/s |')
    b = po.get('short_tasks') or {}
    if b:
        L += ['', f'Short tasks: {b["tasks"]} processes, each busy '
              f'{b["task_ms"]} ms of CPU, one after the other in one cgroup, '
              f'started after one poll; all gone before the next: '
              f'{"yes" if b["between_polls"] else "NO"} (in {b["burst_s"]} '
              f's). The kernel\'s cpu.stat usage_usec of the cgroup grew by '
              f'{b["cpu_stat_ms"]:.0f} ms; the poller charged it '
              f'{b["poller_ms"]:.0f} ms in the next poll (all cgroups: '
              f'{b["poller_all_ms"]:.0f} ms).']
    return L


def pct_txt(v):
    """A percentile from guest_bench.hist_percentiles(): µs, or a lower
    bound when it falls in the histogram's overflow."""
    if isinstance(v, dict):
        return f'≥ {v["above"]}'
    return fmt(v)


def cyclictest_md(cy, rt_kver):
    """The cyclictest section: per state, the percentiles of the runs'
    histograms added up, then each run's."""
    if cy.get('error'):
        return ['', f'cyclictest: error: {cy["error"][:300]}']
    if not cy.get('runs') or 'pct_us' not in cy.get('A', {}):
        return []
    name = {'A': 'without the module', 'B': 'with the module'}

    def row(label, r):
        p = r['pct_us']
        return (f'| {label} | {r["samples"]} | {r["overflows"]} | '
                + ' | '.join(pct_txt(p[k]) for k in ('50', '99', '99.9'))
                + f' | {fmt(r["max_us"])} |')

    L = ['', f'## cyclictest on {rt_kver or "6.1-rt"} (µs; load: '
         f'{cy.get("load")}; reported, not asserted)', '',
         f'Percentiles of the runs\' histograms added up (1 µs buckets), '
         f'every run counted: a latency of {cy["hist_us"]} µs or more is an '
         f'overflow, so a percentile that falls among the overflows is '
         f'shown as a lower bound (≥). Max: cyclictest\'s own, exact.', '',
         '| | samples | overflows | p50 | p99 | p99.9 | max |',
         '|---|---|---|---|---|---|---|']
    L += [row(f'{name[s]}, {cy[s]["runs"]} runs pooled', cy[s])
          for s in ('A', 'B')]
    L += [row(f'run {i + 1} ({r["state"]})', r)
          for i, r in enumerate(cy['runs'])]
    return L


# ------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--pairs-b', type=int, default=40,
                    help='pipe: pairs B/A, cgroup_energy, at least '
                    '(default 40)')
    ap.add_argument('--pairs-b-max', type=int, default=240,
                    help='pipe: after --pairs-b, as many B and A runs as '
                    'their spread says B/A\'s CI needs to come within '
                    f'{CI_TARGET * 100:.1f} %% of its median (no second look), at '
                    'most this many B runs (default 240; 0: --pairs-b only)')
    ap.add_argument('--warmup-max', type=int, default=12,
                    help='uncounted runs before each workload: three at '
                    'least, then on until the last three settle, at most '
                    'this many (default 12)')
    ap.add_argument('--pairs-c', type=int, default=12,
                    help='pipe: pairs C/A, eBPF peer (default 12)')
    ap.add_argument('--pairs-d', type=int, default=12,
                    help='pipe: pairs D/A, the module with its sampler '
                    'slowed to every 10 s (diagnostic; default 12, 0: none)')
    ap.add_argument('--hb-pairs-b', type=int, default=12,
                    help='hackbench: pairs B/A (default 12)')
    ap.add_argument('--hb-pairs-c', type=int, default=10,
                    help='hackbench: pairs C/A (default 10)')
    ap.add_argument('--mig-pairs-b', type=int, default=10,
                    help='migrate: pairs B/A, cgroup_energy (default 10)')
    ap.add_argument('--mig-pairs-t', type=int, default=10,
                    help='migrate: pairs T/A, the tracefs event alone '
                    '(diagnostic; default 10)')
    ap.add_argument('--mig-pairs-f', type=int, default=0,
                    help='migrate: pairs F/A, the tracefs event with every '
                    'event filtered out (diagnostic; default 0: none)')
    ap.add_argument('--mig-hops', type=int, default=6000,
                    help='migrate: migrations per timed loop (default 6000)')
    ap.add_argument('--budget', type=int, default=1200,
                    help='seconds for the throughput runs (the pipe\'s, '
                    'added ones included, 0.6 of it): past it, stop at the '
                    'next block once every ratio has 10 pairs')
    ap.add_argument('--only', default=','.join(SECTIONS),
                    help='sections to run (default: all): ' + ','.join(SECTIONS))
    ap.add_argument('--no-rt', action='store_true', help='skip cyclictest')
    ap.add_argument('--record-counts', default='100000',
                    help='records section: cgroups, comma-separated')
    ap.add_argument('--records-mem', default='4G',
                    help='guest memory of the records section\'s own boot '
                    '(100,000 cgroups do not fit in 2G)')
    ap.add_argument('--counts', default='10,1000,10000',
                    help='cgroup counts for the sampler and memory figures')
    ap.add_argument('--out', type=Path, help='results directory (default '
                    'bench/results; files latest.* in a VM, local.* with '
                    '--local)')
    ap.add_argument('--timeout', type=int, default=2400,
                    help='seconds per VM boot')
    ap.add_argument('--mem', default='2G',
                    help="the guest's memory (QEMU -m; default 2G: 10,000 "
                    "cgroups of cgload fit)")
    ap.add_argument('--record-baseline', action='store_true',
                    help=f'record this host class\'s baseline in '
                    f'{BASELINE.relative_to(REPO)}: {BASELINE_RUNS} boots of '
                    'the bench guard\'s short version, after this run')
    ap.add_argument('--why', help='with --record-baseline: why it is '
                    'recorded (kept in the file, and said in the commit)')
    ap.add_argument('--replace-baseline', action='store_true',
                    help='with --record-baseline: replace the class\'s '
                    'baseline if it has one')
    ap.add_argument('--local', action='store_true',
                    help='run on this machine, as root, with a module built '
                    'against KDIR (default: the running kernel\'s headers): '
                    'it is loaded and unloaded many times')
    ap.add_argument('--kdir', type=Path, default=Path(
        f'/lib/modules/{os.uname().release}/build'),
        help='kernel build tree for --local')
    ap.add_argument('--pipe-loops', type=int,
                    help='perf bench sched pipe -l (default 5000 in a VM, '
                    '200000 with --local)')
    ap.add_argument('--hb-loops', type=int,
                    help='hackbench -l (default 50 in a VM, 2000 with --local)')
    a = ap.parse_args(argv)
    only = set(a.only.split(','))
    if a.no_rt:
        only.discard('cyclictest')
    if min(a.pairs_b, a.pairs_c, a.hb_pairs_b, a.hb_pairs_c, a.mig_pairs_b,
           a.mig_pairs_t, a.mig_pairs_f or 10) < 10:
        ap.error('pairs: at least 10 for every ratio')
    if (a.why or a.replace_baseline) and not a.record_baseline:
        ap.error('--why and --replace-baseline go with --record-baseline')
    if a.record_baseline and not (a.why or '').strip():
        ap.error('--record-baseline: say why, with --why')
    if a.record_baseline and not a.replace_baseline:
        try:
            baseline()
            ap.error(f'{BASELINE.relative_to(REPO)} has a baseline for '
                     f'{host_class()}: replacing it takes --replace-baseline')
        except BaselineError:
            pass
    if a.local and a.record_baseline:
        ap.error('--record-baseline boots the guest of make check: not with '
                 '--local')
    if a.local and os.geteuid() != 0:
        ap.error('--local loads modules: run as root')
    if a.local and not a.kdir.is_dir():
        ap.error(f'no kernel build tree at {a.kdir}: apt-get install '
                 f'linux-headers-{os.uname().release}, or --kdir')
    loops = {'pipe_loops': a.pipe_loops or (200000 if a.local else None),
             'hb_loops': a.hb_loops or (2000 if a.local else None)}
    out_dir = a.out or RESULTS
    stem = 'local' if a.local else 'latest'
    if not a.local and str(REPO).startswith(('/tmp/', '/run/')):
        ap.error(f'{REPO}: the guest mounts its own /tmp and /run, so it '
                 'cannot see a clone there; clone elsewhere (e.g. /var/tmp)')
    t0 = time.monotonic()
    if not a.local and subprocess.run(['sh', str(REPO / 'tests/deps.sh')]
                                      ).returncode:
        log('missing packages (run as root, or see tests/deps.sh)')
        return 1
    os.environ.setdefault('CGE_RUNS', str(REPO / '.build' / 'bench-runs'))
    host = host_facts()
    log(f'host: {host["cpu"]}, {host["cpus"]} CPUs, load {host["loadavg"]}')

    if a.local:
        lb = REPO / '.build' / 'local'
        ko = make_module(a.kdir, MODULE_SRCS, lb / 'module')
        selfko = build_selftime(kdir=a.kdir, dst=lb / 'selftime')
        clockcal = make_module(a.kdir, [f'{BENCH / "clockcal"}/'],
                               lb / 'clockcal')
    else:
        ko = build.build_module(FLAVOUR)
        selfko = build_selftime(FLAVOUR)
        clockcal = build_clockcal(FLAVOUR)
    cgload, cghop = build_helper('cgload'), build_helper('cghop')
    static = {'symbols': symbol_sizes(ko), 'structs': struct_sizes(ko),
              'selftime_symbols': symbol_sizes(selfko)}
    log(f'static sizes: {static}')

    cmds = {}
    if 'tools' in only:
        cmds['tools'] = guest('tools')
    if 'throughput' in only:
        cmds['throughput'] = guest('throughput', ko=ko, bt=PEER,
                                   pairs_b=a.pairs_b, pairs_c=a.pairs_c,
                                   pairs_d=a.pairs_d,
                                   hb_pairs_b=a.hb_pairs_b,
                                   hb_pairs_c=a.hb_pairs_c,
                                   pairs_b_max=a.pairs_b_max,
                                   ci_target=(CI_TARGET if a.pairs_b_max
                                              > a.pairs_b else None),
                                   warmup_max=a.warmup_max,
                                   budget=a.budget, **loops)
    if 'selftime' in only:
        cmds['selftime'] = guest('selftime', ko=selfko, clockcal=clockcal,
                                 **loops)
    if 'ebpfcost' in only:
        cmds['ebpfcost'] = guest('ebpfcost', bt=PEER,
                                 pipe_loops=loops['pipe_loops'])
    if 'sampler' in only:
        cmds['sampler'] = guest('sampler', ko=selfko, cgload=cgload,
                                counts=a.counts)
    if 'records' in only and a.local:
        cmds['records'] = guest('records', ko=selfko, counts=a.record_counts)
    if 'poller' in only:
        procpoll = build_helper('procpoll')
        procload = build_helper('procload')
        cmds['poller'] = guest('poller', ko=ko, procpoll=procpoll,
                               procload=procload)
    if 'migrate' in only:
        cmds['migrate'] = guest('migrate', ko=ko, cghop=cghop,
                                hops=a.mig_hops, pairs_b=a.mig_pairs_b,
                                pairs_t=a.mig_pairs_t,
                                pairs_f=a.mig_pairs_f)
    if a.local and 'cyclictest' in only:
        cmds['cyclictest'] = guest('cyclictest', ko=ko)
    raw = {}
    if a.local:
        raw.update(run_local(cmds))
    elif cmds:
        log(f'booting {FLAVOUR}: {", ".join(cmds)}')
        raw.update(boot(FLAVOUR, cmds, a.timeout, mem=a.mem))
    if 'records' in only and not a.local:
        log(f'booting {FLAVOUR} with {a.records_mem}: records')
        rec = boot(FLAVOUR, {'records': guest('records', ko=selfko,
                                              counts=a.record_counts)},
                   a.timeout, mem=a.records_mem)
        raw['records'] = rec.get('records', {'error': rec['_vm']['error']})
        raw['_vm_records'] = rec['_vm']
    if 'insns' in only and not a.local:
        log(f'booting {FLAVOUR} under QEMU\'s insncount plugin: insns')
        raw['insns'] = run_insns(ko)
    rt_kver = None
    if 'cyclictest' in only and not a.local:
        rtko = build.build_module(RT_FLAVOUR)
        log(f'booting {RT_FLAVOUR}: cyclictest')
        rt = boot(RT_FLAVOUR, {'cyclictest': guest('cyclictest', ko=rtko)},
                  a.timeout)
        raw['cyclictest'] = rt.get('cyclictest', {'error': rt['_vm']['error']})
        raw['_vm_rt'] = rt['_vm']
        rt_kver = rt['_vm'].get('kver')
    elif a.local:
        rt_kver = os.uname().release

    s = summarize(raw, static)
    d = {'schema': 1,
         'date': datetime.datetime.now(datetime.timezone.utc)
         .strftime('%Y-%m-%d %H:%M UTC'),
         **s,
         'targets': targets(s, a.local),
         'local': a.local,
         'host': host, 'git': git_facts(),
         'guest': {'kver': raw.get('_vm', {}).get('kver'),
                   'cpus': raw.get('tools', {}).get('cpus'),
                   'tools': raw.get('tools')},
         'rt_kver': rt_kver, 'static': static,
         'seconds': round(time.monotonic() - t0), 'raw': raw}
    # a run of the tools alone (to record a baseline) measured nothing:
    # it leaves the committed results as they are, unless --out says where
    if only - {'tools'} or a.out:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / f'{stem}.json').write_text(
            json.dumps(d, indent=1, sort_keys=True) + '\n')
        md = markdown(d)
        (out_dir / f'{stem}.md').write_text(md)
        print(md)
        log(f'wrote {out_dir / stem}.json and .md in {d["seconds"]} s')
    if a.record_baseline:
        record_baseline(ko, selfko, a.why.strip())
    errors = [k for k, v in raw.items()
              if isinstance(v, dict) and v.get('error')]
    if errors:
        log(f'sections with errors: {", ".join(errors)}')
    return 1 if 'throughput' in errors or 'selftime' in errors else 0


def record_baseline(ko, selfko, why):
    """Boot the short version BASELINE_RUNS times, the bench guard's own
    commands in its conditions (tests/test_bench.py: SHORT's loops and
    pairs, the plain model, the trace events held on), and record them,
    with the limits their spread gives, as this host class's baseline."""
    runs, kver = [], None
    for i in range(BASELINE_RUNS):
        r = boot(FLAVOUR, short_commands(ko, selfko), 600, hold=True)
        tp, st = r.get('throughput', {}), r.get('selftime', {})
        pipe = (tp.get('bench') or {}).get('pipe') or {}
        b = (pipe.get('summary') or {}).get('B')
        ns = (st.get('pipe') or {}).get('median')
        share = (st.get('pipe_share') or {}).get('median')
        if not b or ns is None or share is None:
            raise SystemExit(f'bench: the short version failed: {r["_vm"]}, '
                             f'{tp.get("error")}, {st.get("error")}')
        kver = r['_vm'].get('kver')
        runs.append({'pipe_share': share, 'ns_per_switch': ns,
                     'module_ratio': r3(b['median']),
                     'ratios_B': [r3(x) for x in pipe['ratios']['B']]})
        log(f'baseline run {i + 1} of {BASELINE_RUNS}: share {share:.4f}, '
            f'{ns} ns per switch, B/A {b["median"]:.3f}')
    old = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    doc = {'note': BASELINE_NOTE, 'classes': old.get('classes', {})}
    doc['classes'][host_class()] = {
        'flavour': FLAVOUR, 'kver': kver, 'short': SHORT,
        'hold_tracepoints': True, 'runs': runs,
        'pipe_share': r3(statistics.median(x['pipe_share'] for x in runs), 5),
        'ns_per_switch': statistics.median(x['ns_per_switch'] for x in runs),
        **baseline_limits(runs),
        'recorded': datetime.datetime.now(datetime.timezone.utc)
        .strftime('%Y-%m-%d %H:%M UTC'), 'commit': git_facts()['commit'],
        'why': why}
    BASELINE.write_text(json.dumps(doc, indent=1) + '\n')
    log(f'recorded {host_class()} in {BASELINE}')


if __name__ == '__main__':
    sys.exit(main())
