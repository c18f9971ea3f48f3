# SPDX-License-Identifier: GPL-2.0
"""make bench, the part that runs inside the VM (as root, host root over 9p),
or on the machine itself (bench.py --local).

Each subcommand measures one thing and ends with one line
`BENCH-RESULT <json>`; progress lines start with `bench:`.

  throughput  context-switch throughput (perf bench sched pipe, hackbench):
              no probe (A), cgroup_energy loaded (B), eBPF peer (C) and,
              for the pipe, the module with its sampler slowed down (D), in
              alternation A B A B A C C A D A ... (see schedule()). The
              module is loaded before and unloaded after every B or D run,
              which is divided by the geometric mean of the A runs on either
              side; bpftrace is attached once per C block of two runs, each
              divided by the A run next to it. So slow drifts cancel.
  selftime    the self-timing build (CGE_SELFTIME=y): probe_ns_mean while a
              benchmark runs, and the cost of a local_clock() pair (clockcal)
  ebpfcost    the eBPF peer's own cost per call (kernel.bpf_stats_enabled)
  sampler     sampler cost per interval and memory with N cgroups, idle and
              active (cgload: one thread per cgroup), timed with ftrace
  migrate     cgroup migrations per second (cghop: a process moving itself
              between two cgroups) with no probe (A), cgroup_energy loaded
              and mounted (B), and, as diagnostics, the cgroup_attach_task
              event enabled in tracefs without the module (T), and the same
              with a filter that drops every event (F), alternated as in
              throughput; at cgroup depths 1 and 6
  cyclictest  latency with and without the module under a hackbench load
  poller      the /proc poller peer (bench/procpoll, what Kepler 0.10+
              does every 5 s): its CPU per poll with many sleeping
              processes (bench/procload) beside the module's sampler, and
              the short tasks it misses
  insns       under QEMU's insncount plugin (bench/insncount.c): the
              module and the eBPF peer attached, the pipe benchmark, and
              their symbols, for the instructions each runs per switch
"""
import argparse
import errno
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'tests/vm/guest'))
from common import CG, EN, PARAMS, cpu_usage, info  # noqa: E402

TRACING = Path('/sys/kernel/tracing')
BENCH_CG = CG / 'bench'
MOD = 'cgroup_energy'
BENCH_CPU = 0          # the benchmarks run pinned here
AUX_CPU = 1            # bpftrace's user space and this driver


def log(msg):
    print(f'bench: {msg}', flush=True)


def result(obj):
    print('BENCH-RESULT ' + json.dumps(obj, sort_keys=True), flush=True)


def run(cmd, check=True, timeout=None, **kw):
    p = subprocess.run(cmd, text=True, capture_output=True, timeout=timeout,
                       **kw)
    if check and p.returncode:
        raise RuntimeError(f'{" ".join(map(str, cmd))} failed '
                           f'({p.returncode}): {(p.stdout + p.stderr)[-2000:]}')
    return p


def spread(xs):
    """median, min, max, n of a list of numbers (None if empty)."""
    if not xs:
        return {'median': None, 'min': None, 'max': None, 'n': 0}
    return {'median': statistics.median(xs), 'min': min(xs), 'max': max(xs),
            'n': len(xs)}


def ipi_counts():
    """Function-call and reschedule IPIs received per CPU since boot
    (/proc/interrupts CAL and RES, summed): what the kernel counted, not
    the module."""
    rows = {}
    for line in Path('/proc/interrupts').read_text().splitlines():
        f = line.split()
        if f and f[0] in ('CAL:', 'RES:'):
            rows[f[0]] = [int(x) for x in f[1:] if x.isdigit()]
    if len(rows) != 2:
        raise RuntimeError('no CAL or RES line in /proc/interrupts')
    return [c + r for c, r in zip(rows['CAL:'], rows['RES:'])]


def pin_self():
    if os.cpu_count() and os.cpu_count() > AUX_CPU:
        os.sched_setaffinity(0, {AUX_CPU})


def perf_binary():
    """Debian's /usr/bin/perf is a wrapper that wants perf_<major.minor> on
    older linux-perf packages; newer ones ship the binary as /usr/bin/perf."""
    rel = os.uname().release.split('.')
    for name in (f'perf_{rel[0]}.{rel[1]}', 'perf'):
        p = shutil.which(name)
        if p:
            return p
    raise RuntimeError('perf not found: apt-get install linux-perf')


def into_bench_cgroup():
    """preexec_fn: run the child in /sys/fs/cgroup/bench."""
    (BENCH_CG / 'cgroup.procs').write_text(f'{os.getpid()}\n')


# ---------------------------------------------------------------- workloads

class Workload:
    name = ''

    def cmd(self):
        raise NotImplementedError

    def parse(self, out):
        """Throughput (higher is better) from the command's output."""
        raise NotImplementedError

    def once(self):
        p = run(['taskset', '-c', str(BENCH_CPU), *self.cmd()],
                preexec_fn=into_bench_cgroup, timeout=600)
        return self.parse(p.stdout + p.stderr)


class Pipe(Workload):
    name = 'pipe'

    def __init__(self, loops):
        self.loops = loops
        self.perf = perf_binary()

    def cmd(self):
        return [self.perf, 'bench', 'sched', 'pipe', '-l', str(self.loops)]

    def parse(self, out):
        m = re.search(r'([\d.]+)\s+usecs/op', out)
        if not m:
            raise RuntimeError(f'perf bench sched pipe: no usecs/op in {out!r}')
        return 1e6 / float(m.group(1))          # ops per second


class Hackbench(Workload):
    name = 'hackbench'

    def __init__(self, groups, loops):
        self.groups, self.loops = groups, loops

    def cmd(self):
        return ['hackbench', '-g', str(self.groups), '-l', str(self.loops)]

    def parse(self, out):
        m = re.search(r'Time:\s*([\d.]+)', out)
        if not m:
            raise RuntimeError(f'hackbench: no Time: in {out!r}')
        return 1.0 / float(m.group(1))          # runs per second


# ------------------------------------------------------------------ module

def insmod(ko, *args):
    t0 = time.monotonic()
    run(['insmod', str(ko), *args])
    return time.monotonic() - t0


def rmmod(name=MOD):
    if Path('/proc/mounts').read_text().count(f' {EN} '):
        run(['umount', str(EN)])
    run(['rmmod', name])


def mount_fs():
    run(['mount', '-t', 'cgroup_energy', 'none', str(EN)])


def wait_samples(k=1, timeout=60):
    """Wait until the sampler completed k more samples; returns the count."""
    start = info()['samples']
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = info()['samples']
        if n >= start + k:
            return n
        time.sleep(0.01)
    raise RuntimeError(f'sampler did not complete {k} samples in {timeout} s')


# ----------------------------------------------------------------- bpftrace

class Bpftrace:
    """The eBPF peer: bpftrace running SCRIPT, its user space on AUX_CPU."""

    def __init__(self, script, tag):
        self.script, self.out = script, Path(f'/tmp/bpftrace-{tag}.out')
        self.proc = None
        self.attach_s = None

    def start(self, timeout=300):
        t0 = time.monotonic()
        f = open(self.out, 'w')
        self.proc = subprocess.Popen(
            ['taskset', '-c', str(AUX_CPU), 'bpftrace', str(self.script)],
            stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        f.close()
        while time.monotonic() - t0 < timeout:
            text = self.out.read_text(errors='replace')
            if 'cge-peer: ready' in text:
                self.attach_s = time.monotonic() - t0
                return self.attach_s
            if self.proc.poll() is not None:
                raise RuntimeError(f'bpftrace exited ({self.proc.returncode})'
                                   f': {text[-2000:]}')
            time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError(f'bpftrace not ready after {timeout} s')

    def prog_stats(self):
        """run_time_ns, run_cnt summed over bpftrace's programs (fdinfo)."""
        ns = cnt = 0
        fddir = Path(f'/proc/{self.proc.pid}/fdinfo')
        for fd in fddir.iterdir():
            try:
                text = fd.read_text()
            except OSError:
                continue
            if 'prog_type:' not in text:
                continue
            m1 = re.search(r'run_time_ns:\s*(\d+)', text)
            m2 = re.search(r'run_cnt:\s*(\d+)', text)
            if m1 and m2:
                ns += int(m1.group(1))
                cnt += int(m2.group(1))
        return ns, cnt

    def stop(self):
        """SIGINT; returns what the script accounted: {cgroups, total_ns}."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        text = self.out.read_text(errors='replace')
        per_cg = {int(a): int(b) for a, b in
                  re.findall(r'^@ns\[(\d+)\]:\s*(\d+)', text, re.M)}
        return {'cgroups': len(per_cg), 'total_ns': sum(per_cg.values()),
                'rc': self.proc.returncode}


# --------------------------------------------------------------- throughput

# Runs per block: the module is loaded for one run at a time, so each B run
# sits between two A runs; bpftrace takes seconds to attach (under TCG), so
# it stays attached for two C runs, each next to one A run.
BLOCK = {'B': 1, 'C': 2, 'D': 1, 'T': 1, 'F': 1}
# D (diagnostic): the module loaded with the sampler slowed to every 10 s,
# so B/A - D/A is roughly what the sampler costs and D/A what the probe does.
D_ARGS = ['interval_ms=10000']


def schedule(pairs):
    """The run order for pairs = {state: n}: after a first A, blocks of
    BLOCK[state] runs, each block followed by an A, the states' blocks
    spread evenly (A B A C C A B A B A C C A ...)."""
    blocks = {s: -(-n // BLOCK[s]) for s, n in pairs.items() if n}
    total = sum(blocks.values())
    order, done = [], {s: 0 for s in blocks}
    for _ in range(total):
        # the state furthest behind its share of the blocks so far
        s = min(blocks, key=lambda s: (done[s] + 1) / blocks[s])
        done[s] += 1
        order.append(s)
    seq = ['A']
    for s in order:
        seq += [s] * BLOCK[s] + ['A']
    return seq


def pair_ratios(seq, v):
    """{state: [ratio]}: each X run over its adjacent A run, or over the
    geometric mean of both when it sits between two."""
    out = {}
    for i, s in enumerate(seq):
        if s == 'A' or i >= len(v) or not v[i]:
            continue
        nb = [v[j] for j in (i - 1, i + 1)
              if 0 <= j < len(v) and seq[j] == 'A' and v[j]]
        if nb:
            out.setdefault(s, []).append(v[i] / math.prod(nb) ** (1 / len(nb)))
    return out


def median_ci(xs, conf=0.95):
    """Distribution-free confidence interval of the median (order
    statistics, binomial): (low, high), or None for fewer than 6 values."""
    n = len(xs)
    if n < 6:
        return None
    xs = sorted(xs)
    cdf, j = 0.0, 0
    for i in range(n + 1):
        cdf += math.comb(n, i) / 2 ** n
        if cdf > (1 - conf) / 2:
            j = i
            break
    return xs[max(0, j - 1)], xs[min(n - 1, n - j)]


def ratio_summary(rs):
    out = spread(rs)
    ci = median_ci(rs)
    out['ci95'] = list(ci) if ci else None
    return out


def cmd_throughput(a):
    pin_self()
    BENCH_CG.mkdir(exist_ok=True)
    t_start = time.monotonic()
    plan = [(Pipe(a.pipe_loops), {'B': a.pairs_b, 'C': a.pairs_c if a.bt
                                  else 0, 'D': a.pairs_d}, 0.6)]
    if a.hb_loops:
        plan.append((Hackbench(a.hb_groups, a.hb_loops),
                     {'B': a.hb_pairs_b, 'C': a.hb_pairs_c if a.bt else 0},
                     1.0))
    out = {'cpu': BENCH_CPU, 'bench': {}}
    for w, pairs, share in plan:
        deadline = t_start + a.budget * share if a.budget else None
        out['bench'][w.name] = alternate(a, w, pairs, deadline,
                                         extend=w.name == 'pipe'
                                         and a.ci_target > 0)
    out['seconds'] = round(time.monotonic() - t_start, 1)
    out['errors'] = [e for b in out['bench'].values() for e in b['errors']]
    result(out)


# The warm-up ends when the last WARM_RUNS runs lie within WARM_SPREAD of
# each other (max/min - 1): the median spread of three consecutive A runs
# in the quietest committed run (2026-12-03 16:44 UTC, 59 A runs: 0.082;
# its quartiles 0.045 and 0.103). Runs still getting faster (TCG's code
# cache, the page cache) spread more than that.
WARM_RUNS = 3
WARM_SPREAD = 0.08


def warm_up(w, least, most):
    """Uncounted runs of @w without any probe: @least, then, if @most is
    more, on until the last WARM_RUNS settle, at most @most. Returns
    (values, settled): settled None for a fixed count (@most <= @least)."""
    vals = [w.once() for _ in range(least)]
    if most <= least:
        return vals, None
    while True:
        last = vals[-WARM_RUNS:]
        settled = (len(last) == WARM_RUNS
                   and max(last) / min(last) - 1 <= WARM_SPREAD)
        if settled or len(vals) >= most:
            return vals, settled
        vals.append(w.once())


def half_width(summary):
    """The larger half of the median's 95 % CI over the median, or None
    without a CI."""
    ci, m = summary.get('ci95'), summary.get('median')
    if not ci or not m:
        return None
    return max(m - ci[0], ci[1] - m) / m


def alternate(a, w, pairs, deadline, extend=False):
    """One workload in the alternation of schedule(); ratios X/A. With
    @extend, B and A runs follow the schedule, as many as its B/A ratios'
    spread says B/A's CI needs to come within a.ci_target of its median
    (at most a.pairs_b_max B runs, and not past @deadline)."""
    seq = schedule(pairs)
    states = [s for s in ('B', 'C', 'D') if pairs.get(s)]
    log(f'throughput: {w.name}: up to {len(seq)} runs: {"".join(seq)}')
    warm, settled = warm_up(w, a.warmup, a.warmup_max)
    log(f'throughput: {w.name}: {len(warm)} warm-up runs'
        + {None: '', True: ', settled', False: ', not settled'}[settled])
    v, errors, peer, loads, attaches, ipis = [], [], [], [], [], []
    bt = None
    bt_ok = False
    t0 = time.monotonic()
    stopped_early = False
    total = len(seq)        # the runs planned, for the log

    def one(i, s):
        nonlocal bt, bt_ok
        try:
            if s == 'C' and seq[i - 1] != 'C':
                bt = Bpftrace(a.bt, i)
                bt_ok = False
                attaches.append(round(bt.start(), 1))
                bt_ok = True
            if s == 'C' and not bt_ok:
                raise RuntimeError('no eBPF peer attached for this block')
            if s in 'BD':
                loads.append(round(insmod(a.ko, *(D_ARGS if s == 'D'
                                                   else [])), 2))
            i0, t1 = ipi_counts(), time.monotonic()
            v.append(w.once())
            dt = time.monotonic() - t1
            ipis.append([round((y - x) / dt, 1)
                         for x, y in zip(i0, ipi_counts())])
        except Exception as e:          # noqa: BLE001 - recorded, run goes on
            errors.append(f'{w.name} run {i} ({s}): {e}')
            if len(v) < i + 1:
                v.append(None)
            if len(ipis) < i + 1:
                ipis.append(None)
        finally:
            if s in 'BD' and Path(f'/sys/module/{MOD}').exists():
                rmmod()
            if s == 'C' and bt and (i + 1 == len(seq) or seq[i + 1] != 'C'):
                try:
                    peer.append(bt.stop())
                except Exception as e:  # noqa: BLE001
                    errors.append(f'bpftrace stop: {e}')
                bt = None
        if i % 9 == 0 or i == total - 1:
            log(f'throughput: {w.name}: run {i + 1}/{total} ({s}) '
                + (f'{v[-1]:.4g}' if v[-1] else '?')
                + f' t={time.monotonic() - t0:.0f}s')

    for i, s in enumerate(seq):
        if s != 'A' and seq[i - 1] == 'A':       # a block starts
            have = {x: seq[:i].count(x) for x in states}
            if (deadline and time.monotonic() > deadline
                    and all(have[x] >= min(10, pairs[x]) for x in states)):
                stopped_early = True
                seq = seq[:i]
                total = i
                log(f'throughput: {w.name}: time budget spent, stopping '
                    f'with {have} runs')
                break
        one(i, s)
    planned = len(seq)
    # Two stages (Stein's): the spread of the scheduled B/A ratios sets how
    # many B runs in all should bring the CI within a.ci_target (the
    # half-width falls as 1/sqrt(n); 1.25 times that, as the first stage's
    # half-width is itself noisy), and that many are run without another
    # look. On simulated sequences the final interval held the true ratio
    # in 93-94 % at 3 and 5 % noise (a 95 % interval of a fixed count held
    # it in 95 %; tests/test_bench.py: test_added_pairs_keep_the_ci_honest);
    # stopping at the first look within the target held it in 90-91 %.
    # Without a CI (fewer than six B ratios: the module failed to load)
    # nothing is added.
    want = hw_first = None
    if extend and 'B' in states and not stopped_early:
        nb = seq.count('B')
        hw_first = half_width(ratio_summary(pair_ratios(seq, v).get('B', [])))
        if hw_first is None:
            log(f'throughput: {w.name}: no CI for B/A after {nb} B runs: '
                'no runs added')
        else:
            want = max(nb, min(a.pairs_b_max, math.ceil(
                1.25 * nb * (hw_first / a.ci_target) ** 2)))
            total = planned + 2 * (want - nb)
            log(f'throughput: {w.name}: B/A\'s CI after {nb} B runs: '
                f'{hw_first:.2%} of its median; {want - nb} more B runs')
    while want is not None and seq.count('B') < want:
        if deadline and time.monotonic() > deadline:
            stopped_early = True
            log(f'throughput: {w.name}: time budget spent, stopping at '
                f'{seq.count("B")} B runs')
            break
        for s in 'BA':
            seq.append(s)
            one(len(seq) - 1, s)
    ratios = {s: [] for s in states}
    ratios.update(pair_ratios(seq, v))
    return {'cmd': ' '.join(w.cmd()), 'sequence': ''.join(seq), 'values': v,
            'warmup': {'values': warm, 'settled': settled,
                       'spread': WARM_SPREAD, 'runs': WARM_RUNS},
            'planned_runs': planned, 'b_runs_wanted': want,
            'ci_half_width_b_first': hw_first,
            'ci_target': a.ci_target if extend else None,
            'ci_half_width_b': (half_width(ratio_summary(ratios['B']))
                                if 'B' in ratios else None),
            'ratios': ratios,
            'summary': {s: ratio_summary(r) for s, r in ratios.items()},
            'by_state': {s: spread([x for x, t in zip(v, seq) if t == s and x])
                         for s in ['A'] + states},
            # per run, per CPU: IPIs a second over the timed run
            'ipis_per_s': ipis,
            'ipis_by_state': ipi_spread(seq, ipis, ['A'] + states),
            'errors': errors, 'bpftrace_attach_s': attaches,
            'insmod_s': loads, 'bpftrace_accounted': peer,
            'stopped_early': stopped_early,
            'seconds': round(time.monotonic() - t0, 1)}


def ipi_spread(seq, ipis, states):
    """{state: [spread of IPIs a second, per CPU]} over the runs of each
    state in @seq."""
    out = {}
    for s in states:
        runs = [r for r, t in zip(ipis, seq) if t == s and r]
        out[s] = [spread([r[c] for r in runs])
                  for c in range(len(runs[0]))] if runs else []
    return out


# ----------------------------------------------------------------- selftime

def cmd_selftime(a):
    pin_self()
    BENCH_CG.mkdir(exist_ok=True)
    out = {'reps': [], 'clock': None}
    if a.clockcal:
        insmod(a.clockcal)
        p = Path('/sys/module/clockcal/parameters')
        out['clock'] = {'pair_ns_mean': int((p / 'pair_ps_mean').read_text())
                        / 1000.0,
                        'pair_ns_min': int((p / 'pair_ns_min').read_text())}
        rmmod('clockcal')
    works = [Pipe(a.pipe_loops)]
    if a.hb_loops:
        works.append(Hackbench(a.hb_groups, a.hb_loops))
    for r in range(a.reps):
        for w in works:
            insmod(a.ko)
            mount_fs()
            tput = w.once()
            i1 = info()
            rmmod()
            if 'probe_timed_calls' not in i1:
                raise RuntimeError(f'{a.ko} is not a self-timing build '
                                   '(no probe_timed_calls in energy.info)')
            rep = {'bench': w.name, 'timed_calls': i1['probe_timed_calls'],
                   'ns_mean': i1['probe_ns_mean'], 'tput': tput}
            if w.name == 'pipe':
                # share of the benchmark's time spent in the probe: a pipe
                # op is two switches on the one CPU. Scales out the guest's
                # speed, which the host's load sets (docs/overhead.md).
                rep['share'] = i1['probe_ns_mean'] * 2 * tput / 1e9
            out['reps'].append(rep)
            log(f'selftime: {w.name} rep {r + 1}: {rep}')
    for w in works:
        xs = [x['ns_mean'] for x in out['reps'] if x['bench'] == w.name]
        out[w.name] = spread(xs)
        out[w.name + '_tput'] = spread([x['tput'] for x in out['reps']
                                        if x['bench'] == w.name])
    out['pipe_share'] = spread([x['share'] for x in out['reps']
                                if 'share' in x])
    result(out)


# -------------------------------------------------------------------- insns

def module_symbols():
    """[address, name, owner] of every symbol of a module or a BPF
    program (/proc/kallsyms lines that end with [owner])."""
    out = []
    for line in Path('/proc/kallsyms').read_text().splitlines():
        f = line.split()
        if len(f) == 4 and f[3].startswith('['):
            out.append([f[0], f[2], f[3].strip('[]')])
    return out


def context_switches():
    for line in Path('/proc/stat').read_text().splitlines():
        if line.startswith('ctxt '):
            return int(line.split()[1])
    raise RuntimeError('no ctxt line in /proc/stat')


def cmd_insns(a):
    """Under bench/insncount.c (QEMU counts each instruction executed in
    the module area): the module and the eBPF peer attached together, so
    neither's code can take the other's freed addresses, then the pipe
    benchmark; their symbols while both are loaded.  Neither is unloaded:
    the counts are written when QEMU exits."""
    pin_self()
    BENCH_CG.mkdir(exist_ok=True)
    # the JIT's programs in /proc/kallsyms (bpf_prog_<tag>_<name>)
    Path('/proc/sys/net/core/bpf_jit_kallsyms').write_text('1\n')
    # run_cnt in the program's fdinfo: its calls, a check on QEMU's count
    Path('/proc/sys/kernel/bpf_stats_enabled').write_text('1\n')
    insmod(a.ko)
    mount_fs()
    peer = Bpftrace(a.bt, 'insns')
    peer.start()
    ctxt0 = context_switches()
    tput = Pipe(a.pipe_loops).once()
    ctxt = context_switches() - ctxt0
    syms = module_symbols()
    _, runs = peer.prog_stats()
    log(f'insns: {ctxt} context switches, {tput:.0f} ops/s, '
        f'{len(syms)} module symbols')
    result({'ctxt': ctxt, 'tput': tput, 'pipe_loops': a.pipe_loops,
            'peer_runs': runs, 'symbols': syms})


# ----------------------------------------------------------------- ebpfcost

def cmd_ebpfcost(a):
    pin_self()
    BENCH_CG.mkdir(exist_ok=True)
    w = Pipe(a.pipe_loops)
    stats = Path('/proc/sys/kernel/bpf_stats_enabled')
    out = {}
    bt = Bpftrace(a.bt, 'cost')
    try:
        out['attach_s'] = round(bt.start(), 1)
        stats.write_text('1\n')
        ns0, c0 = bt.prog_stats()
        for _ in range(a.reps):
            w.once()
        ns1, c1 = bt.prog_stats()
        stats.write_text('0\n')
        out['accounted'] = bt.stop()
    except Exception as e:          # noqa: BLE001
        stats.write_text('0\n')
        if bt.proc and bt.proc.poll() is None:
            bt.proc.kill()
        result({'error': str(e)})
        return
    out['run_cnt'] = c1 - c0
    out['ns_mean'] = (ns1 - ns0) / (c1 - c0) if c1 > c0 else None
    log(f'ebpfcost: {out}')
    result(out)


# ------------------------------------------------------------------ sampler

class Ftrace:
    """function_graph on the sampler: cge_sample_fn (one sample), with the
    drains (cge_cpu_drain: each CPU's, from the sampler's), the split and
    fold into the records (cge_split_pkg), the reaper pass
    (cge_cgstate_reap) and the unowned energy's share (cge_unowned_share)
    inside.

    Read through trace_pipe (consuming, non-blocking): reading the `trace`
    file stops recording while it reads, which loses samples."""

    TOP = 'cge_sample_fn'
    PARTS = {'cge_cpu_drain': 'drain', 'cge_split_pkg': 'split',
             'cge_cgstate_reap': 'reap', 'cge_unowned_share': 'unowned'}
    FNS = (TOP, 'cge_sample_locked', *PARTS)
    LINE = re.compile(r'([\d.]+) us\s+\|\s*(?:\} /\* )?(\w+)')
    fd = None
    partial = ''
    cur = {}

    @classmethod
    def start(cls):
        t = TRACING
        (t / 'tracing_on').write_text('0\n')
        (t / 'current_tracer').write_text('nop\n')
        (t / 'set_ftrace_filter').write_text(' '.join(cls.FNS) + '\n')
        (t / 'set_graph_function').write_text(cls.TOP + '\n')
        (t / 'max_graph_depth').write_text('3\n')
        (t / 'options/funcgraph-tail').write_text('1\n')
        (t / 'buffer_size_kb').write_text('1024\n')
        (t / 'current_tracer').write_text('function_graph\n')
        (t / 'trace').write_text('')
        cls.fd = os.open(t / 'trace_pipe', os.O_RDONLY | os.O_NONBLOCK)
        cls.partial, cls.cur = '', {}
        (t / 'tracing_on').write_text('1\n')

    @classmethod
    def take(cls, seen=None):
        """Samples completed since the last take, in order: dicts of µs
        {'total', 'drain', 'split', 'reap', 'other'}, and 'reaped': whether
        a reaper pass ran in it. seen, a list, gets
        True appended if a sample started or ended meanwhile."""
        chunks = []
        while True:
            try:
                b = os.read(cls.fd, 65536)
            except BlockingIOError:
                break
            if not b:
                break
            chunks.append(b)
        text = cls.partial + b''.join(chunks).decode(errors='replace')
        lines = text.split('\n')
        cls.partial = lines.pop()
        if seen is not None and any(cls.TOP in x for x in lines):
            seen.append(True)
        got = []
        for line in lines:
            m = cls.LINE.search(line)
            if not m:
                if cls.TOP in line and '{' in line:     # a sample starts
                    cls.cur = {}
                continue
            us, fn = float(m.group(1)), m.group(2)
            if fn in cls.PARTS:
                k = cls.PARTS[fn]
                cls.cur[k] = cls.cur.get(k, 0.0) + us
            elif fn == cls.TOP:
                cur = cls.cur
                cur['total'] = us
                cur['reaped'] = 'reap' in cur   # a reaper pass ran in it
                for k in cls.PARTS.values():
                    cur.setdefault(k, 0.0)
                cur['other'] = us - sum(cur[k] for k in cls.PARTS.values())
                got.append(cur)
                cls.cur = {}
        return got

    @classmethod
    def stop(cls):
        (TRACING / 'tracing_on').write_text('0\n')
        if cls.fd is not None:          # the tracer is busy while open
            os.close(cls.fd)
            cls.fd = None
        (TRACING / 'current_tracer').write_text('nop\n')
        (TRACING / 'set_ftrace_filter').write_text('\n')
        (TRACING / 'set_graph_function').write_text('\n')


class CgLoad:
    def __init__(self, binary, base, n):
        self.n = n
        self.base = base
        self.proc = subprocess.Popen([str(binary), str(base), str(n)],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith('ready'):
            raise RuntimeError(f'cgload {n}: {line!r} (rc {self.proc.poll()})')
        self.setup_s = int(line.split()[1]) / 1e9

    def round(self):
        self.proc.stdin.write('round\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line.startswith('done'):
            raise RuntimeError(f'cgload round: {line!r}')
        return int(line.split()[1]) / 1e9

    def quit(self):
        self.proc.stdin.write('quit\n')
        self.proc.stdin.flush()
        self.proc.wait(120)
        t0 = time.monotonic()
        for d in [*sorted(self.base.glob('t*')), self.base]:
            # exiting threads leave their cgroups a little after wait()
            while True:
                try:
                    d.rmdir()
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or time.monotonic() - t0 > 60:
                        raise
                    time.sleep(0.1)
        return time.monotonic() - t0


def set_interval(ms):
    (PARAMS / 'interval_ms').write_text(f'{ms}\n')


def next_sample(timeout=60):
    """Block until a sample completes; returns its trace entry."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = Ftrace.take()
        if got:
            return got[-1]
        time.sleep(0.02)
    raise RuntimeError('no sample traced')


def measure(load, k, active):
    """k samples, each covering an interval where all of load's cgroups ran
    (active) or none did (idle). Rounds run right after a sample so the
    measured sample runs while the guest is otherwise quiet."""
    samples, rounds, skipped = [], [], 0
    tries = 0
    while len(samples) < k and tries < 3 * k:
        tries += 1
        next_sample()                     # just after a sample
        if active:
            rounds.append(load.round())
            seen = []
            Ftrace.take(seen)
            if seen:                      # a sample fell inside the round
                skipped += 1
                continue
        samples.append(next_sample())
    for x in samples:
        x['work'] = x['total'] - x['drain'] - x['reap']
    out = {k: spread([x[k] for x in samples])
           for k in ('total', 'work', 'drain', 'split', 'reap', 'unowned',
                     'other')}
    out['samples'] = [{k: round(v, 1) for k, v in x.items()}
                      for x in samples]
    out['round_s'] = spread(rounds)
    out['skipped'] = skipped
    return out


def unowned_measure(load, k, policy='weight'):
    """measure(active) again with unowned=@policy, the cpu controller on in
    the root and in load's parent, so that a share reads each cgroup's
    cpu.weight: the policy's work is the 'unowned' part. cpuset: with an
    empty partition that owns the last CPU (the load runs on the others),
    so that the sample keeps each CPU's time apart and walks twice (this
    driver, pinned there, moves to the others meanwhile). All undone
    after."""
    ctl = [CG / 'cgroup.subtree_control', load.base / 'cgroup.subtree_control']
    part = CG / 'bench_part'
    done = []
    try:
        for f in ctl:
            f.write_text('+cpu\n')
            done.append(f)
        if policy == 'cpuset':
            ctl[0].write_text('+cpuset\n')
            part.mkdir()
            (part / 'cpuset.cpus').write_text(f'{os.cpu_count() - 1}\n')
            (part / 'cpuset.cpus.partition').write_text('root\n')
        (PARAMS / 'unowned').write_text(policy + '\n')
        wait_samples(2)
        out = measure(load, k, active=True)
        out['partitions'] = info().get('unowned_partitions')
        return out
    finally:
        (PARAMS / 'unowned').write_text('none\n')
        if part.exists():
            (part / 'cpuset.cpus.partition').write_text('member\n')
            part.rmdir()
            ctl[0].write_text('-cpuset\n')
            pin_self()
        for f in reversed(done):
            f.write_text('-cpu\n')


def probe_cost(load, min_timed=4000, max_s=30):
    """The self-timed probe's mean while load's rounds run, from the
    cumulative integer means in energy.info (err: bound of the rounding)."""
    i0 = info()
    if 'probe_timed_calls' not in i0:
        return None
    t0, n = time.monotonic(), 0
    while True:
        load.round()
        n += 1
        i1 = info()
        dt = i1['probe_timed_calls'] - i0['probe_timed_calls']
        if (dt >= min_timed and n >= 3) or time.monotonic() - t0 > max_s:
            break
    if dt <= 0:
        return None
    dns = (i1['probe_ns_mean'] * i1['probe_timed_calls']
           - i0['probe_ns_mean'] * i0['probe_timed_calls'])
    err = (i0['probe_timed_calls'] + i1['probe_timed_calls']) / 2 / dt
    return {'ns': round(dns / dt, 1), 'err_ns': round(err, 1),
            'timed_calls': dt, 'rounds': n}


def ramp(load, want, timeout=300):
    """Rounds at a 10 ms interval until want records exist: the sampler
    makes records for at most 32 + 16 new cgroups per CPU and interval
    (the cache's slots and its overflow wants)."""
    set_interval(10)
    t0, n = time.monotonic(), 0
    while info()['records'] < want and time.monotonic() - t0 < timeout:
        load.round()
        n += 1
    return {'s': round(time.monotonic() - t0, 1), 'rounds': n,
            'records': info()['records']}


def slab_info():
    d = Path('/sys/kernel/slab/cge_rec')
    if not d.exists():
        return {}
    return {'object_size': int((d / 'object_size').read_text()),
            'slab_size': int((d / 'slab_size').read_text()),
            'cache': os.path.basename(os.path.realpath(d))}


def module_size():
    for line in Path('/proc/modules').read_text().splitlines():
        f = line.split()
        if f[0] == MOD:
            return int(f[1])
    return None


def cmd_sampler(a):
    pin_self()
    # cgload's threads, one per cgroup: a pid each, and two mappings (the
    # stack and its guard page); twice the count leaves room for the rest
    n = 2 * max(a.counts) + 10000
    for k, v in (('kernel/pid_max', 4194304), ('kernel/threads-max', n),
                 ('vm/max_map_count', 2 * n)):
        f = Path('/proc/sys') / k
        if int(f.read_text()) < v:
            f.write_text(f'{v}\n')
    insmod(a.ko)
    mount_fs()
    Ftrace.start()
    out = {'counts': [], 'module_bytes': module_size(), 'slab': slab_info()}
    try:
        set_interval(100)
        wait_samples(3)
        base_info = info()
        out['base_records'] = base_info['records']
        out['base_record_bytes'] = base_info['record_bytes']
        for n in a.counts:
            try:
                out['counts'].append(sampler_count(a, n, out['base_records']))
            except Exception as e:      # noqa: BLE001 - the other counts go on
                out['counts'].append({'cgroups': n, 'error': str(e)})
                log(f'sampler: {n}: {e}')
            set_interval(100)
            # let the removed cgroups' records be reaped before the next N
            deadline = time.monotonic() + 60
            while (info()['records'] > out['base_records'] + 2
                   and time.monotonic() < deadline):
                time.sleep(0.5)
    finally:
        Ftrace.stop()
        rmmod()
    result(out)


def sampler_count(a, n, base_records):
    """Sampler and memory figures with n cgroups (cgload), idle and active."""
    t0 = time.monotonic()
    load = CgLoad(a.cgload, CG / f'cgl{n}', n)
    try:
        return sampler_measure(a, n, base_records, load, t0)
    finally:
        if load.proc.poll() is None:        # an error: do not leave it
            load.proc.kill()
            load.proc.wait()


def sampler_measure(a, n, base_records, load, t0):
    # records: root, the cgroups already there, cgl<n>, its n children
    rp = ramp(load, base_records + 1 + n)
    pc = probe_cost(load)
    r0 = statistics.median(load.round() for _ in range(3))
    # every interval must hold a whole round, with room to spare
    ms = int(min(10000, max(300, 4000 * r0)))
    set_interval(ms)
    wait_samples(2, timeout=60 + 3 * ms / 1000)
    Ftrace.take()
    i = info()
    row = {'cgroups': n, 'setup_s': round(load.setup_s, 1),
           'ramp': rp, 'probe': pc,
           'interval_ms': ms, 'records': i['records'],
           'record_bytes': i['record_bytes'],
           'slab': slab_info()}
    log(f'sampler: {n} cgroups, interval {ms} ms, records '
        f'{i["records"]}, setup {load.setup_s:.1f} s, ramp {rp}, '
        f'probe {pc}')
    row['idle'] = measure(load, a.intervals, active=False)
    c0 = info()['cache_overflows']
    row['active'] = measure(load, a.intervals, active=True)
    row['cache_overflows'] = info()['cache_overflows'] - c0
    row['active_unowned'] = unowned_measure(load, a.intervals)
    row['active_cpuset'] = unowned_measure(load, a.intervals, 'cpuset')
    try:
        row['flood'] = reap_flood(a.flood_s)
    except Exception as e:      # noqa: BLE001 - keep the count's figures
        row['flood'] = {'error': str(e)}
    set_interval(ms)
    try:
        row['teardown_s'] = round(load.quit(), 1)
    except OSError as e:        # a busy cgroup must not lose the row
        row['teardown_error'] = str(e)
    row['seconds'] = round(time.monotonic() - t0, 1)
    log(f'sampler: {n}: idle {row["idle"]["total"]}, active '
        f'{row["active"]["total"]}, work {row["active"]["work"]}, '
        f'reap {row["active"]["reap"]}')
    return row


# A process that makes and removes empty cgroups as fast as it can until
# SIGTERM, then prints how many it removed and in how many ns: cgroups
# that never ran a task, so none of them has a record.
FLOOD = r"""
import os, signal, sys, time
run = [True]
signal.signal(signal.SIGTERM, lambda *_: run.clear())
base = sys.argv[1]
dirs = [f'{base}/f{i}' for i in range(8)]


def clean():
    for d in [*dirs, base]:
        if os.path.isdir(d):
            os.rmdir(d)


clean()                                 # a run that was cut short
os.mkdir(base)
print('ready', flush=True)
n, t0 = 0, time.monotonic_ns()
try:
    while run:
        os.mkdir(dirs[n % 8])
        os.rmdir(dirs[n % 8])
        n += 1
finally:
    clean()
print(n, time.monotonic_ns() - t0, flush=True)
"""


def reap_flood(seconds):
    """The reaper's passes while cgroups without records are made and
    removed as fast as the guest can (on BENCH_CPU, away from the sampler
    on AUX_CPU), beside the records of the cgroups measured: the pass's
    cost must follow the removals of cgroups with records, not the records
    there are. At a 0.5 s interval a sample holds at most one pass; the
    first pass is left out (the flood may have started inside it)."""
    set_interval(500)
    wait_samples(2, timeout=30)
    proc = subprocess.Popen(['taskset', '-c', str(BENCH_CPU),
                             sys.executable, '-c', FLOOD,
                             str(CG / 'reapflood')],
                            stdout=subprocess.PIPE, text=True)
    try:
        if proc.stdout.readline().strip() != 'ready':
            raise RuntimeError(f'reap flood: no start (rc {proc.wait(60)})')
        Ftrace.take()
        time.sleep(seconds)
        passes = [x['reap'] for x in Ftrace.take() if x['reaped']]
        proc.terminate()
        out = proc.communicate(timeout=60)[0].split()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode or len(out) != 2 or int(out[0]) <= 0:
        raise RuntimeError(f'reap flood: rc {proc.returncode}, out {out}')
    removed, ns = int(out[0]), int(out[1])
    r = {'seconds': round(ns / 1e9, 1), 'removed': removed,
         'removed_per_s': round(removed * 1e9 / ns),
         'reap': spread(passes[1:]), 'passes': passes}
    log(f'reap flood: {r}')
    return r


# ------------------------------------------------------------------ records

# A process that moves itself through every cgroup below a base, again and
# again, running a little in each: each it visits is charged, so the
# sampler makes it a record (at most 32 + 16 new ones per CPU and
# interval). One line on stdin per pass; prints "done <ns>" after it.
HOPPER = r"""
import os, sys, time
base, n = sys.argv[1], int(sys.argv[2])
pid = str(os.getpid()).encode()
for line in sys.stdin:
    t0 = time.monotonic_ns()
    for i in range(n):
        fd = os.open(f'{base}/d{i:06d}/cgroup.procs', os.O_WRONLY)
        os.write(fd, pid)
        os.close(fd)
    fd = os.open(f'{base}/cgroup.procs', os.O_WRONLY)
    os.write(fd, pid)
    os.close(fd)
    print('done', time.monotonic_ns() - t0, flush=True)
"""


def records_count(a, n, base_records):
    """The sampler and the reaper with n records of cgroups that ran once
    and now sleep: made by one process that moves itself through them, not
    one thread each (cgload), so that 100,000 fit in the guest."""
    base = CG / f'rec{n}'
    t0 = time.monotonic()
    base.mkdir()
    for i in range(n):
        (base / f'd{i:06d}').mkdir()
    row = {'cgroups': n, 'mkdir_s': round(time.monotonic() - t0, 1)}
    set_interval(10)
    hop = subprocess.Popen(['taskset', '-c', str(BENCH_CPU), sys.executable,
                            '-c', HOPPER, str(base), str(n)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True)
    passes, t0 = [], time.monotonic()
    try:
        while (info()['records'] < base_records + 1 + n
               and time.monotonic() - t0 < a.ramp_s):
            hop.stdin.write('pass\n')
            hop.stdin.flush()
            line = hop.stdout.readline().split()
            if not line or line[0] != 'done':
                raise RuntimeError(f'hopper: {line}')
            passes.append(round(int(line[1]) / 1e9, 1))
    finally:
        hop.stdin.close()
        hop.wait(60)
    i = info()
    row.update({'ramp_s': round(time.monotonic() - t0, 1),
                'hop_passes_s': passes, 'records': i['records'],
                'record_bytes': i['record_bytes'], 'slab': slab_info()})
    log(f'records: {n}: {row}')
    # idle: the records exist, their cgroups run nothing
    set_interval(1000)
    wait_samples(2, timeout=30)
    Ftrace.take()
    row['idle'] = measure(None, a.intervals, active=False)
    try:
        row['flood'] = reap_flood(a.flood_s)
    except Exception as e:      # noqa: BLE001 - keep the count's figures
        row['flood'] = {'error': str(e)}
    # every record's cgroup removed at once: the reaper's passes until the
    # records are freed, each with the records it took (energy.info)
    set_interval(500)
    wait_samples(2, timeout=30)
    Ftrace.take()
    t0 = time.monotonic()
    for d in range(n):
        (base / f'd{d:06d}').rmdir()
    base.rmdir()
    row['rmdir_s'] = round(time.monotonic() - t0, 1)
    reaps = []
    while (info()['records'] > base_records
           and time.monotonic() - t0 < a.ramp_s):
        time.sleep(0.5)
        reaps += [x['reap'] for x in Ftrace.take() if x['reaped']]
    reaps += [x['reap'] for x in Ftrace.take() if x['reaped']]
    row['removal'] = {'passes': [round(x, 1) for x in reaps],
                      'reap': spread(reaps),
                      'records_left': info()['records'] - base_records,
                      'seconds': round(time.monotonic() - t0, 1)}
    log(f'records: {n}: idle {row["idle"]["total"]}, flood '
        f'{row["flood"].get("reap")}, removal {row["removal"]["reap"]}')
    return row


def cmd_records(a):
    pin_self()
    insmod(a.ko)
    mount_fs()
    Ftrace.start()
    out = {'counts': []}
    try:
        set_interval(100)
        wait_samples(3)
        base_records = info()['records']
        for n in a.counts:
            try:
                out['counts'].append(records_count(a, n, base_records))
            except Exception as e:      # noqa: BLE001 - the others go on
                out['counts'].append({'cgroups': n, 'error': str(e)})
                log(f'records: {n}: {e}')
    finally:
        Ftrace.stop()
        rmmod()
    result(out)


# ------------------------------------------------------------------ migrate

# T (diagnostic): no module, the cgroup_attach_task event enabled in tracefs.
# Any probe on that tracepoint makes cgroup_attach_task() format the
# destination's path (TRACE_CGROUP_PATH): T pays that and the event's ring
# buffer write, B that and cgroup_energy's probes. F: T with a filter no
# event passes, so the event is built in a per-CPU scratch buffer and
# dropped: about the path formatting alone.
ATTACH_EVENT = TRACING / 'events/cgroup/cgroup_attach_task/enable'
ATTACH_FILTER = TRACING / 'events/cgroup/cgroup_attach_task/filter'


def parse_hops(out):
    """Migrations per second from cghop's `hops <n> ns <ns>` line."""
    m = re.search(r'^hops (\d+) ns (\d+)$', out, re.M)
    if not m or int(m.group(2)) <= 0:
        raise RuntimeError(f'cghop: no hops line in {out!r}')
    return int(m.group(1)) * 1e9 / int(m.group(2))


def hop_dirs(depth):
    """Two sibling cgroups at @depth below the root, made, and the cgroups
    above them, top first; the controllers the root gives its children are
    enabled down to them, so every depth migrates the same controllers."""
    chain = [CG]
    for k in range(1, depth):
        chain.append(chain[-1] / f'mig{depth}-{k}')
        chain[-1].mkdir(exist_ok=True)
        ctl = (chain[-1] / 'cgroup.controllers').read_text().split()
        if ctl:
            (chain[-1] / 'cgroup.subtree_control').write_text(
                ' '.join(f'+{c}' for c in ctl) + '\n')
    pair = [chain[-1] / f'mig{depth}{x}' for x in 'ab']
    for d in pair:
        d.mkdir(exist_ok=True)
    return pair, chain[1:]


def hop(a, pair, hops):
    p = run(['taskset', '-c', str(BENCH_CPU), a.cghop, str(hops),
             *map(str, pair)], timeout=600)
    return parse_hops(p.stdout)


def migrate_enter(a, s):
    """Set up state s: B loads the module and mounts it, T enables the
    tracefs event, F too with a filter that drops every event; A is the
    plain kernel."""
    if s == 'B':
        insmod(a.ko)
        mount_fs()
    elif s in 'TF':
        if s == 'F':
            ATTACH_FILTER.write_text('pid < 0\n')
        ATTACH_EVENT.write_text('1\n')


def migrate_leave(s):
    if s == 'B' and Path(f'/sys/module/{MOD}').exists():
        rmmod()
    elif s in 'TF':
        ATTACH_EVENT.write_text('0\n')
        ATTACH_FILTER.write_text('0\n')


def cmd_migrate(a):
    pin_self()
    t0 = time.monotonic()
    dirs = {d: hop_dirs(d) for d in a.depths}
    pairs = {'B': a.pairs_b, 'T': a.pairs_t, 'F': a.pairs_f}
    states = [s for s, n in pairs.items() if n]
    seq = schedule(pairs)
    log(f'migrate: {len(seq)} runs of {a.hops} hops at depths {a.depths}: '
        f'{"".join(seq)}')
    for _ in range(a.warmup):
        for d in a.depths:
            hop(a, dirs[d][0], a.hops)
    v, errors = {d: [] for d in a.depths}, []
    for i, s in enumerate(seq):
        try:
            migrate_enter(a, s)
            # untimed, in every state: the timed loops do not start right
            # after an insmod and its mount
            for d in a.depths:
                hop(a, dirs[d][0], a.hops // 5)
            for d in a.depths:
                v[d].append(hop(a, dirs[d][0], a.hops))
        except Exception as e:          # noqa: BLE001 - recorded, run goes on
            errors.append(f'migrate run {i} ({s}): {e}')
            for d in a.depths:
                v[d] += [None] * (i + 1 - len(v[d]))
        finally:
            migrate_leave(s)
        if i % 9 == 0 or i == len(seq) - 1:
            log(f'migrate: run {i + 1}/{len(seq)} ({s}) '
                + ' '.join(f'd{d}: {v[d][-1] or 0:.0f}/s' for d in a.depths)
                + f' t={time.monotonic() - t0:.0f}s')
    out = {'hops': a.hops, 'sequence': ''.join(seq), 'errors': errors,
           'depths': {}}
    for d in a.depths:
        ratios = {s: [] for s in states}
        ratios.update(pair_ratios(seq, v[d]))
        out['depths'][str(d)] = {
            'values': v[d], 'ratios': ratios,
            'summary': {s: ratio_summary(r) for s, r in ratios.items()},
            'by_state': {s: spread([x for x, t in zip(v[d], seq)
                                    if t == s and x])
                         for s in ['A'] + states}}
        try:
            remove_cgroups([*dirs[d][0], *reversed(dirs[d][1])])
        except OSError as e:
            errors.append(f'migrate: cleanup at depth {d}: {e}')
    out['seconds'] = round(time.monotonic() - t0, 1)
    result(out)


# --------------------------------------------------------------- cyclictest

PERCENTILES = ('50', '99', '99.9')


def read_histogram(path):
    """One cyclictest --histfile (rt-tests 2.x): `# Histogram`, then one
    line per 1 µs bucket, `NNNNNN count count ...` (one column per thread,
    no -H sum column), then `# Min/Avg/Max Latencies:` and `# Histogram
    Overflows:` (one field per thread) and `# Thread N:` lines with the
    overflows' cycle numbers. Returns {'counts': {µs: samples, threads
    summed}, 'overflows': [per thread], 'max_us': [per thread]}."""
    out = {'counts': {}, 'overflows': [], 'max_us': []}
    keys = {'# Histogram Overflows:': 'overflows',
            '# Max Latencies:': 'max_us'}
    for line in Path(path).read_text().splitlines():
        for head, key in keys.items():
            if line.startswith(head):
                out[key] = [int(x) for x in line[len(head):].split()]
        f = line.split()
        if line.startswith('#') or len(f) < 2 or not f[0].isdigit():
            continue
        out['counts'][int(f[0])] = (out['counts'].get(int(f[0]), 0)
                                    + sum(int(x) for x in f[1:]))
    return out


def hist_percentiles(counts, overflows, hist_us, ps=PERCENTILES):
    """Nearest-rank percentiles of a 1 µs histogram: for each p (a decimal
    string), the smallest bucket with at least ceil(p % of all samples)
    samples at or below it, overflows included in the total. cyclictest
    puts a latency of hist_us µs or more in the overflow, so a percentile
    whose rank falls there is a lower bound: {'above': hist_us}, meaning
    >= hist_us µs. None without samples."""
    total = sum(counts.values()) + overflows
    out = {}
    for p in ps:
        if not total:
            out[p] = None
            continue
        rank = math.ceil(Fraction(p) / 100 * total)
        acc, out[p] = 0, {'above': hist_us}
        for us in sorted(counts):
            acc += counts[us]
            if acc >= rank:
                out[p] = us
                break
    return out


def pool_runs(runs, hist_us):
    """The runs' histograms added up: samples, overflows, the percentiles
    of the pooled counts and the largest max."""
    counts = {}
    for r in runs:
        for us, n in r['hist']:
            counts[us] = counts.get(us, 0) + n
    over = sum(r['overflows'] for r in runs)
    maxes = [r['max_us'] for r in runs if r['max_us'] is not None]
    return {'runs': len(runs), 'samples': sum(counts.values()) + over,
            'overflows': over, 'max_us': max(maxes) if maxes else None,
            'pct_us': hist_percentiles(counts, over, hist_us)}


def cmd_cyclictest(a):
    out = {'runs': [], 'hist_us': a.hist_us,
           'load': f'hackbench -g {a.hb_groups} -l {a.hb_loops} in a loop'}
    order = []
    for i in range(a.pairs):
        order += ['A', 'B'] if i % 2 == 0 else ['B', 'A']
    for s in order:
        out['runs'].append(cyclictest_run(a, s))
    for s in ('A', 'B'):
        out[s] = pool_runs([r for r in out['runs'] if r['state'] == s],
                           a.hist_us)
        log(f'cyclictest: {s} pooled: {out[s]}')
    # pooled: the runs' histograms (every 1 µs bucket) are not kept
    for r in out['runs']:
        del r['hist']
    result(out)


def cyclictest_run(a, s):
    """One cyclictest run under the hackbench loop, the module loaded if s
    is 'B': its percentiles, overflows and histogram ([µs, samples] of
    the buckets that hold any)."""
    if s == 'B':
        insmod(a.ko)
    load = subprocess.Popen(
        ['sh', '-c', f'while :; do hackbench -g {a.hb_groups} -l '
         f'{a.hb_loops} >/dev/null 2>&1; done'], start_new_session=True)
    hist = Path('/tmp/cyclic.hist')
    hist.unlink(missing_ok=True)     # no earlier run's histogram read
    try:
        run(['cyclictest', '-m', '-S', '-p', '95', '-i', '1000', '-D',
             f'{a.seconds}s', '-q', '-h', str(a.hist_us),
             f'--histfile={hist}'], timeout=a.seconds * 4 + 60)
    finally:
        os.killpg(load.pid, signal.SIGKILL)
        load.wait()
        if s == 'B':
            rmmod()
    h = read_histogram(hist)
    over = sum(h['overflows'])
    r = {'state': s, 'max_us': max(h['max_us']) if h['max_us'] else None,
         'samples': sum(h['counts'].values()) + over, 'overflows': over,
         'overflows_per_thread': h['overflows'],
         'pct_us': hist_percentiles(h['counts'], over, a.hist_us)}
    log(f'cyclictest: {r}')
    r['hist'] = sorted((us, n) for us, n in h['counts'].items() if n)
    return r


# ------------------------------------------------------------------- poller

POLL_CG = CG / 'pollload'
BURST_CG = CG / 'pollburst'
TICK_S = 1 / os.sysconf('SC_CLK_TCK')


class Poller:
    """bench/procpoll, the /proc poller peer (Kepler 0.10+), on AUX_CPU."""

    FIELDS = ('seq', 'procs', 'new', 'cgroups', 'cpu_ns', 't0_ns', 't1_ns',
              'sum_ticks', 'watch_ticks')

    def __init__(self, binary, interval_ms, watch=None):
        argv = ['taskset', '-c', str(AUX_CPU), str(binary),
                '-i', str(interval_ms)]
        self.proc = subprocess.Popen(argv + (['-w', watch] if watch else []),
                                     stdout=subprocess.PIPE, text=True)

    def poll(self):
        """The next poll's line, parsed (blocks until it is done)."""
        line = self.proc.stdout.readline()
        f = line.split()
        if not f or f[0] != 'poll':
            raise RuntimeError(f'procpoll: {line!r} (rc {self.proc.poll()})')
        return dict(zip(self.FIELDS, map(int, f[1:])))

    def ticks(self):
        """utime + stime of the poller, read by us from /proc/<pid>/stat."""
        f = Path(f'/proc/{self.proc.pid}/stat').read_text()
        f = f[f.rindex(')') + 2:].split()
        return int(f[11]) + int(f[12])

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def remove_cgroups(dirs, timeout=60):
    """rmdir each of dirs, waiting while killed tasks still leave them."""
    t0 = time.monotonic()
    for d in dirs:
        while True:
            try:
                d.rmdir()
                break
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() - t0 > timeout:
                    raise
                time.sleep(0.1)


def sampler_cost(a):
    """cgroup_energy's sampler in the state as it is: µs per sample from
    ftrace (function_graph on cge_sample_fn), over a.module_s seconds."""
    insmod(a.ko)
    try:
        mount_fs()
        wait_samples(2)
        Ftrace.start()
        t0 = time.monotonic()
        time.sleep(a.module_s)
        got = Ftrace.take()
        dt = time.monotonic() - t0
    finally:
        Ftrace.stop()
        rmmod()
    us = [x['total'] for x in got]
    return {'samples': len(us), 'us_per_sample': spread(us),
            'us_per_s': sum(us) / dt, 'seconds': round(dt, 2)}


def poller_count(a, nproc, ncg):
    """The poller's CPU per poll with nproc sleeping processes in ncg
    cgroups (procload), and the module's sampler in the same state."""
    t0 = time.monotonic()
    load = subprocess.Popen([a.procload, str(POLL_CG), str(ncg), str(nproc)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        line = load.stdout.readline()
        if not line.startswith('ready'):
            raise RuntimeError(f'procload {nproc}: {line!r}')
        row = {'procs': nproc, 'cgroups': ncg,
               'setup_s': round(int(line.split()[1]) / 1e9, 1)}
        p = Poller(a.procpoll, a.interval_ms)
        try:
            polls = [p.poll()]
            k0 = p.ticks()
            polls += [p.poll() for _ in range(a.polls - 1)]
            k1 = p.ticks()
        finally:
            p.stop()
        row['module'] = sampler_cost(a)
    finally:
        try:
            if load.poll() is None:
                load.stdin.write('quit\n')
                load.stdin.flush()
            load.wait(120)
        except (OSError, subprocess.TimeoutExpired):
            load.kill()             # its sleepers die with it (PDEATHSIG)
            load.wait()
        remove_cgroups([*sorted(POLL_CG.glob('c[0-9]*')), POLL_CG])
    warm = polls[1:]
    row.update(
        seen_procs=polls[-1]['procs'], seen_cgroups=polls[-1]['cgroups'],
        first_poll_ms=polls[0]['cpu_ns'] / 1e6,
        first_poll_new=polls[0]['new'],
        poll_ms=spread([x['cpu_ns'] / 1e6 for x in warm]),
        poll_wall_ms=spread([(x['t1_ns'] - x['t0_ns']) / 1e6 for x in warm]),
        per_s_ms=spread([x['cpu_ns'] / 1e6 / (a.interval_ms / 1000)
                         for x in warm]),
        stat_ms_per_poll=(k1 - k0) * TICK_S * 1000 / len(warm),
        seconds=round(time.monotonic() - t0, 1))
    log(f'poller: {nproc} processes in {ncg} cgroups: {row}')
    return row


def poller_blind(a):
    """Short tasks between two polls: processes each busy for a.burst_ms ms
    of CPU, a.burst_chunk at a time one after the other (procload -b), in
    BURST_CG, started after one poll and, chunk by chunk while the last
    chunk's time fits before the next poll is due, up to a.burst of them.
    What the poller charges to that cgroup in the next poll against the
    kernel's cpu.stat usage_usec of it."""
    BURST_CG.mkdir(exist_ok=True)
    p = Poller(a.procpoll, a.interval_ms, watch=f'/{BURST_CG.name}')
    try:
        p.poll()
        before = p.poll()
        due = before['t0_ns'] + (a.interval_ms - 500) * 1000000
        u0, b0 = cpu_usage(BURST_CG.name), time.monotonic_ns()
        tasks, chunk_ns = 0, 0
        while (tasks < a.burst
               and time.monotonic_ns() + 1.5 * chunk_ns < due):
            c0 = time.monotonic_ns()
            run(['taskset', '-c', str(BENCH_CPU), a.procload, '-b',
                 str(BURST_CG), str(a.burst_chunk), str(a.burst_ms)])
            chunk_ns = time.monotonic_ns() - c0
            tasks += a.burst_chunk
        b1, u1 = time.monotonic_ns(), cpu_usage(BURST_CG.name)
        after = p.poll()
    finally:
        p.stop()
        remove_cgroups([BURST_CG])
    out = {'tasks': tasks, 'task_ms': a.burst_ms,
           'between_polls': before['t1_ns'] < b0 and b1 < after['t0_ns'],
           'burst_s': round((b1 - b0) / 1e9, 2),
           'cpu_stat_ms': (u1 - u0) / 1000,
           'poller_ms': after['watch_ticks'] * TICK_S * 1000,
           'poller_all_ms': after['sum_ticks'] * TICK_S * 1000}
    log(f'poller: short tasks: {out}')
    return out


def cmd_poller(a):
    pin_self()
    out = {'interval_ms': a.interval_ms, 'polls': a.polls, 'counts': []}
    for nproc, ncg in zip(a.procs, a.cgroups):
        try:
            out['counts'].append(poller_count(a, nproc, ncg))
        except Exception as e:      # noqa: BLE001 - the other counts go on
            out['counts'].append({'procs': nproc, 'cgroups': ncg,
                                  'error': str(e)})
            log(f'poller: {nproc}: {e}')
    try:
        out['short_tasks'] = poller_blind(a)
    except Exception as e:          # noqa: BLE001 - the counts are kept
        out['short_tasks'] = {'error': str(e)}
        log(f'poller: short tasks: {e}')
    result(out)


# --------------------------------------------------------------------- main

def cmd_tools(a):
    out = {'kernel': os.uname().release, 'cpus': os.cpu_count()}
    try:
        out['perf'] = perf_binary()
        out['perf_version'] = run([out['perf'], '--version']).stdout.strip()
    except Exception as e:          # noqa: BLE001
        out['perf_error'] = str(e)
    for tool, args in (('bpftrace', ['--version']), ('hackbench', ['--help']),
                       ('cyclictest', ['--help'])):
        path = shutil.which(tool)
        out[tool] = path
        if path and tool == 'bpftrace':
            out['bpftrace_version'] = run([path, *args]).stdout.strip()
    out['btf'] = Path('/sys/kernel/btf/vmlinux').exists()
    mounts = Path('/proc/mounts').read_text()
    out['tracefs'] = ' tracefs ' in mounts
    out['debugfs'] = ' debugfs ' in mounts
    result(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)

    def work_args(p):
        p.add_argument('--pipe-loops', type=int, default=5000)
        p.add_argument('--hb-groups', type=int, default=2)
        p.add_argument('--hb-loops', type=int, default=50,
                       help='0: no hackbench')

    p = sub.add_parser('throughput')
    p.add_argument('--ko', required=True)
    p.add_argument('--bt', help='bpftrace script of the eBPF peer')
    p.add_argument('--pairs-b', type=int, default=40,
                   help='pipe: pairs B/A (cgroup_energy loaded)')
    p.add_argument('--pairs-c', type=int, default=12,
                   help='pipe: pairs C/A (eBPF peer; needs --bt)')
    p.add_argument('--pairs-d', type=int, default=0,
                   help='pipe: pairs D/A (module, sampler every 10 s)')
    p.add_argument('--hb-pairs-b', type=int, default=12,
                   help='hackbench: pairs B/A')
    p.add_argument('--hb-pairs-c', type=int, default=10,
                   help='hackbench: pairs C/A')
    p.add_argument('--warmup', type=int, default=3,
                   help='uncounted runs first (TCG code cache, page cache): '
                   'at least this many')
    p.add_argument('--warmup-max', type=int, default=0,
                   help='and on until the last three settle, at most this '
                   'many (default 0: exactly --warmup)')
    p.add_argument('--ci-target', type=float, default=0,
                   help='pipe: after --pairs-b, as many B and A runs as '
                   'their spread says B/A\'s 95 %% CI needs to come within '
                   'this fraction of its median, without a second look '
                   '(default 0: none)')
    p.add_argument('--pairs-b-max', type=int, default=0,
                   help='pipe: at most this many B runs with --ci-target')
    p.add_argument('--budget', type=int, default=0,
                   help='seconds; once spent, stop at the next block if '
                   'every ratio has 10 pairs')
    work_args(p)
    p = sub.add_parser('selftime')
    p.add_argument('--ko', required=True)
    p.add_argument('--clockcal')
    p.add_argument('--reps', type=int, default=5)
    work_args(p)
    p = sub.add_parser('insns')
    p.add_argument('--ko', required=True)
    p.add_argument('--bt', required=True)
    p.add_argument('--pipe-loops', type=int, default=20000)
    p = sub.add_parser('ebpfcost')
    p.add_argument('--bt', required=True)
    p.add_argument('--reps', type=int, default=3)
    work_args(p)
    p = sub.add_parser('sampler')
    p.add_argument('--ko', required=True)
    p.add_argument('--cgload', required=True)
    p.add_argument('--counts', type=lambda s: [int(x) for x in s.split(',')],
                   default=[10, 1000, 10000])
    p.add_argument('--intervals', type=int, default=8)
    p.add_argument('--flood-s', type=float, default=8,
                   help='seconds of the removal flood at each count')
    p = sub.add_parser('records')
    p.add_argument('--ko', required=True)
    p.add_argument('--counts', type=lambda s: [int(x) for x in s.split(',')],
                   default=[100000])
    p.add_argument('--intervals', type=int, default=8)
    p.add_argument('--flood-s', type=float, default=8)
    p.add_argument('--ramp-s', type=float, default=600,
                   help='longest wait for the records, and for them to go')
    p = sub.add_parser('migrate')
    p.add_argument('--ko', required=True)
    p.add_argument('--cghop', required=True)
    p.add_argument('--hops', type=int, default=6000,
                   help='migrations per timed loop (a fifth as many, '
                   'untimed, first in every run)')
    p.add_argument('--depths', type=lambda s: [int(x) for x in s.split(',')],
                   default=[1, 6], help='cgroup depths of the two cgroups')
    p.add_argument('--pairs-b', type=int, default=10,
                   help='pairs B/A (cgroup_energy loaded and mounted)')
    p.add_argument('--pairs-t', type=int, default=10,
                   help='pairs T/A (the tracefs event, no module)')
    p.add_argument('--pairs-f', type=int, default=0,
                   help='pairs F/A (the tracefs event, every event '
                   'filtered out)')
    p.add_argument('--warmup', type=int, default=2)
    p = sub.add_parser('cyclictest')
    p.add_argument('--ko', required=True)
    p.add_argument('--pairs', type=int, default=3)
    p.add_argument('--seconds', type=int, default=10)
    p.add_argument('--hist-us', type=int, default=20000)
    p.add_argument('--hb-groups', type=int, default=2)
    p.add_argument('--hb-loops', type=int, default=200)
    p = sub.add_parser('poller')
    p.add_argument('--ko', required=True)
    p.add_argument('--procpoll', required=True)
    p.add_argument('--procload', required=True)
    p.add_argument('--procs', type=lambda s: [int(x) for x in s.split(',')],
                   default=[100, 10000])
    p.add_argument('--cgroups', type=lambda s: [int(x) for x in s.split(',')],
                   default=[10, 1000])
    p.add_argument('--interval-ms', type=int, default=5000,
                   help="the poller's interval (Kepler's default: 5 s)")
    p.add_argument('--polls', type=int, default=5,
                   help='polls per count, the first (all processes new) '
                   'reported apart')
    p.add_argument('--module-s', type=float, default=3.0,
                   help='seconds of sampler tracing per count')
    p.add_argument('--burst', type=int, default=200,
                   help='short tasks between two polls, at most')
    p.add_argument('--burst-chunk', type=int, default=10,
                   help='short tasks per procload -b')
    p.add_argument('--burst-ms', type=int, default=50,
                   help='CPU time of each short task')
    sub.add_parser('tools')

    a = ap.parse_args(argv)
    if a.cmd == 'poller' and a.polls < 2:
        ap.error('--polls: at least 2 (the first is reported apart)')
    {'throughput': cmd_throughput, 'selftime': cmd_selftime,
     'ebpfcost': cmd_ebpfcost, 'sampler': cmd_sampler,
     'records': cmd_records,
     'migrate': cmd_migrate, 'cyclictest': cmd_cyclictest,
     'poller': cmd_poller, 'insns': cmd_insns,
     'tools': cmd_tools}[a.cmd](a)


if __name__ == '__main__':
    sys.exit(main())
